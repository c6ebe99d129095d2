# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's UI: a panel in the Bone properties (pose mode) and a 3D View sidebar tab.

* **Bone properties → Reach IK** (placed by :data:`BONE_PANEL_ORDER`): the residual of
  the pose Blender shows (:mod:`.shown`) or why the chain cannot be solved, the active
  bone's chain settings (or an *Add* button), and *Apply to FK* / *Remove*; an
  *Advanced* subpanel with the core's solver options.
* **3D View sidebar → Reach IK**: the overlay switch, then every chain of the active armature
  with its solver, target, pole, bone count, influence and shown residual error, the convert
  buttons, *Diagnose* and *Bake* (when the bake operator ``reach_ik.bake`` is present).

Labels are kept short so that they fit at the default widths of Blender 4.2–5.2; a status
message that is longer (why a chain is refused) is wrapped to the panel's width
(:func:`wrapped`), which Blender's labels would cut short.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import bpy

from ..core.wrist import WRIST_METHODS, swings_both_ways
from . import chain_spec, handlers
from .bake_report import stored_report
from .blender_types import ArmatureObject, ChainBone, get_item, is_armature
from .rig import bone_limits
from .shown import TURN_MISS_DEG, shown_status

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import IconItems

    from .properties import ReachIKBoneSettings

#: ``bl_order`` of the Bone panel. Blender's own Bone-tab panels have order 0 (Custom
#: Properties 1000) and are registered before any add-on; a panel goes after the last one
#: of order <= its own, and orders start at 0, so no add-on panel can go above them: 0
#: puts it right after Viewport Display, above Custom Properties. Blender's panels below
#: Transform start closed, so its header is in view in the default layout; its first row
#: is the chain's status.
BONE_PANEL_ORDER = 0

#: Solver options → the solvers that read them (others show them inactive).
_READERS = {
    "bend_plane": ("triangulation", "ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls"),
    "delta_b": ("triangulation",),
    "distribution": ("triangulation", "ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls"),
    "damping": ("jacobian_dls",),
    "max_step": ("jacobian_transpose", "jacobian_pinv", "jacobian_dls"),
    "posture_weight": ("jacobian_transpose", "jacobian_pinv", "jacobian_dls"),
    "sweep_steps": ("ccd",),
}


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


def _depsgraph(context: bpy.types.Context) -> bpy.types.Depsgraph | None:
    """The view layer's depsgraph as drawn (``evaluated_depsgraph_get`` would evaluate, and
    run the handlers, from inside a draw); ``None`` without a view layer or its depsgraph."""
    view_layer = context.view_layer
    return view_layer.depsgraph if view_layer is not None else None


#: A status line: text, icon, alert.
StatusLine = tuple[str, "IconItems", bool]


def status_lines(
    context: bpy.types.Context, obj: ArmatureObject, tip: str, enabled: bool, influence: float
) -> list[StatusLine]:
    """The status of a chain as ``(text, icon, alert)`` lines (what the panels show)."""
    if not enabled:
        return [("Disabled: FK pose", "HIDE_ON", False)]
    st = handlers.status.get((obj.name, tip))
    if st is None:
        return [("Not solved yet", "TIME", False)]
    if st.error is None:
        return [(st.message, "ERROR", True)]
    depsgraph = _depsgraph(context)
    shown = shown_status(obj, tip, depsgraph) if depsgraph is not None else None
    if shown is None:
        return [("Not solved yet", "TIME", False)]
    error = format_length(shown.error)
    if shown.warning:
        return [(f"Shown {error} off", "ERROR", True), (shown.warning, "BLANK1", True)]
    turned = ""
    if shown.turned is not None and shown.turned > TURN_MISS_DEG:
        turned = f", turned {shown.turned:.1f}° off"
    if not shown.reachable:
        return [(f"Out of reach: {error}{turned}", "INFO", False)]
    if influence < 1.0:
        return [(f"{error} off (influence){turned}", "INFO", False)]
    if shown.missed:
        return [(f"Missed by {error}{turned}", "INFO", False)]
    if turned:
        return [(f"Error {error}{turned}", "INFO", False)]
    return [(f"Error {error}", "CHECKMARK", False)]


