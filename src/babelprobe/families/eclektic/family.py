"""ECLeKTiC cross-lingual transfer (data/eclektic.py, probes/eclektic.py, analysis/eclektic.py):
every question in every setting, then a second stage in which each judge rules on every answer."""

from __future__ import annotations

from pathlib import Path
from babelprobe.families.eclektic.config import DEMO_ECLEKTIC, EclekticConfig
from babelprobe.families.eclektic.data import EclekticRow, load_eclektic
from babelprobe.families.eclektic.release import RELEASE
from babelprobe.families.base import (BundledDataset, DemoRun, Family, Plan, Stage, StageContext, response_of,
                                      sample_groups)
from babelprobe.models.base import GenerateResult, request_key
from babelprobe.families.eclektic.metrics import parse_judge
from babelprobe.families.eclektic.probe import (
    EclekticProbe, EclekticRecord, judge_controls, judge_request, with_controls, with_judgements,
)

DEMO_JUDGE = "bundled:smollm2-135m-instruct"
AnsweredPairs = list[tuple[EclekticRow, EclekticRecord]]  # the answer stage's (EclekticProbe's records)


def judge(config: EclekticConfig, pairs: AnsweredPairs, context: StageContext) -> AnsweredPairs:
    """Every answered record gets one verdict per judge; a judge that fails makes it an error.
    Each judge also rules on known-wrong controls of every (question, target language) answered
    (probe.judge_controls); their majority verdicts go on that row's records."""
    answered = [i for i, (_, rec) in enumerate(pairs) if rec.error is None]
    verdicts: dict[int, list[str]] = {i: [] for i in answered}
    failures: dict[int, str] = {}
    rows = {(row.q_id, row.target_language): row for i in answered for row in (pairs[i][0],)}
    by_language: dict[str, list[EclekticRow]] = {}
    for row in rows.values():
        by_language.setdefault(row.target_language, []).append(row)
    controls = {key: judge_controls(row, by_language[row.target_language]) if config.judge_controls else []
                for key, row in rows.items()}
    control_votes: dict[tuple[str, str], list[list[bool]]] = {key: [] for key in controls}
    for backend in context.backends:
        requests = {i: judge_request(pairs[i][0], pairs[i][1].prediction or "", backend.has_chat_template,
                                     config.judge_max_tokens) for i in answered}
        control_requests = {(key, n): judge_request(rows[key], answer, backend.has_chat_template, config.judge_max_tokens)
                            for key, wrong in controls.items() for n, (_, answer) in enumerate(wrong)}
        outcomes = context.answer([*requests.values(), *control_requests.values()], backend)
        for i, request in requests.items():
            got = outcomes[request_key(request)]
            if got.error:
                failures[i] = f"judge {backend.fingerprint.spec} failed: {got.error}"
            else:
                verdicts[i].append(response_of(got, GenerateResult).text)
        for key, wrong in controls.items():
            # a failed control request counts as refused: it is a check on the judge, not a verdict
            votes = [outcomes[request_key(control_requests[(key, n)])] for n in range(len(wrong))]
            control_votes[key].append([o.error is None and
                                       parse_judge(response_of(o, GenerateResult).text, rows[key].target_language) is True
                                       for o in votes])
    accepted = {key: [sum(votes[n] for votes in per_judge) > len(per_judge) / 2 for n in range(len(controls[key]))]
                for key, per_judge in control_votes.items()}
    out = []
    for i, (row, rec) in enumerate(pairs):
        if i in failures:
            rec = rec.model_copy(update={"error": failures[i]})
        elif i in verdicts:
            rec = with_judgements(rec, verdicts[i])
            key = (row.q_id, row.target_language)
            if controls[key]:
                rec = with_controls(rec, [name for name, _ in controls[key]], accepted[key])
        out.append((row, rec))
    return out


