"""Peak RSS and time of the Shared Path pipeline (memorization + similarity + graph) on a
synthetic 95-language corpus at two sizes, with a bundled model (issue 19 §3).

Each command runs in its own subprocess (``python -m babelprobe ...``) and its peak RSS is that
child's ru_maxrss (read in a fresh wrapper process, so peaks never mix). Runs use ``--parts
language``: one language's records in memory at a time, written to parts/ as it finishes.

    python bench/shared_path_scale.py --model bundled:smollm2-135m-instruct --sizes 1,4 --device cpu

The memory curve of ``run memorization`` and ``report`` alone (issue 31), at 2k / 20k / 200k samples in
all, on a tiny random decoder (tests/tiny_models.py: 2 layers, hidden size 16, a word-level tokenizer
over these texts' words), since the model's own size is constant over the curve:

    python bench/shared_path_scale.py --tiny --steps memorization,report --total 2000,20000,200000

``report`` alone at 10x and 100x a finished memorization run, its items tiled (sample ids made
unique; the summary reads the same columns as at any size), where running the model at 200k
samples does not fit the time at hand:

    python bench/shared_path_scale.py --tile-report RUN_DIR --tile 1,10,100

``--peer /work/main/src`` measures every step a second time with that source tree's babelprobe
(PYTHONPATH), right after this one, on the same inputs: the back-to-back before/after.

``--steps`` also takes ``load`` (reading and validating the samples file alone, the run's first
step, in a fresh process: in load order, a chunk of 2,000 samples at a time with ``--parts none``,
a language at a time with ``language``), and ``--parts language,none`` measures both modes
(``none``: the run reads, runs and writes 2,000 samples at a time, family.py CHUNK_SAMPLES); every figure is also printed as
a markdown table row (``| samples | step | parts | peak RSS | wall | CPU |``) for bench/README.md.

Texts are random words (the model's memorization of them is not the point: memory and time are).
The languages are the study's 95 (mC4's 101 less mn, la, fy, co, hmn, haw), as its code writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAPER_LANGUAGES = (
    "en ru es de fr it pt pl nl tr ja vi id cs zh fa ar sv ro el uk hu da fi no bg hi sk ko th ca ms iw lt sl mr bn "
    "et lv az gl cy sq ta sr ne lb hy kk ka mt af fil is mk ml ur be eu tg te kn ky sw so my uz km sd gu jv zu si eo "
    "ga pa ceb mg ps sn gd ku su ht ha ny am yi lo mi sm ig xh st yo"
).split()
WORDS = ("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud wind fire "
         "water earth light dark north south east west city house tree bird sea sun moon").split()


def make_inputs(folder: Path, samples: int, sentences: int, languages: list[str], seed: int = 0
                ) -> tuple[Path, Path, Path]:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    mem, par, tok = folder / "samples.jsonl", folder / "parallel.jsonl", folder / "tokens.csv"
    with mem.open("w") as handle:
        for lang in languages:
            for i in range(samples):
                text = " ".join(rng.choice(WORDS) for _ in range(60))
                handle.write(json.dumps({"id": f"{lang}-{i}", "language": lang, "text": text}) + "\n")
    with par.open("w") as handle:
        for i in range(sentences):
            for lang in languages:
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16)))
                handle.write(json.dumps({"id": f"s{i}", "language": lang, "text": text}) + "\n")
    tok.write_text("language,tokens\n" + "".join(f"{lang},{rng.uniform(0.05, 3000):.3f}\n"
                                                 for lang in languages))
    return mem, par, tok


# the run's loading alone: checked in one pass and read back in load order a chunk at a time (--parts
# none: SampleParts.in_order, as MemorizationFamily.load_chunks reads it) or one language at a time
# (--parts language: SampleParts)
LOAD_IN_ORDER = ("import sys, itertools\nfrom babelprobe.families.memorization.data import SampleParts, load_samples\n"
                 "if not hasattr(SampleParts, 'in_order'): load_samples(sys.argv[1]); sys.exit()  # a peer before it\n"
                 "p = SampleParts(sys.argv[1], by_language=False); s = p.in_order()\n"
                 "all(list(itertools.islice(s, 2000)) for _ in range(-(-p.total // 2000))); p.close()")
LOAD_STREAMED = ("import sys; from babelprobe.families.memorization.data import SampleParts; p = SampleParts(sys.argv[1]); "
                 "all(p.samples(lang) is not None for lang in p.languages); p.close()")  # one part kept at a time


def one(cmd: list[str]) -> dict:
    """Run ``cmd``; its peak RSS (kB -> MB) and seconds."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout)[-1500:]}
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "seconds": round(seconds, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1)}


