"""Effect of each setting of `run memorization --preset authors` (issue 19 §1), one at a time and
all together, against babelprobe's defaults: mean PM and EM, and the paired per-window PM
difference (windows that are the same in both runs).

    python bench/shared_path_preset.py --model t5     # a tiny random T5 built here (tests/tiny_models.py)
    python bench/shared_path_preset.py --model gemma  # the bundled Gemma 3 270M on the demo corpus

Prints JSON and writes bench/results/shared_path_preset_<model>.json. On a CPU the authors'
float16 for decoder-only models is not applied (``--dtype auto`` stays float32 there)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from babelprobe.families.memorization.config import MemorizationConfig  # noqa: E402
from babelprobe.execute_run import run  # noqa: E402

T5_VARIANTS = {
    "babelprobe (default)": {},
    "no </s> on encoder input": {"encoder_eos": False},
    "whitespace pieces out of PM": {"pm_whitespace": "drop"},
    "authors' span placement": {"span_layout": "authors"},
    "random window offset": {"offset": "random"},
    "repetition penalty 1.2": {"repetition_penalty": 1.2},
    "authors' span EM (19 tokens)": {"span_em": "authors"},
    "--preset authors": {"preset": "authors"},
}
DECODER_VARIANTS = {
    "babelprobe (default)": {},
    "random window offset": {"offset": "random"},
    "repetition penalty 1.2": {"repetition_penalty": 1.2},
    "--preset authors": {"preset": "authors"},
}


def measure(model: str, data: Path, variants: dict, work: Path, **common) -> list[dict]:
    rows, base = [], None
    for name, settings in variants.items():
        out = work / name.replace(" ", "_").replace("/", "").replace("<", "").replace(">", "")
        run(MemorizationConfig(model=model, data=data, out=out, cache=None, device="cpu", bootstrap_resamples=100,
                               **common, **settings))
        items = pd.read_parquet(out / "items.parquet")
        items = items[items["status"] == "scored"].set_index(["sample_id", "prefix_tokens", "window_start"])
        row = {"setting": name, "windows": len(items), "EM": float(items["exact_match"].mean()),
               "PM": float(items["pm"].mean()), "scored_tokens": float(items["token_logprobs"].map(len).mean())}
        if base is None:
            base = items
        else:
            same = items.index.intersection(base.index)
            diff = (items.loc[same, "pm"] - base.loc[same, "pm"]).abs()
            row.update(paired_windows=len(same), mean_abs_pm_diff=float(diff.mean()) if len(same) else None,
                       max_abs_pm_diff=float(diff.max()) if len(same) else None,
                       em_changed=int((items.loc[same, "exact_match"] != base.loc[same, "exact_match"]).sum()))
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["t5", "gemma"], default="t5")
    parser.add_argument("--limit", type=int, default=2, help="gemma: samples per language")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.model == "t5":
            from tiny_models import build_tiny_t5

            t5 = build_tiny_t5(work, samples_per_language=10)
            rows = measure(f"hf:{t5 / 'model'}", t5 / "samples.jsonl", T5_VARIANTS, work, prefix_tokens=[35])
        else:
            from babelprobe.families.memorization.config import DEMO_MEMORIZATION

            rows = measure("bundled:gemma-3-270m", DEMO_MEMORIZATION, DECODER_VARIANTS, work, limit=args.limit,
                           prefix_tokens=[35, 85])
    text = json.dumps(rows, indent=2)
    print(text)
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / f"shared_path_preset_{args.model}.json").write_text(text)


if __name__ == "__main__":
    main()
