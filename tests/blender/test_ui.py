# SPDX-License-Identifier: GPL-3.0-or-later
"""The UI layer in real Blender: the shown status follows the evaluated pose, diagnostics
mark every injected pop and flip (and nothing on a smooth path), the shortcuts and the
overlay's draw handler come and go with the extension, and the *Advanced* settings reach
the solver on both the live and the bake path."""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np
import pytest
from conftest import EXTENSION
from rigs import blender_module, head_world, select_only, tail_world

ARM = ("upper_arm.L", "forearm.L")


def _arm_chain(obj: Any, offset: tuple[float, float, float] = (0.2, -0.3, -0.15)) -> Any:
    """A 2-bone chain on the metarig's left arm reaching for a new empty (returns it)."""
    bpy = blender_module()
    select_only(obj, ["forearm.L"], "forearm.L")
    assert bpy.ops.reach_ik.add(new_target=True) == {"FINISHED"}
    target = obj.pose.bones["forearm.L"].reach_ik.target
    target.location = head_world(obj, "upper_arm.L") + np.array(offset)
    bpy.context.scene.frame_set(1)
    return target


def _update() -> Any:
    bpy = blender_module()
    bpy.context.view_layer.update()
    return bpy.context.evaluated_depsgraph_get()


def test_a_refusal_is_wrapped_to_the_panel_width(metarig: Any, addon: Any) -> None:
    """A chain refused as a feedback loop says why in its status; the panels wrap that
    message into lines a region of the sidebar's and the Bone properties' default widths
    shows whole (a Blender label cuts a longer one short), every word kept in order."""
    bpy = blender_module()
    panels = importlib.import_module(f"{EXTENSION}.ik_addon.panels")
    obj = metarig
    _arm_chain(obj)
    settings = obj.pose.bones["forearm.L"].reach_ik
    settings.target, settings.target_bone = obj, "forearm.L"
    bpy.context.scene.frame_set(1)
    [(text, icon, alert)] = panels.status_lines(bpy.context, obj, "forearm.L", True, 1.0)
    assert alert
    assert icon == "ERROR"
    assert "feedback loop" in text
    for width, scale in ((249, 1.0), (340, 1.0), (498, 2.0)):
        lines = panels.wrapped(text, width, scale)
        fits = (width - panels.ROW_MARGIN_PX * scale) / (panels.CHAR_PX * scale)
        assert len(lines) >= 4
        assert all(len(line) <= fits for line in lines)
        assert " ".join(lines).split() == text.split()
    assert panels.wrapped("Error < 1 µm", 249, 1.0) == ["Error < 1 µm"]


