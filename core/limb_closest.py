# SPDX-License-Identifier: GPL-3.0-or-later
"""The closest admissible pose of a two-joint limb to a target its limits keep out of reach.

The limb: a chain of two joints, a ball joint at the root whose twist is free and whose
swing is limited (:attr:`core.limits.JointLimits.swing_region`: Blender's X/Z limits or a
cone), then a hinge (a shoulder and an elbow, a hip and a knee, with Blender's IK limits).
Where the shoulder's limits keep the hand from the target's direction, the closest pose is
found in closed form up to one root in one variable, instead of searched
(:func:`core.triangulation_limits.reach_within_limits`):

* **The hinge angle φ fixes the limb's shape** in the root joint's frame (its rest rotation
  taken out): the effector at ``u(φ) = m + a cos φ + b sin φ`` (the second link turned about
  the hinge axis, Rodrigues' formula), at distance ``d(φ) = |u|`` from the root and at angle
  ``α(φ)`` from the root's +Y, its twist axis.
* **The root's rotation** ``q = S·T(ψ)``, swing ``S`` in the region and twist ``ψ`` free,
  puts the effector at ``S·T(ψ)·u``: ``T(ψ)·u`` sweeps the cone of half-angle ``α`` about
  +Y, and ``S`` carries it to the cone about the bone axis ``S·Y``. So the effector's
  directions are the cones of half-angle ``α`` about the allowed bone axes ``D``, and the
  target's direction ``t̂`` lies at angle ``θ(φ) = max(0, β − α, α − B)`` from them, where
  ``β`` and ``B`` are the least and greatest angles from ``t̂`` to ``D``: to the allowed
  axis nearest ``t̂`` and to the one nearest ``−t̂``
  (:meth:`~core.swing_region.SwingRegion.nearest`).
* **The squared distance** to the target is then ``F(φ) = |t|² + d² − 2|t| d cos θ``.
  Its least value over the hinge's range is at an end of the range or where ``F'`` turns
  from negative to positive: ``F'`` is sampled at :data:`SAMPLES` angles and each such
  bracket closed by regula falsi (Illinois) to machine precision; the first least of the
  ends and the roots is taken.
* **The pose**: the bone axis at the allowed axis ``d*`` nearest ``t̂`` (where
  ``θ = β − α``) or farthest from it (``θ = α − B``), the effector's direction ``n*`` that
  axis turned toward ``t̂`` by ``α``, and the twist that takes ``T(ψ)·u`` to ``S⁻¹·n*``.

Where the least distance has ``θ = 0`` (the target's direction is within reach, only its
distance is not, or it is reached), the closest poses are a family and this module gives
none: the search decides. :func:`closest_floats` is one target in plain floats (the live
path, :mod:`core.triangulation_limits_single`), :func:`closest` a batch in numpy (the
reference; tests pin the two); both are written on :data:`~core.components.FLOAT_OPS` /
:data:`~core.components.ARRAY_OPS` components where their arithmetic allows.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import regula_falsi
from .chain import Chain
from .components import ARRAY_OPS, FLOAT_OPS, Ops, Quat, Vec, qconj, qrotate
from .kinematics import forward_kinematics, forward_kinematics_floats
from .rotations import FloatArray, positive_w
from .swing_region import SwingRegion

#: Samples of ``F'`` over the hinge's range (its ends included): a bracket of each local
#: least is found where the samples change sign.
SAMPLES = 33
#: Regula falsi steps per bracket (a bracket is below 4 ulp long after about a dozen).
_ROOT_STEPS = 60

#: Three components: floats, or ``(M,)`` arrays.
Three = tuple[Any, Any, Any]


@dataclass(frozen=True)
class _Limb:
    """A limb's facts as floats, in the root joint's frame (its rest rotation taken out):
    ``u(φ) = m + a cos φ + b sin φ``; the hinge's unit axis (its own frame) and range; the
    root's rest rotation and swing region."""

    m: Vec
    a: Vec
    b: Vec
    axis: Vec
    lo: float
    hi: float
    rest: Quat
    region: SwingRegion


