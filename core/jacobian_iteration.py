# SPDX-License-Identifier: GPL-3.0-or-later
"""The batched Jacobian iteration of :mod:`core.jacobian` (its docstring's steps 1–7).

:func:`_solve` runs the update ``ΔΦ = J⁻¹ Δe`` for every target of the batch at once
(numpy stacks ``(N, m, k)``) from a start pose: the goal rows and tolerances
(:class:`_Goal`), the stepper (:class:`_Stepper`: stiffness, posture, clamp, limits inside
the iteration with re-solve around clamped joints, :func:`_enforce_limits`), the saddle
nudge, damped retries, stopping rules and restarts (:func:`_restart_poses`). A rule
(:data:`Rule`) maps ``(J, Δe, z)`` to ``(Δp, σ_min)`` (:mod:`core.jacobian_step`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from . import rotations as rot
from .bend_plane import orient_bend
from .chain import Chain
from .jacobian_matrix import (
    ChainState,
    angular_jacobian,
    chain_state,
    dof_anchors,
    dof_axes,
    position_jacobian,
    twist_jacobian,
)
from .jacobian_seed import seeded
from .jacobian_step import damped_step, mean_gram
from .parameterization import DofLayout
from .problem import Problem
from .result import Solution
from .rotations import FloatArray
from .screw import pose_twist, twist_at

Rule = Callable[[FloatArray, FloatArray, FloatArray | None], tuple[FloatArray, FloatArray]]
"""``(J (A, m, k), Δe (A, m), z (A, k) | None) -> (Δp (A, k), σ_min (A,))``."""

#: Relative size of ``Jᵀ(g − e)`` below which a pose counts as stationary.
_STATIONARY = 1e-9
#: Pose nudge (radians per free parameter) off a stationary saddle.
_NUDGE = 0.1
#: A target stops once an update changes its error by less than this fraction of the
#: tolerance: it sits at the best pose it can reach (an unreachable target, a limit).
_STALL = 1e-3
#: ... or, for a position goal, once its error fell by less than the fraction
#: ``_CREEP_GAIN`` over the last ``_CREEP_WINDOW`` updates of an attempt: on a chain with
#: limits, the projections let the error of a target out of reach creep down by more than
#: ``_STALL`` each update for the whole budget (FABRIK's rounds stop alike,
#: :mod:`core.fabrik_single`). Not for orientation and pose goals, whose error may rise on
#: the way (no acceptance test): over a window it can stand still and then fall again
#: (the 6R robot of ``scripts/bench_6r.py`` reached far fewer goals under the rule).
_CREEP_WINDOW = 10
_CREEP_GAIN = 1e-3
#: Damped retries of an update that would increase the error.
_RETRIES = 4
#: Restarts: every this many updates of an attempt, the error must have shrunk by the
#: factor below, else the attempt counts as trapped (a crawl near a singular pose).
_WINDOW = 20
_PROGRESS = 0.5


#: A joint counts as clamped when the projection moved it by more than this (radians).
_CLAMPED = 1e-9


# ---------------------------------------------------------------------- goals
@dataclass(frozen=True)
class _Goal:
    """The rows of the problem: what is measured, its weights and its tolerances."""

    kind: Literal["position", "orientation", "pose"]
    row_weights: FloatArray
    targets: FloatArray
    rotations: FloatArray | None
    tolerance: float
    angle_tolerance: float

    @classmethod
    def of(cls, problem: Problem) -> _Goal:
        alpha = problem.options.position_weight
        if problem.target_rotations is None or alpha == 1.0:
            kind: Literal["position", "orientation", "pose"] = "position"
            weights = np.ones(3)
        elif alpha == 0.0:
            kind = "orientation"
            weights = np.ones(3)
        else:
            kind = "pose"
            weights = np.repeat([math.sqrt(1.0 - alpha), math.sqrt(alpha)], 3)
        return cls(
            kind,
            weights,
            problem.targets,
            problem.target_rotations,
            problem.tolerance,
            problem.options.angle_tolerance,
        )

    def error(
        self, state: ChainState, idx: NDArray[np.intp]
    ) -> tuple[FloatArray, NDArray[np.bool_]]:
        """Weighted errors ``(A, m)`` and convergence ``(A,)`` of the problems ``idx``."""
        eff = state.effector
        target = self.targets[idx]
        converged = np.ones(idx.shape, dtype=bool)
        if self.kind != "orientation":
            converged &= np.linalg.norm(target - eff, axis=-1) <= self.tolerance
        if self.kind == "position":
            return target - eff, converged
        assert self.rotations is not None
        goal_rot = self.rotations[idx]
        eff_rot = state.effector_rotation
        converged &= (
            rot.angle(rot.multiply(rot.conjugate(goal_rot), eff_rot)) <= self.angle_tolerance
        )
        if self.kind == "orientation":
            err = rot.to_rotvec(rot.multiply(goal_rot, rot.conjugate(eff_rot)))
        else:
            err = twist_at(pose_twist(eff_rot, eff, goal_rot, target), eff)
        return err * self.row_weights, converged

    def stalled(self, err: FloatArray, previous: FloatArray) -> NDArray[np.bool_]:
        """``(A,)`` True where the last update changed the error by under ``_STALL`` × tolerance.

        Position rows are compared with ``tolerance``, angular rows with
        ``angle_tolerance`` (both as weighted in :meth:`error`).
        """
        change = err - previous
        if self.kind == "position":
            limits = [(slice(0, 3), self.tolerance)]
        elif self.kind == "orientation":
            limits = [(slice(0, 3), self.angle_tolerance)]
        else:
            limits = [
                (slice(0, 3), self.angle_tolerance * self.row_weights[0]),
                (slice(3, 6), self.tolerance * self.row_weights[3]),
            ]
        out = np.ones(err.shape[0], dtype=bool)
        for rows, tol in limits:
            out &= np.linalg.norm(change[:, rows], axis=-1) < _STALL * tol
        return out

    def jacobian(self, axes: FloatArray, anchors: FloatArray, effector: FloatArray) -> FloatArray:
        """Weighted rows ``(A, m, k)`` matching :meth:`error`."""
        if self.kind == "position":
            return position_jacobian(axes, anchors, effector)
        if self.kind == "orientation":
            return angular_jacobian(axes)
        return twist_jacobian(axes, anchors, effector) * self.row_weights[:, None]

    def may_be_reachable(self, chain: Chain) -> NDArray[np.bool_]:
        """``(N,)`` False where the position goal lies beyond the chain's reach plus tolerance."""
        if self.kind == "orientation":
            return np.ones(self.targets.shape[0], dtype=bool)
        return np.linalg.norm(self.targets, axis=-1) <= chain.reach + self.tolerance

    def pushes_inward(self, state: ChainState, idx: NDArray[np.intp]) -> NDArray[np.bool_]:
        """``(A,)`` True where the position error points back toward the root."""
        if self.kind == "orientation":
            return np.zeros(idx.shape, dtype=bool)
        eff = state.effector
        reach_out = eff - state.positions[:, 0, :]
        return np.sum((self.targets[idx] - eff) * reach_out, axis=-1) < 0.0


