"""Corpus sampling for memorization probes (Shared Path §5.2): stream documents (read by
data/corpus.py, the reader every `corpus` command shares), filter them, identify their language,
and draw N per language through a seeded shuffle buffer.

Filters (each a named function, True = remove; applied in this order, the first that fires is
counted; thresholds are ``FilterSettings``):
- ``too_short``: at most ``min_chars`` characters (the paper keeps "more than 600 characters";
  the authors' script kept 600 exactly too);
- ``contains_url``: "http://" or "https://" (the paper names "http://"; the authors' script
  matched both);
- ``garbled``: a U+FFFD replacement character, or mojibake (ftfy's ``is_bad`` heuristic: UTF-8
  read as Latin-1/cp1252 and the like);
- ``repeated_string``: one character 11+ times in a row (the authors' ``(.)\\1{10,}``) or a unit
  of 2-30 characters 5+ times in a row;
- ``long_digit_run``: more than ``max_digits`` digits in a run, single separators (space , . : / | -)
  between them allowed ("long sequences of meaningless digits");
- ``duplicate``: the same text (stripped, case-folded) already admitted for the language (the
  authors' md5 de-duplication; only admitted texts are remembered, so memory stays bounded);
- language: ``lang_mismatch``, ``lang_low_confidence``, ``lang_low_proportion`` (data/langid.py).

The authors' script (``dataset_clean.py``, xiaoyuluoit97/MLLM_memorization) applies filters the
paper does not name; ``corpus sample --preset authors`` turns them on (``FilterSettings.authors()``):
- ``bad_char``: any of ``# < > © → { }`` or the string "null" (their list, checked after length);
- ``too_numeric``: more than 30% of the ``\\w+`` tokens are all digits (their ``is_too_numeric``);
- the 600-character rule as written there: a text is dropped when *shorter than* 600 characters
  (600 exactly is kept), where the paper says "more than 600" (``too_short`` then means < 600).
Their other checks differ in form only or are kept as ours: garbled = two U+FFFD in a row (ours:
one, or mojibake), repeated = one character 11+ times (ours adds repeated units), long numbers =
30+ groups of 2+ digits (ours: more than 30 digits in a run); CLD3 language ID (``--identifier
cld3``); no shuffle (the sample is the first N passing texts: ``--buffer-size 0``, which the preset
sets unless ``--buffer-size`` is given).

Sampling (``--sampler``): ``reservoir`` (the default) or ``shuffle`` (the paper's algorithm).
The paper drew "50,000 filtered examples per language with a 5 million shuffle buffer"
(``datasets``' ``IterableDataset.shuffle``: fill a buffer, then for every new example emit a
random buffered one and put the new one in its place; at the end emit the rest in random order).
``ShuffleBuffer`` is that algorithm, one buffer and one seeded RNG per language, so a language's
sample does not depend on how languages interleave in the stream. Memory is bounded by the buffer
(plus the de-duplication set of admitted texts' digests), never by the corpus: reading stops
early once every requested language has its N rows. (The authors' script discarded the result of
``dataset.shuffle(...)`` and so took the first N passing documents in stream order.) Its memory is
the buffer: up to ``buffer_size`` admitted texts per language (5M texts of ~1.5 kB: ~8 GB for one
language), i.e. it grows with the input until the buffer is full (bench/README.md).

``Reservoir`` (the default) draws from the same window with O(N) memory: a shuffle buffer of B
emitting N rows only ever emits rows among the first B + N admitted ones, so the reservoir keeps a
uniform sample of N of a language's first ``buffer_size + per_language`` admitted rows (Vitter's
Algorithm R, one seeded RNG per language), writes it as soon as that window is read, frees it, and
stops reading the language (the whole stream once every requested language is full). Within the
window every row is equally likely (the shuffle buffer slightly favours the earliest rows).
``buffer_size=0`` keeps the first N admitted rows, which is what the authors' script did, and
stops reading as soon as each language has them. Both keep the de-duplication digests of the
admitted rows of a language until it is full (~100 bytes a row).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from babelprobe.data.corpus import Document
from babelprobe.data.langid import Identifier, check_languages, standard_code
from babelprobe.data.validation import DatasetError, Problem
from babelprobe.families.memorization.config import FilterSettings  # declared with the options: --help reads its defaults


# ------------------------------------------------------------------ filters (True = remove)

def too_short(text: str, min_chars: int = 600, keep_min_chars: bool = False) -> bool:
    """The paper keeps "more than 600 characters"; the authors' code drops ``len < 600``."""
    length = len(text.strip())
    return length < min_chars if keep_min_chars else length <= min_chars


