"""Language utilities: writing systems from Unicode script properties, and which scripts use no
spaces between words.

One rule for every family: a character's script is its Unicode ``Script`` property (read with the
``regex`` module's ``\\p{Script=…}``, never from character names or code-point ranges); letters
and marks shared by several scripts (``Script=Common``/``Inherited``: the Japanese prolonged
sound mark ー, combining accents) take their ``Script_Extensions``. Texts are split into units by
:func:`text_units`: whitespace words in spaced scripts, and words found by a dictionary
segmenter in scripts written without spaces (Thai, Japanese, Chinese: babelprobe.text.dictionary;
other unspaced scripts, or a segmenter not installed: one grapheme cluster per unit, with a
recorded warning). Hangul is spaced: Korean puts spaces between words (eojeol), with particles
attached to the word before them.

Scripts are read from the text itself, so a Serbian file written in Latin letters is counted as
Latin; :func:`language_script` gives the usual script of a language code (CLDR likely subtags)
where the language, not the text, should decide.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import regex

from babelprobe.text.scripts import (  # noqa: F401  (moved to the language layer; re-exported)
    _COMBINED, _SHARED, SCRIPTS, UNSPACED_SCRIPTS, char_script, detect_script, is_unspaced, language_script,
)

def joins_without_space(text_before: str) -> bool:
    """True when the next word follows ``text_before`` with no space: it already ends in
    whitespace, or its last letter (punctuation skipped) is of a script written without spaces."""
    if not text_before or text_before[-1].isspace():
        return True
    for ch in reversed(text_before):
        category = unicodedata.category(ch)[0]
        if category in "LM":
            script = char_script(ch)
            if category == "M" and script not in UNSPACED_SCRIPTS and _SHARED.match(ch):
                continue  # a combining accent: its base letter decides
            return script in UNSPACED_SCRIPTS
        if category != "P":
            return False
    return False


def _runs(chunk: str, context: str, language: str | None) -> list[str]:
    """Units of one whitespace-free chunk: the words of each stretch of an unspaced script (cut by
    its language's segmenter, babelprobe.text.dictionary), maximal runs of everything else together.
    ``context`` (the whole text) tells Japanese Han from Chinese (kana anywhere in it)."""
    from babelprobe.text.dictionary import run_language, segment_run

    units: list[str] = []
    spaced_run = ""
    run, run_key = "", None  # a stretch of unspaced clusters one segmenter cuts

    def flush_run() -> None:
        nonlocal run, run_key
        if run:
            language, script = run_key
            start = 0
            for end in segment_run(run, language, script):
                units.append(run[start:end])
                start = end
        run, run_key = "", None

    for cluster in regex.findall(r"\X", chunk):
        if is_unspaced(cluster[0]):
            if spaced_run:
                units.append(spaced_run)
                spaced_run = ""
            script = char_script(cluster[0])
            key = (run_language(script, context, language), script)
            if run and (key[0] != run_key[0] or key[0] is None and key[1] != run_key[1]):
                flush_run()
            run, run_key = run + cluster, run_key or key
        else:
            flush_run()
            spaced_run += cluster
    flush_run()
    if spaced_run:
        units.append(spaced_run)
    return units


def unit_spans(text: str, language: str | None = None) -> list[tuple[int, int]]:
    """(start, end) of each unit of ``text`` (see :func:`text_units`)."""
    spans = []
    for chunk in regex.finditer(r"\S+", text):
        if not any(map(is_unspaced, chunk.group())):
            spans.append(chunk.span())
            continue
        start = chunk.start()
        for unit in _runs(chunk.group(), text, language):
            spans.append((start, start + len(unit)))
            start += len(unit)
    return spans


def text_units(text: str, language: str | None = None) -> list[str]:
    """The script's units of ``text``: whitespace-separated words in spaced scripts (exactly
    ``text.split()`` for a text with no unspaced letter), and words in scripts written without
    spaces, cut by a dictionary segmenter ('吾輩は猫である' -> ['吾輩', 'は', '猫', 'で', 'ある'];
    Thai by pythainlp, Chinese by jieba; babelprobe.text.dictionary); a Latin word or punctuation
    inside such text stays one unit. ``language`` (a code) settles Han text without kana that is
    Japanese; by default Han is Japanese only in a text with kana."""
    return [text[a:b] for a, b in unit_spans(text, language)]


def script_runs(text: str) -> list[tuple[str | None, str]]:
    """Units of ``text`` with consecutive units of one unspaced script merged into a run, each
    labelled with its script ('トビアスです' -> [('Katakana', 'トビアス'), ('Hiragana', 'です')]);
    spaced words are labelled None. A letter shared by several scripts (ー) continues the run
    before it."""
    runs: list[tuple[str | None, str]] = []
    runs_end = -1  # where the last run ends: runs join only across no whitespace
    for start, end in unit_spans(text):
        unit = text[start:end]
        script = char_script(unit[0]) if is_unspaced(unit[0]) else None
        previous = runs[-1] if runs else None
        joined = previous is not None and previous[0] is not None and runs_end == start
        if joined and script is not None and (script == previous[0] or _SHARED.match(unit[0])):
            runs[-1] = (previous[0], previous[1] + unit)
        else:
            runs.append((script, unit))
        runs_end = end
    return runs


def join_units(units: list[str]) -> str:
    """Units back into text: a space between two units unless one side is of a script written
    without spaces or full-width punctuation (for spaced texts this is ``" ".join(units)``)."""
    out = ""
    for unit in units:
        if out and not _joins_tight(out[-1]) and not _joins_tight(unit[0]):
            out += " "
        out += unit
    return out


def _joins_tight(ch: str) -> bool:
    """A letter of an unspaced script, or full-width punctuation (，。：), which takes no space."""
    return is_unspaced(ch) or (unicodedata.category(ch)[0] == "P" and unicodedata.east_asian_width(ch) in "WF")


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


@lru_cache(maxsize=4096)
def is_language_code(code: str) -> bool:
    """A BCP-47 language tag whose subtags are registered (IANA registry through langcodes,
    offline): 'en', 'zh-Hans', 'pt-BR', 'fil', 'yue', 'iw' (mC4's Hebrew), 'x-private'. A
    FLORES-style code ('heb_Hebr', 'zho_Hans': ISO 639-3 + ISO 15924 joined by '_') is accepted
    when its standard form ('he-Hebr') is valid. Markup, paths and unregistered subtags ('xx',
    '<b>en</b>', 'english') are not codes: they reach file names, prompts and figure labels."""
    import langcodes

    if not code or code != code.strip() or not code.isascii():
        return False
    if langcodes.tag_is_valid(code):
        return True
    if not all(ch.isalnum() or ch in "-_" for ch in code):
        return False
    try:
        return langcodes.tag_is_valid(langcodes.standardize_tag(code))
    except (ValueError, LookupError):
        return False


# Individual languages the Shared Path inputs name by their macrolanguage (mC4, the token counts,
# lang2vec): after langcodes' own macrolanguage folding (cmn -> zh, arb -> ar, pes -> fa, zsm ->
# ms, ...), these remain. FLORES+ writes nob_Latn (Bokmål), tgl_Latn (Tagalog); mC4 writes no, fil.
_SHARED_PATH_CODES = {"nb": "no", "tl": "fil", "kmr": "ku", "ckb": "ku", "ydd": "yi", "khk": "mn", "plt": "mg",
                      "als": "sq", "swh": "sw", "npi": "ne", "ekk": "et", "lvs": "lv", "azj": "az", "uzn": "uz",
                      "pbt": "ps", "gaz": "om"}


@lru_cache(maxsize=4096)
def normalise_code(code: str) -> str:
    """One code per language for every Shared Path input (memorization samples, parallel
    sentences, SIM/MEM/TOKENS files, token counts): the base language subtag in its standard
    form, macrolanguages folded. 'iw' and 'heb_Hebr' -> 'he', 'cmn_Hans' and 'zh-Hant' -> 'zh',
    'nob_Latn' -> 'no', 'tgl_Latn' and 'fil' -> 'fil', 'arb_Arab' -> 'ar', 'EN' -> 'en'. A code
    langcodes cannot read is kept as written (lower case, '_' as '-'), never dropped."""
    import langcodes

    text = code.strip()
    if not text:
        raise ValueError("empty language code")
    tag = text.replace("_", "-")
    try:
        base = langcodes.Language.get(langcodes.standardize_tag(tag, macro=True)).language
    except (ValueError, LookupError):
        base = None
    if not base:
        return tag.lower()
    return _SHARED_PATH_CODES.get(base, base)


def normalise_codes(codes: list[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``codes`` -> their normalised codes, and the normalised codes two or more of them share
    (e.g. {'he': ['he', 'iw']}: one input naming a language twice, which the caller reports)."""
    mapping = {code: normalise_code(code) for code in codes}
    by_code: dict[str, list[str]] = {}
    for original, normal in mapping.items():
        by_code.setdefault(normal, []).append(original)
    return mapping, {normal: originals for normal, originals in by_code.items() if len(originals) > 1}
