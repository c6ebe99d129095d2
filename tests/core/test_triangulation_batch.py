# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.triangulation_batch, the batched triangulation pass.

Oracles: the single-target float pass (:func:`core.triangulation_single._solve_single`, the same
algorithm written out in plain floats) row by row; each target solved alone (rows do not
affect each other, with or without targets leaving the pass early); ``math.atan2``,
``math.cos`` and ``math.sin`` for the bend-plane turn's half angle. Inputs are drawn from a
seeded generator, so runs are deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import rotations as rot
from core import triangulation_batch, triangulation_bend
from core.chain import Chain
from core.limits import JointLimits
from core.options import SolveOptions
from core.problem import Problem
from core.triangulation import _solve_batch
from core.triangulation_plan import _plan
from core.triangulation_single import _solve_single

U = Chain.from_lengths([9, 9, 9, 9, 4])
C = Chain.from_lengths([18, 18, 4], bend_limits_deg=[None, 126, 90])


def _targets(
    chain: Chain, rng: np.random.Generator, size: int, stretched: bool = True
) -> np.ndarray:
    """Random targets around the chain, with the awkward ones among them: the root, a point
    on the first link's rest axis, one on the first joint and (``stretched``) one at full
    stretch along that axis — where the triangle just closes and rounding decides between
    bending and not (the float pass and the batch pass may then differ by 1e-9)."""
    reach = chain.reach
    t = rng.uniform(-1.2 * reach, 1.2 * reach, size=(size, 3))
    first = chain.offsets[0] / np.linalg.norm(chain.offsets[0])
    t[0] = 0.0
    t[1] = first * 0.5 * reach
    t[2] = chain.offsets[0]
    if stretched:
        t[3] = first * reach
    return t


def _free_chain(rng: np.random.Generator, straight: bool) -> Chain:
    n = int(rng.integers(1, 7))
    lengths = rng.uniform(0.3, 3.0, size=n)
    if straight:
        return Chain.from_lengths(lengths, (0.0, 1.0, 0.0))
    offsets = rng.normal(size=(n, 3))
    offsets *= (lengths / np.linalg.norm(offsets, axis=1))[:, None]
    return Chain(offsets, rot.normalize(rng.normal(size=(n, 4))))


def _problem(
    chain: Chain,
    targets: np.ndarray,
    rng: np.random.Generator,
    start: str,
    poles: bool,
    **options: object,
) -> Problem:
    size, n = targets.shape[0], chain.n_joints
    if start == "rest":
        initial = np.broadcast_to(rot.identity((n,)), (size, n, 4))
    elif start == "shared":
        initial = np.broadcast_to(rot.normalize(rng.normal(size=(n, 4))), (size, n, 4))
    else:
        initial = rot.normalize(rng.normal(size=(size, n, 4)))
    pole = rng.normal(size=(size, 3)) * chain.reach if poles else None
    return Problem(
        chain,
        targets,
        None,
        pole,
        initial,
        1e-6 * chain.reach,
        SolveOptions(**options),  # type: ignore[arg-type]
    )


