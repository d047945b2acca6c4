"""Issue 18, figures and tables people can read: dataset labels are literal text in every figure
(no mathtext), cell text chosen by luminance, missing cells hatched, one colour direction, zero
bars drawn and said, a clustered similarity heatmap with values, integer layer ticks; n beside
every statistic with one small-n threshold; stand-in token counts labelled; ECLeKTiC's CI and
clipped margins; figures as PNG, SVG and PDF. Fast: no model (the page tests are in
test_html_report.py, on its real runs)."""

from __future__ import annotations

import io
import math
import re
import shutil

import matplotlib
import matplotlib.pyplot
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle
from rich.console import Console
from typer.testing import CliRunner

from babelprobe.analysis.bootstrap import Cell
from babelprobe.cli import app
from babelprobe.report import figures as figs

@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib.pyplot.close("all")


MATH = ["$x$", "$\\x$", "a$b", "$\\frac{1}{0}$"]  # '$\x$' crashed mathtext; '$x$' was set as an italic x


def _owl_frame(books: list[str], languages: list[str], correct: bool = True) -> pd.DataFrame:
    rows = [{"task": "direct", "perturbation": "none", "passage_tokens": 10 + 40 * k, "language": lang,
             "language_group": "original" if k == 0 else "unseen", "book_id": book, "correct": correct,
             "title": correct, "name": correct, "output": "Dune", "author_correct": correct, "error": None}
            for book in books for k, lang in enumerate(languages)]
    return pd.DataFrame(rows)


