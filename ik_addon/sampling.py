# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading a bake's inputs from F-curves, without setting every frame.

Setting a frame re-evaluates the whole scene. A bake only needs a few matrices — the
armature's, a few bones' and its targets' — and when those follow from their own F-curves
alone they can be computed for all frames at once. This is used only where it gives what
Blender evaluates, and the bake checks it against Blender's evaluation (first and last
frame) before relying on it:

* :class:`Curves` / :func:`plain_animation` — the F-curves of an ID whose animation is one
  action replacing at full influence: no drivers, NLA, tweak mode, muted curves, layers or
  strips beyond the first, or manual frame range. Values are :meth:`FCurve.evaluate` — the
  function Blender's animation system calls — or the ID's own value where not animated.
* :func:`object_matrices` — world matrices ``(F, 4, 4)`` of an object so animated, without
  parent, constraints or delta transforms: ``T · R · S`` from its channels, in its
  rotation mode.
* :func:`pose_matrices` — posed matrices ``(F, 4, 4)`` (armature space) of some bones and
  their parents, from the armature's F-curves: ``M = M_parent · (R_parent⁻¹ · R) · B``
  (``R`` = ``bone.matrix_local``, ``B`` = the basis from the bone's channels, without
  location for a bone connected to its parent), Blender's
  composition for bones that inherit rotation and full scale with local location and have
  no constraints; the armature object and data must have no other animation effect.

Each returns ``None`` when it does not apply; the bake then sets every frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import bpy
import numpy as np

from ..core import rotations as rot
from . import affine
from .blender_types import ArmatureObject

_LAYERED_ACTIONS = bpy.app.version >= (4, 4, 0)

#: Transform channels and their sizes.
_CHANNELS = {
    "location": 3,
    "rotation_euler": 3,
    "rotation_quaternion": 4,
    "rotation_axis_angle": 4,
    "scale": 3,
}


def _no_effect(adt: bpy.types.AnimData | None) -> bool:
    """Animation data that changes nothing over time."""
    return adt is None or (adt.action is None and not adt.drivers and not adt.nla_tracks)


def _plain_time() -> bool:
    """The scene plays its frames as they are (no time remapping)."""
    scene = bpy.context.scene
    if scene is None:  # no scene to play: nothing to say the frames are plain
        return False
    return bool(scene.render.frame_map_old == scene.render.frame_map_new)


def _action_fcurves(adt: bpy.types.AnimData) -> list[bpy.types.FCurve] | None:
    """The F-curves of the assigned action (and slot), or ``None`` when that is not one
    plain set of curves (several layers or strips, a manual frame range)."""
    action = adt.action
    if action is None:  # no action: no curves
        return []
    if getattr(action, "use_frame_range", False):
        return None
    if not _LAYERED_ACTIONS:
        legacy: Any = action  # Blender 4.2/4.3: Action.fcurves, not in the 5.0 stubs
        return list(legacy.fcurves)
    slot = adt.action_slot
    if slot is None:
        return []
    if len(action.layers) > 1:
        return None
    curves: list[bpy.types.FCurve] = []
    for layer in action.layers:
        if len(layer.strips) > 1:
            return None
        for strip in layer.strips:
            if not isinstance(strip, bpy.types.ActionKeyframeStrip):  # the only kind yet
                return None
            bag = strip.channelbag(slot)
            if bag is not None:
                curves.extend(bag.fcurves)
    return curves


class Curves:
    """An ID's F-curves by ``(data path, index)``, evaluated over many frames."""

    def __init__(self, fcurves: Iterable[bpy.types.FCurve]) -> None:
        self.fcurves = {(fc.data_path, fc.array_index): fc for fc in fcurves}
        self.paths = {path for path, _ in self.fcurves}

    def values(self, path: str, static: Sequence[float], frames: np.ndarray) -> np.ndarray:
        """``(F, len(static))`` values of the property at ``path``: each index from its
        F-curve, or ``static`` (the property's own value) where it has none."""
        out = np.tile(np.asarray(static, dtype=np.float64), (frames.shape[0], 1))
        if path in self.paths:
            for i in range(out.shape[1]):
                fcurve = self.fcurves.get((path, i))
                if fcurve is not None:
                    evaluate = fcurve.evaluate
                    out[:, i] = [evaluate(f) for f in frames.tolist()]
        return out


def plain_animation(id_data: bpy.types.Object) -> Curves | None:
    """The ID's :class:`Curves` (none when nothing animates it), or ``None`` when its
    animation is more than one plain action (module docstring)."""
    if not _plain_time():
        return None
    adt = id_data.animation_data
    if adt is None or _no_effect(adt):
        return Curves(())
    if adt.drivers or adt.nla_tracks or adt.use_tweak_mode:
        return None
    if adt.action_blend_type != "REPLACE" or adt.action_influence != 1.0:
        return None
    fcurves = _action_fcurves(adt)
    if fcurves is None:
        return None
    for fcurve in fcurves:
        if fcurve.mute or (fcurve.group is not None and fcurve.group.mute):
            return None
    return Curves(fcurves)


