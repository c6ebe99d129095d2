# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.rotations against SciPy's Rotation and against closed-form identities.

Quaternions here are wxyz (Reach IK) while SciPy's are xyzw: every comparison converts
explicitly with :func:`_scipy`. Rotations are compared as matrices, or as quaternions up to
sign (``q`` and ``-q`` are the same rotation).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.spatial.transform import Rotation, Slerp

from core import rotations as rot
from core.errors import ReachIKError

FAST = settings(max_examples=40, deadline=None)

BATCH_SHAPES = st.sampled_from([(), (1,), (6,), (2, 3)])


def _unit(raw: np.ndarray) -> np.ndarray:
    """Normalise rows; rows too short to have a direction become the identity."""
    norm = np.linalg.norm(raw, axis=-1, keepdims=True)
    ident = np.zeros_like(raw)
    ident[..., 0] = 1.0
    return np.where(norm > 1e-3, raw / np.where(norm > 1e-3, norm, 1.0), ident)


@st.composite
def quats(draw: st.DrawFn, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Unit quaternions ``shape + (4,)`` wxyz; hypothesis likes exact 0 and ±1 components."""
    if shape is None:
        shape = draw(BATCH_SHAPES)
    raw = draw(
        hnp.arrays(np.float64, (*shape, 4), elements=st.floats(-1.0, 1.0, allow_subnormal=False))
    )
    return _unit(raw)


@st.composite
def vectors(draw: st.DrawFn, shape: tuple[int, ...], scale: float = 10.0) -> np.ndarray:
    return draw(
        hnp.arrays(
            np.float64, (*shape, 3), elements=st.floats(-scale, scale, allow_subnormal=False)
        )
    )


def _scipy(q: np.ndarray) -> Rotation:
    """SciPy rotations (flat) from wxyz quaternions ``(..., 4)``."""
    return Rotation.from_quat(np.asarray(q).reshape(-1, 4)[:, [1, 2, 3, 0]])


def _wxyz(r: Rotation, shape: tuple[int, ...]) -> np.ndarray:
    return r.as_quat().reshape(-1, 4)[:, [3, 0, 1, 2]].reshape((*shape, 4))


def _matrices(q: np.ndarray) -> np.ndarray:
    """SciPy's matrices of wxyz quaternions, shaped ``(..., 3, 3)``."""
    return _scipy(q).as_matrix().reshape((*np.shape(q)[:-1], 3, 3))


def _same_rotation(p: np.ndarray, q: np.ndarray, atol: float = 1e-9) -> None:
    """Assert ``p`` and ``q`` (``(..., 4)``) are the same rotations (sign-free)."""
    d = np.minimum(np.linalg.norm(p - q, axis=-1), np.linalg.norm(p + q, axis=-1))
    assert np.all(d <= atol), f"max quaternion distance {d.max()}"


def _wrap(a: np.ndarray) -> np.ndarray:
    return (np.asarray(a) + math.pi) % (2.0 * math.pi) - math.pi


def _rodrigues(axis: np.ndarray, phi: float) -> np.ndarray:
    """Rotation matrix by ``phi`` about unit ``axis`` (plain numpy, independent of core)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(phi) * k + (1.0 - math.cos(phi)) * (k @ k)


# ---------------------------------------------------------------------- products and actions
@FAST
@given(data=st.data())
def test_multiply_matches_scipy(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    p, q = data.draw(quats(shape)), data.draw(quats(shape))
    expected = (_scipy(p) * _scipy(q)).as_matrix().reshape((*shape, 3, 3))
    np.testing.assert_allclose(_matrices(rot.multiply(p, q)), expected, atol=1e-12)


@FAST
@given(data=st.data())
def test_rotate_matches_scipy(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    q, v = data.draw(quats(shape)), data.draw(vectors(shape))
    expected = _scipy(q).apply(v.reshape(-1, 3)).reshape(v.shape)
    np.testing.assert_allclose(rot.rotate(q, v), expected, atol=1e-11)


def test_rotate_broadcasts_one_rotation_over_many_vectors() -> None:
    q = rot.from_axis_angle([0.0, 0.0, 1.0], math.pi / 2)
    v = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    np.testing.assert_allclose(
        rot.rotate(q, v), [[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 2.0]], atol=1e-15
    )


@FAST
@given(q=quats())
def test_to_matrix_matches_scipy(q: np.ndarray) -> None:
    np.testing.assert_allclose(rot.to_matrix(q), _matrices(q), atol=1e-12)


@FAST
@given(q=quats())
def test_from_matrix_matches_scipy_with_positive_w(q: np.ndarray) -> None:
    out = rot.from_matrix(_matrices(q))
    assert out.shape == q.shape
    assert np.all(out[..., 0] >= 0.0)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, atol=1e-12)
    _same_rotation(out, q, atol=1e-12)


@pytest.mark.parametrize("dominant", [0, 1, 2, 3])
def test_from_matrix_each_branch(dominant: int) -> None:
    """Quaternions whose largest component is w, x, y or z exercise each branch."""
    rng = np.random.default_rng(10 + dominant)
    q = rng.uniform(-0.4, 0.4, size=(200, 4))
    q[:, dominant] = rng.choice([-1.0, 1.0], size=200) * rng.uniform(0.6, 1.0, size=200)
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    assert np.all(np.argmax(np.abs(q), axis=-1) == dominant)
    _same_rotation(rot.from_matrix(rot.to_matrix(q)), q, atol=1e-14)
    _same_rotation(rot.from_matrix(_matrices(q)), q, atol=1e-14)


@pytest.mark.parametrize("epsilon", [0.0, 1e-15, 1e-12, 1e-8, 1e-4])
@pytest.mark.parametrize(
    "axis",
    [
        (1.0, 0.0, 0.0),
        (0.0, 1.0, 0.0),
        (0.0, 0.0, 1.0),
        (1.0, 1.0, 0.0),
        (0.0, -1.0, 1.0),
        (1.0, 1.0, 1.0),
        (0.3, -0.5, 0.8),
    ],
)
def test_from_matrix_near_half_turn(epsilon: float, axis: tuple[float, float, float]) -> None:
    """Near 180° the trace is ≈ −1, so the w branch must give way to an x/y/z branch."""
    u = np.asarray(axis) / np.linalg.norm(axis)
    phi = math.pi - epsilon
    q = rot.from_matrix(_rodrigues(u, phi))
    expected = np.concatenate(([math.cos(phi / 2)], math.sin(phi / 2) * u))
    _same_rotation(q, expected, atol=1e-12)
    assert np.all(np.isfinite(q))


def test_from_matrix_tolerates_slightly_non_orthogonal_input() -> None:
    rng = np.random.default_rng(3)
    q = _unit(rng.normal(size=(50, 4)))
    m = rot.to_matrix(q) + rng.normal(scale=1e-9, size=(50, 3, 3))
    out = rot.from_matrix(m)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, atol=1e-14)
    _same_rotation(out, q, atol=1e-8)


def test_the_float_twin_of_from_matrix_gives_its_numbers() -> None:
    """:func:`core.matrix9.quaternion_of` (one row-major matrix in floats, what live solving
    reads a goal orientation with) against :func:`rot.from_matrix` (what a bake reads ``F``
    frames with): the same quaternions to 1e-15 on rotations of every branch, slightly
    non-orthogonal ones and mirrored ones (a goal read on an armature mirrored by a negative
    scale: not rotations, but both must read them alike)."""
    from core.matrix9 import quaternion_of

    rng = np.random.default_rng(8)
    m = rot.to_matrix(_unit(rng.normal(size=(400, 4))))
    m[100:200] += rng.normal(scale=1e-9, size=(100, 3, 3))
    m[200:300, :, 0] *= -1.0  # (a mirrored first axis)
    m[300:] = np.diag([1.0, -1.0, -1.0]) + rng.normal(scale=1e-3, size=(100, 3, 3))
    ours = np.array([quaternion_of(tuple(row.ravel().tolist())) for row in m])
    np.testing.assert_allclose(ours, rot.from_matrix(m), rtol=0.0, atol=1e-15)


# ---------------------------------------------------------------------- axis-angle, rotvec
@FAST
@given(data=st.data())
def test_from_axis_angle_matches_scipy(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    axis = data.draw(vectors(shape))
    phi = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-7.0, 7.0)))
    norm = np.linalg.norm(axis, axis=-1, keepdims=True)
    usable = norm[..., 0] > 1e-6
    unit = np.where(usable[..., None], axis / np.where(norm > 1e-6, norm, 1.0), 0.0)
    expected = _wxyz(Rotation.from_rotvec((unit * phi[..., None]).reshape(-1, 3)), shape)
    q = rot.from_axis_angle(axis, phi)
    _same_rotation(np.where(usable[..., None], q, rot.identity(shape)), expected, atol=1e-12)


def test_from_axis_angle_zero_axis_is_identity() -> None:
    np.testing.assert_array_equal(rot.from_axis_angle([0.0, 0.0, 0.0], 1.3), [1.0, 0, 0, 0])


@FAST
@given(q=quats())
def test_to_axis_angle_roundtrip_and_range(q: np.ndarray) -> None:
    axis, phi = rot.to_axis_angle(q)
    assert np.all((phi >= 0.0) & (phi <= math.pi))
    np.testing.assert_allclose(np.linalg.norm(axis, axis=-1), 1.0, atol=1e-12)
    _same_rotation(rot.from_axis_angle(axis, phi), q, atol=1e-12)
    np.testing.assert_allclose(phi, _scipy(q).magnitude().reshape(phi.shape), atol=1e-12)


def test_to_axis_angle_identity_gives_plus_x() -> None:
    axis, phi = rot.to_axis_angle(rot.identity())
    np.testing.assert_array_equal(axis, [1.0, 0.0, 0.0])
    assert phi == 0.0


@FAST
@given(q=quats())
def test_angle_matches_scipy_magnitude(q: np.ndarray) -> None:
    np.testing.assert_allclose(
        rot.angle(q), _scipy(q).magnitude().reshape(q.shape[:-1]), atol=1e-12
    )


@FAST
@given(data=st.data())
def test_from_rotvec_matches_scipy(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    v = data.draw(vectors(shape, scale=12.0))
    expected = _wxyz(Rotation.from_rotvec(v.reshape(-1, 3)), shape)
    _same_rotation(rot.from_rotvec(v), expected, atol=1e-12)


@FAST
@given(q=quats())
def test_to_rotvec_matches_scipy(q: np.ndarray) -> None:
    v = rot.to_rotvec(q)
    assert np.all(np.linalg.norm(v, axis=-1) <= math.pi + 1e-12)
    expected = _scipy(q).as_rotvec().reshape(v.shape)
    # At exactly π the sign of the vector is a free choice: compare rotations there.
    half_turn = np.linalg.norm(expected, axis=-1) > math.pi - 1e-9
    np.testing.assert_allclose(v[~half_turn], expected[~half_turn], atol=1e-12)
    _same_rotation(rot.from_rotvec(v), q, atol=1e-12)


@FAST
@given(data=st.data())
def test_rotvec_roundtrip_inside_pi(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    v = data.draw(vectors(shape, scale=1.8))  # |v| <= 1.8·√3 < π
    np.testing.assert_allclose(rot.to_rotvec(rot.from_rotvec(v)), v, atol=1e-12)


# ---------------------------------------------------------------------- exp / log
@FAST
@given(q=quats())
def test_exp_of_log_is_q_with_positive_w(q: np.ndarray) -> None:
    v = rot.log(q)
    assert np.all(np.linalg.norm(v, axis=-1) <= math.pi / 2 + 1e-12)
    np.testing.assert_allclose(rot.exp(v), rot.positive_w(q), atol=1e-12)


@FAST
@given(data=st.data())
def test_log_is_half_rotvec(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    v = data.draw(vectors(shape, scale=0.9))  # |v| < π/2
    np.testing.assert_allclose(rot.log(rot.exp(v)), v, atol=1e-13)
    np.testing.assert_allclose(rot.exp(v), rot.from_rotvec(2.0 * v), atol=1e-15)


_SMALL = np.concatenate(
    (
        np.geomspace(1e-12, 1e-3, 37),
        rot.SMALL_ANGLE * np.array([1.0 - 1e-9, 1.0, 1.0 + 1e-9]),
    )
)


def test_exp_matches_exact_formula_across_taylor_switch() -> None:
    """For tiny θ, float ``sin θ / θ`` is exact to an ulp, so it is a valid oracle."""
    axis = np.array([0.48, -0.6, 0.64])
    v = _SMALL[:, None] * axis
    expected = np.concatenate(
        (np.cos(_SMALL)[:, None], (np.sin(_SMALL) / _SMALL)[:, None] * v), axis=-1
    )
    np.testing.assert_allclose(rot.exp(v), expected, rtol=2e-16, atol=0.0)


def test_log_matches_exact_formula_across_taylor_switch() -> None:
    axis = np.array([0.48, -0.6, 0.64])
    q = np.concatenate((np.cos(_SMALL)[:, None], np.sin(_SMALL)[:, None] * axis), axis=-1)
    np.testing.assert_allclose(rot.log(q), _SMALL[:, None] * axis, rtol=1e-15, atol=0.0)


def test_exp_log_continuous_at_switch() -> None:
    """Just below and just above SMALL_ANGLE the two formulas agree to rounding."""
    axis = np.array([0.0, 0.6, 0.8])
    below, above = rot.SMALL_ANGLE * (1.0 - 1e-12), rot.SMALL_ANGLE * (1.0 + 1e-12)
    e_below, e_above = rot.exp(below * axis), rot.exp(above * axis)
    np.testing.assert_allclose(e_above - e_below, (above - below) * np.r_[0.0, axis], atol=1e-21)
    l_below, l_above = rot.log(e_below), rot.log(e_above)
    np.testing.assert_allclose(l_above - l_below, (above - below) * axis, atol=1e-21)


def test_exp_log_of_zero() -> None:
    np.testing.assert_array_equal(rot.exp(np.zeros(3)), [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(rot.log(rot.identity()), [0.0, 0.0, 0.0])


# ---------------------------------------------------------------------- Euler
def _scipy_euler_angles(angles_xyz: np.ndarray, order: str) -> np.ndarray:
    """Reorder (x, y, z) angles into the sequence SciPy expects for ``order``."""
    return angles_xyz[..., ["XYZ".index(c) for c in order]]


@pytest.mark.parametrize("order", rot.EULER_ORDERS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_from_euler_matches_scipy_extrinsic(order: str, data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    angles = data.draw(hnp.arrays(np.float64, (*shape, 3), elements=st.floats(-7.0, 7.0)))
    # Blender "XYZ" (X first, about fixed axes) is SciPy's lowercase (extrinsic) "xyz".
    expected = Rotation.from_euler(order.lower(), _scipy_euler_angles(angles, order).reshape(-1, 3))
    np.testing.assert_allclose(
        rot.to_matrix(rot.from_euler(angles, order)),
        expected.as_matrix().reshape((*shape, 3, 3)),
        atol=1e-12,
    )


def test_from_euler_xyz_is_rz_ry_rx() -> None:
    x, y, z = 0.3, -1.1, 2.5
    expected = (
        _rodrigues(np.eye(3)[2], z) @ _rodrigues(np.eye(3)[1], y) @ _rodrigues(np.eye(3)[0], x)
    )
    np.testing.assert_allclose(
        rot.to_matrix(rot.from_euler([x, y, z], "XYZ")), expected, atol=1e-15
    )


@pytest.mark.filterwarnings("ignore:Gimbal lock detected:UserWarning")
@pytest.mark.parametrize("order", rot.EULER_ORDERS)
@settings(max_examples=25, deadline=None)
@given(q=quats())
def test_to_euler_matches_scipy_away_from_gimbal_lock(order: str, q: np.ndarray) -> None:
    angles = rot.to_euler(q, order)
    middle = "XYZ".index(order[1])
    assert np.all(np.abs(angles[..., middle]) <= math.pi / 2 + 1e-12)
    assert np.all(np.abs(angles) <= math.pi + 1e-12)
    _same_rotation(rot.from_euler(angles, order), q, atol=1e-7)
    seq = _scipy(q).as_euler(order.lower()).reshape(angles.shape)
    expected = np.empty_like(seq)
    for k, c in enumerate(order):
        expected[..., "XYZ".index(c)] = seq[..., k]
    clear = np.abs(np.cos(angles[..., middle])) > 1e-3
    np.testing.assert_allclose(_wrap(angles - expected)[clear], 0.0, atol=1e-9)


@pytest.mark.parametrize("order", rot.EULER_ORDERS)
@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("delta", [0.0, 1e-15, 1e-12, 1e-9, 1e-7, 1e-5, 1e-3])
def test_euler_roundtrip_at_gimbal_lock(order: str, sign: float, delta: float) -> None:
    """to_euler then from_euler gives the same rotation even where the angles are not unique."""
    rng = np.random.default_rng(7)
    angles = rng.uniform(-math.pi, math.pi, size=(64, 3))
    angles[:, "XYZ".index(order[1])] = sign * (math.pi / 2 - delta)
    q = rot.from_euler(angles, order)
    back = rot.to_euler(q, order)
    assert np.all(np.isfinite(back))
    _same_rotation(rot.from_euler(back, order), q, atol=1e-8)
    if delta == 0.0:  # documented choice at exact gimbal lock: the third angle is zero
        np.testing.assert_array_equal(back[:, "XYZ".index(order[2])], 0.0)


@pytest.mark.parametrize("order", rot.EULER_ORDERS)
def test_euler_roundtrip_exact_half_turns(order: str) -> None:
    """Half turns about each axis and the identity: matrices with exact zeros and ±1."""
    q = np.array(
        [
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
            [math.sqrt(0.5), 0.0, math.sqrt(0.5), 0.0],
            [0.5, 0.5, 0.5, 0.5],
            [0.5, -0.5, 0.5, -0.5],
        ]
    )
    _same_rotation(rot.from_euler(rot.to_euler(q, order), order), q, atol=1e-12)


def test_euler_bad_order_names_valid_orders() -> None:
    with pytest.raises(ReachIKError, match="XYZ, XZY, YXZ, YZX, ZXY, ZYX"):
        rot.from_euler([0.0, 0.0, 0.0], "QUATERNION")
    with pytest.raises(ReachIKError, match="valid orders"):
        rot.to_euler(rot.identity(), "XYX")


def test_euler_order_is_case_insensitive() -> None:
    angles = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(rot.from_euler(angles, "zyx"), rot.from_euler(angles, "ZYX"))


# ---------------------------------------------------------------------- between
@FAST
@given(data=st.data())
def test_between_maps_a_to_b_by_the_shortest_arc(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    a, b = data.draw(vectors(shape)), data.draw(vectors(shape))
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    q = rot.between(a, b)
    assert np.all(np.isfinite(q))
    ok = (na > 1e-6) & (nb > 1e-6)
    ua, ub = a[ok] / na[ok][:, None], b[ok] / nb[ok][:, None]
    np.testing.assert_allclose(rot.rotate(q[ok], ua), ub, atol=1e-9)
    cos_ab = np.clip(np.sum(ua * ub, axis=-1), -1.0, 1.0)
    np.testing.assert_allclose(rot.angle(q[ok]), np.arccos(cos_ab), atol=1e-7)
    # Shortest arc: the axis is perpendicular to both (unless antiparallel, checked below).
    not_anti = cos_ab > -1.0 + 1e-6
    np.testing.assert_allclose(np.sum(q[ok][not_anti, 1:] * ua[not_anti], axis=-1), 0.0, atol=1e-9)


def test_between_parallel_is_identity() -> None:
    v = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.0]])
    _same_rotation(rot.between(v, 5.0 * v), rot.identity((2,)), atol=1e-15)


@pytest.mark.parametrize(
    "a", [(0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (1.0, 2.0, -3.0), (1e-8, 1.0, 0.0)]
)
def test_between_antiparallel_is_half_turn_about_perpendicular(
    a: tuple[float, float, float],
) -> None:
    va = np.asarray(a)
    q = rot.between(va, -2.0 * va)
    assert np.all(np.isfinite(q))
    np.testing.assert_allclose(rot.angle(q), math.pi, atol=1e-12)
    np.testing.assert_allclose(np.dot(q[1:], va), 0.0, atol=1e-12)
    np.testing.assert_allclose(rot.rotate(q, va), -va, atol=1e-12)


def test_between_antiparallel_uses_fallback_axis_per_element() -> None:
    a = np.array([[0.0, 0.0, 1.0]] * 3)
    b = np.array([[0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, 0.0, -3.0]])
    fallback = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    q = rot.between(a, b, fallback_axis=fallback)
    np.testing.assert_allclose(q[0], [0.0, 1.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(q[2], [0.0, 0.0, 1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(rot.rotate(q[1], a[1]), b[1], atol=1e-15)


@pytest.mark.parametrize("eps", [1e-4, 1e-6, 1e-7, 1e-9, 1e-11, 1e-13, 1e-16])
def test_between_nearly_antiparallel_is_accurate(eps: float) -> None:
    """A direction ``eps`` rad off antiparallel is hit to rounding, not to ``eps``."""
    rng = np.random.default_rng(int(-math.log10(eps)))
    a = rng.normal(size=(500, 3))
    side = rot.perpendicular(a, rng.normal(size=(500, 3)))
    ua = a / np.linalg.norm(a, axis=-1, keepdims=True)
    ub = -math.cos(eps) * ua + math.sin(eps) * side
    q = rot.between(a, ub * rng.uniform(0.1, 10.0, size=(500, 1)))
    np.testing.assert_allclose(rot.rotate(q, ua), ub, atol=2e-12 if eps < 1e-12 else 1e-14)


def test_between_zero_vectors_give_identity() -> None:
    zero, v = np.zeros(3), np.array([1.0, 2.0, 3.0])
    for a, b in ((zero, v), (v, zero), (zero, zero)):
        np.testing.assert_array_equal(rot.between(a, b), [1.0, 0.0, 0.0, 0.0])


@FAST
@given(v=vectors((5,)), hint=vectors((5,)))
def test_perpendicular_is_unit_and_orthogonal(v: np.ndarray, hint: np.ndarray) -> None:
    for p in (rot.perpendicular(v), rot.perpendicular(v, hint)):
        assert np.all(np.isfinite(p))
        np.testing.assert_allclose(np.linalg.norm(p, axis=-1), 1.0, atol=1e-12)
        np.testing.assert_allclose(np.sum(p * v, axis=-1), 0.0, atol=1e-9)


def test_perpendicular_keeps_usable_hint_direction() -> None:
    p = rot.perpendicular([0.0, 0.0, 1.0], [2.0, 0.0, 5.0])
    np.testing.assert_allclose(p, [1.0, 0.0, 0.0], atol=1e-15)


# ---------------------------------------------------------------------- swing / twist
@FAST
@given(data=st.data())
def test_swing_twist_split(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    q = data.draw(quats(shape))
    raw_axis = data.draw(vectors((), scale=1.0))
    assume_axis = np.linalg.norm(raw_axis)
    axis = raw_axis / assume_axis if assume_axis > 1e-3 else np.array([0.0, 1.0, 0.0])
    swing, twist = rot.swing_twist(q, axis)
    _same_rotation(rot.multiply(swing, twist), q, atol=1e-12)
    # Twist's vector part is parallel to the axis, swing's is perpendicular to it.
    np.testing.assert_allclose(np.cross(twist[..., 1:], axis), 0.0, atol=1e-12)
    np.testing.assert_allclose(swing[..., 1:] @ axis, 0.0, atol=1e-12)
    # The swing moves the axis exactly as q does (the twist leaves it alone).
    np.testing.assert_allclose(rot.rotate(swing, axis), rot.rotate(q, axis), atol=1e-12)


def test_swing_twist_half_turn_swing_has_identity_twist() -> None:
    y = np.array([0.0, 1.0, 0.0])
    q = np.array([0.0, 1.0, 0.0, 0.0])  # a half turn about X: swing only
    swing, twist = rot.swing_twist(q, y)
    np.testing.assert_array_equal(twist, [1.0, 0.0, 0.0, 0.0])
    _same_rotation(swing, q, atol=0.0)


def test_swing_twist_pure_twist() -> None:
    y = np.array([0.0, 1.0, 0.0])
    q = rot.from_axis_angle(y, 2.0)
    swing, twist = rot.swing_twist(q, y)
    _same_rotation(swing, rot.identity(), atol=1e-15)
    _same_rotation(twist, q, atol=1e-15)


# ---------------------------------------------------------------------- slerp
@FAST
@given(data=st.data())
def test_slerp_matches_scipy(data: st.DataObject) -> None:
    p, q = data.draw(quats(())), data.draw(quats(()))
    # Rotations a half turn apart have two shortest paths; either is right.
    assume(abs(float(np.dot(p, q))) > 1e-6)
    t = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    keys = Rotation.from_quat(np.stack((p, q))[:, [1, 2, 3, 0]])
    expected = _wxyz(Slerp([0.0, 1.0], keys)(t), (5,))
    _same_rotation(rot.slerp(p, q, t), expected, atol=1e-9)


@FAST
@given(data=st.data())
def test_slerp_endpoints_and_midpoint(data: st.DataObject) -> None:
    p, q = data.draw(quats((4,))), data.draw(quats((4,)))
    _same_rotation(rot.slerp(p, q, np.zeros(4)), p, atol=1e-12)
    _same_rotation(rot.slerp(p, q, np.ones(4)), q, atol=1e-12)
    mid = rot.slerp(p, q, np.full(4, 0.5))
    d_pm = rot.angle(rot.multiply(rot.conjugate(p), mid))
    d_mq = rot.angle(rot.multiply(rot.conjugate(mid), q))
    d_pq = rot.angle(rot.multiply(rot.conjugate(p), q))
    np.testing.assert_allclose(d_pm, 0.5 * d_pq, atol=1e-9)
    np.testing.assert_allclose(d_mq, 0.5 * d_pq, atol=1e-9)


def test_slerp_of_equal_and_opposite_quaternions() -> None:
    q = rot.from_axis_angle([1.0, 2.0, 3.0], 0.7)
    for other in (q, -q):
        out = rot.slerp(q, other, np.array([0.0, 0.3, 1.0]))
        _same_rotation(out, np.broadcast_to(q, (3, 4)), atol=1e-15)


# ---------------------------------------------------------------------- algebra
@FAST
@given(data=st.data())
def test_algebraic_identities(data: st.DataObject) -> None:
    shape = data.draw(BATCH_SHAPES)
    p, q, r = data.draw(quats(shape)), data.draw(quats(shape)), data.draw(quats(shape))
    np.testing.assert_allclose(rot.multiply(q, rot.conjugate(q)), rot.identity(shape), atol=1e-15)
    np.testing.assert_allclose(rot.multiply(rot.conjugate(q), q), rot.identity(shape), atol=1e-15)
    np.testing.assert_allclose(
        rot.multiply(rot.multiply(p, q), r), rot.multiply(p, rot.multiply(q, r)), atol=1e-15
    )
    np.testing.assert_allclose(
        rot.to_matrix(rot.multiply(p, q)), rot.to_matrix(p) @ rot.to_matrix(q), atol=1e-14
    )
    np.testing.assert_allclose(np.linalg.norm(rot.multiply(p, q), axis=-1), 1.0, atol=1e-15)
    m = rot.to_matrix(q)
    np.testing.assert_allclose(
        m @ np.swapaxes(m, -1, -2), np.broadcast_to(np.eye(3), m.shape), atol=1e-15
    )
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=1e-14)
    v = data.draw(vectors(shape))
    np.testing.assert_allclose(
        rot.rotate(rot.multiply(p, q), v), rot.rotate(p, rot.rotate(q, v)), atol=1e-12
    )
    np.testing.assert_allclose(rot.rotate(q, v), (m @ v[..., None])[..., 0], atol=1e-12)


def test_identity_and_normalize() -> None:
    np.testing.assert_array_equal(rot.identity((2,)), [[1, 0, 0, 0], [1, 0, 0, 0]])
    assert rot.identity().shape == (4,)
    np.testing.assert_allclose(rot.normalize([0.0, 3.0, 0.0, 4.0]), [0.0, 0.6, 0.0, 0.8])
    np.testing.assert_allclose(rot.positive_w([-0.6, 0.0, 0.8, 0.0]), [0.6, 0.0, -0.8, 0.0])


def test_zero_quaternions_never_give_nan() -> None:
    zero = np.zeros((3, 4))
    y = np.array([0.0, 1.0, 0.0])
    outputs = [
        rot.multiply(zero, zero),
        rot.conjugate(zero),
        rot.normalize(zero),
        rot.positive_w(zero),
        rot.rotate(zero, np.ones(3)),
        rot.angle(zero),
        *rot.to_axis_angle(zero),
        rot.log(zero),
        rot.to_rotvec(zero),
        rot.to_matrix(zero),
        rot.from_matrix(np.zeros((3, 3, 3))),
        rot.to_euler(zero, "XYZ"),
        rot.to_euler(zero, "ZXY"),
        *rot.swing_twist(zero, y),
        rot.slerp(zero, zero, np.full(3, 0.5)),
        rot.slerp(zero, rot.identity((3,)), np.full(3, 0.5)),
    ]
    for out in outputs:
        assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(rot.normalize(zero), rot.identity((3,)))
