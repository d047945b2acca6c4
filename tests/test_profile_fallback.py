"""The language profile keeps a language whose memorization samples never reach the longest
prompt length (issue 18: ru, ja, hi, it, la, ar, ko were dropped silently in the demo): it is
shown at its own longest scored length, and the cell says which."""

from __future__ import annotations

from babelprobe.families.memorization.analysis import LengthRow, MemorizationSummary, MetricCell, MetricPair
from babelprobe.families.memorization.report import memorization_profile
from babelprobe.report.html import ProfileCell, _environment


def _row(language: str, length: int, scored: int, em: float) -> LengthRow:
    cell = MetricCell(value=em, ci_low=max(em - 0.1, 0.0), ci_high=min(em + 0.1, 1.0), n=scored)
    return LengthRow(language=language, prefix_tokens=length, exact_ratio=0.0, samples=3, scored=scored,
                     too_short=3 - scored, errors=0, metrics={"EM": MetricPair(real=cell)} if scored else {})


def test_each_language_at_its_longest_scored_length():
    rows = [_row("en", 50, 3, 0.2), _row("en", 100, 2, 0.5),
            _row("ja", 50, 3, 0.1), _row("ja", 100, 0, 0.0),  # no Japanese sample reaches 100 tokens
            _row("ru", 25, 1, 0.3), _row("ru", 50, 0, 0.0), _row("ru", 100, 0, 0.0)]
    summary = MemorizationSummary(mode="decoder", overall=[], by_language=rows, length_correlations=[])
    got = {m.language: m for m in memorization_profile(summary)}
    assert set(got) == {"en", "ja", "ru"}
    assert {m.metric for m in got.values()} == {"memorization EM % (100-token prompt)"}
    assert (got["en"].value, got["en"].n, got["en"].note) == (50.0, 2, "")
    assert (got["ja"].value, got["ja"].n, got["ja"].note) == (10.0, 3, "50-token prompt")
    assert (round(got["ru"].value, 6), got["ru"].n, got["ru"].note) == (30.0, 1, "25-token prompt")


def test_the_profile_page_says_which_length():
    cells = [ProfileCell(10.0, 0.0, 20.0, 3, "50-token prompt"), ProfileCell(50.0, 40.0, 60.0, 2)]
    rows = [{"language": lang, "name": lang, "script": "", "family": "", "cells": [cell]}
            for lang, cell in (("ja", cells[0]), ("en", cells[1]))]
    page = _environment().get_template("profile.html.j2").render(
        title="t", family_note="", models=[{"spec": "m", "metrics": ["memorization EM % (100-token prompt)"],
                                            "rows": rows, "runs": [], "heatmap": None}])
    assert page.count("at 50-token prompt") == 1 and "n=2" in page
