# SPDX-License-Identifier: GPL-3.0-or-later
"""The Jacobian iteration of :mod:`core.jacobian` for one target, in plain Python floats.

For one small chain numpy's per-call cost (about a microsecond per call, dozens of calls
per update) dominates the batched iteration; this module runs *the same iteration* — the
same goal rows, stiffness scaling, posture term, clamp, limits with re-solve around clamped
joints, saddle nudge, damped retries and stopping rules (module docstring of
:mod:`core.jacobian`) — on tuples of floats. The Jacobian is built column by column in
closed form (``ω_k × (e − p_i)``), and each rule solves the small ``d × d`` Gram system
(``d = min(m, k) ≤ 6``) by an unrolled Cholesky factorisation. The results equal the batched
path's to rounding (tested on random chains with limits, stiffness, posture and
orientation goals).

Where a float version would be long and rarely used, one numpy call is made instead: the
smallest eigenvalue of a Gram matrix larger than ``3 × 3`` (pose goals), and the SVD of the
pseudo-inverse rule when ``J`` is nearly rank deficient (``σ_min² < 10⁻⁶ tr(JJᵀ)``; the
normal equations would lose the accuracy the SVD keeps there).

Entry point: :func:`solve_single`, dispatched by :func:`core.jacobian.solve_jacobian_dls`
and its siblings when ``problem.size == 1``.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .bend_plane import orient_bend
from .chain import Chain
from .components import qmul
from .jacobian_seed import seeded
from .limits import JointLimits
from .problem import Problem
from .result import Solution
from .rotations import SMALL_ANGLE, FloatArray

Quat = tuple[float, float, float, float]
Vec = tuple[float, float, float]
Rule = Literal["transpose", "pinv", "dls"]

# The batched iteration's constants (core.jacobian), shared so the paths cannot drift.
_STATIONARY = 1e-9
_NUDGE = 0.1
_STALL = 1e-3
_RETRIES = 4
_CLAMPED = 1e-9
_DAMPING_FLOOR = 1e-12
#: pinv: below this ``σ_min² / tr(J Jᵀ)`` the SVD is used instead of the normal equations.
_PINV_NORMAL = 1e-6
_IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
_UNIT = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


# ---------------------------------------------------------------------- quaternion floats
def _rotate(q: Quat, v: Vec) -> Vec:
    """``v + w t + u × t``, ``t = 2 u × v`` (as :func:`core.jacobian_matrix.rotate`)."""
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


def _angle(q: Quat) -> float:
    """:func:`core.rotations.angle`."""
    return 2.0 * math.atan2(math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]), abs(q[0]))


def _log(q: Quat) -> Vec:
    """:func:`core.rotations.log` (``w >= 0`` first)."""
    w, x, y, z = q
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    theta = math.atan2(s, w)
    f = 1.0 + theta * theta / 6.0 if theta < SMALL_ANGLE else theta / s
    return (f * x, f * y, f * z)


def _exp(v: Vec) -> Quat:
    """:func:`core.rotations.exp`."""
    x, y, z = v
    theta = math.sqrt(x * x + y * y + z * z)
    s = 1.0 - theta * theta / 6.0 if theta < SMALL_ANGLE else math.sin(theta) / theta
    return (math.cos(theta), s * x, s * y, s * z)


def _wrap(a: float) -> float:
    """:func:`core.parameterization.wrap_angle`."""
    return math.pi - (math.pi - a) % (2.0 * math.pi)


def _from_euler(angles: Vec, order: str) -> Quat:
    """:func:`core.rotations.from_euler`."""
    q = _IDENTITY
    for name in order:
        k = _AXIS_INDEX[name]
        half = 0.5 * angles[k]
        s = math.sin(half)
        step = (math.cos(half), s if k == 0 else 0.0, s if k == 1 else 0.0, s if k == 2 else 0.0)
        q = qmul(step, q)
    return q


def _to_euler(q: Quat, order: str) -> Vec:
    """:func:`core.rotations.to_euler`."""
    w, x, y, z = q
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m = (
        (1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)),
        (2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)),
        (2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)),
    )
    i, j, k = (_AXIS_INDEX[c] for c in order)
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
    cos_b = math.hypot(m[k][j], m[k][k])
    b = math.atan2(-sign * m[k][i], cos_b)
    locked = cos_b < 1e-9
    a = math.atan2(-sign * m[j][k], m[j][j]) if locked else math.atan2(sign * m[k][j], m[k][k])
    sin_a, cos_a = math.sin(a), math.cos(a)
    c = math.atan2(
        sin_a * m[i][k] - sign * cos_a * m[i][j],
        cos_a * m[j][j] - sign * sin_a * m[j][k],
    )
    if locked:
        c = 0.0
    out = [0.0, 0.0, 0.0]
    out[i], out[j], out[k] = a, b, c
    return (out[0], out[1], out[2])


def _expmap_columns(v: Vec) -> tuple[Vec, Vec, Vec]:
    """:func:`core.parameterization.expmap_angular` as its three columns ``ω_k``."""
    x, y, z = v
    t2 = x * x + y * y + z * z
    theta = math.sqrt(t2)
    cos = math.cos(theta)
    if theta < SMALL_ANGLE:
        s = 1.0 - t2 / 6.0
        c = -1.0 / 3.0 + t2 / 30.0
    else:
        sin = math.sin(theta)
        s = sin / theta
        c = (theta * math.cos(theta) - sin) / (theta * theta * theta)
    s2 = 2.0 * s * s
    a = 2.0 * cos * s
    b = 2.0 * cos * c + s2
    bx, by, bz = b * x, b * y, b * z
    sx, sy, sz = s2 * x, s2 * y, s2 * z
    bxy, bxz, byz = bx * y, bx * z, by * z
    return (
        (a + bx * x, bxy + sz, bxz - sy),
        (bxy - sz, a + by * y, byz + sx),
        (bxz + sy, byz - sx, a + bz * z),
    )


def _euler_columns(angles: Vec, order: str) -> list[Vec]:
    """:func:`core.parameterization.euler_angular` as its three columns (axis x, y, z)."""
    ka, kb, kc = (_AXIS_INDEX[c] for c in order)
    hb, hc = 0.5 * angles[kb], 0.5 * angles[kc]
    sb, sc = math.sin(hb), math.sin(hc)
    qb = (math.cos(hb), sb if kb == 0 else 0.0, sb if kb == 1 else 0.0, sb if kb == 2 else 0.0)
    qc = (math.cos(hc), sc if kc == 0 else 0.0, sc if kc == 1 else 0.0, sc if kc == 2 else 0.0)
    out: list[Vec] = [_UNIT[0], _UNIT[0], _UNIT[0]]
    out[kc] = _UNIT[kc]
    out[kb] = _rotate(qc, _UNIT[kb])
    out[ka] = _rotate(qmul(qc, qb), _UNIT[ka])
    return out


# ---------------------------------------------------------------------- per-chain plan
@dataclass(frozen=True)
class _Plan:
    """A chain's constants for the float iteration (cached per chain and parameterisation).

    Attributes:
        n: joints.
        offsets, rests, rest_identity: link vectors, rest rotations, identity rest flags.
        kinds: per joint ``"ball"``, ``"hinge"`` or ``"fixed"``.
        hinge_axes: per joint the unit hinge axis (``None`` for other kinds).
        limits: per joint its :class:`JointLimits` when not free, else ``None``.
        starts: per joint its first column; ``starts[n]`` = ``k``.
        column_joint: per column its joint.
        scale: per column ``√(1 − stiffness)`` (0 when locked); ``unit``: all are 1.
        nudge: the saddle nudge per column.
        euler: Euler parameters (else expmap); ``order``: their order.
    """

    n: int
    offsets: tuple[Vec, ...]
    rests: tuple[Quat, ...]
    rest_identity: tuple[bool, ...]
    kinds: tuple[str, ...]
    hinge_axes: tuple[Vec | None, ...]
    limits: tuple[JointLimits | None, ...]
    starts: tuple[int, ...]
    column_joint: tuple[int, ...]
    scale: tuple[float, ...]
    unit: bool
    nudge: tuple[float, ...]
    euler: bool
    order: str


_PLANS: weakref.WeakKeyDictionary[Chain, dict[str, _Plan]] = weakref.WeakKeyDictionary()


def _plan(chain: Chain, params: str, max_step: float) -> _Plan:
    from .parameterization import EULER_ORDER, DofLayout  # the batched layout, for weights

    key = f"{params}:{max_step!r}"
    plans = _PLANS.setdefault(chain, {})
    plan = plans.get(key)
    if plan is not None:
        return plan
    layout = DofLayout.for_chain(chain, "euler" if params == "euler" else "expmap")
    kinds: list[str] = []
    axes: list[Vec | None] = []
    starts: list[int] = []
    column = 0
    for lim in chain.limits:
        kinds.append(lim.kind)
        starts.append(column)
        if lim.kind == "hinge":
            axis, _ = lim.hinge
            axes.append((float(axis[0]), float(axis[1]), float(axis[2])))
            column += 1
        else:
            axes.append(None)
            column += 3 if lim.kind == "ball" else 0
    starts.append(column)
    scale = tuple(float(s) for s in np.sqrt(layout.weights))
    plan = _Plan(
        n=chain.n_joints,
        offsets=tuple((float(o[0]), float(o[1]), float(o[2])) for o in chain.offsets),
        rests=tuple(
            (float(q[0]), float(q[1]), float(q[2]), float(q[3])) for q in chain.rest_rotations
        ),
        rest_identity=tuple(bool(np.all(q == (1.0, 0.0, 0.0, 0.0))) for q in chain.rest_rotations),
        kinds=tuple(kinds),
        hinge_axes=tuple(axes),
        limits=tuple(None if lim.is_free else lim for lim in chain.limits),
        starts=tuple(starts),
        column_joint=tuple(int(j) for j in layout.column_joint),
        scale=scale,
        unit=all(s == 1.0 for s in scale),
        nudge=tuple(float(v) for v in layout.nudge(min(_NUDGE, max_step))),
        euler=params == "euler",
        order=EULER_ORDER,
    )
    plans[key] = plan
    return plan


# ---------------------------------------------------------------------- kinematics
@dataclass
class _State:
    """Forward kinematics of one pose: joint positions (``n + 1``, last = effector),
    parent frames ``F_i`` and world orientations ``W_i`` (as :class:`ChainState`)."""

    positions: list[Vec]
    parents: list[Quat]
    worlds: list[Quat]


def _fk(plan: _Plan, q: list[Quat]) -> _State:
    """:func:`core.jacobian_matrix.chain_state` for one pose."""
    px = py = pz = 0.0
    positions: list[Vec] = [(0.0, 0.0, 0.0)]
    parents: list[Quat] = []
    worlds: list[Quat] = []
    world = _IDENTITY
    for i in range(plan.n):
        if i == 0:
            frame = plan.rests[0]
        elif plan.rest_identity[i]:
            frame = world
        else:
            frame = qmul(world, plan.rests[i])
        world = qmul(frame, q[i])
        parents.append(frame)
        worlds.append(world)
        ox, oy, oz = _rotate(world, plan.offsets[i])
        px, py, pz = px + ox, py + oy, pz + oz
        positions.append((px, py, pz))
    return _State(positions, parents, worlds)


def _params_of(plan: _Plan, q: list[Quat]) -> list[float]:
    """:meth:`DofLayout.params_of` for one pose."""
    out: list[float] = []
    for i, kind in enumerate(plan.kinds):
        if kind == "ball":
            out.extend(_to_euler(q[i], plan.order) if plan.euler else _log(q[i]))
        elif kind == "hinge":
            w, x, y, z = q[i]
            if w < 0.0:
                w, x, y, z = -w, -x, -y, -z
            ax, ay, az = plan.hinge_axes[i]  # type: ignore[misc]
            out.append(_wrap(2.0 * math.atan2(x * ax + y * ay + z * az, w)))
    return out


def _rotations_of(plan: _Plan, p: list[float]) -> list[Quat]:
    """:meth:`DofLayout.rotations_of` for one pose."""
    out: list[Quat] = []
    for i, kind in enumerate(plan.kinds):
        c = plan.starts[i]
        if kind == "ball":
            v = (p[c], p[c + 1], p[c + 2])
            out.append(_from_euler(v, plan.order) if plan.euler else _exp(v))
        elif kind == "hinge":
            ax, ay, az = plan.hinge_axes[i]  # type: ignore[misc]
            norm = math.sqrt(ax * ax + ay * ay + az * az)
            s = math.sin(0.5 * p[c])
            out.append((math.cos(0.5 * p[c]), s * (ax / norm), s * (ay / norm), s * (az / norm)))
        else:
            out.append(_IDENTITY)
    return out


def _project(plan: _Plan, q: list[Quat]) -> list[Quat]:
    """Every limited joint of ``q`` projected (:meth:`JointLimits.project_floats`)."""
    out = list(q)
    for i, lim in enumerate(plan.limits):
        if lim is not None:
            out[i] = lim.project_floats(q[i])  # type: ignore[assignment]
    return out


def _difference(plan: _Plan, goal: list[float], p: list[float]) -> list[float]:
    """:meth:`DofLayout.difference`: ``goal − p``, Euler and hinge angles wrapped."""
    d = [g - v for g, v in zip(goal, p, strict=True)]
    if plan.euler:
        return [_wrap(x) for x in d]
    for i, kind in enumerate(plan.kinds):
        if kind == "hinge":
            c = plan.starts[i]
            d[c] = _wrap(d[c])
    return d


def _axes(plan: _Plan, state: _State, p: list[float]) -> list[Vec]:
    """:func:`core.jacobian_matrix.dof_axes`: each parameter's world angular velocity."""
    out: list[Vec] = []
    for i, kind in enumerate(plan.kinds):
        frame = state.parents[i]
        if kind == "ball":
            c = plan.starts[i]
            v = (p[c], p[c + 1], p[c + 2])
            cols = _euler_columns(v, plan.order) if plan.euler else _expmap_columns(v)
            out.extend(_rotate(frame, col) for col in cols)
        elif kind == "hinge":
            out.append(_rotate(frame, plan.hinge_axes[i]))  # type: ignore[arg-type]
    return out


