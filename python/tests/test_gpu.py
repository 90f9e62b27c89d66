"""GPU coprocessors from Python: the same program on a GPU placement gives the same samples as
on the CPU. Without a GPU the kernels run under backline-gpu's host emulation (the same kernel
source on CPU threads, ``init_args={"backend": "emu"}``); with one, ``BACKLINE_GPU_BACKEND``
picks it up."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import ghz_qnode, steane_placement

import backline
from backline import Backline, Controller, Coprocessor, CoprocessorFunction, errors

EMU = {"backend": os.environ.get("BACKLINE_TEST_GPU_BACKEND", "emu")}


def gpu_steane(transport="memcpy", remote=False, **kw):
    return Backline(
        controller=Controller(hardware="cpu", wires=3),
        coprocessors=[Coprocessor(hardware="gpu", coprocessor_fn=CoprocessorFunction.builtin("steane"),
                                  remote=remote, init_args=EMU)],
        transport=transport,
        qec_code="steane",
        noise=0.01,
        seed=1234,
        **kw,
    )


@pytest.mark.parametrize("transport,remote", [("memcpy", False), ("shm", False), ("udp", "process")])
def test_a_gpu_steane_coprocessor_gives_the_cpus_samples(transport, remote):
    cpu = ghz_qnode(steane_placement(noise=0.01), shots=200)()
    dev = gpu_steane(transport, remote)
    gpu = ghz_qnode(dev, shots=200)()
    np.testing.assert_array_equal(gpu, cpu)
    assert dev.last_run.rounds == 200 * 13
    dev.close()


def test_css_bp_decoder_on_a_gpu_gives_the_cpus_samples():
    """Demo 2's memory experiment on the [[13,1,3]] code, BP+OSD on the CPU and on the GPU."""
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    import memory13
    import pennylane as qml

    dec = backline.css_bp_decoder(memory13.HX, memory13.HZ, postprocess="osd", num_iters=10)
    samples = {}
    for hw, init in (("cpu", {}), ("gpu", EMU)):
        dev = Backline(
            controller=Controller(hardware="cpu", wires=memory13.N + 1),
            coprocessors=[Coprocessor(hardware=hw, coprocessor_fn=dec, init_args=init)],
            transport="memcpy",
            seed=99,
        )

        @qml.set_shots(300)
        @qml.qnode(dev)
        def memory():
            syndrome = memory13.prepare_and_measure_z_checks(0.08)
            correction = backline.decode(syndrome, decoder_id=backline.Z_CHECKS)
            for q in range(memory13.N):
                qml.cond(correction[q], qml.PauliX)(wires=q)
            return qml.sample(wires=range(memory13.N))

        samples[hw] = memory()
        dev.close()
    np.testing.assert_array_equal(samples["gpu"], samples["cpu"])
    # Errors happened and were corrected: every shot's Z syndrome is zero after decoding.
    assert not ((np.asarray(samples["gpu"]).astype(int) @ memory13.HZ.T) % 2).any()


def test_gpu_placements_refuse_what_cannot_run_there(steane_lib, tmp_path):
    c_fn = CoprocessorFunction(name="steane_decode", lib_path=steane_lib)
    with pytest.raises(errors.PlacementError, match="runs on the CPU only"):
        Coprocessor(hardware="gpu", coprocessor_fn=c_fn)
    k = tmp_path / "k.cu"
    k.write_text("BL_USER_FUNCTION bl_u32 f(const bl_u8 *i, bl_u32 n, bl_u8 *o, bl_u32 c, bl_u32 d) { return 0; }\n")
    with pytest.raises(errors.PlacementError, match="runs on a GPU only"):
        Coprocessor(hardware="cpu", coprocessor_fn=CoprocessorFunction.gpu_kernel(k, "f"))
    with pytest.raises(errors.PlacementError, match="unknown init_args key 'gpus'"):
        Coprocessor(hardware="gpu", coprocessor_fn=CoprocessorFunction.builtin("echo"), init_args={"gpus": 2})
    with pytest.raises(errors.CoprocessorFunctionError, match="not found"):
        CoprocessorFunction.gpu_kernel(tmp_path / "missing.cu", "f")


