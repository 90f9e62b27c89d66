# Sourced by scripts/install-deps.sh (repository root, `set -euo pipefail`): the Python side of
# the RTL checks. verilator, yosys and iverilog come from the apt list of install-deps.sh;
# cocotb 1.9.x (cocotb 2 does not work with Verilator 5.006) and cocotbext-axi go into a venv
# at .venv, pinned.
RTL_PY_PACKAGES=("cocotb==1.9.2" "cocotb-bus==0.3.0" "cocotbext-axi==0.1.28")
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    apt_install python3-venv
fi
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if ! .venv/bin/python - <<'PY' >/dev/null 2>&1
import cocotb, cocotbext.axi
assert cocotb.__version__ == "1.9.2"
PY
then
    echo "install-deps: pip: ${RTL_PY_PACKAGES[*]}"
    .venv/bin/pip install -q --disable-pip-version-check "${RTL_PY_PACKAGES[@]}"
fi
