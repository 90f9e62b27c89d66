"""The placement API: where the controller and each coprocessor run, what each coprocessor
computes, and how they are reached.

A placement is one :class:`Controller`, zero or more :class:`Coprocessor` s and a transport
(given to :class:`backline.Backline`). Changing any of them never changes the program.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import CoprocessorFunctionError, PlacementError
from .limits import DECODER_ID, GID_INDEX, PORT, check_int, check_seconds, check_wire_count

#: Decoder ids of the two check types of a CSS code (X checks, Z checks).
X_CHECKS = 0
Z_CHECKS = 1

TRANSPORTS = ("memcpy", "shm", "udp", "rdma")


class CoprocessorFunction:
    """What a coprocessor computes for each message.

    ``CoprocessorFunction(name="steane_decode", lib_path="./libsteane_decoder.so")`` is a
    pre-compiled C function of the signature
    ``size_t fn(const void *in, size_t in_len, void *out, size_t out_cap, void *ctx)``,
    looked up now (a missing library or symbol raises
    :class:`~backline.errors.CoprocessorFunctionError`).
    ``CoprocessorFunction.builtin("steane")`` and ``builtin("echo")`` are the built-in ones
    (on a GPU coprocessor they run as persistent-kernel functions).
    ``CoprocessorFunction.gpu_kernel("decode.cu", "my_decode")`` is a device function of the
    documented signature (see ``gpu-responder/README.md``), compiled into backline's persistent
    kernel when the coprocessor starts; it needs ``Coprocessor(hardware="gpu")``.

    A single function serves decoder ids 0 and 1 (the X and Z checks; the Steane code is
    self-dual, so one lookup decodes both); give ``Coprocessor(coprocessor_fn={0: f, 1: g})``
    to serve different functions per decoder id.
    """

    #: Decoder ids one instance serves when given alone to a coprocessor.
    default_ids = (X_CHECKS, Z_CHECKS)
    #: Decoder ids one spec registers from its base id (a CSS decoder takes two).
    width = 1
    #: Where it can run: ``("cpu", "gpu")``, ``("cpu",)`` for a C function, ``("gpu",)`` for a
    #: GPU kernel.
    hardware = ("cpu", "gpu")

    def __init__(self, name: str, lib_path: str | os.PathLike | None = None):
        if lib_path is None:
            raise CoprocessorFunctionError(
                f"coprocessor function `{name}`: no lib_path; use "
                "CoprocessorFunction.builtin(name) for the built-in functions "
                f"({', '.join(BUILTINS)})"
            )
        path = Path(lib_path)
        if not path.exists():
            raise CoprocessorFunctionError(
                f"coprocessor function `{name}`: library {path} not found"
            )
        try:
            lib = ctypes.CDLL(str(path.resolve()))
        except OSError as e:
            raise CoprocessorFunctionError(
                f"coprocessor function `{name}`: cannot load {path}: {e}"
            ) from None
        if not hasattr(lib, name):
            raise CoprocessorFunctionError(
                f"coprocessor function `{name}`: symbol not found in {path}"
            )
        self.name = name
        self.lib_path = str(path.resolve())
        self.spec = f"{self.lib_path}:{name}"
        self.hardware = ("cpu",)

    @classmethod
    def builtin(cls, name: str) -> CoprocessorFunction:
        """A built-in function: ``steane`` (the [[7,1,3]] lookup: syndrome byte in, qubit
        index 0–6 or 0x0F out) or ``echo``."""
        if name not in BUILTINS:
            raise CoprocessorFunctionError(
                f"no built-in coprocessor function `{name}` (built in: {', '.join(BUILTINS)})"
            )
        f = cls.__new__(cls)
        f.name = name
        f.lib_path = None
        f.spec = name
        return f

    @classmethod
    def gpu_kernel(cls, source: str | os.PathLike, function: str) -> CoprocessorFunction:
        """A GPU device function ``function`` in the CUDA/HIP source file ``source``, of the
        signature ``BL_USER_FUNCTION bl_u32 function(const bl_u8 *in, bl_u32 in_len, bl_u8
        *out, bl_u32 out_cap, bl_u32 decoder_id)`` (called by every thread of the kernel's
        block; thread 0's return value is the reply length, ``BL_USER_FAILED`` a failure). It
        is compiled when the coprocessor starts; compiler errors name the file and line."""
        path = Path(source)
        if not path.is_file():
            raise CoprocessorFunctionError(f"gpu kernel `{function}`: source {path} not found")
        if not function.isidentifier():
            raise CoprocessorFunctionError(f"gpu kernel `{function}`: not a C identifier")
        f = cls.__new__(cls)
        f.name = function
        f.lib_path = None
        f.spec = f"{path.resolve()}:{function}"
        f.hardware = ("gpu",)
        return f

    def specs(self, base: int) -> list[tuple[int, str]]:
        """``(decoder_id, spec)`` pairs this function registers from decoder id ``base``."""
        return [(base, self.spec)]

    def ids(self, base: int) -> list[int]:
        """Decoder ids it serves from ``base``."""
        return list(range(base, base + self.width))

    def __repr__(self) -> str:
        if self.lib_path:
            return f"CoprocessorFunction(name={self.name!r}, lib_path={self.lib_path!r})"
        if self.hardware == ("gpu",):
            return f"CoprocessorFunction.gpu_kernel({self.spec.rsplit(':', 1)[0]!r}, {self.name!r})"
        return f"CoprocessorFunction.builtin({self.name!r})"


BUILTINS = ("steane", "echo")

#: Built-in functions by the names a coprocessor may be given as a string
#: (``Coprocessor(coprocessor_fn="gpu_steane_launcher")``, the reference's name of its GPU
#: Steane kernel), and the hardware each runs on.
BUILTIN_NAMES = {
    "steane": ("steane", ("cpu", "gpu")),
    "echo": ("echo", ("cpu", "gpu")),
    "steane_coprocessor": ("steane", ("cpu",)),
    "gpu_steane_launcher": ("steane", ("gpu",)),
    "gpu_echo_launcher": ("echo", ("gpu",)),
}


def builtin_by_name(name: str, hardware: str) -> CoprocessorFunction:
    """The built-in function a string ``coprocessor_fn`` names, for ``hardware``."""
    entry = BUILTIN_NAMES.get(name)
    if entry is None:
        raise CoprocessorFunctionError(
            f"coprocessor_fn={name!r} names no built-in function (built in: "
            f"{', '.join(BUILTIN_NAMES)}); give a CoprocessorFunction for your own"
        )
    builtin, where = entry
    if hardware not in where:
        raise CoprocessorFunctionError(
            f"coprocessor_fn={name!r} runs on {' or '.join(where)}, not on hardware={hardware!r}"
        )
    f = CoprocessorFunction.builtin(builtin)
    f.hardware = where
    return f


class CssDecoder(CoprocessorFunction):
    """BP+OSD from a CSS code's parity-check matrices (see :func:`css_bp_decoder`). Serves
    decoder id ``base`` with the X checks (rows of Hx) and ``base + 1`` with the Z checks.

    Requests carry the syndrome bit-packed LSB-first; the reply is the correction (one bit
    per qubit, LSB-first), so ``decode(...)[k]`` is the flip of qubit ``k``.
    """

    default_ids = (X_CHECKS,)
    width = 2

    def __init__(self, code: str, settings: str, name: str, num_qubits: int, checks: tuple[int, int]):
        self.name = name
        self.lib_path = None
        self.code = code
        self.settings = settings
        self.num_qubits = num_qubits
        self.checks = checks
        self.spec = f"bposd:{code}:{settings}" if settings else f"bposd:{code}"

    def specs(self, base: int) -> list[tuple[int, str]]:
        return [(base, self.spec)]

    def __repr__(self) -> str:
        return f"css_bp_decoder({self.code!r}, {self.settings!r})"


_POSTPROCESS = {
    "osd": "osd_cs",
    "osd_cs": "osd_cs",
    "osd0": "osd0",
    "osd_0": "osd0",
    "none": "off",
    None: "off",
}


def _matrix(name: str, h: Any) -> np.ndarray:
    m = np.asarray(h)
    if m.ndim != 2 or m.size == 0:
        raise CoprocessorFunctionError(f"{name}: a parity-check matrix must be 2-D and non-empty, got shape {m.shape}")
    if not np.isin(m, (0, 1)).all():
        raise CoprocessorFunctionError(f"{name}: entries must be 0 or 1")
    return m.astype(np.uint8)


def css_bp_decoder(
    Hx: Any,
    Hz: Any,
    postprocess: str | None = "osd",
    num_iters: int = 10,
    *,
    osd_order: int = 7,
    bp_method: str = "minimum_sum",
    error_rate: float | None = None,
    schedule: str = "parallel",
    platform: str | None = None,
) -> CssDecoder:
    """A BP+OSD decoder for the CSS code with parity-check matrices ``Hx`` and ``Hz`` (0/1
    arrays with one column per qubit), as a coprocessor function.

    ``postprocess``: ``"osd"`` (OSD-CS of order ``osd_order``, as ``ldpc``'s default),
    ``"osd0"``, or ``None`` (BP alone). ``num_iters``: BP iterations. Also ``bp_method``
    (``minimum_sum`` or ``product_sum``), ``error_rate`` (the channel prior; default: ldpc's)
    and ``schedule`` (``parallel`` or ``serial``). ``platform``: the GPU it is meant for
    (``"cuda:sm_80"``, ``"cuda:sm_90"``, ``"hip:gfx90a:64"``); on a GPU coprocessor without a
    ``backend`` of its own (and no ``BACKLINE_GPU_BACKEND``) it picks the runtime, CUDA or
    HIP — the kernel itself is backline's BP+OSD, built when the coprocessor starts. Hx or Hz
    may also be a library code name
    given as ``Hx`` with ``Hz=None`` (``"hgp13"``, ``"steane"``, ``"surface5"``, ``"bb72"``…),
    which remote coprocessors can build without the matrix files.
    """
    if postprocess not in _POSTPROCESS:
        raise CoprocessorFunctionError(
            f"css_bp_decoder: postprocess={postprocess!r} (expected 'osd', 'osd0' or None)"
        )
    if platform is not None:
        from ._platforms import check_platform

        check_platform(platform)
    if not isinstance(num_iters, int) or num_iters < 1:
        raise CoprocessorFunctionError(f"css_bp_decoder: num_iters={num_iters!r} must be a positive integer")
    settings = [f"max_iter={num_iters}", f"osd_method={_POSTPROCESS[postprocess]}", f"bp_method={bp_method}", f"schedule={schedule}"]
    if _POSTPROCESS[postprocess] == "osd_cs":
        settings.append(f"osd_order={osd_order}")
    if error_rate is not None:
        settings.append(f"error_rate={error_rate}")
    settings = ";".join(settings)
    if isinstance(Hx, str) and Hz is None:
        name = Hx
        from . import _native  # noqa: F401  (the library codes are in Rust)

        f = CssDecoder(Hx, settings, f"bposd:{Hx}", num_qubits=0, checks=(0, 0))
        f.platform = platform
        _check_spec(f)
        return f
    hx, hz = _matrix("Hx", Hx), _matrix("Hz", Hz)
    if hx.shape[1] != hz.shape[1]:
        raise CoprocessorFunctionError(
            f"css_bp_decoder: Hx has {hx.shape[1]} columns but Hz has {hz.shape[1]}; both need one per qubit"
        )
    if ((hx.astype(np.int64) @ hz.T.astype(np.int64)) % 2).any():
        raise CoprocessorFunctionError("css_bp_decoder: Hx Hzᵀ ≠ 0 (mod 2): the X and Z checks do not commute, not a CSS code")
    # The matrices go to files the responder loads (dense 0/1 text), named by content.
    digest = hashlib.sha256(hx.tobytes() + b"|" + hz.tobytes() + repr((hx.shape, hz.shape)).encode()).hexdigest()[:16]
    d = Path(tempfile.gettempdir()) / "backline-css" / digest
    d.mkdir(parents=True, exist_ok=True)
    files = []
    for tag, m in (("hx", hx), ("hz", hz)):
        p = d / f"{tag}.txt"
        if not p.exists():
            tmp = p.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text("\n".join(" ".join(str(int(v)) for v in row) for row in m) + "\n")
            tmp.replace(p)
        files.append(str(p))
    name = f"bposd[[{hx.shape[1]}]]"
    f = CssDecoder("+".join(files), settings, name, num_qubits=hx.shape[1], checks=(hx.shape[0], hz.shape[0]))
    f.platform = platform
    _check_spec(f)
    return f


def _check_spec(f: CoprocessorFunction) -> None:
    """Builds the function once here, so that a bad one fails at its definition."""
    from . import _native

    try:
        s = _native.Server("memcpy", "", f"check-{id(f)}-{os.getpid()}", f.specs(0))
        s.stop()
    except PlacementError as e:
        raise CoprocessorFunctionError(str(e)) from None


@dataclass
class Endpoint:
    """Where a coprocessor is reached.

    ``address``: udp/rdma ``host:port`` (or host, with ``port``); shm: the segment name
    (``/dev/shm/backline-<name>``); memcpy: a session key (default: one of its own).
    ``rdma_device`` and ``gid_index`` select the RDMA device and GID (rdma only).
    ``token_file``: udp/rdma: the pre-shared key of admission (``backline token FILE`` writes
    one): a coprocessor served with it answers only controllers that prove they hold it, and
    the controller proves it; a coprocessor holding another key raises
    :class:`~backline.errors.NotAdmittedError` at the set-up timeout. One key per placement
    (``BACKLINE_TOKEN_FILE`` names it for every endpoint that gives none).
    ``reply_timeout``: seconds to wait for one reply before the run fails with
    :class:`~backline.errors.CoprocessorTimeoutError`; ``setup_timeout``: for the handshake.
    """

    address: str | None = None
    port: int | None = None
    rdma_device: str | None = None
    gid_index: int | None = None
    token_file: str | None = None
    reply_timeout: float = 1.0
    setup_timeout: float = 5.0

    def __post_init__(self):
        # Checked here, at construction (a timeout no Duration holds panicked at the run).
        self.reply_timeout = check_seconds("Endpoint(reply_timeout)", self.reply_timeout)
        self.setup_timeout = check_seconds("Endpoint(setup_timeout)", self.setup_timeout)
        if self.port is not None:
            check_int("Endpoint(port)", self.port, PORT, "a TCP/UDP port")
        if self.gid_index is not None:
            check_int("Endpoint(gid_index)", self.gid_index, GID_INDEX, "an RDMA GID index is 8 bits")

    def peer(self) -> str:
        """The address as the transport takes it."""
        if self.address is None:
            raise PlacementError("the endpoint has no address")
        if self.port is not None and ":" not in self.address:
            return f"{self.address}:{self.port}"
        return self.address


#: Keys of ``executor_options``: how to reach the executor process a remote node runs in.
EXECUTOR_OPTIONS = {
    "address": "host:port of an executor already running there (python -m backline executor "
               "--bind HOST:PORT); without it, one is started on this machine",
    "connect_timeout": "seconds to wait for it to answer (default 10)",
    "python": "the interpreter that starts a local executor (default: this one)",
    "token_file": "the pre-shared key a keyed executor admits (python -m backline executor "
                  "--token-file; default BACKLINE_TOKEN_FILE); one started here takes it too",
}


def check_executor_options(who: str, options) -> dict:
    """``executor_options`` of a node, checked: a dict of the keys of
    :data:`EXECUTOR_OPTIONS`."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise PlacementError(f"{who}: executor_options={options!r} is not a dict")
    for k, v in options.items():
        if k not in EXECUTOR_OPTIONS:
            raise PlacementError(
                f"{who}: unknown executor_options key {k!r} (known: {', '.join(EXECUTOR_OPTIONS)})"
            )
        if k == "connect_timeout" and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
            raise PlacementError(f"{who}: executor_options connect_timeout={v!r} must be a positive number")
        if k in ("address", "python", "token_file") and not (isinstance(v, (str, os.PathLike)) and os.fspath(v)):
            raise PlacementError(f"{who}: executor_options {k}={v!r} must be a non-empty string")
    return dict(options)


@dataclass
class Controller:
    """The root of a placement: drives the (simulated) qubits and makes every round.

    ``hardware``: ``"cpu"`` or ``"fpga"`` (the HWHS engine of a board; here the simulated
    board, whose ERNIC delivers every request to the placement's one real coprocessor, with
    any function and decoder ids). ``wires``: the qubits it drives (an int or labels; None: as
    many as a circuit uses). ``device``: a PennyLane device standing for the quantum device the
    controller drives (``qml.device("null.qubit", wires=3)`` as the reference writes it): its
    wires are the controller's (the qubits are simulated by backline's stabilizer VM).
    ``remote``: ``False`` — the controller runs in this process; ``True`` — the compiled
    program and the placement are shipped to an executor process (``executor_options``: its
    ``address``, or none to start one on this machine), which runs the shots, its sessions to
    the coprocessors and their decode rounds, and returns the samples and the round-trip
    times. ``init_args``: target-specific settings (fpga: ``reply_timeout_us``, the engine's
    reply timeout; ``bridge``, how the simulated fabric reaches the coprocessor: ``"shm"``
    (default for a local one), ``"udp"`` (default for ``remote=True``) or ``"rdma"``).
    """

    hardware: str = "cpu"
    wires: Any = None
    init_args: dict = field(default_factory=dict)
    device: Any = None
    remote: bool = False
    executor_options: dict | None = None

    def __post_init__(self):
        check_wire_count("Controller(wires)", self.wires)
        if self.hardware not in ("cpu", "fpga"):
            raise PlacementError(f"Controller(hardware={self.hardware!r}): expected 'cpu' or 'fpga'")
        if self.device is not None:
            dev_wires = getattr(self.device, "wires", None)
            if dev_wires is None:
                raise PlacementError(
                    f"Controller(device={self.device!r}): a PennyLane device with wires, e.g. "
                    "qml.device('null.qubit', wires=3)"
                )
            wires = list(dev_wires)
            if self.wires is not None and _wire_list(self.wires) != wires:
                raise PlacementError(
                    f"Controller(wires={self.wires!r}, device=...): the device's wires are {wires}"
                )
            self.wires = wires
        if self.remote not in (False, True):
            raise PlacementError(f"Controller(remote={self.remote!r}): expected False or True")
        given = self.executor_options is not None
        self.executor_options = check_executor_options("Controller", self.executor_options)
        if given and not self.remote:
            raise PlacementError("Controller(executor_options=...) goes with remote=True")
        if not isinstance(self.init_args, dict):
            raise PlacementError(f"Controller(init_args={self.init_args!r}): a dict")


def _wire_list(w) -> list:
    return list(range(w)) if isinstance(w, int) else list(w)


#: ``init_args`` a GPU coprocessor takes, and the variable each sets for the runtime.
GPU_INIT_ARGS = {"backend": "BACKLINE_GPU_BACKEND", "device": "BACKLINE_GPU_DEVICE", "threads": "BACKLINE_GPU_THREADS"}
GPU_BACKENDS = ("auto", "cuda", "hip", "emu")


@dataclass
class Coprocessor:
    """A participant that serves each decode with a coprocessor function.

    ``hardware``: ``"cpu"`` or ``"gpu"`` (its functions run in a persistent GPU kernel: the
    built-ins, :func:`css_bp_decoder` as real BP+OSD on the GPU, or
    :meth:`CoprocessorFunction.gpu_kernel`). ``coprocessor_fn``: a :class:`CoprocessorFunction`,
    a :func:`css_bp_decoder`, or a dict ``{decoder_id: function}``. ``remote``: ``False`` — a
    thread of this process (on a GPU over memcpy, the controller writes straight into the
    kernel's rings); ``"process"`` — a local executor process that the device starts
    (``python -m backline serve``) and stops; ``True`` — an executor already running at
    ``endpoint`` (started with ``backline serve`` or ``python -m backline serve``, here or on
    another host). ``init_args`` of a GPU coprocessor: ``backend`` (``"auto"``: CUDA, else
    HIP; ``"cuda"``, ``"hip"``, or ``"emu"``: the same kernels on CPU threads, for machines
    without a GPU), ``device`` (its number) and ``threads`` (of the kernel's block); they apply
    to every GPU coprocessor of the process and its executors.
    """

    hardware: str = "cpu"
    coprocessor_fn: Any = None
    endpoint: Endpoint | None = None
    remote: bool | str = False
    init_args: dict = field(default_factory=dict)
    executor_options: dict | None = None
    name: str | None = None

    def __post_init__(self):
        if self.hardware not in ("cpu", "gpu"):
            raise PlacementError(f"Coprocessor(hardware={self.hardware!r}): expected 'cpu' or 'gpu'")
        if self.name is not None and not (isinstance(self.name, str) and self.name):
            raise PlacementError(f"Coprocessor(name={self.name!r}): a non-empty string")
        if isinstance(self.coprocessor_fn, str):
            self.coprocessor_fn = builtin_by_name(self.coprocessor_fn, self.hardware)
        given = self.executor_options is not None
        self.executor_options = check_executor_options("Coprocessor", self.executor_options)
        if given:
            if self.remote is False:
                raise PlacementError("Coprocessor(executor_options=...) goes with remote=True")
            if self.remote is True and "address" not in self.executor_options:
                # No executor named: one is started on this machine for it, serving at its
                # endpoint (any port of this host when it names none).
                self.remote = "process"
        if self.hardware == "gpu":
            for k, v in self.init_args.items():
                if k not in GPU_INIT_ARGS:
                    raise PlacementError(
                        f"Coprocessor(hardware='gpu'): unknown init_args key {k!r} (known: {', '.join(GPU_INIT_ARGS)})"
                    )
                if k == "backend" and v not in GPU_BACKENDS:
                    raise PlacementError(
                        f"Coprocessor(hardware='gpu'): backend={v!r} (expected one of {', '.join(GPU_BACKENDS)})"
                    )
                if k == "device" and (not isinstance(v, int) or v < 0):
                    raise PlacementError(f"Coprocessor(hardware='gpu'): device={v!r} must be an integer ≥ 0")
                if k == "threads" and (not isinstance(v, int) or not 1 <= v <= 1024):
                    raise PlacementError(f"Coprocessor(hardware='gpu'): threads={v!r} must be an integer in 1..1024")
        if self.remote not in (False, True, "process", "host"):
            raise PlacementError(f"Coprocessor(remote={self.remote!r}): expected False, 'process' or True")
        if (self.remote in (True, "host") and not self.executor_options.get("address")
                and (self.endpoint is None or self.endpoint.address is None)):
            raise PlacementError(
                "Coprocessor(remote=True) needs endpoint=Endpoint(address=...) of the running "
                "executor (or executor_options={} to start one on this machine)"
            )
        if self.coprocessor_fn is None and self.remote in (False, "process"):
            raise PlacementError("Coprocessor: coprocessor_fn is required (what it computes)")
        for f in self._functions().values():
            if not isinstance(f, CoprocessorFunction):
                raise PlacementError(f"Coprocessor: {f!r} is not a CoprocessorFunction (or css_bp_decoder)")
            if self.hardware not in f.hardware:
                where = "on a GPU" if f.hardware == ("gpu",) else "on the CPU"
                raise PlacementError(
                    f"Coprocessor(hardware={self.hardware!r}): {f!r} runs {where} only"
                )

    def _functions(self) -> dict[int, CoprocessorFunction]:
        f = self.coprocessor_fn
        if f is None:
            return {}
        if isinstance(f, dict):
            return {check_int("Coprocessor(coprocessor_fn) decoder_id", k, DECODER_ID,
                              "the slot header's 32-bit decoder_id"): v for k, v in f.items()}
        return {i: f for i in f.default_ids}

    def fns(self) -> list[tuple[int, str]]:
        """``(decoder_id, spec)`` pairs to serve (``gpu:`` specs on a GPU)."""
        out = []
        for base, f in sorted(self._functions().items()):
            table = getattr(f, "table_kernel", None)
            if table is not None and not self._runs_triton_code(f):
                # A Triton decoder where its code cannot run (HIP, the emulation): the same
                # per-message functions, as their truth table in a device function.
                out.append((base, f"{table}:bl_table_decoder"))
                continue
            out.extend(f.specs(base))
        if self.hardware == "gpu":
            out = [(i, spec if spec.startswith("gpu:") else f"gpu:{spec}") for i, spec in out]
        return out

    def backend(self) -> str:
        """The GPU backend its kernels run on: ``init_args["backend"]``, else
        ``BACKLINE_GPU_BACKEND``, else ``"auto"``."""
        return str(self.init_args.get("backend") or os.environ.get("BACKLINE_GPU_BACKEND") or "auto")

    def _runs_triton_code(self, f) -> bool:
        """Whether a Triton decoder's own code runs here: PTX on an NVIDIA GPU (``cuda``, or
        ``auto``, which finds CUDA first); HIP code objects are not linked, the emulation runs
        C++."""
        platform = getattr(f, "platform", "cuda:sm_80")
        return platform.startswith("cuda:") and self.backend() in ("cuda", "auto")

    def gpu_environment(self) -> dict[str, str]:
        """The ``BACKLINE_GPU_*`` settings of a GPU coprocessor's ``init_args`` (without a
        ``backend``, the runtime of its functions' ``platform``, unless the environment
        names one)."""
        if self.hardware != "gpu":
            return {}
        env = {GPU_INIT_ARGS[k]: str(v) for k, v in self.init_args.items()}
        if "BACKLINE_GPU_BACKEND" not in env and not os.environ.get("BACKLINE_GPU_BACKEND"):
            families = {getattr(f, "platform", None) for f in self._functions().values()} - {None}
            if len(families) == 1:
                env["BACKLINE_GPU_BACKEND"] = families.pop().split(":")[0]
        return env

    def decoder_ids(self) -> set[int] | None:
        """Decoder ids served (None: unknown, a remote executor's own table)."""
        if self.remote in (True, "host") and self.coprocessor_fn is None:
            return None
        ids = set()
        for base, f in self._functions().items():
            ids.update(f.ids(base))
        return ids

    def keys(self) -> list[str]:
        """The names it answers to as the key of ``runtime_call(GET_SESSION, role, key)``: its
        ``name``, its functions' label, its endpoint's address."""
        out = [self.name] if self.name else []
        out.append(self.label())
        if self.endpoint is not None and self.endpoint.address:
            out.append(self.endpoint.address)
        return list(dict.fromkeys(out))

    def label(self) -> str:
        """The name the IR prints for it."""
        if self.name:
            return self.name
        fs = self._functions()
        names = sorted({f.name for f in fs.values()})
        if not names:
            return self.endpoint.peer() if self.endpoint else "remote"
        return "+".join(names)
