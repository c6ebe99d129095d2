# SPDX-License-Identifier: GPL-3.0-or-later
"""Posed bone matrices of one evaluated armature during a live solving pass.

:class:`_PoseState` gives the posed matrix of any bone as Blender evaluated it, or, for
bones below a chain solved earlier in the same pass, recomputed from that chain's new
rotations; :func:`_point_world` and :func:`_rotation_world` read a target's or pole's
world position and rotation through it (:func:`.evaluate.solve_chains`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import bpy
from mathutils import Matrix, Quaternion

from ..core import ReachIKError
from . import affine, own_constraints
from .affine import Rows, Vec
from .blender_types import ArmatureObject, is_armature
from .rig import RigChain


class _PoseState:
    """Posed bone matrices (armature space, mathutils) of one evaluated armature, with
    chains solved in this pass.

    Bones below a chain solved earlier in the pass are recomputed from its new rotations
    (``M = M_parent · rest_rel · basis``), but for one placed by constraints of its own
    (:func:`.own_constraints.reshapes`), whose matrix only Blender's evaluation gives; all
    others are Blender's evaluated matrices.
    """

    def __init__(self, obj_eval: ArmatureObject) -> None:
        self._obj = obj_eval
        self.pose_bones = obj_eval.pose.bones
        self.solved: dict[str, Sequence[float]] = {}  # bone → solved rotation of this pass
        self.scales: dict[str, float] = {}  # bone → its scale factor from stretch
        self._cache: dict[str, Matrix] = {}
        self._moved: dict[str, bool] = {}
        self._constrained: dict[str, bool] = {}  # bone → placed by other constraints

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

    @cached_property
    def bones(self) -> bpy.types.ArmatureBones:
        """The armature's bones (read when first needed: a pass without chains above
        another chain's target never does)."""
        return self._obj.data.bones

    def _basis(self, name: str) -> Matrix:
        basis = self.pose_bones[name].matrix_basis
        q = self.solved.get(name)
        if q is None:
            return basis
        scale = basis.to_scale() * self.scales.get(name, 1.0)
        return Matrix.LocRotScale(basis.translation[:], Quaternion(q), scale[:])

    def _reshaped(self, name: str) -> bool:
        hit = self._constrained.get(name)
        if hit is None:
            hit = self._constrained[name] = own_constraints.reshapes(self.pose_bones[name])
        return hit

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
        elif name not in self.solved and self._reshaped(name):
            # Placed by constraints: Blender's evaluated matrix, right once the chains above
            # are evaluated (a chain that reads it waits for that: .dependencies).
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
    obj_id: bpy.types.Object | None,
    bone: str,
    what: str,
    own: ArmatureObject,
    state: _PoseState,
    world: Rows,
) -> Vec:
    """World position of an object, or of a bone's head when ``bone`` is given (float64
    maths on Blender's values, :mod:`.affine`; ``world`` the armature's world matrix)."""
    if obj_id is None:
        raise ReachIKError(f"no {what}: pick an object (or an armature and a bone)")
    if not bone or not is_armature(obj_id):
        return obj_id.matrix_world.translation[:]
    if obj_id.original == own.original:
        if bone not in state.pose_bones:
            raise ReachIKError(f"{what} bone '{bone}' does not exist in '{obj_id.name}'")
        return affine.transform(world, state.matrix(bone).translation[:])
    pb = obj_id.pose.bones.get(bone)
    if pb is None:
        raise ReachIKError(f"{what} bone '{bone}' does not exist in '{obj_id.name}'")
    return affine.transform(affine.rows_of(obj_id.matrix_world), pb.matrix.translation[:])


def _rotation_world(
    target: bpy.types.Object, target_bone: str, own: ArmatureObject, state: _PoseState, world: Rows
) -> Rows:
    """World matrix of the target (object, or bone; columns scaled), of which the
    orientation goal reads the rotation (:data:`.affine.Rows`, floats)."""
    if target_bone and is_armature(target):
        if target.original == own.original:
            return affine.compose(world, affine.rows_of(state.matrix(target_bone)))
        bone = affine.rows_of(target.pose.bones[target_bone].matrix)
        return affine.compose(affine.rows_of(target.matrix_world), bone)
    return affine.rows_of(target.matrix_world)
