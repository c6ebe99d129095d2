# SPDX-License-Identifier: GPL-3.0-or-later
"""CCD's per-chain setup (:mod:`core.ccd`): joint facts, frames and the objective.

:func:`_setup` builds once per chain and options (cached) what every sweep reads: each
joint's kind, hinge axis or limits and rest frame (:class:`_Joint`, :func:`_chain_facts`),
the objective's weights (:class:`_Setup`); :class:`_Goals` holds a batch's targets and
bounds, the targets clipped to ``_FAR`` reaches (:func:`_clip_far`; the float path clips
with the same ``_FAR``). Beside them the matrix algebra of the batched sweeps: world
frames of a pose (:func:`_frames`), the objective ``g`` (:func:`_score`), turns about an
axis and the re-orthonormalisation of the rotation matrices (every ``_RENORMALIZE`` sweeps
on chains of up to ``_SHORT`` joints, else every sweep).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import rotations as rot
from .chain import Chain
from .limits import JointLimits
from .options import SolveOptions
from .problem import Problem
from .rotations import FloatArray

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
#: Joint→effector or joint→target shorter than this fraction of the reach skip the step.
_DEGENERATE = 1e-12
#: Targets are clipped to this many chain reaches from the root (keeps squares finite).
_FAR = 1e6


#: Sweeps between re-orthonormalisations of the rotation matrices on chains of up to
#: ``_SHORT`` joints; longer chains renormalise before every sweep. A local step is
#: ``Fᵀ R W`` with ``F`` the product of the parent joints' matrices, so a joint's drift
#: from orthogonality grows by about the sum of its parents' drifts per sweep: harmless
#: for a few joints over 8 sweeps, but exponential in the chain's length (at 100 links the
#: matrices left the rotations within 8 sweeps and overflowed from 300). One Newton step
#: squares the drift.
_RENORMALIZE = 8
_SHORT = 8

_I3: FloatArray = np.eye(3)


@dataclass(frozen=True)
class _Joint:
    """Static facts about one movable joint, gathered once per solve."""

    index: int
    limits: JointLimits
    hinge: bool
    axis: FloatArray
    """Hinge axis ``(3,)`` in the joint's rest frame (hinges only)."""
    skew: FloatArray
    """``(3, 3)`` cross-product matrix ``[axis]×`` (hinges only)."""
    angle_range: tuple[float, float] | None
    weights: FloatArray
    """``(3,)`` per-axis ``1 − stiffness`` (ball joints)."""
    hinge_weight: float
    """Weight of the hinge axis, ``a·(w ⊙ a)``."""
    stiff: bool
    exact: bool
    """The step is the exact single-joint optimum (never raises the objective)."""
    cone: float | None
    """The bend limit of a ball joint limited by nothing else (its fast projection)."""


def _skew(a: FloatArray) -> FloatArray:
    """Cross-product matrices ``[a]× (..., 3, 3)`` of vectors ``a (..., 3)``."""
    z = np.zeros(a.shape[:-1])
    x, y, w = a[..., 0], a[..., 1], a[..., 2]
    return np.stack((z, -w, y, w, z, -x, -y, x, z), axis=-1).reshape((*a.shape[:-1], 3, 3))


def _joint(index: int, limits: JointLimits) -> _Joint:
    weights = limits.weights
    if limits.kind == "hinge":
        axis, angle_range = limits.hinge
        w = float(axis @ (weights * axis))
        stiff = w < 1.0
        return _Joint(
            index, limits, True, axis, _skew(axis), angle_range, weights, w, stiff, not stiff, None
        )
    stiff = bool(np.any(weights < 1.0))
    exact = limits.is_free and not stiff
    cone_only = not any(limits.lock) and all(r is None for r in limits.ranges)
    cone = limits.cone if cone_only else None
    return _Joint(
        index, limits, False, _I3[0], _skew(_I3[0]), None, weights, 1.0, stiff, exact, cone
    )