#: An interface character's width and what a status row inside a chain's box leaves of
#: the region's width besides its text (the region's and the box's margins, the icon), in
#: pixels at UI scale 1 (Blender's default interface font): what :func:`wrapped` fits.
CHAR_PX = 6.5
ROW_MARGIN_PX = 64.0


def wrapped(text: str, width_px: float, ui_scale: float) -> list[str]:
    """``text`` as the lines a status row of a region ``width_px`` pixels wide shows whole
    (at least 16 characters a line)."""
    room = (width_px - ROW_MARGIN_PX * ui_scale) / (CHAR_PX * ui_scale)
    return textwrap.wrap(text, max(16, int(room))) or [text]


def _status(
    layout: bpy.types.UILayout,
    context: bpy.types.Context,
    obj: ArmatureObject,
    tip: str,
    enabled: bool,
    influence: float,
) -> None:
    for text, icon, alert in status_lines(context, obj, tip, enabled, influence):
        _paragraph(layout, context, text, icon, alert)


def _paragraph(
    layout: bpy.types.UILayout,
    context: bpy.types.Context,
    text: str,
    icon: IconItems,
    alert: bool,
) -> None:
    """``text`` as labels wrapped to the region's width (:func:`wrapped`), the icon on the
    first."""
    region, prefs = context.region, context.preferences
    width = region.width if region is not None else 300
    scale = prefs.system.ui_scale if prefs is not None else 1.0
    lines = wrapped(text, width, scale)
    col = layout.column(align=True)
    col.alert = alert
    if len(lines) > 1:
        col.scale_y = 0.8  # (a paragraph: its lines closer than rows of settings)
    for k, line in enumerate(lines):
        col.label(text=line, icon=icon if k == 0 else "BLANK1")


def _goal(
    layout: bpy.types.UILayout, s: ReachIKBoneSettings, pointer: str, bone: str, label: str
) -> None:
    col = layout.column(align=True)
    col.prop(s, pointer, text=label)
    ob = getattr(s, pointer)
    if ob is not None and ob.type == "ARMATURE":
        col.prop_search(s, bone, ob.data, "bones", text="Bone")


def _pose_bone(context: bpy.types.Context) -> ChainBone | None:
    """The pose bone of the Bone properties' bone, when the object is an armature."""
    obj, bone = context.object, context.bone
    if not is_armature(obj) or bone is None:
        return None
    return get_item(obj.pose.bones, bone.name)


