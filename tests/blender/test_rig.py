# SPDX-License-Identifier: GPL-3.0-or-later
"""Pose bones → core chain: the core's forward kinematics must equal Blender's own pose.

Oracle: Blender's evaluated pose bone matrices. Covers the armature object's transform and
scale, bone roll, a disconnected bone, a gap before the hand, an animated (posed) parent
above the chain root, the root's own location, and every rotation mode.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from rigs import ARM_BONES, blender_module, build_arm, head_world, tail_world

MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")


def _random_rotation(pb: Any, rng: np.random.Generator) -> None:
    mode = pb.rotation_mode
    if mode == "QUATERNION":
        q = rng.normal(size=4)
        pb.rotation_quaternion = q / np.linalg.norm(q) * rng.uniform(0.5, 2.0)
    elif mode == "AXIS_ANGLE":
        pb.rotation_axis_angle = (rng.uniform(-4, 4), *rng.normal(size=3))
    else:
        pb.rotation_euler = rng.uniform(-3.5, 3.5, size=3)


def _base(
    addon: Any, rig: Any, world: np.ndarray, parent: np.ndarray, location: np.ndarray
) -> np.ndarray:
    """The chain's base frame ``(4, 4)`` (world space) from rig.base_rows, on one frame
    (floats); the same frame given as a batch of three gives the same matrices."""
    affine = addon.affine
    one_frame = addon.rig.base_rows(rig, affine.rows_of(world), affine.rows_of(parent), location)
    one = affine.to_array(one_frame, None)
    batch = addon.rig.base_rows(
        rig,
        affine.rows_of(np.repeat(world[None], 3, axis=0)),
        affine.rows_of(np.repeat(parent[None], 3, axis=0)),
        affine.vec_of(np.tile(location, (3, 1))),
    )
    assert all(np.array_equal(affine.to_array(batch, 3)[k], one) for k in range(3))
    return one


@pytest.mark.parametrize("mode", MODES)
def test_chain_fk_matches_blender(clean_scene: Any, addon: Any, mode: str) -> None:
    bpy = blender_module()

    from_core = pytest.importorskip("bl_ext.user_default.reach_ik.core")
    obj = build_arm()
    rng = np.random.default_rng(abs(hash(mode)) % 1000)
    for name in ARM_BONES:
        obj.pose.bones[name].rotation_mode = mode
    for _ in range(3):
        for name in ARM_BONES:
            _random_rotation(obj.pose.bones[name], rng)
        obj.pose.bones["upper"].location = rng.normal(size=3) * 0.05
        bpy.context.view_layer.update()
        rig = addon.chain_spec.rig_chain(obj, "hand", 3, True)
        assert rig.bone_names == ("upper", "fore", "hand")
        assert rig.parent == "shoulder"
        depsgraph = bpy.context.evaluated_depsgraph_get()
        ob_eval = obj.evaluated_get(depsgraph)
        parent = np.array(ob_eval.pose.bones["shoulder"].matrix)
        root_loc = np.array(ob_eval.pose.bones["upper"].location)
        base = _base(addon, rig, np.array(obj.matrix_world), parent, root_loc)
        q = np.array(
            [
                addon.rotation_modes.values_to_quaternion(
                    mode, addon.rotation_modes.read_rotation(obj.pose.bones[n])
                )
                for n in rig.bone_names
            ]
        )
        positions, _ = from_core.forward_kinematics(rig.chain, q)
        got = (base @ np.c_[positions, np.ones(len(positions))].T).T[:, :3]
        want = [head_world(obj, n) for n in rig.bone_names] + [tail_world(obj, "hand")]
        np.testing.assert_allclose(got, np.array(want), atol=2e-5)


def test_chain_without_tail_ends_at_parent(clean_scene: Any, addon: Any) -> None:
    obj = build_arm()
    rig = addon.chain_spec.rig_chain(obj, "hand", 2, False)
    assert rig.bone_names == ("upper", "fore")
    np.testing.assert_allclose(rig.chain.offsets[-1], [0.0, obj.data.bones["fore"].length, 0.0])


def test_limits_map_blender_ik_settings(clean_scene: Any, addon: Any) -> None:
    obj = build_arm()
    pb = obj.pose.bones["fore"]
    pb.lock_ik_y = pb.lock_ik_z = True
    pb.use_ik_limit_x = True
    pb.ik_min_x, pb.ik_max_x = math.radians(-150.0), math.radians(5.0)
    pb.ik_stiffness_x = 0.3
    lim = addon.rig.bone_limits(pb)
    assert lim.lock == (False, True, True)
    assert lim.kind == "hinge"
    assert lim.ranges[0] == pytest.approx((math.radians(-150.0), math.radians(5.0)), abs=1e-6)
    assert lim.ranges[1] is None
    assert lim.ranges[2] is None
    assert lim.stiffness == pytest.approx((0.3, 0.0, 0.0), abs=1e-6)


#: A reference value per mode near the ±π (or 2π) wrap, where continuity matters.
NEAR_WRAP = {
    **{order: (3.1, -3.0, 2.9, 0.0) for order in MODES[1:7]},
    "QUATERNION": (0.0, 0.6, 0.0, -0.8),
    "AXIS_ANGLE": (3.1, 0.0, 0.0, -1.0),
}


@pytest.mark.parametrize("mode", MODES)
def test_rotation_values_round_trip_and_continuity(blender: Any, addon: Any, mode: str) -> None:
    """Values written for a quaternion give the same rotation in Blender's own conversion;
    a small turn away from a value near the wrap stays near that value."""
    from mathutils import Euler, Quaternion

    ev = addon.rotation_modes
    ref = NEAR_WRAP[mode]
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        values = ev.quaternion_to_values(q, mode, ref)
        if mode == "QUATERNION":
            got = Quaternion(values)
        elif mode == "AXIS_ANGLE":
            got = Quaternion(values[1:], values[0])
        else:
            got = Euler(values[:3], mode).to_quaternion()
        assert abs(abs(Quaternion(q.tolist()).dot(got)) - 1.0) < 1e-6  # mathutils is float32
    ref_q = Quaternion(ev.values_to_quaternion(mode, ref))
    for _ in range(20):
        nudge = Quaternion(rng.normal(size=3).tolist(), math.radians(1.0))
        values = ev.quaternion_to_values(np.array(nudge @ ref_q), mode, ref)
        assert np.max(np.abs(np.subtract(values, ref))) < math.radians(3.0)


def test_connected_root_ignores_its_location(clean_scene: Any, addon: Any) -> None:
    """Blender ignores a connected bone's location channels; so must the chain's base."""
    bpy = blender_module()
    from_core = pytest.importorskip("bl_ext.user_default.reach_ik.core")
    obj = build_arm()
    obj.pose.bones["fore"].location = (0.3, -0.2, 0.1)
    obj.pose.bones["fore"].rotation_mode = "XYZ"
    obj.pose.bones["fore"].rotation_euler = (0.4, 0.1, -0.3)
    bpy.context.view_layer.update()
    rig = addon.chain_spec.rig_chain(obj, "hand", 2, True)
    assert rig.bone_names == ("fore", "hand")
    assert rig.root_connected
    ob_eval = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    parent = np.array(ob_eval.pose.bones["upper"].matrix)
    location = np.array(obj.pose.bones["fore"].location)
    base = _base(addon, rig, np.array(obj.matrix_world), parent, location)
    ev = addon.rotation_modes
    q = np.array(
        [
            ev.values_to_quaternion(
                obj.pose.bones[n].rotation_mode, ev.read_rotation(obj.pose.bones[n])
            )
            for n in rig.bone_names
        ]
    )
    positions, _ = from_core.forward_kinematics(rig.chain, q)
    got = (base @ np.c_[positions, np.ones(len(positions))].T).T[:, :3]
    want = [head_world(obj, n) for n in rig.bone_names] + [tail_world(obj, "hand")]
    np.testing.assert_allclose(got, np.array(want), atol=2e-5)
