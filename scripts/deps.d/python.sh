# Sourced by scripts/install-deps.sh (repository root, `set -euo pipefail`, `apt_install` defined): the
# Python front (scripts/test.d/30-python.sh) in a venv at .venv-py — PennyLane (a release with
# the new device API), maturin, pytest — and the package itself, built from python/ with
# maturin. Safe to run twice: pip runs only when a pin is missing, the package is built only
# when it is not installed (30-python.sh reinstalls it from the working tree every run).
# pytest-mock and flaky: what PennyLane's device test suite (pl-device-test) needs; stim and
# sinter: the circuit-level decoders' tests (backline.sinter, a sinter.collect sweep);
# triton: decoders written in Triton compile ahead of time for the GPU (no GPU needed);
# pymatching: the reference beside backline-matching in the sinter sweep; pennylane-catalyst:
# qp.qjit is Catalyst's, with backline.qubit as its device (python/tests/test_catalyst.py).
PY_PACKAGES=("pennylane==0.45.1" "maturin==1.16.0" "pytest==9.0.2" "pytest-mock==3.17.0" "flaky==3.8.1"
    "stim==1.16.0" "sinter==1.16.0" "triton==3.9.0" "pymatching==2.4.0" "pennylane-catalyst==0.15.0")
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    apt_install python3-venv
fi
if [ ! -x .venv-py/bin/python ]; then
    python3 -m venv .venv-py
fi
if ! .venv-py/bin/python - <<'PY' >/dev/null 2>&1
import importlib.metadata as m
assert m.version("pennylane") == "0.45.1"
assert m.version("maturin") == "1.16.0"
assert m.version("pytest") == "9.0.2"
assert m.version("pytest-mock") == "3.17.0"
assert m.version("flaky") == "3.8.1"
assert m.version("stim") == "1.16.0"
assert m.version("sinter") == "1.16.0"
assert m.version("triton") == "3.9.0"
assert m.version("pymatching") == "2.4.0"
assert m.version("pennylane-catalyst") == "0.15.0"
PY
then
    echo "install-deps: pip (.venv-py): ${PY_PACKAGES[*]}"
    .venv-py/bin/pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
fi
if ! .venv-py/bin/python -c "import backline._native" >/dev/null 2>&1; then
    echo "install-deps: pip (.venv-py): ./python (maturin, release build)"
    PATH="$PWD/.venv-py/bin:$PATH" .venv-py/bin/pip install -q --disable-pip-version-check --no-build-isolation ./python
fi
