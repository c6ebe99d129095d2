# SPDX-License-Identifier: GPL-3.0-or-later
"""Placeholder: being written."""

from __future__ import annotations

from .problem import Problem
from .result import Solution


def solve_jacobian_transpose(problem: Problem) -> Solution:
    raise NotImplementedError


def solve_jacobian_pinv(problem: Problem) -> Solution:
    raise NotImplementedError


def solve_jacobian_dls(problem: Problem) -> Solution:
    raise NotImplementedError
