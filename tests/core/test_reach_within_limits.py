# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 11's property test: every method reaches targets that are reachable within the
joint limits, and never breaks a limit.

Random chains of 2–8 links with hinge, one-sided, rest-excluding, cone, Blender-ellipse and
stiffness limits (:mod:`limited_chains`, a fixed seed); targets are forward kinematics of
random admissible poses. A method passes when at least 99.5 % of the targets are reached
to 1e-4 × reach and no returned joint rotation violates its limit by more than 1e-6 rad.
"""

from __future__ import annotations

import pytest
from limited_chains import REACHED, VIOLATION, reach_under_limits

from core import METHODS


@pytest.mark.parametrize("method", METHODS)
def test_reaches_targets_reachable_within_limits(method: str) -> None:
    stats = reach_under_limits(method, seed=11, chains=40, per_chain=10)
    assert stats.worst_violation <= VIOLATION
    assert stats.share >= 0.995, (
        f"{method} reached {stats.reached} of {stats.targets} targets to {REACHED} × reach; "
        f"missed e.g. {stats.misses[:3]}"
    )
