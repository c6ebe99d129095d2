# SPDX-License-Identifier: GPL-3.0-or-later
"""Orientation goals for the methods that place joints by position (triangulation, FABRIK).

Triangulation (Müller-Cajar & Mukundan 2007) and FABRIK (Aristidou & Lasenby 2011) reach
for a point; neither weighs an orientation. A goal with both — the effector at ``t`` and
the last joint's frame turned to ``R`` (``target_rotation``, ``position_weight < 1``) — is
met the way an animator's IK hand control meets it, the orientation first:

1. the last link is rigid in its joint's frame, so a last joint turned to ``R`` puts that
   joint at the **wrist** ``w = t − R · offset_{n−1}``;
2. the chain without its last joint reaches for ``w`` by the method itself (its pass,
   search and rounds, the pole and bend plane as for any position goal), and its twist is
   removed as :class:`core.Solver` removes it from a position-only pose
   (:func:`core.untwist.untwist`);
3. the last joint takes the turn that gives its frame ``R``:
   ``q_{n−1} = (W_{n−2} · rest_{n−1})⁻¹ · R``; where its limits refuse that turn (not
   with a pole, which sets the root–wrist line's plane itself; a last ball joint with
   limits and a root that can turn about that line, :func:`_swivels`), the pose with that
   turn kept within them is refined on both goals together (:func:`refined`: Gauss–Newton
   steps of the Jacobian methods' iteration, which moves every joint a little, as an
   animator's IK does); where that misses, the chain without the last joint swivels about
   the root–wrist line (which keeps the wrist) by the least angle at which the limits
   allow the turn (:func:`swivel`; the root's limits permitting), and where no swivel
   does, the turn is kept within them (:meth:`core.limits.JointLimits.project`).

The refinement starts from the pose the rule gives without it, a function of the goal
alone, and moves it by as little as its steps need; the least swivel jumps where the
nearest allowed angle switches sides (a hand turning on a loop: 5 frames, up to 137°,
``docs/natural.md``). Where the wrist is within reach and the last joint can take the turn,
both goals are met (to the method's tolerance; refined, to ``angle_tolerance``); elsewhere
the orientation is kept as near as the last joint allows and the effector lies off the
target by what the wrist misses. The weight between the two goals (``position_weight``)
is not traded: at ``1`` the goal is position only, below it the orientation comes first.
A chain of one joint only turns.

The rule needs a last joint that can swing its link both ways (:func:`takes_orientation`:
free, or a ball joint whose X and Z are not locked; ranges and a locked twist are fine).
A last hinge can take almost no orientation but its own plane's: the rule would turn it as
near as its range allows and move the effector far off the target (a 2-bone leg with a
knee hinge: 79° and a tenth of its length off, where CCD and the Jacobian methods meet both
goals of reachable poses by twisting the hip). There these methods pursue the position
alone (:func:`solve_oriented`), as they did before the rule, and say so through the
result's orientation error.

CCD and the Jacobian methods trade the two goals by the weight; where the wrist rule meets
both (to the position tolerance and ``angle_tolerance``) every weight's objective is zero
there, so those methods take its pose as their answer with 0 iterations, as they take
triangulation's pose where it meets a position goal, and iterate as before elsewhere
(:func:`seeded_by_wrist`; with their start option ``"triangulation"``, no stiffness and no
posture bias, which the rule ignores).

Conventions (:mod:`core.chain`): quaternions wxyz, Hamilton product; joint ``i``'s world
rotation ``W_i = W_{i−1} · rest_i · q_i`` in the chain's base frame, joint ``i + 1`` at
``p_i + W_i · offset_i``.

Written twice, pinned together by ``tests/core/test_wrist.py``: on arrays for any batch
(:func:`solve_with_wrist`, the method's own solve of the wrists), and for one target in
plain floats (:func:`pose_floats`, the wrist reached by :meth:`core.Solver.pose` of the
chain without its last joint: what a live solver calls on every frame, where numpy's
per-call cost would be most of the solve).
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from . import rotations as rot
from .chain import Chain
from .components import Quat, Vec, qangle, qconj, qmul, qrotate
from .kinematics import chain_floats, forward_kinematics, forward_kinematics_floats
from .limits import JointLimits
from .options import SolveOptions
from .problem import Problem
from .result import Solution
from .untwist import untwist

#: The methods that meet orientation goals by the wrist (their entry points hand such goals
#: to :func:`solve_with_wrist`).
WRIST_METHODS = frozenset({"triangulation", "fabrik"})

_UPPER: weakref.WeakKeyDictionary[Chain, Chain] = weakref.WeakKeyDictionary()


def swings_both_ways(limits: JointLimits) -> bool:
    """Whether a joint with ``limits`` can swing its link both ways: free, or a ball joint
    whose X and Z are not locked (ranges and a locked twist allowed)."""
    return limits.hinge_axis is None and not limits.lock[0] and not limits.lock[2]


def takes_orientation(chain: Chain) -> bool:
    """Whether ``chain``'s last joint :func:`swings_both_ways`: the wrist rule applies
    (module docstring)."""
    return swings_both_ways(chain.limits[-1])


def pursues_orientation(problem: Problem) -> bool:
    """Whether ``problem``'s goal has an orientation part (a target rotation weighted by
    ``position_weight < 1``) that the wrist rule meets (:func:`takes_orientation`)."""
    return (
        problem.target_rotations is not None
        and problem.options.position_weight < 1.0
        and takes_orientation(problem.chain)
    )


def solve_oriented(method: Callable[[Problem], Solution], problem: Problem) -> Solution:
    """A position-placing ``method``'s answer to ``problem``, whose goal has a target
    rotation: by the wrist where :func:`pursues_orientation`, else the position goal alone
    (the weight at ``1``, or a last joint that cannot take orientations)."""
    if pursues_orientation(problem):
        return solve_with_wrist(method, problem)
    return method(replace(problem, target_rotations=None))


def upper_chain(chain: Chain) -> Chain:
    """``chain`` without its last joint (``n ≥ 2``; cached per chain): the chain that
    reaches for the wrist."""
    upper = _UPPER.get(chain)
    if upper is None:
        upper = Chain(
            chain.offsets[:-1],
            chain.rest_rotations[:-1],
            chain.limits[:-1],
            chain.names[:-1],
            chain.stretch[:-1],
        )
        _UPPER[chain] = upper
    return upper


def solve_with_wrist(method: Callable[[Problem], Solution], problem: Problem) -> Solution:
    """A position-placing ``method``'s answer to a goal with an orientation part (module
    docstring): ``N`` targets of ``problem`` (``target_rotations (N, 4)`` set).

    Returns:
        The :class:`Solution`: rotations ``(N, n, 4)`` (``w ≥ 0``), their positions
        ``(N, n + 1, 3)``, the effector's orientation ``(N, 4)``, and the iterations of the
        method's solve of the wrists.
    """
    chain = problem.chain
    goal = problem.target_rotations
    assert goal is not None  # (pursues_orientation)
    n = chain.n_joints
    refined_rows: dict[int, list[Quat]] = {}  # (the poses refined on both goals, by row)
    if n == 1:
        upper_rotations = np.empty((problem.size, 0, 4))
        parent = np.broadcast_to(chain.rest_rotations[0], goal.shape)
        iterations = np.ones(problem.size, dtype=np.int64)
    else:
        upper = upper_chain(chain)
        wrist = problem.targets - rot.rotate(goal, chain.offsets[-1])
        reached = method(
            replace(
                problem,
                chain=upper,
                targets=wrist,
                target_rotations=None,
                initial=problem.initial[:, :-1],
            )
        )
        upper_rotations = untwist(upper, reached.rotations, reached.positions)
        iterations = reached.iterations
        if _swivels(chain) and problem.poles is None:
            angle_tolerance = problem.options.angle_tolerance
            for k, (pose, at, target, turn) in enumerate(
                zip(
                    upper_rotations.tolist(),
                    wrist.tolist(),
                    problem.targets.tolist(),
                    goal.tolist(),
                    strict=True,
                )
            ):
                kept = [(q[0], q[1], q[2], q[3]) for q in pose]
                if not _refuses(chain, kept, turn):
                    continue
                better = refined(chain, kept, target, turn, problem.tolerance, angle_tolerance)
                if better is None:
                    upper_rotations[k, 0] = swivel(chain, kept, at, turn)[0]
                else:
                    refined_rows[k] = better
        world = forward_kinematics(upper, upper_rotations)[1][:, -1]
        parent = rot.multiply(world, chain.rest_rotations[-1])
    last = chain.limits[-1].project(rot.multiply(rot.conjugate(parent), goal))
    rotations = np.concatenate((upper_rotations, last[:, None]), axis=1)
    for k, pose in refined_rows.items():
        rotations[k] = pose
    rotations = rot.positive_w(rotations)
    positions, frames = forward_kinematics(chain, rotations)
    return Solution(rotations, positions, iterations, effector_rotation=frames[:, -1])


def seeds_from_wrist(problem: Problem, start: str) -> bool:
    """Whether CCD or a Jacobian method whose start option is ``start`` takes the wrist
    pose where it meets both goals (:func:`seeded_by_wrist`): ``"triangulation"``, a goal
    the rule meets (:func:`pursues_orientation`), no stiffness and no posture bias."""
    return pursues_orientation(problem) and seeds_chain(problem.chain, problem.options, start)


def seeds_chain(chain: Chain, options: SolveOptions, start: str) -> bool:
    """:func:`seeds_from_wrist` for any goal with a weighted orientation on ``chain``."""
    return (
        start == "triangulation"
        and takes_orientation(chain)
        and options.posture_weight == 0.0
        and not any(any(lim.stiffness) for lim in chain.limits)
    )


def seeded_by_wrist(
    problem: Problem,
    reach: Callable[[Problem], Solution],
    iterate: Callable[[Problem], Solution],
) -> Solution:
    """``iterate``'s answer (CCD, a Jacobian method) to ``problem``, whose goal has an
    orientation part the wrist rule meets (:func:`pursues_orientation`): the wrist pose of
    ``reach`` (triangulation) with 0 iterations for the targets where it meets both goals,
    ``iterate``'s own solve of the others (module docstring)."""
    seed = solve_with_wrist(reach, problem)
    goal = problem.target_rotations
    assert goal is not None  # (pursues_orientation)
    assert seed.effector_rotation is not None  # (solve_with_wrist gives it)
    error = np.linalg.norm(seed.positions[:, -1] - problem.targets, axis=-1)
    angle = rot.angle(rot.multiply(rot.conjugate(goal), seed.effector_rotation))
    met = (error <= problem.tolerance) & (angle <= problem.options.angle_tolerance)
    rest = np.flatnonzero(~met)
    iterations = np.zeros(problem.size, dtype=np.int64)
    if not rest.size:
        return Solution(seed.rotations, seed.positions, iterations, seed.effector_rotation)
    other = iterate(problem.rows(rest))
    rotations, positions = seed.rotations.copy(), seed.positions.copy()
    rotations[rest], positions[rest], iterations[rest] = (
        other.rotations,
        other.positions,
        other.iterations,
    )
    effector = seed.effector_rotation.copy()
    effector[rest] = (
        forward_kinematics(problem.chain, other.rotations)[1][:, -1]
        if other.effector_rotation is None
        else other.effector_rotation
    )
    sigma = None
    if other.min_singular_value is not None:  # (no Jacobian seen where the seed met: ∞)
        sigma = np.full(problem.size, np.inf)
        sigma[rest] = other.min_singular_value
    return Solution(rotations, positions, iterations, effector, sigma)


