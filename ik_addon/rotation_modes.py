# SPDX-License-Identifier: GPL-3.0-or-later
"""Rotation modes: reading and writing a pose bone's rotation channels in its mode.

Quaternion (sign kept continuous with the current value), every Euler order (continuous
with the current value, like Blender's ``Euler.make_compatible``) and axis-angle; and the
FK pose of a chain read from those channels (:func:`fk_rotations`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
from mathutils import Euler, Quaternion

from ..core import rotations as rot

if TYPE_CHECKING:
    import bpy

    from .blender_types import ChainBone

ROTATION_MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")


# ``pose_bone`` below is untyped: the stubs' ``Quaternion`` and ``bpy_prop_array`` (the
# rotation channels) can be neither unpacked nor assigned a tuple.
def read_rotation(pose_bone: Any) -> tuple[float, float, float, float]:
    """The pose bone's rotation values in its mode, as 4 floats.

    Quaternion ``(w, x, y, z)``; Euler ``(x, y, z, 0)``; axis-angle ``(angle, x, y, z)``.
    """
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        w, x, y, z = pose_bone.rotation_quaternion
        return (w, x, y, z)
    if mode == "AXIS_ANGLE":
        angle, x, y, z = pose_bone.rotation_axis_angle
        return (angle, x, y, z)
    e = pose_bone.rotation_euler
    return (e[0], e[1], e[2], 0.0)


def write_rotation(pose_bone: Any, values: Iterable[float]) -> None:
    """Set the pose bone's rotation from 4 values in its mode (see :func:`read_rotation`)."""
    v = tuple(values)
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        pose_bone.rotation_quaternion = v
    elif mode == "AXIS_ANGLE":
        pose_bone.rotation_axis_angle = v
    else:
        pose_bone.rotation_euler = v[:3]


def values_to_quaternion(mode: str, values: Iterable[float]) -> np.ndarray:
    """Unit quaternion ``(4,)`` wxyz from rotation values in ``mode`` (identity if empty)."""
    return np.array(_quaternion_of(mode, values))


def _quaternion_of(mode: str, values: Iterable[float]) -> tuple[float, float, float, float]:
    """:func:`values_to_quaternion` as 4 floats (no values, an axis-angle's axis or a
    quaternion of length below 1e-12, or not finite, give the identity)."""
    v = tuple(values)
    if not v:
        return (1.0, 0.0, 0.0, 0.0)
    if mode == "QUATERNION":
        w, x, y, z = v[0], v[1], v[2], v[3]
    elif mode == "AXIS_ANGLE":
        ax, ay, az = v[1], v[2], v[3]
        length = math.sqrt(ax * ax + ay * ay + az * az)
        if not length >= 1e-12:
            return (1.0, 0.0, 0.0, 0.0)
        s = math.sin(0.5 * v[0]) / length
        w, x, y, z = math.cos(0.5 * v[0]), ax * s, ay * s, az * s
    else:
        e = Euler(v[:3], mode).to_quaternion()
        w, x, y, z = e.w, e.x, e.y, e.z
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if not math.isfinite(norm) or norm < 1e-12:
        return (1.0, 0.0, 0.0, 0.0)
    return (w / norm, x / norm, y / norm, z / norm)


def quaternion_to_values(
    q: np.ndarray, mode: str, reference: Iterable[float]
) -> tuple[float, float, float, float]:
    """Rotation values in ``mode`` for the unit quaternion ``q (4,)``, continuous with
    ``reference`` (4 values in the same mode, e.g. the bone's current value).

    Quaternion: the sign closer to the reference. Euler: the equivalent angles closest to
    the reference (``Quaternion.to_euler(order, compatible)``). Axis-angle: the axis on the
    reference's side and the angle within π of the reference angle.
    """
    ref = tuple(reference)
    if mode == "QUATERNION":
        s = -1.0 if float(np.dot(q, ref)) < 0.0 else 1.0
        return (s * q[0], s * q[1], s * q[2], s * q[3])
    if mode == "AXIS_ANGLE":
        axis, angle = rot.to_axis_angle(q)
        ref_axis = np.asarray(ref[1:])
        if float(angle) < 1e-12 and np.linalg.norm(ref_axis) > 1e-12:
            axis = ref_axis / np.linalg.norm(ref_axis)
        elif float(np.dot(axis, ref_axis)) < 0.0:
            axis, angle = -axis, -angle
        angle = float(angle) + 2.0 * math.pi * round((ref[0] - float(angle)) / (2.0 * math.pi))
        return (angle, float(axis[0]), float(axis[1]), float(axis[2]))
    order: Any = mode  # an Euler order: the stubs take it only as a literal
    e = Quaternion(q.tolist()).to_euler(order, Euler(ref[:3], order))
    return (e[0], e[1], e[2], 0.0)


def fk_rotations(
    pose_bones: bpy.types.bpy_prop_collection[ChainBone], names: Iterable[str]
) -> np.ndarray:
    """The FK rotations ``(n, 4)`` wxyz (basis space) of the bones ``names``: their rotation
    channels (of the evaluated armature: as animated)."""
    bones = [pose_bones[n] for n in names]
    return np.array([_quaternion_of(pb.rotation_mode, read_rotation(pb)) for pb in bones])
