"""Displays that hide or misstate results, and dataset text that is data, not markup (issue 18).

Item tables: a good item's ``error`` cell is NaN as soon as another item errored (pandas fills the
gaps of a string column with NaN, which is truthy); every family asks one helper
(report.sections.error_of) whether a row errored."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from babelprobe.report.sections import ItemTable, error_of


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
