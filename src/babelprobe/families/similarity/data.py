"""Parallel sentences for language similarity (Shared Path §4.1: the same sentences in every
language; the paper used Flores+).

Two inputs:
- a file (JSONL/CSV/Parquet) with ``id``, ``language``, ``text``: the same ``id`` is the same
  sentence in each language (Flores+ exported this way, or anything else);
- a directory in the Polyglot-or-Not release layout (``<lang>.parquet``): ``dataset_id`` is the
  fact, the text is its first stem. Some translated files hold untranslated English copies; a
  stem identical to the English one for the same fact is dropped when English is loaded.
Only ids present in every language are kept, so each language's mean embedding is taken over the
same sentences.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel, ConfigDict

from babelprobe.data.polyglot_or_not import load_cka_facts
from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem, language_code_problem
from babelprobe.languages import normalise_code

REQUIRED = ("id", "language", "text")


class ParallelSentence(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    language: str
    text: str
    source: str  # file:row
    raw_language: str | None = None  # the code as the file wrote it (``language`` is normalise_code's)


def _tag(code: str):
    """The code as a langcodes Language ('cmn_Hant' read as 'cmn-Hant'), or None."""
    import langcodes

    try:
        return langcodes.Language.get(langcodes.standardize_tag(code.strip().replace("_", "-")))
    except (ValueError, LookupError):
        return None


def script_of(code: str) -> str | None:
    """The ISO 15924 script a code names or implies (CLDR likely subtags): 'zh-Hant', 'zh-TW' and
    'cmn_Hant' -> 'Hant', 'zh' -> 'Hans', 'iw' -> 'Hebr', 'ku' -> 'Latn'; None for a code langcodes
    cannot read."""
    tag = _tag(code)
    try:
        return tag.maximize().script if tag is not None else None
    except (ValueError, LookupError):
        return None


def chosen_varieties(langs: Iterable[str] | None) -> dict[str, str]:
    """language -> the script asked for, for each requested code that names a script itself
    (``--langs zh-Hant`` or ``cmn_Hant``: the Traditional variety of zh, whatever the file's spelling)."""
    chosen = {}
    for lang in langs or []:
        tag = _tag(lang)
        if tag is not None and tag.script:
            chosen[normalise_code(lang)] = tag.script
    return chosen


def _from_file(path: Path, langs: list[str] | None, varieties: dict[str, str] | None = None) -> list[ParallelSentence]:
    """``varieties``: language -> script: rows of that language in another script are skipped
    (two varieties in one file, e.g. zh-Hans and zh-Hant: the one asked for is kept)."""
    problems: list[Problem] = []
    sentences: list[ParallelSentence] = []
    seen: dict[tuple[str, str], int] = {}
    written: dict[str, set[str]] = {}  # language -> the codes the file writes it with
    first_code: dict[tuple[str, str], str] = {}  # (id, language) -> the code of its first row
    for number, row in read_rows(path):
        missing = [name for name in REQUIRED if row.get(name) is None or not str(row[name]).strip()]
        if missing:
            problems += [Problem(str(path), number, name, "missing or empty") for name in missing]
            continue
        language = str(row["language"]).strip()
        if bad := language_code_problem(str(path), number, "language", language):
            problems.append(bad)
            continue
        raw = language
        language = normalise_code(language)  # one code per language
        if langs is not None and language not in langs:
            continue
        if varieties and language in varieties and script_of(raw) != varieties[language]:
            continue  # another variety of a language whose variety was chosen
        written.setdefault(language, set()).add(raw)
        key = (str(row["id"]), language)
        if key in seen and first_code[key] != raw:
            continue  # the same sentence in another code of the language: one problem for the file, below
        if key in seen:
            problems.append(Problem(str(path), number, "id", f"duplicate id {key[0]!r} in {language} "
                                    f"(first at row {seen[key]})"))
            continue
        seen[key] = number
        first_code[key] = raw
        sentences.append(ParallelSentence(id=key[0], language=language, text=str(row["text"]),
                                          source=f"{path}:{number}", raw_language=str(row["language"]).strip()))
    problems += _clashes(path, written)
    if problems:
        raise DatasetError(problems)
    return sentences


def _from_polyglot_release(path: Path, langs: list[str] | None) -> list[ParallelSentence]:
    facts = load_cka_facts(path, langs)
    english = {f.fact_id: f.stems[0] for f in facts if f.language == "en"}
    return [
        ParallelSentence(id=f.fact_id, language=f.language, text=f.stems[0], source=f.source)
        for f in facts
        if f.language == "en" or english.get(f.fact_id) != f.stems[0]
    ]


def _clashes(path: Path, written: dict[str, set[str]]) -> list[Problem]:
    """Two codes of one language (iw and he; zh-Hans and zh-Hant) in one input: reported, never
    merged or dropped; where they name different scripts, --langs chooses a variety."""
    clashes = {lang: sorted(codes) for lang, codes in written.items() if len(codes) > 1}
    return [Problem(str(path), None, "language", f"{' and '.join(codes)} are one language ({lang}): keep one"
                    + (f", or choose a variety with --langs {' or '.join(codes)}"
                       if len({script_of(c) for c in codes}) > 1 else ""))
            for lang, codes in clashes.items()]


def _check_one_code_per_language(path: Path, sentences: list[ParallelSentence]) -> None:
    raw: dict[str, set[str]] = {}
    for s in sentences:
        raw.setdefault(s.language, set()).add(s.raw_language or s.language)
    if problems := _clashes(path, raw):
        raise DatasetError(problems)


def load_parallel(path: str | Path, langs: Iterable[str] | None = None, limit: int | None = None,
                  seed: int = 0) -> list[ParallelSentence]:
    """The sentences of the ids present in every language; ``limit`` ids drawn with a seeded sample."""
    path = Path(path)
    varieties = chosen_varieties(langs)
    langs = [normalise_code(lang) for lang in langs] if langs is not None else None
    if not path.exists():
        raise DatasetError([Problem(str(path), None, None, "no such file or directory")])
    sentences = _from_polyglot_release(path, langs) if path.is_dir() else _from_file(path, langs, varieties)
    if not sentences and not langs:
        return []  # load_items: "no parallel sentences: the dataset is empty", as for every family
    _check_one_code_per_language(path, sentences)
    by_language: dict[str, set[str]] = {}
    for s in sentences:
        by_language.setdefault(s.language, set()).add(s.id)
    absent = [lang for lang in (langs or []) if lang not in by_language]
    if absent:
        raise DatasetError([Problem(str(path), None, "language", f"no sentences for {', '.join(absent)}")])
    if len(by_language) < 2:
        raise DatasetError([Problem(str(path), None, "language",
                                    f"language similarity needs at least 2 languages, found {sorted(by_language)}")])
    shared = sorted(set.intersection(*by_language.values()))
    if not shared:
        raise DatasetError([Problem(str(path), None, "id", "no id is present in every language: the data must be parallel")])
    if limit is not None and limit < len(shared):
        shared = sorted(random.Random(seed).sample(shared, limit))
    keep = set(shared)
    order = {lang: i for i, lang in enumerate(langs or sorted(by_language))}
    return sorted((s for s in sentences if s.id in keep), key=lambda s: (order[s.language], s.id))
