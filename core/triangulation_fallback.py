# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation within the limits as the other methods' fallback on limited chains.

CCD (:mod:`core.ccd_seed`), the Jacobian methods (:mod:`core.jacobian`) and FABRIK
(:mod:`core.fabrik`) end on a limited chain with the same rule, written once here
(:func:`triangulation_where_closer`): triangulation within the limits
(:func:`core.triangulation.solve_triangulation` on the limited chain — admissible, and it
reaches where an admissible pose does but for rare misses; it costs milliseconds, so it runs
only on the rows that need it) replaces a method's answer

* for a target within the chain's length that the answer misses (error above the
  tolerance), where triangulation meets it, or comes closer by more than
  :data:`CLOSER_BY` tolerances (:func:`as_close`);
* for a target beyond the length of a chain that ends in a hinge
  (:func:`core.triangulation_limits.beyond_limb`), where it comes *as close* (no further
  than the tolerance beyond the answer's error): both are then the closest pose, and
  triangulation's keeps the pose continuous with the closed form inside the reach.

The sub-problem is position only (``target_rotations=None``) with the rows' targets,
poles and start poses. How a caller merges the rows it wins (quaternion sign, iteration
counts, a :class:`~core.result.Solution`'s extra fields) stays with the caller.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from .problem import Problem
from .result import Solution
from .rotations import FloatArray
from .triangulation import solve_triangulation
from .triangulation_limits import beyond_limb


@dataclass(frozen=True)
class Fallback:
    """Triangulation's answer on the rows that qualify and where it wins.

    ``rows (R,)`` index the caller's batch; ``problem`` is those rows' position-only
    sub-problem and ``solution`` triangulation's answer to it; ``better (R,)`` marks the
    rows where it comes closer (or as close, beyond a hinge limb's length)."""

    rows: NDArray[np.intp]
    problem: Problem
    solution: Solution
    better: NDArray[np.bool_]

    @property
    def taken(self) -> NDArray[np.intp]:
        """The caller's rows that take triangulation's pose (``rows[better]``)."""
        return self.rows[self.better]


#: Triangulation replaces an answer that misses a target only where it comes closer and
#: lies within ``NEAR`` tolerances of the target (it meets it: its search stops within one,
#: and the margin keeps rounding between the one-target and batch paths from deciding), or
#: comes closer by more than ``CLOSER_BY`` tolerances (1e-3 × reach by default).
NEAR = 10.0
CLOSER_BY = 1000.0


def as_close(
    error: FloatArray, other_error: FloatArray, far: NDArray[np.bool_], tolerance: float
) -> NDArray[np.bool_]:
    """Where ``other_error`` beats ``error`` (all arrays ``(R,)``): it is smaller and meets
    the target (within :data:`NEAR` tolerances), or it is smaller by more than
    :data:`CLOSER_BY` tolerances, or for ``far`` rows it is no more than ``tolerance``
    larger. Where neither pose meets the
    target, the closest admissible poses of neighbouring frames can lie in different local
    minima: taking triangulation's for a sliver of distance flipped the limb between frames
    (``bench_natural``'s hind leg with a knee limited to 0°–140°: 22–44 pops over 20° in
    240 frames for CCD, the Jacobian methods and FABRIK; 0–10 with the margin)."""
    return (
        ((other_error < error) & (other_error <= NEAR * tolerance))
        | (other_error < error - CLOSER_BY * tolerance)
        | (far & (other_error <= error + tolerance))
    )


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
    return Fallback(rows, sub, tri, as_close(error[rows], tri_error, far[rows], tolerance))


__all__ = ["Fallback", "as_close", "triangulation_where_closer"]
