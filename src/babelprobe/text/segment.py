"""Word segmentation: tokens with spans and kinds, for every script.

:func:`tokens` cuts a text by the Unicode default word boundaries (UAX #29, read with the
``regex`` module's ``(?w)`` word-boundary flag), then

- breaks wherever the script changes inside a UAX #29 word: letters of two scripts
  (``東京ドーム``'s Han and Katakana are one dictionary run, see below), and digits against the
  letters of a script that does not write numbers inside words (``2001년에는`` -> ``2001 | 년에는``,
  ``ב1948`` -> ``ב | 1948``; Latin, Greek, Cyrillic, Armenian and Georgian keep ``3rd``, ``2ος``);
- cuts each stretch of a script written without spaces (Thai, Japanese, Chinese, Lao, Khmer,
  Burmese) with that language's dictionary segmenter (text/dictionary.py: pythainlp, fugashi +
  unidic-lite, jieba, ICU; each imported only when a text of its language is cut); a script with no segmenter installed
  is cut into grapheme clusters and a ``SegmenterMissing`` warning says so;
- drops whitespace; every other token has a kind: ``word`` (it has a letter or mark), ``number``
  (digits, with the separators UAX #29 keeps inside numbers: ``3.14``, ``1,000``), ``punct``
  (only punctuation) or ``symbol`` (currency signs, emoji, ...).

:func:`words` (the texts of word and number tokens) is what matching compares (recall tokens,
name forms). :func:`word_count` counts *written* words (text/units.py: whitespace words that
hold a letter or digit, dictionary words in unspaced scripts), as a reader counts "more than N
words": a hyphenated or apostrophised word is one there. Shuffles and splits use the same units.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import regex

from babelprobe.text.scripts import UNSPACED_SCRIPTS, char_script

TokenKind = Literal["word", "number", "punct", "symbol"]

# Scripts whose words may carry digits (3rd, 2ος, 5-й, 1980s): no break between their letters and
# digits. Everywhere else a digit next to a letter is a script change (2001年, 2001년, ב1948).
DIGITS_IN_WORDS = frozenset({"Latin", "Greek", "Cyrillic", "Armenian", "Georgian"})

_BOUNDARY = regex.compile(r"(?wV1)\b")
_KANA = regex.compile(r"[\p{Script=Hiragana}\p{Script=Katakana}]")


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    text: str
    kind: TokenKind


_SCRIPT_SYMBOL = regex.compile(r"[\p{S}--[\p{Script=Common}\p{Script=Inherited}]]", regex.V1)


def _kind(text: str) -> TokenKind:
    categories = {unicodedata.category(ch)[0] for ch in text}
    if categories & {"L", "M"} or _SCRIPT_SYMBOL.search(text):
        return "word"  # a symbol of one script is a word there (Sindhi ۾ 'in', U+06FE)
    if "N" in categories:
        return "number"
    if categories <= {"P", "Z"}:
        return "punct"
    return "symbol"


def _uax29_spans(text: str) -> list[tuple[int, int]]:
    """Spans between UAX #29 word boundaries, whitespace dropped."""
    spans = []
    start = 0
    for piece in _BOUNDARY.split(text):
        end = start + len(piece)
        if piece and not piece.isspace():
            spans.append((start, end))
        start = end
    return spans


def _class_of(ch: str) -> str | None:
    """What decides a script change: a letter's script, 'digit', or None (joins either side:
    marks, joiners and the punctuation UAX #29 keeps inside a word)."""
    category = unicodedata.category(ch)
    if category == "Nd":
        return "digit"
    if category == "Lm" and 0x02B0 <= ord(ch) <= 0x02FF:
        return None  # a spacing modifier letter (Script=Common): the Ukrainian apostrophe ʼ joins Марʼяна
    if category[0] == "L":
        return char_script(ch)  # None for a letter of no one script (the okina ʻ, ª): it joins
    return None


@lru_cache(maxsize=65536)
def _pieces(segment: str) -> tuple[tuple[int, int, TokenKind, str | None], ...]:
    """One UAX #29 word split where its script changes: (start, end, kind, unspaced script or
    None) of each piece (cached per distinct segment: words recur)."""
    bounds = [0]
    if not segment.isascii():  # ASCII: Latin letters and digits join, nothing to split
        last = None
        for at, ch in enumerate(segment):
            now = _class_of(ch)
            if now is None:
                continue
            if last is not None and now != last and not _joins(last, now):
                bounds.append(at)
            last = now
    bounds.append(len(segment))
    return tuple((a, b, _kind(segment[a:b]), _unspaced_script(segment[a:b])) for a, b in zip(bounds, bounds[1:]))


