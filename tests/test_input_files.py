"""Input files people have (issue 18, "Input people have"): UTF-8 with a byte-order mark (Excel's
"CSV UTF-8", Notepad), semicolon-separated Excel CSV. Run through `babelprobe validate` for every
family whose demo rows are flat text, so that each family's loader sees the same file."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.data.tables import read_rows
from babelprobe.families import get_family

cli = CliRunner()
# the families whose demo rows hold only scalars (OWL's aliases are a list: not CSV-shaped)
FLAT = ("cka", "eclektic", "memorization", "similarity")


def demo_rows(family: str) -> list[dict]:
    """The family's demo rows, with the 'language' column first where there is one: the mark
    glues itself to the first column's name."""
    rows = [row for _, row in read_rows(demo_path(family))]
    return [dict(sorted(row.items(), key=lambda kv: kv[0] != "language")) for row in rows]


def demo_path(family: str) -> Path:
    return Path(get_family(family).config.model_fields["data"].default)


def validated(path: Path, family: str) -> str:
    result = cli.invoke(app, ["validate", str(path), "--probe", family])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def write_csv(path: Path, rows: list[dict], encoding: str, delimiter: str = ",") -> Path:
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), delimiter=delimiter)
    writer.writeheader()
    writer.writerows(rows)
    path.write_bytes(out.getvalue().encode(encoding))
    return path


@pytest.mark.parametrize("family", FLAT)
def test_csv_with_byte_order_mark_reads_like_the_jsonl(tmp_path, family):
    rows = demo_rows(family)
    expected = validated(demo_path(family), family)
    plain = validated(write_csv(tmp_path / "plain.csv", rows, "utf-8"), family)
    bom = validated(write_csv(tmp_path / "bom.csv", rows, "utf-8-sig"), family)
    assert plain == bom == expected


@pytest.mark.parametrize("family", ("cka", "memorization", "similarity"))
def test_byte_order_mark_does_not_let_an_iso_named_file_become_the_language(tmp_path, family):
    """A file named like a language code ('de.csv') supplies the language only where the rows have
    none: with the mark unstripped, the 'language' column was lost and every row became German."""
    rows = demo_rows(family)
    assert list(rows[0])[0] == "language" and len({row["language"] for row in rows}) > 2
    expected = validated(demo_path(family), family)
    assert validated(write_csv(tmp_path / "de.csv", rows, "utf-8-sig"), family) == expected


@pytest.mark.parametrize("family", FLAT)
def test_jsonl_with_byte_order_mark(tmp_path, family):
    rows = demo_rows(family)
    path = tmp_path / "bom.jsonl"
    path.write_bytes(("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)).encode("utf-8-sig"))
    assert validated(path, family) == validated(demo_path(family), family)


@pytest.mark.parametrize("family", FLAT)
def test_semicolon_csv_gets_a_one_line_hint_naming_the_file(tmp_path, family):
    path = write_csv(tmp_path / "excel.csv", demo_rows(family), "utf-8-sig", delimiter=";")
    result = cli.invoke(app, ["validate", str(path), "--probe", family])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert text.count("error:") == 1 and "Traceback" not in result.output, result.output
    assert str(path) in text and "semicolon-separated" in text, text
