# SPDX-License-Identifier: GPL-3.0-or-later
"""Jacobian IK: transpose, SVD pseudo-inverse and damped least squares, batched.

The iteration of CSE169 (reference 002, "Basic Jacobian IK technique")::

    while e is too far from g:
        compute J(e, Φ) for the current pose          (analytic, core.jacobian_matrix)
        Δe = β (g − e)                                  (β = options.step)
        ΔΦ = J⁻¹ Δe                                     (one of core.jacobian_step)
        Φ = Φ + ΔΦ; e = f(Φ)

runs for every target of the batch at once (numpy stacks ``(N, m, k)``); a target leaves
the batch as soon as it meets its tolerances, so ``iterations`` counts its own updates.

Parameters ``Φ`` are each joint's log-quaternion or Euler angles (reference 001;
``options.rotation_params``, :mod:`core.parameterization`), re-read from the joint
quaternions before every update, exactly as the reference's ``UpdateQuatPose`` does.

Goals (rows of ``J`` and of the error ``g − e``):

* position (no ``target_rotation``, or ``position_weight == 1``): the effector position,
  3 rows;
* orientation (``position_weight == 0``): the effector frame's rotation vector error, 3 rows;
* pose: the twist of the screw motion from the current to the goal pose (reference 004
  §3.7, :mod:`core.screw`), 6 rows ``(ω, v)``, weighted ``√(1 − α)`` and ``√α`` with
  ``α = position_weight`` (the objective ``α|E − T|² + (1 − α)|D − V|²`` of reference 003).
  The reference takes the twist's linear part at the base origin; here it is taken at the
  effector, so that the position rows are the effector's velocity and ``α`` weighs what it
  says. For a square, invertible ``J`` both give the same step.

Per update, in this order:

1. **Stiffness** — parameter ``k`` is scaled by ``√w_k`` (``w = 1 − stiffness``, 0 when
   locked; :attr:`DofLayout.weights`), i.e. ``J̃ = J S``, ``Δp = S Δp̃``: a weighted
   minimum-norm step; locked axes never move.
2. **Posture** — with ``posture_weight > 0``, ``z = posture_weight · (Φ_start − Φ)`` is
   added in the rule's null space (``(I − J⁺J) z``), so redundant chains drift back
   toward the start pose without disturbing the goal to first order.
3. **Clamp** — the step is scaled so no joint turns more than ``max_step_deg``.
4. **Limits, inside the iteration** — the new rotations are projected onto each joint's
   limits (:meth:`JointLimits.project`). Joints the projection moved are *clamped*: their
   columns are zeroed, their projected change is subtracted from ``Δe``, and the other
   joints are solved again for the rest, so they take over what the limited joints cannot
   do. Hinges have a single column (their angle), so they never leave their axis.
5. **Stationary points** — a straight chain whose target lies on its own axis, toward the
   root, is a saddle: ``Jᵀ(g − e) = 0`` and every rule returns ``Δp = 0``. There (and only
   when the error points back toward the root, so a stretched chain reaching for an
   unreachable target is left alone) the pose is nudged by 0.1 rad per free parameter.
6. **Acceptance** (position goals) — reference 002 leaves the choice of step and stopping
   rule open. For a position goal ``J`` is the exact derivative of the error, so a short
   enough step of any of the rules lowers ``|g − e|``; an update that would raise it is
   retried as damped least squares with ``λ² = 10^(r−3) · tr(J̃J̃ᵀ)/m``, ``r = 1 … 4``
   (Levenberg–Marquardt: ever shorter steps toward the gradient), else the pose is kept.
   Without this a Gauss–Newton step at a near-singular pose toward an unreachable target
   overshoots and oscillates. Orientation and pose goals are not tested this way: their
   error (a rotation vector, a screw twist) is not the integral of ``J``'s rows away from
   the goal, so the reference's flow may raise its norm on the way, and forcing descent
   traps it (measured in ``scripts/bench_6r.py``). A problem stops when it meets its
   tolerances, when no retry helps, when an update changes its error by less than
   ``10⁻³`` of the tolerance (it sits at the best pose it can reach), or, for a position
   goal, when its error fell by less than 0.1 % over the last 10 updates of an attempt
   (under limits the error of a target out of reach creeps down by more than that on every
   update).
7. **Restarts** (``options.restarts``, off by default) — a problem that stops unreached
   (and is not simply beyond the chain's reach), or whose error did not halve over the
   last 20 updates of an attempt (a crawl near a singular pose, typical of damped steps),
   starts again from the next of a fixed list of spread-out poses, while the iteration cap
   lasts; the pose with the smallest error over all attempts is returned.

Afterwards the bend is oriented by the pole or the default bend plane
(:func:`core.bend_plane.orient_bend`; position goals only).

This module holds the three entry points and their dispatch (the float path of
:mod:`core.jacobian_single` for one target, chains solved at unit reach, triangulation's
pose where it comes as close); the batched iteration itself — goals, the stepper with its
clamp and limits, the damped retries and restarts (steps 1–7) — is
:mod:`core.jacobian_iteration`.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from .chain import Chain
from .jacobian_iteration import _solve
from .jacobian_seed import seeded, start_one, start_rotations
from .jacobian_single import solve_single
from .jacobian_single_linalg import Rule as RuleName
from .jacobian_step import dls_step, pinv_step, transpose_step
from .kinematics import forward_kinematics
from .problem import Problem
from .result import Solution
from .rotations import FloatArray
from .triangulation import solve_triangulation
from .triangulation_fallback import searches_for_them, triangulation_where_closer
from .wrist import seeded_by_wrist, seeds_from_wrist

#: Chains longer than this are solved at unit reach (:func:`_at_unit_reach`).
_LARGE = 1e8
_UNIT_CHAINS: weakref.WeakKeyDictionary[Chain, Chain] = weakref.WeakKeyDictionary()


def solve_jacobian_transpose(problem: Problem) -> Solution:
    """Jacobian-transpose IK (reference 002): ``ΔΦ = α Jᵀ Δe``."""
    return _dispatch(problem, "transpose")


def solve_jacobian_pinv(problem: Problem) -> Solution:
    """Pseudo-inverse IK by SVD (references 001, 002): ``ΔΦ = J⁺ Δe``, small σ cut."""
    return _dispatch(problem, "pinv")


def solve_jacobian_dls(problem: Problem) -> Solution:
    """Damped-least-squares IK: ``ΔΦ = Jᵀ (J Jᵀ + λ² I)⁻¹ Δe``, fixed or adaptive ``λ``."""
    return _dispatch(problem, "dls")


def _dispatch(problem: Problem, rule: RuleName) -> Solution:
    """A goal with an orientation part that triangulation's wrist rule meets takes that
    pose with 0 iterations (:func:`core.wrist.seeded_by_wrist`); the rest
    :func:`_own_solve`."""
    if seeds_from_wrist(problem, problem.options.jacobian_start):
        return seeded_by_wrist(problem, solve_triangulation, lambda p: _own_solve(p, rule))
    return _own_solve(problem, rule)


def _own_solve(problem: Problem, rule: RuleName) -> Solution:
    """One target without restarts: the float path (:mod:`core.jacobian_single`), the same
    iteration as :func:`_batched` without numpy's per-call cost; otherwise the batch."""
    if problem.chain.reach > _LARGE:
        return _at_unit_reach(problem, rule)
    if problem.size == 1 and problem.options.restarts == 0:
        sol = solve_single(problem, rule, start_one(problem))
        if math.dist(sol.positions[0, -1].tolist(), problem.targets[0].tolist()) <= (
            problem.tolerance
        ):
            return sol  # (what follows acts on missed position goals only)
    else:
        sol = _batched(problem, rule, start_rotations(problem))
    if seeded(problem) and not searches_for_them(problem.chain):
        sol = _second_attempt(problem, rule, sol)
    if (
        problem.options.jacobian_start == "triangulation"
        and not problem.chain.is_free
        and (problem.target_rotations is None or problem.options.position_weight == 1.0)
    ):
        sol = _within_limits(problem, sol)
    return sol


