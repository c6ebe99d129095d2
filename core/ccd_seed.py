# SPDX-License-Identifier: GPL-3.0-or-later
"""CCD's start from triangulation (``options.ccd_start == "triangulation"``, the default).

:func:`seed` runs triangulation's pass (``core/triangulation.py``) on the chain without its
limits and, for a limited chain, carries that pose onto the limits with :func:`retarget` —
except where triangulation *within* the limits (its pass, a last hinge placed in closed
form, or its search) meets the goal, which is then the seed (no stiffness or posture bias);
:func:`core.ccd.solve_ccd` keeps the seed as its answer where it meets the goal and
otherwise iterates from the start pose, keeping the closer of the two; targets within the
chain's length still missed on a limited chain then take triangulation within the limits
unless CCD's pose is materially closer (:func:`within_limits`; ``docs/ccd.md``, *The start
pose*).
:func:`seed_one` is the same for one target in plain floats (triangulation's float pass).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import (
    ccd_single_sweep,
    matrix9,
    triangulation,
    triangulation_limits_single,
    triangulation_single,
)
from . import rotations as rot
from .chain import Chain
from .components import (
    Quat,
    Vec,
    qbetween,
    qconj,
    qmul,
    qmul_conj,
    qrotate,
    vcross,
    vdot,
)
from .kinematics import chain_floats
from .limits import FREE
from .problem import Problem
from .rotations import FloatArray
from .triangulation_fallback import triangulation_where_closer


@functools.lru_cache(maxsize=64)
def unlimited(chain: Chain) -> Chain:
    """``chain`` without its joint limits: the chain of the triangulation seed."""
    return chain if chain.is_free else chain.with_limits([FREE] * chain.n_joints)


def seed(problem: Problem) -> tuple[FloatArray, FloatArray] | None:
    """The triangulation seed of ``options.ccd_start == "triangulation"``: rotations
    ``(N, n, 4)`` and positions ``(N, n + 1, 3)`` of triangulation's pass (with the
    problem's pole, bend plane and start pose) on the chain without its limits, carried
    onto the limited chain by :func:`retarget` (one target at a time, in
    floats); ``None`` for ``"initial"`` and for goals with an orientation part
    (triangulation's pass pursues positions only, so its pose would meet them only by
    chance; its wrist rule, which pursues both, comes before: :func:`core.ccd.solve_ccd`)."""
    opts = problem.options
    if opts.ccd_start != "triangulation" or (
        problem.target_rotations is not None and opts.position_weight < 1.0
    ):
        return None
    q, p = _retargeted(problem)
    if _within_limits_first(problem):
        q_tri, p_tri, met = triangulation_limits_single.reaching(problem)
        q = np.where(met[:, None, None], q_tri, q)
        p = np.where(met[:, None, None], p_tri, p)
    return q, p


def _retargeted(problem: Problem) -> tuple[FloatArray, FloatArray]:
    """Triangulation's pass on the chain without its limits, carried onto its limits by
    :func:`retarget` (:func:`seed` before triangulation within the limits is asked)."""
    chain = problem.chain
    free = unlimited(chain)
    sol = triangulation.solve_triangulation(dataclasses.replace(problem, chain=free))
    if chain.is_free:
        return rot.positive_w(sol.rotations), sol.positions
    poses = [retarget(chain, points) for points in sol.positions.tolist()]
    return np.array([q for q, _ in poses]), np.array([p for _, p in poses])


def _within_limits_first(problem: Problem) -> bool:
    """True when the seed on a limited chain is triangulation *within* its limits where
    that meets the goal (:func:`core.triangulation_limits_single.reaching`, its search
    included): no stiffness and no posture bias,
    which triangulation ignores (the conditions of the free chains' route in
    :func:`core.solver.solve_points`)."""
    return (
        not problem.chain.is_free
        and problem.options.posture_weight == 0.0
        and not any(any(lim.stiffness) for lim in problem.chain.limits)
    )


def within_limits(problem: Problem, q: FloatArray, p: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Answers ``q (N, n, 4)``, ``p (N, n + 1, 3)`` on a limited chain, where they miss a
    target within the chain's length, replaced by triangulation *within the limits*
    (:func:`core.triangulation.solve_triangulation` on the limited chain: admissible, and
    it reaches where an admissible pose does but for rare misses) unless they come closer
    by more than a margin (:func:`core.triangulation_fallback.as_close`); also beyond the
    length of a chain that ends in a hinge (:func:`core.triangulation_limits.beyond_limb`);
    the rule is :func:`core.triangulation_fallback.triangulation_where_closer`. Taken
    rotations get ``w >= 0``."""
    error = np.linalg.norm(p[:, -1] - problem.targets, axis=-1)
    fallback = triangulation_where_closer(problem, error)
    if fallback is None:
        return q, p
    sub, chosen = fallback.solution, fallback.chosen
    q, p = q.copy(), p.copy()
    q[fallback.taken] = rot.positive_w(sub.rotations[chosen])
    p[fallback.taken] = sub.positions[chosen]
    return q, p


