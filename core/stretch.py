# SPDX-License-Identifier: GPL-3.0-or-later
"""Stretch and soft reach: where a chain aims and how long its links become, per target.

Both are decided before a method runs, from the target's distance ``d`` to the root alone
(no history; with an orientation goal, from the wrist: below), and every method then solves
an ordinary problem:

**Soft reach** ``s`` (:attr:`~core.options.SolveOptions.soft_reach`, ``0 < s < R``, ``R``
the chain's reach): within ``d0 = R − s`` the target is used as is; beyond, the chain aims
at the distance

    ``d_soft = R − s · exp(−(d − d0) / s)``

along the root→target line, which equals ``d0`` with slope 1 at ``d = d0`` (value and
first derivative continuous) and approaches ``R`` as ``d`` grows, so the chain straightens
only in the limit and never snaps straight.

**Stretch** (:attr:`~core.options.SolveOptions.stretch` on and some link's
:attr:`~core.chain.Chain.stretch` weight above 0): the target is always reached. Where the
chain would aim short of it (``d_aim = d_soft``, or ``min(d, R)`` without soft reach), the
links lengthen by ``e = R · (d / d_aim − 1)`` in all (the chain's reach becomes
``R · d / d_aim``, so the target sits where the aimed point sat relative to the unstretched
reach: beyond the reach without soft reach, the chain straight along root→target), shared
between the links in proportion to the cube of their weights: link ``i`` gets
``e · w_i³ / Σ w_j³`` of extra length, an absolute amount (equal weights: equal
lengthening, whatever the links' lengths). Within ``d0`` (within the reach without soft
reach) no link changes length.

Why that share: Blender's Standard IK gives a bone's stretch the degree-of-freedom weight
``w²`` (stiffness ``1 − w²``, ``iksolver_plugin.cc``), and its damped least-squares step
scales each column of the Jacobian by the square root of the weight and the update by the
weight, so a straight chain's links lengthen at rates ``∝ (w²)^1.5 = w³``. Measured in
Blender 5.0 (bpy) on straight 2- and 3-bone chains beyond reach: equal weights lengthen
every bone by the same amount (0.3/0.5 m bones at 1.3× reach: +120.0 and +119.8 mm),
weights 1 and 0.5 split 8.0 : 1 (the rule: 8), 1 and 0.1 split 428 : 1 (the rule: 1000;
0.4 mm apart at 1.3× reach). Blender also lets bones **shorten** within reach (its
iteration uses the stretch freedom there too, from the frame's FK pose: 1–17 mm on
Rigify's limbs with weight 0.1, up to half a bone with weight 1); that depends on the
iteration's path, and this closed form does not reproduce it: ``stretch_rule="blender"``
does (below).

``stretch_rule="blender"`` instead takes the lengths Blender's Standard IK gives from the
start pose, within reach too (:mod:`core.blender_stretch`); the method then solves the
chain with those lengths (beyond reach it ends where Blender's iteration stopped, a
fraction of a millimetre short, rather than on the target).

**Orientation goals** (a target rotation the wrist rule meets,
:func:`core.wrist.pursues_orientation`; stretch on, no soft reach; either rule): the last
link is turned to the goal, so its joint, the wrist, must lie where the chain without it
reaches — within its length (one link: at its length). Where it does not, the links change
by the least weighted amount that brings it there: the last link by ``x``, the others by
``g(x)``, the distance the wrist then lies beyond their reach (for one upper link, short of
it too), shared by their weights; ``x`` minimises ``f(x) = x²/w_last + g(x)²/W_upper``
with the weights ``w³`` of the shares above (a straight chain reaching for a point alone
would take those shares). ``f`` is sampled over the ``x`` that can beat ``x = 0`` and its
least sample refined by regula falsi on ``f′`` (:func:`wrist_scales`); the upper links
then reach the wrist straight. The last link may **shorten**, as Blender's IK lets it: on
an arm with *IK Stretch* 0.1 (Rigify's) on both bones, targets at 0.8–1.3 of its reach and
the forearm turned to goals it cannot take at its rest length, Blender 5.0 gives the same
lengths within 15 mm (median 5 mm) and meets both goals, as every method then does
(``tests/blender/test_ik_stretch.py``; until 0.9.1 the links stretched as for the target
alone and the effector missed by up to 0.9 m there). With *IK Stretch* 1 Blender's
iteration shrinks that forearm to a millimetre; this rule keeps the same shares.

The links' scale factors (``(N, n)``, 1 = rest length) are the solution's
:attr:`~core.result.Solution.scales`; the joints' positions are those of the stretched
chain (:meth:`~core.chain.Chain.scaled`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from . import rotations as rot
from .blender_stretch import link_scales
from .chain import Chain
from .errors import SolveInputError
from .options import SolveOptions
from .regula_falsi import illinois_one
from .rotations import FloatArray


def stretches(chain: Chain, options: SolveOptions) -> bool:
    """Stretch is on and some link of ``chain`` may stretch."""
    return options.stretch and any(w > 0.0 for w in chain.stretch)


def applies(chain: Chain, options: SolveOptions) -> bool:
    """Soft reach or stretch changes where ``chain`` aims (else a solve runs as without)."""
    return options.soft_reach > 0.0 or stretches(chain, options)


def check(chain: Chain, options: SolveOptions) -> None:
    """Soft reach must stay below the chain's reach."""
    if options.soft_reach >= chain.reach:
        raise SolveInputError(
            f"soft_reach must be below the chain's reach {chain.reach:g} "
            f"(0 = off), got {options.soft_reach!r}"
        )


