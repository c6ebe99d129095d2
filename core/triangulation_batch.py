# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation's pass for a batch of targets, on ``(N,)`` component arrays.

The pass of :mod:`core.triangulation` (R. Müller-Cajar and R. Mukundan, IVCNZ 2007,
Algorithm 1; that module's docstring states the rules and cites the equations) for ``N``
targets at once: joint by joint, root first, each step one numpy operation per component
on all targets. Cone joints take the constrained rule and the cone selection of
:mod:`core.triangulation`; joints with other limits are projected by
:meth:`JointLimits.project <core.limits.JointLimits.project>`. The bend-plane step after
the pass is :mod:`core.triangulation_bend`; the algebra on rows is :mod:`core.component_rows`
(tests check the pass against the single-target float pass, row by row).

Speed (chain U's 10,000 targets take a few milliseconds, ``scripts/bench_triangulation.py``,
``docs/triangulation.md``): every operation writes into rows of one scratch block allocated
per call (``out=``), and the results into one block of component rows returned as transposed
views. Temporaries of a batch's size, allocated and freed a few hundred times per call, made
the C allocator return heap memory to the system and fault it back in (about 1,300 page
faults per call for 10,000 targets). Targets whose links already point at them for good
leave the pass (:func:`_finish_straight`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .component_rows import (
    ONE,
    QMUL,
    QMUL_CONJ,
    ZERO,
    Rows,
    combine_into,
    const,
    cross_into,
    dot_into,
    mapply_into,
    products_into,
    rotate_into,
    zero,
)
from .components import Num, Quat, Vec, qmul, qrotate, vdot, vscale
from .problem import Problem
from .rotations import FloatArray
from .triangulation_bend import orient_batch
from .triangulation_plan import (
    _IDENTITY,
    _NEAR,
    _OPPOSITE,
    _PARALLEL,
    _SAFE,
    _X,
    _Y,
    _is_identity,
    _norm,
    _perpendicular,
    _stack,
    _take,
    _turn_over,
    _where,
)
from .triangulation_search import _cone_select, _constrained_rule, _free_rule

if TYPE_CHECKING:
    from .triangulation_plan import _Plan

K_SAFE, K_OPPOSITE, K_PARALLEL = const(_SAFE), const(_OPPOSITE), const(_PARALLEL)


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


def _slots() -> tuple[tuple[str, int, Any], ...]:
    """:data:`_LAYOUT` as ``(name, first row, shape)``."""
    out, at = [], 0
    for name, shape in _LAYOUT:
        out.append((name, at, shape))
        at += shape if isinstance(shape, int) else shape[0] * shape[1]
    return tuple(out)


_SLOTS = _slots()


class _Scratch:
    """The rows one call of the pass writes into: one ``(rows, N)`` block, named by use
    (:data:`_LAYOUT`); :meth:`view` gives the same names on the first ``m`` columns (the
    targets still being placed)."""

    def __init__(self, block: FloatArray) -> None:
        self.block = block
        rows = list(block)
        for name, at, shape in _SLOTS:
            if shape == 1:
                value: Any = rows[at]
            elif isinstance(shape, int):
                value = tuple(rows[at : at + shape])
            else:
                mid = at + shape[1]
                value = (tuple(rows[at:mid]), tuple(rows[mid : mid + shape[1]]))
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
    by :func:`core.triangulation_plan._turn_over` (an exact half turn goes about ``axis`` made
    perpendicular to ``u``)."""
    dot, t1, t2 = work.dot, work.t1, work.t2
    dot_into(u, d, dot, t1)
    x = out[1:]
    cross_into(u, d, x, t1)
    w = np.add(dot, ONE, out[0])
    np.multiply(w, w, t1)
    for xk in x:
        np.multiply(xk, xk, t2)
        np.add(t1, t2, t1)
    # (exactly opposite vectors give a zero norm; they are among those patched below)
    np.maximum(t1, K_SAFE, t1)
    np.sqrt(t1, t1)
    np.divide(ONE, t1, t1)
    back = (dot < K_OPPOSITE).nonzero()[0]
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
            parent = products_into(parent, rest, QMUL, work.parent, work.t1)
    if _is_identity(start):
        return parent, parent
    if _is_floats(parent) and _is_floats(start):
        return parent, qmul(parent, start)
    return parent, products_into(parent, start, QMUL, work.current, work.t1)


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
        u = rotate_into(current, plan.units[i], work.u, work.spin, t1)
    # c⃗ = t − p, c = |c⃗|, ĉ = c⃗ / max(c, near)
    chat, c2, c, inv_c = work.chat, work.c2, work.c, work.inv_c
    cv: Vec = targets
    if not (zero(state.p[0]) and zero(state.p[1]) and zero(state.p[2])):
        cv = tuple(np.subtract(targets[k], state.p[k], chat[k]) for k in range(3))
    dot_into(cv, cv, c2, t1)
    np.sqrt(c2, c)
    k_near = const(near)
    np.maximum(c, k_near, inv_c)
    np.divide(ONE, inv_c, inv_c)
    for k in range(3):
        np.multiply(cv[k], inv_c, chat[k])
    # Rotation axis r = a × c (eq. 7); undefined when parallel (§3.1.1).
    axis = cross_into(u, chat, _spare(work.axes, state.axis), t1)
    rn = work.rn
    np.sqrt(dot_into(axis, axis, rn, t1), rn)
    np.maximum(rn, K_SAFE, t1)
    np.divide(ONE, t1, t1)
    for row in axis:
        np.multiply(row, t1, row)
    bad = np.less_equal(rn, K_PARALLEL)
    if bad.any():
        if state.any_formed:
            # Links already pointing at the target after a full triangle need no axis.
            bad &= ~(formed & np.greater(dot_into(u, chat, work.dot, t1), ZERO))
        need = bad.nonzero()[0]
        if need.size:
            hint = state.axis if state.axis is not None else qrotate(current, _X)
            fallback = _perpendicular(_take(chat, need), _take(hint, need))
            for row, value in zip(axis, fallback, strict=True):
                row[need] = value
    w = cross_into(chat, axis, work.w, t1)
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
        rows = (work.t3, work.t4, work.rn, work.dot, work.t2)
        cos_d, sin_d = _free_rule(plan, i, c, c2, inv_c, delta90, rows)
        b = plan.remaining[i]
        now_formed = np.greater_equal(c, const(abs(a - b))) & np.less_equal(c, const(a + b))
        # Beyond the rest of the chain by a margin no rounding closes: this link and every
        # later one point straight at the target.
        beyond = np.greater(c, const(a + b + _BEYOND * plan.reach))
    if state.any_formed:
        # cos δ = 1, sin δ = 0 where formed (selected by multiplying with 0 and 1)
        np.multiply(cos_d, ~formed, cos_d)
        np.add(cos_d, formed, cos_d)
        np.multiply(sin_d, ~formed, sin_d)
    d = combine_into(cos_d, chat, sin_d, w, _spare(work.dirs, state.d), t1)
    at_joint = np.less_equal(c, k_near).nonzero()[0]
    if at_joint.size:
        for row, value in zip(d, _take(u, at_joint), strict=True):
            row[at_joint] = value
    if cone_axis is not None:
        d = _cone_select(d, chat, cos_d, sin_d, w, cone_axis, plan.cones[i])
    turn = _shortest_turn_into(u, d, axis, work.turn, work)
    world = _spare(work.worlds, state.world)
    products_into(turn, current, QMUL, world, t1)
    local = products_into(parent, world, QMUL_CONJ, local_out, t1)
    if kind == "project":
        projected = problem.chain.limits[i].project(_stack(local, size))
        local = tuple(np.moveaxis(projected, -1, 0))
        world = qmul(parent, local)
        d = qrotate(world, plan.units[i])
    k_a = const(a)
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
            if rows is None:
                row = joints[j + 1, k]
                at = np.add(at, np.multiply(step, plan.lengths[j], row), row)
            else:
                at = at + step * plan.lengths[j]
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
    root, matrix = orient_batch(problem, plan, targets, tuple(locals_[0]), points, initial, work)
    if root[0] is not locals_[0][0]:
        for x, row in zip(root, locals_[0], strict=True):
            np.copyto(row, x)
    if matrix is not None:
        # The inner joints turn about the root→effector axis (the root and effector stay).
        inner = joints[1:n]
        turned = block[_ROWS : _ROWS + 3 * (n - 1)].reshape(3, n - 1, size)
        mapply_into(matrix, tuple(inner.transpose(1, 0, 2)), turned, block[_ROWS + 3 * (n - 1) :])
        np.copyto(inner, turned.transpose(1, 0, 2))
    # w ≥ 0: −q where w < 0 (the same rotation)
    for q in locals_:
        flip = q[0] < 0.0
        if flip.any():
            np.negative(q, out=q, where=flip)
    return _interleaved(locals_), _interleaved(joints)


def _interleaved(rows: FloatArray) -> FloatArray:
    """``(m, k, N)`` component rows seen as an ``(N, m, k)`` array (a transposed view: the
    values and shape of the result, in the memory order the pass wrote them; copying them into
    C order would cost about a tenth of the pass)."""
    return rows.transpose(2, 0, 1)
