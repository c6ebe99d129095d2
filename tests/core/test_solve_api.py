# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of the public entry point core.solve and of SolveOptions: input checking, error
messages, batching and the common measurement of results.

Input checks run before any method, so they need no working solver. The plumbing after a
method (reshaping, error, convergence, message) is tested with a probe method registered in
``METHODS`` for the test: it returns the start pose, whose effector is known by forward
kinematics. The real methods get one smoke test each, skipped while a method still raises
``NotImplementedError``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import rotations as rot
from core.chain import Chain
from core.errors import ReachIKError, SolveInputError
from core.kinematics import forward_kinematics
from core.options import SolveOptions
from core.problem import Problem
from core.result import Solution
from core.solve import METHODS, solve
from core.solver import solve_floats, solve_one, solve_points

CHAIN = Chain.from_lengths([9.0, 9.0, 9.0, 9.0, 4.0])
N = CHAIN.n_joints


class _Probe:
    """A stand-in method: returns the start pose and remembers the problem it was given."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def __call__(self, problem: Problem) -> Solution:
        self.problems.append(problem)
        positions, _ = forward_kinematics(problem.chain, problem.initial)
        return Solution(
            rotations=np.array(problem.initial),
            positions=positions,
            iterations=np.full(problem.size, 3, dtype=np.int64),
        )


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> _Probe:
    method = _Probe()
    monkeypatch.setitem(METHODS, "probe", method)
    return method


# ---------------------------------------------------------------------- bad input
def test_unknown_method_names_every_valid_method() -> None:
    with pytest.raises(SolveInputError, match="unknown method 'newton'") as info:
        solve(CHAIN, [0.0, 0.0, 10.0], method="newton")
    for name in METHODS:
        assert name in str(info.value)
    assert {"triangulation", "ccd", "fabrik"} <= set(METHODS)


def test_unknown_option_names_every_valid_option() -> None:
    with pytest.raises(SolveInputError, match=r"unknown option.*max_iter, tolerence") as info:
        solve(CHAIN, [0.0, 0.0, 10.0], max_iter=5, tolerence=0.1)
    for field in dataclasses.fields(SolveOptions):
        assert field.name in str(info.value)


def test_invalid_option_value_raises_before_solving() -> None:
    with pytest.raises(SolveInputError, match="tolerance must be > 0"):
        solve(CHAIN, [0.0, 0.0, 10.0], tolerance=-1.0)


@pytest.mark.parametrize(
    "target",
    [5.0, [], [1.0, 2.0], [1.0, 2.0, 3.0, 4.0], np.zeros((4, 2)), np.zeros((2, 3, 4))],
)
def test_bad_target_shapes(target: object) -> None:
    with pytest.raises(SolveInputError, match=r"target must have shape \(3,\) or \(\.\.\., 3\)"):
        solve(CHAIN, target)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_target(bad: float) -> None:
    with pytest.raises(SolveInputError, match="target must be finite numbers"):
        solve(CHAIN, [[0.0, 0.0, 1.0], [0.0, bad, 1.0]])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pole": [1.0, 0.0]}, r"pole must have shape \(\.\.\., 3\)"),
        ({"pole": [1.0, math.nan, 0.0]}, "pole must be finite numbers"),
        ({"pole": np.ones((2, 3))}, r"pole of shape \(2, 3\) does not match .* \(3,\)"),
        ({"target_rotation": [1.0, 0.0, 0.0]}, r"target_rotation must have shape \(\.\.\., 4\)"),
        ({"target_rotation": [0.0, 0.0, 0.0, 0.0]}, "target_rotation must be non-zero"),
        ({"target_rotation": [1.0, 0.0, math.inf, 0.0]}, "target_rotation must be finite"),
        ({"target_rotation": np.ones((4, 4))}, r"target_rotation of shape \(4, 4\) does not"),
        (
            {"initial": rot.identity((N + 1,))},
            rf"initial must be finite with shape \(\.\.\., {N}, 4\)",
        ),
        ({"initial": np.ones((N, 3))}, rf"initial must be finite with shape \(\.\.\., {N}, 4\)"),
        ({"initial": np.full((N, 4), math.nan)}, "initial must be finite"),
        ({"initial": rot.identity((2, N))}, r"initial of shape \(2, 5, 4\) does not match"),
    ],
)
def test_bad_pole_rotation_and_initial(kwargs: dict[str, object], message: str) -> None:
    targets = np.array([[0.0, 0.0, 10.0], [5.0, 0.0, 5.0], [0.0, 1.0, 1.0]])
    with pytest.raises(SolveInputError, match=message):
        solve(CHAIN, targets, **kwargs)  # type: ignore[arg-type]


def test_errors_are_reach_ik_errors_and_value_errors() -> None:
    with pytest.raises(ReachIKError):
        solve(CHAIN, [0.0, 0.0], method="triangulation")
    with pytest.raises(ValueError, match="unknown method"):
        solve(CHAIN, [0.0, 0.0, 1.0], method="nope")


# ---------------------------------------------------------------------- plumbing (probe method)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (2, 3)])
def test_result_has_the_targets_batch_shape(probe: _Probe, shape: tuple[int, ...]) -> None:
    targets = np.random.default_rng(1).uniform(-30, 30, size=(*shape, 3))
    result = solve(CHAIN, targets, method="probe")
    assert result.rotations.shape == (*shape, N, 4)
    assert result.positions.shape == (*shape, N + 1, 3)
    assert result.error.shape == shape
    assert result.iterations.shape == shape
    assert result.converged.shape == shape
    assert result.angle_error is None
    assert result.method == "probe"
    # The probe's flat problem.
    problem = probe.problems[-1]
    assert problem.targets.shape == (math.prod(shape), 3)
    np.testing.assert_array_equal(problem.targets, targets.reshape(-1, 3))
    np.testing.assert_array_equal(
        problem.initial, np.broadcast_to(rot.identity((N,)), (problem.size, N, 4))
    )
    assert problem.poles is None
    assert problem.target_rotations is None
    assert problem.tolerance == pytest.approx(1e-6 * CHAIN.reach)


def test_error_convergence_and_message_are_measured(probe: _Probe) -> None:
    """The probe leaves the chain straight along +Z, effector at (0, 0, 40)."""
    targets = np.array([[0.0, 0.0, 40.0], [0.0, 0.0, 39.7], [0.0, 0.0, 41.0], [50.0, 0.0, 0.0]])
    result = solve(CHAIN, targets, method="probe", tolerance=0.5)
    np.testing.assert_allclose(result.error, [0.0, 0.3, 1.0, math.hypot(50.0, 40.0)], atol=1e-12)
    np.testing.assert_array_equal(result.converged, [True, True, False, False])
    assert not result.success
    assert result.message.startswith("probe: 2 of 4 goals reached")
    assert "2 out of reach (beyond the chain's length 40)" in result.message
    np.testing.assert_allclose(result.effector, [[0.0, 0.0, 40.0]] * 4, atol=1e-12)
    np.testing.assert_array_equal(result.iterations, 3)
    assert probe.problems[-1].tolerance == 0.5


def test_options_object_and_changes_combine(probe: _Probe) -> None:
    base = SolveOptions(max_iterations=7, tolerance=0.25)
    solve(CHAIN, [0.0, 0.0, 1.0], method="probe", options=base, pole_angle=0.5)
    opts = probe.problems[-1].options
    assert (opts.max_iterations, opts.tolerance, opts.pole_angle) == (7, 0.25, 0.5)
    assert base.pole_angle == 0.0


def test_pole_rotation_and_initial_broadcast_to_the_batch(probe: _Probe) -> None:
    targets = np.zeros((2, 3, 3))
    start = rot.from_axis_angle([1.0, 0.0, 0.0], np.linspace(0.1, 0.5, N))
    goal = np.array([2.0, 0.0, 0.0, 0.0])  # not unit: normalised by solve
    result = solve(
        CHAIN,
        targets,
        method="probe",
        pole=[1.0, 2.0, 3.0],
        target_rotation=goal,
        initial=2.0 * start,
    )
    problem = probe.problems[-1]
    assert problem.poles is not None
    assert problem.target_rotations is not None
    np.testing.assert_array_equal(problem.poles, np.broadcast_to([1.0, 2.0, 3.0], (6, 3)))
    np.testing.assert_array_equal(problem.target_rotations, np.broadcast_to(rot.identity(), (6, 4)))
    np.testing.assert_allclose(problem.initial, np.broadcast_to(start, (6, N, 4)), atol=1e-15)
    # The probe returns the start pose, so the angle error is the effector frame's angle.
    effector_rotation = forward_kinematics(CHAIN, start)[1][-1]
    assert result.angle_error is not None
    assert result.angle_error.shape == (2, 3)
    np.testing.assert_allclose(result.angle_error, rot.angle(effector_rotation), atol=1e-12)


def test_orientation_goal_convergence_uses_position_weight(probe: _Probe) -> None:
    target = [0.0, 0.0, 40.0]
    at_rest = forward_kinematics(CHAIN)[1][-1]
    other = rot.from_axis_angle([0.0, 1.0, 0.0], 0.3)
    # Position reached, orientation reached: converged for any weight.
    assert solve(CHAIN, target, method="probe", target_rotation=at_rest).success
    # Orientation missed: converged only when it is ignored (weight 1).
    assert not solve(CHAIN, target, method="probe", target_rotation=other).success
    assert solve(CHAIN, target, method="probe", target_rotation=other, position_weight=1.0).success
    # Position missed, orientation reached: converged only when position is ignored.
    far = [0.0, 5.0, 30.0]
    assert not solve(CHAIN, far, method="probe", target_rotation=at_rest).success
    assert solve(CHAIN, far, method="probe", target_rotation=at_rest, position_weight=0.0).success


# ---------------------------------------------------------------------- real methods (smoke)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_returns_consistent_results(method: str) -> None:
    """Shapes, finiteness and positions = FK(rotations) for each registered method."""
    targets = np.array([[10.0, 5.0, 20.0], [0.0, 0.0, 40.0], [0.0, 0.0, 0.0], [100.0, 0.0, 0.0]])
    result = solve(CHAIN, targets, method=method, max_iterations=20)
    assert result.rotations.shape == (4, N, 4)
    assert np.all(np.isfinite(result.rotations))
    assert np.all(np.isfinite(result.positions))
    positions = forward_kinematics(CHAIN, result.rotations)[0]
    np.testing.assert_allclose(result.positions, positions, atol=1e-9 * CHAIN.reach)
    np.testing.assert_allclose(
        result.error, np.linalg.norm(positions[:, -1] - targets, axis=-1), atol=1e-9
    )
    single = solve(CHAIN, targets[0], method=method, max_iterations=20)
    assert single.rotations.shape == (N, 4)
    assert single.error.shape == ()


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"pole": [3.0, -20.0, 5.0]},
        {"target_rotation": [0.9, 0.1, -0.3, 0.2]},
        {"pole": [1.0, 2.0, 3.0], "options": SolveOptions(pole_angle=0.7, max_iterations=15)},
    ],
)
def test_solve_one_gives_the_numbers_of_solve(method: str, kwargs: dict[str, object]) -> None:
    """solve_one: the same problem as solve for one target, bit for bit, without measuring."""
    options = kwargs.pop("options", SolveOptions(max_iterations=15))
    assert isinstance(options, SolveOptions)
    for target in ([10.0, 5.0, 20.0], [0.0, 0.0, 0.0], [1e12, 0.0, 3.0]):
        full = solve(CHAIN, target, method=method, options=options, **kwargs)  # type: ignore[arg-type]
        one = solve_one(CHAIN, target, method=method, options=options, **kwargs)  # type: ignore[arg-type]
        assert one.rotations.shape == (1, N, 4)
        assert one.positions.shape == (1, N + 1, 3)
        np.testing.assert_array_equal(one.rotations[0], full.rotations)
        np.testing.assert_array_equal(one.positions[0], full.positions)
        np.testing.assert_array_equal(one.iterations[0], full.iterations)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": [1.0, 2.0]}, r"target must have shape \(3,\)"),
        ({"target": [1.0, math.nan, 2.0]}, "target must be finite"),
        ({"target": [1.0, 2.0, 3.0], "pole": [math.inf, 0.0, 0.0]}, "pole must be finite"),
        ({"target": [1.0, 2.0, 3.0], "target_rotation": [0.0] * 4}, "non-zero quaternion"),
        ({"target": [1.0, 2.0, 3.0], "method": "nope"}, "valid methods are"),
        ({"target": [1.0, 2.0, 3.0], "options": {"tolerance": 1.0}}, "must be a SolveOptions"),
    ],
)
def test_solve_one_checks_its_inputs(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SolveInputError, match=message):
        solve_one(CHAIN, **kwargs)  # type: ignore[arg-type]


LIMITED = Chain.from_lengths([9.0, 9.0, 4.0], bend_limits_deg=[None, 120.0, 90.0])


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("chain", [CHAIN, LIMITED], ids=["free", "limited"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"pole": [3.0, -20.0, 5.0]},
        {"pole": (1.0, 2.0, 3.0), "options": SolveOptions(pole_angle=0.7, bend_plane="minimal")},
        {"options": SolveOptions(delta_b_deg=90.0, max_iterations=15)},
    ],
)
def test_solve_floats_gives_the_numbers_of_solve_one(
    method: str, chain: Chain, kwargs: dict[str, object]
) -> None:
    """solve_floats: solve_one's numbers bit for bit, as plain floats (triangulation on a
    free chain takes its float pass, everything else goes through solve_one)."""
    options = kwargs.pop("options", SolveOptions(max_iterations=15))
    assert isinstance(options, SolveOptions)
    targets = ([10.0, 5.0, 20.0], (0.0, 0.0, 0.0), np.array([1e12, 0.0, 3.0]), [0.0, 0.0, 2.0])
    for target in targets:
        one = solve_one(chain, target, method=method, options=options, **kwargs)  # type: ignore[arg-type]
        rotations, positions = solve_floats(chain, target, method=method, options=options, **kwargs)  # type: ignore[arg-type]
        assert all(type(x) is float for q in rotations for x in q)
        assert all(type(x) is float for p in positions for x in p)
        np.testing.assert_array_equal(np.array(rotations), one.rotations[0])
        np.testing.assert_array_equal(np.array(positions), one.positions[0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": [1.0, 2.0]}, "target must be 3 finite numbers"),
        ({"target": "abc"}, "target must be 3 finite numbers"),
        ({"target": [1.0, math.nan, 2.0]}, "target must be finite"),
        ({"target": [1.0, 2.0, 3.0], "pole": [math.inf, 0.0, 0.0]}, "pole must be finite"),
        ({"target": [1.0, 2.0, 3.0], "method": "nope"}, "valid methods are"),
        ({"target": [1.0, 2.0, 3.0], "options": {"tolerance": 1.0}}, "must be a SolveOptions"),
    ],
)
def test_solve_floats_checks_its_inputs(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SolveInputError, match=message):
        solve_floats(CHAIN, **kwargs)  # type: ignore[arg-type]


def _random_chain(rng: np.random.Generator, n: int) -> Chain:
    """A free chain of ``n`` links with random rest rotations and offsets (some collinear)."""
    axes = rng.normal(size=(n, 3))
    angles = rng.uniform(-1.5, 1.5, n) * (rng.uniform(size=n) < 0.7)
    rests = rot.from_axis_angle(axes / np.linalg.norm(axes, axis=1, keepdims=True), angles)
    offsets = rng.normal(size=(n, 3))
    offsets[rng.uniform(size=n) < 0.4] = (0.0, 1.0, 0.0)
    return Chain(offsets * rng.uniform(0.2, 2.0, (n, 1)), rests)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 6),
    where=st.sampled_from(["inside", "beyond", "near the root", "root", "far"]),
    pole=st.booleans(),
    delta_b=st.sampled_from([90.0, 180.0]),
    bend_plane=st.sampled_from(["rest", "minimal"]),
    pole_angle=st.sampled_from([0.0, 0.8, -2.5]),
)
def test_solve_points_gives_the_positions_of_solve_one(
    seed: int, n: int, where: str, pole: bool, delta_b: float, bend_plane: str, pole_angle: float
) -> None:
    """Triangulation's positions-only passes on free chains (two links in closed form, other
    lengths without joint frames): solve_one's joint positions to rounding. Where the pass is
    ill-conditioned (the δb = 90° guard's √(1 − cos²δ) near a fold, a link nearly along
    ``ĉ``) any change of rounding is magnified, to 8e-9 of the reach in the worst case
    hypothesis found, hence the tolerance."""
    rng = np.random.default_rng(seed)
    chain = _random_chain(rng, n)
    scale = {"inside": 0.6, "beyond": 1.5, "near the root": 0.05, "root": 0.0, "far": 1e9}
    target = rng.normal(size=3) * scale[where] * chain.reach
    options = SolveOptions(
        delta_b_deg=delta_b,
        bend_plane="rest" if bend_plane == "rest" else "minimal",
        pole_angle=pole_angle,
    )
    pole_at = (rng.normal(size=3) * chain.reach).tolist() if pole else None
    expected = solve_one(chain, target, pole=pole_at, options=options).positions[0]
    points = solve_points(chain, target.tolist(), pole=pole_at, options=options)
    assert all(type(x) is float for p in points for x in p)
    np.testing.assert_allclose(np.array(points), expected, rtol=0.0, atol=1e-7 * chain.reach)


@pytest.mark.parametrize("pole_angle", [0.0, 1.1])
def test_solve_points_of_two_links_agree_tightly_where_well_conditioned(pole_angle: float) -> None:
    """Two links, targets inside the reach away from the folds, with and without poles: the
    closed form agrees with the full pass to a few ulps of the reach."""
    rng = np.random.default_rng(7)
    options = SolveOptions(pole_angle=pole_angle)
    for _ in range(300):
        chain = _random_chain(rng, 2)
        direction = rng.normal(size=3)
        lo = abs(chain.lengths[0] - chain.lengths[1])
        distance = lo + (chain.reach - lo) * rng.uniform(0.05, 0.95)
        target = direction / np.linalg.norm(direction) * distance
        pole = (rng.normal(size=3) * chain.reach).tolist()
        for kwargs in ({}, {"pole": pole}):
            points = solve_points(chain, target.tolist(), options=options, **kwargs)
            _, positions = solve_floats(chain, target.tolist(), options=options, **kwargs)
            np.testing.assert_allclose(points, positions, rtol=0.0, atol=1e-14 * chain.reach)


def test_solve_points_beyond_a_tiny_last_link_takes_the_full_pass() -> None:
    """A target on a joint beyond the triangle (a link under 1e-12 of the reach) would need
    the turns the positions-only passes no longer compose: they take the full pass."""
    for lengths in ([1e4, 2e-9], [1e4, 1.0, 2e-9]):
        chain = Chain.from_lengths(lengths)
        target = [0.0, sum(lengths[:-1]), 0.0]
        points = solve_points(chain, target)
        np.testing.assert_array_equal(np.array(points), solve_one(chain, target).positions[0])


SEEDED = ("ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls")


@pytest.mark.parametrize("method", SEEDED)
@pytest.mark.parametrize("where", ["inside", "beyond", "near the root", "root"])
def test_solve_points_of_seeded_methods_on_free_chains_give_solve_one_positions(
    method: str, where: str
) -> None:
    """CCD and the Jacobian methods start from triangulation's pose and keep it where it
    meets the goal: solve_points then takes triangulation's positions-only pass. Oracle:
    solve_one's joint positions (the methods' own iteration), inside and beyond the reach."""
    rng = np.random.default_rng(11)
    scale = {"inside": 0.6, "beyond": 1.5, "near the root": 0.05, "root": 0.0}
    for n in (1, 2, 3, 5):
        for _ in range(15):
            chain = _random_chain(rng, n)
            target = rng.normal(size=3) * scale[where] * chain.reach
            pole = (rng.normal(size=3) * chain.reach).tolist() if rng.uniform() < 0.5 else None
            expected = solve_one(chain, target, method=method, pole=pole).positions[0]
            points = solve_points(chain, target.tolist(), method=method, pole=pole)
            np.testing.assert_allclose(np.array(points), expected, atol=1e-7 * chain.reach)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_solve_points_of_other_chains_and_methods_are_solve_floats_positions(method: str) -> None:
    """Chains, methods and starts that do not take triangulation's positions-only pass give
    solve_floats' positions exactly."""
    options = SolveOptions(max_iterations=15, ccd_start="initial", jacobian_start="initial")
    for chain in (CHAIN, LIMITED):
        points = solve_points(chain, [10.0, 5.0, 12.0], method=method, options=options)
        _, positions = solve_floats(chain, [10.0, 5.0, 12.0], method=method, options=options)
        assert [list(p) for p in points] == [list(p) for p in positions]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": [1.0, 2.0]}, "target must be 3 finite numbers"),
        ({"target": [1.0, math.nan, 2.0]}, "target must be finite"),
        ({"target": [1.0, 2.0, 3.0], "pole": [math.inf, 0.0, 0.0]}, "pole must be finite"),
        ({"target": [1.0, 2.0, 3.0], "method": "nope"}, "valid methods are"),
    ],
)
def test_solve_points_checks_its_inputs(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SolveInputError, match=message):
        solve_points(CHAIN, **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- SolveOptions
def test_default_options_are_valid_and_frozen() -> None:
    opts = SolveOptions()
    assert opts.tolerance is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.max_iterations = 3  # type: ignore[misc]


def test_replace_changes_one_field_and_rejects_unknown_names() -> None:
    opts = SolveOptions()
    changed = opts.replace(step=0.25, rotation_params="euler")
    assert (changed.step, changed.rotation_params) == (0.25, "euler")
    assert opts.step == 0.5
    with pytest.raises(SolveInputError, match=r"unknown option.*dampning.*valid options are"):
        opts.replace(dampning=0.1)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_iterations", 0, "max_iterations must be an integer >= 1"),
        ("max_iterations", 2.5, "max_iterations must be an integer >= 1"),
        ("max_iterations", True, "max_iterations must be an integer >= 1"),
        ("tolerance", 0.0, "tolerance must be > 0"),
        ("tolerance", math.inf, "tolerance must be > 0"),
        ("tolerance", math.nan, "tolerance must be > 0"),
        ("angle_tolerance", -1e-3, "angle_tolerance must be > 0 radians"),
        ("angle_tolerance", math.nan, "angle_tolerance must be > 0 radians"),
        ("position_weight", 1.5, r"position_weight must be in \[0, 1\]"),
        ("position_weight", math.nan, r"position_weight must be in \[0, 1\]"),
        ("pole_angle", math.inf, "pole_angle must be a finite angle"),
        ("bend_plane", "plane", "bend_plane must be 'rest' or 'minimal'"),
        ("delta_b_deg", 45.0, "delta_b_deg must be 180 .* or 90"),
        ("sweep_steps", -1, "sweep_steps must be an integer >= 0"),
        ("sweep_steps", 2.0, "sweep_steps must be an integer >= 0"),
        ("step", 0.0, r"step must be in \(0, 1\]"),
        ("step", 1.5, r"step must be in \(0, 1\]"),
        ("max_step_deg", 0.0, r"max_step_deg must be in \(0, 180\]"),
        ("max_step_deg", 270.0, r"max_step_deg must be in \(0, 180\]"),
        ("damping", -0.1, "damping must be >= 0"),
        ("damping", math.inf, "damping must be >= 0"),
        ("singular_cutoff", 0.0, r"singular_cutoff must be in \(0, 1\)"),
        ("singular_cutoff", 1.0, r"singular_cutoff must be in \(0, 1\)"),
        ("rotation_params", "quaternion", "rotation_params must be 'expmap' or 'euler'"),
        ("posture_weight", -1.0, "posture_weight must be >= 0"),
        ("posture_weight", math.nan, "posture_weight must be >= 0"),
    ],
)
def test_invalid_option_values(field: str, value: object, message: str) -> None:
    with pytest.raises(SolveInputError, match=message):
        SolveOptions(**{field: value})  # type: ignore[arg-type]
    with pytest.raises(SolveInputError, match=message):
        SolveOptions().replace(**{field: value})


