"""Runs whose items all error (issue 17, point 3): every family's summary reports n = 0 with the
error count, and summary.json, the manifest and the reports are written, never a traceback.

Errors come from real backend paths: an OpenAI-compatible server on 127.0.0.1 (the real bundled
SmolLM2 behind tests/loopback_server.py) that answers the load-time detection and then 500 to
every request (an outage after start-up), and the real bundled model with a maximum length that
every input exceeds. The pure summarisers are checked on all-error frames too, including the
frames of runs stored before the item columns were typed (object columns of None)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from rich.console import Console

from babelprobe import store
from babelprobe.families.cka.analysis import summarise_cka
from babelprobe.families.eclektic.analysis import summarise_eclektic
from babelprobe.families.memorization.analysis import summarise_memorization, write_language_tables
from babelprobe.families.owl.analysis import summarise_owl
from babelprobe.families.similarity.analysis import language_means, summarise_similarity
from babelprobe.families.cka.config import CKAConfig
from babelprobe.families.eclektic.config import EclekticConfig
from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.families.owl.config import OwlConfig
from babelprobe.families.similarity.config import SimilarityConfig
from babelprobe.models import LoadOptions, load_backend
from babelprobe.models.weights import resolve
from babelprobe.execute_run import run
from babelprobe.stored_runs import read_run
from babelprobe.report.html import run_report
from loopback_server import FaultProxy, ModelServer, serve

pytestmark = pytest.mark.slow

SMOL = "bundled:smollm2-135m-instruct"


def _finished(outcome, n_items: int) -> dict:
    """The run wrote its summary and manifest, counted every item as an error, and its report and
    terminal summary render."""
    out = outcome.out
    assert (out / store.SUMMARY).is_file() and (out / store.MANIFEST).is_file()
    assert outcome.manifest.items == outcome.manifest.errors == n_items > 0
    stored = read_run(out)
    stored.family.print_summary(stored.summary, stored.manifest, Console(width=120, file=open("/dev/null", "w")))
    assert run_report(out).is_file()
    return json.loads((out / store.SUMMARY).read_text())


@pytest.fixture(scope="module")
def outage(smollm2):
    """An openai: backend loaded against a healthy server, then every request answered 500."""
    path = resolve(SMOL).path
    with serve(ModelServer(smollm2, path, "vllm").handler()) as upstream:
        proxy = FaultProxy(upstream, seed=0, rate=0.0, stall=0.0)
        with serve(proxy.handler()) as url:
            backend = load_backend(f"openai:{path}", options=LoadOptions(model_args={"base_url": url, "max_retries": 0}))
            assert backend.scoring_mode == "prompt_logprobs" and backend.chat
            proxy.poison = ("",)  # the outage starts after load: every POST body contains ""
            try:
                yield f"openai:{path}", url, backend, proxy
            finally:
                backend.close()


def test_eclektic_all_error_run_is_summarised(outage, tmp_path):
    spec, url, backend, proxy = outage
    config = EclekticConfig(model=spec, base_url=url, out=tmp_path / "e", cache=None, limit=3,
                            settings=["closed-book", "general-hint"], allow_errors=True, max_retries=0)
    outcome = run(config, backends={spec: backend})
    summary = _finished(outcome, outcome.manifest.items)
    assert proxy.injected["poison"] > 0
    assert [s["setting"] for s in summary["settings"]] == ["closed-book", "general-hint"]
    for setting in summary["settings"]:
        assert setting["errors"] == setting["items"] > 0
        for metric in ("string", "string_compat"):
            assert setting[metric]["overall"]["n"] == setting[metric]["transfer"]["n"] == 0
            assert setting[metric]["overall"]["value"] is None and setting[metric]["questions"] == 0
    # the string columns of the stored items are typed as on any other run
    items = store.read_items(outcome.out)
    assert items["recall"].dtype == "float64" and items["recall"].isna().all()


def test_cka_and_owl_all_error_runs_are_summarised(outage, tmp_path):
    spec, url, backend, _ = outage
    cka = run(CKAConfig(model=spec, base_url=url, out=tmp_path / "cka", cache=None, limit=2, langs=["en", "ru", "uk"],
                        bootstrap_resamples=100, allow_errors=True), backends={spec: backend})
    summary = _finished(cka, 6)
    assert [(lang["group"], lang["n"], lang["errors"]) for lang in summary["languages"]] == \
        [("en", 0, 2), ("ru", 0, 2), ("uk", 0, 2)]
    # no language scored: no mean (null), not a multilingual accuracy of 0 %
    assert summary["multilingual_accuracy"] is None and summary["n_errors"] == 6
    owl = run(OwlConfig(model=spec, base_url=url, out=tmp_path / "owl", cache=None, limit=1, tasks=["direct", "prefix"],
                        perturbations=["none"], max_tokens=4, prefix_max_tokens=4, bootstrap_resamples=100,
                        allow_errors=True), backends={spec: backend})
    summary = _finished(owl, owl.manifest.items)
    for task in summary["tasks"]:
        assert task["n"] == 0 and task["errors"] > 0 and task["overall"]["n"] == 0
        assert all(c["n"] == 0 and c["errors"] > 0 for c in task["by_language"])
        assert task["errors_taxonomy"] == {}  # no wrong answers were given (was: the column names, counted)


@pytest.fixture(scope="module")
def too_short(tmp_path_factory):
    """The real bundled model with a maximum length of 2 tokens: every input is longer."""
    return load_backend(SMOL, device="cpu", max_length=2)


def test_similarity_all_error_run_is_summarised(too_short, tmp_path):
    config = SimilarityConfig(model=SMOL, out=tmp_path / "sim", cache=None, limit=2, langs=["en", "ru", "uk", "de"],
                              typology="none", allow_errors=True)
    outcome = run(config, backends={SMOL: too_short})
    summary = _finished(outcome, 8)
    assert summary["similarity"] == [] and summary["final_layer"] is None
    assert summary["errors"] == {"en": 2, "ru": 2, "uk": 2, "de": 2}
    assert summary["n_sentences"] == {"en": 0, "ru": 0, "uk": 0, "de": 0}
    assert "at least 2 languages" in summary["undefined_reason"]
    assert not (outcome.out / "similarity.csv").exists()  # nothing for `graph` to read


def test_memorization_run_and_all_error_frame_are_summarised(too_short, tmp_path):
    config = MemorizationConfig(model=SMOL, out=tmp_path / "mem", cache=None, limit=1, langs=["en", "ru"],
                                prefix_tokens=[5, 10], bootstrap_resamples=100, allow_errors=True)
    outcome = run(config, backends={SMOL: too_short})
    assert (outcome.out / store.MANIFEST).is_file() and outcome.manifest.errors > 0
    items = store.read_items(outcome.out)
    items["status"], items["error"] = "error", "RuntimeError: down"
    for column in ("exact_match", "bleu", "rouge_l", "pm", "control_pm"):
        items[column] = None
    summary = summarise_memorization(items, 100, 0)
    assert all(row.scored == 0 and row.errors == row.samples > 0 and row.metrics == {}
               for row in summary.overall + summary.by_language)
    assert all(c.r is None for c in summary.length_correlations)
    assert write_language_tables(items, tmp_path)


# --- the pure summarisers, on hand-made all-error frames ------------------------------------------

def _eclektic_frame(error_sources: bool, error_targets: bool) -> pd.DataFrame:
    rows = []
    for q, (src, others) in enumerate([("en", ["de", "ja"]), ("ru", ["en", "zh"]), ("ja", ["ru", "de"])]):
        for lang in [src, *others]:
            failed = error_sources if lang == src else error_targets
            rows.append({"q_id": f"q{q}", "source_language": src, "target_language": lang, "is_source": lang == src,
                         "setting": "closed-book", "script": None, "recall": None if failed else 1.0,
                         "recall_compat": None if failed else 1.0, "judge_correct": None,
                         "error": "HTTP 503: down" if failed else None})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("error_sources, error_targets", [(True, False), (True, True), (False, True)])
def test_eclektic_summary_of_error_groups(error_sources, error_targets):
    """The issue's case first: no source-language row of a setting succeeded (the targets did)."""
    items = _eclektic_frame(error_sources, error_targets)
    summary = summarise_eclektic(items, resamples=100)
    (setting,) = summary.settings
    assert setting.items == 9 and setting.errors == 3 * error_sources + 6 * error_targets
    assert setting.string.overall.n == setting.string.transfer.n == 0
    assert math.isnan(setting.string.overall.value) and math.isnan(setting.string.transfer.value)
    assert setting.string.questions == (0 if error_sources else 3)


