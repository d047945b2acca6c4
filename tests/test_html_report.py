"""HTML run reports and the language profile (issue 8): built from stored runs only, every
untrusted string escaped (proved in a real headless Chromium), figures on fixed 0-100 axes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from babelprobe import store
from babelprobe.families import FAMILIES, family_names, get_family
from babelprobe.families.owl.analysis import Cell
from babelprobe.cli import app
from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.execute_run import run
from babelprobe.stored_runs import read_run
from babelprobe.families.cka.probe import CKARecord
from babelprobe.families.eclektic.probe import EclekticRecord
from babelprobe.families.memorization.probe import MemorizationRecord
from babelprobe.families.owl.probe import OwlRecord
from babelprobe.families.similarity.probe import SentenceEmbedding
from babelprobe.report.figures import grouped_bars_figure, heatmap_figure
from babelprobe.report.html import profile_report, run_report, write_demo_reports
from babelprobe.families.cka.relations import relation_label

MODEL = "bundled:gemma-3-270m"
# Each payload, if it ever ran, would retitle the page and add a <pwned> element.
RUN_JS = "document.title='PWNED';document.body.appendChild(document.createElement('pwned'))"
PAYLOAD = (f"<script>{RUN_JS}</script><img src=x onerror=\"{RUN_JS}\">"
           f"<a href=\"javascript:{RUN_JS}\">click</a></textarea></script><svg onload=\"{RUN_JS}\"></svg>")
POISON = {  # dataset fields and model outputs of each family's items.parquet
    "cka": (CKARecord, ["subject", "stems", "true", "false", "relation"]),
    "owl": (OwlRecord, ["prompt", "output", "name", "gold_names", "gold_author", "book_id"]),
    "eclektic": (EclekticRecord, ["question", "answer", "prompt", "prediction", "setting"]),
    "memorization": (MemorizationRecord, ["sample_id", "origin", "prefix_text", "suffix_text", "generated_text"]),
    "similarity": (SentenceEmbedding, ["text"]),
}


def test_every_builtin_family_has_its_untrusted_fields_listed():
    assert set(POISON) == set(FAMILIES)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium binary (Debian: apt-get install "
                                   "chromium); the escaping is then only checked on the HTML text")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, gemma, smollm2) -> dict[str, Path]:
    """One real tiny run per family on the bundled model (a few seconds each)."""
    root = tmp_path_factory.mktemp("runs")
    configs = {name: get_family(name).smoke_config(root / name).model_copy(update={"device": "cpu"})
               for name in family_names()}
    for config in configs.values():
        run(config, backends={MODEL: gemma, "bundled:smollm2-135m-instruct": smollm2})
    return {name: config.out for name, config in configs.items()}


def poisoned(run_dir: Path, dest: Path) -> Path:
    """A copy of a real run whose text fields all carry the payload, rewritten through the
    family's record model and store.write_items (as the pipeline writes them)."""
    shutil.copytree(run_dir, dest)
    family = store.read_manifest(dest).probe
    record, fields = POISON[family]
    rows = json.loads(store.read_items(dest).to_json(orient="records"))
    for row in rows:
        for name in fields:
            value = row[name]
            row[name] = [PAYLOAD + str(v) for v in value] if isinstance(value, list) else PAYLOAD + str(value or "")
    store.write_items(dest, [record(**row) for row in rows])
    return dest


def chromium(*args: str) -> str:
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000",
                           *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def assert_inert(html_file: Path, title: str) -> str:
    dom = chromium("--dump-dom", html_file.as_uri())
    assert f"<title>{title}</title>" in dom  # nothing retitled the page
    assert "<pwned" not in dom and "PWNED</title>" not in dom
    for element in ("<script>document", "<img src=\"x\"", "<img src=x", "<svg onload", "<a href=\"javascript:"):
        assert element not in dom
    assert "&lt;script&gt;document.title='PWNED'" in dom  # the payload is there, shown as text
    assert "&lt;a href=\"javascript:" in dom
    return dom


def non_blank_screenshot(html_file: Path, png: Path) -> float:
    from PIL import Image

    chromium("--window-size=1200,1400", f"--screenshot={png}", html_file.as_uri())
    pixels = np.asarray(Image.open(png).convert("L"), dtype=float)
    return float(pixels.std())


