# SPDX-License-Identifier: GPL-3.0-or-later
"""Convert IK on a Rigify-**generated** human rig (the rig animators use), against the rig's
own IK as Blender evaluates it.

What the generated rig's limbs hold (measured, and asserted by the first test): on each of
``MCH-forearm_ik.L/R`` and ``MCH-shin_ik.L/R`` two IK constraints with the same target (the
``MCH-…_ik_target`` bone), chain count 2, 500 iterations, *Stretch* on: ``IK`` without a
pole and ``IK.001`` with the pole control (pole angle −90°); their ``mute`` is driven by the
limb's ``pole_vector`` property (``IK``: ``pole_vector``; ``IK.001``: ``1 − pole_vector``)
— the pole switch. The chain bones have ``ik_stretch`` 0.1 and the forearm / shin is a
hinge (``lock_ik_y``, ``lock_ik_z``). The IK/FK switch (``IK_FK``) drives the influence of
the ``ORG`` bones' Copy Transforms onto the IK bones, not the IK constraints; ``IK_Stretch``
drives a Limit Distance on the IK target.

Oracle: the DEF bones (every deforming bone's head and tail) and the chain joints, as
Blender evaluates the rig with its own IK, over an animated range (IK controls and pole
controls keyed, the pole switch keyed off and on). The pole-switch test switches stretch
off on the rig (``ik_stretch`` 0 on the chain bones, ``IK_Stretch`` 0); the stretch test
keeps it on (as generated) and measures how close Reach IK's stretch rule comes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rigs import blender_module

#: IK tip bone → (IK control, pole control, the limb's property bone).
LIMBS = {
    "MCH-forearm_ik.L": ("hand_ik.L", "upper_arm_ik_target.L", "upper_arm_parent.L"),
    "MCH-forearm_ik.R": ("hand_ik.R", "upper_arm_ik_target.R", "upper_arm_parent.R"),
    "MCH-shin_ik.L": ("foot_ik.L", "thigh_ik_target.L", "thigh_parent.L"),
    "MCH-shin_ik.R": ("foot_ik.R", "thigh_ik_target.R", "thigh_parent.R"),
}
FRAMES = list(range(1, 41, 3))
#: Frames from which the pole switch is on (keyed, constant interpolation: a bool).
POLE_FROM = 20


def _set_all(rig: Any, key: str, value: float) -> None:
    """Set a limb property of every limb (custom properties are not tagged by themselves)."""
    for _tip, (_, _, props) in LIMBS.items():
        rig.pose.bones[props][key] = value
    rig.update_tag()
    blender_module().context.view_layer.update()


def _stretch_off(rig: Any) -> None:
    for tip in LIMBS:
        pb = rig.pose.bones[tip]
        pb.ik_stretch = 0.0
        pb.parent.ik_stretch = 0.0
    _set_all(rig, "IK_Stretch", 0.0)


def _animate(rig: Any, seed: int, switch: bool) -> None:
    """Key the IK and pole controls (targets kept within reach) and, with ``switch``, the
    pole switch off before :data:`POLE_FROM` and on from there."""
    rng = np.random.default_rng(seed)
    for f in FRAMES[::2]:
        for _tip, (ik, pole, _props) in LIMBS.items():
            pb = rig.pose.bones[ik]
            if ik.startswith("foot"):
                # Feet: lifted (a stretched leg's target would be out of reach).
                pb.location = (*rng.normal(size=2) * 0.08, rng.uniform(0.08, 0.3))
            else:
                pb.location = rng.normal(size=3) * 0.1
            pb.keyframe_insert("location", frame=f)
            pb = rig.pose.bones[pole]
            pb.location = rng.normal(size=3) * 0.15
            pb.keyframe_insert("location", frame=f)
    if switch:
        for _tip, (_, _, props) in LIMBS.items():
            pb = rig.pose.bones[props]
            for f, on in ((1, False), (POLE_FROM, True)):
                pb["pole_vector"] = on
                pb.keyframe_insert('["pole_vector"]', frame=f)


def _names(rig: Any, chains: bool = True) -> list[str]:
    """Every DEF bone and (with ``chains``) the IK chain bones: the rows of :func:`_points`."""
    names = [pb.name for pb in rig.pose.bones if pb.name.startswith("DEF-")]
    if chains:
        names += [b for tip in LIMBS for b in (tip, rig.pose.bones[tip].parent.name)]
    return names


def _points(rig: Any, chains: bool = True) -> np.ndarray:
    """World heads and tails ``(B, 2, 3)`` of every DEF bone and (with ``chains``) the IK
    chain bones, as Blender evaluates them."""
    bpy = blender_module()
    ev = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    world = np.array(ev.matrix_world)
    names = _names(rig, chains)
    out = []
    for n in names:
        pb = ev.pose.bones[n]
        out.append([(world @ np.array([*p, 1.0]))[:3] for p in (pb.head, pb.tail)])
    return np.array(out)


def _record(rig: Any, chains: bool = True) -> dict[int, np.ndarray]:
    scene = blender_module().context.scene
    out = {}
    for f in FRAMES:
        scene.frame_set(f)
        out[f] = _points(rig, chains)
    return out


def _gap(rig: Any, reference: dict[int, np.ndarray], chains: bool = True) -> float:
    """Largest distance (m) of any head or tail from the reference over the frames."""
    scene = blender_module().context.scene
    worst = 0.0
    for f in FRAMES:
        scene.frame_set(f)
        gap = np.linalg.norm(_points(rig, chains) - reference[f], axis=-1).max()
        worst = max(worst, float(gap))
    return worst


def _ik(rig: Any, tip: str) -> list[Any]:
    return [c for c in rig.pose.bones[tip].constraints if c.type == "IK"]


def _broken_drivers(rig: Any) -> list[str]:
    ad = rig.animation_data
    live = [fc for fc in ad.drivers if not fc.mute]
    return [fc.data_path for fc in live if not (fc.is_valid and fc.driver.is_valid)]


def test_generated_rig_ik_chains(rigify_rig: Any) -> None:
    rig = rigify_rig
    assert len(rig.pose.bones) > 600
    drivers = rig.animation_data.drivers
    for tip, (_, pole, props) in LIMBS.items():
        plain, poled = _ik(rig, tip)
        assert (plain.pole_target, poled.pole_target, poled.pole_subtarget) == (None, rig, pole)
        assert plain.subtarget == poled.subtarget
        assert plain.subtarget.startswith("MCH-")
        assert plain.chain_count == poled.chain_count == 2
        assert (plain.use_stretch, poled.use_stretch) == (True, True)
        pb = rig.pose.bones[tip]
        assert pb.ik_stretch == pytest.approx(0.1)
        assert (pb.lock_ik_x, pb.lock_ik_y, pb.lock_ik_z) == (False, True, True)
        for con in (plain, poled):
            fc = drivers.find(f"{con.path_from_id()}.mute")
            assert fc is not None, f"{tip} {con.name}: mute not driven"
            (var,) = fc.driver.variables
            assert var.targets[0].data_path == f'pose.bones["{props}"]["pole_vector"]'
        assert {rig.pose.bones[props][k] for k in ("IK_FK", "pole_vector")} == {0}


@pytest.mark.parametrize("pole_at_convert", [False, True], ids=["pole-off", "pole-on"])
def test_convert_generated_rig(rigify_rig: Any, addon: Any, pole_at_convert: bool) -> None:
    """Converted, the rig shows its own IK's pose (pole switch off and on, keyed); the
    IK/FK switch still gives the FK pose exactly; converting back restores the rig."""
    bpy = blender_module()
    rig = rigify_rig
    _stretch_off(rig)
    _animate(rig, seed=3, switch=True)
    reference = _record(rig)
    _set_all(rig, "IK_FK", 1.0)
    fk_reference = _record(rig, chains=False)
    _set_all(rig, "IK_FK", 0.0)
    bpy.context.scene.frame_set(POLE_FROM if pole_at_convert else 1)

    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    result = addon.convert.last_result
    assert sorted(result.converted) == sorted(LIMBS), result
    assert result.skipped == [], result
    for tip in LIMBS:
        s = rig.pose.bones[tip].reach_ik
        assert (s.has_chain, s.enabled, s.chain_length) == (True, True, 2)
        assert (s.pole, s.pole_bone) == (rig, LIMBS[tip][1])
        path = f"{rig.pose.bones[tip].path_from_id()}.reach_ik.use_pole"
        assert rig.animation_data.drivers.find(path) is not None, f"{tip}: use_pole not driven"
        for con in _ik(rig, tip):
            assert con.mute, f"{tip} {con.name}: Blender's IK still runs"
            assert rig.animation_data.drivers.find(f"{con.path_from_id()}.mute").mute
    # Stretch was switched off on the bones: nothing is left out.
    assert result.not_carried == [], result
    assert _broken_drivers(rig) == []
    # No goal follows another chain: the rig's drivers read properties, not the chains'
    # evaluated bones, so live solving takes one pass per frame.
    assert not addon.evaluate.waits_for_evaluation(rig)
    gap = _gap(rig, reference)
    print(f"\nconverted, pole switch keyed off→on: largest DEF/chain gap {gap * 1e3:.4f} mm")
    assert gap <= 1e-3

    _set_all(rig, "IK_FK", 1.0)
    fk_gap = _gap(rig, fk_reference, chains=False)
    assert fk_gap == 0.0, f"IK_FK = 1 shows the FK pose {fk_gap:.2e} m off"
    _set_all(rig, "IK_FK", 0.0)

    assert bpy.ops.reach_ik.convert_constraints(direction="TO_BLENDER") == {"FINISHED"}
    for tip in LIMBS:
        s = rig.pose.bones[tip].reach_ik
        assert not s.has_chain
        assert not [c for c in rig.pose.bones[tip].constraints if c.type != "IK"]
        plain, poled = _ik(rig, tip)
        assert (poled.pole_target, poled.pole_subtarget) == (rig, LIMBS[tip][1])
        assert plain.pole_target is None
        for con in (plain, poled):
            assert not rig.animation_data.drivers.find(f"{con.path_from_id()}.mute").mute
    assert not [fc for fc in rig.animation_data.drivers if ".reach_ik." in fc.data_path]
    assert _broken_drivers(rig) == []
    back = _gap(rig, reference)
    assert back <= 1e-5, f"converting back: {back:.2e} m from the rig's own IK"


#: IK tip → the words naming its limb's DEF bones (with the tip's side suffix).
LIMB_PARTS = {"MCH-forearm_ik": ("upper_arm", "forearm", "hand"), "MCH-shin_ik": ("thigh", "shin")}


def _limb_rows(rig: Any, tip: str) -> np.ndarray:
    """The rows of :func:`_points` that belong to the limb of ``tip`` (its DEF bones and
    chain bones)."""
    base, side = tip.rsplit(".", 1)
    parts = LIMB_PARTS[base]
    chain = {tip, rig.pose.bones[tip].parent.name}
    return np.array(
        [
            i
            for i, n in enumerate(_names(rig))
            if n in chain
            or (n.startswith("DEF-") and any(p in n for p in parts) and f".{side}" in n)
        ]
    )


def test_convert_carries_stretch(rigify_rig: Any, addon: Any) -> None:
    """Stretch on (as generated), the pole switch keyed off then on: Convert carries the
    stretch (each chain's *Stretch*, *Stretch As* Blender's IK; the bones' *IK Stretch* 0.1
    stays on them, where the chain reads it) and reports nothing about it. Every DEF and
    chain bone within 1 mm of the rig's own IK — the issue's bar — with the pole switch off
    and on (measured 0.065 and 0.413 mm), and the limbs the rig's IK stretches by more than
    1 % (their targets beyond reach) within 1 mm (measured 0.008 mm). Blender also shortens
    the bones within reach (1–17 mm per bone here), which the closed form would not (25.6 mm
    at the knees with *Stretch As* Closed Form); Blender's iteration, reproduced
    (core.blender_stretch), gives those lengths."""
    bpy = blender_module()
    rig = rigify_rig
    _animate(rig, seed=4, switch=True)
    reference = _record(rig)
    rest = {
        tip: [rig.data.bones[b].length for b in (tip, rig.pose.bones[tip].parent.name)]
        for tip in LIMBS
    }
    stretched: dict[int, list[str]] = {}
    for f in FRAMES:
        for tip in LIMBS:
            rows = [_names(rig).index(b) for b in (tip, rig.pose.bones[tip].parent.name)]
            lengths = np.linalg.norm(reference[f][rows, 1] - reference[f][rows, 0], axis=-1)
            if np.all(lengths > np.array(rest[tip]) * 1.01):
                stretched.setdefault(f, []).append(tip)
    assert sum(map(len, stretched.values())) >= 10, stretched  # the animation stretches arms
    assert bpy.ops.reach_ik.convert_constraints(direction="TO_REACH_IK") == {"FINISHED"}
    result = addon.convert.last_result
    assert sorted(result.converted) == sorted(LIMBS), result
    assert not [m for m in result.not_carried if "tretch" in m], result
    for tip in LIMBS:
        assert rig.pose.bones[tip].reach_ik.use_stretch
    scene = bpy.context.scene
    beyond = 0.0
    for f, tips in stretched.items():
        scene.frame_set(f)
        gap = np.linalg.norm(_points(rig) - reference[f], axis=-1).max(axis=1)
        for tip in tips:
            beyond = max(beyond, float(gap[_limb_rows(rig, tip)].max()))
    pole_off = pole_on = 0.0
    for f in FRAMES:
        scene.frame_set(f)
        gap = float(np.linalg.norm(_points(rig) - reference[f], axis=-1).max())
        if f < POLE_FROM:
            pole_off = max(pole_off, gap)
        else:
            pole_on = max(pole_on, gap)
    print(
        f"\nstretch on, carried: limbs the rig's IK stretches within {beyond * 1e3:.3f} mm; "
        f"every DEF and chain bone within {pole_off * 1e3:.3f} mm with the pole switch off, "
        f"{pole_on * 1e3:.3f} mm with it on"
    )
    assert beyond <= 1e-3
    assert pole_off <= 1e-3
    assert pole_on <= 1e-3
