# SPDX-License-Identifier: GPL-3.0-or-later
"""Orientation goals met by the wrist (core/wrist.py) for triangulation and FABRIK: checked
by forward kinematics of the answers, against the rule written out independently, and the
one-target float path against the batch."""

from __future__ import annotations

import math

import numpy as np
import pytest
from limited_chains import admissible_poses, random_limited_chain, shoulder_chain

from core import SolveOptions, Solver, forward_kinematics, solve
from core import rotations as rot
from core.chain import Chain
from core.errors import SolveInputError
from core.limits import FREE, JointLimits
from core.wrist import WRIST_METHODS, upper_chain

METHODS = sorted(WRIST_METHODS)
SEEDED = ["ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls"]
ORIENTED = SolveOptions(position_weight=0.5)


def _free_chain(rng: np.random.Generator, n: int) -> Chain:
    offsets = np.column_stack(
        [rng.normal(0.0, 0.1, n), rng.uniform(0.3, 1.0, n), rng.normal(0.0, 0.1, n)]
    )
    rests = rot.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.3 * rng.normal(size=(n, 4)))
    return Chain(offsets, rest_rotations=rests)


def _limited_free_hand(rng: np.random.Generator, n: int) -> Chain:
    """A random limited chain whose last joint (the hand) is free."""
    chain = random_limited_chain(rng, n)
    return chain.with_limits([*chain.limits[:-1], FREE])


