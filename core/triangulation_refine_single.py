# SPDX-License-Identifier: GPL-3.0-or-later
"""The search of triangulation within limits for one target, in plain Python floats.

The float twin of :mod:`core.triangulation_refine` (the numpy reference, which tests pin
this module to) for :func:`core.triangulation_limits_single.solve_one`: the same candidates,
the same refinement with the same constants, iteration counts and damping schedule, the same
rule picking one (:func:`core.triangulation_limits.reach_within_limits` describes them):

* :func:`refine` — :func:`core.triangulation_refine._refine` for one pose: projected damped
  least squares, ``Δ = Jᵀ(JJᵀ + λ²I)⁻¹ e`` (the ``3 × 3`` system by the Cholesky solve of
  :mod:`core.jacobian_single_linalg`, where numpy's ``solve`` factors it by LU: the steps
  agree to rounding), columns ``(1 − stiffness_k)·(W_i e_k) × (p_e − p_i)`` (a ball
  joint's three in closed form, :func:`_columns`; a held joint's removed from ``JJᵀ`` as a
  rank-one downdate, :func:`_step`: both to rounding), each joint turned by ``exp`` of its
  share (a hinge by its angle, :meth:`JointLimits.hinge_turned_floats`: to rounding) and
  kept within its limits, with the same active set of joints held on their limits
  (:func:`_step`);
* :func:`keep_best` — :func:`core.triangulation_refine._keep_best` for one target;
* :func:`search` and :func:`refine_far` — the candidates and rounds of
  :func:`~core.triangulation_limits.reach_within_limits` for a target within the chain's
  length, and its refinement of the pass's pose for a target beyond it.

Limits are kept by :meth:`JointLimits.project_floats` and
:meth:`JointLimits.retract_floats`. The two random admissible poses of each restart round
are the reference's seeded draws for a batch of one
(:func:`core.triangulation_refine._random_rotations`, one numpy call), projected in floats
(:func:`project_all`, the twin of :func:`~core.triangulation_refine._project_all` to
rounding: numpy's projection of one pose cost ~2.5 ms, an eighth of a missed target's
search on ``bench_solvers``' 5-bone chain). A refused step keeps the Jacobian of the pose
it leaves unchanged. Poses are lists of ``n`` quaternions (4-tuples wxyz), positions lists
of ``n + 1`` 3-tuples.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .chain import Chain
from .components import Quat, Vec, qangle, qmul_conj, qrotate
from .kinematics import forward_kinematics_floats
from .limits import JointLimits
from .rotations import SMALL_ANGLE
from .triangulation_refine import (
    _CLIPPED,
    _CLIPPED_ABOVE,
    _FAR,
    _IN_COLUMNS,
    _KEPT_LEAST,
    _LAMBDA0,
    _LAMBDA_FAR,
    _LAMBDA_PER_ERROR,
    _LAMBDA_RANGE,
    _MAX_STEP,
    _NEAR_COS,
    _PROMISE,
    _REFUSED,
    _ROUNDS,
    _SAME_MINIMUM_COS,
    _SEED,
    _STALL_GAIN,
    _STALL_WINDOW,
    _STEPS,
    CLOSER_BY,
    SETTLED_FROM,
    _axes,
    _middle,
    _random_rotations,
)

Pose = list[Quat]
_IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)
#: A pose, its joint positions and its effector's distance to the target.
Refined = tuple[Pose, list[Vec], float]


@dataclass(frozen=True)
class _Facts:
    """Per chain, as floats: each joint's turning axes and weights
    (:func:`core.triangulation_refine._axes`), its rotation in the bend-side candidate
    (:func:`~core.triangulation_refine._middle`; ``None`` for a free joint), and whether
    no joint can turn."""

    axes: tuple[tuple[tuple[Vec, float], ...], ...]
    middle: tuple[Quat | None, ...]
    still: bool
    #: The joints that turn: index, axes and weights, and limits (``None`` where free).
    turning: tuple[tuple[int, tuple[tuple[Vec, float], ...], JointLimits | None], ...]
    #: Per joint, its weight ``w`` where it turns about its three basis axes all weighted
    #: ``w`` (a free joint, or a ball joint without locks or uneven stiffness:
    #: :func:`_columns` and :func:`_shares` take its block in closed form), else ``None``.
    ball: tuple[float | None, ...]
    #: Per joint, its column's weight where it is a hinge (:func:`_step` turns it by its
    #: angle, :meth:`JointLimits.hinge_turned_floats`), else ``None``.
    hinge: tuple[float | None, ...]


@functools.lru_cache(maxsize=64)
def _facts(chain: Chain) -> _Facts:
    axes = tuple(
        tuple(
            ((float(a[0]), float(a[1]), float(a[2])), float(w))
            for a, w in zip(ax, weights, strict=True)
        )
        for ax, weights in _axes(chain)
    )
    middle = tuple(None if lim.is_free else _quat(_middle(lim).tolist()) for lim in chain.limits)
    turning = tuple(
        (i, joint, None if lim.is_free else lim)
        for i, (joint, lim) in enumerate(zip(axes, chain.limits, strict=True))
        if joint
    )
    basis = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    ball = tuple(
        joint[0][1]
        if len(joint) == 3
        and all(a == e for (a, _), e in zip(joint, basis, strict=True))
        and joint[0][1] == joint[1][1] == joint[2][1]
        else None
        for joint in axes
    )
    hinge = tuple(
        joint[0][1] if lim.kind == "hinge" and len(joint) == 1 else None
        for joint, lim in zip(axes, chain.limits, strict=True)
    )
    return _Facts(axes, middle, not any(axes), turning, ball, hinge)


def _quat(q: list[float] | tuple[float, ...]) -> Quat:
    return (q[0], q[1], q[2], q[3])


def _positive(q: Quat) -> Quat:
    """:func:`core.rotations.positive_w` of one quaternion."""
    return q if not q[0] < 0.0 else (-q[0], -q[1], -q[2], -q[3])


def _distance(a: Vec, b: Vec) -> float:
    """``|a − b|`` as ``np.linalg.norm`` sums it (not :func:`math.dist`'s exact sum)."""
    dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return math.sqrt(dx * dx + dy * dy + dz * dz)


def project_all(chain: Chain, q: Pose) -> Pose:
    """:func:`core.triangulation_refine._project_all` of one pose."""
    return [
        q_i if lim.is_free else lim.project_floats(q_i)
        for q_i, lim in zip(q, chain.limits, strict=True)
    ]


def side_pose(chain: Chain, q: Pose) -> Pose:
    """The bend-side candidate from pose ``q``: every limited joint at the middle of what it
    allows (:func:`core.triangulation_refine._middle`), free joints as ``q`` has them."""
    return [q_i if m is None else m for q_i, m in zip(q, _facts(chain).middle, strict=True)]


def refine(
    chain: Chain, q: Pose, target: Vec, tolerance: float, nearest: bool, gentle: bool = False
) -> Refined:
    """:func:`core.triangulation_refine._refine` of one admissible pose ``q`` toward
    ``target``: the refined pose, its joint positions and its error. ``nearest``: each step
    is kept within the limits by :meth:`JointLimits.project` instead of ``retract``;
    ``gentle``: the first step damped by the start's error
    (:func:`core.triangulation_refine._start_lambda`) instead of ``_LAMBDA0``."""
    return _refine(chain, q, target, tolerance, nearest, None, gentle)[0]


def _refine(
    chain: Chain,
    q: Pose,
    target: Vec,
    tolerance: float,
    nearest: bool,
    near: Refined | None,
    gentle: bool = False,
) -> tuple[Refined, bool]:
    """:func:`refine`, paused (``True``) where a step leaves every joint within
    :data:`~core.triangulation_refine._NEAR` of the pose of ``near`` (a reference refined
    in full) and the error not below its error by
    :data:`~core.triangulation_refine.CLOSER_BY` tolerances
    (:func:`core.triangulation_refine._refine_paused`)."""
    facts = _facts(chain)
    pos, world = forward_kinematics_floats(chain, q)
    err = _distance(target, pos[-1])
    if facts.still:
        return (q, pos, err), False
    reach = chain.reach
    lam = _LAMBDA0
    if gentle:  # (core.triangulation_refine._start_lambda)
        lam = min(max(_LAMBDA_PER_ERROR * err / reach, _LAMBDA0), _LAMBDA_FAR)
    last = err
    lo, hi = _LAMBDA_RANGE
    if not err > tolerance:
        return (q, pos, err), False
    tx, ty, tz = target
    bound = _start_bound(facts, q)  # the joints on their limits: each one's way out
    jac = None  # (kept over a refused step: the pose, so its columns, are the same)
    for count in range(1, _STEPS + 1):
        ex, ey, ez = pos[-1]
        error = (tx - ex, ty - ey, tz - ez)
        if jac is None:
            jac = _columns(facts, world, pos)
        damp = (lam * reach) ** 2
        cut, dual, shares = _held(facts, jac, bound, error, damp)
        stepped = _step(facts, q, jac, shares, dual, error, damp, nearest)
        if stepped is None:
            break  # (the step promises too little: core.triangulation_refine._PROMISE)
        trial, outward, promised = stepped
        tpos, tworld = forward_kinematics_floats(chain, trial)
        terr = _distance(target, tpos[-1])
        if terr < err:  # Levenberg–Marquardt: keep the step, λ by how well it was foretold
            d = 2.0 * ((err * err - terr * terr) / promised) - 1.0
            lam = min(max(lam * math.sqrt(max(_KEPT_LEAST, 1.0 - d * d * d)), lo), hi)
            q, pos, world, err = trial, tpos, tworld, terr
            jac = None
            bound = {**cut, **outward}
        else:
            lam = min(max(lam * _REFUSED, lo), hi)
        progress = True
        if count % _STALL_WINDOW == 0:
            progress = err < (1.0 - _STALL_GAIN) * last
            last = err
        if not (err > tolerance and lam < hi and progress):
            break
        if near is None or err < near[2] - CLOSER_BY * tolerance:
            continue
        if _close(q, near[0], _NEAR_COS):
            return (q, pos, err), True
    return (q, pos, err), False


Gram = tuple[float, float, float, float, float, float]
#: The Jacobian at a pose (:func:`_columns`): per joint its columns (``None`` for a joint
#: of :attr:`_Facts.ball`, whose block is kept as its rotation and lever), the world
#: rotations, the levers ``p_e − p_i`` and the upper triangle of ``J Jᵀ``.
Jacobian = tuple[list[list[Vec] | None], list[Quat], list[Vec], Gram]


def _dot(h: list[float], s: list[float]) -> float:
    """``h · s`` of two joints' worth of column weights, summed in order."""
    total = 0.0
    for hk, sk in zip(h, s, strict=True):
        total += hk * sk
    return total


def _start_bound(facts: _Facts, q: Pose) -> dict[int, list[float]]:
    """:func:`core.triangulation_refine._start_bound` of one pose: the joints on their
    limits and each one's way out, a unit direction in its columns."""
    out: dict[int, list[float]] = {}
    for i, axes, lim in facts.turning:
        if lim is None:
            continue
        turn = lim.way_out_floats(_positive(q[i]))
        h = None if turn is None else _in_columns(turn, axes)
        if h is not None:
            out[i] = h
    return out


def _in_columns(turn: Vec, axes: tuple[tuple[Vec, float], ...]) -> list[float] | None:
    """:func:`core.triangulation_refine._in_columns` of one turn: a unit direction in the
    joint's weighted columns, or ``None`` where the turn has no part along them
    (:data:`~core.triangulation_refine._IN_COLUMNS`)."""
    gx, gy, gz = turn
    along = [gx * a[0] + gy * a[1] + gz * a[2] for a, _ in axes]
    part = math.sqrt(sum(ak * ak for ak in along))
    if not part > _IN_COLUMNS * math.sqrt(gx * gx + gy * gy + gz * gz):
        return None
    h = [ak * weight for ak, (_, weight) in zip(along, axes, strict=True)]
    norm = math.sqrt(sum(hk * hk for hk in h))
    return [hk / norm for hk in h] if norm > 0.0 else None


def _columns(facts: _Facts, world: list[Quat], pos: list[Vec]) -> Jacobian:
    """The Jacobian's columns ``(1 − stiffness_k)·(W_i e_k) × (p_e − p_i)``, grouped by
    joint, and the upper triangle of ``J Jᵀ``, summed joint by joint. A joint of
    :attr:`_Facts.ball` (weight ``w``) adds its block in closed form: its world axes
    ``W_i e_k`` are orthonormal, so its columns ``w (W_i e_k) × l`` sum to
    ``w² (|l|² I − l lᵀ)``."""
    ex, ey, ez = pos[-1]
    s00 = s01 = s02 = s11 = s12 = s22 = 0.0
    cols: list[list[Vec] | None] = []
    levers: list[Vec] = []
    for (w, ux, uy, uz), (px, py, pz), joint_axes, ball in zip(
        world, pos, facts.axes, facts.ball, strict=False
    ):
        lx, ly, lz = ex - px, ey - py, ez - pz
        levers.append((lx, ly, lz))
        if ball is not None:
            xx, yy, zz, w2 = lx * lx, ly * ly, lz * lz, ball * ball
            s00 += w2 * (yy + zz)
            s01 -= w2 * (lx * ly)
            s02 -= w2 * (lx * lz)
            s11 += w2 * (xx + zz)
            s12 -= w2 * (ly * lz)
            s22 += w2 * (xx + yy)
            cols.append(None)
            continue
        joint: list[Vec] = []
        for (vx, vy, vz), weight in joint_axes:
            # qrotate(world, axis) and vcross(axis, lever), written out.
            tx = 2.0 * (uy * vz - uz * vy)
            ty = 2.0 * (uz * vx - ux * vz)
            tz = 2.0 * (ux * vy - uy * vx)
            ax = vx + w * tx + (uy * tz - uz * ty)
            ay = vy + w * ty + (uz * tx - ux * tz)
            az = vz + w * tz + (ux * ty - uy * tx)
            x = (ay * lz - az * ly) * weight
            y = (az * lx - ax * lz) * weight
            z = (ax * ly - ay * lx) * weight
            joint.append((x, y, z))
            s00 += x * x
            s01 += x * y
            s02 += x * z
            s11 += y * y
            s12 += y * z
            s22 += z * z
        cols.append(joint)
    return cols, world, levers, (s00, s01, s02, s11, s12, s22)


def _damped(gram: Gram, error: Vec, damp: float) -> Vec:
    """``(JJᵀ + λ²I)⁻¹ e`` for the upper triangle ``gram`` of ``JJᵀ`` and ``damp`` =
    ``λ²·reach²`` (:func:`core.triangulation_refine._damped`)."""
    g00, g01, g02, g11, g12, g22 = gram
    b0, b1, b2 = error
    # _solve_spd of the 3 × 3 system written out: the same operations in the same order.
    sqrt = math.sqrt
    l00 = sqrt(max(g00 + damp, 1e-300))
    l10 = g01 / l00
    l11 = sqrt(max(g11 + damp - l10 * l10, 1e-300))
    l20 = g02 / l00
    l21 = (g12 - l20 * l10) / l11
    l22 = sqrt(max(g22 + damp - l20 * l20 - l21 * l21, 1e-300))
    y0 = b0 / l00
    y1 = (b1 - l10 * y0) / l11
    y2 = (b2 - l20 * y0 - l21 * y1) / l22
    x2 = y2 / l22
    x1 = (y1 - l21 * x2) / l11
    return (y0 - l10 * x1 - l20 * x2) / l00, x1, x2


def _shares(facts: _Facts, jac: Jacobian, y: Vec) -> list[list[float]]:
    """``Jᵀ y`` grouped by joint (empty for a joint that does not turn): each column's dot
    product with ``y``; for a joint of :attr:`_Facts.ball`, ``w W_iᵀ (l × y)`` (column
    ``k`` is ``w (W_i e_k) × l``, and ``(a × l)·y = a·(l × y)``)."""
    cols, world, levers, _ = jac
    y0, y1, y2 = y
    out: list[list[float]] = []
    for joint, ball, (lx, ly, lz), (w, ux, uy, uz) in zip(
        cols, facts.ball, levers, world, strict=True
    ):
        if joint is not None:
            out.append([cx * y0 + cy * y1 + cz * y2 for cx, cy, cz in joint])
            continue
        assert ball is not None
        vx, vy, vz = ly * y2 - lz * y1, lz * y0 - lx * y2, lx * y1 - ly * y0
        # qunrotate(world, v) written out
        tx = 2.0 * (uz * vy - uy * vz)
        ty = 2.0 * (ux * vz - uz * vx)
        tz = 2.0 * (uy * vx - ux * vy)
        out.append(
            [
                ball * (vx + w * tx + (uz * ty - uy * tz)),
                ball * (vy + w * ty + (ux * tz - uz * tx)),
                ball * (vz + w * tz + (uy * tx - ux * ty)),
            ]
        )
    return out


def _moment(facts: _Facts, jac: Jacobian, i: int, h: list[float]) -> Vec:
    """Joint ``i``'s columns times ``h``, ``C_i h``; for a joint of :attr:`_Facts.ball`,
    ``w (W_i h) × l``."""
    cols, world, levers, _ = jac
    joint = cols[i]
    if joint is not None:
        mx = my = mz = 0.0
        for hk, (cx, cy, cz) in zip(h, joint, strict=True):
            mx += hk * cx
            my += hk * cy
            mz += hk * cz
        return mx, my, mz
    ball = facts.ball[i]
    assert ball is not None
    ax, ay, az = qrotate(world[i], (h[0], h[1], h[2]))
    lx, ly, lz = levers[i]
    return ball * (ay * lz - az * ly), ball * (az * lx - ax * lz), ball * (ax * ly - ay * lx)


def _cut_dual(
    facts: _Facts, jac: Jacobian, cut: dict[int, list[float]], error: Vec, damp: float
) -> tuple[Vec, list[list[float]]]:
    """``y = (JJᵀ + λ²I)⁻¹ e`` for the Jacobian whose joints in ``cut`` lose the given unit
    direction ``h`` of their columns, ``C ← C (I − h hᵀ)`` (``J Jᵀ`` loses ``(C h)(C h)ᵀ``,
    a rank-one downdate each), and ``Cᵀ y`` of every joint's own columns, uncut."""
    g00, g01, g02, g11, g12, g22 = jac[3]
    for i, h in cut.items():
        mx, my, mz = _moment(facts, jac, i, h)
        g00 -= mx * mx
        g01 -= mx * my
        g02 -= mx * mz
        g11 -= my * my
        g12 -= my * mz
        g22 -= mz * mz
    dual = _damped((g00, g01, g02, g11, g12, g22), error, damp)
    return dual, _shares(facts, jac, dual)


def _held(
    facts: _Facts, jac: Jacobian, bound: dict[int, list[float]], error: Vec, damp: float
) -> tuple[dict[int, list[float]], Vec, list[list[float]]]:
    """:func:`core.triangulation_refine._held` for one pose: the joints of ``bound`` (on
    their limits, each with its way out ``h``) held this step, and the step's dual ``y``
    and shares ``Jᵀ y`` with them held (a held joint's share without its part along
    ``h``)."""
    dual, shares = _cut_dual(facts, jac, bound, error, damp)
    cut = {i: h for i, h in bound.items() if _dot(h, shares[i]) > 0.0}
    if len(cut) < len(bound):
        dual, shares = _cut_dual(facts, jac, cut, error, damp)
    for i, h in cut.items():
        share = shares[i]
        along = _dot(h, share)
        shares[i] = [sk - hk * along for hk, sk in zip(h, share, strict=True)]
    return cut, dual, shares


def _step(
    facts: _Facts,
    q: Pose,
    jac: Jacobian,
    shares: list[list[float]],
    dual: Vec,
    error: Vec,
    damp: float,
    nearest: bool,
) -> tuple[Pose, dict[int, list[float]], float] | None:
    """One damped least-squares step of :func:`refine` (:func:`core.triangulation_refine._step`)
    with the dual ``y`` and the shares ``Jᵀ y`` of :func:`_held`. Returns the trial pose,
    per joint whose turn its limits clipped its way out
    (:func:`core.triangulation_refine._refine`) as a unit direction in its columns, and how
    much the step's linear model lowers ``|e|²``; or ``None``, before turning any joint,
    where that is less than :data:`~core.triangulation_refine._PROMISE` of it."""
    biggest = max(map(abs, itertools.chain.from_iterable(shares)), default=0.0)
    scale = min(1.0, _MAX_STEP / max(biggest, 1e-300))
    # The error the linear model leaves, e − scale·(e − λ²y) (J Jᵀ y = e − λ²y).
    ex, ey, ez = error
    lx = ex - scale * (ex - damp * dual[0])
    ly = ey - scale * (ey - damp * dual[1])
    lz = ez - scale * (ez - damp * dual[2])
    square = ex * ex + ey * ey + ez * ez
    promised = square - (lx * lx + ly * ly + lz * lz)
    if not promised >= _PROMISE * square:
        return None
    # Each joint turned by exp of its share (normalize(q_i · exp(r/2)), written out; a
    # hinge by its angle), then kept within its limits.
    sqrt, sin, cos = math.sqrt, math.sin, math.cos
    trial = list(q)
    outward: dict[int, list[float]] = {}
    balls, hinges = facts.ball, facts.hinge
    for i, axes, lim in facts.turning:
        hinge = hinges[i]
        if hinge is not None and lim is not None:
            # A hinge turns about its axis: its angle moves by its share (the same rotation
            # as below, to rounding), then is kept within its range.
            angle = shares[i][0] * (scale * hinge)
            kept, clipped = lim.hinge_turned_floats(q[i], angle)
            if clipped is None:
                trial[i] = kept
                continue
            turned, half = clipped, 0.5 * abs(angle)
        else:
            ball = balls[i]
            if ball is not None:  # (its axes are the basis: the sums below, without the zeros)
                s0, s1, s2 = shares[i]
                rx, ry, rz = s0 * (scale * ball), s1 * (scale * ball), s2 * (scale * ball)
            else:
                rx = ry = rz = 0.0
                for ((vx, vy, vz), weight), s in zip(axes, shares[i], strict=True):
                    s *= scale * weight
                    rx += s * vx
                    ry += s * vy
                    rz += s * vz
            hx, hy, hz = 0.5 * rx, 0.5 * ry, 0.5 * rz
            theta = sqrt(hx * hx + hy * hy + hz * hz)
            f = 1.0 - theta * theta / 6.0 if theta < SMALL_ANGLE else sin(theta) / theta
            bw, bx, by, bz = cos(theta), f * hx, f * hy, f * hz
            aw, ax, ay, az = q[i]
            w = aw * bw - ax * bx - ay * by - az * bz
            x = aw * bx + ax * bw + ay * bz - az * by
            y = aw * by - ax * bz + ay * bw + az * bx
            z = aw * bz + ax * by - ay * bx + az * bw
            norm = sqrt(w * w + x * x + y * y + z * z)
            turned = (w / norm, x / norm, y / norm, z / norm) if norm > 0.0 else _IDENTITY
            if lim is None:
                trial[i] = turned
                continue
            kept = lim.project_floats(turned) if nearest else lim.retract_floats(turned)
            if kept is turned:  # (a rotation already allowed comes back as it is)
                trial[i] = turned
                continue
            if turned[0] < 0.0:
                turned = (-turned[0], -turned[1], -turned[2], -turned[3])
            half = 0.5 * sqrt(rx * rx + ry * ry + rz * rz)
        moved = max(
            abs(kept[0] - turned[0]),
            abs(kept[1] - turned[1]),
            abs(kept[2] - turned[2]),
            abs(kept[3] - turned[3]),
        )
        if moved > _CLIPPED_ABOVE and moved > _CLIPPED * half:
            # The way out, in the joint's weighted axes (core.triangulation_refine._step).
            if lim.kind == "ball" and lim.swing_outside_floats(turned):
                way = lim.swing_exit_floats(kept, turned)
            else:
                _, gx, gy, gz = _positive(qmul_conj(kept, turned))
                way = (gx, gy, gz)
            unit = _in_columns(way, axes)
            if unit is not None:
                outward[i] = unit
        trial[i] = kept
    return trial, outward, promised


def _cost(start: Pose, q: Pose) -> float:
    """``Σ`` joint angles from the start pose (the paper's eq. 3)."""
    total = 0.0
    for s, q_i in zip(start, q, strict=True):
        total += qangle(qmul_conj(s, q_i))
    return total


def keep_best(
    chain: Chain,
    target: Vec,
    start: Pose,
    candidates: list[Pose],
    best: Refined,
    tolerance: float,
    nearest: bool,
    first_is_pass: bool = False,
    more: Callable[[], list[Pose]] | None = None,
) -> tuple[Refined, bool]:
    """:func:`core.triangulation_refine._keep_best` for one target: ``candidates`` refined,
    and the one of lowest cost among those that reach (the first, refined, wherever it
    reaches when ``first_is_pass``), else, of those not farther than the closest by more
    than :data:`~core.triangulation_refine.CLOSER_BY` tolerances, the one nearest the first
    candidate as given (before refining; the first stands for those that ended near its
    refined pose, :data:`~core.triangulation_refine._SAME_MINIMUM_COS`), where it comes
    closer than ``best``
    (the stored pose, ``w ≥ 0``); else ``best``. ``more``: the candidates after
    ``candidates``, made only where they are refined (not when the pass's pose reaches).
    Also returns whether the candidates settled (none reaches, every one within that
    margin of the closest, or paused near the first's pose: taken to end where it ends)."""
    first = candidates[0]  # (as given, before refining)
    known: list[tuple[Pose, Refined]] = []
    if first_is_pass:
        q0, pos0, err0 = refine(chain, first, target, tolerance, nearest, gentle=True)
        if err0 <= tolerance:
            if err0 < best[2]:
                return ([_positive(r) for r in q0], pos0, err0), False
            return best, False
        known = [(first, (q0, pos0, err0))]
        candidates = [q0, *candidates[1:]]
    if more is not None:
        candidates = [*candidates, *more()]
    refined, paused = _refine_candidates(chain, target, candidates, tolerance, nearest, known)
    scores = [_cost(start, r[0]) if r[2] <= tolerance else math.inf for r in refined]
    settled = False
    if any(r[2] <= tolerance for r in refined):
        if first_is_pass and refined[0][2] <= tolerance:
            scores[0] = -math.inf
        k = min(range(len(refined)), key=lambda j: (scores[j], j))
    else:
        close = min(r[2] for r in refined) + CLOSER_BY * tolerance
        # Those equally close; where the first is one of them, one that ended near its
        # refined pose is bound for its minimum and the first stands for it (so a pause
        # changes no choice).
        stands = refined[0][2] <= close
        near = [
            j
            for j, r in enumerate(refined)
            if r[2] <= close
            and (j == 0 or not stands or not _close(r[0], refined[0][0], _SAME_MINIMUM_COS))
        ]
        k = min(near, key=lambda j: (_cost(first, refined[j][0]), j))
        settled = all(r[2] <= close or p for r, p in zip(refined, paused, strict=True))
    q, pos, err = refined[k]
    if err < best[2]:
        return ([_positive(r) for r in q], pos, err), settled
    return best, settled


def _refine_candidates(
    chain: Chain,
    target: Vec,
    candidates: list[Pose],
    tolerance: float,
    nearest: bool,
    known: list[tuple[Pose, Refined]],
) -> tuple[list[Refined], list[bool]]:
    """``candidates`` refined for :func:`keep_best`'s choice, and which of them paused (their
    errors where they paused), with less work: the first in
    full; each later one paused (:func:`_refine`) once it sits near the first's refined
    pose and no closer than the first's error less
    :data:`~core.triangulation_refine.CLOSER_BY` tolerances (and not within the
    tolerance), where it is taken to end no closer (the choice is then that of every
    candidate refined in full, unless a paused one would have gone on to come materially
    closer: ``docs/triangulation.md``); those paused are refined in full after
    all where another candidate comes closer than that without reaching (the choice then
    weighs every candidate's own error). A candidate equal to an earlier one (refined in
    full: the same steps) or to a pose of ``known`` (the pass's pose and its refinement,
    with the gentle start: :func:`core.triangulation_refine._refine_candidates`) is not
    refined again."""
    first = refine(chain, candidates[0], target, tolerance, nearest)
    far = first if first[2] >= _FAR * tolerance else None
    done = [(pose, r, False) for pose, r in known] + [(candidates[0], first, False)]
    refined, rows = [first], []
    for c in candidates[1:]:
        k = next((k for k, d in enumerate(done) if _same_pose(d[0], c)), None)
        if k is None:
            k = len(done)
            done.append((c, *_refine(chain, c, target, tolerance, nearest, far)))
        refined.append(done[k][1])
        rows.append(k)
    beaten = not first[2] <= min(r[2] for r in refined) + CLOSER_BY * tolerance
    if beaten and any(done[k][2] for k in rows) and not any(r[2] <= tolerance for r in refined):
        for k, d in enumerate(done):  # (those paused, in full after all)
            if d[2]:
                done[k] = (d[0], refine(chain, d[0], target, tolerance, nearest), False)
        refined = [first] + [done[k][1] for k in rows]
    return refined, [False] + [done[k][2] for k in rows]


def _close(a: Pose, b: Pose, cos: float) -> bool:
    """Whether every joint of pose ``a`` is within the angle whose half has cosine ``cos``
    of pose ``b``'s (:data:`~core.triangulation_refine._NEAR` radians for the pause and the
    choice)."""
    return all(
        abs(qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2] + qa[3] * qb[3]) >= cos
        for qa, qb in zip(a, b, strict=True)
    )


