# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.triangulation (Müller-Cajar & Mukundan 2007, Algorithm 1).

Oracles: forward kinematics of the returned rotations, the law of cosines for two links,
targets made by forward kinematics of random allowed poses (so they are reachable),
:meth:`JointLimits.violation`, and :func:`core.bend_plane.orient_bend` called on the
method's own ``"minimal"`` result. The single-target float path is compared with the
numpy batch path on the same inputs.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from limited_chains import admissible_poses

from core import rotations as rot
from core import solve
from core.bend_plane import orient_bend
from core.chain import Chain
from core.errors import ChainError
from core.kinematics import forward_kinematics
from core.limits import JointLimits
from core.options import SolveOptions
from core.problem import Problem
from core.triangulation import _solve_batch, solve_triangulation
from core.triangulation_plan import _plan
from core.triangulation_single import _solve_single

FAST = settings(max_examples=60, deadline=None)

U = Chain.from_lengths([9, 9, 9, 9, 4])
C = Chain.from_lengths([18, 18, 4], bend_limits_deg=[None, 126, 90])


def _problem(
    chain: Chain,
    targets: np.ndarray,
    *,
    initial: np.ndarray | None = None,
    poles: np.ndarray | None = None,
    **options: object,
) -> Problem:
    targets = np.atleast_2d(np.asarray(targets, dtype=float))
    size, n = targets.shape[0], chain.n_joints
    if initial is None:
        start = np.broadcast_to(rot.identity((n,)), (size, n, 4))
    else:
        start = np.broadcast_to(rot.normalize(initial), (size, n, 4))
    return Problem(
        chain,
        targets,
        None,
        None if poles is None else np.atleast_2d(poles),
        start,
        1e-6 * chain.reach,
        SolveOptions(**options),  # type: ignore[arg-type]
    )


def _same_rotations(a: np.ndarray, b: np.ndarray, atol: float) -> None:
    """Assert unit quaternions ``a`` and ``b`` are the same rotations (sign-free)."""
    diff = rot.angle(rot.multiply(rot.conjugate(a), b))
    assert float(np.max(diff)) <= atol, float(np.max(diff))


def _link_directions(positions: np.ndarray) -> np.ndarray:
    links = np.diff(positions, axis=-2)
    return links / np.linalg.norm(links, axis=-1, keepdims=True)


# ---------------------------------------------------------------------- strategies
@st.composite
def unit_quaternions(draw: st.DrawFn) -> np.ndarray:
    q = np.array(draw(st.lists(st.floats(-1, 1), min_size=4, max_size=4)))
    assume(np.linalg.norm(q) > 0.1)
    return q / np.linalg.norm(q)


@st.composite
def free_chains(draw: st.DrawFn, max_joints: int = 6) -> Chain:
    """Free chains with random link vectors (not along +Y) and random rest rotations."""
    n = draw(st.integers(1, max_joints))
    offsets = []
    for _ in range(n):
        v = np.array(draw(st.lists(st.floats(-1, 1), min_size=3, max_size=3)))
        assume(np.linalg.norm(v) > 0.2)
        offsets.append(v * draw(st.floats(0.3, 3.0)) / np.linalg.norm(v))
    rest = np.array([draw(unit_quaternions()) for _ in range(n)])
    return Chain(np.array(offsets), rest)


@st.composite
def directions(draw: st.DrawFn) -> np.ndarray:
    v = np.array(draw(st.lists(st.floats(-1, 1), min_size=3, max_size=3)))
    assume(np.linalg.norm(v) > 0.1)
    return v / np.linalg.norm(v)


def _core_radius(chain: Chain) -> float:
    """Inner radius of a free chain's workspace: ``max(0, 2·longest − total)``."""
    return max(0.0, 2.0 * float(chain.lengths.max()) - chain.reach)


# ---------------------------------------------------------------------- closed forms
def test_two_links_bend_by_the_law_of_cosines() -> None:
    chain = Chain.from_lengths([3.0, 2.0])
    target = np.array([1.0, 2.0, 2.5])
    c = float(np.linalg.norm(target))
    res = solve(chain, target, bend_plane="minimal")
    interior = math.acos((3.0**2 + 2.0**2 - c**2) / (2 * 3.0 * 2.0))
    assert res.error <= 1e-12
    assert rot.angle(res.rotations[1]) == pytest.approx(math.pi - interior, abs=1e-12)
    # Eq. 6: the first link turns by acos(â·ĉ) − δ from the rest direction +Z.
    delta = math.acos((3.0**2 + c**2 - 2.0**2) / (2 * 3.0 * c))
    theta = math.acos(target[2] / c) - delta
    assert rot.angle(res.rotations[0]) == pytest.approx(abs(theta), abs=1e-12)
    assert res.iterations == 1


