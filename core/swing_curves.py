# SPDX-License-Identifier: GPL-3.0-or-later
"""The boundary curves of a swing region and the alignment along them (:mod:`core.swing_region`).

A curve is a row ``(s0, s1, x0, x1, x2, z0, z1, z2)`` of
:attr:`core.swing_region.SwingRegion._curves`: the swings ``(x0 + x1 cos s + x2 sin s, z0 +
z1 cos s + z2 sin s)`` for ``s`` in ``[s0, s1]``. ``f = v·d`` is the alignment of a swing's
bone axis ``d = (−2wz, 1 − 2(x² + z²), 2wx)`` with a direction ``v``; its stationary points
along a curve are found by the Illinois variant of regula falsi, for a batch of brackets
(numpy) and for one (floats). Each function is written once for floats and ``(M,)`` arrays
(:class:`core.components.Ops`) where its arithmetic allows.
"""

from __future__ import annotations

import math
from typing import Any

from . import regula_falsi
from .components import ARRAY_OPS, Ops
from .rotations import FloatArray

#: Illinois steps: the bracket of a simple root shrinks superlinearly, below 1e-16 in
#: about a dozen steps from the sampling's 1/48 of a curve.
_ROOT_STEPS = 40


def speed(curve: FloatArray) -> float:
    """The largest ``|∂q/∂s|`` along a curve (a row of :attr:`SwingRegion._curves`), ``q =
    (w, x, 0, z)`` its swings: ``h`` on a line ``(c, h sin s)`` (``w = h cos s``), and on a
    quadrant ``(a cos s, b sin s)`` with ``m = max(a, b)``, from ``|∂q/∂s|² = a² sin² s +
    b² cos² s + ((a² − b²) sin s cos s / w)²`` and ``w² ≥ 1 − m²``:
    ``√(m² + ((a² − b²)/2)²/(1 − m²))`` (``r`` on the cone's circle)."""
    _, _, _, x1, x2, _, z1, z2 = (float(c) for c in curve)
    if x1 == x2 == 0.0 or z1 == z2 == 0.0:  # a line
        return max(abs(x2), abs(z1), abs(z2), abs(x1))
    a, b = abs(x1), abs(z2)
    m = max(a, b)
    if m >= 1.0:
        return math.inf
    return math.sqrt(m * m + (0.5 * (a * a - b * b)) ** 2 / (1.0 - m * m))


def illinois_one(
    curve: tuple[float, ...],
    v: tuple[float, float, float],
    lo: float,
    hi: float,
    f_lo: float,
    f_hi: float,
    keep: tuple[float, float] = (-math.inf, math.inf),
) -> float | None:
    """:func:`illinois` for one bracket, in plain floats (the arithmetic of :func:`along`
    and :func:`axis_gradient` written out, without their calls: the same roundings, the
    products shared by both gradient components computed once, and each factor 2 or 4
    moved onto a factor it scales exactly); ``None`` as soon as the root is known to lie
    outside ``keep`` (``lo`` only rises and ``hi`` only falls, and the root is one of them)."""
    _, _, x0, x1, x2, z0, z1, z2 = curve
    v0, v1, v2 = v
    two_v2, minus_two_v0 = 2.0 * v2, -2.0 * v0
    cos, sin, sqrt, ulp = math.cos, math.sin, math.sqrt, math.ulp
    # (the width where the search stops, 4·ulp(|hi| + 1), is at most this for any hi in the
    # bracket: a wider bracket goes on without computing it)
    wide = 4.0 * ulp(max(abs(lo), abs(hi)) + 1.0)
    side = 0
    probed = False
    for _ in range(_ROOT_STEPS):
        width = hi - lo
        if not ((width > wide or width > 4.0 * ulp(abs(hi) + 1.0)) and f_lo > 0.0 and f_hi < 0.0):
            break
        t = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        if not lo < t < hi:
            if probed:
                t = 0.5 * (lo + hi)
            else:  # (4 ulp inside the end it rounded onto, once: core.regula_falsi)
                delta = 4.0 * ulp(abs(hi) + 1.0)
                t, probed = (hi - delta if t >= hi else lo + delta), True
        c, s = cos(t), sin(t)
        x, z = x0 + x1 * c + x2 * s, z0 + z1 * c + z2 * s
        xx, zz = x * x, z * z
        r2 = xx + zz
        w = sqrt(1.0 - r2 if r2 < 1.0 else 0.0)
        ww, w4, xz2 = w * w, 4.0 * w, 2.0 * x * z
        gx = xz2 * v0 - x * w4 * v1 + (ww - xx) * two_v2
        gz = (ww - zz) * minus_two_v0 - z * w4 * v1 - xz2 * v2
        ft = gx * (x2 * c - x1 * s) + gz * (z2 * c - z1 * s)
        if ft > 0.0:
            if t > keep[1]:
                return None
            lo, f_lo = t, ft
            if side == 1:
                f_hi = 0.5 * f_hi
            side = 1
        else:
            if t < keep[0]:
                return None
            hi, f_hi = t, ft
            if side == -1:
                f_lo = 0.5 * f_lo
            side = -1
    return lo if abs(f_lo) <= abs(f_hi) else hi


