#!/usr/bin/env bash
# The soak run: SECONDS (default 60) of controllers over memcpy, shm and udp with echo and
# Steane functions against one long-lived server per network transport, with random faults
# (controllers killed mid-run, servers stopped for a moment, garbage datagrams). Fails unless
# every run that was not killed answered every round and the servers' memory and file
# descriptors stayed flat. Prints a summary line per server.
#   scripts/soak.sh          # 60 s
#   scripts/soak.sh 3600     # an hour
set -euo pipefail
cd "$(dirname "$0")/.."
BACKLINE_SOAK_SECONDS="${1:-60}" cargo test --locked -q -p backline --test faults -- \
    --ignored --exact soak --nocapture 2>&1 | grep -E "^soak|test result|panicked|FAILED|error"
exit "${PIPESTATUS[0]}"
