# SPDX-License-Identifier: GPL-3.0-or-later
"""What Blender shows of a chain: the residual of the evaluated pose, not of the solve.

Live solving writes the solved pose through each chain bone's *Reach IK* constraint
(:mod:`.constraints`); anything else in the bones' constraint stacks (the constraint muted,
its influence lowered, a constraint after it, the constraint deleted) or moving their parent
changes what is drawn and rendered. The panels therefore report the **shown** residual: the
evaluated pose's effector (the tail of the chain's last bone, world space, from the evaluated
armature) against the target of the last live solve, and warn when that effector is more
than the chain's tolerance (at least ``1e-5`` of the chain's length, above single-precision
rounding) away from the solved one, naming the first cause found in the stacks.

It costs a few property reads per chain, so the panels call it when they draw.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import bpy
from mathutils import Vector

from . import affine, constraints, handlers
from .affine import Rows
from .blender_types import ArmatureObject, get_item

#: A chain within reach (at full influence) whose shown effector is further than this
#: fraction of its length (or its tolerance) from the target *missed* it: joint limits
#: keep it away ("unreachable within limits") or an iterative solver ran out of iterations.
MISS = 1e-4

#: Drift between the shown and the solved effector below this fraction of the chain's
#: length is rounding (the evaluated pose is single precision), never a warning.
ROUNDING = 1e-5

#: With *Rotation*, the shown last bone turned more than this (degrees) from the target's
#: orientation did not take it (the status says by how much).
TURN_MISS_DEG = 0.1


class Shown(NamedTuple):
    """A solved chain as Blender shows it (world metres).

    Attributes:
        error: distance from the shown (evaluated) effector to the target.
        drift: distance from the shown effector to the solved one.
        reachable: the target lies within the straightened chain's reach.
        missed: within reach and at full influence, yet further than :data:`MISS` of the
            chain's length (or its tolerance) from the target.
        warning: why the shown pose is not the solved one ("" when it is).
        turned: with *Rotation*, the angle (degrees) from the target's orientation to the
            shown last bone's, else ``None``.
    """

    error: float
    drift: float
    reachable: bool
    missed: bool
    warning: str
    turned: float | None = None


def shown_effector(obj_eval: ArmatureObject, bones: tuple[str, ...]) -> Vector:
    """World position (a mathutils vector) of the evaluated chain's effector: the tail of
    its last bone."""
    return obj_eval.matrix_world @ obj_eval.pose.bones[bones[-1]].tail


def tolerances(obj: ArmatureObject, tip: str, bones: tuple[str, ...]) -> tuple[float, float]:
    """How far (world metres) the shown effector may be from the solved one, and from the
    target before the chain counts as having missed it."""
    scale = max(obj.matrix_world.to_scale().to_tuple())
    length = sum(obj.data.bones[name].length for name in bones) * scale
    set_tolerance = obj.pose.bones[tip].reach_ik.tolerance * scale
    return max(set_tolerance, ROUNDING * length), max(set_tolerance, MISS * length)


def shown_status(obj: ArmatureObject, tip: str, depsgraph: bpy.types.Depsgraph) -> Shown | None:
    """The shown residual of the chain ending at ``tip`` of ``obj`` (original object), or
    ``None`` when its last live solve gave no pose (not solved yet, or a problem)."""
    st = handlers.status.get((obj.name, tip))
    if st is None or st.error is None or not st.bones:
        return None
    if st.target is None or st.effector is None:
        return None
    obj_eval = obj.evaluated_get(depsgraph)
    if obj_eval.pose is None or get_item(obj_eval.pose.bones, st.bones[-1]) is None:
        return None
    effector = shown_effector(obj_eval, st.bones)
    error = (effector - st.target).length
    drift = (effector - st.effector).length
    drift_tolerance, miss_tolerance = tolerances(obj, tip, st.bones)
    warning = cause(obj, st.bones) if drift > drift_tolerance else ""
    full = obj.pose.bones[tip].reach_ik.influence >= 1.0
    missed = st.reachable and full and error > miss_tolerance
    turned = None
    if st.goal is not None:
        shown = obj_eval.matrix_world @ obj_eval.pose.bones[st.bones[-1]].matrix
        turned = turn_between(st.goal, affine.rows_of(shown))
    return Shown(error, drift, st.reachable, missed, warning, turned)


def turn_between(a: Rows, b: Rows) -> float:
    """The angle (degrees) from the orientation of ``a`` to that of ``b`` (the top rows of
    affine matrices; columns of any length, mirrored alike or not): the rotation ``Aᵀ B`` of
    their unit columns, from its trace ``Σ_c â_c · b̂_c``."""
    trace = 0.0
    for c in range(3):
        u = [float(a[r][c]) for r in range(3)]
        v = [float(b[r][c]) for r in range(3)]
        nu, nv = math.sqrt(sum(x * x for x in u)), math.sqrt(sum(x * x for x in v))
        if nu > 0.0 and nv > 0.0:
            trace += sum(x * y for x, y in zip(u, v, strict=True)) / (nu * nv)
    cos = 0.5 * (trace - 1.0)
    return math.degrees(math.acos(min(1.0, max(-1.0, cos))))


def cause(obj: ArmatureObject, bones: tuple[str, ...]) -> str:
    """The first thing in the chain bones' constraint stacks that changes the solved pose,
    in a few words for the panel."""
    for name in bones:
        pb = get_item(obj.pose.bones, name)
        if pb is None:
            continue
        ours = constraints.find(pb)
        if ours is None:
            return f"{name}: no Reach IK constraint"
        if ours.mute:
            return f"{name}: Reach IK constraint muted"
        if ours.influence < 1.0:
            return f"{name}: constraint influence {ours.influence:.2f}"
        stack = list(pb.constraints)
        for con in stack[stack.index(ours) + 1 :]:
            if not con.mute and con.influence > 0.0:
                return f"{name}: '{con.name}' after Reach IK"
    return "something else moves the chain"
