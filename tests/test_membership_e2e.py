"""`owl membership` end to end from a real memorization run: presence on the bundled demo corpus
writes samples.jsonl, `run memorization --min-k-plus` scores them with a tiny model built here,
`owl membership` reports AUROC/TPR per language group for every score, Min-K%++ included."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from transformers import LlamaConfig, LlamaForCausalLM
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.config import BUNDLED_DATA
from tiny_models import DECODER, save_tiny, tiny_model


def test_owl_membership_from_a_real_memorization_run(tmp_path):
    cli = CliRunner()
    demo = BUNDLED_DATA / "owl_demo.jsonl"
    done = cli.invoke(app, ["corpus", "index", str(BUNDLED_DATA / "owl_corpus_demo.jsonl"), "--out", str(tmp_path / "idx")])
    assert done.exit_code == 0, done.output
    done = cli.invoke(app, ["corpus", "presence", "--passages", str(demo), "--index", str(tmp_path / "idx"),
                            "--out", str(tmp_path / "presence")])
    assert done.exit_code == 0, done.output
    presence = [json.loads(line) for line in (tmp_path / "presence" / "presence.jsonl").read_text().splitlines()]
    samples = tmp_path / "presence" / "samples.jsonl"
    assert len(samples.read_text().splitlines()) == len(presence) == 12

    model = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), tmp_path / "tiny")
    done = cli.invoke(app, ["run", "memorization", "--model", f"hf:{model}", "--device", "cpu", "--data", str(samples),
                            "--prefix-tokens", "8", "--suffix-tokens", "6", "--min-k-plus",
                            "--out", str(tmp_path / "mem")])
    assert done.exit_code == 0, done.output
    items = pd.read_parquet(tmp_path / "mem" / "items.parquet")
    scored = items[items["status"] == "scored"]
    assert scored["min_k_pp"].notna().all() and scored["control_min_k_pp"].notna().all()

    done = cli.invoke(app, ["owl", "membership", str(tmp_path / "mem"), "--presence",
                            str(tmp_path / "presence" / "presence.jsonl"), "--data", str(demo), "--resamples", "200",
                            "--out", str(tmp_path / "cells.json")], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    cells = json.loads((tmp_path / "cells.json").read_text())

    # by hand: the English version's match labels every version (App. B.4, Fig. 10): Don Quixote's
    # English passage is verbatim in the demo corpus, Alice's matches a 40-word window, the other
    # three English passages are absent (Anna Karenina's Russian and Metamorphosis's German are
    # present, but their English rows decide)
    english = {r["book_id"]: r["match"] for r in presence if r["language"] == "en"}
    assert english == {"don-quixote": "exact", "alice": "window-40", "anna-karenina": "none",
                       "les-miserables": "none", "metamorphosis": "none"}
    dataset = [json.loads(line) for line in demo.read_text().splitlines()]
    member = {f"{d['book_id']}/{d['passage_id']}/{d['language']}": int(d["book_id"] in ("don-quixote", "alice"))
              for d in dataset}
    group = {f"{d['book_id']}/{d['passage_id']}/{d['language']}": d["language_group"] for d in dataset}
    assert set(scored["sample_id"]) == set(member)  # every passage long enough for 8 + 6 tokens
    expected = {"all": (5, 7)}
    for name in ("official", "original", "unseen"):
        ids = [k for k, g in group.items() if g == name]
        expected[name] = (sum(member[k] for k in ids), sum(1 - member[k] for k in ids))
    assert expected == {"all": (5, 7), "official": (1, 2), "original": (2, 3), "unseen": (2, 2)}
    scores = ("-loss (mean log-prob)", "Min-K% Prob", "Min-K%++", "-zlib ratio")  # no --reference: no ratio
    got = {(c["score"], c["group"]): (c["members"], c["non_members"]) for c in cells}
    assert got == {(score, g): n for score in scores for g, n in expected.items()}
    # the Min-K%++ AUROC over all passages is scikit-learn's on the run's own scores and the hand labels
    from sklearn.metrics import roc_auc_score

    overall = next(c for c in cells if c["score"] == "Min-K%++" and c["group"] == "all")
    assert overall["auroc"] == pytest.approx(roc_auc_score([member[k] for k in scored["sample_id"]], scored["min_k_pp"]))
    table = " ".join(done.output.split())
    assert "5 members, 7 non-members" in table and "Min-K%++ │ unseen │ 2 │ 2" in table
    assert "not computed" not in table
