# SPDX-License-Identifier: GPL-3.0-or-later
"""Chains from Denavit–Hartenberg parameters, and their forward kinematics by dual quaternions.

Convention (classic DH, as in the 6R-robot reference 004 §3.2–3.3): link ``j`` (0-based)
carries a revolute joint about the ``z`` axis of the previous frame; its transform is

    ``T_j = Rz(θ_j) · Trans(a_j, 0, d_j) · Rx(α_j)``,

built, as in the reference, as the dual-quaternion product of the joint rotation
``(0, 0, sin θ/2, cos θ/2)`` and the fixed link motion "rotate by ``α`` about x, then
translate by ``(a, 0, d)``". Frame ``j + 1 = T_0 ⋯ T_j`` in the base frame (frame 0). The
reference's 6R robot (``DL1``–``DL6``) is :data:`REFERENCE_6R`; its start pose (all
``θ = 0``) is a singular position.

As a :class:`~core.chain.Chain` (:func:`chain_from_dh`), joint ``j`` is a hinge about its
local ``z`` (``JointLimits(hinge_axis=(0, 0, 1))``) with rest rotation
``Rx(α_{j−1}) · Rz(θ_offset_j)``, offset ``(a_j, 0, d_j)``, and pose ``q_j = Rz(θ_j − θ_offset_j)``;
joint ``j`` sits at the origin of DH frame ``j``, and the effector frame is DH frame ``n``.
Two restrictions follow from the chain model: the effector frame is the last joint's frame,
so the last ``α`` must be ``0``; and every link needs a length, so a last link with
``a = d = 0`` (like the reference's ``DL6``) needs a ``tool`` offset, the effector's position
in the last frame.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from . import dual_quaternion as dq
from . import rotations as rot
from .chain import Chain
from .errors import ChainError
from .limits import JointLimits
from .rotations import FloatArray

_Z = np.array([0.0, 0.0, 1.0])
_X = np.array([1.0, 0.0, 0.0])

REFERENCE_6R: dict[str, tuple[float, ...]] = {
    "a": (0.5, 0.5, 0.5, 0.25, 0.25, 0.0),
    "d": (0.0, 0.5, 0.5, 0.5, 0.25, 0.0),
    "alpha": (0.0, 0.7854, 0.7854, 1.5708, -1.5708, 0.0),
}
"""The 6R robot of reference 004 §3.2 (links ``DL1``–``DL6``; lengths in its units, ``α`` in
radians exactly as the reference writes them, ``0.7854 ≈ π/4``, ``1.5708 ≈ π/2``)."""


def _params(
    a: ArrayLike, d: ArrayLike, alpha: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    aa, dd, al = (np.asarray(x, dtype=np.float64).reshape(-1) for x in (a, d, alpha))
    n = aa.size
    if n == 0 or dd.size != n or al.size != n:
        raise ChainError(
            f"a, d and alpha need one value per link each, got {[aa.size, dd.size, al.size]}"
        )
    if not (np.all(np.isfinite(aa)) and np.all(np.isfinite(dd)) and np.all(np.isfinite(al))):
        raise ChainError("DH parameters must be finite numbers")
    return aa, dd, al


def link_motions(a: ArrayLike, d: ArrayLike, alpha: ArrayLike, theta: ArrayLike) -> FloatArray:
    """Dual quaternions ``(..., n, 8)`` of ``T_j = Rz(θ_j) Trans(a_j, 0, d_j) Rx(α_j)``.

    Args:
        a, d: ``(n,)`` link lengths and offsets (chain units).
        alpha: ``(n,)`` link twists (radians).
        theta: ``(..., n)`` joint angles (radians).
    """
    a, d, alpha = _params(a, d, alpha)
    theta = np.asarray(theta, dtype=np.float64)
    joint = dq.from_rotation_translation(rot.from_axis_angle(_Z, theta), np.zeros(3))
    fixed = dq.from_rotation_translation(
        rot.from_axis_angle(_X, alpha), np.stack((a, np.zeros_like(a), d), axis=-1)
    )
    return dq.multiply(joint, fixed)


def forward_frames(a: ArrayLike, d: ArrayLike, alpha: ArrayLike, theta: ArrayLike) -> FloatArray:
    """DH frames ``0 … n`` in the base frame, ``(..., n + 1, 8)`` unit dual quaternions.

    Frame 0 is the base (identity); frame ``j + 1`` is the product ``T_0 ⋯ T_j``, accumulated
    link by link as the reference's ``set_parentTransform`` does.
    """
    links = link_motions(a, d, alpha, theta)
    n = links.shape[-2]
    frames = np.empty((*links.shape[:-2], n + 1, 8))
    frames[..., 0, :] = dq.identity()
    for j in range(n):
        frames[..., j + 1, :] = dq.multiply(frames[..., j, :], links[..., j, :])
    return frames


def joint_lines(a: ArrayLike, d: ArrayLike, alpha: ArrayLike, theta: ArrayLike) -> FloatArray:
    """Plücker coordinates ``(..., n, 6)`` (direction, moment) of every joint axis.

    Joint ``j``'s axis is the ``z`` axis of frame ``j``, moved into the base frame by
    ``Q (0, 0, 1, 0, 0, 0) Q*`` (reference 004 §3.6); these are the rows of the reference's
    manipulator Jacobian ``J · (θ̇_1 … θ̇_6)ᵀ = (ω, v_O)``.
    """
    frames = forward_frames(a, d, alpha, theta)[..., :-1, :]
    direction, moment = dq.transform_line(frames, _Z, np.zeros(3))
    return np.concatenate((direction, moment), axis=-1)


def chain_from_dh(
    a: ArrayLike,
    d: ArrayLike,
    alpha: ArrayLike,
    theta_offset: ArrayLike | None = None,
    *,
    tool: ArrayLike = (0.0, 0.0, 0.0),
    ranges: Sequence[tuple[float, float] | None] | None = None,
    names: Sequence[str] | None = None,
) -> Chain:
    """A chain of revolute joints from DH parameters (module docstring).

    Args:
        a: ``(n,)`` link lengths ``a_j`` (chain units).
        d: ``(n,)`` link offsets ``d_j`` along the joint axes.
        alpha: ``(n,)`` link twists ``α_j`` (radians); the last must be ``0``.
        theta_offset: ``(n,)`` joint angles of the rest pose (radians); zeros if ``None``.
        tool: ``(3,)`` the effector's position in DH frame ``n`` (added to the last link).
        ranges: per joint ``(min, max)`` angle relative to the rest pose, or ``None``.
        names: joint names.

    Raises:
        ChainError: mismatched or non-finite parameters, a non-zero last ``α``, or a
            zero-length link (see :class:`~core.chain.Chain`).
    """
    a, d, alpha = _params(a, d, alpha)
    n = a.size
    if abs(alpha[-1]) > 0.0:
        raise ChainError(
            f"the last link's alpha must be 0 (the effector frame is the last joint's "
            f"frame), got {alpha[-1]}"
        )
    offset = np.zeros(n) if theta_offset is None else np.asarray(theta_offset, dtype=np.float64)
    if offset.shape != (n,) or not np.all(np.isfinite(offset)):
        raise ChainError(f"theta_offset needs {n} finite angles, got shape {offset.shape}")
    t = np.asarray(tool, dtype=np.float64)
    if t.shape != (3,) or not np.all(np.isfinite(t)):
        raise ChainError(f"tool must be a finite 3-vector, got {t.tolist()}")
    hinge_ranges = list(ranges) if ranges is not None else [None] * n
    if len(hinge_ranges) != n:
        raise ChainError(f"got {len(hinge_ranges)} ranges for {n} joints; give one per joint")
    offsets = np.stack((a, np.zeros(n), d), axis=-1)
    offsets[-1] += t
    twist_before = np.concatenate(([0.0], alpha[:-1]))
    rest = rot.multiply(rot.from_axis_angle(_X, twist_before), rot.from_axis_angle(_Z, offset))
    limits = [JointLimits(hinge_axis=(0.0, 0.0, 1.0), hinge_range=r) for r in hinge_ranges]
    return Chain(offsets, rest, limits, names)


def chain_rotations(theta: ArrayLike, theta_offset: ArrayLike | None = None) -> FloatArray:
    """Local rotations ``(..., n, 4)`` of a :func:`chain_from_dh` chain at DH angles ``θ``."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta_offset is not None:
        theta = theta - np.asarray(theta_offset, dtype=np.float64)
    return rot.from_axis_angle(_Z, theta)


def chain_angles(rotations: ArrayLike, theta_offset: ArrayLike | None = None) -> FloatArray:
    """DH angles ``(..., n)`` in ``(−π, π]`` (plus offsets) of hinge rotations about ``z``."""
    q = rot.positive_w(np.asarray(rotations, dtype=np.float64))
    angle = 2.0 * np.arctan2(q[..., 3], q[..., 0])
    if theta_offset is not None:
        angle = angle + np.asarray(theta_offset, dtype=np.float64)
    return np.pi - np.mod(np.pi - angle, 2.0 * np.pi)


__all__ = [
    "REFERENCE_6R",
    "chain_angles",
    "chain_from_dh",
    "chain_rotations",
    "forward_frames",
    "joint_lines",
    "link_motions",
]
