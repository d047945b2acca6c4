"""Is an OWL passage in the pretraining corpus? OWL App. B.4, with infini-gram (Liu et al., 2024).

The procedure (B.4): "Each passage was first submitted in full, and a nonzero count was taken as
an exact match. If no exact match was found, a fallback sliding window procedure was employed,
searching for chunks of the passage at varying word lengths: 40, 30, and 20 words with a stride
of 5." Here a window starts at word 0, 5, 10, ... and is the passage's own text from its first
to its last word (original spacing kept, so it is a substring of the passage); the first size
with any hit names the match (``window-40``, ``window-30``, ``window-20``), else ``none``. A
passage shorter than a size has no window of that size (one of fewer than 20 words is only ever
``exact`` or ``none``). Words are ``languages.unit_spans``: whitespace words, and dictionary
words (babelprobe.text.dictionary) in Thai, Japanese and Chinese.

Counts come from one of two places, behind the same ``count(text)``:

- a local index built by infini-gram's own indexer (``build_index``): byte-level (``u8``)
  suffix arrays, so a count is the exact number of occurrences of the UTF-8 bytes. Every
  document is preceded by infini-gram's separator byte 0xff, which never occurs in UTF-8, so no
  query can match across two documents. Each index is self-checked after it is built (texts
  known to be present must be found; a text spanning two documents must not be);
- the public infini-gram API (``ApiCounter``): POST ``{index, query_type: "count", query}`` ->
  ``{count, approx, ...}`` or ``{error}``, through the project's HTTP client (bounded, adaptive
  concurrency; retries honouring Retry-After, models/retry.py), its answers kept in the project's
  response cache (models/cache.py: keyed by the API's URL and index, and the request's hash) so a
  re-run sends nothing twice. The API counts Llama-2 token sequences, so its "substring" is a
  token-sequence match (OWL used the ``v4_olmo-2-1124-13b-instruct_llama`` index).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Literal, cast

from pydantic import BaseModel, ConfigDict

from babelprobe.data.corpus import Document, read_documents
from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem
from babelprobe.models.base import Fingerprint, Usage, request_key
from babelprobe.models.cache import ResponseCache
from babelprobe.text.units import unit_spans

Match = Literal["exact", "window-40", "window-30", "window-20", "none"]
WINDOW_SIZES: tuple[int, ...] = (40, 30, 20)
STRIDE = 5
SEEN: tuple[str, ...] = ("exact", "window-40", "window-30", "window-20")
MATCHES: tuple[str, ...] = (*SEEN, "none")
PRESENCE_FILE = "presence.jsonl"
# where older versions kept the API's answers (OUT/...): not read, its keys cannot be turned into
# the response cache's (a hash of URL, index and query); `corpus presence` says so when it is there
LEGACY_API_CACHE = "infini-gram-cache.jsonl"
INDEX_MANIFEST = "babelprobe-index.json"
# infini-gram's engine files every file of the index folder by these substrings of its *full
# path* (cpp_engine.h): a folder path holding one would be misread
ENGINE_WORDS = ("tokenized", "table", "offset", "metadata", "metaoff", "unigram")


class PresenceError(ValueError):
    """The index or the passages cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Passage:
    passage_id: str
    text: str
    language: str | None = None
    book_id: str | None = None


class PresenceRow(BaseModel):
    """One line of presence.jsonl."""

    passage_id: str
    book_id: str | None = None
    language: str | None = None
    match: Match | None  # None: the count failed (``error`` says why)
    count: int  # occurrences of the matching text (the passage, or the first window that hit)
    window: str | None = None  # the matching window's text (None for exact and none)
    window_start: int | None = None  # its first word (0-based)
    words: int  # the passage's words
    queries: int  # counts asked for this passage
    error: str | None = None

    @property
    def seen(self) -> bool:
        return self.match in SEEN


# ---------------------------------------------------------------- the B.4 procedure


