#!/usr/bin/env bash
# The soak run for a bounded time (BACKLINE_SOAK_SECONDS, default 60 s): mixed transports,
# functions and random faults; 0 lost rounds, servers' memory and descriptors flat.
set -euo pipefail
scripts/soak.sh "${BACKLINE_SOAK_SECONDS:-60}"