@pytest.mark.parametrize("value", [1, 99, np.int64(99), np.int32(5)])
def test_integer_options_accept_numpy_integers(value: object) -> None:
    """Scripts often compute counts with numpy; an np.int64 is an integer too."""
    assert SolveOptions(max_iterations=value, sweep_steps=value).max_iterations == value  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [("delta_b_deg", 90), ("delta_b_deg", 180.0), ("position_weight", 0), ("tolerance", 1e-9)],
)
def test_valid_option_edge_values(field: str, value: object) -> None:
    assert getattr(SolveOptions(**{field: value}), field) == value  # type: ignore[arg-type]


# ---------------------------------------------------------------------- robustness (issue 11)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_an_empty_batch_gives_an_empty_result(method: str) -> None:
    res = solve(CHAIN, np.zeros((0, 3)), method=method)
    assert res.rotations.shape == (0, N, 4)
    assert res.positions.shape == (0, N + 1, 3)
    assert res.error.shape == (0,)
    assert res.message.startswith(f"{method}: 0 of 0 goals reached")


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("scale", [1e77, 1e150])
def test_huge_links_give_finite_results(method: str, scale: float) -> None:
    """Lengths whose squares (or Heron's product of four) overflow."""
    chain = Chain.from_lengths(np.array([1.0, 2.0, 1.0]) * scale)
    target = np.array([1.0, 1.0, 1.0]) * scale
    res = solve(chain, target, method=method)
    assert np.all(np.isfinite(res.rotations))
    assert np.all(np.isfinite(res.positions))
    np.testing.assert_allclose(
        forward_kinematics(chain, res.rotations)[0] / scale, res.positions / scale, atol=1e-9
    )
    if method == "triangulation":  # one exact pass: reached as at scale 1
        assert res.error <= 1e-12 * chain.reach


