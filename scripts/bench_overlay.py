# SPDX-License-Identifier: GPL-3.0-or-later
"""Overlay benchmark: the 3D View draw callback's cost per redraw, four chains on the metarig.

The ``gpu`` module cannot draw in background mode, so this runs inside a real Blender UI
under a virtual display (root; Debian's Blender 5.2 by default, ``--suite trixie`` for 4.3)::

    /work/shared/tools/real-blender/blender --xvfb -- --factory-startup \\
        --python scripts/bench_overlay.py -- --zip dist/reach_ik-<version>.zip --out out/bench

It installs the extension zip, builds the Rigify human metarig with four Reach IK chains
(both arms and legs, one leg out of reach so the red mark is drawn, one arm with a pole,
every target keyed to move over 48 frames), swaps the overlay's draw handler for one that
times the same callback (``ik_addon.overlay.draw``, its Python and its ``gpu`` calls,
``time.perf_counter``) and the overlay's after-solve app handler for a timed one, and
redraws the 3D View's main region ``--redraws`` rounds — with ``wm.redraw_timer`` (default),
or with ``--event-loop`` as Blender's event loop does (a timer prepares a case and tags the
region, the window manager draws it; the message bus then reports the overlay switch as in
use, where ``wm.redraw_timer`` needs the probe to report it). The cases:

* **steady** — nothing changed since the last redraw (orbiting, panning, UI redraws);
* **playback** — ``frame_set`` to the next frame before the redraw (the live solve and the
  overlay's handler run there; the handler's time is reported apart), so the callback reads
  the new pose;
* **dragging** — a target moved and the view layer updated before the redraw;
* **overlays off** — the view's overlays off (the redraw right after switching is untimed:
  it reads the views' switches again, once per switch);
* **no chains** — no chain solved (the live status emptied for that redraw);
* **…, no draw call** — the same with ``batch.draw`` replaced by a no-op: the Python side;
  the difference is the draw call (llvmpipe, which rasterises on the CPU);
* **steady, called again in the same redraw** — the callback's own cost with warm caches
  (the first call of a redraw meets caches that llvmpipe's rasterising on the same cores
  has just emptied);
* **empty** — no callback work: the timer's own cost.

The cases are interleaved redraw by redraw (one round = one redraw of each), so the load of
a shared machine hits them alike. Bar: ≤ 0.05 ms per redraw. Writes ``overlay.json`` and
``overlay.md`` to ``--out`` and prints the table and the JSON.
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
NO_DRAW = ", no draw call"
#: One round: one redraw of each, in this order (each leaves the overlay up to date for the
#: next, except where the case itself changes something).
SWITCH_OFF, SWITCH_ON = "(overlays switched off)", "(overlays switched on)"
AGAIN = "steady, called again in the same redraw"
CASES = (
    "steady",
    "steady" + NO_DRAW,
    "overlays off",
    "no chains",
    "playback",
    "playback" + NO_DRAW,
    "dragging",
    "dragging" + NO_DRAW,
    "empty",
)
#: One round: every case once, in this order (each leaves the overlay as the next expects),
#: with untimed redraws after switching the overlays (the message bus reports a switch once;
#: the redraw after it reads the views again, the ones after that do not).
ROUND = (
    *CASES[:2],
    SWITCH_OFF,
    *CASES[2:3],
    SWITCH_ON,
    *CASES[3:],
)
TIPS = ("forearm.L", "forearm.R", "shin.L", "shin.R")
#: Playback loops over these frames; the targets are keyed to move between the first and
#: the last, so every frame has a new pose.
FRAMES = 48


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
    for tip in TIPS:
        target = obj.pose.bones[tip].reach_ik.target
        target.keyframe_insert("location", frame=1)
        target.location.z += 0.15
        target.keyframe_insert("location", frame=FRAMES)
    bpy.context.scene.frame_set(1)
    return obj


class _NoDraw:
    """Stands in for a batch: the callback without its draw call (``batch.draw``)."""

    def draw(self, _shader: Any) -> None:
        pass


class _Probe:
    """The overlay's draw handler swapped for a timed one; :meth:`close` swaps it back."""

    def __init__(self, obj: Any, event_loop: bool) -> None:
        self.event_loop = event_loop
        self.overlay: Any = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
        self.handlers: Any = importlib.import_module(f"{EXTENSION}.ik_addon.handlers")
        window = bpy.context.window
        self.window = window
        self.area = next(a for a in window.screen.areas if a.type == "VIEW_3D")
        self.region = next(r for r in self.area.regions if r.type == "WINDOW")
        self.space = self.area.spaces.active
        self.scene = bpy.context.scene
        self.targets = [obj.pose.bones[tip].reach_ik.target for tip in TIPS]
        self.times: dict[str, list[float]] = {case: [] for case in (*CASES, AGAIN)}
        self.case = CASES[0]
        self.frame = 1
        self.step = 0
        self.drawn = 0
        self.seen = {
            "batches": 0,
            "steady_redraws_that_read": 0,
            "change_redraws_that_read": 0,
            "overlays_off_redraws_not_seen_off": 0,
        }
        self.status: Any = None
        self.prepared: list[float] = []
        self.handler_times: dict[str, list[float]] = {"playback": [], "dragging": []}
        bpy.types.SpaceView3D.draw_handler_remove(self.overlay._handle, "WINDOW")
        self.handle = bpy.types.SpaceView3D.draw_handler_add(self.timed, (), "WINDOW", "POST_VIEW")
        self.lists = (bpy.app.handlers.frame_change_post, bpy.app.handlers.depsgraph_update_post)
        for handler_list in self.lists:
            handler_list[handler_list.index(self.overlay.on_change)] = self.timed_handler

    def timed_handler(self, scene: Any, depsgraph: Any) -> None:
        """The overlay's app handler (after the live solve), timed."""
        start = time.perf_counter()
        self.overlay.on_change(scene, depsgraph)
        self.prepared.append(time.perf_counter() - start)

    def set_case(self, case: str) -> None:
        """Prepare the scene for one redraw of ``case`` (outside the timed callback)."""
        self.case = case
        self.prepared.clear()
        on = case not in ("overlays off", SWITCH_OFF)
        if self.space.overlay.show_overlays != on:
            self.space.overlay.show_overlays = on
            if not self.event_loop:  # no message bus without the event loop: tell it
                self.overlay._views_changed()
        if case.startswith("playback"):
            self.frame = self.frame % FRAMES + 1
            self.scene.frame_set(self.frame)  # live solve, then the overlay marks itself
        elif case.startswith("dragging"):
            self.step += 1
            target = self.targets[self.step % len(self.targets)]
            target.location.x += 0.01 if self.step % 2 else -0.01
            bpy.context.view_layer.update()  # depsgraph_update_post: live solve, overlay
        elif case == "no chains":
            self.status = self.handlers.status
            self.handlers.status = {}

    def end_case(self) -> None:
        for name in self.handler_times:
            if self.case.startswith(name):
                self.handler_times[name].append(sum(self.prepared))
        if self.status is not None:
            self.handlers.status = self.status
            self.status = None

    def reset(self) -> None:
        for values in (*self.times.values(), *self.handler_times.values()):
            values.clear()
        for name in self.seen:
            if name != "batches":
                self.seen[name] = 0

    def timed(self) -> None:
        overlay, case = self.overlay, self.case
        self.drawn += 1
        if case in (SWITCH_OFF, SWITCH_ON):
            overlay.draw()  # untimed
            return
        if case == "empty":
            start = time.perf_counter()
            self.times[case].append(time.perf_counter() - start)
            return
        plan: Any = next(iter(overlay._plans.values()), None)
        dirty = plan is None or plan.stale
        if case == "overlays off":  # the message bus told the overlay (or the probe did)
            self.seen["overlays_off_redraws_not_seen_off"] += overlay._views != overlay.OFF
        if case.startswith("steady"):
            self.seen["steady_redraws_that_read"] += dirty
        elif case.startswith(("playback", "dragging")):
            self.seen["change_redraws_that_read"] += dirty
        stub = case.endswith(NO_DRAW) and plan is not None and plan.layout.gpu is not None
        if stub:  # the batches a stale plan will draw, and those a fresh one draws
            kept = plan.layout.gpu
            plan.layout.gpu = [_NoDraw() for _ in kept]
            plan.draws = [(_NoDraw(), points, m) for _, points, m in plan.draws]
        start = time.perf_counter()
        overlay.draw()
        self.times[case].append(time.perf_counter() - start)
        if stub:
            plan.layout.gpu = kept
            plan.draws = [(b, p, m) for b, (_, p, m) in zip(kept, plan.draws, strict=True)]
        if case == "steady":  # once more: the callback's cost with the caches warm
            start = time.perf_counter()
            overlay.draw()
            self.times[AGAIN].append(time.perf_counter() - start)
        if plan is not None:
            self.seen["batches"] = max(self.seen["batches"], len(plan.draws))

    def close(self) -> dict[str, Any]:
        self.end_case()
        for handler_list in self.lists:
            handler_list[handler_list.index(self.timed_handler)] = self.overlay.on_change
        self.space.overlay.show_overlays = True
        bpy.types.SpaceView3D.draw_handler_remove(self.handle, "WINDOW")
        self.overlay._handle = bpy.types.SpaceView3D.draw_handler_add(
            self.overlay.draw, (), "WINDOW", "POST_VIEW"
        )
        return {"times": self.times, "handler_times": self.handler_times, **self.seen}


