# SPDX-License-Identifier: GPL-3.0-or-later
"""Stretch against Blender's own IK, and soft reach, in the real Blender.

Oracle: Blender's Standard IK constraint with *Stretch* on, evaluated by Blender
(``frame_set`` / view-layer update, evaluated pose matrices in world space), on the
hand-built arm of ``rigs.build_arm`` (moved, rotated and scaled object, disconnected upper
arm, a hand parented to the forearm with a gap): targets beyond reach. Converted to Reach
IK, the arm must show the same pose: the effector, every bone's posed length and the
hand (which inherits the forearm's scale) within 1 mm — the issue's bar for DEF bones.
What sets the gap (measured, printed): Blender's iteration stops short of a target beyond
reach (0.2 mm with *IK Stretch* 0.1, ~0 with 1) and shares the extra length a little
unlike the closed form (core.stretch), where the closed form reaches exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rigs import add_empty, blender_module, build_arm, world_matrix
from test_bake import assert_same_pose, probe_without_addon, world_track

CHAIN = ("upper", "fore")
SHOWN = ("upper", "fore", "hand")


def _pose(obj: Any) -> dict[str, np.ndarray]:
    """World head, tail and axis scales of the chain bones and the hand, as Blender
    evaluates them."""
    out = {}
    for name in SHOWN:
        m = world_matrix(obj, name)
        length = obj.data.bones[name].length
        out[name] = np.concatenate(
            [
                m[:3, 3],
                (m @ np.array([0.0, length, 0.0, 1.0]))[:3],
                np.linalg.norm(m[:3, :3], axis=0),
            ]
        )
    return out


def _targets(obj: Any, fractions: tuple[float, ...] = (1.05, 1.3, 2.0)) -> list[np.ndarray]:
    """World points ``fractions`` of the arm's reach from the upper arm's head (by default
    beyond it: 1.05, 1.3 and 2 times), in three directions."""
    head = world_matrix(obj, "upper")[:3, 3]
    fore = world_matrix(obj, "fore")
    tail = (fore @ np.array([0.0, obj.data.bones["fore"].length, 0.0, 1.0]))[:3]
    reach = np.linalg.norm(world_matrix(obj, "fore")[:3, 3] - head) + np.linalg.norm(
        tail - fore[:3, 3]
    )
    out: list[np.ndarray] = []
    for direction in ((1.0, 0.2, 0.1), (0.3, -1.0, 0.4), (-0.2, 0.5, 1.0)):
        d = np.array(direction) / np.linalg.norm(direction)
        out.extend(head + d * reach * f for f in fractions)
    return out


def _straight_chain(lengths: tuple[float, float], weights: tuple[float, float]) -> Any:
    """Two connected bones up +Z (the joint 2 cm off the axis, so the chain has a bend
    side) with an IK constraint on the second, *Stretch* on; returns (object, target)."""
    bpy = blender_module()
    arm = bpy.data.armatures.new("Straight")
    obj = bpy.data.objects.new("Straight", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    a = arm.edit_bones.new("a")
    a.head, a.tail = (0.0, 0.0, 0.0), (0.0, 0.02, lengths[0])
    b = arm.edit_bones.new("b")
    b.head, b.tail = a.tail, (0.0, 0.0, lengths[0] + lengths[1])
    b.parent, b.use_connect = a, True
    bpy.ops.object.mode_set(mode="POSE")
    for name, w in zip("ab", weights, strict=True):
        obj.pose.bones[name].ik_stretch = w
    target = add_empty("Target", (0.0, 0.0, 2.0))
    con = obj.pose.bones["b"].constraints.new("IK")
    con.target, con.chain_count, con.use_stretch, con.iterations = target, 2, True, 500
    return obj, target


def _lengths(obj: Any, names: tuple[str, ...]) -> np.ndarray:
    pose = _pose_of(obj, names)
    return np.array([np.linalg.norm(pose[n][3:6] - pose[n][:3]) for n in names])


def _pose_of(obj: Any, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        m = world_matrix(obj, name)
        length = obj.data.bones[name].length
        tail = (m @ np.array([0.0, length, 0.0, 1.0]))[:3]
        out[name] = np.concatenate([m[:3, 3], tail, np.linalg.norm(m[:3, :3], axis=0)])
    return out


@pytest.mark.parametrize(
    ("lengths", "weights"),
    [
        ((0.5, 0.5), (0.1, 0.1)),
        ((0.3, 0.5), (0.1, 0.1)),
        ((0.5, 0.5), (1.0, 1.0)),
        ((0.5, 0.5), (1.0, 0.5)),
        ((0.5, 0.5), (0.1, 1.0)),
    ],
    ids=["0.1", "0.1-unequal-bones", "1.0", "1.0-0.5", "0.1-1.0"],
)
def test_stretch_shares_as_blenders_ik_on_a_straight_chain(
    clean_scene: Any, addon: Any, lengths: tuple[float, float], weights: tuple[float, float]
) -> None:
    """A straight chain, targets along it beyond reach: Blender lengthens the bones by
    shares ∝ IK Stretch³ (core.stretch); Reach IK's closed form (*Stretch As* Closed Form,
    set after converting) within 1 mm of it."""
    bpy = blender_module()
    obj, target = _straight_chain(lengths, weights)
    reach = float(np.sum(_lengths(obj, ("a", "b"))))
    points = [np.array([0.0, 0.0, reach * f]) for f in (1.05, 1.3, 2.0)]
    blender = []
    for p in points:
        target.location = p
        bpy.context.view_layer.update()
        blender.append((_lengths(obj, ("a", "b")), _pose_of(obj, ("b",))["b"][3:6]))
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    assert addon.convert.last_result.not_carried == []
    s = obj.pose.bones["b"].reach_ik
    assert s.stretch_rule == "blender"  # Convert's choice
    s.stretch_rule = "closed_form"
    length_gap = effector_gap = 0.0
    for p, (lengths_b, effector_b) in zip(points, blender, strict=True):
        target.location = p
        bpy.context.view_layer.update()
        ours = _lengths(obj, ("a", "b"))
        effector = _pose_of(obj, ("b",))["b"][3:6]
        assert np.linalg.norm(effector - p) <= 1e-5  # reached (single-precision evaluation)
        length_gap = max(length_gap, float(np.abs(ours - lengths_b).max()))
        effector_gap = max(effector_gap, float(np.linalg.norm(effector - effector_b)))
    print(
        f"\nstraight chain {lengths} m, IK Stretch {weights}: against Blender, bone lengths "
        f"{length_gap * 1e3:.3f} mm, effector {effector_gap * 1e3:.3f} mm"
    )
    assert length_gap <= 1e-3
    assert effector_gap <= 1e-3


def _arm_with_blenders_ik(weight: float, fractions: tuple[float, ...]) -> Any:
    """The hand-built arm with IK Stretch ``weight`` on both chain bones and Blender's IK
    (Stretch on, 500 iterations) on the forearm; targets at ``fractions`` of the reach in
    three directions. Returns (arm, target empty, points, Blender's poses at them)."""
    bpy = blender_module()
    obj = build_arm()
    for name in CHAIN:
        obj.pose.bones[name].ik_stretch = weight
    points = _targets(obj, fractions)  # from the rest pose
    target = add_empty("Target", points[0])
    con = obj.pose.bones["fore"].constraints.new("IK")
    con.target, con.chain_count, con.use_stretch, con.iterations = target, 2, True, 500
    blender = []
    for p in points:
        target.location = p
        bpy.context.view_layer.update()
        blender.append(_pose(obj))
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    s = obj.pose.bones["fore"].reach_ik
    assert (s.has_chain, s.use_stretch, s.stretch_rule) == (True, True, "blender")
    return obj, target, points, blender


def _gaps(obj: Any, target: Any, points: list[np.ndarray], blender: list[Any]) -> np.ndarray:
    """Largest (miss of the target, effector gap to Blender, bone length gap (upper, fore,
    hand), spread of a bone's axis scales) over the points, metres."""
    bpy = blender_module()
    worst = np.zeros(4)
    for p, theirs in zip(points, blender, strict=True):
        target.location = p
        bpy.context.view_layer.update()
        ours = _pose(obj)
        lengths = [
            abs(float(np.linalg.norm(ours[n][3:6] - ours[n][:3]) - np.linalg.norm(t)))
            for n, t in ((n, theirs[n][3:6] - theirs[n][:3]) for n in SHOWN)
        ]
        row = [
            float(np.linalg.norm(ours["fore"][3:6] - p)),
            float(np.linalg.norm(ours["fore"][3:6] - theirs["fore"][3:6])),
            max(lengths),
            # Blender scales a stretched bone uniformly (every axis), and so do we.
            max(float(np.ptp(ours[n][6:])) for n in SHOWN),
        ]
        worst = np.maximum(worst, row)
    return worst


@pytest.mark.parametrize("weight", [0.1, 1.0])
def test_converted_stretch_gives_blenders_lengths(
    clean_scene: Any, addon: Any, weight: float
) -> None:
    """Converted (*Stretch As* Blender's IK), the arm's bones take the lengths Blender's IK
    gives, within reach (where Blender shortens them, down to 3 mm of a 0.44 m upper arm
    with IK Stretch 1) and beyond, within 0.05 mm, for IK Stretch 0.1 (Rigify's) and 1.
    The effector within 0.25 mm of Blender's: beyond reach Blender's iteration stops about
    0.19 mm short of the target with the arm slightly bent, where the chain with its
    lengths is straightened toward the target. Converting back restores Blender's IK."""
    bpy = blender_module()
    fractions = (0.5, 0.8, 0.97, 1.05, 1.3, 2.0)
    obj, target, points, blender = _arm_with_blenders_ik(weight, fractions)
    _, effector, length, spread = _gaps(obj, target, points, blender)
    print(
        f"\narm, IK Stretch {weight}, Stretch As Blender's IK, {fractions} of the reach: "
        f"against Blender, effector {effector * 1e3:.4f} mm, bone lengths (upper, fore, "
        f"hand) {length * 1e3:.4f} mm"
    )
    assert effector <= 2.5e-4
    assert length <= 5e-5
    assert spread <= 1e-5  # single precision
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"FINISHED"}
    (back,) = [c for c in obj.pose.bones["fore"].constraints if c.type == "IK"]
    assert back.use_stretch
    assert not [c for c in obj.pose.bones["fore"].constraints if c.type != "IK"]
    target.location = points[-1]
    bpy.context.view_layer.update()
    assert np.abs(_pose(obj)["fore"] - blender[-1]["fore"]).max() <= 1e-5


