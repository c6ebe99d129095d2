# SPDX-License-Identifier: GPL-3.0-or-later
"""Random chains with joint limits, and targets every method must reach (issue 11).

Shared by the reach-under-limits property tests of every method: chains of 2–8 links with
random hinge (two IK locks, ranges of either sign, possibly excluding the rest), one-sided
range, rest-excluding range, cone, Blender-ellipse (X and Z ranges) and stiffness limits;
targets are the forward kinematics of random *admissible* poses (inside the limits where
rejection sampling finds one, else projected onto them: :func:`admissible_poses`), so each
is reachable by construction. Everything is drawn from a
seeded numpy generator, so a test run is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core import Chain, kinematics, solve
from core.errors import ChainError
from core.limits import JointLimits

KINDS = ("free", "hinge", "one_sided", "rest_excluding", "cone", "ellipse", "stiff")
"""The joint kinds :func:`random_limits` draws."""

#: Reached: within this fraction of the chain's reach (issue 11's acceptance).
REACHED = 1e-4
#: Largest allowed limit violation (radians).
VIOLATION = 1e-6


def random_limits(rng: np.random.Generator, kind: str) -> JointLimits:
    """One joint's limits of the given ``kind`` (one of :data:`KINDS`)."""
    pi = math.pi
    if kind == "free":
        return JointLimits()
    if kind == "hinge":  # a knee or elbow: Lock IK on two axes, a range on the third
        k = int(rng.choice([0, 2]))
        shape = rng.integers(3)
        if shape == 0:  # one-sided, either sign (5°–140° like a knee, or its mirror)
            lo, hi = rng.uniform(0.0, 0.3), rng.uniform(1.0, 2.6)
            lo, hi = (lo, hi) if rng.random() < 0.5 else (-hi, -lo)
        elif shape == 1:  # excludes the rest pose
            lo = rng.uniform(0.1, 1.0)
            lo, hi = lo, lo + rng.uniform(0.3, 2.0)
            lo, hi = (lo, hi) if rng.random() < 0.5 else (-hi, -lo)
        else:
            lo, hi = -rng.uniform(0.2, 2.0), rng.uniform(0.2, 2.0)
        lock = (k != 0, True, k != 2)
        ranges: list[tuple[float, float] | None] = [None, None, None]
        ranges[k] = (lo, min(hi, pi))
        return JointLimits(lock=lock, ranges=(ranges[0], ranges[1], ranges[2]))
    if kind == "one_sided":
        hi = rng.uniform(0.5, 2.5)
        x = (0.0, hi) if rng.random() < 0.5 else (-hi, 0.0)
        return JointLimits(ranges=(x, None, None))
    if kind == "rest_excluding":  # X in [0.1, 2.5] of the issue, and the like
        lo = rng.uniform(0.05, 0.6)
        x = (lo, min(lo + rng.uniform(0.5, 2.4), pi))
        if rng.random() < 0.5:
            x = (-x[1], -x[0])
        return JointLimits(ranges=(x, (-0.5, 0.5), None))
    if kind == "cone":
        return JointLimits(cone=rng.uniform(0.2, 2.5))
    if kind == "ellipse":  # X and Z ranges holding the rest, asymmetric per quadrant
        x = (-rng.uniform(0.1, 1.5), rng.uniform(0.1, 2.0))
        z = (-rng.uniform(0.1, 1.5), rng.uniform(0.1, 1.5))
        return JointLimits(ranges=(x, None, z))
    if kind == "stiff":
        stiffness = tuple(float(s) for s in rng.uniform(0.0, 0.9, 3))
        cone = rng.uniform(0.5, 2.5) if rng.random() < 0.5 else None
        return JointLimits(cone=cone, stiffness=stiffness)  # type: ignore[arg-type]
    raise ValueError(f"unknown kind {kind!r}")


