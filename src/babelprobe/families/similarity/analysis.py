"""Per-language mean embeddings and the similarity matrices built from them (Shared Path §4.1,
Algorithm 1), with their correlation to typological similarity per layer (App. B.4).

Everything here is computed from the stored items (one pooled vector per sentence and layer), so
``babelprobe report`` rebuilds the summary without a model."""

from __future__ import annotations

import math

from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel
from threadpoolctl import threadpool_limits

from babelprobe.analysis.typology import TypologySource, pair_correlation, typological_similarities
from babelprobe.families.similarity.signals import SimilarityMatrix
from babelprobe.families.similarity.subspace import default_rank, language_similarity


def language_means(items: pd.DataFrame) -> pd.DataFrame:
    """Mean sentence embedding per (language, layer) from the stored items (one row per sentence
    with ``layers`` and ``vectors``; errored rows have no vectors and are left out)."""
    sums: dict[tuple[str, int], np.ndarray] = {}
    counts: dict[tuple[str, int], int] = {}
    for language, layers, vectors in zip(items["language"], items["layers"], items["vectors"]):
        if vectors is None:
            continue
        for layer, vector in zip(layers, vectors):
            key = (language, int(layer))
            array = np.asarray(vector, dtype=np.float64)
            sums[key] = sums[key] + array if key in sums else array
            counts[key] = counts.get(key, 0) + 1
    rows = [{"language": lang, "layer": layer, "n_sentences": counts[(lang, layer)],
             "vector": sums[(lang, layer)] / counts[(lang, layer)]} for (lang, layer) in sums]
    return pd.DataFrame(rows, columns=["language", "layer", "n_sentences", "vector"])


class TypologyCorrelation(BaseModel):
    layer: int
    features: str
    pearson_r: float | None
    pearson_r_undefined_reason: str | None
    n_pairs: int


class LayerSimilarity(BaseModel):
    layer: int
    languages: list[str]
    matrix: list[list[float]]

    def as_matrix(self) -> SimilarityMatrix:
        return SimilarityMatrix(tuple(self.languages), np.array(self.matrix))


def neighbours(layer: LayerSimilarity) -> dict[str, list[tuple[str, float]]]:
    """Each language's other languages, most similar first (undefined similarities left out)."""
    out = {}
    for i, (lang, row) in enumerate(zip(layer.languages, layer.matrix)):
        others = [(other, v) for j, (other, v) in enumerate(zip(layer.languages, row)) if j != i and not math.isnan(v)]
        out[lang] = sorted(others, key=lambda pair: -pair[1])
    return out


class SimilaritySummary(BaseModel):
    languages: list[str]
    layers: list[int]
    final_layer: int | None  # None: no matrix (fewer than 2 languages with embeddings)
    rank: int
    n_sentences: dict[str, int]
    typology_source: str
    typology_unknown_languages: dict[str, list[str]]
    typology: list[TypologyCorrelation]
    similarity: list[LayerSimilarity]
    errors: dict[str, int] = {}  # language -> sentences that errored (left out of its mean; 0 with none)
    undefined_reason: str | None = None  # why there is no matrix

    def layer(self, layer: int | None = None) -> LayerSimilarity | None:
        """The final layer's matrix (or ``layer``'s); None when there is no matrix."""
        wanted = self.final_layer if layer is None else layer
        return next((s for s in self.similarity if s.layer == wanted), None)


def error_counts(items: pd.DataFrame) -> dict[str, int]:
    """Errored sentences per language (every language of the items, 0 where none errored)."""
    errored = items["error"].notna() if "error" in items else pd.Series(False, index=items.index)
    return {str(lang): int(n) for lang, n in errored.groupby(items["language"], sort=False).sum().items()}


