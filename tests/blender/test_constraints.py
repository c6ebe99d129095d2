# SPDX-License-Identifier: GPL-3.0-or-later
"""How live solving shows poses, in real Blender: a *Reach IK* Copy Rotation constraint on
every bone a solved chain drives, targeting a helper empty that Reach IK owns.

Checked on the data (constraint settings, helpers in no scene with a fake user and their
``reach_ik_owner``) and through Blender's own evaluation (``frame_set`` and the evaluated
pose matrices): the target is reached (≤ 1e-4 of the chain length), a chain switched off,
animated off or removed shows the FK pose bit for bit, a duplicated armature solves through
helpers of its own, save/reload and deleted helpers or armatures leave nothing broken.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from rigs import (
    ARM_BONES,
    add_empty,
    blender_module,
    build_arm,
    chain_length,
    select_only,
    shown_rotation,
    tail_world,
    world_matrix,
)

CHAIN = ("upper", "fore", "hand")
NAME = "Reach IK"
OWNER = "reach_ik_owner"
#: Rotation modes and channel values of the FK pose set on the chain bones.
FK = {
    "upper": ("YZX", (0.3, -0.4, 0.2)),
    "fore": ("AXIS_ANGLE", (0.7, 0.2, 0.9, -0.3)),
    "hand": ("QUATERNION", (0.8, 0.0, 0.6, 0.0)),
}


def _channels(obj: Any) -> dict[str, tuple[float, ...]]:
    """The chain bones' rotation channels, each in its rotation mode."""
    out = {}
    for name in CHAIN:
        pb = obj.pose.bones[name]
        if pb.rotation_mode == "QUATERNION":
            out[name] = tuple(pb.rotation_quaternion)
        elif pb.rotation_mode == "AXIS_ANGLE":
            out[name] = tuple(pb.rotation_axis_angle)
        else:
            out[name] = tuple(pb.rotation_euler)
    return out


def _set_fk(obj: Any) -> dict[str, tuple[float, ...]]:
    """Pose the chain bones with :data:`FK` (mixed rotation modes); returns the channels."""
    for name, (mode, value) in FK.items():
        pb = obj.pose.bones[name]
        pb.rotation_mode = mode
        if mode == "QUATERNION":
            pb.rotation_quaternion = value
        elif mode == "AXIS_ANGLE":
            pb.rotation_axis_angle = value
        else:
            pb.rotation_euler = value
    blender_module().context.view_layer.update()
    return _channels(obj)


def _reachable(obj: Any, seed: int, count: int = 1) -> list[np.ndarray]:
    """World positions of the hand's tail in random poses of the chain bones (reachable by
    construction). Only for an armature without chains yet: the channels show directly.
    The bones are left in their rest pose, quaternion mode."""
    bpy = blender_module()
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(count):
        for name in CHAIN:
            pb = obj.pose.bones[name]
            pb.rotation_mode = "QUATERNION"
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            pb.rotation_quaternion = (math.cos(0.5), *(math.sin(0.5) * axis))
        bpy.context.view_layer.update()
        points.append(tail_world(obj, "hand"))
    for name in CHAIN:
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    return points


def _pose(obj: Any) -> np.ndarray:
    """Blender's evaluated world matrices ``(4, 4, 4)`` of the arm's bones."""
    return np.array([world_matrix(obj, n) for n in ARM_BONES])


def _add_chain(obj: Any) -> Any:
    """A 3-bone chain on 'hand' added by the operator with a new target; its settings."""
    bpy = blender_module()
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.add(chain_length=3, new_target=True) == {"FINISHED"}
    return obj.pose.bones["hand"].reach_ik


def _ours(pose_bone: Any) -> list[Any]:
    """The bone's constraints named like Reach IK's."""
    return [c for c in pose_bone.constraints if c.name.startswith(NAME)]


def _helpers() -> list[Any]:
    """Every object that carries the helper mark (whatever it points to)."""
    return [o for o in blender_module().data.objects if OWNER in o]


def _error(obj: Any, target: Any) -> float:
    return float(
        np.linalg.norm(tail_world(obj, "hand") - np.array(target.matrix_world.translation))
    )


def _check_shown(obj: Any) -> list[Any]:
    """Each chain bone shows its pose through exactly one well-formed Reach IK constraint
    whose helper belongs to ``obj`` and holds the rotation the bone shows; returns the
    helpers (root → tip)."""
    helpers = []
    for name in CHAIN:
        pb = obj.pose.bones[name]
        assert [c.name for c in pb.constraints] == [NAME], name
        con = pb.constraints[NAME]
        assert con.type == "COPY_ROTATION"
        assert (con.owner_space, con.target_space, con.mix_mode) == ("LOCAL", "WORLD", "REPLACE")
        assert con.influence == 1.0
        assert not con.mute
        helper = con.target
        assert helper is not None, name
        assert helper.type == "EMPTY"
        assert helper.users_scene == ()
        assert helper.use_fake_user
        assert helper[OWNER] == obj.name
        q = np.array(helper.rotation_quaternion)
        q = q if q[0] >= 0.0 else -q
        np.testing.assert_allclose(shown_rotation(obj, name), q, atol=2e-6)
        helpers.append(helper)
    assert len({h.name for h in helpers}) == len(CHAIN), "one helper per bone"
    return helpers


