# SPDX-License-Identifier: GPL-3.0-or-later
"""The headless baker ``scripts/bake.py`` run as a user runs it (a separate Python with the
``bpy`` module): it bakes, writes the file and the JSON report atomically, never touches
the input, exits non-zero with one line for each kind of bad argument, and leaves no
partial output when interrupted with Ctrl-C (SIGINT)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from rigs import blender_module

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bake.py"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _env(user: str) -> dict[str, str]:
    env = dict(os.environ)
    env["BLENDER_USER_RESOURCES"] = user
    return env


def run_bake(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``python scripts/bake.py ARGS`` with fresh Blender user folders."""
    with tempfile.TemporaryDirectory(prefix="reach-ik-script-user-") as user:
        return subprocess.run(
            [sys.executable, str(SCRIPT), *args],
            env=_env(user),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture(scope="module")
def demo_files(blender: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo (20 frames) and a variant whose armature is animated over 20,000 frames
    (every frame must be set: slow enough to interrupt)."""
    from reach_ik_tools import demo_scene

    bpy = blender_module()

    folder = tmp_path_factory.mktemp("batch")
    files = {}
    for name, frames in (("demo", 20), ("animated", 20_000)):
        bpy.ops.wm.read_homefile(use_empty=True)
        built = demo_scene.build(min(frames, 120))
        if name == "animated":
            bpy.context.scene.frame_end = frames
            spine = built["human"].pose.bones["spine"]
            for f in (1, frames):
                spine.rotation_quaternion = (1.0, 0.1 * (f > 1), 0.0, 0.0)
                spine.keyframe_insert("rotation_quaternion", frame=f)
            spine.driver_add("location", 0).driver.expression = "0.0"
        path = folder / f"{name}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path))
        files[name] = path
    bpy.ops.wm.read_homefile(use_empty=True)
    return files


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name or p.name.endswith("@"))


def test_bakes_stored_chains_writes_report_and_keeps_the_input(
    demo_files: dict[str, Path], tmp_path: Path
) -> None:
    source = demo_files["demo"]
    before = _digest(source)
    out = tmp_path / "out" / "baked.blend"
    done = run_bake(str(source), "--out", str(out), "--frames", "2:15", "--step", "2")
    assert done.returncode == 0, done.stderr
    assert _digest(source) == before, "the input must never be written"
    assert out.is_file()
    report = json.loads(out.with_suffix(".json").read_text())
    bakes = {a["armature"]: a for a in report["armatures"]}
    assert set(bakes) == {"Human", "PaperU", "PaperC"}
    human = bakes["Human"]
    assert (human["frame_start"], human["frame_end"], human["frames"]) == (2, 15, 8)
    assert sorted(c["chain"] for c in human["chains"]) == [
        "forearm.L",
        "forearm.R",
        "shin.L",
        "shin.R",
    ]
    assert all(c["error_max"] >= 0.0 and "pops" in c for c in human["chains"])
    assert "bake Human: 100% (8/8 frames)" in done.stderr
    assert _leftovers(out.parent) == []
    assert not (source.parent / (source.name + "1")).exists(), "no backup of the input"


def test_bakes_a_chain_given_on_the_command_line(
    demo_files: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "cli.blend"
    report = tmp_path / "cli_report.json"
    done = run_bake(
        str(demo_files["demo"]),
        "--out",
        str(out),
        "--report",
        str(report),
        "--armature",
        "Human",
        "--chain",
        "tip=hand.L,length=3,target=hand_target.L,pole=elbow_pole.L,pole_angle=15",
        "--frames",
        "1:5",
        "--after",
        "remove",
    )
    assert done.returncode == 0, done.stderr
    (bake,) = json.loads(report.read_text())["armatures"]
    assert [c["chain"] for c in bake["chains"]] == ["hand.L"]
    assert bake["chains"][0]["bones"] == ["upper_arm.L", "forearm.L", "hand.L"]


BAD_ARGUMENTS = {
    "missing file": (["{missing}"], "does not exist"),
    "missing armature": (["{demo}", "--armature", "Nobody"], "no object 'Nobody'"),
    "not an armature": (["{demo}", "--armature", "hand_target.L"], "is not an armature"),
    "missing bone": (
        ["{demo}", "--armature", "Human", "--chain", "tip=wing.L,target=hand_target.L"],
        "has no bone 'wing.L'",
    ),
    "missing target": (
        ["{demo}", "--armature", "Human", "--chain", "tip=forearm.L,target=Ghost"],
        "no object 'Ghost'",
    ),
    "reversed range": (["{demo}", "--frames", "10:5"], "reversed"),
    "empty range": (["{demo}", "--frames", "5:"], "expected START:END"),
    "unknown solver": (["{demo}", "--solver", "newton"], "unknown solver 'newton'"),
    "output is the input": (["{demo}", "--out", "{demo}"], "must not be the input"),
    "report is the input": (["{demo}", "--report", "{demo}"], "report must not be the input"),
    "report is the output": (
        ["{demo}", "--out", "{tmp}/never.blend", "--report", "{tmp}/never.blend"],
        "report must not be the output",
    ),
    "report is a folder": (["{demo}", "--report", "{tmp}"], "is a folder"),
    "output is a folder": (["{demo}", "--out", "{tmp}/dir.blend"], "is a folder"),
    "range beyond Blender's": (["{demo}", "--frames", "1:2000000000"], "Blender's limits"),
    "range before Blender's": (["{demo}", "--frames", "-1048575:1"], "Blender's limits"),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_bad_arguments_exit_2_with_one_line(
    demo_files: dict[str, Path], tmp_path: Path, case: str
) -> None:
    args, expected = BAD_ARGUMENTS[case]
    values = {
        "demo": str(demo_files["demo"]),
        "missing": str(tmp_path / "nope.blend"),
        "tmp": str(tmp_path),
    }
    (tmp_path / "dir.blend").mkdir()
    argv = [a.format(**values) for a in args]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "never.blend")]
    before = _digest(demo_files["demo"])
    done = run_bake(*argv)
    lines = [line for line in done.stderr.splitlines() if line.startswith("bake.py:")]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("bake.py: error: ")
    assert expected in lines[0]
    assert "Baked" not in done.stdout, "refused before any work"
    assert not (tmp_path / "never.blend").exists()
    assert not (tmp_path / "never.json").exists()
    assert _digest(demo_files["demo"]) == before


def test_negative_frames(demo_files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "negative.blend"
    done = run_bake(
        str(demo_files["demo"]), "--out", str(out), "--armature", "Human", "--frames", "-8:-3"
    )
    assert done.returncode == 0, done.stderr
    (human,) = json.loads(out.with_suffix(".json").read_text())["armatures"]
    assert (human["frame_start"], human["frame_end"], human["frames"]) == (-8, -3, 6)


#: Run bake.py's main() with the .blend save cut to half its bytes after Blender wrote it
#: (what a full disk did: Blender reported success on a short write).
SHORT_WRITE = """
import runpy, sys
sys.argv = [{script!r}] + {argv!r}
bake = runpy.run_path({script!r})
from reach_ik_tools import safe_output
save = safe_output.save_blend_file
def short(bpy, tmp):
    save(bpy, tmp)
    data = tmp.read_bytes()
    tmp.write_bytes(data[: len(data) // 2])
safe_output.save_blend_file = short
sys.exit(bake["main"]())
"""


def _good_output(demo_files: dict[str, Path], out: Path) -> str:
    done = run_bake(str(demo_files["demo"]), "--out", str(out), "--frames", "1:4")
    assert done.returncode == 0, done.stderr
    return _digest(out)


def test_a_short_write_leaves_the_old_output(demo_files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "baked.blend"
    good, good_report = _good_output(demo_files, out), _digest(out.with_suffix(".json"))
    argv = [str(demo_files["demo"]), "--out", str(out), "--frames", "1:6"]
    code = SHORT_WRITE.format(script=str(SCRIPT), argv=argv)
    with tempfile.TemporaryDirectory(prefix="reach-ik-script-user-") as user:
        done = subprocess.run(
            [sys.executable, "-c", code], env=_env(user), capture_output=True, text=True
        )
    assert done.returncode == 1, done.stderr
    assert "writing failed" in done.stderr
    assert "incomplete" in done.stderr
    assert _digest(out) == good
    assert _digest(out.with_suffix(".json")) == good_report, "the report is not half-updated"
    assert _leftovers(tmp_path) == []


def test_check_blend_refuses_cut_files(blender: Any, tmp_path: Path) -> None:
    from reach_ik_tools import safe_output

    blender.ops.wm.read_homefile(use_empty=True)
    blender.ops.object.armature_add()
    for compress in (False, True):
        good = tmp_path / f"good{int(compress)}.blend"
        blender.ops.wm.save_as_mainfile(filepath=str(good), copy=True, compress=compress)
        safe_output.check_blend(blender, good)
        data = good.read_bytes()
        for size in (len(data) - 1, len(data) - 4, len(data) // 2, 10):
            cut = tmp_path / "cut.blend"
            cut.write_bytes(data[:size])
            with pytest.raises(safe_output.OutputError):
                safe_output.check_blend(blender, cut)
    assert len(blender.data.libraries) == 0


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounts need root")
def test_a_full_disk_leaves_the_old_output(demo_files: dict[str, Path], tmp_path: Path) -> None:
    """A real full disk: a tmpfs with room for the old output and little more."""
    first = tmp_path / "first.blend"
    _good_output(demo_files, first)
    disk = tmp_path / "disk"
    disk.mkdir()
    size = first.stat().st_size + first.with_suffix(".json").stat().st_size + 8192
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr!r}")
    try:
        out = disk / "baked.blend"
        out.write_bytes(first.read_bytes())
        out.with_suffix(".json").write_bytes(first.with_suffix(".json").read_bytes())
        good = _digest(out)
        done = run_bake(str(demo_files["demo"]), "--out", str(out), "--frames", "1:6")
        assert done.returncode == 1, done.stderr
        assert _digest(out) == good
        assert _leftovers(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def _complete_blend(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(b"BLENDER") and b"ENDB" in data[-32:]


@pytest.mark.parametrize("when", ["while baking", "after baking"])
def test_ctrl_c_leaves_no_partial_output(
    demo_files: dict[str, Path], tmp_path: Path, when: str
) -> None:
    source = demo_files["animated"]
    before = _digest(source)
    out = tmp_path / "interrupted.blend"
    with tempfile.TemporaryDirectory(prefix="reach-ik-script-user-") as user:
        process = subprocess.Popen(
            [sys.executable, str(SCRIPT), str(source), "--out", str(out), "--armature", "Human"],
            env=_env(user),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        stream = process.stdout if when == "after baking" else process.stderr
        marker = "Baked " if when == "after baking" else "bake Human:"
        assert stream is not None
        deadline = time.monotonic() + 120
        for line in stream:
            if marker in line or time.monotonic() > deadline:
                break
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=120)
        finally:
            process.kill()
    assert _digest(source) == before
    assert _leftovers(tmp_path) == []
    if process.returncode == 0:
        assert when == "after baking", "a bake interrupted while baking must not finish"
        assert _complete_blend(out)
        return
    assert process.returncode == 130, err
    assert "interrupted" in err
    if out.exists():
        assert _complete_blend(out), "an output that exists must be complete"
    if when == "while baking":
        assert not out.exists()
        assert not out.with_suffix(".json").exists()


def test_uses_the_enabled_extension_when_there_is_one(blender: Any, addon: Any) -> None:
    from reach_ik_tools import blender_session

    package = blender_session.load_reach_ik(blender)
    assert package.__name__ + ".ik_addon" == addon.__name__
