# SPDX-License-Identifier: GPL-3.0-or-later
"""The screw motion between two poses and its twist: the 6-DOF error of a pose goal.

Reference 004 (Jacobian IK for a 6R robot, §3.7): with ``C`` the current and ``D`` the
desired effector pose as unit dual quaternions, ``Q = D C*`` is the rigid motion taking
``C`` to ``D``. Every rigid motion is a screw motion: a rotation by the angle ``a`` about an
axis with unit direction ``d`` combined with a translation ``d·t`` along it (``t`` is the
motion's translation). The axis line's moment is

    ``m = ½ (t × d + cot(a/2) · (d × t) × d)``,

and the twist of the screw motion is ``s = a (1 + ε p) v``: angular velocity ``ω = a d``
and linear velocity ``v_O = (d·t) d + a m`` of the point at the base origin. Running the
twist for unit time reproduces ``Q`` exactly (checked against the matrix exponential in
the tests). The reference scales it by ``0.1`` before solving; here the solvers scale it by
their step ``β``.

Conventions: twists are ``(..., 6)`` arrays ``(ω, v)``, base frame, ``ω`` in radians per unit
time and ``v`` in chain units per unit time; ``v`` is the velocity of the point named by the
function (the base origin unless stated). Quaternions are wxyz (:mod:`core.rotations`).

Choices where the reference is silent or degenerate: for ``a → 0`` (a pure translation)
``a·cot(a/2) → 2`` and the twist becomes ``(0, t)``, whatever ``d``; the reference's code
instead pushes along ``+z`` there. For ``a = π`` the axis direction is either of two
opposite ones (both are the same motion); the one with ``w ≥ 0`` is taken.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from . import dual_quaternion as dq
from . import rotations as rot
from .rotations import SMALL_ANGLE, FloatArray


@dataclass(frozen=True)
class Screw:
    """The screw motion of a rigid motion, batched ``(...)``.

    Attributes:
        direction: ``(..., 3)`` unit direction ``d`` of the screw axis.
        angle: ``(...)`` rotation ``a`` about the axis, radians in ``[0, π]``.
        translation: ``(..., 3)`` the motion's translation ``t``.
        pitch_translation: ``(...)`` the slide along the axis, ``d·t`` (chain units).
        moment: ``(..., 3)`` the axis line's moment ``m`` about the base origin. For a pure
            translation (``a = 0``) the axis is taken through the origin along ``t``
            (``m = 0``).
    """

    direction: FloatArray
    angle: FloatArray
    translation: FloatArray
    pitch_translation: FloatArray
    moment: FloatArray


def _axis_angle(q: FloatArray) -> tuple[FloatArray, FloatArray]:
    """:func:`core.rotations.to_axis_angle`, the axis renormalised: for angles below about
    ``1e-150`` its squared components underflow and the axis comes back slightly off unit."""
    axis, a = rot.to_axis_angle(q)
    return axis / np.linalg.norm(axis, axis=-1, keepdims=True), a


def _a_cot_half(a: FloatArray) -> FloatArray:
    """``a · cot(a/2)`` for ``a ∈ [0, π]``; ``2 − a²/6`` near zero."""
    small = a < SMALL_ANGLE
    safe = np.where(small, 1.0, a)
    return np.where(small, 2.0 - a * a / 6.0, safe / np.tan(0.5 * safe))


def screw_of(motion: ArrayLike) -> Screw:
    """The screw motion of unit dual quaternions ``(..., 8)`` (reference 004 §3.7)."""
    q = np.asarray(motion, dtype=np.float64)
    axis, a = _axis_angle(q[..., :4])
    t = dq.translation(q)
    pure = a < SMALL_ANGLE
    t_len = np.linalg.norm(t, axis=-1, keepdims=True)
    t_dir = np.divide(t, t_len, out=np.zeros_like(t), where=t_len > 0.0)
    t_dir[..., 2] = np.where(t_len[..., 0] > 0.0, t_dir[..., 2], 1.0)
    d = np.where(pure[..., None], t_dir, axis)
    safe_a = np.where(pure, 1.0, a)
    cot = np.where(pure, 0.0, 1.0 / np.tan(0.5 * safe_a))
    moment = 0.5 * (rot.cross(t, d) + cot[..., None] * rot.cross(rot.cross(d, t), d))
    moment = np.where(pure[..., None], 0.0, moment)
    return Screw(
        direction=d,
        angle=np.where(pure, 0.0, a),
        translation=t,
        pitch_translation=np.sum(d * t, axis=-1),
        moment=moment,
    )


def motion_twist(motion: ArrayLike) -> FloatArray:
    """Twist ``(..., 6)`` ``(ω, v_O)`` whose unit-time screw motion is ``motion (..., 8)``.

    ``ω = a d``, ``v_O = (d·t) d + a m`` with ``m`` the axis moment (module docstring),
    evaluated as ``(d·t) d + ½ a (t × d) + ½ a cot(a/2) (d × t) × d`` so that it stays
    finite, and tends to ``t``, as ``a → 0``.
    """
    q = np.asarray(motion, dtype=np.float64)
    d, a = _axis_angle(q[..., :4])
    t = dq.translation(q)
    v = (
        np.sum(d * t, axis=-1, keepdims=True) * d
        + 0.5 * a[..., None] * rot.cross(t, d)
        + 0.5 * _a_cot_half(a)[..., None] * rot.cross(rot.cross(d, t), d)
    )
    return np.concatenate((a[..., None] * d, v), axis=-1)


def twist_at(twist: ArrayLike, point: ArrayLike) -> FloatArray:
    """The same twist ``(..., 6)`` with its linear part taken at ``point (..., 3)``.

    The velocity of the point rigidly carried along is ``v_p = v_O + ω × p``.
    """
    s = np.asarray(twist, dtype=np.float64)
    w = s[..., :3]
    v = s[..., 3:] + rot.cross(w, np.asarray(point, dtype=np.float64))
    return np.concatenate((np.broadcast_to(w, v.shape), v), axis=-1)


def pose_twist(
    current_rotation: ArrayLike,
    current_position: ArrayLike,
    goal_rotation: ArrayLike,
    goal_position: ArrayLike,
) -> FloatArray:
    """Twist ``(..., 6)`` ``(ω, v_O)`` of the screw motion ``Q = D C*`` from pose C to pose D.

    Args:
        current_rotation: ``(..., 4)`` wxyz orientation of the current effector frame.
        current_position: ``(..., 3)`` its origin, base frame.
        goal_rotation: ``(..., 4)`` desired orientation.
        goal_position: ``(..., 3)`` desired origin.
    """
    c = dq.from_rotation_translation(current_rotation, current_position)
    d = dq.from_rotation_translation(goal_rotation, goal_position)
    return motion_twist(dq.multiply(d, dq.conjugate(c)))


__all__ = ["Screw", "motion_twist", "pose_twist", "screw_of", "twist_at"]
