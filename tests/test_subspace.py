"""Algorithm 1 (Shared Path App. A; LSAR, Xie et al.) against a direct numpy transcription, and its
properties: μ orthogonal to M_s, M_s orthonormal, M' − μ1ᵀ = M_s Γᵀ."""

from __future__ import annotations

import numpy as np
import pytest

from babelprobe.families.similarity.subspace import language_similarity, language_subspace


def transcription(M: np.ndarray, r: int):
    """Algorithm 1 line by line (μ' = mean over languages, μ = (M'⁺)ᵀ1 / ‖(M'⁺)ᵀ1‖²)."""
    d, L = M.shape
    one = np.ones((L, 1))
    mu_p = (M @ one) / L                                        # line 4
    U, S, Vt = np.linalg.svd(M - mu_p @ one.T)                  # line 5: Top-r SVD
    Ms_p, Gamma_p = U[:, :r], Vt.T[:, :r] @ np.diag(S[:r])
    M_p = mu_p @ one.T + Ms_p @ Gamma_p.T                       # line 6
    x = np.linalg.pinv(M_p).T @ one                             # line 8
    mu = x / (x.T @ x).item()
    U2, S2, Vt2 = np.linalg.svd(M_p - mu @ one.T)               # line 9
    return mu[:, 0], U2[:, :r], Vt2.T[:, :r] @ np.diag(S2[:r]), M_p


@pytest.mark.parametrize("d,L,r", [(16, 5, 2), (64, 10, 3), (40, 8, 7), (12, 3, 1)])
def test_matches_transcription_and_properties(d, L, r):
    rng = np.random.default_rng(d * 100 + L * 10 + r)
    M = rng.normal(size=(d, L)) + 3 * rng.normal(size=(d, 1))  # a shared component, as in real embeddings
    got = language_subspace(M, r)
    mu, Ms, Gamma, M_p = transcription(M, r)
    np.testing.assert_allclose(got.agnostic, mu, atol=1e-10)
    # singular vectors are defined up to sign: compare the projector and the reconstruction
    np.testing.assert_allclose(got.basis @ got.basis.T, Ms @ Ms.T, atol=1e-10)
    np.testing.assert_allclose(got.basis @ got.coordinates.T, Ms @ Gamma.T, atol=1e-9)
    np.testing.assert_allclose(got.basis.T @ got.basis, np.eye(r), atol=1e-10)
    # forced orthogonality: μ ⊥ M_s, and M' − μ1ᵀ lies entirely in M_s (rank r)
    assert np.abs(got.basis.T @ got.agnostic).max() < 1e-10 * np.linalg.norm(got.agnostic)
    np.testing.assert_allclose(M_p - np.outer(got.agnostic, np.ones(L)), got.basis @ got.coordinates.T, atol=1e-9)


def test_full_rank_projection_is_the_mean_minus_mu():
    # With r = L − 1, step 1 is exact (M' = M) and s_l = M_s M_sᵀ m_l = m_l − μ.
    rng = np.random.default_rng(7)
    M = rng.normal(size=(30, 6)) + 2.0
    sub = language_subspace(M, 5)
    projected = sub.basis @ (sub.basis.T @ M)
    np.testing.assert_allclose(projected, M - sub.agnostic[:, None], atol=1e-9)
    unit = projected / np.linalg.norm(projected, axis=0)
    np.testing.assert_allclose(language_similarity(M), unit.T @ unit, atol=1e-12)


def test_similarity_is_symmetric_cosine_with_unit_diagonal():
    rng = np.random.default_rng(3)
    sim = language_similarity(rng.normal(size=(50, 7)), rank=3)
    assert np.array_equal(sim, sim.T)
    np.testing.assert_allclose(np.diag(sim), 1.0)
    assert sim.min() >= -1 and sim.max() <= 1


def test_rank_and_shape_are_validated():
    M = np.ones((8, 4))
    with pytest.raises(ValueError, match="rank must be between 1 and 3"):
        language_subspace(M, 4)
    with pytest.raises(ValueError, match="at least 2 languages"):
        language_subspace(np.ones((8, 1)), 1)
    with pytest.raises(ValueError, match="d x L"):
        language_subspace(np.ones(8), 1)
