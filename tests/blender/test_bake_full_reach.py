# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake == live on the frames where the pose is most sensitive: targets at 0.9999998, 1 and
1.0000002 of the chain's reach and at its rest tail (the rest / T-pose), in three
directions — batched (no fallback), replayed without Reach IK within 1e-5 m and 0.01°."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rigs import add_empty, blender_module
from test_bake import assert_same_pose, probe_without_addon, world_track

FRACTIONS = (0.9999998, 1.0, 1.0000002, 0.999, 0.5)


def test_targets_at_full_reach_and_rest_bake_as_they_play(
    metarig: Any, addon: Any, tmp_path: Path
) -> None:
    bpy = blender_module()
    obj = metarig
    bones = obj.data.bones
    world = np.array(obj.matrix_world)

    def point(name: str, attr: str) -> np.ndarray:
        return (world @ np.append(np.array(getattr(bones[name], attr)), 1.0))[:3]

    head = point("upper_arm.L", "head_local")
    elbow = point("forearm.L", "head_local")
    tail = point("forearm.L", "tail_local")
    reach = float(np.linalg.norm(elbow - head) + np.linalg.norm(tail - elbow))
    target = add_empty("target", tail)
    frame = 1
    for direction in ((1.0, 0.0, 0.0), (0.6, -0.3, -0.5), (0.0, 0.2, -1.0)):
        unit = np.array(direction) / np.linalg.norm(direction)
        for fraction in FRACTIONS:
            target.location = head + unit * reach * fraction
            target.keyframe_insert("location", frame=frame)
            frame += 1
    target.location = tail  # the rest pose's own effector: the chain stays at rest
    target.keyframe_insert("location", frame=frame)
    for fcurve in target.animation_data.action.layers[0].strips[0].channelbags[0].fcurves:
        for key in fcurve.keyframe_points:
            key.interpolation = "CONSTANT"
    s = obj.pose.bones["forearm.L"].reach_ik
    s.chain_length, s.use_tail, s.target = 2, True, target
    s.enabled = s.has_chain = True
    bpy.ops.object.mode_set(mode="OBJECT")
    frames = list(range(1, frame + 1))
    chain = [(obj.name, "upper_arm.L"), (obj.name, "forearm.L")]
    live = world_track(chain, frames)
    result = addon.bake.bake(obj, addon.bake.BakeOptions(1, frame, reduce=False))
    assert result.method == "batched, from F-curves", result.warnings
    assert result.warnings == []
    path = tmp_path / "full_reach.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    baked = probe_without_addon(path, chain, frames, tmp_path)
    assert_same_pose(live, baked, [bones[b].length for _, b in chain], chain)
