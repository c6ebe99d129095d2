# SPDX-License-Identifier: GPL-3.0-or-later
"""Vector and quaternion algebra on components, for the solvers' scalar fast paths.

A vector is a tuple ``(x, y, z)`` and a quaternion a tuple ``(w, x, y, z)`` (wxyz, Hamilton,
as :mod:`core.rotations`) whose entries are all floats — one pose, with no numpy call
overhead — or all ``(N,)`` arrays — a batch, one array per component. The results match
the batched functions of :mod:`core.rotations`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Num = Any
Vec = tuple[Num, Num, Num]
Quat = tuple[Num, Num, Num, Num]


def vdot(a: Vec, b: Vec) -> Num:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def vcross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def vadd(a: Vec, b: Vec) -> Vec:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def vsub(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def vscale(a: Vec, s: Num) -> Vec:
    return (a[0] * s, a[1] * s, a[2] * s)


def vcombine(s: Num, a: Vec, t: Num, b: Vec) -> Vec:
    """``s·a + t·b``."""
    return (s * a[0] + t * b[0], s * a[1] + t * b[1], s * a[2] + t * b[2])


def qmul(p: Quat, q: Quat) -> Quat:
    """Hamilton product ``p q``, as :func:`core.rotations.multiply`."""
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    return (
        pw * qw - px * qx - py * qy - pz * qz,
        pw * qx + px * qw + py * qz - pz * qy,
        pw * qy - px * qz + py * qw + pz * qx,
        pw * qz + px * qy - py * qx + pz * qw,
    )


def qmul_conj(p: Quat, q: Quat) -> Quat:
    """``conj(p) · q`` (the rotation ``q`` seen from frame ``p``)."""
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    return (
        pw * qw + px * qx + py * qy + pz * qz,
        pw * qx - px * qw - py * qz + pz * qy,
        pw * qy + px * qz - py * qw - pz * qx,
        pw * qz - px * qy + py * qx - pz * qw,
    )


def qslerp(p: Quat, q: Quat, t: float) -> Quat:
    """Spherical interpolation of unit quaternions (floats only) from ``p`` (``t = 0``) to
    ``q`` (``t = 1``) along the shorter arc: :func:`core.rotations.slerp`'s steps, with
    :mod:`math` where it calls numpy's ufuncs (the same rotation to rounding; tested)."""
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    dot = pw * qw + px * qx + py * qy + pz * qz
    if dot < 0.0:
        qw, qx, qy, qz, dot = -qw, -qx, -qy, -qz, -dot
    theta = math.acos(min(dot, 1.0))
    sin_theta = math.sin(theta)
    if sin_theta < 1e-9:
        wp, wq = 1.0 - t, t
    else:
        wp, wq = math.sin((1.0 - t) * theta) / sin_theta, math.sin(t * theta) / sin_theta
    w, x, y, z = wp * pw + wq * qw, wp * px + wq * qx, wp * py + wq * qy, wp * pz + wq * qz
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    return (w / norm, x / norm, y / norm, z / norm) if norm > 0.0 else (1.0, 0.0, 0.0, 0.0)


def qconj(q: Quat) -> Quat:
    """The conjugate (inverse of a unit quaternion)."""
    return (q[0], -q[1], -q[2], -q[3])


def qangle(q: Quat) -> float:
    """The rotation angle in ``[0, π]`` of one unit quaternion, ``2·atan2(|u|, |w|)``, as
    :func:`core.rotations.angle`."""
    return 2.0 * math.atan2(math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]), abs(q[0]))


def qrotate(q: Quat, v: Vec) -> Vec:
    """``v + w·t + u × t`` with ``t = 2 u × v``, as :func:`core.rotations.rotate`
    (written out: the float paths call it in their innermost loops)."""
    w, ux, uy, uz = q
    vx, vy, vz = v
    tx = 2.0 * (uy * vz - uz * vy)
    ty = 2.0 * (uz * vx - ux * vz)
    tz = 2.0 * (ux * vy - uy * vx)
    return (
        vx + w * tx + (uy * tz - uz * ty),
        vy + w * ty + (uz * tx - ux * tz),
        vz + w * tz + (ux * ty - uy * tx),
    )


def qunrotate(q: Quat, v: Vec) -> Vec:
    """``v`` rotated by ``conj(q)`` (``v`` seen from the frame ``q``): :func:`qrotate` of
    :func:`qconj` ``(q)`` to the bit (the same products, their signs moved out), without
    the conjugate's tuple."""
    w, ux, uy, uz = q
    vx, vy, vz = v
    tx = 2.0 * (uz * vy - uy * vz)
    ty = 2.0 * (ux * vz - uz * vx)
    tz = 2.0 * (uy * vx - ux * vy)
    return (
        vx + w * tx + (uz * ty - uy * tz),
        vy + w * ty + (ux * tz - uz * tx),
        vz + w * tz + (uy * tx - ux * ty),
    )