@pytest.mark.slow
@needs_browser
@pytest.mark.parametrize("family", list(FAMILIES))
def test_run_report_escapes_untrusted_text_in_chromium(runs, tmp_path, family):
    run_dir = poisoned(runs[family], tmp_path / family)
    page = run_report(run_dir)
    assert page == run_dir / "report.html"
    raw = page.read_text()
    assert "http://" not in raw and "https://" not in raw  # nothing loads from the network
    dom = assert_inert(page, f"babelprobe report: {family} on {MODEL}")
    assert dom.count("data:image/svg+xml;base64,") >= 1  # figures inline
    assert "items" in dom and ("verdict" in dom or family == "similarity")  # hidden states have no verdict


@pytest.mark.slow
@needs_browser
def test_profile_escapes_and_screenshots_are_non_blank(runs, tmp_path):
    profile = profile_report([poisoned(runs[f], tmp_path / f) for f in runs], tmp_path / "profile.html")
    dom = chromium("--dump-dom", profile.as_uri())
    assert f"<title>babelprobe language profile: {MODEL}</title>" in dom and "<pwned" not in dom
    clean_report = run_report(runs["owl"], tmp_path / "owl.html")
    for page in (clean_report, profile):
        assert non_blank_screenshot(page, tmp_path / f"{page.stem}.png") > 20  # text, tables and figures


@pytest.mark.slow
def test_profile_from_stored_runs_only(runs, tmp_path):
    page = profile_report(list(runs.values()), tmp_path / "profile.html").read_text()
    cka = read_run(runs["cka"]).summary
    for lang in cka.languages:
        assert f'data-sort="{100 * lang.accuracy:.6f}"' in page
    assert "CKA accuracy (first-token)" in page and "OWL name-cloze (masked)" in page
    eclektic = read_run(runs["eclektic"]).summary  # the smoke run has a judge: its verdicts are the metric
    metric = "judge" if eclektic.settings[0].judge else "string"
    assert f"ECLeKTiC overall as target (closed-book, {metric})" in page  # transfer: undefined when no source answer is right
    assert "Indo-European (Balto-Slavic)" in page and "Cyrillic" in page  # family (lang2vec) and script
    assert page.count("<h2>") == 1  # one model: one table


@pytest.fixture(scope="module")
def memorization_run(tmp_path_factory, gemma) -> Path:
    """A real tiny memorization run at two prompt lengths (a few seconds)."""
    out = tmp_path_factory.mktemp("memorization") / "memorization"
    # 4000 tokens: longer than every text, scores nothing, so the profile's columns are at 20
    run(MemorizationConfig(model=MODEL, langs=["en", "zh"], limit=2, prefix_tokens=[10, 20, 4000], suffix_tokens=5,
                           bootstrap_resamples=200, out=out, device="cpu", cache=None), backends={MODEL: gemma})
    return out


@pytest.mark.slow
def test_profile_memorization_columns_from_stored_runs(runs, memorization_run, tmp_path, monkeypatch):
    """EM and RM (BLEU, ROUGE-L) in percent and PM (log Pr) per language at the longest prompt
    length, with CIs, from a copy of the stored run; PM is in the table but not on the 0-100 heatmap."""
    import babelprobe.report.html as html

    stored = tmp_path / "memorization"
    shutil.copytree(memorization_run, stored)
    heatmap_columns = []
    monkeypatch.setattr(html, "heatmap_figure", lambda *a, **k: heatmap_columns.append(k["columns"])
                        or heatmap_figure(*a, **k))
    page = profile_report([runs["cka"], stored], tmp_path / "profile.html").read_text()
    items = pd.read_parquet(stored / "items.parquet")
    scored = items[(items["status"] == "scored") & (items["prefix_tokens"] == 20)]
    assert set(scored["language"]) == {"en", "zh"}
    for _, group in scored.groupby("language"):
        for column, scale in (("exact_match", 100), ("bleu", 100), ("rouge_l", 100), ("pm", 1)):
            assert f'data-sort="{scale * group[column].astype(float).mean():.6f}"' in page
        assert f"n={len(group)} <span class=\"small-n\"" in page  # 2 samples: flagged (issue 18)
    names = ["memorization EM % (20-token prompt)", "memorization RM BLEU (20-token prompt)",
             "memorization RM ROUGE-L (20-token prompt)", "memorization PM (log Pr) (20-token prompt)"]
    for name in names:
        assert f'<th class="sortable" data-kind="number">{name}</th>' in page
    assert "10-token prompt" not in page and "4000-token" not in page and "CKA accuracy (first-token)" in page
    (columns,) = heatmap_columns
    assert names[0] in columns and names[3] not in columns and "CKA accuracy (first-token)" in columns


