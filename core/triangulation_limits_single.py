# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation within limits for one target, in plain floats (knees, elbows, limbs).

The single-target fast path of :func:`core.triangulation_limits.reach_within_limits` (the
numpy reference, which tests pin this module to) for chains whose joints are free or
limited other than by the paper's cones (every limited joint is projected by the pass):

1. the triangulation pass with every limited joint projected onto its limits
   (:func:`core.triangulation_single._single_pass`, the float twin of the batch pass) —
   or, with ``options.distribution == "even"`` on three or more links, the even spread
   aimed within the limits (:func:`_pass_pose`: FABRIK's seed,
   :func:`core.fabrik_single.fabrik_floats` with no rounds; the numpy paths then solve
   each target on this path, :func:`spreads_within_limits`);
2. when the last joint is a hinge, the last two joints placed in closed form from the
   pass's pose, the bend facing the pole or the rest pose's side (:func:`_hinge_last`, the
   float twin of :func:`core.triangulation_limits._hinge_last`; :func:`_want`, of
   :func:`core.bend_plane.wanted_bends`): the answer wherever it reaches, else the pass's
   pose where that reaches (on a two-bone limb the closed form reads nothing of the pass
   where the wanted side decides its spin: it comes first, and the pass is made only where
   it is read or the closed form misses);
