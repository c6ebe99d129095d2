# SPDX-License-Identifier: GPL-3.0-or-later
"""Solve one chain at one frame or at ``F`` frames: the one solve path of live solving,
baking and the diagnostics.

:func:`solve_chain_frames` takes a chain's :class:`FrameInputs` (the armature's world
matrix, the root parent's posed matrix, the root's location channels, target, pole, goal
rotation, FK pose and animated settings, as Blender evaluated them) and returns a
:class:`FrameSolution`. Live solving (:mod:`.evaluate`) passes one frame, every input a
float; the bake (:mod:`.bake_solve`) and the diagnostics (:mod:`.diagnostics`) pass ``F``
frames, every input an ``(F,)`` array. The frame maths is written once on such values
(:mod:`.affine`), in float64; only the core call differs: :meth:`core.Solver.pose` for one
frame (plain floats), :meth:`core.Solver.poses` for many (batched) on a chain without limits,
which the core pins to each other; a chain with limits is solved frame by frame on the
one-frame path (:func:`_frame_by_frame`). So a frame baked from the inputs Blender evaluated
is the frame live solving shows.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from ..core import Chain, ReachIKError, Solver, forward_kinematics
from ..core import rotations as rot
from ..core.components import qangle, qconj, qmul, qslerp
from ..core.kinematics import forward_kinematics_floats
from ..core.matrix9 import quaternion_of
from . import affine
from .affine import Rows, Value, Vec
from .chain_spec import Advanced, _check_solver, _Fixed, _options
from .rig import RigChain, base_rows


class FrameInputs(NamedTuple):
    """One chain's inputs at one frame or at ``F`` frames, as Blender evaluated them.

    Each :data:`.affine.Value` is a float for one frame (``frame_count`` ``None``) or an
    ``(F,)`` array for ``F`` frames (``frame_count`` ``F``).

    Attributes:
        world: the armature's world matrix (:data:`.affine.Rows`).
        parent: the root parent's posed matrix in armature space, or ``None`` (no parent).
        root_location: the root's own location channels (its rest frame, metres).
        target: the target point, world metres.
        pole: the pole point, world metres, or ``None`` (no pole).
        goal: the target's world rotation, 3×3 values (columns may be scaled), for an
            orientation goal, or ``None``.
        fk: the FK rotations (wxyz, basis space), ``(n, 4)`` or ``(F, n, 4)``; read only
            where the influence is below 1 (may be ``None`` when it is nowhere).
        influence: the IK share of the blend with FK, in ``[0, 1]`` (0 on disabled frames).
        pole_angle: radians.
        orient_weight: the orientation goal's weight.
        use_pole: the pole applies (a bool, or an ``(F,)`` bool array: *Use Pole* animated).
        frame_count: ``F``, or ``None`` for one frame.
    """

    world: Rows
    parent: Rows | None
    root_location: Vec
    target: Vec
    pole: Vec | None
    goal: Rows | None
    fk: np.ndarray | None
    influence: Value
    pole_angle: Value
    orient_weight: Value
    use_pole: bool | np.ndarray = True
    frame_count: int | None = None


class FrameSolution(NamedTuple):
    """One chain solved by :func:`solve_chain_frames` (world metres), per frame like its
    :class:`FrameInputs`: for ``F`` frames arrays with a leading ``F`` axis, for one frame
    plain Python values (lists of floats, a float, a bool), which live solving reads
    without numpy's per-call cost.

    Attributes:
        rotations: ``(F, n, 4)`` (one frame: ``n`` lists of 4) wxyz basis rotations,
            blended with FK by influence.
        errors: ``(F,)`` (a float) distance from the effector of that pose to the target.
        reachable: ``(F,)`` (a bool) the target lies within the straightened chain's reach.
        effectors: ``(F, 3)`` (3 floats) the effector of that pose, world.
        distances: ``(F,)`` (a float) the target's distance from the root in the base
            frame (chain units; the chain's reach is :attr:`core.Chain.reach`).
        scales: ``(F, n)`` (``n`` floats) each bone's own scale factor (:func:`bone_scales`,
            blended by influence) when the chain stretches (:func:`stretches`), else
            ``None``.
        turns: ``(F,)`` (a float) with *Rotation*, the angle (radians) from the goal
            orientation to the last bone's in that pose, else ``None``.
    """

    rotations: np.ndarray | list[list[float]]
    errors: Value
    reachable: bool | np.ndarray
    effectors: np.ndarray | Vec
    distances: Value
    scales: np.ndarray | list[float] | None = None
    turns: Value | None = None


def stretches(chain: Chain, use_stretch: bool) -> bool:
    """The chain's links may stretch: its *Stretch* is on and some bone's *IK Stretch* is
    above 0 (then every solve of it reports the links' scales)."""
    return use_stretch and any(w > 0.0 for w in chain.stretch)


def bone_scales(links: np.ndarray) -> np.ndarray:
    """Each bone's own scale factor ``(..., n)`` from its link's stretch ``links``
    ``(..., n)`` (root→tip): its stretch over that of the bone above it in the chain, whose
    scale it inherits; the root's as is (its parent does not stretch)."""
    return np.concatenate([links[..., :1], links[..., 1:] / links[..., :-1]], axis=-1)


def _effectors(chain: Chain, rotations: np.ndarray, links: np.ndarray | None) -> np.ndarray:
    """Effectors ``(F, 3)`` (base frame) of poses ``(F, n, 4)`` whose links stretch by
    ``links (F, n)`` (``None``: they do not).

    A stretching chain is built once per distinct row of ``links`` (frames within reach
    share the unstretched one), and each pose's forward kinematics runs on its own, as
    before, so the effectors are the same to the bit."""
    if links is None:
        return forward_kinematics(chain, rotations)[0][:, -1]
    out = np.empty((len(rotations), 3))
    scaled: dict[bytes, Chain] = {}
    for k, (q, s) in enumerate(zip(rotations, links, strict=True)):
        key = s.tobytes()
        stretched = scaled.get(key)
        if stretched is None:
            stretched = scaled[key] = chain.scaled(s)
        out[k] = forward_kinematics(stretched, q)[0][-1]
    return out


def _stacked(v: Vec, count: int) -> np.ndarray:
    """A :data:`.affine.Vec` of ``F = count`` frames as an ``(F, 3)`` array."""
    return np.stack(np.broadcast_arrays(*v, np.empty(count))[:3], axis=-1)


def _goal_in_base(base: Rows, goal: Rows) -> np.ndarray:
    """The goal rotation relative to the base frame's axes, wxyz ``(4,)`` or ``(F, 4)``:
    ``Bᵀ G`` of both with unit columns (one frame in floats: :func:`core.matrix9.quaternion_of`,
    the twin of :func:`core.rotations.from_matrix` that ``F`` frames take)."""
    b, g = affine.unit_axes(base), affine.unit_axes(goal)
    relative = [
        [b[0][r] * g[0][c] + b[1][r] * g[1][c] + b[2][r] * g[2][c] for c in range(3)]
        for r in range(3)
    ]
    if isinstance(relative[0][0], float):  # one frame: from_matrix's float twin
        return np.array(quaternion_of(tuple(x for row in relative for x in row)))
    m = np.array(np.broadcast_arrays(*(x for row in relative for x in row)), dtype=np.float64)
    return rot.from_matrix(np.moveaxis(m, 0, -1).reshape(*m.shape[1:], 3, 3))


def _frame_solver(chain: Chain, fixed: _Fixed, pole_angle: float, weight: float) -> Solver:
    """The core solver of a chain with its settings at a frame (:func:`_prepared`)."""
    settings = (
        fixed.iterations,
        fixed.tolerance,
        fixed.advanced,
        fixed.use_stretch,
        fixed.soft_reach,
        fixed.stretch_rule,
    )
    return _prepared(chain, fixed.solver, settings, pole_angle, weight)


@functools.lru_cache(maxsize=256)
def _prepared(
    chain: Chain,
    method: str,
    settings: tuple[int, float, Advanced, bool, float, str],
    pole_angle: float,
    weight: float,
) -> Solver:
    """A :class:`core.Solver` prepared once per chain, method, settings (iterations,
    tolerance, advanced, stretch, soft reach, stretch rule), pole angle and weight: it
    checks them and plans the chain when made, and live solving asks for the same one on
    every frame. A solver does not change once made, so the memo answers as a new one.

    Raises:
        ReachIKError: the method is not one of the add-on's solvers.
    """
    _check_solver(method)
    iterations, tolerance, advanced, stretch, soft_reach, stretch_rule = settings
    options = _options(
        iterations, tolerance, pole_angle, weight, advanced, stretch, soft_reach, stretch_rule
    )
    return Solver(chain, method, options)


@functools.lru_cache(maxsize=256)
def _frame_base(
    rig: RigChain,
    world: tuple[tuple[float, ...], ...],
    parent: tuple[tuple[float, ...], ...] | None,
    root_location: tuple[float, ...],
) -> tuple[Rows, Rows]:
    """One frame's base frame (:func:`.rig.base_rows`) and its inverse, memoised on the
    exact inputs: while only a target moves (the rig, its parent and the root's location
    channels stay), live solving asks for the same frame on every update. A pure function
    of its arguments, so the memo answers as a new computation."""
    base = base_rows(rig, world, parent, root_location)
    return base, affine.inverse(base)


def _blend(
    chain: Chain,
    ik: np.ndarray,
    effectors: np.ndarray,
    links: np.ndarray | None,
    share: np.ndarray,
    fk: np.ndarray | None,
) -> None:
    """Blend solved rotations ``ik (F, n, 4)`` with the FK pose ``fk (F, n, 4)`` by the
    IK share ``(F,)`` in place, ``slerp(q_FK, q_IK, share)`` per bone, and a link's stretch
    ``links (F, n)`` as ``1 + share · (s − 1)``, on the frames where the share is below 1;
    their effectors ``(F, 3)`` (base frame) follow by forward kinematics."""
    blend = share < 1.0
    if not blend.any():
        return
    if fk is None:
        raise ReachIKError("the FK pose is needed to blend with influence below 1")
    fk = np.asarray(fk, dtype=np.float64).reshape(ik.shape)
    ik[blend] = rot.normalize(rot.slerp(fk[blend], ik[blend], share[blend][:, None]))
    if links is not None:
        links[blend] = 1.0 + share[blend][:, None] * (links[blend] - 1.0)
    effectors[blend] = _effectors(chain, ik[blend], None if links is None else links[blend])


def _blend_one(
    chain: Chain, pose: list[list[float]], share: float, fk: Any
) -> tuple[list[list[float]], list[float]]:
    """:func:`_blend` for one frame whose links do not stretch, in floats: the ``n``
    solved rotations ``pose`` slerped from the FK rotations ``fk`` (``n × 4``) by the IK
    ``share`` (below 1), and their effector (3 floats, base frame) by forward kinematics."""
    rows = np.asarray(fk, dtype=np.float64).reshape(-1, 4).tolist()
    blended = [qslerp(tuple(p), tuple(q), share) for p, q in zip(rows, pose, strict=True)]
    return [list(q) for q in blended], list(forward_kinematics_floats(chain, blended)[0][-1])


def _solve_one(
    chain: Chain,
    fixed: _Fixed,
    frame: FrameInputs,
    target_b: Vec,
    pole_b: Vec | None,
    goal: np.ndarray | None,
    weight: Value,
) -> tuple[list[list[float]], list[float], list[float] | None]:
    """One frame by :meth:`core.Solver.pose`, blended with FK: rotations (``n`` lists of
    4 floats), the effector (3 floats, base frame) and the links' stretch (``n`` floats,
    or ``None``); numpy only to blend stretched links, when the influence is below 1."""
    solver = _frame_solver(chain, fixed, float(frame.pole_angle), float(weight))
    pose, points, links = solver.pose(target_b, pole_b if frame.use_pole else None, goal)
    if not math.isfinite(sum(map(sum, pose))):
        raise ReachIKError(f"solver '{fixed.solver}' returned non-finite rotations")
    share = float(frame.influence)
    if share >= 1.0:
        return pose, points[-1], links
    share = max(share, 0.0)
    if links is None and frame.fk is not None:
        rotations, effector_b = _blend_one(chain, pose, share, frame.fk)
        return rotations, effector_b, None
    ik, effector = np.array([pose], dtype=np.float64), np.array([points[-1]], dtype=np.float64)
    stretch = None if links is None else np.array([links], dtype=np.float64)
    _blend(chain, ik, effector, stretch, np.array([share]), frame.fk)
    return ik[0].tolist(), effector[0].tolist(), None if stretch is None else stretch[0].tolist()


def _solve_groups(
    chain: Chain,
    fixed: _Fixed,
    frame: FrameInputs,
    target_b: np.ndarray,
    pole_b: np.ndarray | None,
    goal: np.ndarray | None,
    weight: Value,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``F`` frames by :meth:`core.Solver.poses`, one batched call per group of frames
    with the same options (pole used, pole angle, weight), blended with FK: rotations
    ``(F, n, 4)``, effectors ``(F, 3)`` (base frame), links' stretch ``(F, n)`` (or
    ``None``)."""
    count = target_b.shape[0]
    keys = np.stack(
        np.broadcast_arrays(
            np.asarray(frame.use_pole, dtype=np.float64) * (pole_b is not None),
            np.asarray(frame.pole_angle, dtype=np.float64),
            np.asarray(weight, dtype=np.float64),
            np.empty(count),
        )[:3],
        axis=-1,
    )
    # Groups of frames sharing the options: (pole, angle, weight, frames as a slice or indices).
    groups: list[tuple[np.ndarray, Any]]
    if np.all(keys == keys[0]):
        groups = [(keys[0], slice(None))]
    else:
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        groups = [(key, np.flatnonzero(inverse.ravel() == g)) for g, key in enumerate(unique)]
    ik = np.empty((count, chain.n_joints, 4))
    effectors = np.empty((count, 3))
    links = np.ones((count, chain.n_joints)) if stretches(chain, fixed.use_stretch) else None
    for (use_pole, angle, w), idx in groups:
        size = count if isinstance(idx, slice) else idx.size
        # One frame goes to the core unbatched: its batch set-up costs more than the solve.
        pick: Any = (0 if isinstance(idx, slice) else idx[0]) if size == 1 else idx
        result = _frame_solver(chain, fixed, float(angle), float(w)).poses(
            target_b[pick],
            pole=None if pole_b is None or not use_pole else pole_b[pick],
            target_rotation=None if goal is None else goal[pick],
        )
        ik[idx] = np.asarray(result.rotations, dtype=np.float64).reshape(size, -1, 4)
        effectors[idx] = np.asarray(result.positions).reshape(size, -1, 3)[:, -1]
        if links is not None and result.scales is not None:
            links[idx] = np.asarray(result.scales).reshape(size, -1)
    if not np.isfinite(ik).all():
        raise ReachIKError(f"solver '{fixed.solver}' returned non-finite rotations")
    share = np.clip(np.broadcast_to(frame.influence, (count,)), 0.0, 1.0)
    _blend(chain, ik, effectors, links, share, frame.fk)
    return ik, effectors, links


def _frame_by_frame(rig: RigChain, fixed: _Fixed, frame: FrameInputs, count: int) -> FrameSolution:
    """``F`` frames of a chain with limits, each by the one-frame path (:meth:`core.Solver.pose`,
    what live solving shows): on such a chain the batched core solves every target it
    misses one by one anyway, and its batched iterations and searches for a target the
    limits keep out of reach may settle elsewhere than the one-target path (up to ~2° on a
    5-bone chain of ball joints, 0.8.1), so the bake takes the live path itself."""
    solved = [solve_chain_frames(rig, fixed, _at(frame, f)) for f in range(count)]
    scales = [s.scales for s in solved]
    turns = [s.turns for s in solved]
    return FrameSolution(
        rotations=np.array([s.rotations for s in solved], dtype=np.float64),
        errors=np.array([s.errors for s in solved], dtype=np.float64),
        reachable=np.array([s.reachable for s in solved], dtype=bool),
        effectors=np.array([s.effectors for s in solved], dtype=np.float64),
        distances=np.array([s.distances for s in solved], dtype=np.float64),
        scales=None if scales[0] is None else np.array(scales, dtype=np.float64),
        turns=None if turns[0] is None else np.array(turns, dtype=np.float64),
    )


def _at(frame: FrameInputs, f: int) -> FrameInputs:
    """Frame ``f`` of ``F`` frames' inputs, as live solving passes one frame: every value a
    float (a bool for *Use Pole*), the FK pose ``(n, 4)``."""

    def one(value: Any) -> Any:
        if isinstance(value, tuple | list):
            return tuple(one(v) for v in value)
        if isinstance(value, np.ndarray) and value.ndim:
            return float(value[f])
        return None if value is None else float(value)

    return FrameInputs(
        world=one(frame.world),
        parent=one(frame.parent),
        root_location=one(frame.root_location),
        target=one(frame.target),
        pole=one(frame.pole),
        goal=one(frame.goal),
        fk=frame.fk if frame.fk is None or np.ndim(frame.fk) == 2 else np.asarray(frame.fk)[f],
        influence=one(frame.influence),
        pole_angle=one(frame.pole_angle),
        orient_weight=one(frame.orient_weight),
        use_pole=bool(np.broadcast_to(frame.use_pole, (frame.frame_count or 1,))[f]),
    )


def solve_chain_frames(rig: RigChain, fixed: _Fixed, frame: FrameInputs) -> FrameSolution:
    """Solve one chain at one frame or ``F`` frames: the one solve path of live solving and
    baking (module docstring).

    Base frame (:func:`.rig.base_rows`, world) → target, pole and goal rotation in
    it → the core from the rest pose (:class:`core.Solver`; the core removes the twist a
    goal without orientation leaves free) → ``slerp(q_FK, q_IK, influence)`` per bone (a
    link's stretch ``1 + influence · (s − 1)``).

    Args:
        rig: the chain.
        fixed: its settings that cannot be animated (solver, iterations, tolerance, use
            rotation, stretch, advanced settings are read here).
        frame: the inputs at the frame(s).

    Raises:
        ReachIKError: unknown solver, zero scale, non-finite result, FK pose missing.
    """
    chain = rig.chain
    count = frame.frame_count
    if count is not None and not chain.is_free:
        return _frame_by_frame(rig, fixed, frame, count)
    if count is None:
        base, to_base = _frame_base(
            rig,
            tuple(map(tuple, frame.world)),
            None if frame.parent is None else tuple(map(tuple, frame.parent)),
            tuple(frame.root_location),
        )
    else:
        base = base_rows(rig, frame.world, frame.parent, frame.root_location)
        to_base = affine.inverse(base)
    target_b = affine.transform(to_base, frame.target)
    pole_b = None if frame.pole is None else affine.transform(to_base, frame.pole)
    goal = None
    weight: Value = 1.0
    if fixed.use_rotation and frame.goal is not None:
        goal = _goal_in_base(base, frame.goal)
        weight = 1.0 - frame.orient_weight
    tolerance = fixed.tolerance if fixed.tolerance > 0.0 else 1e-6 * chain.reach
    distance = affine.length(target_b)
    reachable = distance <= chain.reach * (1.0 + 1e-9) + tolerance
    if count is None:
        pose, effector_b, links = _solve_one(chain, fixed, frame, target_b, pole_b, goal, weight)
        effector = affine.transform(base, effector_b)
        turn = None
        if goal is not None:
            last = forward_kinematics_floats(chain, [(q[0], q[1], q[2], q[3]) for q in pose])[1][-1]
            turn = qangle(qmul(qconj(tuple(goal.tolist())), last))
        return FrameSolution(
            pose,
            affine.distance(effector, frame.target),
            bool(reachable),
            effector,
            distance,
            None if links is None else bone_scales(np.array(links)).tolist(),
            turn,
        )
    ik, effectors_b, stretch = _solve_groups(
        chain,
        fixed,
        frame,
        _stacked(target_b, count),
        None if pole_b is None else _stacked(pole_b, count),
        goal,
        weight,
    )
    effectors = affine.transform(base, list(effectors_b.T))
    turns = None
    if goal is not None:
        last = forward_kinematics(chain, ik)[1][:, -1]
        turns = rot.angle(rot.multiply(rot.conjugate(goal), last))
    return FrameSolution(
        rotations=ik,
        errors=affine.distance(effectors, frame.target),
        reachable=np.asarray(reachable, dtype=bool),
        effectors=_stacked(effectors, count),
        distances=distance,
        scales=None if stretch is None else bone_scales(stretch),
        turns=turns,
    )
