# SPDX-License-Identifier: GPL-3.0-or-later
"""CCD's sweeps (:mod:`core.ccd`), batched: one step per joint from the effector back.

A hinge turns to the best angle of its step in its range (:func:`_hinge_step`), a ball
joint by the turn of eq. 1–2 or Fedulin & Zhukov's closed form, projected onto its limits
(:func:`_ball_turn`, :func:`_ball_step`, :func:`_project_cone`); :func:`_sweep` runs one
iteration over every joint, :func:`_descend` repeats it until the goal is met, the
objective stalls or the budget ends, and :func:`_coarse_sweep` tries a grid of a joint's
angles where descent stalled above the lower bound.
"""

from __future__ import annotations

import math

import numpy as np

from . import rotations as rot
from .ccd_setup import (
    _I3,
    BoolArray,
    IntArray,
    _apply,
    _dot,
    _frames,
    _Goals,
    _Joint,
    _orthonormalize,
    _renormalize_every,
    _score,
    _Setup,
    _skew,
    _turn_about,
)
from .limits import JointLimits
from .rotations import FloatArray

#: A sweep that lowers the objective by less than this fraction of its excess over the
#: lower bound counts as a stall.
_STALL = 1e-3


#: A hinge whose step coefficients ``A, B`` are below this fraction of their scale
#: ``α/ℓ²·|u||v| + 3(1 − α)`` does not turn (they are rounding noise).
_NOISE = 1e-12
#: ``|û + v̂|²`` below this counts as antiparallel (eq. 2's axis is undefined).
_ANTIPARALLEL = 1e-12


_CONVERGED, _STALLED, _CAPPED = 0, 1, 2


def _wrap(phi: FloatArray) -> FloatArray:
    """Angles wrapped to ``[-π, π)``."""
    return np.mod(phi + math.pi, 2.0 * math.pi) - math.pi


def _best_in_range(phi: FloatArray, lo: float, hi: float) -> FloatArray:
    """The angle in ``[lo, hi]`` nearest to ``phi`` on the circle."""
    phi = _wrap(phi)
    inside = (phi >= lo) & (phi <= hi)
    nearer_lo = np.abs(_wrap(phi - lo)) <= np.abs(_wrap(phi - hi))
    return np.where(inside, phi, np.where(nearer_lo, lo, hi))


def _hinge_angle(j: _Joint, Q: FloatArray) -> FloatArray:
    """Angles ``(M,)`` of hinge rotations ``Q (M, 3, 3)`` about the hinge axis.

    For ``Q = I + sin φ K + (1 − cos φ) K²`` with ``K = [a]×``: ``K:Q = 2 sin φ`` and
    ``tr Q = 1 + 2 cos φ``.
    """
    sin2 = np.einsum("ij,mij->m", j.skew, Q)
    cos2 = np.einsum("mii->m", Q) - 1.0
    return np.arctan2(sin2, cos2)


def _hinge_step(
    s: _Setup,
    j: _Joint,
    F: FloatArray,
    Q: FloatArray,
    u: FloatArray,
    v: FloatArray,
    E: FloatArray | None,
    goals: _Goals,
) -> tuple[FloatArray, FloatArray]:
    """New local rotations ``(M, 3, 3)`` and world turns ``(M, 3, 3)`` of a hinge.

    The closed form of the module docstring, evaluated in the joint's parent-side frame
    ``F (M, 3, 3)``, where the axis is the constant ``j.axis``.
    """
    Ft = np.swapaxes(F, -1, -2)
    ul = _apply(Ft, u)
    vl = _apply(Ft, v)
    A = s.c_pos * (_dot(ul, vl) - (ul @ j.axis) * (vl @ j.axis))
    B = s.c_pos * _dot(ul @ j.skew.T, vl)
    if E is not None and goals.frames is not None and s.c_rot > 0.0:
        Dl = Ft @ E
        Vl = Ft @ goals.frames
        A = A + s.c_rot * (np.einsum("mij,mij->m", Dl, Vl) - _dot(j.axis @ Dl, j.axis @ Vl))
        B = B + s.c_rot * np.einsum("mij,mij->m", j.skew @ Dl, Vl)
    phi0 = _hinge_angle(j, Q)
    # A joint that cannot change g (A = B = 0, e.g. a twist about the bone of the last
    # link with a position goal) would otherwise turn by the angle of rounding noise.
    scale = s.c_pos * np.sqrt(_dot(ul, ul) * _dot(vl, vl)) + 3.0 * s.c_rot
    size = A * A + B * B
    noise = size <= (_NOISE * scale) ** 2
    phi = phi0 + j.hinge_weight * np.where(noise, 0.0, np.arctan2(B, A))
    phi = _wrap(phi) if j.angle_range is None else _best_in_range(phi, *j.angle_range)
    turn = F @ _turn_about(j.skew, phi - phi0) @ Ft
    return _turn_about(j.skew, phi), turn


