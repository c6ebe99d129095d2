# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.screw: the screw twist between two poses (reference 004 §3.7).

Oracle: running a twist ``(ω, v_O)`` for unit time is the matrix exponential of
``[[ω]×, v_O], [0, 0]]`` (SciPy's ``expm``), which must reproduce the motion ``Q = D C*``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

from core import dual_quaternion as dq
from core import rotations as rot
from core.screw import motion_twist, pose_twist, screw_of, twist_at

FAST = settings(max_examples=40, deadline=None)


def _hat(twist: np.ndarray) -> np.ndarray:
    w, v = twist[:3], twist[3:]
    m = np.zeros((4, 4))
    m[:3, :3] = [[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]]
    m[:3, 3] = v
    return m


def _wxyz(r: Rotation) -> np.ndarray:
    xyzw = r.as_quat()
    return np.concatenate((xyzw[..., 3:], xyzw[..., :3]), axis=-1)


@FAST
@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.0, math.pi),
    st.floats(-2.0, 2.0),
)
def test_twist_exponential_reproduces_the_motion(seed: int, angle: float, slide: float) -> None:
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    q = rot.from_axis_angle(axis, angle)
    t = rng.uniform(-2.0, 2.0, 3) + slide * axis
    motion = dq.from_rotation_translation(q, t)
    twist = motion_twist(motion)
    assert np.all(np.isfinite(twist))
    np.testing.assert_allclose(expm(_hat(twist)), dq.to_matrix(motion), atol=1e-9)


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-4, 0.5 * math.pi, math.pi - 1e-9, math.pi])
def test_twist_is_finite_and_exact_at_edge_angles(angle: float) -> None:
    motion = dq.from_rotation_translation(
        rot.from_axis_angle(np.array([0.3, -0.5, 0.8]), angle), np.array([0.4, 1.0, -2.0])
    )
    twist = motion_twist(motion)
    assert np.all(np.isfinite(twist))
    np.testing.assert_allclose(expm(_hat(twist)), dq.to_matrix(motion), atol=1e-9)


def test_pure_translation_twist_is_the_translation() -> None:
    t = np.array([0.2, -1.5, 3.0])
    twist = motion_twist(dq.from_rotation_translation(rot.identity(), t))
    np.testing.assert_allclose(twist, np.concatenate((np.zeros(3), t)), atol=1e-15)


def test_screw_parameters_satisfy_plucker_and_pitch() -> None:
    rng = np.random.default_rng(11)
    r = Rotation.random(20, random_state=rng)
    t = rng.normal(size=(20, 3))
    screw = screw_of(dq.from_rotation_translation(_wxyz(r), t))
    d = screw.direction
    np.testing.assert_allclose(np.linalg.norm(d, axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.sum(d * screw.moment, axis=-1), 0.0, atol=1e-10)
    np.testing.assert_allclose(screw.pitch_translation, np.sum(d * t, axis=-1), atol=1e-12)
    np.testing.assert_allclose(screw.angle, r.magnitude(), atol=1e-10)
    # A point on the axis, p = d × m, is moved only along the axis by the motion.
    p = np.cross(d, screw.moment)
    moved = np.einsum("nij,nj->ni", r.as_matrix(), p) + t
    np.testing.assert_allclose(moved - p, screw.pitch_translation[:, None] * d, atol=1e-9)


def test_pose_twist_is_zero_at_the_goal_and_follows_the_reference_composition() -> None:
    rng = np.random.default_rng(12)
    qc, qd = _wxyz(Rotation.random(2, random_state=rng))
    pc, pd = rng.normal(size=(2, 3))
    np.testing.assert_allclose(pose_twist(qc, pc, qc, pc), 0.0, atol=1e-12)
    twist = pose_twist(qc, pc, qd, pd)
    c = dq.to_matrix(dq.from_rotation_translation(qc, pc))
    d = dq.to_matrix(dq.from_rotation_translation(qd, pd))
    np.testing.assert_allclose(expm(_hat(twist)) @ c, d, atol=1e-9)


def test_twist_at_is_the_velocity_of_the_carried_point() -> None:
    rng = np.random.default_rng(13)
    twist = rng.normal(size=6)
    point = rng.normal(size=3)
    h = 1e-5
    ahead = (expm(_hat(h * twist)) @ np.append(point, 1.0))[:3]
    behind = (expm(_hat(-h * twist)) @ np.append(point, 1.0))[:3]
    velocity = (ahead - behind) / (2.0 * h)
    np.testing.assert_allclose(twist_at(twist, point)[3:], velocity, atol=1e-8)
    np.testing.assert_allclose(twist_at(twist, point)[:3], twist[:3])
