# SPDX-License-Identifier: GPL-3.0-or-later
"""The production-rig benchmark's 4000-bone armature (:mod:`reach_ik_tools.live_rigs`, what
``scripts/bench_live.py --rigs-only`` times), run for a few frames: it builds and plays,
and the stored solutions behave as issue 13 asks — keyed on the first pass, nothing written
in steady-state playback, rewritten after every target key moved."""

from __future__ import annotations

from typing import Any

from reach_ik_tools import live_rigs

FRAMES = 3


def test_4000_bone_rig_plays_and_keys_only_what_changed(blender: Any, addon: Any) -> None:
    result = live_rigs.measure("bones4000", frames=FRAMES, rounds=1)
    assert result["bones"] >= 4000
    solved_bones = 2 * live_rigs.LIMBS_4000
    # The first pass keys each chain bone's solution on every frame not shown yet (a
    # helper's rotation, one key per frame; the first frame was solved and keyed when the
    # chains were added); steady playback writes nothing; moving every target key changes
    # every input, so every frame is solved and keyed again.
    assert result["first_pass"]["helper_keys_written"] == solved_bones * (FRAMES - 1)
    assert result["steady"]["helper_keys_written"] == 0
    assert result["after_edit"]["helper_keys_written"] == solved_bones * FRAMES
    for phase in ("first_pass", "steady", "after_edit"):
        assert all(t > 0.0 for t in result[phase]["median_ms_per_frame"].values())
