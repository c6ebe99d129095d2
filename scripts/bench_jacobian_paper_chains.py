# SPDX-License-Identifier: GPL-3.0-or-later
"""All IK methods on the triangulation paper's chains U and C, in one table.

The experiment of ``scripts/bench_triangulation.py`` (Müller-Cajar & Mukundan 2007, §4–5:
chain U = links 9, 9, 9, 9, 4 free; chain C = 18, 18, 4 with bend limits 126° and 90°;
the same 10,000 seeded targets in a box of side 60 centred on the root; reached = within
0.5; the same reachability sets) run with every method of :func:`core.solve`:
triangulation and CCD with the paper's options, and the Jacobian methods (transpose, SVD
pseudo-inverse, damped least squares with expmap and with Euler parameters) with the same
tolerance, the paper's CCD cap of 99 updates, the straight start pose with a fixed step
(the references' protocol: ``jacobian_start="initial", adaptive_step=False``) and no bend-plane
turn (``bend_plane="minimal"``), otherwise default options; three more rows show the
adaptive step from the straight start and the default seeded start.

Columns, over the reachable targets: reached (%), mean and median updates, mean error of
the reached ones, mean cost ``C = Σθ`` (``IKResult.cost()``, degrees), and time: one
batched call for all 10,000 targets (median of repeats) and one call per target (median).

A second table times batched DLS on chain U (issue 12's bar: 10,000 targets in ≤ 0.3 s)
with default options (seeded start, adaptive step), the adaptive step from the straight
start, the references' protocol, and that protocol with ``step=1, max_step_deg=30``.

Output (``--out``, default ``out/bench``): ``bench_jacobian_paper_chains.json``, ``.md``,
``.png``; the Markdown tables and the JSON are also printed.

Usage::

    .venv/bin/python scripts/bench_jacobian_paper_chains.py [--out DIR] [--quick] [--seed N]
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

from core import Chain, IKResult, solve
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

#: The references' protocol: start from the straight rest pose, fixed β.
PAPER_PROTOCOL: dict[str, Any] = {"jacobian_start": "initial", "adaptive_step": False}
JACOBIAN_OPTIONS: dict[str, Any] = {
    "tolerance": TOLERANCE,
    "max_iterations": MAX_ITERATIONS,
    "bend_plane": "minimal",
} | PAPER_PROTOCOL
ROWS: dict[str, dict[str, Any]] = {
    "triangulation (paper)": {"method": "triangulation", "tolerance": TOLERANCE}
    | PAPER_TRIANGULATION,
    "ccd (paper)": {"method": "ccd"} | CCD_OPTIONS,
    "jacobian_transpose": {"method": "jacobian_transpose"} | JACOBIAN_OPTIONS,
    "jacobian_pinv": {"method": "jacobian_pinv"} | JACOBIAN_OPTIONS,
    "jacobian_dls": {"method": "jacobian_dls"} | JACOBIAN_OPTIONS,
    "jacobian_dls, euler": {"method": "jacobian_dls", "rotation_params": "euler"}
    | JACOBIAN_OPTIONS,
    "jacobian_pinv, given start, adaptive step": {
        "method": "jacobian_pinv",
        "jacobian_start": "initial",
    }
    | {k: v for k, v in JACOBIAN_OPTIONS.items() if k not in PAPER_PROTOCOL},
    "jacobian_dls, given start, adaptive step": {
        "method": "jacobian_dls",
        "jacobian_start": "initial",
    }
    | {k: v for k, v in JACOBIAN_OPTIONS.items() if k not in PAPER_PROTOCOL},
    "jacobian_dls, defaults (seeded)": {"method": "jacobian_dls"}
    | {k: v for k, v in JACOBIAN_OPTIONS.items() if k not in PAPER_PROTOCOL},
}
DLS_SPEED: dict[str, dict[str, Any]] = {
    "defaults (seeded start, adaptive step)": {"method": "jacobian_dls", "tolerance": TOLERANCE},
    "given start, adaptive step": {
        "method": "jacobian_dls",
        "tolerance": TOLERANCE,
        "jacobian_start": "initial",
    },
    "paper protocol (given start, β = 0.5, 10° clamp)": {
        "method": "jacobian_dls",
        "tolerance": TOLERANCE,
    }
    | PAPER_PROTOCOL,
    "step=1, max_step_deg=30": {
        "method": "jacobian_dls",
        "tolerance": TOLERANCE,
        "step": 1.0,
        "max_step_deg": 30.0,
    }
    | PAPER_PROTOCOL,
}


def median_seconds(fn: Any, repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def single_us(chain: Chain, targets: np.ndarray, options: dict[str, Any]) -> float:
    """Median microseconds of one ``core.solve`` call with one target."""
    for t in targets[:5]:
        solve(chain, t, **options)
    times = []
    for t in targets:
        start = time.perf_counter()
        solve(chain, t, **options)
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


def summarise(res: IKResult, reachable: np.ndarray) -> dict[str, float]:
    reached = res.converged[reachable]
    it = res.iterations[reachable]
    err = res.error[reachable]
    return {
        "reached_pct": 100.0 * float(reached.mean()),
        "mean_iterations": float(it.mean()),
        "median_iterations": float(np.median(it)),
        "mean_error_reached": float(err[reached].mean()) if reached.any() else math.nan,
        "max_error_reachable": float(err.max()),
        "mean_cost_deg": float(np.degrees(res.cost()[reachable]).mean()),
    }


def run(n: int, seed: int, repeats: int, singles: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    targets = rng.uniform(-BOX / 2, BOX / 2, size=(n, 3))
    radius = np.linalg.norm(targets, axis=1)
    core_c = chain_c_core_radius()
    chain_map = chains()
    reachable = {"U": radius <= 40.0, "C": (radius <= 40.0) & (radius >= core_c)}
    out: dict[str, Any] = {
        "experiment": {
            "targets": n,
            "seed": seed,
            "box_side": BOX,
            "tolerance": TOLERANCE,
            "max_iterations": MAX_ITERATIONS,
            "chain_c_core_radius": core_c,
            "rows": ROWS,
        },
        "chains": {},
        "dls_speed_U": {},
    }
    for name, chain in chain_map.items():
        rows: dict[str, Any] = {}
        for label, options in ROWS.items():
            try:
                seconds, res = median_seconds(
                    lambda c=chain, o=options: solve(c, targets, **o), repeats
                )
            except NotImplementedError:
                rows[label] = {"available": False}
                continue
            rows[label] = {
                "available": True,
                **summarise(res, reachable[name]),
                "batch_s": seconds,
                "single_us": single_us(chain, targets[:singles], options),
            }
        out["chains"][name] = {"reachable": int(reachable[name].sum()), "rows": rows}
    chain_u = chain_map["U"]
    for label, options in DLS_SPEED.items():
        seconds, res = median_seconds(lambda o=options: solve(chain_u, targets, **o), repeats)
        cpu_times = []
        for _ in range(repeats):
            start = time.process_time()
            solve(chain_u, targets, **options)
            cpu_times.append(time.process_time() - start)
        out["dls_speed_U"][label] = {
            **summarise(res, reachable["U"]),
            "batch_s_median": seconds,
            "batch_cpu_s_median": statistics.median(cpu_times),
            "single_us": single_us(chain_u, targets[:singles], options),
        }
    out["bars"] = {
        "dls_U_batch_le_0.3s": {
            k: v["batch_s_median"] <= 0.3 for k, v in out["dls_speed_U"].items()
        },
        "dls_U_batch_s": {k: v["batch_s_median"] for k, v in out["dls_speed_U"].items()},
    }
    return out


def markdown(result: dict[str, Any]) -> str:
    exp = result["experiment"]
    lines = [
        "# Every method on the triangulation paper's chains U and C",
        "",
        f"{exp['targets']} targets (seed {exp['seed']}) in a box of side {exp['box_side']:g}; "
        f"reached = within {exp['tolerance']}; iterative methods ≤ {exp['max_iterations']} "
        "updates from the straight start pose; statistics over the reachable targets; cost "
        "C = Σθ in degrees; batch = one call for all targets (median), single = one call per "
        "target (median).",
        "",
    ]
    for name, ch in result["chains"].items():
        lines += [
            f"## chain {name} ({ch['reachable']} reachable targets)",
            "",
            "| method | reached (%) | mean / median updates | mean error (reached) | "
            "mean cost (°) | batch (s) | single (µs) |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for label, r in ch["rows"].items():
            if not r["available"]:
                lines.append(f"| {label} | not implemented yet | | | | | |")
                continue
            lines.append(
                f"| {label} | {r['reached_pct']:.2f} | {r['mean_iterations']:.2f} / "
                f"{r['median_iterations']:.0f} | {r['mean_error_reached']:.3f} | "
                f"{r['mean_cost_deg']:.1f} | {r['batch_s']:.3f} | {r['single_us']:.0f} |"
            )
        lines.append("")
    lines += [
        "## Batched DLS on chain U (bar: 10,000 targets ≤ 0.3 s)",
        "",
        "| options | reached (%) | mean updates | batch wall (s, median) | batch CPU (s, "
        "median) | single (µs) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, r in result["dls_speed_U"].items():
        lines.append(
            f"| {label} | {r['reached_pct']:.2f} | {r['mean_iterations']:.2f} | "
            f"{r['batch_s_median']:.3f} | {r['batch_cpu_s_median']:.3f} | {r['single_us']:.0f} |"
        )
    lines.append("")
    return "\n".join(lines)


def figure(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [
        ("reached_pct", "reached (%)"),
        ("mean_iterations", "mean updates"),
        ("mean_cost_deg", "mean cost (°)"),
        ("batch_s", "batch time (s)"),
    ]
    fig, axes = plt.subplots(1, len(metrics), figsize=(16, 4.5))
    names = list(result["chains"])
    labels = list(ROWS)
    width = 0.8 / len(names)
    for ax, (key, title) in zip(axes, metrics, strict=True):
        for k, name in enumerate(names):
            rows = result["chains"][name]["rows"]
            values = [
                rows[label].get(key, np.nan) if rows[label]["available"] else np.nan
                for label in labels
            ]
            ax.bar(np.arange(len(labels)) + k * width, values, width, label=f"chain {name}")
        ax.set_xticks(np.arange(len(labels)) + width / 2, labels, rotation=40, ha="right")
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = bench_report.arguments(
        __doc__, seed=2007, quick="1,000 targets, fewer timings"
    ).parse_args(argv)
    result = run(1000, args.seed, 2, 20) if args.quick else run(10000, args.seed, 5, 200)
    bench_report.publish(
        args.out,
        "bench_jacobian_paper_chains",
        result,
        markdown(result),
        lambda path: figure(result, path),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
