# SPDX-License-Identifier: GPL-3.0-or-later
"""Rotations as unit quaternions, batched over leading axes.

Conventions (written once here, used everywhere in Reach IK):

* A quaternion is a float array of shape ``(..., 4)`` in **wxyz** order (Blender's order):
  ``q = (w, x, y, z) = (cos(φ/2), sin(φ/2)·axis)`` for a rotation by ``φ`` about ``axis``.
* Products are **Hamilton** products; ``quat_multiply(p, q)`` applies ``q`` first, then
  ``p`` (as matrices, ``R(p q) = R(p) R(q)``). Rotations act on column vectors:
  ``v' = R v``.
* A *rotation vector* (``rotvec``) is ``axis · φ`` (radians), shape ``(..., 3)``.
  The quaternion *logarithm* is half of it, ``log q = axis · φ/2``, as in the log-quaternion
  IK reference (TMPSwiki, "ln q = θ/sin θ · (x, y, z)" with ``θ = acos w``), and
  ``exp v = (cos|v|, sin|v|/|v| · v)``. Both use Taylor expansions near zero.
* Euler angles follow Blender: rotation mode ``"XYZ"`` applies X first, then Y, then Z
  about the fixed parent axes, so ``R = Rz · Ry · Rx`` (SciPy's lowercase ``"xyz"``).
* Matrices are ``(..., 3, 3)`` rotation matrices.

Functions never return NaN for finite input: degenerate cases (zero-length axes, zero
quaternions, antiparallel vectors) take a documented fallback.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import ReachIKError

FloatArray = NDArray[np.float64]

#: Below this angle (radians) the exp/log maps switch to their Taylor expansions.
SMALL_ANGLE = 1e-6

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


def _f(a: ArrayLike) -> FloatArray:
    return np.asarray(a, dtype=np.float64)


def identity(shape: tuple[int, ...] = ()) -> FloatArray:
    """Identity quaternions of shape ``shape + (4,)``."""
    q = np.zeros((*shape, 4))
    q[..., 0] = 1.0
    return q


def multiply(p: ArrayLike, q: ArrayLike) -> FloatArray:
    """Hamilton product ``p q`` of ``(..., 4)`` quaternions (broadcasting)."""
    p, q = _f(p), _f(q)
    pw, px, py, pz = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    qw, qx, qy, qz = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack(
        (
            pw * qw - px * qx - py * qy - pz * qz,
            pw * qx + px * qw + py * qz - pz * qy,
            pw * qy - px * qz + py * qw + pz * qx,
            pw * qz + px * qy - py * qx + pz * qw,
        ),
        axis=-1,
    )


def conjugate(q: ArrayLike) -> FloatArray:
    """Conjugate (the inverse of a unit quaternion), shape ``(..., 4)``."""
    q = _f(q)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def normalize(q: ArrayLike) -> FloatArray:
    """Unit quaternions; a zero quaternion becomes the identity."""
    q = _f(q)
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    out = np.divide(q, norm, out=np.zeros_like(q), where=norm > 0.0)
    out[..., 0] = np.where(norm[..., 0] > 0.0, out[..., 0], 1.0)
    return out


def positive_w(q: ArrayLike) -> FloatArray:
    """The same rotations with ``w >= 0`` (``q`` and ``-q`` are the same rotation)."""
    q = _f(q)
    return np.where(q[..., :1] < 0.0, -q, q)


def cross(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """``a × b`` of ``(..., 3)`` vectors (broadcasting), as ``np.cross`` but without its
    axis handling, which dominates on small stacks."""
    a, b = _f(a), _f(b)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def rotate(q: ArrayLike, v: ArrayLike) -> FloatArray:
    """Rotate vectors ``v (..., 3)`` by unit quaternions ``q (..., 4)`` (broadcasting).

    Uses ``v' = v + 2w (u × v) + 2 u × (u × v)`` with ``u = (x, y, z)``.
    """
    q, v = _f(q), _f(v)
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def angle(q: ArrayLike) -> FloatArray:
    """Rotation angle in ``[0, π]`` of unit quaternions ``(..., 4)``.

    Computed as ``2·atan2(|u|, |w|)``, accurate for small and large angles alike.
    """
    q = _f(q)
    return 2.0 * np.arctan2(np.linalg.norm(q[..., 1:], axis=-1), np.abs(q[..., 0]))


def from_axis_angle(axis: ArrayLike, phi: ArrayLike) -> FloatArray:
    """Quaternions for rotations by ``phi`` radians ``(...)`` about ``axis (..., 3)``.

    The axis is normalised; a zero axis gives the identity.
    """
    axis = _f(axis)
    phi = _f(phi)
    norm = np.linalg.norm(axis, axis=-1, keepdims=True)
    unit = np.divide(axis, norm, out=np.zeros_like(axis), where=norm > 0.0)
    half = np.where(norm > 0.0, 0.5 * phi[..., None], 0.0)
    return np.concatenate((np.cos(half), np.sin(half) * unit), axis=-1)


def to_axis_angle(q: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Axis ``(..., 3)`` and angle ``(...)`` in ``[0, π]``; identity gives axis ``+X``."""
    q = positive_w(q)
    u = q[..., 1:]
    # Scale by the largest component first, so tiny angles keep a unit axis (no underflow).
    big = np.max(np.abs(u), axis=-1, keepdims=True)
    u = np.divide(u, big, out=np.zeros_like(u), where=big > 0.0)
    s = np.linalg.norm(u, axis=-1, keepdims=True)
    axis = np.divide(u, s, out=np.zeros_like(u), where=s > 0.0)
    axis[..., 0] = np.where(s[..., 0] > 0.0, axis[..., 0], 1.0)
    return axis, angle(q)


