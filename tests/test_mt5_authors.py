"""Shared Path with encoder-decoders (issue 19 §1-§2): ``--preset authors`` against the authors'
own procedures (github.com/xiaoyuluoit97/MLLM_memorization: mt5.py, logprob_mt5.py, transcribed
here line by line), and ``run memorization`` / ``run similarity`` / ``graph`` on a tiny T5 built in
the test (tests/tiny_models.py: build_tiny_t5, a real SentencePiece tokenizer with "▁" pieces)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.families.memorization.data import Sample
from babelprobe.families.memorization.probe import SpanProbe, Window
from babelprobe.families.memorization.span_corruption import (
    authors_exact_match,
    authors_spans,
    span_exact_match,
    whitespace_piece,
)

cli = CliRunner()
TOKENS_FIXTURE = Path(__file__).parent / "data" / "shared_path_mc4_tokens.csv"
DRAWS = 2000


def their_spans(seq_len: int, corruption_rate: float, mean_span_length: int, rng: random.Random):
    """mt5.py random_sample_and_corrupt_batch, the span part, as written there (``random`` is
    their module-level generator, here an instance)."""
    num_tokens_to_mask = int(seq_len * corruption_rate)
    num_spans = max(1, int(num_tokens_to_mask / mean_span_length))
    lengths = [1] * num_spans
    remaining = num_tokens_to_mask - num_spans
    while remaining > 0:
        idx = rng.randint(0, num_spans - 1)
        lengths[idx] += 1
        remaining -= 1
    available_positions = list(range(seq_len))
    spans = []
    for span_len in lengths:
        possible_starts = [
            pos for pos in available_positions
            if all((pos + offset) in available_positions for offset in range(span_len))
        ]
        if not possible_starts:
            raise ValueError(f"Cannot insert span of length {span_len}, no space available!")
        start_idx = rng.choice(possible_starts)
        end_idx = start_idx + span_len
        spans.append((start_idx, end_idx))
        for idx in range(start_idx - 1, end_idx + 1):
            if idx in available_positions:
                available_positions.remove(idx)
    return sorted(spans, key=lambda x: x[0])


def edge_rates(spans_list, length: int = 50) -> tuple[float, float]:
    """Share of windows whose first token is masked, and whose last token is masked."""
    first = np.mean([spans[0][0] == 0 for spans in spans_list])
    last = np.mean([spans[-1][1] == length for spans in spans_list])
    return float(first), float(last)


def probe_spans(preset: str) -> list[list[tuple[int, int]]]:
    """The spans the memorization probe draws for 2,000 50-token windows (n = 35, m = 15)."""
    probe = SpanProbe.from_config(MemorizationConfig(out=Path("unused"), preset=preset, prefix_tokens=[35]))
    probe.set_sentinels([])  # the spans do not depend on the sentinel ids
    probe.sentinels = tuple(range(1000, 1020))
    out = []
    for i in range(DRAWS):
        sample = Sample(sample_id=f"s{i}", language="xx", text="", source=f"f:{i}")
        window = probe._window(Window(sample, 35, 15, 50, 0, tuple(range(50)), ((0, 0),) * 50))
        out.append(list(window.corruption.spans))
    return out


def test_authors_span_placement_is_their_procedure_and_rates():
    # same generator state, same spans: the transcription follows their code call for call
    for seed in range(200):
        assert authors_spans(50, 15, 3, random.Random(seed)) == their_spans(50, 0.3, 3, random.Random(seed))
    for seed in range(30):
        assert authors_spans(150, 15, 3, random.Random(seed)) == their_spans(150, 0.1, 3, random.Random(seed))
    # their rates over 2,000 draws (seeded as mt5.py: seed + i), against the probe's own draws
    reference = edge_rates([their_spans(50, 0.3, 3, random.Random(10777140 + i)) for i in range(DRAWS)])
    assert 0.09 < reference[0] < 0.16 and 0.09 < reference[1] < 0.16  # ~0.12 each, far from 0 and 1
    drawn = probe_spans("authors")
    authors = edge_rates(drawn)
    assert abs(authors[0] - reference[0]) <= 0.02 and abs(authors[1] - reference[1]) <= 0.02, (authors, reference)
    assert edge_rates(probe_spans("babelprobe")) == (0.0, 1.0)  # T5's layout: never first, always last
    for spans in drawn[:200]:
        assert sum(e - s for s, e in spans) == 15 and len(spans) == 5
        assert all(e1 < s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))  # never overlapping or touching


def test_authors_exact_match_compares_only_the_spans_both_have():
    s = tuple(range(900, 916))  # <extra_id_0..15>
    target = (s[0], 12, 13, s[1], 17)
    assert authors_exact_match([s[0], 12, 13, s[1], 17], target, s)
    assert authors_exact_match([s[0], 12, 13], target, s)  # a missing span is not compared (their code)
    assert not span_exact_match([s[0], 12, 13], target, s[2])  # babelprobe: strict
    assert authors_exact_match([s[0], 12, 13, s[1], 17, s[2], 5], target, s)  # spans beyond the target
    assert not authors_exact_match([s[0], 12, 14, s[1], 17], target, s)
    assert authors_exact_match([s[0], 12, 13, s[9], 5], target, s)  # <extra_id_9> closes span 0 (their range)
    # an output without <extra_id_0> has no spans, so nothing is compared and it "matches" (their
    # code; why strict EM is babelprobe's default: a random tiny T5 scores EM 1.0 this way)
    assert authors_exact_match([5, 6, 7], target, s) and not span_exact_match([5, 6, 7], target, s[2])
    assert [whitespace_piece(p) for p in ("▁", "▁▁", "<0x0A>", "▁the", "d", "<extra_id_0>")] == [
        True, True, True, False, False, False]


def test_preset_resolves_into_the_config():
    authors = MemorizationConfig(out=Path("x"), preset="authors")
    assert (authors.offset, authors.repetition_penalty, authors.span_layout, authors.encoder_eos, authors.span_em,
            authors.pm_whitespace) == ("random", 1.2, "authors", False, "authors", "drop")
    default = MemorizationConfig(out=Path("x"))
    assert (default.offset, default.repetition_penalty, default.span_layout, default.encoder_eos, default.span_em,
            default.pm_whitespace) == ("first", None, "t5", True, "strict", "keep")
    # an option given explicitly wins; a stored config reads back the same
    mixed = MemorizationConfig(out=Path("x"), preset="authors", offset="first", repetition_penalty=1.0)
    assert (mixed.offset, mixed.repetition_penalty, mixed.span_layout) == ("first", 1.0, "authors")
    assert MemorizationConfig.model_validate(mixed.model_dump()) == mixed


def their_pm(model, tokenizer, input_ids: list[int], labels: list[int]) -> float:
    """logprob_mt5.py compute_encoder_decoder_ppl_verbose_batch for one sample (their sentinel id
    range, 250001..250099, is this tokenizer's <extra_id_*> range)."""
    sentinel_ids = set(tokenizer.convert_tokens_to_ids([f"<extra_id_{k}>" for k in range(20)]))
    labels_t = torch.tensor([labels])
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([input_ids]), decoder_input_ids=model._shift_right(labels_t),
                       labels=labels_t).logits
    token_log_probs = torch.log_softmax(logits, dim=-1).gather(2, labels_t.unsqueeze(-1)).squeeze(-1)[0]
    # their batch_decode(labels.view(-1)) decoded each id alone (transformers 4.x iterated the ids)
    decoded = [tokenizer.decode([t], skip_special_tokens=False) for t in labels]
    keep = [t not in sentinel_ids and t != tokenizer.eos_token_id and d.strip() != "" for t, d in zip(labels, decoded)]
    return float(sum(lp for lp, k in zip(token_log_probs.tolist(), keep) if k))


