"""Polyglot-or-Not contrastive knowledge assessment (CKA) probe, paper §3.

Two modes:

- ``first-token`` (the paper's): the probability of the first token of " " + object as the next
  token after the stem. Objects that share a stem are one NextToken request, so every candidate of
  a stem is read off one forward pass.
- ``full``: the summed log-probability of the whole object (one LogLikelihood per object).

The object follows the stem after one space, unless the stem already ends in whitespace or in a
script written without spaces (Chinese, Japanese, Thai, ...), where it follows directly.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel

from babelprobe.data.polyglot_or_not import CKAFact
from babelprobe.text.scripts import detect_script
from babelprobe.text.units import joins_without_space
from babelprobe.families.cka.metrics import cka_known, cka_log_ratio
from babelprobe.models.base import LogLikelihood, LogLikelihoodResult, NextToken, NextTokenResult, Request, Response

Mode = Literal["first-token", "full"]


class CKARecord(BaseModel):
    """One row of items.parquet for the cka probe."""

    fact_id: str
    language: str
    script: str
    relation: str
    subject: str
    mode: str
    stems: list[str]
    true: str
    false: list[str]
    logp_true: float | None = None
    logp_false: list[float] | None = None
    p_true: float | None = None
    p_false: list[float] | None = None
    cka_ratio: float | None = None
    known: bool | None = None
    scored_tokens: list[list[str]] | None = None  # the tokens scored for true, then each false
    # why the fact is left out of the scores (a false object equal to the true one); its log-probs
    # are kept for the record, its verdict is not given (known is None)
    excluded: str | None = None
    error: str | None = None


def continuation(stem: str, obj: str) -> str:
    return obj if joins_without_space(stem) else " " + obj


class CKAProbe:
    name = "cka"

    def __init__(self, mode: Mode = "first-token"):
        if mode not in ("first-token", "full"):
            raise ValueError(f"unknown cka mode {mode!r}: first-token or full")
        self.mode = mode
        self.request_kinds = frozenset({"next_token"} if mode == "first-token" else {"loglikelihood"})

    def _plan(self, fact: CKAFact) -> tuple[list[Request], list[tuple[int, int]]]:
        """Requests, and for each object (true first) where its score is: (request, candidate)."""
        if self.mode == "full":
            requests: list[Request] = [
                LogLikelihood(context=fact.stem_of(i), continuation=continuation(fact.stem_of(i), o))
                for i, o in enumerate(fact.objects)
            ]
            return requests, [(i, 0) for i in range(len(fact.objects))]
        by_stem: dict[str, list[str]] = {}
        where = []
        for i, obj in enumerate(fact.objects):
            stem = fact.stem_of(i)
            cands = by_stem.setdefault(stem, [])
            cont = continuation(stem, obj)
            if cont not in cands:
                cands.append(cont)
            where.append((list(by_stem).index(stem), cands.index(cont)))
        requests = [NextToken(context=s, candidates=tuple(c)) for s, c in by_stem.items()]
        return requests, where

    def requests(self, fact: CKAFact) -> list[Request]:
        return self._plan(fact)[0]

    def _base(self, fact: CKAFact, **values) -> CKARecord:
        return CKARecord(
            fact_id=fact.fact_id, language=fact.language,
            script=detect_script(" ".join(fact.stems) + " " + fact.true),
            relation=fact.relation, subject=fact.subject, mode=self.mode, stems=list(fact.stems),
            true=fact.true, false=list(fact.false), excluded=fact.excluded or None, **values,
        )

    def score(self, fact: CKAFact, responses: list[Response]) -> CKARecord:
        _, where = self._plan(fact)
        logps, tokens = [], []
        for req_index, cand_index in where:
            r = responses[req_index]
            if isinstance(r, NextTokenResult):
                logps.append(r.logprobs[cand_index])
                tokens.append([r.tokens[cand_index]])
            elif isinstance(r, LogLikelihoodResult):
                logps.append(r.logprob)
                tokens.append(r.tokens)
            else:
                raise TypeError(f"unexpected response {type(r).__name__}")
        lp_true, lp_false = logps[0], logps[1:]
        log_ratio = cka_log_ratio(lp_true, lp_false)
        return self._base(
            fact, logp_true=lp_true, logp_false=lp_false, p_true=math.exp(lp_true),
            p_false=[math.exp(lp) for lp in lp_false],
            cka_ratio=math.exp(min(log_ratio, 700.0)),
            known=None if fact.excluded else cka_known(lp_true, lp_false),
            scored_tokens=tokens,
        )

    def failed(self, fact: CKAFact, error: str) -> CKARecord:
        return self._base(fact, error=error)
