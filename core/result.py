# SPDX-License-Identifier: GPL-3.0-or-later
"""What :func:`core.solve` returns, and what each method hands back to it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import rotations as rot
from .rotations import FloatArray


@dataclass(frozen=True)
class Solution:
    """A method's raw output for a flat batch of ``N`` problems.

    Attributes:
        rotations: ``(N, n, 4)`` local joint rotations wxyz relative to the rest frames.
        positions: ``(N, n + 1, 3)`` joint positions in the base frame (forward kinematics
            of ``rotations``); the last row is the end effector.
        iterations: ``(N,)`` updates (sweeps) used; ``1`` for a single pass.
        effector_rotation: ``(N, 4)`` the effector's base-frame orientation when the method
            computed it anyway (else :func:`core.solve` computes it when needed).
        min_singular_value: ``(N,)`` the smallest singular value of the Jacobian seen over
            the iterations (Jacobian methods only).
        scales: ``(N, n)`` each link's length over its rest length (1 = unstretched) when
            the links may stretch (:mod:`core.stretch`), else ``None``; ``positions`` are
            then those of the stretched chain.
    """

    rotations: FloatArray
    positions: FloatArray
    iterations: NDArray[np.int64]
    effector_rotation: FloatArray | None = None
    min_singular_value: FloatArray | None = None
    scales: FloatArray | None = None

    @staticmethod
    def concatenate(parts: Sequence[Solution]) -> Solution:
        """The solutions of consecutive batches as one (rotations, positions, iterations)."""
        return Solution(
            np.concatenate([s.rotations for s in parts]),
            np.concatenate([s.positions for s in parts]),
            np.concatenate([s.iterations for s in parts]),
        )


@dataclass(frozen=True)
class IKResult:
    """The result of :func:`core.solve`, shaped like the targets' batch ``(...)``.

    Like SciPy's ``OptimizeResult``: arrays per target plus one summary ``message``.

    Attributes:
        rotations: ``(..., n, 4)`` local joint rotations wxyz relative to each joint's rest
            frame (the start pose is the rest pose unless ``initial`` was given).
        positions: ``(..., n + 1, 3)`` joint positions in the base frame; last = effector.
        error: ``(...)`` distance from the effector to the target (chain units).
        angle_error: ``(...)`` angle (radians) between the effector's and the goal
            orientation, or ``None`` without an orientation goal.
        iterations: ``(...)`` updates used.
        converged: ``(...)`` the goal was met within the tolerances.
        method: the method name.
        message: one line summarising the batch, e.g. how many targets were out of reach.
        min_singular_value: ``(...)`` Jacobian methods only, else ``None``.
        scales: ``(..., n)`` each link's length over its rest length (1 = unstretched,
            dimensionless) when ``options.stretch`` is on and some link may stretch
            (:mod:`core.stretch`), else ``None``; ``positions`` are those of the stretched
            chain.
    """

    rotations: FloatArray
    positions: FloatArray
    error: FloatArray
    angle_error: FloatArray | None
    iterations: NDArray[np.int64]
    converged: NDArray[np.bool_]
    method: str
    message: str
    min_singular_value: FloatArray | None = None
    scales: FloatArray | None = None

    @property
    def success(self) -> bool:
        """True when every target in the batch converged."""
        return bool(np.all(self.converged))

    @property
    def effector(self) -> FloatArray:
        """``(..., 3)`` end-effector positions."""
        return self.positions[..., -1, :]

    def cost(self) -> FloatArray:
        """``(...)`` the triangulation paper's cost ``C = Σ θ_i`` (eq. 3), in radians.

        ``θ_i`` is the angle of joint ``i``'s local rotation relative to its rest frame.
        """
        return np.sum(rot.angle(self.rotations), axis=-1)