3. on a shoulder and elbow (:mod:`core.limb_closest`: a limited ball joint with a free
   twist, then a hinge) whose limits keep the target's direction out of reach, the closest
   admissible pose in closed form, unless the pass is closer by more than the tolerance
   (the float twin of the reference's same step);
4. on a two-bone limb, a target nearer the root than its hinge folds or farther than it
   stretches (a hinge whose range stops short of straight): the hinge at its shortest or
   longest, aimed at the target, where it gets there (as close as any pose);
5. where the target lies beyond the chain's length, the hinge at its longest allowed
   extension aimed at the target, kept where it comes closer than the pass, else the pass's
   pose refined toward the target (:func:`core.triangulation_refine_single.refine_far`);
6. where the target lies within it and neither reaches, the search: the candidates refined
   and chosen, with the restarts (:func:`core.triangulation_refine_single.search`, the float
   twin of :mod:`core.triangulation_refine`).

Where the joint before the hinge refuses the spin the closed form asks for, the allowed
spin nearest it is found as the reference finds it (:func:`_allowed_spin`: the nearest
allowed of the same samples, then the same edge between two of them). Chains with the
paper's cone joints, and a target beyond the chain's length whose hinge cannot be placed
at all (the reference then weighs the pass's pose against itself, a tie rounding decides)
return ``None``: the caller runs the numpy reference.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from . import fabrik_single, triangulation_single
from .chain import Chain
from .components import Quat, Vec, qbetween, qconj, qmul, qrotate, qunrotate, vcross, vdot
from .kinematics import chain_floats, forward_kinematics_floats
from .limb_closest import closest_floats
from .limits import JointLimits
from .options import SolveOptions
from .problem import Problem
from .regula_falsi import illinois_one
from .rotations import FloatArray
from .triangulation_limits import (
    SPIN_FALSI,
    SPIN_STEPS,
    SPIN_WIDTH,
    SPINS,
    _hinge_extents,
    _hinge_terms,
    _rest_lean,
    closed_form,
)
from .triangulation_plan import _floats, _Plan, _plan, _scale, _spreads, _start_frame
from .triangulation_refine_single import Refined, _distance, refine_far, search, side_pose

Pose = tuple[list[list[float]], list[Vec]]


@dataclass(frozen=True)
class _Hinge:
    """A last hinge's facts as floats (:func:`core.triangulation_limits._hinge_terms`,
    :func:`~core.triangulation_limits._hinge_extents`, and for
    :func:`~core.triangulation_limits._bend_about_hinge`: the link before it, the hinge's
    axis in that joint's frame, whether the rest bends about it, the rest bend)."""

    axis: Vec
    lo: float
    hi: float
    a: float
    b: float
    c: float
    longest: float
    shortest: float
    link: Vec
    rest_axis: Vec
    bent: bool
    rest_bend: float
    lean: float
    #: Computed once from the above, with the operations the closed form used on every call
    #: (so the same bits): ``axis`` over its length, ``hypot(b, c)``, ``atan2(c, b)``, the
    #: two links' squared lengths and the last one's length.
    unit: Vec
    amp: float
    base: float
    squares: tuple[float, float]
    last_length: float
    #: The last link turned by the hinge angle ``φ``, in the frame of the joint before it:
    #: ``d(φ) = A + B cos φ + C sin φ`` (Rodrigues' formula about ``unit``, then the
    #: hinge's rest rotation), as ``(A, B, C)``.
    turned: tuple[Vec, Vec, Vec]
    #: :func:`_bend`'s two arguments of ``atan2`` as such sums: the components of ``A``,
    #: ``B`` and ``C`` along ``rest_axis × link`` and along ``link``.
    bend_terms: tuple[float, float, float, float, float, float]


@functools.lru_cache(maxsize=64)
def _hinge_facts(chain: Chain) -> _Hinge | None:
    """:class:`_Hinge` of ``chain``'s last joint; ``None`` where the reference places no
    hinge in closed form (no last hinge, or ``B, C`` both below 1e-12)."""
    if chain.n_joints < 2 or chain.limits[-1].kind != "hinge":
        return None
    h, (lo, hi), a_, b_, c_ = _hinge_terms(chain)
    if math.hypot(b_, c_) < 1e-12:
        return None
    extents = _hinge_extents(chain)
    assert extents is not None
    shortest, longest = extents
    rests, offsets = chain_floats(chain)
    axis = (float(h[0]), float(h[1]), float(h[2]))
    n = math.sqrt(vdot(offsets[-2], offsets[-2]))
    link = (offsets[-2][0] / n, offsets[-2][1] / n, offsets[-2][2] / n)
    rest_axis = qrotate(rests[-1], axis)
    rest = qrotate(rests[-1], offsets[-1])
    bent = abs(vdot(vcross(link, rest), rest_axis)) / math.sqrt(vdot(rest, rest)) > 1e-9
    norm = math.sqrt(vdot(axis, axis))
    unit = (axis[0] / norm, axis[1] / norm, axis[2] / norm)
    square_j, square_h = vdot(offsets[-2], offsets[-2]), vdot(offsets[-1], offsets[-1])
    o = offsets[-1]
    along = vdot(unit, o)
    fixed = (unit[0] * along, unit[1] * along, unit[2] * along)
    turned = (
        qrotate(rests[-1], fixed),
        qrotate(rests[-1], (o[0] - fixed[0], o[1] - fixed[1], o[2] - fixed[2])),
        qrotate(rests[-1], vcross(unit, o)),
    )
    across = vcross(rest_axis, link)
    facts = _Hinge(
        axis,
        float(lo),
        float(hi),
        a_,
        b_,
        c_,
        longest,
        shortest,
        link,
        rest_axis,
        bent,
        0.0,
        0.0,
        unit,
        math.hypot(b_, c_),
        math.atan2(c_, b_),
        (square_j, square_h),
        math.sqrt(square_h),
        turned,
        (*(vdot(t, across) for t in turned), *(vdot(t, link) for t in turned)),
    )
    return replace(facts, rest_bend=_bend(facts, 1.0, 0.0), lean=_rest_lean(chain))


def _bend(f: _Hinge, cos_phi: float, sin_phi: float) -> float:
    """:func:`core.triangulation_limits._bend_about_hinge` at one hinge angle ``φ``
    (given as its cosine and sine): ``atan2((link × d)·axis, d·link)`` of the turned link
    ``d(φ)``, each argument a sum of ``1, cos φ, sin φ`` (:attr:`_Hinge.bend_terms`; ``d``
    need not be of unit length for the angle)."""
    if not f.bent:
        return 0.0
    k0, k1, k2, l0, l1, l2 = f.bend_terms
    return math.atan2(k0 + k1 * cos_phi + k2 * sin_phi, l0 + l1 * cos_phi + l2 * sin_phi)


def _axis_angle(axis: Vec, phi: float) -> Quat:
    """:func:`core.rotations.from_axis_angle` for a non-zero axis."""
    n = math.sqrt(vdot(axis, axis))
    s = math.sin(0.5 * phi)
    return math.cos(0.5 * phi), s * (axis[0] / n), s * (axis[1] / n), s * (axis[2] / n)


def _turn(unit: Vec, phi: float) -> Quat:
    """:func:`_axis_angle` about an axis already divided by its length (the same bits)."""
    s = math.sin(0.5 * phi)
    return math.cos(0.5 * phi), s * unit[0], s * unit[1], s * unit[2]


_IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)


def _hinge_last(
    chain: Chain,
    f: _Hinge,
    rots: list[list[float]] | list[Quat] | None,
    target: Vec,
    toward: Vec | None,
    tolerance: float,
) -> list[Quat] | None:
    """:func:`core.triangulation_limits._hinge_last` for one pose ``rots`` (not changed):
    the pose with its last two joints placed in closed form, or ``rots`` itself (as tuples)
    where no placement is allowed. On a two-joint chain ``rots`` may be ``None`` (the pass
    not made yet: nothing of it is read where the wanted side ``toward`` decides the spin);
    ``None`` is returned where it would be read, ``[]`` where no placement is allowed
    whatever it is (the call with the pass's pose then gives that pose back)."""
    n = chain.n_joints
    j = n - 2
    lim_j = chain.limits[j]
    rests, offsets = chain_floats(chain)
    o_j = offsets[j]
    if rots is None:
        assert n == 2  # (the joints before the last two are the pass's)
    pose: list[Quat] = [_IDENTITY] * n if rots is None else [(q[0], q[1], q[2], q[3]) for q in rots]
    if j == 0:  # (the root: at the origin, its parent frame the rest)
        parent, p = rests[0], (0.0, 0.0, 0.0)
    else:
        pos, world = forward_kinematics_floats(chain, pose)
        parent, p = qmul(world[j - 1], rests[j]), pos[j]
    cv = (target[0] - p[0], target[1] - p[1], target[2] - p[2])
    dist = math.sqrt(vdot(cv, cv))
    square_j, square_h = f.squares
    need = 0.5 * (dist * dist - square_j - square_h) - f.a
    amp = f.amp
    ratio = need / amp
    if not abs(ratio) <= 1.0 + dist * tolerance / amp:
        return [] if rots is None else pose
    slack = max(1e-12, tolerance / f.last_length)
    base = f.base
    spread = math.acos(-1.0 if ratio < -1.0 else 1.0 if ratio > 1.0 else ratio)
    inv = 1.0 / max(dist, 1e-300)
    c = qunrotate(parent, (cv[0] * inv, cv[1] * inv, cv[2] * inv))
    # The side the bend should face, across ĉ: toward the wanted side, else the pass's.
    side = None if rots is None else qrotate(pose[j], o_j)
    if toward is not None:
        w = qunrotate(parent, (toward[0] - p[0], toward[1] - p[1], toward[2] - p[2]))
        along = vdot(w, c)
        w = (w[0] - along * c[0], w[1] - along * c[1], w[2] - along * c[2])
        if math.sqrt(vdot(w, w)) > 1e-9 * chain.reach:
            side = w
    if side is None:
        return None
    along = vdot(side, c)
    side = (side[0] - along * c[0], side[1] - along * c[1], side[2] - along * c[2])
    best_cost = math.inf
    for sign in (1.0, -1.0):
        phi = (base + sign * spread + math.pi) % (2.0 * math.pi) - math.pi
        if not (f.lo - slack <= phi <= f.hi + slack):
            continue
        cos_phi, sin_phi = math.cos(phi), math.sin(phi)
        bend = _bend(f, cos_phi, sin_phi)
        held = min(max(phi, f.lo), f.hi)
        qh = _turn(f.unit, held)  # (about the hinge's axis, within its range: admissible)
        if held != phi:
            cos_phi, sin_phi = math.cos(held), math.sin(held)
        (ax, ay, az), (bx, by, bz), (tx, ty, tz) = f.turned  # the last link, d(held)
        aim = qbetween(
            (
                o_j[0] + ax + bx * cos_phi + tx * sin_phi,
                o_j[1] + ay + by * cos_phi + ty * sin_phi,
                o_j[2] + az + bz * cos_phi + tz * sin_phi,
            ),
            c,
        )
        bend_sign = (
            (1.0 if bend > 0.0 else -1.0) if bend != 0.0 else (1.0 if f.rest_bend >= 0.0 else -1.0)
        )
        # The spin about ĉ that faces the bend toward the side (_spin_toward).
        hx, hy, hz = vcross(c, qrotate(aim, f.rest_axis))
        u = (bend_sign * hx, bend_sign * hy, bend_sign * hz)
        if f.lean:
            cl, sl = math.cos(f.lean), math.sin(f.lean)
            cx, cy, cz = vcross(c, u)
            u = (cl * u[0] + sl * cx, cl * u[1] + sl * cy, cl * u[2] + sl * cz)
        psi = math.atan2(vdot(vcross(c, u), side), vdot(u, side))
        turned = qmul((0.0, c[0], c[1], c[2]), aim)
        pick = _spin(aim, turned, psi)
        if not lim_j.allows_floats(pick, 1e-12):
            if lim_j.kind == "ball":
                allowed = _allowed_spin(lim_j, aim, turned, psi)
            else:  # (a hinge's one sample met is ψ = 0: _spin_toward)
                allowed = aim if lim_j.allows_floats(aim, 1e-12) else None
            if allowed is None:
                continue
            pick = allowed
        chosen = abs(phi) + (4.0 * math.pi if f.rest_bend * bend < 0.0 else 0.0)
        if chosen < best_cost:
            pose[j] = lim_j.project_floats(pick)
            pose[-1] = qh
            best_cost = chosen
    return [] if rots is None and best_cost == math.inf else pose


def _spin(aim: Quat, turned: Quat, psi: float) -> Quat:
    """:func:`core.triangulation_limits.spin_rotation` for one spin."""
    c, s = math.cos(0.5 * psi), math.sin(0.5 * psi)
    return (
        c * aim[0] + s * turned[0],
        c * aim[1] + s * turned[1],
        c * aim[2] + s * turned[2],
        c * aim[3] + s * turned[3],
    )


#: :data:`core.triangulation_limits.SPINS`' samples, as the reference spaces them.
_SAMPLES = np.linspace(-np.pi, np.pi, SPINS, endpoint=False).tolist()
#: The cosine and sine of half of each sample (:func:`_spin`'s at that spin, the same bits).
_HALVES = [(math.cos(0.5 * psi), math.sin(0.5 * psi)) for psi in _SAMPLES]
#: Slack on :meth:`core.swing_region.SwingRegion.outside_by_one` before it rules out a
#: sample: far above the rounding of the swing and the membership test's 1e-12.
_OUTSIDE_SLACK = 1e-9


def _allowed_spin(lim: JointLimits, aim: Quat, turned: Quat, psi: float) -> Quat | None:
    """:func:`core.triangulation_limits._spin_toward` where ``lim`` refuses the spin
    ``psi``: the allowed sample nearest ``psi``, found walking outward from it (the
    reference tests every sample; the walk passes over the samples a refused one's swing
    rules out, :func:`_ruled_out`), then the same edge toward ``psi`` (over at most the
    samples' spacing, :func:`core.triangulation_limits.spin_edge` in floats); ``None``
    where no sample is allowed."""
    samples = _SAMPLES
    count = len(samples)
    pi, tau = math.pi, 2.0 * math.pi
    step = tau / count
    down = int((psi + pi) // step) % count
    up = (down + 1) % count
    test = _spin_test(lim, aim, turned, step)
    walked = 0  # samples tested or ruled out, of both sides
    while walked < count:
        # the nearer of the two sides' next samples (down on a tie), by its gap from psi
        below = (psi - samples[down] + pi) % tau - pi
        above = (psi - samples[up] + pi) % tau - pi
        downward = abs(below) <= abs(above)
        k, width = (down, below) if downward else (up, above)
        passed = test(k)
        if passed < 0:
            break
        walked += passed
        if downward:
            down = (down - passed) % count
        else:
            up = (up + passed) % count
    else:
        return None
    return spin_edge(lim, aim, turned, samples[k], math.copysign(min(abs(width), step), width))


def spin_edge(lim: JointLimits, aim: Quat, turned: Quat, start: float, width: float) -> Quat:
    """:func:`core.triangulation_limits.spin_edge` in floats, its rotation: the spin at the
    edge of what ``lim`` allows from the allowed spin ``start`` toward ``start + width``."""
    if _swing_alone(lim):
        region = lim.swing_region
        a0, a1, a2, a3 = aim
        t0, t1, t2, t3 = turned
        sqrt, cos, sin = math.sqrt, math.cos, math.sin

        def beyond(u: float) -> float:
            # lim.beyond_floats(_spin(aim, turned, start + (1 − u)·width)) written out: the
            # same operations (a free twist adds nothing to the swing's margin).
            half = 0.5 * (start + (1.0 - u) * width)
            c, s = cos(half), sin(half)
            w, x, y, z = c * a0 + s * t0, c * a1 + s * t1, c * a2 + s * t2, c * a3 + s * t3
            if w < 0.0:
                w, x, y, z = -w, -x, -y, -z
            tn = sqrt(w * w + y * y)
            tw, ty = (w / tn, y / tn) if tn > 0.0 else (1.0, 0.0)
            return region.beyond_one(x * tw + z * ty, z * tw - x * ty)

    else:

        def beyond(u: float) -> float:
            return lim.beyond_floats(_spin(aim, turned, start + (1.0 - u) * width))

    u = illinois_one(
        beyond, 0.0, 1.0, beyond(0.0), beyond(1.0), SPIN_STEPS, SPIN_WIDTH, "hi", SPIN_FALSI
    )
    return _spin(aim, turned, start + (1.0 - u) * width)


def _swing_alone(lim: JointLimits) -> bool:
    """A ball joint with a free twist: what it allows is decided by its swing alone."""
    return lim.kind == "ball" and not lim.lock[1] and lim.ranges[1] is None


def _spin_test(lim: JointLimits, aim: Quat, turned: Quat, step: float) -> Callable[[int], int]:
    """The walk's test of :func:`_allowed_spin` for the spin ``ψ`` of ``aim`` about the
    target direction (:func:`_spin`) at sample ``k`` of :data:`_SAMPLES`: ``-1`` where
    ``lim`` allows it (to 1e-12, as :meth:`~core.limits.JointLimits.allows_floats`), else
    how many samples ``step`` apart from it, it included, are refused. A ball joint with a
    free twist is tested on its swing alone (the split of ``allows_floats``, so the same
    answers), and rules out the samples nearer than :func:`_ruled_out`; other joints rule
    out only the spin itself."""
    if not _swing_alone(lim):

        def allows(k: int) -> int:
            return -1 if lim.allows_floats(_spin(aim, turned, _SAMPLES[k]), 1e-12) else 1

        return allows
    region = lim.swing_region
    contains, outside_by = region.contains_one, region.outside_by_one
    # how fast the spin turns the bone's axis d = aim·Y: |ĉ × d|, ĉ = turned·aim*
    c = qmul(turned, qconj(aim))[1:]
    turns = vcross(c, qrotate(aim, (0.0, 1.0, 0.0)))
    speed = math.sqrt(vdot(turns, turns)) * (1.0 + 1e-9) + 1e-12
    halves, sqrt = _HALVES, math.sqrt
    a0, a1, a2, a3 = aim
    t0, t1, t2, t3 = turned

    def swing_test(k: int) -> int:
        # _swing_components_floats(_spin(aim, turned, _SAMPLES[k])) written out
        c, s = halves[k]
        w, x, y, z = c * a0 + s * t0, c * a1 + s * t1, c * a2 + s * t2, c * a3 + s * t3
        tn = sqrt(w * w + y * y)
        tw, ty = (w / tn, y / tn) if tn > 0.0 else (1.0, 0.0)
        sx, sz = x * tw + z * ty, z * tw - x * ty
        if contains(sx, sz, 1e-12):
            return -1
        return 1 + _ruled_out(outside_by(sx, sz), tn, speed, step)

    return swing_test


def _ruled_out(outside: float, w: float, speed: float, step: float) -> int:
    """How many spins ``step`` apart past a refused one the swing region refuses too: its
    swing lies ``outside`` beyond it (a lower bound,
    :meth:`~core.swing_region.SwingRegion.outside_by_one`, less :data:`_OUTSIDE_SLACK`),
    its ``w`` is ``w`` (the cosine of half its bend), and a spin by ``ρ`` turns the bone's
    axis by ``speed·ρ``. Turning the axis by ``θ`` moves the swing's ``w`` by at most
    ``θ/2`` and its ``x, z`` by at most ``θ/(2w)``, so they stay outside while
    ``speed·ρ < 2δw/(1 + δ)``."""
    delta = outside - _OUTSIDE_SLACK
    if not delta > 0.0:
        return 0
    return int(2.0 * delta * w / ((1.0 + delta) * speed * step))


def _positive(pose: list[Quat]) -> list[list[float]]:
    return [list(q) if q[0] >= 0.0 else [-q[0], -q[1], -q[2], -q[3]] for q in pose]


def _want(
    plan: _Plan,
    chain: Chain,
    target: Vec,
    init: list[list[float]] | None,
    options: SolveOptions,
    pole: Vec | None,
) -> Vec | None:
    """:func:`core.bend_plane.wanted_bends` for one target: the direction across the
    root→target line the bend should face (the pole's, else the ``"rest"`` rule's carried
    start bend), or ``None`` for ``"minimal"`` without a pole."""
    if pole is None:
        if options.bend_plane != "rest":
            return None
        if init is None or all(q == [1.0, 0.0, 0.0, 0.0] for q in init):
            start_axis, bend = plan.rest_start
        else:
            axis_v, bend_v = _start_frame(chain, [(q[0], q[1], q[2], q[3]) for q in init])
            start_axis, bend = _floats(axis_v), _floats(bend_v)
        pole = triangulation_single._carried_float(start_axis, bend, target)
    length = math.sqrt(vdot(target, target))
    if length > 1e-9 * plan.reach:
        axis = (target[0] / length, target[1] / length, target[2] / length)
    else:
        axis = (0.0, 0.0, 0.0)
    along = vdot(pole, axis)
    want = (pole[0] - along * axis[0], pole[1] - along * axis[1], pole[2] - along * axis[2])
    if options.pole_angle and length > 1e-9 * plan.reach:
        want = qrotate(_axis_angle(axis, options.pole_angle), want)
    return want


def _closed_form(
    plan: _Plan,
    chain: Chain,
    target: Vec,
    init: list[list[float]] | None,
    options: SolveOptions,
    pole: Vec | None,
    tolerance: float,
) -> tuple[Pose, bool, Vec | None] | None:
    """The first steps of :func:`core.triangulation_limits.reach_within_limits` for one
    target: the pass's pose, replaced by the pose with a last hinge placed in closed form
    where that reaches; whether it meets the target; the wanted bend (:func:`_want`).
    ``None`` where that is decided by the numpy path (cone joints)."""
    if "cone" in plan.kinds:
        return None
    facts = _hinge_facts(chain)
    if facts is None:
        rots, pos = _pass_pose(plan, chain, target, init, options, pole)
        return (rots, pos), math.dist(pos[-1], target) <= tolerance, None
    want = _want(plan, chain, target, init, options, pole)
    toward = (
        None if want is None else (target[0] + want[0], target[1] + want[1], target[2] + want[2])
    )
    placed = None
    if plan.n == 2:  # a two-bone limb: the closed form first, the pass where it is read
        placed = _hinge_last(chain, facts, None, target, toward, tolerance)
        if placed:
            at = forward_kinematics_floats(chain, placed)[0]
            if math.dist(at[-1], target) <= tolerance:
                return (_positive(placed), at), True, want
    rots, pos = _pass_pose(plan, chain, target, init, options, pole)
    met = math.dist(pos[-1], target) <= tolerance
    if placed:  # (the limb's placement missed: from the pass's pose it is placed alike)
        return (rots, pos), met, want
    if placed is None:
        placed = _hinge_last(chain, facts, rots, target, toward, tolerance)
        assert placed is not None  # (given the pass)
    else:  # (none allowed: what the call with the pass's pose gives)
        placed = [(q[0], q[1], q[2], q[3]) for q in rots]
    at = forward_kinematics_floats(chain, placed)[0]
    if math.dist(at[-1], target) <= tolerance:
        return (_positive(placed), at), True, want
    return (rots, pos), met, want


def spreads_within_limits(plan: _Plan, options: SolveOptions) -> bool:
    """True where a limited chain's pass is the even spread aimed within the limits
    (``options.distribution == "even"``, three or more links, no cone joints): every
    target is then solved on this module's float path, batches too."""
    return _spreads(plan, options) and plan.limited and "cone" not in plan.kinds


def _pass_pose(
    plan: _Plan,
    chain: Chain,
    target: Vec,
    init: list[list[float]] | None,
    options: SolveOptions,
    pole: Vec | None,
) -> tuple[list[list[float]], list[Vec]]:
    """The pose the steps after the pass start from: the pass
    (:func:`core.triangulation_single._single_pass`), or where :func:`_spreads` the even
    spread aimed within the limits with its bend plane turned as FABRIK turns it
    (:func:`core.fabrik_single.fabrik_floats` with no rounds: every joint turned toward the
    spread's next joint and kept within its limits, a hinge's parent twisting so it can
    bend). The spread shares the bend between the joints as on a chain without limits;
    the pass bends the root first and leaves the rest straight, which limits refuse on
    most targets (then the search runs, ~0.3–1 ms)."""
    if not _spreads(plan, options):
        return triangulation_single._single_pass(plan, chain, target, init, options, pole)
    start = None
    if init is not None and any(q != [1.0, 0.0, 0.0, 0.0] for q in init):  # (as FABRIK)
        start = [(q[0], q[1], q[2], q[3]) for q in init]
    tolerance = 0.0  # (no rounds: the tolerance only decides whether to run them)
    rots, pos, _ = fabrik_single.fabrik_floats(
        chain, target, pole, options, tolerance, start, rounds=0
    )
    assert rots is not None  # (points_only is not asked)
    return [list(q) for q in rots], pos


def solve_one(
    chain: Chain,
    target: Vec,
    init: list[list[float]] | None,
    options: SolveOptions,
    pole: Vec | None,
    tolerance: float,
) -> Pose | None:
    """Triangulation within limits for one target (module docstring): the ``n`` local
    rotations (wxyz, ``w ≥ 0`` where the closed form or the search placed them; the pass's
    own where it reaches or nothing comes closer) and ``n + 1`` joint positions, or ``None``
    where the numpy reference decides (cone joints; a far target whose hinge cannot be
    placed). ``init``, ``pole`` as for the pass
    (:func:`core.triangulation_single._single_pass`); ``tolerance`` is the problem's.

    The answers past the closed form are memoised on their exact inputs (the last
    :data:`_KEPT`): a method seeded from this answer asks it again as its fallback where it
    misses (:mod:`core.triangulation_fallback`), and the search of an unreachable target is
    the costliest part of a solve. A start pose of every joint at rest bit for bit is the
    same input as none (both start from rest, with the same numbers): a seeded method
    passes one, its fallback none."""
    key = None if init is None or all(map(_at_rest, init)) else tuple(tuple(q) for q in init)
    inputs = (chain, target, key, options, pole, tolerance)
    kept = _searched.get(inputs, _UNSEEN)
    if kept is not _UNSEEN:
        if kept is None:
            return None
        rots, points = cast("tuple[tuple[Quat, ...], tuple[Vec, ...]]", kept)
        return [list(q) for q in rots], list(points)
    plan = _plan(chain)
    start = None if key is None else init
    out = _closed_form(plan, chain, target, start, options, pole, tolerance)
    if out is not None and out[1]:
        return out[0]  # (met: made again in microseconds where asked again)
    answer = None if out is None else _search(plan, chain, target, start, tolerance, out)
    if len(_searched) >= _KEPT:
        del _searched[next(iter(_searched))]
    _searched[inputs] = (
        None if answer is None else (tuple(map(tuple, answer[0])), tuple(map(tuple, answer[1])))
    )
    return answer


def _at_rest(q: list[float]) -> bool:
    """Whether a local rotation is ``(1, 0, 0, 0)`` bit for bit (``-0.0`` is not ``0.0``)."""
    return q == [1.0, 0.0, 0.0, 0.0] and all(math.copysign(1.0, c) > 0.0 for c in q)


#: How many of :func:`solve_one`'s answers past the closed form :data:`_searched` keeps.
_KEPT = 32
#: :func:`solve_one`'s answers past the closed form (as tuples), by their inputs, oldest
#: first.
_searched: dict[tuple[Any, ...], tuple[tuple[tuple[float, ...], ...], tuple[Vec, ...]] | None] = {}
_UNSEEN = object()


def _search(
    plan: _Plan,
    chain: Chain,
    target: Vec,
    init: list[list[float]] | None,
    tolerance: float,
    out: tuple[Pose, bool, Vec | None],
) -> Pose | None:
    """:func:`solve_one` past a closed form ``out`` (:func:`_closed_form`) that misses."""
    (rots, pos), _, want = out
    n = plan.n
    start: list[Quat] = (
        [(1.0, 0.0, 0.0, 0.0)] * n if init is None else [(q[0], q[1], q[2], q[3]) for q in init]
    )
    passed: Refined = ([(q[0], q[1], q[2], q[3]) for q in rots], pos, _distance(target, pos[-1]))
    limb = closest_floats(chain, target)  # (a shoulder and elbow kept from the target)
    if limb is not None and tolerance < _distance(target, limb[1][-1]) <= passed[2] + tolerance:
        return [list(q) for q in limb[0]], list(limb[1])
    facts = _hinge_facts(chain)
    if _distance(target, pos[0]) > chain.reach + tolerance:
        # Beyond the chain's length: the hinge at its longest, aimed at the target, where
        # that comes closer; else the pass's pose refined toward the target.
        if facts is not None:
            longest = facts.longest * (1.0 - 1e-12)
            placed, _ = _hinge_toward(
                chain, facts, rots, pos[n - 2], target, longest, want, tolerance
            )
            if placed == passed[0]:
                # No placement allowed: the reference weighs the pass's pose against itself
                # (its positions from the pass and from forward kinematics, a tie rounding
                # decides) and refines it only where rounding says "not closer".
                return None
            at = forward_kinematics_floats(chain, placed)[0]
            if _distance(target, at[-1]) < passed[2]:
                return _positive(placed), at
        return _answer(refine_far(chain, target, start, passed, tolerance))
    extent = None if n != 2 or facts is None else _extent(facts, pos[0], target, tolerance)
    if facts is not None and extent is not None:
        # Nearer the root than the hinge folds, or farther than it stretches: the hinge at
        # that extent, aimed at the target, where it reaches there (as close as any pose;
        # the reference's same step).
        placed, aimed = _hinge_toward(chain, facts, rots, pos[0], target, extent, want, tolerance)
        at = forward_kinematics_floats(chain, placed)[0]
        if _distance(aimed, at[-1]) <= tolerance and _distance(target, at[-1]) < passed[2]:
            return _positive(placed), at
    # Within it: the candidates refined (core.triangulation_refine_single).
    closed: list[list[Quat]] = []
    if facts is not None:
        facing = (
            None
            if want is None
            else (target[0] + want[0], target[1] + want[1], target[2] + want[2])
        )
        for base in (passed[0], side_pose(chain, passed[0])):
            candidate = _hinge_last(chain, facts, base, target, facing, tolerance)
            assert candidate is not None  # (given a pose)
            closed.append(candidate)
    return _answer(search(chain, target, start, passed, closed, tolerance))


def _extent(facts: _Hinge, root: Vec, target: Vec, tolerance: float) -> float | None:
    """How far from the ``root`` a two-bone limb's hinge lets its effector come nearest
    ``target``, where the hinge keeps it from the target's distance: a hair beyond the
    hinge's shortest distance for a target nearer than it folds, a hair within its longest
    for one farther than it stretches (by more than ``tolerance``); else ``None``."""
    near = _distance(target, root)
    if 0.0 < near < facts.shortest - tolerance:
        return facts.shortest * (1.0 + 1e-12)
    if near > facts.longest + tolerance:
        return facts.longest * (1.0 - 1e-12)
    return None


def is_extent_closest(chain: Chain, target: Vec, effector: Vec, tolerance: float) -> bool:
    """Whether ``effector`` (3 floats, base frame) misses ``target`` at the least distance
    any pose of a two-bone limb gets to a target nearer the root than its hinge folds or
    farther than it stretches (the target's distance from the hinge's shortest or longest
    one), to ``tolerance``: then no pose comes closer by more than the tolerance."""
    facts = _hinge_facts(chain) if chain.n_joints == 2 else None
    if facts is None:
        return False
    near = math.sqrt(vdot(target, target))
    least = max(facts.shortest - near, near - facts.longest)
    return least > tolerance and _distance(target, effector) <= least + tolerance


def _hinge_toward(
    chain: Chain,
    facts: _Hinge,
    rots: list[list[float]],
    p: Vec,
    target: Vec,
    distance: float,
    want: Vec | None,
    tolerance: float,
) -> tuple[list[Quat], Vec]:
    """The last two joints placed in closed form (:func:`_hinge_last`, from the pose
    ``rots``) for the point ``distance`` from ``p`` (the joint before the hinge) toward
    ``target``, the bend facing ``want`` (``tolerance`` the problem's): the placed pose and
    that point."""
    toward = (target[0] - p[0], target[1] - p[1], target[2] - p[2])
    scale = distance / math.sqrt(vdot(toward, toward))
    aimed = (p[0] + toward[0] * scale, p[1] + toward[1] * scale, p[2] + toward[2] * scale)
    side = None if want is None else (aimed[0] + want[0], aimed[1] + want[1], aimed[2] + want[2])
    placed = _hinge_last(chain, facts, rots, aimed, side, tolerance)
    assert placed is not None  # (given a pose)
    return placed, aimed


def _answer(best: Refined) -> Pose:
    """A searched pose as :func:`solve_one` returns it (rotations as lists)."""
    return [list(q) for q in best[0]], best[1]


def meeting_one(problem: Problem) -> tuple[Pose, bool] | None:
    """:func:`meeting` for a problem of one target in floats: the pose (``n`` rotations,
    ``n + 1`` positions) and whether it meets the target; ``None`` where the numpy path
    decides (a chain solved scaled, cone joints)."""
    if problem.size != 1 or _scale(problem.chain) != 1.0:
        return None
    chain = problem.chain
    out = _closed_form(
        _plan(chain),
        chain,
        _floats(problem.targets[0].tolist()),
        problem.initial[0].tolist(),
        problem.options,
        None if problem.poles is None else _floats(problem.poles[0].tolist()),
        problem.tolerance,
    )
    return None if out is None else (out[0], out[1])


def meeting(problem: Problem) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
    """:func:`core.triangulation_limits.closed_form` (rotations, positions, met) for any
    batch: in floats for one target where this module decides it (:func:`meeting_one`), and
    for each target where the pass is the even spread (:func:`spreads_within_limits`),
    else in numpy. For the methods whose start is triangulation's pose
    (:mod:`core.ccd_seed`, :mod:`core.jacobian_seed`): on a limited chain that pose is their
    answer where it meets the goal."""
    one = meeting_one(problem)
    if one is not None:
        (rots, pos), met = one
        return np.array([rots]), np.array([pos]), np.array([met])
    if _scale(problem.chain) == 1.0 and spreads_within_limits(
        _plan(problem.chain), problem.options
    ):
        rots_, pos_, met_ = [], [], []
        for i in range(problem.size):
            row = meeting_one(problem.rows([i]))
            assert row is not None  # (one target, unscaled, no cone joints)
            rots_.append(row[0][0])
            pos_.append(row[0][1])
            met_.append(row[1])
        return np.array(rots_), np.array(pos_), np.array(met_)
    return closed_form(problem)


def reaching_one(problem: Problem) -> tuple[Pose, bool] | None:
    """:func:`reaching` for a problem of one target in floats (:func:`solve_one`): the pose
    (``n`` rotations, ``n + 1`` positions) and whether it meets the target; ``None`` where
    the numpy path decides (a chain solved scaled, cone joints)."""
    if problem.chain.is_free:
        return meeting_one(problem)
    if problem.size != 1 or _scale(problem.chain) != 1.0:
        return None
    chain = problem.chain
    target = _floats(problem.targets[0].tolist())
    out = solve_one(
        chain,
        target,
        problem.initial[0].tolist(),
        problem.options,
        None if problem.poles is None else _floats(problem.poles[0].tolist()),
        problem.tolerance,
    )
    return None if out is None else (out, math.dist(out[1][-1], target) <= problem.tolerance)


def reaching(problem: Problem) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
    """Triangulation within the limits, its search included, position only (rotations
    ``(N, n, 4)``, positions ``(N, n + 1, 3)``) and whether each meets its target
    ``(N,)``: in floats for one target where this module decides it (:func:`reaching_one`),
    else :func:`core.triangulation.solve_triangulation`; on a free chain, :func:`meeting`
    (the closed form meets every target within reach). For the methods whose start is
    triangulation's pose (:mod:`core.ccd_seed`, :mod:`core.jacobian_seed`): on a limited
    chain it is their answer where it meets the goal. The search comes first, not their own
    iteration, also where the pass misses on chains of hinges: iterating from the pass's
    pose, CCD met such targets in a pose spun away from triangulation's, which meets them on
    the neighbouring frames (``bench_natural``'s hind leg with a knee limited to 0°–140°:
    6 pops over 20° in 240 frames, 0 now; and the search costs less than their iteration).
    """
    from .triangulation import solve_triangulation  # (that module builds on this one)

    if problem.chain.is_free:
        return meeting(problem)

    one = reaching_one(problem)
    if one is not None:
        (rots, pos), met = one
        return np.array([rots]), np.array([pos]), np.array([met])
    sol = solve_triangulation(replace(problem, target_rotations=None))
    error = np.linalg.norm(sol.positions[:, -1] - problem.targets, axis=-1)
    return sol.rotations, sol.positions, error <= problem.tolerance


__all__ = ["meeting", "meeting_one", "reaching", "reaching_one", "solve_one"]
