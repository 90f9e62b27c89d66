#!/usr/bin/env bash
# RTL checks of the generated HWHS engine (bitstreams/rtl/hwhs.v): Verilator lint with only
# -Wno-WIDTH waived, yosys (no latches, no undriven nets), the resource estimate against the
# reference engine, and the cocotb testbench through cocotbext-axi's AXI4-Lite master.
# That the checked-in RTL is what the generator produces is a cargo test (backline-hdl).
set -euo pipefail
cd "$(dirname "$0")/../.."
RTL=bitstreams/rtl/hwhs.v
mkdir -p target

for tool in verilator yosys iverilog; do
    command -v "$tool" >/dev/null || { echo "20-rtl: $tool missing: run scripts/install-deps.sh" >&2; exit 1; }
done

echo "-- verilator lint (-Wno-WIDTH only)"
verilator --lint-only -Wno-WIDTH --top-module top "$RTL"

echo "-- yosys: no latches, no undriven nets"
yosys -q -l target/rtl-yosys-check.log -p "read_verilog $RTL; hierarchy -check -top top; proc; \
flatten; opt_clean; select -assert-none t:\$dlatch t:\$adlatch t:\$dlatchsr; check -assert"

echo "-- resource estimate (yosys synth_xilinx, trace memory excluded)"
cargo run -q --locked -p backline-hdl -- resources --check

echo "-- cocotb (${COCOTB_SIM:-icarus})"
if [ ! -x .venv/bin/cocotb-config ]; then
    echo "20-rtl: .venv with cocotb missing: run scripts/install-deps.sh" >&2
    exit 1
fi
rm -f hdl/cocotb/results.xml
PATH="$PWD/.venv/bin:$PATH" make -s -C hdl/cocotb SIM="${COCOTB_SIM:-icarus}" > target/cocotb.log 2>&1 || {
    tail -40 target/cocotb.log; exit 1; }
.venv/bin/python - <<'PY'
import sys, xml.etree.ElementTree as ET
cases = ET.parse("hdl/cocotb/results.xml").getroot().iter("testcase")
passed = failed = 0
for c in cases:
    bad = c.find("failure") is not None or c.find("error") is not None
    failed += bad
    passed += not bad
    print(f"cocotb {c.get('name')}: {'FAILED' if bad else 'ok'}")
print(f"cocotb: {passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
PY
