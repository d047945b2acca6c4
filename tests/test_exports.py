"""Exports and figures escape per format (issue 30): LaTeX that compiles (a real TeX engine where
one is installed, and always a structural check that rejects the old output), Markdown with its
HTML escaped, bidi controls shown as visible escapes on the terminal and in figure labels, long
figure labels shortened with a key, and matplotlib's layout warnings handled."""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from rich.console import Console

from babelprobe.analysis.bootstrap import Cell
from babelprobe.report.export import latex, markdown
from babelprobe.report.figures import grouped_bars_figure, heatmap_figure
from babelprobe.report.sections import Table
from babelprobe.report.terminal import plain

BIDI = "\u202e\u2066\u2067\u2068\u2069\u200f"
HOSTILE = ("95% bootstrap CIs {unclosed $x^2$ #1 & a_b ~ \\end{table} \\input{/etc/passwd} "
           "<script>alert(1)</script><style>body{}</style> NUL\x00byte" + BIDI + " end")
TABLES = [
    Table(f"accuracy by language (%, {HOSTILE})", ["language", "n", f"col {HOSTILE}"],
          [["en", "12", "50.0 (40.0–60.0) ± 3.1, n = 12 (small n)"], ["ru", "30", "Москва"],
           [HOSTILE, "7", "日本語 ρ_G = 0.5"]], note=HOSTILE),
    Table("95% bootstrap CIs", ["a"], [["1"]]),
]


def structurally_valid(tex: str) -> list[str]:
    """What would stop TeX: a NUL or other control byte, an unescaped % that comments out the rest of
    a line (so its braces never close), unbalanced braces, \\begin/\\end that do not pair."""
    problems = []
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", tex):
        problems.append("a control character")
    depth, stack = 0, []
    for number, line in enumerate(tex.splitlines(), 1):
        code = re.split(r"(?<!\\)%", line, maxsplit=1)[0]  # TeX ignores the rest of the line
        if line.lstrip().startswith("%"):
            continue
        body = re.sub(r"\\[{}%$#&_]", "", code)
        depth += body.count("{") - body.count("}")
        if depth < 0:
            problems.append(f"line {number}: a closing brace without its opening one")
            depth = 0
        for kind, name in re.findall(r"\\(begin|end)\{([^}]*)\}", body):
            if kind == "begin":
                stack.append(name)
            elif not stack or stack.pop() != name:
                problems.append(f"line {number}: \\end{{{name}}} does not close the open environment")
        if code != line and "{" in code and depth > 0:
            problems.append(f"line {number}: a % comments out a closing brace")
    if depth:
        problems.append(f"{depth} braces never closed")
    if stack:
        problems.append(f"environments never closed: {stack}")
    return problems


def test_latex_export_is_structurally_valid():
    tex = latex(TABLES)
    assert structurally_valid(tex) == []
    assert "\\caption{95\\% bootstrap CIs}" in tex
    assert "<U+202E>" not in tex or "\\textless{}U+202E\\textgreater{}" in tex  # bidi controls visible
    assert "\x00" not in tex and "\u202e" not in tex


def test_markdown_export_escapes_html():
    md = markdown(TABLES)
    assert "<script>" not in md and "<style>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "\x00" not in md and "\u202e" not in md and "<U+202E>" not in md  # shown as &lt;U+202E&gt;
    assert "&lt;U+202E&gt;" in md


TEX = shutil.which("lualatex") or shutil.which("xelatex")
needs_tex = pytest.mark.skipif(TEX is None, reason="no lualatex/xelatex (Debian: apt-get install "
                               "texlive-latex-base texlive-latex-recommended texlive-luatex); the LaTeX is then "
                               "only checked structurally")


def compile_tex(tables_tex: Path) -> subprocess.CompletedProcess:
    document = tables_tex.with_name("document.tex")
    document.write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
                        f"\\input{{{tables_tex.name}}}\n\\end{{document}}\n", encoding="utf-8")
    return subprocess.run([TEX, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", document.name],
                          cwd=document.parent, capture_output=True, text=True, timeout=300)


@needs_tex
def test_latex_export_compiles(tmp_path):
    tables_tex = tmp_path / "tables.tex"
    tables_tex.write_text(latex(TABLES), encoding="utf-8")
    done = compile_tex(tables_tex)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "document.pdf").stat().st_size > 0


def test_bidi_controls_are_visible_escapes_on_the_terminal():
    console = Console(record=True, width=120)
    console.print(plain(f"ar {BIDI}שלום 42"))
    text = console.export_text()
    for char in BIDI:
        assert char not in text and f"<U+{ord(char):04X}>" in text
    assert "42" in text


def _tick_texts(fig) -> list[str]:
    ax = fig.axes[0]
    return [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]


def test_long_and_bidi_figure_labels_are_shortened_with_a_key_and_warn_nothing():
    long = "a book title far too long to fit under any heatmap cell at all"
    matrix = {long: {"en": 0.5, f"x{BIDI}y": 0.2}, "de": {"en": 0.1}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Tight layout not applied" would raise here
        fig = heatmap_figure(matrix, f"title {BIDI}", square=False)
        bars = grouped_bars_figure({"accuracy": [Cell(group=long, n=40, errors=0, value=0.5, ci_low=0.4, ci_high=0.6)]},
                                   [long, "en"], "t", "%", 100.0)
    ticks = _tick_texts(fig)
    assert any(re.search(r"… \[\d\]$", t) and long.startswith(t[:10]) for t in ticks)
    assert all(len(t) <= 24 for t in ticks)
    assert not any(c in t for t in ticks for c in BIDI) and any("<U+202E>" in t for t in ticks)
    key = " ".join(t.get_text() for t in fig.texts)
    assert re.search(rf"\[\d\] {long}", key)
    assert "[1]" in " ".join(t.get_text() for t in bars.texts)
    assert not any(c in fig.axes[0].get_title() for c in BIDI)
