# SPDX-License-Identifier: GPL-3.0-or-later
"""The even spread: the start pose's bends scaled to reach the target.

Triangulation (Müller-Cajar & Mukundan 2007) bends each joint as much as the triangle
allows, root first, so a long chain folds at its root and stays straight beyond. The
paper's future-work section discusses other choices of the angle ``δb`` a joint leaves to
the rest of the chain. This module takes the choice that spreads the bend: every joint
keeps the *shape* of the start pose, scaled — the triangle at joint ``i`` is formed with
``b`` = the chord of the rest of the chain bent by the same scale (the way § 3.1.3 replaces
``b`` by a collapsed chain's length), which makes every joint's share of the bend the same
fraction of its start bend. It is FABRIK's seed (:mod:`core.fabrik`), and so
``SolveOptions(distribution="even")`` for triangulation, which answers with FABRIK (the
spread where it reaches, FABRIK's rounds where it falls short).

The family (a shape per chain and start pose, :func:`shape`):

* the start pose's joint positions give the link directions ``d_k`` and their signed
  bends ``β_k = ∠(d_{k−1}, d_k)`` about the plane normal ``N`` (the sum of the bends'
  axes; for a chain that is not planar this is its projection on that plane). A straight
  start pose has no bends to scale: it gets a uniform curl, ``β_k = 1`` about the root's
  local X axis (a Blender bone bends about X), whose inner joints lie toward the root's −Z,
  the side the ``"rest"`` bend plane gives a straight chain;
* member ``λ ≥ 0`` bends joint ``k`` by ``λ β_k`` in that plane: ``λ = 0`` is the straight
  chain (full reach), ``λ = 1`` the start shape, larger ``λ`` folds it further, up to the
  first local minimum of the chord ``|E(λ)|`` (and no joint past 180°);
* planar forward kinematics: link ``k`` points at ``α_k = λ B_k`` (``B_k = Σ_{j≤k} β_j``),
  ``E(λ) = Σ L_k (cos α_k, sin α_k)``.

Per target at distance ``c``: ``λ`` with ``|E(λ)| = c`` (bracketed on a table of 129
values, then Newton steps with ``d|E|/dλ = E·E′/|E|``, bisection-safe); ``c ≥ reach``
gives ``λ = 0`` (straight at the target), ``c`` below the family's smallest chord gives
that member (the closest the family comes). The planar chain is placed in the start
pose's plane, turned by the shortest rotation from its chord to the target, its rotations
come from :func:`core.aim.aim` (shortest turns from rest), and the bend plane is oriented
like every method's (:func:`core.bend_plane.orient_bend`: pole, else the ``"rest"`` rule).

Smooth by construction: ``λ`` is a continuous, monotone function of the target's distance
and the plane a continuous function of its direction, so the pose changes smoothly with a
smoothly moving target, and every joint keeps the sign of its start bend (no inversions).
Exact on chains without limits for ``min |E| ≤ c ≤ reach``; a chain with limits is
projected by :func:`core.aim.aim` (limits hold, the target may be missed — FABRIK then
iterates from there).

Arithmetic written once on components: plain floats for one target, ``(N,)`` arrays for a
batch (:mod:`core.components`); :func:`spread_points_floats` is the one-target path in
plain floats (FABRIK's, :mod:`core.fabrik_single`), the same pose to rounding (tested).
"""

from __future__ import annotations

import bisect
import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import rotations as rot
from .aim import AimPlan, aim, aim_plan, hinge_signs
from .chain import Chain
from .components import (
    ARRAY_OPS,
    FLOAT_OPS,
    Num,
    Ops,
    Quat,
    Vec,
    pick,
    qrotate,
    vcombine,
    vcross,
    vdot,
    vscale,
)
from .kinematics import forward_kinematics
from .problem import Problem

#: Size of the table of chords the scale is bracketed on, and Newton steps after it.
_TABLE = 129
_NEWTON = 6
#: The float path's Newton rounds stop at a step below this fraction of the table's range.
_CLOSE = 1e-9
#: Bends below this (radians) count as straight.
_STRAIGHT = 1e-6
_SAFE = 1e-300