def test_full_triangle_leaves_the_remaining_links_straight() -> None:
    """§3.1.2: after the triangle at the root, links 2… point straight at the target."""
    target = np.array([5.0, -12.0, 20.0])  # |t| = 23.85 ≥ 31 − 9: triangle at the root
    res = solve(U, target, bend_plane="minimal")
    assert res.error <= 1e-12
    dirs = _link_directions(res.positions)
    np.testing.assert_allclose(dirs[2:], np.broadcast_to(dirs[1], (3, 3)), atol=1e-12)
    np.testing.assert_allclose(rot.angle(res.rotations[2:]), 0.0, atol=1e-7)
    # Only the first two joints turn: the paper's low-cost property.
    assert res.cost() == pytest.approx(float(np.sum(rot.angle(res.rotations[:2]))), abs=1e-7)


def test_close_target_points_the_first_link_away() -> None:
    """§3.1.3, eq. 8: c < b − a → δb = 180°, the link points away from the target."""
    target = np.array([3.0, 4.0, 5.0])
    res = solve(U, target, bend_plane="minimal")
    away = -target / np.linalg.norm(target)
    np.testing.assert_allclose(_link_directions(res.positions)[0], away, atol=1e-12)
    assert res.error <= 1e-12


def test_delta_b_90_turns_the_first_link_perpendicular() -> None:
    target = np.array([3.0, 4.0, 5.0])
    res = solve(U, target, bend_plane="minimal", delta_b_deg=90.0)
    first = _link_directions(res.positions)[0]
    assert float(first @ target) == pytest.approx(0.0, abs=1e-12)
    assert res.error <= 1e-12


def test_delta_b_90_guard_keeps_a_long_last_link_reachable() -> None:
    """Links 1, 1, 10 reach only 8 ≤ |t| ≤ 12; a plain 90° turn would miss 8.5."""
    chain = Chain.from_lengths([1.0, 1.0, 10.0])
    for delta in (180.0, 90.0):
        res = solve(chain, [0.0, 8.5, 0.0], delta_b_deg=delta)
        assert res.error <= 1e-12, delta


def test_far_target_straightens_the_chain_toward_it() -> None:
    target = np.array([100.0, -50.0, 20.0])
    unit = target / np.linalg.norm(target)
    for chain in (U, C):
        res = solve(chain, target)
        expected = np.outer(np.concatenate(([0.0], np.cumsum(chain.lengths))), unit)
        np.testing.assert_allclose(res.positions, expected, atol=1e-9)


def test_undefined_axis_uses_the_joints_local_x_axis() -> None:
    """§3.1.1: a target on the straight chain's axis; the root bends about its local X."""
    res = solve(U, [0.0, 0.0, 20.0], bend_plane="minimal")
    assert res.error <= 1e-12
    np.testing.assert_allclose(res.positions[:, 0], 0.0, atol=1e-12)
    axis, angle = rot.to_axis_angle(res.rotations[0])
    assert angle > 0.1
    assert abs(float(axis[0])) == pytest.approx(1.0, abs=1e-12)


def test_undefined_axis_reuses_the_previous_joints_axis() -> None:
    """Joint 1 points away along the target line; its axis is then joint 0's."""
    target = np.array([0.0, 3.0, 4.0])
    res = solve(U, target, bend_plane="minimal")
    assert res.error <= 1e-12
    # Every joint turned about the same world axis: the chain stays in one plane.
    normal = np.cross(target, [0.0, 0.0, 1.0])
    np.testing.assert_allclose(res.positions @ normal, 0.0, atol=1e-9)


