"""The issue's done-when checks: the same program on every placement, decoding helps, the
golden IR of the GHZ program after every pass, the FPGA controller."""

from __future__ import annotations

import numpy as np
import pennylane as qml
import pytest
from conftest import ROOT, ghz_qnode, steane_placement

import backline
from backline import Controller, Coprocessor, CoprocessorFunction, Endpoint


def _all_equal_rows(s):
    return (s == s[:, :1]).all(axis=1)


def test_same_samples_over_memcpy_shm_udp_and_executor_processes(executor):
    runs = {}
    for t in ("memcpy", "shm", "udp"):
        dev = steane_placement(t, noise=0.01)
        runs[t] = ghz_qnode(dev, shots=200)()
        assert dev.last_run.rounds == 200 * 13, t
    for t in ("shm", "udp"):
        dev = steane_placement(t, remote="process", noise=0.01)
        runs[f"{t} executor"] = ghz_qnode(dev, shots=200)()
        dev.close()
        e = executor(t)
        dev = steane_placement(t, remote=True, endpoint=Endpoint(address=e.peer), noise=0.01)
        runs[f"{t} remote"] = ghz_qnode(dev, shots=200)()
    first = runs["memcpy"]
    for k, v in runs.items():
        np.testing.assert_array_equal(v, first, err_msg=k)
    # The noise did flip some shots, so the comparison covered decoded rounds too.
    assert len({tuple(r) for r in first}) >= 2


def test_the_pre_compiled_c_function_gives_the_same_samples(steane_lib):
    a = ghz_qnode(steane_placement(noise=0.01), shots=300)()
    fn = CoprocessorFunction(name="steane_decode", lib_path=steane_lib)
    b = ghz_qnode(steane_placement(fn=fn, noise=0.01), shots=300)()
    np.testing.assert_array_equal(a, b)


def test_noiseless_ghz_gives_only_000_and_111():
    s = ghz_qnode(steane_placement(seed=None), shots=500)()
    assert s.shape == (500, 3)
    assert _all_equal_rows(s).all()
    ones = int(s[:, 0].sum())
    assert 175 < ones < 325, ones


def test_different_seeds_give_different_samples():
    a = ghz_qnode(steane_placement(seed=1), shots=64)()
    b = ghz_qnode(steane_placement(seed=2), shots=64)()
    assert (a != b).any()


def test_decoding_helps_at_p_1e_3_over_10000_shots(capsys):
    shots = 10_000
    rates = {}
    for label, pipeline in (("with decoding", None), ("without decoding", backline.NO_DECODE)):
        dev = steane_placement(noise=1e-3, seed=7, pipeline=pipeline)
        s = ghz_qnode(dev, shots=shots)()
        rates[label] = 1.0 - _all_equal_rows(s).mean()
        rounds = dev.last_run.rounds
        assert rounds == (13 * shots if pipeline is None else 0)
    with capsys.disabled():
        print(
            f"\nGHZ-3, Steane code, depolarizing p = 1e-3 after every gate, {shots} shots: logical error "
            f"rate {rates['with decoding']:.4f} with decoding, {rates['without decoding']:.4f} without"
        )
    assert rates["with decoding"] < rates["without decoding"]
    # A single fault per block is corrected, so the rate falls by far more than noise would explain.
    assert rates["with decoding"] < rates["without decoding"] / 4


def test_the_front_end_builds_the_golden_ghz_module_and_passes():
    """The GHZ QNode, through the Python front end, gives the module of the Rust golden files
    before the first pass and after every pass (noise p = 0.001, as they were made)."""
    dev = steane_placement(noise=0.001)

    @qml.set_shots(10)
    @qml.qnode(dev)
    def ghz():
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        qml.CNOT([1, 2])
        return qml.sample(wires=[0, 1, 2])

    dumps = backline.ir_dumps(ghz)
    golden = sorted((ROOT / "host/compiler/tests/golden/ghz").glob("*.ir"))
    assert len(golden) == 7 == len(dumps)
    for (stage, text), path in zip(dumps, golden):
        want = path.stem.split("-", 1)[1]
        assert stage == ("input" if want == "input" else want)
        assert text == path.read_text(), f"{stage} differs from {path.name}"


def test_print_after_all_prints_every_pass(capfd):
    dev = steane_placement(print_after_all=True)
    ghz_qnode(dev, shots=2)()
    err = capfd.readouterr().err
    for p in ("before the first pass", "after logical-to-blocks", "after inject-noise", "after steane-encode",
              "after lower-to-gates", "after insert-sessions", "after lower-decode"):
        assert p in err
    assert "transport.stage_payload s0" in err


