# SPDX-License-Identifier: GPL-3.0-or-later
"""Untwist: remove the twist a position goal does not need.

A chain reaching for a point leaves each joint free to twist about the line to the next
joint; a solver's twist is arbitrary and can spin fast while the target moves smoothly (a
limb's upper bone turning about itself, the elbow's axis swinging with it). Every free
joint (no locks or limits) after which all joints are free is re-aimed at its solved next
joint by the shortest rotation from its rest link direction (:func:`core.rotations.between`),
which keeps every joint position and removes the twist. Joints before the first re-aimed one
keep their rotations; a chain whose last joint is limited is returned unchanged.

Conventions (:mod:`core.chain`, :mod:`core.rotations`): quaternions are wxyz, Hamilton
product. Joint ``i``'s world rotation is ``W_i = W_{i−1} · rest_i · q_i`` (``W_{−1}`` the
identity, the chain's base frame) and joint ``i + 1`` sits at
``p_{i+1} = p_i + W_i · offset_i``. Joint ``i`` is re-aimed as
``q_i = between(offset_i, (W_{i−1} · rest_i)⁻¹ · (p_{i+1} − p_i))``.

The same maths twice, pinned together by ``tests/core/test_untwist.py``:

* numpy (:func:`untwist_arrays`): rotations ``(N, n, 4)`` and positions ``(N, n + 1, 3)``,
  one vectorised step per joint with :mod:`core.rotations`;
* plain floats (:func:`untwist_floats`), one pose as lists of tuples: the arithmetic of
  :mod:`core.components`' ``qmul``, ``qunrotate`` and ``qbetween`` written out, the links'
  unit rest offsets computed once per chain. A live solver calls it for every chain on
  every frame, where numpy's per-call cost (and Python's per-call cost) dominates.

:func:`untwist` picks one: floats pose by pose for a few poses, arrays for many.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from . import rotations as rot
from .chain import Chain
from .components import Quat, Vec, vperpendicular
from .rotations import FloatArray

#: Up to this many poses :func:`untwist` works pose by pose in plain floats; above it, on
#: arrays of all poses (numpy's per-call overhead dominates a few small arrays).
_FLOAT_POSES = 8

_IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)

#: Per chain: the first joint re-aimed, the rest rotations, and each link's rest offset as
#: the unit vector and the zero test of :func:`core.components.qbetween` (``None`` for a
#: zero offset), all plain floats.
_Plan = tuple[int, list[Quat], list[Vec | None]]
_PLANS: weakref.WeakKeyDictionary[Chain, _Plan] = weakref.WeakKeyDictionary()


def _untwist_plan(chain: Chain) -> _Plan:
    """The first joint re-aimed (``n``: none), the rest rotations and the links' unit rest
    offsets (:data:`_Plan`); cached per chain (live solving asks every frame)."""
    plan = _PLANS.get(chain)
    if plan is None:
        first = chain.n_joints
        while first > 0 and chain.limits[first - 1].is_free:
            first -= 1
        rests: list[Quat] = [tuple(r) for r in chain.rest_rotations.tolist()]
        units: list[Vec | None] = []
        for a0, a1, a2 in chain.offsets.tolist():
            na = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)  # (as qbetween)
            units.append(None if na == 0.0 else (a0 / na, a1 / na, a2 / na))
        plan = (first, rests, units)
        _PLANS[chain] = plan
    return plan


def aims_every_joint(chain: Chain) -> bool:
    """:func:`untwist` re-aims every joint of ``chain`` (all are free), so a solve's joint
    positions alone give the untwisted rotations."""
    return _untwist_plan(chain)[0] == 0


def untwist(chain: Chain, rotations: FloatArray, positions: FloatArray) -> FloatArray:
    """Remove twist the goal does not need: free joints aim by the shortest swing (module
    docstring).

    Args:
        chain: the chain.
        rotations: ``(N, n, 4)`` solved local rotations (wxyz).
        positions: ``(N, n + 1, 3)`` their joint positions (base frame).

    Returns:
        ``(N, n, 4)`` rotations with the same joint positions (``rotations`` itself when no
        joint is re-aimed). Up to 8 poses are worked pose by pose in plain floats
        (:func:`untwist_floats`), more on arrays (:func:`untwist_arrays`).
    """
    first = _untwist_plan(chain)[0]
    if first == chain.n_joints:
        return rotations
    if rotations.shape[0] <= _FLOAT_POSES:
        return np.array(
            [
                untwist_floats(chain, pose, points)
                for pose, points in zip(rotations.tolist(), positions.tolist(), strict=True)
            ],
            dtype=np.float64,
        ).reshape(rotations.shape)
    return untwist_arrays(chain, rotations, positions)


def untwist_arrays(chain: Chain, rotations: FloatArray, positions: FloatArray) -> FloatArray:
    """:func:`untwist` on arrays: ``rotations (N, n, 4)``, ``positions (N, n + 1, 3)``;
    returns new rotations ``(N, n, 4)`` (``rotations`` itself when no joint is re-aimed)."""
    first = _untwist_plan(chain)[0]
    n = chain.n_joints
    if first == n:
        return rotations
    out = np.array(rotations, dtype=np.float64)
    links = positions[:, 1:] - positions[:, :-1]
    world = rot.identity((out.shape[0],))
    for i in range(n):
        parent = rot.multiply(world, chain.rest_rotations[i])
        if i >= first:
            local = rot.rotate(rot.conjugate(parent), links[:, i])
            out[:, i] = rot.between(chain.offsets[i], local)
        if i + 1 < n:
            world = rot.multiply(parent, out[:, i])
    return out


def untwist_floats(chain: Chain, pose: list[Any] | None, points: list[Any]) -> list[Any]:
    """:func:`untwist` of one pose in plain floats: ``pose`` ``n`` rotations (4 floats
    each, wxyz), ``points`` its ``n + 1`` joints (3 floats each, base frame); returns ``n``
    rotations (the re-aimed ones as 4-tuples, the others as given).

    ``pose`` may be ``None`` when every joint is re-aimed (:func:`aims_every_joint`): the
    rotations then come from the positions alone.

    Raises:
        ValueError: ``pose`` is ``None`` but not every joint is re-aimed.
    """
    return _untwisted(_untwist_plan(chain), pose, points)


def _untwisted(plan: _Plan, pose: list[Any] | None, points: list[Any]) -> list[Any]:
    """:func:`untwist_floats` with the chain's plan (:func:`_untwist_plan`) at hand (a
    :class:`core.Solver` holds it)."""
    first, rests, units = plan
    n = len(rests)
    if pose is None:
        if first:
            raise ValueError("a pose is needed: not every joint of the chain is re-aimed")
        pose = [_IDENTITY] * n
    if first == n:
        return pose
    # qmul, qunrotate and qbetween of core.components written out (the same operations in
    # the same order: the live path of every free chain runs this), the unit offsets
    # computed once per chain (_untwist_plan).
    sqrt = math.sqrt
    out: list[Any] = list(pose)
    ww, wx, wy, wz = _IDENTITY
    for i in range(n):
        if i:  # parent = world · rest_i (W_{−1} is the identity: rest_0 itself)
            rw, rx, ry, rz = rests[i]
            pw = ww * rw - wx * rx - wy * ry - wz * rz
            px = ww * rx + wx * rw + wy * rz - wz * ry
            py = ww * ry - wx * rz + wy * rw + wz * rx
            pz = ww * rz + wx * ry - wy * rx + wz * rw
        else:
            pw, px, py, pz = rests[0]
        if i >= first:
            a, b = points[i], points[i + 1]
            vx, vy, vz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
            # the link seen from the parent frame
            tx = 2.0 * (pz * vy - py * vz)
            ty = 2.0 * (px * vz - pz * vx)
            tz = 2.0 * (py * vx - px * vy)
            bx = vx + pw * tx + (pz * ty - py * tz)
            by = vy + pw * ty + (px * tz - pz * tx)
            bz = vz + pw * tz + (py * tx - px * ty)
            # the shortest arc from the rest link to it
            ua = units[i]
            nb = sqrt(bx * bx + by * by + bz * bz)
            if ua is None or nb == 0.0:
                out[i] = _IDENTITY
            else:
                a0, a1, a2 = ua
                b0, b1, b2 = bx / nb, by / nb, bz / nb
                dot = a0 * b0 + a1 * b1 + a2 * b2
                x, y, z = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
                if dot < 0.0:
                    along = x * a0 + y * a1 + z * a2
                    x, y, z = x - along * a0, y - along * a1, z - along * a2
                    cross_sq = x * x + y * y + z * z
                    w = cross_sq / (1.0 - dot)
                    if cross_sq < 1e-24:
                        x, y, z = vperpendicular(ua)
                        w = 0.0
                else:
                    w = 1.0 + dot
                norm = sqrt(w * w + x * x + y * y + z * z)
                out[i] = (w / norm, x / norm, y / norm, z / norm)
        if i + 1 < n:  # world = parent · q_i
            qw, qx, qy, qz = out[i]
            ww = pw * qw - px * qx - py * qy - pz * qz
            wx = pw * qx + px * qw + py * qz - pz * qy
            wy = pw * qy - px * qz + py * qw + pz * qx
            wz = pw * qz + px * qy - py * qx + pz * qw
    return out


__all__ = ["aims_every_joint", "untwist", "untwist_arrays", "untwist_floats"]
