"""Figures of the Shared Path analysis: the similarity heatmap, typology correlation per layer
(App. B.4, Figs. 5-8), the thresholded graph at a few θ (Fig. 3) and a θ sweep (Fig. 4)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

# first: the Agg backend, labels literal (no mathtext), one colour map, PNG + SVG + PDF
from babelprobe.report.figures import CMAP, MISSING, cell_texts, fit_layout, save_png  # noqa: I001

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx
import numpy as np
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from babelprobe.families.similarity.graph import GraphCorrelation  # noqa: E402
from babelprobe.families.similarity.signals import SimilarityMatrix  # noqa: E402
from babelprobe.families.similarity.graph_metrics import components, threshold_graph  # noqa: E402


def _save(fig, path: Path) -> Path:
    fit_layout(fig)
    return save_png(fig, path)


def clustered_order(values: np.ndarray) -> list[int]:
    """Languages in the leaf order of an average-linkage hierarchical clustering on 1 - similarity
    (scipy, optimal leaf ordering): similar languages sit next to each other, blocks show."""
    from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform

    n = len(values)
    if n < 3:
        return list(range(n))
    distance = np.clip(1.0 - (values + values.T) / 2, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    condensed = squareform(np.nan_to_num(distance, nan=float(np.nanmax(distance))), checks=False)
    tree = linkage(condensed, method="average")
    return [int(i) for i in leaves_list(optimal_leaf_ordering(tree, condensed))]


def similarity_heatmap(similarity: SimilarityMatrix, title: str, path: Path) -> Path:
    return _save(similarity_heatmap_figure(similarity, title), path)


def similarity_heatmap_figure(similarity: SimilarityMatrix, title: str):
    """The L x L cosine matrix in clustered order, each cell's value printed (two decimals),
    blue = more similar (the colour direction of every babelprobe figure)."""
    order = clustered_order(np.asarray(similarity.values, dtype=float))
    languages = [similarity.languages[i] for i in order]
    values = np.asarray(similarity.values, dtype=float)[np.ix_(order, order)]
    n = len(languages)
    side = 2.2 + 0.55 * n
    fig, ax = plt.subplots(figsize=(side + 1.0, side))
    image = ax.imshow(values, cmap=CMAP, vmin=-1, vmax=1)
    ax.set_xticks(range(n), languages, fontsize=8, rotation=45, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(n), languages, fontsize=8)
    cell_texts(ax, image, values, [[f"{v:.2f}" for v in row] for row in values], fontsize=6 if n > 12 else 7)
    ax.set_title(title + " (clustered order)", fontsize=9)
    bar = fig.colorbar(image, ax=ax, fraction=0.046)
    bar.set_label("cosine similarity (higher →)", fontsize=7)
    fit_layout(fig)
    return fig


def typology_by_layer(rows: Sequence[dict], path: Path, title: str) -> Path:
    return _save(typology_by_layer_figure(rows, title), path)


def typology_by_layer_figure(rows: Sequence[dict], title: str):
    """Pearson r of model similarity vs typological similarity, one line per feature set."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for feature in sorted({r["features"] for r in rows}):
        points = sorted((r["layer"], r["pearson_r"]) for r in rows if r["features"] == feature)
        ax.plot([p[0] for p in points], [math.nan if p[1] is None else p[1] for p in points], marker="o",
                markersize=3, label=feature)
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers are whole numbers
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel("Pearson r over language pairs")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fit_layout(fig)
    return fig


def draw_graphs(similarity: SimilarityMatrix, thetas: Sequence[float], path: Path) -> Path:
    """Fig. 3: the graph of Eq. 1 at each θ, nodes coloured by connected component."""
    fig, axes = plt.subplots(1, len(thetas), figsize=(4.2 * len(thetas), 4.2), squeeze=False)
    languages = list(similarity.languages)
    for ax, theta in zip(axes[0], thetas):
        graph = threshold_graph(similarity.values, languages, theta)
        parts = components(graph, languages)
        colour = {lang: i for i, part in enumerate(parts) for lang in part}
        layout = nx.spring_layout(graph, seed=0, k=1.5 / math.sqrt(max(len(languages), 1)))
        nx.draw_networkx_edges(graph, layout, ax=ax, alpha=0.35)
        nx.draw_networkx_nodes(graph, layout, ax=ax, node_size=260, cmap="tab20", vmin=0, vmax=19,
                               node_color=[colour[lang] % 20 for lang in graph.nodes])
        nx.draw_networkx_labels(graph, layout, ax=ax, font_size=7)
        single = sum(1 for part in parts if len(part) == 1)
        ax.set_title(f"θ = {theta:g}: {graph.number_of_edges()} edges, {len(parts)} subgraphs, {single} single",
                     fontsize=8)
        ax.axis("off")
    return _save(fig, path)


