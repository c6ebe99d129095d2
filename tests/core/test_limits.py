# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.limits: joint models, projection onto what a joint allows, violation.

The oracle for a rotation's limit parameters is independent of core's swing–twist code:
the bone axis ``d = R·Y`` gives the bend and the swing (shortest arc from ``Y`` to ``d``,
built with SciPy), and the twist is SciPy's ``swing⁻¹·q`` as a rotation vector along Y.
X/Z limits bound the swing quaternion's x and z components, ``sin(bend/2)`` times the
swing axis (Blender's ``IK_QSphericalSegment``), within Blender's per-quadrant ellipse when
both are limited; the nearest allowed swing is checked against a brute-force search of a
dense grid of allowed swings.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from core import rotations as rot
from core import swing_curves as sc
from core.components import FLOAT_OPS
from core.errors import ChainError
from core.limits import FREE, JointLimits, cone_limits
from core.swing_region import _CURVE_SAMPLES, SwingRegion

FAST = settings(max_examples=60, deadline=None)
Y = np.array([0.0, 1.0, 0.0])
PI = math.pi
ANGLE = st.floats(-PI, PI)


def _scipy(q: np.ndarray) -> Rotation:
    return Rotation.from_quat(np.asarray(q).reshape(-1, 4)[:, [1, 2, 3, 0]])


def _wxyz(r: Rotation) -> np.ndarray:
    return r.as_quat().reshape(-1, 4)[:, [3, 0, 1, 2]]


def _distance(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Angle (radians) between rotations ``p`` and ``q``, by SciPy."""
    return (_scipy(p).inv() * _scipy(q)).magnitude()


def _params(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Swing rotation-vector X, twist ψ, swing rotation-vector Z and bend of ``q (N, 4)``."""
    r = _scipy(q)
    d = r.apply(Y)
    swing_axis = np.stack((d[:, 2], np.zeros(len(d)), -d[:, 0]), axis=-1)  # Y × d
    norm = np.linalg.norm(swing_axis, axis=-1, keepdims=True)
    # (atan2, not arccos of d_y: accurate for the smallest bends, where ranges of 1e-6 rad
    # are tested)
    bend = np.arctan2(norm[:, 0], d[:, 1])
    unit = np.divide(swing_axis, norm, out=np.zeros_like(swing_axis), where=norm > 1e-12)
    swing = Rotation.from_rotvec(unit * bend[:, None])
    twist = (swing.inv() * r).as_rotvec()
    return unit[:, 0] * bend, twist[:, 1], unit[:, 2] * bend, bend


def _swing_xz(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The swing quaternion's x and z components, ``sin(bend/2)·axis``, of ``q (N, 4)``."""
    sx, _, sz, bend = _params(q)
    scale = np.divide(np.sin(0.5 * bend), bend, out=np.full_like(bend, 0.5), where=bend > 1e-12)
    return sx * scale, sz * scale


def _swing_allowed(lim: JointLimits, x: np.ndarray, z: np.ndarray, tol: float) -> np.ndarray:
    """Blender's definition, written out: component ranges, per-quadrant ellipse, cone."""
    ok = np.ones(np.shape(x), dtype=bool)
    for k, value in ((0, x), (2, z)):
        r = lim.ranges[k]
        if lim.lock[k]:
            ok &= np.abs(value) <= tol
        elif r is not None:
            ok &= (value >= math.sin(r[0] / 2) - tol) & (value <= math.sin(r[1] / 2) + tol)
    rx, rz = lim.ranges[0], lim.ranges[2]
    if rx is not None and rz is not None and not (lim.lock[0] or lim.lock[2]):
        a = np.where(x >= 0.0, math.sin(rx[1] / 2), -math.sin(rx[0] / 2))
        b = np.where(z >= 0.0, math.sin(rz[1] / 2), -math.sin(rz[0] / 2))
        real = (a > 1e-9) & (b > 1e-9)  # (Blender: a fuzzy zero, the ranges only)
        safe_a, safe_b = np.where(real, a, 1.0), np.where(real, b, 1.0)
        ok &= ~real | ((x / safe_a) ** 2 + (z / safe_b) ** 2 <= 1.0 + tol)
    if lim.cone is not None:
        ok &= x * x + z * z <= math.sin(lim.cone / 2) ** 2 + tol
    return ok


def _allowed_axes(lim: JointLimits, size: int = 401) -> np.ndarray:
    """Bone axes ``(M, 3)`` of the allowed swings on a dense grid of components."""
    g = np.linspace(-1.0, 1.0, size)
    x, z = (a.ravel() for a in np.meshgrid(g, g))
    keep = (x * x + z * z < 1.0) & _swing_allowed(lim, x, z, 0.0)
    x, z = x[keep], z[keep]
    swing = np.stack((np.sqrt(1.0 - x * x - z * z), x, 0 * x, z), axis=-1)
    return _scipy(swing).apply(Y)


def _random_quats(seed: int, n: int = 64) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


Range = tuple[float, float] | None


def _only_free(k: int) -> tuple[bool, bool, bool]:
    """Locks leaving axis ``k`` free (a hinge about it)."""
    return (k != 0, k != 1, k != 2)


def _only_range(k: int, r: Range) -> tuple[Range, Range, Range]:
    """Ranges with ``r`` on axis ``k`` and the other axes free."""
    return (r if k == 0 else None, r if k == 1 else None, r if k == 2 else None)


@st.composite
def ranges_with_zero(draw: st.DrawFn) -> Range:
    """A Blender-like range ``[min <= 0 <= max]`` or ``None``."""
    if draw(st.booleans()):
        return None
    return (draw(st.floats(-PI, 0.0)), draw(st.floats(0.0, PI)))


@st.composite
def any_range(draw: st.DrawFn, bound: float, optional: bool = True) -> Range:
    """Any range inside ``[-bound, bound]``, possibly excluding zero, or ``None``."""
    if optional and draw(st.booleans()):
        return None
    lo, hi = sorted((draw(st.floats(-bound, bound)), draw(st.floats(-bound, bound))))
    return (lo, hi)


@st.composite
def ball_limits(draw: st.DrawFn) -> JointLimits:
    """Ball joints with any mix of locks, ranges (possibly excluding zero) and cone.

    Limits that allow no swing at all (ranges excluding zero outside each other's ellipse
    or the cone) raise ChainError at construction (tested below) and are not drawn.
    """
    lock = draw(
        st.sampled_from(
            [
                (False, False, False),
                (True, False, False),
                (False, True, False),
                (False, False, True),
            ]
        )
    )
    if draw(st.booleans()):
        ranges = (draw(ranges_with_zero()), draw(any_range(PI)), draw(ranges_with_zero()))
    else:
        ranges = (draw(any_range(PI)), draw(any_range(PI)), draw(any_range(PI)))
    cone = draw(st.none() | st.floats(0.0, PI))
    try:
        return JointLimits(lock=lock, ranges=ranges, cone=cone)
    except ChainError:
        assume(False)
        raise


@st.composite
def hinge_limits(draw: st.DrawFn) -> JointLimits:
    axis = draw(st.tuples(ANGLE, ANGLE, ANGLE).filter(lambda v: np.linalg.norm(v) > 0.1))
    return JointLimits(hinge_axis=axis, hinge_range=draw(any_range(PI)))


@st.composite
def locked_hinge_limits(draw: st.DrawFn) -> JointLimits:
    k = draw(st.sampled_from([0, 1, 2]))
    ranges = _only_range(k, draw(any_range(PI / 2 if k != 1 else PI)))
    cone = draw(st.none() | st.floats(0.0, PI)) if k != 1 else None
    return JointLimits(lock=_only_free(k), ranges=ranges, cone=cone)


ALL_LIMITS = ball_limits() | hinge_limits() | locked_hinge_limits()


def _inside(value: np.ndarray, r: Range, tol: float = 1e-9) -> np.ndarray:
    if r is None:
        return np.ones(np.shape(value), dtype=bool)
    return (value >= r[0] - tol) & (value <= r[1] + tol)


def _within(value: np.ndarray, r: Range, tol: float = 1e-9) -> bool:
    return bool(np.all(_inside(value, r, tol)))


def _assert_allowed(lim: JointLimits, p: np.ndarray, tol: float = 1e-9) -> None:
    """Check ``p (N, 4)`` against ``lim`` with the independent oracle."""
    np.testing.assert_allclose(np.linalg.norm(p, axis=-1), 1.0, atol=1e-12)
    assert np.all(p[:, 0] >= 0.0)
    if lim.kind == "fixed":
        np.testing.assert_allclose(p, rot.identity(p.shape[:-1]), atol=1e-12)
        return
    if lim.kind == "hinge":
        axis, limits = lim.hinge
        # Only rotation about the axis: the vector part is parallel to it.
        np.testing.assert_allclose(np.cross(p[:, 1:], axis), 0.0, atol=tol)
        phi = _scipy(p).as_rotvec() @ axis
        assert _within(phi, limits, tol)
        if lim.hinge_axis is None and lim.cone is not None:
            assert np.all(_params(p)[3] <= lim.cone + tol)
        return
    _, psi, _, bend = _params(p)
    if lim.lock[1]:
        np.testing.assert_allclose(psi, 0.0, atol=tol)
    else:  # the twist is an angle: a twist of π and one of −π are the same rotation
        r = lim.ranges[1]
        ok = _inside(psi, r, tol) | _inside(psi + 2 * PI, r, tol)
        assert np.all(ok | _inside(psi - 2 * PI, r, tol)), (psi, r)
    x, z = _swing_xz(p)
    assert np.all(_swing_allowed(lim, x, z, tol)), (x, z)
    if lim.cone is not None:
        assert np.all(bend <= lim.cone + tol)


# ---------------------------------------------------------------------- projection properties
@FAST
@given(lim=ALL_LIMITS, seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=(None, (0.0, PI), (0.0, 2.0))), seed=1)  # twist at +π
@example(lim=JointLimits(ranges=((1.0, 1.0), None, None)), seed=0)  # no half turn (w = 0)
def test_projection_satisfies_limits(lim: JointLimits, seed: int) -> None:
    _assert_allowed(lim, lim.project(_random_quats(seed)), tol=1e-7)


@FAST
@given(lim=ALL_LIMITS, seed=st.integers(0, 2**16))
def test_projection_is_idempotent(lim: JointLimits, seed: int) -> None:
    once = lim.project(_random_quats(seed))
    twice = lim.project(once)
    np.testing.assert_allclose(_distance(once, twice), 0.0, atol=1e-7)
    np.testing.assert_allclose(lim.violation(once), 0.0, atol=1e-7)


@FAST
@given(lim=ALL_LIMITS, seed=st.integers(0, 2**16))
def test_violation_is_the_angle_to_the_projection(lim: JointLimits, seed: int) -> None:
    q = _random_quats(seed)
    v = lim.violation(q)
    np.testing.assert_allclose(v, _distance(q, lim.project(q)), atol=1e-7)
    assert np.all(v >= 0.0)
    # Positive exactly where the oracle finds a limit broken.
    moved = v > 1e-6
    if np.any(~moved):
        _assert_allowed(lim, lim.project(q[~moved]), tol=1e-5)
        np.testing.assert_allclose(_distance(q[~moved], lim.project(q[~moved])), 0.0, atol=1e-5)


def _sample_inside(r: Range, rng: np.random.Generator, n: int) -> np.ndarray:
    lo, hi = r if r is not None else (-PI, PI)
    # (not rng.uniform(lo, hi): it refuses the range (0.0, -0.0), whose ends sort as equal)
    return lo + (hi - lo) * rng.random(size=n)


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((0.0, 0.0), (0.0, 0.0), (0.0, -0.0))), seed=0)
@example(lim=JointLimits(ranges=((0.0, 0.0), (1.0, 1.0), None)), seed=0)  # twist at its end
def test_allowed_ball_rotations_are_unchanged(lim: JointLimits, seed: int) -> None:
    """Rotations built (with SciPy) from swings the oracle allows and allowed twists project
    to themselves: :meth:`JointLimits.project` and :meth:`~JointLimits.retract` return them
    as they are, bit for bit (``w ≥ 0``), and so do their float twins on X/Z limits."""
    rng = np.random.default_rng(seed)
    n = 256
    x, z = rng.uniform(-1.0, 1.0, size=(2, n))
    for k, v in ((0, x), (2, z)):  # also draw on the ranges' ends, where clamps act
        r = lim.ranges[k]
        if lim.lock[k]:
            v[:] = 0.0
        elif r is not None:
            v[: n // 4] = math.sin(r[rng.integers(2)] / 2)
    keep = (x * x + z * z < 1.0) & _swing_allowed(lim, x, z, 0.0)
    x, z = x[keep], z[keep]
    psi = np.zeros(len(x)) if lim.lock[1] else _sample_inside(lim.ranges[1], rng, len(x))
    swing = np.stack((np.sqrt(1.0 - x * x - z * z), x, 0 * x, z), axis=-1)
    q = _wxyz(_scipy(swing) * Rotation.from_rotvec(psi[:, None] * Y))
    if len(q):
        np.testing.assert_allclose(_distance(lim.project(q), q), 0.0, atol=1e-9)
        np.testing.assert_allclose(lim.violation(q), 0.0, atol=1e-9)
        q = rot.positive_w(q)
        np.testing.assert_array_equal(lim.project(q), q)
        np.testing.assert_array_equal(lim.retract(q), q)
        if lim._limits_swing:
            for one in (lim.project_floats, lim.retract_floats):
                np.testing.assert_array_equal([one(tuple(r)) for r in q.tolist()], q)


@settings(max_examples=30, deadline=None)
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)  # asymmetric ellipse
@example(lim=JointLimits(ranges=((0.1, 2.5), None, (-0.5, 0.5))), seed=0)  # excludes the rest
@example(lim=JointLimits(ranges=((0.0, 1.0), None, (0.0, 0.0))), seed=0)  # a segment
def test_ball_projection_turns_the_bone_least(lim: JointLimits, seed: int) -> None:
    """The projected bone axis is the allowed one nearest the given axis: no farther than
    the best of a dense grid of allowed swings (a brute-force nearest point)."""
    q = _random_quats(seed, 32)
    axes = _allowed_axes(lim)
    assume(len(axes) > 0)
    v = _scipy(q).apply(Y)
    best = np.arccos(np.clip((v @ axes.T).max(axis=1), -1.0, 1.0))
    got = np.arccos(np.clip(np.sum(v * _scipy(lim.project(q)).apply(Y), axis=1), -1.0, 1.0))
    assert np.all(got <= best + 1e-6), (got - best).max()


