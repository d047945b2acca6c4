"""vLLM engine settings, memory bounds and the driver view (issue 17, vLLM points), with vLLM faked
at the import boundary (tests/fake_vllm.py: the numbers come from the real bundled SmolLM2) and
the GPU's memory given as numbers (models/memory.py: ``cuda_memory``): no GPU here.

Model directories hold SmolLM2's tokenizer and weights (links) under the configuration of the
model in question: Gemma 3 4B (window nested in ``text_config``) and Llama 3.1 8B (128k window)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from babelprobe.models import LoadOptions, load_backend
from babelprobe.models import memory
from babelprobe.models.base import LogLikelihood, RequestFailure
from babelprobe.models.weights import resolve

pytestmark = pytest.mark.slow

GIB = 1024**3
CARD_24GB = [(int(23.6 * GIB), 24 * GIB)]  # an idle 24 GB card, as torch.cuda.mem_get_info reports it
LLAMA_8B = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
            "max_position_embeddings": 131072, "tie_word_embeddings": False}
GEMMA3_4B = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
             "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 34,
                             "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                             "intermediate_size": 10240, "vocab_size": 262208, "max_position_embeddings": 131072},
             "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "num_hidden_layers": 27,
                               "intermediate_size": 4304}}


@pytest.fixture(scope="module")
def fake(smollm2):
    import fake_vllm

    saved = sys.modules.get("vllm")
    engines: dict = {}
    module = fake_vllm.install(engines)
    engines[resolve("bundled:smollm2-135m-instruct").path] = fake_vllm.Engine(smollm2.model, smollm2.tokenizer)
    yield module, engines, smollm2
    if saved is None:
        sys.modules.pop("vllm", None)
    else:
        sys.modules["vllm"] = saved


def model_dir(tmp_path: Path, fake, config: dict | None) -> str:
    """SmolLM2's files (links) with ``config`` as config.json; the fake engine serves SmolLM2 there."""
    module, engines, smollm2 = fake
    source = Path(resolve("bundled:smollm2-135m-instruct").path)
    out = tmp_path / "model"
    out.mkdir()
    for f in source.iterdir():
        if f.name != "config.json" or config is None:
            (out / f.name).symlink_to(f)
    if config is not None:
        (out / "config.json").write_text(json.dumps(config))
    engines[str(out)] = module.Engine(smollm2.model, smollm2.tokenizer)
    return str(out)


def test_engine_settings_reach_the_engine(fake, tmp_path):
    from babelprobe.models.vllm_backend import VLLMOptions, load

    path = model_dir(tmp_path, fake, None)
    backend = load(f"vllm:{path}", LoadOptions(), VLLMOptions(gpu_memory_utilization=0.6, tensor_parallel_size=2,
                                                               max_num_seqs=48))
    args = backend.llm.engine_args
    assert (args["gpu_memory_utilization"], args["tensor_parallel_size"], args["max_num_seqs"]) == (0.6, 2, 48)
    # from the run's options and per-backend model arguments (the merger's --model-arg KEY=VALUE)
    options = LoadOptions(max_length=4096, model_args={"gpu_memory_utilization": "0.7", "tensor_parallel_size": "4",
                                                       "max_num_seqs": "8"})
    settings = VLLMOptions.from_load_options(options)
    assert (settings.gpu_memory_utilization, settings.max_model_len, settings.tensor_parallel_size,
            settings.max_num_seqs) == (0.7, 4096, 4, 8)
    with pytest.raises(ValueError, match="tensor_paralel_size"):
        VLLMOptions.model_validate({"tensor_paralel_size": 2})  # a misspelt setting is refused, not ignored


def test_gemma3_window_read_from_text_config_and_bounded(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "cuda_memory", lambda: CARD_24GB)
    path = model_dir(tmp_path, fake, GEMMA3_4B)
    backend = load_backend(f"vllm:{path}")
    got = backend.llm.engine_args["max_model_len"]
    # was 2048: the top-level config has no max_position_embeddings; the window is 131072, and the
    # KV cache of a 24 GB card at 0.9 holds ~89k tokens after the ~8 GiB of weights
    assert 60_000 < got < 131072 and got % 256 == 0 and backend.max_length == got
    monkeypatch.setattr(memory, "cuda_memory", lambda: [(80 * GIB, 80 * GIB)])  # an 80 GB card: the whole window
    assert load_backend(f"vllm:{path}").llm.engine_args["max_model_len"] == 131072


def test_llama_8b_with_a_128k_window_starts_on_a_24gb_card(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "cuda_memory", lambda: CARD_24GB)
    path = model_dir(tmp_path, fake, LLAMA_8B)
    backend = load_backend(f"vllm:{path}")
    length = backend.llm.engine_args["max_model_len"]  # was 131072: 16 GiB of KV cache on top of 15 GiB of weights
    weights = 8.03e9 * 2
    kv = length * 2 * 32 * 8 * 128 * 2
    assert 16_384 <= length < 131072
    assert weights + kv + 2 * GIB <= 0.9 * 24 * GIB  # one sequence of that length fits beside the weights
    # a card too small for the weights: a clear refusal, not an engine error after minutes
    monkeypatch.setattr(memory, "cuda_memory", lambda: [(16 * GIB, 16 * GIB)])
    with pytest.raises(ValueError, match="no room for a KV cache"):
        load_backend(f"vllm:{path}")


