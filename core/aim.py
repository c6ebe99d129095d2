# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint rotations from wanted joint positions, within the joints' limits.

:func:`aim` walks a chain from the root: joint ``i``'s wanted link direction (toward the
wanted position of joint ``i + 1``) is taken into its parent's frame ``W_{i−1} · rest_i``
and its local rotation is the **shortest turn** from the rest link direction to it — no
twist about the link, as ``ik_addon.evaluate.untwist`` gives free joints — then its limits
project it (:meth:`core.limits.JointLimits.project`; a hinge first drops the part of the
direction along its axis, so it turns as far as the direction's projection into its
plane). The next joint is placed by forward kinematics, ``p_{i+1} = p_i + W_i · offset_i``,
so the positions returned are always those of the rotations. On a chain without limits
the wanted positions are met exactly when they are at link lengths from each other.

**Twist for hinges.** A hinge (two IK locks, or an explicit axis) bends only in the plane
its axis allows. A parent free to twist (Y not locked) is turned about its own link so the
child's hinge axis is perpendicular to the child's wanted direction (the two roots of
``A cos φ + B sin φ + C = 0``), taking the root whose bend has the child's preferred sign
(a one-sided range's, else the start pose's, :func:`hinge_signs`), else the smaller turn.

Used by FABRIK's backward-reaching stage (:mod:`core.fabrik`) and by the even spread
(:mod:`core.spread`). Written once on components (:mod:`core.components`): plain floats for
one pose, ``(N,)`` arrays for a batch.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from .chain import Chain
from .components import (
    FLOAT_OPS,
    Num,
    Ops,
    Quat,
    Vec,
    qconj,
    qmul,
    qrotate,
    vadd,
    vdot,
    vscale,
    vsub,
)

#: Floor for divisors whose result is discarded where they vanish.
_SAFE = 1e-300

_IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class AimPlan:
    """Per-chain constants (floats), computed once per chain.

    Attributes:
        n, reach: joint count and straight length.
        lengths: ``d_i``, each link's length.
        units: each link's unit direction in its joint's frame.
        rests: rest rotations (wxyz).
        kinds: ``"free"``, ``"hinge"`` or ``"project"`` (other limits) per joint.
        hinge_axes: a hinge joint's unit axis in its frame (else ``None``).
        turn_axes: the axis of a half turn of the link (shortest turn to the opposite
            direction): the hinge axis, else the joint's X axis made perpendicular to the link.
        aligns: joint ``i`` may twist and joint ``i + 1`` is a hinge (twist for hinges).
        signs: a hinge's preferred bend sign from a one-sided range (``0``: none).
        all_free: no joint has limits.
    """

    n: int
    reach: float
    lengths: tuple[float, ...]
    units: tuple[Vec, ...]
    rests: tuple[Quat, ...]
    kinds: tuple[str, ...]
    hinge_axes: tuple[Vec | None, ...]
    turn_axes: tuple[Vec, ...]
    aligns: tuple[bool, ...]
    signs: tuple[float, ...]
    all_free: bool


_PLANS: weakref.WeakKeyDictionary[Chain, AimPlan] = weakref.WeakKeyDictionary()


def _vec(v: Any) -> Vec:
    return (float(v[0]), float(v[1]), float(v[2]))


