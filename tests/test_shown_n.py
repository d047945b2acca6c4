"""Every n shown beside a statistic is the n it was computed from (issue 30, 'a number shown wrong'):
each displayed ECLeKTiC margin is recomputed from its displayed value and displayed n."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from babelprobe.families.eclektic.analysis import Z95, summarise_eclektic
from babelprobe.families.eclektic.report import ablation_table, eclektic_sections, print_eclektic_summary

TARGETS = ("de", "fr", "ja", "ru", "hi", "he", "id", "zh")


def _items(judged: bool) -> pd.DataFrame:
    """3 questions x 8 target languages = 24 pairs; only q0 answered right in its source language
    (judge), so the transfer score rests on q0's 8 pairs."""
    rows = []
    for q in range(3):
        for i, lang in enumerate(("en", *TARGETS)):
            source = lang == "en"
            recall = (1.0 if q == 0 else 0.4 if q == 1 else 0.0) if source else (1.0 if i % 3 else 0.5)
            row = {"q_id": f"q{q}", "source_language": "en", "target_language": lang, "is_source": source,
                   "setting": "closed-book", "script": None, "recall": recall, "recall_compat": recall,
                   "prompt": "Q?", "prediction": "A", "answer": "A", "error": None}
            if judged:
                row["judge_correct"] = (q == 0) if source else bool(i % 2)
            rows.append(row)
    return pd.DataFrame(rows)


# terminal row: │ score │ % │ CI │ ± │ n │;  HTML: value (CI ...; notebook ± margin: range), n = N
TERMINAL = re.compile(r"│\s+(\d+\.\d) │[^│]+│\s+(\d+\.\d) │\s+(\d+(?:\.\d)?)\*? │")
SHOWN = re.compile(r"(\d+\.\d) \(CI [^;]*; notebook ± (\d+\.\d): [^)]*\), n = (\d+(?:\.\d)?)")
SHOWN_MD = re.compile(r"(\d+\.\d)±(\d+\.\d), n = (\d+(?:\.\d)?)")


def _check(triples: list[tuple[str, str, str]]) -> list[float]:
    for value, margin, n in triples:
        p, shown_n = float(value) / 100, float(n)
        expected = 100 * Z95 * math.sqrt(max(p * (1 - p), 0.0) / shown_n)
        # the value and n are shown rounded to 0.1: allow what that rounding can move the margin
        assert float(margin) == pytest.approx(expected, abs=0.15 + expected * 0.02), (value, margin, n)
    return [float(n) for _, _, n in triples]


@pytest.mark.parametrize("judged", [True, False])
def test_each_displayed_margin_follows_from_its_displayed_n(tmp_path: Path, judged: bool):
    summary = summarise_eclektic(_items(judged), resamples=200)
    console = Console(record=True, width=250)
    print_eclektic_summary(summary, None, console)
    terminal = console.export_text()
    ns = _check(TERMINAL.findall(terminal))
    assert len(ns) >= 4
    if judged:
        assert 8.0 in ns  # the judge's transfer: q0's 8 pairs, not the 24 considered
    md = ablation_table(summary, tmp_path / "t.md").read_text()
    assert len(_check(SHOWN_MD.findall(md))) >= 2
    (section, _) = eclektic_sections(summary, _items(judged))
    html_cells = " ".join(c for table in section.tables for row in table.rows for c in row)
    assert len(_check(SHOWN.findall(html_cells))) >= 4


def test_transfer_n_is_the_effective_n():
    setting = summarise_eclektic(_items(True), resamples=200).settings[0]
    assert setting.judge.transfer.n == 24 and setting.judge.transfer.margin_n == 8
    assert setting.judge.overall.margin_n == 24


def test_the_demo_says_what_chance_is_for_each_probe():
    from babelprobe.cli import DEMO_SCOPE

    for probe, chance in (("CKA", "about 50%"), ("OWL direct probing and name cloze", "about 0%"),
                          ("prefix probing's chrF++", "not 0 by chance"), ("ECLeKTiC", "about 0%"),
                          ("memorization", "control"), ("ρ_G", "no chance level")):
        assert probe in DEMO_SCOPE and chance in DEMO_SCOPE.split(probe, 1)[1][:120], probe


def test_compare_tables_show_n_flag_small_n_and_say_what_was_left_out():
    """compare: small n marked with a footnote, OWL's deltas with each side's n, the CKA title naming
    both modes, and a judge metric present on one side only said, not dropped silently."""
    from babelprobe.families.cka.analysis import CKASummary
    from babelprobe.families.eclektic.family import family as eclektic
    from babelprobe.families.cka.family import family as cka
    from babelprobe.families.owl.analysis import compare_owl
    from babelprobe.families.owl.report import print_deltas

    judged = _items(True)
    console = Console(record=True, width=120)
    eclektic.compare_runs(None, None, judged, _items(False), console)
    shown = " ".join(console.export_text().split())
    assert "judge overall: not compared, only run A was judged" in shown
    assert "* small n: fewer than 30 matched items" in shown

    facts = pd.DataFrame({"fact_id": ["f1", "f2"], "language": ["en", "en"], "known": [True, False], "error": [None, None]})
    console = Console(record=True, width=120)
    modes = [CKASummary(mode=m, n_items=2, n_errors=0, languages=[], multilingual_accuracy=0.5,
                        multilingual_half_width=0.1, script_test=None, relations=[]) for m in ("first-token", "full")]
    cka.compare_runs(*modes, facts, facts, console)
    assert "A: first-token mode, B: full mode" in " ".join(console.export_text().split())

    from test_terminal_width import _owl

    summary = _owl()[1]
    console = Console(record=True, width=120)
    print_deltas(compare_owl(summary, summary), console)
    text = console.export_text()
    assert re.search(r"│ en\s*│\s*12\* │\s*100\.0 │", text) and "n A" in text and "* small n" in text, text
