# SPDX-License-Identifier: GPL-3.0-or-later
"""The search of triangulation within limits, in numpy: candidates refined within the limits.

For :func:`core.triangulation_limits.reach_within_limits` (whose docstring gives the
candidates, the rounds and the rule that picks one): :func:`_refine` refines poses by
projected damped least squares (Levenberg–Marquardt) with an active set of joints held on
their limits, :func:`_keep_best` refines a round's
candidates and keeps per target the one the rule picks; :func:`_middle`,
:func:`_project_all` and :func:`_random_rotations` make candidates. Batched over targets
``(M, …)``; every row is refined on its own (its own damping, its own stop), so a row's
result does not depend on the others. :mod:`core.triangulation_refine_single` is the float
twin for one target, pinned to this reference by tests and sharing its constants.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from . import rotations as rot
from .chain import Chain
from .kinematics import forward_kinematics
from .limits import JointLimits
from .problem import Problem
from .rotations import FloatArray

#: Refinement steps per candidate, and the largest turn of one step (radians).
_STEPS = 100
_MAX_STEP = 0.5
#: A problem stops when its error fell by less than this fraction over the last steps.
_STALL_WINDOW = 10
_STALL_GAIN = 0.001
#: ... or at once where its next step's linear model promises to lower the squared error by
#: less than this share of it: the pace the stall rule asks for, ``2·_STALL_GAIN`` per
#: window. Near a closest pose that misses, the error's fall per step shrinks geometrically
#: while the stall rule waits for a whole window, and a step refused there would only grow
#: the damping until it ran out; a step that can reach the tolerance promises all of it.
_PROMISE = 2.0 * _STALL_GAIN / _STALL_WINDOW
#: A refinement weighed against a reference (the first candidate refined in full,
#: :func:`_refine_candidates`) pauses once every joint is within ``_NEAR`` radians of the
#: reference's pose while its error is not below the reference's by ``CLOSER_BY``
#: tolerances: it is bound for the same minimum, where it cannot change the choice.
_NEAR = 0.1
#: ... and only where the reference is at least this many tolerances from the target
#: (nearer, its refinement can stall short of reaching while a candidate passing by goes on
#: to reach).
_FAR = 1e4
_NEAR_COS = float(np.cos(0.5 * _NEAR))
#: Of the candidates that end equally close (:data:`CLOSER_BY`), one within ``_NEAR``
#: radians of the first's refined pose on every joint is bound for the first's minimum and
#: the first stands for it in the choice (:func:`_keep_best`): the pause's own test, so
#: that pausing such a candidate changes no choice (kept apart from :data:`_NEAR_COS`,
#: which tests switch off to refine every candidate in full).
_SAME_MINIMUM_COS = _NEAR_COS
#: Damping λ (in units of the reach) at the start: ``_LAMBDA_PER_ERROR`` times the start's
#: error over the reach, within ``[_LAMBDA0, _LAMBDA_FAR]`` (:func:`_start_lambda`); and
#: its bounds over the steps (the lower one keeps ``JJᵀ + λ²I`` invertible where ``J``
#: loses rank).
_LAMBDA0 = 0.01
_LAMBDA_PER_ERROR = 0.5
_LAMBDA_FAR = 1.0
_LAMBDA_RANGE = (1e-4, 1e3)
#: λ's factor on a refused step, and the least factor of ``λ²`` on a kept one
#: (:func:`_kept_factor`).
_REFUSED = 4.0
_KEPT_LEAST = 1.0 / 3.0
#: A joint's turn counts as clipped by its limits when keeping it within them moved a
#: quaternion component by more than this share of the turn's half angle (a turn along a
#: curved limit leaves it only to second order: that is sliding, not clipping), and by
#: more than rounding.
_CLIPPED = 0.01
_CLIPPED_ABOVE = 1e-12
#: A way out has a part along a joint's columns where that part (its axes unweighted)
#: exceeds this share of it. A lock's clip lies along the locked axis, off the columns:
#: what rounding left along them (1e-14 to 2e-10 of the turn, measured) made a unit
#: direction pointing anywhere, the joint was held along it, and the one-target and batch
#: refinements parted (to 3e-4 of the reach).
_IN_COLUMNS = 1e-6


def _middle(lim: JointLimits) -> FloatArray:
    """The middle of what a limited joint allows ``(4,)``: a hinge at the middle of its range,
    a ball joint's swing at the middle of its swings with the twist at the middle of its
    range."""
    if lim.kind == "fixed":
        return rot.identity()
    if lim.kind == "hinge":
        axis, limits = lim.hinge
        angle = 0.0 if limits is None else 0.5 * (limits[0] + limits[1])
        return lim.project(rot.from_axis_angle(axis, angle))
    region = lim.swing_region
    if region.centre is not None:
        x, z = region.centre
    else:
        (x0, z0), (x1, z1) = region.segment()
        x, z = 0.5 * (x0 + x1), 0.5 * (z0 + z1)
    swing = np.array([np.sqrt(max(0.0, 1.0 - x * x - z * z)), x, 0.0, z])
    r = lim.ranges[1]
    twist = 0.0 if lim.lock[1] or r is None else 0.5 * (r[0] + r[1])
    return lim.project(rot.multiply(swing, rot.from_axis_angle([0.0, 1.0, 0.0], twist)))


def _project_all(chain: Chain, q: FloatArray) -> FloatArray:
    """Every joint of poses ``q (M, n, 4)`` projected onto its limits."""
    out = q.copy()
    for i, lim in enumerate(chain.limits):
        if not lim.is_free:
            out[:, i] = lim.project(q[:, i])
    return out


def _axes(chain: Chain) -> list[tuple[FloatArray, FloatArray]]:
    """Per joint: local axes ``(k, 3)`` it turns about and their weights ``(k,)``."""
    out = []
    for lim in chain.limits:
        if lim.kind == "fixed":
            out.append((np.zeros((0, 3)), np.zeros(0)))
        elif lim.kind == "hinge":
            axis, _ = lim.hinge
            k = int(np.argmax(np.abs(axis))) if lim.hinge_axis is None else 0
            weight = lim.weights[k] if lim.hinge_axis is None else 1.0 - max(lim.stiffness)
            out.append((axis[None, :], np.array([max(weight, 1e-3)])))
        else:
            free = ~np.asarray(lim.lock)
            out.append((np.eye(3)[free], np.maximum(lim.weights[free], 1e-3)))
    return out


def _start_lambda(err: FloatArray, reach: float) -> FloatArray:
    """The first step's damping ``λ (M,)`` of the pass's pose's refinement (``gentle``,
    :func:`_keep_best`) for start errors ``err (M,)`` (scene units): half the error in
    units of the reach, kept within ``[_LAMBDA0, _LAMBDA_FAR]``, so that
    ``λ²·reach² = |e|²/4`` — the Levenberg–Marquardt parameter of Yamashita and Fukushima
    (2001), ``μ = ‖F(x)‖²``, scaled by a quarter (their steps converge quadratically near
    a solution set where ``J`` loses rank, a redundant chain's). A pass near the target
    takes nearly a Gauss–Newton step, as with ``λ = _LAMBDA0``; one the limits kept far
    from it a shorter one, nearer ``Jᵀe``, so the steps follow the error down from the
    pass's pose — a function of the target without jumps — rather than leap across the
    null space to wherever the limits clip them, which made the pose jump between
    neighbouring targets (``docs/triangulation.md``). The other candidates, there to find
    other minima, keep ``_LAMBDA0``."""
    return np.clip(_LAMBDA_PER_ERROR * err / reach, _LAMBDA0, _LAMBDA_FAR)


def _refine(
    chain: Chain,
    q: FloatArray,
    targets: FloatArray,
    tolerance: float,
    nearest: bool,
    gentle: bool = False,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:func:`_refine_paused` without a floor: every pose refined in full."""
    q, pos, err, _ = _refine_paused(chain, q, targets, tolerance, nearest, None, gentle)
    return q, pos, err


def _refine_paused(
    chain: Chain,
    q: FloatArray,
    targets: FloatArray,
    tolerance: float,
    nearest: bool,
    near: tuple[FloatArray, FloatArray] | None,
    gentle: bool = False,
) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_]]:
    """Projected damped least squares from admissible poses ``q (M, n, 4)`` toward
    ``targets (M, 3)``; returns the poses, their joint positions and errors ``(M,)``.

    Each step solves ``Δ = Jᵀ(JJᵀ + λ²I)⁻¹ e`` (Levenberg–Marquardt: a step that lowers the
    error is kept and λ follows how well its linear model foretold the fall,
    :func:`_kept_factor`; else λ grows by :data:`_REFUSED`), turns every joint by ``exp``
    of its share and keeps it within its limits. ``nearest``: by :meth:`JointLimits.project` (the
    nearest allowed rotation, which lets the search slide along a limit) instead of the
    cheaper :meth:`JointLimits.retract`. A row stops where the tolerance is met, where λ
    reaches its bound, where its error fell by less than :data:`_STALL_GAIN` over
    :data:`_STALL_WINDOW` steps, or where its step's linear model promises to lower
    ``|e|²`` by less than :data:`_PROMISE` of it (the step is then not taken).

    Joints on their limits form an active set: those the start pose leaves on them
    (:func:`_start_bound`), then those whose turn their limits clipped (:data:`_CLIPPED`)
    in the last kept step or that were held in it. Each has a way out in its own columns:
    for a ball joint whose swing was clipped, the turn straight across its swing region's
    boundary (:meth:`JointLimits.swing_exit`), else the clipped part of its turn. Where the
    step pushes such a joint out again (:func:`_held`: the step solved with every one of
    them held tells), it is *held*: that direction is taken out of its columns,
    ``C ← C (I − h hᵀ)``, and the system solved again — a hinge is kept as it is,
    a ball joint can still slide along its limit. The other joints then answer for the
    whole error instead of losing the share the held one could not take, and the error
    falls quadratically instead of by a constant factor per step.

    ``near``: poses ``(M, n, 4)`` and errors ``(M,)`` of a reference; a row pauses (the
    last array, ``True``) where a step leaves every joint within :data:`_NEAR` of the
    reference's and its error not below the reference's by :data:`CLOSER_BY` tolerances;
    ``None``: none pauses. ``gentle``: λ starts at :func:`_start_lambda` of each row's
    error (the pass's pose, :func:`_keep_best`) instead of :data:`_LAMBDA0`."""
    axes = _axes(chain)
    paused = np.zeros(len(q), dtype=bool)
    if not any(len(w) for _, w in axes):  # every joint fixed: nothing to turn
        pos, _ = forward_kinematics(chain, q)
        return q, pos, np.linalg.norm(targets - pos[:, -1], axis=-1), paused
    reach = chain.reach
    pos, world = forward_kinematics(chain, q)
    err = np.linalg.norm(targets - pos[:, -1], axis=-1)
    lam = _start_lambda(err, reach) if gentle else np.full(len(q), _LAMBDA0)
    spans = _spans(axes)
    bound = _start_bound(chain, axes, spans, q)  # (M, m): each joint's way out, zero if none
    active = np.flatnonzero(err > tolerance)
    last = err.copy()
    step_count = 0
    for _ in range(_STEPS):
        if active.size == 0:
            break
        qa, pa, wa = q[active], pos[active], world[active]
        e = targets[active] - pa[:, -1]
        cols = []
        for i, (ax, w) in enumerate(axes):
            if len(w) == 0:
                continue
            world_axes = rot.rotate(wa[:, i, None, :], ax[None])  # (A, k, 3)
            lever = (pa[:, -1] - pa[:, i])[:, None, :]
            cols.append(rot.cross(world_axes, lever) * w[None, :, None])
        jac = np.concatenate(cols, axis=1)  # (A, m, 3)
        damp = (lam[active] * reach) ** 2
        cut = _held(jac, spans, bound[active], e, damp)
        trial, outward, promised = _step(chain, axes, spans, qa, jac, cut, e, damp, nearest)
        taken = promised >= _PROMISE * np.sum(e * e, axis=-1)
        tpos, tworld = forward_kinematics(chain, trial)
        terr = np.linalg.norm(targets[active] - tpos[:, -1], axis=-1)
        before = err[active]
        better = taken & (terr < before)
        idx = active[better]
        q[idx], pos[idx], world[idx], err[idx] = (
            trial[better],
            tpos[better],
            tworld[better],
            terr[better],
        )
        # On their limits now: the joints clipped (their new way out) and those held.
        clipped = np.zeros(cut.shape, dtype=bool)
        for a, b in spans:
            clipped[:, a:b] = np.any(outward[:, a:b] != 0.0, axis=1, keepdims=True)
        bound[idx] = np.where(clipped, outward, cut)[better]
        factor = np.full(active.size, _REFUSED)
        factor[better] = _kept_factor(before[better], terr[better], promised[better])
        lam[active] = np.clip(lam[active] * factor, *_LAMBDA_RANGE)
        stalled = (step_count := step_count + 1) % _STALL_WINDOW == 0
        if stalled:
            progress = err[active] < (1.0 - _STALL_GAIN) * last[active]
            last[active] = err[active]
        else:
            progress = np.ones(active.size, dtype=bool)
        keep = taken & (err[active] > tolerance) & (lam[active] < _LAMBDA_RANGE[1]) & progress
        if near is not None:
            ref_q, ref_err = near[0][active], near[1][active]
            close = np.all(np.abs(np.sum(q[active] * ref_q, axis=-1)) >= _NEAR_COS, axis=-1)
            pause = keep & close & (err[active] >= ref_err - CLOSER_BY * tolerance)
            pause &= ref_err >= _FAR * tolerance
            paused[active[pause]] = True
            keep &= ~pause
        active = active[keep]
    return q, pos, err, paused