def _svg_text(fig) -> str:
    """The figure as SVG with its text kept as text (not glyph paths), to read what is drawn."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg")
    return buffer.getvalue()


# --- 1. labels are literal text --------------------------------------------------------------------

def test_owl_figures_draw_math_like_labels_literally(tmp_path):
    from babelprobe.families.owl.analysis import summarise_owl
    from babelprobe.families.owl.report import owl_figure_list, owl_figures

    summary = summarise_owl(_owl_frame(MATH, ["$x$", "$\\x$"]), 100)
    texts = "".join(_svg_text(fig) for _, fig in owl_figure_list(summary))
    for label in ("$x$", "$\\x$", "a$b", "$\\frac{1}{0}$"):
        assert label in texts
    paths = owl_figures(summary, tmp_path)  # wrote PNG, SVG and PDF without a mathtext error
    assert paths and all(p.with_suffix(s).stat().st_size > 0 for p in paths for s in (".png", ".svg", ".pdf"))


def test_every_family_figure_module_draws_labels_literally():
    from babelprobe.families.similarity.graph_figures import similarity_heatmap_figure, typology_by_layer_figure
    from babelprobe.families.similarity.signals import SimilarityMatrix

    sim = SimilarityMatrix(("$x$", "$\\x$", "de"), np.array([[1, .5, .2], [.5, 1, .3], [.2, .3, 1]]))
    assert "$\\x$" in _svg_text(similarity_heatmap_figure(sim, "layer $\\x$"))
    rows = [{"layer": 0, "features": "$\\x$", "pearson_r": 0.1}, {"layer": 1, "features": "$\\x$", "pearson_r": 0.2}]
    assert "$\\x$" in _svg_text(typology_by_layer_figure(rows, "t"))
    fig = figs.grouped_bars_figure({"$\\x$": [Cell(group="$x$", n=5, errors=0, value=.5, ci_low=.4, ci_high=.6)]},
                                   ["$x$"], "$\\x$", "%", 100.0)
    assert "$\\x$" in _svg_text(fig)


# --- 2. readable figures ---------------------------------------------------------------------------

def test_heatmap_text_colour_follows_cell_luminance():
    fig = figs.heatmap_figure({"b": {"a": 0.0, "b": 0.5, "c": 1.0}}, "t", square=False)
    colours = [to_rgba(t.get_color()) for t in fig.axes[0].texts]
    white, black = to_rgba("white"), to_rgba("black")
    assert colours == [white, black, white]  # dark red 0, pale 50, dark blue 100
    assert figs.text_colour((0.4, 0.0, 0.05)) == "white" and figs.text_colour((1.0, 1.0, 0.9)) == "black"


def test_missing_cells_are_hatched_grey_not_the_colour_of_50():
    fig = figs.heatmap_figure({"r1": {"a": 0.5}, "r2": {"b": 0.5}}, "t", square=False)
    ax = fig.axes[0]
    hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
    assert len(hatched) == 2  # r1/b and r2/a
    middle = ax.images[0].cmap(ax.images[0].norm(50.0))
    assert all(not np.allclose(p.get_facecolor(), middle, atol=0.05) for p in hatched)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["no data"]
    assert [t.get_text() for t in ax.texts] == ["50", "50"]
    full = figs.heatmap_figure({"r1": {"a": 0.5}}, "t", square=False)
    assert full.axes[0].get_legend() is None and not full.axes[0].patches


def test_higher_is_blue_on_every_heatmap():
    from babelprobe.families.similarity.graph_figures import similarity_heatmap_figure
    from babelprobe.families.similarity.signals import SimilarityMatrix

    score = figs.heatmap_figure({"b": {"a": 0.9}}, "t", square=False).axes[0].images[0]
    sim = similarity_heatmap_figure(SimilarityMatrix(("en", "de"), np.array([[1, .5], [.5, 1]])), "t").axes[0].images[0]
    for image in (score, sim):
        low, high = image.cmap(0.0), image.cmap(1.0)
        assert high[2] > high[0] and low[0] > low[2]  # top of the scale blue, bottom red


def test_all_zero_bars_are_drawn_and_said():
    zero = [Cell(group=g, n=5, errors=0, value=0.0, ci_low=0.0, ci_high=0.0) for g in ("original", "unseen")]
    ax = figs.grouped_bars_figure({"direct/none": zero}, ["original", "unseen"], "t", "accuracy %", 100.0).axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert any("scored 0" in t for t in texts) and texts.count("0") == 2
    lines = [c for c in ax.collections if isinstance(c, matplotlib.collections.LineCollection)
             and c.get_linewidth()[0] >= 3]
    assert len(lines) == 2  # each zero bar a visible line on the axis
    some = [Cell(group="original", n=5, errors=0, value=0.4, ci_low=0.2, ci_high=0.6)] + zero[1:]
    ax = figs.grouped_bars_figure({"d": some}, ["original", "unseen"], "t", "%", 100.0).axes[0]
    assert not any("scored 0" in t.get_text() for t in ax.texts)


def test_eclektic_zero_scores_drawn_and_margins_clipped():
    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.report import score_bars_figure

    ecl = pd.DataFrame([{"q_id": f"q{i}", "source_language": "en", "target_language": lang, "is_source": lang == "en",
                         "setting": "closed-book", "script": None, "recall": 0.0, "recall_compat": 0.0, "error": None}
                        for i in range(3) for lang in ("en", "de")])
    ax = score_bars_figure(summarise_eclektic(ecl, resamples=100)).axes[0]
    assert any("scored 0" in t.get_text() for t in ax.texts)


def test_similarity_heatmap_is_clustered_with_values():
    from babelprobe.families.similarity.graph_figures import clustered_order, similarity_heatmap_figure
    from babelprobe.families.similarity.signals import SimilarityMatrix

    # two blocks, interleaved: {en, de, nl} and {ru, uk}
    langs = ("en", "ru", "de", "uk", "nl")
    block = {"en": 0, "de": 0, "nl": 0, "ru": 1, "uk": 1}
    values = np.array([[1.0 if a == b else (0.8 if block[a] == block[b] else -0.2) for b in langs] for a in langs])
    order = [langs[i] for i in clustered_order(values)]
    assert {block[x] for x in order[:3]} == {0} or {block[x] for x in order[:2]} == {1}
    ax = similarity_heatmap_figure(SimilarityMatrix(langs, values), "t").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == order
    assert len(ax.texts) == 25 and "-0.20" in [t.get_text() for t in ax.texts]


def test_layer_ticks_are_integers():
    from babelprobe.families.similarity.graph_figures import typology_by_layer_figure

    rows = [{"layer": layer, "features": "syntax", "pearson_r": 0.1 * layer} for layer in (0, 1, 2)]
    fig = typology_by_layer_figure(rows, "t")
    fig.canvas.draw()
    ticks = fig.axes[0].get_xticks()
    assert all(float(t).is_integer() for t in ticks)


def test_save_png_writes_svg_and_pdf_twins(tmp_path):
    path = figs.heatmap({"b": {"en": 0.5}}, "t", tmp_path / "h.png", square=False)
    assert path == tmp_path / "h.png"
    assert (tmp_path / "h.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "h.pdf").read_bytes().startswith(b"%PDF")


# --- 3. n beside every statistic, one small-n threshold ----------------------------------------------

def test_small_n_threshold_is_one_constant():
    from babelprobe.analysis.bootstrap import SMALL_N, small_n
    from babelprobe.report.sections import n_note, pct

    assert SMALL_N == 30 and figs.small_n is small_n  # the figures mark small n with the one threshold
    assert small_n(1) and small_n(29) and not small_n(30) and not small_n(None)
    assert pct(1.0, 1.0, 1.0, n=1) == "100.0 (100.0–100.0), n = 1 (small n)"
    assert pct(0.5, 0.4, 0.6, n=400) == "50.0 (40.0–60.0), n = 400"
    assert n_note(0) == ", n = 0 (small n)"


def _terminal() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=1000, soft_wrap=False)


def test_terminal_tables_show_n_and_flag_small_n():
    from babelprobe.families.cka.analysis import summarise_cka
    from babelprobe.families.cka.report import print_cka_summary
    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.report import print_eclektic_summary
    from babelprobe.families.owl.analysis import summarise_owl
    from babelprobe.families.owl.report import print_owl_summary

    cka = pd.DataFrame({"language": ["en"], "relation": ["P36"], "script": ["Latn"], "known": [True],
                        "mode": ["first-token"], "error": [None]})
    ecl = pd.DataFrame([{"q_id": "q0", "source_language": "en", "target_language": lang, "is_source": lang == "en",
                         "setting": "closed-book", "script": None, "recall": 1.0, "recall_compat": 1.0, "error": None}
                        for lang in ("en", "de")])
    for print_summary, summary in [(print_owl_summary, summarise_owl(_owl_frame(["b"], ["en"]), 100)),
                                   (print_cka_summary, summarise_cka(cka, 100)),
                                   (print_eclektic_summary, summarise_eclektic(ecl, resamples=100))]:
        console = _terminal()
        print_summary(summary, None, console)
        printed = console.file.getvalue()
        # n in its own column with a mark, the mark explained under the table (issue 30: 80 columns)
        assert re.search(r"\b1\*", printed) and "* small n: fewer than 30" in printed, print_summary.__name__


def test_html_tables_show_n_and_flag_small_n():
    from babelprobe.families.owl.analysis import summarise_owl
    from babelprobe.families.owl.report import owl_sections

    frame = _owl_frame(["b"], ["en"])
    frame["prompt"], frame["reference"], frame["gold_titles"], frame["gold_names"] = "p", "", [["Dune"]], [["x"]]
    sections = owl_sections(summarise_owl(frame, 100), frame)
    cells = [c for s in sections for t in s.tables for row in t.rows for c in row]
    assert "100.0 (100.0–100.0), n = 1 (small n)" in cells


def test_sweep_labels_stand_in_tokens(tmp_path, monkeypatch):
    """The demo's token counts are speaker populations: the sweep figure and table say so."""
    import babelprobe.families.similarity.graph_figures as gf
    from test_graph_cli import LANGS, SIM, TOKENS_FIXTURE, write_rows, write_sim

    sim = write_sim(tmp_path / "sim.csv", LANGS, SIM)
    mem = write_rows(tmp_path / "mem.csv", ["language", "EM"], [[lang, 0.1 * k] for k, lang in enumerate(LANGS)])
    drawn = []
    monkeypatch.setattr(gf, "_save", lambda fig, path: drawn.append(fig) or path)
    for name, stand_in in (("STAND-IN_speaker_population_as_tokens.csv", True), ("TOKENS.csv", False)):
        tokens = shutil.copy(TOKENS_FIXTURE, tmp_path / name)
        result = CliRunner().invoke(app, ["graph", "sweep", "--similarity", str(sim), "--memorization", str(mem),
                                          "--tokens", str(tokens), "--thetas", "0.3,0.5", "--out",
                                          str(tmp_path / f"out-{stand_in}")], terminal_width=200)
        assert result.exit_code == 0, result.output
        top = drawn[-1].axes[0]
        assert ("STAND-IN" in top.get_ylabel() and "STAND-IN" in top.get_title()) is stand_in
        assert ("STAND-IN" in result.output) is stand_in


