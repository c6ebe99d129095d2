# SPDX-License-Identifier: GPL-3.0-or-later
"""Untwist: remove the twist a solve leaves that the goal does not need.

:func:`untwist` (many poses, on arrays), :func:`untwist_floats` (one pose, plain floats,
what live solving runs every frame) and :func:`aims_every_joint`, with their helpers. Both
solve paths (:mod:`.evaluate` live, :mod:`.solve_frames` for a range of frames) call them
after the core's solve when the chain has no orientation goal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import Chain
from ..core import rotations as rot
from ..core.components import qconj, qmul, qrotate

#: Up to this many poses :func:`untwist` works pose by pose in plain floats; above it, on
#: arrays of all poses (numpy's per-call overhead dominates a few small arrays).
_FLOAT_POSES = 8


def untwist(chain: Chain, rotations: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Remove twist the goal does not need: free joints aim by the shortest swing.

    A chain reaching for a point leaves each joint free to twist about the line to the next
    joint; a solver's twist is arbitrary and can spin fast while the target moves smoothly
    (a limb's upper bone turning about itself, the elbow's axis swinging with it). Every
    free joint (no locks or limits) after which all joints are free is re-aimed at its
    solved next joint by the shortest rotation from its rest link direction (as
    :func:`core.rotations.between`), which keeps every joint position and removes the twist.

    Args:
        chain: the chain.
        rotations: ``(N, n, 4)`` solved local rotations (wxyz).
        positions: ``(N, n + 1, 3)`` their joint positions (base frame).

    Returns:
        ``(N, n, 4)`` rotations with the same joint positions. The arithmetic
        (:func:`_untwist_pose`) runs on components: plain floats pose by pose for a few
        poses (live solving), ``(N,)`` arrays for many (baking).
    """
    n = chain.n_joints
    first, rests, offsets = _untwist_plan(chain)
    if first == n:
        return rotations
    if rotations.shape[0] <= _FLOAT_POSES:
        return np.array(
            [
                untwist_floats(chain, pose, points)
                for pose, points in zip(rotations.tolist(), positions.tolist(), strict=True)
            ],
            dtype=np.float64,
        )
    pose = [tuple(rotations[:, i].T) for i in range(n)]
    points = [tuple(positions[:, i].T) for i in range(n + 1)]
    out = _untwist_pose(first, rests, offsets, pose, points, _between_arrays)
    return np.stack([np.stack(q, axis=-1) for q in out], axis=1)


def untwist_floats(chain: Chain, pose: list[Any] | None, points: list[Any]) -> list[Any]:
    """:func:`untwist` of one pose in plain floats: ``pose`` ``n`` rotations (4 floats
    each), ``points`` its ``n + 1`` joints (3 floats each); returns ``n`` rotations.

    ``pose`` may be ``None`` when every joint is re-aimed (:func:`aims_every_joint`): the
    rotations then come from the positions alone."""
    first, rests, offsets = _untwist_plan(chain)
    n = len(rests)
    if pose is None:
        if first:
            raise ValueError("a pose is needed: not every joint of the chain is re-aimed")
        pose = [_IDENTITY] * n
    if first == n:
        return pose
    # _untwist_pose's steps, written out on floats (this runs for every chain every frame):
    # the same operations in the same order as qmul, qrotate and _between_floats.
    out = list(pose)
    ww, wx, wy, wz = 1.0, 0.0, 0.0, 0.0
    for i in range(n):
        rw, rx, ry, rz = rests[i]
        pw = ww * rw - wx * rx - wy * ry - wz * rz
        px = ww * rx + wx * rw + wy * rz - wz * ry
        py = ww * ry - wx * rz + wy * rw + wz * rx
        pz = ww * rz + wx * ry - wy * rx + wz * rw
        if i >= first:
            a, b = points[i], points[i + 1]
            v0, v1, v2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
            # the link in the parent's frame: qrotate(conj(parent), link)
            t0 = ((-py) * v2 - (-pz) * v1) * 2.0
            t1 = ((-pz) * v0 - (-px) * v2) * 2.0
            t2 = ((-px) * v1 - (-py) * v0) * 2.0
            out[i] = _between_floats(
                offsets[i],
                (
                    v0 + t0 * pw + ((-py) * t2 - (-pz) * t1),
                    v1 + t1 * pw + ((-pz) * t0 - (-px) * t2),
                    v2 + t2 * pw + ((-px) * t1 - (-py) * t0),
                ),
            )
        if i + 1 == n:
            break
        qw, qx, qy, qz = out[i]
        ww = pw * qw - px * qx - py * qy - pz * qz
        wx = pw * qx + px * qw + py * qz - pz * qy
        wy = pw * qy - px * qz + py * qw + pz * qx
        wz = pw * qz + px * qy - py * qx + pz * qw
    return out


def aims_every_joint(chain: Chain) -> bool:
    """:func:`untwist` re-aims every joint of ``chain`` (all are free), so a solve's joint
    positions alone give the untwisted rotations."""
    return _untwist_plan(chain)[0] == 0


