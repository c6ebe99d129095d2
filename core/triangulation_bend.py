# SPDX-License-Identifier: GPL-3.0-or-later
"""The bend-plane step of triangulation's batched pass, on component rows.

:func:`core.bend_plane.orient_bend` written out for :mod:`core.triangulation_batch` (the same
result to rounding; tests compare them): after the pass, the chain turns about its
root → effector line toward the pole, or with ``bend_plane="rest"`` toward the start pose's
bend side carried to each target (:func:`rest_poles`). The work happens in the pass's
scratch rows; the turn's half angle comes without trigonometry (:func:`half_turn_of`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from . import rotations as rot
from .component_rows import (
    MATRIX_IDENTITY,
    QMUL,
    Rows,
    cross_into,
    dot_into,
    mapply_const_into,
    matrix_into,
    products_into,
    terms_into,
)
from .components import Num, Quat, Vec, qrotate, vscale
from .problem import Problem
from .rotations import FloatArray
from .triangulation_plan import (
    _BEND_TINY,
    _IDENTITY,
    _SAFE,
    _is_identity,
    _stack,
    _start_frame,
    _where,
)

if TYPE_CHECKING:
    from .triangulation_batch import _Scratch
    from .triangulation_plan import _Plan


def rest_poles(
    problem: Problem, plan: _Plan, targets: Vec, initial: list[Quat], work: _Scratch
) -> Vec:
    """The ``"rest"`` bend plane's implicit poles (as :func:`core.bend_plane.start_bend_points`).

    The start pose's bend side, carried by the shortest rotation from the start pose's
    root→effector direction to the root→target direction.
    """
    if all(_is_identity(q) for q in initial):
        start_axis, bend = plan.rest_start
    else:
        start_axis, bend = _start_frame(problem.chain, initial)
        if not all(type(x) is float for q in initial for x in q):
            n = problem.size
            carry = rot.between(
                _stack(start_axis, n), _stack(targets, n), fallback_axis=_stack(bend, n)
            )
            return qrotate((carry[:, 0], carry[:, 1], carry[:, 2], carry[:, 3]), bend)
        start_axis, bend = _floats(start_axis), _floats(bend)
    return _carried(start_axis, bend, targets, work)


def _floats(v: Vec) -> Vec:
    return (float(v[0]), float(v[1]), float(v[2]))


def _carried(a: Vec, v: Vec, targets: Vec, work: _Scratch) -> Vec:
    """``v`` turned by the shortest rotations from direction ``a`` to each target's direction.

    Closed form of :func:`core.components.qrotate` ``(``:func:`core.triangulation_plan._between`
    ``(a, t, v), v)`` for one ``a`` and ``v`` (floats): ``R v = v − ((â + t̂)·v / (1 + â·t̂))
    (â + t̂) + 2 (â·v) t̂``. As there, a zero ``a`` or target leaves ``v``, and so does an
    opposite target (the half turn is about ``v``, which is perpendicular to ``a``).
    """
    na = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if na == 0.0:
        return v
    ua = (a[0] / na, a[1] / na, a[2] / na)
    t1, t2, nt, dot = work.t1, work.t2, work.t3, work.t4
    np.sqrt(dot_into(targets, targets, nt, t1), nt)
    inv = np.divide(1.0, np.maximum(nt, _SAFE, t2), t2)
    away = nt > 0.0
    if not away.all():
        np.copyto(inv, 0.0, where=~away)
    ut = work.ut
    for k in range(3):
        np.multiply(targets[k], inv, ut[k])
    dot_into(ua, ut, dot, t1)
    opposite = (dot < -1.0 + 1e-12) & away
    flip = bool(opposite.any())
    both = work.cross
    for k in range(3):
        np.add(ut[k], ua[k], both[k])
    coef = np.add(dot, 1.0, dot)
    if flip:
        np.copyto(coef, 1.0, where=opposite)
    np.divide(dot_into(both, v, t2, t1), coef, coef)
    along: Num = 2.0 * (ua[0] * v[0] + ua[1] * v[1] + ua[2] * v[2])
    if flip:
        np.copyto(coef, 0.0, where=opposite)
        along = np.where(opposite, 0.0, along)
    out = work.poles
    for k in range(3):
        np.multiply(both[k], coef, t1)
        np.subtract(v[k], t1, out[k])
        np.multiply(ut[k], along, t1)
        np.add(out[k], t1, out[k])
    return out


def half_turn_of(
    x: FloatArray, y: FloatArray, cos_h: FloatArray, sin_h: FloatArray, work: _Scratch
) -> None:
    """``cos(φ/2)`` and ``sin(φ/2)`` of ``φ = atan2(y, x)`` without trigonometry, into
    ``cos_h`` and ``sin_h``: with ``h = |(x, y)|``, ``(h + |x|, |y|)`` normalised where
    ``x ≥ 0`` and ``(|y|, h + |x|)`` where ``x < 0``, the sine taking the sign of ``y`` — no
    cancellation in either. ``x`` is overwritten; the branches are picked by
    multiplying with 0 and 1 (exact)."""
    t1, t2 = work.t1, work.t2
    h = terms_into([(1, x, x), (1, y, y)], t1, t2)
    np.sqrt(h, h)
    ahead = x >= 0.0
    behind = ~ahead
    big = np.add(h, np.abs(x, x), x)
    small = np.abs(y, t2)
    np.multiply(big, ahead, cos_h)
    np.multiply(small, behind, h)
    np.add(cos_h, h, cos_h)
    np.multiply(small, ahead, sin_h)
    np.multiply(big, behind, h)
    np.add(sin_h, h, sin_h)
    np.copysign(sin_h, y, sin_h)
    terms_into([(1, cos_h, cos_h), (1, sin_h, sin_h)], h, t2)
    np.sqrt(h, h)
    np.maximum(h, _SAFE, h)
    np.divide(cos_h, h, cos_h)
    np.divide(sin_h, h, sin_h)


def orient_batch(
    problem: Problem,
    plan: _Plan,
    targets: Vec,
    root: Quat,
    points: list[Vec],
    initial: list[Quat],
    work: _Scratch,
) -> tuple[Quat, Rows | None]:
    """:func:`core.bend_plane.orient_bend` on component arrays (the same result to rounding).

    ``root`` is joint 0's local rotation and ``points`` the joint positions ``1 … n``, as
    component arrays. Returns the turned root rotation and the turn's rotation matrix (9
    rows) to apply to the inner joints, or ``None`` where nothing turns: the turn about the
    root→effector axis ``x̂`` by the angle ``φ`` from the pose's bend (the mean inner joint's
    offset from that axis) to the pole's offset, its half angle's cosine and sine from
    :func:`half_turn_of`.
    """
    opts = problem.options
    if problem.poles is not None:
        poles: Vec = tuple(np.ascontiguousarray(problem.poles.T))
    elif opts.bend_plane == "rest":
        poles = rest_poles(problem, plan, targets, initial, work)
    else:
        return root, None
    n = plan.n
    if n == 1:
        return root, None  # (no inner joint, no bend)
    tiny = _BEND_TINY * plan.reach
    t1, t2, t3, t4 = work.t1, work.t2, work.t3, work.t4
    eff = points[n - 1]
    length = np.sqrt(dot_into(eff, eff, t3, t1), t3)
    inv = np.divide(1.0, np.maximum(length, _SAFE, t2), t2)
    short = length <= tiny
    if short.any():
        np.copyto(inv, 0.0, where=short)
    axis = work.axis
    for k in range(3):
        np.multiply(eff[k], inv, axis[k])
    bend = work.bend
    for k in range(3):
        total = points[0][k]
        for j in range(1, n - 1):
            total = np.add(total, points[j][k], bend[k])
        np.multiply(total, 1.0 / (n - 1), bend[k])
    _across(bend, axis, bend, work)
    want = _across(poles, axis, work.want, work)
    axis_len = np.sqrt(dot_into(axis, axis, t3, t1), t3)
    inv = np.divide(1.0, np.maximum(axis_len, _SAFE, t2), t2)
    unit_axis = work.spin
    for k in range(3):
        np.multiply(axis[k], inv, unit_axis[k])
    usable = axis_len > 0.0
    if not usable.all():
        for row in unit_axis:
            np.copyto(row, 0.0, where=~usable)
    if opts.pole_angle:
        half = 0.5 * opts.pole_angle
        want = qrotate((math.cos(half), *vscale(unit_axis, math.sin(half))), want)
    usable &= np.sqrt(dot_into(bend, bend, t3, t1), t3) > tiny
    usable &= np.sqrt(dot_into(want, want, t3, t1), t3) > tiny
    if not usable.any():
        return root, None
    # φ = atan2((bend × want)·x̂, bend·want); the turn is (cos φ/2, sin φ/2 · x̂)
    x = dot_into(bend, want, t3, t1)
    y = dot_into(cross_into(bend, want, work.cross, t1), axis, t4, t1)
    turn = work.turn
    sin_h = work.dot
    half_turn_of(x, y, turn[0], sin_h, work)
    if not usable.all():
        # the identity where no turn is usable (selected by multiplying with 0 and 1)
        np.multiply(turn[0], usable, turn[0])
        np.add(turn[0], ~usable, turn[0])
        np.multiply(sin_h, usable, sin_h)
    for k in range(3):
        np.multiply(unit_axis[k], sin_h, turn[k + 1])
    # The root's world rotation becomes turn · rest_0 · q_0, so q_0 ← (rest_0⁻¹ turn rest_0) q_0.
    vector: Vec = turn[1:]
    if plan.rest0_inverse != MATRIX_IDENTITY:
        vector = mapply_const_into(plan.rest0_inverse, vector, work.poles, t1)  # (poles spent)
    q0: Quat = products_into((turn[0], *vector), root, QMUL, work.q0, t1)
    limits0 = problem.chain.limits[0]
    if not limits0.is_free:
        usable = usable & (limits0.violation(_stack(q0, problem.size)) <= 1e-9)
        turn = _where(usable, turn, _IDENTITY)
        q0 = _where(usable, q0, root)
    # Where the turn is unusable it is exactly the identity: q_0 and the points stay (the
    # effector lies on the turn's axis and stays everywhere).
    return q0, matrix_into(turn, work.matrix, work.products)


def _across(v: Vec, axis: Vec, out: Rows, work: _Scratch) -> Rows:
    """``v − (v·axis) axis`` into ``out`` (which may be ``v``)."""
    along = dot_into(v, axis, work.dot, work.t1)
    for k in range(3):
        np.multiply(axis[k], along, work.t1)
        np.subtract(v[k], work.t1, out[k])
    return out
