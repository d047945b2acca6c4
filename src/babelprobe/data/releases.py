"""Converters from the public releases' own file layouts to the layouts ``babelprobe run`` reads.

One converter per release; each reads the files exactly as published, reports every bad row as a
``Problem`` naming the release file, row and field, and writes babelprobe's layout:

- Polyglot-or-Not (Hugging Face dataset ``Polyglot-or-Not/Fact-Completion``): one Parquet file per
  language split, ``data/<Language>-00000-of-00001-<hash>.parquet``, string columns dataset_id,
  stem, true, false, relation, subject, object -> ``<iso>.parquet`` with the same columns (the
  layout of ``data/cka.py``).
- ECLeKTiC (Kaggle ``googleai/eclektic``): ``eclektic_main.jsonl``, one line per question with
  q_id, original_lang, title, url, content, question, answer and ``<lang>_q``/``<lang>_a``/``<lang>_c``
  for the 12 languages -> ``eclektic.jsonl``, one row per question and target language, the source
  row included (the default columns of ``data/eclektic.py``, so no ``--columns`` is needed).
- OWL (github.com/emirkaan5/OWL): one CSV (or JSON records) file per book, one passage column per
  language, ``Single_ent`` the names; the book's author and titles from the repository's
  ``book_names.csv``, its year from ``release_date.csv`` -> ``owl.jsonl`` (``data/owl.py``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Iterable

from babelprobe.data.cka import parse_fact
from babelprobe.data.owl import OwlItem, owl_items_from_release_rows
from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem

# ---------------------------------------------------------------------------------------------
# Polyglot-or-Not

POLYGLOT_COLUMNS = ("dataset_id", "stem", "true", "false", "relation", "subject", "object")
# the release's split names (its dataset card) -> ISO 639-1 codes
POLYGLOT_LANGUAGES = {
    "Bulgarian": "bg", "Catalan": "ca", "Czech": "cs", "Danish": "da", "German": "de", "English": "en",
    "Spanish": "es", "French": "fr", "Croatian": "hr", "Hungarian": "hu", "Italian": "it", "Dutch": "nl",
    "Polish": "pl", "Portuguese": "pt", "Romanian": "ro", "Russian": "ru", "Slovenian": "sl", "Serbian": "sr",
    "Swedish": "sv", "Ukrainian": "uk",
}
# push_to_hub's shard names: <split>-<shard>-of-<shards>[-<fingerprint>].parquet
_POLYGLOT_SHARD = re.compile(r"^(?P<split>[A-Za-z]+)-(?P<shard>\d{5})-of-\d{5}(-[0-9a-f]+)?\.parquet$")


def polyglot_files(source: Path) -> dict[str, list[Path]]:
    """ISO code -> that language's shards (in shard order), found anywhere under ``source``."""
    found: dict[str, list[tuple[str, Path]]] = {}
    for path in sorted(source.rglob("*.parquet")):
        match = _POLYGLOT_SHARD.match(path.name)
        if match and match["split"] in POLYGLOT_LANGUAGES:
            found.setdefault(POLYGLOT_LANGUAGES[match["split"]], []).append((match["shard"], path))
    return {lang: [p for _, p in sorted(shards)] for lang, shards in sorted(found.items())}


def _missing_columns(file: str, rows: list[tuple[int, dict[str, Any]]], columns: Iterable[str]) -> list[Problem]:
    """A column the release has that this file lacks: reported once, at the first row."""
    if not rows:
        return [Problem(file, None, None, "no rows")]
    return [Problem(file, rows[0][0], column, "missing (the file has no such column; the release has "
                    f"{', '.join(columns)})") for column in columns if column not in rows[0][1]]