def windows(text: str, size: int, language: str | None = None) -> list[tuple[int, str]]:
    """(first word, text) of every window of ``size`` words, stride 5 from word 0 (B.4)."""
    spans = unit_spans(text, language)
    return [(start, text[spans[start][0]:spans[start + size - 1][1]])
            for start in range(0, len(spans) - size + 1, STRIDE)]


Count = Callable[[str], Awaitable[int]]


async def presence_of(passage: Passage, count: Count) -> PresenceRow:
    """The B.4 procedure for one passage: the full text, then windows of 40, 30, 20 words."""
    text = passage.text.strip()
    words = len(unit_spans(text, passage.language))
    queries = 0

    def row(match: Match | None, count: int = 0, window: str | None = None, window_start: int | None = None,
            error: str | None = None) -> PresenceRow:
        return PresenceRow(passage_id=passage.passage_id, book_id=passage.book_id, language=passage.language,
                           words=words, queries=queries, match=match, count=count, window=window,
                           window_start=window_start, error=error)

    try:
        queries += 1
        full = await count(text)
        if full > 0:
            return row("exact", full)
        for size in WINDOW_SIZES:
            for start, window in windows(text, size, passage.language):
                if window == text:  # a passage of exactly `size` words: already counted in full
                    continue
                queries += 1
                hits = await count(window)
                if hits > 0:  # the first size with any hit names the match
                    return row(cast(Match, f"window-{size}"), hits, window, start)
    except CountError as exc:
        return row(None, error=str(exc))
    return row("none")


class CountError(RuntimeError):
    """A count could not be had (an API error after its retries); the passage becomes an error row."""


async def _gather(passages: list[Passage], count: Count, progress: Callable[[int], None] | None) -> list[PresenceRow]:
    async def one(passage: Passage) -> PresenceRow:
        row = await presence_of(passage, count)
        if progress:
            progress(1)
        return row

    return list(await asyncio.gather(*(one(p) for p in passages)))


# ---------------------------------------------------------------- passages


def load_passages(path: Path, langs: list[str] | None = None) -> list[Passage]:
    """JSONL/CSV/Parquet rows with ``passage_id`` and ``text`` (optional ``language``,
    ``book_id``), or an OWL dataset (``passage``, ``language_group``: every version is a
    passage, keyed by book, passage and language). A bad row is a DatasetError naming file,
    row and field."""
    rows = read_rows(path)
    if not rows:
        raise DatasetError([Problem(str(path), None, None, "no rows")])
    if "passage" in rows[0][1] and "language_group" in rows[0][1]:
        from babelprobe.families.owl.data import load_owl

        return [Passage(i.passage_id, i.passage, i.language, i.book_id) for i in load_owl(path, langs)]
    problems: list[Problem] = []
    passages: list[Passage] = []
    seen: dict[tuple[str, str, str], int] = {}
    for number, row in rows:
        bad = [f for f in ("passage_id", "text") if row.get(f) is None or not str(row.get(f)).strip()]
        problems += [Problem(str(path), number, f, "missing or empty") for f in bad]
        if bad:
            continue
        key = (str(row.get("book_id") or ""), str(row["passage_id"]), str(row.get("language") or ""))
        if key in seen:
            problems.append(Problem(str(path), number, "passage_id",
                                    f"duplicate passage {row['passage_id']!r} (first at row {seen[key]})"))
            continue
        seen[key] = number
        language = str(row["language"]) if row.get("language") else None
        if langs is None or language in langs:
            passages.append(Passage(str(row["passage_id"]), str(row["text"]), language,
                                    str(row["book_id"]) if row.get("book_id") else None))
    if problems:
        raise DatasetError(problems)
    return passages


def read_presence(path: Path) -> list[PresenceRow]:
    """presence.jsonl back, each line validated (file and line named on a bad one)."""
    rows = []
    for number, row in read_rows(path):
        try:
            rows.append(PresenceRow.model_validate(row))
        except ValueError as exc:
            first = str(exc).splitlines()[1:2]
            raise DatasetError([Problem(str(path), number, None, f"not a presence row ({' '.join(first)})")]) from None
    return rows


