"""Verbatim memorization probe (Shared Path §3, §6.5, Table 4): builds requests, scores responses.

Decoder-only models (§3.1, ``SuffixProbe``): each sample is split in the model's own tokens into
a prefix p of n tokens and the suffix s of the next m tokens (defaults: m = 15, n in 35/85/135 as
§6.5). A sample shorter than n + m tokens is skipped and counted, never padded.

Where the window sits (``offset``):
- ``first`` (default): at the sample's first token. The windows of one sample nest: the 35-token
  prefix and its suffix are the first 50 tokens of the 100- and 150-token windows, so every prompt
  length's PM is read off the one forward over the longest window (the backend's prefix sharing)
  and nothing depends on which other lengths were asked for. Longer prompts then predict a later
  stretch of text, as in the authors' code.
- ``random``: the authors' code (mgpt.py / logprob_gpt.py): for each prompt length separately, a
  seeded start in [0, len - (n + m)]; the suffixes of different lengths differ, nothing nests.
In both, p is the n tokens right before s; p is fed without its text's leading special tokens
but with the model's own (BOS for Gemma), as any text is.

EM: greedy decoding of m new tokens (max_new_tokens = m; ``--repetition-penalty 1.2`` reproduces
the authors' generation) equals s token for token. Decoding is plain greedy: an end-of-sequence
token before m tokens ends the output, which is then shorter than s and not a match (forcing m
tokens by suppressing EOS would change the greedy path). RM: BLEU and ROUGE-L of the output
against s (metrics/memorization.py). PM: log Pr(s | p) from one LogLikelihood request, with per-token
log-probs, and the calibrated scores from the same numbers. An optional reference model scores
the same (p, s) as texts (its own tokenizer) for a likelihood ratio.

Control (beyond the paper): s's text with its words shuffled (seeded, by the script's units:
data/perturbations.shuffle_units), re-tokenized, scored from the same prefix: PM and calibrated
scores of text the model cannot have memorized, and EM/RM of the same greedy output against it.

Encoder-decoder models (§3.2, ``SpanProbe``): the n + m token window is span-corrupted T5-style
(probes/span_corruption.py): by default m tokens are masked (Table 4 fixes 15 predicted tokens for
every model, as the authors' mt5.py does), or ``noise_density`` of the window (Raffel et al.: 0.15);
mean span length 3. EM: the greedy output reproduces the target (sentinels + spans) exactly; PM:
the summed log-probability of exactly the masked tokens (not the sentinels) given the corrupted
input, teacher-forced on the whole target. No RM (as the paper). The control permutes the masked
tokens among the span positions (seeded), keeping the sentinels; its zlib ratio uses the real
spans' text (the same tokens in another order).

``--preset authors`` (config.PRESETS) switches the span probe to the authors' mt5.py /
logprob_mt5.py: their span placement (span_corruption.authors_spans), the encoder input without
``</s>``, their EM (spans both sequences have; at most 19 new tokens, transformers' default
``max_length=20`` with the decoder start token, as their ``generate`` call sets no length) and PM
without whitespace-only pieces; and both probes to a random window offset and repetition penalty 1.2.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from babelprobe.families.memorization.data import Sample
from babelprobe.data.perturbations import shuffle_units
from babelprobe.text.scripts import detect_script
from babelprobe.text.segment import segmentation_flag
from babelprobe.families.memorization.metrics import (
    bleu,
    exact_match,
    exact_ratio,
    mean_logprob,
    min_k_plus_plus,
    min_k_prob,
    rm_units,
    rouge_l,
    zlib_ratio,
)
from babelprobe.models.base import (
    Generate,
    GenerateResult,
    LogLikelihood,
    LogLikelihoodResult,
    Request,
    Tokenize,
    TokenizeResult,
)
from babelprobe.families.memorization.span_corruption import (
    Corruption,
    authors_exact_match,
    authors_span_count,
    authors_spans,
    corrupt,
    noise_count,
    noise_spans,
    span_exact_match,
    whitespace_piece,
)

# transformers' default GenerationConfig.max_length (20) less the decoder start token: the longest
# output of the authors' mt5.py, whose generate call sets no length
AUTHORS_SPAN_NEW_TOKENS = 19
# mt5.py reads sentinels up to <extra_id_15> as span ends (extract_spans_from_tokens_precisely)
AUTHORS_SENTINELS = 16

Offset = Literal["first", "random"]
Mode = Literal["suffix", "span"]  # suffix completion (decoder-only) or T5 span corruption
Status = Literal["scored", "too_short", "error"]


class MemorizationRecord(BaseModel):
    """One row of items.parquet: one sample at one prompt length."""

    sample_id: str
    language: str
    script: str
    source: str  # sample file:row
    origin: str  # where the text came from (the sample file's `source` column)
    mode: Mode
    prefix_tokens: int
    suffix_tokens: int
    sample_tokens: int
    status: Status
    exact_ratio: float
    window_start: int | None = None
    prefix_text: str | None = None  # span mode: the whole (uncorrupted) window
    suffix_text: str | None = None  # span mode: the masked spans' text, joined by " | "
    generated_text: str | None = None
    suffix_ids: list[int] | None = None  # span mode: the target (sentinels + spans)
    generated_ids: list[int] | None = None
    spans: list[list[int]] | None = None  # span mode: masked [start, end) in window positions
    exact_match: bool | None = None
    ended_early: bool | None = None  # the output stopped (EOS) before the suffix's length
    bleu: float | None = None
    rouge_l: float | None = None
    pm: float | None = None
    token_logprobs: list[float] | None = None
    pm_mean: float | None = None
    min_k: float | None = None
    min_k_pp: float | None = None  # Min-K%++ (--min-k-plus)
    zlib_ratio: float | None = None
    pm_greedy: bool | None = None  # every scored token is the model's argmax (greedy would reproduce it)
    reference_pm: float | None = None  # filled by the --reference stage (families/memorization.py)
    reference_log_ratio: float | None = None
    control_text: str | None = None
    control_exact_match: bool | None = None
    control_bleu: float | None = None
    control_rouge_l: float | None = None
    control_pm: float | None = None
    control_pm_mean: float | None = None
    control_min_k: float | None = None
    control_min_k_pp: float | None = None
    control_zlib_ratio: float | None = None
    error: str | None = None
    # the language layer could not segment the text with a dictionary (no table row for the
    # language, no segmenter for a script written without spaces): the reason, counted per
    # language in the report (a script without a segmenter is cut into characters for RM on words
    # and the control's shuffle)
    text_flag: str | None = None


def _seed(*parts: object) -> int:
    """A stable integer seed from parts (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "little")


