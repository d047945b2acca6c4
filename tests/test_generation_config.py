"""Generation applies only the request's settings (issue 9 §3-4), on a tiny model whose
generation_config.json sets a repetition penalty: greedy is the argmax chain of plain forward
passes, token log-probs are the raw model's, a sampled answer depends on its request only."""

from __future__ import annotations

import pytest
import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from babelprobe.models import load_backend
from babelprobe.models.base import Generate
from tiny_models import DECODER, save_tiny, tiny_model

PROMPTS = ["the capital of france is", "one two three", "red green blue red", "he was in rome and"]


@pytest.fixture(scope="module")
def penalised(tmp_path_factory):
    target = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), tmp_path_factory.mktemp("penalised"))
    GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0, repetition_penalty=5.0).save_pretrained(target)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BABELPROBE_HOME", str(tmp_path_factory.mktemp("home")))
        return load_backend(f"hf:{target}", device="cpu")


def argmax_chain(backend, prompt: str, steps: int) -> tuple[list[int], list[float]]:
    """Greedy decoding by hand: one full forward per step, no generate(), no processors."""
    ids = list(backend.boundary.encode_text(prompt))
    tokens, logprobs = [], []
    for _ in range(steps):
        with torch.inference_mode():
            logits = backend.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
        token = int(logits.argmax())
        if token == backend.tokenizer.eos_token_id:
            break
        tokens.append(token)
        logprobs.append(float(torch.log_softmax(logits, -1)[token]))
        ids.append(token)
    return tokens, logprobs


def test_greedy_ignores_the_checkpoint_repetition_penalty(penalised):
    results = penalised.generate([Generate(prompt=p, max_tokens=12, logprobs=True) for p in PROMPTS])
    for prompt, result in zip(PROMPTS, results):
        tokens, logprobs = argmax_chain(penalised, prompt, 12)
        assert result.text == penalised.tokenizer.decode(tokens), prompt
        # raw log-probs of the model, not the penalised scores generate() worked with
        assert result.token_logprobs == pytest.approx(logprobs, abs=1e-4), prompt


def test_sampled_answer_is_the_same_alone_and_in_a_batch(penalised):
    requests = [Generate(prompt=p, max_tokens=10, temperature=1.0, seed=11) for p in PROMPTS]
    batched = penalised.generate(requests)
    for request, in_batch in zip(requests, batched):
        (alone,) = penalised.generate([request])
        assert alone == in_batch, request.prompt
    # and it does sample: other seeds give other answers
    texts = {penalised.generate([requests[0].model_copy(update={"seed": s})])[0].text for s in range(5)}
    assert len(texts) > 1
