"""Displays that hide or misstate results, and dataset text that is data, not markup (issue 18).

Item tables: a good item's ``error`` cell is NaN as soon as another item errored (pandas fills the
gaps of a string column with NaN, which is truthy); every family asks one helper
(report.sections.error_of) whether a row errored."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from babelprobe.report.sections import ItemTable, error_of
from babelprobe.report.terminal import plain


def _items_table(sections) -> ItemTable:
    (table,) = [s.items for s in sections if s.items is not None]
    return table


def _verdicts(table: ItemTable, column: str = "verdict") -> list[str]:
    i = table.columns.index(column)
    return [row[i] for row in table.rows]


@pytest.mark.parametrize("value, expected", [(None, None), (np.nan, None), (float("nan"), None), (pd.NA, None),
                                             ("", None), ("  ", None), ("HTTP 500: down", "HTTP 500: down"),
                                             ("nan", "nan")])
def test_error_of(value, expected):
    assert error_of(value) == expected


def _frame(rows: list[dict]) -> pd.DataFrame:
    """As pandas builds it from records where only the failed item has an error: NaN elsewhere."""
    frame = pd.DataFrame(rows)
    assert frame["error"].isna().sum() == len(rows) - 1 and isinstance(frame["error"].iloc[0], float)
    return frame


def test_cka_item_table_errors_only_on_errored_items():
    from babelprobe.families.cka.analysis import summarise_cka
    from babelprobe.families.cka.report import cka_sections

    rows = [{"language": lang, "relation": "P36", "script": script, "known": known, "mode": "first-token",
             "stems": ["x"], "false": ["a", "b"], "true": "c", "logp_true": -1.0, "logp_false": [-2.0, -3.0]}
            for lang, script, known in [("en", "Latn", True), ("ru", "Cyrl", False), ("ja", "Jpan", True)]]
    rows.append({"language": "de", "relation": "P36", "script": "Latn", "known": None, "mode": "first-token",
                 "stems": ["x"], "false": ["a"], "true": "c", "logp_true": None, "logp_false": None,
                 "error": "HTTP 500: down"})
    items = _frame(rows)
    table = _items_table(cka_sections(summarise_cka(items, 100), items))
    assert _verdicts(table) == ["known", "not known", "known", "error: HTTP 500: down"]


def test_eclektic_item_table_errors_only_on_errored_items():
    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.report import eclektic_sections

    rows = []
    for lang, recall in [("en", 1.0), ("de", 0.5), ("ja", None)]:
        row = {"q_id": "q0", "source_language": "en", "target_language": lang, "is_source": lang == "en",
               "setting": "closed-book", "script": None, "recall": recall, "recall_compat": recall,
               "prompt": "Q?", "prediction": "A", "answer": "A"}
        if recall is None:
            row["error"] = "timeout"
        rows.append(row)
    items = _frame(rows)
    table = _items_table(eclektic_sections(summarise_eclektic(items, resamples=100), items))
    assert _verdicts(table) == ["recall 1.00", "recall 0.50", "error: timeout"]


def test_owl_item_table_errors_only_on_errored_items():
    from babelprobe.families.owl.analysis import summarise_owl
    from babelprobe.families.owl.report import owl_sections

    rows = [{"task": "direct", "perturbation": "none", "passage_tokens": 10, "language": lang,
             "language_group": "original", "book_id": "b1", "correct": ok, "title": True, "name": True,
             "output": "Dune", "author_correct": ok, "prompt": "p", "gold_titles": ["Dune"], "gold_names": ["Paul"],
             "reference": None, "chrf_pp": None} for lang, ok in [("en", True), ("tr", True)]]
    rows.append({**rows[0], "language": "es", "correct": None, "output": None, "author_correct": None,
                 "error": "HTTP 500"})
    items = _frame(rows)
    table = _items_table(owl_sections(summarise_owl(items, 100), items))
    assert _verdicts(table) == ["correct", "correct", "error: HTTP 500"]


def test_similarity_item_table_errors_only_on_errored_items():
    from babelprobe.families.similarity.analysis import error_counts, language_means, summarise_similarity
    from babelprobe.families.similarity.report import similarity_sections

    rows = [{"id": 0, "language": lang, "text": "hello", "layers": [0, 1],
             "vectors": [np.ones(4, dtype=np.float32), np.full(4, i + 1.0, dtype=np.float32)]}
            for i, lang in enumerate(["en", "de", "fr"])]
    rows.append({"id": 0, "language": "ja", "text": "こんにちは", "layers": None, "vectors": None, "error": "OOM"})
    items = _frame(rows)
    summary = summarise_similarity(language_means(items), None, "none", error_counts(items))
    assert _verdicts(_items_table(similarity_sections(summary, items)), "error") == ["", "", "", "error: OOM"]


# --- dataset and model text reaching the terminal --------------------------------------------------

HOSTILE = "x[/]y[bold red]R[link=https://evil.example]L\x1b]0;pwned\x07\x1b[2J\rZ\\"
SHOWN = "x[/]y[bold red]R[link=https://evil.example]L]0;pwned[2JZ\\"  # the same text, controls removed
_SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours: the only escape sequences allowed


def _terminal() -> Console:
    """A real terminal emulation: rich writes its escape sequences as it would to a tty."""
    return Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=1000, soft_wrap=False)


def _printed(console: Console) -> str:
    raw = console.file.getvalue()
    plain_text = _SGR.sub("", raw)
    assert "\x1b" not in plain_text and "\r" not in plain_text and "\x07" not in plain_text, repr(raw)
    return plain_text


def test_plain_escapes_markup_and_strips_control_characters():
    console = _terminal()
    console.print(f"[bold]label[/bold]: {plain(HOSTILE)}")
    printed = _printed(console)
    assert SHOWN in printed and "label" in printed


def test_family_summaries_print_dataset_text_literally():
    from babelprobe.families.cka.analysis import summarise_cka
    from babelprobe.families.cka.report import print_cka_summary
    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.report import print_eclektic_summary
    from babelprobe.families.owl.analysis import summarise_owl
    from babelprobe.families.owl.report import print_owl_summary
    from babelprobe.families.similarity.analysis import error_counts, language_means, summarise_similarity
    from babelprobe.families.similarity.report import print_similarity_summary

    cka = pd.DataFrame({"language": [HOSTILE, "ru"], "relation": [HOSTILE, "P36"], "script": ["Latn", "Cyrl"],
                        "known": [True, False], "mode": ["first-token"] * 2, "error": [None, None]})
    owl = pd.DataFrame({"task": ["direct"] * 2, "perturbation": ["none"] * 2, "passage_tokens": [10, 60],
                        "language": [HOSTILE, "tr"], "language_group": ["original", "unseen"], "book_id": [HOSTILE] * 2,
                        "correct": [True, False], "title": [True, False], "name": [True, False],
                        "output": ["Dune", HOSTILE], "author_correct": [True, False], "error": [None, None]})
    ecl = pd.DataFrame([{"q_id": "q0", "source_language": "en", "target_language": lang, "is_source": lang == "en",
                         "setting": "closed-book", "script": None, "recall": 1.0, "recall_compat": 1.0,
                         "judge_correct": True, "error": None} for lang in ("en", "de")])
    sims = pd.DataFrame({"language": [HOSTILE, "de"], "layers": [None, None], "vectors": [None, None], "error": ["x", "y"]})
    for print_summary, summary in [(print_cka_summary, summarise_cka(cka, 100)),
                                   (print_owl_summary, summarise_owl(owl, 100)),
                                   (print_eclektic_summary, summarise_eclektic(ecl, judges=[HOSTILE], resamples=100)),
                                   (print_similarity_summary, summarise_similarity(language_means(sims), None, "none",
                                                                                   error_counts(sims)))]:
        console = _terminal()
        print_summary(summary, None, console)
        assert SHOWN in _printed(console), print_summary.__name__


def test_eclektic_degenerate_ci_is_shown():
    """'[degenerate]' was a rich tag: the word vanished from the terminal table."""
    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.report import print_eclektic_summary

    ecl = pd.DataFrame([{"q_id": f"q{i}", "source_language": "en", "target_language": lang, "is_source": lang == "en",
                         "setting": "closed-book", "script": None, "recall": 1.0, "recall_compat": 1.0, "error": None}
                        for i in range(3) for lang in ("en", "de")])
    console = _terminal()
    print_eclektic_summary(summarise_eclektic(ecl, resamples=100), None, console)
    assert "degenerate" in _printed(console)


def test_fail_prints_dataset_text_literally(capsys):
    import typer

    from babelprobe import commands

    console = _terminal()
    original, commands.err = commands.err, console
    try:
        with pytest.raises(typer.Exit):
            commands.fail(f"data.jsonl row 3, field 'relation': {HOSTILE}")
    finally:
        commands.err = original
    assert SHOWN in _printed(console)
