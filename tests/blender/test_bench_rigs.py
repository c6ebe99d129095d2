# SPDX-License-Identifier: GPL-3.0-or-later
"""The production-rig benchmark's 4000-bone armature (:mod:`reach_ik_tools.live_rigs`, what
``scripts/bench_live.py --rigs-only`` times), run for a few frames: it builds and plays,
and the stored solutions behave as issue 13 asks — keyed on the first pass, nothing written
in steady-state playback, rewritten after every target key moved, and only the edited
chain's after an influence edit or a step of dragging its target; and the metarig scenes
of its cost part (:mod:`reach_ik_tools.live_scenes`)."""

from __future__ import annotations

from typing import Any

from reach_ik_tools import live_rigs, live_scenes

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
    # An influence edit starts a new generation: every chain is solved again at the frame
    # shown, and only the edited chain's two bones get new keys.
    assert result["influence_edit"]["helper_keys_written"] == 2 * live_rigs.EDITS
    # Dragging one limb's target re-keys that limb's two bones at each step.
    assert result["control_move"]["helper_keys_written"] == 2 * live_rigs.EDITS
    for phase in ("first_pass", "steady", "after_edit", "influence_edit", "control_move"):
        assert all(t > 0.0 for t in result[phase]["median_ms_per_frame"].values())


def test_metarig_cost_scenes_play_and_break_down_a_frame(blender: Any, addon: Any) -> None:
    """``scripts/bench_live.py``'s cost part (:func:`reach_ik_tools.live_scenes.measure_cost`)
    for a few frames: every scene plays, and the breakdown finds the core's solve inside the
    live handler inside ``frame_set``."""
    result = live_scenes.measure_cost(frames=FRAMES, rounds=1)
    assert all(t > 0.0 for t in result["median_ms_per_frame"].values())
    parts = result["reach_ik_breakdown_ms"]
    assert 0.0 < parts["core_solve"] <= parts["handler"] <= parts["frame_set"]