def _missed(problem: Problem, sol: Solution) -> tuple[NDArray[np.intp], FloatArray]:
    """Targets within reach that ``sol`` left unreached, and every target's error."""
    error = np.linalg.norm(sol.positions[:, -1, :] - problem.targets, axis=-1)
    missed = (error > problem.tolerance) & (
        np.linalg.norm(problem.targets, axis=-1) <= problem.chain.reach
    )
    return np.flatnonzero(missed), error


def _within_limits(problem: Problem, sol: Solution) -> Solution:
    """Position goals within reach on a limited chain that the iteration left unreached
    (from the seed — and on a chain with cones again from the given start,
    :func:`_second_attempt` — or from the given start for stiffness or a posture bias):
    triangulation within the limits (:mod:`core.triangulation_limits`, admissible; it costs
    milliseconds, so it runs only here), taken unless the iteration's pose comes closer by
    more than a margin (:func:`core.triangulation_fallback.as_close`), also beyond the
    length of a chain that ends in a hinge (:func:`core.triangulation_limits.beyond_limb`);
    the rule is :func:`core.triangulation_fallback.triangulation_where_closer`.
    ``jacobian_start="initial"`` (the references' protocol) has no such fallback."""
    error = np.linalg.norm(sol.positions[:, -1, :] - problem.targets, axis=-1)
    fallback = triangulation_where_closer(problem, error)
    if fallback is None:
        return sol
    tri = fallback.solution
    if sol.effector_rotation is not None:
        tri = replace(
            tri, effector_rotation=forward_kinematics(problem.chain, tri.rotations)[1][:, -1]
        )
    return _take_rows(sol, fallback.rows, fallback.chosen, tri)


