# SPDX-License-Identifier: GPL-3.0-or-later
"""Convert IK on a Rigify-**generated** quadruped (Rigify's wolf metarig), against the rig's
own IK as Blender evaluates it.

The wolf's paws chain IK on IK: each front paw has ``MCH-front_shin_ik`` (with the pole
switch) and ``MCH-front_shin_ik2`` (a second two-bone IK), and the first one's target
follows the second one through constraints (``MCH-front_foot_track`` aims at
``MCH-front_shin_ik2`` with a *Damped Track*; the heel control and the IK target hang from
it); the rear paws add ``MCH-foot_ik3`` below ``MCH-shin_ik2``. Oracle: the legs' DEF
bones as Blender evaluates the rig with its own IK, over an animated range (the paws' IK
controls keyed; stretch off).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rigs import blender_module, new_armature

FRAMES = list(range(1, 41, 3))
#: The paws' IK controls that are keyed.
CONTROLS = ("foot_ik", "front_foot_ik", "front_thigh_ik", "thigh_ik", "foot_heel_ik")
#: The generated wolf's IK tips (ten chains).
TIPS = {
    f"MCH-{name}.{side}"
    for side in "LR"
    for name in ("shin_ik", "shin_ik2", "foot_ik3", "front_shin_ik", "front_shin_ik2")
}


@pytest.fixture(scope="module")
def wolf_file(blender: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A .blend holding the wolf metarig and the rig Rigify generated from it."""
    from rigify.metarigs.Animals import wolf

    blender.ops.wm.read_homefile(use_empty=True)
    meta = new_armature("wolf_metarig")
    wolf.create(meta)
    blender.ops.object.mode_set(mode="OBJECT")
    assert blender.ops.pose.rigify_generate() == {"FINISHED"}
    path = tmp_path_factory.mktemp("wolf") / "wolf.blend"
    blender.ops.wm.save_as_mainfile(filepath=str(path))
    return path


def _leg_bones(rig: Any) -> list[str]:
    words = ("thigh", "shin", "foot", "toe")
    return [
        b.name
        for b in rig.pose.bones
        if b.name.startswith("DEF-") and any(w in b.name for w in words)
    ]


def _record(rig: Any, bones: list[str]) -> np.ndarray:
    """Heads and tails ``(F, B, 2, 3)`` of ``bones`` in world space at :data:`FRAMES`."""
    scene = blender_module().context.scene
    out = []
    for f in FRAMES:
        scene.frame_set(f)
        world = rig.matrix_world
        out.append(
            [
                [(world @ rig.pose.bones[n].head)[:], (world @ rig.pose.bones[n].tail)[:]]
                for n in bones
            ]
        )
    return np.array(out)


def test_converted_wolf_plays_its_own_ik_pose(wolf_file: Path, addon: Any) -> None:
    """Every IK chain converts; the converted rig shows, on the frames' first showing and
    again, the same pose (bit for bit), within 5 mm of the rig's own IK on every leg bone (2.9 mm).
    (What remains is the front paws' second IK, which has no pole and a shin hinge leaning
    1.3° on its thigh: Reach IK carries the rest pose's bend side with the target where
    Blender's iteration from rest ends about 5° around; it was 8 mm before the leaning
    hinge kept its rest pose, and up to 60 mm on first showing before chains whose target
    follows another chain were solved again after an evaluation.)"""
    bpy = blender_module()
    bpy.ops.wm.open_mainfile(filepath=str(wolf_file))
    rig = bpy.data.objects["wolf_rig"]
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    for pb in rig.pose.bones:
        pb.ik_stretch = 0.0
        if pb.get("IK_Stretch") is not None:
            pb["IK_Stretch"] = 0.0
    rng = np.random.default_rng(5)
    for f in FRAMES[::2]:
        for side in "LR":
            for name in CONTROLS:
                pb = rig.pose.bones[f"{name}.{side}"]
                pb.location = (*(rng.normal(size=2) * 0.03), rng.uniform(0.0, 0.08))
                pb.keyframe_insert("location", frame=f)
    bones = _leg_bones(rig)
    assert len(bones) >= 20
    reference = _record(rig, bones)

    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    result = addon.convert.last_result
    assert set(result.converted) == TIPS, result
    assert result.skipped == [], result
    assert result.not_carried == [], result
    assert addon.evaluate.waits_for_evaluation(rig)
    first = _record(rig, bones)
    again = _record(rig, bones)
    np.testing.assert_array_equal(first, again)
    gap = np.linalg.norm(first - reference, axis=-1)
    print(f"\nconverted wolf: largest leg DEF gap {gap.max() * 1e3:.3f} mm")
    assert gap.max() <= 5e-3
