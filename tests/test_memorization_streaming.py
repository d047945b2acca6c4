"""`run memorization --parts language` streams its samples (issue 31): one pass checks every row
and spills each language to a temporary file, and a part reads back one language. What a part gets,
and the order of the parts, must be what loading every sample gives (the same stamps and items)."""

from __future__ import annotations

import json
import random
import tracemalloc

import pandas as pd
import pytest

from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError
from babelprobe.families.memorization.data import SampleParts, load_samples

# ordinary words of each language, in its own script (texts need not mean anything here)
WORDS = {"en": "the river runs past the old mill", "ru": "река течёт мимо старой мельницы",
         "ja": "川 は 古い 水車小屋 の そば を 流れる", "ar": "يجري النهر بجانب الطاحونة القديمة",
         "hi": "नदी पुरानी चक्की के पास बहती है", "zh": "河 流 过 旧 磨坊", "iw": "הנהר זורם ליד הטחנה הישנה",
         "de": "der Fluss fließt an der alten Mühle vorbei"}


def rows(per_language: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = [{"id": f"{lang}{i}", "language": lang, "text": " ".join(rng.sample(WORDS[lang].split(),
                                                                          len(WORDS[lang].split())) * 3)}
           for i in range(per_language) for lang in WORDS]  # languages interleaved, as a mixed corpus
    rng.shuffle(out)
    return out


def grouped(samples) -> dict[str, list]:
    groups: dict[str, list] = {}
    for sample in samples:
        groups.setdefault(sample.language, []).append(sample)
    return groups


def streamed(parts: SampleParts) -> dict[str, list]:
    return {language: parts.samples(language) for language in parts.languages}


@pytest.mark.parametrize("langs, limit", [(None, None), (["ru", "ja", "he"], None), (None, 3), (["zh", "en"], 2)])
def test_parts_equal_the_loaded_samples_one_file(tmp_path, langs, limit):
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows(5)) + "\n", encoding="utf-8")
    parts = SampleParts(path, langs, limit, seed=7)
    loaded = grouped(load_samples(path, langs, limit, seed=7))
    assert list(streamed(parts)) == list(loaded)  # the parts' order too (iw is read as he)
    assert streamed(parts) == loaded
    assert list(parts.files) == [str(path)] and parts.files[str(path)].startswith(f"{path}:")
    parts.close()


@pytest.mark.parametrize("langs, limit", [(None, None), (["ru", "ja", "he"], None), (None, 3), (["zh", "en"], 2)])
def test_in_order_equals_the_loaded_samples(tmp_path, langs, limit):
    """``--parts none`` reads its chunks from ``in_order``: load_samples' samples in its order (the
    input's, languages interleaved as written; by language with --limit), one line at a time."""
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows(5)) + "\n", encoding="utf-8")
    parts = SampleParts(path, langs, limit, seed=7, by_language=False)
    loaded = load_samples(path, langs, limit, seed=7)
    assert parts.total == len(loaded)
    assert list(parts.in_order()) == loaded
    parts.close()


