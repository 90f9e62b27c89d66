#!/usr/bin/env bash
# Fuzzes every target of tests/fuzz with AFL++ (cargo afl, stable Rust) for SECONDS each
# (default 30), or only the TARGETs named; fails if any input crashed or hung a target.
#   scripts/fuzz.sh            # 30 s per target
#   scripts/fuzz.sh 3600 c-abi # an hour on the C ABI
# Findings land in target/afl-runs/TARGET/default/{crashes,hangs}/; replay one with
#   target/afl/release/backline-fuzz TARGET < FILE
# and keep it as a regression test by copying it into tests/fuzz/corpus/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
if ! command -v cargo-afl >/dev/null; then
    echo "fuzz: cargo-afl is missing: scripts/install-deps.sh installs it" >&2
    exit 1
fi
# Instrumented builds go to their own target directory, so they never invalidate the
# ordinary build.
export CARGO_TARGET_DIR="$PWD/target/afl"
echo "fuzz: building the instrumented harness"
cargo afl build --release --locked -q -p backline-fuzz --features afl --bin backline-fuzz
bin="$CARGO_TARGET_DIR/release/backline-fuzz"
mapfile -t targets < <(if [ $# -gt 0 ]; then printf '%s\n' "$@"; else "$bin" --list; fi)
runs="$PWD/target/afl-runs"
mkdir -p "$runs"
# AFL's own checks of the machine (CPU governor, core dumps to a helper, a free core) are for
# long campaigns on a dedicated machine; CI runs on two shared cores.
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_SKIP_CRASHES=1
failed=()
for t in "${targets[@]}"; do
    corpus="tests/fuzz/corpus/$t"
    [ -d "$corpus" ] || { echo "fuzz: no corpus $corpus" >&2; exit 1; }
    rm -rf "${runs:?}/$t"
    # -t: an input that runs longer than 2 s is a hang (the C ABI's timeouts are ≤ 30 ms).
    if ! cargo afl fuzz -V "$secs" -t 2000 -i "$corpus" -o "$runs/$t" -- "$bin" "$t" \
        >"$runs/$t.log" 2>&1; then
        echo "fuzz: $t: afl-fuzz failed; see $runs/$t.log" >&2
        tail -20 "$runs/$t.log" >&2
        failed+=("$t")
        continue
    fi
    stats="$runs/$t/default/fuzzer_stats"
    stat() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
    crashes=$(stat saved_crashes)
    hangs=$(stat saved_hangs)
    printf 'fuzz: %-13s %10s execs (%6.0f/s)  %5s edges  corpus %4s  crashes %s  hangs %s\n' \
        "$t" "$(stat execs_done)" "$(stat execs_per_sec)" "$(stat edges_found)" \
        "$(stat corpus_count)" "$crashes" "$hangs"
    if [ "$crashes" != 0 ] || [ "$hangs" != 0 ]; then
        for f in "$runs/$t"/default/crashes/id:* "$runs/$t"/default/hangs/id:*; do
            [ -e "$f" ] && echo "fuzz: $t: $f"
        done
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (replay: $bin TARGET < FILE)" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${secs} s each, no crash and no hang"
