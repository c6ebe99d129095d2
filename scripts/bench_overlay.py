# SPDX-License-Identifier: GPL-3.0-or-later
"""Overlay benchmark: the 3D View draw callback's cost per redraw, four chains on the metarig.

The ``gpu`` module cannot draw in background mode, so this runs inside a real Blender UI
under a virtual display (root; Debian's Blender 5.2 by default, ``--suite trixie`` for 4.3)::

    /work/shared/tools/real-blender/blender --xvfb -- --factory-startup \\
        --python scripts/bench_overlay.py -- --zip dist/reach_ik-0.1.0.zip --out out/bench

It installs the extension zip, builds the Rigify human metarig with four Reach IK chains
(both arms and legs, one leg out of reach so the red mark is drawn, one arm with a pole),
swaps the overlay's draw handler for one that times the same callback
(``ik_addon.overlay.draw``, its Python and its ``gpu`` calls, ``time.perf_counter``), and
redraws the 3D View's main region ``--redraws`` times (``wm.redraw_timer``) in each case:

* **cached** — nothing changed since the last redraw (orbiting, panning, UI redraws): shaders
  bound and the four cached batches drawn;
* **rebuild** — the geometry marked out of date before every redraw, as after each frame of
  playback: the evaluated joints of every chain read and the batches built again;
* **overlays off** — the view's overlays off (the callback returns at once);
* **empty** — no callback work at all: the timer's own cost, for calibration;
* **cached, warm** — the cached case's callback called a second time in the same redraw.
  The first call of a redraw meets caches that llvmpipe's rasterising (on the same two
  CPU cores) has just evicted; the second shows the callback's own cost.

The cases are interleaved redraw by redraw (one round = one redraw of each), so the load of
a shared machine hits them alike. The ``gpu`` calls only queue work: the time is what the
callback costs Blender's draw loop (llvmpipe's own rasterising comes later, and is not
Reach IK's). Bar: cached ≤ 0.05 ms. Writes ``overlay.json`` and ``overlay.md`` to ``--out``
and prints the table and the JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

bpy: Any = importlib.import_module("bpy")
addon_utils: Any = importlib.import_module("addon_utils")

EXTENSION = "bl_ext.user_default.reach_ik"
BAR_MS = 0.05
CASES = ("cached", "rebuild", "overlays off", "empty")


def _args() -> argparse.Namespace:
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--zip", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    parser.add_argument("--redraws", type=int, default=100)
    return parser.parse_args(argv)


def _setup(zip_path: Path) -> Any:
    result = bpy.ops.extensions.package_install_files(
        filepath=str(zip_path.resolve()), repo="user_default", enable_on_install=True
    )
    assert result == {"FINISHED"}, result
    addon_utils.enable("rigify", default_set=True)
    for ob in list(bpy.data.objects):
        bpy.data.objects.remove(ob)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    offsets = {
        "forearm.L": ("upper_arm.L", (0.22, -0.38, -0.12)),
        "forearm.R": ("upper_arm.R", (-0.15, -0.3, -0.3)),
        "shin.L": ("thigh.L", (0.05, -0.45, -0.95)),  # out of reach
        "shin.R": ("thigh.R", (-0.05, -0.3, -0.7)),
    }
    for tip, (root, offset) in offsets.items():
        for pb in obj.pose.bones:
            if hasattr(pb, "select"):
                pb.select = pb.name == tip
            else:
                pb.bone.select = pb.name == tip
        obj.data.bones.active = obj.data.bones[tip]
        bpy.ops.reach_ik.add(new_target=True)
        head = obj.matrix_world @ obj.data.bones[root].head_local
        obj.pose.bones[tip].reach_ik.target.location = head + type(head)(offset)
    pole = bpy.data.objects.new("elbow pole.L", None)
    obj.users_collection[0].objects.link(pole)
    head = obj.matrix_world @ obj.data.bones["upper_arm.L"].head_local
    pole.location = head + type(head)((0.35, 0.35, -0.1))
    obj.pose.bones["forearm.L"].reach_ik.pole = pole
    bpy.context.scene.frame_set(1)
    return obj


def _measure(redraws: int) -> dict[str, Any]:
    overlay: Any = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
    window = bpy.context.window
    area = next(a for a in window.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")
    space = area.spaces.active
    times: dict[str, list[float]] = {case: [] for case in (*CASES, "cached, warm")}
    current = {"case": "cached"}
    seen = {"batches": 0, "cached_rebuilt": 0}

    def timed() -> None:
        case = current["case"]
        if case == "rebuild":
            overlay.mark_dirty()
        elif case == "cached" and overlay._dirty:
            seen["cached_rebuilt"] += 1
        if case == "empty":
            start = time.perf_counter()
            times[case].append(time.perf_counter() - start)
            return
        start = time.perf_counter()
        overlay.draw()
        times[case].append(time.perf_counter() - start)
        if case == "cached":  # once more in the same redraw: the interpreter's caches warm
            start = time.perf_counter()
            overlay.draw()
            times["cached, warm"].append(time.perf_counter() - start)
        seen["batches"] = max(seen["batches"], len(overlay._batches))

    bpy.types.SpaceView3D.draw_handler_remove(overlay._handle, "WINDOW")
    handle = bpy.types.SpaceView3D.draw_handler_add(timed, (), "WINDOW", "POST_VIEW")
    try:
        with bpy.context.temp_override(window=window, area=area, region=region):
            bpy.ops.wm.redraw_timer(type="DRAW", iterations=3)  # warm up, build once
            for values in times.values():
                values.clear()
            seen["cached_rebuilt"] = 0
            for _ in range(redraws):
                for case in CASES:
                    current["case"] = case
                    space.overlay.show_overlays = case != "overlays off"
                    bpy.ops.wm.redraw_timer(type="DRAW", iterations=1)
    finally:
        space.overlay.show_overlays = True
        bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")
        overlay._handle = bpy.types.SpaceView3D.draw_handler_add(
            overlay.draw, (), "WINDOW", "POST_VIEW"
        )
    return {"times": times, **seen}


def _report(measured: dict[str, Any], out: Path) -> None:
    times = measured["times"]
    rows = {}
    for case in times:
        ms = [t * 1e3 for t in times[case]]
        rows[case] = {
            "median_ms": statistics.median(ms),
            "p90_ms": sorted(ms)[int(0.9 * (len(ms) - 1))],
            "redraws": len(ms),
        }
    result = {
        "blender": bpy.app.version_string,
        "gpu_backend": _backend(),
        "chains": 4,
        "batches": measured["batches"],
        "cached_redraws_that_rebuilt": measured["cached_rebuilt"],
        "bar_ms": BAR_MS,
        "cases": rows,
        "cached_meets_bar": rows["cached"]["median_ms"] <= BAR_MS,
        "cached_warm_meets_bar": rows["cached, warm"]["median_ms"] <= BAR_MS,
    }
    lines = [
        f"Overlay draw callback per redraw, 4 chains on the metarig, Blender "
        f"{result['blender']} ({result['gpu_backend']}), {rows['cached']['redraws']} redraws "
        "per case, interleaved",
        "",
        "| case | median ms | p90 ms |",
        "|---|---|---|",
    ]
    for case in rows:
        r = rows[case]
        lines.append(f"| {case} | {r['median_ms']:.4f} | {r['p90_ms']:.4f} |")
    lines.append("")
    lines.append(
        f"Bar: cached ≤ {BAR_MS} ms — first call "
        f"{'met' if result['cached_meets_bar'] else 'not met'}, warm "
        f"{'met' if result['cached_warm_meets_bar'] else 'not met'}."
    )
    table = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "overlay.md").write_text(table, encoding="utf-8")
    (out / "overlay.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table)
    print(json.dumps(result, indent=2))


def _backend() -> str:
    gpu = importlib.import_module("gpu")
    try:
        return f"{gpu.platform.backend_type_get()} {gpu.platform.renderer_get()}"
    except Exception:
        return "unknown"


def main() -> None:
    args = _args()
    _setup(args.zip)

    def run() -> None:
        code = 0
        try:
            _report(_measure(args.redraws), args.out)
        except Exception:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        bpy.ops.wm.quit_blender()
        if code:
            sys.exit(code)

    bpy.app.timers.register(run, first_interval=2.0)


main()