def window_start(n_tokens: int, prefix_tokens: int, suffix_tokens: int, offset: Offset, seed: int,
                 key: str) -> int | None:
    """Start of the (n + m)-token window, or None when the sample is too short for it."""
    span = prefix_tokens + suffix_tokens
    if n_tokens < span:
        return None
    if offset == "first":
        return 0
    return random.Random(_seed(seed, key, prefix_tokens)).randint(0, n_tokens - span)


@dataclass(frozen=True)
class Window:
    """One sample cut at one prompt length: [start, start + n) prompt, then m scored tokens."""

    sample: Sample
    prefix_tokens: int
    suffix_tokens: int
    sample_tokens: int
    start: int
    ids: tuple[int, ...]  # the n + m window
    offsets: tuple[tuple[int, int], ...]
    corruption: Corruption | None = None
    control_target: tuple[int, ...] | None = None  # span mode

    @property
    def prefix_ids(self) -> tuple[int, ...]:
        return self.ids[: self.prefix_tokens]

    @property
    def suffix_ids(self) -> tuple[int, ...]:
        return self.ids[self.prefix_tokens :]

    def text_between(self, start: int, end: int) -> str:
        """The sample's text from window token ``start`` to just before token ``end``."""
        text = self.sample.text
        begin = self.offsets[start][0]
        stop = self.offsets[end][0] if end < len(self.offsets) else self.offsets[end - 1][1]
        return text[begin:stop]

    @property
    def prefix_text(self) -> str:
        return self.text_between(0, self.prefix_tokens)

    @property
    def suffix_text(self) -> str:
        return self.text_between(self.prefix_tokens, len(self.ids))


