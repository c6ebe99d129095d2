# SPDX-License-Identifier: GPL-3.0-or-later
"""Cyclic coordinate descent (CCD), batched over targets.

**Position goals** follow the rotation form of CCD in Müller-Cajar & Mukundan, "Triangulation:
a new algorithm for inverse kinematics" (IVCNZ 2007, section 2.2, eqs. 1–2): for each joint
from the effector back to the root, with joint position ``p_c``, effector ``p_e`` and target
``p_t``, rotate the joint by ``θ`` about ``r`` where::

    cos θ = (p_e − p_c)/|p_e − p_c| · (p_t − p_c)/|p_t − p_c|        (eq. 1)
    r     = (p_e − p_c)/|p_e − p_c| × (p_t − p_c)/|p_t − p_c|        (eq. 2)

so that joint→effector points along joint→target. One **iteration** is one such sweep over
every joint (what the paper counts).

**Orientation goals** use the objective of Fedulin & Zhukov ("Algorithms for the real-time
inverse kinematics of a multi-link manipulator", in Russian)::

    g(q) = α·|E(q) − T|²/ℓ² + (1 − α)·|D(q) − V|²_F

with ``α = options.position_weight``, ``E``/``T`` the effector's and goal positions,
``D``/``V`` the effector's and goal frames as 3×3 rotation matrices (columns = frame axes,
so ``|D − V|²_F = Σ_k |d_k − v_k|² = 8·sin²(φ/2)`` for an angle ``φ`` between them), and
``ℓ = L/n`` the mean link length. The reference leaves the units open. A joint turning by
``δ`` moves the effector by about (lever arm)·``δ`` and turns its frame by ``δ``, so
measuring positions in units of a typical lever arm puts the two terms on the same footing:
on random 4–7-hinge arms with pose goals and ``α = 0.5``, ``ℓ = L/n`` converged as often or
more often than the reach ``L``, in up to 10× fewer iterations (``docs/ccd.md``), and the
poses do not depend on the chain's scale. Without an orientation goal ``g = |E − T|²/ℓ²``.

Each single-joint step minimises ``g`` over that joint alone (the reference's CCD-I):

* **Hinge** (1 DOF about a unit axis ``a``, ``JointLimits.kind == "hinge"``). Turning by
  ``Δ`` about ``a`` through the joint maps a vector ``x`` to
  ``R x = (a·x) a + cos Δ (x − (a·x) a) + sin Δ (a × x)``, hence for any pair ``(x, y)``
  ``|R x − y|² = |x|² + |y|² − 2[(a·x)(a·y) + cos Δ (x·y − (a·x)(a·y)) + sin Δ a·(x × y)]``.
  Summing the weighted pairs ``(u, v)`` (``u`` = joint→effector, ``v`` = joint→target,
  weight ``α/ℓ²``) and ``(d_k, v_k)`` (frame axes, weight ``1 − α``) gives
  ``g(Δ) = const − 2 (A cos Δ + B sin Δ)`` with::

      A = α/ℓ² (u·v − (a·u)(a·v)) + (1 − α) Σ_k (d_k·v_k − (a·d_k)(a·v_k))
      B = α/ℓ² a·(u × v)          + (1 − α) a·Σ_k (d_k × v_k)

  ``dg/dΔ = 0`` gives ``tan Δ = B/A``: the reference's ``Δq = atan2(−denom, num) + πk``,
  whose two roots ``k = 0, 1`` are the minimum and the maximum. ``Δ = atan2(B, A)`` picks
  the minimum (``A cos Δ + B sin Δ = +√(A² + B²)``); ``A = B = 0`` gives ``Δ = 0``. With an
  angle range, ``−g`` is ``ρ cos(φ − φ*)`` plus a constant, unimodal on the circle, so the
  best allowed angle is ``φ*`` itself when allowed, else the range end nearer to ``φ*``.
* **Ball joint, position only** (no orientation goal, or ``α = 1``): eqs. 1–2, the
  shortest-arc rotation taking ``u`` to ``v``, which is the single-joint optimum. A zero
  ``u`` or ``v`` (effector or target at the joint) skips the step; antiparallel ``u, v``
  (``r = 0`` but ``θ = π``) turn about an axis normal to ``u`` and the joint's X axis.
* **Ball joint with an orientation goal**: the rotation ``R`` about the joint minimising the
  same weighted sum over the pairs ``(u, v)`` and ``(d_k, v_k)`` is a weighted Wahba
  problem: maximise ``tr(R H)`` with ``H = α/ℓ² u vᵀ + (1 − α) Σ_k d_k v_kᵀ``. Its closed
  form (Kabsch): ``H = U S Wᵀ`` ⇒ ``R = W diag(1, 1, det(W Uᵀ)) Uᵀ``, the exact 3-DOF
  analogue of the hinge step.

**Limits and stiffness**: a ball joint's step is expressed in the joint's rest frame
(``q ← step·q``), its rotation vector scaled per axis by ``JointLimits.weights``
(``1 − stiffness``), then ``JointLimits.project`` applies the limits (for a joint limited
only in bend, the same projection in matrix form, ``_project_cone``). A hinge's step is
scaled by the weight of its axis. Those steps are no longer exact single-joint optima, so
each is kept only where it does not increase ``g``; the exact steps never increase it.
Hence ``g`` never increases, and the result is never worse than the start pose (which is
first projected onto the limits).

**Coarse sweep** (Fedulin & Zhukov): where one joint at a time cannot help (two joints must
move together) CCD stalls: over a sweep, ``g`` falls by less than the fraction ``_STALL``
of its excess ``g − g₀`` over the lower bound ``g₀ = α/ℓ²·max(0, |T| − L)²`` (measuring
the excess keeps far targets, whose ``g`` is mostly unreachable distance, from looking
stalled). Then one joint is swept over ``options.sweep_steps`` coarse angles (a hinge over
its range, or the full turn split into ``sweep_steps + 1`` parts; a ball joint likewise
about its eq. 2 axis, or its X axis when that is undefined) while CCD solves the other
joints from each; the best candidate is kept if it lowers the excess by more than
``_STALL``, and CCD resumes with every joint. The swept joint cycles from the root outward
over successive stalls; a target stops once every joint has been swept in a row without
gain. A sweep counts as many iterations as its longest candidate ran.
``sweep_steps = 0`` gives plain CCD.

A position goal more than the tolerance beyond reach stops (without a sweep) once the
effector is within the tolerance of ``|T| − L``: nothing can improve it by more.

Convergence is checked after every joint step (the paper: reached "as soon as" the effector
is within tolerance); a target that converges stops changing. Targets farther than
``_FAR × L`` are solved for the point at that distance in the same direction (the pose
differs by less than ``1/_FAR`` radians), which keeps all arithmetic finite.

**Start pose** (``options.ccd_start``): by default, :func:`core.ccd_seed.seed` —
triangulation's pass on the chain without its limits, carried onto the limits by
:func:`core.ccd_seed.retarget` — is the answer where it meets the goal (0 iterations);
elsewhere, and with ``"initial"`` (the papers' protocol), CCD starts from the start pose
projected onto the limits.

Internally the joints' rotations are 3×3 matrices (a matrix product is one numpy call,
which keeps small batches fast), re-orthonormalised every ``_RENORMALIZE`` sweeps (every
sweep on chains longer than ``_SHORT``); the result is returned as quaternions with
positions from their forward kinematics. After solving,
:func:`core.bend_plane.orient_bend` applies the pole or the default bend plane (position
goals only). One target takes the plain-float path of :mod:`core.ccd_single` (the same

This module holds the entry points (:func:`solve_ccd`, :func:`solve_batch`) and the
batched loop; the per-chain setup, joint facts and frames are :mod:`core.ccd_setup`, the
sweeps (hinge and ball steps, descent, the coarse sweep) :mod:`core.ccd_sweep`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import ccd_seed, ccd_single
from . import rotations as rot
from .bend_plane import orient_bend
from .ccd_setup import (
    _clip_far,
    _frames,
    _Goals,
    _orthonormalize,
    _score,
    _Setup,
    _setup,
)
from .ccd_sweep import _STALLED, _coarse_sweep, _descend, _effector_score
from .chain import Chain
from .kinematics import forward_kinematics
from .problem import Problem
from .result import Solution
from .rotations import FloatArray
from .triangulation import solve_triangulation
from .triangulation_fallback import searches_for_them
from .wrist import seeded_by_wrist, seeds_from_wrist


def _start_pose(chain: Chain, q: FloatArray) -> FloatArray:
    """Start rotations ``(N, n, 4)`` projected onto the joint limits, as matrices."""
    out = rot.normalize(np.array(q, dtype=np.float64))
    for i, lim in enumerate(chain.limits):
        if not lim.is_free:
            out[:, i] = lim.project(out[:, i])
    return rot.to_matrix(out)


def _goals(problem: Problem, s: _Setup, targets: FloatArray) -> _Goals:
    """The goals of the (far-clipped) ``targets (N, 3)``."""
    reach = problem.chain.reach
    quats = problem.target_rotations
    lower_bound = np.maximum(0.0, np.linalg.norm(targets, axis=-1) - reach)
    frames = None if quats is None else rot.to_matrix(quats)
    beyond = lower_bound > problem.tolerance
    if quats is not None and s.c_rot > 0.0:
        beyond[:] = False
    settled = np.where(beyond, s.c_pos * (lower_bound + problem.tolerance) ** 2, -1.0)
    return _Goals(targets, frames, s.c_pos * lower_bound**2, settled)


def solve_ccd(problem: Problem) -> Solution:
    """Solve a batch of IK problems with CCD and its coarse sweep (see module docstring).

    One target takes the plain-float path of :mod:`core.ccd_single` (the same iteration).

    Args:
        problem: the checked batch; reads ``options.max_iterations``,
            ``options.position_weight``, ``options.angle_tolerance``,
            ``options.sweep_steps``, ``options.ccd_start`` and the bend-plane options.

    Returns:
        A :class:`Solution`; ``iterations (N,)`` counts CCD sweeps (0 when the start pose
        already meets the goal), including the iterations of coarse sweeps. Positions are
        the forward kinematics of the returned rotations. A goal with an orientation part
        that triangulation's wrist rule meets takes that pose with 0 iterations
        (:func:`core.wrist.seeded_by_wrist`).
    """
    if seeds_from_wrist(problem, problem.options.ccd_start):
        return seeded_by_wrist(problem, solve_triangulation, _solve_ccd)
    return _solve_ccd(problem)


def _solve_ccd(problem: Problem) -> Solution:
    """:func:`solve_ccd` without the wrist's seed."""
    if problem.size == 1:
        return ccd_single.solve_one_target(problem)
    return solve_batch(problem)


