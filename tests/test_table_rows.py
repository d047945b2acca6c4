"""One streaming row reader for every table file (issue 31): data/tables.py's ``iter_rows`` reads
data files (`run`, `validate`) and corpora (`corpus sample`, `corpus index`) alike. JSONL (also
gzipped, as mC4 ships it), CSV and Parquet give the same rows with the same row numbers; CSV is
streamed too (a bad row is raised when reached, the rows before it already given); line ends are
\\n, \\r\\n or a lone \\r everywhere."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from babelprobe.data.corpus import read_documents
from babelprobe.data.tables import iter_rows, read_rows
from babelprobe.data.validation import DatasetError

# ordinary text in several scripts, with a comma, a quote and a line break inside a field
ROWS = [{"id": "de1", "language": "de", "text": "Der Fluss fließt, an der „alten“ Mühle vorbei."},
        {"id": "ru1", "language": "ru", "text": "Река течёт мимо старой мельницы."},
        {"id": "ja1", "language": "ja", "text": "川は古い水車小屋のそばを流れる。\r\n二行目。"},
        {"id": "ar1", "language": "ar", "text": "يجري النهر بجانب الطاحونة القديمة"},
        {"id": "hi1", "language": "hi", "text": "नदी पुरानी चक्की के पास \"बहती\" है"}]


def jsonl_bytes(end: bytes = b"\n") -> bytes:
    return end.join(json.dumps(r, ensure_ascii=False).encode() for r in ROWS) + end


@pytest.mark.parametrize("name", ["rows.jsonl.gz", "c4-xx.tfrecord-00000-of-01024.json.gz"])
def test_gzipped_jsonl_gives_the_rows_of_jsonl(tmp_path, name):
    (tmp_path / "rows.jsonl").write_bytes(jsonl_bytes())
    (tmp_path / name).write_bytes(gzip.compress(jsonl_bytes()))
    assert read_rows(tmp_path / name) == read_rows(tmp_path / "rows.jsonl") == list(enumerate(ROWS, start=1))


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_csv_and_parquet_give_the_rows_of_jsonl_whatever_the_line_ends(tmp_path, end):
    frame = pd.DataFrame(ROWS)
    text = frame.to_csv(index=False, lineterminator=end.decode())
    (tmp_path / "rows.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())  # Excel's "CSV UTF-8" with its BOM
    frame.to_parquet(tmp_path / "rows.parquet", row_group_size=2)
    (tmp_path / "rows.jsonl").write_bytes(jsonl_bytes(end))
    expected = list(enumerate(ROWS, start=1))
    assert read_rows(tmp_path / "rows.csv") == expected
    assert read_rows(tmp_path / "rows.parquet") == expected
    assert read_rows(tmp_path / "rows.jsonl") == expected
    assert list(iter_rows(tmp_path / "rows.parquet", ["text", "no_such"])) == [(i, {"text": r["text"]})
                                                                              for i, r in expected]


def test_csv_is_streamed_a_bad_line_raised_when_reached(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_bytes(b"id,text\na,ok\nb,fine\nc,Caf\xe9\nd,never read\n")
    got = []
    with pytest.raises(DatasetError) as caught:
        for row in iter_rows(path):
            got.append(row)
    assert [r["id"] for _, r in got] == ["a", "b"]
    assert f"{path}: not UTF-8 text (byte 0xe9 on line 4)" in str(caught.value)


def test_a_corpus_reads_through_the_same_reader(tmp_path):
    """`corpus sample` / `corpus index` documents: a JSONL with lone \\r line ends, a CSV and a
    gzipped JSONL give one document per row, named file:row; a non-UTF-8 line names its row."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "de.jsonl").write_bytes(b"\r".join(json.dumps({"text": r["text"]}).encode() for r in ROWS[:2]))
    pd.DataFrame(ROWS[2:4])[["text"]].to_csv(folder / "ja.csv", index=False)
    (folder / "hi.jsonl.gz").write_bytes(gzip.compress(json.dumps({"text": ROWS[4]["text"]}).encode()))
    documents = list(read_documents([folder]))
    assert [(d.language, d.text) for d in documents] == [("de", ROWS[0]["text"]), ("de", ROWS[1]["text"]),
                                                         ("hi", ROWS[4]["text"]), ("ja", ROWS[2]["text"]),
                                                         ("ja", ROWS[3]["text"])]
    assert documents[1].source == f"{folder / 'de.jsonl'}:2"
    (folder / "de.jsonl").write_bytes(b'{"text": "ok"}\n{"text": "Gr\xf6\xdfe"}\n')
    with pytest.raises(DatasetError) as caught:
        list(read_documents([folder]))
    assert f"{folder / 'de.jsonl'}, row 2: not UTF-8 text (byte 0xf6 on line 2)" in str(caught.value)
