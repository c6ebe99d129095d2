# SPDX-License-Identifier: GPL-3.0-or-later
"""Live solving in a real render: the pose Blender's own render pipeline draws at a frame is
the live-solved IK pose.

A bright emissive marker is bone-parented to the tip of a Reach IK chain (so it sits on the
hand's tail, the effector), the chain's target is animated, and one frame ``F`` is rendered
as an animation (``render.render(animation=True)``, Cycles on the CPU, 64×64 px, black
world) after the scene was left at another frame ``F0``. The marker's bright-pixel centroid
in the written PNG must lie within 1.5 px of where Blender's evaluated scene at ``F`` puts
it (``frame_set(F)``, projected by ``world_to_camera_view``), and many pixels away from
where the FK pose at ``F`` and the solved pose at ``F0`` would put it: the test fails if the
render showed the FK pose (no constraints) or the helpers' stale pose of ``F0`` (the
frame-change handler not run inside the render pipeline).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from rigs import blender_module, build_arm, chain_length, select_only, tail_world

CHAIN = ("upper", "fore", "hand")
SIZE = 64  #: square render, pixels
F0, F = 1, 20  #: the frame the scene is left at, and the frame rendered
#: FK rotations (axis, angle in degrees) of the chain bones giving the target's keyed
#: positions: reachable by construction, far from each other and from the rest pose.
POSES = {
    F0: {"upper": ((0.0, 0.0, 1.0), 70.0), "fore": ((1.0, 0.0, 0.0), 60.0)},
    F: {"upper": ((1.0, 0.0, 0.0), -80.0), "fore": ((0.0, 0.0, 1.0), -70.0)},
}


def _fk_tail(obj: Any, pose: dict[str, tuple[tuple[float, float, float], float]]) -> np.ndarray:
    """World position of the hand's tail for an FK pose of the chain (chain switched off)."""
    bpy = blender_module()

    settings = obj.pose.bones["hand"].reach_ik
    settings.enabled = False
    for name in CHAIN:
        pb = obj.pose.bones[name]
        pb.rotation_mode = "QUATERNION"
        axis, angle = pose.get(name, ((0.0, 0.0, 1.0), 0.0))
        a = math.radians(angle) / 2
        pb.rotation_quaternion = (math.cos(a), *(math.sin(a) * np.asarray(axis)))
    bpy.context.view_layer.update()
    tail = tail_world(obj, "hand")
    for name in CHAIN:
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    settings.enabled = True
    bpy.context.view_layer.update()
    return tail