def test_triangulation_float_paths_decline_huge_chains() -> None:
    """solve_floats and solve_points of a chain of huge links go through the scaled pass."""
    chain = Chain.from_lengths([1e77, 2e77, 1e77])
    rots, pos = solve_floats(chain, (1e77, 1e77, 1e77))
    assert np.all(np.isfinite(rots))
    assert np.all(np.isfinite(pos))
    assert math.dist(pos[-1], (1e77, 1e77, 1e77)) <= 1e-12 * chain.reach
    points = solve_points(chain, (1e77, 1e77, 1e77))
    assert np.all(np.isfinite(points))


@pytest.mark.parametrize(
    "quaternion", [[1e-13, 0.0, 0.0, 0.0], [1e-170, 1e-170, 0.0, 0.0], [5e-324, 0.0, 0.0, 0.0]]
)
def test_target_rotations_that_round_to_zero_are_refused(quaternion: list[float]) -> None:
    with pytest.raises(SolveInputError, match="target_rotation must be non-zero quaternions"):
        solve(CHAIN, [1.0, 2.0, 3.0], target_rotation=quaternion, method="jacobian_dls")
    with pytest.raises(SolveInputError, match="target_rotation must be non-zero quaternions"):
        solve_one(CHAIN, [1.0, 2.0, 3.0], target_rotation=quaternion, method="jacobian_dls")


