# SPDX-License-Identifier: GPL-3.0-or-later
"""Untwist (core/untwist.py): the float path against the numpy path, and both against
independent oracles.

Oracles: forward kinematics (the untwisted pose puts every joint where the input points
are), the minimal-twist property (a re-aimed joint's rotation is a pure swing: its axis is
perpendicular to the rest link, its angle the angle between the rest link and the solved
link seen from the parent), and the joints that must not change.
"""

from __future__ import annotations

import numpy as np
import pytest

from core import rotations as rot
from core.chain import Chain
from core.kinematics import forward_kinematics
from core.limits import JointLimits
from core.untwist import aims_every_joint, untwist, untwist_arrays, untwist_floats

BEND_X = JointLimits(lock=(False, True, True))


def _random_chain(rng: np.random.Generator, limited_prefix: int = 0) -> Chain:
    """2–6 joints, offsets off the bone axis, random rest rotations; the first
    ``limited_prefix`` joints are hinges (so they are not re-aimed)."""
    n = int(rng.integers(2, 7))
    offsets = rng.normal(size=(n, 3)) * rng.uniform(0.2, 2.0)
    rests = rot.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.5 * rng.normal(size=(n, 4)))
    limits = [BEND_X if i < limited_prefix else JointLimits() for i in range(n)]
    return Chain(offsets, rest_rotations=rests, limits=limits)


def _random_poses(rng: np.random.Generator, chain: Chain, size: int) -> np.ndarray:
    return rot.normalize(rng.normal(size=(size, chain.n_joints, 4)))


def _first_reaimed(chain: Chain) -> int:
    first = chain.n_joints
    while first > 0 and chain.limits[first - 1].is_free:
        first -= 1
    return first


@pytest.mark.parametrize("limited_prefix", [0, 1, 2])
def test_float_path_equals_numpy_path_on_random_chains(limited_prefix: int) -> None:
    rng = np.random.default_rng(40 + limited_prefix)
    for _ in range(30):
        chain = _random_chain(rng, limited_prefix)
        q = _random_poses(rng, chain, 12)
        positions = forward_kinematics(chain, q)[0]
        arrays = untwist_arrays(chain, q, positions)
        floats = np.array(
            [
                untwist_floats(chain, pose, points)
                for pose, points in zip(q.tolist(), positions.tolist(), strict=True)
            ]
        )
        np.testing.assert_allclose(floats, arrays, atol=1e-9)
        # untwist picks floats for a few poses and arrays for many: the same answer.
        np.testing.assert_allclose(untwist(chain, q[:3], positions[:3]), arrays[:3], atol=1e-9)
        np.testing.assert_allclose(untwist(chain, q, positions), arrays, atol=1e-9)


