# SPDX-License-Identifier: GPL-3.0-or-later
"""Drivers moved between Blender IK constraints and Reach IK chains (used by Convert IK).

A driver is an F-curve in ``obj.animation_data.drivers`` whose ``data_path`` names the
driven property (``pose.bones["forearm"].constraints["IK"].mute``). :func:`copy` gives
another property of the same ID the same driver — type, expression, every variable and
its targets, the curve's keyframes and modifiers — so it evaluates to the same value;
:func:`copy` with ``invert=True`` makes it evaluate to ``1 − value`` (a driven ``mute``
becomes a driven ``enabled``). Inverting rewrites the curve's mapping: a curve with no
keyframes and no modifiers gets a generator ``1 − x``; keyframes are mirrored
(``y → 1 − y``); polynomial generators get their coefficients mirrored. A curve mapping
beyond that (other modifiers) is not inverted: :class:`DriverError` says so and the
caller reports it.

:func:`remove` deletes the drivers of a property path (so a deleted constraint leaves no
broken driver: Blender 4.3 warns about those on every evaluation); :func:`set_muted` mutes
or unmutes them (a muted driver curve is not evaluated, and never reported broken).
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..core import ReachIKError
from .blender_types import ArmatureObject


class DriverError(ReachIKError):
    """A driver cannot be carried over; the message says why."""


def _drivers(obj: ArmatureObject) -> Any:
    ad = obj.animation_data
    return ad.drivers if ad is not None else ()


def find(obj: ArmatureObject, path: str) -> Any:
    """The driver F-curve of ``obj`` on ``path`` (index 0), or ``None``."""
    for fc in _drivers(obj):
        if fc.data_path == path and fc.array_index == 0:
            return fc
    return None


def under(obj: ArmatureObject, prefix: str) -> list[Any]:
    """Every driver F-curve of ``obj`` whose path is ``prefix`` or lies below it
    (``prefix + "."…``, ``prefix + "["…``)."""
    return [
        fc
        for fc in _drivers(obj)
        if fc.data_path == prefix or fc.data_path.startswith((prefix + ".", prefix + "["))
    ]


def remove(obj: Any, prefix: str) -> list[str]:
    """Delete the drivers on ``prefix`` and below; returns their paths."""
    gone = []
    for fc in under(obj, prefix):
        gone.append(fc.data_path)
        obj.animation_data.drivers.remove(fc)
    return gone


def set_muted(obj: ArmatureObject, paths: list[str], muted: bool) -> None:
    """Mute (or unmute) the driver F-curves on exactly these paths."""
    wanted = set(paths)
    for fc in _drivers(obj):
        if fc.data_path in wanted:
            fc.mute = muted


def _copy_rna(src: Any, dst: Any, skip: tuple[str, ...] = ()) -> None:
    """Copy the writable plain properties of an RNA struct (not pointers or collections)."""
    for prop in src.bl_rna.properties:
        name = prop.identifier
        if name in skip or name == "rna_type" or prop.is_readonly:
            continue
        if prop.type in {"POINTER", "COLLECTION"}:
            continue
        # A property that cannot be set in this state is left at its default.
        with contextlib.suppress(AttributeError, TypeError, ValueError):
            setattr(dst, name, getattr(src, name))


def _copy_variables(src: Any, dst: Any) -> None:
    for var in src.variables:
        new = dst.variables.new()
        new.name = var.name
        new.type = var.type
        for old_t, new_t in zip(var.targets, new.targets, strict=False):
            if var.type == "SINGLE_PROP":
                new_t.id_type = old_t.id_type
            new_t.id = old_t.id
            _copy_rna(old_t, new_t, skip=("id_type", "id"))


def _copy_curve(src: Any, dst: Any) -> None:
    for m in list(dst.modifiers):
        dst.modifiers.remove(m)
    dst.keyframe_points.clear()
    points = src.keyframe_points
    if len(points):
        dst.keyframe_points.add(len(points))
        for old, new in zip(points, dst.keyframe_points, strict=True):
            new.co = old.co
            new.interpolation = old.interpolation
            new.handle_left_type = old.handle_left_type
            new.handle_right_type = old.handle_right_type
            new.handle_left, new.handle_right = old.handle_left, old.handle_right
    dst.extrapolation = src.extrapolation
    for old in src.modifiers:
        new = dst.modifiers.new(old.type)
        if old.type == "GENERATOR":
            new.mode, new.poly_order = old.mode, old.poly_order
            new.coefficients = tuple(old.coefficients)
        _copy_rna(old, new, skip=("type", "mode", "poly_order", "coefficients", "is_valid"))


def _invert_curve(fc: Any) -> None:
    """Make the curve's mapping ``1 − f(x)``; raises :class:`DriverError` when it cannot."""
    mods = list(fc.modifiers)
    if not mods:
        if len(fc.keyframe_points):
            for p in fc.keyframe_points:
                for attr in ("co", "handle_left", "handle_right"):
                    x, y = getattr(p, attr)
                    setattr(p, attr, (x, 1.0 - y))
            return
        gen = fc.modifiers.new("GENERATOR")
        gen.mode, gen.poly_order = "POLYNOMIAL", 1
        gen.coefficients = (1.0, -1.0)
        return
    plain = all(
        m.type == "GENERATOR" and m.mode == "POLYNOMIAL" and not m.use_restricted_range
        for m in mods
    )
    if not plain or mods[0].use_additive:
        kinds = ", ".join(sorted({m.type.lower() for m in mods}))
        raise DriverError(f"its curve has modifiers ({kinds}) that cannot be inverted")
    for i, m in enumerate(mods):
        c = [-v for v in m.coefficients]
        if i == 0:
            c[0] += 1.0
        m.coefficients = c


def copy(obj: Any, src: Any, path: str, invert: bool = False) -> Any:
    """Give the property at ``path`` (from ``obj``) the driver F-curve ``src``; returns the
    new F-curve.

    Raises:
        DriverError: ``invert`` asked for a curve mapping that cannot be inverted (nothing
            is left behind).
    """
    fc = obj.driver_add(path)
    drv, old = fc.driver, src.driver
    try:
        for var in list(drv.variables):
            drv.variables.remove(var)
        drv.type = old.type
        drv.expression = old.expression
        drv.use_self = old.use_self
        _copy_variables(old, drv)
        _copy_curve(src, fc)
        fc.mute = False
        if invert:
            _invert_curve(fc)
    except DriverError:
        obj.driver_remove(path)
        raise
    return fc


__all__ = ["DriverError", "copy", "find", "remove", "set_muted", "under"]
