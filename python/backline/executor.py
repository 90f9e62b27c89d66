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
import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
import select
import selectors
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time

from .limits import DECODER_ID, PAYLOAD_BYTES, SEED, check_int, check_program_header

#: The executor protocol this build speaks; a peer of another is refused.
PROTOCOL = 1

#: Largest frame either side accepts (a program or the samples of a run): 1 GiB.
MAX_FRAME = 1 << 30

#: Largest hello (the first frame): a version, a protocol number and a key proof fit in far
#: less. A larger length is refused before a byte of the frame is read.
MAX_HELLO = 4096

#: Largest request or control frame (JSON) after the hello.
MAX_REQUEST = 1 << 20

#: Deepest JSON nesting read (a request is two levels deep; endpoint lists three).
MAX_JSON_DEPTH = 32

#: Connections served at once by default (each on a worker thread of its own); one more,
#: admitted, is answered `ExecutorBusyError` at once.
DEFAULT_MAX_CONNECTIONS = 32

#: Connections that have not finished their hello, held at once (no thread each: one
#: selector reads every hello); beyond, a new connection is closed at once.
MAX_PENDING = 1024

#: Seconds a connection may take from its accept to a complete hello.
HELLO_TIMEOUT = 10.0

#: Seconds an admitted connection may stay silent before its request.
IDLE_TIMEOUT = 60.0

#: Seconds a frame may take once its first byte came (plus one per MiB of its length).
FRAME_TIMEOUT = 30.0

#: The key proof: the tag is HMAC-SHA256 under the token file's key of LABEL ‖ time (µs since
#: the Unix epoch, u64 LE) ‖ nonce (16 bytes) ‖ protocol (u32 LE) ‖ backline version (UTF-8).
#: The label differs from the ring transport's (docs/wire-format.md §4.1), so a proof made
#: for one is never valid for the other.
PROOF_LABEL = b"backline executor hello v1".ljust(32, b"\0")

#: A proof made further than this from the executor's clock, either way, is refused.
FRESHNESS_S = 30.0

#: Nonces of admitted proofs remembered while fresh.
REPLAY_CAPACITY = 1 << 16

#: A token file: at least this many bytes of key after trailing white space, at most 4096 in
#: all (``backline_transport::admit``).
MIN_KEY_BYTES = 16
MAX_KEY_FILE_BYTES = 4096


def _version() -> str:
    from . import __version__

    return __version__


class _Closed(Exception):
    """The peer closed the connection."""