def test_cka_owl_similarity_summaries_of_all_error_frames():
    cka = pd.DataFrame({"language": ["en", "en", "ru"], "relation": ["P1", "P2", "P1"], "script": ["Latn", "Latn", "Cyrl"],
                        "known": [None] * 3, "mode": ["first-token"] * 3, "error": ["timeout"] * 3})
    summary = summarise_cka(cka, 100)
    assert [(g.group, g.n, g.errors) for g in summary.languages] == [("en", 0, 2), ("ru", 0, 1)]
    assert math.isnan(summary.multilingual_accuracy) and summary.script_test is None
    owl = pd.DataFrame({"task": ["direct"] * 2, "perturbation": ["none"] * 2, "passage_tokens": [10, 60],
                        "language": ["en", "tr"], "language_group": ["original", "unseen"], "book_id": ["b", "b"],
                        "correct": [None, None], "title": [None, None], "name": [None, None], "output": [None, None],
                        "author_correct": [None, None], "error": ["HTTP 500", "HTTP 500"]})
    (task,) = summarise_owl(owl, 100).tasks
    assert task.n == 0 and task.errors == 2 and task.errors_taxonomy == {} and task.book_language == {}
    sims = pd.DataFrame({"language": ["en", "de"], "layers": [None, None], "vectors": [None, None],
                         "error": ["x", "y"]})
    from babelprobe.families.similarity.analysis import error_counts

    summary = summarise_similarity(language_means(sims), None, "none", error_counts(sims))
    assert summary.layer() is None and summary.errors == {"en": 1, "de": 1} and summary.similarity == []
