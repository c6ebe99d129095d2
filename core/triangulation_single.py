# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation's pass for one target in plain Python floats.

The float twin of the numpy pass (:mod:`core.triangulation_batch`) for interactive single
solves: :func:`solve_single` (rotations and positions, from the rest pose; on limited chains
it hands over to :func:`core.triangulation_limits_single.solve_one`) and
:func:`solve_single_points` (joint positions only: two links in closed form,
:func:`_two_links`, longer chains by :func:`_points_pass`), both built on :func:`_single_pass`
and the bend-plane turn :func:`_bend_turn`. :func:`_solve_single` and
:func:`_limited_single` take a :class:`core.problem.Problem` of one target for
:func:`core.triangulation.solve_triangulation`. Tests check the float and numpy passes agree
to rounding. Vectors are 3-tuples, quaternions 4-tuples wxyz.
"""

from __future__ import annotations

import math

import numpy as np

from . import fabrik_single, triangulation_limits_single
from .chain import Chain
from .components import (
    Quat,
    Vec,
    mapply,
    qmatrix,
    qmul,
    qmul_conj,
    qrotate,
    vperpendicular,
)
from .options import SolveOptions
from .problem import Problem
from .rotations import FloatArray
from .triangulation_plan import (
    _BEND_TINY,
    _IDENTITY,
    _NEAR,
    _OPPOSITE,
    _PARALLEL,
    _SAFE,
    _X,
    _floats,
    _Plan,
    _plan,
    _scale,
    _spreads,
    _start_frame,
    _turn_over,
)


# --------------------------------------------------------------------------- single target
def _limited_single(problem: Problem) -> tuple[list[list[float]], list[Vec]] | None:
    """Triangulation within limits for a :class:`Problem` of one target in plain floats
    (:func:`core.triangulation_limits_single.solve_one`), or ``None`` where the numpy
    reference (the batch pass and
    :func:`core.triangulation_limits.reach_within_limits`) must decide."""
    from .triangulation_limits_single import solve_one  # (it builds on this module's pass)

    options = problem.options
    return solve_one(
        problem.chain,
        _floats(problem.targets[0].tolist()),
        problem.initial[0].tolist(),
        options,
        None if problem.poles is None else _floats(problem.poles[0].tolist()),
        problem.tolerance,
    )


def _solve_single(problem: Problem, plan: _Plan) -> tuple[FloatArray, FloatArray]:
    """:func:`_single_pass` for a :class:`Problem` of one target (no cone joints)."""
    options = problem.options
    pole = None if problem.poles is None else _floats(problem.poles[0].tolist())
    rots, pos = _single_pass(
        plan,
        problem.chain,
        _floats(problem.targets[0].tolist()),
        problem.initial[0].tolist(),
        options,
        pole,
    )
    return np.array([rots]), np.array([pos])


def solve_single(
    chain: Chain, target: Vec, pole: Vec | None, options: SolveOptions
) -> tuple[list[list[float]], list[Vec]] | None:
    """The pass for one target from the rest pose, in and out as plain floats, or ``None``
    where the numpy path must decide: on a limited chain, triangulation within the limits
    in floats (:func:`core.triangulation_limits_single.solve_one`, which declines where
    the numpy path searches); exact cone chains decline. The ``"even"`` distribution is
    FABRIK from the spread in floats (:func:`_spread`).

    The numbers are :func:`core.triangulation.solve_triangulation`'s for the same (checked) problem
    without an orientation goal: ``target`` and ``pole`` as 3 floats in the base frame (``pole`` may
    be ``None``). Returns the ``n`` local rotations (wxyz, 4 floats each) and the ``n + 1`` joint
    positions (3 floats each).
    """
    plan = _plan(chain)
    if _scale(chain) != 1.0:
        return None
    if plan.limited:
        tolerance = options.tolerance if options.tolerance is not None else 1e-6 * plan.reach
        return triangulation_limits_single.solve_one(chain, target, None, options, pole, tolerance)
    if not plan.all_free:
        return None
    if _spreads(plan, options):
        return _spread(chain, target, pole, options, False)  # type: ignore[return-value]
    return _single_pass(plan, chain, target, None, options, pole)


def _spread(
    chain: Chain, target: Vec, pole: Vec | None, options: SolveOptions, points_only: bool
) -> tuple[list[list[float]] | None, list[Vec]]:
    """The ``"even"`` distribution on a chain without limits, in floats: FABRIK from its
    spread seed (:func:`core.fabrik_single.fabrik_floats`), as
    :func:`core.triangulation.solve_triangulation` answers it."""
    tolerance = options.tolerance if options.tolerance is not None else 1e-6 * chain.reach
    rots, pos, _ = fabrik_single.fabrik_floats(
        chain, target, pole, options, tolerance, points_only=points_only
    )
    return None if rots is None else [list(q) for q in rots], pos


def solve_single_points(
    chain: Chain, target: Vec, pole: Vec | None, options: SolveOptions
) -> list[Vec] | None:
    """The joint positions of :func:`solve_single`'s pass without its rotations, or ``None``
    when the chain has limits.

    For a caller that needs only where the joints go (a live solver that derives each
    joint's rotation from them, free joints aiming at the next joint). Two links are placed
    in closed form (:func:`_two_links`); longer chains by :func:`_points_pass`, which places
    the links as :func:`_single_pass` does but keeps only the turns applied so far instead
    of every joint's frame and local rotation, then the same bend-plane turn. The positions
    agree with :func:`solve_single`'s to rounding (magnified where the pass is
    ill-conditioned, as any change of rounding is: a nearly flat δb = 90° triangle, a link
    nearly along ``ĉ``).

    Args:
        chain: a chain without limits.
        target: effector goal, 3 floats in the base frame (checked and pulled in).
        pole: 3 floats in the base frame, or ``None``.
        options: settings (``delta_b_deg``, ``bend_plane``, ``pole_angle`` are read).

    Returns:
        The ``n + 1`` joint positions (3 floats each, base frame), root first.
    """
    plan = _plan(chain)
    if not plan.all_free or _scale(chain) != 1.0:
        return None
    if _spreads(plan, options):
        return _spread(chain, target, pole, options, True)[1]
    if plan.n == 2:
        pos = _two_links(plan, target, options, pole)
        if pos is not None:
            return pos
    else:
        pos = _points_pass(plan, target, options)
        if pos is not None:
            turn = _bend_turn(chain, plan, options, target, pole, pos, None, True)
            if turn is not None:
                _turn_points(turn, pos)
            return pos
    return _single_pass(plan, chain, target, None, options, pole)[1]


def _two_links(
    plan: _Plan, target: Vec, options: SolveOptions, pole: Vec | None
) -> list[Vec] | None:
    """:func:`solve_single_points` for two links in closed form.

    The root's link takes the free rule's angle ``δ`` to ``ĉ`` (it stays at rest when the
    target is at the root), the second link points from the joint at the target, and the
    bend-plane turn, a rotation about the root→effector axis ``x̂``, moves the joint ``p``
    straight to ``(p·x̂) x̂ + |p⊥| v̂``, with ``v⃗`` the pole's (or the carried rest bend's)
    part across ``x̂`` turned by the pole angle: the general pass's positions to rounding,
    without its loop, joint frames or trigonometry. ``None`` where the general pass must
    decide (the joint lands on the target: a second link under 1e-12 of the reach).
    """
    tx, ty, tz = target
    a, b = plan.lengths
    reach = plan.reach
    near = _NEAR * reach
    sqrt = math.sqrt
    c2 = tx * tx + ty * ty + tz * tz
    c = sqrt(c2)
    if c <= near:
        jx, jy, jz = plan.rest_dirs[0]
        jx, jy, jz = jx * a, jy * a, jz * a
    else:
        inv_c = 1.0 / c
        hx, hy, hz = tx * inv_c, ty * inv_c, tz * inv_c
        ux, uy, uz = plan.rest_dirs[0]
        rx, ry, rz = uy * hz - uz * hy, uz * hx - ux * hz, ux * hy - uy * hx
        rn = sqrt(rx * rx + ry * ry + rz * rz)
        if rn > _PARALLEL:
            ax, ay, az = rx / rn, ry / rn, rz / rn
        else:
            ax, ay, az = vperpendicular((hx, hy, hz), plan.rest_x0)
        sx, sy, sz = hy * az - hz * ay, hz * ax - hx * az, hx * ay - hy * ax
        cos_d, sin_d = _free_rule_float(plan, 0, c, c2, inv_c, options.delta_b_deg == 90.0)
        jx = a * (cos_d * hx + sin_d * sx)
        jy = a * (cos_d * hy + sin_d * sy)
        jz = a * (cos_d * hz + sin_d * sz)
    fx, fy, fz = tx - jx, ty - jy, tz - jz
    f = sqrt(fx * fx + fy * fy + fz * fz)
    if f <= near:
        return None
    f = b / f
    ex, ey, ez = jx + fx * f, jy + fy * f, jz + fz * f
    if pole is None:
        if options.bend_plane != "rest":
            return [(0.0, 0.0, 0.0), (jx, jy, jz), (ex, ey, ez)]
        pole = _carried_float(*plan.rest_start, target)
    length = sqrt(ex * ex + ey * ey + ez * ez)
    if length > _BEND_TINY * reach:
        kx, ky, kz = ex / length, ey / length, ez / length
        along = jx * kx + jy * ky + jz * kz
        bx, by, bz = jx - kx * along, jy - ky * along, jz - kz * along
        vx, vy, vz = pole
        dp = vx * kx + vy * ky + vz * kz
        vx, vy, vz = vx - kx * dp, vy - ky * dp, vz - kz * dp
        if options.pole_angle:
            half = 0.5 * options.pole_angle
            sh = math.sin(half)
            vx, vy, vz = qrotate((math.cos(half), kx * sh, ky * sh, kz * sh), (vx, vy, vz))
        bn = sqrt(bx * bx + by * by + bz * bz)
        vn = sqrt(vx * vx + vy * vy + vz * vz)
        if bn > _BEND_TINY * reach and vn > _BEND_TINY * reach:
            g = bn / vn
            jx, jy, jz = kx * along + vx * g, ky * along + vy * g, kz * along + vz * g
    return [(0.0, 0.0, 0.0), (jx, jy, jz), (ex, ey, ez)]


def _points_pass(plan: _Plan, target: Vec, options: SolveOptions) -> list[Vec] | None:
    """:func:`_single_pass`'s link placement from the rest pose, positions only.

    The current direction of link ``i`` is ``E · rest_dirs[i]``, ``E`` the product of the
    turns applied so far (a joint's world frame is ``E`` times its rest frame). Once the
    triangle has formed every later link points at the target whatever its direction, so
    ``E`` stops there. Returns ``None`` in the one case that would need ``E`` after that,
    a target at a joint beyond the triangle (links shorter than 1e-12 of the reach).
    """
    tx, ty, tz = target
    n = plan.n
    near = _NEAR * plan.reach
    delta90 = options.delta_b_deg == 90.0
    sqrt = math.sqrt
    ew, ex, ey, ez = _IDENTITY
    px = py = pz = 0.0
    dx = dy = dz = 0.0
    ax = ay = az = 0.0
    formed = False
    pos: list[Vec] = [(0.0, 0.0, 0.0)]
    for i in range(n):
        a = plan.lengths[i]
        cx, cy, cz = tx - px, ty - py, tz - pz
        c2 = cx * cx + cy * cy + cz * cz
        c = sqrt(c2)
        if formed:
            if c <= near:
                return None
            inv_c = 1.0 / c
            dx, dy, dz = cx * inv_c, cy * inv_c, cz * inv_c
            px, py, pz = px + dx * a, py + dy * a, pz + dz * a
            pos.append((px, py, pz))
            continue
        b = plan.remaining[i]
        if plan.straight[i]:
            ux, uy, uz = dx, dy, dz
        else:
            ux, uy, uz = qrotate((ew, ex, ey, ez), plan.rest_dirs[i])
        inv_c = 1.0 / (c if c > near else near)
        hx, hy, hz = cx * inv_c, cy * inv_c, cz * inv_c
        rx_, ry_, rz_ = uy * hz - uz * hy, uz * hx - ux * hz, ux * hy - uy * hx
        rn = sqrt(rx_ * rx_ + ry_ * ry_ + rz_ * rz_)
        if rn > _PARALLEL:
            inv = 1.0 / rn
            ax, ay, az = rx_ * inv, ry_ * inv, rz_ * inv
        else:
            ax, ay, az = vperpendicular((hx, hy, hz), (ax, ay, az) if i else plan.rest_x0)
        sx, sy, sz = hy * az - hz * ay, hz * ax - hx * az, hx * ay - hy * ax
        cos_d, sin_d = _free_rule_float(plan, i, c, c2, inv_c, delta90)
        formed = abs(a - b) <= c <= a + b and c > near
        if c <= near:
            dx, dy, dz = ux, uy, uz
        else:
            dx, dy, dz = cos_d * hx + sin_d * sx, cos_d * hy + sin_d * sy, cos_d * hz + sin_d * sz
        if not formed and i + 1 < n:  # E ← (shortest turn u → d) · E, as _single_pass turns
            turn = _turn_float((ux, uy, uz), (dx, dy, dz), (ax, ay, az))
            ew, ex, ey, ez = qmul(turn, (ew, ex, ey, ez))
        px, py, pz = px + dx * a, py + dy * a, pz + dz * a
        pos.append((px, py, pz))
    return pos


def _free_rule_float(
    plan: _Plan, i: int, c: float, c2: float, inv_c: float, delta90: bool
) -> tuple[float, float]:
    """:func:`core.triangulation_search._free_rule` for one target in floats (the same
    arithmetic)."""
    a, b = plan.lengths[i], plan.remaining[i]
    scale = inv_c * (0.5 / a)
    cos_d = (a * a - b * b + c2) * scale
    cos_d = -1.0 if cos_d < -1.0 else 1.0 if cos_d > 1.0 else cos_d
    heron = (c + b - a) * (a + b - c) * (a + c - b) * (a + b + c)
    sin_d = math.sqrt(heron if heron > 0.0 else 0.0) * scale
    if delta90 and b > a and c < b - a:
        r = plan.inner[i]
        guard = (a * a - r * r + c2) * inv_c * (0.5 / a)
        guard = 0.0 if guard > 0.0 else guard
        cos_d = -1.0 if guard < -1.0 else guard
        sin_d = math.sqrt(1.0 - cos_d * cos_d)
    return cos_d, sin_d


def _turn_float(u: Vec, d: Vec, axis: Vec) -> Quat:
    """Shortest rotation taking unit ``u`` to unit ``d``
    (:func:`core.triangulation_batch._shortest_turn_into` in floats); nearly opposite vectors turn
    over about ``u × d`` or, when that vanishes, ``axis``."""
    sqrt = math.sqrt
    ux, uy, uz = u
    dx, dy, dz = d
    dot = ux * dx + uy * dy + uz * dz
    ex, ey, ez = uy * dz - uz * dy, uz * dx - ux * dz, ux * dy - uy * dx
    if dot < _OPPOSITE:
        xn = sqrt(ex * ex + ey * ey + ez * ez)
        if xn > _PARALLEL:
            inv = 1.0 / max(xn, _SAFE)
            hint = (ex * inv, ey * inv, ez * inv)
        else:
            hint = axis
        return _turn_over(u, d, vperpendicular(u, hint), sqrt)
    ew = 1.0 + dot
    inv = 1.0 / sqrt(ew * ew + ex * ex + ey * ey + ez * ez)
    return ew * inv, ex * inv, ey * inv, ez * inv


def _single_pass(
    plan: _Plan,
    chain: Chain,
    target: Vec,
    init: list[list[float]] | None,
    options: SolveOptions,
    pole: Vec | None,
) -> tuple[list[list[float]], list[Vec]]:
    """The pass for one target on a chain without the paper's cone joints, in plain floats
    (a limited joint's rotation is projected onto its limits as it is placed).

    The same pass as :func:`core.triangulation._solve_batch` (and its inline bend-plane step),
    written out for speed: numpy's per-call overhead dominates for one small chain. ``init``: the
    start pose (``n`` rotations, 4 floats each; ``None``: the rest pose). The bend plane is
    oriented as :func:`core.triangulation_bend.orient_batch` orients it.
    """
    tx, ty, tz = target
    if init is None:
        init = [[1.0, 0.0, 0.0, 0.0]] * plan.n  # (read only)
    rest_pose = [q == [1.0, 0.0, 0.0, 0.0] for q in init]
    n = plan.n
    near = _NEAR * plan.reach
    delta90 = options.delta_b_deg == 90.0
    ww, wx, wy, wz = 1.0, 0.0, 0.0, 0.0
    px = py = pz = 0.0
    dx = dy = dz = 0.0
    have_prev = False
    ax = ay = az = 0.0
    formed = False
    rots: list[list[float]] = []
    pos: list[Vec] = [(0.0, 0.0, 0.0)]
    sqrt = math.sqrt
    for i in range(n):
        a = plan.lengths[i]
        b = plan.remaining[i]
        # parent = world · rest_i; current = parent · initial_i
        rw, rx, ry, rz = plan.rests[i]
        if (rw, rx, ry, rz) != _IDENTITY:
            ww, wx, wy, wz = (
                ww * rw - wx * rx - wy * ry - wz * rz,
                ww * rx + wx * rw + wy * rz - wz * ry,
                ww * ry - wx * rz + wy * rw + wz * rx,
                ww * rz + wx * ry - wy * rx + wz * rw,
            )
        gw, gx, gy, gz = ww, wx, wy, wz
        qw, qx, qy, qz = init[i]
        if not rest_pose[i]:
            gw, gx, gy, gz = (
                ww * qw - wx * qx - wy * qy - wz * qz,
                ww * qx + wx * qw + wy * qz - wz * qy,
                ww * qy - wx * qz + wy * qw + wz * qx,
                ww * qz + wx * qy - wy * qx + wz * qw,
            )
        # u = current · unit offset (as qrotate)
        if plan.straight[i] and rest_pose[i]:
            ux, uy, uz = dx, dy, dz
        else:
            vx, vy, vz = plan.units[i]
            t1 = 2.0 * (gy * vz - gz * vy)
            t2 = 2.0 * (gz * vx - gx * vz)
            t3 = 2.0 * (gx * vy - gy * vx)
            ux = vx + t1 * gw + (gy * t3 - gz * t2)
            uy = vy + t2 * gw + (gz * t1 - gx * t3)
            uz = vz + t3 * gw + (gx * t2 - gy * t1)
        cx, cy, cz = tx - px, ty - py, tz - pz
        c2 = cx * cx + cy * cy + cz * cz
        c = sqrt(c2)
        inv_c = 1.0 / (c if c > near else near)
        hx, hy, hz = cx * inv_c, cy * inv_c, cz * inv_c
        rx_, ry_, rz_ = uy * hz - uz * hy, uz * hx - ux * hz, ux * hy - uy * hx
        rn = sqrt(rx_ * rx_ + ry_ * ry_ + rz_ * rz_)
        if rn > _PARALLEL or (formed and ux * hx + uy * hy + uz * hz > 0.0):
            # (links already pointing at the target after a full triangle need no axis)
            inv = 1.0 / (rn if rn > _SAFE else _SAFE)
            ax, ay, az = rx_ * inv, ry_ * inv, rz_ * inv
        else:
            if have_prev:
                hint: Vec = (ax, ay, az)
            else:
                hint = qrotate((gw, gx, gy, gz), _X)
            ax, ay, az = vperpendicular((hx, hy, hz), hint)
        have_prev = True
        sx, sy, sz = hy * az - hz * ay, hz * ax - hx * az, hx * ay - hy * ax
        if formed:
            cos_d, sin_d = 1.0, 0.0
        else:
            cos_d, sin_d = _free_rule_float(plan, i, c, c2, inv_c, delta90)
            formed = abs(a - b) <= c <= a + b and c > near
        if c <= near:
            dx, dy, dz = ux, uy, uz
        else:
            dx, dy, dz = cos_d * hx + sin_d * sx, cos_d * hy + sin_d * sy, cos_d * hz + sin_d * sz
        # shortest turn u → d, then world = turn · current, local = conj(parent) · world
        ew, ex, ey, ez = _turn_float((ux, uy, uz), (dx, dy, dz), (ax, ay, az))
        nw = ew * gw - ex * gx - ey * gy - ez * gz
        nx = ew * gx + ex * gw + ey * gz - ez * gy
        ny = ew * gy - ex * gz + ey * gw + ez * gx
        nz = ew * gz + ex * gy - ey * gx + ez * gw
        local = [
            ww * nw + wx * nx + wy * ny + wz * nz,
            ww * nx - wx * nw - wy * nz + wz * ny,
            ww * ny + wx * nz - wy * nw - wz * nx,
            ww * nz - wx * ny + wy * nx - wz * nw,
        ]
        if plan.kinds[i] == "project":  # (as the batch pass: the nearest allowed rotation)
            local = list(chain.limits[i].project_floats(tuple(local)))
            nw, nx, ny, nz = qmul((ww, wx, wy, wz), local)  # type: ignore[arg-type]
            dx, dy, dz = qrotate((nw, nx, ny, nz), plan.units[i])
        rots.append(local)
        px, py, pz = px + dx * a, py + dy * a, pz + dz * a
        pos.append((px, py, pz))
        ww, wx, wy, wz = nw, nx, ny, nz
    _orient_single(chain, plan, options, (tx, ty, tz), pole, rots, pos, init, all(rest_pose))
    for q in rots:
        if q[0] < 0.0:
            q[0], q[1], q[2], q[3] = -q[0], -q[1], -q[2], -q[3]
    return rots, pos


def _orient_single(
    chain: Chain,
    plan: _Plan,
    opts: SolveOptions,
    target: Vec,
    pole: Vec | None,
    rots: list[list[float]],
    pos: list[Vec],
    init: list[list[float]],
    rest_pose: bool,
) -> None:
    """:func:`core.triangulation_bend.orient_batch` for one target in floats; updates
    ``rots`` and ``pos``."""
    turn = _bend_turn(chain, plan, opts, target, pole, pos, init, rest_pose)
    if turn is None:
        return
    turned = turned_root(chain, plan, turn, (rots[0][0], rots[0][1], rots[0][2], rots[0][3]))
    if turned is None:
        return
    rots[0] = list(turned)
    _turn_points(turn, pos)


def turned_root(chain: Chain, plan: _Plan, turn: Quat, q0: Quat) -> Quat | None:
    """The root's local rotation ``q0`` after the chain turns by ``turn`` (base frame) about
    its root→effector line: its world rotation becomes ``turn · rest_0 · q0``, locally
    ``rest_0⁻¹ · turn · rest_0 · q0``; ``None`` where the root's limits refuse it (more than
    1e-9 rad from its projection, as :func:`core.bend_plane.apply_pole`)."""
    turned = qmul((turn[0], *mapply(plan.rest0_inverse, turn[1:])), q0)
    limits0 = chain.limits[0]
    if not limits0.is_free:
        allowed = qmul_conj(limits0.project_floats(turned), turned)
        if 2.0 * math.atan2(math.hypot(*allowed[1:]), abs(allowed[0])) > 1e-9:
            return None
    return turned


def _turn_points(turn: Quat, pos: list[Vec]) -> None:
    """Turn the inner joints ``pos[1:-1]`` by ``turn`` (about the root→effector axis, which
    leaves the root and the effector where they are)."""
    m = qmatrix(turn)
    for j in range(1, len(pos) - 1):
        pos[j] = mapply(m, pos[j])


def _bend_turn(
    chain: Chain,
    plan: _Plan,
    opts: SolveOptions,
    target: Vec,
    pole: Vec | None,
    pos: list[Vec],
    init: list[list[float]] | None,
    rest_pose: bool,
) -> Quat | None:
    """The turn about the root→effector axis that :func:`core.triangulation_bend.orient_batch` gives
    the pose with joints ``pos`` for one target, in floats (``None``: no turn)."""
    if pole is None:
        if opts.bend_plane != "rest":
            return None
        if rest_pose or init is None:
            start_axis, bend = plan.rest_start
        else:
            start: list[Quat] = [(q[0], q[1], q[2], q[3]) for q in init]
            axis_v, bend_v = _start_frame(chain, start)
            start_axis, bend = _floats(axis_v), _floats(bend_v)
        pole = _carried_float(start_axis, bend, target)
    reach = plan.reach
    n = plan.n
    sqrt = math.sqrt
    ex, ey, ez = pos[n]
    length = sqrt(ex * ex + ey * ey + ez * ez)
    if length > _BEND_TINY * reach:
        xx, xy, xz = ex / length, ey / length, ez / length
    else:
        xx = xy = xz = 0.0
    if n > 1:
        mx = my = mz = 0.0
        for j in range(1, n):
            mx, my, mz = mx + pos[j][0], my + pos[j][1], mz + pos[j][2]
        inv = 1.0 / (n - 1)
        mx, my, mz = mx * inv, my * inv, mz * inv
        dm = mx * xx + my * xy + mz * xz
        bx, by, bz = mx - xx * dm, my - xy * dm, mz - xz * dm
    else:
        bx = by = bz = 0.0
    dp = pole[0] * xx + pole[1] * xy + pole[2] * xz
    vx, vy, vz = pole[0] - xx * dp, pole[1] - xy * dp, pole[2] - xz * dp
    axis_len = sqrt(xx * xx + xy * xy + xz * xz)
    if axis_len > 0.0:
        kx, ky, kz = xx / axis_len, xy / axis_len, xz / axis_len
    else:
        kx = ky = kz = 0.0
    if opts.pole_angle:
        half = 0.5 * opts.pole_angle
        s = math.sin(half)
        vx, vy, vz = qrotate((math.cos(half), kx * s, ky * s, kz * s), (vx, vy, vz))
    if not (
        sqrt(bx * bx + by * by + bz * bz) > _BEND_TINY * reach
        and sqrt(vx * vx + vy * vy + vz * vz) > _BEND_TINY * reach
        and axis_len > 0.0
    ):
        return None
    cross = (by * vz - bz * vy) * xx + (bz * vx - bx * vz) * xy + (bx * vy - by * vx) * xz
    half = 0.5 * math.atan2(cross, bx * vx + by * vy + bz * vz)
    s = math.sin(half)
    return (math.cos(half), kx * s, ky * s, kz * s)


def _carried_float(a: Vec, v: Vec, t: Vec) -> Vec:
    """:func:`core.triangulation_bend._carried` for one target, in floats."""
    a0, a1, a2 = a
    na = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    if na == 0.0:
        return v
    a0, a1, a2 = a0 / na, a1 / na, a2 / na
    t0, t1, t2 = t
    nt = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    if nt > 0.0:
        t0, t1, t2 = t0 / nt, t1 / nt, t2 / nt
    else:
        t0 = t1 = t2 = 0.0
    dot = a0 * t0 + a1 * t1 + a2 * t2
    if dot < -1.0 + 1e-12 and nt > 0.0:
        return v
    v0, v1, v2 = v
    b0, b1, b2 = t0 + a0, t1 + a1, t2 + a2
    coef = (b0 * v0 + b1 * v1 + b2 * v2) / (1.0 + dot)
    along = 2.0 * (a0 * v0 + a1 * v1 + a2 * v2)
    return v0 - b0 * coef + t0 * along, v1 - b1 * coef + t1 * along, v2 - b2 * coef + t2 * along


__all__ = ["solve_single", "solve_single_points"]