def solve_batch(problem: Problem) -> Solution:
    """:func:`solve_ccd` on numpy arrays for any batch size: the reference of the
    single-target path (tests pin one to the other).

    With the triangulation seed, targets it meets (or, beyond reach, gets as near as
    possible) keep it as their answer with 0 iterations; CCD solves the others from the
    start pose, from which it does better on limited chains than from the seed (without
    the coarse sweep but on chains with cones:
    :func:`core.triangulation_fallback.searches_for_them`); the seed is kept instead where
    it is closer to the target by more than the tolerance. On a limited chain, targets
    within its length still missed take triangulation within the limits unless CCD's pose
    is materially closer (:func:`core.ccd_seed.within_limits`)."""
    seeded = ccd_seed.seed(problem)
    if seeded is None:
        return _iterate_batch(problem)
    q_seed, p_seed = seeded
    s = _setup(problem)
    chain = problem.chain
    goals = _goals(problem, s, _clip_far(problem.targets, chain.reach))
    frames = None
    if goals.frames is not None:
        frames = rot.to_matrix(forward_kinematics(chain, q_seed)[1][:, -1])
    g, reached = _score(s, p_seed[:, -1], frames, goals)
    keep = reached | (g <= goals.settled)
    rotations, positions = q_seed, p_seed
    iterations = np.zeros(problem.size, dtype=np.int64)
    if not keep.all():
        rows = np.flatnonzero(~keep)
        sub = _iterate_batch(
            dataclasses.replace(
                problem,
                targets=problem.targets[rows],
                target_rotations=None
                if problem.target_rotations is None
                else problem.target_rotations[rows],
                poles=None if problem.poles is None else problem.poles[rows],
                initial=problem.initial[rows],
                options=problem.options.replace(sweep_steps=0)
                if searches_for_them(chain)
                else problem.options,
            )
        )
        # The seed stays where it is closer by more than the tolerance (an admissible pose
        # within the limits, from which CCD's own iteration may stall farther away).
        seed_error = np.linalg.norm(p_seed[rows, -1] - problem.targets[rows], axis=-1)
        error = np.linalg.norm(sub.positions[:, -1] - problem.targets[rows], axis=-1)
        closer = ~(seed_error < error - problem.tolerance)
        rows, picked = rows[closer], np.flatnonzero(closer)
        rotations, positions = rotations.copy(), positions.copy()
        rotations[rows], positions[rows], iterations[rows] = (
            sub.rotations[picked],
            sub.positions[picked],
            sub.iterations[picked],
        )
    if not chain.is_free:
        rotations, positions = ccd_seed.within_limits(problem, rotations, positions)
    effector = None
    if problem.target_rotations is not None:
        effector = forward_kinematics(chain, rotations)[1][:, -1]
    return Solution(rotations, positions, iterations, effector)


