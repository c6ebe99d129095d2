# SPDX-License-Identifier: GPL-3.0-or-later
"""Single-solve cost of every method against Blender's own IK, and batched throughput.

Run with the ``bpy`` module (``make bench``)::

    .venv/bin/python scripts/bench_solvers.py [--zip dist/reach_ik-<version>.zip] [--out DIR]
                                              [--quick] [--seed N]

It installs the extension zip (built with ``make extension`` when not given) into a
temporary Blender user folder, as a user's *Install from Disk* does, then:

1. **Per method and chain** — straight-ish chains of 2, 3, 5 and 10 bones (1 m in all, a
   slight bend toward the hinge's allowed side), **free** (no limits), **hinge** like a
   Blender arm or leg (root free; every other bone a hinge: Lock IK Y and Z, X limited to
   the one-sided range 0°–150°) and **ball** (the hinges, and the other bones limited like a
   shoulder or hip: X in −60°–80°, Z in −40°–40°, Blender's *Limit X*/*Limit Z*). Two
   armatures per chain in separate scenes: one with a Reach IK chain (the *Add Reach IK*
   operator, the method under test), one with Blender's IK constraint (Standard solver,
   same chain length). Targets: forward kinematics of random admissible poses (reachable
   by construction; every method, round — the warm-up included — and the core column has
   its own, so no solve repeats inputs). For each target, interleaved: Blender's IK
   (set the target empty's location + ``view_layer.update()``), the add-on's live solve of
   the chain (``ik_addon.evaluate.solve_chains``, what the frame handler calls, with the
   target already evaluated; the handler is held off during that update, so the timed
   call is the one solve of those inputs, as the handler's is on a real update — until
   0.4.0 the handler solved them first and the timed call was a second solve on warm
   state, some 0.1 ms cheaper on the 2-bone chains), and
   ``core.Solver(chain, method).pose`` (what the live solve calls for the chain, without
   the add-on around it) on the same chain and base-frame targets of its own. Reported
   per row: median µs of each, the ratios to Blender's IK (of the medians, the bars'
   measure; and *per target*: the median over targets of the live solve's time over
   Blender's on the same target, timed back to back, so that the shared machine's drift
   cancels — on the 5-bone ball chain at 0.8.6, Blender's median ranged 129–278 µs between
   rows and runs and the rows' ratios of medians 1.48–2.38× over three runs, the
   per-target ratios 1.62–2.09× over the two of them that had the column), and reach
   (share of targets within 1e-3 × chain length) and median error of each solver.
   Bars (issue 12): every method ≤ 2× Blender's IK on 2- and 5-bone chains (triangulation
   ≤ 0.5×).
2. **Batched** — the triangulation paper's 10,000 targets on chain U (links 9, 9, 9, 9, 4,
   box of side 60, ``scripts/bench_triangulation.py``), default options (and triangulation
   with the paper's options, CCD from the given start), one ``core.solve`` per method
   (median of 3 calls; 21 after a warm-up call for triangulation): bars DLS ≤ 0.3 s,
   CCD ≤ 0.2 s, triangulation ≤ 5 ms.

3. **Anywhere within reach** — the ball chains of 2 and 5 bones, targets in random
   directions at 0.2–0.95 of the chain's length (many of them out of reach within the
   limits, as when an animator drags a hand where the shoulder cannot take it), one round
   (after a warm-up round) of the same interleaved timing: the median, 90th percentile and
   largest single solve of each column, and the share reached. No bar: the search of a
   target it cannot meet restarts (:func:`core.triangulation_limits.reach_within_limits`),
   and this part shows what that costs against Blender's IK.
4. **Orientation goals** — *Rotation* on both (Blender's IK constraint and the Reach IK
   chain, its weight at the default 0.5), targets and goal orientations of the last bone
   from forward kinematics of random admissible poses (both goals reachable by
   construction), on the chains whose last joint swings both ways (:data:`ORIENTED`; a
   last hinge takes Reach IK's triangulation and FABRIK to the position alone,
   ``core/wrist.py``), 40 targets × 2 rounds of the same interleaved timing. Reached: the
   position as above and the last bone's orientation within :data:`REACHED_DEG`. No bar.

Writes ``bench_solvers.json``, ``.md`` and ``.png`` (ratios to Blender's IK) to ``--out``.
"""

from __future__ import annotations

import importlib
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: reach_ik_tools

from reach_ik_tools import bench_report
from reach_ik_tools.blender_session import blender_module
from reach_ik_tools.extension_install import EXTENSION, default_zip, install_extension

