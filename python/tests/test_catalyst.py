"""backline.qubit as a Catalyst device: ``qp.qjit`` is ``catalyst.qjit`` (pennylane-catalyst
0.15.0), its compiled program driving the placement gate by gate through the device library
of ``Backline.get_c_interface()`` (python/native/cpp/catalyst_device.cpp, src/catalyst.rs)."""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pennylane as qml
import pytest
from conftest import steane_placement
from test_paper import _ghz  # listing 3's program: GHZ parity, mid-circuit measurements sampled

import backline
import backline.qp as qp
from backline import CoprocessorFunction, Endpoint, _native

catalyst = pytest.importorskip("catalyst", reason="pennylane-catalyst is not installed")


def _rounds(dev) -> int:
    """Rounds the placement's in-process coprocessor has served."""
    return dev.runtime().servers[0].stats()[1]


#: Decodes of one GHZ-3 shot with the Steane code: a correction cycle (2 decodes) per block a
#: gate touches (H: 1 block, CNOT: 2, CNOT: 2), one decode per block measured (3).
GHZ_ROUNDS_PER_SHOT = 2 * (1 + 2 + 2) + 3


@pytest.mark.parametrize("transport", ["memcpy", "shm", "udp"])
def test_qjit_is_catalysts_and_gives_the_samples_of_the_qnode(transport):
    plain_dev = steane_placement(transport, noise=0.01, seed=11)
    jit_dev = steane_placement(transport, noise=0.01, seed=11)
    plain = _ghz(plain_dev, shots=100)
    jitted = qp.qjit(capture=True)(_ghz(jit_dev, shots=100))
    assert isinstance(jitted, backline._qjit.CatalystQNode)
    rows = set()
    for call in range(3):
        a, b = np.asarray(plain()), np.asarray(jitted())
        assert b.shape == (100, 3)
        np.testing.assert_array_equal(a, b, err_msg=f"call {call}")
        rows |= {tuple(r) for r in b}
    assert jitted.backend == "catalyst" and isinstance(jitted.compiled, catalyst.QJIT)
    # Compiled once: Catalyst's program, not backline's compiler, ran the later calls.
    assert jit_dev.compiled_programs == 0 and plain_dev.compiled_programs == 3
    # The noise made some shots disagree before decoding; the samples covered both outcomes.
    assert {(0, 0, 0), (1, 1, 1)} <= rows


def test_the_coprocessor_serves_the_rounds_the_program_implies():
    dev = steane_placement("shm", seed=3)
    jitted = qp.qjit(capture=True)(_ghz(dev, shots=40))
    before = _rounds(dev)
    jitted()
    jitted()
    assert _rounds(dev) - before == 2 * 40 * GHZ_ROUNDS_PER_SHOT
    assert jitted.rounds == 2 * 40 * GHZ_ROUNDS_PER_SHOT
    # The same count as the non-compiled path's run of the same program.
    other = steane_placement("shm", seed=3)
    _ghz(other, shots=40)()
    assert other.last_run.rounds == 40 * GHZ_ROUNDS_PER_SHOT


def test_under_noise_decoding_lowers_the_logical_error_rate():
    shots = 10_000
    rates = {}
    for name, pipeline in (("decoded", None), ("not decoded", backline.NO_DECODE)):
        dev = steane_placement("memcpy", noise=0.002, seed=21, pipeline=pipeline)
        s = np.asarray(qp.qjit(capture=True)(_ghz(dev, shots=shots))())
        rates[name] = float(np.mean(~(s == s[:, :1]).all(axis=1)))
    print(f"GHZ-3 under catalyst.qjit, Steane code, depolarizing p = 0.002 after every gate, {shots} "
          f"shots: logical error rate {rates['decoded']:.4f} with decoding, {rates['not decoded']:.4f} without")
    assert rates["not decoded"] > 0.005
    assert rates["decoded"] < rates["not decoded"] / 3


