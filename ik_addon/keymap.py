# SPDX-License-Identifier: GPL-3.0-or-later
"""Keyboard shortcuts mirroring Blender's IK in pose mode, in the add-on keyconfig.

* **Shift+I** — *Add Reach IK* to the active bone (Blender: *Add IK*);
* **Ctrl+Alt+I** — *Remove Reach IK* from the active bone (Blender: *Remove IK*).

They live in the add-on keyconfig's *Pose* keymap, which Blender consults before its
default keymap, so in pose mode they take the place of Blender's own two; *Preferences →
Keymap* lists them under *Pose* (switch them off there to get Blender's back).
:func:`unregister_keymap` removes exactly the items :func:`register_keymap` added.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, TypedDict

import bpy

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import EventTypeItems


class Modifiers(TypedDict, total=False):
    """The modifier keys of a shortcut."""

    shift: bool
    ctrl: bool
    alt: bool


#: ``(operator, key, modifiers)`` of each shortcut.
SHORTCUTS: tuple[tuple[str, EventTypeItems, Modifiers], ...] = (
    ("reach_ik.add", "I", {"shift": True}),
    ("reach_ik.remove", "I", {"ctrl": True, "alt": True}),
)

#: The (keymap, item) pairs this module added.
_items: list[tuple[bpy.types.KeyMap, bpy.types.KeyMapItem]] = []


def register_keymap() -> None:
    """Add :data:`SHORTCUTS` to the add-on keyconfig (none without one, e.g. some
    background runs)."""
    wm = bpy.context.window_manager
    keyconfig = wm.keyconfigs.addon if wm is not None else None
    if keyconfig is None:
        return
    km = keyconfig.keymaps.new(name="Pose", space_type="EMPTY")
    for idname, key, modifiers in SHORTCUTS:
        _items.append((km, km.keymap_items.new(idname, key, "PRESS", **modifiers)))


def unregister_keymap() -> None:
    for km, kmi in _items:
        with contextlib.suppress(ReferenceError, RuntimeError):  # gone with its keyconfig
            km.keymap_items.remove(kmi)
    _items.clear()
