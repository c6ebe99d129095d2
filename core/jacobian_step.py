# SPDX-License-Identifier: GPL-3.0-or-later
"""One update ``Δp`` of the Jacobian solvers from a Jacobian and a desired change.

Each rule solves ``J Δp ≈ Δe`` for a batch: ``J (N, m, k)`` (``m`` goal rows, ``k``
parameters, already weighted by the caller) and ``Δe (N, m)``; it returns ``Δp (N, k)``
and the smallest singular value of each ``J`` (``(N,)``, the ``min(m, k)``-th; it measures
how close the pose is to a singular one). An optional secondary change ``z (N, k)`` (the
posture bias) is added through the rule's null-space projector ``N = I − J⁺J`` so it does
not disturb the goal to first order.

* :func:`transpose_step` — ``Δp = α Jᵀ Δe`` (CSE169, reference 002, "Jacobian transpose").
  The reference leaves the gain open; ``α = ⟨Δe, J Jᵀ Δe⟩ / |J Jᵀ Δe|²`` is used, the
  factor that best realises ``Δe`` along the transpose direction (Buss, "Introduction to
  inverse kinematics with Jacobian transpose, pseudoinverse and damped least squares
  methods", 2004).
* :func:`pinv_step` — ``Δp = J⁺ Δe`` with ``J⁺ = V Σ⁺ Uᵀ`` from the SVD (reference 002,
  "pseudo-inverse" and "SVD"); singular values below ``cutoff × σ_max`` count as zero.
* :func:`dls_step` — damped least squares ``Δp = Jᵀ (J Jᵀ + λ² I)⁻¹ Δe`` (Wampler 1986;
  Nakamura & Hanafusa 1986). With ``adaptive`` the damping grows only near singular poses
  and shrinks with the error: ``λ² = min(λ_max, |g − e|)² (1 − (σ_min/λ_max)²)`` when
  ``σ_min < λ_max``, else ``0`` — Nakamura & Hanafusa's schedule with the singular
  region's width set to ``λ_max``, capped by the error as in Levenberg–Marquardt IK
  (Sugihara, "Solvability-unconcerned inverse kinematics by the Levenberg–Marquardt
  method", 2011), so that the last steps to a goal near a singular pose are not damped
  into a crawl. A floor
  ``10⁻¹² · tr(J Jᵀ)/m`` keeps the system solvable at exactly singular poses (``J = 0``,
  e.g. all joints locked, gives ``Δp = 0``).
"""

from __future__ import annotations

import numpy as np

from .rotations import FloatArray

#: Relative floor on the damping, so ``J Jᵀ + λ² I`` is invertible at exact singularities.
_DAMPING_FLOOR = 1e-12


def _gram(J: FloatArray) -> tuple[FloatArray, bool]:
    """The smaller Gram matrix: ``J Jᵀ`` ``(N, m, m)`` when ``m <= k`` (``True``), else ``JᵀJ``."""
    Jt = np.swapaxes(J, -1, -2)
    wide = J.shape[-2] <= J.shape[-1]
    return (J @ Jt if wide else Jt @ J), wide


def _smallest_eigenvalue_3(g: FloatArray) -> FloatArray:
    """Smallest eigenvalue ``(N,)`` of symmetric ``(N, 3, 3)`` matrices, in closed form.

    The trigonometric solution of the characteristic cubic (O. K. Smith, "Eigenvalues of a
    symmetric 3 × 3 matrix", CACM 4(4), 1961): with ``q = tr/3``, ``p² = |G − qI|²_F / 6``
    and ``r = det((G − qI)/p)/2``, the eigenvalues are ``q + 2p cos(acos(r)/3 + 2πj/3)``.
    Absolute accuracy ``~ε·|G|``, like LAPACK's, at a fraction of ``eigvalsh``'s cost on
    large stacks.
    """
    q = np.trace(g, axis1=-2, axis2=-1) / 3.0
    a, b, c = g[:, 0, 0] - q, g[:, 1, 1] - q, g[:, 2, 2] - q
    g01, g02, g12 = g[:, 0, 1], g[:, 0, 2], g[:, 1, 2]
    p = np.sqrt((a * a + b * b + c * c + 2.0 * (g01 * g01 + g02 * g02 + g12 * g12)) / 6.0)
    det = a * (b * c - g12 * g12) - g01 * (g01 * c - g12 * g02) + g02 * (g01 * g12 - b * g02)
    safe = np.where(p > 0.0, p, 1.0)
    r = np.clip(det / (2.0 * safe**3), -1.0, 1.0)
    low = q + 2.0 * p * np.cos(np.arccos(r) / 3.0 + 2.0 * np.pi / 3.0)
    return np.where(p > 0.0, low, q)


def _sigma_min(gram: FloatArray) -> FloatArray:
    """Smallest singular value ``(N,)`` from the Gram matrix's smallest eigenvalue."""
    small = gram.shape[-1] == 3
    low = _smallest_eigenvalue_3(gram) if small else np.linalg.eigvalsh(gram)[..., 0]
    return np.sqrt(np.maximum(low, 0.0))


