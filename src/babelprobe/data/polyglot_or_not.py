"""Polyglot-or-Not facts: the release layout read by the contrastive knowledge assessment (CKA
family) and by language similarity (the first stem of each fact as a parallel sentence).

The release's Parquet layout (one file per language, ISO 639-1 code as the file name; columns
dataset_id, stem, true, false, relation, subject, object) and JSONL/CSV with the same fields.
Conventions of the release (../shared/data/polyglot-or-not/README.md):

- ``false`` holds one or more counterfactual objects joined by the literal ``" <br> "``
  (JSONL may give a list instead);
- ``stem`` may hold several stems joined the same way; then there are exactly
  ``len(false) + 1`` of them: stem 0 goes with ``true``, stem i with the i-th false object
  (translation changed the grammar around the object).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict

from babelprobe.data.tables import TABLE_SUFFIXES, read_rows
from babelprobe.data.validation import DatasetError, Problem, language_code_problem

SEPARATOR = " <br> "
REQUIRED = ("dataset_id", "stem", "true", "false")
_LANG_CODE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]+)?$")


class CKAFact(BaseModel):
    model_config = ConfigDict(frozen=True)

    fact_id: str
    language: str
    stems: tuple[str, ...]  # stems[0] goes with `true`, stems[i] with false[i-1]
    true: str
    false: tuple[str, ...]
    relation: str = ""
    subject: str = ""
    object: str = ""
    source: str = ""  # file and row, for error messages and provenance

    @property
    def objects(self) -> tuple[str, ...]:
        return (self.true, *self.false)

    def stem_of(self, index: int) -> str:
        """Stem for object ``index`` (0 = true, i = i-th false)."""
        return self.stems[index] if len(self.stems) > 1 else self.stems[0]


def split_field(value: Any) -> list[str]:
    """A ``" <br> "``-joined string or a list, as a list of pieces (whitespace kept inside)."""
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return str(value).split(SEPARATOR)


def parse_fact(row: dict[str, Any], language: str, file: str, number: int) -> tuple[CKAFact | None, list[Problem]]:
    problems = []

    def bad(field: str, message: str) -> None:
        problems.append(Problem(file, number, field, message))

    for name in REQUIRED:
        value = row.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            bad(name, "missing or empty")
    if problems:
        return None, problems
    falses = split_field(row["false"])
    stems = split_field(row["stem"])
    for name, pieces in (("false", falses), ("stem", stems)):
        if any(not p.strip() for p in pieces):
            bad(name, f"has an empty piece between {SEPARATOR.strip()!r} separators")
    if len(stems) not in (1, len(falses) + 1):
        bad(
            "stem",
            f"{len(stems)} stems for {len(falses)} false objects: expected 1 shared stem or "
            f"{len(falses) + 1} (one for the true object, then one per false object)",
        )
    if problems:
        return None, problems
    fact = CKAFact(
        fact_id=str(row["dataset_id"]), language=language, stems=tuple(stems),
        true=str(row["true"]), false=tuple(falses),
        relation=str(row.get("relation") or ""), subject=str(row.get("subject") or ""),
        object=str(row.get("object") or ""), source=f"{file}:{number}",
    )
    return fact, []


def _files(path: Path, langs: Iterable[str] | None) -> list[tuple[Path, str | None]]:
    """(file, language from the file name or None) for a directory or a single file."""
    if path.is_file():
        stem = path.name.split(".")[0]
        return [(path, stem if _LANG_CODE.match(stem) else None)]
    if not path.is_dir():
        raise DatasetError([Problem(str(path), None, None, "no such file or directory")])
    found = {}
    for file in sorted(path.iterdir()):
        if file.suffix.lower() in TABLE_SUFFIXES and _LANG_CODE.match(file.name.split(".")[0]):
            found.setdefault(file.name.split(".")[0], file)
    if langs is not None:
        missing = [lang for lang in langs if lang not in found]
        if missing:
            raise DatasetError([Problem(str(path), None, None, f"no file for language(s) {', '.join(missing)} "
                                        f"(expected e.g. {missing[0]}.parquet); have: {', '.join(found) or 'none'}")])
        return [(found[lang], lang) for lang in langs]
    if not found:
        raise DatasetError([Problem(str(path), None, None, "no <lang>.parquet/.jsonl/.csv files found")])
    return [(file, lang) for lang, file in found.items()]


def load_cka_facts(
    path: str | Path,
    langs: Iterable[str] | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> list[CKAFact]:
    """Load and validate facts; raise one DatasetError listing every problem (file, row, field).

    ``limit`` keeps at most that many facts per language, drawn with a seeded shuffle (the
    release files are ordered by source dataset, so the first rows are not a fair sample)."""
    langs = list(langs) if langs is not None else None
    problems: list[Problem] = []
    facts: dict[str, list[CKAFact]] = {}
    for file, file_lang in _files(Path(path), langs):
        seen: dict[str, int] = {}
        for number, row in read_rows(file):
            language = str(row.get("language") or file_lang or "")
            if not language:
                problems.append(Problem(str(file), number, "language",
                                        "missing: add a 'language' column or name the file <lang>.jsonl"))
                continue
            if bad := language_code_problem(str(file), number, "language", language,
                                            "" if row.get("language") else " (from the file name)"):
                problems.append(bad)
                continue
            if langs is not None and language not in langs:
                continue
            fact, found = parse_fact(row, language, str(file), number)
            problems += found
            if fact is None:
                continue
            key = f"{language}/{fact.fact_id}"
            if key in seen:
                problems.append(Problem(str(file), number, "dataset_id",
                                        f"duplicate id {fact.fact_id!r} (first at row {seen[key]})"))
                continue
            seen[key] = number
            facts.setdefault(language, []).append(fact)
    if problems:
        raise DatasetError(problems)
    if langs is not None:
        absent = [lang for lang in langs if lang not in facts]
        if absent:
            raise DatasetError([Problem(str(path), None, "language", f"no facts for {', '.join(absent)}")])
    out: list[CKAFact] = []
    for language in (langs or sorted(facts)):
        chosen = facts[language]
        if limit is not None and limit < len(chosen):
            picked = sorted(random.Random(f"{seed}/{language}").sample(range(len(chosen)), limit))
            chosen = [chosen[i] for i in picked]
        out += chosen
    return out