needs_board = pytest.mark.skipif(not backline._native.HAS_FPGA, reason="built without the fpga feature")


def _fpga(fn=None, remote=False, endpoint=None, bridge=None, **kw):
    init = {"bridge": bridge} if bridge else {}
    return backline.Backline(controller=Controller(hardware="fpga", wires=3, init_args=init),
                             coprocessors=[Coprocessor(coprocessor_fn=fn, remote=remote, endpoint=endpoint)],
                             transport="rdma", qec_code="steane", noise=0.01, seed=1234, **kw)


def _board_or_skip(run):
    try:
        return run()
    except backline.PlacementError as e:
        if "built without Verilator" in str(e) or "no simulator" in str(e):
            pytest.skip(f"no simulated board: {e}")
        raise


@needs_board
def test_fpga_controller_through_the_simulated_board_gives_the_same_samples():
    fn = CoprocessorFunction.builtin("steane")
    dev = _fpga(fn)
    s = _board_or_skip(lambda: ghz_qnode(dev, shots=100)())
    host = ghz_qnode(steane_placement(noise=0.01), shots=100)()
    np.testing.assert_array_equal(s, host)
    lat = dev.last_run.latency()
    assert lat["count"] == 100 * 13 - 1 and lat["median_ns"] > 0
    # RTT = engine + fabric (two legs of the default fabric model's 1,012 ns) + measured service.
    assert lat["min_ns"] > 2 * 1012


@pytest.mark.parametrize("transport", ["udp", "shm"])
def test_two_controllers_share_one_executor_at_once(executor, transport):
    """Two devices (two controllers) run at the same time against one executor process, each
    in its own session; both get the samples a lone controller gets."""
    import threading

    e = executor(transport)
    alone = ghz_qnode(steane_placement("memcpy", noise=0.01), shots=300)()
    results, errors = {}, []

    def run(tag):
        try:
            dev = steane_placement(transport, remote=True, endpoint=Endpoint(address=e.peer), noise=0.01)
            results[tag] = ghz_qnode(dev, shots=300)()
        except Exception as x:  # noqa: BLE001 — reported below
            errors.append(x)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for tag in (0, 1):
        np.testing.assert_array_equal(results[tag], alone, err_msg=str(tag))


@needs_board
@pytest.mark.parametrize("transport", ["udp", "shm"])
def test_demo_4_against_a_real_serve_with_the_c_steane_function(executor, steane_lib, transport):
    """Demo 4's placement: the board's ERNIC bridged to a `backline serve` executor running
    the pre-compiled C Steane decoder for decoder ids 0 and 1."""
    spec = f"{steane_lib}:steane_decode"
    e = executor(transport, "--fn", f"0={spec}", "--fn", f"1={spec}")
    dev = _fpga(remote=True, endpoint=Endpoint(address=e.peer), bridge=transport)
    s = _board_or_skip(lambda: ghz_qnode(dev, shots=150)())
    fn = CoprocessorFunction(name="steane_decode", lib_path=steane_lib)
    host = ghz_qnode(steane_placement(fn=fn, noise=0.01), shots=150)()
    np.testing.assert_array_equal(s, host)
    assert len({tuple(r) for r in host}) >= 2
    assert dev.last_run.rounds == 150 * 13


@needs_board
def test_bposd_through_the_fpga_controller_gives_the_same_samples_as_memcpy():
    """Demo 2's program (BP-OSD from css_bp_decoder, decoder id Z_CHECKS) with the FPGA
    controller: the decoder runs in an executor process behind the board's bridge."""
    import sys

    sys.path.insert(0, str(ROOT / "examples"))
    import memory13

    def run(hardware):
        class A:
            iters, seed, transport, print_after_all = 10, 77, "memcpy", False

        dev = memory13.placement(A, hardware)

        @qml.set_shots(120)
        @qml.qnode(dev)
        def memory():
            syndrome = memory13.prepare_and_measure_z_checks(0.05)
            correction = backline.decode(syndrome, decoder_id=backline.Z_CHECKS)
            for q in range(memory13.N):
                qml.cond(correction[q], qml.PauliX)(wires=q)
            return qml.sample(wires=range(memory13.N))

        return memory(), dev

    host, _ = run("cpu")
    board, dev = _board_or_skip(lambda: run("fpga"))
    np.testing.assert_array_equal(board, host)
    assert dev.last_run.rounds == 120
    # The decoder did correct: every corrected shot has a zero Z syndrome.
    assert not ((np.asarray(board).astype(int) @ memory13.HZ.T) % 2).any()
