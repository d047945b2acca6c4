"""The machine a time was measured on: CPU cores and torch's fp32 matmul GFLOP/s
(babelprobe.models.devices.machine_speed, also printed at the end of `babelprobe demo`).

    python bench/machine_gflops.py [--size 512] [--seconds 3]

Run it on an idle machine next to a timing: a figure taken while other work shares the cores is
what that work left, not what the hardware does."""

from __future__ import annotations

import argparse

from babelprobe.models.devices import machine_speed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="matrix side (default 512)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time spent multiplying (default 3)")
    args = parser.parse_args()
    for size in sorted({256, args.size, 1024}):
        print(f"size {size}: {machine_speed(size, args.seconds)}")


if __name__ == "__main__":
    main()
