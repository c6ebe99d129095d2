# SPDX-License-Identifier: GPL-3.0-or-later
"""The Jacobian iteration of :mod:`core.jacobian` for one target, in plain Python floats.

For one small chain numpy's per-call cost (about a microsecond per call, dozens of calls
per update) dominates the batched iteration; this module runs *the same iteration* — the
same goal rows, stiffness scaling, posture term, clamp, limits with re-solve around clamped
joints, saddle nudge, damped retries and stopping rules (module docstring of
:mod:`core.jacobian`) — on tuples of floats. The Jacobian is built column by column in
closed form (``ω_k × (e − p_i)``), and each rule solves the small ``d × d`` Gram system
(``d = min(m, k) ≤ 6``) by an unrolled Cholesky factorisation. The results equal the batched
path's to rounding (tested on random chains with limits, stiffness, posture and
orientation goals).

This module holds the iteration (:class:`_Stepper`, :func:`solve_single`); the float pose
algebra, per-chain plan, forward kinematics and goal rows are
:mod:`core.jacobian_single_pose`, the small linear algebra and the update rules
:mod:`core.jacobian_single_linalg`.

Entry point: :func:`solve_single`, dispatched by :func:`core.jacobian.solve_jacobian_dls`
and its siblings when ``problem.size == 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bend_plane_single import orient_one, turned_points
from .components import qangle, vdot
from .jacobian_iteration import _CLAMPED, _CREEP_GAIN, _CREEP_WINDOW, _RETRIES, _STATIONARY
from .jacobian_seed import seeded
from .jacobian_single_linalg import (
    Rule,
    _damped_retry,
    _gram,
    _jtv,
    _jv,
    _rule_step,
    _sigma,
    _squares,
)
from .jacobian_single_pose import (
    Quat,
    Vec,
    _axes,
    _difference,
    _euler_columns,
    _expmap_columns,
    _fk,
    _Goal,
    _params_of,
    _Plan,
    _plan,
    _project,
    _rotations_of,
)
from .problem import Problem
from .result import Solution


# ---------------------------------------------------------------------- the iteration
@dataclass(frozen=True)
class _Stepper:
    """:class:`core.jacobian_iteration._Stepper` for one problem."""

    plan: _Plan
    rule: Rule
    m: int
    max_step: float
    damping: float
    adaptive: bool
    cutoff: float

    def step(
        self,
        cols: list[tuple[float, ...]],
        de: list[float],
        z: list[float] | None,
        axes: list[Vec],
        retry: int,
    ) -> tuple[list[float], float]:
        plan = self.plan
        scale = plan.scale
        if not plan.unit:
            cols = [tuple(c * s for c in col) for col, s in zip(cols, scale, strict=True)]
            if z is not None:
                z = [a * s for a, s in zip(z, scale, strict=True)]
        if retry:
            dp, sigma = _damped_retry(cols, de, z, self.m, retry), 0.0
        else:
            dp, sigma = _rule_step(
                self.rule, cols, de, z, self.m, self.damping, self.adaptive, self.cutoff
            )
        if not plan.unit:
            dp = [a * s for a, s in zip(dp, scale, strict=True)]
        return self.clamp(dp, axes), sigma

    def clamp(self, dp: list[float], axes: list[Vec]) -> list[float]:
        starts = self.plan.starts
        worst = 0.0
        for i in range(self.plan.n):
            a, b = starts[i], starts[i + 1]
            if a == b:
                continue
            tx = ty = tz = 0.0
            for c in range(a, b):
                ax, ay, az = axes[c]
                s = dp[c]
                tx, ty, tz = tx + ax * s, ty + ay * s, tz + az * s
            turn = math.sqrt(tx * tx + ty * ty + tz * tz)
            if turn > worst:
                worst = turn
        if worst > 0.0 and self.max_step < worst:
            factor = self.max_step / worst
            return [v * factor for v in dp]
        return dp

    def propose(
        self,
        p: list[float],
        cols: list[tuple[float, ...]],
        de: list[float],
        z: list[float] | None,
        axes: list[Vec],
        retry: int,
    ) -> tuple[list[Quat], float]:
        dp, sigma = self.step(cols, de, z, axes, retry)
        plan = self.plan
        new = _rotations_of(plan, [a + b for a, b in zip(p, dp, strict=True)])
        if any(lim is not None for lim in plan.limits):
            new = self._limits(p, new, cols, de, z, axes, retry)
        return new, sigma

    def _limits(
        self,
        p: list[float],
        proposal: list[Quat],
        cols: list[tuple[float, ...]],
        de: list[float],
        z: list[float] | None,
        axes: list[Vec],
        retry: int,
    ) -> list[Quat]:
        """:func:`core.jacobian_iteration._enforce_limits` for one problem."""
        plan = self.plan
        projected = _project(plan, proposal)
        clamped = [False] * plan.n
        for i, lim in enumerate(plan.limits):
            if lim is not None:
                a, b = projected[i], proposal[i]
                rel = (
                    a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3],
                    a[0] * b[1] - a[1] * b[0] - a[2] * b[3] + a[3] * b[2],
                    a[0] * b[2] + a[1] * b[3] - a[2] * b[0] - a[3] * b[1],
                    a[0] * b[3] - a[1] * b[2] + a[2] * b[1] - a[3] * b[0],
                )
                clamped[i] = qangle(rel) > _CLAMPED
        if not any(clamped):
            return projected
        m = self.m
        frozen = [clamped[j] for j in plan.column_joint]
        diff = _difference(plan, _params_of(plan, projected), p)
        done = [d if f else 0.0 for d, f in zip(diff, frozen, strict=True)]
        jd = _jv(cols, done, m)
        de2 = [a - b for a, b in zip(de, jd, strict=True)]
        # Each clamped joint moves only orthogonally to the rotation the projection removed.
        unit = [0.0] * len(p)
        cols2 = list(cols)
        for i in range(plan.n):
            c0, c1 = plan.starts[i], plan.starts[i + 1]
            if not clamped[i] or c0 == c1:
                continue
            a, b = proposal[i], projected[i]
            removed = (
                -a[0] * b[1] + a[1] * b[0] - a[2] * b[3] + a[3] * b[2],
                -a[0] * b[2] + a[1] * b[3] + a[2] * b[0] - a[3] * b[1],
                -a[0] * b[3] - a[1] * b[2] + a[2] * b[1] + a[3] * b[0],
            )
            local = _local_axes(plan, i, p)
            u = [vdot(w, removed) for w in local]
            norm = math.sqrt(sum(v * v for v in u))
            if not norm > 0.0:
                continue
            u = [v / norm for v in u]
            unit[c0:c1] = u
            ju = [sum(cols[c0 + t][r] * u[t] for t in range(c1 - c0)) for r in range(m)]
            for t in range(c1 - c0):
                col, ut = cols[c0 + t], u[t]
                cols2[c0 + t] = tuple(col[r] - ju[r] * ut for r in range(m))
        z2 = None if z is None else [0.0 if f else v for v, f in zip(z, frozen, strict=True)]
        dp2, _ = self.step(cols2, de2, z2, axes, retry)
        for i in range(plan.n):
            c0, c1 = plan.starts[i], plan.starts[i + 1]
            if clamped[i] and c0 < c1:
                along = sum(unit[c] * dp2[c] for c in range(c0, c1))
                for c in range(c0, c1):
                    dp2[c] -= along * unit[c]
        second = _rotations_of(plan, [a + b + c for a, b, c in zip(p, done, dp2, strict=True)])
        return _project(plan, second)


def _local_axes(plan: _Plan, i: int, p: list[float]) -> list[Vec]:
    """:meth:`DofLayout.local_axes` of joint ``i``: its columns' ``ω_k`` in frame ``F_i``."""
    if plan.kinds[i] == "hinge":
        return [plan.hinge_axes[i]]  # type: ignore[list-item]
    c = plan.starts[i]
    v = (p[c], p[c + 1], p[c + 2])
    return list(_euler_columns(v, plan.order) if plan.euler else _expmap_columns(v))


