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
   :func:`.solve_frames.solve_chain_frames`, the function the live solver calls for one frame
   (base frame, targets in it, one batched core solve per group of frames sharing the
   same settings, untwist, blend with FK by influence), so frames read from Blender are
   keyed with the live pose. A bake from F-curves is checked against
   :func:`.evaluate.solve_chains` itself at its first and last frame (after setting those
   frames); a mismatch falls back to reading every frame. Chains whose inputs depend on
   bones another chain moves (nested chains, targets on driven bones) are solved frame by
   frame with :func:`.evaluate.solve_chains`, the live solver.
3. **Key.** :mod:`.key_reduction` chooses the fewest key frames per chain that replay the
   full bake within a distance at the effector and an angle at every joint (unless
   ``reduce`` is off: then every frame); :mod:`.keying` writes each chain bone's rotation
   channels (the bone's rotation mode only) in bulk, into the action :mod:`.bake_action`
   prepares; keys outside the range and other channels stay untouched. A stretching chain
   (*Stretch* on) also gets its bones' ``scale`` keyed (the uniform factor live solving
   shows), and is keyed on every frame (key reduction measures unstretched poses).
4. **Report.** :mod:`.quality` measures each chain (residual error, frames out of reach,
   largest joint turn per frame, pops).

Frames: ``frame_start, frame_start + step, …`` and always ``frame_end``; integer frames.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import bpy
import numpy as np

from ..core import ReachIKError
from . import bake_action, bake_memory, dependencies, handlers, key_reduction, keying
from .bake_report import store_report, stored_report
from .bake_sampling import SOLVED, Progress, _report_progress
from .bake_solve import _block_progress, _blocks, _join_blocks, _solve_block, _Solved
from .blender_types import ArmatureObject, is_armature
from .chain_spec import (
    ChainSpec,
    available_methods,
    chain_tips,
    dependency_chains,
    read_spec,
    rig_chain,
)
from .operators import remove_chain
from .quality import ChainQuality, chain_quality
from .rig import RigChain

Result = set[Literal["RUNNING_MODAL", "CANCELLED", "FINISHED", "PASS_THROUGH", "INTERFACE"]]
Into = Literal["CURRENT", "NEW"]
After = Literal["KEEP", "DISABLE", "REMOVE"]

#: Blender's frame limits (``MINFRAME``/``MAXFRAME``: the bounds of ``Scene.frame_end``).
MINFRAME, MAXFRAME = -1048574, 1048574

#: Frames sampled and solved at a time: the working memory of a bake is that of one block
#: (the sampled inputs), whatever the range; the solved poses (~100 bytes per frame and
#: chain) and the keys are kept for the whole range (:mod:`.bake_memory`).
BLOCK_FRAMES = 20_000


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
        methods = available_methods()
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


def _selected_specs(obj: ArmatureObject, options: BakeOptions) -> list[ChainSpec]:
    tips = chain_tips(obj)
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
    return [read_spec(obj.pose.bones[t]) for t in chosen]


class _Forward:
    """Passes progress on only when it moves forward (a fallback starts over)."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress, self.last = progress, -1.0

    def __call__(self, value: float) -> None:
        if self.progress is not None and value > self.last:
            self.last = value
            self.progress(value)


@contextmanager
def _solver_override(
    obj: ArmatureObject, specs: list[ChainSpec], solver: str | None
) -> Iterator[list[ChainSpec]]:
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


def _fcurve_warnings(obj: ArmatureObject, solved: list[_Solved]) -> list[str]:
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


def _apply_after(obj: ArmatureObject, specs: Sequence[ChainSpec], after: str) -> None:
    for spec in specs:
        pb = obj.pose.bones[spec.tip]
        if after == "DISABLE":
            pb.reach_ik.enabled = False
        elif after == "REMOVE":
            remove_chain(obj, pb)


def bake(
    obj: bpy.types.Object | None,
    options: BakeOptions,
    *,
    scene: bpy.types.Scene | None = None,
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
    if not is_armature(obj):
        raise BakeError("bake needs an armature object")
    scene = scene or bpy.context.scene
    if scene is None:
        raise BakeError("bake needs a scene (none given, and the context has none)")
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
    loops = dependencies.problems(dependency_chains())
    for spec in specs:
        if (obj.name, spec.tip) in loops:
            warnings.append(f"chain '{spec.tip}' skipped: {loops[(obj.name, spec.tip)]}")
            continue
        try:
            rigs[spec.tip] = rig_chain(obj, spec.tip, spec.chain_length, spec.use_tail)
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
    prepared = bake_action.prepare_action(obj, options.into, options.overwrite_shared)
    action = prepared.action
    if prepared.shared_with:
        warnings.append(
            f"action '{prepared.original}' is shared with {', '.join(prepared.shared_with)}: "
            f"baked into the new action '{action.name}' instead (the original is kept; "
            "ask to overwrite shared actions to key it)"
        )
    channels = bake_action.Channels(obj)
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
            turns=r.turns,
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
    obj: ArmatureObject,
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


#: The public names; ``stored_report`` (now in :mod:`.bake_report`) stays importable from
#: here for scripts/bench_bake.py.
__all__ = [
    "BLOCK_FRAMES",
    "MAXFRAME",
    "MINFRAME",
    "BakeError",
    "BakeOptions",
    "BakeResult",
    "bake",
    "stored_report",
]
