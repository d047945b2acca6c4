"""Per-language mean embeddings and the similarity matrices built from them (Shared Path §4.1,
Algorithm 1), with their correlation to typological similarity per layer (App. B.4).

The run stores the means (``language_means.parquet``); everything here is computed from that
file, so ``babelprobe report`` rebuilds the summary without a model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd
from pydantic import BaseModel

from babelprobe.analysis.typology import TypologySource, pair_correlation, typological_similarities
from babelprobe.data.signals import SimilarityMatrix
from babelprobe.metrics.subspace import default_rank, language_similarity
from babelprobe.probes.similarity import SentenceEmbedding

MEANS = "language_means.parquet"


@dataclass
class MeanAccumulator:
    """Running sums of sentence embeddings per (language, layer): memory does not grow with the
    number of sentences."""

    sums: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    counts: dict[tuple[str, int], int] = field(default_factory=dict)

    def add(self, records: Iterable[SentenceEmbedding]) -> None:
        for record in records:
            if record.vectors is None:
                continue
            for layer, vector in zip(record.layers, record.vectors):
                key = (record.language, layer)
                array = np.asarray(vector, dtype=np.float64)
                self.sums[key] = self.sums[key] + array if key in self.sums else array
                self.counts[key] = self.counts.get(key, 0) + 1

    def frame(self) -> pd.DataFrame:
        rows = [{"language": lang, "layer": layer, "n_sentences": self.counts[(lang, layer)],
                 "vector": (total / self.counts[(lang, layer)]).tolist()}
                for (lang, layer), total in self.sums.items()]
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


class SimilaritySummary(BaseModel):
    languages: list[str]
    layers: list[int]
    final_layer: int
    rank: int
    n_sentences: dict[str, int]
    typology_source: str
    typology_unknown_languages: dict[str, list[str]]
    typology: list[TypologyCorrelation]
    similarity: list[LayerSimilarity]

    def layer(self, layer: int | None = None) -> LayerSimilarity:
        wanted = self.final_layer if layer is None else layer
        return next(s for s in self.similarity if s.layer == wanted)


def summarise_similarity(means: pd.DataFrame, rank: int | None, typology: TypologySource) -> SimilaritySummary:
    """Similarity matrix per layer from the stored means (languages in their stored order);
    Pearson r with each typological feature set over language pairs."""
    languages = list(dict.fromkeys(means["language"]))
    layers = sorted(set(int(x) for x in means["layer"]))
    if len(languages) < 2:
        raise ValueError(f"language similarity needs at least 2 languages with embeddings, have {languages}")
    r = default_rank(len(languages)) if rank is None else rank
    indexed = means.set_index(["language", "layer"])
    typologies = typological_similarities(languages, typology)
    matrices, correlations = [], []
    for layer in layers:
        columns = np.stack([np.asarray(indexed.loc[(lang, layer), "vector"], dtype=np.float64) for lang in languages],
                           axis=1)
        sim = language_similarity(columns, r)
        matrices.append(LayerSimilarity(layer=layer, languages=languages, matrix=sim.tolist()))
        for typ in typologies:
            statistic, n_pairs = pair_correlation(sim, typ)
            correlations.append(TypologyCorrelation(layer=layer, features=typ.features, pearson_r=statistic.value,
                                                    pearson_r_undefined_reason=statistic.undefined_reason,
                                                    n_pairs=n_pairs))
    counts = means[means["layer"] == layers[-1]].set_index("language")["n_sentences"]
    return SimilaritySummary(
        languages=languages, layers=layers, final_layer=layers[-1], rank=r,
        n_sentences={lang: int(counts[lang]) for lang in languages}, typology_source=typology,
        typology_unknown_languages={t.features: list(t.unknown_languages) for t in typologies},
        typology=correlations, similarity=matrices,
    )


def write_matrix_csv(matrix: LayerSimilarity, path) -> None:
    """The SIM.csv layout of ``babelprobe graph``: first column ``language``, then one per language."""
    frame = pd.DataFrame(matrix.matrix, index=matrix.languages, columns=matrix.languages)
    frame.index.name = "language"
    frame.to_csv(path, float_format="%.6f")


def long_frame(summary: SimilaritySummary) -> pd.DataFrame:
    """Every layer's matrix as rows (layer, language, other, similarity)."""
    return pd.DataFrame([
        {"layer": s.layer, "language": a, "other": b, "similarity": s.matrix[i][j]}
        for s in summary.similarity for i, a in enumerate(s.languages) for j, b in enumerate(s.languages)
    ])
