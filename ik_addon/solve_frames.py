# SPDX-License-Identifier: GPL-3.0-or-later
"""Solve one chain at ``F`` frames from arrays of its inputs: the solve path of baking.

:func:`solve_chain_frames` takes the chain's base frames, targets, poles, goal rotations,
FK pose and animated settings for ``F`` frames and returns a :class:`FrameSolution`. The
bake (:mod:`.bake_solve`) and the diagnostics (:mod:`.diagnostics`) call it; live solving
(:mod:`.evaluate`, one frame per chain) takes the same steps in plain floats, and a test
and every bake check that both agree. Also the stretch helpers both paths share
(:func:`stretches`, :func:`bone_scales`, :func:`_effectors`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import Chain, ReachIKError, Solver, forward_kinematics
from ..core import rotations as rot
from .chain_spec import ChainSpec, _check_solver, _options
from .rig import RigChain, affine_inverse


@dataclass(frozen=True, eq=False)
class FrameSolution:
    """One chain solved at ``F`` frames by :func:`solve_chain_frames` (world metres).

    Attributes:
        rotations: ``(F, n, 4)`` wxyz basis rotations, blended with FK by influence.
        errors: ``(F,)`` distance from the effector of that pose to the target.
        reachable: ``(F,)`` the target lies within the straightened chain's reach.
        effectors: ``(F, 3)`` the effector of that pose, world.
        scales: ``(F, n)`` each bone's own scale factor (:func:`bone_scales`, blended by
            influence) when the chain stretches (:func:`stretches`), else ``None``.
    """

    rotations: np.ndarray
    errors: np.ndarray
    reachable: np.ndarray
    effectors: np.ndarray
    scales: np.ndarray | None = None


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


def _to_frame(maps: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Points ``(F, 3)`` mapped by the affine matrices ``(F, 4, 4)``."""
    return (maps[:, :3, :3] @ points[:, :, None])[:, :, 0] + maps[:, :3, 3]


def solve_chain_frames(
    rig: RigChain,
    spec: ChainSpec,
    bases: np.ndarray,
    targets: np.ndarray,
    poles: np.ndarray | None,
    goal_rotations: np.ndarray | None,
    fk: np.ndarray | None,
    influence: np.ndarray,
    pole_angle: np.ndarray,
    orient_weight: np.ndarray,
) -> FrameSolution:
    """Solve one chain at ``F`` frames: the one solve path of live solving and baking.

    Base frame → :meth:`core.Solver.poses` from the rest pose (batched over the frames, one
    call per group of frames with the same options; the core removes the twist a goal
    without orientation leaves free) → ``slerp(q_FK, q_IK, influence)`` per bone.

    Args:
        rig: the chain.
        spec: its settings (solver, iterations, tolerance, use rotation are read here).
        bases: ``(F, 4, 4)`` base frames in world space (world @ :func:`.rig.base_matrices`).
        targets: ``(F, 3)`` target points, world metres.
        poles: ``(F, 3)`` pole points, world metres, or ``None``.
        goal_rotations: ``(F, 3, 3)`` the target's world rotation matrices (columns may be
            scaled) for an orientation goal, or ``None``.
        fk: ``(F, n, 4)`` the FK rotations (wxyz, basis space); read only on frames with
            influence below 1 (may be ``None`` when there are none).
        influence: ``(F,)`` the blend IK share in ``[0, 1]`` (0 on disabled frames).
        pole_angle: ``(F,)`` radians.
        orient_weight: ``(F,)`` the orientation goal's weight.

    Raises:
        ReachIKError: unknown solver, zero scale, non-finite result.
    """
    _check_solver(spec.solver)
    chain = rig.chain
    count = targets.shape[0]
    to_base = affine_inverse(bases)
    target_b = _to_frame(to_base, targets)
    pole_b = None if poles is None else _to_frame(to_base, poles)
    goal = None
    weight = np.ones(count)
    if spec.use_rotation and goal_rotations is not None:
        base_rot = bases[:, :3, :3] / np.linalg.norm(bases[:, :3, :3], axis=-2, keepdims=True)
        world_rot = goal_rotations / np.linalg.norm(goal_rotations, axis=-2, keepdims=True)
        goal = rot.from_matrix(np.swapaxes(base_rot, -1, -2) @ world_rot)
        weight = 1.0 - np.asarray(orient_weight, dtype=np.float64)
    angles = np.asarray(pole_angle, dtype=np.float64)
    # Groups of frames sharing the options: (pole angle, weight, frames as a slice or indices).
    groups: list[tuple[float, float, Any]]
    if count == 1 or (np.all(angles == angles[0]) and np.all(weight == weight[0])):
        groups = [(float(angles[0]), float(weight[0]), slice(None))]
    else:
        keys, inverse = np.unique(np.stack([angles, weight], axis=-1), axis=0, return_inverse=True)
        groups = [(a, w, np.flatnonzero(inverse.ravel() == g)) for g, (a, w) in enumerate(keys)]
    ik = np.empty((count, chain.n_joints, 4))
    positions = np.empty((count, chain.n_joints + 1, 3))
    links = np.ones((count, chain.n_joints)) if stretches(chain, spec.use_stretch) else None
    for angle, w, idx in groups:
        size = count if isinstance(idx, slice) else idx.size
        # One frame goes to the core unbatched: its batch set-up costs more than the solve.
        pick: Any = (0 if isinstance(idx, slice) else idx[0]) if size == 1 else idx
        solver = Solver(
            chain,
            spec.solver,
            _options(
                spec.iterations,
                spec.tolerance,
                float(angle),
                float(w),
                spec.advanced,
                spec.use_stretch,
                spec.soft_reach,
                spec.stretch_rule,
            ),
        )
        result = solver.poses(
            target_b[pick],
            pole=None if pole_b is None else pole_b[pick],
            target_rotation=None if goal is None else goal[pick],
        )
        solved = np.asarray(result.rotations, dtype=np.float64).reshape(size, -1, 4)
        positions[idx] = np.asarray(result.positions).reshape(size, -1, 3)
        if links is not None and result.scales is not None:
            links[idx] = np.asarray(result.scales).reshape(size, -1)
        ik[idx] = solved
    if not np.isfinite(ik).all():
        raise ReachIKError(f"solver '{spec.solver}' returned non-finite rotations")
    share = np.asarray(influence, dtype=np.float64).clip(0.0, 1.0)
    effector_b = positions[:, -1]
    blend = share < 1.0
    if blend.any():
        if fk is None:
            raise ReachIKError("the FK pose is needed to blend with influence below 1")
        ik[blend] = rot.normalize(rot.slerp(fk[blend], ik[blend], share[blend][:, None]))
        if links is not None:
            links[blend] = 1.0 + share[blend][:, None] * (links[blend] - 1.0)
        effector_b[blend] = _effectors(chain, ik[blend], None if links is None else links[blend])
    effectors = _to_frame(bases, effector_b)
    tolerance = spec.tolerance if spec.tolerance > 0.0 else 1e-6 * chain.reach
    reach_tol = chain.reach * 1e-9 + tolerance
    miss = effectors - targets
    return FrameSolution(
        rotations=ik,
        errors=np.sqrt(np.add.reduce(miss * miss, axis=-1)),
        reachable=np.sqrt(np.add.reduce(target_b * target_b, axis=-1)) <= chain.reach + reach_tol,
        effectors=effectors,
        scales=None if links is None else bone_scales(links),
    )
