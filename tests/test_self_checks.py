"""The backend's load-time self-checks run once per model and are recorded (models/self_checks.py,
issue 31): a second load reads the record and answers exactly as a checked load does; a changed
weights file or another model re-checks."""

from __future__ import annotations

import pytest
from transformers import FalconH1Config, FalconH1ForCausalLM, LlamaConfig, LlamaForCausalLM

from babelprobe.models import load_backend
from babelprobe.models.base import LogLikelihood
from babelprobe.models.hf import TransformersBackend
from tiny_models import DECODER, save_tiny, tiny_model

PAIRS = [("the capital of france is", " paris"), ("the capital of france is", " rome"), ("one two", " three four")]


def llama(seed: int = 0):
    return tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER), seed=seed)


def falcon_h1():  # a Mamba hybrid with a head multiplier: both fast paths refused by the checks
    config = FalconH1Config(
        **DECODER, lm_head_multiplier=3.0, mamba_d_ssm=16, mamba_n_heads=2, mamba_d_head=8, mamba_n_groups=1,
        mamba_d_state=4, mamba_d_conv=2, mamba_chunk_size=8,
    )
    return tiny_model(FalconH1ForCausalLM, config)


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """A fresh cache home, and how many times each check ran."""
    monkeypatch.setenv("BABELPROBE_HOME", str(tmp_path / "home"))
    runs = {"head": 0, "tree": 0}
    head, tree = TransformersBackend._use_gathered_head, TransformersBackend._tree_rows_agree

    def count_head(self):
        runs["head"] += 1
        return head(self)

    def count_tree(self):
        runs["tree"] += 1
        return tree(self)

    monkeypatch.setattr(TransformersBackend, "_use_gathered_head", count_head)
    monkeypatch.setattr(TransformersBackend, "_tree_rows_agree", count_tree)
    return runs


def scores(backend) -> list[list[float]]:
    return [r.token_logprobs for r in backend.loglikelihood([LogLikelihood(context=c, continuation=o) for c, o in PAIRS])]


@pytest.mark.parametrize(("build", "fast"), [(llama, True), (falcon_h1, False)], ids=["llama", "falcon-h1"])
def test_second_load_reads_the_record_and_answers_the_same(tmp_path, counted, build, fast):
    path = save_tiny(build(), tmp_path / "model")
    checked = load_backend(f"hf:{path}", device="cpu")
    assert counted == {"head": 1, "tree": 1}
    assert (checked.gathered_head, checked.tree_rows) == (fast, fast)
    recorded = load_backend(f"hf:{path}", device="cpu")
    assert counted == {"head": 1, "tree": 1}  # not run again
    assert (recorded.gathered_head, recorded.tree_rows) == (fast, fast)
    assert (recorded._decoder is not None) is fast  # the gathered head's parts are bound as after a check
    assert scores(recorded) == scores(checked)


def test_changed_weights_check_again(tmp_path, counted):
    path = save_tiny(llama(seed=0), tmp_path / "model")
    load_backend(f"hf:{path}", device="cpu")
    save_tiny(llama(seed=1), path)  # the same file names, other weights
    load_backend(f"hf:{path}", device="cpu")
    assert counted == {"head": 2, "tree": 2}


def test_a_model_built_in_memory_is_checked_every_time(counted):
    from test_head_path import backend_for

    backend_for(llama())
    backend_for(llama())
    assert counted == {"head": 2, "tree": 2}
