# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-target paths in plain floats of the even spread and of FABRIK against their
batched references.

* :func:`core.spread.spread_points_floats` against :func:`core.spread.spread_points` on
  ``(N,)`` arrays (the numpy reference);
* :func:`core.fabrik_single.fabrik_floats` (through :func:`core.fabrik.solve_fabrik` for one
  target) against the batch path of :func:`core.fabrik.solve_fabrik`;
* ``distribution="even"`` through the float routes of :mod:`core.triangulation_single` and
  :class:`core.Solver` (triangulation, CCD, the Jacobian methods) against the batch.

Random free chains with offset links and turned rest frames, start poses bent in one plane
and out of it, targets from the root to beyond the reach, with and without poles, both bend
plane rules. Oracles: the batch path on the same inputs (the same pose to 1e-9 of the
reach; the float path stops its Newton rounds early, so the two agree to rounding, not
bit for bit), forward kinematics of the returned rotations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import Chain, JointLimits, SolveOptions, Solver, solve
from core import rotations as rot
from core.components import ARRAY_OPS
from core.fabrik import solve_fabrik
from core.kinematics import forward_kinematics
from core.problem import Problem
from core.spread import shape, spread_points, spread_points_floats
from core.triangulation_single import solve_single, solve_single_points

TOL = 1e-9


def _chain(rng: np.random.Generator, limited: bool = False) -> Chain:
    """A chain of 3–8 links: offsets along Y with some across, turned rest frames, and
    (``limited``) hinges about X, one-sided ranges and cones on joints after the root."""
    n = int(rng.integers(3, 9))
    offsets = np.column_stack(
        [rng.normal(0.0, 0.1, n), rng.uniform(0.3, 1.2, n), rng.normal(0.0, 0.1, n)]
    )
    rest = rot.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.3 * rng.normal(size=(n, 4)))
    if rng.random() < 0.5:  # links along the bones, rest frames bent about X (one plane)
        offsets[:, [0, 2]] = 0.0
        rest = rot.from_axis_angle(np.array([1.0, 0.0, 0.0]), rng.uniform(-0.6, 0.6, n))
    limits = [JointLimits() for _ in range(n)]
    if limited:
        for i in range(1, n):
            kind = int(rng.integers(0, 4))
            if kind == 1:
                limits[i] = JointLimits(lock=(False, True, True))
            elif kind == 2:
                limits[i] = JointLimits(lock=(False, True, True), ranges=((0.0, 2.6), None, None))
            elif kind == 3:
                limits[i] = JointLimits(cone=float(rng.uniform(0.4, 2.0)))
    return Chain(offsets, rest, limits)


def _start(rng: np.random.Generator, n: int) -> np.ndarray:
    """The rest pose, a pose bent in one plane (about each joint's X), or a random bend."""
    kind = int(rng.integers(0, 3))
    if kind == 0:
        return rot.identity((n,))
    if kind == 1:
        return rot.from_axis_angle(np.array([1.0, 0.0, 0.0]), rng.uniform(-0.8, 0.8, n))
    return rot.normalize(np.array([1.0, 0.0, 0.0, 0.0]) + 0.25 * rng.normal(size=(n, 4)))


def _targets(rng: np.random.Generator, chain: Chain, size: int, root: bool = False) -> np.ndarray:
    """Targets from near the root to beyond the reach (``root``: the first at the root,
    where the chord's direction is undefined: FABRIK's rounds from there amplify rounding
    differences to ~1e-8, on the reference float path before this one too)."""
    t = rng.normal(size=(size, 3))
    scale = rng.uniform(0.02, 1.15, size) * chain.reach
    if root:
        scale[0] = 0.0
    return t * (scale / np.linalg.norm(t, axis=1))[:, None]


