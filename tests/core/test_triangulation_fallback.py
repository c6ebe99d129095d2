# SPDX-License-Identifier: GPL-3.0-or-later
"""The limited-chain fallback shared by CCD, the Jacobian methods and FABRIK
(core/triangulation_fallback.py): which rows it considers and where triangulation wins.

Oracles: the chain's length (targets within or beyond it), the given errors, and
triangulation's own answer on each row solved alone.
"""

from __future__ import annotations

import numpy as np

from core import SolveOptions
from core import rotations as rot
from core.chain import Chain
from core.limits import JointLimits
from core.problem import Problem
from core.triangulation import solve_triangulation
from core.triangulation_fallback import as_close, triangulation_where_closer
from core.triangulation_refine import CLOSER_BY

HINGE_X = JointLimits(lock=(False, True, True))


def _limb() -> Chain:
    """Upper arm and forearm of 0.28 along +Y, the forearm a hinge bent 0.2 rad at rest."""
    return Chain(
        [[0.0, 0.28, 0.0], [0.0, 0.28, 0.0]],
        rest_rotations=[rot.identity(), rot.from_axis_angle([1.0, 0.0, 0.0], -0.2)],
        limits=[JointLimits(), HINGE_X],
    )


def _problem(chain: Chain, targets: np.ndarray) -> Problem:
    n = chain.n_joints
    start = np.broadcast_to(rot.identity((n,)), (len(targets), n, 4))
    return Problem(chain, targets, None, None, start, 1e-6 * chain.reach, SolveOptions())


def test_rows_are_misses_within_reach_and_every_target_beyond_a_hinge_limb() -> None:
    chain = _limb()
    reach = chain.reach
    targets = np.array(
        [[0.0, 0.5 * reach, 0.1], [0.1, 0.4 * reach, 0.0], [0.0, 1.3 * reach, 0.0]],
    )
    problem = _problem(chain, targets)
    # Row 0 met (error 0), row 1 missed by a lot, row 2 beyond the length with error 0.
    error = np.array([0.0, reach, 0.0])
    fallback = triangulation_where_closer(problem, error)
    assert fallback is not None
    assert fallback.rows.tolist() == [1, 2]
    alone = solve_triangulation(_problem(chain, targets[[1, 2]]))
    np.testing.assert_allclose(fallback.solution.positions, alone.positions, atol=1e-12)
    tri_error = np.linalg.norm(alone.positions[:, -1] - targets[[1, 2]], axis=-1)
    # Row 1: triangulation meets it (closer than an error of a reach); row 2: beyond the
    # length nothing reaches, so an error of 0 cannot be matched.
    assert tri_error[0] < 1e-6 * reach
    assert fallback.chosen.tolist() == [True, False]
    assert fallback.taken.tolist() == [1]


def test_nothing_to_do_where_every_target_within_reach_is_met() -> None:
    chain = Chain.from_lengths([1.0, 1.0, 1.0], bend_limits_deg=[None, 90, 90])
    targets = np.array([[0.5, 1.5, 0.0], [0.0, 2.0, 0.5]])
    problem = _problem(chain, targets)
    assert triangulation_where_closer(problem, np.zeros(2)) is None
    # ... and a target beyond the length is not a row unless the chain ends in a hinge.
    far = _problem(chain, np.array([[0.0, 5.0, 0.0]]))
    assert triangulation_where_closer(far, np.array([2.0])) is None


def test_triangulation_is_taken_unless_the_method_comes_materially_closer() -> None:
    """:func:`as_close`: triangulation's answer is taken unless the method's own is closer by
    more than ``CLOSER_BY`` tolerances (equally close poses can lie in different minima or
    along a family of them, and the method's own differs between its one-target and batch
    paths there)."""
    tol = 1e-6
    margin = CLOSER_BY * tol
    error = np.full(6, 2e-3)
    other = 2e-3 + np.array([-margin, -tol, 0.0, tol, 0.99 * margin, 1.01 * margin])
    assert as_close(error, other, tol).tolist() == [True, True, True, True, True, False]
    # Meeting the target: taken, and so is a pose a sliver short of the method's own.
    assert as_close(np.array([5 * tol]), np.array([0.0]), tol)[0]
    assert as_close(np.array([2 * tol]), np.array([3 * tol]), tol)[0]
