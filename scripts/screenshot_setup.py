# SPDX-License-Identifier: GPL-3.0-or-later
"""The demo rig for the UI screenshots (``make screenshots``), run inside Blender's UI by
the real-blender screenshot tool after the extension is installed.

The Rigify human metarig in pose mode with four Reach IK chains added through the
operators: the left arm reaching for a target with an elbow pole, the right arm with CCD
and influence 0.75, the left leg reaching past its length (out of reach, red cross in the
overlay), the right leg reaching for a target behind it with its shin's *Reach IK*
constraint muted by hand (the status warns that the shown pose is not the solved one).
The left forearm is the active bone, so the Bone properties show its chain.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

bpy: Any = importlib.import_module("bpy")
addon_utils: Any = importlib.import_module("addon_utils")


def select_only(obj: Any, name: str) -> None:
    for pb in obj.pose.bones:
        if hasattr(pb, "select"):
            pb.select = pb.name == name
        else:
            pb.bone.select = pb.name == name
    obj.data.bones.active = obj.data.bones[name]


def add_chain(obj: Any, tip: str, solver: str = "triangulation") -> Any:
    select_only(obj, tip)
    bpy.ops.reach_ik.add(new_target=True, solver=solver)
    return obj.pose.bones[tip].reach_ik


def main() -> None:
    for ob in list(bpy.data.objects):
        bpy.data.objects.remove(ob)
    addon_utils.enable("rigify", default_set=True)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")

    arm_l = add_chain(obj, "forearm.L")
    arm_l.target.location = _from_root(obj, "upper_arm.L", (0.22, -0.38, -0.12))
    pole = bpy.data.objects.new("elbow pole.L", None)
    pole.empty_display_type = "CONE"
    pole.empty_display_size = 0.05
    pole.location = _from_root(obj, "upper_arm.L", (0.35, 0.35, -0.1))
    obj.users_collection[0].objects.link(pole)
    arm_l.pole = pole

    arm_r = add_chain(obj, "forearm.R", "ccd" if "ccd" in _solvers() else "triangulation")
    arm_r.target.location = _from_root(obj, "upper_arm.R", (-0.15, -0.3, -0.3))
    arm_r.influence = 0.75

    leg_l = add_chain(obj, "shin.L")
    leg_l.target.location = _from_root(obj, "thigh.L", (0.05, -0.45, -0.95))  # too far

    leg_r = add_chain(obj, "shin.R")
    leg_r.target.location = _from_root(obj, "thigh.R", (-0.05, 0.25, -0.72))

    select_only(obj, "forearm.L")
    bpy.context.scene.frame_set(1)
    # Muted by hand, the right shin's constraint shows its FK pose: the status says so.
    obj.pose.bones["shin.R"].constraints["Reach IK"].mute = True
    bpy.context.scene.frame_set(1)
    _frame_view()


def _from_root(obj: Any, bone: str, offset: tuple[float, float, float]) -> Any:
    head = obj.matrix_world @ obj.data.bones[bone].head_local
    return head + type(head)(offset)


def _solvers() -> tuple[str, ...]:
    chain_spec = importlib.import_module("bl_ext.user_default.reach_ik.ik_addon.chain_spec")
    return tuple(chain_spec.available_methods())


def _frame_view() -> None:
    """Keep Blender's default layout (window, sidebar and Properties editor sizes, where
    labels could be cut); scroll the Bone tab to the Reach IK panel; look at the rig from
    the front-left."""
    window = bpy.context.window
    for area in window.screen.areas:
        if area.type != "VIEW_3D":
            continue
        space = area.spaces.active
        region = next(r for r in area.regions if r.type == "WINDOW")
        r3d = space.region_3d
        r3d.view_perspective = "PERSP"
        r3d.view_rotation = _quat_from_euler(math.radians(80.0), 0.0, math.radians(25.0))
        with bpy.context.temp_override(window=window, area=area, region=region):
            bpy.ops.view3d.view_all(center=False)
        r3d.view_distance *= 0.8
    props = next(a for a in window.screen.areas if a.type == "PROPERTIES")
    seen = [0]

    def scroll() -> float | None:
        # The Bone tab exists once the editor has drawn the pose-mode armature and the
        # screenshot driver selected it; then scroll to its end (the view stops at the last
        # panel, here Reach IK), again for a few seconds while the layout settles (4.3
        # resets the first scrolls).
        if props.spaces.active.context != "BONE":
            seen[0] = 0
            return 0.2
        seen[0] += 1
        region = next(r for r in props.regions if r.type == "WINDOW")
        with bpy.context.temp_override(window=window, area=props, region=region):
            bpy.ops.view2d.scroll_down(deltay=2000)
        region.tag_redraw()
        return 0.2 if seen[0] < 20 else None

    bpy.app.timers.register(scroll, first_interval=0.2)


def _quat_from_euler(x: float, y: float, z: float) -> Any:
    mathutils: Any = importlib.import_module("mathutils")
    return mathutils.Euler((x, y, z), "XYZ").to_quaternion()


main()
