"""Word segmentation for scripts written without spaces (dictionary segmenters), in one place for every family.

Thai, Japanese and Chinese mark no word boundary with a space. Cutting them into characters
(grapheme clusters) makes a word shuffle a letter salad (OWL §2.1 shuffles *words*), counts
characters as words in the prefix-probing prompt (OWL Fig. 14 asks for "more than N words"), and
lets ECLeKTiC's normalized recall find กา inside กาแฟ. Each of these languages gets a real
offline segmenter with a bundled dictionary:

- Thai: pythainlp's ``newmm`` (dictionary maximal matching, its default engine);
- Japanese: MeCab through fugashi with the unidic-lite dictionary (the lighter of the two
  offline analysers with a bundled dictionary: ~50 MB against sudachidict-core's ~77 MB);
- Chinese: jieba (its bundled dictionary, accurate mode, no HMM for unknown words, so a run is
  cut the same way whatever the corpus);
- Lao, Khmer, Burmese: ICU's dictionary-based word break iterator (PyICU over the system's ICU;
  ICU ships word dictionaries for these scripts, and no maintained pure-Python segmenter with
  a bundled dictionary exists for them).

Each segmenter is imported the first time a text of its language is cut, never at import.

A run of Han characters is Japanese when its text contains kana, else Chinese (a caller that
knows the language passes it). Scripts with no segmenter here (Lao, Khmer, Myanmar, Tibetan, ...)
or a segmenter whose package is not installed fall back to one unit per grapheme cluster, and say
so: the first time in a process a language falls back, a ``SegmenterMissing`` warning is issued
and recorded (:func:`recorded_warnings`, written to the run's manifest), never silently.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import regex

# script of a run (Unicode Script property value) -> language whose segmenter cuts it
SCRIPT_LANGUAGE = {"Thai": "th", "Hiragana": "ja", "Katakana": "ja", "Han": "zh", "Bopomofo": "zh",
                   "Lao": "lo", "Khmer": "km", "Myanmar": "my"}
PACKAGES = {"th": "pythainlp", "ja": "fugashi + unidic-lite", "zh": "jieba", "lo": "PyICU", "km": "PyICU",
            "my": "PyICU"}

_RECORDED: dict[str, str] = {}  # language or script -> the warning given for it


class SegmenterMissing(UserWarning):
    """Text of a script written without spaces was cut into characters, not words."""


@dataclass(frozen=True)
class Segmenter:
    language: str
    name: str  # package and engine, for the record
    cut: Callable[[str], list[str]]


def _thai() -> Segmenter:
    from pythainlp.tokenize import word_tokenize

    return Segmenter("th", "pythainlp newmm", lambda text: word_tokenize(text, engine="newmm", keep_whitespace=False))


def _japanese() -> Segmenter:
    import fugashi
    import unidic_lite

    tagger = fugashi.Tagger(f'-d "{unidic_lite.DICDIR}"')
    return Segmenter("ja", "fugashi + unidic-lite", lambda text: [word.surface for word in tagger(text)])


def _chinese() -> Segmenter:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # jieba imports pkg_resources (deprecated)
        import jieba

    jieba.setLogLevel(logging.WARNING)  # it logs its dictionary loading at INFO
    return Segmenter("zh", "jieba", lambda text: jieba.lcut(text, cut_all=False, HMM=False))


def _icu(language: str) -> Segmenter:
    import icu

    locale = icu.Locale(language)

    def cut(text: str) -> list[str]:
        iterator = icu.BreakIterator.createWordInstance(locale)  # one per call: not thread-safe
        iterator.setText(text)
        at_utf16: dict[int, int] = {}  # ICU counts UTF-16 code units; Python counts code points
        units = 0
        for index, ch in enumerate(text):
            at_utf16[units] = index
            units += 2 if ord(ch) > 0xFFFF else 1
        at_utf16[units] = len(text)
        bounds = [0] + [at_utf16[b] for b in iterator]
        return [text[a:b] for a, b in zip(bounds, bounds[1:]) if text[a:b].strip()]

    return Segmenter(language, "ICU dictionary word break (PyICU)", cut)


_FACTORIES: dict[str, Callable[[], Segmenter]] = {
    "th": _thai, "ja": _japanese, "zh": _chinese,
    "lo": lambda: _icu("lo"), "km": lambda: _icu("km"), "my": lambda: _icu("my"),
}


@lru_cache(maxsize=None)
def segmenter(language: str) -> Segmenter | None:
    """The segmenter of a language, None when it has none or its package is missing."""
    factory = _FACTORIES.get(language)
    if factory is None:
        return None
    try:
        return factory()
    except ImportError:
        return None


def _record(key: str, message: str) -> None:
    if key not in _RECORDED:
        _RECORDED[key] = message
        warnings.warn(message, SegmenterMissing, stacklevel=3)


def recorded_warnings() -> list[str]:
    """The fallbacks of this run (since :func:`start_run`, else this process), one line each."""
    return list(_RECORDED.values())


def start_run() -> None:
    """Forget the fallbacks said so far: each run says its own once (execute_run.run calls this)."""
    _RECORDED.clear()


def run_language(script: str, text: str, language: str | None = None) -> str | None:
    """The language whose segmenter cuts a run of ``script``: Han is Japanese in a text with
    kana (or when ``language`` says ja), else Chinese."""
    if language:
        base = language.split("-")[0].lower()
        if base in _FACTORIES and (SCRIPT_LANGUAGE.get(script) == base or script == "Han" and base == "ja"):
            return base
    if script == "Han" and regex.search(r"[\p{Script=Hiragana}\p{Script=Katakana}]", text):
        return "ja"
    return SCRIPT_LANGUAGE.get(script)


def segment_run(run: str, language: str | None, script: str) -> tuple[int, ...]:
    """Word boundaries (end offsets) inside ``run``, a whitespace-free stretch of one unspaced
    language; one per grapheme cluster when no segmenter can cut it (said once per run)."""
    ends, fallback = _segment(run, language, script)
    if fallback:
        _record(*fallback)
    return ends


@lru_cache(maxsize=65536)
def _segment(run: str, language: str | None, script: str) -> tuple[tuple[int, ...], tuple[str, str] | None]:
    cutter = segmenter(language) if language else None
    if cutter is None:
        if language in _FACTORIES:
            fallback = (language, f"no word segmenter for {language!r}: {PACKAGES[language]} is not installed; "
                                  "its text is cut into characters (grapheme clusters), not words")
        else:
            fallback = (script, f"no word segmenter for {script} script text: it is cut into characters "
                                "(grapheme clusters), not words")
        return tuple(m.end() for m in regex.finditer(r"\X", run)), fallback
    ends, at = [], 0
    for word in cutter.cut(run):
        found = run.find(word, at) if word else -1
        if found < 0 or run[at:found].strip():
            continue  # a segmenter that normalised a word: keep the boundaries it can be placed at
        at = found + len(word)
        ends.append(at)
    if not ends or ends[-1] != len(run):
        ends.append(len(run))
    return tuple(ends), None
