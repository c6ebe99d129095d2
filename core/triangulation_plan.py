# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation's per-chain plan and the small algebra its passes share.

:func:`_plan` computes once per chain (cached) what every pass of :mod:`core.triangulation`
reads: link lengths, the length of the chain beyond each link, each joint's kind, cone
axes and limits, the uniform planar collapses :class:`_Family` of the constrained rule
(:mod:`core.triangulation_search`), the rest directions and start frame. Beside it: the
module's tolerances, the component-array helpers (``_where``, ``_norm``, ``_perpendicular``,
``_start_frame``, …) used by the numpy pass (:mod:`core.triangulation_batch`)
and the bend-plane step (:mod:`core.triangulation_bend`), and :func:`_scale` (chains
outside ``1e±60`` are solved scaled to a reach of 1).

Components are tuples of floats or of arrays ``(N,)`` (:mod:`core.components`); quaternions
are wxyz.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from .chain import Chain
from .components import (
    Num,
    Quat,
    Vec,
    qconj,
    qmatrix,
    qmul,
    qrotate,
    vadd,
    vcross,
    vdot,
    vscale,
    vsub,
)
from .options import SolveOptions
from .rotations import FloatArray

#: A target closer than this fraction of the reach to a joint is "at" the joint.
_NEAR = 1e-12
#: ``|û × ĉ|`` at or below this: the rotation axis is undefined (§3.1.1).
_PARALLEL = 1e-9
#: Bends and pole offsets below this fraction of the reach are ignored (as core.bend_plane).
_BEND_TINY = 1e-9
#: Slack on the triangle and cone tests of the constrained search (cosines and radians).
_FEASIBLE_EPS = 1e-12
#: Grid size, golden-section and bisection steps of the constrained search over the
#: collapse parameter s.
_GRID = 33
_GOLDEN_STEPS = 40
_BISECTIONS = 20
#: Where no grid value passes: the finer grid's size, and how many of its lowest local
#: minima of the violation are searched.
_FINE = 257
_MINIMA = 3
#: ``û·d̂`` below this: the shortest turn is built as a half turn plus a short arc.
_OPPOSITE = -1.0 + 1e-6
#: Floor for divisors that may be zero in a branch whose result is discarded.
_SAFE = 1e-300

_IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)
_X: Vec = (1.0, 0.0, 0.0)
_Y: Vec = (0.0, 1.0, 0.0)
_MINUS_Z: Vec = (0.0, 0.0, -1.0)


