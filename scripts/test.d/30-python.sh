#!/usr/bin/env bash
# The Python front (python/, examples/): builds the package from the working tree (maturin
# builds backline._native in release) and installs it into .venv-py and .venv-catalyst with
# pip, lints its bindings, runs
# its tests (done-when checks, bad inputs, the front end against default.qubit, the
# examples, the Catalyst device under pennylane-catalyst 0.15.0 in .venv-catalyst) and
# PennyLane's own device test suite against backline.qubit.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="$PWD/.venv-py/bin/python"
CATALYST_PY="$PWD/.venv-catalyst/bin/python"
for venv in "$PY" "$CATALYST_PY"; do
    [ -x "$venv" ] || { echo "30-python: ${venv%/bin/python} missing: run scripts/install-deps.sh" >&2; exit 1; }
done
export PATH="$PWD/.venv-py/bin:$PATH"

echo "-- cargo clippy -p backline-py --features python (the bindings)"
cargo clippy -q --locked -p backline-py --features python --all-targets -- -D warnings

echo "-- pip wheel ./python (maturin, release), installed into .venv-py and .venv-catalyst"
t0=$(date +%s)
WHEELS=target/python-wheel
rm -rf "$WHEELS"
"$PY" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$WHEELS" ./python
for venv in "$PY" "$CATALYST_PY"; do
    "$venv" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$WHEELS"/backline-*.whl
    # The tests must import the installed package, not the source tree.
    (cd /tmp && "$venv" -c "import backline, sys; assert 'site-packages' in backline.__file__, backline.__file__")
done
echo "   built and installed in $(( $(date +%s) - t0 )) s"

# Catalyst must be in its venv (its tests skip without it, and CI must not pass by skipping
# them), and not in .venv-py, whose every `import pennylane` would import JAX.
"$CATALYST_PY" -c "import catalyst; assert catalyst.__version__ == '0.15.0', catalyst.__version__"
"$PY" -c "import importlib.util as u; assert not (u.find_spec('catalyst') or u.find_spec('jax')), 'Catalyst or JAX in .venv-py'"

echo "-- pytest python/tests"
"$PY" -m pytest -q -p no:cacheprovider python/tests --ignore=python/tests/test_catalyst.py
echo "-- pytest python/tests/test_catalyst.py (.venv-catalyst: pennylane-catalyst $("$CATALYST_PY" -c 'import catalyst; print(catalyst.__version__)'))"
"$CATALYST_PY" -m pytest -q -p no:cacheprovider python/tests/test_catalyst.py

# sinter's own decoder tests, from the installed sinter wheel (nothing of it is committed),
# against every backline decoder: the degenerate models its contract allows (empty circuits, no
# detectors, no observables, p ≥ 0.5), post-selection, error splitting, sinter.collect.
echo "-- sinter's decoder test suite against backline-bposd, backline-relay-bp, backline-matching, backline-matching-correlated, backline-mobius, backline-mobius-correlated"
(cd /tmp && SINTER_PYTEST_CUSTOM_DECODERS=backline_sinter_decoders:decoders \
    PYTHONPATH="$OLDPWD/python/tests" "$PY" -m pytest -q -p no:cacheprovider \
    --pyargs sinter._decoding._decoding_test -k backline) | tail -3

# PennyLane's device tests. 10,000 shots: the suite's stochastic tolerance is 0.05, which
# 10,000 shots meet with a wide margin (σ ≤ 0.01 for an expectation of ±1 outcomes).
echo "-- pl-device-test --device backline.qubit --shots 10000"
SKIPS=target/pl-device-test-skips.tsv
mkdir -p target
(cd /tmp && BACKLINE_PL_SKIPS="$OLDPWD/$SKIPS" PYTHONPATH="$OLDPWD/python/tests" \
    pl-device-test --device backline.qubit --shots 10000 -q -p no:cacheprovider -p backline_pl_plugin \
    -W ignore::DeprecationWarning) | tail -6
echo "   the skipped tests and why: $SKIPS"