# ---------------------------------------------------------------------- the iteration
@dataclass(frozen=True)
class _Linear:
    """One iteration's linearisation of the active problems (``A`` rows).

    Attributes:
        p: ``(A, k)`` current parameters.
        J: ``(A, m, k)`` weighted goal rows, unscaled columns.
        de: ``(A, m)`` the desired change ``β (g − e)``, weighted.
        z: ``(A, k)`` posture change, or ``None``.
        axes: ``(A, k, 3)`` the parameters' world angular velocities.
    """

    p: FloatArray
    J: FloatArray
    de: FloatArray
    z: FloatArray | None
    axes: FloatArray


@dataclass(frozen=True)
class _Stepper:
    """Turns a linearisation into a clamped, stiffness-weighted, limited new pose."""

    rule: Rule
    chain: Chain
    layout: DofLayout
    limited: list[int]
    scale: FloatArray
    max_step: float
    joint_starts: NDArray[np.intp]
    column_group: NDArray[np.intp]

    @property
    def unit(self) -> bool:
        """True when every column's weight is 1 (no stiffness, no locks): no scaling."""
        return bool(np.all(self.scale == 1.0))

    def propose(
        self, lin: _Linear, rows: NDArray[np.intp], retry: int
    ) -> tuple[FloatArray, FloatArray]:
        """New rotations ``(R, n, 4)`` of ``rows`` and their ``σ_min (R,)``.

        ``retry = 0`` uses the method's rule, ``retry > 0`` a damped retry (see :meth:`step`).
        """
        p, J, de, axes = lin.p[rows], lin.J[rows], lin.de[rows], lin.axes[rows]
        z = None if lin.z is None else lin.z[rows]
        dp, sigma = self.step(J, de, z, axes, retry)
        new = self.layout.rotations_of(p + dp)
        if self.limited:
            new = _enforce_limits(self, p, new, J, de, z, axes, retry)
        return new, sigma

    def step(
        self,
        J: FloatArray,
        de: FloatArray,
        z: FloatArray | None,
        axes: FloatArray,
        retry: int = 0,
    ) -> tuple[FloatArray, FloatArray]:
        """``(Δp (A, k), σ_min (A,))`` for raw rows ``J``, target change ``de``, posture ``z``.

        ``axes (A, k, 3)`` are the parameters' angular velocities, for the clamp.

        ``retry = r > 0`` replaces the rule by damped least squares with
        ``λ² = 10^(r − 3) · tr(J̃ J̃ᵀ)/m`` (step 6 of the module docstring); ``σ_min`` is then
        not computed (zeros).
        """
        scaled_z = z if z is None or self.unit else z * self.scale
        Js = J if self.unit else J * self.scale
        if retry:
            lam2 = mean_gram(Js) * 10.0 ** (retry - 3)
            dpt, sigma = damped_step(Js, de, lam2, scaled_z), np.zeros(J.shape[0])
        else:
            dpt, sigma = self.rule(Js, de, scaled_z)
        return self.clamp(dpt if self.unit else dpt * self.scale, axes), sigma

    def clamp(self, dp: FloatArray, axes: FloatArray) -> FloatArray:
        """Scale ``dp (A, k)`` so that no joint turns by more than ``max_step``.

        A joint's turn is ``|Σ ω_k Δp_k|`` over its parameters (``axes (A, k, 3)``).
        """
        if dp.shape[-1] == 0:
            return dp
        turn = np.add.reduceat(axes * dp[..., None], self.joint_starts, axis=1)
        worst = np.max(np.linalg.norm(turn, axis=-1), axis=-1)
        factor = np.minimum(
            1.0, np.divide(self.max_step, worst, out=np.ones_like(worst), where=worst > 0.0)
        )
        return dp * factor[:, None]


