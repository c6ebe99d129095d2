# SPDX-License-Identifier: GPL-3.0-or-later
"""The closest admissible pose of a shoulder and elbow (:mod:`core.limb_closest`).

Oracles: forward kinematics and the limits themselves (the pose is admissible and its
effector is where it says), a dense random sample of admissible poses (none comes closer),
the search it replaces (:func:`core.triangulation_limits.reach_within_limits` with the closed
form switched off: never closer), and the numpy twin (the same poses as the float path).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core import (
    Chain,
    SolveOptions,
    Solver,
    kinematics,
    solve,
    triangulation,
    triangulation_limits,
    triangulation_limits_single,
)
from core import limb_closest as lc
from core import solver as solver_module
from core.limits import JointLimits
from core.result import IKResult
from tests.core.limited_chains import admissible_poses, random_limits, shoulder_chain

SHOULDER = JointLimits(ranges=((math.radians(-60), math.radians(80)), None, (-0.7, 0.7)))
ELBOW = JointLimits(lock=(False, True, True), ranges=((0.0, math.radians(150)), None, None))
#: A knee that never straightens: X in 0.5–2.6 rad.
BENT_KNEE = JointLimits(lock=(False, True, True), ranges=((0.5, 2.6), None, None))


def _limb(rng: np.random.Generator) -> Chain:
    """A random two-joint limb: a cone, Blender-ellipse, one-sided X or stiff cone ball
    joint with a free twist at the root; a hinge (two locks, or an explicit axis) after it;
    a straight or bent rest pose pointing anywhere."""
    while True:
        root = random_limits(rng, str(rng.choice(["cone", "ellipse", "one_sided", "stiff"])))
        if not root.is_free:  # (a stiff joint without a cone is free)
            break
    hinge = random_limits(rng, "hinge")
    if rng.random() < 0.3:
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        lo, hi = float(rng.uniform(-1.0, 0.3)), float(rng.uniform(0.5, 2.8))
        hinge = JointLimits(hinge_axis=(axis[0], axis[1], axis[2]), hinge_range=(lo, hi))
    lengths = rng.uniform(0.4, 1.6, 2)
    if rng.random() < 0.5:
        return Chain.from_lengths(lengths, rng.normal(size=3), limits=[root, hinge])
    links = rng.normal(size=(2, 3))
    links *= (lengths / np.linalg.norm(links, axis=-1))[:, None]
    return Chain.from_offsets(links, limits=[root, hinge])


def _directions(
    rng: np.random.Generator, chain: Chain, size: int, spread: tuple[float, float]
) -> np.ndarray:
    """``(size, 3)`` targets in random directions at ``spread`` of the chain's length."""
    d = rng.normal(size=(size, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    return d * rng.uniform(*spread, size=(size, 1)) * chain.reach


def test_which_chains_are_limbs() -> None:
    assert lc.applies(shoulder_chain(2))
    assert not lc.applies(shoulder_chain(3))  # three joints
    free_root = Chain.from_lengths([0.5, 0.5], limits=[JointLimits(), ELBOW])
    assert not lc.applies(free_root)  # (nothing keeps a free root from any direction)
    twist = JointLimits(ranges=((-1.0, 1.0), (-0.5, 0.5), None))
    assert not lc.applies(Chain.from_lengths([0.5, 0.5], limits=[twist, ELBOW]))
    assert not lc.applies(Chain.from_lengths([0.5, 0.5], limits=[SHOULDER, SHOULDER]))


@pytest.mark.parametrize("seed", range(4))
def test_no_admissible_pose_comes_closer(seed: int) -> None:
    """On random limbs, for targets anywhere (0.1–1.3 of the length): where the closed form
    answers, its pose is admissible, its positions are its forward kinematics, and none of
    20,000 random admissible poses comes closer to the target (by more than 1e-9 of the
    reach). It answers only targets no admissible pose reaches."""
    rng = np.random.default_rng(seed)
    answered = 0
    for _ in range(8):
        chain = _limb(rng)
        assert lc.applies(chain)
        poses = admissible_poses(rng, chain, 20_000)
        ends = kinematics.effector(chain, poses)
        for target in _directions(rng, chain, 8, (0.1, 1.3)):
            out = lc.closest_floats(chain, (target[0], target[1], target[2]))
            if out is None:
                continue
            answered += 1
            rotations = np.array(out[0], dtype=np.float64)
            positions = np.array(out[1], dtype=np.float64)
            for lim, q in zip(chain.limits, rotations, strict=True):
                assert float(lim.violation(q)) <= 1e-9
            fk, _ = kinematics.forward_kinematics(chain, rotations[None])
            np.testing.assert_allclose(positions, fk[0], atol=1e-12 * chain.reach)
            error = float(np.linalg.norm(positions[-1] - target))
            sampled = float(np.min(np.linalg.norm(ends - target, axis=-1)))
            assert error <= sampled + 1e-9 * chain.reach
            assert error > 1e-6 * chain.reach
    assert answered >= 10


def test_targets_an_admissible_pose_reaches_get_no_answer() -> None:
    """The forward kinematics of admissible poses: the closest poses reach, a family the
    search chooses from (``None``)."""
    rng = np.random.default_rng(5)
    for _ in range(6):
        chain = _limb(rng)
        targets = kinematics.effector(chain, admissible_poses(rng, chain, 10))
        for t in targets:
            assert lc.closest_floats(chain, (t[0], t[1], t[2])) is None


@pytest.mark.parametrize("seed", range(3))
def test_the_batch_gives_the_float_poses(seed: int) -> None:
    """:func:`closest` (numpy, the bake's path) gives :func:`closest_floats`' poses (the
    live path) to 1e-12, and answers the same targets."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(5):
        chain = _limb(rng)
        targets = _directions(rng, chain, 40, (0.1, 1.3))
        out = lc.closest(chain, targets)
        assert out is not None
        rotations, positions, answered = out
        for k, t in enumerate(targets):
            one = lc.closest_floats(chain, (t[0], t[1], t[2]))
            assert (one is not None) == bool(answered[k])
            if one is not None:
                np.testing.assert_allclose(rotations[k], np.array(one[0]), atol=1e-12)
                np.testing.assert_allclose(positions[k], np.array(one[1]), atol=1e-12)


def _searched(monkeypatch: pytest.MonkeyPatch, chain: Chain, targets: np.ndarray) -> IKResult:
    """The triangulation search's answers with the closed form switched off."""
    with monkeypatch.context() as m:
        m.setattr(triangulation_limits, "closest", lambda chain, targets: None)
        m.setattr(triangulation_limits_single, "closest_floats", lambda chain, target: None)
        triangulation_limits_single._searched.clear()
        return solve(chain, targets, method="triangulation")


def test_the_limb_is_never_farther_than_the_search_it_replaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``bench_solvers``' shoulder and elbow and random limbs, targets anywhere: the batch
    and the one-target path answer with the same effector (to 1e-9 of the reach where the
    closed form answers), never farther than the search without it, and materially closer
    on some targets (the search's candidates and restarts miss the closest pose)."""
    rng = np.random.default_rng(9)
    closer = 0
    for chain in [shoulder_chain(2)] + [_limb(rng) for _ in range(5)]:
        targets = _directions(rng, chain, 30, (0.1, 1.3))
        before = _searched(monkeypatch, chain, targets)
        triangulation_limits_single._searched.clear()
        now = solve(chain, targets, method="triangulation")
        solver = Solver(chain, "triangulation", SolveOptions())
        tol = 1e-6 * chain.reach
        for k, t in enumerate(targets):
            e_before = float(np.linalg.norm(before.positions[k, -1] - t))
            e_now = float(np.linalg.norm(now.positions[k, -1] - t))
            assert e_now <= e_before + 1e-12 * chain.reach
            closer += e_now < e_before - 1e-4 * chain.reach
            one = solver.solve_one((t[0], t[1], t[2]))
            if lc.closest_floats(chain, (t[0], t[1], t[2])) is not None and e_now > tol:
                np.testing.assert_allclose(
                    one[1][-1], now.positions[k, -1], atol=1e-9 * chain.reach
                )
    assert closer >= 5


NEAR_AXIS = [(0.0, 0.02, 0.5), (0.05, 0.0, 0.3), (0.0, -0.05, 0.8), (0.01, 0.01, 0.1)]


def test_where_the_closest_pose_applies_nothing_is_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Wherever the limits keep the target's direction from the hand, triangulation
    answers with the closest pose, with neither the search nor the refinement of a far
    target — also where the pass's pose comes as close to rounding (until 0.8.1 that pose
    was refined, some 10 ms, on ~1 % of these targets) — and its error is the closest
    pose's to 1e-6 of the reach (the tolerance); the numpy reference answers with its own
    closest pose alike."""
    rng = np.random.default_rng(1)
    applied = 0
    monkeypatch.setattr(triangulation_limits_single, "search", _refused)
    monkeypatch.setattr(triangulation_limits_single, "refine_far", _refused)
    for _ in range(40):
        chain = _limb(rng)
        solver = Solver(chain, "triangulation", SolveOptions())
        for t in _directions(rng, chain, 30, (0.1, 1.3)):
            target = (float(t[0]), float(t[1]), float(t[2]))
            closest = lc.closest_floats(chain, target)
            if closest is None or math.dist(closest[1][-1], target) <= 1e-6 * chain.reach:
                continue
            triangulation_limits_single._searched.clear()
            pose = solver.pose(target)
            error = math.dist(pose.points[-1], target)
            assert error == pytest.approx(math.dist(closest[1][-1], target), abs=1e-6 * chain.reach)
            reference = lc.closest(chain, np.array([target]))
            assert reference is not None
            if reference[2][0]:  # (a target on the edge of the cones may be one twin's alone)
                with monkeypatch.context() as m:  # (the numpy reference: its float path off)
                    m.setattr(triangulation, "_limited_single", lambda problem: None)
                    batch = solve(chain, np.array([target]), method="triangulation")
                np.testing.assert_allclose(batch.rotations[0], reference[0][0], atol=1e-12)
            applied += 1
    assert applied >= 300


@pytest.mark.parametrize("target", NEAR_AXIS)
def test_a_limb_bent_wider_than_its_root_turns_takes_the_farthest_axis(
    target: tuple[float, float, float],
) -> None:
    """A narrow cone (0.3 rad) before an elbow that is always bent (1.5–2.5 rad): the hand
    stays off the root's rest axis (+Z) by more than the cone allows the arm to turn
    (``α > B``), so for a target near that axis the closest pose turns the upper arm away
    from the target, to the allowed axis farthest from it. No admissible pose of 50,000
    comes closer."""
    root = JointLimits(cone=0.3)
    elbow = JointLimits(lock=(False, True, True), ranges=((1.5, 2.5), None, None))
    chain = Chain.from_lengths([0.6, 0.5], limits=[root, elbow])
    out = lc.closest_floats(chain, target)
    assert out is not None
    error = math.dist(out[1][-1], target)
    ends = kinematics.effector(chain, admissible_poses(np.random.default_rng(0), chain, 50_000))
    assert error <= float(np.min(np.linalg.norm(ends - np.array(target), axis=-1)))
    # the upper arm at the cone's edge, turned away from the target about the rest axis
    arm = kinematics.forward_kinematics(chain, np.array([out[0]]))[0][0, 1]
    rest = kinematics.forward_kinematics(chain, np.array([[[1.0, 0, 0, 0]] * 2]))[0][0, 1]
    arm, rest = arm / np.linalg.norm(arm), rest / np.linalg.norm(rest)
    assert math.acos(min(1.0, float(arm @ rest))) == pytest.approx(0.3, abs=1e-9)
    t = np.array(target)
    assert float((arm - rest) @ (t - (t @ rest) * rest)) <= 1e-12


@pytest.mark.parametrize(
    "method", ["ccd", "jacobian_transpose", "jacobian_pinv", "jacobian_dls", "fabrik"]
)
def test_the_other_methods_skip_their_iteration_for_the_closest_pose(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CCD, the Jacobian methods and FABRIK fall back to triangulation's pose for a missed
    target unless theirs is materially closer: where that pose is the limb's closest (a
    shoulder keeping the hand from the target's direction, or a knee that cannot fold as
    near as the target or stretch as far: ``Solver.pose``, the live path), they answer
    with it without iterating, and with the pose their iteration and fallback give
    (rotations to 1e-15, positions to 1e-12: CCD's are its own forward kinematics)."""
    shoulder = shoulder_chain(2)
    knee = Chain.from_lengths([0.5, 0.45], limits=[JointLimits(), ELBOW])
    bent = Chain.from_lengths([0.5, 0.45], limits=[JointLimits(), BENT_KNEE])
    rng = np.random.default_rng(21)
    cases = [(shoulder, t) for t in _directions(rng, shoulder, 30, (0.1, 1.3))]
    cases += [(knee, t) for t in _directions(rng, knee, 10, (0.02, 0.2))]  # (nearer than it folds)
    cases += [(bent, t) for t in _directions(rng, bent, 10, (0.975, 1.2))]  # (farther: stretched)
    skipped = 0
    for chain, t in cases:
        solver = Solver(chain, method, SolveOptions(distribution="even"))
        target = (float(t[0]), float(t[1]), float(t[2]))
        closest = lc.closest_floats(chain, target)
        if chain is shoulder and (
            closest is None or math.dist(closest[1][-1], target) <= 1e-6 * chain.reach
        ):
            continue
        triangulation_limits_single._searched.clear()
        with monkeypatch.context() as m:
            m.setattr(solver_module, "_one", _refused)
            m.setattr(solver_module.fabrik, "solve_floats", _refused)
            fast = solver.pose(target)
        triangulation_limits_single._searched.clear()
        with monkeypatch.context() as m:
            m.setattr(solver_module, "_closest", lambda *args: False)
            iterated = solver.pose(target)
        np.testing.assert_allclose(fast.rotations, iterated.rotations, rtol=0, atol=1e-15)
        np.testing.assert_allclose(fast.points, iterated.points, rtol=0, atol=1e-12)
        skipped += 1
    assert skipped >= 28


def _refused(*args: object) -> None:
    raise AssertionError("the method iterated")


def test_fabrik_takes_the_closed_form_of_a_limb_it_would_take(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FABRIK on a two-bone limb answers a target triangulation's closed form meets with
    that pose (``core.fabrik._two_bone_limb``): the one-target path takes it from
    triangulation without running FABRIK, the same rotations bit for bit, with and without
    a pole, either bend distribution, on random limbs at admissible poses' targets and
    anywhere."""
    rng = np.random.default_rng(33)
    compared = 0
    for _ in range(4):
        chain = _limb(rng)
        targets = np.concatenate(
            [
                kinematics.effector(chain, admissible_poses(rng, chain, 12)),
                _directions(rng, chain, 12, (0.1, 1.3)),
            ]
        )
        for pole, options in itertools.product(
            (None, (0.3, 0.2, 0.5)), (SolveOptions(distribution="even"), SolveOptions())
        ):
            solver = Solver(chain, "fabrik", options)
            for t in targets:
                target = (float(t[0]), float(t[1]), float(t[2]))
                triangulation_limits_single._searched.clear()
                fast = solver.pose(target, pole)
                triangulation_limits_single._searched.clear()
                with monkeypatch.context() as m:
                    m.setattr(solver_module.limb_closest, "applies", lambda chain: False)
                    own = solver.pose(target, pole)
                assert fast.rotations == own.rotations
                compared += 1
    assert compared == 4 * 4 * 24


def _extents(chain: Chain) -> tuple[float, float]:
    """The effector's least and greatest distance from the root over the hinge's range (a
    dense sweep of the hinge angle, the root at rest: the distance does not depend on the
    root)."""
    axis, limits = chain.limits[1].hinge
    lo, hi = limits if limits is not None else (-math.pi, math.pi)
    phi = np.linspace(lo, hi, 200_001)
    hinge = np.concatenate([np.cos(phi / 2)[:, None], np.sin(phi / 2)[:, None] * axis], axis=1)
    poses = np.stack([np.tile([1.0, 0.0, 0.0, 0.0], (len(phi), 1)), hinge], axis=1)
    distance = np.linalg.norm(kinematics.effector(chain, poses), axis=-1)
    return float(np.min(distance)), float(np.max(distance))


@pytest.mark.parametrize("root", [JointLimits(), JointLimits(cone=1.2), SHOULDER])
@pytest.mark.parametrize("extent", ["fold", "stretch"])
def test_a_target_the_elbow_cannot_come_to_gets_the_elbow_at_its_extent(
    root: JointLimits, extent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand brought to the shoulder, nearer than the elbow's range lets it fold, or held
    out farther than it lets it stretch (a knee whose range stops short of straight, the
    target within the chain's length): no pose comes nearer the target than the distance
    between the target's and the elbow's least (greatest) distance (the oracle: a dense
    sweep of the elbow), and that is the error of every such target the limits let face
    (the elbow folded or stretched as far as it goes, aimed at the target), without the
    search; where the shoulder's limits keep the hand from the target's direction, the
    closest pose's (:func:`closest_floats`). The numpy reference (the batch, its float path
    switched off) gives the same errors, and the same poses where this step decides."""
    hinge = ELBOW if extent == "fold" else BENT_KNEE
    chain = Chain.from_lengths([0.5, 0.45], limits=[root, hinge])
    least_distance, greatest_distance = _extents(chain)
    if extent == "stretch":
        assert greatest_distance < 0.97 * chain.reach  # (the knee's range stops short)
    spread = (0.02, 0.2) if extent == "fold" else (0.975, 0.998)
    targets = _directions(np.random.default_rng(4), chain, 40, spread)
    solver = Solver(chain, "triangulation", SolveOptions())
    with monkeypatch.context() as m:  # (the batch's numpy search for every target missed)
        m.setattr(triangulation, "_limited_single", lambda problem: None)
        batch = solve(chain, targets, method="triangulation")
    faced = 0
    for k, t in enumerate(targets):
        distance = float(np.linalg.norm(t))
        least = least_distance - distance if extent == "fold" else distance - greatest_distance
        assert least > 1e-6 * chain.reach  # (beyond what the elbow allows)
        target = (float(t[0]), float(t[1]), float(t[2]))
        triangulation_limits_single._searched.clear()
        with monkeypatch.context() as m:
            m.setattr(triangulation_limits_single, "search", _refused)
            try:
                pose = solver.pose(target)
            except AssertionError:
                continue  # (the limits keep the elbow at its extent from facing it: searched)
        closest = lc.closest_floats(chain, target)
        if closest is not None:  # (the limits keep the target's direction from the hand)
            bound = least
            least = math.dist(closest[1][-1], target)
            assert least > bound
        error = math.dist(pose.points[-1], target)
        assert error == pytest.approx(least, abs=1e-9 * chain.reach)
        batch_error = float(np.linalg.norm(batch.positions[k, -1] - t))
        assert batch_error == pytest.approx(least, abs=1e-9 * chain.reach)
        if closest is None:  # (the reference's own step: the same pose, not another as close)
            np.testing.assert_allclose(batch.rotations[k], pose.rotations, atol=1e-9)
        for lim, q in zip(chain.limits, pose.rotations, strict=True):
            assert float(lim.violation(np.array(q))) <= 1e-9
        faced += 1
    assert faced >= (40 if root.is_free else 5)
