# SPDX-License-Identifier: GPL-3.0-or-later
"""Typing views of the Blender data the add-on works with (for mypy; fake-bpy-module).

The stubs type ``Object.pose`` as optional and ``Object.data`` as a union of every data
type, and do not know the ``reach_ik`` settings the add-on registers on pose bones or the
``reach_ik_overlay`` setting it registers on scenes. The add-on's functions that take an
armature object, a chain's pose bone or a scene whose overlay setting they read are
annotated with these narrower views instead of ``Any``:

* :class:`ArmatureObject`: an armature object, its pose and armature data present
  (:func:`is_armature` checks an object and narrows it to this view);
* :class:`ChainBone`: a pose bone with its :class:`.properties.ReachIKBoneSettings` (and
  its armature object as ``id_data``);
* :class:`ReachIKScene`: a scene with the overlay switch of :mod:`.properties`.

The views exist only for mypy: under ``TYPE_CHECKING`` the classes are declared; at run
time the names are ``object`` (annotations are never evaluated: every module uses ``from
__future__ import annotations``). Two small functions exist at run time too:
:func:`is_armature` (the check that narrows an object to :class:`ArmatureObject`) and
:func:`get_item` (``collection.get(key)``, typed as the stubs' ``get`` is not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard, TypeVar

if TYPE_CHECKING:
    import bpy

    from .properties import ReachIKBoneSettings

    class ChainBone(bpy.types.PoseBone):
        """A pose bone with the add-on's chain settings."""

        reach_ik: ReachIKBoneSettings

        @property
        def id_data(self) -> ArmatureObject:
            """The armature object whose pose holds the bone (the stubs: any ID, or None)."""
            ...

    class ArmaturePose(bpy.types.Pose):
        """An armature's pose, its bones with chain settings."""

        # The stubs' collection is invariant in its item type; a pose's bones are pose bones,
        # each with the chain settings the add-on registers, so the narrower item type holds.
        bones: bpy.types.bpy_prop_collection[ChainBone]  # type: ignore[assignment]

    class ArmatureObject(bpy.types.Object):
        """An armature object: its pose and armature data present."""

        data: bpy.types.Armature

        @property
        def pose(self) -> ArmaturePose: ...

    class ReachIKScene(bpy.types.Scene):
        """A scene with the add-on's overlay switch (:func:`.properties.register_properties`)."""

        reach_ik_overlay: bool

else:
    ChainBone = ArmaturePose = ArmatureObject = ReachIKScene = object

_Item = TypeVar("_Item")


def is_armature(obj: bpy.types.Object | None) -> TypeGuard[ArmatureObject]:
    """``obj`` is an armature object with a pose."""
    return obj is not None and obj.type == "ARMATURE" and obj.pose is not None


def get_item(
    collection: bpy.types.bpy_prop_collection[_Item], key: str | tuple[str, str | None]
) -> _Item | None:
    """``collection.get(key)``: the item of that name (for ``bpy.data``, of that ``(name,
    library path)``), or ``None`` (the stubs type ``get`` as returning its default, ``None``,
    whatever is found)."""
    return collection.get(key)


__all__ = [
    "ArmatureObject",
    "ArmaturePose",
    "ChainBone",
    "ReachIKScene",
    "get_item",
    "is_armature",
]
