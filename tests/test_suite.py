"""Suites (issue 8): a study file validated before anything runs, with errors naming the key;
`suite plan` that loads no model; every (model, probe) pair run as `run <family>` would, each model
loaded once; a failing pair recorded without losing the others; resume after kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from babelprobe import store
from babelprobe.cli import app
from babelprobe.families.cka.config import CKAConfig
from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.families.owl.config import OwlConfig
from babelprobe.execute_run import run
from babelprobe.suite import REQUESTS_FILE, SuiteError, load_suite, run_suite, statuses
from test_resume import cached_rows

ROOT = Path(__file__).resolve().parents[1]
MODEL = "bundled:gemma-3-270m"
CKA = {"langs": ["en", "ru"], "limit": 2}
CKA_FULL = {"mode": "full", "langs": ["en", "uk"], "limit": 4, "batch_size": 2, "seed": 5, "bootstrap_resamples": 200}
OWL = {"tasks": ["name-cloze"], "perturbations": ["masked"], "limit": 1, "max_tokens": 6, "langs": ["en", "de"],
       "figures": False, "bootstrap_resamples": 200}
MEMORIZATION = {"langs": ["en", "zh"], "limit": 1, "prefix_tokens": [20], "suffix_tokens": 5,
                "bootstrap_resamples": 200}


def write_study(folder: Path, study: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def study(**changes) -> dict:
    base = {"out": "runs", "cache": "cache.sqlite", "models": [{"spec": MODEL, "device": "cpu"}],
            "probes": [{"probe": "cka", "options": dict(CKA)}]}
    return {**base, **changes}


def problems_of(tmp_path: Path, content: dict | str) -> str:
    path = tmp_path / "study.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    return str(caught.value)


@pytest.mark.parametrize("content, expected", [
    (study(modells=[MODEL]), "study.yaml: modells: unknown key (allowed: out, cache, models, datasets, probes)"),
    (study(probes=[{"probe": "cka", "option": {}}]), "study.yaml: probes[0].option: unknown key (allowed: probe, "
                                                     "name, dataset, options)"),
    (study(models=[{"spec": MODEL, "devize": "cpu"}]), "study.yaml: models[0].devize: unknown key"),
    (study(probes=[{"probe": "cka"}, {"probe": "cka", "name": "full", "options": {"mode": "fulll"}}]),
     "study.yaml: probes[1].options.mode: Input should be 'first-token' or 'full' (got 'fulll')"),
    (study(probes=[{"probe": "cka", "options": {"limit": 0}}]),
     "study.yaml: probes[0].options.limit: Input should be greater than or equal to 1 (got 0)"),
    (study(probes=[{"probe": "cka", "options": {"modee": "full"}}]),
     "study.yaml: probes[0].options.modee: unknown option of cka (did you mean mode?"),
    (study(probes=[{"probe": "cka", "options": {"device": "cpu"}}]),
     "study.yaml: probes[0].options.device: not a probe option; set it in the model entry (models[].device)"),
    (study(probes=[{"probe": "cka"}, {"probe": "knowledge"}]),
     "study.yaml: probes[1].probe: unknown probe 'knowledge' (available: cka, owl, eclektic, memorization, similarity)"),
    ({"out": "runs", "probes": [{"probe": "cka"}]}, "study.yaml: models: Field required"),
    (study(models=[]), "study.yaml: models: List should have at least 1 item"),
    (study(models=[{"spec": MODEL, "dtype": "float8"}]), "study.yaml: models[0].dtype: Input should be 'auto'"),
    (study(probes=[{"probe": "owl", "dataset": "books"}]),
     "study.yaml: probes[0].dataset: unknown dataset 'books' (this study's datasets: none; bundled for owl: owl-demo)"),
    (study(datasets={"facts": "no/such/dir"}), "study.yaml: datasets.facts: "),
    (study(probes=[{"probe": "cka"}, {"probe": "cka"}]),
     "study.yaml: probes[1]: folder name 'cka' is also probes[0]'s; give one a different `name`"),
    (study(probes=[{"probe": "memorization", "options": {"langs": [False, "de"]}}]),
     "study.yaml: probes[0].options.langs[0]: Input should be a valid string (got False); YAML reads no/yes/on/off"),
    ("out: runs\nout: other\n", "study.yaml: line 2, column 1: not valid YAML (key 'out' given twice)"),
    ("- a list\n", "study.yaml: (top level): a mapping with out, models, probes"),
])
def test_validation_errors_name_the_file_and_key(tmp_path, content, expected):
    assert expected in problems_of(tmp_path, content)


def test_every_problem_is_reported_at_once_and_the_cli_exits_2(tmp_path):
    path = write_study(tmp_path, study(probes=[{"probe": "cka", "options": {"mode": "x", "limit": 0, "bogus": 1}},
                                               {"probe": "similarity", "options": {"layers": "top"}}]))
    result = CliRunner().invoke(app, ["suite", "run", str(path)])
    assert result.exit_code == 2
    for key in ("probes[0].options.mode", "probes[0].options.limit", "probes[0].options.bogus",
                "probes[1].options.layers: last, all, or comma-separated layer indices"):
        assert f"study.yaml: {key}" in result.output
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache.sqlite").exists()  # nothing ran


def test_example_study_validates():
    suite = load_suite(ROOT / "examples" / "study.yaml")
    assert [(p.model.folder, p.probe.folder) for p in suite.pairs][:5] == [
        ("gemma-3-270m", "cka"), ("gemma-3-270m", "cka-full"), ("gemma-3-270m", "owl"), ("gemma-3-270m", "eclektic"),
        ("gemma-3-270m", "memorization")]
    assert len(suite.pairs) == 10
    cka_full = suite.pairs[1].config
    assert isinstance(cka_full, CKAConfig) and cka_full.mode == "full" and cka_full.langs == ["en", "de", "ru"]
    assert cka_full.data.is_file() and cka_full.out == ROOT / "runs" / "study" / "gemma-3-270m" / "cka-full"


def test_readme_shows_the_example_study():
    block = (ROOT / "README.md").read_text().split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == yaml.safe_load((ROOT / "examples" / "study.yaml").read_text())


def test_options_build_the_same_config_as_the_run_flags(tmp_path):
    """The suite's pair config is the family's config model built from the same values: a
    comma string and a YAML list mean the same, and defaults are the family's."""
    path = write_study(tmp_path, study(probes=[{"probe": "memorization", "options": {"langs": "en, zh",
                                                                                   "prefix_tokens": [85, 35]}}]))
    (pair,) = load_suite(path).pairs
    want = MemorizationConfig(model=MODEL, device="cpu", langs=["en", "zh"], prefix_tokens=[35, 85],
                              out=tmp_path / "runs" / "gemma-3-270m" / "memorization", cache=tmp_path / "cache.sqlite")
    assert pair.config == want