def aim_plan(chain: Chain) -> AimPlan:
    plan = _PLANS.get(chain)
    if plan is not None:
        return plan
    n = chain.n_joints
    kinds: list[str] = []
    hinge_axes: list[Vec | None] = []
    turn_axes: list[Vec] = []
    signs: list[float] = []
    units = [_vec(o / length) for o, length in zip(chain.offsets, chain.lengths, strict=True)]
    for i, lim in enumerate(chain.limits):
        unit = np.asarray(units[i])
        if lim.is_free:
            kinds.append("free")
            hinge_axes.append(None)
            signs.append(0.0)
            hint = np.array([1.0, 0.0, 0.0])
        elif lim.kind == "hinge":
            axis, limits = lim.hinge
            kinds.append("hinge")
            hinge_axes.append(_vec(axis))
            lo, hi = limits if limits is not None else (-math.pi, math.pi)
            signs.append(1.0 if lo >= 0.0 and hi > 0.0 else -1.0 if hi <= 0.0 and lo < 0.0 else 0.0)
            hint = np.asarray(axis, dtype=float)
        else:
            kinds.append("project")
            hinge_axes.append(None)
            signs.append(0.0)
            hint = np.array([1.0, 0.0, 0.0])
        perp = hint - np.dot(hint, unit) * unit
        if np.linalg.norm(perp) < 1e-6:
            perp = np.cross(unit, [0.0, 0.0, 1.0])
            if np.linalg.norm(perp) < 1e-6:
                perp = np.cross(unit, [0.0, 1.0, 0.0])
        turn_axes.append(_vec(perp / np.linalg.norm(perp)))
    aligns = tuple(
        i + 1 < n
        and kinds[i + 1] == "hinge"
        and kinds[i] != "hinge"
        and not chain.limits[i].lock[1]
        for i in range(n)
    )
    plan = AimPlan(
        n=n,
        reach=chain.reach,
        lengths=tuple(float(x) for x in chain.lengths),
        units=tuple(units),
        rests=tuple(tuple(float(x) for x in q) for q in chain.rest_rotations),  # type: ignore[misc]
        kinds=tuple(kinds),
        hinge_axes=tuple(hinge_axes),
        turn_axes=tuple(turn_axes),
        aligns=aligns,
        signs=tuple(signs),
        all_free=all(k == "free" for k in kinds),
    )
    _PLANS[chain] = plan
    return plan


# --------------------------------------------------------------------------- the pass
def turn(ops: Ops, u: Vec, v: Vec, half: Vec) -> Quat:
    """Shortest rotation taking the unit direction ``u`` (floats) to the direction of ``v``;
    a half turn about ``half`` (unit, perpendicular to ``u``) for the opposite direction,
    the identity for ``v = 0``. ``1 + cos`` is written as ``|u × v̂|² / (1 − cos)`` where
    ``cos < 0`` (no cancellation). On floats :func:`_turn_floats`, the same arithmetic."""
    if ops is FLOAT_OPS:
        return _turn_floats(u, v, half)
    nv = ops.sqrt(vdot(v, v))
    inv = 1.0 / ops.where(nv > _SAFE, nv, 1.0)
    w0, w1, w2 = v[0] * inv, v[1] * inv, v[2] * inv
    dot = u[0] * w0 + u[1] * w1 + u[2] * w2
    cx = u[1] * w2 - u[2] * w1
    cy = u[2] * w0 - u[0] * w2
    cz = u[0] * w1 - u[1] * w0
    cross2 = cx * cx + cy * cy + cz * cz
    behind = dot < 0.0
    w = ops.where(behind, cross2 / ops.where(behind, 1.0 - dot, 1.0), 1.0 + dot)
    opposite = behind & (cross2 < 1e-24)
    w = ops.where(opposite, 0.0, w)
    cx = ops.where(opposite, half[0], cx)
    cy = ops.where(opposite, half[1], cy)
    cz = ops.where(opposite, half[2], cz)
    zero = nv <= _SAFE
    w = ops.where(zero, 1.0, w)
    cx, cy, cz = ops.where(zero, 0.0, cx), ops.where(zero, 0.0, cy), ops.where(zero, 0.0, cz)
    norm = ops.sqrt(w * w + cx * cx + cy * cy + cz * cz)
    return w / norm, cx / norm, cy / norm, cz / norm


def _turn_floats(u: Vec, v: Vec, half: Vec) -> Quat:
    """:func:`turn` for one direction in plain floats: the branch each selection takes,
    computed alone (the same operations on the values kept, so the same bits; tested)."""
    nv = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if nv <= _SAFE:
        return 1.0, 0.0, 0.0, 0.0
    inv = 1.0 / nv
    w0, w1, w2 = v[0] * inv, v[1] * inv, v[2] * inv
    dot = u[0] * w0 + u[1] * w1 + u[2] * w2
    cx = u[1] * w2 - u[2] * w1
    cy = u[2] * w0 - u[0] * w2
    cz = u[0] * w1 - u[1] * w0
    cross2 = cx * cx + cy * cy + cz * cz
    if dot < 0.0:
        if cross2 < 1e-24:
            w, (cx, cy, cz) = 0.0, half
        else:
            w = cross2 / (1.0 - dot)
    else:
        w = 1.0 + dot
    norm = math.sqrt(w * w + cx * cx + cy * cy + cz * cz)
    return w / norm, cx / norm, cy / norm, cz / norm


