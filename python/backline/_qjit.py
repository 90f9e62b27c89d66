"""``qp.qjit``: PennyLane-Catalyst's ``qjit``, with ``backline.qubit`` as a Catalyst device.

``@qp.qjit(capture=True)`` is ``catalyst.qjit`` (pennylane-catalyst 0.15.0, the release of
PennyLane 0.45: ``pip install 'backline[catalyst]'``). Over a backline placement, Catalyst
compiles the QNode and its compiled program drives ``backline.qubit`` through Catalyst's
runtime device interface (``Backline.get_c_interface()``: the factory in backline's native
module), one gate and one measurement at a time, in this process. With
``qec_code="steane"`` every wire is a Steane block: each gate is applied transversally and
followed by a correction cycle whose two decodes are real rounds through the placement's
transport to its coprocessor, and a measurement is a decoded block measurement — the same
programs, in the same order, as without ``qjit``, so the samples are the same for the same
seed. The coprocessors run where the placement puts them (this process, an executor process,
another host); a remote *controller*'s executor is not used under Catalyst, whose compiled
program is the controller.

What Catalyst cannot host runs on backline's own compiler instead, with a
:class:`QjitFallbackWarning` saying why: a placement whose controller is an FPGA board (the
whole program runs on the board), and programs with backline's explicit operators
(``qp.backline.decode``, ``qp.runtime_call``, ``apply_correction``): their results are values
the program branches on, and Catalyst 0.15's device interface returns values only from
measurements (docs/python.md, "Under Catalyst").

``qp.compile_once`` is backline's own compile-once path: each distinct circuit compiled once by
backline's compiler (the Rust passes) and the program reused, without Catalyst.
"""

from __future__ import annotations

import functools
import os
import warnings

from .errors import BacklineError

#: The Catalyst release ``qp.qjit`` runs with (the one of PennyLane 0.45).
CATALYST_VERSION = "0.15.0"

#: ``qp.qjit``'s backend where a call names none: ``catalyst`` (unset) or ``backline``, for
#: machines where Catalyst cannot run or compiles too slowly (an emulated guest).
BACKEND_ENV = "BACKLINE_QJIT_BACKEND"


class QjitError(BacklineError, RuntimeError):
    """A QNode that ``qp.qjit`` cannot compile: the message says why (Catalyst missing or of
    another release, a placement Catalyst cannot host, what Catalyst said)."""


class QjitFallbackWarning(UserWarning):
    """``qp.qjit`` compiled a QNode with backline's compiler, not Catalyst: the message says
    what Catalyst cannot host."""


def _is_backline(qnode) -> bool:
    from .device import Backline

    return isinstance(getattr(qnode, "device", None), Backline)


def _catalyst():
    """The ``catalyst`` module of the pinned release; QjitError if it is missing or another."""
    try:
        import catalyst
    except ImportError as e:
        raise QjitError(
            f"qp.qjit is PennyLane-Catalyst's qjit: pip install 'backline[catalyst]' (pennylane-catalyst=="
            f"{CATALYST_VERSION}) — {e}; backline's own compile-once path without Catalyst is "
            "qp.compile_once"
        ) from None
    version = getattr(catalyst, "__version__", "unknown")
    if version != CATALYST_VERSION:
        raise QjitError(
            f"pennylane-catalyst {version} is installed; backline.qubit's Catalyst device is built "
            f"for {CATALYST_VERSION} (pip install 'backline[catalyst]')"
        )
    return catalyst


class CompiledQNode:
    """A QNode on a backline placement whose circuits are compiled once each by backline's
    compiler (``qp.compile_once``); call it like the QNode."""

    backend = "backline"

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
        return f"compile_once({self.qnode!r})"


def compile_once(fn=None, *, capture: bool | None = None):
    """Compiles a QNode on a backline placement once per distinct circuit with backline's
    compiler and runs the kept program on later calls (no Catalyst). ``capture`` is accepted
    as Catalyst's and ignored. Usable as ``@compile_once``, ``@compile_once(capture=True)`` or
    ``compile_once(qnode)``."""
    if fn is None:
        return functools.partial(compile_once, capture=capture)
    if not _is_backline(fn):
        raise QjitError(f"compile_once compiles QNodes on a backline placement, not {getattr(fn, 'device', fn)!r}")
    return CompiledQNode(fn, capture)


def _why_not_catalyst(qnode, args, kwargs) -> str | None:
    """What in this QNode Catalyst cannot host, or None."""
    import pennylane as qml

    dev = qnode.device
    if dev.controller.hardware == "fpga":
        return ("its controller is an FPGA board, which runs the whole program itself; Catalyst "
                "runs a compiled program in this process, gate by gate")
    tape = qml.workflow.construct_tape(qnode)(*args, **kwargs)
    ours = sorted({type(op).__name__ for op in tape.operations
                   if type(op).__module__.startswith("backline.")})
    if ours:
        return (f"it uses backline's explicit operators ({', '.join(ours)}), whose results the "
                "program branches on; Catalyst 0.15's device interface returns values only "
                "from measurements")
    return None


