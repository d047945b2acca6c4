"""ρ_G, Pearson r and intra/cross topology (Shared Path §4.2-4.3, Eq. 1) on small graphs computed
by hand, and their undefined cases."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from babelprobe.families.similarity.graph import correlate, scaled_tokens
from babelprobe.families.similarity.signals import LanguageSignals, SimilarityMatrix
from babelprobe.families.similarity.graph_metrics import (
    component_value, components, cross_topology_correlation, graph_correlation, laplacian, pearson, single_points,
    threshold_graph,
)


def sim_matrix(languages, pairs):
    """Symmetric matrix with 1 on the diagonal, ``pairs[(a, b)]`` off it, 0 elsewhere."""
    m = np.eye(len(languages))
    for (a, b), v in pairs.items():
        i, j = languages.index(a), languages.index(b)
        m[i, j] = m[j, i] = v
    return m


PATH = ["a", "b", "c"]
# sim(a,b) = 0.5 and sim(b,c) = 0.41 = θ (a tie is an edge); sim(a,c) = 0.2 is not.
PATH_SIM = sim_matrix(PATH, {("a", "b"): 0.5, ("b", "c"): 0.41, ("a", "c"): 0.2})


def test_eq1_ties_are_edges_no_self_loops():
    graph = threshold_graph(PATH_SIM, PATH, 0.41)
    assert sorted(map(sorted, graph.edges)) == [["a", "b"], ["b", "c"]]
    assert nx.number_of_selfloops(graph) == 0  # the diagonal (1.0 ≥ θ) never makes an edge
    assert threshold_graph(PATH_SIM, PATH, 0.4100001).number_of_edges() == 1
    # L = D − A for the path a-b-c
    np.testing.assert_array_equal(laplacian(graph, PATH), [[1, -1, 0], [-1, 2, -1], [0, -1, 1]])
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        threshold_graph(PATH_SIM, PATH, 1.5)


def test_rho_g_by_hand_on_a_path():
    # m = (1, 2, 4), t = (0, 1, 1) on edges ab, bc:
    # mᵀLt = (1-2)(0-1) + (2-4)(1-1) = 1;  mᵀLm = 1 + 4 = 5;  tᵀLt = 1 + 0 = 1  ->  ρ_G = 1/√5
    graph = threshold_graph(PATH_SIM, PATH, 0.41)
    rho = graph_correlation(graph, PATH, [1, 2, 4], [0, 1, 1])
    assert rho.value == pytest.approx(1 / math.sqrt(5), abs=1e-12) and rho.undefined_reason is None
    # Pearson on the same three points: m̄ = 7/3, t̄ = 2/3; Σ(dm·dt) = 4/3; Σdm² = 14/3; Σdt² = 2/3
    r = pearson([1, 2, 4], [0, 1, 1])
    assert r.value == pytest.approx((4 / 3) / math.sqrt(14 / 3 * 2 / 3), abs=1e-12)


def test_rho_g_on_a_complete_graph_is_pearson():
    # On K_n, xᵀLy = n Σ (x_i − x̄)(y_i − ȳ): ρ_G reduces to Pearson r.
    languages = list("abcde")
    graph = threshold_graph(np.ones((5, 5)), languages, 0.9)
    m, t = [0.1, 0.5, 0.2, 0.9, 0.4], [3.0, 1.0, 2.0, 0.5, 2.5]
    assert graph_correlation(graph, languages, m, t).value == pytest.approx(pearson(m, t).value, abs=1e-12)


def test_rho_g_undefined_cases():
    graph = threshold_graph(PATH_SIM, PATH, 0.9)
    none = graph_correlation(graph, PATH, [1, 2, 3], [3, 2, 1])
    assert none.value is None and "no edges" in none.undefined_reason
    # one edge a-b; m is equal on it (it varies only across the unconnected c): mᵀLm = 0
    graph = threshold_graph(PATH_SIM, PATH, 0.45)
    flat = graph_correlation(graph, PATH, [7, 7, 1], [1, 2, 3], "EM", "log tokens")
    assert flat.value is None and flat.undefined_reason.startswith("EM does not vary")
    flat_t = graph_correlation(graph, PATH, [1, 2, 3], [5, 5, 9], "EM", "log tokens")
    assert flat_t.value is None and flat_t.undefined_reason.startswith("log tokens does not vary")
    assert pearson([7, 7, 1], [1, 2, 3]).value is not None  # Pearson still has variation


def test_pearson_undefined_cases():
    assert pearson([1.0], [2.0]).undefined_reason == "fewer than 2 points (1)"
    assert pearson([], []).value is None
    constant = pearson([1, 2, 3], [4, 4, 4], "EM", "tokens")
    assert constant.value is None and constant.undefined_reason == "tokens is constant over the 3 points"
    assert pearson([1, 2], [5, 3]).value == pytest.approx(-1.0)  # two points: defined, ±1


SIX = list("abcdef")
# edges a-b, b-c, d-e; f isolated -> components {a,b,c}, {d,e}, {f}
SIX_SIM = sim_matrix(SIX, {("a", "b"): 0.8, ("b", "c"): 0.7, ("d", "e"): 0.9, ("c", "d"): 0.3, ("a", "f"): 0.1})


def test_components_single_points_and_component_values():
    graph = threshold_graph(SIX_SIM, SIX, 0.5)
    assert components(graph, SIX) == [["a", "b", "c"], ["d", "e"], ["f"]]
    assert single_points(graph) == 1
    v = dict(zip(SIX, [1.0, 2.0, 4.0, 10.0, 20.0, 7.0]))
    # {a,b,c}: degrees 1, 2, 1 (Σ 4) -> (1·1 + 2·2 + 1·4)/4 = 2.25; {d,e}: (10 + 20)/2 = 15; {f}: 7
    assert component_value(graph, ["a", "b", "c"], v) == pytest.approx(2.25)
    assert component_value(graph, ["d", "e"], v) == pytest.approx(15.0)
    assert component_value(graph, ["f"], v) == 7.0


def test_cross_topology_r_and_its_degenerate_and_undefined_cases():
    graph = threshold_graph(SIX_SIM, SIX, 0.5)
    m = [1.0, 2.0, 4.0, 10.0, 20.0, 7.0]
    t = [0.0, 1.0, 1.0, 3.0, 1.0, 2.0]
    # components: m = (2.25, 15, 7); t = ((0 + 2 + 1)/4, (3 + 1)/2, 2) = (0.75, 2, 2)
    cross = cross_topology_correlation(graph, SIX, m, t)
    assert cross.statistic.value == pytest.approx(np.corrcoef([2.25, 15, 7], [0.75, 2, 2])[0, 1], abs=1e-12)
    assert not cross.degenerate
    connected = threshold_graph(SIX_SIM, SIX, 0.05)  # every pair with sim ≥ 0.05: one component
    assert len(components(connected, SIX)) == 1
    one = cross_topology_correlation(connected, SIX, m, t)
    assert one.statistic.value is None and "fewer than 2 components (1)" in one.statistic.undefined_reason
    pair_sim = sim_matrix(SIX, {("a", "b"): 0.8, ("b", "c"): 0.8, ("d", "e"): 0.8, ("e", "f"): 0.8})
    pair = cross_topology_correlation(threshold_graph(pair_sim, SIX, 0.5), SIX, m, t)
    assert pair.degenerate and abs(pair.statistic.value) == pytest.approx(1.0)
    flat = cross_topology_correlation(graph, SIX, m, [1, 1, 1, 1, 1, 1], "EM", "tokens")
    assert flat.statistic.value is None and "tokens per component is constant" in flat.statistic.undefined_reason


def test_correlate_log_and_raw_tokens_and_node_selection():
    languages = ["a", "b", "c", "d"]
    sim = SimilarityMatrix(tuple(languages), sim_matrix(languages, {("a", "b"): 0.6, ("b", "c"): 0.6, ("c", "d"): 0.6}))
    memorization = LanguageSignals("mem", {"EM": {"a": 0.3, "b": 0.1, "c": 0.2, "x": 0.5}})
    tokens = {"a": math.e, "b": math.e ** 2, "c": math.e ** 4, "d": 9.0}
    log, nodes = correlate(sim, memorization, tokens, 0.5, "log")
    assert nodes.languages == ["a", "b", "c"] and "d" in nodes.dropped  # d has no EM value
    # log tokens (1, 2, 4) on the path a-b-c: mᵀLt = (0.3-0.1)(1-2) + (0.1-0.2)(2-4) = 0;  ρ_G = 0
    assert log.metrics["EM"].rho_g == pytest.approx(0.0, abs=1e-12)
    assert log.tokens_scale == "log" and log.n_edges == 2 and log.n_subgraphs == 1 and log.n_single_points == 0
    raw, _ = correlate(sim, memorization, tokens, 0.5, "raw")
    m, t = np.array([0.3, 0.1, 0.2]), np.array([math.e, math.e ** 2, math.e ** 4])
    lap = np.array([[1, -1, 0], [-1, 2, -1], [0, -1, 1]])
    assert raw.metrics["EM"].rho_g == pytest.approx(m @ lap @ t / math.sqrt((m @ lap @ m) * (t @ lap @ t)))
    assert raw.metrics["EM"].pearson_r == pytest.approx(np.corrcoef(m, t)[0, 1])
    assert log.metrics["EM"].pearson_r == pytest.approx(np.corrcoef(m, [1, 2, 4])[0, 1])
    with pytest.raises(ValueError, match="> 0"):
        scaled_tokens({"a": 0.0}, "log")
    with pytest.raises(ValueError, match="at least 2 are needed"):
        correlate(sim, LanguageSignals("mem", {"EM": {"a": 0.1}}), tokens, 0.5)
