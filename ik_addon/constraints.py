# SPDX-License-Identifier: GPL-3.0-or-later
"""How a solved pose is shown: a *Reach IK* constraint on every bone a chain drives.

Live solving never writes the bones' own rotation channels, so the FK pose (keyed or not)
is never touched. Instead each chain bone carries a Copy Rotation constraint named
:data:`NAME` (owner space Local, target space World, mix Replace) whose target is a
*helper*: an empty that Reach IK owns, linked to no scene (it has a fake user so the file
keeps it; the constraint makes Blender evaluate it). The live handlers key the solved
rotation (the bone's basis rotation, wxyz) on the helper's ``rotation_quaternion`` at the
frame shown, in an action of the helper's own (:mod:`.stored`), and the constraint
replaces the bone's rotation with it, keeping its location and scale. The constraint, the
helper and its keys are plain Blender data: they play without Reach IK installed.

A chain whose links stretch (*Stretch* on, :func:`.solve_frames.stretches`) also gives each of
its bones a Copy Scale constraint named :data:`SCALE_NAME` (owner space Local, target space
World: it replaces the bone's own scale, as the rotation is replaced) targeting the same
helper, whose
``scale`` is keyed with the bone's uniform scale factor (:func:`.solve_frames.bone_scales`), as
Blender's IK scales a stretched bone uniformly; children inherit it as they inherit
Blender's. A chain shown without stretch has no such constraint (switching *Stretch* off
takes it off; the helper's scale keys are left in its action, unread).

Why not write the pose bones: any change to an armature object makes Blender copy the
whole armature for evaluation again (about 0.6 ms for the 159-bone metarig), and a
frame-change handler's change costs that on every frame; keys on the pose bones would also
mix with the user's own animation. A keyed helper is evaluated with the frame, before the
armature, so a stored frame costs no second evaluation (``scripts/bench_live.py``).

* Only bones that a chain solved at this frame carry the constraint: a disabled chain's
  bones (or a chain that cannot be solved) have none, so they show exactly their FK pose.
  (A muted constraint would not do: Blender still takes the bone through world space and
  back, which moves it by float rounding.)
* Removing or disabling a chain removes its constraints and deletes their helpers with
  their actions (the stored solutions). So does a chain that is not solved at a frame
  (its *Enabled* animated off, or a problem): the frames stored until then are solved and
  keyed again when shown.
* Each helper records the name of the armature object it serves
  (``helper["reach_ik_owner"]``; a name, not a pointer, which would count as a user and keep
  a deleted armature in the file). An armature duplicated with its chains gets helpers of its
  own on its first solve; a renamed one adopts its helpers.
* Helpers are per armature **instance**: on a library override the constraints that come
  from the library target the library's (linked) helpers, which every override of that
  rig would share and none may write; the override gets local helpers of its own on its
  first solve. A constraint from the library cannot be removed from an override for good
  (the library brings it back on load): it is muted instead (and switched on again when
  its chain is).
* Helpers that no Reach IK constraint targets any more (their armature deleted, a
  constraint deleted by hand) are deleted with their actions when a file is loaded
  (:func:`remove_orphans`, which also deletes helper actions no helper uses); a constraint
  deleted by hand gets its old helper back.

:func:`show` keys one solve's poses at a time (adding constraints, helpers and actions where
missing) and takes the constraints off the bones of chains that were not solved;
:func:`sync` takes them off bones that no enabled chain drives any more (after a chain is
removed, shortened or switched off) and gives a duplicated armature helpers of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeGuard

import bpy

from . import stored
from .blender_types import ArmatureObject, ChainBone, get_item, is_armature
from .live_state import live
from .own_constraints import NAME, SCALE_NAME, is_ours
from .rig import RigError, chain_bones

#: Custom property of a helper empty: the name of the armature object it serves.
OWNER_KEY = "reach_ik_owner"


def driven(obj: ArmatureObject) -> dict[str, bool]:
    """Every bone of ``obj`` that a chain drives → whether an enabled chain drives it (the
    settings as set, not as animated)."""
    out: dict[str, bool] = {}
    for pb in obj.pose.bones:
        s = pb.reach_ik
        if not s.has_chain:
            continue
        try:
            names = chain_bones(obj, pb.name, s.chain_length, s.use_tail)
        except RigError:
            continue
        for name in names:
            out[name] = out.get(name, False) or bool(s.enabled)
    return out


def find(pose_bone: bpy.types.PoseBone) -> bpy.types.CopyRotationConstraint | None:
    """The bone's Reach IK constraint, or ``None``."""
    con = get_item(pose_bone.constraints, NAME)
    return con if isinstance(con, bpy.types.CopyRotationConstraint) and is_ours(con) else None