def exp(v: ArrayLike) -> FloatArray:
    """Quaternion exponential of pure quaternions ``v (..., 3)``: ``(cos|v|, sinc|v| · v)``.

    ``exp(log q) == q`` for unit ``q`` with ``w >= 0``. Near ``|v| = 0`` it uses
    ``sin θ/θ ≈ 1 − θ²/6`` (the Taylor expansion the log-quaternion reference asks for).
    """
    v = _f(v)
    theta = np.linalg.norm(v, axis=-1, keepdims=True)
    small = theta < SMALL_ANGLE
    safe = np.where(small, 1.0, theta)
    sinc = np.where(small, 1.0 - theta * theta / 6.0, np.sin(safe) / safe)
    return np.concatenate((np.cos(theta), sinc * v), axis=-1)


def log(q: ArrayLike) -> FloatArray:
    """Quaternion logarithm ``(..., 3)`` of unit quaternions: ``axis · φ/2`` with ``φ ∈ [0, π]``.

    ``q`` is first taken with ``w >= 0``, so the result is the shortest rotation and
    ``|log q| <= π/2``. Near the identity ``θ/sin θ ≈ 1 + θ²/6``.
    """
    q = positive_w(q)
    u = q[..., 1:]
    s = np.linalg.norm(u, axis=-1, keepdims=True)
    theta = np.arctan2(s, q[..., :1])
    small = theta < SMALL_ANGLE
    safe_s = np.where(small, 1.0, s)
    factor = np.where(small, 1.0 + theta * theta / 6.0, theta / safe_s)
    return factor * u


def from_rotvec(v: ArrayLike) -> FloatArray:
    """Quaternions from rotation vectors ``axis · φ`` of shape ``(..., 3)``."""
    return exp(0.5 * _f(v))


def to_rotvec(q: ArrayLike) -> FloatArray:
    """Rotation vectors ``axis · φ`` with ``φ ∈ [0, π]`` of unit quaternions ``(..., 4)``."""
    return 2.0 * log(q)


def to_matrix(q: ArrayLike) -> FloatArray:
    """Rotation matrices ``(..., 3, 3)`` of unit quaternions ``(..., 4)``."""
    q = _f(q)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m = np.stack(
        (
            1.0 - 2.0 * (yy + zz),
            2.0 * (xy - wz),
            2.0 * (xz + wy),
            2.0 * (xy + wz),
            1.0 - 2.0 * (xx + zz),
            2.0 * (yz - wx),
            2.0 * (xz - wy),
            2.0 * (yz + wx),
            1.0 - 2.0 * (xx + yy),
        ),
        axis=-1,
    )
    return m.reshape((*q.shape[:-1], 3, 3))


