# SPDX-License-Identifier: GPL-3.0-or-later
"""Solve an armature's Reach IK chains from its evaluated state, and write the poses.

This is the one place where chains are solved: :func:`solve_chain_frames` solves one chain
at ``F`` frames from arrays of its inputs; live solving (:mod:`.handlers`, ``F = 1`` per
chain) and baking (:mod:`.bake`, all frames at once) both call it, so a baked pose is the
live pose. Stable API:

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

How a chain is solved (deterministic: the pose at a frame depends only on that frame's
inputs, never on the previous frame):

1. the chain (:mod:`.rig`) and its base frame: the root parent's posed matrix, as evaluated
   or, when that parent is moved by another chain solved before (chains are solved parents
   first), recomputed from that chain's new rotations;
2. target, pole and goal orientation are taken to the base frame
   (world → armature space → base frame) and :func:`core.solve` runs from the **rest
   pose**, so the bend plane comes from the rest pose's bend (or faces the pole);
3. without an orientation goal, twist the goal does not need is removed (:func:`untwist`:
   free joints aim at their solved next joint by the shortest swing from rest), so bones
   do not spin about themselves while the target moves smoothly;
4. the result is blended with the FK pose, ``slerp(q_FK, q_IK, influence)`` per bone (a
   link's stretch ``1 + influence · (s − 1)``).

*Stretch* and *Soft Reach* are the core's ``stretch`` and ``soft_reach`` options
(:mod:`core.stretch`); the links' stretch weights are the bones' *IK Stretch* (:mod:`.rig`).

The FK pose is the bones' own rotation channels (keyed or not): live solving never writes
them (:mod:`.constraints`), so they always hold it and :func:`fk_rotations` just reads them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from typing import Any, NamedTuple

import bpy
import numpy as np
from mathutils import Euler, Matrix, Quaternion, Vector

from ..core import (
    METHODS,
    Chain,
    ReachIKError,
    SolveOptions,
    forward_kinematics,
    solve,
    solve_floats,
    solve_one,
    solve_points,
)
from ..core import rotations as rot
from ..core.components import qconj, qmul, qrotate
from . import dependencies
from .rig import (
    RigChain,
    RigError,
    affine_inverse,
    base_matrix,
    build_rig_chain,
    chain_bones,
    rig_signature,
)

#: The solver methods in the order the UI lists them (those the core has implemented).
METHOD_ORDER = (
    "triangulation",
    "ccd",
    "jacobian_transpose",
    "jacobian_pinv",
    "jacobian_dls",
    "fabrik",
)

METHOD_LABELS = {
    "triangulation": "Triangulation",
    "ccd": "CCD",
    "jacobian_transpose": "Jacobian Transpose",
    "jacobian_pinv": "Jacobian Pseudo-inverse",
    "jacobian_dls": "Jacobian DLS",
    "fabrik": "FABRIK",
}

#: Methods that iterate (the iterations and tolerance settings apply to them).
ITERATIVE = frozenset(m for m in METHOD_ORDER if m != "triangulation")


def default_method(bones: int) -> str:
    """The solver a new chain of ``bones`` bones gets: triangulation (exact, closed form)
    for one or two bones, FABRIK for three or more — the method at or better than
    Blender's IK on every rig of ``scripts/bench_natural.py`` (long chains bend evenly,
    3-bone legs keep their rest zigzag; docs/natural.md)."""
    return "fabrik" if bones >= 3 and "fabrik" in METHODS else "triangulation"


@cache
def available_methods() -> tuple[str, ...]:
    """The core's methods, those of :data:`METHOD_ORDER` first, in that order."""
    return tuple(m for m in METHOD_ORDER if m in METHODS) + tuple(
        m for m in METHODS if m not in METHOD_ORDER
    )


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


class Solved(NamedTuple):
    """A solved chain as :func:`solve_chains` first holds it: the fields of
    :class:`ChainPose`, with ``rotations`` as ``n`` rows of 4 floats, the two points as
    mathutils vectors and ``scales`` as ``n`` floats (or ``None``). Live solving reads
    these on every frame; numpy arrays and tuples (:attr:`SolveReport.poses`) are made only
    when asked for."""

    tip: str
    bone_names: tuple[str, ...]
    rotations: list[Sequence[float]]
    error: float
    reachable: bool
    target_world: Vector
    effector_world: Vector
    scales: list[float] | None = None


@dataclass(frozen=True)
class SolveReport:
    """What :func:`solve_chains` found: the solved chains, why other chains were skipped,
    and the bones of the chains not solved (disabled, or skipped)."""

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
            )
            for s in self.solved
        ]


# ----------------------------------------------------------------------------- rotations
ROTATION_MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")


def read_rotation(pose_bone: Any) -> tuple[float, float, float, float]:
    """The pose bone's rotation values in its mode, as 4 floats.

    Quaternion ``(w, x, y, z)``; Euler ``(x, y, z, 0)``; axis-angle ``(angle, x, y, z)``.
    """
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        w, x, y, z = pose_bone.rotation_quaternion
        return (w, x, y, z)
    if mode == "AXIS_ANGLE":
        angle, x, y, z = pose_bone.rotation_axis_angle
        return (angle, x, y, z)
    e = pose_bone.rotation_euler
    return (e[0], e[1], e[2], 0.0)


def write_rotation(pose_bone: Any, values: Iterable[float]) -> None:
    """Set the pose bone's rotation from 4 values in its mode (see :func:`read_rotation`)."""
    v = tuple(values)
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        pose_bone.rotation_quaternion = v
    elif mode == "AXIS_ANGLE":
        pose_bone.rotation_axis_angle = v
    else:
        pose_bone.rotation_euler = v[:3]


def values_to_quaternion(mode: str, values: Iterable[float]) -> np.ndarray:
    """Unit quaternion ``(4,)`` wxyz from rotation values in ``mode`` (identity if empty)."""
    v = tuple(values)
    if mode == "QUATERNION":
        q = np.asarray(v, dtype=np.float64)
    elif mode == "AXIS_ANGLE":
        axis = np.asarray(v[1:], dtype=np.float64)
        norm = float(np.linalg.norm(axis))
        if norm < 1e-12:
            return rot.identity()
        q = rot.from_axis_angle(axis / norm, v[0])
    else:
        q = np.asarray(Euler(v[:3], mode).to_quaternion(), dtype=np.float64)
    norm = float(np.linalg.norm(q))
    if not math.isfinite(norm) or norm < 1e-12:
        return rot.identity()
    return q / norm


