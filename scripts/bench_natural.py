# SPDX-License-Identifier: GPL-3.0-or-later
"""Natural poses on real joints: every Reach IK method beside Blender's own IK.

Run with the ``bpy`` module (``make bench``)::

    .venv/bin/python scripts/bench_natural.py [--zip dist/reach_ik-<version>.zip] [--out out/bench]

It installs the extension zip (built with ``make extension`` when not given) the way a
user's *Install from Disk* does, and builds eighteen rigs, each in a scene with three copies of
the armature: one with Blender's IK constraint (Standard solver, the chain's length, no
pole), one with a Reach IK chain (the *Add Reach IK* operator), one without IK. The target
follows the same smooth path for each (240 frames, keyed on every frame):

* ``knee``: a 2-bone leg, the shin a hinge (Lock IK Y+Z) limited one-sided to 0°…140°,
  rest slightly bent, the foot on a walk cycle;
* ``hinge_arm``: a Rigify-style arm (Lock IK Y+Z on the forearm, no range; bone rolls set
  so both bones' X axes are normal to the arm's plane, as Rigify's limbs have them), rest
  slightly bent in the forearm's hinge plane, the hand moving out to 115 % of the reach and
  back, twice; ``hinge_arm_roll0``: the same with roll 0 on both bones, which leans the
  forearm's hinge axis 1.3° on the upper arm's link (the arm cannot straighten exactly);
* ``hind_leg``: a 3-bone quadruped hind leg (thigh, shin, hock; rest zigzag), no pole, the
  foot sweeping through 45–97 % of the reach;
* ``tail``: 5 bones, straight at rest, the tip following a loop at 35–95 % of the reach;
* ``neck``: 7 bones, straight at rest, the head following a loop at 40–95 % of the reach;
* ``hind_leg_knee``: the hind leg with its knee limited one-sided to 0°…140° beyond its
  rest bend (it cannot straighten: about a fifth of the path is out of reach within the
  limits); ``hind_leg_hinges``: the hind leg with its knee and hock hinges (Lock IK Y+Z);
  ``tail_hinged``: the tail with its second and fourth joints hinges;
* with Blender's *Limit X*/*Limit Z* on ball joints (the twist free): ``shoulder_arm``, the
  arm with its shoulder limited like ``bench_solvers``' ball joints (X −60°…80°,
  Z −40°…40°) and its elbow one-sided to 0°…150°; ``hind_leg_hip``, the hinged hind leg
  with its hip limited so; ``tail_limited`` and ``neck_limited``, every joint limited to
  ±30° in X and Z (much of the path is out of reach within the limits);
  ``tail_hinged_limited``, the hinged tail with its other joints limited so;
* with *Rotation* on both IKs (the last bone turned to the target's orientation; Reach IK's
  orientation weight at its default 0.5), an arm with a hand (upper arm, forearm, hand;
  Rigify-style rolls): ``hand``, every joint free; ``hand_wrist``, the wrist limited in X
  to −60°…60° and in Z to −25°…30°; ``hand_arm``, also the shoulder limited as above and
  the elbow one-sided to 0°…150° — each with the target following the hand of the same
  armature animated by FK within those limits (its place and orientation: goals a pose
  meets on every frame); ``hand_turned``, the limited wrist, the hand on a loop at 50–90 %
  of the reach and its rest orientation turned by a smooth wobble (up to 34°, 23° and 29°
  about X, Y and Z).

Blender's IK is read back from Blender's own evaluation (``scene.frame_set``, evaluated
pose matrices), frame by frame. Every Reach IK method is solved through the add-on's own
solve path for all 240 frames at once (``solve_frames.solve_chain_frames``, the path a bake
takes and the live preview matches, from the target as Blender evaluates it on each frame —
single precision, as a bake reads it; the live pose Blender shows is read back on every
frame per method and the largest difference reported as ``live_vs_batch_max_deg``).

Per rig and solver: **reach** (share of frames whose target is within the straight
chain's reach that the effector meets to 1e-3 × reach, with *Rotation* the last bone also
within 0.1° of the goal orientation; the largest angle from it is **turned off**), the
**largest joint change** in
one frame (any bone's local rotation, degrees), **pops** (frames where some joint turns
more than 20°), **inversions** (frames where a joint bent at rest bends the other way, or
the chain's bend faces away from the rest bend), the **sharpest bend** (largest angle
between neighbouring bones, degrees) and the **cost** per frame: for Blender's IK the
median ``frame_set`` time with the constraint less the same without it (muted), frames
interleaved; for Reach IK the median time of the solve path on one frame, as live solving
calls it (``solve_frames.solve_chain_frames`` with floats), on 24 frames. Angles are
compared with Blender's to 0.05° (single precision). Writes ``natural.json``,
``natural.md`` and ``natural.png``.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: reach_ik_tools

from bench_solvers import BALL_X_DEG, BALL_Z_DEG

from reach_ik_tools.bench_report import arguments, publish
from reach_ik_tools.extension_install import default_zip

EXTENSION = "bl_ext.user_default.reach_ik"
FRAMES = 240
POP_DEG = 20.0
REACH_TOL = 1e-3
#: Angles compared with Blender's IK to this many degrees (Blender evaluates in single
#: precision: the same pose read back differs by a few hundredths of a degree).
ANGLE_SLACK = 0.05
#: With *Rotation*: a frame is reached where the last bone is also within this many degrees
#: of the goal orientation.
TURN_TOL_DEG = 0.1


def _bpy() -> Any:
    return importlib.import_module("bpy")


@dataclass(frozen=True)
class Swing:
    """A ball joint's IK limits: Blender's *Limit X* and *Limit Z* ranges (radians), the
    twist (Y) free."""

    x: tuple[float, float]
    z: tuple[float, float]


#: A shoulder or hip: ``bench_solvers``' ball joints (X in −60°…80°, Z in −40°…40°).
SHOULDER = Swing(
    (math.radians(BALL_X_DEG[0]), math.radians(BALL_X_DEG[1])),
    (math.radians(BALL_Z_DEG[0]), math.radians(BALL_Z_DEG[1])),
)
#: A wrist: X (flexion) in −60°…60°, Z (deviation) in −25°…30°.
WRIST = Swing((math.radians(-60.0), math.radians(60.0)), (math.radians(-25.0), math.radians(30.0)))
#: A tail's or neck's vertebra: X and Z in −30°…30°.
VERTEBRA = Swing(
    (math.radians(-30.0), math.radians(30.0)), (math.radians(-30.0), math.radians(30.0))
)


@dataclass(frozen=True)
class Rig:
    """A chain: bone heads and the last tail (armature space, metres), per bone its IK
    limits (``None`` free, ``True`` a hinge by Lock IK Y+Z, ``(lo, hi)`` a hinge with a
    one-sided X range on the side of the rest bend, a :class:`Swing` a ball joint with X/Z
    limits), the target path ``(FRAMES, 3)``."""

    name: str
    points: np.ndarray
    limits: tuple[tuple[float, float] | bool | Swing | None, ...]
    path: np.ndarray
    roll_up: bool = False
    #: The last bone's goal orientations ``(FRAMES, 4)`` (wxyz, armature space): *Rotation*
    #: on both IKs. Set by :func:`with_hand_path` for the rigs that ask for it (``hand``).
    turns: np.ndarray | None = None
    #: *Rotation* goals (:func:`with_hand_path`): ``"fk"``, the target follows the last
    #: bone of the rig's own FK animation, its orientation too (goals a pose within the
    #: limits meets on every frame); ``"turned"``, the target follows ``path`` and the last
    #: bone's rest orientation turned by a smooth wobble; ``""``, position goals.
    hand: str = ""

    @property
    def reach(self) -> float:
        return float(np.sum(np.linalg.norm(np.diff(self.points, axis=0), axis=1)))


def _loop(
    root: np.ndarray, axis: np.ndarray, reach: float, lo: float, hi: float, spread: float
) -> np.ndarray:
    """A smooth closed path about ``axis`` from ``root``: distance ``lo…hi`` × reach, the
    direction swinging up to ``spread`` radians off the axis in two directions."""
    t = np.linspace(0.0, 2.0 * math.pi, FRAMES, endpoint=False)
    u = np.cross(axis, [1.0, 0.0, 0.0])
    if np.linalg.norm(u) < 1e-6:
        u = np.cross(axis, [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    a = spread * np.sin(t)
    b = 0.6 * spread * np.sin(2.0 * t + 0.5)
    d = (
        np.cos(a)[:, None] * np.cos(b)[:, None] * axis
        + np.sin(a)[:, None] * u
        + np.cos(a)[:, None] * np.sin(b)[:, None] * v
    )
    rho = lo + (hi - lo) * 0.5 * (1.0 - np.cos(3.0 * t))
    return root + d * (rho * reach)[:, None]


def rigs() -> list[Rig]:
    t = np.linspace(0.0, 2.0 * math.pi, FRAMES, endpoint=False)
    knee_pts = np.array([[0.0, 0.0, 1.0], [0.0, -0.04, 0.5], [0.0, 0.0, 0.0]])
    walk = np.stack(
        [0.05 * np.sin(t), 0.32 * np.cos(t), 0.18 + 0.12 * np.maximum(np.sin(t), 0.0)], axis=1
    )
    arm_pts = np.array([[0.2, 0.0, 1.4], [0.48, 0.0, 1.37], [0.76, 0.0, 1.4]])
    arm_reach = float(np.sum(np.linalg.norm(np.diff(arm_pts, axis=0), axis=1)))
    rho = 0.6 + 0.55 * 0.5 * (1.0 - np.cos(2.0 * t))
    swing = 0.5 * np.sin(t)
    arm_dir = np.stack([np.cos(swing), -0.3 * np.sin(2.0 * t), np.sin(swing)], axis=1)
    arm_dir /= np.linalg.norm(arm_dir, axis=1)[:, None]
    arm_path = arm_pts[0] + arm_dir * (rho * arm_reach)[:, None]
    hind_pts = np.array([[0.0, 0.0, 1.0], [0.0, -0.15, 0.6], [0.0, 0.1, 0.25], [0.0, 0.02, 0.0]])
    hind_reach = float(np.sum(np.linalg.norm(np.diff(hind_pts, axis=0), axis=1)))
    hind_path = _loop(hind_pts[0], np.array([0.0, 0.0, -1.0]), hind_reach, 0.45, 0.97, 0.6)
    tail_pts = np.array([[0.0, 0.1 + 0.2 * k, 1.0] for k in range(6)])
    tail_path = _loop(tail_pts[0], np.array([0.0, 1.0, 0.0]), 1.0, 0.35, 0.95, 1.1)
    neck_pts = np.array([[0.0, 0.0, 1.5 + 0.08 * k] for k in range(8)])
    neck_path = _loop(neck_pts[0], np.array([0.0, 0.0, 1.0]), 0.56, 0.4, 0.95, 1.2)
    hand_pts = np.vstack([arm_pts, [[0.86, 0.0, 1.39]]])  # the arm with a hand
    hand_reach = float(np.sum(np.linalg.norm(np.diff(hand_pts, axis=0), axis=1)))
    hand_path = _loop(hand_pts[0], np.array([1.0, 0.0, 0.0]), hand_reach, 0.5, 0.9, 0.7)
    none_path = np.zeros((FRAMES, 3))  # (with_hand_path sets it)
    return [
        Rig("knee", knee_pts, (None, (0.0, math.radians(140.0))), knee_pts[0] * 0 + walk),
        Rig("hinge_arm", arm_pts, (None, True), arm_path, roll_up=True),
        Rig("hinge_arm_roll0", arm_pts, (None, True), arm_path),
        Rig("hind_leg", hind_pts, (None, None, None), hind_path),
        Rig("tail", tail_pts, (None,) * 5, tail_path),
        Rig("neck", neck_pts, (None,) * 7, neck_path),
        Rig("hind_leg_knee", hind_pts, (None, (0.0, math.radians(140.0)), None), hind_path),
        Rig("hind_leg_hinges", hind_pts, (None, True, True), hind_path),
        Rig("tail_hinged", tail_pts, (None, True, None, True, None), tail_path),
        Rig("shoulder_arm", arm_pts, (SHOULDER, (0.0, math.radians(150.0))), arm_path, True),
        Rig("hind_leg_hip", hind_pts, (SHOULDER, True, True), hind_path),
        Rig("tail_limited", tail_pts, (VERTEBRA,) * 5, tail_path),
        Rig("neck_limited", neck_pts, (VERTEBRA,) * 7, neck_path),
        Rig("tail_hinged_limited", tail_pts, (VERTEBRA, True) * 2 + (VERTEBRA,), tail_path),
        Rig("hand", hand_pts, (None, None, None), none_path, True, hand="fk"),
        Rig("hand_wrist", hand_pts, (None, None, WRIST), none_path, True, hand="fk"),
        Rig(
            "hand_arm",
            hand_pts,
            (SHOULDER, (0.0, math.radians(150.0)), WRIST),
            none_path,
            True,
            hand="fk",
        ),
        Rig("hand_turned", hand_pts, (None, None, WRIST), hand_path, True, hand="turned"),
    ]


def build_armature(scene: Any, rig: Rig, name: str) -> Any:
    """An armature object of ``rig``'s connected bones ``b0…`` in ``scene``; hinges get
    Lock IK Y+Z, one-sided ranges an X limit on the side of the rest bend, ball joints
    their X and Z limits."""
    bpy = _bpy()
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    scene.collection.objects.link(obj)
    with bpy.context.temp_override(
        scene=scene, view_layer=scene.view_layers[0], active_object=obj, object=obj
    ):
        scene.view_layers[0].objects.active = obj
        bpy.ops.object.mode_set(mode="EDIT")
        prev = None
        for k in range(len(rig.points) - 1):
            eb = data.edit_bones.new(f"b{k}")
            eb.head = rig.points[k].tolist()
            eb.tail = rig.points[k + 1].tolist()
            eb.roll = 0.0
            if rig.roll_up:
                eb.align_roll((0.0, 0.0, 1.0))
            if prev is not None:
                eb.parent = prev
                eb.use_connect = True
            prev = eb
        bpy.ops.object.mode_set(mode="OBJECT")
    for k, hinge in enumerate(rig.limits):
        if hinge is None:
            continue
        pb = obj.pose.bones[f"b{k}"]
        if isinstance(hinge, Swing):
            pb.use_ik_limit_x = pb.use_ik_limit_z = True
            pb.ik_min_x, pb.ik_max_x = hinge.x
            pb.ik_min_z, pb.ik_max_z = hinge.z
            continue
        pb.lock_ik_y = pb.lock_ik_z = True
        if isinstance(hinge, tuple):
            sign = _rest_bend_sign(obj, k)
            lo, hi = hinge
            pb.use_ik_limit_x = True
            pb.ik_min_x, pb.ik_max_x = (lo, hi) if sign > 0 else (-hi, -lo)
    return obj


def _rest_bend_sign(obj: Any, k: int) -> float:
    """Sign of bone ``k``'s rest bend from its parent, about its own X axis."""
    bones = obj.data.bones
    m = np.array(bones[f"b{k}"].matrix_local)
    p = np.array(bones[f"b{k - 1}"].matrix_local)
    return float(np.sign(np.cross(p[:3, 1], m[:3, 1]) @ m[:3, 0]))


