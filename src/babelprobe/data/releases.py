"""What a family declares about a public release its ``--data`` reads (``Family.releases``), and the
helpers its converter (``families/<name>/release.py``) uses. The ``datasets fetch`` machinery that
downloads, checks and records a release is data/fetch.py; the registry of every family's releases is
families/__init__.py."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from pydantic import BaseModel

from babelprobe.data.validation import Problem

OFFLINE_VARIABLES = ("BABELPROBE_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
SOURCE_FILE = "SOURCE.json"
README_FILE = "README.md"


class FetchError(RuntimeError):
    """A fetch that cannot go on: the message says what the user can do."""


@dataclass(frozen=True)
class Downloaded:
    """Release files in ``folder``; ``published`` maps their paths (relative to it) to the sha256
    the release publishes for them."""

    folder: Path
    revision: str
    published: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Converted:
    inputs: list[Path]  # the release files read
    rows: int
    notes: tuple[str, ...] = ()  # choices the conversion made (e.g. which variety of a language took its code)


@dataclass(frozen=True)
class Release:
    name: str
    title: str
    probe: str  # the family whose --data reads the converted output
    home: str  # where the public release is
    files: str  # what to download, as a person would find it there
    licence: str
    citation: str
    data: str  # what to pass to --data, relative to --out ("" for the folder itself)
    download: Callable[[Path], Downloaded]
    convert: Callable[[Path, Path, Path, list[str] | None], Converted]  # (source, workdir, out, langs)


class SourceFile(BaseModel):
    path: str
    sha256: str
    published_sha256: str | None = None  # the release's own hash, when it publishes one (verified equal)


class DatasetSource(BaseModel):
    """What ``SOURCE.json`` records next to converted data."""

    name: str
    title: str
    probe: str
    source_url: str
    fetched_from: str  # "download", or the --source path or URL
    revision: str
    retrieved: str  # date of the fetch (UTC)
    licence: str
    citation: str
    langs: list[str] | None
    release_files: list[SourceFile]
    converted_files: list[SourceFile]
    rows: int
    loaded: str  # what the family's loader made of it
    use: str  # the command that runs it
    notes: list[str] = []  # choices the conversion made, said to the user too


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def offline_reason() -> str | None:
    for name in OFFLINE_VARIABLES:
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"offline ({name} is set)"
    return None


def http_get(url: str, dest: Path, timeout: float = 120) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    request = urllib.request.Request(url, headers={"User-Agent": "babelprobe (datasets fetch)"})
    with urllib.request.urlopen(request, timeout=timeout) as response, dest.open("wb") as handle:
        shutil.copyfileobj(response, handle)
    return dest


def unpacked(path: Path) -> Path:
    """A downloaded file's folder, with a zip archive unpacked in place."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            archive.extractall(path.parent)
        path.unlink()
    return path.parent


def unknown_langs(langs: list[str] | None, have: list[str], where: str) -> None:
    unknown = [lang for lang in langs or [] if lang not in have]
    if unknown:
        raise FetchError(f"--langs: no {', '.join(unknown)} in {where} (it has {', '.join(have)})")


def missing_columns(file: str, rows: list[tuple[int, dict[str, Any]]], columns: Iterable[str]) -> list[Problem]:
    """A column the release has that this file lacks: reported once, at the first row."""
    if not rows:
        return [Problem(file, None, None, "no rows")]
    return [Problem(file, rows[0][0], column, "missing (the file has no such column; the release has "
                    f"{', '.join(columns)})") for column in columns if column not in rows[0][1]]



def today() -> str:
    return dt.datetime.now(dt.timezone.utc).date().isoformat()
