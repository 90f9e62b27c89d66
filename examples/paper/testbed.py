"""The testbed values the reference's listings leave to the reader's machine, in one place.

Every listing in this folder is the reference's, with ``import pennylane as qp`` changed to
``import backline.qp as qp``; what it does not say — where the pre-compiled library is, which
seed to sample with, how the remote nodes are reached — comes from here, each value
overridable by an environment variable:

| value | variable | default |
|---|---|---|
| ``LIB`` | ``BACKLINE_PAPER_LIB`` | ``libsteane_decoder.so``, built from ``host/ffi/examples/c/steane_decoder.c`` |
| ``SEED`` | ``BACKLINE_PAPER_SEED`` | 1 |
| ``FABRIC`` (the remote demos' transport) | ``BACKLINE_PAPER_TRANSPORT`` | ``rdma`` (``udp`` where there is no RDMA device) |
| ``ENDPOINT`` (a remote coprocessor's address) | ``BACKLINE_PAPER_ENDPOINT`` | ``127.0.0.1:0`` (any port of this host) |
| ``CONTROLLER_EXECUTOR``, ``COPROCESSOR_EXECUTOR`` | ``BACKLINE_PAPER_CONTROLLER_EXECUTOR``, ``…_COPROCESSOR_EXECUTOR`` | ``{}``: an executor started on this machine; ``HOST:PORT``: one running there |
| ``GPU`` (the remote GPU's backend) | ``BACKLINE_GPU_BACKEND`` | ``auto``; ``emu`` runs the kernels on CPU threads |
| ``BRIDGE`` (how the simulated FPGA board reaches its coprocessor) | ``BACKLINE_PAPER_BRIDGE`` | ``udp`` |
| ``PLATFORM`` (where Triton decoders compile for) | ``BACKLINE_PAPER_PLATFORM`` | ``hip:gfx90a:64``, the reference's |
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lib() -> str:
    if os.environ.get("BACKLINE_PAPER_LIB"):
        return os.environ["BACKLINE_PAPER_LIB"]
    src = ROOT / "host/ffi/examples/c/steane_decoder.c"
    out = ROOT / "target/examples/libsteane_decoder.so"
    if not os.access(ROOT, os.W_OK) and not out.exists():
        out = Path(tempfile.gettempdir()) / "backline-examples" / "libsteane_decoder.so"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"
        subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(src)], check=True)
    return str(out)


def _executor(var: str) -> dict:
    address = os.environ.get(var)
    return {"address": address} if address else {}


LIB = _lib()
SEED = int(os.environ.get("BACKLINE_PAPER_SEED", "1"))
FABRIC = os.environ.get("BACKLINE_PAPER_TRANSPORT", "rdma")
ENDPOINT = os.environ.get("BACKLINE_PAPER_ENDPOINT", "127.0.0.1:0")
CONTROLLER_EXECUTOR = _executor("BACKLINE_PAPER_CONTROLLER_EXECUTOR")
COPROCESSOR_EXECUTOR = _executor("BACKLINE_PAPER_COPROCESSOR_EXECUTOR")
GPU = os.environ.get("BACKLINE_GPU_BACKEND", "auto")
BRIDGE = os.environ.get("BACKLINE_PAPER_BRIDGE", "udp")
PLATFORM = os.environ.get("BACKLINE_PAPER_PLATFORM", "hip:gfx90a:64")
