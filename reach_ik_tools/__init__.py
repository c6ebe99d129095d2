# SPDX-License-Identifier: GPL-3.0-or-later
"""Reach IK's developer tools: the code that ``scripts/`` and ``tests/`` share.

Not part of the extension (``blender_manifest.toml`` excludes this folder from the zip).
The scripts in ``scripts/`` are the entry points; what more than one of them (or a test)
needs lives here:

* :mod:`.bench_report` — the command line and outputs every core benchmark shares;
* :mod:`.paper_chains` — the triangulation paper's chains U and C and its protocol;
* :mod:`.blender_session` — ``bpy``, a script's own arguments, loading Reach IK;
* :mod:`.safe_output` — writing output files without ever losing a good one;
* :mod:`.demo_scene` — the bundled demo scene's builders;
* :mod:`.extension_install` — installing the built extension zip into the ``bpy`` module;
* :mod:`.live_scenes` — the live benchmark's scenes, timings and smoothness check;
* :mod:`.live_rigs` — the live benchmark's production rigs.

How an entry point finds this package: each script that imports it (or ``core``) puts the
repository root first on ``sys.path`` with one line,
``sys.path.insert(0, str(Path(__file__).resolve().parents[1]))``. That works the same with
the virtualenv's Python, inside a Blender program (``blender -b --python scripts/x.py``,
whose own Python knows nothing of the virtualenv) and in a script's subprocess. The tests
get the root from pytest's ``pythonpath`` setting (``pyproject.toml``), as for ``core``.
"""

from __future__ import annotations

from pathlib import Path

#: The repository root (``core/``, ``ik_addon/``, ``scripts/``, this package).
ROOT = Path(__file__).resolve().parents[1]
