"""OWL scoring: output parsers and metrics for direct probing, name cloze and prefix probing
(OWL §2.1-2.3, footnotes 4 and 6; the authors' evaluation scripts for the exact rules).

Similarity is ``rapidfuzz.fuzz.ratio`` / 100: the normalised InDel similarity
``1 - (insertions + deletions) / (len(a) + len(b))``. It is what the authors' scripts compute
(``fuzzywuzzy.fuzz.ratio``, whose scores rapidfuzz reproduces), so the paper's thresholds (0.9
for titles and authors, 0.7 for names) keep their meaning; a plain Levenshtein ratio would be
stricter for the same threshold. Normalisation is ``unidecode`` + lowercase (+ strip).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from rapidfuzz import fuzz
from unidecode import unidecode

from babelprobe.text.units import join_units, text_units
from babelprobe.text.evidence import Evidence, Unsure
from babelprobe.text.names import name_forms, name_parts
from babelprobe.text.titles import find_title, is_title, titles_by_language
from babelprobe.text.units import word_spans
from babelprobe.text.tokenize import script_tokens

DIRECT_PROBE_THRESHOLD = 0.9
NAME_CLOZE_THRESHOLD = 0.7


def normalize(text: str) -> str:
    """unidecode + lowercase + collapsed whitespace: 'Don Quijote' == 'don quijote', 'Bovary' == 'bovary'."""
    return " ".join(unidecode(text).lower().split())


def similarity(a: str, b: str) -> float:
    return fuzz.ratio(a, b) / 100.0


_TITLE = re.compile(r'"?title"?\s*:\s*"?(.*?)"?\s*(?:,\s*"?author"?\s*:|$|\n|</output>)', re.I | re.S)
_AUTHOR = re.compile(r'"?author"?\s*:\s*"?(.*?)"?\s*(?:,\s*"?title"?\s*:|$|\n|</output>|\})', re.I | re.S)
_TAG = re.compile(r"<(output|name)>(.*?)</\1>", re.I | re.S)


def _inside_tags(text: str) -> str:
    """The first <output>/<name> element's content (a rambling model's later ones are not its
    answer), else the raw text."""
    found = _TAG.search(text)
    return found.group(2) if found else text


def parse_title_author(text: str) -> tuple[str, str]:
    """(title, author) from a direct-probing answer. Accepts the asked-for
    ``<output>"title": "...", "author": "..."</output>`` and the usual deviations (missing
    quotes or tags, swapped order, text around it). When neither field is found, the raw text
    stands for both, as in the authors' evaluation (a gold title inside a free-text answer still
    counts through the substring rule)."""
    body = _inside_tags(text).strip()
    title = _TITLE.search(body)
    author = _AUTHOR.search(body)
    if not title and not author:
        return body, body
    return (title.group(1).strip() if title else "", author.group(1).strip() if author else "")


def fuzzy_match(prediction: str, golds: Iterable[str], threshold: float = DIRECT_PROBE_THRESHOLD) -> bool:
    """Normalised prediction within ``threshold`` similarity of a gold string, or containing it."""
    pred = normalize(prediction)
    for gold in golds:
        g = normalize(gold)
        if g and (similarity(pred, g) >= threshold or g in pred):
            return True
    return False


def direct_probe_correct(prediction: str, titles: Iterable[str], authors: Iterable[str]) -> bool:
    """Correct iff title AND author match (OWL §2.1, fn. 4): similarity >= 0.9 or the gold string
    contained in the prediction, after normalisation, against any gold title (English, passage
    language, aliases such as "Nineteen Eighty-Four" for "1984") and any gold author form."""
    title, author = parse_title_author(prediction)
    return fuzzy_match(title, titles) and fuzzy_match(author, authors)


def parse_name(text: str) -> str:
    """The name from a name-cloze answer: inside <name>…</name> or <output>…</output>, else the
    raw text (one line, stripped)."""
    return " ".join(_inside_tags(text).split())


# Titles and honorifics live in the language layer (text/data/titles/<lang>.tsv, a source per row):
# a word of a name, never the name alone ("Count" for Count Vronsky, "Ntate" for Ntate Moloi).
HONORIFICS_BY_LANGUAGE: dict[str, frozenset[str]] = titles_by_language()


def is_honorific(word: str, language: str | None = None) -> bool:
    """``word`` is a title in the passage's language or English (any language when not given)."""
    return is_title(word, language if isinstance(language, str) else None)


