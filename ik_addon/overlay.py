# SPDX-License-Identifier: GPL-3.0-or-later
"""The 3D View overlay: what each chain drives, where it reaches, and how it bends.

A ``SpaceView3D`` draw handler (``'WINDOW'``, ``'POST_VIEW'``) draws, for every solved chain
of the scene's visible armatures, in world space and on top of the scene:

* the chain: a thick line through its joints as Blender shows them (evaluated pose), in
  an IK yellow;
* a dashed line from the effector to the target, as Blender draws an IK constraint's;
* a line from the elbow/knee (the chain's middle joint) to the pole, when it has one;
* the bend plane: a translucent fan of triangles root → joint → next joint;
* a red cross on the effector, and the dashed line red, when the target is out of reach or
  missed while within reach (joint limits: "unreachable within limits"; :mod:`.shown`'s
  rule, evaluated on the GPU from the shown effector).

The scene's ``reach_ik_overlay`` setting (sidebar header) switches it; nothing is drawn when
the view's overlays are off or while a render job runs. :func:`unregister_overlay` removes
the draw handler, the app handlers and the message-bus subscriptions below.

**Cost per redraw** (``scripts/bench_overlay.py``, docs/addon.md). One shader draws an
armature's chains in one call (:mod:`.overlay_shader`); its batch holds only the chains'
topology and is built again only when the set of chains changes, and the chains' points
(a few dozen floats) are a uniform array. The work is split by when it can be done:

* after each live solve (this module's ``frame_change_post`` / ``depsgraph_update_post``
  handlers, which run after the live solver's): :func:`chain_inputs` reads what the solve's
  inputs fix — settings, targets, poles, tolerances — into a :class:`Plan` per scene;
* at the first redraw after that, the joints Blender shows (evaluated, so only after the
  solved pose was evaluated): :meth:`Plan.read_joints`, two bulk reads per armature;
* at every redraw: module-level checks (a chain solved, no render job, the views'
  overlay switches as last seen by the message bus), then bind, three uniforms and one
  draw per armature.
  Only when 3D Views differ in their overlay switch, or windows show different scenes,
  does a redraw read the context.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, cast

import bpy
import gpu
import numpy as np
from bpy.app.handlers import persistent
from mathutils import Matrix

from . import handlers, overlay_shader
from .blender_types import ArmatureObject, ChainBone, get_item, is_armature
from .live_state import live
from .shown import MISS

if TYPE_CHECKING:
    from .blender_types import ReachIKScene

Colour = tuple[float, float, float, float]
#: One draw: the GPU batch, its points and the armature's world matrix.
Draw = tuple[gpu.types.GPUBatch, np.ndarray, Matrix]
#: A batch's shapes to add later, in layers: ``(add, arguments)`` each.
_Layer = list[tuple[Callable[..., None], tuple[object, ...]]]

#: Colours (RGBA).
CHAIN_COLOUR = (1.0, 0.78, 0.1, 0.9)
TARGET_COLOUR = (1.0, 0.92, 0.55, 0.85)
POLE_COLOUR = (0.45, 0.75, 1.0, 0.85)
PLANE_COLOUR = (1.0, 0.78, 0.1, 0.14)
MISS_COLOUR = (1.0, 0.12, 0.08, 1.0)
HIDDEN = (0.0, 0.0, 0.0, 0.0)
#: Line widths (pixels) and the miss mark's half size (fraction of the chain's length).
CHAIN_WIDTH, LINE_WIDTH, MARK_SIZE = 4.0, 1.5, 0.06
#: Dashes per effector → target line (as long as the gaps).
DASHES = 10

#: The views' overlay switches: all on, all off, some of each (then read per redraw).
ON, OFF, MIXED = 1, 2, 3

_handle: object | None = None
_rendering = False
#: :data:`ON`, :data:`OFF`, :data:`MIXED`, or ``None`` when unknown (scanned at the next
#: redraw); the scene every window shows (pointer), 0 when they differ or unknown.
_views: int | None = None
_only_scene = 0
#: Scene (pointer) → its plan.
_plans: dict[int, Plan] = {}
_shader: gpu.types.GPUShader | None = None
_points_at = 0
_owner = object()


class ChainInputs(NamedTuple):
    """What a live solve fixes of one chain's overlay (world metres).

    Attributes:
        name, tip: the armature object and the chain's tip bone.
        bones: the chain's bones, root → tip.
        target: the target of the solve.
        pole: the pole's point, or ``None`` (no pole, or *Use Pole* off).
        threshold: :mod:`.overlay_shader`'s miss threshold (< 0 out of reach, 0 partial
            influence, else the miss distance of :func:`.shown.tolerances`).
        cross: the miss cross's half size (:data:`MARK_SIZE` × the chain's length).
    """

    name: str
    tip: str
    bones: tuple[str, ...]
    target: tuple[float, ...]
    pole: tuple[float, ...] | None
    threshold: float
    cross: float


class _Armature:
    """Which joints of one armature a batch reads, and where it puts them."""

    def __init__(self) -> None:
        self.heads: list[str] = []  # bones whose heads are joints ...
        self.at_heads: list[int] = []  # ... and their points
        self.tails: list[str] = []  # the chains' last bones (tails: the effectors)
        self.at_tails: list[int] = []
        self.generation = -1  # of the copies below (:attr:`.live_state.LiveState.generation`)
        #: ``(float in the bones' buffer, float in the points)`` per joint to copy.
        self.head_copies: list[tuple[int, int]] = []
        self.tail_copies: list[tuple[int, int]] = []
        self.buffer = np.zeros(0, np.float32).data

    def index(self, bones: bpy.types.bpy_prop_collection[ChainBone]) -> None:
        """Find the bones in the pose's bone order (again after the rig changed)."""
        head_index = [bones.find(n) for n in self.heads]
        tail_index = [bones.find(n) for n in self.tails]
        if min(head_index + tail_index) < 0:
            raise KeyError("a chain bone is gone")
        self.head_copies = [(3 * b, 4 * p) for b, p in zip(head_index, self.at_heads, strict=True)]
        self.tail_copies = [(3 * b, 4 * p) for b, p in zip(tail_index, self.at_tails, strict=True)]
        self.buffer = np.zeros(3 * len(bones), np.float32).data
        self.generation = live.generation

    def read(self, obj: ArmatureObject, points: memoryview) -> Matrix:
        """Read the armature ``obj``'s joints (armature space) into ``points`` (flat) with
        two bulk reads of all its bones' heads and tails (a C loop each), whatever the
        number of chains; returns a copy of its world matrix."""
        bones = obj.pose.bones
        if self.generation != live.generation:
            self.index(bones)
        buffer = self.buffer
        bones.foreach_get("head", buffer)
        for src, dst in self.head_copies:
            points[dst : dst + 3] = buffer[src : src + 3]
        bones.foreach_get("tail", buffer)
        for src, dst in self.tail_copies:
            points[dst : dst + 3] = buffer[src : src + 3]
        return obj.matrix_world.copy()