def _last_turn(chain: Chain, upper: list[Quat], goal: Quat) -> Quat:
    """The turn the last joint needs for the ``goal`` orientation below the chain without it
    posed as ``upper``: ``(W_{n−2} · rest_{n−1})⁻¹ · R`` (module docstring)."""
    world = forward_kinematics_floats(upper_chain(chain), upper)[1][-1]
    return qmul(qconj(qmul(world, chain_floats(chain)[0][-1])), goal)


def _refuses(chain: Chain, upper: list[Quat], goal: Quat) -> bool:
    """Whether the last joint's limits refuse the turn ``goal`` asks of it below ``upper``
    (:meth:`~core.limits.JointLimits.beyond_floats` above zero, as :func:`swivel` tests)."""
    return chain.limits[-1].beyond_floats(_last_turn(chain, upper, goal)) > 0.0


#: :func:`refined`'s iteration: both goals weighed alike, the full Gauss–Newton step
#: (``β = 1``: the error falls quadratically near the answer, 1–5 updates, mostly 3–4,
#: where the hand of ``docs/natural.md`` turns; the Jacobian methods' default ``β = 0.5``
#: halves it per update, 17), each joint turning by at most 30° per update; updates in rounds of
#: ``_REFINE_ROUND``, at most ``_REFINE_UPDATES``, given up after a round that did not
#: divide the error (:func:`_merit`) by ``_REFINE_GAIN`` (where no pose meets both goals it
#: hovers about 0.1 of the reach and a radian; where one does it falls 4–50 times a round).
_REFINE_WEIGHT = 0.5
_REFINE_STEP = 1.0
_REFINE_MAX_STEP_DEG = 30.0
_REFINE_ROUND = 4
_REFINE_UPDATES = 20
_REFINE_GAIN = 2.0


