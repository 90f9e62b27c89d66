"""Decoders written in Triton, for GPU coprocessors: the reference system's route to a GPU
kernel from Python, without Python at run time.

``triton_decoder(fn)`` compiles a ``@triton.jit`` function ahead of time for NVIDIA GPUs
(``sm_80``; later GPUs run it through the driver's JIT) — Triton needs no GPU for this — into a
PTX file that the Rust launcher links into backline's persistent kernel when the coprocessor
starts. The function must have this signature and no other arguments::

    @triton.jit
    def decode(in_ptr, in_len, out_ptr, out_cap, decoder_id, len_ptr):
        ...                        # read in_len bytes at in_ptr, write the reply at out_ptr
        tl.store(len_ptr, n)       # the reply length (negative: a failure)

and must not use shared memory. Use it as ``Coprocessor(hardware="gpu",
coprocessor_fn=triton_decoder(decode))``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

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

#: The GPU architecture the PTX targets.
ARCH = 80


def compile_ptx(fn, num_warps: int = 1) -> tuple[str, str]:
    """``(kernel name, PTX)`` of a ``@triton.jit`` decoder, compiled for ``sm_80``."""
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
                           target=GPUTarget("cuda", ARCH, 32),
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
    return inner.__name__, k.asm["ptx"]


def triton_decoder(fn, *, num_warps: int = 1, cache_dir: str | os.PathLike | None = None) -> CoprocessorFunction:
    """A GPU coprocessor function from a ``@triton.jit`` decoder (see the module docs),
    compiled now; the PTX goes to ``cache_dir`` (default: the temporary directory), named by
    its content."""
    name, ptx = compile_ptx(fn, num_warps)
    text = f"// backline triton decoder: kernel={name} num_warps={num_warps}\n{ptx}"
    d = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir()) / "backline-triton"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.ptx"
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
    return f