def add_target(scene: Any, name: str, path: np.ndarray, turns: np.ndarray | None = None) -> Any:
    """An empty keyed on every frame at ``path`` (and turned to ``turns``, wxyz)."""
    bpy = _bpy()
    empty = bpy.data.objects.new(name, None)
    scene.collection.objects.link(empty)
    empty.rotation_mode = "QUATERNION"
    empty.animation_data_create()
    action = bpy.data.actions.new(name)
    empty.animation_data.action = action
    for f, p in enumerate(path, start=1):
        empty.location = p.tolist()
        empty.keyframe_insert("location", frame=f)
        if turns is not None:
            empty.rotation_quaternion = turns[f - 1].tolist()
            empty.keyframe_insert("rotation_quaternion", frame=f)
    return empty


def _fk_turn(pb: Any, k: int, t: float) -> Any:
    """The local rotation of bone ``k`` at phase ``t`` of :func:`with_hand_path`'s FK
    animation: smooth, and within the bone's IK limits (six tenths of each range about its
    middle; a hinge about X alone)."""
    mathutils: Any = importlib.import_module("mathutils")

    def swing(lo: float, hi: float, phase: float) -> float:
        return 0.5 * (lo + hi) + 0.3 * (hi - lo) * math.sin(phase)

    x_axis, y_axis, z_axis = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
    if pb.lock_ik_y and pb.lock_ik_z:
        lo, hi = (pb.ik_min_x, pb.ik_max_x) if pb.use_ik_limit_x else (0.2, 1.2)
        return mathutils.Quaternion(x_axis, swing(lo, hi, t + k))
    if pb.use_ik_limit_x or pb.use_ik_limit_z:
        ax = swing(pb.ik_min_x, pb.ik_max_x, t + 1.3 * k)
        az = swing(pb.ik_min_z, pb.ik_max_z, 2.0 * t + 0.7 * k)
        twist = mathutils.Quaternion(y_axis, 0.4 * math.sin(t + 0.5 * k))
        return mathutils.Quaternion(x_axis, ax) @ mathutils.Quaternion(z_axis, az) @ twist
    return (
        mathutils.Quaternion(x_axis, 0.5 * math.sin(t + k))
        @ mathutils.Quaternion(y_axis, 0.4 * math.sin(t + 0.5 * k))
        @ mathutils.Quaternion(z_axis, 0.3 * math.sin(2.0 * t + k))
    )


