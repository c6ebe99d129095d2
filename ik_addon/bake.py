# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake Reach IK chains to ordinary keyframes: options → one bake function → a result.

:class:`BakeOptions` says what to bake, :func:`bake` does it (no UI, no context needed, so
the operator and the headless script ``scripts/bake.py`` share it), :class:`BakeResult`
holds what happened: the action keyed, one :class:`~.quality.ChainQuality` per chain and
warnings. :class:`REACH_IK_OT_bake` is the thin operator around it.

How a bake runs (nothing is written until every frame is solved, so an interrupted or
failed bake leaves the file as it was; only the scene's frame is set back):

1. **Sample.** With live solving paused, each chain's inputs are read as Blender evaluates
   them: the armature's world matrix, the root parent's posed matrix and the root's
   location, target and pole matrices, the animatable settings (enabled, influence, pole
   angle, orientation weight) and, where the chain is blended with FK, the FK pose. When
   all of it follows from F-curves alone (:mod:`.sampling`: plain actions, no drivers,
   constraints or NLA on what is read), it is computed for all frames from them;
   otherwise the scene is set to every baked frame and everything is read there.
2. **Solve.** Each chain is solved for all frames at once by
   :func:`.evaluate.solve_chain_frames`, the function the live solver calls for one frame
   (base frame, targets in it, one batched :func:`core.solve` per group of frames sharing
   the same settings, untwist, blend with FK by influence). At the first and last frame the batched
   result is checked against :func:`.evaluate.solve_chains` itself (after setting those
   frames); a mismatch falls back to the next way (from F-curves → every frame read →
   frame by frame). Chains whose inputs depend on bones another chain moves (nested chains,
   targets on driven bones) are solved frame by frame with :func:`.evaluate.solve_chains`,
   the live solver.
3. **Key.** :mod:`.key_reduction` chooses the fewest key frames per chain that replay the
   full bake within a distance at the effector and an angle at every joint (unless
   ``reduce`` is off: then every frame); :mod:`.keying` writes each chain bone's rotation
   channels (the bone's rotation mode only) in bulk; keys outside the range and other
   channels stay untouched. A stretching chain (*Stretch* on) also gets its bones'
   ``scale`` keyed (the uniform factor live solving shows), and is keyed on every frame
   (key reduction measures unstretched poses).
4. **Report.** :mod:`.quality` measures each chain (residual error, frames out of reach,
   largest joint turn per frame, pops).

Frames: ``frame_start, frame_start + step, …`` and always ``frame_end``; integer frames.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..core import ReachIKError
from ..core import rotations as rot
from . import (
    bake_memory,
    constraints,
    dependencies,
    diagnostics,
    evaluate,
    handlers,
    key_reduction,
    keying,
    sampling,
)
from .operators import poll_chains, remove_chain
from .quality import ChainQuality, chain_quality
from .rig import RigChain, base_matrices

Result = set[Literal["RUNNING_MODAL", "CANCELLED", "FINISHED", "PASS_THROUGH", "INTERFACE"]]
Into = Literal["CURRENT", "NEW"]
After = Literal["KEEP", "DISABLE", "REMOVE"]

#: Largest allowed difference (radians, per joint) between the batched solve and the live
#: solver at the frames where both run; beyond it the bake falls back to the next method.
#: It is far above rounding (inputs read from F-curves in double precision differ from
#: Blender's single-precision matrices by ~1e-7 relative) and far below the bake's bar
#: (0.01° = 1.7e-4 rad).
CHECK_TOLERANCE = 1e-5

#: Blender's frame limits (``MINFRAME``/``MAXFRAME``: the bounds of ``Scene.frame_end``).
MINFRAME, MAXFRAME = -1048574, 1048574

#: Frames whose target lies within this fraction of the chain's reach of full reach are
#: solved by the live solver itself: there the pose is ill-conditioned (a joint angle goes
#: like the square root of the reach margin), so the live solver's single-precision inputs
#: and the batched path's double-precision ones would give poses 0.01° apart at 2e-7 of
#: reach; at 1e-3 the same input difference moves a joint by ~2e-6 rad.
NEAR_FULL_REACH = 1e-3

#: Frames sampled and solved at a time: the working memory of a bake is that of one block
#: (the sampled inputs), whatever the range; the solved poses (~100 bytes per frame and
#: chain) and the keys are kept for the whole range (:mod:`.bake_memory`).
BLOCK_FRAMES = 20_000

#: Settings of a chain that can be animated, read at every frame (the others once).
ANIMATED_SETTINGS = ("enabled", "influence", "pole_angle", "orient_weight", "use_pole")

Progress = Callable[[float], None]

#: Progress reported once every frame is sampled, and once every chain is solved (then
#: the keys are written).
SAMPLED, SOLVED = 0.8, 0.9


class BakeError(ReachIKError):
    """A bake cannot start (bad range, no chain, unknown chain…); the message says why."""


@dataclass(frozen=True)
class BakeOptions:
    """What to bake.

    Attributes:
        frame_start: first frame (inclusive).
        frame_end: last frame (inclusive), ``>= frame_start``.
        frame_step: key every this many frames (``frame_end`` is always keyed).
        chains: tip bones of the chains to bake; ``None`` = every enabled chain.
        into: ``"CURRENT"`` keys into the armature's action (a new one if it has none),
            ``"NEW"`` into a copy of it, leaving the original action as it was (with a
            fake user, so it stays in the file).
        reduce: keep only the keys needed to replay the full bake within ``reduce_distance``
            at each chain's effector and ``reduce_angle`` at every joint (on every frame
            and the quarter frames between; :mod:`.key_reduction`; the default); else key
            every frame (linear keys replaying the live pose to rounding).
        reduce_distance: world units; ``None`` = :data:`.key_reduction.DISTANCE_FRACTION`
            × the chain's reach.
        reduce_angle: radians.
        overwrite_shared: with ``"CURRENT"``, key the action even when other objects use
            it too; by default such a shared action is left as it was and a copy is keyed.
        after: what becomes of the baked chains: ``"KEEP"`` them as they are,
            ``"DISABLE"`` them (settings kept; the keys take over), or ``"REMOVE"`` them.
        solver: bake with this solver instead of each chain's own (``None``: their own).
    """

    frame_start: int
    frame_end: int
    frame_step: int = 1
    chains: tuple[str, ...] | None = None
    into: Into = "CURRENT"
    after: After = "DISABLE"
    solver: str | None = None
    overwrite_shared: bool = False
    reduce: bool = True
    reduce_distance: float | None = None
    reduce_angle: float = float(key_reduction.ANGLE)

    def check(self) -> None:
        """Raise :class:`BakeError` unless the options make sense on their own."""
        for name in ("frame_start", "frame_end"):
            value = getattr(self, name)
            if not MINFRAME <= value <= MAXFRAME:
                raise BakeError(
                    f"{name.replace('_', ' ')} {value} lies outside Blender's frame range "
                    f"{MINFRAME}..{MAXFRAME}"
                )
        if self.frame_end < self.frame_start:
            raise BakeError(
                f"frame range {self.frame_start}..{self.frame_end} is reversed: the end "
                "must not come before the start"
            )
        if self.reduce and not (
            self.reduce_angle > 0.0 and (self.reduce_distance is None or self.reduce_distance > 0)
        ):
            raise BakeError("key reduction needs a positive distance and angle")
        if self.frame_step < 1:
            raise BakeError(f"frame step must be 1 or more, got {self.frame_step}")
        if self.chains is not None and not self.chains:
            raise BakeError("no chains given to bake")
        if self.into not in ("CURRENT", "NEW"):
            raise BakeError(f"into must be CURRENT or NEW, got {self.into!r}")
        if self.after not in ("KEEP", "DISABLE", "REMOVE"):
            raise BakeError(f"after must be KEEP, DISABLE or REMOVE, got {self.after!r}")
        methods = evaluate.available_methods()
        if self.solver is not None and self.solver not in methods:
            raise BakeError(
                f"unknown solver {self.solver!r}; available solvers are {', '.join(methods)}"
            )

    def frames(self) -> np.ndarray:
        """The baked frames ``(F,)`` (integers as floats), increasing."""
        frames = np.arange(self.frame_start, self.frame_end + 1, self.frame_step, dtype=float)
        if frames[-1] != self.frame_end:
            frames = np.append(frames, float(self.frame_end))
        return frames


@dataclass
class BakeResult:
    """What a bake did.

    Attributes:
        armature: the armature object's name.
        action: the action keyed.
        original_action: the action assigned before, when a new one was keyed (it is kept
            as it was, with a fake user); ``""`` otherwise.
        keys_full, keys: rotation keys a full bake writes, and the keys written (fewer
            with key reduction).
        reduction: per chain, the reduction's bounds and largest errors as replayed.
        reduction_seconds: time spent choosing the keys.
        blocks: how many blocks of at most :data:`BLOCK_FRAMES` frames were solved.
        frames: how many frames were keyed per channel.
        frame_start, frame_end, frame_step: the range baked.
        chains: one quality report per baked chain.
        warnings: things the user should know (skipped chains, F-curve modifiers, …).
        method: ``"batched"`` or ``"frame by frame"`` (see the module docstring).
        seconds: wall time of the bake.
    """

    armature: str
    action: str
    frames: int
    frame_start: int
    frame_end: int
    frame_step: int
    chains: list[ChainQuality] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    method: str = "batched"
    seconds: float = 0.0
    original_action: str = ""
    keys_full: int = 0
    keys: int = 0
    reduction: list[dict[str, Any]] = field(default_factory=list)
    reduction_seconds: float = 0.0
    blocks: int = 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the whole result."""
        return {
            "armature": self.armature,
            "action": self.action,
            "original_action": self.original_action,
            "frames": self.frames,
            "frame_start": self.frame_start,
            "frame_end": self.frame_end,
            "frame_step": self.frame_step,
            "method": self.method,
            "seconds": self.seconds,
            "chains": [c.to_dict() for c in self.chains],
            "warnings": list(self.warnings),
            "keys_full": self.keys_full,
            "keys": self.keys,
            "reduction": list(self.reduction),
            "reduction_seconds": self.reduction_seconds,
            "blocks": self.blocks,
        }

    def summary(self) -> str:
        """One line: what was baked, how well, how fast."""
        worst = max((c.error_max for c in self.chains), default=0.0)
        pops = sum(c.pops for c in self.chains)
        line = (
            f"Baked {len(self.chains)} chain(s) of '{self.armature}' over {self.frames} frames "
            f"({self.frame_start}–{self.frame_end}) into '{self.action}' in "
            f"{self.seconds:.2f} s; largest residual {worst * 1000:.3g} mm"
        )
        if self.keys < self.keys_full:
            line += (
                f"; {self.keys} keys instead of {self.keys_full} "
                f"({100.0 * (1 - self.keys / self.keys_full):.0f}% fewer)"
            )
        if self.original_action:
            line += f"; '{self.original_action}' kept as it was"
        if pops:
            line += f"; {pops} pop(s)"
        if self.warnings:
            line += f"; {len(self.warnings)} warning(s)"
        return line


# --------------------------------------------------------------------------------------------
# Sampling


def _ancestors(obj: Any, name: str) -> set[str]:
    """``name`` and every bone above it."""
    out = set()
    bone = obj.data.bones.get(name)
    while bone is not None:
        out.add(bone.name)
        bone = bone.parent
    return out


class _Goal:
    """Reads a target or pole each frame: an object's world matrix, or a bone's posed
    matrix and its armature's world matrix.

    The object is the one set in the original settings, taken as evaluated in the
    depsgraph, as :func:`.evaluate.read_spec` does (the armature itself: its evaluated copy).
    """

    def __init__(self, original: Any, bone: str, own: Any) -> None:
        self.original = original
        self.own = original == own
        self.bone = bone if original.type == "ARMATURE" else ""
        self.matrices: list[Any] = []
        self.spaces: list[Any] = []

    def read(self, depsgraph: Any, own_eval: Any) -> None:
        goal = own_eval if self.own else self.original.evaluated_get(depsgraph)
        if self.bone:
            self.matrices.append(goal.pose.bones[self.bone].matrix.copy())
            self.spaces.append(goal.matrix_world.copy())
        else:
            self.matrices.append(goal.matrix_world.copy())

    def override(self, matrices: np.ndarray) -> None:
        """Use these ``(F, 4, 4)`` world matrices (an object goal) instead of the reads."""
        self.matrices = list(matrices)

    def arrays(self, count: int) -> tuple[np.ndarray, np.ndarray | None]:
        """``(F, 4, 4)`` matrices and, for a bone, ``(F, 4, 4)`` its armature's world; a
        single read stands for all ``count`` frames."""
        m = _frames_of(self.matrices, count)
        return m, (_frames_of(self.spaces, count) if self.bone else None)


def _frames_of(values: list[Any], count: int) -> np.ndarray:
    """``values`` read per frame (``count`` of them, or one for all) as an array."""
    a = np.array(values, dtype=np.float64)
    return a if len(values) == count else np.repeat(a, count, axis=0)


class _Samples:
    """One chain's inputs, collected frame by frame (see :func:`_sample_frame`).

    Attributes (after :meth:`finish`, ``F`` frames; metres, matrices map local → world):
        parents: ``(F, 4, 4)`` the root parent's posed matrix (armature space), or ``None``.
        root_location: ``(F, 3)`` the root's location channels.
        target, target_space: the target's matrices (see :meth:`_Goal.arrays`).
        pole, pole_space: the pole's, or ``None``.
        settings: ``(F, 5)`` the animatable settings (:data:`ANIMATED_SETTINGS`).
        fk: ``(F, n, 4)`` the FK pose on frames blended with it (else identity).
    """

    def __init__(self, spec: evaluate.ChainSpec, rig: RigChain, obj: Any) -> None:
        self.spec, self.rig = spec, rig
        self.tip, self.root = spec.tip, rig.bone_names[0]
        original = obj.pose.bones[spec.tip].reach_ik
        self.goal = _Goal(original.target, spec.target_bone, obj)
        self.pole_goal = _Goal(original.pole, spec.pole_bone, obj) if original.pole else None
        self._settings: list[tuple[float, ...]] = []
        self._locations: list[Any] = []
        self._parents: list[Any] = []
        self._fk: dict[int, np.ndarray] = {}

    def read(self, depsgraph: Any, obj_eval: Any, i: int, fk: bool = False) -> None:
        """Read the inputs at the current frame (index ``i``); the FK pose when blended with
        it at this frame, or always with ``fk``."""
        pose_bones = obj_eval.pose.bones
        s = pose_bones[self.tip].reach_ik
        settings = (s.enabled, s.influence, s.pole_angle, s.orient_weight, s.use_pole)
        self._settings.append(settings)
        self._locations.append(pose_bones[self.root].location[:])
        if self.rig.parent is not None:
            self._parents.append(pose_bones[self.rig.parent].matrix.copy())
        self.goal.read(depsgraph, obj_eval)
        if self.pole_goal is not None:
            self.pole_goal.read(depsgraph, obj_eval)
        if fk or settings[1] < 1.0 or not settings[0]:
            self._fk[i] = evaluate.fk_rotations(pose_bones, self.rig.bone_names)

    def finish(self, count: int) -> None:
        """Turn the reads into ``count``-frame arrays; a single read stands for all frames
        (what :func:`_from_curves` does not replace by values from F-curves)."""
        self.count = count
        self.settings = _frames_of(self._settings, count)
        self.root_location = _frames_of(self._locations, count)
        self.parents = _frames_of(self._parents, count) if self._parents else None
        self.target, self.target_space = self.goal.arrays(count)
        self.pole = self.pole_space = None
        if self.pole_goal is not None:
            self.pole, self.pole_space = self.pole_goal.arrays(count)
        self.fk = np.broadcast_to(rot.identity(), (count, len(self.rig.bone_names), 4)).copy()
        for i, quats in self._fk.items():
            self.fk[i if len(self._settings) == count else slice(None)] = quats


def _sample_frame(
    depsgraph: Any, obj: Any, samples: list[_Samples], world: list[Any], i: int, fk: bool = False
) -> None:
    """Read every chain's inputs at the current frame (index ``i``; see :meth:`_Samples.read`)."""
    obj_eval = obj.evaluated_get(depsgraph)
    world.append(obj_eval.matrix_world.copy())
    for s in samples:
        s.read(depsgraph, obj_eval, i, fk)


# --------------------------------------------------------------------------------------------
# Batched solve


def _points(matrices: np.ndarray, space: np.ndarray | None) -> np.ndarray:
    """World positions ``(F, 3)`` of heads given their ``(F, 4, 4)`` matrices."""
    if space is None:
        return matrices[:, :3, 3].copy()
    return np.einsum("fij,fj->fi", space, matrices[:, :, 3])[:, :3]


def _orientation(matrices: np.ndarray, space: np.ndarray | None) -> np.ndarray:
    """World rotation matrices ``(F, 3, 3)`` (columns scaled)."""
    m = matrices if space is None else space @ matrices
    return m[:, :3, :3]


@dataclass
class _Solved:
    """One chain's baked pose over all frames."""

    spec: evaluate.ChainSpec
    bone_names: tuple[str, ...]
    chain_length_world: float
    rotations: np.ndarray  # (F, n, 4) basis rotations, blended with FK
    errors: np.ndarray  # (F,) world metres
    reachable: np.ndarray  # (F,)
    targets: np.ndarray  # (F, 3) world
    disabled: int = 0
    near_full_reach: np.ndarray | None = None  # (F,) bool, see NEAR_FULL_REACH
    scales: np.ndarray | None = None  # (F, n) bone scale factors of a stretching chain


def _solve_pole_groups(
    rig: RigChain,
    spec: evaluate.ChainSpec,
    poles: np.ndarray | None,
    use_pole: np.ndarray,
    base: np.ndarray,
    targets: np.ndarray,
    goals: np.ndarray | None,
    fk: np.ndarray | None,
    influence: np.ndarray,
    pole_angle: np.ndarray,
    orient_weight: np.ndarray,
) -> evaluate.FrameSolution:
    """:func:`.evaluate.solve_chain_frames` with the pole only on the frames where
    ``use_pole (F,)`` is on (an animated or driven *Use Pole*, e.g. Rigify's pole switch):
    the frames with and without it are solved as two groups and put back in frame order."""
    if poles is None or use_pole.all():
        return evaluate.solve_chain_frames(
            rig, spec, base, targets, poles, goals, fk, influence, pole_angle, orient_weight
        )
    groups = [(~use_pole, None), (use_pole, poles)]
    parts = []
    for rows, group_poles in groups:
        if not rows.any():
            continue

        def take(a: np.ndarray | None, rows: np.ndarray = rows) -> np.ndarray | None:
            return None if a is None else a[rows]

        part = evaluate.solve_chain_frames(
            rig,
            spec,
            base[rows],
            targets[rows],
            take(group_poles),
            take(goals),
            take(fk),
            influence[rows],
            pole_angle[rows],
            orient_weight[rows],
        )
        parts.append((rows, part))
    count = targets.shape[0]
    n = len(rig.bone_names)
    stretching = all(part.scales is not None for _, part in parts)
    out = evaluate.FrameSolution(
        rotations=np.empty((count, n, 4)),
        errors=np.empty(count),
        reachable=np.empty(count, dtype=bool),
        effectors=np.empty((count, 3)),
        scales=np.empty((count, n)) if stretching else None,
    )
    for rows, part in parts:
        out.rotations[rows] = part.rotations
        out.errors[rows] = part.errors
        out.reachable[rows] = part.reachable
        out.effectors[rows] = part.effectors
        if out.scales is not None and part.scales is not None:
            out.scales[rows] = part.scales
    return out


def _solve_batched(s: _Samples, world: np.ndarray) -> _Solved:
    """Every frame of one chain: its sampled inputs to :func:`.evaluate.solve_chain_frames`."""
    rig = s.rig
    base = world @ base_matrices(rig, s.parents, s.root_location)
    target_w = _points(s.target, s.target_space)
    enabled, influence, pole_angle, orient_weight, use_pole = s.settings.T
    solved = _solve_pole_groups(
        rig,
        s.spec,
        None if s.pole is None else _points(s.pole, s.pole_space),
        use_pole > 0.5,
        base,
        target_w,
        _orientation(s.target, s.target_space) if s.spec.use_rotation else None,
        s.fk,
        np.where(enabled > 0.5, influence, 0.0),
        pole_angle,
        orient_weight,
    )
    scale = float(np.mean(np.linalg.norm(world[0, :3, :3], axis=0)))
    # The base frame's scale (uniform in practice) turns chain units into world units.
    base_scale = np.mean(np.linalg.norm(base[:, :3, :3], axis=1), axis=-1)
    distance = np.linalg.norm(target_w - base[:, :3, 3], axis=-1)
    margin = distance / (base_scale * float(np.sum(rig.chain.lengths))) - 1.0
    return _Solved(
        spec=s.spec,
        bone_names=rig.bone_names,
        chain_length_world=float(np.sum(rig.chain.lengths)) * scale,
        rotations=solved.rotations,
        errors=solved.errors,
        reachable=solved.reachable,
        targets=target_w,
        disabled=int(np.count_nonzero(enabled <= 0.5)),
        near_full_reach=np.abs(margin) < NEAR_FULL_REACH,
        scales=solved.scales,
    )


# --------------------------------------------------------------------------------------------
# The bake


def _selected_specs(obj: Any, options: BakeOptions) -> list[evaluate.ChainSpec]:
    tips = evaluate.chain_tips(obj)
    if options.chains is None:
        chosen = [t for t in tips if obj.pose.bones[t].reach_ik.enabled]
        if not chosen:
            raise BakeError(f"armature '{obj.name}' has no enabled Reach IK chain to bake")
    else:
        missing = [t for t in options.chains if t not in tips]
        if missing:
            raise BakeError(
                f"armature '{obj.name}' has no Reach IK chain on bone(s) {', '.join(missing)}; "
                f"its chains are on: {', '.join(tips) or 'none'}"
            )
        chosen = list(options.chains)
        off = [t for t in chosen if not obj.pose.bones[t].reach_ik.enabled]
        if off:
            raise BakeError(f"the chain(s) on {', '.join(off)} are disabled; enable them to bake")
    return [evaluate.read_spec(obj.pose.bones[t]) for t in chosen]


def _rest_dependencies(obj: Any, spec: evaluate.ChainSpec, rig: RigChain) -> set[str]:
    """Bones of ``obj`` whose pose this chain's inputs depend on."""
    deps = _ancestors(obj, rig.parent) if rig.parent else set()
    for goal, bone in ((spec.target, spec.target_bone), (spec.pole, spec.pole_bone)):
        if goal is not None and bone and goal.original == obj.original:
            deps |= _ancestors(obj, bone)
    return deps


def _batchable(obj: Any, rigs: dict[str, RigChain], specs: list[evaluate.ChainSpec]) -> bool:
    """No baked chain depends on a bone that an enabled chain drives."""
    driven = {name for name, enabled in constraints.driven(obj).items() if enabled}
    return all(not (_rest_dependencies(obj, s, rigs[s.tip]) & driven) for s in specs)


def _depsgraph(scene: Any) -> Any:
    """The depsgraph that ``scene.frame_set`` evaluates."""
    if scene == bpy.context.scene:
        return bpy.context.evaluated_depsgraph_get()
    return scene.view_layers[0].depsgraph


def _report_progress(progress: Progress | None, value: float) -> None:
    if progress is not None:
        progress(min(max(value, 0.0), 1.0))


class _Forward:
    """Passes progress on only when it moves forward (a fallback starts over)."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress, self.last = progress, -1.0

    def __call__(self, value: float) -> None:
        if self.progress is not None and value > self.last:
            self.last = value
            self.progress(value)


def _checks(obj: Any, depsgraph: Any, tips: Sequence[str]) -> dict[str, evaluate.ChainPose]:
    """The live solver's pose per tip at the current frame."""
    report = evaluate.solve_chains(obj, depsgraph)
    return {p.tip: p for p in report.poses if p.tip in tips}


@contextmanager
def _solver_override(obj: Any, specs: Sequence[evaluate.ChainSpec], solver: str | None) -> Any:
    """Let the chains use ``solver`` for the bake (their own setting is put back after)."""
    if solver is None:
        yield specs
        return
    saved = {s.tip: obj.pose.bones[s.tip].reach_ik.solver for s in specs}
    try:
        for tip in saved:
            obj.pose.bones[tip].reach_ik.solver = solver
        yield [dataclasses.replace(s, solver=solver) for s in specs]
    finally:
        for tip, value in saved.items():
            obj.pose.bones[tip].reach_ik.solver = value


def _sample_every_frame(
    scene: Any,
    obj: Any,
    samples: list[_Samples],
    frames: np.ndarray,
    progress: Progress | None,
    checks: dict[int, dict[str, evaluate.ChainPose]],
) -> np.ndarray:
    """Set each frame and read every input; returns the armature's world ``(F, 4, 4)``."""
    depsgraph = _depsgraph(scene)
    count = frames.size
    matrices: list[Any] = []
    tips = [s.tip for s in samples]
    step = max(count // 100, 1)
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
        _sample_frame(depsgraph, obj, samples, matrices, i)
        if i in (0, count - 1):
            checks[i] = _checks(obj, depsgraph, tips)
        if i % step == 0:
            _report_progress(progress, SAMPLED * (i + 1) / count)
    for sample in samples:
        sample.finish(count)
    return np.array(matrices, dtype=np.float64)


def _sample_from_curves(
    scene: Any,
    obj: Any,
    samples: list[_Samples],
    frames: np.ndarray,
    progress: Progress | None,
    checks: dict[int, dict[str, evaluate.ChainPose]],
) -> np.ndarray | None:
    """Every input from F-curves (:mod:`.sampling`): the armature's world matrix, the posed
    matrices of the chains' parents and goal bones, the roots' locations, the animatable
    settings and the goal objects. Only the first and last frames are set (for the check);
    the rest of what a chain reads (its FK pose) is read there and must not be animated
    where it is used. ``None`` when any of it does not follow from F-curves alone."""
    curves = sampling.plain_animation(obj)
    if curves is None:
        return None
    depsgraph = _depsgraph(scene)
    scene.frame_set(int(frames[0]))
    world = sampling.object_matrices(obj, frames, depsgraph)
    if world is None:
        return None
    owned = [g for s in samples for g in (s.goal, s.pole_goal) if g is not None and g.own]
    needed = {s.rig.parent for s in samples if s.rig.parent} | {g.bone for g in owned if g.bone}
    posed = sampling.pose_matrices(obj, curves, needed, frames)
    if posed is None:
        return None
    tracks = {}
    goals = [g for s in samples for g in (s.goal, s.pole_goal) if g is not None and not g.own]
    for k, goal in enumerate(goals):
        if goal.original.name not in tracks:
            track = sampling.object_matrices(goal.original, frames, depsgraph)
            if track is None:
                return None
            tracks[goal.original.name] = track
        _report_progress(progress, 0.05 + (SAMPLED - 0.05) * (k + 1) / len(goals))
    tips = [s.tip for s in samples]
    _sample_frame(depsgraph, obj, samples, [], 0, fk=True)
    checks[0] = _checks(obj, depsgraph, tips)
    _report_progress(progress, 0.02)
    scene.frame_set(int(frames[-1]))
    checks[frames.size - 1] = _checks(obj, depsgraph, tips)
    _report_progress(progress, 0.05)
    for sample in samples:
        if not _from_curves(sample, obj, curves, frames, world, posed, tracks):
            return None
    return world


def _from_curves(
    sample: _Samples,
    obj: Any,
    curves: sampling.Curves,
    frames: np.ndarray,
    world: np.ndarray,
    posed: dict[str, np.ndarray],
    tracks: dict[str, np.ndarray],
) -> bool:
    """Fill one chain's inputs from F-curves (see :func:`_sample_from_curves`)."""
    for goal in (sample.goal, sample.pole_goal):
        if goal is None:
            continue
        if not goal.own:
            goal.override(tracks[goal.original.name])
        elif goal.bone:
            goal.matrices, goal.spaces = list(posed[goal.bone]), list(world)
        else:
            goal.override(world)
    count = frames.size
    sample.finish(count)
    if sample.rig.parent is not None:
        sample.parents = posed[sample.rig.parent]
    root = obj.pose.bones[sample.rig.bone_names[0]]
    prefix = sampling.bone_path(root.name)
    sample.root_location = curves.values(prefix + "location", tuple(root.location), frames)
    tip = obj.pose.bones[sample.tip]
    prefix = sampling.bone_path(tip.name) + "reach_ik."
    sample.settings = np.concatenate(
        [
            curves.values(prefix + name, (float(getattr(tip.reach_ik, name)),), frames)
            for name in ANIMATED_SETTINGS
        ],
        axis=1,
    )
    blended = (sample.settings[:, 1] < 1.0) | (sample.settings[:, 0] <= 0.5)
    if np.any(blended):
        for name in sample.rig.bone_names:
            prop = keying.rotation_path(obj.pose.bones[name].rotation_mode)[0]
            if sampling.bone_path(name) + prop in curves.paths:
                return False
    return True


def _sample_and_solve(
    scene: Any,
    obj: Any,
    specs: list[evaluate.ChainSpec],
    rigs: dict[str, RigChain],
    frames: np.ndarray,
    progress: Progress | None,
    warnings: list[str],
    from_curves: bool,
) -> list[_Solved] | None:
    """The batched bake (module docstring, steps 1–2); ``None`` if it does not apply or the
    check against the live solver failed."""
    samples = [_Samples(spec, rigs[spec.tip], obj) for spec in specs]
    checks: dict[int, dict[str, evaluate.ChainPose]] = {}
    if from_curves:
        world = _sample_from_curves(scene, obj, samples, frames, progress, checks)
        if world is None:
            return None
    else:
        world = _sample_every_frame(scene, obj, samples, frames, progress, checks)
    solved = []
    for k, s in enumerate(samples):
        _report_progress(progress, SAMPLED + (SOLVED - SAMPLED) * k / len(samples))
        try:
            solved.append(_solve_batched(s, world))
        except ReachIKError as exc:
            warnings.append(f"chain '{s.spec.tip}' skipped: {exc}")
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
                    f"chain '{result.spec.tip}': batched solve differs from the live solve by "
                    f"{math.degrees(gap):.3g}° at frame {int(frames[i])}"
                )
                return None
    return solved


def _solve_near_full_reach(
    scene: Any,
    obj: Any,
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
    scene: Any,
    obj: Any,
    specs: list[evaluate.ChainSpec],
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
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
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
            )
        )
    return solved


def _fcurve_warnings(obj: Any, solved: list[_Solved]) -> list[str]:
    """Warn about what would make the keys play back differently from the bake."""
    out: list[str] = []
    adt = obj.animation_data
    if adt is None:
        return out
    bones = {name for s in solved for name in s.bone_names}
    for fcurve in adt.drivers:
        path = fcurve.data_path
        if any(f'pose.bones["{b}"].rotation' in path for b in bones):
            out.append(f"'{path}' has a driver, which overrides the baked keys")
    if adt.nla_tracks and any(not t.mute for t in adt.nla_tracks):
        out.append("the armature has NLA tracks; the baked action is blended with them")
    if adt.action_blend_type != "REPLACE" or adt.action_influence < 1.0:
        out.append("the action does not replace the pose (blend type or influence)")
    return out


def _apply_after(obj: Any, specs: Sequence[evaluate.ChainSpec], after: str) -> None:
    for spec in specs:
        pb = obj.pose.bones[spec.tip]
        if after == "DISABLE":
            pb.reach_ik.enabled = False
        elif after == "REMOVE":
            remove_chain(obj, pb)


def bake(
    obj: Any,
    options: BakeOptions,
    *,
    scene: Any = None,
    progress: Progress | None = None,
) -> BakeResult:
    """Bake Reach IK chains of the armature ``obj`` to keyframes (see the module docstring).

    Args:
        obj: the armature object, in Object or Pose Mode (selection does not matter).
        options: what to bake.
        scene: the scene whose frames are set (default: the context's).
        progress: called with the fraction done, ``0 … 1``; may raise to cancel (nothing
            is written then).

    Raises:
        BakeError: bad options, not an armature, no such chain.
    """
    started = time.perf_counter()
    progress = _Forward(progress)
    options.check()
    if obj is None or obj.type != "ARMATURE" or obj.pose is None:
        raise BakeError("bake needs an armature object")
    scene = scene or bpy.context.scene
    if obj.name not in scene.objects:
        raise BakeError(f"armature '{obj.name}' is not in scene '{scene.name}'")
    adt = obj.animation_data
    if adt is not None and adt.use_tweak_mode:
        raise BakeError("the armature's NLA is in tweak mode; leave tweak mode before baking")
    if obj.mode == "EDIT":
        raise BakeError(
            f"armature '{obj.name}' is in Edit Mode, where its pose is not evaluated; "
            "switch to Pose or Object Mode to bake"
        )
    specs = _selected_specs(obj, options)
    warnings: list[str] = []
    rigs: dict[str, RigChain] = {}
    usable = []
    loops = dependencies.problems(evaluate.dependency_chains())
    for spec in specs:
        if (obj.name, spec.tip) in loops:
            warnings.append(f"chain '{spec.tip}' skipped: {loops[(obj.name, spec.tip)]}")
            continue
        try:
            rigs[spec.tip] = evaluate.rig_chain(obj, spec.tip, spec.chain_length, spec.use_tail)
        except ReachIKError as exc:
            warnings.append(f"chain '{spec.tip}' skipped: {exc}")
            continue
        if spec.target is None:
            warnings.append(f"chain '{spec.tip}' skipped: it has no target")
            continue
        usable.append(spec)
    if not usable:
        raise BakeError("no chain can be baked: " + "; ".join(warnings))
    frames = options.frames()
    try:
        bake_memory.check(obj, frames.size, [rigs[s.tip] for s in usable], BLOCK_FRAMES)
    except bake_memory.BakeMemoryError as exc:
        raise BakeError(str(exc)) from None
    frame_back = (scene.frame_current, scene.frame_subframe)
    parts: list[list[_Solved]] = []
    methods: list[str] = []
    windows = _blocks(frames.size, BLOCK_FRAMES)
    try:
        with handlers.paused(), _solver_override(obj, usable, options.solver) as chosen:
            for k, window in enumerate(windows):
                block_progress = _block_progress(progress, k, len(windows))
                solved_block, method = _solve_block(
                    scene, obj, chosen, rigs, frames[window], block_progress, warnings
                )
                parts.append(solved_block)
                if method not in methods:
                    methods.append(method)
    except BaseException:
        scene.frame_set(frame_back[0], subframe=frame_back[1])
        raise
    method = "; ".join(methods)
    solved = _join_blocks(parts, warnings)
    if not solved:
        scene.frame_set(frame_back[0], subframe=frame_back[1])
        raise BakeError("no chain could be baked: " + "; ".join(warnings))
    prepared = keying.prepare_action(obj, options.into, options.overwrite_shared)
    action = prepared.action
    if prepared.shared_with:
        warnings.append(
            f"action '{prepared.original}' is shared with {', '.join(prepared.shared_with)}: "
            f"baked into the new action '{action.name}' instead (the original is kept; "
            "ask to overwrite shared actions to key it)"
        )
    channels = keying.Channels(obj)
    keyed = 0
    to_key = sum(len(r.bone_names) * (1 if r.scales is None else 2) for r in solved)
    keys_full = keys_written = 0
    reductions: list[dict[str, Any]] = []
    reduction_seconds = 0.0
    for result in solved:
        plans = []
        for j, name in enumerate(result.bone_names):
            plans.append(
                keying.plan_bone_rotations(
                    channels,
                    obj.pose.bones[name],
                    result.rotations[:, j],
                    options.frame_start,
                    options.frame_end,
                )
            )
        keep = slopes = None
        if result.scales is not None:
            # A stretching chain: its bones' scales keyed on every frame, and so are its
            # rotations (key reduction measures unstretched poses).
            plans.extend(
                keying.plan_bone_scales(
                    channels,
                    obj.pose.bones[name],
                    result.scales[:, j],
                    options.frame_start,
                    options.frame_end,
                )
                for j, name in enumerate(result.bone_names)
            )
        elif options.reduce:
            clock = time.perf_counter()
            reduced, entry = _reduce(obj, result, plans, frames, options)
            reduction_seconds += time.perf_counter() - clock
            reductions.append(entry)
            keep = reduced.keep
        for j, plan in enumerate(plans):
            _report_progress(progress, SOLVED + (1.0 - SOLVED) * keyed / to_key)
            keyed += 1
            if keep is not None:
                slopes = (reduced.slopes_left[j], reduced.slopes_right[j])
            written = keying.write_plan(
                channels, plan, frames, options.frame_start, options.frame_end, keep, slopes
            )
            width = plan.values.shape[1]
            keys_full += width * frames.size
            keys_written += width * (frames.size if keep is None else int(keep.sum()))
            warnings.extend(
                f"F-curve '{w.data_path}'[{w.index}] has modifiers, which change the baked keys"
                for w in written
                if w.modifiers
            )
        if result.disabled:
            warnings.append(
                f"chain '{result.spec.tip}' is disabled on {result.disabled} frame(s); "
                "those are keyed with the FK pose"
            )
    warnings.extend(_fcurve_warnings(obj, solved))
    _apply_after(obj, [r.spec for r in solved], options.after)
    scene.frame_set(frame_back[0], subframe=frame_back[1])
    _report_progress(progress, 1.0)
    qualities = [
        chain_quality(
            r.spec.tip,
            r.bone_names,
            r.spec.solver,
            frames,
            r.errors,
            r.reachable,
            r.rotations,
            r.targets,
            r.chain_length_world,
        )
        for r in solved
    ]
    baked = BakeResult(
        armature=obj.name,
        action=action.name,
        frames=int(frames.size),
        frame_start=options.frame_start,
        frame_end=options.frame_end,
        frame_step=options.frame_step,
        chains=qualities,
        warnings=warnings,
        method=method,
        seconds=time.perf_counter() - started,
        original_action=prepared.original,
        keys_full=keys_full,
        keys=keys_written,
        reduction=reductions,
        reduction_seconds=reduction_seconds,
        blocks=len(windows),
    )
    store_report(obj, baked)
    return baked


def _reduce(
    obj: Any,
    result: _Solved,
    plans: Sequence[keying.BonePlan],
    frames: np.ndarray,
    options: BakeOptions,
) -> tuple[key_reduction.Reduction, dict[str, Any]]:
    """Choose one chain's keys (:func:`.key_reduction.reduce_chain`); returns the reduction
    and its report entry."""
    bones = obj.data.bones
    rest = np.array([np.array(bones[n].matrix_local) for n in result.bone_names])
    world = np.array(obj.matrix_world)
    scale = float(np.mean(np.linalg.norm(world[:3, :3], axis=0)))
    distance = options.reduce_distance
    if distance is None:
        distance = key_reduction.DISTANCE_FRACTION * result.chain_length_world
    reduced = key_reduction.reduce_chain(
        frames,
        [key_reduction.BoneCurves(p.mode, p.values) for p in plans],
        key_reduction.ChainRest(rest, float(bones[result.bone_names[-1]].length), scale),
        distance,
        options.reduce_angle,
    )
    entry = {
        "chain": result.spec.tip,
        "frames": int(frames.size),
        "keyed_frames": int(reduced.keep.sum()),
        "distance_bound": distance,
        "angle_bound_deg": math.degrees(options.reduce_angle),
        "distance_max": reduced.distance,
        "angle_max_deg": math.degrees(reduced.angle),
    }
    return reduced, entry


def _blocks(count: int, size: int) -> list[slice]:
    """``count`` frames in consecutive blocks of at most ``size``."""
    return [slice(start, min(start + size, count)) for start in range(0, count, size)]


def _block_progress(progress: Progress, k: int, count: int) -> Progress:
    """Progress of block ``k`` of ``count``: its ``0 … SOLVED`` mapped into its share."""
    return lambda x: progress(SOLVED * (k + min(x, SOLVED) / SOLVED) / count)


def _solve_block(
    scene: Any,
    obj: Any,
    specs: list[evaluate.ChainSpec],
    rigs: dict[str, RigChain],
    frames: np.ndarray,
    progress: Progress,
    warnings: list[str],
) -> tuple[list[_Solved], str]:
    """Sample and solve one block of frames the first way that works (module docstring)."""
    attempts = (("batched, from F-curves", True), ("batched", False))
    for label, from_curves in attempts if _batchable(obj, rigs, specs) else ():
        notes: list[str] = []
        solved = _sample_and_solve(scene, obj, specs, rigs, frames, progress, notes, from_curves)
        if solved is not None:
            warnings.extend(n for n in notes if n not in warnings)
            return solved, label
        if not from_curves:
            warnings.extend(f"{note}; baked frame by frame" for note in notes)
    return _solve_frame_by_frame(scene, obj, specs, rigs, frames, progress, warnings), (
        "frame by frame"
    )


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
            )
        )
    return joined


