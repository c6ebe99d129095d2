# SPDX-License-Identifier: GPL-3.0-or-later
"""Stretch and soft reach: where a chain aims and how long its links become, per target.

Both are decided before a method runs, from the target's distance ``d`` to the root alone
(no history), and every method then solves an ordinary problem:

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

The links' scale factors (``(N, n)``, 1 = rest length) are the solution's
:attr:`~core.result.Solution.scales`; the joints' positions are those of the stretched
chain (:meth:`~core.chain.Chain.scaled`).
"""

from __future__ import annotations

import math

import numpy as np

from .blender_stretch import link_scales
from .chain import Chain
from .errors import SolveInputError
from .options import SolveOptions
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


def plan(
    chain: Chain,
    targets: FloatArray,
    distance: FloatArray,
    options: SolveOptions,
    initial: FloatArray,
) -> tuple[FloatArray, FloatArray | None]:
    """Where each target is aimed at and how the links stretch.

    Args:
        chain: the chain.
        targets: ``(N, 3)`` targets in the base frame.
        distance: ``(N,)`` their distances from the root.
        options: the settings (``stretch``, ``soft_reach``, ``stretch_rule``).
        initial: ``(N, n, 4)`` the start poses (read by ``stretch_rule`` ``"blender"``).

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


__all__ = ["applies", "check", "plan", "shares", "soft_distance", "soft_float", "stretches"]