def find_scale(pose_bone: bpy.types.PoseBone) -> bpy.types.CopyScaleConstraint | None:
    """The bone's Reach IK scale constraint, or ``None``."""
    con = get_item(pose_bone.constraints, SCALE_NAME)
    return con if isinstance(con, bpy.types.CopyScaleConstraint) else None


def is_helper(id_data: bpy.types.ID | None) -> bool:
    """``id_data`` is a helper empty of Reach IK."""
    return isinstance(id_data, bpy.types.Object) and id_data.get(OWNER_KEY) is not None


def _owned(helper: bpy.types.Object | None, obj: ArmatureObject) -> TypeGuard[bpy.types.Object]:
    """``helper`` is ``obj``'s: local (a linked helper belongs to the library's armature,
    not to an override of it) and recording ``obj``'s name."""
    return helper is not None and helper.library is None and helper.get(OWNER_KEY) == obj.name


def _local_object(name: str) -> bpy.types.Object | None:
    """The local (not linked) object of that name, or ``None`` (a linked object may share
    the name)."""
    found = get_item(bpy.data.objects, name)
    if found is None or found.library is None:
        return found
    return next((o for o in bpy.data.objects if o.name == name and o.library is None), None)


def _targets(obj: bpy.types.Object | None) -> set[bpy.types.Object]:
    """The helpers the Reach IK constraints of ``obj`` target."""
    if not is_armature(obj):
        return set()
    return {c.target for pb in obj.pose.bones if (c := find(pb)) is not None and c.target}


def _helper_name(obj: ArmatureObject, pose_bone: ChainBone) -> str:
    return f"{NAME} {obj.name}:{pose_bone.name}"


def _new_helper(obj: ArmatureObject, pose_bone: ChainBone) -> bpy.types.Object:
    """A helper for the bone: its former one when that is unused (a constraint deleted by
    hand), else a new empty. The keys stored at other times no longer describe what plays
    there: the armature's record is dropped (:func:`.stored.forget`)."""
    stored.forget(obj)
    helper = _local_object(_helper_name(obj, pose_bone))
    if helper is not None and is_helper(helper) and helper not in _targets(obj):
        helper[OWNER_KEY] = obj.name
        return helper
    helper = bpy.data.objects.new(_helper_name(obj, pose_bone), None)
    helper.use_fake_user = True
    helper.rotation_mode = "QUATERNION"
    helper[OWNER_KEY] = obj.name
    return helper


def _add(obj: ArmatureObject, pose_bone: ChainBone) -> bpy.types.Object:
    """Add the bone's constraint, targeting a new helper; returns the helper."""
    helper = _new_helper(obj, pose_bone)
    con = pose_bone.constraints.new("COPY_ROTATION")
    assert isinstance(con, bpy.types.CopyRotationConstraint)  # what new() makes of the type
    con.name = NAME
    con.owner_space = "LOCAL"
    con.target_space = "WORLD"
    con.mix_mode = "REPLACE"
    con.show_expanded = False
    con.target = helper
    return helper


def _from_library(pose_bone: ChainBone, con: bpy.types.Constraint) -> bool:
    """``con`` comes from the linked reference of a library override: the override cannot
    remove it for good (it comes back when the file is opened again). Found in the
    reference itself (``Constraint.is_override_data`` is not yet set on a new override in
    Blender 4.3)."""
    if getattr(con, "is_override_data", False):
        return True
    override = getattr(pose_bone.id_data, "override_library", None)
    reference = getattr(override, "reference", None) if override is not None else None
    if reference is None or getattr(reference, "pose", None) is None:
        return False
    linked = reference.pose.bones.get(pose_bone.name)
    return linked is not None and linked.constraints.get(con.name) is not None


