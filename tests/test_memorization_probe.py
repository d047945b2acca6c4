"""The memorization probe end to end on real models: the bundled Gemma (decoder-only) and a tiny
T5 built from a config with a SentencePiece tokenizer (conftest.py: tiny_t5)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.models.base import Generate, LogLikelihood, Tokenize
from babelprobe.execute_run import run

DEMO = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled" / "memorization_demo.jsonl"


@pytest.mark.slow
def test_token_id_requests_agree_with_text_requests(gemma):
    text = "In the beginning God created the heaven and the earth. And the earth was without form, and void."
    (tokens,) = gemma.tokenize([Tokenize(text=text)])
    assert tokens.token_ids == gemma.tokenizer(text, add_special_tokens=False).input_ids
    cut = 8
    split_at = tokens.offsets[cut][0]
    by_ids, by_text = gemma.loglikelihood([
        LogLikelihood(context_ids=tuple(tokens.token_ids[:cut]), continuation_ids=tuple(tokens.token_ids[cut:])),
        LogLikelihood(context=text[:split_at], continuation=text[split_at:]),
    ])
    assert by_ids.logprob == pytest.approx(by_text.logprob, abs=1e-4)
    assert by_ids.token_logprobs == pytest.approx(by_text.token_logprobs, abs=1e-4)


@pytest.mark.slow
def test_generate_from_ids_batched_equals_single_and_honours_repetition_penalty(gemma):
    texts = ["One, two, one, two, one, two, one, two,", "Der Himmel ist blau und die Wiese ist",
             "Tous les êtres humains naissent libres et"]
    ids = [tuple(t.token_ids) for t in gemma.tokenize([Tokenize(text=t) for t in texts])]
    requests = [Generate(prompt_ids=i, max_tokens=6) for i in ids]
    batched = gemma.generate(requests)
    single = [gemma.generate([r])[0] for r in requests]
    assert [b.token_ids for b in batched] == [s.token_ids for s in single]
    assert all(len(b.token_ids) <= 6 for b in batched)
    assert batched[0].text == gemma.tokenizer.decode(batched[0].token_ids, skip_special_tokens=True)
    penalised = gemma.generate([Generate(prompt_ids=ids[0], max_tokens=6, repetition_penalty=5.0)])[0]
    assert penalised.token_ids != batched[0].token_ids


@pytest.mark.slow
def test_memorization_run_on_gemma(gemma, tmp_path):
    config = MemorizationConfig(data=DEMO, langs=["en", "zh"], limit=2, prefix_tokens=[20, 60], suffix_tokens=10,
                                out=tmp_path / "run", cache=None, bootstrap_resamples=200, seed=1)
    outcome = run(config, backends={config.model: gemma})
    items = pd.read_parquet(tmp_path / "run" / "items.parquet")
    assert len(items) == 8 and set(items["status"]) <= {"scored", "too_short"}
    scored = items[items["status"] == "scored"]
    assert (items["status"] == "too_short").sum() == outcome.summary.overall[1].too_short
    assert all(len(s) == 10 for s in scored["suffix_ids"])
    # greedy decoding reproduces the suffix iff every suffix token is the argmax (two paths agree)
    assert (scored["exact_match"] == scored["pm_greedy"]).all()
    assert (scored["pm"] > scored["control_pm"]).mean() >= 0.5
    for _, row in scored.iterrows():
        assert row["pm"] == pytest.approx(sum(row["token_logprobs"]), abs=1e-5)
    per_language = pd.read_csv(tmp_path / "run" / "memorization.csv")
    assert list(per_language["language"]) == ["en", "zh"] and {"EM", "PM", "BLEU", "ROUGE-L"} <= set(per_language)
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["probe"] == "memorization"
    from typer.testing import CliRunner

    from babelprobe.cli import app

    report = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    assert report.exit_code == 0 and "memorization by prompt length" in report.output
    compare = CliRunner().invoke(app, ["memorization", "compare", str(tmp_path / "run"), str(tmp_path / "run")])
    assert compare.exit_code == 0 and "PM@20" in compare.output, compare.output


@pytest.mark.slow
def test_seq2seq_backend_scores_ids_like_the_model(tiny_t5):
    from babelprobe.models import load_backend
    from babelprobe.models.seq2seq import Seq2SeqBackend

    backend = load_backend(f"hf:{tiny_t5 / 'model'}", device="cpu")
    assert isinstance(backend, Seq2SeqBackend)
    inputs, target = (5, 7, 9, 11), (50, 12, 13, 51, 14)
    (result,) = backend.loglikelihood([LogLikelihood(context_ids=inputs, continuation_ids=target)])
    model, eos = backend.model, backend.tokenizer.eos_token_id
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([list(inputs) + [eos]]), labels=torch.tensor([list(target)])).logits
    expected = torch.log_softmax(logits[0], -1)[range(len(target)), list(target)]
    assert result.token_logprobs == pytest.approx(expected.tolist(), abs=1e-5)
    (generated,) = backend.generate([Generate(prompt_ids=inputs, max_tokens=4)])
    assert len(generated.token_ids) <= 4


@pytest.mark.slow
def test_span_corruption_run_on_tiny_t5(tiny_t5, tmp_path):
    def run_t5(out: Path) -> pd.DataFrame:
        config = MemorizationConfig(model=f"hf:{tiny_t5 / 'model'}", data=tiny_t5 / "samples.jsonl", prefix_tokens=[20],
                                    suffix_tokens=6, out=out, cache=None, bootstrap_resamples=200, device="cpu")
        run(config)
        return pd.read_parquet(out / "items.parquet")

    items = run_t5(tmp_path / "a")
    again = run_t5(tmp_path / "b")
    assert (items["mode"] == "span").all() and (items["status"] == "scored").all()
    assert [list(map(list, s)) for s in items["spans"]] == [list(map(list, s)) for s in again["spans"]]  # seeded
    for _, row in items.iterrows():
        spans = [tuple(s) for s in row["spans"]]
        assert sum(e - s for s, e in spans) == 6 and len(row["token_logprobs"]) == 6  # exactly the masked tokens
        assert all(e1 < s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))  # never overlapping or touching
        assert row["pm"] == pytest.approx(sum(row["token_logprobs"]), abs=1e-5)
        assert len(row["suffix_ids"]) == 6 + len(spans)  # sentinels + spans
        assert row["bleu"] is None or pd.isna(row["bleu"])


def test_memorization_csv_is_the_longest_prompt_length_that_scored(tmp_path):
    """A prompt length longer than every text scores nothing: memorization.csv (what `graph`
    reads) falls back to the longest length with scored samples instead of an empty table."""
    from babelprobe.families.memorization.analysis import write_language_tables

    rows = [dict(language=lang, prefix_tokens=n, status="scored" if n < 100 else "too_short",
                 exact_match=float(n < 50) if n < 100 else None, pm=-float(n) if n < 100 else None)
            for lang in ("en", "de") for n in (10, 50, 200)]
    written = write_language_tables(pd.DataFrame(rows), tmp_path)
    assert [p.name for p in written] == ["memorization_p10.csv", "memorization_p50.csv", "memorization_p200.csv",
                                         "memorization.csv"]
    assert list(pd.read_csv(tmp_path / "memorization_p200.csv").columns) == ["language"]
    longest = pd.read_csv(tmp_path / "memorization.csv")
    assert list(longest.columns) == ["language", "EM", "PM"] and list(longest["PM"]) == [-50.0, -50.0]