@pytest.mark.parametrize("chain", [U, C], ids=["U", "C"])
def test_degenerate_targets_give_finite_results(chain: Chain) -> None:
    reach = chain.reach
    targets = np.array(
        [
            [0.0, 0.0, 0.0],
            [0.0, 0.0, 1e-300],
            [0.0, 0.0, 9.0],
            [0.0, 0.0, -9.0],
            [0.0, 0.0, reach],
            [0.0, reach, 0.0],
            [0.0, 0.0, -reach],
            [0.0, 0.0, 2 * reach],
            [0.0, 0.0, -2 * reach],
            [1e12, -1e12, 1e12],
            [0.0, 1e-13, 18.0],
        ]
    )
    for opts in ({}, {"delta_b_deg": 90.0}, {"bend_plane": "minimal"}):
        batch = solve(chain, targets, **opts)
        singles = [solve(chain, t, **opts) for t in targets]
        for res in (batch, *singles):
            assert np.all(np.isfinite(res.rotations))
            assert np.all(np.isfinite(res.positions))
        for k, single in enumerate(singles):
            np.testing.assert_allclose(single.positions, batch.positions[k], atol=1e-9 * reach)
        # Exactly at full reach, on and off the axis: reached.
        assert np.all(batch.error[4:7] <= 1e-9 * reach)
        fk = forward_kinematics(chain, batch.rotations)[0]
        np.testing.assert_allclose(fk[:9], batch.positions[:9], atol=1e-9 * reach)


def test_nearly_opposite_turn_is_exact() -> None:
    """A link 1e-6 rad from pointing away must turn to exactly the target direction."""
    chain = Chain(np.array([[1.0, 0.0, 1e-6]]), np.array([[0.0, 0.0, 0.0, 1.0]]))
    target = np.array([1.0 + 1e-9, 0.0, 0.0])
    for targets in (target, np.stack([target, target])):
        res = solve(chain, targets)
        np.testing.assert_allclose(res.error, 1.0 + 1e-9 - chain.reach, atol=1e-15)
        fk = forward_kinematics(chain, res.rotations)[0]
        np.testing.assert_allclose(fk, res.positions, atol=1e-15)


def test_narrow_collapse_range_is_found() -> None:
    """Feasible collapse parameters only in [0.596, 0.624]: between two coarse grid values."""
    chain = Chain.from_lengths([1, 1, 1], bend_limits_deg=[10, 5, 56])
    res = solve(chain, [1.05705614, -0.37113105, 2.64098797])
    assert res.error <= 1e-6 * chain.reach


def test_target_at_the_root_is_reached_by_a_free_chain() -> None:
    for opts in ({}, {"delta_b_deg": 90.0}):
        res = solve(U, [0.0, 0.0, 0.0], **opts)  # type: ignore[arg-type]
        assert res.error <= 1e-9


# ---------------------------------------------------------------------- properties, free
@FAST
@given(
    chain=free_chains(),
    direction=directions(),
    fraction=st.floats(0.0, 1.0),
    delta=st.sampled_from([180.0, 90.0]),
    bend_plane=st.sampled_from(["rest", "minimal"]),
    start=st.booleans(),
    data=st.data(),
)
def test_reachable_targets_of_free_chains_are_reached(
    chain: Chain,
    direction: np.ndarray,
    fraction: float,
    delta: float,
    bend_plane: str,
    start: bool,
    data: st.DataObject,
) -> None:
    # Targets nearer the root than 1e-6 × reach are left to
    # test_target_at_the_root_is_reached_by_a_free_chain: the pass's directions toward such a
    # target are known only to ~1e-16 / |t|, so the rotations reproduce the folded chain's
    # positions to ~1.6e-16 × reach / |t| (8e-8 at 2e-9 from the root of a 2-link chain,
    # with either bend-plane rule), not 1e-9.
    lo = max(_core_radius(chain), 1e-6 * chain.reach) * (1 + 1e-9)
    hi = chain.reach * (1 - 1e-9)
    target = direction * (lo + fraction * (hi - lo))
    initial = None
    if start:
        initial = np.array([data.draw(unit_quaternions()) for _ in range(chain.n_joints)])
    targets = np.stack([target, -target, 0.5 * target])
    res = solve(chain, targets, initial=initial, delta_b_deg=delta, bend_plane=bend_plane)
    single = solve(chain, target, initial=initial, delta_b_deg=delta, bend_plane=bend_plane)
    assert float(res.error[0]) <= 1e-6 * chain.reach
    assert float(res.error[1]) <= 1e-6 * chain.reach
    assert float(single.error) <= 1e-6 * chain.reach
    if 0.5 * np.linalg.norm(target) >= lo:
        assert float(res.error[2]) <= 1e-6 * chain.reach
    fk = forward_kinematics(chain, res.rotations)[0]
    np.testing.assert_allclose(fk, res.positions, atol=1e-9 * chain.reach)
    np.testing.assert_allclose(np.linalg.norm(res.rotations, axis=-1), 1.0, atol=1e-12)


