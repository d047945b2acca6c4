"""FLORES+ (the paper's parallel sentences, §4.1: "Flores+ ... 2,000 examples per language") for
``babelprobe datasets fetch flores-plus``: the Hugging Face dataset ``openlanguagedata/flores_plus``
(gated: accept its terms on the hub, or download by hand and pass ``--source``).

Release layout: one Parquet file per language variety and split, ``dev/<code>.parquet`` and
``devtest/<code>.parquet`` (found anywhere under the folder), ``<code>`` = ISO 639-3 + ISO 15924
(``heb_Hebr``), columns ``id``, ``iso_639_3``, ``iso_15924``, ``glottocode``, ``text`` (and url,
domain, topic, ...). Converted to ``flores_plus.parquet`` (``id`` = split/id, ``language``,
``text``, ``flores_code``, ``split``) in the layout ``run similarity --data`` reads, dev and
devtest together (997 + 1,012 sentences: the paper's "2,000 examples").

Codes go through ``languages.normalise_code`` (``heb_Hebr`` -> ``he``, ``cmn_Hans`` -> ``zh``,
``nob_Latn`` -> ``no``), the one normaliser of every Shared Path input, so FLORES+ languages meet
the memorization runs and token counts (``iw`` there is ``he`` too). Where several varieties map to
one code (``cmn_Hans`` and ``cmn_Hant``; ``kmr_Latn`` and ``ckb_Arab``, both Kurdish), the one
whose ISO 15924 code is the language's usual script (CLDR likely subtags: ``ku`` -> ``Latn``,
``zh`` -> ``Hans``) takes the code, unless ``--langs`` names another variety by its FLORES code
(``--langs ckb_Arab``: Sorani is Kurdish); the others are written to
``flores_plus_other_varieties.parquet`` under their FLORES code, every variety's fate is listed
in ``codes.csv``, and the fetch says which variety was taken: reported, never dropped silently."""

from __future__ import annotations

import re
from pathlib import Path

from babelprobe.data.releases import Converted, Downloaded, FetchError, Release, missing_columns
from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem
from babelprobe.families.similarity.data import script_of
from babelprobe.languages import normalise_code

FLORES_REPO = "openlanguagedata/flores_plus"
FLORES_COLUMNS = ("id", "iso_639_3", "iso_15924", "text")
FLORES_SPLITS = ("dev", "devtest")
FLORES_FILE = "flores_plus.parquet"
OTHER_VARIETIES_FILE = "flores_plus_other_varieties.parquet"
_CODE = re.compile(r"^(?P<lang>[a-z]{3})_(?P<script>[A-Z][a-z]{3})$")


def flores_files(source: Path) -> dict[str, dict[str, Path]]:
    """FLORES code -> split -> file, for ``<split>/.../<code>.parquet`` anywhere under ``source``."""
    found: dict[str, dict[str, Path]] = {}
    for path in sorted(source.rglob("*.parquet")):
        split = next((part for part in path.relative_to(source).parts[:-1] if part in FLORES_SPLITS), None)
        if split is not None and _CODE.match(path.stem):
            found.setdefault(path.stem, {})[split] = path
    return found


def choose_codes(codes: list[str], preferred: set[str] | frozenset[str] = frozenset()) -> dict[str, str | None]:
    """FLORES code -> normalised code, or None for a variety another one of the same language
    takes: a variety named in ``preferred`` (``--langs ckb_Arab``) wins, else the one whose ISO
    15924 code is the language's usual script, else the first in code order."""
    by_language: dict[str, list[str]] = {}
    for code in sorted(codes):
        by_language.setdefault(normalise_code(code), []).append(code)
    chosen: dict[str, str | None] = {}
    for language, varieties in by_language.items():
        named = [v for v in varieties if v in preferred]
        if len(named) > 1:
            raise FetchError(f"--langs names {' and '.join(named)}: both are {language}; name one variety")
        usual = script_of(language)  # ISO 15924 (Latn), as FLORES writes it: not the script's name (Latin)
        winner = named[0] if named else next((v for v in varieties if v.split("_")[1] == usual), varieties[0])
        for variety in varieties:
            chosen[variety] = language if variety == winner else None
    return chosen


def variety_notes(chosen: dict[str, str | None]) -> list[str]:
    """One line per language with several varieties: which took the code, and how to choose another."""
    notes = []
    for winner, language in sorted(chosen.items()):
        if language is None:
            continue
        others = sorted(v for v, lang in chosen.items() if lang is None and normalise_code(v) == language)
        if others:
            notes.append(f"{language}: {winner} taken ({len(others) + 1} varieties; {', '.join(others)} in "
                         f"{OTHER_VARIETIES_FILE}; choose another with --langs {others[0]})")
    return notes