def test_float_path_equals_numpy_path_at_a_half_turn() -> None:
    """A link pointing exactly against its rest direction: both take the half turn about
    the same perpendicular axis."""
    chain = Chain([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    positions = np.array([[[0.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, -1.0, 1.0]]])
    q = rot.identity((1, 2))
    arrays = untwist_arrays(chain, q, positions)
    floats = np.array([untwist_floats(chain, q[0].tolist(), positions[0].tolist())])
    np.testing.assert_allclose(floats, arrays, atol=1e-12)
    assert abs(arrays[0, 0, 0]) < 1e-12  # a half turn
    np.testing.assert_allclose(forward_kinematics(chain, arrays)[0], positions, atol=1e-12)


@pytest.mark.parametrize("limited_prefix", [0, 2])
def test_untwisted_pose_keeps_the_joints_and_is_a_pure_swing(limited_prefix: int) -> None:
    rng = np.random.default_rng(7 + limited_prefix)
    for _ in range(20):
        chain = _random_chain(rng, limited_prefix)
        q = _random_poses(rng, chain, 10)
        positions = forward_kinematics(chain, q)[0]
        first = _first_reaimed(chain)
        for out in (untwist(chain, q[:4], positions[:4]), untwist(chain, q, positions)):
            size = len(out)
            got, world = forward_kinematics(chain, out)
            np.testing.assert_allclose(got, positions[:size], atol=1e-9 * chain.reach)
            np.testing.assert_allclose(out[:, :first], q[:size, :first], atol=0.0)
            for i in range(first, chain.n_joints):
                parent = rot.identity((size,)) if i == 0 else world[:, i - 1]
                frame = rot.multiply(parent, chain.rest_rotations[i])
                link = rot.rotate(rot.conjugate(frame), got[:, i + 1] - got[:, i])
                rest = chain.offsets[i] / np.linalg.norm(chain.offsets[i])
                unit = link / np.linalg.norm(link, axis=-1, keepdims=True)
                # No twist: the rotation's axis is perpendicular to the rest link.
                np.testing.assert_allclose(out[:, i, 1:] @ rest, 0.0, atol=1e-9)
                # The shortest swing: its angle is the angle between the two directions.
                swing = np.arctan2(np.linalg.norm(np.cross(rest, unit), axis=-1), unit @ rest)
                angle = 2.0 * np.arctan2(np.linalg.norm(out[:, i, 1:], axis=-1), out[:, i, 0])
                np.testing.assert_allclose(angle, swing, atol=1e-9)


def test_a_twisted_solve_loses_its_twist() -> None:
    """Twisting every joint's world frame about its own link (each child's local rotation
    taking the twist back) leaves the positions alone; untwisting the twisted pose gives the
    untwisted pose of the untwisted one."""
    rng = np.random.default_rng(3)
    chain = _random_chain(rng)
    q = _random_poses(rng, chain, 5)
    positions, world = forward_kinematics(chain, q)
    twisted = q.copy()
    parent = rot.identity((5,))
    for i in range(chain.n_joints):
        turn = rot.from_axis_angle(chain.offsets[i], rng.uniform(-3.0, 3.0, 5))
        frame = rot.multiply(world[:, i], turn)
        twisted[:, i] = rot.multiply(
            rot.conjugate(rot.multiply(parent, chain.rest_rotations[i])), frame
        )
        parent = frame
    np.testing.assert_allclose(forward_kinematics(chain, twisted)[0], positions, atol=1e-9)
    a = untwist(chain, twisted, positions)
    b = untwist(chain, q, positions)
    np.testing.assert_allclose(rot.positive_w(a), rot.positive_w(b), atol=1e-9)


def test_a_chain_ending_in_a_limited_joint_is_left_alone() -> None:
    chain = Chain.from_lengths([1.0, 1.0, 0.5], bend_limits_deg=[None, None, 90.0])
    rng = np.random.default_rng(1)
    q = rot.normalize(rng.normal(size=(3, 3, 4)))
    positions = forward_kinematics(chain, q)[0]
    assert not aims_every_joint(chain)
    assert untwist(chain, q, positions) is q
    assert untwist_arrays(chain, q, positions) is q
    pose = q[0].tolist()
    assert untwist_floats(chain, pose, positions[0].tolist()) is pose
    with pytest.raises(ValueError, match="a pose is needed"):
        untwist_floats(chain, None, positions[0].tolist())


def test_a_free_chain_needs_only_the_positions() -> None:
    rng = np.random.default_rng(2)
    chain = _random_chain(rng)
    q = _random_poses(rng, chain, 1)
    positions = forward_kinematics(chain, q)[0]
    assert aims_every_joint(chain)
    with_pose = untwist_floats(chain, q[0].tolist(), positions[0].tolist())
    assert untwist_floats(chain, None, positions[0].tolist()) == with_pose


def _untwist_by_components(chain: Chain, pose: list, points: list) -> list:
    """The float untwist composed of :mod:`core.components` (what :func:`untwist_floats`
    writes out): ``q_i = qbetween(offset_i, qunrotate(W_{i−1} · rest_i, p_{i+1} − p_i))``."""
    from core.components import qbetween, qmul, qunrotate

    first = _first_reaimed(chain)
    rests = [tuple(r) for r in chain.rest_rotations.tolist()]
    offsets = [tuple(o) for o in chain.offsets.tolist()]
    out = list(pose)
    world = (1.0, 0.0, 0.0, 0.0)
    for i in range(chain.n_joints):
        parent = qmul(world, rests[i]) if i else rests[0]
        if i >= first:
            a, b = points[i], points[i + 1]
            link = (b[0] - a[0], b[1] - a[1], b[2] - a[2])
            out[i] = qbetween(offsets[i], qunrotate(parent, link))
        world = qmul(parent, out[i])
    return out


def test_float_untwist_is_the_component_algebra_to_the_bit() -> None:
    """:func:`untwist_floats` writes out ``qmul``, ``qunrotate`` and ``qbetween`` with the
    unit offsets computed once per chain: the same rotations bit for bit, on random chains
    and poses, with points off the poses' own (other link lengths) and links turned right
    round against their rest direction (``qbetween``'s half-turn branch)."""
    rng = np.random.default_rng(17)
    compared = reversed_ = 0
    for _ in range(40):
        chain = _random_chain(rng, int(rng.integers(0, 2)))
        for pose in _random_poses(rng, chain, 4):
            points = forward_kinematics(chain, pose)[0]
            points[1:] += 0.3 * rng.normal(size=points[1:].shape)
            if rng.random() < 0.3:  # the last link turned right round from its rest direction
                turned = _untwist_by_components(chain, pose.tolist(), points.tolist())
                frames = forward_kinematics(chain, np.array(turned))[1]
                parent = rot.multiply(frames[-2], chain.rest_rotations[-1])
                points[-1] = points[-2] - rot.rotate(parent, chain.offsets[-1])
                reversed_ += 1
            q, p = pose.tolist(), points.tolist()
            assert untwist_floats(chain, q, p) == _untwist_by_components(chain, q, p)
            compared += 1
    assert compared == 160
    assert reversed_ > 20  # (qbetween's half-turn branch is taken)
