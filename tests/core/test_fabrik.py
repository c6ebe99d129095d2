# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.fabrik (Aristidou & Lasenby 2011), core.spread and core.aim.

Oracles: forward kinematics of the returned rotations, targets made by forward kinematics
of random allowed poses (reachable by construction), :meth:`JointLimits.violation`, the
closed-form uniform arc (equal bends), the start pose's bend signs, and the single-target
float path against the batch path on the same inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from limited_chains import admissible_poses, shoulder_chain

from core import SolveInputError, kinematics, solve
from core import rotations as rot
from core.chain import Chain
from core.fabrik import solve_fabrik
from core.kinematics import forward_kinematics
from core.limits import JointLimits
from core.options import SolveOptions
from core.problem import Problem
from core.triangulation import solve_triangulation

HINGE_X = JointLimits(lock=(False, True, True))


def _random_limits(rng: np.random.Generator) -> JointLimits:
    kind = rng.integers(0, 6)
    if kind == 0:
        return JointLimits()
    if kind == 1:
        return HINGE_X
    if kind == 2:  # one-sided hinge, either sign
        hi = float(rng.uniform(0.5, 2.5))
        lo = float(rng.uniform(0.0, 0.3))
        return JointLimits(
            lock=(False, True, True),
            ranges=((lo, hi) if rng.random() < 0.5 else (-hi, -lo), None, None),
        )
    if kind == 3:  # rest-excluding range
        return JointLimits(lock=(False, True, True), ranges=((0.1, 2.5), None, None))
    if kind == 4:
        return JointLimits(cone=float(rng.uniform(0.3, 2.5)))
    return JointLimits(lock=(False, True, False))


def _random_chain(rng: np.random.Generator, limited: bool) -> Chain:
    n = int(rng.integers(2, 9))
    lengths = rng.uniform(0.3, 1.5, size=n)
    limits = [_random_limits(rng) if limited else JointLimits() for _ in range(n)]
    limits[0] = JointLimits()
    return Chain.from_lengths(lengths, direction=(0.0, 1.0, 0.0), limits=limits)


def _admissible(chain: Chain, rng: np.random.Generator, size: int) -> np.ndarray:
    q = rot.normalize(rng.normal(size=(size, chain.n_joints, 4)))
    return np.stack([chain.limits[i].project(q[:, i]) for i in range(chain.n_joints)], axis=1)


