# SPDX-License-Identifier: GPL-3.0-or-later
"""Feedback loops (``ik_addon/dependencies.py``): a chain reaching for a bone it moves — its
own, a child of one, or through a cycle of chains — is refused everywhere with the same
message (live status, bake, the Add and Apply operators, ``scripts/bake.py --chain``), and
its bones show their FK pose on every evaluation, whatever was shown before."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rigs import blender_module, build_arm, select_only

REPO = Path(__file__).resolve().parents[2]


def _chain(obj: Any, tip: str, length: int, target: Any, bone: str) -> None:
    s = obj.pose.bones[tip].reach_ik
    s.chain_length = length
    s.use_tail = True
    s.target = target
    s.target_bone = bone
    s.enabled = True
    s.has_chain = True


def _pose(obj: Any, names: list[str]) -> np.ndarray:
    return np.array([np.array(obj.pose.bones[n].matrix) for n in names])


def _fk_pose(obj: Any, names: list[str]) -> np.ndarray:
    """The pose with every chain off (what Blender shows without Reach IK)."""
    bpy = blender_module()
    tips = [pb.name for pb in obj.pose.bones if pb.reach_ik.has_chain]
    for tip in tips:
        obj.pose.bones[tip].reach_ik.enabled = False
    bpy.context.scene.frame_set(1)
    pose = _pose(obj, names)
    for tip in tips:
        obj.pose.bones[tip].reach_ik.enabled = True
    return pose


@pytest.mark.parametrize("goal", ["own bone", "child of the chain"])
def test_a_chain_reaching_for_what_it_moves_is_refused(
    clean_scene: Any, addon: Any, goal: str
) -> None:
    bpy = blender_module()
    arm = build_arm()
    arm.pose.bones["upper"].rotation_quaternion = (0.9, 0.3, 0.2, 0.1)
    _chain(arm, "fore", 2, arm, "fore" if goal == "own bone" else "hand")
    names = ["upper", "fore", "hand"]
    fk = _fk_pose(arm, names)
    for frame in (1, 2, 1, 1, 3, 1):
        bpy.context.scene.frame_set(frame)
        if frame == 1:
            assert np.allclose(_pose(arm, names), fk, atol=1e-6), "the FK pose shows"
    status = addon.handlers.status[(arm.name, "fore")]
    assert status.error is None
    assert "feedback loop" in status.message
    assert "moved by this chain itself" in status.message
    with pytest.raises(addon.bake.BakeError, match="feedback loop"):
        addon.bake.bake(arm, addon.bake.BakeOptions(1, 5))
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    select_only(arm, ["fore"], "fore")
    with pytest.raises(RuntimeError, match="feedback loop"):
        bpy.ops.reach_ik.apply_to_fk(all_chains=False)


def test_the_add_operator_refuses_a_child_of_the_chain(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    arm = build_arm()
    bpy.ops.object.mode_set(mode="POSE")
    select_only(arm, ["fore", "hand"], "fore")
    with pytest.raises(RuntimeError, match="feedback loop"):
        bpy.ops.reach_ik.add(chain_length=2)
    assert not arm.pose.bones["fore"].reach_ik.has_chain


def test_two_chains_reaching_for_each_other_are_refused_and_stable(
    metarig: Any, addon: Any
) -> None:
    bpy = blender_module()
    _chain(metarig, "forearm.L", 2, metarig, "hand.R")
    _chain(metarig, "forearm.R", 2, metarig, "hand.L")
    names = ["upper_arm.L", "forearm.L", "upper_arm.R", "forearm.R"]
    fk = _fk_pose(metarig, names)
    seen = []
    for _ in range(4):
        bpy.context.scene.frame_set(1)
        seen.append(_pose(metarig, names))
    for pose in seen:
        assert np.allclose(pose, fk, atol=1e-6)
    for tip in ("forearm.L", "forearm.R"):
        message = addon.handlers.status[(metarig.name, tip)].message
        assert "depend back on this chain" in message, message


def test_an_acyclic_dependency_is_solved_in_order(metarig: Any, addon: Any) -> None:
    """One chain reaching for a bone another chain moves (no loop) is solved after it:
    the same pose whatever was shown before."""
    bpy = blender_module()
    target = bpy.data.objects.new("goal", None)
    target.location = (0.4, -0.2, 1.2)
    bpy.context.scene.collection.objects.link(target)
    _chain(metarig, "forearm.R", 2, target, "")
    _chain(metarig, "forearm.L", 2, metarig, "hand.R")
    names = ["upper_arm.L", "forearm.L"]
    bpy.context.scene.frame_set(1)
    first = _pose(metarig, names)
    for _ in range(3):
        bpy.context.scene.frame_set(1)
        assert np.allclose(_pose(metarig, names), first, atol=1e-6)
    assert addon.handlers.status[(metarig.name, "forearm.L")].message == ""


def test_the_command_line_refuses_an_own_bone_target(blender: Any, tmp_path: Path) -> None:
    from reach_ik_tools import demo_scene

    bpy = blender_module()
    bpy.ops.wm.read_homefile(use_empty=True)
    demo_scene.build(10)
    source = tmp_path / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source), copy=True)
    with tempfile.TemporaryDirectory(prefix="reach-ik-script-user-") as user:
        done = subprocess.run(
            [
                sys.executable,
                str(REPO / "scripts" / "bake.py"),
                str(source),
                "--out",
                str(tmp_path / "out.blend"),
                "--armature",
                "Human",
                "--chain",
                "tip=forearm.L,target=Human,target_bone=forearm.L",
            ],
            env={**os.environ, "BLENDER_USER_RESOURCES": user},
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert done.returncode == 2, done.stderr
    assert "feedback loop" in done.stderr
    assert not (tmp_path / "out.blend").exists()