def convert_polyglot_or_not(files: dict[str, list[Path]], out: Path) -> dict[str, int]:
    """Write ``<iso>.parquet`` per language; return facts per language. Every row is checked as
    the CKA loader will read it (``parse_fact``), but reported against the release file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    problems: list[Problem] = []
    tables: dict[str, list[dict[str, str]]] = {}
    for lang, shards in files.items():
        for shard in shards:
            rows = read_rows(shard)
            missing = _missing_columns(str(shard), rows, POLYGLOT_COLUMNS)
            problems += missing
            if missing:
                continue
            for number, row in rows:
                _, found = parse_fact(row, lang, str(shard), number)
                problems += found
                tables.setdefault(lang, []).append(
                    {c: "" if row[c] is None else str(row[c]) for c in POLYGLOT_COLUMNS})
    if problems:
        raise DatasetError(problems)
    out.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([(c, pa.string()) for c in POLYGLOT_COLUMNS])
    for lang, rows in tables.items():
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), out / f"{lang}.parquet")
    return {lang: len(rows) for lang, rows in tables.items()}


# ---------------------------------------------------------------------------------------------
# ECLeKTiC

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
    for number, row in read_rows(release_file):
        needed = [*ECLEKTIC_FIELDS, *(f"{lang}_{part}" for lang in ECLEKTIC_LANGUAGES for part in "qac")]
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


# ---------------------------------------------------------------------------------------------
# OWL

OWL_BOOK_NAMES = "book_names.csv"  # scripts/Evaluation/dir_probe/ in the repository
OWL_RELEASE_DATES = "release_date.csv"
OWL_METADATA = (OWL_BOOK_NAMES, OWL_RELEASE_DATES)
OWL_ORIGINAL = "en"  # every OWL book was written in English (OWL §2)
OWL_OFFICIAL = ["es", "tr", "vi"]  # official translations; st, yo, tn, ty, mai, mg are new (unseen)


def _book_key(title: str) -> str:
    """The repository names a book's files by its title with spaces as underscores and
    apostrophes dropped ("The_Handmaid_s_Tale"); book_names.csv writes "The Handmaid s Tale"."""
    return " ".join(title.replace("_", " ").lower().split())


def owl_book_files(source: Path) -> list[Path]:
    """The per-book files under ``source``: every CSV or JSON but the two metadata tables."""
    return sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in (".csv", ".json")
                  and p.name not in OWL_METADATA)


def _read_csv(path: Path) -> list[tuple[int, dict[str, Any]]]:
    # book_names.csv has rows with more fields than its header (an unquoted comma): csv keeps them
    text = path.read_text(encoding="utf-8")
    return list(enumerate(csv.DictReader(io.StringIO(text, newline="")), start=1))


def _owl_catalogue(book_names: Path, release_dates: Path) -> dict[str, dict[str, Any]]:
    """book key -> author, titles by language, aliases, year (from the repository's two tables)."""
    problems: list[Problem] = []
    years: dict[str, int] = {}
    for number, row in _read_csv(release_dates):
        title, date = _text(row.get("Title")).strip(), _text(row.get("Release Date")).strip()
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", date):
            problems.append(Problem(str(release_dates), number, "Release Date", f"{date!r} is not a YYYY-MM-DD date"))
            continue
        years[_book_key(title)] = int(date[:4])
    books: dict[str, dict[str, Any]] = {}
    for number, row in _read_csv(book_names):
        author, en = _text(row.get("Author")).strip(), _text(row.get("En")).strip()
        for field, value in (("Author", author), ("En", en)):
            if not value:
                problems.append(Problem(str(book_names), number, field, "missing or empty"))
        if not author or not en:
            continue
        titles = {lang: _text(row.get(col)).strip() for lang, col in (("es", "Es"), ("tr", "Tr"), ("vi", "Vi"))}
        extra = [_text(v).strip() for v in (row.get("Misc"), *(row.get(None) or []))]
        books[_book_key(en)] = {"author": author, "title_en": en, "titles": {k: v for k, v in titles.items() if v},
                                "aliases": tuple(v for v in extra if v), "year": years.get(_book_key(en))}
    if problems:
        raise DatasetError(problems)
    return books


def _read_book(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """A book file's rows: the release's CSV, or its JSON records (pandas ``orient="records"``)."""
    if path.suffix.lower() != ".json":
        return read_rows(path)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError([Problem(str(path), None, None, f"not valid JSON ({exc})")]) from exc
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DatasetError([Problem(str(path), None, None, "expected a JSON array of records (one per passage)")])
    return list(enumerate(records, start=1))


def convert_owl(book_files: list[Path], book_names: Path, release_dates: Path, out_file: Path,
                langs: list[str] | None = None) -> int:
    """Write every passage version of every book to ``out_file``; return the row count."""
    catalogue = _owl_catalogue(book_names, release_dates)
    problems: list[Problem] = []
    items: list[OwlItem] = []
    for path in book_files:
        book = catalogue.get(_book_key(path.stem))
        if book is None:
            problems.append(Problem(str(path), None, None, f"not a book of {book_names.name} (the file name is the "
                                    "book's English title with '_' for spaces, e.g. Pride_and_Prejudice.csv)"))
            continue
        try:
            rows = _read_book(path)
            if rows and "Single_ent" not in rows[0][1]:
                problems.append(Problem(str(path), rows[0][0], "Single_ent", "missing (the release's book files list "
                                        "each passage's character names in Single_ent)"))
                continue
            converted = owl_items_from_release_rows(
                rows, str(path), path.stem.lower(), book["title_en"], book["author"], OWL_ORIGINAL, OWL_OFFICIAL,
                book["year"], book["titles"])
        except DatasetError as exc:
            problems += exc.problems
            continue
        items += [item.model_copy(update={"aliases": book["aliases"]}) for item in converted
                  if langs is None or item.language in langs]
    if problems:
        raise DatasetError(problems)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with out_file.open("w", encoding="utf-8") as handle:
        for item in items:
            handle.write(item.model_dump_json(exclude={"source"}) + "\n")
    return len(items)
