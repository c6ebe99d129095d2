# SPDX-License-Identifier: GPL-3.0-or-later
"""CCD for one target in plain Python floats: the fast path of :func:`core.ccd.solve_ccd`.

The same iteration as the batched reference in :mod:`core.ccd` — the same sweeps, single-joint
steps, acceptance test, stall rule, coarse sweep, renormalisation and bend-plane step — written
for a batch of one with floats and tuples, because for one small chain numpy's per-call cost
(some 30 calls per joint step) dominates the arithmetic. Tests pin it to the reference on
random chains, limits and orientation goals (``tests/core/test_ccd_single.py``).

Representation: a rotation matrix is a row-major 9-tuple (as :func:`core.components.qmatrix`),
a vector a 3-tuple. Steps that are rare or have no cheap scalar form stay numpy calls, on the
reference's own functions: the weighted Wahba step of a ball joint with an orientation goal
(one 3×3 SVD) and stiffness on ball joints (a rotation-vector round trip). Limits are
projected in floats (:meth:`core.limits.JointLimits.project_floats`).

This module holds the entry point :func:`solve_one_target` (start pose, iteration, result);
the float sweeps, joint steps and coarse sweep are :mod:`core.ccd_single_sweep`, the
9-tuple matrix algebra :mod:`core.matrix9`, the bend-plane step
:mod:`core.bend_plane_single` (shared with the Jacobian methods' one-target path).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import ccd_seed, ccd_setup, ccd_sweep
from .bend_plane_single import orient_one
from .ccd_single_sweep import _descend, _facts, _Goal, _score, coarse_sweep
from .chain import Chain
from .components import Quat, Vec, qmatrix
from .kinematics import forward_kinematics_floats
from .matrix9 import M9, _orthonormalize, quaternion_of
from .problem import Problem
from .result import Solution
from .triangulation_fallback import searches_for_them
from .triangulation_limits import ends_in_hinge


def _start(chain: Chain, pose: list[list[float]]) -> list[Quat]:
    """:func:`core.ccd._start_pose` of one pose (``n`` × 4 floats): normalised and
    projected onto the limits, as quaternions."""
    out: list[Quat] = []
    for lim, q in zip(chain.limits, pose, strict=True):
        w, x, y, z = q
        n = math.sqrt(w * w + x * x + y * y + z * z)
        if w < 0.0:
            n = -n
        quat = (w / n, x / n, y / n, z / n)
        out.append(quat if lim.is_free else lim.project_floats(quat))
    return out


@functools.lru_cache(maxsize=64)
def _rest_start(chain: Chain) -> tuple[tuple[Quat, ...], tuple[Vec, ...], tuple[Quat, ...]]:
    """:func:`_start` of the rest pose with its joint positions and world rotations
    (cached per chain: a live solver starts every frame there)."""
    rots = _start(chain, [[1.0, 0.0, 0.0, 0.0]] * chain.n_joints)
    positions, frames = forward_kinematics_floats(chain, rots)
    return tuple(rots), tuple(positions), tuple(frames)


def _start_score(
    s: ccd_setup._Setup, chain: Chain, goal: _Goal, pose: list[list[float]]
) -> tuple[float, bool, list[Vec], list[Quat]]:
    """The start pose ``pose`` (``n`` × 4 floats) as :func:`_start` makes it, with its
    objective, reached flag and joint positions."""
    if all(q == [1.0, 0.0, 0.0, 0.0] for q in pose):
        start, at, frames = _rest_start(chain)
        rots, positions = list(start), list(at)
    else:
        rots = _start(chain, pose)
        positions, frames = forward_kinematics_floats(chain, rots)  # type: ignore[assignment]
    frame = None if goal.frame is None else qmatrix(frames[-1])
    g, reached = _score(s, positions[-1], frame, goal)
    return g, reached, positions, rots


def _as_goal(problem: Problem, s: ccd_setup._Setup, target: Vec) -> _Goal:
    """:func:`core.ccd._goals` for one target."""
    reach = problem.chain.reach
    lower = max(0.0, math.sqrt(target[0] ** 2 + target[1] ** 2 + target[2] ** 2) - reach)
    frame = None
    if problem.target_rotations is not None:
        frame = qmatrix(tuple(float(c) for c in problem.target_rotations[0]))  # type: ignore[arg-type]
    beyond = lower > problem.tolerance and not (frame is not None and s.c_rot > 0.0)
    settled = s.c_pos * (lower + problem.tolerance) ** 2 if beyond else -1.0
    return _Goal(target, frame, s.c_pos * lower**2, settled)


def _iterate(
    s: ccd_setup._Setup, problem: Problem, goal: _Goal, Q: list[M9], g: float, steps: int
) -> tuple[list[M9], int]:
    """The CCD iterations and coarse sweeps (``steps`` coarse angles, ``0``: none) of
    :func:`core.ccd.solve_batch` for one target from the rotations ``Q`` (objective ``g``,
    goal not yet met).

    Returns the solved local rotations (renormalised) and the iterations used.
    """
    f = _facts(problem.chain)
    cap = problem.options.max_iterations
    iterations = 0
    sweepable = f.joints[::-1]
    next_joint = failures = 0
    while True:
        g, used, status = _descend(s, f, Q, goal, g, cap - iterations)
        iterations += used
        if status != ccd_sweep._STALLED or steps == 0 or not sweepable or g <= goal.settled:
            break
        # The coarse sweep (core.ccd_sweep._coarse_sweep), in floats.
        improved = converged = False
        while iterations < cap and failures < len(sweepable):
            Qr, g, used_r, improved, converged = coarse_sweep(
                s, f, Q, goal, g, cap - iterations, sweepable[next_joint], steps
            )
            Q[:] = Qr
            iterations += used_r
            next_joint = (next_joint + 1) % len(sweepable)
            failures = 0 if improved else failures + 1
            if improved:
                break
        if not improved or converged or iterations >= cap:
            break
    return [_orthonormalize(q) for q in Q], iterations


def _clip_far(t: Vec, reach: float) -> Vec:
    """:func:`core.ccd_setup._clip_far` for one target (already finite and pulled in to
    ``core.solve.FAR`` reaches, so its square cannot overflow)."""
    d = math.sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2])
    limit = ccd_setup._FAR * reach
    if not d > limit:
        return t
    return t[0] / d * limit, t[1] / d * limit, t[2] / d * limit


def solve_one_target(problem: Problem) -> Solution:
    """:func:`core.ccd.solve_ccd` for a problem of one target (see module docstring)."""
    chain = problem.chain
    x, y, z = problem.targets[0].tolist()
    t = _clip_far((x, y, z), chain.reach)
    s = ccd_setup._setup(problem)
    goal = _as_goal(problem, s, t)
    seeded = ccd_seed.seed_one(problem)
    if seeded is not None:
        rots_s, pos_s = seeded
        frame = None
        if goal.frame is not None:
            frame = qmatrix(forward_kinematics_floats(chain, rots_s)[1][-1])  # type: ignore[arg-type]
        g_s, reached_s = _score(s, pos_s[-1], frame, goal)
        if reached_s or g_s <= goal.settled:
            return _solution(problem, rots_s, pos_s, 0)  # type: ignore[arg-type]
    else:
        pos_s = None
    g, reached, positions, rots = _start_score(s, chain, goal, problem.initial[0].tolist())
    iterations = 0
    if not reached:
        # (after the seed, the coarse sweep only where triangulation does not stand in for
        # it, as core.ccd.solve_batch)
        steps = problem.options.sweep_steps
        if pos_s is not None and searches_for_them(chain):
            steps = 0
        Q, iterations = _iterate(s, problem, goal, [qmatrix(q) for q in rots], g, steps)
        rots = [quaternion_of(m) for m in Q]
        if problem.target_rotations is None or problem.options.position_weight >= 1.0:
            positions = forward_kinematics_floats(chain, rots)[0]
            if orient_one(problem, t, rots, positions) is not None:
                positions = forward_kinematics_floats(chain, rots)[0]
            q0 = rots[0]
            if q0[0] < 0.0:  # (the same rotation: the positions stay, to the last bit)
                rots[0] = (-q0[0], -q0[1], -q0[2], -q0[3])
        else:
            positions = forward_kinematics_floats(chain, rots)[0]
    if pos_s is None:
        return _solution(problem, rots, positions, iterations)
    # As core.ccd.solve_batch: the seed where it is closer by more than the tolerance, then
    # triangulation within the limits where the target is still missed.
    if math.dist(pos_s[-1], (x, y, z)) < math.dist(positions[-1], (x, y, z)) - problem.tolerance:
        rots, positions, iterations = rots_s, pos_s, 0  # type: ignore[assignment]
    if not chain.is_free and _may_fall_back(problem, positions[-1], (x, y, z)):
        q, p = ccd_seed.within_limits(problem, np.array([rots]), np.array([positions]))
        rots, positions = q[0].tolist(), p[0].tolist()
    return _solution(problem, rots, positions, iterations)


def _may_fall_back(problem: Problem, effector: Vec, target: Vec) -> bool:
    """False where :func:`core.ccd_seed.within_limits` keeps the answer for sure: the rule of
    :func:`core.triangulation_fallback.triangulation_where_closer` (a target within the
    chain's length missed by more than the tolerance, or one beyond the length of a chain
    that ends in a hinge) decided in floats, the distances summed in numpy's order; a
    distance within 1e-12 (relative) of its bound is left to the numpy rule."""
    dx, dy, dz = effector[0] - target[0], effector[1] - target[1], effector[2] - target[2]
    error = math.sqrt(dx * dx + dy * dy + dz * dz)
    distance = math.sqrt(target[0] * target[0] + target[1] * target[1] + target[2] * target[2])
    tol, reach = problem.tolerance, problem.chain.reach
    if abs(error - tol) <= 1e-12 * tol or abs(distance - reach) <= 1e-12 * reach:
        return True
    return (error > tol and distance <= reach) or (
        distance > reach and ends_in_hinge(problem.chain)
    )


def _solution(
    problem: Problem, rots: list[Quat], positions: list[Vec], iterations: int
) -> Solution:
    effector = None
    if problem.target_rotations is not None:
        effector = np.array([forward_kinematics_floats(problem.chain, rots)[1][-1]])
    return Solution(
        rotations=np.array([rots]),
        positions=np.array([positions]),
        iterations=np.array([iterations], dtype=np.int64),
        effector_rotation=effector,
    )
