# SPDX-License-Identifier: GPL-3.0-or-later
"""CCD's sweeps for one target in plain floats (:mod:`core.ccd_single`).

The float twins of :mod:`core.ccd_setup` and :mod:`core.ccd_sweep`: the per-chain joint
facts (:class:`_Facts`), the goal (:class:`_Goal`), frames and objective, the hinge and ball
steps, one sweep, the descent and the coarse sweep of a stalled target. Rotation matrices
are row-major 9-tuples (:mod:`core.matrix9`), vectors 3-tuples.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import ccd_setup, ccd_sweep
from . import rotations as rot
from .chain import Chain
from .components import Vec, mapply, qmatrix, qmul, qrotate, vperpendicular
from .matrix9 import (
    _I9,
    M9,
    _axis_turn,
    _fdot,
    _m9,
    _mm,
    _mmt,
    _mtm,
    _mtv,
    _orthonormalize,
    quaternion_of,
)

_TWO_PI = 2.0 * math.pi


@dataclass(frozen=True)
class _J:
    """:class:`core.ccd_setup._Joint` in floats."""

    index: int
    ref: ccd_setup._Joint
    hinge: bool
    axis: Vec
    skew: M9
    angle_range: tuple[float, float] | None
    hinge_weight: float
    stiff: bool
    exact: bool
    free: bool


@dataclass(frozen=True)
class _Facts:
    rest: tuple[M9, ...]
    rest_is_identity: tuple[bool, ...]
    parts: tuple[tuple[tuple[int, float], ...], ...]
    joints: tuple[_J, ...]


@functools.lru_cache(maxsize=64)
def _facts(chain: Chain) -> _Facts:
    rest, identity, parts, joints = ccd_setup._chain_facts(chain)
    js = []
    for j in joints:
        skew = _m9(j.skew)
        js.append(
            _J(
                j.index,
                j,
                j.hinge,
                (float(j.axis[0]), float(j.axis[1]), float(j.axis[2])),
                skew,
                j.angle_range,
                j.hinge_weight,
                j.stiff,
                j.exact,
                j.limits.is_free,
            )
        )
    return _Facts(tuple(_m9(r) for r in rest), identity, parts, tuple(js))


@dataclass
class _Goal:
    target: Vec
    frame: M9 | None
    floor: float
    settled: float


def _frames(f: _Facts, Q: list[M9]) -> tuple[list[Vec], list[M9], list[M9]]:
    """:func:`core.ccd_setup._frames` for one pose: positions, parent-side frames, joint frames."""
    n = len(Q)
    positions: list[Vec] = [(0.0, 0.0, 0.0)]
    F: list[M9] = [f.rest[0]]
    W: list[M9] = []
    for i in range(n):
        w = _mm(F[i], Q[i])
        W.append(w)
        x, y, z = positions[i]
        for k, length in f.parts[i]:
            x, y, z = x + w[k] * length, y + w[3 + k] * length, z + w[6 + k] * length
        positions.append((x, y, z))
        if i + 1 < n:
            F.append(w if f.rest_is_identity[i + 1] else _mm(w, f.rest[i + 1]))
    return positions, F, W


def _score(s: ccd_setup._Setup, e: Vec, E: M9 | None, goal: _Goal) -> tuple[float, bool]:
    """:func:`core.ccd_setup._score` for one target."""
    dx, dy, dz = e[0] - goal.target[0], e[1] - goal.target[1], e[2] - goal.target[2]
    err2 = dx * dx + dy * dy + dz * dz
    reached = err2 <= s.tol2 if s.check_position else True
    if E is None or goal.frame is None:
        return s.c_pos * err2, reached
    trace = _fdot(E, goal.frame)
    g = s.c_pos * err2 + s.c_rot * max(0.0, 6.0 - 2.0 * trace)
    if s.check_angle:
        reached = reached and trace >= s.min_trace
    return g, reached


def _wrap(phi: float) -> float:
    return (phi + math.pi) % _TWO_PI - math.pi


def _best_in_range(phi: float, lo: float, hi: float) -> float:
    """:func:`core.ccd_sweep._best_in_range` for one angle."""
    phi = _wrap(phi)
    if lo <= phi <= hi:
        return phi
    return lo if abs(_wrap(phi - lo)) <= abs(_wrap(phi - hi)) else hi


def _hinge_step(
    s: ccd_setup._Setup, j: _J, F: M9, Q: M9, u: Vec, v: Vec, E: M9 | None, goal: _Goal
) -> tuple[M9, Vec, float]:
    """:func:`core.ccd_sweep._hinge_step` for one target: the new local rotation, and the
    world turn as its unit axis and angle (the closed form of :mod:`core.ccd`, in the
    joint's parent-side frame ``F``). ``Fᵀu``,
    ``Fᵀv`` and ``F·axis`` are written out with :func:`core.matrix9._mtv`'s and
    :func:`core.components.mapply`'s sums (this runs on every joint step)."""
    f0, f1, f2, f3, f4, f5, f6, f7, f8 = F
    u0, u1, u2 = u
    v0, v1, v2 = v
    ul0, ul1, ul2 = (
        f0 * u0 + f3 * u1 + f6 * u2,
        f1 * u0 + f4 * u1 + f7 * u2,
        f2 * u0 + f5 * u1 + f8 * u2,
    )
    vl0, vl1, vl2 = (
        f0 * v0 + f3 * v1 + f6 * v2,
        f1 * v0 + f4 * v1 + f7 * v2,
        f2 * v0 + f5 * v1 + f8 * v2,
    )
    ax, ay, az = j.axis
    au = ul0 * ax + ul1 * ay + ul2 * az
    av = vl0 * ax + vl1 * ay + vl2 * az
    c_pos = s.c_pos
    A = c_pos * (ul0 * vl0 + ul1 * vl1 + ul2 * vl2 - au * av)
    cx = ay * ul2 - az * ul1
    cy = az * ul0 - ax * ul2
    cz = ax * ul1 - ay * ul0
    B = c_pos * (cx * vl0 + cy * vl1 + cz * vl2)
    if E is not None and goal.frame is not None and s.c_rot > 0.0:
        Dl = _mtm(F, E)
        Vl = _mtm(F, goal.frame)
        aD = _mtv(Dl, j.axis)
        aV = _mtv(Vl, j.axis)
        A = A + s.c_rot * (_fdot(Dl, Vl) - (aD[0] * aV[0] + aD[1] * aV[1] + aD[2] * aV[2]))
        B = B + s.c_rot * _fdot(_mm(j.skew, Dl), Vl)
    phi0 = math.atan2(_fdot(j.skew, Q), Q[0] + Q[4] + Q[8] - 1.0)
    scale = (
        c_pos * math.sqrt((ul0 * ul0 + ul1 * ul1 + ul2 * ul2) * (vl0 * vl0 + vl1 * vl1 + vl2 * vl2))
        + 3.0 * s.c_rot
    )
    size = A * A + B * B
    noise = (ccd_sweep._NOISE * scale) ** 2
    phi = phi0 + j.hinge_weight * math.atan2(B, A) if size > noise else phi0
    phi = _wrap(phi) if j.angle_range is None else _best_in_range(phi, *j.angle_range)
    world = (f0 * ax + f1 * ay + f2 * az, f3 * ax + f4 * ay + f5 * az, f6 * ax + f7 * ay + f8 * az)
    return _axis_turn(j.axis, phi), world, phi - phi0


def _ball_turn(s: ccd_setup._Setup, W: M9, u: Vec, v: Vec, E: M9 | None, goal: _Goal) -> M9:
    """:func:`core.ccd_sweep._ball_turn` for one target."""
    if E is not None and goal.frame is not None and s.c_rot > 0.0:
        H = np.array(
            [
                s.c_pos * u[r] * v[c] + s.c_rot * e
                for r in range(3)
                for c, e in zip(range(3), _mmt(E, goal.frame)[3 * r : 3 * r + 3], strict=True)
            ]
        ).reshape(1, 3, 3)
        U, _, Vt = np.linalg.svd(H)
        Vt[:, 2, :] *= np.sign(np.linalg.det(U) * np.linalg.det(Vt))[:, None]
        return _m9(np.swapaxes(Vt, -1, -2) @ np.swapaxes(U, -1, -2))
    eps2 = s.eps * s.eps
    nu2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2]
    nv2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
    if nu2 <= eps2 or nv2 <= eps2:
        return _I9
    ru = math.sqrt(nu2)
    rv = math.sqrt(nv2)
    a = (u[0] / ru, u[1] / ru, u[2] / ru)
    b = (v[0] / rv, v[1] / rv, v[2] / rv)
    m = (a[0] + b[0], a[1] + b[1], a[2] + b[2])
    mm = m[0] * m[0] + m[1] * m[1] + m[2] * m[2]
    if mm < ccd_sweep._ANTIPARALLEL:
        m = vperpendicular(a, (W[0], W[3], W[6]))
        mm = 1.0
    c = 2.0 / mm
    m0, m1, m2 = m
    a0, a1, a2 = a
    b0, b1, b2 = b
    cm0, cm1, cm2 = c * m0, c * m1, c * m2
    return (
        1.0 - cm0 * m0 + 2.0 * b0 * a0,
        -cm0 * m1 + 2.0 * b0 * a1,
        -cm0 * m2 + 2.0 * b0 * a2,
        -cm1 * m0 + 2.0 * b1 * a0,
        1.0 - cm1 * m1 + 2.0 * b1 * a1,
        -cm1 * m2 + 2.0 * b1 * a2,
        -cm2 * m0 + 2.0 * b2 * a0,
        -cm2 * m1 + 2.0 * b2 * a1,
        1.0 - cm2 * m2 + 2.0 * b2 * a2,
    )


