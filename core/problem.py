# SPDX-License-Identifier: GPL-3.0-or-later
"""The checked, flattened input every solver method receives."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .chain import Chain
from .options import SolveOptions
from .rotations import FloatArray


@dataclass(frozen=True)
class Problem:
    """A flat batch of ``N`` IK problems on one chain, checked and in the base frame.

    Attributes:
        chain: the chain.
        targets: ``(N, 3)`` effector goals.
        target_rotations: ``(N, 4)`` wxyz goal orientations of the effector frame, or ``None``.
        poles: ``(N, 3)`` pole points deciding the bend plane, or ``None``.
        initial: ``(N, n, 4)`` start pose, local rotations relative to the rest frames.
        tolerance: the resolved absolute position tolerance.
        options: the settings.
    """

    chain: Chain
    targets: FloatArray
    target_rotations: FloatArray | None
    poles: FloatArray | None
    initial: FloatArray
    tolerance: float
    options: SolveOptions

    @property
    def size(self) -> int:
        return int(self.targets.shape[0])

    @property
    def shares_start(self) -> bool:
        """True when every target starts from the same pose (one seed serves the batch)."""
        init = self.initial
        return self.size == 1 or init.strides[0] == 0 or bool(np.all(init == init[:1]))

    def rows(self, rows: slice | list[int] | NDArray[np.intp]) -> Problem:
        """The problem of the targets ``rows`` (a slice, or indices into the batch)."""
        return Problem(
            self.chain,
            self.targets[rows],
            None if self.target_rotations is None else self.target_rotations[rows],
            None if self.poles is None else self.poles[rows],
            self.initial[rows],
            self.tolerance,
            self.options,
        )