def _kept_factor(err: FloatArray, terr: FloatArray, promised: FloatArray) -> FloatArray:
    """λ's factor after kept steps that took the errors ``err (K,)`` to ``terr (K,)`` where
    their linear model promised to lower ``|e|²`` by ``promised (K,)``: Nielsen's rule on
    the damping ``μ = λ²``, ``μ ← μ·max(1/3, 1 − (2ρ − 1)³)`` with the gain ratio
    ``ρ = (|e|² − |e′|²) / promised`` (H. B. Nielsen, *Damping parameter in Marquardt's
    method*, IMM-REP-1999-05; K. Madsen, H. B. Nielsen, O. Tingleff, *Methods for
    non-linear least squares problems*, 2004, Algorithm 3.16): a step whose fall the model
    foretold (``ρ`` near 1) trusts it three times more, one that fell by half what it
    promised keeps λ, one that fell by little distrusts it up to twice as much. (A refused
    step still multiplies λ by :data:`_REFUSED`, where Nielsen doubles a growing factor.)"""
    d = 2.0 * ((err * err - terr * terr) / promised) - 1.0
    return np.sqrt(np.maximum(_KEPT_LEAST, 1.0 - d * d * d))


def _start_bound(
    chain: Chain,
    axes: list[tuple[FloatArray, FloatArray]],
    spans: list[tuple[int, int]],
    q: FloatArray,
) -> FloatArray:
    """The active set of the start poses ``q (M, n, 4)``: per joint on its limits
    (:meth:`JointLimits.way_out` — where the pass or a projection left it), its way out
    as a unit direction in its columns ``(M, m)``, zero for the other joints. Holding such
    a joint from the first step spares the step that would only find it clipped."""
    bound = np.zeros((len(q), spans[-1][1]))
    for i, ((ax, w), (a, b)) in enumerate(zip(axes, spans, strict=True)):
        lim = chain.limits[i]
        if a == b or lim.is_free:
            continue
        turn, on = lim.way_out(rot.positive_w(q[:, i]))
        bound[:, a:b] = np.where(on[:, None], _in_columns(turn, ax, w), 0.0)
    return bound


