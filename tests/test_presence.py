"""OWL App. B.4 presence: a real infini-gram index over a corpus built here, with passages known to
be exact, window-40, window-30, window-20 or absent (short, Cyrillic and Japanese ones too)."""

from __future__ import annotations

import json
import random

import pytest

from babelprobe.families.owl.presence import (LocalIndex, Passage, PresenceError, build_index, load_passages,
                                              match_counts, run_presence, windows)
from babelprobe.text.units import unit_spans


def _words(rng: random.Random, n: int, alphabet: str = "abcdefghijklmnopqrstuvwxyz") -> list[str]:
    return ["".join(rng.choice(alphabet) for _ in range(7)) for _ in range(n)]


JAPANESE = ("吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で"
            "ニャーニャー泣いていた事だけは記憶している。吾輩はここで始めて人間というものを見た。")


def _japanese_passage() -> str:
    spans = unit_spans(JAPANESE, "ja")
    return JAPANESE[:spans[26][1]]  # 27 words: one 20-word window at word 5, none of 30


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(7)
    w = {name: _words(rng, n) for name, n in
         [("exact", 30), ("w40", 60), ("w30", 50), ("w20", 45), ("none", 50), ("stride", 45), ("short", 8),
          ("short_none", 6), ("boundary", 20), ("filler", 400)]}
    ru = _words(rng, 25, "абвгдежзиклмнопрстуфхцчшщэюя")
    # the 60-word passage keeps irregular spacing (two spaces, a line break): windows keep it too
    w40_text = " ".join(w["w40"][:7]) + "  " + " ".join(w["w40"][7:20]) + "\n" + " ".join(w["w40"][20:])
    ja = _japanese_passage()
    ja_window = windows(ja, 20, "ja")[1][1]
    root = tmp_path_factory.mktemp("corpus")
    filler = " ".join(w["filler"])
    docs = [
        f"{filler[:300]} {' '.join(w['exact'])} {filler[300:600]}",
        f"lead {windows(w40_text, 40)[1][1]} tail",  # words 5..44 with the passage's own spacing
        f"{' '.join(w['w30'][10:40])}",
        f"x {' '.join(w['w20'][20:40])} y",
        f"{' '.join(w['stride'][21:41])}",  # 20 words, but not at a stride-5 start: no window hits
        f"before {' '.join(w['short'])} after",
        # the boundary passage is split over two neighbouring documents: never a match
        f"{filler[:100]} {' '.join(w['boundary'][:10])} ",  # its trailing space: joined, they would match
        f"{' '.join(w['boundary'][10:])} {filler[100:200]}",
        f"Пролог {' '.join(ru[5:25])} эпилог",
        f"序 {ja_window} 終",
        "我们今天去北京看长城，然后回家。",
    ]
    text_dir = root / "texts"
    text_dir.mkdir()
    (text_dir / "a.txt").write_text(docs[0], encoding="utf-8")
    with (root / "docs.jsonl").open("w", encoding="utf-8") as handle:
        for doc in docs[1:]:
            handle.write(json.dumps({"text": doc}, ensure_ascii=False) + "\n")
    passages = [
        {"passage_id": "exact", "text": " ".join(w["exact"])},
        {"passage_id": "w40", "text": w40_text},
        {"passage_id": "w30", "text": " ".join(w["w30"])},
        {"passage_id": "w20", "text": " ".join(w["w20"])},
        {"passage_id": "none", "text": " ".join(w["none"])},
        {"passage_id": "stride", "text": " ".join(w["stride"])},
        {"passage_id": "short", "text": " ".join(w["short"])},
        {"passage_id": "short-none", "text": " ".join(w["short_none"])},
        {"passage_id": "boundary", "text": " ".join(w["boundary"])},
        {"passage_id": "ru", "text": " ".join(ru), "language": "ru"},
        {"passage_id": "ja", "text": ja, "language": "ja"},
        {"passage_id": "zh", "text": "我们今天去北京看长城", "language": "zh"},
    ]
    passages_file = root / "passages.jsonl"
    passages_file.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in passages), encoding="utf-8")
    index = root / "idx"
    manifest = build_index([text_dir, root / "docs.jsonl"], index)
    return {"root": root, "index": index, "manifest": manifest, "passages": passages_file, "w40_text": w40_text,
            "ja_window": ja_window}


