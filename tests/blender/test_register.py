# SPDX-License-Identifier: GPL-3.0-or-later
"""Register → unregister → register is clean, and chains survive the extension being off."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
from conftest import EXTENSION
from rigs import blender_module, build_arm, head_world, select_only

CLASSES = (
    "REACH_IK_OT_add",
    "REACH_IK_OT_remove",
    "REACH_IK_OT_convert_constraints",
    "REACH_IK_OT_apply_to_fk",
    "REACH_IK_OT_diagnose",
    "REACH_IK_OT_bake",
    "REACH_IK_PT_bone",
    "REACH_IK_PT_bone_advanced",
    "REACH_IK_PT_sidebar",
    "REACH_IK_PT_bake_report",
)


def _our_handlers(bpy: Any) -> list[str]:
    lists = (
        bpy.app.handlers.frame_change_post,
        bpy.app.handlers.depsgraph_update_post,
        bpy.app.handlers.load_post,
        bpy.app.handlers.render_init,
        bpy.app.handlers.render_complete,
        bpy.app.handlers.render_cancel,
    )
    return [
        f"{fn.__module__}.{fn.__name__}"
        for handlers in lists
        for fn in handlers
        if fn.__module__.startswith(EXTENSION)
    ]


def test_unregister_removes_everything_and_register_restores(clean_scene: Any, addon: Any) -> None:
    import addon_utils

    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    target = obj.pose.bones["hand"].reach_ik.target
    target.location = head_world(obj, "upper") + np.array([0.2, 0.1, 0.1])
    bpy.context.scene.frame_set(2)
    handlers_before = sorted(_our_handlers(bpy))
    assert len(handlers_before) == 9  # live solving's three, the overlay's six
    live = addon.live_state.live
    assert live.rigs
    assert live.records

    addon_utils.disable(EXTENSION, default_set=True)
    try:
        assert _our_handlers(bpy) == []
        # unregister drops live solving's caches (no Blender data kept by a removed add-on)
        assert (live.chains, live.rigs, live.plans, live.records) == ({}, {}, {}, {})
        assert (live.helpers, live.synced, live.echo) == ({}, {}, set())
        for name in CLASSES:
            assert not hasattr(bpy.types, name), name
        assert not hasattr(bpy.types.PoseBone, "reach_ik")
        # The settings stay in the file as ID properties while the extension is off
        # (Blender 5.0 keeps registered properties apart from the user's custom ones).
        pb = obj.pose.bones["hand"]
        stored = pb.bl_system_properties_get() if hasattr(pb, "bl_system_properties_get") else pb
        assert stored["reach_ik"]["has_chain"]
    finally:
        addon_utils.enable(EXTENSION, default_set=True)
    assert sorted(_our_handlers(bpy)) == handlers_before
    for name in CLASSES:
        assert hasattr(bpy.types, name), name
    s = obj.pose.bones["hand"].reach_ik
    assert s.has_chain
    assert s.target == target
    target.location = head_world(obj, "upper") + np.array([0.1, 0.2, 0.1])
    bpy.context.scene.frame_set(3)
    handlers = importlib.import_module(f"{EXTENSION}.ik_addon.handlers")
    status = handlers.status[(obj.name, "hand")]
    assert status.error is not None
    assert status.error < 1e-4


def test_loading_a_file_clears_the_live_state(clean_scene: Any, addon: Any, tmp_path: Any) -> None:
    """Every cache of live solving is dropped when a file is opened, before its first solve."""
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    bpy.context.scene.frame_set(2)
    live = addon.live_state.live
    assert live.records
    name = obj.name
    path = str(tmp_path / "live_state.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    before = live.generation
    live.reported.add("gone")
    live.synced[-1] = before
    live.records[-1] = (before, {})
    bpy.ops.wm.open_mainfile(filepath=path)
    assert live.generation > before
    assert "gone" not in live.reported
    assert -1 not in live.synced
    assert -1 not in live.records
    assert bpy.data.objects[name].pose.bones["hand"].reach_ik.has_chain
