# SPDX-License-Identifier: GPL-3.0-or-later
"""CCD for one target in plain Python floats: the fast path of :func:`core.ccd.solve_ccd`.

The same iteration as the batched reference in :mod:`core.ccd` — the same sweeps, single-joint
steps, acceptance test, stall rule, coarse sweep, renormalisation and bend-plane step — written
for a batch of one with floats and tuples, because for one small chain numpy's per-call cost
(some 30 calls per joint step) dominates the arithmetic. Tests pin it to the reference on
random chains, limits and orientation goals (``tests/core/test_ccd_single.py``).

Representation: a rotation matrix is a row-major 9-tuple (as :func:`core.components.qmatrix`),
a vector a 3-tuple. Steps that are rare or have no cheap scalar form stay numpy calls, on the
reference's own functions: the weighted Wahba step of a ball joint with an orientation goal
(one 3×3 SVD), stiffness on ball joints (a rotation-vector round trip), limits of ball joints
other than a bend cone (:meth:`core.limits.JointLimits.project_one` falls back to
:meth:`~core.limits.JointLimits.project`), and the coarse sweep itself, which runs the
reference's batched code on its candidates (only targets that stall get there).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import ccd, ccd_seed, triangulation_plan, triangulation_single
from . import rotations as rot
from .chain import Chain
from .components import Quat, Vec, mapply, qmatrix, qmul, qmul_conj, qrotate
from .problem import Problem
from .result import Solution

M9 = tuple[float, float, float, float, float, float, float, float, float]

_I9: M9 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
_TWO_PI = 2.0 * math.pi


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


def _mv(m: M9, v: Vec) -> Vec:
    x, y, z = v
    return (
        m[0] * x + m[1] * y + m[2] * z,
        m[3] * x + m[4] * y + m[5] * z,
        m[6] * x + m[7] * y + m[8] * z,
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
    (:func:`core.ccd._turn_about`) written out."""
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
    """One Newton step ``Q (3I − QᵀQ)/2`` (:func:`core.ccd._orthonormalize`)."""
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


@dataclass(frozen=True)
class _J:
    """:class:`core.ccd._Joint` in floats."""

    index: int
    ref: ccd._Joint
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
    rest, identity, parts, joints = ccd._chain_facts(chain)
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
    """:func:`core.ccd._frames` for one pose: positions, parent-side frames, joint frames."""
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


def _score(s: ccd._Setup, e: Vec, E: M9 | None, goal: _Goal) -> tuple[float, bool]:
    """:func:`core.ccd._score` for one target."""
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
    """:func:`core.ccd._best_in_range` for one angle."""
    phi = _wrap(phi)
    if lo <= phi <= hi:
        return phi
    return lo if abs(_wrap(phi - lo)) <= abs(_wrap(phi - hi)) else hi


def _hinge_step(
    s: ccd._Setup, j: _J, F: M9, Q: M9, u: Vec, v: Vec, E: M9 | None, goal: _Goal
) -> tuple[M9, M9]:
    """:func:`core.ccd._hinge_step` for one target: new local rotation and world turn."""
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
    noise = (ccd._NOISE * scale) ** 2
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


def _ball_turn(s: ccd._Setup, W: M9, u: Vec, v: Vec, E: M9 | None, goal: _Goal) -> M9:
    """:func:`core.ccd._ball_turn` for one target."""
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
    if mm < ccd._ANTIPARALLEL:
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
    """:func:`core.ccd._ball_step` for one target."""
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
    s: ccd._Setup,
    f: _Facts,
    Q: list[M9],
    goal: _Goal,
    g: float,
    frozen: int | None,
) -> tuple[float, bool]:
    """:func:`core.ccd._sweep` for one target; updates ``Q`` in place."""
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
    s: ccd._Setup, f: _Facts, Q: list[M9], goal: _Goal, g: float, budget: int
) -> tuple[float, int, int]:
    """:func:`core.ccd._descend` for one target; updates ``Q`` in place.

    Returns ``(g, used, status)``.
    """
    used = 0
    every = ccd._renormalize_every(len(Q))
    while used < budget:
        if used % every == 0:
            Q[:] = [_orthonormalize(q) for q in Q]
        g_before = g
        g, reached = _sweep(s, f, Q, goal, g, None)
        used += 1
        if reached:
            return g, used, ccd._CONVERGED
        if g_before - g < ccd._STALL * (g_before - goal.floor) or g <= goal.settled:
            return g, used, ccd._STALLED
    return g, used, ccd._CAPPED


