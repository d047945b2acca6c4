"""The gathered-LM-head fast path (issue 9 §4): kept where it reproduces ``model(...).logits``
(Gemma-style final soft-capping, also when a multimodal wrapper keeps it in ``text_config``),
replaced by the model's own forward for any other head scaling, named or not."""

from __future__ import annotations

import pytest
from transformers import (
    FalconH1Config,
    FalconH1ForCausalLM,
    Gemma2Config,
    Gemma2ForCausalLM,
    GraniteConfig,
    GraniteForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    PaliGemmaConfig,
    PaliGemmaForConditionalGeneration,
    SiglipVisionConfig,
)

from babelprobe.models.base import Fingerprint, LogLikelihood, NextToken
from babelprobe.models.hf import TransformersBackend
from test_hf_backend import reference_logprobs  # unbatched full forward through the model's own head
from tiny_models import DECODER, tiny_model, tiny_tokenizer

PAIRS = [("the capital of france is", " paris"), ("he was in", " rome and berlin"), ("one two", " three four five")]
NO_HEAD_DIM = {k: v for k, v in DECODER.items() if k != "head_dim"}


def gemma2():  # final soft-capping in the top-level config
    return tiny_model(Gemma2ForCausalLM, Gemma2Config(**DECODER, final_logit_softcapping=2.0))


def paligemma():  # the same soft-capping, kept in text_config by a multimodal wrapper
    text = Gemma2Config(**DECODER, final_logit_softcapping=2.0)
    vision = SiglipVisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14
    )
    config = PaliGemmaConfig(
        text_config=text.to_dict(), vision_config=vision.to_dict(), image_token_index=3, projection_dim=16
    )
    return tiny_model(PaliGemmaForConditionalGeneration, config)


def granite():  # logits divided by logits_scaling
    return tiny_model(GraniteForCausalLM, GraniteConfig(**NO_HEAD_DIM, logits_scaling=4.0))


def falcon_h1():  # logits multiplied by lm_head_multiplier: a scaling no name list knew
    config = FalconH1Config(
        **DECODER, lm_head_multiplier=3.0, mamba_d_ssm=16, mamba_n_heads=2, mamba_d_head=8, mamba_n_groups=1,
        mamba_d_state=4, mamba_d_conv=2, mamba_chunk_size=8,
    )
    return tiny_model(FalconH1ForCausalLM, config)


def llama():  # a plain linear head
    return tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER))


def backend_for(model) -> TransformersBackend:
    fingerprint = Fingerprint(spec="tiny", backend="transformers", weights="random", dtype="float32", device="cpu",
                              versions={})
    return TransformersBackend(model, tiny_tokenizer(), fingerprint)


@pytest.mark.parametrize(
    ("build", "gathered"),
    [(llama, True), (gemma2, True), (paligemma, True), (granite, False), (falcon_h1, False)],
    ids=["llama", "gemma2-softcap", "paligemma-text-config-softcap", "granite-logits-scaling", "falcon-h1-multiplier"],
)
def test_scores_equal_the_models_own_head(build, gathered):
    backend = backend_for(build())
    assert backend.gathered_head is gathered
    # packed rows with a 4D mask only where every layer honours it (not FalconH1's Mamba layers)
    assert backend.tree_rows is (build is not falcon_h1)
    results = backend.loglikelihood([LogLikelihood(context=c, continuation=o) for c, o in PAIRS])
    for (context, continuation), result in zip(PAIRS, results):
        assert result.token_logprobs == pytest.approx(reference_logprobs(backend, context, continuation), abs=1e-5)
    (next_token,) = backend.next_token([NextToken(context="the capital of", candidates=(" paris", " rome"))])
    expected = [reference_logprobs(backend, "the capital of", c)[0] for c in (" paris", " rome")]
    assert next_token.logprobs == pytest.approx(expected, abs=1e-5)


@pytest.mark.slow
def test_bundled_gemma_keeps_the_fast_path(gemma):
    assert gemma.gathered_head
