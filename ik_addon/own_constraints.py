# SPDX-License-Identifier: GPL-3.0-or-later
"""Which pose-bone constraints are Reach IK's own, and whether others place a bone.

:mod:`.constraints` adds and keys Reach IK's constraints (a Copy Rotation named
:data:`NAME` on every chain bone, a Copy Scale named :data:`SCALE_NAME` on a stretching
chain's); :mod:`.pose_state` and :mod:`.dependencies` ask whether a bone is placed by
constraints other than those (:func:`reshapes`). Kept apart from :mod:`.constraints`,
which imports the live solver, so that the solver's own modules can ask.
"""

from __future__ import annotations

import bpy

from .blender_types import ArmatureObject

#: Name of the Copy Rotation constraint through which a chain bone shows its solved pose.
NAME = "Reach IK"
#: Name of the Copy Scale constraint through which a stretching chain's bone shows its scale.
SCALE_NAME = "Reach IK Scale"


def is_ours(con: bpy.types.Constraint) -> bool:
    """``con`` is a Reach IK constraint (rotation)."""
    return con.type == "COPY_ROTATION" and con.name.startswith(NAME)


def is_our_scale(con: bpy.types.Constraint) -> bool:
    """``con`` is a Reach IK scale constraint."""
    return con.type == "COPY_SCALE" and con.name.startswith(SCALE_NAME)


def reshapes(pose_bone: bpy.types.PoseBone) -> bool:
    """A constraint other than Reach IK's own places ``pose_bone`` (one not muted, with
    influence): its evaluated matrix is not its parent's times its own channels, so only
    Blender's evaluation gives it."""
    return any(
        not con.mute and con.influence > 0.0 and not (is_ours(con) or is_our_scale(con))
        for con in pose_bone.constraints
    )


def placing(obj: ArmatureObject) -> tuple[bool, ...]:
    """For every constraint other than Reach IK's own on every pose bone of ``obj``, in
    order, whether it places its bone (not muted, with influence; :func:`reshapes` asks it
    of one bone's): what an edit of a constraint's mute or influence changes."""
    return tuple(
        not con.mute and con.influence > 0.0
        for pose_bone in obj.pose.bones
        for con in pose_bone.constraints
        if not (is_ours(con) or is_our_scale(con))
    )
