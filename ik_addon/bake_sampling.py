# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake, step 1: sample each chain's inputs over a block of frames.

:class:`_Samples` collects one chain's inputs (the armature's world matrix, the root
parent's posed matrix and the root's location, target and pole matrices, the animatable
settings and, where the chain is blended with FK, the FK pose) either by setting every
frame and reading what Blender evaluates (:func:`_sample_every_frame`) or, when all of it
follows from F-curves alone, from those (:func:`_sample_from_curves`, :mod:`.sampling`).
From F-curves, the live solver's pose at the first and last frame is recorded for the
check (:func:`_checks`). Also the bake's progress fractions (:data:`SAMPLED`, :data:`SOLVED`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import bpy
import numpy as np

from ..core import rotations as rot
from . import evaluate, keying, sampling
from .blender_types import ArmatureObject, is_armature
from .chain_spec import ANIMATED_SETTINGS, ChainSpec, read_animated
from .rig import RigChain
from .rotation_modes import fk_rotations

Progress = Callable[[float], None]

#: Progress reported once every frame is sampled, and once every chain is solved (then
#: the keys are written).
SAMPLED, SOLVED = 0.8, 0.9


def _report_progress(progress: Progress | None, value: float) -> None:
    if progress is not None:
        progress(min(max(value, 0.0), 1.0))


def _ancestors(obj: ArmatureObject, name: str) -> set[str]:
    """``name`` and every bone above it."""
    out: set[str] = set()
    bone = obj.data.bones.get(name)
    while bone is not None:
        out.add(bone.name)
        bone = bone.parent
    return out


class _Goal:
    """Reads a target or pole each frame: an object's world matrix, or a bone's posed
    matrix and its armature's world matrix.

    The object is the one set in the original settings, taken as evaluated in the
    depsgraph, as :func:`.chain_spec.read_spec` does (the armature itself: its evaluated copy).
    """

    def __init__(self, original: bpy.types.Object, bone: str, own: ArmatureObject) -> None:
        self.original = original
        self.own = original == own
        self.bone = bone if original.type == "ARMATURE" else ""
        self.matrices: list[Any] = []
        self.spaces: list[Any] = []

    def read(self, depsgraph: bpy.types.Depsgraph, own_eval: ArmatureObject) -> None:
        goal = own_eval if self.own else self.original.evaluated_get(depsgraph)
        if self.bone and is_armature(goal):
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
        settings: ``(F, 5)`` the animatable settings (:data:`.chain_spec.ANIMATED_SETTINGS`).
        fk: ``(F, n, 4)`` the FK pose on frames blended with it (else identity).
    """

    def __init__(self, spec: ChainSpec, rig: RigChain, obj: ArmatureObject) -> None:
        self.spec, self.rig = spec, rig
        self.tip, self.root = spec.tip, rig.bone_names[0]
        original = obj.pose.bones[spec.tip].reach_ik
        self.goal = _Goal(original.target, spec.target_bone, obj)
        self.pole_goal = _Goal(original.pole, spec.pole_bone, obj) if original.pole else None
        self._settings: list[tuple[float, ...]] = []
        self._locations: list[Any] = []
        self._parents: list[Any] = []
        self._fk: dict[int, np.ndarray] = {}

    def read(
        self, depsgraph: bpy.types.Depsgraph, obj_eval: ArmatureObject, i: int, fk: bool = False
    ) -> None:
        """Read the inputs at the current frame (index ``i``); the FK pose when blended with
        it at this frame, or always with ``fk``."""
        pose_bones = obj_eval.pose.bones
        s = pose_bones[self.tip].reach_ik
        settings = read_animated(s)
        self._settings.append(settings)
        self._locations.append(pose_bones[self.root].location[:])
        if self.rig.parent is not None:
            self._parents.append(pose_bones[self.rig.parent].matrix.copy())
        self.goal.read(depsgraph, obj_eval)
        if self.pole_goal is not None:
            self.pole_goal.read(depsgraph, obj_eval)
        if fk or settings[1] < 1.0 or not settings[0]:
            self._fk[i] = fk_rotations(pose_bones, self.rig.bone_names)

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
    depsgraph: bpy.types.Depsgraph,
    obj: ArmatureObject,
    samples: list[_Samples],
    world: list[Any],
    i: int,
    fk: bool = False,
) -> None:
    """Read every chain's inputs at the current frame (index ``i``; see :meth:`_Samples.read`)."""
    obj_eval = obj.evaluated_get(depsgraph)
    world.append(obj_eval.matrix_world.copy())
    for s in samples:
        s.read(depsgraph, obj_eval, i, fk)


def _depsgraph(scene: bpy.types.Scene) -> Any:
    """The depsgraph that ``scene.frame_set`` evaluates."""
    if scene == bpy.context.scene:
        return bpy.context.evaluated_depsgraph_get()
    return scene.view_layers[0].depsgraph


def _checks(
    obj: ArmatureObject, depsgraph: bpy.types.Depsgraph, tips: Sequence[str]
) -> dict[str, evaluate.ChainPose]:
    """The live solver's pose per tip at the current frame."""
    report = evaluate.solve_chains(obj, depsgraph)
    return {p.tip: p for p in report.poses if p.tip in tips}


def _sample_every_frame(
    scene: bpy.types.Scene,
    obj: ArmatureObject,
    samples: list[_Samples],
    frames: np.ndarray,
    progress: Progress | None,
) -> np.ndarray:
    """Set each frame and read every input; returns the armature's world ``(F, 4, 4)``."""
    depsgraph = _depsgraph(scene)
    count = frames.size
    matrices: list[Any] = []
    step = max(count // 100, 1)
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
        _sample_frame(depsgraph, obj, samples, matrices, i)
        if i % step == 0:
            _report_progress(progress, SAMPLED * (i + 1) / count)
    for sample in samples:
        sample.finish(count)
    return np.array(matrices, dtype=np.float64)


def _sample_from_curves(
    scene: bpy.types.Scene,
    obj: ArmatureObject,
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
    obj: ArmatureObject,
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
    sample.root_location = curves.values(prefix + "location", root.location[:], frames)
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