AUTHORS_BAD_CHARS = ("#", "<", ">", "©", "→", "}", "{", "null")


def bad_char(text: str) -> bool:
    """The authors' ``bad_char`` rule: any of # < > © → { } or the string "null"."""
    return any(bad in text for bad in AUTHORS_BAD_CHARS)


def too_numeric(text: str, threshold: float = 0.3) -> bool:
    """The authors' ``is_too_numeric``: more than ``threshold`` of the ``\\w+`` tokens are digits."""
    tokens = re.findall(r"\w+", text)
    return bool(tokens) and sum(token.isdigit() for token in tokens) / len(tokens) > threshold


_URL = re.compile(r"https?://", re.I)


def contains_url(text: str) -> bool:
    return bool(_URL.search(text))


def garbled(text: str) -> bool:
    from ftfy.badness import is_bad

    return "\ufffd" in text or is_bad(text)


_REPEATED_CHAR = re.compile(r"(.)\1{10,}", re.S)
_REPEATED_UNIT = re.compile(r"(.{2,30}?)\1{4,}", re.S)


def repeated_string(text: str) -> bool:
    if _REPEATED_CHAR.search(text):
        return True
    # a unit of one repeated character is the rule above's business (its own threshold)
    return any(len(set(m.group(1))) > 1 for m in _REPEATED_UNIT.finditer(text))


def long_digit_run(text: str, max_digits: int = 30) -> bool:
    return bool(re.search(r"\d(?:[ ,.:/|-]?\d){%d,}" % max_digits, text))


def text_filters(settings: FilterSettings) -> list[tuple[str, Callable[[str], bool]]]:
    filters: list[tuple[str, Callable[[str], bool]]] = [
        ("too_short", lambda t: too_short(t, settings.min_chars, settings.keep_min_chars))]
    if settings.bad_chars:  # the authors' order: right after the length
        filters.append(("bad_char", bad_char))
    filters += [
        ("contains_url", contains_url),
        ("garbled", garbled),
        ("repeated_string", repeated_string),
    ]
    if settings.max_numeric_share is not None:
        share = settings.max_numeric_share
        filters.append(("too_numeric", lambda t: too_numeric(t, share)))
    filters.append(("long_digit_run", lambda t: long_digit_run(t, settings.max_digits)))
    return filters


def language_verdict(identifier: Identifier, text: str, expected: str, settings: FilterSettings
                     ) -> tuple[str | None, float, float]:
    """(reason to remove or None, confidence, proportion)."""
    verdict = identifier.judge(text, expected)
    if verdict.language != standard_code(expected):
        return "lang_mismatch", verdict.confidence, verdict.proportion
    if verdict.confidence < identifier.min_confidence(expected, settings.min_confidence):
        return "lang_low_confidence", verdict.confidence, verdict.proportion
    if verdict.proportion < settings.min_proportion:
        return "lang_low_proportion", verdict.confidence, verdict.proportion
    return None, verdict.confidence, verdict.proportion


# ------------------------------------------------------------------ sampling

class ShuffleBuffer:
    """``datasets``' shuffle buffer for one language, seeded."""

    def __init__(self, size: int, rng: random.Random):
        self.size, self.rng = size, rng
        self.items: list = []

    def push(self, item):
        """Add ``item``; once the buffer is full, return a random buffered item it replaced."""
        if self.size == 0:  # no buffer: stream order
            return item
        if len(self.items) < self.size:
            self.items.append(item)
            return None
        index = self.rng.randrange(self.size)
        out, self.items[index] = self.items[index], item
        return out

    def drain(self) -> list:
        self.rng.shuffle(self.items)
        out, self.items = self.items, []
        return out