class _Batch:
    """One batch of a :class:`Layout`, for chains of one armature: its vertices and
    triangles, the indices of its points, and which bones to read into them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.armature = _Armature()
        self.vertices: dict[str, list[overlay_shader.Row]] = {
            n: [] for n in overlay_shader.ATTRIBUTES
        }
        self.triangles: list[tuple[int, int, int]] = []
        #: The points as far as the topology fixes them (the chains' info points).
        self.template = np.zeros((overlay_shader.CAPACITY, 4), np.float32)
        self.used = 0

    def take(self, count: int) -> int:
        first, self.used = self.used, self.used + count
        return first

    def line(
        self,
        ends: tuple[int, int, float, float],
        style: tuple[float, int],
        colours: tuple[Colour, Colour],
        arm: tuple[float, float, float, float] = (-1.0, 0.0, 0.0, 0.0),
    ) -> None:
        """A line as a quad: ``ends = (a, b, ta, tb)`` from blend ``ta`` to ``tb`` of points
        ``a`` → ``b``; ``style = (width in pixels, info point)``; ``colours = (colour,
        colour when missed)``; ``arm`` see :mod:`.overlay_shader`."""
        a, b, ta, tb = ends
        width, info = style
        base = len(self.vertices["ends"])
        for end, side in ((0, -1.0), (0, 1.0), (1, 1.0), (1, -1.0)):
            this, other = (ta, tb) if end == 0 else (tb, ta)
            push = side if end == 0 else -side  # the normal turns with the line's direction
            arm_here = arm if end == 0 else (arm[0], arm[2], arm[1], arm[3])
            row = ((a, b, this, other), (push, width, info, side), *colours, arm_here)
            for name, value in zip(overlay_shader.ATTRIBUTES, row, strict=True):
                self.vertices[name].append(value)
        self.triangles += [(base, base + 1, base + 2), (base, base + 2, base + 3)]

    def triangle(self, corners: tuple[int, int, int], info: int) -> None:
        base = len(self.vertices["ends"])
        for p in corners:
            row = (
                (p, p, 0.0, 0.0),
                (0.0, 0.0, info, 0.0),
                PLANE_COLOUR,
                PLANE_COLOUR,
                (-1.0, 0.0, 0.0, 0.0),
            )
            for name, value in zip(overlay_shader.ATTRIBUTES, row, strict=True):
                self.vertices[name].append(value)
        self.triangles.append((base, base + 1, base + 2))


def _key(chains: list[ChainInputs]) -> tuple[tuple[str, str, tuple[str, ...], bool], ...]:
    return tuple((c.name, c.tip, c.bones, c.pole is not None) for c in chains)


class Layout:
    """The topology of a set of chains, in batches of at most
    :data:`.overlay_shader.CAPACITY` points (their layout: :mod:`.overlay_shader`).

    Attributes:
        key: names the topology (chains, their bones, whether they have a pole).
        batches: per batch its vertices, triangles and the bones to read.
        slots: per chain drawn, ``(batch, target point, pole point or -1, info point)``.
        gpu: the GPU batches, made at the first redraw that needs them.
    """

    def __init__(self, chains: list[ChainInputs]) -> None:
        self.key = _key(chains)
        self.batches: list[_Batch] = []
        self.slots: list[tuple[int, int, int, int] | None] = [None] * len(chains)
        self.gpu: list[gpu.types.GPUBatch] | None = None
        for name in dict.fromkeys(c.name for c in chains):  # a batch per armature (or more)
            layers: tuple[_Layer, _Layer, _Layer] = ([], [], [])  # tris, thin, thick
            batch = _Batch(name)
            for i, chain in enumerate(chains):
                size = len(chain.bones) + 3 + (chain.pole is not None)
                if chain.name != name or size > overlay_shader.CAPACITY:
                    continue  # another armature's, or a chain of over a hundred bones
                if batch.used + size > overlay_shader.CAPACITY:
                    self._close(batch, layers)
                    batch, layers = _Batch(name), ([], [], [])
                self.slots[i] = (len(self.batches), *self._add(batch, layers, chain))
            if batch.used:
                self._close(batch, layers)

    def _close(self, batch: _Batch, layers: tuple[_Layer, ...]) -> None:
        for layer in layers:  # bend planes, then thin lines, then thick ones over them
            for add, args in layer:
                add(*args)
        self.batches.append(batch)

    @staticmethod
    def _add(batch: _Batch, layers: tuple[_Layer, ...], chain: ChainInputs) -> tuple[int, int, int]:
        armature = batch.armature
        count = len(chain.bones) + 1
        first = batch.take(count)
        effector = first + count - 1
        armature.heads += chain.bones
        armature.at_heads += range(first, effector)
        armature.tails.append(chain.bones[-1])
        armature.at_tails.append(effector)
        target = batch.take(1)
        pole = batch.take(1) if chain.pole is not None else -1
        info = batch.take(1)
        batch.template[info, :2] = (effector, target)
        for k in range(1, count - 1):
            layers[0].append((batch.triangle, ((first, first + k, first + k + 1), info)))
        thin, thick = (LINE_WIDTH, info), (CHAIN_WIDTH, info)
        dashed = (-1.0, 0.0, 0.0, 2.0 * DASHES - 1.0)
        colours = (TARGET_COLOUR, MISS_COLOUR)
        layers[1].append((batch.line, ((effector, target, 0.0, 1.0), thin, colours, dashed)))
        if pole >= 0 and count > 2:
            ends = (first + count // 2, pole, 0.0, 1.0)
            layers[1].append((batch.line, (ends, thin, (POLE_COLOUR,) * 2)))
        for a, b in itertools.pairwise(range(first, first + count)):
            layers[2].append((batch.line, ((a, b, 0.0, 1.0), thick, (CHAIN_COLOUR,) * 2)))
        for axis in range(3):  # the cross, shown when missed
            arm = (float(axis), 1.0, -1.0, 0.0)
            ends = (effector, effector, 0.0, 0.0)
            layers[2].append((batch.line, (ends, thick, (HIDDEN, MISS_COLOUR), arm)))
        return target, pole, info


class Plan:
    """The overlay of one scene after a live solve: a :class:`Layout` and its points, one
    ``(CAPACITY, 4)`` float32 array per batch, filled with what the solve fixed (targets,
    poles, miss thresholds, cross sizes); the joints and the armatures' world matrices are
    read at the first redraw after the solve (:meth:`read_joints`, while :attr:`stale`)."""

    def __init__(self, chains: list[ChainInputs], old: Plan | None = None) -> None:
        self.layout: Layout
        self.points: list[np.ndarray]
        if old is not None and old.layout.key == _key(chains):
            self.layout, self.points = old.layout, old.points  # same topology, same batches
        else:
            self.layout = Layout(chains)
            self.points = [b.template.copy() for b in self.layout.batches]
        self.flat = [points.reshape(-1).data for points in self.points]
        self.stale = True
        #: Per batch its armature's world matrix, and ``(GPU batch, points, matrix)``;
        #: both filled at the first redraw (:meth:`read_joints`, :func:`draw`).
        self.matrices: list[Matrix] = []
        self.draws: list[Draw] = []
        for chain, slot in zip(chains, self.layout.slots, strict=True):
            if slot is None:
                continue
            batch, target, pole, info = slot
            points = self.points[batch]
            points[target] = (*chain.target, -1.0)
            if chain.pole is not None:
                points[pole] = (*chain.pole, -1.0)
            points[info, 2:] = (chain.threshold, chain.cross)

    def read_joints(self) -> None:
        """Read the shown joints (armature space) into the points and the armatures' world
        matrices into :attr:`matrices`.

        From the original objects: Blender copies the evaluated world matrix and pose of
        the depsgraph it draws back to them (``BKE_object_sync_to_original``), which spares
        looking the depsgraph and the evaluated copies up at every changed redraw."""
        self.matrices = [
            batch.armature.read(_local_armature(batch.name), flat)
            for batch, flat in zip(self.layout.batches, self.flat, strict=True)
        ]
        self.stale = False


def _local_armature(name: str) -> ArmatureObject:
    """The local (not linked) armature object of that name; ``KeyError`` when there is none
    (a chain changed under the last solve: :func:`draw` drops the plan)."""
    obj = get_item(bpy.data.objects, (name, None))
    if not is_armature(obj):
        raise KeyError(f"no armature '{name}'")
    return obj


#: ``(armature name, bones)`` → the bones' rest length (rig units), valid for the
#: :attr:`.live_state.LiveState.generation` ``_lengths_generation``.
_lengths: dict[tuple[str, tuple[str, ...]], float] = {}
_lengths_generation = -1


def _rest_length(obj: ArmatureObject, bones: tuple[str, ...]) -> float:
    global _lengths_generation
    if _lengths_generation != live.generation:  # bones edited since: read them again
        _lengths.clear()
        _lengths_generation = live.generation
    key = (obj.name, bones)
    length = _lengths.get(key)
    if length is None:
        length = _lengths[key] = sum(obj.data.bones[n].length for n in bones)
    return length


def chain_inputs(scene: ReachIKScene, depsgraph: bpy.types.Depsgraph) -> list[ChainInputs]:
    """What the last live solve fixed of every chain of :data:`.handlers.status` on a
    visible armature of ``scene``: its target (the solve's), its pole as evaluated in
    ``depsgraph``, :mod:`.shown`'s miss rule (none when the scene's overlay setting is off).

    The miss distance is :func:`.shown.tolerances`' (pinned to it by a test), from the
    chain's rest length, read once per :attr:`.live_state.LiveState.generation`."""
    chains: list[ChainInputs] = []
    if not scene.reach_ik_overlay:
        return chains
    objects = scene.objects
    armatures: dict[
        str, tuple[ArmatureObject, bpy.types.bpy_prop_collection[ChainBone], float] | None
    ] = {}
    for (name, tip), st in list(handlers.status.items()):
        if st.error is None or not st.bones or st.target is None:
            continue
        if name not in armatures:
            obj = get_item(objects, name)
            armatures[name] = None
            if is_armature(obj) and obj.visible_get():
                bones = obj.evaluated_get(depsgraph).pose.bones
                armatures[name] = (obj, bones, max(obj.matrix_world.to_scale().to_tuple()))
        armature = armatures[name]
        if armature is None:
            continue
        obj, bones, scale = armature
        s = bones[tip].reach_ik
        pole = None
        if s.pole is not None and s.use_pole:
            pole = _goal_point(s.pole, s.pole_bone, depsgraph)
        length = _rest_length(obj, st.bones) * scale
        threshold = -1.0  # out of reach: always missed
        if st.reachable:
            threshold = max(s.tolerance * scale, MISS * length) if s.influence >= 1.0 else 0.0
        target, cross = st.target.to_tuple(), MARK_SIZE * length
        chains.append(ChainInputs(name, tip, st.bones, target, pole, threshold, cross))
    return chains


