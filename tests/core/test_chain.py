# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.chain: constructors, derived lengths, and rejection of bad chains.

Rest poses are checked by forward kinematics against plain sums of the link vectors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from core import rotations as rot
from core.chain import MIN_LINK_LENGTH, Chain
from core.errors import ChainError
from core.kinematics import forward_kinematics
from core.limits import FREE, JointLimits

FAST = settings(max_examples=50, deadline=None)


def _rest_positions(chain: Chain) -> np.ndarray:
    return forward_kinematics(chain)[0]


# ---------------------------------------------------------------------- from_lengths
def test_from_lengths_default_is_straight_along_z() -> None:
    chain = Chain.from_lengths([9, 9, 9, 9, 4])
    expected = np.zeros((6, 3))
    expected[:, 2] = [0, 9, 18, 27, 36, 40]
    np.testing.assert_allclose(_rest_positions(chain), expected, atol=1e-12)
    assert chain.n_joints == 5
    assert chain.reach == 40.0
    np.testing.assert_array_equal(chain.lengths, [9, 9, 9, 9, 4])
    np.testing.assert_array_equal(chain.remaining_lengths, [31, 22, 13, 4, 0])
    assert chain.is_free
    assert chain.names == ("joint0", "joint1", "joint2", "joint3", "joint4")
    # The bone axis (local +Y) of every joint points along the chain.
    orientations = forward_kinematics(chain)[1]
    np.testing.assert_allclose(
        rot.rotate(orientations, [0.0, 1.0, 0.0]), [[0, 0, 1]] * 5, atol=1e-15
    )


@pytest.mark.parametrize(
    "direction",
    [
        (0.0, 1.0, 0.0),
        (0.0, -1.0, 0.0),
        (1.0, 0.0, 0.0),
        (-1.0, 0.0, 0.0),
        (0.0, 0.0, -1.0),
        (0.0, -3.0, 0.0),
        (1e-9, -1.0, 0.0),
        (1.0, -2.0, 2.0),
    ],
)
def test_from_lengths_follows_direction(direction: tuple[float, float, float]) -> None:
    chain = Chain.from_lengths([1.0, 2.0, 0.5], direction)
    unit = np.asarray(direction) / np.linalg.norm(direction)
    positions = _rest_positions(chain)
    np.testing.assert_allclose(positions, np.outer([0.0, 1.0, 3.0, 3.5], unit), atol=1e-12)
    assert np.all(np.isfinite(chain.rest_rotations))


@FAST
@given(
    direction=hnp.arrays(np.float64, 3, elements=st.floats(-100, 100)).filter(
        lambda d: np.linalg.norm(d) > 1e-6
    ),
    lengths=st.lists(st.floats(1e-3, 100.0), min_size=1, max_size=7),
)
def test_from_lengths_any_direction(direction: np.ndarray, lengths: list[float]) -> None:
    chain = Chain.from_lengths(lengths, direction)
    unit = direction / np.linalg.norm(direction)
    expected = np.outer(np.concatenate(([0.0], np.cumsum(lengths))), unit)
    np.testing.assert_allclose(_rest_positions(chain), expected, atol=1e-12 * sum(lengths))
    np.testing.assert_allclose(chain.reach, sum(lengths), rtol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(chain.rest_rotations, axis=-1), 1.0, atol=1e-15)


def test_from_lengths_bend_limits_in_degrees() -> None:
    chain = Chain.from_lengths([18, 18, 4], bend_limits_deg=[None, 126, 90])
    assert chain.limits[0] is FREE
    assert chain.limits[1].cone == pytest.approx(math.radians(126))
    assert chain.limits[2].cone == pytest.approx(math.pi / 2)
    assert not chain.is_free


