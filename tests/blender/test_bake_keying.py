# SPDX-License-Identifier: GPL-3.0-or-later
"""The bake's building blocks against independent oracles: rotation continuity against
Blender's ``mathutils`` (``Quaternion.make_compatible``, ``Matrix.to_euler(order, compat)``),
F-curve sampling against Blender's evaluated objects, and the quality report against
hand-made cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rigs import add_empty, blender_module

ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def _mathutils() -> Any:
    """Blender's ``mathutils``, untyped (float32 maths: the oracle's precision)."""
    import importlib

    return importlib.import_module("mathutils")


def _random_walk(seed: int, count: int, step: float) -> np.ndarray:
    """Unit quaternions ``(count, 4)`` wandering by up to ``step`` radians per frame, with
    random signs (what a solver may hand back)."""
    rng = np.random.default_rng(seed)
    q = np.zeros((count, 4))
    current = np.array([1.0, 0.0, 0.0, 0.0])
    for i in range(count):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = rng.uniform(0.0, step)
        turn = np.array([math.cos(angle / 2), *(math.sin(angle / 2) * axis)])
        w1, x1, y1, z1 = turn
        w2, x2, y2, z2 = current
        current = np.array(
            [
                w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            ]
        )
        q[i] = current * rng.choice([-1.0, 1.0])
    return q


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000), order=st.sampled_from(ORDERS))
def test_euler_continuity_matches_blender(addon: Any, seed: int, order: str) -> None:
    Quaternion = _mathutils().Quaternion
    q = _random_walk(seed, 60, 0.9)
    ours = addon.rotation_continuity.euler_continuous(q, order)
    previous = None
    for i, quat in enumerate(q):
        m = Quaternion(quat).to_matrix()
        e = m.to_euler(order) if previous is None else m.to_euler(order, previous)
        previous = e
        np.testing.assert_allclose(ours[i], tuple(e), atol=2e-4, err_msg=f"frame {i}")


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000))
def test_quaternion_continuity_matches_make_compatible(addon: Any, seed: int) -> None:
    Quaternion = _mathutils().Quaternion
    q = _random_walk(seed, 50, 1.5)
    ours = addon.rotation_continuity.quaternion_continuous(q)
    previous = Quaternion(ours[0])
    assert ours[0][0] >= 0.0
    for i in range(1, len(q)):
        blender = Quaternion(q[i])
        blender.make_compatible(previous)
        np.testing.assert_allclose(ours[i], tuple(blender), atol=1e-5)  # mathutils: float32
        previous = blender
        assert abs(np.dot(ours[i], q[i])) == pytest.approx(1.0)


def test_axis_angle_is_continuous_and_the_same_rotation(addon: Any) -> None:
    Quaternion = _mathutils().Quaternion
    angles = np.linspace(0.0, 4.0 * math.pi, 80)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    q = np.array([[math.cos(a / 2), *(math.sin(a / 2) * axis)] for a in angles])
    q[1::3] *= -1.0
    values = addon.rotation_continuity.axis_angle_continuous(q)
    assert np.max(np.abs(np.diff(values[:, 0]))) < 0.2, "the angle must not jump"
    for want, (angle, *ax) in zip(q, values, strict=True):
        got = Quaternion(ax, angle)
        assert abs(np.dot(tuple(got), want)) == pytest.approx(1.0, abs=1e-6)


def test_continuity_joins_the_key_before_the_range(addon: Any) -> None:
    q = _random_walk(3, 10, 0.3)
    before = -q[0]
    assert np.dot(addon.rotation_continuity.channel_values("QUATERNION", q, before)[0], before) > 0
    euler_before = np.array([2.0 * math.pi, 0.0, 0.0])
    e = addon.rotation_continuity.channel_values("XYZ", q[:1] * 0 + [1, 0, 0, 0], euler_before)
    np.testing.assert_allclose(e[0], euler_before, atol=1e-9)


# ---------------------------------------------------------------------------- F-curve sampling
def _keyed_empty(name: str, mode: str, frames: int) -> Any:
    obj = add_empty(name, (0.0, 0.0, 0.0))
    obj.rotation_mode = mode
    rng = np.random.default_rng(len(name))
    for f in range(1, frames + 1, 5):
        obj.location = rng.normal(size=3)
        obj.scale = rng.uniform(0.5, 2.0, size=3)
        obj.keyframe_insert("location", frame=f)
        obj.keyframe_insert("scale", frame=f)
        if mode == "QUATERNION":
            obj.rotation_quaternion = rng.normal(size=4)
            obj.keyframe_insert("rotation_quaternion", frame=f)
        elif mode == "AXIS_ANGLE":
            obj.rotation_axis_angle = rng.normal(size=4)
            obj.keyframe_insert("rotation_axis_angle", frame=f)
        else:
            obj.rotation_euler = rng.uniform(-3, 3, size=3)
            obj.keyframe_insert("rotation_euler", frame=f)
    return obj


@pytest.mark.parametrize("mode", ["QUATERNION", "AXIS_ANGLE", "ZXY"])
def test_object_matrices_match_blender(clean_scene: Any, addon: Any, mode: str) -> None:
    bpy = blender_module()

    obj = _keyed_empty(f"goal_{mode}", mode, 40)
    frames = np.arange(1, 41, dtype=float)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    ours = addon.sampling.object_matrices(obj, frames, depsgraph)
    assert ours is not None
    for i, f in enumerate(frames):
        bpy.context.scene.frame_set(int(f))
        want = np.array(obj.evaluated_get(depsgraph).matrix_world)
        np.testing.assert_allclose(ours[i], want, atol=2e-6, err_msg=f"frame {f}")


def test_object_matrices_refuse_what_they_cannot_follow(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()

    frames = np.arange(1, 5, dtype=float)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    parented = _keyed_empty("parented", "XYZ", 5)
    parented.parent = add_empty("parent", (1.0, 0.0, 0.0))
    constrained = _keyed_empty("constrained", "XYZ", 5)
    constrained.constraints.new("COPY_LOCATION")
    driven = _keyed_empty("driven", "XYZ", 5)
    driven.driver_add("location", 2)
    offset = _keyed_empty("offset", "XYZ", 5)
    offset.delta_location = (0.0, 0.1, 0.0)
    for obj in (parented, constrained, driven, offset):
        assert addon.sampling.object_matrices(obj, frames, depsgraph) is None, obj.name
    still = add_empty("still", (0.5, 0.2, 0.1))
    bpy.context.view_layer.update()
    m = addon.sampling.object_matrices(still, frames, depsgraph)
    np.testing.assert_allclose(m[:, :3, 3], np.tile([0.5, 0.2, 0.1], (4, 1)), atol=1e-7)


# ---------------------------------------------------------------------------- quality report
def test_quality_report_counts_errors_reach_turns_and_pops(addon: Any) -> None:
    import json

    frames = np.arange(10, 20, dtype=float)
    count = frames.size
    errors = np.linspace(0.0, 0.009, count)
    reachable = np.ones(count, bool)
    reachable[[3, 4]] = False
    targets = np.zeros((count, 3))
    targets[:, 0] = np.arange(count) * 0.05  # 5 cm per frame: far more than 1 % of 1 m
    targets[7:, 0] = targets[6, 0]  # the target stops at frame 16
    angle = np.zeros((count, 2))
    angle[:, 0] = np.radians(np.arange(count) * 2.0)  # the root turns 2° per frame
    angle[5:, 1] = np.radians(25.0)  # the tip jumps 25° at frame 15: target still moving
    angle[8:, 1] = np.radians(50.0)  # and again at frame 18: target still -> a pop
    q = np.stack(
        [np.cos(angle / 2), np.sin(angle / 2), np.zeros_like(angle), np.zeros_like(angle)], -1
    )
    report = addon.quality.chain_quality(
        "tip", ("root", "tip"), "ccd", frames, errors, reachable, q, targets, 1.0
    )
    assert report.error_max == pytest.approx(0.009)
    assert report.error_max_frame == 19
    assert report.error_mean == pytest.approx(0.0045)
    assert (report.out_of_reach, report.out_of_reach_frames) == (2, (13, 14))
    assert report.max_joint_change_deg == pytest.approx(25.0)
    assert report.max_joint_change_bone == "tip"
    assert report.pops == 1
    assert report.pop_frames == (18,)
    assert json.loads(json.dumps(report.to_dict()))["pop_frames"] == [18]
    stepped = addon.quality.chain_quality(
        "tip", ("root", "tip"), "ccd", frames * 2, errors, reachable, q, targets, 1.0
    )
    assert stepped.max_joint_change_deg == pytest.approx(12.5), "per frame, not per key"
    assert report.turn_max_deg is None  # (no Rotation)
    turns = np.zeros(frames.size)
    turns[7] = math.radians(3.0)
    turned = addon.quality.chain_quality(
        "tip", ("root", "tip"), "ccd", frames, errors, reachable, q, targets, 1.0, turns=turns
    )
    assert turned.turn_max_deg == pytest.approx(3.0)
    assert turned.turn_max_frame == int(frames[7])
    assert "3° off the target's rotation" in turned.summary()
    with pytest.raises(ValueError, match="turns must have"):
        addon.quality.chain_quality(
            "tip",
            ("root", "tip"),
            "ccd",
            frames,
            errors,
            reachable,
            q,
            targets,
            1.0,
            turns=turns[:-1],
        )


# ---------------------------------------------------------------------------- batched steps
def test_affine_maps_match_numpy_on_one_frame_and_many(addon: Any) -> None:
    """ik_addon.affine against numpy's matrix algebra, batched (F frames, arrays) and on one
    frame (floats); one frame gives exactly the batch's row."""
    affine = addon.affine
    rng = np.random.default_rng(5)
    m = np.zeros((30, 4, 4))
    m[:, :3, :] = rng.normal(size=(30, 3, 4))
    m[:, 3, 3] = 1.0
    n = m[::-1].copy()
    p = rng.normal(size=(30, 3))
    np.testing.assert_allclose(affine.invert(m), np.linalg.inv(m), atol=1e-9)
    np.testing.assert_allclose(affine.invert(m[3]), np.linalg.inv(m[3]), atol=1e-9)
    rows_m, rows_n = affine.rows_of(m), affine.rows_of(n)
    np.testing.assert_allclose(affine.to_array(affine.compose(rows_m, rows_n), 30), m @ n)
    moved = np.stack(affine.transform(rows_m, affine.vec_of(p)), axis=-1)
    np.testing.assert_allclose(moved, np.einsum("fij,fj->fi", m[:, :3, :3], p) + m[:, :3, 3])
    axes = affine.unit_axes(rows_m)
    unit = m[:, :3, :3] / np.linalg.norm(m[:, :3, :3], axis=-2, keepdims=True)
    np.testing.assert_allclose(np.moveaxis(np.array(axes), -1, 0), unit)
    for k in (0, 17):
        one = affine.rows_of(m[k])
        assert affine.compose(one, affine.rows_of(n[k])) == [
            [float(x[k]) for x in row] for row in affine.compose(rows_m, rows_n)
        ]
        assert affine.transform(one, affine.vec_of(p[k])) == moved[k].tolist()
    m[7, :3, 1] = 0.0
    with pytest.raises(addon.affine.ZeroScaleError, match="zero scale"):
        affine.invert(m)


