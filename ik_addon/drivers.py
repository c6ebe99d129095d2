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
from collections.abc import Iterable
from typing import Any

import bpy

from ..core import ReachIKError
from .blender_types import ArmatureObject


class DriverError(ReachIKError):
    """A driver cannot be carried over; the message says why."""


def _drivers(obj: ArmatureObject) -> Iterable[bpy.types.FCurve]:
    ad = obj.animation_data
    return ad.drivers if ad is not None else ()


def find(obj: ArmatureObject, path: str) -> bpy.types.FCurve | None:
    """The driver F-curve of ``obj`` on ``path`` (index 0), or ``None``."""
    for fc in _drivers(obj):
        if fc.data_path == path and fc.array_index == 0:
            return fc
    return None


def under(obj: ArmatureObject, prefix: str) -> list[bpy.types.FCurve]:
    """Every driver F-curve of ``obj`` whose path is ``prefix`` or lies below it
    (``prefix + "."…``, ``prefix + "["…``)."""
    return [
        fc
        for fc in _drivers(obj)
        if fc.data_path == prefix or fc.data_path.startswith((prefix + ".", prefix + "["))
    ]


def remove(obj: ArmatureObject, prefix: str) -> list[str]:
    """Delete the drivers on ``prefix`` and below; returns their paths."""
    gone: list[str] = []
    ad = obj.animation_data
    if ad is None:  # no animation data, no drivers
        return gone
    for fc in under(obj, prefix):
        gone.append(fc.data_path)
        ad.drivers.remove(fc)
    return gone


def set_muted(obj: ArmatureObject, paths: list[str], muted: bool) -> None:
    """Mute (or unmute) the driver F-curves on exactly these paths."""
    wanted = set(paths)
    for fc in _drivers(obj):
        if fc.data_path in wanted:
            fc.mute = muted


def _copy_rna(
    src: bpy.types.bpy_struct, dst: bpy.types.bpy_struct, skip: tuple[str, ...] = ()
) -> None:
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


def _copy_variables(src: bpy.types.Driver, dst: bpy.types.Driver) -> None:
    for var in src.variables:
        new = dst.variables.new()
        new.name = var.name
        new.type = var.type
        for old_t, new_t in zip(var.targets, new.targets, strict=False):
            if var.type == "SINGLE_PROP":
                new_t.id_type = old_t.id_type
            new_t.id = old_t.id
            _copy_rna(old_t, new_t, skip=("id_type", "id"))


def _copy_curve(src: bpy.types.FCurve, dst: bpy.types.FCurve) -> None:
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
    for old_mod in src.modifiers:
        new_mod = dst.modifiers.new(old_mod.type)
        if new_mod is None:
            raise DriverError(f"its curve's {old_mod.type.lower()} modifier cannot be copied")
        if isinstance(old_mod, bpy.types.FModifierGenerator) and isinstance(
            new_mod, bpy.types.FModifierGenerator
        ):
            new_mod.mode, new_mod.poly_order = old_mod.mode, old_mod.poly_order
            _set_coefficients(new_mod, _coefficients(old_mod))
        skip = ("type", "mode", "poly_order", "coefficients", "is_valid")
        _copy_rna(old_mod, new_mod, skip=skip)


def _invert_curve(fc: bpy.types.FCurve) -> None:
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
        assert isinstance(gen, bpy.types.FModifierGenerator)  # what new() makes of the type
        gen.mode, gen.poly_order = "POLYNOMIAL", 1
        _set_coefficients(gen, (1.0, -1.0))
        return
    generators = [m for m in mods if isinstance(m, bpy.types.FModifierGenerator)]
    plain = len(generators) == len(mods) and all(
        m.mode == "POLYNOMIAL" and not m.use_restricted_range for m in generators
    )
    if not plain or generators[0].use_additive:
        kinds = ", ".join(sorted({m.type.lower() for m in mods}))
        raise DriverError(f"its curve has modifiers ({kinds}) that cannot be inverted")
    for i, m in enumerate(generators):
        c = [-v for v in _coefficients(m)]
        if i == 0:
            c[0] += 1.0
        _set_coefficients(m, c)


def _coefficients(m: bpy.types.FModifierGenerator) -> list[float]:
    values: Any = m.coefficients  # a bpy_prop_array, which the stubs give no items
    return list(values)


def _set_coefficients(m: bpy.types.FModifierGenerator, values: Iterable[float]) -> None:
    generator: Any = m  # its coefficients: a bpy_prop_array, which the stubs cannot assign
    generator.coefficients = tuple(values)


def copy(
    obj: ArmatureObject, src: bpy.types.FCurve, path: str, invert: bool = False
) -> bpy.types.FCurve:
    """Give the property at ``path`` (from ``obj``) the driver F-curve ``src``; returns the
    new F-curve.

    Raises:
        DriverError: ``invert`` asked for a curve mapping that cannot be inverted, ``src``
            is no driver or ``path`` is a whole array (nothing is left behind).
    """
    fc = obj.driver_add(path)
    if isinstance(fc, list):  # an array property: a driver per item
        obj.driver_remove(path)
        raise DriverError(f"'{path}' is an array, not one value")
    drv, old = fc.driver, src.driver
    if drv is None or old is None:
        obj.driver_remove(path)
        raise DriverError(f"'{src.data_path}' has no driver to copy")
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
