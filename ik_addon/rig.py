# SPDX-License-Identifier: GPL-3.0-or-later
"""From Blender pose bones to a :class:`core.Chain`: rest frames, offsets and joint limits.

Spaces used by the Blender layer (all 4×4 matrices act on column vectors; the solve path
does its maths in float64, on one frame or many, :mod:`.affine`):

* **world**: Blender's world space, metres;
* **armature space**: the armature object's local space; ``obj.matrix_world`` maps it to
  world (object location, rotation and scale included);
* **base frame** of a chain (the core's frame, see :mod:`core.chain`): its origin is the
  chain root's posed head, its axes are the posed axes of the root's parent bone (armature
  space axes when the root has no parent, or does not inherit rotation), and its unit is
  the parent's posed scale. :func:`base_rows` below maps base-frame points to world
  space.

A chain of ``n`` joints is the bones ``root … tip`` (root→tip). Blender composes a posed
bone as ``M_i = M_parent · (R_parent⁻¹ · R_i) · B_i`` (``R`` = ``bone.matrix_local``, the
rest matrix in armature space, which holds the bone roll; ``B`` = ``matrix_basis``), which
is the core's ``W_i = W_{i−1} · rest_i · q_i`` with

* ``rest_i`` = rotation of ``R_{i−1}⁻¹ · R_i`` (joint 0: ``R_parent⁻¹ · R_root``),
* ``offsets[i]`` = head of bone ``i + 1`` in bone ``i``'s rest frame — this includes the gap
  of a disconnected bone — and for the last joint its tail ``(0, length, 0)``,
* ``q_i`` = the rotation of ``matrix_basis``, i.e. what ``rotation_quaternion`` holds.

Like Blender's IK constraint, *use tail* makes the tip bone the last joint and its tail the
effector; without it the chain ends at the tip's parent, whose tail is the effector, and the
chain length counts from that parent.

Only rotations are solved. The root's own location channels move the base origin; the
location and scale channels of the other chain bones are not part of the chain (a chain bone
should be posed by rotation only). Every chain bone but the root must inherit rotation.

Joint limits come from Blender's own per-bone IK settings, mapped onto
:class:`core.JointLimits` (swing–twist about the bone's +Y axis, ``q = swing · twist``,
angles relative to the rest frame, exactly the frame of ``matrix_basis``):

====================================  ==========================================
Blender pose bone                     :class:`core.JointLimits`
====================================  ==========================================
``lock_ik_x/y/z``                     ``lock = (x, y, z)``
``use_ik_limit_x`` + ``ik_min/max_x``  ``ranges[0]``: swing rotation-vector X
``use_ik_limit_y`` + ``ik_min/max_y``  ``ranges[1]``: twist angle about +Y
``use_ik_limit_z`` + ``ik_min/max_z``  ``ranges[2]``: swing rotation-vector Z
``ik_stiffness_x/y/z``                ``stiffness`` (solvers weigh by ``1 − s``)
====================================  ==========================================

One difference: when both X and Z are limited Blender's own solver clamps the swing to the
ellipse through the four limits, the core clamps each component on its own (a box).

Each bone's *IK Stretch* (``ik_stretch``) is the chain's stretch weight of that joint
(:attr:`core.Chain.stretch`), read with the limits (part of :func:`rig_signature`, so an
edit is seen after the next :meth:`.live_state.LiveState.invalidate`; an animated ``ik_stretch`` is
not followed frame by frame); it matters only on a chain whose *Stretch* is on.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix

from ..core import Chain, ChainError, JointLimits, ReachIKError
from ..core import rotations as rot
from . import affine
from .affine import Rows, Value, Vec
from .blender_types import ArmatureObject


class RigError(ReachIKError):
    """A chain cannot be built from the armature's bones; the message says why."""