def test_from_lengths_full_limits_and_names() -> None:
    hinge = JointLimits(hinge_axis=(1.0, 0.0, 0.0))
    chain = Chain.from_lengths([1, 1], limits=[FREE, hinge], names=["upper", "lower"])
    assert chain.limits == (FREE, hinge)
    assert chain.names == ("upper", "lower")
    assert "hinge" in repr(chain)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lengths": []}, "at least one link length"),
        ({"lengths": [1.0, 0.0, 1.0]}, "link lengths must be finite and > 1e-09"),
        ({"lengths": [1.0, -2.0]}, "link lengths must be finite and > 1e-09"),
        ({"lengths": [1.0, math.nan]}, "link lengths must be finite"),
        ({"lengths": [math.inf]}, "link lengths must be finite"),
        ({"lengths": [[1.0, 2.0], [3.0, 4.0]]}, r"lengths must have shape \(n,\)"),
        ({"lengths": [1.0], "direction": (0.0, 0.0, 0.0)}, "direction must be a non-zero 3-vector"),
        ({"lengths": [1.0], "direction": (0.0, 1.0)}, "direction must be a non-zero 3-vector"),
        ({"lengths": [1.0], "direction": (0.0, math.nan, 1.0)}, "direction must be a non-zero"),
        (
            {"lengths": [1.0], "bend_limits_deg": [90], "limits": [FREE]},
            "either limits or bend_limits_deg",
        ),
        ({"lengths": [1.0, 1.0], "bend_limits_deg": [90]}, "got 1 bend limits for 2 joints"),
        ({"lengths": [1.0, 1.0], "limits": [FREE]}, "got 1 joint limits for 2 joints"),
        ({"lengths": [1.0, 1.0], "names": ["a"]}, "got 1 names for 2 joints"),
    ],
)
def test_from_lengths_rejects_bad_input(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ChainError, match=message):
        Chain.from_lengths(**kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- from_offsets
@st.composite
def link_vectors(draw: st.DrawFn) -> np.ndarray:
    n = draw(st.integers(1, 6))
    v = draw(hnp.arrays(np.float64, (n, 3), elements=st.floats(-10, 10, allow_subnormal=False)))
    v = v[np.linalg.norm(v, axis=1) > 1e-2]
    # Antiparallel and parallel neighbours are the awkward cases: make them common.
    if len(v) >= 2 and draw(st.booleans()):
        v[1] = -draw(st.floats(0.1, 3.0)) * v[0]
    if len(v) == 0:
        v = np.array([[0.0, -1.0, 0.0]])
    return v


@FAST
@given(v=link_vectors())
def test_from_offsets_reproduces_link_vectors(v: np.ndarray) -> None:
    chain = Chain.from_offsets(v)
    positions = _rest_positions(chain)
    expected = np.concatenate((np.zeros((1, 3)), np.cumsum(v, axis=0)))
    np.testing.assert_allclose(positions, expected, atol=1e-12 * np.abs(v).sum() + 1e-15)
    np.testing.assert_allclose(chain.lengths, np.linalg.norm(v, axis=1), rtol=1e-15)
    # Offsets lie along each joint's +Y (the bone axis), and frames are carried without roll:
    # each rest rotation is a shortest arc away from +Y, so it has no Y component.
    np.testing.assert_allclose(chain.offsets[:, [0, 2]], 0.0, atol=0.0)
    np.testing.assert_allclose(chain.rest_rotations[1:, 2], 0.0, atol=1e-12)


@pytest.mark.parametrize(
    "v",
    [
        [[0.0, -1.0, 0.0]],
        [[0.0, 0.0, 1.0], [0.0, 0.0, -2.0], [0.0, 0.0, 1.0]],
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        [[0.0, 1.0, 0.0], [0.0, -1.0, 0.0]],
    ],
)
def test_from_offsets_special_cases(v: list[list[float]]) -> None:
    chain = Chain.from_offsets(v, names=[f"b{i}" for i in range(len(v))])
    expected = np.concatenate((np.zeros((1, 3)), np.cumsum(v, axis=0)))
    np.testing.assert_allclose(_rest_positions(chain), expected, atol=1e-15)
    assert chain.names[0] == "b0"


@pytest.mark.parametrize(
    ("v", "message"),
    [
        ([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]], "link 1 has zero length"),
        ([[0.0, 1e-12, 0.0]], "link 0 has zero length"),
        ([[0.0, math.nan, 1.0]], "link vectors must be finite"),
        ([[0.0, 1.0]], r"link vectors must have shape \(n, 3\)"),
        ([0.0, 1.0, 0.0], r"link vectors must have shape \(n, 3\)"),
        (np.zeros((0, 3)), r"link vectors must have shape \(n, 3\) with n >= 1"),
    ],
)
def test_from_offsets_rejects_bad_input(v: object, message: str) -> None:
    with pytest.raises(ChainError, match=message):
        Chain.from_offsets(v)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- direct construction
