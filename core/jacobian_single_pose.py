# SPDX-License-Identifier: GPL-3.0-or-later
"""Float pose algebra of the single-target Jacobian iteration (:mod:`core.jacobian_single`).

Quaternions as 4-tuples wxyz (rotation, angle, log and exp, Euler angles in the joint's
order), the per-chain plan (:class:`_Plan`: each joint's parameters and limits, cached),
forward kinematics (:class:`_State`), the joint parameters of a pose and back, the Jacobian's
columns, and the goal rows (:class:`_Goal`: position, orientation, the pose twist) — the
float twins of :mod:`core.jacobian`'s batched helpers.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from .chain import Chain
from .components import qangle, qmul, qrotate
from .jacobian_iteration import _NUDGE, _STALL
from .limits import JointLimits
from .parameterization import EULER_ORDER, DofLayout  # the batched layout, for weights
from .rotations import SMALL_ANGLE

Quat = tuple[float, float, float, float]
Vec = tuple[float, float, float]
_IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)
_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
_UNIT = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


# ---------------------------------------------------------------------- quaternion floats
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
    out[kb] = qrotate(qc, _UNIT[kb])
    out[ka] = qrotate(qmul(qc, qb), _UNIT[ka])
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


_PLANS: weakref.WeakKeyDictionary[Chain, dict[tuple[str, float], _Plan]] = (
    weakref.WeakKeyDictionary()
)


def _plan(chain: Chain, params: str, max_step: float) -> _Plan:
    key = (params, max_step)
    plans = _PLANS.get(chain)
    if plans is None:
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
    parent frames ``F_i`` and world orientations ``W_i`` (as
    :class:`core.jacobian_matrix.ChainState`)."""

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
        ox, oy, oz = qrotate(world, plan.offsets[i])
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
            out[i] = lim.project_floats(q[i])
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
            out.extend(qrotate(frame, col) for col in cols)
        elif kind == "hinge":
            out.append(qrotate(frame, plan.hinge_axes[i]))  # type: ignore[arg-type]
    return out


# ---------------------------------------------------------------------- goals
@dataclass(frozen=True)
class _Goal:
    """:class:`core.jacobian_iteration._Goal` for one target."""

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
        converged = converged and qangle(rel) <= self.angle_tolerance
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
    rx, ry, rz = qrotate((w, x, y, z), eff)
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
