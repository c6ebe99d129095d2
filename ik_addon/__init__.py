# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's Blender layer: chain settings on pose bones, operators, panels, live solving.

Modules: :mod:`.rig` (pose bones → core chain), :mod:`.chain_spec` (a chain's settings,
the solver methods, cached chain models), :mod:`.evaluate` (live solving: one frame's data
path, and writing poses), :mod:`.solve_frames` (a chain at many frames: the bake's solve),
:mod:`.rotation_modes`, :mod:`.pose_state`, :mod:`.live_state` (live
solving's caches and flags), :mod:`.blender_types` (typing views), :mod:`.bake` (the bake
driver; :mod:`.bake_sampling`, :mod:`.bake_solve`, :mod:`.keying` with
:mod:`.rotation_continuity` and :mod:`.bake_action`, :mod:`.bake_report`,
:mod:`.bake_operator`), :mod:`.properties`, :mod:`.operators`, :mod:`.panels`,
:mod:`.shown` (the residual of the pose Blender shows), :mod:`.overlay` (the 3D View
overlay), :mod:`.diagnostics` (timeline markers), :mod:`.keymap`, :mod:`.handlers`.
``register`` registers every class, the properties, the handlers, the overlay's draw
handler and the shortcuts; ``unregister`` removes them all, in reverse order.
"""

from __future__ import annotations

import bpy

from . import bake_operator, diagnostics, handlers, keymap, operators, overlay, panels, properties

classes = (
    *properties.classes,
    *operators.classes,
    *bake_operator.classes,
    *diagnostics.classes,
    *panels.classes,
)

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    properties.register_properties()
    handlers.register_handlers()
    overlay.register_overlay()
    keymap.register_keymap()


def unregister() -> None:
    keymap.unregister_keymap()
    overlay.unregister_overlay()
    handlers.unregister_handlers()
    properties.unregister_properties()
    _unregister_classes()
