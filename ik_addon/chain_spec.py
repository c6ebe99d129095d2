# SPDX-License-Identifier: GPL-3.0-or-later
"""A chain's settings as the solver reads them from its tip pose bone.

The solver methods the UI lists (:data:`METHOD_ORDER`, :func:`available_methods`,
:func:`default_method`); which pose bones hold chains (:func:`chain_tips`,
:func:`armature_chains`, cached until the next invalidate); a chain's settings
(:class:`ChainSpec` from :func:`read_spec`; those that cannot be animated as
:class:`_Fixed`); the core's :class:`~core.SolveOptions` for them (:func:`_options`); each
chain's model (:func:`rig_chain`, cached per generation); and every chain of the
file for :mod:`.dependencies` (:func:`dependency_chains`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import bpy

from ..core import METHODS, ReachIKError, SolveOptions
from . import dependencies
from .blender_types import ArmatureObject, ChainBone, is_armature
from .live_state import live
from .rig import RigChain, RigError, build_rig_chain, chain_bones, rig_signature

if TYPE_CHECKING:
    from .properties import ReachIKBoneSettings

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


# ----------------------------------------------------------------------------- the schema
#: The roles of a chain setting in :data:`SETTINGS`.
ANIMATED, FIXED, ADVANCED, RECORD, REPORT = "animated", "fixed", "advanced", "record", "report"


_Value = TypeVar("_Value")


def _as_is(value: _Value) -> _Value:
    return value


#: Every property of a chain's settings group (:class:`.properties.ReachIKBoneSettings`,
#: ``pose_bone.reach_ik``): name → (role, how the solver reads its value). The one list of
#: the chain settings; the others are derived from it, and a test checks that it names
#: every property of the group and that :class:`_Fixed` and :class:`ChainSpec` match it.
#: Roles: ``animated`` may be animated, read at every frame by live solving and the bake
#: (in this order: :data:`ANIMATED_SETTINGS`); ``fixed`` read once per generation
#: (:class:`_Fixed`, in this order); ``advanced`` the core's extra options (:data:`Advanced`,
#: in this order); ``record`` kept for the add-on, not read by the solve; ``report`` the
#: last bake's report, which *Remove* keeps.
SETTINGS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "enabled": (ANIMATED, _as_is),
    "influence": (ANIMATED, _as_is),
    "pole_angle": (ANIMATED, _as_is),
    "orient_weight": (ANIMATED, _as_is),
    "use_pole": (ANIMATED, _as_is),
    "chain_length": (FIXED, int),
    "use_tail": (FIXED, bool),
    "target": (FIXED, _as_is),
    "target_bone": (FIXED, _as_is),
    "pole": (FIXED, _as_is),
    "pole_bone": (FIXED, _as_is),
    "solver": (FIXED, _as_is),
    "iterations": (FIXED, int),
    "tolerance": (FIXED, float),
    "use_rotation": (FIXED, bool),
    "use_stretch": (FIXED, bool),
    "soft_reach": (FIXED, float),
    "stretch_rule": (FIXED, str),
    "bend_plane": (ADVANCED, _as_is),
    "delta_b": (ADVANCED, float),
    "damping": (ADVANCED, float),
    "max_step": (ADVANCED, float),
    "posture_weight": (ADVANCED, float),
    "sweep_steps": (ADVANCED, int),
    "distribution": (ADVANCED, _as_is),
    "has_chain": (RECORD, _as_is),
    "source": (RECORD, _as_is),
    "bake_report": (REPORT, _as_is),
}


def settings_of(*roles: str) -> tuple[str, ...]:
    """The names of the settings with one of ``roles``, in :data:`SETTINGS`' order."""
    return tuple(name for name, (role, _) in SETTINGS.items() if role in roles)


#: The settings that may be animated, read at every frame: enabled, influence, pole angle,
#: orientation weight, use pole (live solving and the bake unpack them in this order).
ANIMATED_SETTINGS = settings_of(ANIMATED)

#: The settings read once per generation (the fields of :class:`_Fixed` before
#: ``advanced``).
FIXED_SETTINGS = settings_of(FIXED)

#: The *Advanced* settings, in the order of :data:`Advanced`.
ADVANCED_SETTINGS = settings_of(ADVANCED)

#: The settings *Remove* resets (all but the last bake's report).
CHAIN_SETTINGS = settings_of(ANIMATED, FIXED, ADVANCED, RECORD)

#: :data:`ANIMATED_SETTINGS` of a settings group, as a tuple.
read_animated = operator.attrgetter(*ANIMATED_SETTINGS)

_FIXED_READS = tuple((name, SETTINGS[name][1]) for name in FIXED_SETTINGS)
_ADVANCED_READS = tuple((name, SETTINGS[name][1]) for name in ADVANCED_SETTINGS)


# ----------------------------------------------------------------------------- settings
#: A chain's *Advanced* settings as :func:`_options` takes them: ``(bend_plane,
#: delta_b_deg, damping, max_step_deg, posture_weight, sweep_steps, distribution)``; ``()``
#: = the core's defaults.
Advanced = tuple[Any, ...]


