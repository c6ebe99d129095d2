# SPDX-License-Identifier: GPL-3.0-or-later
"""Live-solving benchmark: cost per frame against Blender's own IK, and smoothness.

Run with the ``bpy`` module (``make bench``)::

    .venv/bin/python scripts/bench_live.py [--zip dist/reach_ik-<version>.zip] [--out out/bench]

It installs the extension zip (built with ``make extension`` when not given) into a
temporary Blender user folder, as a user's *Install from Disk* does, then measures:

1. **Cost per frame.** Scenes, each with the Rigify human metarig and animated target
   empties for both hands and feet (the same 1000-frame paths): in one the four limbs are
   Reach IK chains (triangulation, added with the *Add Reach IK* operator), in two more
   they are Reach IK chains solved by CCD and by Jacobian DLS (bar: a frame within 1.2×
   the triangulation scene's), in another they have Blender's IK constraints (chain
   length 2, same targets). Every scene plays all frames once first (Reach IK then has
   every frame stored: what is timed is steady-state playback). ``scene.frame_set`` is
   timed frame by frame, the scenes interleaved frame by frame in one run (the order
   rotating), so the load of a shared machine hits them alike. Reported: median ms per
   frame for each, their ratio (bar: Reach IK ≤ 3× Blender's IK), the same for an identical
   scene without any IK (the cost of the rest of the frame change), and for one without IK
   whose frame-change handler only writes the eight limb rotations (the cost of showing a
   pose by writing pose bones from a handler: Blender evaluates the armature again,
   copying it first — the mechanism Reach IK no longer uses). Then the
   Reach IK scene alone once more, after a new generation (every frame solved again, the
   same solutions, nothing written), with timers around the live handler and the core's
   solve calls, for the breakdown of its frame.
2. **Smoothness.** Each limb's target follows a figure-eight (lemniscate of Gerono, 240
   frames, well inside reach) in front of the limb; for every available solver: the largest
   turn of any joint between frames and the largest change of each limb's bend-plane
   normal between frames (bars: ≤ 5° both).
3. **Scene size.** The metarig with its four limb chains (triangulation), every frame
   stored, with 0, 1000 and 5000 unrelated empties added: the live handler's Python per
   frame (what Reach IK itself spends looking at the scene) and ``frame_set`` whole.
4. **Production rigs** (:mod:`reach_ik_tools.live_rigs`): the Rigify-generated human with a
   skinned, subdivided body mesh, converted with *Convert IK*, and a 4000-bone armature
   with 40 two-bone chains, each against the same rig with Blender's IK, interleaved:
   the first pass over new frames, steady-state playback (bar: Reach IK ≤ 1.2× Blender's
   IK) and a pass after every target key was moved. ``--rigs-only`` runs only these.

Prints a Markdown table and JSON; writes ``live.json`` and ``live.md`` to ``--out``. The
scenes and measurements are in :mod:`reach_ik_tools.live_scenes` (the smoothness check is
also used by ``tests/blender/test_smoothness.py``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: reach_ik_tools

from reach_ik_tools import ROOT, live_rigs
from reach_ik_tools.blender_session import blender_module
from reach_ik_tools.extension_install import EXTENSION, default_zip, install_extension
from reach_ik_tools.live_scenes import (
    COST_BAR,
    ITERATIVE,
    ITERATIVE_BAR,
    SMOOTH_BAR_DEG,
    measure_cost,
    scene_size,
    smoothness,
)


def markdown(report: dict[str, Any]) -> str:
    cost = report["cost"]
    med = cost["median_ms_per_frame"]
    parts = cost["reach_ik_breakdown_ms"]
    lines = [
        f"### Live cost per frame (metarig, 4 limb chains, {cost['frames']} frames × "
        f"{cost['rounds']} rounds, `frame_set`)",
        "",
        "| scene | median ms / frame |",
        "|---|---|",
        f"| Reach IK (triangulation, live handler) | {med['reach_ik']:.3f} |",
        *(
            f"| Reach IK ({solver}, live handler) | {med[kind]:.3f} "
            f"({cost['ratio_vs_triangulation'][kind]:.2f}× triangulation) |"
            for kind, solver in ITERATIVE.items()
        ),
        f"| Blender IK constraints | {med['blender_ik']:.3f} |",
        f"| no IK (same rig and animated targets) | {med['no_ik']:.3f} |",
        f"| no IK, a handler only writing the 8 limb rotations | {med['write_only']:.3f} |",
        "",
        "Reach IK frame, timed again alone with timers around the handler (median ms): "
        f"`frame_set` {parts['frame_set']:.3f}, of which the live handler's Python "
        f"{parts['handler']:.3f}, of which the core's solve calls (4 chains) "
        f"{parts['core_solve']:.3f}.",
        "",
        f"Ratio Reach IK / Blender IK: **{cost['ratio_reach_vs_blender_ik']:.2f}×** "
        f"(ratio of medians; median of the per-frame ratios "
        f"{cost['median_paired_ratio']:.2f}×; bar ≤ {COST_BAR:g}×). Iterative solvers: bar "
        f"≤ {ITERATIVE_BAR:g}× the triangulation scene's frame.",
        "",
        "### Smoothness (figure-eight targets, 240 frames, 4 limbs)",
        "",
        "| solver | largest joint turn / frame | largest bend-plane change / frame |"
        " largest effector error |",
        "|---|---|---|---|",
    ]
    for solver, s in report["smoothness"].items():
        lines.append(
            f"| {solver} | {s['max_joint_deg']:.2f}° | {s['max_bend_plane_deg']:.2f}° "
            f"| {s['max_error_m'] * 1e3:.3g} mm |"
        )
    lines += ["", f"Bars: ≤ {SMOOTH_BAR_DEG:g}° per frame for both."]
    lines += [
        "",
        "### Scene size (the metarig's 4 chains, stored frames, more unrelated empties)",
        "",
        "| objects added | live handler ms / frame | `frame_set` ms / frame |",
        "|---|---|---|",
        *(
            f"| {row['extra_objects']} | {row['handler_ms']:.3f} | {row['frame_set_ms']:.3f} |"
            for row in report["scene_size"]
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zip", type=Path, help="extension zip (default: make extension)")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench")
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rig-frames", type=int, default=120, help="production rigs' frames")
    parser.add_argument("--rig-rounds", type=int, default=3, help="production rigs' rounds")
    parser.add_argument(
        "--scene-frames", type=int, default=120, help="frames of the scene-size part"
    )
    parser.add_argument(
        "--rigs-only",
        action="store_true",
        help="only the production rigs (reach_ik_tools/live_rigs.py)",
    )
    args = parser.parse_args(argv)
    zip_path = args.zip or default_zip()
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="reach-ik-bench-"))
    install_extension(zip_path)
    chain_spec = importlib.import_module(f"{EXTENSION}.ik_addon.chain_spec")
    report: dict[str, Any] = {
        "blender": blender_module().app.version_string,
        "load": os.getloadavg(),
    }
    if not args.rigs_only:
        report["cost"] = measure_cost(args.frames, args.rounds)
        report["smoothness"] = {m: smoothness(m) for m in chain_spec.available_methods()}
        report["scene_size"] = scene_size(args.scene_frames)
    report["production_rigs"] = [
        live_rigs.measure(kind, args.rig_frames, args.rig_rounds)
        for kind in ("rigify", "bones4000")
    ]
    report["load_after"] = os.getloadavg()
    text = "\n".join(
        ([markdown(report), ""] if not args.rigs_only else [])
        + live_rigs.markdown(report["production_rigs"])
        + [
            "",
            f"Load average (1, 5, 15 min) before / after: {report['load']} / "
            f"{report['load_after']}.",
        ]
    )
    print(text)
    print(json.dumps(report, indent=2))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "live.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "live.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
