# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-target float bend-plane step (core/bend_plane_single.py) against its numpy
reference, core.bend_plane.orient_bend.

Random chains (random offsets, so random rest rotations) with random limits on the root,
random solved poses, targets, poles, pole angles, both bend planes, rest and random start
poses, and orientation goals with and without weight: the same rotations and positions to
1e-9 (the same formulas, rounded in another order), and the same decision to turn or not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import Chain, JointLimits, SolveOptions, forward_kinematics
from core import rotations as rot
from core.bend_plane import orient_bend
from core.bend_plane_single import orient_one, turned_points
from core.problem import Problem
from core.solve import _norm, _problem


def _root_limits(rng: np.random.Generator) -> JointLimits:
    kind = int(rng.integers(-3, 5))
    if kind <= 0:
        return JointLimits()
    if kind == 1:
        return JointLimits(cone=float(rng.uniform(0.3, 2.5)))
    if kind == 2:
        return JointLimits(lock=(False, True, True), ranges=((0.0, 2.6), None, None))
    if kind == 3:
        return JointLimits(ranges=((-1.0, 1.2), None, (-0.8, 0.9)))
    return JointLimits(lock=(False, False, True), ranges=(None, (-0.5, 0.5), None), cone=1.5)


def _case(seed: int) -> tuple[Problem, np.ndarray, np.ndarray]:
    """A problem of one target and a solved pose ``(1, n, 4)`` with its positions."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    limits = [_root_limits(rng)] + [JointLimits()] * (n - 1)
    chain = Chain.from_offsets(rng.normal(size=(n, 3)) + np.array([0.0, 0.6, 0.0]), limits=limits)
    q = rot.normalize(rng.normal(size=(1, n, 4)))
    if seed % 3:  # an admissible root (turns within its limits are allowed)
        q[0, 0] = limits[0].project(q[0, 0])
    positions = forward_kinematics(chain, q)[0]
    target = rng.normal(size=(1, 3)) * chain.reach
    if seed % 11 == 0:  # the target on the solved effector's line
        target = positions[:, -1] * 1.3
    pole = None if seed % 2 else rng.normal(size=(1, 3)) * chain.reach
    start = rot.identity((1, n))
    if seed % 5 == 0:
        start = rot.normalize(rng.normal(size=(1, n, 4)))
    goal = None
    weight = 1.0
    if seed % 7 == 0:
        goal = rot.normalize(rng.normal(size=(1, 4)))
        weight = (1.0, 0.5)[seed % 2]
    opts = SolveOptions(
        bend_plane="minimal" if seed % 13 == 0 else "rest",
        pole_angle=float(rng.uniform(-3.0, 3.0)) if seed % 4 == 0 else 0.0,
        position_weight=weight,
    )
    problem = _problem(chain, target, _norm(target), goal, pole, start, opts)
    return problem, q, positions


@pytest.mark.parametrize("block", range(4))
def test_orient_one_is_orient_bend(block: int) -> None:
    turned = stayed_limited = 0
    for seed in range(block * 150, (block + 1) * 150):
        problem, q, positions = _case(seed)
        expected_rot, expected_pos = orient_bend(problem, q, positions)
        rots = [tuple(r) for r in q[0].tolist()]
        points = [tuple(p) for p in positions[0].tolist()]
        turn = orient_one(problem, tuple(problem.targets[0].tolist()), rots, points)
        if turn is not None:
            points = turned_points(turn, points)
        scale = problem.chain.reach
        np.testing.assert_allclose(np.array([rots]), expected_rot, atol=1e-9, rtol=0)
        np.testing.assert_allclose(np.array([points]), expected_pos, atol=1e-9 * scale, rtol=0)
        moved = bool(np.any(expected_rot != q))
        assert (turn is not None) == moved or math.isclose(
            float(np.max(np.abs(expected_rot - q))), 0.0, abs_tol=1e-12
        )
        turned += int(turn is not None)
        stayed_limited += int(turn is None and not problem.chain.limits[0].is_free)
    assert turned >= 50  # (60-70 of 150)
    assert stayed_limited >= 30  # (60-80 of 150; some refused by the root's limits)