def _iterate_batch(problem: Problem) -> Solution:
    """CCD from the (projected) start pose, batched (the module docstring)."""
    s = _setup(problem)
    chain = problem.chain
    cap = problem.options.max_iterations
    steps = problem.options.sweep_steps
    targets = _clip_far(problem.targets, chain.reach)
    goals = _goals(problem, s, targets)
    Q = _start_pose(chain, problem.initial)
    g, reached = _effector_score(s, Q, goals)
    iterations = np.zeros(problem.size, dtype=np.int64)
    # Coarse sweeps: the movable joint (root first) each row sweeps next, and how many
    # sweeps in a row found nothing better.
    sweepable = s.joints[::-1]
    next_joint = np.zeros(problem.size, dtype=np.int64)
    failures = np.zeros(problem.size, dtype=np.int64)

    pending = np.flatnonzero(~reached)
    while pending.size:
        Qp, gp, used, status = _descend(
            s, Q[pending], goals.take(pending), g[pending], cap - iterations[pending]
        )
        Q[pending], g[pending] = Qp, gp
        iterations[pending] += used
        stuck = pending[status == _STALLED]
        pending = np.empty(0, dtype=np.int64)
        if steps == 0 or not sweepable or not stuck.size:
            break
        stuck = stuck[g[stuck] > goals.settled[stuck]]
        while stuck.size:
            stuck = stuck[(iterations[stuck] < cap) & (failures[stuck] < len(sweepable))]
            retry = []
            joint_of = next_joint[stuck]
            for k in np.unique(joint_of):
                rows = stuck[joint_of == k]
                Qr, gr, used, improved, converged = _coarse_sweep(
                    s,
                    Q[rows],
                    goals.take(rows),
                    g[rows],
                    cap - iterations[rows],
                    sweepable[k],
                    steps,
                )
                Q[rows], g[rows] = Qr, gr
                iterations[rows] += used
                next_joint[rows] = (k + 1) % len(sweepable)
                failures[rows] = np.where(improved, 0, failures[rows] + 1)
                pending = np.concatenate((pending, rows[improved & ~converged]))
                retry.append(rows[~improved])
            stuck = np.concatenate(retry) if retry else np.empty(0, dtype=np.int64)
        pending = pending[iterations[pending] < cap]

    Q = _orthonormalize(Q)
    positions, _, _ = _frames(s, Q)
    clipped = dataclasses.replace(problem, targets=targets)
    start = rot.from_matrix(Q)
    q, _ = orient_bend(clipped, start, positions)
    # A start pose that meets the goal is returned as it is (the seed is already oriented).
    q = np.where(iterations[:, None, None] > 0, rot.positive_w(q), start)
    positions, world = forward_kinematics(chain, q)
    return Solution(
        rotations=q,
        positions=positions,
        iterations=iterations,
        effector_rotation=None if problem.target_rotations is None else world[:, -1],
    )