def summarise_similarity(means: pd.DataFrame, rank: int | None, typology: TypologySource,
                         errors: dict[str, int] | None = None, asjp: Path | None = None,
                         ldnd: str = "babelprobe") -> SimilaritySummary:
    """Similarity matrix per layer from the stored means (languages in their stored order);
    Pearson r with each typological feature set over language pairs. With fewer than two languages
    with embeddings (e.g. every request failed) there is no matrix: the summary says why, with the
    sentences counted (n = 0) and the errors per language."""
    languages = list(dict.fromkeys(means["language"]))
    layers = sorted(set(int(x) for x in means["layer"]))
    errors = dict(errors or {})
    if len(languages) < 2:
        counts = means.groupby("language")["n_sentences"].max() if len(means) else pd.Series(dtype=int)
        return SimilaritySummary(
            languages=languages, layers=layers, final_layer=None, rank=0,
            n_sentences={lang: int(counts.get(lang, 0)) for lang in dict.fromkeys([*errors, *languages])},
            typology_source=typology, typology_unknown_languages={}, typology=[], similarity=[], errors=errors,
            undefined_reason=f"language similarity needs at least 2 languages with embeddings, "
                             f"{len(languages)} had any ({sum(errors.values())} sentences errored)",
        )
    r = default_rank(len(languages)) if rank is None else rank
    indexed = means.set_index(["language", "layer"])
    typologies = typological_similarities(languages, typology)
    if asjp is not None:  # ASJP lexical similarity (1 − LDND; Figs. 7-8) beside the lang2vec feature sets
        from babelprobe.analysis.typology import asjp_similarity

        typologies.append(asjp_similarity(languages, asjp, ldnd))
    matrices, correlations = [], []
    # d x L matrices (640 x 20 in the demo): with BLAS threads, each SVD waits on its threads ~20x
    # longer than it computes (docs/profiles, speed-stages). One thread also makes the last bit of
    # a value independent of the machine's core count (a blocked product sums in thread order).
    with threadpool_limits(limits=1, user_api="blas"):
        for layer in layers:
            columns = np.stack([np.asarray(indexed.loc[(lang, layer), "vector"], dtype=np.float64)
                                for lang in languages], axis=1)
            sim = language_similarity(columns, r)
            matrices.append(LayerSimilarity(layer=layer, languages=languages, matrix=sim.tolist()))
            for typ in typologies:
                statistic, n_pairs = pair_correlation(sim, typ)
                correlations.append(TypologyCorrelation(layer=layer, features=typ.features,
                                                        pearson_r=statistic.value,
                                                        pearson_r_undefined_reason=statistic.undefined_reason,
                                                        n_pairs=n_pairs))
    counts = means[means["layer"] == layers[-1]].set_index("language")["n_sentences"]
    return SimilaritySummary(
        languages=languages, layers=layers, final_layer=layers[-1], rank=r,
        n_sentences={lang: int(counts[lang]) for lang in languages}, typology_source=typology,
        typology_unknown_languages={t.features: list(t.unknown_languages) for t in typologies},
        typology=correlations, similarity=matrices, errors=errors,
    )


def write_matrix_csv(matrix: LayerSimilarity, path: Path) -> Path:
    """The SIM.csv layout of ``babelprobe graph``: first column ``language``, then one per language.
    Values at full round-trip precision (Python's shortest repr): a run folder fed to ``graph``
    must give the edges the run had, and an edge at sim = θ ± 1e-7 would flip at 6 decimals."""
    frame = pd.DataFrame(matrix.matrix, index=matrix.languages, columns=matrix.languages)
    frame.index.name = "language"
    frame.to_csv(path, float_format=lambda value: repr(float(value)))
    return path


def long_frame(summary: SimilaritySummary) -> pd.DataFrame:
    """Every layer's matrix as rows (layer, language, other, similarity)."""
    return pd.DataFrame([
        {"layer": s.layer, "language": a, "other": b, "similarity": s.matrix[i][j]}
        for s in summary.similarity for i, a in enumerate(s.languages) for j, b in enumerate(s.languages)
    ])
