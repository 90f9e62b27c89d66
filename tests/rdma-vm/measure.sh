#!/bin/bash
# A measurement guest script, not part of the test suite:
#   BACKLINE_VM_GUEST=tests/rdma-vm/measure.sh BACKLINE_VM_ROUNDS=20000 tests/rdma-vm/run.sh
# Alternates ib_write_lat with backline bench over rdma in several placements and wait
# policies ($ROUNDS rounds each, five times) and prints one line of medians per run; with
# BACKLINE_VM_OTHER=PATH it also runs another backline binary for an A/B comparison. The
# numbers behind the choices of the VM test are in docs/rdma.md. (run.sh's verdict at the end
# does not apply to this script.)
set -uo pipefail
cd "$REPO" || exit 1
ROUNDS=${ROUNDS:-20000}
OTHER=${OTHER:-}
. tests/rdma-vm/rxe.sh
setup_rxe || exit 1
say() { echo "$*" | tee -a "$OUT/measure.txt"; }
lat() {
    write_lat /run/lat.txt "$ROUNDS" >/dev/null 2>&1
    say "$(awk 'NF == 9 && $1 ~ /^[0-9]+$/ { printf "%-24s RTT median %.2f (t_typical %s x 2)", "ib_write_lat", 2 * $5, $5 }' /run/lat.txt)"
}
run() { # label, serve flags (one word list), bench flags...
    local label=$1 sflags=$2
    shift 2
    # shellcheck disable=SC2086
    serve $sflags || { say "$label: serve failed"; return; }
    "$BIN" bench --transport rdma --device "$DEV" --gid-index "$GID" --peer "$ADDR:7878" \
        --rounds "$ROUNDS" --no-plots --quiet --json --out-dir /run/m "$@" >/run/m.json 2>/run/m.err
    local rc=$?
    stop_serve
    if [ $rc = 0 ]; then
        say "$(python3 -c 'import json, sys
j = json.load(open(sys.argv[2]))
print("%-24s RTT median %.2f  floor %.2f" % (sys.argv[1], j["median_ns"] / 1e3, j["baseline"]["median_ns"] / 1e3))' "$label" /run/m.json)"
    else
        say "$label: bench failed: $(tail -1 /run/m.err)"
    fi
}
say "$(python3 -c '
import time
n = 200
t0 = time.perf_counter()
for _ in range(n):
    time.sleep(50e-6)
print("a 50 us sleep takes %.0f us here" % ((time.perf_counter() - t0) / n * 1e6))')"
say "clock source: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
for rep in 1 2 3 4 5; do
    lat
    run "pinned, spin 200 us" "--pin 1" --pin 0,1
    run "pinned, never block" "--pin 1 --spin-us -1" --pin 0,1 --spin-us -1
    run "unpinned, never block" "--spin-us -1" --spin-us -1
    if [ -n "$OTHER" ]; then
        BIN_SAVED=$BIN BIN=$OTHER
        run "other, pinned, never" "--pin 1 --spin-us -1" --pin 0,1 --spin-us -1
        BIN=$BIN_SAVED
    fi
done
lat
status "done at $(elapsed) s"
