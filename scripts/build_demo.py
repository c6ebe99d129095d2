# SPDX-License-Identifier: GPL-3.0-or-later
"""Build Reach IK's bundled demo scene and save it.

Either with the ``bpy`` module or inside a Blender install::

    python scripts/build_demo.py --out out/demo.blend [--frames 240]
    blender -b --factory-startup --python scripts/build_demo.py -- --out out/demo.blend

The scene and its builders: :mod:`reach_ik_tools.demo_scene`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: reach_ik_tools

from reach_ik_tools import demo_scene
from reach_ik_tools.blender_session import blender_module, load_reach_ik, script_argv
from reach_ik_tools.safe_output import save_blend


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="build_demo.py", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the .blend file to write")
    parser.add_argument("--frames", type=int, default=240, help="length of the animation")
    parser.add_argument("--solver", help="solver of every chain (default: the default)")
    args = parser.parse_args(argv)
    bpy = blender_module()

    bpy.ops.wm.read_homefile(use_empty=True)
    load_reach_ik(bpy)
    demo_scene.build(args.frames, args.solver)
    save_blend(bpy, Path(args.out))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(script_argv()))