def test_pennylane_noise_channels_in_the_circuit_act_on_the_blocks_as_without_qjit():
    def noisy(dev):
        @qp.set_shots(400)
        @qp.qnode(dev, mcm_method="one-shot")
        def c():
            qp.Hadamard(0)
            qp.BitFlip(0.05, 0)
            qp.CNOT([0, 1])
            qp.DepolarizingChannel(0.05, 1)
            qp.PhaseFlip(0.05, 2)
            qp.CNOT([1, 2])
            return qp.sample([qp.measure(0), qp.measure(1), qp.measure(2)])

        return c

    bad = {}
    for name, pipeline in (("decoded", None), ("not decoded", backline.NO_DECODE)):
        a = np.asarray(noisy(steane_placement("memcpy", seed=13, pipeline=pipeline))())
        b = np.asarray(qp.qjit(capture=True)(noisy(steane_placement("memcpy", seed=13, pipeline=pipeline)))())
        np.testing.assert_array_equal(a, b, err_msg=name)
        bad[name] = int((~(b == b[:, :1]).all(axis=1)).sum())
    # The channels flipped qubits of the blocks; the correction cycles undid them.
    assert bad["not decoded"] > 10 and bad["decoded"] < bad["not decoded"] / 3, bad


def test_a_plain_placement_without_a_code_runs_counts_and_probabilities():
    dev = qp.Backline(wires=2, seed=4)

    @qp.qjit
    @qp.set_shots(2000)
    @qp.qnode(dev)
    def bell():
        qp.Hadamard(0)
        qp.CNOT([0, 1])
        qp.S(1)
        qp.adjoint(qp.S(1))
        return qp.counts(wires=[0, 1]), qp.probs(wires=[0, 1]), qp.sample(wires=[0, 1])

    counts, probs, samples = bell()
    samples = np.asarray(samples)
    assert samples.shape == (2000, 2) and (samples[:, 0] == samples[:, 1]).all()
    states, n = np.asarray(counts[0]), np.asarray(counts[1])
    assert n.sum() == 2000 and n[1] == 0 and n[2] == 0 and 850 < n[0] < 1150
    np.testing.assert_allclose(np.asarray(probs), n / 2000)


def test_mid_circuit_conditions_run_in_the_compiled_program():
    dev = steane_placement("memcpy", seed=8)

    @qp.qjit(capture=True)
    @qp.set_shots(50)
    @qp.qnode(dev, mcm_method="one-shot")
    def teleport_bit():
        qp.Hadamard(0)
        m = qp.measure(0)
        qp.cond(m, qp.PauliX)(1)
        return qp.sample([m, qp.measure(1)])

    s = np.asarray(teleport_bit())
    assert (s[:, 0] == s[:, 1]).all() and 0 < s[:, 0].sum() < 50


def test_a_block_measured_mid_circuit_and_used_again_is_re_encoded_with_its_value():
    dev = steane_placement("memcpy", seed=6)

    @qp.qjit(capture=True)
    @qp.set_shots(40)
    @qp.qnode(dev, mcm_method="one-shot")
    def again():
        qp.Hadamard(0)
        m = qp.measure(0)
        qp.PauliX(0)
        qp.CNOT([0, 1])
        return qp.sample([m, qp.measure(0), qp.measure(1)])

    s = np.asarray(again())
    assert (s[:, 1] == 1 - s[:, 0]).all() and (s[:, 2] == s[:, 1]).all() and 0 < s[:, 0].sum() < 40


# ---------------------------------------------------------------- bad input


def test_a_placement_that_cannot_connect_is_an_exception_within_the_setup_timeout():
    dev = steane_placement("udp", remote=True, endpoint=Endpoint(address="127.0.0.1:9", setup_timeout=1.0,
                                                                 reply_timeout=0.5))
    jitted = qp.qjit(capture=True)(_ghz(dev, shots=2))
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"connecting to coprocessor 0 \(udp at 127\.0\.0\.1:9\)"):
        jitted()
    assert time.monotonic() - t0 < 30, "compile plus one set-up timeout"


def test_a_coprocessor_that_dies_mid_run_is_an_exception_naming_it_and_the_interpreter_lives():
    dev = steane_placement("udp", remote="process", endpoint=Endpoint(reply_timeout=0.5, setup_timeout=2.0))
    jitted = qp.qjit(capture=True)(_ghz(dev, shots=5))
    assert np.asarray(jitted()).shape == (5, 3)
    executor = dev.runtime().executors[0]
    long_run = qp.qjit(capture=True)(_ghz(dev, shots=200_000))
    threading.Timer(1.0, executor.proc.kill).start()
    with pytest.raises(RuntimeError, match=r"coprocessor 0 \(udp at 127\.0\.0\.1:\d+\)"):
        long_run()
    # The interpreter lives and says so again on the next call.
    with pytest.raises(RuntimeError, match="coprocessor 0"):
        jitted()


