# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's main job (``make demo``): build the demo, bake it with every solver, report.

    python scripts/demo.py --out out [--frames 240]

Writes into ``--out``:

* ``demo.blend`` — the demo scene with its live Reach IK chains
  (:mod:`reach_ik_tools.demo_scene`);
* ``demo_baked_<solver>.blend`` — the demo baked to keyframes with each solver the core
  offers and that works (the chains disabled afterwards, so the keys play);
* ``demo_report.json`` — per solver: the bake's quality report per chain, and the replay:
  the baked keys played back frame by frame (chains off), the effector's largest and mean
  distance to the target;
* ``demo.png`` — per chain, the target's path and the baked effector's path per solver
  (top), and the residual error per frame per solver (bottom, log scale).

The replay measures the effector (the tail of the chain's tip bone) from Blender's own
evaluation of the baked keys, not from the solver.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: reach_ik_tools

from reach_ik_tools import blender_session, demo_scene, safe_output

#: Errors below this (metres) are drawn at this value on the log scale.
ERROR_FLOOR = 1e-9


def chains_of(bpy: Any, chain_spec: Any) -> list[tuple[str, str]]:
    """``(armature, tip)`` of every enabled chain in the scene, in a stable order."""
    out = []
    for obj in sorted(bpy.context.scene.objects, key=lambda o: o.name):
        if obj.type == "ARMATURE":
            out += [(obj.name, t) for t in chain_spec.chain_tips(obj)]
    return out


def replay(bpy: Any, chains: list[tuple[str, str]], targets: dict[str, str]) -> dict[str, Any]:
    """Play the scene back (no live chains): effector and target positions per frame."""
    scene = bpy.context.scene
    frames = range(scene.frame_start, scene.frame_end + 1)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    out: dict[str, Any] = {}
    effectors = np.zeros((len(chains), len(frames), 3))
    goals = np.zeros_like(effectors)
    for i, frame in enumerate(frames):
        scene.frame_set(frame)
        for c, (armature, tip) in enumerate(chains):
            obj = bpy.data.objects[armature].evaluated_get(depsgraph)
            world = np.array(obj.matrix_world)
            tail = np.array(obj.pose.bones[tip].matrix) @ np.array(
                [0, obj.pose.bones[tip].length, 0, 1]
            )
            effectors[c, i] = (world @ tail)[:3]
            goals[c, i] = (
                bpy.data.objects[targets[f"{armature}:{tip}"]]
                .evaluated_get(depsgraph)
                .matrix_world.translation
            )
    for c, (armature, tip) in enumerate(chains):
        error = np.linalg.norm(effectors[c] - goals[c], axis=-1)
        out[f"{armature}:{tip}"] = {
            "effector": effectors[c],
            "target": goals[c],
            "error": error,
        }
    return out


def bake_with(bpy: Any, reach: Any, demo: Path, out: Path, solver: str) -> dict[str, Any]:
    """Open the demo, bake every armature with ``solver``, save, replay."""
    bake = reach.ik_addon.bake
    chain_spec = reach.ik_addon.chain_spec
    bpy.ops.wm.open_mainfile(filepath=str(demo), load_ui=False)
    scene = bpy.context.scene
    chains = chains_of(bpy, chain_spec)
    targets = {
        f"{a}:{t}": bpy.data.objects[a].pose.bones[t].reach_ik.target.name for a, t in chains
    }
    started = time.perf_counter()
    results = []
    for armature in sorted({a for a, _ in chains}):
        options = bake.BakeOptions(scene.frame_start, scene.frame_end, solver=solver)
        results.append(bake.bake(bpy.data.objects[armature], options, scene=scene))
    seconds = time.perf_counter() - started
    path = out / f"demo_baked_{solver}.blend"
    safe_output.save_blend(bpy, path)
    played = replay(bpy, chains, targets)
    return {
        "file": path.name,
        "seconds": seconds,
        "bakes": [r.to_dict() for r in results],
        "replay": played,
    }


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    solvers = [s for s, r in report["solvers"].items() if "replay" in r]
    if not solvers:
        return
    chains = list(report["solvers"][solvers[0]]["replay"])
    fig, axes = plt.subplots(2, len(chains), figsize=(4.2 * len(chains), 8.4), squeeze=False)
    colours = plt.get_cmap("tab10")
    frames = np.arange(report["frame_start"], report["frame_end"] + 1)
    for c, chain in enumerate(chains):
        target = np.asarray(report["solvers"][solvers[0]]["replay"][chain]["target"])
        centred = target - target.mean(axis=0)
        axes2d = np.linalg.svd(centred, full_matrices=False)[2][:2]
        top, bottom = axes[0, c], axes[1, c]
        t2 = centred @ axes2d.T
        top.plot(t2[:, 0], t2[:, 1], "k--", lw=1.2, label="target")
        for k, solver in enumerate(solvers):
            data = report["solvers"][solver]["replay"][chain]
            e2 = (np.asarray(data["effector"]) - target.mean(axis=0)) @ axes2d.T
            top.plot(e2[:, 0], e2[:, 1], color=colours(k), lw=0.9, label=solver)
            err = np.maximum(np.asarray(data["error"]), ERROR_FLOOR)
            bottom.semilogy(frames, err, color=colours(k), lw=0.9, label=solver)
        top.set_title(chain.replace(":", " · "))
        top.set_aspect("equal", adjustable="datalim")
        top.set_xlabel("path plane (m)")
        bottom.set_xlabel("frame")
        bottom.set_ylim(ERROR_FLOOR / 2, None)
        if c == 0:
            bottom.set_ylabel("residual error (m)")
            top.legend(fontsize=7, loc="best")
            bottom.legend(fontsize=7, loc="best")
    fig.suptitle("Reach IK demo: baked effector paths (top) and residual error (bottom)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """The report for JSON: per-frame replay arrays reduced to their maximum and mean."""
    out = {k: v for k, v in report.items() if k != "solvers"}
    out["solvers"] = {}
    for solver, result in report["solvers"].items():
        entry = {k: v for k, v in result.items() if k != "replay"}
        if "replay" in result:
            entry["replay"] = {
                chain: {
                    "error_max": float(np.max(d["error"])),
                    "error_mean": float(np.mean(d["error"])),
                    "frames": int(np.size(d["error"])),
                }
                for chain, d in result["replay"].items()
            }
        out["solvers"][solver] = entry
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="demo.py", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="out", help="output folder (default: out)")
    parser.add_argument("--frames", type=int, default=240, help="length of the demo")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    bpy = blender_session.blender_module()

    bpy.ops.wm.read_homefile(use_empty=True)
    reach = blender_session.load_reach_ik(bpy)
    demo_scene.build(args.frames)
    demo = out / "demo.blend"
    safe_output.save_blend(bpy, demo)
    print(f"wrote {demo}")
    report: dict[str, Any] = {"frame_start": 1, "frame_end": args.frames, "solvers": {}}
    for solver in reach.ik_addon.chain_spec.available_methods():
        try:
            result = bake_with(bpy, reach, demo, out, solver)
        except Exception as exc:
            report["solvers"][solver] = {"failed": f"{type(exc).__name__}: {exc}"}
            print(f"{solver}: failed: {exc}")
            continue
        report["solvers"][solver] = result
        worst = {c: float(np.max(d["error"])) for c, d in result["replay"].items()}
        print(
            f"{solver}: baked in {result['seconds']:.2f} s -> {result['file']}; replayed "
            "residual max " + ", ".join(f"{c} {w * 1000:.3g} mm" for c, w in worst.items())
        )
    plot(report, out / "demo.png")
    safe_output.save_json(summary(report), out / "demo_report.json")
    print(f"wrote {out / 'demo_report.json'} and {out / 'demo.png'}")
    return 0 if any("replay" in r for r in report["solvers"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(blender_session.script_argv()))