def _goals(chain: Chain, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Targets and orientations of the effector frame ``(size, 3)``, ``(size, 4)`` from the
    forward kinematics of random admissible poses: both goals met by some pose."""
    positions, frames = forward_kinematics(chain, admissible_poses(rng, chain, size))
    return positions[:, -1], frames[:, -1]


def _angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return rot.angle(rot.multiply(rot.conjugate(a), b))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("limited", "n"),
    [(False, 1), (False, 2), (False, 3), (False, 5), (True, 2), (True, 3), (True, 5)],
)
def test_goals_a_pose_meets_are_met_in_position_and_orientation(
    method: str, limited: bool, n: int
) -> None:
    """Where some pose meets both goals and the last joint is free, both are met: the
    effector's frame (forward kinematics of the answer) within 1e-9 rad of the goal, the
    effector within the tolerance wherever the method reaches the wrist (FABRIK's rounds
    may stop short of it, as for that point alone: all but a few); limited joints within
    their limits."""
    rng = np.random.default_rng(100 * n + 10 * limited + len(method))
    chain = _limited_free_hand(rng, n) if limited else _free_chain(rng, n)
    targets, goals = _goals(chain, rng, 40)
    res = solve(chain, targets, method=method, target_rotation=goals, options=ORIENTED)
    positions, frames = forward_kinematics(chain, res.rotations)
    tolerance = 1e-6 * chain.reach
    met = np.linalg.norm(positions[:, -1] - targets, axis=-1) <= tolerance * (1.0 + 1e-9)
    assert np.count_nonzero(met) >= (40 if method == "triangulation" else 38)
    assert np.all(_angle(frames[:, -1], goals) <= 1e-9)
    for i, lim in enumerate(chain.limits):
        assert np.all(lim.violation(res.rotations[:, i]) <= 1e-9)


def _last_turn(chain: Chain, upper: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """The last joint's turn ``(W · rest)⁻¹ · R`` for the ``goal`` below the chain without it
    posed as ``upper``."""
    world = forward_kinematics(upper_chain(chain), upper)[1][-1]
    return rot.multiply(rot.conjugate(rot.multiply(world, chain.rest_rotations[-1])), goal)


def _limited_hand_chain(rng: np.random.Generator) -> Chain:
    """A random limited chain of 2–4 joints whose last joint is a ball joint limited in X
    and Z (Blender's ellipse; ranges about 0)."""
    n = int(rng.integers(2, 5))
    x, z = rng.uniform(0.05, 1.0, 2), rng.uniform(0.05, 1.0, 2)
    hand = JointLimits(ranges=((-x[0], x[1]), None, (-z[0], z[1])))
    chain = random_limited_chain(rng, n)
    return chain.with_limits([*chain.limits[:-1], hand])


#: The refinement written out on the batch path (``core.wrist.refined``'s rule): rounds of 4
#: damped least-squares updates on both goals weighed alike, the full step, 30° at most per
#: joint and update, until both goals are met, for at most 5 rounds, stopped after a round
#: that did not halve ``distance / reach + angle``.
REFINE = SolveOptions(
    position_weight=0.5, step=1.0, max_step_deg=30.0, max_iterations=4, jacobian_start="initial"
)


def _refined_in_rounds(
    chain: Chain, start: np.ndarray, target: np.ndarray, goal: np.ndarray
) -> np.ndarray | None:
    tolerance = 1e-6 * chain.reach

    def merit(pose: np.ndarray) -> tuple[float, float]:
        positions, frames = forward_kinematics(chain, pose)
        return float(np.linalg.norm(positions[-1] - target)), float(_angle(goal, frames[-1]))

    pose = start
    distance, angle = merit(pose)
    for _ in range(5):
        pose = solve(
            chain,
            target,
            method="jacobian_dls",
            target_rotation=goal,
            initial=pose,
            options=REFINE,
        ).rotations
        now = merit(pose)
        if now[0] <= tolerance and now[1] <= REFINE.angle_tolerance:
            return pose
        if not 2.0 * (now[0] / chain.reach + now[1]) < distance / chain.reach + angle:
            return None
        distance, angle = now
    return None


@pytest.mark.parametrize("method", METHODS)
def test_the_rest_of_the_chain_is_its_position_only_pose_for_the_wrist(method: str) -> None:
    """The rule itself, written out: the chain without its last joint takes
    :meth:`Solver.pose` of the wrist ``t − R·offset`` (position only, untwisted), and the
    last joint the turn ``(W · rest)⁻¹ · R`` — here a wrist limited in X and Z (Blender's
    ellipse) that refuses many of those turns (the goals come from poses with a free
    wrist). Where it refuses, that pose with the turn kept within the limits is refined on
    both goals by damped least squares (the batch path's Jacobian iteration in rounds:
    :func:`_refined_in_rounds`), and both goals are met; where that misses, the pose swivels
    about the root–wrist line (the root's rotation alone changes, the wrist stays) by the
    least angle at which the wrist allows the turn (a hair less swivel is refused), and
    both goals are met; where no swivel helps either, the pose stays and the turn is
    projected onto the limits."""
    counts = {"allowed": 0, "refined": 0, "swivelled": 0, "stayed": 0}
    rng = np.random.default_rng(7)
    free_arm = _free_chain(rng, 3)
    hand = JointLimits(ranges=((-0.4, 0.3), None, (-0.3, 0.2)))
    free_arm = free_arm.with_limits([FREE, FREE, hand])
    free_goals = _goals(free_arm.with_limits([FREE] * 3), rng, 30)
    rng = np.random.default_rng(45)
    limited_arm = _limited_hand_chain(rng)
    limited_goals = _goals(limited_arm.with_limits([*limited_arm.limits[:-1], FREE]), rng, 20)
    for chain, (targets, goals) in ((free_arm, free_goals), (limited_arm, limited_goals)):
        last = chain.limits[-1]
        upper_ = upper_chain(chain)
        solver = Solver(chain, method, ORIENTED)  # (the batch: test_one_target_in_floats_…)
        upper = Solver(upper_, method, ORIENTED.replace(tolerance=1e-6 * chain.reach))
        rest0 = chain.rest_rotations[0]
        for k in range(len(targets)):
            wrist = targets[k] - rot.rotate(goals[k], chain.offsets[-1])
            expected = np.array(upper.pose(wrist).rotations)
            one = solver.pose(targets[k], target_rotation=goals[k])
            got = np.array(one.rotations)
            if last.beyond(_last_turn(chain, expected, goals[k])[None])[0] <= 0.0:
                counts["allowed"] += 1
                np.testing.assert_allclose(got[:-1], expected, atol=1e-9)
                np.testing.assert_allclose(
                    got[-1], last.project(_last_turn(chain, got[:-1], goals[k])), atol=1e-9
                )
                continue
            start = np.vstack([expected, last.project(_last_turn(chain, expected, goals[k]))])
            refined = _refined_in_rounds(chain, start, targets[k], goals[k])
            if refined is not None:
                counts["refined"] += 1
                # (the float and batch iterations part by rounding, which the null space of
                # the goal on a redundant chain keeps: ~1e-6 here; another rule: degrees)
                np.testing.assert_allclose(got, rot.positive_w(refined), atol=1e-5)
                positions, frames = forward_kinematics(chain, got)
                assert np.linalg.norm(positions[-1] - targets[k]) <= 1e-6 * chain.reach
                assert _angle(goals[k], frames[-1]) <= ORIENTED.angle_tolerance
                for i, lim in enumerate(chain.limits):
                    assert lim.violation(got[i]) <= 1e-9
                continue
            np.testing.assert_allclose(got[1:-1], expected[1:], atol=1e-9)
            np.testing.assert_allclose(
                got[-1], last.project(_last_turn(chain, got[:-1], goals[k])), atol=1e-9
            )
            if np.allclose(got[0], expected[0], rtol=0.0, atol=1e-9):
                counts["stayed"] += 1
                continue
            counts["swivelled"] += 1
            np.testing.assert_allclose(  # (turned about the line to the wrist aimed at)
                forward_kinematics(upper_, got[:-1])[0][-1],
                forward_kinematics(upper_, expected)[0][-1],
                atol=1e-6 * chain.reach,
            )
            spin = rot.multiply(
                rot.multiply(rest0, got[0]), rot.conjugate(rot.multiply(rest0, expected[0]))
            )
            spin = rot.positive_w(spin)
            axis = spin[1:] / np.linalg.norm(spin[1:])
            assert np.linalg.norm(np.cross(axis, wrist / np.linalg.norm(wrist))) <= 1e-7
            assert last.beyond(_last_turn(chain, got[:-1], goals[k])[None])[0] <= 1e-12
            less = rot.from_axis_angle(axis, (1.0 - 1e-6) * rot.angle(spin))
            fewer = expected.copy()
            fewer[0] = rot.multiply(
                rot.conjugate(rest0), rot.multiply(less, rot.multiply(rest0, expected[0]))
            )
            root = chain.limits[0]  # (a hair less is refused by the wrist or the root)
            assert (
                max(
                    last.beyond(_last_turn(chain, fewer, goals[k])[None])[0],
                    0.0 if root.is_free else root.beyond(fewer[:1])[0],
                )
                > 0.0
            )
            np.testing.assert_allclose(one.points[-1], targets[k], atol=1e-6 * chain.reach)
    # (every branch of the rule seen: the refinement where it meets, the swivel where it
    # misses and a swivel helps, the projection where neither does)
    assert counts["allowed"] >= 3
    assert counts["refined"] >= 20
    assert counts["swivelled"] >= 2
    assert counts["stayed"] >= 5


#: ``docs/natural.md``'s ``hand_turned`` arm in its base frame (upper arm, forearm, hand
#: of 0.28, 0.28 and 0.10 m as Blender builds those bones; shoulder and elbow free), the
#: wrist limited to −60°…60° in X and −25°…30° in Z.
ARM = Chain(
    [[0.0, 0.281603, 0.0], [0.0, 0.281603, 0.0], [0.0, 0.100499, 0.0]],
    rest_rotations=rot.normalize(
        [
            [0.7061, -0.037719, 0.037719, -0.7061],
            [0.994309, 0.106533, 0.0, 0.0],
            [0.994679, -0.103019, 0.0, 0.0],
        ]
    ),
    limits=[
        FREE,
        FREE,
        JointLimits(ranges=((-math.pi / 3.0, math.pi / 3.0), None, (-0.436332, 0.523599))),
    ],
)


@pytest.mark.parametrize("method", [*METHODS, *SEEDED])
def test_the_arm_follows_a_turning_hand_without_jumps(method: str) -> None:
    """The hand on a loop at 50–90 % of the reach, its rest orientation turned by a smooth
    wobble (``hand_turned``, 240 frames): every goal is met in both parts, and no joint
    turns by more than 10° from one frame to the next (Blender's IK: 17.4°). The least
    swivel alone jumped 137° where the nearest allowed angle switched sides (5 frames)."""
    frames = 240
    t = np.linspace(0.0, 2.0 * math.pi, frames, endpoint=False)
    a, b = 0.7 * np.sin(t), 0.42 * np.sin(2.0 * t + 0.5)
    along = np.stack([np.cos(a) * np.cos(b), -np.cos(a) * np.sin(b), np.sin(a)], axis=-1)
    targets = along * ((0.7 - 0.2 * np.cos(3.0 * t)) * ARM.reach)[:, None]
    wobble = np.stack([0.6 * np.sin(t), 0.4 * np.sin(2.0 * t), 0.5 * np.cos(t)], axis=-1)
    rest_hand = forward_kinematics(ARM, rot.identity((3,)))[1][-1]
    goals = rot.multiply(rest_hand, rot.from_euler(wobble, "XYZ"))
    solver = Solver(ARM, method, ORIENTED)
    poses = np.array(
        [solver.pose(tg, target_rotation=g).rotations for tg, g in zip(targets, goals, strict=True)]
    )
    positions, frames_ = forward_kinematics(ARM, poses)
    assert np.all(np.linalg.norm(positions[:, -1] - targets, axis=-1) <= 1e-6 * ARM.reach)
    assert np.all(_angle(goals, frames_[:, -1]) <= ORIENTED.angle_tolerance)
    steps = _angle(poses, np.roll(poses, 1, axis=0))  # (the loop closes: frame 0 after the last)
    assert np.degrees(steps.max()) <= 10.0


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("limited", [False, True])
def test_one_target_in_floats_is_the_batch(method: str, limited: bool) -> None:
    """:meth:`Solver.pose` (floats) and the batch path for the same target
    (:func:`core.solve`, arrays) agree to rounding, with poles and without, some targets
    out of reach."""
    rng = np.random.default_rng(31 + limited + len(method))
    chain = _limited_free_hand(rng, 4) if limited else _free_chain(rng, 4)
    targets, goals = _goals(chain, rng, 20)
    targets = targets * rng.uniform(0.8, 1.3, size=(20, 1))  # (some out of reach)
    solver = Solver(chain, method, ORIENTED)
    for pole in (None, np.array([0.3, -0.5, 0.8]) * chain.reach):
        for k in range(len(targets)):
            one = solver.pose(targets[k], pole=pole, target_rotation=goals[k])
            batch = solve(
                chain,
                targets[k],
                method=method,
                pole=pole,
                target_rotation=goals[k],
                options=ORIENTED,
            )
            np.testing.assert_allclose(one.rotations, batch.rotations, atol=1e-9)
            np.testing.assert_allclose(one.points, batch.positions, atol=1e-9 * chain.reach)
            assert all(q[0] >= 0.0 for q in one.rotations)


@pytest.mark.parametrize("method", METHODS)
def test_a_goal_weighted_to_position_alone_is_the_position_goal(method: str) -> None:
    rng = np.random.default_rng(5)
    chain = _free_chain(rng, 3)
    targets, goals = _goals(chain, rng, 10)
    alone = SolveOptions(position_weight=1.0)
    with_goal = solve(chain, targets, method=method, target_rotation=goals, options=alone)
    without = solve(chain, targets, method=method, options=alone)
    np.testing.assert_array_equal(with_goal.rotations, without.rotations)
    solver = Solver(chain, method, alone)
    for k in range(len(targets)):
        one = solver.pose(targets[k], target_rotation=goals[k])
        np.testing.assert_allclose(one.rotations, solver.pose(targets[k]).rotations, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_a_goal_rotation_not_a_quaternion_is_refused(method: str) -> None:
    chain = _free_chain(np.random.default_rng(2), 2)
    solver = Solver(chain, method, ORIENTED)
    target = [0.2, 0.5, 0.1]
    for bad, says in (
        ([0.0, 0.0, 0.0, 0.0], "non-zero quaternions"),
        ([1.0, math.nan, 0.0, 0.0], "finite"),
        ([1.0, 0.0, 0.0], "4 finite numbers"),
        ("wxyz", "4 finite numbers"),
    ):
        with pytest.raises(SolveInputError, match=says):
            solver.pose(target, target_rotation=bad)
    # (an unnormalised goal is the rotation it stands for)
    q = rot.normalize(np.array([0.9, 0.2, -0.3, 0.1]))
    np.testing.assert_allclose(
        solver.pose(target, target_rotation=3.0 * q).rotations,
        solver.pose(target, target_rotation=q).rotations,
        atol=1e-12,
    )


@pytest.mark.parametrize("method", METHODS)
def test_a_last_hinge_pursues_the_position_alone_and_says_so(method: str) -> None:
    """A last joint that cannot take orientations (a knee-like hinge ending a 2-bone leg, or
    a ball joint with Z locked) leaves the goal to the position: the position-only answer
    bit for bit (one target, floats and arrays), the orientation's miss reported
    (``angle_error``, not ``converged``). The wrist rule there put the leg 79° and a tenth
    of its length off (CCD and DLS meet these goals)."""
    knee = JointLimits(lock=(False, True, True), ranges=((0.0, math.radians(150)), None, None))
    no_z = JointLimits(lock=(False, False, True))
    for last in (knee, no_z):
        chain = Chain.from_offsets([[0.0, 0.0, 0.5], [0.0, -0.05, 0.5]], limits=[FREE, last])
        rng = np.random.default_rng(1)
        targets, goals = _goals(chain, rng, 20)
        oriented = solve(chain, targets, method=method, target_rotation=goals, options=ORIENTED)
        alone = solve(chain, targets, method=method)
        np.testing.assert_array_equal(oriented.rotations, alone.rotations)
        assert oriented.angle_error is not None
        missed = oriented.angle_error > ORIENTED.angle_tolerance
        assert np.count_nonzero(missed) >= 15
        assert not np.any(oriented.converged[missed])
        solver, plain = Solver(chain, method, ORIENTED), Solver(chain, method)
        for k in range(5):
            one = solver.pose(targets[k], target_rotation=goals[k])
            assert one == plain.pose(targets[k])
        with pytest.raises(SolveInputError, match="finite"):
            solver.pose(targets[0], target_rotation=[1.0, math.inf, 0.0, 0.0])


@pytest.mark.parametrize("method", SEEDED)
def test_the_weighing_methods_take_the_wrist_pose_where_it_meets_both_goals(method: str) -> None:
    """CCD and the Jacobian methods answer a goal the wrist rule meets in both parts with
    that pose and 0 iterations (every weight's objective is zero there); the targets it
    misses (here: wrists pushed out of reach) get their own solve, the same as solving
    those targets alone; with their start option ``"initial"`` (the papers' protocol)
    they iterate from the start pose as before."""
    rng = np.random.default_rng(13 + len(method))
    chain = _free_chain(rng, 3)
    targets, goals = _goals(chain, rng, 12)
    targets[8:] *= 1.6  # (beyond reach: neither the wrist nor anything meets these)
    options = SolveOptions(position_weight=0.5, max_iterations=30)
    res = solve(chain, targets, method=method, target_rotation=goals, options=options)
    wrist = solve(chain, targets, method="triangulation", target_rotation=goals, options=options)
    np.testing.assert_array_equal(res.rotations[:8], wrist.rotations[:8])
    assert np.all(res.iterations[:8] == 0)
    assert np.all(res.converged[:8])
    alone = solve(chain, targets[8:], method=method, target_rotation=goals[8:], options=options)
    np.testing.assert_allclose(res.rotations[8:], alone.rotations, atol=1e-12)
    np.testing.assert_array_equal(res.iterations[8:], alone.iterations)
    solver = Solver(chain, method, options)
    for k in (0, 9):
        one = solver.pose(targets[k], target_rotation=goals[k])
        batch = solve(chain, targets[k], method=method, target_rotation=goals[k], options=options)
        np.testing.assert_allclose(one.rotations, batch.rotations, atol=1e-9)
    protocol = options.replace(ccd_start="initial", jacobian_start="initial")
    paper = solve(chain, targets[:8], method=method, target_rotation=goals[:8], options=protocol)
    assert np.all(paper.iterations > 0)


@pytest.mark.parametrize("method", METHODS)
def test_a_limited_wrist_swivels_the_arm_to_goals_a_pose_meets(method: str) -> None:
    """``bench_solvers``' 3-bone ball chain (shoulder and wrist limited like Blender's *Limit
    X*/*Limit Z*, a knee between): goals from admissible poses are met in both parts, the
    pose refined on both goals where the wrist as first solved refuses the turn (16 of
    these 30 met without, 30 with it), to the tolerances."""
    chain = shoulder_chain(3)
    targets, goals = _goals(chain, np.random.default_rng(4), 30)
    res = solve(chain, targets, method=method, target_rotation=goals, options=ORIENTED)
    assert np.all(res.converged)
    assert res.angle_error is not None
    assert np.all(res.angle_error <= ORIENTED.angle_tolerance)
    assert np.count_nonzero(res.angle_error <= 1e-12) >= 14  # (those met as first solved)
    for i, lim in enumerate(chain.limits):
        assert np.all(lim.violation(res.rotations[:, i]) <= 1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_a_pole_keeps_its_plane_where_the_wrist_refuses(method: str) -> None:
    """With a pole the arm keeps the pole's bend plane: no swivel (the chain without its
    last joint as it reaches the wrist with that pole), the last joint's turn projected
    onto its limits — on one target and a batch alike."""
    chain = shoulder_chain(3)
    targets, goals = _goals(chain, np.random.default_rng(4), 30)
    pole = np.array([0.0, -1.0, 0.3])
    res = solve(chain, targets, method=method, target_rotation=goals, pole=pole, options=ORIENTED)
    upper = Solver(upper_chain(chain), method, ORIENTED.replace(tolerance=1e-6 * chain.reach))
    solver = Solver(chain, method, ORIENTED)
    refused = 0
    for k in range(len(targets)):
        wrist = targets[k] - rot.rotate(goals[k], chain.offsets[-1])
        expected = np.array(upper.pose(wrist, pole).rotations)
        np.testing.assert_allclose(res.rotations[k, :2], expected, atol=1e-9)
        one = solver.pose(targets[k], pole=pole, target_rotation=goals[k])
        np.testing.assert_allclose(one.rotations, res.rotations[k], atol=1e-9)
        refused += bool(res.angle_error is not None and res.angle_error[k] > 1e-6)
    assert refused >= 5  # (where a swivel would have turned the arm away from the pole)
