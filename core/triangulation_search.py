# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangulation's per-joint rules on component arrays (numpy pass).

The law of cosines with Heron's factors (:func:`_triangle`), the free rule with the
``δb = 90°`` guard (:func:`_free_rule`), and for cone joints the constrained rule
(:func:`_constrained_rule`, :mod:`core.triangulation` "Constrained chains"): the smallest
collapse ``s`` of the uniform planar family (:class:`core.triangulation_plan._Family`) for
which the triangle exists and both cones allow it — a grid of 33 values, where none passes
a grid of 257 values and golden-section searches about its lowest local minima of the
violation (:func:`_search_fine`, :func:`_golden_minimum`), then bisection — and
:func:`_cone_select`, the nearest allowed direction on the triangle's circle. Used by
:mod:`core.triangulation_batch`; components are arrays ``(N,)`` or floats.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .components import (
    Num,
    Vec,
    vcombine,
    vcross,
    vdot,
    vscale,
    vsub,
)
from .rotations import FloatArray
from .triangulation_plan import (
    _BISECTIONS,
    _FEASIBLE_EPS,
    _GOLDEN_STEPS,
    _MINIMA,
    _SAFE,
    _Family,
    _norm,
    _perpendicular,
    _Plan,
    _where,
)


# --------------------------------------------------------------------------- batch pass
def _triangle(
    a: float, b: Num, c: Num, c2: Num, inv_c: Num, out: tuple[Any, ...] | None = None
) -> tuple[Num, Num]:
    """``cos δ`` (eq. 5, clipped to ``[−1, 1]``) and ``sin δ`` of the angle at ``a``–``c``.

    ``sin δ = √((c + b − a)(a + b − c)(a + c − b)(a + b + c)) / (2ac)`` (Heron's factors),
    zero outside the triangle inequality: accurate near a degenerate triangle, where
    ``√(1 − cos²δ)`` would turn a rounding error of ``1e-16`` into an angle of ``1e-8``.
    ``c2 = c²`` and ``inv_c = 1 / max(c, near)``. ``out``: five rows ``(N,)`` shaped like
    ``c`` — ``cos δ``, ``sin δ`` and three scratch rows — that the results are written
    into (the batched pass's scratch block; the same operations in the same order), or
    ``None`` (new arrays, ``b`` may be an array broadcasting against ``c``).
    """
    if out is None:
        shape = np.broadcast(b, c).shape
        out = tuple(np.empty(shape) for _ in range(5))
    cos_d, sin_d, scale, f, g = out
    np.multiply(inv_c, 0.5 / a, scale)
    np.add(a * a - b * b, c2, cos_d)
    np.multiply(cos_d, scale, cos_d)
    np.minimum(np.maximum(cos_d, -1.0, cos_d), 1.0, cos_d)
    # heron = (c + b − a)(a + b − c)(a + c − b)(a + b + c), multiplied left to right
    np.subtract(np.add(c, b, f), a, f)
    np.multiply(f, np.subtract(a + b, c, g), f)
    np.multiply(f, np.subtract(np.add(c, a, g), b, g), f)
    np.multiply(f, np.add(c, a + b, g), f)
    np.sqrt(np.maximum(f, 0.0, f), sin_d)
    np.multiply(sin_d, scale, sin_d)
    return cos_d, sin_d


def _free_rule(
    plan: _Plan,
    i: int,
    c: Num,
    c2: Num,
    inv_c: Num,
    delta90: bool,
    out: tuple[Any, ...] | None = None,
) -> tuple[Num, Num]:
    """``(cos δ, sin δ)`` of the free rule at joint ``i`` (eqs. 5, 8; δb = 90° variant);
    ``out`` as :func:`_triangle`'s."""
    a, b = plan.lengths[i], plan.remaining[i]
    cos_d, sin_d = _triangle(a, b, c, c2, inv_c, out)
    if delta90 and b > a:
        r = plan.inner[i]
        guard = (a * a - r * r + c2) * inv_c * (0.5 / a)
        cos_g = np.clip(np.minimum(0.0, guard), -1.0, 1.0)
        close = c < b - a
        cos_d = np.where(close, cos_g, cos_d)
        sin_d = np.where(close, np.sqrt(1.0 - cos_g * cos_g), sin_d)
    return cos_d, sin_d