@pytest.mark.slow
def test_cli_report_html_and_demo_reports(runs, tmp_path):
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(runs["cka"]), "--html", str(out)])
    assert result.exit_code == 0, result.output
    assert "P" in out.read_text() and str(out) in result.output
    result = CliRunner().invoke(app, ["report", str(runs["cka"]), str(out)])
    assert result.exit_code == 2 and "--html" in result.output
    demo_root = tmp_path / "demo"
    for name, run_dir in runs.items():
        shutil.copytree(run_dir, demo_root / name)
    paths = write_demo_reports(demo_root)
    assert [p.name for p in paths] == ["report.html"] * len(runs) + ["profile.html"]


@pytest.mark.slow
def test_demo_reports_read_each_run_once_and_write_the_same_pages(runs, tmp_path, monkeypatch):
    """write_demo_reports reads each run once for its page and the profile (issue 31): the pages
    are those run_report and profile_report write reading each run themselves, byte for byte
    (SVG ids and dates fixed, the only parts that differ between two renders)."""
    import matplotlib

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    monkeypatch.setitem(matplotlib.rcParams, "svg.hashsalt", "fixed")
    from babelprobe.report import html

    demo_root = tmp_path / "demo"
    for name, run_dir in runs.items():
        shutil.copytree(run_dir, demo_root / name)
    reads = []
    monkeypatch.setattr(html, "read_run", lambda run_dir: reads.append(run_dir) or read_run(run_dir))
    paths = write_demo_reports(demo_root)
    assert sorted(reads) == sorted(demo_root / name for name in runs)  # each run read once
    run_dirs = sorted(demo_root / name for name in runs)
    plain = [run_report(d, tmp_path / f"{d.name}.html") for d in run_dirs]
    plain.append(profile_report(run_dirs, tmp_path / "profile.html"))
    assert len(paths) == len(plain) == len(runs) + 1
    for got, expected in zip(paths, plain):
        assert got.read_text() == expected.read_text(), got


def test_accuracy_axes_span_0_to_100_even_when_all_zero():
    zero = [Cell(group=g, n=5, errors=0, value=0.0, ci_low=0.0, ci_high=0.0) for g in ("original", "unseen")]
    fig = grouped_bars_figure({"direct/none": zero}, ["original", "unseen"], "t", "accuracy %", 100.0)
    assert fig.axes[0].get_ylim() == (0.0, 100.0)


def test_heatmap_cells_show_small_n():
    fig = heatmap_figure({"b1": {"en": 0.5, "de": 1.0}}, "t", square=False, counts={"b1": {"en": 3, "de": 40}})
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["100", "50\nn=3"]  # de (n=40) without n; columns sorted: de, en


def test_relations_carry_wikidata_labels():
    assert relation_label("P36") == "P36 capital"
    assert relation_label("P1412") == "P1412 languages spoken, written or signed"
    assert relation_label("P99999") == "P99999"


# --- issue 18: figures people can read, labels as text, n shown, tables exported -------------------

def _relabelled(run_dir: Path, dest: Path, **fields: str) -> Path:
    """A copy of a real run whose item fields are set to the given values (through the record model)."""
    shutil.copytree(run_dir, dest)
    record, _ = POISON[store.read_manifest(dest).probe]
    rows = json.loads(store.read_items(dest).to_json(orient="records"))
    store.write_items(dest, [record(**{**row, **fields}) for row in rows])
    return dest


