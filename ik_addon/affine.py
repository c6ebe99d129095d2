# SPDX-License-Identifier: GPL-3.0-or-later
"""Affine maps for one frame or many, written once.

A 4×4 affine matrix (last row ``0 0 0 1``, acting on column vectors) is held as its top
three rows, ``rows[r][c]`` (:data:`Rows`); a point or vector as its three components
(:data:`Vec`). Each entry is a :data:`Value`: a float for one frame (live solving) or an
``(F,)`` float64 array for ``F`` frames (the bake). The functions use arithmetic only, so
one frame costs no numpy call and ``F`` frames are vectorised by the same lines, with the
same float64 operations in the same order: both give the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
from mathutils import Matrix

from ..core import ReachIKError

#: A float (one frame) or an ``(F,)`` float64 array (``F`` frames).
Value: TypeAlias = "float | np.ndarray"
#: The top three rows of an affine matrix, 3 × 4 :data:`Value`.
Rows: TypeAlias = Sequence[Sequence[Value]]
#: A point or vector, 3 :data:`Value`.
Vec: TypeAlias = Sequence[Value]


class ZeroScaleError(ReachIKError):
    """An affine matrix to invert has (nearly) zero scale."""


def rows_of(m: Matrix | np.ndarray | Sequence[Sequence[float]]) -> Rows:
    """:data:`Rows` of a matrix: an ``(F, 4, 4)`` array gives ``(F,)`` entries (contiguous
    copies), a single 4×4 (a mathutils matrix, nested sequences or a ``(4, 4)`` array)
    gives floats."""
    if isinstance(m, np.ndarray):
        if m.ndim == 3:
            t = np.ascontiguousarray(np.moveaxis(np.asarray(m[:, :3], dtype=np.float64), 0, -1))
            return [[t[r, c] for c in range(4)] for r in range(3)]
        return np.asarray(m[:3], dtype=np.float64).tolist()
    return [m[0][:], m[1][:], m[2][:]]


def vec_of(p: np.ndarray | Sequence[float]) -> list[Value]:
    """:data:`Vec` of a point: ``(F, 3)`` array → three ``(F,)`` columns, three numbers →
    floats."""
    if isinstance(p, np.ndarray) and p.ndim == 2:
        return list(np.ascontiguousarray(np.asarray(p, dtype=np.float64).T))
    return [float(p[0]), float(p[1]), float(p[2])]


def to_array(rows: Rows, count: int | None) -> np.ndarray:
    """Full matrices from :data:`Rows`: ``(F, 4, 4)`` when ``count`` is ``F``, ``(4, 4)``
    for one frame (``count`` ``None``)."""
    shape = (4, 4) if count is None else (count, 4, 4)
    out = np.zeros(shape)
    for r in range(3):
        for c in range(4):
            out[..., r, c] = rows[r][c]
    out[..., 3, 3] = 1.0
    return out


def invert(m: np.ndarray) -> np.ndarray:
    """Inverses of affine matrices given as an ``(F, 4, 4)`` or ``(4, 4)`` array
    (:func:`inverse`).

    Raises:
        ZeroScaleError: a matrix has (nearly) zero scale.
    """
    m = np.asarray(m, dtype=np.float64)
    return to_array(inverse(rows_of(m)), m.shape[0] if m.ndim == 3 else None)


def compose(a: Rows, b: Rows) -> list[list[Value]]:
    """``a @ b``."""
    (a00, a01, a02, a03), (a10, a11, a12, a13), (a20, a21, a22, a23) = a
    (b00, b01, b02, b03), (b10, b11, b12, b13), (b20, b21, b22, b23) = b
    return [
        [
            a00 * b00 + a01 * b10 + a02 * b20,
            a00 * b01 + a01 * b11 + a02 * b21,
            a00 * b02 + a01 * b12 + a02 * b22,
            a00 * b03 + a01 * b13 + a02 * b23 + a03,
        ],
        [
            a10 * b00 + a11 * b10 + a12 * b20,
            a10 * b01 + a11 * b11 + a12 * b21,
            a10 * b02 + a11 * b12 + a12 * b22,
            a10 * b03 + a11 * b13 + a12 * b23 + a13,
        ],
        [
            a20 * b00 + a21 * b10 + a22 * b20,
            a20 * b01 + a21 * b11 + a22 * b21,
            a20 * b02 + a21 * b12 + a22 * b22,
            a20 * b03 + a21 * b13 + a22 * b23 + a23,
        ],
    ]


def transform(a: Rows, p: Vec) -> list[Value]:
    """The point ``p`` mapped by ``a``."""
    (a00, a01, a02, a03), (a10, a11, a12, a13), (a20, a21, a22, a23) = a
    x, y, z = p
    return [
        a00 * x + a01 * y + a02 * z + a03,
        a10 * x + a11 * y + a12 * z + a13,
        a20 * x + a21 * y + a22 * z + a23,
    ]


def length(v: Vec) -> Value:
    """Euclidean length of ``v``."""
    return (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) ** 0.5


def distance(a: Vec, b: Vec) -> Value:
    """Euclidean distance from ``a`` to ``b`` (:func:`length` of ``a − b``)."""
    dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return (dx * dx + dy * dy + dz * dz) ** 0.5


def inverse(a: Rows) -> list[list[Value]]:
    """The inverse of ``a`` (cofactor expansion; inside Blender, LAPACK calls on tiny
    matrices can cost milliseconds, and this runs every frame).

    Raises:
        ZeroScaleError: a matrix has (nearly) zero scale.
    """
    (a0, b0, c0, x), (d0, e0, f0, y), (g0, h0, i0, z) = a
    ca, cb, cc = e0 * i0 - f0 * h0, f0 * g0 - d0 * i0, d0 * h0 - e0 * g0
    det = a0 * ca + b0 * cb + c0 * cc
    if not (abs(det) > 1e-18 if isinstance(det, float) else np.all(abs(det) > 1e-18)):
        raise ZeroScaleError("a bone, the chain's parent or the armature has zero scale")
    s = 1.0 / det
    r = (
        (ca * s, (c0 * h0 - b0 * i0) * s, (b0 * f0 - c0 * e0) * s),
        (cb * s, (a0 * i0 - c0 * g0) * s, (c0 * d0 - a0 * f0) * s),
        (cc * s, (b0 * g0 - a0 * h0) * s, (a0 * e0 - b0 * d0) * s),
    )
    return [[*row, -(row[0] * x + row[1] * y + row[2] * z)] for row in r]


def unit_axes(a: Rows) -> list[list[Value]]:
    """The 3×3 linear part of ``a`` with each column scaled to unit length (a rotation when
    ``a`` has no shear).

    Raises:
        ZeroScaleError: an axis has (nearly) zero length (no direction to keep).
    """
    norms = [length([a[0][c], a[1][c], a[2][c]]) for c in range(3)]
    for n in norms:
        if not (n > 1e-12 if isinstance(n, float) else np.all(n > 1e-12)):
            raise ZeroScaleError(
                "an orientation is read from a matrix with zero scale on an axis: give the "
                "Rotation target (or the armature) a scale above zero on X, Y and Z"
            )
    return [[a[r][c] / norms[c] for c in range(3)] for r in range(3)]
