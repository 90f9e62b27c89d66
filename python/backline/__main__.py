"""``python -m backline serve``: a coprocessor executor in its own process;
``python -m backline executor``: an executor of remote nodes (``backline.executor``).

Serves coprocessor functions over shm, udp (or rdma, when the runtime has it) until
SIGINT/SIGTERM; prints ``ready <peer>`` on stdout once it accepts controllers (what a
controller gives as ``Endpoint(address=<peer>)``), like ``backline serve``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from ._process import exit_with_parent as _exit_with_parent


def serve(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m backline serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transport", default="shm", help="shm, udp or rdma (default shm)")
    p.add_argument("--name", default="backline", help="shm segment name (/dev/shm/backline-NAME)")
    p.add_argument("--bind", default="127.0.0.1:7878", help="udp/rdma address to bind (port 0: any)")
    p.add_argument("--fn", action="append", default=[], metavar="ID=SPEC",
                   help="a coprocessor function per decoder id: steane, echo, LIB:SYMBOL, "
                        "bposd:CODE[:SETTINGS], or on a GPU gpu:echo, gpu:steane, gpu:bposd:..., "
                        "gpu:FILE.cu:FUNCTION (repeatable; default 0=steane 1=steane)")
    p.add_argument("--payload-bytes", type=int, default=48)
    p.add_argument("--sessions", type=int, default=None, help="exit after this many controller sessions")
    p.add_argument("--rdma-device", default=None, help="RDMA device (rdma)")
    p.add_argument("--gid-index", type=int, default=None, help="GID index (rdma)")
    p.add_argument("--token-file", default=None,
                   help="udp/rdma: answer only controllers that prove this pre-shared key "
                        "(backline token FILE writes one; default BACKLINE_TOKEN_FILE)")
    p.add_argument("--gpu-backend", default=None, choices=["auto", "cuda", "hip", "emu"],
                   help="gpu: functions: the runtime (default BACKLINE_GPU_BACKEND, else auto)")
    p.add_argument("--gpu-device", type=int, default=None, help="gpu: functions: the device number")
    p.add_argument("--exit-with-parent", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.exit_with_parent:
        _exit_with_parent()
    from . import _native
    from .errors import BacklineError

    from .limits import DECODER_ID, GID_INDEX, PAYLOAD_BYTES, SESSIONS, check_int

    # The ranges `backline serve` has (backline.limits names where each comes from): a value
    # outside is refused here, never clamped or wrapped on its way into the runtime.
    try:
        check_int("--payload-bytes", a.payload_bytes, PAYLOAD_BYTES,
                  "the largest slot's capacity, as backline serve")
        if a.sessions is not None:
            check_int("--sessions", a.sessions, SESSIONS)
        if a.gid_index is not None:
            check_int("--gid-index", a.gid_index, GID_INDEX)
    except ValueError as e:
        p.error(str(e))
    fns = []
    for f in a.fn or ["0=steane", "1=steane"]:
        i, sep, spec = f.partition("=")
        if not sep or not i.strip().isdigit():
            p.error(f"--fn {f!r}: expected ID=SPEC, e.g. 0=steane")
        try:
            fns.append((check_int("--fn ID", int(i), DECODER_ID, "a 32-bit decoder_id"), spec))
        except ValueError as e:
            p.error(str(e))
    if a.transport == "memcpy":
        p.error("memcpy keeps controller and coprocessor in one process")
    if a.transport == "rdma" and (a.rdma_device or a.gid_index is not None):
        # The hook for the rdma transport's device and GID settings.
        import os

        if a.rdma_device:
            os.environ["BACKLINE_RDMA_DEVICE"] = a.rdma_device
        if a.gid_index is not None:
            os.environ["BACKLINE_RDMA_GID_INDEX"] = str(a.gid_index)
    import os

    if a.token_file:
        if a.transport not in ("udp", "rdma"):
            p.error(f"--token-file admits controllers of udp and rdma, not {a.transport}")
        os.environ["BACKLINE_TOKEN_FILE"] = a.token_file
    if a.gpu_backend:
        os.environ["BACKLINE_GPU_BACKEND"] = a.gpu_backend
    if a.gpu_device is not None:
        os.environ["BACKLINE_GPU_DEVICE"] = str(a.gpu_device)
    address = a.name if a.transport == "shm" else a.bind
    stop = []
    # Both signals stop the loop below; set before `ready` is printed, so a signal sent as
    # soon as a caller reads it still ends the executor cleanly (segment removed, exit 0).
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    try:
        s = _native.Server(a.transport, address, "serve", fns, a.payload_bytes, a.sessions)
    except BacklineError as e:
        print(f"python -m backline serve: {e}", file=sys.stderr)
        return 2
    print(f"ready {s.peer}", flush=True)
    funcs = " ".join(f"{i}={n}" for i, n in s.functions)
    print(f"backline serve: {a.transport} at {s.peer}, functions {funcs}; Ctrl-C to stop", file=sys.stderr)
    while not stop and not s.finished():
        time.sleep(0.02)
    sessions, rounds, failed = s.stats()
    s.stop()
    print(f"backline serve: stopped after {sessions} sessions, {rounds} rounds "
          f"({failed} answered with an error status)", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m backline serve|executor [options]   (COMMAND --help for the options)\n"
              "  serve     a coprocessor executor serving the functions it is given\n"
              "  executor  an executor for remote nodes: runs the controllers and coprocessors shipped to it")
        return 0 if argv else 2
    if argv[0] == "serve":
        return serve(argv[1:])
    if argv[0] == "executor":
        from .executor import main as executor

        return executor(argv[1:])
    print(f"python -m backline: unknown command {argv[0]!r} (known: serve, executor)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
