"""Executors: the processes a remote node runs in (``remote=True`` in the reference).

``python -m backline executor --bind HOST:PORT`` (or ``backline.executor.serve_forever``)
listens on a TCP port for work and prints ``ready HOST:PORT`` once it does. Each connection
starts with a hello that carries both sides' backline and protocol versions (a mismatch is
refused with both named), then asks for one of two things:

* ``run`` — a controller: the compiled program (``backline_stabvm``'s encoding, checked
  when read), the shots, the seed and the placement's endpoints (or the simulated board's
  settings); the executor opens the sessions to the coprocessors, runs the shots with their
  decode rounds, and returns the samples and every round's time;
* ``serve`` — a coprocessor: its transport, address and functions (the specs of
  ``Coprocessor.fns()``); the executor serves them until the connection closes.

Messages are length-prefixed frames: a 4-byte big-endian length, then JSON (the request or
the answer), followed for programs and samples by one frame of raw bytes. An executor serves
every connection on a thread of its own; a controller's run holds the connection until its
answer.

:class:`Executor` is the client: ``Executor.connect(address, timeout)`` reaches a running
one (:class:`~backline.errors.ExecutorUnreachableError` when it does not answer in time),
``Executor.spawn()`` starts one on this machine (stopped with the client).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

#: The executor protocol this build speaks; a peer of another is refused.
PROTOCOL = 1

#: Largest frame either side accepts (a program or the samples of a run): 1 GiB.
MAX_FRAME = 1 << 30


def _version() -> str:
    from . import __version__

    return __version__


class _Closed(Exception):
    """The peer closed the connection."""


def _send(sock: socket.socket, obj=None, data: bytes | None = None) -> None:
    frames = []
    if obj is not None:
        frames.append(json.dumps(obj).encode())
    if data is not None:
        frames.append(bytes(data))
    sock.sendall(b"".join(struct.pack(">I", len(f)) + f for f in frames))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise _Closed()
        buf += chunk
    return bytes(buf)


def _recv_frame(sock: socket.socket) -> bytes:
    (n,) = struct.unpack(">I", _recv_exact(sock, 4))
    if n > MAX_FRAME:
        raise ValueError(f"a frame of {n} bytes (at most {MAX_FRAME})")
    return _recv_exact(sock, n)


def _recv_json(sock: socket.socket) -> dict:
    obj = json.loads(_recv_frame(sock))
    if not isinstance(obj, dict):
        raise ValueError("a frame that is not a JSON object")
    return obj


def _hello() -> dict:
    return {"op": "hello", "backline": _version(), "protocol": PROTOCOL}


def _version_mismatch(theirs: dict, who: str) -> str | None:
    mine = (_version(), PROTOCOL)
    got = (theirs.get("backline"), theirs.get("protocol"))
    if got != mine:
        return (
            f"{who} is backline {got[0]} (executor protocol {got[1]}); this is backline "
            f"{mine[0]} (protocol {mine[1]}): run the same version on both machines"
        )
    return None


# ---------------------------------------------------------------- the executor process


def _error_answer(e: BaseException) -> dict:
    return {"ok": False, "kind": type(e).__name__, "error": str(e)}


def _run(conn: socket.socket, req: dict) -> None:
    from . import _native

    program = _recv_frame(conn)
    try:
        compiled = _native.Compiled.from_bytes(program)
        shots, seed = int(req["shots"]), int(req["seed"])
        board = None
        if req.get("board") is not None:
            b = req["board"]
            board = _native.FpgaBoard(b["bridge"], b["peer"], int(b["payload_bytes"]),
                                      float(b["reply_timeout"]), float(b["setup_timeout"]),
                                      b.get("reply_timeout_us"))
        endpoints = [tuple(e) for e in req.get("endpoints", [])]
        t0 = time.perf_counter()
        if board is not None:
            bits, width, rtts = _native.run(compiled, shots, seed, [], board)
        else:
            bits, width, rtts = _native.run(compiled, shots, seed, endpoints)
        answer = {"ok": True, "width": width, "rtts_ns": list(rtts),
                  "seconds": time.perf_counter() - t0, "host": socket.gethostname()}
        _send(conn, answer, bits)
    except Exception as e:  # noqa: BLE001 — every failure goes back to the caller, named
        _send(conn, _error_answer(e))


def _serve(conn: socket.socket, req: dict) -> None:
    from . import _native

    try:
        os.environ.update({str(k): str(v) for k, v in req.get("environment", {}).items()})
        server = _native.Server(req["transport"], req["address"], req["key"],
                                [tuple(f) for f in req["fns"]], int(req["payload_bytes"]), None,
                                float(req["reply_timeout"]), float(req["setup_timeout"]))
    except Exception as e:  # noqa: BLE001
        _send(conn, _error_answer(e))
        return
    try:
        _send(conn, {"ok": True, "peer": server.peer})
        # Served until the client closes the connection (or says stop).
        try:
            while True:
                msg = _recv_json(conn)
                if msg.get("op") == "stop":
                    break
        except (_Closed, OSError, ValueError):
            pass
    finally:
        server.stop()


def _connection(conn: socket.socket) -> None:
    with conn:
        try:
            hello = _recv_json(conn)
            if hello.get("op") != "hello":
                _send(conn, {"ok": False, "kind": "ExecutorVersionError",
                             "error": "the first message must be the hello"})
                return
            mismatch = _version_mismatch(hello, "the caller")
            me = {"ok": mismatch is None, "backline": _version(), "protocol": PROTOCOL,
                  "host": socket.gethostname(), "pid": os.getpid()}
            if mismatch:
                me.update(kind="ExecutorVersionError", error=mismatch)
            _send(conn, me)
            if mismatch:
                return
            req = _recv_json(conn)
            op = req.get("op")
            if op == "run":
                _run(conn, req)
            elif op == "serve":
                _serve(conn, req)
            else:
                _send(conn, {"ok": False, "kind": "ExecutorError", "error": f"unknown op {op!r}"})
        except (_Closed, OSError, ValueError, KeyError):
            pass


def serve_forever(bind: str, on_ready=None, stop: threading.Event | None = None) -> None:
    """Listens on ``bind`` (``HOST:PORT``, port 0 for any) and serves every connection on a
    thread of its own until ``stop`` is set; ``on_ready(address)`` once listening."""
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--bind {bind!r}: expected HOST:PORT")
    srv = socket.create_server((host.strip("[]"), int(port)), reuse_port=False)
    srv.settimeout(0.2)
    addr = srv.getsockname()
    if on_ready:
        on_ready(f"{addr[0]}:{addr[1]}")
    with srv:
        while stop is None or not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            except OSError:
                if stop is not None and stop.is_set():
                    break
                raise
            conn.settimeout(None)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=_connection, args=(conn,), daemon=True,
                             name="backline-executor").start()


def main(argv=None) -> int:
    """``python -m backline executor``."""
    p = argparse.ArgumentParser(
        prog="python -m backline executor",
        description="An executor: runs remote controllers and coprocessors shipped to it "
                    "(Controller(remote=True), Coprocessor(remote=True)). Prints `ready "
                    "HOST:PORT` once it listens; stops on SIGINT/SIGTERM.")
    p.add_argument("--bind", default="127.0.0.1:0",
                   help="HOST:PORT to listen on (default 127.0.0.1:0, any port); not loopback "
                        "makes it reachable from other hosts, and anyone who reaches it can run "
                        "programs here")
    p.add_argument("--exit-with-parent", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.exit_with_parent:
        from ._process import exit_with_parent as _exit_with_parent

        _exit_with_parent()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    def ready(addr: str) -> None:
        print(f"ready {addr}", flush=True)
        print(f"backline executor {_version()} (protocol {PROTOCOL}) at {addr}; Ctrl-C to stop",
              file=sys.stderr, flush=True)

    try:
        serve_forever(a.bind, ready, stop)
    except (OSError, ValueError) as e:
        print(f"python -m backline executor: {e}", file=sys.stderr)
        return 2
    return 0


# ---------------------------------------------------------------- the client


class Executor:
    """A connection to an executor (see the module docs)."""

    def __init__(self, address: str, proc: subprocess.Popen | None = None):
        self.address = address
        self.proc = proc

    # ---- reaching one ----

    @classmethod
    def spawn(cls, python: str | None = None, timeout: float = 60.0) -> Executor:
        """Starts an executor on this machine (``python -m backline executor --bind
        127.0.0.1:0``); it exits with this process, or with :meth:`close`."""
        from .errors import ExecutorUnreachableError

        cmd = [python or sys.executable, "-m", "backline", "executor", "--bind", "127.0.0.1:0",
               "--exit-with-parent"]
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            raise ExecutorUnreachableError(f"cannot start an executor ({' '.join(cmd)}): {e}") from None
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            r, _, _ = select.select([proc.stdout], [], [], 0.1)
            if r:
                line = proc.stdout.readline()
                break
            if proc.poll() is not None:
                break
        if not line.startswith("ready "):
            proc.kill()
            _, err = proc.communicate(timeout=5)
            raise ExecutorUnreachableError(
                f"the executor ({' '.join(cmd[1:])}) did not become ready: "
                f"{(err or '').strip() or line.strip() or f'no answer in {timeout:.0f} s'}"
            )
        return cls(line.split(None, 1)[1].strip(), proc)

    @classmethod
    def connect(cls, address: str, timeout: float = 10.0) -> Executor:
        """An executor already running at ``address`` (``HOST:PORT``), checked by a hello."""
        ex = cls(address)
        ex._open(timeout).close()
        return ex

    def _open(self, timeout: float) -> socket.socket:
        from .errors import ExecutorError, ExecutorUnreachableError, ExecutorVersionError

        host, _, port = self.address.rpartition(":")
        if not host or not port.isdigit():
            raise ExecutorUnreachableError(f"executor address {self.address!r}: expected HOST:PORT")
        try:
            sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        except OSError as e:
            raise ExecutorUnreachableError(
                f"no executor answers at {self.address} within {timeout:g} s ({e}); start one "
                "there with `python -m backline executor --bind HOST:PORT`"
            ) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            _send(sock, _hello())
            answer = _recv_json(sock)
        except (_Closed, OSError, ValueError) as e:
            sock.close()
            raise ExecutorUnreachableError(
                f"the executor at {self.address} did not answer the hello within {timeout:g} s ({e or 'closed'})"
            ) from None
        if not answer.get("ok"):
            sock.close()
            if answer.get("kind") == "ExecutorVersionError":
                raise ExecutorVersionError(f"the executor at {self.address} refused: {answer.get('error')}")
            raise ExecutorError(f"the executor at {self.address}: {answer.get('error')}")
        mismatch = _version_mismatch(answer, f"the executor at {self.address}")
        if mismatch:
            sock.close()
            raise ExecutorVersionError(mismatch)
        return sock

    # ---- the work ----

    def run(self, program: bytes, shots: int, seed: int, endpoints=(), board: dict | None = None,
            timeout: float = 10.0):
        """Runs a compiled program there: ``(bits, width, rtts_ns)`` as ``_native.run``
        gives them."""
        sock = self._open(timeout)
        with sock:
            try:
                # The run takes as long as it takes; the executor's death shows as a closed
                # connection.
                sock.settimeout(None)
                _send(sock, {"op": "run", "shots": int(shots), "seed": int(seed),
                             "endpoints": [list(e) for e in endpoints], "board": board}, program)
                answer = _recv_json(sock)
                bits = _recv_frame(sock) if answer.get("ok") else None
            except (_Closed, OSError, ValueError) as e:
                from .errors import ExecutorError

                raise ExecutorError(
                    f"the controller's executor at {self.address} went away in the middle of the "
                    f"run ({e or 'connection closed'})"
                ) from None
        if not answer.get("ok"):
            raise _remote_error(answer, f"the controller's executor at {self.address}")
        return bits, int(answer["width"]), [float(x) for x in answer["rtts_ns"]]

    def serve(self, request: dict, timeout: float = 10.0) -> tuple[socket.socket, str]:
        """Starts a coprocessor there; returns the connection that keeps it alive (close it to
        stop the coprocessor) and its peer address."""
        sock = self._open(timeout)
        try:
            _send(sock, {"op": "serve", **request})
            answer = _recv_json(sock)
        except (_Closed, OSError, ValueError) as e:
            sock.close()
            from .errors import ExecutorError

            raise ExecutorError(f"the coprocessor's executor at {self.address} went away ({e or 'closed'})") from None
        if not answer.get("ok"):
            sock.close()
            raise _remote_error(answer, f"the coprocessor's executor at {self.address}")
        return sock, answer["peer"]

    def close(self) -> None:
        """Stops an executor this client started."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _remote_error(answer: dict, who: str) -> Exception:
    """The exception an executor's failure is raised as here: the same class when backline
    has it, named with the executor."""
    from . import errors

    kind = answer.get("kind", "ExecutorError")
    msg = f"{who}: {answer.get('error')}"
    cls = getattr(errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls(msg)
    return errors.ExecutorError(f"{msg} ({kind})")
