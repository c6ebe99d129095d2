# SPDX-License-Identifier: GPL-3.0-or-later
"""Library overrides and linked data.

A library file holds an arm with a Reach IK chain reaching for an empty, in a collection.
Another file links that collection and makes library overrides of it. Checked with
Blender's own evaluation and by saving and opening the file again:

* chain settings edited on an override (influence, solver, target) are kept;
* *Remove Reach IK* on an override gives the FK pose and stays removed after reopening;
* two overrides of one rig each reach their own target (each gets helpers of its own);
* a linked armature that is not overridden is refused by the operators, and nothing in
  memory changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rigs import ARM_BONES, add_empty, blender_module, build_arm, select_only, tail_world

CHAIN = ARM_BONES[1:]


@pytest.fixture
def library(clean_scene: Any, addon: Any, tmp_path: Path) -> Path:
    """lib.blend: collection ``RigColl`` with ``Arm`` (a 3-bone chain on ``hand`` reaching
    for the empty ``Target``) and ``Target``; the current file is then emptied."""
    bpy = blender_module()
    coll = bpy.data.collections.new("RigColl")
    bpy.context.scene.collection.children.link(coll)
    obj = build_arm()
    target = add_empty("Target", (0.5, 0.3, 1.2))
    for ob in (obj, target):
        bpy.context.scene.collection.objects.unlink(ob)
        coll.objects.link(ob)
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.add(chain_length=3) == {"FINISHED"}
    obj.pose.bones["hand"].reach_ik.target = target
    bpy.context.scene.frame_set(1)
    bpy.ops.object.mode_set(mode="OBJECT")
    path = tmp_path / "lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    return path


def _link(path: Path) -> Any:
    bpy = blender_module()
    with bpy.data.libraries.load(str(path), link=True) as (_src, dst):
        dst.collections = ["RigColl"]
    return dst.collections[0]


def _override(linked: Any) -> tuple[Any, Any]:
    """An editable override of the linked collection: (its armature, its target)."""
    bpy = blender_module()
    coll = linked.override_hierarchy_create(
        bpy.context.scene, bpy.context.view_layer, do_fully_editable=True
    )
    arm = next(o for o in coll.objects if o.type == "ARMATURE")
    target = next(o for o in coll.objects if o.name.startswith("Target"))
    return arm, target


def _reachable(arm: Any, turn: float) -> tuple[float, float, float]:
    """A point the arm reaches: 70% of the way from the upper arm's head to the hand's rest
    tail, turned by ``turn`` (radians) about world Z around the upper arm's head."""
    blender_module().context.view_layer.update()  # a new override's matrix_world
    m = np.array(arm.matrix_world)
    bones = arm.data.bones
    root = (m @ np.array([*bones["upper"].head_local, 1.0]))[:3]
    end = (m @ np.array([*bones["hand"].tail_local, 1.0]))[:3]
    d = 0.7 * (end - root)
    c, s = np.cos(turn), np.sin(turn)
    d = np.array([c * d[0] - s * d[1], s * d[0] + c * d[1], d[2]])
    x, y, z = root + d
    return (float(x), float(y), float(z))


def _error(arm: Any) -> float:
    s = arm.pose.bones["hand"].reach_ik
    goal = np.array(s.target.matrix_world.translation)
    return float(np.linalg.norm(tail_world(arm, "hand") - goal))


def _activate(arm: Any) -> None:
    bpy = blender_module()
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    select_only(arm, ["hand"], "hand")


def _reopen(tmp_path: Path) -> None:
    bpy = blender_module()
    path = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))


def _local_armature(name: str) -> Any:
    bpy = blender_module()
    return next(o for o in bpy.data.objects if o.name == name and o.library is None)


