# SPDX-License-Identifier: GPL-3.0-or-later
"""Roots of a batch of brackets by regula falsi, Illinois variant, in numpy.

Used where a closed form leaves one root in one variable per row: the stationary points of
the alignment along a swing region's boundary curves (:func:`core.swing_curves.illinois`)
and the least distance of a limb's hinge angle (:mod:`core.limb_closest`). The one-target
paths have their own float loops with the same steps (tested against these).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .rotations import FloatArray


def illinois(
    slope: Callable[[FloatArray], FloatArray],
    lo: FloatArray,
    hi: FloatArray,
    f_lo: FloatArray,
    f_hi: FloatArray,
    steps: int,
) -> FloatArray:
    """Roots ``(M,)`` of ``slope`` (a function of ``(M,)`` arguments, evaluated on every row)
    in brackets ``[lo, hi]`` where it falls from ``f_lo > 0`` to ``f_hi <= 0``: regula falsi
    with the Illinois variant's halving, each bracket shrunk until it is ``δ = 4 ulp`` long
    or its ends' signs no longer bracket a root (at most ``steps`` evaluations); the end of
    each bracket where ``|slope|`` is smaller. Where the regula falsi point rounds onto an
    end of the bracket, the step tests ``δ`` inside that end, the first time (a root there,
    as where the end's value is at rounding level, is then bracketed to ``δ`` at once, not
    bisected toward one bit a step), and the midpoint after that."""
    side = np.zeros(lo.shape, dtype=int)
    probed = np.zeros(lo.shape, dtype=bool)
    for _ in range(steps):
        delta = 4.0 * np.spacing(np.abs(hi) + 1.0)
        open_ = (hi - lo > delta) & (f_lo > 0.0) & (f_hi < 0.0)
        if not np.any(open_):
            break
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
    # The end of the converged bracket where the slope is smaller.
    return np.where(np.abs(f_lo) <= np.abs(f_hi), lo, hi)


__all__ = ["illinois"]
