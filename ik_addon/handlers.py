# SPDX-License-Identifier: GPL-3.0-or-later
"""Live solving: every enabled chain is solved and shown when the frame changes, when a
target or pole moves, and in renders.

Mechanism: the pose of a frame is shown through the chain bones' *Reach IK* constraints,
which copy the rotation of helper empties (:mod:`.constraints`); the solved rotations are
**keyed** on the helpers at the frame shown (:mod:`.stored`), so a frame shown again plays
in Blender's one evaluation like any keyed rig (the bones' own channels, the FK pose, are
never written). On each call the handler reads every input of every chain at the current
frame and subframe (:func:`.evaluate.solve_chains` with the record of that time): a chain
whose inputs equal those recorded keeps its stored pose and nothing is written; a chain
whose inputs changed (a target moved, a key edited, a frame never shown, a new generation
after a setting changed) is solved, and keyed only when the solution differs from the key
Reach IK wrote there, which makes Blender evaluate the frame once more.

* ``frame_change_post`` — scrubbing, playback, ``frame_set`` (subframes too) and renders.
  Blender re-evaluates the depsgraph when a frame-change handler changed data, so the shown
  pose is what gets drawn and rendered (renders: enable *Render → Lock Interface* so the UI
  does not edit the scene while a frame renders).
* ``depsgraph_update_post`` — interactive edits (moving a target, a pole, a rig's control
  or the armature, changing a setting). An update that edits a chain starts a new
  generation (:mod:`.live_state`: chains read again, records dropped): one that lists
  armature data or objects not yet scanned, changes an armature's IK limits, rest data or
  which constraints place its bones, or makes Blender rebuild its relations
  (:func:`edits_chains`); an update that changes only poses does not, nor does a setting
  that may be animated (read among the inputs). The update that the handler's own key
  writes cause (its helpers and the armatures copying them, remembered in ``live.echo``)
  is skipped. Any other update of a helper's action (its keys edited by hand) drops the
  records of stored frames. A re-entrancy flag guards against anything running the
  handler from inside a solve.
* ``load_post`` — a file that is opened is solved once (caches and records are dropped
  first, the constraints of library overrides are brought in line with their chains, and
  helpers whose armature was deleted are removed with their actions);
  ``undo_post``/``redo_post`` drop the record of which bones hold chains and the records
  of stored frames (undo restores the helpers' keys of that step).

The caches and flags of all this are one :class:`.live_state.LiveState`, ``live``
(cleared on file load and on unregister).

The first solve of an armature after that record changed (a chain added or removed, a
file loaded, an undo, a duplicated armature) first brings its constraints in line with its
chains (:func:`.constraints.sync`).

All are ``@persistent`` (they survive loading files) and :func:`unregister_handlers`
removes every one. Keys are written only on the helpers (their own actions), never on the
armature. The last solve's residual errors and messages are kept in :data:`status` for the
panels (not saved).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import bpy
from bpy.app.handlers import persistent
from mathutils import Vector

from . import chain_spec, constraints, evaluate, stored
from .affine import Rows
from .blender_types import ArmatureObject, is_armature
from .live_state import live


class ChainStatus(NamedTuple):
    """The last live solve of one chain: residual error (world metres) or a problem; for a
    solved chain also its bones (root→tip), the target and the solved effector (world
    mathutils vectors), which :mod:`.shown` compares with the pose Blender shows."""

    error: float | None
    reachable: bool
    message: str
    bones: tuple[str, ...] = ()
    target: Vector | None = None
    effector: Vector | None = None
    #: The target's world matrix (rows) whose rotation the last bone was to take, or
    #: ``None`` without *Rotation*.
    goal: Rows | None = None


#: ``(armature object name, tip bone name)`` → the chain's last live solve.
status: dict[tuple[str, str], ChainStatus] = {}


def solve_object(
    obj: ArmatureObject, depsgraph: bpy.types.Depsgraph, time: float | None = None
) -> bool:
    """Solve and show one armature object's chains at ``time`` (default: the depsgraph
    scene's current frame and subframe): chains whose inputs match the record of that
    time (:mod:`.stored`) keep their stored pose; the others are solved and keyed.
    Returns whether anything was written."""
    key = obj.as_pointer()
    if live.synced.get(key) != live.generation:
        constraints.sync(obj)
        live.synced[key] = live.generation
    if time is None:
        scene = depsgraph.scene
        if scene is None:  # no scene to take the time from: nothing to solve
            return False
        time = scene.frame_current_final
    known = stored.known(obj, time)
    report = evaluate.solve_chains(obj, depsgraph, known)
    written = False
    if report.fresh or report.idle or known is None or len(known) != len(report.solved):
        fresh = set(report.fresh)
        written = constraints.show(
            obj,
            [(s.bone_names, s.rotations, s.scales) for s in report.solved if s.tip in fresh],
            time,
            report.idle,
            epoch=live.generation,
        )
        stored.remember(obj, time, report)
    _update_status(obj.name, report)
    return written


#: Per armature object name, the solved chains its entries of :data:`status` were made from
#: and those entries (``None`` after a solve with problems).
_status_made: dict[str, list[tuple[evaluate.Solved, ChainStatus]] | None] = {}


def _update_status(name: str, report: evaluate.SolveReport) -> None:
    """:data:`status` of armature ``name`` after ``report``. A frame played again reuses
    every chain's stored result (the same :class:`.evaluate.Solved`): its entries, still
    there, are kept as they are."""
    made = _status_made.get(name)
    if (
        made is not None
        and not report.problems
        and len(made) == len(report.solved)
        and all(
            source is s and status.get((name, s.tip)) is entry
            for s, (source, entry) in zip(report.solved, made, strict=True)
        )
    ):
        return
    for key_ in [k for k in status if k[0] == name]:
        del status[key_]
    for s in report.solved:
        status[(name, s.tip)] = ChainStatus(
            s.error, s.reachable, "", s.bone_names, s.target_world, s.effector_world, s.goal_world
        )
    for tip, message in report.problems.items():
        status[(name, tip)] = ChainStatus(None, False, message)
    _status_made[name] = (
        None if report.problems else [(s, status[(name, s.tip)]) for s in report.solved]
    )


def solved_armatures(
    scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None
) -> list[ArmatureObject]:
    """The armatures of ``scene`` that live solving solves: with chains, not in Edit Mode,
    local or overridden (a linked armature's pose cannot be written).

    ``scene.objects`` walks every object of the scene (about 0.15 ms for 1000 objects), so
    the armatures found are kept per scene and generation (:attr:`.live_state.LiveState.armatures`)
    and looked for again only where ``depsgraph``'s last evaluation updated a collection or
    the scene (an object linked, unlinked or removed: a script that links a rig and sets the
    frame at once brings no other update first) or no ``depsgraph`` is given."""
    key = scene.as_pointer()
    hit = live.armatures.get(key)
    if (
        hit is None
        or hit[0] != live.generation
        or depsgraph is None
        or depsgraph.id_type_updated("COLLECTION")
        or depsgraph.id_type_updated("SCENE")
    ):
        found = [
            obj
            for obj in scene.objects
            if obj.type == "ARMATURE"  # (first: a scene's objects are mostly not armatures)
            and is_armature(obj)
            and (not obj.library or obj.override_library)
            and chain_spec.armature_chains(obj)
        ]
        hit = live.armatures[key] = (live.generation, found)
    try:
        return [obj for obj in hit[1] if obj.mode != "EDIT"]
    except ReferenceError:  # (one was removed where no update told: look again)
        live.armatures.pop(key, None)
        return solved_armatures(scene)


@contextmanager
def paused() -> Iterator[None]:
    """Keep the live handlers from solving inside the block (a bake setting frames; a
    solve writing the pose)."""
    before = live.busy
    live.busy = True
    try:
        yield
    finally:
        live.busy = before


def solve_scene(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> set[str]:
    """Solve every armature of ``scene`` that has chains at the scene's current frame and
    subframe; never raises. Returns the names of the armatures whose helpers were written
    and not yet evaluated.

    Where a chain's goal depends on another chain's bones through constraints
    or drivers (:func:`.evaluate.waits_for_evaluation`), a pass that wrote is followed by an
    evaluation (``depsgraph.update()``) and another pass, which solves again the chains
    whose inputs changed, until one writes nothing (at most one pass per chain, and one):
    the pose then depends on the frame's inputs alone, not on what was shown before."""
    if live.busy:
        return set()
    with paused():
        return solve_settled(
            solved_armatures(scene, depsgraph), depsgraph, scene.frame_current_final
        )


def solve_settled(
    armatures: Sequence[ArmatureObject], depsgraph: bpy.types.Depsgraph, time: float
) -> set[str]:
    """:func:`solve_object` for each of ``armatures`` at ``time``, in passes with an
    evaluation between them where a chain waits for one (:func:`solve_scene`); exceptions
    are reported, not raised. Returns the names of the armatures written by the last pass
    (not yet evaluated)."""
    passes = 1
    if any(evaluate.waits_for_evaluation(obj) for obj in armatures):
        passes += sum(len(chain_spec.armature_chains(obj)) for obj in armatures)
    pending: set[str] = set()
    for k in range(passes):
        if k:
            depsgraph.update()
        pending = set()
        for obj in armatures:
            try:
                if solve_object(obj, depsgraph, time):
                    pending.add(obj.name)
            except Exception:
                _report_once(obj.name)
        if not pending:
            break
    return pending


def _report_once(name: str) -> None:
    if name not in live.reported:
        live.reported.add(name)
        print(f"Reach IK: solving '{name}' failed:")
        traceback.print_exc()


@persistent
def on_frame_change(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    solve_scene(scene, depsgraph)


def edits_chains(updates: Iterable[bpy.types.DepsgraphUpdate]) -> bool:
    """Whether an update (``depsgraph.updates``) may have edited a chain.

    It did where Blender rebuilt its relations (the update lists the scene: a constraint,
    driver or parent added, removed or retargeted; every object is listed then), where it
    lists an armature object that this generation has not scanned, or one holding chains
    that no longer match their plan (:func:`.evaluate.posed_only`: Edit Mode, rest data,
    IK limits, a constraint muted or its influence set to or from 0), or armature data
    without its object. An update that only changed the pose of an armature — a bone or a
    rig's IK control dragged, the armature moved, or a pose that Blender evaluated again
    because its own IK target moved — changes no chain: reading every chain and what its
    goals depend on again after it would cost each step of a drag a scan of every rig.
    (Blender lists the armature data with its object whenever a pose changes.) Reach IK's
    own settings start a new generation in their property callbacks where a cache depends
    on them."""
    listed = [(u, u.id) for u in updates]
    if any(isinstance(i, bpy.types.Scene) for _, i in listed):
        return True
    data = {(i.original or i).as_pointer() for _, i in listed if isinstance(i, bpy.types.Armature)}
    for u, i in listed:
        obj = i.original if isinstance(i, bpy.types.Object) else None
        if not is_armature(obj):
            continue
        scanned = live.chains.get((obj.as_pointer(), obj.data.as_pointer()))
        if scanned is None or scanned[0] != live.generation:
            return True
        if scanned[1] and not evaluate.posed_only(obj, u.is_updated_transform):
            return True
        data.discard(obj.data.as_pointer())
    return bool(data)


@persistent
def on_depsgraph_update(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    if live.busy:
        return
    updates = list(depsgraph.updates)
    updated = [u.id for u in updates]
    objects = [i for i in updated if isinstance(i, bpy.types.Object)]
    # (an object whose own transform changed was moved: a solve's write never does that)
    moved = {
        u.id.name for u in updates if isinstance(u.id, bpy.types.Object) and u.is_updated_transform
    }
    echo = set(live.echo)
    live.echo.clear()
    if not echo and any(isinstance(i, bpy.types.Action) and stored.is_ours(i) for i in updated):
        stored.forget()  # a helper's keys edited by hand: solve and key every frame again
    if (
        echo
        and all(
            constraints.is_helper(i) or (i.name in echo and i.name not in moved) for i in objects
        )
        and not any(isinstance(i, bpy.types.Armature) for i in updated)
    ):
        return  # only what the last solve wrote: its helpers and the armatures copying them
    if edits_chains(updates):
        # Bones added, renamed or edited, IK limits or chain settings changed, constraints
        # edited: check everything again (a pose edit alone does not; frame changes never
        # get here).
        live.invalidate()
    if all(constraints.is_helper(i) for i in objects):
        return  # nothing moved, or only helpers Reach IK wrote
    live.echo.update(solve_scene(scene, depsgraph))


@persistent
def on_undo(*_args: object) -> None:
    live.invalidate()
    stored.forget()


@persistent
def on_load(_filepath: str | None = None) -> None:
    live.clear()
    status.clear()
    _status_made.clear()
    for obj in bpy.data.objects:
        # A library override whose chains were all removed: the library's constraints
        # come back with the file and must be muted again (no chain will solve it).
        if is_armature(obj) and obj.override_library is not None:
            constraints.sync(obj)
    constraints.remove_orphans()
    context = bpy.context
    scene = getattr(context, "scene", None)
    if scene is not None:
        solve_scene(scene, context.evaluated_depsgraph_get())


_HANDLERS: tuple[tuple[list[Callable[..., None]], Callable[..., None]], ...] = (
    (bpy.app.handlers.frame_change_post, on_frame_change),
    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
    (bpy.app.handlers.load_post, on_load),
    (bpy.app.handlers.undo_post, on_undo),
    (bpy.app.handlers.redo_post, on_undo),
)


def register_handlers() -> None:
    for handler_list, fn in _HANDLERS:
        if fn not in handler_list:
            handler_list.append(fn)


def unregister_handlers() -> None:
    for handler_list, fn in _HANDLERS:
        while fn in handler_list:
            handler_list.remove(fn)
    live.clear()
    status.clear()
    _status_made.clear()