class _BaseProbe:
    name = "memorization"
    mode: Mode

    def __init__(self, prefix_tokens: list[int], suffix_tokens: int = 15, offset: Offset = "first",
                 repetition_penalty: float | None = None, min_k: float = 0.2, seed: int = 0,
                 vocab_stats: bool = False):
        if not prefix_tokens or min(prefix_tokens) < 1 or suffix_tokens < 1:
            raise ValueError("prefix and suffix lengths must be positive")
        self.prefix_lengths = sorted(set(prefix_tokens))
        self.suffix_tokens, self.offset = suffix_tokens, offset
        self.repetition_penalty, self.k, self.seed = repetition_penalty, min_k, seed
        # Min-K%++: the likelihood requests also ask for vocabulary moments (their keys change only then)
        self.vocab_stats = vocab_stats

    @staticmethod
    def tokenize_request(sample: Sample) -> Tokenize:
        return Tokenize(text=sample.text)

    def _record(self, sample: Sample, n: int, sample_tokens: int, status: Status, **values) -> MemorizationRecord:
        return MemorizationRecord(
            sample_id=sample.sample_id, language=sample.language, script=detect_script(sample.text),
            source=sample.source, origin=sample.origin, mode=self.mode, prefix_tokens=n, suffix_tokens=self.suffix_tokens,
            sample_tokens=sample_tokens, status=status, exact_ratio=exact_ratio(n, self.suffix_tokens),
            text_flag=segmentation_flag(sample.text, sample.language), **values,
        )

    def cut(self, sample: Sample, tokens: TokenizeResult) -> list[Window | MemorizationRecord]:
        """One window per prompt length, or a ``too_short`` record where the sample cannot fit."""
        out: list[Window | MemorizationRecord] = []
        total = len(tokens.token_ids)
        for n in self.prefix_lengths:
            start = window_start(total, n, self.suffix_tokens, self.offset, self.seed, sample.sample_id)
            if start is None:
                out.append(self._record(sample, n, total, "too_short"))
                continue
            end = start + n + self.suffix_tokens
            out.append(self._window(Window(sample, n, self.suffix_tokens, total, start,
                                           tuple(tokens.token_ids[start:end]), tuple((a, b) for a, b in tokens.offsets[start:end]))))
        return out

    def _window(self, window: Window) -> Window:
        return window

    def unreadable(self, sample: Sample, error: str) -> list[MemorizationRecord]:
        """Error records (every prompt length) for a sample that could not be tokenized."""
        return [self._record(sample, n, 0, "error", error=error) for n in self.prefix_lengths]

    def failed(self, window: Window, error: str) -> MemorizationRecord:
        return self._record(window.sample, window.prefix_tokens, window.sample_tokens, "error",
                            window_start=window.start, error=error)

    def _likelihood_scores(self, result: LogLikelihoodResult, positions: list[int] | None, text: str,
                           prefix: str = "") -> dict:
        lps = result.token_logprobs if positions is None else [result.token_logprobs[p] for p in positions]
        scores = {"pm": float(sum(lps)), "pm_mean": mean_logprob(lps), "min_k": min_k_prob(lps, self.k),
                  "zlib_ratio": zlib_ratio(lps, text)}
        if result.token_means is not None and result.token_stds is not None:
            pick = (lambda xs: xs) if positions is None else (lambda xs: [xs[p] for p in positions])
            scores["min_k_pp"] = min_k_plus_plus(lps, pick(result.token_means), pick(result.token_stds), self.k)
        return {f"{prefix}{k}": v for k, v in scores.items()}


