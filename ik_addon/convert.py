# SPDX-License-Identifier: GPL-3.0-or-later
"""Convert IK: Blender IK constraints ↔ Reach IK chains, keeping what the rig showed.

:func:`to_reach` turns the IK constraints of one pose bone into that bone's chain;
:func:`to_blender` turns a chain back. What is carried (target and bone, pole and bone, pole
angle — see :mod:`.rig` —, chain count, iterations, tail, influence, rotation, weights) is
listed in ``docs/addon.md``. Beyond plain values, what a production rig (Rigify) wires up:

* **driven** ``mute`` and ``influence``: the chain follows the same driver — the driver is
  copied (type, expression, variables and their targets, curve keyframes and modifiers,
  :mod:`.drivers`) onto the chain's ``enabled`` (inverted: enabled = not muted) and
  ``influence``;
* **a pole switch**: two IK constraints on one bone, the same target and chain, one with
  a pole and one without, whose ``mute`` drivers read the same inputs and mute exactly one
  of them (Rigify's ``pole_vector``), become ONE chain with the pole, whose ``use_pole``
  carries the no-pole constraint's mute driver (the pole is used while that constraint
  would be muted);
* **the source is kept muted, with a record**, whenever drivers or keyframes are on it (its
  animation is never deleted) and with *Keep Source*: each constraint is muted and its
  drivers (and keyframed ``mute`` curves) muted (so they cannot unmute it), and the chain's
  ``source`` setting records which constraints, their ``mute`` values and which curves
  were muted. Converting back
  restores exactly those constraints, values and drivers (with the chain's current target,
  chain and pole settings) and deletes the chain and the drivers copied onto it. A source
  with no animation and no *Keep Source* is deleted, as before (so no driver is ever left
  pointing at a deleted constraint).

*Stretch* (``use_stretch``) becomes the chain's *Stretch*, with *Stretch As* Blender's IK
(the lengths Blender's iteration gives, :mod:`core.blender_stretch`); the bones' *IK
Stretch* stays on the bones, where the chain reads it (:mod:`.rig`); converting back sets
the constraint's *Stretch* from the chain's.

What cannot be carried is never dropped silently: each item is named in the result's
``not_carried`` (the operator reports them): an animated (driven or keyframed) *IK
Stretch* on a chain bone, constraints of a pole switch that disagree on *Stretch*, the
iTaSC solver's settings, keyframed constraint settings, drivers on other settings, a
driver curve that cannot be inverted, further IK constraints on the same bone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import bpy

from . import drivers
from .blender_types import ArmatureObject, ChainBone, get_item
from .chain_spec import default_method
from .rig import RigError, chain_bones, pole_angle_from_blender, pole_angle_to_blender

if TYPE_CHECKING:
    from .properties import ReachIKBoneSettings

#: Format version of the ``source`` record.
RECORD_VERSION = 1

#: Blender's IK constraint.
IKConstraint = bpy.types.KinematicConstraint


@dataclass
class ConvertResult:
    """What one Convert IK run did: the tips converted, why others were skipped, and what
    could not be carried (each entry names the bone and the setting)."""

    converted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    not_carried: list[str] = field(default_factory=list)

    def message(self, kind: str) -> str:
        text = f"Converted {len(self.converted)} to {kind}s"
        if self.converted:
            text += f" ({', '.join(self.converted)})"
        if self.skipped:
            text += f"; skipped {len(self.skipped)}: " + "; ".join(self.skipped)
        if self.not_carried:
            text += f"; not carried {len(self.not_carried)}: " + "; ".join(self.not_carried)
        return text


#: The last run's result (for scripts and tests; the operator also reports it).
last_result = ConvertResult()


def _path(con: bpy.types.Constraint) -> str:
    return str(con.path_from_id())


def _driver(obj: ArmatureObject, con: bpy.types.Constraint, prop: str) -> bpy.types.FCurve | None:
    return drivers.find(obj, f"{_path(con)}.{prop}")


def _same_inputs(a: bpy.types.FCurve, b: bpy.types.FCurve) -> bool:
    """Two drivers read the same inputs the same way (their curves may differ)."""
    da, db = a.driver, b.driver
    if da is None or db is None:  # not driver curves: no inputs to compare
        return False

    def key(d: bpy.types.Driver) -> tuple[object, ...]:
        return (
            d.type,
            d.expression,
            tuple(
                (v.name, v.type, tuple((t.id, t.data_path, t.bone_target) for t in v.targets))
                for v in d.variables
            ),
        )

    return key(da) == key(db)


def _pole_switch(
    obj: ArmatureObject, cons: list[IKConstraint]
) -> tuple[IKConstraint, IKConstraint] | None:
    """``(no-pole constraint, pole constraint)`` when ``cons`` is a pole switch (module
    docstring), else ``None``. Complementary: for driver values 0 and 1 exactly one of the
    two mute curves mutes."""
    if len(cons) != 2:
        return None
    plain, poled = sorted(cons, key=lambda c: c.pole_target is not None)
    if plain.pole_target is not None or poled.pole_target is None:
        return None
    same = ("target", "subtarget", "chain_count", "use_tail", "ik_type")
    if any(getattr(plain, a) != getattr(poled, a) for a in same):
        return None
    fa, fb = _driver(obj, plain, "mute"), _driver(obj, poled, "mute")
    if fa is None or fb is None or not _same_inputs(fa, fb):
        return None
    for x in (0.0, 1.0):
        if (fa.evaluate(x) >= 0.5) == (fb.evaluate(x) >= 0.5):
            return None
    return plain, poled


def _keyed(obj: ArmatureObject, prefix: str) -> list[bpy.types.FCurve]:
    """Keyframed (not driven) F-curves of ``obj`` under ``prefix``, by path (a legacy
    action's, or every channelbag of a layered action's)."""
    ad = obj.animation_data
    action = getattr(ad, "action", None) if ad is not None else None
    if action is None:
        return []
    curves: list[bpy.types.FCurve] = list(getattr(action, "fcurves", ()) or ())
    for layer in getattr(action, "layers", ()):
        for strip in layer.strips:
            for bag in getattr(strip, "channelbags", ()):
                curves.extend(bag.fcurves)
    found = [fc for fc in curves if fc.data_path.startswith((prefix + ".", prefix + "["))]
    return sorted(found, key=lambda fc: (fc.data_path, fc.array_index))


def _set_keys_muted(obj: ArmatureObject, paths: list[str], muted: bool) -> None:
    """Mute (or unmute) the keyframed F-curves of ``obj`` on these paths."""
    wanted = set(paths)
    for fc in _keyed(obj, "pose"):
        if fc.data_path in wanted:
            fc.mute = muted


def _stretch_gaps(
    obj: ArmatureObject, pb: ChainBone, members: list[IKConstraint], names: tuple[str, ...]
) -> list[str]:
    """What of the constraints' stretch the chain cannot carry: constraints that disagree
    on *Stretch* (the chain takes the pole constraint's), and an animated *IK Stretch* on a
    chain bone (the chain reads it when the rig changes, not per frame)."""
    out = []
    if len({bool(c.use_stretch) for c in members}) > 1:
        out.append(f"'{pb.name}': Stretch differs between {', '.join(c.name for c in members)}")
    for name in names:
        path = obj.pose.bones[name].path_from_id("ik_stretch")
        if drivers.find(obj, path) is not None or any(
            fc.data_path == path for fc in _keyed(obj, "pose")
        ):
            out.append(f"'{name}': animated IK Stretch (read when the rig changes)")
    return out


def _check(obj: ArmatureObject, pb: ChainBone, con: IKConstraint) -> tuple[tuple[str, ...], str]:
    """The chain's bone names, or why the constraint cannot be converted."""
    if con.ik_type != "COPY_POSE":
        return (), f"'{pb.name}': only Standard IK (not Distance) converts"
    if con.target is None:
        return (), f"'{pb.name}': the IK constraint has no target"
    use_tail = bool(con.use_tail)
    length = con.chain_count or _full_length(obj, pb.name, use_tail)
    try:
        return chain_bones(obj, pb.name, length, use_tail), ""
    except RigError as exc:
        return (), f"'{pb.name}': {exc}"


def _full_length(obj: ArmatureObject, tip: str, use_tail: bool) -> int:
    tip_bone = obj.data.bones[tip]
    bone: bpy.types.Bone | None = tip_bone if use_tail else tip_bone.parent
    count = 0
    while bone is not None:
        count += 1
        bone = bone.parent
    return count


def to_reach(
    obj: ArmatureObject, pb: ChainBone, keep_source: bool, solver: str, result: ConvertResult
) -> None:
    """Convert the IK constraints of ``pb`` (those not muted, or whose mute is driven) into
    its chain; adds to ``result``."""
    cons = [
        c
        for c in pb.constraints
        if isinstance(c, IKConstraint) and (not c.mute or _driver(obj, c, "mute") is not None)
    ]
    if not cons:
        return
    s = pb.reach_ik
    if s.has_chain:
        result.skipped.append(f"'{pb.name}' already has a Reach IK chain")
        return
    switch = _pole_switch(obj, cons)
    if switch is not None:
        members = list(switch)
        main = switch[1]
    else:
        main = next((c for c in cons if not c.mute), cons[0])
        members = [main]
        for other in cons:
            if other is not main:
                result.not_carried.append(
                    f"'{pb.name}': IK constraint '{other.name}' (one chain per bone; "
                    f"'{main.name}' converted)"
                )
    names, why = _check(obj, pb, main)
    if why:
        result.skipped.append(why)
        return
    missing = result.not_carried
    _set_values(obj, pb, main, members, names, solver)
    if switch is not None:
        _carry(obj, s, "use_pole", _driver(obj, switch[0], "mute"), False, pb, missing)
    else:
        _carry(obj, s, "enabled", _driver(obj, main, "mute"), True, pb, missing)
    _carry(obj, s, "influence", _driver(obj, main, "influence"), False, pb, missing)
    if switch is not None and not _same_influence(obj, *switch):
        missing.append(f"'{pb.name}': the influence of '{switch[0].name}' (not the pole's)")
    handled = {"mute", "influence"}
    recorded_drivers: list[str] = []
    muted_keys: list[str] = []
    animated = False
    for con in members:
        path = _path(con)
        for fc in drivers.under(obj, path):
            recorded_drivers.append(fc.data_path)
            prop = fc.data_path[len(path) + 1 :]
            if prop not in handled:
                missing.append(f"'{pb.name}': driven '{prop}' of '{con.name}'")
        for fc in _keyed(obj, path):
            animated = True
            if fc.data_path.endswith(".mute"):
                muted_keys.append(fc.data_path)  # or the keys would run Blender's IK again
            missing.append(
                f"'{pb.name}': keyframed '{fc.data_path[len(path) + 1 :]}' of '{con.name}'"
            )
    missing.extend(_stretch_gaps(obj, pb, members, names))
    if obj.pose.ik_solver == "ITASC":
        missing.append(f"'{pb.name}': the iTaSC solver's settings (Reach IK solves on its own)")
    if keep_source or recorded_drivers or animated:
        record = {
            "version": RECORD_VERSION,
            "constraints": [
                {"name": c.name, "mute": bool(c.mute), "pole": c.pole_target is not None}
                for c in members
            ],
            "drivers": recorded_drivers,
            "keys": muted_keys,
        }
        drivers.set_muted(obj, recorded_drivers, True)
        _set_keys_muted(obj, muted_keys, True)
        for con in members:
            con.mute = True
        s.source = json.dumps(record)
    else:
        for con in members:
            drivers.remove(obj, _path(con))
            pb.constraints.remove(con)
    s.has_chain = True
    result.converted.append(pb.name)


def _same_influence(obj: ArmatureObject, a: IKConstraint, b: IKConstraint) -> bool:
    fa, fb = _driver(obj, a, "influence"), _driver(obj, b, "influence")
    if fa is None and fb is None:
        return abs(a.influence - b.influence) < 1e-6
    return fa is not None and fb is not None and _same_inputs(fa, fb)


def park(obj: ArmatureObject, pb: ChainBone) -> None:
    """Disable the chain of ``pb`` for good (*Keep Source* after converting back): its
    drivers are muted, or they could enable it again."""
    prefix = chain_driver_paths(pb)
    drivers.set_muted(obj, [fc.data_path for fc in drivers.under(obj, prefix)], True)
    pb.reach_ik.enabled = False


def _set_values(
    obj: ArmatureObject,
    pb: ChainBone,
    main: IKConstraint,
    members: list[IKConstraint],
    names: tuple[str, ...],
    solver: str,
) -> None:
    s = pb.reach_ik
    use_tail = bool(main.use_tail)
    s.chain_length = len(names)
    s.use_tail = use_tail
    s.target = main.target
    s.target_bone = main.subtarget
    s.pole = main.pole_target
    s.pole_bone = main.pole_subtarget if main.pole_target is not None else ""
    s.pole_angle = pole_angle_from_blender(obj, names, main.pole_angle) if main.pole_target else 0.0
    s.use_pole = True
    s.iterations = max(max(int(c.iterations) for c in members), 1)
    s.influence = main.influence
    s.use_rotation = bool(main.use_rotation)
    s.use_stretch = bool(main.use_stretch)
    s.stretch_rule = "blender"
    weight = main.weight if main.use_location else 0.0
    total = weight + main.orient_weight
    s.orient_weight = main.orient_weight / total if total > 0.0 else 0.5
    if solver:
        s.solver = default_method(len(names)) if solver == "AUTO" else solver
    s.enabled = True


def _carry(
    obj: ArmatureObject,
    s: ReachIKBoneSettings,
    prop: str,
    fc: bpy.types.FCurve | None,
    invert: bool,
    pb: ChainBone,
    missing: list[str],
) -> None:
    """Copy the driver ``fc`` (if any) onto the chain setting ``prop``."""
    if fc is None:
        return
    try:
        drivers.copy(obj, fc, f"{chain_driver_paths(pb)}.{prop}", invert=invert)
    except drivers.DriverError as exc:
        missing.append(f"'{pb.name}': the driver of '{fc.data_path}' ({exc})")


def chain_driver_paths(pb: ChainBone) -> str:
    """The path prefix of the chain settings of ``pb`` (their drivers live under it)."""
    return f"{pb.path_from_id()}.reach_ik"


def _record(s: ReachIKBoneSettings) -> dict[str, Any] | None:
    if not s.source:
        return None
    try:
        record = json.loads(s.source)
    except ValueError:
        return None
    return record if isinstance(record, dict) and record.get("version") == RECORD_VERSION else None


def to_blender(
    obj: ArmatureObject, pb: ChainBone, keep_source: bool, result: ConvertResult
) -> bool:
    """Turn the chain of ``pb`` into IK constraints: the recorded source constraints when
    there are, else a new (or a muted, undriven) one. Returns whether it did; a chain that
    cannot be converted adds its reason to ``result.skipped``."""
    s = pb.reach_ik
    if s.target is None:
        result.skipped.append(f"'{pb.name}': the chain has no target")
        return False
    try:
        names = chain_bones(obj, pb.name, s.chain_length, s.use_tail)
    except RigError as exc:
        result.skipped.append(f"'{pb.name}': {exc}")
        return False
    record = _record(s)
    entries = record["constraints"] if record else []
    recorded = [get_item(pb.constraints, e["name"]) for e in entries]
    sources = [c for c in recorded if isinstance(c, IKConstraint)]
    if entries and len(sources) == len(entries):
        for entry, con in zip(entries, sources, strict=True):
            _write_constraint(obj, s, con, names, entry["pole"])
            if drivers.find(obj, f"{_path(con)}.influence") is None:
                con.influence = s.influence
            con.mute = bool(entry["mute"])
        drivers.set_muted(obj, list(record["drivers"]) if record else [], False)
        _set_keys_muted(obj, list(record.get("keys", ())) if record else [], False)
    else:
        spare = next(
            (
                c
                for c in pb.constraints
                if isinstance(c, IKConstraint) and c.mute and not drivers.under(obj, _path(c))
            ),
            None,
        )
        if spare is None:
            new = pb.constraints.new("IK")
            assert isinstance(new, IKConstraint)  # what new() makes of the type
            spare = new
        con = spare
        _write_constraint(obj, s, con, names, True)
        con.influence = s.influence
        con.mute = False
        prefix = chain_driver_paths(pb)
        for prop, invert in (("influence", False), ("enabled", True)):
            fc = drivers.find(obj, f"{prefix}.{prop}")
            if fc is not None:
                target = "mute" if prop == "enabled" else prop
                try:
                    drivers.copy(obj, fc, f"{_path(con)}.{target}", invert=invert)
                except drivers.DriverError as exc:
                    result.not_carried.append(f"'{pb.name}': the driver of '{prop}' ({exc})")
        if drivers.find(obj, f"{prefix}.use_pole") is not None:
            result.not_carried.append(f"'{pb.name}': the driver of 'use_pole'")
    result.converted.append(pb.name)
    return True


def _write_constraint(
    obj: ArmatureObject,
    s: ReachIKBoneSettings,
    con: IKConstraint,
    names: tuple[str, ...],
    pole: bool,
) -> None:
    con.target = s.target
    con.subtarget = s.target_bone
    if pole:
        con.pole_target = s.pole
        if s.pole is not None:
            con.pole_subtarget = s.pole_bone
            con.pole_angle = pole_angle_to_blender(obj, names, s.pole_angle)
    con.chain_count = s.chain_length
    con.use_tail = s.use_tail
    con.iterations = s.iterations
    con.use_rotation = s.use_rotation
    con.use_stretch = s.use_stretch
    con.use_location = True
    w = s.orient_weight
    con.weight = 1.0 if w <= 0.5 else max((1.0 - w) / w, 0.01)
    con.orient_weight = max(w / (1.0 - w), 0.01) if w <= 0.5 else 1.0


__all__ = [
    "ConvertResult",
    "chain_driver_paths",
    "last_result",
    "park",
    "to_blender",
    "to_reach",
]