def test_ellipse_is_blenders_per_quadrant_ellipse() -> None:
    """Figures worked by hand: X in [-0.4, 1.2], Z in [-0.2, 0.8] give semi-axes
    sin(0.6), sin(0.2) (x ≥ 0, x < 0) and sin(0.4), sin(0.1) (z ≥ 0, z < 0)."""
    lim = JointLimits(ranges=((-0.4, 1.2), None, (-0.2, 0.8)))
    a, b = math.sin(0.6), math.sin(0.4)
    # on the ellipse in the first quadrant, at 30° of its parameter: allowed, unchanged
    x, z = a * math.cos(0.5), b * math.sin(0.5)
    inside = np.array([[math.sqrt(1 - x * x - z * z), x, 0.0, z]])
    np.testing.assert_allclose(lim.violation(inside), 0.0, atol=1e-12)
    # the box's corner (1.2, 0.8) is outside the ellipse: the box allowed it
    corner = np.array([math.sin(0.6), math.sin(0.4)])
    corner_q = np.array([[math.sqrt(1 - corner @ corner), corner[0], 0.0, corner[1]]])
    assert lim.violation(corner_q)[0] > 0.05
    # a quadrant with its own semi-axes: x < 0, z < 0 uses sin(0.2) and sin(0.1)
    x, z = -math.sin(0.2) * 0.6, -math.sin(0.1) * 0.6  # (0.36 + 0.36 <= 1)
    q = np.array([[math.sqrt(1 - x * x - z * z), x, 0.0, z]])
    np.testing.assert_allclose(lim.violation(q), 0.0, atol=1e-12)
    x, z = -math.sin(0.2) * 0.8, -math.sin(0.1) * 0.7  # (0.64 + 0.49 > 1)
    q = np.array([[math.sqrt(1 - x * x - z * z), x, 0.0, z]])
    assert lim.violation(q)[0] > 1e-4


