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
import unicodedata
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
    # why the fact is loaded but not scored (a false object equal to the true one), or ""
    excluded: str = ""
    language_from_file_name: bool = False  # no language column: the file's name, as --langs asked

    @property
    def objects(self) -> tuple[str, ...]:
        return (self.true, *self.false)

    def stem_of(self, index: int) -> str:
        """Stem for object ``index`` (0 = true, i = i-th false)."""
        return self.stems[index] if len(self.stems) > 1 else self.stems[0]


def split_field(value: Any) -> list[Any]:
    """A ``" <br> "``-joined string or a list, as a list of pieces (whitespace kept inside); a
    piece that is not text (a JSON number or null) is kept as it is, for ``parse_fact`` to refuse."""
    if isinstance(value, (list, tuple)):
        return list(value)
    return value.split(SEPARATOR) if isinstance(value, str) else [value]


def as_read(text: str) -> str:
    """An object as a reader compares it: NFC, case-folded, without surrounding spaces."""
    return unicodedata.normalize("NFC", text).strip().casefold()


def same_as_true(true: str, falses: Iterable[str]) -> str:
    """Why a fact can never be known (P(true) > mean P(false) fails when a counterfactual is the
    true object itself, Polyglot-or-Not §3), or "" when every false object differs from the true one."""
    same = [f"false object {i} {f!r}" for i, f in enumerate(falses, 1) if as_read(f) == as_read(true)]
    if not same:
        return ""
    return (f"{', '.join(same)} equals the true object {true!r} (after NFC, case and surrounding spaces): "
            "the fact can never be known")


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
        # a JSON number or null is refused, not read as the text '1889' or 'None'
        not_text = [f"piece {i} is {'null' if p is None else f'a {type(p).__name__} ({p!r})'}"
                    for i, p in enumerate(pieces, 1) if not isinstance(p, str)]
        if not_text:
            bad(name, f"{'; '.join(not_text)}: every piece must be text (write a number as a quoted string)")
        elif any(not p.strip() for p in pieces):
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
        excluded=same_as_true(str(row["true"]), falses),
    )
    return fact, []


def canonical_code(code: str) -> str:
    """A BCP-47 tag in its canonical form, so that one language is one group: 'EN' -> 'en',
    'pt-br' -> 'pt-BR', 'iw' -> 'he' (langcodes.standardize_tag); as written where it cannot read it."""
    import langcodes

    try:
        return langcodes.standardize_tag(code.strip())
    except (ValueError, LookupError):
        return code.strip()


def _files(path: Path, langs: Iterable[str] | None) -> list[tuple[Path, str | None]]:
    """(file, language from the file name or None) for a directory or a single file. A single
    file's name is its language only when that name is a code the user asked for (--langs): a
    file called new.csv is not Newari, all.csv not 'all'; a directory of <lang>.parquet
    files is the release's layout, and every file in it is named by its language."""
    if path.is_file():
        stem = path.name.split(".")[0]
        asked = {canonical_code(lang) for lang in langs or ()}
        return [(path, stem if _LANG_CODE.match(stem) and canonical_code(stem) in asked else None)]
    if not path.is_dir():
        raise DatasetError([Problem(str(path), None, None, "no such file or directory")])
    found: dict[str, Path] = {}
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
    langs = [canonical_code(lang) for lang in langs] if langs is not None else None
    problems: list[Problem] = []
    facts: dict[str, list[CKAFact]] = {}
    for file, file_lang in _files(Path(path), langs):
        seen: dict[str, int] = {}
        for number, row in read_rows(file):
            language = str(row.get("language") or file_lang or "")
            if not language:
                stem = file.name.split(".")[0]
                hint = (f", or pass --langs {stem} if the file name {stem!r} is the facts' language"
                        if _LANG_CODE.match(stem) else "")
                problems.append(Problem(str(file), number, "language",
                                        f"missing: add a 'language' column{hint}"))
                continue
            if bad := language_code_problem(str(file), number, "language", language,
                                            "" if row.get("language") else " (from the file name)"):
                problems.append(bad)
                continue
            language = canonical_code(language)  # EN and en are one language, their ids one namespace
            if langs is not None and language not in langs:
                continue
            fact, found = parse_fact(row, language, str(file), number)
            problems += found
            if fact is None:
                continue
            if not row.get("language") and file_lang and Path(path).is_file():  # a folder's layout names them all
                fact = fact.model_copy(update={"language_from_file_name": True})
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
