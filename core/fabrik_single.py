# SPDX-License-Identifier: GPL-3.0-or-later
"""FABRIK's rounds, and its one-target path in plain Python floats.

:func:`iterate` is Aristidou & Lasenby (2011), Algorithm 1's loop (stage 1,
:func:`forward_reaching`, then stage 2, :func:`core.aim.aim`), written once on components
(:mod:`core.components`): :mod:`core.fabrik` runs it on ``(N,)`` arrays for a batch;
:func:`iterate_floats` is its float twin for one target (:func:`fabrik_floats`), pinned to
it bit for bit.

:func:`fabrik_floats` is :func:`core.fabrik.solve_fabrik` for one target before its polish
under limits, with no numpy call on a chain without limits: the even spread in floats
(:func:`core.spread.spread_points_floats`), the rounds where it misses, and the bend plane
turned as :func:`core.bend_plane.orient_bend` turns it (the float turn of triangulation's
pass, :func:`core.triangulation_single._bend_turn`, which is the same rule). It is the
one-target path of ``distribution="even"`` (triangulation, and the methods seeded from
triangulation's pose: CCD, the Jacobian methods) and of ``method="fabrik"``. Tests pin it to
the batch path (the same pose to rounding).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from . import triangulation_single
from .aim import AimPlan, aim, aim_plan, hinge_signs
from .chain import Chain
from .components import (
    FLOAT_OPS,
    Ops,
    Quat,
    Vec,
    pick,
    qconj,
    qmul,
    qrotate,
    vadd,
    vdot,
    vscale,
    vsub,
)
from .options import SolveOptions
from .spread import rest_shape, shape, spread_points_floats
from .triangulation_plan import _plan
from .triangulation_refine_single import refine

#: The effector moved less than this fraction of the reach in an iteration: stop.
_STALL = 1e-13
#: The error fell by less than this fraction over the last this many iterations: stop.
_STALL_GAIN = 1e-3
_STALL_WINDOW = 10
#: Lengths below this fraction of the reach count as zero (directions undefined).
_TINY = 1e-12
#: Floor for divisors whose result is discarded where they vanish.
_SAFE = 1e-300


def forward_reaching(ops: Ops, plan: AimPlan, pos: list[Vec], target: Vec) -> list[Vec]:
    """Stage 1 (tip to root): ``p_n ← t``, each joint pulled onto the line to the next at
    its link's length, ``p_i ← (1 − λ_i) p_{i+1} + λ_i p_i``; a joint on its successor
    keeps its link's current direction."""
    n = plan.n
    out: list[Vec] = [target] * (n + 1)
    nxt = target
    tiny = _TINY * plan.reach
    for i in range(n - 1, -1, -1):
        v = vsub(pos[i], nxt)
        r = ops.sqrt(vdot(v, v))
        old = vsub(pos[i], pos[i + 1])
        r_old = ops.sqrt(vdot(old, old))
        use = r > tiny
        v = pick(ops, use, v, old)
        r = ops.where(use, r, r_old)
        lam = plan.lengths[i] / ops.where(r > _SAFE, r, 1.0)
        nxt = vadd(nxt, vscale(v, lam))
        out[i] = nxt
    return out


def iterate(
    ops: Ops,
    chain: Chain,
    tolerance: float,
    max_iterations: int,
    size: int,
    plan: AimPlan,
    target: Vec,
    seed: tuple[list[Quat], list[Vec]],
    signs: list[Any],
    hints: list[Vec | None],
) -> tuple[list[Quat], list[Vec], Any]:
    """Algorithm 1's loop from the seed; returns rotations, positions and iterations.

    Stage 2 is :func:`core.aim.aim` toward stage 1's positions (root back in place, each
    joint turned toward the next within its limits); a target is dropped from the loop
    once within ``tolerance``, when its effector stops moving, or when its error fell by
    less than :data:`_STALL_GAIN` over the last :data:`_STALL_WINDOW` iterations (limits
    that give the passes back a pose circling short of the target)."""
    rots, pos = seed
    miss = vsub(pos[-1], target)
    error = ops.sqrt(vdot(miss, miss))
    active = error > tolerance
    last = error
    iterations: Any = ops.where(active, 0, 0)
    for count in range(1, max_iterations + 1):
        if not ops.any(active):
            break
        wants = forward_reaching(ops, plan, pos, target)
        new_rots, new_pos = aim(ops, plan, chain, wants, signs, size, hints)
        moved = vsub(new_pos[-1], pos[-1])
        rots = [pick(ops, active, a, b) for a, b in zip(new_rots, rots, strict=True)]
        pos = [pick(ops, active, a, b) for a, b in zip(new_pos, pos, strict=True)]
        iterations = iterations + ops.where(active, 1, 0)
        miss = vsub(pos[-1], target)
        error = ops.sqrt(vdot(miss, miss))
        active = active & (error > tolerance) & (ops.sqrt(vdot(moved, moved)) > _STALL * plan.reach)
        if count % _STALL_WINDOW == 0:
            active = active & (error < (1.0 - _STALL_GAIN) * last)
            last = error
    return rots, pos, iterations