def _problem(chain: Chain, targets: np.ndarray, **options: object) -> Problem:
    targets = np.atleast_2d(targets)
    n = chain.n_joints
    return Problem(
        chain,
        targets,
        None,
        None,
        np.broadcast_to(rot.identity((n,)), (targets.shape[0], n, 4)),
        1e-6 * chain.reach,
        SolveOptions(**options),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("limited", [False, True])
def test_positions_are_forward_kinematics_and_limits_hold(limited: bool) -> None:
    rng = np.random.default_rng(11)
    for _ in range(30):
        chain = _random_chain(rng, limited)
        targets = rng.normal(size=(40, 3)) * chain.reach * 0.7
        res = solve(chain, targets, method="fabrik")
        pos, _ = forward_kinematics(chain, res.rotations)
        np.testing.assert_allclose(res.positions, pos, atol=1e-9 * chain.reach)
        assert np.all(np.isfinite(res.rotations))
        for i, lim in enumerate(chain.limits):
            assert np.max(lim.violation(res.rotations[:, i])) <= 1e-6


@pytest.mark.parametrize("limited", [False, True])
def test_reaches_targets_reachable_by_construction(limited: bool) -> None:
    """The issue's property: ≥ 99.5 % reached to 1e-4 × reach, limits held to 1e-6 rad."""
    rng = np.random.default_rng(5)
    reached = total = 0
    for _ in range(20):
        chain = _random_chain(rng, limited)
        targets = forward_kinematics(chain, _admissible(chain, rng, 25))[0][:, -1]
        res = solve(chain, targets, method="fabrik", max_iterations=200)
        reached += int(np.count_nonzero(res.error <= 1e-4 * chain.reach))
        total += len(targets)
    assert reached >= 0.995 * total, (reached, total)


def test_single_float_path_equals_batch_path() -> None:
    """Same arithmetic on floats and on arrays: the same pose where the target is reached.
    Where the limits keep it out of reach the iterations run to the cap and numpy's
    projection of one row against many may round differently, which the passes then
    amplify, as do CCD's sweeps that continue from there (only the distances left are
    compared there, to 1e-4 of the reach)."""
    rng = np.random.default_rng(3)
    compared = 0
    for _ in range(20):
        chain = _random_chain(rng, bool(rng.random() < 0.5))
        targets = rng.normal(size=(8, 3)) * chain.reach * 0.6
        poles = rng.normal(size=(8, 3)) if rng.random() < 0.5 else None
        batch = solve(chain, targets, method="fabrik", pole=poles)
        for k in range(len(targets)):
            one = solve(
                chain, targets[k], method="fabrik", pole=None if poles is None else poles[k]
            )
            assert abs(float(one.error) - float(batch.error[k])) <= 1e-4 * chain.reach
            if one.converged and batch.converged[k]:
                compared += 1
                np.testing.assert_allclose(
                    one.positions, batch.positions[k], atol=1e-9 * chain.reach
                )
                np.testing.assert_allclose(one.rotations, batch.rotations[k], atol=1e-9)
    assert compared > 60


def test_beyond_reach_points_straight_at_the_target() -> None:
    chain = Chain.from_lengths([1.0, 2.0, 0.5])
    target = np.array([3.0, -4.0, 1.0])
    res = solve(chain, target, method="fabrik")
    unit = target / np.linalg.norm(target)
    np.testing.assert_allclose(res.positions, np.outer([0.0, 1.0, 3.0, 3.5], unit), atol=1e-12)


def test_even_spread_bends_every_joint_alike() -> None:
    """Equal links, straight rest: the spread is a regular arc (every inner bend equal) and
    reaches; triangulation's own pass bends few joints (the contrast it fixes)."""
    chain = Chain.from_lengths([0.2] * 6)
    targets = np.array([[0.0, 0.3, 0.5], [0.4, 0.1, 0.2], [-0.1, -0.2, 0.9]])
    for method, opts in (("triangulation", {"distribution": "even"}), ("fabrik", {})):
        res = solve(chain, targets, method=method, **opts)  # type: ignore[arg-type]
        assert np.all(res.error <= 1e-9)
        d = np.diff(res.positions, axis=1)
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        bends = np.arccos(np.clip(np.sum(d[:, 1:] * d[:, :-1], axis=-1), -1, 1))
        np.testing.assert_allclose(bends, bends[:, :1] * np.ones_like(bends), atol=1e-9)
    paper = solve(chain, targets, method="triangulation")
    d = np.diff(paper.positions, axis=1)
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    bends = np.arccos(np.clip(np.sum(d[:, 1:] * d[:, :-1], axis=-1), -1, 1))
    assert np.max(bends) > 2.0 * np.max(np.mean(bends, axis=1))


def _bend_axes(positions: np.ndarray) -> np.ndarray:
    """``(..., n − 1, 3)`` each inner joint's bend, ``d_{k−1} × d_k``."""
    d = np.diff(positions, axis=-2)
    return np.cross(d[..., :-1, :], d[..., 1:, :])


def test_spread_keeps_the_rest_zigzag_of_a_hind_leg() -> None:
    """A 3-bone leg bent at rest (knee forward, hock back: opposite bends) keeps its
    zigzag for targets through its whole reachable range, and reaches them."""
    pts = np.array([[0.0, 0.0, 1.0], [0.0, -0.15, 0.6], [0.0, 0.1, 0.25], [0.0, 0.02, 0.0]])
    chain = Chain.from_offsets(np.diff(pts, axis=0))
    rest = _bend_axes(forward_kinematics(chain)[0])
    assert float(rest[0] @ rest[1]) < 0.0
    t = np.linspace(0.0, 2.0 * math.pi, 200)
    rho = 0.45 + 0.5 * 0.5 * (1 - np.cos(3 * t))
    ang = 0.6 * np.sin(t)
    direction = np.stack([0.05 * np.sin(2 * t), -np.sin(ang), -np.cos(ang)], 1)
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    targets = direction * (rho * chain.reach)[:, None]
    for method, opts in (("triangulation", {"distribution": "even"}), ("fabrik", {})):
        res = solve(chain, targets, method=method, **opts)  # type: ignore[arg-type]
        assert np.all(res.error <= 1e-9 * chain.reach)
        axes = _bend_axes(res.positions)
        assert np.all(np.einsum("ij,ij->i", axes[:, 0], axes[:, 1]) < 0.0), method
        # the knee's bend keeps facing the rest bend's side (no flip between frames)
        assert np.all(np.einsum("ij,ij->i", axes[1:, 0], axes[:-1, 0]) > 0.0), method


def test_hinge_chain_turns_smoothly_through_the_reach_limit() -> None:
    """Lock IK Y+Z on the forearm: a target moving out past the reach limit and back turns
    no joint in a frame by more than the elbow angle itself must change there (law of
    cosines, ``2 acos(ρ / reach)``): no spin about the bones (the issue saw 23–59°)."""
    chain = Chain(
        [[0.0, 0.28, 0.0], [0.0, 0.28, 0.0]],
        rest_rotations=[rot.identity(), rot.from_axis_angle([1.0, 0.0, 0.0], -0.2)],
        limits=[JointLimits(), HINGE_X],
    )
    t = np.linspace(0.0, 2.0 * math.pi, 480)
    rho = (0.6 + 0.55 * 0.5 * (1 - np.cos(2 * t))) * chain.reach
    swing = 0.5 * np.sin(t)
    direction = np.stack([np.sin(swing), np.cos(swing), -0.3 * np.sin(2 * t)], 1)
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    res = solve(chain, direction * rho[:, None], method="fabrik")
    q = res.rotations
    change = 2 * np.degrees(np.arccos(np.clip(np.abs(np.sum(q[1:] * q[:-1], -1)), 0, 1)))
    elbow = 2.0 * np.degrees(np.arccos(np.minimum(rho / chain.reach, 1.0)))
    assert np.max(change) <= np.max(np.abs(np.diff(elbow))) + 0.5
    inside = rho <= chain.reach * (1 - 1e-3)
    assert np.all(res.error[inside] <= 1e-6 * chain.reach)


def test_spread_distribution_is_validated() -> None:
    with pytest.raises(SolveInputError, match="distribution"):
        SolveOptions(distribution="tip")  # type: ignore[arg-type]


def test_spread_single_equals_batch() -> None:
    """Triangulation with ``distribution="even"`` (the spread, finished by FABRIK's rounds):
    one target (float components) gives the batch's row (array components)."""
    rng = np.random.default_rng(8)
    for _ in range(20):
        chain = _random_chain(rng, False)
        targets = rng.normal(size=(6, 3)) * chain.reach * 0.6
        batch = solve_triangulation(_problem(chain, targets, distribution="even"))
        for k in range(6):
            one = solve_triangulation(_problem(chain, targets[k], distribution="even"))
            np.testing.assert_allclose(
                one.positions[0], batch.positions[k], atol=1e-12 * chain.reach
            )
            np.testing.assert_allclose(one.rotations[0], batch.rotations[k], atol=1e-12)


def test_pole_turns_the_bend_toward_it() -> None:
    """With a pole, the chain's bend (mean offset of its inner joints from the
    root→effector line) faces the pole's side of that line, for FABRIK and the spread."""
    rng = np.random.default_rng(12)
    chain = Chain.from_lengths([0.3, 0.3, 0.25, 0.2])
    targets = rng.normal(size=(40, 3))
    targets *= (rng.uniform(0.2, 0.9, 40) * chain.reach / np.linalg.norm(targets, axis=1))[:, None]
    poles = rng.normal(size=(40, 3))
    for method, opts in (("fabrik", {}), ("triangulation", {"distribution": "even"})):
        res = solve(chain, targets, method=method, pole=poles, **opts)  # type: ignore[arg-type]
        axis = res.positions[:, -1] / np.linalg.norm(res.positions[:, -1], axis=1)[:, None]
        bend = res.positions[:, 1:-1].mean(axis=1)
        bend -= np.sum(bend * axis, axis=1)[:, None] * axis
        want = poles - np.sum(poles * axis, axis=1)[:, None] * axis
        cos = np.sum(bend * want, 1) / np.linalg.norm(bend, axis=1) / np.linalg.norm(want, axis=1)
        np.testing.assert_allclose(cos, 1.0, atol=1e-9)


@pytest.mark.parametrize("method", ["fabrik", "even"])
def test_start_poses_that_differ_per_target_solve_each_on_its_own(method: str) -> None:
    """A batch whose start poses differ: every target gets the answer it gets alone (its own
    seed), poses being the forward kinematics of their rotations."""
    rng = np.random.default_rng(5)
    chain = Chain.from_lengths([1.0, 0.8, 0.6, 0.4])
    initial = rot.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.3 * rng.normal(size=(6, 4, 4)))
    targets = forward_kinematics(chain, rot.normalize(rng.normal(size=(6, 4, 4))))[0][:, -1]
    if method == "fabrik":
        batch = solve(chain, targets, method="fabrik", initial=initial)
        alone = [
            solve(chain, t, method="fabrik", initial=q)
            for t, q in zip(targets, initial, strict=True)
        ]
        rotations = batch.rotations
        expected = np.array([a.rotations for a in alone])
    else:
        options = SolveOptions(distribution="even")
        problem = Problem(chain, targets, None, None, initial, 1e-6, options)
        rotations = solve_triangulation(problem).rotations
        expected = np.array(
            [solve_triangulation(problem.rows(slice(k, k + 1))).rotations[0] for k in range(6)]
        )
    np.testing.assert_allclose(rotations, expected, atol=1e-12)
    assert not np.allclose(expected[0], expected[1])  # the starts do matter