# ---------------------------------------------------------------------- goals
@dataclass(frozen=True)
class _Goal:
    """:class:`core.jacobian._Goal` for one target."""

    kind: str
    target: Vec
    rotation: Quat | None
    w_ang: float
    w_lin: float
    tolerance: float
    angle_tolerance: float

    def error(self, state: _State) -> tuple[list[float], bool]:
        ex, ey, ez = state.positions[-1]
        tx, ty, tz = self.target
        dx, dy, dz = tx - ex, ty - ey, tz - ez
        converged = True
        if self.kind != "orientation":
            converged = math.sqrt(dx * dx + dy * dy + dz * dz) <= self.tolerance
        if self.kind == "position":
            return [dx, dy, dz], converged
        g = self.rotation
        assert g is not None
        e = state.worlds[-1]
        gw, gx, gy, gz = g
        rel = qmul((gw, -gx, -gy, -gz), e)
        converged = converged and _angle(rel) <= self.angle_tolerance
        r = qmul(g, (e[0], -e[1], -e[2], -e[3]))
        if self.kind == "orientation":
            lx, ly, lz = _log(r)
            return [2.0 * lx, 2.0 * ly, 2.0 * lz], converged
        twist = _pose_twist(r, (ex, ey, ez), self.target)
        wa, wl = self.w_ang, self.w_lin
        return [
            twist[0] * wa,
            twist[1] * wa,
            twist[2] * wa,
            twist[3] * wl,
            twist[4] * wl,
            twist[5] * wl,
        ], converged

    def stalled(self, err: list[float], previous: list[float]) -> bool:
        d = [a - b for a, b in zip(err, previous, strict=True)]
        if self.kind == "position":
            return math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) < _STALL * self.tolerance
        if self.kind == "orientation":
            return (
                math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) < _STALL * self.angle_tolerance
            )
        ang = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        lin = math.sqrt(d[3] * d[3] + d[4] * d[4] + d[5] * d[5])
        return (
            ang < _STALL * self.angle_tolerance * self.w_ang
            and lin < _STALL * self.tolerance * self.w_lin
        )

    def columns(self, plan: _Plan, state: _State, axes: list[Vec]) -> list[tuple[float, ...]]:
        """The weighted Jacobian, as ``k`` columns of ``m`` floats."""
        if self.kind == "orientation":
            return list(axes)
        ex, ey, ez = state.positions[-1]
        out: list[tuple[float, ...]] = []
        for (wx, wy, wz), j in zip(axes, plan.column_joint, strict=True):
            px, py, pz = state.positions[j]
            lx, ly, lz = ex - px, ey - py, ez - pz
            cx, cy, cz = wy * lz - wz * ly, wz * lx - wx * lz, wx * ly - wy * lx
            if self.kind == "position":
                out.append((cx, cy, cz))
            else:
                a, b = self.w_ang, self.w_lin
                out.append((wx * a, wy * a, wz * a, cx * b, cy * b, cz * b))
        return out

    def pushes_inward(self, state: _State) -> bool:
        if self.kind == "orientation":
            return False
        ex, ey, ez = state.positions[-1]
        rx, ry, rz = state.positions[0]
        tx, ty, tz = self.target
        return (tx - ex) * (ex - rx) + (ty - ey) * (ey - ry) + (tz - ez) * (ez - rz) < 0.0


