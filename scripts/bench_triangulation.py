# SPDX-License-Identifier: GPL-3.0-or-later
"""Rerun the triangulation paper's experiment: triangulation against CCD on chains U and C.

R. Müller-Cajar and R. Mukundan, "Triangulation: A New Algorithm for Inverse Kinematics",
IVCNZ 2007, sections 4–5 (``../shared/references/000_c08bf4be023a5d3e.txt``):

* chain U: links 9, 9, 9, 9, 4 (length 40), free joints;
* chain C: links 18, 18, 4, elbow bend ≤ 126°, wrist bend ≤ 90°;
* 10,000 seeded random targets, uniform in a box of side 60 centred on the root; a target
  is reached within 0.5 units; CCD stops after 99 iterations; every solve starts from the
  straight rest pose (both chains point along +Z).

Reachability is decided analytically, independently of either method: a target is out of
range beyond the reach (40); chain C also cannot come closer to its root than ``r_C``, the
smallest root–effector distance over its allowed poses (found here by a dense grid over the
elbow and wrist bends in one plane, which is where the closest approach lies: the hand
turns as far toward the root as the wrist allows). Percentages of reached targets and the
means are over the reachable targets.

Output (``--out``, default ``out/bench``): ``bench_triangulation.json``, ``.md`` and ``.png``
(CCD and triangulation poses side by side for the same targets, like the paper's figures 2
and 7); the Markdown table and the JSON are also printed.

Usage::

    .venv/bin/python scripts/bench_triangulation.py [--out DIR] [--quick] [--seed N]
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: core, reach_ik_tools

from core import Chain, IKResult, SolveOptions, solve
from core.problem import Problem
from core.triangulation import solve_triangulation
from reach_ik_tools import bench_report
from reach_ik_tools.paper_chains import (
    BOX,
    CCD_OPTIONS,
    MAX_ITERATIONS,
    PAPER_TRIANGULATION,
    TOLERANCE,
    chain_c_core_radius,
    chains,
)

#: The paper's section 5 figures (percentages, iterations, degrees).
PAPER: dict[str, Any] = {
    "out_of_range_pct": 8.27,
    "c_core_pct": 2.23,
    "U": {
        "ccd": {
            "reached_pct": 100.0,
            "within_20_pct": 92.12,
            "mean_iterations": 8.351,
            "mean_cost_deg": 315.5,
        },
        "triangulation": {"reached_pct": 100.0, "mean_iterations": 1.0, "mean_cost_deg": 159.9},
    },
    "C": {
        "ccd": {
            "reached_pct": 100.0,
            "within_20_pct": 92.97,
            "mean_iterations": 8.727,
            "mean_cost_deg": 173.9,
        },
        "triangulation": {"reached_pct": 100.0, "mean_iterations": 1.0, "mean_cost_deg": 141.5},
    },
}

#: Issue 12's bar: one ``core.solve`` of chain U's 10,000 targets in at most this (median).
BATCH_BAR_MS = 5.0
VARIANTS: list[dict[str, Any]] = [
    {"delta_b_deg": d, "bend_plane": p} for d in (180.0, 90.0) for p in ("minimal", "rest")
]


def summarise(res: IKResult, reachable: np.ndarray) -> dict[str, float]:
    """Reach rate, iterations, cost (degrees) and errors over the reachable targets."""
    reached = res.converged[reachable]
    iterations = res.iterations[reachable]
    cost = np.degrees(res.cost())
    return {
        "reached_pct": 100.0 * float(np.mean(reached)),
        "within_20_pct": 100.0 * float(np.mean(reached & (iterations <= 20))),
        "mean_iterations": float(np.mean(iterations)),
        "mean_cost_deg": float(np.mean(cost[reachable])),
        "mean_cost_all_deg": float(np.mean(cost)),
        "max_error_reachable": float(np.max(res.error[reachable])),
    }


def median_time(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_medians(fns: dict[str, Any], repeats: int) -> dict[str, float]:
    """Median seconds of each of ``fns``, called in turn ``repeats`` times after one warm-up
    call each (so a busy machine slows them alike)."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def time_single(chain: Chain, targets: np.ndarray, count: int, **options: Any) -> dict[str, float]:
    """Median seconds of one ``solve`` call (and of the method alone for triangulation)."""
    picks = targets[:count]
    for t in picks[: min(20, count)]:
        solve(chain, t, **options)
    times = []
    for t in picks:
        start = time.perf_counter()
        solve(chain, t, **options)
        times.append(time.perf_counter() - start)
    out = {"solve_us": 1e6 * statistics.median(times)}
    if options.get("method", "triangulation") == "triangulation":
        opts = SolveOptions().replace(
            **{k: v for k, v in options.items() if k != "method"}, tolerance=TOLERANCE
        )
        start_pose = np.broadcast_to(np.array([1.0, 0.0, 0.0, 0.0]), (1, chain.n_joints, 4))
        problems = [
            Problem(chain, t[None, :], None, None, start_pose, TOLERANCE, opts) for t in picks
        ]
        method_times = []
        for problem in problems:
            start = time.perf_counter()
            solve_triangulation(problem)
            method_times.append(time.perf_counter() - start)
        out["method_us"] = 1e6 * statistics.median(method_times)
    return out


