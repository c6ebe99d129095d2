# SPDX-License-Identifier: GPL-3.0-or-later
"""The built extension zip, installed into the ``bpy`` module as a user's *Install from Disk*
does (``bpy.ops.extensions.package_install_files``). Blender's user folders
(``BLENDER_USER_RESOURCES``) must be set before ``bpy`` is first imported.
"""

from __future__ import annotations

import importlib
import subprocess
from pathlib import Path

from reach_ik_tools import ROOT
from reach_ik_tools.blender_session import blender_module

#: The installed extension's package (the ``user_default`` repository).
EXTENSION = "bl_ext.user_default.reach_ik"


def install_extension(zip_path: Path) -> None:
    """Install and enable the extension zip (user folders must already be set)."""
    bpy = blender_module()
    addon_utils = importlib.import_module("addon_utils")
    if not addon_utils.check(EXTENSION)[1]:
        bpy.ops.extensions.package_install_files(
            filepath=str(zip_path), repo="user_default", enable_on_install=True
        )
    if not addon_utils.check(EXTENSION)[1]:
        raise SystemExit(f"could not enable the extension from {zip_path}")
    addon_utils.enable("rigify", default_set=True)


def default_zip() -> Path:
    """The newest ``dist/reach_ik-*.zip`` after ``make extension`` (which rebuilds it if stale)."""
    subprocess.run(["make", "-s", "extension"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return max((ROOT / "dist").glob("reach_ik-*.zip"), key=lambda p: p.stat().st_mtime)