def measured(cmd: list[str], source: str | None = None) -> dict:
    """``one(cmd)`` in a fresh wrapper process; ``source``: a babelprobe source folder put first on
    PYTHONPATH (the peer, e.g. main's src/, measured back to back with this tree)."""
    env = {**os.environ, "PYTHONPATH": source} if source else None
    wrapper = subprocess.run([sys.executable, __file__, "--one", json.dumps(cmd)], capture_output=True, text=True,
                             env=env)
    return json.loads(wrapper.stdout) if wrapper.returncode == 0 else {"error": wrapper.stderr[-1500:]}


def tiny_model(folder: Path) -> str:
    """A tiny random decoder whose word-level tokenizer knows WORDS (tests/tiny_models.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import tiny_models
    from transformers import LlamaConfig, LlamaForCausalLM

    tiny_models.WORDS = list(WORDS)  # the vocabulary of these texts
    config = LlamaConfig(**{**tiny_models.DECODER, "vocab_size": len(tiny_models.SPECIALS) + len(WORDS),
                            "max_position_embeddings": 128})
    tiny_models.save_tiny(tiny_models.tiny_model(LlamaForCausalLM, config), folder)
    return f"hf:{folder}"


def tiled(run: Path, factor: int, out: Path) -> Path:
    """A copy of run directory ``run`` with its items.parquet repeated ``factor`` times."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(run, out, ignore=shutil.ignore_patterns("parts", "items.parquet"))
    table = pq.read_table(run / "items.parquet")
    with pq.ParquetWriter(out / "items.parquet", table.schema) as writer:
        for k in range(factor):
            ids = pa.array([f"{i}~{k}" for i in table.column("sample_id").to_pylist()])
            writer.write_table(table.set_column(table.schema.get_field_index("sample_id"), "sample_id", ids))
    return out


def tile_report(run: Path, factors: list[int], keep: Path, peer: str | None = None) -> None:
    """Peak RSS of ``babelprobe report`` on ``run`` tiled by each factor (and with ``peer``'s code)."""
    import pyarrow.parquet as pq

    print(f"report of {run} tiled x{factors}; load {os.getloadavg()}, cpus {os.cpu_count()}", flush=True)
    for factor in factors:
        folder = tiled(run, factor, keep / f"x{factor}")
        items = pq.read_metadata(folder / "items.parquet").num_rows
        size = (folder / "items.parquet").stat().st_size / 1e6
        for label, source in [("this tree", None), *([("peer", peer)] if peer else [])]:
            result = measured([sys.executable, "-m", "babelprobe", "report", str(folder)], source)
            print(f"x{factor:<4} {items:>7} items ({size:7.1f} MB parquet)  report ({label}): " +
                  (f"peak RSS {result['peak_rss_mb']:8.1f} MB  {result['seconds']:7.1f} s wall" if "error" not in result
                   else f"failed: {result['error']}"), flush=True)
            if "error" not in result:
                print(markdown_row(items, f"report (x{factor} tiled, {label})", "-", result), flush=True)


