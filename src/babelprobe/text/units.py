"""Units of a text for shuffles, splits and continuations: whitespace words in spaced scripts and
dictionary words in scripts written without spaces, with their joining rule.

These are the units the existing perturbations and metrics were calibrated on (``text.split()``
for a spaced text), kept exactly; :mod:`babelprobe.text.segment` gives UAX #29 tokens with kinds
(punctuation apart from words), which is what a *word* is for counts and shuffles.
Texts in scripts written without spaces (Thai, Japanese, Chinese: babelprobe.text.dictionary;
other unspaced scripts, or a segmenter not installed: one grapheme cluster per unit, with a
recorded warning) are cut into words.
"""

from __future__ import annotations

import unicodedata

import regex

from babelprobe.text.scripts import _SHARED, UNSPACED_SCRIPTS, char_script, is_unspaced

_CLUSTER = regex.compile(r"\X")  # a grapheme cluster
_NON_SPACE = regex.compile(r"\S+")
_KANA = regex.compile(r"[\p{Script=Hiragana}\p{Script=Katakana}]")


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
    run = ""  # a stretch of unspaced clusters one segmenter cuts
    run_key: tuple[str | None, str] | None = None  # its (language, script)

    def flush_run() -> None:
        nonlocal run, run_key
        if run and run_key is not None:
            language, script = run_key
            start = 0
            for end in segment_run(run, language, script):
                units.append(run[start:end])
                start = end
        run, run_key = "", None

    for cluster in _CLUSTER.findall(chunk):
        if is_unspaced(cluster[0]):
            if spaced_run:
                units.append(spaced_run)
                spaced_run = ""
            script = char_script(cluster[0])
            assert script is not None  # is_unspaced: a script written without spaces
            key = (run_language(script, context, language), script)
            if run and run_key is not None and (key[0] != run_key[0] or key[0] is None and key[1] != run_key[1]):
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
    context: str | None = None  # what tells Japanese Han from Chinese: kana anywhere in the text (looked up once)
    for chunk in _NON_SPACE.finditer(text):
        if not any(map(is_unspaced, chunk.group())):
            spans.append(chunk.span())
            continue
        start = chunk.start()
        if context is None:
            context = "ア" if _KANA.search(text) else ""
        for unit in _runs(chunk.group(), context, language):
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
        if (previous is not None and previous[0] is not None and runs_end == start and script is not None
                and (script == previous[0] or _SHARED.match(unit[0]))):
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


def word_spans(text: str, language: str | None = None) -> list[tuple[int, int]]:
    """(start, end) of each written word of ``text``: the units of :func:`unit_spans` that hold a
    letter, mark or digit. Punctuation standing alone (the full stops and commas of Chinese and
    Japanese, which their segmenters return as units; a dash between spaces) is no word."""
    return [(a, b) for a, b in unit_spans(text, language)
            if any(unicodedata.category(ch)[0] in "LMN" for ch in text[a:b])]
