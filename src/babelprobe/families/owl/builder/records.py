"""Records passed between the build's stages (and stored on disk, one JSON file per stage)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Book(_Record):
    """One book in one language (a row of the books table)."""

    book_id: str
    language: str
    file: Path
    title_en: str
    author: str
    title: str = ""
    year: int | None = None
    aliases: tuple[str, ...] = ()


class Sentence(_Record):
    sid: str  # stable: "<book>.<lang>.p<paragraph>.s<k>" (B.1 step 1: "a unique identifier")
    index: int  # position in the book (the number in the translation prompt's <t#> tags)
    paragraph: int
    text: str


class SplitBook(_Record):
    book_id: str
    language: str
    splitter: str
    sentences: tuple[Sentence, ...]


class TranslatedBook(_Record):
    """English translation of a non-English book, sentence by sentence (ids kept)."""

    book_id: str
    language: str
    english: dict[str, str]  # sid -> its English translation
    missing: tuple[str, ...] = ()  # sids the translator's answer did not return (tag lost, error)
    errors: tuple[str, ...] = ()


class AlignedPair(_Record):
    """One English paragraph and what the aligner matched in one translation."""

    book_id: str
    language: str
    paragraph: int
    english: str
    english_sids: tuple[str, ...]
    back_translation: str  # the matched sentences' English translations (compared by the filters)
    target_sids: tuple[str, ...]
    target: str  # the matched sentences in the translation's own language


class Passage(_Record):
    """One English paragraph with all its versions; grows stage by stage."""

    book_id: str
    paragraph: int
    english: str
    versions: dict[str, str] = Field(default_factory=dict)  # official language -> passage
    target_sids: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    names: tuple[str, ...] = ()
    tokens: int = 0
    masked: str = ""  # English with [MASK] for every name (name cloze)
    unseen: dict[str, str] = Field(default_factory=dict)  # unseen language -> machine translation

    @property
    def passage_id(self) -> str:
        return f"p{self.paragraph:05d}"

    @property
    def set_name(self) -> str:
        return "with-name" if self.names else "no-name"


class Deletion(_Record):
    stage: str
    book_id: str
    language: str  # the language whose check failed ("en" for English-side filters)
    paragraph: int
    reason: str


class Count(_Record):
    """Counts in and out of one stage for one book and language."""

    stage: str
    book_id: str
    language: str
    unit: str  # sentences, paragraphs, passages
    n_in: int
    n_out: int
