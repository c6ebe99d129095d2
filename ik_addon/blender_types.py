# SPDX-License-Identifier: GPL-3.0-or-later
"""Typing-only views of the Blender data the add-on works with (for mypy; fake-bpy-module).

The stubs type ``Object.pose`` as optional and ``Object.data`` as a union of every data
type, and do not know the ``reach_ik`` settings the add-on registers on pose bones. The
add-on's functions that take an armature object or a chain's pose bone are annotated with
these narrower views instead of ``Any``:

* :class:`ArmatureObject`: an armature object, its pose and armature data present (the
  callers check ``obj.type == "ARMATURE"`` and ``obj.pose`` first);
* :class:`ChainBone`: a pose bone with its :class:`.properties.ReachIKBoneSettings`.

Nothing of it exists at run time: under ``TYPE_CHECKING`` the classes are declared for
mypy; at run time the names are ``object`` (annotations are never evaluated: every module
uses ``from __future__ import annotations``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import bpy

    from .properties import ReachIKBoneSettings

    class ChainBone(bpy.types.PoseBone):
        """A pose bone with the add-on's chain settings."""

        reach_ik: ReachIKBoneSettings

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

else:
    ChainBone = ArmaturePose = ArmatureObject = object

__all__ = ["ArmatureObject", "ArmaturePose", "ChainBone"]
