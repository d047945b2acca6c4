"""Metric tokenizers and the one ROUGE-L of babelprobe.

- :func:`script_tokens`: the tokenizer for overlap metrics in every script (OWL's BLEU and
  ROUGE-L on continuations, memorization's RM on words): NFKC + casefold; letters, marks and
  digits form words; punctuation and symbols are dropped; scripts written without spaces are cut
  into dictionary words (babelprobe.text.units). rouge-score's default tokenizer keeps only
  [a-z0-9] and would score every Cyrillic, Greek or Devanagari text as empty.
- :func:`rouge_l`: ROUGE-L F-measure (Lin 2004, §3: LCS-based F with beta = 1) on any unit
  sequences (memorization scores model token ids or words); :func:`rouge_l_text` is the same on
  two strings through :func:`script_tokens` (OWL's continuations). One LCS core,
  :func:`lcs_length`; the value equals the ``rouge-score`` package's rougeL fmeasure with the same
  tokenizer (tests/test_tokenize.py checks it against the package).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Hashable, Sequence

from babelprobe.text.units import text_units


def script_tokens(text: str) -> list[str]:
    """Words of ``text`` for overlap metrics, in every script (module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return text_units("".join(ch if unicodedata.category(ch)[0] in "LMN" else " " for ch in text))


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence (dynamic programming, O(len(a) * len(b)))."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l(hypothesis: Sequence[Hashable], reference: Sequence[Hashable]) -> float:
    """ROUGE-L F-measure in [0, 1]: P = LCS/len(hyp), R = LCS/len(ref), F = 2PR/(P+R) (the
    ``rouge-score`` package's rougeL fmeasure, on any units). Empty input scores 0."""
    if not hypothesis or not reference:
        return 0.0
    lcs = lcs_length(hypothesis, reference)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(hypothesis), lcs / len(reference)
    return 2 * precision * recall / (precision + recall)


def rouge_l_text(hypothesis: str, reference: str) -> float:
    """ROUGE-L F-measure of two texts over :func:`script_tokens`, 0-1."""
    return rouge_l(script_tokens(hypothesis), script_tokens(reference))
