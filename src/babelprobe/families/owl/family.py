"""OWL literary recall (data/owl.py, probes/owl.py, analysis/owl.py): direct probing, name cloze
and prefix probing, each in every perturbation that applies to it."""

from __future__ import annotations

from pathlib import Path

from babelprobe.families.owl.config import DEMO_OWL, OwlConfig
from babelprobe.families.owl.data import OwlItem, load_owl
from babelprobe.data.validation import DatasetError, Problem
from babelprobe.families.owl.release import RELEASE
from babelprobe.families.base import BundledDataset, DemoRun, Family, Plan, sample_groups
from babelprobe.families.owl.probe import OwlProbe, task_perturbations


class OwlFamily(Family[OwlConfig]):
    name = "owl"
    help = "Literary recall (OWL): direct probing, name cloze and prefix probing, with perturbations."
    config = OwlConfig
    item_noun = "passages"
    datasets = (BundledDataset("owl-demo", DEMO_OWL,
                               "12 public-domain passages (pre-1929) from 5 books, aligned across 6 languages"),)
    releases = (RELEASE,)
    comparable = True

    def load(self, config: OwlConfig) -> list[OwlItem]:
        items = load_owl(config.data, config.langs)
        items = sample_groups(items, lambda i: (i.book_id, i.passage_id), config.limit, config.seed)
        if config.presence is not None:
            from babelprobe.families.owl.presence import attach_presence

            items = attach_presence(items, config.presence)
        probes = [OwlProbe(task, perturbation, config.shots) for task, perturbation in task_perturbations(config)]
        if config.modality == "audio":  # OWL §2.4: English audio (families/owl/audio.py)
            from babelprobe.families.owl.audio import check_audio_run

            items = check_audio_run(config, items)
        if items and not any(probe.applies(i) for probe in probes for i in items):
            raise DatasetError([Problem(str(config.data), None, "names", "no passage has a character name, which "
                                        f"{', '.join(f'{p.task}/{p.perturbation}' for p in probes)} need")])
        return items

    def describe(self, items: list[OwlItem]) -> str:
        return f"{len(items)} passage versions of {len({p.book_id for p in items})} books"

    def request_kinds(self, config: OwlConfig) -> frozenset[str]:
        return OwlProbe.request_kinds | ({"audio_generate"} if config.modality == "audio" else set())

    def plans(self, config: OwlConfig, backend, items: list[OwlItem]) -> list[Plan]:
        plans = []
        for task, perturbation in task_perturbations(config):
            probe = OwlProbe(task, perturbation, config.shots, chat=backend.has_chat_template, seed=config.seed,
                             max_tokens=config.prefix_max_tokens if task == "prefix" else config.max_tokens)
            plans.append(Plan(probe, [i for i in items if probe.applies(i)], label=f"{task}/{perturbation}"))
        if config.modality == "audio":
            from babelprobe.families.owl.audio import audio_plans

            plans = audio_plans(config, plans, items)
        return plans

    def summarise(self, items, config: OwlConfig):
        from babelprobe.families.owl.analysis import summarise_owl

        return summarise_owl(items, config.bootstrap_resamples, config.seed)

    def print_summary(self, summary, manifest, console) -> None:
        from babelprobe.families.owl.report import print_owl_summary

        print_owl_summary(summary, manifest, console)

    def figures(self, summary, out: Path) -> list[Path]:
        from babelprobe.families.owl.report import owl_figures

        return owl_figures(summary, out)

    def manifest_fields(self, config: OwlConfig) -> dict:
        return {"length_tokenizer": "o200k_base (bpe-openai)"}

    def compare(self, a, b, console) -> None:
        from babelprobe.families.owl.analysis import compare_owl
        from babelprobe.families.owl.report import print_deltas

        print_deltas(compare_owl(a, b), console)

    def html_sections(self, summary, items, manifest):
        from babelprobe.families.owl.report import owl_sections

        return owl_sections(summary, items)

    def profile_metrics(self, summary, items):
        from babelprobe.families.owl.report import owl_profile

        return owl_profile(summary)

    def smoke_config(self, out: Path) -> OwlConfig:
        return OwlConfig(out=out, limit=1, max_tokens=8, prefix_max_tokens=8, bootstrap_resamples=500, figures=False)

    def demo(self, out: Path, model: str, device: str) -> list[DemoRun]:
        return [DemoRun("owl: direct probing, name cloze, prefix probing",
                        OwlConfig(model=model, data=DEMO_OWL, out=out / "owl", device=device, overwrite=True))]


    def commands(self, root) -> None:
        from babelprobe.families.owl.commands import register

        register(root, self)

family = OwlFamily()