def _pose_twist(r: Quat, eff: Vec, target: Vec) -> tuple[float, ...]:
    """:func:`core.screw.twist_at` of :func:`core.screw.pose_twist`, at the effector.

    ``r = D_r C_r*`` is the motion's rotation; its translation is ``t = g − r e``.
    """
    w, x, y, z = r
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    rx, ry, rz = _rotate((w, x, y, z), eff)
    t = (target[0] - rx, target[1] - ry, target[2] - rz)
    big = max(abs(x), abs(y), abs(z))
    if big > 0.0:
        ux, uy, uz = x / big, y / big, z / big
    else:
        ux = uy = uz = 0.0
    s = math.sqrt(ux * ux + uy * uy + uz * uz)
    if s > 0.0:
        dx, dy, dz = ux / s, uy / s, uz / s
    else:
        dx, dy, dz = 1.0, 0.0, 0.0
    norm = math.sqrt(dx * dx + dy * dy + dz * dz)
    dx, dy, dz = dx / norm, dy / norm, dz / norm
    a = 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w))
    acot = 2.0 - a * a / 6.0 if a < SMALL_ANGLE else a / math.tan(0.5 * a)
    tx, ty, tz = t
    dt = dx * tx + dy * ty + dz * tz
    # t × d and (d × t) × d
    c1 = (ty * dz - tz * dy, tz * dx - tx * dz, tx * dy - ty * dx)
    e = (dy * tz - dz * ty, dz * tx - dx * tz, dx * ty - dy * tx)
    c2 = (e[1] * dz - e[2] * dy, e[2] * dx - e[0] * dz, e[0] * dy - e[1] * dx)
    ha, hc = 0.5 * a, 0.5 * acot
    vx = dt * dx + ha * c1[0] + hc * c2[0]
    vy = dt * dy + ha * c1[1] + hc * c2[1]
    vz = dt * dz + ha * c1[2] + hc * c2[2]
    wx, wy, wz = a * dx, a * dy, a * dz
    px, py, pz = eff
    return (
        wx,
        wy,
        wz,
        vx + (wy * pz - wz * py),
        vy + (wz * px - wx * pz),
        vz + (wx * py - wy * px),
    )