def _parked(pose_bone: ChainBone, con: bpy.types.Constraint) -> bool:
    """``con`` is a library's constraint that :func:`_remove` muted on an override."""
    return bool(con.mute) and _from_library(pose_bone, con)


def _remove(
    obj: ArmatureObject, pose_bone: ChainBone, con: bpy.types.CopyRotationConstraint
) -> None:
    """Take the constraint off (on a library override, a constraint that comes from the
    library is muted instead: the override keeps that) and delete its helper and its
    stored solutions (the armature's record is dropped)."""
    stored.forget(obj)
    helper = con.target
    scale = find_scale(pose_bone)
    if scale is not None:
        _remove_scale(pose_bone, scale)
    if _from_library(pose_bone, con):
        con.mute = True
        return
    pose_bone.constraints.remove(con)
    if _owned(helper, obj):
        stored.remove_action(helper)
        bpy.data.objects.remove(helper)


def _remove_scale(pose_bone: ChainBone, con: bpy.types.Constraint) -> None:
    """Take the scale constraint off (muted instead when it comes from a library)."""
    if _from_library(pose_bone, con):
        con.mute = True
    else:
        pose_bone.constraints.remove(con)


def _show_scale(pose_bone: ChainBone, entry: list[Any], time: float, scale: float | None) -> bool:
    """Show the bone's scale factor ``scale`` through its scale constraint and its helper's
    ``scale`` keys (``None``: no stretch, the constraint is taken off). ``entry`` is the
    bone's ``[helper, rotation curves, scale curves or None]`` (the scale curves are filled
    in here). Returns whether anything was written."""
    helper = entry[0]
    if scale is None:
        con = find_scale(pose_bone)
        if con is None or con.mute:
            return False
        _remove_scale(pose_bone, con)
        return True
    changed = False
    if entry[2] is None:
        con = find_scale(pose_bone)
        if con is None:
            new = pose_bone.constraints.new("COPY_SCALE")
            assert isinstance(new, bpy.types.CopyScaleConstraint)  # what new() makes of the type
            new.name = SCALE_NAME
            new.owner_space = "LOCAL"
            new.target_space = "WORLD"
            new.show_expanded = False
            con = new
        if con.target != helper or con.mute:
            con.target = helper
            con.mute = False
            changed = True
        entry[2] = stored.scale_fcurves(helper)
    if not stored.is_scale_keyed(entry[2], time, scale):
        stored.key_scale(helper, entry[2], time, scale)
        changed = True
    return changed


def sync(obj: bpy.types.Object | None) -> None:
    """Take the constraints (and helpers) off every bone of ``obj`` that no enabled chain
    drives, give ``obj`` helpers of its own where its constraints target another armature's
    (a duplicate), and adopt the helpers of its old name (renamed). Changes only what
    differs. A driven bone without its constraint (deleted by hand) drops the armature's
    record of stored frames (:func:`.stored.forget`): the next solve adds it again."""
    if not is_armature(obj):
        return
    wanted = {name for name, enabled in driven(obj).items() if enabled}
    for pb in obj.pose.bones:
        con = find(pb)
        if con is None or con.target is None:
            if pb.name in wanted:
                stored.forget(obj)
            if con is None:
                continue
        if pb.name not in wanted:
            if not _parked(pb, con):
                _remove(obj, pb, con)
            continue
        helper = con.target
        if helper is None or _owned(helper, obj):
            continue
        if helper.library is not None:
            con.target = _new_helper(obj, pb)  # an override: the helper is the library's
            continue
        other = _local_object(str(helper.get(OWNER_KEY, "")))
        if other is not None and other != obj and helper in _targets(other):
            con.target = _new_helper(obj, pb)  # a duplicate: the helper is the original's
        else:
            helper[OWNER_KEY] = obj.name  # renamed, or found without an owner


def remove_orphans() -> None:
    """Delete helpers that no Reach IK constraint targets (their armature deleted, or a
    constraint deleted by hand)."""
    targeted: set[bpy.types.Object] = set()
    for obj in bpy.data.objects:
        targeted |= _targets(obj)
    for helper in [o for o in bpy.data.objects if is_helper(o) and o not in targeted]:
        if helper.library is None:
            stored.remove_action(helper)
            bpy.data.objects.remove(helper)
    stored.remove_orphan_actions()


