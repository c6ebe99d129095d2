# SPDX-License-Identifier: GPL-3.0-or-later
"""The prepared solver (core/solver.py, core.Solver) against core.solve: the same numbers
for every method on random chains, targets, poles and limits; inputs checked once."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from core import METHODS, SolveOptions, Solver, forward_kinematics, solve
from core import rotations as rot
from core.chain import Chain
from core.errors import SolveInputError
from core.limits import JointLimits

HINGE_X = JointLimits(lock=(False, True, True))


def _random_chain(rng: np.random.Generator, limited: bool) -> Chain:
    n = int(rng.integers(2, 5))
    offsets = np.column_stack(
        [rng.normal(0.0, 0.05, n), rng.uniform(0.3, 1.0, n), rng.normal(0.0, 0.05, n)]
    )
    rests = rot.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.2 * rng.normal(size=(n, 4)))
    limits = [HINGE_X if limited and i == n - 1 else JointLimits() for i in range(n)]
    return Chain(offsets, rest_rotations=rests, limits=limits)


def _targets(rng: np.random.Generator, chain: Chain, size: int) -> np.ndarray:
    t = rng.normal(size=(size, 3))
    return t * (rng.uniform(0.2, 1.2, size) * chain.reach / np.linalg.norm(t, axis=1))[:, None]


@pytest.mark.parametrize("limited", [False, True])
@pytest.mark.parametrize("method", list(METHODS))
def test_solver_gives_the_numbers_of_solve(method: str, limited: bool) -> None:
    rng = np.random.default_rng(sum(map(ord, method)) + limited)
    options = SolveOptions(max_iterations=60)
    for _ in range(3):
        chain = _random_chain(rng, limited)
        solver = Solver(chain, method, options)
        targets = _targets(rng, chain, 4)
        poles = rng.normal(size=(4, 3)) * chain.reach
        batch = solver.solve(targets, pole=poles)
        reference = solve(chain, targets, method=method, pole=poles, options=options)
        np.testing.assert_allclose(batch.rotations, reference.rotations, atol=1e-9)
        np.testing.assert_allclose(batch.positions, reference.positions, atol=1e-9)
        for k in range(2):
            pole = poles[k] if k else None
            alone = solve(chain, targets[k], method=method, pole=pole, options=options)
            rotations, positions = solver.solve_one(targets[k].tolist(), pole)
            np.testing.assert_allclose(rotations, alone.rotations, atol=1e-9)
            np.testing.assert_allclose(positions, alone.positions, atol=1e-9 * chain.reach)
            points = solver.solve_points(targets[k].tolist(), pole)
            np.testing.assert_allclose(points, alone.positions, atol=1e-9 * chain.reach)


@pytest.mark.parametrize("method", list(METHODS))
def test_solver_with_an_orientation_goal_gives_the_numbers_of_solve(method: str) -> None:
    rng = np.random.default_rng(17)
    chain = _random_chain(rng, False)
    options = SolveOptions(max_iterations=40, position_weight=0.5)
    target = _targets(rng, chain, 1)[0]
    goal = rot.normalize(rng.normal(size=4))
    one = Solver(chain, method, options).solve_rotation(target, goal)
    reference = solve(chain, target, method=method, target_rotation=goal, options=options)
    np.testing.assert_allclose(one.rotations[0], reference.rotations, atol=1e-9)
    np.testing.assert_allclose(one.positions[0], reference.positions, atol=1e-9)


def test_solver_checks_chain_method_and_options_once() -> None:
    chain = Chain.from_lengths([1.0, 1.0])
    with pytest.raises(SolveInputError, match="unknown method"):
        Solver(chain, "newton")
    with pytest.raises(SolveInputError, match="SolveOptions"):
        Solver(chain, "ccd", {"tolerance": 0.1})  # type: ignore[arg-type]
    with pytest.raises(SolveInputError, match="Chain"):
        Solver([[0.0, 1.0, 0.0]], "ccd")  # type: ignore[arg-type]
    solver = Solver(chain)
    assert solver.method == "triangulation"
    assert solver.options == SolveOptions()
    with pytest.raises(SolveInputError, match="target"):
        solver.solve_one([1.0, float("nan"), 0.0])


def _mixed_chain(rng: np.random.Generator, kind: int) -> Chain:
    """Random offsets and rest frames: every joint free (kind 0), a last hinge (1: nothing
    after it to re-aim), or a hinge root followed by free joints (2: the untwist re-aims
    those and keeps the root's rotation)."""
    chain = _random_chain(rng, kind == 1)
    if kind != 2:
        return chain
    limits = [HINGE_X] + [JointLimits()] * (chain.n_joints - 1)
    return Chain(chain.offsets, rest_rotations=chain.rest_rotations, limits=limits)


def _pure_swings(chain: Chain, rotations: np.ndarray, positions: np.ndarray) -> None:
    """Oracle of the final pose: forward kinematics of the rotations gives the positions,
    and every free joint after the last limited one is the shortest swing from its rest
    link direction to where its next joint is (no twist about its link)."""
    got, frames = forward_kinematics(chain, rotations)
    np.testing.assert_allclose(got, positions, atol=1e-9 * chain.reach)
    first = chain.n_joints
    while first > 0 and chain.limits[first - 1].is_free:
        first -= 1
    for i in range(first, chain.n_joints):
        parent = frames[i - 1] if i else rot.identity()
        frame = rot.multiply(parent, chain.rest_rotations[i])
        link = rot.rotate(rot.conjugate(frame), got[i + 1] - got[i])
        swing = rot.between(chain.offsets[i], link)
        assert abs(abs(float(np.dot(rotations[i], swing))) - 1.0) < 1e-9


@pytest.mark.parametrize("method", list(METHODS))
def test_pose_is_the_solve_without_the_free_twist(method: str) -> None:
    rng = np.random.default_rng(sum(map(ord, method)) + 7)
    options = SolveOptions(max_iterations=60)
    for kind in (0, 1, 2, 2):
        chain = _mixed_chain(rng, kind)
        solver = Solver(chain, method, options)
        targets = _targets(rng, chain, 3)
        poles = rng.normal(size=(3, 3)) * chain.reach
        batch = solver.poses(targets, pole=poles)
        raw = solve(chain, targets, method=method, pole=poles, options=options)
        # The joints stay where the method put them; only the twist goes.
        np.testing.assert_allclose(batch.positions, raw.positions, atol=1e-12)
        np.testing.assert_allclose(batch.error, raw.error, atol=1e-12)
        for k in range(3):
            _pure_swings(chain, batch.rotations[k], batch.positions[k])
            one = solver.pose(targets[k].tolist(), poles[k].tolist())
            assert one.scales is None
            # Where the target is missed (out of reach, or unreachable within the limits),
            # the one-target and batch iterations settle on a flat valley and agree to
            # 1e-6; where it is met, to rounding.
            tol = 1e-9 if batch.converged[k] else 1e-6
            np.testing.assert_allclose(one.rotations, batch.rotations[k], atol=tol)
            np.testing.assert_allclose(one.points, batch.positions[k], atol=tol * chain.reach)


@pytest.mark.parametrize("method", ["triangulation", "ccd", "jacobian_dls", "fabrik"])
def test_pose_keeps_the_twist_an_orientation_goal_decides(method: str) -> None:
    rng = np.random.default_rng(29)
    chain = _random_chain(rng, False)
    target = _targets(rng, chain, 1)[0]
    goal = rot.normalize(rng.normal(size=4))
    weighted = Solver(chain, method, SolveOptions(max_iterations=40, position_weight=0.5))
    raw = solve(chain, target, method=method, target_rotation=goal, options=weighted.options)
    kept = weighted.pose(target.tolist(), None, goal)
    np.testing.assert_allclose(kept.rotations, raw.rotations, atol=1e-9)
    np.testing.assert_allclose(
        weighted.poses(target, target_rotation=goal).rotations, raw.rotations, atol=1e-9
    )
    # At weight 0 the goal decides nothing: the twist goes, as without a goal.
    free = Solver(chain, method, SolveOptions(max_iterations=40, position_weight=1.0))
    untwisted = free.pose(target.tolist(), None, goal)
    _pure_swings(chain, np.array(untwisted.rotations), np.array(untwisted.points))


def test_pose_of_a_stretching_chain_reports_the_scales() -> None:
    chain = Chain.from_lengths([0.3, 0.5], direction=(0.2, 0.3, 1.0), stretch=[0.1, 0.1])
    solver = Solver(chain, "triangulation", SolveOptions(stretch=True))
    far = np.array([0.3, 0.4, 1.2])
    pose = solver.pose(far.tolist())
    batch = solver.poses(far)
    assert pose.scales is not None
    assert batch.scales is not None
    np.testing.assert_allclose(pose.scales, batch.scales, atol=1e-12)
    np.testing.assert_allclose(pose.points[-1], far, atol=1e-9)  # stretched to reach it
    lengths = np.linalg.norm(np.diff(np.array(pose.points), axis=0), axis=1)
    np.testing.assert_allclose(lengths, chain.lengths * np.array(pose.scales), rtol=1e-12)


@pytest.mark.parametrize("method", list(METHODS))
def test_pose_with_stretch_of_goals_met_at_rest_lengths_is_the_batchs(method: str) -> None:
    """With *Stretch* (closed form), goals whose links keep their lengths — targets within
    the chain's length; orientation goals whose wrist lies within the upper links' reach —
    are solved on the float path of the chain without stretch (no numpy problem is built:
    :func:`core.solver._one` is not called), with the numbers of the batch path with
    stretch (:meth:`Solver.poses`) and scales of 1."""
    rng = np.random.default_rng(sum(map(ord, method)))
    options = SolveOptions(max_iterations=60, stretch=True, position_weight=0.5)
    for limited in (False, True):
        chain = _random_chain(rng, limited)
        while not limited and chain.n_joints < 3:  # (an orientation goal's wrist rule)
            chain = _random_chain(rng, limited)
        chain = Chain(
            chain.offsets, chain.rest_rotations, chain.limits, stretch=[0.1] * chain.n_joints
        )
        solver = Solver(chain, method, options)
        poses = rot.normalize(rng.normal(size=(6, chain.n_joints, 4)))
        if limited:
            poses = np.array(
                [[lim.project(q) for lim, q in zip(chain.limits, p, strict=True)] for p in poses]
            )
        points, frames = forward_kinematics(chain, poses)
        goals = None if limited else frames[:, -1]
        batch = solver.poses(points[:, -1], target_rotation=goals)
        with mock.patch("core.solver._one", side_effect=AssertionError("numpy path")):
            for k in range(len(points)):
                goal = None if goals is None else goals[k].tolist()
                pose = solver.pose(points[k, -1].tolist(), target_rotation=goal)
                assert pose.scales == [1.0] * chain.n_joints
                signs = np.sign(np.sum(np.array(pose.rotations) * batch.rotations[k], axis=1))
                np.testing.assert_allclose(
                    np.array(pose.rotations) * signs[:, None], batch.rotations[k], atol=1e-9
                )
                np.testing.assert_allclose(pose.points, batch.positions[k], atol=1e-9 * chain.reach)
        assert batch.scales is not None
        np.testing.assert_array_equal(batch.scales, 1.0)


@pytest.mark.parametrize("method", ["ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls"])
def test_a_seeded_method_answers_a_met_target_on_the_float_path(method: str) -> None:
    """On a limited chain, where triangulation within the limits meets the target, a method
    seeded from it answers with that pose and 0 iterations: the one-target path returns it
    without building the method's numpy problem, with the numbers of the method's own path
    (``core.solve``) to rounding (that path takes the pose through its single-target
    iteration, whose round trip of the rotations moves a component by an ulp now and then);
    where triangulation misses, the method runs — but for a two-bone limb's target beyond
    its length, where triangulation's pose (the hinge at its longest, aimed at the target)
    is the closest any pose comes (``triangulation_limits_single.is_extent_closest``)."""
    from core import solver as solver_module

    rng = np.random.default_rng(4)
    sizes = set()
    for _ in range(6):
        chain = _random_chain(rng, True)
        pose = rot.identity((chain.n_joints,))
        pose[0] = rot.normalize(rng.normal(size=4))
        pose[-1] = rot.from_axis_angle([1.0, 0.0, 0.0], rng.uniform(-1.0, 1.0))  # (the hinge)
        near = forward_kinematics(chain, pose)[0][-1]  # reachable within the limits
        far = [0.0, 3.0 * chain.reach, 0.0]
        solver = Solver(chain, method)
        assert solve(chain, near, method=method).iterations == 0
        with mock.patch.object(solver_module, "_one", wraps=solver_module._one) as numpy_path:
            rotations, points = solver.solve_one(near)
            assert numpy_path.call_count == 0
            solver.solve_one(far)
            assert numpy_path.call_count == (0 if chain.n_joints == 2 else 1)
        sizes.add(chain.n_joints == 2)
        reference = solve(chain, near, method=method)
        np.testing.assert_allclose(rotations, reference.rotations, rtol=0, atol=1e-15)
        np.testing.assert_allclose(points, reference.positions, rtol=0, atol=1e-15)
    assert sizes == {True, False}  # (two-bone limbs and longer chains)