def test_chain_bones_carry_one_constraint_each(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    (point,) = _reachable(obj, seed=1)
    fk = _set_fk(obj)
    s = _add_chain(obj)
    _check_shown(obj)
    s.target.location = point
    bpy.context.scene.frame_set(4)
    _check_shown(obj)
    assert _error(obj, s.target) <= 1e-4 * chain_length(obj, CHAIN)
    assert not obj.pose.bones["shoulder"].constraints, "bones outside the chain stay bare"
    assert _channels(obj) == fk, "live solving never writes the rotation channels"
    assert {h.name for h in _helpers()} == {
        obj.pose.bones[n].constraints[NAME].target.name for n in CHAIN
    }, "no stray helpers"


def test_disable_removes_constraints_and_enable_brings_them_back(
    clean_scene: Any, addon: Any
) -> None:
    bpy = blender_module()
    obj = build_arm()
    (point,) = _reachable(obj, seed=2)
    _set_fk(obj)
    fk_pose = _pose(obj)
    s = _add_chain(obj)
    s.target.location = point
    bpy.context.scene.frame_set(2)
    names = [h.name for h in _check_shown(obj)]
    assert not np.allclose(_pose(obj), fk_pose), "the chain moves the bones"
    s.enabled = False
    bpy.context.view_layer.update()
    assert not any(_ours(obj.pose.bones[n]) for n in CHAIN)
    assert not [n for n in names if n in bpy.data.objects], "helpers deleted"
    assert _helpers() == []
    np.testing.assert_array_equal(_pose(obj), fk_pose)
    bpy.context.scene.frame_set(3)
    np.testing.assert_array_equal(_pose(obj), fk_pose)
    s.enabled = True
    bpy.context.scene.frame_set(4)
    _check_shown(obj)
    assert _error(obj, s.target) <= 1e-4 * chain_length(obj, CHAIN)


def test_animated_enabled_switches_between_ik_and_exact_fk(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    scene = bpy.context.scene
    obj = build_arm()
    (point,) = _reachable(obj, seed=3)
    _set_fk(obj)
    fk_pose = _pose(obj)
    s = _add_chain(obj)
    s.target.location = point
    for frame, on in ((1, True), (10, False)):
        s.enabled = on
        assert obj.keyframe_insert('pose.bones["hand"].reach_ik.enabled', frame=frame)
    (layer,) = obj.animation_data.action.layers
    (fcurve,) = (fc for strip in layer.strips for bag in strip.channelbags for fc in bag.fcurves)
    assert fcurve.data_path == 'pose.bones["hand"].reach_ik.enabled'
    for key in fcurve.keyframe_points:
        key.interpolation = "CONSTANT"
    length = chain_length(obj, CHAIN)
    scene.frame_set(5)
    assert _error(obj, s.target) <= 1e-4 * length
    _check_shown(obj)
    ik_pose = _pose(obj)
    scene.frame_set(12)
    assert not any(_ours(obj.pose.bones[n]) for n in CHAIN)
    assert _helpers() == []
    np.testing.assert_array_equal(_pose(obj), fk_pose)
    scene.frame_set(5)
    np.testing.assert_array_equal(_pose(obj), ik_pose)
    scene.frame_set(12)
    np.testing.assert_array_equal(_pose(obj), fk_pose)


def test_duplicate_gets_its_own_helpers(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    scene = bpy.context.scene
    obj = build_arm()
    here, there = _reachable(obj, seed=4, count=2)
    s = _add_chain(obj)
    s.target.location = here
    scene.frame_set(1)
    originals = {h.name for h in _check_shown(obj)}
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.object.duplicate() == {"FINISHED"}
    dup = bpy.context.object
    assert dup != obj
    assert dup.data != obj.data
    shift = np.array([2.0, -1.0, 0.5])
    dup.location = np.array(obj.location) + shift
    dup_settings = dup.pose.bones["hand"].reach_ik
    assert dup_settings.has_chain
    dup_settings.target = add_empty("dup target", there + shift)
    scene.frame_set(2)
    copies = {h.name for h in _check_shown(dup)}
    assert {h.name for h in _check_shown(obj)} == originals, "the original keeps its helpers"
    assert not copies & originals
    length = chain_length(obj, CHAIN)
    assert _error(obj, s.target) <= 1e-4 * length
    assert _error(dup, dup_settings.target) <= 1e-4 * length
    assert len(_helpers()) == 2 * len(CHAIN)


def test_save_and_reload_keep_constraints_and_helpers(
    clean_scene: Any, addon: Any, tmp_path: Any
) -> None:
    bpy = blender_module()
    obj = build_arm()
    (point,) = _reachable(obj, seed=5)
    s = _add_chain(obj)
    s.target.location = point
    bpy.context.scene.frame_set(3)
    names = {h.name for h in _check_shown(obj)}
    path = str(tmp_path / "constraints.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True)
    assert _helpers() == []
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Arm"]
    s = obj.pose.bones["hand"].reach_ik
    assert s.has_chain
    assert s.enabled
    assert s.chain_length == 3
    assert s.target is not None
    bpy.context.scene.frame_set(3)
    assert {h.name for h in _check_shown(obj)} == names
    assert {h.name for h in _helpers()} == names
    assert _error(obj, s.target) <= 1e-4 * chain_length(obj, CHAIN)


@pytest.mark.parametrize("how", ["operator", "data"])
def test_helpers_of_a_deleted_armature_go_on_load(
    clean_scene: Any, addon: Any, tmp_path: Any, how: str
) -> None:
    bpy = blender_module()
    obj = build_arm()
    target = _add_chain(obj).target.name
    bpy.context.scene.frame_set(2)
    assert len(_helpers()) == len(CHAIN)
    bpy.ops.object.mode_set(mode="OBJECT")
    if how == "operator":
        bpy.ops.object.select_all(action="DESELECT")
        obj.select_set(True)
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.object.delete() == {"FINISHED"}
    else:
        bpy.data.objects.remove(obj)
    path = str(tmp_path / "deleted.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    assert target in bpy.data.objects, "the file was read (the target empty is there)"
    assert _helpers() == []
    assert "Arm" not in bpy.data.objects


def test_deleted_helper_is_made_again(clean_scene: Any, addon: Any, capsys: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    first, second = _reachable(obj, seed=7, count=2)
    s = _add_chain(obj)
    s.target.location = first
    bpy.context.scene.frame_set(1)
    bpy.data.objects.remove(obj.pose.bones["fore"].constraints[NAME].target)
    assert obj.pose.bones["fore"].constraints[NAME].target is None
    s.target.location = second
    bpy.context.scene.frame_set(2)
    _check_shown(obj)
    assert _error(obj, s.target) <= 1e-4 * chain_length(obj, CHAIN)
    assert len(_helpers()) == len(CHAIN)
    assert addon.live_state.live.reported == set()
    assert "Reach IK: solving" not in capsys.readouterr().out


def test_remove_operator_leaves_no_constraint_or_helper(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    (point,) = _reachable(obj, seed=8)
    fk = _set_fk(obj)
    fk_pose = _pose(obj)
    s = _add_chain(obj)
    s.target.location = point
    bpy.context.scene.frame_set(2)
    _check_shown(obj)
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.remove() == {"FINISHED"}
    assert not any(_ours(pb) for pb in obj.pose.bones)
    assert _helpers() == []
    bpy.context.scene.frame_set(3)
    assert not any(_ours(pb) for pb in obj.pose.bones)
    assert _helpers() == []
    assert _channels(obj) == fk
    np.testing.assert_array_equal(_pose(obj), fk_pose)


def test_shortened_chain_frees_the_dropped_bone(clean_scene: Any, addon: Any) -> None:
    """Chain length 3 → 2: the root bone loses its constraint (sync) and shows FK again."""
    bpy = blender_module()
    obj = build_arm()
    _set_fk(obj)
    fk_upper = world_matrix(obj, "upper")
    s = _add_chain(obj)
    s.target.location = tail_world(obj, "hand") + np.array([0.05, -0.1, 0.05])
    bpy.context.scene.frame_set(1)
    _check_shown(obj)
    assert not np.allclose(world_matrix(obj, "upper"), fk_upper)
    s.chain_length = 2
    bpy.context.scene.frame_set(2)
    assert not _ours(obj.pose.bones["upper"])
    assert [len(_ours(obj.pose.bones[n])) for n in ("fore", "hand")] == [1, 1]
    assert len(_helpers()) == 2
    np.testing.assert_array_equal(world_matrix(obj, "upper"), fk_upper)


def _remove_by_hand(obj: Any, bone: str) -> None:
    """Delete a bone's Reach IK constraint as the Bone Constraints panel does; the update
    that follows is what the UI's redraw runs."""
    pb = obj.pose.bones[bone]
    pb.constraints.remove(pb.constraints[NAME])
    blender_module().context.view_layer.update()


def test_constraint_deleted_by_hand_comes_back(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    first, second = _reachable(obj, seed=9, count=2)
    s = _add_chain(obj)
    s.target.location = first
    bpy.context.scene.frame_set(1)
    _remove_by_hand(obj, "fore")
    s.target.location = second
    bpy.context.scene.frame_set(2)
    _check_shown(obj)
    assert _error(obj, s.target) <= 1e-4 * chain_length(obj, CHAIN)


def test_constraint_deleted_by_hand_leaves_no_helper(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    _add_chain(obj)
    bpy.context.scene.frame_set(1)
    _remove_by_hand(obj, "fore")
    bpy.context.scene.frame_set(2)
    assert len(_helpers()) == len(CHAIN)
