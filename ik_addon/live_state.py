# SPDX-License-Identifier: GPL-3.0-or-later
"""Live solving's state: every cache and flag it keeps between frames, in one object.

:data:`live` is the one :class:`LiveState` of the add-on. It holds nothing that is saved
with the file: everything in it can be rebuilt from the file, so dropping it costs one
slower frame, never a different pose.

Lifetime:

* made when the add-on is imported, with :attr:`LiveState.generation` 0;
* :meth:`LiveState.invalidate` starts a new generation: after a chain is added, removed or
  changed (a setting that is not read at every frame), the armature's bones, IK limits or
  constraints are edited (not its pose alone: :func:`.handlers.edits_chains`), an undo or
  redo step (the property callbacks, operators and handlers call it). Every cache below
  that is keyed by generation (chain tips, plans, records, helpers, synced, the scenes'
  armatures) is then stale
  and is rebuilt on its next use; the chain models (:attr:`LiveState.rigs`) are checked
  once against the rig's rest data and kept when they still match;
* :meth:`LiveState.clear` drops everything and starts a new generation: on file load
  (:func:`.handlers.on_load`, before the first solve of the new file) and on unregister
  (:func:`.handlers.unregister_handlers`), so no Blender data of an old file or of a
  removed add-on is kept. :attr:`LiveState.busy` is left as it is (a
  :func:`.handlers.paused` block in progress sets it back itself).

The panels' view of the last solve, :data:`.handlers.status`, is an output of live solving
and stays in :mod:`.handlers` (cleared at the same two moments). Two pure functions of
their arguments are memoised beside their definitions, at most 256 entries each: the
prepared core solvers (:func:`.solve_frames._prepared`, keyed by the chain model and its
settings: a solver never changes once made) and one frame's base frame and its inverse
(:func:`.solve_frames._frame_base`, keyed by the chain model and the exact matrices and
location it is computed from).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .evaluate import _Planned
    from .rig import RigChain
    from .stored import Known


@dataclass
class LiveState:
    """The caches and flags of live solving (module docstring: what clears them when)."""

    #: Changes with every :meth:`invalidate`; caches remember the generation they hold.
    generation: int = 0
    #: ``(armature object, armature data)`` pointers → (generation, the pose bones holding
    #: a chain) (:func:`.chain_spec.armature_chains`).
    chains: dict[tuple[int, int], tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    #: ``(armature data pointer, its name, tip, chain length, use tail)`` → (chain model, the
    #: generation it was last checked against the rig) (:func:`.chain_spec.rig_chain`).
    rigs: dict[tuple[int, str, str, int, bool], tuple[RigChain, int]] = field(default_factory=dict)
    #: Armature object pointer → (generation, its chains as planned, parents first, which
    #: of its constraints placed their bones then) (:func:`.evaluate._planned`,
    #: :func:`.own_constraints.placing`).
    plans: dict[int, tuple[int, list[_Planned], tuple[bool, ...]]] = field(default_factory=dict)
    #: Armature object pointer → (generation, time → chain tip → (inputs, result)): the
    #: frames shown and keyed on the helpers (:mod:`.stored`).
    records: dict[int, tuple[int, dict[float, Known]]] = field(default_factory=dict)
    #: Armature object pointer → (generation, bone → [helper, its rotation F-curves, its
    #: scale F-curves or ``None``]) (:func:`.constraints.show`).
    helpers: dict[int, tuple[int, dict[str, list[Any]]]] = field(default_factory=dict)
    #: Armature object pointer → the generation its constraints match (:mod:`.handlers`).
    synced: dict[int, int] = field(default_factory=dict)
    #: Scene pointer → (generation, the scene's armature objects with chains that live
    #: solving may solve, Edit Mode aside) (:func:`.handlers.solved_armatures`; scanned
    #: again when the scene's objects may have changed).
    armatures: dict[int, tuple[int, list[Any]]] = field(default_factory=dict)
    #: Armatures whose helpers the last interactive solve wrote: the update that write
    #: causes lists them (and their helpers) and is not an edit (:mod:`.handlers`).
    echo: set[str] = field(default_factory=set)
    #: Armatures whose failed solve was printed already (printed once per file).
    reported: set[str] = field(default_factory=set)
    #: The live handlers do not solve (:func:`.handlers.paused`: a bake, a solve running).
    busy: bool = False

    def invalidate(self) -> None:
        """Start a new generation: read the chains again and recheck them against the rig
        (module docstring)."""
        self.generation += 1

    def clear(self) -> None:
        """Drop every cache and record and start a new generation (file load, unregister).
        The containers are emptied in place."""
        self.chains.clear()
        self.rigs.clear()
        self.plans.clear()
        self.records.clear()
        self.helpers.clear()
        self.synced.clear()
        self.armatures.clear()
        self.echo.clear()
        self.reported.clear()
        self.invalidate()


#: The add-on's live state.
live = LiveState()

__all__ = ["LiveState", "live"]
