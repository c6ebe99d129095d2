# SPDX-License-Identifier: GPL-3.0-or-later
"""3×3 matrices as row-major 9-tuples of floats, for the one-target CCD path.

Products ``A B``, ``Aᵀ B``, ``A Bᵀ``, ``Aᵀ v`` (``A v`` is :func:`core.components.mapply`),
the Frobenius product, the turn about a unit axis, one Newton step of re-orthonormalisation
and the quaternion (wxyz) of a rotation matrix; row-major as :func:`core.components.qmatrix`.
The float twins of the matrix steps of :mod:`core.ccd_setup` and :mod:`core.ccd_sweep`
(:mod:`core.ccd_single`).
"""

from __future__ import annotations

import math

import numpy as np

from .components import Quat, Vec

M9 = tuple[float, float, float, float, float, float, float, float, float]

_I9: M9 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


def _m9(a: np.ndarray) -> M9:
    return tuple(float(x) for x in np.asarray(a).reshape(9))  # type: ignore[return-value]


def _mm(a: M9, b: M9) -> M9:
    """``a · b``."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = b
    return (
        a0 * b0 + a1 * b3 + a2 * b6,
        a0 * b1 + a1 * b4 + a2 * b7,
        a0 * b2 + a1 * b5 + a2 * b8,
        a3 * b0 + a4 * b3 + a5 * b6,
        a3 * b1 + a4 * b4 + a5 * b7,
        a3 * b2 + a4 * b5 + a5 * b8,
        a6 * b0 + a7 * b3 + a8 * b6,
        a6 * b1 + a7 * b4 + a8 * b7,
        a6 * b2 + a7 * b5 + a8 * b8,
    )


def _mtm(a: M9, b: M9) -> M9:
    """``aᵀ · b``."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = b
    return (
        a0 * b0 + a3 * b3 + a6 * b6,
        a0 * b1 + a3 * b4 + a6 * b7,
        a0 * b2 + a3 * b5 + a6 * b8,
        a1 * b0 + a4 * b3 + a7 * b6,
        a1 * b1 + a4 * b4 + a7 * b7,
        a1 * b2 + a4 * b5 + a7 * b8,
        a2 * b0 + a5 * b3 + a8 * b6,
        a2 * b1 + a5 * b4 + a8 * b7,
        a2 * b2 + a5 * b5 + a8 * b8,
    )


def _mmt(a: M9, b: M9) -> M9:
    """``a · bᵀ``."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = b
    return (
        a0 * b0 + a1 * b1 + a2 * b2,
        a0 * b3 + a1 * b4 + a2 * b5,
        a0 * b6 + a1 * b7 + a2 * b8,
        a3 * b0 + a4 * b1 + a5 * b2,
        a3 * b3 + a4 * b4 + a5 * b5,
        a3 * b6 + a4 * b7 + a5 * b8,
        a6 * b0 + a7 * b1 + a8 * b2,
        a6 * b3 + a7 * b4 + a8 * b5,
        a6 * b6 + a7 * b7 + a8 * b8,
    )


def _mtv(m: M9, v: Vec) -> Vec:
    x, y, z = v
    return (
        m[0] * x + m[3] * y + m[6] * z,
        m[1] * x + m[4] * y + m[7] * z,
        m[2] * x + m[5] * y + m[8] * z,
    )


def _fdot(a: M9, b: M9) -> float:
    """Frobenius product ``Σ a_ij b_ij``."""
    return (
        a[0] * b[0]
        + a[1] * b[1]
        + a[2] * b[2]
        + a[3] * b[3]
        + a[4] * b[4]
        + a[5] * b[5]
        + a[6] * b[6]
        + a[7] * b[7]
        + a[8] * b[8]
    )


def _axis_turn(a: Vec, phi: float) -> M9:
    """The rotation by ``phi`` about the unit axis ``a``: ``I + sin φ K + (1 − cos φ) K²``
    (:func:`core.ccd_setup._turn_about`) written out."""
    ax, ay, az = a
    s = math.sin(phi)
    c = math.cos(phi)
    t = 1.0 - c
    txy, txz, tyz = t * ax * ay, t * ax * az, t * ay * az
    return (
        t * ax * ax + c,
        txy - s * az,
        txz + s * ay,
        txy + s * az,
        t * ay * ay + c,
        tyz - s * ax,
        txz - s * ay,
        tyz + s * ax,
        t * az * az + c,
    )


def _orthonormalize(q: M9) -> M9:
    """One Newton step ``Q (3I − QᵀQ)/2`` (:func:`core.ccd_setup._orthonormalize`)."""
    g = _mtm(q, q)
    return _mm(
        q,
        (
            1.5 - 0.5 * g[0],
            -0.5 * g[1],
            -0.5 * g[2],
            -0.5 * g[3],
            1.5 - 0.5 * g[4],
            -0.5 * g[5],
            -0.5 * g[6],
            -0.5 * g[7],
            1.5 - 0.5 * g[8],
        ),
    )


def quaternion_of(m: M9) -> Quat:
    """:func:`core.rotations.from_matrix` for one row-major matrix: unit, ``w >= 0``."""
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = m
    trace = m00 + m11 + m22
    cands = (1.0 + trace, 1.0 + m00 - m11 - m22, 1.0 - m00 + m11 - m22, 1.0 - m00 - m11 + m22)
    branch = max(range(4), key=cands.__getitem__)
    s = 2.0 * math.sqrt(max(cands[branch], 1e-300))
    d21, d02, d10 = m21 - m12, m02 - m20, m10 - m01
    s21, s02, s10 = m21 + m12, m02 + m20, m10 + m01
    if branch == 0:
        q = (0.25 * s, d21 / s, d02 / s, d10 / s)
    elif branch == 1:
        q = (d21 / s, 0.25 * s, s10 / s, s02 / s)
    elif branch == 2:
        q = (d02 / s, s10 / s, 0.25 * s, s21 / s)
    else:
        q = (d10 / s, s02 / s, s21 / s, 0.25 * s)
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if q[0] < 0.0:
        n = -n
    return q[0] / n, q[1] / n, q[2] / n, q[3] / n