class Reservoir:
    """A uniform sample of ``size`` items of a stream, in O(size) memory (Vitter 1985, "Random
    sampling with a reservoir", Algorithm R), seeded: the i-th item (0-based) replaces a random
    slot with probability size / (i + 1)."""

    def __init__(self, size: int, rng: random.Random):
        self.size, self.rng, self.seen = size, rng, 0
        self.items: list = []

    def offer(self, item) -> None:
        if len(self.items) < self.size:
            self.items.append(item)
        else:
            slot = self.rng.randrange(self.seen + 1)
            if slot < self.size:
                self.items[slot] = item
        self.seen += 1

    def drain(self) -> list:
        """The sample in random order (as a shuffle buffer would emit it)."""
        self.rng.shuffle(self.items)
        out, self.items = self.items, []
        return out


SAMPLERS = ("reservoir", "shuffle")


class LanguageCounts(BaseModel):
    read: int = 0
    removed: dict[str, int] = {}
    admitted: int = 0
    sampled: int = 0


class SampleReport(BaseModel):
    per_language: int
    buffer_size: int
    sampler: str = "shuffle"  # reservoir: uniform N of a language's first buffer_size + N admitted rows
    seed: int
    identifier: str
    identifier_version: str
    filters: FilterSettings
    counts: dict[str, LanguageCounts]
    files: dict[str, str]  # language -> parquet written
    routes: dict[str, str] = {}  # language -> what judged it (auto: identifier and confidence, measured)
    warnings: list[str] = []  # languages that language ID removed beyond filters.max_langid_loss


LANGID_REASONS = ("lang_mismatch", "lang_low_confidence", "lang_low_proportion")


def langid_losses(counts: dict[str, LanguageCounts], max_share: float) -> list[str]:
    """One line per language whose texts language ID removed beyond ``max_share`` of those that
    reached it (passed the text filters): most often the identifier failing the language."""
    lines = []
    for language, c in counts.items():
        lost = sum(c.removed.get(reason, 0) for reason in LANGID_REASONS)
        reached = lost + c.admitted
        if reached and lost / reached > max_share:
            why = ", ".join(f"{reason} {c.removed[reason]}" for reason in LANGID_REASONS if c.removed.get(reason))
            lines.append(f"{language}: language ID removed {lost} of {reached} texts ({lost / reached:.0%}; {why}), "
                         f"more than {max_share:.0%}: check the identifier (--identifier) and the input's language")
    return lines


@dataclass
class _Writer:
    """Rows of one language, written to Parquet in chunks (memory stays bounded)."""

    path: Path
    rows: list[dict] = field(default_factory=list)
    writer: pq.ParquetWriter | None = None

    SCHEMA = pa.schema([("text", pa.string()), ("language", pa.string()), ("source", pa.string()),
                        ("lang_confidence", pa.float64()), ("lang_proportion", pa.float64())])

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if len(self.rows) >= 1000:
            self.flush()

    def flush(self) -> None:
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, self.SCHEMA)
        if self.rows:
            self.writer.write_table(pa.Table.from_pylist(self.rows, schema=self.SCHEMA))
            self.rows = []

    def close(self) -> None:
        self.flush()
        if self.writer is not None:  # flush made it
            self.writer.close()


