"""Passage perturbations of OWL §2.1-2.2, seeded per item so that a passage is perturbed the same
way whatever else is in the run. Units are the script's (languages.text_units): words in spaced
scripts, characters in scripts written without spaces (Chinese, Japanese, Thai), where a
whitespace split would leave a passage as one "word"."""

from __future__ import annotations

import random
import unicodedata
from typing import Iterable

import regex

from babelprobe.affixes import ending_ok, proclitic_ok
from babelprobe.languages import is_unspaced, join_units, text_units

MASK = "[MASK]"


class NameNotMaskable(ValueError):
    """A form of a character name is visible in a passage and cannot be masked."""


def shuffle_words(text: str, seed: int, key: str, language: str | None = None) -> str:
    """The passage's units in a random order; ``key`` (e.g. book/passage/language) and ``seed``
    fix the order, so reruns and subsets give the same shuffle. A spaced text gives exactly the
    shuffle of ``text.split()`` joined by spaces; Thai, Japanese and Chinese are shuffled by
    words (languages.text_units, babelprobe.segmenters), as OWL §2.1 shuffles words."""
    units = text_units(text, language)
    random.Random(f"{seed}/{key}").shuffle(units)
    return join_units(units)


def _word_char(ch: str) -> bool:
    """A letter, mark, digit or underscore of a spaced script: what a name must not run into."""
    return (ch == "_" or unicodedata.category(ch)[0] in "LMN") and not is_unspaced(ch)


def _stands_alone(text: str, start: int, end: int) -> bool:
    """The name at text[start:end] is a whole word: each edge in a spaced script is followed
    (preceded) by no letter or digit of a spaced script; an edge in a script written without
    spaces needs no boundary, as none is written ('林黛玉说', 'Harry说')."""
    left = is_unspaced(text[start]) or start == 0 or not _word_char(text[start - 1])
    right = is_unspaced(text[end - 1]) or end == len(text) or not _word_char(text[end])
    return left and right


# Languages whose nouns decline by changing their last vowel (Алиса -> Алисы, Алису, Алисой;
# Anna -> Annę): a name ending in a vowel is also found as its stem + a case ending.
DECLINING_LANGUAGES = frozenset({
    "ru", "uk", "be", "bg", "mk", "pl", "cs", "sk", "sl", "hr", "sr", "bs", "lt", "lv", "la", "el", "fi", "et",
    "hu", "is", "ga", "ro", "sq", "ka", "hy",
})
# Agglutinative endings can be longer than the metric's rule allows: a name with letters glued after
# it there is a form of the name, masked or refused, never left visible.
GLUED_FORMS = frozenset({"fi", "et", "hu", "tr", "az", "kk", "uz", "ky", "tk", "ko", "ja", "ta", "te", "kn", "ml",
                         "mn", "eu", "qu", "sw"})
_TURKISH_I = "iIİı"


def _name_pattern(name: str) -> str:
    """``name`` matching any letter case (ALICE, ALİCE) and any run of whitespace inside it."""
    parts = []
    for ch in name:
        if ch.isspace():
            parts.append(r"\s+")
            continue
        variants = {v for v in (ch, ch.lower(), ch.upper()) if len(v) == 1}
        if ch in _TURKISH_I:
            variants |= set(_TURKISH_I)
        parts.append("[" + "".join(regex.escape(v) for v in sorted(variants)) + "]" if len(variants) > 1
                     else regex.escape(ch))
    return "".join(parts)


def _is_vowel(ch: str) -> bool:
    from unidecode import unidecode

    return unidecode(ch).lower() in {"a", "e", "i", "o", "u", "y", "ia", "iu", "ie", "io", "yo", "ya", "yu", "ye", "e'"}


def _same_case(found: str, form: str, word: str) -> bool:
    """The occurrence is written as the name is, or its whole word is in capitals (ALICE)."""
    return " ".join(found.split()) == form or (word.isupper() and any(ch.isalpha() for ch in word))