def soft_distance(distance: FloatArray, reach: float, soft: float) -> FloatArray:
    """``(N,)`` the distances a chain of ``reach`` aims at for targets at ``distance``
    ``(N,)`` with soft reach ``soft`` (module docstring); ``soft = 0``: unchanged."""
    if soft <= 0.0:
        return distance
    start = reach - soft
    beyond = distance > start
    if not beyond.any():
        return distance
    out = distance.copy()
    out[beyond] = reach - soft * np.exp(-(distance[beyond] - start) / soft)
    return out


def soft_float(distance: float, reach: float, soft: float) -> float:
    """:func:`soft_distance` of one distance."""
    start = reach - soft
    if soft <= 0.0 or not distance > start:
        return distance
    return reach - soft * math.exp(-(distance - start) / soft)


def shares(chain: Chain) -> FloatArray:
    """``(n,)`` each link's share of the extra length: ``w³ / Σ w³`` (module docstring)."""
    cubes = np.asarray(chain.stretch, dtype=np.float64) ** 3
    return cubes / cubes.sum()


#: The shortest a link may become where it shortens for an orientation goal (a fraction of
#: its rest length; Blender's IK keeps a stretching bone at least 0.001 of its chain's).
_SHORTEST = 1e-3
#: Samples of the last link's change that bracket its least change (:func:`_least_change`),
#: and the regula falsi steps that then find it to rounding.
_SAMPLES = 64
_STEPS = 80


def wrist_scales(chain: Chain, targets: FloatArray, goals: FloatArray) -> FloatArray:
    """``(N, n)`` the links' scale factors for goals with an orientation the wrist rule
    meets (module docstring, *Orientation goals*): 1 where the wrist lies within reach of
    the chain without its last link, else the least weighted change of the links' lengths
    that brings it there.

    Args:
        chain: the chain (two or more links).
        targets: ``(N, 3)`` targets in the base frame.
        goals: ``(N, 4)`` the last joint's goal orientations (wxyz, base frame).
    """
    weights = np.asarray(chain.stretch, dtype=np.float64) ** 3
    lengths = chain.lengths
    upper, w_upper, w_last = float(lengths[:-1].sum()), float(weights[:-1].sum()), weights[-1]
    turned = rot.rotate(goals, chain.offsets[-1])  # the last link, turned to the goal
    u = turned / lengths[-1]
    wrist = targets - turned  # where the last link keeps its length
    along = np.einsum("ij,ij->i", u, wrist)
    one = chain.n_joints == 2  # one upper link: it reaches its own length's distance only

    def distance(x: FloatArray) -> FloatArray:
        """The wrist's distance from the root, the last link ``x (N,)`` or ``(N, K)``
        longer."""
        moved = wrist[:, None, :] - u[:, None, :] * x.reshape(size, -1)[..., None]
        return np.linalg.norm(moved, axis=-1).reshape(x.shape)

    def change(d: FloatArray) -> FloatArray:
        """How much longer the upper links must be for a wrist at distance ``d``: its
        distance beyond their reach (their length, for one link: shorter where nearer)."""
        return d - upper if one else np.maximum(d - upper, 0.0)

    size = len(targets)
    x = np.zeros(size)
    if w_upper == 0.0 and w_last > 0.0:  # only the last link changes: least, to reach
        square = np.einsum("ij,ij->i", wrist, wrist) - upper * upper
        room = along * along - square
        x = np.where(room >= 0.0, along - np.sign(along) * np.sqrt(np.abs(room)), along)
        x = np.where(change(distance(np.zeros(size))) != 0.0, x, 0.0)
    elif w_last > 0.0:

        def cost(x: FloatArray) -> FloatArray:  # f(x), the weighted squared change
            return x * x / w_last + change(distance(x)) ** 2 / w_upper

        def falling(k: int) -> Callable[[float], float]:
            """``−f′(x)/2`` of row ``k`` in floats (illinois' brackets fall)."""
            (wx, wy, wz), (ux, uy, uz), a = wrist[k].tolist(), u[k].tolist(), float(along[k])
            w_up, w_end = w_upper, float(w_last)

            def slope(x: float) -> float:
                d = math.sqrt((wx - ux * x) ** 2 + (wy - uy * x) ** 2 + (wz - uz * x) ** 2)
                g = d - upper if one else max(d - upper, 0.0)
                return g * (a - x) / (max(d, 1e-300) * w_up) - x / w_end

            return slope

        x = _least_change(cost, falling, change(distance(x)), w_upper, float(w_last))
    x = np.maximum(x, (_SHORTEST - 1.0) * lengths[-1])
    out = np.ones((size, chain.n_joints))
    if w_upper > 0.0:
        grow = change(distance(x))[:, None] * (weights[:-1] / w_upper / lengths[:-1])[None, :]
        out[:, :-1] = np.maximum(out[:, :-1] + grow, _SHORTEST)
    out[:, -1] += x / lengths[-1]
    return out


