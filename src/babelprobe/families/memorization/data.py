"""Memorization samples (Shared Path §5.2): texts believed to be in a model's training data.

Accepted layouts: the output directory of ``babelprobe corpus sample`` (one ``<lang>.parquet``
per language, columns ``text``, ``language``, ``source``), any directory of ``<lang>.jsonl`` /
``<lang>.parquet`` / ``<lang>.csv`` files with a ``text`` column, or one JSONL/CSV/Parquet file
with ``text`` and ``language`` columns. Optional columns: ``id`` (else language + row number) and
``source`` (where the text came from: the sampler's file:row or dataset/split/index, or a
citation; kept as ``origin``). ``Sample.source`` is always this file's path and row.
"""

from __future__ import annotations

import random
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from babelprobe.data.tables import TABLE_SUFFIXES, read_rows
from babelprobe.data.validation import DatasetError, Problem, language_code_problem
from babelprobe.languages import normalise_code


class Sample(BaseModel):
    model_config = ConfigDict(frozen=True)

    sample_id: str
    language: str
    text: str
    source: str  # file:row of the sample file (manifest data_files)
    origin: str = ""  # the row's own `source` column: where the text came from


def _files(path: Path) -> list[tuple[Path, str | None]]:
    """(file, language implied by its name or None) for a file or a per-language directory."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in TABLE_SUFFIXES)
        if not files:
            raise DatasetError([Problem(str(path), None, None, f"no {', '.join(TABLE_SUFFIXES)} files")])
        return [(f, f.stem) for f in files]
    if not path.exists():
        raise DatasetError([Problem(str(path), None, None, "no such file or directory")])
    return [(path, None)]


def load_samples(path: str | Path, langs: list[str] | None = None, limit: int | None = None,
                 seed: int = 0) -> list[Sample]:
    """Load and validate every sample; ``limit`` keeps a seeded sample of that many per language.
    One DatasetError lists every problem (file, row, field)."""
    problems: list[Problem] = []
    samples: list[Sample] = []
    seen: dict[str, str] = {}
    written: dict[str, dict[str, str]] = {}  # normalised code -> code as written -> first place
    for file, file_language in _files(Path(path)):
        for row_number, row in read_rows(file):
            where = str(file)
            text = row.get("text")
            language = row.get("language") or file_language
            if not isinstance(text, str) or not text.strip():
                problems.append(Problem(where, row_number, "text", "missing or empty text"))
                continue
            if not language or not str(language).strip():
                problems.append(Problem(where, row_number, "language",
                                        "missing language (add a 'language' column or name the file <lang>.jsonl)"))
                continue
            if bad := language_code_problem(where, row_number, "language", str(language).strip(),
                                            "" if row.get("language") else " (from the file name)"):
                problems.append(bad)
                continue
            sample_id = str(row.get("id") or f"{language}-{file.stem}-{row_number}")
            if sample_id in seen:
                problems.append(Problem(where, row_number, "id", f"duplicate id {sample_id!r} (first at {seen[sample_id]})"))
                continue
            seen[sample_id] = f"{where}:{row_number}"
            # one code per language for every Shared Path input: iw -> he, nob_Latn -> no
            code = normalise_code(str(language))
            written.setdefault(code, {}).setdefault(str(language).strip(), f"{where}:{row_number}")
            samples.append(Sample(sample_id=sample_id, language=code, text=text,
                                  source=f"{where}:{row_number}", origin=str(row.get("source") or "")))
    for code, spellings in written.items():
        if len(spellings) > 1:  # two codes of one language are reported, never merged
            problems.append(Problem(str(path), None, "language", f"{' and '.join(sorted(spellings))} are one language "
                                    f"({code}; first at {', '.join(spellings.values())}): keep one"))
    if problems:
        raise DatasetError(problems)
    if langs:
        wanted = {normalise_code(lang) for lang in langs}
        samples = [s for s in samples if s.language in wanted]
    if limit is not None:
        kept = []
        for language in sorted({s.language for s in samples}):
            mine = [s for s in samples if s.language == language]
            kept += mine if len(mine) <= limit else random.Random(f"{seed}/{language}").sample(mine, limit)
        samples = kept
    return samples
