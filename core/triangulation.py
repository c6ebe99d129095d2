# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation IK: one root-to-tip pass with the law of cosines.

Implements R. Müller-Cajar and R. Mukundan, "Triangulation: A New Algorithm for Inverse
Kinematics", IVCNZ 2007 (``../shared/references/000_c08bf4be023a5d3e.txt``), Algorithm 1 and
sections 3.1.1–3.1.3, for general chains (:mod:`core.chain`): links are the chain's
``offsets`` in each joint's frame, rest rotations are arbitrary, and the pass starts from
``problem.initial``. Equations cited below are the paper's.

One pass, root first. At joint ``i`` (position ``p_i``, current link direction ``û``):

* ``a`` = link length, ``b`` = length of the chain beyond the link (``chain.remaining_lengths``,
  stored once per joint), ``c⃗`` = vector from the joint to the target, ``c = |c⃗|``.
* The link must make the angle ``δ`` with ``ĉ`` given by the law of cosines (eqs. 4–5),
  ``cos δ = (a² + c² − b²) / (2ac)``. Clipping ``cos δ`` to ``[−1, 1]`` gives the paper's special
  cases (§3.1.3) at once: ``c ≥ a + b`` → ``δ = 0`` (point at the target); ``c < b − a`` →
  ``δ = 180°`` (point away, eq. 8); ``c < a − b`` (the target is inside the sphere the rest of
  the chain cannot leave) → ``δ = 0``: the paper declares "no solution" there and points away,
  we point at the target, which is the closest approach.