def test_pose_matrices_match_blender(metarig: Any, addon: Any) -> None:
    bpy = blender_module()

    rng = np.random.default_rng(2)
    metarig.pose.bones["spine.001"].rotation_mode = "YXZ"
    for f in (1, 12, 30):
        for name in ("spine", "spine.001", "shoulder.L"):
            pb = metarig.pose.bones[name]
            if pb.rotation_mode == "QUATERNION":
                pb.rotation_quaternion = (1.0, *rng.normal(scale=0.2, size=3))
                pb.keyframe_insert("rotation_quaternion", frame=f)
            else:
                pb.rotation_euler = rng.normal(scale=0.3, size=3)
                pb.keyframe_insert("rotation_euler", frame=f)
            pb.location = rng.normal(scale=0.02, size=3)
            pb.keyframe_insert("location", frame=f)
    frames = np.arange(1, 31, dtype=float)
    curves = addon.sampling.plain_animation(metarig)
    names = ["upper_arm.L", "thigh.R", "hand.L"]
    posed = addon.sampling.pose_matrices(metarig, curves, names, frames)
    assert posed is not None
    assert {"spine", "spine.003", "shoulder.L"} <= set(posed)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for i, f in enumerate(frames):
        bpy.context.scene.frame_set(int(f))
        ev = metarig.evaluated_get(depsgraph)
        for name in names:
            want = np.array(ev.pose.bones[name].matrix)
            np.testing.assert_allclose(posed[name][i], want, atol=2e-6, err_msg=f"{name} {f}")
    metarig.pose.bones["spine.002"].constraints.new("COPY_ROTATION")
    assert addon.sampling.pose_matrices(metarig, curves, names, frames) is None
    metarig.pose.bones["spine"].driver_add("location", 1)
    assert addon.sampling.plain_animation(metarig) is None
