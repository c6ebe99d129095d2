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

Where it lives: this module holds the entry point :func:`solve_triangulation` (scaling,
dispatch, the search within limits). The per-chain plan and the small component algebra
the passes share are :mod:`core.triangulation_plan`; the law-of-cosines rules of the numpy
pass and the constrained search over collapses are :mod:`core.triangulation_search`.
Two implementations of the same algorithm: :func:`_solve_batch` (numpy, component arrays
``(N,)``, every chain; its pass is :mod:`core.triangulation_batch`, built on those two
modules) and :func:`core.triangulation_single._solve_single` (plain Python floats, one
target on a free chain or one whose limited joints are projected, for interactive single
solves, :mod:`core.triangulation_single`; on limited chains
:mod:`core.triangulation_limits_single` adds the closed form of a last hinge and
:mod:`core.triangulation_refine_single` the search in floats); tests check they agree to
rounding (the search: where it reaches; docs/triangulation.md). A batch on a limited chain
solves each target that its pass and closed form miss on that float path
(:func:`_within_limits`), so a target's pose does not depend on the batch it comes in.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np

from .chain import Chain
from .problem import Problem
from .result import Solution
from .rotations import FloatArray
from .triangulation_batch import solve_batch
from .triangulation_limits import hinge_placed, reach_within_limits
from .triangulation_limits_single import spreads_within_limits
from .triangulation_plan import _Plan, _plan, _scale, _spreads
from .triangulation_single import _limited_single, _solve_single
from .wrist import solve_oriented


def _solve_batch(problem: Problem, plan: _Plan) -> tuple[FloatArray, FloatArray]:
    """The pass for ``N`` targets at once (:func:`core.triangulation_batch.solve_batch`)."""
    return solve_batch(problem, plan)


# --------------------------------------------------------------------------- entry point
_ONE_PASS = np.ones(1, dtype=np.int64)
_ONE_PASS.flags.writeable = False


def solve_triangulation(problem: Problem) -> Solution:
    """Triangulation IK (Müller-Cajar & Mukundan 2007, Algorithm 1), one pass per target.

    Args:
        problem: ``N`` targets on one chain; reads ``options.delta_b_deg``,
            ``options.bend_plane``, ``options.pole_angle``, the poles and the start pose.
            A goal with an orientation part is met orientation first: the last joint
            turned to it, the rest of the chain reaching for where that puts the last
            joint (:mod:`core.wrist`; the position alone where the last joint cannot
            take orientations, a hinge).

    Returns:
        A :class:`Solution` with ``iterations == 1`` for every target.
    """
    if problem.size == 0:
        n = problem.chain.n_joints
        return Solution(np.empty((0, n, 4)), np.empty((0, n + 1, 3)), np.empty(0, np.int64))
    if problem.target_rotations is not None:
        return solve_oriented(solve_triangulation, problem)
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
    elif problem.size == 1 and plan.limited and (one := _limited_single(problem)):
        rotations, positions = np.array([one[0]]), np.array([one[1]])
    else:
        rotations, positions = _solve_batch(problem, plan)
        if plan.limited:
            rotations, positions = _within_limits(problem, plan, rotations, positions)
    iterations = _ONE_PASS if problem.size == 1 else np.ones(problem.size, dtype=np.int64)
    return Solution(rotations, positions, iterations)


_SCALED: weakref.WeakKeyDictionary[Chain, Chain] = weakref.WeakKeyDictionary()


def _within_limits(
    problem: Problem, plan: _Plan, rotations: FloatArray, positions: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The batch pass's poses ``rotations (N, n, 4)``, ``positions (N, n + 1, 3)`` within
    the limits: where the pass or a last hinge's closed form meets the target, that pose
    (:func:`core.triangulation_limits.hinge_placed`); every other target is solved as a
    problem of one (:func:`core.triangulation_single._limited_single`, in floats), so its
    pose is the one it gets alone, whatever batch it comes in — a bake's frame is the live
    preview's also where the search runs. Where the float path's pass is the even spread
    (:func:`core.triangulation_limits_single.spreads_within_limits`), every target is solved
    so. Where the float path declines (the paper's cone joints; a far target whose hinge
    cannot be placed), the numpy search
    (:func:`core.triangulation_limits.reach_within_limits`) on those rows."""
    if "cone" in plan.kinds:
        return reach_within_limits(problem, rotations, positions)
    if spreads_within_limits(plan, problem.options):  # (the float path's pass is the spread)
        met = np.zeros(problem.size, dtype=bool)
    else:
        rotations, positions, met = hinge_placed(problem, rotations, positions)
    declined = []
    for i in np.flatnonzero(~met).tolist():
        one = _limited_single(problem.rows([i]))
        if one is None:
            declined.append(i)
        else:
            rotations[i], positions[i] = one
    if declined:
        sub = problem.rows(declined)
        rotations[declined], positions[declined] = reach_within_limits(
            sub, rotations[declined], positions[declined]
        )
    return rotations, positions


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


__all__ = ["solve_triangulation"]
