# SPDX-License-Identifier: GPL-3.0-or-later
"""The 3D View overlay's data (``ik_addon/overlay.py``) is Blender's own evaluation.

The ``gpu`` module cannot draw in the ``bpy`` module, so these tests check what the draw
callback would upload: each chain's points (joints, target, pole, after applying the
armature's world matrix as the shader does) against Blender's evaluated pose after
``frame_set``, the lines the topology draws between them, the miss rule, the early returns
(overlays off, the scene's setting off) and the handlers coming and going.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from conftest import EXTENSION
from rigs import blender_module, head_world, select_only, tail_world

FRAMES = 10


def _world(plan: Any, batch: int, k: int) -> np.ndarray:
    """World position of point ``k`` as the shader's ``world()`` computes it."""
    p = plan.points[batch][k].astype(np.float64)
    if p[3] < 0.0:
        return p[:3]
    return (np.array(plan.matrices[batch], dtype=np.float64) @ np.append(p[:3], 1.0))[:3]


def _missed(plan: Any, batch: int, info: int) -> bool:
    """The shader's miss rule for the chain whose info point is ``info``."""
    effector, target, threshold, _ = plan.points[batch][info]
    if threshold <= 0.0:
        return bool(threshold < 0.0)
    distance = np.linalg.norm(_world(plan, batch, int(effector)) - _world(plan, batch, int(target)))
    return bool(distance > threshold)


def _lines(plan: Any, batch: int, width: float) -> set[tuple[int, int]]:
    """Point pairs joined by the batch's lines of ``width`` pixels (the cross excluded)."""
    v = plan.layout.batches[batch].vertices
    return {
        (int(ends[0]), int(ends[1]))
        for ends, shape, arm in zip(v["ends"], v["shape"], v["arm"], strict=True)
        if shape[1] == width and arm[0] < 0.0
    }


def _rig(obj: Any) -> dict[str, Any]:
    """Chains on the left arm (a pole, the target keyed to move) and the left leg (target
    out of reach); returns the targets and the pole."""
    bpy = blender_module()
    select_only(obj, ["forearm.L"], "forearm.L")
    assert bpy.ops.reach_ik.add(new_target=True) == {"FINISHED"}
    select_only(obj, ["shin.L"], "shin.L")
    assert bpy.ops.reach_ik.add(new_target=True) == {"FINISHED"}
    arm = obj.pose.bones["forearm.L"].reach_ik
    leg = obj.pose.bones["shin.L"].reach_ik
    leg.target.location = head_world(obj, "thigh.L") + np.array([0.0, -0.3, -3.0])
    arm.target.location = head_world(obj, "upper_arm.L") + np.array([0.2, -0.3, -0.15])
    arm.target.keyframe_insert("location", frame=1)
    arm.target.location.z += 0.2
    arm.target.keyframe_insert("location", frame=FRAMES)
    pole = bpy.data.objects.new("elbow pole", None)
    obj.users_collection[0].objects.link(pole)
    pole.location = head_world(obj, "upper_arm.L") + np.array([0.3, 0.35, -0.1])
    arm.pole = pole
    return {"forearm.L": arm.target, "shin.L": leg.target, "pole": pole}


def _plan(overlay: Any, old: Any = None) -> Any:
    bpy = blender_module()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    plan = overlay.Plan(overlay.chain_inputs(bpy.context.scene, depsgraph), old)
    plan.read_joints()
    return plan