class CatalystQNode:
    """A QNode on a backline placement under ``catalyst.qjit`` (see the module docs); call it
    like the QNode. Each call numbers its shots from 0 with a seed drawn from the device's
    seed, as an execution without ``qjit`` does."""

    backend = "catalyst"

    def __init__(self, qnode, catalyst, capture: bool | None, options: dict):
        self.qnode = qnode
        self.device = qnode.device
        self.capture = capture
        self._catalyst = catalyst
        self._options = options
        self._compiled = None
        self._fallback: CompiledQNode | None = None
        #: Why Catalyst does not compile this QNode (None while it does).
        self.fallback_reason: str | None = None
        functools.update_wrapper(self, qnode)

    def _decide(self, args, kwargs):
        why = _why_not_catalyst(self.qnode, args, kwargs)
        if why is not None:
            self.fallback_reason = why
            self._fallback = CompiledQNode(self.qnode, self.capture)
            warnings.warn(f"qp.qjit: Catalyst cannot compile {self.qnode!r}: {why}; compiled with "
                          "backline's compiler instead (qp.compile_once)", QjitFallbackWarning, stacklevel=3)
            return
        kw = dict(self._options)
        if self.capture is not None:
            kw["capture"] = self.capture
        self._compiled = self._catalyst.qjit(self.qnode, **kw)

    def __call__(self, *args, **kwargs):
        with warnings.catch_warnings():
            # Catalyst's capture path names the observable transforms it leaves out (it
            # compiles at qjit() for a function without arguments, else at the first call);
            # under Catalyst this device samples, counts and gives probabilities, no observables.
            warnings.filterwarnings("ignore", message="The following device-preprocessing transforms",
                                    category=UserWarning)
            if self._compiled is None and self._fallback is None:
                self._decide(args, kwargs)
            if self._fallback is not None:
                return self._fallback(*args, **kwargs)
            from . import _native
            from .limits import check_samples, program_limits

            dev = self.device
            # The program limits, as a run without qjit checks them (device.py
            # _execute_one), before Catalyst allocates anything for the shots: an absurd count
            # is a ValueError naming the limit, not a signal in the compiled program.
            shots = getattr(getattr(self.qnode, "shots", None), "total_shots", None)
            if shots is not None:
                lim = program_limits()
                lim.check("shots", shots)
                if dev.wires is not None:
                    lim.check("qubits", len(dev.wires), "wires")
                    # The samples are at most shots × the device's wires.
                    check_samples(shots, len(dev.wires), lim)
            settings = dev.catalyst_settings()
            with dev._run_lock:
                _native.catalyst_begin(settings, int(dev._seeds.integers(0, 2**63)))
                return self._compiled(*args, **kwargs)

    @property
    def compiled(self):
        """Catalyst's ``QJIT`` object (None before the first call, or when not compiled by
        Catalyst)."""
        return self._compiled

    @property
    def rounds(self) -> int:
        """Decode rounds the compiled functions of its placement have done."""
        from . import _native

        return _native.catalyst_rounds(self.device.catalyst_settings())

    def __repr__(self):
        return f"qjit({self.qnode!r})"


def qjit(fn=None, *, capture: bool | None = None, backend: str | None = None, **options):
    """PennyLane-Catalyst's ``qjit`` (the pinned release), with backline placements as
    Catalyst devices; usable as ``@qjit``, ``@qjit(capture=True)`` or ``qjit(qnode)``. Other
    keyword arguments are Catalyst's. ``backend="backline"`` is :func:`compile_once`;
    ``BACKLINE_QJIT_BACKEND=backline`` makes it the default."""
    if fn is None:
        return functools.partial(qjit, capture=capture, backend=backend, **options)
    if backend not in (None, "backline", "catalyst"):
        raise QjitError(f"qjit(backend={backend!r}): 'catalyst' (the default) or 'backline' (qp.compile_once)")
    if backend is None and os.environ.get(BACKEND_ENV):
        backend = os.environ[BACKEND_ENV]
        if backend not in ("backline", "catalyst"):
            raise QjitError(f"{BACKEND_ENV}={backend!r}: 'catalyst' (the default) or 'backline' (qp.compile_once)")
    if backend == "backline":
        if options:
            raise QjitError(f"qjit(backend='backline') takes no Catalyst options ({sorted(options)})")
        return compile_once(fn, capture=capture)
    catalyst = _catalyst()
    if not _is_backline(fn):
        return catalyst.qjit(fn, capture=capture, **options) if capture is not None else catalyst.qjit(fn, **options)
    return CatalystQNode(fn, catalyst, capture, options)
