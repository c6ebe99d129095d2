# SPDX-License-Identifier: GPL-3.0-or-later
"""The add-on's default solver per chain length (docs/natural.md), and FABRIK live.

Oracles: the chain's settings as the operator leaves them, and Blender's own evaluation of
the shown pose (the effector's world position against the target's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rigs import add_empty, blender_module, build_arm, chain_length, select_only, tail_world


def test_add_chooses_triangulation_for_two_bones_and_fabrik_for_three(
    clean_scene: Any, addon: Any
) -> None:
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["fore"], "fore")
    assert bpy.ops.reach_ik.add(chain_length=2, new_target=True) == {"FINISHED"}
    assert obj.pose.bones["fore"].reach_ik.solver == "triangulation"
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.add(chain_length=3, new_target=True) == {"FINISHED"}
    assert obj.pose.bones["hand"].reach_ik.solver == "fabrik"


def test_a_three_bone_fabrik_chain_reaches_live(clean_scene: Any, addon: Any) -> None:
    """The default 3-bone chain (FABRIK) reaches a target moved within its reach, as
    Blender evaluates the frame."""
    bpy = blender_module()
    obj = build_arm()
    target = add_empty("Goal", (0.0, 0.0, 0.0))
    names = ("upper", "fore", "hand")
    reach = chain_length(obj, names)
    root = np.array(obj.matrix_world @ obj.data.bones["upper"].head_local)
    select_only(obj, ["hand"], "hand")
    target.select_set(True)
    assert bpy.ops.reach_ik.add(chain_length=3) == {"FINISHED"}
    assert obj.pose.bones["hand"].reach_ik.solver == "fabrik"
    scene = bpy.context.scene
    rng = np.random.default_rng(4)
    for f in range(1, 6):
        d = rng.normal(size=3)
        target.location = root + d / np.linalg.norm(d) * reach * rng.uniform(0.3, 0.9)
        target.keyframe_insert("location", frame=f)
    for f in range(1, 6):
        scene.frame_set(f)
        goal = np.array(target.matrix_world.translation)
        err = float(np.linalg.norm(tail_world(obj, "hand") - goal))
        assert err <= 1e-4 * reach, f"frame {f}: {err:.2e} m"
