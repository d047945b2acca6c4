"""One corpus reader (data/corpus.py) for every `corpus` command: `corpus sample` (Shared Path
§5.2) and `corpus index` (OWL App. B.4) read the same file the same way. Before, the sampler cut a
.txt file into one document per line and the index kept one per file."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from babelprobe.cli import FAMILY_COMMANDS, app
from babelprobe.data.corpus import DOCUMENT_RULE, known_languages, read_documents
from babelprobe.data.validation import DatasetError
from babelprobe.families.base import SHARED_GROUPS

# ordinary text in several scripts; a document of several lines, Windows line ends
RUSSIAN = ("Все люди рождаются свободными и равными в своем достоинстве и правах.\r\n"
           "Они наделены разумом и совестью и должны поступать в отношении друг друга в духе братства.\r\n"
           "Каждый человек должен обладать всеми правами и всеми свободами, провозглашенными настоящей "
           "Декларацией.\r\n")
DOCUMENTS = {
    "ja": "すべての人間は、生まれながらにして自由であり、\nかつ、尊厳と権利とについて平等である。",
    "ar": "يولد جميع الناس أحرارًا متساوين في الكرامة والحقوق.\r\nوقد وهبوا عقلاً وضميرًا.",
    "hi": "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता और समानता प्राप्त है।",
    "ru": RUSSIAN,
}


def test_sample_and_index_read_a_text_file_of_several_lines_as_one_document(tmp_path):
    corpus = tmp_path / "udhr.txt"
    corpus.write_bytes(RUSSIAN.encode("utf-8"))
    cli = CliRunner()
    sampled = cli.invoke(app, ["corpus", "sample", str(corpus), "--lang", "ru", "--out", str(tmp_path / "s"),
                               "--identifier", "none", "--min-chars", "10", "--per-language", "5"])
    assert sampled.exit_code == 0, sampled.output
    indexed = cli.invoke(app, ["corpus", "index", str(corpus), "--out", str(tmp_path / "idx")])
    assert indexed.exit_code == 0, indexed.output
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    index = json.loads((tmp_path / "idx" / "babelprobe-index.json").read_text())
    assert manifest["counts"]["ru"]["read"] == index["documents"] == 1
    assert index["sources"] == {str(corpus): 1} and index["corpus_bytes"] == len(RUSSIAN.encode("utf-8"))
    rows = pq.read_table(tmp_path / "s" / "ru.parquet").to_pylist()
    # the sample keeps the document's own line ends (the filters see it stripped of outer space)
    assert [(r["text"], r["source"]) for r in rows] == [(RUSSIAN.strip(), str(corpus))]
    # a passage across its CRLF line end is an exact match in the index, as it is in the sample
    from babelprobe.families.owl.presence import LocalIndex

    across = "и правах.\r\nОни наделены"
    assert LocalIndex(tmp_path / "idx").count_now(across) == 1 and across in rows[0]["text"]


def _write_every_format(folder: Path) -> list[Path]:
    """The same documents as JSONL, gzipped JSONL (named as ours and as mC4's files), CSV, Parquet
    and one text file each."""
    rows = [{"text": text, "language": lang} for lang, text in DOCUMENTS.items()]
    rows.insert(1, {"text": " \n ", "language": "en"})  # an empty document: skipped everywhere
    folder.mkdir()
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    (folder / "c.jsonl").write_bytes(lines)
    (folder / "c.jsonl.gz").write_bytes(gzip.compress(lines))
    (folder / "c4-xx.tfrecord-00000-of-01024.json.gz").write_bytes(gzip.compress(lines))
    with (folder / "c.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, ["text", "language"])
        writer.writeheader()
        writer.writerows(rows)
    pq.write_table(pa.Table.from_pylist(rows), folder / "c.parquet")
    texts = folder / "texts"
    for row in rows:
        (texts / row["language"]).mkdir(parents=True)
        (texts / row["language"] / "udhr.txt").write_bytes(row["text"].encode("utf-8"))
    return [folder / "c.jsonl", folder / "c.jsonl.gz", folder / "c4-xx.tfrecord-00000-of-01024.json.gz",
            folder / "c.csv", folder / "c.parquet", texts]


def test_every_format_gives_the_same_documents(tmp_path):
    expected = sorted((lang, text) for lang, text in DOCUMENTS.items())
    for path in _write_every_format(tmp_path / "in"):
        docs = list(read_documents([path], lang_field="language"))
        assert sorted((d.language, d.text) for d in docs) == expected, path  # bytes as they are: \r\n kept
        assert all(d.file.startswith(str(path)) for d in docs)
    assert known_languages([tmp_path / "in" / "texts"]) == ["ar", "en", "hi", "ja", "ru"]  # the folders' names
    assert "one document" in DOCUMENT_RULE and "one document per row" in DOCUMENT_RULE
    # the rule is the `corpus` group's help, and `babelprobe --help` lists the same text
    shown = CliRunner().invoke(app, ["corpus", "--help"], env={"COLUMNS": "300"})
    assert shown.exit_code == 0 and DOCUMENT_RULE in " ".join(shown.output.replace("│", " ").split())
    assert FAMILY_COMMANDS["corpus"] == SHARED_GROUPS["corpus"]


def test_the_index_and_the_sample_count_the_same_documents_of_a_folder(tmp_path):
    texts = _write_every_format(tmp_path / "in")[-1]
    cli = CliRunner()
    done = cli.invoke(app, ["corpus", "index", str(texts), "--out", str(tmp_path / "idx")])
    assert done.exit_code == 0, done.output
    index = json.loads((tmp_path / "idx" / "babelprobe-index.json").read_text())
    done = cli.invoke(app, ["corpus", "sample", str(texts), "--out", str(tmp_path / "s"), "--identifier", "none",
                            "--min-chars", "10", "--per-language", "5"])
    assert done.exit_code == 0, done.output
    counts = json.loads((tmp_path / "s" / "manifest.json").read_text())["counts"]
    assert index["documents"] == sum(c["read"] for c in counts.values()) == len(DOCUMENTS)
    assert sorted(counts) == sorted(DOCUMENTS)  # each language from its folder's name


def test_bad_corpus_files_name_file_row_and_field(tmp_path):
    def error(path: Path, **kwargs: str) -> str:
        with pytest.raises(DatasetError) as caught:
            list(read_documents([path], **kwargs))
        return str(caught.value)

    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Größe".encode("latin-1"))
    assert "latin1.txt: not UTF-8 text" in error(latin1)
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_bytes(b'{"text": "ok"}\n{"text": "Gr\xf6\xdfe"}\n')
    assert "c.jsonl, row 2: not UTF-8 text" in error(jsonl)
    jsonl.write_text('{"text": "ok"}\n{"body": "x"}\n', encoding="utf-8")
    assert "c.jsonl, row 2, field 'text': missing text" in error(jsonl)
    assert "c.jsonl, row 1, field 'language': no language" in error(jsonl, lang_field="language")
    fake = tmp_path / "c.jsonl.gz"
    fake.write_text('{"text": "not gzipped"}\n')
    assert "c.jsonl.gz: not a readable gzip file" in error(fake)
    other = tmp_path / "c.docx"
    other.write_text("x")
    assert "unsupported file type '.docx'" in error(other)
    assert "no such file or directory" in error(tmp_path / "missing.txt")
    (tmp_path / "empty").mkdir()
    assert "empty: no .txt" in error(tmp_path / "empty")