def _project(chain: Chain, limited: list[int], q: FloatArray) -> FloatArray:
    """``q (A, n, 4)`` with every limited joint projected onto its limits (a copy)."""
    out = q.copy()
    for i in limited:
        out[:, i, :] = chain.limits[i].project(q[:, i, :])
    return out


def _solve(problem: Problem, start: FloatArray, rule: Rule) -> Solution:
    chain, opts = problem.chain, problem.options
    layout = DofLayout.for_chain(chain, opts.rotation_params)
    goal = _Goal.of(problem)
    limited = [i for i, lim in enumerate(chain.limits) if not lim.is_free]
    starts = np.flatnonzero(np.diff(layout.column_joint, prepend=-1))
    stepper = _Stepper(
        rule,
        chain,
        layout,
        limited,
        np.sqrt(layout.weights),
        math.radians(opts.max_step_deg),
        starts.astype(np.intp),
        (np.searchsorted(starts, np.arange(layout.size), side="right") - 1).astype(np.intp),
    )
    nudge = layout.nudge(min(_NUDGE, stepper.max_step))

    q = _project(chain, limited, start)
    posture = None
    if opts.posture_weight > 0.0:
        posture = layout.params_of(_project(chain, limited, problem.initial))
    size = problem.size
    iterations = np.zeros(size, dtype=np.int64)
    sigma_seen = np.full(size, np.inf)
    state = chain_state(chain, q)
    everyone = np.arange(size)
    err, done = goal.error(state, everyone)
    active = everyone[~done]
    err = err[~done]
    creep_merit = np.full(size, np.inf)  # each attempt's merit at its last window
    creep_merit[active] = np.sum(err * err, axis=-1)

    # Restarts (step 7 of the module docstring).
    restart_poses = _restart_poses(chain, layout, limited, opts.restarts)
    attempts = np.zeros(size, dtype=np.int64)
    since = np.zeros(size, dtype=np.int64)
    beta = np.full(size, opts.step)
    adapt = opts.adaptive_step and goal.kind == "position"
    window_merit = np.full(size, np.inf)
    reached = done.copy()
    restartable = goal.may_be_reachable(chain)
    best_q = q.copy()
    best_merit = np.full(size, np.inf)

    for _ in range(opts.max_iterations if layout.size else 0):
        if active.size == 0:
            break
        current = state.take(active)
        p = layout.params_of(q[active])
        axes = dof_axes(layout, current, p)
        J = goal.jacobian(axes, dof_anchors(layout, current), current.effector)
        z = None
        if posture is not None:
            z = opts.posture_weight * layout.difference(posture[active], p)

        lin = _Linear(p, J, beta[active, None] * err, z, axes)
        new_q, sigma = stepper.propose(lin, np.arange(active.size), 0)
        kick = _stationary(J if stepper.unit else J * stepper.scale, err)
        kick &= goal.pushes_inward(current, active)
        if np.any(kick) and np.any(nudge != 0.0):
            new_q[kick] = _project(chain, limited, layout.rotations_of(p[kick] + nudge))
        new_state = chain_state(chain, new_q)
        new_err, new_done = goal.error(new_state, active)
        merit = np.sum(err * err, axis=-1)
        worse = (np.sum(new_err * new_err, axis=-1) > merit) & ~new_done & ~kick
        worse &= goal.kind == "position"
        if adapt:  # step 6: β doubles after a first-try success, halves after a retry
            grown = np.minimum(1.0, 2.0 * beta[active])
            beta[active] = np.where(worse, np.maximum(opts.step, 0.5 * beta[active]), grown)
        for retry in range(1, _RETRIES + 1):
            if not np.any(worse):
                break
            rows = np.flatnonzero(worse)
            new_q[rows], _ = stepper.propose(lin, rows, retry)
            sub = chain_state(chain, new_q[rows])
            new_state.put(rows, sub)
            new_err[rows], new_done[rows] = goal.error(sub, active[rows])
            worse[rows] = (np.sum(new_err[rows] ** 2, axis=-1) > merit[rows]) & ~new_done[rows]
        if np.any(worse):
            rows = np.flatnonzero(worse)
            new_q[rows] = q[active[rows]]
            new_state.put(rows, current.take(rows))
            new_err[rows] = err[rows]

        q[active] = new_q
        state.put(active, new_state)
        iterations[active] += 1
        since[active] += 1
        sigma_seen[active] = np.minimum(sigma_seen[active], sigma)
        new_merit = np.sum(new_err * new_err, axis=-1)
        at = since[active] % _CREEP_WINDOW == 0
        creeping = at & (new_merit > (1.0 - _CREEP_GAIN) ** 2 * creep_merit[active])
        creeping &= goal.kind == "position"
        creep_merit[active[at]] = new_merit[at]
        give_up = ~new_done & (worse | creeping | goal.stalled(new_err, err))
        if restart_poses.shape[0]:
            better = new_merit < best_merit[active]
            best_merit[active[better]] = new_merit[better]
            best_q[active[better]] = new_q[better]
            # Slow progress: over each window the error must shrink by _PROGRESS.
            check = since[active] % _WINDOW == 0
            slow = check & (new_merit > _PROGRESS**2 * window_merit[active]) & ~new_done
            window_merit[active[check]] = new_merit[check]
            left = (attempts[active] < restart_poses.shape[0]) & restartable[active]
            again = (give_up | slow) & left
            if np.any(again):
                rows = np.flatnonzero(again)
                idx = active[rows]
                q[idx] = restart_poses[attempts[idx]]
                attempts[idx] += 1
                since[idx] = 0
                window_merit[idx] = np.inf
                sub = chain_state(chain, q[idx])
                state.put(idx, sub)
                new_err[rows], new_done[rows] = goal.error(sub, idx)
                creep_merit[idx] = np.sum(new_err[rows] ** 2, axis=-1)
                give_up[rows] = False
        reached[active[new_done]] = True
        keep = ~(new_done | give_up)
        active, err = active[keep], new_err[keep]

    if restart_poses.shape[0]:
        q = np.where(reached[:, None, None], q, best_q)
        state = chain_state(chain, q)
    fresh = np.flatnonzero(~np.isfinite(sigma_seen))
    if fresh.size and layout.size:
        sub = state.take(fresh)
        p = layout.params_of(q[fresh])
        J = goal.jacobian(dof_axes(layout, sub, p), dof_anchors(layout, sub), sub.effector)
        sigma_seen[fresh] = _sigma_min(J * stepper.scale)
    sigma_seen = np.where(np.isfinite(sigma_seen), sigma_seen, 0.0)
    rotations, positions = orient_bend(problem, q, state.positions)
    if seeded(problem):
        # A seed that needed no update is triangulation's pose, already oriented.
        untouched = iterations == 0
        rotations = np.where(untouched[:, None, None], q, rotations)
        positions = np.where(untouched[:, None, None], state.positions, positions)
    return Solution(
        rotations=rotations,
        positions=positions,
        iterations=iterations,
        effector_rotation=None if problem.target_rotations is None else state.effector_rotation,
        min_singular_value=sigma_seen,
    )


