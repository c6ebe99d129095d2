# SPDX-License-Identifier: GPL-3.0-or-later
"""Writing baked bone rotations (and a stretching chain's scales) into an action's
F-curves, in bulk.

Conventions:

* ``frames`` ``(F,)``: scene frames of the baked samples, strictly increasing.
* ``rotations`` ``(F, 4)``: unit quaternions wxyz, one per frame — the pose bone's *basis*
  rotation (what ``pose_bone.rotation_quaternion`` holds: relative to the bone's rest frame,
  in the bone's local space).
* Only the rotation channels that match each bone's ``rotation_mode`` are written
  (:func:`rotation_path`), with values continuous from frame to frame and with the keys
  kept around the range (:mod:`.rotation_continuity`).

Non-destructive: in every written F-curve the keys inside ``[frame_start, frame_end]`` are
replaced by the baked keys and every key outside keeps all its attributes (frame, value,
handles, handle types, interpolation, easing, key type, selection). Other F-curves are not
touched. Keys are added with ``keyframe_points.add`` and filled with ``foreach_set``, never
one ``keyframe_insert`` per key. Baked keys use linear interpolation, like Blender's bake,
so the action plays back exactly the baked value at every baked frame; keys chosen by key
reduction (:mod:`.key_reduction`) are Bézier keys with free handles at the thirds
(:func:`reduced_handles`).

The F-curves are found and made through :class:`.bake_action.Channels` (a legacy action's,
or the assigned slot's channelbag of a layered action's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import bpy
import numpy as np
from numpy.typing import NDArray

from ..core import rotations as rot
from ..core.rotations import FloatArray
from .bake_action import Channels
from .blender_types import ChainBone
from .rotation_continuity import channel_values

#: Keys closer than this (frames) to the range's ends count as inside it.
FRAME_EPSILON = 1e-3

_EULER_MODES = frozenset(rot.EULER_ORDERS)


def _enum_value(prop: str, item: str) -> int:
    rna = bpy.types.Keyframe.bl_rna.properties[prop]
    if not isinstance(rna, bpy.types.EnumProperty):
        raise TypeError(f"Keyframe.{prop} is not an enum")
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


@dataclass
class _KeyArrays:
    """Every attribute of ``m`` keyframes, as flat numpy arrays (see ``_KEY_ATTRIBUTES``)."""

    values: dict[str, NDArray[np.generic]] = field(default_factory=dict)

    @classmethod
    def read(cls, points: bpy.types.FCurveKeyframePoints) -> _KeyArrays:
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

    def write(self, points: bpy.types.FCurveKeyframePoints, names: Sequence[str]) -> None:
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
    curves: list[bpy.types.FCurve | None]
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