def test_overlay_points_are_blenders_evaluation(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    overlay = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
    obj = metarig
    goals = _rig(obj)
    old = None
    effectors = []
    for frame in (1, 6, FRAMES):
        bpy.context.scene.frame_set(frame)
        plan = _plan(overlay, old)
        if old is not None:  # same chains: the topology (and its GPU batches) is kept
            assert plan.layout is old.layout
        old = plan
        tips = [key[1] for key in plan.layout.key]
        assert sorted(tips) == ["forearm.L", "shin.L"]
        bones = {"forearm.L": ("upper_arm.L", "forearm.L"), "shin.L": ("thigh.L", "shin.L")}
        for tip, slot in zip(tips, plan.layout.slots, strict=True):
            batch, target, pole, info = slot
            effector = int(plan.points[batch][info][0])
            first = effector - len(bones[tip])
            for k, bone in enumerate(bones[tip]):
                assert np.allclose(_world(plan, batch, first + k), head_world(obj, bone), atol=1e-5)
            assert np.allclose(
                _world(plan, batch, effector), tail_world(obj, bones[tip][-1]), atol=1e-5
            )
            target_world = np.array(goals[tip].matrix_world.translation)
            assert np.allclose(_world(plan, batch, target), target_world, atol=1e-5)
            thick = _lines(plan, batch, overlay.CHAIN_WIDTH)
            assert {(first, first + 1), (first + 1, first + 2)} <= thick
            thin = _lines(plan, batch, overlay.LINE_WIDTH)
            assert (effector, target) in thin  # the dashed line to the target
            if tip == "forearm.L":
                shown = importlib.import_module(f"{EXTENSION}.ik_addon.shown")
                threshold = plan.points[batch][info][2]
                assert threshold == pytest.approx(shown.tolerances(obj, tip, bones[tip])[1])
                pole_world = np.array(goals["pole"].matrix_world.translation)
                assert np.allclose(_world(plan, batch, pole), pole_world, atol=1e-5)
                assert (first + 1, pole) in thin  # elbow → pole
                assert not _missed(plan, batch, info)  # reached
                effectors.append(_world(plan, batch, effector))
            else:
                assert pole == -1
                assert _missed(plan, batch, info)  # out of reach: the red cross
    # The keyed target moved the arm: the points follow the frame.
    assert np.linalg.norm(effectors[-1] - effectors[0]) > 0.1


def _depsgraph() -> Any:
    return blender_module().context.evaluated_depsgraph_get()


def test_muted_constraint_is_drawn_as_shown_and_missed(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    overlay = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
    obj = metarig
    _rig(obj)
    bpy.context.scene.frame_set(1)
    obj.pose.bones["forearm.L"].constraints["Reach IK"].mute = True
    bpy.context.scene.frame_set(1)
    plan = _plan(overlay)
    tips = [key[1] for key in plan.layout.key]
    batch, _, _, info = plan.layout.slots[tips.index("forearm.L")]
    effector = int(plan.points[batch][info][0])
    # The FK forearm, as Blender shows it, not the solved one; far from the target.
    assert np.allclose(_world(plan, batch, effector), tail_world(obj, "forearm.L"), atol=1e-5)
    assert _missed(plan, batch, info)


def test_nothing_drawn_with_overlays_off_or_the_setting_off(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    overlay = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
    obj = metarig
    _rig(obj)
    bpy.context.scene.frame_set(1)
    spaces = [
        area.spaces.active
        for window in bpy.context.window_manager.windows
        for area in window.screen.areas
        if area.type == "VIEW_3D"
    ]
    assert spaces
    try:
        for space in spaces:
            space.overlay.show_overlays = False
        assert overlay._scan_views() == overlay.OFF
        key = bpy.context.scene.as_pointer()
        overlay._plans[key] = stale = overlay.Plan(
            overlay.chain_inputs(bpy.context.scene, _depsgraph())
        )
        overlay.draw()  # returns before any gpu call (which would raise in background mode)
        assert stale.stale  # nothing read ...
        assert not stale.draws  # ... nothing drawn
        spaces[0].overlay.show_overlays = True
        assert overlay._scan_views() == (overlay.MIXED if len(spaces) > 1 else overlay.ON)
    finally:
        for space in spaces:
            space.overlay.show_overlays = True
        overlay.mark_dirty()
    assert overlay._scan_views() == overlay.ON
    bpy.context.scene.reach_ik_overlay = False
    try:
        assert overlay.chain_inputs(bpy.context.scene, _depsgraph()) == []
        assert overlay.Plan([]).layout.batches == []
    finally:
        bpy.context.scene.reach_ik_overlay = True


def test_overlay_handlers_go_with_unregister(clean_scene: Any, addon: Any) -> None:
    import addon_utils

    bpy = blender_module()
    overlay = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
    lists = [handler_list for handler_list, _ in overlay._HANDLERS]
    handle = overlay._handle
    assert handle is not None
    assert all(fn in handler_list for handler_list, fn in overlay._HANDLERS)
    addon_utils.disable(EXTENSION, default_set=True)
    try:
        ours = [fn for fns in lists for fn in fns if fn.__module__ == overlay.__name__]
        assert ours == []
        assert overlay._handle is None
        assert not overlay._plans
    finally:
        addon_utils.enable(EXTENSION, default_set=True)
    overlay = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
    assert overlay._handle is not None
    assert all(fn in handler_list for handler_list, fn in overlay._HANDLERS)
    del bpy
