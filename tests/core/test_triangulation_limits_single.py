# SPDX-License-Identifier: GPL-3.0-or-later
"""The float path of triangulation within limits (``core/triangulation_limits_single.py``)
pinned to its numpy reference (the batch pass and ``reach_within_limits``), on random
chains whose last joint is a hinge: free, ball-limited and hinge joints before it, straight
and bent rest poses, targets at admissible poses, within the chain's length and beyond.

Oracles: a batch of the target twice (the numpy reference),
forward kinematics of the returned rotations, the joints' limits."""

from __future__ import annotations

import math
from typing import Any
from unittest import mock

import numpy as np
import pytest
from limited_chains import admissible_poses, anywhere_within, random_limits

from core import (
    Chain,
    SolveOptions,
    kinematics,
    solve,
    triangulation_plan,
    triangulation_single,
)
from core import rotations as rot
from core import triangulation as tri
from core import triangulation_limits as tl
from core import triangulation_limits_single as tls
from core.components import Quat
from core.limits import FREE, JointLimits
from core.problem import Problem
from core.solver import solve_floats, solve_one, solve_points

KNEE = JointLimits(lock=(False, True, True), ranges=((0.0, math.radians(150.0)), None, None))


def _chain(rng: np.random.Generator) -> Chain:
    """2–6 links; the last a hinge, the root free or ball-limited, the others random."""
    n = int(rng.integers(2, 7))
    kinds = [str(rng.choice(["free", "ellipse", "one_sided"]))]
    kinds += [str(rng.choice(["free", "hinge", "ellipse", "rest_excluding"])) for _ in range(n - 2)]
    limits = [random_limits(rng, k) for k in kinds] + [random_limits(rng, "hinge")]
    if rng.random() < 0.5:
        return Chain.from_lengths(rng.uniform(0.4, 1.6, n), rng.normal(size=3), limits=limits)
    return Chain.from_offsets(rng.normal(size=(n, 3)), limits=limits)


def _targets(rng: np.random.Generator, chain: Chain) -> np.ndarray:
    """Targets at admissible poses, random ones within the chain's length and beyond it."""
    at_poses = kinematics.effector(chain, admissible_poses(rng, chain, 4))
    inside = rng.normal(size=(2, 3)) * 0.5 * chain.reach
    beyond = rng.normal(size=(2, 3))
    beyond *= rng.uniform(1.05, 3.0, (2, 1)) * chain.reach / np.linalg.norm(beyond, axis=1)[:, None]
    return np.concatenate([at_poses, inside, beyond])


class _SearchedError(Exception):
    pass


def _uses_float_path(chain: Chain, target: np.ndarray) -> bool:
    """Whether the float path answers in closed form: the pass, a last hinge placed, or
    beyond the chain's length the hinge at its longest — not its search (pinned to the
    numpy path in ``test_triangulation_refine_single.py``; a batch searches each target
    it misses on this float path too)."""
    options = SolveOptions()
    searched = mock.Mock(side_effect=_SearchedError)
    with mock.patch.object(tls, "search", searched), mock.patch.object(tls, "refine_far", searched):
        try:
            out = triangulation_single.solve_single(chain, tuple(target.tolist()), None, options)
        except _SearchedError:
            return False
    return out is not None


def _same_rotations(a: np.ndarray, b: np.ndarray, atol: float) -> None:
    """Rotations ``(n, 4)`` equal to ``atol`` up to sign (``q`` and ``−q`` are the same
    rotation; ``w ≥ 0`` leaves the sign open for half turns, ``w = 0``)."""
    sign = np.where(np.sum(a * b, axis=-1) < 0.0, -1.0, 1.0)[:, None]
    np.testing.assert_allclose(a, sign * b, rtol=0, atol=atol)


