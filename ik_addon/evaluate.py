# SPDX-License-Identifier: GPL-3.0-or-later
"""Live solving: solve an armature's Reach IK chains at one frame, and write the poses.

The data path of a frame, top-down in this file: :func:`solve_chains` takes each chain as
planned until the next invalidate (:mod:`.live_state`; :func:`_planned`: its model and its
fixed settings, parents first), reads the animated settings and the inputs as Blender
evaluated them (:mod:`.pose_state`), reuses the earlier result when those inputs are
unchanged, and otherwise solves the chain by :func:`.solve_frames.solve_chain_frames` for
this one frame — the function baking calls for ``F`` frames at once, so a baked pose is
the live pose. Around it: :mod:`.chain_spec` (settings, methods, chain models),
:mod:`.rotation_modes` (rotation channels). Stable API:

``solve_armature(obj, depsgraph) -> list[ChainPose]``
    Solves every enabled chain of the armature object ``obj`` from the state evaluated in
    ``depsgraph`` at its current frame (targets, poles, the parents above each chain root,
    the FK pose, animated settings such as influence), without writing anything. Chains
    that cannot be solved (no target, bad length, …) are left out; :func:`solve_chains`
    also returns their messages.

``apply_poses(obj, poses) -> None``
    Writes the poses into the rotation channels of ``obj``'s pose bones (the original, not
    the evaluated copy), each in the bone's rotation mode: quaternion (sign kept continuous
    with the current value), every Euler order (continuous with the current value, like
    Blender's ``Euler.make_compatible``) and axis-angle. Only *Apply to FK* does this; live
    solving shows poses through constraints (:mod:`.constraints`) and leaves the channels
    alone.

``ChainPose`` (frozen):
    ``tip`` the pose bone holding the settings; ``bone_names`` the joints root→tip;
    ``rotations`` ``(n, 4)`` wxyz, each bone's local rotation in its basis space (what
    ``pose_bone.rotation_quaternion`` would hold), already blended with the FK pose by the
    chain's influence; ``error`` the distance in world metres from the effector of that
    pose to the target; ``reachable`` the target lies within the chain's reach (straight
    length) of the root; ``target_world`` and ``effector_world`` 3 floats each, world
    metres; ``scales`` ``(n,)`` on a chain whose *Stretch* is on (else ``None``), each
    bone's own uniform scale factor, blended by influence: its link's stretch over the
    stretch of the bone above it in the chain (a bone inherits its parent's scale), so the
    bones' posed lengths are their rest lengths times the links' stretch.

How a chain is solved (:func:`.solve_frames.solve_chain_frames`, in float64 on Blender's
values; deterministic: the pose at a frame depends only on that frame's inputs, never on
the previous frame):

1. the chain (:mod:`.rig`) and its base frame: the root parent's posed matrix, as evaluated
   or, when that parent is moved by another chain solved before (chains are solved parents
   first), recomputed from that chain's new rotations;
2. target, pole and goal orientation are taken to the base frame
   (world → armature space → base frame) and the core solves from the **rest pose**
   (:class:`core.Solver`), so the bend plane comes from the rest pose's bend (or faces the
   pole);
3. without an orientation goal, the core removes the twist the goal does not need
   (:mod:`core.untwist`: free joints aim at their solved next joint by the shortest swing
   from rest), so bones do not spin about themselves while the target moves smoothly;
4. the result is blended with the FK pose, ``slerp(q_FK, q_IK, influence)`` per bone (a
   link's stretch ``1 + influence · (s − 1)``).

*Stretch* and *Soft Reach* are the core's ``stretch`` and ``soft_reach`` options
(:mod:`core.stretch`); the links' stretch weights are the bones' *IK Stretch* (:mod:`.rig`).

The FK pose is the bones' own rotation channels (keyed or not): live solving never writes
them (:mod:`.constraints`), so they always hold it and
:func:`.rotation_modes.fk_rotations` just reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, NamedTuple, cast

import bpy
import numpy as np
from mathutils import Vector

from ..core import ReachIKError
from . import affine, dependencies, own_constraints
from .blender_types import ArmatureObject
from .chain_spec import (
    _Fixed,
    _fixed,
    armature_chains,
    dependency_chains,
    read_animated,
    rig_chain,
)
from .live_state import live
from .pose_state import _point_world, _PoseState, _rotation_world
from .rig import RigChain, rig_signature
from .rotation_modes import fk_rotations, quaternion_to_values, read_rotation, write_rotation
from .solve_frames import FrameInputs, solve_chain_frames


@dataclass(frozen=True, eq=False)
class ChainPose:
    """A solved chain (see the module docstring for each field's frame and units)."""

    tip: str
    bone_names: tuple[str, ...]
    rotations: np.ndarray
    error: float
    reachable: bool
    target_world: tuple[float, ...]
    effector_world: tuple[float, ...]
    scales: np.ndarray | None = None
    #: With *Rotation*, the angle (radians) from the goal orientation to the last bone's.
    turn: float | None = None


class Solved(NamedTuple):
    """A solved chain as :func:`solve_chains` first holds it: the fields of
    :class:`ChainPose`, with ``rotations`` as ``n`` rows of 4 floats, the two points as
    mathutils vectors and ``scales`` as ``n`` floats (or ``None``). Live solving reads
    these on every frame; numpy arrays and tuples (:attr:`SolveReport.poses`) are made only
    when asked for."""

    tip: str
    bone_names: tuple[str, ...]
    rotations: list[list[float]]
    error: float
    reachable: bool
    target_world: Vector
    effector_world: Vector
    scales: list[float] | None = None
    #: The target's world matrix (rows, columns scaled) whose rotation the last bone was to
    #: take (*Rotation*), else ``None``.
    goal_world: affine.Rows | None = None
    #: With *Rotation*, the angle (radians) from that goal to the solved last bone's.
    turn: float | None = None


@dataclass
class SolveReport:
    """What :func:`solve_chains` found: the solved chains, why other chains were skipped,
    and the bones of the chains not solved (disabled, or skipped). Read it, do not change
    it (not frozen: a frozen dataclass costs twice as much to make, on every frame)."""

    solved: list[Solved]
    problems: dict[str, str]
    idle: tuple[str, ...] = ()
    #: Per solved chain tip, everything its solve read (:func:`solve_chains`' ``known``).
    inputs: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: The tips of :attr:`solved` that were solved now (the others were reused from ``known``).
    fresh: tuple[str, ...] = ()

    @cached_property
    def poses(self) -> list[ChainPose]:
        """The solved chains as :class:`ChainPose`."""
        return [
            ChainPose(
                tip=s.tip,
                bone_names=s.bone_names,
                rotations=np.array(s.rotations, dtype=np.float64),
                error=s.error,
                reachable=s.reachable,
                target_world=s.target_world.to_tuple(),
                effector_world=s.effector_world.to_tuple(),
                scales=None if s.scales is None else np.array(s.scales, dtype=np.float64),
                turn=s.turn,
            )
            for s in self.solved
        ]


@dataclass(frozen=True, eq=False)
class _Planned:
    """A chain of an armature as live solving meets it on every frame until the next
    invalidate (:mod:`.live_state`): its model (or why it has none) and its fixed settings."""

    tip: str
    rig: RigChain | None
    problem: str
    fixed: _Fixed
    #: Its goal depends on another chain's bones through constraints or drivers
    #: (:attr:`.dependencies.Analysis.evaluated`).
    evaluated: bool = False
    #: A chain after it in the plan may read its solved bones from the pass's pose state
    #: (:func:`_feeding`): its root lies below them, or its target or pole is a bone of this
    #: armature. Only then does the solve add this chain's rotations to that state.
    feeds: bool = True


def _planned(obj: ArmatureObject) -> list[_Planned]:
    """The chains of ``obj`` (original), parents first: a chain whose bones lie above
    another chain's root is solved before it."""
    key = obj.as_pointer()
    hit = live.plans.get(key)
    if hit is not None and hit[0] == live.generation:
        return hit[1]
    out: list[tuple[Any, str, _Planned]] = []
    for tip in armature_chains(obj):
        fixed = _fixed(obj.pose.bones[tip].reach_ik)
        try:
            rig = rig_chain(obj, tip, fixed.chain_length, fixed.use_tail)
        except ReachIKError as exc:
            out.append((-1, tip, _Planned(tip, None, str(exc), fixed)))
            continue
        out.append((rig.root_depth, tip, _Planned(tip, rig, "", fixed)))
    analysis = dependencies.analyse(dependency_chains())
    for k, (depth, tip, item) in enumerate(out):
        problem = analysis.problems.get((obj.name, tip))
        if problem and item.rig is not None:
            item = replace(item, problem=problem)
        if (obj.name, tip) in analysis.evaluated:
            item = replace(item, evaluated=True)
        rank = analysis.ranks.get((obj.name, tip), 0)
        out[k] = ((rank, depth), tip, item)
    out.sort(key=lambda item: (item[0], item[1]))
    plan = _feeding(obj, [item[2] for item in out])
    live.plans[key] = (live.generation, plan, own_constraints.placing(obj))
    return plan


def _feeding(obj: ArmatureObject, plan: list[_Planned]) -> list[_Planned]:
    """``plan`` with :attr:`_Planned.feeds` set: a chain feeds the chains after it that may
    read its solved bones from :class:`.pose_state._PoseState` — one whose root lies below
    its bones (:meth:`~.pose_state._PoseState.parent_matrix`), and any whose target or pole
    is a bone of ``obj`` (:func:`.pose_state._point_world`; taken to read every bone)."""
    out: list[_Planned] = []
    below: set[str] = set()  # the bones above the roots of the chains after this one
    reads_bones = False  # a chain after this one aims at or bends toward a bone of obj
    for item in reversed(plan):
        rig, fixed = item.rig, item.fixed
        feeds = rig is not None and (reads_bones or not below.isdisjoint(rig.bone_names))
        out.append(replace(item, feeds=feeds))
        if rig is not None:
            below |= rig.above
            reads_bones = reads_bones or (
                (bool(fixed.target_bone) and fixed.target == obj)
                or (bool(fixed.pole_bone) and fixed.pole == obj)
            )
    return out[::-1]


def posed_only(obj: ArmatureObject, constrained: bool) -> bool:
    """Whether ``obj``'s chains are still as this generation planned them, so that an update
    listing it changed its pose alone (a bone dragged, a control moved, the armature
    moved): it is out of Edit Mode, has a plan of this generation, and each planned chain's
    rest data and IK limits match its model (:func:`.rig.rig_signature`; a chain without a
    model, or whose bones are gone or renamed, does not); where the update may have edited
    a constraint (``constrained``: Blender lists the object's transform as updated), its
    constraints also place the same bones as when planned (:func:`.own_constraints.placing`).
    What else could change the plan comes with updates :func:`.handlers.edits_chains` tells
    apart: Reach IK's settings start a new generation themselves (their property callbacks),
    and constraints, drivers and parents added or retargeted are Blender's relations."""
    if obj.mode == "EDIT":
        return False
    hit = live.plans.get(obj.as_pointer())
    if hit is None or hit[0] != live.generation:
        return False
    if constrained and hit[2] != own_constraints.placing(obj):
        return False
    try:
        return all(
            item.rig is not None and item.rig.signature == rig_signature(obj, item.rig.bone_names)
            for item in hit[1]
        )
    except KeyError:  # (a chain bone renamed)
        return False


def waits_for_evaluation(obj: ArmatureObject) -> bool:
    """Whether some chain of ``obj`` reads a goal that depends on another chain's bones
    through constraints or drivers (:mod:`.dependencies`): solved right only once Blender
    has evaluated that chain's new pose, so live solving and the bake solve it again after
    an evaluation (:func:`.handlers.solve_scene`)."""
    return any(item.evaluated for item in _planned(obj))


def solve_chains(
    obj: ArmatureObject,
    depsgraph: bpy.types.Depsgraph,
    known: Mapping[str, tuple[tuple[Any, ...], Solved]] | None = None,
) -> SolveReport:
    """Solve every enabled chain of ``obj`` (see :func:`solve_armature`).

    Args:
        known: per chain tip, the inputs and result of an earlier solve of this armature
            (:attr:`SolveReport.inputs`, same generation, :mod:`.live_state`): a chain whose
            inputs now equal those is not solved again, that result is reused (live solving
            keeps one per frame). The inputs are everything the solve reads, exactly (Blender's
            floats): the animated settings (enabled, influence, pole angle, orientation
            weight, use pole), the target's world position, the armature's world matrix,
            the posed matrix of the parent above the root (as this pass sees it), the
            root's location channels, the pole's world position, the
            target's world rotation (orientation goal) and the FK rotations (influence
            below 1). Chains are visited parents first, so a chain below another one sees
            that one's (reused or new) rotations, as in a full solve.

    Returns:
        The poses, a message per chain tip that was skipped (disabled chains are not
        mentioned), the bones of the chains not solved, the inputs of each solved chain
        and which of them were solved now.
    """
    problems: dict[str, str] = {}
    solved: list[Solved] = []
    idle: list[str] = []
    inputs: dict[str, tuple[Any, ...]] = {}
    fresh: list[str] = []
    plan = _planned(obj)
    if not plan:
        return SolveReport(solved, problems)
    obj_eval = obj.evaluated_get(depsgraph)
    if obj_eval.pose is None:
        return SolveReport(solved, problems)
    state = _PoseState(obj_eval)
    world_rows = affine.rows_of(obj_eval.matrix_world)
    bones = state.pose_bones
    for item in plan:
        pb = bones.get(item.tip)
        if pb is None:
            continue
        enabled, influence, pole_angle, orient_weight, use_pole = read_animated(pb.reach_ik)
        rig = item.rig
        if rig is None:
            if enabled:
                problems[item.tip] = item.problem
            continue
        if item.problem:  # a feedback loop (see .dependencies): the FK pose shows
            if enabled:
                problems[item.tip] = item.problem
            idle.extend(rig.bone_names)
            continue
        if not enabled:
            idle.extend(rig.bone_names)
            continue
        fixed = item.fixed
        try:
            target = fixed.target.evaluated_get(depsgraph) if fixed.target else None
            pole = fixed.pole.evaluated_get(depsgraph) if fixed.pole and use_pole else None
        except ReferenceError:  # the target or pole was deleted since: read the chains again
            live.invalidate()
            return solve_chains(obj, depsgraph)
        try:
            target_world = _point_world(
                target, fixed.target_bone, "target", obj_eval, state, world_rows
            )
            parent_matrix = state.parent_matrix(rig)
            parent = None if parent_matrix is None else affine.rows_of(parent_matrix)
            root_location = bones[rig.bone_names[0]].location[:]
            pole_world = None
            if pole is not None:
                pole_world = _point_world(
                    pole, fixed.pole_bone, "pole", obj_eval, state, world_rows
                )
            goal_rot = None
            if fixed.use_rotation:
                goal_rot = _rotation_world(target, fixed.target_bone, obj_eval, state, world_rows)
            fk = fk_rotations(bones, rig.bone_names) if influence < 1.0 else None
            seen = (
                (enabled, influence, pole_angle, orient_weight, use_pole),
                tuple(target_world),
                world_rows,
                parent,
                root_location,
                None if pole_world is None else tuple(pole_world),
                None if goal_rot is None else tuple(map(tuple, goal_rot)),
                None if fk is None else fk.tobytes(),
            )
            earlier = known.get(item.tip) if known is not None else None
            if earlier is not None and earlier[0] == seen:
                inputs[item.tip] = seen
                solved.append(earlier[1])
                if item.feeds:
                    state.add_solved(rig.bone_names, earlier[1].rotations, earlier[1].scales)
                continue
            sol = solve_chain_frames(
                rig,
                fixed,
                FrameInputs(
                    world_rows,
                    parent,
                    root_location,
                    target_world,
                    pole_world,
                    goal_rot,
                    fk,
                    influence,
                    pole_angle,
                    orient_weight,
                ),
            )
        except ReachIKError as exc:
            problems[item.tip] = str(exc)
            idle.extend(rig.bone_names)
            continue
        # One frame: the solution holds plain Python values (solve_frames.FrameSolution).
        rotations = cast("list[list[float]]", sol.rotations)
        scales = cast("list[float] | None", sol.scales)
        solved.append(
            Solved(
                item.tip,
                rig.bone_names,
                rotations,
                float(sol.errors),
                bool(sol.reachable),
                Vector(cast("list[float]", target_world)),
                Vector(cast("list[float]", sol.effectors)),
                scales,
                goal_rot,
                cast("float | None", sol.turns),
            )
        )
        inputs[item.tip] = seen
        fresh.append(item.tip)
        if item.feeds:
            state.add_solved(rig.bone_names, rotations, scales)
    return SolveReport(solved, problems, tuple(idle), inputs, tuple(fresh))


def solve_armature(obj: ArmatureObject, depsgraph: bpy.types.Depsgraph) -> list[ChainPose]:
    """Solve every enabled chain of ``obj`` at the depsgraph's frame; writes nothing."""
    return solve_chains(obj, depsgraph).poses


# ----------------------------------------------------------------------------- writing
def apply_poses(obj: ArmatureObject, poses: Iterable[ChainPose]) -> None:
    """Write solved poses into the rotation channels of ``obj``'s pose bones (module
    docstring)."""
    pose_bones = obj.pose.bones
    for pose in poses:
        for name, q in zip(pose.bone_names, pose.rotations, strict=True):
            pb = pose_bones.get(name)
            if pb is not None:
                write_rotation(pb, quaternion_to_values(q, pb.rotation_mode, read_rotation(pb)))


#: :meth:`.live_state.LiveState.invalidate`, importable here for scripts/.
invalidate = live.invalidate

#: Names scripts/ and tests read from this module that now live in the modules above.
__all__ = [
    "ChainPose",
    "SolveReport",
    "Solved",
    "apply_poses",
    "solve_armature",
    "solve_chains",
]
