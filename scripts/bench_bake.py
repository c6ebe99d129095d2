# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: baking Reach IK vs Blender's own bake (``bpy.ops.nla.bake``), side by side.

    python scripts/bench_bake.py [--frames 1000] [--repeats 5] [--long 10000] [--out out/bench]

The rig: the Rigify human metarig with animated targets for both hands and feet and poles
(:mod:`reach_ik_tools.demo_scene`), four 2-bone limb chains, ``--frames`` frames, in two scenarios:
only the targets animated (the issue's benchmark), and the spine animated too (then Reach
IK must set every frame as well). Per scenario two copies are saved once: one with
Blender's IK constraints on the limbs, one with Reach IK chains (the default solver). Each
repeat reopens both files and times, in alternating order,

* **Blender**: ``bpy.ops.nla.bake`` with visual keying, only the 8 chain bones (selected),
  pose only, clearing the constraints — Blender's way to turn IK into keys;
* **Reach IK**: ``bpy.ops.reach_ik.bake`` over the same frames (keys only the 8 bones'
  rotations).

Reported: frames per second of each (median over repeats) and the ratio ours / Blender's
per repeat (median; the bar is ≥ 10× on the first scenario), and which way Reach IK baked
(see ``docs/bake.md``). Then one long bake of ``--long`` frames per scenario: its time, how
many progress updates it made, and the peak memory it added (resident set growth, Linux
``VmHWM`` after resetting it). Writes ``bench_bake.json`` and ``bench_bake.md`` into
``--out``. Timing only, no assertions: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: reach_ik_tools

from reach_ik_tools import blender_session, demo_scene, safe_output

BAR = 15.0  # issue 14: still ≥ 15× nla.bake without key reduction


#: The scenarios: the rig as built (only the targets move), and with the spine animated
#: (the armature moves, so Reach IK must set every frame too).
SCENARIOS = {
    "targets animated": False,
    "targets and spine animated": True,
}


