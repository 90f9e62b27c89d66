# Sourced by scripts/install-deps.sh (repository root, `set -euo pipefail`, `apt_install` defined): the
# Python front (scripts/test.d/30-python.sh) in two venvs, and the package itself, built from
# python/ with maturin. Safe to run twice: pip runs only when a pin is missing, the package is
# built only when it is not installed (30-python.sh reinstalls it from the working tree every run).
#
# .venv-py: PennyLane (a release with the new device API), maturin, pytest; pytest-mock and
# flaky: what PennyLane's device test suite (pl-device-test) needs; stim and sinter: the
# circuit-level decoders' tests (backline.sinter, a sinter.collect sweep); triton: decoders
# written in Triton compile ahead of time for the GPU (no GPU needed); pymatching: the
# reference beside backline-matching in the sinter sweep; chromobius: the reference beside the
# Möbius decoder (python/tests/test_mobius.py, test_colour_circuits.py). The Soft-RoCE guest runs its Python
# from this venv too.
#
# .venv-catalyst: PennyLane with pennylane-catalyst 0.15.0, for python/tests/test_catalyst.py
# (qp.qjit is Catalyst's, with backline.qubit as its device). A venv of its own: with Catalyst
# installed, every `import pennylane` imports JAX (seconds on this machine, far more in the
# emulated guest), and nothing but the Catalyst tests needs it.
PY_PACKAGES=("pennylane==0.45.1" "maturin==1.16.0" "pytest==9.0.2" "pytest-mock==3.17.0" "flaky==3.8.1"
    "stim==1.16.0" "sinter==1.16.0" "triton==3.9.0" "pymatching==2.4.0"
    "chromobius==1.1.1")
CATALYST_PACKAGES=("pennylane==0.45.1" "pennylane-catalyst==0.15.0" "pytest==9.0.2")

# pip_pins VENV PIN...: installs the pins into VENV unless each is there at its version.
pip_pins() {
    local venv=$1
    shift
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
    fi
    if ! "$venv/bin/python" - "$@" <<'PY' >/dev/null 2>&1
import importlib.metadata as m, sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    assert m.version(name) == version, pin
PY
    then
        echo "install-deps: pip ($venv): $*"
        "$venv/bin/pip" install -q --disable-pip-version-check "$@"
    fi
}

if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    apt_install python3-venv
fi
pip_pins .venv-py "${PY_PACKAGES[@]}"
pip_pins .venv-catalyst "${CATALYST_PACKAGES[@]}"
if .venv-py/bin/python -c "import importlib.util as u; assert u.find_spec('catalyst') or u.find_spec('jax')" >/dev/null 2>&1; then
    # A .venv-py from before Catalyst had its own venv: PennyLane imports JAX wherever it is
    # installed.
    echo "install-deps: pip (.venv-py): uninstall pennylane-catalyst and JAX (they live in .venv-catalyst)"
    .venv-py/bin/pip uninstall -q -y pennylane-catalyst jax jaxlib xdsl-jax xdsl
fi
if ! .venv-py/bin/python -c "import backline._native" >/dev/null 2>&1; then
    echo "install-deps: pip (.venv-py): ./python (maturin, release build)"
    PATH="$PWD/.venv-py/bin:$PATH" .venv-py/bin/pip install -q --disable-pip-version-check --no-build-isolation ./python
fi
