"""Decoders written in Triton, for GPU coprocessors: the reference system's route to a GPU
kernel from Python, without Python at run time.

``triton_decoder(fns, platform=...)`` takes what the reference writes — a plain per-message
function of the syndrome, or a tuple of them indexed by decoder id::

    def steane_lookup(syndrome):             # triton.language values in, the correction out
        s = syndrome & 7
        return tl.where(s == 0, 15, s - 1)

    triton_decoder((steane_lookup, steane_lookup), platform="hip:gfx90a:64")

— wraps them into a kernel of the persistent loop's decoder signature (byte 0 of the request
is the syndrome, the reply is one byte: ``fns[decoder_id](syndrome)``; a decoder id past the
tuple fails the message) and compiles it ahead of time for the named platform — Triton needs
no GPU for this: ``"cuda:sm_80"`` (the default; later NVIDIA GPUs run it through the driver's
JIT), ``"cuda:sm_90"``, or ``"hip:gfx90a:64"`` (Triton's AMD backend, wave size 64). It also
takes a ``@triton.jit`` function of the decoder signature itself::

    @triton.jit
    def decode(in_ptr, in_len, out_ptr, out_cap, decoder_id, len_ptr):
        ...                        # read in_len bytes at in_ptr, write the reply at out_ptr
        tl.store(len_ptr, n)       # the reply length (negative: a failure)

which must not use shared memory. On an NVIDIA GPU the Rust launcher links the PTX into
backline's persistent kernel when the coprocessor starts; a HIP decoder is compiled (its code
object is kept beside the file) but the HIP persistent kernel links user functions from
source only, and says so when such a coprocessor starts. Use it as
``Coprocessor(hardware="gpu", coprocessor_fn=triton_decoder(...))``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from ._platforms import PLATFORMS, check_platform  # noqa: F401  (PLATFORMS: part of this module's API)
from .errors import CoprocessorFunctionError
from .placement import CoprocessorFunction

#: Triton's types for the decoder's six parameters.
SIGNATURE = {
    "in_ptr": "*u8",
    "in_len": "i32",
    "out_ptr": "*u8",
    "out_cap": "i32",
    "decoder_id": "i32",
    "len_ptr": "*i32",
}

#: The GPU architecture the PTX targets by default.
ARCH = 80

def compile_ptx(fn, num_warps: int = 1, platform: str = "cuda:sm_80") -> tuple[str, str]:
    """``(kernel name, assembly)`` of a ``@triton.jit`` decoder, compiled for ``platform``
    (PTX for ``cuda:``, AMDGCN for ``hip:``)."""
    backend, arch, warp = check_platform(platform)
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError as e:
        raise CoprocessorFunctionError(
            f"triton_decoder needs Triton (pip install triton): {e}"
        ) from None
    inner = getattr(fn, "fn", None)
    if inner is None:
        raise CoprocessorFunctionError(f"triton_decoder: {fn!r} is not a @triton.jit function")
    params = list(getattr(fn, "arg_names", None) or inner.__code__.co_varnames[: inner.__code__.co_argcount])
    if len(params) != len(SIGNATURE):
        raise CoprocessorFunctionError(
            f"triton_decoder: {inner.__name__} takes {params}; a decoder takes exactly "
            f"({', '.join(SIGNATURE)})"
        )
    if not isinstance(num_warps, int) or not 1 <= num_warps <= 32:
        raise CoprocessorFunctionError(f"triton_decoder: num_warps={num_warps!r} (1..32)")
    signature = dict(zip(params, SIGNATURE.values()))
    # No line info (it would carry this machine's paths into the PTX), no FMA contraction
    # (a decoder rounds like the CPU's).
    saved = os.environ.get("TRITON_DISABLE_LINE_INFO")
    os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
    try:
        k = triton.compile(ASTSource(fn=fn, signature=signature, constexprs={}),
                           target=GPUTarget(backend, arch, warp),
                           options={"num_warps": num_warps, "enable_fp_fusion": False})
    except Exception as e:  # noqa: BLE001 — Triton raises many kinds; all mean "does not compile"
        raise CoprocessorFunctionError(f"triton_decoder: {inner.__name__} does not compile: {e}") from None
    finally:
        if saved is None:
            os.environ.pop("TRITON_DISABLE_LINE_INFO", None)
        else:
            os.environ["TRITON_DISABLE_LINE_INFO"] = saved
    if getattr(k.metadata, "shared", 0):
        raise CoprocessorFunctionError(
            f"triton_decoder: {inner.__name__} uses {k.metadata.shared} bytes of shared memory; "
            "the persistent kernel keeps shared memory for itself"
        )
    return inner.__name__, k.asm["ptx" if backend == "cuda" else "amdgcn"]


def _wrapper(fns, cache: Path):
    """A ``@triton.jit`` kernel of the decoder signature around plain per-message functions:
    ``fns[decoder_id](syndrome byte)`` into reply byte 0."""
    try:
        import triton
    except ImportError as e:
        raise CoprocessorFunctionError(f"triton_decoder needs Triton (pip install triton): {e}") from None
    for i, f in enumerate(fns):
        if not callable(f) or getattr(f, "fn", None) is not None:
            raise CoprocessorFunctionError(
                f"triton_decoder: fns[{i}]={f!r} is not a plain function of the syndrome (a "
                "@triton.jit kernel of the decoder signature is given alone, not in a tuple)"
            )
        code = getattr(f, "__code__", None)
        if code is None or code.co_argcount != 1:
            raise CoprocessorFunctionError(
                f"triton_decoder: {getattr(f, '__name__', f)!r} must take one argument, the syndrome"
            )
    names = [f"bl_fn{i}" for i in range(len(fns))]
    body = "\n".join(
        f"    {'if' if i == 0 else 'elif'} decoder_id == {i}:\n        r = {n}(s)"
        for i, n in enumerate(names)
    )
    source = (
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\n"
        "def bl_plain_decoder(in_ptr, in_len, out_ptr, out_cap, decoder_id, len_ptr):\n"
        "    s = tl.load(in_ptr).to(tl.int32)\n"
        "    r = s * 0 - 1\n"
        f"{body}\n"
        f"    ok = (in_len >= 1) & (out_cap >= 1) & (decoder_id < {len(fns)})\n"
        "    tl.store(out_ptr, r.to(tl.int32).to(tl.uint8), mask=ok)\n"
        "    tl.store(len_ptr, tl.where(ok, 1, -1))\n"
    )
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = cache / f"bl_plain_decoder_{digest}.py"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        tmp.replace(path)
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"backline_triton_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for n, f in zip(names, fns):
        setattr(module, n, triton.jit(f))
    return module.bl_plain_decoder


class _NotTabulable(Exception):
    pass


class _NumpyLanguage:
    """Stands in for ``triton.language`` while a plain per-message function is evaluated for
    every syndrome byte at once (elementwise over numpy arrays)."""

    def __init__(self):
        import numpy as np

        self.where = np.where
        self.minimum = np.minimum
        self.maximum = np.maximum
        self.abs = np.abs
        for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
            setattr(self, t, getattr(np, t))

    def __getattr__(self, name):
        raise _NotTabulable(f"tl.{name}")


def truth_table(fns) -> list[bytes] | None:
    """``fns[i](s) & 0xFF`` for every decoder id ``i`` and syndrome byte ``s``, evaluated
    ahead of time with numpy in the place of ``triton.language``; None when a function uses
    what numpy cannot stand in for."""
    import types

    import numpy as np

    import triton.language as language

    shim = _NumpyLanguage()
    s = np.arange(256, dtype=np.int32)
    tables = []

    def swap(v):
        return shim if v is language else v

    for f in fns:
        # Wherever the function reaches triton.language — a global or a variable it closes
        # over, by any name — it reaches the numpy stand-in instead.
        glob = {k: swap(v) for k, v in f.__globals__.items()}
        cells = tuple(types.CellType(swap(c.cell_contents)) for c in (f.__closure__ or ()))
        g = types.FunctionType(f.__code__, glob, f.__name__, f.__defaults__, cells or None)
        try:
            r = np.broadcast_to(np.asarray(g(s)), (256,)).astype(np.int64)
        except Exception:  # noqa: BLE001 — anything numpy cannot do: no table
            return None
        tables.append(bytes((r & 0xFF).astype(np.uint8).tolist()))
    return tables


def _table_kernel(tables: list[bytes], d: Path) -> Path:
    """A device function of the persistent kernel's user signature (gpu-responder/README.md)
    that answers ``tables[decoder_id][syndrome byte]``: the decoder for backends that cannot
    link Triton's code, compiled when the coprocessor starts (NVRTC, hiprtc, the emulation's
    C++ compiler)."""
    rows = ",\n".join(
        "    {" + ", ".join(str(b) for b in t) + "}" for t in tables
    )
    src = (
        "// A backline Triton decoder as its truth table: fns[decoder_id](syndrome byte), each\n"
        "// evaluated ahead of time by backline.triton_decoder. Generated; do not edit.\n"
        f"BL_USER_FUNCTION bl_u32 bl_table_decoder(const bl_u8 *in, bl_u32 in_len, bl_u8 *out,\n"
        f"                                         bl_u32 out_cap, bl_u32 decoder_id) {{\n"
        f"    static const bl_u8 table[{len(tables)}][256] = {{\n{rows}\n    }};\n"
        f"    if (in_len < 1 || out_cap < 1 || decoder_id >= {len(tables)}) return BL_USER_FAILED;\n"
        "    if (bl_tid() == 0) out[0] = table[decoder_id][in[0]];\n"
        "    return 1;\n"
        "}\n"
    )
    path = d / f"bl_table_decoder-{hashlib.sha256(src.encode()).hexdigest()[:16]}.cu"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(src)
        tmp.replace(path)
    return path


def triton_decoder(fns, *, platform: str = "cuda:sm_80", num_warps: int = 1,
                   cache_dir: str | os.PathLike | None = None) -> CoprocessorFunction:
    """A GPU coprocessor function from Triton code (see the module docs): a plain function of
    the syndrome, a tuple of them (indexed by decoder id), or a ``@triton.jit`` kernel of the
    decoder signature, compiled now for ``platform`` (``"cuda:sm_80"``, ``"cuda:sm_90"``,
    ``"hip:gfx90a:64"``); the code goes to ``cache_dir`` (default: the temporary directory),
    named by its content."""
    check_platform(platform)
    d = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir()) / "backline-triton"
    d.mkdir(parents=True, exist_ok=True)
    plain = None
    if isinstance(fns, (tuple, list)):
        if not fns:
            raise CoprocessorFunctionError("triton_decoder: an empty tuple of functions")
        plain = tuple(fns)
    elif getattr(fns, "fn", None) is None:
        # One function serves decoder ids 0 and 1 (the X and Z checks), as any alone does.
        plain = (fns, fns)
    if plain is not None:
        kernel = _wrapper(plain, d)
        ids = tuple(range(len(plain)))
    else:
        kernel, ids = fns, None
    name, asm = compile_ptx(kernel, num_warps, platform)
    text = f"// backline triton decoder: kernel={name} num_warps={num_warps} platform={platform}\n{asm}"
    ext = "ptx" if platform.startswith("cuda:") else "amdgcn"
    path = d / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.{ext}"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    f = CoprocessorFunction.__new__(CoprocessorFunction)
    f.name = name
    f.lib_path = None
    f.spec = f"triton:{path}"
    f.hardware = ("gpu",)
    f.ptx_path = str(path)
    f.platform = platform
    f.table_kernel = None
    if ids is not None:
        # One function per decoder id of the tuple, all in one kernel.
        f.default_ids = ids
        tables = truth_table(plain)
        if tables is not None:
            f.table_kernel = str(_table_kernel(tables, d))
    return f