def _marker(obj: Any, half: float) -> Any:
    """A cube (half size ``half``, world metres) of strong emission on the hand's tail."""
    bpy = blender_module()

    h = half / max(obj.matrix_world.to_scale())  # the bone parent's scale applies
    verts = [(x, y, z) for x in (-h, h) for y in (-h, h) for z in (-h, h)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new("marker")
    mesh.from_pydata(verts, [], faces)
    mat = bpy.data.materials.new("glow")
    if mat.node_tree is None:  # Blender 4.x; 5.x materials always have nodes
        mat.use_nodes = True
    nodes = mat.node_tree.nodes
    nodes.clear()
    emission = nodes.new("ShaderNodeEmission")
    emission.inputs["Strength"].default_value = 20.0
    out = nodes.new("ShaderNodeOutputMaterial")
    mat.node_tree.links.new(emission.outputs["Emission"], out.inputs["Surface"])
    mesh.materials.append(mat)
    marker = bpy.data.objects.new("marker", mesh)
    bpy.context.scene.collection.objects.link(marker)
    marker.parent = obj
    marker.parent_type = "BONE"
    marker.parent_bone = "hand"  # at the bone's tail: location (0, 0, 0), no parent inverse
    return marker


def _camera(scene: Any, center: np.ndarray, extent: float) -> Any:
    """An orthographic camera looking at ``center`` and seeing ``extent`` metres across."""
    bpy = blender_module()
    from mathutils import Vector

    cam = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    scene.collection.objects.link(cam)
    cam.data.type = "ORTHO"
    cam.data.ortho_scale = extent
    direction = Vector((0.3, -1.0, 0.4)).normalized()
    cam.location = Vector(center.tolist()) + 10.0 * direction
    cam.rotation_mode = "QUATERNION"
    cam.rotation_quaternion = (-direction).to_track_quat("-Z", "Y")
    scene.camera = cam
    bpy.context.view_layer.update()  # its matrix_world, for world_to_camera_view
    return cam


def _setup_render(scene: Any, out_dir: Path) -> None:
    """Cycles on the CPU, tiny and fast, black background, PNG frames into ``out_dir``."""
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 4
    scene.cycles.use_adaptive_sampling = False
    scene.cycles.use_denoising = False
    scene.render.resolution_x = scene.render.resolution_y = SIZE
    scene.render.resolution_percentage = 100
    scene.render.use_lock_interface = True  # as the docs ask of renders with live solving
    scene.world = None  # black background
    scene.view_settings.view_transform = "Standard"
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGB"
    scene.render.filepath = str(out_dir / "frame_")


def _pixel(scene: Any, cam: Any, world: np.ndarray) -> np.ndarray:
    """Image position ``(x, y)`` in pixels (origin at the bottom-left corner) of a point."""
    from bpy_extras.object_utils import world_to_camera_view
    from mathutils import Vector

    ndc = world_to_camera_view(scene, cam, Vector(world.tolist()))
    return np.array([ndc.x * SIZE, ndc.y * SIZE])


def _bright_centroid(path: Path) -> tuple[np.ndarray, int]:
    """Intensity-weighted centroid ``(x, y)`` in pixels (bottom-left origin, like
    :func:`_pixel`) of the bright pixels of a rendered image, and how many there are."""
    bpy = blender_module()

    image = bpy.data.images.load(str(path))
    try:
        w, h = image.size
        rgba = np.empty(w * h * 4, dtype=np.float32)
        image.pixels.foreach_get(rgba)
    finally:
        bpy.data.images.remove(image)
    value = rgba.reshape(h, w, 4)[:, :, :3].mean(axis=2)  # row 0 is the bottom row
    bright = value > 0.2
    assert bright.any(), f"nothing bright in the render {path.name}: the marker is not shown"
    rows, cols = np.nonzero(bright)
    xy = np.stack([cols, rows], axis=1) + 0.5  # pixel centres
    return np.average(xy, axis=0, weights=value[rows, cols]), int(bright.sum())


def test_render_shows_live_solved_pose(clean_scene: Any, addon: Any, tmp_path: Path) -> None:
    bpy = blender_module()
    scene = clean_scene

    obj = build_arm()
    select_only(obj, ["hand"], "hand")
    assert bpy.ops.reach_ik.add(chain_length=3, new_target=True) == {"FINISHED"}
    target = obj.pose.bones["hand"].reach_ik.target
    goals = {f: _fk_tail(obj, pose) for f, pose in POSES.items()}
    for f, goal in goals.items():
        target.location = goal
        target.keyframe_insert("location", frame=f)
    marker = _marker(obj, half=0.04)
    bpy.ops.object.mode_set(mode="OBJECT")

    # Where each pose puts the marker, as Blender evaluates the scene.
    def marker_at(frame: int) -> np.ndarray:
        scene.frame_set(frame)
        ev = marker.evaluated_get(bpy.context.evaluated_depsgraph_get())
        return np.array(ev.matrix_world.translation)

    obj.pose.bones["hand"].reach_ik.enabled = False
    fk = marker_at(F)
    obj.pose.bones["hand"].reach_ik.enabled = True
    stale = marker_at(F0)
    solved = marker_at(F)
    length = chain_length(obj, CHAIN)
    for frame, at in ((F0, stale), (F, solved)):
        err = np.linalg.norm(at - goals[frame])
        assert err <= 1e-4 * length, f"frame {frame}: marker {err:.2e} m from the IK target"

    points = np.array([fk, stale, solved])
    center = points.mean(axis=0)
    cam = _camera(scene, center, extent=2.0 * float(np.max(np.ptp(points, axis=0))) + 0.5)
    _setup_render(scene, tmp_path)
    want = _pixel(scene, cam, solved)
    others = {"FK pose": _pixel(scene, cam, fk), f"pose of frame {F0}": _pixel(scene, cam, stale)}
    for name, px in others.items():  # the oracle can tell the poses apart
        assert np.linalg.norm(px - want) >= 10.0, f"{name} too close to the solved pose"
    assert all(0.1 * SIZE < c < 0.9 * SIZE for px in [want, *others.values()] for c in px)

    # The user's render: the scene is at another frame, the frame is rendered as animation.
    scene.frame_set(F0)
    scene.frame_start = scene.frame_end = F
    assert bpy.ops.render.render(animation=True) == {"FINISHED"}
    frames = sorted(tmp_path.glob("frame_*.png"))
    assert [p.name for p in frames] == [f"frame_{F:04d}.png"]

    got, count = _bright_centroid(frames[0])
    assert count >= 2, f"marker covers {count} pixel(s)"
    for name, px in others.items():
        far = np.linalg.norm(got - px)
        assert far >= 8.0, f"the render shows the {name}: marker {far:.1f} px from it"
    off = np.linalg.norm(got - want)
    assert off <= 1.5, (
        f"rendered marker at {got.round(2)} px, the solved pose puts it at {want.round(2)} px "
        f"({off:.2f} px off; FK pose {others['FK pose'].round(2)}, "
        f"frame {F0}: {others[f'pose of frame {F0}'].round(2)})"
    )