def name_candidates(names: Iterable[str], language: str | None = None) -> set[str]:
    """Every gold name and every single word of it except honorifics ("Hester Prynne" -> also
    "Hester", "Prynne"; "Mr. Darcy" -> also "Darcy", not "Mr."): a model answering "Mr." has not
    named anyone. (The authors' script keeps every word; the issue overrides it.)"""
    out = set()
    for name in names:
        out.add(name)
        out.update(word for word in name.split() if not is_honorific(word, language))
    return {n for n in out if n.strip()}


@dataclass(frozen=True)
class Verdict:
    """A string-metric verdict and what it rests on (items' ``evidence`` and ``text_flag``)."""

    correct: bool
    evidence: tuple[Evidence, ...] = ()
    flag: str | None = None  # the layer could not decide something behind the verdict (Unsure.reason)


def _paper_match(name: str, names: list[str], language: str | None) -> Evidence | None:
    """OWL §2.2 fn. 6, the authors' rule: the normalised answer equals a gold name, or a
    candidate (name_candidates) exactly or with similarity >= 0.7; titles alone never."""
    pred = normalize(name)
    whole = [n for n in names if normalize(n) == pred]
    if whole:
        return Evidence("owl:exact", name, whole[0])  # even a name that is a title (a character called "Captain")
    if all(is_honorific(word, language) for word in name.split()):
        return None
    best, score = None, 0.0
    for candidate in sorted(name_candidates(names, language)):
        value = 1.0 if normalize(candidate) == pred else similarity(pred, normalize(candidate))
        if value > score:
            best, score = candidate, value
    if best is not None and score >= NAME_CLOZE_THRESHOLD:
        rule = "owl:exact (a word of the name)" if score == 1.0 else \
            f"owl:similarity {score:.2f} >= {NAME_CLOZE_THRESHOLD}"
        return Evidence(rule, name, best)
    return None


def _form_match(name: str, names: list[str], language: str | None) -> tuple[Evidence | None, str | None]:
    """The answer is a form of a gold name by the language layer (text.names): every word of it
    an inflected or variant form of a word of the gold name that is not a title (Pavlovi for
    Pavel, ΓΙΑΝΝΗ for Γιάννης, Vronsky for Alexei Vronsky). (evidence, an Unsure reason)."""
    answer = [w for w in name_parts(name, language) if not is_honorific(w, language)]
    if not answer:
        return None, None
    flag = None
    for gold in names:
        parts = [p for p in name_parts(gold, language) if not is_honorific(p, language)]
        placed = []
        for word in answer:
            found = None
            for part in parts:
                hit = name_forms(part, language).place(word)
                if isinstance(hit, Unsure):
                    flag = flag or hit.reason
                elif hit is not None and not hit.prefix:
                    found = hit
                    break
            if found is None:
                break
            placed.append(found)
        if len(placed) == len(answer):
            rules = "; ".join(hit.rule for hit in placed)
            sources = "; ".join(sorted({hit.source for hit in placed if hit.source}))
            return Evidence(f"name_form:{rules}", name, gold, source=sources or None), None
    return None, flag


def name_cloze_verdict(prediction: str, names: Iterable[str], language: str | None = None,
                       forms: bool = True) -> Verdict:
    """The name-cloze verdict with its evidence. Correct iff the answer meets the authors' rule
    (OWL §2.2 fn. 6: exact, or similarity >= 0.7 after unidecode + lower case, against the gold
    names and their words except titles) or, with ``forms`` (the default; the compat rescoring
    of the release passes False to keep the paper's numbers), is an inflected or variant form
    of the gold name by the language layer. An answer made only of titles names no one
    (text/data/titles). Where the two disagree the paper's rule is kept: it accepts near
    spellings of another name (Anna for Ann, 0.86), which the forms path never would, and
    rejects stem changes (Pavlovi for Pavel, 0.67), which the forms path accepts."""
    golds = [n for n in names if n and n.strip()]
    name = parse_name(prediction)
    if not normalize(name) or not golds:
        return Verdict(False)
    paper = _paper_match(name, golds, language)
    if paper is not None:
        return Verdict(True, (paper,))
    if all(is_honorific(word, language) for word in name.split()):
        title = find_title(name.split()[0], language if isinstance(language, str) else None)
        return Verdict(False, (Evidence("title", name, title.title if title else None,
                                        source=title.source if title else None),))
    if not forms:
        return Verdict(False)
    evidence, flag = _form_match(name, golds, language)
    return Verdict(evidence is not None, (evidence,) if evidence else (), flag if evidence is None else None)


