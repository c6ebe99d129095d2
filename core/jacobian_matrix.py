# SPDX-License-Identifier: GPL-3.0-or-later
"""Analytic Jacobians of a chain's effector with respect to its joint parameters.

Every parameter ``p_k`` of joint ``i`` (:class:`~core.parameterization.DofLayout`) turns the
chain beyond joint ``i`` about an axis through the joint's position ``p_i`` with angular
velocity ``ω_k`` (base frame, per unit ``p_k``): the joint frame's angular column
(:meth:`DofLayout.local_axes`) rotated by ``F_i = W_{i−1} · rest_i``, the frame ``q_i``
acts in. Hence (CSE169, reference 002: "a column for a rotational DOF is
``axis × (e − joint position)``"):

* position rows ``∂e/∂p_k = ω_k × (e − p_i)``;
* angular rows ``ω_k``;
* twist rows ``(ω_k, ω_k × (x − p_i))``: the twist of the motion, its linear part being the
  velocity of a point ``x`` carried along. With ``x`` the base origin this is
  ``(ω_k, p_i × ω_k)``, the Plücker coordinates (direction, moment) of the joint axis, i.e.
  the manipulator Jacobian of the 6R-robot reference 004 (§3.5) when ``ω_k`` is a unit axis.

All arrays are batched over leading axes; positions in chain units, base frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import rotations as rot
from .chain import Chain
from .errors import SolveInputError
from .parameterization import DofLayout
from .rotations import FloatArray, cross, rotate


@dataclass(frozen=True)
class ChainState:
    """Forward kinematics with the frames the Jacobians need, batched ``(...)``.

    Attributes:
        positions: ``(..., n + 1, 3)`` joint positions; the last row is the effector.
        parent_frames: ``(..., n, 4)`` ``F_i = W_{i−1} · rest_i``, the base-frame frame each
            joint's local rotation acts in.
        orientations: ``(..., n, 4)`` ``W_i = F_i · q_i``; the last is the effector's.
    """

    positions: FloatArray
    parent_frames: FloatArray
    orientations: FloatArray

    def take(self, rows: NDArray[np.intp]) -> ChainState:
        """The states of ``rows`` of a flat batch ``(N, ...)``."""
        return ChainState(self.positions[rows], self.parent_frames[rows], self.orientations[rows])

    def put(self, rows: NDArray[np.intp], other: ChainState) -> None:
        """Overwrite ``rows`` of this flat batch with ``other`` (in place)."""
        self.positions[rows] = other.positions
        self.parent_frames[rows] = other.parent_frames
        self.orientations[rows] = other.orientations

    @property
    def effector(self) -> FloatArray:
        """``(..., 3)`` the effector position."""
        return self.positions[..., -1, :]

    @property
    def effector_rotation(self) -> FloatArray:
        """``(..., 4)`` the effector frame's orientation (the last joint's)."""
        return self.orientations[..., -1, :]


def chain_state(chain: Chain, rotations: ArrayLike) -> ChainState:
    """Forward kinematics of local rotations ``(..., n, 4)`` (as :mod:`core.kinematics`)."""
    q = np.asarray(rotations, dtype=np.float64)
    n = chain.n_joints
    if q.shape[-2:] != (n, 4):
        raise SolveInputError(f"rotations must have shape (..., {n}, 4), got {q.shape}")
    batch = q.shape[:-2]
    positions = np.zeros((*batch, n + 1, 3))
    parents = np.empty((*batch, n, 4))
    worlds = np.empty((*batch, n, 4))
    rest_is_identity = np.all(chain.rest_rotations == rot.identity(), axis=-1)
    world = rot.identity(batch)
    for i in range(n):
        # Products with the identity (the base frame, identity rest frames) are skipped.
        if i == 0:
            frame = np.broadcast_to(chain.rest_rotations[0], (*batch, 4))
        elif rest_is_identity[i]:
            frame = world
        else:
            frame = rot.multiply(world, chain.rest_rotations[i])
        world = rot.multiply(frame, q[..., i, :])
        parents[..., i, :] = frame
        worlds[..., i, :] = world
        positions[..., i + 1, :] = positions[..., i, :] + rotate(world, chain.offsets[i])
    return ChainState(positions, parents, worlds)


def dof_axes(layout: DofLayout, state: ChainState, params: ArrayLike) -> FloatArray:
    """World angular velocity per unit parameter, ``(..., k, 3)`` (module docstring).

    When every joint is a ball joint the columns are ``R(F_i) Ω_i`` for each joint's
    ``3 × 3`` block of angular columns (one matrix product per joint, a faster path to the
    same numbers).
    """
    p = np.asarray(params, dtype=np.float64)
    if layout.ball.size == layout.n_joints:
        blocks = layout.ball_angular(p.reshape((*p.shape[:-1], layout.n_joints, 3)))
        world = rot.to_matrix(state.parent_frames) @ blocks
        return np.swapaxes(world, -1, -2).reshape((*p.shape, 3))
    return rotate(state.parent_frames[..., layout.column_joint, :], layout.local_axes(p))


def dof_anchors(layout: DofLayout, state: ChainState) -> FloatArray:
    """The joint position ``p_i`` of every column, ``(..., k, 3)``."""
    return state.positions[..., layout.column_joint, :]


def position_jacobian(axes: ArrayLike, anchors: ArrayLike, point: ArrayLike) -> FloatArray:
    """``∂x/∂p = ω_k × (x − p_i)`` as ``(..., 3, k)`` for the point ``x (..., 3)``.

    Args:
        axes: ``(..., k, 3)`` world angular velocity per parameter (:func:`dof_axes`).
        anchors: ``(..., k, 3)`` each column's joint position (:func:`dof_anchors`).
        point: ``(..., 3)`` the point carried along, usually the effector.
    """
    a = np.asarray(axes, dtype=np.float64)
    lever = np.asarray(point, dtype=np.float64)[..., None, :] - np.asarray(anchors)
    return np.swapaxes(cross(a, lever), -1, -2)


def angular_jacobian(axes: ArrayLike) -> FloatArray:
    """Angular rows ``(..., 3, k)``: the effector frame's angular velocity per parameter."""
    return np.swapaxes(np.asarray(axes, dtype=np.float64), -1, -2)


def twist_jacobian(
    axes: ArrayLike, anchors: ArrayLike, point: ArrayLike | None = None
) -> FloatArray:
    """Twist rows ``(..., 6, k)``: angular rows over the velocity rows of ``point``.

    With ``point=None`` the linear rows are the velocity of the base origin, ``p_i × ω_k``
    (Plücker moments, reference 004 §3.5).
    """
    a = np.asarray(axes, dtype=np.float64)
    if point is None:
        point = np.zeros((*a.shape[:-2], 3))
    return np.concatenate((angular_jacobian(a), position_jacobian(a, anchors, point)), axis=-2)


__all__ = [
    "ChainState",
    "angular_jacobian",
    "chain_state",
    "cross",
    "dof_anchors",
    "dof_axes",
    "position_jacobian",
    "rotate",
    "twist_jacobian",
]