def _solve_spd(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a⁻¹ b`` ``(N, m)`` for symmetric positive definite ``a (N, m, m)``.

    ``m = 3`` by an unrolled Cholesky factorisation (backward stable; pivots are kept
    positive), else LAPACK.
    """
    if a.shape[-1] != 3:
        return np.linalg.solve(a, b[..., None])[..., 0]
    tiny = 1e-300
    l00 = np.sqrt(np.maximum(a[:, 0, 0], tiny))
    l10 = a[:, 1, 0] / l00
    l20 = a[:, 2, 0] / l00
    l11 = np.sqrt(np.maximum(a[:, 1, 1] - l10 * l10, tiny))
    l21 = (a[:, 2, 1] - l20 * l10) / l11
    l22 = np.sqrt(np.maximum(a[:, 2, 2] - l20 * l20 - l21 * l21, tiny))
    y0 = b[:, 0] / l00
    y1 = (b[:, 1] - l10 * y0) / l11
    y2 = (b[:, 2] - l20 * y0 - l21 * y1) / l22
    x2 = y2 / l22
    x1 = (y1 - l21 * x2) / l11
    x0 = (y0 - l10 * x1 - l20 * x2) / l00
    return np.stack((x0, x1, x2), axis=-1)


def _floor(gram: FloatArray) -> FloatArray:
    """Smallest ``λ²`` per problem ``(N,)``: relative to ``tr/m``, and ``1`` for ``J = 0``."""
    trace = np.trace(gram, axis1=-2, axis2=-1)
    return np.where(trace > 0.0, _DAMPING_FLOOR * trace / gram.shape[-1], 1.0)


def _damped_solve(
    J: FloatArray, gram: FloatArray, wide: bool, lam2: FloatArray, rhs: FloatArray
) -> FloatArray:
    """``Jᵀ (J Jᵀ + λ²)⁻¹ rhs`` (wide) or ``(JᵀJ + λ²)⁻¹ Jᵀ rhs``, as ``(N, k)``."""
    eye = np.eye(gram.shape[-1])
    a = gram + lam2[:, None, None] * eye
    if wide:
        return np.einsum("nmk,nm->nk", J, _solve_spd(a, rhs))
    return _solve_spd(a, np.einsum("nmk,nm->nk", J, rhs))


def _damped_null(
    J: FloatArray, gram: FloatArray, wide: bool, lam2: FloatArray, z: FloatArray
) -> FloatArray:
    """``z − J⁺_λ J z`` with the damped inverse of :func:`_damped_solve`."""
    return z - _damped_solve(J, gram, wide, lam2, np.einsum("nmk,nk->nm", J, z))


def transpose_step(
    J: FloatArray, de: FloatArray, z: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """Jacobian-transpose update ``α Jᵀ Δe`` (module docstring); returns ``(Δp, σ_min)``."""
    g = np.einsum("nmk,nm->nk", J, de)
    jg = np.einsum("nmk,nk->nm", J, g)
    num = np.sum(de * jg, axis=-1)
    den = np.sum(jg * jg, axis=-1)
    alpha = np.divide(num, den, out=np.zeros_like(num), where=den > 1e-300)
    dp = alpha[:, None] * g
    gram, wide = _gram(J)
    if z is not None:
        dp = dp + _damped_null(J, gram, wide, _floor(gram), z)
    return dp, _sigma_min(gram)


def pinv_step(
    J: FloatArray, de: FloatArray, cutoff: float, z: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """SVD pseudo-inverse update ``J⁺ Δe``, small singular values cut; ``(Δp, σ_min)``."""
    u, s, vt = np.linalg.svd(J, full_matrices=False)
    keep = s > cutoff * s[:, :1]
    inv = np.divide(1.0, s, out=np.zeros_like(s), where=keep)
    coef = inv * np.einsum("nmr,nm->nr", u, de)
    dp = np.einsum("nrk,nr->nk", vt, coef)
    if z is not None:
        dp = dp + z - np.einsum("nrk,nr->nk", vt, keep * np.einsum("nrk,nk->nr", vt, z))
    return dp, s[:, -1]


def damped_step(
    J: FloatArray, de: FloatArray, lam2: FloatArray, z: FloatArray | None = None
) -> FloatArray:
    """``Jᵀ (J Jᵀ + λ² I)⁻¹ Δe`` for given ``λ² (N,)`` (not below the floor); ``(N, k)``."""
    gram, wide = _gram(J)
    lam2 = np.maximum(lam2, _floor(gram))
    dp = _damped_solve(J, gram, wide, lam2, de)
    if z is not None:
        dp = dp + _damped_null(J, gram, wide, lam2, z)
    return dp


def mean_gram(J: FloatArray) -> FloatArray:
    """``tr(J Jᵀ) / min(m, k)`` ``(N,)``: the mean squared singular value of ``J``."""
    return np.sum(J * J, axis=(-2, -1)) / max(1, min(J.shape[-2], J.shape[-1]))


def dls_step(
    J: FloatArray,
    de: FloatArray,
    damping: float,
    adaptive: bool,
    z: FloatArray | None = None,
    error: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Damped-least-squares update ``Jᵀ (J Jᵀ + λ² I)⁻¹ Δe``; returns ``(Δp, σ_min)``.

    ``error (N,)`` is ``|g − e|``, which caps the adaptive damping (module docstring);
    ``|Δe|`` when ``None``.
    """
    gram, wide = _gram(J)
    sigma = _sigma_min(gram)
    lam2 = np.full(sigma.shape, damping * damping)
    if adaptive:
        ratio = np.divide(sigma, damping, out=np.ones_like(sigma), where=damping > 0.0)
        size = np.linalg.norm(de, axis=-1) if error is None else error
        cap = np.minimum(damping, size)
        lam2 = np.where(ratio < 1.0, cap * cap * (1.0 - ratio * ratio), 0.0)
    lam2 = np.maximum(lam2, _floor(gram))
    dp = _damped_solve(J, gram, wide, lam2, de)
    if z is not None:
        dp = dp + _damped_null(J, gram, wide, lam2, z)
    return dp, sigma


__all__ = ["damped_step", "dls_step", "mean_gram", "pinv_step", "transpose_step"]
