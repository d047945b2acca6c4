"""ECLeKTiC cross-lingual knowledge transfer probe (ECLeKTiC §3, §4.4, Figs. 9-10).

Settings: ``closed-book`` (the question alone, no instruction, as in the main experiments) and
the hint ablations of Fig. 10: ``general-hint``, ``source-language-name``,
``source-language-title`` and ``open-book`` (cross-lingual open-book: the source-language context
before the target-language question: Fig. 10's SOURCE_LANG_CONTEXT and §4.4). A model with a chat
template gets the prompt as one user message; a base model gets it as plain text to complete,
with a paragraph break after it and generation stopped at the first line break (``answer_request``).

Answers are scored with the string metric (§3.1, both behaviours) and, in a second stage, by
judge models with the prompt of Fig. 9: "the question and the translated context" (§3), i.e. the
row's own context in its target language as TEXT, as Fig. 9's "Input (in TARGET_LANG)" says.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from babelprobe.families.eclektic.data import EclekticRow
from babelprobe.languages import language_name
from babelprobe.text.scripts import detect_script, language_script
from babelprobe.families.eclektic.metrics import parse_judge, recall_verdict, word_recall
from babelprobe.models.base import ChatMessage, Generate, GenerateResult, Request, Response
from babelprobe.text.evidence import evidence_json

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
    script: str  # of the target language (languages.language_script), else read from the question
    question: str
    answer: str
    prompt: str  # the text sent (a base model's includes the paragraph break, ``answer_request``)
    raw_prediction: str | None = None  # the backend's text as returned, before the probe strips it
    prediction: str | None = None  # what is scored and judged
    recall: float | None = None  # normalised string metric
    recall_compat: float | None = None  # the official notebook's behaviour
    # what each gold word of ``recall`` matched (JSON list of text.Evidence: rule, gold word, the
    # predicted form) and why the language layer was not sure of the verdict (None: it was)
    evidence: str | None = None
    text_flag: str | None = None
    judge_answers: list[str] | None = None  # raw, one per judge
    judge_votes: list[bool | None] | None = None
    judge_correct: bool | None = None  # strict majority (a tie: not correct); None: no judge, or undecided
    # why the judges' majority is undecided (answers neither yes nor no, with_judgements): the judge's
    # failure, recorded on the row; the row's answer and string verdict stand, the judge metric leaves it out
    judge_error: str | None = None
    # the judges' majority verdicts on this (question, target language)'s known-wrong controls
    # (``judge_controls``): a judge that accepts them is not judging (analysis.JudgeCheck)
    control_names: list[str] | None = None
    control_accepted: list[bool] | None = None
    error: str | None = None


def prompt_text(row: EclekticRow, setting: str) -> str:
    if setting not in PROMPTS:
        raise ValueError(f"unknown eclektic setting {setting!r}: {', '.join(SETTINGS)}")
    return PROMPTS[setting].format(
        question=row.question, in_lang=language_name(row.source_language),
        original_title=row.source_title, context=row.source_context,
    )


# A base model's answer is the first line it writes after the prompt (see ``answer_request``).
BASE_ANSWER_BREAK = "\n\n"
BASE_ANSWER_STOP = ("\n",)


def as_request(text: str, chat: bool, max_tokens: int) -> Generate:
    """The text as it is: one user message for a chat model, a plain prompt otherwise."""
    if chat:
        return Generate(messages=(ChatMessage(role="user", content=text),), max_tokens=max_tokens)
    return Generate(prompt=text, max_tokens=max_tokens)


def answer_request(text: str, chat: bool, max_tokens: int) -> Generate:
    """The model under test's request for a Fig. 10 prompt.

    A chat model ends its turn itself (end-of-turn token), so it gets no stop string. A base model
    has no turn to end: given a question it writes an answer line and then goes on with more
    questions, lists or repetitions until ``max_tokens``, and every gold word that happens to occur
    in that ramble counts for word recall (§3.1), so recall rises with ``max_tokens`` rather than
    with knowledge. Its answer is therefore the first line it writes, the common rule for base
    models in open QA (lm-eval's nq_open and triviaqa stop at "\n"). A line break is the stop
    string, and the prompt ends with a paragraph break so the answer starts on a fresh line: with
    the bare question, Gemma 3 270M's greedy first token is that same paragraph break on 27 of the
    30 demo rows, so the stop would otherwise end most answers before they began; with the break in
    the prompt, the answer equals the first line of the unstopped generation on 26 of those 27 (the
    27th reaches ``max_tokens`` without a line break).
    """
    if chat:
        return as_request(text, chat, max_tokens)
    return Generate(prompt=text + BASE_ANSWER_BREAK, max_tokens=max_tokens, stop=BASE_ANSWER_STOP)


class EclekticProbe:
    name = "eclektic"
    request_kinds = frozenset({"generate"})

    def __init__(self, setting: str = "closed-book", chat: bool = False, max_tokens: int = 64):
        if setting not in PROMPTS:
            raise ValueError(f"unknown eclektic setting {setting!r}: {', '.join(SETTINGS)}")
        self.setting, self.chat, self.max_tokens = setting, chat, max_tokens

    def request(self, row: EclekticRow) -> Generate:
        return answer_request(prompt_text(row, self.setting), self.chat, self.max_tokens)

    def requests(self, row: EclekticRow) -> list[Request]:
        return [self.request(row)]

    def _base(self, row: EclekticRow, **values) -> EclekticRecord:
        request = self.request(row)
        return EclekticRecord(
            q_id=row.q_id, source_language=row.source_language, target_language=row.target_language,
            is_source=row.is_source, setting=self.setting,
            script=language_script(row.target_language) or detect_script(row.question),
            question=row.question, answer=row.answer,
            prompt=self._shown_prompt(request), **values,
        )

    @staticmethod
    def _shown_prompt(request: Generate) -> str:
        """The prompt as the model got it: the text, or the text of the one chat message."""
        if request.prompt is not None:
            return request.prompt
        if not request.messages:
            raise ValueError("an ECLeKTiC request has a prompt or chat messages")
        return request.messages[0].content

    def score(self, row: EclekticRow, responses: list[Response]) -> EclekticRecord:
        """``raw_prediction`` is the generated text exactly as the backend returned it: for a base
        model already ended at the first line break, because the stop is part of the request (the
        model stopped generating there, so no longer text exists to keep); ``prediction`` is what
        the probe makes of it (surrounding whitespace stripped) and what is scored and judged."""
        (response,) = responses
        assert isinstance(response, GenerateResult)
        prediction = response.text.strip()
        verdict = recall_verdict(row.answer, prediction, row.target_language)
        return self._base(
            row, raw_prediction=response.text, prediction=prediction, recall=verdict.value,
            recall_compat=word_recall(row.answer, prediction, row.target_language, "compat"),
            evidence=evidence_json(verdict.evidence), text_flag=verdict.flag,
        )

    def failed(self, row: EclekticRow, error: str) -> EclekticRecord:
        return self._base(row, error=error)


def judge_request(row: EclekticRow, prediction: str, chat: bool, max_tokens: int = 8) -> Generate:
    """Fig. 9: the question and the translated context (§3), both in the target language."""
    if not row.target_context.strip():
        raise ValueError(f"{row.source}: no {row.target_language!r} context for question {row.q_id!r}; "
                         "the judge needs the translated context (load with need_target_context=True)")
    text = JUDGE_PROMPT.format(target_lang=language_name(row.target_language), text=row.target_context,
                               question=row.question, answer=prediction)
    return as_request(text, chat, max_tokens)


def with_judgements(record: EclekticRecord, answers: list[str]) -> EclekticRecord:
    """Attach the judges' raw answers, their parsed votes (read in the target language and
    English, metrics.parse_judge) and the strict-majority verdict. An answer that says neither
    yes nor no is no vote: when the parsed votes alone settle the majority (2 of 3 say yes, or 2
    of 3 say no) the verdict stands; otherwise the verdict is undecided (``judge_correct`` None)
    and ``judge_error`` names the unread answers: a failure of the judge, never a wrong answer,
    and not the row's own error (its answer and string verdict are kept)."""
    votes = [parse_judge(a, record.target_language) for a in answers]
    yes, no = sum(v is True for v in votes), sum(v is False for v in votes)
    update: dict = {"judge_answers": answers, "judge_votes": votes}
    if yes > len(votes) / 2 or no >= len(votes) / 2:
        update["judge_correct"] = yes > len(votes) / 2
    else:
        unread = "; ".join(repr(a) for a, v in zip(answers, votes) if v is None)
        update["judge_error"] = (f"judge answer neither yes nor no in {record.target_language!r} or English "
                                 f"({unread}): the majority is undecided")
    return record.model_copy(update=update)


