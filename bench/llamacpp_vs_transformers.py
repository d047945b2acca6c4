"""llama.cpp on the bundled GGUF files as they are (Q4) against transformers on the same files
dequantised to float32: CKA first-token on the bundled Polyglot-or-Not demo (6 languages),
throughput and the quantisation deltas per language (log-prob of the true object, known rate,
verdict agreement). Same process, no cache, back to back.

    OMP_WAIT_POLICY=PASSIVE python bench/llamacpp_vs_transformers.py --limit 20
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd  # noqa: E402

from babelprobe.families.cka.config import CKAConfig  # noqa: E402
from babelprobe.models import load_backend  # noqa: E402
from babelprobe.execute_run import run  # noqa: E402


def cka_items(spec: str, limit: int, batch_size: int, out: Path) -> tuple[pd.DataFrame, float]:
    backend = load_backend(spec, device="cpu")
    outcome = run(CKAConfig(model=spec, limit=limit, batch_size=batch_size, cache=None, out=out, overwrite=True),
                  backends={spec: backend})
    return pd.read_parquet(out / "items.parquet"), outcome.manifest.timings["requests"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=20, help="facts per language")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--models", default="gemma-3-270m,smollm2-135m-instruct")
    args = parser.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            hf, hf_s = cka_items(f"bundled:{name}", args.limit, args.batch_size, Path(tmp) / f"hf-{name}")
            ll, ll_s = cka_items(f"llamacpp:bundled:{name}", args.limit, args.batch_size, Path(tmp) / f"ll-{name}")
            both = hf.merge(ll, on=["fact_id", "language"], suffixes=("_hf", "_ll"))
            both["delta"] = both["logp_true_ll"] - both["logp_true_hf"]
            per_language = {
                lang: {
                    "facts": len(g),
                    "known_hf": round(float(g["known_hf"].mean()), 3),
                    "known_llamacpp": round(float(g["known_ll"].mean()), 3),
                    "verdicts_agree": round(float((g["known_hf"] == g["known_ll"]).mean()), 3),
                    "mean_abs_delta_logp_true": round(float(g["delta"].abs().mean()), 4),
                    "mean_delta_logp_true": round(float(g["delta"].mean()), 4),
                }
                for lang, g in both.groupby("language")
            }
            figures[name] = {
                "facts": len(both),
                "transformers_facts_per_s": round(len(hf) / hf_s, 2),
                "llamacpp_facts_per_s": round(len(ll) / ll_s, 2),
                "mean_abs_delta_logp_true": round(float(both["delta"].abs().mean()), 4),
                "max_abs_delta_logp_true": round(float(both["delta"].abs().max()), 4),
                "verdicts_agree": round(float((both["known_hf"] == both["known_ll"]).mean()), 3),
                "per_language": per_language,
            }
            print(json.dumps({name: figures[name]}, indent=1), flush=True)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "llamacpp_vs_transformers.json").write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
