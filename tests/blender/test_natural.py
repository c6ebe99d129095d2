# SPDX-License-Identifier: GPL-3.0-or-later
"""The add-on's default solver per chain length (docs/natural.md), and FABRIK live.

Oracles: the chain's settings as the operator leaves them, and Blender's own evaluation of
the shown pose (the effector's world position against the target's).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from rigs import (
    add_empty,
    blender_module,
    build_arm,
    chain_length,
    new_armature,
    select_only,
    tail_world,
    world_matrix,
)


def test_add_chooses_triangulation_for_two_bones_and_fabrik_for_three(
    clean_scene: Any, addon: Any
) -> None:
    bpy = blender_module()
    obj = build_arm()
    select_only(obj, ["fore"], "fore")
    assert bpy.ops.reach_ik.add(chain_length=2, new_target=True) == {"FINISHED"}
    assert obj.pose.bones["fore"].reach_ik.solver == "triangulation"
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.add(chain_length=3, new_target=True) == {"FINISHED"}
    assert obj.pose.bones["hand"].reach_ik.solver == "fabrik"


def test_a_three_bone_fabrik_chain_reaches_live(clean_scene: Any, addon: Any) -> None:
    """The default 3-bone chain (FABRIK) reaches a target moved within its reach, as
    Blender evaluates the frame."""
    bpy = blender_module()
    obj = build_arm()
    target = add_empty("Goal", (0.0, 0.0, 0.0))
    names = ("upper", "fore", "hand")
    reach = chain_length(obj, names)
    root = np.array(obj.matrix_world @ obj.data.bones["upper"].head_local)
    select_only(obj, ["hand"], "hand")
    target.select_set(True)
    assert bpy.ops.reach_ik.add(chain_length=3) == {"FINISHED"}
    assert obj.pose.bones["hand"].reach_ik.solver == "fabrik"
    scene = bpy.context.scene
    rng = np.random.default_rng(4)
    for f in range(1, 6):
        d = rng.normal(size=3)
        target.location = root + d / np.linalg.norm(d) * reach * rng.uniform(0.3, 0.9)
        target.keyframe_insert("location", frame=f)
    for f in range(1, 6):
        scene.frame_set(f)
        goal = np.array(target.matrix_world.translation)
        err = float(np.linalg.norm(tail_world(obj, "hand") - goal))
        assert err <= 1e-4 * reach, f"frame {f}: {err:.2e} m"


def _build_tail(links: int, length: float) -> Any:
    """A straight tail of ``links`` connected bones of ``length`` each along +Y from the
    origin (rolls 0: every bone bends about its X axis); pose mode, the tip active."""
    bpy = blender_module()
    obj = new_armature("Tail")
    arm = obj.data
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for i in range(links):
        eb = arm.edit_bones.new(f"t{i}")
        eb.head, eb.tail = (0.0, i * length, 0.0), (0.0, (i + 1) * length, 0.0)
        eb.parent, eb.use_connect = parent, parent is not None
        parent = eb
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def _bends(obj: Any, names: list[str]) -> np.ndarray:
    """Angles (radians) between neighbouring bones' Y axes in the shown pose."""
    axes = [world_matrix(obj, n)[:3, 1] for n in names]
    axes = [a / np.linalg.norm(a) for a in axes]
    cos = [float(np.dot(a, b)) for a, b in itertools.pairwise(axes)]
    return np.arccos(np.clip(cos, -1.0, 1.0))


def test_tails_curl_evenly_with_every_method_that_reads_the_spread(
    clean_scene: Any, addon: Any
) -> None:
    """A straight 5-bone tail reaching for points from 0.25 to 0.95 of its length, solved
    live by triangulation, CCD and Jacobian DLS with the default *Bend Spread* (Even): as
    Blender shows it, every joint bends by the same angle β, the regular arc whose chord
    is the target's distance, ``|t| = L sin(5β/2) / sin(β/2)`` (closed form), and the
    effector is on the target. With *Root First* (the paper) the tail folds at its root."""
    bpy = blender_module()
    links, length = 5, 0.2
    obj = _build_tail(links, length)
    names = [f"t{i}" for i in range(links)]
    target = add_empty("Goal", (0.0, 0.0, 0.0))
    select_only(obj, [names[-1]], names[-1])
    target.select_set(True)
    assert bpy.ops.reach_ik.add(chain_length=links) == {"FINISHED"}
    s = obj.pose.bones[names[-1]].reach_ik
    assert s.distribution == "even"
    scene = bpy.context.scene
    reach = links * length
    for solver in ("triangulation", "ccd", "jacobian_dls"):
        s.solver = solver
        for rho in (0.25, 0.5, 0.75, 0.95):
            target.location = (0.0, rho * reach * 0.8, rho * reach * 0.6)
            scene.frame_set(1)
            err = float(np.linalg.norm(tail_world(obj, names[-1]) - np.array(target.location)))
            assert err <= 1e-4 * reach, f"{solver} at {rho}: {err:.2e} m"
            bends = _bends(obj, names)
            beta = float(np.mean(bends))
            assert np.ptp(bends) <= 1e-3, f"{solver} at {rho}: bends {np.degrees(bends)}"
            chord = length * math.sin(links * beta / 2.0) / math.sin(beta / 2.0)
            assert abs(chord - rho * reach) <= 1e-4 * reach, f"{solver} at {rho}"
    s.solver, s.distribution = "triangulation", "root"
    target.location = (0.0, 0.2, 0.15)
    scene.frame_set(1)
    bends = _bends(obj, names)
    assert np.ptp(bends) > 0.5, np.degrees(bends)  # the paper's pass folds at the root
