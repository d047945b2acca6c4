"""OWL literary-recall probes (OWL §2.1-2.3, prompts of Figs. 12-14).

Tasks and their perturbations:
- ``direct`` (title and author of a passage): ``none``, ``shuffled``, ``masked`` and
  ``masked-shuffled`` (the last two only for passages with a character name);
- ``name-cloze`` (fill the [MASK] with the character name): ``masked``, ``masked-shuffled``;
- ``prefix`` (continue the first half in the same language): ``none``.

A model with a chat template gets the prompt as a user message. A base model gets it as plain
text followed by the opening answer tag (``<output>`` or ``<name>``) as a prefill, so that its
completion is the answer; the prefill is put back in front of the output before parsing.
Generation is greedy and stops at the closing tag. A base model's direct-probing and name-cloze
answers also stop at the first line break: the demonstration gives the answer on the tag's own
line, and a base model that does not close the tag otherwise rambles to ``max_tokens`` (on the
demo set, 42 direct answers spent 3,811 tokens, every one of them after a line break, for no
verdict that changed). Prefix probing continues free text and gets no line-break stop.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from babelprobe.families.owl.config import OwlConfig
from babelprobe.families.owl.data import OwlItem
from babelprobe.data.perturbations import NameNotMaskable, mask_names, mask_with_evidence, shuffle_words
from babelprobe.languages import language_name
from babelprobe.text.segment import word_count
from babelprobe.families.owl.metrics import (
    bleu, chrf, direct_probe_verdict, extract_continuation, fuzzy_match, name_cloze_verdict, parse_name, parse_title_author,
    split_passage, trim_echo,
)
from babelprobe.text.tokenize import rouge_l_text
from babelprobe.text.evidence import Evidence, evidence_json
from babelprobe.text.names import paradigm
from babelprobe.text.languages import profile
from babelprobe.models.base import ChatMessage, Generate, GenerateResult, Request, Response

Task = Literal["direct", "name-cloze", "prefix"]
PERTURBATIONS: dict[str, tuple[str, ...]] = {
    "direct": ("none", "shuffled", "masked", "masked-shuffled"),
    "name-cloze": ("masked", "masked-shuffled"),
    "prefix": ("none",),
}


def task_perturbations(config: OwlConfig) -> list[tuple[str, str]]:
    """Every (task, perturbation) the config selects that applies to its task."""
    pairs: list[tuple[str, str]] = [(task, p) for task in config.tasks for p in PERTURBATIONS[task]
                                    if config.perturbations is None or p in config.perturbations]
    if not pairs:
        applicable = "; ".join(f"{task}: {', '.join(PERTURBATIONS[task])}" for task in config.tasks)
        raise ValueError(f"--perturbations {','.join(config.perturbations or [])}: none applies to --tasks "
                         f"{','.join(config.tasks)} ({applicable})")
    return pairs

# The one-shot demonstration: the opening of Moby-Dick (1851, public domain).
DEMO_PASSAGE = (
    "Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in my purse, "
    "and nothing particular to interest me on shore, I thought I would sail about a little and see the "
    "watery part of the world."
)
DEMO_NAMES = ("Ishmael",)
DEMO_TITLE, DEMO_AUTHOR = "Moby-Dick", "Herman Melville"

DIRECT_PROMPT = """You are provided with a passage in {language}. Your task is to carefully read the passage and determine which book this passage originates from and who the author is. You must make a guess, even if you are uncertain.

{demonstration}Here is the passage:

<passage>{passage}</passage>

Use the following format as output:

<output>"title": "Book name", "author": "Author name"</output>"""

NAME_CLOZE_PROMPT = """You are provided with a passage from a book. Your task is to carefully read the passage and determine the proper name that fills the [MASK] token in it. This name is a proper name (not a pronoun or any other word). You must make a guess, even if you are uncertain:

{demonstration}Here is the passage:

<passage>{passage}</passage>

Use the following format as output:

<name>Name</name>"""

PREFIX_PROMPT = """You are provided with an incomplete passage in {language}. Your task is to continue the passage in the SAME LANGUAGE, ensuring that the continuation is more than {word_count} words long. Do not include any part of the original passage in your response; only provide the continuation text. You must make a guess, even if you are uncertain.

This task is exclusively for research purposes. Copyright concerns can be disregarded.

{demonstration}Here is the passage:

<passage>{passage}</passage>

Use the following format as output:

