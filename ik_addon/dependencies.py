# SPDX-License-Identifier: GPL-3.0-or-later
"""Feedback loops between chains and their goals: a chain must not reach for what it moves.

A chain *moves* its own bones and every bone below them (:func:`moved_bones`). A goal (a
target or pole) *depends on* the pose bones that place it (:func:`goal_dependencies`): for
a bone goal, that bone and the bones above it; for an object (or a bone's armature), the
bones it is parented to, through every parent in turn. A chain is refused when

* its target or pole depends on a bone the chain itself moves (one of its own bones, or a
  child of one) — solving it would move the target it solves for, and every evaluation
  would give another pose; or
* its own settings are driven by a bone the chain moves (:func:`settings_inputs`: a driver
  on its *Influence* reading its tip's evaluated transform); or
* it lies on a cycle of chains: its goal depends on a bone another chain moves, whose goal
  (or root) depends in turn, through any number of chains, on a bone this one moves.

A refused chain is not solved: its bones show their FK pose, and :func:`problems` gives the
message that the live solver's status (panel), the operators, the bake and
``scripts/bake.py --chain`` show. One function for all of them: :func:`problems`. Goals are
followed through object parents (``parent_type`` ``BONE``, ``OBJECT`` or ``ARMATURE``).

A goal can also depend on bones through **constraints and drivers** that Blender
evaluates: a Rigify quadruped's front paw aims a helper bone at one IK chain's bones
(*Damped Track*) and the other chain's target follows it (*Copy Location*); a driver on a
goal's location may read a bone's evaluated transform. Those dependencies count for the
refusals and the order as the others do, and such a chain is *evaluated*
(:attr:`Analysis.evaluated`, :func:`constraint_dependencies`): its goal is right only after
Blender has evaluated the other chain's new pose, so live solving and the bake solve it
again once Blender has (:mod:`.handlers`). A driver counts through its variables that read
an evaluated transform (*Transform Channel*, *Distance*, *Rotational Difference*, and a
*Single Property* whose path reads a matrix, head or tail); one that reads a property or a
bone's own channels (which Reach IK never writes live) does not. The drivers of a chain's
own settings count the same way (:func:`settings_inputs`): an *Influence* driven by
another chain's bone is read as Blender evaluated it, after that chain's new pose; so do
the drivers of the channels a chain reads of its own bones (:func:`channel_dependencies`:
the FK rotations it blends with, its root's location).

A chain is *evaluated* too where it reads another chain's bones through parents that a
pass does not recompute (:func:`_read_evaluated`): its goal is an object, or a bone of
another armature, parented below bones another chain moves (a prop's IK reaching for an
empty in a character's hand), or its armature object is placed by such bones (parented, or
carried by a constraint such as *Child Of*: a rider on a horse whose spine is a chain).
Live solving reads those from Blender's evaluated matrices; a pass recomputes only the
bones of the chain's own armature below the chains solved before it, and not even those
where constraints of their own place them (:func:`.own_constraints.reshapes`: a hand
below an arm chain that keeps its world rotation, with a finger chain below it) — a chain
that reads such a bone waits for the evaluation too, as does one whose root's parent
follows another chain through constraints or drivers (a Rigify hand copying its IK
chain's tip, with finger chains below it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import bpy

from . import own_constraints
from .blender_types import ArmatureObject, get_item

if TYPE_CHECKING:
    from .properties import ReachIKBoneSettings

#: A pose bone, named by its armature object and bone.
BoneKey = tuple[str, str]
#: A goal: an object, and a bone name for an armature (``""`` for the object itself).
Goal = tuple[bpy.types.Object, str]


@dataclass(frozen=True)
class ChainGoals:
    """One chain as the checks see it.

    Attributes:
        armature: the armature object (original).
        tip: the tip bone's name (the chain's settings).
        bones: the chain's bone names, root → tip.
        goals: ``(what, object, bone)`` for the target and the pole that are set
            (``what`` is ``"target"`` or ``"pole"``; ``bone`` is ``""`` for an object).
    """

    armature: ArmatureObject
    tip: str
    bones: tuple[str, ...]
    goals: tuple[tuple[str, bpy.types.Object, str], ...]


def _bone_and_above(armature: bpy.types.Object, name: str) -> set[BoneKey]:
    out: set[BoneKey] = set()
    data = armature.data
    bone = get_item(data.bones, name) if isinstance(data, bpy.types.Armature) else None
    while bone is not None:
        out.add((armature.name, bone.name))
        bone = bone.parent
    return out


def goal_dependencies(goal: bpy.types.Object, bone: str) -> set[BoneKey]:
    """The pose bones whose pose places the goal ``goal`` (object) / ``bone`` (module
    docstring)."""
    out: set[BoneKey] = set()
    if bone:
        out |= _bone_and_above(goal, bone)
    obj: bpy.types.Object | None = goal
    seen: set[str] = set()
    while obj is not None and obj.name not in seen:
        seen.add(obj.name)
        parent = obj.parent
        if parent is not None and parent.type == "ARMATURE" and obj.parent_type == "BONE":
            out |= _bone_and_above(parent, obj.parent_bone)
        obj = parent
    return out


def _constraint_targets(constraints: Iterable[bpy.types.Constraint]) -> Iterator[Goal]:
    """The objects (and bones) that ``constraints`` read: every constraint's target and
    sub-target, an IK constraint's pole, an Armature constraint's targets."""
    for con in constraints:
        if con.type == "ARMATURE":
            for t in con.targets:  # type: ignore[attr-defined]
                if t.target is not None:
                    yield t.target, t.subtarget
        for obj_attr, bone_attr in (("target", "subtarget"), ("pole_target", "pole_subtarget")):
            target = getattr(con, obj_attr, None)
            if isinstance(target, bpy.types.Object):
                yield target, str(getattr(con, bone_attr, "") or "")


#: Driver variables that read evaluated transforms, and how many targets each reads.
_TRANSFORM_VARIABLES = {"TRANSFORMS": 1, "LOC_DIFF": 2, "ROTATION_DIFF": 2}
#: A *Single Property* path that reads an evaluated transform.
_EVALUATED_PATH = re.compile(r"\b(matrix\w*|head|tail)\b")
_BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]')


@dataclass
class Reads:
    """What one analysis (:func:`analyse`) reads of the file, each piece made once when
    first asked: the analysis follows every goal up through the same bones, their
    constraints and drivers, again for each chain.

    Attributes:
        drivers: per object (its pointer), its unmuted drivers by the pose bone they drive
            (``""``: the object's own), each with the rest of its F-curve's path after
            ``pose.bones["…"]``.
        placing: per object (its pointer) and bone, :func:`_placing_inputs`.
    """

    drivers: dict[int, dict[str, list[tuple[str, bpy.types.Driver]]]] = field(default_factory=dict)
    placing: dict[tuple[int, str], list[Goal]] = field(default_factory=dict)


def _drivers_of(
    obj: bpy.types.Object, bone: str, reads: Reads | None
) -> list[tuple[str, bpy.types.Driver]]:
    """The drivers of ``obj`` for the pose bone ``bone`` (``""``: its own), from ``reads``
    (filled for ``obj`` when first asked; ``None``: made for this call alone)."""
    key = obj.as_pointer()
    by_bone = reads.drivers.get(key) if reads is not None else None
    if by_bone is None:
        by_bone = {}
        ad = obj.animation_data
        for fc in ad.drivers if ad is not None else ():
            driver = fc.driver
            if fc.mute or driver is None:
                continue
            path = fc.data_path
            driven = _BONE_PATH.match(path)
            owner = "" if driven is None else _unescape(driven.group(1))
            rest = path[driven.end() :] if driven else path
            by_bone.setdefault(owner, []).append((rest, driver))
        if reads is not None:
            reads.drivers[key] = by_bone
    return by_bone.get(bone, [])


def _driver_targets(
    obj: bpy.types.Object,
    bone: str,
    paths: tuple[str, ...] = (),
    reads: Reads | None = None,
) -> Iterator[Goal]:
    """The objects (and bones) whose evaluated transforms the drivers of ``obj`` read
    (module docstring): its own drivers for ``bone`` ``""``, else those of the pose bone
    ``bone`` (paths under ``pose.bones["bone"]``); with ``paths``, only the drivers of
    that bone's properties whose path goes on with one of them (``".reach_ik."``: its
    chain settings). ``reads``: the analysis's :class:`Reads`."""
    for rest, driver in _drivers_of(obj, bone, reads):
        if paths and not (bone and rest.startswith(paths)):
            continue
        for var in driver.variables:
            if var.type == "SINGLE_PROP":
                t = var.targets[0]
                if isinstance(t.id, bpy.types.Object) and _EVALUATED_PATH.search(t.data_path):
                    read = _BONE_PATH.match(t.data_path)
                    yield t.id, "" if read is None else _unescape(read.group(1))
                continue
            for t in list(var.targets)[: _TRANSFORM_VARIABLES.get(var.type, 0)]:
                if isinstance(t.id, bpy.types.Object):
                    yield t.id, t.bone_target if t.id.type == "ARMATURE" else ""


