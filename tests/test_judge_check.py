"""A weak judge is flagged (issue 18): with a judge, ECLeKTiC reports the judge's agreement with
the string metric (Cohen's kappa, raw agreement) and its verdicts on known-wrong controls (the
question repeated, an empty answer, another question's answer), in summary.json, the terminal
and the HTML; a low kappa or accepted controls give a warning."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from rich.console import Console

from babelprobe.families.eclektic.analysis import CONTROL_ACCEPT_LIMIT, JUDGE_KAPPA_LOW, judge_check
from babelprobe.families.eclektic.config import DEMO_ECLEKTIC, EclekticConfig
from babelprobe.families.eclektic.data import load_eclektic, ColumnMap
from babelprobe.families.eclektic.metrics import cohen_kappa
from babelprobe.families.eclektic.probe import CONTROL_EMPTY, CONTROL_OTHER, CONTROL_QUESTION, judge_controls
from babelprobe.families.eclektic.report import print_eclektic_summary

JUDGE = "bundled:smollm2-135m-instruct"


def test_cohen_kappa_reference_values():
    # Wikipedia's worked example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> p_o 0.7, p_e 0.5, kappa 0.4
    a = [True] * 25 + [False] * 25
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, a) == pytest.approx(1.0)
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    assert cohen_kappa([True, True], [True, True]) is None and cohen_kappa([], []) is None


def test_controls_come_from_the_data():
    rows = load_eclektic(DEMO_ECLEKTIC, ColumnMap())
    german = [r for r in rows if r.target_language == "de"]
    row = german[0]
    controls = dict(judge_controls(row, german))
    assert controls[CONTROL_QUESTION] == row.question and controls[CONTROL_EMPTY] == ""
    other = controls[CONTROL_OTHER]
    assert other != row.answer and other in {r.answer for r in german}
    assert judge_controls(row, german) == judge_controls(row, list(reversed(german)))  # deterministic


def _items(judge: list[bool], recall: list[float], accepted: list[list[bool]]) -> pd.DataFrame:
    return pd.DataFrame([{
        "q_id": f"q{i}", "target_language": "de", "source_language": "en", "is_source": False, "setting": "closed-book",
        "recall": r, "judge_correct": j, "error": None,
        "control_names": [CONTROL_QUESTION, CONTROL_EMPTY], "control_accepted": acc,
    } for i, (j, r, acc) in enumerate(zip(judge, recall, accepted))])


def test_agreement_and_controls_from_items():
    good = judge_check(_items([True, False, True, False], [1.0, 0.0, 0.5, 0.2], [[False, False]] * 4))
    assert (good.rows, good.agreement, good.kappa) == (4, 1.0, 1.0) and good.warnings == []
    assert [(c.name, c.judged, c.accepted) for c in good.controls] == [(CONTROL_QUESTION, 4, 0), (CONTROL_EMPTY, 4, 0)]
    weak = judge_check(_items([True, True, True, False], [0.0, 0.0, 1.0, 1.0], [[True, False]] * 4))
    assert weak.kappa is not None and weak.kappa < JUDGE_KAPPA_LOW and weak.agreement == 0.25
    assert any("Cohen's kappa" in w for w in weak.warnings)
    assert any(f"{CONTROL_QUESTION} accepted on 4 of 4" in w for w in weak.warnings)
    assert 1 / 4 > CONTROL_ACCEPT_LIMIT  # one accepted control in four rows is already a warning


@pytest.mark.slow
def test_bundled_judge_is_flagged(tmp_path, gemma, smollm2):
    """The bundled 135M judge on the 2 demo questions asked in ja and zh (4 answers, 12
    controls): it says YES to the question repeated as the answer, and the run says so in
    summary.json, the terminal and the HTML."""
    from babelprobe.execute_run import run
    from babelprobe.report.html import run_report

    config = EclekticConfig(langs=["ja", "zh"], limit=2, max_tokens=8, judges=[JUDGE], settings=["closed-book"],
                            figures=False, bootstrap_resamples=200, out=tmp_path / "run", cache=None)
    out = run(config, backends={config.model: gemma, JUDGE: smollm2}).out
    summary = json.loads((out / "summary.json").read_text())
    check = summary["judge_check"]
    assert check["rows"] == 4 and {c["name"] for c in check["controls"]} == {CONTROL_QUESTION, CONTROL_EMPTY, CONTROL_OTHER}
    repeated = next(c for c in check["controls"] if c["name"] == CONTROL_QUESTION)
    assert repeated["judged"] == 4 and repeated["accepted"] > 0, check
    assert any("accepts known-wrong answers: question repeated" in w for w in check["warnings"])
    console = Console(record=True, width=200)
    from babelprobe.stored_runs import read_run

    stored = read_run(out)
    print_eclektic_summary(stored.summary, stored.manifest, console)
    terminal = console.export_text()
    assert "Cohen's kappa" in terminal and "warning: the judge accepts known-wrong answers" in terminal
    html = run_report(out).read_text()
    assert "judge on known-wrong controls" in html and "warning: the judge accepts known-wrong answers" in html
