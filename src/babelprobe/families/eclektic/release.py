"""ECLeKTiC's public release (Kaggle ``googleai/eclektic``) for ``babelprobe datasets fetch eclektic``:
``eclektic_main.jsonl``, one line per question with q_id, original_lang, title, url, content,
question, answer and ``<lang>_q``/``<lang>_a``/``<lang>_c`` for the 12 languages ->
``eclektic.jsonl``, one row per question and target language, the source row included (the
default columns of ``data.py``, so no ``--columns`` is needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from babelprobe.data.releases import Converted, Downloaded, FetchError, Release, http_get, today, unknown_langs, unpacked
from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem

ECLEKTIC_FILE = "eclektic_main.jsonl"
ECLEKTIC_LANGUAGES = ("he", "en", "de", "es", "fr", "hi", "id", "it", "ja", "ko", "pt", "zh")  # the release's order
ECLEKTIC_FIELDS = ("q_id", "original_lang", "title", "url", "content", "question", "answer")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def convert_eclektic(release_file: Path, out_file: Path, langs: list[str] | None = None) -> int:
    """Write one row per question and target language (source row first); return the row count.
    ``langs`` keeps questions whose source language is listed, in the listed target languages."""
    file = str(release_file)
    problems: list[Problem] = []
    written: list[dict[str, str]] = []
    rows = read_rows(release_file)
    # A partial release (a subset of the target languages, e.g. cut down to fit a machine) has no
    # <lang>_q/_a/_c columns at all for the others: with --langs naming only languages it has it
    # converts; without, the absent languages are named once instead of on every row and field.
    columns = {name for _, row in rows for name in row}
    wanted = [lang for lang in ECLEKTIC_LANGUAGES if langs is None or lang in langs]
    absent = [lang for lang in wanted if not any(f"{lang}_{part}" in columns for part in "qac")]
    if absent:
        have = [lang for lang in ECLEKTIC_LANGUAGES if lang not in absent and any(f"{lang}_{part}" in columns for part in "qac")]
        raise DatasetError([Problem(file, None, None, f"no columns for {', '.join(absent)} (a partial release: it has "
                                    f"{', '.join(have) or 'none of the 12 languages'}); pass --langs with languages it has")])
    for number, row in rows:
        needed = [*ECLEKTIC_FIELDS, *(f"{lang}_{part}" for lang in wanted for part in "qac")]
        bad = [field for field in needed if field != "url" and not _text(row.get(field)).strip()]
        problems += [Problem(file, number, field, "missing or empty") for field in bad]
        source = _text(row.get("original_lang"))
        if source and source not in ECLEKTIC_LANGUAGES:
            problems.append(Problem(file, number, "original_lang",
                                    f"{source!r} is not one of the release's languages ({', '.join(ECLEKTIC_LANGUAGES)})"))
            continue
        if bad or (langs is not None and source not in langs):
            continue
        common = {"q_id": _text(row["q_id"]), "original_language": source, "title": _text(row["title"]),
                  "url": _text(row.get("url"))}
        # the source row: the original question, answer and paragraphs
        written.append({**common, "target_language": source, "question": _text(row["question"]),
                        "answer": _text(row["answer"]), "context": _text(row["content"])})
        for lang in ECLEKTIC_LANGUAGES:
            if lang != source and (langs is None or lang in langs):
                written.append({**common, "target_language": lang, "question": _text(row[f"{lang}_q"]),
                                "answer": _text(row[f"{lang}_a"]), "context": _text(row[f"{lang}_c"])})
    if problems:
        raise DatasetError(problems)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with out_file.open("w", encoding="utf-8") as handle:
        for item in written:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    return len(written)


# --- the release ---------------------------------------------------------------------------------

ECLEKTIC_DOWNLOAD = "https://www.kaggle.com/api/v1/datasets/download/googleai/eclektic"


def _download_eclektic(dest: Path) -> Downloaded:
    # Kaggle's public download address (what its "Download" button and kagglehub fetch): a zip
    folder = unpacked(http_get(ECLEKTIC_DOWNLOAD, dest / "eclektic.zip"))
    return Downloaded(folder, f"latest Kaggle version of googleai/eclektic on {today()}")


def _convert_eclektic(source: Path, workdir: Path, out: Path, langs: list[str] | None) -> Converted:
    found = [source] if source.is_file() else sorted(source.rglob(ECLEKTIC_FILE))
    if not found:
        raise FetchError(f"no {ECLEKTIC_FILE} in {source} (the file of the Kaggle release)")
    unknown_langs(langs, list(ECLEKTIC_LANGUAGES), "ECLeKTiC")
    rows = convert_eclektic(found[0], out / "eclektic.jsonl", langs)
    return Converted([found[0]], rows)


RELEASE = Release(
    name="eclektic", title="ECLeKTiC: cross-lingual knowledge transfer QA", probe="eclektic",
    home="https://www.kaggle.com/datasets/googleai/eclektic",
    files=f"{ECLEKTIC_FILE} (Kaggle dataset googleai/eclektic, Download -> unzip)",
    licence="as stated on the Kaggle dataset page (googleai/eclektic); Wikipedia-derived text",
    citation="Omer Goldman, Uri Shaham, Dan Malkin, et al. ECLeKTiC: a Novel Challenge Set for Evaluation of "
             "Cross-Lingual Knowledge Transfer. 2025. arXiv:2502.21228",
    data="eclektic.jsonl", download=_download_eclektic, convert=_convert_eclektic,
)