def _clip_far(targets: FloatArray, reach: float) -> FloatArray:
    """Targets ``(N, 3)`` farther than ``_FAR × reach`` moved along their ray to that distance.

    Distances are computed as ``max|t_k| · |t / max|t_k||`` so huge targets do not overflow.
    """
    big = np.max(np.abs(targets), axis=-1, keepdims=True)
    unit = np.divide(targets, big, out=np.zeros_like(targets), where=big > 0.0)
    length = np.linalg.norm(unit, axis=-1, keepdims=True)
    far = big * length > _FAR * reach
    if not np.any(far):
        return targets
    safe = np.where(far, length, 1.0)
    return np.where(far, unit / safe * (_FAR * reach), targets)


def _turn_about(skew: FloatArray, angle: FloatArray) -> FloatArray:
    """Rotation matrices ``(..., 3, 3)`` by ``angle (...)`` about the axis of ``skew``
    (Rodrigues: ``I + sin φ K + (1 − cos φ) K²``)."""
    s = np.sin(angle)[..., None, None]
    c = np.cos(angle)[..., None, None]
    return _I3 + s * skew + (1.0 - c) * np.matmul(skew, skew)


@dataclass(frozen=True)
class _Setup:
    """What every sweep needs besides the per-target arrays."""

    chain: Chain
    rest: FloatArray
    """``(n, 3, 3)`` rest rotations as matrices."""
    rest_is_identity: tuple[bool, ...]
    offset_parts: tuple[tuple[tuple[int, float], ...], ...]
    """Per joint, the non-zero components ``(axis, value)`` of its offset."""
    joints: tuple[_Joint, ...]
    """Movable joints from the effector back to the root."""
    c_pos: float
    """Weight ``α/ℓ²`` of the squared position error (``ℓ`` = mean link length)."""
    c_rot: float
    """Weight ``1 − α`` of the squared frame difference (0 without an orientation goal)."""
    tol2: float
    min_trace: float
    """An effector frame is within the angle tolerance when ``tr(Dᵀ V) >= min_trace``."""
    check_position: bool
    check_angle: bool
    eps: float
    """Lengths below this are degenerate (chain units)."""


@dataclass
class _Goals:
    """Per-target goals of a batch of ``M`` rows (base frame)."""

    targets: FloatArray
    """``(M, 3)`` goal positions."""
    frames: FloatArray | None
    """``(M, 3, 3)`` goal orientations as rotation matrices, or ``None``."""
    floor: FloatArray
    """``(M,)`` a lower bound of ``g``: ``α/ℓ² · max(0, |T| − L)²``."""
    settled: FloatArray
    """``(M,)`` position goals farther than the tolerance beyond reach: ``g`` at or below
    this (the effector within the tolerance of ``|T| − L``) cannot improve by more than
    the tolerance; ``-1`` otherwise."""

    def take(self, rows: IntArray) -> _Goals:
        frames = None if self.frames is None else self.frames[rows]
        return _Goals(self.targets[rows], frames, self.floor[rows], self.settled[rows])

    def repeat(self, times: int) -> _Goals:
        frames = None if self.frames is None else np.repeat(self.frames, times, axis=0)
        return _Goals(
            np.repeat(self.targets, times, axis=0),
            frames,
            np.repeat(self.floor, times),
            np.repeat(self.settled, times),
        )


@functools.lru_cache(maxsize=64)
def _chain_facts(
    chain: Chain,
) -> tuple[
    FloatArray, tuple[bool, ...], tuple[tuple[tuple[int, float], ...], ...], tuple[_Joint, ...]
]:
    """Per-chain data of :class:`_Setup` (cached per chain object; chains are immutable)."""
    rest = rot.to_matrix(chain.rest_rotations)
    identity = tuple(bool(np.array_equal(r, _I3)) for r in rest)
    parts = tuple(tuple((k, float(o[k])) for k in range(3) if o[k] != 0.0) for o in chain.offsets)
    joints = tuple(
        _joint(i, lim) for i, lim in reversed(list(enumerate(chain.limits))) if lim.kind != "fixed"
    )
    return rest, identity, parts, joints


def _setup(problem: Problem) -> _Setup:
    return _setup_of(
        problem.chain, problem.options, problem.target_rotations is not None, problem.tolerance
    )