def _joins(one: str, other: str) -> bool:
    pair = {one, other}
    if "digit" in pair:
        return bool(pair & DIGITS_IN_WORDS)
    return False


def _unspaced_script(text: str) -> str | None:
    """The unspaced script of a piece (its first letter's), None for a spaced piece."""
    for ch in text:
        if unicodedata.category(ch)[0] in "LM":
            script = char_script(ch)
            return script if script in UNSPACED_SCRIPTS else None
    return None


@lru_cache(maxsize=2048)
def _tokens(text: str, language: str | None) -> tuple[Token, ...]:
    from babelprobe.text.dictionary import run_language, segment_run

    out: list[Token] = []
    run_start = run_end = -1
    run_key: tuple[str | None, str] | None = None
    context: str | None = None

    def flush() -> None:
        nonlocal run_key
        if run_key is None:
            return
        run = text[run_start:run_end]
        begin = run_start
        for cut in segment_run(run, run_key[0], run_key[1]):
            out.append(Token(begin, run_start + cut, text[begin:run_start + cut], "word"))
            begin = run_start + cut
        run_key = None

    for span_start, span_end in _uax29_spans(text):
        for a, b, kind, script in _pieces(text[span_start:span_end]):
            start, end = span_start + a, span_start + b
            if script is None:
                flush()
                out.append(Token(start, end, text[start:end], kind))
                continue
            if context is None:  # Han is Japanese in a text with kana: look once, not per piece
                context = "ア" if _KANA.search(text) else ""
            key = (run_language(script, context, language), script)
            joined = run_key is not None and start == run_end and (
                key[0] == run_key[0] and (key[0] is not None or key[1] == run_key[1]))
            if not joined:
                flush()
                run_start, run_key = start, key
            run_end = end
    flush()
    return tuple(out)


def tokens(text: str, language: str | None = None) -> list[Token]:
    """The tokens of ``text`` (see the module docstring), in order, with character spans:
    'Hello, world!' -> Hello | , | world | !; '2001年に東京へ' (ja) -> 2001 | 年 | に | 東京 | へ."""
    return list(_tokens(text, _base(language)))


def words(text: str, language: str | None = None) -> list[str]:
    """The words and numbers of ``text``, punctuation and symbols left out."""
    return [token.text for token in _tokens(text, _base(language)) if token.kind in ("word", "number")]


def word_count(text: str, language: str | None = None) -> int:
    """How many written words ``text`` has, as a reader counts them for "more than N words" (OWL's
    prefix probe): whitespace words that hold a letter or digit, and dictionary words in scripts
    written without spaces (babelprobe.text.units.word_spans); punctuation is never a word. A
    hyphenated or apostrophised word (e-mail, 1980's, l'homme) is one written word here, while
    :func:`words` gives its UAX #29 pieces for matching."""
    from babelprobe.text.units import word_spans

    return len(word_spans(text, _base(language)))


def _base(language: str | None) -> str | None:
    return language.replace("_", "-").split("-")[0].lower() if language else None


@lru_cache(maxsize=4096)
def segmentation_flag(text: str, language: str | None) -> str | None:
    """Why the layer cannot cut ``text`` into words as its language's readers do, or None: the
    language has no row in text/data/languages.tsv, or a stretch of a script written without
    spaces has no dictionary segmenter here (it is then cut into characters). The reason is
    stored as the item's ``text_flag``; a flag is said, never guessed around."""
    from babelprobe.text.dictionary import PACKAGES, run_language, segmenter
    from babelprobe.text.languages import profile

    reasons = []
    if not language or profile(language) is None:
        reasons.append(f"language {language!r} has no row in text/data/languages.tsv")
    scripts = {script for ch in text if unicodedata.category(ch)[0] in "LM"
               and (script := char_script(ch)) is not None and script in UNSPACED_SCRIPTS}
    for script in sorted(scripts):
        cut_by = run_language(script, text, _base(language))
        if cut_by is None:
            reasons.append(f"no dictionary segmenter for {script} script text (cut into characters)")
        elif segmenter(cut_by) is None:
            reasons.append(f"no dictionary segmenter for {script} script text: {PACKAGES[cut_by]} is not "
                           "installed (cut into characters)")
    return "; ".join(reasons) or None