def project(chain: Chain, i: int, q: Quat, size: int) -> Quat:
    """Joint ``i``'s limits applied to ``q`` (:meth:`JointLimits.project`; for one
    rotation in floats its float twin :meth:`JointLimits.project_floats`)."""
    if isinstance(q[0], float):
        w, x, y, z = chain.limits[i].project_floats(q)
        return w, x, y, z
    stacked = np.stack([np.broadcast_to(c, (size,)) for c in q], axis=-1)
    out = chain.limits[i].project(stacked)
    return out[:, 0], out[:, 1], out[:, 2], out[:, 3]


def axis_angle(axis: Vec, phi: Num, ops: Ops) -> Quat:
    s = ops.sin(0.5 * phi)
    return ops.cos(0.5 * phi), axis[0] * s, axis[1] * s, axis[2] * s


#: Weight of the bend-plane hint against ``d × f / |f|`` (see :func:`_hinge_twist`).
_HINT = 1e-6


def _hinge_twist(
    ops: Ops, plan: AimPlan, i: int, world: Quat, want: Vec, sign: Num, hint: Vec | None
) -> Num:
    """Twist ``φ`` of joint ``i`` about its own link (world direction ``d``) that turns the
    child hinge's axis ``h`` (its part across ``d``) onto ``sign · m``, the normal of the
    plane of ``d`` and the child's wanted direction ``f = want``:
    ``m = d × f / |f| + 1e-6 · hint``. A hinge about ``m`` bends ``d`` toward ``f``
    (positive bend ``(d × f)·h > 0``; ``sign`` −1 bends the other way round its axis).
    Where the axis leans on the link, of the exact roots of ``h(φ)·f = 0`` the one nearest
    that twist (none where the lean exceeds the bend: the aligned twist, the closest).

    ``hint`` is the bend-plane normal the pose is built around (the spread family's plane,
    carried to the target, signed like the child's start bend): where ``f`` runs along
    ``d`` (a straight chain: any twist reaches) it decides, so the twist tends to the same
    limit from both sides of straight instead of jumping — a chain crossing its reach limit
    does not spin about itself. Exact for axes across the link (Blender's Lock IK Y+Z
    hinge about X)."""
    d = qrotate(world, plan.units[i])
    h0 = qrotate(qmul(world, plan.rests[i + 1]), plan.hinge_axes[i + 1])  # type: ignore[arg-type]
    hp = vsub(h0, vscale(d, vdot(h0, d)))
    nf = ops.sqrt(vdot(want, want))
    inv = 1.0 / ops.where(nf > _SAFE, nf, 1.0)
    m = (
        (d[1] * want[2] - d[2] * want[1]) * inv,
        (d[2] * want[0] - d[0] * want[2]) * inv,
        (d[0] * want[1] - d[1] * want[0]) * inv,
    )
    if hint is not None:
        m = vadd(m, vscale(hint, _HINT))
    m = vscale(m, ops.where(sign < 0.0, -1.0, 1.0))
    mp = vsub(m, vscale(d, vdot(m, d)))
    cross = (
        hp[1] * mp[2] - hp[2] * mp[1],
        hp[2] * mp[0] - hp[0] * mp[2],
        hp[0] * mp[1] - hp[1] * mp[0],
    )
    aligned = ops.atan2(vdot(cross, d), vdot(hp, mp))
    # Exact roots of h(φ)·f = A cos φ + B sin φ + C = 0, h(φ) = h∥ + cos φ h⊥ + sin φ d × h⊥:
    # where they exist, the one nearest the aligned twist (they differ when h leans on d).
    dh = (d[1] * hp[2] - d[2] * hp[1], d[2] * hp[0] - d[0] * hp[2], d[0] * hp[1] - d[1] * hp[0])
    a, b = vdot(hp, want), vdot(dh, want)
    c = vdot(h0, d) * vdot(d, want)
    r = ops.sqrt(a * a + b * b)
    alpha = ops.atan2(b, a)
    beta = ops.acos_clipped(-c / ops.where(r > _SAFE, r, 1.0))

    def gap(phi: Num) -> Num:
        return abs(ops.atan2(ops.sin(phi - aligned), ops.cos(phi - aligned)))

    nearest = ops.where(gap(alpha + beta) <= gap(alpha - beta), alpha + beta, alpha - beta)
    return ops.where((abs(c) < r) & (r > 1e-9 * nf), nearest, aligned)


