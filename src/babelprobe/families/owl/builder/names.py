"""Character names of a book's passages (stage ``posthoc``, OWL App. B.1 step 6) and the NER recall
the build report states.

OWL keeps passages with a character name (spaCy PERSON entities) and a no-name set without. spaCy's
small English pipeline misses many sentence-initial single first names (measured: "Heathcliff stood
at the door", "Gregor looked out the window", "Queequeg was a native of Rokovoko", but not "Mr.
Heathcliff" or "I told Heathcliff"): such a passage would land in the no-name set. ``--names book``
(the default) uses the book's own mentions instead: every PERSON entity spaCy finds anywhere in the
English book (and each word of a multi-word one: "Gregor" of "Gregor Samsa") is a name everywhere
in it, matched as a whole word (the longest name where names overlap). A book name that the book
also writes in lower case ("Will" / "will") is a common word too: its sentence-initial occurrences
are not taken as the name. ``--names passage`` is spaCy on the passage alone.

``ner_recall`` measures both on the bundled hand-checked sample (``owl_ner_sample.jsonl``:
paragraphs of public-domain novels, Project Gutenberg texts, each with the character names it
contains, checked by hand): how many of the named paragraphs each method finds named (what decides
the with-name / no-name split) and how many of the names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from babelprobe.config import BUNDLED_DATA
from babelprobe.families.owl.builder.filters import _ner, entity_names

NER_SAMPLE = BUNDLED_DATA / "owl_ner_sample.jsonl"
Method = Literal["book", "passage"]
# what may stand between a sentence's end (or the text's start) and its first word
_SENTENCE_START = re.compile(r"(?:^|[.!?…:;][\"'”’)\]]*)\s*[\"'“‘(\[—-]*\s*$")


def book_names(paragraphs: Iterable[str]) -> frozenset[str]:
    """Every PERSON name spaCy finds in any paragraph of the book."""
    names: set[str] = set()
    for doc in _ner().pipe(paragraphs, batch_size=64):
        names.update(entity_names(doc))
    return frozenset(names)


def lowercase_words(paragraphs: Iterable[str]) -> frozenset[str]:
    """The book's words as it writes them in lower case (to tell "Will" the name from "will")."""
    return frozenset(w for p in paragraphs for w in re.findall(r"\w+", p) if w.islower())


def names_in(text: str, known: Iterable[str], common: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The known names occurring in ``text`` as whole words, in order of first mention; where two
    overlap the longer wins ("Gregor Samsa", not also "Gregor"); a name that is also a common word
    of the book (``common``) does not count at the start of a sentence."""
    found: list[tuple[int, int, str]] = []
    for name in known:
        for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text):
            if name.lower() in common and _SENTENCE_START.search(text[: m.start()]):
                continue
            found.append((m.start(), m.end(), name))
    names: list[str] = []
    end = -1
    for start, stop, name in sorted(found, key=lambda f: (f[0], f[0] - f[1])):
        if start < end:
            continue  # inside a longer name already taken
        end = stop
        if name not in names:
            names.append(name)
    return tuple(names)


class BookNames:
    """One book's names for ``names_in``: spaCy's entities over all its English paragraphs, and the
    words of its multi-word names ("Gregor" of "Gregor Samsa") unless the book also writes them in
    lower case ("Old" of "Old Marley")."""

    def __init__(self, paragraphs: list[str]):
        entities = book_names(paragraphs)
        self.common = lowercase_words(paragraphs)
        parts = {w for name in entities if " " in name for w in name.split()
                 if w[:1].isupper() and w.isalpha() and w.lower() not in self.common}
        self.known = frozenset(entities | parts)

    def of(self, text: str) -> tuple[str, ...]:
        return names_in(text, self.known, self.common)


def passage_names(texts: dict[str, list[str]], method: Method) -> dict[str, list[tuple[str, ...]]]:
    """book -> the names of each of its paragraphs, by ``method``."""
    from babelprobe.families.owl.builder.filters import character_names

    if method == "passage":
        return {book: [character_names(t) for t in paragraphs] for book, paragraphs in texts.items()}
    out = {}
    for book, paragraphs in texts.items():
        lexicon = BookNames(paragraphs)
        out[book] = [lexicon.of(t) for t in paragraphs]
    return out


class MethodRecall(BaseModel):
    method: Method
    named_paragraphs_found: int  # of the sample's paragraphs with a name, found to have one
    names_found: int  # of the (paragraph, name) pairs, found
    false_names: int  # names found that the hand check does not list


class NerRecall(BaseModel):
    """NER recall on the hand-checked sample (the build report's ``ner_recall``)."""

    sample: str
    books: int
    paragraphs: int
    named_paragraphs: int
    names: int  # (paragraph, name) pairs
    methods: list[MethodRecall]


def read_sample(path: Path = NER_SAMPLE) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """book -> [(paragraph, its hand-checked names)], in the file's order."""
    out: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.setdefault(row["book_id"], []).append((row["text"], tuple(row["names"])))
    return out


@lru_cache(maxsize=4)  # a pure function of the sample and the installed spaCy model
def ner_recall(path: Path = NER_SAMPLE) -> NerRecall:
    """Both methods (``passage_names``) against the hand-checked names of each paragraph."""
    sample = read_sample(path)
    gold = [(book, i, set(names)) for book, rows in sample.items() for i, (_, names) in enumerate(rows)]
    texts = {book: [t for t, _ in rows] for book, rows in sample.items()}
    methods = []
    for method in ("book", "passage"):
        found = passage_names(texts, method)
        got = [set(found[book][i]) for book, i, _ in gold]
        methods.append(MethodRecall(
            method=method, named_paragraphs_found=sum(1 for (_, _, g), f in zip(gold, got) if g and f),
            names_found=sum(len(g & f) for (_, _, g), f in zip(gold, got)),
            false_names=sum(len(f - g) for (_, _, g), f in zip(gold, got))))
    return NerRecall(sample=path.name, books=len(sample), paragraphs=len(gold),
                     named_paragraphs=sum(1 for _, _, g in gold if g), names=sum(len(g) for _, _, g in gold),
                     methods=methods)
