"""`babelprobe graph`: the file contract end to end (graph.json keys, sweep rows), run-directory
inputs, and input validation naming file, row and field."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.families.similarity.graph_commands import parse_thetas

cli = CliRunner()
TOKENS_FIXTURE = Path(__file__).parent / "data" / "shared_path_mc4_tokens.csv"
LANGS = ["en", "de", "ru", "uk", "fr"]
SIM = np.array([
    [1.00, 0.60, 0.20, 0.10, 0.55],
    [0.60, 1.00, 0.30, 0.25, 0.41],
    [0.20, 0.30, 1.00, 0.90, 0.05],
    [0.10, 0.25, 0.90, 1.00, 0.00],
    [0.55, 0.41, 0.05, 0.00, 1.00],
])


def write_sim(path: Path, languages=LANGS, matrix=SIM) -> Path:
    frame = pd.DataFrame(matrix, index=languages, columns=languages)
    frame.index.name = "language"
    frame.to_csv(path)
    return path


def write_rows(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def inputs(tmp_path):
    sim = write_sim(tmp_path / "sim.csv")
    mem = write_rows(tmp_path / "mem.csv", ["language", "EM", "PM"],
                     [["en", 0.10, -40.0], ["de", 0.20, -38.0], ["ru", 0.30, -35.0], ["uk", 0.30, -33.0],
                      ["fr", 0.15, -39.0]])
    return sim, mem, TOKENS_FIXTURE


def invoke(*args):
    return cli.invoke(app, ["graph", *map(str, args)])


def test_correlate_writes_the_contract(inputs, tmp_path):
    sim, mem, tokens = inputs
    out = tmp_path / "out"
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.41, "--out", out)
    assert result.exit_code == 0, result.output
    raw = (out / "graph.json").read_text()
    assert "NaN" not in raw and "Infinity" not in raw
    data = json.loads(raw)
    assert set(data) == {"theta", "tokens_scale", "n_languages", "small_n", "n_edges", "n_subgraphs",
                         "n_single_points", "metrics", "dropped", "tokens_label", "tokens_stand_in"}
    assert data["dropped"] == {} and data["tokens_stand_in"] is False
    assert set(data["metrics"]) == {"EM", "PM"}
    for metric in data["metrics"].values():
        assert set(metric) == {"pearson_r", "pearson_r_undefined_reason", "rho_g", "rho_g_undefined_reason",
                               "cross_r", "cross_r_undefined_reason", "cross_r_degenerate"}
    # θ = 0.41: edges en-de, en-fr, de-fr (0.41 is a tie), ru-uk -> 2 components, no single point
    assert data["theta"] == 0.41 and data["tokens_scale"] == "log"
    assert (data["n_edges"], data["n_subgraphs"], data["n_single_points"]) == (4, 2, 0)
    em = data["metrics"]["EM"]
    assert em["cross_r_degenerate"] is True and abs(em["cross_r"]) == pytest.approx(1.0)
    # the real token counts of the study (billions), natural log
    tokens_used = {"en": 2733, "de": 347, "ru": 713, "uk": 41, "fr": 318}
    m = np.array([0.10, 0.20, 0.30, 0.30, 0.15])
    t = np.log([tokens_used[lang] for lang in LANGS])
    assert em["pearson_r"] == pytest.approx(np.corrcoef(m, t)[0, 1])
    adjacency = ((SIM >= 0.41) & ~np.eye(5, dtype=bool)).astype(float)
    lap = np.diag(adjacency.sum(1)) - adjacency
    assert em["rho_g"] == pytest.approx(m @ lap @ t / math.sqrt((m @ lap @ m) * (t @ lap @ t)))
    assert (out / "graph.png").is_file() and (out / "nodes.csv").is_file()


def test_correlate_undefined_is_null_with_reason(inputs, tmp_path):
    sim, mem, tokens = inputs
    out = tmp_path / "out"
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.95, "--tokens-scale", "raw", "--out", out, "--no-figures")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "graph.json").read_text())
    assert data["tokens_scale"] == "raw" and data["n_edges"] == 0 and data["n_single_points"] == 5
    em = data["metrics"]["EM"]
    assert em["rho_g"] is None and "no edges" in em["rho_g_undefined_reason"]
    assert em["cross_r"] is not None and em["cross_r_degenerate"] is False  # 5 single points: r over 5 values


def test_sweep_writes_one_row_per_theta(inputs, tmp_path):
    sim, mem, tokens = inputs
    out = tmp_path / "sweep"
    result = invoke("sweep", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--thetas", "0.0:0.9:0.3", "--out", out)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert [float(r["theta"]) for r in rows] == [0.0, 0.3, 0.6, 0.9]
    # 0.3: de-ru (0.30, a tie) joins everything; 0.6: {en,de} (tie), {ru,uk}, {fr}; 0.9: {ru,uk} + 3 single
    assert [int(r["n_subgraphs"]) for r in rows] == [1, 1, 3, 4]
    assert [int(r["n_single_points"]) for r in rows] == [0, 0, 1, 3]
    assert rows[0]["EM:cross_r"] == "" and rows[0]["EM:cross_r_undefined_reason"].startswith("fewer than 2")
    assert (out / "sweep.png").is_file() and len(json.loads((out / "sweep.json").read_text())) == 4


def test_run_directories_stand_in_for_the_csvs(inputs, tmp_path):
    sim, mem, tokens = inputs
    sim_run = tmp_path / "sim_run"
    sim_run.mkdir()
    write_sim(sim_run / "similarity.csv")
    write_sim(sim_run / "similarity_layer3.csv", matrix=np.where(np.eye(5, dtype=bool), 1.0, 0.0))
    # a memorization run's per-language tables (MEM.csv layout; memorization.csv = longest prompt)
    mem_run = tmp_path / "mem_run"
    mem_run.mkdir()
    (mem_run / "memorization.csv").write_text(mem.read_text())
    write_rows(mem_run / "memorization_p35.csv", ["language", "EM"],
               [["en", 0.0], ["de", 0.1], ["ru", 0.2], ["uk", 0.2], ["fr", 0.3]])
    out = tmp_path / "out"
    result = invoke("correlate", "--similarity", sim_run, "--memorization", mem_run, "--tokens", tokens,
                    "--theta", 0.41, "--out", out, "--no-figures")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "graph.json").read_text())
    assert set(data["metrics"]) == {"EM", "PM"} and data["n_edges"] == 4
    result = invoke("correlate", "--similarity", sim_run, "--layer", 3, "--memorization", mem_run,
                    "--prefix-tokens", 35, "--tokens", tokens, "--theta", 0.41, "--out", out, "--no-figures")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "graph.json").read_text())
    assert set(data["metrics"]) == {"EM"} and data["n_edges"] == 0
    result = invoke("correlate", "--similarity", sim_run, "--memorization", mem_run, "--prefix-tokens", 85,
                    "--tokens", tokens, "--theta", 0.41, "--out", out)
    assert result.exit_code == 2 and "no memorization_p85.csv here" in result.output.replace("\n", "")


@pytest.mark.parametrize("content,where", [
    ("language,en,de\nen,1,0.5\n", "column 'de' has no row"),
    ("language,en,de\nen,1,0.5\nde,0.5,1\nde,0.5,1\n", "row 3, field 'language': duplicate language 'de'"),
    ("language,en,de\nen,1,abc\nde,0.5,1\n", "row 1, field 'de': not a number: 'abc'"),
    ("language,en,de\nen,1,0.5\nde,0.4,1\n", "row 1, field 'de': sim(en,de) = 0.5 but sim(de,en) = 0.4"),
    ("lang,en,de\nen,1,0.5\nde,0.5,1\n", "field 'lang': the first column must be 'language'"),
])
def test_similarity_validation_names_file_row_field(inputs, tmp_path, content, where):
    _, mem, tokens = inputs
    bad = tmp_path / "bad_sim.csv"
    bad.write_text(content)
    result = invoke("correlate", "--similarity", bad, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.4, "--out", tmp_path / "o")
    assert result.exit_code == 2
    assert f"{bad}, {where}" in result.output.replace("\n", "") or where in result.output.replace("\n", "")
    assert str(bad) in result.output.replace("\n", "")


def test_tokens_and_theta_validation(inputs, tmp_path):
    sim, mem, _ = inputs
    tokens = write_rows(tmp_path / "tok.csv", ["language", "tokens"], [["en", 10], ["de", 0], ["ru", 5]])
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.4, "--out", tmp_path / "o")
    assert result.exit_code == 2
    assert f"{tokens}, row 2, field 'tokens': 0 tokens: --tokens-scale log needs counts > 0" in result.output.replace("\n", "")
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.4, "--tokens-scale", "raw", "--out", tmp_path / "o", "--no-figures", "--allow-missing")
    assert result.exit_code == 0, result.output
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--theta", 1.2, "--out", tmp_path / "o")
    assert result.exit_code == 2 and "--theta must be in [-1, 1]" in result.output
    disjoint = write_rows(tmp_path / "tok2.csv", ["language", "tokens"], [["ja", 10], ["zh", 5]])
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", disjoint,
                    "--theta", 0.4, "--out", tmp_path / "o", "--allow-missing")
    assert result.exit_code == 2 and "at least 2 are needed" in result.output


def _flat(output: str) -> str:
    return " ".join(output.split())


@pytest.mark.parametrize("command", ["correlate", "sweep"])
def test_language_missing_from_an_input_is_exit_2_unless_allowed(inputs, tmp_path, command):
    """Issue 16 §6: ja measured for memorization but absent from the similarity, and fr absent from
    the memorization table, used to be dropped with a stdout line and exit 0."""
    sim, _, tokens = inputs
    mem = write_rows(tmp_path / "mem.csv", ["language", "EM"],
                     [["en", 0.1], ["de", 0.2], ["ru", 0.3], ["uk", 0.3], ["ja", 0.5]])
    theta = ["--theta", "0.41"] if command == "correlate" else ["--thetas", "0.3,0.41"]
    out = tmp_path / command
    result = invoke(command, "--similarity", sim, "--memorization", mem, "--tokens", tokens, *theta,
                    "--out", out, "--no-figures")
    assert result.exit_code == 2, result.output
    text = _flat(result.output)
    assert "fr (no value for EM)" in text and "ja (not in the similarity matrix)" in text and "--allow-missing" in text
    assert not out.exists()
    result = invoke(command, "--similarity", sim, "--memorization", mem, "--tokens", tokens, *theta,
                    "--out", out, "--no-figures", "--allow-missing")
    assert result.exit_code == 0, result.output
    data = json.loads((out / ("graph.json" if command == "correlate" else "sweep.json")).read_text())
    for record in (data if isinstance(data, list) else [data]):
        assert record["dropped"] == {"fr": "no value for EM", "ja": "not in the similarity matrix"}


def test_tokens_table_may_hold_languages_no_run_measured(inputs, tmp_path):
    """The token counts are a reference table (101 mC4 languages): extra rows are not 'missing'."""
    sim, mem, tokens = inputs
    assert len(_read_languages(tokens)) > 50
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.41, "--out", tmp_path / "o", "--no-figures")
    assert result.exit_code == 0, result.output


def _read_languages(path: Path) -> list[str]:
    return [row["language"] for row in csv.DictReader(path.open())]


@pytest.mark.parametrize("value,field", [("1.5", "de"), ("-1.2", "de"), ("100", "de")])
def test_similarity_outside_minus_one_one_is_refused(inputs, tmp_path, value, field):
    _, mem, tokens = inputs
    bad = tmp_path / "bad_sim.csv"
    bad.write_text(f"language,en,de\nen,1,{value}\nde,{value},1\n")
    result = invoke("correlate", "--similarity", bad, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.4, "--out", tmp_path / "o", "--allow-missing")
    assert result.exit_code == 2
    flat = result.output.replace("\n", "")
    assert f"row 1, field '{field}': similarity {float(value):g} is outside [-1, 1]" in flat and str(bad) in flat


def test_rounding_noise_on_the_diagonal_is_accepted(inputs, tmp_path):
    _, mem, tokens = inputs
    ok = tmp_path / "sim.csv"
    ok.write_text("language,en,de\nen,1.0000000000000002,0.5\nde,0.5,0.9999999999999998\n")
    result = invoke("correlate", "--similarity", ok, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.4, "--out", tmp_path / "o", "--no-figures", "--allow-missing")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("scale", ["raw", "log"])
def test_negative_token_counts_are_refused(inputs, tmp_path, scale):
    sim, mem, _ = inputs
    tokens = write_rows(tmp_path / "tok.csv", ["language", "tokens"],
                        [["en", 10], ["de", 3], ["ru", -5], ["uk", 2], ["fr", 4]])
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.4, "--tokens-scale", scale, "--out", tmp_path / "o")
    assert result.exit_code == 2
    assert f"{tokens}, row 3, field 'tokens': -5 tokens: a count cannot be negative" in result.output.replace("\n", "")


def test_similarity_csv_round_trips_at_full_precision(tmp_path):
    """similarity.csv used to be written to 6 decimals: an edge at sim = θ + 4e-7 vanished."""
    from babelprobe.families.similarity.analysis import LayerSimilarity, write_matrix_csv
    from babelprobe.families.similarity.signals import read_similarity_csv

    values = np.array([[1.0, 0.4000004, 1 / 3], [0.4000004, 1.0, 0.1 + 0.2], [1 / 3, 0.1 + 0.2, 1.0]])
    layer = LayerSimilarity(layer=2, languages=["en", "de", "th"], matrix=values.tolist())
    read = read_similarity_csv(write_matrix_csv(layer, tmp_path / "similarity.csv"))
    assert np.array_equal(read.values, values)


def test_parse_thetas():
    assert parse_thetas("0.31:0.45:0.02") == pytest.approx([0.31, 0.33, 0.35, 0.37, 0.39, 0.41, 0.43, 0.45])
    assert parse_thetas("0.5, -0.2") == [0.5, -0.2]
    for bad in ("0.5:0.1:0.1", "a,b", "0.2,1.5", ""):
        with pytest.raises(ValueError):
            parse_thetas(bad)


def test_draw_writes_one_panel_per_theta(inputs, tmp_path):
    sim, _, _ = inputs
    out = tmp_path / "fig3.png"
    result = invoke("draw", "--similarity", sim, "--thetas", "0.2,0.4,0.6", "--out", out)
    assert result.exit_code == 0, result.output
    assert out.is_file() and out.stat().st_size > 1000


def test_graph_records_n_and_flags_a_small_sample(inputs, tmp_path):
    """Issue 18: ρ_G of the demo rests on 4 languages and graph.json did not say so. n is recorded
    per θ (graph.json, sweep.csv/json), shown in the terminal, and n < SMALL_N_LANGUAGES flagged."""
    from babelprobe.families.similarity.graph import SMALL_N_LANGUAGES

    sim, mem, tokens = inputs
    result = invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--theta", 0.41, "--out", tmp_path / "one", "--no-figures")
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "one" / "graph.json").read_text())
    assert data["n_languages"] == 5 and data["small_n"] is (5 < SMALL_N_LANGUAGES) is True
    text = " ".join(result.output.split())
    assert "5 languages" in text and "small n: r and ρ_G rest on 5 languages" in text
    result = invoke("sweep", "--similarity", sim, "--memorization", mem, "--tokens", tokens,
                    "--thetas", "0.3,0.6", "--out", tmp_path / "sweep", "--no-figures")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((tmp_path / "sweep" / "sweep.csv").open()))
    assert [(r["n_languages"], r["small_n"]) for r in rows] == [("5", "True"), ("5", "True")]
    assert [r["n_languages"] for r in json.loads((tmp_path / "sweep" / "sweep.json").read_text())] == [5, 5]
    assert "small n" in result.output and "┃ n ┃" in result.output


def test_a_stand_in_for_data_volume_is_flagged_in_every_file(inputs, tmp_path):
    """graph.json, sweep.json, sweep.csv and nodes.csv say that the demo's speaker population is
    no training-data volume (issue 30), as the figures and the terminal do."""
    from babelprobe.families.similarity.signals import STANDIN_LABEL, STANDIN_TOKENS_CSV

    sim, mem, tokens = inputs
    standin = tmp_path / STANDIN_TOKENS_CSV
    standin.write_text(Path(tokens).read_text())
    out = tmp_path / "out"
    assert invoke("correlate", "--similarity", sim, "--memorization", mem, "--tokens", standin, "--theta", 0.41,
                  "--out", out, "--no-figures").exit_code == 0
    graph = json.loads((out / "graph.json").read_text())
    assert graph["tokens_stand_in"] is True and graph["tokens_label"] == STANDIN_LABEL
    nodes = list(csv.DictReader((out / "nodes.csv").open(encoding="utf-8")))
    assert {row["tokens_source"] for row in nodes} == {STANDIN_LABEL}
    assert invoke("sweep", "--similarity", sim, "--memorization", mem, "--tokens", standin, "--thetas", "0.3,0.6",
                  "--out", out, "--no-figures").exit_code == 0
    assert all(r["tokens_stand_in"] is True for r in json.loads((out / "sweep.json").read_text()))
    assert {r["tokens_stand_in"] for r in csv.DictReader((out / "sweep.csv").open())} == {"True"}