def _measure(obj: Any, redraws: int) -> dict[str, Any]:
    """Redraws forced by ``wm.redraw_timer`` (the region drawn at once, ``redraws`` rounds)."""
    probe = _Probe(obj, event_loop=False)
    try:
        override = {"window": probe.window, "area": probe.area, "region": probe.region}
        with bpy.context.temp_override(**override):
            bpy.ops.wm.redraw_timer(type="DRAW", iterations=3)  # warm up, build once
            for round_ in range(redraws + 1):
                if round_ == 1:
                    probe.reset()  # the first round warms up
                for case in ROUND:
                    probe.set_case(case)
                    bpy.ops.wm.redraw_timer(type="DRAW", iterations=1)
                    probe.end_case()
    finally:
        measured = probe.close()
    return measured


def _measure_event_loop(obj: Any, redraws: int, done: Any) -> None:
    """Redraws as Blender's event loop makes them: a timer prepares a case, tags the 3D View
    for redraw and waits until it was drawn before the next case (no operator, no context
    override); calls ``done(measured)`` at the end."""
    probe = _Probe(obj, event_loop=True)
    plan = [case for _ in range(redraws + 1) for case in ROUND]
    state = {"step": -1, "count": 0}

    def tick() -> float | None:
        step = state["step"]
        if step >= 0 and probe.drawn == state["count"]:
            probe.region.tag_redraw()
            return 0.01  # not drawn yet
        probe.end_case()
        if step == len(ROUND) - 1:
            probe.reset()  # the first round warms up
        step += 1
        if step == len(plan):
            done(probe.close())
            return None
        state["step"] = step
        probe.set_case(plan[step])
        state["count"] = probe.drawn
        probe.region.tag_redraw()
        return 0.01

    bpy.app.timers.register(tick, first_interval=0.1)


