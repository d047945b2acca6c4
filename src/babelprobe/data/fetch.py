"""``babelprobe datasets fetch NAME`` (the release found by name in families/__init__.py): get a public release, check it, convert it, record where it came from.

The registry names, per release, where the public files are, what they are, their licence and
citation, how to download them and which converter (``families/<name>/release.py``) turns them into the
layout ``babelprobe run <probe> --data`` reads. A fetch:

1. downloads the release into a temporary folder (Hugging Face hub or plain HTTPS), or takes the
   files a user downloaded by hand (``--source PATH``, or ``--source URL`` of a copy);
2. hashes every release file (sha256) and checks it against the hash the release publishes (the
   Hugging Face hub publishes one per LFS file); elsewhere the hash is recorded only;
3. converts, then loads the result with the probe family's own loader (what ``run`` and
   ``validate`` do);
4. writes ``SOURCE.json`` and ``README.md`` (source URL, revision, date, licence, citation,
   hashes) next to the converted data and only then replaces ``--out``; a re-fetch gives the
   same files.

Offline (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE`` or ``BABELPROBE_OFFLINE`` set) or when the
download fails, ``FetchError`` says what to download, from where, where to put it and the
``--source`` command that converts it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from babelprobe.data.releases import (README_FILE, SOURCE_FILE, DatasetSource, Downloaded, FetchError, Release,
                                      SourceFile, http_get, offline_reason, sha256_of, today, unpacked)
from babelprobe.models.weights import home_dir


def default_out(name: str) -> Path:
    return home_dir() / "datasets" / name


def _manual_steps(release: Release, out: Path, reason: str) -> FetchError:
    folder = out.parent / f"{release.name}-release"
    return FetchError(
        f"cannot download {release.name}: {reason}\n"
        f"  download: {release.files}\n"
        f"  from:     {release.home}\n"
        f"  put them in {folder}{os.sep} (keep the release's file names), then run:\n"
        f"  babelprobe datasets fetch {release.name} --source {folder} --out {out}")


def _check_out(out: Path, release: Release) -> None:
    """--out is new, empty, or an earlier fetch of this dataset (then it is replaced)."""
    if not out.exists():
        return
    if not out.is_dir():
        raise FetchError(f"--out {out} is a file, not a folder")
    if not any(out.iterdir()):
        return
    marker = out / SOURCE_FILE
    if not marker.is_file():
        raise FetchError(f"--out {out} is not empty and was not written by `babelprobe datasets fetch` (no "
                         f"{SOURCE_FILE}): choose a new or empty folder")
    try:
        name = DatasetSource.model_validate_json(marker.read_text(encoding="utf-8")).name
    except ValueError as exc:
        raise FetchError(f"--out {out}: unreadable {SOURCE_FILE} ({exc}); choose a new or empty folder") from exc
    if name != release.name:
        raise FetchError(f"--out {out} holds the dataset {name!r}, not {release.name!r}: choose another folder")


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def hash_release_files(inputs: list[Path], root: Path, published: dict[str, str]) -> list[SourceFile]:
    """sha256 of every release file; a file whose published hash differs stops the fetch."""
    files = []
    for path in inputs:
        relative = _relative(path, root)
        digest = sha256_of(path)
        expected = published.get(relative)
        if expected is not None and expected != digest:
            raise FetchError(f"{path}: sha256 {digest} differs from the release's published {expected} "
                             "(a broken or altered download): fetch again")
        files.append(SourceFile(path=relative, sha256=digest, published_sha256=expected))
    return files


def _readme(record: DatasetSource) -> str:
    lines = [f"# {record.title}", "",
             f"Converted by `babelprobe datasets fetch {record.name}` on {record.retrieved} for "
             f"`babelprobe run {record.probe}`:", "", "```bash", record.use, "```", "",
             f"- source: {record.source_url} ({record.fetched_from})", f"- revision: {record.revision}",
             f"- licence: {record.licence}", f"- citation: {record.citation}",
             f"- loaded: {record.loaded}", "", "Release files (sha256; \"published\" = equal to the release's own hash):",
             ""]
    lines += [f"- `{f.path}` {f.sha256}{' (published)' if f.published_sha256 else ''}" for f in record.release_files]
    lines += ["", "Keep this note and SOURCE.json with any copy or subset of these files.", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class FetchResult:
    out: Path
    record: DatasetSource


def _source_folder(source: str, download_dir: Path) -> tuple[Path, str]:
    """A --source path, or a --source URL downloaded (and unzipped) into ``download_dir``."""
    if source.startswith(("http://", "https://")):
        reason = offline_reason()
        if reason:
            raise FetchError(f"--source {source}: cannot download, {reason}")
        name = source.rstrip("/").rsplit("/", 1)[-1] or "download"
        try:
            return unpacked(http_get(source, download_dir / name)), source
        except OSError as exc:
            raise FetchError(f"--source {source}: download failed ({exc})") from exc
    path = Path(source).expanduser()
    if not path.exists():
        raise FetchError(f"--source {path}: no such file or folder")
    # absolute: SOURCE.json is read later from elsewhere, where a relative path means nothing
    return path, str(path.resolve())


def fetch_release(release: Release, check: Callable[[Path], str], out: Path | None = None,
                  source: str | None = None, langs: list[str] | None = None) -> FetchResult:
    """Download (or take ``source``), verify, convert, load-check and record one release into
    ``out``; ``check`` loads the converted folder as ``run`` would and says what it holds."""
    name = release.name
    langs = list(langs) if langs else None
    out = (out or default_out(name)).expanduser().resolve()
    _check_out(out, release)
    with tempfile.TemporaryDirectory(prefix=f"babelprobe-{name}-") as tmp:
        workdir = Path(tmp)
        if source is None:
            reason = offline_reason()
            if reason:
                raise _manual_steps(release, out, reason)
            try:
                downloaded = release.download(workdir / "download")
            except FetchError as exc:
                raise _manual_steps(release, out, str(exc)) from exc
            except Exception as exc:  # any network, hub or archive failure: the manual route still works
                raise _manual_steps(release, out, f"download failed ({type(exc).__name__}: {exc})") from exc
            folder, fetched_from = downloaded.folder, "download"
        else:
            folder, fetched_from = _source_folder(source, workdir / "download")
            if folder.resolve() == out or out in folder.resolve().parents:
                raise FetchError(f"--source {folder} is inside --out {out}: a fetch replaces --out")
            downloaded = Downloaded(folder, "not recorded (files given with --source)")
        staging = workdir / "converted"
        staging.mkdir()
        converted = release.convert(folder, workdir, staging, langs)
        release_files = hash_release_files(converted.inputs, folder if folder.is_dir() else folder.parent, downloaded.published)
        loaded = check(staging)
        record = DatasetSource(
            name=release.name, title=release.title, probe=release.probe, source_url=release.home,
            fetched_from=fetched_from, revision=downloaded.revision, retrieved=today(), licence=release.licence,
            citation=release.citation, langs=langs, release_files=release_files,
            converted_files=[SourceFile(path=p.name, sha256=sha256_of(p)) for p in sorted(staging.iterdir())],
            rows=converted.rows, loaded=loaded, notes=list(converted.notes),
            use=f"babelprobe run {release.probe} --data {out / release.data if release.data else out}",
        )
        (staging / SOURCE_FILE).write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
        (staging / README_FILE).write_text(_readme(record), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), str(out))
    return FetchResult(out, record)

