"""Index build time and size per MB of corpus, and query time per passage, for `babelprobe corpus
index` / `corpus presence` (OWL App. B.4) on synthetic multilingual corpora.

    python bench/presence_bench.py --mb 1 10 --passages 200

Corpora are seeded random text (Latin, Cyrillic and CJK words, ~1 KB documents); passages are half
cut from the corpus (exact hits), half fresh text (each runs the full window fallback)."""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from babelprobe.families.owl.presence import LocalIndex, Passage, build_index, run_presence

ALPHABETS = ("abcdefghijklmnopqrstuvwxyz", "абвгдежзиклмнопрстуфхцчшщэюя", "東京天気晴雨山川花鳥風月日本語中文")


def word(rng: random.Random) -> str:
    alphabet = rng.choice(ALPHABETS)
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 8)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--passages", type=int, default=200)
    args = parser.parse_args()
    for mb in args.mb:
        rng = random.Random(0)
        with tempfile.TemporaryDirectory(prefix="presence-bench-") as tmp:
            corpus, docs, size = Path(tmp) / "corpus.jsonl", [], 0
            with corpus.open("w", encoding="utf-8") as handle:
                while size < mb * 1e6:
                    doc = " ".join(word(rng) for _ in range(200))
                    docs.append(doc)
                    size += len(doc.encode("utf-8"))
                    handle.write(json.dumps({"text": doc}, ensure_ascii=False) + "\n")
            manifest = build_index([corpus], Path(tmp) / "idx")
            passages = []
            for i in range(args.passages):
                if i % 2 == 0:
                    words = rng.choice(docs).split()
                    start = rng.randrange(0, len(words) - 60)
                    passages.append(Passage(str(i), " ".join(words[start:start + 60])))
                else:
                    passages.append(Passage(str(i), " ".join(word(rng) for _ in range(60))))
            index = LocalIndex(Path(tmp) / "idx")
            started = time.perf_counter()
            done = run_presence(passages, index)
            seconds = time.perf_counter() - started
            print(json.dumps({
                "corpus_mb": round(manifest.corpus_bytes / 1e6, 2), "documents": manifest.documents,
                "build_s": manifest.build_seconds, "build_s_per_mb": round(manifest.build_seconds / (manifest.corpus_bytes / 1e6), 2),
                "index_mb": round(manifest.index_bytes / 1e6, 2),
                "index_bytes_per_corpus_byte": round(manifest.index_bytes / manifest.corpus_bytes, 2),
                "passages": len(passages), "counts": done.queries,
                "ms_per_passage": round(1000 * seconds / len(passages), 2),
                "ms_per_count": round(1000 * seconds / done.queries, 3),
            }))


if __name__ == "__main__":
    main()
