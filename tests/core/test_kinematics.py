# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.kinematics against an independent oracle: a product of 4×4 homogeneous
matrices built from SciPy rotation matrices, one joint at a time (no quaternion code)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from core import rotations as rot
from core.chain import Chain
from core.errors import SolveInputError
from core.kinematics import effector, forward_kinematics

FAST = settings(max_examples=40, deadline=None)


def _homogeneous(
    rotation: np.ndarray | None = None, translation: np.ndarray | None = None
) -> np.ndarray:
    t = np.eye(4)
    if rotation is not None:
        t[:3, :3] = rotation
    if translation is not None:
        t[:3, 3] = translation
    return t


def _matrix(q_wxyz: np.ndarray) -> np.ndarray:
    return Rotation.from_quat(np.asarray(q_wxyz)[[1, 2, 3, 0]]).as_matrix()


def _oracle(chain: Chain, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(n+1, 3)`` and world rotation matrices ``(n, 3, 3)`` of one pose ``(n, 4)``.

    Frame ``i`` is ``F_i = F_{i-1} · T(offset_{i-1}) · R(rest_i) · R(q_i)`` with
    ``F_{-1} = I`` and no offset before joint 0; joint ``i`` sits at ``F_i``'s origin and
    the effector at ``F_{n-1} · T(offset_{n-1})``'s.
    """
    frame = np.eye(4)
    positions, matrices = [], []
    for i in range(chain.n_joints):
        if i > 0:
            frame = frame @ _homogeneous(translation=chain.offsets[i - 1])
        frame = frame @ _homogeneous(_matrix(chain.rest_rotations[i])) @ _homogeneous(_matrix(q[i]))
        positions.append(frame[:3, 3].copy())
        matrices.append(frame[:3, :3].copy())
    tip = frame @ _homogeneous(translation=chain.offsets[-1])
    positions.append(tip[:3, 3])
    return np.array(positions), np.array(matrices)


@st.composite
def chains(draw: st.DrawFn) -> Chain:
    """Chains with random offsets (not only along +Y) and random rest rotations."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 6))
    rng = np.random.default_rng(seed)
    offsets = rng.normal(size=(n, 3))
    offsets *= rng.uniform(0.1, 5.0, size=(n, 1)) / np.linalg.norm(offsets, axis=1, keepdims=True)
    rest = rng.normal(size=(n, 4))
    rest /= np.linalg.norm(rest, axis=1, keepdims=True)
    return Chain(offsets, rest)


def _poses(seed: int, shape: tuple[int, ...], n: int) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(*shape, n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


@FAST
@given(chain=chains(), seed=st.integers(0, 2**32 - 1))
def test_forward_kinematics_matches_homogeneous_matrices(chain: Chain, seed: int) -> None:
    q = _poses(seed, (), chain.n_joints)
    positions, orientations = forward_kinematics(chain, q)
    expected_p, expected_m = _oracle(chain, q)
    np.testing.assert_allclose(positions, expected_p, atol=1e-12 * chain.reach)
    np.testing.assert_allclose(rot.to_matrix(orientations), expected_m, atol=1e-12)
    np.testing.assert_allclose(effector(chain, q), expected_p[-1], atol=1e-12 * chain.reach)


@FAST
@given(chain=chains())
def test_rest_pose_is_identity_rotations(chain: Chain) -> None:
    rest_p, rest_o = forward_kinematics(chain)
    p, o = forward_kinematics(chain, rot.identity((chain.n_joints,)))
    np.testing.assert_array_equal(rest_p, p)
    np.testing.assert_array_equal(rest_o, o)
    np.testing.assert_allclose(
        rest_p, _oracle(chain, rot.identity((chain.n_joints,)))[0], atol=1e-12 * chain.reach
    )


@FAST
@given(chain=chains(), seed=st.integers(0, 2**32 - 1))
def test_link_lengths_are_preserved(chain: Chain, seed: int) -> None:
    positions = forward_kinematics(chain, _poses(seed, (8,), chain.n_joints))[0]
    links = np.linalg.norm(np.diff(positions, axis=-2), axis=-1)
    np.testing.assert_allclose(links, np.broadcast_to(chain.lengths, links.shape), rtol=1e-12)
    np.testing.assert_array_equal(positions[:, 0], 0.0)


@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3), (2, 1, 4)])
def test_batched_shapes_match_one_pose_at_a_time(shape: tuple[int, ...]) -> None:
    chain = Chain.from_lengths([9, 9, 9, 9, 4])
    q = _poses(sum(shape) + 1, shape, chain.n_joints)
    positions, orientations = forward_kinematics(chain, q)
    assert positions.shape == (*shape, 6, 3)
    assert orientations.shape == (*shape, 5, 4)
    assert effector(chain, q).shape == (*shape, 3)
    flat_q = q.reshape(-1, 5, 4)
    flat_p = positions.reshape(-1, 6, 3)
    flat_o = orientations.reshape(-1, 5, 4)
    for k in range(flat_q.shape[0]):
        p_k, o_k = forward_kinematics(chain, flat_q[k])
        np.testing.assert_allclose(flat_p[k], p_k, atol=1e-13)
        np.testing.assert_allclose(flat_o[k], o_k, atol=1e-15)


def test_single_hinge_closed_form() -> None:
    """A straight two-link arm along +Z with its elbow bent 90° about X."""
    chain = Chain.from_lengths([2.0, 1.0])
    q = np.array([rot.identity(), rot.from_axis_angle([1.0, 0.0, 0.0], math.pi / 2)])
    positions = forward_kinematics(chain, q)[0]
    # Joint 1's frame has +Y along +Z (base); turning +90° about its X sends +Y to its +Z,
    # which is base −Y.
    np.testing.assert_allclose(positions, [[0, 0, 0], [0, 0, 2], [0, -1, 2]], atol=1e-15)


@pytest.mark.parametrize("shape", [(4,), (3, 3), (2, 5, 3), (2, 4, 4)])
def test_wrong_rotation_shapes_raise(shape: tuple[int, ...]) -> None:
    chain = Chain.from_lengths([1.0, 1.0, 1.0])
    with pytest.raises(SolveInputError, match=r"rotations must have shape \(\.\.\., 3, 4\)"):
        forward_kinematics(chain, np.zeros(shape))


def test_float_forward_kinematics_is_the_component_algebra_to_the_bit() -> None:
    """:func:`core.kinematics.forward_kinematics_floats` writes out
    ``W_i = qmul(qmul(W_{i−1}, rest_i), q_i)`` and ``p_{i+1} = p_i + qrotate(W_i, offset_i)``
    of :mod:`core.components`: the same positions and frames bit for bit (random chains,
    rest rotations and poses, unnormalised rotations too)."""
    from core.components import qmul, qrotate
    from core.kinematics import forward_kinematics_floats

    rng = np.random.default_rng(23)
    for _ in range(60):
        n = int(rng.integers(1, 8))
        rests = rot.normalize(rng.normal(size=(n, 4)))
        chain = Chain(rng.normal(size=(n, 3)), rest_rotations=rests)
        q = [tuple(r) for r in rng.normal(size=(n, 4)).tolist()]
        world, p = (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        points, frames = [p], []
        for rest, offset, q_i in zip(
            chain.rest_rotations.tolist(), chain.offsets.tolist(), q, strict=True
        ):
            world = qmul(qmul(world, tuple(rest)), q_i)
            d = qrotate(world, tuple(offset))
            p = (p[0] + d[0], p[1] + d[1], p[2] + d[2])
            points.append(p)
            frames.append(world)
        assert forward_kinematics_floats(chain, q) == (points, frames)