def _stationary(cols: list[tuple[float, ...]], err: list[float]) -> bool:
    """:func:`core.jacobian_iteration._stationary` for one problem."""
    gradient = math.sqrt(_squares(_jtv(cols, err)))
    size = 0.0
    for col in cols:
        for c in col:
            size += c * c
    return gradient <= _STATIONARY * math.sqrt(size) * math.sqrt(_squares(err))


def solve_single(problem: Problem, rule: Rule, start: list[list[float]]) -> Solution:
    """The iteration of :mod:`core.jacobian` for a problem of one target, in floats.

    Args:
        problem: ``problem.size == 1`` and ``options.restarts == 0`` (the caller checks).
        rule: ``"transpose"``, ``"pinv"`` or ``"dls"``.
        start: the start pose, ``n`` rotations of 4 floats (:func:`core.jacobian_seed.start_one`).

    Returns:
        The same :class:`Solution` as the batched path, to rounding.
    """
    chain, opts = problem.chain, problem.options
    max_step = math.radians(opts.max_step_deg)
    plan = _plan(chain, opts.rotation_params, max_step)
    k = plan.starts[-1]
    alpha = opts.position_weight
    rotations = problem.target_rotations
    if rotations is None or alpha == 1.0:
        kind, m = "position", 3
    elif alpha == 0.0:
        kind, m = "orientation", 3
    else:
        kind, m = "pose", 6
    goal = _Goal(
        kind,
        tuple(problem.targets[0].tolist()),
        None if rotations is None else tuple(rotations[0].tolist()),
        math.sqrt(1.0 - alpha),
        math.sqrt(alpha),
        problem.tolerance,
        opts.angle_tolerance,
    )
    stepper = _Stepper(
        plan, rule, m, max_step, opts.damping, opts.adaptive_damping, opts.singular_cutoff
    )
    nudge = list(plan.nudge)
    can_nudge = any(v != 0.0 for v in nudge)
    scale = plan.scale

    q = _project(plan, [(r[0], r[1], r[2], r[3]) for r in start])
    posture = None
    if opts.posture_weight > 0.0:
        given = [tuple(r) for r in problem.initial[0].tolist()]
        posture = _params_of(plan, _project(plan, given))
    state = _fk(plan, q)
    err, done = goal.error(state)
    iterations = 0
    sigma_seen = math.inf
    beta = opts.step
    adapt = opts.adaptive_step and kind == "position"
    creep = _squares(err)  # the merit at the last window
    for _ in range(opts.max_iterations if k and not done else 0):
        p = _params_of(plan, q)
        axes = _axes(plan, state, p)
        cols = goal.columns(plan, state, axes)
        z = None
        if posture is not None:
            z = [opts.posture_weight * v for v in _difference(plan, posture, p)]
        de = [beta * v for v in err]
        new_q, sigma = stepper.propose(p, cols, de, z, axes, 0)
        scaled = (
            cols
            if plan.unit
            else [tuple(c * s for c in col) for col, s in zip(cols, scale, strict=True)]
        )
        kick = _stationary(scaled, err) and goal.pushes_inward(state)
        if kick and can_nudge:
            new_q = _project(
                plan, _rotations_of(plan, [a + b for a, b in zip(p, nudge, strict=True)])
            )
        new_state = _fk(plan, new_q)
        new_err, new_done = goal.error(new_state)
        merit = _squares(err)
        worse = _squares(new_err) > merit and not new_done and not kick and kind == "position"
        if adapt:
            beta = max(opts.step, 0.5 * beta) if worse else min(1.0, 2.0 * beta)
        for retry in range(1, _RETRIES + 1):
            if not worse:
                break
            new_q, _ = stepper.propose(p, cols, de, z, axes, retry)
            new_state = _fk(plan, new_q)
            new_err, new_done = goal.error(new_state)
            worse = _squares(new_err) > merit and not new_done
        if worse:
            new_q, new_state, new_err = q, state, err
        iterations += 1
        creeping = False
        if kind == "position" and iterations % _CREEP_WINDOW == 0:
            new_merit = _squares(new_err)
            creeping = new_merit > (1.0 - _CREEP_GAIN) ** 2 * creep
            creep = new_merit
        give_up = not new_done and (worse or creeping or goal.stalled(new_err, err))
        q, state, err = new_q, new_state, new_err
        sigma_seen = min(sigma_seen, sigma)
        if new_done or give_up:
            break

    if not math.isfinite(sigma_seen) and k:
        p = _params_of(plan, q)
        cols = goal.columns(plan, state, _axes(plan, state, p))
        if not plan.unit:
            cols = [tuple(c * s for c in col) for col, s in zip(cols, scale, strict=True)]
        sigma_seen = _sigma(_gram(cols, m)[0])
    if not math.isfinite(sigma_seen):
        sigma_seen = 0.0
    rots, points = list(q), state.positions
    if iterations or not seeded(problem):
        turn = orient_one(problem, goal.target, rots, points)
        if turn is not None:
            points = turned_points(turn, points)
    return Solution(
        rotations=np.array([rots]),
        positions=np.array([points]),
        iterations=np.array([iterations], dtype=np.int64),
        effector_rotation=None if rotations is None else np.array([state.worlds[-1]]),
        min_singular_value=np.array([sigma_seen]),
    )


__all__ = ["solve_single"]
