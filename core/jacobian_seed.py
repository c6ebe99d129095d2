# SPDX-License-Identifier: GPL-3.0-or-later
"""Start poses of the Jacobian methods: the given pose, or a seed from triangulation.

``SolveOptions.jacobian_start`` chooses where the iteration of :mod:`core.jacobian` begins:

* ``"initial"`` — the start pose ``problem.initial`` (the rest pose unless ``initial`` was
  passed), projected onto the limits: the protocol of the references and of the paper
  benchmarks.
* ``"triangulation"`` (default) — for position goals, the triangulation solution
  (:func:`core.triangulation.solve_triangulation`, one closed-form pass from the same start
  pose, bend plane and pole) of the chain *without its limits*. On a free chain it already
  reaches every reachable target, so the iteration takes no update. On a limited chain,
  where that pose carried onto the limits by CCD's :func:`core.ccd_seed.retarget` (each
  joint aims its link at the pass's next joint from where the chain has got to, a hinge at
  the best angle in its range, a ball joint before a hinge turned so the hinge's axis is
  normal to the bend; then projected) meets the goal — where the limits allow the pass's
  pose — the iteration starts there and takes no update; where triangulation *within* the
  limits (its search included: :func:`core.triangulation_limits_single.reaching`) meets
  the goal, from that pose, which then takes no update; elsewhere from the closest pose
  that search found (admissible; the answer ends no farther than it, below) (until 0.8.2 from
  the free pass's pose projected onto the limits, often farther from the target than the
  search's pose: the iteration from there ended no closer on ``bench_solvers``' ball
  chains, and took 3–45 ms a target on the 5-bone one; ``docs/jacobian.md``). Targets still missed
  take triangulation within the limits unless the iteration's pose is materially closer
  (:func:`core.jacobian._within_limits`); on a chain with cone limits the iteration first
  also runs from the given start where the seeded start misses
  (:func:`core.jacobian._second_attempt`). The seed
  depends only on the problem's inputs (target, pole, start pose, options), so the answer
  stays a function of the frame's inputs. Orientation and pose goals, chains with
  stiffness and a posture bias start from the given pose: triangulation's pass pursues
  none of them, and a start at its pose would leave them no effect. (Before any start, an
  orientation goal that triangulation's wrist rule meets in both parts takes that pose
  with 0 updates: :func:`core.wrist.seeded_by_wrist`.)

:func:`start_rotations` is the start for a batch, :func:`start_one` the same start for one
target in floats (triangulation's float passes where they answer; tests pin it to
:func:`start_rotations`).
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Sequence

import numpy as np

from . import triangulation_limits_single, triangulation_single
from .ccd_seed import retarget
from .chain import Chain
from .limits import FREE
from .problem import Problem
from .rotations import FloatArray
from .triangulation import solve_triangulation
from .triangulation_limits_single import reaching

_FREE_CHAINS: weakref.WeakKeyDictionary[Chain, Chain] = weakref.WeakKeyDictionary()


def _free(chain: Chain) -> Chain:
    """``chain`` with every joint free (cached per chain)."""
    if chain.is_free:
        return chain
    free = _FREE_CHAINS.get(chain)
    if free is None:
        free = chain.with_limits([FREE] * chain.n_joints)
        _FREE_CHAINS[chain] = free
    return free


def seeded(problem: Problem) -> bool:
    """True when ``problem`` starts from the triangulation seed (module docstring)."""
    opts = problem.options
    return (
        opts.jacobian_start == "triangulation"
        and (problem.target_rotations is None or opts.position_weight == 1.0)
        and opts.posture_weight == 0.0
        and not _stiff(problem.chain)
    )


@functools.lru_cache(maxsize=64)
def _stiff(chain: Chain) -> bool:
    """True when some joint has stiffness (triangulation would ignore it; cached per chain,
    as :func:`core.ccd_seed.unlimited`)."""
    return any(any(s != 0.0 for s in lim.stiffness) for lim in chain.limits)


def start_rotations(problem: Problem) -> FloatArray:
    """The start pose ``(N, n, 4)`` of ``problem`` (before projection onto the limits)."""
    if not seeded(problem):
        return problem.initial
    if problem.chain.is_free:
        return _carried(problem, None)
    # Triangulation within the limits (its search included): where it meets the goal, the
    # iteration starts (and stops) there; elsewhere the free pass carried onto the limits
    # where that meets the goal, else the search's closest pose.
    q_tri, _, met = reaching(problem)
    if met.all():
        return q_tri
    return np.where(met[:, None, None], q_tri, _carried(problem, q_tri))


def _carried(problem: Problem, closest: FloatArray | None) -> FloatArray:
    """Triangulation's pass on the chain without its limits ``(N, n, 4)``; on a limited
    chain, carried onto the limits by :func:`core.ccd_seed.retarget` (CCD's seed) where
    that pose meets the goal (:func:`_meets`), else ``closest`` (triangulation within the
    limits' pose)."""
    chain = problem.chain
    free = Problem(
        _free(chain),
        problem.targets,
        None,
        problem.poles,
        problem.initial,
        problem.tolerance,
        problem.options,
    )
    sol = solve_triangulation(free)
    if closest is None:
        return sol.rotations
    q = closest.copy()
    for i, (points, target) in enumerate(
        zip(sol.positions.tolist(), problem.targets.tolist(), strict=True)
    ):
        carried, at = retarget(chain, points)
        if _meets(at[-1], target, problem.tolerance):
            q[i] = carried
    return q


def _meets(effector: Sequence[float], target: Sequence[float], tolerance: float) -> bool:
    """Whether ``effector`` is within ``tolerance`` of ``target`` (3 floats each)."""
    return math.dist(effector, target) <= tolerance


def start_one(problem: Problem) -> list[list[float]]:
    """:func:`start_rotations` of a problem of one target, as ``n`` lists of 4 floats:
    triangulation's float passes where they answer (within the limits:
    :func:`core.triangulation_limits_single.reaching_one`; without them, from the rest pose:
    :func:`core.triangulation_single.solve_single`), else the numpy route."""
    if not seeded(problem):
        return problem.initial[0].tolist()
    chain = problem.chain
    closest = None
    if not chain.is_free:
        one = triangulation_limits_single.reaching_one(problem)
        if one is None:
            return start_rotations(problem)[0].tolist()
        (rotations, _), met = one
        closest = [list(q) for q in rotations]
        if met:
            return closest
    if all(q == [1.0, 0.0, 0.0, 0.0] for q in problem.initial[0].tolist()):
        x, y, z = problem.targets[0].tolist()
        pole = None
        if problem.poles is not None:
            px, py, pz = problem.poles[0].tolist()
            pole = (px, py, pz)
        out = triangulation_single.solve_single(_free(chain), (x, y, z), pole, problem.options)
        if out is not None:
            if closest is None:
                return out[0]
            carried, at = retarget(chain, out[1])
            return carried if _meets(at[-1], (x, y, z), problem.tolerance) else closest
    if closest is None:
        return _carried(problem, None)[0].tolist()
    return _carried(problem, np.array([closest]))[0].tolist()


__all__ = ["seeded", "start_one", "start_rotations"]
