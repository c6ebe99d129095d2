# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK: inverse kinematics chains for Blender armatures.

This file is the extension's entry point. It stays thin so that the solver package
``core`` can be imported and tested without Blender: the Blender layer ``ik_addon`` is
imported only when Blender registers the extension.
"""


def register() -> None:
    from . import ik_addon

    ik_addon.register()


def unregister() -> None:
    from . import ik_addon

    ik_addon.unregister()
