# SPDX-License-Identifier: GPL-3.0-or-later
"""The Reach IK integration scenario, run inside a real Blender (``make check-blender``).

    blender -b --factory-startup --python-exit-code 1 \\
        --python scripts/check_blender_scenario.py -- --zip dist/reach_ik-<version>.zip

Installs the extension zip as *Install from Disk* does, then checks with Blender's own
evaluated matrices, on a hand-built arm and on the Rigify human metarig:

* chains added with the operators reach animated targets (≤ 1e-4 of the chain length);
* scrubbing is deterministic (frame 10→50 and 49→50 give identical matrices);
* each bone of a solved chain shows its pose through one *Reach IK* constraint (Copy
  Rotation, owner space Local, target space World, mix Replace) targeting a helper empty
  in no scene, with a fake user and ``reach_ik_owner`` = the armature's name; other bones have none;
* disabling and removing a chain take its constraints off and delete its helpers, and the
  evaluated pose matrices are the FK pose's bit for bit (keyed Euler/axis-angle bones and
  an unkeyed quaternion bone); live solving writes neither the rotation channels nor keys;
* save and reload keep the chains, constraints and helpers;
* the metarig's limbs with Blender IK constraints (poles, pole angles) convert to Reach IK
  chains that bend like Blender's IK, and back; an arm's IK with *Stretch* and *Rotation*
  converts to a chain that meets both goals, as Blender's IK does;
* bad input (no armature, chain too long, deleted target) gives a message, loses nothing
  (a chain that cannot be solved shows the FK pose exactly);
* unregister removes every handler and class, register brings them back.

Prints one line per check and ``RESULT: <n> passed, <m> failed``; exits 1 if any failed.
Runs on Blender 4.2+ (bone selection moved to ``PoseBone.select`` in 5.0; both handled).
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

bpy: Any = importlib.import_module("bpy")  # Blender's API, driven dynamically here

EXTENSION = "bl_ext.user_default.reach_ik"
ARM = ("upper", "fore", "hand")
BONES = ("shoulder", *ARM)
CONSTRAINT = "Reach IK"
OWNER = "reach_ik_owner"
CHECKS: list[Callable[[], None]] = []


def check(fn: Callable[[], None]) -> Callable[[], None]:
    CHECKS.append(fn)
    return fn


# ------------------------------------------------------------------------------ helpers
def evaluated_world(obj: Any, bone: str) -> np.ndarray:
    depsgraph = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(depsgraph)
    return np.array(ev.matrix_world) @ np.array(ev.pose.bones[bone].matrix)


def head(obj: Any, bone: str) -> np.ndarray:
    return evaluated_world(obj, bone)[:3, 3]


def tail(obj: Any, bone: str) -> np.ndarray:
    m = evaluated_world(obj, bone)
    return (m @ np.array([0.0, obj.data.bones[bone].length, 0.0, 1.0]))[:3]


def select_only(obj: Any, names: list[str], active: str) -> None:
    for pb in obj.pose.bones:
        if hasattr(pb, "select"):
            pb.select = pb.name in names
        else:
            pb.bone.select = pb.name in names
    obj.data.bones.active = obj.data.bones[active]


def empty(name: str, location: Any) -> Any:
    ob = bpy.data.objects.new(name, None)
    ob.location = location
    bpy.context.scene.collection.objects.link(ob)
    return ob


def build_arm() -> Any:
    """An arm with rolls, a disconnected upper arm, a gap before the hand; object moved,
    rotated and scaled; pose mode."""
    arm = bpy.data.armatures.new("Arm")
    obj = bpy.data.objects.new("Arm", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    obj.location, obj.rotation_euler, obj.scale = (0.3, -0.2, 0.5), (0.3, -0.2, 0.7), (1.5,) * 3
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.edit_bones
    bones: dict[str, Any] = {}
    for name, h, t, roll, parent, connect in (
        ("shoulder", (0, 0, 1.0), (0.15, 0.02, 1.02), 0.4, None, False),
        ("upper", (0.18, 0.03, 1.0), (0.45, 0.08, 0.9), -0.6, "shoulder", False),
        ("fore", (0.45, 0.08, 0.9), (0.7, 0.02, 0.82), 1.1, "upper", True),
        ("hand", (0.72, 0.02, 0.81), (0.8, 0.0, 0.79), 0.2, "fore", False),
    ):
        b = eb.new(name)
        b.head, b.tail, b.roll = h, t, roll
        if parent:
            b.parent, b.use_connect = bones[parent], connect
        bones[name] = b
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def reachable_points(obj: Any, count: int, seed: int) -> list[np.ndarray]:
    """Hand tail positions of random chain poses (reachable by construction). The chain on
    the hand is switched off meanwhile: its constraints would show the solve instead."""
    rng = np.random.default_rng(seed)
    settings = obj.pose.bones["hand"].reach_ik
    settings.enabled = False
    points = []
    for _ in range(count):
        for name in ARM:
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            obj.pose.bones[name].rotation_quaternion = (math.cos(0.5), *(math.sin(0.5) * axis))
        bpy.context.view_layer.update()
        points.append(tail(obj, "hand"))
    for name in ARM:
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    settings.enabled = True
    bpy.context.view_layer.update()
    return points


def pose(obj: Any) -> np.ndarray:
    """Blender's evaluated world matrices ``(4, 4, 4)`` of the arm's bones."""
    return np.array([evaluated_world(obj, n) for n in BONES])


def helpers() -> list[Any]:
    """Every object marked as a Reach IK helper."""
    return [o for o in bpy.data.objects if OWNER in o]


def check_constraints(obj: Any, chain: tuple[str, ...]) -> None:
    """``chain``'s bones carry exactly one well-formed Reach IK constraint each, whose
    helper belongs to ``obj``; the other bones carry none; no other helper exists."""
    found = []
    for pb in obj.pose.bones:
        names = [c.name for c in pb.constraints if c.name.startswith(CONSTRAINT)]
        if pb.name not in chain:
            assert names == [], f"{pb.name}: not in the chain but has {names}"
            continue
        assert names == [CONSTRAINT], f"{pb.name}: {names}"
        con = pb.constraints[CONSTRAINT]
        got = (con.type, con.owner_space, con.target_space, con.mix_mode)
        assert got == ("COPY_ROTATION", "LOCAL", "WORLD", "REPLACE"), f"{pb.name}: {got}"
        helper = con.target
        assert getattr(helper, "type", None) == "EMPTY", f"{pb.name}: target {helper}"
        assert helper.users_scene == (), f"{helper.name} is linked to {helper.users_scene}"
        assert helper.use_fake_user, f"{helper.name} has no fake user"
        assert helper.get(OWNER) == obj.name, f"{helper.name}: owner {helper.get(OWNER)}"
        found.append(helper.name)
    assert len(set(found)) == len(chain), f"helpers {found} for {chain}"
    assert sorted(h.name for h in helpers()) == sorted(found), "stray helpers"


def channels(obj: Any) -> list[tuple[float, ...]]:
    out = []
    for name in ARM:
        pb = obj.pose.bones[name]
        mode = pb.rotation_mode
        if mode == "QUATERNION":
            out.append(tuple(pb.rotation_quaternion))
        elif mode == "AXIS_ANGLE":
            out.append(tuple(pb.rotation_axis_angle))
        else:
            out.append(tuple(pb.rotation_euler))
    return out


def expect_error(op: Any, kwargs: dict[str, Any], text: str) -> None:
    """The operator must refuse with a message containing ``text``."""
    message = ""
    try:
        op(**kwargs)
    except RuntimeError as exc:
        message = str(exc)
    if text not in message:
        raise AssertionError(f"expected an error about {text!r}, got {message!r}")


def reset() -> None:
    bpy.ops.wm.read_homefile(use_empty=True)


def arm_with_chain() -> tuple[Any, Any]:
    reset()
    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    result = bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    assert result == {"FINISHED"}, result
    return obj, obj.pose.bones["hand"].reach_ik.target


def status(obj: Any, tip: str) -> Any:
    handlers = importlib.import_module(f"{EXTENSION}.ik_addon.handlers")
    return handlers.status[(obj.name, tip)]


# ------------------------------------------------------------------------------ checks
@check
def animated_target_is_reached() -> None:
    obj, target = arm_with_chain()
    frames = [1, 11, 21, 31]
    for f, p in zip(frames, reachable_points(obj, len(frames), 1), strict=True):
        target.location = p
        target.keyframe_insert("location", frame=f)
    length = 1.5 * sum(obj.data.bones[n].length for n in ARM) * 1.05
    for f in frames:
        bpy.context.scene.frame_set(f)
        err = float(np.linalg.norm(tail(obj, "hand") - np.array(target.matrix_world.translation)))
        assert err <= 1e-4 * length, f"frame {f}: effector {err:.2e} m from the target"
    assert obj.animation_data is None, "live solving keyed the chain bones"


@check
def rotation_turns_the_hand_with_the_automatic_solver() -> None:
    """*Rotation* with the solver *Add Reach IK* chooses (FABRIK for 3 bones): the hand
    takes the target's orientation and its tail the target's place (a goal some pose of
    the arm meets), on the armature as built and mirrored by a negative scale."""
    mathutils = importlib.import_module("mathutils")
    for mirrored in (False, True):
        obj, target = arm_with_chain()
        if mirrored:
            obj.scale = (-obj.scale[0], obj.scale[1], obj.scale[2])
        settings = obj.pose.bones["hand"].reach_ik
        settings.enabled = False
        rng = np.random.default_rng(12)
        for name in ARM:
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            obj.pose.bones[name].rotation_quaternion = (math.cos(0.4), *(math.sin(0.4) * axis))
        bpy.context.view_layer.update()
        goal = evaluated_world(obj, "hand")
        target.matrix_world = mathutils.Matrix(goal.tolist())
        target.location = tail(obj, "hand")
        for name in ARM:
            obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        settings.use_rotation = True
        settings.enabled = True
        bpy.context.scene.frame_set(1)
        got = evaluated_world(obj, "hand")
        a = goal[:3, :3] / np.linalg.norm(goal[:3, :3], axis=0)
        b = got[:3, :3] / np.linalg.norm(got[:3, :3], axis=0)
        angle = math.degrees(math.acos(min(1.0, (float(np.trace(a.T @ b)) - 1.0) / 2.0)))
        miss = float(np.linalg.norm(tail(obj, "hand") - np.array(target.location)))
        length = 1.5 * sum(obj.data.bones[n].length for n in ARM)
        assert settings.solver == "fabrik", settings.solver
        assert angle <= 0.1, f"mirrored={mirrored}: the hand {angle:.3f}° off the target"
        assert miss <= 1e-4 * length, f"mirrored={mirrored}: the tail {miss:.2e} m off"


@check
def stretch_with_rotation_meets_both_goals() -> None:
    """*Stretch* and *Rotation* on Blender's IK of a 2-bone arm (*IK Stretch* 0.1), the
    forearm turned to a goal it cannot take at its rest length: converted, the chain meets
    both goals as Blender's IK does (the forearm's tail on the target, its orientation as
    close as Blender's own), by lengthening the upper arm and shortening the forearm."""
    reset()
    obj = build_arm()
    for name in ("upper", "fore"):
        obj.pose.bones[name].ik_stretch = 0.1
    head = evaluated_world(obj, "upper")[:3, 3]
    target = empty("Target", (head + np.array([0.5, 0.6, -0.2])).tolist())
    target.rotation_euler = (0.3, -0.2, 0.5)
    con = obj.pose.bones["fore"].constraints.new("IK")
    con.target, con.chain_count, con.iterations = target, 2, 500
    con.use_stretch = con.use_rotation = True

    def gaps() -> tuple[float, float]:
        bpy.context.view_layer.update()
        got = evaluated_world(obj, "fore")
        goal = np.array(target.matrix_world)
        a = goal[:3, :3] / np.linalg.norm(goal[:3, :3], axis=0)
        b = got[:3, :3] / np.linalg.norm(got[:3, :3], axis=0)
        angle = math.degrees(math.acos(min(1.0, (float(np.trace(a.T @ b)) - 1.0) / 2.0)))
        return float(np.linalg.norm(tail(obj, "fore") - goal[:3, 3])), angle

    theirs = gaps()
    assert theirs[0] <= 1e-3, f"Blender's IK missed by {theirs[0]:.2e} m"
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    settings = obj.pose.bones["fore"].reach_ik
    assert settings.use_stretch
    assert settings.use_rotation
    for rule in ("blender", "closed_form"):
        settings.stretch_rule = rule
        miss, angle = gaps()
        assert miss <= 1e-5, f"{rule}: the tail {miss:.2e} m off the target"
        assert angle <= theirs[1] + 1e-3, f"{rule}: {angle:.4f}° off, Blender {theirs[1]:.4f}°"