@pytest.fixture(params=[triangulation_batch._RETIRE, 1], ids=["retire-default", "retire-all"])
def retire(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run with the default threshold for targets leaving the pass, and with every settled
    target leaving it (so small batches take that path too)."""
    monkeypatch.setattr(triangulation_batch, "_RETIRE", request.param)
    return int(request.param)


@pytest.mark.parametrize("seed", range(12))
def test_batch_pass_equals_the_float_pass_row_by_row(seed: int, retire: int) -> None:
    rng = np.random.default_rng(seed)
    chain = U if seed == 0 else _free_chain(rng, straight=seed % 2 == 1)
    targets = _targets(chain, rng, 400, stretched=False)
    problem = _problem(
        chain,
        targets,
        rng,
        start=("rest", "shared", "per target")[seed % 3],
        poles=seed % 4 == 3,
        delta_b_deg=(180.0, 90.0)[seed % 2],
        bend_plane=("rest", "minimal")[(seed // 2) % 2],
        pole_angle=(0.0, 0.7)[(seed // 4) % 2],
    )
    plan = _plan(chain)
    rotations, positions = _solve_batch(problem, plan)
    for k in range(problem.size):
        rot_k, pos_k = _solve_single(problem.rows(slice(k, k + 1)), plan)
        np.testing.assert_allclose(positions[k], pos_k[0], rtol=0, atol=1e-12 * chain.reach)
        np.testing.assert_allclose(rotations[k], rot_k[0], rtol=0, atol=1e-12)


def test_settled_targets_leave_the_pass_on_the_paper_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chain U's paper targets: most triangles form at the first joints and 8 % lie beyond
    the reach; those targets leave the pass, with the poses the whole pass gives them."""
    rng = np.random.default_rng(1)
    targets = rng.uniform(-30.0, 30.0, size=(10_000, 3))
    left: list[int] = []
    finish = triangulation_batch._finish_straight

    def counted(plan: object, i: int, rows: np.ndarray | None, *args: object) -> None:
        left.append(i)
        finish(plan, i, rows, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(triangulation_batch, "_finish_straight", counted)
    threshold = triangulation_batch._RETIRE
    for options in ({}, {"delta_b_deg": 180.0, "bend_plane": "minimal"}):
        problem = _problem(U, targets, rng, "rest", False, **options)
        left.clear()
        early = _solve_batch(problem, _plan(U))
        assert left  # (the path under test is taken)
        monkeypatch.setattr(triangulation_batch, "_RETIRE", 10**9)
        whole = _solve_batch(problem, _plan(U))
        monkeypatch.setattr(triangulation_batch, "_RETIRE", threshold)
        np.testing.assert_allclose(early[1], whole[1], rtol=0, atol=1e-12 * U.reach)
        np.testing.assert_allclose(early[0], whole[0], rtol=0, atol=1e-12)


def _limited_chain(rng: np.random.Generator) -> Chain:
    n = int(rng.integers(2, 6))
    kinds = [
        JointLimits(),
        JointLimits(cone=float(rng.uniform(0.2, 2.5))),
        JointLimits(ranges=((-0.5, 0.7), None, (-1.0, 0.3))),
        JointLimits(lock=(True, False, True)),
        JointLimits(hinge_axis=(1.0, 0.0, 0.0), hinge_range=(-1.0, 1.5)),
    ]
    limits = [kinds[int(rng.integers(0, len(kinds)))] for _ in range(n)]
    return Chain.from_lengths(rng.uniform(0.5, 2.0, size=n), (0.0, 1.0, 0.0), limits=limits)


@pytest.mark.parametrize("seed", range(8))
def test_each_target_of_a_batch_is_solved_as_if_alone(seed: int, retire: int) -> None:
    """Constrained and free chains: the rows of one batch equal each target's own batch."""
    rng = np.random.default_rng(100 + seed)
    chain = C if seed == 0 else _limited_chain(rng) if seed % 2 else _free_chain(rng, True)
    targets = _targets(chain, rng, 60)
    problem = _problem(
        chain,
        targets,
        rng,
        start=("rest", "per target")[seed % 2],
        poles=seed % 3 == 2,
        delta_b_deg=(180.0, 90.0)[(seed // 2) % 2],
    )
    plan = _plan(chain)
    rotations, positions = _solve_batch(problem, plan)
    for k in range(problem.size):
        rot_k, pos_k = _solve_batch(problem.rows(slice(k, k + 1)), plan)
        np.testing.assert_allclose(positions[k], pos_k[0], rtol=0, atol=1e-12 * chain.reach)
        np.testing.assert_allclose(rotations[k], rot_k[0], rtol=0, atol=1e-12)


def test_half_turn_equals_half_of_atan2() -> None:
    """cos(φ/2), sin(φ/2) of φ = atan2(y, x) without trigonometry, on every quadrant, the
    axes, signed zeros and very different magnitudes."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(size=500), [0.0, -0.0, 1.0, -1.0, -1.0, -1.0, 1e-300, -3e5]])
    y = np.concatenate([rng.normal(size=500), [1.0, -1.0, 0.0, 0.0, -0.0, 1e-30, -2.0, 1e-12]])
    x[:100] *= 1e-8
    y[100:200] *= 1e6
    work = triangulation_batch._Scratch(np.empty((triangulation_batch._ROWS, x.size)))
    cos_h, sin_h = np.empty(x.size), np.empty(x.size)
    triangulation_bend.half_turn_of(x.copy(), y.copy(), cos_h, sin_h, work)
    half = [0.5 * math.atan2(b, a) for a, b in zip(x.tolist(), y.tolist(), strict=True)]
    np.testing.assert_allclose(cos_h, [math.cos(h) for h in half], rtol=0, atol=4e-16)
    np.testing.assert_allclose(sin_h, [math.sin(h) for h in half], rtol=0, atol=4e-16)
