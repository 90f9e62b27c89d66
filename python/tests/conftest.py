"""Shared fixtures: the repository root, the C Steane decoder built with the system's C
compiler, the GHZ QNode of demo 1 on any placement, and executor processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pennylane as qml
import pytest

import backline
from backline import Backline, Controller, Coprocessor, CoprocessorFunction, Endpoint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def steane_lib(tmp_path_factory) -> Path:
    """libsteane_decoder.so from host/ffi/examples/c/steane_decoder.c (the pre-compiled route)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("clib") / "libsteane_decoder.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out),
                    str(ROOT / "host/ffi/examples/c/steane_decoder.c")], check=True)
    return out


def ghz_qnode(dev, shots=10, n=3):
    """The unchanged demo-1 program: a GHZ state, sampled."""

    @qml.set_shots(shots)
    @qml.qnode(dev)
    def ghz():
        qml.Hadamard(0)
        for q in range(1, n):
            qml.CNOT([q - 1, q])
        return qml.sample(wires=range(n))

    return ghz


def steane_placement(transport="memcpy", remote=False, fn=None, seed=1234, noise=None, endpoint=None, **kw):
    fn = fn or CoprocessorFunction.builtin("steane")
    return Backline(
        controller=Controller(hardware="cpu", wires=3),
        coprocessors=[Coprocessor(hardware="cpu", coprocessor_fn=fn, remote=remote, endpoint=endpoint)],
        transport=transport,
        qec_code="steane",
        noise=noise,
        seed=seed,
        **kw,
    )


class Executor:
    """``python -m backline serve`` in its own process."""

    def __init__(self, transport: str, *args: str):
        addr = ["--bind", "127.0.0.1:0"] if transport == "udp" else ["--name", f"pytest-{os.getpid()}-{id(self)}"]
        self.proc = subprocess.Popen([sys.executable, "-m", "backline", "serve", "--transport", transport,
                                      *addr, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("ready "), (line, self.proc.stderr.read() if self.proc.poll() is not None else "")
        self.peer = line.split()[1]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture
def executor():
    started = []

    def start(transport, *args):
        e = Executor(transport, *args)
        started.append(e)
        return e

    yield start
    for e in started:
        e.stop()


__all__ = ["ghz_qnode", "steane_placement", "backline", "Endpoint"]
