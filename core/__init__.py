# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's solver core: kinematic chains, rotations and IK solvers, numpy only.

Blender-independent by design (it never imports ``bpy`` or ``mathutils``), so scripts,
tests and other tools can use it directly::

    from core import Chain, solve
    arm = Chain.from_lengths([18, 18, 4], bend_limits_deg=[None, 126, 90])
    result = solve(arm, [10.0, 5.0, 20.0], method="triangulation")
    result.rotations   # (3, 4) local joint rotations, wxyz
    result.positions   # (4, 3) joint positions, last = end effector

Conventions are documented once, in :mod:`core.rotations` (quaternions) and
:mod:`core.chain` (frames and offsets).
"""

from . import rotations
from .chain import Chain
from .errors import ChainError, ReachIKError, SolveInputError
from .kinematics import effector, forward_kinematics
from .limits import JointLimits
from .options import SolveOptions
from .result import IKResult, Solution
from .solve import METHODS, solve
from .solver import Pose, Solver

__all__ = [
    "METHODS",
    "Chain",
    "ChainError",
    "IKResult",
    "JointLimits",
    "Pose",
    "ReachIKError",
    "Solution",
    "SolveInputError",
    "SolveOptions",
    "Solver",
    "effector",
    "forward_kinematics",
    "rotations",
    "solve",
]