def test_status_follows_the_shown_pose(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    shown = importlib.import_module(f"{EXTENSION}.ik_addon.shown")
    panels = importlib.import_module(f"{EXTENSION}.ik_addon.panels")
    obj = metarig
    target = _arm_chain(obj)
    goal = np.array(target.matrix_world.translation)

    st = shown.shown_status(obj, "forearm.L", _update())
    assert st is not None
    assert st.warning == ""
    assert st.error < 1e-5
    assert st.error == pytest.approx(np.linalg.norm(tail_world(obj, "forearm.L") - goal), abs=1e-6)

    con = obj.pose.bones["forearm.L"].constraints["Reach IK"]
    con.mute = True
    bpy.context.scene.frame_set(1)
    st = shown.shown_status(obj, "forearm.L", _update())
    offset = float(np.linalg.norm(tail_world(obj, "forearm.L") - goal))
    assert offset > 0.01  # the muted forearm shows its FK pose, off the target
    assert st is not None
    assert st.error == pytest.approx(offset, abs=1e-6)
    assert "muted" in st.warning
    assert "forearm.L" in st.warning
    lines = panels.status_lines(bpy.context, obj, "forearm.L", True, 1.0)
    assert lines[0][2]
    assert "off" in lines[0][0]
    assert any("muted" in text for text, _icon, _alert in lines)
    con.mute = False

    later = obj.pose.bones["upper_arm.L"].constraints.new("COPY_ROTATION")
    later.target = target
    bpy.context.scene.frame_set(1)
    st = shown.shown_status(obj, "forearm.L", _update())
    assert st is not None
    assert "after Reach IK" in st.warning
    assert "upper_arm.L" in st.warning
    assert st.error == pytest.approx(np.linalg.norm(tail_world(obj, "forearm.L") - goal), abs=1e-6)
    obj.pose.bones["upper_arm.L"].constraints.remove(later)
    bpy.context.scene.frame_set(1)
    st = shown.shown_status(obj, "forearm.L", _update())
    assert st is not None
    assert st.warning == ""
    assert st.error < 1e-5


def _key_path(obj: Any, points: np.ndarray, start: int = 1) -> None:
    """Key ``obj.location`` at every frame (so no interpolation comes between)."""
    for i, p in enumerate(points):
        obj.location = p.tolist()
        obj.keyframe_insert("location", frame=start + i)


def _figure_eight(centre: np.ndarray, size: float, frames: int) -> np.ndarray:
    t = np.linspace(0.0, 2.0 * math.pi, frames)
    return centre + size * np.stack([np.sin(t), 0.3 * np.sin(t), np.sin(t) * np.cos(t)], axis=-1)


def _our_markers(scene: Any) -> list[tuple[str, int]]:
    return sorted((m.name, m.frame) for m in scene.timeline_markers if m.name != "keep")


def test_diagnostics_mark_injected_pops_and_flips_only(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    diagnostics = importlib.import_module(f"{EXTENSION}.ik_addon.diagnostics")
    obj = metarig
    scene = bpy.context.scene
    target = _arm_chain(obj)
    frames = 48
    centre = head_world(obj, "upper_arm.L") + np.array([0.15, -0.3, -0.2])
    path = _figure_eight(centre, 0.08, frames)
    _key_path(target, path)
    scene.timeline_markers.new("keep", frame=5)
    user = scene.timeline_markers.new("RIK pop forearm.L", frame=7)  # a user's, same name
    found, skipped = diagnostics.mark(scene, obj, 1, frames)
    assert skipped == {}
    events = found["forearm.L"]
    assert events["pop"] == []
    assert events["flip"] == []
    assert events["reach"] == []
    assert events["missed"] == []
    assert ("RIK pop forearm.L", 7) in _our_markers(scene)

    # A pole that jumps to the other side at frame 20 flips the bend; a target that jumps
    # across the figure at frame 35 pops the arm.
    pole = bpy.data.objects.new("pole", None)
    scene.collection.objects.link(pole)
    side = np.array([0.0, 0.0, 0.6])
    poles = np.array([centre + (side if f < 20 else -side) for f in range(1, frames + 1)])
    _key_path(pole, poles)
    jumped = path.copy()
    jumped[34:] = centre + np.array([0.0, 0.25, 0.25])
    target.animation_data_clear()
    _key_path(target, jumped)
    obj.pose.bones["forearm.L"].reach_ik.pole = pole
    found, skipped = diagnostics.mark(scene, obj, 1, frames)
    events = found["forearm.L"]
    assert events["flip"] == [20]
    assert events["pop"] == [20, 35]
    markers = _our_markers(scene)
    assert ("RIK flip forearm.L", 20) in markers
    assert ("RIK pop forearm.L", 20) in markers
    assert ("RIK pop forearm.L", 35) in markers
    assert ("RIK pop forearm.L", 7) in markers  # the user's marker is left alone
    assert any(m.name == "keep" for m in scene.timeline_markers)
    assert user.name == "RIK pop forearm.L"

    # Running again replaces its own markers, not adds to them.
    before = len(scene.timeline_markers)
    assert bpy.ops.reach_ik.diagnose(frame_start=1, frame_end=frames) == {"FINISHED"}
    assert len(scene.timeline_markers) == before
    assert scene.frame_current == 1


def test_diagnostics_mark_out_of_reach_and_limit_runs(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    diagnostics = importlib.import_module(f"{EXTENSION}.ik_addon.diagnostics")
    obj = metarig
    scene = bpy.context.scene
    target = _arm_chain(obj)
    start = head_world(obj, "upper_arm.L")
    near = start + np.array([0.15, -0.3, -0.2])
    far = start + np.array([2.0, -0.3, -0.2])
    _key_path(target, np.array([near] * 5 + [far] * 4 + [near] * 3))
    fore = obj.pose.bones["forearm.L"]
    fore.lock_ik_y = fore.lock_ik_z = True
    limit = math.radians(30.0)
    fore.use_ik_limit_x, fore.ik_min_x, fore.ik_max_x = True, -limit, limit
    _update()  # the edit reaches the cached chains
    found, _ = diagnostics.mark(scene, obj, 1, 12)
    events = found["forearm.L"]
    assert events["reach"] == [6]
    # The elbow, limited to 30°, bends to its limit to reach the near target.
    assert events["limit"]
    assert events["limit"][0] == 1
    bound = diagnostics.limit_bound(
        diagnostics.chain_spec.rig_chain(obj, "forearm.L", 2, True).chain.limits,
        diagnostics.scan(scene, obj, "forearm.L", [1]).rotations,
    )
    assert bound.tolist() == [True]


def test_shortcuts_and_draw_handler_come_and_go(clean_scene: Any, addon: Any) -> None:
    import addon_utils

    bpy = blender_module()
    overlay = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")

    def items() -> list[tuple[str, str, bool, bool, bool]]:
        km = bpy.context.window_manager.keyconfigs.addon.keymaps.get("Pose")
        if km is None:
            return []
        return sorted(
            (k.idname, k.type, k.shift, k.ctrl, k.alt)
            for k in km.keymap_items
            if k.idname.startswith("reach_ik.")
        )

    assert items() == [
        ("reach_ik.add", "I", True, False, False),
        ("reach_ik.remove", "I", False, True, True),
    ]
    handle = overlay._handle
    assert handle is not None
    addon_utils.disable(EXTENSION, default_set=True)
    try:
        assert items() == []
        with pytest.raises(ValueError, match=r"removed|invalid|NULL"):  # gone with unregister
            bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")
    finally:
        addon_utils.enable(EXTENSION, default_set=True)
    assert len(items()) == 2
    overlay = importlib.import_module(f"{EXTENSION}.ik_addon.overlay")
    assert overlay._handle is not None


def test_advanced_settings_reach_live_and_bake_paths(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    evaluate = importlib.import_module(f"{EXTENSION}.ik_addon.evaluate")
    chain_spec = importlib.import_module(f"{EXTENSION}.ik_addon.chain_spec")
    solve_frames = importlib.import_module(f"{EXTENSION}.ik_addon.solve_frames")
    core = importlib.import_module(f"{EXTENSION}.core")
    obj = metarig
    # Out of reach: three updates cannot settle there, so the step clamp shows in the pose
    # (within reach a limited chain the updates leave short takes triangulation within the
    # limits, which does not depend on the step).
    target = _arm_chain(obj, (1.5, -2.0, -1.0))
    s = obj.pose.bones["forearm.L"].reach_ik
    s.solver, s.iterations = "jacobian_dls", 3
    # A limited elbow that is not a hinge (twist locked, X limited, Z free): the Jacobian
    # methods' triangulation seed is projected onto its range and iterated from there (on
    # a free arm it reaches in 0 updates; beyond the reach of a limb ending in a hinge they
    # take triangulation's pose, which does not depend on the step).
    elbow = obj.pose.bones["forearm.L"]
    elbow.lock_ik_y = True
    elbow.use_ik_limit_x, elbow.ik_min_x, elbow.ik_max_x = True, 1.2, 2.5
    shown = {}
    for step in (10.0, 0.5):  # three updates of at most 0.5° cannot get there
        s.max_step = step
        s.sweep_steps = 5
        bpy.context.scene.frame_set(1)
        spec = chain_spec.read_spec(obj.pose.bones["forearm.L"])
        assert spec.advanced[:2] == ("rest", 180.0)
        assert spec.advanced[2:6] == pytest.approx((0.1, step, 0.0, 5))
        assert spec.advanced[6] == "even"
        report = evaluate.solve_chains(obj, _update())
        live = np.array(report.solved[0].rotations)
        rig = chain_spec.rig_chain(obj, "forearm.L", 2, True)
        point = np.array(target.matrix_world.translation)
        fixed = chain_spec.spec_fixed(spec)
        affine = importlib.import_module(f"{EXTENSION}.ik_addon.affine")
        inputs = solve_frames.FrameInputs(
            affine.rows_of(np.eye(4)),
            None,
            [0.0] * 3,
            point.tolist(),
            None,
            None,
            None,
            1.0,
            0.0,
            0.5,
        )
        one = np.array(solve_frames.solve_chain_frames(rig, fixed, inputs).rotations)
        batch = solve_frames.solve_chain_frames(
            rig,
            fixed,
            solve_frames.FrameInputs(
                affine.rows_of(np.eye(4)[None]),
                None,
                affine.vec_of(np.zeros((1, 3))),
                affine.vec_of(point[None]),
                None,
                None,
                None,
                np.ones(1),
                np.zeros(1),
                np.full(1, 0.5),
                frame_count=1,
            ),
        ).rotations[0]
        assert np.allclose(np.abs(np.sum(one * batch, axis=-1)), 1.0, atol=1e-8)
        shown[step] = live
        assert importlib.import_module(f"{EXTENSION}.ik_addon.chain_spec")._options(
            3, 0.0, 0.0, 1.0, spec.advanced
        ) == core.SolveOptions(
            max_iterations=3,
            max_step_deg=spec.advanced[3],
            sweep_steps=5,
            damping=spec.advanced[2],
            position_weight=1.0,
            distribution="even",
        )
    gap = np.abs(np.sum(shown[10.0] * shown[0.5], axis=-1))
    assert gap.min() < 1.0 - 1e-6  # the step clamp changes the live pose


def test_bake_option_marks_the_baked_range(metarig: Any, addon: Any) -> None:
    bpy = blender_module()
    obj = metarig
    scene = bpy.context.scene
    target = _arm_chain(obj)
    start = head_world(obj, "upper_arm.L")
    near = start + np.array([0.15, -0.3, -0.2])
    far = start + np.array([2.0, -0.3, -0.2])
    _key_path(target, np.array([near] * 4 + [far] * 3 + [near] * 3))
    result = bpy.ops.reach_ik.bake(frame_start=1, frame_end=10, diagnose=True)
    assert result == {"FINISHED"}
    assert not obj.pose.bones["forearm.L"].reach_ik.enabled  # the bake disabled it
    markers = sorted((m.name, m.frame) for m in scene.timeline_markers)
    # The target jumps out at frame 5 and back at 8: two pops, one out-of-reach run.
    assert markers == [
        ("RIK out of reach forearm.L", 5),
        ("RIK pop forearm.L", 5),
        ("RIK pop forearm.L", 8),
    ]


def test_rotation_on_a_hinged_last_bone_names_the_solvers_that_weigh_it(
    metarig: Any, addon: Any
) -> None:
    """Triangulation and FABRIK meet *Rotation* by the wrist (``core.wrist``), which a last
    bone that is a hinge cannot take: the panel then says the chain reaches for the position
    alone and which solvers weigh the rotation (wrapped to the panel's width)."""
    panels = importlib.import_module(f"{EXTENSION}.ik_addon.panels")
    obj = metarig
    _arm_chain(obj)
    pb = obj.pose.bones["forearm.L"]
    s = pb.reach_ik
    s.use_rotation = True
    for solver, locked, meets in (
        ("triangulation", False, True),
        ("triangulation", True, False),
        ("fabrik", True, False),
        ("ccd", True, True),
        ("jacobian_dls", True, True),
    ):
        s.solver = solver
        pb.lock_ik_y = pb.lock_ik_z = locked  # (a hinge about X, a Blender elbow)
        assert panels._wrist_meets_rotation(pb, s) == meets, (solver, locked)
    s.use_tail = False  # (the chain then ends at the upper arm, which swings both ways)
    s.solver = "triangulation"
    assert panels._wrist_meets_rotation(pb, s)
    lines = panels.wrapped(panels.ROTATION_NEEDS_WEIGHING, 249, 1.0)
    assert len(lines) >= 3
    assert " ".join(lines) == panels.ROTATION_NEEDS_WEIGHING


def test_status_says_how_far_the_shown_bone_is_turned_from_the_goal(
    metarig: Any, addon: Any
) -> None:
    """With *Rotation*, the status compares the shown last bone's orientation with the
    target's (Blender's evaluated matrices): a goal some pose meets shows no turn; the same
    goal on a chain whose last bone is a hinge (triangulation reaches for the position
    alone there) shows the reached position and how far the bone is turned from it."""
    from mathutils import Matrix

    bpy = blender_module()
    shown = importlib.import_module(f"{EXTENSION}.ik_addon.shown")
    panels = importlib.import_module(f"{EXTENSION}.ik_addon.panels")
    obj = metarig
    target = _arm_chain(obj)
    pb = obj.pose.bones["forearm.L"]
    s = pb.reach_ik
    s.enabled = False
    for name, angle in (("upper_arm.L", 0.5), ("forearm.L", 0.7)):
        bone = obj.pose.bones[name]
        bone.rotation_mode = "QUATERNION"
        bone.rotation_quaternion = (
            math.cos(angle / 2),
            math.sin(angle / 2) * 0.6,
            0.0,
            math.sin(angle / 2) * 0.8,
        )
    _update()
    goal = np.array(obj.matrix_world) @ np.array(pb.matrix)
    target.matrix_world = Matrix(goal.tolist())
    target.location = tail_world(obj, "forearm.L")
    for name in ("upper_arm.L", "forearm.L"):
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    s.use_rotation = True
    s.enabled = True
    bpy.context.scene.frame_set(1)
    st = shown.shown_status(obj, "forearm.L", _update())
    assert st is not None
    assert st.turned is not None
    assert st.turned <= 0.01
    [(text, icon, _alert)] = panels.status_lines(bpy.context, obj, "forearm.L", True, 1.0)
    assert icon == "CHECKMARK"
    assert "turned" not in text

    pb.lock_ik_y = pb.lock_ik_z = True  # (the forearm a hinge: the goal a pose cannot meet)
    st = shown.shown_status(obj, "forearm.L", _update())  # (an edit: solved again)
    assert st is not None
    assert st.error < 1e-5  # (the position, alone, is met)
    assert st.turned is not None
    assert st.turned > 1.0
    got = np.array(obj.matrix_world) @ np.array(pb.matrix)
    a, b = goal[:3, :3], got[:3, :3]
    a, b = a / np.linalg.norm(a, axis=0), b / np.linalg.norm(b, axis=0)
    expected = math.degrees(math.acos(np.clip((np.trace(a.T @ b) - 1.0) / 2.0, -1.0, 1.0)))
    assert st.turned == pytest.approx(expected, abs=1e-3)
    [(text, icon, _alert)] = panels.status_lines(bpy.context, obj, "forearm.L", True, 1.0)
    assert icon == "INFO"
    assert text.startswith("Error ")
    assert text.endswith(f", turned {st.turned:.1f}° off")
