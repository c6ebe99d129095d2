# SPDX-License-Identifier: GPL-3.0-or-later
"""The links' lengths Blender's Standard IK gives a stretching chain (``stretch_rule``
``"blender"``, see :mod:`core.stretch`).

Blender's IK (``intern/iksolver``, the *Standard* solver) treats a stretchable bone as a
rotation joint followed by a translation along the bone, weighted ``w²`` (``w`` its *IK
Stretch*), and iterates selectively damped least-squares steps from the frame's pose until
the largest update is small. It uses the stretch freedom wherever it helps, within reach
too: a chain reaching for a target inside its length comes out **shorter** (1–17 mm per
bone on Rigify's limbs with *IK Stretch* 0.1), and one whose target lies just inside full
extension already stretches. Those lengths depend on the iteration's path, so no closed form
gives them; this module runs the same iteration, written from the algorithm's description:

* the chain scaled to unit length; joints with every axis free turn by a rotation vector
  about their own axes, joints with one free axis (two locked) about that axis alone;
  each rotation freedom weighted ``1 − stiffness`` (stiffness at most 0.99), each stretch
  freedom ``1 − min(1 − w², 0.99)``; a link kept at least 0.001 long: a step that would
  make one shorter is solved again with that freedom held at the limit (the one that
  moves least first);
* the goal step clamped to the chain's length over twice the number of its segments;
* per singular value of the weighted Jacobian (its columns times the square roots of the
  weights), a step damped so no joint turns more than ``π/4 · N/M`` (Buss and Kim's
  selectively damped least squares; a freedom's own damping divided by its weight, at most
  1), ``0.8`` of it taken, times the weights, the whole step scaled by
  ``π/4 / (π/4 + largest)`` if a freedom would turn more than ``π/4``;
* stop after more than 10 iterations once the largest update (stretch updates counted 100
  times) is below ``1e-3``, or at the iteration cap.

Only the lengths are taken from it (:func:`link_scales`); the chosen method then solves the
chain with those lengths, with its own bend plane, pole and limits. Not reproduced: joint
range limits and two-axis joints in the iteration (their freedoms iterate as free), and
Blender's pole pre-rotation (with a pole the path, hence the lengths, can differ).
Measured against Blender 5.0 (bpy) on 2-bone chains within and beyond reach, *IK Stretch*
0.1 and 1: the same lengths to 0.01 mm (``tests/blender/test_ik_stretch.py``).
"""

from __future__ import annotations

import math

import numpy as np

from . import rotations as rot
from .chain import Chain
from .rotations import FloatArray

#: Blender's largest turn per step (radians) and its share of a damped step.
_MAX_TURN = math.pi / 4.0
_STEP_SHARE = 0.8
#: The shortest a stretching link may become (chain lengths of 1).
_MIN_LENGTH = 0.001


def _rotation(vector: FloatArray) -> FloatArray:
    """The 3×3 rotation by the rotation vector ``vector`` (Rodrigues)."""
    angle = float(np.linalg.norm(vector))
    if angle < 1e-10:
        return np.eye(3)
    x, y, z = vector / angle
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _axis_rotation(angle: float, axis: int) -> FloatArray:
    v = np.zeros(3)
    v[axis] = angle
    return _rotation(v)