def iterate_floats(
    chain: Chain,
    tolerance: float,
    max_iterations: int,
    plan: AimPlan,
    target: Vec,
    seed: tuple[list[Quat], list[Vec]],
    signs: list[Any],
    hints: list[Vec | None],
) -> tuple[list[Quat], list[Vec], int]:
    """:func:`iterate` for one target in plain floats, the rounds of :func:`fabrik_floats`:
    stage 1 (:func:`_forward_reaching_floats`) and stage 2 (:func:`core.aim.aim` on floats)
    with the vector helpers written out and no selection between rounds (a single target
    leaves the loop as it stops): the same operations in the same order, so the same bits
    (tested)."""
    sqrt = math.sqrt
    rots, pos = seed
    tx, ty, tz = target
    ex, ey, ez = pos[-1]
    mx, my, mz = ex - tx, ey - ty, ez - tz
    error = sqrt(mx * mx + my * my + mz * mz)
    active = error > tolerance
    last = error
    iterations = 0
    for count in range(1, max_iterations + 1):
        if not active:
            break
        wants = _forward_reaching_floats(plan, pos, target)
        rots, new_pos = aim(FLOAT_OPS, plan, chain, wants, signs, 1, hints)
        (ax, ay, az), (bx, by, bz) = new_pos[-1], pos[-1]
        dx, dy, dz = ax - bx, ay - by, az - bz
        pos = new_pos
        iterations += 1
        mx, my, mz = ax - tx, ay - ty, az - tz
        error = sqrt(mx * mx + my * my + mz * mz)
        active = error > tolerance and sqrt(dx * dx + dy * dy + dz * dz) > _STALL * plan.reach
        if count % _STALL_WINDOW == 0:
            active = active and error < (1.0 - _STALL_GAIN) * last
            last = error
    return rots, pos, iterations


def _forward_reaching_floats(plan: AimPlan, pos: list[Vec], target: Vec) -> list[Vec]:
    """:func:`forward_reaching` for one target in plain floats (the same operations)."""
    sqrt = math.sqrt
    n = plan.n
    out: list[Vec] = [target] * (n + 1)
    nx, ny, nz = target
    tiny = _TINY * plan.reach
    for i in range(n - 1, -1, -1):
        px, py, pz = pos[i]
        vx, vy, vz = px - nx, py - ny, pz - nz
        r = sqrt(vx * vx + vy * vy + vz * vz)
        if not r > tiny:  # (on its successor: the link's current direction)
            ox, oy, oz = pos[i + 1]
            vx, vy, vz = px - ox, py - oy, pz - oz
            r = sqrt(vx * vx + vy * vy + vz * vz)
        lam = plan.lengths[i] / (r if r > _SAFE else 1.0)
        nx, ny, nz = nx + vx * lam, ny + vy * lam, nz + vz * lam
        out[i] = (nx, ny, nz)
    return out


_REST_SIGNS: weakref.WeakKeyDictionary[Chain, list[Any]] = weakref.WeakKeyDictionary()


def _rest_signs(chain: Chain, plan: AimPlan) -> list[Any]:
    """:func:`core.aim.hinge_signs` for the rest pose (cached per chain)."""
    signs = _REST_SIGNS.get(chain)
    if signs is None:
        signs = hinge_signs(FLOAT_OPS, plan, chain, [(1.0, 0.0, 0.0, 0.0)] * plan.n)
        _REST_SIGNS[chain] = signs
    return signs


