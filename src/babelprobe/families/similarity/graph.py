"""Memorization vs data volume over the language-similarity graph (Shared Path §4.2-4.3,
Tables 1 and 6-11, Fig. 4): Pearson r, ρ_G (intra-topology) and cross-topology r per metric.

Nodes are the languages present in the similarity matrix, the memorization metrics and the
token counts. Tokens enter r, ρ_G and the per-component aggregation as natural log by default
(the authors' code does ``log(t)``; the paper does not say), or as given with ``raw``.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel

from babelprobe.families.similarity.signals import LanguageSignals, SimilarityMatrix
from babelprobe.families.similarity.graph_metrics import (
    components, cross_topology_correlation, graph_correlation, pearson, single_points, threshold_graph,
)

TokensScale = Literal["log", "raw"]

# Fewer languages than this behind r and ρ_G: flagged as a small sample in graph.json, sweep.csv
# and the terminal. Shared Path §4 correlates over 95 languages; with n = 4 (the demo) a Pearson r
# must exceed 0.95 to reach p < 0.05, so a value of that size says little.
SMALL_N_LANGUAGES = 10


class MetricCorrelation(BaseModel):
    pearson_r: float | None
    pearson_r_undefined_reason: str | None
    rho_g: float | None
    rho_g_undefined_reason: str | None
    cross_r: float | None
    cross_r_undefined_reason: str | None
    cross_r_degenerate: bool  # exactly 2 components: cross r is ±1 by construction


class GraphCorrelation(BaseModel):
    """The content of graph.json (the file contract of ``babelprobe graph correlate``)."""

    theta: float
    tokens_scale: TokensScale
    n_languages: int  # the nodes behind Pearson r and ρ_G at this θ (every language of every input)
    small_n: bool  # n_languages < SMALL_N_LANGUAGES: too few languages for these correlations to say much
    n_edges: int
    n_subgraphs: int
    n_single_points: int
    metrics: dict[str, MetricCorrelation]
    # languages of an input left out because another input lacks them (language -> why),
    # recorded whether the run was allowed to go on (--allow-missing) or not
    dropped: dict[str, str] = {}
    # what the tokens column is (signals.tokens_label); a stand-in (the demo's speaker population)
    # is no training-data volume, and every file that holds it says so
    tokens_label: str = "tokens"
    tokens_stand_in: bool = False


class GraphNodes(BaseModel):
    """The languages used, and those left out because a signal lacks them."""

    languages: list[str]
    dropped: dict[str, str]  # language -> why


def scaled_tokens(tokens: dict[str, float], scale: TokensScale) -> dict[str, float]:
    if scale == "raw":
        return dict(tokens)
    bad = {lang: v for lang, v in tokens.items() if v <= 0}
    if bad:
        raise ValueError(f"log scale needs token counts > 0: {bad}")
    return {lang: math.log(v) for lang, v in tokens.items()}


def graph_nodes(similarity: SimilarityMatrix, memorization: LanguageSignals, tokens: dict[str, float]) -> GraphNodes:
    """Languages in the similarity, in every memorization metric and in the token counts.
    Dropped: a similarity language some signal lacks, and a memorization language with no
    similarity row (both measured, one left out). The token counts are a reference table (the
    study's 101 mC4 languages) and may hold languages no run measured: those are not dropped."""
    keep, dropped = [], {}
    for lang in similarity.languages:
        missing = [name for name, values in memorization.values.items() if lang not in values]
        if lang not in tokens:
            missing.append("tokens")
        if missing:
            dropped[lang] = "no value for " + ", ".join(missing)
        else:
            keep.append(lang)
    measured = sorted({lang for values in memorization.values.values() for lang in values})
    for lang in measured:
        if lang not in similarity.languages:
            dropped[lang] = "not in the similarity matrix"
    return GraphNodes(languages=keep, dropped=dropped)


def correlate(similarity: SimilarityMatrix, memorization: LanguageSignals, tokens: dict[str, float],
              theta: float, tokens_scale: TokensScale = "log") -> tuple[GraphCorrelation, GraphNodes]:
    """Every statistic of one threshold θ (a Table 1 row per metric, a Table 6-11 column)."""
    nodes = graph_nodes(similarity, memorization, tokens)
    languages = nodes.languages
    if len(languages) < 2:
        raise ValueError(f"{len(languages)} language(s) are in the similarity, every memorization metric and the "
                         f"tokens; at least 2 are needed (left out: {nodes.dropped})")
    sim = similarity.restricted(languages)
    graph = threshold_graph(sim.values, languages, theta)
    t_scaled = scaled_tokens({lang: tokens[lang] for lang in languages}, tokens_scale)
    t = [t_scaled[lang] for lang in languages]
    t_name = "log tokens" if tokens_scale == "log" else "tokens"
    metrics = {}
    for name, values in memorization.values.items():
        m = [values[lang] for lang in languages]
        r = pearson(m, t, name, t_name)
        rho = graph_correlation(graph, languages, m, t, name, t_name)
        cross = cross_topology_correlation(graph, languages, m, t, name, t_name)
        metrics[name] = MetricCorrelation(
            pearson_r=r.value, pearson_r_undefined_reason=r.undefined_reason,
            rho_g=rho.value, rho_g_undefined_reason=rho.undefined_reason,
            cross_r=cross.statistic.value, cross_r_undefined_reason=cross.statistic.undefined_reason,
            cross_r_degenerate=cross.degenerate,
        )
    result = GraphCorrelation(
        theta=theta, tokens_scale=tokens_scale, n_languages=len(languages),
        small_n=len(languages) < SMALL_N_LANGUAGES, n_edges=graph.number_of_edges(),
        n_subgraphs=len(components(graph, languages)), n_single_points=single_points(graph), metrics=metrics,
        dropped=nodes.dropped,
    )
    return result, nodes


def sweep(similarity: SimilarityMatrix, memorization: LanguageSignals, tokens: dict[str, float],
          thetas: list[float], tokens_scale: TokensScale = "log") -> list[GraphCorrelation]:
    """One ``correlate`` per θ (Tables 6-11, Fig. 4)."""
    return [correlate(similarity, memorization, tokens, theta, tokens_scale)[0] for theta in thetas]


def sweep_rows(results: list[GraphCorrelation]) -> list[dict[str, object]]:
    """One flat row per θ: the graph counts, then per metric r, intra ρ_G, cross r (and reasons)."""
    rows = []
    for result in results:
        row: dict[str, object] = {
            "theta": result.theta, "tokens_scale": result.tokens_scale, "tokens_stand_in": result.tokens_stand_in,
            "n_languages": result.n_languages,
            "small_n": result.small_n, "n_edges": result.n_edges,
            "n_subgraphs": result.n_subgraphs, "n_single_points": result.n_single_points,
        }
        for name, metric in result.metrics.items():
            for key, value in metric.model_dump().items():
                row[f"{name}:{key}"] = value
        rows.append(row)
    return rows
