"""Passage perturbations of OWL §2.1-2.2, seeded per item so that a passage is perturbed the same
way whatever else is in the run. Units are the script's (text.units.text_units): words in spaced
scripts, characters in scripts written without spaces (Chinese, Japanese, Thai), where a
whitespace split would leave a passage as one "word". Name masks go through the language layer
(babelprobe.text.names: whole-token forms from per-language paradigm tables) and record their
evidence (mask_with_evidence)."""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import regex

from babelprobe.text.scripts import is_unspaced
from babelprobe.text.units import join_units, text_units
from babelprobe.text.evidence import Evidence, Unsure
from babelprobe.text.names import NAME_HYPHENS, NAME_SEPARATORS, Placement, is_patronymic, name_forms, name_parts, unspaced_parts
from babelprobe.text.normalize import fold
from babelprobe.text.segment import Token, tokens
from babelprobe.text.titles import is_title

MASK = "[MASK]"


class NameNotMaskable(ValueError):
    """A form of a character name is visible in a passage and cannot be masked."""


def shuffle_words(text: str, seed: int, key: str, language: str | None = None) -> str:
    """The passage's units in a random order; ``key`` (e.g. book/passage/language) and ``seed``
    fix the order, so reruns and subsets give the same shuffle. A spaced text gives exactly the
    shuffle of ``text.split()`` joined by spaces; Thai, Japanese and Chinese are shuffled by
    words (text.units.text_units, babelprobe.text.dictionary), as OWL §2.1 shuffles words."""
    units = text_units(text, language)
    random.Random(f"{seed}/{key}").shuffle(units)
    return join_units(units)


@dataclass(frozen=True)
class Masked:
    """A masked passage and what the mask rests on: one Evidence per masked occurrence (its span
    in the original passage, the form it was found as, the paradigm row behind it)."""

    text: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class _Hit:
    start: int
    end: int  # the occurrence in the original text
    keep_before: int  # characters kept visible before the mask (a proclitic: ו[MASK])
    keep_after: int  # ... and after it (a particle: [MASK]는, a clitic: [MASK]'s)
    evidence: Evidence
    name: str = ""  # the name it is a form of (its parts found side by side are one mask)


_GAP = regex.compile(r"[\s." + NAME_HYPHENS + NAME_SEPARATORS + "]*")
# what may stand between two parts of one name found side by side: they are then one mask
_NAME_JOIN = regex.compile(r"[\s" + NAME_HYPHENS + NAME_SEPARATORS + "]*")
_HYPHENATED = regex.compile(r"[-\u2010\u2011]\p{L}")
_HYPHENATED_BEFORE = regex.compile(r"\p{L}[-\u2010\u2011]$")
_SEPARATOR = r"[\s" + NAME_HYPHENS + NAME_SEPARATORS + "]"  # a name separator (・ ＝ · •), a hyphen or a space


# UAX #29 keeps a middle dot inside a word (MidLetter, for Catalan l·l), so 레프·톨스토이가 is one
# token; a name separator there is cut, except the Catalan ela geminada l·l (IEC, Ortografia
# catalana §3.2.3: col·lecció, Marcel·lí)
_INNER_SEPARATOR = regex.compile(r"[" + NAME_SEPARATORS + r"](?<![lL]\u00b7(?=[lL]))")


def _cut_at_separators(words: list[Token]) -> list[Token]:
    """Word tokens cut where a name separator stands inside them (레프·톨스토이가 -> 레프, 톨스토이가)."""
    out: list[Token] = []
    for token in words:
        start = 0
        for found in [*_INNER_SEPARATOR.finditer(token.text), None]:
            end = found.start() if found else len(token.text)
            if end > start:
                out.append(Token(token.start + start, token.start + end, token.text[start:end], token.kind))
            start = found.end() if found else start
    return out


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


