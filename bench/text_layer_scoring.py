"""Time the language layer where the demo's scoring meets it, on the demo's own stored answers.

Scores a stored demo run's ECLeKTiC items (word recall in both modes, the judge's answers parsed)
and OWL items (name cloze verdicts, the prefix probe's masks of the bundled passages) in a fresh
process: the first pass includes the lazy loading of tables and segmenters (what a run pays once),
the next passes are warm. Run it once per source tree, back to back, to compare two versions:

    python bench/text_layer_scoring.py --runs runs/demo
    PYTHONPATH=/path/to/old/src python bench/text_layer_scoring.py --runs runs/demo

Prints one Markdown row: tree, cold CPU seconds, warm CPU seconds per pass (the least of --passes),
calls per pass. CPU time, so that a loaded machine still compares.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd


def one_pass(eclektic: pd.DataFrame, owl: pd.DataFrame, passages: list[dict]) -> int:
    from babelprobe.data.perturbations import NameNotMaskable, mask_names
    from babelprobe.families.eclektic.metrics import parse_judge, word_recall
    from babelprobe.families.owl.metrics import name_cloze_correct

    calls = 0
    for row in eclektic.itertuples():
        for mode in ("normalized", "compat"):
            word_recall(row.answer, row.prediction or "", row.target_language, mode=mode)
            calls += 1
        for answer in json.loads(row.judge_answers) if isinstance(row.judge_answers, str) else (row.judge_answers or []):
            parse_judge(str(answer), row.target_language)
            calls += 1
    for row in owl[owl.task == "name_cloze"].itertuples():
        name_cloze_correct(row.output or "", list(row.gold_names), row.language)
        calls += 1
    for passage in passages:
        try:
            mask_names(passage["text"], passage.get("names") or [], passage["language"])
        except NameNotMaskable:
            pass
        calls += 1
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True, help="a demo output folder (eclektic/, owl/)")
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    import babelprobe

    eclektic = pd.read_parquet(args.runs / "eclektic" / "items.parquet")
    owl = pd.read_parquet(args.runs / "owl" / "items.parquet")
    bundled = Path(babelprobe.__file__).parent / "data" / "bundled" / "owl_demo.jsonl"
    passages = []
    for line in bundled.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        passages.append({"text": row.get("passage") or row.get("text") or "", "names": row.get("names") or
                         ([row["name"]] if row.get("name") else []), "language": row.get("language", "")})
    start = time.process_time()
    calls = one_pass(eclektic, owl, passages)
    cold = time.process_time() - start
    warm = []
    for _ in range(args.passes):
        start = time.process_time()
        one_pass(eclektic, owl, passages)
        warm.append(time.process_time() - start)
    tree = Path(babelprobe.__file__).parent.parent
    print(f"| {tree} | {cold:.3f} | {min(warm):.4f} | {calls} |")


if __name__ == "__main__":
    main()