def show(
    obj: ArmatureObject,
    poses: Iterable[tuple[Sequence[str], Sequence[Sequence[float]], Sequence[float] | None]],
    time: float,
    idle: Iterable[str] = (),
    epoch: int | None = None,
) -> bool:
    """Show solved poses: key each bone's rotation on its helper at ``time`` unless that key
    is there already (:func:`.stored.key_rotation`; adding the constraint, helper and action
    where missing);
    take the constraints (and helpers) off the bones in ``idle`` that no pose drives.

    Args:
        obj: the armature object (original).
        poses: ``(bone names, rotations, scales)`` per chain to key; rotations ``n`` rows
            of 4 floats wxyz (sequences or an array), the bones' basis rotations; scales
            ``n`` floats, the bones' scale factors of a stretching chain, or ``None``.
        time: the scene time keyed (frame and subframe: ``scene.frame_current_final``).
        idle: bones of chains that were not solved (disabled at this frame, or failing).
        epoch: when given, the helpers found are remembered and reused by later calls
            with the same epoch (live solving passes :attr:`.live_state.LiveState.generation`, which
            changes whenever the armature is edited, on undo and on load).

    Returns:
        Whether anything was written: a key (a rotation or scale that differs from the key
        at that time, :func:`.stored.is_keyed`) or a constraint added or removed.
    """
    pose_bones = obj.pose.bones
    known: dict[str, list[Any]] = {}
    if epoch is not None:
        hit = live.helpers.get(obj.as_pointer())
        if hit is not None and hit[0] == epoch:
            known = hit[1]
        else:
            live.helpers[obj.as_pointer()] = (epoch, known)
    changed = False
    shown: set[str] = set()
    for names, rotations, scales in poses:
        shown.update(names)
        for j, (name, row) in enumerate(zip(names, rotations, strict=True)):
            entry = known.get(name)
            fresh = entry is None
            if entry is not None:
                try:
                    held = stored.held_at(entry[1], time)
                    if not stored.is_keyed(entry[1], time, row, held):
                        stored.key_rotation(entry[0], entry[1], time, row, held)
                        changed = True
                except ReferenceError:  # the helper was deleted by hand
                    entry, fresh = None, True
            if entry is None:
                before = find(pose_bones[name])
                shown_by = before.target if before is not None and not before.mute else None
                helper = _helper(obj, pose_bones[name])
                changed = changed or helper != shown_by  # a constraint added or retargeted
                entry = known[name] = [helper, stored.helper_fcurves(helper), None]
                held = stored.held_at(entry[1], time)
                if not stored.is_keyed(entry[1], time, row, held):
                    stored.key_rotation(helper, entry[1], time, row, held)
                    changed = True
            # Without stretch the scale constraint is looked for once per epoch (a setting
            # change starts a new one).
            if scales is not None or fresh:
                scale = None if scales is None else float(scales[j])
                changed = _show_scale(pose_bones[name], entry, time, scale) or changed
    for name in idle:
        pb = pose_bones.get(name)
        if name in shown or pb is None:
            continue
        con = find(pb)
        if con is not None and not _parked(pb, con):
            known.pop(name, None)
            _remove(obj, pb, con)
            changed = True
    return changed


def _helper(obj: ArmatureObject, pose_bone: ChainBone) -> bpy.types.Object:
    """The bone's helper, adding the constraint (and helper) when missing; a constraint
    that targets a linked helper (a library override's) gets a local one, and one muted by
    :func:`_remove` is switched on again."""
    con = find(pose_bone)
    if con is not None and con.mute:
        con.mute = False
    if con is not None and con.target is not None and con.target.library is None:
        return con.target
    if con is not None and (con.target is not None or _from_library(pose_bone, con)):
        helper = _new_helper(obj, pose_bone)
        con.target = helper
        return helper
    if con is not None:
        _remove(obj, pose_bone, con)
    return _add(obj, pose_bone)


__all__ = [
    "NAME",
    "OWNER_KEY",
    "SCALE_NAME",
    "driven",
    "find",
    "find_scale",
    "is_helper",
    "is_ours",
    "remove_orphans",
    "show",
    "sync",
]
