# SPDX-License-Identifier: GPL-3.0-or-later
"""Stored solutions: the solved rotations kept as keys on the helpers, and a record in
memory of what each stored frame was solved from.

Live solving shows a chain's pose through its bones' *Reach IK* constraints
(:mod:`.constraints`), each copying the rotation of a helper empty. The solved rotation of
a frame is **keyed** on the helper at that frame (its ``rotation_quaternion`` F-curves, and
on a stretching chain its ``scale`` F-curves, in an action of the helper's own, never the
user's), so a frame shown again plays in one
evaluation like any keyed rig, and a file opened where Reach IK is not installed plays
the solved pose at every frame that was shown.

Keys (:func:`key_rotation`): one per component at the frame (subframes too: the time is
``scene.frame_current_final``), value ``q`` or ``−q`` (the same rotation), whichever is nearer
what the curves already hold at that time (``w ≥ 0`` for a first key), so neighbouring keys
stay in one hemisphere even where a rotation passes a half turn; **linear** interpolation,
so a time between two stored keys plays the normalised linear blend of the two rotations,
turning the short way. Keys
are inserted with ``keyframe_points.insert(..., options={'FAST'})``, which replaces a key
already at that frame and tags the action for re-evaluation; a solution equal to the key
already there (:func:`is_keyed`: a key at that time, each component within
:data:`KEY_TOLERANCE`) is not written again, so solving a frame again after an edit that did
not change it, after an undo or after opening the file costs no re-evaluation. Each helper's
action is named ``"Reach IK <armature>:<bone>"`` and carries :data:`OWNER_KEY`; it is
deleted with its helper (:func:`remove_action`).

The record (:func:`known`, :func:`remember`): per armature object and time, each chain's
inputs and result as :func:`.evaluate.solve_chains` returned them (its ``known``
argument). The live handlers pass the record of the frame shown to the solve, which reuses
a chain's result when its inputs are unchanged; only chains solved anew are keyed. The
record belongs to one :attr:`.live_state.LiveState.generation` (a changed setting, an undo, a loaded
file start a new one) and is dropped as a whole when the helpers change (:func:`forget`).
It lives in memory only: after a file is opened every frame is solved once more when it is
first shown (and keyed only if the solution differs from the key there). Keys edited by
hand on a helper drop every record (the handler sees the action change).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import bpy

from ..core import ReachIKError
from . import evaluate
from .blender_types import ArmatureObject
from .live_state import live

#: Custom property of a helper's action: the name of the helper it animates.
OWNER_KEY = "reach_ik_helper"
_LAYERED_ACTIONS = bpy.app.version >= (4, 4, 0)

Known = dict[str, tuple[tuple[Any, ...], evaluate.Solved]]


def known(obj: ArmatureObject, time: float) -> Known | None:
    """The record of ``obj``'s chains at ``time`` (``None``: nothing stored there in this
    generation)."""
    hit = live.records.get(obj.as_pointer())
    if hit is None or hit[0] != live.generation:
        return None
    return hit[1].get(time)


def remember(obj: ArmatureObject, time: float, report: evaluate.SolveReport) -> None:
    """Record what ``report`` solved at ``time`` (every solved chain, reused or new)."""
    key = obj.as_pointer()
    hit = live.records.get(key)
    if hit is None or hit[0] != live.generation:
        hit = live.records[key] = (live.generation, {})
    hit[1][time] = {s.tip: (report.inputs[s.tip], s) for s in report.solved}


def forget(obj: bpy.types.Object | None = None) -> None:
    """Drop the record of ``obj`` (every armature when ``None``): its helpers changed, an
    undo step, a file loaded."""
    if obj is None:
        live.records.clear()
    else:
        live.records.pop(obj.as_pointer(), None)


def stored_times(obj: ArmatureObject) -> list[float]:
    """The times recorded for ``obj`` in this generation, ascending."""
    hit = live.records.get(obj.as_pointer())
    if hit is None or hit[0] != live.generation:
        return []
    return sorted(hit[1])


# ----------------------------------------------------------------------------- keys
def helper_fcurves(helper: bpy.types.Object) -> list[bpy.types.FCurve]:
    """The helper's four ``rotation_quaternion`` F-curves (w, x, y, z), with its action
    created and assigned when missing."""
    return _fcurves(helper, "rotation_quaternion", 4)


def scale_fcurves(helper: bpy.types.Object) -> list[bpy.types.FCurve]:
    """The helper's three ``scale`` F-curves (x, y, z): a stretching chain's bone's scale
    factor (:mod:`.constraints`), keyed like the rotation."""
    return _fcurves(helper, "scale", 3)


def _fcurves(helper: bpy.types.Object, path: str, count: int) -> list[bpy.types.FCurve]:
    """The helper's F-curves of ``path`` (indices ``0 … count − 1``), with its action
    created and assigned when missing."""
    adt = helper.animation_data or helper.animation_data_create()
    if adt is None:
        raise ReachIKError(f"the helper '{helper.name}' cannot be animated")
    action = adt.action
    if action is None:
        action = bpy.data.actions.new(helper.name)
        action[OWNER_KEY] = helper.name
        adt.action = action
    if _LAYERED_ACTIONS:
        if adt.action_slot is None:
            slot = action.slots.new(id_type="OBJECT", name=helper.name)
            adt.action_slot = slot
        return [action.fcurve_ensure_for_datablock(helper, path, index=i) for i in range(count)]
    legacy: Any = action  # Blender 4.2/4.3: Action.fcurves, not in the 5.0 stubs
    curves = legacy.fcurves
    return [curves.find(path, index=i) or curves.new(path, index=i) for i in range(count)]


#: Largest difference of a component from a key that counts as that key (F-curves hold
#: float32 values; Blender rounds a keyed value to within one unit in the last place).
KEY_TOLERANCE = 2.0**-23


def _has_key(fcurve: bpy.types.FCurve, time: float) -> bool:
    """``fcurve`` has a key at ``time`` (binary search over its sorted keys)."""
    points = fcurve.keyframe_points
    lo, hi = 0, len(points)
    while lo < hi:
        mid = (lo + hi) // 2
        x = points[mid].co[0]
        if abs(x - time) <= 1e-4:
            return True
        if x < time:
            lo = mid + 1
        else:
            hi = mid
    return False


def held_at(fcurves: Sequence[bpy.types.FCurve], time: float) -> list[float]:
    """What the helper's F-curves (w, x, y, z) hold at ``time``: their keys' values there,
    else the blend of their neighbouring keys (what :func:`is_keyed` and
    :func:`key_rotation` compare with, read once for both)."""
    return [fc.evaluate(time) for fc in fcurves]


def is_keyed(
    fcurves: Sequence[bpy.types.FCurve],
    time: float,
    q: Sequence[float],
    held: Sequence[float] | None = None,
) -> bool:
    """The helper's F-curves (w, x, y, z) hold a key at ``time`` equal to ``q`` (wxyz, either
    sign) within :data:`KEY_TOLERANCE`. ``held``: :func:`held_at` of that time, when read
    already. The values are compared first: on a frame not keyed yet they differ, and the
    search for a key there (each probe a read of Blender data) is skipped."""
    held = held_at(fcurves, time) if held is None else held
    if not (
        all(abs(h - v) <= KEY_TOLERANCE for h, v in zip(held, q, strict=True))
        or all(abs(h + v) <= KEY_TOLERANCE for h, v in zip(held, q, strict=True))
    ):
        return False
    return _has_key(fcurves[0], time)


def key_rotation(
    helper: bpy.types.Object,
    fcurves: Sequence[bpy.types.FCurve],
    time: float,
    q: Sequence[float],
    held: Sequence[float] | None = None,
) -> None:
    """Key the rotation ``q`` (wxyz) on ``helper`` at ``time`` (module docstring) and set
    its ``rotation_quaternion`` to it. ``held``: :func:`held_at` of that time, when read
    already."""
    if len(fcurves[0].keyframe_points):
        # The sign nearest what the curves hold there (their neighbouring keys), so the
        # linear blend between neighbours turns the short way even through a half turn.
        held = held_at(fcurves, time) if held is None else held
        near = sum(h * v for h, v in zip(held, q, strict=True))
        flip = near < 0.0
    else:
        flip = q[0] < 0.0
    if flip:
        q = (-q[0], -q[1], -q[2], -q[3])
    for fc, value in zip(fcurves, q, strict=True):
        key = fc.keyframe_points.insert(time, value, options={"FAST"})
        if key is not None:
            key.interpolation = "LINEAR"
    helper.rotation_quaternion = q


def is_scale_keyed(fcurves: Sequence[bpy.types.FCurve], time: float, scale: float) -> bool:
    """The helper's scale F-curves hold a key at ``time`` equal to ``scale`` on every axis
    (within :data:`KEY_TOLERANCE` relative to the scale, float32 keys); the values first,
    as :func:`is_keyed`."""
    bar = KEY_TOLERANCE * max(1.0, abs(scale))
    if not all(abs(fc.evaluate(time) - scale) <= bar for fc in fcurves):
        return False
    return _has_key(fcurves[0], time)


def key_scale(
    helper: bpy.types.Object, fcurves: Sequence[bpy.types.FCurve], time: float, scale: float
) -> None:
    """Key the uniform ``scale`` on ``helper`` at ``time`` (linear interpolation) and set
    its ``scale`` to it."""
    for fc in fcurves:
        key = fc.keyframe_points.insert(time, scale, options={"FAST"})
        if key is not None:
            key.interpolation = "LINEAR"
    helper.scale = (scale, scale, scale)


def is_ours(action: bpy.types.Action) -> bool:
    """``action`` holds a helper's stored solutions."""
    return action.get(OWNER_KEY) is not None


def remove_action(helper: bpy.types.Object) -> None:
    """Delete the helper's stored solutions (its action, when Reach IK made it)."""
    adt = helper.animation_data
    action = adt.action if adt is not None else None
    if action is not None and action.get(OWNER_KEY) is not None and action.library is None:
        bpy.data.actions.remove(action)


def remove_orphan_actions() -> None:
    """Delete Reach IK's helper actions that no helper uses any more."""
    for action in [a for a in bpy.data.actions if a.get(OWNER_KEY) is not None]:
        if action.users == 0 and action.library is None:
            bpy.data.actions.remove(action)


__all__ = [
    "OWNER_KEY",
    "forget",
    "held_at",
    "helper_fcurves",
    "is_keyed",
    "is_ours",
    "is_scale_keyed",
    "key_rotation",
    "key_scale",
    "known",
    "remember",
    "remove_action",
    "remove_orphan_actions",
    "scale_fcurves",
    "stored_times",
]
