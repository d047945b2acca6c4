"""GPU memory arithmetic from a model's configuration, before anything is loaded: the default
maximum length of a vLLM engine, and the device an ``hf:`` model (a judge next to a ``vllm:``
model) is put on.

Everything is read from the *text* configuration: multimodal configurations (Gemma 3 >= 4B,
Llava, ...) keep the language model's sizes in a nested ``text_config`` and have no
``max_position_embeddings`` of their own (transformers' ``get_text_config``).

KV cache per token (vLLM's paged cache holds keys and values of every layer):

    kv_bytes_per_token = 2 x layers x kv_heads x head_dim x dtype bytes

Parameters (for the weights' bytes) are estimated from the configuration of a standard decoder:
embeddings (x2 unless tied), per layer attention (q, o: hidden x heads x head_dim; k, v: hidden x
kv_heads x head_dim) and a gated MLP (3 x hidden x intermediate, x experts for mixture-of-experts),
plus a vision tower's layers where the configuration has one. For Llama 3.1 8B this gives 8.03 B
(the published count). Quantised weights are smaller than estimated: the bound errs on the safe
side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

GIB = 1024**3
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "auto": 2}


def text_config(config: Any) -> Any:
    """The language model's configuration (nested ``text_config`` where there is one)."""
    get = getattr(config, "get_text_config", None)
    if callable(get):
        try:
            return get(decoder=True)
        except TypeError:  # older transformers: no decoder argument
            return get()
    return getattr(config, "text_config", None) or config


def context_length(config: Any) -> int | None:
    """The model's context window (``max_position_embeddings`` or its older names)."""
    for cfg in (text_config(config), config):
        for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = getattr(cfg, name, None)
            if isinstance(value, int) and value > 0:
                return value
    return None


def _head_dim(tc: Any) -> int:
    return int(getattr(tc, "head_dim", None) or tc.hidden_size // tc.num_attention_heads)


def kv_bytes_per_token(config: Any, dtype_bytes: int) -> int:
    """Bytes of keys and values one token holds in the cache, all layers (all GPUs together)."""
    tc = text_config(config)
    kv_heads = getattr(tc, "num_key_value_heads", None) or tc.num_attention_heads
    return 2 * int(tc.num_hidden_layers) * int(kv_heads) * _head_dim(tc) * dtype_bytes


def estimate_parameters(config: Any) -> int:
    """Parameter count of a standard decoder (module docstring), vision tower included."""
    tc = text_config(config)
    hidden, heads = int(tc.hidden_size), int(tc.num_attention_heads)
    kv_heads, head_dim = int(getattr(tc, "num_key_value_heads", None) or heads), _head_dim(tc)
    inter = int(getattr(tc, "intermediate_size", None) or 4 * hidden)
    experts = int(getattr(tc, "num_local_experts", None) or getattr(tc, "num_experts", None) or 1)
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    tied = bool(getattr(tc, "tie_word_embeddings", getattr(config, "tie_word_embeddings", False)))
    total = int(tc.vocab_size) * hidden * (1 if tied else 2) + int(tc.num_hidden_layers) * (attention + 3 * hidden * inter * experts)
    vision = getattr(config, "vision_config", None)
    if vision is not None and getattr(vision, "hidden_size", None) and getattr(vision, "num_hidden_layers", None):
        vh = int(vision.hidden_size)
        total += int(vision.num_hidden_layers) * (4 * vh * vh + 2 * vh * int(getattr(vision, "intermediate_size", 4 * vh)))
    return total


@dataclass(frozen=True)
class LengthBound:
    """The longest context the KV cache can hold after the weights (``vllm_max_length``)."""

    tokens: int  # rounded down to a multiple of 256
    kv_bytes_per_token: int
    weights_bytes: int
    budget_bytes: int  # what the engine may take on all its GPUs
    reason: str  # one line for logs and errors


def max_length_bound(config: Any, *, total_bytes: int, free_bytes: int, utilization: float, dtype_bytes: int,
                     tensor_parallel: int = 1, reserve_bytes: int = 2 * GIB) -> LengthBound:
    """How many tokens of KV cache fit on ``tensor_parallel`` GPUs like this one.

    vLLM takes ``utilization`` x total memory per GPU (it refuses to start if less is free, so the
    free memory bounds it too), loads the weights (split over the GPUs), keeps ``reserve_bytes``
    per GPU for activations, CUDA graphs and the sampler, and gives the rest to the KV cache; it
    refuses a ``max_model_len`` whose one sequence does not fit there. A maximum length at this
    bound lets the engine start with room for at least one sequence of that length."""
    per_gpu = min(int(total_bytes * utilization), int(free_bytes))
    budget = tensor_parallel * per_gpu
    weights = estimate_parameters(config) * dtype_bytes
    per_token = kv_bytes_per_token(config, dtype_bytes)
    room = budget - weights - tensor_parallel * reserve_bytes
    tokens = max(0, room // per_token) // 256 * 256
    reason = (f"KV cache {per_token / 1024:.0f} KiB/token; {tensor_parallel} GPU(s) x "
              f"{per_gpu / GIB:.1f} GiB ({utilization:g} of {total_bytes / GIB:.1f} GiB, {free_bytes / GIB:.1f} GiB free)"
              f" - weights ~{weights / GIB:.1f} GiB - reserve {tensor_parallel * reserve_bytes / GIB:.1f} GiB"
              f" -> {tokens} tokens")
    return LengthBound(tokens=int(tokens), kv_bytes_per_token=per_token, weights_bytes=weights, budget_bytes=budget,
                       reason=reason)


def cuda_memory() -> list[tuple[int, int]]:
    """(free, total) bytes of each visible CUDA device; [] without CUDA. Tests replace this."""
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.mem_get_info(i) for i in range(torch.cuda.device_count())]


def place_model(spec: str, device: str, need_bytes: int, memory: Callable[[], list[tuple[int, int]]] | None = None,
                ) -> str:
    """The device for a model needing about ``need_bytes`` (weights plus a margin): ``auto`` takes
    the CUDA device with the most free memory if the model fits there (else the CPU when there is
    no CUDA at all); an explicit CUDA device must have the room. Otherwise a ValueError names the
    need, what is free, and what to do (another model, e.g. a vLLM engine, may hold the memory)."""
    devices = (memory or cuda_memory)()
    if device == "cpu" or device.startswith(("mps", "meta")) or (device == "auto" and not devices):
        return "cpu" if device == "auto" else device
    if device == "auto":
        index = max(range(len(devices)), key=lambda i: devices[i][0])
    else:
        index = int(device.partition(":")[2] or 0)
        if index >= len(devices):
            return device  # torch names the missing device itself
    free = devices[index][0]
    if free >= need_bytes:
        return f"cuda:{index}"
    shown = ", ".join(f"cuda:{i} {f / GIB:.1f} of {t / GIB:.1f} GiB" for i, (f, t) in enumerate(devices))
    raise ValueError(
        f"{spec} needs about {need_bytes / GIB:.1f} GiB of GPU memory; free: {shown} (another model, e.g. a vllm: "
        "engine taking its gpu_memory_utilization, may hold the rest): pass --device cpu, or give the engine less")


def weights_need(config: Any, dtype_bytes: int, margin: float = 1.2) -> int:
    """Bytes an in-process (transformers) model needs: its weights and a margin for activations."""
    return math.ceil(estimate_parameters(config) * dtype_bytes * margin)
