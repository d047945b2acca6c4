"""What a verdict rests on: every string-metric verdict and every mask records its evidence.

Items tables carry a string column ``evidence`` (a JSON list of :class:`Evidence`, written by
:func:`evidence_json`) and a column ``text_flag`` (the reason of an :class:`Unsure`, or null).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Evidence:
    rule: str  # which rule of the layer decided (e.g. 'fold', 'name_form', 'title', 'yes_no')
    matched: str  # the text that matched
    form: str | None = None  # the form it matched as (a folded or inflected form)
    span: tuple[int, int] | None = None  # where in the text
    source: str | None = None  # the table row or source behind the rule

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def to_dict(self) -> dict[str, object]:
        record = asdict(self)
        record["span"] = list(self.span) if self.span is not None else None
        return {key: value for key, value in record.items() if value is not None}

    @classmethod
    def from_dict(cls, record: dict[str, object]) -> Evidence:
        span = record.get("span")
        return cls(str(record["rule"]), str(record["matched"]), record.get("form"),  # type: ignore[arg-type]
                   tuple(span) if span is not None else None, record.get("source"))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Unsure:
    """The layer could not decide: a flag with a reason, never a guess."""

    reason: str


def evidence_json(evidence: list[Evidence]) -> str:
    """The items table's ``evidence`` cell: a JSON list."""
    return json.dumps([item.to_dict() for item in evidence], ensure_ascii=False)


def evidence_from_json(cell: str | None) -> list[Evidence]:
    """An ``evidence`` cell read back (empty or null: [])."""
    if not cell:
        return []
    return [Evidence.from_dict(record) for record in json.loads(cell)]