def test_each_kind_of_match_is_found(corpus):
    assert corpus["manifest"].documents == 11
    assert corpus["manifest"].index_bytes > corpus["manifest"].corpus_bytes
    rows = {r.passage_id: r for r in run_presence(load_passages(corpus["passages"]), LocalIndex(corpus["index"])).rows}
    expected = {"exact": "exact", "w40": "window-40", "w30": "window-30", "w20": "window-20", "none": "none",
                "stride": "none", "short": "exact", "short-none": "none", "boundary": "none", "ru": "window-20",
                "ja": "window-20", "zh": "exact"}
    assert {k: r.match for k, r in rows.items()} == expected
    assert (rows["w40"].window_start, rows["w30"].window_start, rows["w20"].window_start, rows["ru"].window_start) \
        == (5, 10, 20, 5)
    # a window is the passage's own text, spacing kept
    assert rows["w40"].window == windows(corpus["w40_text"], 40)[1][1] and "  " in rows["w40"].window
    assert rows["ja"].window == corpus["ja_window"]
    assert rows["exact"].count == 1 and rows["exact"].window is None
    # short passages have no window at all: one query each
    assert rows["short-none"].queries == 1 and rows["short-none"].words == 6
    # the boundary passage: its only 20-word window is the full text, counted once
    assert rows["boundary"].queries == 1
    assert match_counts(list(rows.values())) == {"exact": 3, "window-40": 1, "window-30": 1, "window-20": 3,
                                                 "none": 4}


def test_counts_are_exact_byte_counts(corpus):
    index = LocalIndex(corpus["index"])
    assert index.count_now("我们今天去北京") == 1
    assert index.count_now("Пролог") == 1
    assert index.count_now("lead ") == 1
    assert index.count_now("not in the corpus at all") == 0


def test_windows_follow_the_stride_and_keep_spacing():
    text = "a  b c\nd e f g h i j k l"
    assert [s for s, _ in windows(text, 5)] == [0, 5]
    assert windows(text, 5)[0][1] == "a  b c\nd e"
    assert windows("one two", 20) == []


def test_broken_and_misplaced_indexes_are_refused(tmp_path, corpus):
    bad_place = tmp_path / "my_table_idx"
    with pytest.raises(PresenceError, match="'table'"):
        build_index([corpus["root"] / "docs.jsonl"], bad_place)
    # infini-gram splits a small corpus into overlapping parts when asked for several: the table
    # comes out the wrong size and every count would be wrong; the self-check refuses it
    with pytest.raises(PresenceError, match="broken build"):
        build_index([corpus["root"] / "docs.jsonl"], tmp_path / "two_parts", parts=2)
    assert not (tmp_path / "two_parts").exists()  # a refused build leaves nothing behind
    with pytest.raises(PresenceError, match="not a babelprobe corpus index"):
        LocalIndex(tmp_path / "two_parts")
    with pytest.raises(PresenceError, match="not empty"):
        build_index([corpus["root"] / "docs.jsonl"], corpus["index"])


def test_passages_file_problems_name_row_and_field(tmp_path):
    from babelprobe.data.validation import DatasetError

    bad = tmp_path / "p.jsonl"
    bad.write_text('{"passage_id": "a", "text": "x"}\n{"passage_id": "b"}\n{"passage_id": "a", "text": "y"}\n')
    with pytest.raises(DatasetError) as err:
        load_passages(bad)
    assert "row 2, field 'text'" in str(err.value) and "row 3, field 'passage_id'" in str(err.value)


def test_owl_dataset_passages():
    from babelprobe.families.owl.config import DEMO_OWL

    passages = load_passages(DEMO_OWL)
    assert len(passages) == 12 and all(isinstance(p, Passage) and p.book_id and p.language for p in passages)


# ---------------------------------------------------------------- the API path


class InfiniGramApi:
    """A loopback server speaking the infini-gram API's JSON (POST {index, query_type, query} ->
    {count, approx, latency} or {error}), counting with a REAL local infini-gram index; the first
    attempt of some queries gets a 429 (Retry-After) or a 500, decided by a hash of the query."""

    def __init__(self, index: LocalIndex, name: str, faults: bool = True):
        import threading

        self.index, self.name, self.faults = index, name, faults
        self.requests = 0
        self.injected = {"429": 0, "500": 0}
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()

    def handler(self):
        import hashlib
        import time

        from loopback_server import _Quiet

        api = self

        class Handler(_Quiet):
            def do_POST(self):
                body = json.loads(self._body())
                query = body.get("query", "")
                digest = int(hashlib.sha256(query.encode()).hexdigest(), 16)
                with api.lock:
                    api.requests += 1
                    nth = api.seen.get(query, 0)
                    api.seen[query] = nth + 1
                if api.faults and nth == 0 and digest % 3 == 0:
                    api.injected["429"] += 1
                    return self._send(429, b'{"error": "rate limited"}', headers={"Retry-After": "0.05"})
                if api.faults and nth == 0 and digest % 5 == 0:
                    api.injected["500"] += 1
                    return self._send(500, b"Internal Server Error", content_type="text/plain")
                if body.get("index") != api.name:
                    return self._send(200, json.dumps({"error": f"Invalid index: {body.get('index')}"}).encode())
                if body.get("query_type") != "count" or not isinstance(query, str):
                    return self._send(200, b'{"error": "Invalid query_type"}')
                started = time.perf_counter()
                count = api.index.count_now(query)
                self._send(200, json.dumps({"count": count, "approx": False,
                                            "latency": 1000 * (time.perf_counter() - started),
                                            "token_ids": [], "tokens": []}).encode())

        return Handler