def _cut_front(token: str, folded_length: int, language: str) -> int:
    """How many characters of ``token`` as written its first ``folded_length`` folded ones are."""
    for i in range(len(token) + 1):
        if len(fold(token[:i], language)) >= folded_length:
            return i
    return len(token)


def _cut_back(token: str, folded_length: int, language: str) -> int:
    for j in range(len(token) + 1):
        if len(fold(token[len(token) - j:], language)) >= folded_length:
            return j
    return len(token)


def _cased_as_name(written: str, name: str) -> bool:
    """Written with the name's capital (or all in capitals, ALICE): "alice" as a common noun is
    not the name Alice. Scripts without case always pass."""
    if not written or not name[0].isupper():
        return True
    # Irish writes a mutation's letters lower case before the capital (hÁine, bPádraig, bhFiachra)
    return any(ch.isupper() for ch in written[:3]) or written.isupper()


_KATAKANA = regex.compile(r"[\p{Script=Katakana}\u30FC]")


def _inside_katakana_word(text: str, start: int, end: int) -> bool:
    """A katakana name inside a longer katakana word is another word (アン in アンナ): a katakana
    run is one word, whatever the particles around it."""
    before = start > 0 and _KATAKANA.match(text[start - 1]) and _KATAKANA.match(text[start])
    after = end < len(text) and _KATAKANA.match(text[end]) and _KATAKANA.match(text[end - 1])
    return bool(before or after)


def _inside_longer_word(words: list[Token], start: int, end: int, name: str, language: str) -> bool:
    """The name at start:end of the text (``words``: its tokens) begins a longer word of the dictionary segmenter
    (王 in 王明, 明 in 明子) that is not the name with its honorific or particle (王先生, 凤姐儿,
    田中さん: text.mentions.is_name): another name or word, never this character's. Only a word
    that starts with the name counts: one that starts before it is an address (老王) or the
    segmenter's cut across a name (张|伟说), which must not leave the name in the text."""
    from babelprobe.text.mentions import is_name

    return any(token.kind == "word" and token.start == start and token.end > end
               and not is_name(token.text, name, language) for token in words)


def _unspaced_hits(text: str, name: str, language: str) -> list[_Hit]:
    """A name in a script written without spaces is found inside the text (no boundary is
    written: 林黛玉说), its parts joined by an optional name separator (アンナ・カレーニナ)."""
    from babelprobe.text.normalize import converted

    parts = [converted(p, language) for p in regex.split(_SEPARATOR + "+", name) if p]
    pattern = regex.compile((_SEPARATOR + "?").join(regex.escape(p) for p in parts))
    haystack = converted(text, language)  # 張偉 found for 张伟 (zh: traditional = simplified)
    if len(haystack) != len(text):
        haystack = text  # a conversion that moved positions: look for the name as written
    hits = []
    words: list[Token] | None = None  # the text's dictionary words, segmented once at the first hit
    for found in pattern.finditer(haystack):
        start, end = found.span()
        if not _stands_alone(text, start, end) or _inside_katakana_word(text, start, end):
            continue
        if words is None:
            words = tokens(text, language)
        if not _inside_longer_word(words, start, end, name, language):
            hits.append(_Hit(start, end, 0, 0, Evidence("name_form:unspaced (found inside the text)", text[start:end],
                                                         name, (start, end))))
    return hits


def _inside_another_name(text: str, words: list[Token], i: int, whole: list[str], language: str) -> bool:
    """A part of a multi-word name followed by a capitalised word that is not a title, not a part
    of this name and not a patronymic (Arkadyevna) belongs to another name (Thúy of Thúy Kiều in
    Thúy Vân): not masked. (The word before is not looked at: a sentence starts with a capital.)"""
    if i + 1 >= len(words):
        return False
    other = words[i + 1]
    own = {fold(part, language) for part in whole}
    return (text[words[i].end:other.start].strip() == "" and other.text[:1].isupper()
            and not is_title(other.text, language) and fold(other.text, language) not in own
            and not is_patronymic(other.text, language))


