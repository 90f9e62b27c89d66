#!/usr/bin/env bash
# RTL checks of the generated HWHS engine (bitstreams/rtl/hwhs.v) and ERNIC adapter
# (bitstreams/rtl/hwhs_ernic_adapter.v): Verilator lint with only -Wno-WIDTH waived, yosys (no
# latches, no undriven nets), the resource estimate of both against the reference engine, and
# the cocotb testbenches through cocotbext-axi: the engine alone (Icarus), and the engine with
# the adapter and the testbench acting as ERNIC (Icarus, 2,000 hw-loop rounds here: about two and
# a half minutes; the bench's own default is 10,000, about twelve; ADAPTER_ROUNDS=N for another
# count). The engine alone also runs 10,000 hw-loop rounds under Verilator, with a model of
# ERNIC, in firmware/tests/apu/sim_chain.rs. Both cocotb benches run under Icarus: cocotbext-axi's
# handshakes hang under Verilator 5.006 with cocotb 1.9.2 (hdl/README.md).
# That the checked-in RTL is what the generator produces is a cargo test (backline-hdl).
set -euo pipefail
cd "$(dirname "$0")/../.."
RTL=bitstreams/rtl/hwhs.v
ADAPTER=bitstreams/rtl/hwhs_ernic_adapter.v
mkdir -p target

for tool in verilator yosys iverilog; do
    command -v "$tool" >/dev/null || { echo "20-rtl: $tool missing: run scripts/install-deps.sh" >&2; exit 1; }
done

echo "-- verilator lint (-Wno-WIDTH only)"
verilator --lint-only -Wno-WIDTH --top-module top "$RTL"
verilator --lint-only -Wno-WIDTH --top-module hwhs_ernic_adapter "$ADAPTER"

echo "-- yosys: no latches, no undriven nets"
for pair in "$RTL:top" "$ADAPTER:hwhs_ernic_adapter"; do
    file=${pair%%:*} top=${pair##*:}
    yosys -q -l "target/rtl-yosys-check-$top.log" -p "read_verilog $file; hierarchy -check -top $top; \
proc; flatten; opt_clean; select -assert-none t:\$dlatch t:\$adlatch t:\$dlatchsr; check -assert"
done

echo "-- resource estimate (yosys synth_xilinx, trace memory excluded)"
cargo run -q --locked -p backline-hdl -- resources --check

if [ ! -x .venv/bin/cocotb-config ]; then
    echo "20-rtl: .venv with cocotb missing: run scripts/install-deps.sh" >&2
    exit 1
fi
rm -f hdl/cocotb/results*.xml
# bench sim rounds: the engine's bench ignores the rounds
run_bench() {
    local bench=$1 sim=$2 rounds=$3
    echo "-- cocotb ($bench, $sim${rounds:+, $rounds rounds})"
    PATH="$PWD/.venv/bin:$PATH" ADAPTER_ROUNDS="${rounds:-2000}" \
        COCOTB_RESULTS_FILE="results_${bench}_${sim}.xml" \
        make -s -C hdl/cocotb BENCH="$bench" SIM="$sim" > "target/cocotb-$bench-$sim.log" 2>&1 || {
        tail -40 "target/cocotb-$bench-$sim.log"; exit 1; }
    grep -h "adapter: " "target/cocotb-$bench-$sim.log" | sed 's/^.*adapter: /cocotb adapter: /' || true
}
run_bench engine "${COCOTB_SIM:-icarus}" ""
run_bench adapter icarus "${ADAPTER_ROUNDS:-2000}"
.venv/bin/python - <<'PY'
import glob, sys, xml.etree.ElementTree as ET
passed = failed = 0
for path in sorted(glob.glob("hdl/cocotb/results_*.xml")):
    run = path.split("results_")[1][:-4]
    for c in ET.parse(path).getroot().iter("testcase"):
        bad = c.find("failure") is not None or c.find("error") is not None
        failed += bad
        passed += not bad
        print(f"cocotb {run} {c.get('name')}: {'FAILED' if bad else 'ok'}")
print(f"cocotb: {passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
PY
