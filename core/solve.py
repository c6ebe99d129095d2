# SPDX-License-Identifier: GPL-3.0-or-later
"""The one entry point of the solver core: :func:`solve`.

It checks and flattens the inputs into a :class:`Problem` of ``N`` targets, runs the chosen
method, and measures the result the same way for every method (effector distance, angle to
the goal orientation, convergence), so methods can be compared fairly.

The one-target fast path (:func:`core.solver.solve_one`, :func:`~core.solver.solve_floats`,
:func:`~core.solver.solve_points`) and the prepared :class:`core.solver.Solver` are
:mod:`core.solver`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import ccd, fabrik, jacobian, rotations, stretch, triangulation
from .chain import Chain
from .errors import SolveInputError
from .kinematics import forward_kinematics
from .options import SolveOptions
from .problem import Problem
from .result import IKResult, Solution
from .rotations import FloatArray
from .wrist import pursues_orientation

Method = Callable[[Problem], Solution]

METHODS: dict[str, Method] = {
    "triangulation": triangulation.solve_triangulation,
    "ccd": ccd.solve_ccd,
    "jacobian_transpose": jacobian.solve_jacobian_transpose,
    "jacobian_pinv": jacobian.solve_jacobian_pinv,
    "jacobian_dls": jacobian.solve_jacobian_dls,
    "fabrik": fabrik.solve_fabrik,
}
"""Method name → implementation; the names :func:`solve` accepts."""


#: Targets and poles farther than this many reaches from the root are moved in along their
#: ray from the root before solving: the chain's best pose (straight toward them) is the
#: same, and squares of such distances would overflow. Errors use the original targets.
FAR = 1e9


_DEFAULT_OPTIONS = SolveOptions()


@functools.cache
def _rest_pose(n: int) -> FloatArray:
    """The rest pose ``(n, 4)`` (identities), shared and read-only."""
    pose = rotations.identity((n,))
    pose.flags.writeable = False
    return pose


def _norm(v: FloatArray) -> FloatArray:
    """Lengths of ``(N, 3)`` vectors, without overflow for huge finite components.

    Computed on the component rows ``v.T`` (fast in either memory order) as
    ``√((x² + z²) + y²)``: the order in which ``np.einsum`` (numpy 1.26, x86-64) sums a
    C-ordered row, so the lengths are the ones it gave here.
    """
    if v.shape[0] == 1:
        return np.array([math.hypot(*v[0].tolist())])
    x, y, z = v.T
    d = np.multiply(x, x)
    square = np.multiply(z, z)
    np.add(d, square, d)
    np.add(d, np.multiply(y, y, square), d)
    np.sqrt(d, d)
    overflow = ~np.isfinite(d)
    if np.any(overflow):
        d[overflow] = [math.hypot(*row) for row in v[overflow].tolist()]
    return d


def _pull_in(points: FloatArray, dist: FloatArray, limit: float) -> FloatArray:
    """``points (N, 3)`` at distances ``dist (N,)``, those beyond ``limit`` moved onto it."""
    if dist.shape[0] == 1 and not dist[0] > limit:
        return points  # (one target: no numpy reductions)
    far = dist > limit
    if not far.any():
        return points
    out = points.copy()
    out[far] = points[far] / (dist[far, None] / limit)
    return out


def _numbers(name: str, value: Any, shape: str) -> FloatArray:
    """``value`` as a float array, or a :class:`SolveInputError` saying what is valid."""
    try:
        if isinstance(value, str | bytes | dict):
            raise TypeError
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        kind = type(value).__name__
        raise SolveInputError(
            f"{name} must be numbers of shape {shape} (a sequence or array), got a {kind}: "
            f"{value!r:.60}"
        ) from None


def _unit_quaternions(name: str, q: FloatArray) -> FloatArray:
    """Rows ``(N, 4)`` of finite quaternions normalised without overflow; a row whose length
    is below 1e-12 (or rounds to zero) is refused."""
    scale = np.max(np.abs(q), axis=-1, keepdims=True)
    scaled = np.divide(q, scale, out=np.zeros_like(q), where=scale > 0.0)
    length = np.linalg.norm(scaled, axis=-1, keepdims=True)
    if not np.all((scale * length >= 1e-12) & (length > 0.0)):
        raise SolveInputError(
            f"{name} must be non-zero quaternions (w, x, y, z) of length >= 1e-12"
        )
    return scaled / length


def _batch(name: str, value: ArrayLike, width: int, batch: tuple[int, ...]) -> FloatArray:
    a = _numbers(name, value, f"(..., {width})")
    if a.shape[-1:] != (width,):
        raise SolveInputError(f"{name} must have shape (..., {width}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise SolveInputError(f"{name} must be finite numbers")
    try:
        a = np.broadcast_to(a, (*batch, width))
    except ValueError:
        raise SolveInputError(
            f"{name} of shape {a.shape} does not match the targets' batch shape {batch}"
        ) from None
    return a.reshape(-1, width)


def _method_and_options(method: str, options: Any) -> tuple[Method, SolveOptions]:
    impl = METHODS.get(method)
    if impl is None:
        raise SolveInputError(f"unknown method {method!r}; valid methods are {', '.join(METHODS)}")
    if options is not None and not isinstance(options, SolveOptions):
        raise SolveInputError(
            f"options must be a SolveOptions (or None), got {type(options).__name__}; "
            "pass single settings as keywords, e.g. tolerance=0.5"
        )
    return impl, options or _DEFAULT_OPTIONS


def solve(
    chain: Chain,
    target: ArrayLike,
    *,
    method: str = "triangulation",
    pole: ArrayLike | None = None,
    target_rotation: ArrayLike | None = None,
    initial: ArrayLike | None = None,
    options: SolveOptions | None = None,
    **option_changes: Any,
) -> IKResult:
    """Solve inverse kinematics for one target or a batch of targets.

    Args:
        chain: the chain (see :class:`~core.chain.Chain`).
        target: effector goal ``(3,)`` or a batch ``(..., 3)`` in the base frame.
        method: one of ``"triangulation"``, ``"ccd"``, ``"jacobian_transpose"``,
            ``"jacobian_pinv"``, ``"jacobian_dls"``, ``"fabrik"``.
        pole: a point ``(3,)`` or ``(..., 3)`` in the base frame; the chain bends in the
            plane through its root, the target and the pole. Without one, the bend plane
            follows the start pose's bend and never flips as the target moves smoothly.
        target_rotation: goal orientation ``(4,)`` or ``(..., 4)`` wxyz of the effector
            frame (the last joint's frame) in the base frame; weighted by
            ``options.position_weight``.
        initial: start pose ``(n, 4)`` or ``(..., n, 4)``, local rotations relative to the
            rest frames; the rest pose when ``None``.
        options: settings; ``option_changes`` override single fields, e.g. ``tolerance=0.5``.

    Returns:
        An :class:`IKResult` whose arrays have the targets' batch shape.

    Raises:
        SolveInputError: unknown method or option, malformed or non-finite inputs.
    """
    impl, opts = _method_and_options(method, options)
    if option_changes:
        opts = opts.replace(**option_changes)
    t = _numbers("target", target, "(3,) or (..., 3)")
    if t.ndim == 0 or t.shape[-1] != 3:
        raise SolveInputError(f"target must have shape (3,) or (..., 3), got {t.shape}")
    if not (all(map(math.isfinite, t.tolist())) if t.ndim == 1 else np.isfinite(t).all()):
        raise SolveInputError("target must be finite numbers")
    batch = t.shape[:-1]
    targets = t.reshape(-1, 3)
    n = chain.n_joints
    if initial is None:
        rest = _rest_pose(n)
        start = rest[None] if not batch else np.broadcast_to(rest, (targets.shape[0], n, 4))
    else:
        q0 = _numbers("initial", initial, f"(..., {n}, 4)")
        if q0.shape[-2:] != (n, 4) or not np.all(np.isfinite(q0)):
            raise SolveInputError(
                f"initial must be finite with shape (..., {n}, 4), got {q0.shape}"
            )
        try:
            start = np.broadcast_to(q0, (*batch, n, 4)).reshape(-1, n, 4)
        except ValueError:
            raise SolveInputError(
                f"initial of shape {q0.shape} does not match the targets' batch shape {batch}"
            ) from None
        start = _unit_quaternions("initial", start.reshape(-1, 4)).reshape(start.shape)
    goal_rot = None
    if target_rotation is not None:
        goal_rot = _unit_quaternions(
            "target_rotation", _batch("target_rotation", target_rotation, 4, batch)
        )
    poles = None if pole is None else _batch("pole", pole, 3, batch)
    distance = _norm(targets)
    problem = _problem(chain, targets, distance, goal_rot, poles, start, opts)
    return _measure(problem, targets, distance, method, _run(impl, problem, distance), batch)


def _run(impl: Method, problem: Problem, distance: FloatArray) -> Solution:
    """The method's solution of ``problem``, with soft reach and stretch where they apply
    (:mod:`core.stretch`: targets aimed at pulled in, or solved on the stretched chain one
    by one); ``distance (N,)`` the targets' distances from the root."""
    chain, opts = problem.chain, problem.options
    if not stretch.applies(chain, opts):
        return impl(problem)
    stretch.check(chain, opts)
    targets = problem.targets  # far targets pulled in (FAR): a chain stretches that far at most
    aims, scales = stretch.plan(
        chain,
        targets,
        np.minimum(distance, FAR * chain.reach),
        opts,
        problem.initial,
        problem.target_rotations if pursues_orientation(problem) else None,
    )
    if scales is None:
        return impl(dataclasses.replace(problem, targets=aims))
    size, n = problem.size, chain.n_joints
    same = np.all(scales == 1.0, axis=1)
    parts: list[tuple[Any, Solution]] = []
    if same.any():
        plain = np.flatnonzero(same)
        parts.append((plain, impl(problem.rows(plain))))
    for k in np.flatnonzero(~same).tolist():
        one = slice(k, k + 1)
        sub = dataclasses.replace(problem.rows(one), chain=chain.scaled(scales[k]))
        parts.append((one, impl(sub)))
    rotations_out = np.empty((size, n, 4))
    positions = np.empty((size, n + 1, 3))
    iterations = np.empty(size, dtype=np.int64)
    for rows, sol in parts:
        rotations_out[rows] = sol.rotations
        positions[rows] = sol.positions
        iterations[rows] = sol.iterations
    return Solution(rotations_out, positions, iterations, scales=scales)


def _problem(
    chain: Chain,
    targets: FloatArray,
    distance: FloatArray,
    goal_rot: FloatArray | None,
    poles: FloatArray | None,
    start: FloatArray,
    opts: SolveOptions,
) -> Problem:
    """The :class:`Problem` of checked inputs: the absolute tolerance, and far targets and
    poles pulled in (see :data:`FAR`); ``distance (N,)`` the targets' from the root."""
    tolerance = opts.tolerance if opts.tolerance is not None else 1e-6 * chain.reach
    far = FAR * chain.reach
    if poles is not None:
        poles = _pull_in(poles, _norm(poles), far)
    return Problem(chain, _pull_in(targets, distance, far), goal_rot, poles, start, tolerance, opts)


def _message(
    method: str,
    reached: int,
    size: int,
    beyond: int,
    reach: float,
    limited_misses: int = 0,
    stretched: bool = False,
) -> str:
    """The summary line: goals reached; targets **out of reach** (farther from the root than
    the chain's length; named beyond it when the links ``stretched``); and, on chains with
    limits, missed targets within that length as **unreachable within limits** (the
    method's closest admissible pose is returned)."""
    message = f"{method}: {reached} of {size} goals reached"
    if beyond and stretched:
        message += f"; {beyond} beyond the chain's length {reach:g} (the links stretch)"
    elif beyond:
        message += f"; {beyond} out of reach (beyond the chain's length {reach:g})"
    if limited_misses:
        message += (
            f"; {limited_misses} within the chain's length unreachable within limits "
            "(the closest admissible pose found is returned)"
        )
    return message


def _limited_misses(chain: Chain, converged: np.ndarray, distance: FloatArray) -> int:
    """Targets within the chain's length that were missed on a chain with limits."""
    if chain.is_free:
        return 0
    return int(np.count_nonzero(~converged & (distance <= chain.reach)))


def _measure_one(
    problem: Problem,
    targets: FloatArray,
    distance: FloatArray,
    method: str,
    sol: Solution,
    batch: tuple[int, ...],
) -> IKResult:
    """:func:`_measure` for one target without an orientation goal, in plain floats (the
    numbers are the same: the distance is the same ``hypot`` of the same differences)."""
    n = problem.chain.n_joints
    ex, ey, ez = sol.positions[0, -1].tolist()
    tx, ty, tz = targets[0].tolist()
    error = math.hypot(ex - tx, ey - ty, ez - tz)
    converged = error <= problem.tolerance
    reach = problem.chain.reach
    return IKResult(
        rotations=sol.rotations.reshape((*batch, n, 4)),
        positions=sol.positions.reshape((*batch, n + 1, 3)),
        error=np.full(batch, error),
        angle_error=None,
        iterations=sol.iterations.reshape(batch),
        converged=np.full(batch, converged),
        method=method,
        message=_message(
            method,
            int(converged),
            1,
            int(distance[0] > reach),
            reach,
            int(not converged and distance[0] <= reach and not problem.chain.is_free),
            sol.scales is not None,
        ),
        min_singular_value=None
        if sol.min_singular_value is None
        else sol.min_singular_value.reshape(batch),
        scales=None if sol.scales is None else sol.scales.reshape((*batch, n)),
    )


def _measure(
    problem: Problem,
    targets: FloatArray,
    distance: FloatArray,
    method: str,
    sol: Solution,
    batch: tuple[int, ...],
) -> IKResult:
    """Score a method's solution against the original ``targets (N, 3)``, and reshape it.

    ``distance (N,)`` is each target's distance from the root.
    """
    n = problem.chain.n_joints
    if problem.size == 1 and problem.target_rotations is None:
        return _measure_one(problem, targets, distance, method, sol, batch)
    # (the difference in component rows: fast for positions stored component-major)
    error = _norm(np.subtract(sol.positions[:, -1, :].T, targets.T).T)
    angle_error = None
    weight = problem.options.position_weight
    if problem.target_rotations is None or weight > 0.0:
        converged = error <= problem.tolerance
    else:
        converged = np.ones(problem.size, dtype=bool)
    if problem.target_rotations is not None:
        effector_rot = sol.effector_rotation
        if effector_rot is None:
            effector_rot = forward_kinematics(problem.chain, sol.rotations)[1][:, -1, :]
        angle_error = rotations.angle(
            rotations.multiply(rotations.conjugate(problem.target_rotations), effector_rot)
        )
        if weight < 1.0:
            converged &= angle_error <= problem.options.angle_tolerance
    reached = int(np.count_nonzero(converged))
    out_of_reach = int(np.count_nonzero(distance > problem.chain.reach))
    message = _message(
        method,
        reached,
        problem.size,
        out_of_reach,
        problem.chain.reach,
        _limited_misses(problem.chain, converged, distance),
        sol.scales is not None,
    )

    def shaped(a: np.ndarray, tail: tuple[int, ...] = ()) -> Any:
        return a.reshape((*batch, *tail))

    return IKResult(
        rotations=shaped(sol.rotations, (n, 4)),
        positions=shaped(sol.positions, (n + 1, 3)),
        error=shaped(error),
        angle_error=None if angle_error is None else shaped(angle_error),
        iterations=shaped(sol.iterations),
        converged=shaped(converged),
        method=method,
        message=message,
        min_singular_value=None
        if sol.min_singular_value is None
        else shaped(sol.min_singular_value),
        scales=None if sol.scales is None else shaped(sol.scales, (n,)),
    )