def test_spread_on_two_links_is_the_papers_triangle() -> None:
    """On two links the spread (FABRIK's seed, its answer where it reaches: FABRIK with no
    rounds) and the paper's pass place the same pose — the one triangle on the start pose's
    bend side — for bent start poses, poles and targets from near the root to beyond the
    reach; so
    ``distribution="even"`` takes the pass there (every path: batch, float, points)."""
    rng = np.random.default_rng(21)
    for _ in range(30):
        chain = Chain.from_lengths(rng.uniform(0.3, 1.5, size=2), direction=(0.0, 1.0, 0.0))
        size = 8
        initial = rot.normalize(
            np.array([1.0, 0.0, 0.0, 0.0]) + 0.4 * rng.normal(size=(size, 2, 4))
        )
        targets = rng.normal(size=(size, 3))
        targets *= (rng.uniform(0.05, 1.2, size) * chain.reach)[:, None] / np.linalg.norm(
            targets, axis=1
        )[:, None]
        poles = rng.normal(size=(size, 3)) if rng.random() < 0.5 else None
        even = SolveOptions(distribution="even")
        problem = Problem(chain, targets, None, poles, initial, 1e-6 * chain.reach, even)
        spread = solve_fabrik(problem)
        paper = solve(chain, targets, method="triangulation", pole=poles, initial=initial)
        np.testing.assert_allclose(spread.positions, paper.positions, atol=1e-8 * chain.reach)
        taken = solve(
            chain, targets, method="triangulation", pole=poles, initial=initial, options=even
        )
        np.testing.assert_array_equal(taken.positions, paper.positions)