def _hinge_twist_floats(
    plan: AimPlan, i: int, world: Quat, want: Vec, sign: float, hint: Vec | None
) -> float:
    """:func:`_hinge_twist` on floats, the helpers written out: the same operations in the
    same order, so the same bits (tested through :func:`_aim_floats`); the nearest root
    is computed only where it is the answer."""
    d0, d1, d2 = qrotate(world, plan.units[i])
    h0x, h0y, h0z = qrotate(qmul(world, plan.rests[i + 1]), plan.hinge_axes[i + 1])  # type: ignore[arg-type]
    hd = h0x * d0 + h0y * d1 + h0z * d2
    hx, hy, hz = h0x - d0 * hd, h0y - d1 * hd, h0z - d2 * hd
    f0, f1, f2 = want
    nf = math.sqrt(f0 * f0 + f1 * f1 + f2 * f2)
    inv = 1.0 / (nf if nf > _SAFE else 1.0)
    m0, m1, m2 = (d1 * f2 - d2 * f1) * inv, (d2 * f0 - d0 * f2) * inv, (d0 * f1 - d1 * f0) * inv
    if hint is not None:
        m0, m1, m2 = m0 + hint[0] * _HINT, m1 + hint[1] * _HINT, m2 + hint[2] * _HINT
    s = -1.0 if sign < 0.0 else 1.0
    m0, m1, m2 = m0 * s, m1 * s, m2 * s
    md = m0 * d0 + m1 * d1 + m2 * d2
    m0, m1, m2 = m0 - d0 * md, m1 - d1 * md, m2 - d2 * md
    cx, cy, cz = hy * m2 - hz * m1, hz * m0 - hx * m2, hx * m1 - hy * m0
    aligned = math.atan2(cx * d0 + cy * d1 + cz * d2, hx * m0 + hy * m1 + hz * m2)
    ex, ey, ez = d1 * hz - d2 * hy, d2 * hx - d0 * hz, d0 * hy - d1 * hx
    a = hx * f0 + hy * f1 + hz * f2
    b = ex * f0 + ey * f1 + ez * f2
    c = hd * (d0 * f0 + d1 * f1 + d2 * f2)
    r = math.sqrt(a * a + b * b)
    if not (abs(c) < r and r > 1e-9 * nf):
        return aligned
    alpha = math.atan2(b, a)
    cosine = -c / (r if r > _SAFE else 1.0)
    beta = math.acos(-1.0 if cosine < -1.0 else 1.0 if cosine > 1.0 else cosine)
    up, down = alpha + beta, alpha - beta
    gap_up = abs(math.atan2(math.sin(up - aligned), math.cos(up - aligned)))
    gap_down = abs(math.atan2(math.sin(down - aligned), math.cos(down - aligned)))
    return up if gap_up <= gap_down else down


