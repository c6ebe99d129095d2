# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.dh: DH forward kinematics by dual quaternions and DH chains.

Oracles: the product of the classic DH 4×4 matrices ``Rz(θ) Tz(d) Tx(a) Rx(α)`` written out
here, and core.kinematics on the chain built by ``chain_from_dh``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Chain
from core import dual_quaternion as dq
from core import rotations as rot
from core.dh import (
    REFERENCE_6R,
    chain_angles,
    chain_from_dh,
    chain_rotations,
    forward_frames,
    joint_lines,
)
from core.errors import ChainError
from core.jacobian_matrix import chain_state, dof_anchors, dof_axes, twist_jacobian
from core.kinematics import forward_kinematics
from core.parameterization import DofLayout

FAST = settings(max_examples=25, deadline=None)
A, D, ALPHA = REFERENCE_6R["a"], REFERENCE_6R["d"], REFERENCE_6R["alpha"]


def _dh_matrix(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    ct, st_, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array(
        [
            [ct, -st_ * ca, st_ * sa, a * ct],
            [st_, ct * ca, -ct * sa, a * st_],
            [0.0, sa, ca, d],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def _matrix_frames(theta: np.ndarray) -> list[np.ndarray]:
    frames = [np.eye(4)]
    for a, d, alpha, t in zip(A, D, ALPHA, theta, strict=True):
        frames.append(frames[-1] @ _dh_matrix(a, d, alpha, t))
    return frames


@FAST
@given(st.lists(st.floats(-math.pi, math.pi), min_size=6, max_size=6))
def test_dual_quaternion_fk_matches_matrix_product(theta: list[float]) -> None:
    frames = forward_frames(A, D, ALPHA, np.array(theta))
    expected = _matrix_frames(np.array(theta))
    for j in range(7):
        np.testing.assert_allclose(dq.to_matrix(frames[j]), expected[j], atol=1e-12)


def test_chain_from_dh_matches_dh_frames() -> None:
    tool = np.array([0.0, 0.0, 0.1])
    chain = chain_from_dh(A, D, ALPHA, tool=tool)
    rng = np.random.default_rng(7)
    theta = rng.uniform(-math.pi, math.pi, (10, 6))
    frames = forward_frames(A, D, ALPHA, theta)
    positions, orientations = forward_kinematics(chain, chain_rotations(theta))
    np.testing.assert_allclose(positions[:, :6], dq.translation(frames[:, :6]), atol=1e-12)
    # Joint j's frame is DH frame j turned by θ_j; with Rx(α_j) it is frame j + 1.
    twist = rot.from_axis_angle(np.array([1.0, 0.0, 0.0]), np.asarray(ALPHA))
    np.testing.assert_allclose(
        rot.to_matrix(rot.multiply(orientations, twist)),
        rot.to_matrix(frames[:, 1:, :4]),
        atol=1e-12,
    )
    np.testing.assert_allclose(
        positions[:, -1], dq.transform_point(frames[:, -1], tool), atol=1e-12
    )


def test_theta_offset_and_angle_round_trip() -> None:
    offset = np.array([0.1, -0.2, 0.3, 0.0, 0.5, -0.4])
    chain = chain_from_dh(A, D, ALPHA, offset, tool=(0.0, 0.0, 0.1))
    rng = np.random.default_rng(8)
    theta = rng.uniform(-3.0, 3.0, (5, 6))
    q = chain_rotations(theta, offset)
    np.testing.assert_allclose(chain_angles(q, offset), theta, atol=1e-12)
    positions, _ = forward_kinematics(chain, q)
    np.testing.assert_allclose(
        positions[:, 1:6], dq.translation(forward_frames(A, D, ALPHA, theta)[:, 1:6]), atol=1e-12
    )


def test_joint_lines_are_the_chain_twist_jacobian() -> None:
    """The reference's Plücker rows equal the analytic twist columns about the origin."""
    chain = chain_from_dh(A, D, ALPHA, tool=(0.0, 0.0, 0.1))
    layout = DofLayout.for_chain(chain, "expmap")
    rng = np.random.default_rng(9)
    theta = rng.uniform(-math.pi, math.pi, (6, 6))
    q = chain_rotations(theta)
    state = chain_state(chain, q)
    p = layout.params_of(q)
    J = twist_jacobian(dof_axes(layout, state, p), dof_anchors(layout, state))
    np.testing.assert_allclose(np.swapaxes(J, -1, -2), joint_lines(A, D, ALPHA, theta), atol=1e-12)


def test_reference_start_pose_is_singular() -> None:
    """Reference 004: the robot's start pose (all angles zero) is a singular position."""
    lines = joint_lines(A, D, ALPHA, np.zeros(6))
    s = np.linalg.svd(lines, compute_uv=False)
    assert s[-1] < 1e-12 * s[0]
    assert s[-2] > 1e-2 * s[0]  # rank 5: one direction of motion is lost
    moved = joint_lines(A, D, ALPHA, np.array([0.5, -1.0, 0.7, 1.2, -0.4, 0.9]))
    s_moved = np.linalg.svd(moved, compute_uv=False)
    assert s_moved[-1] > 1e-2 * s_moved[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"a": [1.0, 1.0], "d": [0.0], "alpha": [0.0, 0.0]}, "one value per link"),
        ({"a": [1.0, 1.0], "d": [0.0, 0.0], "alpha": [0.0, 0.5]}, "last link's alpha"),
        ({"a": [1.0, 0.0], "d": [0.0, 0.0], "alpha": [0.0, 0.0]}, "zero length"),
        ({"a": [1.0, math.nan], "d": [0.0, 0.0], "alpha": [0.0, 0.0]}, "finite"),
    ],
)
def test_bad_parameters_raise(kwargs: dict[str, list[float]], message: str) -> None:
    with pytest.raises(ChainError, match=message):
        chain_from_dh(kwargs["a"], kwargs["d"], kwargs["alpha"])


def test_hinge_ranges_become_joint_limits() -> None:
    chain = chain_from_dh([1.0, 1.0], [0.0, 0.0], [0.5, 0.0], ranges=[(-0.5, 0.5), None])
    assert [lim.kind for lim in chain.limits] == ["hinge", "hinge"]
    q = chain_rotations(np.array([1.0, 1.0]))
    assert chain.limits[0].violation(q[0]) == pytest.approx(0.5)
    assert chain.limits[1].violation(q[1]) == pytest.approx(0.0, abs=1e-12)


def test_chain_from_dh_classmethod_delegates() -> None:
    chain = Chain.from_dh(A, D, ALPHA, tool=(0.0, 0.0, 0.1))
    reference = chain_from_dh(A, D, ALPHA, tool=(0.0, 0.0, 0.1))
    np.testing.assert_allclose(chain.offsets, reference.offsets)
    np.testing.assert_allclose(chain.rest_rotations, reference.rest_rotations)
