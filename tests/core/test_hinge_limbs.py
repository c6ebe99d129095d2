# SPDX-License-Identifier: GPL-3.0-or-later
"""Two-bone limbs whose second joint is a hinge free both ways (Lock IK Y and Z without a
range, as Rigify's forearms and shins): the bend keeps the rest side and the pose changes
smoothly through full extension.

Oracles: the law of cosines (the elbow angle a target's distance forces, and so the
largest change a frame needs), the signed bend about the hinge's axis from forward
kinematics, and the wanted bend side (the rest bend carried to the target, or the pole).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import SolveOptions, solve
from core import rotations as rot
from core.chain import Chain
from core.kinematics import forward_kinematics
from core.limits import JointLimits

HINGE_X = JointLimits(lock=(False, True, True))


def _arm(roll: float = 0.0) -> Chain:
    """Upper arm and forearm of 0.28 along +Y, the forearm bent 0.2 rad about X at rest and
    rolled by ``roll`` about its own Y: a roll leans the hinge's axis on the upper arm's
    link (0.12 rad: 1.4°, as a Blender arm with bone roll 0 has it), so the arm cannot
    straighten exactly."""
    rest = rot.multiply(
        rot.from_axis_angle([1.0, 0.0, 0.0], -0.2), rot.from_axis_angle([0.0, 1.0, 0.0], roll)
    )
    return Chain(
        [[0.0, 0.28, 0.0], [0.0, 0.28, 0.0]],
        rest_rotations=[rot.identity(), rest],
        limits=[JointLimits(), HINGE_X],
    )


def _path(chain: Chain, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """A hand going out to 115 % of the reach and back twice, swinging to both sides."""
    t = np.linspace(0.0, 2.0 * math.pi, frames)
    rho = (0.6 + 0.55 * 0.5 * (1 - np.cos(2 * t))) * chain.reach
    swing = 0.5 * np.sin(t)
    direction = np.stack([np.sin(swing), np.cos(swing), -0.3 * np.sin(2 * t)], 1)
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    return direction * rho[:, None], rho


def _signed_bends(chain: Chain, q: np.ndarray) -> np.ndarray:
    """Signed angles (radians) of the forearm from the upper arm about the hinge's X axis."""
    _, world = forward_kinematics(chain, q)
    upper = rot.rotate(world[:, 0], [0.0, 1.0, 0.0])
    fore = rot.rotate(world[:, 1], [0.0, 1.0, 0.0])
    axis = rot.rotate(world[:, 1], [1.0, 0.0, 0.0])
    return np.arctan2(np.sum(np.cross(upper, fore) * axis, -1), np.sum(upper * fore, -1))


@pytest.mark.parametrize("roll", [0.0, 0.12])
@pytest.mark.parametrize(
    "method",
    ["triangulation", "fabrik", "ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls"],
)
def test_hinge_arm_keeps_its_bend_side_and_turns_smoothly(method: str, roll: float) -> None:
    """Through full extension and back on both sides: the forearm never bends against its
    rest bend, no joint turns in a frame by more than the elbow angle itself must change
    (``2 acos(ρ / reach)``, law of cosines) plus 0.5°, and targets within reach are met.
    (Triangulation picked the side by the least turn of the upper arm from its pass and
    flipped the elbow with a half turn of the upper arm: 179° in a frame; with the leaning
    hinge, FABRIK's own rounds turned the upper arm 40–50° in a frame near full extension
    and CCD's and the Jacobian methods' poses beyond the reach up to 90°.)"""
    chain = _arm(roll)
    targets, rho = _path(chain, 480)
    res = solve(chain, targets, method=method)
    q = res.rotations
    rest_bend = float(_signed_bends(chain, rot.identity((1, 2)))[0])
    assert rest_bend < 0.0
    assert np.all(_signed_bends(chain, q) <= 1e-6)
    change = 2 * np.degrees(np.arccos(np.clip(np.abs(np.sum(q[1:] * q[:-1], -1)), 0, 1)))
    elbow = 2.0 * np.degrees(np.arccos(np.minimum(rho / chain.reach, 1.0)))
    assert np.max(change) <= np.max(np.abs(np.diff(elbow))) + 0.5
    inside = rho <= chain.reach * (1 - 1e-3)
    assert np.all(res.error[inside] <= 1e-6 * chain.reach)


def test_hinge_arm_bends_toward_its_pole_on_the_rest_side() -> None:
    """With a pole, triangulation bends the elbow toward it (the elbow's offset from the
    shoulder→target line faces the pole's) and keeps the forearm's rest bend sign."""
    chain = _arm()
    rng = np.random.default_rng(3)
    direction = rng.normal(size=(200, 3))
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    targets = direction * rng.uniform(0.3, 0.98, 200)[:, None] * chain.reach
    poles = rng.normal(size=(200, 3))
    res = solve(chain, targets, method="triangulation", pole=poles)
    assert np.all(res.error <= 1e-6 * chain.reach)
    assert np.all(_signed_bends(chain, res.rotations) <= 1e-6)
    axis = targets / np.linalg.norm(targets, axis=1)[:, None]
    elbow = res.positions[:, 1] - np.sum(res.positions[:, 1] * axis, 1)[:, None] * axis
    want = poles - np.sum(poles * axis, 1)[:, None] * axis
    cos = np.sum(elbow * want, 1) / np.linalg.norm(elbow, axis=1) / np.linalg.norm(want, axis=1)
    np.testing.assert_allclose(cos, 1.0, atol=1e-9)


@pytest.mark.parametrize("roll", [0.0, 0.12, -0.3])
@pytest.mark.parametrize(
    "method",
    ["triangulation", "fabrik", "ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls"],
)
def test_a_target_at_the_rest_pose_gives_the_rest_pose(method: str, roll: float) -> None:
    """The hand's target where the rest pose puts it: every joint stays at rest, also where
    the elbow's hinge axis leans on the upper arm (the bend then lies a few degrees around
    the shoulder→hand line from the hinge's own side; a Rigify paw's leans 1–3°; before,
    the upper arm turned 3° about that line on such a paw)."""
    chain = _arm(roll)
    rest = rot.identity((1, 2))
    target = forward_kinematics(chain, rest)[0][0, -1]
    res = solve(chain, target, method=method, options=SolveOptions(bend_plane="rest"))
    np.testing.assert_allclose(np.abs(res.rotations[:, 0]), 1.0, rtol=0, atol=1e-9)
