"""``babelprobe report RUN --format csv|latex|md``: a run's summary tables (the tables of its HTML
report, ``Family.html_sections``) as files for a paper or a spreadsheet, from the stored run only.

- csv: one UTF-8 file per table, ``tables/NN_<title>.csv`` (pandas ``to_csv``);
- md: one ``tables.md``, each table under its title as a pipe table;
- latex: one ``tables.tex``, each table a ``table`` environment with its title as caption
  (pandas ``to_latex``, which needs jinja2, a dependency of the HTML reports). Every text, the
  captions included, is escaped here (``latex_text``: pandas escapes cells but not captions, and a
  caption's ``95%`` began a comment that swallowed its closing brace); control characters (a
  dataset's NUL bytes) are dropped and bidi controls written as visible ``<U+202E>``
  (``terminal.strip_control``, as on the terminal). Compiles with lualatex or xelatex
  (any script) and, for Latin text, pdflatex.

Cells are the report's text (value, 95% interval, n and the small-n flag), as every page shows them.
Markdown cells have their HTML escaped (``&lt;script&gt;``), so that no viewer runs or styles it."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from babelprobe import store
from babelprobe.report.sections import Table
from babelprobe.report.terminal import strip_control
from babelprobe.stored_runs import read_run

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


# LaTeX's special characters (The LaTeX Companion, 2nd ed., §7.1), as text-mode commands
_LATEX_SPECIAL = {"\\": "\\textbackslash{}", "{": "\\{", "}": "\\}", "%": "\\%", "$": "\\$", "#": "\\#",
                  "&": "\\&", "_": "\\_", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}",
                  "<": "\\textless{}", ">": "\\textgreater{}"}
_LATEX_SPECIALS = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIAL))


def latex_text(text: str) -> str:
    """Any text as LaTeX that typesets it literally (a cell, a caption)."""
    return _LATEX_SPECIALS.sub(lambda m: _LATEX_SPECIAL[m.group()], strip_control(str(text)).replace("\n", " "))


def _markdown_cell(text: str) -> str:
    escaped = html.escape(strip_control(str(text)), quote=False)  # raw <script>/<style> are shown, not run
    return escaped.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


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
    parts = ["% babelprobe summary tables; needs \\usepackage{booktabs}; lualatex or xelatex for non-Latin scripts"]
    for table in tables:
        frame = pd.DataFrame([[latex_text(c) for c in row] for row in table.rows],
                             columns=pd.Index([latex_text(c) for c in table.columns], dtype=object))
        parts.append(frame.to_latex(index=False, escape=False, caption=latex_text(table.title),
                                    label=f"tab:{_slug(table.title)}", position="htbp"))
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
