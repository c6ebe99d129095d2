# SPDX-License-Identifier: GPL-3.0-or-later
"""Baking in real Blender: the baked keys reproduce the live pose at every frame — checked
by reloading the saved file in a separate Blender without Reach IK — and baking leaves
everything else as it was (keys outside the range, other bones, other channels, the
original action with "new action", the whole file after undo)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rigs import add_empty, blender_module, build_arm, head_world, new_armature, select_only

REPO = Path(__file__).resolve().parents[2]

#: The bars of the issue: effector distance (m) and joint angle (degrees).
EFFECTOR_TOL = 1e-5
ANGLE_TOL_DEG = 0.01

#: Runs in a fresh Blender without Reach IK: evaluated world matrices per frame and bone.
PROBE = textwrap.dedent(
    """
    import json, sys
    import bpy
    import numpy as np
    blend, spec, out = sys.argv[-3:]
    bpy.ops.wm.open_mainfile(filepath=blend)
    assert "reach_ik" not in bpy.types.PoseBone.bl_rna.properties, "Reach IK is loaded"
    wanted = json.load(open(spec))
    scene = bpy.context.scene
    depsgraph = bpy.context.evaluated_depsgraph_get()
    result = np.zeros((len(wanted["frames"]), len(wanted["bones"]), 4, 4))
    for i, frame in enumerate(wanted["frames"]):
        scene.frame_set(frame)
        for j, (name, bone) in enumerate(wanted["bones"]):
            ob = bpy.data.objects[name].evaluated_get(depsgraph)
            result[i, j] = np.array(ob.matrix_world) @ np.array(ob.pose.bones[bone].matrix)
    np.save(out, result)
    """
)


def world_track(bones: list[tuple[str, str]], frames: list[int]) -> np.ndarray:
    """Evaluated world matrices ``(F, B, 4, 4)`` of ``(object, bone)`` pairs, in this Blender."""
    bpy = blender_module()

    scene = bpy.context.scene
    depsgraph = bpy.context.evaluated_depsgraph_get()
    out = np.zeros((len(frames), len(bones), 4, 4))
    for i, frame in enumerate(frames):
        scene.frame_set(frame)
        bpy.context.view_layer.update()
        for j, (name, bone) in enumerate(bones):
            ob = bpy.data.objects[name].evaluated_get(depsgraph)
            out[i, j] = np.array(ob.matrix_world) @ np.array(ob.pose.bones[bone].matrix)
    return out


def probe_without_addon(
    blend: Path, bones: list[tuple[str, str]], frames: list[int], work: Path
) -> np.ndarray:
    """:func:`world_track` of a saved file, in a separate Blender with no add-ons."""
    import json

    script, spec, out = work / "probe.py", work / "probe.json", work / "probe.npy"
    script.write_text(PROBE)
    spec.write_text(json.dumps({"bones": bones, "frames": frames}))
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="reach-ik-probe-user-") as user:
        env["BLENDER_USER_RESOURCES"] = user
        done = subprocess.run(
            [sys.executable, str(script), str(blend), str(spec), str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return np.load(out)


def assert_same_pose(
    live: np.ndarray, baked: np.ndarray, lengths: list[float], bones: list[tuple[str, str]]
) -> None:
    """Effectors (bone tails) within 1e-5 m and bone orientations within 0.01° (the bars)."""
    tail = np.array([[0.0, length, 0.0, 1.0] for length in lengths])
    live_tails = np.einsum("fbij,bj->fbi", live, tail)[..., :3]
    baked_tails = np.einsum("fbij,bj->fbi", baked, tail)[..., :3]
    distance = np.linalg.norm(live_tails - baked_tails, axis=-1)
    a = live[..., :3, :3] / np.linalg.norm(live[..., :3, :3], axis=-2, keepdims=True)
    b = baked[..., :3, :3] / np.linalg.norm(baked[..., :3, :3], axis=-2, keepdims=True)
    cos = (np.einsum("fbij,fbij->fb", a, b) - 1.0) / 2.0
    angle = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    f, j = np.unravel_index(np.argmax(distance), distance.shape)
    assert distance.max() <= EFFECTOR_TOL, f"{bones[j]} at frame index {f}: {distance.max():.2e} m"
    f, j = np.unravel_index(np.argmax(angle), angle.shape)
    assert angle.max() <= ANGLE_TOL_DEG, f"{bones[j]} at frame index {f}: {angle.max():.2e}°"


def _nested_armature() -> Any:
    """Four bones in a row with two chains, the second hanging below the first."""
    bpy = blender_module()

    arm = bpy.data.armatures.new("Nested")
    obj = bpy.data.objects.new("Nested", arm)
    obj.location = (0.0, 1.5, 0.2)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for i in range(4):
        bone = arm.edit_bones.new(f"n{i}")
        bone.head, bone.tail = (0.0, 0.0, 0.3 * i), (0.0, 0.05, 0.3 * (i + 1))
        bone.parent, bone.use_connect = parent, parent is not None
        parent = bone
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def _animate_circle(empty: Any, centre: np.ndarray, radius: float, frames: int) -> None:
    for f in range(1, frames + 1, 3):
        w = 2.0 * math.pi * f / frames
        empty.location = centre + radius * np.array(
            [math.cos(w), math.sin(w), 0.3 * math.sin(2 * w)]
        )
        empty.keyframe_insert("location", frame=f)


def _rich_scene(addon: Any, frames: int) -> list[tuple[str, str]]:
    """The demo plus what a bake must get right; returns every chain bone (object, bone)."""
    from reach_ik_tools import demo_scene

    bpy = blender_module()

    built = demo_scene.build(frames)
    human = built["human"]
    methods = addon.chain_spec.available_methods()
    iterative = next((m for m in ("ccd", "jacobian_dls") if m in methods), methods[0])
    bpy.data.objects["PaperC"].pose.bones["C2"].reach_ik.solver = iterative
    # animated parents above the chains, a moving armature, influence blended with keyed FK
    spine = human.pose.bones["spine"]
    for f, angle in ((1, 0.0), (frames // 2, 0.25), (frames, -0.1)):
        spine.rotation_quaternion = (math.cos(angle / 2), math.sin(angle / 2), 0.0, 0.0)
        spine.keyframe_insert("rotation_quaternion", frame=f)
        human.location = (0.0, 0.1 * angle, 0.05 * angle)
        human.keyframe_insert("location", frame=f)
    upper = human.pose.bones["upper_arm.R"]
    for f, angle in ((1, 0.4), (frames, -0.3)):
        upper.rotation_quaternion = (math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2))
        upper.keyframe_insert("rotation_quaternion", frame=f)
    s = human.pose.bones["forearm.R"].reach_ik
    for f, value in ((1, 1.0), (frames // 2, 0.3), (frames, 0.8)):
        s.influence = value
        human.keyframe_insert('pose.bones["forearm.R"].reach_ik.influence', frame=f)
    # a hand-built arm: rolls, gaps, a rotated and scaled object, three rotation modes, the
    # hand turned to its target (Rotation)
    arm = build_arm()
    for name, mode in (("upper", "YZX"), ("fore", "AXIS_ANGLE"), ("hand", "QUATERNION")):
        arm.pose.bones[name].rotation_mode = mode
    target = add_empty("arm_target", head_world(arm, "upper"))
    _animate_circle(target, head_world(arm, "upper") + np.array([0.1, 0.2, -0.2]), 0.25, frames)
    for f, angles in (
        (1, (0.3, -0.2, 0.5)),
        (frames // 2, (-0.4, 0.6, 0.1)),
        (frames, (0.2, 0.1, -0.7)),
    ):
        target.rotation_euler = angles
        target.keyframe_insert("rotation_euler", frame=f)
    demo_scene.set_chain(arm, "hand", 3, target)
    arm.pose.bones["hand"].reach_ik.use_rotation = True  # (the hand turned to the target)
    # nested chains (baked frame by frame)
    nested = _nested_armature()
    for tip, centre in (("n1", (0.2, 1.5, 0.6)), ("n3", (0.1, 1.6, 0.9))):
        goal = add_empty(f"{tip}_target", centre)
        _animate_circle(goal, np.array(centre), 0.15, frames)
        demo_scene.set_chain(nested, tip, 2, goal)
    bpy.ops.object.mode_set(mode="OBJECT")
    bones = []
    for obj in (human, *built["papers"], arm, nested):
        for tip in addon.chain_spec.chain_tips(obj):
            s = obj.pose.bones[tip].reach_ik
            names = addon.rig.chain_bones(obj, tip, s.chain_length, s.use_tail)
            bones += [(obj.name, n) for n in names]
    return bones


def test_baked_keys_replay_the_live_pose_without_the_addon(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    bpy = blender_module()

    frames = 30
    bones = _rich_scene(addon, frames)
    frame_list = list(range(1, frames + 1))
    live = world_track(bones, frame_list)
    methods = {}
    for name in sorted({name for name, _ in bones}):
        options = addon.bake.BakeOptions(1, frames, reduce=False)
        result = addon.bake.bake(bpy.data.objects[name], options)
        methods[name] = result.method
        assert len(result.chains) == len(addon.chain_spec.chain_tips(bpy.data.objects[name]))
        assert not [w for w in result.warnings if "skipped" in w], result.warnings
        for quality in result.chains:  # (the arm's hand turns to its target: Rotation)
            if name == "Arm":
                assert quality.turn_max_deg is not None
                assert quality.turn_max_deg <= 1e-6, quality.summary()
            else:
                assert quality.turn_max_deg is None
    assert methods["Human"] == "batched"
    assert methods["PaperU"] == "batched, from F-curves"
    assert methods["Nested"] == "frame by frame"
    path = tmp_path / "baked.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    baked = probe_without_addon(path, bones, frame_list, tmp_path)
    lengths = [bpy.data.objects[o].data.bones[b].length for o, b in bones]
    assert_same_pose(live, baked, lengths, bones)


def test_batched_bake_is_the_live_solve_at_every_frame(clean_scene: Any, addon: Any) -> None:
    """The bake's two batched ways against the live solver (evaluate.solve_chains) at every
    frame, not only where the bake checks itself: read at every frame, the inputs are the
    live ones and the solve path is the same function, so the poses agree to rounding
    (1e-9 rad per joint); from F-curves (double-precision inputs where Blender uses single)
    within the bake's own bound, bake_solve.CHECK_TOLERANCE."""
    bpy = blender_module()

    frames = 24
    _rich_scene(addon, frames)
    scene = bpy.context.scene
    bake_solve = addon.bake_solve
    checked = {"every frame": 0, "from F-curves": 0}
    for name in ("Human", "PaperU", "PaperC", "Arm"):
        obj = bpy.data.objects[name]
        specs = [
            addon.chain_spec.read_spec(obj.pose.bones[t]) for t in addon.chain_spec.chain_tips(obj)
        ]
        rigs = {
            s.tip: addon.chain_spec.rig_chain(obj, s.tip, s.chain_length, s.use_tail) for s in specs
        }
        numbers = np.arange(1, frames + 1)
        live = []
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for frame in numbers:
            scene.frame_set(int(frame))
            report = addon.evaluate.solve_chains(obj, depsgraph)
            assert not report.problems
            live.append({p.tip: p.rotations for p in report.poses})
        ways = (
            (False, bake_solve._bake_every_frame, 1e-9),
            (True, bake_solve._bake_from_curves, bake_solve.CHECK_TOLERANCE),
        )
        for from_curves, bake_way, bound in ways:
            warnings: list[str] = []
            with addon.handlers.paused():
                solved = bake_way(scene, obj, specs, rigs, numbers, None, warnings)
            if solved is None:
                assert from_curves, warnings  # only F-curves may not apply
                continue
            assert not warnings
            checked["from F-curves" if from_curves else "every frame"] += 1
            for result in solved:
                want = np.array([frame[result.spec.tip] for frame in live])
                got = result.rotations
                chord = np.minimum(
                    np.linalg.norm(want - got, axis=-1), np.linalg.norm(want + got, axis=-1)
                )
                gap = 4.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))  # radians between them
                assert gap.max() <= bound, (name, result.spec.tip, from_curves, gap.max())
    assert checked["every frame"] == 4
    assert checked["from F-curves"] >= 2