@dataclass(frozen=True)
class Shape:
    """A chain's spread family for one start pose (floats; see the module docstring).

    Attributes:
        lengths: ``L_k``.
        turns: ``B_k``, each link's direction per unit of ``λ`` (``B_0 = 0``).
        d0, m0: the plane's axes in the base frame (link 0's start direction, and ``N × d0``).
        normal: ``N``.
        lam_max: the largest ``λ`` of the family (the first minimum of the chord).
        bend_signs: ``sign(β_k)`` of joints ``1 … n − 1`` (``+1`` where ``β_k = 0``).
        psi_ref: the chord's in-plane angle that the ``"rest"`` bend plane carries to the
            target: the start pose's (``λ = 1``), or ``0`` (link 0) for a straight start.
        table: ``(λ_j, |E(λ_j)|)`` on ``[0, lam_max]``, the chord decreasing.
        rising: the table's chords in reverse (increasing), to bisect.
        links: ``(L_k, B_k)`` pairs.
    """

    lengths: tuple[float, ...]
    turns: tuple[float, ...]
    d0: Vec
    m0: Vec
    normal: Vec
    lam_max: float
    psi_ref: float
    bend_signs: tuple[float, ...]
    table: tuple[tuple[float, ...], tuple[float, ...]]
    rising: tuple[float, ...]
    links: tuple[tuple[float, float], ...]

    @property
    def keeps_lengths(self) -> bool:
        """Its members' joints lie at the links' lengths from each other: ``d0 ⟂ N`` (a
        start pose bent in one plane, or straight). Otherwise ``d0, m0`` are not orthonormal
        and :func:`core.aim.aim` moves the joints (by up to ~1e-6 of the reach)."""
        return abs(vdot(self.normal, self.d0)) <= 1e-12


_SHAPES: weakref.WeakKeyDictionary[Chain, Shape] = weakref.WeakKeyDictionary()


def _chord(lengths: np.ndarray, turns: np.ndarray, lam: np.ndarray) -> np.ndarray:
    a = lam[..., None] * turns
    return np.hypot(np.sum(lengths * np.cos(a), -1), np.sum(lengths * np.sin(a), -1))


def shape(chain: Chain, start: np.ndarray) -> Shape:
    """The family of ``chain`` about the start pose ``start (n, 4)`` (cached for the rest)."""
    rest = not np.any(start - (1.0, 0.0, 0.0, 0.0))
    if rest:
        hit = _SHAPES.get(chain)
        if hit is not None:
            return hit
    pos, orient = forward_kinematics(chain, start)
    links = np.diff(pos, axis=0)
    lengths = np.linalg.norm(links, axis=1)
    d = links / lengths[:, None]
    axes = rot.cross(d[:-1], d[1:])
    normal = np.sum(axes, axis=0) if len(axes) else np.zeros(3)
    if np.linalg.norm(normal) > _STRAIGHT:
        normal = normal / np.linalg.norm(normal)
        bends = np.arctan2(axes @ normal, np.einsum("ij,ij->i", d[:-1], d[1:]))
    else:
        bends = np.zeros(len(axes))
    if not np.any(np.abs(bends) > _STRAIGHT):
        normal = rot.perpendicular(d[0], rot.rotate(orient[0], [1.0, 0.0, 0.0]))
        bends = np.ones(len(axes))
        psi_ref = 0.0
    else:
        e1 = _planar(
            FLOAT_OPS,
            None,
            1.0,
            lengths.tolist(),
            np.concatenate(([0.0], np.cumsum(bends))).tolist(),
        )
        psi_ref = math.atan2(e1[1], e1[0])
    turns = np.concatenate(([0.0], np.cumsum(bends)))
    top = (math.pi - 1e-9) / float(np.max(np.abs(bends))) if len(bends) else 0.0
    grid = np.linspace(0.0, top, _TABLE)
    chords = _chord(lengths, turns, grid)
    rising = np.flatnonzero(np.diff(chords) >= 0.0)
    last = int(rising[0]) if rising.size else _TABLE - 1
    m0 = rot.cross(normal, d[0])
    out = Shape(
        lengths=tuple(float(x) for x in lengths),
        turns=tuple(float(x) for x in turns),
        d0=tuple(float(x) for x in d[0]),  # type: ignore[arg-type]
        m0=tuple(float(x) for x in m0),  # type: ignore[arg-type]
        normal=tuple(float(x) for x in normal),  # type: ignore[arg-type]
        lam_max=float(grid[last]),
        psi_ref=psi_ref,
        bend_signs=tuple(-1.0 if b < 0.0 else 1.0 for b in bends),
        table=(tuple(grid[: last + 1].tolist()), tuple(chords[: last + 1].tolist())),
        rising=tuple(chords[last::-1].tolist()),
        links=tuple(zip(lengths.tolist(), turns.tolist(), strict=True)),
    )
    if rest:
        _SHAPES[chain] = out
    return out