def _exact_ball_step(s: ccd_setup._Setup, F: M9, Q: M9, W: M9, u: Vec, v: Vec) -> tuple[M9, Vec]:
    """:func:`_ball_turn` and :func:`_ball_step` of a free ball joint under a position goal,
    without building the turn: ``R = I − c m mᵀ + 2 b aᵀ`` (``a``, ``b`` the unit ``u``,
    ``v``; ``m = a + b``, ``c = 2 / |m|²``: the shortest rotation taking ``a`` to ``b``, as a
    product of two reflections) gives the new local rotation
    ``FᵀRW = Q − c (Fᵀm)(mᵀW) + 2 (Fᵀb)(aᵀW)`` (``FᵀW = Q``) and the turned ``R u``.
    Returns ``(Q_new, R u)``."""
    eps2 = s.eps * s.eps
    u0, u1, u2 = u
    v0, v1, v2 = v
    nu2 = u0 * u0 + u1 * u1 + u2 * u2
    nv2 = v0 * v0 + v1 * v1 + v2 * v2
    if nu2 <= eps2 or nv2 <= eps2:
        return Q, u
    ru = math.sqrt(nu2)
    rv = math.sqrt(nv2)
    a0, a1, a2 = u0 / ru, u1 / ru, u2 / ru
    b0, b1, b2 = v0 / rv, v1 / rv, v2 / rv
    m0, m1, m2 = a0 + b0, a1 + b1, a2 + b2
    mm = m0 * m0 + m1 * m1 + m2 * m2
    if mm < ccd_sweep._ANTIPARALLEL:
        m0, m1, m2 = vperpendicular((a0, a1, a2), (W[0], W[3], W[6]))
        mm = 1.0
    c = 2.0 / mm
    m = (m0, m1, m2)
    # Fᵀm and Fᵀb (columns), mᵀW and aᵀW (rows)
    l0, l1, l2 = _mtv(F, m)
    k0, k1, k2 = _mtv(F, (b0, b1, b2))
    l0, l1, l2, k0, k1, k2 = c * l0, c * l1, c * l2, 2.0 * k0, 2.0 * k1, 2.0 * k2
    mw0, mw1, mw2 = _mtv(W, m)
    aw0, aw1, aw2 = _mtv(W, (a0, a1, a2))
    q0, q1, q2, q3, q4, q5, q6, q7, q8 = Q
    q_new = (
        q0 - l0 * mw0 + k0 * aw0,
        q1 - l0 * mw1 + k0 * aw1,
        q2 - l0 * mw2 + k0 * aw2,
        q3 - l1 * mw0 + k1 * aw0,
        q4 - l1 * mw1 + k1 * aw1,
        q5 - l1 * mw2 + k1 * aw2,
        q6 - l2 * mw0 + k2 * aw0,
        q7 - l2 * mw1 + k2 * aw1,
        q8 - l2 * mw2 + k2 * aw2,
    )
    # R u = u − c m (m·u) + 2 b (a·u)
    cm = c * (m0 * u0 + m1 * u1 + m2 * u2)
    ab = 2.0 * (a0 * u0 + a1 * u1 + a2 * u2)
    return q_new, (u0 - cm * m0 + ab * b0, u1 - cm * m1 + ab * b1, u2 - cm * m2 + ab * b2)


