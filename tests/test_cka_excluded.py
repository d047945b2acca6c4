"""CKA facts whose counterfactual is the true object itself (issue 27 class 8, issue 30): flagged
by `validate`, left out of every score with a count, listed; non-text pieces of the false-object
list refused with row and field."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.data.validation import DatasetError
from babelprobe.families.cka.analysis import compare_cka, summarise_cka
from babelprobe.data.polyglot_or_not import load_cka_facts
from babelprobe.families.cka.probe import CKAProbe
from babelprobe.families.cka.report import cka_sections, print_cka_summary
from babelprobe.models.base import NextTokenResult


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def row(fact_id: str, true: str, false, stem: str = "The capital is") -> dict:
    return {"dataset_id": fact_id, "stem": stem, "true": true, "false": false, "relation": "P36"}


# (language, true, false): a false object equal to the true one once read as a reader reads it
SAME = [
    ("ru", "Москва", "москва <br> Киев"),  # case (Cyrillic)
    ("uk", "Київ", " Київ <br> Львів"),  # a surrounding space
    ("de", "München", "Mu\u0308nchen"),  # NFD vs NFC
    ("el", "Αθήνα", "ΑΘΉΝΑ <br> Σπάρτη"),  # Greek capitals with the accent
    ("de", "Straße", "STRASSE"),  # full case folding: ß = ss
    ("bg", "София", ["Пловдив", "СОФИЯ"]),  # a JSON list, the second piece
]
DIFFERENT = [
    ("ru", "Москва", "Москве <br> Киев"),  # another case form is another object
    ("de", "München", "Munchen"),  # a dropped umlaut is another spelling, not the same object
    ("en", "Georgia", "Georgia (country)"),
]


@pytest.mark.parametrize("language,true,false", SAME)
def test_a_false_object_equal_to_the_true_one_is_flagged(tmp_path, language, true, false):
    (fact,) = load_cka_facts(write_jsonl(tmp_path / f"{language}.jsonl", [row("f1", true, false)]), [language])
    assert fact.excluded and "can never be known" in fact.excluded


@pytest.mark.parametrize("language,true,false", DIFFERENT)
def test_a_different_false_object_is_not_flagged(tmp_path, language, true, false):
    (fact,) = load_cka_facts(write_jsonl(tmp_path / f"{language}.jsonl", [row("f1", true, false)]), [language])
    assert fact.excluded == ""


@pytest.mark.parametrize("false,shown", [([1889, "Lyon"], "piece 1 is a int (1889)"),
                                         (["Lyon", None], "piece 2 is null"),
                                         (1889, "piece 1 is a int (1889)")])
def test_a_number_or_null_in_the_false_list_is_refused_with_row_and_field(tmp_path, false, shown):
    path = write_jsonl(tmp_path / "fr.jsonl", [row("ok", "Paris", "Lyon"), row("bad", "Paris", false)])
    with pytest.raises(DatasetError) as info:
        load_cka_facts(path, ["fr"])
    message = str(info.value)
    assert f"{path}, row 2, field 'false'" in message and shown in message
    assert "'None'" not in message


def _records(tmp_path: Path):
    facts = load_cka_facts(write_jsonl(tmp_path / "ru.jsonl", [
        row("same", "Москва", "москва <br> Киев"), row("known", "Москва", "Киев"), row("unknown", "Париж", "Лион"),
    ]), ["ru"])
    probe = CKAProbe("first-token")
    # the same log-probs for every fact: the true object first, then each false one
    records = []
    for fact in facts:
        (request,) = probe.requests(fact)
        n = len(request.candidates)
        logps = [math.log(0.6)] + [math.log(0.1)] * (n - 1) if fact.fact_id != "unknown" else [math.log(0.1), math.log(0.6)]
        records.append(probe.score(fact, [NextTokenResult(logprobs=logps, token_ids=list(range(n)),
                                                          tokens=list(request.candidates))]))
    return pd.DataFrame([r.model_dump() for r in records])


def test_excluded_facts_are_in_no_score_and_are_counted_and_listed(tmp_path):
    items = _records(tmp_path)
    same = items[items["fact_id"] == "same"].iloc[0]
    assert same["known"] is None and "false object 1 'москва'" in same["excluded"]
    summary = summarise_cka(items, n_resamples=200)
    (ru,) = summary.languages
    assert (ru.n, ru.excluded, ru.accuracy) == (2, 1, 0.5)  # 'same' would have counted as known
    assert summary.n_excluded == 1 and [f.fact_id for f in summary.excluded] == ["same"]
    assert "excluded" in summary.model_dump_json()
    cells = compare_cka(items, items, n_resamples=200)
    assert {c.matched for c in cells} == {2}

    console = Console(record=True, width=120)
    print_cka_summary(summary, console=console)
    shown = console.export_text()
    assert "1 facts excluded from every score (ru 1)" in shown and "ru/same" in shown
    (section, item_section) = cka_sections(summary, items)
    assert any(t.title == "facts excluded from the scores" and t.rows[0][1] == "same" for t in section.tables)
    assert "excluded" in [r[-1] for r in item_section.items.rows]


def test_validate_lists_flagged_facts_with_file_row_and_field(tmp_path):
    path = write_jsonl(tmp_path / "uk.jsonl", [row("a", "Київ", "Львів"), row("b", "Київ", "КИЇВ <br> Львів")])
    result = CliRunner().invoke(app, ["validate", str(path), "--probe", "cka", "--langs", "uk"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"flagged: {path}, row 2, field 'false': excluded from the scores" in result.output
    assert "1 flagged facts will be left out of the scores" in result.output