class SuffixProbe(_BaseProbe):
    """Decoder-only memorization: prefix → suffix (§3.1)."""

    mode = "suffix"

    def __init__(self, prefix_tokens: list[int], suffix_tokens: int = 15, offset: Offset = "first",
                 repetition_penalty: float | None = None, rm: str = "tokens", min_k: float = 0.2, seed: int = 0,
                 vocab_stats: bool = False):
        super().__init__(prefix_tokens, suffix_tokens, offset, repetition_penalty, min_k, seed, vocab_stats)
        if rm not in ("tokens", "words"):
            raise ValueError(f"unknown RM units {rm!r}: tokens, words")
        self.rm = rm

    @classmethod
    def from_config(cls, config) -> "SuffixProbe":
        """From a MemorizationConfig (its preset already resolved into the fields)."""
        return cls(config.prefix_tokens, config.suffix_tokens, config.offset, config.repetition_penalty,
                   config.rm_units, config.min_k, config.seed, config.min_k_plus)

    def control_text(self, window: Window) -> str:
        key = f"{window.sample.sample_id}/{window.start}/{window.prefix_tokens}"
        return shuffle_units(window.suffix_text, self.seed, key, window.sample.language)

    def control_request(self, window: Window) -> Tokenize:
        return Tokenize(text=self.control_text(window))

    def requests(self, window: Window, control_ids: list[int]) -> list[Request]:
        """Greedy generation, the suffix's likelihood, the control's likelihood."""
        return [
            Generate(prompt_ids=window.prefix_ids, max_tokens=self.suffix_tokens,
                     repetition_penalty=self.repetition_penalty),
            LogLikelihood(context_ids=window.prefix_ids, continuation_ids=window.suffix_ids,
                          vocab_stats=self.vocab_stats),
            LogLikelihood(context_ids=window.prefix_ids, continuation_ids=tuple(control_ids),
                          vocab_stats=self.vocab_stats),
        ]

    @staticmethod
    def reference_request(window: Window) -> LogLikelihood:
        """The same (p, s) as texts, for a reference model with its own tokenizer."""
        return LogLikelihood(context=window.prefix_text, continuation=window.suffix_text)

    def score(self, window: Window, control_ids: list[int], responses: list) -> MemorizationRecord:
        generation, likelihood, control = responses
        assert isinstance(generation, GenerateResult) and generation.token_ids is not None
        generated = list(generation.token_ids)
        suffix_text, control_text = window.suffix_text, self.control_text(window)
        hyp = rm_units(generation.text, generated, self.rm)
        ref = rm_units(suffix_text, window.suffix_ids, self.rm)
        ctl = rm_units(control_text, control_ids, self.rm)
        values = dict(
            window_start=window.start, prefix_text=window.prefix_text, suffix_text=suffix_text,
            generated_text=generation.text, suffix_ids=list(window.suffix_ids), generated_ids=generated,
            exact_match=exact_match(generated, window.suffix_ids), ended_early=len(generated) < self.suffix_tokens,
            bleu=bleu(hyp, ref), rouge_l=rouge_l(hyp, ref), token_logprobs=list(likelihood.token_logprobs),
            pm_greedy=likelihood.greedy, control_text=control_text,
            control_exact_match=exact_match(generated, control_ids), control_bleu=bleu(hyp, ctl),
            control_rouge_l=rouge_l(hyp, ctl),
            **self._likelihood_scores(likelihood, None, suffix_text),
            **self._likelihood_scores(control, None, control_text, "control_"),
        )
        return self._record(window.sample, window.prefix_tokens, window.sample_tokens, "scored", **values)