def test_huge_target_rotations_are_normalised_without_overflow() -> None:
    """[1e200] * 4 is the quaternion (½, ½, ½, ½): its squared length overflows to inf, and
    dividing by it once gave a zero quaternion, accepted as a goal."""
    res = solve(CHAIN, [1.0, 2.0, 3.0], target_rotation=[1e200] * 4, method="jacobian_dls")
    ref = solve(CHAIN, [1.0, 2.0, 3.0], target_rotation=[0.5] * 4, method="jacobian_dls")
    np.testing.assert_allclose(res.rotations, ref.rotations, atol=1e-12)
    assert res.angle_error is not None
    assert ref.angle_error is not None
    np.testing.assert_allclose(res.angle_error, ref.angle_error, atol=1e-12)


@pytest.mark.parametrize(
    ("target", "kind"), [("abc", "str"), ({"x": 1.0}, "dict"), (["a", "b", "c"], "list")]
)
def test_string_or_dict_targets_raise_a_reach_ik_error(target: Any, kind: str) -> None:
    for call in (solve, solve_one):
        with pytest.raises(ReachIKError, match=rf"target must be numbers of shape .* got a {kind}"):
            call(CHAIN, target)
    with pytest.raises(ReachIKError, match="pole must be numbers"):
        solve(CHAIN, [1.0, 2.0, 3.0], pole="up")
    with pytest.raises(ReachIKError, match="initial must be numbers"):
        solve(CHAIN, [1.0, 2.0, 3.0], initial={"q": 1})  # type: ignore[arg-type]