def their_corruption(window: list[int], spans, sentinels: list[int], eos: int) -> tuple[list[int], list[int]]:
    """mt5.py / logprob_mt5.py: corrupted input (no </s>) and labels (sentinel + span ..., </s>)."""
    corrupted, target, current = [], [], 0
    for k, (start, end) in enumerate(spans):
        corrupted += window[current:start] + [sentinels[k]]
        target += [sentinels[k]] + window[start:end]
        current = end
    return corrupted + window[current:], target + [eos]


def run_memorization(t5: Path, out: Path, *extra: str):
    result = cli.invoke(app, ["run", "memorization", "--model", f"hf:{t5 / 'model'}", "--data", str(t5 / "samples.jsonl"),
                              "--prefix-tokens", "35", "--device", "cpu", "--no-cache", "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return pd.read_parquet(out / "items.parquet"), json.loads((out / "manifest.json").read_text())


@pytest.mark.slow
def test_memorization_on_tiny_t5_default_and_authors_preset(tiny_t5, tmp_path):
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    default, _ = run_memorization(tiny_t5, tmp_path / "default")
    authors, manifest = run_memorization(tiny_t5, tmp_path / "authors", "--preset", "authors")
    assert manifest["config"]["preset"] == "authors" and manifest["config"]["span_layout"] == "authors"
    assert manifest["model"]["dtype"] == "float32"  # mT5 in float32 (on CPU auto is too)
    assert (default["status"] == "scored").all() and (authors["status"] == "scored").all()
    assert all(len(lps) == 15 for lps in default["token_logprobs"])  # babelprobe: every masked token
    tokenizer = AutoTokenizer.from_pretrained(tiny_t5 / "model")
    model = T5ForConditionalGeneration.from_pretrained(tiny_t5 / "model").eval()
    sentinels = tokenizer.convert_tokens_to_ids([f"<extra_id_{k}>" for k in range(20)])
    texts = {json.loads(line)["id"]: json.loads(line)["text"] for line in (tiny_t5 / "samples.jsonl").read_text().splitlines()}
    dropped = 0
    for _, row in authors.iterrows():
        ids = tokenizer(texts[row["sample_id"]], add_special_tokens=False).input_ids
        window = ids[row["window_start"]: row["window_start"] + 50]
        spans = [tuple(s) for s in row["spans"]]
        corrupted, labels = their_corruption(window, spans, sentinels, tokenizer.eos_token_id)
        assert list(row["suffix_ids"]) == labels[:-1]
        # their PM token set and value: whitespace pieces, sentinels and </s> left out
        assert row["pm"] == pytest.approx(their_pm(model, tokenizer, corrupted, labels), abs=1e-4)
        pieces = tokenizer.convert_ids_to_tokens(labels)
        kept = [p for p, t in zip(pieces, labels) if t not in sentinels and t != tokenizer.eos_token_id and p != "▁"]
        assert len(row["token_logprobs"]) == len(kept)
        dropped += 15 - len(kept)
        assert row["exact_match"] == authors_exact_match(list(row["generated_ids"]), tuple(labels[:-1]),
                                                         sentinels)
        assert len(row["generated_ids"]) <= 19
    assert dropped > 0  # the tokenizer's lone "▁" pieces were masked and left out
    assert authors["window_start"].nunique() > 1 and (default["window_start"] == 0).all()


@pytest.mark.slow
def test_similarity_and_graph_on_tiny_t5(tiny_t5, tmp_path):
    from babelprobe.models import load_backend
    from babelprobe.models.base import HiddenStates

    backend = load_backend(f"hf:{tiny_t5 / 'model'}", device="cpu")
    text, longer = "der quick fox ist la", "the lazy dog und une die das est le la over"
    got = backend.hidden_states([HiddenStates(text=text, layers=(0, 1, 2), pooling="mean-text"),
                                 HiddenStates(text=longer, layers=(2,), pooling="mean"),
                                 HiddenStates(text=text, layers=(2,), pooling="mean")])
    ids = backend.tokenizer(text).input_ids  # ends with </s>
    assert ids[-1] == backend.tokenizer.eos_token_id
    with torch.no_grad():
        direct = backend.model.get_encoder()(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
    assert len(direct) == 3  # embeddings + 2 encoder blocks
    for k, layer in enumerate((0, 1, 2)):  # right-padded in a batch with a longer text
        np.testing.assert_allclose(got[0].vectors[k], direct[layer][0, :-1].mean(0).numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2].vectors[0], direct[2][0].mean(0).numpy(), rtol=1e-4, atol=1e-5)

    rng = random.Random(1)
    words = "the quick brown fox jumps over lazy dog der die das und ist ein eine le la les est une un".split()
    rows = [{"id": f"p{i}", "language": lang, "text": " ".join(rng.choice(words) for _ in range(8))}
            for i in range(4) for lang in ("en", "de", "fr", "ru")]
    parallel = tmp_path / "parallel.jsonl"
    parallel.write_text("\n".join(json.dumps(r) for r in rows))
    sim = tmp_path / "sim"
    result = cli.invoke(app, ["run", "similarity", "--model", f"hf:{tiny_t5 / 'model'}", "--data", str(parallel),
                              "--layers", "all", "--typology", "none", "--device", "cpu", "--no-cache",
                              "--no-figures", "--out", str(sim)])
    assert result.exit_code == 0, result.output
    assert (sim / "similarity.csv").is_file() and (sim / "similarity_layer0.csv").is_file()
    memorization = tmp_path / "mem"
    run_memorization(tiny_t5, memorization, "--preset", "authors")
    graph = cli.invoke(app, ["graph", "correlate", "--similarity", str(sim), "--memorization", str(memorization),
                             "--tokens", str(TOKENS_FIXTURE), "--theta", "0.0", "--out", str(tmp_path / "graph")])
    assert graph.exit_code == 0, graph.output
    data = json.loads((tmp_path / "graph" / "graph.json").read_text())
    assert set(data["metrics"]) >= {"EM", "PM"} and data["dropped"] == {}


def test_authors_dtype_follows_the_architecture(tiny_t5, tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    from babelprobe.families.memorization.config import authors_dtype
    from tiny_models import DECODER, save_tiny, tiny_model

    decoder = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), tmp_path / "llama")
    assert authors_dtype(f"hf:{tiny_t5 / 'model'}", "cuda") == "float32"  # logprob_mt5.py: no dtype given
    assert authors_dtype(f"hf:{decoder}", "cuda") == "float16"  # mgpt.py: torch_dtype=torch.float16
    assert authors_dtype(f"hf:{decoder}", "cpu") == "float32"  # half precision is emulated on a CPU
    config = MemorizationConfig(model=f"hf:{decoder}", out=tmp_path / "o", preset="authors", device="cpu")
    assert config.load_options().dtype == "float32"
    assert MemorizationConfig(model=f"hf:{decoder}", out=tmp_path / "o", preset="authors", device="cpu",
                              dtype="bfloat16").load_options().dtype == "bfloat16"  # explicit wins
