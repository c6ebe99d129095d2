# SPDX-License-Identifier: GPL-3.0-or-later
"""A bake never loses the user's animation: *New Action* keeps the original through save
and reopen, a shared action is not overwritten unless asked, and out-of-range frames are
refused with a clear message (operator and API)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rigs import add_empty, blender_module, build_arm, head_world, tail_world


def _arm_with_action(name: str, action: Any = None) -> tuple[Any, Any]:
    """The hand-built arm with a keyed rotation on ``upper`` and a chain on ``hand``."""
    from reach_ik_tools import demo_scene

    bpy = blender_module()
    arm = build_arm(name)
    if action is None:
        for f, angle in ((1, 0.0), (20, 0.4)):
            arm.pose.bones["upper"].rotation_quaternion = (np.cos(angle), np.sin(angle), 0, 0)
            arm.pose.bones["upper"].keyframe_insert("rotation_quaternion", frame=f)
    else:
        arm.animation_data_create()
        arm.animation_data.action = action
        if hasattr(arm.animation_data, "action_slot") and arm.animation_data.action_slot is None:
            arm.animation_data.action_slot = action.slots[0]
    target = add_empty(f"{name}_target", head_world(arm, "upper") + np.array([0.2, 0.3, -0.1]))
    demo_scene.set_chain(arm, "hand", 3, target)
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm, target


def _keys(action: Any) -> dict[tuple[str, int], list[tuple[float, float]]]:
    bags = (
        [action]
        if not hasattr(action, "layers")
        else [b for layer in action.layers for s in layer.strips for b in s.channelbags]
    )
    return {
        (fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points]
        for bag in bags
        for fc in bag.fcurves
    }


def test_new_action_keeps_the_original_through_save_and_reopen(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    bpy = blender_module()
    arm, _ = _arm_with_action("Arm")
    original = arm.animation_data.action
    name, before = original.name, _keys(original)
    result = addon.bake.bake(arm, addon.bake.BakeOptions(1, 10, into="NEW"))
    assert result.original_action == name
    assert result.to_dict()["original_action"] == name
    assert name in result.summary()
    path = tmp_path / "new_action.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    kept = bpy.data.actions.get(name)
    assert kept is not None, "the original action is gone after save and reopen"
    assert _keys(kept) == before
    assert bpy.data.objects["Arm"].animation_data.action.name == result.action


def test_a_shared_action_is_not_overwritten(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    first, _ = _arm_with_action("First")
    shared = first.animation_data.action
    second, _ = _arm_with_action("Second", shared)
    first.pose.bones["hand"].reach_ik.enabled = False  # the first arm plays its keys
    scene = bpy.context.scene
    frames = [1, 5, 10]
    before = {}
    for f in frames:
        scene.frame_set(f)
        before[f] = tail_world(first, "hand")
    keys = _keys(shared)
    result = addon.bake.bake(second, addon.bake.BakeOptions(1, 10))
    assert second.animation_data.action != shared
    assert result.action != shared.name
    assert result.original_action == shared.name
    assert any("shared with First" in w for w in result.warnings), result.warnings
    assert _keys(shared) == keys
    assert first.animation_data.action == shared
    for f in frames:
        scene.frame_set(f)
        assert np.allclose(tail_world(first, "hand"), before[f], atol=1e-9)
    # asked to: the shared action itself is keyed
    third, _ = _arm_with_action("Third", shared)
    result = addon.bake.bake(third, addon.bake.BakeOptions(1, 10, overwrite_shared=True))
    assert third.animation_data.action == shared
    assert result.action == shared.name
    assert result.original_action == ""
    assert _keys(shared) != keys


def test_frames_beyond_blenders_limits_are_refused(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    arm, _ = _arm_with_action("Arm")
    bake = addon.bake
    with pytest.raises(bake.BakeError, match="outside Blender's frame range"):
        bake.bake(arm, bake.BakeOptions(1, 2**31 - 1))
    with pytest.raises(bake.BakeError, match="outside Blender's frame range"):
        bake.bake(arm, bake.BakeOptions(-2_000_000, 1))
    bpy.context.view_layer.objects.active = arm
    with pytest.raises(RuntimeError, match="outside Blender's frame range"):
        bpy.ops.reach_ik.bake("EXEC_DEFAULT", frame_start=1, frame_end=2**31 - 1)
    result = bake.bake(arm, bake.BakeOptions(-12, -3))
    assert (result.frame_start, result.frame_end, result.frames) == (-12, -3, 10)


def test_convert_a_chain_folded_onto_its_root_gives_finite_angles(
    clean_scene: Any, addon: Any
) -> None:
    """Rest effector on the root: Convert IK's pole angle and the way back stay finite."""
    bpy = blender_module()
    arm = bpy.data.armatures.new("Fold")
    obj = bpy.data.objects.new("Fold", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    a = arm.edit_bones.new("a")
    a.head, a.tail = (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)
    b = arm.edit_bones.new("b")
    b.head, b.tail, b.parent, b.use_connect = (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), a, True
    bpy.ops.object.mode_set(mode="POSE")
    target = add_empty("fold_target", (0.3, 0.2, 0.8))
    pole = add_empty("fold_pole", (0.0, -1.0, 0.5))
    con = obj.pose.bones["b"].constraints.new("IK")
    con.target, con.pole_target, con.chain_count, con.pole_angle = target, pole, 2, 0.3
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    s = obj.pose.bones["b"].reach_ik
    assert s.has_chain
    assert np.isfinite(s.pole_angle)
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"FINISHED"}
    back = next(c for c in obj.pose.bones["b"].constraints if c.type == "IK")
    assert np.isfinite(back.pole_angle)
    bpy.context.view_layer.update()
    for name in ("a", "b"):
        assert np.all(np.isfinite(np.array(obj.pose.bones[name].matrix)))


