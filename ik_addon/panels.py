# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's UI: a panel in the Bone properties (pose mode) and a 3D View sidebar tab.

* **Bone properties → Reach IK**: the active bone's chain settings (or an *Add* button),
  its live residual error or why it cannot be solved, and *Apply to FK* / *Remove*.
* **3D View sidebar → Reach IK**: every chain of the active armature with its solver,
  target, influence and live residual error, the convert buttons, and *Bake* when the bake
  operator (``reach_ik.bake``) is present.
"""

from __future__ import annotations

from typing import Any

import bpy

from . import evaluate, handlers


def format_length(metres: float) -> str:
    """A distance for the UI, in the unit that keeps three significant digits readable."""
    a = abs(metres)
    if a >= 1.0:
        return f"{metres:.3g} m"
    if a >= 1e-3:
        return f"{metres * 1e3:.3g} mm"
    if a >= 1e-6:
        return f"{metres * 1e6:.3g} µm"
    return "< 1 µm"


def _status_line(layout: Any, obj: Any, tip: str, enabled: bool, influence: float) -> None:
    if not enabled:
        layout.label(text="Disabled: bones show their FK pose", icon="HIDE_ON")
        return
    st = handlers.status.get((obj.name, tip))
    if st is None:
        layout.label(text="Not solved yet", icon="TIME")
    elif st.error is None:
        row = layout.row()
        row.alert = True
        row.label(text=st.message, icon="ERROR")
    elif not st.reachable:
        layout.label(text=f"Out of reach: {format_length(st.error)} short", icon="INFO")
    elif influence < 1.0:
        layout.label(
            text=f"{format_length(st.error)} off at influence {influence:.2f}", icon="INFO"
        )
    else:
        layout.label(text=f"Residual error {format_length(st.error)}", icon="CHECKMARK")


def _goal(layout: Any, s: Any, pointer: str, bone: str, label: str) -> None:
    col = layout.column(align=True)
    col.prop(s, pointer, text=label)
    ob = getattr(s, pointer)
    if ob is not None and ob.type == "ARMATURE":
        col.prop_search(s, bone, ob.data, "bones", text="Bone")


class REACH_IK_PT_bone(bpy.types.Panel):
    """Reach IK chain settings of the active pose bone."""

    bl_label = "Reach IK"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "bone"

    @classmethod
    def poll(cls, context: Any) -> bool:
        ob = context.object
        return ob is not None and ob.type == "ARMATURE" and ob.mode == "POSE" and context.bone

    def _pose_bone(self, context: Any) -> Any:
        return context.object.pose.bones.get(context.bone.name)

    def draw_header(self, context: Any) -> None:
        pb = self._pose_bone(context)
        if pb is not None and pb.reach_ik.has_chain:
            layout: Any = self.layout
            layout.prop(pb.reach_ik, "enabled", text="")

    def draw(self, context: Any) -> None:
        layout: Any = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = True
        obj = context.object
        pb = self._pose_bone(context)
        if pb is None:
            return
        s = pb.reach_ik
        if not s.has_chain:
            layout.label(text="No Reach IK chain ends at this bone")
            layout.operator("reach_ik.add", icon="CON_KINEMATIC")
            return
        _goal(layout, s, "target", "target_bone", "Target")
        _goal(layout, s, "pole", "pole_bone", "Pole")
        row = layout.row()
        row.active = s.pole is not None
        row.prop(s, "pole_angle")
        layout.separator()
        layout.prop(s, "solver")
        if s.solver in evaluate.ITERATIVE:
            col = layout.column(align=True)
            col.prop(s, "iterations")
            col.prop(s, "tolerance")
        layout.prop(s, "chain_length")
        layout.prop(s, "use_tail")
        layout.prop(s, "influence", slider=True)
        row = layout.row(heading="Rotation")
        row.prop(s, "use_rotation", text="")
        sub = row.row()
        sub.active = s.use_rotation
        sub.prop(s, "orient_weight", text="Weight", slider=True)
        box = layout.box()
        _status_line(box, obj, pb.name, s.enabled, s.influence)
        box.label(text="Limits & stiffness: Inverse Kinematics panel", icon="CON_KINEMATIC")
        row = layout.row(align=True)
        row.operator("reach_ik.apply_to_fk", icon="KEYINGSET")
        row.operator("reach_ik.remove", icon="X").tip = pb.name


class REACH_IK_PT_sidebar(bpy.types.Panel):
    """The active armature's Reach IK chains."""

    bl_label = "Reach IK Chains"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Reach IK"

    def draw(self, context: Any) -> None:
        layout: Any = self.layout
        obj = context.object
        if obj is None or obj.type != "ARMATURE":
            layout.label(text="Select an armature", icon="ARMATURE_DATA")
            return
        tips = evaluate.chain_tips(obj)
        if not tips:
            layout.label(text=f"'{obj.name}' has no chains", icon="INFO")
        for tip in tips:
            self._draw_chain(layout, obj, obj.pose.bones[tip])
        col = layout.column(align=True)
        if context.mode == "POSE":
            col.operator("reach_ik.add", icon="ADD")
        op = col.operator("reach_ik.convert_constraints", text="IK Constraints → Reach IK")
        op.direction = "TO_REACH_IK"
        op = col.operator("reach_ik.convert_constraints", text="Reach IK → IK Constraints")
        op.direction = "TO_BLENDER"
        if tips:
            col.operator("reach_ik.apply_to_fk", text="Apply All to FK").all_chains = True
            if hasattr(bpy.types, "REACH_IK_OT_bake"):
                layout.operator("reach_ik.bake", icon="ACTION")

    @staticmethod
    def _draw_chain(layout: Any, obj: Any, pb: Any) -> None:
        s = pb.reach_ik
        box = layout.box()
        row = box.row(align=True)
        row.prop(s, "enabled", text="")
        row.label(text=pb.name, icon="BONE_DATA")
        row.operator("reach_ik.remove", text="", icon="X", emboss=False).tip = pb.name
        col = box.column(align=True)
        col.active = s.enabled
        col.prop(s, "solver", text="")
        goal = s.target.name if s.target is not None else "no target"
        if s.target is not None and s.target_bone:
            goal += f" : {s.target_bone}"
        col.label(text=goal, icon="EMPTY_AXIS" if s.target else "ERROR")
        col.prop(s, "influence", slider=True)
        _status_line(box, obj, pb.name, s.enabled, s.influence)


classes = (REACH_IK_PT_bone, REACH_IK_PT_sidebar)