def _violation(
    plan: _Plan, i: int, c: Num, c2: Num, inv_c: Num, kappa: Num, b: Num, gamma: Num
) -> tuple[Num, Num, Num]:
    """How far the constrained triangle at joint ``i`` misses, for distances ``b``, angles ``γ``.

    Returns ``(violation, cos δ, sin δ)``; the triangle is feasible where the violation is
    at most ``_FEASIBLE_EPS``. The violation is the largest of: how far eq. 5's cosine lies
    outside ``[−1, 1]``; by how much (radians) the joint's own cone misses the triangle's
    circle, ``|κ − δ| − φ``; by how much the next joint's bend exceeds its cone,
    ``|∠(d̂, e⃗) − γ| − φ_next``. ``kappa`` = angle between the joint's cone axis and ``ĉ``.
    """
    a = plan.lengths[i]
    raw = (a * a - b * b + c2) * inv_c * (0.5 / a)
    violation = np.maximum(raw - 1.0, -1.0 - raw)
    cos_d, sin_d = _triangle(a, b, c, c2, inv_c)
    if plan.kinds[i] == "cone":
        own = np.abs(kappa - np.arctan2(sin_d, cos_d)) - plan.cones[i]
        violation = np.maximum(violation, own)
    if i + 1 < plan.n and plan.kinds[i + 1] == "cone":
        cos_next = np.clip((c * cos_d - a) / np.maximum(b, _SAFE), -1.0, 1.0)
        bend = np.abs(np.arccos(cos_next) - gamma) - plan.cones[i + 1]
        violation = np.maximum(violation, bend)
    return violation, cos_d, sin_d


def _violation_at(plan: _Plan, i: int, rows: tuple[Num, ...], s: Num) -> Num:
    """:func:`_violation` of the family member ``s`` for targets ``rows = (c, c², 1/c, κ)``."""
    family = plan.families[i]
    assert family is not None
    b, gamma = _Family.planar(family.links, family.curl, s)
    return _violation(plan, i, *rows, b, gamma)[0]  # type: ignore[call-arg]


def _constrained_rule(
    plan: _Plan, i: int, c: Num, c2: Num, inv_c: Num, kappa: Num, delta90: bool
) -> tuple[Num, Num, Num]:
    """``(cos δ, sin δ, formed)`` at a joint with cone limits around it.

    Searches the smallest collapse parameter ``s`` whose :func:`_violation` is at most
    ``_FEASIBLE_EPS`` (module docstring): the straight rest ``s = 0``; else a grid of 33
    values; where none passes, a grid of 257 values and golden-section searches about its
    lowest local minima (:func:`_search_fine`: feasible ranges far narrower than the grid
    spacing are found this way); then bisection between the last failing and the first
    passing value.
    Where nothing passes, falls back to :func:`_free_rule`. ``formed`` marks where the
    triangle closed with the straight rest of the chain (§3.1.2).
    """
    family = plan.families[i]
    assert family is not None
    free_cos, free_sin = _free_rule(plan, i, c, c2, inv_c, delta90)
    if family.trivial:
        v, cos_d, sin_d = _violation(plan, i, c, c2, inv_c, kappa, family.straight, 0.0)
        ok = v <= _FEASIBLE_EPS
        return np.where(ok, cos_d, free_cos), np.where(ok, sin_d, free_sin), ok
    rows = (c, c2, inv_c, np.broadcast_to(kappa, np.shape(c)))
    grid, grid_b, grid_gamma = family.grid
    # The straight rest (s = 0) first: most targets need no collapse.
    found = _violation(plan, i, *rows, grid_b[0], grid_gamma[0])[0] <= _FEASIBLE_EPS
    s = np.zeros(np.shape(c))
    lo = np.zeros(np.shape(c))
    a = plan.lengths[i]
    search = np.flatnonzero(
        ~found
        & (c <= a + grid_b.max() + family.step + _FEASIBLE_EPS)
        & (c >= np.abs(a - grid_b).min() - family.step - _FEASIBLE_EPS)
    )
    if search.size:
        sub = tuple(x[search, None] for x in rows)
        v_grid = _violation(plan, i, *sub, grid_b[None, :], grid_gamma[None, :])[0]  # type: ignore[call-arg]
        passing = v_grid <= _FEASIBLE_EPS
        hit = passing.any(axis=1)
        first = np.argmax(passing, axis=1)
        found[search] = hit
        s[search] = grid[first]
        lo[search] = grid[np.maximum(first - 1, 0)]
        retry = search[~hit]
        if retry.size:
            found[retry], s[retry], lo[retry] = _search_fine(plan, i, tuple(x[retry] for x in rows))
    refine = np.flatnonzero(found & (s > 0.0))
    if refine.size:
        sub = tuple(x[refine] for x in rows)
        lo, hi = lo[refine], s[refine]
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            ok_mid = _violation_at(plan, i, sub, mid) <= _FEASIBLE_EPS
            hi = np.where(ok_mid, mid, hi)
            lo = np.where(ok_mid, lo, mid)
        s[refine] = hi
    b, gamma = _Family.planar(family.links, family.curl, s)
    v, cos_d, sin_d = _violation(plan, i, c, c2, inv_c, kappa, b, gamma)
    ok = (v <= _FEASIBLE_EPS) & found
    return np.where(ok, cos_d, free_cos), np.where(ok, sin_d, free_sin), ok & (s == 0.0)


