# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.jacobian_step: each update rule against its defining formula.

Oracles: NumPy's ``pinv``/``eigvalsh``/``solve`` and the textbook formulas
``J⁺ Δe``, ``Jᵀ (J Jᵀ + λ² I)⁻¹ Δe`` and ``α Jᵀ Δe`` written out densely.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.jacobian_step import dls_step, pinv_step, transpose_step

FAST = settings(max_examples=30, deadline=None)
SHAPES = st.sampled_from([(3, 15), (3, 9), (6, 6), (6, 18), (6, 4), (3, 2)])


def _problem(seed: int, shape: tuple[int, int], rank_drop: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    m, k = shape
    J = rng.normal(size=(4, m, k))
    if rank_drop:
        u, s, vt = np.linalg.svd(J, full_matrices=False)
        s[:, -rank_drop:] = 0.0
        J = np.einsum("nmr,nr,nrk->nmk", u, s, vt)
    return J, rng.normal(size=(4, m)), rng.normal(size=(4, k))


@FAST
@given(st.integers(0, 2**32 - 1), SHAPES, st.integers(0, 1))
def test_pinv_step_is_the_pseudo_inverse(seed: int, shape: tuple[int, int], drop: int) -> None:
    J, de, z = _problem(seed, shape, drop)
    dp, sigma = pinv_step(J, de, 1e-9)
    expected = np.einsum("nkm,nm->nk", np.linalg.pinv(J, rcond=1e-9), de)
    np.testing.assert_allclose(dp, expected, atol=1e-9)
    s = np.linalg.svd(J, compute_uv=False)
    np.testing.assert_allclose(sigma, s[:, -1], atol=1e-12)
    # With a posture z the change lies in the null space: J Δp is unchanged.
    dpz, _ = pinv_step(J, de, 1e-9, z)
    np.testing.assert_allclose(np.einsum("nmk,nk->nm", J, dpz - dp), 0.0, atol=1e-9)


@FAST
@given(st.integers(0, 2**32 - 1), SHAPES, st.floats(0.05, 2.0))
def test_dls_step_fixed_damping_formula(seed: int, shape: tuple[int, int], lam: float) -> None:
    J, de, _ = _problem(seed, shape)
    dp, sigma = dls_step(J, de, lam, adaptive=False)
    m = shape[0]
    Jt = np.swapaxes(J, -1, -2)
    expected = np.einsum(
        "nkm,nm->nk", Jt, np.linalg.solve(J @ Jt + lam * lam * np.eye(m), de[..., None])[..., 0]
    )
    np.testing.assert_allclose(dp, expected, atol=1e-9)
    s = np.linalg.svd(J, compute_uv=False)
    np.testing.assert_allclose(sigma, s[:, -1], atol=1e-7)


def test_dls_adaptive_damping_only_near_singular_poses_and_shrinks_with_the_error() -> None:
    J, de, _ = _problem(1, (3, 9))
    far, _ = dls_step(J, de, 1e-3, adaptive=True)  # σ_min ≫ λ_max: undamped
    np.testing.assert_allclose(far, pinv_step(J, de, 1e-12)[0], atol=1e-9)
    Js, des, _ = _problem(2, (3, 9), rank_drop=1)
    damped, sigma = dls_step(Js, des, 0.5, adaptive=True)
    np.testing.assert_allclose(sigma, 0.0, atol=1e-7)
    capped = np.minimum(0.5, np.linalg.norm(des, axis=-1))
    for n in range(4):
        lam2 = capped[n] ** 2
        jj = Js[n] @ Js[n].T + lam2 * np.eye(3)
        np.testing.assert_allclose(damped[n], Js[n].T @ np.linalg.solve(jj, des[n]), atol=1e-7)


@FAST
@given(st.integers(0, 2**32 - 1), SHAPES)
def test_dls_posture_stays_in_the_damped_null_space(seed: int, shape: tuple[int, int]) -> None:
    J, de, z = _problem(seed, shape)
    lam = 1e-4
    dp, _ = dls_step(J, de, lam, adaptive=False)
    dpz, _ = dls_step(J, de, lam, adaptive=False, z=z)
    # J (N z) = J z − J J⁺_λ J z = λ² (J Jᵀ + λ²)⁻¹ J z: of order λ² / σ_min².
    change = np.einsum("nmk,nk->nm", J, dpz - dp)
    s = np.linalg.svd(J, compute_uv=False)[:, -1]
    bound = (lam / s) ** 2 * np.linalg.norm(np.einsum("nmk,nk->nm", J, z), axis=-1)
    assert np.all(np.linalg.norm(change, axis=-1) <= 1.01 * bound + 1e-12)


@FAST
@given(st.integers(0, 2**32 - 1), SHAPES)
def test_transpose_step_is_the_best_multiple_of_jt_de(seed: int, shape: tuple[int, int]) -> None:
    J, de, _ = _problem(seed, shape)
    dp, _ = transpose_step(J, de)
    g = np.einsum("nmk,nm->nk", J, de)
    # dp = α g, and α minimises |Δe − α J g|.
    alpha = np.sum(dp * g, axis=-1) / np.sum(g * g, axis=-1)
    np.testing.assert_allclose(dp, alpha[:, None] * g, atol=1e-10)
    jg = np.einsum("nmk,nk->nm", J, g)
    for delta in (-1e-3, 1e-3):
        worse = np.linalg.norm(de - (alpha + delta)[:, None] * jg, axis=-1)
        assert np.all(np.linalg.norm(de - alpha[:, None] * jg, axis=-1) <= worse + 1e-12)


@pytest.mark.parametrize("rule", ["transpose", "pinv", "dls", "dls_adaptive"])
def test_zero_and_exactly_singular_jacobians_give_finite_steps(rule: str) -> None:
    J = np.zeros((3, 3, 6))
    J[1, 0, 0] = 1.0  # rank 1
    J[2] = np.outer([1.0, 2.0, 3.0], [0.0, 1.0, 0.0, 0.0, 2.0, 0.0])  # rank 1
    de = np.array([[1.0, 2.0, 3.0], [0.0, 5.0, 0.0], [1.0, -1.0, 0.5]])
    z = np.ones((3, 6))
    if rule == "transpose":
        dp, sigma = transpose_step(J, de, z)
    elif rule == "pinv":
        dp, sigma = pinv_step(J, de, 1e-6, z)
    else:
        dp, sigma = dls_step(J, de, 0.1, rule == "dls_adaptive", z)
    assert np.all(np.isfinite(dp))
    assert np.all(np.isfinite(sigma))
    # σ from the Gram matrix is exact to about √ε · σ_max.
    np.testing.assert_allclose(sigma, 0.0, atol=1e-6)
    np.testing.assert_allclose(dp[0], z[0], atol=1e-12)  # J = 0: only the posture moves