def _assert_same_rotations(a: object, b: object, tol: float) -> None:
    """The same rotations to ``tol``: ``q`` and ``−q`` alike (both are canonical, ``w ≥ 0``,
    but a half turn's ``w`` is ±rounding)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    sign = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
    np.testing.assert_allclose(a * sign, b, rtol=0, atol=tol)


def _problem(
    chain: Chain, targets: np.ndarray, start: np.ndarray, poles: np.ndarray | None, **opts: object
) -> Problem:
    size = len(targets)
    initial = np.broadcast_to(start, (size, chain.n_joints, 4))
    options = SolveOptions(**opts)  # type: ignore[arg-type]
    return Problem(chain, targets, None, poles, initial, 1e-6 * chain.reach, options)


def test_spread_points_floats_equals_the_array_path() -> None:
    """The float spread gives the array path's joints and carried bend normal."""
    rng = np.random.default_rng(41)
    for _ in range(40):
        chain = _chain(rng)
        fam = shape(chain, _start(rng, chain.n_joints))
        targets = _targets(rng, chain, 12, root=True)
        for carry in (True, False):
            ref, hints = spread_points(ARRAY_OPS, fam, tuple(targets.T), carry)
            for k, t in enumerate(targets):
                pts, normal = spread_points_floats(fam, tuple(t.tolist()), carry)
                want = np.array([[c[k] for c in p] for p in ref])
                np.testing.assert_allclose(pts, want, rtol=0, atol=TOL * chain.reach)
                hint = hints[1]
                assert hint is not None
                np.testing.assert_allclose(
                    np.multiply(normal, fam.bend_signs[0]), [h[k] for h in hint], rtol=0, atol=TOL
                )


@pytest.mark.parametrize("limited", [False, True])
def test_fabrik_one_target_equals_the_batch(limited: bool) -> None:
    """FABRIK for one target (floats) gives the batch's row: rotations, positions and
    rounds, for poles or none and both bend-plane rules, to 1e-9. Under limits that holds
    where the seed is the answer (0 rounds); where rounds run, each projects the joints into
    their limits with numpy on one row against many, which rounds differently, and the
    rounds amplify it (so did the generic float path before this one: up to ~1e-8): 1e-7
    there, for targets met within FABRIK's rounds; where CCD's polish took over (more
    rounds than the cap) only the distances left are compared, to 1e-4 of the reach."""
    rng = np.random.default_rng(43 + limited)
    exact = rounds = 0
    for _ in range(10 if limited else 30):
        chain = _chain(rng, limited)
        start = _start(rng, chain.n_joints)
        targets = _targets(rng, chain, 8)
        poles = rng.normal(size=(8, 3)) if rng.random() < 0.5 else None
        plane = "rest" if rng.random() < 0.7 else "minimal"
        problem = _problem(chain, targets, start, poles, bend_plane=plane)
        batch = solve_fabrik(problem)
        error = np.linalg.norm(batch.positions[:, -1] - targets, axis=1)
        for k in range(len(targets)):
            pole = None if poles is None else poles[k : k + 1]
            one = solve_fabrik(_problem(chain, targets[k : k + 1], start, pole, bend_plane=plane))
            one_error = np.linalg.norm(one.positions[0, -1] - targets[k])
            assert abs(one_error - error[k]) <= 1e-4 * chain.reach
            assert np.all(one.rotations[0, :, 0] >= 0.0)  # canonical, as the batch's
            fk = forward_kinematics(chain, one.rotations)[0][0]
            np.testing.assert_allclose(fk, one.positions[0], rtol=0, atol=TOL * chain.reach)
            its = batch.iterations[k]
            if not limited or its == 0:
                tol = TOL
            elif its <= problem.options.max_iterations and error[k] <= problem.tolerance:
                tol = 1e-7
            else:
                continue
            exact += its == 0
            rounds += its > 0
            np.testing.assert_allclose(
                one.positions[0], batch.positions[k], rtol=0, atol=tol * chain.reach
            )
            _assert_same_rotations(one.rotations[0], batch.rotations[k], tol)
            assert one.iterations[0] == its
    assert exact > (40 if not limited else 5)
    assert rounds > (40 if not limited else 15)  # (start poses bent out of a plane, offsets)


