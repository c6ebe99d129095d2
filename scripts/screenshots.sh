#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# make screenshots: the UI pictures in docs/images/, taken in Debian's real Blender 5.2 and
# 4.3 (root; see scripts/check_blender.sh) on the demo rig of scripts/screenshot_setup.py.
#
#   bash scripts/screenshots.sh dist/reach_ik-<version>.zip
#
# Writes, per version V: docs/images/sidebar-V.png (3D View sidebar, "Reach IK" tab) and
# docs/images/bone-panel-V.png (Bone properties, "Reach IK" panel), plus a scaled-down view
# of the whole window for 5.2 (docs/images/overview-5.2.png). The crop boxes match the
# window layout the setup script makes at 1600x1150.
set -euo pipefail

ZIP=${1:?usage: screenshots.sh dist/reach_ik-<version>.zip}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RB=${REAL_BLENDER:-$ROOT/../shared/tools/real-blender}
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for suite in sid trixie; do
    "$RB/screenshot" --suite "$suite" --out "$tmp/$suite.png" --addon "$ZIP" \
        --setup scripts/screenshot_setup.py --tab "Reach IK" --properties bone \
        --size 1600x1150
done

mkdir -p docs/images
.venv/bin/python - "$tmp" <<'EOF'
import sys
from PIL import Image

tmp = sys.argv[1]
boxes = {
    ("sid", "5.2"): {"bone-panel": (0, 560, 522, 905), "sidebar": (1028, 84, 1284, 780)},
    ("trixie", "4.3"): {"bone-panel": (0, 560, 790, 905), "sidebar": (1036, 84, 1292, 780)},
}


def save(image, path):
    image.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(
        path, optimize=True
    )


for (suite, version), crops in boxes.items():
    full = Image.open(f"{tmp}/{suite}.png")
    for name, box in crops.items():
        save(full.crop(box), f"docs/images/{name}-{version}.png")
    if suite == "sid":
        save(full.resize((1000, 719), Image.Resampling.LANCZOS), "docs/images/overview-5.2.png")
EOF
ls -l docs/images