@pytest.mark.parametrize("seed", range(4))
def test_float_path_gives_the_reference_pose(seed: int) -> None:
    """Where the float path answers, solve_one gives the batch reference's pose: the
    effector to 1e-9 of the reach, the joints and rotations to 1e-7. The hinge angle is the
    acos of a ratio of distances, which magnifies rounding near ±1 (a limb at its longest:
    a straight one, or a far target, where the hinge is aimed at 1 − 1e-12 of its longest
    extension) about a millionfold; elsewhere they agree to rounding."""
    rng = np.random.default_rng(seed)
    used = far_used = 0
    for _ in range(40):
        chain = _chain(rng)
        for target in _targets(rng, chain):
            if not _uses_float_path(chain, target):
                continue
            used += 1
            far_used += int(np.linalg.norm(target) > chain.reach)
            one = solve_one(chain, target)
            ref = solve(chain, np.stack([target, target]))
            reach = chain.reach
            np.testing.assert_allclose(
                one.positions[0, -1], ref.positions[0, -1], rtol=0, atol=1e-9 * reach
            )
            np.testing.assert_allclose(one.positions[0], ref.positions[0], atol=1e-7 * reach)
            _same_rotations(one.rotations[0], ref.rotations[0], 1e-7)
            # Independent checks: forward kinematics and the limits.
            fk = kinematics.forward_kinematics(chain, one.rotations[0])[0]
            np.testing.assert_allclose(one.positions[0], fk, atol=1e-12 * reach)
            for i, lim in enumerate(chain.limits):
                assert lim.violation(one.rotations[0, i]) <= 1e-9
    # The comparison is not vacuous: the float path answered many targets, far ones too.
    assert used >= 60
    assert far_used >= 15


def _knee(lengths: tuple[float, float], bend: float, root: JointLimits) -> Chain:
    """A two-bone leg along +Z bending toward −Y by ``bend`` at rest, hip ``root``."""
    a, b = lengths
    offsets = [[0.0, 0.0, a], [0.0, -math.sin(bend) * b, math.cos(bend) * b]]
    return Chain.from_offsets(np.array(offsets), limits=[root, KNEE])


@pytest.mark.parametrize(
    "root",
    [JointLimits(), JointLimits(ranges=((-1.2, 1.5), None, (-0.8, 0.8)))],
    ids=["free hip", "limited hip"],
)
def test_knee_reaches_every_admissible_target_on_the_float_path(root: JointLimits) -> None:
    """A knee (Lock IK Y/Z, X in 0°–150°): every target at an admissible pose is reached,
    on the float path (also where the limited hip refuses the spin that faces the bend to
    the rest side, 32 of these 60) and through every single-target entry point with the
    same numbers."""
    chain = _knee((0.45, 0.42), 0.1, root)
    rng = np.random.default_rng(7)
    targets = kinematics.effector(chain, admissible_poses(rng, chain, 60))
    fast = 0
    for target in targets:
        fast += _uses_float_path(chain, target)
        one = solve_one(chain, target)
        assert np.linalg.norm(one.positions[0, -1] - target) <= 1e-6 * chain.reach
        rotations, positions = solve_floats(chain, target.tolist())
        np.testing.assert_array_equal(np.array(rotations), one.rotations[0])
        np.testing.assert_array_equal(np.array(positions), one.positions[0])
        points = solve_points(chain, target.tolist())
        np.testing.assert_array_equal(np.array(points), one.positions[0])
    assert fast == len(targets)