# Known-wrong answers every judge must refuse (a weak judge is flagged). Built from the
# data alone, the same for every model under test, judged with the same Fig. 9 prompt.
CONTROL_QUESTION = "question repeated"  # the question itself given as the answer
CONTROL_EMPTY = "empty answer"
CONTROL_OTHER = "another question's answer"  # the gold answer of another question, same language


def judge_controls(row: EclekticRow, same_language: list[EclekticRow]) -> list[tuple[str, str]]:
    """(name, answer) of the known-wrong answers for one (question, target language): the
    question repeated, an empty answer, and the gold answer of the next question (by q_id, in
    the same target language) that shares no word with this row's gold answer (none: left out)."""
    controls = [(CONTROL_QUESTION, row.question), (CONTROL_EMPTY, "")]
    others = sorted((r for r in same_language if r.q_id != row.q_id), key=lambda r: r.q_id)
    after = [r for r in others if r.q_id > row.q_id] + [r for r in others if r.q_id < row.q_id]
    for other in after:
        if word_recall(row.answer, other.answer, row.target_language) == 0.0:
            controls.append((CONTROL_OTHER, other.answer))
            break
    return controls


def with_controls(record: EclekticRecord, names: list[str], accepted: list[bool]) -> EclekticRecord:
    return record.model_copy(update={"control_names": names, "control_accepted": accepted})