# ---------------------------------------------------------------------- small linear algebra
def _gram(cols: list[tuple[float, ...]], m: int) -> tuple[list[list[float]], bool]:
    """``J Jᵀ`` (``m ≤ k``, wide) or ``Jᵀ J``, as nested lists; and ``wide``."""
    k = len(cols)
    if m <= k:
        g = [[0.0] * m for _ in range(m)]
        for a in range(m):
            for b in range(a, m):
                s = 0.0
                for col in cols:
                    s += col[a] * col[b]
                g[a][b] = g[b][a] = s
        return g, True
    g = [[0.0] * k for _ in range(k)]
    for a in range(k):
        ca = cols[a]
        for b in range(a, k):
            cb = cols[b]
            s = 0.0
            for r in range(m):
                s += ca[r] * cb[r]
            g[a][b] = g[b][a] = s
    return g, False


def _smallest_eigenvalue(g: list[list[float]]) -> float:
    """Smallest eigenvalue of a symmetric Gram matrix (as :mod:`core.jacobian_step`)."""
    d = len(g)
    if d == 3:
        q = (g[0][0] + g[1][1] + g[2][2]) / 3.0
        a, b, c = g[0][0] - q, g[1][1] - q, g[2][2] - q
        g01, g02, g12 = g[0][1], g[0][2], g[1][2]
        p = math.sqrt((a * a + b * b + c * c + 2.0 * (g01 * g01 + g02 * g02 + g12 * g12)) / 6.0)
        if not p > 0.0:
            return q
        det = a * (b * c - g12 * g12) - g01 * (g01 * c - g12 * g02) + g02 * (g01 * g12 - b * g02)
        r = min(max(det / (2.0 * p**3), -1.0), 1.0)
        return q + 2.0 * p * math.cos(math.acos(r) / 3.0 + 2.0 * math.pi / 3.0)
    if d == 1:
        return g[0][0]
    if d == 2:
        a, b, c = g[0][0], g[0][1], g[1][1]
        return 0.5 * (a + c - math.hypot(a - c, 2.0 * b))
    return float(np.linalg.eigvalsh(np.array(g))[0])