@functools.lru_cache(maxsize=64)
def _limb(chain: Chain) -> _Limb | None:
    """The facts of a chain this module solves, or ``None`` (see :func:`applies`)."""
    if chain.n_joints != 2:
        return None
    root, hinge = chain.limits
    if root.kind != "ball" or root.is_free or root.lock[1] or root.ranges[1] is not None:
        return None
    if hinge.kind != "hinge":
        return None
    axis, limits = hinge.hinge
    lo, hi = limits if limits is not None else (-math.pi, math.pi)
    if not lo <= hi:
        return None
    rest0, rest1 = (_quat(q) for q in chain.rest_rotations.tolist())
    o0, o1 = (_vec(o) for o in chain.offsets.tolist())
    u = _vec((axis / np.linalg.norm(axis)).tolist())
    along = u[0] * o1[0] + u[1] * o1[1] + u[2] * o1[2]
    # o1 turned about u by φ: o1∥ + o1⊥ cos φ + (u × o1⊥) sin φ, then by the rest rotation
    par = (u[0] * along, u[1] * along, u[2] * along)
    perp = (o1[0] - par[0], o1[1] - par[1], o1[2] - par[2])
    cross = (
        u[1] * perp[2] - u[2] * perp[1],
        u[2] * perp[0] - u[0] * perp[2],
        u[0] * perp[1] - u[1] * perp[0],
    )
    c = qrotate(rest1, par)
    m = (o0[0] + c[0], o0[1] + c[1], o0[2] + c[2])
    return _Limb(
        m, qrotate(rest1, perp), qrotate(rest1, cross), u, lo, hi, rest0, root.swing_region
    )


def _quat(q: list[float]) -> Quat:
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))


def _vec(v: list[float]) -> Vec:
    return (float(v[0]), float(v[1]), float(v[2]))


def applies(chain: Chain) -> bool:
    """Whether ``chain`` is such a limb: two joints, a limited ball joint with a free twist
    at the root, then a hinge (with a range ``lo ≤ hi``, or none)."""
    return _limb(chain) is not None


def _shape(ops: Ops, limb: _Limb, phi: Any) -> tuple[Three, Any, Any, Any, Any]:
    """At hinge angle ``phi``: ``u`` (3 components), ``d``, ``d'``, ``α`` and ``α'``
    (``α = atan2(ρ, u_y)``, ``ρ = √(u_x² + u_z²)``)."""
    cos, sin = ops.cos(phi), ops.sin(phi)
    (mx, my, mz), (ax, ay, az), (bx, by, bz) = limb.m, limb.a, limb.b
    ux, uy, uz = mx + ax * cos + bx * sin, my + ay * cos + by * sin, mz + az * cos + bz * sin
    vx, vy, vz = bx * cos - ax * sin, by * cos - ay * sin, bz * cos - az * sin  # u'
    rho2 = ux * ux + uz * uz
    d2 = rho2 + uy * uy
    d, rho = ops.sqrt(d2), ops.sqrt(rho2)
    dd = (ux * vx + uy * vy + uz * vz) / ops.where(d > 0.0, d, 1.0)  # (0 at the root)
    drho = (ux * vx + uz * vz) / ops.where(rho > 0.0, rho, 1.0)
    dalpha = ops.where(rho > 0.0, (uy * drho - rho * vy) / d2, 0.0)
    return (ux, uy, uz), d, dd, ops.atan2(rho, uy), dalpha


def _distance2(ops: Ops, limb: _Limb, phi: Any, tn: Any, beta: Any, big: Any) -> tuple[Any, Any]:
    """``F(φ) − |t|²`` and ``F'(φ)`` (module docstring) for a target at distance ``tn``
    whose direction is ``beta`` and ``big`` radians from the nearest and the farthest
    allowed bone axes."""
    _, d, dd, alpha, dalpha = _shape(ops, limb, phi)
    short, over = beta - alpha, alpha - big
    theta = ops.where(short >= over, short, over)
    dtheta = ops.where(theta > 0.0, ops.where(short >= over, -dalpha, dalpha), 0.0)
    theta = ops.where(theta > 0.0, theta, 0.0)
    cos, sin = ops.cos(theta), ops.sin(theta)
    value = d * d - 2.0 * tn * d * cos
    slope = 2.0 * d * dd - 2.0 * tn * (dd * cos - d * sin * dtheta)
    return value, slope


