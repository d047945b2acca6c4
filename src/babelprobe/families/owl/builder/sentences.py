"""Stage ``split`` (OWL App. B.1 step 1): sentences with stable ids per book and language.

The paper uses Stanza. Stanza's models are downloaded from its hub, so it is used where its
tokenizer models are already present (``$STANZA_RESOURCES_DIR`` or ~/stanza_resources/<lang>);
the offline default is pysbd (rule-based; its own rules for the languages it knows, its English
rules for other spaced scripts) and, for scripts written without spaces that pysbd does not cover
(Thai, Lao, Khmer, Myanmar...), a cut after sentence punctuation or, in Thai and Lao, which end
sentences with a space, at spaces between two runs of that script.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Callable

import regex

from babelprobe.families.owl.builder.records import Sentence, SplitBook
from babelprobe.text.scripts import detect_script

Splitter = Callable[[str], list[str]]
_TERMINAL = regex.compile(r"(?<=[.!?。！？।॥။។៕፨؟۔]+[\"'”’»)\]]*)\s*")
_SPACE_ENDS = regex.compile(r"(?<=\p{Script=Thai}|\p{Script=Lao})\s+(?=\p{Script=Thai}|\p{Script=Lao})")
_UNSPACED_NO_PYSBD = {"Thai", "Lao", "Khmer", "Myanmar", "Tibetan"}


def stanza_dir(language: str) -> Path | None:
    """Stanza's tokenizer models for ``language`` when they are on disk (never downloaded)."""
    root = Path(os.environ.get("STANZA_RESOURCES_DIR", Path.home() / "stanza_resources"))
    folder = root / language / "tokenize"
    try:
        import stanza  # noqa: F401
    except ImportError:
        return None
    return folder if folder.is_dir() and any(folder.iterdir()) else None


@lru_cache(maxsize=None)
def _stanza(language: str) -> Splitter:
    import stanza

    pipeline = stanza.Pipeline(language, processors="tokenize", download_method=None, verbose=False)
    return lambda text: [s.text for s in pipeline(text).sentences]


@lru_cache(maxsize=None)
def _pysbd(language: str) -> Splitter:
    import pysbd
    from pysbd.languages import LANGUAGE_CODES

    segmenter = pysbd.Segmenter(language=language if language in LANGUAGE_CODES else "en", clean=False)
    return lambda text: [s.strip() for s in segmenter.segment(text)]


def _unspaced(text: str) -> list[str]:
    pieces: list[str] = []
    for part in _TERMINAL.split(text):
        pieces.extend(_SPACE_ENDS.split(part))
    return [p.strip() for p in pieces if p and p.strip()]


def splitter_for(language: str, sample: str, choice: str = "auto") -> tuple[str, Splitter]:
    """(name, function) for a language: ``stanza`` where its models are present (``auto``), else
    the offline default; ``choice`` = ``stanza`` refuses a language whose models are missing."""
    if choice in ("auto", "stanza") and stanza_dir(language) is not None:
        return "stanza", _stanza(language)
    if choice == "stanza":
        raise ValueError(f"--splitter stanza: no Stanza tokenizer for {language!r} on disk "
                         f"(STANZA_RESOURCES_DIR or ~/stanza_resources/{language}/tokenize)")
    if detect_script(sample) in _UNSPACED_NO_PYSBD:
        return "punctuation+spaces", _unspaced
    from pysbd.languages import LANGUAGE_CODES

    return f"pysbd ({language if language in LANGUAGE_CODES else 'en'} rules)", _pysbd(language)


def split_book(book_id: str, language: str, paragraphs: list[str], choice: str = "auto") -> SplitBook:
    """Sentences never cross a paragraph; ids are the paragraph and the sentence's place in it,
    so they are the same on every run over the same text."""
    name, split = splitter_for(language, " ".join(paragraphs[:20]), choice)
    sentences: list[Sentence] = []
    for p, paragraph in enumerate(paragraphs):
        for k, text in enumerate(t for t in split(paragraph) if t.strip()):
            sentences.append(Sentence(sid=f"{book_id}.{language}.p{p:05d}.s{k:03d}", index=len(sentences),
                                      paragraph=p, text=text.strip()))
    return SplitBook(book_id=book_id, language=language, splitter=name, sentences=tuple(sentences))
