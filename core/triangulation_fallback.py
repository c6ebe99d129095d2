# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation within the limits as the other methods' fallback on limited chains.

CCD (:mod:`core.ccd_seed`), the Jacobian methods (:mod:`core.jacobian`) and FABRIK
(:mod:`core.fabrik`) end on a limited chain with the same rule, written once here
(:func:`triangulation_where_closer`): triangulation within the limits
(:func:`core.triangulation.solve_triangulation` on the limited chain — admissible, and it
reaches where an admissible pose does but for rare misses; it costs milliseconds, so it runs
only on the rows that need it) replaces a method's answer for a target within the chain's
length that the answer misses (error above the tolerance), and for a target beyond the
length of a chain that ends in a hinge (:func:`core.triangulation_limits.beyond_limb`),
unless the answer comes closer than triangulation's by more than
:data:`~core.triangulation_refine.CLOSER_BY` tolerances (:func:`as_close`).

Where neither meets the target, both are closest poses, and equally close poses can lie in
different local minima or anywhere along a family of them; triangulation's is continuous
from frame to frame (its own choice among its candidates keeps the first unless another
is materially closer, the same margin) and the same on a method's one-target and batch
paths, where a method's own iteration ends at different points of such a valley (up to
1.7° apart on ``bench_natural``'s ``hind_leg_knee`` with the Jacobian methods: a bake
that differed from the live pose). Beyond a hinge limb's length triangulation's pose (the
hinge at its longest, aimed at the target) keeps the pose continuous with the closed form
inside the reach.

Where triangulation's pose is a shoulder and elbow's closest admissible pose to a target
out of reach (:func:`core.limb_closest.is_closest`), or a two-bone limb's hinge folded
(stretched) as far as it goes toward a target nearer the root (farther from it)
(:func:`core.triangulation_limits_single.is_extent_closest`), no pose of a method comes
materially closer, so the rule always takes it: the one-target path
(:meth:`core.Solver.pose`) then answers with it without running the method
(:func:`core.solver._closest`).

Because the fallback follows, CCD's coarse sweep and the Jacobian methods' second run
from the start pose (searches beyond the seed for a target it misses) run only on chains
with the paper's cone limits (:func:`searches_for_them`), where the fallback misses
targets they reach; on chains without cones (every chain Blender's limits make) it found
what they found (``docs/ccd.md``, *The coarse sweep*; ``docs/jacobian.md``, *Misses under
limits*).

The sub-problem is position only (``target_rotations=None``) with the rows' targets,
poles and start poses. How a caller merges the rows it wins (quaternion sign, iteration
counts, a :class:`~core.result.Solution`'s extra fields) stays with the caller.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from .chain import Chain
from .problem import Problem
from .result import Solution
from .rotations import FloatArray
from .triangulation import solve_triangulation
from .triangulation_limits import beyond_limb
from .triangulation_refine import CLOSER_BY


@dataclass(frozen=True)
class Fallback:
    """Triangulation's answer on the rows that qualify and where it wins.

    ``rows (R,)`` index the caller's batch; ``problem`` is those rows' position-only
    sub-problem and ``solution`` triangulation's answer to it; ``chosen (R,)`` marks the
    rows where it is taken (:func:`as_close`)."""

    rows: NDArray[np.intp]
    problem: Problem
    solution: Solution
    chosen: NDArray[np.bool_]

    @property
    def taken(self) -> NDArray[np.intp]:
        """The caller's rows that take triangulation's pose (``rows[chosen]``)."""
        return self.rows[self.chosen]


def searches_for_them(chain: Chain) -> bool:
    """Whether triangulation within the limits stands in for a seeded method's own search
    beyond the seed on ``chain`` (module docstring): no joint has a cone limit."""
    return all(lim.cone is None for lim in chain.limits)


def as_close(error: FloatArray, other_error: FloatArray, tolerance: float) -> NDArray[np.bool_]:
    """Where triangulation's answer is taken (all arrays ``(R,)``): its error
    ``other_error`` is not larger than the method's ``error`` by more than
    :data:`~core.triangulation_refine.CLOSER_BY` tolerances (1e-3 × reach by default)."""
    return other_error <= error + CLOSER_BY * tolerance


def triangulation_where_closer(problem: Problem, error: FloatArray) -> Fallback | None:
    """The module's rule for answers whose effector errors are ``error (N,)``; ``None`` when
    no row qualifies (no target within reach missed, none beyond a hinge limb's length)."""
    tolerance = problem.tolerance
    within = np.linalg.norm(problem.targets, axis=-1) <= problem.chain.reach
    far = beyond_limb(problem)
    rows = np.flatnonzero(((error > tolerance) & within) | far)
    if rows.size == 0:
        return None
    sub = replace(problem.rows(rows), target_rotations=None)
    tri = solve_triangulation(sub)
    tri_error = np.linalg.norm(tri.positions[:, -1] - sub.targets, axis=-1)
    return Fallback(rows, sub, tri, as_close(error[rows], tri_error, tolerance))


__all__ = ["Fallback", "as_close", "triangulation_where_closer"]
