"""ECLeKTiC cross-lingual knowledge transfer probe (ECLeKTiC §3, §4.4, Figs. 9-10).

Settings: ``closed-book`` (the question alone, no instruction, as in the main experiments) and
the hint ablations of Fig. 10: ``general-hint``, ``source-language-name``,
``source-language-title`` and ``open-book`` (cross-lingual open-book: the source-language context
before the target-language question). A model with a chat template gets the prompt as one user
message; a base model gets it as plain text to complete.

Answers are scored with the string metric (§3.1, both behaviours) and, in a second stage, by
judge models with the prompt of Fig. 9 (the source context as TEXT).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from babelprobe.data.eclektic import EclekticRow
from babelprobe.languages import detect_script, language_name
from babelprobe.metrics.eclektic import parse_judge, word_recall
from babelprobe.models.base import ChatMessage, Generate, GenerateResult, Request, Response

Setting = Literal["closed-book", "general-hint", "source-language-name", "source-language-title", "open-book"]
SETTINGS: tuple[str, ...] = ("closed-book", "general-hint", "source-language-name", "source-language-title", "open-book")

# Fig. 10 (the instruction and the question as separate paragraphs).
PROMPTS: dict[str, str] = {
    "closed-book": "{question}",
    "general-hint": "Answer the following question based on your knowledge in another language.\n\n{question}",
    "source-language-name": "Answer the following question based on your knowledge in {in_lang}.\n\n{question}",
    "source-language-title": (
        "Answer the following question based on your knowledge in {in_lang} about {original_title}.\n\n{question}"
    ),
    "open-book": "Context: {context}\n\n{question}",
}

# Fig. 9, verbatim but for the bold markers.
JUDGE_PROMPT = """Task: Determine if an answer to the question is supported by a given text.

Input (in {target_lang}):
- Text
- Question
- Answer

Single Word Output (in English):
- YES: Answer is derived from the text.
- NO: Answer is not derived from the text.

Text:
{text}

Question:
{question}

Answer:
{answer}

Output:"""


class EclekticRecord(BaseModel):
    """One row of items.parquet: one question, one target language, one setting."""

    q_id: str
    source_language: str
    target_language: str
    is_source: bool
    setting: str
    script: str
    question: str
    answer: str
    prompt: str
    prediction: str | None = None
    recall: float | None = None  # normalised string metric
    recall_compat: float | None = None  # the official notebook's behaviour
    judge_answers: list[str] | None = None  # raw, one per judge
    judge_votes: list[bool | None] | None = None
    judge_correct: bool | None = None  # majority of the votes (a tie or no vote: not correct)
    error: str | None = None


def prompt_text(row: EclekticRow, setting: str) -> str:
    if setting not in PROMPTS:
        raise ValueError(f"unknown eclektic setting {setting!r}: {', '.join(SETTINGS)}")
    return PROMPTS[setting].format(
        question=row.question, in_lang=language_name(row.source_language),
        original_title=row.source_title, context=row.source_context,
    )


def as_request(text: str, chat: bool, max_tokens: int) -> Generate:
    if chat:
        return Generate(messages=(ChatMessage(role="user", content=text),), max_tokens=max_tokens)
    return Generate(prompt=text, max_tokens=max_tokens)


class EclekticProbe:
    name = "eclektic"
    request_kinds = frozenset({"generate"})

    def __init__(self, setting: str = "closed-book", chat: bool = False, max_tokens: int = 64):
        if setting not in PROMPTS:
            raise ValueError(f"unknown eclektic setting {setting!r}: {', '.join(SETTINGS)}")
        self.setting, self.chat, self.max_tokens = setting, chat, max_tokens

    def requests(self, row: EclekticRow) -> list[Request]:
        return [as_request(prompt_text(row, self.setting), self.chat, self.max_tokens)]

    def _base(self, row: EclekticRow, **values) -> EclekticRecord:
        return EclekticRecord(
            q_id=row.q_id, source_language=row.source_language, target_language=row.target_language,
            is_source=row.is_source, setting=self.setting, script=detect_script(row.question),
            question=row.question, answer=row.answer, prompt=prompt_text(row, self.setting), **values,
        )

    def score(self, row: EclekticRow, responses: list[Response]) -> EclekticRecord:
        (response,) = responses
        assert isinstance(response, GenerateResult)
        prediction = response.text.strip()
        return self._base(
            row, prediction=prediction,
            recall=word_recall(row.answer, prediction, row.target_language, "normalized"),
            recall_compat=word_recall(row.answer, prediction, row.target_language, "compat"),
        )

    def failed(self, row: EclekticRow, error: str) -> EclekticRecord:
        return self._base(row, error=error)


def judge_request(row: EclekticRow, prediction: str, chat: bool, max_tokens: int = 8) -> Generate:
    """Fig. 9 with the source-language context as the text the answer must be derived from."""
    text = JUDGE_PROMPT.format(target_lang=language_name(row.target_language), text=row.source_context,
                               question=row.question, answer=prediction)
    return as_request(text, chat, max_tokens)


def with_judgements(record: EclekticRecord, answers: list[str]) -> EclekticRecord:
    """Attach the judges' raw answers, their parsed votes and the majority verdict."""
    votes = [parse_judge(a) for a in answers]
    correct = sum(v is True for v in votes) > len(votes) / 2  # strict majority; unparsed count against
    return record.model_copy(update={"judge_answers": answers, "judge_votes": votes, "judge_correct": correct})