def test_even_triangulation_reaches_on_chains_bent_out_of_a_plane() -> None:
    """Links offset across the bones and start poses bent out of one plane leave the planar
    spread short of the target; triangulation with ``distribution="even"`` still meets every
    target within the chain's reach to the tolerance (FABRIK's rounds finish it), with
    positions equal to the forward kinematics of its rotations."""
    rng = np.random.default_rng(31)
    short = 0
    for _ in range(12):
        n = int(rng.integers(3, 7))
        offsets = np.column_stack(
            [rng.normal(0.0, 0.05, n), rng.uniform(0.3, 1.0, n), rng.normal(0.0, 0.05, n)]
        )
        chain = Chain(offsets)
        initial = rot.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.2 * rng.normal(size=(n, 4)))
        targets = rng.normal(size=(10, 3))
        targets *= (rng.uniform(0.2, 0.95, 10) * chain.reach)[:, None] / np.linalg.norm(
            targets, axis=1
        )[:, None]
        options = SolveOptions(distribution="even")
        tolerance = 1e-6 * chain.reach
        res = solve(chain, targets, method="triangulation", initial=initial, options=options)
        # FABRIK's rounds (iterations > 0) ran where the spread alone fell short.
        short += int(np.sum(res.iterations > 0))
        assert np.all(res.error <= tolerance)
        fk = forward_kinematics(chain, res.rotations)[0]
        np.testing.assert_allclose(fk, res.positions, atol=1e-9 * chain.reach)
    assert short > 0  # the spread alone does fall short on such chains


