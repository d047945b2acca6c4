"""ECLeKTiC question rows (ECLeKTiC §2.2): one row per question and target language, the
source-language row included (target == source).

Files: JSONL/CSV/Parquet. Column names differ between the public release and derived sets, so
they are mapped: ``ColumnMap`` defaults to the names of the official string-metric notebook
(q_id, original_language, target_language, question, answer) plus context and title;
``context`` is read per row: on the source row it is the source-language paragraph, on every other
row the same paragraph translated into that row's target language (the release's ``<lang>_c``
columns, ``content`` in long-format exports);
``ColumnMap.parse("source_language=original_lang,target_language=lang,context=content")`` maps
others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem, language_code_problem
from babelprobe.families.eclektic.metrics import words_of


class ColumnMap(BaseModel):
    """Field -> column name in the file."""

    q_id: str = "q_id"
    source_language: str = "original_language"
    target_language: str = "target_language"
    question: str = "question"
    answer: str = "answer"
    context: str = "context"
    title: str = "title"
    prediction: str = "prediction"  # only read when rescoring saved predictions

    @classmethod
    def parse(cls, spec: str | None) -> "ColumnMap":
        """``field=column,field=column`` (unnamed fields keep their defaults)."""
        if not spec:
            return cls()
        pairs = {}
        for part in spec.split(","):
            field, sep, column = part.partition("=")
            if not sep or field.strip() not in cls.model_fields:
                raise ValueError(f"column mapping {part!r}: expected FIELD=COLUMN with FIELD one of "
                                 f"{', '.join(cls.model_fields)}")
            pairs[field.strip()] = column.strip()
        return cls(**pairs)


class EclekticRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    q_id: str
    source_language: str
    target_language: str
    question: str
    answer: str
    source_context: str = ""  # the source-language context paragraphs (from the source row)
    target_context: str = ""  # this row's own context: the paragraphs in its target language (§3)
    source_title: str = ""  # the source-language article title (from the source row)
    prediction: str | None = None  # saved predictions being rescored
    source: str = ""  # file:row

    @property
    def is_source(self) -> bool:
        return self.source_language == self.target_language


def load_eclektic(
    path: str | Path,
    columns: ColumnMap | None = None,
    need_context: bool = False,
    langs: list[str] | None = None,
    predictions: bool = False,
    need_target_context: bool = False,
) -> list[EclekticRow]:
    """Load and validate; one DatasetError lists every problem (file, row, field).

    Every question needs its source-language row (it is what transfer is measured against), every
    gold answer must be non-empty, with ``need_context`` (cross-lingual open-book, Fig. 10) the
    source row must carry the context, and with ``need_target_context`` (the judge, §3 and Fig. 9:
    "the question and the translated context", in the target language) every kept row must carry
    its own context. ``langs`` keeps questions whose source and target are both listed.
    With ``predictions`` (rescoring) the question may be absent and a prediction column is read.
    """
    columns = columns or ColumnMap()
    file = str(path)
    problems: list[Problem] = []
    parsed: list[tuple[int, dict[str, str]]] = []
    seen: dict[tuple[str, str], int] = {}
    optional = {"context", "title"} | ({"question"} if predictions else {"prediction"})
    raw = read_rows(Path(path))
    if raw and (missing := [c for f, c in columns.model_dump().items()
                            if f not in optional and c not in raw[0][1]]):
        raise DatasetError([Problem(file, None, None, f"no column(s) {', '.join(missing)}; have "
                                    f"{', '.join(raw[0][1])} (map them with --columns FIELD=COLUMN)")])
    for number, row in raw:
        values: dict[str, str] = {}
        for field, column in columns.model_dump().items():
            value: Any = row.get(column)
            values[field] = "" if value is None else str(value)
            if field not in optional | {"prediction"} and not values[field].strip():
                problems.append(Problem(file, number, column, "missing or empty"
                                        + (" (an empty gold answer makes recall undefined)" if field == "answer" else "")))
        for field in ("source_language", "target_language"):
            code = values[field]
            if code.strip() and (bad := language_code_problem(file, number, getattr(columns, field), code)):
                problems.append(bad)
        if values["answer"].strip() and not words_of(values["answer"]):
            problems.append(Problem(file, number, columns.answer, "has no words (only punctuation or symbols)"))
        key = (values["q_id"], values["target_language"])
        if key in seen:
            problems.append(Problem(file, number, columns.q_id,
                                    f"duplicate question {key[0]!r} in {key[1]!r} (first at row {seen[key]})"))
        seen.setdefault(key, number)
        parsed.append((number, values))

    def kept(v: dict[str, str]) -> bool:
        return langs is None or (v["source_language"] in langs and v["target_language"] in langs)

    sources = {v["q_id"]: (n, v) for n, v in parsed if v["source_language"] == v["target_language"]}
    for number, v in parsed:
        if v["q_id"] and v["q_id"] not in sources:
            problems.append(Problem(file, number, columns.q_id, f"question {v['q_id']!r} has no source-language "
                                    f"row (a row with {columns.target_language} == {v['source_language']!r})"))
    if need_context:
        for q_id, (number, v) in sources.items():
            if not v["context"].strip():
                problems.append(Problem(file, number, columns.context,
                                        f"source row of {q_id!r} has no context (needed for open-book)"))
    if need_target_context:
        for number, v in parsed:
            if kept(v) and not v["context"].strip():
                problems.append(Problem(file, number, columns.context, f"no {v['target_language']!r} context for "
                                        f"question {v['q_id']!r} (the judge reads the translated context, §3)"))
    if problems:
        raise DatasetError(problems)
    rows = []
    for number, v in parsed:
        if not kept(v):
            continue
        src = sources[v["q_id"]][1]
        rows.append(EclekticRow(
            q_id=v["q_id"], source_language=v["source_language"], target_language=v["target_language"],
            question=v["question"], answer=v["answer"], source_context=src["context"], target_context=v["context"],
            source_title=src["title"], source=f"{file}:{number}",
            prediction=v["prediction"] if predictions else None,
        ))
    return rows
