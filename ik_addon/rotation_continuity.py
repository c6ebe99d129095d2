# SPDX-License-Identifier: GPL-3.0-or-later
"""Baked rotations as rotation-channel values, continuous from frame to frame (pure numpy).

A bake (:mod:`.keying`) keys the basis rotations ``q (F, 4)`` (unit quaternions wxyz, one
per frame) in the channels of each bone's ``rotation_mode``: ``rotation_quaternion``
(w, x, y, z), ``rotation_axis_angle`` (angle, x, y, z) or ``rotation_euler`` (x, y, z
radians, in the bone's Euler order). :func:`channel_values` gives those values.

Continuity follows Blender's own bake (``bpy_extras.anim_utils.bake_action_iter``): each
quaternion takes the sign closest to the previous frame's (``Quaternion.make_compatible``),
each Euler triple the equivalent closest to the previous one (``Matrix.to_euler(order,
compat)``: both Euler solutions, each wrapped by whole turns to within π of the previous,
the closer one kept). The first baked frame continues from the key just before the range
(or, when there is none, the last one continues into the key just after it).
"""

from __future__ import annotations

import numpy as np

from ..core import rotations as rot
from ..core.rotations import FloatArray


def quaternion_continuous(q: FloatArray, previous: FloatArray | None = None) -> FloatArray:
    """``q (F, 4)`` with signs flipped so that consecutive quaternions have ``dot >= 0``.

    ``previous (4,)`` is the value before the first frame (its sign decides the first
    quaternion's); without it the first quaternion gets ``w >= 0``.
    """
    q = np.asarray(q, dtype=np.float64)
    if q.shape[0] == 0:
        return q.copy()
    step = np.ones(q.shape[0])
    step[1:] = np.where(np.sum(q[1:] * q[:-1], axis=-1) < 0.0, -1.0, 1.0)
    first = q[0, 0] if previous is None else float(np.dot(q[0], previous))
    if first < 0.0:
        step[0] = -1.0
    return q * np.cumprod(step)[:, None]


def _euler_alternative(e: FloatArray, order: str) -> FloatArray:
    """The other Euler triple ``(..., 3)`` (x, y, z) of the same rotation as ``e``.

    For ``R = R_k(c) R_j(b) R_i(a)`` (``order`` = i j k) the other solution is
    ``(a + π, π − b, c + π)`` up to whole turns.
    """
    i, j, k = ("XYZ".index(axis) for axis in order)
    alt = np.array(e, dtype=np.float64, copy=True)
    alt[..., i] += np.pi
    alt[..., j] = np.pi - alt[..., j]
    alt[..., k] += np.pi
    return alt


def _wrap_towards(e: FloatArray, old: FloatArray) -> FloatArray:
    """``e (..., 3)`` with each angle moved by whole turns to within π of ``old``.

    Blender's ``compatible_eul``: only differences beyond π are wrapped.
    """
    d = e - old
    turns = np.where(np.abs(d) > np.pi, np.floor(np.abs(d) / (2.0 * np.pi) + 0.5), 0.0)
    return e - np.sign(d) * turns * 2.0 * np.pi


def euler_continuous(
    q: FloatArray, order: str, previous: FloatArray | None = None, *, backwards: bool = False
) -> FloatArray:
    """Euler angles ``(F, 3)`` (x, y, z radians) of ``q (F, 4)``, each close to its neighbour.

    Frame by frame, both Euler solutions are wrapped towards the previous triple and the
    one with the smaller summed difference is kept (Blender's ``Matrix.to_euler(order,
    compat)``). ``previous (3,)`` seeds the first frame (the last one when ``backwards``,
    which walks from the end towards the start); without a seed the first frame takes the
    solution with the smaller summed magnitude, as Blender's ``to_euler`` does.
    """
    e1 = rot.to_euler(q, order)
    e2 = _euler_alternative(e1, order)
    e2 = (e2 + np.pi) % (2.0 * np.pi) - np.pi
    count = e1.shape[0]
    out = np.empty_like(e1)
    indices = range(count - 1, -1, -1) if backwards else range(count)
    old = None if previous is None else np.asarray(previous, dtype=np.float64)
    for f in indices:
        if old is None:
            pick = e2[f] if np.sum(np.abs(e1[f])) > np.sum(np.abs(e2[f])) else e1[f]
        else:
            a = _wrap_towards(e1[f], old)
            b = _wrap_towards(e2[f], old)
            pick = b if np.sum(np.abs(a - old)) > np.sum(np.abs(b - old)) else a
        out[f] = pick
        old = pick
    return out


def axis_angle_continuous(q: FloatArray, previous: FloatArray | None = None) -> FloatArray:
    """Blender axis–angle ``(F, 4)`` = (angle, x, y, z) of ``q (F, 4)``, continuous.

    The quaternions are made sign-continuous first (``previous`` is an axis–angle value
    ``(4,)`` before the first frame), so the angle runs continuously through ``[0, 2π]``.
    Where the angle is zero the axis is undefined: it keeps the neighbouring axis
    (Blender's default +Y when there is none).
    """
    seed = None
    if previous is not None:
        p = np.asarray(previous, dtype=np.float64)
        seed = rot.from_axis_angle(p[1:], p[0]) if np.linalg.norm(p[1:]) > 0 else None
    q = quaternion_continuous(q, seed)
    sin_half = np.linalg.norm(q[:, 1:], axis=-1)
    angle = 2.0 * np.arctan2(sin_half, q[:, 0])
    defined = sin_half > 1e-12
    axis = np.divide(
        q[:, 1:], sin_half[:, None], out=np.zeros_like(q[:, 1:]), where=defined[:, None]
    )
    if not np.all(defined):
        idx = np.where(defined, np.arange(len(q)), -1)
        np.maximum.accumulate(idx, out=idx)
        fallback = np.array([0.0, 1.0, 0.0])
        if seed is not None:
            fallback = np.asarray(previous, dtype=np.float64)[1:]
            fallback = fallback / np.linalg.norm(fallback)
        axis = np.where(idx[:, None] >= 0, axis[np.maximum(idx, 0)], fallback)
    return np.concatenate([angle[:, None], axis], axis=-1)


def channel_values(
    rotation_mode: str,
    q: FloatArray,
    before: FloatArray | None = None,
    after: FloatArray | None = None,
) -> FloatArray:
    """Channel values ``(F, k)`` for ``rotation_mode`` of basis rotations ``q (F, 4)``.

    ``before``/``after`` ``(k,)`` are the channel values of the kept keys just before and
    just after the baked range (``None`` when there is none); the baked values continue
    from ``before``, or lead into ``after`` when there is nothing before.
    """
    if rotation_mode == "QUATERNION":
        out = quaternion_continuous(q, before)
        if before is None and after is not None and float(np.dot(out[-1], after)) < 0.0:
            out = -out
        return out
    if rotation_mode == "AXIS_ANGLE":
        return axis_angle_continuous(q, before)
    if before is None and after is not None:
        return euler_continuous(q, rotation_mode, after, backwards=True)
    return euler_continuous(q, rotation_mode, before)