def random_limited_chain(rng: np.random.Generator, links: int | None = None) -> Chain:
    """A chain of ``links`` (2–8 when ``None``) links with random limits, at least one of
    them limited; rest pose straight or gently bent, pointing anywhere."""
    n = int(rng.integers(2, 9)) if links is None else links
    lengths = rng.uniform(0.4, 1.6, n)
    while True:
        kinds = rng.choice(KINDS, size=n)
        if any(k != "free" for k in kinds):
            break
    try:
        limits = [random_limits(rng, str(k)) for k in kinds]
    except ChainError:  # (not expected: every drawn kind allows some rotation)
        raise
    direction = rng.normal(size=3)
    if rng.random() < 0.5:
        return Chain.from_lengths(lengths, direction, limits=limits)
    bends = rng.normal(scale=0.3, size=(n, 3))
    vectors = np.empty((n, 3))
    d = direction / np.linalg.norm(direction)
    for i in range(n):
        d = d + bends[i]
        d /= np.linalg.norm(d)
        vectors[i] = d * lengths[i]
    return Chain.from_offsets(vectors, limits=limits)


def shoulder_chain(n: int) -> Chain:
    """``scripts/bench_solvers.py``'s ball chain: ``n`` links (1 in all) gently curved, odd
    joints knees (X in 0°–150°), the others limited like a shoulder (X in −60°–80°, Z in
    −40°–40°: Blender's *Limit X*/*Limit Z*)."""
    ball = JointLimits(ranges=((math.radians(-60), math.radians(80)), None, (-0.7, 0.7)))
    knee = JointLimits(lock=(False, True, True), ranges=((0.0, math.radians(150)), None, None))
    offsets = [[0.0, -math.sin(0.1 * i) / n, math.cos(0.1 * i) / n] for i in range(n)]
    return Chain.from_offsets(offsets, limits=[knee if i % 2 else ball for i in range(n)])


def anywhere_within(rng: np.random.Generator, chain: Chain, size: int) -> np.ndarray:
    """``(size, 3)`` targets in random directions at 0.2–0.95 of the chain's length
    (``bench_solvers`` part 3): on a limited chain many are out of reach within the limits."""
    directions = rng.normal(size=(size, 3))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    return directions * rng.uniform(0.2, 0.95, size=(size, 1)) * chain.reach


def admissible_poses(rng: np.random.Generator, chain: Chain, size: int) -> np.ndarray:
    """``(size, n, 4)`` random poses that every joint's limits allow.

    Each joint's rotation is the first of 32 uniformly random rotations its limits allow
    (rejection sampling: a pose inside the limits), or, where none is (a hinge, a narrow
    range), a random rotation projected onto the limits — which puts it on their boundary
    (a ball joint's swing; a hinge outside its range at an end)."""
    n = chain.n_joints
    q = rng.normal(size=(size, n, 32, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    out = np.empty((size, n, 4))
    for i, lim in enumerate(chain.limits):
        allowed = lim.allows(q[:, i])
        first = np.argmax(allowed, axis=1)
        rows = np.arange(size)
        out[:, i] = np.where(
            allowed.any(axis=1)[:, None], q[rows, i, first], lim.project(q[:, i, 0])
        )
    return out


@dataclass(frozen=True)
class ReachStats:
    """How one method did on the random limited chains."""

    targets: int
    reached: int
    worst_violation: float
    misses: list[tuple[Chain, np.ndarray, float]]

    @property
    def share(self) -> float:
        return self.reached / self.targets


def reach_under_limits(
    method: str,
    seed: int = 11,
    chains: int = 60,
    per_chain: int = 10,
    solver: Callable[..., object] | None = None,
) -> ReachStats:
    """Solve ``per_chain`` reachable targets on each of ``chains`` random limited chains
    with ``method`` (from the rest pose) and count targets reached to ``REACHED × reach``,
    and the largest limit violation of any returned joint rotation."""
    rng = np.random.default_rng(seed)
    run = solver or solve
    reached = total = 0
    worst = 0.0
    misses: list[tuple[Chain, np.ndarray, float]] = []
    for _ in range(chains):
        chain = random_limited_chain(rng)
        targets = kinematics.effector(chain, admissible_poses(rng, chain, per_chain))
        res = run(chain, targets, method=method)
        error = np.linalg.norm(res.positions[:, -1] - targets, axis=-1)  # type: ignore[attr-defined]
        ok = error <= REACHED * chain.reach
        reached += int(np.count_nonzero(ok))
        total += len(targets)
        for i, lim in enumerate(chain.limits):
            worst = max(worst, float(np.max(lim.violation(res.rotations[:, i]))))  # type: ignore[attr-defined]
        found = zip(targets, error, ok, strict=True)
        misses.extend((chain, t, float(e)) for t, e, k in found if not k)
    return ReachStats(total, reached, worst, misses)