* The link turns by ``θ = acos(û·ĉ) − δ`` (eq. 6) about ``r⃗ = û × ĉ`` (eq. 7), i.e. to
  ``d̂ = cos δ · ĉ + sin δ · ŵ`` with ``ŵ = ĉ × r̂`` (the unit part of ``û`` perpendicular to
  ``ĉ``). The joint's new world orientation is the *shortest* rotation taking ``û`` to ``d̂``
  applied to its current one, so every joint turns as little as the triangle allows (the
  paper's cost ``C = Σ θ``, eq. 3). Only ``cos δ`` and ``sin δ`` are used, never ``acos``;
  ``sin δ`` comes from Heron's factors, so nearly flat triangles (``c ≈ a + b``) stay exact.
* Undefined axis (§3.1.1, ``û ∥ ĉ``, ``|û × ĉ| ≤ 1e-9``): the previous joint's axis, else this
  joint's current local X axis (a Blender bone bends about X), made perpendicular to ``ĉ``.
* Full triangle formed (§3.1.2): once ``|a − b| ≤ c ≤ a + b`` held at a joint, every later link
  points straight at the target.
* A target at the joint itself (``c ≤ 1e-12 × reach``) leaves the link where it is.
* ``options.delta_b_deg == 90`` (the paper's future work): when ``c < b − a`` the link turns
  perpendicular to ``ĉ`` instead of away, unless that would put the next joint inside the
  unreachable core of the free chain beyond it (radius ``max(0, 2·max link − b)``); then it
  turns just far enough (the law of cosines with that radius as the third side). With this
  guard both variants reach every target of a free chain with
  ``max(0, 2·max link − reach) ≤ |t| ≤ reach``.

Constrained chains (the paper's chain C, §3.1.3 last paragraph) — joints whose limit is a
pure bend (cone) limit with the link along the bone's +Y axis:

* The link direction is limited to the cone about the joint's rest direction (relative to the
  previous joint, as the paper says): if the triangle direction reached by the shortest turn
  is outside it, the link is turned about ``ĉ`` to the nearest allowed direction on the
  triangle's circle; if the circle misses the cone, it is clamped to the cone's edge.
* ``b`` is chosen between the straight and the collapsed remaining chain: the rest of the
  chain is modelled by the one-parameter family of *uniform planar collapses* — every later
  cone joint bent by ``s × its limit`` in one plane, curling the same way, free joints straight
  — whose effector distance ``b(s)`` and angle ``γ(s)`` to its first link are computed by planar
  forward kinematics. ``s = 1`` is the paper's "fully collapsed" chain. The joint takes the
  smallest ``s`` (the straightest rest) for which the triangle ``(a, b(s), c)`` exists, its own
  cone allows the triangle (``|∠(k̂, ĉ) − δ| ≤ φ``) and the next joint can bend enough
  (``|∠(d̂, e⃗) − γ(s)| ≤ φ_next``, ``e⃗`` = next joint → target): a grid of 33 values,
  where it finds none a grid of 257 values and golden-section searches about that grid's
  lowest local minima of the violation, bisection.
  If no ``s`` works the free rule above is used (no solution: the effector stays off target).
  By induction, the ``s`` a joint chose stays feasible for the next joint, so once the root
  finds one the target is reached. This is exact when the family contains a solution
  whenever one exists — e.g. for chains of up to three links with a straight rest pose like
  chain C, where the family has one parameter (the wrist); for longer chains the true closest
  collapse may be non-uniform or out of plane and near-core targets can be missed, and for
  rest poses that are not straight the cone axes differ from the previous links and the
  family is only a heuristic (limits still hold). The argument assumes the pass starts from
  the rest pose; from a bent start pose tight cones can make it miss (docs/triangulation.md).
* Bending every later joint to its limit does not in general minimise the remaining
  distance: a planar curl whose limits add up past 180° wraps around (five links of 90°
  end one link from the start, while bends of 72° close a pentagon), which is why the family
  varies ``s`` instead of using ``s = 1`` only.

Other limits (per-axis ranges and Blender's ellipse, locks, hinges, cones on off-axis links)
are an extension beyond the paper: after each joint is placed, its rotation is replaced by
:meth:`JointLimits.project`, and the later joints work from where it ended up. Where that
pass misses a target (and on cone chains for which the constrained pass is not exact),
:func:`core.triangulation_limits.reach_within_limits` searches the admissible poses: the
last two joints in closed form when the last is a hinge (its allowed sign picks the bend
side, the joint before it spins the bend plane to an allowed rotation), refined and
restarted candidates otherwise; it keeps the admissible pose of lowest cost that reaches,
else the closest found. Limits always hold.

Chains longer or shorter than ``1e±60`` are solved scaled to a reach of 1 (squares of their
lengths would overflow); an empty batch gives empty arrays.

Finally the bend plane is oriented by :func:`core.bend_plane.orient_bend` (poles, the default
``"rest"`` plane; ``"minimal"`` keeps the paper's shortest-rotation bend). Its effect is
computed inline on component arrays, because the general routine is too slow for the
benchmark's batches; tests check that the results equal calling it.

Two implementations of the same algorithm: :func:`_solve_batch` (numpy, component arrays
``(N,)``, every chain; its pass is :mod:`core.triangulation_batch`, which builds on this
module's plan and constrained rule) and :func:`_solve_single` (plain Python floats, one target
on a free chain or one whose limited joints are projected, for interactive single solves;
on limited chains :mod:`core.triangulation_limits_single` adds the closed form of a last
hinge in floats); tests check they agree to rounding.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .chain import Chain
from .components import (
    Num,
    Quat,
    Vec,
    mapply,
    qconj,
    qmatrix,
    qmul,
    qmul_conj,
    qrotate,
    vadd,
    vcombine,
    vcross,
    vdot,
    vscale,
    vsub,
)
from .options import SolveOptions
from .problem import Problem
from .result import Solution
from .rotations import FloatArray
from .triangulation_limits import reach_within_limits

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
    """Unit vectors perpendicular to ``v``, as :func:`core.rotations.perpendicular`."""
    u = _unit_or_zero(v, _norm(v))
    ax, ay, az = np.abs(u[0]), np.abs(u[1]), np.abs(u[2])
    pick_x = (ax <= ay) & (ax <= az)
    pick_y = ~pick_x & (ay <= az)
    least = (
        np.where(pick_x, 1.0, 0.0),
        np.where(pick_y, 1.0, 0.0),
        np.where(pick_x | pick_y, 0.0, 1.0),
    )
    h_perp = vsub(hint, vscale(u, vdot(hint, u)))
    axis = _where(_norm(h_perp) > 1e-9, h_perp, least)
    p = vsub(axis, vscale(u, vdot(axis, u)))
    return vscale(p, 1.0 / np.maximum(_norm(p), _SAFE))


def _perpendicular_float(v: Vec, hint: Vec) -> Vec:
    """:func:`_perpendicular` for one vector, in floats (same arithmetic)."""
    sqrt = math.sqrt
    n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    inv = 1.0 / max(n, _SAFE) if n > 0.0 else 0.0
    u = (v[0] * inv, v[1] * inv, v[2] * inv)
    ax, ay, az = abs(u[0]), abs(u[1]), abs(u[2])
    if ax <= ay and ax <= az:
        least = (1.0, 0.0, 0.0)
    elif ay <= az:
        least = (0.0, 1.0, 0.0)
    else:
        least = (0.0, 0.0, 1.0)
    h = vsub(hint, vscale(u, vdot(hint, u)))
    axis = h if sqrt(vdot(h, h)) > 1e-9 else least
    p = vsub(axis, vscale(u, vdot(axis, u)))
    return vscale(p, 1.0 / max(sqrt(vdot(p, p)), _SAFE))


def _between(a: Vec, b: Vec, hint: Vec) -> Quat:
    """Shortest rotations ``a → b`` exactly as :func:`core.rotations.between`."""
    na, nb = _norm(a), _norm(b)
    ua, ub = _unit_or_zero(a, na), _unit_or_zero(b, nb)
    dot = vdot(ua, ub)
    x = vcross(ua, ub)
    q: Quat = (1.0 + dot, x[0], x[1], x[2])
    degenerate = (dot < -1.0 + 1e-12) & (na > 0.0) & (nb > 0.0)
    if np.any(degenerate):
        axis = _perpendicular(ua, hint)
        q = _where(degenerate, (0.0, *axis), q)
    norm = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    inv = np.where(norm > 0.0, 1.0 / np.maximum(norm, _SAFE), 0.0)
    return (np.where(norm > 0.0, q[0] * inv, 1.0), q[1] * inv, q[2] * inv, q[3] * inv)


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


# --------------------------------------------------------------------------- batch pass
def _triangle(a: float, b: Num, c: Num, c2: Num, inv_c: Num) -> tuple[Num, Num]:
    """``cos δ`` (eq. 5, clipped to ``[−1, 1]``) and ``sin δ`` of the angle at ``a``–``c``.

    ``sin δ = √((c + b − a)(a + b − c)(a + c − b)(a + b + c)) / (2ac)`` (Heron's factors),
    zero outside the triangle inequality: accurate near a degenerate triangle, where
    ``√(1 − cos²δ)`` would turn a rounding error of ``1e-16`` into an angle of ``1e-8``.
    ``c2 = c²`` and ``inv_c = 1 / max(c, near)``.
    """
    scale = inv_c * (0.5 / a)
    cos_d = np.clip((a * a - b * b + c2) * scale, -1.0, 1.0)
    heron = (c + b - a) * (a + b - c) * (a + c - b) * (a + b + c)
    return cos_d, np.sqrt(np.maximum(heron, 0.0)) * scale


def _free_rule(plan: _Plan, i: int, c: Num, c2: Num, inv_c: Num, delta90: bool) -> tuple[Num, Num]:
    """``(cos δ, sin δ)`` of the free rule at joint ``i`` (eqs. 5, 8; δb = 90° variant)."""
    a, b = plan.lengths[i], plan.remaining[i]
    cos_d, sin_d = _triangle(a, b, c, c2, inv_c)
    if delta90 and b > a:
        r = plan.inner[i]
        guard = (a * a - r * r + c2) * inv_c * (0.5 / a)
        cos_g = np.clip(np.minimum(0.0, guard), -1.0, 1.0)
        close = c < b - a
        cos_d = np.where(close, cos_g, cos_d)
        sin_d = np.where(close, np.sqrt(1.0 - cos_g * cos_g), sin_d)
    return cos_d, sin_d


def _violation(
    plan: _Plan, i: int, c: Num, c2: Num, inv_c: Num, kappa: Num, b: Num, gamma: Num
) -> tuple[Num, Num, Num]:
    """How far the constrained triangle at joint ``i`` misses, for distances ``b``, angles ``γ``.

    Returns ``(violation, cos δ, sin δ)``; the triangle is feasible where the violation is
    at most ``_FEASIBLE_EPS``. The violation is the largest of: how far eq. 5's cosine lies
    outside ``[−1, 1]``; by how much (radians) the joint's own cone misses the triangle's
    circle, ``|κ − δ| − φ``; by how much the next joint's bend exceeds its cone,
    ``|∠(d̂, e⃗) − γ| − φ_next``. ``kappa`` = angle between the joint's cone axis and ``ĉ``.
    """
    a = plan.lengths[i]
    raw = (a * a - b * b + c2) * inv_c * (0.5 / a)
    violation = np.maximum(raw - 1.0, -1.0 - raw)
    cos_d, sin_d = _triangle(a, b, c, c2, inv_c)
    if plan.kinds[i] == "cone":
        own = np.abs(kappa - np.arctan2(sin_d, cos_d)) - plan.cones[i]
        violation = np.maximum(violation, own)
    if i + 1 < plan.n and plan.kinds[i + 1] == "cone":
        cos_next = np.clip((c * cos_d - a) / np.maximum(b, _SAFE), -1.0, 1.0)
        bend = np.abs(np.arccos(cos_next) - gamma) - plan.cones[i + 1]
        violation = np.maximum(violation, bend)
    return violation, cos_d, sin_d


def _violation_at(plan: _Plan, i: int, rows: tuple[Num, ...], s: Num) -> Num:
    """:func:`_violation` of the family member ``s`` for targets ``rows = (c, c², 1/c, κ)``."""
    family = plan.families[i]
    assert family is not None
    b, gamma = _Family.planar(family.links, family.curl, s)
    return _violation(plan, i, *rows, b, gamma)[0]  # type: ignore[call-arg]


def _constrained_rule(
    plan: _Plan, i: int, c: Num, c2: Num, inv_c: Num, kappa: Num, delta90: bool
) -> tuple[Num, Num, Num]:
    """``(cos δ, sin δ, formed)`` at a joint with cone limits around it.

    Searches the smallest collapse parameter ``s`` whose :func:`_violation` is at most
    ``_FEASIBLE_EPS`` (module docstring): the straight rest ``s = 0``; else a grid of 33
    values; where none passes, a grid of 257 values and golden-section searches about its
    lowest local minima (:func:`_search_fine`: feasible ranges far narrower than the grid
    spacing are found this way); then bisection between the last failing and the first
    passing value.
    Where nothing passes, falls back to :func:`_free_rule`. ``formed`` marks where the
    triangle closed with the straight rest of the chain (§3.1.2).
    """
    family = plan.families[i]
    assert family is not None
    free_cos, free_sin = _free_rule(plan, i, c, c2, inv_c, delta90)
    if family.trivial:
        v, cos_d, sin_d = _violation(plan, i, c, c2, inv_c, kappa, family.straight, 0.0)
        ok = v <= _FEASIBLE_EPS
        return np.where(ok, cos_d, free_cos), np.where(ok, sin_d, free_sin), ok
    rows = (c, c2, inv_c, np.broadcast_to(kappa, np.shape(c)))
    grid, grid_b, grid_gamma = family.grid
    # The straight rest (s = 0) first: most targets need no collapse.
    found = _violation(plan, i, *rows, grid_b[0], grid_gamma[0])[0] <= _FEASIBLE_EPS
    s = np.zeros(np.shape(c))
    lo = np.zeros(np.shape(c))
    a = plan.lengths[i]
    search = np.flatnonzero(
        ~found
        & (c <= a + grid_b.max() + family.step + _FEASIBLE_EPS)
        & (c >= np.abs(a - grid_b).min() - family.step - _FEASIBLE_EPS)
    )
    if search.size:
        sub = tuple(x[search, None] for x in rows)
        v_grid = _violation(plan, i, *sub, grid_b[None, :], grid_gamma[None, :])[0]  # type: ignore[call-arg]
        passing = v_grid <= _FEASIBLE_EPS
        hit = passing.any(axis=1)
        first = np.argmax(passing, axis=1)
        found[search] = hit
        s[search] = grid[first]
        lo[search] = grid[np.maximum(first - 1, 0)]
        retry = search[~hit]
        if retry.size:
            found[retry], s[retry], lo[retry] = _search_fine(plan, i, tuple(x[retry] for x in rows))
    refine = np.flatnonzero(found & (s > 0.0))
    if refine.size:
        sub = tuple(x[refine] for x in rows)
        lo, hi = lo[refine], s[refine]
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            ok_mid = _violation_at(plan, i, sub, mid) <= _FEASIBLE_EPS
            hi = np.where(ok_mid, mid, hi)
            lo = np.where(ok_mid, lo, mid)
        s[refine] = hi
    b, gamma = _Family.planar(family.links, family.curl, s)
    v, cos_d, sin_d = _violation(plan, i, c, c2, inv_c, kappa, b, gamma)
    ok = (v <= _FEASIBLE_EPS) & found
    return np.where(ok, cos_d, free_cos), np.where(ok, sin_d, free_sin), ok & (s == 0.0)


def _search_fine(
    plan: _Plan, i: int, rows: tuple[Num, ...]
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Search for a feasible ``s`` for targets ``rows`` that no value of the family's grid
    passes: the first passing value of its finer grid; else golden-section searches about
    the :data:`_MINIMA` lowest local minima of the violation on the finer grid.

    The violation is not unimodal: with a 5° cone on the next joint the feasible range can
    be narrower than the grid step and sit in a dip the grid does not see, or beside a
    shallower minimum within one step.

    Returns, per target, whether a feasible ``s`` was found, the smallest found (or the
    best), and a value below it where the violation fails (for the bisection that follows).
    """
    family = plan.families[i]
    assert family is not None
    grid, grid_b, grid_gamma = family.fine
    count = grid.size
    v_grid = _violation(plan, i, *(x[:, None] for x in rows), grid_b[None], grid_gamma[None])[0]  # type: ignore[call-arg]
    passing = v_grid <= _FEASIBLE_EPS
    hit = passing.any(axis=1)
    first = np.argmax(passing, axis=1)
    found, s, lo = hit, grid[first], grid[np.maximum(first - 1, 0)]
    retry = np.flatnonzero(~hit)
    if retry.size:
        size = retry.size
        v_retry = v_grid[retry]
        padded = np.pad(v_retry, ((0, 0), (1, 1)), constant_values=np.inf)
        minima = np.where((v_retry <= padded[:, :-2]) & (v_retry <= padded[:, 2:]), v_retry, np.inf)
        k = min(_MINIMA, count)
        picks = np.argsort(minima, axis=1, kind="stable")[:, :k]
        owner = np.repeat(retry, k)
        at = picks.ravel()
        sub = tuple(x[owner] for x in rows)
        left = grid[np.maximum(at - 1, 0)]
        right = grid[np.minimum(at + 1, count - 1)]
        s_best = _golden_minimum(lambda x: _violation_at(plan, i, sub, x), left, right)
        ok = _violation_at(plan, i, sub, s_best) <= _FEASIBLE_EPS
        ok &= np.isfinite(minima[np.repeat(np.arange(size), k), at])
        # Per target: the smallest feasible s, else the search about the least minimum.
        rank = np.where(ok, s_best, np.inf).reshape(size, k)
        choice = np.where(ok.reshape(size, k).any(axis=1), np.argmin(rank, axis=1), 0)
        flat = np.arange(size) * k + choice
        found[retry], s[retry], lo[retry] = ok[flat], s_best[flat], left[flat]
    return found, s, lo


def _golden_minimum(f: Any, lo: FloatArray, hi: FloatArray) -> FloatArray:
    """Golden-section search for the minimum of ``f`` on ``[lo, hi]`` (arrays, per row)."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    x1 = hi - ratio * (hi - lo)
    x2 = lo + ratio * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(_GOLDEN_STEPS):
        left = f1 <= f2
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
        new_x1 = np.where(left, hi - ratio * (hi - lo), x2)
        new_x2 = np.where(left, x1, lo + ratio * (hi - lo))
        value = f(np.where(left, new_x1, new_x2))
        f1, f2 = np.where(left, value, f2), np.where(left, f1, value)
        x1, x2 = new_x1, new_x2
    return np.where(f1 <= f2, x1, x2)


def _cone_select(d: Vec, chat: Vec, cos_d: Num, sin_d: Num, w: Vec, k: Vec, phi: float) -> Vec:
    """Keep link directions ``d`` inside the cone of half-angle ``phi`` about ``k``.

    Outside it: the direction on the triangle's circle (angle ``δ`` about ``ĉ``) nearest
    the shortest-turn one that the cone allows; if the circle misses the cone, the point
    of the cone's edge nearest ``d``.
    """
    cos_phi, sin_phi = math.cos(phi), math.sin(phi)
    inside = vdot(k, d) >= cos_phi
    if np.all(inside):
        return d
    kc = vdot(k, chat)
    k_perp = vsub(k, vscale(chat, kc))
    kpn = _norm(k_perp)
    e1 = _where(kpn > 1e-12, vscale(k_perp, 1.0 / np.maximum(kpn, _SAFE)), w)
    e2 = vcross(chat, e1)
    radius = sin_d * kpn
    m = (cos_phi - cos_d * kc) / np.maximum(radius, _SAFE)
    on_circle = (radius > 1e-15) & (m <= 1.0)
    psi_max = np.arccos(np.clip(m, -1.0, 1.0))
    psi = np.clip(np.arctan2(vdot(w, e2), vdot(w, e1)), -psi_max, psi_max)
    ring = vcombine(np.cos(psi), e1, np.sin(psi), e2)
    d_ring = vcombine(cos_d, chat, sin_d, ring)
    # The part of d across k, taken off twice: once is not enough where d is nearly (anti)
    # parallel to k, and a side with a part along k would lengthen the edge direction.
    d_perp = vsub(d, vscale(k, vdot(d, k)))
    d_perp = vsub(d_perp, vscale(k, vdot(d_perp, k)))
    dpn = _norm(d_perp)
    side = _where(dpn > 1e-12, vscale(d_perp, 1.0 / np.maximum(dpn, _SAFE)), _perpendicular(k, w))
    d_edge = vcombine(cos_phi, k, sin_phi, side)
    return _where(inside, d, _where(on_circle, d_ring, d_edge))


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


def _solve_batch(problem: Problem, plan: _Plan) -> tuple[FloatArray, FloatArray]:
    """The pass for ``N`` targets at once (:func:`core.triangulation_batch.solve_batch`)."""
    from .triangulation_batch import solve_batch  # (it builds on this module's rules)

    return solve_batch(problem, plan)


# --------------------------------------------------------------------------- single target
def _limited_single(problem: Problem, plan: _Plan) -> tuple[list[list[float]], list[Vec]] | None:
    """Triangulation within limits for a :class:`Problem` of one target in plain floats
    (:func:`core.triangulation_limits_single.solve_one`), or ``None`` where the numpy
    reference (the batch pass and :func:`reach_within_limits`) must decide."""
    from .triangulation_limits_single import solve_one  # (it builds on this module's pass)

    options = problem.options
    return solve_one(
        plan,
        problem.chain,
        _floats(problem.targets[0].tolist()),
        problem.initial[0].tolist(),
        options,
        None if problem.poles is None else _floats(problem.poles[0].tolist()),
        problem.target_rotations is None or options.position_weight >= 1.0,
        problem.tolerance,
    )


def _solve_single(problem: Problem, plan: _Plan) -> tuple[FloatArray, FloatArray]:
    """:func:`_single_pass` for a :class:`Problem` of one target (no cone joints)."""
    options = problem.options
    pole = None if problem.poles is None else _floats(problem.poles[0].tolist())
    rots, pos = _single_pass(
        plan,
        problem.chain,
        _floats(problem.targets[0].tolist()),
        problem.initial[0].tolist(),
        options,
        pole,
        problem.target_rotations is None or options.position_weight >= 1.0,
    )
    return np.array([rots]), np.array([pos])


def solve_single(
    chain: Chain, target: Vec, pole: Vec | None, options: SolveOptions
) -> tuple[list[list[float]], list[Vec]] | None:
    """The pass for one target from the rest pose, in and out as plain floats, or ``None``
    where the numpy path must decide: on a limited chain, triangulation within the limits
    in floats (:func:`core.triangulation_limits_single.solve_one`, which declines where
    the numpy path searches); exact cone chains and the ``"even"`` distribution decline.

    The numbers are :func:`solve_triangulation`'s for the same (checked) problem without
    an orientation goal: ``target`` and ``pole`` as 3 floats in the base frame (``pole``
    may be ``None``). Returns the ``n`` local rotations (wxyz, 4 floats each) and the
    ``n + 1`` joint positions (3 floats each).
    """
    plan = _plan(chain)
    if _scale(chain) != 1.0:
        return None
    if plan.limited:
        from .triangulation_limits_single import solve_one

        tolerance = options.tolerance if options.tolerance is not None else 1e-6 * plan.reach
        return solve_one(plan, chain, target, None, options, pole, True, tolerance)
    if not plan.all_free or _spreads(plan, options):
        return None
    return _single_pass(plan, chain, target, None, options, pole, True)


def solve_single_points(
    chain: Chain, target: Vec, pole: Vec | None, options: SolveOptions
) -> list[Vec] | None:
    """The joint positions of :func:`solve_single`'s pass without its rotations, or ``None``
    when the chain has limits.

    For a caller that needs only where the joints go (a live solver that derives each
    joint's rotation from them, free joints aiming at the next joint). Two links are placed
    in closed form (:func:`_two_links`); longer chains by :func:`_points_pass`, which places
    the links as :func:`_single_pass` does but keeps only the turns applied so far instead
    of every joint's frame and local rotation, then the same bend-plane turn. The positions
    agree with :func:`solve_single`'s to rounding (magnified where the pass is
    ill-conditioned, as any change of rounding is: a nearly flat δb = 90° triangle, a link
    nearly along ``ĉ``).

    Args:
        chain: a chain without limits.
        target: effector goal, 3 floats in the base frame (checked and pulled in).
        pole: 3 floats in the base frame, or ``None``.
        options: settings (``delta_b_deg``, ``bend_plane``, ``pole_angle`` are read).

    Returns:
        The ``n + 1`` joint positions (3 floats each, base frame), root first.
    """
    plan = _plan(chain)
    if not plan.all_free or _spreads(plan, options) or _scale(chain) != 1.0:
        return None
    if plan.n == 2:
        pos = _two_links(plan, target, options, pole)
        if pos is not None:
            return pos
    else:
        pos = _points_pass(plan, target, options)
        if pos is not None:
            turn = _bend_turn(chain, plan, options, target, pole, pos, None, True)
            if turn is not None:
                _turn_points(turn, pos)
            return pos
    return _single_pass(plan, chain, target, None, options, pole, True)[1]


def _two_links(
    plan: _Plan, target: Vec, options: SolveOptions, pole: Vec | None
) -> list[Vec] | None:
    """:func:`solve_single_points` for two links in closed form.

    The root's link takes the free rule's angle ``δ`` to ``ĉ`` (it stays at rest when the
    target is at the root), the second link points from the joint at the target, and the
    bend-plane turn, a rotation about the root→effector axis ``x̂``, moves the joint ``p``
    straight to ``(p·x̂) x̂ + |p⊥| v̂``, with ``v⃗`` the pole's (or the carried rest bend's)
    part across ``x̂`` turned by the pole angle: the general pass's positions to rounding,
    without its loop, joint frames or trigonometry. ``None`` where the general pass must
    decide (the joint lands on the target: a second link under 1e-12 of the reach).
    """
    tx, ty, tz = target
    a, b = plan.lengths
    reach = plan.reach
    near = _NEAR * reach
    sqrt = math.sqrt
    c2 = tx * tx + ty * ty + tz * tz
    c = sqrt(c2)
    if c <= near:
        jx, jy, jz = plan.rest_dirs[0]
        jx, jy, jz = jx * a, jy * a, jz * a
    else:
        inv_c = 1.0 / c
        hx, hy, hz = tx * inv_c, ty * inv_c, tz * inv_c
        ux, uy, uz = plan.rest_dirs[0]
        rx, ry, rz = uy * hz - uz * hy, uz * hx - ux * hz, ux * hy - uy * hx
        rn = sqrt(rx * rx + ry * ry + rz * rz)
        if rn > _PARALLEL:
            ax, ay, az = rx / rn, ry / rn, rz / rn
        else:
            ax, ay, az = _perpendicular_float((hx, hy, hz), plan.rest_x0)
        sx, sy, sz = hy * az - hz * ay, hz * ax - hx * az, hx * ay - hy * ax
        cos_d, sin_d = _free_rule_float(plan, 0, c, c2, inv_c, options.delta_b_deg == 90.0)
        jx = a * (cos_d * hx + sin_d * sx)
        jy = a * (cos_d * hy + sin_d * sy)
        jz = a * (cos_d * hz + sin_d * sz)
    fx, fy, fz = tx - jx, ty - jy, tz - jz
    f = sqrt(fx * fx + fy * fy + fz * fz)
    if f <= near:
        return None
    f = b / f
    ex, ey, ez = jx + fx * f, jy + fy * f, jz + fz * f
    if pole is None:
        if options.bend_plane != "rest":
            return [(0.0, 0.0, 0.0), (jx, jy, jz), (ex, ey, ez)]
        pole = _carried_float(*plan.rest_start, target)
    length = sqrt(ex * ex + ey * ey + ez * ez)
    if length > _BEND_TINY * reach:
        kx, ky, kz = ex / length, ey / length, ez / length
        along = jx * kx + jy * ky + jz * kz
        bx, by, bz = jx - kx * along, jy - ky * along, jz - kz * along
        vx, vy, vz = pole
        dp = vx * kx + vy * ky + vz * kz
        vx, vy, vz = vx - kx * dp, vy - ky * dp, vz - kz * dp
        if options.pole_angle:
            half = 0.5 * options.pole_angle
            sh = math.sin(half)
            vx, vy, vz = qrotate((math.cos(half), kx * sh, ky * sh, kz * sh), (vx, vy, vz))
        bn = sqrt(bx * bx + by * by + bz * bz)
        vn = sqrt(vx * vx + vy * vy + vz * vz)
        if bn > _BEND_TINY * reach and vn > _BEND_TINY * reach:
            g = bn / vn
            jx, jy, jz = kx * along + vx * g, ky * along + vy * g, kz * along + vz * g
    return [(0.0, 0.0, 0.0), (jx, jy, jz), (ex, ey, ez)]


def _points_pass(plan: _Plan, target: Vec, options: SolveOptions) -> list[Vec] | None:
    """:func:`_single_pass`'s link placement from the rest pose, positions only.

    The current direction of link ``i`` is ``E · rest_dirs[i]``, ``E`` the product of the
    turns applied so far (a joint's world frame is ``E`` times its rest frame). Once the
    triangle has formed every later link points at the target whatever its direction, so
    ``E`` stops there. Returns ``None`` in the one case that would need ``E`` after that,
    a target at a joint beyond the triangle (links shorter than 1e-12 of the reach).
    """
    tx, ty, tz = target
    n = plan.n
    near = _NEAR * plan.reach
    delta90 = options.delta_b_deg == 90.0
    sqrt = math.sqrt
    ew, ex, ey, ez = _IDENTITY
    px = py = pz = 0.0
    dx = dy = dz = 0.0
    ax = ay = az = 0.0
    formed = False
    pos: list[Vec] = [(0.0, 0.0, 0.0)]
    for i in range(n):
        a = plan.lengths[i]
        cx, cy, cz = tx - px, ty - py, tz - pz
        c2 = cx * cx + cy * cy + cz * cz
        c = sqrt(c2)
        if formed:
            if c <= near:
                return None
            inv_c = 1.0 / c
            dx, dy, dz = cx * inv_c, cy * inv_c, cz * inv_c
            px, py, pz = px + dx * a, py + dy * a, pz + dz * a
            pos.append((px, py, pz))
            continue
        b = plan.remaining[i]
        if plan.straight[i]:
            ux, uy, uz = dx, dy, dz
        else:
            ux, uy, uz = qrotate((ew, ex, ey, ez), plan.rest_dirs[i])
        inv_c = 1.0 / (c if c > near else near)
        hx, hy, hz = cx * inv_c, cy * inv_c, cz * inv_c
        rx_, ry_, rz_ = uy * hz - uz * hy, uz * hx - ux * hz, ux * hy - uy * hx
        rn = sqrt(rx_ * rx_ + ry_ * ry_ + rz_ * rz_)
        if rn > _PARALLEL:
            inv = 1.0 / rn
            ax, ay, az = rx_ * inv, ry_ * inv, rz_ * inv
        else:
            ax, ay, az = _perpendicular_float((hx, hy, hz), (ax, ay, az) if i else plan.rest_x0)
        sx, sy, sz = hy * az - hz * ay, hz * ax - hx * az, hx * ay - hy * ax
        cos_d, sin_d = _free_rule_float(plan, i, c, c2, inv_c, delta90)
        formed = abs(a - b) <= c <= a + b and c > near
        if c <= near:
            dx, dy, dz = ux, uy, uz
        else:
            dx, dy, dz = cos_d * hx + sin_d * sx, cos_d * hy + sin_d * sy, cos_d * hz + sin_d * sz
        if not formed and i + 1 < n:  # E ← (shortest turn u → d) · E, as _single_pass turns
            turn = _turn_float((ux, uy, uz), (dx, dy, dz), (ax, ay, az))
            ew, ex, ey, ez = qmul(turn, (ew, ex, ey, ez))
        px, py, pz = px + dx * a, py + dy * a, pz + dz * a
        pos.append((px, py, pz))
    return pos


def _free_rule_float(
    plan: _Plan, i: int, c: float, c2: float, inv_c: float, delta90: bool
) -> tuple[float, float]:
    """:func:`_free_rule` for one target in floats (the same arithmetic)."""
    a, b = plan.lengths[i], plan.remaining[i]
    scale = inv_c * (0.5 / a)
    cos_d = (a * a - b * b + c2) * scale
    cos_d = -1.0 if cos_d < -1.0 else 1.0 if cos_d > 1.0 else cos_d
    heron = (c + b - a) * (a + b - c) * (a + c - b) * (a + b + c)
    sin_d = math.sqrt(heron if heron > 0.0 else 0.0) * scale
    if delta90 and b > a and c < b - a:
        r = plan.inner[i]
        guard = (a * a - r * r + c2) * inv_c * (0.5 / a)
        guard = 0.0 if guard > 0.0 else guard
        cos_d = -1.0 if guard < -1.0 else guard
        sin_d = math.sqrt(1.0 - cos_d * cos_d)
    return cos_d, sin_d


def _turn_float(u: Vec, d: Vec, axis: Vec) -> Quat:
    """Shortest rotation taking unit ``u`` to unit ``d`` (:func:`_shortest_turn` in floats);
    nearly opposite vectors turn over about ``u × d`` or, when that vanishes, ``axis``."""
    sqrt = math.sqrt
    ux, uy, uz = u
    dx, dy, dz = d
    dot = ux * dx + uy * dy + uz * dz
    ex, ey, ez = uy * dz - uz * dy, uz * dx - ux * dz, ux * dy - uy * dx
    if dot < _OPPOSITE:
        xn = sqrt(ex * ex + ey * ey + ez * ez)
        if xn > _PARALLEL:
            inv = 1.0 / max(xn, _SAFE)
            hint = (ex * inv, ey * inv, ez * inv)
        else:
            hint = axis
        return _turn_over(u, d, _perpendicular_float(u, hint), sqrt)
    ew = 1.0 + dot
    inv = 1.0 / sqrt(ew * ew + ex * ex + ey * ey + ez * ez)
    return ew * inv, ex * inv, ey * inv, ez * inv


def _single_pass(
    plan: _Plan,
    chain: Chain,
    target: Vec,
    init: list[list[float]] | None,
    options: SolveOptions,
    pole: Vec | None,
    orient: bool,
) -> tuple[list[list[float]], list[Vec]]:
    """The pass for one target on a chain without the paper's cone joints, in plain floats
    (a limited joint's rotation is projected onto its limits as it is placed).

    The same pass as :func:`_solve_batch` (and its inline bend-plane step), written out
    for speed: numpy's per-call overhead dominates for one small chain. ``init``: the start
    pose (``n`` rotations, 4 floats each; ``None``: the rest pose); ``orient``: orient the
    bend plane (not when an orientation goal is pursued).
    """
    tx, ty, tz = target
    if init is None:
        init = [[1.0, 0.0, 0.0, 0.0]] * plan.n  # (read only)
    rest_pose = [q == [1.0, 0.0, 0.0, 0.0] for q in init]
    n = plan.n
    near = _NEAR * plan.reach
    delta90 = options.delta_b_deg == 90.0
    ww, wx, wy, wz = 1.0, 0.0, 0.0, 0.0
    px = py = pz = 0.0
    dx = dy = dz = 0.0
    have_prev = False
    ax = ay = az = 0.0
    formed = False
    rots: list[list[float]] = []
    pos: list[Vec] = [(0.0, 0.0, 0.0)]
    sqrt = math.sqrt
    for i in range(n):
        a = plan.lengths[i]
        b = plan.remaining[i]
        # parent = world · rest_i; current = parent · initial_i
        rw, rx, ry, rz = plan.rests[i]
        if (rw, rx, ry, rz) != _IDENTITY:
            ww, wx, wy, wz = (
                ww * rw - wx * rx - wy * ry - wz * rz,
                ww * rx + wx * rw + wy * rz - wz * ry,
                ww * ry - wx * rz + wy * rw + wz * rx,
                ww * rz + wx * ry - wy * rx + wz * rw,
            )
        gw, gx, gy, gz = ww, wx, wy, wz
        qw, qx, qy, qz = init[i]
        if not rest_pose[i]:
            gw, gx, gy, gz = (
                ww * qw - wx * qx - wy * qy - wz * qz,
                ww * qx + wx * qw + wy * qz - wz * qy,
                ww * qy - wx * qz + wy * qw + wz * qx,
                ww * qz + wx * qy - wy * qx + wz * qw,
            )
        # u = current · unit offset (as _rotate)
        if plan.straight[i] and rest_pose[i]:
            ux, uy, uz = dx, dy, dz
        else:
            vx, vy, vz = plan.units[i]
            t1 = 2.0 * (gy * vz - gz * vy)
            t2 = 2.0 * (gz * vx - gx * vz)
            t3 = 2.0 * (gx * vy - gy * vx)
            ux = vx + t1 * gw + (gy * t3 - gz * t2)
            uy = vy + t2 * gw + (gz * t1 - gx * t3)
            uz = vz + t3 * gw + (gx * t2 - gy * t1)
        cx, cy, cz = tx - px, ty - py, tz - pz
        c2 = cx * cx + cy * cy + cz * cz
        c = sqrt(c2)
        inv_c = 1.0 / (c if c > near else near)
        hx, hy, hz = cx * inv_c, cy * inv_c, cz * inv_c
        rx_, ry_, rz_ = uy * hz - uz * hy, uz * hx - ux * hz, ux * hy - uy * hx
        rn = sqrt(rx_ * rx_ + ry_ * ry_ + rz_ * rz_)
        if rn > _PARALLEL or (formed and ux * hx + uy * hy + uz * hz > 0.0):
            # (links already pointing at the target after a full triangle need no axis)
            inv = 1.0 / (rn if rn > _SAFE else _SAFE)
            ax, ay, az = rx_ * inv, ry_ * inv, rz_ * inv
        else:
            if have_prev:
                hint: Vec = (ax, ay, az)
            else:
                hint = qrotate((gw, gx, gy, gz), _X)
            ax, ay, az = _perpendicular_float((hx, hy, hz), hint)
        have_prev = True
        sx, sy, sz = hy * az - hz * ay, hz * ax - hx * az, hx * ay - hy * ax
        if formed:
            cos_d, sin_d = 1.0, 0.0
        else:
            cos_d, sin_d = _free_rule_float(plan, i, c, c2, inv_c, delta90)
            formed = abs(a - b) <= c <= a + b and c > near
        if c <= near:
            dx, dy, dz = ux, uy, uz
        else:
            dx, dy, dz = cos_d * hx + sin_d * sx, cos_d * hy + sin_d * sy, cos_d * hz + sin_d * sz
        # shortest turn u → d, then world = turn · current, local = conj(parent) · world
        ew, ex, ey, ez = _turn_float((ux, uy, uz), (dx, dy, dz), (ax, ay, az))
        nw = ew * gw - ex * gx - ey * gy - ez * gz
        nx = ew * gx + ex * gw + ey * gz - ez * gy
        ny = ew * gy - ex * gz + ey * gw + ez * gx
        nz = ew * gz + ex * gy - ey * gx + ez * gw
        local = [
            ww * nw + wx * nx + wy * ny + wz * nz,
            ww * nx - wx * nw - wy * nz + wz * ny,
            ww * ny + wx * nz - wy * nw - wz * nx,
            ww * nz - wx * ny + wy * nx - wz * nw,
        ]
        if plan.kinds[i] == "project":  # (as the batch pass: the nearest allowed rotation)
            local = list(chain.limits[i].project_floats(tuple(local)))
            nw, nx, ny, nz = qmul((ww, wx, wy, wz), local)  # type: ignore[arg-type]
            dx, dy, dz = qrotate((nw, nx, ny, nz), plan.units[i])
        rots.append(local)
        px, py, pz = px + dx * a, py + dy * a, pz + dz * a
        pos.append((px, py, pz))
        ww, wx, wy, wz = nw, nx, ny, nz
    if orient:
        _orient_single(chain, plan, options, (tx, ty, tz), pole, rots, pos, init, all(rest_pose))
    for q in rots:
        if q[0] < 0.0:
            q[0], q[1], q[2], q[3] = -q[0], -q[1], -q[2], -q[3]
    return rots, pos


def _orient_single(
    chain: Chain,
    plan: _Plan,
    opts: SolveOptions,
    target: Vec,
    pole: Vec | None,
    rots: list[list[float]],
    pos: list[Vec],
    init: list[list[float]],
    rest_pose: bool,
) -> None:
    """:func:`_orient_batch` for one target in floats; updates ``rots`` and ``pos``."""
    turn = _bend_turn(chain, plan, opts, target, pole, pos, init, rest_pose)
    if turn is None:
        return
    root = (rots[0][0], rots[0][1], rots[0][2], rots[0][3])
    turned = qmul((turn[0], *mapply(plan.rest0_inverse, turn[1:])), root)
    limits0 = chain.limits[0]
    if not limits0.is_free:  # (as the batch: no turn where the root's limits refuse it)
        allowed = qmul_conj(limits0.project_floats(turned), turned)  # type: ignore[arg-type]
        if 2.0 * math.atan2(math.hypot(*allowed[1:]), abs(allowed[0])) > 1e-9:
            return
    rots[0] = list(turned)
    _turn_points(turn, pos)


def _turn_points(turn: Quat, pos: list[Vec]) -> None:
    """Turn the inner joints ``pos[1:-1]`` by ``turn`` (about the root→effector axis, which
    leaves the root and the effector where they are)."""
    m = qmatrix(turn)
    for j in range(1, len(pos) - 1):
        pos[j] = mapply(m, pos[j])


def _bend_turn(
    chain: Chain,
    plan: _Plan,
    opts: SolveOptions,
    target: Vec,
    pole: Vec | None,
    pos: list[Vec],
    init: list[list[float]] | None,
    rest_pose: bool,
) -> Quat | None:
    """The turn about the root→effector axis that :func:`_orient_batch` gives the pose with
    joints ``pos`` for one target, in floats (``None``: no turn)."""
    if pole is None:
        if opts.bend_plane != "rest":
            return None
        if rest_pose or init is None:
            start_axis, bend = plan.rest_start
        else:
            start: list[Quat] = [(q[0], q[1], q[2], q[3]) for q in init]
            axis_v, bend_v = _start_frame(chain, start)
            start_axis, bend = _floats(axis_v), _floats(bend_v)
        pole = _carried_float(start_axis, bend, target)
    reach = plan.reach
    n = plan.n
    sqrt = math.sqrt
    ex, ey, ez = pos[n]
    length = sqrt(ex * ex + ey * ey + ez * ez)
    if length > _BEND_TINY * reach:
        xx, xy, xz = ex / length, ey / length, ez / length
    else:
        xx = xy = xz = 0.0
    if n > 1:
        mx = my = mz = 0.0
        for j in range(1, n):
            mx, my, mz = mx + pos[j][0], my + pos[j][1], mz + pos[j][2]
        inv = 1.0 / (n - 1)
        mx, my, mz = mx * inv, my * inv, mz * inv
        dm = mx * xx + my * xy + mz * xz
        bx, by, bz = mx - xx * dm, my - xy * dm, mz - xz * dm
    else:
        bx = by = bz = 0.0
    dp = pole[0] * xx + pole[1] * xy + pole[2] * xz
    vx, vy, vz = pole[0] - xx * dp, pole[1] - xy * dp, pole[2] - xz * dp
    axis_len = sqrt(xx * xx + xy * xy + xz * xz)
    if axis_len > 0.0:
        kx, ky, kz = xx / axis_len, xy / axis_len, xz / axis_len
    else:
        kx = ky = kz = 0.0
    if opts.pole_angle:
        half = 0.5 * opts.pole_angle
        s = math.sin(half)
        vx, vy, vz = qrotate((math.cos(half), kx * s, ky * s, kz * s), (vx, vy, vz))
    if not (
        sqrt(bx * bx + by * by + bz * bz) > _BEND_TINY * reach
        and sqrt(vx * vx + vy * vy + vz * vz) > _BEND_TINY * reach
        and axis_len > 0.0
    ):
        return None
    cross = (by * vz - bz * vy) * xx + (bz * vx - bx * vz) * xy + (bx * vy - by * vx) * xz
    half = 0.5 * math.atan2(cross, bx * vx + by * vy + bz * vz)
    s = math.sin(half)
    return (math.cos(half), kx * s, ky * s, kz * s)


def _carried_float(a: Vec, v: Vec, t: Vec) -> Vec:
    """:func:`_carried` for one target, in floats."""
    a0, a1, a2 = a
    na = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    if na == 0.0:
        return v
    a0, a1, a2 = a0 / na, a1 / na, a2 / na
    t0, t1, t2 = t
    nt = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    if nt > 0.0:
        t0, t1, t2 = t0 / nt, t1 / nt, t2 / nt
    else:
        t0 = t1 = t2 = 0.0
    dot = a0 * t0 + a1 * t1 + a2 * t2
    if dot < -1.0 + 1e-12 and nt > 0.0:
        return v
    v0, v1, v2 = v
    b0, b1, b2 = t0 + a0, t1 + a1, t2 + a2
    coef = (b0 * v0 + b1 * v1 + b2 * v2) / (1.0 + dot)
    along = 2.0 * (a0 * v0 + a1 * v1 + a2 * v2)
    return v0 - b0 * coef + t0 * along, v1 - b1 * coef + t1 * along, v2 - b2 * coef + t2 * along


# --------------------------------------------------------------------------- entry point
_ONE_PASS = np.ones(1, dtype=np.int64)
_ONE_PASS.flags.writeable = False


def solve_triangulation(problem: Problem) -> Solution:
    """Triangulation IK (Müller-Cajar & Mukundan 2007, Algorithm 1), one pass per target.

    Args:
        problem: ``N`` targets on one chain; reads ``options.delta_b_deg``,
            ``options.bend_plane``, ``options.pole_angle``, the poles and the start pose.
            Orientation goals are not pursued (position only).

    Returns:
        A :class:`Solution` with ``iterations == 1`` for every target.
    """
    if problem.size == 0:
        n = problem.chain.n_joints
        return Solution(np.empty((0, n, 4)), np.empty((0, n + 1, 3)), np.empty(0, np.int64))
    scale = _scale(problem.chain)
    if scale != 1.0:
        return _solve_scaled(problem, scale)
    plan = _plan(problem.chain)
    if plan.all_free and _spreads(plan, problem.options):
        # The spread, finished by FABRIK's rounds where it misses (a rest pose bent out of
        # one plane or with offset links leaves it up to ~1e-3 × reach short): FABRIK from
        # its spread seed, which it returns unchanged where that reaches.
        from .fabrik import solve_fabrik  # (FABRIK builds on this module)

        return solve_fabrik(problem)
    if problem.size == 1 and plan.all_free:
        rotations, positions = _solve_single(problem, plan)
    elif problem.size == 1 and plan.limited and (one := _limited_single(problem, plan)):
        rotations, positions = np.array([one[0]]), np.array([one[1]])
    else:
        rotations, positions = _solve_batch(problem, plan)
        if plan.limited:
            rotations, positions = reach_within_limits(problem, rotations, positions)
    iterations = _ONE_PASS if problem.size == 1 else np.ones(problem.size, dtype=np.int64)
    return Solution(rotations, positions, iterations)


#: Chains whose reach lies outside this range are solved scaled to a reach of 1: squares
#: and Heron's product of four lengths would overflow (or underflow) in chain units.
_SCALE_RANGE = (1e-60, 1e60)
_SCALED: weakref.WeakKeyDictionary[Chain, Chain] = weakref.WeakKeyDictionary()


def _scale(chain: Chain) -> float:
    """1, or the chain's reach when it is too large or small to solve in its own units."""
    reach = chain.reach
    return 1.0 if _SCALE_RANGE[0] <= reach <= _SCALE_RANGE[1] else reach


def _solve_scaled(problem: Problem, scale: float) -> Solution:
    """The pass on the chain, targets and poles divided by ``scale``; positions scaled back
    (rotations do not depend on the unit of length)."""
    chain = problem.chain
    small = _SCALED.get(chain)
    if small is None:
        small = Chain(chain.offsets / scale, chain.rest_rotations, chain.limits, chain.names)
        _SCALED[chain] = small
    scaled = replace(
        problem,
        chain=small,
        targets=problem.targets / scale,
        poles=None if problem.poles is None else problem.poles / scale,
        tolerance=problem.tolerance / scale,
    )
    sol = solve_triangulation(scaled)
    return Solution(sol.rotations, sol.positions * scale, sol.iterations)


__all__ = ["solve_single", "solve_single_points", "solve_triangulation"]