def _axis(ops: Ops, x: Any, z: Any) -> tuple[Any, Three]:
    """The swing ``(w, x, 0, z)`` of components ``x, z``: its ``w`` and its bone axis
    ``S·Y = (−2wz, 1 − 2(x² + z²), 2wx)``."""
    r2 = x * x + z * z
    w = ops.sqrt(ops.where(r2 < 1.0, 1.0 - r2, 0.0))
    return w, (-2.0 * w * z, 1.0 - 2.0 * r2, 2.0 * w * x)


def _angle(ops: Ops, p: Three, q: Three) -> Any:
    """The angle between unit vectors ``p`` and ``q``: ``atan2(|p × q|, p·q)``."""
    cx, cy, cz = p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]
    dot = p[0] * q[0] + p[1] * q[1] + p[2] * q[2]
    return ops.atan2(ops.sqrt(cx * cx + cy * cy + cz * cz), dot)


def _own_swing(ops: Ops, v: Three) -> tuple[Any, Any, Any]:
    """The components ``x, z`` of the swing that turns +Y onto the unit ``v`` (``(1 + v_y,
    v_z, 0, −v_x)`` normalised), and whether there is one (not at ``v = −Y``)."""
    norm = ops.sqrt(ops.where(v[1] > -1.0, 2.0 * (1.0 + v[1]), 0.0))
    one = norm > 1e-12
    safe = ops.where(one, norm, 1.0)
    return v[2] / safe, -v[0] / safe, one


def _pose(
    ops: Ops,
    limb: _Limb,
    phi: Any,
    th: Three,
    near: tuple[Any, Any],
    far: tuple[Any, Any],
    beta: Any,
    big: Any,
) -> tuple[tuple[Any, Any, Any, Any], Any]:
    """The root's local rotation (4 components) for the hinge at ``phi`` (module
    docstring), and whether the target's direction lies outside the cones there
    (``θ > 0``: else the rotation is not the answer)."""
    (ux, _, uz), _, _, alpha, _ = _shape(ops, limb, phi)
    short, over = beta - alpha, alpha - big
    use_far = over > short
    out = ops.where(use_far, over, short) > 0.0
    sx, sz = ops.where(use_far, far[0], near[0]), ops.where(use_far, far[1], near[1])
    sw, (dx, dy, dz) = _axis(ops, sx, sz)
    # n* = d* turned toward t̂ by α: cos α d* + sin α p̂, p̂ t̂'s part across d*, normalised
    along = th[0] * dx + th[1] * dy + th[2] * dz
    px, py, pz = th[0] - along * dx, th[1] - along * dy, th[2] - along * dz
    pn = ops.sqrt(px * px + py * py + pz * pz)
    pn = ops.where(pn > 0.0, pn, 1.0)
    ca, sa = ops.cos(alpha), ops.sin(alpha)
    n = (ca * dx + sa * px / pn, ca * dy + sa * py / pn, ca * dz + sa * pz / pn)
    # S⁻¹ n* (qrotate by (sw, −sx, 0, −sz), written out); the twist about +Y turns u onto
    # it: ψ = γ(S⁻¹ n*) − γ(u), γ = atan2(x, z)
    cx, cz = -sx, -sz
    tx, ty, tz = 2.0 * (-cz * n[1]), 2.0 * (cz * n[0] - cx * n[2]), 2.0 * (cx * n[1])
    mx = n[0] + sw * tx + (-cz * ty)
    mz = n[2] + sw * tz + (cx * ty)
    psi = ops.atan2(mx, mz) - ops.atan2(ux, uz)
    hw, hy = ops.cos(0.5 * psi), ops.sin(0.5 * psi)
    # S·T(ψ) = (sw, sx, 0, sz)·(hw, 0, hy, 0)
    return (sw * hw, sx * hw - sz * hy, sw * hy, sz * hw + sx * hy), out


def _bounds(ops: Ops, th: Three, near: tuple[Any, Any], far: tuple[Any, Any]) -> Any:
    """``β`` and ``B``: the angles from ``t̂`` to the nearest and farthest allowed axes."""
    return _angle(ops, th, _axis(ops, *near)[1]), _angle(ops, th, _axis(ops, *far)[1])