@dataclass(frozen=True, eq=False)
class RigChain:
    """A chain of pose bones and its core model.

    Attributes:
        tip: the pose bone holding the chain's settings.
        bone_names: the joints' bone names, root→tip (``n``).
        parent: the root bone's parent, or ``None``.
        chain: the core chain (rest frames, offsets in metres of rest armature space, limits).
        root_rest: ``(4, 4)`` the root's rest matrix relative to its parent's rest frame
            (armature space when there is no parent or the root does not inherit rotation);
            ``root_rows`` its top three rows as floats (:data:`.affine.Rows`).
        inherit_rotation: the root follows its parent's rotation (else the base axes are
            armature space, only the parent's motion of the root's head is followed).
        root_connected: the root is connected to its parent, so Blender ignores its
            location channels.
        root_depth: how many bones lie above the root (chains are solved parents first).
        above: the names of the bones above the root.
        signature: the rest data the chain was built from (to notice edits of the rig).
    """

    tip: str
    bone_names: tuple[str, ...]
    parent: str | None
    chain: Chain
    root_rest: np.ndarray
    root_rows: tuple[tuple[float, ...], ...]
    inherit_rotation: bool
    root_connected: bool
    root_depth: int
    above: frozenset[str]
    signature: tuple[Any, ...]


def matrix(m: Matrix) -> np.ndarray:
    """A mathutils matrix as a numpy ``(4, 4)`` float64 array."""
    return np.array(m, dtype=np.float64)


def bone_limits(pose_bone: bpy.types.PoseBone) -> JointLimits:
    """Joint limits and stiffness from a pose bone's IK settings (table above)."""
    lock = (bool(pose_bone.lock_ik_x), bool(pose_bone.lock_ik_y), bool(pose_bone.lock_ik_z))
    ranges = tuple(
        (float(getattr(pose_bone, f"ik_min_{a}")), float(getattr(pose_bone, f"ik_max_{a}")))
        if getattr(pose_bone, f"use_ik_limit_{a}")
        else None
        for a in "xyz"
    )
    stiffness = tuple(min(float(getattr(pose_bone, f"ik_stiffness_{a}")), 0.99) for a in "xyz")
    return JointLimits(lock=lock, ranges=ranges, stiffness=stiffness)


#: Reads a pose bone's IK limit settings as one tuple (one C call: checked every frame).
_limit_key = operator.attrgetter(
    *(
        f"{p}_{a}"
        for p in ("lock_ik", "use_ik_limit", "ik_min", "ik_max", "ik_stiffness")
        for a in "xyz"
    ),
    "ik_stretch",
)


def chain_bones(
    obj: ArmatureObject, tip: str, chain_length: int, use_tail: bool
) -> tuple[str, ...]:
    """The chain's joint bone names, root→tip.

    Raises:
        RigError: unknown tip bone, chain length < 1 or longer than the bone hierarchy.
    """
    bones = obj.data.bones
    bone = bones.get(tip)
    if bone is None:
        raise RigError(f"armature '{obj.name}' has no bone '{tip}'")
    if chain_length < 1:
        raise RigError(f"chain length must be at least 1, got {chain_length}")
    if not use_tail:
        if bone.parent is None:
            raise RigError(
                f"'{tip}' has no parent: without 'Use Tail' the chain starts at the tip's "
                "parent; turn 'Use Tail' on"
            )
        bone = bone.parent
    names: list[str] = []
    while bone is not None and len(names) < chain_length:
        names.append(bone.name)
        bone = bone.parent
    if len(names) < chain_length:
        raise RigError(
            f"chain length {chain_length} is longer than the bone hierarchy above '{tip}' "
            f"({len(names)} bone{'s' * (len(names) != 1)}); use at most {len(names)}"
        )
    return tuple(reversed(names))


def default_chain_length(obj: ArmatureObject, tip: str) -> int:
    """Bones from ``tip`` up to (and including) the first bone not connected to its parent."""
    bone = obj.data.bones[tip]
    count = 1
    while bone.use_connect and bone.parent is not None:
        count += 1
        bone = bone.parent
    return count


def rig_signature(obj: ArmatureObject, names: Sequence[str]) -> tuple[Any, ...]:
    """Everything a :class:`RigChain` depends on: rest matrices, lengths, parents, limits,
    stretch weights.

    Checked on every solve, so it is cheap: frozen (hashable, C-compared) rest matrices.
    """
    bones = obj.data.bones
    pose_bones = obj.pose.bones
    root = bones[names[0]]
    parent = root.parent
    key: list[Any] = [parent.matrix_local.copy().freeze() if parent is not None else None]
    for name in names:
        b = bones[name]
        key.append((b.matrix_local.copy().freeze(), b.length, b.use_inherit_rotation))
        key.append(_limit_key(pose_bones[name]))
    return tuple(key)


