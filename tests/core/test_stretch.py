# SPDX-License-Identifier: GPL-3.0-or-later
"""Stretch and soft reach (core.stretch), against closed forms.

Oracles: a chain stretched toward a target beyond its reach lies straight on the
root→target segment with link ``i`` lengthened by ``(d − R) · w_i³ / Σ w³`` (the rule of
core.stretch); lengths and straightness are measured on the returned joint positions, not
read from ``scales``. Soft reach: the aimed distance is the closed form
``R − s · exp(−(d − d0) / s)`` beyond ``d0 = R − s``, and the curve's value and slope are
compared either side of ``d0`` by finite differences.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from core import Chain, SolveOptions, forward_kinematics, solve
from core import rotations as rot
from core.errors import ChainError, ReachIKError, SolveInputError
from core.solver import solve_floats, solve_one, solve_points
from core.stretch import soft_distance, soft_float

METHODS = ["triangulation", "ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls", "fabrik"]
ARM = Chain.from_lengths([0.3, 0.5], direction=(0.2, 0.3, 1.0), stretch=[0.1, 0.1])
LEG = Chain.from_lengths([0.4, 0.3, 0.3], stretch=[1.0, 0.0, 0.5], bend_limits_deg=[None, 150, 90])


def _expected_lengths(chain: Chain, distance: float) -> np.ndarray:
    w3 = np.array(chain.stretch) ** 3
    return chain.lengths + (distance - chain.reach) * w3 / w3.sum()


def _link_lengths(positions: np.ndarray) -> np.ndarray:
    return np.linalg.norm(np.diff(positions, axis=-2), axis=-1)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("chain", [ARM, LEG], ids=["arm", "leg"])
def test_stretched_chain_reaches_beyond_reach_straight(method: str, chain: Chain) -> None:
    rng = np.random.default_rng(7)
    directions = rng.normal(size=(6, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    factors = np.array([1.0001, 1.05, 1.3, 2.0, 10.0, 1000.0])
    targets = directions * (chain.reach * factors)[:, None]
    result = solve(chain, targets, method=method, stretch=True)
    assert result.scales is not None
    assert result.scales.shape == (6, chain.n_joints)
    distance = np.linalg.norm(targets, axis=1)
    # Within the solve's tolerance (1e-6 x the stretched reach; the closed-form methods
    # land to rounding).
    assert np.all(result.error <= 1e-6 * distance), result.error
    assert result.success, result.message
    assert "the links stretch" in result.message
    for k in range(6):
        lengths = _link_lengths(result.positions[k])
        np.testing.assert_allclose(lengths, _expected_lengths(chain, distance[k]), rtol=1e-9)
        np.testing.assert_allclose(result.scales[k] * chain.lengths, lengths, rtol=1e-9)
        # Straight: every joint on the root→target segment, in order. Triangulation places
        # it in closed form; an iteration that stops within its tolerance t of the target
        # may leave a joint off the line by up to about sqrt(2·t·d) (the span shortens by
        # the square of the offset over the length).
        along = result.positions[k] @ directions[k]
        off_line = result.positions[k] - along[:, None] * directions[k]
        bar = 1e-9 if method == "triangulation" else math.sqrt(2e-6)
        assert np.abs(off_line).max() <= bar * distance[k]
        assert np.all(np.diff(along) > 0.0)


def test_equal_weights_lengthen_every_link_by_the_same_amount() -> None:
    """Blender's measured split (0.3/0.5 m bones, both 0.1, at 1.3x reach: +120 mm each)."""
    result = solve(ARM, np.array([0.2, 0.3, 1.0]) / math.sqrt(1.13) * 1.04, stretch=True)
    np.testing.assert_allclose(_link_lengths(result.positions) - ARM.lengths, [0.12, 0.12])


@pytest.mark.parametrize("method", METHODS)
def test_within_reach_stretch_changes_nothing(method: str) -> None:
    rng = np.random.default_rng(3)
    targets = rng.normal(size=(8, 3))
    targets *= (ARM.reach * rng.uniform(0.05, 0.999, 8) / np.linalg.norm(targets, axis=1))[:, None]
    plain = solve(ARM, targets, method=method)
    stretched = solve(ARM, targets, method=method, stretch=True)
    assert stretched.scales is not None
    assert np.all(stretched.scales == 1.0)
    np.testing.assert_array_equal(stretched.rotations, plain.rotations)
    np.testing.assert_array_equal(stretched.positions, plain.positions)