@FAST
@given(chain=free_chains(), direction=directions(), scale=st.floats(1.0 + 1e-9, 1e6))
def test_far_targets_of_free_chains_straighten_toward_them(
    chain: Chain, direction: np.ndarray, scale: float
) -> None:
    res = solve(chain, direction * chain.reach * scale)
    np.testing.assert_allclose(
        _link_directions(res.positions), np.broadcast_to(direction, (chain.n_joints, 3)), atol=1e-7
    )
    assert float(res.error) == pytest.approx(chain.reach * (scale - 1.0), abs=1e-9 * scale)


@FAST
@given(
    chain=free_chains(),
    targets=st.lists(st.lists(st.floats(-8, 8), min_size=3, max_size=3), min_size=1, max_size=4),
    delta=st.sampled_from([180.0, 90.0]),
    bend_plane=st.sampled_from(["rest", "minimal"]),
    use_pole=st.booleans(),
    pole_angle=st.sampled_from([0.0, 0.7]),
    start=st.booleans(),
    data=st.data(),
)
def test_single_target_path_equals_batch_path(
    chain: Chain,
    targets: list[list[float]],
    delta: float,
    bend_plane: str,
    use_pole: bool,
    pole_angle: float,
    start: bool,
    data: st.DataObject,
) -> None:
    plan = _plan(chain)
    initial = None
    if start:
        initial = np.array([data.draw(unit_quaternions()) for _ in range(chain.n_joints)])
    pole = np.array([1.0, -2.0, 0.5]) if use_pole else None
    for target in np.array(targets):
        problem = _problem(
            chain,
            target,
            initial=initial,
            poles=pole,
            delta_b_deg=delta,
            bend_plane=bend_plane,
            pole_angle=pole_angle,
        )
        rot_s, pos_s = _solve_single(problem, plan)
        rot_b, pos_b = _solve_batch(problem, plan)
        np.testing.assert_allclose(pos_s, pos_b, atol=1e-12 * chain.reach)
        np.testing.assert_allclose(rot_s, rot_b, atol=1e-12)


@FAST
@given(
    chain=free_chains(),
    targets=st.lists(st.lists(st.floats(-8, 8), min_size=3, max_size=3), min_size=1, max_size=4),
    pole=st.one_of(st.none(), st.lists(st.floats(-5, 5), min_size=3, max_size=3)),
    pole_angle=st.sampled_from([0.0, -1.2]),
    start=st.sampled_from(["rest", "shared", "per target"]),
    data=st.data(),
)
def test_bend_plane_step_equals_orient_bend(
    chain: Chain,
    targets: list[list[float]],
    pole: list[float] | None,
    pole_angle: float,
    start: str,
    data: st.DataObject,
) -> None:
    """The inline bend-plane step gives what core.bend_plane.orient_bend gives."""
    t = np.array(targets)
    initial = None
    if start != "rest":
        count = t.shape[0] if start == "per target" else 1
        initial = np.array(
            [[data.draw(unit_quaternions()) for _ in range(chain.n_joints)] for _ in range(count)]
        )
    poles = None if pole is None else np.broadcast_to(np.array(pole), t.shape)
    minimal = solve_triangulation(_problem(chain, t, initial=initial, bend_plane="minimal"))
    oriented_problem = _problem(
        chain, t, initial=initial, poles=poles, bend_plane="rest", pole_angle=pole_angle
    )
    expected_rot, expected_pos = orient_bend(oriented_problem, minimal.rotations, minimal.positions)
    ours = solve_triangulation(oriented_problem)
    np.testing.assert_allclose(ours.positions, expected_pos, atol=1e-9 * chain.reach)
    _same_rotations(ours.rotations, expected_rot, 1e-9)
    for k in range(t.shape[0]):
        single = solve_triangulation(
            _problem(
                chain,
                t[k],
                initial=None if initial is None else initial[k % initial.shape[0]],
                poles=None if poles is None else poles[k],
                bend_plane="rest",
                pole_angle=pole_angle,
            )
        )
        np.testing.assert_allclose(single.positions[0], expected_pos[k], atol=1e-9 * chain.reach)
        _same_rotations(single.rotations[0], expected_rot[k], 1e-9)


