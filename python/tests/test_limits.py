"""Issue 34, items 1 (the Python half), 5 and 6: integers out of range are ValueErrors naming
the argument and its range before they reach the native module; absurd shots and wires are
refused at the front door (in a fresh interpreter under a 4 GB address space: a clean
exception, no abort); `python -m backline serve` validates as `backline serve` does."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import pennylane as qml
import pytest

import backline
from backline import Backline, Coprocessor, CoprocessorFunction, Endpoint, _native, decode, limits
from backline.qec import COLLECT, GET_SESSION, POST, STAGE_PAYLOAD, runtime_call

AS_LIMIT = 4_000_000 * 1024  # `ulimit -v 4000000`


def _limit_as():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def _python(code: str, env=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=_limit_as,
                          env={**os.environ, **(env or {})})


def _steane_dev():
    return Backline(wires=1, coprocessors=[Coprocessor(coprocessor_fn=CoprocessorFunction.builtin("steane"))])


def test_runtime_call_decoder_id_2_to_64_is_a_value_error_naming_it():
    dev = _steane_dev()

    def circuit(decoder_id):
        @qml.set_shots(2)
        @qml.qnode(dev)
        def c():
            m = qml.measure(0)
            s = runtime_call(GET_SESSION, coprocessor=0)
            runtime_call(STAGE_PAYLOAD, s, [m], decoder_id=decoder_id)
            runtime_call(POST, s)
            runtime_call(COLLECT, s)
            return qml.sample(wires=[0])

        return c

    for bad in (2**64, 2**32):
        with pytest.raises(ValueError, match=r"decoder_id=.* is out of range 0 \.\.= 4,294,967,295"):
            circuit(bad)()
    # The largest id passes the front door (the coprocessor then names it as unserved).
    with pytest.raises(backline.errors.DecoderIdError):
        circuit(2**32 - 1)()


def test_decode_and_session_keys_out_of_range_are_value_errors():
    dev = _steane_dev()

    @qml.set_shots(2)
    @qml.qnode(dev)
    def big_id():
        return qml.sample(decode([qml.measure(0)], decoder_id=2**40)[0])

    with pytest.raises(ValueError, match=r"decoder_id=1099511627776 is out of range"):
        big_id()

    @qml.set_shots(2)
    @qml.qnode(dev)
    def big_coprocessor():
        return qml.sample(decode([qml.measure(0)], coprocessor=2**64)[0])

    with pytest.raises(ValueError, match=r"coprocessor=18446744073709551616 is out of range"):
        big_coprocessor()

    @qml.set_shots(2)
    @qml.qnode(dev)
    def big_bytes():
        m = qml.measure(0)
        s = runtime_call(GET_SESSION, coprocessor=0)
        runtime_call(STAGE_PAYLOAD, s, [m], 2**64, 0)
        return qml.sample(wires=[0])

    with pytest.raises(ValueError, match=r"payload_bytes=18446744073709551616 is out of range 1 \.\.= 65,520"):
        big_bytes()


def test_placement_integers_out_of_range_are_value_errors():
    with pytest.raises(ValueError, match=r"Endpoint\(port\)=65536 is out of range 0 \.\.= 65,535"):
        Endpoint(address="127.0.0.1", port=65536)
    with pytest.raises(ValueError, match=r"Endpoint\(gid_index\)=256 is out of range 0 \.\.= 255"):
        Endpoint(address="127.0.0.1:7878", gid_index=256)
    steane = CoprocessorFunction.builtin("steane")
    with pytest.raises(ValueError, match=r"decoder_id=4294967296 is out of range"):
        Coprocessor(coprocessor_fn={2**32: steane})
    with pytest.raises(ValueError, match=r"payload_bytes\)=65521 is out of range 0 \.\.= 65,520"):
        Backline(wires=2, payload_bytes=65521)
    with pytest.raises(ValueError, match=r"payload_bytes\)=1099511627776 is out of range"):
        Backline(wires=2, payload_bytes=2**40)
    assert Backline(wires=2, payload_bytes=65520).payload_bytes == 65520
    with pytest.raises(TypeError, match="an integer"):
        Endpoint(address="127.0.0.1", port="7878")


def test_the_limits_are_stated_once_with_their_sources():
    assert limits.PAYLOAD_BYTES == (0, 65520)
    assert limits.DECODER_ID == (0, 2**32 - 1)
    d = limits.default_limits()
    assert d.shots < 10**12 and d.qubits < 10**6
    # The one statement of the limits is the VM's: the same names and defaults.
    assert [f for f in d.__dataclass_fields__] == [k for k, _ in _native.program_limits("")]
    with pytest.raises(ValueError, match="BACKLINE_PROGRAM_LIMITS"):
        _native.program_limits("qbits=3")
    # The setting raises and drops a limit; the environment is read under it.
    try:
        assert limits.set_program_limits(shots=7).shots == 7
        with pytest.raises(ValueError, match="shots=8 is more than the program limit shots=7"):
            limits.program_limits().check("shots", 8)
    finally:
        assert limits.set_program_limits(shots=None).shots == d.shots
    with pytest.raises(TypeError, match="unknown limit 'qbits'"):
        limits.set_program_limits(qbits=1)


@pytest.mark.parametrize("what, code, needle", [
    ("set_shots 10**12 on two memcpy wires", """
        @qml.set_shots(10**12)
        @qml.qnode(Backline(wires=2))
        def c():
            qml.Hadamard(0); qml.CNOT([0, 1]); return qml.sample()
        c()
     """, "shots=1,000,000,000,000 is more than the program limit shots="),
    ("set_shots 2**64 - 1", """
        @qml.set_shots(2**64 - 1)
        @qml.qnode(Backline(wires=2))
        def c():
            qml.Hadamard(0); return qml.sample()
        c()
     """, "shots=18,446,744,073,709,551,615 is more than the program limit"),
    ("shots within the limit, samples beyond it", """
        @qml.set_shots(10**9)
        @qml.qnode(Backline(wires=5))
        def c():
            qml.Hadamard(0); qml.CNOT([0, 1]); return qml.sample()
        c()
     """, "output bits, more than the program limit output_bits="),
    ("Backline(wires=10**6)", """
        Backline(wires=10**6)
     """, "Backline(wires)=1,000,000 is more than the program limit qubits="),
    ("qp.Backline(wires=10**6)", """
        import backline.qp as qp
        qp.Backline(wires=10**6)
     """, "Backline(wires)=1,000,000 is more than the program limit qubits="),
])
def test_absurd_shots_and_wires_are_a_clean_value_error(what, code, needle):
    prog = ("import pennylane as qml\nfrom backline import Backline\ntry:\n"
            + textwrap.indent(textwrap.dedent(code), "    ")
            + "\nexcept ValueError as e:\n    print('ValueError:', e)\n")
    r = _python(prog)
    assert r.returncode == 0, f"{what}: exit {r.returncode}\n{r.stderr[-2000:]}"
    assert needle in r.stdout, f"{what}: {r.stdout!r} {r.stderr[-2000:]!r}"
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr


def test_the_environment_raises_and_lowers_the_program_limits():
    code = """
        import pennylane as qml
        from backline import Backline
        try:
            @qml.set_shots(10)
            @qml.qnode(Backline(wires=2))
            def c():
                qml.Hadamard(0); return qml.sample()
            print(c().shape)
        except ValueError as e:
            print('ValueError:', e)
    """
    r = _python(code, env={"BACKLINE_PROGRAM_LIMITS": "shots=5"})
    assert "shots=10 is more than the program limit shots=5" in r.stdout, r.stdout + r.stderr
    r = _python(code, env={"BACKLINE_PROGRAM_LIMITS": "shots=10"})
    assert "(10, 2)" in r.stdout, r.stdout + r.stderr
    r = _python(code, env={"BACKLINE_PROGRAM_LIMITS": "shotz=10"})
    assert "BACKLINE_PROGRAM_LIMITS: `shotz=10`: expected KEY=N" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("args, needle", [
    (["--payload-bytes", "65521"], "--payload-bytes=65521 is out of range 0 ..= 65,520"),
    (["--payload-bytes", str(2**40)], "--payload-bytes=1099511627776 is out of range"),
    (["--fn", f"{2**32}=steane"], "--fn ID=4294967296 is out of range"),
    (["--gid-index", "256"], "--gid-index=256 is out of range 0 ..= 255"),
])
def test_python_serve_refuses_what_backline_serve_refuses(args, needle):
    r = subprocess.run([sys.executable, "-m", "backline", "serve", "--transport", "udp",
                        "--bind", "127.0.0.1:0", "--sessions", "0", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert "ready" not in r.stdout