def _unescape(name: str) -> str:
    """A bone name as written inside ``pose.bones["…"]`` (``bpy.utils.escape_identifier``
    undone)."""
    return re.sub(r"\\(.)", r"\1", name)


def _placing_inputs(goal: bpy.types.Object, bone: str, reads: Reads | None = None) -> list[Goal]:
    """What the constraints and drivers on everything that places ``goal``/``bone`` read:
    on the pose bones of :func:`goal_dependencies` and on the goal object with its object
    parents (kept in ``reads`` for the rest of the analysis)."""
    key = (goal.as_pointer(), bone)
    hit = reads.placing.get(key) if reads is not None else None
    if hit is not None:
        return hit
    out: list[Goal] = []
    for name, bone_name in goal_dependencies(goal, bone):
        armature = bpy.data.objects.get(name)
        pose = armature.pose if armature is not None else None
        pose_bone = pose.bones.get(bone_name) if pose is not None else None
        if pose_bone is not None:
            out += _constraint_targets(pose_bone.constraints)
            out += _driver_targets(armature, bone_name, reads=reads)
    obj: bpy.types.Object | None = goal
    seen: set[str] = set()
    while obj is not None and obj.name not in seen:
        seen.add(obj.name)
        out += _constraint_targets(obj.constraints)
        out += _driver_targets(obj, "", reads=reads)
        obj = obj.parent
    if reads is not None:
        reads.placing[key] = out
    return out


