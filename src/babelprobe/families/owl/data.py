"""OWL passages (OWL §2, App. B): one row per passage and language.

Fields: book_id, author, title_en, title (in the passage's language; optional), aliases (other
accepted titles, e.g. "Nineteen Eighty-Four" for "1984"), language, language_group (original /
official / unseen translation), passage_id (aligns the versions of one passage across
languages), passage, names (the character names it contains; empty for the no-name set), year.
JSONL lists may be JSON arrays; CSV and Parquet cells may join them with " | ".

``convert_owl_release`` turns the OWL release's per-book CSV layout (one row per passage, one
column per language, ``Single_ent`` holding the names, ``{lang}_shuffled`` and other derived
columns ignored; in the masked files the single name is put back in place of [MASK], since
babelprobe masks and shuffles itself) into these rows.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem, language_code_problem

Group = Literal["original", "official", "unseen"]
GROUPS: tuple[str, ...] = ("original", "official", "unseen")
REQUIRED = ("book_id", "author", "title_en", "language", "language_group", "passage_id", "passage")


class OwlItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    book_id: str
    author: str
    title_en: str
    title: str = ""
    aliases: tuple[str, ...] = ()
    language: str
    language_group: Group
    passage_id: str
    passage: str
    names: tuple[str, ...] = ()
    year: int | None = None
    source: str = ""
    # App. B.4: how the passage was found in the pretraining corpus (exact, window-40/30/20, none),
    # set from `run owl --presence presence.jsonl`; None: not searched
    presence: str | None = None

    @property
    def passage_type(self) -> str:
        return "with-name" if self.names else "no-name"

    @property
    def titles(self) -> tuple[str, ...]:
        return tuple(t for t in (self.title_en, self.title, *self.aliases) if t)

    @property
    def key(self) -> str:
        return f"{self.book_id}/{self.passage_id}/{self.language}"


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip()
    if text.startswith("["):
        try:
            return [str(v).strip() for v in json.loads(text) if str(v).strip()]
        except json.JSONDecodeError:
            text = text.strip("[]")  # not JSON after all: read it as a " | "-joined cell
    return [part.strip() for part in text.split("|") if part.strip()]


def load_owl(path: str | Path, langs: list[str] | None = None) -> list[OwlItem]:
    """Load and validate; one DatasetError lists every problem (file, row, field)."""
    file = str(path)
    problems: list[Problem] = []
    items: list[OwlItem] = []
    seen: dict[tuple[str, str, str], int] = {}
    for number, row in read_rows(Path(path)):
        bad = [f for f in REQUIRED if row.get(f) is None or not str(row.get(f)).strip()]
        for field in bad:
            problems.append(Problem(file, number, field, "missing or empty"))
        if bad:
            continue
        if code_problem := language_code_problem(file, number, "language", str(row["language"])):
            problems.append(code_problem)
            continue
        if row["language_group"] not in GROUPS:
            problems.append(Problem(file, number, "language_group",
                                    f"{row['language_group']!r} is not one of {', '.join(GROUPS)}"))
            continue
        names = _as_list(row.get("names"))
        missing = [n for n in names if n not in str(row["passage"])]
        if missing:
            problems.append(Problem(file, number, "names", f"not in the passage: {', '.join(missing)}"))
            continue
        year = row.get("year")
        try:
            year = int(year) if year not in (None, "") else None
        except ValueError:
            problems.append(Problem(file, number, "year", f"{year!r} is not a year"))
            continue
        item = OwlItem(
            book_id=str(row["book_id"]), author=str(row["author"]), title_en=str(row["title_en"]),
            title=str(row.get("title") or ""), aliases=tuple(_as_list(row.get("aliases"))),
            language=str(row["language"]), language_group=row["language_group"],
            passage_id=str(row["passage_id"]), passage=str(row["passage"]), names=tuple(names), year=year,
            source=f"{file}:{number}",
        )
        key = (item.book_id, item.passage_id, item.language)
        if key in seen:
            problems.append(Problem(file, number, "passage_id", f"duplicate passage {item.key!r} (first at row {seen[key]})"))
            continue
        seen[key] = number
        if langs is None or item.language in langs:
            items.append(item)
    if problems:
        raise DatasetError(problems)
    return items


def convert_owl_release(
    path: str | Path, book_id: str, title_en: str, author: str, original: str,
    official: list[str], year: int | None = None, titles: dict[str, str] | None = None,
) -> list[OwlItem]:
    """Rows of one book from the release's CSV layout: passage columns named by language code,
    ``Single_ent`` a Python/JSON list of the names (absent or empty for the no-name set). The
    group of each language comes from ``original`` and ``official``; every other is unseen."""
    return owl_items_from_release_rows(read_rows(Path(path)), str(path), book_id, title_en, author, original,
                                       official, year, titles)


def owl_items_from_release_rows(
    rows: list[tuple[int, dict[str, Any]]], file: str, book_id: str, title_en: str, author: str, original: str,
    official: list[str], year: int | None = None, titles: dict[str, str] | None = None,
) -> list[OwlItem]:
    """``convert_owl_release`` on rows already read (the release's CSV or its JSON records)."""
    if not rows:
        raise DatasetError([Problem(file, None, None, "no rows")])
    columns = [c for c in rows[0][1] if c != "Single_ent" and "_" not in c and c.isalpha() and c.islower()]
    if not columns:
        raise DatasetError([Problem(file, None, None, "no language columns (expected e.g. en, es, tr)")])
    items, problems = [], []
    for number, row in rows:
        raw = row.get("Single_ent")
        try:
            names = [str(n) for n in (ast.literal_eval(raw) if isinstance(raw, str) and raw.strip() else raw or [])]
        except (ValueError, SyntaxError):
            problems.append(Problem(file, number, "Single_ent", f"not a list of names: {raw!r}"))
            continue
        for lang in columns:
            text = row.get(lang)
            if text is None or not str(text).strip():
                continue
            group: Group = "original" if lang == original else "official" if lang in official else "unseen"
            text = str(text)
            if "[MASK]" in text and len(names) == 1:
                # the release's masked files: the one name goes back where it was masked
                text = text.replace("[MASK]", names[0])
            present = [n for n in names if n in text]
            items.append(OwlItem(
                book_id=book_id, author=author, title_en=title_en, title=(titles or {}).get(lang, ""),
                language=lang, language_group=group, passage_id=str(number), passage=str(text),
                names=tuple(present), year=year, source=f"{file}:{number}",
            ))
    if problems:
        raise DatasetError(problems)
    return items
