"""Items are read one row group at a time (issue 31): a --parts run's items.parquet has a row group
per language, and the summary's reader decodes one of them at a time instead of the whole file
beside the frame built from it. What it returns must be the frame pandas reads in one go."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from babelprobe import store

LANGUAGES = ("en", "de", "ru", "ja", "zh", "ar", "hi", "sw", "fil", "ko")


def write_groups(path, rows_per_group: int = 400) -> None:
    """A row group per language, as join_parts writes them: texts in several scripts, a column
    null in some groups (an int column turns float there), one all null in one group."""
    rng = np.random.default_rng(0)
    texts = {"en": "the river", "de": "der Fluss", "ru": "река", "ja": "川の流れ", "zh": "河流", "ar": "النهر",
             "hi": "नदी", "sw": "mto", "fil": "ilog", "ko": "강"}
    schema = None
    writer = None
    for g, lang in enumerate(LANGUAGES):
        n = rows_per_group
        table = pa.table({
            "sample_id": [f"{lang}-{i}" for i in range(n)],
            "language": [lang] * n,
            "text": [texts[lang] * 20] * n,
            "prefix_tokens": pa.array([20] * n, pa.int64()),
            "pm": pa.array(rng.normal(-30, 5, n)),
            "control_pm": pa.array([None] * n if lang == "ja" else list(rng.normal(-40, 5, n)), pa.float64()),
            "exact_match": pa.array([bool(x) for x in rng.random(n) < 0.2], pa.bool_()),
            "error": pa.array([None] * (n - 1) + ["boom" if g % 3 == 0 else None], pa.string()),
            "token_logprobs": pa.array([list(rng.normal(size=8)) for _ in range(n)], pa.list_(pa.float64())),
        })
        schema = schema or table.schema
        writer = writer or pq.ParquetWriter(path, schema)
        writer.write_table(table.cast(schema))
    writer.close()


COLUMNS = ["sample_id", "language", "prefix_tokens", "pm", "control_pm", "exact_match", "error", "no_such_column"]


def test_streamed_items_equal_the_file_read_at_once(tmp_path):
    write_groups(tmp_path / store.ITEMS)
    assert pq.ParquetFile(tmp_path / store.ITEMS).num_row_groups == len(LANGUAGES)
    loaded = pd.read_parquet(tmp_path / store.ITEMS, columns=COLUMNS[:-1])
    streamed = store.read_items(tmp_path, COLUMNS)
    pd.testing.assert_frame_equal(streamed, loaded)
    assert list(streamed.columns) == COLUMNS[:-1]
    streamed.loc[streamed.index[:3], "pm"] = 0.0  # a frame its reader may change, as pandas' own
    single = tmp_path / "one"
    single.mkdir()
    loaded.to_parquet(single / store.ITEMS)  # one row group
    one = store.read_items(single, ["pm"])
    one.loc[0, "pm"] = 0.0


def _arrow_peak(read) -> int:
    """Arrow's peak memory while ``read()`` runs (Arrow's pool is outside Python's allocator: a
    fresh proxy pool counts it, and it holds the frame's numeric columns too)."""
    pool, previous = pa.proxy_memory_pool(pa.default_memory_pool()), pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        frame = read()
    finally:
        pa.set_memory_pool(previous)
    assert len(frame) == 4_000 * len(LANGUAGES)
    del frame  # its buffers go back to the pool before the pool goes
    gc.collect()
    return pool.max_memory()


def test_one_row_group_decoded_at_a_time(tmp_path):
    """Decoding the whole file beside the frame built from it (pandas' one read) peaks at about
    twice the frame; a group at a time, at the frame and one group."""
    write_groups(tmp_path / store.ITEMS, rows_per_group=4_000)
    at_once = _arrow_peak(lambda: pd.read_parquet(tmp_path / store.ITEMS, columns=COLUMNS[:-1]))
    assert _arrow_peak(lambda: store.read_items(tmp_path, COLUMNS)) < 0.75 * at_once
