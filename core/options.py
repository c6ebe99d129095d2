# SPDX-License-Identifier: GPL-3.0-or-later
"""Settings of :func:`core.solve`: one frozen dataclass shared by every method.

Each field says which methods read it; the others ignore it. Lengths are in chain units,
angles in radians unless the name ends in ``_deg``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .errors import SolveInputError

RotationParams = Literal["expmap", "euler"]
BendPlane = Literal["rest", "minimal"]
CcdStart = Literal["triangulation", "initial"]
Distribution = Literal["root", "even"]
JacobianStart = Literal["triangulation", "initial"]
StretchRule = Literal["closed_form", "blender"]


@dataclass(frozen=True)
class SolveOptions:
    """Options of :func:`core.solve`.

    Attributes:
        max_iterations: iteration cap (CCD sweeps, Jacobian updates). Triangulation is a
            single pass and ignores it.
        tolerance: a target counts as reached when the effector is within this distance;
            ``None`` means ``1e-6 × chain.reach``.
        angle_tolerance: with an orientation goal, also required: the effector's angle to
            the goal orientation at most this (radians).
        position_weight: α of the pose objective ``α·|E − T|² + (1 − α)·|D − V|²``
            (Fedulin & Zhukov); read only when ``target_rotation`` is given. ``1`` =
            position only, ``0`` = orientation only.
        pole_angle: rotation (radians) of the bend plane about the root→target line,
            measured from the half-plane that contains the pole.
        bend_plane: without a pole, ``"rest"`` keeps the start pose's bend side, carried
            along with the target (never flips as a target moves smoothly); ``"minimal"``
            keeps each method's own shortest-rotation bend. See :mod:`core.bend_plane`.
        delta_b_deg: triangulation's fixed δb when no triangle can be formed: ``180``
            (the paper) or ``90`` (the variant its future work suggests).
        ccd_start: CCD's start pose: ``"triangulation"`` (default) takes the
            triangulation pass on the chain with its limits removed, carried onto the
            limits, as the answer where it meets the goal, else iterates from the
            (projected) start pose — a function of the target, pole and start pose alone
            (goals with an orientation part always start from the start pose);
            ``"initial"`` starts from the start pose as given (the papers' protocol). See
            ``docs/ccd.md``.
        distribution: triangulation on a chain without limits: ``"root"`` (the paper: each
            joint bends as far as its triangle allows, root first, the rest stays
            straight) or ``"even"`` (the bend spread over every joint, each keeping its
            share of the start pose's bend, a uniform curl for a straight start; see
            :mod:`core.spread`; where the spread misses — a start pose bent out of one
            plane, offset links — FABRIK's rounds finish it, :mod:`core.fabrik`). On a
            chain with limits ``"even"`` makes the spread aimed within the limits (FABRIK's
            seed) the pass that the closed form of a last hinge and the search start from,
            and the pose where it meets the target (paper cones excepted:
            :func:`core.triangulation_limits_single.spreads_within_limits`). On one or two
            links both are the same pose (the paper's triangle).
        sweep_steps: CCD: when it stalls in a local minimum, sweep one joint over this many
            coarse angles while solving the others (Fedulin & Zhukov); ``0`` disables. After
            the triangulation seed only on chains with cone limits (``docs/ccd.md``, *The
            coarse sweep*); from the given start and on goals with an orientation part.
        step: Jacobian methods: β, the fraction of the error to remove per update.
        max_step_deg: Jacobian methods: clamp on the largest joint change per update.
        damping: ``jacobian_dls``: damping λ (chain units); with ``adaptive_damping`` the
            largest damping, used near singular poses.
        adaptive_damping: ``jacobian_dls``: scale λ with the smallest singular value.
        singular_cutoff: ``jacobian_pinv``: singular values below this fraction of the
            largest are cut.
        rotation_params: Jacobian methods: ``"expmap"`` (log-quaternion) or ``"euler"``.
        posture_weight: Jacobian methods: weight of the bias toward the start pose in the
            Jacobian's null space (redundant chains keep natural poses); ``0`` disables.
        restarts: Jacobian methods: when a goal stalls unreached (a local minimum or a
            singular trap), start again from up to this many fixed, spread-out poses; the
            iteration cap is shared evenly between the attempts and the best pose found is
            returned. ``0`` disables (every update then continues from the last pose).
        adaptive_step: Jacobian methods, position goals: β starts at ``step``, doubles (up
            to 1) after each update that lowers the error at the first try and halves (not
            below ``step``) after one that had to be retried; ``False`` keeps β = ``step``.
        jacobian_start: Jacobian methods, position goals: ``"triangulation"`` starts the
            iteration from the triangulation solution of the chain without limits,
            carried onto the limits where that meets the goal, else projected onto them
            (see :mod:`core.jacobian_seed`); ``"initial"`` from
            the start pose (``initial``, else the rest pose), the references' protocol.
        stretch: every method: let the links stretch (Blender's IK constraint *Stretch*),
            each as readily as its :attr:`Chain.stretch <core.chain.Chain.stretch>` weight;
            a target beyond the chain's length is then reached with the chain straight and
            its links lengthened (see :mod:`core.stretch`). Off: links keep their lengths.
        soft_reach: every method: distance (chain units, ``0`` = off, below the chain's
            length) over which the target's pull eases out before full extension: targets
            farther than ``reach − soft_reach`` from the root are aimed at a distance that
            approaches the reach smoothly, so the chain never snaps straight; with
            ``stretch`` the links lengthen by what that leaves short instead (see
            :mod:`core.stretch`).
        stretch_rule: with ``stretch``: how long the links become. ``"closed_form"``
            (default): unchanged within reach, beyond it the extra length shared ∝ w³,
            the target reached exactly; ``"blender"``: the lengths Blender's Standard IK
            gives from the start pose, within reach too (:mod:`core.blender_stretch`; up to
            ``max_iterations`` of its steps; not with ``soft_reach``).
    """

    max_iterations: int = 100
    tolerance: float | None = None
    angle_tolerance: float = 1e-4
    position_weight: float = 0.5
    pole_angle: float = 0.0
    bend_plane: BendPlane = "rest"
    delta_b_deg: float = 180.0
    ccd_start: CcdStart = "triangulation"
    distribution: Distribution = "root"
    sweep_steps: int = 12
    step: float = 0.5
    max_step_deg: float = 10.0
    damping: float = 0.1
    adaptive_damping: bool = True
    singular_cutoff: float = 1e-6
    rotation_params: RotationParams = "expmap"
    posture_weight: float = 0.0
    restarts: int = 0
    jacobian_start: JacobianStart = "triangulation"
    adaptive_step: bool = True
    stretch: bool = False
    soft_reach: float = 0.0
    stretch_rule: StretchRule = "closed_form"

    def __post_init__(self) -> None:
        def need(ok: bool, what: str) -> None:
            if not ok:
                raise SolveInputError(what)

        def is_integer(value: object) -> bool:  # numpy integers too, but not booleans
            return isinstance(value, numbers.Integral) and not isinstance(value, bool)

        need(
            is_integer(self.max_iterations) and self.max_iterations >= 1,
            f"max_iterations must be an integer >= 1, got {self.max_iterations!r}",
        )
        need(
            self.tolerance is None or (math.isfinite(self.tolerance) and self.tolerance > 0),
            f"tolerance must be > 0 (or None for 1e-6 × reach), got {self.tolerance!r}",
        )
        need(
            math.isfinite(self.angle_tolerance) and self.angle_tolerance > 0,
            f"angle_tolerance must be > 0 radians, got {self.angle_tolerance!r}",
        )
        need(
            0.0 <= self.position_weight <= 1.0,
            f"position_weight must be in [0, 1], got {self.position_weight!r}",
        )
        need(math.isfinite(self.pole_angle), "pole_angle must be a finite angle in radians")
        need(
            self.bend_plane in ("rest", "minimal"),
            f"bend_plane must be 'rest' or 'minimal', got {self.bend_plane!r}",
        )
        need(
            self.delta_b_deg in (90.0, 180.0),
            f"delta_b_deg must be 180 (the paper) or 90, got {self.delta_b_deg!r}",
        )
        need(
            self.ccd_start in ("triangulation", "initial"),
            f"ccd_start must be 'triangulation' or 'initial', got {self.ccd_start!r}",
        )
        need(
            self.distribution in ("root", "even"),
            f"distribution must be 'root' or 'even', got {self.distribution!r}",
        )
        need(
            is_integer(self.sweep_steps) and self.sweep_steps >= 0,
            f"sweep_steps must be an integer >= 0, got {self.sweep_steps!r}",
        )
        need(0.0 < self.step <= 1.0, f"step must be in (0, 1], got {self.step!r}")
        need(
            0.0 < self.max_step_deg <= 180.0,
            f"max_step_deg must be in (0, 180], got {self.max_step_deg!r}",
        )
        need(
            math.isfinite(self.damping) and self.damping >= 0.0,
            f"damping must be >= 0, got {self.damping!r}",
        )
        need(
            0.0 < self.singular_cutoff < 1.0,
            f"singular_cutoff must be in (0, 1), got {self.singular_cutoff!r}",
        )
        need(
            self.rotation_params in ("expmap", "euler"),
            f"rotation_params must be 'expmap' or 'euler', got {self.rotation_params!r}",
        )
        need(
            math.isfinite(self.posture_weight) and self.posture_weight >= 0.0,
            f"posture_weight must be >= 0, got {self.posture_weight!r}",
        )
        need(
            is_integer(self.restarts) and self.restarts >= 0,
            f"restarts must be an integer >= 0, got {self.restarts!r}",
        )

        need(
            isinstance(self.stretch, bool | np.bool_),
            f"stretch must be True or False, got {self.stretch!r}",
        )
        need(
            isinstance(self.soft_reach, numbers.Real)
            and math.isfinite(self.soft_reach)
            and self.soft_reach >= 0.0,
            f"soft_reach must be a distance >= 0 (0 = off), got {self.soft_reach!r}",
        )
        need(
            self.stretch_rule in ("closed_form", "blender"),
            f"stretch_rule must be 'closed_form' or 'blender', got {self.stretch_rule!r}",
        )
        need(
            not (self.stretch and self.stretch_rule == "blender" and self.soft_reach > 0.0),
            "soft_reach works with stretch_rule 'closed_form'; with 'blender' set it to 0",
        )
        need(
            self.jacobian_start in ("triangulation", "initial"),
            f"jacobian_start must be 'triangulation' or 'initial', got {self.jacobian_start!r}",
        )

    def replace(self, **changes: Any) -> SolveOptions:
        """A copy with ``changes``; unknown names raise with the list of valid ones."""
        valid = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - valid)
        if unknown:
            raise SolveInputError(
                f"unknown option(s) {', '.join(unknown)}; "
                f"valid options are {', '.join(sorted(valid))}"
            )
        return dataclasses.replace(self, **changes)
