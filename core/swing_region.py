# SPDX-License-Identifier: GPL-3.0-or-later
"""The allowed swings of a limited ball joint and the nearest allowed swing.

A swing ``(w, x, 0, z)`` (``w = √(1 − x² − z²) ≥ 0``) turns the bone axis +Y to
``d = (−2wz, 1 − 2(x² + z²), 2wx)``, by the bend ``2·asin(√(x² + z²))``. Per-axis X/Z
limits, Blender's ellipse and a bend cone bound the components ``x, z``
(:class:`SwingRegion`, the rules are in :mod:`core.limits`).

:meth:`SwingRegion.nearest` gives the allowed swing whose bone axis is nearest in angle to
a given direction, i.e. the largest ``f = v·d`` over the region. The region is convex and
bounded by up to four lines (the box), a circle (the cone) and four quarter ellipses; the
largest ``f`` of a direction outside lies on the boundary, either where ``f`` is stationary
along one of these curves or at a point where two of them meet (the usual first-order
conditions). The meeting points depend only on the region and are computed once in closed
form; the stationary points are the roots of ``f``'s derivative along each curve, bracketed
by sampling the curve and found to machine precision by the Illinois variant of regula
falsi. The answer is the best allowed candidate, so it is a smooth function of the
direction up to rounding (a rotation rounded differently projects to the same swing to
~1e-15), except where two candidates tie.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from . import swing_curves as sc
from .components import FLOAT_OPS
from .errors import ChainError
from .rotations import FloatArray

Mask = NDArray[np.bool_]

#: Slack of the membership test (quaternion components): points this far outside the
#: region count as inside, so a projected rotation projects to itself.
INSIDE_EPS = 1e-12
#: A region narrower than this (quaternion components) on an axis is a segment or a point.
_THIN = 1e-9
#: Semi-axes at or below this count as zero (Blender's ``FuzzyZero``, there 1e-20).
_SEMI_MIN = 1e-9
#: Largest bend of a limited ball joint: a half turn's swing axis (and so its X and Z
#: components and its twist) is undefined, so the region stops 1e-6 rad short of it.
MAX_BEND = math.pi - 1e-6
#: Samples per boundary curve that bracket the stationary points of ``f`` along it.
_CURVE_SAMPLES = 48
#: A curve sample only wins over the exact candidates when better by more than this (it
#: is there for directions where ``f`` is constant along a curve and has no root).
_SAMPLE_HANDICAP = 1e-12
#: A bracket is searched unless its bound on ``f`` is below the best candidate by this
#: much (the bound's own rounding, ~1e-16, and a root's move onto the disc).
_BOUND_SLACK = 1e-12
#: Points this far inside the cone's circle are inside it to the membership test (and not
#: moved onto it by :meth:`SwingRegion._in_disc`): far more than its slack and rounding.
_DISC_ROOM = 1e-9
#: Weight of the distances beyond the region in :meth:`SwingRegion.outward`'s ranking: it
#: only decides between parts whose distances at the boundary point tie to rounding.
_TIE = 1e-9
#: The steps back toward the centre of :meth:`SwingRegion._inside`: ``1 − 2^(k − 52)``, the
#: last one the centre itself.
_BACK_OFF = tuple(1.0 - 2.0 ** (k - 52) for k in range(53))


def half_sin(angle: float) -> float:
    """``sin(angle/2)``: a quaternion component of a rotation by ``angle``."""
    return math.sin(0.5 * angle)


class _Candidates(NamedTuple):
    """What :meth:`SwingRegion.nearest` compares, computed once per region: ``f`` and its
    slope along a curve are linear in the direction ``v``, so each candidate is a row.

    Attributes:
        x, z: ``(M,)`` the meeting points (:attr:`SwingRegion._corners`), then from index
            ``first`` the curves' ``S`` samples (:attr:`SwingRegion._samples`).
        rows: ``(M + S, 3)``: the candidates' bone axes ``d`` (``f = d·v``,
            :func:`~core.swing_curves.axis_dot`), then the samples' slope rows (``∂f/∂s = g·v``,
            :func:`~core.swing_curves.axis_gradient` along the tangent).
        penalty: ``(M,)`` subtracted from ``f``: 0 at the meeting points, ``∞`` at samples
            outside the region, ``_SAMPLE_HANDICAP`` at the others (a sample only wins over
            the exact candidates when better by more than that: it is there for directions
            where ``f`` is constant along a curve, which then has no root).
        brackets: ``(S − 1,)`` the pairs of samples (each and the next) that may enclose an
            allowed root: on the same curve, not on the cone's circle when the box lies
            inside it (by :data:`_DISC_ROOM`), and not both outside the region on a line or
            a quadrant with an allowed sample (such a curve meets the convex region in one
            interval of ``s``; a root outside it moved onto the disc is no better than the
            circle's own candidates).
        rise: ``(S − 1,)`` how far ``f`` can rise above the mean of its values at the two
            samples: along a curve ``|∂f/∂s| ≤ |∂d/∂s| ≤ 2|∂q/∂s|`` (``q`` the swing), so
            ``f ≤ (f₀ + f₁)/2 + speed·Δs`` between samples ``Δs`` apart
            (:func:`~core.swing_curves.speed`);
            infinite where a sample was moved onto the cone's disc.
        s: ``(S,)`` the samples' curve parameters.
        points: the candidates ``(x, z)`` as pairs of floats (:meth:`SwingRegion.nearest_one`).
        spans: ``(S − 1,)`` each pair of samples' ``(s₀, s₁, rise, curve, keep)`` in floats,
            the curve a row of :attr:`SwingRegion._curves` and ``keep`` the parameters that
            may hold an allowed point (:meth:`SwingRegion._kept`), for
            :meth:`SwingRegion.nearest_one`.
    """

    x: FloatArray
    z: FloatArray
    first: int
    rows: FloatArray
    penalty: FloatArray
    brackets: Mask
    rise: FloatArray
    s: FloatArray
    points: list[tuple[float, float]]
    spans: list[tuple[float, float, float, tuple[float, ...], tuple[float, float]]]


@dataclass(frozen=True)
class SwingRegion:
    """The allowed swings of a ball joint, in the plane of their quaternion components.

    A swing ``(w, x, 0, z)`` is allowed when all of these hold:

    * **box**: ``x ∈ [xlo, xhi]`` and ``z ∈ [zlo, zhi]``, where a limited axis gives
      ``[sin(min/2), sin(max/2)]``, a locked one ``[0, 0]``, a free one ``[−1, 1]``;
    * **Blender's ellipse**, when both X and Z are limited (neither locked): with the
      per-quadrant semi-axes ``a = sin(max_x/2)`` for ``x ≥ 0``, ``a = −sin(min_x/2)`` for
      ``x < 0`` (likewise ``b`` from Z), ``x²/a² + z²/b² ≤ 1``; a quadrant where ``a`` or
      ``b`` is not above 1e-9 has only the box (as Blender's ``EllipseClamp`` in
      ``intern/iksolver/intern/IK_Math.h``);
    * **cone**: ``x² + z² ≤ sin²(cone/2)``; with X or Z limited or locked, a bend at most
      ``π − 1e-6`` in any case (a half turn's swing axis, hence its X and Z, is undefined).

    The region is convex. ``lo, hi`` are the box after the cone (``(2,)`` each, x then z);
    ``semi`` holds ``(a₊, a₋, b₊, b₋)`` or ``None`` without an ellipse; ``radius`` is the
    cone's (1 without); ``centre`` is a point inside, or ``None`` when the region is a
    segment or a point (narrower than 1e-9 on an axis).
    """

    lo: tuple[float, float]
    hi: tuple[float, float]
    semi: tuple[float, float, float, float] | None
    radius: float
    centre: tuple[float, float] | None

    @staticmethod
    def of(
        lock: tuple[bool, bool, bool],
        ranges: tuple[tuple[float, float] | None, ...],
        cone: float | None,
    ) -> SwingRegion:
        """The region of a ball joint's ``lock``, ``ranges`` and ``cone`` (as
        :class:`core.limits.JointLimits`); :class:`ChainError` when it is empty."""
        lo, hi = [-1.0, -1.0], [1.0, 1.0]
        for j, k in enumerate((0, 2)):
            r = ranges[k]
            if lock[k]:
                lo[j] = hi[j] = 0.0
            elif r is not None:
                lo[j], hi[j] = half_sin(r[0]), half_sin(r[1])
        semi: tuple[float, float, float, float] | None = None
        if not any(lock[k] or ranges[k] is None for k in (0, 2)):
            ap, an, bp, bn = (v if v > _SEMI_MIN else 0.0 for v in (hi[0], -lo[0], hi[1], -lo[1]))
            semi = (ap, an, bp, bn)
        bend = cone if cone is not None else math.pi
        if any(lock[k] or ranges[k] is not None for k in (0, 2)):
            bend = min(bend, MAX_BEND)
        radius = half_sin(bend)
        for j in range(2):
            lo[j], hi[j] = max(lo[j], -radius), min(hi[j], radius)
        region = SwingRegion((lo[0], lo[1]), (hi[0], hi[1]), semi, radius, None)
        if hi[0] - lo[0] >= _THIN and hi[1] - lo[1] >= _THIN:
            gx, gz = np.meshgrid(np.linspace(lo[0], hi[0], 65), np.linspace(lo[1], hi[1], 65))
            inside = region.contains(gx, gz, -1e-9)
            if np.any(inside):
                centre = (float(gx[inside].mean()), float(gz[inside].mean()))
                return SwingRegion(region.lo, region.hi, semi, radius, centre)
        if lo[0] <= hi[0] and lo[1] <= hi[1]:
            # A segment or a point.
            (x0, z0), (x1, z1) = region.segment()
            if region.contains(np.array(0.5 * (x0 + x1)), np.array(0.5 * (z0 + z1)), 1e-9):
                return region
        raise ChainError(
            f"X/Z limits {ranges[0]}, {ranges[2]} with cone {cone} allow no swing: Blender's "
            "ellipse of the X and Z ranges, the ranges and the cone must have a rotation in "
            "common (ranges that contain 0, the only ones Blender's UI makes, always do)"
        )

    # ------------------------------------------------------------------ membership
    def contains(self, x: FloatArray, z: FloatArray, eps: float = INSIDE_EPS) -> Any:
        """Whether swings with components ``x, z (...)`` are allowed (to ``eps``)."""
        ok = (x >= self.lo[0] - eps) & (x <= self.hi[0] + eps)
        ok &= (z >= self.lo[1] - eps) & (z <= self.hi[1] + eps)
        ok &= x * x + z * z <= self.radius * self.radius + eps
        if self.semi is not None:
            ap, an, bp, bn = self.semi
            a = np.where(x >= 0.0, ap, an)
            b = np.where(z >= 0.0, bp, bn)
            real = (a > 0.0) & (b > 0.0)
            sa, sb = np.where(real, a, 1.0), np.where(real, b, 1.0)
            ok &= ~real | ((x / sa) ** 2 + (z / sb) ** 2 <= 1.0 + eps)
        return ok

    def outward(
        self, x: FloatArray, z: FloatArray, beyond: tuple[FloatArray, FloatArray]
    ) -> tuple[FloatArray, FloatArray]:
        """The unit outward normal ``(n_x, n_z)`` at boundary swings ``x, z (K,)`` of the
        part of the boundary they lie on: of the box's four sides, the cone's circle and
        Blender's ellipse quadrant, the one of largest signed distance (the ellipse's to
        first order, ``(x²/a² + z²/b² − 1) / (2|(x/a², z/b²)|)``). Where parts tie (a corner,
        a region thinner than rounding), the one the swings ``beyond`` (outside the region,
        moved onto ``x, z``) lie farther beyond (:data:`_TIE`)."""
        ux, uz = beyond
        lo, hi = self.lo, self.hi
        best = (x - hi[0]) + _TIE * (ux - hi[0])
        nx, nz = np.ones_like(x), np.zeros_like(x)
        for at, out, gx, gz in (
            (lo[0] - x, lo[0] - ux, -1.0, 0.0),
            (z - hi[1], uz - hi[1], 0.0, 1.0),
            (lo[1] - z, lo[1] - uz, 0.0, -1.0),
        ):
            score = at + _TIE * out
            take = score > best
            best, nx, nz = (
                np.where(take, score, best),
                np.where(take, gx, nx),
                np.where(take, gz, nz),
            )
        rr = np.sqrt(x * x + z * z)
        cone = (rr - self.radius) + _TIE * (np.sqrt(ux * ux + uz * uz) - self.radius)
        take = (cone > best) & (rr > 0.0)
        safe = np.where(rr > 0.0, rr, 1.0)
        best = np.where(take, cone, best)
        nx, nz = np.where(take, x / safe, nx), np.where(take, z / safe, nz)
        if self.semi is not None:
            ap, an, bp, bn = self.semi
            a, b = np.where(x >= 0.0, ap, an), np.where(z >= 0.0, bp, bn)
            real = (a > 0.0) & (b > 0.0)
            a2, b2 = np.where(real, a * a, 1.0), np.where(real, b * b, 1.0)
            gx, gz = ux / a2, uz / b2
            gn = np.sqrt(gx * gx + gz * gz)
            out = (ux * ux / a2 + uz * uz / b2 - 1.0) / (2.0 * np.where(gn > 0.0, gn, 1.0))
            gx, gz = x / a2, z / b2
            gn = np.sqrt(gx * gx + gz * gz)
            safe = np.where(gn > 0.0, gn, 1.0)
            at = (x * x / a2 + z * z / b2 - 1.0) / (2.0 * safe)
            take = real & (gn > 0.0) & (at + _TIE * out > best)
            nx, nz = np.where(take, gx / safe, nx), np.where(take, gz / safe, nz)
        return nx, nz

    def outward_one(self, x: float, z: float, ux: float, uz: float) -> tuple[float, float]:
        """:meth:`outward` for one swing ``x, z`` and the swing ``ux, uz`` beyond it, in
        plain floats: the same parts, scores and normals, each compared as there (tested
        against :meth:`outward`)."""
        lo, hi = self.lo, self.hi
        best, nx, nz = (x - hi[0]) + _TIE * (ux - hi[0]), 1.0, 0.0
        for at, out, gx, gz in (
            (lo[0] - x, lo[0] - ux, -1.0, 0.0),
            (z - hi[1], uz - hi[1], 0.0, 1.0),
            (lo[1] - z, lo[1] - uz, 0.0, -1.0),
        ):
            score = at + _TIE * out
            if score > best:
                best, nx, nz = score, gx, gz
        rr = math.sqrt(x * x + z * z)
        cone = (rr - self.radius) + _TIE * (math.sqrt(ux * ux + uz * uz) - self.radius)
        if cone > best and rr > 0.0:
            best, nx, nz = cone, x / rr, z / rr
        if self.semi is not None:
            ap, an, bp, bn = self.semi
            a, b = (ap if x >= 0.0 else an), (bp if z >= 0.0 else bn)
            if a > 0.0 and b > 0.0:
                a2, b2 = a * a, b * b
                gx, gz = ux / a2, uz / b2
                gn = math.sqrt(gx * gx + gz * gz)
                out = (ux * ux / a2 + uz * uz / b2 - 1.0) / (2.0 * (gn if gn > 0.0 else 1.0))
                gx, gz = x / a2, z / b2
                gn = math.sqrt(gx * gx + gz * gz)
                at = (x * x / a2 + z * z / b2 - 1.0) / (2.0 * (gn if gn > 0.0 else 1.0))
                if gn > 0.0 and at + _TIE * out > best:
                    nx, nz = gx / gn, gz / gn
        return nx, nz

    def segment(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """The ends of a degenerate region (a segment along the axis with room)."""
        if self.hi[0] - self.lo[0] <= self.hi[1] - self.lo[1]:
            x0 = 0.5 * (self.lo[0] + self.hi[0])
            top = self._extent(x0, 1)
            return (x0, max(self.lo[1], -top[1])), (x0, min(self.hi[1], top[0]))
        z0 = 0.5 * (self.lo[1] + self.hi[1])
        side = self._extent(z0, 0)
        return (max(self.lo[0], -side[1]), z0), (min(self.hi[0], side[0]), z0)

    def _extent(self, fixed: float, free: int) -> tuple[float, float]:
        """How far the free component may go up and down with the other held at ``fixed``."""
        room = math.sqrt(max(0.0, self.radius**2 - fixed * fixed))
        up = down = room
        if self.semi is not None:
            ap, an, bp, bn = self.semi
            own = (ap, an) if free == 0 else (bp, bn)
            other = (bp if fixed >= 0.0 else bn) if free == 0 else (ap if fixed >= 0.0 else an)
            if other > 0.0:
                scale = math.sqrt(max(0.0, 1.0 - (fixed / other) ** 2))
                if own[0] > 0.0:
                    up = min(up, own[0] * scale)
                if own[1] > 0.0:
                    down = min(down, own[1] * scale)
        return up, down

    # ------------------------------------------------------------------ toward the centre
    def toward_centre(self, x: FloatArray, z: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Swings ``x, z (K,)`` outside the region moved straight toward its centre until
        they meet it (on a segment: to its nearest point) — Blender's ``EllipseClamp`` moves
        toward zero likewise. Cheaper than :meth:`nearest`, not the nearest allowed swing."""
        if self.centre is None:
            (x0, z0), (x1, z1) = self.segment()
            dx, dz = x1 - x0, z1 - z0
            span = dx * dx + dz * dz
            t = np.clip(((x - x0) * dx + (z - z0) * dz) / span, 0.0, 1.0) if span else 0.0 * x
            return x0 + t * dx, z0 + t * dz
        cx, cz = self.centre
        return self._inside(*self._exit(x - cx, z - cz))

    def _exit(self, ux: FloatArray, uz: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Where rays from ``centre`` along ``(ux, uz) (...)`` (non-zero) leave the region."""
        assert self.centre is not None
        cx, cz = self.centre
        uu, cu = ux * ux + uz * uz, cx * ux + cz * uz
        disc = self._disc
        if disc is not None:
            # A disc: the ray leaves it through its circle (the box's walls touch the circle,
            # Blender's ellipse with four equal semi-axes is the circle: the same exit).
            room = np.sqrt(np.maximum(0.0, cu * cu - uu * (cx * cx + cz * cz - disc * disc)))
            rho = (room - cu) / uu
            return cx + rho * ux, cz + rho * uz
        big = np.full(np.shape(ux), np.inf)
        rho = big
        for c, u, lo, hi in ((cx, ux, self.lo[0], self.hi[0]), (cz, uz, self.lo[1], self.hi[1])):
            wall = np.where(u > 0.0, hi - c, lo - c)
            rho = np.minimum(rho, np.divide(wall, u, out=big.copy(), where=u != 0.0))
        room = np.sqrt(np.maximum(0.0, cu * cu - uu * (cx * cx + cz * cz - self.radius**2)))
        rho = np.minimum(rho, (room - cu) / uu)
        if self.semi is not None:
            ap, an, bp, bn = self.semi
            exit_ = np.zeros(np.shape(ux))
            for sx, a in ((1.0, ap), (-1.0, an)):
                for sz, b in ((1.0, bp), (-1.0, bn)):
                    if not (a > 0.0 and b > 0.0):
                        continue
                    qa = (ux / a) ** 2 + (uz / b) ** 2
                    qb = 2.0 * (cx * ux / (a * a) + cz * uz / (b * b))
                    qc = (cx / a) ** 2 + (cz / b) ** 2 - 1.0
                    root = (-qb + np.sqrt(np.maximum(0.0, qb * qb - 4.0 * qa * qc))) / (2.0 * qa)
                    px, pz = cx + root * ux, cz + root * uz
                    valid = (px * sx >= -1e-12) & (pz * sz >= -1e-12)
                    exit_ = np.where(valid, np.maximum(exit_, root), exit_)
            rho = np.where(exit_ > 0.0, np.minimum(rho, exit_), rho)
        return cx + rho * ux, cz + rho * uz

    def _inside(self, x: FloatArray, z: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Boundary points ``x, z`` moved toward the centre where rounding left them outside
        (at a sharp end of a thin ellipse a rounding error of the ray's length is magnified
        past the membership test's slack): the first of ``c + s (p − c)``,
        ``s = 1 − 2^(k − 52)`` for ``k = 0, 1, …`` (:data:`_BACK_OFF`), that the test without
        slack takes in (``s = 0``, the centre, at the latest)."""
        out = ~self.contains(x, z, 0.0)
        if self.centre is None or not np.any(out):
            return x, z
        cx, cz = self.centre
        px, pz = x[out], z[out]
        s = np.zeros(px.shape)
        left = np.ones(px.shape, dtype=bool)
        for scale in _BACK_OFF:
            ok = left & self.contains(cx + scale * (px - cx), cz + scale * (pz - cz), 0.0)
            s[ok] = scale
            left &= ~ok
            if not left.any():
                break
        x, z = x.copy(), z.copy()
        x[out], z[out] = cx + s * (px - cx), cz + s * (pz - cz)
        return x, z

    # ------------------------------------------------------------------ nearest swing
    @cached_property
    def _curves(self) -> FloatArray:
        """The boundary's curves as rows ``(s0, s1, x0, x1, x2, z0, z1, z2)``: the points
        ``(x0 + x1 cos s + x2 sin s, z0 + z1 cos s + z2 sin s)`` for ``s`` in ``[s0, s1]``.
        A line ``x = c`` is ``(c, √(1 − c²)·sin s)`` (``s`` turns the bone evenly, also near
        a half turn), a line ``z = c`` likewise, the cone's circle ``r(cos s, sin s)``, an
        ellipse's quadrant ``(a cos s, b sin s)``."""
        r = self.radius
        half = 0.5 * math.pi
        rows = []
        for j in range(2):
            for c in sorted({self.lo[j], self.hi[j]}):
                if abs(c) < r:
                    h = math.sqrt(1.0 - c * c)
                    line = (c, 0.0, 0.0, 0.0, 0.0, h) if j == 0 else (0.0, 0.0, h, c, 0.0, 0.0)
                    rows.append((-half, half, *line))
        rows.append((0.0, 4.0 * half, 0.0, r, 0.0, 0.0, 0.0, r))
        if self.semi is not None:
            ap, an, bp, bn = self.semi
            for a, b, q in ((ap, bp, 0), (an, bp, 1), (an, bn, 2), (ap, bn, 3)):
                if a > 0.0 and b > 0.0:
                    rows.append((q * half, (q + 1) * half, 0.0, a, 0.0, 0.0, 0.0, b))
        return np.array(rows)

    @cached_property
    def _samples(
        self,
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, Mask, Mask]:
        """The curves sampled: parameters ``s``, points, tangents ``(M,)``, the allowed
        samples, and ``pair`` (``(M,)``, True where the next sample is on the same curve)."""
        curves = self._curves
        u = np.linspace(0.0, 1.0, _CURVE_SAMPLES + 1)
        s = curves[:, :1] + (curves[:, 1:2] - curves[:, :1]) * u  # (C, S+1)
        px, pz, tx, tz = sc.along(np.repeat(curves, u.size, axis=0).T, s.ravel())
        px, pz = self._in_disc(px, pz)
        pair = np.ones(s.shape, dtype=bool)
        pair[:, -1] = False
        return s.ravel(), px, pz, tx, tz, self.contains(px, pz), pair.ravel()

    @cached_property
    def _corners(self) -> tuple[FloatArray, FloatArray]:
        """Allowed points ``x, z (M,)`` where two boundary curves meet (closed forms)."""
        r = self.radius
        xs = sorted({self.lo[0], self.hi[0]})
        zs = sorted({self.lo[1], self.hi[1]})
        points: list[tuple[float, float]] = [(x, z) for x in xs for z in zs]
        for c in xs:
            h = math.sqrt(max(0.0, r * r - c * c))
            points += [(c, h), (c, -h)]
        for c in zs:
            h = math.sqrt(max(0.0, r * r - c * c))
            points += [(h, c), (-h, c)]
        if self.semi is not None:
            ap, an, bp, bn = self.semi
            for sx, a in ((1.0, ap), (-1.0, an)):
                for sz, b in ((1.0, bp), (-1.0, bn)):
                    if not (a > 0.0 and b > 0.0):
                        continue
                    points += [(sx * a, 0.0), (0.0, sz * b)]
                    for c in xs:
                        if c * sx >= 0.0 and abs(c) <= a:
                            points.append((c, sz * b * math.sqrt(max(0.0, 1.0 - (c / a) ** 2))))
                    for c in zs:
                        if c * sz >= 0.0 and abs(c) <= b:
                            points.append((sx * a * math.sqrt(max(0.0, 1.0 - (c / b) ** 2)), c))
                    if a != b:
                        # x² + z² = r², x²/a² + z²/b² = 1
                        x2 = (1.0 - r * r / (b * b)) / (1.0 / (a * a) - 1.0 / (b * b))
                        if 0.0 <= x2 <= r * r:
                            points.append((sx * math.sqrt(x2), sz * math.sqrt(r * r - x2)))
        x, z = self._in_disc(*np.array(points).T)
        keep = self.contains(x, z)
        return x[keep], z[keep]

    def _in_disc(self, x: FloatArray, z: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Points ``x, z`` outside the cone's disc moved onto it, radially (the membership
        test's slack would otherwise admit a half turn, ``w = 0``, whose swing axis and
        twist are undefined, beyond the largest bend of a limited joint)."""
        r = self.radius
        n2 = x * x + z * z
        scale = np.divide(r, np.sqrt(n2), out=np.ones_like(n2), where=n2 > r * r)
        return x * scale, z * scale

    @cached_property
    def _candidates(self) -> _Candidates:
        """The candidates of :meth:`nearest` (:class:`_Candidates`), once per region."""
        s, px, pz, tx, tz, allowed, pair = self._samples
        cx, cz = self._corners
        xs, zs = np.concatenate((cx, px)), np.concatenate((cz, pz))
        eye = np.eye(3)[:, :, None]  # v = each base axis in turn gives the rows' columns
        gx, gz = sc.axis_gradient(px, pz, eye)
        rows = np.concatenate((sc.axis_dot(xs, zs, eye).T, (gx * tx + gz * tz).T))
        penalty = np.concatenate((np.zeros(len(cx)), np.where(allowed, _SAMPLE_HANDICAP, np.inf)))
        curves = np.repeat(self._curves, _CURVE_SAMPLES + 1, axis=0)
        ox, oz = sc.along(curves.T, s)[:2]
        on_curve = (ox == px) & (oz == pz)  # not moved onto the cone's disc
        inside = allowed & on_curve
        per_curve = inside.reshape(len(self._curves), -1).any(axis=1)
        interval = self._curves[:, 1] - self._curves[:, 0] < 2.0 * math.pi  # not the circle
        met = np.repeat(per_curve & interval, _CURVE_SAMPLES + 1)
        corner = math.hypot(max(-self.lo[0], self.hi[0]), max(-self.lo[1], self.hi[1]))
        reach = np.repeat(interval | (corner + _DISC_ROOM >= self.radius), _CURVE_SAMPLES + 1)
        brackets = pair[:-1] & reach[:-1] & ~(met[:-1] & ~inside[:-1] & ~inside[1:])
        speed = np.repeat([sc.speed(row) for row in self._curves], _CURVE_SAMPLES + 1)[:-1]
        step = s[1:] - s[:-1]  # (0 between curves: no rise, where the speed may be ∞)
        rise = np.where(
            on_curve[:-1] & on_curve[1:], np.where(step > 0.0, speed, 0.0) * step, np.inf
        )
        params, rows_of = s.tolist(), [tuple(row) for row in self._curves.tolist()]
        spans = []
        for k, top in enumerate(rise.tolist()):
            curve = rows_of[k // (_CURVE_SAMPLES + 1)]
            lo, hi = params[k], params[k + 1]
            spans.append((lo, hi, top, curve, self._kept(curve, lo, hi)))
        points = list(zip(xs.tolist(), zs.tolist(), strict=True))
        return _Candidates(xs, zs, len(cx), rows, penalty, brackets, rise, s, points, spans)

    def _kept(self, curve: tuple[float, ...], s0: float, s1: float) -> tuple[float, float]:
        """An interval of ``s`` holding every allowed point of ``curve`` (a row of
        :attr:`_curves`) between ``s0`` and ``s1``: ``(−∞, ∞)`` but on a line of the box
        through a vertex of Blender's ellipse (``x = ±a``, both quadrants at the vertex real;
        likewise ``z = ±b``) where the points between stay inside the cone's disc (not
        moved onto it). The ellipse's test is ``1 + (z/b)² ≤ 1 + ε`` there (``x/a = ±1``
        exactly, ``ε`` :data:`INSIDE_EPS`), so an allowed point has ``|z| ≤ 1.0002·√ε·b`` (``b``
        the larger semi-axis across), and the line's ``z = h sin s``, ``|h sin s| ≥ 2h|s|/π``,
        is beyond it for ``|s| > 2√ε·b/h``."""
        everywhere = (-math.inf, math.inf)
        if self.semi is None:
            return everywhere
        _, _, x0, x1, x2, z0, z1, z2 = curve
        ap, an, bp, bn = self.semi
        if x1 == x2 == 0.0:  # x = x0, z = z2 sin s
            c, h, own, across = x0, z2, (ap if x0 >= 0.0 else an), (bp, bn)
        elif z1 == z2 == 0.0:  # z = z0, x = x2 sin s
            c, h, own, across = z0, x2, (bp if z0 >= 0.0 else bn), (ap, an)
        else:
            return everywhere
        if not (own > 0.0 and abs(c) == own and min(across) > 0.0):
            return everywhere
        if math.hypot(c, h * max(abs(math.sin(s0)), abs(math.sin(s1)))) + _DISC_ROOM >= self.radius:
            return everywhere
        half = 2.0 * math.sqrt(INSIDE_EPS) * max(across) / h
        return (-half, half)

    @cached_property
    def _disc(self) -> float | None:
        """The region's radius where it is a disc about the origin — a cone alone (the box
        its square), or Blender's ellipse with four equal semi-axes ``s`` (X and Z limited
        alike, both ways: the box ``±s``) within the cone — else ``None``."""
        r = self.radius
        if self.semi is None:
            return r if self.lo == (-r, -r) and self.hi == (r, r) else None
        s = self.semi[0]
        if s > 0.0 and self.semi == (s, s, s, s) and self.lo == (-s, -s) and self.hi == (s, s):
            return s if s <= r else None
        return None

    def nearest(self, direction: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Components ``x, z (K,)`` of the allowed swings whose bone axis is nearest (in
        angle) to unit ``direction (K, 3)`` (module docstring: the best allowed point among
        the curves' stationary points and their meeting points)."""
        v = np.asarray(direction, dtype=float)
        r = self.radius
        disc = self._disc
        if disc is not None:
            # A disc: the nearest allowed axis keeps the swing's direction, (x, z) ∝
            # (d_z, −d_x) (from d above), at the disc's radius; a bone turned right round
            # keeps X.
            r = disc
            ax, az = v[..., 2], -v[..., 0]
            length = np.hypot(ax, az)
            ok = length > 0.0
            scale = np.divide(r, length, out=np.zeros_like(length), where=ok)
            return np.where(ok, ax * scale, r), az * scale
        k = v.shape[0]
        c = self._candidates
        fd = v @ c.rows.T  # (K, M + S): f at the candidates, the slope at the samples
        f, slope = fd[:, : len(c.x)], fd[:, len(c.x) :]
        fs = f - c.penalty
        pick = np.argmax(fs, axis=1)
        best_f = fs[np.arange(k), pick]
        best_x, best_z = c.x[pick], c.z[pick]
        # Stationary maxima along a curve: the slope turns from positive to not positive,
        # in a bracket where f can rise above the best candidate (_Candidates.rise). A root
        # outside the cone's disc on another curve than its circle is no candidate: moved
        # onto the circle it could only tie with the circle's own candidates, to rounding,
        # at another point (f is flat at its maximum: a nudged direction would switch).
        fc = f[:, c.first :]
        rises = 0.5 * (fc[:, :-1] + fc[:, 1:]) + c.rise > best_f[:, None] - _BOUND_SLACK
        rows, cols = np.nonzero((slope[:, :-1] > 0.0) & (slope[:, 1:] <= 0.0) & c.brackets & rises)
        if rows.size:
            curve = self._curves[cols // (_CURVE_SAMPLES + 1)]
            root = sc.illinois(
                curve, v[rows], c.s[cols], c.s[cols + 1], slope[rows, cols], slope[rows, cols + 1]
            )
            rx, rz, _, _ = sc.along(curve.T, root)
            off = (curve[:, 1] - curve[:, 0] < 2.0 * math.pi) & (rx * rx + rz * rz > r * r)
            rx, rz = self._in_disc(rx, rz)
            fr = np.where(self.contains(rx, rz) & ~off, sc.axis_dot(rx, rz, v[rows].T), -np.inf)
            order = np.argsort(fr, kind="stable")  # the best root of a row written last
            rows, fr, rx, rz = rows[order], fr[order], rx[order], rz[order]
            better = fr > best_f[rows]
            best_f[rows[better]] = fr[better]
            best_x[rows[better]] = rx[better]
            best_z[rows[better]] = rz[better]
        return best_x, best_z

    def nearest_one(self, v: tuple[float, float, float]) -> tuple[float, float]:
        """:meth:`nearest` for one unit direction ``v`` (3 floats): the same candidates,
        the same regula falsi steps in plain floats, stopped once the root is known to lie
        where no point is allowed (:meth:`_kept`; one-target solvers call it once per
        limited joint and step; tested against :meth:`nearest` to 1e-12)."""
        r = self.radius
        disc = self._disc
        if disc is not None:
            r = disc
            ax, az = v[2], -v[0]
            length = math.hypot(ax, az)
            return (ax * (r / length), az * (r / length)) if length > 0.0 else (r, 0.0)
        c = self._candidates
        n = len(c.points)
        fd = c.rows @ np.array(v)  # f at the candidates, then the slope at the samples
        fs = fd[:n] - c.penalty
        pick = int(fs.argmax())
        best_f, best = fs.item(pick), c.points[pick]
        # The brackets of nearest in a few array operations (numpy's per-call cost is most
        # of this on a few hundred samples), then plain floats for the few found.
        up = fd[n:] > 0.0
        falls = up[:-1] > up[1:]  # the slope positive, then not
        falls &= c.brackets
        roots = falls.nonzero()[0].tolist()
        if not roots:
            return best
        # The brackets by their bound, highest first (ties in their order): one that cannot
        # beat the best so far ends the search (the same answer as searching them all, but
        # for exact ties).
        first, spans, at = c.first, c.spans, fd.item
        order = [(0.5 * (at(first + i) + at(first + i + 1)) + spans[i][2], i) for i in roots]
        order.sort(key=itemgetter(0), reverse=True)
        found = best_f
        for top, col in order:
            if top <= found - _BOUND_SLACK:
                break
            lo, hi, _, curve, keep = spans[col]
            root = sc.illinois_one(curve, v, lo, hi, at(n + col), at(n + col + 1), keep)
            if root is None:
                continue  # (outside keep: not allowed)
            rx, rz = sc.along(curve, root, FLOAT_OPS)[:2]
            if rx * rx + rz * rz > r * r:
                if curve[1] - curve[0] < 2.0 * math.pi:
                    continue  # (outside the disc, off its circle: no candidate, see nearest)
                rx, rz = self._in_disc_one(rx, rz)
            if self.contains_one(rx, rz):
                fr = sc.axis_dot(rx, rz, v, FLOAT_OPS)
                if fr > found:
                    found, best = fr, (rx, rz)
        return best

    def contains_one(self, x: float, z: float, eps: float = INSIDE_EPS) -> bool:
        """:meth:`contains` for one swing."""
        if not (self.lo[0] - eps <= x <= self.hi[0] + eps):
            return False
        if not (self.lo[1] - eps <= z <= self.hi[1] + eps):
            return False
        if x * x + z * z > self.radius * self.radius + eps:
            return False
        if self.semi is None:
            return True
        ap, an, bp, bn = self.semi
        a, b = (ap if x >= 0.0 else an), (bp if z >= 0.0 else bn)
        return not (a > 0.0 and b > 0.0) or (x / a) ** 2 + (z / b) ** 2 <= 1.0 + eps

    def beyond(self, x: FloatArray, z: FloatArray) -> FloatArray:
        """How far swings with components ``x, z (...)`` lie beyond the region: positive
        outside, ``≤ 0`` inside, zero on its edge (so :meth:`contains` holds where it is
        not positive): the largest of the margins of the box's sides, of the cone's circle
        and of Blender's ellipse where the quadrant has one, ``(s − 1)·m`` with
        ``s = √(x²/a² + z²/b²)`` the ellipse's gauge and ``m`` its least positive
        semi-axis. For finding the region's edge along a path by its sign
        (:func:`core.triangulation_limits._spin_toward`); not a distance."""
        lo, hi = self.lo, self.hi
        out = np.maximum(np.maximum(lo[0] - x, x - hi[0]), np.maximum(lo[1] - z, z - hi[1]))
        out = np.maximum(out, np.sqrt(x * x + z * z) - self.radius)
        if self.semi is None:
            return out
        ap, an, bp, bn = self.semi
        a = np.where(x >= 0.0, ap, an)
        b = np.where(z >= 0.0, bp, bn)
        real = (a > 0.0) & (b > 0.0)
        sa, sb = np.where(real, a, 1.0), np.where(real, b, 1.0)
        gauge = (np.sqrt((x / sa) ** 2 + (z / sb) ** 2) - 1.0) * self._least
        return np.where(real, np.maximum(out, gauge), out)

    def beyond_one(self, x: float, z: float) -> float:
        """:meth:`beyond` for one swing (the same arithmetic)."""
        lo, hi = self.lo, self.hi
        out = max(lo[0] - x, x - hi[0], lo[1] - z, z - hi[1])
        out = max(out, math.sqrt(x * x + z * z) - self.radius)
        if self.semi is None:
            return out
        ap, an, bp, bn = self.semi
        a, b = (ap if x >= 0.0 else an), (bp if z >= 0.0 else bn)
        if a > 0.0 and b > 0.0:
            out = max(out, (math.sqrt((x / a) ** 2 + (z / b) ** 2) - 1.0) * self._least)
        return out

    @cached_property
    def _least(self) -> float:
        """The least positive semi-axis of Blender's ellipse (1 without one)."""
        return min((v for v in self.semi or () if v > 0.0), default=1.0)

    def outside_by_one(self, x: float, z: float) -> float:
        """A lower bound of the distance (in the plane of the components) from the swing
        ``x, z`` to the region, positive only where it lies outside: :meth:`beyond_one`,
        without Blender's ellipse unless every quadrant has it. (The ellipse is then
        convex and holds the disc of radius ``m`` about 0, so its gauge rises by at most
        ``1/m`` per unit of distance; the box's sides and the circle's margin are
        distances.)"""
        if self.semi is not None and min(self.semi) > 0.0:
            return self.beyond_one(x, z)
        lo, hi = self.lo, self.hi
        out = max(lo[0] - x, x - hi[0], lo[1] - z, z - hi[1])
        return max(out, math.sqrt(x * x + z * z) - self.radius)

    def toward_centre_one(self, x: float, z: float) -> tuple[float, float]:
        """:meth:`toward_centre` for one swing outside the region, in floats (the same
        steps: :meth:`_exit`, then :meth:`_inside`'s steps back where rounding left the
        point outside)."""
        if self.centre is None:
            (x0, z0), (x1, z1) = self.segment()
            dx, dz = x1 - x0, z1 - z0
            span = dx * dx + dz * dz
            t = min(max(((x - x0) * dx + (z - z0) * dz) / span, 0.0), 1.0) if span else 0.0
            return x0 + t * dx, z0 + t * dz
        cx, cz = self.centre
        ux, uz = x - cx, z - cz
        uu, cu = ux * ux + uz * uz, cx * ux + cz * uz
        disc = self._disc
        if disc is not None:  # (a disc: its circle's exit, as _exit)
            room = math.sqrt(max(0.0, cu * cu - uu * (cx * cx + cz * cz - disc * disc)))
            rho = (room - cu) / uu
            return self._inside_one(cx, cz, cx + rho * ux, cz + rho * uz)
        rho = math.inf
        for c, u, lo, hi in ((cx, ux, self.lo[0], self.hi[0]), (cz, uz, self.lo[1], self.hi[1])):
            if u != 0.0:
                rho = min(rho, ((hi if u > 0.0 else lo) - c) / u)
        room = math.sqrt(max(0.0, cu * cu - uu * (cx * cx + cz * cz - self.radius**2)))
        rho = min(rho, (room - cu) / uu)
        if self.semi is not None:
            ap, an, bp, bn = self.semi
            exit_ = 0.0
            for sx, a in ((1.0, ap), (-1.0, an)):
                for sz, b in ((1.0, bp), (-1.0, bn)):
                    if not (a > 0.0 and b > 0.0):
                        continue
                    qa = (ux / a) ** 2 + (uz / b) ** 2
                    qb = 2.0 * (cx * ux / (a * a) + cz * uz / (b * b))
                    qc = (cx / a) ** 2 + (cz / b) ** 2 - 1.0
                    root = (-qb + math.sqrt(max(0.0, qb * qb - 4.0 * qa * qc))) / (2.0 * qa)
                    if (cx + root * ux) * sx >= -1e-12 and (cz + root * uz) * sz >= -1e-12:
                        exit_ = max(exit_, root)
            if exit_ > 0.0:
                rho = min(rho, exit_)
        return self._inside_one(cx, cz, cx + rho * ux, cz + rho * uz)

    def _inside_one(self, cx: float, cz: float, px: float, pz: float) -> tuple[float, float]:
        """:meth:`_inside` for one boundary point ``px, pz`` and the centre ``cx, cz``."""
        if self.contains_one(px, pz, 0.0):
            return px, pz
        for scale in _BACK_OFF:
            x, z = cx + scale * (px - cx), cz + scale * (pz - cz)
            if self.contains_one(x, z, 0.0):
                return x, z
        return cx, cz

    def _in_disc_one(self, x: float, z: float) -> tuple[float, float]:
        """:meth:`_in_disc` for one point."""
        r = self.radius
        n2 = x * x + z * z
        if n2 > r * r:
            scale = r / math.sqrt(n2)
            return x * scale, z * scale
        return x, z
