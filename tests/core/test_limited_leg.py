# SPDX-License-Identifier: GPL-3.0-or-later
"""A quadruped hind leg whose knee bends one way only, on a looping path (``bench_natural``'s
``hind_leg_knee`` rig in the core): every method follows the foot without flips.

The knee (Lock IK Y+Z) may only bend further than at rest, up to 140°, so about a fifth of
the path lies beyond what the leg can reach; there the closest admissible poses form a family
(the leg spun about the line to the target), and choosing among equally close ones by a
sliver of distance flipped the leg between frames.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import METHODS, Chain, SolveOptions, Solver, forward_kinematics
from core import rotations as rot
from core.limits import JointLimits

FRAMES = 240
POINTS = np.array([[0.0, 0.0, 1.0], [0.0, -0.15, 0.6], [0.0, 0.1, 0.25], [0.0, 0.02, 0.0]])
#: The add-on's options (Bend Spread "Even", the rest pose's bend plane).
OPTIONS = SolveOptions(distribution="even", bend_plane="rest")


def _leg() -> Chain:
    knee = JointLimits(lock=(False, True, True), ranges=((0.0, math.radians(140.0)), None, None))
    return Chain.from_offsets(np.diff(POINTS, axis=0), limits=[JointLimits(), knee, JointLimits()])


def _path(reach: float) -> np.ndarray:
    """``bench_natural``'s loop under the hip: 45–97 % of the reach, swinging 0.6 rad."""
    t = np.linspace(0.0, 2.0 * math.pi, FRAMES, endpoint=False)
    axis, u, v = np.array([0.0, 0.0, -1.0]), np.array([0.0, -1.0, 0.0]), np.array([-1.0, 0.0, 0.0])
    a, b = 0.6 * np.sin(t), 0.36 * np.sin(2.0 * t + 0.5)
    d = (np.cos(a) * np.cos(b))[:, None] * axis + np.sin(a)[:, None] * u
    d += (np.cos(a) * np.sin(b))[:, None] * v
    rho = 0.45 + 0.52 * 0.5 * (1.0 - np.cos(3.0 * t))
    return d * (rho * reach)[:, None]


@pytest.mark.parametrize("method", METHODS)
def test_a_one_sided_knee_follows_the_foot_without_flips(method: str) -> None:
    """Live (one frame at a time), no joint turns more than 20° between frames (Blender's IK
    turns at most 15.3° here, ``bench_natural``), and the batch a bake solves gives the same
    poses, also where the foot is out of reach (the Jacobian methods' own closest poses
    were up to 1.7° apart there)."""
    chain = _leg()
    targets = _path(chain.reach)
    solver = Solver(chain, method, OPTIONS)
    poses = np.array([solver.pose(t).rotations for t in targets])
    baked = solver.poses(targets).rotations
    sign = np.where(np.sum(poses * baked, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
    np.testing.assert_allclose(baked * sign, poses, rtol=0, atol=1e-12)
    turn = rot.angle(rot.multiply(rot.conjugate(poses), np.roll(poses, -1, axis=0)))
    ends = forward_kinematics(chain, poses)[0][:, -1]
    missed = np.linalg.norm(ends - targets, axis=1) > 1e-3 * chain.reach
    # (the premise: part of the loop lies beyond the knee's range)
    assert 0.1 < missed.mean() < 0.4
    assert np.degrees(turn.max()) < 20.0
