# SPDX-License-Identifier: GPL-3.0-or-later
"""Record what Blender shows, frame by frame, and compare two recordings: the checks that a
bake, and a file saved after playing, reproduce the live pose
(``scripts/check_blender_bake.sh``).

Record (inside Blender, the ``bpy`` module or a Blender program)::

    blender -b FILE.blend --python scripts/pose_track.py -- --out live.json --live
    blender -b BAKED.blend --python scripts/pose_track.py -- --out replay.json

writes, for every frame of the scene's range, the evaluated world matrix of every pose bone
of every armature. ``--live`` loads Reach IK first (its live solving drives the chains);
without it the recording refuses to run when Reach IK is loaded, so a replay shows the
baked keys alone.

``--save-played PLAYED.blend`` then saves the file as played (Reach IK keeps each shown
frame's solution on its helpers), for a replay where Reach IK is not installed.

Compare (any Python with numpy)::

    python scripts/pose_track.py compare live.json replay.json

prints the largest distance between the bones' tails (effectors, metres) and the largest
angle between the bones' orientations (degrees) and exits 1 unless they are within the
bake's bars: 1e-5 m and 0.01°.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: reach_ik_tools

from reach_ik_tools import blender_session, safe_output

EFFECTOR_TOL = 1e-5
ANGLE_TOL_DEG = 0.01


def record(args: argparse.Namespace) -> int:
    bpy = blender_session.blender_module()
    if args.input:
        bpy.ops.wm.open_mainfile(filepath=args.input, load_ui=False)
    if args.live:
        blender_session.load_reach_ik(bpy)
    elif "reach_ik" in bpy.types.PoseBone.bl_rna.properties:
        print("pose_track.py: Reach IK is loaded; a replay must run without it", file=sys.stderr)
        return 2
    scene = bpy.context.scene
    depsgraph = bpy.context.evaluated_depsgraph_get()
    armatures = sorted(o.name for o in scene.objects if o.type == "ARMATURE")
    bones = [
        (name, b.name, b.length) for name in armatures for b in bpy.data.objects[name].data.bones
    ]
    frames = list(range(scene.frame_start, scene.frame_end + 1))
    matrices = []
    for frame in frames:
        scene.frame_set(frame)
        row = []
        for name, bone, _ in bones:
            ob = bpy.data.objects[name].evaluated_get(depsgraph)
            m = ob.matrix_world @ ob.pose.bones[bone].matrix
            row.append([v for r in m for v in r])
        matrices.append(row)
    data = {
        "blender": bpy.app.version_string,
        "live": bool(args.live),
        "frames": frames,
        "bones": bones,
        "matrices": matrices,
    }
    safe_output.save_json(data, Path(args.out))
    print(f"recorded {len(bones)} bones over {len(frames)} frames -> {args.out}")
    if args.save_played:
        safe_output.save_blend(bpy, Path(args.save_played))
        print(f"saved the played (not baked) file -> {args.save_played}")
    return 0


def compare(first: Path, second: Path) -> int:
    import numpy as np

    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (first, second))
    if a["frames"] != b["frames"] or [x[:2] for x in a["bones"]] != [x[:2] for x in b["bones"]]:
        print("pose_track.py: the recordings cover different frames or bones", file=sys.stderr)
        return 1
    ma = np.array(a["matrices"]).reshape(len(a["frames"]), len(a["bones"]), 4, 4)
    mb = np.array(b["matrices"]).reshape(ma.shape)
    tails = np.array([[0.0, length, 0.0, 1.0] for _, _, length in a["bones"]])
    ta = np.einsum("fbij,bj->fbi", ma, tails)[..., :3]
    tb = np.einsum("fbij,bj->fbi", mb, tails)[..., :3]
    distance = np.linalg.norm(ta - tb, axis=-1)
    ra = ma[..., :3, :3] / np.linalg.norm(ma[..., :3, :3], axis=-2, keepdims=True)
    rb = mb[..., :3, :3] / np.linalg.norm(mb[..., :3, :3], axis=-2, keepdims=True)
    cos = (np.einsum("fbij,fbij->fb", ra, rb) - 1.0) / 2.0
    angle = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    f, j = np.unravel_index(int(np.argmax(distance)), distance.shape)
    g, k = np.unravel_index(int(np.argmax(angle)), angle.shape)
    ok = distance.max() <= EFFECTOR_TOL and angle.max() <= ANGLE_TOL_DEG
    print(
        f"{'OK' if ok else 'FAILED'}: {len(a['bones'])} bones x {len(a['frames'])} frames "
        f"({a['blender']} vs {b['blender']}): largest effector distance "
        f"{distance.max():.2e} m ({a['bones'][j][0]}:{a['bones'][j][1]}, frame {a['frames'][f]}), "
        f"largest angle {angle.max():.2e}° ({a['bones'][k][0]}:{a['bones'][k][1]}, "
        f"frame {a['frames'][g]}); bars {EFFECTOR_TOL:g} m and {ANGLE_TOL_DEG:g}°"
    )
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["compare"]:
        parser = argparse.ArgumentParser(prog="pose_track.py compare")
        parser.add_argument("first", type=Path)
        parser.add_argument("second", type=Path)
        args = parser.parse_args(argv[1:])
        return compare(args.first, args.second)
    parser = argparse.ArgumentParser(prog="pose_track.py", description=__doc__.split("\n")[0])
    parser.add_argument("input", nargs="?", help="file to open (default: the open file)")
    parser.add_argument("--out", required=True, help="the JSON recording to write")
    parser.add_argument("--live", action="store_true", help="load Reach IK (live solving)")
    parser.add_argument(
        "--save-played",
        metavar="FILE",
        help="after recording, save the file as played (live solutions stored, not baked)",
    )
    return record(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] if sys.argv[1:2] == ["compare"] else blender_session.script_argv()))