def test_closed_form_stretch_on_an_arm(clean_scene: Any, addon: Any) -> None:
    """*Stretch As* Closed Form, IK Stretch 0.1 on the arm (bent at rest), targets beyond
    reach in three directions: the target reached; the effector within 1 mm of Blender's,
    the bones' lengths and the hand (which inherits the forearm's uniform scale) within
    2.5 mm: Blender leaves the arm a little bent where the closed form is straight
    (measured 2.0 mm on the upper arm at 1.05x reach in one direction, 0.2 mm elsewhere)."""
    obj, target, points, blender = _arm_with_blenders_ik(0.1, (1.05, 1.3, 2.0))
    obj.pose.bones["fore"].reach_ik.stretch_rule = "closed_form"
    miss, effector, length, spread = _gaps(obj, target, points, blender)
    print(
        f"\narm, IK Stretch 0.1, closed form: Reach IK misses the target by "
        f"{miss * 1e3:.2e} mm; against Blender: effector {effector * 1e3:.3f} mm, bone "
        f"lengths (upper, fore, hand) {length * 1e3:.3f} mm"
    )
    assert miss <= 1e-5  # Blender evaluates in single precision (metres of a 2 m arm)
    assert effector <= 1e-3
    assert length <= 2.5e-3
    assert spread <= 1e-5