def aim(
    ops: Ops,
    plan: AimPlan,
    chain: Chain,
    wants: list[Vec],
    signs: list[Num],
    size: int,
    hints: list[Vec | None] | None = None,
) -> tuple[list[Quat], list[Vec]]:
    """Each joint turned toward the wanted position of the next (``wants``, ``n + 1``
    points, base frame), limited, and the next joint placed by forward kinematics.

    ``signs``: each hinge's preferred bend sign (:func:`hinge_signs`); ``hints``: per joint,
    the bend-plane normal (base frame) a hinge child's parent twists toward where the chain
    is straight (:func:`_hinge_twist`), or ``None``. Returns the ``n`` local rotations and
    the ``n + 1`` positions (components). On floats :func:`_aim_floats`, the same
    arithmetic."""
    if ops is FLOAT_OPS:
        return _aim_floats(plan, chain, wants, signs, hints)
    return _aim(ops, plan, chain, wants, signs, size, hints)


def _aim(
    ops: Ops,
    plan: AimPlan,
    chain: Chain,
    wants: list[Vec],
    signs: list[Num],
    size: int,
    hints: list[Vec | None] | None,
) -> tuple[list[Quat], list[Vec]]:
    """:func:`aim` written once on components (the reference of :func:`_aim_floats`)."""
    n = plan.n
    world: Quat = _IDENTITY
    p: Vec = (0.0, 0.0, 0.0)
    rots: list[Quat] = []
    pos: list[Vec] = [p]
    for i in range(n):
        rest = plan.rests[i]
        parent = world if rest == _IDENTITY else qmul(world, rest)
        local = qrotate(qconj(parent), vsub(wants[i + 1], p))
        axis = plan.hinge_axes[i]
        kind = plan.kinds[i]
        if axis is not None:
            local = vsub(local, vscale(axis, vdot(local, axis)))
        q = turn(ops, plan.units[i], local, plan.turn_axes[i])
        if kind != "free":
            q = project(chain, i, q, size)
        if plan.aligns[i]:
            turned = qmul(parent, q)
            tip = vadd(p, vscale(qrotate(turned, plan.units[i]), plan.lengths[i]))
            hint = None if hints is None else hints[i + 1]
            phi = _hinge_twist(ops, plan, i, turned, vsub(wants[i + 2], tip), signs[i + 1], hint)
            q = qmul(q, axis_angle(plan.units[i], phi, ops))
            if kind != "free":
                q = project(chain, i, q, size)
        world = qmul(parent, q)
        p = vadd(p, vscale(qrotate(world, plan.units[i]), plan.lengths[i]))
        rots.append(q)
        pos.append(p)
    return rots, pos


