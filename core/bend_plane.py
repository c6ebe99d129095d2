# SPDX-License-Identifier: GPL-3.0-or-later
"""Which way a chain bends: pole targets and the stable default bend plane.

Turning a whole chain about the line from its root to its effector moves every joint but
the root and the effector, so it changes *where the chain bends* without changing *what it
reaches*. Every method solves first and then orients the bend this way
(:func:`orient_bend`):

* **With a pole** (a point, like Blender's pole target): the chain's bend — the mean offset
  of its inner joints from the root→effector line — is turned to face the pole, then by
  ``pole_angle`` further about the line (right-handed about root→effector).
* **Without a pole**, ``options.bend_plane`` decides:

  - ``"rest"`` (default): the bend faces the start pose's bend side, carried along by the
    shortest rotation from the start pose's root→effector direction to the target's
    direction. It is continuous in the target, so the bend never flips while a target moves
    smoothly; the one exception is a target exactly opposite the start direction. A straight
    start pose bends toward the root joint's local −Z axis (a Blender bone bends about its
    local X axis, its tip swinging toward ±Z).
  - ``"minimal"``: keep what the method produced (for triangulation, the paper's
    shortest-rotation bend, which flips when the target crosses the chain's axis).

Orientation goals are left alone: turning the chain would turn the effector too, so the
bend is only oriented when the effector's orientation is not part of the goal
(``target_rotation`` is ``None`` or ``position_weight == 1``). A turn the root's limits do
not allow is skipped.
"""

from __future__ import annotations

import numpy as np

from . import rotations as rot
from .chain import Chain
from .kinematics import forward_kinematics
from .problem import Problem
from .rotations import FloatArray

#: Bends (and pole offsets) smaller than this fraction of the chain's reach are ignored.
_TINY = 1e-9

_LOCAL_BEND_SIDE = np.array([0.0, 0.0, -1.0])


def _perpendicular_part(v: FloatArray, axis: FloatArray) -> FloatArray:
    """Component of ``v (N, 3)`` perpendicular to unit ``axis (N, 3)``."""
    return v - np.sum(v * axis, axis=-1, keepdims=True) * axis


def _unit_axis(points: FloatArray, reach: float) -> FloatArray:
    """Unit root→point directions ``(N, 3)`` of ``points (N, 3)`` (base frame); zero where a
    point lies within ``_TINY × reach`` of the root (the direction is undefined)."""
    length = np.linalg.norm(points, axis=-1, keepdims=True)
    return np.divide(points, length, out=np.zeros_like(points), where=length > _TINY * reach)


