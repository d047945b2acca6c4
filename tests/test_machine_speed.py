"""The machine a time was measured on (issue 18: every time in the README states cores and
measured fp32 GFLOP/s): a short torch matmul benchmark, printed by `babelprobe demo`."""

from __future__ import annotations

import os

from babelprobe.models.devices import machine_speed


def test_machine_speed_measures_fp32_matmuls():
    speed = machine_speed(size=128, seconds=0.2)
    assert speed.cores == os.cpu_count() and speed.torch_threads >= 1
    assert 0.01 < speed.gflops < 1e6  # a real measurement: positive, and no CPU does a petaflop
    assert str(speed).startswith(f"{os.cpu_count()} CPU cores (") and str(speed).endswith("GFLOP/s")
