"""``--device`` checked before a run writes anything: a name torch does not know
(``gpu``) or a device this machine lacks (``cuda`` on a CPU-only torch) is one line, not a
traceback from inside model loading after the run folder was made."""

from __future__ import annotations

import re
from dataclasses import dataclass

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


def machine_speed(size: int = 512, seconds: float = 1.0) -> MachineSpeed:
    """This machine's CPU cores and its measured fp32 matrix-multiply rate in torch (GFLOP/s), so a
    time can be read against the machine it was taken on (the demo prints it beside its stage
    times; bench/machine_gflops.py). Square ``size`` x ``size`` matmuls, repeated for about
    ``seconds`` after one warm-up; 2·size³ floating-point operations each. On a shared or busy
    machine the figure is what the run got, not what the hardware can do."""
    import os
    import time

    import torch

    a = torch.randn(size, size, dtype=torch.float32)
    b = torch.randn(size, size, dtype=torch.float32)
    torch.mm(a, b)  # warm-up: thread pool, caches
    count, start = 0, time.perf_counter()
    while True:
        torch.mm(a, b)
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    return MachineSpeed(cores=os.cpu_count() or 1, torch_threads=torch.get_num_threads(),
                        gflops=2 * size**3 * count / elapsed / 1e9)


@dataclass(frozen=True)
class MachineSpeed:
    """Cores, torch's intra-op threads and measured fp32 GFLOP/s (``machine_speed``)."""

    cores: int
    torch_threads: int
    gflops: float

    def __str__(self) -> str:
        return f"{self.cores} CPU cores ({self.torch_threads} torch threads), fp32 matmul {self.gflops:.1f} GFLOP/s"