def test_orientation_goal_turns_the_last_link_to_it() -> None:
    """With an orientation goal (position_weight < 1) the last joint's frame takes it and
    the effector still meets the target (core/wrist.py; tests/core/test_wrist.py), on the
    one-target and batch paths alike. (Until 0.9.0 the goal was ignored: the pass's pose
    with its bend plane left as the paper makes it.)"""
    target = np.array([[10.0, 5.0, 20.0]])
    goal = rot.normalize(np.array([[0.8, 0.3, -0.2, 0.4]]))
    problem = _problem(U, target)
    problem = Problem(U, problem.targets, goal, None, problem.initial, 1e-5, SolveOptions())
    for size_path in (problem, _stacked(problem)):
        res = solve_triangulation(size_path)
        positions, frames = forward_kinematics(U, res.rotations)
        np.testing.assert_allclose(positions[:, -1], size_path.targets, atol=1e-5)
        angle = rot.angle(rot.multiply(rot.conjugate(goal), frames[:, -1]))
        assert np.all(angle <= 1e-9)


def _stacked(problem: Problem) -> Problem:
    """The same problem twice, so the batch path runs."""
    return Problem(
        problem.chain,
        np.repeat(problem.targets, 2, axis=0),
        None if problem.target_rotations is None else np.repeat(problem.target_rotations, 2, 0),
        None,
        np.repeat(problem.initial, 2, axis=0),
        problem.tolerance,
        problem.options,
    )


# ---------------------------------------------------------------------- constrained chains
def _random_allowed_poses(chain: Chain, rng: np.random.Generator, size: int) -> np.ndarray:
    """Random local rotations inside each joint's limits (projected random rotations)."""
    q = rot.normalize(rng.normal(size=(size, chain.n_joints, 4)))
    return np.stack([lim.project(q[:, i]) for i, lim in enumerate(chain.limits)], axis=1)


def test_chain_c_reaches_every_pose_it_can_take() -> None:
    rng = np.random.default_rng(7)
    poses = _random_allowed_poses(C, rng, 3000)
    targets = forward_kinematics(C, poses)[0][:, -1, :]
    for opts in ({}, {"delta_b_deg": 90.0}, {"bend_plane": "minimal"}):
        res = solve(C, targets, **opts)
        assert float(np.max(res.error)) <= 1e-6 * C.reach
        for i, lim in enumerate(C.limits):
            assert float(np.max(lim.violation(res.rotations[:, i]))) <= 1e-9


def test_chain_c_core_is_unreachable_without_nan() -> None:
    """Chain C's closest approach to its root is 12.91 (elbow 126°, wrist 90°, one plane)."""
    rng = np.random.default_rng(3)
    poses = _random_allowed_poses(C, rng, 20000)
    closest = float(np.min(np.linalg.norm(forward_kinematics(C, poses)[0][:, -1], axis=-1)))
    elbow = math.radians(126.0)
    wrist = math.radians(90.0)
    analytic = abs(18 + 18 * np.exp(1j * elbow) + 4 * np.exp(1j * (elbow + wrist)))
    assert analytic == pytest.approx(12.91, abs=0.01)
    assert closest >= analytic - 1e-9
    inside = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 5.0], [0.0, 0.0, -12.0]])
    res = solve(C, inside)
    assert np.all(np.isfinite(res.rotations))
    assert np.all(res.error > 0.5)
    shell = np.array([[0.0, 0.0, analytic * (1 + 1e-9)], [analytic * (1 + 1e-6), 0.0, 0.0]])
    assert np.all(solve(C, shell).error <= 1e-6 * C.reach)


@st.composite
def cone_chains(draw: st.DrawFn) -> Chain:
    """Straight 2–3-link chains with bend limits on the joints after the root."""
    n = draw(st.integers(2, 3))
    lengths = [draw(st.floats(0.3, 3.0)) for _ in range(n)]
    root = draw(st.one_of(st.none(), st.floats(10.0, 180.0)))
    bends = [root] + [draw(st.floats(5.0, 180.0)) for _ in range(n - 1)]
    return Chain.from_lengths(lengths, draw(directions()), bend_limits_deg=bends)


@FAST
@given(chain=cone_chains(), seed=st.integers(0, 2**32 - 1))
def test_cone_chains_reach_the_poses_they_can_take(chain: Chain, seed: int) -> None:
    """From the rest pose (module docstring: exact for straight chains of up to three
    links). A search about the grid's best value alone missed 7 of 3000 such examples."""
    rng = np.random.default_rng(seed)
    targets = forward_kinematics(chain, _random_allowed_poses(chain, rng, 64))[0][:, -1]
    res = solve(chain, targets)
    assert float(np.max(res.error)) <= 1e-6 * chain.reach
    for i, lim in enumerate(chain.limits):
        assert float(np.max(lim.violation(res.rotations[:, i]))) <= 1e-9