def test_limits_that_allow_no_swing_are_refused() -> None:
    with pytest.raises(ChainError, match="allow no swing"):
        JointLimits(ranges=((1.2, 1.5), None, (1.2, 1.5)))  # outside each other's ellipse
    with pytest.raises(ChainError, match="allow no swing"):
        JointLimits(ranges=((1.0, 2.0), None, None), cone=0.5)


@FAST
@given(lim=hinge_limits() | locked_hinge_limits(), seed=st.integers(0, 2**16))
def test_hinge_projection_is_the_nearest_allowed_rotation(lim: JointLimits, seed: int) -> None:
    """Compared with a dense sweep of the hinge's allowed angles (circular distance)."""
    axis, limits = lim.hinge
    lo, hi = limits if limits is not None else (-PI, PI)
    q = _random_quats(seed, 16)
    p = lim.project(q)
    sweep = np.linspace(lo, hi, 4001)
    candidates = _wxyz(Rotation.from_rotvec(sweep[:, None] * axis))
    # Angle between unit quaternions a and b: 2·acos|a·b|.
    best = 2.0 * np.arccos(np.clip(np.abs(q @ candidates.T).max(axis=1), 0.0, 1.0))
    got = 2.0 * np.arccos(np.clip(np.abs(np.sum(p * q, axis=1)), 0.0, 1.0))
    assert np.all(got <= best + 1e-7)


@FAST
@given(
    lim=hinge_limits() | locked_hinge_limits(),
    seed=st.integers(0, 2**16),
    step=st.floats(0.0, 0.6),
)
def test_a_hinge_turned_by_an_angle_is_the_turned_rotation_projected(
    lim: JointLimits, seed: int, step: float
) -> None:
    """:meth:`JointLimits.hinge_turned_floats` (the refinement's hinge step, from angles)
    gives :meth:`JointLimits.project_floats` of the rotation turned about the hinge axis
    (composed by scipy), to 1e-12, and where the range clipped the turn, the turned
    rotation (``w ≥ 0``) and a kept one at an end of the range."""
    axis = lim.hinge[0]
    rng = np.random.default_rng(seed)
    allowed = lim.project(_random_quats(seed, 24))
    angles = rng.uniform(-step, step, size=len(allowed))
    turned = _wxyz(_scipy(allowed) * Rotation.from_rotvec(angles[:, None] * axis))
    for q, angle, want in zip(allowed.tolist(), angles.tolist(), turned, strict=True):
        kept, clipped = lim.hinge_turned_floats(tuple(q), angle)
        expected = np.array(lim.project_floats(tuple(want.tolist())))
        assert kept[0] >= 0.0
        assert np.abs(np.array(kept) - expected).max() <= 1e-12
        if clipped is None:
            assert lim.violation(want) <= 1e-12
        else:
            assert clipped[0] >= 0.0
            apart = min(np.abs(clipped - want).max(), np.abs(np.array(clipped) + want).max())
            assert apart <= 1e-12
            phi = 2.0 * math.atan2(float(np.dot(kept[1:], axis)), kept[0])
            assert min(abs(phi - end) for end in lim.hinge[1] or ()) <= 1e-12


def test_allowed_hinge_rotations_are_unchanged() -> None:
    lim = JointLimits(hinge_axis=(1.0, 2.0, -2.0), hinge_range=(-1.0, 2.5))
    axis = np.array([1.0, 2.0, -2.0]) / 3.0
    phi = np.linspace(-1.0, 2.5, 50)
    q = _wxyz(Rotation.from_rotvec(phi[:, None] * axis))
    np.testing.assert_allclose(_distance(lim.project(q), q), 0.0, atol=1e-12)
    np.testing.assert_allclose(lim.violation(q), 0.0, atol=1e-12)


