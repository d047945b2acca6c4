"""Similarity's per-layer SVDs on one BLAS thread (families/similarity/analysis.py, issue 31): the
summary's matrices are language_similarity's, value for value."""

from __future__ import annotations

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from babelprobe.families.similarity.analysis import summarise_similarity
from babelprobe.families.similarity.subspace import language_similarity


def test_summary_matrices_equal_language_similarity_per_layer() -> None:
    rng = np.random.default_rng(7)
    languages = ["en", "de", "ru", "zh", "ar", "hi", "sw", "ja"]  # Latin, Cyrillic, Han, Arabic, Devanagari, kana
    layers, dim = [0, 3, 5], 96
    vectors = {(lang, layer): rng.normal(size=dim) for lang in languages for layer in layers}
    means = pd.DataFrame([{"language": lang, "layer": layer, "n_sentences": 4, "vector": vectors[(lang, layer)]}
                          for lang in languages for layer in layers])
    summary = summarise_similarity(means, None, "none")
    assert summary.layers == layers
    for layer_summary in summary.similarity:
        columns = np.stack([vectors[(lang, layer_summary.layer)] for lang in languages], axis=1)
        with threadpool_limits(limits=1, user_api="blas"):
            expected = language_similarity(columns)
        assert np.array_equal(np.array(layer_summary.matrix), expected)
        # BLAS threads may change a value's last bit (a blocked product sums in thread order), no more
        np.testing.assert_allclose(np.array(layer_summary.matrix), language_similarity(columns), rtol=0, atol=1e-15)


def test_the_svds_run_on_one_blas_thread(monkeypatch) -> None:
    from threadpoolctl import threadpool_info

    from babelprobe.families.similarity import analysis

    threads = []

    def spy(means, rank=None):
        threads.append({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
        return language_similarity(means, rank)

    monkeypatch.setattr(analysis, "language_similarity", spy)
    rng = np.random.default_rng(3)
    means = pd.DataFrame([{"language": lang, "layer": 0, "n_sentences": 1, "vector": rng.normal(size=32)}
                          for lang in ("en", "el", "th")])
    analysis.summarise_similarity(means, None, "none")
    assert threads == [{1}]
