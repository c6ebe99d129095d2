# SPDX-License-Identifier: GPL-3.0-or-later
"""The triangulation paper's test chains and protocol (Müller-Cajar & Mukundan 2007, §4–5).

Chain U: links 9, 9, 9, 9, 4, free joints; chain C: links 18, 18, 4 with bend limits 126°
and 90°. Targets lie in a box of side :data:`BOX` centred on the root; a target is reached
within :data:`TOLERANCE`; CCD is capped at :data:`MAX_ITERATIONS` updates. Shared by
``scripts/bench_triangulation.py`` and ``scripts/bench_jacobian_paper_chains.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from core import Chain

TOLERANCE = 0.5
MAX_ITERATIONS = 99
BOX = 60.0
CCD_OPTIONS: dict[str, Any] = {
    "tolerance": TOLERANCE,
    "max_iterations": MAX_ITERATIONS,
    "sweep_steps": 0,  # the paper's plain CCD, no coarse sweep
    "bend_plane": "minimal",  # the paper's shortest rotations, no bend-plane turn
    "ccd_start": "initial",  # the paper's protocol: every solve from the straight pose
}
#: The paper's triangulation: δb = 180° and each joint's shortest rotation.
PAPER_TRIANGULATION: dict[str, Any] = {"delta_b_deg": 180.0, "bend_plane": "minimal"}


def chains() -> dict[str, Chain]:
    return {
        "U": Chain.from_lengths([9, 9, 9, 9, 4]),
        "C": Chain.from_lengths([18, 18, 4], bend_limits_deg=[None, 126, 90]),
    }


def chain_c_core_radius(samples: int = 2001) -> float:
    """Smallest root–effector distance of chain C over elbow ≤ 126°, wrist ≤ 90° (grid).

    Planar: elbow bend ``e ∈ [0, 126°]``, wrist bend ``w ∈ [−90°, 90°]`` relative to the
    forearm; refined once on a finer grid around the best cell.
    """
    e_max, w_max = math.radians(126.0), math.radians(90.0)

    def closest(e: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
        E, W = np.meshgrid(e, w, indexing="ij")
        eff = 18.0 + 18.0 * np.exp(1j * E) + 4.0 * np.exp(1j * (E + W))
        k = int(np.argmin(np.abs(eff)))
        i, j = np.unravel_index(k, E.shape)
        return float(np.abs(eff).flat[k]), float(e[i]), float(w[j])

    r, e0, w0 = closest(np.linspace(0, e_max, samples), np.linspace(-w_max, w_max, samples))
    step_e, step_w = e_max / (samples - 1), 2 * w_max / (samples - 1)
    fine_e = np.clip(np.linspace(e0 - step_e, e0 + step_e, samples), 0, e_max)
    fine_w = np.clip(np.linspace(w0 - step_w, w0 + step_w, samples), -w_max, w_max)
    return min(r, closest(fine_e, fine_w)[0])
