"""Generate and HiddenStates on the real bundled models: batched equals one at a time."""

from __future__ import annotations

import pytest
import torch

from babelprobe.models.base import ChatMessage, Generate, HiddenStates

pytestmark = pytest.mark.slow


def test_greedy_generation_batched_equals_single(smollm2):
    requests = [
        Generate(messages=(ChatMessage(role="user", content="What is the capital of France?"),), max_tokens=12),
        Generate(messages=(ChatMessage(role="user", content="Name a colour."),), max_tokens=12),
        Generate(prompt="The capital of Germany is", max_tokens=8, logprobs=True),
    ]
    batched = smollm2.generate(requests)
    for request, b in zip(requests, batched):
        (single,) = smollm2.generate([request])
        assert b.text == single.text and b.text.strip()
    assert batched[2].token_logprobs is not None and all(lp <= 0 for lp in batched[2].token_logprobs)


def test_stop_sequences_and_length(smollm2):
    (free,) = smollm2.generate([Generate(prompt="1, 2, 3, 4,", max_tokens=10)])
    assert free.finish_reason == "length"
    (stopped,) = smollm2.generate([Generate(prompt="1, 2, 3, 4,", max_tokens=10, stop=(" 6",))])
    assert stopped.finish_reason == "stop" and " 6" not in stopped.text
    assert free.text.startswith(stopped.text)


def test_chat_needs_a_template(gemma):
    with pytest.raises(ValueError, match="no chat template"):
        gemma.generate([Generate(messages=(ChatMessage(role="user", content="hi"),))])


def test_hidden_states_pooling(gemma):
    texts = ["Paris is the capital of France.", "Руанда", "日本の首都は東京です"]
    requests = [HiddenStates(text=t, layers=(0, -1), pooling="mean") for t in texts]
    batched = gemma.hidden_states(requests)
    for text, request, b in zip(texts, requests, batched):
        ids = torch.tensor([gemma.boundary.encode_text(text)])
        with torch.inference_mode():
            hs = gemma.model(input_ids=ids, output_hidden_states=True).hidden_states
        assert len(b.vectors) == 2 and len(b.vectors[0]) == gemma.model.config.hidden_size
        assert b.vectors[0] == pytest.approx(hs[0][0].mean(0).tolist(), abs=1e-4)
        assert b.vectors[1] == pytest.approx(hs[-1][0].mean(0).tolist(), abs=1e-3)
    (last,) = gemma.hidden_states([HiddenStates(text=texts[0], layers=(-1,), pooling="last")])
    ids = torch.tensor([gemma.boundary.encode_text(texts[0])])
    with torch.inference_mode():
        ref = gemma.model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0, -1]
    assert last.vectors[0] == pytest.approx(ref.tolist(), abs=1e-3)