def test_hinge_clamps_to_the_end_nearer_on_the_circle() -> None:
    """At 0.9π, range [-0.5π, 0.2π]: −0.5π is 0.6π away across ±π, 0.2π is 0.7π away."""
    z = (0.0, 0.0, 1.0)
    lim = JointLimits(hinge_axis=z, hinge_range=(-0.5 * PI, 0.2 * PI))
    p = lim.project(rot.from_axis_angle(z, 0.9 * PI))
    np.testing.assert_allclose(rot.to_rotvec(p), [0.0, 0.0, -0.5 * PI], atol=1e-12)
    p = lim.project(rot.from_axis_angle(z, 0.5 * PI))
    np.testing.assert_allclose(rot.to_rotvec(p), [0.0, 0.0, 0.2 * PI], atol=1e-12)
    p = lim.project(rot.from_axis_angle(z, -0.8 * PI))
    np.testing.assert_allclose(rot.to_rotvec(p), [0.0, 0.0, -0.5 * PI], atol=1e-12)


def test_twist_range_clamps_to_the_end_nearer_on_the_circle() -> None:
    lim = JointLimits(ranges=(None, (-0.5 * PI, 0.2 * PI), None))
    p = lim.project(rot.from_axis_angle(Y, 0.9 * PI))
    np.testing.assert_allclose(rot.to_rotvec(p), [0.0, -0.5 * PI, 0.0], atol=1e-12)


# ---------------------------------------------------------------------- specific joint models
def test_free_joint_projection_is_identity_map() -> None:
    q = _random_quats(1)
    np.testing.assert_allclose(FREE.project(q), rot.positive_w(q), atol=0.0)
    np.testing.assert_allclose(FREE.violation(q), 0.0, atol=1e-15)
    assert FREE.is_free
    assert FREE.kind == "ball"


def test_cone_projection_keeps_twist_and_swing_direction() -> None:
    cone = 0.4
    lim = JointLimits(cone=cone)
    q = _wxyz(Rotation.from_rotvec([1.2, 0.0, -0.5]) * Rotation.from_rotvec([0.0, 0.7, 0.0]))
    sx, psi, sz, bend = _params(lim.project(q))
    np.testing.assert_allclose(bend, cone, atol=1e-12)
    np.testing.assert_allclose(psi, 0.7, atol=1e-12)
    np.testing.assert_allclose(np.arctan2(sz, sx), math.atan2(-0.5, 1.2), atol=1e-12)


def test_per_axis_ranges_clamp_each_axis_inside_the_ellipse() -> None:
    """A swing about X only: the ellipse's X semi-axis is the X range; twist clamped alone."""
    lim = JointLimits(ranges=((-0.2, 0.3), (-0.1, 0.1), (-0.5, 0.5)))
    q = _wxyz(Rotation.from_rotvec([0.6, 0.0, 0.0]) * Rotation.from_rotvec([0.0, -0.9, 0.0]))
    sx, psi, sz, _ = _params(lim.project(q))
    np.testing.assert_allclose([sx[0], psi[0], sz[0]], [0.3, -0.1, 0.0], atol=1e-7)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_one_lock_zeroes_that_axis_only(k: int) -> None:
    """A locked Y keeps the swing; a locked X or Z keeps the twist and puts the bone axis on
    the great circle the other swing axis sweeps, at the point nearest to it."""
    lim = JointLimits(lock=(k == 0, k == 1, k == 2))
    assert lim.kind == "ball"
    params = np.array([0.5, -0.8, 0.3])
    q = _wxyz(
        Rotation.from_rotvec([params[0], 0, params[2]]) * Rotation.from_rotvec([0, params[1], 0])
    )
    p = lim.project(q)
    got = np.array([v[0] for v in _params(p)[:3]])
    assert got[k] == pytest.approx(0.0, abs=1e-12)
    if k == 1:
        np.testing.assert_allclose(got[[0, 2]], params[[0, 2]], atol=1e-12)
        return
    np.testing.assert_allclose(got[1], params[1], atol=1e-12)
    d, e = _scipy(q).apply(Y)[0], _scipy(p).apply(Y)[0]
    d[2 - k] = 0.0  # X locked: the axis stays in the XY plane (Z locked: the YZ plane)
    np.testing.assert_allclose(e, d / np.linalg.norm(d), atol=1e-9)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_two_locks_make_a_hinge_about_the_third_axis(k: int) -> None:
    locked = JointLimits(lock=_only_free(k), ranges=_only_range(k, (-0.3, 0.9)))
    e = np.eye(3)[k]
    explicit = JointLimits(hinge_axis=(e[0], e[1], e[2]), hinge_range=(-0.3, 0.9))
    assert locked.kind == "hinge"
    axis, limits = locked.hinge
    np.testing.assert_array_equal(axis, np.eye(3)[k])
    assert limits == (-0.3, 0.9)
    q = _random_quats(5)
    np.testing.assert_allclose(_distance(locked.project(q), explicit.project(q)), 0.0, atol=1e-12)


@pytest.mark.parametrize("k", [0, 2])
def test_cone_narrows_a_hinge_from_two_locks(k: int) -> None:
    """A hinge about X or Z bends the bone: its angle may not exceed the cone."""
    lim = JointLimits(lock=_only_free(k), cone=0.5)
    assert lim.hinge[1] == (-0.5, 0.5)
    q = rot.from_axis_angle(np.eye(3)[k], 1.0)
    p = lim.project(q)
    np.testing.assert_allclose(rot.angle(p), 0.5, atol=1e-12)
    np.testing.assert_allclose(lim.violation(q), 0.5, atol=1e-12)
    narrowed = JointLimits(lock=_only_free(k), ranges=_only_range(k, (-0.2, 0.9)), cone=0.5)
    assert narrowed.hinge[1] == (-0.2, 0.5)


def test_cone_does_not_limit_a_twist_hinge() -> None:
    lim = JointLimits(lock=(True, False, True), cone=0.1)
    q = rot.from_axis_angle(Y, 2.0)
    np.testing.assert_allclose(lim.project(q), q, atol=1e-15)


def test_three_locks_make_a_fixed_joint() -> None:
    lim = JointLimits(lock=(True, True, True))
    assert lim.kind == "fixed"
    np.testing.assert_allclose(lim.project(_random_quats(2)), rot.identity((64,)), atol=0.0)
    with pytest.raises(ChainError, match="not a hinge"):
        _ = lim.hinge


