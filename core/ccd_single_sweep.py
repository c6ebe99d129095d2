# SPDX-License-Identifier: GPL-3.0-or-later
"""CCD's sweeps for one target in plain floats (:mod:`core.ccd_single`).

The float twins of :mod:`core.ccd_setup` and :mod:`core.ccd_sweep`: the per-chain joint
facts (:class:`_Facts`), the goal (:class:`_Goal`), frames and objective, the hinge and ball
steps, one sweep and the descent. Rotation matrices are row-major 9-tuples
(:mod:`core.matrix9`), vectors 3-tuples.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import ccd_setup, ccd_sweep
from . import rotations as rot
from .chain import Chain
from .components import Vec, qmatrix
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
    _mv,
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
) -> tuple[M9, M9]:
    """:func:`core.ccd_sweep._hinge_step` for one target: new local rotation and world turn."""
    ul = _mtv(F, u)
    vl = _mtv(F, v)
    ax, ay, az = j.axis
    au = ul[0] * ax + ul[1] * ay + ul[2] * az
    av = vl[0] * ax + vl[1] * ay + vl[2] * az
    A = s.c_pos * (ul[0] * vl[0] + ul[1] * vl[1] + ul[2] * vl[2] - au * av)
    cx = ay * ul[2] - az * ul[1]
    cy = az * ul[0] - ax * ul[2]
    cz = ax * ul[1] - ay * ul[0]
    B = s.c_pos * (cx * vl[0] + cy * vl[1] + cz * vl[2])
    if E is not None and goal.frame is not None and s.c_rot > 0.0:
        Dl = _mtm(F, E)
        Vl = _mtm(F, goal.frame)
        aD = _mtv(Dl, j.axis)
        aV = _mtv(Vl, j.axis)
        A = A + s.c_rot * (_fdot(Dl, Vl) - (aD[0] * aV[0] + aD[1] * aV[1] + aD[2] * aV[2]))
        B = B + s.c_rot * _fdot(_mm(j.skew, Dl), Vl)
    phi0 = math.atan2(_fdot(j.skew, Q), Q[0] + Q[4] + Q[8] - 1.0)
    scale = (
        s.c_pos
        * math.sqrt(
            (ul[0] * ul[0] + ul[1] * ul[1] + ul[2] * ul[2])
            * (vl[0] * vl[0] + vl[1] * vl[1] + vl[2] * vl[2])
        )
        + 3.0 * s.c_rot
    )
    size = A * A + B * B
    noise = (ccd_sweep._NOISE * scale) ** 2
    phi = phi0 + j.hinge_weight * math.atan2(B, A) if size > noise else phi0
    phi = _wrap(phi) if j.angle_range is None else _best_in_range(phi, *j.angle_range)
    return _axis_turn(j.axis, phi), _axis_turn(_mv(F, j.axis), phi - phi0)


def _perpendicular(v: Vec, hint: Vec) -> Vec:
    """:func:`core.rotations.perpendicular` for one unit-or-zero ``v``."""
    nv = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    u = (v[0] / nv, v[1] / nv, v[2] / nv) if nv > 0.0 else (0.0, 0.0, 0.0)
    hu = hint[0] * u[0] + hint[1] * u[1] + hint[2] * u[2]
    h = (hint[0] - hu * u[0], hint[1] - hu * u[1], hint[2] - hu * u[2])
    if math.sqrt(h[0] * h[0] + h[1] * h[1] + h[2] * h[2]) > 1e-9:
        axis = h
    else:
        least = min(range(3), key=lambda k: abs(u[k]))
        axis = tuple(1.0 if k == least else 0.0 for k in range(3))  # type: ignore[assignment]
    au = axis[0] * u[0] + axis[1] * u[1] + axis[2] * u[2]
    p = (axis[0] - au * u[0], axis[1] - au * u[1], axis[2] - au * u[2])
    n = math.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
    return p[0] / n, p[1] / n, p[2] / n


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
        m = _perpendicular(a, (W[0], W[3], W[6]))
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
        Q_new = qmatrix(j.ref.limits.project_one(quaternion_of(_mm(step, Q))))
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
    t = goal.target
    for j in f.joints:
        i = j.index
        if i == frozen:
            continue
        p = positions[i]
        u = (e[0] - p[0], e[1] - p[1], e[2] - p[2])
        v = (t[0] - p[0], t[1] - p[1], t[2] - p[2])
        if j.hinge:
            Q_new, turn = _hinge_step(s, j, F[i], Q[i], u, v, E, goal)
        else:
            R = _ball_turn(s, W[i], u, v, E, goal)
            Q_new, turn = _ball_step(j, F[i], Q[i], W[i], R)
        tu = _mv(turn, u)
        e_new = (p[0] + tu[0], p[1] + tu[1], p[2] + tu[2])
        E_new = None if E is None else _mm(turn, E)
        g_new, reached = _score(s, e_new, E_new, goal)
        if j.exact or g_new <= g:
            Q[i], e, E, g = Q_new, e_new, E_new, g_new
            if reached:
                return g, True
    return g, False


def _descend(
    s: ccd_setup._Setup, f: _Facts, Q: list[M9], goal: _Goal, g: float, budget: int
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
        g, reached = _sweep(s, f, Q, goal, g, None)
        used += 1
        if reached:
            return g, used, ccd_sweep._CONVERGED
        if g_before - g < ccd_sweep._STALL * (g_before - goal.floor) or g <= goal.settled:
            return g, used, ccd_sweep._STALLED
    return g, used, ccd_sweep._CAPPED
