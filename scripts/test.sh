#!/usr/bin/env bash
# The one command that runs every test: installs what the tests need, then runs each suite in
# scripts/test.d/ in order. Exits non-zero on the first failing suite.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

# Free disk and the target folder's size, after each step and on a failure: what a run that
# fills the disk needs to tell where the space went.
disk() {
    df -Pk . | awk 'NR == 2 { printf "%.1f GiB free", $4 / 1048576 }'
    du -sk target 2>/dev/null | awk '{ printf ", target %.1f GiB", $1 / 1048576 }'
}
trap 'echo "test.sh: failed ($(disk))" >&2' ERR

if [ "${BACKLINE_SKIP_DEPS:-0}" != 1 ]; then
    scripts/install-deps.sh
    echo "=== install-deps.sh: ok in $(( $(date +%s) - start )) s ($(disk)) ==="
fi

for suite in scripts/test.d/*.sh; do
    t0=$(date +%s)
    echo "=== ${suite##*/} ==="
    bash "$suite"
    echo "=== ${suite##*/}: ok in $(( $(date +%s) - t0 )) s ($(disk)) ==="
done
echo "all suites passed in $(( $(date +%s) - start )) s"