def test_a_gpu_kernel_written_as_a_device_function_decodes(tmp_path):
    src = tmp_path / "steane.cu"
    src.write_text(
        "// The Steane lookup as a device function: syndrome s names qubit s-1.\n"
        "BL_USER_FUNCTION bl_u32 steane_dev(const bl_u8 *in, bl_u32 n, bl_u8 *out, bl_u32 cap, bl_u32 id) {\n"
        "    if (n < 1 || cap < 1) return BL_USER_FAILED;\n"
        "    bl_u8 s = in[0] & 7;\n"
        "    if (bl_tid() == 0) out[0] = s == 0 ? 0x0F : (bl_u8)(s - 1);\n"
        "    return 1;\n"
        "}\n"
    )
    fn = CoprocessorFunction.gpu_kernel(src, "steane_dev")
    dev = Backline(
        controller=Controller(hardware="cpu", wires=3),
        coprocessors=[Coprocessor(hardware="gpu", coprocessor_fn=fn, init_args=EMU)],
        transport="memcpy", qec_code="steane", noise=0.01, seed=1234,
    )
    gpu = ghz_qnode(dev, shots=100)()
    cpu = ghz_qnode(steane_placement(noise=0.01), shots=100)()
    np.testing.assert_array_equal(gpu, cpu)


def test_no_gpu_is_a_clear_error():
    if os.environ.get("BACKLINE_TEST_GPU_BACKEND"):
        pytest.skip("a GPU backend is configured")
    dev = Backline(
        controller=Controller(hardware="cpu", wires=3),
        coprocessors=[Coprocessor(hardware="gpu", coprocessor_fn=CoprocessorFunction.builtin("steane"),
                                  init_args={"backend": "auto"})],
        transport="memcpy", qec_code="steane",
    )
    with pytest.raises(errors.PlacementError, match="no GPU"):
        ghz_qnode(dev, shots=2)()


def test_a_triton_decoder_compiles_ahead_without_a_gpu_and_names_where_it_runs(tmp_path):
    pytest.importorskip("triton", reason="Triton is not installed")
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    from steane_triton import steane_decode

    f = backline.triton_decoder(steane_decode, cache_dir=tmp_path)
    text = open(f.ptx_path).read()
    assert text.startswith("// backline triton decoder: kernel=steane_decode num_warps=1 platform=cuda:sm_80\n")
    assert ".visible .entry steane_decode(" in text and ".target sm_80" in text
    assert ".file" not in text, "no line info (no machine paths)"
    c = Coprocessor(hardware="gpu", coprocessor_fn=f, init_args=EMU)
    assert c.fns()[0][1] == f"gpu:triton:{f.ptx_path}"
    with pytest.raises(errors.PlacementError, match="runs on a GPU only"):
        Coprocessor(hardware="cpu", coprocessor_fn=f)
    # The emulation runs C++, not PTX: a clear refusal when the coprocessor starts.
    dev = Backline(controller=Controller(hardware="cpu", wires=3), coprocessors=[c],
                   transport="memcpy", qec_code="steane")
    with pytest.raises(errors.PlacementError, match="compiled for cuda:sm_80; the emu backend cannot run it"):
        ghz_qnode(dev, shots=2)()


def test_a_triton_function_of_the_wrong_shape_is_refused():
    triton = pytest.importorskip("triton", reason="Triton is not installed")

    @triton.jit
    def two_args(a, b):
        pass

    with pytest.raises(errors.CoprocessorFunctionError, match="a decoder takes exactly"):
        backline.triton_decoder(two_args)
    # A plain function is a per-message function of the syndrome: one argument.
    with pytest.raises(errors.CoprocessorFunctionError, match="must take one argument, the syndrome"):
        backline.triton_decoder(lambda: None)
    with pytest.raises(errors.CoprocessorFunctionError, match="is not a plain function"):
        backline.triton_decoder((two_args,))