def test_messages_tell_out_of_reach_from_unreachable_within_limits() -> None:
    """A knee that bends one way only (X in [0.1, 2.5]): a target that needs it bent the other
    way is within the leg's length but unreachable within limits; one beyond the length is
    out of reach; a free chain missing nothing says neither."""
    from core.limits import JointLimits

    knee = JointLimits(lock=(False, True, True), ranges=((0.1, 2.5), None, None))
    root = JointLimits(lock=(False, True, True), ranges=((-0.2, 0.2), None, None))
    leg = Chain.from_lengths([1.0, 1.0], (0.0, 0.0, -1.0), limits=[root, knee])
    # the leg hangs along −Z and bends in the YZ plane only: a target off that plane at
    # distance 1.5 cannot be reached, one at distance 3 is out of reach
    res = solve(leg, [[1.5, 0.0, 0.0], [0.0, 0.0, -3.0]])
    assert not res.converged.any()
    assert "1 out of reach" in res.message
    assert "1 within the chain's length unreachable within limits" in res.message
    for i, lim in enumerate(leg.limits):
        assert float(np.max(lim.violation(res.rotations[:, i]))) <= 1e-9
    free = solve(CHAIN, [0.0, 5.0, 5.0])
    assert "out of reach" not in free.message
    assert "within limits" not in free.message
