# SPDX-License-Identifier: GPL-3.0-or-later
"""Rigs and helpers shared by the real-Blender tests (imports ``bpy`` lazily)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

ARM_BONES = ("shoulder", "upper", "fore", "hand")


def blender_module() -> Any:
    """``bpy``, untyped: the tests drive Blender's API dynamically."""
    import importlib

    return importlib.import_module("bpy")


def world_matrix(obj: Any, bone: str) -> np.ndarray:
    """Blender's own evaluated world matrix ``(4, 4)`` of a pose bone."""
    bpy = blender_module()

    depsgraph = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(depsgraph)
    return np.array(ev.matrix_world, dtype=np.float64) @ np.array(
        ev.pose.bones[bone].matrix, dtype=np.float64
    )


def shown_rotation(obj: Any, bone: str) -> np.ndarray:
    """The local rotation ``(4,)`` wxyz (``w >= 0``) that Blender's evaluated pose shows for
    a bone, in its basis space (what its rotation channels would hold to pose it so without
    constraints): ``(M_parent · R_parent⁻¹ · R)⁻¹ · M`` from the evaluated pose matrices
    ``M`` and rest matrices ``R``."""
    bpy = blender_module()
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    pb = ev.pose.bones[bone]
    rest = np.array(pb.bone.matrix_local, dtype=np.float64)
    if pb.parent is not None:
        parent_rest = np.array(pb.parent.bone.matrix_local, dtype=np.float64)
        rest = np.array(pb.parent.matrix, dtype=np.float64) @ np.linalg.inv(parent_rest) @ rest
    local = np.linalg.inv(rest) @ np.array(pb.matrix, dtype=np.float64)
    basis = local[:3, :3] / np.linalg.norm(local[:3, :3], axis=0)
    from mathutils import Matrix

    q = np.array(Matrix(basis.tolist()).to_quaternion(), dtype=np.float64)
    return q if q[0] >= 0.0 else -q


def tail_world(obj: Any, bone: str) -> np.ndarray:
    """World position ``(3,)`` of a pose bone's tail, from Blender's evaluated pose."""
    m = world_matrix(obj, bone)
    length = obj.data.bones[bone].length
    return (m @ np.array([0.0, length, 0.0, 1.0]))[:3]


def head_world(obj: Any, bone: str) -> np.ndarray:
    return world_matrix(obj, bone)[:3, 3]


def select_only(obj: Any, names: list[str], active: str) -> None:
    """Select exactly these pose bones and make ``active`` the active bone (4.2–5.x)."""
    for pb in obj.pose.bones:
        state = pb.name in names
        if hasattr(pb, "select"):
            pb.select = state
        else:
            pb.bone.select = state
    obj.data.bones.active = obj.data.bones[active]


def new_armature(name: str) -> Any:
    """A new armature object ``name`` (data of the same name) in the scene, active and
    selected, in object mode."""
    bpy = blender_module()

    obj = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    return obj


def build_arm(
    name: str = "Arm",
    *,
    location: tuple[float, float, float] = (0.3, -0.2, 0.5),
    rotation: tuple[float, float, float] = (0.3, -0.2, 0.7),
    scale: float = 1.5,
) -> Any:
    """A hand-built arm with rolls, a disconnected upper arm and a gap before the hand.

    Bones: ``shoulder`` (root, the chain's parent) → ``upper`` (disconnected, offset from the
    shoulder's tail) → ``fore`` (connected) → ``hand`` (disconnected, 2 cm gap). The object
    is moved, rotated and uniformly scaled. Leaves the object active in pose mode.
    """
    bpy = blender_module()

    obj = new_armature(name)
    arm = obj.data
    obj.location = location
    obj.rotation_euler = rotation
    obj.scale = (scale, scale, scale)
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.edit_bones
    shoulder = eb.new("shoulder")
    shoulder.head, shoulder.tail, shoulder.roll = (0, 0, 1.0), (0.15, 0.02, 1.02), 0.4
    upper = eb.new("upper")
    upper.head, upper.tail, upper.roll = (0.18, 0.03, 1.0), (0.45, 0.08, 0.9), -0.6
    upper.parent = shoulder
    fore = eb.new("fore")
    fore.head, fore.tail, fore.roll = (0.45, 0.08, 0.9), (0.7, 0.02, 0.82), 1.1
    fore.parent, fore.use_connect = upper, True
    hand = eb.new("hand")
    hand.head, hand.tail, hand.roll = (0.72, 0.02, 0.81), (0.8, 0.0, 0.79), 0.2
    hand.parent = fore
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def add_empty(name: str, location: Any) -> Any:
    bpy = blender_module()

    empty = bpy.data.objects.new(name, None)
    empty.location = location
    bpy.context.scene.collection.objects.link(empty)
    return empty


def chain_length(obj: Any, names: tuple[str, ...]) -> float:
    """Sum of the world distances between consecutive joints and the tip's tail at rest."""
    bones = obj.data.bones
    s = max(abs(v) for v in obj.matrix_world.to_scale())
    pts = [np.array(bones[n].head_local) for n in names] + [np.array(bones[names[-1]].tail_local)]
    return float(sum(np.linalg.norm(b - a) for a, b in itertools.pairwise(pts)) * s)