@pytest.mark.parametrize("method", METHODS)
def test_stretch_off_is_unchanged(method: str) -> None:
    """A chain with stretch weights solves exactly as one without while stretch is off."""
    without = Chain.from_lengths([0.3, 0.5], direction=(0.2, 0.3, 1.0))
    targets = np.array([[0.1, 0.2, 0.5], [0.0, 0.0, 2.0], [0.5, -0.3, 0.1]])
    a = solve(ARM, targets, method=method)
    b = solve(without, targets, method=method)
    assert a.scales is None
    assert b.scales is None
    np.testing.assert_array_equal(a.rotations, b.rotations)
    np.testing.assert_array_equal(a.positions, b.positions)
    assert a.message == b.message


def test_no_weight_no_stretch() -> None:
    chain = Chain.from_lengths([1.0, 1.0], stretch=[0.0, 0.0])
    result = solve(chain, [0.0, 0.0, 3.0], stretch=True)
    assert result.scales is None
    assert result.error == pytest.approx(1.0)


def test_single_target_entry_points_agree() -> None:
    opts = SolveOptions(stretch=True, soft_reach=0.05)
    for target in ([0.1, 0.2, 0.5], [0.3, 0.1, 1.2], [0.0, 0.0, 0.78]):
        full = solve(ARM, target, options=opts)
        one = solve_one(ARM, target, options=opts)
        rotations, positions = solve_floats(ARM, target, options=opts)
        points = solve_points(ARM, target, options=opts)
        np.testing.assert_array_equal(one.positions[0], full.positions)
        assert one.scales is not None
        assert full.scales is not None
        np.testing.assert_array_equal(one.scales[0], full.scales)
        np.testing.assert_array_equal(np.array(rotations), full.rotations)
        np.testing.assert_array_equal(np.array(positions), full.positions)
        np.testing.assert_array_equal(np.array(points), full.positions)


# ---------------------------------------------------------------------- soft reach
def test_soft_curve_closed_form_and_limits() -> None:
    reach, soft = 2.0, 0.5
    start = reach - soft
    d = np.array([0.0, 0.7, start, start + 0.1, 3.0, 1e3, 1e300])
    out = soft_distance(d, reach, soft)
    np.testing.assert_array_equal(out[:3], d[:3])
    np.testing.assert_allclose(out[3], reach - soft * math.exp(-0.1 / soft), rtol=1e-15)
    assert np.all(np.diff(out) >= 0.0)
    assert np.all(out < reach + 1e-15)
    assert out[-2] == out[-1] == reach
    assert np.all(np.isfinite(out))
    assert soft_float(3.0, reach, soft) == out[4]


def test_soft_curve_value_and_slope_continuous() -> None:
    reach, soft = 1.0, 0.2
    start = reach - soft
    h = 1e-6
    left = (soft_float(start, reach, soft) - soft_float(start - h, reach, soft)) / h
    right = (soft_float(start + h, reach, soft) - soft_float(start, reach, soft)) / h
    assert left == pytest.approx(1.0, abs=1e-9)
    assert right == pytest.approx(1.0, abs=1e-5)  # slope e^(-h/s) just past d0
    assert abs(soft_float(start + 1e-12, reach, soft) - start) < 2e-12


@pytest.mark.parametrize("method", METHODS)
def test_soft_reach_aims_at_the_closed_form_distance(method: str) -> None:
    soft = 0.1
    direction = np.array([0.6, 0.0, 0.8])
    for d in (0.5, 0.75, 0.8, 1.2, 50.0):
        result = solve(ARM, direction * d, method=method, soft_reach=soft)
        aimed = d if d <= ARM.reach - soft else ARM.reach - soft * math.exp(-(d - 0.7) / soft)
        effector = result.positions[-1]
        assert np.linalg.norm(effector - direction * aimed) <= 1e-6 * ARM.reach, (d, effector)
        assert result.error == pytest.approx(d - aimed, abs=1e-6)
        assert result.scales is None