def _restart_poses(chain: Chain, layout: DofLayout, limited: list[int], count: int) -> FloatArray:
    """``count`` fixed restart poses ``(count, n, 4)``, the same for every problem.

    Pose ``r`` draws every ball joint's rotation uniformly (a normalised 4-D Gaussian) and
    every hinge angle uniformly in ``[−π, π)`` from a generator seeded with ``r``, then
    projects onto the limits, so results do not depend on the batch they are solved in.
    """
    poses = np.empty((count, chain.n_joints, 4))
    for r in range(count):
        rng = np.random.default_rng(r)
        q = rot.positive_w(rot.normalize(rng.normal(size=(chain.n_joints, 4))))
        if layout.hinge.size:
            q[layout.hinge] = rot.from_axis_angle(
                layout.hinge_axes, rng.uniform(-math.pi, math.pi, layout.hinge.size)
            )
        fixed = [i for i, lim in enumerate(chain.limits) if lim.kind == "fixed"]
        q[fixed] = rot.identity()
        poses[r] = _project(chain, limited, q[None])[0]
    return poses


def _stationary(J: FloatArray, err: FloatArray) -> NDArray[np.bool_]:
    """``(A,)`` True where ``|Jᵀ err| <= _STATIONARY · |J| |err|`` (a critical point)."""
    gradient = np.linalg.norm(np.einsum("amk,am->ak", J, err), axis=-1)
    scale = np.linalg.norm(J, axis=(-2, -1)) * np.linalg.norm(err, axis=-1)
    return gradient <= _STATIONARY * scale


