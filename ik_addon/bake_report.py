# SPDX-License-Identifier: GPL-3.0-or-later
"""A bake's report: saved as JSON beside the file, and per chain on its tip bone.

:func:`write_report` writes a :class:`~.bake.BakeResult` as JSON without ever leaving a
half-written file; :func:`store_report` keeps each chain's quality on its tip bone
(``reach_ik.bake_report``), where the *Last Bake* panel (:mod:`.panels`) reads it back
with :func:`stored_report`.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import bpy

from .blender_types import ArmatureObject, ChainBone

if TYPE_CHECKING:
    from .bake import BakeResult


def write_report(result: BakeResult, path: str) -> None:
    """Save ``result`` as JSON at ``path``, never leaving a half-written file: written to a
    temporary file beside it, read back, synced, then renamed over ``path`` (on any failure
    the temporary file is removed, ``path`` is left as it was and ``OSError`` is raised)."""
    final = os.path.abspath(path)
    tmp = os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(result.to_dict(), handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        with open(tmp, encoding="utf-8") as handle:
            json.load(handle)
        os.replace(tmp, final)
    except ValueError as exc:
        raise OSError(f"the report read back is not whole JSON (disk full?): {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def report_path_problem(path: str) -> str:
    """Why the operator must not write its report at ``path`` (absolute), or ``""``: a
    folder, or the open .blend file itself."""
    if os.path.isdir(path):
        return f"the report file '{path}' is a folder; give a file name"
    blend = bpy.data.filepath
    if blend and os.path.exists(path) and os.path.samefile(path, blend):
        return f"the report file '{path}' is the open .blend file; give another name"
    return ""


def store_report(obj: ArmatureObject, result: BakeResult) -> None:
    """Save each chain's quality (JSON) on its tip bone (``reach_ik.bake_report``), where the
    panel shows it; it is saved with the file."""
    for quality in result.chains:
        entry = {
            "method": result.method,
            "action": result.action,
            "frame_start": result.frame_start,
            "frame_end": result.frame_end,
            "frame_step": result.frame_step,
            **quality.to_dict(),
        }
        obj.pose.bones[quality.chain].reach_ik.bake_report = json.dumps(entry)


def stored_report(pose_bone: ChainBone) -> dict[str, Any] | None:
    """The quality report saved on a chain's tip bone by its last bake, or ``None``."""
    text = pose_bone.reach_ik.bake_report
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
