# SPDX-License-Identifier: GPL-3.0-or-later
"""Real-Blender test setup: the ``bpy`` module with the built Reach IK extension installed.

The extension is installed the way a user's *Install from Disk* does it
(``bpy.ops.extensions.package_install_files(..., enable_on_install=True)``), once per test
session, from the zip named by ``REACH_IK_ZIP`` (``make test`` sets it) or, when unset,
from a zip built here with ``make extension``. Blender's user folders point at a temporary
directory, set below before anything imports ``bpy`` (test modules must import ``bpy``
inside tests or fixtures, not at module level, if they could be collected first).

Fixtures:

* ``blender`` (session): ``bpy`` with the extension and the bundled Rigify enabled;
* ``clean_scene``: an empty scene (``read_homefile(use_empty=True)``: add-ons and extensions
  stay enabled, the scene, objects and actions are reset; ``read_factory_settings`` would
  disable them, so it is not used);
* ``metarig``: the Rigify human metarig, in pose mode;
* ``rigify_rig``: a Rigify-**generated** human rig (``rig``, 706 bones), generated once
  per session (it takes seconds) into a temporary .blend that each test opens afresh;
* ``addon``: the installed extension's ``ik_addon`` package (``.evaluate``, ``.handlers``…).

Every test in this directory is marked ``blender``.
"""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXTENSION = "bl_ext.user_default.reach_ik"

if "bpy" not in sys.modules:
    _USER = Path(tempfile.mkdtemp(prefix="reach-ik-blender-user-"))
    os.environ["BLENDER_USER_RESOURCES"] = str(_USER)
    atexit.register(shutil.rmtree, _USER, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.blender)


def _zip_path() -> Path:
    env = os.environ.get("REACH_IK_ZIP")
    if env:
        return Path(env)
    subprocess.run(["make", "-s", "extension"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    zips = sorted((REPO / "dist").glob("reach_ik-*.zip"), key=lambda p: p.stat().st_mtime)
    if not zips:
        raise RuntimeError("make extension did not produce dist/reach_ik-*.zip")
    return zips[-1]


@pytest.fixture(scope="session")
def blender() -> Any:
    """``bpy`` with Reach IK installed from the zip and enabled, and Rigify enabled."""
    import bpy

    addon_utils = importlib.import_module("addon_utils")  # on the path once bpy is imported

    if not addon_utils.check(EXTENSION)[1]:
        result = bpy.ops.extensions.package_install_files(
            filepath=str(_zip_path()), repo="user_default", enable_on_install=True
        )
        assert result == {"FINISHED"}
    assert addon_utils.check(EXTENSION)[1], "Reach IK did not get enabled"
    addon_utils.enable("rigify", default_set=True)
    return bpy


@pytest.fixture
def addon(blender: Any) -> ModuleType:
    """The installed extension's Blender layer package."""
    return importlib.import_module(f"{EXTENSION}.ik_addon")


@pytest.fixture
def clean_scene(blender: Any) -> Any:
    """An empty scene; returns it."""
    blender.ops.wm.read_homefile(use_empty=True)
    return blender.context.scene


@pytest.fixture
def metarig(clean_scene: Any, blender: Any) -> Any:
    """The Rigify human metarig (active, pose mode); returns the armature object."""
    blender.ops.object.armature_human_metarig_add()
    obj = blender.context.object
    blender.ops.object.mode_set(mode="POSE")
    return obj


@pytest.fixture(scope="session")
def rigify_rig_file(blender: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A .blend holding the Rigify human metarig and the rig generated from it."""
    blender.ops.wm.read_homefile(use_empty=True)
    blender.ops.object.armature_human_metarig_add()
    assert blender.ops.pose.rigify_generate() == {"FINISHED"}
    path = tmp_path_factory.mktemp("rigify") / "generated.blend"
    blender.ops.wm.save_as_mainfile(filepath=str(path))
    return path


@pytest.fixture
def rigify_rig(blender: Any, rigify_rig_file: Path) -> Any:
    """The generated rig (object ``rig``), freshly opened, active, in pose mode."""
    blender.ops.wm.open_mainfile(filepath=str(rigify_rig_file))
    obj = blender.data.objects["rig"]
    blender.context.view_layer.objects.active = obj
    if obj.mode != "POSE":
        blender.ops.object.mode_set(mode="POSE")
    return obj
