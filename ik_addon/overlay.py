# SPDX-License-Identifier: GPL-3.0-or-later
"""The 3D View overlay: what each chain drives, where it reaches, and how it bends.

A ``SpaceView3D`` draw handler (``'WINDOW'``, ``'POST_VIEW'``) draws, for every solved chain
of the scene's visible armatures, in world space and on top of the scene:

* the chain: a thick line through its joints as Blender shows them (evaluated pose), in
  an IK yellow;
* a dashed line from the effector to the target, as Blender draws an IK constraint's;
* a line from the elbow/knee (the chain's middle joint) to the pole, when it has one;
* the bend plane: a translucent fan of triangles root → joint → next joint;
* a red cross on the effector when the target is out of reach or missed while within reach
  (joint limits: "unreachable within limits"; see :mod:`.shown`).

The scene's ``reach_ik_overlay`` setting (sidebar header) switches it; nothing is drawn when
the view's overlays are off or while a render runs. :func:`unregister_overlay` removes the
handler and the handlers below.

**Cost.** Geometry is read only after a change: this module's own ``frame_change_post`` and
``depsgraph_update_post`` handlers mark the drawing out of date, and the next redraw reads
the evaluated joints of each chain the live solve reported (:data:`.handlers.status`) and
builds three batches (all chains together, colour per vertex). Other redraws (orbiting,
panning, UI) only bind shaders and draw the cached batches (``scripts/bench_overlay.py``).
"""

from __future__ import annotations

import itertools
from typing import Any

import bpy
import gpu
from bpy.app.handlers import persistent
from gpu_extras.batch import batch_for_shader
from mathutils import Vector

from . import handlers
from .shown import shown_status

#: Colours (RGBA).
CHAIN_COLOUR = (1.0, 0.78, 0.1, 0.9)
TARGET_COLOUR = (1.0, 0.92, 0.55, 0.85)
POLE_COLOUR = (0.45, 0.75, 1.0, 0.85)
PLANE_COLOUR = (1.0, 0.78, 0.1, 0.14)
MISS_COLOUR = (1.0, 0.12, 0.08, 1.0)
#: Line widths (pixels) and the miss mark's half size (fraction of the chain's length).
CHAIN_WIDTH, LINE_WIDTH, MARK_SIZE = 4.0, 1.5, 0.06
#: Dashes per effector → target line (as long as the gaps).
DASHES = 10

_handle: Any = None
_dirty = True
#: The scene the cached draw steps were built for, and the steps (see :func:`_build`).
_built_for = 0
_batches: list[tuple[Any, Any, float]] = []
_shaders: dict[str, Any] = {}