def _forearm_goal_gaps(obj: Any, target: Any, points: list[np.ndarray], turns: list[Any]) -> Any:
    """Per point (the target at it, turned by the Euler angles): how far the forearm's tail
    misses it (m), the angle from the target's orientation to the forearm's (degrees, axes
    unscaled) and the upper arm's and forearm's posed lengths, as Blender evaluates them."""
    bpy = blender_module()
    out = []
    for p, turn in zip(points, turns, strict=True):
        target.location, target.rotation_euler = p, turn
        bpy.context.view_layer.update()
        pose = _pose_of(obj, CHAIN)
        fore = world_matrix(obj, "fore")[:3, :3]
        goal = np.array(target.matrix_world)[:3, :3]
        fore, goal = fore / np.linalg.norm(fore, axis=0), goal / np.linalg.norm(goal, axis=0)
        cos = np.clip((np.trace(goal.T @ fore) - 1.0) / 2.0, -1.0, 1.0)
        lengths = [np.linalg.norm(pose[n][3:6] - pose[n][:3]) for n in CHAIN]
        out.append((np.linalg.norm(pose["fore"][3:6] - p), np.degrees(np.arccos(cos)), lengths))
    return out


@pytest.mark.parametrize("rule", ["blender", "closed_form"])
def test_stretch_with_rotation_meets_both_goals_as_blenders_ik(
    clean_scene: Any, addon: Any, rule: str
) -> None:
    """IK Stretch 0.1 on the arm, Blender's IK with *Stretch* and *Rotation* on the forearm,
    targets at 0.8–1.3 of the reach in three directions, each turned so the forearm cannot
    take it at its rest length: Blender meets both goals (about 0.1 mm, 0.01°) by
    lengthening the upper arm and shortening the forearm. Converted, with either *Stretch
    As* rule, every solver meets both (the target to 0.01 mm, the orientation as closely as
    Blender's own) with bone lengths within 15 mm of Blender's (median 5 mm; core.stretch,
    *Orientation goals*; until 0.9.1 the bones stretched for the target alone and the
    forearm's tip missed by up to 0.9 m)."""
    bpy = blender_module()
    from mathutils import Euler

    obj = build_arm()
    for name in CHAIN:
        obj.pose.bones[name].ik_stretch = 0.1
    points = _targets(obj, (0.8, 1.05, 1.3))
    turns = [Euler((0.3 * k, -0.2 * k, 0.5), "XYZ") for k in range(len(points))]
    target = add_empty("Target", points[0])
    con = obj.pose.bones["fore"].constraints.new("IK")
    con.target, con.chain_count, con.iterations = target, 2, 500
    con.use_stretch = con.use_rotation = True
    blender = _forearm_goal_gaps(obj, target, points, turns)
    assert max(miss for miss, _, _ in blender) <= 2e-4
    assert max(angle for _, angle, _ in blender) <= 0.02
    rest = [obj.data.bones[n].length * obj.scale[0] for n in CHAIN]
    assert min(theirs[1] for _, _, theirs in blender) < 0.6 * rest[1]  # (Blender shortened it)
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    settings = obj.pose.bones["fore"].reach_ik
    assert settings.use_rotation
    assert settings.use_stretch
    settings.stretch_rule = rule
    for solver in ("triangulation", "fabrik", "ccd", "jacobian_dls"):
        settings.solver = solver
        ours = _forearm_goal_gaps(obj, target, points, turns)
        gaps = [
            max(abs(a - b) for a, b in zip(mine, theirs, strict=True))
            for (_, _, mine), (_, _, theirs) in zip(ours, blender, strict=True)
        ]
        print(
            f"\n{rule}, {solver}: miss {max(m for m, _, _ in ours) * 1e3:.4f} mm, "
            f"turned {max(a for _, a, _ in ours):.4f}°, lengths against Blender's: "
            f"median {np.median(gaps) * 1e3:.1f} mm, largest {max(gaps) * 1e3:.1f} mm"
        )
        assert max(miss for miss, _, _ in ours) <= 1e-5
        for (_, angle, _), (_, theirs, _) in zip(ours, blender, strict=True):
            assert angle <= theirs + 1e-3  # (both read from single-precision matrices)
        assert max(gaps) <= 0.015


