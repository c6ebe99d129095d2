# SPDX-License-Identifier: GPL-3.0-or-later
"""Quality report of a baked chain: residual error, reach, joint speed and pops.

Pure numpy (no ``bpy``), so scripts and tests can use it on their own.

Conventions:

* ``frames`` ``(F,)``: the baked scene frames, strictly increasing.
* ``errors`` ``(F,)``: distance from the chain's effector to its target, world metres.
* ``reachable`` ``(F,)``: the solver judged the target within the chain's reach.
* ``rotations`` ``(F, n, 4)``: the baked local joint rotations wxyz (each bone's basis
  rotation), root → tip.
* ``targets`` ``(F, 3)``: the target's world position, metres.
* ``chain_length``: the chain's length in world metres (sum of its bones).
* ``turns`` ``(F,)``: with *Rotation*, the angle (radians) from the goal orientation to the
  chain's last bone in the baked pose.

A *pop* is a frame where some joint turns more than ``pop_angle_deg`` (20°) per frame while
the target moves less than ``pop_target_fraction`` (1 %) of the chain length per frame: the
pose jumps although its goal barely moved. Between samples ``k`` frames apart (a frame step
``k``), both the turn and the target's motion are divided by ``k``. A pop is reported at the
later frame of the pair.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..core import rotations as rot
from ..core.rotations import FloatArray

#: Default pop thresholds (see the module docstring).
POP_ANGLE_DEG = 20.0
POP_TARGET_FRACTION = 0.01

#: At most this many frame numbers are listed per category (counts are always exact).
MAX_LISTED_FRAMES = 50


@dataclass(frozen=True)
class ChainQuality:
    """The quality of one baked chain (JSON-ready through :meth:`to_dict`).

    Attributes:
        chain: the chain's tip bone.
        bones: the chain's bones, root → tip.
        solver: the solver used.
        frames: how many frames were baked.
        error_max: largest residual effector–target distance, world metres.
        error_max_frame: the frame where it occurs.
        error_mean: mean residual distance, world metres.
        out_of_reach: how many frames had the target out of reach.
        out_of_reach_frames: the first of those frames (at most ``MAX_LISTED_FRAMES``).
        max_joint_change_deg: the largest turn of any joint between consecutive frames
            (per frame), degrees.
        max_joint_change_bone: the bone that turned most.
        max_joint_change_frame: the frame it turned at (the later frame of the pair).
        pops: how many frames were flagged as pops.
        pop_frames: the first of those frames (at most ``MAX_LISTED_FRAMES``).
        turn_max_deg: with *Rotation*, the largest angle from the goal orientation to the
            last bone's, degrees (else ``None``).
        turn_max_frame: the frame where it occurs.
    """

    chain: str
    bones: tuple[str, ...]
    solver: str
    frames: int
    error_max: float
    error_max_frame: int | None
    error_mean: float
    out_of_reach: int
    out_of_reach_frames: tuple[int, ...]
    max_joint_change_deg: float
    max_joint_change_bone: str | None
    max_joint_change_frame: int | None
    pops: int
    pop_frames: tuple[int, ...]
    turn_max_deg: float | None = None
    turn_max_frame: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (lists for tuples, plain ints and floats)."""
        d = asdict(self)
        for key, value in d.items():
            if isinstance(value, tuple):
                d[key] = list(value)
        return d

    def summary(self) -> str:
        """One line for reports and the panel."""
        line = (
            f"{self.chain}: error max {self.error_max * 1000:.3g} mm, "
            f"mean {self.error_mean * 1000:.3g} mm; "
            f"max turn {self.max_joint_change_deg:.3g}°/frame"
        )
        if self.out_of_reach:
            line += f"; {self.out_of_reach} frames out of reach"
        if self.pops:
            line += f"; {self.pops} pops (first at frame {self.pop_frames[0]})"
        if self.turn_max_deg is not None:
            line += f"; last bone up to {self.turn_max_deg:.3g}° off the target's rotation"
        return line


def _frame(x: float) -> int:
    return int(np.rint(x))


def _listed(frames: FloatArray, mask: np.ndarray) -> tuple[int, ...]:
    return tuple(_frame(f) for f in frames[mask][:MAX_LISTED_FRAMES])


def chain_quality(
    chain: str,
    bones: Sequence[str],
    solver: str,
    frames: FloatArray,
    errors: FloatArray,
    reachable: np.ndarray,
    rotations: FloatArray,
    targets: FloatArray,
    chain_length: float,
    *,
    pop_angle_deg: float = POP_ANGLE_DEG,
    pop_target_fraction: float = POP_TARGET_FRACTION,
    turns: FloatArray | None = None,
) -> ChainQuality:
    """Measure one baked chain (arrays as in the module docstring; ``turns`` ``(F,)``, with
    *Rotation*, the angle in radians from the goal orientation to the last bone's)."""
    frames = np.asarray(frames, dtype=np.float64)
    errors = np.asarray(errors, dtype=np.float64)
    reachable = np.asarray(reachable, dtype=bool)
    q = np.asarray(rotations, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    count = frames.shape[0]
    if errors.shape != (count,) or reachable.shape != (count,) or targets.shape != (count, 3):
        raise ValueError(
            f"errors, reachable and targets must have {count} rows like frames; got "
            f"{errors.shape}, {reachable.shape}, {targets.shape}"
        )
    if q.shape != (count, len(bones), 4):
        raise ValueError(f"rotations must have shape ({count}, {len(bones)}, 4), got {q.shape}")
    if turns is not None:
        turns = np.asarray(turns, dtype=np.float64)
        if turns.shape != (count,):
            raise ValueError(f"turns must have {count} rows like frames, got {turns.shape}")
    if count == 0:
        return ChainQuality(
            chain, tuple(bones), solver, 0, 0.0, None, 0.0, 0, (), 0.0, None, None, 0, ()
        )
    worst = int(np.argmax(errors))
    unreachable = ~reachable
    turn_deg = np.zeros((0, len(bones)))
    pops = np.zeros(0, dtype=bool)
    if count > 1:
        gap = np.diff(frames)
        delta = rot.multiply(rot.conjugate(q[:-1]), q[1:])
        turn_deg = np.degrees(rot.angle(rot.normalize(delta))) / gap[:, None]
        moved = np.linalg.norm(np.diff(targets, axis=0), axis=-1) / gap
        pops = (np.max(turn_deg, axis=-1) > pop_angle_deg) & (
            moved < pop_target_fraction * chain_length
        )
    max_change, max_bone, max_frame = 0.0, None, None
    if turn_deg.size:
        k, j = np.unravel_index(int(np.argmax(turn_deg)), turn_deg.shape)
        max_change = float(turn_deg[k, j])
        max_bone, max_frame = bones[int(j)], _frame(frames[k + 1])
    later = frames[1:]
    return ChainQuality(
        chain=chain,
        bones=tuple(bones),
        solver=solver,
        frames=count,
        error_max=float(errors[worst]),
        error_max_frame=_frame(frames[worst]),
        error_mean=float(np.mean(errors)),
        out_of_reach=int(unreachable.sum()),
        out_of_reach_frames=_listed(frames, unreachable),
        max_joint_change_deg=max_change if math.isfinite(max_change) else 0.0,
        max_joint_change_bone=max_bone,
        max_joint_change_frame=max_frame,
        pops=int(pops.sum()),
        pop_frames=_listed(later, pops),
        turn_max_deg=None if turns is None else math.degrees(float(np.max(turns))),
        turn_max_frame=None if turns is None else _frame(frames[int(np.argmax(turns))]),
    )
