"""The memorization summary read one column at a time (issue 31): `run memorization` and `report`
summarise items.parquet without building the frame, and must give what the in-memory path
(``summarise_memorization`` / ``write_language_tables`` over every column) gives, bit for bit:
the same bootstrap intervals, counts, correlations and language tables. A real run of a tiny
random decoder (tests/tiny_models.py) gives the items; they are then reshaped the ways a large run
is (several row groups, rows in any order, ids in several scripts, a bool metric with nulls, an
all-error prompt length) and compared again."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tiny_models import DECODER, WORDS, save_tiny, tiny_model
from transformers import LlamaConfig, LlamaForCausalLM

from babelprobe import store
from babelprobe.execute_run import run
from babelprobe.families.memorization.analysis import summarise_memorization, write_language_tables
from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.families.memorization.stored_summary import summarise_stored, write_stored_tables

RESAMPLES = 300


@pytest.fixture(scope="module")
def real_items(tmp_path_factory) -> pd.DataFrame:
    """Every column of a real run's items: 6 languages, prompt lengths 4 and 10, some texts too
    short for the longer one."""
    root = tmp_path_factory.mktemp("stored-summary")
    model = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), root / "model")
    rng = random.Random(3)
    rows = [{"id": f"{lang}{i}", "language": lang, "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24)))}
            for lang in ("en", "de", "ru", "ja", "ar", "hi") for i in range(6)]
    samples = root / "samples.jsonl"
    samples.write_text("\n".join(json.dumps(r) for r in rows))
    run(MemorizationConfig(model=f"hf:{model}", data=samples, out=root / "run", prefix_tokens=[4, 10],
                           suffix_tokens=4, device="cpu", cache=None, bootstrap_resamples=RESAMPLES))
    return pd.read_parquet(root / "run" / store.ITEMS)


def write(frame: pd.DataFrame, folder, group_rows: int) -> None:
    folder.mkdir()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), folder / store.ITEMS, row_group_size=group_rows)


def assert_same(frame: pd.DataFrame, folder) -> None:
    plain = summarise_memorization(frame, RESAMPLES, 0, "words")
    streamed = summarise_stored(folder, RESAMPLES, 0, "words")
    assert streamed.model_dump() == plain.model_dump()  # floats compared exactly
    assert streamed.by_language and any(pair.real.ci_low < pair.real.ci_high
                                        for row in streamed.overall for pair in row.metrics.values())
    (folder / "plain").mkdir()
    (folder / "streamed").mkdir()
    expected = write_language_tables(frame, folder / "plain")
    got = write_stored_tables(folder, folder / "streamed")
    assert [p.name for p in got] == [p.name for p in expected]
    for a, b in zip(expected, got):
        assert b.read_text() == a.read_text()


def test_a_real_runs_items(real_items, tmp_path):
    assert set(real_items["status"]) >= {"scored", "too_short"}
    write(real_items, tmp_path / "run", group_rows=len(real_items))
    assert_same(real_items, tmp_path / "run")


@pytest.mark.parametrize("seed", [0, 1])
def test_shuffled_rows_ids_in_several_scripts_and_row_groups(real_items, tmp_path, seed):
    """Rows in any order (a --parts run joins languages in input order), sample ids that sort
    differently by code point than by a naive key (Latin with accents, Cyrillic, CJK, Arabic,
    Devanagari, digits), several row groups, ties in the sort kept in file order."""
    rng = np.random.default_rng(seed)
    frame = real_items.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    spellings = ["é", "e", "Z", "ж", "日本", "ع", "क", "10", "9", "ß"]
    frame["sample_id"] = [f"{rng.choice(spellings)}{i % 7}" for i in range(len(frame))]  # duplicates: ties
    frame.loc[frame.index[::5], "status"] = "error"
    write(frame, tmp_path / "run", group_rows=11)
    assert pq.ParquetFile(tmp_path / "run" / store.ITEMS).num_row_groups > 3
    assert_same(frame, tmp_path / "run")


def test_bool_metric_with_nulls_and_a_length_with_nothing_scored(real_items, tmp_path):
    frame = real_items.copy()
    frame["exact_match"] = pd.array([None if i % 4 == 0 else bool(i % 3 == 0) for i in range(len(frame))],
                                    dtype=object)
    frame.loc[frame["prefix_tokens"] == 10, "status"] = "too_short"
    frame.loc[frame["language"] == "ar", "pm"] = np.nan  # a language without one metric's values
    frame["text_flag"] = [None if i % 6 else "no dictionary" for i in range(len(frame))]
    write(frame, tmp_path / "run", group_rows=13)
    assert_same(frame, tmp_path / "run")
    streamed = summarise_stored(tmp_path / "run", RESAMPLES, 0, "words")
    assert sum(row.text_flagged for row in streamed.by_language) == int(frame["text_flag"].notna().sum())