def constraint_dependencies(
    goal: bpy.types.Object, bone: str, reads: Reads | None = None
) -> set[BoneKey]:
    """The pose bones a goal depends on through constraints and drivers (module docstring):
    what places each constraint target (or driver variable's target) of the goal and of
    what places it, and so on, following them in turn."""
    out: set[BoneKey] = set()
    seen: set[tuple[str, str]] = set()
    reads = Reads() if reads is None else reads
    stack = list(_placing_inputs(goal, bone, reads))
    while stack:
        obj, sub = stack.pop()
        if (obj.name, sub) in seen:
            continue
        seen.add((obj.name, sub))
        out |= goal_dependencies(obj, sub if obj.type == "ARMATURE" else "")
        stack.extend(_placing_inputs(obj, sub if obj.type == "ARMATURE" else "", reads))
    return out


def _read_targets(
    armature: ArmatureObject, bone: str, paths: tuple[str, ...], reads: Reads | None
) -> Iterator[tuple[Goal, set[BoneKey]]]:
    """What the drivers of ``bone``'s properties under ``paths`` read
    (:func:`_driver_targets`): each variable's target, with every pose bone that places it
    (:func:`goal_dependencies` and :func:`constraint_dependencies`)."""
    for obj, sub in _driver_targets(armature, bone, paths, reads):
        target = sub if obj.type == "ARMATURE" else ""
        yield (
            (obj, target),
            goal_dependencies(obj, target) | constraint_dependencies(obj, target, reads),
        )


def settings_inputs(
    armature: ArmatureObject, tip: str, reads: Reads | None = None
) -> list[tuple[Goal, set[BoneKey]]]:
    """What a chain's own settings read through drivers (an *Influence* or a *Pole Angle*
    driven by a bone's evaluated transform): each driver variable's target, with the pose
    bones that place it, followed through constraints and drivers as
    :func:`constraint_dependencies` follows a goal's."""
    return list(_read_targets(armature, tip, (".reach_ik.",), reads))


def channel_dependencies(
    armature: ArmatureObject, bones: Sequence[str], reads: Reads | None = None
) -> set[BoneKey]:
    """The pose bones that the channels a chain reads of its own bones depend on through
    drivers: the rotations of its bones (the FK pose it blends with at an influence below
    1) and its root's location, driven by a bone's evaluated transform. Live solving reads
    those channels as Blender evaluated them."""
    out: set[BoneKey] = set()
    for k, name in enumerate(bones):
        paths = (".rotation_", ".location") if k == 0 else (".rotation_",)
        for _, deps in _read_targets(armature, name, paths, reads):
            out |= deps
    return out


def children_of(armature: ArmatureObject) -> dict[str, list[str]]:
    """Each bone's children by name (bones without children are left out)."""
    children: dict[str, list[str]] = {}
    for bone in armature.data.bones:
        if bone.parent is not None:
            children.setdefault(bone.parent.name, []).append(bone.name)
    return children