@check
def scrubbing_is_deterministic() -> None:
    obj, target = arm_with_chain()
    frames = list(range(1, 61, 6))
    for f, p in zip(frames, reachable_points(obj, len(frames), 2), strict=True):
        target.location = p
        target.keyframe_insert("location", frame=f)
    scene = bpy.context.scene

    def pose() -> np.ndarray:
        return np.array([evaluated_world(obj, n) for n in ARM])

    scene.frame_set(10)
    scene.frame_set(50)
    jumped = pose()
    scene.frame_set(49)
    scene.frame_set(50)
    assert np.array_equal(jumped, pose()), "10→50 and 49→50 differ"


@check
def disable_and_remove_restore_fk() -> None:
    reset()
    obj = build_arm()
    modes = {"upper": "YZX", "fore": "AXIS_ANGLE", "hand": "QUATERNION"}
    rng = np.random.default_rng(3)
    for f in (1, 20):
        for name, mode in modes.items():
            pb = obj.pose.bones[name]
            pb.rotation_mode = mode
            if name == "hand":
                continue  # unkeyed
            if mode == "AXIS_ANGLE":
                pb.rotation_axis_angle = (rng.uniform(-3, 3), *rng.normal(size=3))
                pb.keyframe_insert("rotation_axis_angle", frame=f)
            else:
                pb.rotation_euler = rng.uniform(-3, 3, size=3)
                pb.keyframe_insert("rotation_euler", frame=f)
    obj.pose.bones["hand"].rotation_quaternion = (0.8, 0.0, 0.6, 0.0)
    scene = bpy.context.scene
    scene.frame_set(7)
    fk, fk_pose = channels(obj), pose(obj)
    select_only(obj, ["hand"], "hand")
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    check_constraints(obj, ARM)
    s = obj.pose.bones["hand"].reach_ik
    s.target.location = head(obj, "upper") + np.array([-0.2, 0.3, 0.2])
    scene.frame_set(12)
    scene.frame_set(7)
    check_constraints(obj, ARM)
    assert not np.allclose(pose(obj), fk_pose), "the chain did not move the bones"
    assert channels(obj) == fk, "live solving wrote the rotation channels"
    s.enabled = False
    bpy.context.view_layer.update()
    check_constraints(obj, ())
    assert np.array_equal(pose(obj), fk_pose), "disabling did not give back the FK pose"
    s.enabled = True
    scene.frame_set(7)
    check_constraints(obj, ARM)
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.remove() == {"FINISHED"}
    check_constraints(obj, ())
    bpy.context.view_layer.update()
    assert np.array_equal(pose(obj), fk_pose), "removing did not give back the FK pose"
    assert channels(obj) == fk, "the rotation channels changed"