def _mask_one(text: str, name: str, language: str) -> tuple[str, bool, list[str]]:
    """(text with every form of ``name`` masked, whether any was, forms that could not be)."""
    base = language.split("-")[0].lower()
    unspaced_edges = is_unspaced(name[0]) or is_unspaced(name[-1])
    forms = [name]
    if base in DECLINING_LANGUAGES and len(name) >= 4 and " " not in name and _is_vowel(name[-1]):
        forms.append(name[:-1])  # the stem of a declined name
    pattern = regex.compile("|".join(f"(?P<f{i}>{_name_pattern(f)})" for i, f in enumerate(forms)))
    pieces, last, masked, refused = [], 0, False, []
    for found in pattern.finditer(text):
        start, end = found.span()
        if start < last:
            continue
        form = forms[int(found.lastgroup[1:])]
        if unspaced_edges:
            if _stands_alone(text, start, end) and found.group() == name:
                pieces += [text[last:start], MASK]
                last, masked = end, True
            continue
        word_start, word_end = start, end
        while word_start > 0 and _word_char(text[word_start - 1]):
            word_start -= 1
        while word_end < len(text) and _word_char(text[word_end]):
            word_end += 1
        prefix, ending, word = text[word_start:start], text[end:word_end], text[word_start:word_end]
        if not _same_case(found.group(), form, word):
            continue
        prefix_ok = not prefix or proclitic_ok(unicodedata.normalize("NFC", prefix), name)
        letters = all(unicodedata.category(ch)[0] in "LM" for ch in ending)
        if form == name:
            ending_fits = not ending or (letters and ending_ok(ending.casefold(), name.casefold(), base))
        else:  # a stem needs its case ending
            ending_fits = bool(ending) and letters and len(ending) <= 3
        if prefix_ok and ending_fits:
            keep = ending if ending and regex.match(r"\p{Script=Hangul}", ending[0]) else ""  # 앨리스[는]
            pieces += [text[last:start], MASK + keep]
            last, masked = word_end, True
        elif prefix_ok and form == name and letters and (base in GLUED_FORMS
                                                          or regex.match(r"\p{Script=Hangul}", ending[0])):
            refused.append(f"{word!r} at character {word_start}")
    return "".join(pieces) + text[last:], masked, refused


def mask_names(text: str, names: Iterable[str], language: str = "") -> str:
    """Every form of each name (longest first) replaced by [MASK] (OWL §2.2): the name as a whole
    word ("Hester's" is masked, "Hesterville" is another word), in capitals (ALICE, ALİCE), with
    the endings and proclitics the language attaches to it, by the rules of the ECLeKTiC metric
    (affixes.py: Korean particles, kept after the mask: [MASK]는; Hebrew and Arabic
    proclitics, kept before it: ו[MASK]; Finnish/Turkish/Hungarian/Estonian endings up to 4
    letters, others up to 2, taken into the mask), and in declining languages the stem of a name
    ending in a vowel with a case ending (Алисы, Алису -> [MASK]). Raises NameNotMaskable, naming
    the occurrence, when a form cannot be masked (an agglutinative ending longer than the rule
    allows: Finnish Alicellekinko), or when the name is still visible and none of its occurrences
    could be masked: name cloze would show the answer."""
    unmasked = []
    for name in sorted({n.strip() for n in names if n.strip()}, key=len, reverse=True):
        text, masked, refused = _mask_one(text, name, language)
        if refused:
            raise NameNotMaskable(f"cannot mask {name!r}: {', '.join(refused)} carries it with an ending the "
                                  "masking rules do not cover, so the masked passage would still show it")
        if not masked and name in text:
            where = text.index(name)
            unmasked.append(f"{name!r} (at character {where})")
    if unmasked:
        raise NameNotMaskable(f"cannot mask {', '.join(unmasked)}: the name is found only inside a "
                              "longer word, so the masked passage would still show it")
    return text


def mask_and_shuffle(text: str, names: Iterable[str], seed: int, key: str, language: str = "") -> str:
    return shuffle_words(mask_names(text, names, language), seed, key, language or None)


class ControlNotPossible(ValueError):
    """A text with fewer than two distinct words has no shuffled control that differs from it."""


def shuffle_units(text: str, seed: int, key: str, language: str | None = None) -> str:
    """A control text the model cannot have memorized verbatim: the text's words in a seeded
    random order. Words are the language layer's units (babelprobe.text.units.text_units):
    whitespace words in spaced scripts (then exactly a shuffle of ``text.split()`` joined by
    spaces), and dictionary words inside every stretch of a script written without spaces, also
    where such a text has spaces between phrases (Thai; Japanese or Chinese with an ideographic
    space or a Latin word): phrases are not words, and shuffling two of them gives the original
    back on half the seeds. The control always differs from the text: a shuffle that gives the
    text back is drawn again (same generator); a text with fewer than two distinct words raises
    :class:`ControlNotPossible` (the caller records it), never a silent copy. Leading and
    trailing whitespace stays where it was, so the shuffled text joins its context as the
    original did. ``seed`` and ``key`` fix the order (reruns and subsets shuffle alike)."""
    core = text.strip()
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    units = text_units(core, language)
    if len(set(units)) < 2:
        raise ControlNotPossible(f"fewer than 2 distinct words ({len(units)} word(s): {core[:40]!r}): "
                                 "no shuffle of it differs from it")
    rng = random.Random(f"{seed}/{key}")
    in_order, original = list(units), join_units(units)
    for _ in range(64):  # with two distinct words, each draw gives the text back with p <= 1/2
        rng.shuffle(units)
        shuffled = join_units(units)
        if shuffled != original:
            return lead + shuffled + trail
    units = in_order  # never reached in practice: swap the first two neighbours that differ
    first = next(i for i in range(len(units) - 1) if units[i] != units[i + 1])
    units[first], units[first + 1] = units[first + 1], units[first]
    return lead + join_units(units) + trail