def _rotation_keys(action: Any) -> dict[tuple[str, int], list[tuple[float, float]]]:
    return {k: v for k, v in _keys(action).items() if "rotation" in k[0]}


def test_a_long_range_is_solved_in_blocks_with_the_same_keys(
    clean_scene: Any, addon: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of 7 frames (the bake's working memory is one block's) key exactly what one
    block keys; the progress still only moves forward."""
    from reach_ik_tools import demo_scene

    bpy = blender_module()
    keys = {}
    for size in (addon.bake.BLOCK_FRAMES, 7):
        monkeypatch.setattr(addon.bake, "BLOCK_FRAMES", size)
        bpy.ops.wm.read_homefile(use_empty=True)
        human = demo_scene.build(40)["human"]
        seen: list[float] = []
        result = addon.bake.bake(human, addon.bake.BakeOptions(1, 40), progress=seen.append)
        assert result.blocks == (1 if size > 40 else 6)
        assert seen == sorted(seen)
        assert seen[-1] == 1.0
        assert result.method == "batched, from F-curves"
        keys[size] = _rotation_keys(human.animation_data.action)
    one, many = keys.values()
    assert one.keys() == many.keys()
    for path, values in one.items():
        assert np.allclose(values, many[path], atol=1e-6), path


def test_memory_is_estimated_up_front(
    clean_scene: Any, addon: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    arm, _ = _arm_with_action("Arm")
    bake = addon.bake
    need = addon.bake_memory.estimated_bytes(1_000_000, [3], 10, bake.BLOCK_FRAMES)
    assert 1e9 < need < 4e9, "a million frames of one 3-bone chain: about 1.2 GB of keys"
    monkeypatch.setattr(addon.bake_memory, "available_bytes", lambda: 64 * 2**20)
    with pytest.raises(bake.BakeError, match=r"needs about .* GiB of memory"):
        bake.bake(arm, bake.BakeOptions(1, 1_000_000))
    assert bake.bake(arm, bake.BakeOptions(1, 50)).frames == 50


def test_the_operator_refuses_a_report_over_the_blend_file(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    bpy = blender_module()
    arm, _ = _arm_with_action("Arm")
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    arm = bpy.data.objects["Arm"]
    bpy.context.view_layer.objects.active = arm
    before = blend.read_bytes()
    for path, message in ((blend, "is the open .blend file"), (tmp_path, "is a folder")):
        with pytest.raises(RuntimeError, match=message):
            bpy.ops.reach_ik.bake("EXEC_DEFAULT", frame_start=1, frame_end=5, report_path=str(path))
    assert blend.read_bytes() == before
    assert arm.pose.bones["hand"].reach_ik.enabled, "refused before any work"
    report = tmp_path / "report.json"
    done = bpy.ops.reach_ik.bake(
        "EXEC_DEFAULT", frame_start=1, frame_end=5, report_path=str(report)
    )
    assert done == {"FINISHED"}
    assert json.loads(report.read_text())["frames"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "scene.blend"]