def test_soft_reach_with_stretch_reaches_with_the_soft_shape() -> None:
    """With stretch the links make up what soft reach leaves short: the stretched chain's
    reach is R·d/d_soft, so the target sits where the soft aim sat (bent, not straight)."""
    soft = 0.1
    for d in (0.75, 0.8, 1.0, 3.0):
        target = np.array([0.0, 0.6, 0.8]) * d
        result = solve(ARM, target, soft_reach=soft, stretch=True)
        assert result.error <= 1e-12
        lengths = _link_lengths(result.positions)
        aimed = ARM.reach - soft * math.exp(-(d - 0.7) / soft)
        assert lengths.sum() == pytest.approx(ARM.reach * d / aimed, rel=1e-12)
        np.testing.assert_allclose(lengths - ARM.lengths, (lengths.sum() - ARM.reach) / 2)


@pytest.mark.parametrize("target", [[0.0, 0.0, 0.0], [1e300, 0.0, 0.0], [0.0, -1e-300, 0.0]])
@pytest.mark.parametrize(
    "options",
    [
        {"stretch": True},
        {"soft_reach": 0.2},
        {"stretch": True, "soft_reach": 0.2},
        {"stretch": True, "stretch_rule": "blender"},
    ],
)
def test_no_nan_at_the_root_or_far_away(target: list[float], options: dict) -> None:
    for method in METHODS:
        result = solve(ARM, target, method=method, **options)
        assert np.all(np.isfinite(result.positions))
        assert np.all(np.isfinite(result.rotations))
        if result.scales is not None:
            assert np.all(np.isfinite(result.scales))
            # The closed form only lengthens; Blender's iteration may shorten a link.
            shortest = 0.0 if options.get("stretch_rule") == "blender" else 1.0
            assert np.all(result.scales >= shortest)
            assert np.all(result.scales > 0.0)


# ---------------------------------------------------------------------- orientation goals
#: A 3-link chain for orientation goals: two upper links that reach an annulus, weights apart.
WRISTED = Chain.from_lengths([0.3, 0.3, 0.15], direction=(0.2, 0.3, 1.0), stretch=[0.1, 0.3, 0.2])