def build_rig_chain(obj: ArmatureObject, tip: str, chain_length: int, use_tail: bool) -> RigChain:
    """Build the core chain for ``chain_length`` bones ending at ``tip`` (see module doc).

    Raises:
        RigError: bad tip, length, a chain bone that does not inherit rotation, or a link
            of zero length (a bone whose head coincides with the previous bone's head).
    """
    names = chain_bones(obj, tip, chain_length, use_tail)
    bones = obj.data.bones
    pose_bones = obj.pose.bones
    rest = [matrix(bones[n].matrix_local) for n in names]
    root = bones[names[0]]
    for name in names[1:]:
        if not bones[name].use_inherit_rotation:
            raise RigError(
                f"bone '{name}' does not inherit rotation ('Inherit Rotation' is off); "
                "every chain bone after the root must inherit its parent's rotation"
            )
    inherit = root.parent is not None and root.use_inherit_rotation
    parent_rest = matrix(root.parent.matrix_local) if root.parent is not None else np.eye(4)
    root_rest = affine.invert(parent_rest) @ rest[0] if inherit else rest[0].copy()
    if not inherit and root.parent is not None:
        # Base axes are armature space; keep the root's rest head relative to the parent so
        # the base origin can still follow the parent (see evaluate).
        root_rest[:3, 3] = (affine.invert(parent_rest) @ rest[0])[:3, 3]
    n = len(names)
    rest_rot = np.empty((n, 4))
    offsets = np.zeros((n, 3))
    rest_rot[0] = rot.from_matrix(root_rest[:3, :3])
    for i in range(n):
        if i + 1 < n:
            rel = affine.invert(rest[i]) @ rest[i + 1]
            rest_rot[i + 1] = rot.from_matrix(rel[:3, :3])
            offsets[i] = rel[:3, 3]
        else:
            offsets[i] = (0.0, bones[names[i]].length, 0.0)
    for i in range(n):
        if np.linalg.norm(offsets[i]) < 1e-6:
            nxt = f"the head of '{names[i + 1]}'" if i + 1 < n else "its tail"
            raise RigError(
                f"bone '{names[i]}' has zero length to {nxt}: every link of a chain needs a "
                "length; move the bone heads apart or shorten the chain"
            )
    try:
        chain = Chain(
            offsets,
            rest_rot,
            [bone_limits(pose_bones[name]) for name in names],
            names,
            [min(max(float(pose_bones[name].ik_stretch), 0.0), 1.0) for name in names],
        )
    except ChainError as exc:
        raise RigError(f"chain ending at '{tip}': {exc}") from exc
    return RigChain(
        tip=tip,
        bone_names=names,
        parent=root.parent.name if root.parent is not None else None,
        chain=chain,
        root_rest=root_rest,
        root_rows=tuple(tuple(row) for row in root_rest[:3].tolist()),
        inherit_rotation=inherit,
        root_connected=root.parent is not None and root.use_connect,
        root_depth=len(root.parent_recursive),
        above=frozenset(b.name for b in root.parent_recursive),
        signature=rig_signature(obj, names),
    )


def base_rows(
    rig: RigChain, world: Rows, parent: Rows | None, root_location: Vec
) -> list[list[Value]]:
    """The chain's base frame in world space, at one frame or many (:mod:`.affine`).

    Args:
        rig: the chain.
        world: the armature's world matrix.
        parent: the root parent's posed matrix (armature space), or ``None`` (no parent).
        root_location: the root's own location channels (``matrix_basis`` translation, in
            the root's rest frame, metres); ignored for a connected root, as Blender does.

    Returns:
        Maps base-frame points (chain units) to world space: origin at the root's posed
        head, axes and scale of the parent's posed frame (see the module docstring), both
        mapped by ``world``.
    """
    rest = rig.root_rows
    if rig.root_connected:
        head: Vec = [rest[0][3], rest[1][3], rest[2][3]]
    else:
        head = affine.transform(rest, root_location)
    if parent is not None:
        head = affine.transform(parent, head)
    origin = affine.transform(world, head)
    if parent is not None and rig.inherit_rotation:
        axes = affine.compose(world, parent)
        return [[axes[r][0], axes[r][1], axes[r][2], origin[r]] for r in range(3)]
    return [[world[r][0], world[r][1], world[r][2], origin[r]] for r in range(3)]