def test_explicit_hinge_axis_is_normalised_and_overrides_locks() -> None:
    lim = JointLimits(lock=(True, True, True), hinge_axis=(0.0, 0.0, 2.0), hinge_range=(0.0, 1.0))
    assert lim.kind == "hinge"
    assert lim.hinge_axis == (0.0, 0.0, 1.0)
    assert not lim.is_free


def test_weights_and_is_free() -> None:
    lim = JointLimits(lock=(False, True, False), stiffness=(0.25, 0.5, 0.0))
    np.testing.assert_allclose(lim.weights, [0.75, 0.0, 1.0])
    assert not lim.is_free
    assert JointLimits(stiffness=(0.5, 0.5, 0.5)).is_free
    assert not JointLimits(cone=PI).is_free
    assert not JointLimits(ranges=(None, (-1.0, 1.0), None)).is_free


def test_projection_of_zero_quaternion_and_batches() -> None:
    for lim in (JointLimits(cone=0.3), JointLimits(hinge_axis=(1.0, 0, 0), hinge_range=(0, 1))):
        p = lim.project(np.zeros((2, 3, 4)))
        assert p.shape == (2, 3, 4)
        assert np.all(np.isfinite(p))
        assert lim.project(rot.identity()).shape == (4,)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ranges": ((0.5, 0.1), None, None)}, r"X range .* need -π <= min <= max <= π"),
        ({"ranges": (None, (-4.0, 0.0), None)}, r"Y range .* need -π <= min <= max <= π"),
        ({"ranges": (None, None, (0.0, math.nan))}, r"Z range .* need -π <= min <= max"),
        ({"ranges": ((0.0, 1.0, 2.0), None, None)}, r"X range .* need a pair \(min, max\)"),
        ({"ranges": ((None, 1.0), None, None)}, r"X range .* need a pair \(min, max\)"),
        ({"hinge_axis": (1.0, 0, 0), "hinge_range": (1.0, -1.0)}, r"hinge range .* min <= max"),
        ({"ranges": (None, None)}, r"three entries each"),
        ({"lock": (True, False)}, r"three entries each"),
        ({"stiffness": (0.0, 0.0, 0.0, 0.0)}, r"three entries each"),
        ({"cone": -0.1}, r"cone limit .* need 0 <= cone <= π"),
        ({"cone": 4.0}, r"cone limit .* need 0 <= cone <= π"),
        ({"cone": math.nan}, r"cone limit .* need 0 <= cone <= π"),
        ({"stiffness": (0.0, 1.0, 0.0)}, r"stiffness .* each must be in \[0, 1\)"),
        ({"stiffness": (-0.1, 0.0, 0.0)}, r"stiffness .* each must be in \[0, 1\)"),
        ({"stiffness": (0.0, 0.0, math.nan)}, r"stiffness .* each must be in \[0, 1\)"),
        ({"hinge_axis": (0.0, 0.0, 0.0)}, r"hinge axis .* need a non-zero 3-vector"),
        ({"hinge_axis": (0.0, math.inf, 0.0)}, r"hinge axis .* need a non-zero 3-vector"),
        ({"hinge_axis": (1.0, 0.0)}, r"hinge axis .* need a non-zero 3-vector"),
    ],
)
def test_bad_limits_raise_chain_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ChainError, match=message):
        JointLimits(**kwargs)  # type: ignore[arg-type]


def test_cone_limits_builder() -> None:
    assert cone_limits(None, 3) == (FREE, FREE, FREE)
    built = cone_limits([None, 126.0, math.nan], 3)
    assert built[0] is FREE
    assert built[2] is FREE
    assert built[1].cone == pytest.approx(math.radians(126.0))
    with pytest.raises(ChainError, match="got 2 bend limits for 3 joints"):
        cone_limits([None, 90.0], 3)
    with pytest.raises(ChainError, match="cone limit"):
        cone_limits([200.0], 1)


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)
@example(lim=JointLimits(ranges=(None, (0.0, 0.0), (0.0, 0.5))), seed=0)
@example(lim=JointLimits(ranges=(None, (0.0, math.pi), None)), seed=0)
@example(lim=JointLimits(ranges=((0.0, 3.140625), None, (0.0, 3.140625)), cone=1.0), seed=1308)
def test_ball_projection_is_exact_under_rounding(lim: JointLimits, seed: int) -> None:
    """Rotations that differ by rounding project to the same rotation to ~1e-15 (the
    nearest swing is solved to machine precision, not searched to √ε), which keeps the
    single-target float paths pinned to their batched references at 1e-9. Compared as
    rotations: a half turn (``w`` ≈ 0) may come out as ``q`` or ``−q`` (the twist range
    ``[0, π]`` example: rounding puts ``w`` on either side of 0)."""
    q = _random_quats(seed, 128)
    nudged = q * (1.0 + 4e-16 * np.random.default_rng(seed).standard_normal(q.shape))
    a, b = lim.project(nudged), lim.project(q)
    apart = np.minimum(np.abs(a - b).max(axis=-1), np.abs(a + b).max(axis=-1))
    assert apart.max() <= 1e-12


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)
@example(lim=JointLimits(ranges=((0.1, 2.5), None, (-0.5, 0.5))), seed=0)  # excludes the rest
@example(lim=JointLimits(ranges=((-1.0, 1.4), None, (-0.3, 2.9)), cone=1.2), seed=0)
@example(lim=JointLimits(ranges=((-0.5, 0.5), None, (-0.5, 0.5))), seed=0)  # a disc
@example(lim=JointLimits(ranges=((-0.5, 0.5), (-0.4, 0.7), (-0.5, 0.5))), seed=1)
@example(lim=JointLimits(cone=0.9), seed=0)  # a disc: the cone alone
def test_one_rotation_projects_as_the_batch(lim: JointLimits, seed: int) -> None:
    """:meth:`JointLimits.project_floats` (plain floats, :meth:`SwingRegion.nearest_one`
    for X/Z limits) gives :meth:`JointLimits.project`'s rotation, as rotations to 1e-12
    (the nearest swing is solved to machine precision on both paths), and
    :meth:`JointLimits.retract_floats` :meth:`JointLimits.retract`'s."""
    q = _random_quats(seed, 48)
    for batched, one_by_one in (
        (lim.project, lim.project_floats),
        (lim.retract, lim.retract_floats),
    ):
        batch = batched(q)
        one = np.array([one_by_one(tuple(v)) for v in q.tolist()])
        if one_by_one == lim.project_floats and _reaches_half_turn(lim):
            # the nearest swing's alignment is flat along the half turn's circle
            axis = rot.rotate(q, Y)
            got = np.sum(rot.rotate(one, Y) * axis, axis=-1)
            np.testing.assert_allclose(got, np.sum(rot.rotate(batch, Y) * axis, axis=-1), atol=1e-9)
            continue
        apart = np.minimum(np.abs(one - batch).max(axis=-1), np.abs(one + batch).max(axis=-1))
        assert apart.max() <= 1e-12, one_by_one.__name__


