# SPDX-License-Identifier: GPL-3.0-or-later
"""Stored solutions (:mod:`ik_addon.stored`): the live pose of every frame shown is keyed on
the helpers, a frame shown again with unchanged inputs writes nothing, an edit re-solves,
the pose at a frame depends only on that frame's inputs (subframes included), removing a
chain removes its stored data, and a saved file plays the live pose in a Blender without
the extension (a separate ``bpy`` process with fresh user folders)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rigs import ARM_BONES, blender_module, build_arm, chain_length, select_only, tail_world

CHAIN = ("upper", "fore", "hand")
FRAMES = list(range(1, 42))


def _reachable(obj: Any, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """Hand tail positions of random FK poses (reachable by construction); the chain is
    added after, so the FK pose shows."""
    bpy = blender_module()
    out = []
    for _ in range(count):
        for name in CHAIN:
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            obj.pose.bones[name].rotation_quaternion = (math.cos(0.5), *(math.sin(0.5) * axis))
        bpy.context.view_layer.update()
        out.append(tail_world(obj, "hand"))
    for name in CHAIN:
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    return out


def _keyed_arm(seed: int = 1) -> tuple[Any, Any]:
    """Arm with a 3-bone chain whose target is keyed (linear) at frames 1, 11, …, 41."""
    bpy = blender_module()
    obj = build_arm()
    points = _reachable(obj, np.random.default_rng(seed), 5)
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.add(chain_length=3, new_target=True) == {"FINISHED"}
    target = obj.pose.bones["hand"].reach_ik.target
    for f, p in zip(range(1, 42, 10), points, strict=True):
        target.location = p
        target.keyframe_insert("location", frame=f)
    for fc in _fcurves(target):
        for k in fc.keyframe_points:
            k.interpolation = "LINEAR"
    return obj, target


def _fcurves(id_data: Any) -> list[Any]:
    adt = id_data.animation_data
    bag = adt.action.layers[0].strips[0].channelbag(adt.action_slot)
    return list(bag.fcurves)


def _helpers(obj: Any) -> list[Any]:
    return [obj.pose.bones[n].constraints["Reach IK"].target for n in CHAIN]


def _keys(obj: Any) -> list[list[tuple[float, float]]]:
    """Every key (frame, value) of every helper F-curve of the chain."""
    return [[tuple(k.co) for k in fc.keyframe_points] for h in _helpers(obj) for fc in _fcurves(h)]


def _pose(obj: Any) -> np.ndarray:
    from rigs import world_matrix

    return np.array([world_matrix(obj, n) for n in ARM_BONES])


class _Writes:
    """Counts the helper keys written (wraps :func:`ik_addon.stored.key_rotation`)."""

    def __init__(self, addon: Any) -> None:
        self.stored = addon.stored
        self.original = addon.stored.key_rotation
        self.count = 0

    def __enter__(self) -> _Writes:
        def counted(*args: Any) -> Any:
            self.count += 1
            return self.original(*args)

        self.stored.key_rotation = counted
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.stored.key_rotation = self.original


def _play(frames: Any) -> dict[int, np.ndarray]:
    bpy = blender_module()
    out = {}
    for f in frames:
        bpy.context.scene.frame_set(f)
        out[f] = _pose(bpy.data.objects["Arm"])
    return out


def _fresh_solve(addon: Any, obj: Any) -> list[list[float]]:
    """The chain's rotations solved now from the evaluated state, with no record."""
    bpy = blender_module()
    report = addon.evaluate.solve_chains(obj, bpy.context.evaluated_depsgraph_get())
    (solved,) = report.solved
    return [list(q) if q[0] >= 0 else [-c for c in q] for q in solved.rotations]