def test_frame_step_keys_the_live_pose_on_its_frames(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    bpy = blender_module()

    arm = build_arm()
    target = add_empty("arm_target", head_world(arm, "upper"))
    _animate_circle(target, head_world(arm, "upper") + np.array([0.1, 0.2, -0.2]), 0.25, 40)
    from reach_ik_tools import demo_scene

    demo_scene.set_chain(arm, "hand", 3, target)
    bones = [("Arm", n) for n in ("upper", "fore", "hand")]
    keyed = [3, 7, 11, 15, 19, 20]
    live = world_track(bones, keyed)
    result = addon.bake.bake(arm, addon.bake.BakeOptions(3, 20, frame_step=4, reduce=False))
    assert result.frames == len(keyed)
    fcurve = (
        arm.animation_data.action.layers[0]
        .strips[0]
        .channelbags[0]
        .fcurves.find('pose.bones["hand"].rotation_quaternion', index=0)
    )
    assert [k.co[0] for k in fcurve.keyframe_points] == keyed
    path = tmp_path / "stepped.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    baked = probe_without_addon(path, bones, keyed, tmp_path)
    lengths = [arm.data.bones[b].length for _, b in bones]
    assert_same_pose(live, baked, lengths, bones)


# ---------------------------------------------------------------------------- untouched keys
KEY_ATTRIBUTES = (
    "co",
    "handle_left",
    "handle_right",
    "interpolation",
    "handle_left_type",
    "handle_right_type",
    "easing",
    "type",
    "back",
    "amplitude",
    "period",
)


def _fcurves(action: Any) -> dict[tuple[str, int], Any]:
    return {
        (fc.data_path, fc.array_index): fc
        for layer in action.layers
        for strip in layer.strips
        for bag in strip.channelbags
        for fc in bag.fcurves
    }


def _keys(fcurve: Any) -> list[tuple[Any, ...]]:
    """Every key of an F-curve as a tuple of all its attributes."""
    out = []
    for k in fcurve.keyframe_points:
        row = []
        for name in KEY_ATTRIBUTES:
            value = getattr(k, name)
            row.append(
                tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) else value
            )
        out.append(tuple(row))
    return out