def _in_columns(turn: FloatArray, ax: FloatArray, w: FloatArray) -> FloatArray:
    """Local turns ``(A, 3)`` as unit directions ``(A, k)`` in a joint's columns (its axes
    ``ax (k, 3)`` weighted by ``w (k,)``); zero where the turn has no part along them
    (:data:`_IN_COLUMNS`)."""
    along = np.einsum("ax,kx->ak", turn, ax)
    part = np.linalg.norm(along, axis=-1, keepdims=True)
    h = along * w[None, :]
    norm = np.linalg.norm(h, axis=-1, keepdims=True)
    some = (part > _IN_COLUMNS * np.linalg.norm(turn, axis=-1, keepdims=True)) & (norm > 0.0)
    return np.where(some, h / np.where(some, norm, 1.0), 0.0)


def _spans(axes: list[tuple[FloatArray, FloatArray]]) -> list[tuple[int, int]]:
    """Each joint's columns ``[a, b)`` in the Jacobian (empty for a fixed joint)."""
    out, col = [], 0
    for _, w in axes:
        out.append((col, col + len(w)))
        col += len(w)
    return out


def _damped(jac: FloatArray, e: FloatArray, damp: FloatArray) -> FloatArray:
    """``(JJᵀ + λ²I)⁻¹ e`` ``(A, 3)`` for columns ``jac (A, m, 3)``, errors ``e (A, 3)`` and
    ``damp (A,)`` = ``λ²·reach²``."""
    jj = np.einsum("amx,amy->axy", jac, jac)
    return np.linalg.solve(jj + damp[:, None, None] * np.eye(3), e[..., None])[..., 0]