def test_api_path_matches_the_local_index_through_faults_and_caches(corpus, tmp_path):
    from loopback_server import serve

    from babelprobe.families.owl.presence import ApiCounter, CountRequest, CountResult, api_fingerprint
    from babelprobe.models.base import request_key
    from babelprobe.models.cache import ResponseCache

    passages = load_passages(corpus["passages"])
    local = {r.passage_id: r for r in run_presence(passages, LocalIndex(corpus["index"])).rows}
    api = InfiniGramApi(LocalIndex(corpus["index"]), "v4_test_u8")
    cache = tmp_path / "responses.sqlite"  # the project's response cache, as `run --cache`
    with serve(api.handler()) as base:
        url = base.removesuffix("/v1") + "/"
        counter = ApiCounter(url, "v4_test_u8", cache, concurrency=3)
        waits: list[float] = []

        async def record(seconds: float) -> None:
            waits.append(seconds)

        counter.client.sleep = record
        rows = {r.passage_id: r for r in run_presence(passages, counter).rows}
        sent, retries = counter.sent, counter.usage.retries
        counter.close()
        assert {k: r.model_dump() for k, r in rows.items()} == {k: r.model_dump() for k, r in local.items()}
        assert api.injected["429"] > 0 and api.injected["500"] > 0
        assert retries == api.injected["429"] + api.injected["500"]
        assert waits.count(0.05) == api.injected["429"]  # Retry-After honoured
        assert sent == len(api.seen) == sum(r.queries for r in rows.values())  # every query once, none twice
        # every answer is in the response cache, under the API's fingerprint (URL and index), keyed
        # by the request's hash as a model request is
        stored = ResponseCache(cache)
        fingerprint = api_fingerprint(counter.url, "v4_test_u8").key()
        assert stored.count(fingerprint) == stored.count() == sent
        exact = rows["exact"]
        key = request_key(CountRequest(index="v4_test_u8", query=next(p.text for p in passages
                                                                     if p.passage_id == "exact").strip()))
        assert stored.get_answers(fingerprint, [key], CountResult) == {key: CountResult(count=exact.count)}
        # a re-run sends nothing
        before = api.requests
        again = ApiCounter(url, "v4_test_u8", cache)
        rerun = run_presence(passages, again).rows
        again.close()
        assert api.requests == before and again.sent == 0 and again.cached == sent
        assert [r.model_dump() for r in rerun] == [r.model_dump() for r in rows.values()]
        # the API's own error shape ({"error": ...}) is a final error for that passage, kept as a row
        wrong = ApiCounter(url, "v4_no_such_index", cache, max_retries=1)
        errors = run_presence(passages[:2], wrong).rows
        wrong.close()
        assert all(r.match is None and "Invalid index: v4_no_such_index" in r.error for r in errors)
        assert stored.count() == sent  # errors are not cached
        stored.close()