def link_scales(chain: Chain, target: FloatArray, start: FloatArray, iterations: int) -> FloatArray:
    """``(n,)`` each link's length over its rest length after Blender's iteration (module
    docstring) from the start pose ``start (n, 4)`` (wxyz) toward ``target (3,)`` (base
    frame), at most ``iterations`` steps; 1 for links that do not stretch."""
    n = chain.n_joints
    reach = chain.reach
    lengths = chain.lengths / reach
    directions = chain.offsets / chain.lengths[:, None]
    rests = rot.to_matrix(chain.rest_rotations)
    bases = rot.to_matrix(np.asarray(start, dtype=np.float64))
    goal = np.asarray(target, dtype=np.float64) / reach
    free = [[a for a in range(3) if not lim.lock[a]] for lim in chain.limits]
    hinge = [len(f) == 1 for f in free]
    angles = [0.0] * n
    for i in range(n):
        if hinge[i]:  # the start pose's turn about the hinge axis
            a = free[i][0]
            b, c = (a + 1) % 3, (a + 2) % 3
            angles[i] = math.atan2(bases[i][c, b], bases[i][b, b])
            bases[i] = _axis_rotation(angles[i], a)
    stretchable = [w > 0.0 for w in chain.stretch]
    weights: list[float] = []
    norm_weights: list[float] = []
    for i, lim in enumerate(chain.limits):
        for a in free[i]:
            weights.append(1.0 - min(float(lim.stiffness[a]), 0.99))
            norm_weights.append(1.0)
        if stretchable[i]:
            weights.append(1.0 - min(1.0 - chain.stretch[i] ** 2, 0.99))
            norm_weights.append(100.0)
    w = np.array(weights)
    update_scale = np.array(norm_weights)
    stretch_ids: list[tuple[int, int]] = []  # (link, its stretch freedom's index)
    k = 0
    for i in range(n):
        k += len(free[i])
        if stretchable[i]:
            stretch_ids.append((i, k))
            k += 1
    w_sqrt = np.sqrt(w)
    segments = sum(int(bool(f)) + int(s) or 1 for f, s in zip(free, stretchable, strict=True))
    clamp = 1.0 / (2.0 * segments)
    translation = lengths.copy()
    for step in range(iterations):
        frames: list[FloatArray] = []
        heads: list[FloatArray] = []
        world, point = np.eye(3), np.zeros(3)
        for i in range(n):
            world = world @ rests[i] @ bases[i]
            frames.append(world)
            heads.append(point)
            point = point + world @ (directions[i] * translation[i])
        effector = point
        error = goal - effector
        distance = float(np.linalg.norm(error))
        if distance > clamp:
            error = error * (clamp / distance)
        jacobian = np.empty((3, w.size))
        k = 0
        for i in range(n):
            x, y, z = heads[i] - effector
            lever = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])  # lever × axis
            turns = (lever @ frames[i])[:, free[i]]
            jacobian[:, k : k + turns.shape[1]] = turns
            k += turns.shape[1]
            if stretchable[i]:
                jacobian[:, k] = frames[i] @ directions[i]
                k += 1
        jacobian *= w_sqrt
        delta, norm = _locked_step(jacobian, error, w, w_sqrt, translation, stretch_ids)
        k = 0
        for i in range(n):
            if hinge[i]:
                angles[i] += delta[k]
                bases[i] = _axis_rotation(angles[i], free[i][0])
            elif free[i]:
                turn = np.zeros(3)
                turn[free[i]] = delta[k : k + len(free[i])]
                bases[i] = bases[i] @ _rotation(turn)
            k += len(free[i])
            if stretchable[i]:
                translation[i] += delta[k]
                k += 1
        if step > 10 and max(norm, float(np.max(np.abs(delta) * update_scale))) < 1e-3:
            break
    return translation / lengths


def _locked_step(
    jacobian: FloatArray,
    error: FloatArray,
    w: FloatArray,
    w_sqrt: FloatArray,
    translation: FloatArray,
    stretch_ids: list[tuple[int, int]],
) -> tuple[FloatArray, float]:
    """One update with the shortest-length limit: while a link would become shorter than
    :data:`_MIN_LENGTH`, the violating stretch freedom that moves least to its limit is
    held there (its column taken out, its move taken off the goal step) and the step is
    solved again. Returns the update (held freedoms at their limit moves) and the largest
    held move (the solver's convergence norm counts it)."""
    jacobian = jacobian.copy()
    error = error.copy()
    held: dict[int, float] = {}
    norm = 0.0
    while True:
        delta = _damped_step(jacobian, error, w, w_sqrt)
        worst: tuple[float, int] | None = None
        for link, k in stretch_ids:
            if k in held or translation[link] + delta[k] >= _MIN_LENGTH:
                continue
            move = _MIN_LENGTH - translation[link]
            if worst is None or abs(move) < worst[0]:
                worst = (abs(move), k)
        if worst is None:
            break
        k = worst[1]
        link = next(i for i, j in stretch_ids if j == k)
        move = _MIN_LENGTH - translation[link]
        error -= jacobian[:, k] * move
        jacobian[:, k] = 0.0
        held[k] = move
        norm = max(norm, abs(move))
    for k, move in held.items():
        delta[k] = move
    return delta, norm


def _damped_step(
    jacobian: FloatArray, error: FloatArray, w: FloatArray, w_sqrt: FloatArray
) -> FloatArray:
    """One selectively damped least-squares update of the freedoms (module docstring)."""
    u, singular, vt = np.linalg.svd(jacobian, full_matrices=False)
    keep = singular > 1e-10
    u, singular, vt = u[:, keep], singular[keep], vt[keep]
    column_norms = np.sqrt(np.einsum("ij,ij->j", jacobian, jacobian))
    steps = vt * ((u.T @ error) / singular)[:, None]  # one row per singular value
    n_norm = np.sqrt(np.einsum("ij,ij->j", u, u))
    m_norm = (np.abs(vt) @ column_norms) / singular
    gamma = _MAX_TURN * np.where(n_norm < m_norm, n_norm / m_norm, 1.0)
    largest = np.max(np.abs(steps) * w_sqrt, axis=1)
    damp = np.where(gamma < largest, gamma / np.where(largest > 0.0, largest, 1.0), 1.0)
    delta = _STEP_SHARE * np.sum(np.minimum(damp[:, None] / w, 1.0) * steps, axis=0)
    delta *= w
    largest = float(np.max(np.abs(delta)))
    if largest > _MAX_TURN:
        delta *= _MAX_TURN / (_MAX_TURN + largest)
    return delta


__all__ = ["link_scales"]
