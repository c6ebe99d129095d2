# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.dual_quaternion against homogeneous 4×4 matrices built with SciPy."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from core import dual_quaternion as dq

FAST = settings(max_examples=30, deadline=None)


def _random_motion(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quaternions wxyz ``(n, 4)``, translations ``(n, 3)`` and their 4×4 matrices (SciPy)."""
    r = Rotation.random(n, random_state=rng)
    t = rng.uniform(-3.0, 3.0, (n, 3))
    m = np.tile(np.eye(4), (n, 1, 1))
    m[:, :3, :3] = r.as_matrix()
    m[:, :3, 3] = t
    xyzw = r.as_quat()
    return np.concatenate((xyzw[:, 3:], xyzw[:, :3]), axis=1), t, m


@FAST
@given(st.integers(0, 2**32 - 1))
def test_product_matches_matrix_product(seed: int) -> None:
    rng = np.random.default_rng(seed)
    qa, ta, ma = _random_motion(rng, 5)
    qb, tb, mb = _random_motion(rng, 5)
    a = dq.from_rotation_translation(qa, ta)
    b = dq.from_rotation_translation(qb, tb)
    np.testing.assert_allclose(dq.to_matrix(a), ma, atol=1e-12)
    np.testing.assert_allclose(dq.to_matrix(dq.multiply(a, b)), ma @ mb, atol=1e-12)


def test_conjugate_is_inverse_motion() -> None:
    rng = np.random.default_rng(3)
    q, t, m = _random_motion(rng, 8)
    a = dq.from_rotation_translation(q, t)
    np.testing.assert_allclose(dq.to_matrix(dq.conjugate(a)), np.linalg.inv(m), atol=1e-12)
    np.testing.assert_allclose(dq.multiply(a, dq.conjugate(a)), dq.identity((8,)), atol=1e-12)


def test_rotation_translation_round_trip_and_points() -> None:
    rng = np.random.default_rng(4)
    q, t, m = _random_motion(rng, 6)
    a = dq.from_rotation_translation(q, t)
    np.testing.assert_allclose(dq.rotation(a), q, atol=1e-15)
    np.testing.assert_allclose(dq.translation(a), t, atol=1e-12)
    p = rng.normal(size=(6, 3))
    expected = np.einsum("nij,nj->ni", m[:, :3, :3], p) + m[:, :3, 3]
    np.testing.assert_allclose(dq.transform_point(a, p), expected, atol=1e-12)


def test_transform_line_moves_plucker_coordinates() -> None:
    """``Q l Q*`` equals the line through the moved point with the moved direction."""
    rng = np.random.default_rng(5)
    q, t, m = _random_motion(rng, 6)
    a = dq.from_rotation_translation(q, t)
    point = rng.normal(size=(6, 3))
    direction = rng.normal(size=(6, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    d2, m2 = dq.transform_line(a, direction, np.cross(point, direction))
    moved_point = np.einsum("nij,nj->ni", m[:, :3, :3], point) + t
    moved_dir = np.einsum("nij,nj->ni", m[:, :3, :3], direction)
    np.testing.assert_allclose(d2, moved_dir, atol=1e-12)
    np.testing.assert_allclose(m2, np.cross(moved_point, moved_dir), atol=1e-12)
