"""The transformers backend: HF directories and hub ids, GGUF files (dequantised), CPU and CUDA.

Speed rules: requests arrive length-sorted from the runner's collator, requests
that share a context in the same batch; continuations of one context hang below one copy of it in
a tree row and a request whose tokens are a prefix of another's is read off that longer row
(``pack_shared_contexts``); where the attention takes a custom mask the rows are packed side by
side with a 4D mask and depth positions (``pack_rows``), otherwise left-padded with explicit
position ids; the LM head runs once per distinct scored position, a vocabulary slice at a time with a running
log-sum-exp, and log-probabilities are ``logit - logsumexp`` there, never a full-vocabulary
log_softmax over every position.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Sequence

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import AutoModelForCausalLM, GenerationConfig, PreTrainedModel
from transformers.generation.stopping_criteria import StopStringCriteria, StoppingCriteriaList

from babelprobe.models.base import (
    Fingerprint,
    Generate,
    GenerateResult,
    HiddenStates,
    HiddenStatesResult,
    LogLikelihood,
    LogLikelihoodResult,
    NextToken,
    NextTokenResult,
    Tokenize,
    TokenizeResult,
)
from babelprobe.models.packing import TreeRow, pack_rows, pack_shared_contexts, share_prefixes
from babelprobe.models.prefix_generation import greedy_generate, left_pad, prefix_groups
from babelprobe.models.self_checks import SelfChecks, checks_key, record_checks, recorded_checks
from babelprobe.models.tokenization import BoundaryTokenizer, Split
from babelprobe.models.tokenizer_load import load_tokenizer
from babelprobe.models.transformers_helpers import (
    ForwardStats, HeadScores, cut_generated, head_normalisers, resolve_device, resolve_dtype, tokenize_text,
    vocab_chunked_head, vocab_moments,
)

# Goes into every fingerprint, so cached answers are recomputed when this backend's code changes
# what it answers (boundary rule, head gathering, generation settings). Bump it with any such
# change; tests/test_fingerprint.py fails until the scoring code's pinned hash is updated too.
BACKEND_REVISION = 3


@dataclass(frozen=True)
class _Query:
    """Score ``token_ids`` after token ``index`` of row ``row`` (the logits predicting the next token)."""

    row: int
    index: int
    token_ids: tuple[int, ...]
    vocab_stats: bool = False  # also the mean and std of log p over the vocabulary there


class TransformersBackend:
    """Answers the four request kinds with a transformers causal LM."""

    # tokens per packed forward row: attention costs width^2 per row, padding costs rows x width
    pack_width = 128
    # longest sequence laid out in tree rows: their mask costs width^2 per row, and long plain
    # sequences, sorted by length, pad little anyway
    tree_max_length = 512
    # scoring batches grow to about this many characters (request_runner.collate, ~2k English
    # tokens for Gemma): a forward of ~256 tokens runs its matmuls at half the rate of one of 2k.
    # BABELPROBE_SCORING_BATCH_CHARS=0 keeps batches of --batch-size requests (tests/test_resume.py)
    scoring_batch_chars: int | None = int(os.environ.get("BABELPROBE_SCORING_BATCH_CHARS", "12288")) or None
    # scored positions per LM-head pass: a Gemma row of logits is 1 MB in float32
    head_chunk = 128
    # vocabulary rows per slice of the head's matmul (vocab_chunked_head), and the positions that
    # share one pass over the weight: in CKA's full mode 32k x 512 took 11% less CPU than the plain
    # path, 16k x 128 12% more (bench/head_ab.py, 2 threads, 2026-11-26). None: the whole
    # (positions x vocabulary) logits, head_chunk positions at a time, then head_normalisers (the
    # plain path the tests pin it to)
    head_vocab_chunk: int | None = 32768
    head_vocab_rows = 512
    # greedy requests through prefix_generation.greedy_generate rather than transformers' generate
    # (False: generate alone, the reference the tests pin the loop against)
    greedy_loop = True

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer,
        fingerprint: Fingerprint,
        max_length: int | None = None,
        checks_key: str | None = None,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.boundary = BoundaryTokenizer(tokenizer)
        self.fingerprint = fingerprint
        self.device = next(model.parameters()).device
        configured = getattr(model.config, "max_position_embeddings", None) or 2048
        self.max_length = max_length or configured
        self.boundary.max_tokens = self.max_length  # an overlong text is refused before it is tokenized in full
        self.pad_id = tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        self.stats = ForwardStats()
        self._eos = self._eos_ids()
        # stop strings -> transformers' criterion; building one reads the whole vocabulary (~2 s
        # for Gemma's 262k tokens), which ``stop_strings=`` would redo on every generate call
        self._stop_criteria: dict[tuple[str, ...], StopStringCriteria] = {}
        # Only the settings a request names are applied when generating: the checkpoint's own
        # generation_config.json (repetition penalty, top-k, min length...) would change "greedy"
        # answers and is replaced by one that keeps its special token ids only.
        model.generation_config = GenerationConfig(
            bos_token_id=model.generation_config.bos_token_id, eos_token_id=self._eos, pad_token_id=self.pad_id,
        )
        self._decoder, self._head, self._softcap = None, None, None
        # the self-checks' outcome, recorded per model and code (self_checks.py): run once
        known = recorded_checks(checks_key) if checks_key else None
        if known is None:
            self.gathered_head = self._use_gathered_head()
            self.tree_rows = self._tree_rows_agree()
            if checks_key:
                record_checks(checks_key, SelfChecks(gathered_head=self.gathered_head, tree_rows=self.tree_rows))
        else:
            self.gathered_head = known.gathered_head and self._bind_head()
            self.tree_rows = known.tree_rows

    def _bind_head(self) -> bool:
        """Take the decoder and the LM head apart (plus final soft-capping, read from the text
        config: multimodal wrappers keep it there); False where the model has no such parts."""
        decoder = getattr(self.model, "model", None)
        head = self.model.get_output_embeddings()
        if decoder is None or head is None:
            return False
        self._decoder, self._head = decoder, head
        self._softcap = getattr(self.model.config.get_text_config(), "final_logit_softcapping", None)
        return True

    def _use_gathered_head(self) -> bool:
        """Gather hidden states before the LM head (``_bind_head``) when that reproduces
        ``model(...).logits`` on a short input; any other head scaling, or a decoder that cannot be
        called alone, falls back to the model's own forward with ``logits_to_keep``."""
        if not self._bind_head():
            return False
        rows = [self.boundary.encode_text(t) for t in ("The capital of France is Paris.", "Kigali, Rwanda")]
        ids, mask, positions = self._left_pad(rows)
        real = mask.nonzero(as_tuple=True)
        try:
            with torch.inference_mode():
                fast = self._logits_at(ids, mask, positions, *real).float()
                full = self.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[real].float()
            same = fast.shape == full.shape and bool((fast - full).abs().max() <= self._head_tolerance(full))
        except Exception:  # a decoder or head that cannot be used on its own
            same = False
        if not same:
            self._decoder, self._head, self._softcap = None, None, None
        return same

    def _tree_rows_agree(self) -> bool:
        """Whether packed rows with a 4D mask (``_tree_batch``) reproduce plain left-padded rows:
        only where every layer is attention that honours the mask (sdpa, eager), not in state-space
        or hybrid models, whose recurrent layers read the packed neighbours. Checked once at load
        on a short input."""
        if getattr(self.model.config, "_attn_implementation", None) not in ("sdpa", "eager"):
            return False
        # two continuations of one context (a tree row) and another context beside it (packed row)
        requests = [LogLikelihood(context=c, continuation=o) for c, o in (
            ("The capital of France is", " Paris."), ("The capital of France is", " Lyon"), ("Kigali lies in", " Rwanda"))]
        try:
            self.tree_rows = True
            packed = self.loglikelihood(requests)
            self.tree_rows = False
            plain = self.loglikelihood(requests)
        except Exception:  # a model that cannot take a custom mask at all
            return False
        finally:
            self.stats.reset()
        tolerance = 1e-3 if self.model.dtype == torch.float32 else 5e-2
        return all(abs(a - b) <= tolerance for p, q in zip(packed, plain)
                   for a, b in zip(p.token_logprobs, q.token_logprobs))

    def _head_tolerance(self, logits: torch.Tensor) -> float:
        """Rounding of the head's matmul run on fewer rows: 1e-5 of the largest logit in float32
        (at least 1e-4), 1% in half precision. A real head scaling changes logits by a factor."""
        largest = float(logits.abs().max())
        if self.model.dtype == torch.float32:
            return max(1e-4, 1e-5 * largest)
        return 1e-2 * max(1.0, largest)

    @classmethod
    def load(
        cls,
        path: str,
        fingerprint_fn,
        *,
        device: str = "auto",
        dtype: str = "auto",
        max_length: int | None = None,
        revision: str | None = None,
    ) -> "TransformersBackend":
        device = resolve_device(device)
        torch_dtype = resolve_dtype(dtype, device)
        kwargs = {"revision": revision} if revision else {}
        tokenizer = load_tokenizer(path, revision)  # a local directory's tokenizer.json read once
        # transformers types .to() through a wrapper that loses its self argument (a stub gap)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, **kwargs).to(device)  # type: ignore[arg-type]
        fingerprint = fingerprint_fn(device, str(torch_dtype).removeprefix("torch."), BACKEND_REVISION)
        device_name = torch.cuda.get_device_name(model.device) if model.device.type == "cuda" else model.device.type
        key = checks_key(fingerprint, type(model).__name__, getattr(model.config, "_attn_implementation", None),
                         device_name)
        return cls(model, tokenizer, fingerprint, max_length, checks_key=key)

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    @property
    def parameters(self) -> int:
        return int(self.model.num_parameters())

    # ------------------------------------------------------------------ core forward
    def _check_length(self, ids: Sequence[int]) -> None:
        if len(ids) > self.max_length:
            raise ValueError(
                f"input of {len(ids)} tokens exceeds the model's maximum length {self.max_length}"
            )

    def _left_pad(self, rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ids, mask = left_pad(rows, self.pad_id)
        # Explicit positions: a left-padded row must see the same positions as when run alone.
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        return ids.to(self.device), mask.to(self.device), positions.to(self.device)

    def _tree_batch(self, rows: Sequence[TreeRow]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Left-padded ids, a 4D additive attention mask (batch, 1, width, width) in which every
        token sees exactly its own path, and each token's depth as its position. Padding sees only
        itself (no fully masked row, hence no NaN)."""
        width = max(len(r.token_ids) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        positions = torch.zeros((len(rows), width), dtype=torch.long)
        parent = torch.arange(len(rows) * width).view(len(rows), width)  # padding: its own parent
        for i, row in enumerate(rows):
            start = width - len(row.token_ids)
            ids[i, start:] = torch.tensor(row.token_ids)
            positions[i, start:] = torch.tensor(row.depths())
            up = torch.tensor(row.parents)
            parent[i, start:] = torch.where(up < 0, parent[i, start:], i * width + start + up)
        # each token sees itself and its ancestors: climb one parent per step (a root is its own)
        parent, here = parent.view(-1), torch.arange(len(rows) * width)
        sees = torch.zeros((len(rows) * width, width), dtype=torch.bool)
        for _ in range(int(positions.max()) + 1):
            sees[torch.arange(len(here)), here % width] = True
            here = parent[here]
        dtype = self.model.dtype
        mask = torch.zeros(sees.shape, dtype=dtype).masked_fill_(~sees, torch.finfo(dtype).min)
        return ids.to(self.device), mask.view(len(rows), 1, width, width).to(self.device), positions.to(self.device)

    def _branches(self, longest: int) -> bool:
        """Whether tree rows may be used: they reproduce plain rows on this model (checked at load,
        ``_tree_rows_agree``), no sliding window binds (a window shorter than the sequence would need
        its own mask) and the sequences are short (``tree_max_length``)."""
        window = getattr(self.model.config, "sliding_window", None) or self.tree_max_length
        return self.tree_rows and longest <= min(window, self.tree_max_length)

    @torch.inference_mode()
    def _score(self, rows: Sequence[TreeRow], queries: Sequence[_Query]
               ) -> list[tuple[list[float], int, tuple[float, float] | None]]:
        """One padded forward over ``rows``; for each query, the log-probs of its token ids, the
        argmax token after it and, where asked (``vocab_stats``), the mean and standard deviation
        of log p over the vocabulary there (``vocab_moments``). The LM head runs once per
        distinct queried token only.

        Where the attention takes a custom mask, the rows are packed side by side into a few
        evenly filled rows (``pack_rows``) and run with a 4D mask; otherwise (plain sequences
        only) each row is one left-padded row of the batch."""
        longest = max(max(row.depths()) + 1 for row in rows)
        if self._branches(longest):
            packed, where = pack_rows(rows, self.pack_width)
            ids, attention, positions = self._tree_batch(packed)
        else:
            if not all(row.is_chain for row in rows):
                raise AssertionError("tree rows need an attention that takes a custom mask")
            packed, where = list(rows), [(r, 0) for r in range(len(rows))]
            ids, attention, positions = self._left_pad([row.token_ids for row in rows])
        width = ids.shape[1]
        # queries at the same token share one head row (every object of a stem is scored there)
        unique: dict[tuple[int, int], int] = {}
        slot = [unique.setdefault((q.row, q.index), len(unique)) for q in queries]
        # token i of row r sits at padded column width - len(packed row) + offset + i
        columns = [
            (where[r][0], width - len(packed[where[r][0]].token_ids) + where[r][1] + i) for r, i in unique
        ]
        row_index = torch.tensor([r for r, _ in columns], device=ids.device)
        col_index = torch.tensor([c for _, c in columns], device=ids.device)
        gathered = self._rows_at(ids, attention, positions, row_index, col_index)  # (unique, hidden or vocab)
        self.stats.forward_calls += 1
        self.stats.sequences += len(rows)
        self.stats.tokens += sum(len(row.token_ids) for row in rows)
        self.stats.padded_tokens += ids.numel()
        self.stats.scored_positions += len(unique)
        if self.stats.keep_contexts:
            self.stats.contexts.extend(row.token_ids for row in rows)
        flat_slot = torch.tensor([k for k, q in zip(slot, queries) for _ in q.token_ids], device=ids.device)
        flat_token = torch.tensor([t for q in queries for t in q.token_ids], device=ids.device)
        targets = torch.empty(len(flat_slot), device=ids.device)
        norm = torch.empty(len(unique), device=ids.device)
        best_ids = torch.empty(len(unique), dtype=torch.long, device=ids.device)
        # a chunk of scored positions at a time: a batch grown by characters (scoring_batch_chars)
        # scores hundreds of positions
        block = self.head_vocab_rows if self._vocab_chunked() else self.head_chunk
        for start in range(0, len(unique), block):
            end = min(start + block, len(unique))
            here = ((flat_slot >= start) & (flat_slot < end)).nonzero(as_tuple=True)[0]
            scores = self._head_scores(gathered[start:end], flat_slot[here] - start, flat_token[here])
            norm[start:end], best_ids[start:end], targets[here] = scores.norm, scores.best, scores.targets
        # Min-K%++'s vocabulary moments need whole rows of log-probs: those few rows through the plain head
        wanted = sorted({k for k, q in zip(slot, queries) if q.vocab_stats})
        moments: dict[int, tuple[float, float]] = {}
        for start in range(0, len(wanted), self.head_chunk):
            mine = wanted[start : start + self.head_chunk]
            moments.update(zip(mine, vocab_moments(self._head_logits(gathered[mine]))))
        flat = (targets - norm[flat_slot]).tolist()
        best = best_ids.tolist()
        out, cursor = [], 0
        for k, q in zip(slot, queries):
            out.append((flat[cursor : cursor + len(q.token_ids)], best[k], moments.get(k)))
            cursor += len(q.token_ids)
        return out

    def _logits_at(self, ids, attention, positions, row_index, col_index) -> torch.Tensor:
        """Logits at (row, column) pairs only. Where the head is a plain linear layer (with
        Gemma-style final soft-capping) the decoder's hidden states are gathered first, so the
        262k-wide head runs once per scored position instead of once per padded position.
        ``attention`` is a 2D padding mask or a prepared 4D mask (tree rows)."""
        return self._head_logits(self._rows_at(ids, attention, positions, row_index, col_index))

    def _head_logits(self, rows: torch.Tensor) -> torch.Tensor:
        """The logits of rows from ``_rows_at``: the head (and soft-capping) applied to gathered
        hidden states, or the rows themselves where they are already logits."""
        if self._decoder is None or self._head is None:
            return rows
        logits = self._head(rows)
        cap = self._softcap
        return torch.tanh(logits / cap) * cap if cap else logits

    def _vocab_chunked(self) -> bool:
        """Whether the gathered head is a plain linear layer run a vocabulary slice at a time."""
        return bool(self.head_vocab_chunk) and self._decoder is not None and isinstance(self._head, torch.nn.Linear)

    def _head_scores(self, rows: torch.Tensor, pair_row: torch.Tensor, pair_token: torch.Tensor) -> HeadScores:
        """log Z, the argmax and the logits of (row, token) pairs at ``rows`` from ``_rows_at``.
        A plain linear head runs a vocabulary slice at a time (``vocab_chunked_head``,
        ``head_vocab_chunk``); otherwise the whole (rows x vocabulary) logits are made and
        normalised in place (``head_normalisers``), as where ``rows`` are already logits."""
        if self._vocab_chunked():
            head = self._head
            assert isinstance(head, torch.nn.Linear) and self.head_vocab_chunk
            return vocab_chunked_head(rows, head.weight, head.bias, self._softcap, pair_row, pair_token,
                                      self.head_vocab_chunk)
        logits = self._head_logits(rows)
        targets = logits[pair_row, pair_token].float()  # before head_normalisers overwrites logits
        norm, best = head_normalisers(logits)
        return HeadScores(norm=norm, best=best, targets=targets)

    def _rows_at(self, ids, attention, positions, row_index, col_index) -> torch.Tensor:
        """The decoder's hidden states at (row, column) pairs where the head is gathered
        (``_use_gathered_head``), else the model's logits there."""
        with self._mask_kernel(attention):
            if self._decoder is not None and self._head is not None:
                hidden = self._decoder(
                    input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=False
                ).last_hidden_state
                return hidden[row_index, col_index]
            keep = ids.shape[1] - int(col_index.min())
            logits = self.model(
                input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=keep, use_cache=False
            ).logits
        return logits[row_index, col_index - (ids.shape[1] - keep)]

    def _mask_kernel(self, attention: torch.Tensor) -> contextlib.AbstractContextManager[object]:
        """On CUDA, tree rows' 4D masks go through SDPA's math kernel: the memory-efficient kernel
        PyTorch picks by default returned wrong log-probs for 8 of 6,514 packed pairs (up to 1.95
        nats; torch 2.11+cu130 on an H200, Gemma 3 270M's shapes, 2026-11-26), the math kernel and
        eager attention none; at these row widths (<= ``tree_max_length``) it is as fast
        (bench/README.md, GPU section). CPU kernels are unaffected (tests/test_hf_cuda.py)."""
        if attention.dim() == 4 and attention.device.type == "cuda":
            return sdpa_kernel([SDPBackend.MATH])
        return contextlib.nullcontext()

    # ------------------------------------------------------------------ request kinds
    def loglikelihood(self, requests: Sequence[LogLikelihood]) -> list[LogLikelihoodResult]:
        """Requests that share a context (the same context token ids: a straddling continuation
        has a shorter one) are scored from one copy of it: their continuations hang below it in
        one tree row (``pack_shared_contexts``); the last continuation token is never an input."""
        splits = [self._split(r) for r in requests]
        sequences = [(s.context_ids, s.continuation_ids[:-1]) for s in splits]
        for context, extension in sequences:
            self._check_length(context + extension)
        longest = max(len(c) + len(e) for c, e in sequences)
        rows, placed = pack_shared_contexts(sequences, branch=self._branches(longest))
        queries = [
            _Query(p.row, p.indices[len(s.context_ids) - 1 + j], (tok,), r.vocab_stats)
            for r, s, p in zip(requests, splits, placed)
            for j, tok in enumerate(s.continuation_ids)
        ]
        scored = iter(self._score(rows, queries))
        results = []
        for r, s in zip(requests, splits):
            lps: list[float] = []
            greedy = True
            moments: list[tuple[float, float]] = []  # filled where vocab_stats was asked
            for tok in s.continuation_ids:
                (lp,), best, stats = next(scored)
                lps.append(lp)
                if stats is not None:
                    moments.append(stats)
                greedy = greedy and best == tok
            results.append(
                LogLikelihoodResult(
                    logprob=float(sum(lps)),
                    token_logprobs=lps,
                    tokens=self.tokenizer.convert_ids_to_tokens(list(s.continuation_ids)),
                    greedy=greedy,
                    token_means=[m[0] for m in moments] if r.vocab_stats else None,
                    token_stds=[m[1] for m in moments] if r.vocab_stats else None,
                )
            )
        return results

    def _split(self, r: LogLikelihood) -> Split:
        if r.uses_ids:
            return self.boundary.split_ids(*r.ids)
        return self.boundary.split(*r.texts)

    def tokenize(self, requests: Sequence[Tokenize]) -> list[TokenizeResult]:
        """The tokenizer's ids and character offsets of each text, without special tokens."""
        return [tokenize_text(self.tokenizer, r.text) for r in requests]

    def next_token(self, requests: Sequence[NextToken]) -> list[NextTokenResult]:
        """Every candidate of every request in the batch is read off one forward over the unique
        context token sequences (a candidate whose first token straddles the join has a shorter
        context, read at an earlier position of the same row when it is a prefix of it)."""
        # every candidate of every request, in request order
        splits = [self.boundary.split(r.context, c) for r in requests for c in r.candidates]
        for split in splits:
            self._check_length(split.context_ids)
        rows, host = share_prefixes([sp.context_ids for sp in splits])
        # one query per (row, position): all candidate tokens read there share one logsumexp
        grouped: dict[tuple[int, int], list[int]] = {}
        plan = []
        for row, split in zip(host, splits):
            key = (row, len(split.context_ids) - 1)
            tokens = grouped.setdefault(key, [])
            if split.continuation_ids[0] not in tokens:
                tokens.append(split.continuation_ids[0])
            plan.append((key, split.continuation_ids[0]))
        keys = list(grouped)
        scored = self._score([TreeRow.chain(r) for r in rows], [_Query(row, pos, tuple(grouped[(row, pos)])) for row, pos in keys])
        lookup = {
            (key, tok): lp for key, (lps, *_) in zip(keys, scored) for tok, lp in zip(grouped[key], lps)
        }
        results, cursor = [], 0
        for r in requests:
            mine = plan[cursor : cursor + len(r.candidates)]
            cursor += len(r.candidates)
            tokens = [tok for _, tok in mine]
            results.append(
                NextTokenResult(
                    logprobs=[lookup[m] for m in mine],
                    token_ids=tokens,
                    tokens=self.tokenizer.convert_ids_to_tokens(tokens),
                )
            )
        return results

    @torch.inference_mode()
    def hidden_states(self, requests: Sequence[HiddenStates]) -> list[HiddenStatesResult]:
        rows = [self.boundary.encode_text(r.text) for r in requests]
        for row in rows:
            self._check_length(row)
        ids, mask, positions = self._left_pad(rows)
        out = self.model(
            input_ids=ids, attention_mask=mask, position_ids=positions,
            output_hidden_states=True, logits_to_keep=1,
        )
        self.stats.forward_calls += 1
        self.stats.sequences += len(rows)
        results = []
        special = len(self.boundary.prefix_ids)
        for i, r in enumerate(requests):
            m = mask[i].unsqueeze(-1).float()
            if r.pooling == "mean-text" and len(rows[i]) > special:
                start = ids.shape[1] - len(rows[i])  # left padding: the row's first real column
                m[start : start + special] = 0
            vectors = []
            for layer in r.layers:
                h = out.hidden_states[layer][i].float()
                if r.pooling == "last":
                    vectors.append(h[-1].tolist())
                else:
                    vectors.append(((h * m).sum(0) / m.sum()).tolist())
            results.append(HiddenStatesResult(vectors=vectors))
        return results

    def _prompt_ids(self, r: Generate) -> list[int]:
        if r.prompt_ids is not None:
            return list(self.boundary.with_prefix(r.prompt_ids))
        if r.messages is not None:
            if not self.has_chat_template:
                raise ValueError(f"{self.fingerprint.spec} has no chat template; send a plain prompt")
            return list(
                self.tokenizer.apply_chat_template(
                    [m.model_dump() for m in r.messages], add_generation_prompt=True, tokenize=True,
                    return_dict=True,
                )["input_ids"]
            )
        if r.prompt is None:
            raise ValueError("Generate needs a prompt or messages")
        return list(self.boundary.encode_text(r.prompt))

    @torch.inference_mode()
    def generate(self, requests: Sequence[Generate]) -> list[GenerateResult]:
        """Batched generation; requests that differ in settings run as sub-batches.

        A sampled request (temperature > 0) runs alone with its own seed, so its answer depends
        on the request only, as its cache key does. ``token_logprobs`` are the model's own
        log-probabilities (log-softmax of the raw logits), not the temperature-scaled ones."""
        results: dict[int, GenerateResult] = {}
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            alone = i if r.temperature > 0 else None
            groups.setdefault((r.max_tokens, r.temperature, r.seed, r.logprobs, r.stop, r.repetition_penalty, alone),
                              []).append(i)
        for (max_tokens, temperature, seed, want_logprobs, stop, penalty, _), members in groups.items():
            rows = [self._prompt_ids(requests[i]) for i in members]
            for row in rows:
                self._check_length(row)
            if temperature == 0 and not want_logprobs and (penalty or 1.0) == 1.0 and self.greedy_loop and self.tree_rows:
                # greedy: the plain loop over the model's own forward (prefix_generation.py), rows
                # sharing a long prefix (a judge's prompts) with it computed once
                for batch, prefix_length in self._greedy_batches(rows, max_tokens):
                    new_rows = greedy_generate(self.model, [rows[k] for k in batch], max_tokens, self._eos,
                                               self.pad_id, self._stopping(stop), prefix_length)
                    self.stats.forward_calls += 1
                    self.stats.sequences += len(batch)
                    for k, toks in zip(batch, new_rows):
                        text, finish, toks = cut_generated(self.tokenizer, toks, set(self._eos), requests[members[k]].stop)
                        results[members[k]] = GenerateResult(text=text, finish_reason=finish, token_ids=toks)
                continue
            ids, mask, _ = self._left_pad(rows)
            config = self._generation_config(max_tokens, temperature, want_logprobs, penalty)
            ctx: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
            if config.do_sample:
                ctx = torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else [])
            with ctx:
                if config.do_sample:
                    torch.manual_seed(seed)
                out = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=config,
                                          stopping_criteria=self._stopping(stop))
            self.stats.forward_calls += 1
            self.stats.sequences += len(rows)
            new = out.sequences[:, ids.shape[1] :]
            step_lps = None
            if want_logprobs:
                step_lps = torch.stack(
                    [torch.log_softmax(s.float(), -1).gather(-1, new[:, t : t + 1]).squeeze(-1)
                     for t, s in enumerate(out.logits)], dim=1,
                )
            eos = set(self._eos)
            for b, i in enumerate(members):
                text, finish, toks = cut_generated(self.tokenizer, new[b].tolist(), eos, requests[i].stop)
                lps = step_lps[b, : len(toks)].tolist() if step_lps is not None else None
                results[i] = GenerateResult(text=text, token_logprobs=lps, finish_reason=finish, token_ids=toks)
        return [results[i] for i in range(len(requests))]

    def _greedy_batches(self, rows: list[list[int]], max_tokens: int) -> list[tuple[list[int], list[int] | None]]:
        """(row indices, per-row shared prefix length or None) of the greedy loop's batches: the rows
        in groups sharing a long prefix (prefix_generation.py) together, the prefixes computed once,
        the other rows together, prefilled whole. Prefixes are used where a cache built from a
        prefix alone and a mask with a gap serve the model exactly: every layer is attention that
        honours a mask (the tree-row check, ``_tree_rows_agree``, which ``generate`` asks for
        before the greedy loop runs at all) and no sliding window binds."""
        window = getattr(self.model.config, "sliding_window", None)
        groups = [] if window and max(len(r) for r in rows) + max_tokens > window else prefix_groups(rows)
        grouped = {k: n for members, n in groups for k in members}
        batches: list[tuple[list[int], list[int] | None]] = []
        if grouped:
            batches.append((list(grouped), list(grouped.values())))
        alone = [k for k in range(len(rows)) if k not in grouped]
        if alone:
            batches.append((alone, None))
        return batches

    def _stopping(self, stop: tuple[str, ...]) -> StoppingCriteriaList:
        """A sequence that produced a stop string stops (the rest of the batch goes on); the text
        is cut at the stop string by the caller. One criterion per set of stop strings, built once."""
        stop = tuple(s for s in stop if s)
        if not stop:
            return StoppingCriteriaList()
        if stop not in self._stop_criteria:
            self._stop_criteria[stop] = StopStringCriteria(self.tokenizer, list(stop))
        return StoppingCriteriaList([self._stop_criteria[stop]])

    def _generation_config(
        self, max_tokens: int, temperature: float, want_logprobs: bool, repetition_penalty: float | None = None,
    ) -> GenerationConfig:
        """Every setting that shapes the output, explicit: greedy, or plain sampling at the
        request's temperature (no top-k/top-p truncation); no minimum length; no repetition
        penalty unless the request asks for one (Generate.repetition_penalty). Stop strings:
        ``_stopping``."""
        sampling = temperature > 0
        return GenerationConfig(
            max_new_tokens=max_tokens, min_new_tokens=0, do_sample=sampling, num_beams=1,
            repetition_penalty=repetition_penalty or 1.0,
            temperature=temperature if sampling else 1.0, top_k=0 if sampling else None, top_p=1.0,
            eos_token_id=self._eos, pad_token_id=self.pad_id,
            return_dict_in_generate=True, output_logits=want_logprobs,
        )

    def _eos_ids(self) -> list[int]:
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        return list(eos) if isinstance(eos, (list, tuple)) else ([eos] if eos is not None else [])
