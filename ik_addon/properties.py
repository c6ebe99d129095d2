# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's settings: one namespaced property group per pose bone, ``PoseBone.reach_ik``.

On a chain's **tip** bone it holds the chain's settings (``has_chain`` marks it). Changing
which bones a chain drives, or switching it on or off, updates the bones' *Reach IK*
constraints at once (:func:`.constraints.sync`).

Every setting is library-overridable (``override={'LIBRARY_OVERRIDABLE'}``, on the group's
properties and on ``PoseBone.reach_ik`` itself), so chain settings edited on an overridden
rig are kept when the file is saved and opened again.

The scene's ``reach_ik_overlay`` switches the 3D View overlay (:mod:`.overlay`) on and off.

Joint limits and stiffness are not here: they are Blender's own per-bone IK settings
(``lock_ik_*``, ``use_ik_limit_*``, ``ik_min/max_*``, ``ik_stiffness_*``), see :mod:`.rig`.
"""

from __future__ import annotations

import math
from typing import Literal

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from .chain_spec import METHOD_LABELS, METHOD_ORDER, available_methods
from .constraints import sync
from .live_state import live

#: Every Reach IK setting can be edited on a library override (and the edit is saved).
OVERRIDABLE: set[Literal["LIBRARY_OVERRIDABLE"]] = {"LIBRARY_OVERRIDABLE"}

_METHOD_HELP = {
    "triangulation": "One pass with the law of cosines (Müller-Cajar & Mukundan); no iterations",
    "ccd": "Cyclic Coordinate Descent: one joint at a time, iterated",
    "jacobian_transpose": "Jacobian transpose steps, iterated",
    "jacobian_pinv": "Jacobian pseudo-inverse (SVD) steps, iterated",
    "jacobian_dls": "Damped least squares Jacobian steps, iterated; stable near singular poses",
    "fabrik": "Forward and backward reaching on joint positions (Aristidou & Lasenby), iterated",
}


def _solver_items() -> list[tuple[str, str, str, int]]:
    # Stable numbers (saved in files) whatever subset of methods is available.
    numbers = {name: i for i, name in enumerate(METHOD_ORDER)}
    items: list[tuple[str, str, str, int]] = []
    for name in available_methods():
        number = numbers.get(name, len(METHOD_ORDER) + len(items))
        label = METHOD_LABELS.get(name, name.replace("_", " ").title())
        items.append((name, label, _METHOD_HELP.get(name, label), number))
    return items


def _tag(self: ReachIKBoneSettings, _context: bpy.types.Context) -> None:
    """A setting changed: drop what the live solver cached from the settings, and make the
    depsgraph copy the change (custom properties are not tagged)."""
    live.invalidate()
    obj = self.id_data
    if obj is not None:
        obj.update_tag()


def _animated(self: ReachIKBoneSettings, _context: bpy.types.Context) -> None:
    """A setting that may be animated changed (:data:`.chain_spec.ANIMATED_SETTINGS`): live
    solving reads it among a chain's inputs at every frame and caches nothing made from it,
    so it starts no new generation (the chains are not read again); the depsgraph copies
    the change and the next update solves with it."""
    obj = self.id_data
    if obj is not None:
        obj.update_tag(refresh={"DATA"})


def _chains_changed(self: ReachIKBoneSettings, context: bpy.types.Context) -> None:
    """Which bones the chains drive changed: bring the constraints in line."""
    live.invalidate()
    obj = self.id_data
    if isinstance(obj, bpy.types.Object):  # the armature whose pose bone holds the settings
        sync(obj)
    _tag(self, context)


def _poll_target(self: ReachIKBoneSettings, obj: bpy.types.Object) -> bool:
    return obj != self.id_data or obj.type == "ARMATURE"


class ReachIKBoneSettings(bpy.types.PropertyGroup):
    """A Reach IK chain's settings (on its tip bone)."""

    has_chain: BoolProperty(  # type: ignore[valid-type]
        name="Has Chain",
        description="This bone is the tip of a Reach IK chain",
        default=False,
        options=set(),
        override=OVERRIDABLE,
        update=_chains_changed,
    )
    enabled: BoolProperty(  # type: ignore[valid-type]
        name="Enabled",
        description="Solve this chain; when off, the bones show their FK pose",
        default=True,
        update=_chains_changed,
        override=OVERRIDABLE,
    )
    chain_length: IntProperty(  # type: ignore[valid-type]
        name="Chain Length",
        description=(
            "How many bones the chain has, counted from the tip (from the tip's parent "
            "when Use Tail is off)"
        ),
        default=2,
        min=1,
        soft_max=32,
        max=255,
        options=set(),
        override=OVERRIDABLE,
        update=_chains_changed,
    )
    target: PointerProperty(  # type: ignore[valid-type]
        name="Target",
        description="Object the chain's end reaches for (an armature: pick a bone too)",
        type=bpy.types.Object,
        poll=_poll_target,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    target_bone: StringProperty(  # type: ignore[valid-type]
        name="Bone",
        description="Bone of the target armature (its head is the goal)",
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    pole: PointerProperty(  # type: ignore[valid-type]
        name="Pole",
        description="Object the chain bends toward (an armature: pick a bone too)",
        type=bpy.types.Object,
        poll=_poll_target,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    pole_bone: StringProperty(  # type: ignore[valid-type]
        name="Pole Bone",
        description="Bone of the pole armature",
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    use_pole: BoolProperty(  # type: ignore[valid-type]
        name="Use Pole",
        description=(
            "Bend toward the pole (off: keep the rest pose's bend plane); may be driven, "
            "e.g. by a rig's pole switch"
        ),
        default=True,
        update=_animated,
        override=OVERRIDABLE,
    )
    pole_angle: FloatProperty(  # type: ignore[valid-type]
        name="Pole Angle",
        description=(
            "Turn of the bend about the root-to-target line, from the side facing the pole "
            "(0: the chain bends toward the pole)"
        ),
        default=0.0,
        min=-math.pi,
        max=math.pi,
        subtype="ANGLE",
        update=_animated,
        override=OVERRIDABLE,
    )
    solver: EnumProperty(  # type: ignore[valid-type]
        name="Solver",
        description="IK method",
        items=_solver_items(),
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    iterations: IntProperty(  # type: ignore[valid-type]
        name="Iterations",
        description="Most iterations of an iterative solver",
        default=100,
        min=1,
        max=10000,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    tolerance: FloatProperty(  # type: ignore[valid-type]
        name="Tolerance",
        description=(
            "Close enough to the target (iterative solvers); 0 means a millionth of the "
            "chain's length"
        ),
        default=0.0,
        min=0.0,
        soft_max=0.01,
        precision=6,
        subtype="DISTANCE",
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    influence: FloatProperty(  # type: ignore[valid-type]
        name="Influence",
        description="Blend between the FK pose (0) and the IK solution (1)",
        default=1.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_animated,
        override=OVERRIDABLE,
    )
    use_tail: BoolProperty(  # type: ignore[valid-type]
        name="Use Tail",
        description=(
            "The tip bone is part of the chain and its tail reaches the target (off: the "
            "chain ends at the tip's parent)"
        ),
        default=True,
        options=set(),
        override=OVERRIDABLE,
        update=_chains_changed,
    )
    use_rotation: BoolProperty(  # type: ignore[valid-type]
        name="Rotation",
        description="Also match the target's orientation with the chain's last bone",
        default=False,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    orient_weight: FloatProperty(  # type: ignore[valid-type]
        name="Orientation Weight",
        description=(
            "Weight of the orientation goal against the position goal (CCD and the Jacobian "
            "solvers; triangulation and FABRIK match the orientation first at any weight "
            "above 0)"
        ),
        default=0.5,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_animated,
        override=OVERRIDABLE,
    )
    use_stretch: BoolProperty(  # type: ignore[valid-type]
        name="Stretch",
        description=(
            "Let the chain's bones stretch to reach a target beyond the chain's length, "
            "each as readily as its IK Stretch (Bone properties > Inverse Kinematics); the "
            "stretch shows as the bones' scale"
        ),
        default=False,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    stretch_rule: EnumProperty(  # type: ignore[valid-type]
        name="Stretch As",
        description="How long the bones become when the chain stretches",
        items=(
            (
                "closed_form",
                "Closed Form",
                "Lengths unchanged within reach; beyond it the chain straight, the bones "
                "lengthened by shares of IK Stretch cubed; the target reached exactly",
                0,
            ),
            (
                "blender",
                "Blender's IK",
                "The lengths Blender's Standard IK gives (its iteration from the rest pose), "
                "within reach too: what a converted rig showed",
                1,
            ),
        ),
        default="closed_form",
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    soft_reach: FloatProperty(  # type: ignore[valid-type]
        name="Soft Reach",
        description=(
            "Distance before full extension over which the target's pull eases out, so the "
            "chain never snaps straight (with Stretch: the bones stretch by what it leaves "
            "short); 0 = off; must stay below the chain's length"
        ),
        default=0.0,
        min=0.0,
        soft_max=0.5,
        precision=4,
        subtype="DISTANCE",
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    source: StringProperty(  # type: ignore[valid-type]
        name="Converted From",
        description=(
            "The Blender IK constraints this chain was converted from, kept muted (JSON, "
            "see ik_addon.convert): converting back restores them"
        ),
        options=set(),
        override=OVERRIDABLE,
    )
    # Advanced: the core's SolveOptions that the chain passes on (defaults as the core's).
    bend_plane: EnumProperty(  # type: ignore[valid-type]
        name="Bend Plane",
        description="Which way the chain bends without a pole",
        items=(
            (
                "rest",
                "Rest Bend",
                "Keep the rest pose's bend side, carried with the target (never flips)",
                0,
            ),
            ("minimal", "Shortest Turn", "Each solver's own shortest-rotation bend", 1),
        ),
        default="rest",
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    delta_b: EnumProperty(  # type: ignore[valid-type]
        name="δb",
        description=(
            "Triangulation: the turn of a link when no triangle can be formed "
            "(180°: the paper; 90°: its future-work variant)"
        ),
        items=(("180", "180°", "The paper's δb", 0), ("90", "90°", "The future-work δb", 1)),
        default="180",
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    distribution: EnumProperty(  # type: ignore[valid-type]
        name="Bend Spread",
        description=(
            "Triangulation, and the start of CCD and the Jacobian solvers: how the bend is "
            "shared between the joints (with limits, the shared bend turned within them)"
        ),
        items=(
            (
                "even",
                "Even",
                "Every joint keeps its share of the rest bend: tails and necks curl evenly",
                0,
            ),
            (
                "root",
                "Root First",
                "The paper: each joint bends as far as it can, root first (long chains fold)",
                1,
            ),
        ),
        default="even",
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    damping: FloatProperty(  # type: ignore[valid-type]
        name="Damping",
        description="Jacobian DLS: the largest damping λ, used near singular poses",
        default=0.1,
        min=0.0,
        soft_max=2.0,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    max_step: FloatProperty(  # type: ignore[valid-type]
        name="Step Clamp",
        description="Jacobian solvers: the largest joint turn per update, degrees",
        default=10.0,
        min=0.01,
        max=180.0,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    posture_weight: FloatProperty(  # type: ignore[valid-type]
        name="Posture Bias",
        description=(
            "Jacobian solvers: pull toward the rest pose in the null space (chains of "
            "three or more bones keep natural poses); 0 = off"
        ),
        default=0.0,
        min=0.0,
        soft_max=1.0,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    sweep_steps: IntProperty(  # type: ignore[valid-type]
        name="CCD Sweep",
        description=(
            "CCD with Rotation: when stuck, sweep one joint over this many angles; 0 = off"
        ),
        default=12,
        min=0,
        max=360,
        options=set(),
        override=OVERRIDABLE,
        update=_tag,
    )
    bake_report: StringProperty(  # type: ignore[valid-type]
        name="Last Bake",
        description="The chain's quality report from its last bake (JSON, see ik_addon.bake)",
        options=set(),
        override=OVERRIDABLE,
    )


classes = (ReachIKBoneSettings,)


def _redraw_views(_self: bpy.types.Scene, context: bpy.types.Context) -> None:
    screen = getattr(context, "screen", None)
    for area in screen.areas if screen is not None else ():
        if area.type == "VIEW_3D":
            area.tag_redraw()


def register_properties() -> None:
    bpy.types.PoseBone.reach_ik = PointerProperty(  # type: ignore[attr-defined]
        type=ReachIKBoneSettings, override=OVERRIDABLE
    )
    bpy.types.Scene.reach_ik_overlay = BoolProperty(  # type: ignore[attr-defined]
        name="Overlay",
        description=(
            "Draw Reach IK chains in the 3D View: bones, target and pole lines, bend plane, "
            "a red mark where the target is missed"
        ),
        default=True,
        options=set(),
        update=_redraw_views,
    )


def unregister_properties() -> None:
    delattr(bpy.types.Scene, "reach_ik_overlay")
    delattr(bpy.types.PoseBone, "reach_ik")
