# SPDX-License-Identifier: GPL-3.0-or-later
"""Exceptions raised by the solver core.

All derive from :class:`ReachIKError` (a :class:`ValueError`), so callers such as the
Blender operators can catch one type and show its message, which always says what is
valid.
"""


class ReachIKError(ValueError):
    """Base class of every error the core raises on bad input."""


class ChainError(ReachIKError):
    """A chain cannot be built from the given joints, offsets or limits."""


class SolveInputError(ReachIKError):
    """``solve`` was called with an unknown method, option or malformed target."""
