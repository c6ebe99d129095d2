# SPDX-License-Identifier: GPL-3.0-or-later
"""Small linear algebra in floats for :mod:`core.jacobian_single`.

The Gram matrix ``J Jᵀ`` or ``Jᵀ J`` (``d = min(m, k) ≤ 6``), its unrolled Cholesky solve
and smallest eigenvalue, ``J v`` and ``Jᵀ v``, and the update rules (transpose, pinv, DLS,
with the damped null-space posture term and damped retries) of :mod:`core.jacobian`.

Where a float version would be long and rarely used, one numpy call is made instead: the
smallest eigenvalue of a Gram matrix larger than ``3 × 3`` (pose goals), and the SVD of the
pseudo-inverse rule when ``J`` is nearly rank deficient (``σ_min² < 10⁻⁶ tr(JJᵀ)``; the
normal equations would lose the accuracy the SVD keeps there).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from operator import mul
from typing import Literal

import numpy as np

Rule = Literal["transpose", "pinv", "dls"]
# The batched iteration's constants (core.jacobian), shared so the paths cannot drift.
_DAMPING_FLOOR = 1e-12
#: pinv: below this ``σ_min² / tr(J Jᵀ)`` the SVD is used instead of the normal equations.
_PINV_NORMAL = 1e-6


# ---------------------------------------------------------------------- small linear algebra
def gram3(cols: Iterable[tuple[float, ...]]) -> tuple[float, float, float, float, float, float]:
    """The upper triangle ``(g00, g01, g02, g11, g12, g22)`` of ``J Jᵀ`` for a Jacobian of
    3 rows given as its columns (3-tuples), each sum in column order."""
    s00 = s01 = s02 = s11 = s12 = s22 = 0.0
    for x, y, z in cols:
        s00 += x * x
        s01 += x * y
        s02 += x * z
        s11 += y * y
        s12 += y * z
        s22 += z * z
    return s00, s01, s02, s11, s12, s22


def _gram(cols: list[tuple[float, ...]], m: int) -> tuple[list[list[float]], bool]:
    """``J Jᵀ`` (``m ≤ k``, wide) or ``Jᵀ J``, as nested lists; and ``wide``."""
    k = len(cols)
    if m == 3 and k >= 3:  # (the position and orientation goals: the same sums, unrolled)
        s00, s01, s02, s11, s12, s22 = gram3(cols)
        return [[s00, s01, s02], [s01, s11, s12], [s02, s12, s22]], True
    if m <= k:  # (each sum over the columns in order, as a loop would add them)
        rows = list(zip(*cols, strict=True))
        g = [[0.0] * m for _ in range(m)]
        for a in range(m):
            row = rows[a]
            for b in range(a, m):
                g[a][b] = g[b][a] = sum(map(mul, row, rows[b]))
        return g, True
    g = [[0.0] * k for _ in range(k)]
    for a in range(k):
        ca = cols[a]
        for b in range(a, k):
            cb = cols[b]
            s = 0.0
            for r in range(m):
                s += ca[r] * cb[r]
            g[a][b] = g[b][a] = s
    return g, False


def _smallest_eigenvalue(g: list[list[float]]) -> float:
    """Smallest eigenvalue of a symmetric Gram matrix (as :mod:`core.jacobian_step`)."""
    d = len(g)
    if d == 3:
        q = (g[0][0] + g[1][1] + g[2][2]) / 3.0
        a, b, c = g[0][0] - q, g[1][1] - q, g[2][2] - q
        g01, g02, g12 = g[0][1], g[0][2], g[1][2]
        p = math.sqrt((a * a + b * b + c * c + 2.0 * (g01 * g01 + g02 * g02 + g12 * g12)) / 6.0)
        if not p > 0.0:
            return q
        det = a * (b * c - g12 * g12) - g01 * (g01 * c - g12 * g02) + g02 * (g01 * g12 - b * g02)
        r = min(max(det / (2.0 * p**3), -1.0), 1.0)
        return q + 2.0 * p * math.cos(math.acos(r) / 3.0 + 2.0 * math.pi / 3.0)
    if d == 1:
        return g[0][0]
    if d == 2:
        a, b, c = g[0][0], g[0][1], g[1][1]
        return 0.5 * (a + c - math.hypot(a - c, 2.0 * b))
    return float(np.linalg.eigvalsh(np.array(g))[0])


def _sigma(g: list[list[float]]) -> float:
    return math.sqrt(max(_smallest_eigenvalue(g), 0.0))


def _solve_spd(a: list[list[float]], b: list[float]) -> list[float]:
    """``a⁻¹ b`` for symmetric positive definite ``a`` by Cholesky (pivots kept positive)."""
    d = len(b)
    tiny = 1e-300
    if d == 3:  # (the loops below, unrolled: the same operations in the same order)
        (a00, _, _), (a10, a11, _), (a20, a21, a22) = a
        l00 = math.sqrt(max(a00, tiny))
        l10 = a10 / l00
        l11 = math.sqrt(max(a11 - l10 * l10, tiny))
        l20 = a20 / l00
        l21 = (a21 - l20 * l10) / l11
        l22 = math.sqrt(max(a22 - l20 * l20 - l21 * l21, tiny))
        y0 = b[0] / l00
        y1 = (b[1] - l10 * y0) / l11
        y2 = (b[2] - l20 * y0 - l21 * y1) / l22
        x2 = y2 / l22
        x1 = (y1 - l21 * x2) / l11
        return [(y0 - l10 * x1 - l20 * x2) / l00, x1, x2]
    low = [[0.0] * d for _ in range(d)]
    for i in range(d):
        row = low[i]
        for j in range(i):
            s = a[i][j]
            other = low[j]
            for t in range(j):
                s -= row[t] * other[t]
            row[j] = s / other[j]
        s = a[i][i]
        for t in range(i):
            s -= row[t] * row[t]
        row[i] = math.sqrt(max(s, tiny))
    y = [0.0] * d
    for i in range(d):
        s = b[i]
        row = low[i]
        for t in range(i):
            s -= row[t] * y[t]
        y[i] = s / row[i]
    x = [0.0] * d
    for i in range(d - 1, -1, -1):
        s = y[i]
        for t in range(i + 1, d):
            s -= low[t][i] * x[t]
        x[i] = s / low[i][i]
    return x


def _jv(cols: list[tuple[float, ...]], v: list[float], m: int) -> list[float]:
    """``J v`` (``m`` floats) for columns ``cols`` and ``v`` (``k`` floats)."""
    out = [0.0] * m
    for col, s in zip(cols, v, strict=True):
        if s != 0.0:
            for r in range(m):
                out[r] += col[r] * s
    return out


def _jtv(cols: list[tuple[float, ...]], v: list[float]) -> list[float]:
    """``Jᵀ v`` (``k`` floats)."""
    if len(v) == 3:  # (the sums below, unrolled)
        x, y, z = v
        return [c[0] * x + c[1] * y + c[2] * z for c in cols]
    return [sum(map(mul, col, v)) for col in cols]


def _squares(v: list[float]) -> float:
    """``Σ v_i²`` (the sum in order)."""
    out = 0.0
    for x in v:
        out += x * x
    return out


def _floor(g: list[list[float]]) -> float:
    trace = sum(g[i][i] for i in range(len(g)))
    return _DAMPING_FLOOR * trace / len(g) if trace > 0.0 else 1.0


def _damped_solve(
    cols: list[tuple[float, ...]], g: list[list[float]], wide: bool, lam2: float, rhs: list[float]
) -> list[float]:
    """``Jᵀ (J Jᵀ + λ²)⁻¹ rhs`` (wide) or ``(JᵀJ + λ²)⁻¹ Jᵀ rhs``."""
    a = [[v + lam2 if i == j else v for j, v in enumerate(row)] for i, row in enumerate(g)]
    if wide:
        return _jtv(cols, _solve_spd(a, rhs))
    return _solve_spd(a, _jtv(cols, rhs))


def _damped_null(
    cols: list[tuple[float, ...]],
    g: list[list[float]],
    wide: bool,
    lam2: float,
    z: list[float],
    m: int,
) -> list[float]:
    back = _damped_solve(cols, g, wide, lam2, _jv(cols, z, m))
    return [a - b for a, b in zip(z, back, strict=True)]


def _rule_step(
    rule: Rule,
    cols: list[tuple[float, ...]],
    de: list[float],
    z: list[float] | None,
    m: int,
    damping: float,
    adaptive: bool,
    cutoff: float,
) -> tuple[list[float], float]:
    """One rule of :mod:`core.jacobian_step` for one problem: ``(Δp, σ_min)``."""
    g, wide = _gram(cols, m)
    if rule == "transpose":
        grad = _jtv(cols, de)
        jg = _jv(cols, grad, m)
        num = sum(a * b for a, b in zip(de, jg, strict=True))
        den = _squares(jg)
        alpha = num / den if den > 1e-300 else 0.0
        dp = [alpha * v for v in grad]
        if z is not None:
            null = _damped_null(cols, g, wide, _floor(g), z, m)
            dp = [a + b for a, b in zip(dp, null, strict=True)]
        return dp, _sigma(g)
    if rule == "pinv":
        low = _smallest_eigenvalue(g)
        trace = sum(g[i][i] for i in range(len(g)))
        if not low > _PINV_NORMAL * trace:
            return _pinv_svd(cols, de, z, m, cutoff)
        dp = _damped_solve(cols, g, wide, 0.0, de)
        if z is not None:
            null = _damped_null(cols, g, wide, 0.0, z, m)
            dp = [a + b for a, b in zip(dp, null, strict=True)]
        return dp, math.sqrt(low)
    sigma = _sigma(g)
    lam2 = damping * damping
    if adaptive:
        ratio = sigma / damping if damping > 0.0 else 1.0
        size = math.sqrt(_squares(de))
        cap = min(damping, size)
        lam2 = cap * cap * (1.0 - ratio * ratio) if ratio < 1.0 else 0.0
    lam2 = max(lam2, _floor(g))
    dp = _damped_solve(cols, g, wide, lam2, de)
    if z is not None:
        null = _damped_null(cols, g, wide, lam2, z, m)
        dp = [a + b for a, b in zip(dp, null, strict=True)]
    return dp, sigma


def _pinv_svd(
    cols: list[tuple[float, ...]], de: list[float], z: list[float] | None, m: int, cutoff: float
) -> tuple[list[float], float]:
    """:func:`core.jacobian_step.pinv_step` for one problem (numpy's SVD)."""
    from .jacobian_step import pinv_step

    J = np.array(cols).T[None]
    zz = None if z is None else np.array(z)[None]
    dp, s = pinv_step(J, np.array(de)[None], cutoff, zz)
    return dp[0].tolist(), float(s[0])


def _damped_retry(
    cols: list[tuple[float, ...]], de: list[float], z: list[float] | None, m: int, retry: int
) -> list[float]:
    """:func:`core.jacobian_step.damped_step` with ``λ² = 10^(r−3) · tr(J̃J̃ᵀ)/min(m, k)``."""
    g, wide = _gram(cols, m)
    total = sum(c * c for col in cols for c in col)
    lam2 = max(total / max(1, min(m, len(cols))) * 10.0 ** (retry - 3), _floor(g))
    dp = _damped_solve(cols, g, wide, lam2, de)
    if z is not None:
        null = _damped_null(cols, g, wide, lam2, z, m)
        dp = [a + b for a, b in zip(dp, null, strict=True)]
    return dp