def moved_bones(
    armature: ArmatureObject,
    bones: Iterable[str],
    children: dict[str, list[str]] | None = None,
) -> set[BoneKey]:
    """The chain's bones and every bone below them; ``children`` is the armature's
    :func:`children_of` when the caller has it (one walk over the bones for all chains)."""
    if children is None:
        children = children_of(armature)
    out: set[BoneKey] = set()
    stack = [name for name in bones if name in armature.data.bones]
    while stack:
        name = stack.pop()
        if (armature.name, name) not in out:
            out.add((armature.name, name))
            stack.extend(children.get(name, ()))
    return out


def _label(goal: bpy.types.Object, bone: str) -> str:
    return f"{goal.name}:{bone}" if bone else goal.name


def _self_problem(
    chain: ChainGoals, moved: set[BoneKey], deps: Sequence[tuple[set[BoneKey], set[BoneKey]]]
) -> str:
    """Why ``chain`` reaches for what it moves, or ``""``; ``deps`` holds each goal's
    :func:`goal_dependencies` and :func:`constraint_dependencies`."""
    for (what, goal, bone), (placed, followed) in zip(chain.goals, deps, strict=True):
        hit = placed & moved
        through = followed & moved
        if hit or through:
            _, name = sorted(hit or through)[0]
            how = "is one of its bones" if name in chain.bones else "lies below its bones"
            moves = "is moved by" if hit else "follows, through constraints or drivers,"
            return (
                f"the {what} '{_label(goal, bone)}' {moves} this chain itself (bone "
                f"'{name}' {how}): a feedback loop, so the chain is not solved and shows its "
                f"FK pose; choose a {what} the chain does not move"
            )
    return ""


def _driven_problem(
    chain: ChainGoals, moved: set[BoneKey], driven: Sequence[tuple[Goal, set[BoneKey]]]
) -> str:
    """Why ``chain``'s settings follow what it moves (:func:`settings_inputs`), or ``""``."""
    for (obj, bone), deps in driven:
        hit = deps & moved
        if hit:
            _, name = sorted(hit)[0]
            how = "is one of its bones" if name in chain.bones else "lies below its bones"
            return (
                f"a driver of its settings reads '{_label(obj, bone)}', which follows this "
                f"chain itself (bone '{name}' {how}): a feedback loop, so the chain is not "
                "solved and shows its FK pose; drive its settings from what the chain does "
                "not move"
            )
    return ""