def _bracket(fam: Shape, c: Any) -> tuple[Any, Any]:
    """``(lo, hi)`` scales about the one whose chord is ``c``: table neighbours."""
    lams, chords = fam.table
    if isinstance(c, float):
        # chords decrease: the first index whose chord is below c
        k = len(chords) - bisect.bisect_left(fam.rising, c)
        k = min(max(k, 1), len(chords) - 1)
        return lams[k - 1], lams[k]
    k = len(chords) - np.searchsorted(np.asarray(chords[::-1]), c)
    k = np.clip(k, 1, len(chords) - 1)
    return np.asarray(lams)[k - 1], np.asarray(lams)[k]


def _planar(
    ops: Ops,
    fam: Shape | None,
    lam: Any,
    lengths: Any = None,
    turns: Any = None,
) -> tuple[Any, Any, Any, Any]:
    """``E(λ)`` and ``E′(λ)`` as ``(x, y, x′, y′)`` (of ``fam``, or of ``lengths, turns``)."""
    if fam is not None:
        lengths, turns = fam.lengths, fam.turns
    ex = ey = dx = dy = 0.0
    for length, b in zip(lengths, turns, strict=True):
        ca, sa = ops.cos(lam * b), ops.sin(lam * b)
        ex, ey = ex + length * ca, ey + length * sa
        dx, dy = dx - length * b * sa, dy + length * b * ca
    return ex, ey, dx, dy


def _scale(ops: Ops, fam: Shape, c: Any) -> Any:
    """The ``λ`` whose chord is ``c``, clamped to the family (module docstring)."""
    lo, hi = _bracket(fam, c)
    chords = fam.table[1]
    lam = 0.5 * (lo + hi)
    for _ in range(_NEWTON):
        ex, ey, dx, dy = _planar(ops, fam, lam)
        chord = ops.sqrt(ex * ex + ey * ey)
        slope = (ex * dx + ey * dy) / ops.where(chord > _SAFE, chord, 1.0)
        above = chord > c
        lo = ops.where(above, lam, lo)
        hi = ops.where(above, hi, lam)
        step = lam - (chord - c) / ops.where(slope < -_SAFE, slope, -1.0)
        inside = (step >= lo) & (step <= hi)
        lam = ops.where(inside, step, 0.5 * (lo + hi))
    lam = ops.where(c >= chords[0], 0.0, lam)
    return ops.where(c <= chords[-1], fam.lam_max, lam)