def _sigma(g: list[list[float]]) -> float:
    return math.sqrt(max(_smallest_eigenvalue(g), 0.0))


def _solve_spd(a: list[list[float]], b: list[float]) -> list[float]:
    """``a⁻¹ b`` for symmetric positive definite ``a`` by Cholesky (pivots kept positive)."""
    d = len(b)
    tiny = 1e-300
    low = [[0.0] * d for _ in range(d)]
    for i in range(d):
        row = low[i]
        for j in range(i):
            s = a[i][j]
            other = low[j]
            for t in range(j):
                s -= row[t] * other[t]
            row[j] = s / other[j]
        s = a[i][i]
        for t in range(i):
            s -= row[t] * row[t]
        row[i] = math.sqrt(max(s, tiny))
    y = [0.0] * d
    for i in range(d):
        s = b[i]
        row = low[i]
        for t in range(i):
            s -= row[t] * y[t]
        y[i] = s / row[i]
    x = [0.0] * d
    for i in range(d - 1, -1, -1):
        s = y[i]
        for t in range(i + 1, d):
            s -= low[t][i] * x[t]
        x[i] = s / low[i][i]
    return x


def _jv(cols: list[tuple[float, ...]], v: list[float], m: int) -> list[float]:
    """``J v`` (``m`` floats) for columns ``cols`` and ``v`` (``k`` floats)."""
    out = [0.0] * m
    for col, s in zip(cols, v, strict=True):
        if s != 0.0:
            for r in range(m):
                out[r] += col[r] * s
    return out


def _jtv(cols: list[tuple[float, ...]], v: list[float]) -> list[float]:
    """``Jᵀ v`` (``k`` floats)."""
    return [sum(c * x for c, x in zip(col, v, strict=True)) for col in cols]


def _floor(g: list[list[float]]) -> float:
    trace = sum(g[i][i] for i in range(len(g)))
    return _DAMPING_FLOOR * trace / len(g) if trace > 0.0 else 1.0


def _damped_solve(
    cols: list[tuple[float, ...]], g: list[list[float]], wide: bool, lam2: float, rhs: list[float]
) -> list[float]:
    """``Jᵀ (J Jᵀ + λ²)⁻¹ rhs`` (wide) or ``(JᵀJ + λ²)⁻¹ Jᵀ rhs``."""
    a = [[v + lam2 if i == j else v for j, v in enumerate(row)] for i, row in enumerate(g)]
    if wide:
        return _jtv(cols, _solve_spd(a, rhs))
    return _solve_spd(a, _jtv(cols, rhs))


