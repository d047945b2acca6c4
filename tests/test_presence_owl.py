"""run owl --presence: labels from presence.jsonl (App. B.4: the English passage's status stands
for every version), seen/unseen accuracy and the Fig. 9 counts equal a hand count."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from babelprobe.data.validation import DatasetError
from babelprobe.families.owl.analysis import summarise_owl
from babelprobe.families.owl.config import DEMO_OWL, OwlConfig
from babelprobe.families.owl.family import family


def _presence_file(tmp_path, rows):
    path = tmp_path / "presence.jsonl"
    base = {"count": 0, "window": None, "window_start": None, "words": 30, "queries": 1, "error": None}
    path.write_text("".join(json.dumps({**base, **r}) + "\n" for r in rows))
    return path


def test_seen_unseen_summary_equals_a_hand_count(tmp_path):
    items = family.load(OwlConfig(model="bundled:gemma-3-270m", out=tmp_path / "run", data=DEMO_OWL))
    books = sorted({(i.book_id, i.passage_id) for i in items})
    assert len(books) == 5
    (b1, p1), (b2, p2) = books[:2]  # the other three books have no row: not searched
    path = _presence_file(tmp_path, [
        # English row: stands for every version of passage 1
        {"passage_id": p1, "book_id": b1, "language": "en", "match": "window-30", "count": 2},
        {"passage_id": p1, "book_id": b1, "language": "es", "match": "none"},
        # no English row for passage 2: each version by its own row; one failed count (no label)
        *[{"passage_id": p2, "book_id": b2, "language": i.language, "match": "none" if n % 2 else "exact"}
          for n, i in enumerate(i for i in items if (i.book_id, i.passage_id) == (b2, p2) and i.language != "en")],
        {"passage_id": p2, "book_id": b2, "language": "en", "match": None, "error": "HTTP 500"},
    ])
    labelled = family.load(OwlConfig(model="bundled:gemma-3-270m", out=tmp_path / "run", data=DEMO_OWL, presence=path))
    assert all(i.presence == "window-30" for i in labelled if (i.book_id, i.passage_id) == (b1, p1))
    assert any(i.presence is None for i in labelled)  # the errored count labels nothing
    # items.parquet rows as the probe stores them: correctness set by a fixed pattern
    rows = pd.DataFrame([{"book_id": i.book_id, "passage_id": i.passage_id, "language": i.language,
                          "language_group": i.language_group, "task": "direct", "perturbation": "none",
                          "passage_tokens": 40, "correct": n % 3 != 0, "author_correct": False, "title": "x",
                          "name": None, "output": "x", "error": None, "presence": i.presence}
                         for n, i in enumerate(labelled)])
    summary = summarise_owl(rows, n_resamples=200)
    cells = {c.group: c for c in summary.tasks[0].by_presence}
    seen = rows[rows["presence"].isin(["exact", "window-40", "window-30", "window-20"])]
    unseen = rows[rows["presence"] == "none"]
    assert (cells["seen"].n, cells["unseen"].n) == (len(seen), len(unseen))
    assert cells["seen"].value == pytest.approx(seen["correct"].mean())
    assert cells["unseen"].value == pytest.approx(unseen["correct"].mean())
    for group in ("original", "official", "unseen"):
        for label, part in (("seen", seen), ("unseen", unseen)):
            hand = part[part["language_group"] == group]
            if len(hand):
                assert cells[f"{group}/{label}"].n == len(hand)
                assert cells[f"{group}/{label}"].value == pytest.approx(hand["correct"].mean())
                assert cells[f"{group}/{label}"].ci_low <= cells[f"{group}/{label}"].value
    # Fig. 9: one count per passage, by the label its versions carry (passage 1: window-30;
    # passage 2's first labelled version decides)
    first2 = rows[(rows["book_id"] == b2) & rows["presence"].notna()]["presence"].iat[0]
    expected = {"exact": 0, "window-40": 0, "window-30": 1, "window-20": 0, "none": 0}
    expected[first2] += 1
    assert summary.presence_matches == expected
    # the per-language cells feed the profile
    groups = {c.group for c in summary.tasks[0].by_language_presence}
    assert "en/seen" in groups and all(g.split("/")[1] in ("seen", "unseen") for g in groups)


def test_a_presence_file_that_matches_nothing_is_refused(tmp_path):
    path = _presence_file(tmp_path, [{"passage_id": "nope", "book_id": "nope", "language": "en", "match": "exact"}])
    with pytest.raises(DatasetError, match="no passage of the dataset"):
        family.load(OwlConfig(model="bundled:gemma-3-270m", out=tmp_path / "run", data=DEMO_OWL, presence=path))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"passage_id": "1", "match": "maybe", "count": 0, "words": 1, "queries": 1}\n')
    with pytest.raises(DatasetError, match="row 1"):
        family.load(OwlConfig(model="bundled:gemma-3-270m", out=tmp_path / "run", data=DEMO_OWL, presence=bad))


def test_reports_show_seen_and_unseen(tmp_path):
    from rich.console import Console

    from babelprobe.families.owl.report import owl_profile, print_owl_summary

    items = family.load(OwlConfig(model="bundled:gemma-3-270m", out=tmp_path / "run", data=DEMO_OWL))
    path = _presence_file(tmp_path, [{"passage_id": i.passage_id, "book_id": i.book_id, "language": "en",
                                      "match": "exact" if n % 2 else "none"} for n, i in enumerate(items)
                                     if i.language == "en"])
    labelled = family.load(OwlConfig(model="bundled:gemma-3-270m", out=tmp_path / "run", data=DEMO_OWL, presence=path))
    rows = pd.DataFrame([{"book_id": i.book_id, "passage_id": i.passage_id, "language": i.language,
                          "language_group": i.language_group, "task": "direct", "perturbation": "none",
                          "passage_tokens": 40, "correct": n % 2 == 0, "author_correct": False, "title": "x",
                          "name": None, "output": "x", "error": None, "presence": i.presence}
                         for n, i in enumerate(labelled)])
    summary = summarise_owl(rows, n_resamples=100)
    console = Console(record=True, width=250)
    print_owl_summary(summary, None, console)
    out = " ".join(console.export_text().split())  # a title wraps to its (narrow) table's width
    assert "Fig. 9" in out and "Fig. 10" in out and " seen " in out and " unseen " in out
    from babelprobe.families.owl.report import owl_figure_list

    names = [name for name, _ in owl_figure_list(summary)]
    assert "owl_presence_matches" in names and "owl_direct_none_seen_unseen" in names
    metrics = {m.metric for m in owl_profile(summary)}
    assert {"OWL direct (none), seen passages", "OWL direct (none), unseen passages"} <= metrics
