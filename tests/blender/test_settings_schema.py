# SPDX-License-Identifier: GPL-3.0-or-later
"""The one list of chain settings (``chain_spec.SETTINGS``) matches the property group."""

from __future__ import annotations

import dataclasses
from typing import Any


def test_schema_names_every_property_of_the_group(addon: Any) -> None:
    """A property added to ``ReachIKBoneSettings`` must be given a role in the schema (and
    one taken out of the group, taken out of it)."""
    group = addon.properties.ReachIKBoneSettings.__annotations__
    schema = addon.chain_spec.SETTINGS
    assert sorted(set(group) - set(schema)) == [], "properties missing from chain_spec.SETTINGS"
    assert sorted(set(schema) - set(group)) == [], "chain_spec.SETTINGS names no such property"


def test_fixed_settings_and_chain_spec_follow_the_schema(addon: Any) -> None:
    cs = addon.chain_spec
    assert cs._Fixed._fields == (*cs.FIXED_SETTINGS, "advanced")
    spec_fields = {f.name for f in dataclasses.fields(cs.ChainSpec)}
    per_frame = {"pole_angle", "influence", "orient_weight"}
    assert spec_fields == {"tip", "advanced", *cs.FIXED_SETTINGS, *per_frame}
    assert per_frame <= set(cs.ANIMATED_SETTINGS)
    # live solving and the bake unpack the animated settings by position
    assert cs.ANIMATED_SETTINGS[:2] == ("enabled", "influence")
    assert len(cs.ADVANCED_SETTINGS) == 7  # core options, unpacked by chain_spec._options
    assert "bake_report" not in cs.CHAIN_SETTINGS  # Remove keeps the last bake's report
    assert set(cs.CHAIN_SETTINGS) | {"bake_report"} == set(cs.SETTINGS)


def test_advanced_settings_read_in_the_core_options_order(clean_scene: Any, addon: Any) -> None:
    """The schema's *Advanced* order is the one ``_options`` unpacks."""
    from rigs import build_arm

    obj = build_arm()
    s = obj.pose.bones["hand"].reach_ik
    s.has_chain = True
    s.damping, s.max_step, s.posture_weight, s.sweep_steps = 0.25, 7.0, 0.5, 11
    got = addon.chain_spec.advanced_settings(s)
    want = (float(s.delta_b), float(s.damping), float(s.max_step), float(s.posture_weight), 11)
    assert got[1:6] == want
    assert got[0] == s.bend_plane
    assert got[6] == s.distribution
