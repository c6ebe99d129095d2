# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation on chains with joint limits beyond the paper's cones: reach within limits.

The triangulation pass (:mod:`core.triangulation`) places each joint by the law of cosines
and then replaces a limited joint's rotation by :meth:`JointLimits.project`; a hinge (two
IK locks, e.g. a knee) then usually lands off the triangle's plane or on the wrong side, and
the target is missed although an admissible pose reaches it. This module takes the pass's
admissible pose and, where it misses, searches the admissible poses for one that reaches.

First, without any search: when the last joint is a hinge, the pass's pose with its last
two joints placed in closed form (:func:`_hinge_last`: the hinge bent on its rest side
where its range allows, the bend facing the pole or the rest pose's side carried to the
target, as :mod:`core.bend_plane` turns every method's bend) is the answer for every
target it reaches, also those the pass's projected pose reached; a target beyond the
chain's length takes the hinge at its longest allowed extension aimed at the target where
that comes closer than the pass (:func:`_hinge_extents`), else the pass's pose refined
toward it (below). On a shoulder and elbow (two joints: a limited ball joint with a free
twist, then a hinge) whose limits keep the target's direction out of reach, the closest
admissible pose comes in closed form (:mod:`core.limb_closest`), unless the pass is closer
by more than the tolerance; on a two-bone limb, a target nearer the root than its hinge
folds (farther than it stretches) takes the hinge at its shortest (longest) aimed at the
target, where it gets there (the effector is never nearer the root, nor farther: as close as
any pose). The search is for the targets within the chain's length that are still missed.

Candidates, all admissible (every joint's rotation is its own projection):

1. the pass's pose;
2. the *bend-side* pose: every hinge (two locks or an explicit axis) bent to the middle of
   its allowed range — so a hinge whose range has one sign bends to that side — and every
   other limited joint at the middle of its allowed swings (:class:`core.limits.SwingRegion`),
   free joints as the pass left them;
3. the start pose, projected;
4. when the last joint is a hinge, candidates 1 and 2 with their last two joints placed in
   closed form (:func:`_hinge_last`: the hinge's angle from the distance, the joint before
   it spun about the target direction to an allowed rotation);
5. for targets still missed, up to three rounds of restarts from the best pose so far and
   two random admissible poses (a fixed seed, so the result depends on the inputs only),
   for as long as a round brings the target materially closer (by more than
   :data:`~core.triangulation_refine.CLOSER_BY` tolerances, the margin the choice below
   asks of a candidate): a target out of reach within the limits, which no restart
   meets, stops after one. On a chain of three or more joints
   (:data:`~core.triangulation_refine.SETTLED_FROM`) none is tried where the candidates
   above *settled*: none reaches and every one refined to within that margin of the
   closest, or paused near the first's pose (from their different starts they found the
   same distance; ``docs/triangulation.md`` has what it changed).

Each candidate is refined by damped least squares in the joints' own axes, projected onto
the limits after every step (so it never leaves them): per joint, the columns of
``∂p_e/∂δ`` for a turn ``δ`` about each free local axis ``k`` are
``(1 − stiffness_k)·(W_i e_k) × (p_e − p_i)`` (a hinge has its one axis), the step is
``Δ = Jᵀ(JJᵀ + λ²I)⁻¹ e`` (Levenberg–Marquardt: ``λ`` shrinks after a step that lowers the
error and grows after one that does not, which is then undone; a refinement stops at the
tolerance, or where it stalls or its next step promises too little,
:func:`core.triangulation_refine._refine_paused`), and joint ``i`` becomes
``retract(q_i · exp(Δ_i))`` in the first round (cheap: a swing outside its limits moves
toward their centre) and ``project(q_i · exp(Δ_i))`` after it (the nearest allowed
rotation, which lets the search slide along a limit; :mod:`core.limits`). The chosen pose
for a target is the pass's own pose refined when that reaches (it keeps the bend plane the
pass gave it: the pole's, or the rest pose's side), else the candidate of lowest cost
(``Σ`` joint angles from the start pose, the paper's eq. 3) among those that reach, else,
among those not farther than the closest by more than
:data:`~core.triangulation_refine.CLOSER_BY` tolerances, the one nearest the first
candidate as given (the pass's pose, or in later rounds the best so far): an admissible
pose as close as any found but for that margin, which :func:`core.solve` reports as
"unreachable within limits".

This is not the paper's single pass (the paper has cones only); it runs only where the
pass misses on a chain with such limits, and costs a few milliseconds per missed target
(a shoulder and elbow's closest pose, about a tenth of a millisecond).

Where it lives: this module holds the closed form of a last hinge and the driver
(:func:`reach_within_limits`); the candidates' refinement and the choice among them are
:mod:`core.triangulation_refine`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from . import regula_falsi
from . import rotations as rot
from .bend_plane import wanted_bends
from .chain import Chain
from .kinematics import forward_kinematics
from .limb_closest import closest
from .limits import JointLimits
from .problem import Problem
from .rotations import FloatArray
from .triangulation_refine import (
    _ROUNDS,
    _SEED,
    CLOSER_BY,
    SETTLED_FROM,
    _keep_best,
    _middle,
    _project_all,
    _random_rotations,
)

#: Spins about the target direction sampled for the joint before a hinge where its limits
#: refuse the one that faces the wanted side (:func:`_spin_toward`).
SPINS = 128
#: The edge of the allowed spins between the best allowed sample and the refused spin
#: (its neighbour that way, or the refused spin itself where nearer: at most the samples'
#: spacing, 2.8°) is found to this fraction of that bracket, below 3e-9 rad
#: (:func:`spin_edge`) ...
SPIN_WIDTH = 2.0**-24
#: ... by regula falsi for at most this many steps (~5 on ``bench_solvers``' 2-bone ball
#: chain, at most 12 there; bisection takes 24) ...
SPIN_FALSI = 12
#: ... then by bisection: at most this many steps in all (enough to halve the bracket 24
#: times after :data:`SPIN_FALSI` steps).
SPIN_STEPS = SPIN_FALSI + 24


def _hinge_last(
    chain: Chain,
    q: FloatArray,
    targets: FloatArray,
    toward: FloatArray | None = None,
    tolerance: float = 0.0,
) -> FloatArray | None:
    """Poses ``q (M, n, 4)`` with the last two joints placed in closed form when the last is
    a hinge, or ``None`` when it is not (``q`` is not changed; joints before stay).

    Joint ``j = n − 2`` at ``p``, the hinge ``h`` after it: in ``j``'s frame the effector
    sits at ``v(φ) = o_j + r·R(h, φ)·o_h`` (``r`` the hinge's rest rotation), and
    ``|v(φ)|² = |o_j|² + |o_h|² + 2(A + B cos φ + C sin φ)`` with ``g = r⁻¹ o_j``,
    ``A = (g·h)(h·o_h)``, ``B = g·o_h − A``, ``C = g·(h × o_h)``: the hinge angle comes from
    the distance to the target (two solutions; the hinge's range keeps those it allows —
    its allowed sign picks the bend side; a target within ``tolerance`` of the distances the
    hinge allows takes the nearest allowed angle: ``ratio`` within ``c·tol/√(B² + C²)`` of
    ±1, or an angle within ``tol/|o_h|`` of the range, which moves the effector by at most
    ``tol`` — a straight knee's target given in single precision, as Blender's are, lands
    that far off). Joint ``j`` must then turn ``v̂`` onto the target
    direction ``ĉ``: ``q_j = R(ĉ, ψ)·between(v̂, ĉ)``, one free spin ``ψ`` — the bend plane,
    chosen by :func:`_spin_toward`: the bend faces ``toward`` (``(M, 3)`` points in the base
    frame, :func:`core.bend_plane.wanted_bends`: the pole's or the rest pose's side), else
    the side where ``q`` puts the hinge. Where ``j``'s limits refuse that spin, the allowed
    spin nearest it (:func:`_spin_toward`); where none is allowed the joints keep ``q``'s
    rotations.

    Of two allowed solutions, the one that bends the hinge's link the way it is bent at rest
    (:func:`_bend_about_hinge`) is taken, else the one of smaller ``|φ|``: a hinge free both
    ways (Lock IK Y and Z without a range, as Rigify's forearms) keeps its rest bend side.
    """
    n = chain.n_joints
    last = chain.limits[-1]
    if n < 2 or last.kind != "hinge":
        return None
    j = n - 2
    h, (lo, hi), a_, b_, c_ = _hinge_terms(chain)
    o_j, o_h = chain.offsets[j], chain.offsets[-1]
    rest_h = chain.rest_rotations[-1]
    pos, world = forward_kinematics(chain, q)
    parent = (
        chain.rest_rotations[j]
        if j == 0
        else rot.multiply(world[:, j - 1], chain.rest_rotations[j])
    )
    parent = np.broadcast_to(parent, (len(q), 4))
    cv = targets - pos[:, j]
    dist = np.linalg.norm(cv, axis=-1)
    need = 0.5 * (dist**2 - o_j @ o_j - o_h @ o_h) - a_
    amp = np.hypot(b_, c_)
    if amp < 1e-12:
        return None
    ratio = need / amp
    solvable = np.abs(ratio) <= 1.0 + dist * tolerance / amp
    slack = max(1e-12, tolerance / float(np.linalg.norm(o_h)))
    base = np.arctan2(c_, b_)
    spread = np.arccos(np.clip(ratio, -1.0, 1.0))
    out = q.copy()
    best_cost = np.full(len(q), np.inf)
    c_local = rot.rotate(rot.conjugate(parent), cv / np.maximum(dist, 1e-300)[:, None])
    # The direction the bend should face, across ĉ in j's parent frame: toward the wanted
    # side, else where the pass put the hinge.
    side = rot.rotate(q[:, j], o_j)
    if toward is not None:
        wanted = rot.rotate(rot.conjugate(parent), toward - pos[:, j])
        wanted = wanted - np.sum(wanted * c_local, axis=-1, keepdims=True) * c_local
        usable = np.linalg.norm(wanted, axis=-1) > 1e-9 * chain.reach
        side = np.where(usable[:, None], wanted, side)
    side = side - np.sum(side * c_local, axis=-1, keepdims=True) * c_local
    rest_bend = _bend_about_hinge(chain, np.zeros(1))[0]
    for sign in (1.0, -1.0):
        phi = np.remainder(base + sign * spread + np.pi, 2.0 * np.pi) - np.pi
        ok = solvable & (phi >= lo - slack) & (phi <= hi + slack)
        if not np.any(ok):
            continue
        qh = last.project(rot.from_axis_angle(h, np.clip(phi, lo, hi)))
        v = o_j + rot.rotate(rot.multiply(rest_h, qh), o_h)
        v_hat = v / np.linalg.norm(v, axis=-1, keepdims=True)
        aim = rot.between(v_hat, c_local)  # (M, 4)
        bend = _bend_about_hinge(chain, phi)
        bend_sign = np.where(bend != 0.0, np.sign(bend), 1.0 if rest_bend >= 0.0 else -1.0)
        hinge_axis = rot.rotate(aim, rot.rotate(rest_h, h))
        lean = _rest_lean(chain)
        pick_q = _spin_toward(chain.limits[j], aim, c_local, hinge_axis, bend_sign, side, lean)
        chosen = np.abs(phi) + np.where(np.isfinite(pick_q[:, 0]), 0.0, np.inf)
        # Against the rest bend: after any solution on the rest side (|φ| is below 2π).
        chosen = np.where(rest_bend * bend < 0.0, chosen + 4 * np.pi, chosen)
        take = ok & np.isfinite(chosen) & (chosen < best_cost)
        out[take, j] = chain.limits[j].project(pick_q[take])
        out[take, -1] = qh[take]
        best_cost = np.where(take, chosen, best_cost)
    return out


def _bend_about_hinge(chain: Chain, phi: FloatArray) -> FloatArray:
    """Signed bends ``(M,)`` (radians) of a last hinge's link from the link before it,
    about the hinge's axis, at hinge angles ``phi (M,)``; 0 where the rest leaves them
    within 1e-9 rad of straight (no rest side)."""
    h, _ = chain.limits[-1].hinge
    rest_h = chain.rest_rotations[-1]
    d_j = chain.offsets[-2] / np.linalg.norm(chain.offsets[-2])
    axis = rot.rotate(rest_h, h)  # in the frame of the joint before the hinge
    d_h = rot.rotate(rot.multiply(rest_h, rot.from_axis_angle(h, phi)), chain.offsets[-1])
    d_h = d_h / np.linalg.norm(d_h, axis=-1, keepdims=True)
    bend = np.arctan2(rot.cross(d_j, d_h) @ axis, d_h @ d_j)
    rest = rot.rotate(rest_h, chain.offsets[-1])
    rest = rest / np.linalg.norm(rest)
    return bend if abs(float(rot.cross(d_j, rest) @ axis)) > 1e-9 else np.zeros_like(bend)


def _spin_toward(
    lim: JointLimits,
    aim: FloatArray,
    axis: FloatArray,
    hinge_axis: FloatArray,
    bend_sign: FloatArray,
    side: FloatArray,
    lean: float = 0.0,
) -> FloatArray:
    """Of the rotations ``R(axis, ψ)·aim`` (``aim (M, 4)``, unit ``axis (M, 3)``: the
    target direction ĉ), the one that ``lim`` allows whose bend faces ``side (M, 3)``
    (across ĉ) best; NaN rows where none of the sampled spins is allowed.

    A hinge with axis ``a`` (``hinge_axis (M, 3)``, ``aim``'s) bending by a signed angle of
    sign ``s`` (``bend_sign (M,)``) puts the joint before it on the side ``s·(ĉ × a)`` of
    the line to the target when its axis is normal to the link before it (the bend turns
    the last link from ĉ toward ``a × ĉ``; aiming the chord back at ĉ turns the joint the
    other way) — defined even where the chain is straight, so the choice stays continuous
    through full extension. A hinge axis leaning on that link (a Rigify paw's, 1–3°) puts
    the joint a few degrees around the line from there: ``u`` is that side turned about ĉ
    by ``lean`` (:func:`_rest_lean`: where the rest pose puts the joint), so the rest
    pose's target with the rest pose's side gives the rest pose. As the spin commutes with
    ``ĉ ×``, ``R(ĉ, ψ)·u · side = const + (u·side) cos ψ + ((ĉ × u)·side) sin ψ``, largest
    at ``ψ* = atan2((ĉ × u)·side, u·side)`` and falling with the angle from it. Where the
    limits refuse ``ψ*``: of :data:`SPINS` spins evenly around the circle, the allowed one
    nearest ``ψ*``, then the edge of what is allowed between it and the next sample
    toward ``ψ*`` (or ``ψ*``, where nearer) by the sign of the limits' margin
    (:func:`spin_edge`, keeping the allowed end), so the spin moves continuously with the
    inputs (an allowed stretch narrower than the samples' spacing, 2.8°, can be missed).
    A joint with one degree of freedom or none (a hinge, a fixed joint) is not sampled:
    its rotations meet the spins' circle at isolated points; the one the samples meet is
    ``ψ = 0``, ``aim`` itself, where the target direction lies in the hinge's plane (the
    pass aims a leg so), and the edge from there is ``aim`` itself — so ``aim``
    where allowed, else none (on ``bench_natural``'s leg of two hinges the sampling was
    60 % of a solve).
    The rotations are ``cos(ψ/2)·aim + sin(ψ/2)·(0, ĉ)·aim`` (:func:`spin_rotation`)."""
    u = bend_sign[:, None] * rot.cross(axis, hinge_axis)
    if lean:
        u = math.cos(lean) * u + math.sin(lean) * rot.cross(axis, u)
    cu = rot.cross(axis, u)
    psi = np.arctan2(np.sum(cu * side, axis=-1), np.sum(u * side, axis=-1))
    turned = rot.multiply(np.concatenate((np.zeros((len(axis), 1)), axis), axis=-1), aim)
    best = spin_rotation(aim, turned, psi)
    refused = ~lim.allows(best, 1e-12)
    if refused.any() and lim.kind != "ball":
        # (the sample ψ = 0 is ``aim`` itself, allowed where ĉ lies in the hinge's plane)
        kept = lim.allows(aim[refused], 1e-12)[:, None]
        best[refused] = np.where(kept, aim[refused], np.nan)
    elif refused.any():
        r = np.flatnonzero(refused)
        spins = np.linspace(-np.pi, np.pi, SPINS, endpoint=False)
        cand = spin_rotation(aim[r, None, :], turned[r, None, :], spins[None, :])  # (R, S, 4)
        gap = np.remainder(psi[r, None] - spins[None, :] + np.pi, 2.0 * np.pi) - np.pi
        far = np.where(lim.allows(cand, 1e-12), np.abs(gap), np.inf)
        k = np.argmin(far, axis=1)
        rows = np.arange(r.size)
        start, gap = spins[k], gap[rows, k]
        gap = np.sign(gap) * np.minimum(np.abs(gap), 2.0 * np.pi / SPINS)
        edge = spin_edge(
            lambda s: lim.beyond(spin_rotation(aim[r], turned[r], start + s * gap)), r.size
        )
        found = np.isfinite(far[rows, k])[:, None]
        best[r] = np.where(found, spin_rotation(aim[r], turned[r], start + edge * gap), np.nan)
    return best


def spin_edge(beyond: Callable[[FloatArray], FloatArray], rows: int) -> FloatArray:
    """Where the limits' edge lies between an allowed spin and a refused one, for ``rows``
    pairs: the fractions ``(rows,)`` of the way from the allowed (0) to the refused (1) at
    which a joint's :meth:`~core.limits.JointLimits.beyond` (``beyond`` of ``(rows,)``
    fractions) changes sign, the allowed end of a bracket at most :data:`SPIN_WIDTH` long
    (regula falsi, Illinois variant, then bisection, :func:`core.regula_falsi.illinois`,
    from the refused end: a margin of exactly 0 is allowed). 0 where the allowed spin's
    margin is not below 0 (on the edge to rounding)."""
    u = regula_falsi.illinois(
        lambda u: beyond(1.0 - u),
        np.zeros(rows),
        np.ones(rows),
        beyond(np.ones(rows)),
        beyond(np.zeros(rows)),
        SPIN_STEPS,
        SPIN_WIDTH,
        keep="hi",
        falsi=SPIN_FALSI,
    )
    return 1.0 - u


@functools.lru_cache(maxsize=64)
def _rest_lean(chain: Chain) -> float:
    """How far around the line from the joint before a last hinge to the effector (radians,
    about it) the rest pose puts the hinge's joint from the hinge's own side ``s·(ĉ × a)``
    (:func:`_spin_toward`): 0 for a hinge axis normal to the link before it, a few degrees
    for one leaning on it, 0 where the rest pose is straight (the joint on the line)."""
    o_j, o_h = chain.offsets[-2], chain.offsets[-1]
    rest_h = chain.rest_rotations[-1]
    h, _ = chain.limits[-1].hinge
    chord = o_j + rot.rotate(rest_h, o_h)
    c = chord / np.linalg.norm(chord)
    rest_bend = float(_bend_about_hinge(chain, np.zeros(1))[0])
    side = (1.0 if rest_bend >= 0.0 else -1.0) * rot.cross(c, rot.rotate(rest_h, h))
    across = o_j - float(o_j @ c) * c
    if np.linalg.norm(across) <= 1e-9 * np.linalg.norm(o_j) or np.linalg.norm(side) <= 1e-12:
        return 0.0
    return math.atan2(float(rot.cross(side, across) @ c), float(side @ across))


def spin_rotation(aim: FloatArray, turned: FloatArray, psi: FloatArray | float) -> FloatArray:
    """``R(ĉ, ψ)·aim = cos(ψ/2)·aim + sin(ψ/2)·turned`` with ``turned = (0, ĉ)·aim``:
    ``aim``, ``turned`` ``(..., 4)`` wxyz, spins ``psi (...)`` radians; ``(..., 4)``."""
    half = 0.5 * np.asarray(psi)[..., None]
    return np.cos(half) * aim + np.sin(half) * turned


def _hinge_terms(
    chain: Chain,
) -> tuple[FloatArray, tuple[float, float], float, float, float]:
    """A last hinge's axis ``h``, range, and the terms ``A, B, C`` of
    ``|v(φ)|² = |o_j|² + |o_h|² + 2(A + B cos φ + C sin φ)`` (:func:`_hinge_last`)."""
    h, limits = chain.limits[-1].hinge
    o_j, o_h = chain.offsets[-2], chain.offsets[-1]
    g = rot.rotate(rot.conjugate(chain.rest_rotations[-1]), o_j)
    a_ = float(g @ h) * float(h @ o_h)
    return (
        h,
        limits if limits is not None else (-np.pi, np.pi),
        a_,
        float(g @ o_h) - a_,
        float(g @ rot.cross(h, o_h)),
    )


def _hinge_extents(chain: Chain) -> tuple[float, float] | None:
    """The shortest and longest distances from the last joint but one to the effector that
    a last hinge allows (``|v(φ)|`` of :func:`_hinge_last` at its smallest and largest over
    the hinge's range: ``b cos φ + c sin φ`` peaks at ``atan2(c, b)`` and is least half a
    turn away, else at an end of the range), or ``None`` when the last joint is not a
    hinge."""
    if chain.n_joints < 2 or chain.limits[-1].kind != "hinge":
        return None
    _, (lo, hi), a_, b_, c_ = _hinge_terms(chain)
    o_j, o_h = chain.offsets[-2], chain.offsets[-1]
    base = float(o_j @ o_j + o_h @ o_h)
    out = []
    for turn, pick in ((np.pi, min), (0.0, max)):
        peak = float(np.arctan2(c_, b_)) + turn
        phis = [lo, hi] + [p for p in (peak, peak - 2 * np.pi, peak + 2 * np.pi) if lo <= p <= hi]
        value = pick(b_ * np.cos(p) + c_ * np.sin(p) for p in phis)
        out.append(float(np.sqrt(max(base + 2.0 * (a_ + value), 0.0))))
    return out[0], out[1]


def ends_in_hinge(chain: Chain) -> bool:
    """True for a chain of two or more joints whose last is a hinge (a knee, an elbow):
    triangulation within the limits places its last two joints in closed form."""
    return chain.n_joints >= 2 and chain.limits[-1].kind == "hinge"


def beyond_limb(problem: Problem) -> NDArray[np.bool_]:
    """``(N,)``: targets beyond the chain's length on a chain that ends in a hinge. There
    every method takes triangulation within the limits' answer — the hinge at its longest,
    aimed at the target, its bend facing the wanted side — where it comes as close to the
    target (within the tolerance) as its own: beyond the reach both are the closest pose,
    and the rule keeps the pose continuous with the closed form inside the reach (the
    methods' own poses there turned the upper limb by up to 90° as the target crossed the
    reach)."""
    if not ends_in_hinge(problem.chain):
        return np.zeros(problem.size, dtype=bool)
    return np.linalg.norm(problem.targets, axis=-1) > problem.chain.reach


def closed_form(problem: Problem) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
    """Triangulation within the limits without its search, for the methods that start from
    it (:mod:`core.ccd_seed`, :mod:`core.jacobian_seed`): per target the pass's pose, where
    the last joint is a hinge replaced by the pose with it placed in closed form where that
    reaches (:func:`reach_within_limits`' first step); rotations ``(N, n, 4)``, positions
    ``(N, n + 1, 3)`` and whether each meets its target ``(N,)``."""
    from .triangulation import _solve_batch  # (that module builds on this one)
    from .triangulation_plan import _plan

    rotations, positions = _solve_batch(problem, _plan(problem.chain))
    return hinge_placed(problem, rotations, positions)


def hinge_placed(
    problem: Problem, rotations: FloatArray, positions: FloatArray
) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
    """:func:`closed_form` from the pass's poses ``rotations (N, n, 4)``, ``positions
    (N, n + 1, 3)`` (not changed)."""
    chain, targets, tol = problem.chain, problem.targets, problem.tolerance
    err = np.linalg.norm(positions[:, -1] - targets, axis=-1)
    if ends_in_hinge(chain):
        rotations, positions = rotations.copy(), positions.copy()
        want = wanted_bends(problem)
        toward = None if want is None else targets + want
        placed = _hinge_last(chain, rotations.copy(), targets, toward, tol)
        if placed is not None:
            every = np.arange(len(targets))
            _store_reaching(chain, problem, every, placed, rotations, positions, err)
    return rotations, positions, err <= tol


def reach_within_limits(
    problem: Problem, rotations: FloatArray, positions: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The pass's poses ``rotations (N, n, 4)``, ``positions (N, n + 1, 3)`` with every
    missed target re-solved within the limits (module docstring); the same arrays when all
    were reached."""
    chain = problem.chain
    targets = problem.targets
    tol = problem.tolerance
    # A last hinge placed in closed form (bend side and plane by rule) for every target,
    # also where the pass's projected pose reached (it may reach with the hinge bent
    # against its rest side and the joint before it turned half round): where that
    # reaches, it is the answer and nothing is searched.
    rotations, positions, met = hinge_placed(problem, rotations, positions)
    miss = np.flatnonzero(~met)
    if miss.size == 0:
        return rotations, positions
    rotations, positions = rotations.copy(), positions.copy()
    err = np.linalg.norm(positions[:, -1] - targets, axis=-1)
    # A shoulder and elbow whose limits keep the target's direction out of reach: the
    # closest admissible pose in closed form (core.limb_closest), unless the pass's pose is
    # closer by more than the tolerance (it is not: at most by rounding, and then it would
    # be refined or searched for nothing).
    limb = closest(chain, targets[miss])
    if limb is not None:
        e = np.linalg.norm(limb[1][:, -1] - targets[miss], axis=-1)
        take = limb[2] & (e > tol) & (e <= err[miss] + tol)
        rows = miss[take]
        rotations[rows], positions[rows], err[rows] = limb[0][take], limb[1][take], e[take]
        miss = miss[~take]
        if miss.size == 0:
            return rotations, positions
    want = wanted_bends(problem)
    toward = None if want is None else targets + want
    # Beyond the chain's length no pose reaches: the pass's pose, refined toward the
    # target, is the closest admissible pose; the search below is for targets within it.
    far = np.linalg.norm(targets[miss] - positions[miss, 0], axis=-1) > chain.reach + tol
    if far.any():
        rows = miss[far]
        extents = _hinge_extents(chain)
        if extents is not None:  # the hinge at its longest, aimed at the target
            longest = extents[1]
            j = chain.n_joints - 2
            out_to = targets[rows] - positions[rows, j]
            out_to *= longest * (1.0 - 1e-12) / np.linalg.norm(out_to, axis=-1, keepdims=True)
            aims = positions[rows, j] + out_to
            placed = _hinge_last(chain, rotations[rows].copy(), aims, _rows(want, rows, aims), tol)
            if placed is not None:
                pos_p, _ = forward_kinematics(chain, placed)
                e = np.linalg.norm(targets[rows] - pos_p[:, -1], axis=-1)
                closer = e < err[rows]
                rotations[rows[closer]] = rot.positive_w(placed[closer])
                positions[rows[closer]] = pos_p[closer]
                err[rows[closer]] = e[closer]
                rows = rows[~closer]
        if rows.size:
            _keep_best(problem, rows, [rotations[rows]], rotations, positions, err, False)
        miss = miss[~far]
        if miss.size == 0:
            return rotations, positions
    # A two-bone limb whose hinge cannot fold enough for a target this near its root, or
    # stretch enough for one this far (a hinge whose range stops short of straight): the
    # effector is never nearer the root than the hinge's shortest distance nor farther than
    # its longest, so a pose that reaches that distance along the target's direction is as
    # close as any. The hinge at that extent, aimed at the target (as beyond the length),
    # where it reaches there.
    extents = _hinge_extents(chain) if chain.n_joints == 2 else None
    if extents is not None:
        shortest, longest = extents
        out_to = targets[miss] - positions[miss, 0]
        near = np.linalg.norm(out_to, axis=-1)
        fold = (near > 0.0) & (near < shortest - tol)
        stretch = near > longest + tol
        close = fold | stretch
        if close.any():
            rows = miss[close]
            extent = np.where(fold, shortest * (1.0 + 1e-12), longest * (1.0 - 1e-12))[close]
            aims = positions[rows, 0] + out_to[close] * (extent / near[close])[:, None]
            placed = _hinge_last(chain, rotations[rows].copy(), aims, _rows(want, rows, aims), tol)
            if placed is not None:
                pos_p, _ = forward_kinematics(chain, placed)
                e = np.linalg.norm(targets[rows] - pos_p[:, -1], axis=-1)
                there = np.linalg.norm(aims - pos_p[:, -1], axis=-1) <= tol
                take = there & (e < err[rows])
                rotations[rows[take]] = rot.positive_w(placed[take])
                positions[rows[take]] = pos_p[take]
                err[rows[take]] = e[take]
                miss = miss[~np.isin(miss, rows[take])]
                if miss.size == 0:
                    return rotations, positions
    start = problem.initial[miss]
    passed = rotations[miss]
    side = passed.copy()
    for i, lim in enumerate(chain.limits):
        if not lim.is_free:
            side[:, i] = _middle(lim)
    rng = np.random.default_rng(_SEED)
    candidates = [passed, side, _project_all(chain, start)]
    for base in (passed, side):
        placed = _hinge_last(chain, base.copy(), targets[miss], _rows(toward, miss), tol)
        if placed is not None:
            candidates.append(placed)
    nearest = False
    for round_ in range(_ROUNDS):
        before = err[miss]
        settled = _keep_best(
            problem, miss, candidates, rotations, positions, err, nearest, not nearest
        )
        going = err[miss] > tol
        if round_ > 0:  # restarts go on while a round brings the target materially closer
            going &= err[miss] < before - CLOSER_BY * tol
        elif chain.n_joints >= SETTLED_FROM:  # ... and not tried where candidates settled
            going &= ~settled
        miss = miss[going]
        if miss.size == 0:
            break
        # Again from the best so far, sliding along the limits, and from random poses.
        nearest = True
        shape = (miss.size, chain.n_joints, 4)
        candidates = [rotations[miss]] + [
            np.broadcast_to(_project_all(chain, _random_rotations(rng, shape[1:])[None]), shape)
            for _ in range(2)
        ]
    return rotations, positions


def _rows(
    points: FloatArray | None, rows: np.ndarray, at: FloatArray | None = None
) -> FloatArray | None:
    """``points[rows]`` (``None`` stays ``None``), moved by ``at`` when given."""
    if points is None:
        return None
    return points[rows] if at is None else points[rows] + at


def _store_reaching(
    chain: Chain,
    problem: Problem,
    miss: np.ndarray,
    q: FloatArray,
    rotations: FloatArray,
    positions: FloatArray,
    err: FloatArray,
) -> None:
    """Store the poses ``q (M, n, 4)`` of targets ``miss`` that reach them (in place)."""
    pos, _ = forward_kinematics(chain, q)
    e = np.linalg.norm(problem.targets[miss] - pos[:, -1], axis=-1)
    ok = e <= problem.tolerance
    rotations[miss[ok]] = rot.positive_w(q[ok])
    positions[miss[ok]] = pos[ok]
    err[miss[ok]] = e[ok]


__all__ = ["closed_form", "reach_within_limits"]