# --------------------------------------------------------------------------- per-chain plan
@dataclass(frozen=True)
class _Family:
    """Uniform planar collapses of the links after joint ``i`` (module docstring).

    Attributes:
        links: ``(m,)`` lengths of links ``i + 1 … n − 1``.
        curl: ``(m,)`` direction of each link relative to link ``i + 1`` at ``s = 1``
            (radians, cumulative cone limits of joints ``i + 2 …``; 0 for free joints).
        grid: ``(s, b, γ)`` on 33 values of the collapse parameter ``s`` in ``[0, 1]``:
            ``b`` = distance from joint ``i + 1`` to the effector, ``γ`` = angle between
            link ``i + 1`` and that vector.
        fine: the same on 257 values, searched where no value of ``grid`` passes.
    """

    links: FloatArray
    curl: FloatArray
    grid: tuple[FloatArray, FloatArray, FloatArray]
    fine: tuple[FloatArray, FloatArray, FloatArray]

    @staticmethod
    def build(links: FloatArray, curl: FloatArray) -> _Family:
        s = np.linspace(0.0, 1.0, _GRID)
        f = np.linspace(0.0, 1.0, _FINE)
        return _Family(
            links,
            curl,
            (s, *_Family.planar(links, curl, s)),
            (f, *_Family.planar(links, curl, f)),
        )

    @staticmethod
    def planar(links: FloatArray, curl: FloatArray, s: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``b(s)`` and ``γ(s)`` for collapse parameters ``s (...)`` by planar FK."""
        theta = s[..., None] * curl
        ex = np.sum(links * np.cos(theta), axis=-1)
        ey = np.sum(links * np.sin(theta), axis=-1)
        return np.hypot(ex, ey), np.arctan2(np.abs(ey), ex)

    @property
    def trivial(self) -> bool:
        """True when no later joint bends in the family (``b`` is the straight length)."""
        return not np.any(self.curl)

    @property
    def straight(self) -> float:
        """``b(0)``: the remaining chain's straight length."""
        return float(self.grid[1][0])

    @property
    def step(self) -> float:
        """Largest change of ``b`` between neighbouring grid values."""
        return float(np.max(np.abs(np.diff(self.grid[1]))))


@dataclass(frozen=True)
class _Plan:
    """Per-chain constants of the pass (computed once per chain, see :func:`_plan`).

    Attributes:
        n, reach: joint count and straight length.
        lengths, remaining: per joint ``a`` and ``b`` (chain units).
        inner: per joint, the unreachable-core radius of the free chain beyond its link,
            ``max(0, 2·longest − b)`` (the δb = 90° guard).
        offsets, units: link vectors and their unit directions in each joint's frame.
        rests: rest rotations (wxyz floats).
        kinds, cones: ``"free"``/``"cone"``/``"project"`` and the cone angle (π if none).
        families: the collapse family used at joints with cone limits around them.
        straight: joint ``i``'s link starts along joint ``i − 1``'s (identity rest, same
            link direction) when its start rotation is the identity.
        rest0_inverse: rotation matrix of ``rest_0⁻¹`` (row-major).
        all_free: every joint is free (the float path applies).
        limited: the chain has limits and the constrained pass is not exact for it (limits
            other than cones about the links — locks, ranges, hinges — or cones on a bent
            rest pose or more than three links): missed targets are re-solved within the
            limits (:mod:`core.triangulation_limits`).
        rest_start: the rest pose's root→effector axis and bend vector (bend plane).
        rest_dirs: each link's unit direction in the base frame at rest.
        rest_x0: the root's local X axis in the base frame at rest (its fallback bend axis).
    """

    n: int
    reach: float
    lengths: tuple[float, ...]
    remaining: tuple[float, ...]
    inner: tuple[float, ...]
    offsets: tuple[Vec, ...]
    units: tuple[Vec, ...]
    rests: tuple[Quat, ...]
    kinds: tuple[str, ...]
    cones: tuple[float, ...]
    families: tuple[_Family | None, ...]
    straight: tuple[bool, ...]
    rest0_inverse: tuple[float, ...]
    all_free: bool
    limited: bool
    rest_start: tuple[Vec, Vec]
    rest_dirs: tuple[Vec, ...]
    rest_x0: Vec


_PLANS: weakref.WeakKeyDictionary[Chain, _Plan] = weakref.WeakKeyDictionary()


def _joint_kind(chain: Chain, i: int) -> str:
    """``"free"``, ``"cone"`` (pure bend limit, link along +Y) or ``"project"``."""
    lim = chain.limits[i]
    if lim.is_free:
        return "free"
    unit = chain.offsets[i] / chain.lengths[i]
    pure_cone = (
        lim.cone is not None
        and lim.hinge_axis is None
        and not any(lim.lock)
        and all(r is None for r in lim.ranges)
    )
    # Along +Y to 1e-12 rad: a test on the cosine (1 − unit[1] ≤ 1e-12) would let the link
    # lean 1.4e-6 rad off the axis the cone is measured about, and the limit fail by that.
    if pure_cone and unit[1] > 0.0 and math.hypot(unit[0], unit[2]) <= 1e-12:
        return "cone"
    return "project"


def _plan(chain: Chain) -> _Plan:
    plan = _PLANS.get(chain)
    if plan is not None:
        return plan
    n = chain.n_joints
    lengths = chain.lengths
    remaining = chain.remaining_lengths
    kinds = tuple(_joint_kind(chain, i) for i in range(n))
    cones = tuple(
        float(chain.limits[i].cone) if kinds[i] == "cone" else math.pi  # type: ignore[arg-type]
        for i in range(n)
    )
    inner = []
    families: list[_Family | None] = []
    for i in range(n):
        after = lengths[i + 1 :]
        inner.append(
            max(0.0, 2.0 * float(after.max()) - float(remaining[i])) if after.size else 0.0
        )
        bends = np.array([cones[k] if kinds[k] == "cone" else 0.0 for k in range(i + 2, n)])
        needs = kinds[i] == "cone" or (i + 1 < n and kinds[i + 1] == "cone") or np.any(bends)
        if needs and after.size:
            families.append(_Family.build(after, np.concatenate(([0.0], np.cumsum(bends)))))
        else:
            families.append(None)
    plan = _Plan(
        n=n,
        reach=chain.reach,
        lengths=tuple(float(x) for x in lengths),
        remaining=tuple(float(x) for x in remaining),
        inner=tuple(inner),
        offsets=tuple(tuple(float(x) for x in o) for o in chain.offsets),  # type: ignore[misc]
        units=tuple(
            tuple(float(x) for x in o / length)  # type: ignore[misc]
            for o, length in zip(chain.offsets, lengths, strict=True)
        ),
        rests=tuple(tuple(float(x) for x in q) for q in chain.rest_rotations),  # type: ignore[misc]
        kinds=kinds,
        cones=cones,
        families=tuple(families),
        straight=tuple(
            i > 0
            and kinds[i - 1] != "project"
            and not np.any(chain.rest_rotations[i] - (1.0, 0.0, 0.0, 0.0))
            and bool(np.all(chain.offsets[i] / lengths[i] == chain.offsets[i - 1] / lengths[i - 1]))
            for i in range(n)
        ),
        rest0_inverse=tuple(float(x) for x in qmatrix(qconj(tuple(chain.rest_rotations[0])))),
        all_free=all(k == "free" for k in kinds),
        limited=not all(k == "free" for k in kinds) and not _exact_cones(chain, kinds),
        rest_start=_rest_start(chain),
        rest_dirs=tuple(_rest_dirs(chain)),
        rest_x0=_floats(qrotate(tuple(float(x) for x in chain.rest_rotations[0]), _X)),  # type: ignore[arg-type]
    )
    _PLANS[chain] = plan
    return plan


def _exact_cones(chain: Chain, kinds: tuple[str, ...]) -> bool:
    """True when the constrained pass alone is exact: cone and free joints only, at most
    three links, a straight rest pose (see the module docstring)."""
    straight = all(
        not np.any(chain.rest_rotations[i] - (1.0, 0.0, 0.0, 0.0)) for i in range(1, len(kinds))
    )
    return all(k in ("free", "cone") for k in kinds) and len(kinds) <= 3 and straight


def _floats(v: Vec) -> Vec:
    return (float(v[0]), float(v[1]), float(v[2]))


def _rest_dirs(chain: Chain) -> list[Vec]:
    """Each link's unit direction in the base frame at rest (the float pass's arithmetic)."""
    world: Quat = _IDENTITY
    out = []
    for rest, offset, length in zip(
        chain.rest_rotations.tolist(), chain.offsets.tolist(), chain.lengths.tolist(), strict=True
    ):
        world = qmul(world, tuple(rest))
        out.append(_floats(qrotate(world, tuple(x / length for x in offset))))
    return out


def _rest_start(chain: Chain) -> tuple[Vec, Vec]:
    axis, bend = _start_frame(chain, [_IDENTITY] * chain.n_joints)
    return _floats(axis), _floats(bend)


def _where(cond: Any, a: tuple[Num, ...], b: tuple[Num, ...]) -> tuple[Any, ...]:
    return tuple(np.where(cond, x, y) for x, y in zip(a, b, strict=True))


def _norm(v: Vec) -> Num:
    return np.sqrt(vdot(v, v))


def _unit_or_zero(v: Vec, n: Num) -> Vec:
    """``v / n`` where ``n > 0``, else zero (as the numpy routines of core.rotations)."""
    inv = np.where(n > 0.0, 1.0 / np.maximum(n, _SAFE), 0.0)
    return vscale(v, inv)


def _perpendicular(v: Vec, hint: Vec) -> Vec:
    """Unit vectors perpendicular to ``v``, as :func:`core.rotations.perpendicular` (the
    same arithmetic on floats or arrays: :func:`core.components.vperpendicular` for one
    vector in floats); component arrays ``(m,)`` are worked on as one ``(3, m)`` block."""
    if type(v[0]) is np.ndarray and v[0].ndim == 1:
        return _perpendicular_block(np.array(v), hint)
    u = _unit_or_zero(v, _norm(v))
    h_perp = vsub(hint, vscale(u, vdot(hint, u)))
    return _finish_perpendicular(u, h_perp, _norm(h_perp) > 1e-9)


def _perpendicular_block(v: FloatArray, hint: Vec) -> Vec:
    """:func:`_perpendicular` of ``v (3, m)`` (overwritten), each sum in its order."""
    t = v * v
    n = np.add(t[0], t[1])
    np.sqrt(np.add(n, t[2], n), n)
    inv = np.where(n > 0.0, 1.0 / np.maximum(n, _SAFE), 0.0)
    u = np.multiply(v, inv, v)
    h = np.empty_like(u)
    for k in range(3):
        h[k] = hint[k]
    np.multiply(h, u, t)
    along = np.add(t[0], t[1])
    np.add(along, t[2], along)
    p = np.subtract(h, np.multiply(u, along, t), h)
    np.multiply(p, p, t)
    pn = np.add(t[0], t[1])
    np.sqrt(np.add(pn, t[2], pn), pn)
    usable = pn > 1e-9
    if not usable.all():
        return _finish_perpendicular(tuple(u), tuple(p), usable)
    np.multiply(p, u, t)
    np.add(t[0], t[1], along)
    np.add(along, t[2], along)
    np.subtract(p, np.multiply(u, along, t), p)
    np.multiply(p, p, t)
    np.add(t[0], t[1], pn)
    np.sqrt(np.add(pn, t[2], pn), pn)
    np.multiply(p, 1.0 / np.maximum(pn, _SAFE), p)
    return (p[0], p[1], p[2])


def _finish_perpendicular(u: Vec, h_perp: Vec, usable: Any) -> Vec:
    """The end of :func:`_perpendicular`: ``h_perp`` where ``usable``, else the coordinate
    axis least aligned with ``u``, made orthogonal to ``u`` and normalised."""
    axis = h_perp
    if not np.all(usable):
        # the coordinate axis least aligned with u, where the hint is (nearly) along u
        ax, ay, az = np.abs(u[0]), np.abs(u[1]), np.abs(u[2])
        pick_x = (ax <= ay) & (ax <= az)
        pick_y = ~pick_x & (ay <= az)
        least = (
            np.where(pick_x, 1.0, 0.0),
            np.where(pick_y, 1.0, 0.0),
            np.where(pick_x | pick_y, 0.0, 1.0),
        )
        axis = _where(usable, h_perp, least)
    p = vsub(axis, vscale(u, vdot(axis, u)))
    return vscale(p, 1.0 / np.maximum(_norm(p), _SAFE))


def _turn_over(u: Vec, d: Vec, p: Vec, sqrt: Any) -> Quat:
    """Shortest rotation ``u → d`` for nearly opposite unit vectors (``1 + u·d < 1e-6``).

    A half turn about ``p`` (unit, perpendicular to ``u``, along ``u × d``) followed by the
    short arc ``−u → d``: both factors are well conditioned, unlike ``(1 + u·d, u × d)``
    normalised, whose tiny first component loses the angle's last digits (its angle error is
    about ``2e-16 / √(2(1 + u·d))``, below 2e-13 outside this range).
    """
    m = (-u[0], -u[1], -u[2])
    w = 1.0 - vdot(u, d)
    x = vcross(m, d)
    inv = 1.0 / sqrt(w * w + x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    return qmul((w * inv, x[0] * inv, x[1] * inv, x[2] * inv), (0.0, p[0], p[1], p[2]))


def _stack(q: tuple[Num, ...], size: int) -> FloatArray:
    return np.stack([np.broadcast_to(np.asarray(x, dtype=np.float64), (size,)) for x in q], -1)


# --------------------------------------------------------------------------- bend plane
def _start_frame(chain: Chain, initial: list[Quat]) -> tuple[Vec, Vec]:
    """Start pose's root→effector unit axis and bend vector (as core.bend_plane).

    ``initial`` holds one local rotation per joint, each component a float or ``(N,)``
    array. Returns ``(start_axis, bend)``: the bend is the mean inner-joint offset from
    the root→effector line, or for a straight start pose the root's local −Z made
    perpendicular to that line.
    """
    reach = chain.reach
    world: Quat = _IDENTITY
    p: Vec = (0.0, 0.0, 0.0)
    inner: Vec = (0.0, 0.0, 0.0)
    root: Quat = _IDENTITY
    n = chain.n_joints
    for i in range(n):
        rest = tuple(float(x) for x in chain.rest_rotations[i])
        world = qmul(qmul(world, rest), initial[i])  # type: ignore[arg-type]
        if i == 0:
            root = world
        p = vadd(p, qrotate(world, tuple(float(x) for x in chain.offsets[i])))  # type: ignore[arg-type]
        if i < n - 1:
            inner = vadd(inner, p)
    length = _norm(p)
    axis = _unit_or_zero(p, np.where(length > _BEND_TINY * reach, length, 0.0))
    if n > 1:
        mean = vscale(inner, 1.0 / (n - 1))
        bend = vsub(mean, vscale(axis, vdot(mean, axis)))
    else:
        bend = (0.0, 0.0, 0.0)
    side = qrotate(root, _MINUS_Z)
    side = vsub(side, vscale(axis, vdot(side, axis)))
    straight = _norm(bend) <= _BEND_TINY * reach
    bend = _where(straight, side, bend)
    return axis, bend


def _take(v: tuple[Num, ...], idx: Any) -> tuple[Num, ...]:
    """Rows ``idx`` of component arrays (floats are passed through)."""
    return tuple(x[idx] if np.ndim(x) else x for x in v)


def _patch(v: tuple[Num, ...], idx: Any, values: tuple[Num, ...], size: int) -> tuple[Any, ...]:
    """Component arrays ``(size,)`` with rows ``idx`` replaced by ``values``.

    Full-size arrays are changed in place: pass only arrays computed by the caller.
    """
    out = []
    for x, y in zip(v, values, strict=True):
        z = x if np.shape(x) == (size,) else np.array(np.broadcast_to(x, (size,)), dtype=float)
        z[idx] = y
        out.append(z)
    return tuple(out)


def _is_identity(q: Quat) -> bool:
    """True for the identity given as floats (component arrays never count)."""
    return type(q[0]) is float and q == _IDENTITY


def _spreads(plan: _Plan, options: SolveOptions) -> bool:
    """True when ``options.distribution == "even"`` takes the spread (:mod:`core.spread`):
    on one or two links the spread is the paper's triangle (the only pose with the
    start pose's bend side), so the pass places them."""
    return options.distribution == "even" and plan.n > 2


#: Chains whose reach lies outside this range are solved scaled to a reach of 1: squares
#: and Heron's product of four lengths would overflow (or underflow) in chain units.
_SCALE_RANGE = (1e-60, 1e60)


def _scale(chain: Chain) -> float:
    """1, or the chain's reach when it is too large or small to solve in its own units."""
    reach = chain.reach
    return 1.0 if _SCALE_RANGE[0] <= reach <= _SCALE_RANGE[1] else reach