def vperpendicular(v: Vec, hint: Vec | None = None) -> Vec:
    """A unit vector perpendicular to ``v`` (floats only), as
    :func:`core.rotations.perpendicular`: ``hint`` made orthogonal to ``v`` where more than
    1e-9 of it is left, else (and without a hint) the coordinate axis least aligned with
    ``v`` made orthogonal to it. It multiplies by ``1 / |v|`` where that function divides
    (the arithmetic of triangulation's batched pass, whose float twin calls this): the
    same vector to rounding."""
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    inv = 1.0 / max(n, 1e-300) if n > 0.0 else 0.0
    u = (v[0] * inv, v[1] * inv, v[2] * inv)
    axis: Vec | None = None
    if hint is not None:
        h = vsub(hint, vscale(u, vdot(hint, u)))
        if math.sqrt(vdot(h, h)) > 1e-9:
            axis = h
    if axis is None:
        ax, ay, az = abs(u[0]), abs(u[1]), abs(u[2])
        if ax <= ay and ax <= az:
            axis = (1.0, 0.0, 0.0)
        elif ay <= az:
            axis = (0.0, 1.0, 0.0)
        else:
            axis = (0.0, 0.0, 1.0)
    p = vsub(axis, vscale(u, vdot(axis, u)))
    return vscale(p, 1.0 / max(math.sqrt(vdot(p, p)), 1e-300))


def qbetween(a: Vec, b: Vec) -> Quat:
    """Shortest-arc unit quaternion taking the direction ``a`` to ``b`` (floats only), as
    :func:`core.rotations.between` without a fallback axis and with the same steps: the
    identity when either vector is zero; where ``a·b < 0`` the axis ``a × b`` loses its
    rounding along ``a`` and ``1 + dot`` is written ``|a × b|² / (1 − dot)`` (no
    cancellation); within 1e-12 rad of opposite, a half turn about :func:`vperpendicular`."""
    na, nb = math.sqrt(vdot(a, a)), math.sqrt(vdot(b, b))
    if na == 0.0 or nb == 0.0:
        return (1.0, 0.0, 0.0, 0.0)
    ua = (a[0] / na, a[1] / na, a[2] / na)
    ub = (b[0] / nb, b[1] / nb, b[2] / nb)
    dot = vdot(ua, ub)
    x, y, z = vcross(ua, ub)
    if dot < 0.0:
        along = x * ua[0] + y * ua[1] + z * ua[2]
        x, y, z = x - along * ua[0], y - along * ua[1], z - along * ua[2]
        cross_sq = x * x + y * y + z * z
        w = cross_sq / (1.0 - dot)
        if cross_sq < 1e-24:
            x, y, z = vperpendicular(ua)
            w = 0.0
    else:
        w = 1.0 + dot
    n = math.sqrt(w * w + x * x + y * y + z * z)
    return (w / n, x / n, y / n, z / n)


def qmatrix(q: Quat) -> tuple[Num, ...]:
    """Rotation matrix of unit ``q``, row-major (9 entries); exactly ``I`` for the identity."""
    w, x, y, z = q
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    return (
        1.0 - 2.0 * (yy + zz),
        2.0 * (xy - wz),
        2.0 * (xz + wy),
        2.0 * (xy + wz),
        1.0 - 2.0 * (xx + zz),
        2.0 * (yz - wx),
        2.0 * (xz - wy),
        2.0 * (yz + wx),
        1.0 - 2.0 * (xx + yy),
    )


def mapply(m: tuple[Num, ...], v: Vec) -> Vec:
    """``m · v`` for a row-major matrix ``m`` (9 entries)."""
    return (
        m[0] * v[0] + m[1] * v[1] + m[2] * v[2],
        m[3] * v[0] + m[4] * v[1] + m[5] * v[2],
        m[6] * v[0] + m[7] * v[1] + m[8] * v[2],
    )


@dataclass(frozen=True)
class Ops:
    """The few operations whose spelling differs between floats and ``(N,)`` arrays, for
    passes written once on components (:data:`FLOAT_OPS`, :data:`ARRAY_OPS`)."""

    sqrt: Callable[[Any], Any]
    where: Callable[[Any, Any, Any], Any]
    atan2: Callable[[Any, Any], Any]
    cos: Callable[[Any], Any]
    sin: Callable[[Any], Any]
    acos_clipped: Callable[[Any], Any]
    any: Callable[[Any], bool]


def _where_float(cond: Any, a: Any, b: Any) -> Any:
    return a if cond else b


FLOAT_OPS = Ops(
    math.sqrt,
    _where_float,
    math.atan2,
    math.cos,
    math.sin,
    lambda x: math.acos(-1.0 if x < -1.0 else 1.0 if x > 1.0 else x),
    bool,
)
ARRAY_OPS = Ops(
    np.sqrt,
    np.where,
    np.arctan2,
    np.cos,
    np.sin,
    lambda x: np.arccos(np.clip(x, -1.0, 1.0)),
    lambda x: bool(np.any(x)),
)


def pick(ops: Ops, cond: Any, a: tuple[Num, ...], b: tuple[Num, ...]) -> tuple[Any, ...]:
    """``a`` where ``cond`` else ``b``, component by component (on floats, ``cond`` one
    truth value: ``a`` or ``b`` whole)."""
    if ops is FLOAT_OPS:
        return tuple(a if cond else b)
    return tuple(ops.where(cond, x, y) for x, y in zip(a, b, strict=True))