class SpanProbe(_BaseProbe):
    """Encoder-decoder memorization: T5 span corruption (§3.2)."""

    mode = "span"

    def __init__(self, prefix_tokens: list[int], suffix_tokens: int = 15, offset: Offset = "first",
                 noise_density: float | None = None, mean_span_length: float = 3.0,
                 repetition_penalty: float | None = None, min_k: float = 0.2, seed: int = 0,
                 layout: Literal["t5", "authors"] = "t5", encoder_eos: bool = True,
                 em: Literal["strict", "authors"] = "strict", pm_whitespace: Literal["keep", "drop"] = "keep"):
        super().__init__(prefix_tokens, suffix_tokens, offset, repetition_penalty, min_k, seed)
        if noise_density is not None and not 0 < noise_density < 1:
            raise ValueError(f"noise density must be in (0, 1), got {noise_density}")
        if mean_span_length < 1:
            raise ValueError(f"mean span length must be at least 1, got {mean_span_length}")
        self.noise_density, self.mean_span_length = noise_density, mean_span_length
        self.layout, self.encoder_eos, self.em, self.pm_whitespace = layout, encoder_eos, em, pm_whitespace
        self.sentinels: tuple[int, ...] = ()

    @classmethod
    def from_config(cls, config) -> "SpanProbe":
        """From a MemorizationConfig (its preset already resolved into the fields)."""
        return cls(config.prefix_tokens, config.suffix_tokens, config.offset, config.noise_density,
                   config.mean_span_length, config.repetition_penalty, config.min_k, config.seed,
                   config.span_layout, config.encoder_eos, config.span_em, config.pm_whitespace)

    def span_count(self, masked: int) -> int:
        if self.layout == "authors":
            return authors_span_count(masked, self.mean_span_length)
        return max(1, round(masked / self.mean_span_length))

    def spans_for(self, length: int, seed: int) -> list[tuple[int, int]]:
        """The masked spans of a ``length``-token window, seeded: T5's layout or the authors'."""
        masked = self.masked_count(length)
        if self.layout == "authors":
            return authors_spans(length, masked, self.mean_span_length, random.Random(seed))
        import numpy as np  # here, not at import: `memorization --help` builds this family

        return noise_spans(length, masked, self.mean_span_length, np.random.default_rng(seed))

    def masked_count(self, window_length: int) -> int:
        if self.noise_density is None:
            return self.suffix_tokens
        return noise_count(window_length, self.noise_density)

    def sentinel_requests(self) -> list[Tokenize]:
        """``<extra_id_k>`` for as many spans as the longest window can have (+1 terminator)."""
        most = max(self.span_count(self.masked_count(n + self.suffix_tokens)) for n in self.prefix_lengths)
        if self.em == "authors":
            most = max(most, AUTHORS_SENTINELS - 1)
        return [Tokenize(text=f"<extra_id_{k}>") for k in range(most + 1)]

    def set_sentinels(self, results: list[TokenizeResult]) -> None:
        ids = []
        for k, result in enumerate(results):
            if len(result.token_ids) != 1:
                raise ValueError(f"the tokenizer has no single sentinel token <extra_id_{k}> (not a T5-style model?)")
            ids.append(result.token_ids[0])
        self.sentinels = tuple(ids)

    def _window(self, window: Window) -> Window:
        seed = _seed(self.seed, window.sample.sample_id, window.prefix_tokens, window.start)
        spans = self.spans_for(len(window.ids), seed)
        import numpy as np

        rng = np.random.default_rng(seed)  # the control's permutation
        corruption = corrupt(window.ids, spans, self.sentinels)
        masked = [corruption.target_ids[p] for p in corruption.masked_positions]
        permuted = [masked[i] for i in rng.permutation(len(masked))]
        control = list(corruption.target_ids)
        for position, token in zip(corruption.masked_positions, permuted):
            control[position] = token
        return Window(window.sample, window.prefix_tokens, window.suffix_tokens, window.sample_tokens, window.start,
                      window.ids, window.offsets, corruption, tuple(control))

    @staticmethod
    def _corrupted(window: Window) -> tuple[Corruption, tuple[int, ...]]:
        """The window's span corruption and its control's target, which ``_window`` set."""
        if window.corruption is None or window.control_target is None:
            raise ValueError("a window of SpanProbe has no span corruption: it was not cut by SpanProbe.cut")
        return window.corruption, window.control_target

    def span_text(self, window: Window, spans=None) -> str:
        return " | ".join(window.text_between(s, e) for s, e in (spans or self._corrupted(window)[0].spans))

    def requests(self, window: Window) -> list[Request]:
        c, control_target = self._corrupted(window)
        eos = None if self.encoder_eos else False  # None keeps the request keys of earlier runs
        length = AUTHORS_SPAN_NEW_TOKENS if self.em == "authors" else len(c.target_ids) + 1
        return [
            Generate(prompt_ids=c.input_ids, max_tokens=length, repetition_penalty=self.repetition_penalty,
                     encoder_eos=eos),
            LogLikelihood(context_ids=c.input_ids, continuation_ids=c.target_ids, encoder_eos=eos),
            LogLikelihood(context_ids=c.input_ids, continuation_ids=control_target, encoder_eos=eos),
        ]

    def pm_positions(self, window: Window, result: LogLikelihoodResult) -> list[int]:
        """Target positions PM sums: the masked tokens (not the sentinels), less whitespace-only
        pieces with ``pm_whitespace="drop"`` (logprob_mt5.py), read from the scored tokens."""
        positions = list(self._corrupted(window)[0].masked_positions)
        if self.pm_whitespace == "drop":
            positions = [p for p in positions if not whitespace_piece(result.tokens[p])]
        return positions

    def exact(self, generated: list[int], target: tuple[int, ...], next_sentinel: int) -> bool:
        if self.em == "authors":
            return authors_exact_match(generated, target, self.sentinels)  # outputs are cut at </s>
        return span_exact_match(generated, target, next_sentinel)

    def score(self, window: Window, responses: list) -> MemorizationRecord:
        generation, likelihood, control = responses
        assert isinstance(generation, GenerateResult) and generation.token_ids is not None
        c, control_target = self._corrupted(window)
        next_sentinel = self.sentinels[len(c.spans)]
        generated = list(generation.token_ids)
        positions = self.pm_positions(window, likelihood)
        text = self.span_text(window)
        values = dict(
            window_start=window.start, prefix_text=window.text_between(0, len(window.ids)), suffix_text=text,
            generated_text=generation.text, suffix_ids=list(c.target_ids), generated_ids=generated,
            spans=[list(s) for s in c.spans], exact_match=self.exact(generated, c.target_ids, next_sentinel),
            ended_early=len(generated) < len(c.target_ids),
            token_logprobs=[likelihood.token_logprobs[p] for p in positions],
            pm_greedy=likelihood.greedy,
            control_exact_match=self.exact(generated, control_target, next_sentinel),
            **self._likelihood_scores(likelihood, positions, text),
            **self._likelihood_scores(control, self.pm_positions(window, control), text, "control_"),
        )
        return self._record(window.sample, window.prefix_tokens, window.sample_tokens, "scored", **values)