def _spaced_hits(text: str, words: list[Token], name: str, language: str, parts: list[str],
                 whole: list[str] | None = None) -> tuple[list[_Hit], list[tuple[Token, str]]]:
    """Occurrences of ``name`` (the sequence of its parts) among the text's word tokens, and the
    tokens the layer could not place (Unsure) with the reason. ``whole``: the full name's parts
    when ``parts`` is one part of it looked for alone."""
    forms = [name_forms(part, language) for part in parts]
    hits, unsure = [], []
    for i in range(len(words) - len(parts) + 1):
        placements: list[tuple[Token, Placement, int, int]] = []
        for j, part_forms in enumerate(forms):
            token = words[i + j]
            if j and not _GAP.fullmatch(text[words[i + j - 1].end:token.start]):
                placements = []
                break
            placed = part_forms.place(token.text)
            if isinstance(placed, Unsure):
                if len(parts) == 1:
                    unsure.append((token, placed.reason))
                placements = []
                break
            if placed is None:
                placements = []
                break
            before = _cut_front(token.text, len(placed.prefix), language) if placed.prefix else 0
            after = _cut_back(token.text, len(placed.suffix), language) if placed.suffix else 0
            if not _cased_as_name(token.text[before:], parts[j]):
                placements = []
                break
            placements.append((token, placed, before, after))
        if not placements or (whole and _inside_another_name(text, words, i, whole, language)):
            continue
        (first, placed_first, before, _), (last, placed_last, _, after) = placements[0], placements[-1]
        start, end = first.start, last.end
        if _HYPHENATED.match(text, end) or (_HYPHENATED_BEFORE.search(text[:start]) and not placed_first.prefix):
            continue  # a part of a hyphenated name is another name (Jean in Jean-Pierre; not Malagasy an-dRabe)
        keep_before = before if placed_first.keep_prefix else 0
        keep_after = after if placed_last.keep_suffix else 0
        rules = "; ".join(p.rule for _, p, _, _ in placements)
        sources = "; ".join(sorted({p.source for _, p, _, _ in placements if p.source}))
        hits.append(_Hit(start, end, keep_before, keep_after,
                         Evidence(f"name_form:{rules}", text[start:end], " ".join(p.form.form for _, p, _, _ in placements),
                                  (start, end), sources or None)))
    return hits, unsure


def _maskable_parts(name: str, language: str) -> list[list[str]]:
    """The sequences to look for: the whole name, each part of a multi-word name that can
    name the character alone (Vronsky for Alexei Vronsky): not a title (Count, князь), not a
    lower-case particle (de, van), at least two letters; and consecutive parts written as one
    word (a compound name written joined: عبدالله for عبد الله)."""
    parts = name_parts(name, language)
    out = [parts] if parts else []
    if len(parts) > 1:
        for part in parts:
            if len(part) >= 2 and not (part[0].islower()) and not is_title(part, language):
                out.append([part])
        # a compound name written joined (عبدالله for عبد الله, Abdulrahman): consecutive parts as one word
        out += [["".join(parts[i:j])] for i in range(len(parts)) for j in range(i + 2, len(parts) + 1)]
    return out


def _joined(text: str, hits: list[_Hit]) -> list[_Hit]:
    """Parts of one name found side by side (Alexei Vronsky in a text naming Count Alexei
    Vronsky), apart by a space, a name separator or a hyphen (列夫•托尔斯泰 for 列夫·托尔斯泰), are one
    mask, as the whole name would be."""
    out: list[_Hit] = []
    for hit in hits:
        last = out[-1] if out else None
        if (last and last.name and hit.name == last.name and not last.keep_after and not hit.keep_before
                and _NAME_JOIN.fullmatch(text[last.end:hit.start])):
            evidence = Evidence(last.evidence.rule + " | " + hit.evidence.rule, text[last.start:hit.end],
                                f"{last.evidence.form} {hit.evidence.form}", (last.start, hit.end),
                                "; ".join(filter(None, [last.evidence.source, hit.evidence.source])) or None)
            out[-1] = _Hit(last.start, hit.end, last.keep_before, hit.keep_after, evidence, hit.name)
        else:
            out.append(hit)
    return out