def _random_goals(rng: np.random.Generator, chain: Chain, size: int) -> tuple[np.ndarray, ...]:
    directions = rng.normal(size=(size, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    targets = directions * chain.reach * rng.uniform(0.3, 2.0, size=(size, 1))
    return targets, rot.normalize(rng.normal(size=(size, 4)))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("chain", [ARM, WRISTED], ids=["arm", "three"])
@pytest.mark.parametrize("rule", ["closed_form", "blender"])
def test_orientation_goals_with_stretch_are_met_by_every_method(
    method: str, chain: Chain, rule: str
) -> None:
    """Random targets (0.3–2 × the reach) and goal orientations, most of which no pose of
    the unstretched chain meets: with stretch every method meets both, checked by forward
    kinematics of the returned rotations on the chain with the returned scales (the
    position to the solve's tolerance: FABRIK's rounds stop there)."""
    targets, goals = _random_goals(np.random.default_rng(11), chain, 16)
    result = solve(
        chain,
        targets,
        method=method,
        target_rotation=goals,
        position_weight=0.5,
        stretch=True,
        stretch_rule=rule,
    )
    assert result.scales is not None
    assert np.any(result.scales < 1.0)  # (both ways, often)
    assert np.any(result.scales > 1.5)
    for k in range(len(targets)):
        stretched = chain.scaled(result.scales[k])
        positions, frames = forward_kinematics(stretched, result.rotations[k])
        assert np.linalg.norm(positions[-1] - targets[k]) <= 1e-6 * chain.reach
        turn = rot.multiply(rot.conjugate(goals[k]), frames[-1])
        assert float(rot.angle(turn)) <= 1e-9


@pytest.mark.parametrize("chain", [ARM, WRISTED], ids=["arm", "three"])
def test_orientation_goals_take_the_least_weighted_change_of_length(chain: Chain) -> None:
    """The lengths minimise ``Σ δ_i² / w_i³`` over the lengths that put the wrist within
    reach of the upper links (core.stretch, *Orientation goals*): against a brute-force
    scan of the last link's change ``x`` (the upper links then change by the least that
    reaches the wrist, shared by their weights), on a grid of 20,001 values."""
    targets, goals = _random_goals(np.random.default_rng(5), chain, 12)
    scales = solve(chain, targets, target_rotation=goals, position_weight=0.5, stretch=True).scales
    assert scales is not None
    w3 = np.array(chain.stretch) ** 3
    rest = chain.lengths
    upper = rest[:-1].sum()
    for k in range(len(targets)):
        last = rot.rotate(goals[k], chain.offsets[-1])
        u = last / rest[-1]
        x = np.linspace(-0.999 * rest[-1], 3.0 * rest[-1], 20_001)  # (no shorter: 1e-3)
        wrist = np.linalg.norm(targets[k] - last - u * x[:, None], axis=1)
        need = wrist - upper if chain.n_joints == 2 else np.maximum(wrist - upper, 0.0)
        cost = x * x / w3[-1] + need * need / w3[:-1].sum()
        changes = scales[k] * rest - rest
        ours = float(np.sum(changes * changes / w3))
        assert ours <= cost.min() + 1e-9
        assert ours >= cost.min() * (1.0 - 1e-3) - 1e-8  # (the grid's own resolution)
        np.testing.assert_allclose(changes[:-1] / w3[:-1], changes[0] / w3[0], atol=1e-12)


@pytest.mark.parametrize("weights", [[0.1, 0.3, 0.2], [0.0, 0.0, 0.5]], ids=["all", "last"])
def test_orientation_goals_the_chain_meets_keep_the_lengths(weights: list[float]) -> None:
    """Goals of poses the unstretched chain takes (forward kinematics of random poses):
    nothing changes length — also where only the last link may stretch."""
    chain = Chain(WRISTED.offsets, WRISTED.rest_rotations, WRISTED.limits, stretch=weights)
    rng = np.random.default_rng(2)
    poses = rot.normalize(rng.normal(size=(20, chain.n_joints, 4)))
    positions, frames = forward_kinematics(chain, poses)
    result = solve(
        chain,
        positions[:, -1],
        target_rotation=frames[:, -1],
        position_weight=0.5,
        stretch=True,
    )
    assert result.scales is not None
    np.testing.assert_array_equal(result.scales, 1.0)
    assert result.error.max() <= 1e-9 * chain.reach


def test_orientation_goals_with_soft_reach_keep_the_targets_rule() -> None:
    """With soft reach the links stretch as for the target alone (core.stretch)."""
    targets, goals = _random_goals(np.random.default_rng(3), ARM, 8)
    oriented = solve(
        ARM, targets, target_rotation=goals, position_weight=0.5, stretch=True, soft_reach=0.1
    ).scales
    alone = solve(ARM, targets, stretch=True, soft_reach=0.1).scales
    assert oriented is not None
    assert alone is not None
    np.testing.assert_array_equal(oriented, alone)


@pytest.mark.parametrize("target", [[0.0, 0.0, 0.0], [1e300, 0.0, 0.0], [0.0, -1e-300, 0.0]])
def test_orientation_goals_with_stretch_at_the_root_or_far_away(target: list[float]) -> None:
    for chain in (ARM, WRISTED):
        for method in METHODS:
            result = solve(
                chain,
                target,
                method=method,
                target_rotation=[0.5, 0.5, -0.5, 0.5],
                position_weight=0.5,
                stretch=True,
            )
            assert np.all(np.isfinite(result.rotations))
            assert result.scales is not None
            assert np.all(np.isfinite(result.scales))
            assert np.all(result.scales > 0.0)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("stretch", "words"),
    [
        ([0.1, 1.5], "in [0, 1]"),
        ([0.1], "one per joint"),
        ([0.1, float("nan")], "in [0, 1]"),
        (["a", 0.1], "numbers in [0, 1]"),
    ],
)
def test_bad_stretch_weights(stretch: list, words: str) -> None:
    with pytest.raises(ChainError, match=re.escape(words)):
        Chain.from_lengths([1.0, 1.0], stretch=stretch)


@pytest.mark.parametrize("soft", [-0.1, float("inf"), float("nan"), "1"])
def test_bad_soft_reach(soft: object) -> None:
    with pytest.raises(SolveInputError, match="soft_reach must be a distance >= 0"):
        SolveOptions(soft_reach=soft)  # type: ignore[arg-type]


def test_soft_reach_must_stay_below_the_reach() -> None:
    with pytest.raises(SolveInputError, match=r"below the chain's reach 0\.8"):
        solve(ARM, [0.0, 0.0, 1.0], soft_reach=0.8)
    with pytest.raises(ReachIKError, match="below the chain's reach"):
        solve_floats(ARM, [0.0, 0.0, 1.0], options=SolveOptions(soft_reach=1.0))


def test_stretch_must_be_a_bool() -> None:
    with pytest.raises(SolveInputError, match="stretch must be True or False"):
        SolveOptions(stretch=1)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- Blender's rule
#: Blender 5.0's Standard IK (bpy), measured: two connected bones (0, 0, 0) → (0, b, 0.3) →
#: (0, 0, 0.6), Stretch on, both bones' IK Stretch w, rest pose; each target's change of
#: the two bones' lengths in mm (rounded to 0.01 mm as printed).
BLENDER_MEASURED = {
    (0.02, 0.1): [
        (-12.44, -13.37),
        (-12.38, -13.0),
        (-10.38, -10.77),
        (-6.1, -6.17),
        (-12.9, -13.89),
        (49.27, 49.27),
    ],
    (0.02, 1.0): [
        (-150.17, -150.44),
        (-87.77, -101.17),
        (-74.41, -66.64),
        (-25.02, -25.07),
        (-112.21, -113.97),
        (50.04, 50.13),
    ],
    (0.05, 0.1): [
        (-8.8, -9.75),
        (-8.42, -9.12),
        (-6.08, -6.51),
        (-3.19, -3.27),
        (-8.15, -9.22),
        (45.78, 45.81),
    ],
    (0.05, 1.0): [
        (-151.12, -152.65),
        (-75.54, -117.25),
        (-63.46, -81.05),
        (-25.15, -25.41),
        (-76.9, -155.86),
        (50.25, 50.79),
    ],
}
MEASURED_TARGETS = [
    (0, 0, 0.3),
    (0, 0.1, 0.4),
    (0.2, 0.1, 0.4),
    (0, 0, 0.55),
    (0.1, 0.2, 0.3),
    (0, 0, 0.7),
]


@pytest.mark.parametrize(("bend", "weight"), list(BLENDER_MEASURED))
def test_blender_rule_gives_blenders_measured_lengths(bend: float, weight: float) -> None:
    bent = Chain.from_offsets([[0.0, bend, 0.3], [0.0, -bend, 0.3]])
    chain = Chain(bent.offsets, bent.rest_rotations, None, None, [weight, weight])
    result = solve(
        chain, MEASURED_TARGETS, stretch=True, stretch_rule="blender", max_iterations=500
    )
    assert result.scales is not None
    changes = (result.scales - 1.0) * chain.lengths * 1e3
    np.testing.assert_allclose(changes, BLENDER_MEASURED[(bend, weight)], atol=0.006)
    lengths = _link_lengths(result.positions)
    np.testing.assert_allclose(lengths, result.scales * chain.lengths, rtol=1e-12)
    # Within reach the shortened chain still reaches; beyond it, where Blender stopped.
    assert np.all(result.error[:-1] <= 1e-9)
    assert result.error[-1] <= 1e-3


def test_blender_rule_options() -> None:
    with pytest.raises(SolveInputError, match="stretch_rule must be 'closed_form' or 'blender'"):
        SolveOptions(stretch_rule="iterative")  # type: ignore[arg-type]
    with pytest.raises(SolveInputError, match="soft_reach works with stretch_rule 'closed_form'"):
        SolveOptions(stretch=True, stretch_rule="blender", soft_reach=0.1)
    plain = solve(ARM, [0.1, 0.2, 0.5], stretch_rule="blender")
    assert plain.scales is None  # the rule matters only with stretch on