def _samples(limb: _Limb) -> list[float]:
    """The hinge angles where ``F'`` is sampled: the range's ends and between them."""
    lo, hi, last = limb.lo, limb.hi, SAMPLES - 1
    return [lo + (hi - lo) * (k / last) for k in range(last)] + [hi]


# ---------------------------------------------------------------- one target, floats
@functools.lru_cache(maxsize=32)
def closest_floats(chain: Chain, target: Vec) -> tuple[tuple[Quat, Quat], tuple[Vec, ...]] | None:
    """The closest admissible pose of the limb ``chain`` to ``target`` (3 floats, base
    frame): its two local rotations (wxyz, ``w ≥ 0``) and three joint positions; ``None``
    where the chain is no such limb (:func:`applies`), at the root, or where the
    target's direction is within the cones at the least distance (module docstring).
    Memoised on its inputs (the last 32): :func:`is_closest` asks again."""
    limb = _limb(chain)
    if limb is None:
        return None
    t = qrotate(qconj(limb.rest), target)
    tn = math.sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2])
    if not tn > 0.0:
        return None
    th = (t[0] / tn, t[1] / tn, t[2] / tn)
    near, far = _nearest_floats(limb.region, th), _nearest_floats(limb.region, _minus(th))
    beta, big = _bounds(FLOAT_OPS, th, near, far)
    angles = _samples(limb)
    values = [_distance2(FLOAT_OPS, limb, phi, tn, beta, big) for phi in angles]
    best, least = angles[0], values[0][0]
    if values[-1][0] < least:
        best, least = angles[-1], values[-1][0]
    for k in range(SAMPLES - 1):
        if values[k][1] < 0.0 <= values[k + 1][1]:
            phi = _root_floats(
                limb, tn, beta, big, angles[k], angles[k + 1], values[k][1], values[k + 1][1]
            )
            value = _distance2(FLOAT_OPS, limb, phi, tn, beta, big)[0]
            if value < least:
                best, least = phi, value
    root, out = _pose(FLOAT_OPS, limb, best, th, near, far, beta, big)
    if not out:
        return None
    s = math.sin(0.5 * best)
    ux, uy, uz = limb.axis
    pose = (_positive(root), (math.cos(0.5 * best), s * ux, s * uy, s * uz))
    return pose, tuple(forward_kinematics_floats(chain, list(pose))[0])


def is_closest(chain: Chain, target: Vec, effector: Sequence[float], tolerance: float) -> bool:
    """Whether ``effector`` (3 floats) is, bit for bit, the effector of the closest pose to
    ``target`` (:func:`closest_floats`) and misses it by more than ``tolerance``: where
    triangulation within the limits answers a target with that pose, no admissible pose
    comes closer, so a method that falls back to triangulation's pose unless its own is
    materially closer (:mod:`core.triangulation_fallback`) ends there too."""
    out = closest_floats(chain, target)
    return (
        out is not None
        and tuple(effector) == out[1][-1]
        and math.dist(effector, target) > tolerance
    )


def _minus(v: Vec) -> Vec:
    return (-v[0], -v[1], -v[2])


def _positive(q: tuple[float, float, float, float]) -> Quat:
    return q if q[0] >= 0.0 else (-q[0], -q[1], -q[2], -q[3])


def _nearest_floats(region: SwingRegion, v: Vec) -> tuple[float, float]:
    """The allowed swing whose bone axis is nearest ``v``: its own where allowed."""
    x, z, one = _own_swing(FLOAT_OPS, v)
    if one and region.contains_one(x, z):
        return x, z
    return region.nearest_one(v)


def _root_floats(
    limb: _Limb, tn: float, beta: float, big: float, lo: float, hi: float, f_lo: float, f_hi: float
) -> float:
    """Where ``F'`` turns from ``f_lo < 0`` at ``lo`` to ``f_hi ≥ 0`` at ``hi``: regula
    falsi, Illinois variant, until the bracket is 4 ulp long (:func:`_roots` for one:
    :func:`core.regula_falsi.illinois_one` of ``−F'``)."""

    def falling(t: float) -> float:
        return -_distance2(FLOAT_OPS, limb, t, tn, beta, big)[1]

    return regula_falsi.illinois_one(falling, lo, hi, -f_lo, -f_hi, _ROOT_STEPS)