def test_stretch_off_leaves_no_scale_and_soft_reach_eases(clean_scene: Any, addon: Any) -> None:
    """A chain with Stretch on shows its bones' scale through a Copy Scale constraint that
    Stretch off takes away; soft reach leaves a target just inside the reach short by the
    closed form (the effector on the root→target line at R − s·exp(−(d − R + s)/s))."""
    bpy = blender_module()
    obj = build_arm()
    for name in CHAIN:
        obj.pose.bones[name].ik_stretch = 0.5
    points = _targets(obj)
    target = add_empty("Target", points[1])
    s = obj.pose.bones["fore"].reach_ik
    s.chain_length, s.use_tail, s.target, s.use_stretch = 2, True, target, True
    s.enabled = s.has_chain = True
    bpy.context.view_layer.update()
    cons = addon.constraints
    assert all(cons.find_scale(obj.pose.bones[n]) is not None for n in CHAIN)
    tail = _pose(obj)["fore"][3:6]
    assert np.linalg.norm(tail - points[1]) <= 1e-5
    s.use_stretch = False
    bpy.context.view_layer.update()
    assert all(cons.find_scale(obj.pose.bones[n]) is None for n in CHAIN)
    assert np.allclose(_pose(obj)["upper"][6:], 1.5, atol=1e-6)  # build_arm's object scale

    head = world_matrix(obj, "upper")[:3, 3]
    reach = np.linalg.norm(points[0] - head) / 1.05
    world_scale = 1.5  # build_arm's object scale: chain units are armature units
    soft = 0.2 * reach / world_scale
    s.soft_reach = soft
    d_unit = (points[0] - head) / np.linalg.norm(points[0] - head)
    for f in (0.7, 0.95, 1.0, 1.5):
        target.location = head + d_unit * reach * f
        bpy.context.view_layer.update()
        tail = _pose(obj)["fore"][3:6]
        d, r, sw = f * reach, reach, soft * world_scale
        aimed = d if d <= r - sw else r - sw * np.exp(-(d - r + sw) / sw)
        gap = float(np.linalg.norm(tail - (head + d_unit * aimed)))
        assert gap <= 1e-5 * reach, (f, gap)