@functools.lru_cache(maxsize=8)
def _refine_options(angle_tolerance: float) -> SolveOptions:
    """The options of one round of :func:`refined`'s damped least-squares iteration."""
    return SolveOptions(
        position_weight=_REFINE_WEIGHT,
        angle_tolerance=angle_tolerance,
        step=_REFINE_STEP,
        max_step_deg=_REFINE_MAX_STEP_DEG,
        max_iterations=_REFINE_ROUND,
        jacobian_start="initial",
    )


def _merit(chain: Chain, pose: list[Quat], target: Vec, goal: Quat) -> tuple[float, float, float]:
    """How far ``pose`` is from both goals: the effector's distance from ``target``
    (chain units), its frame's angle from ``goal`` (radians), and their sum with the
    distance in reaches (what :func:`refined`'s rounds must divide)."""
    positions, frames = forward_kinematics_floats(chain, pose)
    distance = math.dist(positions[-1], target)
    angle = qangle(qmul(qconj(goal), frames[-1]))
    return distance, angle, distance / chain.reach + angle


def refined(
    chain: Chain,
    upper: list[Quat],
    target: Vec,
    goal: Quat,
    tolerance: float,
    angle_tolerance: float,
) -> list[Quat] | None:
    """The pose whose chain without its last joint is ``upper`` (``n − 1`` rotations, the
    wrist reached) and whose last joint takes the turn ``goal`` asks of it kept within its
    limits, refined until it meets both goals: the effector at ``target`` (3 floats, base
    frame) to ``tolerance`` and its frame within ``angle_tolerance`` radians of ``goal``
    (wxyz). The damped least-squares rule of :mod:`core.jacobian` (eq. of
    ``core.jacobian_step.damped_step``: ``ΔΦ = Jᵀ (J Jᵀ + λ² I)⁻¹ Δe``) on the 6-row pose
    goal, every joint kept within its limits after each update
    (:func:`core.jacobian_single.solve_single`, :func:`_refine_options`). Returns the
    ``n`` rotations (``w ≥ 0``), or ``None`` where the iteration ends without meeting
    both goals."""
    from .jacobian_single import solve_single  # (it builds on triangulation, and so on this)

    last = chain.limits[-1].project_floats(_last_turn(chain, upper, goal))
    pose = [*upper, last]
    merit = _merit(chain, pose, target, goal)[2]
    problem = Problem(
        chain,
        np.array([target], dtype=np.float64),
        np.array([goal], dtype=np.float64),
        None,
        np.array([pose], dtype=np.float64),  # (read by nothing with these options)
        tolerance,
        _refine_options(angle_tolerance),
    )
    for _ in range(_REFINE_UPDATES // _REFINE_ROUND):
        sol = solve_single(problem, "dls", [list(q) for q in pose])
        pose = [(q[0], q[1], q[2], q[3]) for q in sol.rotations[0].tolist()]
        distance, angle, now = _merit(chain, pose, target, goal)
        if distance <= tolerance and angle <= angle_tolerance:
            return [(-q[0], -q[1], -q[2], -q[3]) if q[0] < 0.0 else q for q in pose]
        if not now * _REFINE_GAIN < merit:
            break
        merit = now
    return None


#: The swivel's samples over a full turn, and its bisection steps toward the least angle.
_SWIVELS = 48
_BISECTIONS = 52


def _swivels(chain: Chain) -> bool:
    """Whether :func:`swivel` can turn anything: a last ball joint with limits, and a root
    that is free or a ball joint (a hinge root cannot turn about the root–wrist line)."""
    last, root = chain.limits[-1], chain.limits[0]
    return (
        chain.n_joints >= 2
        and not last.is_free
        and last.kind == "ball"
        and (root.is_free or root.kind == "ball")
    )


def swivel(chain: Chain, upper: list[Quat], wrist: Vec, goal: Quat) -> list[Quat]:
    """The chain without its last joint (rotations ``upper``, ``n − 1`` quaternions) turned
    about the line from the root to the ``wrist`` by the least angle at which the last
    joint's limits allow the turn the ``goal`` asks of it, and the root's limits the root's
    new rotation; ``upper`` itself where no turn is needed or none allows it.

    Turning the whole pose about that line keeps every joint's rotation but the root's and
    moves no point of the line, the wrist included (nor the distance of the chain's end from
    it). Where the last joint refuses the turn at the pose as solved (its limits'
    :meth:`~core.limits.JointLimits.beyond_floats` above zero), :data:`_SWIVELS` angles over
    a full turn are tried outward from it, both ways, and the boundary between the last
    refused and the first allowed one is bisected (:data:`_BISECTIONS` steps, to rounding):
    the swivel grows from zero as a goal leaves what the pose allows, so the pose follows it
    without a jump while one side stays the nearer."""
    rests, _ = chain_floats(chain)
    last, root = chain.limits[-1], chain.limits[0]
    frame = forward_kinematics_floats(upper_chain(chain), upper)[1][-1]
    end = qmul(frame, rests[-1])
    rest0 = rests[0]
    base = qmul(rest0, upper[0])  # (W_0: the root's frame; its parent is the base frame)
    norm = math.sqrt(wrist[0] * wrist[0] + wrist[1] * wrist[1] + wrist[2] * wrist[2])
    if not norm > 0.0:
        return upper
    axis = (wrist[0] / norm, wrist[1] / norm, wrist[2] / norm)

    def turned(psi: float) -> tuple[Quat, bool]:
        s = math.sin(0.5 * psi)
        spin = (math.cos(0.5 * psi), s * axis[0], s * axis[1], s * axis[2])
        q0 = qmul(qconj(rest0), qmul(spin, base))
        allowed = last.beyond_floats(qmul(qconj(qmul(spin, end)), goal)) <= 0.0 and (
            root.is_free or root.beyond_floats(q0) <= 0.0
        )
        return q0, allowed

    if turned(0.0)[1]:
        return upper
    step = 2.0 * math.pi / _SWIVELS
    for k in range(1, _SWIVELS // 2 + 1):
        for sign in (1.0, -1.0):
            if not turned(sign * k * step)[1]:
                continue
            out, inside = sign * (k - 1) * step, sign * k * step
            for _ in range(_BISECTIONS):
                middle = 0.5 * (out + inside)
                if turned(middle)[1]:
                    inside = middle
                else:
                    out = middle
            return [turned(inside)[0], *upper[1:]]
    return upper


#: The chain without its last joint reaching for a point (and pole): its rotations (``n − 1``
#: × 4 floats) and joint positions; :meth:`core.Solver.pose` of that chain.
Reach = Callable[[Vec, Vec | None], tuple[list[list[float]], list[list[float]]]]


def pose_floats(
    chain: Chain,
    reach: Reach,
    target: Vec,
    goal: Quat,
    pole: Vec | None,
    tolerance: float,
    angle_tolerance: float,
) -> tuple[list[list[float]], list[Vec], float]:
    """:func:`solve_with_wrist` for one target in plain floats: ``target`` (3 floats) and the
    unit ``goal`` orientation (4 floats, wxyz) in the base frame, ``pole`` or ``None``;
    ``reach`` solves the chain without its last joint (``n ≥ 2``); ``tolerance`` (absolute,
    chain units) and ``angle_tolerance`` (radians) are the problem's, for :func:`refined`.
    Returns the ``n`` rotations (lists of 4 floats, ``w ≥ 0``), the ``n + 1`` joint
    positions and the angle (radians) from the goal to the last joint's frame
    (:func:`core.rotations.angle`)."""
    rests, offsets = chain_floats(chain)
    dx, dy, dz = qrotate(goal, offsets[-1])
    wrist = (target[0] - dx, target[1] - dy, target[2] - dz)
    rotations, _ = reach(wrist, pole)
    upper: list[Quat] = [(q[0], q[1], q[2], q[3]) for q in rotations]
    pose = None
    if _swivels(chain) and pole is None and _refuses(chain, upper, goal):
        pose = refined(chain, upper, target, goal, tolerance, angle_tolerance)
        if pose is None:
            upper = swivel(chain, upper, wrist, goal)
    if pose is None:
        world = forward_kinematics_floats(upper_chain(chain), upper)[1][-1]
        last = chain.limits[-1].project_floats(qmul(qconj(qmul(world, rests[-1])), goal))
        pose = [*upper, last]
    positions, frames = forward_kinematics_floats(chain, pose)
    angle = qangle(qmul(qconj(goal), frames[-1]))
    return [[-c for c in q] if q[0] < 0.0 else list(q) for q in pose], positions, angle


__all__ = [
    "WRIST_METHODS",
    "pose_floats",
    "pursues_orientation",
    "refined",
    "seeded_by_wrist",
    "seeds_chain",
    "seeds_from_wrist",
    "solve_oriented",
    "solve_with_wrist",
    "swings_both_ways",
    "swivel",
    "takes_orientation",
    "upper_chain",
]