class REACH_IK_PT_bone(bpy.types.Panel):
    """Reach IK chain settings of the active pose bone."""

    bl_label = "Reach IK"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "bone"
    bl_order = BONE_PANEL_ORDER

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        ob = context.object
        return (
            ob is not None
            and ob.type == "ARMATURE"
            and ob.mode == "POSE"
            and context.bone is not None
        )

    def draw_header(self, context: bpy.types.Context) -> None:
        pb = _pose_bone(context)
        layout = self.layout
        if pb is not None and pb.reach_ik.has_chain and layout is not None:
            layout.prop(pb.reach_ik, "enabled", text="")

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        if layout is None:
            return
        layout.use_property_split = True
        layout.use_property_decorate = True
        obj = context.object
        pb = _pose_bone(context)
        if pb is None or not is_armature(obj):
            return
        s = pb.reach_ik
        if not s.has_chain:
            layout.label(text="No chain ends here", icon="INFO")
            layout.operator("reach_ik.add", text="Add Reach IK", icon="CON_KINEMATIC")
            return
        box = layout.box()
        _status(box, context, obj, pb.name, s.enabled, s.influence)
        _goal(layout, s, "target", "target_bone", "Target")
        _goal(layout, s, "pole", "pole_bone", "Pole")
        row = layout.row()
        row.active = s.pole is not None
        row.prop(s, "pole_angle", text="Pole Angle")
        layout.separator()
        layout.prop(s, "solver")
        if s.solver in chain_spec.ITERATIVE:
            col = layout.column(align=True)
            col.prop(s, "iterations")
            col.prop(s, "tolerance")
        col = layout.column(align=True)
        col.prop(s, "chain_length", text="Bones")
        col.prop(s, "use_tail", text="Use Tail")
        layout.prop(s, "influence", slider=True)
        col = layout.column(align=True)
        col.prop(s, "use_stretch")
        sub = col.row()
        sub.active = s.use_stretch
        sub.prop(s, "stretch_rule")
        col.prop(s, "soft_reach")
        row = layout.row(heading="Rotation")
        row.prop(s, "use_rotation", text="")
        sub = row.row()
        sub.active = s.use_rotation
        sub.prop(s, "orient_weight", text="Weight", slider=True)
        if s.use_rotation and not _wrist_meets_rotation(pb, s):
            _paragraph(layout, context, ROTATION_NEEDS_WEIGHING, "INFO", False)
        layout.label(text="Limits: IK panel", icon="CON_KINEMATIC")
        row = layout.row(align=True)
        row.operator("reach_ik.apply_to_fk", text="To FK", icon="KEYINGSET")
        op = row.operator("reach_ik.remove", text="Remove", icon="X")
        if op is not None:
            op.tip = pb.name


#: Shown under *Rotation* where the chain's solver leaves it to the position (a last hinge).
ROTATION_NEEDS_WEIGHING = (
    "The last bone is a hinge: this solver reaches for the position only. "
    "CCD and the Jacobian solvers weigh Rotation against it."
)


def _wrist_meets_rotation(pb: ChainBone, s: ReachIKBoneSettings) -> bool:
    """Whether the chain's solver meets *Rotation*: CCD and the Jacobian solvers always
    (weighed against the position), triangulation and FABRIK where the chain's last bone
    can swing both ways (``core.wrist``: a last hinge leaves them the position alone)."""
    if s.solver not in WRIST_METHODS:
        return True
    last = pb if s.use_tail else pb.parent
    return last is None or swings_both_ways(bone_limits(last))


class REACH_IK_PT_bone_advanced(bpy.types.Panel):
    """The core's solver options of the active bone's chain."""

    bl_label = "Advanced"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "bone"
    bl_parent_id = "REACH_IK_PT_bone"
    bl_options = {"DEFAULT_CLOSED"}  # noqa: RUF012 (Blender reads a plain set)

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not REACH_IK_PT_bone.poll(context):
            return False
        pb = _pose_bone(context)
        return pb is not None and pb.reach_ik.has_chain

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        if layout is None:
            return
        layout.use_property_split = True
        layout.use_property_decorate = False
        pb = _pose_bone(context)
        if pb is None:
            return
        s = pb.reach_ik
        # (the bend plane matters without a pole; CCD sweeps only goals with Rotation)
        needs = {"bend_plane": s.pole is None, "sweep_steps": s.use_rotation}
        for name, readers in _READERS.items():
            row = layout.row()
            row.active = s.solver in readers and needs.get(name, True)
            row.prop(s, name)