@FAST
@given(chain=cone_chains(), seed=st.integers(0, 2**32 - 1))
def test_cone_chains_from_a_bent_start_keep_limits_and_reach_almost_all(
    chain: Chain, seed: int
) -> None:
    """From a bent start pose the argument for reaching does not hold: a reachable target is
    now and then missed (5 of 3000 examples missed one of their 64 targets; see the expected
    failure below). Limits always hold."""
    rng = np.random.default_rng(seed)
    targets = forward_kinematics(chain, _random_allowed_poses(chain, rng, 64))[0][:, -1]
    res = solve(chain, targets, initial=_random_allowed_poses(chain, rng, 1)[0])
    assert np.all(np.isfinite(res.rotations))
    assert int(np.sum(res.error <= 1e-6 * chain.reach)) >= 60
    for i, lim in enumerate(chain.limits):
        assert float(np.max(lim.violation(res.rotations[:, i]))) <= 1e-9


@pytest.mark.xfail(strict=True, reason="bent start pose with tight cones (docs/triangulation.md)")
def test_a_known_miss_from_a_bent_start_pose() -> None:
    """A reachable target that the pass reaches from the rest pose and misses (by 0.149 of
    a reach of 0.97) from this start pose: the known limitation, kept here so that a fix
    shows."""
    straight = [1.0, 0.0, 0.0, 0.0]
    rest = [0.7988029748847638, 0.5762213254345521, 0.0, -0.17286639763036563]
    chain = Chain(
        [[0.0, 0.3662577667221666, 0.0], [0.0, 0.3, 0.0], [0.0, 0.3, 0.0]],
        [rest, straight, straight],
    ).with_limits(
        [
            JointLimits(cone=math.radians(25.380360308469204)),
            JointLimits(cone=math.radians(91.54459594821576)),
            JointLimits(cone=math.radians(5.0)),
        ]
    )
    target = [0.2285010553338747, 0.5218306796813877, 0.37665479553488435]
    start = [
        [0.5277764043763753, 0.2152814509266569, 0.820483516890232, 0.0437351389833678],
        [0.8547859449740057, -0.08816143430780356, -0.44107879955531626, -0.2588784316209601],
        [0.8686249498227351, 0.04036843220986993, -0.49354639659440724, -0.016523941268485852],
    ]
    assert float(solve(chain, target).error) <= 1e-6 * chain.reach
    assert float(solve(chain, target, initial=np.array(start)).error) <= 1e-6 * chain.reach


@st.composite
def limited_chains(draw: st.DrawFn) -> Chain:
    """Random chains with every kind of joint limit."""
    chain = draw(free_chains(max_joints=5))
    if draw(st.booleans()):
        chain = Chain.from_lengths(chain.lengths, draw(directions()))
    kinds = st.sampled_from(["free", "cone", "ranges", "lock", "hinge", "fixed"])
    limits = []
    for _ in range(chain.n_joints):
        kind = draw(kinds)
        angle = st.floats(0.0, math.pi)
        if kind == "free":
            limits.append(JointLimits())
        elif kind == "cone":
            limits.append(JointLimits(cone=draw(angle)))
        elif kind == "ranges":
            # Ranges holding zero (as Blender's do), or ranges without it within ±π/2: the
            # domain JointLimits supports (test_limits.ball_limits); wider ranges without
            # zero let the allowed swing leave |s| ≤ π and the projection break a limit.
            if draw(st.booleans()):
                x, z = (-draw(angle), draw(angle)), (-draw(angle), draw(angle))
            else:
                half = st.floats(-math.pi / 2, math.pi / 2)
                x_lo, x_hi = sorted((draw(half), draw(half)))
                z_lo, z_hi = sorted((draw(half), draw(half)))
                x, z = (x_lo, x_hi), (z_lo, z_hi)
            try:
                limits.append(JointLimits(ranges=(x, None, z)))
            except ChainError:  # (outside each other's ellipse: allow no swing)
                assume(False)
        elif kind == "lock":
            limits.append(JointLimits(lock=(True, False, draw(st.booleans()))))
        elif kind == "hinge":
            limits.append(
                JointLimits(hinge_axis=tuple(draw(directions())), hinge_range=(-draw(angle), 1.0))
            )
        else:
            limits.append(JointLimits(lock=(True, True, True)))
    return chain.with_limits(limits)


