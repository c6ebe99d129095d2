# SPDX-License-Identifier: GPL-3.0-or-later
"""Diagnostics on the timeline: pops, bend flips, out-of-reach and limit-bound frames.

:func:`scan` samples a chain's inputs frame by frame (the armature as Blender evaluates it
at each frame, live solving included, so chains above it are followed) and solves all the
frames at once with the bake's solve path (:func:`.solve_frames.solve_chain_frames`), so what it
finds is what the live preview shows and a bake keys. :func:`find_events` then looks at
the solved frames:

* **pop** — a joint turns more than ``pop_deg`` (default 20°) from the previous frame;
* **flip** — the bend plane's normal (root→effector × bend, the bend being the inner
  joints' mean offset from the root→effector line) points against the previous frame's
  (the last frame where the chain was bent: a chain passing through straight and coming
  out bent the other way flips too);
* **reach** — the target lies beyond the straightened chain;
* **missed** — within reach at full influence but further than the miss tolerance from it
  (joint limits: "unreachable within limits", see :mod:`.shown`);
* **limit** — a joint rests on one of its limits (turning it slightly past, any way its
  free axes allow, is clamped back by :meth:`core.JointLimits.project`).

:func:`mark` puts a timeline marker on each pop and flip frame and at the first frame of
each run of reach / missed / limit frames, named ``"RIK <kind> <tip>"``; the markers it
made last time (recorded on the scene, by frame and name) are removed first, and no other
marker is ever touched. The operator ``reach_ik.diagnose`` runs it on the scene's range (or
the preview range) and reports a summary; the bake calls it afterwards when asked to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import bpy
import numpy as np
from bpy.props import FloatProperty, IntProperty
from mathutils import Matrix

from ..core import JointLimits, forward_kinematics
from ..core import rotations as rot
from ..core.errors import ReachIKError
from . import affine, chain_spec, rotation_modes, solve_frames
from .blender_types import ArmatureObject, is_armature
from .operators import Result, poll_chains
from .rig import RigChain, base_rows
from .shown import MISS

if TYPE_CHECKING:
    from .bake import BakeOptions

Kind = Literal["pop", "flip", "reach", "missed", "limit"]
KINDS: tuple[Kind, ...] = ("pop", "flip", "reach", "missed", "limit")
#: Marker name prefix, and the scene property recording the markers :func:`mark` made.
PREFIX = "RIK"
RECORD = "reach_ik_markers"
#: Bends below this fraction of the chain's length have no plane (the chain is straight).
STRAIGHT = 1e-3
#: Turn (radians) by which :func:`limit_bound` pushes a joint past its pose.
NUDGE = 1e-3


@dataclass
class Scan:
    """One chain solved at ``F`` frames (world metres).

    Attributes:
        frames: ``(F,)`` frame numbers.
        rotations: ``(F, n, 4)`` basis rotations wxyz, blended with FK by influence.
        joints: ``(F, n + 1, 3)`` joint positions, world; the last is the effector.
        targets: ``(F, 3)`` target points, world.
        reachable: ``(F,)`` the target is within the straightened chain's reach.
        full: ``(F,)`` the chain is enabled at full influence.
        tolerance: how far from the target counts as missed, world metres.
        limits: the chain's joint limits.
    """

    frames: np.ndarray
    rotations: np.ndarray
    joints: np.ndarray
    targets: np.ndarray
    reachable: np.ndarray
    full: np.ndarray
    tolerance: float
    limits: tuple[JointLimits, ...] = field(default=())


def _goal_world(ob: bpy.types.Object, bone: str, depsgraph: bpy.types.Depsgraph) -> Matrix:
    ev = ob.evaluated_get(depsgraph)
    if bone and ev.type == "ARMATURE":
        if ev.pose is None:
            raise ReachIKError(f"the armature '{ob.name}' has no pose to read '{bone}' from")
        return ev.matrix_world @ ev.pose.bones[bone].matrix
    return ev.matrix_world.copy()


def scan(scene: bpy.types.Scene, obj: ArmatureObject, tip: str, frames: Sequence[int]) -> Scan:
    """Solve the chain ending at ``tip`` at every frame of ``frames`` (see the module
    docstring); a disabled chain is solved as if enabled. Leaves the scene at the last frame.

    Raises:
        ReachIKError: the chain cannot be solved (no target, bad rig…).
    """
    spec = chain_spec.read_spec(obj.pose.bones[tip])
    if spec.target is None:
        raise ReachIKError(f"'{tip}' has no target")
    rig: RigChain = chain_spec.rig_chain(obj, tip, spec.chain_length, spec.use_tail)
    names = rig.bone_names
    count = len(frames)
    world = np.empty((count, 4, 4))
    parent = rig.parent
    parents = np.empty((count, 4, 4)) if parent is not None else None
    root_location = np.empty((count, 3))
    goals = np.empty((count, 4, 4))
    pole = obj.pose.bones[tip].reach_ik.pole  # as set; Use Pole may be animated
    poles = np.empty((count, 3)) if pole is not None else None
    use_pole = np.zeros(count, dtype=bool)
    fk = np.empty((count, len(names), 4))
    settings = np.empty((count, 3))
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
        depsgraph = bpy.context.evaluated_depsgraph_get()
        ev = obj.evaluated_get(depsgraph)
        bones = ev.pose.bones
        world[i] = ev.matrix_world
        if parents is not None and parent is not None:
            parents[i] = bones[parent].matrix
        root_location[i] = bones[names[0]].location
        goals[i] = _goal_world(spec.target, spec.target_bone, depsgraph)
        s = bones[tip].reach_ik
        if poles is not None:
            poles[i] = _goal_world(pole, spec.pole_bone, depsgraph).translation
            use_pole[i] = s.use_pole
        settings[i] = (s.influence, s.pole_angle, s.orient_weight)
        fk[i] = rotation_modes.fk_rotations(bones, names)
    targets = goals[:, :3, 3].copy()  # an object's origin, or a bone's head
    world_rows = affine.rows_of(world)
    parent_rows = None if parents is None else affine.rows_of(parents)
    location = affine.vec_of(root_location)
    solved = solve_frames.solve_chain_frames(
        rig,
        chain_spec.spec_fixed(spec),
        solve_frames.FrameInputs(
            world=world_rows,
            parent=parent_rows,
            root_location=location,
            target=affine.vec_of(targets),
            pole=None if poles is None else affine.vec_of(poles),
            goal=affine.rows_of(goals) if spec.use_rotation else None,
            fk=fk,
            influence=settings[:, 0],
            pole_angle=settings[:, 1],
            orient_weight=settings[:, 2],
            use_pole=use_pole,
            frame_count=count,
        ),
    )
    bases = affine.to_array(base_rows(rig, world_rows, parent_rows, location), count)
    rotations, reachable = np.asarray(solved.rotations), np.asarray(solved.reachable)
    links = np.ones((count, len(names)))  # each link's stretch (1: none)
    if solved.scales is not None:
        links = np.cumprod(np.asarray(solved.scales), axis=-1)
    if np.all(links == 1.0):
        local = forward_kinematics(rig.chain, rotations)[0]
    else:
        local = np.array(
            [
                forward_kinematics(rig.chain.scaled(s), q)[0]
                for q, s in zip(rotations, links, strict=True)
            ]
        )
    joints = np.einsum("fij,fkj->fki", bases[:, :3, :3], local) + bases[:, None, :3, 3]
    scale = float(np.mean(np.linalg.norm(bases[0, :3, :3], axis=0)))
    length = float(np.sum(rig.chain.lengths)) * scale
    return Scan(
        frames=np.asarray(frames, dtype=np.int64),
        rotations=rotations,
        joints=joints,
        targets=targets,
        reachable=reachable,
        full=settings[:, 0] >= 1.0,
        tolerance=max(spec.tolerance * scale, MISS * length),
        limits=tuple(rig.chain.limits),
    )


def bend_normals(joints: np.ndarray) -> np.ndarray:
    """Unit bend-plane normals ``(F, 3)`` of joint positions ``(F, m, 3)``; rows of zeros
    where the chain is straight (bend below :data:`STRAIGHT` of its length)."""
    root, effector = joints[:, 0], joints[:, -1]
    axis = effector - root
    axis_len = np.linalg.norm(axis, axis=-1, keepdims=True)
    unit = np.divide(axis, axis_len, out=np.zeros_like(axis), where=axis_len > 0)
    inner = joints[:, 1:-1] - root[:, None]
    along = np.einsum("fkj,fj->fk", inner, unit)
    bend = np.mean(inner - along[..., None] * unit[:, None], axis=1)
    normal = np.cross(unit, bend)
    size = np.linalg.norm(normal, axis=-1, keepdims=True)
    length = np.sum(np.linalg.norm(np.diff(joints, axis=1), axis=-1), axis=-1)[:, None]
    ok = size > STRAIGHT * length
    return np.divide(normal, size, out=np.zeros_like(normal), where=ok)


def limit_bound(limits: Sequence[JointLimits], rotations: np.ndarray) -> np.ndarray:
    """``(F,)`` whether some joint of ``rotations (F, n, 4)`` rests on a limit: a turn of
    :data:`NUDGE` about one of its free axes (either way) is clamped back by more than half."""
    count = rotations.shape[0]
    out = np.zeros(count, dtype=bool)
    for j, lim in enumerate(limits):
        if lim.is_free or lim.kind == "fixed":
            continue
        if lim.hinge_axis is not None or lim.kind == "hinge":
            axes = [lim.hinge[0]]
        else:
            axes = [np.eye(3)[k] for k in range(3) if not lim.lock[k]]
        q = rotations[:, j]
        for axis in axes:
            for sign in (1.0, -1.0):
                pushed = rot.multiply(q, rot.from_axis_angle(axis, sign * NUDGE))
                out |= lim.violation(pushed) > 0.5 * NUDGE
    return out


def find_events(found: Scan, pop_deg: float = 20.0) -> dict[Kind, list[int]]:
    """Frames of each kind of event (module docstring): pop and flip frames, and the first
    frame of each run of reach, missed and limit frames."""
    frames = found.frames
    events: dict[Kind, list[int]] = {k: [] for k in KINDS}
    q = found.rotations
    if len(frames) > 1:
        turn = rot.angle(rot.multiply(rot.conjugate(q[:-1]), q[1:]))  # (F-1, n)
        pops = np.flatnonzero(np.max(turn, axis=-1) > math.radians(pop_deg)) + 1
        events["pop"] = [int(frames[i]) for i in pops]
    last = None
    for i, normal in enumerate(bend_normals(found.joints)):
        if not normal.any():
            continue
        if last is not None and float(np.dot(normal, last)) < 0.0:
            events["flip"].append(int(frames[i]))
        last = normal
    errors = np.linalg.norm(found.joints[:, -1] - found.targets, axis=-1)
    runs: dict[Kind, np.ndarray] = {
        "reach": ~found.reachable,
        "missed": found.reachable & found.full & (errors > found.tolerance),
        "limit": limit_bound(found.limits, q),
    }
    for kind, flags in runs.items():
        starts = np.flatnonzero(flags & ~np.concatenate(([False], flags[:-1])))
        events[kind] = [int(frames[i]) for i in starts]
    return events


def marker_name(kind: Kind, tip: str) -> str:
    words = {"reach": "out of reach", "limit": "at limit"}
    return f"{PREFIX} {words.get(kind, kind)} {tip}"


def _recorded(scene: bpy.types.Scene) -> list[tuple[int, str]]:
    text = scene.get(RECORD, "")
    out = []
    for line in str(text).splitlines():
        frame, _, name = line.partition("\t")
        if name:
            out.append((int(frame), name))
    return out


def clear_markers(scene: bpy.types.Scene) -> int:
    """Remove the markers :func:`mark` made last time (still at their frame with their
    name); returns how many."""
    wanted = set(_recorded(scene))
    removed = 0
    for marker in list(scene.timeline_markers):
        key = (marker.frame, marker.name)
        if key in wanted:
            wanted.discard(key)
            scene.timeline_markers.remove(marker)
            removed += 1
    scene[RECORD] = ""
    return removed


def mark(
    scene: bpy.types.Scene,
    obj: ArmatureObject,
    frame_start: int,
    frame_end: int,
    tips: Sequence[str] | None = None,
    pop_deg: float = 20.0,
) -> tuple[dict[str, dict[Kind, list[int]]], dict[str, str]]:
    """Scan the chains ``tips`` (default: every enabled chain of ``obj``) over the frame
    range, replace the markers of the last run by new ones, and return the events per
    chain and why chains were skipped. The scene returns to its current frame."""
    if tips is None:
        tips = [t for t in chain_spec.chain_tips(obj) if obj.pose.bones[t].reach_ik.enabled]
    current = scene.frame_current
    frames = list(range(int(frame_start), int(frame_end) + 1))
    found: dict[str, dict[Kind, list[int]]] = {}
    skipped: dict[str, str] = {}
    try:
        for tip in tips:
            try:
                found[tip] = find_events(scan(scene, obj, tip, frames), pop_deg)
            except (ReachIKError, KeyError) as exc:
                skipped[tip] = str(exc)
    finally:
        scene.frame_set(current)
    clear_markers(scene)
    record = []
    for tip, events in found.items():
        for kind, at in events.items():
            for frame in at:
                marker = scene.timeline_markers.new(marker_name(kind, tip), frame=frame)
                record.append(f"{frame}\t{marker.name}")
    scene[RECORD] = "\n".join(record)
    return found, skipped


def summary(found: dict[str, dict[Kind, list[int]]], skipped: dict[str, str]) -> str:
    """One line: the events per kind over all chains, the chains with any, and skips."""
    totals = {k: sum(len(e[k]) for e in found.values()) for k in KINDS}
    words = {"pop": "pops", "flip": "flips", "reach": "out of reach", "missed": "missed"}
    words["limit"] = "at limit"
    parts = [f"{totals[k]} {words[k]}" for k in KINDS]
    text = f"Reach IK diagnose: {len(found)} chain(s): " + ", ".join(parts)
    worst = [t for t, e in found.items() if any(e[k] for k in KINDS)]
    if worst:
        text += " (" + ", ".join(worst) + ")"
    if skipped:
        text += "; skipped " + "; ".join(f"{t}: {why}" for t, why in skipped.items())
    return text


def after_bake(
    operator: bpy.types.Operator,
    scene: bpy.types.Scene,
    obj: ArmatureObject,
    tips: Sequence[str],
    options: BakeOptions,
) -> None:
    """The bake's *Diagnose* option: mark the baked chains over the baked range and report
    (a removed chain has no settings left to solve, so it is skipped with a message)."""
    kept = [t for t in tips if obj.pose.bones[t].reach_ik.has_chain]
    if not kept:
        operator.report({"WARNING"}, "Diagnose: the baked chains were removed; nothing to scan")
        return
    found, skipped = mark(scene, obj, options.frame_start, options.frame_end, kept)
    operator.report({"WARNING"} if skipped else {"INFO"}, summary(found, skipped))


class REACH_IK_OT_diagnose(bpy.types.Operator):
    """Scan a frame range and mark pops, bend flips, out-of-reach and limit-bound frames of
    the armature's enabled chains as timeline markers ("RIK …", replacing the last scan's)"""

    bl_idname = "reach_ik.diagnose"
    bl_label = "Diagnose"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 (Blender reads a plain set)

    frame_start: IntProperty(name="Start", description="First frame", default=1)  # type: ignore[valid-type]
    frame_end: IntProperty(name="End", description="Last frame", default=250)  # type: ignore[valid-type]
    pop_deg: FloatProperty(  # type: ignore[valid-type]
        name="Pop Angle",
        description="A joint turning more than this between frames is a pop (degrees)",
        default=20.0,
        min=0.1,
        max=180.0,
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_chains(cls, context, writes_armature=False)

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> Result:
        scene = context.scene
        if scene is not None:
            preview = scene.use_preview_range
            self.frame_start = scene.frame_preview_start if preview else scene.frame_start
            self.frame_end = scene.frame_preview_end if preview else scene.frame_end
        return self.execute(context)

    def execute(self, context: bpy.types.Context) -> Result:
        scene, obj = context.scene, context.object
        if scene is None or not is_armature(obj):
            self.report({"ERROR"}, "Needs an active armature object in a scene")
            return {"CANCELLED"}
        if self.frame_end < self.frame_start:
            self.report(
                {"ERROR"}, f"End frame {self.frame_end} comes before start {self.frame_start}"
            )
            return {"CANCELLED"}
        found, skipped = mark(scene, obj, self.frame_start, self.frame_end, pop_deg=self.pop_deg)
        if not found:
            self.report({"ERROR"}, summary(found, skipped))
            return {"CANCELLED"}
        self.report({"WARNING"} if skipped else {"INFO"}, summary(found, skipped))
        return {"FINISHED"}


classes = (REACH_IK_OT_diagnose,)