# --- 4. ECLeKTiC: bootstrap CI beside the margin, clipped, never nan±nan -------------------------------

def _ecl(recall_source: float, recall_target: float, n: int = 3) -> pd.DataFrame:
    return pd.DataFrame([{"q_id": f"q{i}", "source_language": "en", "target_language": lang, "is_source": lang == "en",
                          "setting": "closed-book", "script": None,
                          "recall": recall_source if lang == "en" else recall_target,
                          "recall_compat": recall_source if lang == "en" else recall_target, "error": None}
                         for i in range(n) for lang in ("en", "de")])


def test_eclektic_html_shows_bootstrap_ci_and_clipped_margin():
    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.report import eclektic_sections

    items = _ecl(1.0, 0.0, n=4)
    items.loc[(items["q_id"] == "q0") & (items["target_language"] == "de"), ["recall", "recall_compat"]] = 1.0
    items[["prompt", "prediction", "answer"]] = "x"
    summary = summarise_eclektic(items, resamples=200)
    score = summary.settings[0].string.overall
    cell = eclektic_sections(summary, items)[0].tables[0].rows[0][5]
    assert f"CI {100 * score.ci_low:.1f}–{100 * score.ci_high:.1f}" in cell
    assert f"± {100 * score.margin:.1f}" in cell and "n = 4 (small n)" in cell
    assert score.value - score.margin < 0  # the notebook's margin runs below 0: shown clipped
    low, high = (float(x) for x in cell.split(": ")[1].split(")")[0].split("–"))
    assert 0.0 <= low <= high <= 100.0


def test_eclektic_table_md_never_prints_nan(tmp_path):
    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.report import ablation_table

    text = ablation_table(summarise_eclektic(_ecl(0.0, 0.0), resamples=100), tmp_path / "t.md").read_text()
    assert "nan" not in text.lower()
    assert "undefined (no question answered correctly in its source language)" in text
    assert "0.0±0.0, n = 3 (small n)" in text
    assert not math.isnan(summarise_eclektic(_ecl(0.0, 0.0), resamples=100).settings[0].string.overall.value)