def _ball_step(j: _J, F: M9, Q: M9, W: M9, R: M9) -> tuple[M9, M9]:
    """:func:`core.ccd_sweep._ball_step` for one target."""
    if j.exact:
        return _mm(_mtm(F, R), W), R
    step = _mm(_mtm(F, R), F)
    if j.stiff:
        q = rot.from_matrix(np.array(step).reshape(3, 3))
        step = _m9(rot.to_matrix(rot.from_rotvec(rot.to_rotvec(q) * j.ref.weights)))
    if j.free:
        Q_new = _mm(step, Q)
    else:
        Q_new = qmatrix(j.ref.limits.project_floats(quaternion_of(_mm(step, Q))))
    return Q_new, _mmt(_mm(F, Q_new), W)


def _sweep(
    s: ccd_setup._Setup,
    f: _Facts,
    Q: list[M9],
    goal: _Goal,
    g: float,
    frozen: int | None,
) -> tuple[float, bool]:
    """:func:`core.ccd_sweep._sweep` for one target; updates ``Q`` in place."""
    positions, F, W = _frames(f, Q)
    e = positions[-1]
    E = W[-1] if goal.frame is not None else None
    tx, ty, tz = goal.target
    c_pos, tol2, check = s.c_pos, s.tol2, s.check_position
    for j in f.joints:
        i = j.index
        if i == frozen:
            continue
        px, py, pz = positions[i]
        u = (e[0] - px, e[1] - py, e[2] - pz)
        v = (tx - px, ty - py, tz - pz)
        turn: M9 | None = None
        if j.hinge:
            Q_new, k, dphi = _hinge_step(s, j, F[i], Q[i], u, v, E, goal)
            if E is None:
                half_s = math.sin(0.5 * dphi)
                tu = qrotate((math.cos(0.5 * dphi), k[0] * half_s, k[1] * half_s, k[2] * half_s), u)
            else:
                turn = _axis_turn(k, dphi)
        elif j.exact and E is None:
            Q_new, tu = _exact_ball_step(s, F[i], Q[i], W[i], u, v)
        else:
            R = _ball_turn(s, W[i], u, v, E, goal)
            Q_new, turn = _ball_step(j, F[i], Q[i], W[i], R)
        if turn is not None:
            tu = mapply(turn, u)
        e_new = (px + tu[0], py + tu[1], pz + tu[2])
        if E is None:  # (_score written out: every joint step)
            dx, dy, dz = e_new[0] - tx, e_new[1] - ty, e_new[2] - tz
            err2 = dx * dx + dy * dy + dz * dz
            g_new, reached = c_pos * err2, err2 <= tol2 if check else True
            E_new = None
        else:
            E_new = _mm(turn, E)  # type: ignore[arg-type]
            g_new, reached = _score(s, e_new, E_new, goal)
        if j.exact or g_new <= g:
            Q[i], e, E, g = Q_new, e_new, E_new, g_new
            if reached:
                return g, True
    return g, False