def _reaches_half_turn(lim: JointLimits) -> bool:
    """The swing region of ``lim`` reaches within ~1e-6 rad of a half turn, where the bone
    axis barely moves along the boundary (``w ≈ 0``): the alignment with a direction is flat
    there to ~1e-6, and rounding moves the nearest swing along it (the alignment itself
    stays to 1e-9)."""
    return lim.kind == "ball" and lim.swing_region.radius > 1.0 - 1e-9


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)
@example(lim=JointLimits(ranges=((-1.0, 1.4), None, (-0.3, 2.9)), cone=1.2), seed=0)
def test_nearest_searches_only_brackets_that_can_win(lim: JointLimits, seed: int) -> None:
    """The nearest swing skips brackets that cannot hold a better allowed root (their
    bound on ``f``, or a line or quadrant known to leave the region there): the same
    swings as searching every bracket of every curve."""
    region = lim.swing_region
    # A region up to the half turn itself holds every swing (nothing is ever projected onto
    # it), and every point of its boundary circle has the same bone axis, −Y.
    assume(region.radius < 1.0)
    v = rot.rotate(_random_quats(seed, 64), np.array([0.0, 1.0, 0.0]))
    pruned = region.nearest(v)
    one = np.array([region.nearest_one(tuple(d)) for d in v.tolist()])
    c = region._candidates
    every = c._replace(
        brackets=np.diff(np.arange(len(c.s)) // (_CURVE_SAMPLES + 1)) == 0,
        rise=np.full(len(c.rise), np.inf),
    )
    object.__setattr__(region, "_candidates", every)  # a cached property: the instance's
    try:
        full = region.nearest(v)
    finally:
        object.__setattr__(region, "_candidates", c)
    np.testing.assert_allclose(np.stack(pruned), np.stack(full), rtol=0, atol=1e-15)
    if _reaches_half_turn(lim):  # alignments, not swings (see _reaches_half_turn)
        full_axes = _swing_axes(*full)
        np.testing.assert_allclose(
            np.sum(_swing_axes(*one.T) * v, axis=-1), np.sum(full_axes * v, axis=-1), atol=1e-9
        )
    else:
        np.testing.assert_allclose(one, np.stack(full).T, rtol=0, atol=1e-12)


def _swing_axes(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Bone axes ``(K, 3)`` of the swings ``(w, x, 0, z)``."""
    w = np.sqrt(np.maximum(0.0, 1.0 - x * x - z * z))
    return rot.rotate(np.stack((w, x, 0.0 * x, z), axis=-1), Y)


def _hard_directions(region: SwingRegion, seed: int) -> np.ndarray:
    """Unit directions ``(K, 3)`` where the nearest swing is hard to find: the bone axes of
    the nearest swing's candidates themselves (meeting points and curve samples), of those
    candidates moved 1e-3 to 1e-9 out of and into the region, near ±Y (near −Y the alignment
    is nearly flat along the boundary's farthest parts) and the base axes."""
    rng = np.random.default_rng(seed)
    c = region._candidates
    x, z = c.x, c.z
    moved = [_swing_axes(x * (1.0 + d), z * (1.0 + d)) for d in (1e-3, 1e-6, 1e-9, -1e-6)]
    jitter = 1e-7 * rng.standard_normal((2, len(x)))
    moved.append(_swing_axes(x + jitter[0], z + jitter[1]))
    tilt = 10.0 ** rng.uniform(-15.0, -3.0, (16, 1)) * rng.standard_normal((16, 3))
    v = np.concatenate((c.rows[: len(x)], *moved, Y + tilt, -Y + tilt, np.eye(3), -np.eye(3)))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)  # Blender's ellipse
@example(lim=JointLimits(ranges=((-1.0, 1.4), None, (-0.3, 2.9)), cone=1.2), seed=0)
@example(lim=JointLimits(ranges=((0.0, 0.0), None, (-0.5, 0.5))), seed=0)  # a segment
@example(lim=JointLimits(lock=(True, False, False), ranges=(None, None, (-0.5, 1.5))), seed=0)
def test_one_nearest_swing_is_the_batchs_on_hard_directions(lim: JointLimits, seed: int) -> None:
    """:meth:`SwingRegion.nearest_one` finds a swing as near as :meth:`SwingRegion.nearest`'s
    on :func:`_hard_directions` (alignments to 1e-12; 1e-9 up to the half turn, see
    :func:`_reaches_half_turn`). Not the same swing: there candidates tie, exactly (a
    direction in a plane of symmetry) or to rounding (within the membership test's slack of
    each other), and the two paths may take either."""
    region = lim.swing_region
    v = _hard_directions(region, seed)
    one = np.array([region.nearest_one(tuple(d)) for d in v.tolist()])
    np.testing.assert_allclose(
        np.sum(_swing_axes(*one.T) * v, axis=-1),
        np.sum(_swing_axes(*region.nearest(v)) * v, axis=-1),
        rtol=0,
        atol=1e-9 if _reaches_half_turn(lim) else 1e-12,
    )


@pytest.mark.parametrize(
    ("degrees", "cone"), [(30.0, None), (5.0, None), (100.0, None), (30.0, 1.5), (60.0, math.pi)]
)
def test_x_and_z_limited_alike_is_a_disc_answered_in_closed_form(
    degrees: float, cone: float | None
) -> None:
    """X and Z limited alike both ways (±a) make Blender's ellipse a circle inside its box:
    the region is the disc of radius ``sin(a/2)`` (within a wider cone), whose nearest
    swing keeps the direction's azimuth (:attr:`SwingRegion._disc`, as for a cone alone).
    That answer, for one direction and a batch, is the general search's (the curves'
    stationary points and meeting points, run with the disc's closed form switched off):
    as near to 1e-12 on random and :func:`_hard_directions`, and off ±Y (along −Y every
    point of the circle ties) the same swing to 1e-6: at its best point ``f`` is flat to
    second order, so the search's root is good to ~1e-8 (seen 1.1e-7), the closed form's
    exact. A region a hair off a disc searches."""
    a = math.radians(degrees)
    region = JointLimits(ranges=((-a, a), None, (-a, a)), cone=cone).swing_region
    assert region._disc == pytest.approx(math.sin(0.5 * a), abs=1e-15)
    off = JointLimits(ranges=((-a, a * (1.0 + 1e-9)), None, (-a, a))).swing_region
    assert off._disc is None
    v = np.concatenate((rot.rotate(_random_quats(3, 200), Y), _hard_directions(region, 3)))
    fast = np.stack(region.nearest(v))
    one = np.array([region.nearest_one(tuple(d)) for d in v.tolist()]).T
    object.__setattr__(region, "_disc", None)  # a cached property: the instance's
    try:
        general = np.stack(region.nearest(v))
    finally:
        del region.__dict__["_disc"]
    aligned = np.sum(_swing_axes(*general) * v, axis=-1)
    for got in (fast, one):
        np.testing.assert_allclose(np.sum(_swing_axes(*got) * v, axis=-1), aligned, atol=1e-12)
        apart = np.abs(v[:, 1]) < math.cos(1e-3)
        assert apart.sum() >= 200  # (not vacuous)
        np.testing.assert_allclose(got[:, apart], general[:, apart], rtol=0, atol=1e-6)


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)  # Blender's ellipse
@example(lim=JointLimits(ranges=((-0.5, 0.5), None, (-0.1, 0.1)), cone=0.2), seed=0)
def test_a_brackets_kept_parameters_hold_its_allowed_points(lim: JointLimits, seed: int) -> None:
    """Every allowed point of a bracket of :meth:`SwingRegion.nearest_one` (its curve's
    points moved onto the cone's disc, as the search takes them) lies in the bracket's
    ``keep`` (:meth:`SwingRegion._kept`: on a line of the box touching Blender's ellipse at
    its vertex, a few 1e-7 around it); and a root search told to keep to it stops (``None``)
    only when the root it would have found lies outside, else finds that root."""
    region = lim.swing_region
    c = region._candidates
    v = _hard_directions(region, seed)[::7]
    slope = v @ c.rows[len(c.x) :].T
    for col, (s0, s1, _, curve, keep) in enumerate(c.spans):
        if keep == (-math.inf, math.inf):
            continue
        s = np.concatenate((np.linspace(s0, s1, 401), keep[1] * np.linspace(-4.0, 4.0, 801)))
        for t in s[(s >= s0) & (s <= s1)].tolist():
            x, z = sc.along(curve, t, FLOAT_OPS)[:2]
            assert not region.contains_one(*region._in_disc_one(x, z)) or keep[0] <= t <= keep[1]
        for (d0, d1, d2), (f0, f1) in zip(
            v.tolist(), slope[:, col : col + 2].tolist(), strict=True
        ):
            if f0 > 0.0 >= f1:
                root = sc.illinois_one(curve, (d0, d1, d2), s0, s1, f0, f1)
                kept = sc.illinois_one(curve, (d0, d1, d2), s0, s1, f0, f1, keep)
                assert root is not None
                assert kept == root if kept is not None else not keep[0] <= root <= keep[1]


@FAST
@given(lim=ALL_LIMITS, seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), (-0.5, 0.7), (-0.8, 0.4))), seed=0)
@example(lim=JointLimits(lock=(False, True, False), ranges=((-1.0, 1.4), None, None)), seed=0)
@example(lim=JointLimits(lock=(True, False, True), ranges=(None, (-math.pi, 0.0), None)), seed=0)
def test_one_rotation_is_allowed_as_in_the_batch(lim: JointLimits, seed: int) -> None:
    """:meth:`JointLimits.allows_floats` answers as :meth:`JointLimits.allows`: on random
    rotations (mostly refused), their projections (on the boundary, allowed) and those
    pushed 1e-6 rad further out (refused unless the push stays inside)."""
    q = _random_quats(seed, 32)
    on = lim.project(q)
    out = rot.normalize(on + 1e-6 * (on - q))
    for rotations in (q, on, out):
        batch = lim.allows(rotations, 1e-12)
        one = [lim.allows_floats(tuple(v), 1e-12) for v in rotations.tolist()]
        assert one == batch.tolist()
    assert all(lim.allows_floats(tuple(v), 1e-9) for v in on.tolist())