def convert_flores(files: dict[str, dict[str, Path]], out: Path, preferred: set[str] | frozenset[str] = frozenset()
                   ) -> tuple[int, list[Path], list[str]]:
    """Write flores_plus.parquet (+ the other varieties, codes.csv); return (rows, files read,
    notes on the varieties taken)."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    chosen = choose_codes(list(files), preferred)
    problems: list[Problem] = []
    main: list[dict] = []
    others: list[dict] = []
    read: list[Path] = []
    counts: dict[str, int] = {}
    for code, splits in sorted(files.items()):
        for split, path in sorted(splits.items()):
            rows = read_rows(path)
            read.append(path)
            missing = missing_columns(str(path), rows, FLORES_COLUMNS)
            problems += missing
            if missing:
                continue
            for number, row in rows:
                written = f"{row['iso_639_3']}_{row['iso_15924']}"
                if written != code:
                    problems.append(Problem(str(path), number, "iso_639_3",
                                            f"{written} in the file of {code}"))
                    continue
                text = row.get("text")
                if not isinstance(text, str) or not text.strip():
                    problems.append(Problem(str(path), number, "text", "missing or empty"))
                    continue
                record = {"id": f"{split}/{row['id']}", "language": chosen[code] or code, "text": text,
                          "flores_code": code, "split": split}
                (main if chosen[code] else others).append(record)
                counts[code] = counts.get(code, 0) + 1
    if problems:
        raise DatasetError(problems)
    out.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([(c, pa.string()) for c in ("id", "language", "text", "flores_code", "split")])
    pq.write_table(pa.Table.from_pylist(main, schema=schema), out / FLORES_FILE)
    if others:
        pq.write_table(pa.Table.from_pylist(others, schema=schema), out / OTHER_VARIETIES_FILE)
    with (out / "codes.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["flores_code", "language", "sentences", "file"])
        for code in sorted(files):
            writer.writerow([code, chosen[code] or normalise_code(code), counts.get(code, 0),
                             FLORES_FILE if chosen[code] else f"{OTHER_VARIETIES_FILE} (another variety of "
                             f"{normalise_code(code)} has the code)"])
    return len(main) + len(others), read, variety_notes(chosen)


def _download_flores(dest: Path) -> Downloaded:
    from huggingface_hub import HfApi, snapshot_download

    info = HfApi().dataset_info(FLORES_REPO, files_metadata=True)
    published = {s.rfilename: s.lfs.sha256 for s in info.siblings or [] if s.lfs is not None}
    snapshot_download(FLORES_REPO, repo_type="dataset", revision=info.sha, local_dir=dest,
                      allow_patterns=["dev/*", "devtest/*", "dev/**", "devtest/**", "README.md"])
    return Downloaded(dest, f"{FLORES_REPO}@{info.sha}", published)


def _convert_flores(source: Path, workdir: Path, out: Path, langs: list[str] | None) -> Converted:
    files = flores_files(source)
    if not files:
        raise FetchError(f"no FLORES+ files in {source}: expected dev/<code>.parquet and devtest/<code>.parquet, "
                         "e.g. dev/heb_Hebr.parquet")
    if langs:  # FLORES codes (heb_Hebr) or normalised ones (he, iw)
        wanted = {normalise_code(lang) for lang in langs} | set(langs)
        unknown = [lang for lang in langs if lang not in files and normalise_code(lang) not in
                   {normalise_code(c) for c in files}]
        if unknown:
            raise FetchError(f"--langs: no {', '.join(unknown)} in {source}")
        files = {code: splits for code, splits in files.items() if code in wanted or normalise_code(code) in wanted}
    rows, read, notes = convert_flores(files, out, {lang for lang in langs or [] if lang in files})
    return Converted(read, rows, tuple(notes))


RELEASE = Release(
    name="flores-plus", title="FLORES+ (parallel sentences, dev + devtest)", probe="similarity",
    home=f"https://huggingface.co/datasets/{FLORES_REPO}",
    files="the folders dev/ and devtest/ (one <iso639-3>_<Script>.parquet per language variety) of the gated Hugging "
          f"Face dataset {FLORES_REPO} (accept its terms, then Files and versions)",
    licence="CC BY-SA 4.0",
    citation="NLLB Team et al. No Language Left Behind: Scaling Human-Centered Machine Translation. 2022 "
             "(FLORES-200); FLORES+ maintained by the Open Language Data Initiative (openlanguagedata.org)",
    data=FLORES_FILE, download=_download_flores, convert=_convert_flores,
)
