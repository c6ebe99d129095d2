#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The headless baker in Debian's real Blender 5.2 (sid) and 4.3 (trixie): build the demo,
# record the live pose of every bone at every frame (Reach IK loaded), bake with
#   blender -b demo.blend --python scripts/bake.py -- --out baked.blend
# record the baked file replayed WITHOUT Reach IK, and compare (effectors <= 1e-5 m,
# orientations <= 0.01 deg); the same for the file saved right after the live recording
# (played, not baked: Reach IK's stored solutions on its helpers). Also checks a bad
# argument exits 2 and the input is untouched.
# Needs root (the real-blender tool). Reach IK needs numpy, which Debian's Blender package
# does not depend on: when Blender cannot import it (check_blender.sh installs python3-numpy
# into the chroot first), a numpy wheel for its Python is fetched with pip once into
# out/check-blender/site-cpXY and put on PYTHONPATH.
# Usage: scripts/check_blender_bake.sh [suite...]     (default: sid trixie)
set -euo pipefail
cd "$(dirname "$0")/.."
RB=${REAL_BLENDER:-$(cd .. && pwd)/shared/tools/real-blender}/blender
PY=.venv/bin/python
FRAMES=${FRAMES:-48}
BASE=out/check-blender
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(sid trixie)

numpy_site() {  # numpy_site SUITE -> prints a site dir with numpy for its Python, or nothing
    local suite=$1 ver site
    ver=$("$RB" --suite "$suite" -- -b --factory-startup --python-expr \
        "import sys; print('PYVER %d%d' % sys.version_info[:2])" 2>/dev/null | sed -n 's/^PYVER //p')
    [ -n "$ver" ] || { echo "cannot run Blender ($suite)" >&2; return 1; }
    if "$RB" --suite "$suite" -- -b --factory-startup --python-exit-code 1 \
        --python-expr "import numpy" >/dev/null 2>&1; then
        return 0
    fi
    site=$BASE/site-cp$ver
    if [ ! -d "$site/numpy" ]; then
        mkdir -p "$BASE/wheels" "$site"
        "$PY" -m pip download --quiet --only-binary=:all: --no-deps --implementation cp \
            --python-version "${ver:0:1}.${ver:1}" --platform manylinux_2_28_x86_64 \
            --platform manylinux2014_x86_64 numpy -d "$BASE/wheels"
        "$PY" -m zipfile -e "$(ls "$BASE"/wheels/numpy-*-cp"$ver"-*.whl | tail -1)" "$site"
    fi
    echo "$site"
}

status=0
for suite in "${suites[@]}"; do
    site=$(numpy_site "$suite")
    dir=$BASE/bake-$suite
    rm -rf "$dir" && mkdir -p "$dir"
    env=()
    [ -z "$site" ] || env=(--env "PYTHONPATH=$PWD/$site")
    run() { "$RB" --suite "$suite" "${env[@]}" -- -b --factory-startup \
        --python-use-system-env --python-exit-code 1 "$@"; }
    echo "== $suite: build the demo ($FRAMES frames)"
    run --python scripts/build_demo.py -- --out "$dir/demo.blend" --frames "$FRAMES" >"$dir/log.txt" 2>&1
    before=$(sha256sum "$dir/demo.blend" | cut -d' ' -f1)
    echo "== $suite: record the live pose"
    run "$dir/demo.blend" --python scripts/pose_track.py -- --live --out "$dir/live.json" \
        --save-played "$dir/played.blend" >>"$dir/log.txt" 2>&1
    echo "== $suite: bake with the batch script"
    run "$dir/demo.blend" --python scripts/bake.py -- --out "$dir/baked.blend" --no-reduce 2>>"$dir/log.txt" | grep -E "^Baked|^wrote"
    echo "== $suite: a reversed range must fail with exit 2"
    set +e
    run "$dir/demo.blend" --python scripts/bake.py -- --out "$dir/never.blend" --frames 10:5 2>"$dir/bad.txt" >/dev/null
    code=$?
    set -e
    if [ "$code" != 2 ] || [ -e "$dir/never.blend" ]; then
        echo "FAILED: exit $code for a reversed range: $(cat "$dir/bad.txt")"; status=1
    else
        echo "OK: exit 2: $(grep '^bake.py' "$dir/bad.txt")"
    fi
    [ "$(sha256sum "$dir/demo.blend" | cut -d' ' -f1)" = "$before" ] \
        || { echo "FAILED: the input file changed"; status=1; }
    echo "== $suite: replay the baked file without Reach IK and compare"
    run "$dir/baked.blend" --python scripts/pose_track.py -- --out "$dir/replay.json" >>"$dir/log.txt" 2>&1
    "$PY" scripts/pose_track.py compare "$dir/live.json" "$dir/replay.json" || status=1
    echo "== $suite: replay the file saved after playing (not baked) without Reach IK and compare"
    run "$dir/played.blend" --python scripts/pose_track.py -- --out "$dir/played.json" >>"$dir/log.txt" 2>&1
    "$PY" scripts/pose_track.py compare "$dir/live.json" "$dir/played.json" || status=1
done
exit $status
