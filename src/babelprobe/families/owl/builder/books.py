"""The books table (one row per book and language) and the books' text, validated before any stage.

Table columns (JSONL, CSV or Parquet): ``book_id``, ``language`` (ISO code; ``en`` is the English
original every other language is aligned to), ``file`` (UTF-8 text; relative to the table's
folder), ``title_en``, ``author``; optional ``title`` (in the row's language), ``year``,
``aliases`` (" | "-joined or a JSON list). Paragraphs are blocks separated by blank lines; a file
without blank lines has one paragraph per line (Par3's one-paragraph-per-line files).
"""

from __future__ import annotations

import re
from pathlib import Path

from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError
from babelprobe.families.owl.builder.records import Book
from babelprobe.families.owl.data import _as_list
from babelprobe.languages import language_name
from babelprobe.text.units import joins_without_space

REQUIRED = ("book_id", "language", "file", "title_en", "author")


class BuildError(ValueError):
    """One line naming the file (and row) at fault."""


def check_language(code: str, where: str) -> None:
    try:
        language_name(code)
    except ValueError:
        raise BuildError(f"{where}: unknown language code {code!r}") from None


def read_books(table: Path) -> list[Book]:
    """Every row checked; the first problem is one line naming the file, row and field."""
    try:
        rows = read_rows(table)
    except DatasetError as exc:
        raise BuildError(str(exc).splitlines()[0]) from None
    books: list[Book] = []
    for number, row in rows:
        where = f"{table}:{number}"
        for name in REQUIRED:
            if row.get(name) is None or not str(row[name]).strip():
                raise BuildError(f"{where}: field {name!r} missing or empty")
        language = str(row["language"]).strip()
        check_language(language, f"{where}: field 'language'")
        file = Path(str(row["file"]))
        file = file if file.is_absolute() else table.parent / file
        year = row.get("year")
        try:
            year = int(year) if year not in (None, "") else None
        except ValueError:
            raise BuildError(f"{where}: field 'year': {year!r} is not a year") from None
        books.append(Book(book_id=str(row["book_id"]).strip(), language=language, file=file,
                          title_en=str(row["title_en"]), author=str(row["author"]),
                          title=str(row.get("title") or ""), year=year, aliases=tuple(_as_list(row.get("aliases")))))
    if not books:
        raise BuildError(f"{table}: no books (the table is empty)")
    seen: set[tuple[str, str]] = set()
    for book in books:
        if (book.book_id, book.language) in seen:
            raise BuildError(f"{table}: book {book.book_id!r} has two rows for language {book.language!r}")
        seen.add((book.book_id, book.language))
    for book_id in sorted({b.book_id for b in books}):
        if (book_id, "en") not in seen:
            raise BuildError(f"{table}: book {book_id!r} has no English ('en') row: OWL aligns every translation to the English original")
    for book in books:
        read_paragraphs(book.file)  # every file checked before any stage runs
    return books


def _join_lines(lines: list[str]) -> str:
    """A paragraph wrapped over several lines: Chinese, Japanese, Thai... lines join with no space."""
    text = ""
    for line in lines:
        text += line if joins_without_space(text) else " " + line
    return text


def read_paragraphs(file: Path) -> list[str]:
    """The book's paragraphs; a missing, binary, non-UTF-8 or empty file is one line naming it."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise BuildError(f"{file}: cannot read the book ({exc.strerror or exc})") from None
    if b"\x00" in data:
        raise BuildError(f"{file}: not a text file (binary data)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BuildError(f"{file}: not a text file (not UTF-8 at byte {exc.start})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    blocks = re.split(r"\n[ \t]*\n", text) if re.search(r"\n[ \t]*\n", text) else text.split("\n")
    paragraphs = [_join_lines([line.strip() for line in block.split("\n") if line.strip()]) for block in blocks]
    paragraphs = [p for p in paragraphs if p]
    if not paragraphs:
        raise BuildError(f"{file}: the book is empty")
    return paragraphs