@FAST
@given(lim=ALL_LIMITS, seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), (-0.5, 0.7), (-0.8, 0.4))), seed=0)
def test_one_violation_is_the_batch_violation(lim: JointLimits, seed: int) -> None:
    """:meth:`JointLimits.violation_floats` equals :meth:`JointLimits.violation` to 1e-12
    rad on random rotations (mostly refused) and on their projections (zero)."""
    q = _random_quats(seed, 32)
    for rotations in (q, lim.project(q)):
        one = [lim.violation_floats(tuple(v)) for v in rotations.tolist()]
        np.testing.assert_allclose(one, lim.violation(rotations), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------- the way out of a region
def _on_the_boundary(lim: JointLimits, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rotations ``(K, 4)`` on the boundary of ``lim``'s swing region, and the random
    rotations outside it they were moved from toward its centre (:meth:`JointLimits.retract`)."""
    q = rot.positive_w(_random_quats(seed, 64))
    x, z = _swing_xz(q)
    outside = q[~lim.swing_region.contains(x, z, 0.0)]
    return lim.retract(outside), outside


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)  # Blender's ellipse
@example(lim=JointLimits(cone=0.7), seed=0)
def test_the_swing_regions_outward_normal_points_out(lim: JointLimits, seed: int) -> None:
    """:meth:`SwingRegion.outward` at boundary swings is a unit vector, and a small move
    along it leaves the region (all but a few points, at corners, where the normal of the
    part crossed is taken at a point of the other part)."""
    kept, beyond = _on_the_boundary(lim, seed)
    assume(len(kept) > 0)
    region = lim.swing_region
    x, z = _swing_xz(kept)
    nx, nz = region.outward(x, z, _swing_xz(beyond))
    np.testing.assert_allclose(np.hypot(nx, nz), 1.0, atol=1e-12)
    inside = region.contains(x + 1e-6 * nx, z + 1e-6 * nz, 0.0)
    assert np.mean(inside) <= 0.05, np.flatnonzero(inside)


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)  # Blender's ellipse
@example(lim=JointLimits(ranges=((-1.0, 1.4), None, (-0.3, 2.9)), cone=1.2), seed=0)
@example(lim=JointLimits(ranges=((0.1, 2.5), None, (-0.5, 0.5))), seed=0)  # excludes the rest
def test_a_swings_distance_outside_the_region_is_bounded_below(lim: JointLimits, seed: int) -> None:
    """:meth:`SwingRegion.outside_by_one` is at most a swing's distance to the allowed
    swings (the oracle: Blender's definition on a dense grid, the nearest allowed grid
    point by a k-d tree, less the grid's spacing), not positive inside the region, and
    positive outside it by more than the spacing wherever the region has an ellipse with
    no zero semi-axis or none (the bound then has a term for every part)."""
    from scipy.spatial import cKDTree

    region = lim.swing_region
    size = 601
    g = np.linspace(-1.0, 1.0, size)
    x, z = (a.ravel() for a in np.meshgrid(g, g))
    keep = (x * x + z * z < 1.0) & _swing_allowed(lim, x, z, 0.0)
    assume(keep.sum() >= 4)
    tree = cKDTree(np.stack((x[keep], z[keep]), axis=-1))
    spacing = 2.0 / (size - 1)
    rng = np.random.default_rng(seed)
    points = rng.uniform(-1.0, 1.0, size=(400, 2))
    points = points[np.hypot(points[:, 0], points[:, 1]) < 1.0]
    distance, _ = tree.query(points)
    bound = np.array([region.outside_by_one(px, pz) for px, pz in points.tolist()])
    assert np.all(bound <= distance + spacing)
    inside = np.array([region.contains_one(px, pz) for px, pz in points.tolist()])
    assert np.all(bound[inside] <= 1e-12)
    if region.semi is None or min(region.semi) > 0.0:
        assert np.all(bound[~inside & (distance > 2.0 * spacing)] > 0.0)


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)  # Blender's ellipse
@example(lim=JointLimits(ranges=((0.0, 1.2), (-0.4, 0.3), (-0.8, 0.4))), seed=1)  # a zero semi
@example(lim=JointLimits(lock=(False, True, False), ranges=((-1.0, 0.5), None, None)), seed=3)
def test_beyond_the_limits_is_positive_exactly_where_they_refuse(
    lim: JointLimits, seed: int
) -> None:
    """:meth:`JointLimits.beyond` is positive where :meth:`JointLimits.allows` refuses a
    rotation and not positive where it allows it with no slack (on rotations near the
    limits' edge: projected ones turned a little, and random ones); the float twin gives the
    same values to rounding (its swing's and twist's split is the float one), and
    :meth:`SwingRegion.beyond_one` those of :meth:`SwingRegion.beyond`."""
    rng = np.random.default_rng(seed)
    q = rot.normalize(rng.normal(size=(300, 4)))
    near = rot.multiply(lim.project(q), rot.from_rotvec(rng.normal(scale=0.02, size=(300, 3))))
    q = np.concatenate((q, near, lim.project(q)))
    beyond = lim.beyond(q)
    assert np.all(beyond[~lim.allows(q, 1e-12)] > 0.0)
    assert np.all(beyond[lim.allows(q, 0.0)] <= 0.0)
    floats = [lim.beyond_floats(tuple(r)) for r in q.tolist()]
    # (a margin near zero is a difference of terms near 1: a few of their ulps, 2.2e-16)
    np.testing.assert_allclose(floats, beyond, rtol=1e-14, atol=1e-14)
    x, z = rng.uniform(-1.0, 1.0, size=(2, 300))
    region = lim.swing_region
    one = [region.beyond_one(a, b) for a, b in zip(x.tolist(), z.tolist(), strict=True)]
    assert one == region.beyond(x, z).tolist()


@FAST
@given(lim=ball_limits(), seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)
@example(lim=JointLimits(lock=(False, True, False), ranges=((-1.0, 0.5), None, None)), seed=3)
def test_swing_exit_is_the_gradient_of_the_outward_swing(lim: JointLimits, seed: int) -> None:
    """:meth:`JointLimits.swing_exit` against central finite differences of ``n·s(q·exp(r/2))``
    along random turns ``r`` (``s`` the swing's components from scipy, ``n`` the outward
    normal at ``q``), and the float twins (:meth:`JointLimits.swing_exit_floats`,
    :meth:`SwingRegion.outward_one`) against the batch."""
    from core.limits import _swing_components

    kept, beyond = _on_the_boundary(lim, seed)
    split = np.hypot(kept[:, 0], kept[:, 2]) > 1e-3  # (the twist's split defined)
    kept, beyond = kept[split], beyond[split]
    assume(len(kept) > 0)
    # (n as swing_exit takes it: near a tie of two parts, rounding picks one)
    sx, sz, _ = _swing_components(kept)
    ux, uz, _ = _swing_components(beyond)
    nx, nz = lim.swing_region.outward(sx, sz, (ux, uz))
    g = lim.swing_exit(kept, beyond)
    r = np.random.default_rng(seed).normal(size=(*kept.shape[:-1], 3))
    # (the oracle's arccos loses digits at a swing near zero, and a swing near a half turn
    # has large third derivatives: a middle step, and tolerances for both)
    eps = 3e-5

    def along(sign: float) -> np.ndarray:
        x, z = _swing_xz(rot.multiply(kept, rot.from_rotvec(sign * eps * r)))
        return nx * x + nz * z

    numeric = (along(1.0) - along(-1.0)) / (2.0 * eps)
    np.testing.assert_allclose(np.sum(g * r, axis=-1), numeric, rtol=1e-3, atol=1e-5)
    for k, (one, out) in enumerate(zip(kept.tolist(), beyond.tolist(), strict=True)):
        normal = lim.swing_region.outward_one(sx[k], sz[k], ux[k], uz[k])
        np.testing.assert_allclose(normal, (nx[k], nz[k]), rtol=0, atol=1e-12)
        floats = lim.swing_exit_floats(
            (one[0], one[1], one[2], one[3]), (out[0], out[1], out[2], out[3])
        )
        np.testing.assert_allclose(floats, g[k], rtol=0, atol=1e-12)


@FAST
@given(lim=ALL_LIMITS, seed=st.integers(0, 2**16))
@example(lim=JointLimits(ranges=((-0.3, 1.2), None, (-0.8, 0.4))), seed=0)
@example(lim=JointLimits(lock=(False, True, True), ranges=((0.0, 2.6), None, None)), seed=0)
def test_a_joint_on_its_limits_has_a_way_out(lim: JointLimits, seed: int) -> None:
    """:meth:`JointLimits.way_out` on projected rotations (many on the limits) and on
    allowed ones: where it says the joint is on its limits, a small turn along its way out
    leaves them (a turn the other way can too, where the range or region has no width);
    the float twin gives the same answer."""
    q = lim.project(_random_quats(seed, 48))
    turn, on = lim.way_out(q)
    for k, one in enumerate(q.tolist()):
        floats = lim.way_out_floats((one[0], one[1], one[2], one[3]))
        assert (floats is not None) == bool(on[k])
        if floats is not None:
            np.testing.assert_allclose(floats, turn[k], rtol=0, atol=1e-12)
    assume(np.any(on))
    unit = turn[on] / np.linalg.norm(turn[on], axis=-1, keepdims=True)
    out = rot.multiply(q[on], rot.from_rotvec(1e-4 * unit))
    assert np.all(lim.violation(out) > 1e-6)
