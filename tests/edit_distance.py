"""The reference edit distance of the typology tests (test_scale.py, test_shared_path_fidelity.py):
the textbook dynamic programme (Wagner and Fischer 1974) over sequences, independent of rapidfuzz,
against which babelprobe's LDN and LDND (analysis/typology.py) are checked."""

from __future__ import annotations

from typing import Sequence


def levenshtein(a: Sequence[object], b: Sequence[object]) -> int:
    """Insertions, deletions and substitutions turning ``a`` into ``b``, each costing 1."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]
