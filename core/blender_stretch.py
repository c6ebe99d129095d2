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
from .components import Vec, mapply
from .matrix9 import _I9, M9, _axis_turn, _m9, _mm
from .rotations import FloatArray

#: Blender's largest turn per step (radians) and its share of a damped step.
_MAX_TURN = math.pi / 4.0
_STEP_SHARE = 0.8
#: The shortest a stretching link may become (chain lengths of 1).
_MIN_LENGTH = 0.001


def _turn(vector: list[float]) -> M9:
    """The rotation by the rotation vector ``vector`` (3 floats; Rodrigues)."""
    x, y, z = vector
    angle = math.sqrt(x * x + y * y + z * z)
    if angle < 1e-10:
        return _I9
    return _axis_turn((x / angle, y / angle, z / angle), angle)


def _about(angle: float, axis: int) -> M9:
    """The rotation by ``angle`` about coordinate ``axis`` (Rodrigues)."""
    if abs(angle) < 1e-10:
        return _I9
    unit = [0.0, 0.0, 0.0]
    unit[axis] = math.copysign(1.0, angle)
    return _axis_turn((unit[0], unit[1], unit[2]), abs(angle))


def link_scales(chain: Chain, target: FloatArray, start: FloatArray, iterations: int) -> FloatArray:
    """``(n,)`` each link's length over its rest length after Blender's iteration (module
    docstring) from the start pose ``start (n, 4)`` (wxyz) toward ``target (3,)`` (base
    frame), at most ``iterations`` steps; 1 for links that do not stretch. In plain floats
    (3×3 matrices as 9-tuples, :mod:`core.matrix9`) but for the SVD of each step."""
    n = chain.n_joints
    reach = chain.reach
    lengths = (chain.lengths / reach).tolist()
    directions = [tuple(d) for d in (chain.offsets / chain.lengths[:, None]).tolist()]
    rests = [_m9(m) for m in rot.to_matrix(chain.rest_rotations)]
    bases = [_m9(m) for m in rot.to_matrix(np.asarray(start, dtype=np.float64))]
    gx, gy, gz = (np.asarray(target, dtype=np.float64) / reach).tolist()
    free = [[a for a in range(3) if not lim.lock[a]] for lim in chain.limits]
    hinge = [len(f) == 1 for f in free]
    angles = [0.0] * n
    for i in range(n):
        if hinge[i]:  # the start pose's turn about the hinge axis
            a = free[i][0]
            b, c = (a + 1) % 3, (a + 2) % 3
            angles[i] = math.atan2(bases[i][3 * c + b], bases[i][3 * b + b])
            bases[i] = _about(angles[i], a)
    stretchable = [w > 0.0 for w in chain.stretch]
    weights: list[float] = []
    scales: list[float] = []  # of each freedom's update in the convergence test
    for i, lim in enumerate(chain.limits):
        for a in free[i]:
            weights.append(1.0 - min(float(lim.stiffness[a]), 0.99))
            scales.append(1.0)
        if stretchable[i]:
            weights.append(1.0 - min(1.0 - chain.stretch[i] ** 2, 0.99))
            scales.append(100.0)
    roots = [math.sqrt(w) for w in weights]
    stretch_ids: list[tuple[int, int]] = []  # (link, its stretch freedom's index)
    k = 0
    for i in range(n):
        k += len(free[i])
        if stretchable[i]:
            stretch_ids.append((i, k))
            k += 1
    segments = sum(int(bool(f)) + int(s) or 1 for f, s in zip(free, stretchable, strict=True))
    clamp = 1.0 / (2.0 * segments)
    translation = list(lengths)
    for step in range(iterations):
        frames: list[M9] = []
        heads: list[Vec] = []
        world, (px, py, pz) = _I9, (0.0, 0.0, 0.0)
        for i in range(n):
            world = _mm(_mm(world, rests[i]), bases[i])
            frames.append(world)
            heads.append((px, py, pz))
            dx, dy, dz = mapply(world, directions[i])
            t = translation[i]
            px, py, pz = px + dx * t, py + dy * t, pz + dz * t
        ex, ey, ez = gx - px, gy - py, gz - pz
        distance = math.sqrt(ex * ex + ey * ey + ez * ez)
        if distance > clamp:
            ex, ey, ez = ex * (clamp / distance), ey * (clamp / distance), ez * (clamp / distance)
        columns: list[Vec] = []  # the weighted Jacobian's, freedom by freedom
        for i in range(n):
            lx, ly, lz = heads[i][0] - px, heads[i][1] - py, heads[i][2] - pz
            f = frames[i]
            for a in free[i]:  # (head − effector) × the frame's axis a
                ax, ay, az = f[a], f[3 + a], f[6 + a]
                columns.append((ly * az - lz * ay, lz * ax - lx * az, lx * ay - ly * ax))
            if stretchable[i]:
                columns.append(mapply(f, directions[i]))
        columns = [(c[0] * r, c[1] * r, c[2] * r) for c, r in zip(columns, roots, strict=True)]
        delta, norm = _locked_step(columns, (ex, ey, ez), weights, roots, translation, stretch_ids)
        k = 0
        for i in range(n):
            if hinge[i]:
                angles[i] += delta[k]
                bases[i] = _about(angles[i], free[i][0])
            elif free[i]:
                turn = [0.0, 0.0, 0.0]
                for j, a in enumerate(free[i]):
                    turn[a] = delta[k + j]
                bases[i] = _mm(bases[i], _turn(turn))
            k += len(free[i])
            if stretchable[i]:
                translation[i] += delta[k]
                k += 1
        moved = max(abs(d) * s for d, s in zip(delta, scales, strict=True))
        if step > 10 and max(norm, moved) < 1e-3:
            break
    return np.array(translation) / np.array(lengths)