def _least_change(
    cost: Callable[[FloatArray], FloatArray],
    falling: Callable[[int], Callable[[float], float]],
    rest: FloatArray,
    w_upper: float,
    w_last: float,
) -> FloatArray:
    """``(N,)`` the last link's change ``x`` of least ``cost`` ``f(x) = x²/w_last +
    g(x)²/w_upper`` (``g`` what the upper links then change by, ``rest (N,)`` its value at
    ``x = 0``; ``falling(k)`` is row ``k``'s ``−f′/2``). A better ``x`` than 0 has
    ``x²/w_last < f(0)``, which bounds the search: ``f`` is sampled there
    (:data:`_SAMPLES`, every row at once), and where the least sample lies between two
    others the slope changes sign between them: regula falsi finds the minimum to rounding
    (row by row, in floats)."""
    bound = np.abs(rest) * math.sqrt(w_last / w_upper)
    grid = bound[:, None] * np.linspace(-1.0, 1.0, _SAMPLES + 1)[None, :]
    least = np.argmin(cost(grid), axis=1)
    x = grid[np.arange(len(rest)), least]
    for k in np.flatnonzero((least > 0) & (least < _SAMPLES) & (bound > 0.0)).tolist():
        slope = falling(k)
        lo, hi = float(grid[k, least[k] - 1]), float(grid[k, least[k] + 1])
        f_lo, f_hi = slope(lo), slope(hi)
        if f_lo > 0.0 and f_hi < 0.0:
            x[k] = illinois_one(slope, lo, hi, f_lo, f_hi, _STEPS)
    return x


def plan(
    chain: Chain,
    targets: FloatArray,
    distance: FloatArray,
    options: SolveOptions,
    initial: FloatArray,
    goals: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray | None]:
    """Where each target is aimed at and how the links stretch.

    Args:
        chain: the chain.
        targets: ``(N, 3)`` targets in the base frame.
        distance: ``(N,)`` their distances from the root.
        options: the settings (``stretch``, ``soft_reach``, ``stretch_rule``).
        initial: ``(N, n, 4)`` the start poses (read by ``stretch_rule`` ``"blender"``).
        goals: ``(N, 4)`` orientation goals (wxyz) that the wrist rule meets
            (:func:`core.wrist.pursues_orientation`), or ``None``: with stretch and
            without soft reach, the links then change for the wrist (:func:`wrist_scales`),
            whatever ``stretch_rule``.

    Returns:
        ``(aims, scales)``: ``aims (N, 3)`` the points to solve for (the targets where they
        are reached, else pulled in along their ray from the root); ``scales (N, n)`` the
        links' scale factors, or ``None`` without stretch.
    """
    reach = chain.reach
    soft = options.soft_reach
    aimed = soft_distance(distance, reach, soft) if soft > 0.0 else np.minimum(distance, reach)
    if not stretches(chain, options):
        short = aimed < distance
        if not short.any():
            return targets, None
        aims = targets.copy()
        aims[short] = targets[short] * (aimed[short] / distance[short])[:, None]
        return aims, None
    if goals is not None and soft <= 0.0:
        return targets, wrist_scales(chain, targets, goals)
    if options.stretch_rule == "blender":
        scales = np.array(
            [
                link_scales(chain, target, start, options.max_iterations)
                for target, start in zip(targets, initial, strict=True)
            ]
        )
        return targets, scales
    extra = np.zeros_like(distance)
    short = aimed < distance
    extra[short] = reach * (distance[short] / aimed[short] - 1.0)
    scales = 1.0 + extra[:, None] * (shares(chain) / chain.lengths)[None, :]
    return targets, scales


__all__ = [
    "applies",
    "check",
    "plan",
    "shares",
    "soft_distance",
    "soft_float",
    "stretches",
    "wrist_scales",
]
