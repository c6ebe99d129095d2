# SPDX-License-Identifier: GPL-3.0-or-later
"""Rerun the log-quaternion IK experiment: exponential map against Euler angles.

TMPSwiki, "クォータニオン逆運動学" (``../shared/references/001_307a9aa0ea60b2b1.txt``),
section "結果": an arm of 5 unit links along +Z, 100 trials from random joint rotations
(yaw, pitch, roll each uniform in ``[0, π]``), target = −(initial effector), each update
moves the effector by ``Δe = 0.001 · (target − e)/|target − e|`` through the pseudo-inverse
of the Jacobian, and counts updates until the effector is within one step of the target
(at most 10,000). The reference reports the RMS, over the trials, of the count minus the
ideal count: quaternion (expmap) IK 0.678 / 0.854 / 0.656, Euler IK 52.3 / 99.6 / 98.1.

What is the same here: the geometry, the random start poses (``R = Ry(yaw) Rx(pitch)
Rz(roll)`` per joint, roll about the link axis first — the reference's yaw-pitch-roll),
the fixed-length step, the SVD pseudo-inverse, re-reading the parameters from the joint
rotations before every update (``D3DXQuaternionLn`` / ``mat2ypr``), and the analytic
Jacobian columns (:mod:`core.parameterization`, :mod:`core.jacobian_matrix`; the reference
substitutes ``∂R/∂v`` into forward kinematics, the same numbers).

What differs, and is reported both ways:

* The ideal count. The reference uses ``int(d/step) + 1`` with ``d = |target − start|``
  (``2|e₀|``) while counting successful updates from 0; a perfectly straight, exact-length
  run needs ``floor(d/step)`` updates and so scores an RMS of exactly 1 against that
  formula. ``rms_exact`` uses ``floor(d/step)`` (a perfect run scores 0), ``rms_reference``
  the reference's formula.
* DirectX is left-handed, so its rotation by an angle is ours by minus that angle; the
  start-pose distribution is the mirror image, which changes no statistic here.
* Double precision instead of the reference's single precision.

Extra rows: the Euler parameterisation in Blender's default order ``XYZ`` (``R = Rz Ry
Rx``, the order the solvers use) on the same poses; and both parameterisations with the
joint matrices and parameters rounded to float32 before every update, as the reference
stores them, to test whether single precision explains its Euler figures.

Output (``--out``, default ``out/bench``): ``bench_logquat.json``, ``.md``, ``.png``; the
Markdown table and the JSON are also printed.

Usage::

    .venv/bin/python scripts/bench_logquat.py [--out DIR] [--quick] [--seed N]
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: core, reach_ik_tools

from core import Chain
from core import rotations as rot
from core.jacobian_matrix import chain_state, dof_anchors, dof_axes, position_jacobian
from core.jacobian_step import pinv_step
from core.parameterization import YAW_PITCH_ROLL, DofLayout
from reach_ik_tools import bench_report

REFERENCE = {
    "rms_expmap": [0.678, 0.854, 0.656],
    "rms_euler": [52.341, 99.646, 98.148],
    "ms_per_update_expmap": [0.022, 0.020, 0.019],
    "ms_per_update_euler": [0.025, 0.022, 0.024],
}
STEP = 0.001
MAX_UPDATES = 10_000
LINKS = 5
#: Singular values below this fraction of the largest are cut (a pseudo-inverse's usual
#: relative threshold; the reference's GSL-based pseudo-inverse does not state one).
CUTOFF = 1e-9

#: name → (rotation_params, Euler order, single precision storage).
VARIANTS: dict[str, tuple[str, str, bool]] = {
    "expmap": ("expmap", "XYZ", False),
    "euler (reference yaw-pitch-roll)": ("euler", YAW_PITCH_ROLL, False),
    "euler (Blender XYZ)": ("euler", "XYZ", False),
    "expmap, float32 storage": ("expmap", "XYZ", True),
    "euler (reference order), float32 storage": ("euler", YAW_PITCH_ROLL, True),
}


def arm() -> Chain:
    """5 links of unit length along +Z (the reference's ``m_pOffset``), joint frames = world."""
    return Chain(np.tile([0.0, 0.0, 1.0], (LINKS, 1)))


def start_poses(trials: int, seed: int) -> np.ndarray:
    """``(trials, 5, 4)`` joint rotations ``Ry(yaw) Rx(pitch) Rz(roll)``, angles in [0, π]."""
    rng = np.random.default_rng(seed)
    yaw, pitch, roll = (rng.uniform(0.0, math.pi, (trials, LINKS)) for _ in range(3))
    # Blender order "ZXY": Z first, then X, then Y; angles given as (x, y, z).
    return rot.from_euler(np.stack((pitch, yaw, roll), axis=-1), YAW_PITCH_ROLL)


def update(
    chain: Chain, layout: DofLayout, q: np.ndarray, target: np.ndarray, single: bool
) -> tuple[np.ndarray, np.ndarray]:
    """One reference update of a batch: ``Δp = J⁺ · step · (t − e)/|t − e|``.

    With ``single`` the joint matrices and the parameters read from them are rounded to
    float32, as the reference stores them (``D3DXMATRIX``, ``float yaw, pitch, roll``).
    Returns the new rotations and the distance to the target *before* the update.
    """
    if single:
        q = rot.from_matrix(rot.to_matrix(q).astype(np.float32).astype(np.float64))
        q = layout.rotations_of(layout.params_of(q).astype(np.float32).astype(np.float64))
    p = layout.params_of(q)
    state = chain_state(chain, q)
    gap = target - state.effector
    dist = np.linalg.norm(gap, axis=-1)
    de = STEP * gap / np.maximum(dist, 1e-300)[:, None]
    J = position_jacobian(dof_axes(layout, state, p), dof_anchors(layout, state), state.effector)
    dp, _ = pinv_step(J, de, CUTOFF)
    return layout.rotations_of(p + dp), dist


def count_updates(
    chain: Chain, layout: DofLayout, q0: np.ndarray, target: np.ndarray, single: bool
) -> tuple[np.ndarray, int, float]:
    """Updates per trial until within one step (vectorised over trials, capped at 10,000).

    Returns counts ``(trials,)``, the total number of trial-updates and the seconds taken.
    """
    q = q0.copy()
    counts = np.zeros(q.shape[0], dtype=np.int64)
    active = np.arange(q.shape[0])
    total = 0
    start = time.perf_counter()
    while active.size:
        new_q, dist = update(chain, layout, q[active], target[active], single)
        going = (dist >= STEP) & (counts[active] < MAX_UPDATES)
        active = active[going]
        q[active] = new_q[going]
        counts[active] += 1
        total += int(going.sum())
    return counts, total, time.perf_counter() - start


def single_update_ms(
    chain: Chain, layout: DofLayout, q0: np.ndarray, target: np.ndarray, n: int, single: bool
) -> float:
    """Median milliseconds of one update of a single arm (the reference's timing)."""
    q = q0[:1].copy()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        q, _ = update(chain, layout, q, target[:1], single)
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def run(trials: int, seed: int, timing_updates: int) -> dict[str, Any]:
    chain = arm()
    q0 = start_poses(trials, seed)
    e0 = chain_state(chain, q0).effector
    target = -e0
    distance = np.linalg.norm(target - e0, axis=-1)
    ideal_exact = np.floor(distance / STEP)
    ideal_reference = np.floor(distance / STEP) + 1.0
    out: dict[str, Any] = {
        "experiment": {
            "trials": trials,
            "seed": seed,
            "links": LINKS,
            "step": STEP,
            "max_updates": MAX_UPDATES,
            "pinv_cutoff": CUTOFF,
            "mean_distance": float(distance.mean()),
            "mean_ideal_updates": float(ideal_exact.mean()),
        },
        "reference": REFERENCE,
        "variants": {},
    }
    for name, (params, order, single) in VARIANTS.items():
        layout = DofLayout.for_chain(chain, params, order)  # type: ignore[arg-type]
        counts, total, seconds = count_updates(chain, layout, q0, target, single)
        diff = counts - ideal_exact
        out["variants"][name] = {
            "rotation_params": params,
            "euler_order": order if params == "euler" else None,
            "float32_storage": single,
            "rms_exact": float(np.sqrt(np.mean(diff**2))),
            "rms_reference": float(np.sqrt(np.mean((counts - ideal_reference) ** 2))),
            "mean_extra_updates": float(diff.mean()),
            "max_abs_extra_updates": float(np.max(np.abs(diff))),
            "trials_capped": int(np.sum(counts >= MAX_UPDATES)),
            "batched_us_per_trial_update": 1e6 * seconds / max(total, 1),
            "single_ms_per_update": single_update_ms(
                chain, layout, q0, target, timing_updates, single
            ),
            "extra_updates": diff.astype(int).tolist(),
        }
    ex = out["variants"]["expmap"]
    out["bars"] = {
        "expmap_rms_le_1": ex["rms_exact"] <= 1.0,
        "expmap_rms_exact": ex["rms_exact"],
        "expmap_rms_reference_formula": ex["rms_reference"],
        "euler_reference_order_rms_exact": out["variants"]["euler (reference yaw-pitch-roll)"][
            "rms_exact"
        ],
    }
    return out


def markdown(result: dict[str, Any]) -> str:
    exp = result["experiment"]
    ref = result["reference"]
    lines = [
        "# Log-quaternion IK vs Euler IK (TMPSwiki experiment)",
        "",
        f"{exp['trials']} trials (seed {exp['seed']}), 5 unit links along +Z, target = "
        f"−(start effector), step {exp['step']}, ≤ {exp['max_updates']} updates, SVD "
        f"pseudo-inverse. Mean distance {exp['mean_distance']:.3f}, mean ideal count "
        f"{exp['mean_ideal_updates']:.0f} updates.",
        "",
        "| parameterisation | RMS(count − floor(d/step)) | RMS vs reference formula "
        "int(d/step)+1 | mean extra updates | max |extra| | capped | µs per update "
        "(batched, per arm) | ms per update (single arm) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, v in result["variants"].items():
        lines.append(
            f"| {name} | {v['rms_exact']:.3f} | {v['rms_reference']:.3f} | "
            f"{v['mean_extra_updates']:.2f} | {v['max_abs_extra_updates']:.0f} | "
            f"{v['trials_capped']} | {v['batched_us_per_trial_update']:.1f} | "
            f"{v['single_ms_per_update']:.3f} |"
        )
    lines += [
        "",
        "Reference (three runs of 100 trials, C++ 2008, single precision): quaternion IK RMS "
        f"{', '.join(map(str, ref['rms_expmap']))}; Euler IK RMS "
        f"{', '.join(map(str, ref['rms_euler']))}; ms per update "
        f"{', '.join(map(str, ref['ms_per_update_expmap']))} (quaternion), "
        f"{', '.join(map(str, ref['ms_per_update_euler']))} (Euler). Its RMS uses the "
        "reference formula (second column); a perfect run scores 1.0 there and 0 in the "
        "first column.",
        "",
    ]
    return "\n".join(lines)


def figure(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    names = list(result["variants"])
    for k, name in enumerate(names):
        extra = np.asarray(result["variants"][name]["extra_updates"], dtype=float)
        jitter = np.random.default_rng(k).uniform(-0.15, 0.15, extra.size)
        ax.plot(k + jitter, extra, "o", ms=3, alpha=0.6)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xticks(range(len(names)), [n.replace(" (", "\n(") for n in names])
    ax.set_ylabel("updates − ideal (symlog)")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_title("Updates to reach −(start effector) in steps of 0.001, per trial")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = bench_report.arguments(__doc__, seed=2008, quick="20 trials, fewer timings").parse_args(
        argv
    )
    result = run(20, args.seed, 200) if args.quick else run(100, args.seed, 2000)
    bench_report.publish(
        args.out, "bench_logquat", result, markdown(result), lambda path: figure(result, path)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
