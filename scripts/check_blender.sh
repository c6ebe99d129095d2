#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# make check-blender: install the built extension zip in Debian's real Blender 5.2 (sid)
# and 4.3 (trixie) and run every scripts/check_blender_*.py scenario there.
#
#   bash scripts/check_blender.sh dist/reach_ik-<version>.zip
#
# Needs root (the real-blender tool uses chroot and mount) and ~1.5 GB per version. Uses
# ../shared/tools/real-blender (or $REAL_BLENDER); a missing chroot is set up first.
# Debian's blender package does not depend on numpy, which Reach IK needs: python3-numpy
# is installed into a chroot that lacks it (apt-get inside the chroot).
# Exit status: 0 when every scenario passed in every version, 1 otherwise.
set -euo pipefail

ZIP=${1:?usage: check_blender.sh dist/reach_ik-<version>.zip}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RB=${REAL_BLENDER:-$ROOT/../shared/tools/real-blender}
BASE=${REAL_BLENDER_BASE:-/opt/real-blender}
SUITES=${CHECK_BLENDER_SUITES:-sid trixie}

cd "$ROOT"
[[ -f $ZIP ]] || { echo "check-blender: no zip at $ZIP (run make extension)" >&2; exit 1; }
[[ -x $RB/blender ]] || { echo "check-blender: real-blender tool not found at $RB" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "check-blender: needs root (chroot, mount)" >&2; exit 1; }

ensure_numpy() {
    local suite=$1 root=$BASE/$1
    if "$RB/blender" --suite "$suite" -- -b --factory-startup --python-exit-code 1 \
        --python-expr "import numpy" >/dev/null 2>&1; then
        return 0
    fi
    echo "check-blender: installing python3-numpy into $root"
    unshare --mount --propagation private bash -euc '
        root=$1
        mount -t proc proc "$root/proc"
        trap "umount \"$root/proc\"" EXIT
        chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            DEBIAN_FRONTEND=noninteractive \
            apt-get -o Acquire::Check-Valid-Until=false -q update >/dev/null 2>&1
        chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends python3-numpy >/dev/null 2>&1
        chroot "$root" apt-get clean
    ' _ "$root"
}

mapfile -t SCENARIOS < <(ls scripts/check_blender_*.py)
declare -a SUMMARY=()
status=0
for suite in $SUITES; do
    if [[ ! -f $BASE/$suite/.real-blender-complete ]]; then
        "$RB/setup" "$suite"
    fi
    ensure_numpy "$suite"
    for scenario in "${SCENARIOS[@]}"; do
        log=$(mktemp)
        echo "== $suite: $scenario"
        if "$RB/blender" --suite "$suite" -- -b --factory-startup --python-exit-code 1 \
            --python "$scenario" -- --zip "$ZIP" >"$log" 2>&1; then
            result=ok
        else
            result=FAILED
            status=1
        fi
        grep -E '^(Blender .*, Python|ok |FAIL|RESULT|  - )' "$log" || true
        if [[ $result != ok ]]; then
            echo "-- last lines of the log:"
            tail -n 30 "$log"
        fi
        rm -f "$log"
        SUMMARY+=("$suite $(basename "$scenario") $result")
    done
    echo "== $suite: scripts/check_blender_bake.sh (the batch baker, replayed without Reach IK)"
    result=ok
    REAL_BLENDER=$RB bash scripts/check_blender_bake.sh "$suite" || { result=FAILED; status=1; }
    SUMMARY+=("$suite check_blender_bake.sh $result")
done

echo
echo "check-blender summary:"
printf '  %s\n' "${SUMMARY[@]}"
exit $status