@functools.lru_cache(maxsize=256)
def _setup_of(chain: Chain, opts: SolveOptions, oriented: bool, tolerance: float) -> _Setup:
    """:func:`_setup` (cached: a live solver asks for the same one on every frame)."""
    rest, rest_is_identity, offset_parts, joints = _chain_facts(chain)
    reach = chain.reach
    alpha = opts.position_weight if oriented else 1.0
    return _Setup(
        chain=chain,
        rest=rest,
        rest_is_identity=rest_is_identity,
        offset_parts=offset_parts,
        joints=joints,
        c_pos=alpha * (chain.n_joints / reach) ** 2,
        c_rot=1.0 - alpha,
        tol2=tolerance * tolerance,
        min_trace=1.0 + 2.0 * math.cos(min(opts.angle_tolerance, math.pi)),
        check_position=alpha > 0.0,
        check_angle=oriented and alpha < 1.0,
        eps=_DEGENERATE * reach,
    )


def _dot(a: FloatArray, b: FloatArray) -> FloatArray:
    return np.einsum("...i,...i->...", a, b)


def _apply(m: FloatArray, v: FloatArray) -> FloatArray:
    """Matrices ``(M, 3, 3)`` times vectors ``(M, 3)`` (by columns: numpy's matmul is slow
    on large stacks of 3×3 matrices)."""
    out = m[..., 0] * v[..., 0:1]
    out += m[..., 1] * v[..., 1:2]
    out += m[..., 2] * v[..., 2:3]
    return out


def _frames(s: _Setup, Q: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Forward kinematics with rotation matrices (:mod:`core.kinematics`, same model).

    Args:
        s: the setup.
        Q: ``(M, n, 3, 3)`` local rotations.

    Returns:
        ``positions (M, n + 1, 3)``, parent-side frames ``F (M, n, 3, 3)`` (``W_{i−1}·rest_i``)
        and joint frames ``W (M, n, 3, 3)`` (``F_i·q_i``), base frame.
    """
    m, n = Q.shape[:2]
    positions = np.zeros((m, n + 1, 3))
    F = np.empty((m, n, 3, 3))
    W = np.empty((m, n, 3, 3))
    F[:, 0] = s.rest[0]
    for i in range(n):
        W[:, i] = F[:, i] @ Q[:, i]
        step = positions[:, i]
        for k, length in s.offset_parts[i]:
            step = step + W[:, i, :, k] * length
        positions[:, i + 1] = step
        if i + 1 < n:
            F[:, i + 1] = W[:, i] if s.rest_is_identity[i + 1] else W[:, i] @ s.rest[i + 1]
    return positions, F, W


def _renormalize_every(n: int) -> int:
    """Sweeps between re-orthonormalisations for a chain of ``n`` joints."""
    return _RENORMALIZE if n <= _SHORT else 1


def _orthonormalize(Q: FloatArray) -> FloatArray:
    """One Newton step ``Q (3I − QᵀQ)/2`` toward the nearest rotation: squares the drift of
    matrices ``(..., 3, 3)`` that products have carried slightly off orthogonal."""
    return 0.5 * Q @ (3.0 * _I3 - np.swapaxes(Q, -1, -2) @ Q)


def _score(
    s: _Setup, e: FloatArray, E: FloatArray | None, goals: _Goals
) -> tuple[FloatArray, BoolArray]:
    """Objective ``g (M,)`` and reached flags ``(M,)`` of effector positions ``e (M, 3)``
    and frames ``E (M, 3, 3)`` (``None`` without an orientation goal)."""
    d = e - goals.targets
    err2 = _dot(d, d)
    reached = err2 <= s.tol2 if s.check_position else np.ones(err2.shape, dtype=bool)
    if E is None or goals.frames is None:
        return s.c_pos * err2, reached
    trace = np.einsum("mij,mij->m", E, goals.frames)
    g = s.c_pos * err2 + s.c_rot * np.maximum(0.0, 6.0 - 2.0 * trace)
    if s.check_angle:
        reached = reached & (trace >= s.min_trace)
    return g, reached