def spread_points(
    ops: Ops, fam: Shape, target: Vec, carry_start: bool
) -> tuple[list[Vec], list[Vec | None]]:
    """The family member reaching for ``target``, placed toward it: ``n + 1`` joints, and
    per joint its bend's normal (``sign(β_k) N`` carried with the chain; ``None`` for the
    root), the hint :func:`core.aim.aim` twists a hinge's parent toward.

    ``carry_start``: turn it in its plane so its chord lies along the start pose's chord
    (``psi_ref``), then by the shortest rotation from there to the target — the
    ``"rest"`` bend plane's carry, so the bend faces the start pose's side carried along;
    else by the shortest rotation from its own chord to the target.
    """
    c = ops.sqrt(vdot(target, target))
    lam = _scale(ops, fam, c)
    d0, m0 = fam.d0, fam.m0
    xs: list[Any] = [0.0]
    ys: list[Any] = [0.0]
    x: Num = 0.0
    y: Num = 0.0
    for length, b in zip(fam.lengths, fam.turns, strict=True):
        x, y = x + length * ops.cos(lam * b), y + length * ops.sin(lam * b)
        xs.append(x)
        ys.append(y)
    if carry_start:
        psi = ops.atan2(y, x)
        cr, sr = ops.cos(fam.psi_ref - psi), ops.sin(fam.psi_ref - psi)
        xs, ys = (
            [cr * a - sr * b for a, b in zip(xs, ys, strict=True)],
            [sr * a + cr * b for a, b in zip(xs, ys, strict=True)],
        )
    pts: list[Vec] = [
        (a * d0[0] + b * m0[0], a * d0[1] + b * m0[1], a * d0[2] + b * m0[2])
        for a, b in zip(xs, ys, strict=True)
    ]
    e = pts[-1]
    # shortest rotation taking the chord e to the target's direction (about N if opposite)
    ne = ops.sqrt(vdot(e, e))
    ue = vscale(e, 1.0 / ops.where(ne > _SAFE, ne, 1.0))
    ut = vscale(target, 1.0 / ops.where(c > _SAFE, c, 1.0))
    dot = vdot(ue, ut)
    cx = ue[1] * ut[2] - ue[2] * ut[1]
    cy = ue[2] * ut[0] - ue[0] * ut[2]
    cz = ue[0] * ut[1] - ue[1] * ut[0]
    cross2 = cx * cx + cy * cy + cz * cz
    behind = dot < 0.0
    w = ops.where(behind, cross2 / ops.where(behind, 1.0 - dot, 1.0), 1.0 + dot)
    opposite = behind & (cross2 < 1e-24)
    n = fam.normal
    w, cx, cy, cz = pick(ops, opposite, (0.0, n[0], n[1], n[2]), (w, cx, cy, cz))
    none = c <= _SAFE
    w, cx, cy, cz = pick(ops, none, (1.0, 0.0, 0.0, 0.0), (w, cx, cy, cz))
    norm = ops.sqrt(w * w + cx * cx + cy * cy + cz * cz)
    q: Quat = (w / norm, cx / norm, cy / norm, cz / norm)
    normal = qrotate(q, fam.normal)
    hints: list[Vec | None] = [None]
    for sign in fam.bend_signs:
        hints.append(vscale(normal, sign))
    return [qrotate(q, p) for p in pts], hints


def spread_points_floats(fam: Shape, target: Vec, carry_start: bool) -> tuple[list[Vec], Vec]:
    """:func:`spread_points` for one target in plain floats: the ``n + 1`` joints and the
    bend normal ``N`` carried to the target (the hints are ``sign(β_k)`` times it).

    The same steps to rounding, fewer of them: the Newton rounds for ``λ`` start from the
    secant of the bracketing table entries instead of their midpoint and stop once a step
    is below ``1e-9`` of the family's range (quadratic convergence: the next would move
    ``λ`` by rounding); the in-plane carry, the plane's axes and the turn onto the target
    are composed into two vectors ``A, B``, each joint ``x_k A + y_k B``."""
    sqrt, cos, sin = math.sqrt, math.cos, math.sin
    tx, ty, tz = target
    c = sqrt(tx * tx + ty * ty + tz * tz)
    links = fam.links
    lams, chords = fam.table
    if c <= chords[-1]:
        lam = fam.lam_max
    elif c >= chords[0]:
        lam = 0.0
    else:
        # chords decrease: the first index whose chord is below c (as _bracket)
        k = len(chords) - bisect.bisect_left(fam.rising, c)
        k = min(max(k, 1), len(chords) - 1)
        lo, hi = lams[k - 1], lams[k]
        span = chords[k - 1] - chords[k]
        lam = lo + (hi - lo) * ((chords[k - 1] - c) / span if span > 0.0 else 0.5)
        close = _CLOSE * lams[-1]
        for _ in range(_NEWTON):
            ex = ey = dx = dy = 0.0
            for length, b in links:
                ca, sa = cos(lam * b), sin(lam * b)
                ex, ey = ex + length * ca, ey + length * sa
                dx, dy = dx - length * b * sa, dy + length * b * ca
            chord = sqrt(ex * ex + ey * ey)
            slope = (ex * dx + ey * dy) / (chord if chord > _SAFE else 1.0)
            if chord > c:
                lo = lam
            else:
                hi = lam
            step = lam - (chord - c) / (slope if slope < -_SAFE else -1.0)
            step = step if lo <= step <= hi else 0.5 * (lo + hi)
            done = abs(step - lam) <= close
            lam = step
            if done:
                break
    x = y = 0.0
    xs = [x]
    ys = [y]
    for length, b in links:
        x, y = x + length * cos(lam * b), y + length * sin(lam * b)
        xs.append(x)
        ys.append(y)
    d0, m0 = fam.d0, fam.m0
    if carry_start:  # turned in its plane so the chord lies at psi_ref
        psi = math.atan2(y, x)
        cr, sr = cos(fam.psi_ref - psi), sin(fam.psi_ref - psi)
        d0, m0 = vcombine(cr, d0, sr, m0), vcombine(-sr, d0, cr, m0)
    e = vcombine(x, d0, y, m0)
    # shortest rotation taking the chord e to the target's direction (about N if opposite)
    ne = sqrt(vdot(e, e))
    ue = vscale(e, 1.0 / (ne if ne > _SAFE else 1.0))
    ut = vscale(target, 1.0 / (c if c > _SAFE else 1.0))
    dot = vdot(ue, ut)
    cx, cy, cz = vcross(ue, ut)
    cross2 = cx * cx + cy * cy + cz * cz
    normal = fam.normal
    if c > _SAFE:
        if dot < 0.0 and cross2 < 1e-24:
            w, (cx, cy, cz) = 0.0, normal
        else:
            w = cross2 / (1.0 - dot) if dot < 0.0 else 1.0 + dot
        norm = sqrt(w * w + cx * cx + cy * cy + cz * cz)
        q: Quat = (w / norm, cx / norm, cy / norm, cz / norm)
        d0, m0, normal = qrotate(q, d0), qrotate(q, m0), qrotate(q, normal)
    (ax, ay, az), (bx, by, bz) = d0, m0
    pts: list[Vec] = [
        (a * ax + b * bx, a * ay + b * by, a * az + b * bz) for a, b in zip(xs, ys, strict=True)
    ]
    return pts, normal


