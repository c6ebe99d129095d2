# SPDX-License-Identifier: GPL-3.0-or-later
"""Cyclic coordinate descent (CCD), batched over targets.

**Position goals** follow the rotation form of CCD in Müller-Cajar & Mukundan, "Triangulation:
a new algorithm for inverse kinematics" (IVCNZ 2007, section 2.2, eqs. 1–2): for each joint
from the effector back to the root, with joint position ``p_c``, effector ``p_e`` and target
``p_t``, rotate the joint by ``θ`` about ``r`` where::

    cos θ = (p_e − p_c)/|p_e − p_c| · (p_t − p_c)/|p_t − p_c|        (eq. 1)
    r     = (p_e − p_c)/|p_e − p_c| × (p_t − p_c)/|p_t − p_c|        (eq. 2)

so that joint→effector points along joint→target. One **iteration** is one such sweep over
every joint (what the paper counts).

**Orientation goals** use the objective of Fedulin & Zhukov ("Algorithms for the real-time
inverse kinematics of a multi-link manipulator", in Russian)::

    g(q) = α·|E(q) − T|²/ℓ² + (1 − α)·|D(q) − V|²_F

with ``α = options.position_weight``, ``E``/``T`` the effector's and goal positions,
``D``/``V`` the effector's and goal frames as 3×3 rotation matrices (columns = frame axes,
so ``|D − V|²_F = Σ_k |d_k − v_k|² = 8·sin²(φ/2)`` for an angle ``φ`` between them), and
``ℓ = L/n`` the mean link length. The reference leaves the units open. A joint turning by
``δ`` moves the effector by about (lever arm)·``δ`` and turns its frame by ``δ``, so
measuring positions in units of a typical lever arm puts the two terms on the same footing:
on random 4–7-hinge arms with pose goals and ``α = 0.5``, ``ℓ = L/n`` converged as often or
more often than the reach ``L``, in up to 10× fewer iterations (``docs/ccd.md``), and the
poses do not depend on the chain's scale. Without an orientation goal ``g = |E − T|²/ℓ²``.

Each single-joint step minimises ``g`` over that joint alone (the reference's CCD-I):

* **Hinge** (1 DOF about a unit axis ``a``, ``JointLimits.kind == "hinge"``). Turning by
  ``Δ`` about ``a`` through the joint maps a vector ``x`` to
  ``R x = (a·x) a + cos Δ (x − (a·x) a) + sin Δ (a × x)``, hence for any pair ``(x, y)``
  ``|R x − y|² = |x|² + |y|² − 2[(a·x)(a·y) + cos Δ (x·y − (a·x)(a·y)) + sin Δ a·(x × y)]``.
  Summing the weighted pairs ``(u, v)`` (``u`` = joint→effector, ``v`` = joint→target,
  weight ``α/ℓ²``) and ``(d_k, v_k)`` (frame axes, weight ``1 − α``) gives
  ``g(Δ) = const − 2 (A cos Δ + B sin Δ)`` with::

      A = α/ℓ² (u·v − (a·u)(a·v)) + (1 − α) Σ_k (d_k·v_k − (a·d_k)(a·v_k))
      B = α/ℓ² a·(u × v)          + (1 − α) a·Σ_k (d_k × v_k)

  ``dg/dΔ = 0`` gives ``tan Δ = B/A``: the reference's ``Δq = atan2(−denom, num) + πk``,
  whose two roots ``k = 0, 1`` are the minimum and the maximum. ``Δ = atan2(B, A)`` picks
  the minimum (``A cos Δ + B sin Δ = +√(A² + B²)``); ``A = B = 0`` gives ``Δ = 0``. With an
  angle range, ``−g`` is ``ρ cos(φ − φ*)`` plus a constant, unimodal on the circle, so the
  best allowed angle is ``φ*`` itself when allowed, else the range end nearer to ``φ*``.
* **Ball joint, position only** (no orientation goal, or ``α = 1``): eqs. 1–2, the
  shortest-arc rotation taking ``u`` to ``v``, which is the single-joint optimum. A zero
  ``u`` or ``v`` (effector or target at the joint) skips the step; antiparallel ``u, v``
  (``r = 0`` but ``θ = π``) turn about an axis normal to ``u`` and the joint's X axis.
* **Ball joint with an orientation goal**: the rotation ``R`` about the joint minimising the
  same weighted sum over the pairs ``(u, v)`` and ``(d_k, v_k)`` is a weighted Wahba
  problem: maximise ``tr(R H)`` with ``H = α/ℓ² u vᵀ + (1 − α) Σ_k d_k v_kᵀ``. Its closed
  form (Kabsch): ``H = U S Wᵀ`` ⇒ ``R = W diag(1, 1, det(W Uᵀ)) Uᵀ``, the exact 3-DOF
  analogue of the hinge step.

**Limits and stiffness**: a ball joint's step is expressed in the joint's rest frame
(``q ← step·q``), its rotation vector scaled per axis by ``JointLimits.weights``
(``1 − stiffness``), then ``JointLimits.project`` applies the limits (for a joint limited
only in bend, the same projection in matrix form, ``_project_cone``). A hinge's step is
scaled by the weight of its axis. Those steps are no longer exact single-joint optima, so
each is kept only where it does not increase ``g``; the exact steps never increase it.
Hence ``g`` never increases, and the result is never worse than the start pose (which is
first projected onto the limits).

**Coarse sweep** (Fedulin & Zhukov): where one joint at a time cannot help (two joints must
move together) CCD stalls: over a sweep, ``g`` falls by less than the fraction ``_STALL``
of its excess ``g − g₀`` over the lower bound ``g₀ = α/ℓ²·max(0, |T| − L)²`` (measuring
the excess keeps far targets, whose ``g`` is mostly unreachable distance, from looking
stalled). Then one joint is swept over ``options.sweep_steps`` coarse angles (a hinge over
its range, or the full turn split into ``sweep_steps + 1`` parts; a ball joint likewise
about its eq. 2 axis, or its X axis when that is undefined) while CCD solves the other
joints from each; the best candidate is kept if it lowers the excess by more than
``_STALL``, and CCD resumes with every joint. The swept joint cycles from the root outward
over successive stalls; a target stops once every joint has been swept in a row without
gain. A sweep counts as many iterations as its longest candidate ran.
``sweep_steps = 0`` gives plain CCD.

A position goal more than the tolerance beyond reach stops (without a sweep) once the
effector is within the tolerance of ``|T| − L``: nothing can improve it by more.

Convergence is checked after every joint step (the paper: reached "as soon as" the effector
is within tolerance); a target that converges stops changing. Targets farther than
``_FAR × L`` are solved for the point at that distance in the same direction (the pose
differs by less than ``1/_FAR`` radians), which keeps all arithmetic finite.

**Start pose** (``options.ccd_start``): by default, :func:`core.ccd_seed.seed` —
triangulation's pass on the chain without its limits, carried onto the limits by
:func:`core.ccd_seed.retarget` — is the answer where it meets the goal (0 iterations);
elsewhere, and with ``"initial"`` (the papers' protocol), CCD starts from the start pose
projected onto the limits.

Internally the joints' rotations are 3×3 matrices (a matrix product is one numpy call,
which keeps small batches fast), re-orthonormalised every ``_RENORMALIZE`` sweeps (every
sweep on chains longer than ``_SHORT``); the result is returned as quaternions with
positions from their forward kinematics. After solving,
:func:`core.bend_plane.orient_bend` applies the pole or the default bend plane (position
goals only). One target takes the plain-float path of :mod:`core.ccd_single` (the same
iteration; tests pin the two together).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import rotations as rot
from .bend_plane import orient_bend
from .chain import Chain
from .kinematics import forward_kinematics
from .limits import JointLimits
from .options import SolveOptions
from .problem import Problem
from .result import Solution
from .rotations import FloatArray

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: A sweep that lowers the objective by less than this fraction of its excess over the
#: lower bound counts as a stall.
_STALL = 1e-3
#: Targets are clipped to this many chain reaches from the root (keeps squares finite).
_FAR = 1e6
#: Joint→effector or joint→target shorter than this fraction of the reach skip the step.
_DEGENERATE = 1e-12
#: A hinge whose step coefficients ``A, B`` are below this fraction of their scale
#: ``α/ℓ²·|u||v| + 3(1 − α)`` does not turn (they are rounding noise).
_NOISE = 1e-12
#: ``|û + v̂|²`` below this counts as antiparallel (eq. 2's axis is undefined).
_ANTIPARALLEL = 1e-12

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

_CONVERGED, _STALLED, _CAPPED = 0, 1, 2


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


def _wrap(phi: FloatArray) -> FloatArray:
    """Angles wrapped to ``[-π, π)``."""
    return np.mod(phi + math.pi, 2.0 * math.pi) - math.pi


def _best_in_range(phi: FloatArray, lo: float, hi: float) -> FloatArray:
    """The angle in ``[lo, hi]`` nearest to ``phi`` on the circle."""
    phi = _wrap(phi)
    inside = (phi >= lo) & (phi <= hi)
    nearer_lo = np.abs(_wrap(phi - lo)) <= np.abs(_wrap(phi - hi))
    return np.where(inside, phi, np.where(nearer_lo, lo, hi))


def _hinge_angle(j: _Joint, Q: FloatArray) -> FloatArray:
    """Angles ``(M,)`` of hinge rotations ``Q (M, 3, 3)`` about the hinge axis.

    For ``Q = I + sin φ K + (1 − cos φ) K²`` with ``K = [a]×``: ``K:Q = 2 sin φ`` and
    ``tr Q = 1 + 2 cos φ``.
    """
    sin2 = np.einsum("ij,mij->m", j.skew, Q)
    cos2 = np.einsum("mii->m", Q) - 1.0
    return np.arctan2(sin2, cos2)


def _hinge_step(
    s: _Setup,
    j: _Joint,
    F: FloatArray,
    Q: FloatArray,
    u: FloatArray,
    v: FloatArray,
    E: FloatArray | None,
    goals: _Goals,
) -> tuple[FloatArray, FloatArray]:
    """New local rotations ``(M, 3, 3)`` and world turns ``(M, 3, 3)`` of a hinge.

    The closed form of the module docstring, evaluated in the joint's parent-side frame
    ``F (M, 3, 3)``, where the axis is the constant ``j.axis``.
    """
    Ft = np.swapaxes(F, -1, -2)
    ul = _apply(Ft, u)
    vl = _apply(Ft, v)
    A = s.c_pos * (_dot(ul, vl) - (ul @ j.axis) * (vl @ j.axis))
    B = s.c_pos * _dot(ul @ j.skew.T, vl)
    if E is not None and goals.frames is not None and s.c_rot > 0.0:
        Dl = Ft @ E
        Vl = Ft @ goals.frames
        A = A + s.c_rot * (np.einsum("mij,mij->m", Dl, Vl) - _dot(j.axis @ Dl, j.axis @ Vl))
        B = B + s.c_rot * np.einsum("mij,mij->m", j.skew @ Dl, Vl)
    phi0 = _hinge_angle(j, Q)
    # A joint that cannot change g (A = B = 0, e.g. a twist about the bone of the last
    # link with a position goal) would otherwise turn by the angle of rounding noise.
    scale = s.c_pos * np.sqrt(_dot(ul, ul) * _dot(vl, vl)) + 3.0 * s.c_rot
    size = A * A + B * B
    noise = size <= (_NOISE * scale) ** 2
    phi = phi0 + j.hinge_weight * np.where(noise, 0.0, np.arctan2(B, A))
    phi = _wrap(phi) if j.angle_range is None else _best_in_range(phi, *j.angle_range)
    turn = F @ _turn_about(j.skew, phi - phi0) @ Ft
    return _turn_about(j.skew, phi), turn


def _ball_turn(
    s: _Setup,
    W: FloatArray,
    u: FloatArray,
    v: FloatArray,
    E: FloatArray | None,
    goals: _Goals,
) -> FloatArray:
    """World rotations ``(M, 3, 3)`` about a ball joint minimising ``g`` (module docstring).

    Position only: eqs. 1–2 as a matrix. With ``a = û``, ``b = v̂`` and ``m = a + b``,
    ``R = I − 2 m mᵀ/|m|² + 2 b aᵀ`` is the product of the reflections ``H(m)·H(a)``
    (``H(x) = I − 2 x xᵀ/|x|²``: ``H(a)`` sends ``a`` to ``−a``, ``H(m)`` sends ``−a`` to ``b``,
    and vectors normal to both are fixed), i.e. the rotation about ``r = a × b`` by ``θ``.
    Antiparallel ``a, b`` take ``m`` normal to ``a``, toward the joint's X axis (column 0
    of ``W``): a half turn. A zero ``u`` or ``v`` gives ``R = I``.
    """
    if E is not None and goals.frames is not None and s.c_rot > 0.0:
        H = s.c_pos * u[:, :, None] * v[:, None, :] + s.c_rot * E @ np.swapaxes(
            goals.frames, -1, -2
        )
        U, _, Vt = np.linalg.svd(H)
        Vt[:, 2, :] *= np.sign(np.linalg.det(U) * np.linalg.det(Vt))[:, None]
        return np.swapaxes(Vt, -1, -2) @ np.swapaxes(U, -1, -2)
    eps2 = s.eps * s.eps
    nu2 = _dot(u, u)
    nv2 = _dot(v, v)
    a = u / np.sqrt(np.maximum(nu2, eps2))[:, None]
    b = v / np.sqrt(np.maximum(nv2, eps2))[:, None]
    m = a + b
    mm = _dot(m, m)
    anti = mm < _ANTIPARALLEL
    if anti.any():
        m[anti] = rot.perpendicular(a[anti], W[anti, :, 0])
        mm[anti] = 1.0
    R = _I3 - (2.0 / mm)[:, None, None] * m[:, :, None] * m[:, None, :]
    R += 2.0 * b[:, :, None] * a[:, None, :]
    skip = (nu2 <= eps2) | (nv2 <= eps2)
    if skip.any():
        R[skip] = _I3
    return R


def _project_cone(Q: FloatArray, cone: float, limits: JointLimits) -> FloatArray:
    """``JointLimits.project`` for a joint limited only by a bend ``cone``, on matrices.

    With ``Q = swing(s, β)·twist`` (``s`` normal to the bone axis ``ŷ``; the posed bone
    axis is ``Q ŷ``, column 1, at angle ``β`` from ``ŷ``, and ``s ∥ ŷ × Q ŷ``), the nearest
    allowed rotation keeps the twist and shortens the swing to ``cone``:
    ``swing(s, cone)·twist = R(s, cone − β)·Q``. Bends within ``1e-9`` of a half turn
    (``s`` undefined) go through ``limits.project``.

    Args:
        Q: ``(M, 3, 3)`` local rotations (rest frame).
        cone: the bend limit (radians).
        limits: the joint's limits (for the half-turn fallback).
    """
    y = Q[:, :, 1]
    over = y[:, 1] < math.cos(cone)
    if not over.any():
        return Q
    out = Q.copy()
    rows = np.flatnonzero(over)
    yo = y[rows]
    sin_bend = np.hypot(yo[:, 0], yo[:, 2])
    regular = sin_bend > 1e-9
    if not regular.all():
        odd = rows[~regular]
        out[odd] = rot.to_matrix(limits.project(rot.from_matrix(Q[odd])))
        rows, yo, sin_bend = rows[regular], yo[regular], sin_bend[regular]
    axis = np.stack((yo[:, 2], np.zeros(len(rows)), -yo[:, 0]), axis=-1) / sin_bend[:, None]
    bend = np.arctan2(sin_bend, yo[:, 1])
    out[rows] = _turn_about(_skew(axis), cone - bend) @ Q[rows]
    return out


def _ball_step(
    j: _Joint, F: FloatArray, Q: FloatArray, W: FloatArray, R: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Apply stiffness and limits to a world turn ``R``: new local rotations and world turns.

    The step in the rest frame is ``Fᵀ R F`` (``q ← step·q``); all arrays ``(M, 3, 3)``.
    """
    Ft = np.swapaxes(F, -1, -2)
    if j.exact:
        return Ft @ R @ W, R
    step = Ft @ R @ F
    if j.stiff:
        step = rot.to_matrix(rot.from_rotvec(rot.to_rotvec(rot.from_matrix(step)) * j.weights))
    if j.limits.is_free:
        Q_new = np.matmul(step, Q)
    elif j.cone is not None:
        Q_new = _project_cone(step @ Q, j.cone, j.limits)
    else:
        Q_new = rot.to_matrix(j.limits.project(rot.from_matrix(step @ Q)))
    return Q_new, F @ Q_new @ np.swapaxes(W, -1, -2)


