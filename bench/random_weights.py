"""A model directory with the architecture and tokenizer of another, and random weights.

For throughput figures where the real weights cannot travel (a GPU machine that reaches no network
and takes a 64 MiB working tree: the bundled Gemma is 245 MB even quantised): the FLOPs, shapes and
kernels of a forward pass are those of the real model, its answers are not. Never use its scores.

    python bench/random_weights.py --config DIR_WITH_CONFIG_AND_TOKENIZER --out /tmp/gemma-random

``--config`` holds config.json and the tokenizer files (tokenizer.json may be gzipped).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.config.iterdir():
        if path.name.endswith(".gz"):
            with gzip.open(path) as src, open(args.out / path.name.removesuffix(".gz"), "wb") as dst:
                shutil.copyfileobj(src, dst)
        elif path.name != "babelprobe_source.json":
            shutil.copy(path, args.out / path.name)
    torch.manual_seed(args.seed)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(args.out))  # the config's own init
    model.save_pretrained(args.out)
    print(f"{args.out}: {model.num_parameters():,} parameters, random (seed {args.seed})")


if __name__ == "__main__":
    main()