def _sigma_min(J: FloatArray) -> FloatArray:
    """Smallest singular value ``(A,)`` of ``J (A, m, k)``."""
    return np.linalg.svd(J, compute_uv=False)[:, -1]


def _enforce_limits(
    stepper: _Stepper,
    p: FloatArray,
    proposal: FloatArray,
    J: FloatArray,
    de: FloatArray,
    z: FloatArray | None,
    axes: FloatArray,
    retry: int,
) -> FloatArray:
    """Project ``proposal (A, n, 4)`` onto the limits; re-solve around clamped joints.

    A clamped joint starts from its projected rotation; that change (in parameters) is
    taken out of ``de``. It may still move *along* its limit: its columns are restricted
    to parameter changes whose angular velocity is orthogonal to the axis of the rotation
    the projection removed (a hinge is frozen, a ball joint at a cone or a range keeps
    two directions). The joints are solved again for the rest and projected once more
    (step 4 of the module docstring).
    """
    chain, limited, layout = stepper.chain, stepper.limited, stepper.layout
    projected = _project(chain, limited, proposal)
    moved = rot.angle(rot.multiply(rot.conjugate(projected), proposal)) > _CLAMPED
    clamped = np.zeros(moved.shape, dtype=bool)
    clamped[:, limited] = moved[:, limited]
    redo = np.flatnonzero(np.any(clamped, axis=1))
    if redo.size == 0:
        return projected
    frozen = clamped[redo][:, layout.column_joint]
    done = layout.difference(layout.params_of(projected[redo]), p[redo]) * frozen
    de2 = de[redo] - np.einsum("amk,ak->am", J[redo], done)
    # The removed rotation's axis (joint frame F_i), against each column's local ω_k.
    removed = rot.multiply(proposal[redo], rot.conjugate(projected[redo]))[..., 1:]
    local = layout.local_axes(p[redo])
    u = np.sum(local * removed[:, layout.column_joint, :], axis=-1) * frozen
    group = stepper.column_group
    norm = np.sqrt(np.add.reduceat(u * u, stepper.joint_starts, axis=1))[:, group]
    u = np.divide(u, norm, out=np.zeros_like(u), where=norm > 0.0)
    Ju = np.add.reduceat(J[redo] * u[:, None, :], stepper.joint_starts, axis=2)
    J2 = J[redo] - Ju[:, :, group] * u[:, None, :]
    z2 = None if z is None else z[redo] * ~frozen
    dp2, _ = stepper.step(J2, de2, z2, axes[redo], retry)
    dp2 = dp2 - np.add.reduceat(u * dp2, stepper.joint_starts, axis=1)[:, group] * u
    second = layout.rotations_of(p[redo] + done + dp2)
    projected[redo] = _project(chain, limited, second)
    return projected