class REACH_IK_PT_sidebar(bpy.types.Panel):
    """The active armature's Reach IK chains."""

    bl_label = "Reach IK Chains"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Reach IK"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        if layout is None:
            return
        layout.prop(context.scene, "reach_ik_overlay", text="Show Overlay", icon="OVERLAY")
        obj = context.object
        if not is_armature(obj):
            layout.label(text="Select an armature", icon="ARMATURE_DATA")
            return
        tips = chain_spec.chain_tips(obj)
        if not tips:
            layout.label(text=f"'{obj.name}' has no chains", icon="INFO")
        for tip in tips:
            self._draw_chain(layout, context, obj, obj.pose.bones[tip])
        col = layout.column(align=True)
        if context.mode == "POSE":
            col.operator("reach_ik.add", text="Add Reach IK", icon="ADD")
        for text, direction in (
            ("IK → Reach IK", "TO_REACH_IK"),
            ("Reach IK → IK", "TO_BLENDER"),
        ):
            op = col.operator("reach_ik.convert_constraints", text=text)
            if op is not None:
                op.direction = direction
        if tips:
            op = col.operator("reach_ik.apply_to_fk", text="All to FK")
            if op is not None:
                op.all_chains = True
            col = layout.column(align=True)
            col.operator("reach_ik.diagnose", icon="MARKER_HLT")
            if hasattr(bpy.types, "REACH_IK_OT_bake"):
                col.operator("reach_ik.bake", text="Bake", icon="ACTION")

    @staticmethod
    def _draw_chain(
        layout: bpy.types.UILayout, context: bpy.types.Context, obj: ArmatureObject, pb: ChainBone
    ) -> None:
        s = pb.reach_ik
        box = layout.box()
        row = box.row(align=True)
        row.prop(s, "enabled", text="")
        row.label(text=pb.name, icon="BONE_DATA")
        op = row.operator("reach_ik.remove", text="", icon="X", emboss=False)
        if op is not None:
            op.tip = pb.name
        col = box.column(align=True)
        col.active = s.enabled
        col.prop(s, "solver", text="")
        icon: IconItems = "EMPTY_AXIS" if s.target else "ERROR"
        col.label(text=_goal_name(s.target, s.target_bone), icon=icon)
        if s.pole is not None:
            col.label(text=_goal_name(s.pole, s.pole_bone), icon="ORIENTATION_GIMBAL")
        else:
            col.label(text="No pole", icon="BLANK1")
        col.prop(s, "chain_length", text="Bones")
        col.prop(s, "influence", slider=True)
        _status(box, context, obj, pb.name, s.enabled, s.influence)


def _goal_name(ob: bpy.types.Object | None, bone: str) -> str:
    if ob is None:
        return "No target"
    return f"{ob.name} : {bone}" if bone else ob.name


class REACH_IK_PT_bake_report(bpy.types.Panel):
    """The quality of each chain's last bake (3D View sidebar, Reach IK tab)."""

    bl_label = "Last Bake"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Reach IK"
    bl_order = 10

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        obj = context.object
        return is_armature(obj) and any(
            stored_report(obj.pose.bones[t]) for t in chain_spec.chain_tips(obj)
        )

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        obj = context.object
        if layout is None or not is_armature(obj):
            return
        for tip in chain_spec.chain_tips(obj):
            report = stored_report(obj.pose.bones[tip])
            if report is None:
                continue
            box = layout.box()
            box.label(
                text=f"{tip} · {report['solver']} · {report['frame_start']}–{report['frame_end']}",
                icon="ACTION",
            )
            col = box.column(align=True)
            col.label(
                text=f"Error max {format_length(report['error_max'])}, "
                f"mean {format_length(report['error_mean'])}"
            )
            if report["out_of_reach"]:
                col.label(text=f"Out of reach: {report['out_of_reach']} frames", icon="INFO")
            col.label(text=f"Max turn {report['max_joint_change_deg']:.3g}°/frame")
            if report["max_joint_change_bone"]:
                col.label(
                    text=f"    {report['max_joint_change_bone']}, "
                    f"frame {report['max_joint_change_frame']}"
                )
            turn = report.get("turn_max_deg")  # (with Rotation; reports before 0.9.0 lack it)
            if turn is not None:
                col.label(text=f"Turned up to {turn:.3g}°, frame {report['turn_max_frame']}")
            if report["pops"]:
                row = col.row()
                row.alert = True
                frames = ", ".join(str(f) for f in report["pop_frames"][:5])
                row.label(text=f"{report['pops']} pops: frames {frames}", icon="ERROR")


classes = (
    REACH_IK_PT_bone,
    REACH_IK_PT_bone_advanced,
    REACH_IK_PT_sidebar,
    REACH_IK_PT_bake_report,
)