def _snapshot(action: Any) -> dict[tuple[str, int], list[tuple[Any, ...]]]:
    return {key: _keys(fc) for key, fc in _fcurves(action).items()}


def _animated_arm() -> tuple[Any, Any]:
    """The hand-built arm with keys everywhere: chain rotations inside and outside the bake
    range (mixed interpolations and handle types), chain locations, another bone."""
    bpy = blender_module()

    arm = build_arm()
    modes = {"upper": "YZX", "fore": "AXIS_ANGLE", "hand": "QUATERNION", "shoulder": "XYZ"}
    paths = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}
    rng = np.random.default_rng(7)
    for name, mode in modes.items():
        pb = arm.pose.bones[name]
        pb.rotation_mode = mode
        for f in (1, 6, 12, 20, 31, 45, 60):
            values = rng.uniform(-0.5, 0.5, size=4)
            if mode == "QUATERNION":
                pb.rotation_quaternion = values + np.array([1.0, 0.0, 0.0, 0.0])
            elif mode == "AXIS_ANGLE":
                pb.rotation_axis_angle = values + np.array([0.0, 0.0, 1.0, 0.0])
            else:
                pb.rotation_euler = values[:3]
            pb.keyframe_insert(paths.get(mode, "rotation_euler"), frame=f)
            pb.location = values[:3] * 0.01
            pb.keyframe_insert("location", frame=f)
    for fc in _fcurves(arm.animation_data.action).values():
        points = fc.keyframe_points
        points[0].interpolation = "CONSTANT"
        points[-1].handle_left_type = "VECTOR"
        points[-2].easing = "EASE_IN"
        fc.update()
    target = add_empty("arm_target", head_world(arm, "upper"))
    _animate_circle(target, head_world(arm, "upper") + np.array([0.1, 0.2, -0.2]), 0.25, 60)
    from reach_ik_tools import demo_scene

    demo_scene.set_chain(arm, "hand", 3, target)
    bpy.context.scene.frame_set(1)
    return arm, target