def test_a_shoulder_chain_is_polished_by_triangulation_before_ccd() -> None:
    """On ``bench_solvers``' ball chain (shoulders with *Limit X*/*Limit Z*), the targets
    FABRIK's rounds leave short are met by triangulation within the limits, asked before
    CCD's polish: their pose is triangulation's (within the limits, at the target), and
    CCD is not run for them."""
    from unittest import mock

    from core import ccd, fabrik

    chain = shoulder_chain(3)
    rng = np.random.default_rng(8)
    targets = kinematics.effector(chain, admissible_poses(rng, chain, 40))
    problem = Problem(
        chain, targets, None, None, rot.identity((40, 3)), 1e-6 * chain.reach, SolveOptions()
    )
    with mock.patch.object(fabrik, "solve_ccd", wraps=ccd.solve_ccd) as polished:
        sol = solve_fabrik(problem)
    error = np.linalg.norm(sol.positions[:, -1] - targets, axis=-1)
    assert np.all(error <= problem.tolerance)
    tri = solve_triangulation(problem)
    with mock.patch.object(fabrik, "_polish", lambda _problem, r, p, its: (r, p, its)):
        rounds = solve_fabrik(problem)
    short = np.linalg.norm(rounds.positions[:, -1] - targets, axis=-1) > problem.tolerance
    taken = np.flatnonzero(short)
    assert taken.size >= 3  # (not vacuous: the rounds left targets to polish)
    np.testing.assert_allclose(sol.positions[taken], tri.positions[taken], atol=1e-12)
    for i, lim in enumerate(chain.limits):
        assert np.all(lim.violation(sol.rotations[:, i]) <= 1e-9)
    assert polished.call_count == 0


