"""Issue 34, item 2: an executor that lets only invited controllers in and outlives hostile
clients. Every executor here listens on loopback; each test ends within its bound."""

from __future__ import annotations

import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from backline import _native, errors
from backline import executor as ex
from backline.executor import Executor

AS_LIMIT = 4_000_000 * 1024  # `ulimit -v 4000000`


def _program() -> bytes:
    return _native.compile(("one", 1, 1, 0, None, []), [("h", [0], 0.0), ("measure", [0, 0], 0.0),
                                                         ("output", [0], 0.0)]).to_bytes()


def _key(path, mode=0o600) -> str:
    import secrets

    path.write_text(secrets.token_hex(32) + "\n")
    os.chmod(path, mode)
    return str(path)


class _Proc:
    """``python -m backline executor`` as a subprocess (optionally under a 4 GB address
    space); ``stop()`` ends it with SIGINT and returns its stderr."""

    def __init__(self, *args, limit_as=False, env=None):
        def pre():
            os.setpgrp()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if limit_as:
                resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

        e = {k: v for k, v in os.environ.items() if k != "BACKLINE_TOKEN_FILE"}
        e.update(env or {})
        self.p = subprocess.Popen([sys.executable, "-m", "backline", "executor", "--bind", "127.0.0.1:0",
                                   *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  preexec_fn=pre, env=e)
        r, _, _ = select.select([self.p.stdout], [], [], 60)
        line = self.p.stdout.readline() if r else ""
        if not line.startswith("ready "):
            self.p.kill()
            raise AssertionError(f"the executor did not start: {line!r} {self.p.communicate()[1]}")
        self.address = line.split()[1]
        self.host, self.port = self.address.rsplit(":", 1)
        self.port = int(self.port)

    def sock(self) -> socket.socket:
        return socket.create_connection((self.host, self.port), timeout=10)

    def stop(self) -> str:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            _, err = self.p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            _, err = self.p.communicate()
        return err


@pytest.fixture
def start():
    procs = []

    def go(*args, **kw):
        p = _Proc(*args, **kw)
        procs.append(p)
        return p

    yield go
    for p in procs:
        if p.p.poll() is None:
            p.p.kill()
            p.p.wait()


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv("BACKLINE_TOKEN_FILE", raising=False)


def _frames(sock: socket.socket) -> list[dict]:
    """Every JSON frame the executor sends until it closes the connection."""
    out = []
    sock.settimeout(10)
    while True:
        try:
            out.append(ex._recv_json(sock))
        except ex._Closed:
            return out


def _run_ok(address: str, token_file=None, shots=100) -> None:
    bits, width, rtts = Executor.connect(address, 10, token_file=token_file).run(_program(), shots, 1)
    assert width == 1 and len(bits) == shots and set(bits) <= {0, 1}


def _clean(err: str) -> None:
    assert "Traceback" not in err and "panicked" not in err, err[-3000:]


def test_unkeyed_and_wrong_keyed_clients_get_no_session(start, tmp_path):
    key, other = _key(tmp_path / "key"), _key(tmp_path / "other")
    e = start("--token-file", key)
    t0 = time.monotonic()
    with pytest.raises(errors.NotAdmittedError, match="no key proof sent"):
        Executor.connect(e.address, 5)
    with pytest.raises(errors.NotAdmittedError, match="with the key of"):
        Executor.connect(e.address, 5, token_file=other)
    assert time.monotonic() - t0 < 5
    # An unkeyed hello followed at once by a run and its program: one refusal, nothing about
    # the executor in it, no run, the connection closed.
    with e.sock() as s:
        ex._send(s, ex._hello())
        ex._send(s, {"op": "run", "shots": 10, "seed": 1, "endpoints": []}, _program())
        got = _frames(s)
    assert got == [{"ok": False, "kind": "NotAdmittedError",
                    "error": "not admitted: this executor serves only callers that prove its key (token_file)"}]
    # A replayed proof is refused too.
    hello = ex._prove(ex.read_key(key), ex._hello())
    for expect_ok in (True, False):
        with e.sock() as s:
            ex._send(s, hello)
            assert ex._recv_json(s)["ok"] is expect_ok
    _run_ok(e.address, key)
    err = e.stop()
    _clean(err)
    # Admitted: the first use of the proof, and _run_ok's connect and run.
    assert "3 connections served; refused: 4 not admitted" in err, err
    assert "not admitted: a hello without a key proof from 127.0.0.1" in err


def test_a_1_gib_hello_length_is_refused_before_it_is_read(start):
    e = start()
    t0 = time.monotonic()
    with e.sock() as s:
        s.sendall(struct.pack(">I", 1 << 30) + b"{" * 1000)
        got = _frames(s)
    assert got and got[0]["kind"] == "ExecutorFrameError"
    assert "a hello of 1073741824 bytes (at most 4096)" in got[0]["error"]
    assert time.monotonic() - t0 < 5
    _run_ok(e.address)
    err = e.stop()
    _clean(err)
    assert "1 oversized" in err


def test_a_100000_deep_json_frame_is_an_error_frame_not_a_traceback(start):
    e = start()
    deep = b'{"op": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with e.sock() as s:
        ex._send(s, ex._hello())
        assert ex._recv_json(s)["ok"]
        s.sendall(struct.pack(">I", len(deep)) + deep)
        got = _frames(s)
    assert got[0]["kind"] == "ExecutorFrameError" and "nested deeper than 32" in got[0]["error"]
    # As a hello (within its 4 KiB) too.
    with e.sock() as s:
        hello = b"[" * 3000 + b"]" * 1000
        s.sendall(struct.pack(">I", len(hello)) + hello)
        got = _frames(s)
    assert "nested deeper than 32" in got[0]["error"]
    # Strings with brackets and escapes are not nesting.
    assert ex._json_depth_ok(b'{"a": "[[[[\\"[[[[", "b": [1, [2]]}', 3)
    assert not ex._json_depth_ok(b'{"a": [[[1]]]}', 3)
    _run_ok(e.address)
    err = e.stop()
    _clean(err)
    assert "2 malformed" in err


def test_a_flood_of_unkeyed_connections_while_an_admitted_client_runs(start, tmp_path):
    key = _key(tmp_path / "key")
    e = start("--token-file", key)
    stop = threading.Event()
    sent = [0]

    def flood():
        while not stop.is_set():
            try:
                with e.sock() as s:
                    ex._send(s, ex._hello())
                    ex._send(s, {"op": "run", "shots": 10**12, "seed": 1, "endpoints": []}, _program())
                sent[0] += 1
            except OSError:
                pass

    threads = [threading.Thread(target=flood) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        t0 = time.monotonic()
        for _ in range(10):
            _run_ok(e.address, key, shots=20_000)
        assert time.monotonic() - t0 < 40
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert sent[0] > 50
    err = e.stop()
    _clean(err)
    assert "20 connections served" in err  # a connect and a run each


def test_600_stalled_connections_and_3_oversized_hellos_under_a_4_gb_address_space(start):
    e = start(limit_as=True)
    socks = []
    try:
        for i in range(600):
            s = e.sock()
            if i % 2:
                s.sendall(b"\x00\x00")  # half a length
            socks.append(s)
        for _ in range(3):
            s = e.sock()
            s.sendall(struct.pack(">I", (1 << 30) - 1) + b"x" * 65536)
            socks.append(s)
        t0 = time.monotonic()
        _run_ok(e.address)
        assert time.monotonic() - t0 < 15
        assert e.p.poll() is None
    finally:
        for s in socks:
            s.close()
    _run_ok(e.address)
    err = e.stop()
    _clean(err)
    assert "3 oversized" in err


def test_excess_connections_are_refused_at_once_and_counted(start):
    e = start("--max-connections", "1")
    holder = e.sock()
    ex._send(holder, ex._hello())
    assert ex._recv_json(holder)["ok"]  # holds the one worker, idle
    t0 = time.monotonic()
    with pytest.raises(errors.ExecutorError, match=r"serves 1 connections at once \(--max-connections\)"):
        Executor.connect(e.address, 5)
    assert time.monotonic() - t0 < 3
    holder.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            _run_ok(e.address)
            break
        except errors.ExecutorError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    err = e.stop()
    _clean(err)
    assert "busy" in err and " 0 busy" not in err


def test_idle_and_half_frame_deadlines(monkeypatch):
    monkeypatch.setattr(ex, "HELLO_TIMEOUT", 0.5)
    monkeypatch.setattr(ex, "IDLE_TIMEOUT", 0.5)
    ready, stop = [], threading.Event()
    th = threading.Thread(target=ex.serve_forever, args=("127.0.0.1:0", ready.append, stop))
    th.start()
    try:
        while not ready:
            time.sleep(0.01)
        host, port = ready[0].rsplit(":", 1)
        t0 = time.monotonic()
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"\x00\x00\x00")  # a hello's length, cut short
            got = _frames(s)
        assert got[0]["kind"] == "ExecutorTimeoutError" and "no complete hello" in got[0]["error"]
        with socket.create_connection((host, int(port)), timeout=10) as s:
            ex._send(s, ex._hello())
            assert ex._recv_json(s)["ok"]
            got = _frames(s)  # then silent: the idle deadline
        assert got[0]["kind"] == "ExecutorTimeoutError"
        assert time.monotonic() - t0 < 8
    finally:
        stop.set()
        th.join(10)
    assert not th.is_alive()


def test_a_non_loopback_bind_without_a_key_is_refused_unless_insecure():
    r = subprocess.run([sys.executable, "-m", "backline", "executor", "--bind", "0.0.0.0:0"],
                       capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "BACKLINE_TOKEN_FILE"})
    assert r.returncode == 2 and "ready" not in r.stdout
    assert "not a loopback address, and no key" in r.stderr and "--insecure" in r.stderr
    assert r.stderr.count("\n") == 1
    assert ex.is_loopback("127.0.0.1") and ex.is_loopback("::1") and ex.is_loopback("localhost")
    assert not ex.is_loopback("0.0.0.0") and not ex.is_loopback("10.1.2.3")


