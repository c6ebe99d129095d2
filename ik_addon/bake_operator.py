# SPDX-License-Identifier: GPL-3.0-or-later
"""The *Bake Reach IK* operator (``reach_ik.bake``): a thin operator around :func:`.bake.bake`."""

from __future__ import annotations

from typing import Literal

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..core import ReachIKError
from . import diagnostics, key_reduction
from .bake import MAXFRAME, MINFRAME, BakeOptions, bake
from .bake_report import report_path_problem, write_report
from .blender_types import ArmatureObject, get_item, is_armature
from .chain_spec import chain_tips
from .operators import is_selected, poll_chains

Result = set[Literal["RUNNING_MODAL", "CANCELLED", "FINISHED", "PASS_THROUGH", "INTERFACE"]]


def _armature(context: bpy.types.Context, name: str) -> ArmatureObject | None:
    obj = get_item(bpy.data.objects, name) if name else context.object
    return obj if is_armature(obj) else None


class REACH_IK_OT_bake(bpy.types.Operator):
    """Bake the armature's Reach IK chains to keyframes on the chain bones' rotations"""

    bl_idname = "reach_ik.bake"
    bl_label = "Bake Reach IK"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 (Blender reads a plain set)

    armature: StringProperty(  # type: ignore[valid-type]
        name="Armature", description="Armature object to bake; empty = the active object"
    )
    frame_start: IntProperty(  # type: ignore[valid-type]
        name="Start Frame",
        description="First frame to bake",
        default=1,
        soft_min=MINFRAME,
        soft_max=MAXFRAME,
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        name="End Frame",
        description="Last frame to bake",
        default=250,
        soft_min=MINFRAME,
        soft_max=MAXFRAME,
    )
    frame_step: IntProperty(  # type: ignore[valid-type]
        name="Frame Step", description="Key every this many frames", default=1, min=1, max=1000
    )
    only_selected: BoolProperty(  # type: ignore[valid-type]
        name="Only Selected Chains",
        description="Bake only the chains whose tip bone is selected (else every enabled chain)",
        default=False,
    )
    into: EnumProperty(  # type: ignore[valid-type]
        name="Into",
        items=(
            ("CURRENT", "Current Action", "Key into the armature's action"),
            (
                "NEW",
                "New Action",
                "Key into a copy of the action; the original stays as it was (fake user)",
            ),
        ),
        default="CURRENT",
    )
    reduce: BoolProperty(  # type: ignore[valid-type]
        name="Reduce Keys",
        description="Keep only the keys needed to replay the bake within the distance at "
        "each effector and the angle at every joint (on every frame and quarter frame); "
        "off: a key on every frame, replaying the live pose exactly",
        default=True,
    )
    reduce_distance: FloatProperty(  # type: ignore[valid-type]
        name="Distance",
        description="Largest effector distance from the full bake; 0 = 0.1% of each chain's reach",
        default=0.0,
        min=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )
    reduce_angle: FloatProperty(  # type: ignore[valid-type]
        name="Angle",
        description="Largest joint angle from the full bake",
        default=float(key_reduction.ANGLE),
        min=1e-6,
        subtype="ANGLE",
    )
    overwrite_shared: BoolProperty(  # type: ignore[valid-type]
        name="Overwrite Shared Action",
        description="Key the current action even when other objects use it too (by "
        "default a shared action is left as it was and a copy is keyed)",
        default=False,
    )
    after: EnumProperty(  # type: ignore[valid-type]
        name="Chains After",
        items=(
            ("DISABLE", "Disable", "Switch the chains off: the baked keys play"),
            ("KEEP", "Keep", "Leave the chains as they are (they still drive the bones)"),
            ("REMOVE", "Remove", "Remove the chains' settings"),
        ),
        default="DISABLE",
    )
    report_path: StringProperty(  # type: ignore[valid-type]
        name="Report File",
        description="Save the quality report as JSON here (empty: do not save)",
        subtype="FILE_PATH",
    )
    diagnose: BoolProperty(  # type: ignore[valid-type]
        name="Diagnose",
        description=(
            "Afterwards, mark the baked chains' pops, bend flips, out-of-reach and "
            "limit-bound frames as timeline markers (as Diagnose does)"
        ),
        default=False,
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_chains(cls, context, writes_armature=True)

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> Result:
        scene = context.scene
        if scene is not None:
            self.frame_start = scene.frame_start
            self.frame_end = scene.frame_end
        wm = context.window_manager
        if wm is None:  # no window to show the dialog in
            return self.execute(context)
        return wm.invoke_props_dialog(self)

    def execute(self, context: bpy.types.Context) -> Result:
        obj = _armature(context, self.armature)
        if obj is None:
            self.report({"ERROR"}, f"No armature '{self.armature or 'active'}' to bake")
            return {"CANCELLED"}
        scene = context.scene
        if scene is None:
            self.report({"ERROR"}, "No scene to bake in")
            return {"CANCELLED"}
        chains = None
        if self.only_selected:
            chains = tuple(
                t
                for t in chain_tips(obj)
                if is_selected(obj.pose.bones[t]) and obj.pose.bones[t].reach_ik.enabled
            )
            if not chains:
                self.report({"ERROR"}, "No selected bone holds an enabled Reach IK chain")
                return {"CANCELLED"}
        if self.report_path:
            problem = report_path_problem(bpy.path.abspath(self.report_path))
            if problem:
                self.report({"ERROR"}, problem)
                return {"CANCELLED"}
        tips = chains or tuple(t for t in chain_tips(obj) if obj.pose.bones[t].reach_ik.enabled)
        options = BakeOptions(
            frame_start=self.frame_start,
            frame_end=self.frame_end,
            frame_step=self.frame_step,
            chains=chains,
            into=self.into,
            after=self.after,
            overwrite_shared=self.overwrite_shared,
            reduce=self.reduce,
            reduce_distance=self.reduce_distance or None,
            reduce_angle=self.reduce_angle,
        )
        wm = context.window_manager
        if wm is not None:
            wm.progress_begin(0, 1000)
        try:
            result = bake(
                obj,
                options,
                scene=scene,
                progress=None if wm is None else lambda x: wm.progress_update(int(1000 * x)),
            )
        except ReachIKError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        finally:
            if wm is not None:
                wm.progress_end()
        if self.report_path:
            path = bpy.path.abspath(self.report_path)
            try:
                write_report(result, path)
            except OSError as exc:
                self.report({"WARNING"}, f"Could not save the report to '{path}': {exc}")
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, result.summary())
        if self.diagnose:
            diagnostics.after_bake(self, scene, obj, tips, options)
        return {"FINISHED"}


classes = (REACH_IK_OT_bake,)
