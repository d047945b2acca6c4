"""OWL's own commands: ``babelprobe convert owl-release`` and ``babelprobe rescore owl``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from babelprobe import store
from babelprobe.commands import console, fail, out_dir, unwritable
from babelprobe.config import comma_list
from babelprobe.data.validation import DatasetError
from babelprobe.families.base import CommandRoot
from babelprobe.families.owl.data import convert_owl_release
from babelprobe.report.terminal import plain


def register(root: CommandRoot) -> None:
    from babelprobe.families.owl.build.command import register as register_build

    register_build(root)  # `owl build` (build/command.py)
    rescore_app = root.group("rescore", "Score released or saved predictions without a model.")

    @rescore_app.command("owl")
    def rescore_owl(
        file: Path = typer.Argument(..., help="an OWL release prediction CSV (one book)"),
        task: str = typer.Option(..., help="direct, name-cloze or prefix"),
        title: list[str] = typer.Option([], "--title", help="gold title(s) when the file has no title columns"),
        author: Optional[str] = typer.Option(None, help="gold author when the file has no author_name column"),
        out: Optional[Path] = typer.Option(None, help="also write the scored rows as items.parquet here"),
    ) -> None:
        """Re-evaluate released OWL predictions with babelprobe's parsers and metrics."""
        from babelprobe.families.owl.analysis import rescore_release

        if task not in ("direct", "name-cloze", "prefix"):
            fail(f"unknown owl task {task!r}: direct, name-cloze, prefix")
        try:
            items, columns = rescore_release(file, task, title, author)
        except (DatasetError, ValueError) as exc:
            fail(str(exc))
        table = Table(title=f"OWL {task}: {plain(file.name)}")
        for col in ("column", "language", "variant", "n", "accuracy %" if task != "prefix" else "chrF++ / chrF"):
            table.add_column(col)
        for c in columns:
            score = f"{100 * c.accuracy:.1f}" if c.accuracy is not None else f"{c.chrf_pp:.1f} / {c.chrf:.1f}"
            table.add_row(plain(c.column), plain(c.language), plain(c.variant), str(c.n), score)
        console.print(table)
        if out is not None:
            out_dir(out)
            items.to_parquet(out / store.ITEMS)
            console.print(f"results: {out}")

    @root.app.command("convert")
    def convert_command(
        kind: str = typer.Argument(..., help="owl-release"),
        file: Path = typer.Argument(..., help="one book's CSV in the OWL release layout"),
        out: Path = typer.Option(..., help="JSONL to write (babelprobe's owl layout)"),
        book_id: str = typer.Option(..., help="short id of the book"),
        title: str = typer.Option(..., help="English title"),
        author: str = typer.Option(...),
        original: str = typer.Option(..., help="language code of the original"),
        official: str = typer.Option("", help="comma-separated codes of languages with an official translation"),
        year: Optional[int] = typer.Option(None, help="publication year"),
    ) -> None:
        """Convert an OWL release CSV (one column per language, Single_ent) into babelprobe's owl rows."""
        if kind != "owl-release":
            fail(f"unknown conversion {kind!r} (available: owl-release)")
        try:
            items = convert_owl_release(file, book_id, title, author, original, comma_list(official) or [], year)
        except DatasetError as exc:
            fail(str(exc))
        try:
            with out.open("w", encoding="utf-8") as handle:
                for item in items:
                    handle.write(item.model_dump_json(exclude={"source"}) + "\n")
        except OSError as exc:
            unwritable(out, exc)
        console.print(f"[green]ok[/green]: {len(items)} passage versions -> {out}")
