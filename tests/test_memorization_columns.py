"""Memorization's finish reads only the items columns its summary needs, one at a time (issue 31): the summary,
the language tables and `report` must equal the plain path, which reads every column of
items.parquet (texts, token ids, per-token log-probs). A tiny random decoder with a word-level
tokenizer (tests/tiny_models.py) answers, so that the run is real and fast."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from tiny_models import DECODER, WORDS, save_tiny, tiny_model
from transformers import LlamaConfig, LlamaForCausalLM

from babelprobe import store
from babelprobe.families.memorization.analysis import (
    SUMMARY_COLUMNS,
    summarise_memorization,
    write_language_tables,
)
from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.families.memorization.family import MemorizationFamily
from babelprobe.execute_run import run
from babelprobe.stored_runs import read_run


@pytest.fixture(scope="module")
def tiny_and_samples(tmp_path_factory):
    root = tmp_path_factory.mktemp("memorization-columns")
    model = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), root / "model")
    rng = random.Random(0)
    rows = [{"id": f"{lang}{i}", "language": lang, "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30)))}
            for lang in ("en", "de", "ru", "ja") for i in range(4)]  # some too short for the longest prompt
    samples = root / "samples.jsonl"
    samples.write_text("\n".join(json.dumps(r) for r in rows))
    return model, samples


@pytest.mark.parametrize("parts", ["none", "language"])
def test_summary_and_tables_equal_the_plain_path_over_all_columns(tiny_and_samples, tmp_path, parts, monkeypatch):
    model, samples = tiny_and_samples
    seen: list[set[str]] = []  # the columns of each frame summarised (none: stored_summary.py reads the file)
    summarise = MemorizationFamily.summarise
    monkeypatch.setattr(MemorizationFamily, "summarise",
                        lambda self, items, config: seen.append(set(items.columns)) or summarise(self, items, config))
    config = MemorizationConfig(model=f"hf:{model}", data=samples, out=tmp_path / "run", prefix_tokens=[4, 12],
                                suffix_tokens=4, device="cpu", cache=None, bootstrap_resamples=200, parts=parts)
    outcome = run(config)
    everything = pd.read_parquet(tmp_path / "run" / store.ITEMS)  # the plain path: every column
    assert {"token_logprobs", "generated_ids", "control_text"} <= set(everything.columns)
    assert not {"token_logprobs", "generated_ids"} & set(SUMMARY_COLUMNS)
    plain = summarise_memorization(everything, config.bootstrap_resamples, config.seed, config.rm_units)
    assert outcome.summary.model_dump() == plain.model_dump()
    assert json.loads((tmp_path / "run" / store.SUMMARY).read_text()) == json.loads(plain.model_dump_json())
    assert read_run(tmp_path / "run").summary.model_dump() == plain.model_dump()  # `babelprobe report`
    assert seen == []  # run and report summarise items.parquet a column at a time, never as a frame
    assert outcome.manifest.items == len(everything)
    assert outcome.manifest.errors == int(everything["error"].notna().sum())
    (tmp_path / "plain").mkdir()
    for path in write_language_tables(everything, tmp_path / "plain"):
        assert (tmp_path / "run" / path.name).read_text() == path.read_text()


def test_read_items_keeps_only_the_columns_asked_for_that_exist(tiny_and_samples, tmp_path):
    model, samples = tiny_and_samples
    run(MemorizationConfig(model=f"hf:{model}", data=samples, out=tmp_path / "run", prefix_tokens=[4],
                           suffix_tokens=4, device="cpu", cache=None, bootstrap_resamples=200, limit=1))
    frame = store.read_items(tmp_path / "run", ["language", "pm", "no_such_column", "language"])
    assert list(frame.columns) == ["language", "pm"]
    assert len(frame) == len(pd.read_parquet(tmp_path / "run" / store.ITEMS))
