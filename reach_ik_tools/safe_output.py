# SPDX-License-Identifier: GPL-3.0-or-later
"""Writing output files so that a good file already in place is never lost.

:func:`stage` writes a file to a temporary name beside its destination and checks it;
:func:`commit` syncs the staged files and renames them into place. Any failure before the
rename (a short write on a full disk that the writer reported as a success, an exception,
a signal) removes the temporary file and leaves the destination as it was.

Checks (measured on ``bpy`` 5.0.1): Blender's ``save_as_mainfile`` reports success on a
short write, and ``bpy.data.libraries.load`` still opens a zstd file cut by its last few
bytes, so a .blend is checked twice — its structure (:func:`blend_complete`: an
uncompressed file ends with a whole ``ENDB`` block header; a zstd file, as Blender writes it, ends
with the seek table of the zstd *seekable format*, whose frame sizes must add up to the
file's size; a gzip file must decompress to the end and end with ``ENDB``) and Blender
reading it back (``bpy.data.libraries.load``, which fails with "Missing DNA block" on a
file cut in the middle).
"""

from __future__ import annotations

import gzip
import json
import os
import secrets
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The zstd seekable format's footer magic and skippable-frame magic (little endian).
_SEEKABLE_MAGIC = 0x8F92EAB1
_SKIPPABLE_MAGIC = 0x184D2A5E
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class OutputError(Exception):
    """A file could not be written and checked; the destination was left as it was."""


def temporary_path(final: Path) -> Path:
    """A fresh name next to ``final`` (same file system, so the rename is atomic)."""
    return final.with_name(f".{final.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _zstd_complete(data: bytes) -> bool:
    """Whether ``data`` is a whole zstd seekable-format file (frames + seek table)."""
    if len(data) < 17 or struct.unpack_from("<I", data, len(data) - 4)[0] != _SEEKABLE_MAGIC:
        return False
    frames = struct.unpack_from("<I", data, len(data) - 9)[0]
    descriptor = data[len(data) - 5]
    entry = 12 if descriptor & 0x80 else 8
    table = frames * entry + 9
    start = len(data) - table - 8
    if start < 0:
        return False
    magic, size = struct.unpack_from("<II", data, start)
    if magic != _SKIPPABLE_MAGIC or size != table:
        return False
    sizes = [struct.unpack_from("<I", data, start + 8 + k * entry)[0] for k in range(frames)]
    if sum(sizes) != start:
        return False
    offset = 0
    for size in sizes:
        if data[offset : offset + 4] != _ZSTD_MAGIC:
            return False
        offset += size
    return True


def _ends_with_endb(data: bytes) -> bool:
    """Whether an uncompressed .blend ends with a whole ``ENDB`` block header: 32 bytes in
    the format of ``BLENDER17-01…`` (Blender 5.0+), else 24 (8-byte pointers, ``BLENDER-``)
    or 20 (4-byte pointers, ``BLENDER_``)."""
    if data.startswith(b"BLENDER17-01"):
        size = 32
    elif data[7:8] == b"-":
        size = 24
    elif data[7:8] == b"_":
        size = 20
    else:
        return False
    return len(data) > size and data[-size : -size + 4] == b"ENDB"


def blend_complete(path: Path) -> bool:
    """Whether the .blend at ``path`` is whole (see the module docstring)."""
    data = path.read_bytes()
    if data.startswith(b"BLENDER"):
        return _ends_with_endb(data)
    if data.startswith(_ZSTD_MAGIC):
        return _zstd_complete(data)
    if data.startswith(b"\x1f\x8b"):
        try:
            inner = gzip.decompress(data)
        except (OSError, EOFError):
            return False
        return inner.startswith(b"BLENDER") and _ends_with_endb(inner)
    return False


def check_blend(bpy: Any, path: Path) -> None:
    """Raise :class:`OutputError` unless ``path`` is a whole .blend that Blender reads."""
    if path.stat().st_size == 0:
        raise OutputError(f"{path} is empty")
    if not blend_complete(path):
        raise OutputError(f"{path} is incomplete (the disk may be full)")
    libraries = len(bpy.data.libraries)
    try:
        with bpy.data.libraries.load(str(path)) as (source, _):
            if not len(source.objects) and not len(source.scenes):
                raise OutputError(f"Blender reads no scene from {path}")
    except OSError as exc:
        raise OutputError(f"Blender cannot read {path} back: {exc}".strip()) from None
    finally:
        while len(bpy.data.libraries) > libraries:
            bpy.data.libraries.remove(bpy.data.libraries[-1])


def check_json(path: Path) -> None:
    """Raise :class:`OutputError` unless ``path`` holds whole JSON."""
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OutputError(f"{path} is not whole JSON (the disk may be full): {exc}") from None


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    for leftover in (path, Path(f"{path}@")):
        if leftover.exists():
            leftover.unlink()


def stage(final: Path, write: Callable[[Path], None], check: Callable[[Path], None]) -> Path:
    """``write(tmp)`` a temporary file beside ``final``, ``check(tmp)`` it and sync it;
    returns the temporary path (give it to :func:`commit`). On any failure the temporary
    file is removed and the exception passes on (an ``OSError`` of the writer, or
    :class:`OutputError`); ``final`` is not touched."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(final)
    try:
        write(tmp)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise OutputError(f"nothing was written for {final}")
        check(tmp)
        _fsync(tmp)
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def discard(staged: list[tuple[Path, Path]]) -> None:
    """Remove staged temporary files ``(tmp, final)`` without renaming them."""
    for tmp, _ in staged:
        _remove(tmp)


def commit(staged: list[tuple[Path, Path]]) -> None:
    """Rename each staged ``(tmp, final)`` into place, then sync the folders."""
    try:
        for tmp, final in staged:
            os.replace(tmp, final)
    finally:
        discard(staged)
    for folder in {final.parent for _, final in staged}:
        _fsync(folder)


def save_blend_file(bpy: Any, tmp: Path) -> None:
    """Save the open file as a copy at ``tmp`` (Blender picks the name's ``.blend``)."""
    blend = tmp.with_name(tmp.name + ".blend")
    try:
        bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True, check_existing=False)
        os.replace(blend, tmp)
    finally:
        _remove(blend)


def write_json_file(data: Any, tmp: Path) -> None:
    """Write ``data`` as indented JSON at ``tmp``."""
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data, indent=2) + "\n")


def save_blend(bpy: Any, final: Path) -> None:
    """Save the open file as a copy at ``final``, safely (:func:`stage`, then :func:`commit`)."""
    tmp = stage(
        final,
        lambda t: save_blend_file(bpy, t),
        lambda t: check_blend(bpy, t),
    )
    commit([(tmp, final)])


def save_json(data: Any, final: Path) -> None:
    """Write ``data`` as JSON at ``final``, safely (:func:`stage`, then :func:`commit`)."""
    tmp = stage(final, lambda t: write_json_file(data, t), check_json)
    commit([(tmp, final)])