def _row(ms: list[float]) -> dict[str, Any]:
    return {
        "median_ms": statistics.median(ms),
        "p90_ms": sorted(ms)[int(0.9 * (len(ms) - 1))],
        "redraws": len(ms),
    }


def _report(measured: dict[str, Any], out: Path) -> None:
    times = measured["times"]
    rows = {case: _row([t * 1e3 for t in times[case]]) for case in times}
    handlers = {
        case: _row([t * 1e3 for t in values])
        for case, values in measured["handler_times"].items()
        if values
    }
    whole = ("steady", "playback", "dragging", "overlays off", "no chains")
    result = {
        "blender": bpy.app.version_string,
        "gpu_backend": _backend(),
        "chains": 4,
        "redraws_by": measured["mode"],
        "batches": measured["batches"],
        "steady_redraws_that_read": measured["steady_redraws_that_read"],
        "change_redraws_that_read": measured["change_redraws_that_read"],
        "overlays_off_redraws_not_seen_off": measured["overlays_off_redraws_not_seen_off"],
        "bar_ms": BAR_MS,
        "cases": rows,
        "after_solve_handler": handlers,
        "meets_bar": {case: rows[case]["median_ms"] <= BAR_MS for case in whole},
    }
    lines = [
        f"Overlay draw callback per redraw, 4 chains on the metarig, Blender "
        f"{result['blender']} ({result['gpu_backend']}), {rows['steady']['redraws']} redraws "
        f"per case, interleaved, redrawn by {measured['mode']}",
        "",
        "| case | callback median ms | p90 ms | without the draw call, median ms "
        "| the draw call (llvmpipe), median ms | after-solve handler, median ms |",
        "|---|---|---|---|---|---|",
    ]
    for case in whole:
        r = rows[case]
        split = rows.get(case + NO_DRAW)
        extra = "– | –"
        if split is not None:
            extra = f"{split['median_ms']:.4f} | {r['median_ms'] - split['median_ms']:.4f}"
        handler = handlers.get(case)
        extra += f" | {handler['median_ms']:.4f}" if handler else " | –"
        lines.append(f"| {case} | {r['median_ms']:.4f} | {r['p90_ms']:.4f} | {extra} |")
    r = rows[AGAIN]
    lines.append(f"| {AGAIN} | {r['median_ms']:.4f} | {r['p90_ms']:.4f} | – | – | – |")
    r = rows["empty"]
    lines.append(
        f"| empty (the timer alone) | {r['median_ms']:.4f} | {r['p90_ms']:.4f} | – | – | – |"
    )
    lines.append("")
    met = [case for case in whole if result["meets_bar"][case]]
    lines.append(f"Bar ≤ {BAR_MS} ms per redraw: met by {', '.join(met) or 'none'}.")
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
    obj = _setup(args.zip)

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
            _measure_event_loop(obj, args.redraws, finish)
            return
        measured = None
        try:
            measured = _measure(obj, args.redraws)
        except Exception:
            traceback.print_exc()
        finish(measured)

    bpy.app.timers.register(run, first_interval=2.0)


main()
