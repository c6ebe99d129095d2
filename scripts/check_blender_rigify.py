# SPDX-License-Identifier: GPL-3.0-or-later
"""Convert IK on a Rigify-generated rig, and library overrides, in a real Blender
(``make check-blender`` runs every ``scripts/check_blender_*.py``).

    blender -b --factory-startup --python-exit-code 1 \\
        --python scripts/check_blender_rigify.py -- --zip dist/reach_ik-<version>.zip

Installs the extension zip as *Install from Disk* does, enables Rigify, generates the
human rig from the metarig, and checks with Blender's own evaluated matrices (the same
checks as ``tests/blender/test_convert_rigify.py`` and ``test_overrides.py``):

* Convert IK on the generated rig (stretch switched off on the rig; IK and pole controls
  keyed, the pole switch keyed off then on): every DEF bone and IK chain bone within 1 mm
  of the rig's own IK at every sampled frame; one chain per limb with a driven
  ``use_pole``; the rig's constraints muted, their drivers muted, no broken driver;
  ``IK_FK`` = 1 shows the FK pose exactly; converting back restores the rig's IK pose to
  1e-5 m and its drivers; with stretch on (as generated) and the pole switch keyed off then
  on, Convert carries it: every DEF and chain bone within 1 mm, the limbs the rig's IK
  stretches by more than 1 % too;
* library overrides: chain settings edited on an override are kept after save and
  reopen; *Remove Reach IK* on an override stays removed; two overrides of one linked rig
  each reach their own target; a linked armature is refused by the operators.

Prints one line per check and ``RESULT: <n> passed, <m> failed``; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

bpy: Any = importlib.import_module("bpy")  # Blender's API, driven dynamically here

EXTENSION = "bl_ext.user_default.reach_ik"
LIMBS = {
    "MCH-forearm_ik.L": ("hand_ik.L", "upper_arm_ik_target.L", "upper_arm_parent.L"),
    "MCH-forearm_ik.R": ("hand_ik.R", "upper_arm_ik_target.R", "upper_arm_parent.R"),
    "MCH-shin_ik.L": ("foot_ik.L", "thigh_ik_target.L", "thigh_parent.L"),
    "MCH-shin_ik.R": ("foot_ik.R", "thigh_ik_target.R", "thigh_parent.R"),
}
FRAMES = list(range(1, 41, 3))
POLE_FROM = 20
TMP = tempfile.mkdtemp(prefix="reach-ik-check-rigify-")
GENERATED = os.path.join(TMP, "generated.blend")
CHECKS: list[Callable[[], None]] = []


def check(fn: Callable[[], None]) -> Callable[[], None]:
    CHECKS.append(fn)
    return fn


def convert_module() -> Any:
    return importlib.import_module(f"{EXTENSION}.ik_addon.convert")


# ------------------------------------------------------------------------------ rigify
def open_generated() -> Any:
    if not os.path.exists(GENERATED):
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.ops.object.armature_human_metarig_add()
        assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
        bpy.ops.wm.save_as_mainfile(filepath=GENERATED)
    bpy.ops.wm.open_mainfile(filepath=GENERATED)
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    return rig


def set_all(rig: Any, key: str, value: float) -> None:
    for _tip, (_, _, props) in LIMBS.items():
        rig.pose.bones[props][key] = value
    rig.update_tag()
    bpy.context.view_layer.update()


def stretch_off(rig: Any) -> None:
    for tip in LIMBS:
        rig.pose.bones[tip].ik_stretch = 0.0
        rig.pose.bones[tip].parent.ik_stretch = 0.0
    set_all(rig, "IK_Stretch", 0.0)


def animate(rig: Any, seed: int, switch: bool) -> None:
    rng = np.random.default_rng(seed)
    for f in FRAMES[::2]:
        for _tip, (ik, pole, _props) in LIMBS.items():
            pb = rig.pose.bones[ik]
            if ik.startswith("foot"):
                pb.location = (*rng.normal(size=2) * 0.08, rng.uniform(0.08, 0.3))
            else:
                pb.location = rng.normal(size=3) * 0.1
            pb.keyframe_insert("location", frame=f)
            pb = rig.pose.bones[pole]
            pb.location = rng.normal(size=3) * 0.15
            pb.keyframe_insert("location", frame=f)
    if switch:
        for _tip, (_, _, props) in LIMBS.items():
            pb = rig.pose.bones[props]
            for f, on in ((1, False), (POLE_FROM, True)):
                pb["pole_vector"] = on
                pb.keyframe_insert('["pole_vector"]', frame=f)


def points(rig: Any, chains: bool = True) -> np.ndarray:
    ev = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    world = np.array(ev.matrix_world)
    names = [pb.name for pb in ev.pose.bones if pb.name.startswith("DEF-")]
    if chains:
        names += [b for tip in LIMBS for b in (tip, rig.pose.bones[tip].parent.name)]
    out = []
    for n in names:
        pb = ev.pose.bones[n]
        out.append([(world @ np.array([*p, 1.0]))[:3] for p in (pb.head, pb.tail)])
    return np.array(out)


def record(rig: Any, chains: bool = True) -> dict[int, np.ndarray]:
    out = {}
    for f in FRAMES:
        bpy.context.scene.frame_set(f)
        out[f] = points(rig, chains)
    return out


def gap(rig: Any, reference: dict[int, np.ndarray], chains: bool = True) -> float:
    worst = 0.0
    for f in FRAMES:
        bpy.context.scene.frame_set(f)
        worst = max(worst, float(np.linalg.norm(points(rig, chains) - reference[f], axis=-1).max()))
    return worst


def broken_drivers(rig: Any) -> list[str]:
    live = [fc for fc in rig.animation_data.drivers if not fc.mute]
    return [fc.data_path for fc in live if not (fc.is_valid and fc.driver.is_valid)]


@check
def rigify_generated_convert_both_ways() -> None:
    rig = open_generated()
    stretch_off(rig)
    animate(rig, seed=3, switch=True)
    reference = record(rig)
    set_all(rig, "IK_FK", 1.0)
    fk_reference = record(rig, chains=False)
    set_all(rig, "IK_FK", 0.0)
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    result = convert_module().last_result
    assert sorted(result.converted) == sorted(LIMBS), result
    assert (result.skipped, result.not_carried) == ([], []), result
    drivers = rig.animation_data.drivers
    for tip in LIMBS:
        s = rig.pose.bones[tip].reach_ik
        assert (s.has_chain, s.pole) == (True, rig), tip
        assert drivers.find(f'pose.bones["{tip}"].reach_ik.use_pole') is not None, tip
        for con in rig.pose.bones[tip].constraints:
            if con.type == "IK":
                muted = (con.mute, drivers.find(f"{con.path_from_id()}.mute").mute)
                assert muted == (True, True), f"{tip} {con.name}: {muted}"
    assert broken_drivers(rig) == [], broken_drivers(rig)
    worst = gap(rig, reference)
    print(f"  - converted: largest DEF / chain gap {worst * 1e3:.3f} mm (pole switch off, on)")
    assert worst <= 1e-3, f"{worst * 1e3:.2f} mm from the rig's own IK"
    set_all(rig, "IK_FK", 1.0)
    fk_gap = gap(rig, fk_reference, chains=False)
    assert fk_gap == 0.0, f"IK_FK = 1: {fk_gap:.2e} m from the FK pose"
    set_all(rig, "IK_FK", 0.0)
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"FINISHED"}
    for tip in LIMBS:
        assert not rig.pose.bones[tip].reach_ik.has_chain, tip
        for con in rig.pose.bones[tip].constraints:
            assert con.type == "IK", f"{tip}: {con.name} left"
            assert not drivers.find(f"{con.path_from_id()}.mute").mute, tip
    assert broken_drivers(rig) == [], broken_drivers(rig)
    back = gap(rig, reference)
    print(f"  - converted back: largest gap {back:.2e} m")
    assert back <= 1e-5, f"converted back: {back:.2e} m from the rig's own IK"


def chain_names(rig: Any, tip: str) -> tuple[str, str]:
    return (tip, rig.pose.bones[tip].parent.name)


def limb_rows(rig: Any, tip: str) -> list[int]:
    """The rows of :func:`points` of the limb of ``tip``: its DEF bones and chain bones."""
    base, side = tip.rsplit(".", 1)
    parts = ("upper_arm", "forearm", "hand") if "forearm" in base else ("thigh", "shin")
    names = [pb.name for pb in rig.pose.bones if pb.name.startswith("DEF-")]
    names += [b for t in LIMBS for b in chain_names(rig, t)]
    chain = set(chain_names(rig, tip))
    return [
        i
        for i, n in enumerate(names)
        if n in chain or (n.startswith("DEF-") and any(p in n for p in parts) and f".{side}" in n)
    ]


@check
def rigify_generated_stretch_is_carried() -> None:
    rig = open_generated()
    animate(rig, seed=4, switch=True)
    reference = record(rig)
    stretched: dict[int, list[str]] = {}
    count = len([pb for pb in rig.pose.bones if pb.name.startswith("DEF-")])
    for f in FRAMES:
        for k, tip in enumerate(LIMBS):
            rows = [count + 2 * k, count + 2 * k + 1]
            lengths = np.linalg.norm(reference[f][rows, 1] - reference[f][rows, 0], axis=-1)
            rest = np.array([rig.data.bones[b].length for b in chain_names(rig, tip)])
            if np.all(lengths > rest * 1.01):
                stretched.setdefault(f, []).append(tip)
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    result = convert_module().last_result
    assert not [m for m in result.not_carried if "tretch" in m], result
    for tip in LIMBS:
        assert rig.pose.bones[tip].reach_ik.use_stretch, tip
    beyond = 0.0
    for f, tips in stretched.items():
        bpy.context.scene.frame_set(f)
        far = np.linalg.norm(points(rig) - reference[f], axis=-1).max(axis=1)
        for tip in tips:
            beyond = max(beyond, float(far[limb_rows(rig, tip)].max()))
    whole = gap(rig, reference)
    print(
        f"  - stretch on, carried: stretched limbs within {beyond * 1e3:.3f} mm; every DEF "
        f"and chain bone within {whole * 1e3:.3f} mm (pole switch off, on)"
    )
    assert stretched, "the animation stretches no limb"
    assert beyond <= 1e-3, f"stretched limbs {beyond * 1e3:.2f} mm from the rig's own IK"
    assert whole <= 1e-3, f"{whole * 1e3:.2f} mm from the rig's own IK"


# ------------------------------------------------------------------------------ overrides
def make_library() -> str:
    bpy.ops.wm.read_homefile(use_empty=True)
    coll = bpy.data.collections.new("RigColl")
    bpy.context.scene.collection.children.link(coll)
    arm = bpy.data.armatures.new("Arm")
    obj = bpy.data.objects.new("Arm", arm)
    coll.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    prev = None
    for name, head, tail in (
        ("upper", (0.0, 0.0, 1.0), (0.3, 0.0, 0.95)),
        ("fore", (0.3, 0.0, 0.95), (0.55, 0.05, 0.95)),
        ("hand", (0.55, 0.05, 0.95), (0.65, 0.05, 0.95)),
    ):
        b = arm.edit_bones.new(name)
        b.head, b.tail = head, tail
        if prev is not None:
            b.parent, b.use_connect = prev, True
        prev = b
    bpy.ops.object.mode_set(mode="POSE")
    target = bpy.data.objects.new("Target", None)
    target.location = (0.4, 0.2, 0.9)
    coll.objects.link(target)
    s = obj.pose.bones["hand"].reach_ik
    s.chain_length, s.target, s.has_chain = 3, target, True
    bpy.context.scene.frame_set(1)
    bpy.ops.object.mode_set(mode="OBJECT")
    path = os.path.join(TMP, "lib.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True)
    return path


def link(path: str) -> Any:
    with bpy.data.libraries.load(path, link=True) as (_src, dst):
        dst.collections = ["RigColl"]
    return dst.collections[0]


def override(linked: Any) -> tuple[Any, Any]:
    coll = linked.override_hierarchy_create(
        bpy.context.scene, bpy.context.view_layer, do_fully_editable=True
    )
    arm = next(o for o in coll.objects if o.type == "ARMATURE")
    return arm, next(o for o in coll.objects if o.type == "EMPTY")


def tail(obj: Any, bone: str) -> np.ndarray:
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    m = np.array(ev.matrix_world) @ np.array(ev.pose.bones[bone].matrix)
    return (m @ np.array([0.0, obj.data.bones[bone].length, 0.0, 1.0]))[:3]


def error(arm: Any) -> float:
    goal = np.array(arm.pose.bones["hand"].reach_ik.target.matrix_world.translation)
    return float(np.linalg.norm(tail(arm, "hand") - goal))


def reopen() -> None:
    path = os.path.join(TMP, "shot.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)


def local(name: str) -> Any:
    return next(o for o in bpy.data.objects if o.name == name and o.library is None)


@check
def override_edits_are_kept() -> None:
    arm, _ = override(link(make_library()))
    other = bpy.data.objects.new("Other", None)
    other.location = (0.35, 0.3, 0.9)
    bpy.context.scene.collection.objects.link(other)
    s = arm.pose.bones["hand"].reach_ik
    s.influence, s.solver, s.target = 0.5, "ccd", other
    reopen()
    s = local("Arm").pose.bones["hand"].reach_ik
    kept = (round(s.influence, 6), s.solver, s.target.name if s.target else None)
    assert kept == (0.5, "ccd", "Other"), f"after reopening: {kept}"
    s.influence = 1.0
    bpy.context.scene.frame_set(3)
    assert error(local("Arm")) <= 1e-4, f"{error(local('Arm')):.3g} m from the new target"


@check
def override_remove_stays_removed() -> None:
    arm, _ = override(link(make_library()))
    bpy.context.scene.frame_set(2)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    assert bpy.ops.reach_ik.remove(tip="hand") == {"FINISHED"}
    reopen()
    arm = local("Arm")
    assert not arm.pose.bones["hand"].reach_ik.has_chain, "the chain came back"
    bpy.context.scene.frame_set(4)
    rest = (np.array(arm.matrix_world) @ np.array([0.65, 0.05, 0.95, 1.0]))[:3]
    assert np.allclose(tail(arm, "hand"), rest, atol=1e-6), "not the FK (rest) pose"


@check
def two_overrides_reach_their_own_targets() -> None:
    linked = link(make_library())
    (a, ta), (b, tb) = override(linked), override(linked)
    ta.location, tb.location = (0.4, 0.25, 0.9), (0.3, -0.3, 1.1)
    bpy.context.scene.frame_set(2)
    for arm in (a, b):
        assert error(arm) <= 1e-4, f"{arm.name}: {error(arm):.3g} m from its target"


@check
def linked_armature_is_refused() -> None:
    linked = link(make_library())
    bpy.context.scene.collection.children.link(linked)
    arm = next(o for o in linked.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = arm
    assert not bpy.ops.reach_ik.remove.poll(), "Remove accepts linked data"
    message = ""
    try:
        bpy.ops.reach_ik.remove(tip="hand")
    except RuntimeError as exc:
        message = str(exc)
    assert "linked from a library" in message, f"Remove ran on linked data: {message!r}"
    assert arm.pose.bones["hand"].reach_ik.has_chain, "linked data changed in memory"


# ------------------------------------------------------------------------------ main
def main() -> int:
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    parser = argparse.ArgumentParser(prog="check_blender_rigify.py")
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