def _second_attempt(problem: Problem, rule: RuleName, sol: Solution) -> Solution:
    """Targets within reach that the seeded start left unreached (a local minimum under
    limits) are solved again from the given start; the closer pose of the two is kept. On
    chains with cone limits only (:func:`core.triangulation_fallback.searches_for_them`)."""
    rows, error = _missed(problem, sol)
    if rows.size == 0:
        return sol
    again = replace(
        problem,
        targets=problem.targets[rows],
        poles=None if problem.poles is None else problem.poles[rows],
        initial=problem.initial[rows],
        options=problem.options.replace(jacobian_start="initial"),
    )
    other = _own_solve(again, rule)
    other_error = np.linalg.norm(other.positions[:, -1, :] - again.targets, axis=-1)
    return _take_rows(sol, rows, other_error < error[rows], other)


def _take_rows(
    sol: Solution, rows: NDArray[np.intp], chosen: NDArray[np.bool_], other: Solution
) -> Solution:
    """``sol`` with rows ``rows`` taken from ``other`` (the answer to those rows' problem)
    where ``chosen`` (``(R,)``, the caller's rule); the iterations of every row in ``rows``
    add up."""
    if not np.any(chosen):
        return sol
    take = rows[chosen]
    rotations, positions = sol.rotations.copy(), sol.positions.copy()
    rotations[take] = other.rotations[chosen]
    positions[take] = other.positions[chosen]
    iterations = sol.iterations.copy()
    iterations[rows] += other.iterations
    sigma = sol.min_singular_value
    if sigma is not None and other.min_singular_value is not None:
        sigma = sigma.copy()
        sigma[take] = other.min_singular_value[chosen]
    effector = sol.effector_rotation
    if effector is not None and other.effector_rotation is not None:
        effector = effector.copy()
        effector[take] = other.effector_rotation[chosen]
    return replace(
        sol,
        rotations=rotations,
        positions=positions,
        iterations=iterations,
        effector_rotation=effector,
        min_singular_value=sigma,
    )


def _at_unit_reach(problem: Problem, rule: RuleName) -> Solution:
    """Solve ``problem`` scaled to unit reach and scale the answer back.

    Products of lengths (Gram matrices, their determinants) overflow for chains longer
    than about ``1e50``; rotations do not depend on the scale, positions scale with it.
    """
    chain, reach = problem.chain, problem.chain.reach
    unit = _UNIT_CHAINS.get(chain)
    if unit is None:
        unit = Chain(chain.offsets / reach, chain.rest_rotations, chain.limits, chain.names)
        _UNIT_CHAINS[chain] = unit
    scaled = replace(
        problem,
        chain=unit,
        targets=problem.targets / reach,
        poles=None if problem.poles is None else problem.poles / reach,
        tolerance=problem.tolerance / reach,
        options=problem.options.replace(damping=problem.options.damping / reach),
    )
    sol = _own_solve(scaled, rule)
    sigma = sol.min_singular_value
    return replace(
        sol,
        positions=sol.positions * reach,
        min_singular_value=None if sigma is None else sigma * reach,
    )


def _batched(problem: Problem, rule: RuleName, start: FloatArray) -> Solution:
    """The batched iteration (module docstring) with the rule named ``rule``, from the
    start pose ``start (N, n, 4)`` (:func:`core.jacobian_seed.start_rotations`)."""
    opts = problem.options
    if rule == "transpose":
        return _solve(problem, start, lambda J, de, z: transpose_step(J, de, z))
    if rule == "pinv":
        cutoff = opts.singular_cutoff
        return _solve(problem, start, lambda J, de, z: pinv_step(J, de, cutoff, z))
    return _solve(
        problem, start, lambda J, de, z: dls_step(J, de, opts.damping, opts.adaptive_damping, z)
    )


__all__ = ["solve_jacobian_dls", "solve_jacobian_pinv", "solve_jacobian_transpose"]