def _damped_null(
    cols: list[tuple[float, ...]],
    g: list[list[float]],
    wide: bool,
    lam2: float,
    z: list[float],
    m: int,
) -> list[float]:
    back = _damped_solve(cols, g, wide, lam2, _jv(cols, z, m))
    return [a - b for a, b in zip(z, back, strict=True)]


def _rule_step(
    rule: Rule,
    cols: list[tuple[float, ...]],
    de: list[float],
    z: list[float] | None,
    m: int,
    damping: float,
    adaptive: bool,
    cutoff: float,
) -> tuple[list[float], float]:
    """One rule of :mod:`core.jacobian_step` for one problem: ``(Δp, σ_min)``."""
    g, wide = _gram(cols, m)
    if rule == "transpose":
        grad = _jtv(cols, de)
        jg = _jv(cols, grad, m)
        num = sum(a * b for a, b in zip(de, jg, strict=True))
        den = sum(a * a for a in jg)
        alpha = num / den if den > 1e-300 else 0.0
        dp = [alpha * v for v in grad]
        if z is not None:
            null = _damped_null(cols, g, wide, _floor(g), z, m)
            dp = [a + b for a, b in zip(dp, null, strict=True)]
        return dp, _sigma(g)
    if rule == "pinv":
        low = _smallest_eigenvalue(g)
        trace = sum(g[i][i] for i in range(len(g)))
        if not low > _PINV_NORMAL * trace:
            return _pinv_svd(cols, de, z, m, cutoff)
        dp = _damped_solve(cols, g, wide, 0.0, de)
        if z is not None:
            null = _damped_null(cols, g, wide, 0.0, z, m)
            dp = [a + b for a, b in zip(dp, null, strict=True)]
        return dp, math.sqrt(low)
    sigma = _sigma(g)
    lam2 = damping * damping
    if adaptive:
        ratio = sigma / damping if damping > 0.0 else 1.0
        size = math.sqrt(sum(v * v for v in de))
        cap = min(damping, size)
        lam2 = cap * cap * (1.0 - ratio * ratio) if ratio < 1.0 else 0.0
    lam2 = max(lam2, _floor(g))
    dp = _damped_solve(cols, g, wide, lam2, de)
    if z is not None:
        null = _damped_null(cols, g, wide, lam2, z, m)
        dp = [a + b for a, b in zip(dp, null, strict=True)]
    return dp, sigma


def _pinv_svd(
    cols: list[tuple[float, ...]], de: list[float], z: list[float] | None, m: int, cutoff: float
) -> tuple[list[float], float]:
    """:func:`core.jacobian_step.pinv_step` for one problem (numpy's SVD)."""
    from .jacobian_step import pinv_step

    J = np.array(cols).T[None]
    zz = None if z is None else np.array(z)[None]
    dp, s = pinv_step(J, np.array(de)[None], cutoff, zz)
    return dp[0].tolist(), float(s[0])


def _damped_retry(
    cols: list[tuple[float, ...]], de: list[float], z: list[float] | None, m: int, retry: int
) -> list[float]:
    """:func:`core.jacobian_step.damped_step` with ``λ² = 10^(r−3) · tr(J̃J̃ᵀ)/min(m, k)``."""
    g, wide = _gram(cols, m)
    total = sum(c * c for col in cols for c in col)
    lam2 = max(total / max(1, min(m, len(cols))) * 10.0 ** (retry - 3), _floor(g))
    dp = _damped_solve(cols, g, wide, lam2, de)
    if z is not None:
        null = _damped_null(cols, g, wide, lam2, z, m)
        dp = [a + b for a, b in zip(dp, null, strict=True)]
    return dp