def test_direct_construction_with_rest_rotations() -> None:
    rest = np.array([rot.from_axis_angle([1.0, 0, 0], math.pi / 2), rot.identity()])
    chain = Chain([[0.0, 2.0, 0.0], [0.0, 0.0, 3.0]], rest)
    # Joint 0 turns +Y to +Z; joint 1's offset (0, 0, 3) is then along -Y in the base frame.
    np.testing.assert_allclose(
        _rest_positions(chain), [[0, 0, 0], [0, 0, 2], [0, -3, 2]], atol=1e-15
    )
    np.testing.assert_array_equal(chain.lengths, [2.0, 3.0])
    np.testing.assert_array_equal(chain.remaining_lengths, [3.0, 0.0])


def test_chain_arrays_are_read_only_copies() -> None:
    offsets = np.array([[0.0, 1.0, 0.0]])
    chain = Chain(offsets)
    offsets[0, 1] = 5.0
    assert chain.reach == 1.0
    with pytest.raises(ValueError, match="read-only"):
        chain.offsets[0, 1] = 2.0
    with pytest.raises(ValueError, match="read-only"):
        chain.rest_rotations[0, 0] = 2.0


def test_rest_rotations_are_normalised() -> None:
    chain = Chain([[0.0, 1.0, 0.0]], [[1.0 + 1e-8, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(np.linalg.norm(chain.rest_rotations, axis=-1), 1.0, atol=1e-16)


def test_with_limits_keeps_geometry() -> None:
    chain = Chain.from_lengths([1.0, 2.0], (1.0, 0.0, 0.0), names=["a", "b"])
    limited = chain.with_limits([FREE, JointLimits(cone=0.5)])
    np.testing.assert_array_equal(limited.offsets, chain.offsets)
    np.testing.assert_array_equal(limited.rest_rotations, chain.rest_rotations)
    assert limited.names == ("a", "b")
    assert limited.limits[1].cone == 0.5
    assert chain.is_free
    assert not limited.is_free


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],), "link 1 has zero length"),
        (([[0.0, 1.0, 0.0], [0.0, 0.0, 1e-10]],), f"every link needs a length > {MIN_LINK_LENGTH}"),
        (([[0.0, math.inf, 0.0]],), "offsets must be finite"),
        (([0.0, 1.0, 0.0],), r"offsets must have shape \(n, 3\)"),
        (([[0.0, 1.0]],), r"offsets must have shape \(n, 3\)"),
        ((np.zeros((0, 3)),), r"offsets must have shape \(n, 3\) with n >= 1"),
        (([[0.0, 1.0, 0.0]], [[1.0, 0.0, 0.0]]), r"rest_rotations must have shape \(1, 4\)"),
        (([[0.0, 1.0, 0.0]], [[2.0, 0.0, 0.0, 0.0]]), "rest_rotations must be unit quaternions"),
        (([[0.0, 1.0, 0.0]], [[math.nan, 0.0, 0.0, 0.0]]), "must be unit quaternions"),
        (([[0.0, 1.0, 0.0]], None, [FREE, FREE]), "got 2 joint limits for 1 joints"),
        (([[0.0, 1.0, 0.0]], None, [0.5]), "limits must be JointLimits"),
        (([[0.0, 1.0, 0.0]], None, None, ["a", "b"]), "got 2 names for 1 joints"),
    ],
)
def test_constructor_rejects_bad_input(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ChainError, match=message):
        Chain(*args)  # type: ignore[arg-type]