def _locked_step(
    columns: list[Vec],
    error: Vec,
    w: list[float],
    w_sqrt: list[float],
    translation: list[float],
    stretch_ids: list[tuple[int, int]],
) -> tuple[list[float], float]:
    """One update with the shortest-length limit: while a link would become shorter than
    :data:`_MIN_LENGTH`, the violating stretch freedom that moves least to its limit is
    held there (its column taken out, its move taken off the goal step) and the step is
    solved again. Returns the update (held freedoms at their limit moves) and the largest
    held move (the solver's convergence norm counts it)."""
    columns = list(columns)
    ex, ey, ez = error
    held: dict[int, float] = {}
    norm = 0.0
    while True:
        delta = _damped_step(columns, (ex, ey, ez), w, w_sqrt)
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
        cx, cy, cz = columns[k]
        ex, ey, ez = ex - cx * move, ey - cy * move, ez - cz * move
        columns[k] = (0.0, 0.0, 0.0)
        held[k] = move
        norm = max(norm, abs(move))
    for k, move in held.items():
        delta[k] = move
    return delta, norm


def _damped_step(
    columns: list[Vec], error: Vec, w: list[float], w_sqrt: list[float]
) -> list[float]:
    """One selectively damped least-squares update of the freedoms (module docstring), for
    the weighted Jacobian given by its ``columns``."""
    u, singular, vt = np.linalg.svd(np.array(columns).T, full_matrices=False)
    ex, ey, ez = error
    norms = [math.sqrt(cx * cx + cy * cy + cz * cz) for cx, cy, cz in columns]
    delta = [0.0] * len(columns)
    for (u0, u1, u2), sigma, row in zip(u.T.tolist(), singular.tolist(), vt.tolist(), strict=True):
        if not sigma > 1e-10:
            continue
        along = (u0 * ex + u1 * ey + u2 * ez) / sigma
        steps = [v * along for v in row]  # this singular value's step
        n_norm = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
        m_norm = sum(abs(v) * c for v, c in zip(row, norms, strict=True)) / sigma
        gamma = _MAX_TURN * (n_norm / m_norm if n_norm < m_norm else 1.0)
        largest = max(abs(d) * r for d, r in zip(steps, w_sqrt, strict=True))
        damp = gamma / largest if gamma < largest and largest > 0.0 else 1.0
        for j, (d, wj) in enumerate(zip(steps, w, strict=True)):
            delta[j] += min(damp / wj, 1.0) * d
    delta = [_STEP_SHARE * d * wj for d, wj in zip(delta, w, strict=True)]
    largest = max(abs(d) for d in delta)
    if largest > _MAX_TURN:
        delta = [d * (_MAX_TURN / (_MAX_TURN + largest)) for d in delta]
    return delta


__all__ = ["link_scales"]
