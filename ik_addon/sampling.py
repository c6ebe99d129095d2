# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading a bake's inputs from F-curves, without setting every frame.

Setting a frame re-evaluates the whole scene; a bake that only needs the world matrices of
a few target empties can read their F-curves instead. This is used only where it gives
exactly what Blender evaluates, and is checked against Blender's evaluation by the bake:

* :func:`is_still` — an armature that does not move at all over time: no animation data
  effect (no action, drivers or NLA) on the object or its armature data, no parent, no
  constraints on the object or any pose bone;
* :func:`object_matrices` — world matrices ``(F, 4, 4)`` of an object animated only by its
  own action (no parent, constraints, drivers, NLA or delta transforms; the action
  replaces at full influence): ``T · R · S`` from the location, rotation (in the object's
  rotation mode) and scale channels, each evaluated with ``FCurve.evaluate`` — the very
  function Blender's animation system calls — or taken from the object where not animated.

Both return ``None``/``False`` when they do not apply; the caller then sets every frame.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from ..core import rotations as rot

_LAYERED_ACTIONS = bpy.app.version >= (4, 4, 0)

#: Object transform channels and their sizes.
_CHANNELS = {
    "location": 3,
    "rotation_euler": 3,
    "rotation_quaternion": 4,
    "rotation_axis_angle": 4,
    "scale": 3,
}


def _no_effect(adt: Any) -> bool:
    """Animation data that changes nothing over time."""
    return adt is None or (adt.action is None and not adt.drivers and not adt.nla_tracks)


def _plain_time(scene: Any) -> bool:
    """The scene plays its frames as they are (no time remapping)."""
    return scene.render.frame_map_old == scene.render.frame_map_new


def is_still(obj: Any) -> bool:
    """``obj`` (an armature) evaluates the same at every frame; see the module docstring."""
    if not _plain_time(bpy.context.scene):
        return False
    if obj.parent is not None or len(obj.constraints) or not _no_effect(obj.animation_data):
        return False
    if not _no_effect(getattr(obj.data, "animation_data", None)):
        return False
    return obj.pose is None or not any(len(pb.constraints) for pb in obj.pose.bones)


def _fcurves(adt: Any) -> list[Any] | None:
    """The F-curves that animate the object, or ``None`` when that is not just one action's
    single set of curves (several layers or strips, a manual frame range)."""
    action = adt.action
    if getattr(action, "use_frame_range", False):
        return None
    if not _LAYERED_ACTIONS:
        return list(action.fcurves)
    slot = adt.action_slot
    if slot is None:
        return []
    if len(action.layers) > 1:
        return None
    bags = []
    for layer in action.layers:
        if len(layer.strips) > 1:
            return None
        for strip in layer.strips:
            bag = strip.channelbag(slot)
            if bag is not None:
                bags.append(bag)
    return [fc for bag in bags for fc in bag.fcurves]


def object_matrices(obj: Any, frames: np.ndarray, depsgraph: Any) -> np.ndarray | None:
    """World matrices ``(F, 4, 4)`` of ``obj`` at ``frames (F,)`` from its F-curves, or
    ``None`` when its transform depends on more than its own action (module docstring).

    An object without animation keeps the world matrix it has in ``depsgraph``.
    """
    if obj.parent is not None or len(obj.constraints) or not _plain_time(bpy.context.scene):
        return None
    if any(obj.delta_location) or any(obj.delta_rotation_euler):
        return None
    if tuple(obj.delta_rotation_quaternion) != (1.0, 0.0, 0.0, 0.0):
        return None
    if tuple(obj.delta_scale) != (1.0, 1.0, 1.0):
        return None
    count = frames.shape[0]
    adt = obj.animation_data
    if _no_effect(adt):
        still = np.array(obj.evaluated_get(depsgraph).matrix_world, dtype=np.float64)
        return np.repeat(still[None], count, axis=0)
    if adt.drivers or adt.nla_tracks or adt.use_tweak_mode:
        return None
    if adt.action_blend_type != "REPLACE" or adt.action_influence != 1.0:
        return None
    fcurves = _fcurves(adt)
    if fcurves is None:
        return None
    values = {
        path: np.tile(np.array(getattr(obj, path), dtype=np.float64), (count, 1))
        for path in _CHANNELS
    }
    for fcurve in fcurves:
        path = fcurve.data_path
        if path.startswith("delta_") or path == "rotation_mode":
            return None
        if path not in _CHANNELS:
            continue
        if fcurve.mute or (fcurve.group is not None and fcurve.group.mute):
            return None
        if not 0 <= fcurve.array_index < _CHANNELS[path]:
            continue
        evaluate = fcurve.evaluate
        values[path][:, fcurve.array_index] = [evaluate(float(f)) for f in frames]
    return _compose(obj.rotation_mode, values)


def _compose(mode: str, values: dict[str, np.ndarray]) -> np.ndarray:
    """``T · R · S`` matrices ``(F, 4, 4)`` from per-frame channel values."""
    if mode == "QUATERNION":
        q = rot.normalize(values["rotation_quaternion"])
    elif mode == "AXIS_ANGLE":
        angle_axis = values["rotation_axis_angle"]
        axis = angle_axis[:, 1:]
        norm = np.linalg.norm(axis, axis=-1, keepdims=True)
        axis = np.divide(axis, norm, out=np.tile([0.0, 1.0, 0.0], (len(axis), 1)), where=norm > 0)
        q = rot.from_axis_angle(axis, angle_axis[:, 0])
    else:
        q = rot.from_euler(values["rotation_euler"], mode)
    count = q.shape[0]
    m = np.zeros((count, 4, 4))
    m[:, :3, :3] = rot.to_matrix(q) * values["scale"][:, None, :]
    m[:, :3, 3] = values["location"]
    m[:, 3, 3] = 1.0
    return m
