"""``--device`` checked before a run writes anything (issue 18): a name torch does not know
(``gpu``) or a device this machine lacks (``cuda`` on a CPU-only torch) is one line, not a
traceback from inside model loading after the run folder was made."""

from __future__ import annotations

import re

# what people type for "the GPU" that torch does not accept
_ALIASES = {"gpu": "cuda", "nvidia": "cuda", "cuda0": "cuda:0", "gpu0": "cuda:0", "metal": "mps"}


def check_device_name(device: str) -> str:
    """``device`` if torch takes it as a device string (or it is "auto"); else ValueError."""
    if device in ("auto", "cpu"):
        return device
    import torch

    try:
        torch.device(device)
    except (RuntimeError, ValueError):
        lowered = device.lower()
        hint = _ALIASES.get(lowered) or (f"cuda:{lowered[3:].lstrip(':')}" if re.fullmatch(r"gpu:?\d+", lowered) else None)
        advice = f"did you mean {hint}?" if hint else "use auto, cpu, cuda, cuda:N or mps"
        raise ValueError(f"{device!r} is not a torch device: {advice}") from None
    return device


def check_device_available(device: str) -> None:
    """ValueError unless this machine's torch can place tensors on ``device`` ("auto" always can)."""
    check_device_name(device)
    if device in ("auto", "cpu"):
        return
    import torch

    parsed = torch.device(device)
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            why = "is a CPU-only build" if torch.version.cuda is None else "sees no CUDA GPU"
            raise ValueError(f"--device {device}: torch {torch.__version__} {why}; use --device cpu or auto "
                             "(or a CUDA build of torch on a machine with a GPU)")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) visible; use "
                             f"cuda:0 to cuda:{torch.cuda.device_count() - 1}, auto or cpu")
    elif parsed.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {device}: MPS is not available on this machine; use --device cpu or auto")
