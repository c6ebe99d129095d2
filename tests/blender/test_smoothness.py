# SPDX-License-Identifier: GPL-3.0-or-later
"""Smoothness bar on a smooth target path (the same check as ``scripts/bench_live.py``, from
:mod:`reach_ik_tools.live_scenes`):
figure-eight targets for the metarig's four limbs over 240 frames, solved live: no joint
turns more than 5° between frames and no bend plane changes more than 5° between frames."""

from __future__ import annotations

from typing import Any

import pytest

from reach_ik_tools import live_scenes


@pytest.mark.parametrize("solver", ["triangulation"])
def test_figure_eight_is_smooth(blender: Any, addon: Any, solver: str) -> None:
    result = live_scenes.smoothness(solver, frames=240)
    assert result["max_joint_deg"] > 0.1, "the limbs follow the moving targets"
    assert result["max_joint_deg"] <= 5.0, result["limbs"]
    assert result["max_bend_plane_deg"] <= 5.0, result["limbs"]
    reach = 0.9  # the shortest limb (arm) is about 0.55 m; the path stays well inside it
    assert result["max_error_m"] <= 1e-4 * reach, result["limbs"]
