"""Language similarity (Shared Path §4.1): parallel data, running means, and a real run on the
bundled Gemma (few ids x few languages)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from babelprobe import store
from babelprobe.families.similarity.analysis import language_means
from babelprobe.families.similarity.config import DEMO_PARALLEL, SimilarityConfig
from babelprobe.families.similarity.data import load_parallel
from babelprobe.families.similarity.signals import read_similarity
from babelprobe.data.validation import DatasetError
from babelprobe.families.similarity.subspace import language_similarity
from babelprobe.models.base import HiddenStates
from babelprobe.families.similarity.family import resolve_layers
from babelprobe.execute_run import run
from babelprobe.stored_runs import read_run
from babelprobe.families.similarity.probe import SentenceEmbedding


def test_bundled_parallel_stems_are_parallel_and_translated():
    sentences = load_parallel(DEMO_PARALLEL)
    languages = sorted({s.language for s in sentences})
    assert len(languages) == 20 and len(sentences) == 20 * 100
    by_id = pd.DataFrame([s.model_dump() for s in sentences]).pivot(index="id", columns="language", values="text")
    assert not by_id.isna().any().any()
    assert not (by_id.drop(columns="en").eq(by_id["en"], axis=0)).any().any()  # no untranslated copies
    few = load_parallel(DEMO_PARALLEL, ["de", "ru"], limit=3, seed=1)
    assert [s.language for s in few] == ["de"] * 3 + ["ru"] * 3
    assert [s.id for s in few[:3]] == [s.id for s in few[3:]]  # the same ids in every language


def test_parallel_file_validation_and_non_parallel_ids(tmp_path):
    data = tmp_path / "p.jsonl"
    data.write_text('{"id": "1", "language": "en", "text": "a"}\n{"id": "1", "language": "de", "text": "b"}\n'
                    '{"id": "2", "language": "en", "text": "c"}\n')
    assert [(s.id, s.language) for s in load_parallel(data)] == [("1", "de"), ("1", "en")]  # id 2 lacks de
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "language": "en", "text": ""}\n{"id": "1", "language": "de", "text": "b"}\n'
                   '{"id": "1", "language": "de", "text": "c"}\n')
    with pytest.raises(DatasetError) as info:
        load_parallel(bad)
    assert f"{bad}, row 1, field 'text': missing or empty" in str(info.value)
    assert f"{bad}, row 3, field 'id': duplicate id '1' in de" in str(info.value)
    with pytest.raises(DatasetError, match="no sentences for fr"):
        load_parallel(data, ["en", "fr"])


def test_polyglot_release_layout_drops_untranslated_copies(tmp_path):
    row = '{{"dataset_id": "{i}", "stem": "{s}", "true": "x", "false": "y"}}\n'
    (tmp_path / "en.jsonl").write_text(row.format(i="f1", s="The capital of France is") +
                                       row.format(i="f2", s="Seibu Kaihatsu is in"))
    (tmp_path / "bg.jsonl").write_text(row.format(i="f1", s="Столицата на Франция е") +
                                       row.format(i="f2", s="Seibu Kaihatsu is in"))
    sentences = load_parallel(tmp_path)
    assert {s.id for s in sentences} == {"f1"}


def test_language_means_equal_numpy_means():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(5, 2, 4))
    records = [SentenceEmbedding(id=str(i), language="en" if i < 3 else "de", text="t", source="s", layers=[0, 7],
                                 vectors=vectors[i].tolist()) for i in range(5)]
    records.append(SentenceEmbedding(id="9", language="en", text="t", source="s", layers=[0, 7], error="failed"))
    stored = pd.DataFrame([r.model_dump() for r in records])
    frame = language_means(stored).set_index(["language", "layer"])
    np.testing.assert_allclose(frame.loc[("en", 7), "vector"], vectors[:3, 1].mean(0))
    np.testing.assert_allclose(frame.loc[("de", 0), "vector"], vectors[3:, 0].mean(0))
    assert frame.loc[("en", 0), "n_sentences"] == 3  # the errored sentence is not averaged


def test_resolve_layers():
    assert resolve_layers("last", 18) == (18,)
    assert resolve_layers("all", 2) == (0, 1, 2)
    assert resolve_layers([0, -1, 6, 18], 18) == (0, 6, 18)
    with pytest.raises(ValueError, match="out of range"):
        resolve_layers([19], 18)
    with pytest.raises(ValueError, match="'last', 'all' or indices, not 'first'"):  # not its letters, one by one
        resolve_layers("first", 18)


@pytest.mark.slow
def test_mean_text_pooling_leaves_out_bos(gemma):
    text = "Die Hauptstadt von Portugal ist"
    ids = gemma.boundary.encode_text(text)
    assert ids[0] == gemma.tokenizer.bos_token_id
    with torch.inference_mode():
        hs = gemma.model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
    # batched with a longer text, so this row is left-padded
    got = gemma.hidden_states([HiddenStates(text=text, layers=(6, -1), pooling="mean-text"),
                               HiddenStates(text=text + " und noch viel mehr Text", layers=(6,), pooling="mean-text")])
    np.testing.assert_allclose(got[0].vectors[0], hs[6][0, 1:].mean(0).numpy(), rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(got[0].vectors[1], hs[-1][0, 1:].mean(0).numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.slow
def test_similarity_run_on_bundled_gemma(gemma, tmp_path):
    out = tmp_path / "sim"
    config = SimilarityConfig(data=DEMO_PARALLEL, langs=["en", "de", "ru", "uk"], limit=3, layers=[0, -1],
                              typology="none", out=out, cache=None)
    outcome = run(config, backends={config.model: gemma})
    assert outcome.manifest.errors == 0 and outcome.manifest.items == 12
    summary = outcome.summary
    assert summary.layers == [0, 18] and summary.final_layer == 18 and summary.rank == 3
    assert summary.n_sentences == {"en": 3, "de": 3, "ru": 3, "uk": 3}
    # the stored means are the means of the model's own sentence embeddings
    sentences = load_parallel(DEMO_PARALLEL, ["en", "de", "ru", "uk"], limit=3)
    direct = gemma.hidden_states([HiddenStates(text=s.text, layers=(18,), pooling="mean-text") for s in sentences])
    means = language_means(store.read_items(out)).set_index(["language", "layer"])
    for lang in ("en", "ru"):
        mine = [np.array(r.vectors[0]) for s, r in zip(sentences, direct) if s.language == lang]
        np.testing.assert_allclose(means.loc[(lang, 18), "vector"], np.mean(mine, axis=0), rtol=1e-4, atol=1e-4)
    # similarity.csv is the final layer, in the SIM.csv layout `babelprobe graph` reads
    sim = read_similarity(out)
    assert sim.languages == ("en", "de", "ru", "uk")
    columns = np.stack([means.loc[(lang, 18), "vector"] for lang in sim.languages], axis=1)
    np.testing.assert_allclose(sim.values, language_similarity(columns), atol=2e-6)
    assert sim.values[2, 3] > sim.values[0, 2]  # Russian is closer to Ukrainian than to English
    assert read_similarity(out, layer=0).values.shape == (4, 4)
    rebuilt = read_run(out).summary  # what `babelprobe report` prints, from items.parquet alone
    assert rebuilt.model_dump() == json.loads((out / "summary.json").read_text())
    assert (out / "similarity.png").is_file() and (out / "items.parquet").is_file()


@pytest.mark.slow  # no model, but lang2vec's import and feature tables take tens of seconds
def test_typology_correlation_with_lang2vec():
    from babelprobe.analysis.typology import pair_correlation, typological_similarities

    languages = ["en", "de", "ru", "uk"]
    sets = {t.features: t for t in typological_similarities(languages, "lang2vec")}
    assert set(sets) == {"syntax", "phonology", "genetic"}
    genetic = sets["genetic"].values
    assert genetic[2, 3] > genetic[0, 2] and genetic[0, 1] > genetic[0, 2]  # ru~uk, en~de closer than en~ru
    statistic, pairs = pair_correlation(genetic, sets["genetic"])
    assert pairs == 6 and statistic.value == pytest.approx(1.0)


@pytest.mark.slow  # lang2vec's import and feature tables, in a fresh interpreter
def test_lang2vec_script_on_the_path_does_not_shadow_the_package(tmp_path):
    """lang2vec's wheel installs bin/lang2vec.py; from the `babelprobe` console script, sys.path[0]
    is that bin folder and a plain import took the script (it then read bin/data/letter_codes.json:
    the demo's similarity step failed)."""
    import subprocess
    import sys

    (tmp_path / "lang2vec.py").write_text('open("data/letter_codes.json")  # what the installed script does\n')
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from babelprobe.analysis.typology import typological_similarities; "
            "from babelprobe.report.lang_family import families_of; "
            "print(len(typological_similarities(['en', 'de'], 'lang2vec')), families_of(['de'])['de'])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "3" and "Indo-European" in done.stdout