def _goal_point(
    ob: bpy.types.Object, bone: str, depsgraph: bpy.types.Depsgraph
) -> tuple[float, ...]:
    ev = ob.evaluated_get(depsgraph)
    if bone and ev.type == "ARMATURE" and ev.pose is not None:
        pb = get_item(ev.pose.bones, bone)
        if pb is not None:
            return (ev.matrix_world @ pb.head).to_tuple()
    return ev.matrix_world.translation.to_tuple()


def _scan_views() -> int:
    """Every 3D View's overlay switch and every window's scene, read once (again after the
    message bus reports a change)."""
    global _views, _only_scene
    switches, scenes = set(), set()
    wm = bpy.context.window_manager
    for window in wm.windows if wm is not None else ():
        scenes.add(window.scene.as_pointer())
        screen = window.screen
        for area in screen.areas if screen is not None else ():
            space = area.spaces.active
            if area.type == "VIEW_3D" and isinstance(space, bpy.types.SpaceView3D):
                switches.add(space.overlay.show_overlays)
    _views = MIXED if len(switches) > 1 else OFF if switches == {False} else ON
    _only_scene = scenes.pop() if len(scenes) == 1 else 0
    return _views


def _draws(context: bpy.types.Context, key: int, plan: Plan | None) -> list[Draw]:
    """Bring the scene's plan up to date: prepare it (no handler ran for it yet), read the
    shown joints, make the batches of a new topology. Nothing to draw without the context's
    scene and its evaluated depsgraph."""
    global _shader, _points_at
    if plan is None:
        scene, view_layer = context.scene, context.view_layer
        depsgraph = view_layer.depsgraph if view_layer is not None else None
        if scene is None or depsgraph is None:
            return []
        # The overlay setting is registered on every scene while the add-on (and so this
        # draw handler) is.
        inputs = chain_inputs(cast("ReachIKScene", scene), depsgraph)
        plan = _plans[key] = Plan(inputs)
    layout = plan.layout
    if layout.gpu is None:
        if _shader is None:
            _shader, _points_at = overlay_shader.create()
        layout.gpu = [overlay_shader.batch(b.vertices, b.triangles) for b in layout.batches]
    plan.read_joints()
    plan.draws = list(zip(layout.gpu, plan.points, plan.matrices, strict=True))
    return plan.draws


