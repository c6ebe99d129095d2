# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake, step 2: solve each chain over a block of frames, the first way that works.

:func:`_solve_block` tries, in order: batched from F-curves (:func:`_bake_from_curves`),
batched from every frame read (:func:`_bake_every_frame`) — both give the sampled inputs
to :func:`.solve_frames.solve_chain_frames`, the function live solving calls for one
frame — and frame by frame with the live solver (:func:`_solve_frame_by_frame`).
:func:`_join_blocks` joins the blocks' results per chain.

Inputs read at every frame are the values live solving reads, so those frames are the
live poses (a test compares every frame). Inputs taken from F-curves are evaluated in
double precision where Blender uses single precision (~1e-7 relative), so that way is
checked against the live solver at its first and last frame, and its frames near full
reach are solved from the inputs Blender evaluates there (:data:`NEAR_FULL_REACH`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ..core import ReachIKError
from ..core import rotations as rot
from . import affine, constraints, dependencies, evaluate, handlers, stored
from .affine import Rows, Vec
from .bake_sampling import (
    SAMPLED,
    SOLVED,
    Progress,
    _ancestors,
    _checks,
    _depsgraph,
    _report_progress,
    _sample_every_frame,
    _sample_from_curves,
    _Samples,
)
from .blender_types import ArmatureObject
from .chain_spec import ChainSpec, spec_fixed
from .rig import RigChain
from .solve_frames import FrameInputs, solve_chain_frames

#: Largest allowed difference (radians, per joint) between the bake from F-curves and the
#: live solver at the frames where both run; beyond it the bake falls back to reading every
#: frame. It is far above rounding (inputs from F-curves in double precision differ from
#: Blender's single-precision values by ~1e-7 relative) and far below the bake's bar
#: (0.01° = 1.7e-4 rad).
CHECK_TOLERANCE = 1e-5

#: In a bake from F-curves, frames whose target lies within this fraction of the chain's
#: reach of full reach are solved from the inputs Blender evaluates there: the pose is
#: ill-conditioned (a joint angle goes like the square root of the reach margin), so
#: inputs ~1e-7 apart would give poses 0.01° apart at 2e-7 of reach; at 1e-3 the same
#: input difference moves a joint by ~2e-6 rad.
NEAR_FULL_REACH = 1e-3


def _points(matrices: np.ndarray, space: np.ndarray | None) -> Vec:
    """World positions of heads given their ``(F, 4, 4)`` matrices (for a bone: in its
    armature's world ``space``), as live solving reads them (:mod:`.pose_state`)."""
    head = affine.vec_of(matrices[:, :3, 3])
    return head if space is None else affine.transform(affine.rows_of(space), head)


def _orientation(matrices: np.ndarray, space: np.ndarray | None) -> Rows:
    """World matrices of goals (columns scaled), as live solving reads them."""
    m = affine.rows_of(matrices)
    return m if space is None else affine.compose(affine.rows_of(space), m)


@dataclass
class _Solved:
    """One chain's baked pose over all frames."""

    spec: ChainSpec
    bone_names: tuple[str, ...]
    chain_length_world: float
    rotations: np.ndarray  # (F, n, 4) basis rotations, blended with FK
    errors: np.ndarray  # (F,) world metres
    reachable: np.ndarray  # (F,)
    targets: np.ndarray  # (F, 3) world
    disabled: int = 0
    near_full_reach: np.ndarray | None = None  # (F,) bool, see NEAR_FULL_REACH
    scales: np.ndarray | None = None  # (F, n) bone scale factors of a stretching chain
    turns: np.ndarray | None = None  # (F,) radians from the goal orientation (Rotation)


def _solve_batched(s: _Samples, world: np.ndarray) -> _Solved:
    """Every frame of one chain: its sampled inputs to :func:`.solve_frames.solve_chain_frames`."""
    rig = s.rig
    enabled, influence, pole_angle, orient_weight, use_pole = s.settings.T
    target = _points(s.target, s.target_space)
    solved = solve_chain_frames(
        rig,
        spec_fixed(s.spec),
        FrameInputs(
            world=affine.rows_of(world),
            parent=None if s.parents is None else affine.rows_of(s.parents),
            root_location=affine.vec_of(s.root_location),
            target=target,
            pole=None if s.pole is None else _points(s.pole, s.pole_space),
            goal=_orientation(s.target, s.target_space) if s.spec.use_rotation else None,
            fk=s.fk,
            influence=np.where(enabled > 0.5, influence, 0.0),
            pole_angle=pole_angle,
            orient_weight=orient_weight,
            use_pole=use_pole > 0.5,
            frame_count=world.shape[0],
        ),
    )
    scale = float(np.mean(np.linalg.norm(world[0, :3, :3], axis=0)))
    return _Solved(
        spec=s.spec,
        bone_names=rig.bone_names,
        chain_length_world=float(np.sum(rig.chain.lengths)) * scale,
        rotations=np.asarray(solved.rotations),
        errors=np.asarray(solved.errors),
        reachable=np.asarray(solved.reachable),
        targets=np.stack(target, axis=-1),
        disabled=int(np.count_nonzero(enabled <= 0.5)),
        near_full_reach=np.abs(solved.distances / rig.chain.reach - 1.0) < NEAR_FULL_REACH,
        scales=None if solved.scales is None else np.asarray(solved.scales),
        turns=None if solved.turns is None else np.asarray(solved.turns),
    )


def _rest_dependencies(obj: ArmatureObject, spec: ChainSpec, rig: RigChain) -> set[str]:
    """Bones of ``obj`` whose pose this chain's inputs depend on (through constraints and
    drivers too: :func:`.dependencies.constraint_dependencies`)."""
    deps = _ancestors(obj, rig.parent) if rig.parent else set()
    for goal, bone in ((spec.target, spec.target_bone), (spec.pole, spec.pole_bone)):
        if goal is None:
            continue
        name = bone if goal.type == "ARMATURE" else ""
        if name and goal.original == obj.original:
            deps |= _ancestors(obj, name)
        through = dependencies.constraint_dependencies(goal.original or goal, name)
        own = (obj.original or obj).name
        deps |= {b for a, b in through if a == own}
    return deps


def _batchable(obj: ArmatureObject, rigs: dict[str, RigChain], specs: list[ChainSpec]) -> bool:
    """No baked chain depends on a bone that an enabled chain drives, nor reads one that
    another chain moves as Blender evaluated it (:func:`.evaluate.waits_for_evaluation`:
    through constraints, drivers or the parents of an object goal, on any armature)."""
    if evaluate.waits_for_evaluation(obj):
        return False
    driven = {name for name, enabled in constraints.driven(obj).items() if enabled}
    return all(not (_rest_dependencies(obj, s, rigs[s.tip]) & driven) for s in specs)


def _solve_samples(
    samples: list[_Samples], world: np.ndarray, progress: Progress | None, warnings: list[str]
) -> list[_Solved]:
    """Every sampled chain by :func:`_solve_batched`; a chain that fails is skipped with a
    warning."""
    solved = []
    for k, s in enumerate(samples):
        _report_progress(progress, SAMPLED + (SOLVED - SAMPLED) * k / len(samples))
        try:
            solved.append(_solve_batched(s, world))
        except ReachIKError as exc:
            warnings.append(f"chain '{s.spec.tip}' skipped: {exc}")
    return solved


def _bake_every_frame(
    scene: bpy.types.Scene,
    obj: ArmatureObject,
    specs: list[ChainSpec],
    rigs: dict[str, RigChain],
    frames: np.ndarray,
    progress: Progress | None,
    warnings: list[str],
) -> list[_Solved]:
    """The batched bake from inputs read at every frame (module docstring)."""
    samples = [_Samples(spec, rigs[spec.tip], obj) for spec in specs]
    world = _sample_every_frame(scene, obj, samples, frames, progress)
    return _solve_samples(samples, world, progress, warnings)


def _bake_from_curves(
    scene: bpy.types.Scene,
    obj: ArmatureObject,
    specs: list[ChainSpec],
    rigs: dict[str, RigChain],
    frames: np.ndarray,
    progress: Progress | None,
    warnings: list[str],
) -> list[_Solved] | None:
    """The batched bake from F-curves (module docstring); ``None`` if the inputs do not all
    follow from F-curves or the check against the live solver failed."""
    samples = [_Samples(spec, rigs[spec.tip], obj) for spec in specs]
    checks: dict[int, dict[str, evaluate.ChainPose]] = {}
    world = _sample_from_curves(scene, obj, samples, frames, progress, checks)
    if world is None:
        return None
    solved = _solve_samples(samples, world, progress, warnings)
    _solve_near_full_reach(scene, obj, solved, frames, checks)
    for i, expected in checks.items():
        for result in solved:
            want = expected.get(result.spec.tip)
            if want is None:
                continue
            got = result.rotations[i]
            gap = float(np.max(rot.angle(rot.multiply(rot.conjugate(want.rotations), got))))
            if result.scales is not None and want.scales is not None:
                gap = max(gap, float(np.max(np.abs(result.scales[i] - want.scales))))
            if not gap <= CHECK_TOLERANCE:
                warnings.append(
                    f"chain '{result.spec.tip}': the bake from F-curves differs from the live "
                    f"solve by {math.degrees(gap):.3g}° at frame {int(frames[i])}"
                )
                return None
    return solved


def _solve_near_full_reach(
    scene: bpy.types.Scene,
    obj: ArmatureObject,
    solved: list[_Solved],
    frames: np.ndarray,
    checks: dict[int, dict[str, evaluate.ChainPose]],
) -> None:
    """Solve the frames near full reach (:data:`NEAR_FULL_REACH`) with the live solver at
    that frame, and key its pose there (the other frames stay batched)."""
    near = np.zeros(frames.size, dtype=bool)
    for result in solved:
        if result.near_full_reach is not None:
            near |= result.near_full_reach
    if not near.any():
        return
    depsgraph = _depsgraph(scene)
    tips = [r.spec.tip for r in solved]
    for i in np.flatnonzero(near):
        if int(i) not in checks:
            scene.frame_set(int(frames[i]))
            checks[int(i)] = _checks(obj, depsgraph, tips)
        for result in solved:
            live = checks[int(i)].get(result.spec.tip)
            if (
                live is not None
                and result.near_full_reach is not None
                and result.near_full_reach[i]
            ):
                result.rotations[i] = live.rotations
                if result.scales is not None and live.scales is not None:
                    result.scales[i] = live.scales


def _solve_frame_by_frame(
    scene: bpy.types.Scene,
    obj: ArmatureObject,
    specs: list[ChainSpec],
    rigs: dict[str, RigChain],
    frames: np.ndarray,
    progress: Progress | None,
    warnings: list[str],
) -> list[_Solved]:
    """The live solver at every frame (module docstring, step 2's fallback)."""
    depsgraph = _depsgraph(scene)
    count = frames.size
    results: dict[str, dict[str, list[Any]]] = {s.tip: {} for s in specs}
    failed: dict[str, str] = {}
    step = max(count // 100, 1)
    world_scale = 1.0
    settles = evaluate.waits_for_evaluation(obj)
    # Live solving's passes cover every armature it solves (the chain followed may be
    # another armature's), this one included even when it is not in the scene's list.
    armatures = [o for o in handlers.solved_armatures(scene) if o != obj] + [obj]
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
        if settles:  # (live solving's passes: a goal that follows another chain's bones)
            time = scene.frame_current_final
            handlers.solve_settled(armatures, depsgraph, time)
            depsgraph.update()
            report = evaluate.solve_chains(obj, depsgraph, stored.known(obj, time))
        else:
            report = evaluate.solve_chains(obj, depsgraph)
        if i == 0:
            m = np.array(obj.evaluated_get(depsgraph).matrix_world, dtype=float)
            world_scale = float(np.mean(np.linalg.norm(m[:3, :3], axis=0)))
        poses = {p.tip: p for p in report.poses}
        for spec in specs:
            if spec.tip in failed:
                continue
            pose = poses.get(spec.tip)
            if pose is None:
                why = report.problems.get(spec.tip, "the chain is disabled")
                failed[spec.tip] = f"frame {int(frame)}: {why}"
                continue
            acc = results[spec.tip]
            acc.setdefault("rotations", []).append(pose.rotations)
            acc.setdefault("scales", []).append(pose.scales)
            acc.setdefault("errors", []).append(pose.error)
            acc.setdefault("reachable", []).append(pose.reachable)
            acc.setdefault("targets", []).append(pose.target_world)
            acc.setdefault("turns", []).append(pose.turn)
        if i % step == 0:
            _report_progress(progress, SAMPLED * (i + 1) / count)
    solved = []
    for spec in specs:
        if spec.tip in failed:
            warnings.append(f"chain '{spec.tip}' skipped: {failed[spec.tip]}")
            continue
        acc = results[spec.tip]
        rig = rigs[spec.tip]
        solved.append(
            _Solved(
                spec=spec,
                bone_names=rig.bone_names,
                chain_length_world=float(np.sum(rig.chain.lengths)) * world_scale,
                rotations=np.array(acc["rotations"]),
                errors=np.array(acc["errors"]),
                reachable=np.array(acc["reachable"]),
                targets=np.array(acc["targets"]),
                scales=None if any(x is None for x in acc["scales"]) else np.array(acc["scales"]),
                turns=None if any(x is None for x in acc["turns"]) else np.array(acc["turns"]),
            )
        )
    return solved


def _blocks(count: int, size: int) -> list[slice]:
    """``count`` frames in consecutive blocks of at most ``size``."""
    return [slice(start, min(start + size, count)) for start in range(0, count, size)]


def _block_progress(progress: Progress, k: int, count: int) -> Progress:
    """Progress of block ``k`` of ``count``: its ``0 … SOLVED`` mapped into its share."""
    return lambda x: progress(SOLVED * (k + min(x, SOLVED) / SOLVED) / count)


def _solve_block(
    scene: bpy.types.Scene,
    obj: ArmatureObject,
    specs: list[ChainSpec],
    rigs: dict[str, RigChain],
    frames: np.ndarray,
    progress: Progress,
    warnings: list[str],
) -> tuple[list[_Solved], str]:
    """Sample and solve one block of frames the first way that works (module docstring)."""
    args = (scene, obj, specs, rigs, frames, progress)
    if not _batchable(obj, rigs, specs):
        return _solve_frame_by_frame(*args, warnings), "frame by frame"
    notes: list[str] = []  # a failed check's message is dropped: the next way solves the block
    solved = _bake_from_curves(*args, notes)
    label = "batched, from F-curves"
    if solved is None:
        notes = []
        solved, label = _bake_every_frame(*args, notes), "batched"
    warnings.extend(n for n in notes if n not in warnings)  # once per bake, not per block
    return solved, label


def _join_blocks(parts: list[list[_Solved]], warnings: list[str]) -> list[_Solved]:
    """One :class:`_Solved` per chain over all blocks; a chain missing from a block (it
    failed there) is left out (its reason is in the warnings already)."""
    if len(parts) == 1:
        return parts[0]
    tips = [r.spec.tip for r in parts[0]]
    common = [t for t in tips if all(any(r.spec.tip == t for r in part) for part in parts)]
    joined = []
    for tip in common:
        pieces = [next(r for r in part if r.spec.tip == tip) for part in parts]
        first = pieces[0]
        joined.append(
            _Solved(
                spec=first.spec,
                bone_names=first.bone_names,
                chain_length_world=first.chain_length_world,
                rotations=np.concatenate([r.rotations for r in pieces]),
                errors=np.concatenate([r.errors for r in pieces]),
                reachable=np.concatenate([r.reachable for r in pieces]),
                targets=np.concatenate([r.targets for r in pieces]),
                disabled=sum(r.disabled for r in pieces),
                scales=None
                if any(r.scales is None for r in pieces)
                else np.concatenate([r.scales for r in pieces if r.scales is not None]),
                turns=None
                if any(r.turns is None for r in pieces)
                else np.concatenate([r.turns for r in pieces if r.turns is not None]),
            )
        )
    return joined
