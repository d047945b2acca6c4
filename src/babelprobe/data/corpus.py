"""A corpus read as documents: the one streaming reader of every ``corpus`` command (``corpus
sample``, Shared Path §5.2; ``corpus index``, OWL App. B.4).

The rule (``DOCUMENT_RULE``, shown by ``corpus --help``): a text file (.txt, .md, .text) is ONE
document, its bytes as they are (line ends kept: CRLF stays CRLF, so a passage quoted from the file
matches it exactly), less a UTF-8 byte-order mark. One document per file because both papers'
documents span lines: OWL's passages come from books (a book saved as text is hard-wrapped, and a
passage crosses its line ends), Shared Path's mC4 documents are web pages of several paragraphs;
cutting a file at its lines would cut those documents. Many documents in one file: JSONL (also
gzipped: .jsonl.gz, or .json.gz as mC4's files are named, JSON lines too), CSV or Parquet, one
document per row (its text column).
A directory is walked, sorted, into its sub-folders; a file or folder directly in it named after a
language (``de.jsonl``, ``de/*.txt``) gives its documents that language. Empty (whitespace-only)
documents are skipped. Files are streamed by data/tables.py's ``iter_rows`` (JSONL and CSV line by
line, Parquet by record batch); only a text file is read whole, as it is one document.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from babelprobe.data.tables import READABLE_SUFFIXES, iter_rows
from babelprobe.data.validation import DatasetError, Problem

TEXT_SUFFIXES = (".txt", ".md", ".text")
CORPUS_SUFFIXES = TEXT_SUFFIXES + READABLE_SUFFIXES

DOCUMENT_RULE = ("A text file (.txt, .md, .text) is one document, its bytes as they are (line ends kept); "
                 "JSONL (.jsonl, .jsonl.gz, mC4's .json.gz), CSV and Parquet hold one document per row. "
                 "A directory is walked; a file or folder in it named after a language (de.jsonl, de/*.txt) "
                 "gives that language.")


@dataclass(frozen=True)
class Document:
    text: str
    source: str  # where it came from: the file, file:row, or dataset/config/split/index
    file: str  # the file (or dataset) it is in
    language: str | None = None  # None: the input names none (and none was asked for)


def corpus_suffix(path: Path) -> str | None:
    """The corpus suffix the file's name ends with (.jsonl.gz before .jsonl), or None."""
    name = path.name.lower()
    return next((suffix for suffix in CORPUS_SUFFIXES if name.endswith(suffix)), None)


def _named(path: Path) -> str:
    """A file's or folder's name less its corpus suffix: the language it names."""
    suffix = corpus_suffix(path)
    return path.name[: -len(suffix)] if suffix else path.name


def corpus_files(folder: Path) -> list[tuple[Path, str]]:
    """The corpus files under ``folder`` (sorted, sub-folders too), each with the name of the file
    or folder directly in ``folder`` that holds it (``de.jsonl`` -> de, ``de/a.txt`` -> de)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and corpus_suffix(p))
    return [(file, _named(folder / file.relative_to(folder).parts[0])) for file in files]


def known_languages(paths: Iterable[Path], language: str | None = None) -> list[str]:
    """The languages the inputs name before any row is read: ``language`` (``--lang``), else the
    names of the files and folders in each directory. Languages in a column are seen as read."""
    if language:
        return [language]
    return list(dict.fromkeys(named for path in paths if path.is_dir() for _, named in corpus_files(path)))


def read_documents(paths: Iterable[Path], text_field: str = "text", lang_field: str | None = None,
                   language: str | None = None) -> Iterator[Document]:
    """The documents of ``paths`` (files or directories), streamed, by the module's rule.

    ``language`` is every document's language; else a directory's file or folder name gives it,
    else the row's ``lang_field``. With ``lang_field`` given a document without a language is a
    DatasetError (file, row, field); without it, documents may have none. A missing file, a
    missing or non-string text, bad JSON or non-UTF-8 bytes are DatasetErrors naming the file
    (and row)."""
    for path in paths:
        if path.is_dir():
            files = corpus_files(path)
            if not files:
                raise DatasetError([Problem(str(path), None, None, f"no {', '.join(CORPUS_SUFFIXES)} files")])
            for file, named in files:
                yield from read_file(file, text_field, lang_field, language or named)
        elif path.is_file():
            yield from read_file(path, text_field, lang_field, language)
        else:
            raise DatasetError([Problem(str(path), None, None, "no such file or directory")])


def read_file(path: Path, text_field: str = "text", lang_field: str | None = None,
              language: str | None = None) -> Iterator[Document]:
    """The documents of one file (see ``read_documents``)."""
    where, suffix = str(path), corpus_suffix(path)
    if suffix is None:
        raise DatasetError([Problem(where, None, None, f"unsupported file type {path.suffix.lower()!r} (use "
                                    f"{', '.join(CORPUS_SUFFIXES)}, or a directory of them)")])
    if suffix in TEXT_SUFFIXES:
        # bytes as they are: read_text would turn "\r\n" into "\n" (universal newlines), and a
        # passage quoted from a CRLF file would no longer match its own source exactly
        whole = _decode(path, path.read_bytes().removeprefix(codecs.BOM_UTF8), None)
        if whole.strip():
            yield Document(whole, where, where, _language({}, lang_field, language, where, None))
        return
    for number, row in iter_rows(path, [text_field, *([lang_field] if lang_field else [])]):
        text = row.get(text_field)
        if not isinstance(text, str):
            raise DatasetError([Problem(where, number, text_field, "missing text (or not a string)")])
        if text.strip():
            yield Document(text, f"{where}:{number}", where, _language(row, lang_field, language, where, number))


def _language(row: dict[str, Any], lang_field: str | None, fixed: str | None, where: str,
              number: int | None) -> str | None:
    if fixed:
        return fixed
    value = row.get(lang_field) if lang_field else None
    if value is not None and str(value).strip():
        return str(value).strip()
    if lang_field is None:
        return None
    raise DatasetError([Problem(where, number, lang_field, "no language: add the column, pass --lang, or name "
                                "the file or folder after the language (de.jsonl, de/*.txt)")])


def _decode(path: Path, data: bytes, line: int | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError([Problem(str(path), line, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})")]) \
            from None


def read_hf_dataset(name: str, config: str | None, split: str, text_field: str = "text",
                    lang_field: str = "language", language: str | None = None,
                    data_files: list[str] | None = None) -> Iterator[Document]:
    """A Hugging Face ``datasets`` dataset read with ``streaming=True`` (nothing is downloaded
    up front; a hub dataset is fetched as it is read). ``language`` defaults to the config name
    (mC4's configs are languages). Provenance: name/config/split/index."""
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise ValueError("--hf-dataset needs the datasets package: pip install 'babelprobe[corpus]'") from exc

    kwargs: dict[str, Any] = {"data_files": data_files} if data_files else {}
    stream = load_dataset(name, config, split=split, streaming=True, **kwargs)
    fixed = language or (config if lang_field not in (stream.column_names or []) else None)
    where = f"{name}/{config or '-'}/{split}"
    for index, row in enumerate(stream):
        text = row.get(text_field)
        if not isinstance(text, str):
            raise DatasetError([Problem(where, index, text_field, "missing text (or not a string)")])
        if text.strip():
            yield Document(text, f"{where}/{index}", where, _language(row, lang_field, fixed, where, index))
