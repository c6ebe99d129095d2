# SPDX-License-Identifier: GPL-3.0-or-later
"""Roots of brackets by regula falsi, Illinois variant: a batch in numpy
(:func:`illinois`), one in floats (:func:`illinois_one`, the same steps).

Used where a closed form leaves one root in one variable per row: the stationary points of
the alignment along a swing region's boundary curves (:func:`core.swing_curves.illinois`;
its one-target twin :func:`core.swing_curves.illinois_one` evaluates the curve inline, the
hot loop of a projection), the least distance of a limb's hinge angle
(:mod:`core.limb_closest`) and the edge of the spins a joint's limits allow
(:func:`core.triangulation_limits.spin_edge`: to a given width, the end within the
limits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np

from .rotations import FloatArray


def illinois(
    slope: Callable[[FloatArray], FloatArray],
    lo: FloatArray,
    hi: FloatArray,
    f_lo: FloatArray,
    f_hi: FloatArray,
    steps: int,
    width: float = 0.0,
    keep: Literal["smaller", "hi"] = "smaller",
    falsi: int | None = None,
) -> FloatArray:
    """Roots ``(M,)`` of ``slope`` (a function of ``(M,)`` arguments, evaluated on every row)
    in brackets ``[lo, hi]`` where it falls from ``f_lo > 0`` to ``f_hi <= 0``: regula falsi
    with the Illinois variant's halving, each bracket shrunk until it is no longer than
    ``width`` or ``δ = 4 ulp``, or its ends' signs no longer bracket a root (at most
    ``steps`` evaluations); the end of each bracket where ``|slope|`` is smaller
    (``keep="smaller"``) or its ``hi`` end, where ``slope <= 0`` (``keep="hi"``). Where the
    regula falsi point rounds onto an end of the bracket, the step tests ``δ`` inside that
    end, the first time (a root there, as where the end's value is at rounding level, is
    then bracketed to ``δ`` at once, not bisected toward one bit a step), and the midpoint
    after that. After ``falsi`` steps (where given) every step is the midpoint: a function
    that rises steeply from a long flat stretch can take the Illinois halving many steps to
    cross, and bisection then bounds the evaluations to reach ``width``."""
    side = np.zeros(lo.shape, dtype=int)
    probed = np.zeros(lo.shape, dtype=bool)
    for step in range(steps):
        delta = 4.0 * np.spacing(np.abs(hi) + 1.0)
        open_ = (hi - lo > np.maximum(delta, width)) & (f_lo > 0.0) & (f_hi < 0.0)
        if not np.any(open_):
            break
        if falsi is not None and step >= falsi:
            t = 0.5 * (lo + hi)
        else:
            t = (lo * f_hi - hi * f_lo) / np.where(open_, f_hi - f_lo, -1.0)
            inside = (t > lo) & (t < hi)
            probe = open_ & ~inside & ~probed
            end = np.where(t >= hi, hi - delta, lo + delta)
            t = np.where(inside, t, np.where(probe, end, 0.5 * (lo + hi)))
            probed |= probe
        ft = slope(t)
        up = open_ & (ft > 0.0)
        down = open_ & ~up
        lo, f_lo = np.where(up, t, lo), np.where(up, ft, f_lo)
        hi, f_hi = np.where(down, t, hi), np.where(down, ft, f_hi)
        # Illinois: halve the value kept at the end that stayed twice, so that it moves too.
        f_hi = np.where(up & (side == 1), 0.5 * f_hi, f_hi)
        f_lo = np.where(down & (side == -1), 0.5 * f_lo, f_lo)
        side = np.where(up, 1, np.where(down, -1, side))
    if keep == "hi":
        return hi
    # The end of the converged bracket where the slope is smaller.
    return np.where(np.abs(f_lo) <= np.abs(f_hi), lo, hi)


def illinois_one(
    slope: Callable[[float], float],
    lo: float,
    hi: float,
    f_lo: float,
    f_hi: float,
    steps: int,
    width: float = 0.0,
    keep: Literal["smaller", "hi"] = "smaller",
    falsi: int | None = None,
) -> float:
    """:func:`illinois` for one bracket in plain floats: the same steps, so the same root."""
    side = 0
    probed = False
    for step in range(steps):
        delta = 4.0 * math.ulp(abs(hi) + 1.0)
        if not (hi - lo > max(delta, width) and f_lo > 0.0 and f_hi < 0.0):
            break
        if falsi is not None and step >= falsi:
            t = 0.5 * (lo + hi)
        else:
            t = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
            if not lo < t < hi:
                if probed:
                    t = 0.5 * (lo + hi)
                else:
                    t, probed = (hi - delta if t >= hi else lo + delta), True
        ft = slope(t)
        if ft > 0.0:
            lo, f_lo = t, ft
            if side == 1:
                f_hi = 0.5 * f_hi
            side = 1
        else:
            hi, f_hi = t, ft
            if side == -1:
                f_lo = 0.5 * f_lo
            side = -1
    if keep == "hi":
        return hi
    return lo if abs(f_lo) <= abs(f_hi) else hi


__all__ = ["illinois", "illinois_one"]