def seed_one(problem: Problem) -> tuple[list[list[float]], list[Vec]] | None:
    """:func:`seed` for one target (triangulation's float pass when it can)."""
    opts = problem.options
    if opts.ccd_start != "triangulation" or (
        problem.target_rotations is not None and opts.position_weight < 1.0
    ):
        return None
    if _within_limits_first(problem):
        one = triangulation_limits_single.reaching_one(problem)
        if one is None:
            q_tri, p_tri, met = triangulation_limits_single.reaching(problem)
            one = (q_tri[0].tolist(), p_tri[0].tolist()), bool(met[0])
        if one[1]:
            return one[0][0], list(one[0][1])
    init = problem.initial[0].tolist()
    if problem.target_rotations is None and all(q == [1.0, 0.0, 0.0, 0.0] for q in init):
        pole = None if problem.poles is None else problem.poles[0].tolist()
        free = unlimited(problem.chain)
        out = triangulation_single.solve_single(free, problem.targets[0].tolist(), pole, opts)
        if out is not None:
            if free is not problem.chain:
                return retarget(problem.chain, out[1])
            rots = [q if q[0] >= 0.0 else [-q[0], -q[1], -q[2], -q[3]] for q in out[0]]
            return rots, out[1]
    # (triangulation within the limits, asked above, did not meet the goal: seed's own
    # asking would change nothing)
    q, p = _retargeted(problem)
    return q[0].tolist(), p[0].tolist()


def _unit(v: Vec) -> Vec | None:
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return None if n < 1e-12 else (v[0] / n, v[1] / n, v[2] / n)


def _triad(l1: Vec, l2: Vec, w1: Vec, w2: Vec) -> Quat | None:
    """The rotation taking ``l1`` onto ``w1`` exactly and ``l2`` as near ``w2`` as it then
    can (TRIAD), or ``None`` when either pair is parallel."""
    t1, s1 = _unit(l1), _unit(w1)
    if t1 is None or s1 is None:
        return None
    t2, s2 = _unit(vcross(t1, l2)), _unit(vcross(s1, w2))
    if t2 is None or s2 is None:
        return None
    t3, s3 = vcross(t1, t2), vcross(s1, s2)
    # R = [s1 s2 s3] · [t1 t2 t3]ᵀ, row-major
    return matrix9.quaternion_of(
        (
            s1[0] * t1[0] + s2[0] * t2[0] + s3[0] * t3[0],
            s1[0] * t1[1] + s2[0] * t2[1] + s3[0] * t3[1],
            s1[0] * t1[2] + s2[0] * t2[2] + s3[0] * t3[2],
            s1[1] * t1[0] + s2[1] * t2[0] + s3[1] * t3[0],
            s1[1] * t1[1] + s2[1] * t2[1] + s3[1] * t3[1],
            s1[1] * t1[2] + s2[1] * t2[2] + s3[1] * t3[2],
            s1[2] * t1[0] + s2[2] * t2[0] + s3[2] * t3[0],
            s1[2] * t1[1] + s2[2] * t2[1] + s3[2] * t3[1],
            s1[2] * t1[2] + s2[2] * t2[2] + s3[2] * t3[2],
        )
    )


