# SPDX-License-Identifier: GPL-3.0-or-later
"""The prepared solver (core/solver.py, core.Solver) against core.solve: the same numbers
for every method on random chains, targets, poles and limits; inputs checked once."""

from __future__ import annotations

import numpy as np
import pytest

from core import METHODS, SolveOptions, Solver, solve
from core import rotations as rot
from core.chain import Chain
from core.errors import SolveInputError
from core.limits import JointLimits

HINGE_X = JointLimits(lock=(False, True, True))


def _random_chain(rng: np.random.Generator, limited: bool) -> Chain:
    n = int(rng.integers(2, 5))
    offsets = np.column_stack(
        [rng.normal(0.0, 0.05, n), rng.uniform(0.3, 1.0, n), rng.normal(0.0, 0.05, n)]
    )
    rests = rot.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.2 * rng.normal(size=(n, 4)))
    limits = [HINGE_X if limited and i == n - 1 else JointLimits() for i in range(n)]
    return Chain(offsets, rest_rotations=rests, limits=limits)


def _targets(rng: np.random.Generator, chain: Chain, size: int) -> np.ndarray:
    t = rng.normal(size=(size, 3))
    return t * (rng.uniform(0.2, 1.2, size) * chain.reach / np.linalg.norm(t, axis=1))[:, None]


@pytest.mark.parametrize("limited", [False, True])
@pytest.mark.parametrize("method", list(METHODS))
def test_solver_gives_the_numbers_of_solve(method: str, limited: bool) -> None:
    rng = np.random.default_rng(sum(map(ord, method)) + limited)
    options = SolveOptions(max_iterations=60)
    for _ in range(3):
        chain = _random_chain(rng, limited)
        solver = Solver(chain, method, options)
        targets = _targets(rng, chain, 4)
        poles = rng.normal(size=(4, 3)) * chain.reach
        batch = solver.solve(targets, pole=poles)
        reference = solve(chain, targets, method=method, pole=poles, options=options)
        np.testing.assert_allclose(batch.rotations, reference.rotations, atol=1e-9)
        np.testing.assert_allclose(batch.positions, reference.positions, atol=1e-9)
        for k in range(2):
            pole = poles[k] if k else None
            alone = solve(chain, targets[k], method=method, pole=pole, options=options)
            rotations, positions = solver.solve_one(targets[k].tolist(), pole)
            np.testing.assert_allclose(rotations, alone.rotations, atol=1e-9)
            np.testing.assert_allclose(positions, alone.positions, atol=1e-9 * chain.reach)
            points = solver.solve_points(targets[k].tolist(), pole)
            np.testing.assert_allclose(points, alone.positions, atol=1e-9 * chain.reach)


@pytest.mark.parametrize("method", list(METHODS))
def test_solver_with_an_orientation_goal_gives_the_numbers_of_solve(method: str) -> None:
    rng = np.random.default_rng(17)
    chain = _random_chain(rng, False)
    options = SolveOptions(max_iterations=40, position_weight=0.5)
    target = _targets(rng, chain, 1)[0]
    goal = rot.normalize(rng.normal(size=4))
    one = Solver(chain, method, options).solve_rotation(target, goal)
    reference = solve(chain, target, method=method, target_rotation=goal, options=options)
    np.testing.assert_allclose(one.rotations[0], reference.rotations, atol=1e-9)
    np.testing.assert_allclose(one.positions[0], reference.positions, atol=1e-9)


def test_solver_checks_chain_method_and_options_once() -> None:
    chain = Chain.from_lengths([1.0, 1.0])
    with pytest.raises(SolveInputError, match="unknown method"):
        Solver(chain, "newton")
    with pytest.raises(SolveInputError, match="SolveOptions"):
        Solver(chain, "ccd", {"tolerance": 0.1})  # type: ignore[arg-type]
    with pytest.raises(SolveInputError, match="Chain"):
        Solver([[0.0, 1.0, 0.0]], "ccd")  # type: ignore[arg-type]
    solver = Solver(chain)
    assert solver.method == "triangulation"
    assert solver.options == SolveOptions()
    with pytest.raises(SolveInputError, match="target"):
        solver.solve_one([1.0, float("nan"), 0.0])