def _ball_turn(
    s: _Setup,
    W: FloatArray,
    u: FloatArray,
    v: FloatArray,
    E: FloatArray | None,
    goals: _Goals,
) -> FloatArray:
    """World rotations ``(M, 3, 3)`` about a ball joint minimising ``g`` (module docstring).

    Position only: eqs. 1–2 as a matrix. With ``a = û``, ``b = v̂`` and ``m = a + b``,
    ``R = I − 2 m mᵀ/|m|² + 2 b aᵀ`` is the product of the reflections ``H(m)·H(a)``
    (``H(x) = I − 2 x xᵀ/|x|²``: ``H(a)`` sends ``a`` to ``−a``, ``H(m)`` sends ``−a`` to ``b``,
    and vectors normal to both are fixed), i.e. the rotation about ``r = a × b`` by ``θ``.
    Antiparallel ``a, b`` take ``m`` normal to ``a``, toward the joint's X axis (column 0
    of ``W``): a half turn. A zero ``u`` or ``v`` gives ``R = I``.
    """
    if E is not None and goals.frames is not None and s.c_rot > 0.0:
        H = s.c_pos * u[:, :, None] * v[:, None, :] + s.c_rot * E @ np.swapaxes(
            goals.frames, -1, -2
        )
        U, _, Vt = np.linalg.svd(H)
        Vt[:, 2, :] *= np.sign(np.linalg.det(U) * np.linalg.det(Vt))[:, None]
        return np.swapaxes(Vt, -1, -2) @ np.swapaxes(U, -1, -2)
    eps2 = s.eps * s.eps
    nu2 = _dot(u, u)
    nv2 = _dot(v, v)
    a = u / np.sqrt(np.maximum(nu2, eps2))[:, None]
    b = v / np.sqrt(np.maximum(nv2, eps2))[:, None]
    m = a + b
    mm = _dot(m, m)
    anti = mm < _ANTIPARALLEL
    if anti.any():
        m[anti] = rot.perpendicular(a[anti], W[anti, :, 0])
        mm[anti] = 1.0
    R = _I3 - (2.0 / mm)[:, None, None] * m[:, :, None] * m[:, None, :]
    R += 2.0 * b[:, :, None] * a[:, None, :]
    skip = (nu2 <= eps2) | (nv2 <= eps2)
    if skip.any():
        R[skip] = _I3
    return R


def _project_cone(Q: FloatArray, cone: float, limits: JointLimits) -> FloatArray:
    """``JointLimits.project`` for a joint limited only by a bend ``cone``, on matrices.

    With ``Q = swing(s, β)·twist`` (``s`` normal to the bone axis ``ŷ``; the posed bone
    axis is ``Q ŷ``, column 1, at angle ``β`` from ``ŷ``, and ``s ∥ ŷ × Q ŷ``), the nearest
    allowed rotation keeps the twist and shortens the swing to ``cone``:
    ``swing(s, cone)·twist = R(s, cone − β)·Q``. Bends within ``1e-9`` of a half turn
    (``s`` undefined) go through ``limits.project``.

    Args:
        Q: ``(M, 3, 3)`` local rotations (rest frame).
        cone: the bend limit (radians).
        limits: the joint's limits (for the half-turn fallback).
    """
    y = Q[:, :, 1]
    over = y[:, 1] < math.cos(cone)
    if not over.any():
        return Q
    out = Q.copy()
    rows = np.flatnonzero(over)
    yo = y[rows]
    sin_bend = np.hypot(yo[:, 0], yo[:, 2])
    regular = sin_bend > 1e-9
    if not regular.all():
        odd = rows[~regular]
        out[odd] = rot.to_matrix(limits.project(rot.from_matrix(Q[odd])))
        rows, yo, sin_bend = rows[regular], yo[regular], sin_bend[regular]
    axis = np.stack((yo[:, 2], np.zeros(len(rows)), -yo[:, 0]), axis=-1) / sin_bend[:, None]
    bend = np.arctan2(sin_bend, yo[:, 1])
    out[rows] = _turn_about(_skew(axis), cone - bend) @ Q[rows]
    return out


