"""Writing systems from Unicode script properties, and which scripts use no spaces between words.

One rule for every family: a character's script is its Unicode ``Script`` property (read with the
``regex`` module's ``\\p{Script=…}``, never from character names or code-point ranges); letters
and marks shared by several scripts (``Script=Common``/``Inherited``: the Japanese prolonged
sound mark ー, combining accents) take their ``Script_Extensions``. Hangul is spaced: Korean puts
spaces between words (eojeol), with particles attached to the word before them.

Scripts are read from the text itself, so a Serbian file written in Latin letters is counted as
Latin; :func:`language_script` gives the usual script of a language code (CLDR likely subtags)
where the language, not the text, should decide.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from functools import lru_cache

import regex

# ISO 15924 code -> Unicode Script property value, for the scripts of living languages
# (tests check that regex reads both spellings as the same set of characters).
SCRIPTS: dict[str, str] = {
    "Latn": "Latin", "Cyrl": "Cyrillic", "Grek": "Greek", "Armn": "Armenian", "Geor": "Georgian",
    "Hebr": "Hebrew", "Arab": "Arabic", "Syrc": "Syriac", "Thaa": "Thaana", "Nkoo": "Nko", "Adlm": "Adlam",
    "Tfng": "Tifinagh", "Ethi": "Ethiopic", "Vaii": "Vai", "Cher": "Cherokee", "Cans": "Canadian_Aboriginal",
    "Mong": "Mongolian", "Deva": "Devanagari", "Beng": "Bengali", "Guru": "Gurmukhi", "Gujr": "Gujarati",
    "Orya": "Oriya", "Taml": "Tamil", "Telu": "Telugu", "Knda": "Kannada", "Mlym": "Malayalam",
    "Sinh": "Sinhala", "Olck": "Ol_Chiki", "Thai": "Thai", "Laoo": "Lao", "Khmr": "Khmer", "Mymr": "Myanmar",
    "Tibt": "Tibetan", "Tale": "Tai_Le", "Talu": "New_Tai_Lue", "Lana": "Tai_Tham", "Tavt": "Tai_Viet",
    "Bali": "Balinese", "Java": "Javanese", "Sund": "Sundanese", "Hani": "Han", "Kana": "Katakana", "Hira": "Hiragana",
    "Bopo": "Bopomofo", "Hang": "Hangul", "Yiii": "Yi",
}
# Scripts whose writing puts no space between words (a continuation is appended directly, and a
# text's units are its characters).
UNSPACED_SCRIPTS = frozenset({
    "Han", "Hiragana", "Katakana", "Bopomofo", "Yi", "Thai", "Lao", "Khmer", "Myanmar", "Tibetan",
    "Tai_Le", "New_Tai_Lue", "Tai_Tham", "Tai_Viet", "Balinese", "Javanese",
})
# ISO 15924 codes of writing systems that combine scripts, named by the script a language shares
# with others: Japanese (Jpan = Han + kana) shares Han with Chinese (ECLeKTiC §4.2 reads zh<->ja
# as a same-script pair); modern Korean (Kore = Hangul + Han) is written in Hangul.
_COMBINED = {"Jpan": "Han", "Hans": "Han", "Hant": "Han", "Hanb": "Han", "Kore": "Hangul"}

_SCRIPT_OF = regex.compile("|".join(rf"(?P<{name}>\p{{Script={name}}})" for name in SCRIPTS.values()))
_EXTENSION_OF = regex.compile("|".join(rf"(?P<{name}>\p{{Script_Extensions={name}}})" for name in SCRIPTS.values()))
_SHARED = regex.compile(r"[\p{Script=Common}\p{Script=Inherited}]")


@lru_cache(maxsize=4096)
def char_script(ch: str) -> str | None:
    """Unicode script of one letter or mark (letters and marks shared by several scripts: the
    first listed of their Script_Extensions); None for digits, punctuation, symbols, spaces and
    letters of scripts not in ``SCRIPTS``."""
    if unicodedata.category(ch)[0] not in "LM":
        return None
    found = _SCRIPT_OF.match(ch) or (_EXTENSION_OF.match(ch) if _SHARED.match(ch) else None)
    return found.lastgroup if found else None


def is_unspaced(ch: str) -> bool:
    """A letter or mark of a script written without spaces between words."""
    return char_script(ch) in UNSPACED_SCRIPTS


def detect_script(text: str) -> str:
    """Majority script of the letters in ``text`` ('Unknown' when it has none).

    Mixed texts (a Latin brand name in a Cyrillic sentence; Han with kana in Japanese) are
    labelled by the script with the most letters."""
    counts = Counter(s for ch in text if unicodedata.category(ch)[0] == "L" and (s := char_script(ch)))
    if not counts:
        return "Unknown"
    return counts.most_common(1)[0][0]


def language_script(code: str) -> str | None:
    """Unicode script of a language's usual writing system from its code (CLDR likely subtags
    through langcodes, offline): 'ja' -> 'Han', 'zh-TW' -> 'Han', 'ko' -> 'Hangul', 'sr' ->
    'Cyrillic', 'sr-Latn' -> 'Latin'; None for a code CLDR does not know."""
    import langcodes

    try:
        language = langcodes.Language.get(code)
        if not language.language or language.display_name("en").startswith("Unknown language"):
            return None  # maximize() would fill in und's defaults (Latn)
        iso = language.maximize().script
    except (ValueError, LookupError):
        return None
    return (_COMBINED.get(iso) or SCRIPTS.get(iso)) if iso else None