def from_matrix(m: ArrayLike) -> FloatArray:
    """Unit quaternions (``w >= 0``) from rotation matrices ``(..., 3, 3)``.

    The robust branch form of the log-quaternion reference (Shepperd's method): take the
    largest of ``w², x², y², z²`` from the trace and diagonal, compute that component
    from its square root and the others from the off-diagonal sums and differences.
    """
    m = _f(m)
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    # 4·(component²) for w, x, y, z.
    candidates = np.stack(
        (1.0 + trace, 1.0 + m00 - m11 - m22, 1.0 - m00 + m11 - m22, 1.0 - m00 - m11 + m22),
        axis=-1,
    )
    branch = np.argmax(candidates, axis=-1)
    s = 2.0 * np.sqrt(np.maximum(np.take_along_axis(candidates, branch[..., None], -1), 1e-300))
    s = s[..., 0]
    d21, d02, d10 = (
        m[..., 2, 1] - m[..., 1, 2],
        m[..., 0, 2] - m[..., 2, 0],
        m[..., 1, 0] - m[..., 0, 1],
    )
    s21, s02, s10 = (
        m[..., 2, 1] + m[..., 1, 2],
        m[..., 0, 2] + m[..., 2, 0],
        m[..., 1, 0] + m[..., 0, 1],
    )
    by_branch = np.stack(
        (
            np.stack((0.25 * s, d21 / s, d02 / s, d10 / s), axis=-1),
            np.stack((d21 / s, 0.25 * s, s10 / s, s02 / s), axis=-1),
            np.stack((d02 / s, s10 / s, 0.25 * s, s21 / s), axis=-1),
            np.stack((d10 / s, s02 / s, s21 / s, 0.25 * s), axis=-1),
        ),
        axis=-2,
    )
    q = np.take_along_axis(by_branch, branch[..., None, None], axis=-2)[..., 0, :]
    return positive_w(normalize(q))


def _check_order(order: str) -> str:
    upper = order.upper()
    if upper not in EULER_ORDERS:
        raise ReachIKError(
            f"unknown Euler order {order!r}; valid orders are {', '.join(EULER_ORDERS)}"
        )
    return upper


def from_euler(angles: ArrayLike, order: str = "XYZ") -> FloatArray:
    """Quaternions from Blender Euler angles ``(..., 3)`` (radians, given as x, y, z).

    ``angles[..., 0]`` is always the X angle, whatever the order; ``order`` says which is
    applied first (Blender's ``rotation_mode``): ``"XYZ"`` gives ``R = Rz · Ry · Rx``.
    """
    order = _check_order(order)
    angles = _f(angles)
    q = identity(angles.shape[:-1])
    for name in order:
        k = _AXIS_INDEX[name]
        half = 0.5 * angles[..., k]
        step = np.zeros((*angles.shape[:-1], 4))
        step[..., 0] = np.cos(half)
        step[..., 1 + k] = np.sin(half)
        q = multiply(step, q)
    return q


def to_euler(q: ArrayLike, order: str = "XYZ") -> FloatArray:
    """Blender Euler angles ``(..., 3)`` (x, y, z; radians) of unit quaternions.

    The middle angle lies in ``[-π/2, π/2]`` and the others in ``(-π, π]``; at gimbal lock
    the third rotation's angle is set to zero.
    """
    order = _check_order(order)
    m = to_matrix(q)
    i, j, k = (_AXIS_INDEX[c] for c in order)
    # For R = R_k(c) R_j(b) R_i(a): R[k, i] = -sign · sin b, where sign = +1 for an even
    # permutation (XYZ, YZX, ZXY) and -1 for an odd one. Row k is cos b · (…, sin a, cos a),
    # so cos b = |(R[k, j], R[k, k])| is accurate even where sin b is within rounding of ±1.
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
    cos_b = np.hypot(m[..., k, j], m[..., k, k])
    b = np.arctan2(-sign * m[..., k, i], cos_b)
    # Gimbal lock: row k carries no information about a; take c = 0, which leaves
    # R = R_j(b) R_i(a), whose row j gives a.
    locked = cos_b < 1e-9
    a = np.where(
        locked,
        np.arctan2(-sign * m[..., j, k], m[..., j, j]),
        np.arctan2(sign * m[..., k, j], m[..., k, k]),
    )
    # c from R · R_i(−a), whose column j is R_k(c) e_j = cos c e_j − sign · sin c e_i: it
    # absorbs whatever rounding a picked up near gimbal lock (Day, "Extracting Euler Angles
    # from a Rotation Matrix", 2014).
    sin_a, cos_a = np.sin(a), np.cos(a)
    c = np.arctan2(
        sin_a * m[..., i, k] - sign * cos_a * m[..., i, j],
        cos_a * m[..., j, j] - sign * sin_a * m[..., j, k],
    )
    c = np.where(locked, 0.0, c)
    out = np.empty((*m.shape[:-2], 3))
    out[..., i], out[..., j], out[..., k] = a, b, c
    return out


