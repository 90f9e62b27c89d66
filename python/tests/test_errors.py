"""Every bad input of the issue gets its own exception, naming the problem; a coprocessor
that dies mid-run fails the execution with a timeout instead of hanging."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pennylane as qml
import pytest
from conftest import Executor, ghz_qnode, steane_placement

import backline
from backline import (
    Backline,
    Controller,
    Coprocessor,
    CoprocessorFunction,
    Endpoint,
    decode,
    errors,
)


def test_a_non_clifford_gate_is_named():
    dev = qml.device("backline.qubit", wires=2)

    @qml.set_shots(10)
    @qml.qnode(dev)
    def c():
        qml.Hadamard(0)
        qml.T(1)
        return qml.sample()

    with pytest.raises(errors.NonCliffordGateError, match=r"T on wires \[1\] is not a Clifford gate"):
        c()

    @qml.set_shots(10)
    @qml.qnode(dev)
    def r():
        qml.RX(0.3, 0)
        return qml.sample()

    with pytest.raises(errors.NonCliffordGateError, match=r"RX\(0.3\) on wires \[0\]"):
        r()

    @qml.set_shots(10)
    @qml.qnode(dev)
    def controlled_s():
        qml.ctrl(qml.S, control=1)(wires=0)
        return qml.sample()

    with pytest.raises(errors.NonCliffordGateError, match="its decomposition needs"):
        controlled_s()


def test_unknown_transport_and_qec_code():
    with pytest.raises(errors.UnknownTransportError, match="carrier-pigeon"):
        Backline(wires=1, transport="carrier-pigeon")
    with pytest.raises(errors.UnknownQecCodeError, match="surface17"):
        Backline(wires=1, qec_code="surface17")


def test_a_coprocessor_function_that_is_not_found(tmp_path, steane_lib):
    with pytest.raises(errors.CoprocessorFunctionError, match="no-such.so not found"):
        CoprocessorFunction(name="decode", lib_path=tmp_path / "no-such.so")
    with pytest.raises(errors.CoprocessorFunctionError, match="symbol not found"):
        CoprocessorFunction(name="no_such_symbol", lib_path=steane_lib)
    with pytest.raises(errors.CoprocessorFunctionError, match="no built-in coprocessor function `lookup`"):
        CoprocessorFunction.builtin("lookup")
    with pytest.raises(errors.CoprocessorFunctionError, match="not a CSS code"):
        backline.css_bp_decoder([[1, 1, 0]], [[0, 1, 0]])


def test_a_coprocessor_that_cannot_be_reached():
    for transport, address in (("udp", "127.0.0.1:9"), ("shm", "nobody-serves-this-name")):
        dev = steane_placement(transport, remote=True, endpoint=Endpoint(address=address, setup_timeout=0.5))
        t0 = time.monotonic()
        with pytest.raises(errors.CoprocessorUnreachableError, match=r"coprocessor 0 cannot be reached at"):
            ghz_qnode(dev)()
        assert time.monotonic() - t0 < 10


def test_a_decoder_id_the_coprocessor_does_not_serve(executor):
    only_x = {0: CoprocessorFunction.builtin("steane")}
    dev = Backline(controller=Controller(wires=3), coprocessors=[Coprocessor(coprocessor_fn=only_x)],
                   qec_code="steane")
    with pytest.raises(errors.DecoderIdError, match=r"decoder_id 1 to coprocessor 0 .* serves decoder ids \[0\]"):
        ghz_qnode(dev)()
    # A remote executor's table is only known to it: the reply's status says so.
    e = executor("udp", "--fn", "0=steane")
    dev = steane_placement("udp", remote=True, endpoint=Endpoint(address=e.peer))
    dev.coprocessors[0].coprocessor_fn = None
    with pytest.raises(errors.DecoderIdError, match="serves no function for decoder_id 1"):
        ghz_qnode(dev)()


def test_decode_outside_a_qnode():
    m = qml.measure  # noqa: F841 — nothing recorded here
    with pytest.raises(errors.DecodeOutsideQNodeError, match="only be called inside a QNode"):
        decode([], decoder_id=0)
    with pytest.raises(errors.DecodeOutsideQNodeError):
        backline.runtime_call(backline.GET_SESSION, coprocessor=0)


def test_wires_beyond_the_controllers():
    dev = Backline(controller=Controller(wires=2))

    @qml.set_shots(5)
    @qml.qnode(dev)
    def c():
        qml.CNOT([0, 3])
        return qml.sample(wires=[0, 3])

    with pytest.raises(errors.ControllerWiresError, match=r"wire \[3\], beyond the controller's wires \[0, 1\]"):
        c()


def test_shots_missing():
    dev = qml.device("backline.qubit", wires=1)

    @qml.qnode(dev)
    def c():
        qml.Hadamard(0)
        return qml.expval(qml.Z(0))

    with pytest.raises(errors.ShotsMissingError, match="qml.set_shots"):
        c()


def test_runtime_calls_out_of_order_and_conditions_on_non_paulis():
    dev = Backline(controller=Controller(wires=2),
                   coprocessors=[Coprocessor(coprocessor_fn=CoprocessorFunction.builtin("echo"))])

    @qml.set_shots(5)
    @qml.qnode(dev)
    def c():
        m = qml.measure(0)
        s = backline.runtime_call(backline.GET_SESSION, coprocessor=0)
        backline.runtime_call(backline.POST, s)
        backline.runtime_call(backline.STAGE_PAYLOAD, s, [m])
        return qml.sample(wires=[0])

    with pytest.raises(errors.RuntimeCallError, match="nothing staged"):
        c()

    @qml.set_shots(5)
    @qml.qnode(dev)
    def h():
        m = qml.measure(0)
        qml.cond(m, qml.Hadamard)(1)
        return qml.sample(wires=[1])

    with pytest.raises(errors.CompileError, match="qml.cond of Hadamard"):
        h()

    @qml.set_shots(5)
    @qml.qnode(dev)
    def two():
        m = qml.measure(0)
        backline.decode([m], decoder_id=0, coprocessor=1)
        return qml.sample(wires=[1])

    with pytest.raises(errors.CompileError, match="coprocessor 1, but the placement has 1 coprocessor"):
        two()


def test_placement_errors_name_the_setting():
    with pytest.raises(errors.PlacementError, match="hardware='tpu'"):
        Coprocessor(hardware="tpu", coprocessor_fn=CoprocessorFunction.builtin("steane"))
    with pytest.raises(errors.PlacementError, match="backend='cuda12'"):
        Coprocessor(hardware="gpu", coprocessor_fn=CoprocessorFunction.builtin("steane"),
                    init_args={"backend": "cuda12"})
    with pytest.raises(errors.PlacementError, match="needs endpoint"):
        Coprocessor(remote=True)
    with pytest.raises(errors.PlacementError, match="placement has none"):
        Backline(wires=3, qec_code="steane")
    with pytest.raises(errors.PlacementError, match="over rdma"):
        Backline(controller=Controller(hardware="fpga", wires=1),
                 coprocessors=[Coprocessor(coprocessor_fn=CoprocessorFunction.builtin("steane"))])
    with pytest.raises(errors.PlacementError, match="noise channel 'amplitude'"):
        Backline(wires=1, noise={"p": 0.1, "channel": "amplitude"})


@pytest.mark.parametrize("transport", ["udp", "shm"])
def test_a_coprocessor_that_dies_mid_run_fails_with_a_timeout(transport):
    """The executor is killed while a long run is under way: the run ends with a timeout
    error within the reply timeout (plus scheduling), and the interpreter stays usable."""
    name = ["--bind", "127.0.0.1:0"] if transport == "udp" else ["--name", f"dies-{os.getpid()}"]
    proc = subprocess.Popen([sys.executable, "-m", "backline", "serve", "--transport", transport, *name],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        peer = proc.stdout.readline().split()[1]
        dev = steane_placement(transport, remote=True, endpoint=Endpoint(address=peer, reply_timeout=0.5))
        ghz_qnode(dev, shots=2)()  # connected and answering
        killer = threading.Timer(0.5, proc.kill)
        killer.start()
        t0 = time.monotonic()
        with pytest.raises(errors.CoprocessorTimeoutError, match="did not answer"):
            ghz_qnode(dev, shots=10_000_000)()
        elapsed = time.monotonic() - t0
        assert elapsed < 20, elapsed
        killer.join()
    finally:
        proc.kill()
        proc.wait()
    # The interpreter is fine afterwards.
    assert np.asarray(ghz_qnode(steane_placement(), shots=3)()).shape == (3, 3)


def test_ctrl_c_stops_a_long_run_promptly():
    # The child restores Python's own SIGINT handler first: a shell that runs background jobs
    # with SIGINT ignored (`(trap '' INT; pytest …)`) hands that disposition down, and Python
    # installs its handler only where SIGINT is not ignored at start-up.
    code = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "import sys; sys.path.insert(0, sys.argv[1]); from conftest import Executor, ghz_qnode, steane_placement\n"
        "print('running', flush=True)\n"
        "try:\n"
        "    ghz_qnode(steane_placement(), shots=100_000_000)()\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
    )
    import signal
    from pathlib import Path

    p = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parent)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "running"
        time.sleep(1.5)
        t0 = time.monotonic()
        os.kill(p.pid, signal.SIGINT)
        out, _ = p.communicate(timeout=30)
        assert "interrupted" in out
        assert time.monotonic() - t0 < 10
    finally:
        # Whatever failed above, the child does not run on at full CPU after the test.
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.skipif(not backline._native.HAS_FPGA, reason="built without the fpga feature")
def test_fpga_placements_that_cannot_work_are_named(executor):
    steane = CoprocessorFunction.builtin("steane")

    def fpga(coprocessors, **init):
        return Backline(controller=Controller(hardware="fpga", wires=3, init_args=init),
                        coprocessors=coprocessors, transport="rdma", qec_code="steane")

    with pytest.raises(errors.PlacementError, match="drives one coprocessor .* not 2"):
        ghz_qnode(fpga([Coprocessor(coprocessor_fn=steane), Coprocessor(coprocessor_fn=steane)]))()
    with pytest.raises(errors.PlacementError, match="over 'shm', 'udp' or 'rdma'"):
        ghz_qnode(fpga([Coprocessor(coprocessor_fn=steane)], bridge="memcpy"))()
    # A coprocessor address that does not answer: an error before the first round.
    gone = Coprocessor(remote=True, endpoint=Endpoint(address="127.0.0.1:9", setup_timeout=0.5))
    t0 = time.monotonic()
    with pytest.raises(errors.CoprocessorUnreachableError, match="udp:127.0.0.1:9 does not answer"):
        ghz_qnode(fpga([gone]))()
    assert time.monotonic() - t0 < 10
    # A decoder id the coprocessor does not serve: its reply's status says so.
    e = executor("udp", "--fn", "0=steane")
    only_x = Coprocessor(remote=True, endpoint=Endpoint(address=e.peer))
    with pytest.raises(errors.DecoderIdError, match="decoder_id 1"):
        ghz_qnode(fpga([only_x], bridge="udp"))()


def test_the_executor_stops_on_sigterm_and_sigint_and_removes_its_segment():
    import signal
    from pathlib import Path

    for sig in (signal.SIGTERM, signal.SIGINT):
        e = Executor("shm")
        seg = Path(f"/dev/shm/backline-{e.peer}")
        assert seg.exists(), seg
        e.proc.send_signal(sig)
        assert e.proc.wait(10) == 0
        assert not seg.exists(), f"{seg} left behind after {sig!r}"


def test_what_needs_no_pennylane_does_not_import_it():
    # An executor (`python -m backline serve`) and `import backline` start without PennyLane's
    # import; the exceptions that derive from PennyLane's are still PennyLane's, and pickle.
    probe = (
        "import sys, pickle, backline, backline.__main__\n"
        "assert 'pennylane' not in sys.modules, 'import backline imported pennylane'\n"
        "e = backline.errors.NonCliffordGateError('t')\n"
        "import pennylane\n"
        "assert isinstance(e, pennylane.exceptions.DeviceError)\n"
        "assert isinstance(backline.ControllerWiresError('w'), pennylane.exceptions.WireError)\n"
        "assert backline.CompileError is backline.errors.CompileError\n"
        "assert type(pickle.loads(pickle.dumps(e))) is backline.errors.NonCliffordGateError\n"
        "assert 'Backline' in dir(backline) and backline.Backline.name == 'backline.qubit'\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_a_keyed_executor_admits_only_the_controller_with_its_key(executor, tmp_path):
    key, other = tmp_path / "key", tmp_path / "other"
    for f in (key, other):
        assert subprocess.run([sys.executable, "-c", "import secrets,sys; print(secrets.token_hex(32))"],
                              stdout=open(f, "w")).returncode == 0
        os.chmod(f, 0o600)
    e = executor("udp", "--fn", "0=steane", "--fn", "1=steane", "--token-file", str(key))
    # The key: the run completes, as without one.
    dev = steane_placement("udp", remote=True, endpoint=Endpoint(address=e.peer, token_file=str(key)))
    assert len(ghz_qnode(dev)()) > 0
    # Another key, or none: not admitted, at the set-up timeout, never a hang.
    for token in (str(other), None):
        dev = steane_placement("udp", remote=True,
                               endpoint=Endpoint(address=e.peer, token_file=token, setup_timeout=0.5))
        t0 = time.monotonic()
        with pytest.raises(errors.NotAdmittedError, match="not admitted"):
            ghz_qnode(dev)()
        assert time.monotonic() - t0 < 10
    # The placement's key does not outlive it; a key file others can read is refused.
    assert "BACKLINE_TOKEN_FILE" not in os.environ
    os.chmod(other, 0o644)
    dev = steane_placement("udp", remote=True, endpoint=Endpoint(address=e.peer, token_file=str(other)))
    with pytest.raises(errors.PlacementError, match="chmod 600"):
        ghz_qnode(dev)()
    # shm has no keyed hello.
    with pytest.raises(errors.PlacementError, match="udp and rdma"):
        ghz_qnode(steane_placement("shm", endpoint=Endpoint(token_file=str(key))))()