@pytest.mark.parametrize(("gate", "says"), [
    (lambda: qp.T(0), "T is not a gate backline.qubit runs"),
    (lambda: qp.RX(0.3, 0), r"RX\(0\.3\) is not a Clifford gate"),
])
def test_a_gate_the_device_does_not_run_is_refused_with_its_name(gate, says):
    dev = steane_placement("memcpy")

    @qp.qjit(capture=True)
    @qp.set_shots(1)
    @qp.qnode(dev, mcm_method="one-shot")
    def one_gate():
        gate()
        return qp.sample([qp.measure(0)])

    with pytest.raises(RuntimeError, match=says):
        one_gate()


def test_observables_under_catalyst_are_refused_naming_what_works():
    dev = qp.Backline(wires=1, seed=1)

    @qp.qjit(capture=True)
    @qp.set_shots(10)
    @qp.qnode(dev)
    def z():
        qp.Hadamard(0)
        return qp.expval(qp.Z(0))

    with pytest.raises(RuntimeError, match="observables are not supported under catalyst.qjit: use qml.sample"):
        z()


def test_more_logical_qubits_than_the_vm_allows_is_refused(monkeypatch):
    monkeypatch.setenv("BACKLINE_PROGRAM_LIMITS", "qubits=16")
    dev = qp.Backline(wires=3, coprocessors=[qp.Coprocessor(coprocessor_fn=CoprocessorFunction.builtin("steane"))],
                      qec_code="steane")
    with pytest.raises(RuntimeError, match=r"3 wires \(Steane blocks of 8 qubits\).*qubits"):
        qp.qjit(capture=True)(_ghz(dev, shots=1))()


@pytest.mark.parametrize("method", ["single-branch-statistics", "deferred", "tree-traversal"])
def test_mcm_methods_the_device_cannot_serve_are_exceptions(method):
    dev = steane_placement("memcpy")

    @qp.set_shots(4)
    @qp.qnode(dev, mcm_method=method)
    def c():
        qp.Hadamard(0)
        m = qp.measure(0)
        qp.cond(m, qp.PauliX)(1)
        return qp.sample(wires=[0, 1])

    expected = {"deferred": (ValueError, "'deferred' is not supported with Catalyst")}.get(
        method, (RuntimeError, r"4 shots of a run that measured mid-circuit: .*mcm_method=\"one-shot\""))
    with pytest.raises(expected[0], match=expected[1]):
        qp.qjit(c)()


def test_another_catalyst_release_is_refused_with_both_versions_named(monkeypatch):
    monkeypatch.setattr(catalyst, "__version__", "0.14.0")
    with pytest.raises(backline.QjitError, match=r"0\.14\.0 is installed.*built for 0\.15\.0"):
        qp.qjit(_ghz(steane_placement()))


def test_what_catalyst_cannot_host_runs_on_backlines_compiler_with_a_warning():
    dev = steane_placement("memcpy", seed=2)

    @qp.set_shots(20)
    @qp.qnode(dev, mcm_method="one-shot")
    def explicit():
        m = [qp.measure(w) for w in range(3)]
        r = qp.backline.decode(m, decoder_id=1)
        return qp.sample(m)

    jitted = qp.qjit(capture=True)(explicit)
    with pytest.warns(backline.QjitFallbackWarning, match="explicit operators"):
        out = np.asarray(jitted())
    assert out.shape == (20, 3) and jitted.fallback_reason is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jitted()  # warned once
    assert qp.compile_once(_ghz(steane_placement())).backend == "backline"


def test_the_environment_can_make_backlines_compiler_the_default(monkeypatch):
    monkeypatch.setenv("BACKLINE_QJIT_BACKEND", "backline")
    assert qp.qjit(_ghz(steane_placement())).backend == "backline"
    assert qp.qjit(_ghz(steane_placement()), backend="catalyst").backend == "catalyst"
    monkeypatch.setenv("BACKLINE_QJIT_BACKEND", "mlir")
    with pytest.raises(backline.QjitError, match="BACKLINE_QJIT_BACKEND='mlir'"):
        qp.qjit(_ghz(steane_placement()))


