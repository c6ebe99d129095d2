# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's operators: add and remove a chain, convert Blender IK constraints (both ways),
and apply the solved pose to FK keys.

Every operator checks its context in ``poll`` (with a message saying what is needed; a
linked armature that is not an editable library override is refused, so nothing in memory
changes), reports what it did or why it did nothing, and supports undo. Convert IK's work is
in :mod:`.convert`.
"""

from __future__ import annotations

from typing import Any, Literal

import bpy
from bpy.props import BoolProperty, EnumProperty, IntProperty, StringProperty

from . import chain_spec, constraints, convert, dependencies, drivers, evaluate, handlers
from .blender_types import ArmatureObject, ChainBone, get_item, is_armature
from .live_state import live
from .rig import (
    RigError,
    chain_bones,
    default_chain_length,
)

#: What ``execute`` returns.
Result = set[Literal["RUNNING_MODAL", "CANCELLED", "FINISHED", "PASS_THROUGH", "INTERFACE"]]


def _solver_items(_self: object, _context: bpy.types.Context) -> list[tuple[str, str, str]]:
    return [
        (
            "AUTO",
            "Automatic",
            "Triangulation for chains of 1–2 bones, FABRIK for 3 or more (measured best: "
            "docs/natural.md)",
        )
    ] + [
        (m, chain_spec.METHOD_LABELS.get(m, m), chain_spec.METHOD_LABELS.get(m, m))
        for m in chain_spec.available_methods()
    ]


def _armature(context: bpy.types.Context) -> ArmatureObject | None:
    """The active object when it is an armature (with a pose)."""
    obj = context.object
    return obj if is_armature(obj) else None


def editable(obj: ArmatureObject) -> bool:
    """``obj`` may be edited: local, or an editable library override (not linked data)."""
    is_editable = getattr(obj, "is_editable", None)
    return bool(is_editable) if is_editable is not None else obj.library is None


#: Why an operator refuses a linked armature.
LINKED_MESSAGE = (
    "The armature is linked from a library and cannot be edited; make a library override "
    "of it first (Object > Library Override > Make)"
)


def _poll_armature(cls: type[bpy.types.Operator], context: bpy.types.Context) -> bool:
    obj = _armature(context)
    if obj is None:
        cls.poll_message_set("Needs an active armature object")
        return False
    if not editable(obj):
        cls.poll_message_set(LINKED_MESSAGE)
        return False
    return True


def poll_chains(
    cls: type[bpy.types.Operator], context: bpy.types.Context, *, writes_armature: bool
) -> bool:
    """``poll`` of operators that work on an armature's enabled chains (bake, diagnose):
    an active armature, editable when the operator ``writes_armature``, with a chain."""
    if not (_poll_armature if writes_armature else _poll_any_armature)(cls, context):
        return False
    obj = _armature(context)
    if obj is None or not any(
        obj.pose.bones[t].reach_ik.enabled for t in chain_spec.chain_tips(obj)
    ):
        cls.poll_message_set("The armature has no enabled Reach IK chain")
        return False
    return True


def _poll_any_armature(cls: type[bpy.types.Operator], context: bpy.types.Context) -> bool:
    if _armature(context) is None:
        cls.poll_message_set("Needs an active armature object")
        return False
    return True


def _poll_pose_bone(cls: type[bpy.types.Operator], context: bpy.types.Context) -> bool:
    if not _poll_armature(cls, context):
        return False
    if context.mode != "POSE":
        cls.poll_message_set("Needs Pose Mode")
        return False
    if context.active_pose_bone is None:
        cls.poll_message_set("Needs an active bone")
        return False
    return True


def _resolve_tip(context: bpy.types.Context, tip: str) -> ChainBone | None:
    """The pose bone ``tip`` of the active armature, or its active bone when ``tip`` is
    empty (``None`` when there is none)."""
    obj = _armature(context)
    if obj is None:
        return None
    if tip:
        return get_item(obj.pose.bones, tip)
    pb = context.active_pose_bone
    return get_item(obj.pose.bones, pb.name) if pb is not None and pb.id_data == obj else None


def solve_now(context: bpy.types.Context, obj: ArmatureObject) -> None:
    """Solve ``obj`` at once (the live handlers would on the next update anyway)."""
    handlers.solve_object(obj, context.evaluated_depsgraph_get())


def is_selected(pb: bpy.types.PoseBone) -> bool:
    """The pose bone is selected (``PoseBone.select`` since Blender 5.0, ``Bone.select``
    before)."""
    if hasattr(pb, "select"):
        return bool(pb.select)
    bone: Any = pb.bone  # Blender 4.x: Bone.select, which the 5.0 stubs do not have
    return bool(bone.select)


class REACH_IK_OT_add(bpy.types.Operator):
    """Add a Reach IK chain ending at the active bone (target: the selected bone or object,
    else a new empty at the bone's tail)"""

    bl_idname = "reach_ik.add"
    bl_label = "Add Reach IK"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 (Blender reads a plain set)

    chain_length: IntProperty(  # type: ignore[valid-type]
        name="Chain Length",
        description="Bones in the chain; 0 = up to the first bone not connected to its parent",
        default=0,
        min=0,
        max=255,
    )
    solver: EnumProperty(name="Solver", items=_solver_items)  # type: ignore[valid-type]
    new_target: BoolProperty(  # type: ignore[valid-type]
        name="New Target Empty",
        description="Always make a new empty as the target, even when something is selected",
        default=False,
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _poll_pose_bone(cls, context)

    def execute(self, context: bpy.types.Context) -> Result:
        obj = _armature(context)
        pb = _resolve_tip(context, "")
        if obj is None or pb is None:
            self.report({"ERROR"}, "Needs an active bone of an armature")
            return {"CANCELLED"}
        tip = pb.name
        s = pb.reach_ik
        if s.has_chain:
            self.report({"ERROR"}, f"'{tip}' already has a Reach IK chain; remove it first")
            return {"CANCELLED"}
        length = self.chain_length or default_chain_length(obj, tip)
        try:
            names = chain_bones(obj, tip, length, True)
        except RigError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        target, target_bone = None, ""
        if not self.new_target:
            target, target_bone = self._selected_target(context, obj, pb)
        if target_bone in names:
            self.report(
                {"ERROR"},
                f"the selected bone '{target_bone}' is part of the chain; select another "
                "bone or object as the target",
            )
            return {"CANCELLED"}
        if target is not None:
            goals = (("target", target, target_bone),)
            chain = dependencies.ChainGoals(obj, tip, tuple(names), goals)
            every = chain_spec.dependency_chains()
            others = [c for c in every if (c.armature, c.tip) != (obj, tip)]
            loop = dependencies.problems([*others, chain]).get((obj.name, tip))
            if loop:
                self.report({"ERROR"}, f"Cannot add the chain on '{tip}': {loop}")
                return {"CANCELLED"}
        if target is None:
            target = self._new_empty(context, obj, pb)
            if target is None:
                self.report({"ERROR"}, "No collection to add the target empty to")
                return {"CANCELLED"}
        s.chain_length = length
        s.use_tail = True
        s.target = target
        s.target_bone = target_bone
        s.solver = chain_spec.default_method(length) if self.solver == "AUTO" else self.solver
        s.enabled = True
        s.has_chain = True
        solve_now(context, obj)
        goal = f"{target.name}:{target_bone}" if target_bone else target.name
        self.report({"INFO"}, f"Reach IK: {length}-bone chain on '{tip}' reaching for '{goal}'")
        return {"FINISHED"}

    @staticmethod
    def _selected_target(
        context: bpy.types.Context, obj: ArmatureObject, pb: ChainBone
    ) -> tuple[bpy.types.Object | None, str]:
        for bone in obj.pose.bones:
            if bone != pb and is_selected(bone):
                return obj, bone.name
        for other in context.selected_objects:
            if other != obj:
                return other, ""
        return None, ""

    @staticmethod
    def _new_empty(
        context: bpy.types.Context, obj: ArmatureObject, pb: ChainBone
    ) -> bpy.types.Object | None:
        """A new empty at the bone's tail, in the armature's first collection (else the
        scene's); ``None`` when there is neither."""
        collection = obj.users_collection[0] if obj.users_collection else None
        if collection is None and context.scene is not None:
            collection = context.scene.collection
        if collection is None:
            return None
        empty = bpy.data.objects.new(f"{pb.name} target", None)
        empty.empty_display_type = "SPHERE"
        scale = max(obj.matrix_world.to_scale().to_tuple())
        empty.empty_display_size = max(pb.bone.length * scale * 0.25, 1e-3)
        empty.location = obj.matrix_world @ pb.tail
        collection.objects.link(empty)
        return empty


class REACH_IK_OT_remove(bpy.types.Operator):
    """Remove the Reach IK chain of the active bone (its bones get their FK pose back)"""

    bl_idname = "reach_ik.remove"
    bl_label = "Remove Reach IK"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 (Blender reads a plain set)

    tip: StringProperty(  # type: ignore[valid-type]
        name="Tip Bone", description="The chain's tip bone; empty = the active bone"
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _poll_armature(cls, context)

    def execute(self, context: bpy.types.Context) -> Result:
        obj = _armature(context)
        pb = _resolve_tip(context, self.tip)
        if obj is None or pb is None or not pb.reach_ik.has_chain:
            name = self.tip or (pb.name if pb is not None else "the active bone")
            self.report({"ERROR"}, f"'{name}' has no Reach IK chain")
            return {"CANCELLED"}
        remove_chain(obj, pb)
        self.report({"INFO"}, f"Reach IK: removed the chain on '{pb.name}'; FK pose restored")
        return {"FINISHED"}


def remove_chain(obj: ArmatureObject, pb: ChainBone) -> None:
    """Reset a tip's chain settings and take its constraints off (the FK pose shows)."""
    s = pb.reach_ik
    drivers.remove(obj, convert.chain_driver_paths(pb))
    for name in chain_spec.CHAIN_SETTINGS:
        s.property_unset(name)  # runs no update callbacks: sync by hand
    live.invalidate()
    constraints.sync(obj)
    handlers.status.pop((obj.name, pb.name), None)


class REACH_IK_OT_convert_constraints(bpy.types.Operator):
    """Convert Blender IK constraints to Reach IK chains, or Reach IK chains to Blender IK
    constraints (target, pole, pole angle, chain length, iterations, tail, weights)"""

    bl_idname = "reach_ik.convert_constraints"
    bl_label = "Convert IK"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 (Blender reads a plain set)

    direction: EnumProperty(  # type: ignore[valid-type]
        name="Direction",
        items=(
            ("TO_REACH_IK", "IK Constraints → Reach IK", "Blender IK constraints become chains"),
            ("TO_BLENDER", "Reach IK → IK Constraints", "Chains become Blender IK constraints"),
        ),
        default="TO_REACH_IK",
    )
    only_selected: BoolProperty(  # type: ignore[valid-type]
        name="Only Selected Bones",
        description="Convert only on selected bones (else every bone of the armature)",
        default=False,
    )
    keep_source: BoolProperty(  # type: ignore[valid-type]
        name="Keep Source",
        description=(
            "Keep the converted constraint (muted) or chain (disabled) instead of deleting "
            "it, to switch back and forth"
        ),
        default=False,
    )
    solver: EnumProperty(name="Solver", items=_solver_items)  # type: ignore[valid-type]

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _poll_armature(cls, context)

    def execute(self, context: bpy.types.Context) -> Result:
        obj = _armature(context)
        if obj is None:
            self.report({"ERROR"}, "Needs an active armature object")
            return {"CANCELLED"}
        bones = [pb for pb in obj.pose.bones if not self.only_selected or is_selected(pb)]
        result = convert.ConvertResult()
        if self.direction == "TO_REACH_IK":
            for pb in bones:
                convert.to_reach(obj, pb, self.keep_source, self.solver, result)
        else:
            for pb in bones:
                if pb.reach_ik.has_chain and convert.to_blender(obj, pb, self.keep_source, result):
                    if self.keep_source:
                        convert.park(obj, pb)
                    else:
                        remove_chain(obj, pb)
        convert.last_result = result
        live.invalidate()
        if result.converted:
            solve_now(context, obj)
        kind = "Reach IK chain" if self.direction == "TO_REACH_IK" else "IK constraint"
        if not result.converted and not result.skipped:
            source = "IK constraints" if self.direction == "TO_REACH_IK" else "Reach IK chains"
            self.report({"WARNING"}, f"No {source} to convert")
            return {"CANCELLED"}
        warn = result.skipped or result.not_carried
        self.report({"WARNING"} if warn else {"INFO"}, result.message(kind))
        return {"FINISHED"}


class REACH_IK_OT_apply_to_fk(bpy.types.Operator):
    """Key the solved pose of the chain bones on the current frame (IK → FK snapping)"""

    bl_idname = "reach_ik.apply_to_fk"
    bl_label = "Apply to FK"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 (Blender reads a plain set)

    all_chains: BoolProperty(  # type: ignore[valid-type]
        name="All Chains",
        description="Every chain of the armature (else the active bone's chain)",
        default=False,
    )
    disable_chains: BoolProperty(  # type: ignore[valid-type]
        name="Disable Chains",
        description="Switch the chains off afterwards: the keyed FK pose takes over",
        default=False,
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _poll_armature(cls, context):
            return False
        obj = _armature(context)
        if not chain_spec.chain_tips(obj):
            cls.poll_message_set("The armature has no Reach IK chains")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> Result:
        obj, scene = _armature(context), context.scene
        if obj is None or scene is None:
            self.report({"ERROR"}, "Needs an active armature object in a scene")
            return {"CANCELLED"}
        report = evaluate.solve_chains(obj, context.evaluated_depsgraph_get())
        poses = report.poses
        if not self.all_chains:
            pb = context.active_pose_bone
            tip = pb.name if pb is not None and pb.id_data == obj else ""
            poses = [p for p in poses if p.tip == tip]
            if not poses:
                why = report.problems.get(tip, "it has no enabled Reach IK chain")
                self.report({"ERROR"}, f"Cannot apply '{tip or 'the active bone'}': {why}")
                return {"CANCELLED"}
        if not poses:
            problems = "; ".join(report.problems.values())
            self.report({"ERROR"}, f"No chain could be solved: {problems}")
            return {"CANCELLED"}
        evaluate.apply_poses(obj, poses)
        frame = scene.frame_current
        keyed = 0
        for pose in poses:
            for name in pose.bone_names:
                pb = obj.pose.bones[name]
                mode = pb.rotation_mode
                path = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}
                pb.keyframe_insert(path.get(mode, "rotation_euler"), frame=frame, group=name)
                keyed += 1
            if self.disable_chains:
                obj.pose.bones[pose.tip].reach_ik.enabled = False
        worst = max(p.error for p in poses)
        self.report(
            {"INFO"},
            f"Keyed {keyed} bones of {len(poses)} chain(s) at frame {frame} "
            f"(largest residual {worst:.3g} m)",
        )
        return {"FINISHED"}


classes = (
    REACH_IK_OT_add,
    REACH_IK_OT_remove,
    REACH_IK_OT_convert_constraints,
    REACH_IK_OT_apply_to_fk,
)