BONES = (2, 3, 5, 10)
KNEE_RANGE_DEG = (0.0, 150.0)
BALL_X_DEG, BALL_Z_DEG = (-60.0, 80.0), (-40.0, 40.0)
LIMITS = ("free", "hinge", "ball")
BEND = 0.1
"""Rest bend (radians) between consecutive bones, toward the hinges' allowed side."""
REACHED = 1e-3
"""A target counts as reached within this fraction of the chain's length."""
BAR_BLENDER = 2.0
BAR_TRIANGULATION = 0.5
BARRED_BONES = (2, 5)
BATCH_BARS_S = {"jacobian_dls": 0.3, "ccd": 0.2, "triangulation": 0.005}


def _context(scene: Any, obj: Any) -> Any:
    bpy = blender_module()
    return bpy.context.temp_override(
        scene=scene,
        view_layer=scene.view_layers[0],
        active_object=obj,
        object=obj,
        selected_objects=[obj],
    )


def add_chain(scene: Any, name: str, bones: int, limits: str) -> Any:
    """An armature of ``bones`` connected bones (1 m in all) rising along +Z and bending
    gently toward −Y (positive X rotations, the hinges' allowed side), with ``limits`` (one
    of :data:`LIMITS`, module docstring)."""
    bpy = blender_module()
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    scene.collection.objects.link(obj)
    scene.view_layers[0].objects.active = obj
    with _context(scene, obj):
        bpy.ops.object.mode_set(mode="EDIT")
        head = np.zeros(3)
        parent = None
        length = 1.0 / bones
        for i in range(bones):
            eb = arm.edit_bones.new(f"b{i}")
            angle = BEND * i
            tail = head + length * np.array([0.0, -math.sin(angle), math.cos(angle)])
            eb.head, eb.tail, eb.roll = head.tolist(), tail.tolist(), 0.0
            if parent is not None:
                eb.parent, eb.use_connect = parent, True
            parent, head = eb, tail
        bpy.ops.object.mode_set(mode="POSE")
    for i, pb in enumerate(obj.pose.bones):
        pb.rotation_mode = "QUATERNION"
        if limits != "free" and i % 2 == 1:
            pb.lock_ik_y = pb.lock_ik_z = True
            pb.use_ik_limit_x = True
            pb.ik_min_x, pb.ik_max_x = (math.radians(a) for a in KNEE_RANGE_DEG)
        elif limits == "ball":
            pb.use_ik_limit_x = pb.use_ik_limit_z = True
            pb.ik_min_x, pb.ik_max_x = (math.radians(a) for a in BALL_X_DEG)
            pb.ik_min_z, pb.ik_max_z = (math.radians(a) for a in BALL_Z_DEG)
    return obj


def add_empty(scene: Any, name: str) -> Any:
    bpy = blender_module()
    empty = bpy.data.objects.new(name, None)
    scene.collection.objects.link(empty)
    return empty


def add_reach_chain(scene: Any, obj: Any, target: Any, bones: int, method: str) -> None:
    """A Reach IK chain on the tip through the *Add Reach IK* operator."""
    bpy = blender_module()
    tip = f"b{bones - 1}"
    with _context(scene, obj):
        bpy.context.view_layer.objects.active = obj
        if obj.mode != "POSE":
            bpy.ops.object.mode_set(mode="POSE")
        for pb in obj.pose.bones:
            if hasattr(pb, "select"):
                pb.select = pb.name == tip
            else:
                pb.bone.select = pb.name == tip
        obj.data.bones.active = obj.data.bones[tip]
        for other in scene.objects:
            other.select_set(other == target)
        bpy.ops.reach_ik.add(chain_length=bones, solver=method)
    settings = obj.pose.bones[tip].reach_ik
    made = settings.target
    if made != target:  # the operator made its own target empty: use ours
        settings.target = target
        bpy.data.objects.remove(made)


#: Where part 1's targets lie (forward kinematics of admissible poses) and part 3's.
SPREADS = ("admissible", "within_reach", "oriented")
#: Part 3's targets: distance from the root as a share of the chain's length.
WITHIN_REACH = (0.2, 0.95)
#: Part 4's chains (bones, limits): those whose last joint swings both ways.
ORIENTED = ((2, "free"), (3, "free"), (3, "hinge"), (3, "ball"), (5, "free"), (5, "hinge"))
#: Part 4: a goal orientation counts as reached within this angle (degrees).
REACHED_DEG = 0.1