def _sweep(
    s: _Setup,
    Q: FloatArray,
    goals: _Goals,
    g: FloatArray,
    frozen: int | None,
    renormalize: bool,
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """One CCD iteration over every joint but ``frozen``, effector to root.

    Args:
        s: the setup.
        Q: ``(M, n, 3, 3)`` local rotations (not modified).
        goals: the ``M`` goals.
        g: ``(M,)`` the objective of ``Q``.
        frozen: a joint index left unchanged (coarse sweep), or ``None``.
        renormalize: first remove the drift from orthogonality (see ``_RENORMALIZE``).

    Returns:
        ``(Q, g, reached)`` after the sweep; rows stop changing once reached.
    """
    Q = _orthonormalize(Q) if renormalize else Q.copy()
    positions, F, W = _frames(s, Q)
    e = positions[:, -1]
    E = W[:, -1] if goals.frames is not None else None
    moving = np.ones(len(Q), dtype=bool)
    for j in s.joints:
        i = j.index
        if i == frozen:
            continue
        p = positions[:, i]
        u = e - p
        v = goals.targets - p
        if j.hinge:
            Q_new, turn = _hinge_step(s, j, F[:, i], Q[:, i], u, v, E, goals)
        else:
            R = _ball_turn(s, W[:, i], u, v, E, goals)
            Q_new, turn = _ball_step(j, F[:, i], Q[:, i], W[:, i], R)
        e_new = p + _apply(turn, u)
        E_new = None if E is None else turn @ E
        g_new, reached = _score(s, e_new, E_new, goals)
        take = moving if j.exact else moving & (g_new <= g)
        if take.all():
            Q[:, i], e, E, g = Q_new, e_new, E_new, g_new
        else:
            Q[:, i] = np.where(take[:, None, None], Q_new, Q[:, i])
            e = np.where(take[:, None], e_new, e)
            if E is not None and E_new is not None:
                E = np.where(take[:, None, None], E_new, E)
            g = np.where(take, g_new, g)
        moving &= ~(take & reached)
        if not moving.any():
            break
    return Q, g, ~moving


def _descend(
    s: _Setup,
    Q: FloatArray,
    goals: _Goals,
    g: FloatArray,
    budget: IntArray,
    frozen: int | None = None,
) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
    """CCD iterations on ``M`` unconverged rows until each converges, stalls or runs out.

    Args:
        s: the setup.
        Q: ``(M, n, 3, 3)`` start rotations (not modified).
        goals: the ``M`` goals.
        g: ``(M,)`` their objective.
        budget: ``(M,)`` iterations each row may use.
        frozen: a joint index left unchanged, or ``None``.

    Returns:
        ``(Q, g, used, status)``: rotations, objective, iterations used ``(M,)`` and
        ``_CONVERGED``/``_STALLED``/``_CAPPED`` per row.
    """
    Q = Q.copy()
    g = g.copy()
    used = np.zeros(len(Q), dtype=np.int64)
    status = np.full(len(Q), _CAPPED, dtype=np.int64)
    active = np.flatnonzero(budget > 0)
    sweeps = 0
    every = _renormalize_every(Q.shape[1])
    while active.size:
        renormalize = sweeps % every == 0
        sweeps += 1
        Qa, ga, reached = _sweep(s, Q[active], goals.take(active), g[active], frozen, renormalize)
        Q[active] = Qa
        used[active] += 1
        stalled = ~reached & (
            (g[active] - ga < _STALL * (g[active] - goals.floor[active]))
            | (ga <= goals.settled[active])
        )
        g[active] = ga
        status[active[reached]] = _CONVERGED
        status[active[stalled]] = _STALLED
        done = reached | stalled | (used[active] >= budget[active])
        active = active[~done]
    return Q, g, used, status


def _effector_score(s: _Setup, Q: FloatArray, goals: _Goals) -> tuple[FloatArray, BoolArray]:
    """Objective and reached flags of poses ``Q (M, n, 3, 3)``."""
    positions, _, W = _frames(s, Q)
    return _score(s, positions[:, -1], W[:, -1], goals)


def _sweep_candidates(s: _Setup, Q: FloatArray, goals: _Goals, j: _Joint, steps: int) -> FloatArray:
    """``(M, steps, n, 3, 3)`` copies of ``Q (M, n, 3, 3)``, joint ``j`` at coarse angles."""
    i = j.index
    m = len(Q)
    out = np.repeat(Q[:, None], steps, axis=1)
    turns = 2.0 * math.pi * np.arange(1, steps + 1) / (steps + 1)
    if j.hinge:
        if j.angle_range is not None:
            angles = np.broadcast_to(np.linspace(*j.angle_range, steps), (m, steps))
        else:
            angles = _hinge_angle(j, Q[:, i])[:, None] + turns
        out[:, :, i] = _turn_about(j.skew, angles)
        return out
    positions, F, W = _frames(s, Q)
    p = positions[:, i]
    u = positions[:, -1] - p
    v = goals.targets - p
    axis = np.cross(u, v)
    usable = _dot(axis, axis) > 1e-18 * _dot(u, u) * _dot(v, v)
    axis = np.where(usable[:, None], axis, W[:, i, :, 0])
    local_axis = _apply(np.swapaxes(F[:, i], -1, -2), axis)
    local_turns = rot.from_axis_angle(local_axis[:, None, :], np.broadcast_to(turns, (m, steps)))
    q = rot.from_matrix(Q[:, i])[:, None, :]
    out[:, :, i] = rot.to_matrix(j.limits.project(rot.multiply(local_turns, q)))
    return out


def _coarse_sweep(
    s: _Setup,
    Q: FloatArray,
    goals: _Goals,
    g: FloatArray,
    budget: IntArray,
    j: _Joint,
    steps: int,
) -> tuple[FloatArray, FloatArray, IntArray, BoolArray, BoolArray]:
    """Sweep joint ``j`` of ``M`` stalled rows while CCD solves the others (module doc).

    Returns:
        ``(Q, g, used, improved, converged)`` per row: the best candidate where it lowers
        the excess ``g − floor`` by more than the fraction ``_STALL`` (else the input),
        iterations used, and flags.
    """
    m, n = Q.shape[:2]
    cand = _sweep_candidates(s, Q, goals, j, steps).reshape(m * steps, n, 3, 3)
    many = goals.repeat(steps)
    g0, _ = _effector_score(s, cand, many)
    Qc, gc, used, status = _descend(s, cand, many, g0, np.repeat(budget, steps), frozen=j.index)
    gc = gc.reshape(m, steps)
    best = np.argmin(gc, axis=1)
    rows = np.arange(m)
    g_best = gc[rows, best]
    improved = g - g_best > _STALL * (g - goals.floor)
    Q_best = Qc.reshape(m, steps, n, 3, 3)[rows, best]
    converged = improved & (status.reshape(m, steps)[rows, best] == _CONVERGED)
    Q_out = np.where(improved[:, None, None, None], Q_best, Q)
    g_out = np.where(improved, g_best, g)
    return Q_out, g_out, np.maximum(used.reshape(m, steps).max(axis=1), 1), improved, converged


def _start_pose(chain: Chain, q: FloatArray) -> FloatArray:
    """Start rotations ``(N, n, 4)`` projected onto the joint limits, as matrices."""
    out = rot.normalize(np.array(q, dtype=np.float64))
    for i, lim in enumerate(chain.limits):
        if not lim.is_free:
            out[:, i] = lim.project(out[:, i])
    return rot.to_matrix(out)


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


def _goals(problem: Problem, s: _Setup, targets: FloatArray) -> _Goals:
    """The goals of the (far-clipped) ``targets (N, 3)``."""
    reach = problem.chain.reach
    quats = problem.target_rotations
    lower_bound = np.maximum(0.0, np.linalg.norm(targets, axis=-1) - reach)
    frames = None if quats is None else rot.to_matrix(quats)
    beyond = lower_bound > problem.tolerance
    if quats is not None and s.c_rot > 0.0:
        beyond[:] = False
    settled = np.where(beyond, s.c_pos * (lower_bound + problem.tolerance) ** 2, -1.0)
    return _Goals(targets, frames, s.c_pos * lower_bound**2, settled)


def solve_ccd(problem: Problem) -> Solution:
    """Solve a batch of IK problems with CCD and its coarse sweep (see module docstring).

    One target takes the plain-float path of :mod:`core.ccd_single` (the same iteration).

    Args:
        problem: the checked batch; reads ``options.max_iterations``,
            ``options.position_weight``, ``options.angle_tolerance``,
            ``options.sweep_steps``, ``options.ccd_start`` and the bend-plane options.

    Returns:
        A :class:`Solution`; ``iterations (N,)`` counts CCD sweeps (0 when the start pose
        already meets the goal), including the iterations of coarse sweeps. Positions are
        the forward kinematics of the returned rotations.
    """
    if problem.size == 1:
        return ccd_single.solve_one_target(problem)
    return solve_batch(problem)


def solve_batch(problem: Problem) -> Solution:
    """:func:`solve_ccd` on numpy arrays for any batch size: the reference of the
    single-target path (tests pin one to the other).

    With the triangulation seed, targets it meets (or, beyond reach, gets as near as
    possible) keep it as their answer with 0 iterations; CCD solves the others from the
    start pose, from which it does better on limited chains than from the seed; the seed
    is kept instead where it is closer to the target by more than the tolerance. On a
    limited chain, targets within its length still missed take triangulation within the
    limits where that comes closer (:func:`core.ccd_seed.within_limits`)."""
    seeded = ccd_seed.seed(problem)
    if seeded is None:
        return _iterate_batch(problem)
    q_seed, p_seed = seeded
    s = _setup(problem)
    chain = problem.chain
    goals = _goals(problem, s, _clip_far(problem.targets, chain.reach))
    frames = None
    if goals.frames is not None:
        frames = rot.to_matrix(forward_kinematics(chain, q_seed)[1][:, -1])
    g, reached = _score(s, p_seed[:, -1], frames, goals)
    keep = reached | (g <= goals.settled)
    rotations, positions = q_seed, p_seed
    iterations = np.zeros(problem.size, dtype=np.int64)
    if not keep.all():
        rows = np.flatnonzero(~keep)
        sub = _iterate_batch(
            dataclasses.replace(
                problem,
                targets=problem.targets[rows],
                target_rotations=None
                if problem.target_rotations is None
                else problem.target_rotations[rows],
                poles=None if problem.poles is None else problem.poles[rows],
                initial=problem.initial[rows],
            )
        )
        # The seed stays where it is closer by more than the tolerance (an admissible pose
        # within the limits, from which CCD's own iteration may stall farther away).
        seed_error = np.linalg.norm(p_seed[rows, -1] - problem.targets[rows], axis=-1)
        error = np.linalg.norm(sub.positions[:, -1] - problem.targets[rows], axis=-1)
        closer = ~(seed_error < error - problem.tolerance)
        rows, picked = rows[closer], np.flatnonzero(closer)
        rotations, positions = rotations.copy(), positions.copy()
        rotations[rows], positions[rows], iterations[rows] = (
            sub.rotations[picked],
            sub.positions[picked],
            sub.iterations[picked],
        )
    if not chain.is_free:
        rotations, positions = ccd_seed.within_limits(problem, rotations, positions)
    effector = None
    if problem.target_rotations is not None:
        effector = forward_kinematics(chain, rotations)[1][:, -1]
    return Solution(rotations, positions, iterations, effector)


def _iterate_batch(problem: Problem) -> Solution:
    """CCD from the (projected) start pose, batched (the module docstring)."""
    s = _setup(problem)
    chain = problem.chain
    cap = problem.options.max_iterations
    steps = problem.options.sweep_steps
    targets = _clip_far(problem.targets, chain.reach)
    goals = _goals(problem, s, targets)
    Q = _start_pose(chain, problem.initial)
    g, reached = _effector_score(s, Q, goals)
    iterations = np.zeros(problem.size, dtype=np.int64)
    # Coarse sweeps: the movable joint (root first) each row sweeps next, and how many
    # sweeps in a row found nothing better.
    sweepable = s.joints[::-1]
    next_joint = np.zeros(problem.size, dtype=np.int64)
    failures = np.zeros(problem.size, dtype=np.int64)

    pending = np.flatnonzero(~reached)
    while pending.size:
        Qp, gp, used, status = _descend(
            s, Q[pending], goals.take(pending), g[pending], cap - iterations[pending]
        )
        Q[pending], g[pending] = Qp, gp
        iterations[pending] += used
        stuck = pending[status == _STALLED]
        pending = np.empty(0, dtype=np.int64)
        if steps == 0 or not sweepable or not stuck.size:
            break
        stuck = stuck[g[stuck] > goals.settled[stuck]]
        while stuck.size:
            stuck = stuck[(iterations[stuck] < cap) & (failures[stuck] < len(sweepable))]
            retry = []
            joint_of = next_joint[stuck]
            for k in np.unique(joint_of):
                rows = stuck[joint_of == k]
                Qr, gr, used, improved, converged = _coarse_sweep(
                    s,
                    Q[rows],
                    goals.take(rows),
                    g[rows],
                    cap - iterations[rows],
                    sweepable[k],
                    steps,
                )
                Q[rows], g[rows] = Qr, gr
                iterations[rows] += used
                next_joint[rows] = (k + 1) % len(sweepable)
                failures[rows] = np.where(improved, 0, failures[rows] + 1)
                pending = np.concatenate((pending, rows[improved & ~converged]))
                retry.append(rows[~improved])
            stuck = np.concatenate(retry) if retry else np.empty(0, dtype=np.int64)
        pending = pending[iterations[pending] < cap]

    Q = _orthonormalize(Q)
    positions, _, _ = _frames(s, Q)
    clipped = dataclasses.replace(problem, targets=targets)
    start = rot.from_matrix(Q)
    q, _ = orient_bend(clipped, start, positions)
    # A start pose that meets the goal is returned as it is (the seed is already oriented).
    q = np.where(iterations[:, None, None] > 0, rot.positive_w(q), start)
    positions, world = forward_kinematics(chain, q)
    return Solution(
        rotations=q,
        positions=positions,
        iterations=iterations,
        effector_rotation=None if problem.target_rotations is None else world[:, -1],
    )


# The float path and the seed use this module's setup and reference code; imported last
# (cycle).
from . import ccd_seed, ccd_single  # noqa: E402