def along(curve: Any, s: Any, ops: Ops = ARRAY_OPS) -> tuple[Any, Any, Any, Any]:
    """Points ``x, z`` and tangents ``tx, tz`` (along increasing ``s``, of positive
    length but for a line's ends) of a curve at ``s``: a row of :attr:`SwingRegion._curves`
    (8 floats, ``ops`` :data:`~core.components.FLOAT_OPS`) or its 8 columns for ``M``
    curves (``(M,)`` arrays each, ``s (M,)``)."""
    _, _, x0, x1, x2, z0, z1, z2 = curve
    cos, sin = ops.cos(s), ops.sin(s)
    return (
        x0 + x1 * cos + x2 * sin,
        z0 + z1 * cos + z2 * sin,
        x2 * cos - x1 * sin,
        z2 * cos - z1 * sin,
    )


def illinois(
    curves: FloatArray,
    v: FloatArray,
    lo: FloatArray,
    hi: FloatArray,
    f_lo: FloatArray,
    f_hi: FloatArray,
) -> FloatArray:
    """Roots ``(M,)`` of the slope of ``f`` along ``curves (M, 8)`` in brackets ``[lo, hi]``
    where it falls from ``f_lo > 0`` to ``f_hi <= 0`` (:func:`core.regula_falsi.illinois`)."""
    columns, directions = curves.T, v.T

    def slope(t: FloatArray) -> FloatArray:
        px, pz, tx, tz = along(columns, t)
        gx, gz = axis_gradient(px, pz, directions)
        return gx * tx + gz * tz

    return regula_falsi.illinois(slope, lo, hi, f_lo, f_hi, _ROOT_STEPS)


def axis_dot(x: Any, z: Any, v: Any, ops: Ops = ARRAY_OPS) -> Any:
    """``v · d``, ``d = (−2wz, 1 − 2(x² + z²), 2wx)`` the bone axis of swings ``(w, x, 0, z)``
    (floats with :data:`~core.components.FLOAT_OPS`, or arrays; ``v`` its 3 components)."""
    r2 = x * x + z * z
    w = ops.sqrt(ops.where(r2 < 1.0, 1.0 - r2, 0.0))
    return -2.0 * w * z * v[0] + (1.0 - 2.0 * r2) * v[1] + 2.0 * w * x * v[2]


def axis_gradient(x: Any, z: Any, v: Any, ops: Ops = ARRAY_OPS) -> tuple[Any, Any]:
    """``w·∇(v · d)`` with respect to ``x, z`` (the gradient scaled by ``w ≥ 0``, finite at
    a half turn): ``∂d/∂x = (2xz, −4xw, 2(w² − x²))/w``, ``∂d/∂z = (−2(w² − z²), −4zw,
    −2xz)/w`` (as :func:`axis_dot`)."""
    r2 = x * x + z * z
    w = ops.sqrt(ops.where(r2 < 1.0, 1.0 - r2, 0.0))
    v0, v1, v2 = v
    gx = 2.0 * x * z * v0 - 4.0 * x * w * v1 + 2.0 * (w * w - x * x) * v2
    gz = -2.0 * (w * w - z * z) * v0 - 4.0 * z * w * v1 - 2.0 * x * z * v2
    return gx, gz


__all__ = ["along", "axis_dot", "axis_gradient", "illinois", "illinois_one", "speed"]
