# SPDX-License-Identifier: GPL-3.0-or-later
""":func:`core.bend_plane.orient_bend` for one target, in plain floats.

The one-target solvers (:mod:`core.ccd_single`, :mod:`core.jacobian_single`) orient the
bend of their answer as the batched reference does — the same pole or ``"rest"`` bend
plane, the same turn about the root→effector line, the same refusal where the root's
limits do not allow it (:mod:`core.bend_plane`, module docstring) — without numpy's
per-call cost. The turn is triangulation's float bend turn
(:func:`core.triangulation_single._bend_turn`), whose ``"rest"`` start frame of the rest
pose is computed once per chain (:attr:`core.triangulation_plan._Plan.rest_start`).
Tests pin it to :func:`core.bend_plane.orient_bend` on random chains, limits, poles and
start poses (``tests/core/test_bend_plane_single.py``).
"""

from __future__ import annotations

from . import triangulation_plan, triangulation_single
from .components import Quat, Vec, qrotate
from .problem import Problem


def orient_one(
    problem: Problem, target: Vec, rots: list[Quat], positions: list[Vec]
) -> Quat | None:
    """Turn one solved pose's bend by the pole or the default rule.

    Args:
        problem: the problem of one target that was solved (its pole, start pose, options,
            orientation goal).
        target: the target (3 floats, base frame) the ``"rest"`` bend plane is carried to.
        rots: the ``n`` solved local rotations (4-tuples wxyz); ``rots[0]`` is replaced by
            the turned root rotation when the pose turns.
        positions: their ``n + 1`` joint positions (base frame), not changed.

    Returns:
        The turn (a unit quaternion in the base frame, about the root→effector line) that
        was applied to the root, or ``None`` when the pose stays: an orientation goal with
        weight, ``"minimal"`` without a pole, a straight chain, a pole on the line, or a
        turn the root's limits refuse (as :func:`core.bend_plane.apply_pole`).
    """
    opts = problem.options
    if problem.target_rotations is not None and opts.position_weight < 1.0:
        return None
    chain = problem.chain
    plan = triangulation_plan._plan(chain)
    pole: Vec | None = None
    if problem.poles is not None:
        px, py, pz = problem.poles[0].tolist()
        pole = (px, py, pz)
    init = problem.initial[0].tolist()
    rest_pose = all(q == [1.0, 0.0, 0.0, 0.0] for q in init)
    turn = triangulation_single._bend_turn(
        chain, plan, opts, target, pole, positions, init, rest_pose
    )
    if turn is None:
        return None
    q0 = triangulation_single.turned_root(chain, plan, turn, rots[0])
    if q0 is None:
        return None
    rots[0] = q0
    return turn


def turned_points(turn: Quat, positions: list[Vec]) -> list[Vec]:
    """``positions`` turned by ``turn`` (every point, as :func:`core.bend_plane.apply_pole`:
    the root and the effector lie on the turn's axis and stay to rounding)."""
    return [qrotate(turn, p) for p in positions]


__all__ = ["orient_one", "turned_points"]
