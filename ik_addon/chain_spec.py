# SPDX-License-Identifier: GPL-3.0-or-later
"""A chain's settings as the solver reads them from its tip pose bone.

The solver methods the UI lists (:data:`METHOD_ORDER`, :func:`available_methods`,
:func:`default_method`); which pose bones hold chains (:func:`chain_tips`,
:func:`armature_chains`, cached until :func:`invalidate`); a chain's settings
(:class:`ChainSpec` from :func:`read_spec`; those that cannot be animated as
:class:`_Fixed`); the core's :class:`~core.SolveOptions` for them (:func:`_options`); each
chain's model (:func:`rig_chain`, cached per :func:`generation`); and every chain of the
file for :mod:`.dependencies` (:func:`dependency_chains`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, NamedTuple

import bpy

from ..core import METHODS, ReachIKError, SolveOptions
from . import dependencies
from .rig import RigChain, RigError, build_rig_chain, chain_bones, rig_signature

#: The solver methods in the order the UI lists them (those the core has implemented).
METHOD_ORDER = (
    "triangulation",
    "ccd",
    "jacobian_transpose",
    "jacobian_pinv",
    "jacobian_dls",
    "fabrik",
)

METHOD_LABELS = {
    "triangulation": "Triangulation",
    "ccd": "CCD",
    "jacobian_transpose": "Jacobian Transpose",
    "jacobian_pinv": "Jacobian Pseudo-inverse",
    "jacobian_dls": "Jacobian DLS",
    "fabrik": "FABRIK",
}

#: Methods that iterate (the iterations and tolerance settings apply to them).
ITERATIVE = frozenset(m for m in METHOD_ORDER if m != "triangulation")


def default_method(bones: int) -> str:
    """The solver a new chain of ``bones`` bones gets: triangulation (exact, closed form)
    for one or two bones, FABRIK for three or more — the method at or better than
    Blender's IK on every rig of ``scripts/bench_natural.py`` (long chains bend evenly,
    3-bone legs keep their rest zigzag; docs/natural.md)."""
    return "fabrik" if bones >= 3 and "fabrik" in METHODS else "triangulation"


@cache
def available_methods() -> tuple[str, ...]:
    """The core's methods, those of :data:`METHOD_ORDER` first, in that order."""
    return tuple(m for m in METHOD_ORDER if m in METHODS) + tuple(
        m for m in METHODS if m not in METHOD_ORDER
    )


#: A chain's *Advanced* settings as :func:`_options` takes them: ``(bend_plane,
#: delta_b_deg, damping, max_step_deg, posture_weight, sweep_steps, distribution)``; ``()``
#: = the core's defaults.
Advanced = tuple[Any, ...]


@dataclass(frozen=True)
class ChainSpec:
    """A chain's settings as read (evaluated) from its tip pose bone."""

    tip: str
    chain_length: int
    use_tail: bool
    target: Any
    target_bone: str
    pole: Any
    pole_bone: str
    pole_angle: float
    solver: str
    iterations: int
    tolerance: float
    influence: float
    use_rotation: bool
    orient_weight: float
    advanced: Advanced = ()
    use_stretch: bool = False
    soft_reach: float = 0.0
    stretch_rule: str = "closed_form"


def chain_tips(obj: Any) -> list[str]:
    """Names of the pose bones of ``obj`` that hold a Reach IK chain (enabled or not)."""
    if obj is None or obj.type != "ARMATURE" or obj.pose is None:
        return []
    return [pb.name for pb in obj.pose.bones if pb.reach_ik.has_chain]


_generation = 0
_chains_cache: dict[tuple[int, int], tuple[int, tuple[str, ...]]] = {}


def invalidate() -> None:
    """Forget which bones hold chains and recheck the chains against the rig: after a chain
    is added, removed or changed, the armature or its pose bones are edited, a file is
    loaded, or an undo step (the property callbacks and handlers call this)."""
    global _generation
    _generation += 1


def generation() -> int:
    """A number that changes with every :func:`invalidate`."""
    return _generation


def armature_chains(obj: Any) -> tuple[str, ...]:
    """:func:`chain_tips` of ``obj``, scanning every pose bone only after
    :func:`invalidate` (scanning a big rig on every frame costs more than the solve)."""
    key = (obj.as_pointer(), obj.data.as_pointer())
    hit = _chains_cache.get(key)
    if hit is not None and hit[0] == _generation:
        return hit[1]
    tips = tuple(chain_tips(obj))
    _chains_cache[key] = (_generation, tips)
    return tips


def advanced_settings(s: Any) -> Advanced:
    """The *Advanced* settings of a chain's settings group ``s`` (see :data:`Advanced`)."""
    return (
        s.bend_plane,
        float(s.delta_b),
        float(s.damping),
        float(s.max_step),
        float(s.posture_weight),
        int(s.sweep_steps),
        s.distribution,
    )


class _Fixed(NamedTuple):
    """The settings of a chain that cannot be animated."""

    chain_length: int
    use_tail: bool
    target: Any
    target_bone: str
    pole: Any
    pole_bone: str
    solver: str
    iterations: int
    tolerance: float
    use_rotation: bool
    advanced: Advanced = ()
    use_stretch: bool = False
    soft_reach: float = 0.0
    stretch_rule: str = "closed_form"