def _aim_floats(
    plan: AimPlan,
    chain: Chain,
    wants: list[Vec],
    signs: list[Num],
    hints: list[Vec | None] | None,
) -> tuple[list[Quat], list[Vec]]:
    """:func:`_aim` for one pose in plain floats, the one-target paths' hot loop (FABRIK
    runs it every round): :func:`~core.components.qmul`, :func:`~core.components.qrotate`
    and the vector helpers written out — the same operations in the same order, so the
    same bits (tested) — and each joint's limits by
    :meth:`~core.limits.JointLimits.project_floats`."""
    limits = chain.limits
    # the world rotation of the joint's parent frame, and the joint's position
    ww, wx, wy, wz = _IDENTITY
    px, py, pz = 0.0, 0.0, 0.0
    rots: list[Quat] = []
    pos: list[Vec] = [(px, py, pz)]
    for i, (rest, (vx, vy, vz), length, axis, kind) in enumerate(
        zip(plan.rests, plan.units, plan.lengths, plan.hinge_axes, plan.kinds, strict=True)
    ):
        if rest != _IDENTITY:  # parent = world · rest
            rw, rx, ry, rz = rest
            ww, wx, wy, wz = (
                ww * rw - wx * rx - wy * ry - wz * rz,
                ww * rx + wx * rw + wy * rz - wz * ry,
                ww * ry - wx * rz + wy * rw + wz * rx,
                ww * rz + wx * ry - wy * rx + wz * rw,
            )
        # local = conj(parent) · (want − p)
        gx, gy, gz = wants[i + 1]
        gx, gy, gz = gx - px, gy - py, gz - pz
        ux, uy, uz = -wx, -wy, -wz
        tx = 2.0 * (uy * gz - uz * gy)
        ty = 2.0 * (uz * gx - ux * gz)
        tz = 2.0 * (ux * gy - uy * gx)
        local = (
            gx + ww * tx + (uy * tz - uz * ty),
            gy + ww * ty + (uz * tx - ux * tz),
            gz + ww * tz + (ux * ty - uy * tx),
        )
        if axis is not None:
            lx, ly, lz = local
            ax, ay, az = axis
            along = lx * ax + ly * ay + lz * az
            local = (lx - ax * along, ly - ay * along, lz - az * along)
        q = _turn_floats((vx, vy, vz), local, plan.turn_axes[i])
        lim = limits[i]
        if kind != "free":
            q = lim.project_floats(q)
        if plan.aligns[i]:
            parent = (ww, wx, wy, wz)
            turned = qmul(parent, q)
            dx, dy, dz = qrotate(turned, (vx, vy, vz))
            tip = (px + dx * length, py + dy * length, pz + dz * length)
            hint = None if hints is None else hints[i + 1]
            nx, ny, nz = wants[i + 2]
            want = (nx - tip[0], ny - tip[1], nz - tip[2])
            phi = _hinge_twist_floats(plan, i, turned, want, signs[i + 1], hint)
            half = 0.5 * phi
            sh = math.sin(half)
            q = qmul(q, (math.cos(half), vx * sh, vy * sh, vz * sh))
            if kind != "free":
                q = lim.project_floats(q)
        # world = parent · q; p ← p + world·unit · length
        qw, qx, qy, qz = q
        ww, wx, wy, wz = (
            ww * qw - wx * qx - wy * qy - wz * qz,
            ww * qx + wx * qw + wy * qz - wz * qy,
            ww * qy - wx * qz + wy * qw + wz * qx,
            ww * qz + wx * qy - wy * qx + wz * qw,
        )
        tx = 2.0 * (wy * vz - wz * vy)
        ty = 2.0 * (wz * vx - wx * vz)
        tz = 2.0 * (wx * vy - wy * vx)
        px += (vx + ww * tx + (wy * tz - wz * ty)) * length
        py += (vy + ww * ty + (wz * tx - wx * tz)) * length
        pz += (vz + ww * tz + (wx * ty - wy * tx)) * length
        rots.append((qw, qx, qy, qz))
        pos.append((px, py, pz))
    return rots, pos


def hinge_signs(ops: Ops, plan: AimPlan, chain: Chain, start: list[Quat]) -> list[Num]:
    """Each hinge's preferred bend sign: the sign of its bend from its parent's link,
    ``(d_{i−1} × d_i)·h``, where its range forces one (the bend at both ends of the range
    has one sign), else in the start pose (``+1`` for a straight start). ``0`` for
    joints that are not hinges."""
    out: list[Num] = []
    world: Quat = _IDENTITY
    prev: Vec | None = None
    for i, axis in enumerate(plan.hinge_axes):
        parent = qmul(world, plan.rests[i])
        world = qmul(parent, start[i])
        d = qrotate(world, plan.units[i])
        if axis is None or prev is None:
            out.append(0.0)
            prev = d
            continue
        h = qrotate(parent, axis)

        def bend(link: Vec, h: Vec = h, prev: Vec = prev) -> Num:
            return vdot(
                (
                    prev[1] * link[2] - prev[2] * link[1],
                    prev[2] * link[0] - prev[0] * link[2],
                    prev[0] * link[1] - prev[1] * link[0],
                ),
                h,
            )

        now = bend(d)
        sign: Num = ops.where(now < 0.0, -1.0, 1.0)
        limits = chain.limits[i].hinge[1]
        if limits is not None:
            lo = bend(qrotate(qmul(parent, axis_angle(axis, limits[0], FLOAT_OPS)), plan.units[i]))
            hi = bend(qrotate(qmul(parent, axis_angle(axis, limits[1], FLOAT_OPS)), plan.units[i]))
            sign = ops.where(
                (lo > 0.0) & (hi > 0.0), 1.0, ops.where((lo < 0.0) & (hi < 0.0), -1.0, sign)
            )
        out.append(sign)
        prev = d
    return out


__all__ = ["AimPlan", "aim", "aim_plan", "axis_angle", "hinge_signs", "project", "turn"]