def test_even_float_routes_equal_the_batch() -> None:
    """``distribution="even"`` from the rest pose through the float routes (rotations and
    positions, positions alone) gives the batch's triangulation, which is FABRIK's."""
    rng = np.random.default_rng(47)
    for _ in range(25):
        chain = _chain(rng)
        n = chain.n_joints
        targets = _targets(rng, chain, 8)
        poles = rng.normal(size=(8, 3)) if rng.random() < 0.5 else None
        opts = SolveOptions(distribution="even", pole_angle=float(rng.uniform(-1.0, 1.0)))
        batch = solve(chain, targets, method="triangulation", pole=poles, options=opts)
        for k, t in enumerate(targets.tolist()):
            pole = None if poles is None else tuple(poles[k].tolist())
            one = solve_single(chain, tuple(t), pole, opts)
            assert one is not None
            np.testing.assert_allclose(one[0], batch.rotations[k], rtol=0, atol=TOL)
            np.testing.assert_allclose(one[1], batch.positions[k], rtol=0, atol=TOL * chain.reach)
            points = solve_single_points(chain, tuple(t), pole, opts)
            assert points is not None
            assert len(points) == n + 1
            np.testing.assert_allclose(points, batch.positions[k], rtol=0, atol=TOL * chain.reach)


@pytest.mark.parametrize("method", ["triangulation", "ccd", "jacobian_dls", "fabrik"])
def test_solver_pose_with_the_even_spread_equals_the_batch(method: str) -> None:
    """:meth:`Solver.pose` (the live path) with the even spread: the batch's final poses."""
    rng = np.random.default_rng(53)
    for _ in range(8):
        chain = _chain(rng)
        targets = _targets(rng, chain, 6)
        opts = SolveOptions(distribution="even")
        solver = Solver(chain, method, opts)
        batch = solver.poses(targets)
        for k, t in enumerate(targets):
            pose = solver.pose(t)
            np.testing.assert_allclose(
                pose.points, batch.positions[k], rtol=0, atol=TOL * chain.reach
            )
            np.testing.assert_allclose(pose.rotations, batch.rotations[k], rtol=0, atol=TOL)


def test_spread_floats_far_and_folded_targets() -> None:
    """Beyond the reach the float spread is straight at the target; at the root it is the
    family's most folded member (the closest it comes), as on arrays."""
    chain = Chain.from_lengths([1.0, 0.8, 0.6, 0.4], direction=(0.0, 1.0, 0.0))
    fam = shape(chain, rot.identity((4,)))
    far = (3.0, -4.0, 1.0)
    pts, _ = spread_points_floats(fam, far, True)
    unit = np.array(far) / math.dist(far, (0.0, 0.0, 0.0))
    np.testing.assert_allclose(pts[-1], unit * chain.reach, atol=1e-12)
    root, _ = spread_points_floats(fam, (0.0, 0.0, 0.0), True)
    ref, _ = spread_points(ARRAY_OPS, fam, (np.zeros(1),) * 3, True)
    np.testing.assert_allclose(root, [[c[0] for c in p] for p in ref], atol=1e-12)


def test_solver_fabrik_under_limits_equals_the_batch() -> None:
    """:meth:`Solver.pose` and :meth:`Solver.solve_points` with FABRIK on chains with limits
    (the float path, numpy's polish only where it has a target to work on): the batch's
    final poses — to 1e-9 where the seed is the answer, 1e-7 where the rounds ran (see
    :func:`test_fabrik_one_target_equals_the_batch`), the distance left elsewhere."""
    rng = np.random.default_rng(59)
    polished = 0
    for _ in range(10):
        chain = _chain(rng, limited=True)
        targets = _targets(rng, chain, 6)
        solver = Solver(chain, "fabrik")
        batch = solver.poses(targets)
        for k, t in enumerate(targets):
            pose = solver.pose(t)
            points = solver.solve_points(t)
            error = math.dist(pose.points[-1], t)
            assert abs(error - float(batch.error[k])) <= 1e-4 * chain.reach
            its = batch.iterations[k]
            if its > solver.options.max_iterations or not batch.converged[k]:
                polished += 1
                continue
            tol = TOL if its == 0 else 1e-7
            np.testing.assert_allclose(
                pose.points, batch.positions[k], rtol=0, atol=tol * chain.reach
            )
            np.testing.assert_allclose(points, batch.positions[k], rtol=0, atol=tol * chain.reach)
            _assert_same_rotations(pose.rotations, batch.rotations[k], tol)
    assert polished > 0