def draw() -> None:
    """The draw handler (see the module docstring)."""
    if not handlers.status or _rendering:
        return  # no chain solved anywhere, or a render job runs
    views = _views or _scan_views()
    if views == OFF:
        return
    context = bpy.context  # read below only when views or scenes differ, or stale
    if views == MIXED:
        space = context.space_data
        if not isinstance(space, bpy.types.SpaceView3D) or not space.overlay.show_overlays:
            return
    key = _only_scene
    if not key:
        scene = context.scene
        if scene is None:
            return
        key = scene.as_pointer()
    plan = _plans.get(key)
    if plan is None or plan.stale:
        try:
            draws = _draws(context, key, plan)
        except (KeyError, ReferenceError, AttributeError):
            _plans.pop(key, None)  # a chain changed under the last solve: the next one draws
            return
    else:
        draws = plan.draws
    shader = _shader
    if not draws or shader is None:
        return
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("NONE")
    shader.bind()
    shader.uniform_float("viewportSize", gpu.state.viewport_get()[2:])
    for batch, points, matrix in draws:
        # The stubs take only sequences of floats; Blender takes a Matrix and any buffer.
        shader.uniform_float("armature", matrix)  # type: ignore[arg-type]
        shader.uniform_vector_float(_points_at, points, 4, overlay_shader.CAPACITY)  # type: ignore[arg-type]
        batch.draw(shader)
    gpu.state.blend_set("NONE")