def rest_shape(chain: Chain) -> Shape:
    """:func:`shape` about the rest pose (cached per chain)."""
    hit = _SHAPES.get(chain)
    return hit if hit is not None else shape(chain, _rest(chain.n_joints))


def _rest(n: int) -> np.ndarray:
    out = np.zeros((n, 4))
    out[:, 0] = 1.0
    return out


def spread_pose(
    problem: Problem,
) -> tuple[list[Quat], list[Vec], Ops, AimPlan, list[Any], list[Vec | None]]:
    """The spread pose for every target of a batch (one shared start pose), before the
    bend plane: rotations and positions on ``(N,)`` component arrays, the ops and aim plan
    used, the hinges' preferred bend signs and the bend-plane hints. (One target takes
    :func:`spread_points_floats` through :func:`core.fabrik_single.fabrik_floats`.)"""
    plan = aim_plan(problem.chain)
    fam = shape(problem.chain, problem.initial[0])
    ops: Ops = ARRAY_OPS
    target: Vec = tuple(np.ascontiguousarray(problem.targets.T))
    start: list[Quat] = [
        tuple(np.ascontiguousarray(problem.initial[:, i, :].T)) for i in range(plan.n)
    ]
    wants, hints = spread_points(ops, fam, target, problem.options.bend_plane == "rest")
    signs = hinge_signs(ops, plan, problem.chain, start)
    rots, pos = aim(ops, plan, problem.chain, wants, signs, problem.size, hints)
    return rots, pos, ops, plan, signs, hints


def stack(rots: list[Quat], pos: list[Vec], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Component lists as ``(N, n, 4)`` and ``(N, n + 1, 3)`` arrays (for one target, of
    floats: one array call each)."""
    if size == 1 and all(type(x) is float for q in rots for x in q):
        return np.array([rots], dtype=np.float64), np.array([pos], dtype=np.float64)
    r = np.empty((size, len(rots), 4))
    p = np.empty((size, len(pos), 3))
    for i, q in enumerate(rots):
        for k in range(4):
            r[:, i, k] = q[k]
    for i, v in enumerate(pos):
        for k in range(3):
            p[:, i, k] = v[k]
    return r, p


__all__ = [
    "Shape",
    "rest_shape",
    "shape",
    "spread_points",
    "spread_points_floats",
    "spread_pose",
    "stack",
]
