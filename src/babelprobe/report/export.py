"""``babelprobe report RUN --format csv|latex|md``: a run's summary tables (the tables of its HTML
report, ``Family.html_sections``) as files for a paper or a spreadsheet, from the stored run only.

- csv: one UTF-8 file per table, ``tables/NN_<title>.csv`` (pandas ``to_csv``);
- md: one ``tables.md``, each table under its title as a pipe table;
- latex: one ``tables.tex``, each table a ``table`` environment with its title as caption
  (pandas ``to_latex``, which needs jinja2, a dependency of the HTML reports; special characters
  escaped).

Cells are the report's text (value, 95% interval, n and the small-n flag), as every page shows them."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from babelprobe import store
from babelprobe.report.sections import Table
from babelprobe.runs import read_run

FORMATS = ("csv", "latex", "md")


def summary_tables(run_dir: Path) -> list[Table]:
    """Every summary table of the run's HTML report, in page order (the item tables are left out)."""
    stored = read_run(run_dir)
    sections = stored.family.html_sections(stored.summary, store.read_items(run_dir), stored.manifest)
    return [table for section in sections for table in section.tables]


def _slug(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:60] or "table"


def _frame(table: Table) -> pd.DataFrame:
    # duplicate column names (e.g. two "transfer" columns) are legal in a table, not in a frame's lookups
    return pd.DataFrame(table.rows, columns=pd.Index(table.columns, dtype=object))


def _markdown_cell(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown(tables: list[Table]) -> str:
    parts = []
    for table in tables:
        lines = [f"### {_markdown_cell(table.title)}", "",
                 "| " + " | ".join(_markdown_cell(c) for c in table.columns) + " |",
                 "|" + "---|" * len(table.columns)]
        lines += ["| " + " | ".join(_markdown_cell(c) for c in row) + " |" for row in table.rows]
        if table.note:
            lines += ["", _markdown_cell(table.note)]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def latex(tables: list[Table]) -> str:
    parts = ["% babelprobe summary tables; needs \\usepackage{booktabs}"]
    for table in tables:
        frame = _frame(table)
        parts.append(frame.to_latex(index=False, escape=True, caption=table.title, label=f"tab:{_slug(table.title)}",
                                    position="htbp"))
    return "\n".join(parts)


def export_tables(run_dir: Path, fmt: str, out: Path | None = None) -> list[Path]:
    """Write the run's summary tables in ``fmt`` into ``out`` (default: the run folder); the paths written."""
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt}: choose one of {', '.join(FORMATS)}")
    tables = summary_tables(run_dir)
    out = Path(out) if out is not None else Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    if fmt == "md":
        path = out / "tables.md"
        path.write_text(markdown(tables), encoding="utf-8")
        return [path]
    if fmt == "latex":
        path = out / "tables.tex"
        path.write_text(latex(tables), encoding="utf-8")
        return [path]
    folder = out / "tables"
    folder.mkdir(exist_ok=True)
    paths = []
    for k, table in enumerate(tables, start=1):
        path = folder / f"{k:02d}_{_slug(table.title)}.csv"
        _frame(table).to_csv(path, index=False, encoding="utf-8")
        paths.append(path)
    return paths
