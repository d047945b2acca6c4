"""ECLeKTiC cross-lingual transfer (data/eclektic.py, probes/eclektic.py, analysis/eclektic.py):
every question in every setting, then a second stage in which each judge rules on every answer."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from babelprobe.config import DEMO_ECLEKTIC, EclekticConfig
from babelprobe.data.eclektic import EclekticRow, load_eclektic
from babelprobe.families.base import BundledDataset, DemoRun, Family, Pairs, Plan, SecondStage, sample_groups
from babelprobe.models.base import Backend, request_key
from babelprobe.probes.eclektic import EclekticProbe, judge_request, with_judgements
from babelprobe.runner import Runner

DEMO_JUDGE = "bundled:smollm2-135m-instruct"


def judge(config: EclekticConfig, pairs: Pairs, judges: list[Backend], runner_for: Callable[[Backend], Runner]) -> Pairs:
    """Every answered record gets one verdict per judge; a judge that fails makes it an error."""
    answered = [i for i, (_, rec) in enumerate(pairs) if rec.error is None]
    verdicts: dict[int, list[str]] = {i: [] for i in answered}
    failures: dict[int, str] = {}
    for backend in judges:
        requests = {i: judge_request(pairs[i][0], pairs[i][1].prediction or "", backend.has_chat_template,
                                     config.judge_max_tokens) for i in answered}
        outcomes = runner_for(backend).run(requests.values())
        for i, request in requests.items():
            got = outcomes[request_key(request)]
            if got.error:
                failures[i] = f"judge {backend.fingerprint.spec} failed: {got.error}"
            else:
                verdicts[i].append(got.response.text)
    out = []
    for i, (row, rec) in enumerate(pairs):
        if i in failures:
            rec = rec.model_copy(update={"error": failures[i]})
        elif i in verdicts:
            rec = with_judgements(rec, verdicts[i])
        out.append((row, rec))
    return out


class EclekticFamily(Family[EclekticConfig]):
    name = "eclektic"
    help = "Cross-lingual knowledge transfer (ECLeKTiC): closed-book QA, hint ablations, string and judge metrics."
    config = EclekticConfig
    item_noun = "questions"
    datasets = (BundledDataset("eclektic-demo", DEMO_ECLEKTIC, "30 illustrative questions written for babelprobe: "
                               "6 questions x en, de, ru, ja, zh"),)
    second_stage = SecondStage(name="judge", models=lambda config: list(config.judges), run=judge,
                               request_kinds=frozenset({"generate"}), batch_size=lambda config: config.judge_batch_size)

    def load(self, config: EclekticConfig) -> list[EclekticRow]:
        rows = load_eclektic(config.data, config.columns, need_context="open-book" in config.settings,
                             langs=config.langs, need_target_context=bool(config.judges))
        return sample_groups(rows, lambda r: r.q_id, config.limit, config.seed)

    def describe(self, items: list[EclekticRow]) -> str:
        return f"{len({r.q_id for r in items})} questions, {len(items)} rows"

    def plans(self, config: EclekticConfig, backend, items: list[EclekticRow]) -> list[Plan]:
        chat = backend.has_chat_template if config.chat is None else config.chat
        if chat and not backend.has_chat_template:
            raise ValueError(f"--chat: {backend.fingerprint.spec} has no chat template")
        return [Plan(EclekticProbe(setting, chat=chat, max_tokens=config.max_tokens), items, label=setting)
                for setting in config.settings]

    def summarise(self, items, config: EclekticConfig):
        from babelprobe.analysis.eclektic import summarise_eclektic

        return summarise_eclektic(items, config.judges, seed=config.seed)

    def print_summary(self, summary, manifest, console) -> None:
        from babelprobe.report.terminal import print_eclektic_summary

        print_eclektic_summary(summary, manifest, console)

    def figures(self, summary, out: Path) -> list[Path]:
        from babelprobe.report.figures import eclektic_figures

        return eclektic_figures(summary, out)

    def html_sections(self, summary, items, manifest):
        from babelprobe.report.family_sections import eclektic_sections

        return eclektic_sections(summary, items)

    def profile_metrics(self, summary, items):
        from babelprobe.report.family_sections import eclektic_profile

        return eclektic_profile(summary, items)

    def demo(self, out: Path, model: str, device: str) -> list[DemoRun]:
        # one generation batch per setting: a batch runs until its longest answer ends, so fewer
        # batches mean fewer steps (the answers are the same as with the default 8 on this set)
        config = EclekticConfig(model=model, data=DEMO_ECLEKTIC, settings=["closed-book", "source-language-name"],
                                judges=[DEMO_JUDGE], out=out / "eclektic", device=device, overwrite=True,
                                batch_size=32)
        return [DemoRun("eclektic: closed-book and source-language-name hint, judge " + DEMO_JUDGE, config)]


family = EclekticFamily()