@check
def save_and_reload_keep_chains() -> None:
    obj, target = arm_with_chain()
    target.location = head(obj, "upper") + np.array([0.1, 0.3, 0.1])
    bpy.context.scene.frame_set(3)
    before = np.array([evaluated_world(obj, n) for n in ARM])
    path = os.path.join(tempfile.mkdtemp(), "chain.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Arm"]
    s = obj.pose.bones["hand"].reach_ik
    assert s.has_chain, "the chain was lost"
    assert s.target is not None, "the target was lost"
    bpy.context.scene.frame_set(3)
    check_constraints(obj, ARM)
    after = np.array([evaluated_world(obj, n) for n in ARM])
    assert np.allclose(after, before, atol=1e-6), "the pose changed after reloading"


@check
def metarig_constraints_convert_both_ways() -> None:
    reset()
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    rng = np.random.default_rng(11)
    limbs = {"shin.L": -90.0, "shin.R": 0.0, "forearm.L": 45.0, "forearm.R": 180.0}
    made = {}
    for tip, pole_deg in limbs.items():
        root = obj.data.bones[tip].parent.name
        length = obj.data.bones[tip].length + obj.data.bones[root].length
        d = rng.normal(size=3)
        t = empty(f"{tip} IK", head(obj, root) + d / np.linalg.norm(d) * length * 0.75)
        p = empty(f"{tip} pole", head(obj, root) + rng.normal(size=3) * length)
        con = obj.pose.bones[tip].constraints.new("IK")
        con.target, con.pole_target, con.chain_count = t, p, 2
        con.pole_angle = math.radians(pole_deg)
        made[tip] = (t, con.pole_angle, length, root)
    bpy.context.view_layer.update()
    blender = {tip: head(obj, tip) for tip in limbs}
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    bpy.context.view_layer.update()
    for tip, (t, _, length, _) in made.items():
        assert obj.pose.bones[tip].reach_ik.has_chain, f"{tip}: not converted"
        err = float(np.linalg.norm(tail(obj, tip) - np.array(t.location)))
        assert err <= 1e-4 * length, f"{tip}: effector {err:.2e} m from the target"
        gap = float(np.linalg.norm(head(obj, tip) - blender[tip]))
        assert gap <= 2e-3 * length, f"{tip}: bends {gap * 1e3:.2f} mm away from Blender's IK"
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"FINISHED"}
    bpy.context.view_layer.update()
    for tip, (_, angle, length, _) in made.items():
        (con,) = [c for c in obj.pose.bones[tip].constraints if c.type == "IK"]
        assert abs(math.remainder(con.pole_angle - angle, 2 * math.pi)) < 1e-5, tip
        assert float(np.linalg.norm(head(obj, tip) - blender[tip])) <= 1e-5 * length, tip


