# SPDX-License-Identifier: GPL-3.0-or-later
"""Key reduction: the curve maths is Blender's own (pinned to ``FCurve.evaluate``), and the
reduced bake of the bundled demo (1000 frames, four limbs) keeps at least 75 % fewer keys
while replaying — in a Blender without Reach IK, on every frame and quarter frame — within
the distance at each effector and the angle at every joint of the full bake."""

from __future__ import annotations

import importlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
from rigs import blender_module

REPO = Path(__file__).resolve().parents[2]


def test_hermite_is_blenders_bezier_with_handles_at_the_thirds(
    clean_scene: Any, addon: Any
) -> None:
    bpy = blender_module()
    keying, reduction = addon.keying, addon.key_reduction
    rng = np.random.default_rng(3)
    frames = np.array([1.0, 4.0, 5.0, 17.0, 30.0])
    values = rng.uniform(-2, 2, frames.size)
    left, right = rng.uniform(-1, 1, frames.size), rng.uniform(-1, 1, frames.size)
    handles = keying.reduced_handles(frames, values, left, right)
    empty = bpy.data.objects.new("E", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.keyframe_insert("location", index=0, frame=1)
    fcurve = next(
        fc
        for layer in empty.animation_data.action.layers
        for strip in layer.strips
        for bag in strip.channelbags
        for fc in bag.fcurves
    )
    points = fcurve.keyframe_points
    points.clear()
    points.add(frames.size)
    for k, point in enumerate(points):
        point.co = (frames[k], values[k])
        point.interpolation = "BEZIER"
        point.handle_left_type = point.handle_right_type = "FREE"
        point.handle_left = handles.left[k]
        point.handle_right = handles.right[k]
    fcurve.update()
    for k in range(frames.size - 1):
        x = np.linspace(frames[k], frames[k + 1], 23)
        ours = reduction.hermite(
            frames[k],
            frames[k + 1],
            values[k : k + 1],
            values[k + 1 : k + 2],
            right[k : k + 1],
            left[k + 1 : k + 2],
            x,
        )[:, 0]
        theirs = np.array([fcurve.evaluate(float(f)) for f in x])
        assert np.allclose(ours, theirs, atol=2e-5), np.max(np.abs(ours - theirs))


#: In a fresh Blender without Reach IK: per frame (subframes allowed), every chain bone's
#: basis rotation (w, x, y, z) and tail in world space.
PROBE = textwrap.dedent(
    """
    import json, math, sys
    import bpy
    import numpy as np
    blend, spec, out = sys.argv[-3:]
    bpy.ops.wm.open_mainfile(filepath=blend)
    assert "reach_ik" not in bpy.types.PoseBone.bl_rna.properties, "Reach IK is loaded"
    wanted = json.load(open(spec))
    scene = bpy.context.scene
    depsgraph = bpy.context.evaluated_depsgraph_get()
    obj = bpy.data.objects[wanted["armature"]]
    rot = np.zeros((len(wanted["frames"]), len(wanted["bones"]), 4))
    tails = np.zeros((len(wanted["frames"]), len(wanted["bones"]), 3))
    for i, frame in enumerate(wanted["frames"]):
        scene.frame_set(int(math.floor(frame)), subframe=frame - math.floor(frame))
        ev = obj.evaluated_get(depsgraph)
        for j, name in enumerate(wanted["bones"]):
            pb = ev.pose.bones[name]
            rot[i, j] = pb.matrix_basis.to_quaternion()
            tails[i, j] = ev.matrix_world @ pb.tail
    np.save(out, np.concatenate([rot, tails], axis=-1))
    """
)


def _replay(blend: Path, armature: str, bones: list[str], frames: list[float], work: Path) -> Any:
    script, spec, out = work / "probe.py", work / "probe.json", work / "probe.npy"
    script.write_text(PROBE)
    spec.write_text(json.dumps({"armature": armature, "bones": bones, "frames": frames}))
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="reach-ik-probe-user-") as user:
        env["BLENDER_USER_RESOURCES"] = user
        done = subprocess.run(
            [sys.executable, str(script), str(blend), str(spec), str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    data = np.load(out)
    return data[..., :4], data[..., 4:]


def test_demo_reduced_by_three_quarters_within_the_bounds(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    from reach_ik_tools import demo_scene

    bpy = blender_module()
    frames = 1000
    files = {}
    results = {}
    for reduce in (False, True):
        bpy.ops.wm.read_homefile(use_empty=True)
        human = demo_scene.build(frames)["human"]
        result = addon.bake.bake(human, addon.bake.BakeOptions(1, frames, reduce=reduce))
        results[reduce] = result
        files[reduce] = tmp_path / f"reduced{int(reduce)}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(files[reduce]), copy=True)
    full, reduced = results[False], results[True]
    assert reduced.keys_full == full.keys == 32 * frames
    assert reduced.keys <= 0.25 * full.keys, f"{reduced.keys} of {full.keys} keys kept"
    bones, tips = [], {}
    for entry in reduced.chains:
        bones += entry.bones
        tips[entry.chain] = len(bones) - 1
    bounds = {e["chain"]: e["distance_bound"] for e in reduced.reduction}
    angle = max(e["angle_bound_deg"] for e in reduced.reduction)
    times = [1.0 + k / 4.0 for k in range(4 * (frames - 1) + 1)]
    q_full, t_full = _replay(files[False], "Human", bones, times, tmp_path)
    q_red, t_red = _replay(files[True], "Human", bones, times, tmp_path)
    dots = np.abs(np.sum(q_full * q_red, axis=-1))
    joint = np.degrees(2.0 * np.arccos(np.minimum(dots, 1.0)))
    assert joint.max() <= angle + 1e-3, f"a joint is {joint.max():.4f}° off"
    for chain, j in tips.items():
        distance = np.linalg.norm(t_full[:, j] - t_red[:, j], axis=-1)
        assert distance.max() <= bounds[chain] * 1.001 + 1e-6, (
            f"{chain}: effector {distance.max():.2e} m off (bound {bounds[chain]:.2e} m)"
        )


def _replay_numpy(
    reduction: Any, frames: np.ndarray, values: np.ndarray, keep: Any, red: Any
) -> Any:
    """The reduced curves at every quarter frame, evaluated segment by segment."""
    kept = np.flatnonzero(keep)
    out = []
    for a, b in itertools.pairwise(kept):
        x = np.linspace(frames[a], frames[b], 4 * (b - a) + 1)[:-1]
        out.append(
            reduction.hermite(frames[a], frames[b], values[a], values[b], red[1][a], red[0][b], x)
        )
    out.append(values[-1:])
    return np.concatenate(out)


def test_windows_keep_their_ends_and_the_bounds(addon: Any) -> None:
    reduction, rot = (
        addon.key_reduction,
        importlib.import_module(addon.__name__.rsplit(".", 1)[0] + ".core.rotations"),
    )
    rng = np.random.default_rng(5)
    frames = np.arange(1.0, 61.0)
    phase = rng.uniform(0, 6, size=(2, 3))
    bones = []
    for j in range(2):
        t = frames[:, None] / 9.0
        rotvec = 0.6 * np.sin(t + phase[j]) + 0.02 * np.sin(2 * t)
        bones.append(reduction.BoneCurves("QUATERNION", rot.from_rotvec(rotvec)))
    rest = np.array([np.eye(4), np.eye(4)])
    rest[1, 1, 3] = 0.3
    chain_rest = reduction.ChainRest(rest, 0.25, 2.0)
    dense = np.arange(4 * 59 + 1) / 4.0
    for window in (1000, 7):
        red = reduction.reduce_chain(frames, bones, chain_rest, 1e-3, np.radians(0.5), window)
        if window == 7:
            assert red.keep[::7].all(), "each window's ends are keys"
        assert red.keep.sum() < frames.size
        quats, refs = [], []
        for j, bone in enumerate(bones):
            got = _replay_numpy(
                reduction,
                frames,
                bone.values,
                red.keep,
                (red.slopes_left[j], red.slopes_right[j]),
            )
            ref = np.array([np.interp(1 + dense, frames, bone.values[:, i]) for i in range(4)]).T
            quats.append(rot.normalize(got))
            refs.append(rot.normalize(ref))
        for q, r in zip(quats, refs, strict=True):
            angle = np.degrees(2 * np.arccos(np.minimum(np.abs(np.sum(q * r, axis=-1)), 1)))
            assert angle.max() <= 0.5 + 1e-9
        tails = reduction.tail_positions(chain_rest, quats)
        ref_tails = reduction.tail_positions(chain_rest, refs)
        assert np.linalg.norm(tails - ref_tails, axis=-1).max() * 2.0 <= 1e-3 + 1e-12
        assert red.distance <= 1e-3
