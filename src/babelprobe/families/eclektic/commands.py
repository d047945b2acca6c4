"""ECLeKTiC's own commands: ``babelprobe rescore eclektic`` and ``babelprobe size-curve`` (Fig. 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from babelprobe.commands import console, fail, out_dir, unwritable
from babelprobe.data.validation import DatasetError
from babelprobe.families.base import CommandRoot, Family


def register(root: CommandRoot, family: Family) -> None:
    rescore_app = root.group("rescore")

    @rescore_app.command("eclektic")
    def rescore_eclektic(
        file: Path = typer.Argument(..., help="predictions JSONL: q_id, original_language, target_language, answer, prediction"),
        columns: Optional[str] = typer.Option(None, help="column mapping FIELD=COLUMN (fields: q_id, source_language, target_language, answer, prediction)"),
        out: Optional[Path] = typer.Option(None, help="also write items.parquet and summary.json here"),
    ) -> None:
        """String-metric overall success and transfer score of saved predictions (the official notebook's input)."""
        from babelprobe import store  # pandas: imported when the command runs, not for --help
        from babelprobe.families.eclektic.analysis import rescore_predictions
        from babelprobe.families.eclektic.report import print_eclektic_summary

        try:
            items, summary = rescore_predictions(file, columns)
        except (DatasetError, ValueError) as exc:
            fail(str(exc))
        print_eclektic_summary(summary, None, console)
        if out is not None:
            out_dir(out)
            items.to_parquet(out / store.ITEMS)
            store.write_json(out / store.SUMMARY, summary)
            console.print(f"results: {out}")

    @root.app.command("size-curve")
    def size_curve_command(
        run_dirs: list[Path] = typer.Argument(..., help="eclektic run directories of one model family, any order"),
        out: Path = typer.Option(Path("size_curve.png"), help="figure to write"),
        setting: str = typer.Option("closed-book", help="which setting to plot"),
    ) -> None:
        """Overall success and transfer score against model size (ECLeKTiC Fig. 6)."""
        from babelprobe.families.eclektic.analysis import EclekticSummary
        from babelprobe.families.eclektic.report import size_curve
        from babelprobe.stored_runs import RunError, read_runs

        table = Table(title=f"size curve ({setting})")
        for col in ("model", "parameters", "overall %", "transfer %"):
            table.add_column(col)
        points = []
        try:
            stored_runs = read_runs(run_dirs, family)
        except RunError as exc:
            fail(str(exc))
        for run_dir, stored in zip(run_dirs, stored_runs):
            manifest, summary = stored.manifest, stored.summary
            assert isinstance(summary, EclekticSummary)  # read_runs summarised it with this family
            if not manifest.model_parameters:
                fail(f"{run_dir}: not an eclektic run with a known model size")
            chosen = next((s for s in summary.settings if s.setting == setting), None)
            if chosen is None:
                fail(f"{run_dir}: has no {setting!r} results")
            scores = chosen.judge or chosen.string
            points.append((manifest.model.spec, manifest.model_parameters, scores.overall.value, scores.transfer.value))
        for spec, size, overall, transfer in sorted(points, key=lambda p: p[1]):
            table.add_row(spec, f"{size:,}", f"{100 * overall:.1f}", f"{100 * transfer:.1f}")
        console.print(table)
        try:
            console.print(f"figure: {size_curve(points, out)}")
        except OSError as exc:
            unwritable(out, exc)