# ---------------------------------------------------------------------- the iteration
@dataclass(frozen=True)
class _Stepper:
    """:class:`core.jacobian._Stepper` for one problem."""

    plan: _Plan
    rule: Rule
    m: int
    max_step: float
    damping: float
    adaptive: bool
    cutoff: float

    def step(
        self,
        cols: list[tuple[float, ...]],
        de: list[float],
        z: list[float] | None,
        axes: list[Vec],
        retry: int,
    ) -> tuple[list[float], float]:
        plan = self.plan
        scale = plan.scale
        if not plan.unit:
            cols = [tuple(c * s for c in col) for col, s in zip(cols, scale, strict=True)]
            if z is not None:
                z = [a * s for a, s in zip(z, scale, strict=True)]
        if retry:
            dp, sigma = _damped_retry(cols, de, z, self.m, retry), 0.0
        else:
            dp, sigma = _rule_step(
                self.rule, cols, de, z, self.m, self.damping, self.adaptive, self.cutoff
            )
        if not plan.unit:
            dp = [a * s for a, s in zip(dp, scale, strict=True)]
        return self.clamp(dp, axes), sigma

    def clamp(self, dp: list[float], axes: list[Vec]) -> list[float]:
        starts = self.plan.starts
        worst = 0.0
        for i in range(self.plan.n):
            a, b = starts[i], starts[i + 1]
            if a == b:
                continue
            tx = ty = tz = 0.0
            for c in range(a, b):
                ax, ay, az = axes[c]
                s = dp[c]
                tx, ty, tz = tx + ax * s, ty + ay * s, tz + az * s
            turn = math.sqrt(tx * tx + ty * ty + tz * tz)
            if turn > worst:
                worst = turn
        if worst > 0.0 and self.max_step < worst:
            factor = self.max_step / worst
            return [v * factor for v in dp]
        return dp

    def propose(
        self,
        p: list[float],
        cols: list[tuple[float, ...]],
        de: list[float],
        z: list[float] | None,
        axes: list[Vec],
        retry: int,
    ) -> tuple[list[Quat], float]:
        dp, sigma = self.step(cols, de, z, axes, retry)
        plan = self.plan
        new = _rotations_of(plan, [a + b for a, b in zip(p, dp, strict=True)])
        if any(lim is not None for lim in plan.limits):
            new = self._limits(p, new, cols, de, z, axes, retry)
        return new, sigma

    def _limits(
        self,
        p: list[float],
        proposal: list[Quat],
        cols: list[tuple[float, ...]],
        de: list[float],
        z: list[float] | None,
        axes: list[Vec],
        retry: int,
    ) -> list[Quat]:
        """:func:`core.jacobian._enforce_limits` for one problem."""
        plan = self.plan
        projected = _project(plan, proposal)
        clamped = [False] * plan.n
        for i, lim in enumerate(plan.limits):
            if lim is not None:
                a, b = projected[i], proposal[i]
                rel = (
                    a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3],
                    a[0] * b[1] - a[1] * b[0] - a[2] * b[3] + a[3] * b[2],
                    a[0] * b[2] + a[1] * b[3] - a[2] * b[0] - a[3] * b[1],
                    a[0] * b[3] - a[1] * b[2] + a[2] * b[1] - a[3] * b[0],
                )
                clamped[i] = _angle(rel) > _CLAMPED
        if not any(clamped):
            return projected
        m = self.m
        frozen = [clamped[j] for j in plan.column_joint]
        diff = _difference(plan, _params_of(plan, projected), p)
        done = [d if f else 0.0 for d, f in zip(diff, frozen, strict=True)]
        jd = _jv(cols, done, m)
        de2 = [a - b for a, b in zip(de, jd, strict=True)]
        # Each clamped joint moves only orthogonally to the rotation the projection removed.
        unit = [0.0] * len(p)
        cols2 = list(cols)
        for i in range(plan.n):
            c0, c1 = plan.starts[i], plan.starts[i + 1]
            if not clamped[i] or c0 == c1:
                continue
            a, b = proposal[i], projected[i]
            removed = (
                -a[0] * b[1] + a[1] * b[0] - a[2] * b[3] + a[3] * b[2],
                -a[0] * b[2] + a[1] * b[3] + a[2] * b[0] - a[3] * b[1],
                -a[0] * b[3] - a[1] * b[2] + a[2] * b[1] + a[3] * b[0],
            )
            local = _local_axes(plan, i, p)
            u = [_dot(w, removed) for w in local]
            norm = math.sqrt(sum(v * v for v in u))
            if not norm > 0.0:
                continue
            u = [v / norm for v in u]
            unit[c0:c1] = u
            ju = [sum(cols[c0 + t][r] * u[t] for t in range(c1 - c0)) for r in range(m)]
            for t in range(c1 - c0):
                col, ut = cols[c0 + t], u[t]
                cols2[c0 + t] = tuple(col[r] - ju[r] * ut for r in range(m))
        z2 = None if z is None else [0.0 if f else v for v, f in zip(z, frozen, strict=True)]
        dp2, _ = self.step(cols2, de2, z2, axes, retry)
        for i in range(plan.n):
            c0, c1 = plan.starts[i], plan.starts[i + 1]
            if clamped[i] and c0 < c1:
                along = sum(unit[c] * dp2[c] for c in range(c0, c1))
                for c in range(c0, c1):
                    dp2[c] -= along * unit[c]
        second = _rotations_of(plan, [a + b + c for a, b, c in zip(p, done, dp2, strict=True)])
        return _project(plan, second)


def _dot(a: Vec, b: Vec) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _local_axes(plan: _Plan, i: int, p: list[float]) -> list[Vec]:
    """:meth:`DofLayout.local_axes` of joint ``i``: its columns' ``ω_k`` in frame ``F_i``."""
    if plan.kinds[i] == "hinge":
        return [plan.hinge_axes[i]]  # type: ignore[list-item]
    c = plan.starts[i]
    v = (p[c], p[c + 1], p[c + 2])
    return list(_euler_columns(v, plan.order) if plan.euler else _expmap_columns(v))