def mark_dirty() -> None:
    """Read everything again at the next redraw (plans, the views' switches)."""
    global _views, _only_scene
    _plans.clear()
    _views, _only_scene = None, 0


@persistent
def on_change(scene: ReachIKScene, depsgraph: bpy.types.Depsgraph) -> None:
    """After a live solve: prepare the scene's plan; the joints are read at the next redraw."""
    if _rendering or bpy.app.background:
        return
    key = scene.as_pointer()
    try:
        _plans[key] = Plan(chain_inputs(scene, depsgraph), _plans.get(key))
    except (KeyError, ReferenceError, AttributeError):
        _plans.pop(key, None)


@persistent
def on_load(*_args: object) -> None:
    mark_dirty()
    _subscribe()


@persistent
def on_render_start(*_args: object) -> None:
    global _rendering
    _rendering = True


@persistent
def on_render_end(*_args: object) -> None:
    global _rendering
    _rendering = False
    mark_dirty()


def _views_changed() -> None:
    global _views
    _views = None


#: What changes which 3D Views exist, their overlay switches, or a window's scene.
_WATCHED = (
    ("View3DOverlay", "show_overlays"),
    ("Window", "scene"),
    ("Window", "workspace"),
    ("Window", "screen"),
    ("Area", "type"),
    ("Area", "ui_type"),
)


