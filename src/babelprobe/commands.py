"""What every command shares: the consoles and the one-line user error (exit 2). The generic
commands live in cli.py, each family's own in families/<name>/commands.py."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

console = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    from babelprobe.redaction import redact_text  # a --base-url's credentials are never printed

    from babelprobe.report.terminal import plain  # a dataset's text in the message is data, not markup

    err.print(f"[bold red]error:[/bold red] {plain(redact_text(message))}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def unwritable(out: Path, exc: OSError) -> NoReturn:
    fail(f"--out {out}: cannot write there ({exc.strerror or exc})")


def out_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        unwritable(out, exc)