def test_steady_state_writes_nothing(clean_scene: Any, addon: Any) -> None:
    obj, target = _keyed_arm()
    with _Writes(addon) as first:
        played = _play(FRAMES)
    assert first.count == len(FRAMES) * len(CHAIN), "every new frame is solved and keyed"
    keys = _keys(obj)
    assert all(len(k) == len(FRAMES) for k in keys)
    updates: list[Any] = []
    bpy = blender_module()

    def count(_scene: Any, depsgraph: Any) -> None:
        updates.append([u.id.name for u in depsgraph.updates])

    bpy.app.handlers.depsgraph_update_post.append(count)
    try:
        with _Writes(addon) as again:
            replayed = _play(reversed(FRAMES))
    finally:
        bpy.app.handlers.depsgraph_update_post.remove(count)
    assert again.count == 0, "frames already stored are not written again"
    assert updates == []
    assert _keys(obj) == keys
    # After an edit that changes none of these frames' inputs (a new generation: every
    # frame is solved again when shown), the same solutions are not keyed again.
    addon.live_state.live.invalidate()
    with _Writes(addon) as after_edit:
        _play(FRAMES)
    assert after_edit.count == 0
    assert _keys(obj) == keys
    for f in FRAMES:
        np.testing.assert_array_equal(replayed[f], played[f])
    length = chain_length(obj, CHAIN)
    for f in FRAMES:
        bpy.context.scene.frame_set(f)
        goal = np.array(target.matrix_world.translation)
        err = np.linalg.norm(tail_world(obj, "hand") - goal)
        assert err <= 1e-4 * length, f"frame {f}: {err:.2e} m"
        # The panels' status is the frame's, stored or not.
        status = addon.handlers.status[(obj.name, "hand")]
        np.testing.assert_allclose(np.array(status.target), goal, atol=1e-6)
        assert status.error == pytest.approx(err, abs=1e-5)


