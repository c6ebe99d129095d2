# SPDX-License-Identifier: GPL-3.0-or-later
"""Start poses of the Jacobian methods: the given pose, or a seed from triangulation.

``SolveOptions.jacobian_start`` chooses where the iteration of :mod:`core.jacobian` begins:

* ``"initial"`` — the start pose ``problem.initial`` (the rest pose unless ``initial`` was
  passed), projected onto the limits: the protocol of the references and of the paper
  benchmarks.
* ``"triangulation"`` (default) — for position goals, the triangulation solution
  (:func:`core.triangulation.solve_triangulation`, one closed-form pass from the same start
  pose, bend plane and pole) of the chain *without its limits*, projected onto the limits.
  On a free chain it already reaches every reachable target, so the iteration takes no
  update; with limits the iteration starts from an admissible pose near a solution instead
  of the straight chain — or, where triangulation *within* the limits (its pass, or a last
  hinge placed in closed form: :func:`core.triangulation_limits_single.meeting`) meets the
  goal, from that pose, which then takes no update (targets still missed take
  triangulation within the limits with its search where that comes closer:
  :func:`core.jacobian._within_limits`). The seed depends only on
  the problem's inputs (target, pole, start pose, options), so the answer stays a function
  of the frame's inputs. Orientation and pose goals, chains with stiffness and a posture
  bias start from the given pose: triangulation pursues none of them, and a start at its
  pose would leave them no effect.
"""

from __future__ import annotations

import weakref

import numpy as np

from .chain import Chain
from .limits import FREE
from .problem import Problem
from .rotations import FloatArray
from .triangulation import solve_triangulation
from .triangulation_limits_single import meeting

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


def _stiff(chain: Chain) -> bool:
    """True when some joint has stiffness (triangulation would ignore it)."""
    return any(any(s != 0.0 for s in lim.stiffness) for lim in chain.limits)


def start_rotations(problem: Problem) -> FloatArray:
    """The start pose ``(N, n, 4)`` of ``problem`` (before projection onto the limits)."""
    if not seeded(problem):
        return problem.initial
    met = None
    if not problem.chain.is_free:
        # Triangulation within the limits, where its pass or a last hinge placed in closed
        # form meets the goal: the iteration starts (and stops) there.
        q_tri, _, met = meeting(problem)
        if met.all():
            return q_tri
    free = Problem(
        _free(problem.chain),
        problem.targets,
        None,
        problem.poles,
        problem.initial,
        problem.tolerance,
        problem.options,
    )
    q = solve_triangulation(free).rotations
    return q if met is None else np.where(met[:, None, None], q_tri, q)


__all__ = ["seeded", "start_rotations"]