_IDENTITY = (1.0, 0.0, 0.0, 0.0)
_plans: dict[int, tuple[Chain, int, list[Any], list[Any]]] = {}


def _untwist_plan(chain: Chain) -> tuple[int, list[Any], list[Any]]:
    """For :func:`untwist`: the first joint re-aimed (``n``: none), the rest rotations and
    offsets as plain floats; cached per chain (live solving asks every frame)."""
    hit = _plans.get(id(chain))
    if hit is not None and hit[0] is chain:
        return hit[1], hit[2], hit[3]
    first = chain.n_joints
    while first > 0 and chain.limits[first - 1].is_free:
        first -= 1
    rests = [tuple(r) for r in chain.rest_rotations.tolist()]
    offsets = chain.offsets.tolist()
    if len(_plans) > 256:
        _plans.clear()
    _plans[id(chain)] = (chain, first, rests, offsets)
    return first, rests, offsets


def _untwist_pose(
    first: int,
    rests: list[Any],
    offsets: list[Any],
    pose: list[Any],
    points: list[Any],
    between: Any,
) -> list[Any]:
    """:func:`untwist`'s steps on components (floats, or ``(N,)`` arrays, with the matching
    ``between``): ``pose`` the ``n`` rotations as ``(w, x, y, z)``, ``points`` the ``n + 1``
    joints as ``(x, y, z)``."""
    out = list(pose)
    world: Any = (1.0, 0.0, 0.0, 0.0)
    for i in range(len(out)):
        parent = qmul(world, rests[i])
        if i >= first:
            a, b = points[i], points[i + 1]
            link = (b[0] - a[0], b[1] - a[1], b[2] - a[2])
            out[i] = between(offsets[i], qrotate(qconj(parent), link))
        world = qmul(parent, out[i])
    return out


# Shortest-arc unit quaternion taking the direction ``a`` (3 floats) to ``b``, as
# :func:`core.rotations.between`: the identity for a zero vector, a half turn about a
# perpendicular axis for opposite directions; ``1 + dot`` is written as
# ``|a × b|² / (1 − dot)`` where ``dot < 0`` (no cancellation). ``_between_floats`` for
# ``b`` as 3 floats, ``_between_arrays`` for ``b`` as 3 ``(N,)`` arrays: the same
# arithmetic, so one pose gives the same numbers either way.


def _between_floats(a: Sequence[float], b: Sequence[float]) -> tuple[float, ...]:
    a0, a1, a2 = a
    na = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    if na == 0.0:
        return (1.0, 0.0, 0.0, 0.0)
    u0, u1, u2 = a0 / na, a1 / na, a2 / na
    b0, b1, b2 = b
    nb = (b0 * b0 + b1 * b1 + b2 * b2) ** 0.5
    scale = 1.0 / (nb if nb > 0.0 else 1.0)
    v0, v1, v2 = b0 * scale, b1 * scale, b2 * scale
    dot = u0 * v0 + u1 * v1 + u2 * v2
    cx = u1 * v2 - u2 * v1
    cy = u2 * v0 - u0 * v2
    cz = u0 * v1 - u1 * v0
    cross_sq = cx * cx + cy * cy + cz * cz
    if dot < 0.0:
        w = cross_sq / (1.0 - dot)
        if cross_sq < 1e-24:
            w = 0.0
            cx, cy, cz = rot.perpendicular(np.array([u0, u1, u2])).tolist()
    else:
        w = 1.0 + dot
    norm = (w * w + cx * cx + cy * cy + cz * cz) ** 0.5
    return (w / norm, cx / norm, cy / norm, cz / norm)


def _between_arrays(a: Sequence[float], b: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    na = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if na == 0.0:
        one = np.ones_like(b[0])
        return (one, 0.0 * one, 0.0 * one, 0.0 * one)
    ua = [c / na for c in a]
    nb = (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]) ** 0.5
    scale = 1.0 / np.where(nb > 0.0, nb, 1.0)
    ub = [c * scale for c in b]
    dot = ua[0] * ub[0] + ua[1] * ub[1] + ua[2] * ub[2]
    cx = ua[1] * ub[2] - ua[2] * ub[1]
    cy = ua[2] * ub[0] - ua[0] * ub[2]
    cz = ua[0] * ub[1] - ua[1] * ub[0]
    cross_sq = cx * cx + cy * cy + cz * cz
    behind = dot < 0.0
    w = np.where(behind, cross_sq / np.where(behind, 1.0 - dot, 1.0), 1.0 + dot)
    opposite = behind & (cross_sq < 1e-24)
    if opposite.any():
        axis = rot.perpendicular(np.array(ua)).tolist()
        w = np.where(opposite, 0.0, w)
        cx, cy, cz = (np.where(opposite, axis[k], c) for k, c in enumerate((cx, cy, cz)))
    norm = (w * w + cx * cx + cy * cy + cz * cz) ** 0.5
    return (w / norm, cx / norm, cy / norm, cz / norm)
