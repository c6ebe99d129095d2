# SPDX-License-Identifier: GPL-3.0-or-later
"""The solve/apply API used by live solving and the bake (``ik_addon.evaluate``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from rigs import blender_module, build_arm, head_world, select_only, shown_rotation, tail_world

CHAIN = ("upper", "fore", "hand")
SCRAMBLE = np.array([0.9, 0.1, 0.3, 0.2]) / np.linalg.norm([0.9, 0.1, 0.3, 0.2])


def test_solve_armature_writes_nothing_and_apply_writes_the_pose(
    clean_scene: Any, addon: Any
) -> None:
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    obj.pose.bones["hand"].reach_ik.enabled = False
    target = obj.pose.bones["hand"].reach_ik.target
    target.location = head_world(obj, "upper") + np.array([0.25, 0.2, -0.1])
    obj.pose.bones["fore"].rotation_mode = "ZXY"
    obj.pose.bones["upper"].rotation_mode = "AXIS_ANGLE"
    obj.pose.bones["hand"].reach_ik.enabled = True
    bpy.context.view_layer.update()
    ev = addon.evaluate
    before = [addon.rotation_modes.read_rotation(obj.pose.bones[n]) for n in CHAIN]
    depsgraph = bpy.context.evaluated_depsgraph_get()
    (pose,) = ev.solve_armature(obj, depsgraph)
    assert [addon.rotation_modes.read_rotation(obj.pose.bones[n]) for n in CHAIN] == before
    assert pose.tip == "hand"
    assert pose.bone_names == CHAIN
    assert pose.rotations.shape == (3, 4)
    assert pose.reachable
    np.testing.assert_allclose(pose.target_world, np.array(target.location), atol=1e-6)
    # Scramble the chain (no depsgraph update in between), then apply the pose.
    for name in CHAIN:
        pb = obj.pose.bones[name]
        addon.rotation_modes.write_rotation(
            pb, addon.rotation_modes.quaternion_to_values(SCRAMBLE, pb.rotation_mode, (0, 0, 0, 0))
        )
    ev.apply_poses(obj, [pose])
    bpy.context.view_layer.update()
    effector = tail_world(obj, "hand")
    np.testing.assert_allclose(effector, pose.effector_world, atol=1e-5)
    assert math.dist(effector, target.location) <= 1e-4
    for name, q in zip(CHAIN, pose.rotations, strict=True):
        pb = obj.pose.bones[name]
        got = addon.rotation_modes.values_to_quaternion(
            pb.rotation_mode, addon.rotation_modes.read_rotation(pb)
        )
        assert abs(abs(float(got @ q)) - 1.0) < 1e-6


def test_apply_to_fk_keys_the_solved_pose(clean_scene: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    target = obj.pose.bones["hand"].reach_ik.target
    target.location = head_world(obj, "upper") + np.array([0.2, 0.25, -0.1])
    bpy.context.scene.frame_set(7)
    shown = [shown_rotation(obj, n) for n in CHAIN]
    assert any(abs(q[0]) < 0.99 for q in shown), "the chain is posed, not at rest"
    assert bpy.ops.reach_ik.apply_to_fk(disable_chains=True) == {"FINISHED"}
    assert not obj.pose.bones["hand"].reach_ik.enabled
    for name, q in zip(CHAIN, shown, strict=True):  # the channels hold the shown pose
        keyed = np.array(obj.pose.bones[name].rotation_quaternion)
        assert abs(abs(float(keyed @ q)) - 1.0) < 1e-6
    # Keys hold the pose on that frame, without the chain.
    bpy.context.scene.frame_set(30)
    bpy.context.scene.frame_set(7)
    for name, q in zip(CHAIN, shown, strict=True):
        assert abs(abs(float(shown_rotation(obj, name) @ q)) - 1.0) < 1e-6
    assert math.dist(tail_world(obj, "hand"), target.location) <= 1e-4


def test_hinge_limits_hold(clean_scene: Any, addon: Any) -> None:
    """A knee-like hinge (Y and Z locked, X limited) stays within its limits."""
    bpy = blender_module()
    obj = build_arm()
    fore = obj.pose.bones["fore"]
    fore.lock_ik_y = fore.lock_ik_z = True
    fore.use_ik_limit_x = True
    fore.ik_min_x, fore.ik_max_x = math.radians(-5.0), math.radians(120.0)
    select_only(obj, ["fore"], "fore")
    bpy.ops.reach_ik.add(chain_length=2, new_target=True)
    target = obj.pose.bones["fore"].reach_ik.target
    rng = np.random.default_rng(3)
    for f in range(1, 8):
        target.location = head_world(obj, "upper") + rng.normal(size=3) * 0.4
        bpy.context.scene.frame_set(f)
        w, x, y, z = shown_rotation(obj, "fore")
        assert abs(x) > 1e-3, "the hinge bends"
        assert abs(y) < 1e-6
        assert abs(z) < 1e-6
        angle = 2.0 * math.atan2(x, w)
        assert math.radians(-5.0) - 1e-5 <= angle <= math.radians(120.0) + 1e-5


@pytest.mark.parametrize("solver", ["triangulation", "ccd", "jacobian_dls"])
def test_solve_chain_frames_batched_equals_frame_by_frame(
    clean_scene: Any, addon: Any, solver: str
) -> None:
    """The one solve path of live solving and baking: F frames at once (arrays) give each
    frame solved alone the way live solving does it (floats, core.Solver.pose); effectors
    and errors agree with forward kinematics mapped by the base frames (world @ parent @
    root rest, independently composed in numpy here); influence 0 is FK."""
    import dataclasses
    from importlib import import_module

    core = import_module(addon.__name__.rsplit(".", 1)[0] + ".core")
    affine, frames = addon.affine, addon.solve_frames
    obj = build_arm()
    rig = addon.chain_spec.rig_chain(obj, "hand", 3, True)
    assert rig.parent is not None
    assert rig.inherit_rotation
    assert not rig.root_connected
    spec = dataclasses.replace(addon.chain_spec.read_spec(obj.pose.bones["hand"]), solver=solver)
    fixed = addon.chain_spec.spec_fixed(spec)
    rng = np.random.default_rng(21)
    count = 12

    def affine_maps(scale: np.ndarray) -> np.ndarray:
        q = rng.normal(size=(count, 4))
        m = np.tile(np.eye(4), (count, 1, 1))
        m[:, :3, :3] = core.rotations.to_matrix(q / np.linalg.norm(q, axis=-1, keepdims=True))
        m[:, :3, :3] *= scale[:, None, None]
        m[:, :3, 3] = rng.normal(size=(count, 3))
        return m

    world = affine_maps(rng.uniform(0.5, 2.0, size=count))
    parent = affine_maps(np.ones(count))
    location = rng.normal(size=(count, 3)) * 0.1
    # The base frame, composed in numpy: origin at the root's posed head, parent's axes.
    head = np.einsum("ij,fj->fi", rig.root_rest[:3, :3], location) + rig.root_rest[:3, 3]
    base_arm = parent.copy()
    base_arm[:, :3, 3] = np.einsum("fij,fj->fi", parent[:, :3, :3], head) + parent[:, :3, 3]
    bases = world @ base_arm
    reach = rig.chain.reach
    local = rng.normal(size=(count, 3))
    local *= (reach * rng.uniform(0.3, 0.9, size=count) / np.linalg.norm(local, axis=-1))[:, None]
    targets = np.einsum("fij,fj->fi", bases[:, :3, :3], local) + bases[:, :3, 3]
    poles = targets + rng.normal(size=(count, 3))
    fk = rng.normal(size=(count, rig.chain.n_joints, 4))
    fk /= np.linalg.norm(fk, axis=-1, keepdims=True)
    index = np.arange(count)
    influence = np.where(index % 3 == 0, 1.0, np.where(index % 3 == 1, 0.0, 0.4))
    pole_angle = np.where(index < 6, 0.0, 0.5)
    use_pole = index % 4 != 1
    batched = frames.solve_chain_frames(
        rig,
        fixed,
        frames.FrameInputs(
            affine.rows_of(world),
            affine.rows_of(parent),
            affine.vec_of(location),
            affine.vec_of(targets),
            affine.vec_of(poles),
            None,
            fk,
            influence,
            pole_angle,
            np.full(count, 0.5),
            use_pole,
            count,
        ),
    )
    for i in range(count):
        one = frames.solve_chain_frames(
            rig,
            fixed,
            frames.FrameInputs(
                affine.rows_of(world[i]),
                affine.rows_of(parent[i]),
                location[i].tolist(),
                targets[i].tolist(),
                poles[i].tolist(),
                None,
                fk[i],
                float(influence[i]),
                float(pole_angle[i]),
                0.5,
                bool(use_pole[i]),
            ),
        )
        # One frame holds plain Python values, as live solving reads them.
        assert isinstance(one.rotations, list)
        assert isinstance(one.errors, float)
        np.testing.assert_allclose(one.rotations, batched.rotations[i], atol=1e-9)
        np.testing.assert_allclose(one.effectors, batched.effectors[i], atol=1e-9)
        assert one.errors == pytest.approx(batched.errors[i], abs=1e-9)
        assert one.reachable == batched.reachable[i]
        assert one.distances == pytest.approx(batched.distances[i], rel=1e-12)
    positions = core.forward_kinematics(rig.chain, batched.rotations)[0][:, -1]
    effectors = np.einsum("fij,fj->fi", bases[:, :3, :3], positions) + bases[:, :3, 3]
    np.testing.assert_allclose(batched.effectors, effectors, atol=1e-9)
    np.testing.assert_allclose(
        batched.errors, np.linalg.norm(effectors - targets, axis=-1), atol=1e-12
    )
    np.testing.assert_allclose(batched.distances, np.linalg.norm(local, axis=-1), rtol=1e-9)
    assert batched.reachable.all()
    full = influence == 1.0
    scale = np.linalg.norm(world[:, :3, 0], axis=-1)
    assert np.all(batched.errors[full] <= 1e-4 * reach * scale[full])
    off = influence == 0.0
    dots = np.abs(np.sum(batched.rotations[off] * fk[off], axis=-1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-12)


def test_stretched_effectors_build_one_chain_per_distinct_stretch(
    addon: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """solve_frames._effectors gives, to the bit, each pose's forward kinematics on the chain
    scaled by that frame's stretch, while building one scaled chain per distinct stretch."""
    from importlib import import_module

    core = import_module(addon.__name__.rsplit(".", 1)[0] + ".core")
    rng = np.random.default_rng(5)
    chain = core.Chain.from_offsets(rng.normal(size=(3, 3)))
    q = rng.normal(size=(12, 3, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    links = np.ones((12, 3))
    links[4:8] = 1.0 + rng.uniform(0.0, 0.3, size=(4, 3))
    links[9] = links[5]
    fk = core.forward_kinematics
    expected = np.array([fk(chain.scaled(s), p)[0][-1] for p, s in zip(q, links, strict=True)])
    built: list[Any] = []
    scaled = type(chain).scaled

    def counting(self: Any, scales: Any) -> Any:
        built.append(scales)
        return scaled(self, scales)

    monkeypatch.setattr(type(chain), "scaled", counting)
    got = addon.solve_frames._effectors(chain, q, links)
    assert np.array_equal(got, expected)
    assert len(built) == 5  # unstretched, frames 4-7 (9 repeats 5)
    plain = addon.solve_frames._effectors(chain, q, None)
    assert np.array_equal(plain, fk(chain, q)[0][:, -1])


def test_one_frame_blends_with_fk_as_the_batch(addon: Any) -> None:
    """solve_frames._blend_one (one frame in floats, live solving's blend below influence 1)
    gives the rotations and effector of _blend (numpy, the bake's) to rounding: random
    chains with turned rests, solved and FK rotations on opposite hemispheres too, shares
    from 0 to 1; and the effector is forward kinematics of the blended rotations."""
    from importlib import import_module

    core = import_module(addon.__name__.rsplit(".", 1)[0] + ".core")
    frames = addon.solve_frames
    rng = np.random.default_rng(31)
    for _ in range(40):
        n = int(rng.integers(2, 7))
        rests = rng.normal(size=(n, 4)) * 0.3 + np.array([1.0, 0.0, 0.0, 0.0])
        chain = core.Chain(rng.normal(size=(n, 3)), rests / np.linalg.norm(rests, axis=-1)[:, None])
        ik = rng.normal(size=(1, n, 4))
        ik /= np.linalg.norm(ik, axis=-1, keepdims=True)
        fk = rng.normal(size=(n, 4))
        fk /= np.linalg.norm(fk, axis=-1, keepdims=True)
        share = float(rng.choice([0.0, rng.uniform(0.0, 1.0), 0.999999]))
        rotations, effector = frames._blend_one(chain, ik[0].tolist(), share, fk)
        effectors = np.zeros((1, 3))
        frames._blend(chain, ik, effectors, None, np.array([share]), fk)
        np.testing.assert_allclose(rotations, ik[0], rtol=0, atol=1e-15)
        np.testing.assert_allclose(effector, effectors[0], rtol=0, atol=1e-14 * n)
        at = core.forward_kinematics(chain, np.array(rotations))[0][-1]
        np.testing.assert_allclose(effector, at, rtol=0, atol=1e-14 * n)