def name_cloze_correct(prediction: str, names: Iterable[str], language: str | None = None) -> bool:
    """Correct iff the answer names the character (name_cloze_verdict: the authors' rule, OWL §2.2
    fn. 6, or a form of the gold name by the language layer); an answer made only of titles
    ("Uncle" for Uncle Tom, similarity 0.71) names no one and is never correct."""
    return name_cloze_verdict(prediction, names, language).correct


def direct_probe_verdict(prediction: str, titles: Iterable[str], authors: Iterable[str]) -> Verdict:
    """direct_probe_correct with its evidence: which gold title and author matched, and how
    (OWL §2.1 fn. 4: contained, or similarity >= 0.9)."""
    title, author = parse_title_author(prediction)
    evidence: list[Evidence] = []
    for field, answer, golds in (("title", title, list(titles)), ("author", author, list(authors))):
        pred, match = normalize(answer), None
        for gold in golds:
            g = normalize(gold)
            if not g:
                continue
            score = similarity(pred, g)
            if score >= DIRECT_PROBE_THRESHOLD or g in pred:
                rule = f"similarity {score:.2f} >= {DIRECT_PROBE_THRESHOLD}" if score >= DIRECT_PROBE_THRESHOLD \
                    else "contains the gold"
                match = Evidence(f"owl:{field} {rule}", answer, gold)
                break
        if match is None:
            return Verdict(False, tuple(evidence))
        evidence.append(match)
    return Verdict(True, tuple(evidence))


# ---------------------------------------------------------------- prefix probing


def extract_continuation(text: str) -> str:
    """The text inside <output>…</output> (an unclosed tag runs to the end), else the raw text,
    on one line."""
    start = text.find("<output>")
    body = text[start + len("<output>"):] if start >= 0 else text
    end = body.find("</output>")
    return " ".join((body[:end] if end >= 0 else body).split())


def split_passage(passage: str, language: str | None = None) -> tuple[str, str]:
    """First and second half at the word midpoint (len(words) // 2), as the authors split at the
    word midpoint; words are the language layer's written words in every script
    (babelprobe.text.units.word_spans: whitespace words, and dictionary-segmented words in Thai,
    Japanese, Chinese, Lao, Khmer, Burmese), punctuation standing alone not counted (a Chinese
    passage's 。 and ， are no words). Whitespace runs become single spaces (for spaced text: the
    authors' " ".join of words)."""
    spans = word_spans(passage, language)
    cut = spans[len(spans) // 2][0] if spans else len(passage)
    return " ".join(passage[:cut].split()), " ".join(passage[cut:].split())


def trim_echo(prefix: str, output: str) -> str:
    """Drop a repeated prefix from the start of a continuation: the longest tail of the prefix
    (compared by units, without punctuation and case) that the output begins with."""
    def key(units: list[str]) -> str:
        return re.sub(r"\W+", " ", join_units(units)).casefold().strip()

    units, out_units = text_units(prefix), text_units(output)
    for start in range(len(units)):
        tail = units[start:]
        if len(out_units) >= len(tail) and key(out_units[: len(tail)]) == key(tail) and key(tail):
            return join_units(out_units[len(tail):])
    return output.strip()


def chrf(hypothesis: str, reference: str, word_order: int = 2) -> float:
    """chrF++ (word_order=2, the paper's metric) or plain chrF (word_order=0, what the released
    numbers were computed with), sacrebleu's sentence-level implementation, 0-100."""
    from sacrebleu.metrics import CHRF

    return float(CHRF(word_order=word_order).sentence_score(hypothesis, [reference]).score)


def bleu(hypothesis: str, reference: str) -> float:
    """Sentence BLEU (sacrebleu, smoothed 'exp') over script_tokens, 0-100."""
    from sacrebleu.metrics import BLEU

    hyp, ref = " ".join(script_tokens(hypothesis)), " ".join(script_tokens(reference))
    return float(BLEU(tokenize="none", effective_order=True).sentence_score(hyp, [ref]).score)