def retarget(chain: Chain, points: list[Vec]) -> tuple[list[list[float]], list[Vec]]:
    """A pose of ``chain`` within its limits that follows the joint positions ``points``
    (``n + 1`` × 3 floats; here those of the triangulation pass on the chain without its
    limits), root first. Each joint aims its link at the next point from where the chain
    has actually got to; a hinge takes the angle that aims best (the CCD-I step of one
    vector pair, within its range); a ball joint followed by a hinge also turns about its
    link so that the hinge's axis is normal to the bend the points make there, on the side
    whose bend angle the hinge's range allows — then each rotation is projected onto the
    joint's limits. Exact where the limits allow the points' pose; a start for CCD
    otherwise. Returns the rotations (``n`` × 4 floats, ``w >= 0``) and their joint
    positions.
    """
    rests, offsets = chain_floats(chain)
    limits = chain.limits
    n = chain.n_joints
    world: Quat = (1.0, 0.0, 0.0, 0.0)
    p: Vec = (0.0, 0.0, 0.0)
    out: list[list[float]] = []
    positions = [p]
    for i in range(n):
        parent = qmul(world, rests[i])
        lim = limits[i]
        target = points[i + 1]
        d = (target[0] - p[0], target[1] - p[1], target[2] - p[2])
        link = offsets[i]
        q: Quat = (1.0, 0.0, 0.0, 0.0)
        kind = lim.kind
        if kind == "hinge":
            axis, angle_range = lim.hinge
            a = (float(axis[0]), float(axis[1]), float(axis[2]))
            vl = qrotate(qconj(parent), d)
            au = a[0] * link[0] + a[1] * link[1] + a[2] * link[2]
            av = a[0] * vl[0] + a[1] * vl[1] + a[2] * vl[2]
            c = vcross(link, vl)
            phi = math.atan2(
                a[0] * c[0] + a[1] * c[1] + a[2] * c[2],
                link[0] * vl[0] + link[1] * vl[1] + link[2] * vl[2] - au * av,
            )
            phi = (
                ccd_single_sweep._wrap(phi)
                if angle_range is None
                else ccd_single_sweep._best_in_range(phi, *angle_range)
            )
            s = math.sin(0.5 * phi)
            q = (math.cos(0.5 * phi), s * a[0], s * a[1], s * a[2])
        elif kind == "ball":
            turned = None
            if i + 1 < n and limits[i + 1].kind == "hinge":
                nxt = points[i + 2]
                d_next = (nxt[0] - target[0], nxt[1] - target[1], nxt[2] - target[2])
                axis, angle_range = limits[i + 1].hinge
                h_local = qrotate(rests[i + 1], (float(axis[0]), float(axis[1]), float(axis[2])))
                normal = _unit(vcross(d, d_next))
                if normal is not None:
                    dn, nn = _unit(d), _unit(d_next)
                    bend = 0.0
                    if dn is not None and nn is not None:
                        bend = math.acos(max(-1.0, min(1.0, vdot(dn, nn))))
                    sign = 1.0
                    if angle_range is not None:
                        lo, hi = angle_range
                        miss_plus = max(lo - bend, bend - hi, 0.0)
                        miss_minus = max(lo + bend, -bend - hi, 0.0)
                        sign = 1.0 if miss_plus <= miss_minus else -1.0
                    w2 = (sign * normal[0], sign * normal[1], sign * normal[2])
                    turned = _triad(link, h_local, d, w2)
            if turned is None:
                u = qrotate(parent, link)
                turned = qmul(qbetween(u, d), parent)
            q = qmul_conj(parent, turned)
            if not lim.is_free:
                q = lim.project_floats(q)
        world = qmul(parent, q)
        step = qrotate(world, link)
        p = (p[0] + step[0], p[1] + step[1], p[2] + step[2])
        positions.append(p)
        out.append([q[0], q[1], q[2], q[3]] if q[0] >= 0.0 else [-q[0], -q[1], -q[2], -q[3]])
    return out, positions
