"""Graph-based correlation over a language-similarity graph (Shared Path §4.2-4.3, Eq. 1).

- Graph (Eq. 1): A_ij = 1 iff i ≠ j and sim(i, j) ≥ θ (ties are edges); unweighted, no self-loops.
- ρ_G(m, t) = mᵀLt / sqrt((mᵀLm)(tᵀLt)) with the unnormalised Laplacian L = D − A.
- Intra-/cross-topology (§4.3): components at θ (isolated nodes included); one value per
  component, Σ_i (deg_i / Σ_j deg_j) v_i with degrees inside the component, an isolated node
  keeping its own value; cross r = Pearson r over those component values.

Every statistic is a ``Statistic``: a number, or None with the reason it is undefined (the
authors' code prints nan, -inf or 0.00 in those cases).
"""

from __future__ import annotations

from typing import Sequence

import networkx as nx
import numpy as np
from pydantic import BaseModel

from babelprobe.analysis.statistics import Statistic, pearson


def threshold_graph(similarity: np.ndarray, languages: Sequence[str], theta: float) -> nx.Graph:
    """Eq. 1: an edge between two different languages whose similarity is at least θ."""
    if not -1.0 <= theta <= 1.0:
        raise ValueError(f"theta must be in [-1, 1], got {theta}")
    graph = nx.Graph()
    graph.add_nodes_from(languages)
    n = len(languages)
    for i in range(n):
        for j in range(i + 1, n):
            if similarity[i, j] >= theta:
                graph.add_edge(languages[i], languages[j])
    return graph


def laplacian(graph: nx.Graph, languages: Sequence[str]) -> np.ndarray:
    """L = D − A (unnormalised), rows and columns in the order of ``languages``."""
    return nx.laplacian_matrix(graph, nodelist=list(languages)).toarray().astype(np.float64)


def _varies_on_an_edge(graph: nx.Graph, values: dict[str, float]) -> bool:
    # Exact test on the edges (xᵀLx = Σ_edges (x_i − x_j)²): a float product with L can leave
    # 1e-16 where the true value is 0.
    return any(values[a] != values[b] for a, b in graph.edges)


def graph_correlation(graph: nx.Graph, languages: Sequence[str], m: Sequence[float], t: Sequence[float],
                      m_name: str = "memorization", t_name: str = "tokens") -> Statistic:
    """ρ_G(m, t); undefined with no edges or when a signal does not vary over any edge."""
    if graph.number_of_edges() == 0:
        return Statistic.undefined("the graph has no edges at this threshold")
    for name, signal in ((m_name, m), (t_name, t)):
        if not _varies_on_an_edge(graph, dict(zip(languages, signal))):
            return Statistic.undefined(f"{name} does not vary over any edge (xᵀLx = 0)")
    lap = laplacian(graph, languages)
    m_arr, t_arr = np.asarray(m, dtype=np.float64), np.asarray(t, dtype=np.float64)
    value = (m_arr @ lap @ t_arr) / np.sqrt((m_arr @ lap @ m_arr) * (t_arr @ lap @ t_arr))
    return Statistic(value=float(np.clip(value, -1.0, 1.0)))  # Cauchy-Schwarz; clip float noise


def components(graph: nx.Graph, languages: Sequence[str]) -> list[list[str]]:
    """Connected components (isolated nodes included), each in ``languages`` order, ordered by
    their first language."""
    order = {lang: i for i, lang in enumerate(languages)}
    parts = [sorted(c, key=order.__getitem__) for c in nx.connected_components(graph)]
    return sorted(parts, key=lambda c: order[c[0]])


def single_points(graph: nx.Graph) -> int:
    return sum(1 for _, degree in graph.degree if degree == 0)


def component_value(graph: nx.Graph, component: Sequence[str], values: dict[str, float]) -> float:
    """§4.3: Σ_i (n_i / Σ_j n_j) v_i, n_i the degree inside the component; an isolated node keeps
    its own value."""
    if len(component) == 1:
        return float(values[component[0]])
    degrees = {lang: graph.degree(lang) for lang in component}
    total = sum(degrees.values())
    return float(sum(degrees[lang] / total * values[lang] for lang in component))


class CrossTopology(BaseModel):
    statistic: Statistic
    degenerate: bool  # exactly two components: r is ±1 by construction


def cross_topology_correlation(graph: nx.Graph, languages: Sequence[str], m: Sequence[float],
                               t: Sequence[float], m_name: str = "memorization",
                               t_name: str = "tokens") -> CrossTopology:
    """Pearson r over one (m, t) pair per component; undefined with fewer than 2 components."""
    parts = components(graph, languages)
    if len(parts) < 2:
        return CrossTopology(statistic=Statistic.undefined(f"fewer than 2 components ({len(parts)})"),
                             degenerate=False)
    m_values, t_values = dict(zip(languages, m)), dict(zip(languages, t))
    m_parts = [component_value(graph, c, m_values) for c in parts]
    t_parts = [component_value(graph, c, t_values) for c in parts]
    statistic = pearson(m_parts, t_parts, f"{m_name} per component", f"{t_name} per component")
    return CrossTopology(statistic=statistic, degenerate=len(parts) == 2)