def test_parts_equal_the_loaded_samples_per_language_folder(tmp_path):
    """The layout `corpus sample` writes (<lang>.parquet), beside a JSONL and a CSV file."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    data = rows(4, seed=1)
    for lang, writer in (("ru", "parquet"), ("ja", "jsonl"), ("ar", "csv")):
        mine = [{"id": r["id"], "text": r["text"], "source": f"mc4:{r['id']}"} for r in data if r["language"] == lang]
        frame = pd.DataFrame(mine)
        if writer == "parquet":
            frame.to_parquet(folder / f"{lang}.parquet", row_group_size=3)  # several row groups
        elif writer == "jsonl":
            frame.to_json(folder / f"{lang}.jsonl", orient="records", lines=True, force_ascii=False)
        else:
            frame.to_csv(folder / f"{lang}.csv", index=False)
    parts = SampleParts(folder)
    assert streamed(parts) == grouped(load_samples(folder))
    assert sorted(parts.files) == sorted(str(p) for p in folder.iterdir())
    assert sorted(s.origin for s in parts.samples("ru")) == [f"mc4:ru{i}" for i in range(4)]


def test_a_bad_row_is_the_same_error_either_way(tmp_path):
    data = rows(2)
    data[3]["text"] = " "
    data.append({**data[0]})  # a duplicate id
    data.append({"id": "x", "language": "iw", "text": "שלום"})
    data.append({"id": "y", "language": "he", "text": "שלום"})  # two codes of one language
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in data), encoding="utf-8")
    with pytest.raises(DatasetError) as loaded:
        load_samples(path)
    with pytest.raises(DatasetError) as parted:
        SampleParts(path)
    assert str(parted.value) == str(loaded.value)
    assert len(parted.value.problems) == 3


def test_jsonl_rows_stream_as_the_whole_file_reads(tmp_path):
    """Line numbers count empty lines and CR / CRLF endings as a whole-file split does; the BOM goes."""
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": "\xd1\x80\xd0\xb5\xd0\xba\xd0\xb0"}\r\n\n{"a": 2}\r{"a": 3}\n\n{"a": 4}')
    assert read_rows(path) == [(1, {"a": "река"}), (3, {"a": 2}), (4, {"a": 3}), (6, {"a": 4})]


def test_one_language_in_memory_at_a_time(tmp_path):
    """Python's allocations while the parts are checked and read one by one stay below a third of
    loading every sample (eight languages: about one eighth, plus the ids kept for duplicates)."""
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows(300)), encoding="utf-8")
    tracemalloc.start()
    everything = load_samples(path)
    _, loaded_peak = tracemalloc.get_traced_memory()
    del everything
    tracemalloc.reset_peak()
    parts = SampleParts(path)
    sizes = []
    for language in parts.languages:
        part = parts.samples(language)
        sizes.append(len(part))
        del part
    _, streamed_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    parts.close()
    assert sizes == [300] * len(WORDS)
    assert streamed_peak < loaded_peak / 3


def test_duplicate_ids_across_files_name_each_place(tmp_path):
    """Ids in several scripts, repeated within a file and across files of a per-language folder:
    each repeat is a problem naming its file, row and field and the first place; distinct ids
    that differ only in case or normalisation are not duplicates."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "ru.jsonl").write_text("\n".join(json.dumps({"id": i, "text": WORDS["ru"]}, ensure_ascii=False)
                                               for i in ("река", "Река", "река", "x")), encoding="utf-8")
    (folder / "ja.jsonl").write_text("\n".join(json.dumps({"id": i, "text": WORDS["ja"]}, ensure_ascii=False)
                                               for i in ("川", "x", "川", "e\u0301", "\u00e9")), encoding="utf-8")
    with pytest.raises(DatasetError) as loaded:
        load_samples(folder)
    with pytest.raises(DatasetError) as parted:
        SampleParts(folder)
    assert str(parted.value) == str(loaded.value)
    found = sorted((p.file, p.row, p.field, p.message) for p in loaded.value.problems)
    ja, ru = str(folder / "ja.jsonl"), str(folder / "ru.jsonl")
    assert found == [(ja, 3, "id", f"duplicate id '川' (first at {ja}:1)"),  # ja.jsonl is read first
                     (ru, 3, "id", f"duplicate id 'река' (first at {ru}:1)"),
                     (ru, 4, "id", f"duplicate id 'x' (first at {ja}:2)")]


def test_the_ids_kept_for_duplicates_are_fixed_width(tmp_path):
    """The ids seen are kept as 64-bit digests with their place, not as strings: Python's
    allocations for 50,000 long ids stay near 20 bytes an id (a dict of the ids and their places
    takes over 150)."""
    from babelprobe.families.memorization.data import _Ids

    tracemalloc.start()
    ids = _Ids()
    for i in range(50_000):
        ids.add(f"https://example.org/corpus/de/{i:08d}#paragraph", 0, i + 1)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert current < 50_000 * 30
    assert ids.duplicates() == []
