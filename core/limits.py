# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint models and limits, and the projection of a rotation onto what a joint allows.

Every joint has a rest frame; its pose is a local rotation ``q`` relative to that frame
(like a Blender pose bone's rotation). The bone axis is the frame's **+Y** axis, as in
Blender. Limits are defined through the swing–twist split ``q = swing · twist`` about +Y:

* **twist** is the rotation about the bone axis; its signed angle ``ψ ∈ (-π, π]`` is the
  Y angle;
* **swing** rotates about an axis in the local XZ plane; as a quaternion it is
  ``(w, x, 0, z)`` with ``w ≥ 0``, and ``2·asin(√(x² + z²))`` is the **bend** angle between
  the rest and posed bone axis. Its X and Z components ``x, z`` are what per-axis X/Z
  limits bound, as in Blender's IK (``intern/iksolver``: ``IK_QSphericalSegment`` turns a
  limit ``[min, max]`` radians into ``[sin(min/2), sin(max/2)]``).

A joint may then be:

* a free **ball** joint (3 DOF),
* **locked** per axis (``lock=(x, y, z)``; a locked axis's angle is held at zero, and two
  locked axes leave a hinge about the third, as Blender's ``lock_ik_*`` do),
* limited per axis (``ranges``: ``[min, max]`` radians for X, Y and Z): Y bounds the
  twist angle; X and Z bound the swing's components to ``[sin(min/2), sin(max/2)]``, and
  when both are limited the swing must also lie in **Blender's ellipse**
  ``x²/a² + z²/b² ≤ 1`` with per-quadrant semi-axes ``a = sin(max_x/2)`` for ``x ≥ 0``,
  ``a = −sin(min_x/2)`` for ``x < 0`` (``b`` likewise from Z); a quadrant where a
  semi-axis is not positive keeps only the ranges (Blender's ``EllipseClamp``). Ranges
  that exclude zero (which Blender's UI cannot make) keep their ends: the ellipse is then
  cut by them, and limits whose ranges and ellipse have no swing in common are refused
  (:class:`ChainError`). See :class:`core.swing_region.SwingRegion`,
* limited in bend (``cone``: the largest swing angle relative to the parent, the limit of
  the triangulation paper's constrained chain),
* a **hinge** with one DOF about any unit axis of the joint frame (``hinge_axis``, with an
  optional ``hinge_range``), as in the modular manipulator of Fedulin & Zhukov.

:meth:`JointLimits.project` gives the nearest allowed rotation: a hinge's angle clamped to
the end nearer on the circle; for a ball joint the twist clamped likewise and, for a swing
outside the region, the allowed swing whose bone axis is nearest in angle (exact:
:meth:`core.swing_region.SwingRegion.nearest`; Blender instead
scales the swing's components toward zero until they meet the ellipse, which moves the bone
further than needed when the ellipse is elongated).

Stiffness ``(x, y, z)`` in ``[0, 1)`` does not limit anything: solvers use ``1 − stiffness``
as a per-axis weight on how readily a joint turns (Blender's ``ik_stiffness_*``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import rotations as rot
from .components import Num, Vec, qangle, qmul_conj, qrotate
from .errors import ChainError
from .rotations import FloatArray
from .swing_region import SwingRegion

JointKind = Literal["ball", "hinge", "fixed"]
#: How close to its limits a joint counts as on them (:meth:`JointLimits.way_out`): radians
#: for a hinge, quaternion components for a ball joint's swing. Rotations projected onto
#: the limits sit there to rounding.
ON_LIMIT = 1e-9
#: A ball joint's twist this far (radians) beyond its range is within it, as its swing is
#: within its region to :data:`~core.swing_region.INSIDE_EPS`: a rotation built at an end
#: of the range, whose measured twist rounding puts just past it, projects to itself.
TWIST_EPS = 1e-12

_AXES = np.eye(3)
_Y = _AXES[1]
_TAU = 2.0 * math.pi


def _clamp_angle(phi: FloatArray, lo: float, hi: float) -> FloatArray:
    """Angles ``phi`` in ``(-π, π]`` clamped to ``[lo, hi]``, to the end nearer on the circle.

    A hinge at ``0.9π`` with range ``[-0.5π, 0.2π]`` goes to ``-0.5π`` (``0.6π`` away across
    ``±π``), not to ``0.2π`` (``0.7π`` away).
    """
    clipped = np.clip(phi, lo, hi)
    other = np.where(phi > hi, lo, hi)
    outside = (phi < lo) | (phi > hi)
    return np.where(outside & (_apart(phi, other) < _apart(phi, clipped)), other, clipped)


def _apart(a: FloatArray, b: FloatArray) -> FloatArray:
    """How far apart angles ``a`` and ``b`` are on the circle (radians, in ``[0, π]``)."""
    return np.abs(np.remainder(a - b + math.pi, 2.0 * math.pi) - math.pi)


def _wrap_one(phi: float) -> float:
    """One angle in ``(-2π, 2π]`` wrapped to ``(-π, π]`` (as :func:`_signed_angle_about`)."""
    if phi > math.pi:
        return phi - 2.0 * math.pi
    return phi + 2.0 * math.pi if phi <= -math.pi else phi


def _clamp_one(phi: float, lo: float, hi: float) -> float:
    """:func:`_clamp_angle` for one angle."""
    if lo <= phi <= hi:
        return phi
    clipped, other = (hi, lo) if phi > hi else (lo, hi)
    return other if _apart_one(phi, other) < _apart_one(phi, clipped) else clipped


def _apart_one(a: float, b: float) -> float:
    """:func:`_apart` for two angles."""
    return abs((a - b + math.pi) % (2.0 * math.pi) - math.pi)


def _swing_components(q: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The swing's components ``x, z`` of rotations ``q (K, 4)`` (``w ≥ 0``) about +Y, as
    :meth:`JointLimits.project` splits them (:func:`core.rotations.swing_twist`: twist
    ``(w, 0, y, 0)/t``, swing ``q · twist*``), and ``t = √(w² + y²)``."""
    swing, _ = rot.swing_twist(q, _Y)
    return swing[..., 1], swing[..., 3], np.sqrt(q[..., 0] ** 2 + q[..., 2] ** 2)


def _swing_components_floats(q: tuple[float, float, float, float]) -> tuple[float, float, float]:
    """:func:`_swing_components` of one rotation in plain floats, as
    :meth:`JointLimits.project_floats` splits it."""
    w, x, y, z = q
    tn = math.sqrt(w * w + y * y)
    tw, ty = (w / tn, y / tn) if tn > 0.0 else (1.0, 0.0)
    return x * tw + z * ty, z * tw - x * ty, tn


def _exit_turn(w: Num, x: Num, y: Num, z: Num, sx: Num, sz: Num, tn: Num, nx: Num, nz: Num) -> Vec:
    """``∇_r n·s(q · exp(r/2))`` at ``r = 0`` for ``q = (w, x, y, z)`` (floats or ``(K,)``
    arrays), its swing's components ``s = (sx, sz)``, ``tn = √(w² + y²) > 0`` and the
    normal ``n``: ``s = (x w + z y, z w − x y) / tn`` differentiated along ``q · (0, r/2)``
    for ``r`` = X, Y, Z."""
    t2 = tn * tn
    out = []
    for dw, dx, dy, dz in (
        (-0.5 * x, 0.5 * w, 0.5 * z, -0.5 * y),
        (-0.5 * y, -0.5 * z, 0.5 * w, 0.5 * x),
        (-0.5 * z, 0.5 * y, -0.5 * x, 0.5 * w),
    ):
        dt = (w * dw + y * dy) / t2
        ds_x = (dx * w + x * dw + dz * y + z * dy) / tn - sx * dt
        ds_z = (dz * w + z * dw - dx * y - x * dy) / tn - sz * dt
        out.append(nx * ds_x + nz * ds_z)
    return out[0], out[1], out[2]


def _signed_angle_about(q: FloatArray, axis: FloatArray) -> FloatArray:
    """Signed angle in ``(-π, π]`` of rotations ``q`` that turn about unit ``axis``."""
    phi = 2.0 * np.arctan2(q[..., 1:] @ axis, q[..., 0])
    return np.where(
        phi > math.pi, phi - 2.0 * math.pi, np.where(phi <= -math.pi, phi + 2.0 * math.pi, phi)
    )


@dataclass(frozen=True)
class JointLimits:
    """What one joint allows; angles in radians, axes in the joint's rest frame.

    Attributes:
        lock: per-axis locks ``(x, y, z)``; a locked axis's angle stays zero.
        ranges: per-axis ``(min, max)`` angles for X, Y, Z, or ``None`` for a free axis.
            X and Z bound the swing's quaternion components (and make Blender's ellipse
            when both are given), Y bounds the twist (module docstring).
        cone: largest bend angle (swing) in ``(0, π]``, or ``None``.
        hinge_axis: unit axis ``(3,)`` of a 1-DOF hinge, or ``None``; overrides the above.
        hinge_range: ``(min, max)`` angle about ``hinge_axis``, or ``None``.
        stiffness: per-axis stiffness ``(x, y, z)`` in ``[0, 1)``.
    """

    lock: tuple[bool, bool, bool] = (False, False, False)
    ranges: tuple[
        tuple[float, float] | None, tuple[float, float] | None, tuple[float, float] | None
    ] = (
        None,
        None,
        None,
    )
    cone: float | None = None
    hinge_axis: tuple[float, float, float] | None = None
    hinge_range: tuple[float, float] | None = None
    stiffness: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if len(self.lock) != 3 or len(self.ranges) != 3 or len(self.stiffness) != 3:
            raise ChainError("lock, ranges and stiffness need three entries each, for X, Y and Z")
        for name, r in (*zip("XYZ", self.ranges, strict=True), ("hinge", self.hinge_range)):
            if r is None:
                continue
            try:
                lo, hi = (float(v) for v in r)
            except (TypeError, ValueError):
                raise ChainError(
                    f"{name} range {r!r} is invalid: need a pair (min, max) of radians"
                ) from None
            if not (math.isfinite(lo) and math.isfinite(hi) and -math.pi <= lo <= hi <= math.pi):
                raise ChainError(
                    f"{name} range ({lo}, {hi}) is invalid: need -π <= min <= max <= π radians"
                )
        if self.cone is not None and not (0.0 <= self.cone <= math.pi):
            raise ChainError(f"cone limit {self.cone} is invalid: need 0 <= cone <= π radians")
        if any(not (0.0 <= s < 1.0) for s in self.stiffness):
            raise ChainError(f"stiffness {self.stiffness} is invalid: each must be in [0, 1)")
        if self.hinge_axis is not None:
            axis = np.asarray(self.hinge_axis, dtype=float)
            norm = float(np.linalg.norm(axis))
            if axis.shape != (3,) or not math.isfinite(norm) or norm < 1e-9:
                raise ChainError(
                    f"hinge axis {self.hinge_axis} is invalid: need a non-zero 3-vector"
                )
            object.__setattr__(self, "hinge_axis", tuple(float(c) for c in axis / norm))
        if self.kind == "ball" and not self.is_free:
            _ = self.swing_region  # raises ChainError when the limits allow no swing

    # ------------------------------------------------------------------ derived model
    @cached_property
    def kind(self) -> JointKind:
        """``"fixed"`` (no DOF), ``"hinge"`` (1 DOF) or ``"ball"`` (2–3 DOF) (computed once:
        the one-target paths ask on every joint step)."""
        if self.hinge_axis is not None:
            return "hinge"
        free = 3 - sum(self.lock)
        return "fixed" if free == 0 else "hinge" if free == 1 else "ball"

    @property
    def hinge(self) -> tuple[FloatArray, tuple[float, float] | None]:
        """Axis ``(3,)`` and angle range of a 1-DOF joint (explicit or from two locks).

        A hinge from two locks about X or Z bends the bone, so a ``cone`` narrows its range.
        """
        axis, limits = self._hinge
        return axis.copy(), limits

    @cached_property
    def _hinge(self) -> tuple[FloatArray, tuple[float, float] | None]:
        """:attr:`hinge`, computed once (its axis is copied out on every use)."""
        if self.hinge_axis is not None:
            return np.asarray(self.hinge_axis), self.hinge_range
        if self.kind != "hinge":
            raise ChainError(f"joint of kind {self.kind!r} is not a hinge")
        k = self.lock.index(False)
        limits = self.ranges[k]
        if self.cone is not None and k != 1:
            lo, hi = limits if limits is not None else (-math.pi, math.pi)
            limits = (min(max(lo, -self.cone), self.cone), max(min(hi, self.cone), -self.cone))
        return _AXES[k].copy(), limits

    @cached_property
    def _hinge_floats(
        self,
    ) -> tuple[tuple[float, float, float], tuple[float, float, float], tuple[float, float] | None]:
        """:attr:`hinge` for the float paths: its axis as floats, that axis divided by its
        norm, and its range (computed once)."""
        axis, limits = self._hinge
        ax, ay, az = float(axis[0]), float(axis[1]), float(axis[2])
        norm = math.sqrt(ax * ax + ay * ay + az * az)
        return (ax, ay, az), (ax / norm, ay / norm, az / norm), limits

    @cached_property
    def is_free(self) -> bool:
        """True for an unlimited ball joint, whose projection is the identity (computed
        once)."""
        return (
            self.hinge_axis is None
            and not any(self.lock)
            and all(r is None for r in self.ranges)
            and self.cone is None
        )

    @cached_property
    def _limits_swing(self) -> bool:
        """X or Z is limited or locked: a ball joint's swing is kept in :attr:`swing_region`
        (computed once: the one-target paths ask on every joint step)."""
        return any(self.lock[k] or self.ranges[k] is not None for k in (0, 2))

    @cached_property
    def swing_region(self) -> SwingRegion:
        """The allowed swings of a ball joint (see :class:`SwingRegion`)."""
        return SwingRegion.of(self.lock, self.ranges, self.cone)

    @property
    def weights(self) -> FloatArray:
        """Per-axis willingness to turn, ``(1 − stiffness)`` with locked axes at zero, ``(3,)``."""
        w = 1.0 - np.asarray(self.stiffness, dtype=float)
        return np.where(np.asarray(self.lock), 0.0, w)

    def swing_outside(self, q: FloatArray) -> NDArray[np.bool_]:
        """Whether a ball joint's local rotations ``q (K, 4)`` (``w ≥ 0``) swing outside
        :attr:`swing_region` (its membership slack included)."""
        sx, sz, _ = _swing_components(q)
        return ~self.swing_region.contains(sx, sz)

    def swing_outside_floats(self, q: tuple[float, float, float, float]) -> bool:
        """:meth:`swing_outside` for one rotation in plain floats."""
        sx, sz, _ = _swing_components_floats(q)
        return not self.swing_region.contains_one(sx, sz)

    def swing_exit(self, q: FloatArray, beyond: FloatArray) -> FloatArray:
        """The local turns ``(K, 3)`` that take a ball joint's swing straight out of
        :attr:`swing_region` at rotations ``q (K, 4)`` on its boundary (``w ≥ 0``), across
        the part that the rotations ``beyond (K, 4)`` (outside it) crossed:
        ``g = ∇_r n·s(q · exp(r/2))`` at ``r = 0``, ``s`` the swing's components ``(x, z)``
        and ``n`` the region's outward normal at ``s(q)`` (:meth:`SwingRegion.outward`);
        ``r`` and ``g`` are rotation vectors in the joint's frame. A step ``r`` with
        ``g·r = 0`` slides along the boundary (to first order)."""
        sx, sz, tn = _swing_components(q)
        ux, uz, _ = _swing_components(beyond)
        nx, nz = self.swing_region.outward(sx, sz, (ux, uz))
        w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
        tn = np.where(tn > 0.0, tn, 1.0)
        return np.stack(_exit_turn(w, x, y, z, sx, sz, tn, nx, nz), axis=-1)

    def swing_exit_floats(
        self,
        q: tuple[float, float, float, float],
        beyond: tuple[float, float, float, float],
    ) -> Vec:
        """:meth:`swing_exit` for one rotation in plain floats (tested against it)."""
        sx, sz, tn = _swing_components_floats(q)
        ux, uz, _ = _swing_components_floats(beyond)
        nx, nz = self.swing_region.outward_one(sx, sz, ux, uz)
        w, x, y, z = q
        return _exit_turn(w, x, y, z, sx, sz, tn if tn > 0.0 else 1.0, nx, nz)

    def way_out(self, q: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
        """Whether local rotations ``q (K, 4)`` (``w ≥ 0``) sit on this joint's limits, and
        the local turns ``(K, 3)`` (rotation vector directions, joint frame) that would take
        them out: a hinge within :data:`ON_LIMIT` radians of an end of its range, its axis
        toward that end; a ball joint whose swing is within :data:`ON_LIMIT` (quaternion
        components) of its region's boundary, :meth:`swing_exit`. Elsewhere ``False`` and
        a zero turn (a twist at an end of its range is not counted)."""
        q = np.asarray(q, dtype=float)
        turn = np.zeros((*q.shape[:-1], 3))
        on = np.zeros(q.shape[:-1], dtype=bool)
        if self.is_free or self.kind == "fixed":
            return turn, on
        if self.kind == "hinge":
            _, unit, limits = self._hinge_floats
            if limits is None:
                return turn, on
            phi = _signed_angle_about(q, np.array(unit))
            at_hi, at_lo = np.abs(phi - limits[1]) <= ON_LIMIT, np.abs(phi - limits[0]) <= ON_LIMIT
            sign = np.where(at_hi, 1.0, np.where(at_lo, -1.0, 0.0))
            return sign[..., None] * np.array(unit), at_hi | at_lo
        sx, sz, _ = _swing_components(q)
        region = self.swing_region
        on = region.contains(sx, sz, ON_LIMIT) & ~region.contains(sx, sz, -ON_LIMIT)
        if np.any(on):
            turn[on] = self.swing_exit(q[on], q[on])
        return turn, on

    def way_out_floats(self, q: tuple[float, float, float, float]) -> Vec | None:
        """:meth:`way_out` for one rotation in plain floats: the turn, or ``None`` where
        the rotation is not on the limits (tested against :meth:`way_out`)."""
        if self.is_free or self.kind == "fixed":
            return None
        if self.kind == "hinge":
            (ax, ay, az), (ux, uy, uz), limits = self._hinge_floats
            if limits is None:
                return None
            w, x, y, z = q
            phi = _wrap_one(2.0 * math.atan2(x * ax + y * ay + z * az, w))
            if abs(phi - limits[1]) <= ON_LIMIT:
                return ux, uy, uz
            if abs(phi - limits[0]) <= ON_LIMIT:
                return -ux, -uy, -uz
            return None
        sx, sz, _ = _swing_components_floats(q)
        region = self.swing_region
        if region.contains_one(sx, sz, ON_LIMIT) and not region.contains_one(sx, sz, -ON_LIMIT):
            return self.swing_exit_floats(q, q)
        return None

    # ------------------------------------------------------------------ projection
    def project(self, q: ArrayLike) -> FloatArray:
        """The nearest allowed local rotations, per the swing–twist rules of this module.

        Args:
            q: local rotations ``(..., 4)`` wxyz relative to the joint's rest frame.

        Returns:
            Allowed rotations ``(..., 4)``, unit, ``w >= 0``. Already allowed rotations are
            returned unchanged (up to sign).
        """
        q = rot.positive_w(np.asarray(q, dtype=float))
        if self.is_free:
            return q
        kind = self.kind
        if kind == "fixed":
            return rot.identity(q.shape[:-1])
        if kind == "hinge":
            axis, limits = self.hinge
            phi = _signed_angle_about(q, axis)
            if limits is not None:
                phi = _clamp_angle(phi, limits[0], limits[1])
            return rot.from_axis_angle(axis, phi)

        swing, psi, allowed = self._split(q)
        outside = ~self.swing_region.contains(swing[..., 1], swing[..., 3])
        if np.any(outside):
            swing = swing.copy()
            x, z = self.swing_region.nearest(rot.rotate(q[outside], _Y))
            w = np.sqrt(np.maximum(0.0, 1.0 - x * x - z * z))
            swing[outside] = np.stack((w, x, np.zeros_like(x), z), axis=-1)
        return self._joined(q, swing, psi, allowed & ~outside)

    def _split(self, q: FloatArray) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
        """A ball joint's rotations ``q (..., 4)`` (``w ≥ 0``) split for :meth:`project`
        and :meth:`retract`: the swing about +Y ``(..., 4)``, the twist angle clamped to
        its range ``(...)``, and where that twist was allowed as it is (to :data:`TWIST_EPS`,
        ``(...)``)."""
        swing, _ = rot.swing_twist(q, _Y)
        psi = _signed_angle_about(q, _Y)
        allowed = np.full(psi.shape, not self.lock[1])
        if self.lock[1]:
            psi = np.zeros_like(psi)
        elif self.ranges[1] is not None:
            kept = _clamp_angle(psi, self.ranges[1][0], self.ranges[1][1])
            allowed = _apart(kept, psi) <= TWIST_EPS
            psi = kept
        return swing, psi, allowed

    @staticmethod
    def _joined(
        q: FloatArray, swing: FloatArray, psi: FloatArray, allowed: NDArray[np.bool_]
    ) -> FloatArray:
        """The swing and twist of :meth:`_split` joined again (``w ≥ 0``); the rotations
        ``q`` as they are where ``allowed`` (their swing in the region, their twist in
        range: joining them again would only round them)."""
        joined = rot.positive_w(rot.multiply(swing, rot.from_axis_angle(_Y, psi)))
        return np.where(allowed[..., None], q, joined)

    def project_floats(
        self, q: tuple[float, float, float, float]
    ) -> tuple[float, float, float, float]:
        """:meth:`project` for one rotation in plain floats (wxyz in, wxyz out).

        The same rules and the same arithmetic, without numpy's per-call cost: for the
        solvers' single-target paths (tested against :meth:`project`).
        """
        w, x, y, z = q
        if w < 0.0:
            w, x, y, z = -w, -x, -y, -z
        if self.is_free:
            return (w, x, y, z)
        kind = self.kind
        if kind == "fixed":
            return (1.0, 0.0, 0.0, 0.0)
        if kind == "hinge":
            (ax, ay, az), (ux, uy, uz), limits = self._hinge_floats
            phi = _wrap_one(2.0 * math.atan2(x * ax + y * ay + z * az, w))
            if limits is not None:
                phi = _clamp_one(phi, limits[0], limits[1])
            s = math.sin(0.5 * phi)
            return (math.cos(0.5 * phi), s * ux, s * uy, s * uz)
        if self._limits_swing:
            # X/Z limits: the nearest swing within Blender's ellipse, as project.
            return self._swing_in_region((w, x, y, z), nearest=True)
        # swing–twist about +Y: twist = normalize(w, 0, y, 0), swing = q · twist*
        tn = math.sqrt(w * w + y * y)
        tw, ty = (w / tn, y / tn) if tn > 0.0 else (1.0, 0.0)
        sw, sx, sy, sz = w * tw + y * ty, x * tw + z * ty, y * tw - w * ty, z * tw - x * ty
        psi = _wrap_one(2.0 * math.atan2(y, w))
        # swing rotation vector (rotations.to_rotvec: w >= 0, then 2 log)
        if sw < 0.0:
            sw, sx, sy, sz = -sw, -sx, -sy, -sz
        sn = math.sqrt(sx * sx + sy * sy + sz * sz)
        theta = math.atan2(sn, sw)
        factor = 2.0 * (1.0 + theta * theta / 6.0 if theta < rot.SMALL_ANGLE else theta / sn)
        angles = [factor * sx, psi, factor * sz]
        for k in range(3):
            r = self.ranges[k]
            if self.lock[k]:
                angles[k] = 0.0
            elif r is not None:
                a = angles[k]
                angles[k] = _clamp_one(a, r[0], r[1]) if k == 1 else min(max(a, r[0]), r[1])
        vx, psi, vz = angles
        if self.cone is not None:
            bend = math.sqrt(vx * vx + vz * vz)
            if bend > 0.0 and self.cone < bend:
                scale = self.cone / bend
                vx, vz = vx * scale, vz * scale
        # from_rotvec(swing) · from_axis_angle(Y, psi)
        hx, hz = 0.5 * vx, 0.5 * vz
        theta = math.sqrt(hx * hx + hz * hz)
        sinc = 1.0 - theta * theta / 6.0 if theta < rot.SMALL_ANGLE else math.sin(theta) / theta
        aw, ax_, az_ = math.cos(theta), sinc * hx, sinc * hz
        bw, by = math.cos(0.5 * psi), math.sin(0.5 * psi)
        rw, rx, ry, rz = aw * bw, ax_ * bw - az_ * by, aw * by, az_ * bw + ax_ * by
        if rw < 0.0:
            return (-rw, -rx, -ry, -rz)
        return (rw, rx, ry, rz)

    def hinge_turned_floats(
        self, q: tuple[float, float, float, float], angle: float
    ) -> tuple[tuple[float, float, float, float], tuple[float, float, float, float] | None]:
        """A hinge's allowed rotation ``q`` (wxyz) turned by ``angle`` radians about its
        axis, then kept within its range, in floats: :meth:`project_floats` of
        ``q · (cos(angle/2), sin(angle/2)·axis)``, computed from the angles (the same
        rotation, to rounding). Returns the kept rotation (``w ≥ 0``) and, where the range
        clipped the turn, the turned rotation (``w ≥ 0``; ``None`` where it did not)."""
        (ax, ay, az), (ux, uy, uz), limits = self._hinge_floats
        w, x, y, z = q
        phi = math.remainder(2.0 * math.atan2(x * ax + y * ay + z * az, w) + angle, _TAU)
        if phi <= -math.pi:
            phi += _TAU
        if limits is None or limits[0] <= phi <= limits[1]:
            s = math.sin(0.5 * phi)
            return (math.cos(0.5 * phi), s * ux, s * uy, s * uz), None
        kept = _clamp_one(phi, limits[0], limits[1])
        s, t = math.sin(0.5 * kept), math.sin(0.5 * phi)
        return (
            (math.cos(0.5 * kept), s * ux, s * uy, s * uz),
            (math.cos(0.5 * phi), t * ux, t * uy, t * uz),
        )

    def retract_floats(
        self, q: tuple[float, float, float, float]
    ) -> tuple[float, float, float, float]:
        """:meth:`retract` for one rotation in plain floats (wxyz in, wxyz out; tested
        against :meth:`retract`)."""
        if self.is_free or self.kind != "ball":
            return self.project_floats(q)
        w, x, y, z = q
        return self._swing_in_region((-w, -x, -y, -z) if w < 0.0 else q, nearest=False)

    def _swing_in_region(
        self, q: tuple[float, float, float, float], nearest: bool
    ) -> tuple[float, float, float, float]:
        """A ball joint's rotation ``q`` (``w ≥ 0``) with its twist clamped and its swing
        moved into :attr:`swing_region` where outside: to the nearest allowed swing
        (:meth:`project`) or toward the region's centre (:meth:`retract`), in floats."""
        w, x, y, z = q
        # swing–twist about +Y: twist = normalize(w, 0, y, 0), swing = q · twist*
        tn = math.sqrt(w * w + y * y)
        tw, ty = (w / tn, y / tn) if tn > 0.0 else (1.0, 0.0)
        sw, sx, sy, sz = w * tw + y * ty, x * tw + z * ty, y * tw - w * ty, z * tw - x * ty
        region = self.swing_region
        inside = region.contains_one(sx, sz)
        locked, twist = self.lock[1], self.ranges[1]
        if inside and not locked and twist is None:
            return q  # allowed as it is (JointLimits.project)
        psi = _wrap_one(2.0 * math.atan2(y, w))
        if locked:
            psi = 0.0
        elif twist is not None:
            kept = _clamp_one(psi, *twist)
            if inside and _apart_one(kept, psi) <= TWIST_EPS:
                return q
            psi = kept
        if not inside:
            if nearest:
                sx, sz = region.nearest_one(qrotate(q, (0.0, 1.0, 0.0)))
            else:
                sx, sz = region.toward_centre_one(sx, sz)
            sw, sy = math.sqrt(max(0.0, 1.0 - sx * sx - sz * sz)), 0.0
        # swing · (cos ψ/2, 0, sin ψ/2, 0): qmul written out, its products with the twist's
        # zeros kept (the same operations, so the same rounding and signs).
        bw, by = math.cos(0.5 * psi), math.sin(0.5 * psi)
        ow = sw * bw - sx * 0.0 - sy * by - sz * 0.0
        ox = sw * 0.0 + sx * bw + sy * 0.0 - sz * by
        oy = sw * by - sx * 0.0 + sy * bw + sz * 0.0
        oz = sw * 0.0 + sx * by - sy * 0.0 + sz * bw
        return (ow, ox, oy, oz) if ow >= 0.0 else (-ow, -ox, -oy, -oz)

    def allows(self, q: ArrayLike, eps: float = 1e-12) -> FloatArray:
        """Whether rotations ``q (..., 4)`` are allowed (to ``eps`` in quaternion components
        and radians): the membership test of :meth:`project`, without projecting."""
        q = rot.positive_w(np.asarray(q, dtype=float))
        if self.is_free:
            return np.ones(q.shape[:-1], dtype=bool)
        kind = self.kind
        if kind == "fixed":
            return np.all(np.abs(q[..., 1:]) <= eps, axis=-1)
        if kind == "hinge":
            axis, limits = self.hinge
            off = np.linalg.norm(rot.cross(q[..., 1:], axis), axis=-1) <= eps
            if limits is None:
                return off
            phi = _signed_angle_about(q, axis)
            return off & (_apart(_clamp_angle(phi, *limits), phi) <= eps)
        swing, _ = rot.swing_twist(q, _Y)
        ok = self.swing_region.contains(swing[..., 1], swing[..., 3], eps)
        psi = _signed_angle_about(q, _Y)
        if self.lock[1]:
            ok &= np.abs(psi) <= eps
        elif self.ranges[1] is not None:
            ok &= _apart(_clamp_angle(psi, *self.ranges[1]), psi) <= eps
        return ok

    def allows_floats(self, q: tuple[float, float, float, float], eps: float = 1e-12) -> bool:
        """:meth:`allows` for one rotation in plain floats (wxyz; tested against it)."""
        w, x, y, z = q
        if w < 0.0:
            w, x, y, z = -w, -x, -y, -z
        if self.is_free:
            return True
        kind = self.kind
        if kind == "fixed":
            return abs(x) <= eps and abs(y) <= eps and abs(z) <= eps
        if kind == "hinge":
            (ax, ay, az), _, limits = self._hinge_floats
            cx, cy, cz = y * az - z * ay, z * ax - x * az, x * ay - y * ax
            if not math.sqrt(cx * cx + cy * cy + cz * cz) <= eps:
                return False
            if limits is None:
                return True
            phi = _wrap_one(2.0 * math.atan2(x * ax + y * ay + z * az, w))
            return _apart_one(_clamp_one(phi, *limits), phi) <= eps
        # swing–twist about +Y, as _swing_in_region
        tn = math.sqrt(w * w + y * y)
        tw, ty = (w / tn, y / tn) if tn > 0.0 else (1.0, 0.0)
        if not self.swing_region.contains_one(x * tw + z * ty, z * tw - x * ty, eps):
            return False
        if self.lock[1] or self.ranges[1] is not None:
            psi = _wrap_one(2.0 * math.atan2(y, w))
            if self.lock[1]:
                return abs(psi) <= eps
            lo, hi = self.ranges[1]  # type: ignore[misc]
            return _apart_one(_clamp_one(psi, lo, hi), psi) <= eps
        return True

    def beyond(self, q: FloatArray) -> FloatArray:
        """How far a ball joint's rotations ``q (K, 4)`` lie beyond its limits: positive
        where :meth:`allows` refuses them, ``≤ 0`` where they lie within (zero on the
        limits' edge). The larger of :meth:`SwingRegion.beyond` of the swing and, with a
        twist range, the twist's angle past it (radians; within it, less the angle to the
        nearer end), or with the twist locked its angle. For finding the limits' edge along
        a path by its sign; not a distance."""
        if self.kind != "ball":
            raise ChainError(f"beyond is defined for ball joints, not {self.kind!r} ones")
        q = rot.positive_w(q)
        sx, sz, _ = _swing_components(q)
        out = self.swing_region.beyond(sx, sz)
        if self.lock[1]:
            return np.maximum(out, np.abs(_signed_angle_about(q, _Y)))
        if self.ranges[1] is None:
            return out
        lo, hi = self.ranges[1]
        psi = _signed_angle_about(q, _Y)
        within = (psi >= lo) & (psi <= hi)
        past = np.where(
            within, -np.minimum(psi - lo, hi - psi), _apart(_clamp_angle(psi, lo, hi), psi)
        )
        return np.maximum(out, past)

    def beyond_floats(self, q: tuple[float, float, float, float]) -> float:
        """:meth:`beyond` for one rotation in plain floats (the same to rounding: the swing
        and twist split as :meth:`allows_floats` splits them)."""
        w, x, y, z = q
        if w < 0.0:
            w, x, y, z = -w, -x, -y, -z
        sx, sz, _ = _swing_components_floats((w, x, y, z))
        out = self.swing_region.beyond_one(sx, sz)
        if not self.lock[1] and self.ranges[1] is None:
            return out
        psi = _wrap_one(2.0 * math.atan2(y, w))
        if self.lock[1]:
            return max(out, abs(psi))
        lo, hi = self.ranges[1]  # type: ignore[misc]
        past = (
            -min(psi - lo, hi - psi)
            if lo <= psi <= hi
            else _apart_one(_clamp_one(psi, lo, hi), psi)
        )
        return max(out, past)

    def retract(self, q: ArrayLike) -> FloatArray:
        """Allowed rotations near ``q (..., 4)``, cheaper than :meth:`project`: as it, except
        that a ball joint's swing outside its region moves straight toward the region's
        centre (:meth:`SwingRegion.toward_centre`) instead of to the nearest allowed swing.
        For iterative searches that only need to stay within the limits."""
        q = rot.positive_w(np.asarray(q, dtype=float))
        if self.is_free or self.kind != "ball":
            return self.project(q)
        swing, psi, allowed = self._split(q)
        region = self.swing_region
        outside = ~region.contains(swing[..., 1], swing[..., 3])
        if np.any(outside):
            swing = swing.copy()
            x, z = region.toward_centre(swing[outside][:, 1], swing[outside][:, 3])
            w = np.sqrt(np.maximum(0.0, 1.0 - x * x - z * z))
            swing[outside] = np.stack((w, x, np.zeros_like(x), z), axis=-1)
        return self._joined(q, swing, psi, allowed & ~outside)

    def violation(self, q: ArrayLike) -> FloatArray:
        """Angle (radians) between ``q (..., 4)`` and its projection: zero when allowed."""
        q = np.asarray(q, dtype=float)
        return rot.angle(rot.multiply(rot.conjugate(self.project(q)), q))

    def violation_floats(self, q: tuple[float, float, float, float]) -> float:
        """:meth:`violation` for one rotation in plain floats (wxyz; tested against it)."""
        return qangle(qmul_conj(self.project_floats(q), q))


FREE = JointLimits()
"""An unlimited ball joint."""


def cone_limits(bend_limits_deg: Sequence[float | None] | None, n: int) -> tuple[JointLimits, ...]:
    """Per-joint bend (cone) limits in degrees, ``None``/NaN entries meaning free joints."""
    if bend_limits_deg is None:
        return (FREE,) * n
    values = list(bend_limits_deg)
    if len(values) != n:
        raise ChainError(
            f"got {len(values)} bend limits for {n} joints; give one per joint (None = free)"
        )
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append(FREE)
        else:
            out.append(JointLimits(cone=math.radians(float(v))))
    return tuple(out)
