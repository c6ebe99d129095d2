# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's Blender layer (being written): settings, operators, panels, live solving."""


def register() -> None:
    pass


def unregister() -> None:
    pass