def fabrik_floats(
    chain: Chain,
    target: Vec,
    pole: Vec | None,
    options: SolveOptions,
    tolerance: float,
    start: list[Quat] | None = None,
    points_only: bool = False,
    rounds: int | None = None,
    finish: float | None = None,
) -> tuple[list[Quat] | None, list[Vec], int]:
    """FABRIK for one target in floats: :func:`core.fabrik.solve_fabrik`'s pose before
    :func:`core.fabrik._polish` (which only a chain with limits takes).

    Args:
        chain: the chain (its reach within triangulation's unscaled range).
        target: effector goal, 3 floats in the base frame (checked and pulled in).
        pole: 3 floats in the base frame, or ``None``.
        options: reads ``max_iterations``, ``bend_plane``, ``pole_angle``.
        tolerance: the absolute position tolerance.
        start: the start pose, ``n`` wxyz rotations (``None``: the rest pose).
        points_only: the caller needs the positions alone; on a chain without limits
            whose spread meets the target and keeps the links' lengths
            (:attr:`core.spread.Shape.keeps_lengths`), the spread's joints are returned as
            they are (aiming the joints at them gives them back to rounding) and no
            rotation.
        rounds: the most rounds (``None``: ``options.max_iterations``; ``0``: the seed,
            the even spread aimed within the limits).
        finish: FABRIK on a chain with limits (:func:`core.fabrik.finish_distance`): the
            rounds stop within this distance of the target, and the damped least-squares
            refinement of triangulation's search
            (:func:`core.triangulation_refine_single.refine`) takes FABRIK's pose to the
            tolerance; where it misses, the rounds go on (:func:`finish_floats`).

    Returns:
        ``(rotations, positions, iterations)``: ``n`` wxyz rotations with ``w ≥ 0`` (or
        ``None`` under ``points_only``), ``n + 1`` positions, FABRIK's rounds.
    """
    plan = aim_plan(chain)
    fam = rest_shape(chain) if start is None else shape(chain, np.array(start))
    wants, normal = spread_points_floats(fam, target, options.bend_plane == "rest")
    rots: list[Quat] | None = None
    its = 0
    if (
        points_only
        and plan.all_free
        and fam.keeps_lengths
        and math.dist(wants[-1], target) <= tolerance
    ):
        pos = wants  # the seed reaches: FABRIK's answer after 0 rounds
    else:
        hints: list[Vec | None] = [None]
        hints += [vscale(normal, sign) for sign in fam.bend_signs]
        n = plan.n
        if plan.all_free:
            signs: list[Any] = [0.0] * n
        elif start is None:
            signs = _rest_signs(chain, plan)
        else:
            signs = hinge_signs(FLOAT_OPS, plan, chain, start)
        seed = aim(FLOAT_OPS, plan, chain, wants, signs, 1, hints)
        limit = options.max_iterations if rounds is None else rounds
        stop = tolerance if finish is None else max(tolerance, finish)
        rots, pos, its = iterate_floats(chain, stop, limit, plan, target, seed, signs, hints)
        if finish is not None:
            rots, pos, its = finish_floats(
                chain, tolerance, finish, limit, plan, target, (rots, pos, its), signs, hints
            )
    if pole is not None or (its and options.bend_plane == "rest"):
        init = None if start is None else [list(q) for q in start]
        turn = triangulation_single._bend_turn(
            chain, _plan(chain), options, target, pole, pos, init, start is None
        )
        if turn is not None:
            if rots is not None:
                rest0 = plan.rests[0]
                q0 = qmul(qmul(qconj(rest0), turn), qmul(rest0, rots[0]))
                root = chain.limits[0]
                if root.is_free or root.violation_floats(q0) <= 1e-9:
                    rots = [q0, *rots[1:]]
                else:
                    turn = None
            if turn is not None:
                pos = [qrotate(turn, p) for p in pos]
    if rots is not None:
        rots = [(-q[0], -q[1], -q[2], -q[3]) if q[0] < 0.0 else q for q in rots]
    return rots, pos, int(its)


def finish_floats(
    chain: Chain,
    tolerance: float,
    finish: float,
    limit: int,
    plan: AimPlan,
    target: Vec,
    rounds: tuple[list[Quat], list[Vec], int],
    signs: list[Any],
    hints: list[Vec | None],
) -> tuple[list[Quat], list[Vec], int]:
    """The end of FABRIK's rounds on a chain with limits, for one target: a pose the rounds
    left within ``finish`` of the target but beyond the tolerance is refined
    (:func:`core.triangulation_refine_single.refine`, one more iteration) where that meets
    the tolerance; elsewhere the rounds go on from it to the tolerance (up to ``limit``
    more). :func:`core.fabrik._finish` is the batch's twin."""
    rots, pos, its = rounds
    miss = vsub(pos[-1], target)
    if not tolerance < math.sqrt(vdot(miss, miss)) <= finish:
        return rots, pos, its  # (met, or the rounds stalled short of the finish)
    q, at, err = refine(chain, rots, target, tolerance, False)
    if err <= tolerance:
        return q, at, its + 1
    rots, pos, more = iterate_floats(
        chain, tolerance, limit, plan, target, (rots, pos), signs, hints
    )
    return rots, pos, its + int(more)


__all__ = ["fabrik_floats", "finish_floats", "forward_reaching", "iterate", "iterate_floats"]