def quaternion_to_values(
    q: np.ndarray, mode: str, reference: Iterable[float]
) -> tuple[float, float, float, float]:
    """Rotation values in ``mode`` for the unit quaternion ``q (4,)``, continuous with
    ``reference`` (4 values in the same mode, e.g. the bone's current value).

    Quaternion: the sign closer to the reference. Euler: the equivalent angles closest to
    the reference (``Quaternion.to_euler(order, compatible)``). Axis-angle: the axis on the
    reference's side and the angle within π of the reference angle.
    """
    ref = tuple(reference)
    if mode == "QUATERNION":
        s = -1.0 if float(np.dot(q, ref)) < 0.0 else 1.0
        return (s * q[0], s * q[1], s * q[2], s * q[3])
    if mode == "AXIS_ANGLE":
        axis, angle = rot.to_axis_angle(q)
        ref_axis = np.asarray(ref[1:])
        if float(angle) < 1e-12 and np.linalg.norm(ref_axis) > 1e-12:
            axis = ref_axis / np.linalg.norm(ref_axis)
        elif float(np.dot(axis, ref_axis)) < 0.0:
            axis, angle = -axis, -angle
        angle = float(angle) + 2.0 * math.pi * round((ref[0] - float(angle)) / (2.0 * math.pi))
        return (angle, float(axis[0]), float(axis[1]), float(axis[2]))
    order: Any = mode
    e = Quaternion(q.tolist()).to_euler(order, Euler(ref[:3], order))
    return (e[0], e[1], e[2], 0.0)


# ----------------------------------------------------------------------------- settings
#: A chain's *Advanced* settings as :func:`_options` takes them: ``(bend_plane,
#: delta_b_deg, damping, max_step_deg, posture_weight, sweep_steps, distribution)``; ``()``
#: = the core's defaults.
Advanced = tuple[Any, ...]


@dataclass(frozen=True)
class ChainSpec:
    """A chain's settings as read (evaluated) from its tip pose bone."""

    tip: str
    chain_length: int
    use_tail: bool
    target: Any
    target_bone: str
    pole: Any
    pole_bone: str
    pole_angle: float
    solver: str
    iterations: int
    tolerance: float
    influence: float
    use_rotation: bool
    orient_weight: float
    advanced: Advanced = ()
    use_stretch: bool = False
    soft_reach: float = 0.0
    stretch_rule: str = "closed_form"


def chain_tips(obj: Any) -> list[str]:
    """Names of the pose bones of ``obj`` that hold a Reach IK chain (enabled or not)."""
    if obj is None or obj.type != "ARMATURE" or obj.pose is None:
        return []
    return [pb.name for pb in obj.pose.bones if pb.reach_ik.has_chain]


_generation = 0
_chains_cache: dict[tuple[int, int], tuple[int, tuple[str, ...]]] = {}


def invalidate() -> None:
    """Forget which bones hold chains and recheck the chains against the rig: after a chain
    is added, removed or changed, the armature or its pose bones are edited, a file is
    loaded, or an undo step (the property callbacks and handlers call this)."""
    global _generation
    _generation += 1


def generation() -> int:
    """A number that changes with every :func:`invalidate`."""
    return _generation


def armature_chains(obj: Any) -> tuple[str, ...]:
    """:func:`chain_tips` of ``obj``, scanning every pose bone only after
    :func:`invalidate` (scanning a big rig on every frame costs more than the solve)."""
    key = (obj.as_pointer(), obj.data.as_pointer())
    hit = _chains_cache.get(key)
    if hit is not None and hit[0] == _generation:
        return hit[1]
    tips = tuple(chain_tips(obj))
    _chains_cache[key] = (_generation, tips)
    return tips


def advanced_settings(s: Any) -> Advanced:
    """The *Advanced* settings of a chain's settings group ``s`` (see :data:`Advanced`)."""
    return (
        s.bend_plane,
        float(s.delta_b),
        float(s.damping),
        float(s.max_step),
        float(s.posture_weight),
        int(s.sweep_steps),
        s.distribution,
    )


class _Fixed(NamedTuple):
    """The settings of a chain that cannot be animated."""

    chain_length: int
    use_tail: bool
    target: Any
    target_bone: str
    pole: Any
    pole_bone: str
    solver: str
    iterations: int
    tolerance: float
    use_rotation: bool
    advanced: Advanced = ()
    use_stretch: bool = False
    soft_reach: float = 0.0
    stretch_rule: str = "closed_form"


def _fixed(s: Any) -> _Fixed:
    return _Fixed(
        int(s.chain_length),
        bool(s.use_tail),
        s.target,
        s.target_bone,
        s.pole,
        s.pole_bone,
        s.solver,
        int(s.iterations),
        float(s.tolerance),
        bool(s.use_rotation),
        advanced_settings(s),
        bool(s.use_stretch),
        float(s.soft_reach),
        str(s.stretch_rule),
    )


def read_spec(pose_bone: Any, depsgraph: Any = None) -> ChainSpec:
    """A chain's settings from its tip pose bone.

    Args:
        pose_bone: the tip, preferably of the evaluated armature (animated settings such
            as influence are read from it).
        depsgraph: when given, the settings that cannot be animated are read from the
            original bone, and target and pole taken as evaluated in it (an object added in
            the same update is not yet linked from the evaluated armature's settings).
    """
    if depsgraph is None:
        return _spec(pose_bone, _fixed(pose_bone.reach_ik), None)
    original = pose_bone.id_data.original.pose.bones[pose_bone.name]
    return _spec(pose_bone, _fixed(original.reach_ik), depsgraph)