def sample_id(book_id: str | None, passage_id: str, language: str | None) -> str:
    """The id a passage gets in samples.jsonl (and a membership run's items): book/passage/language."""
    return "/".join(p for p in (book_id, passage_id, language) if p)


def write_samples(passages: list[Passage], out: Path) -> Path | None:
    """OUT/samples.jsonl: the passages as memorization samples (``id``, ``language``, ``text``), so
    `run memorization --data OUT/samples.jsonl` scores them (loss, Min-K%, zlib ratio, reference
    ratio) for `owl membership`. None when the passages carry no language."""
    rows = [p for p in passages if p.language]
    if not rows:
        return None
    path = out / "samples.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for p in rows:
            handle.write(json.dumps({"id": sample_id(p.book_id, p.passage_id, p.language), "language": p.language,
                                     "text": p.text.strip(), "source": "owl passage"}, ensure_ascii=False) + "\n")
    return path


def write_presence(rows: list[PresenceRow], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / PRESENCE_FILE
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(row.model_dump_json() + "\n")
    return path


# ---------------------------------------------------------------- a local index


class IndexManifest(BaseModel):
    """IDX/babelprobe-index.json: what was indexed, how, and the self-check."""

    engine: str  # infini-gram and its version
    token_dtype: Literal["u8"] = "u8"
    documents: int
    corpus_bytes: int  # UTF-8 bytes of the documents
    index_bytes: int  # the index folder on disk
    build_seconds: float
    cpus: int
    sources: dict[str, int]  # file -> documents
    self_check: list[str]  # the checks that passed


def check_index_path(out: Path) -> Path:
    out = out.resolve()
    bad = [w for w in ENGINE_WORDS if w in str(out)]
    if bad:
        raise PresenceError(f"{out}: infini-gram's engine sorts index files by words in their full path, and this "
                            f"path holds {bad[0]!r}; choose an index folder whose path has none of "
                            f"{', '.join(ENGINE_WORDS)}")
    return out


def _infini_gram_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("infini-gram")
    except PackageNotFoundError:
        raise PresenceError("the local corpus index needs infini-gram: pip install 'babelprobe[presence]'") from None


def _open_files_limit() -> int:
    # infini-gram raises the soft limit to --ulimit (default 1048576), which fails where the hard
    # limit is lower (20000 here): ask for the hard limit
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1048576 if hard == resource.RLIM_INFINITY else min(hard, 1048576)


def build_index(paths: list[Path], out: Path, text_field: str = "text", cpus: int | None = None,
                mem_gib: int = 4, log: Callable[[str], None] | None = None, parts: int | None = None) -> IndexManifest:
    """A byte-level (u8) infini-gram index of the documents in ``paths`` at ``out``, self-checked.

    infini-gram's indexer (``python -m infini_gram.indexing``) reads JSONL files with a ``text``
    field from a folder and needs absolute paths; the documents are staged there, one per line.
    Its suffix-array build splits the bytes into one part per CPU, each read ``HACK`` (100,000)
    bytes past its end: with parts shorter than that (a corpus under ~200 KB on 2 CPUs) the parts
    overlap, the table comes out the wrong size and every count is wrong, so small corpora are
    built with fewer parts (``parts`` forces a number: the tests break an index on purpose); the
    self-check catches whatever else goes wrong."""
    if mem_gib < 1:  # infini-gram plans batches of mem_gib GiB: with 0 it doubles their number forever
        raise PresenceError(f"--mem {mem_gib}: infini-gram's indexer needs at least 1 GiB")
    engine = f"infini-gram {_infini_gram_version()}"
    from infini_gram.indexing import HACK

    out = check_index_path(out)
    if out.exists() and any(out.iterdir()):
        raise PresenceError(f"{out} is not empty; choose a new --out for the index")
    created = not out.exists()
    try:
        return _build(paths, out, text_field, cpus, mem_gib, log, parts, engine, HACK)
    except BaseException:
        if created:  # a failed or refused build leaves nothing that looks like an index
            shutil.rmtree(out, ignore_errors=True)
        raise


def _build(paths: list[Path], out: Path, text_field: str, cpus: int | None, mem_gib: int,
           log: Callable[[str], None] | None, parts: int | None, engine: str, HACK: int) -> IndexManifest:
    started = time.perf_counter()
    documents: list[Document] = []
    sources: dict[str, int] = {}
    corpus_bytes = 0
    with tempfile.TemporaryDirectory(prefix="babelprobe-index-") as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        with (data_dir / "corpus.jsonl").open("w", encoding="utf-8") as handle:
            for doc in read_documents(paths, text_field):  # data/corpus.py: a text file is one document
                handle.write(json.dumps({"text": doc.text}, ensure_ascii=False) + "\n")
                documents.append(doc)
                corpus_bytes += len(doc.text.encode("utf-8"))
                sources[doc.file] = sources.get(doc.file, 0) + 1
        if not documents:
            raise PresenceError("no documents to index (every input is empty)")
        ds_bytes = corpus_bytes + len(documents)  # one separator byte per document
        parts = parts or max(1, min(cpus or os.cpu_count() or 1, ds_bytes // (2 * HACK)))
        out.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "infini_gram.indexing", "--data_dir", str(data_dir),
                   "--temp_dir", str(Path(tmp) / "work"), "--save_dir", str(out), "--token_dtype", "u8",
                   "--cpus", str(parts), "--mem", str(mem_gib), "--ulimit", str(_open_files_limit())]
        if log:
            log(f"indexing {len(documents)} documents ({corpus_bytes:,} bytes) with {engine}, {parts} part(s)")
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or "Something went wrong" in done.stdout:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise PresenceError(f"infini-gram indexing failed (exit {done.returncode}): " + " | ".join(tail))
    passed = self_check(out, documents)
    index_bytes = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    manifest = IndexManifest(engine=engine, documents=len(documents), corpus_bytes=corpus_bytes,
                             index_bytes=index_bytes, build_seconds=round(time.perf_counter() - started, 3),
                             cpus=parts, sources=sources, self_check=passed)
    (out / INDEX_MANIFEST).write_text(manifest.model_dump_json(indent=2))
    return manifest


class LocalIndex:
    """Exact byte counts on a u8 index built by ``build_index``."""

    def __init__(self, path: Path, checked: bool = True):
        self.path = path.resolve()
        if checked:
            manifest_path = self.path / INDEX_MANIFEST
            if not manifest_path.is_file():
                raise PresenceError(f"{path}: not a babelprobe corpus index (no {INDEX_MANIFEST}; build one with "
                                    "`babelprobe corpus index PATH... --out IDX`). Token-id indexes (u16/u32, such "
                                    "as infini-gram's downloadable ones) need their tokenizer and are not read here "
                                    "(infini-gram's u32 engine aborts); query the hosted ones with --api")
            self.manifest: IndexManifest | None = IndexManifest.model_validate_json(manifest_path.read_text())
        else:
            self.manifest = None
        _infini_gram_version()
        from infini_gram.engine import InfiniGramEngine

        tokenized = self.path / "tokenized.0"
        table = self.path / "table.0"
        if not (tokenized.is_file() and table.is_file()):
            raise PresenceError(f"{path}: no infini-gram index files (tokenized.0, table.0)")
        size = tokenized.stat().st_size
        # the table holds ceil(log2(bytes) / 8) bytes per position (infini_gram.indexing: ratio);
        # a table of another size is a broken build and would crash the engine
        ratio = math.ceil(math.log2(size) / 8)
        if table.stat().st_size != ratio * size:
            raise PresenceError(f"{path}: the suffix array is {table.stat().st_size} bytes, expected {ratio * size} "
                                "(a broken build); rebuild the index")
        # u8 engine: token ids are bytes; its vocabulary size is a byte too (255 at most)
        self.engine = InfiniGramEngine(index_dir=str(self.path), eos_token_id=0, vocab_size=255, token_dtype="u8",
                                       version=4)

    def count_now(self, text: str) -> int:
        # the engine answers {count, approx} or {error}
        result = cast(dict[str, Any], self.engine.count(input_ids=list(text.encode("utf-8"))))
        if "error" in result:
            raise CountError(str(result["error"]))
        return int(result["count"])

    async def count(self, text: str) -> int:
        return self.count_now(text)


def self_check(out: Path, documents: list[Document], samples: int = 5) -> list[str]:
    """Texts known to be present must count at least once, texts spanning two neighbouring
    documents (and in none) must count zero. A failed check raises PresenceError."""
    index = LocalIndex(out, checked=False)
    passed = []
    picks = sorted({round(i * (len(documents) - 1) / max(1, samples - 1)) for i in range(samples)})
    for i in picks:
        text = documents[i].text
        # a piece from the middle, and one from the first non-ASCII letter on (multi-byte UTF-8)
        middle = text[len(text) // 3: len(text) // 3 + 60]
        pieces = [middle] if middle.strip() else []
        non_ascii = next((k for k, ch in enumerate(text) if ord(ch) > 127), None)
        if non_ascii is not None:
            pieces.append(text[non_ascii: non_ascii + 30])
        for piece in pieces:
            if index.count_now(piece) < 1:
                raise PresenceError(f"{out}: self-check failed: {piece[:40]!r} from document {i} "
                                    f"({documents[i].source}) counts 0; this index cannot be trusted")
            passed.append(f"present: document {i} ({len(piece.encode('utf-8'))} bytes)")
    for i in picks[:3]:
        if i + 1 >= len(documents):
            continue
        across = documents[i].text[-12:] + documents[i + 1].text[:12]
        if not any(across in d.text for d in documents) and index.count_now(across) != 0:
            raise PresenceError(f"{out}: self-check failed: text spanning documents {i} and {i + 1} was found; "
                                "this index cannot be trusted")
        passed.append(f"boundary: documents {i}/{i + 1} not matched across")
    return passed


# ---------------------------------------------------------------- the public API


class CountRequest(BaseModel):
    """One count the infini-gram API is asked for: the body POSTed. Its ``request_key`` keys the
    response cache as a model request's does, under the API's ``Fingerprint`` (URL and index)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    index: str
    query_type: Literal["count"] = "count"
    query: str


class CountResult(BaseModel):
    """The API's answer as cached (a failed count is never cached, as a failed request)."""

    count: int


def api_fingerprint(url: str, index: str) -> Fingerprint:
    """What makes the API's counts what they are: its URL and index (the corpus and tokenizer)."""
    return Fingerprint(spec=url, backend="infini-gram-api", weights=index, dtype="count", device="api", versions={})


class ApiCounter:
    """Counts from the infini-gram API (see the module docstring), kept in the project's response
    cache (models/cache.py, ``--cache``, shared with ``run``) and retried. The cache is opened and
    used on the HTTP client's event-loop thread, where every count runs (SQLite objects stay on the
    thread that made them)."""

    def __init__(self, url: str, index: str, cache: Path, concurrency: int = 4, timeout: float = 30.0,
                 max_retries: int = 5):
        # the HTTP stack (httpx) only where the API is used: `run owl --presence` imports this module
        from babelprobe.models.http import HttpClient, public_url
        from babelprobe.models.retry import RetryBudget, RetryPolicy

        self.url = public_url(url)
        self.index = index
        self.cache_path = cache
        self.fingerprint = api_fingerprint(self.url, index).key()
        self._cache: ResponseCache | None = None
        self.usage = Usage()
        self.client = HttpClient(url, None, concurrency=concurrency, timeout=timeout,
                                 policy=RetryPolicy(max_retries=max_retries, budget=RetryBudget()), usage=self.usage)
        self.sent = 0
        self.cached = 0
        self._pending: dict[str, asyncio.Future[int]] = {}

    @property
    def cache(self) -> ResponseCache:
        if self._cache is None:  # first used on the event-loop thread: opened there
            self._cache = ResponseCache(self.cache_path)
        return self._cache

    @staticmethod
    def _parse(data: object) -> int:
        from babelprobe.models.http import bad_response
        from babelprobe.models.retry import ProviderError

        if isinstance(data, dict) and "error" in data:
            # the API's own refusal (unknown index, query too long ...): asking again will not help
            raise ProviderError(f"infini-gram: {data['error']}", retryable=False)
        if not isinstance(data, dict) or not isinstance(data.get("count"), int):
            raise bad_response(f"no integer 'count' in {str(data)[:80]!r}")
        return int(data["count"])

    async def count(self, text: str) -> int:
        from babelprobe.models.retry import ProviderError

        key = request_key(CountRequest(index=self.index, query=text))
        cached = self.cache.get_answers(self.fingerprint, [key], CountResult)
        if key in cached:
            self.cached += 1
            return cached[key].count
        if key in self._pending:  # the same window of two passages: one request
            return await self._pending[key]
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            self.sent += 1
            value = await self.client.call("POST", "", CountRequest(index=self.index, query=text).model_dump(),
                                           self._parse)
        except ProviderError as exc:
            future.set_exception(CountError(str(exc)))
            future.exception()  # retrieved: waiters re-raise it
            del self._pending[key]
            raise CountError(str(exc)) from None
        self.cache.put_many(self.fingerprint, "count", [(key, CountResult(count=value))])
        future.set_result(value)
        del self._pending[key]
        return value

    def close(self) -> None:
        async def close_cache() -> None:  # on the thread that opened it
            if self._cache is not None:
                self._cache.close()

        self.client.run(close_cache())
        self.client.close()


# ---------------------------------------------------------------- running it


@dataclass
class PresenceRun:
    rows: list[PresenceRow]
    seconds: float
    queries: int


def run_presence(passages: list[Passage], counter: LocalIndex | ApiCounter,
                 progress: Callable[[int], None] | None = None) -> PresenceRun:
    started = time.perf_counter()
    if isinstance(counter, ApiCounter):
        rows = counter.client.run(_gather(passages, counter.count, progress))
    else:
        rows = asyncio.run(_gather(passages, counter.count, progress))
    return PresenceRun(rows, time.perf_counter() - started, sum(r.queries for r in rows))


def match_counts(rows: list[PresenceRow]) -> dict[str, int]:
    """Fig. 9: passages per match type (and errors)."""
    counts = {m: 0 for m in MATCHES}
    for row in rows:
        key = row.match or "error"
        counts[key] = counts.get(key, 0) + 1
    return counts



# ---------------------------------------------------------------- labels for an OWL run


def presence_labels(rows: list[PresenceRow]) -> dict[tuple[str | None, str, str | None], str]:
    """(book_id, passage_id, language) -> match, for rows that were counted (errors carry no label)."""
    return {(r.book_id, r.passage_id, r.language): r.match for r in rows if r.match is not None}


def label_of(labels: dict[tuple[str | None, str, str | None], str], book_id: str, passage_id: str,
             language: str) -> str | None:
    """A passage version's label, as in App. B.4 / Fig. 10: the English passage was searched and
    its status stands for every version of the passage; a passage without an English row takes its
    own language's row; rows without book_id or language match on what they have."""
    for key in ((book_id, passage_id, "en"), (book_id, passage_id, language), (None, passage_id, "en"),
                (None, passage_id, language), (book_id, passage_id, None), (None, passage_id, None)):
        if key in labels:
            return labels[key]
    return None


def attach_presence(items: list, path: Path) -> list:
    """The OWL items with ``presence`` set from presence.jsonl (a DatasetError when none matches)."""
    labels = presence_labels(read_presence(path))
    out = [item.model_copy(update={"presence": label_of(labels, item.book_id, item.passage_id, item.language)})
           for item in items]
    if items and not any(item.presence for item in out):
        raise DatasetError([Problem(str(path), None, "passage_id", "no passage of the dataset has a counted row here "
                                    "(rows match on book_id, passage_id and language)")])
    return out