def markdown_row(items: int, step: str, parts: str, result: dict) -> str:
    return (f"| {items:,} | {step} | {parts} | {result['peak_rss_mb']:,.0f} MB | {result['seconds']:,.1f} s | "
            f"{result['cpu_seconds']:,.1f} s |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="bundled:smollm2-135m-instruct")
    parser.add_argument("--tiny", action="store_true", help="a tiny random decoder instead of --model")
    parser.add_argument("--sizes", default="1,4", help="samples per language; parallel sentences = 2x this")
    parser.add_argument("--total", default=None, help="samples in all (e.g. 2000,20000,200000), instead of --sizes")
    parser.add_argument("--steps", default="memorization,similarity,graph",
                        help="of load (reading the samples alone), memorization, report (the memorization "
                             "run's summary alone), similarity, graph")
    parser.add_argument("--parts", default="language", help="language, none, or both: language,none")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--keep", default=None, help="keep the runs in this folder")
    parser.add_argument("--languages", type=int, default=95, help="the first N of the 95 (a smoke run)")
    parser.add_argument("--tile-report", default=None, help="a finished memorization run: measure `report` on it tiled")
    parser.add_argument("--tile", default="1,10,100", help="with --tile-report: the factors")
    parser.add_argument("--peer", default=None, help="another babelprobe src/ folder (e.g. main's): every "
                        "step is measured with it too, right after this tree, on the same inputs")
    args = parser.parse_args()
    if args.tile_report:
        with tempfile.TemporaryDirectory() as tmp:
            tile_report(Path(args.tile_report), [int(f) for f in args.tile.split(",")], Path(args.keep or tmp),
                        args.peer)
        return
    languages = PAPER_LANGUAGES[:args.languages]
    base = [sys.executable, "-m", "babelprobe"]
    sizes = ([max(1, int(t) // len(languages)) for t in args.total.split(",")] if args.total
             else [int(s) for s in args.sizes.split(",")])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp)
        model = tiny_model(root / "tiny-model") if args.tiny else args.model
        print(f"model {model}, device {args.device}, {len(languages)} languages, --parts {args.parts}; "
              f"load {os.getloadavg()}, cpus {os.cpu_count()}", flush=True)
        rows = []
        for size, parts in [(size, parts) for size in sizes for parts in args.parts.split(",")]:
            folder = root / f"size{size}" / parts
            mem, par, tok = make_inputs(folder, size, 2 * size, languages)
            common = ["--model", model, "--device", args.device, "--no-cache", "--parts", parts]
            steps = {
                "load": [sys.executable, "-c", LOAD_STREAMED if parts == "language" else LOAD_IN_ORDER, str(mem)],
                "memorization": base + ["run", "memorization", "--data", str(mem), "--out", str(folder / "mem"),
                                        "--prefix-tokens", "20", "--suffix-tokens", "8", *common],
                "report": base + ["report", str(folder / "mem")],
                "similarity": base + ["run", "similarity", "--data", str(par), "--out", str(folder / "sim"),
                                      "--layers", "all", "--typology", "none", "--no-figures", *common],
                "graph": base + ["graph", "correlate", "--similarity", str(folder / "sim"), "--memorization",
                                 str(folder / "mem"), "--tokens", str(tok), "--theta", "0.5", "--out",
                                 str(folder / "graph"), "--no-figures"],
            }
            for (name, cmd), (label, source) in [(step, who) for step in steps.items()
                                                 for who in [("", None), *([(" (peer)", args.peer)] if args.peer else [])]]:
                if name not in args.steps.split(","):
                    continue
                result = measured(cmd, source)
                if "error" in result:
                    print(f"size {size}: {name}{label} failed: {result['error']}", flush=True)
                    continue
                items = {"load": len(languages) * size, "memorization": len(languages) * size,
                         "report": len(languages) * size, "similarity": len(languages) * 2 * size,
                         "graph": len(languages)}[name]
                print(f"size {size:>3}/lang  {name:12} {items:>6} items  --parts {parts:8}  peak RSS "
                      f"{result['peak_rss_mb']:8.1f} MB  {result['seconds']:8.1f} s wall  "
                      f"{result['cpu_seconds']:8.1f} s CPU", flush=True)
                rows.append(markdown_row(items, name + label, parts, result))
    print("\n| samples | step | --parts | peak RSS | wall | CPU |\n|---:|---|---|---:|---:|---:|", flush=True)
    print("\n".join(rows), flush=True)
    print(f"load {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(one(json.loads(sys.argv[2]))))
    else:
        main()