def _descend(
    s: ccd_setup._Setup,
    f: _Facts,
    Q: list[M9],
    goal: _Goal,
    g: float,
    budget: int,
    frozen: int | None = None,
) -> tuple[float, int, int]:
    """:func:`core.ccd_sweep._descend` for one target; updates ``Q`` in place.

    Returns ``(g, used, status)``.
    """
    used = 0
    every = ccd_setup._renormalize_every(len(Q))
    while used < budget:
        if used % every == 0:
            Q[:] = [_orthonormalize(q) for q in Q]
        g_before = g
        g, reached = _sweep(s, f, Q, goal, g, frozen)
        used += 1
        if reached:
            return g, used, ccd_sweep._CONVERGED
        if g_before - g < ccd_sweep._STALL * (g_before - goal.floor) or g <= goal.settled:
            return g, used, ccd_sweep._STALLED
    return g, used, ccd_sweep._CAPPED


def _sweep_candidates(f: _Facts, Q: list[M9], goal: _Goal, j: _J, steps: int) -> list[list[M9]]:
    """:func:`core.ccd_sweep._sweep_candidates` for one target: ``steps`` copies of ``Q``
    with joint ``j`` at coarse angles."""
    i = j.index
    turns = [_TWO_PI * k / (steps + 1) for k in range(1, steps + 1)]
    if j.hinge:
        if j.angle_range is not None:
            angles = np.linspace(*j.angle_range, steps).tolist()
        else:  # (the hinge's angle: K:Q = 2 sin φ, tr Q = 1 + 2 cos φ)
            q = Q[i]
            angle = math.atan2(_fdot(j.skew, q), q[0] + q[4] + q[8] - 1.0)
            angles = [angle + t for t in turns]
        turned = [_axis_turn(j.axis, a) for a in angles]
    else:
        positions, F, W = _frames(f, Q)
        p, e, t = positions[i], positions[-1], goal.target
        u = (e[0] - p[0], e[1] - p[1], e[2] - p[2])
        v = (t[0] - p[0], t[1] - p[1], t[2] - p[2])
        axis = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
        uu, vv = u[0] * u[0] + u[1] * u[1] + u[2] * u[2], v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
        if not axis[0] ** 2 + axis[1] ** 2 + axis[2] ** 2 > 1e-18 * uu * vv:
            axis = (W[i][0], W[i][3], W[i][6])  # (the joint's X axis)
        local = _mtv(F[i], axis)
        norm = math.sqrt(local[0] ** 2 + local[1] ** 2 + local[2] ** 2)
        ax, ay, az = local[0] / norm, local[1] / norm, local[2] / norm
        qi = quaternion_of(Q[i])
        turned = []
        for a in turns:
            c, sn = math.cos(0.5 * a), math.sin(0.5 * a)
            r = qmul((c, sn * ax, sn * ay, sn * az), qi)
            turned.append(qmatrix(j.ref.limits.project_floats(r)))
    return [[*Q[:i], m, *Q[i + 1 :]] for m in turned]


