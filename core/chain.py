# SPDX-License-Identifier: GPL-3.0-or-later
"""Serial kinematic chains.

A chain of ``n`` joints hangs from a **base frame** (for Blender: the armature space as
seen by the chain root's parent). Joint 0 sits at the base frame's origin. For joint
``i``:

* ``rest_rotations[i]`` ``(4,)`` wxyz is the joint's rest frame relative to joint
  ``i − 1``'s frame (joint 0: relative to the base frame);
* ``offsets[i]`` ``(3,)`` is where joint ``i + 1`` (the end effector for the last joint)
  sits in joint ``i``'s frame, in chain units (Blender: metres of armature space);
* ``limits[i]`` is a :class:`~core.limits.JointLimits`; its bone axis is local +Y;
* ``stretch[i]`` in ``[0, 1]`` is how readily link ``i`` stretches (Blender's per-bone
  *IK Stretch*); read only when :attr:`~core.options.SolveOptions.stretch` is on (see
  :mod:`core.stretch`).

The pose of joint ``i`` is a local rotation ``q_i`` relative to its rest frame, so its
world (base-frame) orientation is ``W_i = W_{i−1} · rest_i · q_i`` and the next joint is at
``p_{i+1} = p_i + W_i · offsets[i]`` (see :mod:`core.kinematics`). This is exactly how a
Blender pose bone's matrix composes (parent × rest-relative × basis).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import rotations as rot
from .errors import ChainError
from .limits import FREE, JointLimits, cone_limits
from .rotations import FloatArray

#: Links shorter than this (chain units) are rejected: their direction is undefined.
MIN_LINK_LENGTH = 1e-9


def _stretch_weights(stretch: Sequence[float] | None, n: int) -> tuple[float, ...]:
    if stretch is None:
        return (0.0,) * n
    try:
        weights = tuple(float(w) for w in stretch)
    except (TypeError, ValueError):
        raise ChainError(f"stretch must be {n} numbers in [0, 1], got {stretch!r:.60}") from None
    if len(weights) != n:
        raise ChainError(f"got {len(weights)} stretch weights for {n} joints; give one per joint")
    if not all(0.0 <= w <= 1.0 for w in weights):
        raise ChainError(f"stretch weights must be in [0, 1] (Blender's IK Stretch), got {weights}")
    return weights


def _names(names: Sequence[str] | None, n: int) -> tuple[str, ...]:
    if names is None:
        return tuple(f"joint{i}" for i in range(n))
    if len(names) != n:
        raise ChainError(f"got {len(names)} names for {n} joints")
    return tuple(names)


@dataclass(frozen=True, eq=False, init=False)
class Chain:
    """A serial chain: rest frames, link offsets and joint limits (see module docstring).

    Build one with :meth:`from_lengths` (a straight chain), :meth:`from_offsets` (a rest
    pose given as link vectors) or directly from rest rotations and offsets.

    Args:
        offsets: ``(n, 3)`` next joint's position in each joint's frame; non-zero length.
        rest_rotations: ``(n, 4)`` wxyz rest frame of each joint relative to its parent;
            identity when ``None``.
        limits: one :class:`JointLimits` per joint; free ball joints when ``None``.
        names: one name per joint (e.g. the Blender bone names).
        stretch: one weight in ``[0, 1]`` per joint, how readily its link stretches
            (Blender's *IK Stretch*); all ``0`` (no link stretches) when ``None``.
    """

    offsets: FloatArray
    rest_rotations: FloatArray
    limits: tuple[JointLimits, ...]
    names: tuple[str, ...]
    stretch: tuple[float, ...]

    def __init__(
        self,
        offsets: ArrayLike,
        rest_rotations: ArrayLike | None = None,
        limits: Sequence[JointLimits] | None = None,
        names: Sequence[str] | None = None,
        stretch: Sequence[float] | None = None,
    ) -> None:
        offs = np.array(offsets, dtype=np.float64)
        if offs.ndim != 2 or offs.shape[1] != 3 or offs.shape[0] < 1:
            raise ChainError(f"offsets must have shape (n, 3) with n >= 1, got {offs.shape}")
        n = offs.shape[0]
        if not np.all(np.isfinite(offs)):
            raise ChainError("offsets must be finite numbers")
        short = np.flatnonzero(np.linalg.norm(offs, axis=1) < MIN_LINK_LENGTH)
        if short.size:
            raise ChainError(
                f"link {int(short[0])} has zero length; "
                f"every link needs a length > {MIN_LINK_LENGTH}"
            )
        if rest_rotations is None:
            rest = rot.identity((n,))
        else:
            rest = np.array(rest_rotations, dtype=np.float64)
            if rest.shape != (n, 4):
                raise ChainError(f"rest_rotations must have shape ({n}, 4), got {rest.shape}")
            norms = np.linalg.norm(rest, axis=1)
            if not np.all(np.isfinite(rest)) or np.any(np.abs(norms - 1.0) > 1e-6):
                raise ChainError("rest_rotations must be unit quaternions (w, x, y, z)")
            rest = rest / norms[:, None]
        joint_limits = tuple(limits) if limits else (FREE,) * n
        if len(joint_limits) != n:
            raise ChainError(
                f"got {len(joint_limits)} joint limits for {n} joints; give one per joint"
            )
        if not all(isinstance(lim, JointLimits) for lim in joint_limits):
            raise ChainError("limits must be JointLimits instances, one per joint")
        offs.setflags(write=False)
        rest.setflags(write=False)
        object.__setattr__(self, "offsets", offs)
        object.__setattr__(self, "rest_rotations", rest)
        object.__setattr__(self, "limits", joint_limits)
        object.__setattr__(self, "names", _names(names or None, n))
        object.__setattr__(self, "stretch", _stretch_weights(stretch, n))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_lengths(
        cls,
        lengths: ArrayLike,
        direction: ArrayLike = (0.0, 0.0, 1.0),
        *,
        bend_limits_deg: Sequence[float | None] | None = None,
        limits: Sequence[JointLimits] | None = None,
        names: Sequence[str] | None = None,
        stretch: Sequence[float] | None = None,
    ) -> Chain:
        """A straight chain from the origin along ``direction``.

        Args:
            lengths: ``(n,)`` link lengths, each > 0.
            direction: ``(3,)`` the chain's rest direction in the base frame.
            bend_limits_deg: per-joint bend (cone) limits in degrees, ``None`` = free; e.g.
                the triangulation paper's chain C is ``(None, 126, 90)``.
            limits: full per-joint limits instead of ``bend_limits_deg``.
            names: joint names.
            stretch: per-joint stretch weights in ``[0, 1]`` (see the class).
        """
        links = np.asarray(lengths, dtype=np.float64)
        if links.ndim > 1:
            raise ChainError(f"lengths must have shape (n,), got {links.shape}")
        links = links.reshape(-1)
        if links.size == 0:
            raise ChainError("a chain needs at least one link length")
        if not np.all(np.isfinite(links)) or np.any(links < MIN_LINK_LENGTH):
            raise ChainError(f"link lengths must be finite and > {MIN_LINK_LENGTH}, got {links}")
        d = np.asarray(direction, dtype=np.float64)
        if d.shape != (3,) or not np.all(np.isfinite(d)) or np.linalg.norm(d) < 1e-12:
            raise ChainError(f"direction must be a non-zero 3-vector, got {d.tolist()}")
        if limits is not None and bend_limits_deg is not None:
            raise ChainError("give either limits or bend_limits_deg, not both")
        n = links.size
        rest = rot.identity((n,))
        rest[0] = rot.between(np.array([0.0, 1.0, 0.0]), d)
        offsets = np.zeros((n, 3))
        offsets[:, 1] = links
        joint_limits = tuple(limits) if limits is not None else cone_limits(bend_limits_deg, n)
        return cls(offsets, rest, joint_limits, tuple(names) if names else (), stretch)

    @classmethod
    def from_offsets(
        cls,
        link_vectors: ArrayLike,
        *,
        limits: Sequence[JointLimits] | None = None,
        names: Sequence[str] | None = None,
    ) -> Chain:
        """A chain whose rest pose has the given link vectors ``(n, 3)`` in the base frame.

        Each joint's frame has +Y along its link; frames are carried from joint to joint
        by the shortest rotation (no roll), starting from the shortest rotation taking +Y
        to the first link.
        """
        v = np.asarray(link_vectors, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 1:
            raise ChainError(f"link vectors must have shape (n, 3) with n >= 1, got {v.shape}")
        if not np.all(np.isfinite(v)):
            raise ChainError("link vectors must be finite numbers")
        lengths = np.linalg.norm(v, axis=1)  # zero lengths are rejected by __init__
        n = v.shape[0]
        rest = np.empty((n, 4))
        world_prev = rot.identity()
        y = np.array([0.0, 1.0, 0.0])
        for i in range(n):
            world = rot.multiply(rot.between(rot.rotate(world_prev, y), v[i]), world_prev)
            rest[i] = rot.multiply(rot.conjugate(world_prev), world)
            world_prev = world
        offsets = np.zeros((n, 3))
        offsets[:, 1] = lengths
        return cls(
            offsets,
            rest,
            tuple(limits) if limits is not None else (),
            tuple(names) if names else (),
        )

    @classmethod
    def from_dh(
        cls,
        a: ArrayLike,
        d: ArrayLike,
        alpha: ArrayLike,
        theta_offset: ArrayLike | None = None,
        **kwargs: Any,
    ) -> Chain:
        """Revolute joints from Denavit–Hartenberg parameters: :func:`core.dh.chain_from_dh`."""
        from .dh import chain_from_dh

        return chain_from_dh(a, d, alpha, theta_offset, **kwargs)

    # ------------------------------------------------------------------ derived data
    @property
    def n_joints(self) -> int:
        return int(self.offsets.shape[0])

    @cached_property
    def lengths(self) -> FloatArray:
        """``(n,)`` distance from each joint to the next (link lengths)."""
        return np.linalg.norm(self.offsets, axis=1)

    @cached_property
    def reach(self) -> float:
        """Length of the straightened chain: the largest root-to-effector distance."""
        return float(self.lengths.sum())

    @cached_property
    def remaining_lengths(self) -> FloatArray:
        """``(n,)`` length of the chain beyond each joint's link (the paper's ``b``)."""
        c = np.cumsum(self.lengths[::-1])[::-1]
        return np.append(c[1:], 0.0)

    @cached_property
    def is_free(self) -> bool:
        """True when every joint is an unlimited ball joint (computed once)."""
        return all(lim.is_free for lim in self.limits)

    def with_limits(self, limits: Sequence[JointLimits]) -> Chain:
        """The same chain with other joint limits."""
        return Chain(self.offsets, self.rest_rotations, tuple(limits), self.names, self.stretch)

    def scaled(self, scales: ArrayLike) -> Chain:
        """The same chain with link ``i``'s offset scaled by ``scales[i]`` (``(n,)``, each
        > 0): the chain as it is when its links stretch (:mod:`core.stretch`)."""
        factors = np.asarray(scales, dtype=np.float64).reshape(-1, 1)
        return Chain(
            self.offsets * factors, self.rest_rotations, self.limits, self.names, self.stretch
        )

    def __repr__(self) -> str:
        lengths = ", ".join(f"{length:g}" for length in self.lengths)
        kinds = ", ".join(lim.kind for lim in self.limits)
        return (
            f"Chain(n={self.n_joints}, lengths=[{lengths}], joints=[{kinds}], reach={self.reach:g})"
        )


__all__ = ["MIN_LINK_LENGTH", "Chain"]