def test_bake_keys_the_stretch_live_shows(clean_scene: Any, addon: Any, tmp_path: Path) -> None:
    """A stretching chain baked (key reduction on, chain removed after): the saved file,
    played by a separate Blender without Reach IK, shows the live pose — bones' tails within
    1e-5 m and orientations within 0.01° (test_bake's bars), the stretch included."""
    bpy = blender_module()
    obj = build_arm()
    for name, w in zip(CHAIN, (0.1, 0.5), strict=True):
        obj.pose.bones[name].ik_stretch = w
    points = _targets(obj)
    head = world_matrix(obj, "upper")[:3, 3]
    target = add_empty("Target", points[0])
    frames = list(range(1, 13))
    for frame in frames:  # within reach, then beyond it in every direction
        p = points[(frame - 1) % len(points)]
        target.location = head + (p - head) * (0.7 if frame <= 3 else 1.0)
        target.keyframe_insert("location", frame=frame)
    s = obj.pose.bones["fore"].reach_ik
    s.chain_length, s.use_tail, s.target, s.use_stretch = 2, True, target, True
    s.enabled = s.has_chain = True
    bones = [(obj.name, n) for n in SHOWN]
    live = world_track(bones, frames)
    scales = np.linalg.norm(live[:, 1, :3, :3], axis=-2) / 1.5
    assert scales.max() > 1.3  # the forearm stretched on the far frames
    result = addon.bake.bake(obj, addon.bake.BakeOptions(1, frames[-1], after="REMOVE"))
    assert result.warnings == []
    assert not obj.pose.bones["fore"].reach_ik.has_chain
    assert all(addon.constraints.find_scale(obj.pose.bones[n]) is None for n in CHAIN)
    path = tmp_path / "stretch_baked.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    baked = probe_without_addon(path, bones, frames, tmp_path)
    lengths = [obj.data.bones[n].length for n in SHOWN]
    assert_same_pose(live, baked, lengths, bones)


def test_played_stretch_plays_without_the_addon(
    clean_scene: Any, addon: Any, tmp_path: Path
) -> None:
    """Frames played live (not baked) keep their stretch in the helpers' keys: the saved
    file, played by a Blender without Reach IK, shows the live pose (test_bake's bars)."""
    bpy = blender_module()
    obj = build_arm()
    for name in CHAIN:
        obj.pose.bones[name].ik_stretch = 0.1
    points = _targets(obj)
    target = add_empty("Target", points[0])
    frames = list(range(1, 10))
    for frame in frames:
        target.location = points[frame - 1]
        target.keyframe_insert("location", frame=frame)
    s = obj.pose.bones["fore"].reach_ik
    s.chain_length, s.use_tail, s.target, s.use_stretch = 2, True, target, True
    s.enabled = s.has_chain = True
    bones = [(obj.name, n) for n in SHOWN]
    live = world_track(bones, frames)
    assert np.linalg.norm(live[:, 0, :3, :3], axis=-2).max() / 1.5 > 1.5  # stretched
    path = tmp_path / "stretch_played.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    played = probe_without_addon(path, bones, frames, tmp_path)
    lengths = [obj.data.bones[n].length for n in SHOWN]
    assert_same_pose(live, played, lengths, bones)
