# SPDX-License-Identifier: GPL-3.0-or-later
"""The live benchmark's scenes and measurements (``scripts/bench_live.py``).

Cost per frame: Rigify human metarigs whose four limbs reach for animated empties, as
Reach IK chains (each solver) or with Blender's IK constraints, timed frame by frame
(:func:`measure_cost`, :func:`breakdown`); the live handler's own cost as the scene grows
around the rig (:func:`scene_size`). Smoothness: figure-eight targets, the largest
turn of any joint and of each limb's bend plane between frames (:func:`smoothness`, also
used by ``tests/blender/test_smoothness.py``). The extension must be installed
(:mod:`reach_ik_tools.extension_install`).
"""

from __future__ import annotations

import importlib
import math
import statistics
import time
from typing import Any

import numpy as np

from reach_ik_tools.blender_session import blender_module
from reach_ik_tools.extension_install import EXTENSION

LIMBS = ("forearm.L", "forearm.R", "shin.L", "shin.R")
COST_BAR = 3.0
#: Iterative solvers timed on the same rig, each as its own scene (bar: a frame within
#: ``ITERATIVE_BAR`` × the triangulation scene's).
ITERATIVE = {"reach_ik_ccd": "ccd", "reach_ik_dls": "jacobian_dls"}
ITERATIVE_BAR = 1.2
SMOOTH_BAR_DEG = 5.0


def add_metarig(scene: Any, name: str) -> Any:
    """The Rigify human metarig in ``scene``, left in pose mode and active."""
    bpy = blender_module()
    window = bpy.context.window
    if window is not None:
        window.scene = scene
    with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
        if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
            bpy.ops.object.mode_set(mode="OBJECT")
        bpy.ops.object.armature_human_metarig_add()
        obj = bpy.context.view_layer.objects.active
    obj.name = name
    return obj


def limb_geometry(obj: Any, tip: str) -> tuple[np.ndarray, float, np.ndarray]:
    """World root head ``(3,)``, reach (m) and unit rest direction root→tip's tail ``(3,)``."""
    bones = obj.data.bones
    root = bones[tip].parent
    m = np.array(obj.matrix_world)
    head = (m @ np.append(np.array(root.head_local), 1.0))[:3]
    tail = (m @ np.append(np.array(bones[tip].tail_local), 1.0))[:3]
    reach = float(root.length + bones[tip].length) * float(max(obj.matrix_world.to_scale()))
    return head, reach, (tail - head) / np.linalg.norm(tail - head)


def add_target(scene: Any, name: str) -> Any:
    bpy = blender_module()
    empty = bpy.data.objects.new(name, None)
    empty.empty_display_size = 0.05
    scene.collection.objects.link(empty)
    return empty


def random_path(
    head: np.ndarray, reach: float, frames: int, step: int, rng: np.random.Generator
) -> list[tuple[int, np.ndarray]]:
    """Keys every ``step`` frames at random points within 40–90 % of the reach."""
    keys = []
    for f in range(1, frames + 1, step):
        d = rng.normal(size=3)
        keys.append((f, head + d / np.linalg.norm(d) * reach * rng.uniform(0.4, 0.9)))
    return keys


