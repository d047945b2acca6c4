"""Language utilities: writing-system detection from Unicode, and which scripts use no spaces.

Scripts are read from the text itself (``unicodedata`` names), never from a per-language table,
so a Serbian file written in Latin letters is counted as Latin.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

# First word of a letter's Unicode name -> ISO 15924 script name.
_SCRIPT_WORDS = {
    "LATIN": "Latin", "CYRILLIC": "Cyrillic", "GREEK": "Greek", "ARMENIAN": "Armenian",
    "GEORGIAN": "Georgian", "HEBREW": "Hebrew", "ARABIC": "Arabic", "DEVANAGARI": "Devanagari",
    "BENGALI": "Bengali", "GURMUKHI": "Gurmukhi", "GUJARATI": "Gujarati", "TAMIL": "Tamil",
    "TELUGU": "Telugu", "KANNADA": "Kannada", "MALAYALAM": "Malayalam", "SINHALA": "Sinhala",
    "THAI": "Thai", "LAO": "Lao", "KHMER": "Khmer", "MYANMAR": "Myanmar", "TIBETAN": "Tibetan",
    "ETHIOPIC": "Ethiopic", "CJK": "Han", "HIRAGANA": "Hiragana", "KATAKANA": "Katakana",
    "HANGUL": "Hangul", "ORIYA": "Oriya", "HALFWIDTH": "Katakana",
}
# Scripts whose writing puts no space between words (a continuation is appended directly).
UNSPACED_SCRIPTS = frozenset({"Han", "Hiragana", "Katakana", "Thai", "Lao", "Khmer", "Myanmar", "Tibetan"})


def char_script(ch: str) -> str | None:
    """Script of one letter, or None for digits, punctuation, spaces and unknown letters."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    name = unicodedata.name(ch, "")
    return _SCRIPT_WORDS.get(name.split(" ")[0]) if name else None


def detect_script(text: str) -> str:
    """Majority script of the letters in ``text`` ('Unknown' when it has none).

    Mixed texts (a Latin brand name in a Cyrillic sentence; Han with kana in Japanese) are
    labelled by the script with the most letters."""
    counts = Counter(s for s in map(char_script, text) if s)
    if not counts:
        return "Unknown"
    return counts.most_common(1)[0][0]


def joins_without_space(text_before: str) -> bool:
    """True when the next word follows ``text_before`` with no space: it already ends in
    whitespace, or its last letter is of a script written without spaces."""
    if not text_before or text_before[-1].isspace():
        return True
    for ch in reversed(text_before):
        script = char_script(ch)
        if script is not None:
            return script in UNSPACED_SCRIPTS
        if not unicodedata.category(ch).startswith("P"):
            return False
    return False


def language_name(code: str) -> str:
    """English name of a language code ('he' -> 'Hebrew'), as the papers' prompts use them
    (langcodes' CLDR data, offline)."""
    import langcodes

    try:
        name = langcodes.Language.get(code).display_name("en")
    except (ValueError, LookupError) as exc:
        raise ValueError(f"unknown language code {code!r}") from exc
    if name.startswith("Unknown language"):
        raise ValueError(f"unknown language code {code!r}")
    return name
