# SPDX-License-Identifier: GPL-3.0-or-later
"""Error-bounded key reduction for baked chains: the fewest keys whose F-curves, as Blender
interpolates them, replay the full bake within a distance at the effector and an angle at
every joint.

The curves. A reduced key at frame ``x`` with value ``y`` gets **free** Bézier handles at a
third of the way to its neighbouring keys: ``(x - h_l/3, y - m_l h_l/3)`` and ``(x + h_r/3,
y + m_r h_r/3)`` (``h`` the frame gaps, ``m`` the slopes). With handles at the thirds,
Blender's Bézier segment is linear in its parameter along the frame axis, so the segment is
exactly the cubic Hermite curve ``y(t) = H00 y0 + H10 h m0 + H01 y1 + H11 h m1`` with ``t =
(x - x0) / h`` (:func:`hermite`; pinned to ``FCurve.evaluate`` by a test). The slopes come
from the full bake (central differences at the key's frame), so a segment depends only on its
two keys: each segment is checked on its own. A segment one baked frame long that still
fails takes the chord's slope at both ends, which replays the full bake's linear key exactly.

The check. Every frame of a segment and the quarter frames between are evaluated: the
reference is the full bake as it plays (linear keys: channel values interpolated linearly);
both sets of channel values become rotations the way Blender reads them (quaternions
normalised, Euler angles in the bone's order, axis–angle with a normalised axis), then the
chain's forward kinematics in armature space from the bones' rest matrices (``pose_j =
pose_{j-1} · rest_{j-1}⁻¹ rest_j · R_j``; the chain's parent and root location are the same
in both, so they drop out; chain bones' own location channels are taken at rest) gives the
tip bone's tail. A segment passes when every joint is within ``angle`` and the tail within
``distance`` (world units, through the armature's scale) at every sample.

The selection (:func:`reduce_chain`). All channels of all bones of a chain share their key
frames (so a quaternion's four channels are normalised consistently). Starting from the
first and last frame, a failing segment is split at the frame nearest its worst sample
(recursively), like Douglas–Peucker's simplification; the first and last baked frames are
always keys. A final pass evaluates every segment again and reports the largest errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..core import rotations as rot
from ..core.rotations import FloatArray

#: Samples per baked frame interval (the frames and the quarter frames between).
SUBSAMPLES = 4

#: Frames reduced at a time (see :func:`reduce_chain`).
WINDOW = 5_000

#: Defaults: effector distance as a fraction of the chain's reach, joint angle (radians).
DISTANCE_FRACTION = 1e-3
ANGLE = np.radians(0.5)


@dataclass(frozen=True)
class BoneCurves:
    """One bone's baked channel values.

    Attributes:
        mode: the bone's rotation mode (``QUATERNION``, ``AXIS_ANGLE`` or an Euler order).
        values: ``(F, k)`` the channel values at the baked frames (as keyed: continuous).
    """

    mode: str
    values: FloatArray


@dataclass(frozen=True)
class ChainRest:
    """What the forward kinematics needs.

    Attributes:
        rest: ``(n, 4, 4)`` the chain bones' rest matrices in armature space, root → tip.
        tip_length: the tip bone's length (armature units).
        scale: world units per armature unit.
    """

    rest: FloatArray
    tip_length: float
    scale: float


@dataclass
class Reduction:
    """Which keys to keep and their handles' slopes.

    Attributes:
        keep: ``(F,)`` bool, the baked frames kept as keys.
        slopes_left, slopes_right: per bone, ``(F, k)`` the slopes (value per frame) of
            each kept key's left and right handles.
        distance, angle: the largest effector distance (world units) and joint angle
            (radians) from the full bake over every frame and quarter frame, as replayed.
    """

    keep: np.ndarray
    slopes_left: list[FloatArray]
    slopes_right: list[FloatArray]
    distance: float = 0.0
    angle: float = 0.0


def hermite(
    x0: ArrayLike,
    x1: ArrayLike,
    y0: FloatArray,
    y1: FloatArray,
    m0: FloatArray,
    m1: FloatArray,
    x: ArrayLike,
) -> FloatArray:
    """Values ``(S, k)`` at frames ``x (S,)`` of segments from ``(x0, y0)`` to ``(x1, y1)``
    with end slopes ``m0, m1``: Blender's Bézier segment with handles at the thirds (module
    docstring). ``x0, x1`` are scalars (one segment; ``y0 … m1`` then ``(k,)``) or ``(S,)``
    per sample (``y0 … m1`` then ``(S, k)``)."""
    x0a, x1a = np.asarray(x0, dtype=np.float64), np.asarray(x1, dtype=np.float64)
    h = x1a - x0a
    t = (np.asarray(x, dtype=np.float64) - x0a) / h
    t, h = t[:, None], (h[:, None] if h.ndim else h)
    t2, t3 = t * t, t * t * t
    return (
        (2 * t3 - 3 * t2 + 1) * y0
        + (t3 - 2 * t2 + t) * (h * m0)
        + (-2 * t3 + 3 * t2) * y1
        + (t3 - t2) * (h * m1)
    )


def slopes(frames: FloatArray, values: FloatArray) -> FloatArray:
    """Slopes ``(F, k)`` of ``values (F, k)`` at ``frames (F,)``: central differences,
    one-sided at the ends (zero for a single frame)."""
    if frames.size < 2:
        return np.zeros_like(values)
    return np.gradient(values, frames, axis=0)


def rotations_of(mode: str, values: FloatArray) -> FloatArray:
    """Unit quaternions ``(S, 4)`` of channel values ``(S, k)`` as Blender reads them."""
    if mode == "QUATERNION":
        return rot.normalize(values)
    if mode == "AXIS_ANGLE":
        axis = values[:, 1:]
        norm = np.linalg.norm(axis, axis=-1, keepdims=True)
        unit = np.divide(axis, norm, out=np.zeros_like(axis), where=norm > 0)
        out = rot.from_axis_angle(unit, values[:, 0])
        return np.where(norm > 0, out, rot.identity((values.shape[0],)))
    return rot.from_euler(values, mode)


def local_matrices(rest: ChainRest) -> FloatArray:
    """``(n, 4, 4)`` each chain bone's rest matrix relative to the previous one's (the
    root's: armature space)."""
    out = rest.rest.copy()
    for j in range(1, out.shape[0]):
        out[j] = np.linalg.inv(rest.rest[j - 1]) @ rest.rest[j]
    return out


def tail_positions(
    rest: ChainRest, quats: Sequence[FloatArray], locals_: FloatArray | None = None
) -> FloatArray:
    """The tip bone's tail ``(S, 3)`` in armature space for basis rotations ``quats`` (per
    bone ``(S, 4)``), the chain's parent at rest (module docstring); ``locals_`` from
    :func:`local_matrices` (computed when not given)."""
    if locals_ is None:
        locals_ = local_matrices(rest)
    # From the tip down: p <- L_j R_j p, starting at the tail in the tip bone's frame.
    point = np.broadcast_to(np.array([0.0, rest.tip_length, 0.0]), (quats[0].shape[0], 3))
    for j in range(len(quats) - 1, -1, -1):
        rotated = np.einsum("sij,sj->si", rot.to_matrix(quats[j]), point)
        point = rotated @ locals_[j][:3, :3].T + locals_[j][:3, 3]
    return point


class _Chain:
    """One window of a chain's full bake, ready to check segments against: the reference
    (the full bake as its linear keys play) at every frame and quarter frame, computed
    once."""

    def __init__(self, frames: FloatArray, bones: Sequence[BoneCurves], rest: ChainRest) -> None:
        self.frames = np.asarray(frames, dtype=np.float64)
        self.bones = list(bones)
        self.rest = rest
        count = self.frames.size
        u = np.arange((count - 1) * SUBSAMPLES + 1) / SUBSAMPLES
        lo = np.minimum(np.floor(u).astype(int), max(count - 2, 0))
        hi = np.minimum(lo + 1, count - 1)
        w = u - lo
        self.x = self.frames[lo] * (1 - w) + self.frames[hi] * w
        self.quats = [
            rotations_of(b.mode, b.values[lo] * (1 - w[:, None]) + b.values[hi] * w[:, None])
            for b in self.bones
        ]
        self.locals = local_matrices(rest)
        self.tails = tail_positions(rest, self.quats, self.locals)

    def errors(
        self, a: np.ndarray, b: np.ndarray, left: list[FloatArray], right: list[FloatArray]
    ) -> tuple[FloatArray, FloatArray, FloatArray, np.ndarray]:
        """Every sample of the segments ``a[s]..b[s]`` (frame indices ``(S,)``; their frames
        and quarter frames), one segment after the other: effector distance (world units),
        largest joint angle (radians), frame, and the index of the first sample of each
        segment ``(S,)``."""
        sizes = (b - a) * SUBSAMPLES + 1
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        seg = np.repeat(np.arange(a.size), sizes)
        index = np.arange(int(sizes.sum())) - starts[seg] + (a * SUBSAMPLES)[seg]
        x = self.x[index]
        ia, ib = a[seg], b[seg]
        x0, x1 = self.frames[ia], self.frames[ib]
        angles = np.zeros(x.size)
        quats = []
        for j, bone in enumerate(self.bones):
            v = bone.values
            got = hermite(x0, x1, v[ia], v[ib], right[j][ia], left[j][ib], x)
            q = rotations_of(bone.mode, got)
            quats.append(q)
            dots = np.abs(np.sum(q * self.quats[j][index], axis=-1))
            angles = np.maximum(angles, 2.0 * np.arccos(np.minimum(dots, 1.0)))
        tails = tail_positions(self.rest, quats, self.locals)
        distance = np.linalg.norm(tails - self.tails[index], axis=-1)
        return distance * self.rest.scale, angles, x, starts


def reduce_chain(
    frames: FloatArray,
    bones: Sequence[BoneCurves],
    rest: ChainRest,
    distance: float,
    angle: float = float(ANGLE),
    window: int = WINDOW,
) -> Reduction:
    """The fewest keys (by recursive splitting; module docstring) replaying the full bake of
    one chain within ``distance`` (world units) at the effector and ``angle`` (radians) at
    every joint, over ``frames (F,)`` and the quarter frames between.

    The frames are reduced in windows of ``window`` frames sharing their end frames (always
    keys), so time and memory grow linearly with the range; within a window the splitting
    runs level by level, every pending segment checked in one vectorised evaluation."""
    x_all = np.asarray(frames, dtype=np.float64)
    count = x_all.size
    left = [slopes(x_all, b.values) for b in bones]
    right = [d.copy() for d in left]
    keep = np.zeros(count, dtype=bool)
    keep[0] = keep[-1] = True
    worst_distance = worst_angle = 0.0
    for start in range(0, max(count - 1, 0), window):
        end = min(start + window, count - 1)
        part = slice(start, end + 1)
        chain = _Chain(x_all[part], [BoneCurves(b.mode, b.values[part]) for b in bones], rest)
        kept, dist, ang = _reduce_window(
            chain, [d[part] for d in left], [d[part] for d in right], distance, angle
        )
        keep[part] |= kept
        worst_distance, worst_angle = max(worst_distance, dist), max(worst_angle, ang)
    return Reduction(keep, left, right, worst_distance, worst_angle)


def _reduce_window(
    chain: _Chain, left: list[FloatArray], right: list[FloatArray], distance: float, angle: float
) -> tuple[np.ndarray, float, float]:
    """:func:`reduce_chain` on one window: the keys kept ``(W,)``, and the largest effector
    distance and joint angle of the final check; ``left``/``right`` (views of the window's
    slopes) get the chord's slope on one-frame segments that need it."""
    x_all = chain.frames
    count = x_all.size
    keep = np.zeros(count, dtype=bool)
    keep[0] = keep[-1] = True
    a, b = np.array([0]), np.array([count - 1])
    while a.size:
        dist, ang, x, starts = chain.errors(a, b, left, right)
        bad = np.maximum(dist / distance, ang / angle)
        seg = np.repeat(np.arange(a.size), np.diff(np.append(starts, bad.size)))
        order = np.lexsort((-bad, seg))
        worst = order[starts]
        failing = bad[worst] > 1.0
        short = failing & (b - a == 1)
        for j, bone in enumerate(chain.bones):
            sa, sb = a[short], b[short]
            chord = (bone.values[sb] - bone.values[sa]) / (x_all[sb] - x_all[sa])[:, None]
            right[j][sa] = chord
            left[j][sb] = chord
        split = failing & (b - a > 1)
        a, b, at = a[split], b[split], x[worst[split]]
        k = np.clip(np.searchsorted(x_all, at), a + 1, b - 1)
        nearer = (k - 1 > a) & (np.abs(x_all[k - 1] - at) < np.abs(x_all[k] - at))
        k = np.where(nearer, k - 1, k)
        keep[k] = True
        a, b = np.concatenate([a, k]), np.concatenate([k, b])
    kept = np.flatnonzero(keep)
    dist, ang, _, _ = chain.errors(kept[:-1], kept[1:], left, right)
    return keep, float(np.max(dist)), float(np.max(ang))
