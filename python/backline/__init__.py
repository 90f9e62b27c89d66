"""backline: one QEC program, every placement.

A placement — a :class:`Controller`, its :class:`Coprocessor` s and a transport — is a
PennyLane device (:class:`Backline`, ``"backline.qubit"``). A circuit on it is compiled by
backline's Rust passes and run shot by shot on a stabilizer VM in Rust; every decode is a
round through the runtime to a coprocessor in this process, another process, another host
or behind an (simulated) FPGA board.

.. code-block:: python

    import pennylane as qml
    from backline import Backline, Controller, Coprocessor, CoprocessorFunction

    dev = Backline(
        controller=Controller(hardware="cpu", wires=3),
        coprocessors=[Coprocessor(hardware="cpu",
                                  coprocessor_fn=CoprocessorFunction.builtin("steane"))],
        transport="memcpy",
        qec_code="steane",
    )

    @qml.set_shots(10)
    @qml.qnode(dev)
    def ghz():
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        qml.CNOT([1, 2])
        return qml.sample(wires=[0, 1, 2])
"""

from . import _native, errors
from .errors import *  # noqa: F403
from .placement import (
    X_CHECKS,
    Z_CHECKS,
    Controller,
    Coprocessor,
    CoprocessorFunction,
    CssDecoder,
    Endpoint,
    css_bp_decoder,
)
from .stream import StreamDecoderFunction, StreamSession, stream_decoder
from .triton import triton_decoder

#: Names whose modules import PennyLane, loaded on first use: the device, the in-circuit
#: calls, the tools and the exceptions that derive from PennyLane's. What needs none of them
#: (``python -m backline serve``, ``backline.sinter``) starts without PennyLane's import,
#: which is nearly all of ``import backline``'s time.
_LAZY = {
    **dict.fromkeys(["Backline", "RunInfo"], ".device"),
    **dict.fromkeys(
        [
            "COLLECT",
            "GET_SESSION",
            "POST",
            "ROLE_CONTROLLER",
            "ROLE_COPROCESSOR",
            "ReplyStatus",
            "STAGE_PAYLOAD",
            "WORK_ITEM",
            "DecodeResult",
            "RuntimeCall",
            "Session",
            "apply_correction",
            "decode",
            "runtime_call",
        ],
        ".qec",
    ),
    **dict.fromkeys(["format_latency", "ir_dumps"], ".tools"),
    **dict.fromkeys(["qjit", "compile_once", "QjitError", "QjitFallbackWarning", "CATALYST_VERSION"], "._qjit"),
    **dict.fromkeys(errors._PENNYLANE_BASED, ".errors"),
}


#: Submodules loaded on first use as attributes (``backline.codes`` …, as ``qp.backline.codes``).
_SUBMODULES = ("codes", "cuqr", "executor", "qp", "sinter", "stream", "tools", "triton")


def __getattr__(name: str):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


#: The implicit-QEC pipeline (the default with ``qec_code="steane"``).
IMPLICIT_QEC = _native.IMPLICIT_QEC
#: The same without the decodes: what the logical error rate is without correction.
NO_DECODE = IMPLICIT_QEC.replace("steane-encode", "steane-encode{decode=false}")
#: The pipeline without a code: noise, then explicit decodes and runtime calls lowered.
PLAIN = _native.PLAIN

__version__ = "0.1.0"

__all__ = [
    "Backline",
    "COLLECT",
    "Controller",
    "Coprocessor",
    "CoprocessorFunction",
    "CssDecoder",
    "DecodeResult",
    "Endpoint",
    "GET_SESSION",
    "IMPLICIT_QEC",
    "NO_DECODE",
    "PLAIN",
    "POST",
    "RunInfo",
    "RuntimeCall",
    "STAGE_PAYLOAD",
    "Session",
    "StreamDecoderFunction",
    "StreamSession",
    "X_CHECKS",
    "Z_CHECKS",
    "apply_correction",
    "css_bp_decoder",
    "decode",
    "errors",
    "format_latency",
    "ir_dumps",
    "runtime_call",
    "stream_decoder",
    "triton_decoder",
]