def _cut_columns(jac: FloatArray, spans: list[tuple[int, int]], cut: FloatArray) -> FloatArray:
    """Columns ``jac (A, m, 3)`` whose joints lose the unit direction of ``cut (A, m)`` in
    their span (zero: none), ``C ← C (I − h hᵀ)``; a copy."""
    jac = jac.copy()
    for a, b in spans:
        h = cut[:, a:b, None]  # (A, k, 1)
        jac[:, a:b] -= h * np.sum(h * jac[:, a:b], axis=1, keepdims=True)
    return jac


def _held(
    jac: FloatArray,
    spans: list[tuple[int, int]],
    bound: FloatArray,
    e: FloatArray,
    damp: FloatArray,
) -> FloatArray:
    """The joints on their limits held this step: ``bound (A, m)`` (each joint's way out,
    zero if none) where the step pushes the joint out again, else zero.

    The multiplier test of an active-set method: with every bound joint held (its way out
    taken out of its columns, :func:`_cut_columns`), the step's dual ``y`` gives each such
    joint's share of its own columns along its way out, ``hᵀ Cᵀ y``; where that is
    positive the step would push the joint across its limit, so it stays held, and where
    not, the step pulls it inward and it is released. (Until 0.8.7 the test used ``y`` of
    the step with no joint held, which released a joint whose own step then clipped it
    again: that step was refused, the damping grew, and the active set chattered — on
    ``bench_natural``'s limited tail a reachable target's search took 242 steps where its
    first refinement now reaches it in 5.)"""
    y = _damped(_cut_columns(jac, spans, bound), e, damp)
    push = np.einsum("amx,ax->am", jac, y) * bound
    held = np.zeros(bound.shape, dtype=bool)
    for a, b in spans:
        held[:, a:b] = np.sum(push[:, a:b], axis=1, keepdims=True) > 0.0
    return np.where(held, bound, 0.0)


