# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's Blender layer: chain settings on pose bones, operators, panels, live solving.

Modules: :mod:`.rig` (pose bones → core chain), :mod:`.evaluate` (solve and write poses; the
API the bake uses), :mod:`.properties`, :mod:`.operators`, :mod:`.panels`, :mod:`.handlers`.
``register`` registers every class, the ``PoseBone.reach_ik`` property and the handlers;
``unregister`` removes them all, in reverse order.
"""

from __future__ import annotations

import bpy

from . import bake, handlers, operators, panels, properties

classes = (*properties.classes, *operators.classes, *bake.classes, *panels.classes)

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    properties.register_properties()
    handlers.register_handlers()


def unregister() -> None:
    handlers.unregister_handlers()
    properties.unregister_properties()
    _unregister_classes()