def test_keys_outside_the_range_and_other_channels_stay_untouched(
    clean_scene: Any, addon: Any
) -> None:
    arm, _ = _animated_arm()
    action = arm.animation_data.action
    before = _snapshot(action)
    first, last = 10, 33
    result = addon.bake.bake(arm, addon.bake.BakeOptions(first, last, reduce=False))
    assert arm.animation_data.action == action
    after = _snapshot(action)
    chain = {
        "upper": "rotation_euler",
        "fore": "rotation_axis_angle",
        "hand": "rotation_quaternion",
    }
    baked = {f'pose.bones["{b}"].{p}' for b, p in chain.items()}
    assert set(after) == set(before), "no F-curve may be added or removed"
    for key, keys in before.items():
        if key[0] not in baked:
            assert after[key] == keys, f"{key} changed"
            continue
        outside = [k for k in keys if not first <= k[0][0] <= last]
        kept = [k for k in after[key] if not first <= k[0][0] <= last]
        assert kept == outside, f"{key}: keys outside {first}..{last} changed"
        inside = [k[0][0] for k in after[key] if first <= k[0][0] <= last]
        assert inside == list(range(first, last + 1))
    assert result.frames == last - first + 1


def test_new_action_leaves_the_original_action_alone(clean_scene: Any, addon: Any) -> None:
    arm, _ = _animated_arm()
    original = arm.animation_data.action
    before = _snapshot(original)
    result = addon.bake.bake(arm, addon.bake.BakeOptions(10, 20, into="NEW"))
    assert arm.animation_data.action != original
    assert arm.animation_data.action.name == result.action
    assert arm.animation_data.action_slot is not None
    assert _snapshot(original) == before
    copied = _snapshot(arm.animation_data.action)
    location = ('pose.bones["shoulder"].location', 0)
    assert copied[location] == before[location], "the copy keeps the other channels"