def _rest_bend(
    obj: ArmatureObject, names: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rest-pose axis (root→effector, unit), bend vector and root rest matrix (armature space).

    The bend is the mean offset of the inner joints from the root→effector line, as in
    :mod:`core.bend_plane`; a straight chain bends toward the root bone's −Z axis. A chain
    folded so that its rest effector lies on its root has no such line: the root bone's
    own axis (Y) stands for it, so the result stays finite.
    """
    bones = obj.data.bones
    root = matrix(bones[names[0]].matrix_local)
    head = root[:3, 3]
    effector = np.array(bones[names[-1]].tail_local, dtype=np.float64)
    axis = effector - head
    reach = sum(float(bones[n].length) for n in names)
    if np.linalg.norm(axis) <= 1e-9 * max(reach, 1e-12):
        axis = root[:3, 1].copy()
    axis /= np.linalg.norm(axis)
    inner = np.array([bones[n].head_local for n in names[1:]], dtype=np.float64).reshape(-1, 3)
    bend = np.zeros(3)
    if len(inner):
        d = inner.mean(axis=0) - head
        bend = d - axis * float(d @ axis)
    if np.linalg.norm(bend) <= 1e-9 * float(np.linalg.norm(effector - head)):
        side = -root[:3, 2]
        bend = side - axis * float(side @ axis)
    return axis, bend, root


def _signed_angle(a: np.ndarray, b: np.ndarray, axis: np.ndarray) -> float:
    return float(np.arctan2(np.cross(a, b) @ axis, a @ b))


def pole_angle_from_blender(
    obj: ArmatureObject, names: Sequence[str], blender_angle: float
) -> float:
    """Reach IK's pole angle giving the same bend as Blender's IK constraint.

    Blender turns the solved chain so that the root bone's axis ``X·cos θ + Z·sin θ``
    (``θ`` = the constraint's pole angle), projected across the root→target line, points at
    the pole. Reach IK turns it so that the bend (inner joints' mean offset from that line)
    points at the pole turned by its pole angle (right-handed about root→effector). Turning
    the chain about that line is rigid, so the angle from Blender's axis to the bend is the
    rest pose's: that is the Reach IK pole angle. Exact for two-bone chains (checked against
    Blender's own IK in the tests), close for longer ones.

    Args:
        obj: the armature object.
        names: the chain's joint bones, root→tip.
        blender_angle: the IK constraint's ``pole_angle`` (radians).
    """
    axis, bend, root = _rest_bend(obj, names)
    up = root[:3, 0] * np.cos(blender_angle) + root[:3, 2] * np.sin(blender_angle)
    up = up - axis * float(up @ axis)
    return _signed_angle(up, bend, axis)


def pole_angle_to_blender(obj: ArmatureObject, names: Sequence[str], reach_angle: float) -> float:
    """The IK constraint's pole angle for a Reach IK pole angle (inverse of the above)."""
    axis, bend, root = _rest_bend(obj, names)
    want = rot.rotate(rot.from_axis_angle(axis, -reach_angle), bend)
    x = root[:3, 0] - axis * float(root[:3, 0] @ axis)
    z = root[:3, 2] - axis * float(root[:3, 2] @ axis)
    # Solve x·cos θ + z·sin θ ∥ want (same side): cross product with want along axis = 0.
    theta = float(np.arctan2(-(np.cross(x, want) @ axis), np.cross(z, want) @ axis))
    if (x * np.cos(theta) + z * np.sin(theta)) @ want < 0.0:
        theta += np.pi
    return float((theta + np.pi) % (2.0 * np.pi) - np.pi)
