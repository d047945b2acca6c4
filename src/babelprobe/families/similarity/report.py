"""Language similarity's terminal tables and HTML report sections (Shared Path §4.1, App. B.4)."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table

from babelprobe.families.similarity.analysis import SimilaritySummary, neighbours
from babelprobe.report.sections import ItemTable, Section, Table as HtmlTable, figure, n_note, verdict_error
from babelprobe.report.terminal import plain, titled as _titled
from babelprobe.store import Manifest

def print_similarity_summary(summary: SimilaritySummary, manifest: Manifest | None = None,
                             console: Console | None = None) -> None:
    """Final-layer similarity (rounded) and the typology correlation per layer."""
    console = console or Console()
    final = summary.layer()
    if final is None:
        console.print(f"language similarity: no matrix: {plain(summary.undefined_reason)}; errors per language: "
                      + ", ".join(f"{plain(k)} {v}" for k, v in summary.errors.items()))
        return
    title = f"language similarity, layer {final.layer}, rank {summary.rank} (cosine in the language-specific subspace)"
    table = _titled(title, manifest)
    table.add_column("")
    # a matrix wider than the terminal is all ellipses: then each language's nearest and farthest
    if 6 + 7 * len(final.languages) <= console.width:
        for lang in final.languages:
            table.add_column(plain(lang), justify="right")
        for lang, row in zip(final.languages, final.matrix):
            table.add_row(plain(lang), *(f"{v:.2f}" for v in row))
    else:
        table.add_column("most similar")
        table.add_column("least similar")
        for lang, others in neighbours(final).items():
            table.add_row(plain(lang), " ".join(f"{plain(o)} {v:.2f}" for o, v in others[:3]),
                          " ".join(f"{plain(o)} {v:.2f}" for o, v in others[-2:]))
    console.print(table)
    if summary.typology:
        features = sorted({t.features for t in summary.typology})
        typ = Table(title=f"Pearson r with {summary.typology_source} similarity over language pairs")
        typ.add_column("layer")
        for name in features:
            typ.add_column(name, justify="right")
        for layer in summary.layers:
            cells = {t.features: t for t in summary.typology if t.layer == layer}
            typ.add_row(str(layer), *("—" if cells[f].pearson_r is None else f"{cells[f].pearson_r:+.2f}"
                                      for f in features))
        console.print(typ)
        unknown = {k: v for k, v in summary.typology_unknown_languages.items() if v}
        if unknown:
            console.print(f"not in {summary.typology_source}: "
                          + "; ".join(f"{plain(k)}: " + ", ".join(plain(x) for x in v) for k, v in unknown.items()))



# --- HTML report sections and profile metrics ---

def similarity_sections(summary: SimilaritySummary, items: pd.DataFrame) -> list[Section]:
    """Shared Path §4.1 / App. B.4: the final layer's matrix (heatmap) with each language's
    nearest and farthest languages, the typology correlation per layer (Figs. 5-8), and the
    parallel sentences that were encoded."""
    from babelprobe.families.similarity.graph_figures import similarity_heatmap_figure, typology_by_layer_figure

    final = summary.layer()
    rows = [[str(r.id), r.language, r.text, verdict_error(r.error) or ""] for r in items.itertuples(index=False)]
    table = ItemTable(["id", "language", "sentence", "error"], rows, filters=["language"])
    if final is None:  # every sentence (of all but one language) errored: the counts and the items
        return [Section("Language similarity (Shared Path §4.1, App. B.4)",
                        [f"no matrix: {summary.undefined_reason}",
                         "errors per language: " + ", ".join(f"{k} {v}" for k, v in summary.errors.items())]),
                Section("items", ["every parallel sentence whose hidden states were pooled"], items=table)]
    near = neighbours(final)
    nearest = HtmlTable(f"layer {final.layer}: each language's most and least similar languages (cosine in the "
                    f"language-specific subspace, rank {summary.rank})",
                    ["language", "sentences", "most similar", "least similar"],
                    [[lang, n_note(summary.n_sentences.get(lang, 0)).removeprefix(", n = "), ", ".join(f"{o} {v:.2f}" for o, v in others[:3]),
                      ", ".join(f"{o} {v:.2f}" for o, v in others[-2:])] for lang, others in near.items()])
    figures = [figure(similarity_heatmap_figure(final.as_matrix(), f"layer {final.layer}, rank {summary.rank}"))]
    tables = [nearest]
    if summary.typology:
        features = sorted({t.features for t in summary.typology})
        cells = {(t.layer, t.features): t for t in summary.typology}
        tables.append(HtmlTable(f"Pearson r with {summary.typology_source} similarity over language pairs, per layer",
                            ["layer", *features],
                            [[str(layer), *("-" if cells[layer, f].pearson_r is None else
                                            f"{cells[layer, f].pearson_r:+.2f} (pairs {cells[layer, f].n_pairs})"
                                            for f in features)] for layer in summary.layers]))
        if len(summary.layers) > 1:
            figures.append(figure(typology_by_layer_figure([t.model_dump() for t in summary.typology],
                                                           f"model vs {summary.typology_source} similarity")))
    paragraphs = [f"{len(summary.languages)} languages, {sum(summary.n_sentences.values())} sentences, "
                  f"layers {', '.join(map(str, summary.layers))}"]
    unknown = {k: v for k, v in summary.typology_unknown_languages.items() if v}
    if unknown:
        paragraphs.append("not in " + summary.typology_source + ": " +
                          "; ".join(f"{k}: {', '.join(v)}" for k, v in unknown.items()))
    return [Section("Language similarity (Shared Path §4.1, App. B.4)", paragraphs, tables, figures),
            Section("items", ["every parallel sentence whose hidden states were pooled"], items=table)]
