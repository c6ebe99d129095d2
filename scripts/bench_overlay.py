# SPDX-License-Identifier: GPL-3.0-or-later
"""Overlay benchmark: the 3D View draw callback's cost per redraw, four chains on the metarig.

The ``gpu`` module cannot draw in background mode, so this runs inside a real Blender UI
under a virtual display (root; Debian's Blender 5.2 by default, ``--suite trixie`` for 4.3)::

    /work/shared/tools/real-blender/blender --xvfb -- --factory-startup \\
        --python scripts/bench_overlay.py -- --zip dist/reach_ik-<version>.zip --out out/bench

It installs the extension zip, builds the Rigify human metarig with four Reach IK chains
(both arms and legs, one leg out of reach so the red mark is drawn, one arm with a pole),
swaps the overlay's draw handler for one that times the same callback
(``ik_addon.overlay.draw``, its Python and its ``gpu`` calls, ``time.perf_counter``), and
redraws the 3D View's main region ``--redraws`` times in each case — with
``wm.redraw_timer`` (default), or with ``--event-loop`` as Blender's event loop does (a
timer tags the region, the window manager draws it):

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
    parser.add_argument(
        "--event-loop",
        action="store_true",
        help="let Blender's event loop redraw (tag_redraw from a timer) instead of wm.redraw_timer",
    )
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


class _Probe:
    """The overlay's draw handler swapped for a timed one; :meth:`close` swaps it back."""

    def __init__(self) -> None:
        self.overlay: Any = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
        window = bpy.context.window
        self.window = window
        self.area = next(a for a in window.screen.areas if a.type == "VIEW_3D")
        self.region = next(r for r in self.area.regions if r.type == "WINDOW")
        self.space = self.area.spaces.active
        self.times: dict[str, list[float]] = {case: [] for case in (*CASES, "cached, warm")}
        self.case = "cached"
        self.seen = {"batches": 0, "cached_rebuilt": 0}
        bpy.types.SpaceView3D.draw_handler_remove(self.overlay._handle, "WINDOW")
        self.handle = bpy.types.SpaceView3D.draw_handler_add(self.timed, (), "WINDOW", "POST_VIEW")

    def set_case(self, case: str) -> None:
        self.case = case
        self.space.overlay.show_overlays = case != "overlays off"

    def reset(self) -> None:
        for values in self.times.values():
            values.clear()
        self.seen["cached_rebuilt"] = 0

    def timed(self) -> None:
        overlay, case, times = self.overlay, self.case, self.times
        if case == "rebuild":
            overlay.mark_dirty()
        elif case == "cached" and overlay._dirty:
            self.seen["cached_rebuilt"] += 1
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
        self.seen["batches"] = max(self.seen["batches"], len(overlay._batches))

    def close(self) -> dict[str, Any]:
        self.space.overlay.show_overlays = True
        bpy.types.SpaceView3D.draw_handler_remove(self.handle, "WINDOW")
        self.overlay._handle = bpy.types.SpaceView3D.draw_handler_add(
            self.overlay.draw, (), "WINDOW", "POST_VIEW"
        )
        return {"times": self.times, **self.seen}


def _measure(redraws: int) -> dict[str, Any]:
    """Redraws forced by ``wm.redraw_timer`` (the region drawn at once, ``redraws`` rounds)."""
    probe = _Probe()
    try:
        override = {"window": probe.window, "area": probe.area, "region": probe.region}
        with bpy.context.temp_override(**override):
            bpy.ops.wm.redraw_timer(type="DRAW", iterations=3)  # warm up, build once
            probe.reset()
            for _ in range(redraws):
                for case in CASES:
                    probe.set_case(case)
                    bpy.ops.wm.redraw_timer(type="DRAW", iterations=1)
    finally:
        measured = probe.close()
    return measured


def _measure_event_loop(redraws: int, done: Any) -> None:
    """Redraws as Blender's event loop makes them: a timer tags the 3D View for redraw and
    waits until it was drawn before the next case (no operator, no context override);
    calls ``done(measured)`` at the end."""
    probe = _Probe()
    plan = [case for _ in range(redraws + 1) for case in CASES]
    state = {"step": -1, "count": 0}

    def tick() -> float | None:
        step = state["step"]
        if step >= 0 and sum(map(len, probe.times.values())) == state["count"]:
            probe.region.tag_redraw()
            return 0.01  # not drawn yet
        if step == len(CASES) - 1:
            probe.reset()  # the first round warms up
        step += 1
        if step == len(plan):
            done(probe.close())
            return None
        state["step"] = step
        probe.set_case(plan[step])
        state["count"] = sum(map(len, probe.times.values()))
        probe.region.tag_redraw()
        return 0.01

    bpy.app.timers.register(tick, first_interval=0.1)


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
        "redraws_by": measured["mode"],
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
        f"per case, interleaved, redrawn by {measured['mode']}",
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

    def finish(measured: dict[str, Any] | None) -> None:
        code = 0
        try:
            if measured is None:
                raise RuntimeError("no measurement")
            measured["mode"] = "event loop" if args.event_loop else "wm.redraw_timer"
            _report(measured, args.out)
        except Exception:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        bpy.ops.wm.quit_blender()
        if code:
            sys.exit(code)

    def run() -> None:
        if args.event_loop:
            _measure_event_loop(args.redraws, finish)
            return
        measured = None
        try:
            measured = _measure(args.redraws)
        except Exception:
            traceback.print_exc()
        finish(measured)

    bpy.app.timers.register(run, first_interval=2.0)


main()
