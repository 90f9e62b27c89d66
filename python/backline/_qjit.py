"""``qp.qjit``: a QNode compiled once and run many times.

``@qp.qjit(capture=True)`` over a QNode on a backline placement (``qp.Backline``) compiles
each distinct circuit the QNode records once, with backline's own compiler (the Rust passes:
QEC lowering, noise, decodes to transport rounds, the VM program), and keeps the program:
later calls record the QNode (cheap) and run the kept program shot by shot on the stabilizer
VM, its decode rounds through the placement's transport, without compiling again. The
samples are those of the QNode without ``qjit`` for the same seed (the program and the shot
seeds are the same).

Over any other device, ``qp.qjit`` is PennyLane-Catalyst's ``qjit`` (installed with
``pip install pennylane-catalyst==0.15.0``, the release of PennyLane 0.45).

Why backline's placements are not compiled by Catalyst itself: Catalyst runs a QNode's
operations through a device's C++ runtime interface (``Catalyst::Runtime::QuantumDevice``,
loaded from the shared library a device's ``get_c_interface()`` names) one gate and one
measurement at a time, after its own compilation of the program. backline's implicit QEC
rewrites the whole program before anything runs (every logical gate becomes a Steane-block
gate followed by a syndrome round and two decode rounds; measurements become decoded block
measurements), and its explicit decodes and runtime calls are operators that Catalyst's
capture has no primitive for. Hosting a placement behind ``QuantumDevice`` would mean
running backline's compiler gate by gate inside the device and giving up its decode
operators; ``catalyst.qjit`` over a ``backline.qubit`` device therefore raises Catalyst's
``CompileError: The backline.qubit device does not provide C interface for compilation`` —
``qp.qjit(..., backend="catalyst")`` raises it as :class:`QjitError` with this explanation.
"""

from __future__ import annotations

import functools

from .errors import BacklineError


class QjitError(BacklineError, RuntimeError):
    """A QNode that ``qp.qjit`` cannot compile: the message says why (Catalyst missing, a
    placement Catalyst cannot host, what Catalyst said)."""


def _is_backline(qnode) -> bool:
    from .device import Backline

    return isinstance(getattr(qnode, "device", None), Backline)


class CompiledQNode:
    """A QNode on a backline placement whose circuits are compiled once each (see the module
    docs); call it like the QNode."""

    def __init__(self, qnode, capture: bool | None = None):
        self.qnode = qnode
        self.capture = capture
        self.device = qnode.device
        functools.update_wrapper(self, qnode)

    def __call__(self, *args, **kwargs):
        with self.device.program_cache():
            return self.qnode(*args, **kwargs)

    @property
    def compiled_programs(self) -> int:
        """How many programs the placement has compiled for it so far."""
        return self.device.compiled_programs

    def __repr__(self):
        return f"qjit({self.qnode!r})"


def qjit(fn=None, *, capture: bool | None = None, backend: str | None = None, **options):
    """Compiles a QNode once and runs it many times: on a backline placement with backline's
    compiler (``backend=None`` or ``"backline"``), elsewhere with PennyLane-Catalyst
    (``backend="catalyst"``, the default for other devices). ``capture`` is accepted as
    Catalyst's (program capture); backline traces the QNode itself. Usable as ``@qjit``,
    ``@qjit(capture=True)`` or ``qjit(qnode)``."""
    if fn is None:
        return functools.partial(qjit, capture=capture, backend=backend, **options)
    if backend not in (None, "backline", "catalyst"):
        raise QjitError(f"qjit(backend={backend!r}): 'backline' or 'catalyst'")
    if _is_backline(fn) and backend != "catalyst":
        if options:
            raise QjitError(
                f"qjit over a backline placement takes no Catalyst options ({sorted(options)})"
            )
        return CompiledQNode(fn, capture)
    try:
        import catalyst
    except ImportError as e:
        raise QjitError(
            f"qjit over {getattr(fn, 'device', fn)!r} needs PennyLane-Catalyst "
            f"(pip install pennylane-catalyst==0.15.0): {e}"
        ) from None
    compiled = catalyst.qjit(fn, capture=capture, **options) if capture is not None else catalyst.qjit(fn, **options)
    if not _is_backline(fn):
        return compiled

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return compiled(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 — Catalyst's own exception classes
            raise QjitError(
                f"Catalyst cannot compile a QNode on a backline placement ({type(e).__name__}: "
                f"{e}); backline's placements rewrite the whole program for QEC and decode "
                "rounds, which Catalyst's gate-by-gate device interface cannot host — use "
                "qjit(backend='backline') (the default)"
            ) from e

    return run
