"""`babelprobe datasets fetch NAME` (issue 8, public datasets): each release's converter on a
fixture shaped exactly like the release (tests/fixtures/releases/<name>/, see its README), the
output read by the family's own loader and accepted by `validate`; offline errors that say what to
download, from where and where to put it; bad release rows named by file, row and field; hash
checks; re-fetch idempotence; the `datasets` group keeping its bare listing. No network: every
test converts with --source, and HF_HUB_OFFLINE (conftest) stops any download."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.data.polyglot_or_not import load_cka_facts
from babelprobe.families.eclektic.data import load_eclektic
from babelprobe.data.fetch import hash_release_files
from babelprobe.data.releases import FetchError
from babelprobe.families import fetch_dataset, releases
from babelprobe.families.owl.data import load_owl
from babelprobe.families.cka.release import POLYGLOT_COLUMNS
from babelprobe.data.validation import DatasetError

FIXTURES = Path(__file__).parent / "fixtures" / "releases"
cli = CliRunner()


def validated(probe: str, data: Path) -> str:
    """`babelprobe validate --probe` on converted data: it must pass."""
    result = cli.invoke(app, ["validate", str(data), "--probe", probe])
    assert result.exit_code == 0, result.output
    return result.output


def copy_fixture(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / name, tmp_path / f"{name}-release"))


def test_polyglot_or_not_release_converts_to_the_cka_layout(tmp_path):
    result = fetch_dataset("polyglot-or-not", tmp_path / "out", str(FIXTURES / "polyglot-or-not"))
    out = result.out
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "SOURCE.json", "bg.parquet", "en.parquet"]
    assert pq.read_table(out / "bg.parquet").column_names == list(POLYGLOT_COLUMNS)
    facts = load_cka_facts(out)
    assert len(facts) == 8 and {f.language for f in facts} == {"en", "bg"}
    haas = next(f for f in facts if f.language == "bg" and f.fact_id == "rome_8783")
    assert haas.stems == ("Haas House се намира във", "Haas House се намира в")  # one stem per object
    florida = next(f for f in facts if f.fact_id == "calinet_143")
    assert florida.false == ("Канада", "Калифорния")
    assert "8 facts" in validated("cka", out)
    record = json.loads((out / "SOURCE.json").read_text(encoding="utf-8"))
    assert record["source_url"] == "https://huggingface.co/datasets/Polyglot-or-Not/Fact-Completion"
    assert record["licence"] == "Apache-2.0" and "2305.13675" in record["citation"]
    english = FIXTURES / "polyglot-or-not" / "data" / "English-00000-of-00001-0dd1923f09abeaf8.parquet"
    hashes = {f["path"]: f["sha256"] for f in record["release_files"]}
    assert hashes["data/English-00000-of-00001-0dd1923f09abeaf8.parquet"] == hashlib.sha256(english.read_bytes()).hexdigest()
    assert "babelprobe run cka --data" in (out / "README.md").read_text(encoding="utf-8")


def test_polyglot_or_not_langs_keeps_the_listed_languages_and_refuses_unknown_ones(tmp_path):
    out = fetch_dataset("polyglot-or-not", tmp_path / "out", str(FIXTURES / "polyglot-or-not"), ["bg"]).out
    assert {f.language for f in load_cka_facts(out)} == {"bg"}
    with pytest.raises(FetchError, match="no de in"):
        fetch_dataset("polyglot-or-not", tmp_path / "other", str(FIXTURES / "polyglot-or-not"), ["de"])


def test_eclektic_release_converts_to_one_row_per_question_and_target_language(tmp_path):
    out = fetch_dataset("eclektic", tmp_path / "out", str(FIXTURES / "eclektic")).out
    rows = load_eclektic(out / "eclektic.jsonl", need_context=True, need_target_context=True)
    assert len(rows) == 24 and {r.q_id for r in rows} == {"117", "388"}  # 2 questions x 12 languages
    release = [json.loads(line) for line in (FIXTURES / "eclektic" / "eclektic_main.jsonl").read_text(encoding="utf-8").splitlines()]
    source = next(r for r in rows if r.q_id == "388" and r.is_source)
    assert (source.source_language, source.question, source.answer) == ("ko", release[1]["question"], release[1]["answer"])
    german = next(r for r in rows if r.q_id == "388" and r.target_language == "de")
    assert (german.question, german.answer, german.target_context) == (release[1]["de_q"], release[1]["de_a"], release[1]["de_c"])
    assert german.source_context == release[1]["content"] and german.source_title == release[1]["title"]
    assert "2 questions" in validated("eclektic", out / "eclektic.jsonl")  # no --columns needed
    kept = fetch_dataset("eclektic", tmp_path / "kept", str(FIXTURES / "eclektic"), ["en", "de", "ko"]).out
    pairs = {(r.q_id, r.target_language) for r in load_eclektic(kept / "eclektic.jsonl")}
    assert pairs == {(q, lang) for q in ("117", "388") for lang in ("en", "de", "ko")}


def test_owl_release_books_convert_with_the_repository_metadata(tmp_path):
    out = fetch_dataset("owl", tmp_path / "out", str(FIXTURES / "owl")).out
    items = load_owl(out / "owl.jsonl")
    assert len(items) == 30  # (2 + 1 passages) x 10 languages; the CSV book and the JSON-records book
    groups = {i.language: i.language_group for i in items}
    assert groups == {"en": "original", "es": "official", "tr": "official", "vi": "official",
                      **{lang: "unseen" for lang in ("st", "yo", "tn", "ty", "mai", "mg")}}
    pride = [i for i in items if i.book_id == "pride_and_prejudice"]
    first = next(i for i in pride if i.language == "es" and i.passage_id == "1")
    assert (first.author, first.title_en, first.title, first.year) == (
        "Jane Austen", "Pride and Prejudice", "Orgullo y prejuicio", 1813)
    assert first.names == ("Elizabeth",) and first.passage.startswith("Elizabeth continuó")
    assert all(i.names == () for i in pride if i.passage_id == "2")  # the no-name set: Single_ent "[]"
    alice = next(i for i in items if i.book_id == "alice_s_adventures_in_wonderland" and i.language == "tr")
    assert alice.passage.startswith("Alice, kıyıda") and alice.year == 1865  # JSON records, \u-escaped
    assert "Alice o xu so dieu ky" in alice.aliases
    assert "2 books" in validated("owl", out / "owl.jsonl")


@pytest.mark.parametrize("name", sorted(releases()))
def test_offline_fetch_says_what_to_download_from_where_and_where_to_put_it(name, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "data" / name
    with pytest.raises(FetchError) as caught:
        fetch_dataset(name, out)
    message = str(caught.value)
    release = releases()[name]
    folder = tmp_path / "data" / f"{name}-release"
    for piece in (release.home, f"put them in {folder}", f"--source {folder}", f"--out {out}"):
        assert piece in message, message
    assert not out.exists()
    result = cli.invoke(app, ["datasets", "fetch", name, "--out", str(out)])
    assert result.exit_code == 2 and release.home in "".join(result.output.split()), result.output


def test_offline_message_names_the_release_files(monkeypatch, tmp_path):
    monkeypatch.setenv("BABELPROBE_OFFLINE", "1")
    with pytest.raises(FetchError, match=r"offline \(BABELPROBE_OFFLINE is set\)") as caught:
        fetch_dataset("eclektic", tmp_path / "eclektic")
    assert "eclektic_main.jsonl" in str(caught.value)
    with pytest.raises(FetchError, match="cannot download"):
        fetch_dataset("eclektic", tmp_path / "eclektic", "https://example.org/eclektic_main.jsonl")


def test_owl_without_the_repository_tables_offline_says_where_they_are(tmp_path):
    owl = copy_fixture("owl", tmp_path)
    (owl / "book_names.csv").unlink()
    with pytest.raises(FetchError) as caught:
        fetch_dataset("owl", tmp_path / "out", str(owl))
    message = str(caught.value)
    assert "raw.githubusercontent.com/emirkaan5/OWL/" in message and "book_names.csv" in message
    assert f"put it in: {owl}" in message


def test_a_bad_release_row_is_named_by_file_row_and_field_and_nothing_is_written(tmp_path):
    import pyarrow as pa

    release = copy_fixture("polyglot-or-not", tmp_path)
    english = release / "data" / "English-00000-of-00001-0dd1923f09abeaf8.parquet"
    rows = pq.read_table(english).to_pylist()
    rows[1]["true"] = ""
    pq.write_table(pa.Table.from_pylist(rows), english)
    out = tmp_path / "out"
    with pytest.raises(DatasetError) as caught:
        fetch_dataset("polyglot-or-not", out, str(release))
    assert f"{english}, row 2, field 'true': missing or empty" in str(caught.value)
    assert not out.exists()

    pq.write_table(pa.Table.from_pylist([{k: v for k, v in r.items() if k != "relation"} for r in rows]), english)
    with pytest.raises(DatasetError, match=r"row 1, field 'relation': missing \(the file has no such column"):
        fetch_dataset("polyglot-or-not", out, str(release))

    eclektic = copy_fixture("eclektic", tmp_path) / "eclektic_main.jsonl"
    lines = eclektic.read_text(encoding="utf-8").splitlines()
    second = json.loads(lines[1])
    del second["de_a"]
    eclektic.write_text(lines[0] + "\n" + json.dumps(second, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        fetch_dataset("eclektic", out, str(eclektic))
    assert f"{eclektic}, row 2, field 'de_a': missing or empty" in str(caught.value)

    owl = copy_fixture("owl", tmp_path)
    book = owl / "Pride_and_Prejudice.csv"
    text = book.read_text(encoding="utf-8").splitlines()
    book.write_text("\n".join(line.rsplit(",", 1)[0] for line in text) + "\n", encoding="utf-8")  # drop Single_ent
    with pytest.raises(DatasetError, match=r"Pride_and_Prejudice.csv, row 1, field 'Single_ent': missing"):
        fetch_dataset("owl", out, str(owl))
    (owl / "Moby_Dick.csv").write_text("en,Single_ent\nCall me Ishmael.,['Ishmael']\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="Moby_Dick.csv: not a book of book_names.csv"):
        fetch_dataset("owl", out, str(owl))
    assert not out.exists()


def test_a_refetch_gives_the_same_files_and_never_overwrites_foreign_folders(tmp_path):
    out = tmp_path / "pon"
    first = fetch_dataset("polyglot-or-not", out, str(FIXTURES / "polyglot-or-not"))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    second = fetch_dataset("polyglot-or-not", out, str(FIXTURES / "polyglot-or-not"))
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert before.keys() == after.keys()
    assert {k: v for k, v in before.items() if k not in ("SOURCE.json", "README.md")} == \
        {k: v for k, v in after.items() if k not in ("SOURCE.json", "README.md")}
    assert first.record.model_dump(exclude={"retrieved"}) == second.record.model_dump(exclude={"retrieved"})

    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(FetchError, match="not written by `babelprobe datasets fetch`"):
        fetch_dataset("polyglot-or-not", foreign, str(FIXTURES / "polyglot-or-not"))
    with pytest.raises(FetchError, match="holds the dataset 'polyglot-or-not', not 'eclektic'"):
        fetch_dataset("eclektic", out, str(FIXTURES / "eclektic"))
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "keep me"
    inside = copy_fixture("polyglot-or-not", out)  # a fetch replaces --out: its source cannot live there
    with pytest.raises(FetchError, match="inside --out"):
        fetch_dataset("polyglot-or-not", out, str(inside))


def test_a_published_sha256_is_checked(tmp_path):
    file = tmp_path / "data" / "English-00000-of-00001-abc.parquet"
    file.parent.mkdir()
    file.write_bytes(b"release bytes")
    digest = hashlib.sha256(b"release bytes").hexdigest()
    [ok] = hash_release_files([file], tmp_path, {"data/English-00000-of-00001-abc.parquet": digest})
    assert (ok.path, ok.sha256, ok.published_sha256) == ("data/English-00000-of-00001-abc.parquet", digest, digest)
    with pytest.raises(FetchError, match=f"sha256 {digest} differs from the release's published 0+"):
        hash_release_files([file], tmp_path, {"data/English-00000-of-00001-abc.parquet": "0" * 64})


def test_the_datasets_group_keeps_its_bare_listing():
    bare, listed = cli.invoke(app, ["datasets"]), cli.invoke(app, ["datasets", "list"])
    assert bare.exit_code == 0 and listed.exit_code == 0
    assert bare.output == listed.output and "bundled datasets" in bare.output
    result = cli.invoke(app, ["datasets", "fetch", "wikipedia"])
    assert result.exit_code == 2 and "unknown dataset 'wikipedia'" in result.output


def partial_eclektic(tmp_path: Path, keep: tuple[str, ...]) -> Path:
    """The fixture release cut to the target languages ``keep`` (no <lang>_q/_a/_c columns for the others)."""
    folder = tmp_path / "eclektic-partial"
    folder.mkdir()
    lines = (FIXTURES / "eclektic" / "eclektic_main.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    cut = [{k: v for k, v in row.items() if k[2:] not in ("_q", "_a", "_c") or k[:2] in keep} for row in rows]
    (folder / "eclektic_main.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in cut),
                                                encoding="utf-8")
    return folder


def test_a_partial_eclektic_release_converts_with_langs_and_names_the_absent_languages_once(tmp_path):
    """Issue 18: a release holding only some target languages was refused with a wall of
    'he_q missing' lines even with --langs naming only languages it has."""
    release = partial_eclektic(tmp_path, ("en", "de", "ko"))
    for langs in (["en", "de"], ["en", "de", "ko"]):
        out = tmp_path / f"partial-{len(langs)}"
        result = cli.invoke(app, ["datasets", "fetch", "eclektic", "--source", str(release), "--out", str(out),
                                  "--langs", ",".join(langs)])
        assert result.exit_code == 0, result.output
        full = fetch_dataset("eclektic", tmp_path / f"full-{len(langs)}", str(FIXTURES / "eclektic"), langs).out
        # the same rows as the full release cut with the same --langs
        assert (out / "eclektic.jsonl").read_bytes() == (full / "eclektic.jsonl").read_bytes()
        pairs = {(r.q_id, r.target_language) for r in load_eclektic(out / "eclektic.jsonl")}
        sources = {"117"} if "ko" not in langs else {"117", "388"}
        assert pairs == {(q, lang) for q in sources for lang in langs}
    result = cli.invoke(app, ["datasets", "fetch", "eclektic", "--source", str(release), "--out", str(tmp_path / "no")])
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "no columns for he, es, fr, hi, id, it, ja, pt, zh" in text and "it has en, de, ko" in text, text
    assert text.count("he_q") == 0 and text.count("missing or empty") == 0, text
    assert len(result.output.strip().splitlines()) <= 3, result.output
    assert not (tmp_path / "no").exists()
    # --langs naming a language the partial release lacks: still one message naming it
    result = cli.invoke(app, ["datasets", "fetch", "eclektic", "--source", str(release), "--out",
                              str(tmp_path / "no"), "--langs", "en,ja"])
    assert result.exit_code == 2 and "no columns for ja" in " ".join(result.output.split()), result.output


def test_source_json_records_where_the_release_came_from_absolutely(tmp_path, monkeypatch):
    """`fetched_from` was the --source text as typed ('eclektic'): meaningless from another folder."""
    shutil.copytree(FIXTURES / "eclektic", tmp_path / "eclektic")
    monkeypatch.chdir(tmp_path)
    out = fetch_dataset("eclektic", Path("out"), "eclektic", ["en", "de"]).out
    record = json.loads((out / "SOURCE.json").read_text(encoding="utf-8"))
    assert record["fetched_from"] == str((tmp_path / "eclektic").resolve())
    assert Path(record["fetched_from"]).is_absolute()


def test_owl_release_files_saved_with_a_byte_order_mark_convert_the_same(tmp_path):
    """Issue 18: re-saved in Excel ("CSV UTF-8"), the release's CSVs start with a byte-order mark that
    renamed their first column ('\\ufeffAuthor', '\\ufeffTitle', '\\ufeffen')."""
    plain = fetch_dataset("owl", tmp_path / "plain", str(FIXTURES / "owl")).out
    release = copy_fixture("owl", tmp_path)
    for name in ("book_names.csv", "release_date.csv", "Pride_and_Prejudice.csv"):
        (release / name).write_bytes((release / name).read_bytes().join([b"\xef\xbb\xbf", b""]))
    marked = fetch_dataset("owl", tmp_path / "marked", str(release)).out
    assert (marked / "owl.jsonl").read_bytes() == (plain / "owl.jsonl").read_bytes()