def _bend_and_axis(chain: Chain, positions: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Unit root→effector axes ``(N, 3)`` and bend vectors ``(N, 3)`` of posed chains.

    The bend vector is the mean offset of the inner joints from the root→effector line
    (zero for a straight chain or a single link).
    """
    eff = positions[:, -1, :]
    axis = _unit_axis(eff, chain.reach)
    inner = positions[:, 1:-1, :]
    if inner.shape[1] == 0:
        return axis, np.zeros_like(eff)
    bend = _perpendicular_part(inner.mean(axis=1), axis)
    return axis, bend


def start_bend_points(problem: Problem) -> FloatArray:
    """Implicit pole points ``(N, 3)`` of the ``"rest"`` bend plane (base frame, chain units).

    The start pose's bend side, carried by the shortest rotation from the start pose's
    root→effector direction to the root→target direction.
    """
    chain = problem.chain
    positions, orientations = forward_kinematics(chain, problem.initial)
    start_axis, bend = _bend_and_axis(chain, positions)
    side_fallback = rot.rotate(orientations[:, 0, :], _LOCAL_BEND_SIDE)
    straight = np.linalg.norm(bend, axis=-1) <= _TINY * chain.reach
    bend = np.where(straight[:, None], _perpendicular_part(side_fallback, start_axis), bend)
    carry = rot.between(start_axis, problem.targets, fallback_axis=bend)
    return rot.rotate(carry, bend)


def _wanted(poles: FloatArray, axis: FloatArray, pole_angle: float) -> FloatArray:
    """Directions ``(N, 3)`` the bends should face: the poles' offsets across the unit
    root→effector ``axis (N, 3)``, turned by ``pole_angle`` about it (not normalised)."""
    want = _perpendicular_part(np.asarray(poles, dtype=np.float64), axis)
    if pole_angle:
        want = rot.rotate(rot.from_axis_angle(axis, np.full(len(axis), pole_angle)), want)
    return want


def wanted_bends(problem: Problem) -> FloatArray | None:
    """The directions ``(N, 3)`` (base frame, not normalised; zero where undefined) that
    :func:`orient_bend` turns the chains' bends toward, across the root→target lines: the
    poles', else the ``"rest"`` rule's; ``None`` for ``"minimal"`` without poles."""
    opts = problem.options
    if problem.poles is not None:
        poles = problem.poles
    elif opts.bend_plane == "rest":
        poles = start_bend_points(problem)
    else:
        return None
    return _wanted(poles, _unit_axis(problem.targets, problem.chain.reach), opts.pole_angle)


def apply_pole(
    chain: Chain,
    rotations: FloatArray,
    positions: FloatArray,
    poles: FloatArray,
    pole_angle: float = 0.0,
) -> tuple[FloatArray, FloatArray]:
    """Turn solved chains about their root→effector lines so their bends face the poles.

    Args:
        chain: the chain.
        rotations: ``(N, n, 4)`` solved local rotations.
        positions: ``(N, n + 1, 3)`` their forward kinematics (base frame).
        poles: ``(N, 3)`` pole points (base frame).
        pole_angle: extra turn (radians) about root→effector, right-handed.

    Returns:
        ``(rotations, positions)`` with only joint 0's rotation changed; chains that are
        straight, whose effector is at the root, whose pole lies on the root→effector
        line, or whose root limits forbid the turn are returned unchanged.
    """
    axis, bend = _bend_and_axis(chain, positions)
    want = _wanted(poles, axis, pole_angle)
    usable = (
        (np.linalg.norm(bend, axis=-1) > _TINY * chain.reach)
        & (np.linalg.norm(want, axis=-1) > _TINY * chain.reach)
        & (np.linalg.norm(axis, axis=-1) > 0.0)
    )
    if not np.any(usable):
        return rotations, positions
    # Signed angle from the bend to the wanted direction, about the root→effector axis.
    phi = np.arctan2(np.sum(rot.cross(bend, want) * axis, axis=-1), np.sum(bend * want, axis=-1))
    phi = np.where(usable, phi, 0.0)
    turn = rot.from_axis_angle(axis, phi)
    # The root's world rotation becomes turn · rest_0 · q_0; the base frame is its parent.
    rest0 = chain.rest_rotations[0]
    q0 = rot.multiply(
        rot.multiply(rot.conjugate(rest0), turn), rot.multiply(rest0, rotations[:, 0, :])
    )
    limits0 = chain.limits[0]
    if not limits0.is_free:
        usable &= limits0.violation(q0) <= 1e-9
    out_rot = rotations.copy()
    out_rot[usable, 0, :] = q0[usable]
    out_pos = positions.copy()
    out_pos[usable] = rot.rotate(turn[usable, None, :], positions[usable])
    return out_rot, out_pos


def orient_bend(
    problem: Problem, rotations: FloatArray, positions: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Orient solved chains' bends by the pole or the default rule (module docstring).

    Args:
        problem: the problem that was solved.
        rotations: ``(N, n, 4)`` solved local rotations.
        positions: ``(N, n + 1, 3)`` their forward kinematics.

    Returns:
        ``(rotations, positions)``, oriented where the goal allows it.
    """
    opts = problem.options
    if problem.target_rotations is not None and opts.position_weight < 1.0:
        return rotations, positions
    if problem.poles is not None:
        poles = problem.poles
    elif opts.bend_plane == "rest":
        poles = start_bend_points(problem)
    else:
        return rotations, positions
    return apply_pole(problem.chain, rotations, positions, poles, opts.pole_angle)