def run(n_targets: int, seed: int, single_repeats: int, batch_repeats: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    targets = rng.uniform(-BOX / 2, BOX / 2, size=(n_targets, 3))
    radius = np.linalg.norm(targets, axis=1)
    chain_map = chains()
    reach = 40.0
    core_c = chain_c_core_radius()
    reachable = {"U": radius <= reach, "C": (radius <= reach) & (radius >= core_c)}
    out: dict[str, Any] = {
        "experiment": {
            "targets": n_targets,
            "seed": seed,
            "box_side": BOX,
            "tolerance": TOLERANCE,
            "ccd_max_iterations": MAX_ITERATIONS,
            "ccd_options": CCD_OPTIONS,
            "paper_triangulation_options": PAPER_TRIANGULATION,
            "chain_c_core_radius": core_c,
        },
        "paper": PAPER,
        "out_of_range_pct": 100.0 * float(np.mean(radius > reach)),
        "c_core_pct": 100.0 * float(np.mean(radius < core_c)),
        "chains": {},
    }
    for name, chain in chain_map.items():
        mask = reachable[name]
        ccd = solve(chain, targets, method="ccd", **CCD_OPTIONS)
        tri = solve(chain, targets, tolerance=TOLERANCE, **PAPER_TRIANGULATION)
        variants = []
        for variant in VARIANTS:
            res = solve(chain, targets, tolerance=TOLERANCE, **variant)
            variants.append({**variant, **summarise(res, mask)})
        either = ccd.converged | tri.converged
        batch = interleaved_medians(
            {
                "default": lambda c=chain: solve(c, targets),
                "paper": lambda c=chain: solve(c, targets, **PAPER_TRIANGULATION),
            },
            batch_repeats,
        )
        timing = {
            "triangulation_single": time_single(chain, targets, single_repeats),
            "triangulation_single_paper": time_single(
                chain, targets, single_repeats, **PAPER_TRIANGULATION
            ),
            "ccd_single": time_single(chain, targets, single_repeats, method="ccd", **CCD_OPTIONS),
            "triangulation_batch_ms": 1e3 * batch["default"],
            "triangulation_batch_paper_ms": 1e3 * batch["paper"],
            "ccd_batch_ms": 1e3
            * median_time(
                lambda c=chain: solve(c, targets, method="ccd", **CCD_OPTIONS),
                max(1, batch_repeats // 3),
            ),
        }
        out["chains"][name] = {
            "reachable": int(mask.sum()),
            "reached_by_either": int(either.sum()),
            "reached_by_either_outside_reach_set": int((either & ~mask).sum()),
            "ccd": summarise(ccd, mask),
            "triangulation": summarise(tri, mask),
            "variants": variants,
            "timing": timing,
        }
    out["experiment"]["load_average_after"] = list(os.getloadavg())
    out["experiment"]["batch_repeats"] = batch_repeats
    u_tri = out["chains"]["U"]["triangulation"]
    out["bars"] = {
        "triangulation_reaches_all_reachable": all(
            out["chains"][k]["triangulation"]["reached_pct"] == 100.0 for k in ("U", "C")
        ),
        "triangulation_max_error_over_length": max(
            out["chains"][k]["triangulation"]["max_error_reachable"] / reach for k in ("U", "C")
        ),
        "best_mean_cost_U_deg": min(v["mean_cost_deg"] for v in out["chains"]["U"]["variants"]),
        "paper_mean_cost_U_deg": PAPER["U"]["triangulation"]["mean_cost_deg"],
        "paper_algorithm_mean_cost_U_deg": u_tri["mean_cost_deg"],
        "batch_U_default_ms": out["chains"]["U"]["timing"]["triangulation_batch_ms"],
        "batch_U_paper_ms": out["chains"]["U"]["timing"]["triangulation_batch_paper_ms"],
        "batch_U_bar_ms": BATCH_BAR_MS if n_targets == 10_000 else None,
        "batch_U_meets_bar": (
            max(
                out["chains"]["U"]["timing"]["triangulation_batch_ms"],
                out["chains"]["U"]["timing"]["triangulation_batch_paper_ms"],
            )
            <= BATCH_BAR_MS
            if n_targets == 10_000
            else None
        ),
        "single_U_default_solve_us": out["chains"]["U"]["timing"]["triangulation_single"][
            "solve_us"
        ],
    }
    return out


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    paper = result["paper"]
    ch = result["chains"]
    lines = [
        "# Triangulation vs CCD — the paper's experiment (Müller-Cajar & Mukundan 2007, §4–5)",
        "",
        f"{result['experiment']['targets']} targets (seed {result['experiment']['seed']}) "
        f"in a box of side 60; reached = within {TOLERANCE}; CCD ≤ {MAX_ITERATIONS} "
        "iterations, plain (no sweep); straight start pose. Percentages and means over the "
        "reachable targets; cost C = Σθ (eq. 3) in degrees.",
        "",
        "| quantity | paper U | ours U | paper C | ours C |",
        "|---|---:|---:|---:|---:|",
        f"| targets out of range (%) | {paper['out_of_range_pct']} | "
        f"{_fmt(result['out_of_range_pct'])} | {paper['out_of_range_pct']} | "
        f"{_fmt(result['out_of_range_pct'])} |",
        f"| further unreachable by C (%) | – | – | {paper['c_core_pct']} | "
        f"{_fmt(result['c_core_pct'])} (r < {result['experiment']['chain_c_core_radius']:.2f}) |",
    ]
    rows = [
        ("CCD reached (%)", "ccd", "reached_pct", 2),
        ("CCD reached within 20 iterations (%)", "ccd", "within_20_pct", 2),
        ("CCD mean iterations", "ccd", "mean_iterations", 3),
        ("CCD mean cost (°)", "ccd", "mean_cost_deg", 1),
        ("triangulation reached (%)", "triangulation", "reached_pct", 2),
        ("triangulation iterations", "triangulation", "mean_iterations", 0),
        ("triangulation mean cost (°)", "triangulation", "mean_cost_deg", 1),
    ]
    for label, method, key, digits in rows:
        cells = []
        for name in ("U", "C"):
            cells.append(_fmt(paper[name][method].get(key), digits))
            cells.append(_fmt(ch[name][method][key], digits))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append(
        "| triangulation max error on reachable targets | – | "
        f"{ch['U']['triangulation']['max_error_reachable']:.1e} | – | "
        f"{ch['C']['triangulation']['max_error_reachable']:.1e} |"
    )
    lines += [
        "",
        "Triangulation variants (δb when no triangle forms; bend plane: `minimal` = the "
        "paper's shortest rotations, `rest` = Reach IK's default stable bend plane):",
        "",
        "| chain | δb | bend plane | reached (%) | mean cost (°) | max error |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for name in ("U", "C"):
        for v in ch[name]["variants"]:
            lines.append(
                f"| {name} | {v['delta_b_deg']:.0f}° | {v['bend_plane']} | "
                f"{v['reached_pct']:.2f} | {v['mean_cost_deg']:.1f} | "
                f"{v['max_error_reachable']:.1e} |"
            )
    lines += [
        "",
        "Time (medians on this machine, load average "
        f"{result['experiment']['load_average_after'][0]:.1f} at the end of the run; "
        "single = one `core.solve` call, `method` = the triangulation function alone; "
        "batch = one call for all targets, median of "
        f"{result['experiment']['batch_repeats']} calls alternating default and paper "
        "options; default = δb 180°, `rest` bend plane; paper = δb 180°, `minimal`):",
        "",
        "| chain | triangulation single, default (µs) | … method only (µs) | "
        "… paper options (µs) | CCD single (µs) | triangulation batch, default (ms) | "
        "… paper options (ms) | CCD batch (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ("U", "C"):
        t = ch[name]["timing"]
        lines.append(
            f"| {name} | {t['triangulation_single']['solve_us']:.1f} | "
            f"{t['triangulation_single']['method_us']:.1f} | "
            f"{t['triangulation_single_paper']['solve_us']:.1f} | "
            f"{t['ccd_single']['solve_us']:.1f} | {t['triangulation_batch_ms']:.2f} | "
            f"{t['triangulation_batch_paper_ms']:.2f} | {t['ccd_batch_ms']:.1f} |"
        )
    bars = result["bars"]
    if bars["batch_U_bar_ms"] is not None:
        lines += [
            "",
            f"Batch bar (issue 12): chain U's {result['experiment']['targets']} targets in ≤ "
            f"{bars['batch_U_bar_ms']:g} ms — default {bars['batch_U_default_ms']:.2f} ms, "
            f"paper options {bars['batch_U_paper_ms']:.2f} ms: "
            f"{'met' if bars['batch_U_meets_bar'] else 'not met'}.",
        ]
    lines.append("")
    return "\n".join(lines)


def figure(path: Path) -> None:
    """CCD and triangulation poses for the same targets, like the paper's figures 2 and 7.

    Targets lie in the YZ plane; from the straight start along +Z both methods keep the
    chain in that plane (every rotation axis is along X), so the Y–Z view is exact.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chain_map = chains()
    cases = {
        "U": np.array([[0.0, 6.0, 4.0], [0.0, 24.0, 12.0], [0.0, 16.0, -22.0]]),
        "C": np.array([[0.0, 10.0, -9.5], [0.0, 24.0, 12.0], [0.0, 16.0, -22.0]]),
    }
    fig, axes = plt.subplots(4, 3, figsize=(11, 14))
    row = 0
    for name, targets in cases.items():
        chain = chain_map[name]
        results = {
            "CCD": solve(chain, targets, method="ccd", **CCD_OPTIONS),
            "triangulation": solve(chain, targets, tolerance=TOLERANCE, **PAPER_TRIANGULATION),
        }
        for label, res in results.items():
            for col in range(3):
                ax = axes[row, col]
                pos = res.positions[col]
                ax.plot(pos[:, 1], pos[:, 2], "-o", color="tab:blue", lw=2, ms=4)
                ax.plot([0, 0], [0, chain.reach], ":", color="grey", lw=1)
                ax.plot(*targets[col, 1:], "x", color="tab:red", ms=10, mew=2)
                ax.add_patch(
                    plt.Circle(tuple(targets[col, 1:]), TOLERANCE, fill=False, color="tab:red")
                )
                ax.set_title(
                    f"chain {name}, {label}: {int(res.iterations[col])} it., "
                    f"cost {math.degrees(float(res.cost()[col])):.0f}°",
                    fontsize=9,
                )
                ax.set_aspect("equal")
                ax.set_xlim(-25, 42)
                ax.set_ylim(-30, 42)
                ax.grid(alpha=0.3)
            row += 1
    for ax in axes[-1]:
        ax.set_xlabel("Y")
    for ax in axes[:, 0]:
        ax.set_ylabel("Z")
    fig.suptitle(
        "CCD (rows 1, 3) vs triangulation (rows 2, 4) for the same targets (×); dotted: start pose",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = bench_report.arguments(
        __doc__, seed=2007, quick="1,000 targets, fewer timings"
    ).parse_args(argv)
    if args.quick:
        result = run(1000, args.seed, single_repeats=50, batch_repeats=5)
    else:
        result = run(10_000, args.seed, single_repeats=300, batch_repeats=21)
    bench_report.publish(
        args.out, "bench_triangulation", result, markdown(result), lambda path: figure(path)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