def between(a: ArrayLike, b: ArrayLike, fallback_axis: ArrayLike | None = None) -> FloatArray:
    """Shortest-arc rotations taking directions ``a`` to ``b`` (both ``(..., 3)``).

    For antiparallel directions the rotation is by π about ``fallback_axis`` made
    perpendicular to ``a`` (default: the coordinate axis least aligned with ``a``).
    Zero vectors give the identity.
    """
    a, b = np.broadcast_arrays(_f(a), _f(b))
    na = np.linalg.norm(a, axis=-1, keepdims=True)
    nb = np.linalg.norm(b, axis=-1, keepdims=True)
    ua = np.divide(a, na, out=np.zeros_like(a), where=na > 0.0)
    ub = np.divide(b, nb, out=np.zeros_like(b), where=nb > 0.0)
    dot = np.sum(ua * ub, axis=-1, keepdims=True)
    axis = cross(ua, ub)
    # Near antiparallel, 1 + dot has lost its digits but 1 + dot = |a × b|² / (1 − dot) has
    # not; dropping the rounding of a × b along a keeps the axis perpendicular to a.
    obtuse = dot < 0.0
    axis = np.where(obtuse, axis - np.sum(axis * ua, axis=-1, keepdims=True) * ua, axis)
    axis_sq = np.sum(axis * axis, axis=-1, keepdims=True)
    w = np.where(obtuse, axis_sq / np.where(obtuse, 1.0 - dot, 1.0), 1.0 + dot)
    q = np.concatenate((w, axis), axis=-1)
    # Within 1e-12 rad of antiparallel the rounding of a × b decides its direction.
    degenerate = obtuse[..., 0] & (axis_sq[..., 0] < 1e-24)
    if np.any(degenerate):
        hint = None
        if fallback_axis is not None:
            hint = np.broadcast_to(_f(fallback_axis), ua.shape)[degenerate]
        turn = perpendicular(ua[degenerate], hint)
        q[degenerate] = np.concatenate((np.zeros((*turn.shape[:-1], 1)), turn), axis=-1)
    return normalize(q)


def perpendicular(v: ArrayLike, hint: ArrayLike | None = None) -> FloatArray:
    """Unit vectors perpendicular to ``v (..., 3)``.

    The part of ``hint`` orthogonal to ``v`` when it is usable, else the coordinate axis
    least aligned with ``v`` made orthogonal to it.
    """
    v = _f(v)
    nv = np.linalg.norm(v, axis=-1, keepdims=True)
    u = np.divide(v, nv, out=np.zeros_like(v), where=nv > 0.0)
    least = np.argmin(np.abs(u), axis=-1)
    axis = np.zeros_like(u)
    np.put_along_axis(axis, least[..., None], 1.0, axis=-1)
    if hint is not None:
        h = np.broadcast_to(_f(hint), u.shape)
        h_perp = h - np.sum(h * u, axis=-1, keepdims=True) * u
        usable = np.linalg.norm(h_perp, axis=-1, keepdims=True) > 1e-9
        axis = np.where(usable, h_perp, axis)
    p = axis - np.sum(axis * u, axis=-1, keepdims=True) * u
    return p / np.linalg.norm(p, axis=-1, keepdims=True)


def swing_twist(q: ArrayLike, axis: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Split unit quaternions into ``q = swing · twist`` with ``twist`` about unit ``axis``.

    ``twist`` rotates about ``axis`` (shape ``(..., 3)``, unit length); ``swing`` rotates
    about an axis perpendicular to it. When the swing is a half turn the twist is
    undefined and taken as the identity.
    """
    q = _f(q)
    axis = _f(axis)
    proj = np.sum(q[..., 1:] * axis, axis=-1, keepdims=True) * axis
    twist = np.concatenate((q[..., :1], np.broadcast_to(proj, (*q.shape[:-1], 3))), axis=-1)
    twist = normalize(twist)
    swing = multiply(q, conjugate(twist))
    return swing, twist


def slerp(p: ArrayLike, q: ArrayLike, t: ArrayLike) -> FloatArray:
    """Spherical interpolation from ``p`` (``t = 0``) to ``q`` (``t = 1``) along the shorter arc."""
    p, q = _f(p), _f(q)
    t = _f(t)[..., None]
    dot = np.sum(p * q, axis=-1, keepdims=True)
    q = np.where(dot < 0.0, -q, q)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.sin(theta)
    close = sin_theta < 1e-9
    safe = np.where(close, 1.0, sin_theta)
    wp = np.where(close, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    wq = np.where(close, t, np.sin(t * theta) / safe)
    return normalize(wp * p + wq * q)
