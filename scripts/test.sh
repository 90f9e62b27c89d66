#!/usr/bin/env bash
# The one command that runs every test: installs what the tests need, then runs each suite in
# scripts/test.d/ in order. Exits non-zero on the first failing suite.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

if [ "${BACKLINE_SKIP_DEPS:-0}" != 1 ]; then
    scripts/install-deps.sh
fi

for suite in scripts/test.d/*.sh; do
    t0=$(date +%s)
    echo "=== ${suite##*/} ==="
    bash "$suite"
    echo "=== ${suite##*/}: ok in $(( $(date +%s) - t0 )) s ==="
done
echo "all suites passed in $(( $(date +%s) - start )) s"
