# SPDX-License-Identifier: GPL-3.0-or-later
"""A chain whose target follows another chain through a constraint, as a Rigify quadruped's
front paw has it (a helper bone aims at one IK chain, the other chain's target follows it),
or through drivers that read a bone's evaluated transform; and a prop held by another chain
(an empty parented to its bone, reached for by a chain of the same or another armature).

Blender evaluates the constraint (the drivers, the empty's parent), so the second chain's
target is right only once Blender has evaluated the first chain's new pose. Oracle:
Blender's own evaluation — after a frame is shown, the second chain's effector (its tip's
tail) lies on its target as Blender evaluated it, whatever was shown before; and the bake,
replayed without the extension, shows the live pose.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from rigs import add_empty, blender_module, new_armature, select_only, tail_world, world_matrix
from test_bake import assert_same_pose, probe_without_addon, world_track

FRAMES = list(range(1, 25))
BONES = ("b0", "b1", "a0", "a1")


def _legs(link: str = "constraint") -> Any:
    """Two 2-bone legs side by side: ``b0``→``b1`` reaches for an empty; ``hang`` follows
    ``b1`` and carries ``follow``, half a metre beside it, which ``a0``→``a1`` reaches for.
    ``link`` ``"constraint"``: ``hang`` copies the location of ``b1``'s tail (*Copy
    Location*, head/tail 1); ``"driver"``: drivers on ``hang``'s location read ``b1``'s
    head in world space (*Transform Channel* variables); ``"none"``: ``hang`` stays."""
    bpy = blender_module()
    obj = new_armature("Legs")
    bpy.ops.object.mode_set(mode="EDIT")
    eb = obj.data.edit_bones
    points = {
        "b0": ((0.0, 0.0, 1.0), (0.0, -0.06, 0.5), None),
        "b1": ((0.0, -0.06, 0.5), (0.0, 0.0, 0.0), "b0"),
        "a0": ((0.5, 0.0, 1.0), (0.5, -0.06, 0.5), None),
        "a1": ((0.5, -0.06, 0.5), (0.5, 0.0, 0.0), "a0"),
        "hang": ((0.0, 0.0, 0.0), (0.0, 0.1, 0.0), None),
        "follow": ((0.5, 0.0, 0.0), (0.5, 0.1, 0.0), "hang"),
    }
    for name, (head, tail, parent) in points.items():
        bone = eb.new(name)
        bone.head, bone.tail = head, tail
        if parent is not None:
            bone.parent = eb[parent]
            bone.use_connect = name in ("b1", "a1")
    bpy.ops.object.mode_set(mode="POSE")
    hang = obj.pose.bones["hang"]
    if link == "constraint":
        copy = hang.constraints.new("COPY_LOCATION")
        copy.target, copy.subtarget, copy.head_tail = obj, "b1", 1.0
        return obj
    # (hang's rest frame is the world's: no parent, no roll)
    for i, axis in enumerate("XYZ" if link == "driver" else ""):
        driver = hang.driver_add("location", i).driver
        driver.type = "AVERAGE"
        var = driver.variables.new()
        var.type = "TRANSFORMS"
        var.targets[0].id = obj
        var.targets[0].bone_target = "b1"
        var.targets[0].transform_type = f"LOC_{axis}"
        var.targets[0].transform_space = "WORLD_SPACE"
    return obj


def _first_leg(obj: Any) -> Any:
    """Reach IK on ``b0``→``b1`` (the operator) for a keyed empty; returns the empty."""
    bpy = blender_module()
    target = add_empty("FootTarget", (0.1, 0.1, 0.15))
    rng = np.random.default_rng(8)
    for f in FRAMES[::4]:
        target.location = (rng.normal() * 0.15, rng.normal() * 0.15, rng.uniform(0.05, 0.3))
        target.keyframe_insert("location", frame=f)
    target.select_set(True)
    select_only(obj, ["b1"], "b1")
    assert bpy.ops.reach_ik.add(chain_length=2) == {"FINISHED"}
    target.select_set(False)
    return target


def _chains(obj: Any) -> Any:
    """Reach IK on both legs (the operator): ``b1`` for a keyed empty, ``a1`` for
    ``follow``. Returns the empty."""
    bpy = blender_module()
    target = _first_leg(obj)
    select_only(obj, ["a1", "follow"], "a1")
    assert bpy.ops.reach_ik.add(chain_length=2) == {"FINISHED"}
    assert obj.pose.bones["a1"].reach_ik.target_bone == "follow"
    return target


def _followers_gap(obj: Any) -> float:
    """How far ``a1``'s tail is from ``follow``'s head, as Blender shows them (metres)."""
    follow = np.array(obj.matrix_world @ obj.pose.bones["follow"].head)
    return float(np.linalg.norm(tail_world(obj, "a1") - follow))


def test_a_chain_adds_its_pose_to_the_pass_state_only_where_a_later_chain_may_read_it(
    clean_scene: Any, addon: Any
) -> None:
    """Two legs side by side, nothing between them: neither chain's solved bones are read
    by the other, so neither feeds the pass's pose state (:attr:`evaluate._Planned.feeds`);
    once the second chain in the plan aims at a bone of the armature (which may lie below
    the first chain), the first feeds it."""
    obj = _legs("none")
    _chains(obj)
    first = obj.pose.bones["a1"].reach_ik
    first.target, first.target_bone = add_empty("Elsewhere", (0.6, 0.2, 0.3)), ""
    addon.live_state.live.invalidate()
    assert [(p.tip, p.feeds) for p in addon.evaluate._planned(obj)] == [
        ("a1", False),
        ("b1", False),
    ]
    second = obj.pose.bones["b1"].reach_ik
    second.target, second.target_bone = obj, "follow"
    addon.live_state.live.invalidate()
    assert [(p.tip, p.feeds) for p in addon.evaluate._planned(obj)] == [
        ("a1", True),
        ("b1", False),
    ]


@pytest.mark.parametrize("link", ["constraint", "driver"])
def test_a_goal_that_follows_another_chain_is_met_on_first_showing(
    clean_scene: Any, addon: Any, link: str
) -> None:
    """Every frame shown for the first time shows the second leg on its target (its target
    moves with the first leg's new pose; before, the second leg was solved against the
    first leg's previous pose), the same matrices as when shown again, in any order."""
    bpy = blender_module()
    obj = _legs(link)
    _chains(obj)
    assert addon.evaluate.waits_for_evaluation(obj)
    scene = bpy.context.scene
    first = {}
    for f in FRAMES:
        scene.frame_set(f)
        assert _followers_gap(obj) <= 1e-5, f"frame {f}: {_followers_gap(obj):.2e} m"
        first[f] = world_track([("Legs", b) for b in BONES], [f])
    for f in reversed(FRAMES):
        scene.frame_set(f)
        np.testing.assert_array_equal(world_track([("Legs", b) for b in BONES], [f]), first[f])
    # Without the constraint (the drivers) nothing follows the first leg: one pass, as for
    # any rig.
    hang = obj.pose.bones["hang"]
    if link == "constraint":
        hang.constraints.remove(hang.constraints[0])
    else:
        for i in range(3):
            hang.driver_remove("location", i)
    addon.live_state.live.invalidate()
    assert not addon.evaluate.waits_for_evaluation(obj)


@pytest.mark.parametrize("link", ["constraint", "driver"])
def test_a_goal_that_follows_another_chain_is_baked_as_it_plays(
    clean_scene: Any, addon: Any, tmp_path: Any, link: str
) -> None:
    """The bake keys what live solving shows (replayed without the extension)."""
    bpy = blender_module()
    obj = _legs(link)
    _chains(obj)
    bones = [("Legs", b) for b in BONES]
    live = world_track(bones, FRAMES)
    result = addon.bake.bake(obj, addon.bake.BakeOptions(FRAMES[0], FRAMES[-1], reduce=False))
    assert result.frames == len(FRAMES)
    path = tmp_path / "legs.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    baked = probe_without_addon(path, bones, FRAMES, tmp_path)
    assert_same_pose(live, baked, [obj.data.bones[b].length for _, b in bones], bones)


@pytest.mark.parametrize("link", ["constraint", "driver"])
def test_a_target_that_follows_its_own_chain_is_refused(
    clean_scene: Any, addon: Any, link: str
) -> None:
    """A target that follows the chain's own bones through a constraint (drivers) is a
    feedback loop (each solve would move what it reaches for): *Add Reach IK* refuses it
    and says why."""
    bpy = blender_module()
    obj = _legs(link)
    select_only(obj, ["b1", "follow"], "b1")  # `follow` hangs from `hang`, which follows b1
    loop = "follows, through constraints or drivers, this chain itself"
    with pytest.raises(RuntimeError, match=loop):
        bpy.ops.reach_ik.add(chain_length=2)
    assert not obj.pose.bones["b1"].reach_ik.has_chain


def _held(where: str) -> tuple[Any, Any, str]:
    """A prop in the first leg's foot: an empty parented to ``b1`` (half a metre beside
    its tail and 0.4 m up it, in the bone's frame), and a 2-bone chain reaching for it —
    ``a0``→``a1`` of the same armature (``where`` ``"same"``) or ``p0``→``p1`` of a second
    armature in the same place (``"other"``). Or the second armature carried by the first
    leg (``"carried"``: a *Child Of* constraint on the object, location only, targets
    ``b1``), its chain reaching for an empty that stays. Returns the follower's armature,
    the empty and its tip."""
    bpy = blender_module()
    legs = _legs("none")
    _first_leg(legs)
    empty = add_empty("InFoot", (0.5, -0.4, 0.0))
    empty.parent, empty.parent_type, empty.parent_bone = legs, "BONE", "b1"
    follower, tip = legs, "a1"
    if where in ("other", "carried"):
        bpy.ops.object.mode_set(mode="OBJECT")
        follower, tip = new_armature("Prop"), "p1"
        bpy.ops.object.mode_set(mode="EDIT")
        for name, head, tail, parent in (
            ("p0", (0.5, 0.0, 1.0), (0.5, -0.06, 0.5), None),
            ("p1", (0.5, -0.06, 0.5), (0.5, 0.0, 0.0), "p0"),
        ):
            bone = follower.data.edit_bones.new(name)
            bone.head, bone.tail = head, tail
            if parent is not None:
                bone.parent, bone.use_connect = follower.data.edit_bones[parent], True
        bpy.ops.object.mode_set(mode="POSE")
    if where == "carried":
        empty.parent = None
        empty.location = (0.5, 0.1, 0.45)
        carry = follower.constraints.new("CHILD_OF")
        carry.target, carry.subtarget = legs, "b1"
        for channel in ("rotation_x", "rotation_y", "rotation_z", "scale_x", "scale_y"):
            setattr(carry, f"use_{channel}", False)
        carry.use_scale_z = False
        # (at rest the prop stays where it is: the inverse undoes b1's rest head)
        matrix = importlib.import_module("mathutils").Matrix
        carry.inverse_matrix = matrix.Translation(-legs.data.bones["b1"].head_local)
    for other in bpy.context.scene.objects:
        other.select_set(other in (follower, empty))
    select_only(follower, [tip], tip)
    assert bpy.ops.reach_ik.add(chain_length=2) == {"FINISHED"}
    assert follower.pose.bones[tip].reach_ik.target == empty
    return follower, empty, tip


def _assert_baked_before_shown_as_it_plays(
    addon: Any, obj: Any, names: tuple[str, ...], tmp_path: Any
) -> None:
    """Bake ``obj`` before any frame is shown, replay the bake without the extension, and
    compare the bones ``names`` with live solving (the file as it was before the bake,
    every frame shown once first: the reference is the settled pose)."""
    bpy = blender_module()
    name = obj.name
    bones = [(name, b) for b in names]
    setup = tmp_path / "setup.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(setup), copy=True)
    result = addon.bake.bake(obj, addon.bake.BakeOptions(FRAMES[0], FRAMES[-1], reduce=False))
    assert result.frames == len(FRAMES)
    path = tmp_path / "baked.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    baked = probe_without_addon(path, bones, FRAMES, tmp_path)
    bpy.ops.wm.open_mainfile(filepath=str(setup))
    world_track(bones, FRAMES)
    live = world_track(bones, FRAMES)
    lengths = [bpy.data.objects[name].data.bones[b].length for b in names]
    assert_same_pose(live, baked, lengths, bones)


def _held_gap(follower: Any, empty: Any, tip: str) -> float:
    """How far the follower's tip tail is from the empty, as Blender shows them (m)."""
    depsgraph = blender_module().context.evaluated_depsgraph_get()
    where = np.array(empty.evaluated_get(depsgraph).matrix_world.translation)
    return float(np.linalg.norm(tail_world(follower, tip) - where))


@pytest.mark.parametrize("where", ["same", "other", "carried"])
def test_a_goal_held_by_another_chain_is_met_on_first_showing(
    clean_scene: Any, addon: Any, where: str
) -> None:
    """An object goal parented to a bone another chain moves — of the same armature or
    another one — and an armature carried by such a bone are read as Blender evaluated
    them: every frame shown for the first time shows the follower on it (before, 0.17–0.33
    m off), the same as when shown again."""
    bpy = blender_module()
    follower, empty, tip = _held(where)
    assert addon.evaluate.waits_for_evaluation(follower)
    bones = [(follower.name, b) for b in (tip[0] + "0", tip)]
    scene = bpy.context.scene
    first = {}
    for f in FRAMES:
        scene.frame_set(f)
        gap = _held_gap(follower, empty, tip)
        assert gap <= 1e-5, f"frame {f}: {gap:.2e} m"
        first[f] = world_track(bones, [f])
    for f in reversed(FRAMES):
        scene.frame_set(f)
        np.testing.assert_array_equal(world_track(bones, [f]), first[f])


@pytest.mark.parametrize("where", ["same", "other", "carried"])
def test_a_goal_held_by_another_chain_is_baked_as_it_plays(
    clean_scene: Any, addon: Any, tmp_path: Any, where: str
) -> None:
    """Baked before any frame is shown, the follower keys what live solving shows (the
    bake replayed without the extension; before, 0.20–0.33 m off)."""
    follower, _, tip = _held(where)
    _assert_baked_before_shown_as_it_plays(addon, follower, (tip[0] + "0", tip), tmp_path)


def _hand_and_fingers(hand: str = "child") -> tuple[Any, Any]:
    """The first leg with a ``hand`` that keeps its world rotation (*Copy Rotation* from an
    empty that stays) and a 2-bone finger ``f0``→``f1`` below it, a chain reaching for an
    empty that stays. The hand is a child of ``b1`` (``hand`` ``"child"``) or has no parent
    and copies ``b1``'s tail (``"copied"``, *Copy Location*: as a Rigify rig's ORG hand
    follows its IK chain). Returns the armature and the finger's target."""
    bpy = blender_module()
    legs = _legs("none")
    bpy.ops.object.mode_set(mode="EDIT")
    eb = legs.data.edit_bones
    for name, head, tail, parent in (
        ("hand", (0.0, 0.0, 0.0), (0.0, 0.1, 0.0), "b1" if hand == "child" else None),
        ("f0", (0.0, 0.1, 0.0), (0.0, 0.3, 0.02), "hand"),
        ("f1", (0.0, 0.3, 0.02), (0.0, 0.5, 0.0), "f0"),
    ):
        bone = eb.new(name)
        bone.head, bone.tail = head, tail
        if parent is not None:
            bone.parent, bone.use_connect = eb[parent], True
    bpy.ops.object.mode_set(mode="POSE")
    hand_bone = legs.pose.bones["hand"]
    if hand == "copied":
        copy = hand_bone.constraints.new("COPY_LOCATION")
        copy.target, copy.subtarget, copy.head_tail = legs, "b1", 1.0
    keep = hand_bone.constraints.new("COPY_ROTATION")
    keep.target = add_empty("Keep", (0.0, 0.0, 0.0))
    _first_leg(legs)
    target = add_empty("FingerTarget", (0.0, 0.25, 0.15))
    for other in bpy.context.scene.objects:
        other.select_set(other in (legs, target))
    select_only(legs, ["f1"], "f1")
    assert bpy.ops.reach_ik.add(chain_length=2) == {"FINISHED"}
    return legs, target


@pytest.mark.parametrize("hand", ["child", "copied"])
def test_a_chain_below_a_constrained_bone_of_another_chain_shows_what_it_reports(
    clean_scene: Any, addon: Any, hand: str
) -> None:
    """A bone that constraints of its own place and another chain moves (a hand keeping
    its world rotation below a chain, or copying the chain's tip) is read as Blender
    evaluates it once that chain's new pose is evaluated: on every first showing the
    finger's tip is where Reach IK reports it (before, the report said 0 where Blender
    showed it up to 0.12 m off), and on its target wherever it is reported met (18 of 24
    frames; the others lie out of its reach)."""
    bpy = blender_module()
    legs, target = _hand_and_fingers(hand)
    assert addon.evaluate.waits_for_evaluation(legs)
    scene = bpy.context.scene
    met = 0
    for f in FRAMES:
        scene.frame_set(f)
        report = addon.evaluate.solve_chains(legs, bpy.context.evaluated_depsgraph_get())
        error = next(p.error for p in report.poses if p.tip == "f1")
        shown = float(np.linalg.norm(tail_world(legs, "f1") - np.array(target.location)))
        assert abs(shown - error) <= 1e-6, f"frame {f}: shown {shown:.3e} m, reported {error:.3e}"
        met += error <= 1e-9
    assert met >= len(FRAMES) // 2


@pytest.mark.parametrize("hand", ["child", "copied"])
def test_a_chain_below_a_constrained_bone_of_another_chain_is_baked_as_it_plays(
    clean_scene: Any, addon: Any, tmp_path: Any, hand: str
) -> None:
    """Baked before any frame is shown, the finger keys what live solving shows."""
    legs, _ = _hand_and_fingers(hand)
    _assert_baked_before_shown_as_it_plays(addon, legs, ("b0", "b1", "f0", "f1"), tmp_path)


def _drive_influence(obj: Any, tip: str, reads: str) -> None:
    """A driver on chain ``tip``'s *Influence*: the world height of bone ``reads``'s head
    (a *Transform Channel* variable)."""
    _drive(obj, f'pose.bones["{tip}"].reach_ik.influence', reads)


def _drive(obj: Any, path: str, reads: str, index: int = -1) -> None:
    """A driver on ``obj``'s property ``path`` (item ``index`` of an array): the world
    height of bone ``reads``'s head (a *Transform Channel* variable)."""
    driver = obj.driver_add(path, index).driver
    driver.type = "AVERAGE"
    var = driver.variables.new()
    var.type = "TRANSFORMS"
    var.targets[0].id = obj
    var.targets[0].bone_target = reads
    var.targets[0].transform_type = "LOC_Z"
    var.targets[0].transform_space = "WORLD_SPACE"
    blender_module().context.view_layer.update()  # (the edit's update: chains read again)


def _driven_legs(addon: Any) -> Any:
    """The legs of :func:`_legs`: ``b0``→``b1`` reaches for a keyed empty, ``a0``→``a1``
    for an empty that stays, its influence driven by ``b1``'s height (0.51–0.65 here)."""
    bpy = blender_module()
    obj = _legs("none")
    _first_leg(obj)
    goal = add_empty("Goal", (0.7, -0.3, 0.3))
    for other in bpy.context.scene.objects:
        other.select_set(other == goal)
    select_only(obj, ["a1"], "a1")
    assert bpy.ops.reach_ik.add(chain_length=2) == {"FINISHED"}
    obj.pose.bones["a1"].reach_ik.target = goal
    _drive_influence(obj, "a1", "b1")
    return obj


def test_settings_driven_by_another_chain_follow_its_new_pose(clean_scene: Any, addon: Any) -> None:
    """A chain whose *Influence* is driven by another chain's bone is solved with the
    influence of the frame's settled pose: each frame, on its first showing, shows the same
    matrices whichever frame was shown before it (before, up to 7 mm apart: the influence
    of the other chain's previous pose)."""
    bpy = blender_module()
    obj = _driven_legs(addon)
    assert addon.evaluate.waits_for_evaluation(obj)
    scene = bpy.context.scene
    first = {}
    for f in FRAMES:  # (read as shown: world_track would show the frame again)
        scene.frame_set(f)
        first[f] = np.array([world_matrix(obj, b) for b in BONES])
    addon.stored.forget()  # every frame solved again, now coming from the next one
    for f in reversed(FRAMES):
        scene.frame_set(f)
        shown = np.array([world_matrix(obj, b) for b in BONES])
        np.testing.assert_allclose(shown, first[f], atol=1e-6, err_msg=f"frame {f}")


def test_settings_driven_by_another_chain_are_baked_as_they_play(
    clean_scene: Any, addon: Any, tmp_path: Any
) -> None:
    """The bake keys what live solving shows (replayed without the extension)."""
    obj = _driven_legs(addon)
    _assert_baked_before_shown_as_it_plays(addon, obj, BONES, tmp_path)


def test_settings_driven_by_the_chain_itself_are_a_feedback_loop(
    clean_scene: Any, addon: Any
) -> None:
    """An influence driven by a bone the chain moves would change with every solve: the
    chain is refused, says why, and shows its FK pose."""
    bpy = blender_module()
    obj = _legs("none")
    _first_leg(obj)
    _drive_influence(obj, "b1", "b1")
    bpy.context.scene.frame_set(FRAMES[1])
    report = addon.evaluate.solve_chains(obj, bpy.context.evaluated_depsgraph_get())
    assert (
        "a driver of its settings reads 'Legs:b1', which follows this chain itself"
        in (report.problems["b1"])
    )
    assert not report.solved
    rest = np.array(obj.matrix_world) @ np.array(obj.data.bones["b1"].matrix_local)
    np.testing.assert_allclose(world_matrix(obj, "b1"), rest, atol=1e-6)


@pytest.mark.parametrize("channel", ["rotation", "location"])
def test_channels_driven_by_another_chain_follow_its_new_pose(
    clean_scene: Any, addon: Any, tmp_path: Any, channel: str
) -> None:
    """What a chain reads of its own bones' channels — the FK pose it blends with at an
    influence below 1, its root's location — driven by another chain's bone is read after
    that chain's new pose is evaluated: each frame, on its first showing, shows the same
    matrices whichever frame was shown before it (before, 4.5 mm and 26 mm apart). The bake
    keys what live solving shows; where a driver holds a chain bone's rotation, whose keys
    it overrides, the bake says so."""
    bpy = blender_module()
    obj = _driven_legs(addon)
    path = 'pose.bones["a1"].reach_ik.influence'
    obj.driver_remove(path)
    obj.pose.bones["a1"].reach_ik.influence = 0.5
    if channel == "rotation":  # a0's FK bend follows b1's height
        obj.pose.bones["a0"].rotation_mode = "XYZ"
        _drive(obj, 'pose.bones["a0"].rotation_euler', "b1", 0)
    else:  # the second leg's hip follows b1's height
        _drive(obj, 'pose.bones["a0"].location', "b1", 1)
    assert addon.evaluate.waits_for_evaluation(obj)
    scene = bpy.context.scene
    first = {}
    for f in FRAMES:
        scene.frame_set(f)
        first[f] = np.array([world_matrix(obj, b) for b in BONES])
    addon.stored.forget()
    for f in reversed(FRAMES):
        scene.frame_set(f)
        shown = np.array([world_matrix(obj, b) for b in BONES])
        np.testing.assert_allclose(shown, first[f], atol=1e-6, err_msg=f"frame {f}")
    if channel == "location":
        _assert_baked_before_shown_as_it_plays(addon, obj, BONES, tmp_path)
        return
    options = addon.bake.BakeOptions(FRAMES[0], FRAMES[-1], reduce=False)
    result = addon.bake.bake(obj, options)
    driven = 'pose.bones["a0"].rotation_euler'
    assert f"'{driven}' has a driver, which overrides the baked keys" in result.warnings