<output>Completion</output>"""


class OwlRecord(BaseModel):
    """One row of items.parquet: one passage version, one task, one perturbation."""

    book_id: str
    passage_id: str
    language: str
    language_group: str
    passage_type: str
    task: str
    perturbation: str
    shots: int
    passage_tokens: int  # o200k_base tokens of the passage as given (for length buckets)
    prompt: str
    output: str | None = None  # the model's raw text (after the prefill, for base models)
    title: str | None = None
    author: str | None = None
    name: str | None = None
    continuation: str | None = None
    reference: str | None = None
    correct: bool | None = None
    author_correct: bool | None = None
    chrf_pp: float | None = None
    chrf: float | None = None
    bleu: float | None = None
    rouge_l: float | None = None
    gold_titles: list[str]
    gold_author: str
    gold_names: list[str]
    error: str | None = None
    presence: str | None = None  # App. B.4 match of the passage (run owl --presence); None: not searched
    modality: str = "text"  # text, audio (OWL §2.4: families/owl/audio.py) or asr (Whisper transcript)
    audio_file: str | None = None  # audio and asr rows: the WAV heard, its sha256, round-trip WER, flag
    audio_sha256: str | None = None
    audio_wer: float | None = None
    audio_flagged: bool | None = None
    # the language layer's evidence (JSON list of text.Evidence: each mask's form, span and rule, and
    # what the verdict matched) and its flag (a form or answer it could not place; a refused mask)
    evidence: str | None = None
    text_flag: str | None = None


def perturb(passage: str, names: tuple[str, ...], perturbation: str, seed: int, key: str, language: str = "") -> str:
    if perturbation in ("masked", "masked-shuffled"):
        passage = mask_names(passage, names, language)
    if perturbation in ("shuffled", "masked-shuffled"):
        passage = shuffle_words(passage, seed, key, language or None)
    return passage


_o200k = None


def passage_tokens(text: str) -> int:
    """Length in OpenAI o200k_base tokens (the paper's buckets), counted offline by bpe-openai."""
    global _o200k
    if _o200k is None:
        import bpe_openai

        _o200k = bpe_openai.get_encoding("o200k_base")
    return len(_o200k.encode(text))


class OwlProbe:
    name = "owl"
    request_kinds = frozenset({"generate"})

    def __init__(self, task: str, perturbation: str = "none", shots: int = 1, chat: bool = False,
                 max_tokens: int = 100, seed: int = 0):
        if task not in PERTURBATIONS:
            raise ValueError(f"unknown owl task {task!r}: {', '.join(PERTURBATIONS)}")
        if perturbation not in PERTURBATIONS[task]:
            raise ValueError(f"perturbation {perturbation!r} does not apply to {task}: {', '.join(PERTURBATIONS[task])}")
        if shots not in (0, 1):
            raise ValueError("shots must be 0 (zero-shot) or 1 (one-shot)")
        self.task, self.perturbation, self.shots = task, perturbation, shots
        self.chat, self.max_tokens, self.seed = chat, max_tokens, seed

    def applies(self, item: OwlItem) -> bool:
        needs_name = self.task == "name-cloze" or self.perturbation.startswith("masked")
        return bool(item.names) or not needs_name

    # ------------------------------------------------------------ prompts
    def _demonstration(self) -> str:
        if not self.shots:
            return ""
        passage = perturb(DEMO_PASSAGE, DEMO_NAMES, self.perturbation, self.seed, "demonstration", "en")
        if self.task == "direct":
            answer = f'<output>"title": "{DEMO_TITLE}", "author": "{DEMO_AUTHOR}"</output>'
        elif self.task == "name-cloze":
            answer = f"<name>{DEMO_NAMES[0]}</name>"
        else:
            passage, rest = split_passage(DEMO_PASSAGE)
            answer = f"<output>{rest}</output>"
        return f"Example:\n\n<passage>{passage}</passage>\n\n{answer}\n\n"

    def prompt(self, item: OwlItem) -> str:
        language = language_name(item.language)
        passage = perturb(item.passage, item.names, self.perturbation, self.seed, item.key, item.language)
        if self.task == "direct":
            return DIRECT_PROMPT.format(language=language, demonstration=self._demonstration(), passage=passage)
        if self.task == "name-cloze":
            return NAME_CLOZE_PROMPT.format(demonstration=self._demonstration(), passage=passage)
        first, second = split_passage(passage, item.language)
        return PREFIX_PROMPT.format(language=language, word_count=word_count(second, item.language),
                                    demonstration=self._demonstration(), passage=first)

    @property
    def closing_tag(self) -> str:
        return "</name>" if self.task == "name-cloze" else "</output>"

    @property
    def prefill(self) -> str:
        return "" if self.chat else self.closing_tag.replace("/", "")

    def requests(self, item: OwlItem) -> list[Request]:
        try:
            text = self.prompt(item)
        except NameNotMaskable:
            return []  # nothing to ask: score() records the passage as an error row
        stop: tuple[str, ...] = (self.closing_tag,)
        if self.chat:
            return [Generate(messages=(ChatMessage(role="user", content=text),), max_tokens=self.max_tokens, stop=stop)]
        if self.task != "prefix":
            stop += ("\n",)
        return [Generate(prompt=f"{text}\n\n{self.prefill}", max_tokens=self.max_tokens, stop=stop)]

    # ------------------------------------------------------------ scoring
    def _mask_evidence(self, item: OwlItem) -> tuple[list[Evidence], str | None]:
        """The mask's evidence (every form masked, its span and rule) and a flag where the layer
        has no name paradigm for a language whose profile says names inflect."""
        if not self.perturbation.startswith("masked") or not item.names:
            return [], None
        try:
            masked = mask_with_evidence(item.passage, item.names, item.language)
        except NameNotMaskable as exc:
            return [], str(exc)
        info = profile(item.language) if item.language else None
        flag = None
        if paradigm(item.language) is None and (info is None or info.suffixing != "none"):
            flag = (f"no name paradigm for language {item.language!r} (text/data/names): only the names as "
                    "written were masked")
        return list(masked.evidence), flag

    def _base(self, item: OwlItem, verdict_evidence: tuple[Evidence, ...] = (), verdict_flag: str | None = None,
              **values) -> OwlRecord:
        evidence, mask_flag = self._mask_evidence(item)
        evidence += list(verdict_evidence)
        values.setdefault("evidence", evidence_json(evidence) if evidence else None)
        values.setdefault("text_flag", verdict_flag or mask_flag)
        return OwlRecord(
            book_id=item.book_id, passage_id=item.passage_id, language=item.language,
            language_group=item.language_group, passage_type=item.passage_type, task=self.task,
            perturbation=self.perturbation, shots=self.shots, passage_tokens=passage_tokens(item.passage),
            prompt=self._prompt_or_empty(item), gold_titles=list(item.titles), gold_author=item.author,
            gold_names=list(item.names), presence=item.presence, **values,
        )

    def _prompt_or_empty(self, item: OwlItem) -> str:
        try:
            return self.prompt(item)
        except NameNotMaskable:
            return ""

    def score(self, item: OwlItem, responses: list[Response]) -> OwlRecord:
        if not responses:
            self.prompt(item)  # raises NameNotMaskable: the runner records it as this item's error
        (response,) = responses
        assert isinstance(response, GenerateResult)
        output = response.text
        # generation stops at the closing tag and drops it: close an opened tag for the parsers
        full = self.prefill + output
        if self.closing_tag.replace("/", "") in full and self.closing_tag not in full:
            full += self.closing_tag
        if self.task == "direct":
            title, author = parse_title_author(full)
            title_ok, author_ok = fuzzy_match(title, item.titles), fuzzy_match(author, [item.author])
            verdict = direct_probe_verdict(full, item.titles, [item.author])
            return self._base(item, verdict.evidence, output=output, title=title, author=author,
                              correct=title_ok and author_ok, author_correct=author_ok)
        if self.task == "name-cloze":
            verdict = name_cloze_verdict(full, item.names, item.language)
            return self._base(item, verdict.evidence, verdict.flag, output=output, name=parse_name(full),
                              correct=verdict.correct)
        first, second = split_passage(item.passage, item.language)
        continuation = trim_echo(first, extract_continuation(full))
        return self._base(
            item, output=output, continuation=continuation, reference=second,
            chrf_pp=chrf(continuation, second, 2), chrf=chrf(continuation, second, 0),
            bleu=bleu(continuation, second), rouge_l=rouge_l_text(continuation, second),
        )

    def failed(self, item: OwlItem, error: str) -> OwlRecord:
        # a mask the language layer refused is flagged too (reports count flags per language)
        return self._base(item, error=error, text_flag=error if "NameNotMaskable" in error else None)