def test_edited_key_and_setting_resolve(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj, target = _keyed_arm(seed=2)
    new = _reachable(obj, np.random.default_rng(7), 1)[0]
    _play(FRAMES)
    # Move the target's key at frame 21 (while at frame 5): frames 12-30 change, no others.
    bpy.context.scene.frame_set(5)
    (x, y, z) = _fcurves(target)
    for fc, value in zip((x, y, z), new, strict=True):
        (key,) = [k for k in fc.keyframe_points if k.co[0] == 21.0]
        key.co[1] = key.handle_left[1] = key.handle_right[1] = value
        fc.update()
    bpy.context.view_layer.update()
    with _Writes(addon) as writes:
        _play(FRAMES)
    assert writes.count == len(range(12, 31)) * len(CHAIN)
    bpy.context.scene.frame_set(21)
    err = np.linalg.norm(tail_world(obj, "hand") - new)
    assert err <= 1e-4 * chain_length(obj, CHAIN)
    # A setting: every frame is solved again when shown, and shows the new setting.
    obj.pose.bones["hand"].reach_ik.influence = 0.5
    with _Writes(addon) as writes:
        _play([3, 4])
    assert writes.count == 2 * len(CHAIN)
    for name, q in zip(CHAIN, _fresh_solve(addon, obj), strict=True):
        helper = obj.pose.bones[name].constraints["Reach IK"].target
        np.testing.assert_allclose(
            helper.evaluated_get(bpy.context.evaluated_depsgraph_get()).rotation_quaternion,
            q,
            atol=1e-7,
        )


def test_pose_depends_only_on_the_frame(clean_scene: Any, addon: Any) -> None:
    """Frames and subframes shown in any order, after edits undone, equal a fresh solve."""
    bpy = blender_module()
    obj, target = _keyed_arm(seed=3)
    scene = bpy.context.scene
    forward = _play(FRAMES)
    addon.stored.forget()
    backward = _play(reversed(FRAMES))
    for f in FRAMES:
        np.testing.assert_array_equal(backward[f], forward[f])
    length = chain_length(obj, CHAIN)
    for f, sub in ((7, 0.5), (7, 0.25), (30, 0.75)):
        scene.frame_set(f, subframe=sub)
        want = np.array(target.matrix_world.translation)
        assert np.linalg.norm(tail_world(obj, "hand") - want) <= 1e-4 * length
        shown = [
            np.array(h.evaluated_get(bpy.context.evaluated_depsgraph_get()).rotation_quaternion)
            for h in _helpers(obj)
        ]
        np.testing.assert_allclose(shown, _fresh_solve(addon, obj), atol=1e-7)
        scene.frame_set(f)
        np.testing.assert_array_equal(_pose(obj), forward[f])
    # A subframe between two stored frames plays (without a solve) a pose between them.
    helper = _helpers(obj)[0]
    (w, *_rest) = _fcurves(helper)
    assert [k.interpolation for k in w.keyframe_points] == ["LINEAR"] * len(w.keyframe_points)
    assert all(k.co[1] >= 0.0 for k in w.keyframe_points), "stored with w >= 0"


def test_removing_the_chain_removes_stored_data(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj, _target = _keyed_arm(seed=4)
    _play(FRAMES[:5])
    actions = [h.animation_data.action.name for h in _helpers(obj)]
    assert len(set(actions)) == len(CHAIN)
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.remove() == {"FINISHED"}
    assert not [a for a in actions if a in bpy.data.actions]
    assert not [o for o in bpy.data.objects if o.name.startswith("Reach IK")]
    assert addon.stored.stored_times(obj) == []


_PLAYER = textwrap.dedent(
    """
    import json, sys
    import bpy
    import addon_utils
    assert not addon_utils.check("bl_ext.user_default.reach_ik")[1]
    assert not [h for h in bpy.app.handlers.frame_change_post if "reach" in repr(h).lower()]
    bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
    obj = bpy.data.objects["Arm"]
    out = {}
    for f in json.loads(sys.argv[2]):
        bpy.context.scene.frame_set(f)
        w = obj.matrix_world
        out[f] = [
            list(w @ obj.pose.bones[n].head) + list(w @ obj.pose.bones[n].tail)
            for n in json.loads(sys.argv[3])
        ]
    print("POSES" + json.dumps(out))
    """
)


def test_saved_file_plays_without_the_extension(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    bpy = blender_module()
    obj, _target = _keyed_arm(seed=5)
    live = {}
    for f in FRAMES:
        bpy.context.scene.frame_set(f)
        w = obj.matrix_world
        live[f] = [
            list(w @ obj.pose.bones[n].head) + list(w @ obj.pose.bones[n].tail) for n in ARM_BONES
        ]
    path = tmp_path / "played.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    user = tmp_path / "user"
    user.mkdir()
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user))
    # From another frame order, to show nothing depends on the frame the file was saved at.
    order = FRAMES[::-1]
    run = subprocess.run(
        [sys.executable, "-c", _PLAYER, str(path), json.dumps(order), json.dumps(ARM_BONES)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("POSES"))
    played = {int(k): v for k, v in json.loads(line[len("POSES") :]).items()}
    worst = max(float(np.abs(np.array(played[f]) - np.array(live[f])).max()) for f in FRAMES)
    assert worst <= 1e-4, f"without the extension the pose is {worst:.2e} m off"
    # The same check fails on a file saved without stored solutions: the helper then holds
    # one frame's pose (what the old mechanism saved).
    assert len(_fcurves(_helpers(obj)[0])[0].keyframe_points) == len(FRAMES)


def test_overrides_store_on_their_own_helpers(clean_scene: Any, addon: Any, tmp_path: Path) -> None:
    """Two library overrides of one rig, their targets keyed differently: each keys its own
    local helpers, and each plays its own pose from them."""
    bpy = blender_module()
    coll = bpy.data.collections.new("RigColl")
    bpy.context.scene.collection.children.link(coll)
    obj, target = _keyed_arm(seed=6)
    for ob in (obj, target):
        bpy.context.scene.collection.objects.unlink(ob)
        coll.objects.link(ob)
    bpy.context.scene.frame_set(1)
    bpy.ops.object.mode_set(mode="OBJECT")
    lib = tmp_path / "lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(lib))
    bpy.ops.wm.read_homefile(use_empty=True)
    rigs = []
    for shift in (0.0, 0.05):
        with bpy.data.libraries.load(str(lib), link=True) as (_src, dst):
            dst.collections = ["RigColl"]
        over = dst.collections[0].override_hierarchy_create(
            bpy.context.scene, bpy.context.view_layer, do_fully_editable=True
        )
        arm = next(o for o in over.objects if o.type == "ARMATURE")
        goal = next(o for o in over.objects if o.type == "EMPTY")
        goal.delta_location = (shift, 0.0, 0.0)
        rigs.append((arm, goal))
    bpy.context.view_layer.update()
    frames = FRAMES[:12]
    for f in frames:
        bpy.context.scene.frame_set(f)
    for arm, _goal in rigs:
        helpers = [arm.pose.bones[n].constraints["Reach IK"].target for n in CHAIN]
        assert all(h.library is None and h.animation_data.action.library is None for h in helpers)
        assert all(len(_fcurves(h)[0].keyframe_points) == len(frames) for h in helpers)
    assert rigs[0][0].pose.bones["hand"].constraints["Reach IK"].target != (
        rigs[1][0].pose.bones["hand"].constraints["Reach IK"].target
    )
    with _Writes(addon) as writes:
        for f in frames:
            bpy.context.scene.frame_set(f)
            for arm, goal in rigs:
                err = np.linalg.norm(
                    tail_world(arm, "hand") - np.array(goal.matrix_world.translation)
                )
                assert err <= 1e-4 * chain_length(arm, CHAIN), f"{arm.name} frame {f}"
    assert writes.count == 0


def test_reenabled_chain_and_deleted_constraint_show_at_stored_frames(
    clean_scene: Any, addon: Any
) -> None:
    """Frames stored before a chain was switched off (its helpers deleted), or before a
    constraint was deleted by hand, show the chain again when shown."""
    bpy = blender_module()
    obj, target = _keyed_arm(seed=8)
    played = _play(FRAMES[:6])
    s = obj.pose.bones["hand"].reach_ik
    s.enabled = False
    bpy.context.view_layer.update()
    assert "Reach IK" not in obj.pose.bones["hand"].constraints
    s.enabled = True
    bpy.context.view_layer.update()
    for f in (3, 5):
        bpy.context.scene.frame_set(f)
        np.testing.assert_array_equal(_pose(obj), played[f])
    pb = obj.pose.bones["fore"]
    pb.constraints.remove(pb.constraints["Reach IK"])
    bpy.context.view_layer.update()
    bpy.context.scene.frame_set(4)
    np.testing.assert_array_equal(_pose(obj), played[4])
    err = np.linalg.norm(tail_world(obj, "hand") - np.array(target.matrix_world.translation))
    assert err <= 1e-4 * chain_length(obj, CHAIN)


def test_reopened_file_solves_again_without_writing(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    """After opening a played file the records are gone: each frame is solved again when
    shown, finds its key already there and writes nothing."""
    bpy = blender_module()
    _keyed_arm(seed=9)
    played = _play(FRAMES)
    path = tmp_path / "played.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Arm"]
    keys = _keys(obj)
    with _Writes(addon) as writes:
        replayed = _play(FRAMES[::-1])
    assert writes.count == 0
    assert _keys(obj) == keys
    for f in FRAMES:
        np.testing.assert_array_equal(replayed[f], played[f])


def test_keys_keep_one_hemisphere_through_a_half_turn(addon: Any) -> None:
    """Two solutions 0.2 rad apart on either side of a half turn about X (``w`` of opposite
    signs): the key between them must blend the short way, so the F-curves at the midpoint
    hold the half turn itself (a ``w ≥ 0`` rule would store them 2π − 0.2 apart and the
    midpoint would be the identity)."""
    bpy = blender_module()
    helper = bpy.data.objects.new("sign helper", None)
    helper.rotation_mode = "QUATERNION"
    try:
        curves = addon.stored.helper_fcurves(helper)
        before = (math.cos((math.pi - 0.2) / 2), math.sin((math.pi - 0.2) / 2), 0.0, 0.0)
        after = (math.cos((math.pi + 0.2) / 2), math.sin((math.pi + 0.2) / 2), 0.0, 0.0)
        assert after[0] < 0.0
        addon.stored.key_rotation(helper, curves, 1.0, before)
        addon.stored.key_rotation(helper, curves, 2.0, after)
        mid = np.array([fc.evaluate(1.5) for fc in curves])
        mid /= np.linalg.norm(mid)
        # The half turn about X, up to sign.
        assert abs(abs(mid[1]) - 1.0) <= 1e-6, mid
        assert addon.stored.is_keyed(curves, 2.0, after)
        assert addon.stored.is_keyed(curves, 2.0, tuple(-c for c in after))
    finally:
        addon.stored.remove_action(helper)
        bpy.data.objects.remove(helper)
