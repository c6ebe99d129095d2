#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# make screenshots: the UI pictures in docs/images/, taken in Debian's real Blender 5.2 and
# 4.3 (root; see scripts/check_blender.sh, which also installs numpy into the chroots) on
# the demo rig of scripts/screenshot_setup.py, at Blender's default window size (1920x1080)
# and default layout (sidebar and Properties editor at their default widths).
#
#   bash scripts/screenshots.sh dist/reach_ik-<version>.zip
#
# Writes, per version V: docs/images/sidebar-V.png (3D View sidebar, "Reach IK" tab),
# docs/images/bone-panel-V.png (Bone properties, scrolled to the "Reach IK" panel) and
# docs/images/overlay-V.png (the 3D View with the overlay on the metarig's four chains),
# plus docs/images/overview-5.2.png (the whole window, scaled down).
set -euo pipefail

ZIP=${1:?usage: screenshots.sh dist/reach_ik-<version>.zip}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RB=${REAL_BLENDER:-$ROOT/../shared/tools/real-blender}
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for suite in sid trixie; do
    if ! "$RB/blender" --suite "$suite" -- -b --factory-startup --python-exit-code 1 \
        --python-expr "import numpy" >/dev/null 2>&1; then
        echo "screenshots: no numpy in the $suite chroot; run make check-blender first" >&2
        exit 1
    fi
    "$RB/screenshot" --suite "$suite" --out "$tmp/$suite.png" --addon "$ZIP" \
        --setup scripts/screenshot_setup.py --tab "Reach IK" --properties bone \
        --size 1920x1080 --settle 25
done

mkdir -p docs/images
.venv/bin/python - "$tmp" <<'PY'
import sys
from PIL import Image

tmp = sys.argv[1]
boxes = {
    ("sid", "5.2"): {
        "bone-panel": (1580, 230, 1920, 1060),
        "sidebar": (1296, 84, 1545, 985),
        "overlay": (0, 84, 1290, 985),
    },
    ("trixie", "4.3"): {
        "bone-panel": (1590, 350, 1920, 1060),
        "sidebar": (1309, 84, 1555, 985),
        "overlay": (0, 84, 1300, 985),
    },
}


def save(image, path):
    image.convert("RGB").quantize(colors=160, method=Image.Quantize.MEDIANCUT).save(
        path, optimize=True
    )


for (suite, version), crops in boxes.items():
    full = Image.open(f"{tmp}/{suite}.png")
    for name, box in crops.items():
        image = full.crop(box)
        if name == "overlay":
            image = image.resize((900, round(900 * image.height / image.width)), Image.LANCZOS)
        save(image, f"docs/images/{name}-{version}.png")
    if suite == "sid":
        save(full.resize((1200, 675), Image.Resampling.LANCZOS), "docs/images/overview-5.2.png")
PY
ls -l docs/images