class _Refused(Exception):
    """A frame or request refused; ``kind`` and the message go back in an error frame."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------- the key


def read_key(path) -> bytes:
    """The key in the token file ``path``, refused as ``backline serve --token-file`` refuses
    it (``PlacementError`` naming the file and the problem): missing, not a regular file,
    readable or writable by group or others, longer than 4096 bytes, empty, or shorter than
    16 bytes after trailing white space."""
    from .errors import PlacementError

    path = os.fspath(path)

    def bad(problem: str) -> PlacementError:
        return PlacementError(f"token file {path}: {problem}")

    try:
        # Non-blocking, so a FIFO does not hang the open; the checks use the opened file.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise bad("it does not exist (make one with `backline token FILE`)") from None
    except OSError as e:
        raise bad(f"it cannot be read: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise bad("it is not a regular file")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            raise bad(f"its mode {mode:04o} lets other users read or write it; a key file must be "
                      "private (chmod 600)")
        if st.st_size > MAX_KEY_FILE_BYTES:
            raise bad(f"it holds more than {MAX_KEY_FILE_BYTES} bytes: not a key file")
        raw = os.read(fd, MAX_KEY_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_KEY_FILE_BYTES:
        raise bad(f"it holds more than {MAX_KEY_FILE_BYTES} bytes: not a key file")
    # Rust's is_ascii_whitespace: space, tab, LF, FF, CR (not VT).
    key = raw.rstrip(b" \t\n\x0c\r")
    if not key:
        raise bad("it is empty")
    if len(key) < MIN_KEY_BYTES:
        raise bad(f"it holds {len(key)} bytes; a key is at least {MIN_KEY_BYTES} (make one with "
                  "`backline token FILE`)")
    return key


def token_file_choice(flag, who: str, warn=None):
    """The token file to use: ``flag`` when given (an explicit flag wins over the
    environment), else ``BACKLINE_TOKEN_FILE``, else None. Where both are given and differ,
    ``warn`` (default: a line on stderr) is told once which one is used."""
    env = os.environ.get("BACKLINE_TOKEN_FILE") or None
    if flag is None:
        return env
    flag = os.fspath(flag)
    if env is not None and env != flag:
        msg = (f"{who}: token file {flag} is used (the explicit setting wins; "
               f"BACKLINE_TOKEN_FILE names {env})")
        (warn or (lambda m: print(m, file=sys.stderr, flush=True)))(msg)
    return flag


def _signed(unix_us: int, nonce: bytes, protocol: int, version: str) -> bytes:
    return (PROOF_LABEL + struct.pack("<Q", unix_us) + nonce + struct.pack("<I", protocol & 0xFFFFFFFF)
            + version.encode("utf-8", "replace"))


def _prove(key: bytes, hello: dict) -> dict:
    """``hello`` with its key proof."""
    unix_us = time.time_ns() // 1000
    nonce = secrets.token_bytes(16)
    tag = hmac.new(key, _signed(unix_us, nonce, hello["protocol"], hello["backline"]),
                   hashlib.sha256).digest()
    return {**hello, "proof": {"unix_us": unix_us, "nonce": nonce.hex(), "tag": tag.hex()}}


class _Gate:
    """The executor's check of keyed hellos: the tag in constant time, the time within
    :data:`FRESHNESS_S`, each nonce once while fresh."""

    def __init__(self, key: bytes):
        self.key = key
        self.seen: dict[bytes, int] = {}

    def judge(self, hello: dict) -> str | None:
        """None when admitted, else why not (for the executor's log, never the peer)."""
        p = hello.get("proof")
        if not isinstance(p, dict):
            return "a hello without a key proof"
        try:
            unix_us = check_int("unix_us", p["unix_us"], (0, (1 << 64) - 1))
            nonce, tag = bytes.fromhex(p["nonce"]), bytes.fromhex(p["tag"])
            protocol, version = hello["protocol"], hello["backline"]
            if len(nonce) != 16 or len(tag) != 32 or not isinstance(protocol, int) or not isinstance(version, str):
                raise ValueError
            signed = _signed(unix_us, nonce, protocol, version)
        except (KeyError, TypeError, ValueError):
            return "a malformed key proof"
        want = hmac.new(self.key, signed, hashlib.sha256).digest()
        if not hmac.compare_digest(want, tag):
            return "a key proof made with another key"
        now = time.time_ns() // 1000
        window = int(FRESHNESS_S * 1e6)
        if abs(now - unix_us) > window:
            return "a key proof outside the freshness window (are the clocks set?)"
        if nonce in self.seen:
            return "a replayed key proof"
        if len(self.seen) >= REPLAY_CAPACITY:
            self.seen = {n: t for n, t in self.seen.items() if abs(now - t) <= window}
            if len(self.seen) >= REPLAY_CAPACITY:
                return "a key proof while the replay cache is full"
        self.seen[nonce] = unix_us
        return None


# ---------------------------------------------------------------- frames


def _send(sock: socket.socket, obj=None, data: bytes | None = None) -> None:
    frames = []
    if obj is not None:
        frames.append(json.dumps(obj).encode())
    if data is not None:
        frames.append(bytes(data))
    sock.sendall(b"".join(struct.pack(">I", len(f)) + f for f in frames))


def _recv_exact(sock: socket.socket, n: int, deadline: float | None = None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"a frame not completed in time ({len(buf)} of {n} bytes)")
            sock.settimeout(left)
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise _Closed()
        buf += chunk
    return bytes(buf)


def _recv_frame(sock: socket.socket, limit: int = MAX_FRAME, idle: float | None = None,
                what: str = "a frame") -> bytes:
    """One frame of at most ``limit`` bytes (a longer length is refused before its bytes are
    read); with ``idle``, its first bytes must come within ``idle`` seconds and the rest within
    :data:`FRAME_TIMEOUT` (plus a second per MiB)."""
    head_deadline = None if idle is None else time.monotonic() + idle
    (n,) = struct.unpack(">I", _recv_exact(sock, 4, head_deadline))
    if n > limit:
        raise _Refused("ExecutorFrameError", f"{what} of {n} bytes (at most {limit})")
    deadline = None if idle is None else time.monotonic() + FRAME_TIMEOUT + n / (1 << 20)
    return _recv_exact(sock, n, deadline)


_STRUCTURE = re.compile(rb'[\[\]{}"\\]')


def _json_depth_ok(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``data``'s brackets nest at most ``limit`` deep (strings skipped), found
    without recursion, before the JSON parser (which recurses) sees it."""
    depth, in_string, escaped, last_backslash = 0, False, False, -2
    for m in _STRUCTURE.finditer(data):
        c = m.group()
        if in_string:
            if escaped:
                escaped = False
                # An escaped character is one byte after the backslash (\uXXXX has no
                # structural bytes after its first).
                if m.start() == last_backslash + 1:
                    continue
            if c == b"\\":
                escaped, last_backslash = True, m.start()
            elif c == b'"':
                in_string = False
            continue
        if c == b'"':
            in_string = True
        elif c in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return False
        elif c in (b"]", b"}"):
            depth -= 1
    return True


def _parse_json(data: bytes) -> dict:
    if not _json_depth_ok(data):
        raise _Refused("ExecutorFrameError", f"a JSON frame nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise _Refused("ExecutorFrameError", f"a frame that is not JSON ({str(e)[:200]})") from None
    if not isinstance(obj, dict):
        raise _Refused("ExecutorFrameError", "a frame that is not a JSON object")
    return obj


def _recv_json(sock: socket.socket, limit: int = MAX_FRAME, idle: float | None = None) -> dict:
    return _parse_json(_recv_frame(sock, limit, idle, "a JSON frame"))


def _hello() -> dict:
    return {"op": "hello", "backline": _version(), "protocol": PROTOCOL}


def _version_mismatch(theirs: dict, who: str) -> str | None:
    mine = (_version(), PROTOCOL)
    got = (theirs.get("backline"), theirs.get("protocol"))
    if got != mine:
        return (
            f"{who} is backline {str(got[0])[:80]} (executor protocol {str(got[1])[:20]}); this is "
            f"backline {mine[0]} (protocol {mine[1]}): run the same version on both machines"
        )
    return None


# ---------------------------------------------------------------- the executor process


def _error_answer(e: BaseException) -> dict:
    kind = e.kind if isinstance(e, _Refused) else type(e).__name__
    return {"ok": False, "kind": kind, "error": str(e)[:4000]}


def _number(req: dict, key: str, lo: float, hi: float) -> float:
    v = req[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= float(v) <= hi:
        raise ValueError(f"{key}={str(v)[:40]} is out of range {lo:g} ..= {hi:g}")
    return float(v)


def _run(conn: socket.socket, req: dict) -> None:
    from . import _native

    program = _recv_frame(conn, MAX_FRAME, IDLE_TIMEOUT, "a program")
    try:
        shots = check_int("shots", req["shots"], (0, (1 << 64) - 1))
        seed = check_int("seed", req["seed"], SEED)
        # The program's header counts and the shots against the program limits before the
        # program is decoded or anything is sized from them.
        check_program_header(program, shots)
        compiled = _native.Compiled.from_bytes(program)
        board = None
        if req.get("board") is not None:
            b = req["board"]
            board = _native.FpgaBoard(str(b["bridge"]), str(b["peer"]),
                                      check_int("payload_bytes", b["payload_bytes"], PAYLOAD_BYTES),
                                      _number(b, "reply_timeout", 0.0, 86400.0),
                                      _number(b, "setup_timeout", 0.0, 86400.0),
                                      b.get("reply_timeout_us"))
        endpoints = []
        for e in req.get("endpoints", []):
            t, key, peer, pb, reply, setup = e
            endpoints.append((str(t), str(key), str(peer),
                              check_int("payload_bytes", pb, PAYLOAD_BYTES),
                              _number({"reply_timeout": reply}, "reply_timeout", 0.0, 86400.0),
                              _number({"setup_timeout": setup}, "setup_timeout", 0.0, 86400.0)))
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
        fns = []
        for f in req["fns"]:
            i, spec = f
            fns.append((check_int("fns decoder_id", i, DECODER_ID), str(spec)))
        payload_bytes = check_int("payload_bytes", req["payload_bytes"], PAYLOAD_BYTES,
                                  "the largest slot's capacity, as backline serve --payload-bytes")
        env = req.get("environment", {})
        if not isinstance(env, dict):
            raise ValueError("environment: a JSON object")
        os.environ.update({str(k): str(v) for k, v in env.items()})
        server = _native.Server(str(req["transport"]), str(req["address"]), str(req["key"]), fns,
                                payload_bytes, None,
                                _number(req, "reply_timeout", 0.0, 86400.0),
                                _number(req, "setup_timeout", 0.0, 86400.0))
    except Exception as e:  # noqa: BLE001
        _send(conn, _error_answer(e))
        return
    try:
        _send(conn, {"ok": True, "peer": server.peer})
        # Served until the client closes the connection (or says stop).
        try:
            while True:
                conn.settimeout(None)
                msg = _recv_json(conn, MAX_REQUEST)
                if msg.get("op") == "stop":
                    break
        except (_Closed, _Refused, OSError, ValueError):
            pass
    finally:
        server.stop()


class _Stats:
    """What the executor counted (printed at shutdown)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.c = dict(admitted=0, not_admitted=0, busy=0, oversized=0, malformed=0,
                      timed_out=0, full=0, failed=0)
        self.logged: set[str] = set()

    def add(self, what: str) -> None:
        with self.lock:
            self.c[what] += 1

    def log_once(self, source: str, msg: str) -> None:
        """A line on stderr for the first refusal of each source (1,024 at most)."""
        with self.lock:
            if source in self.logged or len(self.logged) >= 1024:
                return
            self.logged.add(source)
        print(f"backline executor: {msg} from {source} (further ones from there are counted, "
              "not logged)", file=sys.stderr, flush=True)

    def line(self) -> str:
        c = self.c
        return (f"{c['admitted']} connections served; refused: {c['not_admitted']} not admitted, "
                f"{c['busy']} busy, {c['full']} past the pending bound, {c['oversized']} oversized, "
                f"{c['malformed']} malformed, {c['timed_out']} timed out; {c['failed']} failed")


def _try_send(sock: socket.socket, obj: dict) -> None:
    """An error frame, best effort, without blocking (the peer may not read)."""
    try:
        sock.setblocking(False)
        _send(sock, obj)
    except (OSError, ValueError):
        pass


def _close_refused(sock: socket.socket) -> None:
    """Closes a refused connection so that its error frame is not lost: bytes the peer already
    sent and nobody read would make the close a reset, which can discard the frame; what is
    waiting (64 KiB at most, without blocking) is read and dropped first."""
    try:
        sock.setblocking(False)
        sock.shutdown(socket.SHUT_WR)
        for _ in range(16):
            if not sock.recv(4096):
                break
    except OSError:
        pass
    sock.close()


def _worker(conn: socket.socket, hello: dict, slots: threading.BoundedSemaphore, stats: _Stats) -> None:
    """An admitted connection after its hello: the answer, then one request."""
    try:
        with conn:
            try:
                conn.setblocking(True)
                mismatch = _version_mismatch(hello, "the caller")
                me = {"ok": mismatch is None, "backline": _version(), "protocol": PROTOCOL,
                      "host": socket.gethostname(), "pid": os.getpid()}
                if mismatch:
                    me.update(kind="ExecutorVersionError", error=mismatch)
                _send(conn, me)
                if mismatch:
                    return
                req = _recv_json(conn, MAX_REQUEST, IDLE_TIMEOUT)
                op = req.get("op")
                if op == "run":
                    _run(conn, req)
                elif op == "serve":
                    _serve(conn, req)
                else:
                    _send(conn, {"ok": False, "kind": "ExecutorError", "error": f"unknown op {str(op)[:80]!r}"})
            except _Refused as e:
                stats.add("oversized" if "bytes (at most" in str(e) else "malformed")
                _try_send(conn, _error_answer(e))
            except TimeoutError as e:
                stats.add("timed_out")
                _try_send(conn, {"ok": False, "kind": "ExecutorTimeoutError", "error": str(e)})
            except (_Closed, OSError):
                pass
            except BaseException as e:  # noqa: BLE001 — a worker never ends with a traceback
                stats.add("failed")
                _try_send(conn, {"ok": False, "kind": "ExecutorError",
                                 "error": f"internal error: {type(e).__name__}: {str(e)[:400]}"})
    finally:
        slots.release()


class _Pending:
    """A connection whose hello is being read (by the selector, no thread)."""

    __slots__ = ("sock", "source", "buf", "need", "deadline")

    def __init__(self, sock: socket.socket, source: str):
        self.sock, self.source = sock, source
        self.buf, self.need = b"", None
        self.deadline = time.monotonic() + HELLO_TIMEOUT


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def serve_forever(bind: str, on_ready=None, stop: threading.Event | None = None, *,
                  token_file=None, insecure: bool = False,
                  max_connections: int = DEFAULT_MAX_CONNECTIONS, stats: _Stats | None = None) -> None:
    """Listens on ``bind`` (``HOST:PORT``, port 0 for any) and serves connections until
    ``stop`` is set; ``on_ready(address)`` once listening.

    ``token_file``: only controllers that prove its key in their hello are served. Without
    one, a ``bind`` that is not loopback is refused (``ValueError``) unless ``insecure``.
    Hellos are read by one selector (no thread per connection, at most :data:`MAX_PENDING`
    at once, :data:`MAX_HELLO` bytes and :data:`HELLO_TIMEOUT` seconds each); an admitted
    connection gets one of ``max_connections`` workers, or ``ExecutorBusyError`` at once.
    Nothing a client sends ends this loop."""
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--bind {bind!r}: expected HOST:PORT")
    check_int("--max-connections", max_connections, (1, 4096))
    key = read_key(token_file) if token_file is not None else None
    if key is None and not insecure and not is_loopback(host):
        raise ValueError(
            f"--bind {bind}: not a loopback address, and no key: anyone who reaches this port "
            "could run programs and start coprocessors here. Give --token-file FILE (`backline "
            "token FILE` writes one; controllers pass token_file=), or --insecure to serve "
            "everyone who can reach it (only on a closed network)"
        )
    gate = _Gate(key) if key is not None else None
    stats = stats or _Stats()
    slots = threading.BoundedSemaphore(max_connections)
    srv = socket.create_server((host.strip("[]"), int(port)), reuse_port=False,
                               backlog=min(socket.SOMAXCONN, 1024))
    srv.setblocking(False)
    addr = srv.getsockname()
    if on_ready:
        on_ready(f"{addr[0]}:{addr[1]}")
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ, None)
    pending: dict[int, _Pending] = {}

    def drop(p: _Pending, answer: dict | None = None) -> None:
        pending.pop(p.sock.fileno(), None)
        try:
            sel.unregister(p.sock)
        except (KeyError, ValueError):
            pass
        if answer is not None:
            _try_send(p.sock, answer)
            _close_refused(p.sock)
        else:
            p.sock.close()

    def admit(p: _Pending, hello: dict) -> None:
        pending.pop(p.sock.fileno(), None)
        sel.unregister(p.sock)
        if gate is not None:
            why = gate.judge(hello)
            if why is not None:
                stats.add("not_admitted")
                stats.log_once(p.source, f"not admitted: {why}")
                # Nothing about this executor (version, host, pid) to an unkeyed caller.
                _try_send(p.sock, {"ok": False, "kind": "NotAdmittedError",
                                   "error": "not admitted: this executor serves only callers "
                                            "that prove its key (token_file)"})
                _close_refused(p.sock)
                return
        if not slots.acquire(blocking=False):
            stats.add("busy")
            _try_send(p.sock, {"ok": False, "kind": "ExecutorBusyError",
                               "error": f"the executor serves {max_connections} connections at "
                                        "once (--max-connections); try again later"})
            p.sock.close()
            return
        try:
            threading.Thread(target=_worker, args=(p.sock, hello, slots, stats), daemon=True,
                             name="backline-executor").start()
        except BaseException:  # noqa: BLE001 — no thread to be had: refused, not fatal
            slots.release()
            stats.add("busy")
            _try_send(p.sock, {"ok": False, "kind": "ExecutorBusyError",
                               "error": "the executor cannot start a worker now; try again later"})
            p.sock.close()
            return
        stats.add("admitted")

    def readable(p: _Pending) -> None:
        want = 4 if p.need is None else p.need
        try:
            chunk = p.sock.recv(want - len(p.buf))
        except BlockingIOError:
            return
        except OSError:
            drop(p)
            return
        if not chunk:
            drop(p)
            return
        p.buf += chunk
        if len(p.buf) < want:
            return
        if p.need is None:
            (n,) = struct.unpack(">I", p.buf)
            if n > MAX_HELLO:
                stats.add("oversized")
                stats.log_once(p.source, f"a hello of {n} bytes refused")
                drop(p, {"ok": False, "kind": "ExecutorFrameError",
                         "error": f"a hello of {n} bytes (at most {MAX_HELLO}); refused unread"})
                return
            p.need, p.buf = n, b""
            if n:
                return
        try:
            hello = _parse_json(p.buf)
            if hello.get("op") != "hello":
                raise _Refused("ExecutorVersionError", "the first message must be the hello")
        except _Refused as e:
            stats.add("malformed")
            drop(p, _error_answer(e))
            return
        admit(p, hello)

    with srv, sel:
        next_sweep = time.monotonic()
        while stop is None or not stop.is_set():
            try:
                for k, _ in sel.select(timeout=0.2):
                    if k.data is None:
                        for _ in range(64):
                            try:
                                conn, peer = srv.accept()
                            except (BlockingIOError, InterruptedError):
                                break
                            except OSError:
                                # Out of descriptors or memory: try again at the next event.
                                stats.add("full")
                                break
                            if len(pending) >= MAX_PENDING:
                                stats.add("full")
                                conn.close()
                                continue
                            conn.setblocking(False)
                            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                            p = _Pending(conn, str(peer[0]))
                            pending[conn.fileno()] = p
                            sel.register(conn, selectors.EVENT_READ, p)
                    else:
                        readable(k.data)
                now = time.monotonic()
                if now >= next_sweep:
                    next_sweep = now + 0.5
                    for p in [p for p in pending.values() if p.deadline < now]:
                        stats.add("timed_out")
                        drop(p, {"ok": False, "kind": "ExecutorTimeoutError",
                                 "error": f"no complete hello within {HELLO_TIMEOUT:g} s"})
            except Exception as e:  # noqa: BLE001 — nothing a client does ends the loop
                stats.add("failed")
                print(f"backline executor: {type(e).__name__}: {str(e)[:400]} (serving on)",
                      file=sys.stderr, flush=True)
                time.sleep(0.05)
        for p in list(pending.values()):
            drop(p)


def main(argv=None) -> int:
    """``python -m backline executor``."""
    p = argparse.ArgumentParser(
        prog="python -m backline executor",
        description="An executor: runs remote controllers and coprocessors shipped to it "
                    "(Controller(remote=True), Coprocessor(remote=True)). Prints `ready "
                    "HOST:PORT` once it listens; stops on SIGINT/SIGTERM.")
    p.add_argument("--bind", default="127.0.0.1:0",
                   help="HOST:PORT to listen on (default 127.0.0.1:0, any port); an address "
                        "other than loopback needs --token-file (or --insecure)")
    p.add_argument("--token-file", default=None,
                   help="serve only callers that prove this pre-shared key in their hello "
                        "(`backline token FILE` writes one; default BACKLINE_TOKEN_FILE)")
    p.add_argument("--insecure", action="store_true",
                   help="allow a non-loopback --bind without a key: anyone who reaches the port "
                        "can run programs and start coprocessors here, as this user")
    p.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS,
                   help=f"connections served at once, 1 ..= 4096 (default {DEFAULT_MAX_CONNECTIONS}); "
                        "one more is refused at once (ExecutorBusyError) and counted")
    p.add_argument("--exit-with-parent", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.exit_with_parent:
        from ._process import exit_with_parent as _exit_with_parent

        _exit_with_parent()
    token_file = token_file_choice(a.token_file, "python -m backline executor")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    def ready(addr: str) -> None:
        print(f"ready {addr}", flush=True)
        keyed = f"keyed ({token_file})" if token_file else ("UNKEYED (--insecure)" if a.insecure else "unkeyed, loopback")
        print(f"backline executor {_version()} (protocol {PROTOCOL}) at {addr}, {keyed}, "
              f"{a.max_connections} connections at once; Ctrl-C to stop", file=sys.stderr, flush=True)

    stats = _Stats()
    try:
        serve_forever(a.bind, ready, stop, token_file=token_file, insecure=a.insecure,
                      max_connections=a.max_connections, stats=stats)
    except (OSError, ValueError) as e:
        print(f"python -m backline executor: {e}", file=sys.stderr)
        return 2
    print(f"backline executor: stopped; {stats.line()}", file=sys.stderr, flush=True)
    return 0


# ---------------------------------------------------------------- the client


class Executor:
    """A connection to an executor (see the module docs)."""

    def __init__(self, address: str, proc: subprocess.Popen | None = None, token_file=None):
        self.address = address
        self.proc = proc
        #: The token file whose key this client proves (``BACKLINE_TOKEN_FILE`` when None).
        self.token_file = token_file_choice(token_file, "backline.executor")
        self._key = read_key(self.token_file) if self.token_file else None

    # ---- reaching one ----

    @classmethod
    def spawn(cls, python: str | None = None, timeout: float = 60.0, token_file=None) -> Executor:
        """Starts an executor on this machine (``python -m backline executor --bind
        127.0.0.1:0``); it exits with this process, or with :meth:`close`. With a
        ``token_file`` (or ``BACKLINE_TOKEN_FILE``) it is keyed, and this client proves it."""
        from .errors import ExecutorUnreachableError

        token_file = token_file_choice(token_file, "backline.executor")
        if token_file:
            read_key(token_file)
        cmd = [python or sys.executable, "-m", "backline", "executor", "--bind", "127.0.0.1:0",
               "--exit-with-parent"]
        if token_file:
            cmd += ["--token-file", os.fspath(token_file)]
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
        return cls(line.split(None, 1)[1].strip(), proc, token_file)

    @classmethod
    def connect(cls, address: str, timeout: float = 10.0, token_file=None) -> Executor:
        """An executor already running at ``address`` (``HOST:PORT``), checked by a hello;
        ``token_file`` (default ``BACKLINE_TOKEN_FILE``): the key to prove to a keyed one."""
        ex = cls(address, token_file=token_file)
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
            hello = _hello()
            _send(sock, _prove(self._key, hello) if self._key is not None else hello)
            answer = _recv_json(sock, MAX_REQUEST)
        except (_Closed, _Refused, OSError, ValueError) as e:
            sock.close()
            raise ExecutorUnreachableError(
                f"the executor at {self.address} did not answer the hello within {timeout:g} s ({e or 'closed'})"
            ) from None
        if not answer.get("ok"):
            sock.close()
            if answer.get("kind") == "NotAdmittedError":
                from .errors import NotAdmittedError

                raise NotAdmittedError(
                    f"the executor at {self.address} did not admit this caller "
                    f"({'with the key of ' + str(self.token_file) if self._key is not None else 'no key proof sent'}): "
                    f"{answer.get('error')}")
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
            except (_Closed, _Refused, OSError, ValueError) as e:
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
            answer = _recv_json(sock, MAX_REQUEST)
        except (_Closed, _Refused, OSError, ValueError) as e:
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
