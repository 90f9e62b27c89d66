"""The exceptions of backline, one class per problem a user can act on.

Each is raised with a message that names the problem (the gate, the coprocessor and its
address, the decoder id, the wire). The native module raises these same classes by name.

The classes that are also PennyLane's (``DeviceError``, ``WireError``) are defined on first
use, so that what needs no PennyLane (``python -m backline serve``, ``backline.sinter``)
does not import it: PennyLane's import is nearly all of ``import backline``'s time.
"""

#: The classes that derive from PennyLane's exceptions, defined on first use.
_PENNYLANE_BASED = (
    "ControllerWiresError",
    "ShotsMissingError",
    "CompileError",
    "NonCliffordGateError",
    "UnsupportedMeasurementError",
    "RuntimeCallError",
)


class BacklineError(Exception):
    """Base class of every backline error."""


class PlacementError(BacklineError, ValueError):
    """A placement (controller, coprocessors, transport) that cannot work as given."""


class UnknownTransportError(PlacementError):
    """The transport is not one of memcpy, shm, udp, rdma."""


class UnknownQecCodeError(PlacementError):
    """The qec_code names no code the compiler can lower to."""


class CoprocessorFunctionError(PlacementError):
    """A coprocessor function that cannot be found, loaded or built."""


class CoprocessorUnreachableError(PlacementError, ConnectionError):
    """A coprocessor of the placement does not answer at its address."""


class NotAdmittedError(CoprocessorUnreachableError):
    """A coprocessor started with a key (``token_file``) did not admit this controller: it
    holds another key, or none (the server answers nothing, so this comes at the set-up
    timeout)."""


class ExecutorUnreachableError(PlacementError, ConnectionError):
    """The executor process a remote node runs in does not answer at its address (within its
    ``connect_timeout``), or could not be started."""


class ExecutorVersionError(PlacementError):
    """An executor of another backline version (or executor protocol) refused the work, or
    was refused: the message names both versions."""


class ExecutorError(BacklineError, RuntimeError):
    """The executor a remote node runs in failed or died in the middle of a run; the message
    names it."""


class CoprocessorTimeoutError(BacklineError, TimeoutError):
    """A coprocessor stopped answering in the middle of a run (it died or hangs)."""


class DecoderIdError(BacklineError, ValueError):
    """A program sends requests with a decoder_id its coprocessor does not serve."""


class DecodeOutsideQNodeError(BacklineError, RuntimeError):
    """``decode`` or ``runtime_call`` called where no circuit is being recorded."""


class RunError(BacklineError, RuntimeError):
    """A run failed for a reason none of the other classes covers."""


class DetectorErrorModelError(BacklineError, ValueError):
    """A stim detector error model the decoders cannot read (the message names the line)."""


class DecoderSettingsError(BacklineError, ValueError):
    """A circuit-level decoder setting that is unknown or out of range, or a model a decoder
    cannot use (a mechanism with p ≥ 0.5, nothing to decode)."""


class StreamError(BacklineError, RuntimeError):
    """A streaming decoder refused a call; ``status`` is its status name (``busy``,
    ``syndromes_dropped``, ``not_ready``, ``bad_request``, ``invalid_decoder``,
    ``internal_error``)."""

    def __init__(self, message: str, status: str = "internal_error"):
        super().__init__(message)
        self.status = status


def _define_pennylane_based() -> None:
    from pennylane.exceptions import DeviceError, WireError

    class ControllerWiresError(PlacementError, WireError):
        """A circuit uses wires the controller does not have."""

    class ShotsMissingError(BacklineError, DeviceError):
        """An execution without shots: the stabilizer VM samples, shot by shot."""

    class CompileError(BacklineError, DeviceError):
        """A circuit the compiler cannot lower."""

    class NonCliffordGateError(CompileError):
        """A gate outside the Clifford group (the VM is a stabilizer simulator)."""

    class UnsupportedMeasurementError(CompileError):
        """A measurement a sampling stabilizer device cannot give (state, density matrix …)."""

    class RuntimeCallError(CompileError):
        """Runtime calls out of order (stage, post, collect per session)."""

    for cls in (
        ControllerWiresError,
        ShotsMissingError,
        CompileError,
        NonCliffordGateError,
        UnsupportedMeasurementError,
        RuntimeCallError,
    ):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
        globals()[cls.__name__] = cls


def __getattr__(name: str):
    if name in _PENNYLANE_BASED:
        _define_pennylane_based()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PENNYLANE_BASED))