def with_hand_path(scene: Any, rig: Rig) -> Rig:
    """``rig`` with its *Rotation* goals (:attr:`Rig.hand`): for ``"fk"`` the target path
    and goal orientations of its last bone as a copy of the armature animated by FK
    (:func:`_fk_turn`) shows it, frame by frame (an animator's FK pose given to an IK hand
    control); for ``"turned"`` the last bone's rest orientation turned by a smooth wobble
    (up to 34° about X, 23° about Y, 29° about Z) along ``rig.path``."""
    bpy = _bpy()
    mathutils: Any = importlib.import_module("mathutils")
    n = len(rig.points) - 1
    obj = build_armature(scene, rig, f"{rig.name}_fk")
    t = np.linspace(0.0, 2.0 * math.pi, FRAMES, endpoint=False)
    path, turns = np.empty((FRAMES, 3)), np.empty((FRAMES, 4))
    tip = obj.pose.bones[f"b{n - 1}"]
    length = obj.data.bones[f"b{n - 1}"].length
    rest = mathutils.Matrix(np.array(obj.data.bones[f"b{n - 1}"].matrix_local).tolist())
    for f in range(FRAMES):
        if rig.hand == "turned":  # the rest orientation turned by a wobble, in its own frame
            wobble = mathutils.Euler(
                (0.6 * math.sin(t[f]), 0.4 * math.sin(2.0 * t[f]), 0.5 * math.cos(t[f])), "XYZ"
            )
            turns[f] = np.array(rest.to_quaternion() @ wobble.to_quaternion())
            continue
        for k in range(n):
            pb = obj.pose.bones[f"b{k}"]
            pb.rotation_mode = "QUATERNION"
            pb.rotation_quaternion = _fk_turn(pb, k, float(t[f]))
        scene.view_layers[0].update()
        m = np.array(tip.matrix, dtype=np.float64)
        path[f] = (m @ np.array([0.0, length, 0.0, 1.0]))[:3]
        axes = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
        turns[f] = np.array(mathutils.Matrix(axes.tolist()).to_quaternion())
    bpy.data.objects.remove(obj)
    if rig.hand == "turned":
        path = rig.path
    return dataclasses.replace(rig, path=path, turns=turns)


