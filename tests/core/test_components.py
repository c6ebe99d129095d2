# SPDX-License-Identifier: GPL-3.0-or-later
"""The component algebra of the float paths (core/components.py) against core/rotations.py,
and against a rotation matrix as an independent oracle."""

from __future__ import annotations

import numpy as np
import pytest

from core import rotations as rot
from core.components import qconj, qmatrix, qmul, qrotate, qunrotate


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