def _ball_step(
    j: _Joint, F: FloatArray, Q: FloatArray, W: FloatArray, R: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Apply stiffness and limits to a world turn ``R``: new local rotations and world turns.

    The step in the rest frame is ``Fᵀ R F`` (``q ← step·q``); all arrays ``(M, 3, 3)``.
    """
    Ft = np.swapaxes(F, -1, -2)
    if j.exact:
        return Ft @ R @ W, R
    step = Ft @ R @ F
    if j.stiff:
        step = rot.to_matrix(rot.from_rotvec(rot.to_rotvec(rot.from_matrix(step)) * j.weights))
    if j.limits.is_free:
        Q_new = np.matmul(step, Q)
    elif j.cone is not None:
        Q_new = _project_cone(step @ Q, j.cone, j.limits)
    else:
        Q_new = rot.to_matrix(j.limits.project(rot.from_matrix(step @ Q)))
    return Q_new, F @ Q_new @ np.swapaxes(W, -1, -2)


def _sweep(
    s: _Setup,
    Q: FloatArray,
    goals: _Goals,
    g: FloatArray,
    frozen: int | None,
    renormalize: bool,
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """One CCD iteration over every joint but ``frozen``, effector to root.

    Args:
        s: the setup.
        Q: ``(M, n, 3, 3)`` local rotations (not modified).
        goals: the ``M`` goals.
        g: ``(M,)`` the objective of ``Q``.
        frozen: a joint index left unchanged (coarse sweep), or ``None``.
        renormalize: first remove the drift from orthogonality (see ``_RENORMALIZE``).

    Returns:
        ``(Q, g, reached)`` after the sweep; rows stop changing once reached.
    """
    Q = _orthonormalize(Q) if renormalize else Q.copy()
    positions, F, W = _frames(s, Q)
    e = positions[:, -1]
    E = W[:, -1] if goals.frames is not None else None
    moving = np.ones(len(Q), dtype=bool)
    for j in s.joints:
        i = j.index
        if i == frozen:
            continue
        p = positions[:, i]
        u = e - p
        v = goals.targets - p
        if j.hinge:
            Q_new, turn = _hinge_step(s, j, F[:, i], Q[:, i], u, v, E, goals)
        else:
            R = _ball_turn(s, W[:, i], u, v, E, goals)
            Q_new, turn = _ball_step(j, F[:, i], Q[:, i], W[:, i], R)
        e_new = p + _apply(turn, u)
        E_new = None if E is None else turn @ E
        g_new, reached = _score(s, e_new, E_new, goals)
        take = moving if j.exact else moving & (g_new <= g)
        if take.all():
            Q[:, i], e, E, g = Q_new, e_new, E_new, g_new
        else:
            Q[:, i] = np.where(take[:, None, None], Q_new, Q[:, i])
            e = np.where(take[:, None], e_new, e)
            if E is not None and E_new is not None:
                E = np.where(take[:, None, None], E_new, E)
            g = np.where(take, g_new, g)
        moving &= ~(take & reached)
        if not moving.any():
            break
    return Q, g, ~moving


def _descend(
    s: _Setup,
    Q: FloatArray,
    goals: _Goals,
    g: FloatArray,
    budget: IntArray,
    frozen: int | None = None,
) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
    """CCD iterations on ``M`` unconverged rows until each converges, stalls or runs out.

    Args:
        s: the setup.
        Q: ``(M, n, 3, 3)`` start rotations (not modified).
        goals: the ``M`` goals.
        g: ``(M,)`` their objective.
        budget: ``(M,)`` iterations each row may use.
        frozen: a joint index left unchanged, or ``None``.

    Returns:
        ``(Q, g, used, status)``: rotations, objective, iterations used ``(M,)`` and
        ``_CONVERGED``/``_STALLED``/``_CAPPED`` per row.
    """
    Q = Q.copy()
    g = g.copy()
    used = np.zeros(len(Q), dtype=np.int64)
    status = np.full(len(Q), _CAPPED, dtype=np.int64)
    active = np.flatnonzero(budget > 0)
    sweeps = 0
    every = _renormalize_every(Q.shape[1])
    while active.size:
        renormalize = sweeps % every == 0
        sweeps += 1
        Qa, ga, reached = _sweep(s, Q[active], goals.take(active), g[active], frozen, renormalize)
        Q[active] = Qa
        used[active] += 1
        stalled = ~reached & (
            (g[active] - ga < _STALL * (g[active] - goals.floor[active]))
            | (ga <= goals.settled[active])
        )
        g[active] = ga
        status[active[reached]] = _CONVERGED
        status[active[stalled]] = _STALLED
        done = reached | stalled | (used[active] >= budget[active])
        active = active[~done]
    return Q, g, used, status


def _effector_score(s: _Setup, Q: FloatArray, goals: _Goals) -> tuple[FloatArray, BoolArray]:
    """Objective and reached flags of poses ``Q (M, n, 3, 3)``."""
    positions, _, W = _frames(s, Q)
    return _score(s, positions[:, -1], W[:, -1], goals)


def _sweep_candidates(s: _Setup, Q: FloatArray, goals: _Goals, j: _Joint, steps: int) -> FloatArray:
    """``(M, steps, n, 3, 3)`` copies of ``Q (M, n, 3, 3)``, joint ``j`` at coarse angles."""
    i = j.index
    m = len(Q)
    out = np.repeat(Q[:, None], steps, axis=1)
    turns = 2.0 * math.pi * np.arange(1, steps + 1) / (steps + 1)
    if j.hinge:
        if j.angle_range is not None:
            angles = np.broadcast_to(np.linspace(*j.angle_range, steps), (m, steps))
        else:
            angles = _hinge_angle(j, Q[:, i])[:, None] + turns
        out[:, :, i] = _turn_about(j.skew, angles)
        return out
    positions, F, W = _frames(s, Q)
    p = positions[:, i]
    u = positions[:, -1] - p
    v = goals.targets - p
    axis = rot.cross(u, v)
    usable = _dot(axis, axis) > 1e-18 * _dot(u, u) * _dot(v, v)
    axis = np.where(usable[:, None], axis, W[:, i, :, 0])
    local_axis = _apply(np.swapaxes(F[:, i], -1, -2), axis)
    local_turns = rot.from_axis_angle(local_axis[:, None, :], np.broadcast_to(turns, (m, steps)))
    q = rot.from_matrix(Q[:, i])[:, None, :]
    out[:, :, i] = rot.to_matrix(j.limits.project(rot.multiply(local_turns, q)))
    return out


def _coarse_sweep(
    s: _Setup,
    Q: FloatArray,
    goals: _Goals,
    g: FloatArray,
    budget: IntArray,
    j: _Joint,
    steps: int,
) -> tuple[FloatArray, FloatArray, IntArray, BoolArray, BoolArray]:
    """Sweep joint ``j`` of ``M`` stalled rows while CCD solves the others (module doc).

    Returns:
        ``(Q, g, used, improved, converged)`` per row: the best candidate where it lowers
        the excess ``g − floor`` by more than the fraction ``_STALL`` (else the input),
        iterations used, and flags.
    """
    m, n = Q.shape[:2]
    cand = _sweep_candidates(s, Q, goals, j, steps).reshape(m * steps, n, 3, 3)
    many = goals.repeat(steps)
    g0, _ = _effector_score(s, cand, many)
    Qc, gc, used, status = _descend(s, cand, many, g0, np.repeat(budget, steps), frozen=j.index)
    gc = gc.reshape(m, steps)
    best = np.argmin(gc, axis=1)
    rows = np.arange(m)
    g_best = gc[rows, best]
    improved = g - g_best > _STALL * (g - goals.floor)
    Q_best = Qc.reshape(m, steps, n, 3, 3)[rows, best]
    converged = improved & (status.reshape(m, steps)[rows, best] == _CONVERGED)
    Q_out = np.where(improved[:, None, None, None], Q_best, Q)
    g_out = np.where(improved, g_best, g)
    return Q_out, g_out, np.maximum(used.reshape(m, steps).max(axis=1), 1), improved, converged