def test_after_bake_keep_disable_remove(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()

    for after, enabled, has_chain in (("KEEP", True, True), ("DISABLE", False, True)):
        arm, _ = _animated_arm()
        addon.bake.bake(arm, addon.bake.BakeOptions(1, 5, after=after))
        s = arm.pose.bones["hand"].reach_ik
        assert (s.enabled, s.has_chain) == (enabled, has_chain)
        bpy.data.objects.remove(arm)
    arm, target = _animated_arm()
    addon.bake.bake(arm, addon.bake.BakeOptions(1, 5, after="REMOVE"))
    assert not arm.pose.bones["hand"].reach_ik.has_chain
    assert target.name in bpy.data.objects, "the target object stays"


# ---------------------------------------------------------------------------- operator, undo
def test_operator_bakes_reports_and_undo_restores(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()

    arm, _ = _animated_arm()
    arm.select_set(True)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    before = _snapshot(arm.animation_data.action)
    bpy.ops.ed.undo_push(message="before bake")
    done = bpy.ops.reach_ik.bake("EXEC_DEFAULT", True, frame_start=10, frame_end=20)
    assert done == {"FINISHED"}
    arm = bpy.data.objects["Arm"]
    assert not arm.pose.bones["hand"].reach_ik.enabled
    assert _snapshot(arm.animation_data.action) != before
    report = addon.bake_report.stored_report(arm.pose.bones["hand"])
    assert (report["chain"], report["frame_start"], report["frame_end"]) == ("hand", 10, 20)
    bpy.ops.ed.undo()
    arm = bpy.data.objects["Arm"]
    assert arm.pose.bones["hand"].reach_ik.enabled
    assert _snapshot(arm.animation_data.action) == before


def test_operator_poll_says_what_is_missing(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()

    assert not bpy.ops.reach_ik.bake.poll()
    arm = build_arm()
    bpy.context.view_layer.objects.active = arm
    assert not bpy.ops.reach_ik.bake.poll()
    with pytest.raises(RuntimeError, match="no enabled Reach IK chain"):
        bpy.ops.reach_ik.bake("EXEC_DEFAULT", frame_start=1, frame_end=3)


def test_only_selected_chains_are_baked(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()

    from reach_ik_tools import demo_scene

    built = demo_scene.build(10)
    human = built["human"]
    bpy.context.view_layer.objects.active = human
    bpy.ops.object.mode_set(mode="POSE")
    select_only(human, ["forearm.L"], "forearm.L")
    done = bpy.ops.reach_ik.bake(frame_start=1, frame_end=10, only_selected=True)
    assert done == {"FINISHED"}
    stored = {t: addon.bake_report.stored_report(human.pose.bones[t]) for t in demo_scene.LIMBS}
    assert stored["forearm.L"] is not None
    assert stored["forearm.L"]["frames"] == 10
    assert [t for t, r in stored.items() if r is not None] == ["forearm.L"]
    assert human.pose.bones["forearm.R"].reach_ik.enabled


def test_bad_options_raise_clear_errors(clean_scene: Any, addon: Any) -> None:
    arm, _ = _animated_arm()
    bake = addon.bake
    with pytest.raises(bake.BakeError, match="reversed"):
        bake.bake(arm, bake.BakeOptions(20, 10))
    with pytest.raises(bake.BakeError, match="frame step"):
        bake.bake(arm, bake.BakeOptions(1, 10, frame_step=0))
    with pytest.raises(bake.BakeError, match="unknown solver"):
        bake.bake(arm, bake.BakeOptions(1, 10, solver="newton"))
    with pytest.raises(bake.BakeError, match="no Reach IK chain on bone"):
        bake.bake(arm, bake.BakeOptions(1, 10, chains=("fore",)))
    arm.pose.bones["hand"].reach_ik.enabled = False
    with pytest.raises(bake.BakeError, match="disabled"):
        bake.bake(arm, bake.BakeOptions(1, 10, chains=("hand",)))
    with pytest.raises(bake.BakeError, match="no enabled Reach IK chain"):
        bake.bake(arm, bake.BakeOptions(1, 10))
    arm.pose.bones["hand"].reach_ik.enabled = True
    bpy = blender_module()
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    with pytest.raises(bake.BakeError, match="Edit Mode"):
        bake.bake(arm, bake.BakeOptions(1, 10))
    bpy.ops.object.mode_set(mode="POSE")


# ---------------------------------------------------------------------------- long bakes
def _peak_rss_growth(run: Any) -> float | None:
    """Call ``run()``; the growth of the process's peak resident memory (bytes), or ``None``
    where the peak cannot be reset (not Linux)."""
    status = Path("/proc/self/status")

    def read(key: str) -> int:
        for line in status.read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) * 1024
        raise KeyError(key)

    before = read("VmRSS:")
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        run()
        return None
    run()
    return read("VmHWM:") - before


def test_ten_thousand_frames_with_progress(clean_scene: Any, addon: Any) -> None:
    from reach_ik_tools import demo_scene

    bpy = blender_module()

    frames = 10_000
    bpy.context.scene.frame_end = frames
    human = demo_scene.add_metarig()
    goals = demo_scene.add_limb_goals(human, frames)
    demo_scene.add_limb_chains(human, goals, None)
    spine = human.pose.bones["spine"]
    for f in (1, frames):
        spine.rotation_quaternion = (1.0, 0.05 * (f > 1), 0.0, 0.0)
        spine.keyframe_insert("rotation_quaternion", frame=f)
    spine.driver_add("location", 0).driver.expression = "0.0"  # no F-curves-only way
    seen: list[float] = []
    results = []
    growth = _peak_rss_growth(
        lambda: results.append(
            addon.bake.bake(
                human, addon.bake.BakeOptions(1, frames, reduce=False), progress=seen.append
            )
        )
    )
    assert results[0].method == "batched", "every frame is set: the heavier way"
    assert results[0].frames == frames
    assert len(seen) >= 50
    assert seen == sorted(seen)
    assert seen[-1] == 1.0
    if growth is not None:
        assert growth < 256 * 2**20, f"the bake grew memory by {growth / 2**20:.0f} MiB"
    fcurves = _fcurves(human.animation_data.action)
    assert len(fcurves[('pose.bones["thigh.L"].rotation_quaternion', 2)].keyframe_points) == frames


def test_an_animated_use_pole_is_baked_as_it_plays(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    """*Use Pole* switched by keys (as Rigify's pole switch drives it): the frames with the
    pole off are baked without it, the others with it, each as the live pose shows it."""
    from reach_ik_tools import demo_scene

    bpy = blender_module()

    arm = build_arm()
    target = add_empty("arm_target", head_world(arm, "upper"))
    _animate_circle(target, head_world(arm, "upper") + np.array([0.1, 0.2, -0.2]), 0.2, 24)
    pole = add_empty("arm_pole", head_world(arm, "upper") + np.array([0.0, -0.6, 0.3]))
    demo_scene.set_chain(arm, "hand", 3, target, pole)
    path = 'pose.bones["hand"].reach_ik.use_pole'
    for frame, on in ((1, True), (9, False), (17, True)):
        arm.pose.bones["hand"].reach_ik.use_pole = on
        arm.keyframe_insert(path, frame=frame)
    bones = [("Arm", n) for n in ("upper", "fore", "hand")]
    frames = list(range(1, 25))
    live = world_track(bones, frames)
    result = addon.bake.bake(arm, addon.bake.BakeOptions(1, 24, reduce=False))
    assert not result.warnings, result.warnings
    saved = tmp_path / "use_pole.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(saved), copy=True)
    baked = probe_without_addon(saved, bones, frames, tmp_path)
    lengths = [arm.data.bones[b].length for _, b in bones]
    assert_same_pose(live, baked, lengths, bones)
    # the pole matters on the frames where it is off: with it the elbow sits elsewhere
    bpy.ops.wm.open_mainfile(filepath=str(saved))
    arm = bpy.data.objects["Arm"]
    arm.animation_data_clear()
    s = arm.pose.bones["hand"].reach_ik
    s.enabled, s.use_pole = True, True
    off = [f - 1 for f in range(9, 17)]
    with_pole = world_track(bones, [frames[i] for i in off])
    gap = np.linalg.norm(with_pole[:, 1, :3, 3] - live[off, 1, :3, 3], axis=-1)
    assert gap.min() > 0.01, gap


def _ball_tail(name: str, bones: int) -> Any:
    """``bench_solvers``' ball chain as bones: ``bones`` bones of 0.2 m up +Z, gently
    curved, every other one a knee (Lock IK Y and Z, Limit X 0°–150°), the others limited
    like a shoulder (Limit X −60°–80°, Limit Z −40°–40°)."""
    bpy = blender_module()

    obj = new_armature(name)
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for i in range(bones):
        bone = obj.data.edit_bones.new(f"b{i}")
        bone.head = (0.0, -0.02 * math.sin(0.1 * i), 0.2 * i)
        bone.tail = (0.0, -0.02 * math.sin(0.1 * (i + 1)), 0.2 * (i + 1))
        bone.parent, bone.use_connect = parent, parent is not None
        parent = bone
    bpy.ops.object.mode_set(mode="POSE")
    for i, pb in enumerate(obj.pose.bones):
        pb.use_ik_limit_x = True
        if i % 2:
            pb.lock_ik_y = pb.lock_ik_z = True
            pb.ik_min_x, pb.ik_max_x = 0.0, math.radians(150.0)
        else:
            pb.use_ik_limit_z = True
            pb.ik_min_x, pb.ik_max_x = math.radians(-60.0), math.radians(80.0)
            pb.ik_min_z, pb.ik_max_z = math.radians(-40.0), math.radians(40.0)
    return obj


def _inputs(
    addon: Any,
    points: np.ndarray,
    f: int | None = None,
    *,
    poles: np.ndarray | None = None,
    fk: np.ndarray | None = None,
    influence: np.ndarray | None = None,
    use_pole: np.ndarray | None = None,
) -> Any:
    """``solve_frames.FrameInputs`` of an armature at the world origin, unrotated, for
    targets ``points (F, 3)``: all ``F`` frames (arrays), or frame ``f`` alone as live
    solving passes it (floats); influence 1 and pole used unless given."""
    frames = len(points)
    influence = np.ones(frames) if influence is None else influence
    use_pole = np.ones(frames, dtype=bool) if use_pole is None else use_pole
    affine, frame_inputs = addon.affine, addon.solve_frames.FrameInputs
    if f is None:
        return frame_inputs(
            affine.rows_of(np.repeat(np.eye(4)[None], frames, axis=0)),
            None,
            (0.0, 0.0, 0.0),
            affine.vec_of(points),
            None if poles is None else affine.vec_of(poles),
            None,
            fk,
            influence,
            np.zeros(frames),
            np.zeros(frames),
            use_pole,
            frame_count=frames,
        )
    return frame_inputs(
        affine.rows_of(np.eye(4)),
        None,
        (0.0, 0.0, 0.0),
        tuple(points[f].tolist()),
        None if poles is None else tuple(poles[f].tolist()),
        None,
        None if fk is None else fk[f],
        float(influence[f]),
        0.0,
        0.0,
        bool(use_pole[f]),
    )


def test_a_chain_with_limits_bakes_each_frame_as_live_solving_shows_it(
    clean_scene: Any, addon: Any
) -> None:
    """The bake's solve of ``F`` frames (``solve_frames.solve_chain_frames``) gives each
    frame's pose bit for bit as live solving's solve of that frame alone, on a chain of
    ball joints and knees, for every method, with targets anywhere within 1.1 of its
    length — a third of them out of reach within the limits, where the batched core
    settled elsewhere than the one-target path (up to ~2°, 0.8.1)."""
    import dataclasses

    bpy = blender_module()
    solve_frames, chain_spec = addon.solve_frames, addon.chain_spec
    obj = _ball_tail("Tail", 5)
    target = add_empty("tail_target", (0.0, 0.0, 1.0))
    demo_scene = pytest.importorskip("reach_ik_tools.demo_scene")
    demo_scene.set_chain(obj, "b4", 5, target)
    bpy.context.view_layer.update()
    rig = chain_spec.rig_chain(obj, "b4", 5, True)
    spec = chain_spec.read_spec(obj.pose.bones["b4"])
    frames = 12
    rng = np.random.default_rng(8)
    d = rng.normal(size=(frames, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    points = d * rng.uniform(0.2, 1.1, size=(frames, 1)) * rig.chain.reach
    batch = _inputs(addon, points)
    missed = 0
    for method in chain_spec.available_methods():
        fixed = chain_spec.spec_fixed(dataclasses.replace(spec, solver=method))
        together = solve_frames.solve_chain_frames(rig, fixed, batch)
        for f in range(frames):
            one = _inputs(addon, points, f)
            alone = solve_frames.solve_chain_frames(rig, fixed, one)
            assert together.rotations[f].tolist() == alone.rotations
            missed += int(alone.errors > 1e-3 * rig.chain.reach)
    assert missed >= 6  # (targets the limits keep out of reach, for every method)


def test_frame_by_frame_reads_each_frames_own_inputs(clean_scene: Any, addon: Any) -> None:
    """The bake's solve of ``F`` frames of a chain with limits takes, for each frame, that
    frame's inputs — influence blended with its own FK pose, its pole and whether the pole
    applies — as live solving passes them for that frame alone (the same rotations bit for
    bit), and different frames' inputs give different poses."""
    bpy = blender_module()
    solve_frames, chain_spec = addon.solve_frames, addon.chain_spec
    obj = _ball_tail("Tail", 3)
    root = obj.pose.bones["b0"]
    root.use_ik_limit_x = root.use_ik_limit_z = False  # (a free root: the pole turns the bend)
    target = add_empty("tail_target", (0.0, 0.0, 0.5))
    demo_scene = pytest.importorskip("reach_ik_tools.demo_scene")
    demo_scene.set_chain(obj, "b2", 3, target)
    bpy.context.view_layer.update()
    rig = chain_spec.rig_chain(obj, "b2", 3, True)
    fixed = chain_spec.spec_fixed(chain_spec.read_spec(obj.pose.bones["b2"]))
    frames = 6
    rng = np.random.default_rng(2)
    points = rng.normal(size=(frames, 3)) * 0.1 + np.array([0.0, 0.05, 0.45])
    poles = rng.normal(size=(frames, 3))
    fk = rng.normal(size=(frames, 3, 4))
    fk /= np.linalg.norm(fk, axis=-1, keepdims=True)
    influence = np.linspace(0.2, 1.0, frames)
    use_pole = np.array([True, False] * (frames // 2))
    batch = _inputs(addon, points, poles=poles, fk=fk, influence=influence, use_pole=use_pole)
    together = solve_frames.solve_chain_frames(rig, fixed, batch)
    for f in range(frames):
        one = _inputs(addon, points, f, poles=poles, fk=fk, influence=influence, use_pole=use_pole)
        alone = solve_frames.solve_chain_frames(rig, fixed, one)
        assert together.rotations[f].tolist() == alone.rotations
    assert len({tuple(np.round(r, 9).ravel()) for r in together.rotations}) == frames


def test_the_report_says_how_far_the_last_bone_is_turned_from_the_goal(
    clean_scene: Any, addon: Any
) -> None:
    """With *Rotation* on a chain whose last bone is a hinge (triangulation then reaches for
    the position alone), the bake's quality report gives the largest angle between the
    goal's orientation and the last bone's, the same as live solving's at that frame."""
    bpy = blender_module()
    arm = build_arm()
    hand = arm.pose.bones["hand"]
    hand.lock_ik_y = hand.lock_ik_z = True
    target = add_empty("arm_target", head_world(arm, "upper"))
    _animate_circle(target, head_world(arm, "upper") + np.array([0.1, 0.2, -0.2]), 0.2, 12)
    for f, angles in ((1, (0.3, -0.2, 0.5)), (12, (-0.4, 0.6, 0.1))):
        target.rotation_euler = angles
        target.keyframe_insert("rotation_euler", frame=f)
    from reach_ik_tools import demo_scene

    demo_scene.set_chain(arm, "hand", 3, target, solver="triangulation")
    hand.reach_ik.use_rotation = True
    result = addon.bake.bake(arm, addon.bake.BakeOptions(1, 12, reduce=False, after="KEEP"))
    [quality] = result.chains
    assert quality.turn_max_deg is not None
    assert quality.turn_max_deg > 1.0
    assert quality.error_max <= 1e-4  # (the position, alone, is met)
    stored = addon.bake_report.stored_report(hand)
    assert stored is not None
    assert stored["turn_max_deg"] == quality.turn_max_deg  # (what the report panel shows)
    bpy.context.scene.frame_set(quality.turn_max_frame)
    [live] = addon.evaluate.solve_chains(arm, bpy.context.evaluated_depsgraph_get()).poses
    assert live.turn is not None
    assert math.degrees(live.turn) == pytest.approx(quality.turn_max_deg, abs=1e-6)
