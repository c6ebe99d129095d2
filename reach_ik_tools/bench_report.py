# SPDX-License-Identifier: GPL-3.0-or-later
"""What every core benchmark in ``scripts/`` shares: its command line and its outputs.

Each benchmark writes ``<name>.json`` (all figures), ``<name>.md`` (the table) and
``<name>.png`` (a plot) into ``--out``, and prints the table and the JSON.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def arguments(doc: str | None, *, seed: int, quick: str) -> argparse.ArgumentParser:
    """The shared options ``--out``, ``--quick`` (described by ``quick``) and ``--seed``."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench")
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--seed", type=int, default=seed)
    return parser


def publish(
    out: Path, name: str, result: dict[str, Any], table: str, figure: Callable[[Path], None]
) -> None:
    """Write ``name``'s JSON, Markdown table and figure into ``out``; print table and JSON."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(table, encoding="utf-8")
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    figure(out / f"{name}.png")
    print(table)
    print(json.dumps(result, indent=2))
