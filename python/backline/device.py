"""``backline.qubit``: a placement as a PennyLane device (the new device API).

Every execution compiles the circuit with the Rust passes (logical qubits to Steane blocks
with a correction cycle after each gate when ``qec_code="steane"``, noise, encoding, decodes
to transport rounds) and runs its shots on the stabilizer VM in Rust, with the interpreter
released; each decode is a real round through the runtime to the placement's coprocessor.
Under ``catalyst.qjit`` (``qp.qjit``) the device is also a Catalyst device
(:meth:`Backline.get_c_interface`): Catalyst's compiled program drives it gate by gate.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pennylane as qml
from pennylane.devices import Device, ExecutionConfig
from pennylane.devices.modifiers import simulator_tracking, single_tape_support
from pennylane.transforms import broadcast_expand, diagonalize_measurements, split_non_commuting
from pennylane.transforms.core import CompilePipeline, transform
from pennylane.wires import Wires

from . import _frontend, _native
from .errors import (
    CompileError,
    ControllerWiresError,
    CoprocessorUnreachableError,
    DecoderIdError,
    PlacementError,
    ShotsMissingError,
    UnknownQecCodeError,
    UnknownTransportError,
)
from .limits import PAYLOAD_BYTES, check_int, check_program_header, check_wire_count, program_limits
from .placement import TRANSPORTS, Controller, Coprocessor, Endpoint

QEC_CODES = ("steane", None)
CHANNELS = ("depolarize", "bit_flip", "phase_flip")
_keys = itertools.count()


@dataclass
class RunInfo:
    """What the last execution did: shots, decode rounds and their round-trip times."""

    shots: int = 0
    rounds: int = 0
    rtts_ns: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dumps: list = field(default_factory=list)
    seconds: float = 0.0

    def latency(self) -> dict | None:
        """Round-trip statistics of the decode rounds, ns (``backline bench``'s fields:
        count, mean, median, std, min, max, P99 … P99.999), with round 0 (the connection's
        cold round) reported apart as ``round0_ns`` and left out of the rest."""
        if len(self.rtts_ns) == 0:
            return None
        rest = self.rtts_ns[1:] if len(self.rtts_ns) > 1 else self.rtts_ns
        stats = dict(_native.latency_summary([float(x) for x in rest]))
        stats["round0_ns"] = float(self.rtts_ns[0])
        return stats


def _noise(noise):
    if noise is None or noise == 0:
        return 0.0, "depolarize"
    if isinstance(noise, (int, float)):
        p, channel = float(noise), "depolarize"
    elif isinstance(noise, dict):
        extra = set(noise) - {"p", "channel"}
        if extra:
            raise PlacementError(f"noise: unknown keys {sorted(extra)} (p, channel)")
        p, channel = float(noise.get("p", 0.0)), noise.get("channel", "depolarize")
    elif isinstance(noise, tuple) and len(noise) == 2:
        channel, p = noise
        p = float(p)
    else:
        raise PlacementError(f"noise={noise!r}: a probability, {{'p': …, 'channel': …}} or (channel, p)")
    if not 0.0 <= p <= 1.0:
        raise PlacementError(f"noise p={p}: a probability in [0, 1]")
    if channel not in CHANNELS:
        raise PlacementError(f"noise channel {channel!r}: one of {', '.join(CHANNELS)}")
    return p, channel


@transform
def _check_shots(tape):
    if not tape.shots:
        raise ShotsMissingError(
            "backline.qubit samples its qubits shot by shot and has no analytic mode: give "
            "the QNode shots, e.g. @qml.set_shots(1000) above @qml.qnode(dev)"
        )
    return (tape,), lambda r: r[0]


@transform
def _check_wires(tape, device_wires=None):
    if device_wires is None:
        return (tape,), lambda r: r[0]
    extra = [w for w in tape.wires if w not in device_wires]
    if extra:
        raise ControllerWiresError(
            f"the circuit uses wire{'s' if len(extra) > 1 else ''} {extra}, beyond the "
            f"controller's wires {device_wires.tolist()}"
        )
    return (tape,), lambda r: r[0]


class _Executor:
    """A local executor process (``python -m backline serve``) for ``remote="process"``."""

    def __init__(self, transport: str, address: str, fns, payload_bytes: int, ep: Endpoint):
        cmd = [sys.executable, "-m", "backline", "serve", "--transport", transport, "--exit-with-parent",
               "--payload-bytes", str(payload_bytes)]
        if ep.rdma_device is not None:
            cmd += ["--rdma-device", ep.rdma_device]
        if ep.gid_index is not None:
            cmd += ["--gid-index", str(ep.gid_index)]
        cmd += ["--name", address] if transport == "shm" else ["--bind", address]
        for i, spec in fns:
            cmd += ["--fn", f"{i}={spec}"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Its start imports PennyLane (about 3 s on the development VM, much more under
        # emulation): a generous, still bounded, wait.
        wait_s = max(60.0, float(ep.setup_timeout))
        deadline = time.monotonic() + wait_s
        line = ""
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if r:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        if not line.startswith("ready "):
            err = ""
            try:
                self.proc.wait(timeout=2)
                err = self.proc.stderr.read()
            except subprocess.TimeoutExpired:
                pass
            self.stop()
            raise CoprocessorUnreachableError(
                f"the executor process ({' '.join(cmd[2:])}) did not become ready: {err.strip() or line.strip() or f'no answer in {wait_s:.0f} s'}"
            )
        self.peer = line.split(None, 1)[1].strip()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class _Runtime:
    """The running parts of a placement: local servers, executor processes, the board."""

    def __init__(self, dev: Backline):
        self.servers = []
        self.executors = []
        self.endpoints = []
        self.board = None
        #: The executor a remote controller runs in, and the board's settings it builds there.
        self.controller_exec = None
        self.board_spec = None
        #: Connections that keep coprocessors alive in executors (closed to stop them).
        self.served = []
        tag = f"{os.getpid()}-{next(_keys)}"
        #: BACKLINE_TOKEN_FILE as it was before this placement's ``token_file`` (restored at
        #: close; ``False``: not touched).
        self._saved_token = False
        try:
            if dev.controller.remote:
                self.controller_exec = _controller_executor(dev.controller)
            if dev.controller.hardware == "fpga":
                self._start_board(dev, tag)
                return
            for i, c in enumerate(dev.coprocessors):
                ep = c.endpoint or Endpoint()
                t = dev.transport
                # Where GPU functions run, for this process's kernels and its executors.
                os.environ.update(c.gpu_environment())
                if t == "rdma":
                    # The rdma transport's device and GID for this process's sessions (the
                    # executor processes get them as --rdma-device / --gid-index).
                    if ep.rdma_device is not None:
                        os.environ["BACKLINE_RDMA_DEVICE"] = ep.rdma_device
                    if ep.gid_index is not None:
                        os.environ["BACKLINE_RDMA_GID_INDEX"] = str(ep.gid_index)
                if ep.token_file is not None:
                    if t not in ("udp", "rdma"):
                        raise PlacementError(
                            f"token_file admits controllers of udp and rdma; {t} is reached only "
                            "by this user's own processes"
                        )
                    path = os.fspath(ep.token_file)
                    other = os.environ.get("BACKLINE_TOKEN_FILE")
                    if other and other != path and self._saved_token is not False:
                        raise PlacementError(
                            f"coprocessor {i}: token_file {path!r}, another than the placement's "
                            f"{other!r}: one key per placement"
                        )
                    # This process's sessions, and the executors it starts, read it here.
                    if self._saved_token is False:
                        self._saved_token = other
                    os.environ["BACKLINE_TOKEN_FILE"] = path
                if t == "rdma" and c.remote is False:
                    raise PlacementError(
                        "rdma connects two processes: put the coprocessor in an executor "
                        "(remote='process', or remote=True with its endpoint)"
                    )
                if c.remote is False:
                    addr = {"memcpy": "", "shm": f"bl-{tag}-{i}", "udp": "127.0.0.1:0"}[t]
                    if ep.address is not None and t != "memcpy":
                        addr = ep.peer()
                    s = _native.Server(t, addr, f"backline-{tag}-{i}", c.fns(), dev.payload_bytes,
                                       None, ep.reply_timeout, ep.setup_timeout)
                    self.servers.append(s)
                    peer = s.peer
                elif c.remote == "process":
                    if t == "memcpy":
                        raise PlacementError(
                            "memcpy keeps the coprocessor in this process: use remote=False, or "
                            "transport shm, udp or rdma for an executor process"
                        )
                    addr = ep.peer() if ep.address else ({"shm": f"bl-{tag}-{i}"}.get(t, "127.0.0.1:0"))
                    x = _Executor(t, addr, c.fns(), dev.payload_bytes, ep)
                    self.executors.append(x)
                    peer = x.peer
                elif c.executor_options.get("address"):
                    peer = self._serve_in_executor(dev, c, ep, t, tag, i)
                else:
                    peer = ep.peer()
                self.endpoints.append((t, f"controller-{tag}-{i}", peer, dev.payload_bytes,
                                       float(ep.reply_timeout), float(ep.setup_timeout)))
        except BaseException:
            self.close()
            raise

    def _serve_in_executor(self, dev: Backline, c: Coprocessor, ep: Endpoint, t: str, tag: str,
                           i: int) -> str:
        """A coprocessor shipped to the executor at its ``executor_options`` address: its
        functions served there at its endpoint; returns the peer address."""
        from .executor import Executor

        if t == "memcpy":
            raise PlacementError(
                "memcpy keeps the coprocessor in this process: a coprocessor in an executor is "
                "reached over shm, udp or rdma"
            )
        opts = c.executor_options
        x = Executor(opts["address"], token_file=opts.get("token_file"))
        addr = ep.peer() if ep.address else ({"shm": f"bl-{tag}-{i}"}.get(t, "0.0.0.0:0"))
        sock, peer = x.serve({
            "transport": t, "address": addr, "key": f"backline-{tag}-{i}", "fns": c.fns(),
            "payload_bytes": dev.payload_bytes, "reply_timeout": float(ep.reply_timeout),
            "setup_timeout": float(ep.setup_timeout), "environment": c.gpu_environment(),
        }, timeout=float(opts.get("connect_timeout", 10.0)))
        self.served.append(sock)
        return peer

    def _start_board(self, dev: Backline, tag: str):
        """The (simulated) board and the real coprocessor its ERNIC delivers requests to: a
        server thread of this process, an executor process, or one already running."""
        if len(dev.coprocessors) != 1:
            raise PlacementError(
                "Controller(hardware='fpga') drives one coprocessor (the board's HWHS engine has "
                f"one queue pair), not {len(dev.coprocessors)}"
            )
        if not _native.HAS_FPGA:
            raise PlacementError("this build of backline has no FPGA controller")
        c = dev.coprocessors[0]
        ep = c.endpoint or Endpoint()
        # Where GPU functions run, for this process's kernels and its executors.
        os.environ.update(c.gpu_environment())
        remote = c.remote in (True, "host")
        # How the simulated fabric reaches the coprocessor: shm on this host, udp to another
        # one (or rdma, with Soft-RoCE); init_args={"bridge": …} chooses.
        bridge = dev.controller.init_args.get("bridge", "udp" if remote else "shm")
        if bridge not in ("shm", "udp", "rdma"):
            raise PlacementError(
                f"Controller(hardware='fpga', init_args={{'bridge': {bridge!r}}}): the simulated "
                "board reaches its coprocessor over 'shm', 'udp' or 'rdma'"
            )
        if c.remote is False:
            addr = {"shm": f"bl-{tag}-0", "udp": "127.0.0.1:0"}.get(bridge, "127.0.0.1:0")
            s = _native.Server(bridge, addr, f"backline-{tag}-0", c.fns(), dev.payload_bytes,
                               None, ep.reply_timeout, ep.setup_timeout)
            self.servers.append(s)
            peer = s.peer
        elif c.remote == "process":
            addr = ep.peer() if ep.address else ({"shm": f"bl-{tag}-0"}.get(bridge, "127.0.0.1:0"))
            x = _Executor(bridge, addr, c.fns(), dev.payload_bytes, ep)
            self.executors.append(x)
            peer = x.peer
        else:
            peer = ep.peer()
        if self.controller_exec is not None:
            # The board runs where the controller does: its settings go with the program.
            self.board_spec = {"bridge": bridge, "peer": peer, "payload_bytes": dev.payload_bytes,
                               "reply_timeout": float(ep.reply_timeout),
                               "setup_timeout": float(ep.setup_timeout),
                               "reply_timeout_us": dev.controller.init_args.get("reply_timeout_us")}
            return
        self.board = _native.FpgaBoard(bridge, peer, dev.payload_bytes, float(ep.reply_timeout),
                                       float(ep.setup_timeout),
                                       dev.controller.init_args.get("reply_timeout_us"))

    def close(self):
        for s in self.servers:
            try:
                s.stop()
            except Exception:  # noqa: BLE001 — closing, nothing to do
                pass
        for x in self.executors:
            x.stop()
        for sock in self.served:
            try:
                sock.close()
            except OSError:
                pass
        if self.controller_exec is not None:
            self.controller_exec.close()
        self.servers, self.executors, self.served, self.board = [], [], [], None
        self.controller_exec = self.board_spec = None
        if self._saved_token is not False:
            if self._saved_token is None:
                os.environ.pop("BACKLINE_TOKEN_FILE", None)
            else:
                os.environ["BACKLINE_TOKEN_FILE"] = self._saved_token
            self._saved_token = False


def _controller_executor(controller: Controller):
    """The executor a remote controller runs in: the one at ``executor_options["address"]``,
    or one started on this machine."""
    from .executor import Executor

    opts = controller.executor_options
    timeout = float(opts.get("connect_timeout", 10.0))
    if opts.get("address"):
        return Executor.connect(opts["address"], timeout, token_file=opts.get("token_file"))
    return Executor.spawn(opts.get("python"), timeout=max(60.0, timeout),
                          token_file=opts.get("token_file"))


@simulator_tracking
@single_tape_support
class Backline(Device):
    """A placement as a PennyLane device: ``qml.device("backline.qubit", wires=3)`` or
    ``Backline(controller=…, coprocessors=[…], transport="memcpy", qec_code="steane")``.

    Args:
        wires: the controller's wires (or give ``controller=Controller(wires=…)``).
        shots: deprecated by PennyLane; use ``qml.set_shots`` on the QNode.
        controller (Controller): the controller (default: a CPU one with ``wires``).
        coprocessors (list[Coprocessor]): the coprocessors, index = coprocessor number.
        transport (str): ``memcpy``, ``shm``, ``udp`` or ``rdma``.
        qec_code (str | None): ``"steane"``: every wire is a logical qubit, a Steane block
            with a correction cycle (syndrome round, two decodes) after every gate;
            ``None``: the circuit runs as written (explicit ``decode`` and runtime calls).
        noise: Pauli noise after every gate on the physical qubits: a probability (the
            depolarizing channel), ``{"p": p, "channel": "bit_flip"}`` or ``(channel, p)``.
        seed (int | None): seeds every execution's shots (the same seed gives the same
            samples over every transport).
        pipeline (str | None): the compiler pipeline (default: implicit QEC with a code,
            else noise and decode lowering); e.g. ``backline.NO_DECODE`` to measure what
            decoding buys.
        print_after_all (bool): print the IR after every pass (to stderr) at each execution.
        payload_bytes (int): the largest payload of a round (sets the ring's slots).
    """

    name = "backline.qubit"
    config_filepath = Path(__file__).with_name("backline_qubit.toml")

    def __init__(
        self,
        wires=None,
        shots=None,
        *,
        controller: Controller | None = None,
        coprocessors=(),
        transport: str = "memcpy",
        qec_code: str | None = None,
        noise=None,
        seed: int | None = None,
        pipeline: str | None = None,
        print_after_all: bool = False,
        payload_bytes: int = 48,
    ):
        check_wire_count("Backline(wires)", wires)
        check_int("Backline(payload_bytes)", payload_bytes, PAYLOAD_BYTES,
                  "a slot's payload, as backline serve --payload-bytes")
        if shots is not None and hasattr(shots, "__index__") and not isinstance(shots, bool):
            program_limits().check("shots", shots, "Backline(shots)")
        if controller is None:
            controller = Controller(wires=wires)
        elif wires is not None and controller.wires is not None and Wires(wires) != _wires(controller.wires):
            raise PlacementError(f"wires={wires!r} differ from the controller's wires {controller.wires!r}")
        if not isinstance(controller, Controller):
            raise PlacementError(f"controller={controller!r}: a backline.Controller")
        dev_wires = _wires(controller.wires) if controller.wires is not None else (Wires(wires) if wires is not None else None)
        super().__init__(wires=dev_wires, shots=shots)
        if transport not in TRANSPORTS:
            raise UnknownTransportError(f"unknown transport {transport!r} (known: {', '.join(TRANSPORTS)})")
        if qec_code not in QEC_CODES:
            raise UnknownQecCodeError(f"unknown qec_code {qec_code!r} (known: 'steane', or None for no code)")
        coprocessors = list(coprocessors)
        for c in coprocessors:
            if not isinstance(c, Coprocessor):
                raise PlacementError(f"coprocessors: {c!r} is not a backline.Coprocessor")
        if qec_code is not None and not coprocessors and pipeline is None:
            raise PlacementError(
                f"qec_code={qec_code!r} decodes every correction cycle on a coprocessor, but the "
                "placement has none: add coprocessors=[Coprocessor(coprocessor_fn="
                "CoprocessorFunction.builtin('steane'))]"
            )
        if controller.remote and transport == "memcpy":
            raise PlacementError(
                "Controller(remote=True) runs in an executor process, which reaches its "
                "coprocessors over shm, udp or rdma, not memcpy (in-process copies)"
            )
        if controller.hardware == "fpga" and transport != "rdma":
            raise PlacementError(
                f"Controller(hardware='fpga') reaches its coprocessor over rdma, not {transport!r}: "
                "give transport='rdma'"
            )
        self.controller = controller
        self.coprocessors = coprocessors
        self.transport = transport
        self.qec_code = qec_code
        self.noise_p, self.noise_channel = _noise(noise)
        self.pipeline = pipeline
        self.print_after_all = print_after_all
        self.payload_bytes = int(payload_bytes)
        self._seeds = np.random.default_rng(seed)
        self._seed = seed
        #: The settings Catalyst's compiled functions run this placement with (hex; see
        #: :meth:`catalyst_settings`), once made.
        #: What copies of the device share (Catalyst compiles with a shallow copy): the running
        #: placement and the settings its compiled functions run it with.
        self._shared = _Shared()
        self._lock = threading.Lock()
        # One run at a time: a coprocessor session serves one controller at a time.
        self._run_lock = threading.Lock()
        self.last_run = RunInfo()
        #: Programs compiled so far; the compiled programs kept by ``program_cache``.
        self.compiled_programs = 0
        self._cache: dict | None = None
        self._finalizer = weakref.finalize(self, _Shared.close, self._shared)

    # ---- the device API ----

    def preprocess_transforms(self, execution_config: ExecutionConfig | None = None) -> CompilePipeline:
        program = CompilePipeline()
        program.add_transform(_check_shots)
        program.add_transform(_check_wires, device_wires=self.wires)
        program.add_transform(split_non_commuting, grouping_strategy="qwc")
        program.add_transform(diagonalize_measurements, supported_base_obs={qml.Z})
        program.add_transform(broadcast_expand)
        return program

    def setup_execution_config(self, config: ExecutionConfig | None = None, circuit=None) -> ExecutionConfig:
        config = config or ExecutionConfig()
        m = config.mcm_config.mcm_method
        if m not in (None, "one-shot", "device"):
            raise CompileError(
                f"mcm_method={m!r}: backline.qubit measures mid-circuit natively, shot by shot "
                "(mcm_method='one-shot')"
            )
        from dataclasses import replace

        return replace(config, mcm_config=replace(config.mcm_config, mcm_method="one-shot"),
                       gradient_method=None if config.gradient_method in ("best", None) else config.gradient_method)

    def execute(self, circuits, execution_config: ExecutionConfig | None = None):
        with self._run_lock:
            return tuple(self._execute_one(t) for t in circuits)

    # ---- placement ----

    def runtime(self) -> _Runtime:
        """Starts the placement's coprocessors (once)."""
        with self._lock:
            if self._shared.runtime is None:
                self._shared.runtime = _Runtime(self)
            return self._shared.runtime

    def close(self):
        """Stops the coprocessors this device started."""
        with self._lock:
            self._shared.close()

    # ---- Catalyst ----

    def get_c_interface(self):
        """Catalyst's device interface (``catalyst.qjit``): ``(name, library)``, the factory
        ``BacklineQubitFactory`` of this package's native module. Under Catalyst every gate
        runs as it is called — with a code, transversally on the Steane blocks and followed by
        a correction cycle whose two decodes are rounds to coprocessor 0 — and measurements are
        decoded block measurements, as without Catalyst (``backline/_qjit.py``)."""
        # Loaded globally, so that the noise channels' runtime symbols it exports
        # (`__catalyst__qis__BitFlip` …) resolve when Catalyst loads a compiled program.
        ctypes.CDLL(_native.__file__, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        return _native.CATALYST_DEVICE, _native.__file__

    @property
    def device_kwargs(self) -> dict:
        """What Catalyst passes to the device library: the placement (its coprocessors started
        first), code, pipeline, noise and seed, as :meth:`catalyst_settings`."""
        return {"backline": self.catalyst_settings()}

    def catalyst_settings(self) -> str:
        """The placement as Catalyst's compiled functions run it: hex of ``key=value`` lines
        (no quote or comma can break Catalyst's kwargs string). Starts the coprocessors."""
        if self.controller.hardware == "fpga":
            from ._qjit import QjitError

            raise QjitError(
                "Controller(hardware='fpga'): Catalyst runs a compiled program in this process, "
                "gate by gate; an FPGA controller runs the whole program on its board — use "
                "qp.compile_once (backline's compiler) for this placement"
            )
        with self._lock:
            if self._shared.catalyst_hex is not None:
                return self._shared.catalyst_hex
        rt = self.runtime()
        pipeline = self.pipeline or (_native.IMPLICIT_QEC if self.qec_code else _native.PLAIN)
        seed = self._seed if self._seed is not None else int.from_bytes(os.urandom(8), "little") >> 1
        lines = [
            f"qec={self.qec_code or 'none'}",
            f"pipeline={pipeline}",
            f"noise={float(self.noise_p)!r} {self.noise_channel}",
            f"seed={int(seed) % 2**64}",
        ]
        for t, key, peer, payload, reply, setup in rt.endpoints:
            lines.append(f"endpoint={t} {key} {peer} {int(payload)} {float(reply)!r} {float(setup)!r}")
        text = "\n".join(lines)
        with self._lock:
            if self._shared.catalyst_hex is None:
                self._shared.catalyst_hex = text.encode().hex()
            return self._shared.catalyst_hex

    def _wire_list(self, tape) -> list:
        if self.wires is not None:
            return list(self.wires)
        return list(tape.wires)

    def translate(self, tape, name: str = "circuit"):
        """The native compiler's input for a device-ready tape."""
        labels = [c.label() for c in self.coprocessors]
        keys = [c.keys() for c in self.coprocessors]
        return _frontend.translate(tape, self._wire_list(tape), self.qec_code, labels, name, keys)

    def compile(self, tape, name: str = "circuit", dumps: bool = False):
        """``(translation, compiled)`` of a device-ready tape; inside :meth:`program_cache`, a
        circuit compiled before is not compiled again."""
        tr = self.translate(tape, name)
        key = None
        if self._cache is not None and not dumps:
            key = (tuple(tr.header[:4]), tr.header[4], tuple(tr.header[5]),
                   tuple((tag, tuple(ints), p) for tag, ints, p in tr.ops))
            hit = self._cache.get(key)
            if hit is not None:
                return tr, hit
        compiled = _native.compile(tr.header, tr.ops, self.pipeline, self.noise_p, self.noise_channel, dumps)
        self.compiled_programs += 1
        if key is not None:
            self._cache[key] = compiled
        return tr, compiled

    @contextlib.contextmanager
    def program_cache(self):
        """While active, each distinct circuit is compiled once and its program reused
        (``qp.qjit``); the cache lives as long as the device."""
        with self._lock:
            if self._cache is None:
                self._cache = {}
        yield self._cache

    def _check_requests(self, compiled):
        for c, decoder_id in compiled.requests:
            cop = self.coprocessors[c]
            ids = cop.decoder_ids()
            if ids is not None and decoder_id not in ids:
                raise DecoderIdError(
                    f"the program sends decoder_id {decoder_id} to coprocessor {c} ({cop.label()}), "
                    f"which serves decoder ids {sorted(ids)}"
                )

    def _execute_one(self, tape):
        t0 = time.perf_counter()
        shots = tape.shots.total_shots
        # The program limits before anything is compiled or allocated for this run: an absurd
        # count of shots or wires is a ValueError here, not an abort in the VM.
        lim = program_limits()
        if shots is not None:
            lim.check("shots", shots)
        lim.check("qubits", len(self._wire_list(tape)), "wires")
        tr, compiled = self.compile(tape, dumps=self.print_after_all)
        if shots is not None:
            check_program_header(compiled.to_bytes(), shots)
        if self.print_after_all:
            for stage, text in compiled.dumps:
                print(f"// ----- IR {'before the first pass' if stage == 'input' else 'after ' + stage} -----\n{text}",
                      file=sys.stderr, end="")
        self._check_requests(compiled)
        rt = (self.runtime()
              if (compiled.requests or self.controller.hardware == "fpga" or self.controller.remote)
              else None)
        seed = int(self._seeds.integers(0, 2**63))
        if rt is not None and rt.controller_exec is not None:
            opts = self.controller.executor_options
            bits, width, rtts = rt.controller_exec.run(
                compiled.to_bytes(), shots, seed, rt.endpoints, rt.board_spec,
                timeout=float(opts.get("connect_timeout", 10.0)))
        elif rt is None:
            bits, width, rtts = _native.run(compiled, shots, seed)
        elif rt.board is not None:
            bits, width, rtts = _native.run(compiled, shots, seed, [], rt.board)
        else:
            bits, width, rtts = _native.run(compiled, shots, seed, rt.endpoints)
        self.last_run = RunInfo(shots=shots, rounds=len(rtts), rtts_ns=np.asarray(rtts),
                                dumps=compiled.dumps, seconds=time.perf_counter() - t0)
        return _frontend.results(tape, bits, width, shots, tr)


class _Shared:
    """The running parts of a placement, shared by a device and its (shallow) copies."""

    def __init__(self):
        self.runtime: _Runtime | None = None
        #: The settings of Catalyst's compiled functions (hex), once made.
        self.catalyst_hex: str | None = None

    def close(self):
        if self.catalyst_hex is not None:
            # The sessions of compiled functions go before the servers they talk to.
            _native.catalyst_forget(self.catalyst_hex)
            self.catalyst_hex = None
        if self.runtime is not None:
            self.runtime.close()
            self.runtime = None


def _wires(w) -> Wires:
    if isinstance(w, int):
        return Wires(range(w))
    return Wires(w)
