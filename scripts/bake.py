# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake the Reach IK chains of a .blend file to keyframes, headless.

Either with the ``bpy`` module or inside a Blender install::

    python scripts/bake.py IN.blend --out OUT.blend [options]
    blender -b IN.blend --python scripts/bake.py -- --out OUT.blend [options]

It bakes the enabled chains stored in the file (every armature, or ``--armature``), or the
chains given with ``--chain`` (then ``--armature`` is needed), over the scene's frame range
or ``--frames START:END``, prints a progress line on stderr and one line per chain on
stdout, and writes OUT.blend and the JSON quality report (``--report``, default OUT.json).

Neither file can replace a good one with a bad one (:mod:`reach_ik_tools.safe_output`): each
is written to a temporary file in the same folder, checked (a .blend must be whole and read
back by Blender; the JSON must parse), synced, and only then both are renamed over their
destinations; any failure (a full disk included) removes the temporary files, leaves the
old output as it was and exits 1. The input is never written. Paths that collide (output
or report = the input, report = the output, a folder…) are refused before any work (exit
2). Ctrl-C (SIGINT) or SIGTERM at any point leaves no output and exits 130 / 143.

Frames may be negative (``--frames -100:-50``) and lie within Blender's own limits
(:data:`MINFRAME`..:data:`MAXFRAME`); a range whose bake would need more memory than the
machine has is refused up front.

Exit codes: 0 done; 2 bad arguments (one line on stderr saying why: missing file,
armature, bone or target, an empty, reversed or out-of-bounds frame range, an unknown
solver, colliding paths…); 1 the bake or writing failed; 130 interrupted; 143 terminated.

Reach IK itself: when the installed extension is already enabled in this Blender it is
used; otherwise the add-on is loaded from this source tree (``core`` and ``ik_addon`` next
to this ``scripts`` folder).

``--chain`` takes ``key=value`` pairs separated by commas::

    --chain tip=forearm.L,length=2,target=Hand.L,pole=Elbow.L,solver=ccd
    --chain tip=shin.R,target=rig,target_bone=foot_ik.R,pole_angle=90,use_tail=1

keys: ``tip`` (required), ``length`` (default 2), ``target`` (required, an object; with an
armature also ``target_bone``), ``pole``, ``pole_bone``, ``pole_angle`` (degrees),
``solver``, ``iterations``, ``use_tail`` (0/1), ``influence``, ``stretch`` (0/1: the bones
stretch, each by its *IK Stretch*), ``stretch_rule`` (``closed_form`` or ``blender``: the
lengths Blender's IK gives), ``soft_reach`` (metres, 0 = off).
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # repo root: reach_ik_tools

from reach_ik_tools import safe_output
from reach_ik_tools.blender_session import (
    UsageError,
    blender_module,
    inside_blender,
    load_reach_ik,
    script_argv,
)

PROG = "bake.py"

#: Blender's frame limits (``MINFRAME``/``MAXFRAME`` in its source; the bounds of
#: ``Scene.frame_start``/``frame_end``).
MINFRAME, MAXFRAME = -1048574, 1048574

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143

CHAIN_KEYS = {
    "tip",
    "length",
    "target",
    "target_bone",
    "pole",
    "pole_bone",
    "pole_angle",
    "solver",
    "iterations",
    "use_tail",
    "influence",
    "stretch",
    "stretch_rule",
    "soft_reach",
}


class Terminated(BaseException):
    """SIGTERM arrived."""


#: The signal that asked to stop (SIGINT or SIGTERM), once one has arrived.
_stop_signal: list[int] = []


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """Note the signal; :func:`stop_point` acts on it. Raising here could land inside one
    of Blender's Python handlers (run during ``frame_set``), which would swallow it; a second
    signal stops at once."""
    _stop_signal.append(signum)
    if len(_stop_signal) > 1:
        stop_point()


def stop_point() -> None:
    """Stop here if a signal asked to (nothing half-written is left behind: see
    :mod:`reach_ik_tools.safe_output`)."""
    if _stop_signal:
        if _stop_signal[0] == signal.SIGTERM:
            raise Terminated
        raise KeyboardInterrupt


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Bake Reach IK chains of a .blend file to keyframes.",
        epilog="Exit codes: 0 done, 1 bake failed, 2 bad arguments, 130 interrupted.",
    )
    parser.add_argument(
        "input",
        nargs="?",
        help="the .blend file to bake (inside Blender: the file Blender opened)",
    )
    parser.add_argument("--out", required=True, help="the baked .blend file to write")
    parser.add_argument(
        "--report", help="the JSON quality report to write (default: OUT with .json)"
    )
    parser.add_argument("--scene", help="scene to bake (default: the file's active scene)")
    parser.add_argument("--armature", help="only this armature object")
    parser.add_argument(
        "--chain",
        action="append",
        default=[],
        metavar="KEY=VALUE,...",
        help="a chain to bake instead of the stored ones (see the module docstring)",
    )
    parser.add_argument("--frames", help="frame range START:END (default: the scene's)")
    parser.add_argument("--step", type=int, default=1, help="key every STEP frames")
    parser.add_argument("--solver", help="bake every chain with this solver")
    parser.add_argument(
        "--new-action",
        action="store_true",
        help="key into a copy of each armature's action (default: into the action)",
    )
    parser.add_argument(
        "--reduce",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep only the keys needed within --reduce-distance / --reduce-angle "
        "(default); --no-reduce keys every frame, replaying the live pose exactly",
    )
    parser.add_argument(
        "--reduce-distance",
        type=float,
        help="largest effector distance from the full bake, world units "
        "(default: 0.1%% of each chain's reach)",
    )
    parser.add_argument(
        "--reduce-angle",
        type=float,
        default=0.5,
        help="largest joint angle from the full bake, degrees (default 0.5)",
    )
    parser.add_argument(
        "--overwrite-shared",
        action="store_true",
        help="key an action that other objects use too (default: key a copy of it)",
    )
    parser.add_argument(
        "--after",
        choices=("keep", "disable", "remove"),
        default="disable",
        help="what becomes of the baked chains (default: disable)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")

    def error(message: str) -> NoReturn:
        raise UsageError(message)

    parser.error = error  # type: ignore[method-assign]
    return parser.parse_args(join_option_values(argv))