def test_scoring_calls_sized_by_tokens_times_vocabulary(fake, tmp_path):
    from babelprobe.models.vllm_backend import VLLMOptions, load

    _, _, smollm2 = fake
    path = model_dir(tmp_path, fake, None)
    vocab = len(smollm2.tokenizer)
    budget_tokens = 40
    backend = load(f"vllm:{path}", LoadOptions(), VLLMOptions(logprobs_budget_gib=budget_tokens * vocab * 4 / GIB))
    requests = [LogLikelihood(context=f"Sentence number {i} says that the capital of France is", continuation=" Paris")
                for i in range(9)] + [LogLikelihood(context="word " * 60, continuation=" end")]
    sent: list[list[int]] = []
    generate = backend.llm.generate

    def record(prompts, params, use_tqdm=True):
        sent.append([len(p["prompt_token_ids"]) for p in prompts])
        return generate(prompts, params, use_tqdm=use_tqdm)

    backend.llm.generate = record
    got = backend.loglikelihood(requests)
    assert len(sent) > 1 and all(sum(call) <= budget_tokens for call in sent)  # was: one call of every prompt
    assert sum(len(call) for call in sent) == 9
    for ours, ref in zip(got[:9], smollm2.loglikelihood(requests[:9])):
        assert ours.token_logprobs == pytest.approx(ref.token_logprobs, abs=1e-4)
    assert isinstance(got[9], RequestFailure) and "over logprobs_budget_gib" in got[9].error  # alone, with sizes


def test_driver_view_loads_no_engine(fake, tmp_path, monkeypatch):
    import fake_vllm

    monkeypatch.setattr(memory, "cuda_memory", lambda: CARD_24GB)
    path = model_dir(tmp_path, fake, None)
    engines_before = len(fake_vllm.LLM.instances)
    view = load_backend(f"vllm:{path}", view=True)
    assert len(fake_vllm.LLM.instances) == engines_before and view.llm is None
    full = load_backend(f"vllm:{path}")
    assert view.fingerprint.key() == full.fingerprint.key()  # the replicas' answers match the cache
    assert view.has_chat_template and view.supported_kinds == full.supported_kinds
    with pytest.raises(RuntimeError, match="driver view"):
        view.loglikelihood([LogLikelihood(context="a b", continuation=" c")])


def test_pipeline_asks_for_a_view_only_under_ray(monkeypatch, tmp_path):
    from babelprobe import execute_run
    from babelprobe.families.cka.config import CKAConfig

    asked = []

    def fake_load(spec, config, view=False):
        asked.append((spec, view))
        raise execute_run.RunError("stop here")

    monkeypatch.setattr(execute_run, "load_model", fake_load)
    for executor in ("local", "ray"):
        with pytest.raises(execute_run.RunError):
            execute_run.run(CKAConfig(model="vllm:org/model", out=tmp_path / executor, cache=None, executor=executor))
    assert asked == [("vllm:org/model", False), ("vllm:org/model", True)]


def test_hf_model_placed_where_there_is_room_or_refused(smollm2, monkeypatch):
    from babelprobe.execute_run import load_model
    from babelprobe.stored_runs import RunError
    from babelprobe.families.eclektic.config import EclekticConfig

    need = 3 * GIB
    # a vllm: engine holds 90 % of cuda:0: the judge goes to cuda:1, or is refused when no GPU has room
    assert memory.place_model("hf:j", "auto", need, lambda: [(2 * GIB, 24 * GIB), (20 * GIB, 24 * GIB)]) == "cuda:1"
    assert memory.place_model("hf:j", "auto", need, lambda: []) == "cpu"
    assert memory.place_model("hf:j", "cpu", need, lambda: [(0, 24 * GIB)]) == "cpu"
    with pytest.raises(ValueError, match=r"hf:j needs about 3.0 GiB of GPU memory; free: cuda:0 2.0 of 24.0 GiB"):
        memory.place_model("hf:j", "cuda:0", need, lambda: [(2 * GIB, 24 * GIB), (20 * GIB, 24 * GIB)])
    # through the real load path: the bundled judge, every GPU full (as beside a vllm: engine)
    monkeypatch.setattr(memory, "cuda_memory", lambda: [(int(0.1 * GIB), 24 * GIB)])
    with pytest.raises(RunError, match=r"^model bundled:smollm2-135m-instruct could not be loaded: .* needs about "
                                       r"0\.\d GiB of GPU memory; free: cuda:0 0\.1 of 24\.0 GiB .*--device cpu"):
        load_model("bundled:smollm2-135m-instruct", EclekticConfig(out=Path("x"), device="auto"))


def test_a_kept_view_is_not_used_for_a_local_run(fake, tmp_path, monkeypatch):
    """A caller's backends dict holding the view of an --executor ray run: a local run loads the
    engine instead of recording every item as an error."""
    from babelprobe.families.eclektic.config import EclekticConfig
    from babelprobe.execute_run import run

    path = model_dir(tmp_path, fake, None)
    spec = f"vllm:{path}"
    kept = {spec: load_backend(spec, view=True)}
    outcome = run(EclekticConfig(model=spec, out=tmp_path / "run", cache=None, limit=1, figures=False, max_tokens=4),
                  backends=kept)
    assert outcome.manifest.errors == 0 and kept[spec].llm is not None