def test_plan_of_a_fresh_suite_runs_and_loads_nothing(tmp_path):
    # a model that could not even be loaded: plan never tries
    path = write_study(tmp_path, study(models=[{"spec": "hf:/no/such/model", "name": "missing"}, MODEL]))
    result = CliRunner().invoke(app, ["suite", "plan", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "2 to run" in result.output and "missing/cka" in result.output and "gemma-3-270m/cka" in result.output
    assert "(not created yet)" in result.output
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache.sqlite").exists()


# --- real suites on the bundled model ----------------------------------------------------------

def small_study(root: Path, probes: list[dict]) -> Path:
    return write_study(root, {"out": "runs", "cache": "cache.sqlite", "models": [{"spec": MODEL, "device": "cpu"}],
                              "probes": probes})


def test_specs_and_datasets_are_checked_before_anything_runs(tmp_path):
    """A judge spec naming no model and a dataset with a bad row stop `suite run` before any model
    is loaded or any folder written."""
    bad = tmp_path / "facts.jsonl"
    bad.write_text('{"language": "en"}\n')
    path = write_study(tmp_path, study(datasets={"facts": "facts.jsonl"}, probes=[
        {"probe": "eclektic", "options": {"judges": ["hf:/no/such/judge"], "limit": 1}},
        {"probe": "cka", "dataset": "facts"}]))
    with pytest.raises(SuiteError) as caught:
        run_suite(load_suite(path), Console(file=open(os.devnull, "w")))
    judge, data = caught.value.problems
    assert judge.startswith("probes[0] (judge): model hf:/no/such/judge: /no/such/judge is neither")
    assert data.startswith("probes[1] (cka): invalid dataset:\n") and f"{bad}, row 1, field 'false': missing" in data
    assert str(caught.value).startswith("study.yaml: probes[0] (judge)")
    assert not (tmp_path / "runs").exists()


@pytest.fixture(scope="module")
def finished(tmp_path_factory, gemma):
    """A small real suite: four families' pairs and one that fails (its judge cannot be loaded)."""
    root = tmp_path_factory.mktemp("suite")
    (root / "not-a-model").mkdir()
    path = small_study(root, [
        {"probe": "cka", "options": CKA},
        {"probe": "cka", "name": "cka-full", "options": CKA_FULL},
        {"probe": "owl", "dataset": "owl-demo", "options": OWL},
        {"probe": "eclektic", "options": {"judges": [f"hf:{root / 'not-a-model'}"], "limit": 1}},
        {"probe": "memorization", "options": MEMORIZATION},
    ])
    suite = load_suite(path)
    started = time.perf_counter()
    record = run_suite(suite, Console(file=open(os.devnull, "w")), backends={MODEL: gemma})
    return suite, record, time.perf_counter() - started


@pytest.mark.slow
def test_suite_runs_every_pair_as_run_would(finished, gemma, tmp_path):
    suite, record, _ = finished
    states = {p.probe: p.state for p in record.pairs}
    assert states == {"cka": "done", "cka-full": "done", "owl": "done", "eclektic": "error", "memorization": "done"}
    (failed,) = [p for p in record.pairs if p.state == "error"]
    assert failed.error.endswith("not-a-model: no weights (*.safetensors, *.bin) found") and record.failed
    assert json.loads((suite.out / "suite.json").read_text())["pairs"][3]["error"] == failed.error
    profile = (suite.out / "profile.html").read_text()
    assert record.profile == str(suite.out / "profile.html")
    assert "CKA accuracy (full)" in profile and "OWL name-cloze (masked)" in profile and "memorization EM %" in profile
    alone = {"out": tmp_path / "alone", "cache": None, "device": "cpu"}
    # cka: test_suite_matches_the_run_command; cka-full: test_kill_9_then_resume_the_suite
    configs = {"owl": OwlConfig(**OWL, **alone), "memorization": MemorizationConfig(**MEMORIZATION, **alone)}
    for name, config in configs.items():
        alone = run(config.model_copy(update={"out": tmp_path / name}), backends={MODEL: gemma})
        in_suite = suite.out / "gemma-3-270m" / name
        pd.testing.assert_frame_equal(store.read_items(in_suite), store.read_items(alone.out))
        assert (in_suite / store.SUMMARY).read_text() == (alone.out / store.SUMMARY).read_text()
        assert not (in_suite / REQUESTS_FILE).exists()  # removed once the pair finished


@pytest.mark.slow
def test_suite_matches_the_run_command(finished, tmp_path):
    """`babelprobe run cka` with the same options as flags gives the same items and summary."""
    suite, _, _ = finished
    result = CliRunner().invoke(app, ["run", "cka", "--model", MODEL, "--device", "cpu", "--langs", "en,ru",
                                      "--limit", "2", "--out", str(tmp_path / "cka"), "--no-cache"])
    assert result.exit_code == 0, result.output
    in_suite = suite.out / "gemma-3-270m" / "cka"
    pd.testing.assert_frame_equal(store.read_items(in_suite), store.read_items(tmp_path / "cka"))
    assert (in_suite / store.SUMMARY).read_text() == (tmp_path / "cka" / store.SUMMARY).read_text()


@pytest.mark.slow
def test_plan_and_rerun_of_a_finished_suite(finished, gemma, tmp_path):
    suite, _, _ = finished
    result = CliRunner().invoke(app, ["suite", "plan", str(suite.file)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "4 done, 1 to run" in result.output  # the failed pair is still to run
    assert [s.state for s in statuses(suite)] == ["done", "done", "done", "to run", "done"]
    cka_full = json.loads((suite.out / "gemma-3-270m" / "cka-full" / store.MANIFEST).read_text())
    assert f"{cka_full['items']} items, 0 errors" in result.output
    held = sqlite3.connect(suite.study.cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert f"{MODEL}: {held} responses" in result.output

    manifests = {p: (p / store.MANIFEST).stat().st_mtime_ns for p in suite.out.glob("*/*") if (p / store.MANIFEST).exists()}
    again = run_suite(suite, Console(file=open(os.devnull, "w")), backends={MODEL: gemma})
    assert [p.state for p in again.pairs] == ["skipped", "skipped", "skipped", "error", "skipped"]
    assert {p: (p / store.MANIFEST).stat().st_mtime_ns for p in manifests} == manifests  # nothing recomputed

    changed = yaml.safe_load(suite.file.read_text())
    changed["probes"][0]["options"]["limit"] = 3
    path = write_study(tmp_path, {**changed, "out": str(suite.out), "cache": str(suite.study.cache)})
    plan = CliRunner().invoke(app, ["suite", "plan", str(path)], env={"COLUMNS": "300"})
    assert "conflict" in plan.output and "limit: 2 -> 3" in plan.output
    with pytest.raises(SuiteError, match=r"probes\[0\]: .* finished with other options: limit: 2 -> 3; delete"):
        run_suite(load_suite(path), Console(file=open(os.devnull, "w")), backends={MODEL: gemma})


@pytest.mark.slow
def test_kill_9_then_resume_the_suite(finished, gemma, tmp_path):
    """kill -9 while the second pair is half done; the re-run skips the first, resumes the second
    from the cache and ends with the results of the uninterrupted suite (the `finished` fixture)."""
    reference, _, _ = finished
    path = small_study(tmp_path, [{"probe": "cka", "options": CKA}, {"probe": "cka", "name": "cka-full",
                                                                      "options": CKA_FULL}])
    first, second = (tmp_path / "runs" / "gemma-3-270m" / name for name in ("cka", "cka-full"))
    cache = tmp_path / "cache.sqlite"
    # batches of --batch-size requests (not grown to scoring_batch_chars): enough of them that the
    # kill lands while the second pair is half done
    env = {**os.environ, "BABELPROBE_SCORING_BATCH_CHARS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "babelprobe", "suite", "run", str(path), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 300
    first_rows = None
    while first_rows is None or cached_rows(cache) < first_rows + 4:  # the second pair: a few batches done
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.time() < deadline, "the suite never reached its second pair"
        if first_rows is None and (first / store.MANIFEST).exists():
            first_rows = store.read_manifest(first).requests.computed
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (second / store.MANIFEST).exists()
    first_manifest = (first / store.MANIFEST).read_text()

    suite = load_suite(path)
    status = statuses(suite)[1]
    done_before = cached_rows(cache) - first_rows
    total = len(json.loads((second / REQUESTS_FILE).read_text())["requests"])
    assert status.state == "partial" and status.label == f"partial {done_before} of {total}"
    assert 0 < done_before < total

    record = run_suite(suite, Console(file=open(os.devnull, "w")), backends={MODEL: gemma})
    assert [p.state for p in record.pairs] == ["skipped", "done"] and not record.failed
    assert (first / store.MANIFEST).read_text() == first_manifest  # the finished pair was not run again
    requests = store.read_manifest(second).requests
    assert (requests.cached, requests.computed) == (done_before, total - done_before)
    for run_dir in (first, second):
        want = reference.out / "gemma-3-270m" / run_dir.name
        # the killed run's batches were cut by count, the reference's grown by characters: log-probs
        # round differently in other matrix shapes (1e-5), and ratios of probabilities with them
        pd.testing.assert_frame_equal(store.read_items(run_dir), store.read_items(want), check_exact=False,
                                      atol=1e-6, rtol=1e-4)
    assert (tmp_path / "runs" / "profile.html").is_file()