def join_option_values(argv: list[str]) -> list[str]:
    """``--frames -100:-50`` as ``--frames=-100:-50``: argparse takes a value that starts
    with ``-`` (and is not a plain negative number) for an option."""
    out: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg == "--frames":
            value = next(it, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out


def parse_chain(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--chain {text!r}: expected KEY=VALUE pairs separated by commas")
        if key not in CHAIN_KEYS:
            raise UsageError(
                f"--chain: unknown key {key!r}; valid keys are {', '.join(sorted(CHAIN_KEYS))}"
            )
        fields[key] = value.strip()
    for key in ("tip", "target"):
        if not fields.get(key):
            raise UsageError(f"--chain {text!r}: {key}=… is required")
    return fields


def _number(fields: dict[str, str], key: str, kind: type, default: Any) -> Any:
    if key not in fields:
        return default
    try:
        return kind(fields[key])
    except ValueError:
        raise UsageError(f"--chain: {key}={fields[key]!r} is not a number") from None


def _goal(bpy: Any, name: str, bone: str, what: str, tip: str) -> Any:
    obj = bpy.data.objects.get(name)
    if obj is None:
        raise UsageError(f"no object {name!r} for the {what} of the chain on {tip!r}")
    if bone and (obj.type != "ARMATURE" or bone not in obj.pose.bones):
        raise UsageError(f"object {name!r} has no bone {bone!r} for the {what} of {tip!r}")
    return obj


def set_chain(bpy: Any, reach: Any, obj: Any, fields: dict[str, str]) -> str:
    """Store a command-line chain in the tip bone's settings; returns the tip."""
    rig = reach.ik_addon.rig
    methods = reach.ik_addon.chain_spec.available_methods()
    tip = fields["tip"]
    pb = obj.pose.bones.get(tip)
    if pb is None:
        raise UsageError(f"armature {obj.name!r} has no bone {tip!r}")
    target = _goal(bpy, fields["target"], fields.get("target_bone", ""), "target", tip)
    pole = None
    if fields.get("pole"):
        pole = _goal(bpy, fields["pole"], fields.get("pole_bone", ""), "pole", tip)
    solver = fields.get("solver", "")
    if solver and solver not in methods:
        raise UsageError(f"unknown solver {solver!r}; available solvers are {', '.join(methods)}")
    length = _number(fields, "length", int, 2)
    use_tail = bool(_number(fields, "use_tail", int, 1))
    try:
        rig.chain_bones(obj, tip, length, use_tail)
    except rig.RigError as exc:
        raise UsageError(f"--chain on {tip!r}: {exc}") from None
    s = pb.reach_ik
    s.chain_length = length
    s.use_tail = use_tail
    s.target = target
    s.target_bone = fields.get("target_bone", "")
    s.pole = pole
    s.pole_bone = fields.get("pole_bone", "") if pole is not None else ""
    s.pole_angle = math.radians(_number(fields, "pole_angle", float, 0.0))
    s.iterations = _number(fields, "iterations", int, s.iterations)
    s.influence = _number(fields, "influence", float, 1.0)
    s.use_stretch = bool(_number(fields, "stretch", int, 0))
    rule = fields.get("stretch_rule", "closed_form")
    if rule not in ("closed_form", "blender"):
        raise UsageError(f"stretch_rule must be closed_form or blender, got {rule!r}")
    s.stretch_rule = rule
    s.soft_reach = _number(fields, "soft_reach", float, 0.0)
    if solver:
        s.solver = solver
    s.enabled = True
    s.has_chain = True
    reach.ik_addon.live_state.live.invalidate()
    loops = reach.ik_addon.dependencies.problems(reach.ik_addon.chain_spec.dependency_chains())
    if (obj.name, tip) in loops:
        raise UsageError(f"--chain on {tip!r}: {loops[(obj.name, tip)]}")
    return tip


def frame_range(text: str | None, scene: Any) -> tuple[int, int]:
    if text is None:
        return scene.frame_start, scene.frame_end
    start, sep, end = text.partition(":")
    if not sep or not start.strip() or not end.strip():
        raise UsageError(f"--frames {text!r}: expected START:END, e.g. 1:250")
    try:
        first, last = int(start), int(end)
    except ValueError:
        raise UsageError(f"--frames {text!r}: START and END must be whole frames") from None
    if last < first:
        raise UsageError(f"--frames {text!r}: the range is reversed (END before START)")
    if first < MINFRAME or last > MAXFRAME:
        raise UsageError(
            f"--frames {text!r}: frames must lie within Blender's limits {MINFRAME}..{MAXFRAME}"
        )
    return first, last


# --------------------------------------------------------------------------------------------
# Output


def output_paths(args: argparse.Namespace, source: Path | None) -> tuple[Path, Path]:
    """The output and report paths, refused (:class:`UsageError`) when they collide with
    the input, with each other, or name a folder — before any work."""
    out = Path(args.out)
    if out.suffix.lower() != ".blend":
        raise UsageError(f"--out {args.out!r}: the output must be a .blend file")
    report = Path(args.report) if args.report else out.with_suffix(".json")
    for path, what in ((out, "--out"), (report, "--report")):
        if path.is_dir():
            raise UsageError(f"{what} {str(path)!r} is a folder; give a file name")
        if path.parent.exists() and not path.parent.is_dir():
            raise UsageError(f"{what} {str(path)!r}: {str(path.parent)!r} is not a folder")

    def same(a: Path, b: Path) -> bool:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()

    if source is not None and same(out, source):
        raise UsageError("the output must not be the input file (it is never overwritten)")
    if source is not None and same(report, source):
        raise UsageError("the report must not be the input file (it is never overwritten)")
    if same(report, out):
        raise UsageError("the report must not be the output file; give another --report")
    return out, report


def save_outputs(bpy: Any, out: Path, report_path: Path, report: Any) -> None:
    """Stage the baked file and the report, check both, then rename both into place
    (:mod:`reach_ik_tools.safe_output`); on any failure neither destination changes."""
    staged: list[tuple[Path, Path]] = []
    try:
        stop_point()
        blend = safe_output.stage(
            out,
            lambda tmp: safe_output.save_blend_file(bpy, tmp),
            lambda tmp: safe_output.check_blend(bpy, tmp),
        )
        staged.append((blend, out))
        stop_point()
        text = safe_output.stage(
            report_path,
            lambda tmp: safe_output.write_json_file(report, tmp),
            safe_output.check_json,
        )
        staged.append((text, report_path))
        stop_point()
    except BaseException:
        safe_output.discard(staged)
        raise
    safe_output.commit(staged)


class ProgressLine:
    """``bake <armature>: 42% (420/1000 frames)`` on stderr: one updating line on a terminal,
    else a line every 10 %. Each call is also a :func:`stop_point`."""

    def __init__(self, label: str, frames: int, quiet: bool) -> None:
        self.label, self.frames, self.quiet = label, frames, quiet
        self.tty = sys.stderr.isatty()
        self.shown = -1

    def __call__(self, fraction: float) -> None:
        stop_point()
        if self.quiet:
            return
        percent = int(100 * fraction)
        if percent == self.shown or (not self.tty and percent // 10 == self.shown // 10):
            return
        self.shown = percent
        done = round(fraction * self.frames)
        text = f"bake {self.label}: {percent:3d}% ({done}/{self.frames} frames)"
        if self.tty:
            sys.stderr.write("\r" + text + ("\n" if percent >= 100 else ""))
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


# --------------------------------------------------------------------------------------------
# Main


def open_input(bpy: Any, args: argparse.Namespace) -> Path:
    """Open the input file (bpy module), or check the one Blender opened; returns its path."""
    if args.input is not None:
        path = Path(args.input)
        if not path.is_file():
            raise UsageError(f"input file {args.input!r} does not exist")
        loaded = bpy.data.filepath
        if not (inside_blender() and loaded and os.path.samefile(loaded, path)):
            try:
                bpy.ops.wm.open_mainfile(filepath=str(path.resolve()), load_ui=False)
            except RuntimeError as exc:
                raise UsageError(f"cannot open {args.input!r}: {exc}") from None
        return path.resolve()
    if inside_blender() and bpy.data.filepath:
        return Path(bpy.data.filepath).resolve()
    raise UsageError("no input file: give IN.blend (inside Blender: blender -b IN.blend …)")


def armatures_to_bake(bpy: Any, reach: Any, scene: Any, args: argparse.Namespace) -> list[Any]:
    chain_spec = reach.ik_addon.chain_spec
    if args.armature:
        obj = bpy.data.objects.get(args.armature)
        if obj is None:
            raise UsageError(f"no object {args.armature!r} in the file")
        if obj.type != "ARMATURE":
            raise UsageError(f"object {args.armature!r} is not an armature ({obj.type})")
        if obj.name not in scene.objects:
            raise UsageError(f"armature {args.armature!r} is not in scene {scene.name!r}")
        return [obj]
    if args.chain:
        raise UsageError("--chain needs --armature")
    found = [
        obj
        for obj in scene.objects
        if obj.type == "ARMATURE"
        and any(obj.pose.bones[t].reach_ik.enabled for t in chain_spec.chain_tips(obj))
    ]
    if not found:
        raise UsageError(f"scene {scene.name!r} has no armature with an enabled Reach IK chain")
    return found


def run(args: argparse.Namespace) -> int:
    bpy = blender_module()
    given = Path(args.input) if args.input is not None else None
    if given is None and inside_blender() and bpy.data.filepath:
        given = Path(bpy.data.filepath)
    out, report_path = output_paths(args, given)
    if args.step < 1:
        raise UsageError(f"--step {args.step}: must be 1 or more")
    chains = [parse_chain(text) for text in args.chain]

    source = open_input(bpy, args)
    output_paths(args, source)
    reach = load_reach_ik(bpy)
    bake = importlib.import_module(reach.__name__ + ".ik_addon.bake")
    methods = reach.ik_addon.chain_spec.available_methods()
    if args.solver and args.solver not in methods:
        raise UsageError(
            f"unknown solver {args.solver!r}; available solvers are {', '.join(methods)}"
        )
    scene = bpy.context.scene
    if args.scene:
        scene = bpy.data.scenes.get(args.scene)
        if scene is None:
            raise UsageError(f"no scene {args.scene!r} in the file")
        if bpy.context.window is not None:
            bpy.context.window.scene = scene
    first, last = frame_range(args.frames, scene)
    armatures = armatures_to_bake(bpy, reach, scene, args)
    tips = [set_chain(bpy, reach, armatures[0], fields) for fields in chains] or None
    results = []
    started = time.perf_counter()
    for obj in armatures:
        options = bake.BakeOptions(
            frame_start=first,
            frame_end=last,
            frame_step=args.step,
            chains=tuple(tips) if tips else None,
            into="NEW" if args.new_action else "CURRENT",
            after=args.after.upper(),
            solver=args.solver,
            overwrite_shared=args.overwrite_shared,
            reduce=args.reduce,
            reduce_distance=args.reduce_distance,
            reduce_angle=math.radians(args.reduce_angle),
        )
        try:
            options.check()
        except bake.BakeError as exc:
            raise UsageError(str(exc)) from None
        line = ProgressLine(obj.name, len(options.frames()), args.quiet)
        try:
            result = bake.bake(obj, options, scene=scene, progress=line)
        except bake.BakeError as exc:
            print(f"{PROG}: {obj.name}: {exc}", file=sys.stderr)
            return EXIT_FAILED
        results.append(result)
        lines = [result.summary()] + ["  " + chain.summary() for chain in result.chains]
        lines += ["  warning: " + warning for warning in result.warnings]
        print("\n".join(lines), flush=True)
        stop_point()
    report = {
        "input": str(source),
        "output": str(out.resolve()),
        "blender": bpy.app.version_string,
        "seconds": time.perf_counter() - started,
        "armatures": [r.to_dict() for r in results],
    }
    try:
        save_outputs(bpy, out, report_path, report)
    except (OSError, safe_output.OutputError) as exc:
        print(
            f"{PROG}: writing failed, the old output (if any) is unchanged: {exc}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(f"wrote {out} and {report_path}")
    return EXIT_OK


def main() -> int:
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return run(parse_args(script_argv()))
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted; no partial file was left", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print(f"\n{PROG}: terminated; no partial file was left", file=sys.stderr)
        return EXIT_TERMINATED
    except Exception as exc:
        print(f"{PROG}: bake failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