def basis_matrices(
    curves: Curves, prefix: str, owner: bpy.types.Object | bpy.types.PoseBone, frames: np.ndarray
) -> np.ndarray | None:
    """``T · R · S`` matrices ``(F, 4, 4)`` of an object or pose bone (``owner``) from its
    channels (data paths ``prefix + "location"`` …), or ``None`` if its rotation mode is
    animated."""
    if prefix + "rotation_mode" in curves.paths:
        return None
    values = {
        name: curves.values(prefix + name, tuple(getattr(owner, name)), frames)
        for name in _CHANNELS
    }
    mode = owner.rotation_mode
    if mode == "QUATERNION":
        q = rot.normalize(values["rotation_quaternion"])
    elif mode == "AXIS_ANGLE":
        angle_axis = values["rotation_axis_angle"]
        axis = angle_axis[:, 1:]
        norm = np.linalg.norm(axis, axis=-1, keepdims=True)
        default = np.tile([0.0, 1.0, 0.0], (len(axis), 1))
        axis = np.divide(axis, norm, out=default, where=norm > 0)
        q = rot.from_axis_angle(axis, angle_axis[:, 0])
    else:
        q = rot.from_euler(values["rotation_euler"], mode)
    m = np.zeros((q.shape[0], 4, 4))
    m[:, :3, :3] = rot.to_matrix(q) * values["scale"][:, None, :]
    m[:, :3, 3] = values["location"]
    m[:, 3, 3] = 1.0
    return m


def object_matrices(
    obj: bpy.types.Object, frames: np.ndarray, depsgraph: bpy.types.Depsgraph
) -> np.ndarray | None:
    """World matrices ``(F, 4, 4)`` of ``obj`` at ``frames (F,)`` from its F-curves, or
    ``None`` when its transform depends on more than its own action (module docstring).

    An object without animation keeps the world matrix it has in ``depsgraph``.
    """
    if obj.parent is not None or len(obj.constraints):
        return None
    # (A mathutils slice is a tuple of the values.)
    if any(obj.delta_location[:]) or any(obj.delta_rotation_euler[:]):
        return None
    if obj.delta_rotation_quaternion[:] != (1.0, 0.0, 0.0, 0.0):
        return None
    if obj.delta_scale[:] != (1.0, 1.0, 1.0):
        return None
    curves = plain_animation(obj)
    if curves is None or any(p.startswith("delta_") for p in curves.paths):
        return None
    if not curves.paths & {*_CHANNELS, "rotation_mode"}:
        still = np.array(obj.evaluated_get(depsgraph).matrix_world, dtype=np.float64)
        return np.repeat(still[None], frames.shape[0], axis=0)
    return basis_matrices(curves, "", obj, frames)


def bone_path(name: str) -> str:
    """The data path prefix of a pose bone's properties."""
    return f'pose.bones["{bpy.utils.escape_identifier(name)}"].'


def _plain_bone(obj: ArmatureObject, name: str) -> bool:
    """The bone composes as ``M_parent · (R_parent⁻¹ · R) · B`` (module docstring)."""
    bone = obj.data.bones[name]
    return (
        not len(obj.pose.bones[name].constraints)
        and bone.use_inherit_rotation
        and bone.inherit_scale == "FULL"
        and bone.use_local_location
        and not getattr(bone, "use_relative_parent", False)
    )


def pose_matrices(
    obj: ArmatureObject, curves: Curves, names: Iterable[str], frames: np.ndarray
) -> dict[str, np.ndarray] | None:
    """Posed matrices ``(F, 4, 4)`` (armature space) of ``names`` and every bone above them,
    from the armature's :class:`Curves`; ``None`` when one of them does not qualify or the
    armature data is animated (module docstring)."""
    if not _no_effect(getattr(obj.data, "animation_data", None)):
        return None
    out: dict[str, np.ndarray] = {}

    def posed(name: str) -> np.ndarray | None:
        if name in out:
            return out[name]
        if not _plain_bone(obj, name):
            return None
        bone = obj.data.bones[name]
        basis = basis_matrices(curves, bone_path(name), obj.pose.bones[name], frames)
        if basis is None:
            return None
        if bone.use_connect:
            basis[:, :3, 3] = 0.0  # a connected bone's location does not move it
        rest = np.array(bone.matrix_local, dtype=np.float64)
        if bone.parent is None:
            m = rest @ basis
        else:
            parent = posed(bone.parent.name)
            if parent is None:
                return None
            offset = affine.invert(np.array(bone.parent.matrix_local, dtype=np.float64)) @ rest
            m = parent @ (offset @ basis)
        out[name] = m
        return m

    for name in names:
        if posed(name) is None:
            return None
    return out
