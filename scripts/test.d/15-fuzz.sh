#!/usr/bin/env bash
# Every fuzz target under AFL++ for a bounded time (BACKLINE_FUZZ_SECONDS, default 15 s each):
# fails on any crash or hang. A longer campaign: scripts/fuzz.sh SECONDS [TARGET…].
set -euo pipefail
scripts/fuzz.sh "${BACKLINE_FUZZ_SECONDS:-15}"