def _fixed(s: Any) -> _Fixed:
    return _Fixed(
        int(s.chain_length),
        bool(s.use_tail),
        s.target,
        s.target_bone,
        s.pole,
        s.pole_bone,
        s.solver,
        int(s.iterations),
        float(s.tolerance),
        bool(s.use_rotation),
        advanced_settings(s),
        bool(s.use_stretch),
        float(s.soft_reach),
        str(s.stretch_rule),
    )


def read_spec(pose_bone: Any, depsgraph: Any = None) -> ChainSpec:
    """A chain's settings from its tip pose bone.

    Args:
        pose_bone: the tip, preferably of the evaluated armature (animated settings such
            as influence are read from it).
        depsgraph: when given, the settings that cannot be animated are read from the
            original bone, and target and pole taken as evaluated in it (an object added in
            the same update is not yet linked from the evaluated armature's settings).
    """
    if depsgraph is None:
        return _spec(pose_bone, _fixed(pose_bone.reach_ik), None)
    original = pose_bone.id_data.original.pose.bones[pose_bone.name]
    return _spec(pose_bone, _fixed(original.reach_ik), depsgraph)


def _spec(pose_bone: Any, fixed: _Fixed, depsgraph: Any) -> ChainSpec:
    """The :class:`ChainSpec` of fixed settings and the animatable ones of ``pose_bone``;
    target and pole as evaluated in ``depsgraph`` (when given)."""
    s = pose_bone.reach_ik
    target, pole = fixed.target, fixed.pole if s.use_pole else None
    if depsgraph is not None:
        target = target.evaluated_get(depsgraph) if target else None
        pole = pole.evaluated_get(depsgraph) if pole else None
    return ChainSpec(
        tip=pose_bone.name,
        chain_length=fixed.chain_length,
        use_tail=fixed.use_tail,
        target=target,
        target_bone=fixed.target_bone,
        pole=pole,
        pole_bone=fixed.pole_bone,
        pole_angle=float(s.pole_angle),
        solver=fixed.solver,
        iterations=fixed.iterations,
        tolerance=fixed.tolerance,
        influence=min(max(float(s.influence), 0.0), 1.0),
        use_rotation=fixed.use_rotation,
        orient_weight=float(s.orient_weight),
        advanced=fixed.advanced,
        use_stretch=fixed.use_stretch,
        soft_reach=fixed.soft_reach,
        stretch_rule=fixed.stretch_rule,
    )


_rig_cache: dict[tuple[Any, ...], tuple[RigChain, int]] = {}


def rig_chain(obj: Any, tip: str, chain_length: int, use_tail: bool) -> RigChain:
    """The (cached) :class:`RigChain`; after an :func:`invalidate` it is checked against the
    rig's rest data and limits once, and rebuilt if they changed."""
    key = (obj.data.as_pointer(), obj.data.name_full, tip, chain_length, use_tail)
    cached = _rig_cache.get(key)
    if cached is not None:
        rig, checked = cached
        if checked == _generation:
            return rig
        if rig.signature == rig_signature(obj, rig.bone_names):
            _rig_cache[key] = (rig, _generation)
            return rig
    built = build_rig_chain(obj, tip, chain_length, use_tail)
    _rig_cache[key] = (built, _generation)
    return built


@lru_cache(maxsize=256)
def _options(
    iterations: int,
    tolerance: float,
    pole_angle: float,
    weight: float,
    advanced: Advanced = (),
    stretch: bool = False,
    soft_reach: float = 0.0,
    stretch_rule: str = "closed_form",
) -> SolveOptions:
    extra: dict[str, Any] = {}
    if advanced:
        bend_plane, delta_b, damping, max_step, posture, sweep, distribution = advanced
        extra = {
            "bend_plane": bend_plane,
            "delta_b_deg": delta_b,
            "damping": damping,
            "max_step_deg": max_step,
            "posture_weight": posture,
            "sweep_steps": sweep,
            "distribution": distribution,
        }
    return SolveOptions(
        max_iterations=max(iterations, 1),
        tolerance=tolerance if tolerance > 0.0 else None,
        pole_angle=pole_angle,
        position_weight=weight,
        stretch=stretch,
        soft_reach=soft_reach,
        stretch_rule=stretch_rule,
        **extra,
    )


def _check_solver(solver: str) -> None:
    if solver not in available_methods():
        raise ReachIKError(
            f"solver '{solver}' is not available; choose one of {', '.join(available_methods())}"
        )


def dependency_chains() -> list[dependencies.ChainGoals]:
    """Every chain of every armature in the file, for :mod:`.dependencies`."""
    chains = []
    objects: Any = bpy.data.objects
    for other in objects:
        if other.type != "ARMATURE" or other.pose is None:
            continue
        for tip in armature_chains(other):
            s = other.pose.bones[tip].reach_ik
            try:
                names = chain_bones(other, tip, s.chain_length, s.use_tail)
            except RigError:
                continue
            chains.append(dependencies.chain_goals(other, tip, names, s))
    return chains
