# SPDX-License-Identifier: GPL-3.0-or-later
"""How much memory a bake needs, estimated before any work (:func:`check`).

A bake keeps, for every frame, each chain's solved pose (~100 bytes per frame and chain),
works on one block of frames at a time (the sampled inputs, about
:data:`BLOCK_BYTES_PER_FRAME_AND_CHAIN` per frame and chain), and leaves Blender storing the
keys (:data:`BYTES_PER_KEY` each, with our arrays while writing them). Both figures were
measured: the block's from 10,000-frame bakes (+45–60 MiB for 4 chains), the key's from a
1,000,000-frame bake of 4 two-bone chains (+5.6 GiB for 32 million keys).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import ReachIKError
from . import keying
from .blender_types import ArmatureObject
from .rig import RigChain

#: Working memory per frame and chain while a block is sampled and solved.
BLOCK_BYTES_PER_FRAME_AND_CHAIN = 2_500

#: Bytes Blender needs per key (a ``BezTriple``, rounded up) plus our arrays for it while
#: writing.
BYTES_PER_KEY = 170


class BakeMemoryError(ReachIKError):
    """The bake would need more memory than is available; the message gives both."""


def estimated_bytes(frames: int, bones: Sequence[int], channels: int, block: int) -> int:
    """Memory a bake of ``frames`` frames in blocks of ``block`` needs at its peak: the
    solved poses kept for every frame, one block's working set, and the keys Blender
    stores. ``bones``: the bones of each chain; ``channels``: rotation channels keyed."""
    kept = sum(32 * n + 33 for n in bones)  # rotations (n, 4), error, reachable, target
    block = min(frames, block) * BLOCK_BYTES_PER_FRAME_AND_CHAIN * len(bones)
    return frames * (kept + channels * BYTES_PER_KEY) + block


def available_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check(obj: ArmatureObject, frames: int, rigs: Sequence[RigChain], block: int) -> None:
    """Raise :class:`BakeMemoryError` when a bake of ``frames`` frames of these chains in
    blocks of ``block`` would need more than 80 % of the memory available."""
    available = available_bytes()
    if available is None:
        return
    channels = 0
    for rig in rigs:
        for name in rig.bone_names:
            channels += keying.rotation_path(obj.pose.bones[name].rotation_mode)[1]
    need = estimated_bytes(frames, [len(r.bone_names) for r in rigs], channels, block)
    if need > 0.8 * available:
        raise BakeMemoryError(
            f"baking {frames:,} frames needs about {need / 2**30:.1f} GiB of memory, more than "
            f"the {available / 2**30:.1f} GiB available; bake a shorter range"
        )
