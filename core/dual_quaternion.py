# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit dual quaternions for rigid motions, batched over leading axes.

Conventions (the quaternion conventions of :mod:`core.rotations`: wxyz, Hamilton):

* A dual quaternion is a float array ``(..., 8)``: the real part ``r = Q[..., :4]`` and the
  dual part ``d = Q[..., 4:]``, both wxyz; ``Q = r + ε d`` with ``ε² = 0``.
* The rigid motion "rotate by ``r``, then translate by ``t``" (``x' = R x + t``) is
  ``Q = r + ε ½ t r``, with ``t`` read as the pure quaternion ``(0, t)``; the translation is
  recovered as ``t = 2 d r*``.
* Products apply the right factor first, like matrices: ``multiply(A, B)`` is "B, then A".
* The conjugate used here conjugates both parts, ``Q* = r* + ε d*``; for a unit dual
  quaternion it is the inverse motion (the ``Qc`` of the 6R-robot reference, 004 §3.6).
* A line is given by Plücker coordinates: unit direction ``l`` and moment ``m = p × l`` for
  any point ``p`` on it; as a dual vector ``(0, l) + ε (0, m)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from . import rotations as rot
from .rotations import FloatArray


def _f(a: ArrayLike) -> FloatArray:
    return np.asarray(a, dtype=np.float64)


def _pure(v: FloatArray) -> FloatArray:
    """Pure quaternions ``(..., 4)`` from vectors ``(..., 3)``."""
    return np.concatenate((np.zeros((*v.shape[:-1], 1)), v), axis=-1)


def identity(shape: tuple[int, ...] = ()) -> FloatArray:
    """Identity motions of shape ``shape + (8,)``."""
    q = np.zeros((*shape, 8))
    q[..., 0] = 1.0
    return q


def from_rotation_translation(rotation: ArrayLike, translation: ArrayLike) -> FloatArray:
    """Dual quaternions ``(..., 8)`` of "rotate by ``rotation``, then translate".

    Args:
        rotation: unit quaternions ``(..., 4)`` wxyz.
        translation: translations ``(..., 3)`` (chain units), broadcast with ``rotation``.
    """
    r, t = _f(rotation), _f(translation)
    shape = np.broadcast_shapes(r.shape[:-1], t.shape[:-1])
    r = np.broadcast_to(r, (*shape, 4))
    d = 0.5 * rot.multiply(_pure(np.broadcast_to(t, (*shape, 3))), r)
    return np.concatenate((r, d), axis=-1)


def rotation(q: ArrayLike) -> FloatArray:
    """The rotation part ``(..., 4)`` (the real part) of unit dual quaternions."""
    return _f(q)[..., :4].copy()


def translation(q: ArrayLike) -> FloatArray:
    """The translation ``t = 2 d r*`` ``(..., 3)`` of unit dual quaternions ``(..., 8)``."""
    q = _f(q)
    return 2.0 * rot.multiply(q[..., 4:], rot.conjugate(q[..., :4]))[..., 1:]


def multiply(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """Product ``a b = a_r b_r + ε (a_r b_d + a_d b_r)`` of ``(..., 8)`` dual quaternions."""
    a, b = _f(a), _f(b)
    ar, ad = a[..., :4], a[..., 4:]
    br, bd = b[..., :4], b[..., 4:]
    real = rot.multiply(ar, br)
    dual = rot.multiply(ar, bd) + rot.multiply(ad, br)
    return np.concatenate((real, dual), axis=-1)


def conjugate(q: ArrayLike) -> FloatArray:
    """``r* + ε d*`` ``(..., 8)``: the inverse motion of a unit dual quaternion."""
    q = _f(q)
    return np.concatenate((rot.conjugate(q[..., :4]), rot.conjugate(q[..., 4:])), axis=-1)


def to_matrix(q: ArrayLike) -> FloatArray:
    """Homogeneous ``(..., 4, 4)`` matrices of unit dual quaternions ``(..., 8)``."""
    q = _f(q)
    m = np.zeros((*q.shape[:-1], 4, 4))
    m[..., :3, :3] = rot.to_matrix(q[..., :4])
    m[..., :3, 3] = translation(q)
    m[..., 3, 3] = 1.0
    return m


def transform_point(q: ArrayLike, point: ArrayLike) -> FloatArray:
    """``R p + t`` ``(..., 3)`` for unit dual quaternions ``(..., 8)`` and points ``(..., 3)``."""
    q = _f(q)
    return rot.rotate(q[..., :4], point) + translation(q)


def transform_line(
    q: ArrayLike, direction: ArrayLike, moment: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Plücker coordinates of lines moved by ``q``: ``l' = Q l Q*`` (reference 004 §3.6).

    Args:
        q: unit dual quaternions ``(..., 8)``.
        direction: line directions ``(..., 3)``.
        moment: line moments ``(..., 3)`` about the origin.

    Returns:
        ``(direction', moment')``, each ``(..., 3)``: ``R l`` and ``R m + t × R l``.
    """
    q = _f(q)
    d, m = np.broadcast_arrays(_f(direction), _f(moment))
    line = np.concatenate((_pure(d), _pure(m)), axis=-1)
    moved = multiply(multiply(q, line), conjugate(q))
    return moved[..., 1:4], moved[..., 5:8]


__all__ = [
    "conjugate",
    "from_rotation_translation",
    "identity",
    "multiply",
    "rotation",
    "to_matrix",
    "transform_line",
    "transform_point",
    "translation",
]
