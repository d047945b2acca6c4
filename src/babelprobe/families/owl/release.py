"""OWL's public release (github.com/emirkaan5/OWL) for ``babelprobe datasets fetch owl``: one CSV
(or JSON records) file per book, one passage column per language, ``Single_ent`` the names; the
book's author and titles from the repository's ``book_names.csv``, its year from
``release_date.csv`` -> ``owl.jsonl`` (``data.py``)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from babelprobe.data.releases import (Converted, Downloaded, FetchError, Release, http_get, offline_reason, unknown_langs)
from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem
from babelprobe.families.owl.data import OwlItem, owl_items_from_release_rows


def _text(value: Any) -> str:
    return "" if value is None else str(value)

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


def _read_csv(path: Path) -> list[tuple[int, dict[str | None, Any]]]:
    # book_names.csv has rows with more fields than its header (an unquoted comma): csv keeps them
    # (as a list under the key None, DictReader's restkey)
    text = path.read_text(encoding="utf-8-sig")  # -sig: a byte-order mark must not rename the first column
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


# --- the release ---------------------------------------------------------------------------------

OWL_COMMIT = "5f1c5d3cb30177b2564ee636b68459e3624ed488"
OWL_METADATA_URL = f"https://raw.githubusercontent.com/emirkaan5/OWL/{OWL_COMMIT}/scripts/Evaluation/dir_probe/"


def _download_owl(dest: Path) -> Downloaded:
    raise FetchError("the OWL passages are not published at a download address: the repository "
                     "github.com/emirkaan5/OWL keeps its 'final dataset/' folder out of git")


def _owl_metadata(source: Path, workdir: Path) -> list[Path]:
    """book_names.csv and release_date.csv: from --source when there, else from the repository."""
    paths = []
    for name in OWL_METADATA:
        found = sorted(source.rglob(name))
        if found:
            paths.append(found[0])
            continue
        reason = offline_reason()
        if reason is None:
            try:
                paths.append(http_get(OWL_METADATA_URL + name, workdir / "owl-metadata" / name))
                continue
            except OSError as exc:
                reason = f"download failed ({exc})"
        raise FetchError(f"no {name} in {source} and cannot download it: {reason}\n"
                         f"  download: {OWL_METADATA_URL}{name}\n  put it in: {source}")
    return paths


def _convert_owl(source: Path, workdir: Path, out: Path, langs: list[str] | None) -> Converted:
    books = owl_book_files(source)
    if not books:
        raise FetchError(f"no OWL book files in {source}: expected one CSV or JSON file per book named by its "
                         "title, e.g. Pride_and_Prejudice.csv (columns en, es, ..., Single_ent)")
    languages = ["en", *OWL_OFFICIAL, "st", "yo", "tn", "ty", "mai", "mg"]
    unknown_langs(langs, languages, "OWL")
    book_names, release_dates = _owl_metadata(source, workdir)
    rows = convert_owl(books, book_names, release_dates, out / "owl.jsonl", langs)
    return Converted([*books, book_names, release_dates], rows)


RELEASE = Release(
    name="owl", title="OWL: Probing Cross-Lingual Recall of Memorized Texts via World Literature", probe="owl",
    home="https://github.com/emirkaan5/OWL",
    files="one CSV (or JSON records) file per book, named by its title (e.g. Pride_and_Prejudice.csv; columns "
          "en, es, tr, vi, st, yo, tn, ty, mai, mg, <lang>_shuffled, Single_ent), as the authors distribute "
          "them (ask them: the repository README lists their addresses), plus book_names.csv and "
          f"release_date.csv from {OWL_METADATA_URL}",
    licence="research use only (the excerpts come from copyrighted books; OWL paper, Ethics statement); "
            "repository code without a licence file",
    citation="Alisha Srivastava, Emir Korukluoglu, Minh Nhat Le, Duyen Tran, Chau Minh Pham, Marzena Karpinska, "
             "Mohit Iyyer. OWL: Probing Cross-Lingual Recall of Memorized Texts via World Literature. "
             "EMNLP 2025. arXiv:2505.22945",
    data="owl.jsonl", download=_download_owl, convert=_convert_owl,
)