@pytest.mark.parametrize("seed", range(6))
def test_float_pass_with_projected_joints_equals_the_batch_pass(seed: int) -> None:
    """The pass itself, joints projected onto their limits as they are placed (a limited
    root among them): the float pass equals the batch pass row by row, with poles, start
    poses, δb and bend-plane options."""
    rng = np.random.default_rng(100 + seed)
    chain = _chain(rng)
    size, n = 200, chain.n_joints
    targets = rng.normal(size=(size, 3)) * 0.7 * chain.reach
    initial = rot.normalize(rng.normal(size=(size, n, 4))) if seed % 2 else None
    poles = rng.normal(size=(size, 3)) * chain.reach if seed % 3 == 0 else None
    options = SolveOptions(
        delta_b_deg=(180.0, 90.0)[seed % 2], bend_plane=("rest", "minimal")[(seed // 2) % 2]
    )
    start = np.broadcast_to(rot.identity((n,)), (size, n, 4)) if initial is None else initial
    problem = Problem(chain, targets, None, poles, start, 1e-6 * chain.reach, options)
    plan = triangulation_plan._plan(chain)
    assert "project" in plan.kinds
    rotations, positions = tri._solve_batch(problem, plan)
    for k in range(size):
        rot_k, pos_k = triangulation_single._solve_single(problem.rows(slice(k, k + 1)), plan)
        np.testing.assert_allclose(positions[k], pos_k[0], rtol=0, atol=1e-12 * chain.reach)
        np.testing.assert_allclose(rotations[k], rot_k[0], rtol=0, atol=1e-12)


def test_a_straight_knee_given_in_single_precision_is_placed_in_closed_form() -> None:
    """Targets of a leg whose knee sits at the end of its range (straight at 0°), rounded to
    single precision as Blender's locations are: the hinge angle the distance gives lies
    ~1e-7 rad outside the range, within what the tolerance allows; the closed form places
    the knee at its end (float path and reference alike) instead of searching."""
    chain = _knee((0.45, 0.42), 0.1, JointLimits())
    rng = np.random.default_rng(5)
    poses = admissible_poses(rng, chain, 30)
    poses[:, 1] = [1.0, 0.0, 0.0, 0.0]  # the knee at the end of its range
    targets = kinematics.effector(chain, poses).astype(np.float32).astype(np.float64)
    tol = 1e-6 * chain.reach
    for target in targets:
        assert _uses_float_path(chain, target)
        one = solve_one(chain, target)
        assert np.linalg.norm(one.positions[0, -1] - target) <= tol
        ref = solve(chain, np.stack([target, target]))
        _same_rotations(one.rotations[0], ref.rotations[0], 1e-9)


SEEDED = ("ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls")


def _shoulder_arm() -> Chain:
    """Three links: a shoulder and a wrist with Blender's *Limit X*/*Limit Z* (X in
    −60°–80°, Z in −40°–40°) about a knee-like elbow: the last joint is no hinge, so no
    closed form places it and triangulation within the limits searches."""
    ball = JointLimits(ranges=((math.radians(-60), math.radians(80)), None, (-0.7, 0.7)))
    offsets = [[0.0, -math.sin(0.1 * i) / 3, math.cos(0.1 * i) / 3] for i in range(3)]
    return Chain.from_offsets(np.array(offsets), limits=[ball, KNEE, ball])


@pytest.mark.parametrize("limb", ["knee", "shoulder"])
@pytest.mark.parametrize("method", SEEDED)
def test_seeded_methods_answer_with_triangulation_within_limits_where_it_meets(
    method: str, limb: str
) -> None:
    """CCD and the Jacobian methods (default triangulation start) on a knee chain and on a
    shoulder–elbow–wrist chain (where triangulation searches): where triangulation within
    the limits meets a target, it is their answer with no update, one target at a time
    and in a batch alike; with a stiff joint (which triangulation ignores) or from the
    given start they iterate instead. Oracle: triangulation's own answer and the targets
    (admissible poses)."""
    chain = _knee((0.45, 0.42), 0.1, JointLimits()) if limb == "knee" else _shoulder_arm()
    rng = np.random.default_rng(9)
    targets = kinematics.effector(chain, admissible_poses(rng, chain, 12))
    batch = solve(chain, targets, method=method)
    searched = 0
    for k, target in enumerate(targets):
        problem = Problem(
            chain,
            target[None],
            None,
            None,
            rot.identity((1, 3 if limb != "knee" else 2)),
            1e-6 * chain.reach,
            SolveOptions(),
        )
        searched += not tls.meeting_one(problem)[1]  # type: ignore[index]
        tri_pose = solve_one(chain, target)
        assert np.linalg.norm(tri_pose.positions[0, -1] - target) <= 1e-6 * chain.reach
        one = solve_one(chain, target, method=method)
        assert one.iterations[0] == 0
        _same_rotations(one.rotations[0], tri_pose.rotations[0], 1e-9)
        _same_rotations(batch.rotations[k], tri_pose.rotations[0], 1e-7)
        assert batch.iterations[k] == 0
    start = {"ccd_start": "initial"} if method == "ccd" else {"jacobian_start": "initial"}
    given = solve(chain, targets, method=method, **start)  # type: ignore[arg-type]
    assert np.all(given.iterations > 0)
    # Not vacuous on the shoulder chain: the closed forms miss most of these targets.
    assert searched >= (6 if limb == "shoulder" else 0)


@pytest.mark.parametrize("method", SEEDED)
def test_stiffness_and_posture_keep_the_seeded_methods_off_triangulation_within_limits(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Triangulation ignores stiffness and a posture bias, so with either the seeded
    methods do not ask it for their answer (as on free chains)."""
    calls: list[int] = []
    real = tls.reaching_one

    def spy(problem: Problem) -> object:
        calls.append(problem.size)
        return real(problem)

    # (every one-target route asks reaching_one: CCD's seed directly, the others through
    # reaching)
    monkeypatch.setattr(tls, "reaching_one", spy)
    chain = _knee((0.45, 0.42), 0.1, JointLimits())
    stiff = chain.with_limits([JointLimits(stiffness=(0.5, 0.0, 0.0)), KNEE])
    target = kinematics.effector(chain, admissible_poses(np.random.default_rng(2), chain, 1))[0]
    solve_one(chain, target, method=method)
    assert calls  # (the spy sees the default route)
    calls.clear()
    solve_one(stiff, target, method=method)
    solve_one(chain, target, method=method, options=SolveOptions(posture_weight=0.1))
    assert not calls


@pytest.mark.parametrize("kind", ["ellipse", "one_sided", "rest_excluding"])
def test_the_allowed_spins_edge_is_found_to_its_width(kind: str) -> None:
    """``spin_edge`` between an allowed sample and a refused neighbour (random joints, aims
    and target directions): the spin it gives is allowed, a spin refused (with no slack)
    lies within
    :data:`~core.triangulation_limits.SPIN_WIDTH` of the bracket beyond it (the oracle: 33
    spins there), in a handful of evaluations of the margin where bisection takes 24; the
    float twin gives the same spin to 1e-12."""
    rng = np.random.default_rng(4)
    spins = np.linspace(-np.pi, np.pi, tl.SPINS, endpoint=False)
    step = spins[1] - spins[0]
    evaluations: list[int] = []
    for _ in range(120):
        lim = random_limits(rng, kind)
        aim = rot.normalize(rng.normal(size=4))
        axis = rot.normalize(rng.normal(size=3))
        turned = rot.multiply(np.concatenate(([0.0], axis)), aim)
        allowed = lim.allows(tl.spin_rotation(aim, turned, spins), 1e-12)
        edges = np.flatnonzero(allowed & ~np.roll(allowed, -1))
        if edges.size == 0:
            continue
        start = float(spins[edges[0]])
        gap = rng.uniform(0.05, 1.0) * step  # (toward the refused neighbour, or short of it)
        if lim.allows(tl.spin_rotation(aim, turned, start + gap), 1e-12):
            gap = step

        def beyond(
            s: np.ndarray,
            lim: JointLimits = lim,
            spun: tuple[np.ndarray, np.ndarray, float, float] = (aim, turned, start, gap),
        ) -> np.ndarray:
            evaluations[-1] += 1
            a, t, first, along = spun
            return lim.beyond(tl.spin_rotation(a[None], t[None], first + s * along))

        evaluations.append(0)
        edge = float(tl.spin_edge(beyond, 1)[0])
        picked = tl.spin_rotation(aim, turned, start + edge * gap)
        assert lim.allows(picked, 1e-12)
        past = start + (edge + np.linspace(0.0, tl.SPIN_WIDTH, 33)[1:]) * gap
        assert not lim.allows(tl.spin_rotation(aim, turned, past), 0.0).all()
        one = tls.spin_edge(lim, tuple(aim.tolist()), tuple(turned.tolist()), start, gap)
        np.testing.assert_allclose(one, picked, atol=1e-12)
    assert len(evaluations) >= 40
    assert np.mean(evaluations) <= 12.0, np.mean(evaluations)


@pytest.mark.parametrize("kind", ["ellipse", "one_sided", "rest_excluding"])
def test_refused_spin_turns_to_the_nearest_allowed_one(kind: str) -> None:
    """Where the joint before a hinge refuses the spin about the target direction that
    faces the bend to the wanted side, the spin chosen instead (the batch's
    ``_spin_toward`` and the float ``_allowed_spin``, the same to 1e-12) is allowed and
    faces that side at least as well as every allowed spin of a sampling 80× finer (the
    oracle), wherever the allowed stretch the oracle finds is wider than the coarse
    samples' spacing."""
    rng = np.random.default_rng(11)
    fine = np.linspace(-np.pi, np.pi, 80 * tl.SPINS, endpoint=False)
    checked = 0
    for _ in range(60):
        lim = random_limits(rng, kind)
        aim = rot.normalize(rng.normal(size=(1, 4)))
        axis = rot.normalize(rng.normal(size=(1, 3)))
        hinge_axis = rot.normalize(rng.normal(size=(1, 3)))
        side = rng.normal(size=(1, 3))
        sign = np.array([rng.choice([-1.0, 1.0])])
        picked = tl._spin_toward(lim, aim, axis, hinge_axis, sign, side)[0]
        # ψ*, the spin that faces the side best (the function's docstring).
        u = sign[0] * np.cross(axis[0], hinge_axis[0])
        psi = math.atan2(float(np.cross(axis[0], u) @ side[0]), float(u @ side[0]))
        turned = rot.multiply(np.concatenate(([0.0], axis[0])), aim[0])
        if lim.allows(tl.spin_rotation(aim[0], turned, psi), 1e-12):
            np.testing.assert_allclose(picked, tl.spin_rotation(aim[0], turned, psi), atol=1e-15)
            continue
        one = tls._allowed_spin(lim, tuple(aim[0]), tuple(turned), psi)
        assert (one is None) == np.isnan(picked).all()
        if one is not None:
            np.testing.assert_allclose(np.array(one), picked, atol=1e-12)
            assert lim.allows(picked, 1e-12)
        allowed = lim.allows(tl.spin_rotation(aim[0], turned, fine), 1e-12)
        if not allowed.any():
            assert one is None
            continue
        # The oracle's nearest allowed spin, and the width of its allowed stretch.
        gap = np.abs(np.remainder(fine - psi + np.pi, 2 * np.pi) - np.pi)
        best = int(np.argmin(np.where(allowed, gap, np.inf)))
        width = 1
        while width < len(fine) and allowed[(best + width) % len(fine)]:
            width += 1
        while width < len(fine) and allowed[(best - 1) % len(fine)]:
            best, width = best - 1, width + 1
        if width <= 80:
            continue
        checked += 1
        # Facing the side best means the least angle from ψ* (docstring).
        assert one is not None
        got = rot.multiply(picked, rot.conjugate(aim[0]))  # R(ĉ, ψ) of the pick
        got_psi = 2.0 * math.atan2(float(got[1:] @ axis[0]), float(got[0]))
        oracle = float(np.max(np.where(allowed, np.cos(fine - psi), -2.0)))
        assert math.cos(got_psi - psi) >= oracle
    assert checked >= 10


def _walk_every_sample(lim: JointLimits, aim: Quat, turned: Quat, psi: float) -> Quat | None:
    """The oracle of the walk in ``_allowed_spin``: every sample tested in turn outward
    from ``psi`` (down the circle first on a tie) by ``allows_floats``, then the same
    edge (``spin_edge``)."""
    samples, count = tls._SAMPLES, len(tls._SAMPLES)
    step = 2.0 * math.pi / count

    def gap(k: int) -> float:
        return (psi - samples[k] + math.pi) % (2.0 * math.pi) - math.pi

    def allowed(spin: float) -> bool:
        return lim.allows_floats(tls._spin(aim, turned, spin), 1e-12)

    down = int((psi + math.pi) // step) % count
    up = (down + 1) % count
    for _ in range(count):
        if abs(gap(down)) <= abs(gap(up)):
            k, down = down, (down - 1) % count
        else:
            k, up = up, (up + 1) % count
        if allowed(samples[k]):
            break
    else:
        return None
    start, width = samples[k], gap(k)
    return tls.spin_edge(lim, aim, turned, start, math.copysign(min(abs(width), step), width))


@pytest.mark.parametrize("kind", ["ellipse", "one_sided", "rest_excluding"])
def test_the_walk_to_an_allowed_spin_passes_over_refused_samples_only(kind: str) -> None:
    """``_allowed_spin`` passes over the samples next to a refused one that its swing's
    distance outside the region rules out (``_ruled_out``); its spin is, bit for bit, the
    one of the walk that tests every sample (``_walk_every_sample``), on random spins of
    random joints — the ones whose nearest allowed sample lies far round the circle, and
    the ones with none, included — and it does pass over samples (a free twist)."""
    rng = np.random.default_rng(5)
    passed = 0
    real = tls._ruled_out

    def counted(*args: float) -> int:
        nonlocal passed
        out = real(*args)
        passed += out
        return out

    with mock.patch.object(tls, "_ruled_out", counted):
        for _ in range(150):
            lim = random_limits(rng, kind)
            a0, a1, a2, a3 = rot.normalize(rng.normal(size=4)).tolist()
            aim = (a0, a1, a2, a3)
            axis = rot.normalize(rng.normal(size=3))
            t0, t1, t2, t3 = rot.multiply(np.concatenate(([0.0], axis)), aim).tolist()
            turned = (t0, t1, t2, t3)
            psi = float(rng.uniform(-math.pi, math.pi))
            assert tls._allowed_spin(lim, aim, turned, psi) == _walk_every_sample(
                lim, aim, turned, psi
            )
    assert (passed > 100) == (kind != "rest_excluding")  # (a twist range: no bound)


@pytest.mark.parametrize("method", SEEDED)
def test_a_seed_that_misses_is_not_searched_again_by_the_fallback(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where triangulation within the limits misses (a target within the chain's length
    that the limits keep out of reach), the seeded methods' fallback asks it again for the
    same target: the answer is memoised on its exact inputs, so its search runs once per
    solve — and asking again gives the same pose."""
    chain = _shoulder_arm()
    calls: list[int] = []
    real = tls.search

    def spy(*args: object) -> object:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(tls, "search", spy)
    target = np.array([0.0, 0.6, -0.5]) * chain.reach  # behind the shoulder's limits
    first = solve_one(chain, target, method=method)
    assert np.linalg.norm(first.positions[0, -1] - target) > 1e-3 * chain.reach
    assert len(calls) == 1
    again = solve_one(chain, target, method=method)
    np.testing.assert_array_equal(again.rotations, first.rotations)
    assert len(calls) == 1


def _hinged(n: int) -> Chain:
    """``bench_solvers``' hinge chain: ``n`` links gently curved, odd joints knees."""
    offsets = [[0.0, -math.sin(0.1 * i) / n, math.cos(0.1 * i) / n] for i in range(n)]
    return Chain.from_offsets(offsets, limits=[KNEE if i % 2 else FREE for i in range(n)])


@pytest.mark.parametrize("n", [3, 5, 10])
def test_the_even_spread_is_the_pass_of_a_limited_chain(n: int) -> None:
    """With ``distribution="even"`` a limited chain of three or more links starts from the
    even spread aimed within the limits (FABRIK's seed): on ``bench_solvers``' hinge chains
    it meets every target at an admissible pose, so nothing is searched; the pose is the
    seed's (``fabrik_floats`` with no rounds; where the chain ends in a hinge, the last two
    joints placed in closed form from it, as from the pass), within the limits; a batch
    gives each target
    that pose bit for bit; CCD and the Jacobian methods take it with no iteration. With
    ``"root"`` the pass misses most of these targets and the search runs."""
    from core import fabrik_single
    from core import triangulation_refine_single as trs

    chain = _hinged(n)
    rng = np.random.default_rng(5)
    targets = kinematics.effector(chain, admissible_poses(rng, chain, 12))
    even = SolveOptions(distribution="even")
    tol = 1e-6 * chain.reach
    with mock.patch.object(tls, "search", wraps=trs.search) as searched:
        alone = [solve_one(chain, t, options=even) for t in targets]
    assert searched.call_count == 0
    batch = solve(chain, targets, options=even)
    for k, (t, one) in enumerate(zip(targets, alone, strict=True)):
        seed, points, _ = fabrik_single.fabrik_floats(
            chain, tuple(t.tolist()), None, even, tol, rounds=0
        )
        assert seed is not None
        kept = n - 2 if tl.ends_in_hinge(chain) else n
        np.testing.assert_array_equal(one.rotations[0, :kept], np.array(seed)[:kept])
        np.testing.assert_allclose(
            one.positions[0, : kept + 1], np.array(points)[: kept + 1], rtol=0, atol=1e-12
        )
        assert np.linalg.norm(one.positions[0, -1] - t) <= tol
        for i, lim in enumerate(chain.limits):
            assert lim.violation(one.rotations[0, i]) <= 1e-9
        np.testing.assert_array_equal(batch.rotations[k], one.rotations[0])
    for method in ("ccd", "jacobian_pinv", "jacobian_dls"):
        res = solve(chain, targets, method=method, options=even)
        assert not np.any(res.iterations), method
        np.testing.assert_allclose(res.positions, batch.positions, rtol=0, atol=1e-12)
    with mock.patch.object(tls, "search", wraps=trs.search) as searched:
        for t in targets:
            solve_one(chain, t, options=SolveOptions(distribution="root"))
    assert searched.call_count >= len(targets) // 2


def test_a_two_bone_limb_is_placed_without_the_pass() -> None:
    """On a two-bone limb (a shoulder with *Limit X*/*Limit Z*, then an elbow) the closed
    form reads nothing of the pass where the wanted bend side decides its spin: every
    target at an admissible pose is met without making the pass, within the limits; with
    the bend plane ``"minimal"`` (no wanted side) the pass is made."""
    ball = JointLimits(ranges=((math.radians(-60), math.radians(80)), None, (-0.7, 0.7)))
    chain = Chain.from_offsets([[0.0, 0.0, 0.5], [0.0, -0.05, 0.5]], limits=[ball, KNEE])
    rng = np.random.default_rng(9)
    targets = kinematics.effector(chain, admissible_poses(rng, chain, 20))
    with mock.patch.object(tls, "_pass_pose", wraps=tls._pass_pose) as passes:
        for t in targets:
            one = solve_one(chain, t)
            assert np.linalg.norm(one.positions[0, -1] - t) <= 1e-6 * chain.reach
            for i, lim in enumerate(chain.limits):
                assert lim.violation(one.rotations[0, i]) <= 1e-9
    assert passes.call_count == 0
    with mock.patch.object(tls, "_pass_pose", wraps=tls._pass_pose) as passes:
        solve_one(chain, targets[0], options=SolveOptions(bend_plane="minimal"))
    assert passes.call_count == 1


def test_a_two_bone_limb_that_misses_places_its_hinge_once() -> None:
    """Where the closed form placed by the wanted side misses (the target's direction
    outside the shoulder's limits, or the hinge's range), the pass is made but the hinge
    is not placed again from the pass's pose (that placement reads nothing of it): on
    targets anywhere within the limb's length, a third or more of them missed. With the
    bend plane ``"minimal"`` (no wanted side) the placement is made from the pass."""
    ball = JointLimits(ranges=((math.radians(-60), math.radians(80)), None, (-0.7, 0.7)))
    chain = Chain.from_offsets([[0.0, 0.0, 0.5], [0.0, -0.05, 0.5]], limits=[ball, KNEE])
    targets = anywhere_within(np.random.default_rng(12), chain, 60)
    passes: list[object] = []

    def made(*args: Any) -> Any:
        out = real_pass(*args)
        passes.append(out[0])
        return out

    def placed_from_pass(calls: mock.Mock, target: np.ndarray) -> int:
        """Placements of the hinge at ``target`` from a pose the pass made (other steps
        place it at other points: the hinge's extents)."""
        goal = tuple(target.tolist())
        return sum(
            c.args[3] == goal and any(c.args[2] is p for p in passes) for c in calls.call_args_list
        )

    real_pass = tls._pass_pose
    missed = 0
    with (
        mock.patch.object(tls, "_pass_pose", made),
        mock.patch.object(tls, "_hinge_last", wraps=tls._hinge_last) as placed,
    ):
        for t in targets:
            one = solve_one(chain, t)
            missed += bool(np.linalg.norm(one.positions[0, -1] - t) > 1e-6 * chain.reach)
            assert placed_from_pass(placed, t) == 0
        assert missed >= 20
        assert len(passes) >= missed
        solve_one(chain, targets[0], options=SolveOptions(bend_plane="minimal"))
        assert placed_from_pass(placed, targets[0]) == 1


def test_a_hinge_before_the_last_hinge_is_not_sampled_for_a_spin() -> None:
    """A hinge's rotations meet the circle of spins about the target direction at isolated
    points; the one the samples meet is ``ψ = 0`` (the aim itself, where the target lies in
    the hinge's plane), so neither path samples a hinge: ``_spin_toward`` gives the aim
    where the hinge allows it, else none. On a hind leg of two free hinges
    (``bench_natural``'s ``hind_leg_hinges``) following its loop, the float path samples
    nothing, meets every target, and both hinges bend the way they bend at rest on every
    frame (taking no spin at all instead turned them over on all 240 frames)."""
    from test_limited_leg import POINTS, _path

    hinge = JointLimits(lock=(False, True, True))
    chain = Chain.from_offsets(np.diff(POINTS, axis=0), limits=[FREE, hinge, hinge])
    targets = _path(chain.reach)
    options = SolveOptions(distribution="even", bend_plane="rest")
    with mock.patch.object(tls, "_allowed_spin", wraps=tls._allowed_spin) as sampled:
        poses = [solve_one(chain, t, options=options) for t in targets]
    assert sampled.call_count == 0
    x = np.array([1.0, 0.0, 0.0])

    def bends(rotations: np.ndarray) -> np.ndarray:
        """Signed bends of joints 1 and 2 from the link before, about their own X axes."""
        world = kinematics.forward_kinematics(chain, rotations)[1][0]
        links = rot.rotate(world, [0.0, 1.0, 0.0])
        return np.array(
            [np.cross(links[k - 1], links[k]) @ rot.rotate(world[k], x) for k in (1, 2)]
        )

    rest = np.sign(bends(rot.identity((1, 3))))
    assert np.all(rest != 0.0)
    for t, one in zip(targets, poses, strict=True):
        assert np.linalg.norm(one.positions[0, -1] - t) <= 1e-6 * chain.reach
        np.testing.assert_array_equal(np.sign(bends(one.rotations)), rest)
    rng = np.random.default_rng(3)
    aim = np.concatenate(
        [rot.from_axis_angle(x, rng.uniform(-2.0, 2.0, 4)), rot.normalize(rng.normal(size=(4, 4)))]
    )
    axis = rot.normalize(rng.normal(size=(8, 3)))
    picked = tl._spin_toward(hinge, aim, axis, axis[::-1], np.ones(8), rng.normal(size=(8, 3)))
    np.testing.assert_array_equal(picked[:4], aim[:4])
    assert np.isnan(picked[4:]).all()