@pytest.mark.parametrize("setup, needle", [
    (lambda d: str(d / "missing"), "it does not exist"),
    (lambda d: _write(d / "empty", "\n"), "it is empty"),
    (lambda d: _write(d / "short", "abc\n"), "it holds 3 bytes; a key is at least 16"),
    (lambda d: _write(d / "shared", "k" * 64, 0o644), "chmod 600"),
    (lambda d: str(d), "it is not a regular file"),
])
def test_key_files_are_refused_as_backline_serve_refuses_them(tmp_path, setup, needle):
    path = setup(tmp_path)
    r = subprocess.run([sys.executable, "-m", "backline", "executor", "--token-file", path],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and needle in r.stderr and "ready" not in r.stdout
    with pytest.raises(errors.PlacementError, match=needle):
        Executor.connect("127.0.0.1:9", 1, token_file=path)


def _write(path, text, mode=0o600) -> str:
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


def test_an_explicit_token_file_wins_over_the_environment_and_says_so(start, tmp_path):
    key, other = _key(tmp_path / "key"), _key(tmp_path / "other")
    e = start("--token-file", key, env={"BACKLINE_TOKEN_FILE": other})
    _run_ok(e.address, key)
    with pytest.raises(errors.NotAdmittedError):
        Executor.connect(e.address, 5, token_file=other)
    err = e.stop()
    assert err.count(f"token file {key} is used (the explicit setting wins; BACKLINE_TOKEN_FILE names {other})") == 1
    # The client side too, and the environment alone keys both.
    os.environ["BACKLINE_TOKEN_FILE"] = other
    try:
        e2 = start(env={"BACKLINE_TOKEN_FILE": key})
        with pytest.raises(errors.NotAdmittedError):
            Executor.connect(e2.address, 5)
        _run_ok(e2.address, key)
    finally:
        del os.environ["BACKLINE_TOKEN_FILE"]


def test_the_serve_operation_validates_as_backline_serve(start):
    e = start()
    req = {"transport": "udp", "address": "127.0.0.1:0", "key": "k", "fns": [[0, "steane"]],
           "payload_bytes": 2**40, "reply_timeout": 1.0, "setup_timeout": 5.0}
    with pytest.raises(errors.ExecutorError, match=r"payload_bytes=1099511627776 is out of range 0 \.\.= 65,520"):
        Executor.connect(e.address).serve(req)
    with pytest.raises(errors.ExecutorError, match=r"payload_bytes=65521 is out of range"):
        Executor.connect(e.address).serve({**req, "payload_bytes": 65521})
    with pytest.raises(errors.ExecutorError, match=r"decoder_id=4294967296 is out of range"):
        Executor.connect(e.address).serve({**req, "payload_bytes": 48, "fns": [[2**32, "steane"]]})
    sock, peer = Executor.connect(e.address).serve({**req, "payload_bytes": 65520})
    sock.close()
    assert peer.startswith("127.0.0.1:")
    # A run whose shots pass the program limits is refused by name, the executor lives.
    with pytest.raises(errors.ExecutorError, match="shots=1,000,000,000,000 is more than the program limit"):
        Executor.connect(e.address).run(_program(), 10**12, 1)
    _run_ok(e.address)
    _clean(e.stop())
