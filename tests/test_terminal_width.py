"""Every family's terminal tables at 80 and 120 columns (issue 30): no line wider than the
terminal, nothing cut with an ellipsis, and every number printed at 250 columns printed whole."""

from __future__ import annotations

import re
from collections.abc import Callable

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from babelprobe.cli import app

NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _cka():
    from babelprobe.families.cka.analysis import summarise_cka
    from babelprobe.families.cka.report import print_cka_summary

    items = pd.DataFrame({"fact_id": [f"f{i}" for i in range(40)], "language": ["en", "ru"] * 20,
                          "relation": ["P36", "P1412"] * 20, "script": ["Latn", "Cyrl"] * 20,
                          "known": [True, False, True, True] * 10, "mode": ["first-token"] * 40, "error": [None] * 40})
    return print_cka_summary, summarise_cka(items, 100)


def _owl():
    from babelprobe.families.owl.analysis import summarise_owl
    from babelprobe.families.owl.report import print_owl_summary

    n = 36
    items = pd.DataFrame({"task": ["direct"] * n, "perturbation": ["none"] * n, "passage_tokens": [10, 60] * (n // 2),
                          "language": ["en", "tr", "es"] * (n // 3),
                          "language_group": ["original", "unseen", "official"] * (n // 3), "book_id": ["b1"] * n,
                          "correct": [True, False, False] * (n // 3), "title": [True, False, False] * (n // 3),
                          "name": [True, False, False] * (n // 3), "output": ["Dune"] * n,
                          "author_correct": [True, False, False] * (n // 3), "error": [None] * n})
    return print_owl_summary, summarise_owl(items, 100)


def _eclektic():
    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.report import print_eclektic_summary

    langs = ("en", "de", "fr", "ja", "ru", "hi", "he", "id", "zh")
    items = pd.DataFrame([{"q_id": f"q{q}", "source_language": "en", "target_language": lang,
                           "is_source": lang == "en", "setting": setting, "script": None,
                           "recall": 1.0 if (q + i) % 3 else 0.3, "recall_compat": 1.0,
                           "judge_correct": bool((q + i) % 2), "error": None}
                          for setting in ("closed-book", "source-language-name") for q in range(4)
                          for i, lang in enumerate(langs)])
    return print_eclektic_summary, summarise_eclektic(items, judges=["bundled:smollm2-135m-instruct"], resamples=100)


def _memorization():
    from babelprobe.families.memorization.analysis import summarise_memorization
    from babelprobe.families.memorization.report import print_memorization_summary

    rows = []
    for n, shift in ((35, 0.0), (85, 1.0)):
        for lang, base in (("de", -30.0), ("en", -20.0), ("zh-Hant", -110.5)):
            for i in range(3):
                rows.append(dict(sample_id=f"{lang}{i}", language=lang, prefix_tokens=n, exact_ratio=n / (n + 15),
                                 status="scored", mode="suffix", exact_match=i == 0 and lang == "en",
                                 control_exact_match=False, pm=base + shift + i, control_pm=-100.0,
                                 pm_mean=-1.234, control_pm_mean=-2.5, bleu=0.2857, control_bleu=0.03, rouge_l=0.31,
                                 control_rouge_l=0.05, min_k=-12.5, control_min_k=-13.25, zlib_ratio=0.012345,
                                 control_zlib_ratio=0.0134))
    return print_memorization_summary, summarise_memorization(pd.DataFrame(rows), n_resamples=100)


def _compare():
    from babelprobe.analysis.compare import paired_cells
    from babelprobe.report.compare import print_paired

    a = pd.DataFrame({"fact_id": [f"f{i}" for i in range(40)], "language": ["en", "ru"] * 20,
                      "known": [1.0, 0.0, 1.0, 1.0] * 10, "error": [None] * 40})
    b = a.assign(known=[1.0, 1.0, 0.0, 1.0] * 10)
    cells = paired_cells(a, b, ["fact_id", "language"], "known", "accuracy %", group_by="language", scale=100.0,
                         n_resamples=200)
    return (lambda summary, manifest, console: print_paired(summary, console, "CKA accuracy, B - A")), cells


FAMILIES: dict[str, Callable] = {"cka": _cka, "owl": _owl, "eclektic": _eclektic, "memorization": _memorization,
                                 "compare": _compare}


def _render(print_summary, summary, width: int) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    print_summary(summary, None, console)
    return console.export_text()


def assert_fits(wide: str, narrow: str, width: int) -> None:
    too_long = [line for line in narrow.splitlines() if len(line) > width]
    assert not too_long, too_long[:3]
    assert "…" not in narrow
    missing = set(NUMBER.findall(wide)) - set(NUMBER.findall(narrow))
    assert not missing, f"numbers cut or lost at {width} columns: {sorted(missing)[:10]}"


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_terminal_tables_fit_and_print_every_number_whole(family, width):
    print_summary, summary = FAMILIES[family]()
    assert_fits(_render(print_summary, summary, 250), _render(print_summary, summary, width), width)


@pytest.mark.parametrize("width", [80, 120])
def test_theta_sweep_and_models_fit(tmp_path, width):
    from test_graph_cli import TOKENS_FIXTURE, write_rows, write_sim

    sim = write_sim(tmp_path / "sim.csv")
    mem = write_rows(tmp_path / "mem.csv", ["language", "EM", "PM", "ROUGE-L", "BLEU"],
                     [[lang, 0.1 * k, -110.25 - k, 0.3, 0.2] for k, lang in enumerate(["en", "de", "ru", "uk", "fr"])])

    def sweep(columns: int) -> str:
        result = CliRunner().invoke(app, ["graph", "sweep", "--similarity", str(sim), "--memorization", str(mem),
                                          "--tokens", str(TOKENS_FIXTURE), "--thetas", "0.0:0.9:0.3",
                                          "--out", str(tmp_path / f"s{columns}"), "--no-figures"],
                                    env={"COLUMNS": str(columns)})
        assert result.exit_code == 0, result.output
        return result.output.replace(str(tmp_path / f"s{columns}"), "OUT")

    assert_fits(sweep(250), sweep(width), width)
    models = CliRunner().invoke(app, ["models"], env={"COLUMNS": str(width)})
    assert models.exit_code == 0
    assert "…" not in models.output and all(len(line) <= width for line in models.output.splitlines())
    assert 'pip install "babelprobe[vllm]"' in models.output.replace("\n", " ")
