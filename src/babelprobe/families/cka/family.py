"""Contrastive knowledge assessment on Polyglot-or-Not (data/cka.py, probes/cka.py, analysis/cka.py)."""

from __future__ import annotations

from pathlib import Path

from babelprobe.families.cka.config import DEMO_CKA, CKAConfig
from babelprobe.data.polyglot_or_not import CKAFact, load_cka_facts
from babelprobe.families.cka.release import RELEASE
from babelprobe.data.validation import Problem
from babelprobe.families.base import BundledDataset, DemoRun, Family, Plan
from babelprobe.families.cka.probe import CKAProbe


# the longest context of the bundled models (Gemma 3 270M: 32,768 tokens; SmolLM2-135M: 8,192)
BUNDLED_CONTEXT_TOKENS = 32_768


class CKAFamily(Family[CKAConfig]):
    name = "cka"
    help = "Contrastive knowledge assessment (Polyglot-or-Not): P(true) vs mean P(false)."
    config = CKAConfig
    item_noun = "facts"
    datasets = (BundledDataset("polyglot-or-not-demo", DEMO_CKA,
                               "300 Polyglot-or-Not facts: the same 50 in en, de, fr, es, ru, uk (Apache-2.0)"),)
    releases = (RELEASE,)

    def load(self, config: CKAConfig) -> list[CKAFact]:
        # --limit is per language, drawn inside the loader (the release files are ordered by source)
        return load_cka_facts(config.data, config.langs, config.limit, config.seed)

    def describe(self, items: list[CKAFact]) -> str:
        langs = sorted({f.language for f in items})
        named = sorted({f.language for f in items if f.language_from_file_name})
        said = f" (language {', '.join(named)} taken from the file name, as --langs asked)" if named else ""
        return f"{len(items)} facts in {len(langs)} language(s): {', '.join(langs)}{said}"

    def input_notes(self, items: list[CKAFact]) -> list[str]:
        named = sorted({f.language for f in items if f.language_from_file_name})
        return [f"language {', '.join(named)} taken from the file name, as --langs asked"] if named else []

    def flagged(self, items: list[CKAFact]) -> list[Problem]:
        """Facts left out of the scores: a false object equal to the true one (excluded), and a stem
        too long for the bundled models' context at the most generous token length
        (``models.tokenization.PREFIX_CHARS_PER_TOKEN`` characters a token): it loads, and ``run``
        makes it an error row after tokenizing a bounded prefix; a longer-context model may take it."""
        from babelprobe.models.tokenization import PREFIX_CHARS_PER_TOKEN

        longest = BUNDLED_CONTEXT_TOKENS * PREFIX_CHARS_PER_TOKEN
        flags = []
        for fact in items:
            file, _, row = fact.source.rpartition(":")
            if fact.excluded:
                flags.append(Problem(file, int(row), "false", f"excluded from the scores: {fact.excluded}"))
            stem = max(fact.stems, key=len)
            if len(stem) > longest:
                flags.append(Problem(file, int(row), "stem", (
                    f"{len(stem):,} characters: longer than {BUNDLED_CONTEXT_TOKENS:,} tokens (the bundled models' "
                    f"context) even at {PREFIX_CHARS_PER_TOKEN} characters a token; run makes it an error row "
                    "unless the model's context is longer")))
        return flags

    def request_kinds(self, config: CKAConfig) -> frozenset[str]:
        return CKAProbe(config.mode).request_kinds

    def plans(self, config: CKAConfig, backend, items: list[CKAFact]) -> list[Plan]:
        return [Plan(CKAProbe(config.mode), items)]

    def summarise(self, items, config: CKAConfig):
        from babelprobe.families.cka.analysis import summarise_cka

        return summarise_cka(items, config.bootstrap_resamples, config.seed)

    def print_summary(self, summary, manifest, console) -> None:
        from babelprobe.families.cka.report import print_cka_summary

        print_cka_summary(summary, manifest, console)

    comparable = True

    def compare_runs(self, a, b, items_a, items_b, console) -> None:
        from babelprobe.families.cka.analysis import compare_cka
        from babelprobe.report.compare import print_paired

        modes = f"{a.mode} mode" if a.mode == b.mode else f"A: {a.mode} mode, B: {b.mode} mode"
        print_paired(compare_cka(items_a, items_b), console, f"CKA accuracy ({modes}), B - A on the same facts")

    def html_sections(self, summary, items, manifest):
        from babelprobe.families.cka.report import cka_sections

        return cka_sections(summary, items)

    def profile_metrics(self, summary, items):
        from babelprobe.families.cka.report import cka_profile

        return cka_profile(summary)

    def smoke_config(self, out: Path) -> CKAConfig:
        return CKAConfig(out=out, langs=["en", "ru"], limit=4, bootstrap_resamples=500)

    def demo(self, out: Path, model: str, device: str) -> list[DemoRun]:
        return [DemoRun(f"cka, {mode} mode", CKAConfig(model=model, data=DEMO_CKA, mode=mode, out=out / f"cka-{mode}",
                                                       device=device, overwrite=True))
                for mode in ("first-token", "full")]


family = CKAFamily()
