# SPDX-License-Identifier: GPL-3.0-or-later
"""What a script that drives Blender needs first: ``bpy``, its own arguments, Reach IK.

The same script runs with the ``bpy`` module (``python scripts/bake.py …``) or inside a
Blender program (``blender -b FILE.blend --python scripts/bake.py -- …``): :func:`script_argv`
gives its own arguments either way. :func:`load_reach_ik` returns Reach IK's package: when
the installed extension is already enabled in this Blender it is used; otherwise the add-on
is loaded from this source tree (``core`` and ``ik_addon`` in the repository root) and
registered.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

from reach_ik_tools import ROOT


class UsageError(Exception):
    """Bad arguments, or Reach IK cannot be loaded: a script exits 2 with the message."""


def blender_module() -> Any:
    """``bpy``, untyped: scripts drive Blender's API dynamically."""
    return importlib.import_module("bpy")


def inside_blender() -> bool:
    """Running in a Blender program (``blender --python``), not the ``bpy`` module."""
    bpy = blender_module()
    return not getattr(bpy.app, "module", False)


def script_argv() -> list[str]:
    """The script's own arguments: after ``--`` inside a Blender program, else ``argv[1:]``."""
    if inside_blender():
        return sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    return sys.argv[1:]


def load_reach_ik(bpy: Any) -> ModuleType:
    """The package of Reach IK that is (or now gets) registered: the enabled extension when
    there is one, otherwise the add-on loaded from this source tree (see the module docstring)."""
    props = bpy.types.PoseBone.bl_rna.properties
    if "reach_ik" in props:
        identifier = props["reach_ik"].fixed_type.identifier
        for cls in bpy.types.PropertyGroup.__subclasses__():
            if cls.__name__ == identifier and getattr(cls, "is_registered", False):
                return importlib.import_module(cls.__module__.rsplit(".ik_addon", 1)[0])
        raise UsageError("Reach IK is registered but its package cannot be found")
    name = "reach_ik_source"
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load Reach IK from {ROOT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        module.register()
    except ModuleNotFoundError as exc:
        raise UsageError(f"Reach IK needs {exc.name!r}, missing from this Python") from exc
    return module