def write_report(result: BakeResult, path: str) -> None:
    """Save ``result`` as JSON at ``path``, never leaving a half-written file: written to a
    temporary file beside it, read back, synced, then renamed over ``path`` (on any failure
    the temporary file is removed, ``path`` is left as it was and ``OSError`` is raised)."""
    final = os.path.abspath(path)
    tmp = os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(result.to_dict(), handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        with open(tmp, encoding="utf-8") as handle:
            json.load(handle)
        os.replace(tmp, final)
    except ValueError as exc:
        raise OSError(f"the report read back is not whole JSON (disk full?): {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def report_path_problem(path: str) -> str:
    """Why the operator must not write its report at ``path`` (absolute), or ``""``: a
    folder, or the open .blend file itself."""
    if os.path.isdir(path):
        return f"the report file '{path}' is a folder; give a file name"
    blend = bpy.data.filepath
    if blend and os.path.exists(path) and os.path.samefile(path, blend):
        return f"the report file '{path}' is the open .blend file; give another name"
    return ""


# --------------------------------------------------------------------------------------------
# The operator


def _armature(context: Any, name: str) -> Any:
    obj = bpy.data.objects.get(name) if name else context.object
    return obj if obj is not None and obj.type == "ARMATURE" else None


class REACH_IK_OT_bake(bpy.types.Operator):
    """Bake the armature's Reach IK chains to keyframes on the chain bones' rotations"""

    bl_idname = "reach_ik.bake"
    bl_label = "Bake Reach IK"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 (Blender reads a plain set)

    armature: StringProperty(  # type: ignore[valid-type]
        name="Armature", description="Armature object to bake; empty = the active object"
    )
    frame_start: IntProperty(  # type: ignore[valid-type]
        name="Start Frame",
        description="First frame to bake",
        default=1,
        soft_min=MINFRAME,
        soft_max=MAXFRAME,
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        name="End Frame",
        description="Last frame to bake",
        default=250,
        soft_min=MINFRAME,
        soft_max=MAXFRAME,
    )
    frame_step: IntProperty(  # type: ignore[valid-type]
        name="Frame Step", description="Key every this many frames", default=1, min=1, max=1000
    )
    only_selected: BoolProperty(  # type: ignore[valid-type]
        name="Only Selected Chains",
        description="Bake only the chains whose tip bone is selected (else every enabled chain)",
        default=False,
    )
    into: EnumProperty(  # type: ignore[valid-type]
        name="Into",
        items=(
            ("CURRENT", "Current Action", "Key into the armature's action"),
            (
                "NEW",
                "New Action",
                "Key into a copy of the action; the original stays as it was (fake user)",
            ),
        ),
        default="CURRENT",
    )
    reduce: BoolProperty(  # type: ignore[valid-type]
        name="Reduce Keys",
        description="Keep only the keys needed to replay the bake within the distance at "
        "each effector and the angle at every joint (on every frame and quarter frame); "
        "off: a key on every frame, replaying the live pose exactly",
        default=True,
    )
    reduce_distance: FloatProperty(  # type: ignore[valid-type]
        name="Distance",
        description="Largest effector distance from the full bake; 0 = 0.1% of each chain's reach",
        default=0.0,
        min=0.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )
    reduce_angle: FloatProperty(  # type: ignore[valid-type]
        name="Angle",
        description="Largest joint angle from the full bake",
        default=float(key_reduction.ANGLE),
        min=1e-6,
        subtype="ANGLE",
    )
    overwrite_shared: BoolProperty(  # type: ignore[valid-type]
        name="Overwrite Shared Action",
        description="Key the current action even when other objects use it too (by "
        "default a shared action is left as it was and a copy is keyed)",
        default=False,
    )
    after: EnumProperty(  # type: ignore[valid-type]
        name="Chains After",
        items=(
            ("DISABLE", "Disable", "Switch the chains off: the baked keys play"),
            ("KEEP", "Keep", "Leave the chains as they are (they still drive the bones)"),
            ("REMOVE", "Remove", "Remove the chains' settings"),
        ),
        default="DISABLE",
    )
    report_path: StringProperty(  # type: ignore[valid-type]
        name="Report File",
        description="Save the quality report as JSON here (empty: do not save)",
        subtype="FILE_PATH",
    )
    diagnose: BoolProperty(  # type: ignore[valid-type]
        name="Diagnose",
        description=(
            "Afterwards, mark the baked chains' pops, bend flips, out-of-reach and "
            "limit-bound frames as timeline markers (as Diagnose does)"
        ),
        default=False,
    )

    @classmethod
    def poll(cls, context: Any) -> bool:
        return poll_chains(cls, context, writes_armature=True)

    def invoke(self, context: Any, event: Any) -> Result:
        scene = context.scene
        self.frame_start = scene.frame_start
        self.frame_end = scene.frame_end
        return context.window_manager.invoke_props_dialog(self)

    def execute(self, context: Any) -> Result:
        obj = _armature(context, self.armature)
        if obj is None:
            self.report({"ERROR"}, f"No armature '{self.armature or 'active'}' to bake")
            return {"CANCELLED"}
        chains = None
        if self.only_selected:
            chains = tuple(
                t
                for t in evaluate.chain_tips(obj)
                if _is_selected(obj.pose.bones[t]) and obj.pose.bones[t].reach_ik.enabled
            )
            if not chains:
                self.report({"ERROR"}, "No selected bone holds an enabled Reach IK chain")
                return {"CANCELLED"}
        if self.report_path:
            problem = report_path_problem(bpy.path.abspath(self.report_path))
            if problem:
                self.report({"ERROR"}, problem)
                return {"CANCELLED"}
        tips = chains or tuple(
            t for t in evaluate.chain_tips(obj) if obj.pose.bones[t].reach_ik.enabled
        )
        options = BakeOptions(
            frame_start=self.frame_start,
            frame_end=self.frame_end,
            frame_step=self.frame_step,
            chains=chains,
            into=self.into,
            after=self.after,
            overwrite_shared=self.overwrite_shared,
            reduce=self.reduce,
            reduce_distance=self.reduce_distance or None,
            reduce_angle=self.reduce_angle,
        )
        wm = context.window_manager
        wm.progress_begin(0, 1000)
        try:
            result = bake(
                obj,
                options,
                scene=context.scene,
                progress=lambda x: wm.progress_update(int(1000 * x)),
            )
        except ReachIKError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        if self.report_path:
            path = bpy.path.abspath(self.report_path)
            try:
                write_report(result, path)
            except OSError as exc:
                self.report({"WARNING"}, f"Could not save the report to '{path}': {exc}")
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, result.summary())
        if self.diagnose:
            diagnostics.after_bake(self, context.scene, obj, tips, options)
        return {"FINISHED"}


def _is_selected(pb: Any) -> bool:
    return bool(pb.select) if hasattr(pb, "select") else bool(pb.bone.select)


def store_report(obj: Any, result: BakeResult) -> None:
    """Save each chain's quality (JSON) on its tip bone (``reach_ik.bake_report``), where the
    panel shows it; it is saved with the file."""
    for quality in result.chains:
        entry = {
            "method": result.method,
            "action": result.action,
            "frame_start": result.frame_start,
            "frame_end": result.frame_end,
            "frame_step": result.frame_step,
            **quality.to_dict(),
        }
        obj.pose.bones[quality.chain].reach_ik.bake_report = json.dumps(entry)


def stored_report(pose_bone: Any) -> dict[str, Any] | None:
    """The quality report saved on a chain's tip bone by its last bake, or ``None``."""
    text = pose_bone.reach_ik.bake_report
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


class REACH_IK_PT_bake_report(bpy.types.Panel):
    """The quality of each chain's last bake (3D View sidebar, Reach IK tab)."""

    bl_label = "Last Bake"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Reach IK"
    bl_order = 10

    @classmethod
    def poll(cls, context: Any) -> bool:
        obj = context.object
        return (
            obj is not None
            and obj.type == "ARMATURE"
            and any(stored_report(obj.pose.bones[t]) for t in evaluate.chain_tips(obj))
        )

    def draw(self, context: Any) -> None:
        from .panels import format_length

        layout: Any = self.layout
        obj = context.object
        for tip in evaluate.chain_tips(obj):
            report = stored_report(obj.pose.bones[tip])
            if report is None:
                continue
            box = layout.box()
            box.label(
                text=f"{tip} · {report['solver']} · {report['frame_start']}–{report['frame_end']}",
                icon="ACTION",
            )
            col = box.column(align=True)
            col.label(
                text=f"Error max {format_length(report['error_max'])}, "
                f"mean {format_length(report['error_mean'])}"
            )
            if report["out_of_reach"]:
                col.label(text=f"Out of reach: {report['out_of_reach']} frames", icon="INFO")
            col.label(text=f"Max turn {report['max_joint_change_deg']:.3g}°/frame")
            if report["max_joint_change_bone"]:
                col.label(
                    text=f"    {report['max_joint_change_bone']}, "
                    f"frame {report['max_joint_change_frame']}"
                )
            if report["pops"]:
                row = col.row()
                row.alert = True
                frames = ", ".join(str(f) for f in report["pop_frames"][:5])
                row.label(text=f"{report['pops']} pops: frames {frames}", icon="ERROR")


classes = (REACH_IK_OT_bake, REACH_IK_PT_bake_report)