def _start(problem: Problem, pose: list[list[float]]) -> list[Quat]:
    """:func:`core.ccd._start_pose` of one pose (``n`` × 4 floats): normalised and
    projected onto the limits, as quaternions."""
    out: list[Quat] = []
    for lim, q in zip(problem.chain.limits, pose, strict=True):
        w, x, y, z = q
        n = math.sqrt(w * w + x * x + y * y + z * z)
        if w < 0.0:
            n = -n
        quat = (w / n, x / n, y / n, z / n)
        out.append(quat if lim.is_free else lim.project_one(quat))
    return out


def _start_score(
    s: ccd._Setup, chain: Chain, goal: _Goal, rots: list[Quat]
) -> tuple[float, bool, list[Vec], list[Quat]]:
    """Objective and reached flag of a start pose, with its positions and frames."""
    positions, frames = _fk(chain, rots)
    frame = None if goal.frame is None else qmatrix(frames[-1])
    g, reached = _score(s, positions[-1], frame, goal)
    return g, reached, positions, frames


def _as_goal(problem: Problem, s: ccd._Setup, target: Vec) -> _Goal:
    """:func:`core.ccd._goals` for one target."""
    reach = problem.chain.reach
    lower = max(0.0, math.sqrt(target[0] ** 2 + target[1] ** 2 + target[2] ** 2) - reach)
    frame = None
    if problem.target_rotations is not None:
        frame = qmatrix(tuple(float(c) for c in problem.target_rotations[0]))  # type: ignore[arg-type]
    beyond = lower > problem.tolerance and not (frame is not None and s.c_rot > 0.0)
    settled = s.c_pos * (lower + problem.tolerance) ** 2 if beyond else -1.0
    return _Goal(target, frame, s.c_pos * lower**2, settled)


def _iterate(
    s: ccd._Setup, problem: Problem, goal: _Goal, Q: list[M9], g: float
) -> tuple[list[M9], int]:
    """The CCD iterations and coarse sweeps of :func:`core.ccd.solve_batch` for one target
    from the rotations ``Q`` (objective ``g``, goal not yet met).

    Returns the solved local rotations (renormalised) and the iterations used.
    """
    f = _facts(problem.chain)
    cap = problem.options.max_iterations
    steps = problem.options.sweep_steps
    iterations = 0
    sweepable = f.joints[::-1]
    next_joint = failures = 0
    while True:
        g, used, status = _descend(s, f, Q, goal, g, cap - iterations)
        iterations += used
        if status != ccd._STALLED or steps == 0 or not sweepable or g <= goal.settled:
            break
        # The coarse sweep, on the reference's batched code (stalls are rare).
        improved = converged = False
        while iterations < cap and failures < len(sweepable):
            goals = ccd._Goals(
                np.array([goal.target]),
                None if goal.frame is None else np.array(goal.frame).reshape(1, 3, 3),
                np.array([goal.floor]),
                np.array([goal.settled]),
            )
            Qr, gr, used_r, imp, conv = ccd._coarse_sweep(
                s,
                np.array(Q).reshape(1, len(Q), 3, 3),
                goals,
                np.array([g]),
                np.array([cap - iterations]),
                sweepable[next_joint].ref,
                steps,
            )
            Q[:] = [_m9(m) for m in Qr[0]]
            g = float(gr[0])
            iterations += int(used_r[0])
            next_joint = (next_joint + 1) % len(sweepable)
            improved, converged = bool(imp[0]), bool(conv[0])
            failures = 0 if improved else failures + 1
            if improved:
                break
        if not improved or converged or iterations >= cap:
            break
    return [_orthonormalize(q) for q in Q], iterations


def _fk(chain: Chain, rots: list[Quat]) -> tuple[list[Vec], list[Quat]]:
    """:func:`core.kinematics.forward_kinematics` of one pose in floats."""
    f = _quat_facts(chain)
    world: Quat = (1.0, 0.0, 0.0, 0.0)
    p: Vec = (0.0, 0.0, 0.0)
    positions = [p]
    frames = []
    for rest, offset, q in zip(f[0], f[1], rots, strict=True):
        world = qmul(qmul(world, rest), q)
        frames.append(world)
        d = qrotate(world, offset)
        p = (p[0] + d[0], p[1] + d[1], p[2] + d[2])
        positions.append(p)
    return positions, frames