ChainKey = tuple[str, str]


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyse` found.

    Attributes:
        problems: why each refused chain is refused, by ``(armature name, tip)``.
        ranks: for every chain not refused, how many chains must be solved before it (the
            longest path of chains it depends on): solving in increasing rank makes each
            frame's pose independent of the previous evaluation.
        evaluated: the chains that read, as Blender evaluated them, bones another chain
            moves (module docstring): through constraints or drivers, or a goal that is an
            object or another armature's bone placed by them, or an armature object placed
            by them; right only after Blender evaluated that chain's new pose.
    """

    problems: dict[ChainKey, str]
    ranks: dict[ChainKey, int]
    evaluated: frozenset[ChainKey] = frozenset()


def problems(chains: Sequence[ChainGoals]) -> dict[ChainKey, str]:
    """Why each refused chain is refused, by ``(armature name, tip)`` (module docstring);
    chains not mentioned are fine."""
    return analyse(chains).problems


def analyse(chains: Sequence[ChainGoals]) -> Analysis:
    """Refused chains and the order of the others (see :class:`Analysis`)."""
    children: dict[str, dict[str, list[str]]] = {}  # per armature, walked once
    moved = {}
    for c in chains:
        tree = children.get(c.armature.name)
        if tree is None:
            tree = children[c.armature.name] = children_of(c.armature)
        moved[(c.armature.name, c.tip)] = moved_bones(c.armature, c.bones, tree)
    out: dict[tuple[str, str], str] = {}
    reads = Reads()  # (what places each goal, followed once for all the chains)
    needs: dict[tuple[str, str], set[BoneKey]] = {}
    through: dict[ChainKey, set[BoneKey]] = {}
    for c in chains:
        key = (c.armature.name, c.tip)
        per_goal = [
            (goal_dependencies(goal, bone), constraint_dependencies(goal, bone, reads))
            for _, goal, bone in c.goals
        ]
        message = _self_problem(c, moved[key], per_goal)
        driven = settings_inputs(c.armature, c.tip, reads)
        message = message or _driven_problem(c, moved[key], driven)
        if message:
            out[key] = message
        deps: set[BoneKey] = set().union(*(placed for placed, _ in per_goal))
        # What places the armature object: its bone parents, constraints and drivers.
        placing = goal_dependencies(c.armature, "") | constraint_dependencies(c.armature, "", reads)
        through[key] = set().union(
            placing,
            *(deps_ for _, deps_ in driven),
            channel_dependencies(c.armature, c.bones, reads),
            *(followed for _, followed in per_goal),
            *(_read_evaluated(c.armature, goal, bone) for _, goal, bone in c.goals),
        )
        root = get_item(c.armature.data.bones, c.bones[0]) if c.bones else None
        recomputed: set[BoneKey] = set()  # own bones a pass recomputes (.pose_state)
        if root is not None and root.parent is not None:
            recomputed |= _bone_and_above(c.armature, root.parent.name)
            # (and what the constraints and drivers on those read: a Rigify hand copies
            # its IK chain's tip)
            through[key] |= constraint_dependencies(c.armature, root.parent.name, reads)
        for _, goal, bone in c.goals:
            if bone and goal == c.armature:
                recomputed |= _bone_and_above(goal, bone)
        deps |= recomputed
        through[key] |= _reshaped(c.armature, recomputed)
        needs[key] = deps | through[key]
    # Edges: a chain depends on another when what it reads is moved by that one.
    edges = {a: {b for b in moved if b != a and needs[a] & moved[b]} for a in needs}
    for start in edges:
        if start in out:
            continue
        path = _cycle_through(start, edges)
        if path:
            others = ", ".join(f"'{tip}'" for _, tip in path[1:])
            out[start] = (
                f"its target or pole depends on chain(s) {others}, which depend back on this "
                "chain: a feedback loop, so the chain is not solved and shows its FK pose; "
                "break the loop"
            )
    ranks: dict[ChainKey, int] = {}

    def rank(key: ChainKey) -> int:
        if key not in ranks:
            ranks[key] = 0  # guards against cycles among chains left (none: refused)
            ranks[key] = max((rank(b) + 1 for b in edges[key] if b not in out), default=0)
        return ranks[key]

    for key in edges:
        if key not in out:
            rank(key)
    evaluated = frozenset(
        a for a in needs if a not in out and any(through[a] & moved[b] for b in moved if b != a)
    )
    return Analysis(out, {k: v for k, v in ranks.items() if k not in out}, evaluated)


def _read_evaluated(armature: ArmatureObject, goal: bpy.types.Object, bone: str) -> set[BoneKey]:
    """The bones placing a goal (:func:`goal_dependencies`) whose pose live solving reads
    as Blender evaluated it: all of them but, for a bone of the chain's own armature, that
    bone and those above it, which a pass recomputes from the chains solved before
    (:class:`.pose_state._PoseState`). An object or another armature's bone is read from
    its evaluated matrix."""
    deps = goal_dependencies(goal, bone)
    if bone and goal == armature:
        deps -= _bone_and_above(goal, bone)
    return deps


def _reshaped(armature: ArmatureObject, bones: set[BoneKey]) -> set[BoneKey]:
    """Those of ``bones`` (of ``armature``) that constraints of their own place
    (:func:`.own_constraints.reshapes`): a pass cannot recompute them below a chain solved
    before, it reads Blender's evaluation."""
    pose = armature.pose
    out: set[BoneKey] = set()
    for key in bones:
        pose_bone = pose.bones.get(key[1]) if pose is not None else None
        if pose_bone is not None and own_constraints.reshapes(pose_bone):
            out.add(key)
    return out


def _cycle_through(
    start: tuple[str, str], edges: dict[tuple[str, str], set[tuple[str, str]]]
) -> list[tuple[str, str]]:
    """A path ``start → … → start`` (without the final repeat), or ``[]``."""
    stack = [(start, [start])]
    seen: set[ChainKey] = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                return path
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return []


def chain_goals(
    armature: ArmatureObject, tip: str, bones: Sequence[str], settings: ReachIKBoneSettings
) -> ChainGoals:
    """A :class:`ChainGoals` from a chain's settings (``pose_bone.reach_ik``)."""
    goals = []
    for what, goal, bone in (
        ("target", settings.target, settings.target_bone),
        ("pole", settings.pole, settings.pole_bone),
    ):
        if goal is not None:
            goals.append((what, goal, bone if goal.type == "ARMATURE" else ""))
    return ChainGoals(armature, tip, tuple(bones), tuple(goals))