@check
def bad_input_is_reported() -> None:
    reset()
    e = empty("NotAnArmature", (0, 0, 0))
    bpy.context.view_layer.objects.active = e
    expect_error(bpy.ops.reach_ik.add, {}, "armature")
    obj = build_arm()
    fk_pose = pose(obj)
    select_only(obj, ["hand"], "hand")
    expect_error(bpy.ops.reach_ik.add, {"chain_length": 9}, "longer than the bone hierarchy")
    assert not obj.pose.bones["hand"].reach_ik.has_chain
    bpy.ops.reach_ik.add(chain_length=3, new_target=True)
    s = obj.pose.bones["hand"].reach_ik
    s.target.location = head(obj, "upper") + np.array([0.1, 0.3, 0.0])
    bpy.context.scene.frame_set(2)
    bpy.data.objects.remove(s.target)
    bpy.context.scene.frame_set(3)
    assert status(obj, "hand").message.startswith("no target"), status(obj, "hand")
    check_constraints(obj, ())
    assert np.array_equal(pose(obj), fk_pose), "the FK pose was lost"


@check
def unregister_and_register_are_clean() -> None:
    addon_utils = importlib.import_module("addon_utils")

    def ours() -> list[str]:
        lists = (
            bpy.app.handlers.frame_change_post,
            bpy.app.handlers.depsgraph_update_post,
            bpy.app.handlers.load_post,
            bpy.app.handlers.undo_post,
            bpy.app.handlers.redo_post,
        )
        return sorted(f.__name__ for h in lists for f in h if f.__module__.startswith(EXTENSION))

    before = ours()
    assert before, "no handlers registered"
    addon_utils.disable(EXTENSION, default_set=True)
    assert ours() == [], f"handlers left after unregister: {ours()}"
    assert not hasattr(bpy.types, "REACH_IK_OT_add"), "operator left after unregister"
    assert not hasattr(bpy.types.PoseBone, "reach_ik"), "property left after unregister"
    addon_utils.enable(EXTENSION, default_set=True)
    assert ours() == before, "handlers differ after register"
    assert hasattr(bpy.types, "REACH_IK_OT_add")


# ------------------------------------------------------------------------------ main
def main() -> int:
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    parser = argparse.ArgumentParser(prog="check_blender_scenario.py")
    parser.add_argument("--zip", required=True, help="the extension zip to install")
    args = parser.parse_args(argv)
    addon_utils = importlib.import_module("addon_utils")

    result = bpy.ops.extensions.package_install_files(
        filepath=os.path.abspath(args.zip), repo="user_default", enable_on_install=True
    )
    if result != {"FINISHED"} or not addon_utils.check(EXTENSION)[1]:
        print(f"FAIL install: {result}; enabled={addon_utils.check(EXTENSION)}")
        return 1
    addon_utils.enable("rigify", default_set=True)
    print(f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}")
    failed = 0
    for fn in CHECKS:
        try:
            fn()
        except Exception as exc:
            failed += 1
            print(f"FAIL {fn.__name__}: {exc}")
            traceback.print_exc()
        else:
            print(f"ok   {fn.__name__}")
    print(f"RESULT: {len(CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    if code:
        sys.exit(code)