def test_targets_out_of_a_shoulder_chains_limits_are_polished_by_plain_ccd() -> None:
    """Targets within the length of ``bench_solvers``' ball chain that its limits keep out
    of reach: triangulation misses them, CCD continues from FABRIK's pose without its
    coarse sweeps (which doubled FABRIK's cost there and never came closer), and the answer
    is triangulation's closest pose unless CCD's is materially closer: never farther than
    triangulation's by more than the margin of that rule, and within the limits."""
    from unittest import mock

    from core import ccd, fabrik
    from core.triangulation_refine import CLOSER_BY

    chain = shoulder_chain(3)
    rng = np.random.default_rng(4)
    directions = rng.normal(size=(30, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    targets = directions * rng.uniform(0.2, 0.95, (30, 1)) * chain.reach
    tolerance = 1e-6 * chain.reach
    problem = Problem(chain, targets, None, None, rot.identity((30, 3)), tolerance, SolveOptions())
    with mock.patch.object(fabrik, "solve_ccd", wraps=ccd.solve_ccd) as polished:
        sol = solve_fabrik(problem)
    assert polished.call_count > 0  # (not vacuous: some targets are out of reach)
    ran = sum(call.args[0].size for call in polished.call_args_list)
    assert all(call.args[0].options.sweep_steps == 0 for call in polished.call_args_list)
    tri = solve_triangulation(problem)
    error = np.linalg.norm(sol.positions[:, -1] - targets, axis=-1)
    tri_error = np.linalg.norm(tri.positions[:, -1] - targets, axis=-1)
    assert np.sum(tri_error > tolerance) == ran
    assert np.all(error <= tri_error + CLOSER_BY * tolerance)
    for i, lim in enumerate(chain.limits):
        assert np.all(lim.violation(sol.rotations[:, i]) <= 1e-9)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_rounds_hand_over_to_the_refinement_within_finish(n: int) -> None:
    """On ``bench_solvers``' shoulder chains the rounds stop once within ``FINISH`` × reach
    of the target and the refinement finishes from their pose (it converges
    quadratically where the rounds under limits cut the error by a constant factor). Every
    target the rounds hand over is met within the limits, nearly all (103 of 104) by that
    one more iteration, the others by more rounds: the answer is FABRIK's pose, finished,
    not another method's. (Until 0.6.0, a target whose rounds stalled within the finish
    took triangulation's pose: 98° from the rounds' on one target of the 5-link chain.)
    The one-target path and the batch agree."""
    from core.fabrik import FINISH
    from core.fabrik_single import fabrik_floats

    chain = shoulder_chain(n)
    rng = np.random.default_rng(40 + n)
    targets = kinematics.effector(chain, admissible_poses(rng, chain, 60))
    tolerance = 1e-6 * chain.reach
    batch = solve(chain, targets, method="fabrik")
    handed = finished = 0
    for k, target in enumerate(targets.tolist()):
        rounds, at, its = fabrik_floats(
            chain, tuple(target), None, SolveOptions(), FINISH * chain.reach
        )
        assert rounds is not None
        if not tolerance < math.dist(at[-1], target) <= FINISH * chain.reach:
            continue
        handed += 1
        one = solve(chain, np.array(target), method="fabrik")
        fk = forward_kinematics(chain, one.rotations)[0]
        assert np.linalg.norm(fk[-1] - target) <= tolerance
        for i, lim in enumerate(chain.limits):
            assert lim.violation(one.rotations[i]) <= 1e-9
        finished += int(one.iterations == its + 1)
        np.testing.assert_allclose(batch.positions[k], one.positions, atol=1e-9)
    assert handed >= 10  # (not vacuous)
    assert finished >= 0.9 * handed


def test_turn_on_floats_is_the_batch_turn_to_the_bit() -> None:
    """:func:`core.aim._turn_floats` (one direction, each selection's branch alone) gives
    :func:`core.aim.turn` on arrays bit for bit: random directions, opposite ones (the half
    turn about ``half``), nearly opposite ones, a zero and a tiny vector (the identity)."""
    from core.aim import _turn_floats, turn
    from core.components import ARRAY_OPS

    rng = np.random.default_rng(12)
    u = rng.normal(size=(64, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = rng.normal(size=(64, 3)) * rng.uniform(0.1, 10.0, size=(64, 1))
    v[:8] = -u[:8] * rng.uniform(0.5, 2.0, size=(8, 1))  # opposite
    v[8:16] = -u[8:16] + 1e-13 * rng.normal(size=(8, 3))  # nearly opposite
    v[16] = 0.0
    v[17] = 1e-310
    half = np.cross(u, rng.normal(size=(64, 3)))
    half /= np.linalg.norm(half, axis=1, keepdims=True)
    batch = turn(ARRAY_OPS, tuple(u.T), tuple(v.T), tuple(half.T))
    for k in range(64):
        one = _turn_floats(tuple(u[k].tolist()), tuple(v[k].tolist()), tuple(half[k].tolist()))
        assert one == tuple(float(c[k]) for c in batch), k


def _random_aims(seed: int, chains: int, per_chain: int) -> Iterator[tuple[Any, ...]]:
    """Random chains with turned rest frames and free, hinge, one-sided hinge, cone,
    X/Z-limited ball and twist-locked joints (hinges after ball joints: the parent's twist
    toward the hinge's plane), each with the hinge signs of a random admissible start;
    per chain ``per_chain`` random wanted points and bend-plane hints. Yields ``(chain,
    plan, signs, wants, hints)``."""
    from core.aim import aim_plan, hinge_signs
    from core.components import FLOAT_OPS

    rng = np.random.default_rng(seed)
    ball = JointLimits(ranges=((-1.0, 1.4), None, (-0.7, 0.7)))
    for _ in range(chains):
        n = int(rng.integers(2, 7))
        limits = [ball if rng.random() < 0.4 else _random_limits(rng) for _ in range(n)]
        offsets = rng.normal(size=(n, 3)) * 0.2 + np.array([0.0, 0.6, 0.0])
        rests = rot.normalize(rng.normal(size=(n, 4)) * 0.3 + np.array([1.0, 0.0, 0.0, 0.0]))
        rests[rng.random(n) < 0.3] = rot.identity()
        chain = Chain(offsets, rests, limits)
        plan = aim_plan(chain)
        start = [tuple(r) for r in _admissible(chain, rng, 1)[0].tolist()]
        signs = hinge_signs(FLOAT_OPS, plan, chain, start)
        for _ in range(per_chain):
            wants = [(0.0, 0.0, 0.0)] + [tuple(p) for p in rng.normal(size=(n, 3)).tolist()]
            hints = [None] + [
                tuple(h) if rng.random() < 0.5 else None for h in rng.normal(size=(n, 3)).tolist()
            ]
            yield chain, plan, signs, wants, hints


def test_aim_on_floats_is_the_components_aim_to_the_bit() -> None:
    """:func:`core.aim._aim_floats` (the float twin, its algebra written out) gives the aim
    written once on components (:func:`core.aim._aim` on floats) bit for bit: random wanted
    points and bend-plane hints on random chains of every joint kind (:func:`_random_aims`)."""
    from core.aim import _aim, aim
    from core.components import FLOAT_OPS

    compared = 0
    for chain, plan, signs, wants, hints in _random_aims(21, 40, 10):
        for given_hints in (hints, None):
            one = aim(FLOAT_OPS, plan, chain, wants, signs, 1, given_hints)
            assert one == _aim(FLOAT_OPS, plan, chain, wants, signs, 1, given_hints)
            compared += any(plan.aligns)
    assert compared >= 100  # (hinges after twisting joints were met)


def test_rounds_on_floats_are_the_components_rounds_to_the_bit() -> None:
    """:func:`core.fabrik_single.iterate_floats` (FABRIK's rounds for one target, written
    out in floats) gives the rounds written once on components (:func:`iterate` on floats)
    bit for bit — rotations, positions and round counts — from random seeds toward random
    targets within and beyond reach, on random chains of every joint kind
    (:func:`_random_aims`); the rounds end by the tolerance, a stall or the round limit."""
    from core.aim import aim
    from core.components import FLOAT_OPS
    from core.fabrik_single import iterate, iterate_floats

    rng = np.random.default_rng(23)
    rounds = []
    for chain, plan, signs, wants, hints in _random_aims(23, 40, 5):
        seed = aim(FLOAT_OPS, plan, chain, wants, signs, 1, hints)
        target = tuple((rng.normal(size=3) * chain.reach * rng.uniform(0.2, 1.3)).tolist())
        for tolerance, limit in ((1e-9 * chain.reach, 60), (1e-2 * chain.reach, 60), (0.0, 3)):
            one = iterate_floats(chain, tolerance, limit, plan, target, seed, signs, hints)
            ref = (FLOAT_OPS, chain, tolerance, limit, 1, plan, target, seed, signs, hints)
            assert one == iterate(*ref)
            rounds.append(one[2])
    # (rounds ended by the tolerance, by a stall window, by the round limits)
    assert {1, 3, 10, 60} <= set(rounds)
    assert len(set(rounds)) >= 15