def _spec(pose_bone: Any, fixed: _Fixed, depsgraph: Any) -> ChainSpec:
    """The :class:`ChainSpec` of fixed settings and the animatable ones of ``pose_bone``;
    target and pole as evaluated in ``depsgraph`` (when given)."""
    s = pose_bone.reach_ik
    target, pole = fixed.target, fixed.pole if s.use_pole else None
    if depsgraph is not None:
        target = target.evaluated_get(depsgraph) if target else None
        pole = pole.evaluated_get(depsgraph) if pole else None
    return ChainSpec(
        tip=pose_bone.name,
        chain_length=fixed.chain_length,
        use_tail=fixed.use_tail,
        target=target,
        target_bone=fixed.target_bone,
        pole=pole,
        pole_bone=fixed.pole_bone,
        pole_angle=float(s.pole_angle),
        solver=fixed.solver,
        iterations=fixed.iterations,
        tolerance=fixed.tolerance,
        influence=min(max(float(s.influence), 0.0), 1.0),
        use_rotation=fixed.use_rotation,
        orient_weight=float(s.orient_weight),
        advanced=fixed.advanced,
        use_stretch=fixed.use_stretch,
        soft_reach=fixed.soft_reach,
        stretch_rule=fixed.stretch_rule,
    )


_rig_cache: dict[tuple[Any, ...], tuple[RigChain, int]] = {}


def rig_chain(obj: Any, tip: str, chain_length: int, use_tail: bool) -> RigChain:
    """The (cached) :class:`RigChain`; after an :func:`invalidate` it is checked against the
    rig's rest data and limits once, and rebuilt if they changed."""
    key = (obj.data.as_pointer(), obj.data.name_full, tip, chain_length, use_tail)
    cached = _rig_cache.get(key)
    if cached is not None:
        rig, checked = cached
        if checked == _generation:
            return rig
        if rig.signature == rig_signature(obj, rig.bone_names):
            _rig_cache[key] = (rig, _generation)
            return rig
    built = build_rig_chain(obj, tip, chain_length, use_tail)
    _rig_cache[key] = (built, _generation)
    return built


def clear_caches() -> None:
    """Forget cached chains and settings (after loading a file)."""
    _rig_cache.clear()
    _chains_cache.clear()
    _plans_cache.clear()
    invalidate()


# ----------------------------------------------------------------------------- posed state
class _PoseState:
    """Posed bone matrices (armature space, mathutils) of one evaluated armature, with
    chains solved in this pass.

    Bones below a chain solved earlier in the pass are recomputed from its new rotations
    (``M = M_parent · rest_rel · basis``); all others are Blender's evaluated matrices.
    """

    def __init__(self, obj_eval: Any) -> None:
        self.pose_bones = obj_eval.pose.bones
        self.bones = obj_eval.data.bones
        self.solved: dict[str, Sequence[float]] = {}  # bone → solved rotation of this pass
        self.scales: dict[str, float] = {}  # bone → its scale factor from stretch
        self._cache: dict[str, Matrix] = {}
        self._moved: dict[str, bool] = {}

    def add_solved(
        self,
        names: Sequence[str],
        rotations: Sequence[Sequence[float]],
        scales: Sequence[float] | None = None,
    ) -> None:
        self.solved.update(zip(names, rotations, strict=True))
        if scales is not None:
            self.scales.update(zip(names, scales, strict=True))
        self._cache.clear()
        self._moved.clear()

    def _basis(self, name: str) -> Matrix:
        basis = self.pose_bones[name].matrix_basis
        q = self.solved.get(name)
        if q is None:
            return basis
        return Matrix.LocRotScale(
            basis.translation, Quaternion(q), basis.to_scale() * self.scales.get(name, 1.0)
        )

    def _is_moved(self, name: str) -> bool:
        moved = self._moved.get(name)
        if moved is None:
            parent = self.bones[name].parent
            moved = name in self.solved or (parent is not None and self._is_moved(parent.name))
            self._moved[name] = moved
        return moved

    def parent_matrix(self, rig: RigChain) -> Matrix | None:
        """Posed matrix of the chain root's parent in armature space (``None``: no parent);
        read from Blender directly while no chain solved in this pass lies above the root."""
        name = rig.parent
        if name is None or not self.solved.keys().isdisjoint(rig.above):
            return None if name is None else self.matrix(name)
        m = self._cache.get(name)
        if m is None:
            m = self._cache[name] = self.pose_bones[name].matrix
        return m

    def matrix(self, name: str) -> Matrix:
        """Posed matrix of bone ``name`` in armature space."""
        m = self._cache.get(name)
        if m is not None:
            return m
        if not self.solved or not self._is_moved(name):
            m = self.pose_bones[name].matrix
        else:
            bone = self.bones[name]
            basis = self._basis(name)
            if bone.parent is None:
                m = bone.matrix_local @ basis
            else:
                rel = bone.parent.matrix_local.inverted_safe() @ bone.matrix_local
                m = self.matrix(bone.parent.name) @ rel @ basis
        self._cache[name] = m
        return m


def _point_world(
    obj_id: Any, bone: str, what: str, own: Any, state: _PoseState, world: Matrix
) -> Vector:
    """World position of an object, or of a bone's head when ``bone`` is given."""
    if obj_id is None:
        raise ReachIKError(f"no {what}: pick an object (or an armature and a bone)")
    if not bone or obj_id.type != "ARMATURE":
        return obj_id.matrix_world.translation
    if obj_id.original == own.original:
        if bone not in state.pose_bones:
            raise ReachIKError(f"{what} bone '{bone}' does not exist in '{obj_id.name}'")
        return world @ state.matrix(bone).translation
    pb = obj_id.pose.bones.get(bone)
    if pb is None:
        raise ReachIKError(f"{what} bone '{bone}' does not exist in '{obj_id.name}'")
    return obj_id.matrix_world @ pb.matrix.translation


def _rotation_world(
    target: Any, target_bone: str, own: Any, state: _PoseState, world: Matrix
) -> np.ndarray:
    """World rotation matrix ``(3, 3)`` of the target (object, or bone; columns scaled)."""
    if target_bone and target.type == "ARMATURE":
        if target.original == own.original:
            m = world @ state.matrix(target_bone)
        else:
            m = target.matrix_world @ target.pose.bones[target_bone].matrix
    else:
        m = target.matrix_world
    return np.array(m.to_3x3(), dtype=np.float64)


def fk_rotations(pose_bones: Any, names: Iterable[str]) -> np.ndarray:
    """The FK rotations ``(n, 4)`` wxyz (basis space) of the bones ``names``: their rotation
    channels (of the evaluated armature: as animated)."""
    return np.array(
        [
            values_to_quaternion(pose_bones[n].rotation_mode, read_rotation(pose_bones[n]))
            for n in names
        ]
    )