# ---------------------------------------------------------------- a batch, numpy
def closest(
    chain: Chain, targets: FloatArray
) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]] | None:
    """:func:`closest_floats` for ``targets (M, 3)`` (base frame) in numpy: rotations
    ``(M, 2, 4)``, positions ``(M, 3, 3)``, and where each is the answer ``(M,)`` (not at
    the root, the direction outside the cones); ``None`` where the chain is no such limb."""
    limb = _limb(chain)
    if limb is None:
        return None
    ops = ARRAY_OPS
    t = np.asarray(targets, dtype=np.float64)
    t = _rotate_rows(qconj(limb.rest), t)
    tn = np.sqrt(t[:, 0] * t[:, 0] + t[:, 1] * t[:, 1] + t[:, 2] * t[:, 2])
    some = tn > 0.0
    safe = np.where(some, tn, 1.0)
    th = (t[:, 0] / safe, t[:, 1] / safe, t[:, 2] / safe)
    near = _nearest(limb.region, th)
    far = _nearest(limb.region, (-th[0], -th[1], -th[2]))
    beta, big = _bounds(ops, th, near, far)
    angles = np.array(_samples(limb))
    cols = (tn[:, None], beta[:, None], big[:, None])
    values, slopes = _distance2(ops, limb, angles[None, :], *cols)
    # the candidates in order: the ends, then the roots of the brackets by angle
    last = values[:, -1] < values[:, 0]
    best = np.where(last, angles[-1], angles[0])
    least = np.where(last, values[:, -1], values[:, 0])
    bracket = (slopes[:, :-1] < 0.0) & (slopes[:, 1:] >= 0.0)
    r, k = np.nonzero(bracket)
    if r.size:
        phi = _roots(
            limb, tn[r], beta[r], big[r], angles[k], angles[k + 1], slopes[r, k], slopes[r, k + 1]
        )
        value = _distance2(ops, limb, phi, tn[r], beta[r], big[r])[0]
        for j in range(r.size):  # (in order: a later root replaces only a strictly lesser)
            if value[j] < least[r[j]]:
                best[r[j]], least[r[j]] = phi[j], value[j]
    root, out = _pose(ops, limb, best, th, near, far, beta, big)
    s = np.sin(0.5 * best)
    hinge = np.stack([np.cos(0.5 * best)] + [s * c for c in limb.axis], axis=-1)
    rotations = np.stack([positive_w(np.stack(root, axis=-1)), hinge], axis=1)
    positions, _ = forward_kinematics(chain, rotations)
    return rotations, positions, out & some


def _rotate_rows(q: Quat, v: FloatArray) -> FloatArray:
    """``qrotate(q, v)`` of rows ``v (M, 3)`` (the same operations)."""
    x, y, z = qrotate(q, (v[:, 0], v[:, 1], v[:, 2]))
    return np.stack([x, y, z], axis=-1)


def _nearest(region: SwingRegion, v: Three) -> tuple[FloatArray, FloatArray]:
    """:func:`_nearest_floats` for ``(M,)`` components."""
    x, z, one = _own_swing(ARRAY_OPS, v)
    own = one & region.contains(x, z)
    if not own.all():
        other = ~own
        nx, nz = region.nearest(np.stack([c[other] for c in v], axis=-1))
        x, z = x.copy(), z.copy()
        x[other], z[other] = nx, nz
    return x, z


def _roots(
    limb: _Limb,
    tn: FloatArray,
    beta: FloatArray,
    big: FloatArray,
    lo: FloatArray,
    hi: FloatArray,
    f_lo: FloatArray,
    f_hi: FloatArray,
) -> FloatArray:
    """:func:`_root_floats` for ``(K,)`` brackets (:func:`core.regula_falsi.illinois` of
    ``−F'``, which falls where ``F'`` rises: negation is exact, so the same steps)."""

    def falling(t: FloatArray) -> FloatArray:
        return -_distance2(ARRAY_OPS, limb, t, tn, beta, big)[1]

    return regula_falsi.illinois(falling, lo, hi, -f_lo, -f_hi, _ROOT_STEPS)


__all__ = ["SAMPLES", "applies", "closest", "closest_floats", "is_closest"]
