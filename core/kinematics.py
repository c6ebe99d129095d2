# SPDX-License-Identifier: GPL-3.0-or-later
"""Forward kinematics of a :class:`~core.chain.Chain`, batched over poses, and of one pose
in plain floats (:func:`forward_kinematics_floats`, for the one-target fast paths)."""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike

from . import rotations as rot
from .chain import Chain
from .components import Quat, Vec
from .errors import SolveInputError
from .rotations import FloatArray


def forward_kinematics(
    chain: Chain, rotations: ArrayLike | None = None
) -> tuple[FloatArray, FloatArray]:
    """Joint positions and orientations in the base frame.

    Implements ``W_i = W_{i−1} · rest_i · q_i`` and ``p_{i+1} = p_i + W_i · offset_i`` with
    ``p_0 = 0`` (see :mod:`core.chain`).

    Args:
        chain: the chain.
        rotations: local joint rotations ``(..., n, 4)`` wxyz relative to the rest frames;
            the rest pose when ``None``.

    Returns:
        ``positions (..., n + 1, 3)``: every joint in the base frame, the last row being
        the end effector; ``orientations (..., n, 4)``: each joint frame's world rotation
        (the effector's orientation is the last joint's).
    """
    n = chain.n_joints
    q = rot.identity((n,)) if rotations is None else np.asarray(rotations, dtype=np.float64)
    if q.shape[-2:] != (n, 4):
        raise SolveInputError(f"rotations must have shape (..., {n}, 4), got {q.shape}")
    batch = q.shape[:-2]
    positions = np.zeros((*batch, n + 1, 3))
    orientations = np.empty((*batch, n, 4))
    world = rot.identity(batch)
    for i in range(n):
        world = rot.multiply(rot.multiply(world, chain.rest_rotations[i]), q[..., i, :])
        orientations[..., i, :] = world
        positions[..., i + 1, :] = positions[..., i, :] + rot.rotate(world, chain.offsets[i])
    return positions, orientations


def effector(chain: Chain, rotations: ArrayLike | None = None) -> FloatArray:
    """End-effector position ``(..., 3)`` in the base frame."""
    return forward_kinematics(chain, rotations)[0][..., -1, :]


def forward_kinematics_floats(chain: Chain, rots: list[Quat]) -> tuple[list[Vec], list[Quat]]:
    """:func:`forward_kinematics` of one pose in plain floats (the same operations per joint).

    Args:
        chain: the chain.
        rots: ``n`` local rotations, 4 floats each (wxyz).

    Returns:
        ``n + 1`` joint positions (3 floats each, base frame) and ``n`` world rotations.
    """
    rests, offsets = chain_floats(chain)
    # qmul(qmul(world, rest), q) and p + qrotate(world, offset) of core.components, written
    # out: the same operations in the same order (the one-target solvers call this in their
    # innermost loops).
    ww, wx, wy, wz = 1.0, 0.0, 0.0, 0.0
    px = py = pz = 0.0
    positions: list[Vec] = [(px, py, pz)]
    frames: list[Quat] = []
    for (rw, rx, ry, rz), (ox, oy, oz), (qw, qx, qy, qz) in zip(rests, offsets, rots, strict=True):
        aw = ww * rw - wx * rx - wy * ry - wz * rz
        ax = ww * rx + wx * rw + wy * rz - wz * ry
        ay = ww * ry - wx * rz + wy * rw + wz * rx
        az = ww * rz + wx * ry - wy * rx + wz * rw
        ww = aw * qw - ax * qx - ay * qy - az * qz
        wx = aw * qx + ax * qw + ay * qz - az * qy
        wy = aw * qy - ax * qz + ay * qw + az * qx
        wz = aw * qz + ax * qy - ay * qx + az * qw
        frames.append((ww, wx, wy, wz))
        tx = 2.0 * (wy * oz - wz * oy)
        ty = 2.0 * (wz * ox - wx * oz)
        tz = 2.0 * (wx * oy - wy * ox)
        px = px + (ox + ww * tx + (wy * tz - wz * ty))
        py = py + (oy + ww * ty + (wz * tx - wx * tz))
        pz = pz + (oz + ww * tz + (wx * ty - wy * tx))
        positions.append((px, py, pz))
    return positions, frames


@functools.lru_cache(maxsize=64)
def chain_floats(chain: Chain) -> tuple[tuple[Quat, ...], tuple[Vec, ...]]:
    """The chain's rest rotations and link offsets as tuples of floats (cached per chain)."""
    rests = tuple(tuple(float(c) for c in q) for q in chain.rest_rotations)
    offsets = tuple(tuple(float(c) for c in o) for o in chain.offsets)
    return rests, offsets  # type: ignore[return-value]
