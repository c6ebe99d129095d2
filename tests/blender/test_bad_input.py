# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input gives a clear message and loses nothing: no armature, a chain longer than the
bone hierarchy, a deleted target, a zero-length link, a target at the chain's root."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rigs import (
    add_empty,
    blender_module,
    build_arm,
    head_world,
    select_only,
    shown_rotation,
)

CHAIN = ("upper", "fore", "hand")


def _quats(obj: Any) -> list[tuple[float, ...]]:
    """The chain's rotations as Blender's evaluated pose shows them."""
    return [tuple(np.round(shown_rotation(obj, n), 6).tolist()) for n in CHAIN]


def test_operators_need_an_armature(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    empty = add_empty("NotAnArmature", (0, 0, 0))
    bpy.context.view_layer.objects.active = empty
    for op in (bpy.ops.reach_ik.add, bpy.ops.reach_ik.remove, bpy.ops.reach_ik.apply_to_fk):
        assert not op.poll()
        with pytest.raises(RuntimeError, match="Needs an active armature object"):
            op()
    with pytest.raises(RuntimeError, match="Needs an active armature object"):
        bpy.ops.reach_ik.convert_constraints()


def test_add_needs_pose_mode(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    build_arm()
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(RuntimeError, match="Needs Pose Mode"):
        bpy.ops.reach_ik.add()


def test_chain_longer_than_hierarchy(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    with pytest.raises(RuntimeError, match=r"longer than the bone hierarchy.*at most 4"):
        bpy.ops.reach_ik.add(chain_length=9)
    assert not obj.pose.bones["hand"].reach_ik.has_chain
    assert "hand target" not in bpy.data.objects
    # Made too long afterwards in the panel: a message, and the bones show their FK pose.
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    s = obj.pose.bones["hand"].reach_ik
    s.target.location = head_world(obj, "upper") + np.array([0.2, 0.2, 0.0])
    bpy.context.scene.frame_set(2)
    assert _quats(obj) != [(1.0, 0.0, 0.0, 0.0)] * 3
    s.chain_length = 7
    bpy.context.scene.frame_set(3)
    status = addon.handlers.status[(obj.name, "hand")]
    assert status.error is None
    assert "longer than the bone hierarchy" in status.message
    assert _quats(obj) == [(1.0, 0.0, 0.0, 0.0)] * 3


def test_deleted_target(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    s = obj.pose.bones["hand"].reach_ik
    s.target.location = head_world(obj, "upper") + np.array([0.1, 0.3, 0.0])
    bpy.context.scene.frame_set(2)
    bpy.data.objects.remove(s.target)
    bpy.context.scene.frame_set(3)
    assert s.target is None
    status = addon.handlers.status[(obj.name, "hand")]
    assert status.message.startswith("no target")
    assert _quats(obj) == [(1.0, 0.0, 0.0, 0.0)] * 3
    assert s.has_chain, "the chain's settings stay, waiting for a new target"


def test_a_rotation_target_of_zero_scale_is_refused_by_name(clean_scene: Any, addon: Any) -> None:
    """*Rotation* reads the target's axes; one squashed to zero scale has no direction on
    that axis. Live solving and the bake say so in the chain's status and the bake's error
    (until 0.9.0 live solving failed with a bare ZeroDivisionError and the bake raised it),
    and the FK pose shows, finite."""
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    s = obj.pose.bones["hand"].reach_ik
    s.use_rotation = True
    s.target.location = head_world(obj, "upper") + np.array([0.1, 0.3, 0.0])
    s.target.scale = (0.0, 1.0, 1.0)
    bpy.context.scene.frame_set(2)
    status = addon.handlers.status[(obj.name, "hand")]
    assert status.error is None
    assert "zero scale" in status.message
    assert "Rotation target" in status.message
    assert _quats(obj) == [(1.0, 0.0, 0.0, 0.0)] * 3
    with pytest.raises(addon.bake.BakeError, match="zero scale on an axis"):
        addon.bake.bake(obj, addon.bake.BakeOptions(1, 3))
    s.target.scale = (1.0, 1.0, 1.0)
    bpy.context.scene.frame_set(3)
    assert addon.handlers.status[(obj.name, "hand")].error is not None


def test_target_bone_inside_the_chain(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand", "fore"], "hand")
    with pytest.raises(RuntimeError, match="part of the chain"):
        bpy.ops.reach_ik.add(chain_length=3)
    assert not obj.pose.bones["hand"].reach_ik.has_chain


def test_zero_length_link(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    arm = bpy.data.armatures.new("Zero")
    obj = bpy.data.objects.new("Zero", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    a = arm.edit_bones.new("a")
    a.head, a.tail = (0, 0, 0), (0, 0, 1)
    b = arm.edit_bones.new("b")  # disconnected, head on a's head: a zero-length link
    b.head, b.tail, b.parent = (0, 0, 0), (0, 1, 0), a
    bpy.ops.object.mode_set(mode="POSE")
    select_only(obj, ["b"], "b")
    bpy.ops.reach_ik.add(chain_length=2, new_target=True)
    bpy.context.scene.frame_set(2)
    status = addon.handlers.status[(obj.name, "b")]
    assert status.error is None
    assert "zero length" in status.message
    np.testing.assert_allclose(shown_rotation(obj, "a"), (1.0, 0.0, 0.0, 0.0), atol=1e-6)


def test_target_on_the_chain_root_gives_finite_pose(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    s = obj.pose.bones["hand"].reach_ik
    s.target.location = head_world(obj, "upper")
    bpy.context.scene.frame_set(2)
    assert np.all(np.isfinite(_quats(obj)))
    status = addon.handlers.status[(obj.name, "hand")]
    assert status.error is not None
    assert np.isfinite(status.error)
    assert all(np.isfinite(np.array(obj.pose.bones[n].matrix)).all() for n in CHAIN)