class EclekticFamily(Family[EclekticConfig]):
    name = "eclektic"
    help = "Cross-lingual knowledge transfer (ECLeKTiC): closed-book QA, hint ablations, string and judge metrics."
    config = EclekticConfig
    item_noun = "questions"
    datasets = (BundledDataset("eclektic-demo", DEMO_ECLEKTIC, "30 illustrative questions written for babelprobe: "
                               "6 questions x en, de, ru, ja, zh"),)
    releases = (RELEASE,)

    def load(self, config: EclekticConfig) -> list[EclekticRow]:
        rows = load_eclektic(config.data, config.columns, need_context="open-book" in config.settings,
                             langs=config.langs, need_target_context=bool(config.judges))
        return sample_groups(rows, lambda r: r.q_id, config.limit, config.seed)

    def describe(self, items: list[EclekticRow]) -> str:
        return f"{len({r.q_id for r in items})} questions, {len(items)} rows"

    def request_kinds(self, config: EclekticConfig) -> frozenset[str]:
        return EclekticProbe.request_kinds

    def stages(self, config: EclekticConfig) -> list[Stage]:
        """Every question in every setting, then each judge rules on every answer (§3, Fig. 9)."""
        judges = Stage("judge", lambda config: frozenset({"generate"}), judge, models=lambda config: list(config.judges),
                       batch_size=lambda config: config.judge_batch_size)
        return [*super().stages(config), judges]

    def plans(self, config: EclekticConfig, backend, items: list[EclekticRow]) -> list[Plan]:
        chat = backend.has_chat_template if config.chat is None else config.chat
        if chat and not backend.has_chat_template:
            raise ValueError(f"--chat: {backend.fingerprint.spec} has no chat template")
        return [Plan(EclekticProbe(setting, chat=chat, max_tokens=config.max_tokens), items, label=setting)
                for setting in config.settings]

    def summarise(self, items, config: EclekticConfig):
        from babelprobe.families.eclektic.analysis import summarise_eclektic

        return summarise_eclektic(items, config.judges, seed=config.seed)

    def print_summary(self, summary, manifest, console) -> None:
        from babelprobe.families.eclektic.report import print_eclektic_summary

        print_eclektic_summary(summary, manifest, console)

    comparable = True

    def compare_runs(self, a, b, items_a, items_b, console) -> None:
        from babelprobe.families.eclektic.analysis import compare_eclektic
        from babelprobe.report.compare import print_paired

        print_paired(compare_eclektic(items_a, items_b), console,
                     "ECLeKTiC overall success (%), B - A on the same cross-lingual pairs")
        judged = [name for name, items in (("A", items_a), ("B", items_b))
                  if "judge_correct" in items and items["judge_correct"].notna().any()]
        if len(judged) == 1:
            console.print(f"judge overall: not compared, only run {judged[0]} was judged (rerun the other with "
                          "--judge to compare the judge's metric)", highlight=False)

    def figures(self, summary, out: Path) -> list[Path]:
        from babelprobe.families.eclektic.report import eclektic_figures

        return eclektic_figures(summary, out)

    def html_sections(self, summary, items, manifest):
        from babelprobe.families.eclektic.report import eclektic_sections

        return eclektic_sections(summary, items)

    def profile_metrics(self, summary, items):
        from babelprobe.families.eclektic.report import eclektic_profile

        return eclektic_profile(summary, items)

    def smoke_config(self, out: Path) -> EclekticConfig:
        return EclekticConfig(out=out, limit=2, max_tokens=8, judges=["bundled:smollm2-135m-instruct"],
                              settings=["closed-book", "general-hint"], figures=False)

    def demo(self, out: Path, model: str, device: str) -> list[DemoRun]:
        # every answer in one generation batch: a batch runs until its longest answer ends, so fewer
        # batches mean fewer steps (the answers are the same as with the default 8 on this set)
        config = EclekticConfig(model=model, data=DEMO_ECLEKTIC, settings=["closed-book", "source-language-name"],
                                judges=[DEMO_JUDGE], out=out / "eclektic", device=device, overwrite=True,
                                batch_size=64)
        return [DemoRun("eclektic: closed-book and source-language-name hint, judge " + DEMO_JUDGE, config)]


    def commands(self, root) -> None:
        from babelprobe.families.eclektic.commands import register

        register(root, self)

family = EclekticFamily()
