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
from core.triangulation_fallback import (
    CLOSER_BY,
    NEAR,
    as_close,
    triangulation_where_closer,
)

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
    assert fallback.better.tolist() == [True, False]
    assert fallback.taken.tolist() == [1]


def test_nothing_to_do_where_every_target_within_reach_is_met() -> None:
    chain = Chain.from_lengths([1.0, 1.0, 1.0], bend_limits_deg=[None, 90, 90])
    targets = np.array([[0.5, 1.5, 0.0], [0.0, 2.0, 0.5]])
    problem = _problem(chain, targets)
    assert triangulation_where_closer(problem, np.zeros(2)) is None
    # ... and a target beyond the length is not a row unless the chain ends in a hinge.
    far = _problem(chain, np.array([[0.0, 5.0, 0.0]]))
    assert triangulation_where_closer(far, np.array([2.0])) is None


def test_a_sliver_closer_does_not_switch_to_triangulation() -> None:
    """:func:`as_close`: triangulation's answer is taken where it meets the target, or is
    closer by more than ``CLOSER_BY`` tolerances; where neither meets the target, a sliver
    closer keeps the method's own pose (neighbouring frames' closest poses can lie in
    different local minima); beyond a hinge limb's length, as close within the tolerance."""
    tol = 1e-6
    margin = CLOSER_BY * tol
    error = np.full(7, 2e-3)
    other = np.array(
        [
            tol,
            NEAR * tol,
            2e-3 - 0.5 * margin,
            2e-3 - 1.5 * margin,
            2e-3,
            2e-3 + 0.5 * tol,
            2e-3 + 2 * tol,
        ]
    )
    far = np.array([False, False, False, False, False, True, True])
    expected = [True, True, False, True, False, True, False]
    assert as_close(error, other, far, tol).tolist() == expected
    within = np.zeros(7, dtype=bool)
    assert as_close(error, other, within, tol).tolist() == [*expected[:5], False, False]
    # Meeting the target is not enough where the method's own answer is closer still.
    assert not as_close(np.array([2 * tol]), np.array([3 * tol]), np.array([False]), tol)[0]
