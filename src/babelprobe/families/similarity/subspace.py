"""Language similarity from a model's own hidden states (Shared Path §4.1, App. A, Algorithm 1).

Algorithm 1 is LSAR (Xie et al.): split the languages' mean embeddings M (d × L) into a
language-agnostic component μ and a language-specific subspace M_s of rank r, with μ orthogonal
to M_s. Each language's mean embedding e_l is projected into the subspace, s_l = M_s M_sᵀ e_l,
and languages are compared by the cosine of their projections.

The paper prints step 1 as μ' = (1/d) M 1ᵀ and step 2 as μ = (1/‖M'⁺1‖²) M'⁺1; the LSAR authors'
code (and the algebra: μ' must be the mean over the L languages, and μ must solve μᵀm'_l = ‖μ‖²
for every column) reads μ' = (1/L) M 1 and μ = x / ‖x‖² with x = (M'⁺)ᵀ 1, which is what this
module computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LanguageSubspace:
    """Output of Algorithm 1: μ (d,), M_s (d × r, orthonormal columns), Γ (L × r)."""

    agnostic: np.ndarray
    basis: np.ndarray
    coordinates: np.ndarray


def language_subspace(means: np.ndarray, rank: int) -> LanguageSubspace:
    """Algorithm 1 on the d × L matrix of mean embeddings (one column per language)."""
    means = np.asarray(means, dtype=np.float64)
    if means.ndim != 2:
        raise ValueError(f"mean embeddings must be a d x L matrix, got shape {means.shape}")
    n_languages = means.shape[1]
    if n_languages < 2:
        raise ValueError("language similarity needs at least 2 languages")
    if not 1 <= rank <= n_languages - 1:
        # M − μ'1ᵀ has rank at most L − 1: a larger r would add arbitrary directions.
        raise ValueError(f"rank must be between 1 and {n_languages - 1} (number of languages - 1), got {rank}")
    ones = np.ones(n_languages)
    # 1) approximate M in low rank
    mean_prime = means @ ones / n_languages
    u, s, vt = np.linalg.svd(means - np.outer(mean_prime, ones), full_matrices=False)
    approx = np.outer(mean_prime, ones) + u[:, :rank] @ (vt[:rank].T * s[:rank]).T
    # 2) force orthogonality: μᵀ(m'_l − μ) = 0 for every language l
    x = np.linalg.pinv(approx).T @ ones
    agnostic = x / (x @ x)
    u, s, vt = np.linalg.svd(approx - np.outer(agnostic, ones), full_matrices=False)
    return LanguageSubspace(agnostic=agnostic, basis=u[:, :rank], coordinates=vt[:rank].T * s[:rank])


def default_rank(n_languages: int) -> int:
    """The paper gives no r; L − 1 keeps every direction in which the language means differ
    once the language-agnostic component is removed (step 1 is then exact)."""
    return n_languages - 1


def language_similarity(means: np.ndarray, rank: int | None = None) -> np.ndarray:
    """L × L cosine similarities of s_l = M_s M_sᵀ e_l, e_l the l-th column of ``means``."""
    means = np.asarray(means, dtype=np.float64)
    subspace = language_subspace(means, default_rank(means.shape[1]) if rank is None else rank)
    projected = subspace.basis @ (subspace.basis.T @ means)
    norms = np.linalg.norm(projected, axis=0)
    if np.any(norms == 0):
        raise ValueError("a language's mean embedding has no component in the language-specific subspace")
    unit = projected / norms
    cosine = unit.T @ unit
    return np.clip((cosine + cosine.T) / 2, -1.0, 1.0)  # exactly symmetric, so CSV rounding keeps it so
