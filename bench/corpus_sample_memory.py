"""Peak RSS and time of `babelprobe corpus sample` at 1x, 10x and 100x input, for the bounded
reservoir sampler (the default) and the paper's 5M shuffle buffer (issue 19 §3).

Each run is a fresh subprocess (`python -m babelprobe corpus sample ...`); its peak RSS is the
child's ru_maxrss (resource.getrusage(RUSAGE_CHILDREN), taken after each child alone). The corpus is
synthetic: 10 languages' <lang>.jsonl files of distinct ~1.5 kB documents (random words, so
`--identifier none`: the language-ID model's memory is a constant, not what is measured here).

    python bench/corpus_sample_memory.py --base-mb 1 --scales 1,10,100 --per-language 1000
    python bench/corpus_sample_memory.py --scales 1,10,100 --per-language 100 --langs l0   # cheaper
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

LANGS = ["l0", "l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8", "l9"]
WORDS = ("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud wind fire "
         "water earth light dark north south east west").split()


def make_corpus(folder: Path, megabytes: float, seed: int = 0) -> int:
    """<lang>.jsonl files totalling ``megabytes``; returns the number of documents."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    per_file = megabytes * 1e6 / len(LANGS)
    total = 0
    for lang in LANGS:
        written = 0
        with (folder / f"{lang}.jsonl").open("w", encoding="utf-8") as handle:
            i = 0
            while written < per_file:
                text = f"{lang} doc {i} " + " ".join(rng.choice(WORDS) for _ in range(230))
                line = json.dumps({"text": text}) + "\n"
                handle.write(line)
                written += len(line)
                i += 1
        total += i
    return total


def measure(corpus: Path, out: Path, sampler: str, per_language: int, buffer_size: int, langs: str) -> dict:
    cmd = [sys.executable, "-m", "babelprobe", "corpus", "sample", str(corpus), "--out", str(out),
           "--per-language", str(per_language), "--identifier", "none", "--sampler", sampler,
           "--buffer-size", str(buffer_size), *(["--langs", langs] if langs else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # kB on Linux: max over children so far
    manifest = json.loads((out / "manifest.json").read_text())
    read = sum(c["read"] for c in manifest["counts"].values())
    return {"sampler": sampler, "buffer_size": buffer_size, "peak_rss_mb": round(peak / 1024, 1),
            "grew": peak > before, "seconds": round(seconds, 1), "rows_read": read}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-mb", type=float, default=1.0)
    parser.add_argument("--scales", default="1,10,100")
    parser.add_argument("--per-language", type=int, default=1000)
    parser.add_argument("--langs", default="", help="sample only these (e.g. l0: the whole input is still read, "
                                                    "only l0's rows are filtered; a cheaper run on a loaded machine)")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}  cpus: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        for scale in [int(s) for s in args.scales.split(",")]:
            corpus = Path(tmp) / f"corpus{scale}"
            docs = make_corpus(corpus, args.base_mb * scale)
            size = sum(p.stat().st_size for p in corpus.iterdir()) / 1e6
            # largest first: ru_maxrss of RUSAGE_CHILDREN is a running maximum, so each setting runs
            # in its own python to get its own peak
            for sampler, buffer in (("shuffle", 5_000_000), ("reservoir", 5_000_000), ("reservoir", 0)):
                out = Path(tmp) / f"out-{scale}-{sampler}-{buffer}"
                row = subprocess.run([sys.executable, __file__, "--one", str(corpus), str(out), sampler, str(buffer),
                                      str(args.per_language), args.langs], capture_output=True, text=True,
                                     env=os.environ.copy())
                if row.returncode != 0:
                    raise SystemExit(row.stderr[-2000:])
                result = json.loads(row.stdout)
                print(f"{scale:>4}x  {size:7.1f} MB  {docs:>7} docs  {sampler:9} buffer {buffer:>9}: "
                      f"peak RSS {result['peak_rss_mb']:7.1f} MB  {result['seconds']:7.1f} s  "
                      f"rows read {result['rows_read']}", flush=True)
            for child in corpus.iterdir():
                child.unlink()
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        corpus, out, sampler, buffer, per_language, langs = sys.argv[2:8]
        print(json.dumps(measure(Path(corpus), Path(out), sampler, int(per_language), int(buffer), langs)))
    else:
        main()