@functools.lru_cache(maxsize=64)
def _quat_facts(chain: Chain) -> tuple[tuple[Quat, ...], tuple[Vec, ...]]:
    rests = tuple(tuple(float(c) for c in q) for q in chain.rest_rotations)
    offsets = tuple(tuple(float(c) for c in o) for o in chain.offsets)
    return rests, offsets  # type: ignore[return-value]


def _orient(problem: Problem, target: Vec, rots: list[Quat], positions: list[Vec]) -> None:
    """:func:`core.bend_plane.orient_bend` for one target in floats (triangulation's float
    bend turn, with the root's limits checked as :func:`core.bend_plane.apply_pole` does);
    updates ``rots[0]``."""
    chain = problem.chain
    plan = triangulation_plan._plan(chain)
    pole: Vec | None = None
    if problem.poles is not None:
        px, py, pz = problem.poles[0].tolist()
        pole = (px, py, pz)
    init = problem.initial[0].tolist()
    rest_pose = all(q == [1.0, 0.0, 0.0, 0.0] for q in init)
    turn = triangulation_single._bend_turn(
        chain,
        plan,
        problem.options,
        target,
        pole,
        positions,
        init,
        rest_pose,
    )
    if turn is None:
        return
    q0 = qmul((turn[0], *mapply(plan.rest0_inverse, turn[1:])), rots[0])
    limits = chain.limits[0]
    if not limits.is_free:
        d = qmul_conj(limits.project_one(q0), q0)
        if 2.0 * math.atan2(math.sqrt(d[1] ** 2 + d[2] ** 2 + d[3] ** 2), abs(d[0])) > 1e-9:
            return
    rots[0] = q0


def _clip_far(t: Vec, reach: float) -> Vec:
    """:func:`core.ccd._clip_far` for one target (already finite and pulled in to
    ``core.solve.FAR`` reaches, so its square cannot overflow)."""
    d = math.sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2])
    limit = ccd._FAR * reach
    if not d > limit:
        return t
    return t[0] / d * limit, t[1] / d * limit, t[2] / d * limit


def solve_one_target(problem: Problem) -> Solution:
    """:func:`core.ccd.solve_ccd` for a problem of one target (see module docstring)."""
    chain = problem.chain
    x, y, z = problem.targets[0].tolist()
    t = _clip_far((x, y, z), chain.reach)
    s = ccd._setup(problem)
    goal = _as_goal(problem, s, t)
    seeded = ccd_seed.seed_one(problem)
    if seeded is not None:
        rots_s, pos_s = seeded
        frame = None
        if goal.frame is not None:
            frame = qmatrix(_fk(chain, rots_s)[1][-1])  # type: ignore[arg-type]
        g_s, reached_s = _score(s, pos_s[-1], frame, goal)
        if reached_s or g_s <= goal.settled:
            return _solution(problem, rots_s, pos_s, 0)  # type: ignore[arg-type]
    else:
        pos_s = None
    rots = _start(problem, problem.initial[0].tolist())
    g, reached, positions, _ = _start_score(s, chain, goal, rots)
    iterations = 0
    if not reached:
        Q, iterations = _iterate(s, problem, goal, [qmatrix(q) for q in rots], g)
        rots = [quaternion_of(m) for m in Q]
        if problem.target_rotations is None or problem.options.position_weight >= 1.0:
            _orient(problem, t, rots, _fk(chain, rots)[0])
            q0 = rots[0]
            if q0[0] < 0.0:
                rots[0] = (-q0[0], -q0[1], -q0[2], -q0[3])
        positions = _fk(chain, rots)[0]
    if pos_s is None:
        return _solution(problem, rots, positions, iterations)
    # As core.ccd.solve_batch: the seed where it is closer by more than the tolerance, then
    # triangulation within the limits where the target is still missed.
    if math.dist(pos_s[-1], (x, y, z)) < math.dist(positions[-1], (x, y, z)) - problem.tolerance:
        rots, positions, iterations = rots_s, pos_s, 0  # type: ignore[assignment]
    if not chain.is_free:
        q, p = ccd_seed.within_limits(problem, np.array([rots]), np.array([positions]))
        rots, positions = q[0].tolist(), p[0].tolist()
    return _solution(problem, rots, positions, iterations)


def _solution(
    problem: Problem, rots: list[Quat], positions: list[Vec], iterations: int
) -> Solution:
    effector = None
    if problem.target_rotations is not None:
        effector = np.array([_fk(problem.chain, rots)[1][-1]])
    return Solution(
        rotations=np.array([rots]),
        positions=np.array([positions]),
        iterations=np.array([iterations], dtype=np.int64),
        effector_rotation=effector,
    )