def figure_eight(head: np.ndarray, reach: float, direction: np.ndarray, frames: int) -> Any:
    """``(frames, 3)`` points of a lemniscate of Gerono centred 60 % of the reach along
    ``direction`` from the root, 25 % of the reach wide, in the plane across ``direction``."""
    u = np.cross(direction, [0.0, 1.0, 0.0])
    if np.linalg.norm(u) < 1e-6:
        u = np.cross(direction, [1.0, 0.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(direction, u)
    t = np.linspace(0.0, 2.0 * math.pi, frames, endpoint=False)
    a = 0.25 * reach
    centre = head + 0.6 * reach * direction
    return centre + np.outer(a * np.cos(t), u) + np.outer(a * np.sin(t) * np.cos(t), v)


def key_path(target: Any, keys: list[tuple[int, np.ndarray]], linear: bool = False) -> None:
    for f, p in keys:
        target.location = p
        target.keyframe_insert("location", frame=f)
    if linear:
        for fc in fcurves(target):
            for kp in fc.keyframe_points:
                kp.interpolation = "LINEAR"


def fcurves(obj: Any) -> list[Any]:
    """The F-curves of an object's action (legacy actions, and layered ones in 4.4+)."""
    action = obj.animation_data.action
    if hasattr(action, "fcurves") and len(action.fcurves):
        return list(action.fcurves)
    slot = obj.animation_data.action_slot
    out = []
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot)
            if bag is not None:
                out.extend(bag.fcurves)
    return out


def select_bone(obj: Any, name: str) -> None:
    """Select only the pose bone ``name`` and make it the active bone (4.2–5.x).

    Only the bones whose state changes are written: each write of a bone's selection costs
    time in proportion to the armature's size (about 0.1 ms a bone on the 4000-bone rig of
    :mod:`reach_ik_tools.live_rigs`, where writing every bone for each of its 40 chains took
    ~18 s); the selection left is the same."""
    for pb in obj.pose.bones:
        owner = pb if hasattr(pb, "select") else pb.bone
        wanted = pb.name == name
        if owner.select != wanted:
            owner.select = wanted
    obj.data.bones.active = obj.data.bones[name]


def add_reach_chains(scene: Any, obj: Any, targets: dict[str, Any], solver: str) -> None:
    """A Reach IK chain per limb through the *Add Reach IK* operator (length 2)."""
    bpy = blender_module()
    with bpy.context.temp_override(
        scene=scene, view_layer=scene.view_layers[0], active_object=obj, object=obj
    ):
        bpy.context.view_layer.objects.active = obj
        if obj.mode != "POSE":
            bpy.ops.object.mode_set(mode="POSE")
        for tip, target in targets.items():
            select_bone(obj, tip)
            for other in scene.objects:
                other.select_set(other == target)
            bpy.ops.reach_ik.add(chain_length=2, solver=solver)
            assert obj.pose.bones[tip].reach_ik.target == target


def add_blender_ik(obj: Any, targets: dict[str, Any]) -> None:
    for tip, target in targets.items():
        con = obj.pose.bones[tip].constraints.new("IK")
        con.target = target
        con.chain_count = 2


def time_frames(scene: Any, frames: int) -> list[float]:
    """Seconds taken by ``scene.frame_set`` for each frame 1…frames."""
    out = []
    clock = time.perf_counter
    for f in range(1, frames + 1):
        t0 = clock()
        scene.frame_set(f)
        out.append(clock() - t0)
    return out


CHAIN_BONES: tuple[str, ...] = ("upper_arm.L", "forearm.L", "upper_arm.R", "forearm.R")
CHAIN_BONES += ("thigh.L", "shin.L", "thigh.R", "shin.R")


def _write_only(scene: Any, _depsgraph: Any) -> None:
    """Frame-change handler of the ``write_only`` scene: writes the eight limb bones'
    rotations (alternating between two fixed values) without solving anything — the cost of
    showing a pose from a handler, whatever computes it."""
    if scene.name != "write_only":
        return
    obj = scene.objects["rig_write_only"]
    w = 0.99 if scene.frame_current % 2 else 0.98
    for name in CHAIN_BONES:
        obj.pose.bones[name].rotation_quaternion = (w, math.sqrt(1.0 - w * w), 0.0, 0.0)


def build_cost_scenes(frames: int, seed: int = 1) -> dict[str, Any]:
    """Four scenes with identical metarigs and target paths: Reach IK, Blender IK, no IK,
    and no IK with a handler that only writes the limb bones' rotations."""
    bpy = blender_module()
    bpy.ops.wm.read_homefile(use_empty=True)
    scenes = {}
    for kind in ("reach_ik", *ITERATIVE, "blender_ik", "no_ik", "write_only"):
        scene = bpy.context.scene if kind == "reach_ik" else bpy.data.scenes.new(kind)
        scene.name = kind
        scene.frame_start, scene.frame_end = 1, frames
        obj = add_metarig(scene, f"rig_{kind}")
        rng = np.random.default_rng(seed)
        targets = {}
        for tip in LIMBS:
            head, reach, _ = limb_geometry(obj, tip)
            target = add_target(scene, f"{kind}_{tip}_target")
            key_path(target, random_path(head, reach, frames, 20, rng))
            targets[tip] = target
        if kind == "reach_ik":
            add_reach_chains(scene, obj, targets, "triangulation")
        elif kind in ITERATIVE:
            add_reach_chains(scene, obj, targets, ITERATIVE[kind])
        elif kind == "blender_ik":
            add_blender_ik(obj, targets)
        scenes[kind] = scene
    return scenes


def measure_cost(frames: int, rounds: int) -> dict[str, Any]:
    """Time ``frame_set`` frame by frame in the scenes, interleaved frame by frame (the order
    rotating) so that load from other processes hits them alike."""
    scenes = build_cost_scenes(frames)
    bpy = blender_module()
    bpy.app.handlers.frame_change_post.append(_write_only)
    kinds = list(scenes)
    per_frame: dict[str, list[float]] = {k: [] for k in kinds}
    ratios: list[float] = []
    for scene in scenes.values():  # warm up: caches, and every frame stored once
        time_frames(scene, frames)
    clock = time.perf_counter
    for r in range(rounds):
        for f in range(1, frames + 1):
            shift = (f + r) % len(kinds)
            took = {}
            for kind in kinds[shift:] + kinds[:shift]:
                t0 = clock()
                scenes[kind].frame_set(f)
                took[kind] = clock() - t0
                per_frame[kind].append(took[kind])
            ratios.append(took["reach_ik"] / took["blender_ik"])
    bpy.app.handlers.frame_change_post.remove(_write_only)
    med = {k: statistics.median(v) * 1e3 for k, v in per_frame.items()}
    return {
        "frames": frames,
        "rounds": rounds,
        "median_ms_per_frame": med,
        "ratio_reach_vs_blender_ik": med["reach_ik"] / med["blender_ik"],
        "ratio_vs_triangulation": {k: med[k] / med["reach_ik"] for k in ITERATIVE},
        "bar_ratio_vs_triangulation": ITERATIVE_BAR,
        "median_paired_ratio": statistics.median(ratios),
        "bar_ratio": COST_BAR,
        "reach_ik_breakdown_ms": breakdown(scenes["reach_ik"], frames),
    }


#: The core's entry point the live path calls for each chain: ``core.Solver.pose``.
CORE_SOLVE = "pose"


def breakdown(scene: Any, frames: int) -> dict[str, float]:
    """Where a Reach IK frame goes, after the timed rounds (timers cost a little): median ms
    per frame of the whole ``frame_set``, of the live handler's Python (solving and
    writing), and of the core's solve calls within it (:data:`CORE_SOLVE`). The records of
    stored frames are dropped first (a new generation, as after an edit that changes no
    pose), so every frame is solved and, the solutions being those keyed, nothing written."""
    handlers: Any = importlib.import_module(f"{EXTENSION}.ik_addon.handlers")
    core: Any = importlib.import_module(f"{EXTENSION}.core")
    live_state: Any = importlib.import_module(f"{EXTENSION}.ik_addon.live_state")
    live_state.live.invalidate()
    spent = {"handler": 0.0, "core_solve": 0.0}
    clock = time.perf_counter

    def timed(fn: Any, key: str) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += clock() - t0

        return run

    solve_scene = handlers.solve_scene
    solver_class = core.Solver
    pose = getattr(solver_class, CORE_SOLVE)
    handlers.solve_scene = timed(solve_scene, "handler")
    setattr(solver_class, CORE_SOLVE, timed(pose, "core_solve"))
    samples: dict[str, list[float]] = {"frame_set": [], "handler": [], "core_solve": []}
    try:
        for f in range(1, frames + 1):
            spent.update(handler=0.0, core_solve=0.0)
            t0 = clock()
            scene.frame_set(f)
            samples["frame_set"].append(clock() - t0)
            samples["handler"].append(spent["handler"])
            samples["core_solve"].append(spent["core_solve"])
    finally:
        handlers.solve_scene = solve_scene
        setattr(solver_class, CORE_SOLVE, pose)
    if not any(samples["core_solve"]):
        raise RuntimeError(f"the live handler never called Solver.{CORE_SOLVE}")
    return {k: statistics.median(v) * 1e3 for k, v in samples.items()}


#: Unrelated objects added around the rig by :func:`scene_size`: none, then these many.
SCENE_SIZES = (0, 1000, 5000)


def scene_size(frames: int, sizes: tuple[int, ...] = SCENE_SIZES) -> list[dict[str, float]]:
    """The live handler's Python per frame (median ms over ``frames`` frames) in the
    metarig scene with its four limb chains (triangulation) as the scene grows: with
    ``sizes`` empties more (unanimated, unrelated to the rig), every frame stored first,
    so a frame solves and writes nothing (steady state) and what grows with the scene is
    the handler's own look at it; beside it ``frame_set`` whole."""
    bpy = blender_module()
    handlers: Any = importlib.import_module(f"{EXTENSION}.ik_addon.handlers")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    obj = add_metarig(scene, "rig")
    rng = np.random.default_rng(1)
    targets = {}
    for tip in LIMBS:
        head, reach, _ = limb_geometry(obj, tip)
        targets[tip] = add_target(scene, f"{tip}_target")
        key_path(targets[tip], random_path(head, reach, frames, 20, rng))
    add_reach_chains(scene, obj, targets, "triangulation")
    solve_scene = handlers.solve_scene
    spent = [0.0]
    clock = time.perf_counter

    def timed(*args: Any) -> Any:
        t0 = clock()
        try:
            return solve_scene(*args)
        finally:
            spent[0] += clock() - t0

    rows = []
    handlers.solve_scene = timed
    try:
        for size in sizes:
            for _ in range(size + 1 + len(LIMBS) - len(scene.objects)):  # (rig, targets)
                scene.collection.objects.link(bpy.data.objects.new("extra", None))
            time_frames(scene, frames)  # (every frame stored)
            whole, handler = [], []
            for f in range(1, frames + 1):
                spent[0] = 0.0
                t0 = clock()
                scene.frame_set(f)
                whole.append(clock() - t0)
                handler.append(spent[0])
            rows.append(
                {
                    "extra_objects": size,
                    "handler_ms": statistics.median(handler) * 1e3,
                    "frame_set_ms": statistics.median(whole) * 1e3,
                }
            )
    finally:
        handlers.solve_scene = solve_scene
    return rows


def _bend_normal(points: np.ndarray) -> np.ndarray:
    n = np.cross(points[1] - points[0], points[2] - points[0])
    return n / np.linalg.norm(n)


def _local_rotation(obj_eval: Any, name: str) -> np.ndarray:
    """The local rotation ``(4,)`` wxyz the evaluated pose shows for a bone (constraints
    included): ``(M_parent · R_parent⁻¹ · R)⁻¹ · M`` from posed matrices ``M`` and rest
    matrices ``R``, scale removed."""
    pb = obj_eval.pose.bones[name]
    rest = np.array(pb.bone.matrix_local, dtype=np.float64)
    if pb.parent is not None:
        parent_rest = np.array(pb.parent.bone.matrix_local, dtype=np.float64)
        rest = np.array(pb.parent.matrix, dtype=np.float64) @ np.linalg.inv(parent_rest) @ rest
    local = (np.linalg.inv(rest) @ np.array(pb.matrix, dtype=np.float64))[:3, :3]
    mathutils: Any = importlib.import_module("mathutils")
    return np.array(
        mathutils.Matrix((local / np.linalg.norm(local, axis=0)).tolist()).to_quaternion()
    )


def smoothness(solver: str, frames: int = 240) -> dict[str, Any]:
    """Figure-eight targets for the four limbs, solved live with ``solver``; returns the
    largest joint turn and bend-plane change per frame (degrees) per limb."""
    bpy = blender_module()
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    obj = add_metarig(scene, "rig")
    targets = {}
    paths = {}
    for tip in LIMBS:
        head, reach, direction = limb_geometry(obj, tip)
        target = add_target(scene, f"{tip}_target")
        paths[tip] = figure_eight(head, reach, direction, frames)
        key_path(target, [(f + 1, p) for f, p in enumerate(paths[tip])], linear=True)
        targets[tip] = target
    add_reach_chains(scene, obj, targets, solver)
    result: dict[str, Any] = {}
    prev: dict[str, Any] = {}
    worst = {tip: {"joint_deg": 0.0, "bend_plane_deg": 0.0, "error_m": 0.0} for tip in LIMBS}
    for f in range(1, frames + 1):
        scene.frame_set(f)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        ev = obj.evaluated_get(depsgraph)
        world = np.array(ev.matrix_world)
        for tip in LIMBS:
            root = obj.data.bones[tip].parent.name
            mats = [world @ np.array(ev.pose.bones[n].matrix) for n in (root, tip)]
            length = obj.data.bones[tip].length
            joints = np.array(
                [mats[0][:3, 3], mats[1][:3, 3], (mats[1] @ np.array([0, length, 0, 1.0]))[:3]]
            )
            quats = [_local_rotation(ev, n) for n in (root, tip)]
            normal = _bend_normal(joints)
            err = float(np.linalg.norm(joints[2] - paths[tip][f - 1]))
            w = worst[tip]
            w["error_m"] = max(w["error_m"], err)
            if tip in prev:
                p_quats, p_normal = prev[tip]
                for q, pq in zip(quats, p_quats, strict=True):
                    turn = 2.0 * math.degrees(math.acos(min(1.0, abs(float(q @ pq)))))
                    w["joint_deg"] = max(w["joint_deg"], turn)
                change = math.degrees(math.acos(max(-1.0, min(1.0, float(normal @ p_normal)))))
                w["bend_plane_deg"] = max(w["bend_plane_deg"], change)
            prev[tip] = (quats, normal)
    result["limbs"] = worst
    result["max_joint_deg"] = max(w["joint_deg"] for w in worst.values())
    result["max_bend_plane_deg"] = max(w["bend_plane_deg"] for w in worst.values())
    result["max_error_m"] = max(w["error_m"] for w in worst.values())
    result["bar_deg"] = SMOOTH_BAR_DEG
    return result