@lru_cache(maxsize=256)
def _options(
    iterations: int,
    tolerance: float,
    pole_angle: float,
    weight: float,
    advanced: Advanced = (),
    stretch: bool = False,
    soft_reach: float = 0.0,
    stretch_rule: str = "closed_form",
) -> SolveOptions:
    extra: dict[str, Any] = {}
    if advanced:
        bend_plane, delta_b, damping, max_step, posture, sweep, distribution = advanced
        extra = {
            "bend_plane": bend_plane,
            "delta_b_deg": delta_b,
            "damping": damping,
            "max_step_deg": max_step,
            "posture_weight": posture,
            "sweep_steps": sweep,
            "distribution": distribution,
        }
    return SolveOptions(
        max_iterations=max(iterations, 1),
        tolerance=tolerance if tolerance > 0.0 else None,
        pole_angle=pole_angle,
        position_weight=weight,
        stretch=stretch,
        soft_reach=soft_reach,
        stretch_rule=stretch_rule,
        **extra,
    )


#: Up to this many poses :func:`untwist` works pose by pose in plain floats; above it, on
#: arrays of all poses (numpy's per-call overhead dominates a few small arrays).
_FLOAT_POSES = 8


def untwist(chain: Chain, rotations: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Remove twist the goal does not need: free joints aim by the shortest swing.

    A chain reaching for a point leaves each joint free to twist about the line to the next
    joint; a solver's twist is arbitrary and can spin fast while the target moves smoothly
    (a limb's upper bone turning about itself, the elbow's axis swinging with it). Every
    free joint (no locks or limits) after which all joints are free is re-aimed at its
    solved next joint by the shortest rotation from its rest link direction (as
    :func:`core.rotations.between`), which keeps every joint position and removes the twist.

    Args:
        chain: the chain.
        rotations: ``(N, n, 4)`` solved local rotations (wxyz).
        positions: ``(N, n + 1, 3)`` their joint positions (base frame).

    Returns:
        ``(N, n, 4)`` rotations with the same joint positions. The arithmetic
        (:func:`_untwist_pose`) runs on components: plain floats pose by pose for a few
        poses (live solving), ``(N,)`` arrays for many (baking).
    """
    n = chain.n_joints
    first, rests, offsets = _untwist_plan(chain)
    if first == n:
        return rotations
    if rotations.shape[0] <= _FLOAT_POSES:
        return np.array(
            [
                untwist_floats(chain, pose, points)
                for pose, points in zip(rotations.tolist(), positions.tolist(), strict=True)
            ],
            dtype=np.float64,
        )
    pose = [tuple(rotations[:, i].T) for i in range(n)]
    points = [tuple(positions[:, i].T) for i in range(n + 1)]
    out = _untwist_pose(first, rests, offsets, pose, points, _between_arrays)
    return np.stack([np.stack(q, axis=-1) for q in out], axis=1)


def untwist_floats(chain: Chain, pose: list[Any] | None, points: list[Any]) -> list[Any]:
    """:func:`untwist` of one pose in plain floats: ``pose`` ``n`` rotations (4 floats
    each), ``points`` its ``n + 1`` joints (3 floats each); returns ``n`` rotations.

    ``pose`` may be ``None`` when every joint is re-aimed (:func:`aims_every_joint`): the
    rotations then come from the positions alone."""
    first, rests, offsets = _untwist_plan(chain)
    n = len(rests)
    if pose is None:
        if first:
            raise ValueError("a pose is needed: not every joint of the chain is re-aimed")
        pose = [_IDENTITY] * n
    if first == n:
        return pose
    # _untwist_pose's steps, written out on floats (this runs for every chain every frame):
    # the same operations in the same order as qmul, qrotate and _between_floats.
    out = list(pose)
    ww, wx, wy, wz = 1.0, 0.0, 0.0, 0.0
    for i in range(n):
        rw, rx, ry, rz = rests[i]
        pw = ww * rw - wx * rx - wy * ry - wz * rz
        px = ww * rx + wx * rw + wy * rz - wz * ry
        py = ww * ry - wx * rz + wy * rw + wz * rx
        pz = ww * rz + wx * ry - wy * rx + wz * rw
        if i >= first:
            a, b = points[i], points[i + 1]
            v0, v1, v2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
            # the link in the parent's frame: qrotate(conj(parent), link)
            t0 = ((-py) * v2 - (-pz) * v1) * 2.0
            t1 = ((-pz) * v0 - (-px) * v2) * 2.0
            t2 = ((-px) * v1 - (-py) * v0) * 2.0
            out[i] = _between_floats(
                offsets[i],
                (
                    v0 + t0 * pw + ((-py) * t2 - (-pz) * t1),
                    v1 + t1 * pw + ((-pz) * t0 - (-px) * t2),
                    v2 + t2 * pw + ((-px) * t1 - (-py) * t0),
                ),
            )
        if i + 1 == n:
            break
        qw, qx, qy, qz = out[i]
        ww = pw * qw - px * qx - py * qy - pz * qz
        wx = pw * qx + px * qw + py * qz - pz * qy
        wy = pw * qy - px * qz + py * qw + pz * qx
        wz = pw * qz + px * qy - py * qx + pz * qw
    return out


def aims_every_joint(chain: Chain) -> bool:
    """:func:`untwist` re-aims every joint of ``chain`` (all are free), so a solve's joint
    positions alone give the untwisted rotations."""
    return _untwist_plan(chain)[0] == 0


_IDENTITY = (1.0, 0.0, 0.0, 0.0)
_plans: dict[int, tuple[Chain, int, list[Any], list[Any]]] = {}


def _untwist_plan(chain: Chain) -> tuple[int, list[Any], list[Any]]:
    """For :func:`untwist`: the first joint re-aimed (``n``: none), the rest rotations and
    offsets as plain floats; cached per chain (live solving asks every frame)."""
    hit = _plans.get(id(chain))
    if hit is not None and hit[0] is chain:
        return hit[1], hit[2], hit[3]
    first = chain.n_joints
    while first > 0 and chain.limits[first - 1].is_free:
        first -= 1
    rests = [tuple(r) for r in chain.rest_rotations.tolist()]
    offsets = chain.offsets.tolist()
    if len(_plans) > 256:
        _plans.clear()
    _plans[id(chain)] = (chain, first, rests, offsets)
    return first, rests, offsets


def _untwist_pose(
    first: int,
    rests: list[Any],
    offsets: list[Any],
    pose: list[Any],
    points: list[Any],
    between: Any,
) -> list[Any]:
    """:func:`untwist`'s steps on components (floats, or ``(N,)`` arrays, with the matching
    ``between``): ``pose`` the ``n`` rotations as ``(w, x, y, z)``, ``points`` the ``n + 1``
    joints as ``(x, y, z)``."""
    out = list(pose)
    world: Any = (1.0, 0.0, 0.0, 0.0)
    for i in range(len(out)):
        parent = qmul(world, rests[i])
        if i >= first:
            a, b = points[i], points[i + 1]
            link = (b[0] - a[0], b[1] - a[1], b[2] - a[2])
            out[i] = between(offsets[i], qrotate(qconj(parent), link))
        world = qmul(parent, out[i])
    return out


# Shortest-arc unit quaternion taking the direction ``a`` (3 floats) to ``b``, as
# :func:`core.rotations.between`: the identity for a zero vector, a half turn about a
# perpendicular axis for opposite directions; ``1 + dot`` is written as
# ``|a × b|² / (1 − dot)`` where ``dot < 0`` (no cancellation). ``_between_floats`` for
# ``b`` as 3 floats, ``_between_arrays`` for ``b`` as 3 ``(N,)`` arrays: the same
# arithmetic, so one pose gives the same numbers either way.


def _between_floats(a: Sequence[float], b: Sequence[float]) -> tuple[float, ...]:
    a0, a1, a2 = a
    na = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    if na == 0.0:
        return (1.0, 0.0, 0.0, 0.0)
    u0, u1, u2 = a0 / na, a1 / na, a2 / na
    b0, b1, b2 = b
    nb = (b0 * b0 + b1 * b1 + b2 * b2) ** 0.5
    scale = 1.0 / (nb if nb > 0.0 else 1.0)
    v0, v1, v2 = b0 * scale, b1 * scale, b2 * scale
    dot = u0 * v0 + u1 * v1 + u2 * v2
    cx = u1 * v2 - u2 * v1
    cy = u2 * v0 - u0 * v2
    cz = u0 * v1 - u1 * v0
    cross_sq = cx * cx + cy * cy + cz * cz
    if dot < 0.0:
        w = cross_sq / (1.0 - dot)
        if cross_sq < 1e-24:
            w = 0.0
            cx, cy, cz = rot.perpendicular(np.array([u0, u1, u2])).tolist()
    else:
        w = 1.0 + dot
    norm = (w * w + cx * cx + cy * cy + cz * cz) ** 0.5
    return (w / norm, cx / norm, cy / norm, cz / norm)


def _between_arrays(a: Sequence[float], b: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    na = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if na == 0.0:
        one = np.ones_like(b[0])
        return (one, 0.0 * one, 0.0 * one, 0.0 * one)
    ua = [c / na for c in a]
    nb = (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]) ** 0.5
    scale = 1.0 / np.where(nb > 0.0, nb, 1.0)
    ub = [c * scale for c in b]
    dot = ua[0] * ub[0] + ua[1] * ub[1] + ua[2] * ub[2]
    cx = ua[1] * ub[2] - ua[2] * ub[1]
    cy = ua[2] * ub[0] - ua[0] * ub[2]
    cz = ua[0] * ub[1] - ua[1] * ub[0]
    cross_sq = cx * cx + cy * cy + cz * cz
    behind = dot < 0.0
    w = np.where(behind, cross_sq / np.where(behind, 1.0 - dot, 1.0), 1.0 + dot)
    opposite = behind & (cross_sq < 1e-24)
    if opposite.any():
        axis = rot.perpendicular(np.array(ua)).tolist()
        w = np.where(opposite, 0.0, w)
        cx, cy, cz = (np.where(opposite, axis[k], c) for k, c in enumerate((cx, cy, cz)))
    norm = (w * w + cx * cx + cy * cy + cz * cz) ** 0.5
    return (w / norm, cx / norm, cy / norm, cz / norm)


@dataclass(frozen=True, eq=False)
class FrameSolution:
    """One chain solved at ``F`` frames by :func:`solve_chain_frames` (world metres).

    Attributes:
        rotations: ``(F, n, 4)`` wxyz basis rotations, blended with FK by influence.
        errors: ``(F,)`` distance from the effector of that pose to the target.
        reachable: ``(F,)`` the target lies within the straightened chain's reach.
        effectors: ``(F, 3)`` the effector of that pose, world.
        scales: ``(F, n)`` each bone's own scale factor (:func:`bone_scales`, blended by
            influence) when the chain stretches (:func:`stretches`), else ``None``.
    """

    rotations: np.ndarray
    errors: np.ndarray
    reachable: np.ndarray
    effectors: np.ndarray
    scales: np.ndarray | None = None


def stretches(chain: Chain, use_stretch: bool) -> bool:
    """The chain's links may stretch: its *Stretch* is on and some bone's *IK Stretch* is
    above 0 (then every solve of it reports the links' scales)."""
    return use_stretch and any(w > 0.0 for w in chain.stretch)


def bone_scales(links: np.ndarray) -> np.ndarray:
    """Each bone's own scale factor ``(..., n)`` from its link's stretch ``links``
    ``(..., n)`` (root→tip): its stretch over that of the bone above it in the chain, whose
    scale it inherits; the root's as is (its parent does not stretch)."""
    return np.concatenate([links[..., :1], links[..., 1:] / links[..., :-1]], axis=-1)


def _effectors(chain: Chain, rotations: np.ndarray, links: np.ndarray | None) -> np.ndarray:
    """Effectors ``(F, 3)`` (base frame) of poses ``(F, n, 4)`` whose links stretch by
    ``links (F, n)`` (``None``: they do not)."""
    if links is None:
        return forward_kinematics(chain, rotations)[0][:, -1]
    return np.array(
        [
            forward_kinematics(chain.scaled(s), q)[0][-1]
            for q, s in zip(rotations, links, strict=True)
        ]
    ).reshape(-1, 3)


def _to_frame(maps: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Points ``(F, 3)`` mapped by the affine matrices ``(F, 4, 4)``."""
    return (maps[:, :3, :3] @ points[:, :, None])[:, :, 0] + maps[:, :3, 3]


def solve_chain_frames(
    rig: RigChain,
    spec: ChainSpec,
    bases: np.ndarray,
    targets: np.ndarray,
    poles: np.ndarray | None,
    goal_rotations: np.ndarray | None,
    fk: np.ndarray | None,
    influence: np.ndarray,
    pole_angle: np.ndarray,
    orient_weight: np.ndarray,
) -> FrameSolution:
    """Solve one chain at ``F`` frames: the one solve path of live solving and baking.

    Base frame → :func:`core.solve` from the rest pose (batched over the frames, one call
    per group of frames with the same options) → :func:`untwist` (without an orientation
    goal) → ``slerp(q_FK, q_IK, influence)`` per bone.

    Args:
        rig: the chain.
        spec: its settings (solver, iterations, tolerance, use rotation are read here).
        bases: ``(F, 4, 4)`` base frames in world space (world @ :func:`.rig.base_matrices`).
        targets: ``(F, 3)`` target points, world metres.
        poles: ``(F, 3)`` pole points, world metres, or ``None``.
        goal_rotations: ``(F, 3, 3)`` the target's world rotation matrices (columns may be
            scaled) for an orientation goal, or ``None``.
        fk: ``(F, n, 4)`` the FK rotations (wxyz, basis space); read only on frames with
            influence below 1 (may be ``None`` when there are none).
        influence: ``(F,)`` the blend IK share in ``[0, 1]`` (0 on disabled frames).
        pole_angle: ``(F,)`` radians.
        orient_weight: ``(F,)`` the orientation goal's weight.

    Raises:
        ReachIKError: unknown solver, zero scale, non-finite result.
    """
    _check_solver(spec.solver)
    chain = rig.chain
    count = targets.shape[0]
    to_base = affine_inverse(bases)
    target_b = _to_frame(to_base, targets)
    pole_b = None if poles is None else _to_frame(to_base, poles)
    goal = None
    weight = np.ones(count)
    if spec.use_rotation and goal_rotations is not None:
        base_rot = bases[:, :3, :3] / np.linalg.norm(bases[:, :3, :3], axis=-2, keepdims=True)
        world_rot = goal_rotations / np.linalg.norm(goal_rotations, axis=-2, keepdims=True)
        goal = rot.from_matrix(np.swapaxes(base_rot, -1, -2) @ world_rot)
        weight = 1.0 - np.asarray(orient_weight, dtype=np.float64)
    angles = np.asarray(pole_angle, dtype=np.float64)
    # Groups of frames sharing the options: (pole angle, weight, frames as a slice or indices).
    groups: list[tuple[float, float, Any]]
    if count == 1 or (np.all(angles == angles[0]) and np.all(weight == weight[0])):
        groups = [(float(angles[0]), float(weight[0]), slice(None))]
    else:
        keys, inverse = np.unique(np.stack([angles, weight], axis=-1), axis=0, return_inverse=True)
        groups = [(a, w, np.flatnonzero(inverse.ravel() == g)) for g, (a, w) in enumerate(keys)]
    ik = np.empty((count, chain.n_joints, 4))
    positions = np.empty((count, chain.n_joints + 1, 3))
    links = np.ones((count, chain.n_joints)) if stretches(chain, spec.use_stretch) else None
    for angle, w, idx in groups:
        size = count if isinstance(idx, slice) else idx.size
        # One frame goes to the core unbatched: its batch set-up costs more than the solve.
        pick: Any = (0 if isinstance(idx, slice) else idx[0]) if size == 1 else idx
        result = solve(
            chain,
            target_b[pick],
            method=spec.solver,
            pole=None if pole_b is None else pole_b[pick],
            target_rotation=None if goal is None else goal[pick],
            options=_options(
                spec.iterations,
                spec.tolerance,
                float(angle),
                float(w),
                spec.advanced,
                spec.use_stretch,
                spec.soft_reach,
                spec.stretch_rule,
            ),
        )
        solved = np.asarray(result.rotations, dtype=np.float64).reshape(size, -1, 4)
        positions[idx] = np.asarray(result.positions).reshape(size, -1, 3)
        if links is not None and result.scales is not None:
            links[idx] = np.asarray(result.scales).reshape(size, -1)
        if goal is None or w >= 1.0:
            solved = untwist(chain, solved, positions[idx])
        ik[idx] = solved
    if not np.isfinite(ik).all():
        raise ReachIKError(f"solver '{spec.solver}' returned non-finite rotations")
    share = np.asarray(influence, dtype=np.float64).clip(0.0, 1.0)
    effector_b = positions[:, -1]
    blend = share < 1.0
    if blend.any():
        if fk is None:
            raise ReachIKError("the FK pose is needed to blend with influence below 1")
        ik[blend] = rot.normalize(rot.slerp(fk[blend], ik[blend], share[blend][:, None]))
        if links is not None:
            links[blend] = 1.0 + share[blend][:, None] * (links[blend] - 1.0)
        effector_b[blend] = _effectors(chain, ik[blend], None if links is None else links[blend])
    effectors = _to_frame(bases, effector_b)
    tolerance = spec.tolerance if spec.tolerance > 0.0 else 1e-6 * chain.reach
    reach_tol = chain.reach * 1e-9 + tolerance
    miss = effectors - targets
    return FrameSolution(
        rotations=ik,
        errors=np.sqrt(np.add.reduce(miss * miss, axis=-1)),
        reachable=np.sqrt(np.add.reduce(target_b * target_b, axis=-1)) <= chain.reach + reach_tol,
        effectors=effectors,
        scales=None if links is None else bone_scales(links),
    )


def _check_solver(solver: str) -> None:
    if solver not in available_methods():
        raise ReachIKError(
            f"solver '{solver}' is not available; choose one of {', '.join(available_methods())}"
        )


def solve_frame(
    rig: RigChain,
    spec: ChainSpec,
    base: Any,
    target: Sequence[float],
    pole: Sequence[float] | None = None,
    goal_rotation: np.ndarray | None = None,
    fk: np.ndarray | None = None,
) -> FrameSolution:
    """:func:`solve_chain_frames` for one frame, the way live solving does it: matrices in
    mathutils (Blender's single precision), the solve in plain floats
    (:func:`core.solve_floats`); for one small chain numpy's per-call overhead would cost
    more than the solve. The same steps with the same core method; a test checks that both
    agree to single precision, and every bake compares them.

    Args:
        rig, spec: the chain and its settings as evaluated (solver, iterations, tolerance,
            influence, pole angle, orientation goal and weight are read here).
        base: the base frame in world space, 4×4 (a mathutils matrix or nested sequences).
        target, pole: 3 floats each, world metres (no pole: ``None``).
        goal_rotation: ``(3, 3)`` the target's world rotation (columns may be scaled) for an
            orientation goal, or ``None``.
        fk: ``(n, 4)`` the FK rotations, needed when the influence is below 1.

    Returns:
        A :class:`FrameSolution` of ``F = 1``.

    Raises:
        ReachIKError: unknown solver, zero scale, non-finite result, FK missing.
    """
    pose, error, reachable, effector, scales = _solve_values(
        rig,
        _Fixed(
            spec.chain_length,
            spec.use_tail,
            spec.target,
            spec.target_bone,
            spec.pole,
            spec.pole_bone,
            spec.solver,
            spec.iterations,
            spec.tolerance,
            spec.use_rotation,
            spec.advanced,
            spec.use_stretch,
            spec.soft_reach,
            spec.stretch_rule,
        ),
        (spec.influence, spec.pole_angle, spec.orient_weight),
        Matrix(base),
        Vector(target),
        None if pole is None else Vector(pole),
        goal_rotation,
        fk,
    )
    return FrameSolution(
        rotations=np.array([pose], dtype=np.float64),
        errors=np.array([error]),
        reachable=np.array([reachable]),
        effectors=np.array([effector]),
        scales=None if scales is None else np.array([scales], dtype=np.float64),
    )


def _solve_values(
    rig: RigChain,
    fixed: _Fixed,
    animated: tuple[float, float, float],
    base: Matrix,
    target: Vector,
    pole: Vector | None,
    goal_rotation: np.ndarray | None,
    fk: np.ndarray | None,
) -> tuple[list[Sequence[float]], float, bool, Vector, list[float] | None]:
    """:func:`solve_frame`'s work: rotations (``n`` × 4 floats), error, reachable, effector,
    and the bones' scale factors (``n`` floats, :func:`bone_scales`) when the chain
    stretches (else ``None``).

    ``animated``: influence, pole angle and orientation weight at this frame.
    """
    _check_solver(fixed.solver)
    influence, pole_angle, orient_weight = animated
    chain = rig.chain
    if not abs(base.determinant()) > 1e-18:
        raise RigError("a bone, the chain's parent or the armature has zero scale")
    to_base = base.inverted()
    target_b = to_base @ target
    pole_b = None if pole is None else to_base @ pole
    goal = None
    weight = 1.0
    if fixed.use_rotation and goal_rotation is not None:
        base_rot = np.array(base.to_3x3(), dtype=np.float64)
        base_rot /= np.linalg.norm(base_rot, axis=0)
        world_rot = goal_rotation / np.linalg.norm(goal_rotation, axis=0)
        goal = rot.from_matrix(base_rot.T @ world_rot)
        weight = 1.0 - orient_weight
    options = _options(
        fixed.iterations,
        fixed.tolerance,
        pole_angle,
        weight,
        fixed.advanced,
        fixed.use_stretch,
        fixed.soft_reach,
        fixed.stretch_rule,
    )
    pose: list[Sequence[float]]
    links: list[float] | None = None
    if stretches(chain, fixed.use_stretch):  # the links' scales come with solve_one's result
        result = solve_one(
            chain, target_b, method=fixed.solver, pole=pole_b, target_rotation=goal, options=options
        )
        pose, points = result.rotations[0].tolist(), result.positions[0].tolist()
        links = None if result.scales is None else result.scales[0].tolist()
        if goal is None or weight >= 1.0:
            pose = untwist_floats(chain, pose, points)
    elif goal is not None:
        result = solve_one(
            chain, target_b, method=fixed.solver, pole=pole_b, target_rotation=goal, options=options
        )
        pose, points = result.rotations[0].tolist(), result.positions[0].tolist()
        if weight >= 1.0:
            pose = untwist_floats(chain, pose, points)
    elif aims_every_joint(chain):  # untwist gives every rotation from the positions alone
        points = solve_points(chain, target_b, method=fixed.solver, pole=pole_b, options=options)
        pose = untwist_floats(chain, None, points)
    else:
        pose, points = solve_floats(
            chain, target_b, method=fixed.solver, pole=pole_b, options=options
        )
        pose = untwist_floats(chain, pose, points)
    if not math.isfinite(sum(map(sum, pose))):
        raise ReachIKError(f"solver '{fixed.solver}' returned non-finite rotations")
    share = min(max(influence, 0.0), 1.0)
    effector_b = points[-1]
    if share < 1.0:
        if fk is None:
            raise ReachIKError("the FK pose is needed to blend with influence below 1")
        ik = rot.normalize(rot.slerp(fk, np.array(pose, dtype=np.float64), share))
        pose = ik.tolist()
        if links is not None:
            links = [1.0 + share * (s - 1.0) for s in links]
        stretched = None if links is None else np.array([links])
        effector_b = _effectors(chain, ik[None], stretched)[0].tolist()
    effector = base @ Vector(effector_b)
    tolerance = fixed.tolerance if fixed.tolerance > 0.0 else 1e-6 * chain.reach
    reachable = target_b.length <= chain.reach * (1.0 + 1e-9) + tolerance
    scales = None if links is None else bone_scales(np.array(links)).tolist()
    return pose, (effector - target).length, reachable, effector, scales


#: The settings of a chain that may be animated, read on every frame: enabled, influence,
#: pole angle, orientation weight, use pole.
_animated = operator.attrgetter("enabled", "influence", "pole_angle", "orient_weight", "use_pole")


@dataclass(frozen=True, eq=False)
class _Planned:
    """A chain of an armature as live solving meets it on every frame until the next
    :func:`invalidate`: its model (or why it has none) and its fixed settings."""

    tip: str
    rig: RigChain | None
    problem: str
    fixed: _Fixed


#: Armature object (pointer) → (generation, its chains, parents first).
_plans_cache: dict[int, tuple[int, list[_Planned]]] = {}


def _planned(obj: Any) -> list[_Planned]:
    """The chains of ``obj`` (original), parents first: a chain whose bones lie above
    another chain's root is solved before it."""
    key = obj.as_pointer()
    hit = _plans_cache.get(key)
    if hit is not None and hit[0] == _generation:
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
            item = _Planned(tip, item.rig, problem, item.fixed)
        rank = analysis.ranks.get((obj.name, tip), 0)
        out[k] = ((rank, depth), tip, item)
    out.sort(key=lambda item: (item[0], item[1]))
    plan = [item[2] for item in out]
    _plans_cache[key] = (_generation, plan)
    return plan


def dependency_chains() -> list[dependencies.ChainGoals]:
    """Every chain of every armature in the file, for :mod:`.dependencies`."""
    chains = []
    objects: Any = bpy.data.objects
    for other in objects:
        if other.type != "ARMATURE" or other.pose is None:
            continue
        for tip in armature_chains(other):
            s = other.pose.bones[tip].reach_ik
            try:
                names = chain_bones(other, tip, s.chain_length, s.use_tail)
            except RigError:
                continue
            chains.append(dependencies.chain_goals(other, tip, names, s))
    return chains


def _matrix_values(m: Matrix) -> tuple[tuple[float, ...], ...]:
    """The 16 values of a 4×4 matrix, row by row (compared exactly)."""
    return (m[0].to_tuple(), m[1].to_tuple(), m[2].to_tuple(), m[3].to_tuple())


def solve_chains(
    obj: Any, depsgraph: Any, known: Mapping[str, tuple[tuple[Any, ...], Solved]] | None = None
) -> SolveReport:
    """Solve every enabled chain of ``obj`` (see :func:`solve_armature`).

    Args:
        known: per chain tip, the inputs and result of an earlier solve of this armature
            (:attr:`SolveReport.inputs`, same :func:`generation`): a chain whose inputs now
            equal those is not solved again, that result is reused (live solving keeps one
            per frame). The inputs are everything the solve reads, exactly (Blender's
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
    world = obj_eval.matrix_world
    world_seen = _matrix_values(world)
    bones = state.pose_bones
    for item in plan:
        pb = bones.get(item.tip)
        if pb is None:
            continue
        enabled, influence, pole_angle, orient_weight, use_pole = _animated(pb.reach_ik)
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
            invalidate()
            return solve_chains(obj, depsgraph)
        try:
            target_world = _point_world(target, fixed.target_bone, "target", obj_eval, state, world)
            parent = state.parent_matrix(rig)
            root_location = bones[rig.bone_names[0]].location
            pole_world = None
            if pole is not None:
                pole_world = _point_world(pole, fixed.pole_bone, "pole", obj_eval, state, world)
            goal_rot = None
            if fixed.use_rotation:
                goal_rot = _rotation_world(target, fixed.target_bone, obj_eval, state, world)
            fk = fk_rotations(bones, rig.bone_names) if influence < 1.0 else None
            seen = (
                (enabled, influence, pole_angle, orient_weight, use_pole),
                target_world.to_tuple(),
                world_seen,
                None if parent is None else _matrix_values(parent),
                root_location.to_tuple(),
                None if pole_world is None else pole_world.to_tuple(),
                None if goal_rot is None else goal_rot.tobytes(),
                None if fk is None else fk.tobytes(),
            )
            earlier = known.get(item.tip) if known is not None else None
            if earlier is not None and earlier[0] == seen:
                inputs[item.tip] = seen
                solved.append(earlier[1])
                state.add_solved(rig.bone_names, earlier[1].rotations, earlier[1].scales)
                continue
            base = world @ base_matrix(rig, parent, root_location)
            rotations, error, reachable, effector, scales = _solve_values(
                rig,
                fixed,
                (influence, pole_angle, orient_weight),
                base,
                target_world,
                pole_world,
                goal_rot,
                fk,
            )
        except ReachIKError as exc:
            problems[item.tip] = str(exc)
            idle.extend(rig.bone_names)
            continue
        solved.append(
            Solved(
                item.tip,
                rig.bone_names,
                rotations,
                error,
                reachable,
                target_world,
                effector,
                scales,
            )
        )
        inputs[item.tip] = seen
        fresh.append(item.tip)
        state.add_solved(rig.bone_names, rotations, scales)
    return SolveReport(solved, problems, tuple(idle), inputs, tuple(fresh))


def solve_armature(obj: Any, depsgraph: Any) -> list[ChainPose]:
    """Solve every enabled chain of ``obj`` at the depsgraph's frame; writes nothing."""
    return solve_chains(obj, depsgraph).poses


# ----------------------------------------------------------------------------- writing
def apply_poses(obj: Any, poses: Iterable[ChainPose]) -> None:
    """Write solved poses into the rotation channels of ``obj``'s pose bones (module
    docstring)."""
    pose_bones = obj.pose.bones
    for pose in poses:
        for name, q in zip(pose.bone_names, pose.rotations, strict=True):
            pb = pose_bones.get(name)
            if pb is not None:
                write_rotation(pb, quaternion_to_values(q, pb.rotation_mode, read_rotation(pb)))


__all__ = [
    "ITERATIVE",
    "METHOD_LABELS",
    "METHOD_ORDER",
    "Advanced",
    "ChainPose",
    "ChainSpec",
    "FrameSolution",
    "SolveReport",
    "Solved",
    "advanced_settings",
    "aims_every_joint",
    "apply_poses",
    "armature_chains",
    "available_methods",
    "bone_scales",
    "chain_tips",
    "clear_caches",
    "default_method",
    "fk_rotations",
    "generation",
    "invalidate",
    "quaternion_to_values",
    "read_rotation",
    "rig_chain",
    "solve_armature",
    "solve_chain_frames",
    "solve_chains",
    "solve_frame",
    "stretches",
    "untwist",
    "untwist_floats",
    "values_to_quaternion",
    "write_rotation",
]
