# SPDX-License-Identifier: GPL-3.0-or-later
"""The component algebra of the float paths (core/components.py) against core/rotations.py,
and against a rotation matrix as an independent oracle."""

from __future__ import annotations

import numpy as np
import pytest

from core import rotations as rot
from core.components import qangle, qconj, qmatrix, qmul, qrotate, qslerp, qunrotate


@pytest.fixture
def cases() -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    rng = np.random.default_rng(20261127)
    q = rot.normalize(rng.normal(size=(200, 4)))
    v = rng.normal(size=(200, 3)) * rng.uniform(0.01, 100.0, size=(200, 1))
    return [(tuple(a), tuple(b)) for a, b in zip(q.tolist(), v.tolist(), strict=True)]


def test_qunrotate_is_qrotate_of_the_conjugate_to_the_bit(cases):
    for q, v in cases:
        assert qunrotate(q, v) == qrotate(qconj(q), v)


def test_qunrotate_undoes_qrotate_and_applies_the_transposed_matrix(cases):
    for q, v in cases:
        m = np.array(qmatrix(q)).reshape(3, 3)
        np.testing.assert_allclose(qunrotate(q, v), m.T @ np.array(v), rtol=0, atol=1e-12 * 100)
        np.testing.assert_allclose(qunrotate(q, qrotate(q, v)), v, rtol=0, atol=1e-12 * 100)


def test_qrotate_and_qmul_match_the_batched_functions(cases):
    for (q, v), (p, _) in zip(cases, cases[1:] + cases[:1], strict=True):
        np.testing.assert_allclose(qrotate(q, v), rot.rotate(np.array(q), np.array(v)), atol=1e-12)
        np.testing.assert_allclose(qmul(p, q), rot.multiply(np.array(p), np.array(q)), atol=1e-15)


def test_qangle_is_the_batched_angle_and_the_matrix_trace(cases):
    """:func:`qangle` against :func:`core.rotations.angle`, and against the rotation
    matrix's trace (``1 + 2 cos θ``) away from small angles, both signs of ``w``."""
    for q, _ in cases:
        assert qangle(q) == pytest.approx(float(rot.angle(np.array(q))), abs=1e-15)
        assert qangle(tuple(-c for c in q)) == qangle(q)
        trace = float(np.trace(np.array(qmatrix(q)).reshape(3, 3)))
        assert qangle(q) == pytest.approx(np.arccos(np.clip((trace - 1.0) / 2.0, -1, 1)), abs=1e-6)


def test_qslerp_is_the_batched_slerp_and_turns_evenly() -> None:
    """:func:`qslerp` gives :func:`core.rotations.slerp`'s rotation to rounding — on random
    pairs, pairs within 1e-10 of each other (the linear branch), opposite hemispheres (the
    shorter arc) and exact ends — and, as an independent check, turns ``p`` toward ``q`` by
    ``t`` of the angle between them about a fixed axis."""
    rng = np.random.default_rng(7)
    p = rot.normalize(rng.normal(size=(300, 4)))
    q = rot.normalize(rng.normal(size=(300, 4)))
    q[:50] = rot.normalize(p[:50] + 1e-10 * rng.normal(size=(50, 4)))
    q[50:80] = -q[50:80]
    t = rng.uniform(0.0, 1.0, size=300)
    t[:10], t[10:20] = 0.0, 1.0
    batch = rot.slerp(p, q, t)
    for k in range(300):
        one = np.array(qslerp(tuple(p[k]), tuple(q[k]), float(t[k])))
        np.testing.assert_allclose(one, batch[k], rtol=0, atol=2e-15)
        # the angle from p is t times the angle from p to q (the shorter arc)
        whole = 2.0 * np.arccos(min(1.0, abs(float(np.dot(p[k], q[k])))))
        part = 2.0 * np.arccos(min(1.0, abs(float(np.dot(p[k], one)))))
        assert part == pytest.approx(t[k] * whole, abs=1e-7)
