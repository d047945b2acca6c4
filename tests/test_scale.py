"""Issue 19 §3: runs written per language (``--parts language``) give the whole run's numbers, a
run stopped mid-way resumes from the parts it wrote (nothing recomputed), and per-language
memorization runs compose for ``graph`` (``graph merge``). A tiny Llama built here stands in for a
real checkpoint (the bundled Gemma is too slow for eight runs)."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from transformers import LlamaConfig, LlamaForCausalLM
from typer.testing import CliRunner

from babelprobe import store
from babelprobe.cli import app
from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.families.similarity.config import SimilarityConfig
from babelprobe.families.similarity.signals import read_memorization
from babelprobe.models import load_backend
from babelprobe.pipeline import run
from babelprobe.store import read_manifest
from tiny_models import DECODER, WORDS, save_tiny, tiny_model

LANGS = ["de", "en", "zh"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(spec, backend, samples file, parallel file): a tiny Llama and texts in its vocabulary."""
    folder = tmp_path_factory.mktemp("scale")
    target = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), folder / "model")
    spec = f"hf:{target}"
    rng = random.Random(0)
    samples, parallel = folder / "samples.jsonl", folder / "parallel.jsonl"
    with samples.open("w") as handle:
        for lang in LANGS:
            for i in range(2):
                handle.write(json.dumps({"language": lang, "text": " ".join(rng.choice(WORDS) for _ in range(40))}) + "\n")
    with parallel.open("w") as handle:
        for i in range(3):
            for lang in ["en", "de", "ru", "ja"]:
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
                handle.write(json.dumps({"id": f"s{i}", "language": lang, "text": words}) + "\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BABELPROBE_HOME", str(folder / "home"))
        return spec, load_backend(spec, device="cpu"), samples, parallel


def _memorization(tiny, out, **extra) -> MemorizationConfig:
    spec, _, samples, _ = tiny
    settings = dict(model=spec, data=samples, langs=LANGS, prefix_tokens=[10, 20], suffix_tokens=8, out=out,
                    cache=None, bootstrap_resamples=200, seed=1)
    return MemorizationConfig(**{**settings, **extra})


def test_memorization_in_parts_equals_the_whole_run_and_resumes(tiny, tmp_path, monkeypatch):
    backends = {tiny[0]: tiny[1]}
    whole = run(_memorization(tiny, tmp_path / "whole"), backends=backends)
    parts = run(_memorization(tiny, tmp_path / "parts", parts="language"), backends=backends)
    assert parts.manifest.parts == {"de": "computed", "en": "computed", "zh": "computed"}
    assert sorted(p.name for p in (tmp_path / "parts" / "parts").glob("*.parquet")) == \
        ["de.parquet", "en.parquet", "zh.parquet"]
    a, b = (pd.read_csv(tmp_path / d / "memorization.csv") for d in ("whole", "parts"))
    assert list(a["language"]) == list(b["language"]) == ["de", "en", "zh"]
    pd.testing.assert_frame_equal(a, b, rtol=1e-5)  # batches differ (one language each): float noise only
    assert whole.manifest.items == parts.manifest.items and whole.manifest.errors == parts.manifest.errors
    assert whole.manifest.requests.unique == parts.manifest.requests.unique

    # a run stopped after its first language: the next run resumes from parts/ and recomputes nothing of it
    written = []
    real_write = store.write_part

    def write_then_stop(out, key, stamp, records):
        real_write(out, key, stamp, records)
        written.append(key)
        raise KeyboardInterrupt  # killed right after the first part was written

    monkeypatch.setattr(store, "write_part", write_then_stop)
    with pytest.raises(KeyboardInterrupt):
        run(_memorization(tiny, tmp_path / "killed", parts="language"), backends=backends)
    monkeypatch.setattr(store, "write_part", real_write)
    assert written == ["de"] and not (tmp_path / "killed" / store.MANIFEST).exists()
    resumed = run(_memorization(tiny, tmp_path / "killed", parts="language"), backends=backends)
    assert resumed.manifest.parts == {"de": "resumed", "en": "computed", "zh": "computed"}
    assert resumed.manifest.requests.unique < parts.manifest.requests.unique  # de's requests not sent again
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "killed" / "items.parquet"),
                                  pd.read_parquet(tmp_path / "parts" / "items.parquet"))
    # another setting is another stamp: an unfinished run's parts are computed again, not reused
    (tmp_path / "killed" / store.MANIFEST).unlink()
    changed = run(_memorization(tiny, tmp_path / "killed", parts="language", suffix_tokens=6), backends=backends)
    assert set(changed.manifest.parts.values()) == {"computed"}

    # per-language runs compose: graph merge of a de run and an en,zh run = the whole run's table
    run(_memorization(tiny, tmp_path / "mem-de", langs=["de"]), backends=backends)
    run(_memorization(tiny, tmp_path / "mem-rest", langs=["en", "zh"]), backends=backends)
    merged = CliRunner().invoke(app, ["graph", "merge", str(tmp_path / "mem-de"), str(tmp_path / "mem-rest"),
                                      "--out", str(tmp_path / "merged")])
    assert merged.exit_code == 0, merged.output
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "merged" / "memorization.csv"), a, rtol=1e-5)
    assert set(read_memorization(tmp_path / "merged").values["PM"]) == {"de", "en", "zh"}
    twice = CliRunner().invoke(app, ["graph", "merge", str(tmp_path / "mem-de"), str(tmp_path / "whole"),
                                     "--out", str(tmp_path / "bad")])
    assert twice.exit_code == 2 and "'de' is also in" in twice.output


def test_similarity_in_parts_equals_the_whole_run(tiny, tmp_path):
    backends = {tiny[0]: tiny[1]}
    common = dict(model=tiny[0], data=tiny[3], layers=[1, -1], typology="none", figures=False, cache=None)
    run(SimilarityConfig(out=tmp_path / "whole", **common), backends=backends)
    parts = run(SimilarityConfig(out=tmp_path / "parts", parts="language", **common), backends=backends)
    assert set(parts.manifest.parts) == {"en", "de", "ru", "ja"}
    for name in ("similarity.csv", "similarity_layer1.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "whole" / name), pd.read_csv(tmp_path / "parts" / name),
                                      rtol=1e-4)
    assert read_manifest(tmp_path / "parts").items == 12
    help_text = CliRunner().invoke(app, ["run", "similarity", "--help"]).output
    assert "--parts" in help_text


def test_merge_refuses_inputs_that_are_not_memorization_runs(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["graph", "merge", str(tmp_path / "empty"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no memorization_p{N}.csv here" in result.output
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, rows in ((a, "language,EM,PM\nxx,0.5,-3\n"), (b, "language,EM\nyy,0.1\n")):
        folder.mkdir()
        (folder / "memorization_p20.csv").write_text(rows)
    result = CliRunner().invoke(app, ["graph", "merge", str(a), str(b), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "differ from" in result.output