def test_a_cone_about_a_link_leaning_off_the_bone_axis_holds() -> None:
    """A link 1e-6 rad off +Y is not a cone joint's link: a test on the cosine once took it
    for one, and a zero cone then let the bone lean 1e-6 rad (found by hypothesis below)."""
    half_turn = [0.0, 0.0, 0.0, 1.0]
    offsets = [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1e-6]]
    chain = Chain(offsets, [half_turn] * 3).with_limits(
        [JointLimits(), JointLimits(), JointLimits(cone=0.0)]
    )
    for target in ([0.0, 0.0, 0.0], [0.5, 0.3, 1.2], [0.0, 0.0, 3.0]):
        res = solve(chain, target)
        assert float(np.max(chain.limits[2].violation(res.rotations[2]))) <= 1e-9


def test_the_batch_pass_turns_a_link_exactly_over_without_dividing_by_zero() -> None:
    """Targets at the root of a chain folded back on itself turn a link to exactly its
    opposite: the batch pass's shortest turn gives it by a half turn, with no 0/0 on the
    way (numpy would warn)."""
    half_turn = [0.0, 0.0, 0.0, 1.0]
    chain = Chain([[0, 0, 1], [0, 0, 1]], [half_turn] * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = solve(chain, [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert np.all(np.isfinite(res.rotations))
    np.testing.assert_allclose(
        forward_kinematics(chain, res.rotations)[0], res.positions, atol=1e-12
    )


@FAST
@given(
    chain=limited_chains(),
    targets=st.lists(st.lists(st.floats(-12, 12), min_size=3, max_size=3), min_size=1, max_size=5),
    delta=st.sampled_from([180.0, 90.0]),
    bend_plane=st.sampled_from(["rest", "minimal"]),
)
@example(  # a cone's edge next to the link's own direction once came out longer than unit
    chain=Chain(
        [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]],
        [[math.sqrt(0.5), math.sqrt(0.5), 0.0, 0.0]] + [[1.0, 0.0, 0.0, 0.0]] * 3,
    ).with_limits(
        [
            JointLimits(ranges=((0.0, 1.0), None, (-0.0, 0.0))),
            JointLimits(cone=0.0),
            JointLimits(cone=1.0),
            JointLimits(),
        ]
    ),
    targets=[[0.0, 0.0, 1e-9]],
    delta=180.0,
    bend_plane="rest",
)
def test_limits_always_hold(
    chain: Chain, targets: list[list[float]], delta: float, bend_plane: str
) -> None:
    t = np.array(targets)
    for res in (
        solve(chain, t, delta_b_deg=delta, bend_plane=bend_plane),
        solve(chain, t[0], delta_b_deg=delta, bend_plane=bend_plane),
    ):
        assert np.all(np.isfinite(res.rotations))
        assert np.all(np.isfinite(res.positions))
        rotations = res.rotations.reshape(-1, chain.n_joints, 4)
        for i, lim in enumerate(chain.limits):
            assert float(np.max(lim.violation(rotations[:, i]))) <= 1e-9
        fk = forward_kinematics(chain, res.rotations)[0]
        np.testing.assert_allclose(fk, res.positions, atol=1e-9 * chain.reach)


# ---------------------------------------------------------------------- reach within limits
def _knee_leg(knee: JointLimits, hip: JointLimits | None = None) -> Chain:
    """A 2-bone leg hanging along −Z (thigh and shin 1 long), the knee a hinge about X."""
    return Chain.from_lengths([1.0, 1.0], (0.0, 0.0, -1.0), limits=[hip or JointLimits(), knee])


def _reachable(chain: Chain, seed: int, n: int) -> np.ndarray:
    """Targets at the effector of ``n`` random allowed poses (reachable by construction)."""
    q = admissible_poses(np.random.default_rng(seed), chain, n)
    return forward_kinematics(chain, q)[0][:, -1]


def _assert_within_limits(chain: Chain, rotations: np.ndarray) -> None:
    for i, lim in enumerate(chain.limits):
        assert float(np.max(lim.violation(rotations[..., i, :]))) <= 1e-9


KNEE = JointLimits(
    lock=(False, True, True), ranges=((math.radians(5), math.radians(140)), None, None)
)


@pytest.mark.parametrize(
    "knee",
    [
        KNEE,  # Blender's knee: Lock IK Y and Z, X limited to 5°–140° (issue 11: 0 of 200)
        JointLimits(lock=(False, True, True), ranges=((-2.4, -0.1), None, None)),  # other sign
        JointLimits(lock=(False, True, True), ranges=((0.1, 2.5), None, None)),  # excludes rest
        JointLimits(ranges=((0.1, 2.5), None, None)),  # a ball knee excluding the rest
        JointLimits(ranges=((-0.3, 2.0), None, (-0.4, 0.2))),  # Blender's ellipse
    ],
    ids=["knee", "negative", "rest-excluding-hinge", "rest-excluding-ball", "ellipse"],
)
def test_a_leg_reaches_every_target_its_knee_allows(knee: JointLimits) -> None:
    """Every target to the default tolerance (1e-6 × reach), the ellipse's to issue 11's
    1e-4 × reach (the refinement's steps slide along its curved edge slowly)."""
    leg = _knee_leg(knee)
    targets = _reachable(leg, 11, 200)
    res = solve(leg, targets)
    tolerance = (1e-4 if knee.ranges[2] is not None else 1e-6) * leg.reach
    assert np.all(res.error <= tolerance), np.count_nonzero(res.error > tolerance)
    _assert_within_limits(leg, res.rotations)
    np.testing.assert_allclose(forward_kinematics(leg, res.rotations)[0], res.positions, atol=1e-9)


def test_a_hinge_bends_to_the_side_its_range_allows() -> None:
    """X in [0.1, 2.5]: the knee bends by +X only, to the angle the distance needs (law of
    cosines: |t| = 2 cos(φ/2) for two unit links), and the hip swings the plane round."""
    leg = _knee_leg(JointLimits(lock=(False, True, True), ranges=((0.1, 2.5), None, None)))
    for phi in (0.3, 0.78, 2.36):
        distance = 2.0 * math.cos(phi / 2.0)
        for direction in ([0.0, 0.6, -0.8], [0.8, 0.0, 0.6], [0.0, 0.0, 1.0]):
            target = distance * np.array(direction)
            res = solve(leg, target)
            assert res.error <= 1e-6 * leg.reach
            knee_angle = 2.0 * math.atan2(res.rotations[1, 1], res.rotations[1, 0])
            assert knee_angle == pytest.approx(phi, abs=1e-5)
            _assert_within_limits(leg, res.rotations[None])


def test_a_limited_hip_orients_the_bend_plane_within_its_limits() -> None:
    """The hip may only swing about X within ±0.2 (and twist ±0.3): of the spins about the
    target direction that put the effector on the target, an allowed one is taken. The
    targets' hips mostly sit on their limits (few random rotations fall inside them), where
    the allowed spins can shrink to a point: 39 of these 40 are reached to issue 11's
    1e-4 × reach (98 of 100 with seed 5)."""
    hip = JointLimits(ranges=((-0.2, 0.2), (-0.3, 0.3), (-1.2, 1.2)))
    leg = _knee_leg(KNEE, hip)
    targets = _reachable(leg, 5, 40)
    res = solve(leg, targets)
    assert np.count_nonzero(res.error <= 1e-4 * leg.reach) >= 39
    _assert_within_limits(leg, res.rotations)


def test_unreachable_within_limits_returns_the_closest_allowed_pose_found() -> None:
    """A straight-only leg (both joints locked but for X in [0.1, 0.2]): a target beside it
    cannot be reached; the result stays within the limits, no farther than the pass's."""
    stiff = JointLimits(lock=(False, True, True), ranges=((0.1, 0.2), None, None))
    leg = _knee_leg(stiff, stiff)
    res = solve(leg, [1.5, 0.0, 0.0])
    assert not res.converged
    assert "unreachable within limits" in res.message
    _assert_within_limits(leg, res.rotations[None])
    # closest: the effector sweeps a short arc in the YZ plane; its distance to the target is
    # at least the target's distance from that plane, 1.5 — found to within a millimetre
    grid = np.linspace(0.1, 0.2, 201)
    hips, knees = np.meshgrid(grid, grid)
    q = np.stack(
        (
            rot.from_axis_angle([1.0, 0.0, 0.0], hips.ravel()),
            rot.from_axis_angle([1.0, 0.0, 0.0], knees.ravel()),
        ),
        axis=1,
    )
    best = np.min(np.linalg.norm(forward_kinematics(leg, q)[0][:, -1] - [1.5, 0.0, 0.0], axis=-1))
    assert res.error <= best + 1e-3