def _stationary(cols: list[tuple[float, ...]], err: list[float]) -> bool:
    """:func:`core.jacobian._stationary` for one problem."""
    gradient = math.sqrt(sum(v * v for v in _jtv(cols, err)))
    size = math.sqrt(sum(c * c for col in cols for c in col))
    return gradient <= _STATIONARY * size * math.sqrt(sum(v * v for v in err))


def solve_single(problem: Problem, rule: Rule, start: FloatArray) -> Solution:
    """The iteration of :mod:`core.jacobian` for a problem of one target, in floats.

    Args:
        problem: ``problem.size == 1`` and ``options.restarts == 0`` (the caller checks).
        rule: ``"transpose"``, ``"pinv"`` or ``"dls"``.
        start: ``(1, n, 4)`` the start pose (:func:`core.jacobian_seed.start_rotations`).

    Returns:
        The same :class:`Solution` as the batched path, to rounding.
    """
    chain, opts = problem.chain, problem.options
    max_step = math.radians(opts.max_step_deg)
    plan = _plan(chain, opts.rotation_params, max_step)
    k = plan.starts[-1]
    alpha = opts.position_weight
    rotations = problem.target_rotations
    if rotations is None or alpha == 1.0:
        kind, m = "position", 3
    elif alpha == 0.0:
        kind, m = "orientation", 3
    else:
        kind, m = "pose", 6
    goal = _Goal(
        kind,
        tuple(problem.targets[0].tolist()),
        None if rotations is None else tuple(rotations[0].tolist()),
        math.sqrt(1.0 - alpha),
        math.sqrt(alpha),
        problem.tolerance,
        opts.angle_tolerance,
    )
    stepper = _Stepper(
        plan, rule, m, max_step, opts.damping, opts.adaptive_damping, opts.singular_cutoff
    )
    nudge = list(plan.nudge)
    can_nudge = any(v != 0.0 for v in nudge)
    scale = plan.scale

    q = _project(plan, [tuple(r) for r in start[0].tolist()])
    posture = None
    if opts.posture_weight > 0.0:
        given = [tuple(r) for r in problem.initial[0].tolist()]
        posture = _params_of(plan, _project(plan, given))
    state = _fk(plan, q)
    err, done = goal.error(state)
    iterations = 0
    sigma_seen = math.inf
    beta = opts.step
    adapt = opts.adaptive_step and kind == "position"
    for _ in range(opts.max_iterations if k and not done else 0):
        p = _params_of(plan, q)
        axes = _axes(plan, state, p)
        cols = goal.columns(plan, state, axes)
        z = None
        if posture is not None:
            z = [opts.posture_weight * v for v in _difference(plan, posture, p)]
        de = [beta * v for v in err]
        new_q, sigma = stepper.propose(p, cols, de, z, axes, 0)
        scaled = (
            cols
            if plan.unit
            else [tuple(c * s for c in col) for col, s in zip(cols, scale, strict=True)]
        )
        kick = _stationary(scaled, err) and goal.pushes_inward(state)
        if kick and can_nudge:
            new_q = _project(
                plan, _rotations_of(plan, [a + b for a, b in zip(p, nudge, strict=True)])
            )
        new_state = _fk(plan, new_q)
        new_err, new_done = goal.error(new_state)
        merit = sum(v * v for v in err)
        worse = (
            sum(v * v for v in new_err) > merit and not new_done and not kick and kind == "position"
        )
        if adapt:
            beta = max(opts.step, 0.5 * beta) if worse else min(1.0, 2.0 * beta)
        for retry in range(1, _RETRIES + 1):
            if not worse:
                break
            new_q, _ = stepper.propose(p, cols, de, z, axes, retry)
            new_state = _fk(plan, new_q)
            new_err, new_done = goal.error(new_state)
            worse = sum(v * v for v in new_err) > merit and not new_done
        if worse:
            new_q, new_state, new_err = q, state, err
        give_up = not new_done and (worse or goal.stalled(new_err, err))
        q, state, err = new_q, new_state, new_err
        iterations += 1
        sigma_seen = min(sigma_seen, sigma)
        if new_done or give_up:
            break

    if not math.isfinite(sigma_seen) and k:
        p = _params_of(plan, q)
        cols = goal.columns(plan, state, _axes(plan, state, p))
        if not plan.unit:
            cols = [tuple(c * s for c in col) for col, s in zip(cols, scale, strict=True)]
        sigma_seen = _sigma(_gram(cols, m)[0])
    if not math.isfinite(sigma_seen):
        sigma_seen = 0.0
    rot_out, pos_out = np.array([q]), np.array([state.positions])
    if iterations or not seeded(problem):
        rot_out, pos_out = orient_bend(problem, rot_out, pos_out)
    return Solution(
        rotations=rot_out,
        positions=pos_out,
        iterations=np.array([iterations], dtype=np.int64),
        effector_rotation=None if rotations is None else np.array([state.worlds[-1]]),
        min_singular_value=np.array([sigma_seen]),
    )


__all__ = ["solve_single"]