def test_override_edits_are_kept(library: Path, tmp_path: Path) -> None:
    bpy = blender_module()
    arm, _target = _override(_link(library))
    other = add_empty("Other", _reachable(arm, 0.4))
    s = arm.pose.bones["hand"].reach_ik
    s.influence = 0.5
    s.solver = "ccd"
    s.target = other
    s.pole_angle = 0.25
    _reopen(tmp_path)
    arm = _local_armature("Arm")
    assert arm.override_library is not None
    s = arm.pose.bones["hand"].reach_ik
    assert s.influence == pytest.approx(0.5)
    assert s.solver == "ccd"
    assert s.target is not None
    assert s.target.name == "Other"
    assert s.pole_angle == pytest.approx(0.25)
    s.influence = 1.0
    bpy.context.scene.frame_set(3)
    assert _error(arm) <= 1e-4, "the overridden chain does not reach its new target"


def test_remove_on_override_stays_removed(library: Path, tmp_path: Path) -> None:
    bpy = blender_module()
    arm, target = _override(_link(library))
    target.location = _reachable(arm, -0.3)
    bpy.context.scene.frame_set(2)
    assert _error(arm) <= 1e-4
    _activate(arm)
    fk = np.array([np.array(arm.pose.bones[n].matrix_basis) for n in CHAIN])
    assert bpy.ops.reach_ik.remove() == {"FINISHED"}
    bpy.context.view_layer.update()
    rest = _pose(arm)
    _reopen(tmp_path)
    arm = _local_armature("Arm")
    assert not arm.pose.bones["hand"].reach_ik.has_chain, "the chain came back"
    bpy.context.scene.frame_set(4)
    basis = np.array([np.array(arm.pose.bones[n].matrix_basis) for n in CHAIN])
    assert np.array_equal(basis, fk), "the FK channels changed"
    np.testing.assert_allclose(_pose(arm), rest, atol=1e-6)
    assert _error_fk(arm) > 1e-2, "the removed chain still reaches"


def _pose(arm: Any) -> np.ndarray:
    return np.array([tail_world(arm, n) for n in CHAIN])


def _error_fk(arm: Any) -> float:
    bpy = blender_module()
    target = next(o for o in bpy.data.objects if o.name == "Target" and o.library is None)
    goal = np.array(target.matrix_world.translation)
    return float(np.linalg.norm(tail_world(arm, "hand") - goal))


def test_two_overrides_have_their_own_helpers(library: Path, tmp_path: Path) -> None:
    bpy = blender_module()
    linked = _link(library)
    first, t1 = _override(linked)
    second, t2 = _override(linked)
    assert first != second
    t1.location = _reachable(first, 0.5)
    t2.location = _reachable(second, -0.5)
    for f in (2, 3):
        bpy.context.scene.frame_set(f)
        for arm in (first, second):
            assert _error(arm) <= 1e-4, f"{arm.name} at frame {f}: {_error(arm):.3g} m"
    helpers = [
        arm.pose.bones[n].constraints["Reach IK"].target for arm in (first, second) for n in CHAIN
    ]
    assert len(set(helpers)) == 2 * len(CHAIN)
    assert all(h.library is None for h in helpers)
    _reopen(tmp_path)
    bpy.context.scene.frame_set(5)
    for name in ("Arm", "Arm.001"):
        assert _error(_local_armature(name)) <= 1e-4, f"{name} after reopening"


def test_linked_armature_is_refused(library: Path) -> None:
    bpy = blender_module()
    linked = _link(library)
    bpy.context.scene.collection.children.link(linked)
    arm = next(o for o in linked.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = arm
    before = {p: getattr(arm.pose.bones["hand"].reach_ik, p) for p in ("has_chain", "influence")}
    for op, kwargs in (
        (bpy.ops.reach_ik.remove, {"tip": "hand"}),
        (bpy.ops.reach_ik.convert_constraints, {"direction": "TO_BLENDER"}),
        (bpy.ops.reach_ik.apply_to_fk, {"all_chains": True}),
        (bpy.ops.reach_ik.bake, {}),
    ):
        assert not op.poll()
        with pytest.raises(RuntimeError, match="linked from a library"):
            op(**kwargs)
    after = {p: getattr(arm.pose.bones["hand"].reach_ik, p) for p in ("has_chain", "influence")}
    assert after == before
    assert [c.name for c in arm.pose.bones["hand"].constraints] == ["Reach IK"]
