#!/usr/bin/env bash
# The GPU device check, for a machine with an NVIDIA (or AMD) GPU and no Rust toolchain. Build
# the binaries here first (scripts/gpu-check-build.sh puts them in target/gpu-check/), carry
# that directory to the GPU machine, then run there:
#
#     scripts/gpu-check.sh target/gpu-check [OUT_DIR]
#
# It prints the device, runs the kernel tests on the device (tests/device.rs: BP+OSD against
# the CPU decoder, user kernels, the ring protocol), then `backline bench` with gpu:echo and
# gpu:steane (1,000,000 rounds) and gpu:bposd:hgp13:max_iter=10 and gpu:bposd:bb144 (100,000
# rounds), each against the same-run kernel floor, one JSON line per run in
# OUT_DIR/gpu-check.jsonl (and on stdout), and a user kernel that never returns (the run must
# end with a timeout, not hang). Exit status: 0 when everything passed.
set -uo pipefail
BIN=${1:?usage: scripts/gpu-check.sh DIR_WITH_BINARIES [OUT_DIR]}
OUT=${2:-${OUT:-gpu-check-out}}
mkdir -p "$OUT"
BACKLINE="$BIN/backline"
[ -x "$BACKLINE" ] || { echo "gpu-check: $BACKLINE missing (run scripts/gpu-check-build.sh)" >&2; exit 2; }
status=0
JSONL="$OUT/gpu-check.jsonl"
: > "$JSONL"

echo "== device"
(nvidia-smi -L || rocm-smi --showproductname || true) 2>&1 | tee "$OUT/device.txt"

if [ -x "$BIN/device-tests" ]; then
    echo "== kernel tests on the device"
    if ! "$BIN/device-tests" --test-threads 1 --nocapture > "$OUT/device-tests.txt" 2>&1; then
        status=1
    fi
    grep -E "device tests on|test result|differ|panicked|skipped" "$OUT/device-tests.txt"
fi

run() {
    local label=$1; shift
    echo "== bench $label"
    if "$BACKLINE" bench --json --no-plots --out-dir "$OUT" --quiet "$@" > "$OUT/$label.json" 2> "$OUT/$label.err"; then
        cat "$OUT/$label.json" | tee -a "$JSONL"
    else
        status=1
        echo "{\"run\": \"$label\", \"failed\": true}" | tee -a "$JSONL"
        tail -3 "$OUT/$label.err"
    fi
}
run gpu-echo --responder gpu:echo --rounds 1000000
run gpu-steane --responder gpu:steane --rounds 1000000
run gpu-bposd-hgp13 --responder gpu:bposd:hgp13:max_iter=10 --rounds 100000
run gpu-bposd-bb144 --responder gpu:bposd:bb144 --rounds 100000

echo "== a user kernel that never returns"
cat > "$OUT/hang.cu" <<'CU'
BL_USER_FUNCTION bl_u32 hang(const bl_u8 *in, bl_u32 n, bl_u8 *out, bl_u32 cap, bl_u32 id) {
    volatile bl_u32 spin = 1;
    while (spin) {}
    return 0;
}
CU
t0=$(date +%s)
timeout 60 "$BACKLINE" bench --responder "gpu:$OUT/hang.cu:hang" --rounds 10 --timeout-ms 500 \
    --no-plots --no-baseline --out-dir "$OUT" > "$OUT/hang.txt" 2>&1
rc=$?
echo "exit $rc after $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/hang.txt")"
if [ "$rc" = 124 ] || [ "$rc" = 0 ]; then status=1; fi

echo "== summary (median ns, ratio to the kernel floor)"
python3 - "$JSONL" <<'PY' || true
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    if j.get("failed"):
        print(f"{j['run']}: FAILED"); continue
    s, b = j["stats"], j.get("baseline") or {}
    print(f"{j['responder']:34} median {s['median_ns']:9.0f} ns  p99 {s['p99_ns']:9.0f} ns  "
          f"floor {b.get('median_ns', float('nan')):7.0f} ns  ratio {j.get('ratio_median') or float('nan'):.2f}")
PY
exit $status