def add_reach(scene: Any, obj: Any, target: Any, tip: str, n: int, solver: str) -> None:
    bpy = _bpy()
    with bpy.context.temp_override(
        scene=scene, view_layer=scene.view_layers[0], active_object=obj, object=obj
    ):
        scene.view_layers[0].objects.active = obj
        bpy.ops.object.mode_set(mode="POSE")
        for pb in obj.pose.bones:
            pb.select = pb.name == tip
        obj.data.bones.active = obj.data.bones[tip]
        for other in scene.objects:
            other.select_set(other == target)
        with bpy.context.temp_override(active_pose_bone=obj.pose.bones[tip]):
            bpy.ops.reach_ik.add(chain_length=n, solver=solver)
        bpy.ops.object.mode_set(mode="OBJECT")


def read_frame(scene: Any, obj: Any, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Evaluated local rotations ``(n, 4)``, bone matrices ``(n, 4, 4)`` and the effector."""
    ev = obj.evaluated_get(_bpy().context.evaluated_depsgraph_get())
    mats: list[np.ndarray] = []
    quats = []
    mathutils: Any = importlib.import_module("mathutils")
    for k in range(n):
        pb = ev.pose.bones[f"b{k}"]
        m = np.array(pb.matrix, dtype=np.float64)
        rest = np.array(pb.bone.matrix_local, dtype=np.float64)
        if pb.parent is not None:
            parent_rest = np.array(pb.parent.bone.matrix_local, dtype=np.float64)
            rest = mats[-1] @ np.linalg.inv(parent_rest) @ rest
        local = (np.linalg.inv(rest) @ m)[:3, :3]
        q = np.array(
            mathutils.Matrix((local / np.linalg.norm(local, axis=0)).tolist()).to_quaternion()
        )
        quats.append(q if q[0] >= 0 else -q)
        mats.append(m)
    length = obj.data.bones[f"b{n - 1}"].length
    eff = (mats[-1] @ np.array([0.0, length, 0.0, 1.0]))[:3]
    return np.array(quats), np.array(mats), eff


def _signed_bends(mats: np.ndarray) -> np.ndarray:
    """``(n − 1,)`` signed angles (degrees) between neighbouring bones about the child's X."""
    y = mats[:, :3, 1] / np.linalg.norm(mats[:, :3, 1], axis=1)[:, None]
    x = mats[:, :3, 0]
    cross = np.cross(y[:-1], y[1:])
    sin = np.einsum("ij,ij->i", cross, x[1:] / np.linalg.norm(x[1:], axis=1)[:, None])
    cos = np.einsum("ij,ij->i", y[:-1], y[1:])
    return np.degrees(np.arctan2(sin, cos))


def _bend_vector(points: np.ndarray) -> np.ndarray:
    axis = points[-1] - points[0]
    axis /= np.linalg.norm(axis)
    inner = points[1:-1] - points[0]
    mean = inner.mean(axis=0)
    return mean - (mean @ axis) * axis


def measure(
    rig: Rig, frames: list[tuple[np.ndarray, np.ndarray, np.ndarray]], rest: Any
) -> dict[str, Any]:
    """The figures of one rig and solver from its frames."""
    _, rest_mats, _ = rest
    rest_bends = _signed_bends(rest_mats)
    rest_bend_vec = _bend_vector(np.vstack([rest_mats[:, :3, 3], rest[2]]))
    bent = np.abs(rest_bends) > 1.0
    root = rig.points[0]
    reachable = np.linalg.norm(rig.path - root, axis=1) <= rig.reach
    reached = 0
    changes = []
    inversions = 0
    sharpest = 0.0
    prev = None
    to_matrix = importlib.import_module(EXTENSION + ".core").rotations.to_matrix
    goals = None if rig.turns is None else to_matrix(rig.turns)
    turned = 0.0
    for f, (quats, mats, eff) in enumerate(frames):
        off = 0.0  # the last bone's orientation from the goal's, degrees
        if goals is not None:
            axes = mats[-1][:3, :3] / np.linalg.norm(mats[-1][:3, :3], axis=0)
            cos = 0.5 * (float(np.trace(goals[f].T @ axes)) - 1.0)
            off = math.degrees(math.acos(min(1.0, max(-1.0, cos))))
            turned = max(turned, off)
        if (
            reachable[f]
            and np.linalg.norm(eff - rig.path[f]) <= REACH_TOL * rig.reach
            and off <= TURN_TOL_DEG
        ):
            reached += 1
        bends = _signed_bends(mats)
        sharpest = max(sharpest, float(np.max(np.abs(bends))))
        if bent.any():
            flipped = bent & (np.sign(bends) != np.sign(rest_bends)) & (np.abs(bends) > 1.0)
            vec = _bend_vector(np.vstack([mats[:, :3, 3], eff]))
            away = np.linalg.norm(vec) > 0.01 * rig.reach and float(vec @ rest_bend_vec) < 0.0
            inversions += int(bool(flipped.any()) or away)
        if prev is not None:
            dots = np.clip(np.abs(np.einsum("ij,ij->i", quats, prev)), 0.0, 1.0)
            changes.append(float(np.max(np.degrees(2.0 * np.arccos(dots)))))
        prev = quats
    ch = np.array(changes)
    return {
        "reach": reached / max(1, int(reachable.sum())),
        "reachable_frames": int(reachable.sum()),
        "max_change_deg": float(ch.max()),
        "median_change_deg": float(np.median(ch)),
        "pops": int(np.count_nonzero(ch > POP_DEG)),
        "inversions": inversions,
        "sharpest_bend_deg": sharpest,
        "turned_max_deg": None if goals is None else turned,
    }


def _core_frames(
    rig_model: Any, rotations: np.ndarray, bases: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Frames as :func:`read_frame` gives them, from solved basis rotations ``(F, n, 4)``:
    the bones' armature-space matrices by forward kinematics of the chain model."""
    core = importlib.import_module(EXTENSION + ".core")
    pos, orient = core.forward_kinematics(rig_model.chain, rotations)
    mats = np.tile(np.eye(4), (*orient.shape[:2], 1, 1))
    mats[..., :3, :3] = core.rotations.to_matrix(orient)
    mats[..., :3, 3] = pos[:, :-1]
    mats = bases[:, None] @ mats
    eff = np.einsum("fij,fj->fi", bases[:, :3, :3], pos[:, -1]) + bases[:, :3, 3]
    return [(rotations[f], mats[f], eff[f]) for f in range(len(rotations))]


def run(methods: list[str], timed_frames: int) -> dict[str, Any]:
    """Per rig: Blender's IK and the no-IK baseline evaluated by Blender frame by frame
    (interleaved, timed), every Reach IK method through the add-on's solve path for all
    frames at once (``solve_frames.solve_chain_frames``: the path of baking and of live
    solving), the same on one frame as live solving calls it, timed on ``timed_frames``
    frames, and the live pose read back from Blender on a few frames as a
    check that both paths show the same pose."""
    bpy = _bpy()
    affine = importlib.import_module(EXTENSION + ".ik_addon.affine")
    chain_spec = importlib.import_module(EXTENSION + ".ik_addon.chain_spec")
    solve_frames = importlib.import_module(EXTENSION + ".ik_addon.solve_frames")
    rig_module = importlib.import_module(EXTENSION + ".ik_addon.rig")
    results: dict[str, Any] = {}
    clock = time.perf_counter
    for rig in rigs():
        n = len(rig.points) - 1
        tip = f"b{n - 1}"
        bpy.ops.wm.read_homefile(use_empty=True)
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, FRAMES
        if rig.hand:
            rig = with_hand_path(scene, rig)
        objs = {}
        for kind in ("none", "blender_ik", "reach_ik"):
            obj = build_armature(scene, rig, f"{rig.name}_{kind}")
            target = add_target(scene, f"{rig.name}_{kind}_target", rig.path, rig.turns)
            if kind == "reach_ik":
                reach_target = target
            if kind == "blender_ik":
                con = obj.pose.bones[tip].constraints.new("IK")
                con.target = target
                con.chain_count = n
                con.use_rotation = rig.turns is not None
            elif kind == "reach_ik":
                add_reach(scene, obj, target, tip, n, methods[0])
                obj.pose.bones[tip].reach_ik.use_rotation = rig.turns is not None
            objs[kind] = obj
        rest = read_frame(scene, objs["none"], n)
        # Blender's IK: the scene holds all three rigs; mute the others while timing one.
        frames: list[Any] = []
        # the target's world matrix on each frame, as Blender evaluates it (single
        # precision): the inputs live solving and a bake read
        seen = np.empty((FRAMES, 4, 4))
        times: dict[str, list[float]] = {"none": [], "blender_ik": []}
        con = objs["blender_ik"].pose.bones[tip].constraints[0]
        reach_settings = objs["reach_ik"].pose.bones[tip].reach_ik
        reach_settings.enabled = False
        for f in range(1, FRAMES + 1):
            for kind in ("blender_ik", "none") if f % 2 else ("none", "blender_ik"):
                con.mute = kind == "none"
                t0 = clock()
                scene.frame_set(f)
                times[kind].append(clock() - t0)
                if kind == "blender_ik":
                    frames.append(read_frame(scene, objs["blender_ik"], n))
            seen[f - 1] = np.array(reach_target.matrix_world)
        con.mute = False
        base_cost = statistics.median(times["none"])
        rows: dict[str, Any] = {}
        row = measure(rig, frames, rest)
        row["cost_ms"] = (statistics.median(times["blender_ik"]) - base_cost) * 1e3
        rows["blender_ik"] = row
        model = chain_spec.rig_chain(objs["reach_ik"], tip, n, True)
        spec = chain_spec.read_spec(objs["reach_ik"].pose.bones[tip])
        origin = [0.0, 0.0, 0.0]  # the armature sits at the world origin, unscaled
        eye = affine.rows_of(np.eye(4))
        base = affine.to_array(rig_module.base_rows(model, eye, None, origin), None)
        bases = np.repeat(base[None], FRAMES, axis=0)
        ones, zeros = np.ones(FRAMES), np.zeros(FRAMES)
        goals = None  # the goal orientations as the target's world matrices
        if rig.turns is not None:
            goals = seen
        weight = 0.5  # (the add-on's default orientation weight)
        batch = solve_frames.FrameInputs(
            affine.rows_of(np.repeat(np.eye(4)[None], FRAMES, axis=0)),
            None,
            origin,
            affine.vec_of(seen[:, :3, 3]),
            None,
            None if goals is None else affine.rows_of(goals),
            None,
            ones,
            zeros,
            weight * ones,
            frame_count=FRAMES,
        )
        check: dict[str, float] = {}
        for method in methods:
            fixed = chain_spec.spec_fixed(dataclasses.replace(spec, solver=method))
            sol = solve_frames.solve_chain_frames(model, fixed, batch)
            row = measure(rig, _core_frames(model, sol.rotations, bases), rest)
            samples = []
            for f in range(timed_frames):
                k = (f * FRAMES) // timed_frames
                t0 = clock()
                goal = None if goals is None else affine.rows_of(goals[k])
                one = solve_frames.FrameInputs(
                    eye, None, origin, seen[k, :3, 3].tolist(), None, goal, None, 1.0, 0.0, weight
                )
                solve_frames.solve_chain_frames(model, fixed, one)
                samples.append(clock() - t0)
            row["cost_ms"] = statistics.median(samples) * 1e3
            rows[method] = row
            # the live pose Blender shows on a few frames, against the batch path's
            reach_settings.solver = method
            reach_settings.enabled = True
            worst = 0.0
            for f in range(1, FRAMES + 1):
                scene.frame_set(f)
                shown = read_frame(scene, objs["reach_ik"], n)[0]
                dots = np.abs(np.einsum("ij,ij->i", shown, sol.rotations[f - 1]))
                worst = max(worst, float(np.max(np.degrees(2 * np.arccos(np.clip(dots, 0, 1))))))
            check[method] = worst
        results[rig.name] = {
            "bones": n,
            "reach_m": rig.reach,
            "rows": rows,
            "live_vs_batch_max_deg": check,
        }
    return results


def verdict(results: dict[str, Any]) -> dict[str, Any]:
    """Per rig and method: at or better than Blender's IK on every measured axis."""
    out = {}
    for name, rig in results.items():
        ref = rig["rows"]["blender_ik"]
        out[name] = {
            kind: bool(
                row["max_change_deg"] <= ref["max_change_deg"] + ANGLE_SLACK
                and row["pops"] <= ref["pops"]
                and row["inversions"] <= ref["inversions"]
                and row["sharpest_bend_deg"] <= ref["sharpest_bend_deg"] + ANGLE_SLACK
                and row["reach"] >= ref["reach"]
                and (
                    row["turned_max_deg"] is None
                    or row["turned_max_deg"] <= ref["turned_max_deg"] + ANGLE_SLACK
                )
            )
            for kind, row in rig["rows"].items()
            if kind != "blender_ik"
        }
    return out


def markdown(results: dict[str, Any], ok: dict[str, Any]) -> str:
    lines = [
        "| rig | solver | reach | max change (°/frame) | median change | pops > 20° | "
        "inversions | sharpest bend (°) | turned off (°, max) | cost (ms/frame) | "
        "live vs batch (°) | ≥ Blender IK |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for name, rig in results.items():
        for kind, row in rig["rows"].items():
            mark = "ref" if kind == "blender_ik" else ("yes" if ok[name][kind] else "**no**")
            live = rig["live_vs_batch_max_deg"].get(kind)
            off = row["turned_max_deg"]
            turned = "–" if off is None else f"{off:.2f}"
            lines.append(
                f"| {name} ({rig['bones']}) | {kind} | {100 * row['reach']:.1f} % | "
                f"{row['max_change_deg']:.1f} | {row['median_change_deg']:.2f} | {row['pops']} | "
                f"{row['inversions']} | {row['sharpest_bend_deg']:.1f} | "
                f"{turned} | "
                f"{row['cost_ms']:.3f} | "
                f"{'–' if live is None else f'{live:.3f}'} | {mark} |"
            )
    return "\n".join(lines) + "\n"


def figure(results: dict[str, Any]) -> Any:
    def draw(path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(results)
        fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 4))
        for ax, name in zip(axes, names, strict=True):
            rows = results[name]["rows"]
            kinds = list(rows)
            ax.barh(kinds, [rows[k]["max_change_deg"] for k in kinds], color="tab:blue")
            ax.axvline(rows["blender_ik"]["max_change_deg"], color="k", lw=1)
            ax.set_title(f"{name}: max change °/frame")
        fig.tight_layout()
        fig.savefig(path, dpi=80)
        plt.close(fig)

    return draw


def main() -> None:
    parser = arguments(__doc__, seed=0, quick="time the live path on 8 frames instead of 24")
    parser.add_argument("--zip", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="reach-ik-natural-"))
    bpy = _bpy()
    addon_utils = importlib.import_module("addon_utils")
    if not addon_utils.check(EXTENSION)[1]:
        bpy.ops.extensions.package_install_files(
            filepath=str(args.zip or default_zip()), repo="user_default", enable_on_install=True
        )
    chain_spec = importlib.import_module(EXTENSION + ".ik_addon.chain_spec")
    methods = list(chain_spec.available_methods())
    results = run(methods, 8 if args.quick else 24)
    ok = verdict(results)
    table = markdown(results, ok)
    report = {
        "frames": FRAMES,
        "pop_deg": POP_DEG,
        "reach_tolerance": REACH_TOL,
        "rigs": results,
        "at_or_better_than_blender_ik": ok,
    }
    publish(args.out, "natural", report, table, figure(results))


if __name__ == "__main__":
    main()
