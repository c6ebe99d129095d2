# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's bundled demo scene, built in the open Blender file (:func:`build`).

The scene (frames ``1 … N``, 24 fps):

* **Human**: the Rigify human metarig (the bundled ``rigify`` add-on) with a Reach IK chain
  on each limb — ``forearm.L/R`` (upper arm + forearm, the wrist reaches) and ``shin.L/R``
  (thigh + shin, the ankle reaches), two bones each — reaching for animated empties: the
  hands trace figure-eights in front of the chest (partly beyond their reach, more so
  for the left), the feet step in ellipses, half a cycle apart, while the chest sways
  (FK keys on ``spine.002``, above both arm chains). Pole empties behind the elbows and in
  front of the knees keep the bends natural.
* **Paper chains** of the triangulation paper (Müller-Cajar & Mukundan 2007, section 4) as
  bone chains, scaled by 0.02 (1 unit = 2 cm): chain **U** (links 9, 9, 9, 9, 4, free
  joints, axis-angle rotations) and chain **C** (links 18, 18, 4; elbow limited to ±126°
  and wrist to ±90° through Blender's IK limits; Euler XZY rotations). Their targets sweep a
  Lissajous path through the paper's box of side 60 centred on the chain root, partly
  beyond reach (radius 40), as in the paper's experiment.

Every chain uses the default solver (triangulation when the core has it) unless
:func:`build` is given one. ``scripts/build_demo.py`` builds and saves it; ``scripts/demo.py``,
``scripts/bench_bake.py`` and the tests use these functions.
"""

from __future__ import annotations

import math
from typing import Any

from reach_ik_tools.blender_session import blender_module

#: Limb chains of the metarig: tip bone → (root bone, target name, pole name).
LIMBS = {
    "forearm.L": ("upper_arm.L", "hand_target.L", "elbow_pole.L"),
    "forearm.R": ("upper_arm.R", "hand_target.R", "elbow_pole.R"),
    "shin.L": ("thigh.L", "foot_target.L", "knee_pole.L"),
    "shin.R": ("thigh.R", "foot_target.R", "knee_pole.R"),
}

#: The chains the limbs' bones make (8 bones).
LIMB_BONES = tuple(b for tip, (root, _, _) in LIMBS.items() for b in (root, tip))

PAPER_SCALE = 0.02
PAPER_CHAINS = {
    "PaperU": ((9.0, 9.0, 9.0, 9.0, 4.0), (None,) * 5, "AXIS_ANGLE", (1.2, 0.0, 0.0)),
    "PaperC": ((18.0, 18.0, 4.0), (None, 126.0, 90.0), "XZY", (-1.2, 0.0, 0.0)),
}


def empty(name: str, location: Any, size: float = 0.05, shape: str = "SPHERE") -> Any:
    bpy = blender_module()

    obj = bpy.data.objects.new(name, None)
    obj.empty_display_type = shape
    obj.empty_display_size = size
    obj.location = location
    bpy.context.scene.collection.objects.link(obj)
    return obj


def key_path(obj: Any, frames: int, path: Any, every: int = 4) -> None:
    """Key ``obj.location = path(t)`` for ``t`` in ``[0, 1]`` every few frames (Bezier)."""
    for f in [*range(1, frames + 1, every), frames]:
        t = (f - 1) / max(frames - 1, 1)
        obj.location = path(t)
        obj.keyframe_insert("location", frame=f)


def add_metarig() -> Any:
    """The Rigify human metarig, named ``Human``, in object mode; returns it."""
    import addon_utils

    bpy = blender_module()

    addon_utils.enable("rigify", default_set=True)
    bpy.ops.object.armature_human_metarig_add()
    rig = bpy.context.object
    rig.name = "Human"
    return rig


def add_limb_goals(rig: Any, frames: int) -> dict[str, tuple[Any, Any]]:
    """Animated targets and fixed poles for the four limbs; tip → (target, pole)."""
    goals = {}
    cycles = max(frames / 120.0, 1.0)
    for tip, (_root, target_name, pole_name) in LIMBS.items():
        side = 1.0 if tip.endswith(".L") else -1.0
        if tip.startswith("forearm"):
            reach_out = 0.17 if side > 0 else 0.12

            def hand(t: float, s: float = side, a: float = reach_out) -> tuple[float, ...]:
                w = 2.0 * math.pi * cycles * t
                return (
                    s * (0.33 + a * math.sin(w)),
                    -0.24 + 0.06 * math.cos(w),
                    1.25 + 0.12 * math.sin(2.0 * w),
                )

            target = empty(target_name, hand(0.0))
            key_path(target, frames, hand)
            pole = empty(pole_name, (side * 0.45, 0.45, 1.3), 0.03, "CUBE")
        else:
            phase = 0.0 if side > 0 else math.pi

            def foot(t: float, s: float = side, p: float = phase) -> tuple[float, ...]:
                w = 2.0 * math.pi * cycles * t + p
                return (s * 0.1, 0.02 - 0.22 * math.sin(w), 0.2 + 0.1 * max(math.cos(w), 0.0))

            target = empty(target_name, foot(0.0))
            key_path(target, frames, foot)
            pole = empty(pole_name, (side * 0.1, -0.6, 0.55), 0.03, "CUBE")
        goals[tip] = (target, pole)
    return goals


def add_sway(rig: Any, frames: int) -> None:
    """Key a gentle twist and bend of the chest (``spine.002``): FK above the arm chains."""
    chest = rig.pose.bones["spine.002"]
    chest.rotation_mode = "QUATERNION"
    cycles = max(frames / 120.0, 1.0)
    for f in [*range(1, frames + 1, 12), frames]:
        w = 2.0 * math.pi * cycles * (f - 1) / max(frames - 1, 1)
        twist, bend = 0.2 * math.sin(w), 0.08 * math.sin(2.0 * w)
        q = (math.cos(bend / 2) * math.cos(twist / 2), math.sin(bend / 2) * math.cos(twist / 2))
        chest.rotation_quaternion = (
            q[0],
            q[1],
            math.cos(bend / 2) * math.sin(twist / 2),
            math.sin(bend / 2) * math.sin(twist / 2),
        )
        chest.keyframe_insert("rotation_quaternion", frame=f)


def set_chain(
    rig: Any,
    tip: str,
    length: int,
    target: Any,
    pole: Any = None,
    solver: str | None = None,
) -> None:
    """Store a Reach IK chain on ``tip`` (use tail on)."""
    s = rig.pose.bones[tip].reach_ik
    s.chain_length = length
    s.use_tail = True
    s.target = target
    s.pole = pole
    if solver:
        s.solver = solver
    s.enabled = True
    s.has_chain = True


def add_limb_chains(rig: Any, goals: dict[str, tuple[Any, Any]], solver: str | None) -> None:
    for tip, (target, pole) in goals.items():
        set_chain(rig, tip, 2, target, pole, solver)


def add_blender_ik(rig: Any, goals: dict[str, tuple[Any, Any]]) -> None:
    """Blender's own IK constraints on the limbs, same targets and poles (for comparison)."""
    for tip, (target, pole) in goals.items():
        con = rig.pose.bones[tip].constraints.new("IK")
        con.target = target
        con.pole_target = pole
        con.chain_count = 2


def add_paper_chain(name: str, solver: str | None, frames: int) -> Any:
    """One of the paper's chains as an armature with an animated target; returns it."""
    bpy = blender_module()

    lengths, limits, mode, location = PAPER_CHAINS[name]
    arm = bpy.data.armatures.new(name)
    rig = bpy.data.objects.new(name, arm)
    rig.location = location
    rig.scale = (PAPER_SCALE,) * 3
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    parent, z = None, 0.0
    names = []
    for i, length in enumerate(lengths):
        bone = arm.edit_bones.new(f"{name[-1]}{i}")
        bone.head = (0.0, 0.0, z)
        bone.tail = (0.0, 0.0, z + length)
        bone.parent = parent
        bone.use_connect = parent is not None
        parent, z = bone, z + length
        names.append(bone.name)
    bpy.ops.object.mode_set(mode="OBJECT")
    for bone_name, limit in zip(names, limits, strict=True):
        pb = rig.pose.bones[bone_name]
        pb.rotation_mode = mode
        if limit is not None:
            for axis in "xz":
                setattr(pb, f"use_ik_limit_{axis}", True)
                setattr(pb, f"ik_min_{axis}", -math.radians(limit))
                setattr(pb, f"ik_max_{axis}", math.radians(limit))
    origin = rig.matrix_world.translation.copy()
    half = 30.0 * PAPER_SCALE

    def sweep(t: float) -> tuple[float, ...]:
        w = 2.0 * math.pi * t
        return (
            origin.x + half * math.sin(3.0 * w),
            origin.y + half * math.sin(2.0 * w + 0.5),
            origin.z + half * math.cos(w),
        )

    target = empty(f"{name}_target", sweep(0.0), 0.04)
    key_path(target, frames, sweep, every=2)
    set_chain(rig, names[-1], len(names), target, None, solver)
    return rig


def build(frames: int = 240, solver: str | None = None) -> dict[str, Any]:
    """Build the demo in an empty scene (see the module docstring); returns its objects."""
    bpy = blender_module()

    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps = 24
    human = add_metarig()
    goals = add_limb_goals(human, frames)
    add_limb_chains(human, goals, solver)
    add_sway(human, frames)
    papers = [add_paper_chain(name, solver, frames) for name in PAPER_CHAINS]
    bpy.context.view_layer.objects.active = human
    scene.frame_set(1)
    return {"human": human, "goals": goals, "papers": papers}