@pytest.mark.parametrize(("listing", "fabric"), [
    ("demo1_ghz_memcpy.py", "memcpy"), ("demo3_ghz_remote.py", "shm"), ("demo3_ghz_remote.py", "udp")])
def test_the_papers_ghz_listings_as_printed_run_under_catalyst_and_give_demo_1s_samples(listing, fabric):
    """examples/paper/demo1_ghz_memcpy.py (the controller and a CPU coprocessor in this
    process), and demo3_ghz_remote.py: a remote controller (under Catalyst the compiled program
    is the controller, in this process) and a remote GPU coprocessor (emulated) in an executor,
    over shm and udp. test_paper.py runs them where Catalyst is not installed."""
    import os
    import re
    import subprocess
    import sys

    from test_paper import PAPER, TESTBED, _example_samples

    # As test_paper's runs, with a fallback to backline's compiler an error.
    code = ("import numpy, runpy, sys, warnings, backline; warnings.simplefilter('error', backline.QjitFallbackWarning); "
            f"sys.path.insert(0, {str(PAPER)!r}); runpy.run_path({str(PAPER / listing)!r}, run_name='__main__')")
    env = {**os.environ, **TESTBED, "BACKLINE_PAPER_TRANSPORT": fabric}
    env.pop("BACKLINE_QJIT_BACKEND", None)
    if listing == "demo3_ghz_remote.py":
        # The coprocessor's endpoint: an shm name, or any udp port here.
        env["BACKLINE_PAPER_ENDPOINT"] = f"demo3-{os.getpid()}" if fabric == "shm" else "127.0.0.1:0"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=PAPER, env=env)
    assert p.returncode == 0, p.stderr
    ours = np.array([[int(x) for x in r.split()] for r in re.findall(r"\[([01 ]+)\]", p.stdout)])
    today = _example_samples("01_ghz_memcpy.py", "--shots", "10", "--seed", TESTBED["BACKLINE_PAPER_SEED"])
    assert ours.shape == (10, 3)
    np.testing.assert_array_equal(ours, today)


# ---------------------------------------------------------------- issue 39, cases 9 and 10


def _limited(code: str, env=None) -> "subprocess.CompletedProcess":
    """``code`` in a fresh interpreter (this venv's) under a 4 GB address space."""
    import os
    import resource
    import subprocess
    import sys
    import textwrap

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, preexec_fn=limit, cwd="/tmp", env={**os.environ, **(env or {})})


@pytest.mark.parametrize("shots, env", [(10**9 + 1, None), (2**40, None), (3, {"BACKLINE_PROGRAM_LIMITS": "shots=2"})])
def test_program_limits_hold_under_qjit_as_without_it(shots, env):
    # Under qjit set_shots(10**9 + 1) or 2**40 was killed by SIGSEGV, and with
    # BACKLINE_PROGRAM_LIMITS=shots=2 three shots ran; without qjit each is a ValueError
    # naming the limit.
    r = _limited(f"""
        import backline.qp as qp
        dev = qp.Backline(wires=1)

        @qp.set_shots({shots})
        @qp.qnode(dev)
        def c():
            qp.Hadamard(0)
            return qp.sample(wires=[0])

        for name, f in (("plain", c), ("qjit", qp.qjit(capture=True)(c))):
            try:
                f()
                print(name, "ran")
            except ValueError as e:
                print(name, "refused:", e)
        print("alive")
    """, env)
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert r.stdout.rstrip().endswith("alive"), r.stdout
    for name in ("plain", "qjit"):
        assert f"{name} refused: shots={shots:,} is more than the program limit shots=" in r.stdout, r.stdout


def test_a_tampered_backline_kwarg_is_quoted_as_an_excerpt(monkeypatch):
    # A 10 MB `backline` entry in the device kwargs was quoted whole (10,000,066 characters).
    dev = qp.Backline(wires=1)

    @qp.set_shots(2)
    @qp.qnode(dev)
    def c():
        qp.Hadamard(0)
        return qp.sample(wires=[0])

    monkeypatch.setattr(type(dev), "catalyst_settings", lambda self: "z" * 10_000_000)
    with pytest.raises(backline.errors.PlacementError, match="is not hex text") as e:
        qp.qjit(capture=True)(c)()
    assert len(str(e.value)) < 300, len(str(e.value))
    assert "z" * 80 + "…" in str(e.value)