def sample_corpus(documents: Iterable[Document], out: Path, identifier: Identifier, per_language: int = 50_000,
                  buffer_size: int = 5_000_000, seed: int = 0, settings: FilterSettings | None = None,
                  languages: list[str] | None = None, sampler: str = "reservoir") -> SampleReport:
    """Filter, identify and sample ``documents``; write ``<lang>.parquet`` per language into
    ``out`` and return the counts. With ``languages`` given, other languages are skipped and
    reading stops once each has ``per_language`` rows (``shuffle``) or has read its window of
    ``buffer_size + per_language`` admitted rows (``reservoir``)."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler {sampler!r}: use one of {', '.join(SAMPLERS)}")
    if per_language < 1 or buffer_size < 0:
        raise ValueError("per_language must be at least 1 and buffer_size at least 0")
    settings = settings or FilterSettings()
    if languages:
        check_languages(identifier, languages)  # refused before anything is read or written
    out.mkdir(parents=True, exist_ok=True)
    wanted = set(languages) if languages else None
    checked: set[str] = set(languages or ())
    filters = text_filters(settings)
    counts: dict[str, LanguageCounts] = defaultdict(LanguageCounts)
    removed: dict[str, Counter] = defaultdict(Counter)
    buffers: dict[str, ShuffleBuffer] = {}
    reservoirs: dict[str, Reservoir] = {}
    window = buffer_size + per_language  # reservoir: admitted rows a language's sample is drawn from
    seen: dict[str, set[bytes]] = defaultdict(set)
    writers: dict[str, _Writer] = {}
    full: set[str] = set()

    def emit(language: str, row: dict) -> None:
        if counts[language].sampled >= per_language:
            return
        writers.setdefault(language, _Writer(out / f"{language}.parquet")).add(row)
        counts[language].sampled += 1
        if counts[language].sampled >= per_language:
            full.add(language)
            buffers.pop(language, None)  # nothing more will be taken: free its memory
            seen.pop(language, None)

    for doc in documents:
        if wanted is not None and full >= wanted:
            break  # every requested language has its rows: stop reading the stream
        language = doc.language
        if language is None:  # data/corpus.py gives every document one when asked (lang_field)
            raise DatasetError([Problem(doc.source, None, None, "no language: a sample is drawn per language")])
        if (wanted is not None and language not in wanted) or language in full:
            continue
        if language not in checked:  # a language first seen in the data: refused before it is sampled to zero
            check_languages(identifier, [language])
            checked.add(language)
        counts[language].read += 1
        text = doc.text.strip()
        reason = next((name for name, check in filters if check(text)), None)
        digest = hashlib.md5(text.casefold().encode("utf-8")).digest()
        if reason is None and digest in seen[language]:
            reason = "duplicate"
        confidence = proportion = None
        if reason is None:
            reason, confidence, proportion = language_verdict(identifier, text, language, settings)
        if reason is not None:
            removed[language][reason] += 1
            continue
        seen[language].add(digest)
        counts[language].admitted += 1
        row = {"text": text, "language": language, "source": doc.source, "lang_confidence": confidence,
               "lang_proportion": proportion}
        if sampler == "reservoir":
            reservoir = reservoirs.setdefault(language, Reservoir(per_language, random.Random(f"{seed}/{language}")))
            reservoir.offer(row)
            if reservoir.seen >= window:  # its window is read: write the sample now, free it
                for kept in reservoirs.pop(language).drain():
                    emit(language, kept)
                full.add(language)
                seen.pop(language, None)
            continue
        buffer = buffers.setdefault(language, ShuffleBuffer(buffer_size, random.Random(f"{seed}/{language}")))
        popped = buffer.push(row)
        if popped is not None:
            emit(language, popped)
    for language, reservoir in list(reservoirs.items()):  # languages whose window the stream did not fill
        for row in reservoir.drain():
            emit(language, row)
    for language, buffer in list(buffers.items()):
        for row in buffer.drain():
            emit(language, row)
    for writer in writers.values():
        writer.close()
    for language, reasons in removed.items():
        counts[language].removed = dict(sorted(reasons.items()))
    counts = dict(sorted(counts.items()))
    return SampleReport(per_language=per_language, buffer_size=buffer_size, sampler=sampler, seed=seed,
                        identifier=identifier.name,
                        identifier_version=identifier.version, filters=settings,
                        counts=counts,
                        files={lang: str(w.path) for lang, w in sorted(writers.items())},
                        routes={lang: identifier.route(lang) for lang in counts},
                        warnings=langid_losses(counts, settings.max_langid_loss))