def _search_fine(
    plan: _Plan, i: int, rows: tuple[Num, ...]
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Search for a feasible ``s`` for targets ``rows`` that no value of the family's grid
    passes: the first passing value of its finer grid; else golden-section searches about
    the :data:`_MINIMA` lowest local minima of the violation on the finer grid.

    The violation is not unimodal: with a 5° cone on the next joint the feasible range can
    be narrower than the grid step and sit in a dip the grid does not see, or beside a
    shallower minimum within one step.

    Returns, per target, whether a feasible ``s`` was found, the smallest found (or the
    best), and a value below it where the violation fails (for the bisection that follows).
    """
    family = plan.families[i]
    assert family is not None
    grid, grid_b, grid_gamma = family.fine
    count = grid.size
    v_grid = _violation(plan, i, *(x[:, None] for x in rows), grid_b[None], grid_gamma[None])[0]  # type: ignore[call-arg]
    passing = v_grid <= _FEASIBLE_EPS
    hit = passing.any(axis=1)
    first = np.argmax(passing, axis=1)
    found, s, lo = hit, grid[first], grid[np.maximum(first - 1, 0)]
    retry = np.flatnonzero(~hit)
    if retry.size:
        size = retry.size
        v_retry = v_grid[retry]
        padded = np.pad(v_retry, ((0, 0), (1, 1)), constant_values=np.inf)
        minima = np.where((v_retry <= padded[:, :-2]) & (v_retry <= padded[:, 2:]), v_retry, np.inf)
        k = min(_MINIMA, count)
        picks = np.argsort(minima, axis=1, kind="stable")[:, :k]
        owner = np.repeat(retry, k)
        at = picks.ravel()
        sub = tuple(x[owner] for x in rows)
        left = grid[np.maximum(at - 1, 0)]
        right = grid[np.minimum(at + 1, count - 1)]
        s_best = _golden_minimum(lambda x: _violation_at(plan, i, sub, x), left, right)
        ok = _violation_at(plan, i, sub, s_best) <= _FEASIBLE_EPS
        ok &= np.isfinite(minima[np.repeat(np.arange(size), k), at])
        # Per target: the smallest feasible s, else the search about the least minimum.
        rank = np.where(ok, s_best, np.inf).reshape(size, k)
        choice = np.where(ok.reshape(size, k).any(axis=1), np.argmin(rank, axis=1), 0)
        flat = np.arange(size) * k + choice
        found[retry], s[retry], lo[retry] = ok[flat], s_best[flat], left[flat]
    return found, s, lo


def _golden_minimum(f: Any, lo: FloatArray, hi: FloatArray) -> FloatArray:
    """Golden-section search for the minimum of ``f`` on ``[lo, hi]`` (arrays, per row)."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    x1 = hi - ratio * (hi - lo)
    x2 = lo + ratio * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(_GOLDEN_STEPS):
        left = f1 <= f2
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
        new_x1 = np.where(left, hi - ratio * (hi - lo), x2)
        new_x2 = np.where(left, x1, lo + ratio * (hi - lo))
        value = f(np.where(left, new_x1, new_x2))
        f1, f2 = np.where(left, value, f2), np.where(left, f1, value)
        x1, x2 = new_x1, new_x2
    return np.where(f1 <= f2, x1, x2)


def _cone_select(d: Vec, chat: Vec, cos_d: Num, sin_d: Num, w: Vec, k: Vec, phi: float) -> Vec:
    """Keep link directions ``d`` inside the cone of half-angle ``phi`` about ``k``.

    Outside it: the direction on the triangle's circle (angle ``δ`` about ``ĉ``) nearest
    the shortest-turn one that the cone allows; if the circle misses the cone, the point
    of the cone's edge nearest ``d``.
    """
    cos_phi, sin_phi = math.cos(phi), math.sin(phi)
    inside = vdot(k, d) >= cos_phi
    if np.all(inside):
        return d
    kc = vdot(k, chat)
    k_perp = vsub(k, vscale(chat, kc))
    kpn = _norm(k_perp)
    e1 = _where(kpn > 1e-12, vscale(k_perp, 1.0 / np.maximum(kpn, _SAFE)), w)
    e2 = vcross(chat, e1)
    radius = sin_d * kpn
    m = (cos_phi - cos_d * kc) / np.maximum(radius, _SAFE)
    on_circle = (radius > 1e-15) & (m <= 1.0)
    psi_max = np.arccos(np.clip(m, -1.0, 1.0))
    psi = np.clip(np.arctan2(vdot(w, e2), vdot(w, e1)), -psi_max, psi_max)
    ring = vcombine(np.cos(psi), e1, np.sin(psi), e2)
    d_ring = vcombine(cos_d, chat, sin_d, ring)
    # The part of d across k, taken off twice: once is not enough where d is nearly (anti)
    # parallel to k, and a side with a part along k would lengthen the edge direction.
    d_perp = vsub(d, vscale(k, vdot(d, k)))
    d_perp = vsub(d_perp, vscale(k, vdot(d_perp, k)))
    dpn = _norm(d_perp)
    side = _where(dpn > 1e-12, vscale(d_perp, 1.0 / np.maximum(dpn, _SAFE)), _perpendicular(k, w))
    d_edge = vcombine(cos_phi, k, sin_phi, side)
    return _where(inside, d, _where(on_circle, d_ring, d_edge))