def animate_spine(rig: Any, frames: int) -> None:
    """Sway the spine (FK keys above every limb chain)."""
    spine = rig.pose.bones["spine"]
    for f in range(1, frames + 1, max(frames // 8, 1)):
        angle = 0.15 * math.sin(f / 40.0)
        spine.rotation_quaternion = (math.cos(angle / 2), math.sin(angle / 2), 0.0, 0.0)
        spine.keyframe_insert("rotation_quaternion", frame=f)


def build_rig(frames: int, kind: str, spine: bool, driven: bool = False) -> Any:
    """The metarig with animated goals and Blender IK (``kind="blender_ik"``) or Reach IK."""
    bpy = blender_session.blender_module()
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    rig = demo_scene.add_metarig()
    goals = demo_scene.add_limb_goals(rig, frames)
    if kind == "blender_ik":
        demo_scene.add_blender_ik(rig, goals)
    else:
        demo_scene.add_limb_chains(rig, goals, None)
    if spine:
        animate_spine(rig, frames)
    if driven:
        # A driver on the armature: its pose no longer follows from F-curves alone.
        rig.pose.bones["spine"].driver_add("location", 0).driver.expression = "0.0"
    return rig


def build_files(folder: Path, frames: int, spine: bool) -> tuple[Path, Path]:
    """Save the two rigs (Blender IK, Reach IK); returns their paths."""
    bpy = blender_session.blender_module()
    paths = []
    for kind in ("blender_ik", "reach_ik"):
        rig = build_rig(frames, kind, spine)
        bpy.context.view_layer.objects.active = rig
        bpy.ops.object.mode_set(mode="POSE")
        path = folder / f"{kind}_{int(spine)}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path))
        paths.append(path)
    return paths[0], paths[1]


def _open(path: Path) -> Any:
    bpy = blender_session.blender_module()
    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    rig = bpy.data.objects["Human"]
    bpy.context.view_layer.objects.active = rig
    if rig.mode != "POSE":
        bpy.ops.object.mode_set(mode="POSE")
    return rig


def _select_chain_bones(rig: Any) -> None:
    for pb in rig.pose.bones:
        state = pb.name in demo_scene.LIMB_BONES
        if hasattr(pb, "select"):
            pb.select = state
        else:
            pb.bone.select = state


def _keys(rig: Any, bone: str) -> int:
    """Keys on the bone's first quaternion channel (checks both bakes keyed every frame)."""
    action = rig.animation_data.action
    path = f'pose.bones["{bone}"].rotation_quaternion'
    if hasattr(action, "layers"):
        for layer in action.layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    fcurve = bag.fcurves.find(path, index=0)
                    if fcurve is not None:
                        return len(fcurve.keyframe_points)
        return 0
    fcurve = action.fcurves.find(path, index=0)
    return 0 if fcurve is None else len(fcurve.keyframe_points)


def _check(done: set[str], rig: Any, frames: int) -> None:
    keys = _keys(rig, "forearm.L")
    if done != {"FINISHED"} or keys != frames:
        raise RuntimeError(f"the bake did not key every frame: {done}, {keys} of {frames} keys")


def time_blender(path: Path, frames: int) -> float:
    bpy = blender_session.blender_module()
    rig = _open(path)
    _select_chain_bones(rig)
    started = time.perf_counter()
    done = bpy.ops.nla.bake(
        frame_start=1,
        frame_end=frames,
        only_selected=True,
        visual_keying=True,
        clear_constraints=True,
        bake_types={"POSE"},
    )
    seconds = time.perf_counter() - started
    _check(done, rig, frames)
    return seconds


def time_reach(path: Path, frames: int, reach: Any) -> tuple[float, str]:
    """Seconds of one ``reach_ik.bake``, and the way it baked (``BakeResult.method``)."""
    bpy = blender_session.blender_module()
    rig = _open(path)
    started = time.perf_counter()
    done = bpy.ops.reach_ik.bake(frame_start=1, frame_end=frames, reduce=False)
    seconds = time.perf_counter() - started
    _check(done, rig, frames)
    report = reach.ik_addon.bake_report.stored_report(rig.pose.bones["forearm.L"])
    return seconds, report["method"]


def time_reduction(path: Path, frames: int, reach: Any) -> dict[str, Any]:
    """One bake with key reduction (``BakeOptions(reduce=True)``): the whole bake's and the
    reduction's seconds, keys written and keys of the full bake."""
    rig = _open(path)
    bake = reach.ik_addon.bake
    started = time.perf_counter()
    result = bake.bake(rig, bake.BakeOptions(1, frames, reduce=True))
    return {
        "seconds": time.perf_counter() - started,
        "reduction_seconds": result.reduction_seconds,
        "keys": result.keys,
        "keys_full": result.keys_full,
    }


def _status_bytes(key: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


#: Long bakes: the issue's rig, and one whose armature has a driver (every frame is set).
LONG = {
    "targets animated": (False, False),
    "spine animated and driven (every frame set)": (True, True),
}


def long_bake(frames: int, reach: Any, name: str) -> dict[str, Any]:
    """Bake ``frames`` frames once: seconds, progress updates, peak memory added."""
    spine, driven = LONG[name]
    rig = build_rig(frames, "reach_ik", spine, driven)
    bake = reach.ik_addon.bake
    updates: list[float] = []
    before = _status_bytes("VmRSS:")
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        resettable = True
    except OSError:
        resettable = False
    started = time.perf_counter()
    result = bake.bake(rig, bake.BakeOptions(1, frames, reduce=False), progress=updates.append)
    seconds = time.perf_counter() - started
    peak = _status_bytes("VmHWM:")
    return {
        "scenario": name,
        "frames": frames,
        "seconds": seconds,
        "fps": frames / seconds,
        "progress_updates": len(updates),
        "peak_rss_added_mib": (peak - before) / 2**20 if resettable else None,
        "rss_before_mib": before / 2**20,
        "method": result.method,
    }


def long_bake_apart(frames: int, name: str) -> dict[str, Any]:
    """:func:`long_bake` in a fresh process (its memory growth is not hidden by memory an
    earlier bake left to the allocator)."""
    done = subprocess.run(
        [sys.executable, __file__, "--long", str(frames), "--long-case", name],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("LONG "))
    result: dict[str, Any] = json.loads(line[5:])
    return result


def markdown(report: dict[str, Any]) -> str:
    r = report
    lines = [
        "# Bake benchmark: Reach IK vs `bpy.ops.nla.bake`",
        "",
        f"Rigify metarig, 4 two-bone limb chains (8 bones) with animated targets and poles, "
        f"{r['frames']} frames, {r['repeats']} repeats, Blender {r['blender']}, solver "
        f"{r['solver']}; Blender: IK constraints + `nla.bake` (visual keying, only the 8 "
        "bones, clear constraints); Reach IK: `reach_ik.bake`. Medians; ratio = median of "
        "the per-repeat ratios (Reach IK fps / Blender fps).",
        "",
        "| scenario | Blender s | Blender fps | Reach IK s | Reach IK fps | ratio | Reach IK way |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, row in r["scenarios"].items():
        lines.append(
            f"| {name} | {row['blender_seconds']:.3f} | {row['blender_fps']:.0f} | "
            f"{row['reach_seconds']:.3f} | {row['reach_fps']:.0f} | **{row['ratio']:.1f}×** | "
            f"{row['method']} |"
        )
    lines += [
        "",
        "Key reduction (`BakeOptions(reduce=True)`, default bounds; measured after the "
        "ratio's repeats, medians): the bake without reduction (above) beside the reduction "
        "alone.",
        "",
        "| scenario | bake s (no reduction) | reduction s | reduced bake s | keys | "
        "keys reduced | fewer |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in r["scenarios"].items():
        lines.append(
            f"| {name} | {row['reach_seconds']:.3f} | {row['reduce_seconds']:.3f} | "
            f"{row['reduced_bake_seconds']:.3f} | {row['keys_full']} | {row['keys_reduced']} | "
            f"{100 * (1 - row['keys_reduced'] / row['keys_full']):.0f}% |"
        )
    lines += ["", f"Bar: ≥ {BAR:.0f}× on the first scenario (the issue's benchmark)."]
    for long in r.get("long", []):
        memory = long["peak_rss_added_mib"]
        lines.append(
            f"Long bake ({long['scenario']}, way: {long['method']}): {long['frames']} frames in "
            f"{long['seconds']:.2f} s ({long['fps']:.0f} frames/s), "
            f"{long['progress_updates']} progress updates, "
            + (f"peak memory added {memory:.0f} MiB." if memory is not None else "memory n/a.")
        )
    return "\n".join(lines) + "\n"


def run_scenario(
    folder: Path, frames: int, repeats: int, spine: bool, reach: Any
) -> dict[str, Any]:
    """Time both bakes ``repeats`` times, alternating which goes first."""
    blender_file, reach_file = build_files(folder, frames, spine)
    blender_times: list[float] = []
    reach_times: list[float] = []
    method = ""
    for repeat in range(repeats):
        order = (0, 1) if repeat % 2 == 0 else (1, 0)
        for which in order:
            if which == 0:
                blender_times.append(time_blender(blender_file, frames))
            else:
                seconds, method = time_reach(reach_file, frames, reach)
                reach_times.append(seconds)
    ratios = [b / r for b, r in zip(blender_times, reach_times, strict=True)]
    reduced = [time_reduction(reach_file, frames, reach) for _ in range(repeats)]
    return {
        "reduce_seconds": statistics.median(r["reduction_seconds"] for r in reduced),
        "reduced_bake_seconds": statistics.median(r["seconds"] for r in reduced),
        "keys_full": reduced[0]["keys_full"],
        "keys_reduced": reduced[0]["keys"],
        "blender_seconds_all": blender_times,
        "reach_seconds_all": reach_times,
        "blender_seconds": statistics.median(blender_times),
        "reach_seconds": statistics.median(reach_times),
        "blender_fps": frames / statistics.median(blender_times),
        "reach_fps": frames / statistics.median(reach_times),
        "ratios": ratios,
        "ratio": statistics.median(ratios),
        "method": method,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_bake.py", description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--long", type=int, default=10_000, help="frames of the long bake (0: skip)"
    )
    parser.add_argument("--out", default="out/bench")
    parser.add_argument("--long-case", choices=list(LONG), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bpy = blender_session.blender_module()
    reach = blender_session.load_reach_ik(bpy)
    if args.long_case:
        print("LONG " + json.dumps(long_bake(args.long, reach, args.long_case)))
        return 0
    out = Path(args.out)
    report: dict[str, Any] = {
        "frames": args.frames,
        "repeats": args.repeats,
        "blender": bpy.app.version_string,
        "python": platform.python_version(),
        "solver": reach.ik_addon.chain_spec.available_methods()[0],
        "bar": BAR,
        "scenarios": {},
    }
    with tempfile.TemporaryDirectory(prefix="reach-ik-bench-") as tmp:
        for name, spine in SCENARIOS.items():
            report["scenarios"][name] = run_scenario(
                Path(tmp), args.frames, args.repeats, spine, reach
            )
    first = next(iter(report["scenarios"].values()))
    report["ratio"] = first["ratio"]
    if args.long:
        report["long"] = [long_bake_apart(args.long, name) for name in LONG]
    safe_output.save_json(report, out / "bench_bake.json")
    text = markdown(report)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_bake.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(blender_session.script_argv()))
