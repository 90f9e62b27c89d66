"""The examples run (demo 1a needs an RDMA device: it runs in the Soft-RoCE VM harness; here
only its refusal without one is checked)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT

import backline

EXAMPLES = ROOT / "examples"


def run(name, *args, ok=True):
    p = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=300)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def _latency_row(out):
    m = re.search(r"round 0 .*\n\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out)
    assert m, out
    return [float(x) for x in m.groups()]


@pytest.mark.parametrize("name,args", [
    ("01_ghz_memcpy.py", ["--shots", "20", "--seed", "4"]),
    ("03_ghz_remote.py", ["--shots", "20", "--seed", "4", "--transport", "shm"]),
    ("03_ghz_remote.py", ["--shots", "20", "--seed", "4", "--transport", "udp"]),
])
def test_the_ghz_demos_print_samples_and_latency(name, args):
    out = run(name, *args).stdout
    counts = re.search(r"counts: (.*)", out).group(1)
    assert set(re.findall(r"(\d{3}): \d+", counts)) <= {"000", "111"}, counts
    assert "260 decode rounds" in out
    assert "259 rounds after round 0" in out
    assert all(x > 0 for x in _latency_row(out))


def test_demo_1_and_3_give_the_same_samples():
    a = run("01_ghz_memcpy.py", "--shots", "30", "--seed", "9", "--noise", "0.01").stdout
    b = run("03_ghz_remote.py", "--shots", "30", "--seed", "9", "--noise", "0.01", "--transport", "udp").stdout
    assert re.search(r"counts: .*", a).group(0) == re.search(r"counts: .*", b).group(0)


@pytest.mark.skipif(not backline._native.HAS_FPGA, reason="built without the fpga feature")
@pytest.mark.parametrize("args", [[], ["--function", "c", "--bridge", "udp"]])
def test_demo_4_runs_through_the_simulated_board_to_a_real_executor(args):
    p = run("04_ghz_fpga.py", "--shots", "5", "--seed", "4", "--noise", "0.01", *args, ok=False)
    if p.returncode != 0 and "built without Verilator" in p.stderr:
        pytest.skip(p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stderr
    assert "executor process" in p.stdout
    assert "65 decode rounds" in p.stdout
    assert all(x > 0 for x in _latency_row(p.stdout))
    # The same samples as demo 1 for the same seed.
    one = run("01_ghz_memcpy.py", "--shots", "5", "--seed", "4", "--noise", "0.01").stdout
    assert re.search(r"counts: .*", p.stdout).group(0) == re.search(r"counts: .*", one).group(0)


@pytest.mark.skipif(not backline._native.HAS_FPGA, reason="built without the fpga feature")
def test_demo_5_runs_its_device_function_behind_the_simulated_board():
    """Demo 5's .cu route under the host emulation: the board's ERNIC delivers every syndrome
    to the persistent kernel running the user's Steane device function."""
    p = run("05_ghz_fpga_gpu_kernel.py", "--shots", "5", "--seed", "4", "--noise", "0.01",
            "--kernel", "cu", "--gpu", "emu", ok=False)
    if p.returncode != 0 and "built without Verilator" in p.stderr:
        pytest.skip(p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stderr
    assert "65 decode rounds" in p.stdout
    one = run("01_ghz_memcpy.py", "--shots", "5", "--seed", "4", "--noise", "0.01").stdout
    assert re.search(r"counts: .*", p.stdout).group(0) == re.search(r"counts: .*", one).group(0)


def test_demo_5_says_plainly_where_its_triton_decoder_cannot_run():
    pytest.importorskip("triton", reason="Triton is not installed")
    p = run("05_ghz_fpga_gpu_kernel.py", "--shots", "2", "--gpu", "emu", ok=False)
    assert p.returncode != 0
    assert p.stderr.strip().splitlines()[-1].startswith("demo 5: a Triton decoder is PTX for an NVIDIA GPU")
    if not backline._native.HAS_FPGA:
        return
    # --gpu auto without a GPU: compiled ahead of time, then one line saying there is no GPU.
    p = run("05_ghz_fpga_gpu_kernel.py", "--shots", "2", ok=False)
    if p.returncode == 0:
        pytest.skip("a GPU ran the Triton decoder")
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("demo 5: ") and ("no GPU" in last or "Verilator" in last), p.stderr


@pytest.mark.parametrize("name", ["02_explicit_bposd.py", "02a_runtime_calls.py"])
def test_the_bposd_demos_decode(name):
    out = run(name, "--shots", "400", "--seed", "2").stdout
    m = re.search(r"logical failures: (\d+) with decoding .*, (\d+) without", out)
    assert m, out
    assert int(m.group(1)) < int(m.group(2)) / 4
    assert "every corrected shot has a zero Z syndrome: True" in out
    assert "800 decode rounds" in out  # the X and the Z checks, each shot


@pytest.mark.parametrize("name", ["02_explicit_bposd.py", "02a_runtime_calls.py"])
def test_the_bposd_demos_give_the_same_samples_with_the_decoder_on_a_gpu(name):
    cpu = run(name, "--shots", "200", "--seed", "3").stdout
    gpu = run(name, "--shots", "200", "--seed", "3", "--gpu", "emu").stdout
    pick = lambda out: re.findall(r"data [01]+|logical failures: \d+ with decoding", out)  # noqa: E731
    assert pick(gpu) == pick(cpu)
    assert "every corrected shot has a zero Z syndrome: True" in gpu


def test_demo_3_with_its_executor_on_a_gpu_gives_the_same_samples():
    a = run("01_ghz_memcpy.py", "--shots", "30", "--seed", "9", "--noise", "0.01").stdout
    b = run("03_ghz_remote.py", "--shots", "30", "--seed", "9", "--noise", "0.01", "--transport", "udp",
            "--gpu", "emu").stdout
    assert "from a GPU kernel" in b
    assert re.search(r"counts: .*", a).group(0) == re.search(r"counts: .*", b).group(0)


@pytest.mark.skipif(not backline._native.HAS_FPGA, reason="built without the fpga feature")
def test_demo_2_with_the_fpga_controller_gives_demo_2s_samples():
    p = run("02_explicit_bposd.py", "--shots", "150", "--seed", "2", "--fpga", ok=False)
    if p.returncode != 0 and "built without Verilator" in p.stderr:
        pytest.skip(p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stderr
    assert "every corrected shot has a zero Z syndrome: True" in p.stdout
    assert "300 decode rounds" in p.stdout
    cpu = run("02_explicit_bposd.py", "--shots", "150", "--seed", "2").stdout
    fails = re.compile(r"logical failures: .*")
    assert fails.search(p.stdout).group(0) == fails.search(cpu).group(0)
    shots = re.compile(r"  data \d+")
    assert shots.findall(p.stdout) == shots.findall(cpu)


def test_demo_1a_refuses_clearly_without_rdma():
    p = run("01a_ghz_rdma.py", "--shots", "2", ok=False)
    if p.returncode == 0:
        pytest.skip("this build has rdma: demo 1a ran (the VM harness checks it)")
    assert "rdma" in p.stderr and "CoprocessorUnreachableError" in p.stderr


def test_compare_transports_agrees_on_every_placement():
    out = run("compare_transports.py", "--shots", "40", "--noise", "0.01").stdout
    assert "identical samples on every placement: True" in out
    for label in ("memcpy (server thread)", "shm (executor process)", "udp (executor process)"):
        assert re.search(rf"{re.escape(label)}\s+519\s", out), out


def test_the_decoders_drop_in_notebook_runs_and_matches_its_originals():
    """examples/decoders_drop_in.py: the originals' README calls with backline's import; with
    the originals installed, the same script on their import prints the same lines."""
    import importlib.util

    out = run("decoders_drop_in.py", "--shots", "300").stdout
    assert "prediction [0 0 1 1 0], weight 5.0" in out
    m = re.search(r"(\d+) logical errors in 300 shots one by one, (\d+) as a batch", out)
    assert m and m.group(1) == m.group(2), out
    assert "syndrome met True" in out
    assert "the decoded errors were [0 1 0]" in out
    assert "[[0, 0, 1], [1, 0, 0], [0, 1, 0]]" in out
    if all(importlib.util.find_spec(x) for x in ("pymatching", "ldpc", "relay_bp")):
        text = (EXAMPLES / "decoders_drop_in.py").read_text()
        for ours, theirs in (("from backline.decoders import BpOsdDecoder", "from ldpc import BpOsdDecoder"),
                             ("from backline.decoders import Matching", "from pymatching import Matching"),
                             ("from backline.decoders import RelayDecoderF32", "from relay_bp import RelayDecoderF32")):
            assert ours in text
            text = text.replace(ours, theirs)
        p = subprocess.run([sys.executable, "-c", text, "--shots", "300"], capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        assert p.stdout == out
