# SPDX-License-Identifier: GPL-3.0-or-later
"""A solver prepared once per chain, and the one-target fast path.

:class:`Solver` checks a chain, a method and options once and answers one target in plain
floats (:meth:`Solver.solve_one`, :meth:`Solver.solve_points`) or a batch
(:meth:`Solver.solve`, which is :func:`core.solve.solve`); :meth:`Solver.pose` and
:meth:`Solver.poses` give the final poses, the twist a free goal leaves removed
(:mod:`core.untwist`): what the add-on shows, live and baked. The module functions
:func:`solve_one`, :func:`solve_floats` and :func:`solve_points` are the same fast path in
one call, checking the method and options each time (the tests pin them to
:func:`core.solve.solve`); the package exports :class:`Solver` and :func:`core.solve`.
Every answer is :func:`core.solve.solve`'s for the same inputs (tested); quaternions are
wxyz, points in the chain's base frame.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

from numpy.typing import ArrayLike

from . import fabrik, limb_closest, stretch, triangulation_limits_single, triangulation_single
from .chain import Chain
from .components import qrotate
from .errors import SolveInputError
from .kinematics import chain_floats
from .options import SolveOptions
from .result import IKResult, Solution
from .rotations import FloatArray
from .solve import (
    FAR,
    Method,
    _method_and_options,
    _norm,
    _numbers,
    _problem,
    _rest_pose,
    _run,
    _unit_quaternions,
    solve,
)
from .triangulation_limits import ends_in_hinge
from .triangulation_plan import _plan
from .untwist import _untwist_plan, _untwisted, aims_every_joint, untwist
from .wrist import WRIST_METHODS, pose_floats, seeds_chain, takes_orientation, upper_chain


def _point(name: str, value: ArrayLike, width: int) -> FloatArray:
    """One finite point ``(1, width)`` (a sequence of floats or an array)."""
    a = _numbers(name, value, f"({width},)")
    if a.shape != (width,):
        raise SolveInputError(f"{name} must have shape ({width},), got {a.shape}")
    if not all(map(math.isfinite, a.tolist())):
        raise SolveInputError(f"{name} must be finite numbers")
    return a[None]


def solve_one(
    chain: Chain,
    target: ArrayLike,
    *,
    method: str = "triangulation",
    pole: ArrayLike | None = None,
    target_rotation: ArrayLike | None = None,
    options: SolveOptions | None = None,
) -> Solution:
    """:func:`solve` for one target from the rest pose, without measuring the result: the
    same problem and method with the least overhead per call (a live solver calls it for
    every chain on every frame). Gives the same numbers as :func:`solve` (tested).

    Args:
        chain: the chain.
        target: effector goal ``(3,)`` in the base frame.
        method: as for :func:`solve`.
        pole: a point ``(3,)`` in the base frame, or ``None``.
        target_rotation: goal orientation ``(4,)`` wxyz, or ``None``.
        options: settings (default :class:`SolveOptions`).

    Returns:
        The method's :class:`~core.result.Solution` for a batch of one: ``rotations
        (1, n, 4)``, ``positions (1, n + 1, 3)``, ``iterations (1,)``.

    Raises:
        SolveInputError: unknown method, malformed or non-finite inputs.
    """
    impl, opts = _method_and_options(method, options)
    return _one(chain, impl, opts, target, pole, target_rotation)


def _one(
    chain: Chain,
    impl: Method,
    opts: SolveOptions,
    target: ArrayLike,
    pole: ArrayLike | None,
    target_rotation: ArrayLike | None,
) -> Solution:
    """:func:`solve_one` with the method and options already checked."""
    targets = _point("target", target, 3)
    goal_rot = None
    if target_rotation is not None:
        goal_rot = _unit_quaternions(
            "target_rotation", _point("target_rotation", target_rotation, 4)
        )
    poles = None if pole is None else _point("pole", pole, 3)
    start = _rest_pose(chain.n_joints)[None]
    distance = _norm(targets)
    return _run(impl, _problem(chain, targets, distance, goal_rot, poles, start, opts), distance)


def _floats3(name: str, value: Any) -> tuple[float, float, float]:
    """One finite point as 3 floats (:func:`_point` without numpy)."""
    try:
        if isinstance(value, str | bytes):
            raise TypeError
        x, y, z = value
        x, y, z = float(x), float(y), float(z)
    except (TypeError, ValueError):
        raise SolveInputError(f"{name} must be 3 finite numbers, got {value!r}") from None
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise SolveInputError(f"{name} must be finite numbers")
    return x, y, z


def _quaternion_floats(name: str, value: Any) -> tuple[float, float, float, float]:
    """One quaternion as 4 floats, normalised as :func:`core.solve._unit_quaternions` does
    (without numpy: the same steps, to rounding)."""
    try:
        if isinstance(value, str | bytes):
            raise TypeError
        w, x, y, z = value
        w, x, y, z = float(w), float(x), float(y), float(z)
    except (TypeError, ValueError):
        raise SolveInputError(
            f"{name} must be 4 finite numbers (w, x, y, z), got {value!r}"
        ) from None
    if not (math.isfinite(w) and math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise SolveInputError(f"{name} must be finite numbers")
    scale = max(abs(w), abs(x), abs(y), abs(z))
    if scale > 0.0:
        w, x, y, z = w / scale, x / scale, y / scale, z / scale
    length = math.sqrt(w * w + x * x + y * y + z * z)
    if not (scale * length >= 1e-12 and length > 0.0):
        raise SolveInputError(
            f"{name} must be non-zero quaternions (w, x, y, z) of length >= 1e-12"
        )
    return w / length, x / length, y / length, z / length


def _pulled(p: tuple[float, float, float], limit: float) -> tuple[float, float, float]:
    """:func:`core.solve._pull_in` for one point as floats (the same divisions)."""
    d = math.hypot(*p)
    if not d > limit:
        return p
    s = d / limit
    return p[0] / s, p[1] / s, p[2] / s


def _single_inputs(
    chain: Chain, target: ArrayLike, pole: ArrayLike | None
) -> tuple[tuple[float, float, float], tuple[float, float, float] | None]:
    """Target and pole checked and pulled in (see :data:`FAR`), as floats."""
    far = FAR * chain.reach
    t = _pulled(_floats3("target", target), far)
    return t, None if pole is None else _pulled(_floats3("pole", pole), far)


def solve_floats(
    chain: Chain,
    target: ArrayLike,
    *,
    method: str = "triangulation",
    pole: ArrayLike | None = None,
    options: SolveOptions | None = None,
) -> tuple[list[list[float]], list[Any]]:
    """:func:`solve_one` without an orientation goal, in and out as plain floats: for a
    caller that solves one small chain at a time and works in floats (a live solver).
    The same numbers as :func:`solve_one` (tested); triangulation on a chain without limits
    runs its float pass without numpy at all, and on a limited chain its float path within
    the limits where that answers (:mod:`core.triangulation_limits_single`); CCD and the
    Jacobian methods seeded from triangulation's pose (:data:`_TRIANGULATION_SEEDED`) return
    that pose where it meets the goal, as they would with 0 iterations, and they and FABRIK
    where it is a shoulder and elbow's closest pose to a target out of reach
    (:func:`_closest`), the pose their fallback would end with (the same rotations;
    positions to rounding); FABRIK on such a limb also where triangulation's closed form
    meets the goal (its own answer there); other methods, chains and targets go through
    :func:`solve_one`.

    Args:
        chain: the chain.
        target: effector goal, 3 numbers in the base frame.
        method: as for :func:`solve`.
        pole: a point (3 numbers, base frame), or ``None``.
        options: settings (default :class:`SolveOptions`).

    Returns:
        ``(rotations, positions)``: the ``n`` local rotations (4 floats each, wxyz) and
        the ``n + 1`` joint positions (3 floats each, base frame; with stretch, of the
        stretched chain: each link's length over its rest length is its scale).

    Raises:
        SolveInputError: unknown method, malformed or non-finite inputs.
    """
    impl, opts = _method_and_options(method, options)
    return _floats(chain, method, impl, opts, target, pole)


def _floats(
    chain: Chain,
    method: str,
    impl: Method,
    opts: SolveOptions,
    target: ArrayLike,
    pole: ArrayLike | None,
    route: _Route | None = None,
) -> tuple[list[list[float]], list[Any]]:
    """:func:`solve_floats` with the method and options already checked (and, from a
    :class:`Solver`, its :class:`_Route`)."""
    route = _route(method, chain, opts) if route is None else route
    if route.floats:
        t, p = _single_inputs(chain, target, pole)
        out = triangulation_single.solve_single(chain, t, p, opts)
        if out is not None and (
            not route.seeded or _meets(out[1][-1], t, chain, opts) or _closest(out, t, chain, opts)
        ):
            return out
    if method == "fabrik" and not stretch.applies(chain, opts):  # (FABRIK's float path)
        t, p = _single_inputs(chain, target, pole)
        if chain.n_joints == 2 and ends_in_hinge(chain):
            # On a two-bone limb FABRIK answers with triangulation's closed form where that
            # meets the target (core.fabrik._two_bone_limb), and a target out of reach at
            # its closest pose (_closest).
            out = triangulation_single.solve_single(chain, t, p, opts)
            if out is not None and (
                _meets(out[1][-1], t, chain, opts) or _closest(out, t, chain, opts)
            ):
                return [q if q[0] >= 0.0 else [-c for c in q] for q in out[0]], out[1]
        fab = fabrik.solve_floats(chain, t, p, opts)
        if fab is not None:
            return fab
    sol = _one(chain, impl, opts, target, pole, None)
    return sol.rotations[0].tolist(), sol.positions[0].tolist()


def solve_points(
    chain: Chain,
    target: ArrayLike,
    *,
    method: str = "triangulation",
    pole: ArrayLike | None = None,
    options: SolveOptions | None = None,
) -> list[Any]:
    """The joint positions of :func:`solve_floats`, for a caller that derives the joints'
    rotations from where they are (free joints aiming at the next joint). Triangulation on
    a chain without limits places the joints without composing any joint's rotation
    (:func:`core.triangulation_single.solve_single_points`): the same positions to rounding, in a
    third of the time for two links (closed form) and about half for three to five; other
    methods and chains give :func:`solve_floats`' positions.

    Args:
        chain: the chain.
        target: effector goal, 3 numbers in the base frame.
        method: as for :func:`solve`.
        pole: a point (3 numbers, base frame), or ``None``.
        options: settings (default :class:`SolveOptions`).

    Returns:
        The ``n + 1`` joint positions (3 floats each, base frame), root first (with
        stretch, of the stretched chain).

    Raises:
        SolveInputError: unknown method, malformed or non-finite inputs.
    """
    impl, opts = _method_and_options(method, options)
    return _points(chain, method, impl, opts, target, pole)


def _points(
    chain: Chain,
    method: str,
    impl: Method,
    opts: SolveOptions,
    target: ArrayLike,
    pole: ArrayLike | None,
    route: _Route | None = None,
) -> list[Any]:
    """:func:`solve_points` with the method and options already checked (and, from a
    :class:`Solver`, its :class:`_Route`)."""
    route = _route(method, chain, opts) if route is None else route
    if route.points:
        t, p = _single_inputs(chain, target, pole)
        out = triangulation_single.solve_single_points(chain, t, p, opts)
        if out is not None and (not route.seeded or _meets(out[-1], t, chain, opts)):
            return out
    return _floats(chain, method, impl, opts, target, pole, route)[1]


#: The methods whose default start is triangulation's pose, and the option that chooses it
#: (:mod:`core.ccd_seed`, :mod:`core.jacobian_seed`): without stiffness or posture bias, that
#: pose (on a limited chain triangulation's within the limits, its search included) is their
#: answer wherever it meets the goal (CCD keeps it with 0 sweeps, the Jacobian methods take
#: 0 updates).
_TRIANGULATION_SEEDED = {
    "ccd": "ccd_start",
    "jacobian_transpose": "jacobian_start",
    "jacobian_pinv": "jacobian_start",
    "jacobian_dls": "jacobian_start",
}


def _returns_its_seed(method: str, chain: Chain, opts: SolveOptions) -> bool:
    """True when ``method`` answers a position goal on ``chain`` with triangulation's pose
    wherever that pose meets the goal (see :data:`_TRIANGULATION_SEEDED`)."""
    start = _TRIANGULATION_SEEDED.get(method)
    return (
        start is not None
        and getattr(opts, start) == "triangulation"
        and opts.posture_weight == 0.0
        and not any(any(lim.stiffness) for lim in chain.limits)
    )


class _Route(NamedTuple):
    """Where the one-target fast path takes triangulation's float pass for a method on a
    chain with its options (:func:`_route`: made once by a :class:`Solver`, on every call
    by the module functions)."""

    #: :func:`_points` may answer with the pass's positions: the method is triangulation or
    #: returns its seed (:func:`_returns_its_seed`), and neither stretch nor soft reach
    #: changes where the chain aims.
    points: bool
    #: :func:`_floats` may answer with the pass's pose: as :attr:`points`, but a seeded
    #: method only on a limited chain (on a free chain the Jacobian methods' positions are
    #: their own forward kinematics, which rounding tells from the pass's).
    floats: bool
    #: The method is a seeded one: the pass answers only where it meets the goal.
    seeded: bool


def _route(method: str, chain: Chain, opts: SolveOptions) -> _Route:
    """The :class:`_Route` of ``method`` on ``chain`` with ``opts``."""
    seeded = _returns_its_seed(method, chain, opts)
    aims_as_without = not stretch.applies(chain, opts)
    passes = (method == "triangulation" or seeded) and aims_as_without
    floats = passes and (method == "triangulation" or not chain.is_free)
    return _Route(passes, floats, seeded)


def _meets(
    effector: Any, target: tuple[float, float, float], chain: Chain, opts: SolveOptions
) -> bool:
    """Whether ``effector`` (3 floats) is within the problem's tolerance of ``target``."""
    tolerance = opts.tolerance if opts.tolerance is not None else 1e-6 * chain.reach
    return math.dist(effector, target) <= tolerance


def _closest(
    out: tuple[list[list[float]], list[Any]],
    target: tuple[float, float, float],
    chain: Chain,
    opts: SolveOptions,
) -> bool:
    """Whether triangulation's answer ``out`` misses ``target`` at the closest admissible
    pose of a shoulder and elbow (:func:`core.limb_closest.is_closest`), or of a two-bone
    limb whose hinge cannot fold as near as the target or stretch as far
    (:func:`core.triangulation_limits_single.is_extent_closest`): CCD, the Jacobian
    methods and FABRIK end there too (their fallback to triangulation's pose takes it unless
    their own is materially closer, and none is), so their iteration is skipped."""
    tolerance = opts.tolerance if opts.tolerance is not None else 1e-6 * chain.reach
    effector = out[1][-1]
    return limb_closest.is_closest(
        chain, target, effector, tolerance
    ) or triangulation_limits_single.is_extent_closest(
        chain, target, (effector[0], effector[1], effector[2]), tolerance
    )


class Pose(NamedTuple):
    """One target's final pose in plain floats (:meth:`Solver.pose`)."""

    #: The ``n`` local rotations (4 floats each, wxyz, relative to the rest frames).
    rotations: list[list[float]]
    #: The ``n + 1`` joint positions (3 floats each, base frame; the stretched chain's
    #: with stretch), root first, the effector last.
    points: list[list[float]]
    #: The ``n`` links' lengths over their rest lengths when the chain stretches, else
    #: ``None``.
    scales: list[float] | None


class Solver:
    """A solver prepared once for one chain, method and options.

    Checks the chain, the method and the options once (a live solver calls it for every
    chain on every frame: :func:`solve_one`, :func:`solve_floats` and :func:`solve_points`
    check them on every call) and holds what the method plans per chain. :meth:`solve_one`
    and :meth:`solve_points` are the one-target fast path in plain floats; :meth:`solve`
    is :func:`core.solve.solve` for a batch (vectorised). Each gives the same numbers as the
    function it stands for (tested against :func:`core.solve.solve` for every method).

    Args:
        chain: the chain.
        method: one of :data:`core.solve.METHODS`.
        options: settings (default :class:`SolveOptions`).

    Raises:
        SolveInputError: not a :class:`Chain`, an unknown method, options that are not a
            :class:`SolveOptions`, or stretch options the chain cannot use.
    """

    def __init__(
        self, chain: Chain, method: str = "triangulation", options: SolveOptions | None = None
    ) -> None:
        if not isinstance(chain, Chain):
            raise SolveInputError(f"chain must be a Chain, got {type(chain).__name__}")
        self.chain = chain
        self.method = method
        self._impl, self.options = _method_and_options(method, options)
        if stretch.applies(chain, self.options):
            stretch.check(chain, self.options)
        #: Triangulation's per-chain plan, made here once (it is cached per chain; the
        #: triangulation pass and the methods seeded from its pose read it on every call).
        self.plan = _plan(chain)
        self._route = _route(method, chain, self.options)
        self._stretches = stretch.stretches(chain, self.options)
        self._untwist = _untwist_plan(chain)
        self._aims_every_joint = aims_every_joint(chain)
        oriented = self.options.position_weight < 1.0 and not stretch.applies(chain, self.options)
        wrist = oriented and method in WRIST_METHODS
        start = self.options.ccd_start if method == "ccd" else self.options.jacobian_start
        #: CCD and the Jacobian methods take the wrist pose where it meets both goals
        #: (:func:`core.wrist.seeded_by_wrist`): :meth:`pose` tries it first.
        self._seeds = (
            oriented
            and not wrist
            and chain.n_joints >= 2
            and seeds_chain(chain, self.options, start)
        )
        #: The solver of the chain without its last joint, for :meth:`pose`'s float path of
        #: the wrist rule (this method's; triangulation's for a seed), with this chain's
        #: tolerance (the batch path solves the wrists to the problem's).
        tolerance = self.options.tolerance
        self._upper = (
            Solver(
                upper_chain(chain),
                method if wrist else "triangulation",
                self.options.replace(
                    tolerance=1e-6 * chain.reach if tolerance is None else tolerance
                ),
            )
            if (wrist and chain.n_joints >= 2 and takes_orientation(chain)) or self._seeds
            else None
        )
        #: This method pursues the position alone (a last hinge:
        #: :func:`core.wrist.solve_oriented`), which :meth:`pose` then takes on its float path.
        self._position_only = wrist and not takes_orientation(chain)
        #: With *Stretch* by the closed form and no soft reach, a goal the links meet at their
        #: rest lengths (:meth:`_keeps_lengths`: :func:`core.stretch.plan` gives scales of 1)
        #: is this solver's problem without stretch: :meth:`pose` asks that solver, in floats.
        self._unstretched = (
            Solver(chain, method, self.options.replace(stretch=False))
            if self._stretches
            and self.options.stretch_rule == "closed_form"
            and self.options.soft_reach == 0.0
            else None
        )

    def solve_one(
        self, target: ArrayLike, pole: ArrayLike | None = None
    ) -> tuple[list[list[float]], list[Any]]:
        """One target from the rest pose, position goal, in and out as plain floats
        (:func:`solve_floats`): the ``n`` local rotations (4 floats each, wxyz) and the
        ``n + 1`` joint positions (3 floats each, base frame)."""
        return _floats(self.chain, self.method, self._impl, self.options, target, pole, self._route)

    def solve_points(self, target: ArrayLike, pole: ArrayLike | None = None) -> list[Any]:
        """The joint positions of :meth:`solve_one` alone (:func:`solve_points`: for a
        caller that derives the rotations from where the joints are)."""
        return _points(self.chain, self.method, self._impl, self.options, target, pole, self._route)

    def solve_rotation(
        self, target: ArrayLike, target_rotation: ArrayLike, pole: ArrayLike | None = None
    ) -> Solution:
        """One target with an orientation goal (:func:`solve_one`): the method's
        :class:`~core.result.Solution` for a batch of one."""
        return _one(self.chain, self._impl, self.options, target, pole, target_rotation)

    def keeps_twist(self, target_rotation: Any) -> bool:
        """An orientation goal with weight decides the twist; without one (or at weight 0:
        ``position_weight`` 1) the twist is free and :meth:`pose` and :meth:`poses` untwist
        (:mod:`core.untwist`)."""
        return target_rotation is not None and self.options.position_weight < 1.0

    def pose(
        self,
        target: ArrayLike,
        pole: ArrayLike | None = None,
        target_rotation: ArrayLike | None = None,
    ) -> Pose:
        """One target from the rest pose, the final pose in plain floats: the method's
        answer with the twist a free goal leaves untwisted (:meth:`keeps_twist`,
        :func:`core.untwist.untwist_floats`). What a live solver shows.

        Args:
            target: effector goal, 3 numbers in the base frame.
            pole: a point (3 numbers, base frame), or ``None``.
            target_rotation: goal orientation ``(4,)`` wxyz, or ``None``.
        """
        chain, opts, plan = self.chain, self.options, self._untwist
        if self._unstretched is not None and self._keeps_lengths(target, target_rotation):
            rotations, points, _ = self._unstretched.pose(target, pole, target_rotation)
            return Pose(rotations, points, [1.0] * chain.n_joints)
        if target_rotation is not None and self._upper is not None:
            wrist = self._wrist_pose(target, pole, target_rotation)
            if wrist is not None:
                return wrist
        if target_rotation is not None and self._position_only:
            _quaternion_floats("target_rotation", target_rotation)  # (checked all the same)
            target_rotation = None
        if target_rotation is not None or self._stretches:
            sol = _one(chain, self._impl, opts, target, pole, target_rotation)
            rotations, points = sol.rotations[0].tolist(), sol.positions[0].tolist()
            scales = None if sol.scales is None else sol.scales[0].tolist()
            if not self.keeps_twist(target_rotation):
                rotations = _untwisted(plan, rotations, points)
            return Pose(rotations, points, scales)
        if self._aims_every_joint:  # untwist gives every rotation from the positions
            points = self.solve_points(target, pole)
            return Pose(_untwisted(plan, None, points), points, None)
        rotations, points = self.solve_one(target, pole)
        return Pose(_untwisted(plan, rotations, points), points, None)

    def _keeps_lengths(self, target: ArrayLike, goal: ArrayLike | None) -> bool:
        """Whether :func:`core.stretch.plan` keeps every link at its rest length for this
        goal (with a margin of 1e-12 at its bound): a target within the chain's length, or,
        for an orientation goal the wrist rule meets (:func:`core.wrist.pursues_orientation`),
        a wrist within reach of three or more links' upper ones (one upper link reaches its
        own length's distance alone)."""
        chain = self.chain
        x, y, z = _floats3("target", target)
        if goal is None or not (self.options.position_weight < 1.0 and takes_orientation(chain)):
            return math.sqrt(x * x + y * y + z * z) < chain.reach * (1.0 - 1e-12)
        if chain.n_joints < 3:
            return False
        wx, wy, wz = qrotate(
            _quaternion_floats("target_rotation", goal), chain_floats(chain)[1][-1]
        )
        x, y, z = x - wx, y - wy, z - wz
        return math.sqrt(x * x + y * y + z * z) < upper_chain(chain).reach * (1.0 - 1e-12)

    def _wrist_pose(
        self, target: ArrayLike, pole: ArrayLike | None, goal: ArrayLike
    ) -> Pose | None:
        """:meth:`pose` of an orientation goal by the wrist (:func:`core.wrist.pose_floats`:
        the same numbers as :func:`core.wrist.solve_with_wrist`, to rounding); for CCD and
        the Jacobian methods, where it meets both goals (else ``None``: their own solve)."""
        assert self._upper is not None
        t, p = _single_inputs(self.chain, target, pole)
        upper = self._upper.pose
        tolerance = self._upper.options.tolerance
        assert tolerance is not None  # (set when made)
        rotations, points, angle = pose_floats(
            self.chain,
            lambda at, p_: upper(at, p_)[:2],
            t,
            _quaternion_floats("target_rotation", goal),
            p,
            tolerance,
            self.options.angle_tolerance,
        )
        if self._seeds and not (
            math.dist(points[-1], t) <= tolerance and angle <= self.options.angle_tolerance
        ):
            return None
        return Pose(rotations, [list(v) for v in points], None)

    def poses(
        self,
        target: ArrayLike,
        *,
        pole: ArrayLike | None = None,
        target_rotation: ArrayLike | None = None,
    ) -> IKResult:
        """:meth:`solve` with the twist a free goal leaves untwisted, as :meth:`pose` for
        each target (:func:`core.untwist.untwist`): the final poses of a batch. Where a
        target is met they are :meth:`pose`'s to rounding; on a chain with limits, a target
        they keep out of reach may end elsewhere than :meth:`pose` ends it (a method's
        batched iterations, searches and restarts: up to ~2° per joint on a 5-bone chain of
        ball joints, ``docs/addon.md``) — the add-on bakes such a chain with :meth:`pose`."""
        result = self.solve(target, pole=pole, target_rotation=target_rotation)
        if self.keeps_twist(target_rotation):
            return result
        n = self.chain.n_joints
        flat = untwist(
            self.chain, result.rotations.reshape(-1, n, 4), result.positions.reshape(-1, n + 1, 3)
        )
        return dataclasses.replace(result, rotations=flat.reshape(result.rotations.shape))

    def solve(
        self,
        target: ArrayLike,
        *,
        pole: ArrayLike | None = None,
        target_rotation: ArrayLike | None = None,
        initial: ArrayLike | None = None,
    ) -> IKResult:
        """A target or a batch ``(..., 3)``, vectorised and measured: :func:`core.solve.solve`
        with this solver's chain, method and options."""
        return solve(
            self.chain,
            target,
            method=self.method,
            pole=pole,
            target_rotation=target_rotation,
            initial=initial,
            options=self.options,
        )


__all__ = ["Pose", "Solver"]