def sweep_figure(results: Sequence[GraphCorrelation], path: Path, title: str, tokens_label: str = "tokens") -> Path:
    """Fig. 4: intra-topology ρ_G (solid) and cross-topology r (dashed) per metric across θ (top);
    subgraph and single-point counts (bottom). Undefined values leave gaps. ``tokens_label`` names
    what stands for data volume (the demo's: a speaker-population STAND-IN, said on the axis)."""
    thetas = [r.theta for r in results]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, height_ratios=[2, 1])
    metrics = list(results[0].metrics) if results else []
    for i, name in enumerate(metrics):
        colour = f"C{i % 10}"
        intra = [np.nan if r.metrics[name].rho_g is None else r.metrics[name].rho_g for r in results]
        cross = [np.nan if r.metrics[name].cross_r is None else r.metrics[name].cross_r for r in results]
        top.plot(thetas, intra, color=colour, marker="o", markersize=3, label=f"{name} intra (ρ_G)")
        top.plot(thetas, cross, color=colour, marker="x", markersize=3, linestyle="--", label=f"{name} cross (r)")
    top.axhline(0, color="grey", linewidth=0.5)
    top.set_ylim(-1.05, 1.05)
    top.set_ylabel(f"correlation with {tokens_label}", fontsize=8)
    top.set_title(title, fontsize=9)
    top.legend(fontsize=6, ncol=2)
    bottom.plot(thetas, [r.n_subgraphs for r in results], marker="o", markersize=3, label="# subgraph")
    bottom.plot(thetas, [r.n_single_points for r in results], marker="s", markersize=3, label="# single point")
    bottom.set_xlabel("threshold θ")
    bottom.set_ylabel("count")
    bottom.legend(fontsize=7)
    return _save(fig, path)


def grid_figure(cells: Sequence[dict], path: Path, title: str) -> Path:
    """``graph grid``: ``grid_panels`` saved as PNG (+ SVG, PDF)."""
    return save_png(grid_panels(cells, title), path)


def grid_panels(cells: Sequence[dict], title: str):
    """Intra-topology ρ_G over layer (rows) × θ (columns), one panel per metric (figure rows) and
    prompt length (figure columns, named in each panel's title). The one colour map of every page
    (``CMAP``: blue = higher); a cell where ρ_G is undefined is hatched grey, and the legend says
    so (the reason is in grid.csv). Constrained layout keeps the title off the panels' titles."""
    metrics = list(dict.fromkeys(c["metric"] for c in cells))
    lengths = sorted({c["prefix_tokens"] for c in cells})
    layers = sorted({c["layer"] for c in cells})
    thetas = sorted({c["theta"] for c in cells})
    fig, axes = plt.subplots(len(metrics), len(lengths), squeeze=False, layout="constrained",
                             figsize=(1.6 + 0.35 * len(thetas) * len(lengths) + 1.0 * len(lengths),
                                      1.2 + (0.9 + 0.22 * len(layers)) * len(metrics)))
    image = None
    undefined = False
    for i, metric in enumerate(metrics):
        for j, n in enumerate(lengths):
            values = np.full((len(layers), len(thetas)), np.nan)
            for c in cells:
                if c["metric"] == metric and c["prefix_tokens"] == n and c["rho_g"] is not None:
                    values[layers.index(c["layer"]), thetas.index(c["theta"])] = c["rho_g"]
            ax = axes[i][j]
            image = ax.imshow(np.ma.masked_invalid(values), cmap=CMAP, vmin=-1, vmax=1, aspect="auto")
            for row, col in zip(*np.nonzero(np.isnan(values))):
                ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, **MISSING))
                undefined = True
            step = max(1, len(thetas) // 8)
            ax.set_xticks(range(0, len(thetas), step), [f"{t:g}" for t in thetas[::step]], fontsize=6)
            ax.set_yticks(range(len(layers)), [str(layer) for layer in layers], fontsize=6)
            ax.set_title(f"{metric}, {n}-token prompt", fontsize=8)
            if i == len(metrics) - 1:
                ax.set_xlabel("θ", fontsize=7)
            if j == 0:
                ax.set_ylabel("layer", fontsize=7)
    if image is not None:
        fig.colorbar(image, ax=axes, fraction=0.03, label="ρ_G (intra): blue = higher")
    if undefined:
        fig.legend(handles=[Patch(label="ρ_G undefined (reason in grid.csv)", **{**MISSING, "linewidth": 0.5})],
                   loc="outside lower center", fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=9)
    return fig
