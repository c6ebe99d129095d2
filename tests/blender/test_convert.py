# SPDX-License-Identifier: GPL-3.0-or-later
"""Converting Blender IK constraints to Reach IK chains and back, on the Rigify metarig.

Oracle: Blender's own IK constraint evaluation. After converting, Reach IK must reach the
same targets with the limbs bent the same way (pole and pole angle carried over), and
converting back must give the original constraints.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from rigs import add_empty, blender_module, head_world, tail_world

LIMBS = {"shin.L": -90.0, "shin.R": 0.0, "forearm.L": 45.0, "forearm.R": 180.0}


def _limb_length(obj: Any, tip: str) -> float:
    bone = obj.data.bones[tip]
    return float(bone.length + bone.parent.length)


def _setup_constraints(obj: Any, rng: np.random.Generator) -> dict[str, dict[str, Any]]:
    bpy = blender_module()
    made = {}
    for tip, pole_deg in LIMBS.items():
        root = obj.data.bones[tip].parent.name
        head = head_world(obj, root)
        length = _limb_length(obj, tip)
        d = rng.normal(size=3)
        target = add_empty(f"{tip} IK", head + d / np.linalg.norm(d) * length * 0.75)
        pole = add_empty(f"{tip} pole", head + rng.normal(size=3) * length)
        con = obj.pose.bones[tip].constraints.new("IK")
        con.target, con.pole_target = target, pole
        con.pole_angle = math.radians(pole_deg)
        con.chain_count = 2
        con.iterations = 300
        made[tip] = {
            "target": target,
            "pole": pole,
            "pole_angle": con.pole_angle,
            "chain_count": 2,
            "iterations": 300,
        }
    bpy.context.view_layer.update()
    return made


def _joints(obj: Any, tip: str) -> np.ndarray:
    root = obj.data.bones[tip].parent.name
    return np.array([head_world(obj, root), head_world(obj, tip), tail_world(obj, tip)])


def test_convert_metarig_constraints_both_ways(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = metarig
    made = _setup_constraints(obj, np.random.default_rng(11))
    blender_pose = {tip: _joints(obj, tip) for tip in LIMBS}
    for tip, joints in blender_pose.items():
        target = np.array(made[tip]["target"].location)
        assert np.linalg.norm(joints[-1] - target) < 1e-3 * _limb_length(obj, tip)

    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    for tip in LIMBS:
        pb = obj.pose.bones[tip]
        assert not [c for c in pb.constraints if c.type == "IK"]
        s = pb.reach_ik
        assert s.has_chain
        assert s.target == made[tip]["target"]
        assert s.pole == made[tip]["pole"]
        assert s.chain_length == 2
        assert s.iterations == 300
    bpy.context.view_layer.update()
    for tip, joints in blender_pose.items():
        ours = _joints(obj, tip)
        length = _limb_length(obj, tip)
        target = np.array(made[tip]["target"].location)
        assert np.linalg.norm(ours[-1] - target) <= 1e-4 * length, tip
        # Same bend: the middle joints agree to Blender's own IK accuracy.
        gap = np.linalg.norm(ours[1] - joints[1])
        assert gap <= 2e-3 * length, f"{tip}: knee/elbow {gap * 1000:.2f} mm from Blender's"

    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"FINISHED"}
    for tip in LIMBS:
        pb = obj.pose.bones[tip]
        assert not pb.reach_ik.has_chain
        (con,) = [c for c in pb.constraints if c.type == "IK"]
        assert con.target == made[tip]["target"]
        assert con.pole_target == made[tip]["pole"]
        assert con.chain_count == made[tip]["chain_count"]
        assert con.iterations == made[tip]["iterations"]
        turn = con.pole_angle - made[tip]["pole_angle"]
        assert math.remainder(turn, 2.0 * math.pi) == pytest.approx(0.0, abs=1e-5)
    bpy.context.view_layer.update()
    for tip, joints in blender_pose.items():
        np.testing.assert_allclose(_joints(obj, tip), joints, atol=1e-5)


def test_keep_source_mutes_and_reuses(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = metarig
    _setup_constraints(obj, np.random.default_rng(12))
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK", keep_source=True) == {
        "FINISHED"
    }
    for tip in LIMBS:
        (con,) = [c for c in obj.pose.bones[tip].constraints if c.type == "IK"]
        assert con.mute
        assert obj.pose.bones[tip].reach_ik.enabled
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER", keep_source=True) == {
        "FINISHED"
    }
    for tip in LIMBS:
        (con,) = [c for c in obj.pose.bones[tip].constraints if c.type == "IK"]
        assert not con.mute
        s = obj.pose.bones[tip].reach_ik
        assert s.has_chain
        assert not s.enabled


def test_nothing_to_convert_is_reported(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"CANCELLED"}
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"CANCELLED"}


def _drive(obj: Any, path: str, var: str, expression: str) -> None:
    """Drive ``path`` of ``obj`` by the object's custom property ``var`` (a scripted simple
    expression, evaluated without Python; the default curve modifier taken off)."""
    fc = obj.driver_add(path)
    for m in list(fc.modifiers):
        fc.modifiers.remove(m)
    drv = fc.driver
    drv.type = "SCRIPTED"
    drv.expression = expression
    v = drv.variables.new()
    v.name = var
    v.type = "SINGLE_PROP"
    v.targets[0].id = obj
    v.targets[0].data_path = f'["{var}"]'


def test_driven_mute_and_influence_follow_the_driver(metarig: Any, addon: Any) -> None:
    """A constraint whose mute and influence are driven: the chain's enabled and influence
    follow the same drivers (frames keyed on, muted, on with influence 0.5), and converting
    back restores the constraint with its drivers."""
    bpy = blender_module()
    obj = metarig
    tip = "forearm.L"
    root = obj.data.bones[tip].parent.name
    length = _limb_length(obj, tip)
    goal = head_world(obj, root) + np.array([0.1, -0.2, -0.35]) * length
    target = add_empty("goal", goal)
    con = obj.pose.bones[tip].constraints.new("IK")
    con.target, con.chain_count, con.iterations = target, 2, 300
    # A pole fixes the bend (without one Blender's bend depends on its solver's path).
    con.pole_target = add_empty("pole", head_world(obj, root) + np.array([0.0, 0.5, 0.0]))
    path = con.path_from_id()
    keys = {1: (1.0, 1.0), 5: (0.0, 1.0), 9: (1.0, 1.0), 13: (1.0, 0.5)}
    for f, (on, mix) in keys.items():
        obj["ik_on"], obj["ik_mix"] = on, mix
        obj.keyframe_insert('["ik_on"]', frame=f)
        obj.keyframe_insert('["ik_mix"]', frame=f)
    _drive(obj, f"{path}.mute", "ik_on", "1 - ik_on")
    _drive(obj, f"{path}.influence", "ik_mix", "ik_mix")
    scene = bpy.context.scene
    reference = {}
    for f in keys:
        scene.frame_set(f)
        reference[f] = _joints(obj, tip)
    fk = reference[5]
    assert np.linalg.norm(reference[1][-1] - goal) <= 1e-3 * length

    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    result = addon.convert.last_result
    assert result.converted == [tip]
    assert result.not_carried == []
    assert [c.mute for c in obj.pose.bones[tip].constraints if c.type == "IK"] == [True]
    drivers = obj.animation_data.drivers
    assert drivers.find(f"{path}.mute").mute
    chain = f'pose.bones["{tip}"].reach_ik'
    assert drivers.find(f"{chain}.enabled") is not None
    assert drivers.find(f"{chain}.influence") is not None
    for f, (on, mix) in keys.items():
        scene.frame_set(f)
        ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).pose.bones[tip].reach_ik
        assert (ev.enabled, ev.influence) == (bool(on), pytest.approx(mix)), f"frame {f}"
        joints = _joints(obj, tip)
        if not on:
            np.testing.assert_allclose(joints, fk, atol=1e-6, err_msg=f"frame {f}: not FK")
        elif mix == 1.0:
            gap = np.linalg.norm(joints - reference[f], axis=-1).max()
            assert gap <= 2e-3 * length, f"frame {f}: {gap * 1e3:.2f} mm from Blender's IK"

    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"FINISHED"}
    assert not obj.pose.bones[tip].reach_ik.has_chain
    assert not drivers.find(f"{path}.mute").mute
    assert drivers.find(f"{chain}.enabled") is None
    for f in keys:
        scene.frame_set(f)
        np.testing.assert_allclose(_joints(obj, tip), reference[f], atol=1e-5, err_msg=f"{f}")


def test_what_cannot_be_carried_is_named(metarig: Any, addon: Any) -> None:
    """A keyframed influence and a driven pole angle are reported by name, and the source
    (animated) is kept muted with its animation, not deleted."""
    bpy = blender_module()
    obj = metarig
    _setup_constraints(obj, np.random.default_rng(13))
    con = obj.pose.bones["forearm.L"].constraints["IK"]
    con.influence = 1.0
    con.keyframe_insert("influence", frame=1)
    con.keyframe_insert("mute", frame=1)  # keyed on: must not bring Blender's IK back
    _drive(obj, f"{con.path_from_id()}.pole_angle", "turn", "turn")
    obj["turn"] = 0.5
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    result = addon.convert.last_result
    assert sorted(result.converted) == sorted(LIMBS)
    assert result.not_carried == [
        "'forearm.L': driven 'pole_angle' of 'IK'",
        "'forearm.L': keyframed 'influence' of 'IK'",
        "'forearm.L': keyframed 'mute' of 'IK'",
    ]
    (kept,) = [c for c in obj.pose.bones["forearm.L"].constraints if c.type == "IK"]
    bpy.context.scene.frame_set(2)
    bpy.context.scene.frame_set(1)
    assert kept.mute, "the keyed mute brought Blender's IK back"
    assert obj.animation_data.drivers.find(f"{kept.path_from_id()}.pole_angle").mute
    for tip in LIMBS:
        if tip != "forearm.L":
            assert not [c for c in obj.pose.bones[tip].constraints if c.type == "IK"], tip
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"FINISHED"}
    assert not kept.mute
    assert not obj.animation_data.drivers.find(f"{kept.path_from_id()}.pole_angle").mute
    kept.mute = True
    bpy.context.scene.frame_set(2)
    assert not kept.mute, "the mute keys were not given back"


def test_a_rotation_goal_is_carried_and_met(metarig: Any, addon: Any) -> None:
    """An IK constraint with *Rotation* on (the hand turned to its control) converts to a
    chain that turns the hand to the target as Blender's IK does: with the automatic solver
    (FABRIK for the 3-bone arm, which until 0.9.0 ignored the goal: 43° off here)."""
    from mathutils import Matrix

    bpy = blender_module()
    obj = metarig
    chain = ("upper_arm.L", "forearm.L", "hand.L")
    rng = np.random.default_rng(4)
    for name in chain:
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        pb = obj.pose.bones[name]
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion = (math.cos(0.3), *(math.sin(0.3) * axis))
    bpy.context.view_layer.update()
    goal = np.array(obj.matrix_world) @ np.array(obj.pose.bones["hand.L"].matrix)
    target = add_empty("hand IK", (0.0, 0.0, 0.0))
    target.matrix_world = Matrix(goal.tolist())
    target.location = tail_world(obj, "hand.L")
    for name in chain:
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    con = obj.pose.bones["hand.L"].constraints.new("IK")
    con.target, con.chain_count, con.iterations = target, 3, 500
    con.use_rotation = True
    bpy.context.view_layer.update()

    def hand() -> tuple[np.ndarray, float]:
        m = np.array(obj.matrix_world) @ np.array(obj.pose.bones["hand.L"].matrix)
        a, b = m[:3, :3], goal[:3, :3]
        a, b = a / np.linalg.norm(a, axis=0), b / np.linalg.norm(b, axis=0)
        cos = (np.trace(a.T @ b) - 1.0) / 2.0
        miss = float(np.linalg.norm(tail_world(obj, "hand.L") - np.array(target.location)))
        return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))), miss

    length = sum(obj.data.bones[n].length for n in chain)
    blender_angle, blender_miss = hand()
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    s = obj.pose.bones["hand.L"].reach_ik
    assert s.use_rotation
    assert s.solver == "fabrik"
    bpy.context.view_layer.update()
    angle, miss = hand()
    assert angle <= 0.1, angle
    assert miss <= 1e-4 * length, miss
    assert angle <= blender_angle + 0.1  # (as close as Blender's IK, or closer)
    assert miss <= blender_miss + 1e-4 * length