def _same_pose(a: Pose, b: Pose) -> bool:
    """Whether two poses are the same bit for bit (``-0.0`` is not ``0.0``)."""
    return all(
        x == y and math.copysign(1.0, x) == math.copysign(1.0, y)
        for qa, qb in zip(a, b, strict=True)
        for x, y in zip(qa, qb, strict=True)
    )


def refine_far(
    chain: Chain, target: Vec, start: Pose, passed: Refined, tolerance: float
) -> Refined:
    """Beyond the chain's length where no closed form comes closer: the pass's pose
    ``passed`` refined toward the target, kept where it comes closer."""
    return keep_best(chain, target, start, [passed[0]], passed, tolerance, False)[0]


def search(
    chain: Chain,
    target: Vec,
    start: Pose,
    passed: Refined,
    placed: list[Pose],
    tolerance: float,
) -> Refined:
    """The search of :func:`core.triangulation_limits.reach_within_limits` for one target
    within the chain's length that the pass's pose ``passed`` (rotations, positions, error)
    misses: the candidates (the pass's pose, the bend-side pose, the start pose
    ``start`` projected, then ``placed``: the closed-form poses of a last hinge), refined
    and chosen by :func:`keep_best`, then, unless they settled (on a chain of
    :data:`~core.triangulation_refine.SETTLED_FROM` joints or more), up to three rounds from the
    best so far and two random admissible poses, while a round brings the target closer by
    more than :data:`~core.triangulation_refine.CLOSER_BY` tolerances; returns the chosen
    pose (``w ≥ 0``), its positions and error."""
    rots = passed[0]
    candidates = [rots]
    best = passed
    rng = None  # (made only for a restart: most targets are met in the first round)
    nearest = False
    shape = (1, chain.n_joints, 4)

    def more() -> list[Pose]:
        return [side_pose(chain, rots), project_all(chain, start), *placed]

    for round_ in range(_ROUNDS):
        first = round_ == 0
        before = best[2]
        best, settled = keep_best(
            chain,
            target,
            start,
            candidates,
            best,
            tolerance,
            nearest,
            first,
            more if first else None,
        )
        if not best[2] > tolerance:
            break
        if first and settled and chain.n_joints >= SETTLED_FROM:
            break  # the candidates settled alike: no restarts
        if not first and not best[2] < before - CLOSER_BY * tolerance:
            break  # a restart round that brought it no materially closer ends the restarts
        # Again from the best so far, sliding along the limits, and from random poses.
        nearest = True
        rng = np.random.default_rng(_SEED) if rng is None else rng
        candidates = [best[0]] + [
            project_all(chain, [_quat(r) for r in _random_rotations(rng, shape)[0].tolist()])
            for _ in range(2)
        ]
    return best


__all__ = ["keep_best", "project_all", "refine", "refine_far", "search", "side_pose"]