def _step(
    chain: Chain,
    axes: list[tuple[FloatArray, FloatArray]],
    spans: list[tuple[int, int]],
    q: FloatArray,
    jac: FloatArray,
    cut: FloatArray,
    e: FloatArray,
    damp: FloatArray,
    nearest: bool,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """One damped least-squares step of :func:`_refine` for poses ``q (A, n, 4)``, with
    Jacobian columns ``jac (A, m, 3)``, errors ``e (A, 3)`` and damping ``damp (A,)``.
    ``cut (A, m)``: per joint, a unit direction in its columns (zero for none) that its
    columns lose, ``C ← C (I − h hᵀ)``, so its turn has no part along it.

    Returns the trial poses, per joint whose turn its limits clipped (:data:`_CLIPPED`) its
    way out (:func:`_refine`) as a unit direction in its columns ``(A, m)`` (weighted like
    them; zero for the other joints), and how much the step's linear model lowers ``|e|²``
    ``(A,)`` (before the limits: ``|e|² − |e − J Δ|²``)."""
    jac = _cut_columns(jac, spans, cut)
    y = _damped(jac, e, damp)
    step = np.einsum("amx,ax->am", jac, y)
    biggest = np.max(np.abs(step), axis=1, keepdims=True)
    scale = np.minimum(1.0, _MAX_STEP / np.maximum(biggest, 1e-300))
    step = step * scale
    # The error the linear model leaves: J Jᵀ y = e − λ²y (the cut columns' J), so the step
    # moves the effector by scale·(e − λ²y).
    left = e - scale * (e - damp[:, None] * y)
    promised = np.sum(e * e, axis=-1) - np.sum(left * left, axis=-1)
    trial = q.copy()
    outward = np.zeros(cut.shape)
    for i, ((ax, w), (a, b)) in enumerate(zip(axes, spans, strict=True)):
        if a == b:
            continue
        rotvec = np.einsum("ak,kx->ax", step[:, a:b] * w[None, :], ax)
        turned = rot.normalize(rot.multiply(q[:, i], rot.from_rotvec(rotvec)))
        lim = chain.limits[i]
        if not lim.is_free:
            kept = lim.project(turned) if nearest else lim.retract(turned)
            turned = rot.positive_w(turned)
            moved = np.max(np.abs(kept - turned), axis=-1)
            half = 0.5 * np.linalg.norm(rotvec, axis=-1)
            clipped = (moved > _CLIPPED * half) & (moved > _CLIPPED_ABOVE)
            # The way out: for a ball joint whose swing was clipped, the turn straight out
            # of its swing region (JointLimits.swing_exit at the kept rotation: a step
            # without it slides along the boundary); else the clipped part, kept⁻¹ · turned.
            gap = rot.positive_w(rot.multiply(rot.conjugate(kept), turned))[:, 1:]
            if lim.kind == "ball":
                out = lim.swing_outside(turned) & clipped
                if np.any(out):
                    gap[out] = lim.swing_exit(kept[out], turned[out])
            outward[:, a:b] = np.where(clipped[:, None], _in_columns(gap, ax, w), 0.0)
            turned = kept
        trial[:, i] = turned
    return trial, outward, promised


#: Rounds of random admissible restarts for targets still missed, and their seed (fixed:
#: the result depends on the inputs only).
_ROUNDS = 4
_SEED = 2007
#: Where no candidate reaches, the candidates this many tolerances (1e-3 × reach by default)
#: or less farther than the closest count as equally close, and the one nearest the first
#: candidate as given is kept (:func:`_keep_best`). Equally close poses can lie in different
#: local minima, or anywhere along a family of them (a leg whose knee is held straight, spun
#: about the line to the target), and a sliver of distance flipped the limb between
#: neighbouring frames.
CLOSER_BY = 1000.0


#: Restarts are skipped where the candidates settled (:func:`_keep_best`) only on chains of
#: at least this many joints. Settling is no proof that the target is out of reach: on
#: ``bench_solvers``' 2-bone ball chain every candidate settled short of 1 of 1500 targets
#: at admissible poses (5.5 % of the reach) and a restart reached it; on longer chains none
#: of 4500 (``bench_solvers``' 5- and 10-bone ball chains, the 3- to 5-bone shoulder chains
#: of the tests, 60 random limited chains), where skipping them saves the most.
SETTLED_FROM = 3


def _random_rotations(rng: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
    q = rng.normal(size=shape)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _refine_candidates(
    chain: Chain,
    candidates: list[FloatArray],
    targets: FloatArray,
    tol: float,
    nearest: bool,
    known: tuple[FloatArray, FloatArray, FloatArray, FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_]]:
    """``candidates`` (each ``(M, n, 4)``) refined toward ``targets (M, 3)`` for
    :func:`_keep_best`'s choice: poses ``(k, M, n, 4)``, positions and errors ``(k, M)``,
    and which paused ``(k, M)`` (their errors where they paused).
    With less work than refining each in full: the first in full; each later one paused
    (:func:`_refine_paused`) once it sits near the first's refined pose and no closer than
    the first's error less :data:`CLOSER_BY` tolerances (and not within the tolerance),
    where it is taken to end no closer (the choice is then that of every candidate refined
    in full, unless a paused one would have gone on to come materially closer:
    ``docs/triangulation.md``); a target's candidates
    paused are refined in full after all where another comes closer than that without
    reaching (the choice then weighs every candidate's own error). ``known``: the pass's
    poses ``(M, n, 4)`` and their gentle refinement (poses, positions, errors,
    :func:`_keep_best`); a later candidate equal to a row's pass pose, bit for bit, takes
    that refinement, as a refinement of the pass's pose."""
    k, m = len(candidates), len(targets)
    q0, pos0, err0 = _refine(chain, candidates[0].copy(), targets, tol, nearest)
    q, pos, cerr = [q0], [pos0], [err0]
    held = np.zeros((k, m), dtype=bool)
    if k > 1:
        later, later_targets = np.concatenate(candidates[1:]), np.tile(targets, (k - 1, 1))
        qr, posr, errr, paused = _refine_paused(
            chain,
            later.copy(),
            later_targets,
            tol,
            nearest,
            (np.tile(q0, (k - 1, 1, 1)), np.tile(err0, k - 1)),
        )
        if known is not None:
            pose, kq, kpos, kerr = (np.tile(a, (k - 1,) + (1,) * (a.ndim - 1)) for a in known)
            same = np.all((later == pose) & (np.signbit(later) == np.signbit(pose)), axis=(1, 2))
            qr[same], posr[same], errr[same], paused[same] = kq[same], kpos[same], kerr[same], False
        err_k = np.concatenate([err0, errr]).reshape(k, m)
        beaten = ~np.any(err_k <= tol, axis=0) & ~(err0 <= np.min(err_k, axis=0) + CLOSER_BY * tol)
        again = paused & np.tile(beaten, k - 1)  # (those paused, in full after all)
        if np.any(again):
            rows = np.flatnonzero(again)
            qr[rows], posr[rows], errr[rows] = _refine(
                chain, later[rows], later_targets[rows], tol, nearest
            )
        q.append(qr)
        pos.append(posr)
        cerr.append(errr)
        held[1:] = (paused & ~again).reshape(k - 1, m)
    return (
        np.concatenate(q).reshape(k, m, chain.n_joints, 4),
        np.concatenate(pos).reshape(k, m, chain.n_joints + 1, 3),
        np.concatenate(cerr).reshape(k, m),
        held,
    )


def _keep_best(
    problem: Problem,
    miss: np.ndarray,
    candidates: list[FloatArray],
    rotations: FloatArray,
    positions: FloatArray,
    err: FloatArray,
    nearest: bool,
    first_is_pass: bool = False,
) -> NDArray[np.bool_]:
    """Refine ``candidates`` (each ``(M, n, 4)`` for targets ``miss``) and store, per target,
    the one of lowest cost among those that reach, else, of those not farther than the
    closest by more than :data:`CLOSER_BY` tolerances, the one nearest the first candidate
    as given (the pass's pose, or the best so far: the least sum of joint angles from it;
    the first stands for those bound for its minimum, :data:`_SAME_MINIMUM_COS`), where it
    beats what ``rotations``, ``positions`` and ``err (N,)`` hold (updated in
    place). Equally close poses of neighbouring frames can lie in different minima or
    along a family of them; the one nearest the first's start changes least from frame to
    frame, even where the first's own refinement slides far along such a family (until
    0.8.7 the first was kept: ``bench_natural``'s limited neck spun its root 146° and back
    on one frame).

    Returns, per target of ``miss``, whether the candidates *settled*: none reaches and
    every one ended within :data:`CLOSER_BY` tolerances of the closest or paused near the
    first's pose (taken to end where it ends, :func:`_refine_candidates`); the search then
    tries no restarts (:func:`core.triangulation_limits.reach_within_limits`)."""
    chain = problem.chain
    tol = problem.tolerance
    settled = np.zeros(miss.size, dtype=bool)
    rows = np.arange(miss.size)  # (those of miss refined below)
    first = candidates[0]  # (as given, before refining)
    known = None
    if first_is_pass:
        # The pass's own pose, refined, wins wherever it reaches: the other candidates are
        # refined only for the targets where it does not (the same choice, less work).
        q0, pos0, err0 = _refine(
            chain, candidates[0].copy(), problem.targets[miss], tol, nearest, gentle=True
        )
        done = err0 <= tol
        idx = miss[done & (err0 < err[miss])]
        keep = done & (err0 < err[miss])
        rotations[idx] = rot.positive_w(q0[keep])
        positions[idx] = pos0[keep]
        err[idx] = err0[keep]
        if done.all():
            return settled
        rest = ~done
        rows = rows[rest]
        miss = miss[rest]
        known = (candidates[0][rest], q0[rest], pos0[rest], err0[rest])
        candidates = [q0[rest]] + [c[rest] for c in candidates[1:]]
        first = first[rest]
    targets = problem.targets[miss]
    start = problem.initial[miss]
    m = miss.size
    q, pos, cerr, paused = _refine_candidates(chain, candidates, targets, tol, nearest, known)
    cost = np.sum(rot.angle(rot.multiply(rot.conjugate(start[None]), q)), axis=-1)
    reached = cerr <= tol
    score = np.where(reached, cost, np.inf)
    if first_is_pass:  # the pass's own pose, refined, keeps its (pole's) bend plane
        score[0] = np.where(reached[0], -np.inf, score[0])
    close_by = np.min(cerr, axis=0) + CLOSER_BY * tol
    apart = np.sum(rot.angle(rot.multiply(rot.conjugate(first[None]), q)), axis=-1)
    # Those equally close; where the first is one of them, one that ended near its refined
    # pose is bound for its minimum and the first stands for it (so a pause changes no
    # choice).
    bound_for_first = np.all(np.abs(np.sum(q * q[:1], axis=-1)) >= _SAME_MINIMUM_COS, axis=-1)
    bound_for_first &= cerr[:1] <= close_by
    bound_for_first[0] = False
    eligible = (cerr <= close_by) & ~bound_for_first
    close = np.argmin(np.where(eligible, apart, np.inf), axis=0)
    best = np.where(reached.any(axis=0), np.argmin(score, axis=0), close)
    pick = np.arange(m)
    better = cerr[best, pick] < err[miss]
    idx = miss[better]
    rotations[idx] = rot.positive_w(q[best, pick][better])
    positions[idx] = pos[best, pick][better]
    err[idx] = cerr[best, pick][better]
    settled[rows] = ~reached.any(axis=0) & np.all((cerr <= close_by) | paused, axis=0)
    return settled