def test_commands_write_presence_jsonl(tmp_path):
    """`corpus index` and `corpus presence` on the bundled public-domain demo corpus and OWL passages."""
    from typer.testing import CliRunner

    from babelprobe.cli import app
    from babelprobe.config import BUNDLED_DATA

    cli = CliRunner()
    done = cli.invoke(app, ["corpus", "index", str(BUNDLED_DATA / "owl_corpus_demo.jsonl"), "--out", str(tmp_path / "idx")])
    assert done.exit_code == 0, done.output
    done = cli.invoke(app, ["corpus", "presence", "--passages", str(BUNDLED_DATA / "owl_demo.jsonl"),
                            "--index", str(tmp_path / "idx"), "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in (tmp_path / "out" / "presence.jsonl").read_text().splitlines()]
    got = {(r["book_id"], r["language"]): r["match"] for r in rows}
    assert len(rows) == 12 and set(rows[0]) >= {"passage_id", "match", "count", "window"}
    # verbatim in the corpus: exact; another edition's quotes: a 40-word window; French spacing
    # before ';' (a different typography of the same text): none, the noisy label the README warns of
    assert got[("don-quixote", "en")] == got[("anna-karenina", "ru")] == got[("metamorphosis", "de")] == "exact"
    assert got[("alice", "en")] == "window-40" and got[("les-miserables", "fr")] == "none"
    done = cli.invoke(app, ["corpus", "presence", "--passages", str(BUNDLED_DATA / "owl_demo.jsonl"),
                            "--out", str(tmp_path / "o2")])
    assert done.exit_code == 2 and "--index IDX" in done.output


def test_a_crlf_text_corpus_is_indexed_as_its_bytes(tmp_path):
    """A .txt corpus with Windows (CRLF) or old Mac (CR) line ends is indexed byte for byte: a
    passage quoted from it with its own line ends is an exact match, as from a JSONL corpus (before,
    newline translation made them "none")."""
    rng = random.Random(11)
    crlf, cr = _words(rng, 40), _words(rng, 40, "абвгдежзиклмнопрстуфхцчшщэюя")
    crlf_passage = " ".join(crlf[:20]) + "\r\n" + " ".join(crlf[20:])
    cr_passage = " ".join(cr[:20]) + "\r" + " ".join(cr[20:])
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "windows.txt").write_bytes(f"Chapter 1\r\n\r\n{crlf_passage}\r\nThe end.\r\n".encode())
    (texts / "mac.txt").write_bytes(f"Глава 1\r{cr_passage}\rКонец.".encode())
    manifest = build_index([texts], tmp_path / "idx")
    assert manifest.corpus_bytes == sum(len(p.read_bytes()) for p in texts.iterdir())
    index = LocalIndex(tmp_path / "idx")
    passages = [Passage(passage_id="crlf", text=crlf_passage), Passage(passage_id="cr", text=cr_passage, language="ru")]
    rows = {r.passage_id: r for r in run_presence(passages, index).rows}
    assert rows["crlf"].match == "exact" and rows["cr"].match == "exact"


def test_index_memory_that_cannot_work_is_refused_in_one_line(tmp_path):
    """`--mem 0` made infini-gram's indexer double its batch count forever (a hang)."""
    from typer.testing import CliRunner

    from babelprobe.cli import app
    from babelprobe.config import BUNDLED_DATA

    for mem in ("0", "-2"):
        done = CliRunner().invoke(app, ["corpus", "index", str(BUNDLED_DATA / "owl_corpus_demo.jsonl"),
                                        "--out", str(tmp_path / f"idx{mem}"), "--mem", mem])
        assert done.exit_code != 0 and f"--mem {mem}: infini-gram's indexer needs at least 1 GiB" in done.output
        assert len(done.output.strip().splitlines()) == 1 and not (tmp_path / f"idx{mem}").exists()
    with pytest.raises(PresenceError, match="--mem 0"):
        build_index([BUNDLED_DATA / "owl_corpus_demo.jsonl"], tmp_path / "idx", mem_gib=0)


def test_corpus_presence_api_answers_come_back_from_the_response_cache(corpus, tmp_path):
    """`corpus presence --api`: the answers go to the response cache (`--cache`, the file `run`
    uses), so a second run sends nothing; the JSONL cache older versions kept in OUT is not read,
    and the run says so; a `--cache` naming a JSONL file is refused in one line."""
    from loopback_server import serve
    from typer.testing import CliRunner

    from babelprobe.cli import app
    from babelprobe.families.owl.presence import LEGACY_API_CACHE

    api = InfiniGramApi(LocalIndex(corpus["index"]), "v4_test_u8", faults=False)  # the faults: the test above
    cli = CliRunner()
    with serve(api.handler()) as base:
        args = ["corpus", "presence", "--passages", str(corpus["passages"]), "--api", base.removesuffix("/v1") + "/",
                "--api-index", "v4_test_u8", "--cache", str(tmp_path / "responses.sqlite")]
        first = cli.invoke(app, [*args, "--out", str(tmp_path / "a")], env={"COLUMNS": "200"})
        assert first.exit_code == 0, first.output
        sent = len(api.seen)
        assert f"API: {sent} sent, 0 from cache" in first.output and "not read" not in first.output
        (tmp_path / "b").mkdir()
        (tmp_path / "b" / LEGACY_API_CACHE).write_text('{"key": "0f", "count": 3}\n')
        before = api.requests
        second = cli.invoke(app, [*args, "--out", str(tmp_path / "b")], env={"COLUMNS": "200"})
        assert second.exit_code == 0, second.output
        assert api.requests == before and f"API: 0 sent, {sent} from cache" in second.output
        assert f"{LEGACY_API_CACHE} (the API cache of older versions) was not read" in " ".join(second.output.split())
        assert (tmp_path / "a" / "presence.jsonl").read_text() == (tmp_path / "b" / "presence.jsonl").read_text()
        old = cli.invoke(app, [*args[:-1], str(tmp_path / "old.jsonl"), "--out", str(tmp_path / "c")])
        assert old.exit_code == 2 and "JSONL cache of older versions is not read" in " ".join(old.output.split())
