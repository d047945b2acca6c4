"""Stages ``translate`` (OWL App. B.1 step 2) and ``mt`` (App. B.2): requests through babelprobe's
backends, runner and response cache (a killed build resumes from the cached batches).

``translate``: non-English books into English with the Fig. 15 prompt; every sentence is wrapped
in a ``<t#>`` tag (its index in the book) and the answer's tags give each sentence's English, so
the alignment can map back to the original sentences by id. The paper's settings (gpt-4o-2024-05-13,
temperature 0.3, max_tokens 4000) are the defaults. Chunks are whole paragraphs, packed up to
``chunk_sentences`` sentences per request.

``mt``: English passages into the unseen languages, ``[MASK]`` replaced by ``@@PLACEHOLDER@@``
first (B.2). The paper used Microsoft Translator; here any backend answers a plain instruction
(MT_PROMPT, ours: the paper's translator needed none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from babelprobe.families.owl.builder.records import Sentence, SplitBook, TranslatedBook
from babelprobe.languages import language_name
from babelprobe.models.base import Backend, ChatMessage, Generate, GenerateResult, request_key
from babelprobe.models.cache import ResponseCache
from babelprobe.models.registry import LoadOptions
from babelprobe.request_runner import Outcome, Runner

# OWL Fig. 15 (the passage is the chunk's sentences, each in its <t#> tag)
TRANSLATION_PROMPT = """Carefully read and translate the following passage into English, preserving the tags:

<passage>{passage}</passage>

Use the following format as output:

<passage><t#>Your translation</t#></passage>"""
MT_PROMPT = """Translate the following passage from English into {language}. Keep every @@PLACEHOLDER@@ exactly as it is. Output only the translation.

{passage}"""
PLACEHOLDER = "@@PLACEHOLDER@@"
_TAG = re.compile(r"<t(\d+)>(.*?)</t\1>", re.DOTALL)


@dataclass
class Translator:
    """One backend (loaded on first use) answering Generate requests through a Runner on the
    build's response cache."""

    spec: str
    options: LoadOptions
    cache: Path | None
    batch_size: int
    label: str
    _backend: Backend | None = field(default=None, repr=False)

    def backend(self) -> Backend:
        from babelprobe.models.registry import check_supported

        if self._backend is None:
            from babelprobe.models import load_backend

            try:
                self._backend = load_backend(self.spec, options=self.options)
            except (OSError, ValueError, ImportError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise ValueError(f"model {self.spec} could not be loaded: {first}") from exc
        check_supported(self._backend, frozenset({"generate"}), f"owl build {self.label}")
        return self._backend

    def request(self, prompt: str, max_tokens: int, temperature: float, seed: int) -> Generate:
        chat = self.backend().has_chat_template
        return Generate(messages=(ChatMessage(role="user", content=prompt),) if chat else None,
                        prompt=None if chat else prompt, max_tokens=max_tokens, temperature=temperature, seed=seed)

    def answer(self, requests: list[Generate], progress: bool) -> dict[str, Outcome]:
        if self.cache is not None:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
        cache = ResponseCache(self.cache) if self.cache is not None else None
        try:
            runner = Runner(self.backend(), cache=cache, batch_size=self.batch_size, progress=progress, label=self.label)
            return runner.run(requests)
        finally:
            if cache is not None:
                cache.close()


def chunks(book: SplitBook, max_sentences: int) -> list[list[Sentence]]:
    """Whole paragraphs packed up to ``max_sentences``; a longer paragraph is cut."""
    out: list[list[Sentence]] = []
    paragraphs: dict[int, list[Sentence]] = {}
    for s in book.sentences:
        paragraphs.setdefault(s.paragraph, []).append(s)
    current: list[Sentence] = []
    for sentences in paragraphs.values():
        if current and len(current) + len(sentences) > max_sentences:
            out.append(current)
            current = []
        for s in sentences:
            current.append(s)
            if len(current) >= max_sentences:
                out.append(current)
                current = []
    if current:
        out.append(current)
    return out


def tagged(chunk: list[Sentence]) -> str:
    return "".join(f"<t{s.index}>{s.text}</t{s.index}>" for s in chunk)


def parse_translation(chunk: list[Sentence], text: str) -> dict[str, str]:
    """sid -> English from the answer's tags; a one-sentence chunk answered without tags is taken
    whole (a small model may drop them); sentences whose tag is missing are left out."""
    by_index = {s.index: s for s in chunk}
    found = {by_index[int(m.group(1))].sid: m.group(2).strip() for m in _TAG.finditer(text)
             if int(m.group(1)) in by_index and m.group(2).strip()}
    if not found and len(chunk) == 1:
        bare = re.sub(r"</?(passage|t#?\d*)>", " ", text).strip()
        if bare:
            found[chunk[0].sid] = " ".join(bare.split())
    return found


def translate_books(books: list[SplitBook], translator: Translator, chunk_sentences: int, max_tokens: int,
                    temperature: float, seed: int, progress: bool) -> list[TranslatedBook]:
    plan = [(book, chunk, translator.request(TRANSLATION_PROMPT.format(passage=tagged(chunk)), max_tokens, temperature, seed))
            for book in books for chunk in chunks(book, chunk_sentences)]
    outcomes = translator.answer([r for _, _, r in plan], progress)
    out = []
    for book in books:
        english: dict[str, str] = {}
        errors: list[str] = []
        for b, chunk, request in plan:
            if b is not book:
                continue
            outcome = outcomes[request_key(request)]
            if outcome.error is not None or not isinstance(outcome.response, GenerateResult):
                errors.append(f"sentences {chunk[0].sid}..{chunk[-1].sid}: {outcome.error}")
                continue
            english.update(parse_translation(chunk, outcome.response.text))
        missing = tuple(s.sid for s in book.sentences if s.sid not in english)
        out.append(TranslatedBook(book_id=book.book_id, language=book.language, english=english,
                                  missing=missing, errors=tuple(errors)))
    return out


def mt_request(translator: Translator, english: str, language: str, max_tokens: int, temperature: float,
               seed: int) -> Generate:
    prompt = MT_PROMPT.format(language=language_name(language), passage=english.replace("[MASK]", PLACEHOLDER))
    return translator.request(prompt, max_tokens, temperature, seed)