def _subscribe() -> None:
    bpy.msgbus.clear_by_owner(_owner)
    for struct, prop in _WATCHED:
        bpy.msgbus.subscribe_rna(
            key=(getattr(bpy.types, struct), prop), owner=_owner, args=(), notify=_views_changed
        )


_HANDLERS = (
    (bpy.app.handlers.frame_change_post, on_change),
    (bpy.app.handlers.depsgraph_update_post, on_change),
    (bpy.app.handlers.load_post, on_load),
    (bpy.app.handlers.render_init, on_render_start),
    (bpy.app.handlers.render_complete, on_render_end),
    (bpy.app.handlers.render_cancel, on_render_end),
)


def is_registered() -> bool:
    return _handle is not None


def register_overlay() -> None:
    global _handle
    if _handle is None:
        _handle = bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW")
    for handler_list, fn in _HANDLERS:
        if fn not in handler_list:
            handler_list.append(fn)
    _subscribe()
    mark_dirty()


def unregister_overlay() -> None:
    global _handle, _shader, _rendering
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None
    for handler_list, fn in _HANDLERS:
        while fn in handler_list:
            handler_list.remove(fn)
    bpy.msgbus.clear_by_owner(_owner)
    mark_dirty()
    _shader = None
    _rendering = False


__all__ = [
    "ChainInputs",
    "Layout",
    "Plan",
    "chain_inputs",
    "draw",
    "register_overlay",
    "unregister_overlay",
]
