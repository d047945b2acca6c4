"""Language similarity from the model's hidden states (Shared Path §4.1, App. A, App. B.4):
data/parallel.py, probes/similarity.py, metrics/subspace.py (Algorithm 1), analysis/similarity.py.

items.parquet keeps one row per sentence with its pooled vector at every requested layer, so the
per-language means, Algorithm 1 and the typology correlations are rebuilt from it by ``report``.
``similarity.csv`` (the final requested layer) is written in the SIM.csv layout of ``babelprobe
graph``, one ``similarity_layer{N}.csv`` per layer beside it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the CLI imports this family to list its commands (`--help`): pandas when a run writes
    import pandas as pd

from babelprobe.families.similarity.config import DEMO_PARALLEL, SimilarityConfig
from babelprobe.families.similarity.data import ParallelSentence, load_parallel
from babelprobe.families.base import BundledDataset, DemoRun, Family, Plan
from babelprobe.families.similarity.probe import SimilarityProbe
from babelprobe.families.similarity.release import RELEASE


def hidden_layer_count(backend) -> int:
    """Decoder layers of a transformers backend (HiddenStates index 0 is the embeddings)."""
    config = getattr(getattr(backend, "model", None), "config", None)
    text_config = config.get_text_config() if config is not None and hasattr(config, "get_text_config") else config
    count = getattr(text_config, "num_hidden_layers", None)
    if count is None:
        raise ValueError(f"{backend.fingerprint.spec}: cannot tell its number of layers; pass --layers as indices")
    return int(count)


def resolve_layers(layers: Literal["last", "all"] | list[int], count: int) -> tuple[int, ...]:
    """'last', 'all' or indices (negative from the end) as sorted indices 0..count."""
    if layers == "last":
        return (count,)
    if layers == "all":
        return tuple(range(count + 1))
    if isinstance(layers, str):  # the config refuses any other word
        raise ValueError(f"layers: 'last', 'all' or indices, not {layers!r}")
    resolved = set()
    for layer in layers:
        index = layer + count + 1 if layer < 0 else layer
        if not 0 <= index <= count:
            raise ValueError(f"layer {layer} out of range: the model has layers 0..{count} (0 = embeddings)")
        resolved.add(index)
    return tuple(sorted(resolved))


class SimilarityFamily(Family[SimilarityConfig]):
    name = "similarity"
    help = ("Language similarity from the model's hidden states (Shared Path §4.1, Algorithm 1), per layer, with "
            "its correlation to typological similarity (App. B.4). Writes similarity.csv for `babelprobe graph`.")
    config = SimilarityConfig
    item_noun = "parallel sentences"
    datasets = (BundledDataset("polyglot-or-not-parallel", DEMO_PARALLEL,
                               "100 Polyglot-or-Not stems, the same facts in 20 languages (Apache-2.0)"),)
    releases = (RELEASE,)  # FLORES+ (release.py: `datasets fetch flores-plus`)

    def load(self, config: SimilarityConfig) -> list[ParallelSentence]:
        sentences = load_parallel(config.data, config.langs, config.limit, config.seed)
        languages = {s.language for s in sentences}
        if config.rank is not None and config.rank > len(languages) - 1:
            raise ValueError(f"--rank {config.rank}: at most {len(languages) - 1} with {len(languages)} languages")
        return sentences

    def describe(self, items: list[ParallelSentence]) -> str:
        langs = list(dict.fromkeys(s.language for s in items))
        return f"{len({s.id for s in items})} parallel ids in {len(langs)} languages: {', '.join(langs)}"

    def request_kinds(self, config: SimilarityConfig) -> frozenset[str]:
        return SimilarityProbe.request_kinds

    def plans(self, config: SimilarityConfig, backend, items: list[ParallelSentence]) -> list[Plan]:
        probe = SimilarityProbe(resolve_layers(config.layers, hidden_layer_count(backend)), config.pooling)
        return [Plan(probe, items)]

    def summarise(self, items: pd.DataFrame, config: SimilarityConfig):
        from babelprobe.families.similarity.analysis import error_counts, language_means, summarise_similarity

        return summarise_similarity(language_means(items), config.rank, config.typology, error_counts(items),
                                    config.asjp, config.ldnd)

    def write_outputs(self, summary, config: SimilarityConfig) -> list[Path]:
        import pandas as pd

        from babelprobe.families.similarity.analysis import long_frame, write_matrix_csv

        out = config.out
        if summary.layer() is None:  # no matrix (summary.undefined_reason): nothing for `graph` to read
            return []
        paths = [write_matrix_csv(summary.layer(), out / "similarity.csv")]
        paths += [write_matrix_csv(layer, out / f"similarity_layer{layer.layer}.csv") for layer in summary.similarity]
        long_frame(summary).to_parquet(out / "similarity.parquet")
        pd.DataFrame([t.model_dump() for t in summary.typology]).to_csv(out / "typology.csv", index=False)
        return [*paths, out / "similarity.parquet", out / "typology.csv"]

    def figures(self, summary, out: Path) -> list[Path]:
        from babelprobe.families.similarity.graph_figures import similarity_heatmap, typology_by_layer

        if summary.layer() is None:
            return []
        paths = [similarity_heatmap(summary.layer().as_matrix(), f"layer {summary.final_layer}, rank {summary.rank}",
                                    out / "similarity.png")]
        if summary.typology and len(summary.layers) > 1:
            paths.append(typology_by_layer([t.model_dump() for t in summary.typology], out / "typology.png",
                                           f"model vs {summary.typology_source} similarity"))
        return paths

    def html_sections(self, summary, items, manifest):
        from babelprobe.families.similarity.report import similarity_sections

        return similarity_sections(summary, items)

    def print_summary(self, summary, manifest, console) -> None:
        from babelprobe.families.similarity.report import print_similarity_summary

        print_similarity_summary(summary, manifest, console)

    def smoke_config(self, out: Path) -> SimilarityConfig:
        return SimilarityConfig(out=out, langs=["en", "de", "ru"], limit=2, layers=[0, -1], typology="none",
                                figures=False)

    def demo(self, out: Path, model: str, device: str) -> list[DemoRun]:
        return [DemoRun("similarity: Polyglot-or-Not stems, the same 20 facts in 20 languages, every layer",
                        SimilarityConfig(model=model, data=DEMO_PARALLEL, limit=20, layers="all",
                                         out=out / "similarity", device=device, overwrite=True))]


    def commands(self, root) -> None:
        from babelprobe.families.similarity.graph_commands import graph_app

        root.app.add_typer(graph_app, name="graph")
        root.add_run_command(self, root.app)  # Shared Path's name for it: `babelprobe similarity`

    def demo_steps(self, out: Path) -> list:
        return [("graph", lambda: graph_demo(out / "similarity", out / "memorization", out / "graph"))]


family = SimilarityFamily()


def graph_demo(similarity_run: Path, memorization_run: Path, out: Path) -> None:
    """ρ_G at one θ and a θ sweep, with speaker population as a labelled STAND-IN for data volume."""
    from babelprobe.commands import console
    from babelprobe.families.similarity.signals import MEMORIZATION_CSV, STANDIN_TOKENS_CSV, read_similarity, \
        write_speaker_population_standin
    from babelprobe.families.similarity.graph_commands import correlate_command, sweep_command

    console.rule("graph: ρ_G and a θ sweep (tokens = STAND-IN: speaker population, NOT training data)")
    if not (memorization_run / MEMORIZATION_CSV).is_file():
        console.print(f"skipped: no {memorization_run / MEMORIZATION_CSV} (the memorization demo did not run)")
        return
    out.mkdir(parents=True, exist_ok=True)
    standin = out / STANDIN_TOKENS_CSV
    write_speaker_population_standin(list(read_similarity(similarity_run).languages), standin)
    console.print("data volume STAND-IN (language_data speaking population; give real token counts with --tokens):",
                  highlight=False)
    console.print(f"  {standin}", soft_wrap=True, highlight=False)  # a path stays whole, to be copied
    common: dict[str, Any] = dict(similarity=similarity_run, memorization=memorization_run, tokens=standin, tokens_scale="log",
                  layer=None, prefix_tokens=None, metrics=None, figures=True,
                  allow_missing=True)  # the demo's runs cover different languages: graph.json lists the dropped
    correlate_command(theta=0.5, out=out / "theta-0.5", **common)
    sweep_command(thetas="0.0:0.9:0.1", out=out / "sweep", **common)