def coarse_sweep(
    s: ccd_setup._Setup,
    f: _Facts,
    Q: list[M9],
    goal: _Goal,
    g: float,
    budget: int,
    j: _J,
    steps: int,
) -> tuple[list[M9], float, int, bool, bool]:
    """:func:`core.ccd_sweep._coarse_sweep` for one target: joint ``j`` set to each coarse
    angle while CCD solves the others; ``(Q, g, used, improved, converged)`` as there (the
    first best candidate where it lowers the excess by more than the stall fraction, else
    ``Q`` and ``g`` themselves)."""
    best: tuple[float, list[M9], int] | None = None
    most = 0
    for cand in _sweep_candidates(f, Q, goal, j, steps):
        positions, _, W = _frames(f, cand)
        g0 = _score(s, positions[-1], W[-1] if goal.frame is not None else None, goal)[0]
        gc, used, status = _descend(s, f, cand, goal, g0, budget, frozen=j.index)
        most = max(most, used)
        if best is None or gc < best[0]:
            best = (gc, cand, status)
    assert best is not None  # (steps >= 1: the caller sweeps only then)
    g_best, Q_best, status = best
    if not g - g_best > ccd_sweep._STALL * (g - goal.floor):
        return Q, g, max(most, 1), False, False
    return Q_best, g_best, max(most, 1), True, status == ccd_sweep._CONVERGED
