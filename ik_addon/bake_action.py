# SPDX-License-Identifier: GPL-3.0-or-later
"""The action a bake keys into, and where its F-curves live.

:func:`prepare_action` makes sure the armature has the action (and, on Blender 4.4+, the
slot) to bake into: the assigned one, or a copy when asked or when other objects share it
(:func:`action_users`), the original kept with a fake user; :class:`Channels` finds and
makes the F-curves :mod:`.keying` writes.

Works with the legacy actions of Blender 4.2/4.3 (``action.fcurves``) and with the layered,
slotted actions of 4.4+ (the assigned slot's channelbag in the first layer's keyframe strip).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy

from ..core import ReachIKError
from .blender_types import ArmatureObject

_LAYERED_ACTIONS = bpy.app.version >= (4, 4, 0)


class Channels:
    """Where an object's F-curves live: a legacy action or the assigned slot's channelbag."""

    def __init__(self, obj: ArmatureObject) -> None:
        adt = obj.animation_data
        action = adt.action if adt is not None else None
        if adt is None or action is None:
            raise ReachIKError(f"'{obj.name}' has no action to key (see prepare_action)")
        self.action = action
        # The F-curves' owner: the slot's channelbag, or on Blender 4.2/4.3 the legacy action
        # (whose API is not in the 5.0 stubs); both have ``fcurves``.
        self._bag: Any = action
        if _LAYERED_ACTIONS:
            slot = adt.action_slot
            layer = action.layers[0] if action.layers else None
            if layer is None:
                layer = action.layers.new("Layer")
            strip = layer.strips[0] if layer.strips else None
            if strip is None:
                strip = layer.strips.new(type="KEYFRAME")
            if not isinstance(strip, bpy.types.ActionKeyframeStrip):  # the only kind yet
                raise ReachIKError(f"action '{action.name}' has no keyframe strip to key")
            self._bag = strip.channelbag(slot, ensure=True)

    def find(self, data_path: str, index: int) -> bpy.types.FCurve | None:
        return self._bag.fcurves.find(data_path, index=index)

    def new(self, data_path: str, index: int, group: str) -> bpy.types.FCurve:
        if not _LAYERED_ACTIONS:
            return self._bag.fcurves.new(data_path, index=index, action_group=group)
        try:
            return self._bag.fcurves.new(data_path, index=index, group_name=group)
        except TypeError:
            fcurve = self._bag.fcurves.new(data_path, index=index)
            groups = self._bag.groups
            fcurve.group = groups.get(group) or groups.new(group)
            return fcurve


def _new_action_name(obj: ArmatureObject) -> str:
    return f"{obj.name}_ReachIK_bake"


def action_users(action: bpy.types.Action) -> list[str]:
    """Names of the objects that use ``action``: as their assigned action or in an NLA strip."""
    users = []
    for obj in bpy.data.objects:
        adt = obj.animation_data
        if adt is None:
            continue
        strips = (strip for track in adt.nla_tracks for strip in track.strips)
        if adt.action == action or any(strip.action == action for strip in strips):
            users.append(obj.name)
    return users


@dataclass(frozen=True)
class PreparedAction:
    """The action a bake keys into.

    Attributes:
        action: the action keyed.
        original: the name of the action that was assigned before, when the bake keys a
            new one (kept, with a fake user so that it survives save and reopen); ``""``
            when the bake keys the assigned action itself or there was none.
        shared_with: other objects that use the original action, when that is why a new
            action was made (a shared action is not overwritten unless asked).
    """

    action: bpy.types.Action
    original: str = ""
    shared_with: tuple[str, ...] = ()


def prepare_action(
    obj: ArmatureObject, into: str, overwrite_shared: bool = False
) -> PreparedAction:
    """Make sure ``obj`` has the action (and slot) to bake into, and return it.

    ``into``: ``"CURRENT"`` keys into the assigned action (a new one when there is none);
    ``"NEW"`` assigns a copy of the current action (or an empty one). An assigned action
    that other objects use too (as their action or in NLA strips) is copied as with
    ``"NEW"`` unless ``overwrite_shared``, as Blender's own bake does. Whenever a copy is
    made, the original gets a fake user so that it stays in the file as it was.
    """
    if into not in ("CURRENT", "NEW"):
        raise ValueError(f"into must be 'CURRENT' or 'NEW', got {into!r}")
    adt = obj.animation_data or obj.animation_data_create()
    if adt is None:
        raise ReachIKError(f"'{obj.name}' cannot be animated")
    current = adt.action
    slot_identifier = adt.action_slot.identifier if _LAYERED_ACTIONS and adt.action_slot else ""
    shared: tuple[str, ...] = ()
    if current is not None and into == "CURRENT" and not overwrite_shared:
        shared = tuple(name for name in action_users(current) if name != obj.name)
    original = ""
    if into == "CURRENT" and current is not None and not shared:
        action = current
    elif current is not None:
        current.use_fake_user = True
        original = current.name
        copied = current.copy()
        if copied is None:
            raise ReachIKError(f"action '{current.name}' cannot be copied")
        action = copied
        action.name = _new_action_name(obj)
    else:
        action = bpy.data.actions.new(_new_action_name(obj))
    if adt.action != action:
        adt.action = action
    if _LAYERED_ACTIONS and adt.action_slot is None:
        slot = next((s for s in action.slots if s.identifier == slot_identifier), None)
        if slot is None:
            slot = next(
                (s for s in action.slots if s.target_id_type in ("OBJECT", "UNSPECIFIED")), None
            )
        if slot is None:
            slot = action.slots.new("OBJECT", obj.name)
        adt.action_slot = slot
    return PreparedAction(action, original, shared)