@pytest.mark.slow
@needs_browser
def test_owl_math_labels_build_figures_and_html_report(runs, tmp_path):
    """`$...$` in a book id or a language label is text: the figures (PNG, SVG, PDF) and `report --html`
    build, and the page shows the labels literally (matplotlib's mathtext crashed on `$\\x$`)."""
    from babelprobe.families.owl.report import owl_figures

    run_dir = _relabelled(runs["owl"], tmp_path / "owl", book_id="$\\x$ and $x$", language="$x$")
    paths = owl_figures(read_run(run_dir).summary, run_dir)
    assert paths and all(p.with_suffix(s).is_file() for p in paths for s in (".png", ".svg", ".pdf"))
    result = CliRunner().invoke(app, ["report", str(run_dir), "--html"])
    assert result.exit_code == 0, result.output
    dom = chromium("--dump-dom", (run_dir / "report.html").as_uri())
    assert "$\\x$ and $x$" in dom and dom.count("data:image/svg+xml;base64,") >= 2


@pytest.mark.slow
@needs_browser
def test_profile_table_scrolls_in_a_frame_with_sticky_headers_and_flags_small_n(runs, tmp_path):
    profile = profile_report(list(runs.values()), tmp_path / "profile.html")
    dom = chromium("--dump-dom", profile.as_uri())
    assert '<div class="table-frame">\n<table class="profile">' in dom
    assert "overflow: auto" in dom and "position: sticky" in dom
    assert "(small n)</span>" in dom  # the runs have a few items per language


@pytest.mark.slow
@needs_browser
def test_run_report_tables_show_n_and_eclektic_ci(runs, tmp_path):
    page = run_report(runs["eclektic"], tmp_path / "e.html")
    dom = chromium("--dump-dom", page.as_uri())
    assert "(small n)" in dom and "CI " in dom and "notebook ±" in dom
    assert "nan±" not in dom and "nan ±" not in dom and "nan (" not in dom


@pytest.mark.slow
@pytest.mark.parametrize("family", ["cka", "eclektic"])
def test_report_format_exports_summary_tables(runs, tmp_path, family):
    from babelprobe.report.export import summary_tables

    tables = summary_tables(runs[family])
    for fmt in ("csv", "latex", "md"):
        out = tmp_path / fmt
        result = CliRunner().invoke(app, ["report", str(runs[family]), "--format", fmt, "--out", str(out)])
        assert result.exit_code == 0, result.output
        written = sorted(p for p in out.rglob("*") if p.is_file())
        assert written and all(p.name in result.output for p in written)
        if fmt == "csv":
            assert len(written) == len(tables)
            first = pd.read_csv(written[0], dtype=str, keep_default_na=False)
            assert list(first.columns[:1]) == tables[0].columns[:1] and len(first) == len(tables[0].rows)
        elif fmt == "latex":
            text = written[0].read_text()
            assert text.count("\\begin{table}") == len(tables) and "\\caption{" in text
        else:
            text = written[0].read_text()
            assert text.count("### ") == len(tables) and tables[0].rows[0][0] in text
    result = CliRunner().invoke(app, ["report", str(runs[family]), "--format", "xlsx"])
    assert result.exit_code == 2 and "csv, latex, md" in result.output
    assert not (runs[family] / "tables").exists()  # nothing written for a bad format


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_familys_tables_tex_compiles_with_poisoned_text(runs, tmp_path, family):
    """Every family's `report --format latex` of a run whose text fields carry markup, compiled by a
    real TeX engine where one is installed (issue 30), and checked structurally always."""
    from test_exports import TEX, compile_tex, structurally_valid

    run_dir = poisoned(runs[family], tmp_path / family)
    result = CliRunner().invoke(app, ["report", str(run_dir), "--format", "latex", "--out", str(tmp_path / "tex")])
    assert result.exit_code == 0, result.output
    tables_tex = tmp_path / "tex" / "tables.tex"
    assert structurally_valid(tables_tex.read_text(encoding="utf-8")) == []
    if TEX is None:
        pytest.skip("no lualatex/xelatex: checked structurally only")
    done = compile_tex(tables_tex)
    assert done.returncode == 0, done.stdout[-3000:]
