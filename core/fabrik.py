# SPDX-License-Identifier: GPL-3.0-or-later
"""FABRIK: Forward And Backward Reaching Inverse Kinematics.

Implements A. Aristidou and J. Lasenby, "FABRIK: A fast, iterative solver for the Inverse
Kinematics problem", *Graphical Models* 73(5), 243–260 (2011), Algorithm 1, on joint
positions, for general chains (:mod:`core.chain`). Equations are numbered as in the
paper's Algorithm 1 (``d_i`` = link lengths, ``p_i`` = joint positions, ``t`` = target,
``b`` = the root):

* **Unreachable target** (``|t − p_0| ≥ Σ d_i`` on a chain without limits): every link
  points at the target, ``p_{i+1} = (1 − λ_i) p_i + λ_i t`` with ``λ_i = d_i / |t − p_i|``.
* **Stage 1, forward reaching** (tip to root): ``p_n ← t``, then for ``i = n−1 … 0``
  ``p_i ← (1 − λ_i) p_{i+1} + λ_i p_i`` with ``λ_i = d_i / |p_{i+1} − p_i|`` — each joint
  is pulled onto the line to the (moved) joint after it, at its link's length.
* **Stage 2, backward reaching** (root to tip): ``p_0 ← b``, then
  ``p_{i+1} ← (1 − λ_i) p_i + λ_i p_{i+1}`` — the same on the way back, which puts the root
  back in place.
* Repeat until ``|p_n − t| ≤ tolerance`` (``options.tolerance``) or ``options.max_iterations``
  iterations, or until the effector stops moving (less than ``1e-13 × reach`` in an
  iteration: a target the chain cannot reach within its limits) or the error fell by less
  than 0.1 % over the last 10 iterations (limits that give the passes back a pose circling
  short of the target).
* **Finish under limits** (ours, not the paper's): on a chain with limits the rounds stop
  within :data:`FINISH` × reach (a tenth) of the target, and the damped least-squares
  refinement of triangulation's search (:func:`core.triangulation_refine._refine`) takes
  that pose to the tolerance — one more iteration; where it misses, the rounds go on
  (:func:`_finish`). Projected into limits, each round cuts the error by a roughly
  constant factor (0.3–0.6 on ``bench_solvers``' ball chains), the refinement
  quadratically. Until 0.8.5 the hand-over was at 1e-3 × reach; at a tenth the median
  target of those chains takes one round instead of two or three, the one-target solve
  costs 16–38 % less (3-, 5- and 10-bone chains), the reach is the same there and on 900
  targets of 30 random limited chains, and ``bench_natural``'s limited rigs pop less
  (its hinged limited tail 9 → 6 frames, limited neck 12 → 11; its other rows
  unchanged). The refinement then moves the joints further from the rounds' pose (on
  ``bench_solvers``' shoulder chains median 3–8°, at most 112°).

Stage 2 here is :func:`core.aim.aim`: each joint turned toward the stage-1 position of the
next by the shortest turn from its rest link direction, projected into its limits
(:meth:`core.limits.JointLimits.project` — the paper's § 4 constrains each joint by
re-orienting the link into the allowed region of its parent's frame), the next joint placed
by forward kinematics; a hinge's parent twists so the hinge can bend toward its wanted
direction, toward the seed's bend plane where the chain is straight (no spin as a hinge
chain straightens). Positions are therefore always the forward kinematics of the rotations.

* **Seed.** The iterations start from the even spread (:mod:`core.spread`): the start
  pose's bends scaled to reach the target, a uniform curl for a straight start, turned onto
  the target with the ``"rest"`` bend plane's carry. On a chain without limits it already
  reaches every target of its range (0 iterations: it is the answer, and the paper's
  unreachable case is its straight member); with limits, the projection moves it and the
  passes iterate.
* **Bend plane.** A pole turns the result like every method's
  (:func:`core.bend_plane.orient_bend`), as does the ``"rest"`` rule where iterations moved
  the seed.
* **Stalls under limits.** Where the projected passes give back the same pose short of a
  target within the chain's length (several hinges whose parents cannot twist, tight
  cones, joints limited like a shoulder), triangulation within the limits
  (:mod:`core.triangulation_limits`, its search included) is asked first and taken where it
  meets the target (one iteration); elsewhere plain CCD (:mod:`core.ccd`, without its
  coarse sweeps) continues from FABRIK's pose, one joint at a time within the limits, and
  its pose is kept where it comes closer (:func:`_polish`; ``iterations`` then adds CCD's
  iterations). Targets still missed take triangulation's pose unless CCD's is materially
  closer (:func:`core.triangulation_fallback.as_close`).

A goal with an orientation part is met by the wrist (:mod:`core.wrist`): the last joint
turned to it, the rest of the chain reaching for where that puts the last joint (the
position alone where the last joint cannot take orientations, a hinge).

Two paths, one pass: the rounds are written once on components (:mod:`core.components`;
:func:`core.fabrik_single.iterate`) and run on ``(N,)`` arrays for a batch and on plain
floats for one target (``problem.size == 1``: :func:`core.fabrik_single.fabrik_floats`,
whose seed is the spread's float twin :func:`core.spread.spread_points_floats`); tests
check that both give the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from . import rotations as rot
from .aim import AimPlan
from .bend_plane import orient_bend
from .ccd import solve_ccd
from .chain import Chain
from .components import ARRAY_OPS, Vec
from .fabrik_single import fabrik_floats, iterate
from .options import SolveOptions
from .problem import Problem
from .result import Solution
from .spread import spread_pose, stack
from .triangulation_fallback import triangulation_where_closer
from .triangulation_limits import ends_in_hinge
from .triangulation_limits_single import meeting, reaching
from .triangulation_plan import _take
from .triangulation_refine import _refine
from .wrist import solve_oriented

#: FABRIK's rounds on a chain with limits stop within this fraction of the reach of the
#: target, and the damped least-squares refinement of triangulation's search takes the
#: pose to the tolerance (:func:`_finish`): under limits each round cuts the error by a
#: roughly constant factor (0.3–0.6 on the bench chains), the refinement quadratically
#: (the module docstring says why a tenth).
FINISH = 0.1


def finish_distance(chain: Chain) -> float | None:
    """Where FABRIK's rounds hand a target to the refinement: :data:`FINISH` × reach on a
    chain with limits; ``None`` on a chain without (its seed reaches, no rounds run)."""
    return None if chain.is_free else FINISH * chain.reach


def solve_fabrik(problem: Problem) -> Solution:
    """FABRIK (Aristidou & Lasenby 2011, Algorithm 1) with joint limits and bend planes.

    Args:
        problem: ``N`` targets on one chain; reads ``options.max_iterations``, the
            tolerance, ``options.bend_plane``, ``options.pole_angle``, the poles and the
            start pose. A goal with an orientation part is met orientation first: the
            last joint turned to it, the rest of the chain reaching for where that puts
            the last joint (:mod:`core.wrist`; the position alone where the last joint
            cannot take orientations, a hinge).

    Returns:
        A :class:`Solution`; ``iterations`` counts stage 1 + stage 2 rounds per target
        (``0`` where the seed already reaches).
    """
    if problem.size == 0:
        n = problem.chain.n_joints
        return Solution(np.empty((0, n, 4)), np.empty((0, n + 1, 3)), np.empty(0, np.int64))
    if problem.target_rotations is not None:
        return solve_oriented(solve_fabrik, problem)
    if not problem.shares_start:  # each target its own seed
        return Solution.concatenate(
            [solve_fabrik(problem.rows(slice(k, k + 1))) for k in range(problem.size)]
        )
    if problem.chain.n_joints == 2 and ends_in_hinge(problem.chain):
        return _two_bone_limb(problem)
    return _fabrik(problem)


def _fabrik(problem: Problem) -> Solution:
    """:func:`solve_fabrik` for targets that share a start pose: the rounds from the spread
    (one target: :func:`core.fabrik_single.fabrik_floats`, in floats)."""
    if problem.size == 1:
        return _fabrik_one(problem)
    rots, pos, ops, plan, signs, hints = spread_pose(problem)
    target = tuple(np.ascontiguousarray(problem.targets.T))
    finish = finish_distance(problem.chain)
    rots, pos, iterations = iterate(
        ops,
        problem.chain,
        problem.tolerance if finish is None else max(problem.tolerance, finish),
        problem.options.max_iterations,
        problem.size,
        plan,
        target,
        (rots, pos),
        signs,
        hints,
    )
    r, p = stack(rots, pos, problem.size)
    its = np.broadcast_to(np.asarray(iterations, dtype=np.int64), (problem.size,)).copy()
    if finish is not None:
        _finish(problem, finish, plan, target, signs, hints, r, p, its)
    if problem.poles is not None:
        r, p = orient_bend(problem, r, p)
    elif np.any(its):  # the seed's plane is carried already; iterations may have left it
        turned_r, turned_p = orient_bend(problem, r, p)
        moved = its > 0
        r[moved], p[moved] = turned_r[moved], turned_p[moved]
    r = np.where(r[..., :1] < 0.0, -r, r)
    if not plan.all_free:
        r, p, its = _polish(problem, r, p, its)
    return Solution(r, p, its)


def _fabrik_one(problem: Problem) -> Solution:
    """:func:`_fabrik` for one target: :func:`core.fabrik_single.fabrik_floats` (the same
    steps in floats), then :func:`_polish` on a chain with limits."""
    opts = problem.options
    target: Vec = tuple(float(x) for x in problem.targets[0])  # type: ignore[assignment]
    pole: Vec | None = None
    if problem.poles is not None:
        pole = tuple(float(x) for x in problem.poles[0])  # type: ignore[assignment]
    initial = problem.initial[0]
    rest = not np.any(initial - (1.0, 0.0, 0.0, 0.0))
    rots, pos, its = fabrik_floats(
        problem.chain,
        target,
        pole,
        opts,
        problem.tolerance,
        None if rest else [tuple(q) for q in initial.tolist()],
        finish=finish_distance(problem.chain),
    )
    r, p = stack(rots, pos, 1)  # type: ignore[arg-type]
    iterations = np.array([its], dtype=np.int64)
    if _polishes(problem.chain, target, pos[-1], problem.tolerance):
        r, p, iterations = _polish(problem, r, p, iterations)
    return Solution(r, p, iterations)


def _polishes(chain: Chain, target: Vec, effector: Vec, tolerance: float) -> bool:
    """Whether :func:`_polish` has a target to work on (one target, in floats): a chain
    with limits that misses a target within its length, or ends in a hinge and the target
    lies beyond its length; elsewhere it gives the pose back unchanged."""
    if chain.is_free:
        return False
    distance = math.hypot(*target)
    if abs(distance - chain.reach) <= 1e-12 * chain.reach:
        return True  # (at the length, rounding of the distance decides: let _polish)
    if distance > chain.reach:
        return ends_in_hinge(chain)
    return math.dist(effector, target) > tolerance


def solve_floats(
    chain: Chain, target: Vec, pole: Vec | None, options: SolveOptions
) -> tuple[list[list[float]], list[Vec]] | None:
    """:func:`solve_fabrik` for one target from the rest pose without an orientation goal,
    in and out as plain floats (:func:`core.fabrik_single.fabrik_floats`, then
    :func:`_polish` where it has a target to work on, :func:`_polishes`), or ``None`` where
    numpy must decide: a two-bone limb ending in a hinge (:func:`_two_bone_limb`).
    ``target`` and ``pole`` are 3 floats in the base frame, checked and pulled in; returns
    the ``n`` local rotations (wxyz) and the ``n + 1`` joint positions."""
    if chain.n_joints == 2 and ends_in_hinge(chain):
        return None
    tolerance = options.tolerance if options.tolerance is not None else 1e-6 * chain.reach
    rots, pos, its = fabrik_floats(
        chain, target, pole, options, tolerance, finish=finish_distance(chain)
    )
    if rots is None:
        return None
    if _polishes(chain, target, pos[-1], tolerance):
        problem = Problem(
            chain,
            np.array([target]),
            None,
            None if pole is None else np.array([pole]),
            rot.identity((1, chain.n_joints)),
            tolerance,
            options,
        )
        r, p = stack(rots, pos, 1)
        r, p, _ = _polish(problem, r, p, np.array([its], dtype=np.int64))
        return r[0].tolist(), p[0].tolist()
    return [list(q) for q in rots], pos


def _finish(
    problem: Problem,
    finish: float,
    plan: AimPlan,
    target: Vec,
    signs: list[Any],
    hints: list[Vec | None],
    r: np.ndarray,
    p: np.ndarray,
    its: np.ndarray,
) -> None:
    """The end of the rounds on a chain with limits, in place on ``r (N, n, 4)``,
    ``p (N, n + 1, 3)`` and ``its (N,)``: the poses the rounds left within ``finish`` of
    their target but beyond the tolerance are refined (:func:`core.triangulation_refine._refine`,
    one more iteration) where that meets the tolerance; the others of them take more rounds
    to the tolerance (:func:`core.fabrik_single.iterate`, up to ``max_iterations``).
    :func:`core.fabrik_single.finish_floats` is the one-target twin."""
    chain, tolerance = problem.chain, problem.tolerance
    miss = p[:, -1] - problem.targets
    err = np.sqrt(miss[:, 0] * miss[:, 0] + miss[:, 1] * miss[:, 1] + miss[:, 2] * miss[:, 2])
    handed = np.flatnonzero((err > tolerance) & (err <= finish))
    if handed.size == 0:
        return
    q, at, left = _refine(chain, r[handed], problem.targets[handed], tolerance, False)
    met = left <= tolerance
    r[handed[met]], p[handed[met]] = q[met], at[met]
    its[handed[met]] += 1
    more = handed[~met]
    if more.size == 0:
        return
    rows = r[more]
    rots = [tuple(rows[:, i, k] for k in range(4)) for i in range(chain.n_joints)]
    points = p[more]
    pos = [tuple(points[:, j, k] for k in range(3)) for j in range(chain.n_joints + 1)]
    rots, pos, counted = iterate(
        ARRAY_OPS,
        chain,
        tolerance,
        problem.options.max_iterations,
        more.size,
        plan,
        _take(target, more),
        (rots, pos),
        [s[more] if np.ndim(s) else s for s in signs],
        [None if h is None else _take(h, more) for h in hints],
    )
    r[more], p[more] = stack(rots, pos, more.size)
    its[more] += counted


def _two_bone_limb(problem: Problem) -> Solution:
    """A two-bone limb whose second joint is a hinge: every pose that reaches lies in the
    closed form of :func:`core.triangulation_limits.closed_form` (in floats for one target:
    :func:`core.triangulation_limits_single.meeting`; the hinge's angle from
    the distance, the joint before it spun about the target line), which takes the hinge's
    rest bend side and the wanted bend plane; it is the answer where it meets the target
    (0 rounds), FABRIK's rounds elsewhere. (From its spread seed, FABRIK lands on another
    member of that family: with a hinge axis leaning on the upper link, the upper limb
    turned up to 50° in a frame near full extension.)"""
    q, p, met = meeting(problem)
    q = np.where(q[..., :1] < 0.0, -q, q)
    its = np.zeros(problem.size, dtype=np.int64)
    rest = np.flatnonzero(~met)
    if rest.size:
        sub = replace(
            problem,
            targets=problem.targets[rest],
            poles=None if problem.poles is None else problem.poles[rest],
            initial=problem.initial[rest],
        )
        sol = _fabrik(sub)
        q[rest], p[rest], its[rest] = sol.rotations, sol.positions, sol.iterations
    return Solution(q, p, its)


def _polish(
    problem: Problem, r: np.ndarray, p: np.ndarray, its: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Targets within the chain's length that the limited passes left unreached (FABRIK
    stalls where projecting the links into their limits gives back the same pose):
    triangulation within the limits where it meets the target; plain CCD (:mod:`core.ccd`,
    ``sweep_steps=0``) from FABRIK's pose, one joint at a time within the limits, kept where
    it comes closer; then triangulation within the limits unless CCD's pose is materially
    closer, also beyond the length of a limb ending in a hinge
    (:func:`core.triangulation_limits.beyond_limb`; the rule is
    :func:`core.triangulation_fallback.triangulation_where_closer`)."""
    miss = np.linalg.norm(p[:, -1] - problem.targets, axis=-1)
    within = np.linalg.norm(problem.targets, axis=-1) <= problem.chain.reach
    left = np.flatnonzero((miss > problem.tolerance) & within)
    r, p, its = r.copy(), p.copy(), its.copy()
    if left.size:
        # Triangulation within the limits, its search included (what the last step below
        # would run), answers first where it meets the target: CCD stalls on joints limited
        # like a shoulder.
        q_tri, p_tri, met = reaching(problem.rows(left))
        take = left[met]
        r[take] = np.where(q_tri[met, :, :1] < 0.0, -1.0, 1.0) * q_tri[met]
        p[take] = p_tri[met]
        its[take] += 1
        miss[take] = np.linalg.norm(p[take, -1] - problem.targets[take], axis=-1)
        left = left[~met]
    if left.size:
        sub = Problem(
            problem.chain,
            problem.targets[left],
            None,
            None if problem.poles is None else problem.poles[left],
            r[left],
            problem.tolerance,
            # Plain CCD: its coarse sweeps (core.ccd_sweep) doubled FABRIK's cost on the
            # targets this reaches, for the rare target no other pass comes as close to.
            problem.options.replace(ccd_start="initial", sweep_steps=0),
        )
        sol = solve_ccd(sub)
        error = np.linalg.norm(sol.positions[:, -1] - sub.targets, axis=-1)
        better = error < miss[left]
        take = left[better]
        r[take] = sol.rotations[better]
        p[take] = sol.positions[better]
        its[take] += sol.iterations[better]
        miss[take] = error[better]
    # Still missed: triangulation within the limits (core.triangulation_fallback) unless
    # CCD's pose is materially closer; also beyond the length of a limb ending in a hinge.
    fallback = triangulation_where_closer(problem, miss)
    if fallback is None:
        return r, p, its
    tri, chosen, take = fallback.solution, fallback.chosen, fallback.taken
    r[take] = np.where(tri.rotations[chosen, :, :1] < 0.0, -1.0, 1.0) * tri.rotations[chosen]
    p[take] = tri.positions[chosen]
    its[take] += 1
    return r, p, its


__all__ = ["solve_fabrik", "solve_floats"]
