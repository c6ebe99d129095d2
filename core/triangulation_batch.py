# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation's pass for a batch of targets, on ``(N,)`` component arrays.

The pass of :mod:`core.triangulation` (R. Müller-Cajar and R. Mukundan, IVCNZ 2007,
Algorithm 1; that module's docstring states the rules and cites the equations) for ``N``
targets at once: joint by joint, root first, each step one numpy operation per component
on all targets. Cone joints take the constrained rule and the cone selection of
:mod:`core.triangulation`; joints with other limits are projected by
:meth:`JointLimits.project <core.limits.JointLimits.project>`. The bend-plane step after
the pass is :func:`core.bend_plane.orient_bend` written out on component arrays (tests check
both against it and against the single-target float pass).

Speed (chain U's 10,000 targets take a few milliseconds, ``scripts/bench_triangulation.py``):
every operation of a step writes into rows of one scratch block allocated per call
(``out=``), and each joint's position into the rows that become the result. Temporaries of
a batch's size, allocated and freed a few hundred times per call, made the C allocator
return heap memory to the system and fault it back in (about 1,300 page faults per call for
10,000 targets) and spread the working set over more memory than the caches hold. Where a
step's operand is a float constant (the rest pose, an identity rotation) the product is
copied instead of multiplied by ones and zeros (the same numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .components import Num, Quat, Vec, mapply, qmul, qrotate, vdot, vscale
from .problem import Problem
from .rotations import FloatArray
from .triangulation import (
    _BEND_TINY,
    _IDENTITY,
    _NEAR,
    _OPPOSITE,
    _PARALLEL,
    _SAFE,
    _X,
    _Y,
    _between,
    _cone_select,
    _constrained_rule,
    _free_rule,
    _is_identity,
    _norm,
    _perpendicular,
    _stack,
    _start_frame,
    _take,
    _turn_over,
    _where,
)

if TYPE_CHECKING:
    from .triangulation import _Plan

Rows = tuple[Any, ...]


def _k(x: float) -> FloatArray:
    """``x`` as a one-element array: it broadcasts like the float, and a ufunc takes it
    about 1 µs faster than a Python float (which it converts on every call)."""
    return np.array([x])


_ONE, _ZERO, _TWO, _K_SAFE = _k(1.0), _k(0.0), _k(2.0), _k(_SAFE)
_K_OPPOSITE, _K_PARALLEL = _k(_OPPOSITE), _k(_PARALLEL)

#: Hamilton products as signed terms ``(sign, i, j)`` meaning ``± p[i] q[j]``, summed left
#: to right (the order of :func:`core.components.qmul` and ``qmul_conj``).
_QMUL = (
    ((1, 0, 0), (-1, 1, 1), (-1, 2, 2), (-1, 3, 3)),
    ((1, 0, 1), (1, 1, 0), (1, 2, 3), (-1, 3, 2)),
    ((1, 0, 2), (-1, 1, 3), (1, 2, 0), (1, 3, 1)),
    ((1, 0, 3), (1, 1, 2), (-1, 2, 1), (1, 3, 0)),
)
_QMUL_CONJ = (
    ((1, 0, 0), (1, 1, 1), (1, 2, 2), (1, 3, 3)),
    ((1, 0, 1), (-1, 1, 0), (-1, 2, 3), (1, 3, 2)),
    ((1, 0, 2), (1, 1, 3), (-1, 2, 0), (-1, 3, 1)),
    ((1, 0, 3), (-1, 1, 2), (1, 2, 1), (-1, 3, 0)),
)


# --------------------------------------------------------------------------- in-place algebra
def _zero(x: Num) -> bool:
    """True for the float ``0.0`` (a product with it is dropped: the same sum, to the sign
    of a zero)."""
    return type(x) is float and x == 0.0


def _terms_into(terms: list[tuple[int, Num, Num]], out: FloatArray, tmp: FloatArray) -> FloatArray:
    """``Σ ± f·g`` over ``terms`` ``(sign, f, g)``, left to right, into ``out``."""
    first = True
    for sign, f, g in terms:
        if (type(f) is float and f == 0.0) or (type(g) is float and g == 0.0):
            continue  # (as _zero)
        if first:
            np.multiply(f, g, out)
            if sign < 0:
                np.negative(out, out)
            first = False
        else:
            np.multiply(f, g, tmp)
            (np.add if sign > 0 else np.subtract)(out, tmp, out)
    if first:
        out.fill(0.0)
    return out


def _arrays(*parts: tuple[Num, ...]) -> bool:
    """True when no component is a Python float (the unrolled paths below apply)."""
    return all(float not in map(type, part) for part in parts)


_mul, _add, _sub = np.multiply, np.add, np.subtract


def _dot_into(a: Vec, b: Vec, out: FloatArray, tmp: FloatArray) -> FloatArray:
    """``a·b`` into ``out`` (as :func:`core.components.vdot`)."""
    if not _arrays(a, b):
        return _terms_into([(1, a[0], b[0]), (1, a[1], b[1]), (1, a[2], b[2])], out, tmp)
    _mul(a[0], b[0], out)
    _mul(a[1], b[1], tmp)
    _add(out, tmp, out)
    _mul(a[2], b[2], tmp)
    return _add(out, tmp, out)


def _cross_into(a: Vec, b: Vec, out: Rows, tmp: FloatArray) -> Rows:
    """``a × b`` into ``out`` (as :func:`core.components.vcross`; ``out`` aliases neither)."""
    if not _arrays(a, b):
        for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
            _terms_into([(1, a[i], b[j]), (-1, a[j], b[i])], out[k], tmp)
        return out
    a0, a1, a2 = a
    b0, b1, b2 = b
    o0, o1, o2 = out
    _mul(a1, b2, o0)
    _mul(a2, b1, tmp)
    _sub(o0, tmp, o0)
    _mul(a2, b0, o1)
    _mul(a0, b2, tmp)
    _sub(o1, tmp, o1)
    _mul(a0, b1, o2)
    _mul(a1, b0, tmp)
    _sub(o2, tmp, o2)
    return out


def _combine_into(s: Num, a: Vec, t: Num, b: Vec, out: Rows, tmp: FloatArray) -> Rows:
    """``s·a + t·b`` into ``out`` (as :func:`core.components.vcombine`)."""
    if not _arrays((s, t), a, b):
        for k in range(3):
            _terms_into([(1, s, a[k]), (1, t, b[k])], out[k], tmp)
        return out
    for ak, bk, ok in zip(a, b, out, strict=True):
        _mul(s, ak, ok)
        _mul(t, bk, tmp)
        _add(ok, tmp, ok)
    return out


def _products_into(p: Quat, q: Quat, table: tuple[Any, ...], out: Rows, tmp: FloatArray) -> Rows:
    """A Hamilton product (``table``: :data:`_QMUL` or :data:`_QMUL_CONJ`) into ``out``,
    which aliases neither factor."""
    if not _arrays(p, q):
        for k, terms in enumerate(table):
            _terms_into([(sign, p[i], q[j]) for sign, i, j in terms], out[k], tmp)
        return out
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    ow, ox, oy, oz = out
    if table is _QMUL:
        _mul(pw, qw, ow)
        _mul(px, qx, tmp)
        _sub(ow, tmp, ow)
        _mul(py, qy, tmp)
        _sub(ow, tmp, ow)
        _mul(pz, qz, tmp)
        _sub(ow, tmp, ow)
        _mul(pw, qx, ox)
        _mul(px, qw, tmp)
        _add(ox, tmp, ox)
        _mul(py, qz, tmp)
        _add(ox, tmp, ox)
        _mul(pz, qy, tmp)
        _sub(ox, tmp, ox)
        _mul(pw, qy, oy)
        _mul(px, qz, tmp)
        _sub(oy, tmp, oy)
        _mul(py, qw, tmp)
        _add(oy, tmp, oy)
        _mul(pz, qx, tmp)
        _add(oy, tmp, oy)
        _mul(pw, qz, oz)
        _mul(px, qy, tmp)
        _add(oz, tmp, oz)
        _mul(py, qx, tmp)
        _sub(oz, tmp, oz)
        _mul(pz, qw, tmp)
        _add(oz, tmp, oz)
        return out
    _mul(pw, qw, ow)
    _mul(px, qx, tmp)
    _add(ow, tmp, ow)
    _mul(py, qy, tmp)
    _add(ow, tmp, ow)
    _mul(pz, qz, tmp)
    _add(ow, tmp, ow)
    _mul(pw, qx, ox)
    _mul(px, qw, tmp)
    _sub(ox, tmp, ox)
    _mul(py, qz, tmp)
    _sub(ox, tmp, ox)
    _mul(pz, qy, tmp)
    _add(ox, tmp, ox)
    _mul(pw, qy, oy)
    _mul(px, qz, tmp)
    _add(oy, tmp, oy)
    _mul(py, qw, tmp)
    _sub(oy, tmp, oy)
    _mul(pz, qx, tmp)
    _sub(oy, tmp, oy)
    _mul(pw, qz, oz)
    _mul(px, qy, tmp)
    _sub(oz, tmp, oz)
    _mul(py, qx, tmp)
    _add(oz, tmp, oz)
    _mul(pz, qw, tmp)
    _sub(oz, tmp, oz)
    return out


def _rotate_into(q: Quat, v: Vec, out: Rows, t: Rows, tmp: FloatArray) -> Rows:
    """``q`` applied to ``v``, into ``out`` (as :func:`core.components.qrotate`:
    ``v + w·t + u × t`` with ``t = 2 u × v``); ``t`` and ``tmp`` are scratch rows."""
    u = q[1:]
    _cross_into(u, v, t, tmp)
    for row in t:
        np.multiply(row, _TWO, row)
    _cross_into(u, t, out, tmp)
    for k in range(3):
        np.multiply(t[k], q[0], tmp)
        np.add(v[k], tmp, tmp)
        np.add(tmp, out[k], out[k])
    return out


# --------------------------------------------------------------------------- scratch rows
#: Named rows of the scratch block: a count, or ``(2, count)`` for a pair (what the next
#: joint reads while this joint writes its own: the previous link's direction, the last
#: axis, the last world rotation, the next joint's position). The bend-plane step reuses
#: them under its own names (:class:`_Scratch`).
_LAYOUT: tuple[tuple[str, Any], ...] = (
    # per joint
    ("chat", 3),
    ("c2", 1),
    ("c", 1),
    ("inv_c", 1),
    ("rn", 1),
    ("dot", 1),
    ("t1", 1),
    ("t2", 1),
    ("t3", 1),
    ("t4", 1),
    ("w", 3),
    ("u", 3),
    ("spin", 3),
    ("turn", 4),
    ("parent", 4),
    ("current", 4),
    ("local", 4),
    ("axes", (2, 3)),
    ("dirs", (2, 3)),
    ("worlds", (2, 4)),
    ("points", (2, 3)),
)
_ROWS = sum(s if isinstance(s, int) else s[0] * s[1] for _, s in _LAYOUT)


class _Scratch:
    """The rows one call of the pass writes into: one ``(rows, N)`` block, named by use
    (:data:`_LAYOUT`); :meth:`view` gives the same names on the first ``m`` columns (the
    targets still being placed)."""

    def __init__(self, block: FloatArray) -> None:
        self.block = block
        rows = iter(block)
        for name, shape in _LAYOUT:
            if shape == 1:
                value: Any = next(rows)
            elif isinstance(shape, int):
                value = tuple(next(rows) for _ in range(shape))
            else:
                value = tuple(tuple(next(rows) for _ in range(shape[1])) for _ in range(shape[0]))
            setattr(self, name, value)
        # The bend-plane step runs after the pass, on the rows the joints used (except
        # spin, turn, dot and t1…t4, which it uses as they are named).
        self.poles = self.chat
        self.ut = self.w
        self.axis = self.u
        self.bend, self.want = self.axes
        self.cross = self.dirs[0]
        self.q0 = self.current
        self.matrix = (*self.worlds[0], *self.worlds[1], self.parent[0])
        self.products = (*self.parent[1:], *self.local, *self.points[0][:2])

    def view(self, m: int) -> _Scratch:
        return _Scratch(self.block[:, :m])

    chat: Rows
    c2: FloatArray
    c: FloatArray
    inv_c: FloatArray
    rn: FloatArray
    dot: FloatArray
    t1: FloatArray
    t2: FloatArray
    t3: FloatArray
    t4: FloatArray
    w: Rows
    u: Rows
    spin: Rows
    turn: Rows
    parent: Rows
    current: Rows
    local: Rows
    axes: tuple[Rows, Rows]
    dirs: tuple[Rows, Rows]
    worlds: tuple[Rows, Rows]
    points: tuple[Rows, Rows]
    poles: Rows
    ut: Rows
    axis: Rows
    bend: Rows
    want: Rows
    cross: Rows
    q0: Rows
    matrix: Rows
    products: Rows


def _spare(pair: tuple[Rows, Rows], held: tuple[Any, ...] | None) -> Rows:
    """The rows of ``pair`` that do not hold ``held``."""
    return pair[1] if held is not None and held[0] is pair[0][0] else pair[0]


def _is_floats(q: tuple[Num, ...]) -> bool:
    return set(map(type, q)) == {float}


# --------------------------------------------------------------------------- one joint
def _shortest_turn_into(u: Vec, d: Vec, axis: Vec, out: Rows, work: _Scratch) -> Rows:
    """Unit quaternions of the shortest rotations taking unit ``u`` to unit ``d``, into
    ``out``: ``(1 + u·d, u × d)`` normalised; nearly opposite vectors (``u·d < −1 + 1e-6``)
    by :func:`core.triangulation._turn_over` (an exact half turn goes about ``axis`` made
    perpendicular to ``u``)."""
    dot, t1, t2 = work.dot, work.t1, work.t2
    _dot_into(u, d, dot, t1)
    x = out[1:]
    _cross_into(u, d, x, t1)
    w = np.add(dot, _ONE, out[0])
    np.multiply(w, w, t1)
    for xk in x:
        np.multiply(xk, xk, t2)
        np.add(t1, t2, t1)
    # (exactly opposite vectors give a zero norm; they are among those patched below)
    np.maximum(t1, _K_SAFE, t1)
    np.sqrt(t1, t1)
    np.divide(_ONE, t1, t1)
    back = (dot < _K_OPPOSITE).nonzero()[0]
    patch: tuple[Num, ...] = ()
    if back.size:
        ub, db, xb = _take(u, back), _take(d, back), tuple(xk[back] for xk in x)
        xn = _norm(xb)
        hint = _where(xn > _PARALLEL, vscale(xb, 1.0 / np.maximum(xn, _SAFE)), _take(axis, back))
        patch = _turn_over(ub, db, _perpendicular(ub, hint), np.sqrt)
    for row in out:
        np.multiply(row, t1, row)
    for row, value in zip(out, patch, strict=False):
        row[back] = value
    return out


@dataclass
class _PassState:
    """What the pass carries from joint to joint (component arrays or floats).

    Attributes:
        world: the last placed joint's world rotation.
        p: the next joint's position.
        d: the last placed link's direction.
        axis: the last rotation axis (§3.1.1 fallback), or ``None`` before the first.
        formed: ``(N,)`` a full triangle has formed (§3.1.2).
        any_formed: ``formed`` holds somewhere.
        settled: ``formed`` before the last joint, or the target lay beyond the rest of the
            chain at the last joint: those targets' links point at the target from the last
            joint on.
    """

    world: Quat
    p: Vec
    d: Vec
    axis: Vec | None
    formed: Any
    any_formed: bool
    settled: Any = None

    def take(self, rows: Any) -> _PassState:
        """The state of targets ``rows`` only."""
        formed = self.formed[rows]
        return _PassState(
            _take(self.world, rows),
            _take(self.p, rows),
            _take(self.d, rows),
            None if self.axis is None else _take(self.axis, rows),
            formed,
            bool(formed.any()),
            None if self.settled is None else self.settled[rows],
        )


def _frames(
    plan: _Plan, i: int, start: Quat, state: _PassState, work: _Scratch
) -> tuple[Quat, Quat]:
    """Joint ``i``'s parent frame ``world · rest_i`` and current frame ``parent · start``."""
    rest = plan.rests[i]
    parent = state.world
    if rest != _IDENTITY:
        if _is_floats(parent):
            parent = qmul(parent, rest)
        else:
            parent = _products_into(parent, rest, _QMUL, work.parent, work.t1)
    if _is_identity(start):
        return parent, parent
    if _is_floats(parent) and _is_floats(start):
        return parent, qmul(parent, start)
    return parent, _products_into(parent, start, _QMUL, work.current, work.t1)


def _place_joint(
    problem: Problem,
    plan: _Plan,
    i: int,
    targets: Vec,
    start: Quat,
    state: _PassState,
    work: _Scratch,
    p_out: Rows,
    local_out: Rows,
) -> Quat:
    """Place joint ``i`` for every target (one step of Algorithm 1); returns its local rotation.

    ``start`` is the joint's start rotation; ``state`` is updated; the next joint's
    position is written into ``p_out`` and the local rotation into ``local_out`` (the
    returned rotation is a new one where the joint's limits were projected).
    """
    size = problem.size
    near = _NEAR * plan.reach
    a = plan.lengths[i]
    kind = plan.kinds[i]
    formed = state.formed
    t1 = work.t1
    parent, current = _frames(plan, i, start, state, work)
    # A straight chain's next link starts along the previous link's new direction.
    if plan.straight[i] and _is_identity(start):
        u = state.d
    elif _is_floats(current):
        u = qrotate(current, plan.units[i])
    else:
        u = _rotate_into(current, plan.units[i], work.u, work.spin, t1)
    # c⃗ = t − p, c = |c⃗|, ĉ = c⃗ / max(c, near)
    chat, c2, c, inv_c = work.chat, work.c2, work.c, work.inv_c
    cv: Vec = targets
    if not (_zero(state.p[0]) and _zero(state.p[1]) and _zero(state.p[2])):
        cv = tuple(np.subtract(targets[k], state.p[k], chat[k]) for k in range(3))
    _dot_into(cv, cv, c2, t1)
    np.sqrt(c2, c)
    k_near = _k(near)
    np.maximum(c, k_near, inv_c)
    np.divide(_ONE, inv_c, inv_c)
    for k in range(3):
        np.multiply(cv[k], inv_c, chat[k])
    # Rotation axis r = a × c (eq. 7); undefined when parallel (§3.1.1).
    axis = _cross_into(u, chat, _spare(work.axes, state.axis), t1)
    rn = work.rn
    np.sqrt(_dot_into(axis, axis, rn, t1), rn)
    np.maximum(rn, _K_SAFE, t1)
    np.divide(_ONE, t1, t1)
    for row in axis:
        np.multiply(row, t1, row)
    bad = np.less_equal(rn, _K_PARALLEL)
    if bad.any():
        if state.any_formed:
            # Links already pointing at the target after a full triangle need no axis.
            bad &= ~(formed & np.greater(_dot_into(u, chat, work.dot, t1), _ZERO))
        need = bad.nonzero()[0]
        if need.size:
            hint = state.axis if state.axis is not None else qrotate(current, _X)
            fallback = _perpendicular(_take(chat, need), _take(hint, need))
            for row, value in zip(axis, fallback, strict=True):
                row[need] = value
    w = _cross_into(chat, axis, work.w, t1)
    # Law of cosines (eqs. 4–6) with the special cases of §3.1.2–3.1.3.
    delta90 = problem.options.delta_b_deg == 90.0
    cone_axis = qrotate(parent, _Y) if kind == "cone" else None
    beyond: Any = False
    if plan.families[i] is not None:
        kappa: Num = 0.0
        if cone_axis is not None:
            kappa = np.arccos(np.clip(vdot(cone_axis, chat), -1.0, 1.0))
        cos_d, sin_d, now_formed = _constrained_rule(plan, i, c, c2, inv_c, kappa, delta90)
    else:
        cos_d, sin_d = _free_rule(plan, i, c, c2, inv_c, delta90)
        b = plan.remaining[i]
        now_formed = np.greater_equal(c, _k(abs(a - b))) & np.less_equal(c, _k(a + b))
        # Beyond the rest of the chain by a margin no rounding closes: this link and every
        # later one point straight at the target.
        beyond = np.greater(c, _k(a + b + _BEYOND * plan.reach))
    if state.any_formed:
        # cos δ = 1, sin δ = 0 where formed (selected by multiplying with 0 and 1)
        np.multiply(cos_d, ~formed, cos_d)
        np.add(cos_d, formed, cos_d)
        np.multiply(sin_d, ~formed, sin_d)
    d = _combine_into(cos_d, chat, sin_d, w, _spare(work.dirs, state.d), t1)
    at_joint = np.less_equal(c, k_near).nonzero()[0]
    if at_joint.size:
        for row, value in zip(d, _take(u, at_joint), strict=True):
            row[at_joint] = value
    if cone_axis is not None:
        d = _cone_select(d, chat, cos_d, sin_d, w, cone_axis, plan.cones[i])
    turn = _shortest_turn_into(u, d, axis, work.turn, work)
    world = _spare(work.worlds, state.world)
    _products_into(turn, current, _QMUL, world, t1)
    local = _products_into(parent, world, _QMUL_CONJ, local_out, t1)
    if kind == "project":
        projected = problem.chain.limits[i].project(_stack(local, size))
        local = tuple(np.moveaxis(projected, -1, 0))
        world = qmul(parent, local)
        d = qrotate(world, plan.units[i])
    k_a = _k(a)
    for k in range(3):
        np.multiply(d[k], k_a, p_out[k])
        np.add(state.p[k], p_out[k], p_out[k])
    state.world = world
    state.p = p_out
    state.d = d
    state.axis = axis
    state.settled = formed | beyond
    state.formed = formed | (now_formed & np.greater(c, k_near))
    state.any_formed = bool(state.formed.any())
    return local


# --------------------------------------------------------------------------- bend plane
def _rest_poles(
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
            return qrotate(_between(start_axis, targets, bend), bend)
        start_axis, bend = _floats(start_axis), _floats(bend)
    return _carried(start_axis, bend, targets, work)


def _floats(v: Vec) -> Vec:
    return (float(v[0]), float(v[1]), float(v[2]))


def _carried(a: Vec, v: Vec, targets: Vec, work: _Scratch) -> Vec:
    """``v`` turned by the shortest rotations from direction ``a`` to each target's direction.

    Closed form of :func:`core.components.qrotate` ``(``:func:`core.triangulation._between`
    ``(a, t, v), v)`` for one ``a`` and ``v`` (floats): ``R v = v − ((â + t̂)·v / (1 + â·t̂))
    (â + t̂) + 2 (â·v) t̂``. As there, a zero ``a`` or target leaves ``v``, and so does an
    opposite target (the half turn is about ``v``, which is perpendicular to ``a``).
    """
    na = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if na == 0.0:
        return v
    ua = (a[0] / na, a[1] / na, a[2] / na)
    t1, t2, nt, dot = work.t1, work.t2, work.t3, work.t4
    np.sqrt(_dot_into(targets, targets, nt, t1), nt)
    inv = np.divide(1.0, np.maximum(nt, _SAFE, t2), t2)
    away = nt > 0.0
    if not away.all():
        np.copyto(inv, 0.0, where=~away)
    ut = work.ut
    for k in range(3):
        np.multiply(targets[k], inv, ut[k])
    _dot_into(ua, ut, dot, t1)
    opposite = (dot < -1.0 + 1e-12) & away
    flip = bool(opposite.any())
    both = work.cross
    for k in range(3):
        np.add(ut[k], ua[k], both[k])
    coef = np.add(dot, 1.0, dot)
    if flip:
        np.copyto(coef, 1.0, where=opposite)
    np.divide(_dot_into(both, v, t2, t1), coef, coef)
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


def _half_turn_of(
    x: FloatArray, y: FloatArray, cos_h: FloatArray, sin_h: FloatArray, work: _Scratch
) -> None:
    """``cos(φ/2)`` and ``sin(φ/2)`` of ``φ = atan2(y, x)`` without trigonometry, into
    ``cos_h`` and ``sin_h``: with ``h = |(x, y)|``, ``(h + |x|, |y|)`` normalised where
    ``x ≥ 0`` and ``(|y|, h + |x|)`` where ``x < 0``, the sine taking the sign of ``y`` — no
    cancellation in either. ``x`` is overwritten; the branches are picked by
    multiplying with 0 and 1 (exact)."""
    t1, t2 = work.t1, work.t2
    h = _terms_into([(1, x, x), (1, y, y)], t1, t2)
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
    _terms_into([(1, cos_h, cos_h), (1, sin_h, sin_h)], h, t2)
    np.sqrt(h, h)
    np.maximum(h, _SAFE, h)
    np.divide(cos_h, h, cos_h)
    np.divide(sin_h, h, sin_h)


def _orient_batch(
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
    :func:`_half_turn_of`.
    """
    opts = problem.options
    if problem.target_rotations is not None and opts.position_weight < 1.0:
        return root, None
    if problem.poles is not None:
        poles: Vec = tuple(np.ascontiguousarray(problem.poles.T))
    elif opts.bend_plane == "rest":
        poles = _rest_poles(problem, plan, targets, initial, work)
    else:
        return root, None
    n = plan.n
    if n == 1:
        return root, None  # (no inner joint, no bend)
    tiny = _BEND_TINY * plan.reach
    t1, t2, t3, t4 = work.t1, work.t2, work.t3, work.t4
    eff = points[n - 1]
    length = np.sqrt(_dot_into(eff, eff, t3, t1), t3)
    inv = np.divide(1.0, np.maximum(length, _SAFE, t2), t2)
    short = length <= tiny
    if short.any():
        np.copyto(inv, 0.0, where=short)
    axis = work.axis
    for k in range(3):
        np.multiply(eff[k], inv, axis[k])
    bend = work.bend
    for k in range(3):
        np.copyto(bend[k], points[0][k])
        for j in range(1, n - 1):
            np.add(bend[k], points[j][k], bend[k])
        np.multiply(bend[k], 1.0 / (n - 1), bend[k])
    _across(bend, axis, bend, work)
    want = _across(poles, axis, work.want, work)
    axis_len = np.sqrt(_dot_into(axis, axis, t3, t1), t3)
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
    usable &= np.sqrt(_dot_into(bend, bend, t3, t1), t3) > tiny
    usable &= np.sqrt(_dot_into(want, want, t3, t1), t3) > tiny
    if not usable.any():
        return root, None
    # φ = atan2((bend × want)·x̂, bend·want); the turn is (cos φ/2, sin φ/2 · x̂)
    x = _dot_into(bend, want, t3, t1)
    y = _dot_into(_cross_into(bend, want, work.cross, t1), axis, t4, t1)
    turn = work.turn
    sin_h = work.dot
    _half_turn_of(x, y, turn[0], sin_h, work)
    if not usable.all():
        # the identity where no turn is usable (selected by multiplying with 0 and 1)
        np.multiply(turn[0], usable, turn[0])
        np.add(turn[0], ~usable, turn[0])
        np.multiply(sin_h, usable, sin_h)
    for k in range(3):
        np.multiply(unit_axis[k], sin_h, turn[k + 1])
    # The root's world rotation becomes turn · rest_0 · q_0, so q_0 ← (rest_0⁻¹ turn rest_0) q_0.
    vector: Vec = turn[1:]
    if plan.rest0_inverse != _MATRIX_IDENTITY:
        vector = mapply(plan.rest0_inverse, vector)
    q0: Quat = _products_into((turn[0], *vector), root, _QMUL, work.q0, t1)
    limits0 = problem.chain.limits[0]
    if not limits0.is_free:
        usable = usable & (limits0.violation(_stack(q0, problem.size)) <= 1e-9)
        turn = _where(usable, turn, _IDENTITY)
        q0 = _where(usable, q0, root)
    # Where the turn is unusable it is exactly the identity: q_0 and the points stay (the
    # effector lies on the turn's axis and stays everywhere).
    return q0, _matrix_into(turn, work.matrix, work.products)


def _across(v: Vec, axis: Vec, out: Rows, work: _Scratch) -> Rows:
    """``v − (v·axis) axis`` into ``out`` (which may be ``v``)."""
    along = _dot_into(v, axis, work.dot, work.t1)
    for k in range(3):
        np.multiply(axis[k], along, work.t1)
        np.subtract(v[k], work.t1, out[k])
    return out


def _matrix_into(q: Quat, out: Rows, products: Rows) -> Rows:
    """Rotation matrices of unit ``q`` into ``out`` (9 rows, as :func:`core.components.qmatrix`;
    exactly ``I`` for the identity); ``products`` are 9 scratch rows."""
    w, x, y, z = q
    xx, yy, zz, xy, xz, yz, wx, wy, wz = products
    for row, (f, g) in zip(
        products,
        ((x, x), (y, y), (z, z), (x, y), (x, z), (y, z), (w, x), (w, y), (w, z)),
        strict=True,
    ):
        np.multiply(f, g, row)
    add, sub = np.add, np.subtract
    entries: tuple[tuple[FloatArray, FloatArray, np.ufunc, bool], ...] = (
        (yy, zz, add, True),
        (xy, wz, sub, False),
        (xz, wy, add, False),
        (xy, wz, add, False),
        (xx, zz, add, True),
        (yz, wx, sub, False),
        (xz, wy, sub, False),
        (yz, wx, add, False),
        (xx, yy, add, True),
    )
    for row, (f, g, op, one) in zip(out, entries, strict=True):
        op(f, g, row)
        np.multiply(row, 2.0, row)
        if one:
            np.subtract(1.0, row, row)
    return out


def _mapply_into(m: Rows, v: Vec, out: FloatArray, tmp: FloatArray) -> None:
    """``m · v`` into ``out`` (as :func:`core.components.mapply`): ``v`` three ``(k, N)``
    component arrays of ``k`` points each, ``m`` nine ``(N,)`` rows, ``out`` ``(3, k, N)``,
    ``tmp`` ``(k, N)``."""
    for k in range(3):
        row = out[k]
        np.multiply(m[3 * k], v[0], row)
        np.multiply(m[3 * k + 1], v[1], tmp)
        np.add(row, tmp, row)
        np.multiply(m[3 * k + 2], v[2], tmp)
        np.add(row, tmp, row)


_MATRIX_IDENTITY = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


# --------------------------------------------------------------------------- the pass
#: Targets leave the pass early (:func:`_finish_straight`) when their count times the joints
#: left reaches this: fewer are cheaper to carry along than to gather out.
_RETIRE = 1024
#: A target farther than the rest of the chain plus this fraction of the reach stays beyond
#: it at every later joint, whatever the rounding of the joint positions.
_BEYOND = 1e-9


def _straight_from(plan: _Plan, initial: list[Quat]) -> list[bool]:
    """Per joint ``i``: every joint from ``i`` on is free, starts at rest and continues the
    previous link (a target whose triangle has formed two joints before ``i``, or which lay
    beyond the rest of the chain at joint ``i − 1``, keeps its links from ``i`` on straight
    toward it: :func:`_finish_straight`)."""
    out = [False] * (plan.n + 1)
    out[plan.n] = True
    for i in range(plan.n - 1, 0, -1):
        out[i] = out[i + 1] and (
            plan.kinds[i] == "free"
            and plan.families[i] is None
            and plan.straight[i]
            and _is_identity(initial[i])
        )
    return out


def _finish_straight(
    plan: _Plan, i: int, rows: Any, p: Vec, d: Vec, joints: FloatArray, locals_: FloatArray
) -> None:
    """Joints ``i … n − 1`` of targets ``rows`` (``None``: all) whose links already point at
    them: each link continues the last one (direction ``d``, from position ``p``) with the
    identity as its local rotation — what the pass gives them (its turn from ``d`` to the
    direction to the target is the identity to rounding)."""
    for k in range(3):
        at, step = p[k], d[k]
        for j in range(i, plan.n):
            at = at + step * plan.lengths[j]
            if rows is None:
                joints[j + 1, k] = at
            else:
                joints[j + 1, k][rows] = at
    if rows is None:
        locals_[i:, 0] = 1.0
        locals_[i:, 1:] = 0.0
        return
    for j in range(i, plan.n):
        locals_[j, 0][rows] = 1.0
        for k in range(1, 4):
            locals_[j, k][rows] = 0.0


def solve_batch(problem: Problem, plan: _Plan) -> tuple[FloatArray, FloatArray]:
    """The pass for ``N`` targets at once: local rotations ``(N, n, 4)`` (``w ≥ 0``) and
    joint positions ``(N, n + 1, 3)``, both transposed views of component rows
    (:func:`_interleaved`)."""
    size = problem.size
    n = plan.n
    targets: Vec = tuple(np.ascontiguousarray(problem.targets.T))
    init = problem.initial
    initial: list[Quat]
    if problem.shares_start:
        initial = [tuple(float(x) for x in q) for q in init[0]]  # type: ignore[misc]
    else:
        initial = [tuple(np.ascontiguousarray(init[:, i, :].T)) for i in range(n)]
    zero: Vec = (0.0, 0.0, 0.0)
    state = _PassState(_IDENTITY, zero, zero, None, np.zeros(size, dtype=bool), False)
    # One scratch block (its last rows for turning the inner joints) and one block for the
    # results, so that the allocator sees the same two allocations on every call.
    block = np.empty((_ROWS + 4 * (n - 1), size))
    all_work = _Scratch(block[:_ROWS])
    work = all_work
    # Joint positions 0 … n and local rotations, component rows (transposed at the end).
    results = np.empty((3 * (n + 1) + 4 * n, size))
    joints = results[: 3 * (n + 1)].reshape(n + 1, 3, size)
    joints[0] = 0.0
    locals_ = results[3 * (n + 1) :].reshape(n, 4, size)
    straight_from = _straight_from(plan, initial)
    active: Any = None  # the targets still being placed (None: all)
    placing: Vec = targets
    for i in range(n):
        done = None
        if straight_from[i] and state.settled is not None:
            done = state.settled.nonzero()[0]
        rows = 0 if done is None else len(state.formed)
        if done is not None and done.size * (n - i) >= max(_RETIRE, 2 * (rows - done.size)):
            # Targets whose links point at them from here on leave the pass (when that saves
            # more work than gathering the others costs).
            keep = (~state.settled).nonzero()[0]
            if active is None:
                # (every target finished straight: those that stay are overwritten below)
                _finish_straight(plan, i, None, state.p, state.d, joints, locals_)
            else:
                p, d = _take(state.p, done), _take(state.d, done)
                _finish_straight(plan, i, active[done], p, d, joints, locals_)
            if keep.size == 0:
                break
            state = state.take(keep)
            placing = _take(placing, keep)
            active = keep if active is None else active[keep]
            work = all_work.view(keep.size)
        if active is None:
            p_out, local_out = tuple(joints[i + 1]), tuple(locals_[i])
        else:
            p_out, local_out = _spare(work.points, state.p), work.local
        local = _place_joint(problem, plan, i, placing, initial[i], state, work, p_out, local_out)
        if active is None:
            if local[0] is not local_out[0]:
                for x, row in zip(local, local_out, strict=True):
                    np.copyto(row, x)
        else:
            locals_[i][:, active] = local
            joints[i + 1][:, active] = p_out
    points: list[Vec] = [tuple(joints[j]) for j in range(1, n + 1)]
    work = all_work
    root, matrix = _orient_batch(problem, plan, targets, tuple(locals_[0]), points, initial, work)
    if root[0] is not locals_[0][0]:
        for x, row in zip(root, locals_[0], strict=True):
            np.copyto(row, x)
    if matrix is not None:
        # The inner joints turn about the root→effector axis (the root and effector stay).
        inner = joints[1:n]
        turned = block[_ROWS : _ROWS + 3 * (n - 1)].reshape(3, n - 1, size)
        _mapply_into(matrix, tuple(inner.transpose(1, 0, 2)), turned, block[_ROWS + 3 * (n - 1) :])
        np.copyto(inner, turned.transpose(1, 0, 2))
    # w ≥ 0: −q where w < 0 (the same rotation)
    sign = work.t1
    for q in locals_:
        flip = q[0] < 0.0
        if flip.any():
            np.subtract(_ONE, np.multiply(flip, _TWO, sign), sign)
            np.multiply(q, sign, q)
    return _interleaved(locals_), _interleaved(joints)


def _interleaved(rows: FloatArray) -> FloatArray:
    """``(m, k, N)`` component rows seen as an ``(N, m, k)`` array (a transposed view: the
    values and shape of the result, in the memory order the pass wrote them; copying them into
    C order would cost about a tenth of the pass)."""
    return rows.transpose(2, 0, 1)
