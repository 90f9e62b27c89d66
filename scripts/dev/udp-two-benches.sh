#!/usr/bin/env bash
# Two `backline bench` against one `backline serve --transport udp` at once, beside one bench
# alone against the same server in the same run (before and after): prints each median and
# the ratio of each concurrent median to the single bench's (issue 26: at most 2x).
#   scripts/dev/udp-two-benches.sh [ROUNDS]   (default 200000; release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-200000}
cargo build -q --release -p backline
B=target/release/backline
OUT=$(mktemp -d)
trap 'kill $SERVE 2>/dev/null || true; rm -rf "$OUT"' EXIT
coproc SRV { exec "$B" serve --transport udp --bind 127.0.0.1:0 --fn 0=steane 2>"$OUT/serve.err"; }
SERVE=$SRV_PID
read -r ready peer <&"${SRV[0]}"
[ "$ready" = ready ] || { cat "$OUT/serve.err"; exit 1; }
bench() {
    "$B" bench --transport udp --peer "$peer" --responder steane --rounds "$ROUNDS" \
        --json --no-plots --no-baseline --quiet --out-dir "$OUT" > "$1"
}
median() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['median_ns'])" "$1"; }
bench "$OUT/alone1.json"
bench "$OUT/two-a.json" & A=$!
bench "$OUT/two-b.json" & Bp=$!
wait $A $Bp
bench "$OUT/alone2.json"
python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
m = {k: json.load(open(f"{d}/{k}.json"))["median_ns"] for k in ("alone1", "two-a", "two-b", "alone2")}
alone = (m["alone1"] + m["alone2"]) / 2
print(f"one bench alone: median {m['alone1'] / 1e3:.2f} µs before, {m['alone2'] / 1e3:.2f} µs after")
for k in ("two-a", "two-b"):
    print(f"two at once, {k[-1]}: median {m[k] / 1e3:.2f} µs = {m[k] / alone:.2f}x one alone")
PY