class Geometry:
    """The overlay's vertices, world space, with a colour per vertex."""

    def __init__(self) -> None:
        self.thick: tuple[list[Any], list[Any]] = ([], [])  # line pairs
        self.thin: tuple[list[Any], list[Any]] = ([], [])
        self.tris: tuple[list[Any], list[Any]] = ([], [])

    @staticmethod
    def _add(into: tuple[list[Any], list[Any]], points: list[Any], colour: Any) -> None:
        into[0].extend(points)
        into[1].extend([colour] * len(points))

    def chain(self, joints: list[Any], target: Any, pole: Any, miss: bool) -> None:
        """One chain: joints root→effector, target, pole (or ``None``), all world vectors."""
        for a, b in itertools.pairwise(joints):
            self._add(self.thick, [a, b], CHAIN_COLOUR)
        effector = joints[-1]
        gap = target - effector
        for k in range(DASHES):
            a = effector + gap * ((2 * k) / (2 * DASHES - 1))
            b = effector + gap * ((2 * k + 1) / (2 * DASHES - 1))
            self._add(self.thin, [a, b], MISS_COLOUR if miss else TARGET_COLOUR)
        if pole is not None and len(joints) > 2:
            self._add(self.thin, [joints[len(joints) // 2], pole], POLE_COLOUR)
        for a, b in itertools.pairwise(joints[1:]):
            self._add(self.tris, [joints[0], a, b], PLANE_COLOUR)
        if miss:  # a cross of three thick lines on the effector
            size = MARK_SIZE * sum((b - a).length for a, b in itertools.pairwise(joints))
            for axis in ((size, 0.0, 0.0), (0.0, size, 0.0), (0.0, 0.0, size)):
                arm = Vector(axis)
                self._add(self.thick, [effector - arm, effector + arm], MISS_COLOUR)


def _goal_point(ob: Any, bone: str, depsgraph: Any) -> Any:
    ev = ob.evaluated_get(depsgraph)
    if bone and ev.type == "ARMATURE" and ev.pose is not None:
        pb = ev.pose.bones.get(bone)
        if pb is not None:
            return ev.matrix_world @ pb.head
    return ev.matrix_world.translation.copy()


def geometry(scene: Any, depsgraph: Any) -> Geometry:
    """The overlay's geometry for ``scene``: every chain of :data:`.handlers.status` on a
    visible armature of the scene, as evaluated in ``depsgraph``."""
    geo = Geometry()
    objects = scene.objects
    for (name, tip), st in list(handlers.status.items()):
        if st.error is None or not st.bones:
            continue
        obj = objects.get(name)
        if obj is None or obj.type != "ARMATURE" or not obj.visible_get():
            continue
        shown = shown_status(obj, tip, depsgraph)
        if shown is None:
            continue
        ev = obj.evaluated_get(depsgraph)
        world, bones = ev.matrix_world, ev.pose.bones
        joints = [world @ bones[n].head for n in st.bones]
        joints.append(world @ bones[st.bones[-1]].tail)
        s = obj.pose.bones[tip].reach_ik
        use_pole = s.pole is not None and s.use_pole
        pole = _goal_point(s.pole, s.pole_bone, depsgraph) if use_pole else None
        geo.chain(joints, st.target, pole, (not shown.reachable) or shown.missed)
    return geo


def _shader(name: str) -> Any:
    shader = _shaders.get(name)
    if shader is None:
        shader = _shaders[name] = gpu.shader.from_builtin(name)
    return shader


def _build(geo: Geometry) -> list[tuple[Any, Any, float]]:
    """The draw steps ``(shader, batch, line width or 0)``, steps sharing a shader together."""
    primitive: Any
    out = []
    for (coords, colours), name, primitive, width in (
        (geo.tris, "SMOOTH_COLOR", "TRIS", 0.0),
        (geo.thin, "POLYLINE_SMOOTH_COLOR", "LINES", LINE_WIDTH),
        (geo.thick, "POLYLINE_SMOOTH_COLOR", "LINES", CHAIN_WIDTH),
    ):
        if coords:
            shader = _shader(name)
            batch = batch_for_shader(shader, primitive, {"pos": coords, "color": colours})
            out.append((shader, batch, width))
    return out


#: ``bpy.app.is_job_running`` (Blender 3.2+), looked up once.
_job_running = getattr(bpy.app, "is_job_running", None)


def _rendering() -> bool:
    return bool(_job_running is not None and _job_running("RENDER"))


def draw() -> None:
    """The draw handler (see the module docstring)."""
    global _dirty, _built_for, _batches
    if not handlers.status:
        return  # no chain solved anywhere
    context: Any = bpy.context
    scene = context.scene
    space = context.space_data
    if (
        scene is None
        or not scene.reach_ik_overlay
        or space is None
        or not space.overlay.show_overlays
        or _rendering()
    ):
        return
    key = scene.as_pointer()
    if _dirty or key != _built_for:
        _dirty, _built_for = False, key
        try:
            _batches = _build(geometry(scene, context.view_layer.depsgraph))
        except (KeyError, ReferenceError, AttributeError):
            _batches = []  # a chain changed under the last solve: the next one redraws it
    if not _batches:
        return
    size = gpu.state.viewport_get()[2:]  # the region's, in pixels
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("NONE")
    bound = None
    for shader, batch, width in _batches:
        if shader is not bound:
            shader.bind()
            bound = shader
            if width:
                shader.uniform_float("viewportSize", size)
        if width:
            shader.uniform_float("lineWidth", width)
        batch.draw(shader)
    gpu.state.blend_set("NONE")


def mark_dirty() -> None:
    """Something may have moved: read the geometry again at the next redraw."""
    global _dirty
    _dirty = True


@persistent
def on_change(*_args: Any) -> None:
    mark_dirty()


_HANDLERS = (
    bpy.app.handlers.frame_change_post,
    bpy.app.handlers.depsgraph_update_post,
    bpy.app.handlers.load_post,
)


def is_registered() -> bool:
    return _handle is not None


def register_overlay() -> None:
    global _handle
    if _handle is None:
        _handle = bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW")
    for handler_list in _HANDLERS:
        if on_change not in handler_list:
            handler_list.append(on_change)
    mark_dirty()


def unregister_overlay() -> None:
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None
    for handler_list in _HANDLERS:
        while on_change in handler_list:
            handler_list.remove(on_change)
    _batches.clear()
    _shaders.clear()


__all__ = ["Geometry", "draw", "geometry", "register_overlay", "unregister_overlay"]