def targets_for(
    chain: Any, core: Any, count: int, rng: np.random.Generator, spread: str = "admissible"
) -> np.ndarray:
    """``(count, 3)`` base-frame targets: forward kinematics of random admissible poses, or
    (``spread="within_reach"``) random directions at :data:`WITHIN_REACH` of the chain's
    length."""
    return goals_for(chain, core, count, rng, spread)[0]


def goals_for(
    chain: Any, core: Any, count: int, rng: np.random.Generator, spread: str = "admissible"
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`targets_for`'s targets ``(count, 3)`` and the last joint's frame ``(count, 4)``
    (wxyz, base frame) in the poses they come from (identities for ``"within_reach"``)."""
    if spread not in SPREADS:
        raise ValueError(f"spread {spread!r}: need one of {', '.join(SPREADS)}")
    if spread == "within_reach":
        d = rng.normal(size=(count, 3))
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        return d * rng.uniform(*WITHIN_REACH, size=(count, 1)) * chain.reach, np.tile(
            [1.0, 0.0, 0.0, 0.0], (count, 1)
        )
    q = core.rotations.normalize(rng.normal(size=(count, chain.n_joints, 4)))
    for i, lim in enumerate(chain.limits):
        q[:, i] = lim.project(q[:, i])
    positions, frames = core.forward_kinematics(chain, q)
    return positions[:, -1], frames[:, -1]


def _median_us(values: list[float]) -> float:
    return statistics.median(values) * 1e6


def bench_chain(
    bones: int,
    limits: str,
    methods: list[str],
    count: int,
    rounds: int,
    seed: int,
    spread: str = "admissible",
) -> list[dict[str, Any]]:
    """Rows of part 1 (or part 3, ``spread="within_reach"``) for one chain shape, one per
    method (see module docstring)."""
    bpy = blender_module()
    ev: Any = importlib.import_module(f"{EXTENSION}.ik_addon.evaluate")
    chain_spec: Any = importlib.import_module(f"{EXTENSION}.ik_addon.chain_spec")
    pose_state: Any = importlib.import_module(f"{EXTENSION}.ik_addon.pose_state")
    live_state: Any = importlib.import_module(f"{EXTENSION}.ik_addon.live_state")
    rig_module: Any = importlib.import_module(f"{EXTENSION}.ik_addon.rig")
    affine: Any = importlib.import_module(f"{EXTENSION}.ik_addon.affine")
    core: Any = importlib.import_module(f"{EXTENSION}.core")
    from mathutils import Matrix, Quaternion, Vector

    bpy.ops.wm.read_homefile(use_empty=True)
    scene_re = bpy.context.scene  # (the operator needs the context's scene)
    scene_re.name = "reach_ik"
    scene_bl = bpy.data.scenes.new("blender_ik")
    rig_bl = add_chain(scene_bl, "rig_blender", bones, limits)
    rig_re = add_chain(scene_re, "rig_reach", bones, limits)
    target_bl = add_empty(scene_bl, "target_blender")
    target_re = add_empty(scene_re, "target_reach")
    tip = f"b{bones - 1}"
    con = rig_bl.pose.bones[tip].constraints.new("IK")
    con.target, con.chain_count = target_bl, bones
    add_reach_chain(scene_re, rig_re, target_re, bones, methods[0])
    oriented = spread == "oriented"
    con.use_rotation = rig_re.pose.bones[tip].reach_ik.use_rotation = oriented
    options = core.SolveOptions(position_weight=0.5 if oriented else 1.0)
    layer_bl, layer_re = scene_bl.view_layers[0], scene_re.view_layers[0]
    layer_re.update()
    dg = layer_re.depsgraph
    spec = chain_spec.read_spec(rig_re.pose.bones[tip])
    rig = chain_spec.rig_chain(rig_re, tip, spec.chain_length, spec.use_tail)
    chain = rig.chain
    state = pose_state._PoseState(rig_re.evaluated_get(dg))
    parent = state.parent_matrix(rig)
    base_rows = rig_module.base_rows(
        rig,
        affine.rows_of(rig_re.matrix_world),
        None if parent is None else affine.rows_of(parent),
        rig_re.pose.bones[rig.bone_names[0]].location[:],
    )
    base = Matrix(affine.to_array(base_rows, None).tolist())
    rng = np.random.default_rng(seed + 100 * bones + LIMITS.index(limits))
    # Targets of their own for every method, round (the warm-up too) and core column: no
    # solve sees inputs another has seen (the core memoises its costliest one-target
    # answers on their exact inputs).
    shape = (len(methods), 2, rounds + 1, count)
    local, frames = goals_for(chain, core, math.prod(shape), rng, spread)
    local, frames = local.reshape((*shape, 3)), frames.reshape((*shape, 4))

    def world(t: np.ndarray, q: np.ndarray) -> Any:
        """The target's world matrix for base-frame target ``t`` and frame ``q``."""
        return base @ Matrix.Translation(t.tolist()) @ Quaternion(q.tolist()).to_matrix().to_4x4()

    def missed_deg(rotations: Any, q: np.ndarray) -> float:
        """The angle (degrees) from the last joint's frame in pose ``rotations`` to ``q``."""
        w = core.forward_kinematics(chain, np.asarray(rotations, dtype=float))[1][-1]
        turn = core.rotations.multiply(core.rotations.conjugate(q), w)
        return math.degrees(float(core.rotations.angle(turn)))

    rows = []
    clock = time.perf_counter
    for m, method in enumerate(methods):
        rig_re.pose.bones[tip].reach_ik.solver = method
        live_state.live.invalidate()
        times: dict[str, list[float]] = {"blender": [], "live": [], "core_pose": []}
        errors: dict[str, list[float]] = {"blender": [], "live": [], "core_pose": []}
        angles: dict[str, list[float]] = {"blender": [], "live": [], "core_pose": []}
        for r in range(rounds + 1):  # round 0 warms up
            for k, (t_live, t_local) in enumerate(zip(local[m, 0, r], local[m, 1, r], strict=True)):
                t_world = base @ Vector(t_live.tolist())
                if oriented:
                    target_bl.matrix_world = target_re.matrix_world = world(
                        t_live, frames[m, 0, r, k]
                    )
                target_bl.location = t_world
                t0 = clock()
                layer_bl.update()
                took_bl = clock() - t0
                tail = rig_bl.matrix_world @ rig_bl.pose.bones[tip].tail
                tip_turn = (rig_bl.matrix_world @ rig_bl.pose.bones[tip].matrix).to_quaternion()
                target_re.location = t_world
                live_state.live.busy = True  # (the update evaluates; the timed call solves)
                try:
                    layer_re.update()
                finally:
                    live_state.live.busy = False
                t0 = clock()
                report = ev.solve_chains(rig_re, dg)
                took_live = clock() - t0
                t0 = clock()
                goal = frames[m, 1, r, k] if oriented else None
                pose = core.Solver(chain, method, options).pose(t_local, target_rotation=goal)
                took_one = clock() - t0
                if r == 0:
                    continue
                times["blender"].append(took_bl)
                times["live"].append(took_live)
                times["core_pose"].append(took_one)
                if r == 1:
                    errors["blender"].append((tail - t_world).length)
                    errors["live"].append(report.poses[0].error if report.poses else math.inf)
                    errors["core_pose"].append(
                        float(np.linalg.norm(np.array(pose.points[-1]) - t_local))
                    )
                    if oriented:
                        turn = world(t_live, frames[m, 0, r, k]).to_quaternion()
                        angles["blender"].append(
                            math.degrees(turn.rotation_difference(tip_turn).angle)
                        )
                        angles["live"].append(
                            missed_deg(report.poses[0].rotations, frames[m, 0, r, k])
                            if report.poses
                            else 180.0
                        )
                        angles["core_pose"].append(missed_deg(pose.rotations, frames[m, 1, r, k]))
        med = {k: _median_us(v) for k, v in times.items()}
        row = {
            "bones": bones,
            "limits": limits,
            "spread": spread,
            "method": method,
            "median_us": med,
            "p90_us": {k: float(np.quantile(v, 0.9)) * 1e6 for k, v in times.items()},
            "max_us": {k: max(v) * 1e6 for k, v in times.items()},
            "ratio_live_vs_blender": med["live"] / med["blender"],
            "paired_live_vs_blender": statistics.median(
                a / b for a, b in zip(times["live"], times["blender"], strict=True)
            ),
            "ratio_core_pose_vs_blender": med["core_pose"] / med["blender"],
            "reached_pct": {
                k: 100.0
                * float(
                    np.mean(
                        (np.asarray(v) <= REACHED * chain.reach)
                        & (np.asarray(angles[k] or 0.0) <= REACHED_DEG)
                    )
                )
                for k, v in errors.items()
            },
            "median_error": {k: float(np.median(v)) for k, v in errors.items()},
        }
        if oriented:
            row["median_angle_deg"] = {k: float(np.median(v)) for k, v in angles.items()}
        rows.append(row)
        print(
            f"{bones} {limits} {method}: live {med['live']:.0f} µs, "
            f"core pose {med['core_pose']:.0f} µs, Blender {med['blender']:.0f} µs",
            flush=True,
        )
    return rows


#: Calls per batched median: triangulation's milliseconds need more than the others' seconds.
BATCH_RUNS = {"triangulation": 21}


def bench_batched(methods: list[str], seed: int) -> dict[str, Any]:
    """Part 2: the paper's 10,000 targets on chain U, one ``solve`` per method (median of 3
    calls, of 21 after a warm-up call for triangulation; its paper options too)."""
    core: Any = importlib.import_module(f"{EXTENSION}.core")
    chain = core.Chain.from_lengths([9, 9, 9, 9, 4])
    targets = np.random.default_rng(seed).uniform(-30.0, 30.0, size=(10_000, 3))
    out = {}
    variants: list[tuple[str, dict[str, Any]]] = [(m, {}) for m in methods]
    if "triangulation" in methods:
        variants.append(("triangulation", {"delta_b_deg": 180.0, "bend_plane": "minimal"}))
    variants.append(("ccd", {"ccd_start": "initial"}))
    for method, options in variants:
        runs = []
        count = BATCH_RUNS.get(method, 3)
        if count > 3:
            core.solve(chain, targets, method=method, **options)
        for _ in range(count):
            t0 = time.perf_counter()
            res = core.solve(chain, targets, method=method, **options)
            runs.append(time.perf_counter() - t0)
        reachable = np.linalg.norm(targets, axis=1) <= chain.reach
        if not options:
            key = method
        elif method == "ccd":
            key = f"{method} (start as given)"
        else:
            key = f"{method} (paper options)"
        out[key] = {
            "median_s": statistics.median(runs),
            "runs": count,
            "bar_s": None if method == "ccd" and options else BATCH_BARS_S.get(method),
            "reached_pct_of_reachable": 100.0 * float(np.mean(res.converged[reachable])),
            "mean_iterations": float(np.mean(res.iterations)),
            "load_average": os.getloadavg()[0],
        }
        print(f"batched {key}: {1e3 * statistics.median(runs):.2f} ms", flush=True)
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"### Single solves against Blender's IK ({report['targets']} targets × "
        f"{report['rounds']} rounds, interleaved; Blender {report['blender']})",
        "",
        "| bones | limits | method | Blender IK µs | live µs | core pose µs | live / Blender "
        "| per target | core pose / Blender | reached % (Blender / live / core pose) | median "
        "error (Blender / core pose) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        med, reached, err = row["median_us"], row["reached_pct"], row["median_error"]
        lines.append(
            f"| {row['bones']} | {row['limits']} | {row['method']} "
            f"| {med['blender']:.0f} | {med['live']:.0f} | {med['core_pose']:.0f} "
            f"| **{row['ratio_live_vs_blender']:.2f}×** | {row['paired_live_vs_blender']:.2f}× "
            f"| {row['ratio_core_pose_vs_blender']:.2f}× "
            f"| {reached['blender']:.0f} / {reached['live']:.0f} / {reached['core_pose']:.0f} "
            f"| {err['blender']:.1e} / {err['core_pose']:.1e} |"
        )
    lines += [
        "",
        f"### Anywhere within reach: ball chains, targets at {WITHIN_REACH[0]:g}–"
        f"{WITHIN_REACH[1]:g} of the length in random directions ({report['within_reach_targets']}"
        " targets, one round)",
        "",
        "| bones | method | Blender IK µs median / p90 / max | live µs median / p90 / max "
        "| reached % (Blender / live) |",
        "|---|---|---|---|---|",
    ]
    for row in report["within_reach"]:
        med, p90, top, reached = row["median_us"], row["p90_us"], row["max_us"], row["reached_pct"]
        lines.append(
            f"| {row['bones']} | {row['method']} "
            f"| {med['blender']:.0f} / {p90['blender']:.0f} / {top['blender']:.0f} "
            f"| {med['live']:.0f} / {p90['live']:.0f} / {top['live']:.0f} "
            f"| {reached['blender']:.0f} / {reached['live']:.0f} |"
        )
    lines += [
        "",
        f"### Orientation goals: *Rotation* on both ({report['oriented_targets']} targets × 2 "
        "rounds; reached: position as above and the last bone within "
        f"{REACHED_DEG:g}°)",
        "",
        "| bones | limits | method | Blender IK µs | live µs | core pose µs | live / Blender "
        "| reached % (Blender / live / core pose) | median angle ° (Blender / live) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["oriented"]:
        med, reached, angle = row["median_us"], row["reached_pct"], row["median_angle_deg"]
        lines.append(
            f"| {row['bones']} | {row['limits']} | {row['method']} "
            f"| {med['blender']:.0f} | {med['live']:.0f} | {med['core_pose']:.0f} "
            f"| {row['ratio_live_vs_blender']:.2f}× "
            f"| {reached['blender']:.0f} / {reached['live']:.0f} / {reached['core_pose']:.0f} "
            f"| {angle['blender']:.1e} / {angle['live']:.1e} |"
        )
    lines += [
        "",
        f"Bars: every method ≤ {BAR_BLENDER:g}× Blender's IK on {BARRED_BONES[0]}- and "
        f"{BARRED_BONES[1]}-bone chains (triangulation ≤ {BAR_TRIANGULATION:g}×). Reached: "
        f"within {REACHED:g} × the chain's length.",
        "",
        "### Batched: 10,000 paper targets on chain U (default options unless noted)",
        "",
        "| method | ms (median) | calls | bar | reached % of reachable | mean iterations "
        "| load average |",
        "|---|---|---|---|---|---|---|",
    ]
    for method, b in report["batched"].items():
        bar = "" if b["bar_s"] is None else f"≤ {1e3 * b['bar_s']:g} ms"
        lines.append(
            f"| {method} | {1e3 * b['median_s']:.2f} | {b['runs']} | {bar} "
            f"| {b['reached_pct_of_reachable']:.2f} | {b['mean_iterations']:.2f} "
            f"| {b['load_average']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def figure(report: dict[str, Any]) -> Any:
    def draw(path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = report["rows"]
        methods = list(dict.fromkeys(r["method"] for r in rows))
        shapes = list(dict.fromkeys((r["bones"], r["limits"]) for r in rows))
        fig, ax = plt.subplots(figsize=(11, 4.5))
        width = 0.8 / len(methods)
        for k, method in enumerate(methods):
            values = [
                next(
                    r["ratio_live_vs_blender"]
                    for r in rows
                    if (r["bones"], r["limits"]) == s and r["method"] == method
                )
                for s in shapes
            ]
            ax.bar(np.arange(len(shapes)) + k * width, values, width, label=method)
        ax.axhline(BAR_BLENDER, color="k", linestyle="--", linewidth=1)
        ax.set_yscale("log")
        ax.set_xticks(np.arange(len(shapes)) + 0.4 - width / 2)
        ax.set_xticklabels([f"{b} {lim}" for b, lim in shapes], fontsize=7)
        ax.set_ylabel("live solve / Blender's IK")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)

    return draw


def main(argv: list[str] | None = None) -> int:
    parser = bench_report.arguments(__doc__, seed=12, quick="fewer targets and rounds")
    parser.add_argument("--zip", type=Path, help="extension zip (default: make extension)")
    args = parser.parse_args(argv)
    zip_path = args.zip or default_zip()
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="reach-ik-bench-"))
    install_extension(zip_path)
    core: Any = importlib.import_module(f"{EXTENSION}.core")
    methods = list(core.METHODS)
    count, rounds = (8, 1) if args.quick else (100, 3)
    rows: list[dict[str, Any]] = []
    for bones in BONES:
        for limits in LIMITS:
            rows += bench_chain(bones, limits, methods, count, rounds, args.seed)
    within_count = 6 if args.quick else 60
    within = []
    for bones in BARRED_BONES:
        within += bench_chain(bones, "ball", methods, within_count, 1, args.seed, "within_reach")
    oriented_count = 6 if args.quick else 40
    oriented = []
    for bones, limits in ORIENTED:
        oriented += bench_chain(bones, limits, methods, oriented_count, 2, args.seed, "oriented")
    batch_methods = [m for m in ("triangulation", "ccd", "jacobian_dls") if m in methods]
    report = {
        "blender": blender_module().app.version_string,
        "targets": count,
        "rounds": rounds,
        "rows": rows,
        "within_reach_targets": within_count,
        "within_reach": within,
        "oriented_targets": oriented_count,
        "oriented": oriented,
        "batched": bench_batched(batch_methods, 2007),
    }
    bench_report.publish(args.out, "bench_solvers", report, markdown(report), figure(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