def mask_with_evidence(text: str, names: Iterable[str], language: str = "") -> Masked:
    """Every form of each name replaced by [MASK] (OWL §2.2), with the evidence of each mask
    (_masked, whose docstring gives the rules; cached: a probe builds a prompt and its record from
    the same passage)."""
    return _masked(text, tuple(sorted({n.strip() for n in names if n.strip()}, key=lambda n: (-len(n), n))),
                   language or "en")


@lru_cache(maxsize=1024)
def _masked(text: str, names: tuple[str, ...], language: str) -> Masked:
    """Every form of each name replaced by [MASK] (OWL §2.2), with the evidence of each mask.

    Forms come from the language layer (``text.names``): the name and the forms its language's
    paradigm table builds (Polish Tomaszowi, Czech Pavlovi, Lithuanian Petro, Greek Γιάννη, Tamil
    ராமனுக்கு), matched whole-token after folding (capitals without accents, ё/е, Arabic yeh and
    kaf, niqqud, NFD), each part of a multi-word name alone, and in scripts written without spaces
    inside the text. Proclitics and particles the table marks ``keep`` stay visible (ו[MASK],
    [MASK]는, [MASK]'s). A passage without a language is read by English rules (OWL's originals).
    Raises NameNotMaskable naming the form when a token starts with the name but the layer cannot
    place it (text.names: Unsure), as the masked passage could still show the name."""
    words = _cut_at_separators([t for t in tokens(text, language) if t.kind in ("word", "number")])
    hits: list[_Hit] = []
    refused: list[tuple[Token, str]] = []
    for name in names:
        if is_unspaced(name[0]) or is_unspaced(name[-1]):
            for part in [name] + unspaced_parts(name, language):  # アンナ・カレーニナ, カレーニナ alone; 山田太郎, 太郎
                hits += [_Hit(h.start, h.end, 0, 0, h.evidence, name) for h in _unspaced_hits(text, part, language)
                         if part == name or not is_title(part, language)]
            continue
        whole = name_parts(name, language)
        for parts in _maskable_parts(name, language):
            found, unsure = _spaced_hits(text, words, " ".join(parts), language, parts,
                                         whole if len(whole) > 1 and len(parts) == 1 else None)
            hits += [_Hit(h.start, h.end, h.keep_before, h.keep_after, h.evidence, name) for h in found]
            refused += [u for u in unsure if len(parts) == 1]
    chosen: list[_Hit] = []
    for hit in sorted(hits, key=lambda h: (h.start, -(h.end - h.start))):
        if not chosen or hit.start >= chosen[-1].end:
            chosen.append(hit)
    chosen = _joined(text, chosen)
    covered = [(h.start, h.end) for h in chosen]
    left = [(token, why) for token, why in refused
            if not any(s <= token.start and token.end <= e for s, e in covered)]
    if left:
        token, why = left[0]
        raise NameNotMaskable(f"cannot mask {token.text!r} at character {token.start}: {why}, so the masked "
                              "passage could still show the name")
    pieces, last = [], 0
    for hit in chosen:
        pieces += [text[last:hit.start], text[hit.start:hit.start + hit.keep_before], MASK,
                   text[hit.end - hit.keep_after:hit.end] if hit.keep_after else ""]
        last = hit.end
    return Masked("".join(pieces) + text[last:], tuple(h.evidence for h in chosen))


def mask_names(text: str, names: Iterable[str], language: str = "") -> str:
    """The passage with every form of each name masked (mask_with_evidence, whose docstring gives
    the rules). Raises NameNotMaskable naming a form the language layer cannot place."""
    return mask_with_evidence(text, names, language).text


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
