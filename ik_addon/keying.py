# SPDX-License-Identifier: GPL-3.0-or-later
"""Writing baked bone rotations (and a stretching chain's scales) into an action's
F-curves, in bulk.

Conventions:

* ``frames`` ``(F,)``: scene frames of the baked samples, strictly increasing.
* ``rotations`` ``(F, 4)``: unit quaternions wxyz, one per frame — the pose bone's *basis*
  rotation (what ``pose_bone.rotation_quaternion`` holds: relative to the bone's rest frame,
  in the bone's local space).
* Only the rotation channels that match each bone's ``rotation_mode`` are written:
  ``rotation_quaternion`` (w, x, y, z), ``rotation_axis_angle`` (angle, x, y, z) or
  ``rotation_euler`` (x, y, z radians, in the bone's Euler order).

Continuity follows Blender's own bake (``bpy_extras.anim_utils.bake_action_iter``): each
quaternion takes the sign closest to the previous frame's (``Quaternion.make_compatible``),
each Euler triple the equivalent closest to the previous one (``Matrix.to_euler(order,
compat)``: both Euler solutions, each wrapped by whole turns to within π of the previous,
the closer one kept). The first baked frame continues from the key just before the range
(or, when there is none, the last one continues into the key just after it).

Non-destructive: in every written F-curve the keys inside ``[frame_start, frame_end]`` are
replaced by the baked keys and every key outside keeps all its attributes (frame, value,
handles, handle types, interpolation, easing, key type, selection). Other F-curves are not
touched. Keys are added with ``keyframe_points.add`` and filled with ``foreach_set``, never
one ``keyframe_insert`` per key. Baked keys use linear interpolation, like Blender's bake,
so the action plays back exactly the baked value at every baked frame; keys chosen by key
reduction (:mod:`.key_reduction`) are Bézier keys with free handles at the thirds
(:func:`reduced_handles`).

Works with the legacy actions of Blender 4.2/4.3 (``action.fcurves``) and with the layered,
slotted actions of 4.4+ (the assigned slot's channelbag in the first layer's keyframe strip).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np
from numpy.typing import NDArray

from ..core import rotations as rot
from ..core.rotations import FloatArray
from .blender_types import ArmatureObject, ChainBone

#: Keys closer than this (frames) to the range's ends count as inside it.
FRAME_EPSILON = 1e-3

_LAYERED_ACTIONS = bpy.app.version >= (4, 4, 0)

_EULER_MODES = frozenset(rot.EULER_ORDERS)


def _enum_value(prop: str, item: str) -> int:
    rna: Any = bpy.types.Keyframe.bl_rna.properties[prop]
    return int(rna.enum_items[item].value)


# Every per-key attribute of a ``Keyframe`` as (name, values per key, numpy dtype).
_KEY_ATTRIBUTES: tuple[tuple[str, int, type], ...] = (
    ("co", 2, np.float32),
    ("handle_left", 2, np.float32),
    ("handle_right", 2, np.float32),
    ("interpolation", 1, np.int32),
    ("handle_left_type", 1, np.int32),
    ("handle_right_type", 1, np.int32),
    ("easing", 1, np.int32),
    ("type", 1, np.int32),
    ("back", 1, np.float32),
    ("amplitude", 1, np.float32),
    ("period", 1, np.float32),
    ("select_control_point", 1, np.bool_),
    ("select_left_handle", 1, np.bool_),
    ("select_right_handle", 1, np.bool_),
)


def rotation_path(rotation_mode: str) -> tuple[str, int]:
    """The pose-bone property and channel count keyed for ``rotation_mode``."""
    if rotation_mode == "QUATERNION":
        return "rotation_quaternion", 4
    if rotation_mode == "AXIS_ANGLE":
        return "rotation_axis_angle", 4
    if rotation_mode in _EULER_MODES:
        return "rotation_euler", 3
    raise ValueError(
        f"unknown rotation mode {rotation_mode!r}; valid modes are QUATERNION, AXIS_ANGLE, "
        f"{', '.join(rot.EULER_ORDERS)}"
    )


# --------------------------------------------------------------------------------------------
# Continuity (pure numpy)


def quaternion_continuous(q: FloatArray, previous: FloatArray | None = None) -> FloatArray:
    """``q (F, 4)`` with signs flipped so that consecutive quaternions have ``dot >= 0``.

    ``previous (4,)`` is the value before the first frame (its sign decides the first
    quaternion's); without it the first quaternion gets ``w >= 0``.
    """
    q = np.asarray(q, dtype=np.float64)
    if q.shape[0] == 0:
        return q.copy()
    step = np.ones(q.shape[0])
    step[1:] = np.where(np.sum(q[1:] * q[:-1], axis=-1) < 0.0, -1.0, 1.0)
    first = q[0, 0] if previous is None else float(np.dot(q[0], previous))
    if first < 0.0:
        step[0] = -1.0
    return q * np.cumprod(step)[:, None]


def _euler_alternative(e: FloatArray, order: str) -> FloatArray:
    """The other Euler triple ``(..., 3)`` (x, y, z) of the same rotation as ``e``.

    For ``R = R_k(c) R_j(b) R_i(a)`` (``order`` = i j k) the other solution is
    ``(a + π, π − b, c + π)`` up to whole turns.
    """
    i, j, k = ("XYZ".index(axis) for axis in order)
    alt = np.array(e, dtype=np.float64, copy=True)
    alt[..., i] += np.pi
    alt[..., j] = np.pi - alt[..., j]
    alt[..., k] += np.pi
    return alt


def _wrap_towards(e: FloatArray, old: FloatArray) -> FloatArray:
    """``e (..., 3)`` with each angle moved by whole turns to within π of ``old``.

    Blender's ``compatible_eul``: only differences beyond π are wrapped.
    """
    d = e - old
    turns = np.where(np.abs(d) > np.pi, np.floor(np.abs(d) / (2.0 * np.pi) + 0.5), 0.0)
    return e - np.sign(d) * turns * 2.0 * np.pi


def euler_continuous(
    q: FloatArray, order: str, previous: FloatArray | None = None, *, backwards: bool = False
) -> FloatArray:
    """Euler angles ``(F, 3)`` (x, y, z radians) of ``q (F, 4)``, each close to its neighbour.

    Frame by frame, both Euler solutions are wrapped towards the previous triple and the
    one with the smaller summed difference is kept (Blender's ``Matrix.to_euler(order,
    compat)``). ``previous (3,)`` seeds the first frame (the last one when ``backwards``,
    which walks from the end towards the start); without a seed the first frame takes the
    solution with the smaller summed magnitude, as Blender's ``to_euler`` does.
    """
    e1 = rot.to_euler(q, order)
    e2 = _euler_alternative(e1, order)
    e2 = (e2 + np.pi) % (2.0 * np.pi) - np.pi
    count = e1.shape[0]
    out = np.empty_like(e1)
    indices = range(count - 1, -1, -1) if backwards else range(count)
    old = None if previous is None else np.asarray(previous, dtype=np.float64)
    for f in indices:
        if old is None:
            pick = e2[f] if np.sum(np.abs(e1[f])) > np.sum(np.abs(e2[f])) else e1[f]
        else:
            a = _wrap_towards(e1[f], old)
            b = _wrap_towards(e2[f], old)
            pick = b if np.sum(np.abs(a - old)) > np.sum(np.abs(b - old)) else a
        out[f] = pick
        old = pick
    return out


def axis_angle_continuous(q: FloatArray, previous: FloatArray | None = None) -> FloatArray:
    """Blender axis–angle ``(F, 4)`` = (angle, x, y, z) of ``q (F, 4)``, continuous.

    The quaternions are made sign-continuous first (``previous`` is an axis–angle value
    ``(4,)`` before the first frame), so the angle runs continuously through ``[0, 2π]``.
    Where the angle is zero the axis is undefined: it keeps the neighbouring axis
    (Blender's default +Y when there is none).
    """
    seed = None
    if previous is not None:
        p = np.asarray(previous, dtype=np.float64)
        seed = rot.from_axis_angle(p[1:], p[0]) if np.linalg.norm(p[1:]) > 0 else None
    q = quaternion_continuous(q, seed)
    sin_half = np.linalg.norm(q[:, 1:], axis=-1)
    angle = 2.0 * np.arctan2(sin_half, q[:, 0])
    defined = sin_half > 1e-12
    axis = np.divide(
        q[:, 1:], sin_half[:, None], out=np.zeros_like(q[:, 1:]), where=defined[:, None]
    )
    if not np.all(defined):
        idx = np.where(defined, np.arange(len(q)), -1)
        np.maximum.accumulate(idx, out=idx)
        fallback = np.array([0.0, 1.0, 0.0])
        if seed is not None:
            fallback = np.asarray(previous, dtype=np.float64)[1:]
            fallback = fallback / np.linalg.norm(fallback)
        axis = np.where(idx[:, None] >= 0, axis[np.maximum(idx, 0)], fallback)
    return np.concatenate([angle[:, None], axis], axis=-1)


def channel_values(
    rotation_mode: str,
    q: FloatArray,
    before: FloatArray | None = None,
    after: FloatArray | None = None,
) -> FloatArray:
    """Channel values ``(F, k)`` for ``rotation_mode`` of basis rotations ``q (F, 4)``.

    ``before``/``after`` ``(k,)`` are the channel values of the kept keys just before and
    just after the baked range (``None`` when there is none); the baked values continue
    from ``before``, or lead into ``after`` when there is nothing before.
    """
    if rotation_mode == "QUATERNION":
        out = quaternion_continuous(q, before)
        if before is None and after is not None and float(np.dot(out[-1], after)) < 0.0:
            out = -out
        return out
    if rotation_mode == "AXIS_ANGLE":
        return axis_angle_continuous(q, before)
    if before is None and after is not None:
        return euler_continuous(q, rotation_mode, after, backwards=True)
    return euler_continuous(q, rotation_mode, before)


# --------------------------------------------------------------------------------------------
# Actions, slots and F-curves


class Channels:
    """Where an object's F-curves live: a legacy action or the assigned slot's channelbag."""

    def __init__(self, obj: Any) -> None:
        adt = obj.animation_data
        self.action = adt.action
        if _LAYERED_ACTIONS:
            slot = adt.action_slot
            layer = self.action.layers[0] if self.action.layers else None
            if layer is None:
                layer = self.action.layers.new("Layer")
            strip = layer.strips[0] if layer.strips else None
            if strip is None:
                strip = layer.strips.new(type="KEYFRAME")
            self._bag: Any = strip.channelbag(slot, ensure=True)
        else:
            self._bag = self.action

    def find(self, data_path: str, index: int) -> Any:
        return self._bag.fcurves.find(data_path, index=index)

    def new(self, data_path: str, index: int, group: str) -> Any:
        if not _LAYERED_ACTIONS:
            return self._bag.fcurves.new(data_path, index=index, action_group=group)
        try:
            return self._bag.fcurves.new(data_path, index=index, group_name=group)
        except TypeError:
            fcurve = self._bag.fcurves.new(data_path, index=index)
            groups = self._bag.groups
            fcurve.group = groups.get(group) or groups.new(group)
            return fcurve


def _new_action_name(obj: ArmatureObject) -> str:
    return f"{obj.name}_ReachIK_bake"


def action_users(action: bpy.types.Action) -> list[str]:
    """Names of the objects that use ``action``: as their assigned action or in an NLA strip."""
    users = []
    for obj in bpy.data.objects:
        adt = obj.animation_data
        if adt is None:
            continue
        strips = (strip for track in adt.nla_tracks for strip in track.strips)
        if adt.action == action or any(strip.action == action for strip in strips):
            users.append(obj.name)
    return users


@dataclass(frozen=True)
class PreparedAction:
    """The action a bake keys into.

    Attributes:
        action: the action keyed.
        original: the name of the action that was assigned before, when the bake keys a
            new one (kept, with a fake user so that it survives save and reopen); ``""``
            when the bake keys the assigned action itself or there was none.
        shared_with: other objects that use the original action, when that is why a new
            action was made (a shared action is not overwritten unless asked).
    """

    action: bpy.types.Action
    original: str = ""
    shared_with: tuple[str, ...] = ()


def prepare_action(obj: Any, into: str, overwrite_shared: bool = False) -> PreparedAction:
    """Make sure ``obj`` has the action (and slot) to bake into, and return it.

    ``into``: ``"CURRENT"`` keys into the assigned action (a new one when there is none);
    ``"NEW"`` assigns a copy of the current action (or an empty one). An assigned action
    that other objects use too (as their action or in NLA strips) is copied as with
    ``"NEW"`` unless ``overwrite_shared``, as Blender's own bake does. Whenever a copy is
    made, the original gets a fake user so that it stays in the file as it was.
    """
    if into not in ("CURRENT", "NEW"):
        raise ValueError(f"into must be 'CURRENT' or 'NEW', got {into!r}")
    adt = obj.animation_data or obj.animation_data_create()
    current = adt.action
    slot_identifier = adt.action_slot.identifier if _LAYERED_ACTIONS and adt.action_slot else ""
    shared: tuple[str, ...] = ()
    if current is not None and into == "CURRENT" and not overwrite_shared:
        shared = tuple(name for name in action_users(current) if name != obj.name)
    original = ""
    if into == "CURRENT" and current is not None and not shared:
        action = current
    elif current is not None:
        current.use_fake_user = True
        original = current.name
        action = current.copy()
        action.name = _new_action_name(obj)
    else:
        action = bpy.data.actions.new(_new_action_name(obj))
    if adt.action != action:
        adt.action = action
    if _LAYERED_ACTIONS and adt.action_slot is None:
        slot = next((s for s in action.slots if s.identifier == slot_identifier), None)
        if slot is None:
            slot = next(
                (s for s in action.slots if s.target_id_type in ("OBJECT", "UNSPECIFIED")), None
            )
        if slot is None:
            slot = action.slots.new("OBJECT", obj.name)
        adt.action_slot = slot
    return PreparedAction(action, original, shared)


@dataclass
class _KeyArrays:
    """Every attribute of ``m`` keyframes, as flat numpy arrays (see ``_KEY_ATTRIBUTES``)."""

    values: dict[str, NDArray[np.generic]] = field(default_factory=dict)

    @classmethod
    def read(cls, points: Any) -> _KeyArrays:
        m = len(points)
        out = cls()
        for name, width, dtype in _KEY_ATTRIBUTES:
            buf: NDArray[np.generic] = np.empty(m * width, dtype=dtype)
            if m:
                points.foreach_get(name, buf)
            out.values[name] = buf
        return out

    def frames(self) -> FloatArray:
        return self.values["co"][0::2].astype(np.float64)

    def take(self, mask: NDArray[np.bool_] | NDArray[np.intp]) -> _KeyArrays:
        out = _KeyArrays()
        for name, width, _ in _KEY_ATTRIBUTES:
            out.values[name] = self.values[name].reshape(-1, width)[mask].ravel()
        return out

    def write(self, points: Any, names: Sequence[str]) -> None:
        for name in names:
            points.foreach_set(name, self.values[name])


@dataclass(frozen=True)
class Handles:
    """Free Bézier handles of reduced keys (:mod:`.key_reduction`): ``left``/``right``
    ``(F, 2)`` (frame, value) per key."""

    left: FloatArray
    right: FloatArray


def reduced_handles(
    frames: FloatArray, values: FloatArray, left: FloatArray, right: FloatArray
) -> Handles:
    """Handles at the thirds of the gaps to the neighbouring keys ``frames (K,)`` with
    ``values (K,)`` and slopes ``left``/``right`` ``(K,)`` (a single frame's gap at the
    ends)."""
    gaps = np.diff(frames)
    before = np.concatenate([[gaps[0] if gaps.size else 1.0], gaps]) / 3.0
    after = np.concatenate([gaps, [gaps[-1] if gaps.size else 1.0]]) / 3.0
    return Handles(
        np.stack([frames - before, values - left * before], axis=-1),
        np.stack([frames + after, values + right * after], axis=-1),
    )


def _baked_keys(
    frames: FloatArray, values: FloatArray, handles: Handles | None = None
) -> _KeyArrays:
    """Fresh keys at ``frames (F,)`` with ``values (F,)``: linear (handles set later), or
    Bézier with the given free ``handles``.

    Every other attribute is what ``keyframe_points.add`` gives a new key (auto-clamped
    handles, selected, zero easing parameters), so :func:`_merge_into` need not write it
    when there is no kept key.
    """
    count = frames.shape[0]
    co = np.empty((count, 2), dtype=np.float32)
    co[:, 0] = frames
    co[:, 1] = values
    keys = _KeyArrays()
    handle_type = "AUTO_CLAMPED" if handles is None else "FREE"
    fills = {
        "co": co.ravel(),
        "handle_left": co.ravel().copy() if handles is None else handles.left.ravel(),
        "handle_right": co.ravel().copy() if handles is None else handles.right.ravel(),
        "interpolation": _enum_value("interpolation", "LINEAR" if handles is None else "BEZIER"),
        "handle_left_type": _enum_value("handle_left_type", handle_type),
        "handle_right_type": _enum_value("handle_right_type", handle_type),
        "easing": _enum_value("easing", "AUTO"),
        "type": _enum_value("type", "KEYFRAME"),
        "back": 0.0,
        "amplitude": 0.0,
        "period": 0.0,
        "select_control_point": True,
        "select_left_handle": True,
        "select_right_handle": True,
    }
    for name, width, dtype in _KEY_ATTRIBUTES:
        fill = fills[name]
        if isinstance(fill, np.ndarray):
            keys.values[name] = fill.astype(dtype)
        else:
            keys.values[name] = np.full(count * width, fill, dtype=dtype)
    return keys


def _concatenate(parts: Sequence[_KeyArrays]) -> _KeyArrays:
    out = _KeyArrays()
    for name, _, _ in _KEY_ATTRIBUTES:
        out.values[name] = np.concatenate([p.values[name] for p in parts])
    return out


@dataclass(frozen=True)
class FCurveWrite:
    """What writing one F-curve did: keys replaced inside the range, keys kept outside, and
    how many modifiers the F-curve has (they change what the keys play back)."""

    data_path: str
    index: int
    replaced: int
    kept: int
    modifiers: int


def _neighbours(
    existing: Sequence[_KeyArrays | None], frame_start: float, frame_end: float
) -> tuple[FloatArray | None, FloatArray | None]:
    """Channel values ``(k,)`` of the kept keys just before and after the range, or ``None``.

    Only when every channel has a key there (at the same frame); otherwise ``None``.
    """
    found: list[FloatArray | None] = []
    for before in (True, False):
        vals = []
        frame = None
        for keys in existing:
            if keys is None or keys.frames().size == 0:
                break
            x = keys.frames()
            inside = x < frame_start - FRAME_EPSILON if before else x > frame_end + FRAME_EPSILON
            idx = np.flatnonzero(inside)
            if idx.size == 0:
                break
            pick = idx[np.argmax(x[idx])] if before else idx[np.argmin(x[idx])]
            if frame is not None and abs(float(x[pick]) - frame) > FRAME_EPSILON:
                break
            frame = float(x[pick])
            vals.append(float(keys.values["co"][2 * pick + 1]))
        found.append(np.array(vals) if len(vals) == len(existing) else None)
    return found[0], found[1]


@dataclass
class BonePlan:
    """What :func:`write_bone_rotations` writes for one bone, before writing it.

    Attributes:
        data_path: the rotation (or scale) property's F-curve path.
        mode: the bone's rotation mode (``"SCALE"`` for a scale plan).
        curves: the existing F-curves per channel (``None`` where there is none).
        existing: their keys.
        values: ``(F, k)`` the channel values to key (continuous with the kept keys).
    """

    data_path: str
    mode: str
    bone: str
    curves: list[Any]
    existing: list[_KeyArrays | None]
    values: FloatArray


def plan_bone_rotations(
    channels: Channels,
    pose_bone: ChainBone,
    rotations: FloatArray,
    frame_start: float,
    frame_end: float,
) -> BonePlan:
    """The channel values that keying ``rotations (F, 4)`` wxyz basis quaternions of
    ``pose_bone`` in ``[frame_start, frame_end]`` writes (see :func:`write_bone_rotations`)."""
    prop, width = rotation_path(pose_bone.rotation_mode)
    data_path = f'pose.bones["{bpy.utils.escape_identifier(pose_bone.name)}"].{prop}'
    curves = [channels.find(data_path, i) for i in range(width)]
    existing = [None if fc is None else _KeyArrays.read(fc.keyframe_points) for fc in curves]
    before, after = _neighbours(existing, frame_start, frame_end)
    values = channel_values(pose_bone.rotation_mode, rotations, before, after)
    return BonePlan(data_path, pose_bone.rotation_mode, pose_bone.name, curves, existing, values)


def plan_bone_scales(
    channels: Channels,
    pose_bone: ChainBone,
    scales: FloatArray,
    frame_start: float,
    frame_end: float,
) -> BonePlan:
    """The ``scale`` channel values ``(F, 3)`` that keying the uniform scale factors
    ``scales (F,)`` of ``pose_bone`` in ``[frame_start, frame_end]`` writes (a stretching
    chain's bone: what its *Reach IK Scale* constraint shows, :mod:`.constraints`)."""
    data_path = f'pose.bones["{bpy.utils.escape_identifier(pose_bone.name)}"].scale'
    curves = [channels.find(data_path, i) for i in range(3)]
    existing = [None if fc is None else _KeyArrays.read(fc.keyframe_points) for fc in curves]
    values = np.repeat(np.asarray(scales, dtype=np.float64)[:, None], 3, axis=1)
    return BonePlan(data_path, "SCALE", pose_bone.name, curves, existing, values)


def write_plan(
    channels: Channels,
    plan: BonePlan,
    frames: FloatArray,
    frame_start: float,
    frame_end: float,
    keep: NDArray[np.bool_] | None = None,
    slopes: tuple[FloatArray, FloatArray] | None = None,
) -> list[FCurveWrite]:
    """Write a :class:`BonePlan` at ``frames (F,)``: every frame as linear keys, or only
    the frames in ``keep (F,)`` as Bézier keys with free handles of ``slopes`` (left,
    right, each ``(F, k)``; see :mod:`.key_reduction`)."""
    frames = np.asarray(frames, dtype=np.float64)
    report = []
    for i in range(plan.values.shape[1]):
        fcurve = plan.curves[i] or channels.new(plan.data_path, i, plan.bone)
        old = plan.existing[i] or _KeyArrays.read(fcurve.keyframe_points)
        x, y, handles = frames, plan.values[:, i], None
        if keep is not None and slopes is not None:
            x, y = frames[keep], y[keep]
            handles = reduced_handles(x, y, slopes[0][keep, i], slopes[1][keep, i])
        report.append(_merge_into(fcurve, old, x, y, frame_start, frame_end, handles))
    return report


def write_bone_rotations(
    channels: Channels,
    pose_bone: ChainBone,
    frames: FloatArray,
    rotations: FloatArray,
    frame_start: float,
    frame_end: float,
) -> list[FCurveWrite]:
    """Key ``rotations (F, 4)`` wxyz basis quaternions of ``pose_bone`` at ``frames (F,)``.

    Writes the rotation channels of the bone's ``rotation_mode``; keys of those channels
    inside ``[frame_start, frame_end]`` are replaced, all others kept exactly.
    """
    plan = plan_bone_rotations(channels, pose_bone, rotations, frame_start, frame_end)
    return write_plan(channels, plan, frames, frame_start, frame_end)


def _merge_into(
    fcurve: bpy.types.FCurve,
    old: _KeyArrays,
    frames: FloatArray,
    values: FloatArray,
    frame_start: float,
    frame_end: float,
    handles: Handles | None = None,
) -> FCurveWrite:
    """Replace ``fcurve``'s keys inside the range by keys ``values`` at ``frames`` (linear,
    or Bézier with free ``handles``)."""
    x = old.frames()
    lo = x < frame_start - FRAME_EPSILON
    hi = x > frame_end + FRAME_EPSILON
    merged = _concatenate([old.take(lo), _baked_keys(frames, values, handles), old.take(hi)])
    kept = np.concatenate(
        [np.ones(int(lo.sum()), bool), np.zeros(frames.size, bool), np.ones(int(hi.sum()), bool)]
    )
    order = np.argsort(merged.frames(), kind="stable")
    if np.any(order != np.arange(order.size)):
        merged, kept = merged.take(order), kept[order]
    points = fcurve.keyframe_points
    total = kept.size
    if not kept.any():
        # Only baked keys: a fresh set of keys needs just frames, values and interpolation.
        points.clear()
        points.add(total)
        written: tuple[str, ...] = ("co", "interpolation")
        if handles is not None:
            written += ("handle_left_type", "handle_right_type", "handle_left", "handle_right")
        merged.write(points, written)
        fcurve.update()
        return FCurveWrite(fcurve.data_path, fcurve.array_index, x.size, 0, len(fcurve.modifiers))
    if len(points) > total:
        points.clear()
    if len(points) < total:
        points.add(total - len(points))
    merged.write(points, [name for name, _, _ in _KEY_ATTRIBUTES])
    # Let Blender compute the baked keys' auto handles, then give every kept key its own
    # handles back: keys outside the range stay exactly as they were.
    fcurve.update()
    for name in ("handle_left", "handle_right"):
        fresh = np.empty(2 * total, dtype=np.float32)
        points.foreach_get(name, fresh)
        fresh = fresh.reshape(-1, 2)
        fresh[kept] = merged.values[name].reshape(-1, 2)[kept]
        points.foreach_set(name, fresh.ravel())
    return FCurveWrite(
        fcurve.data_path,
        fcurve.array_index,
        int(x.size - lo.sum() - hi.sum()),
        int(kept.sum()),
        len(fcurve.modifiers),
    )