@dataclass(frozen=True)
class ChainSpec:
    """A chain's settings as read (evaluated) from its tip pose bone: the tip, the
    :data:`FIXED_SETTINGS` (target and pole evaluated, the pole ``None`` unless used), the
    animated pole angle, influence and orientation weight at this frame, and the
    *Advanced* settings."""

    tip: str
    chain_length: int
    use_tail: bool
    target: bpy.types.Object | None
    target_bone: str
    pole: bpy.types.Object | None
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


def chain_tips(obj: bpy.types.Object | None) -> list[str]:
    """Names of the pose bones of ``obj`` that hold a Reach IK chain (enabled or not)."""
    if not is_armature(obj):
        return []
    return [pb.name for pb in obj.pose.bones if pb.reach_ik.has_chain]


def armature_chains(obj: ArmatureObject) -> tuple[str, ...]:
    """:func:`chain_tips` of ``obj``, scanning every pose bone only after
    :meth:`.live_state.LiveState.invalidate` (scanning a big rig on every frame costs more
    than the solve)."""
    key = (obj.as_pointer(), obj.data.as_pointer())
    hit = live.chains.get(key)
    if hit is not None and hit[0] == live.generation:
        return hit[1]
    tips = tuple(chain_tips(obj))
    live.chains[key] = (live.generation, tips)
    return tips


def advanced_settings(s: ReachIKBoneSettings) -> Advanced:
    """The *Advanced* settings of a chain's settings group ``s`` (see :data:`Advanced`)."""
    return tuple(read(getattr(s, name)) for name, read in _ADVANCED_READS)


class _Fixed(NamedTuple):
    """The settings of a chain that cannot be animated: the :data:`FIXED_SETTINGS`, in that
    order, then the *Advanced* ones."""

    chain_length: int
    use_tail: bool
    target: bpy.types.Object | None
    target_bone: str
    pole: bpy.types.Object | None
    pole_bone: str
    solver: str
    iterations: int
    tolerance: float
    use_rotation: bool
    use_stretch: bool
    soft_reach: float
    stretch_rule: str
    advanced: Advanced = ()


def _fixed(s: ReachIKBoneSettings) -> _Fixed:
    """The :class:`_Fixed` settings of a chain's settings group ``s``."""
    return _Fixed._make([*(read(getattr(s, n)) for n, read in _FIXED_READS), advanced_settings(s)])


def spec_fixed(spec: ChainSpec) -> _Fixed:
    """The :class:`_Fixed` settings of a :class:`ChainSpec`."""
    return _Fixed._make(getattr(spec, name) for name in _Fixed._fields)


def read_spec(pose_bone: ChainBone, depsgraph: bpy.types.Depsgraph | None = None) -> ChainSpec:
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
    armature = pose_bone.id_data.original
    original = armature.pose.bones[pose_bone.name] if armature is not None else pose_bone
    return _spec(pose_bone, _fixed(original.reach_ik), depsgraph)


def _spec(pose_bone: ChainBone, fixed: _Fixed, depsgraph: bpy.types.Depsgraph | None) -> ChainSpec:
    """The :class:`ChainSpec` of fixed settings and the animatable ones of ``pose_bone``;
    target and pole as evaluated in ``depsgraph`` (when given)."""
    s = pose_bone.reach_ik
    target, pole = fixed.target, fixed.pole if s.use_pole else None
    if depsgraph is not None:
        target = target.evaluated_get(depsgraph) if target else None
        pole = pole.evaluated_get(depsgraph) if pole else None
    return ChainSpec(
        tip=pose_bone.name,
        **{**fixed._asdict(), "target": target, "pole": pole},
        pole_angle=float(s.pole_angle),
        influence=min(max(float(s.influence), 0.0), 1.0),
        orient_weight=float(s.orient_weight),
    )


def rig_chain(obj: ArmatureObject, tip: str, chain_length: int, use_tail: bool) -> RigChain:
    """The (cached, :attr:`.live_state.LiveState.rigs`) :class:`RigChain`; after an
    invalidate it is checked against the rig's rest data and limits once, and rebuilt if
    they changed."""
    key = (obj.data.as_pointer(), obj.data.name_full, tip, chain_length, use_tail)
    cached = live.rigs.get(key)
    if cached is not None:
        rig, checked = cached
        if checked == live.generation:
            return rig
        if rig.signature == rig_signature(obj, rig.bone_names):
            live.rigs[key] = (rig, live.generation)
            return rig
    built = build_rig_chain(obj, tip, chain_length, use_tail)
    live.rigs[key] = (built, live.generation)
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
    if solver not in METHODS:  # (available_methods: the same names, ordered for the UI)
        raise ReachIKError(
            f"solver '{solver}' is not available; choose one of {', '.join(available_methods())}"
        )


def dependency_chains() -> list[dependencies.ChainGoals]:
    """Every chain of every armature in the file, for :mod:`.dependencies`."""
    chains = []
    for other in bpy.data.objects:
        if not is_armature(other):
            continue
        for tip in armature_chains(other):
            s = other.pose.bones[tip].reach_ik
            try:
                names = chain_bones(other, tip, s.chain_length, s.use_tail)
            except RigError:
                continue
            chains.append(dependencies.chain_goals(other, tip, names, s))
    return chains
