"""Issue 39 ("Hostile input on the newest doors"), the Python cases: nothing a caller passes to
``backline.decoders.Matching``, ``Endpoint`` or a local run aborts, segfaults or panics into the
user's face, weights and indices are never silently wrapped, and memory stays bounded (the
memory cases run in a fresh interpreter under a 4 GB address space, as the reporter ran them).
The Catalyst cases (9, 10) are in test_catalyst.py."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from backline import Endpoint, errors
from backline.decoders import Matching

AS_LIMIT = 4 << 30  # the reporter's 4 GB address space


def _limit_as():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def _python(code: str, env=None, timeout=120) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter under a 4 GB address space."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limit_as, cwd="/tmp", env={**os.environ, **(env or {})})


def _clean(r: subprocess.CompletedProcess) -> None:
    """The child ended normally and printed no panic or Rust backtrace."""
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    for bad in ("panicked", "internal error", "stack backtrace", "memory allocation of"):
        assert bad not in r.stdout + r.stderr, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.rstrip().endswith("alive"), r.stdout[-2000:]


# ------------------------------------------------------------------ 3: weights never wrapped


@pytest.mark.parametrize("w", [1e30, 2.0**60, 2.0**24, -1e30, 1e300])
def test_a_weight_past_the_discretisation_is_a_value_error_naming_it(w):
    # It decoded to ([1, 0, 0], -1.0) for 1e30 and weight 0.0 for 2**60 (the integer weight
    # wrapped). PyMatching 2.4 raises ValueError at the decode for |weight| > 16777215.
    m = Matching.from_check_matrix([[1, 1, 0], [0, 1, 1]], weights=[w, 1, 1])
    with pytest.raises(ValueError, match=r"weight .* 16777215"):
        m.decode([1, 0], return_weight=True)


def test_the_largest_weight_the_discretisation_holds_decodes_exactly():
    m = Matching.from_check_matrix([[1, 1, 0], [0, 1, 1]], weights=[16777215.0, 1, 1])
    pred, w = m.decode([1, 0], return_weight=True)
    assert pred.tolist() == [0, 1, 1] and w == 2.0


# ------------------------------------------------------------------ 4: nodes and fault ids


def test_a_node_past_32_bits_is_a_value_error_naming_it_not_a_self_loop():
    # add_edge(0, 2**40) was "an edge from node 0 to itself" (truncated to 32 bits).
    m = Matching()
    with pytest.raises(ValueError, match=r"node2=1099511627776 is out of range 0 \.\.= 4,294,967,294"):
        m.add_edge(0, 2**40)
    with pytest.raises(ValueError, match=r"node=4294967295 is out of range"):
        m.add_boundary_edge(2**32 - 1)
    with pytest.raises(ValueError, match=r"node1=-1 is out of range"):
        m.add_edge(-1, 2)
    assert m.num_edges == 0


@pytest.mark.parametrize("fault", [2**32, 2**40, -1])
def test_a_fault_id_past_32_bits_is_a_value_error_naming_it(fault):
    m = Matching()
    with pytest.raises(ValueError, match=r"fault id=.* is out of range 0 \.\.= 4,294,967,295"):
        m.add_edge(0, 1, fault_ids=fault)
    m.add_edge(0, 1)
    with pytest.raises(ValueError, match=r"min_num_fault_ids=.* is out of range 0 \.\.= 4,294,967,296"):
        m.ensure_num_fault_ids(2**40)


def test_huge_graphs_and_fault_ids_are_memory_errors_and_the_interpreter_lives():
    # add_edge(1, 2**24) then decode aborted on 1 GB; fault_ids=2**31 then decode was
    # RunError("internal error: PyObject pointer is null") with panic text;
    # ensure_num_fault_ids(2**40) aborted on 1 TiB.
    r = _python("""
        import numpy as np
        from backline.decoders import Matching
        def attempt(what, f):
            try:
                f()
                print(what, 'decoded')
            except (MemoryError, ValueError) as e:
                print(what, type(e).__name__, str(e)[:200])
        m = Matching(); m.add_edge(1, 2**24)
        attempt('nodes', lambda: m.decode(np.zeros(2**24 + 1, dtype=np.uint8)))
        m = Matching(); m.add_edge(1, 2**31)
        attempt('nodes31', lambda: m.decode(np.zeros(2**31 + 1, dtype=np.uint8)))
        m = Matching(); m.add_edge(0, 1, fault_ids=2**31)
        attempt('faults', lambda: m.decode([0, 0]))
        m = Matching(); m.add_edge(0, 1, fault_ids=2**31)
        attempt('faults_batch', lambda: m.decode_batch(np.zeros((2, 2), dtype=np.uint8)))
        m = Matching(); m.add_edge(0, 1); m.ensure_num_fault_ids(2**32)
        attempt('ensure', lambda: m.decode([0, 0]))
        print('alive')
    """)
    _clean(r)
    assert "nodes MemoryError" in r.stdout, r.stdout
    assert "faults MemoryError" in r.stdout or "faults decoded" in r.stdout, r.stdout
    assert "ensure MemoryError" in r.stdout, r.stdout


# ------------------------------------------------------------------ 5: one syndrome rule


@pytest.mark.parametrize("z, fired", [
    ([0.5, 0, 0], False), ([0.999, 0, 0], False), ([1.5, 0, 0], True), ([True, False, False], True),
    ([2, 0, 0], True), (np.array([256, 0, 0]), False), (np.array([-1, 0, 0]), True),
    (np.array([0.5, 0.0, 0.0], dtype=np.float32), False),
])
def test_decode_and_decode_batch_read_a_syndrome_by_one_rule(z, fired):
    # decode read [0.5, 0, 0] as no event, decode_batch as an event. PyMatching casts each
    # entry to uint8 (floats toward zero, integers modulo 256) in both; non-zero is an event.
    m = Matching()
    m.add_edge(0, 1)
    m.add_boundary_edge(1)
    m.add_edge(1, 2)
    m.add_boundary_edge(2)
    _, w = m.decode(z, return_weight=True)
    _, ws = m.decode_batch(np.asarray([z]), return_weights=True)
    assert (w > 0) == fired
    assert ws.tolist() == [w]


# ------------------------------------------------------------------ 6: refused once


def test_a_model_the_native_parser_refuses_is_not_flattened_by_stim():
    # `_has_edges` flattened with stim what the native parser refused at the mechanisms
    # limit: MemoryError at 2.6 GB. Refused once, by the native limits.
    r = _python("""
        import stim
        from backline.decoders import Matching
        from backline.errors import DetectorErrorModelError
        dem = stim.DetectorErrorModel('repeat 1000 {\\n repeat 100000 {\\n error(0.1) D0 D1\\n }\\n}')
        try:
            Matching.from_detector_error_model(dem)
        except DetectorErrorModelError as e:
            print('refused:', isinstance(e, ValueError), e)
        print('alive')
    """, timeout=60)
    _clean(r)
    assert "refused: True" in r.stdout and "mechanisms" in r.stdout, r.stdout


def test_a_model_with_nothing_to_match_is_still_the_empty_graph():
    import stim

    m = Matching.from_detector_error_model(stim.DetectorErrorModel("error(0) D0 L0\ndetector D1"))
    assert m.decode([0, 0]).tolist() == [0]


# ------------------------------------------------------------------ 8: timeouts


@pytest.mark.parametrize("name", ["reply_timeout", "setup_timeout"])
@pytest.mark.parametrize("bad", [1e20, float("nan"), float("inf"), -1.0, 0.0, 86400.5])
def test_a_timeout_out_of_range_is_refused_at_construction_naming_it(name, bad):
    # Endpoint(reply_timeout=1e20) panicked later ("cannot convert float seconds to
    # Duration") as RunError("internal error …").
    with pytest.raises(errors.PlacementError, match=rf"Endpoint\({name}\)=.* s is out of range \(0, 86400\]"):
        Endpoint(**{name: bad})
    with pytest.raises(TypeError, match=name):
        Endpoint(**{name: "1"})
    Endpoint(**{name: 86400})


@pytest.mark.parametrize("bad", [1e20, float("inf"), 0.0])
def test_the_native_side_refuses_a_timeout_a_duration_cannot_hold(bad):
    from backline import _native

    with pytest.raises(errors.PlacementError, match=r"timeout .* s: must be a positive number of seconds up to"):
        _native.StreamClient("memcpy", "nobody-issue39", 0, 48, bad, 5.0)


# ------------------------------------------------------------------ 11: a raised qubits limit


def test_a_raised_qubits_limit_is_a_memory_error_not_an_abort():
    # BACKLINE_PROGRAM_LIMITS=qubits=4294967295 then Backline(wires=10**5) aborted on the
    # tableau's 2.5 GB allocation.
    r = _python("""
        import pennylane as qml
        from backline import Backline
        dev = Backline(wires=10**5)
        @qml.set_shots(1)
        @qml.qnode(dev)
        def c():
            qml.Hadamard(0)
            return qml.sample(wires=[0])
        try:
            c()
        except MemoryError as e:
            print('refused:', e)
        print('alive')
    """, env={"BACKLINE_PROGRAM_LIMITS": "qubits=4294967295"})
    _clean(r)
    assert "refused:" in r.stdout and "100000 qubits need a stabilizer tableau" in r.stdout, r.stdout


# ------------------------------------------------------------------ 1, 2, 12: the model doors


def test_a_tiny_model_naming_a_huge_detector_is_refused_at_every_door():
    # Case 1: `error(0.125) D11100000` (23 bytes) aborted Matching.from_detector_error_model and
    # the sinter decoders' compile_decoder_for_dem on 3.6 GB; the `detectors` bound refuses it
    # before anything is built, at every door, and a raised bound is honoured.
    r = _python("""
        import stim
        from backline import errors
        from backline.decoders import Matching
        from backline.sinter import decoders as sinter_decoders
        dem = stim.DetectorErrorModel('error(0.125) D11100000')
        try:
            Matching.from_detector_error_model(dem)
            print('matching built')
        except ValueError as e:
            print('matching', type(e).__name__, str(e)[:200])
        for name, dec in sinter_decoders().items():
            try:
                dec.compile_decoder_for_dem(dem=dem)
                print(name, 'built')
            except errors.DetectorErrorModelError as e:
                print(name, 'refused', 'detectors' in str(e))
        # The bound is the user's to move: raised, BP+OSD answers within the address space.
        import numpy as np
        from backline.sinter import BpOsdSinterDecoder
        c = BpOsdSinterDecoder(dem_limits={'detectors': 16777216}).compile_decoder_for_dem(
            dem=stim.DetectorErrorModel('error(0.125) D11100000 L0'))
        shot = np.zeros((1, (11100001 + 7) // 8), dtype=np.uint8)
        shot[0, 11100000 // 8] = 1 << (11100000 % 8)
        print('raised', c.decode_shots_bit_packed(bit_packed_detection_event_data=shot).tolist())
        print('alive')
    """, timeout=300)
    _clean(r)
    assert "matching DetectorErrorModelError" in r.stdout and "more than 4194304 detectors" in r.stdout, r.stdout
    assert "built" not in r.stdout, r.stdout
    assert r.stdout.count("refused True") >= 3, r.stdout
    assert "raised [[1]]" in r.stdout, r.stdout


def test_bposd_on_a_tall_matrix_of_two_ones_answers_within_the_address_space():
    # Case 2: a 200,000 × 2 check matrix with two ones asked OSD for 5 GB (m × m bits) and
    # aborted; the basis is sized by the rank reached (ldpc 2.4.1 takes 173 MB).
    r = _python("""
        import numpy as np
        import scipy.sparse as sp
        from backline.decoders import BpOsdDecoder
        h = sp.csr_matrix(([1, 1], ([0, 199999], [0, 1])), shape=(200000, 2), dtype=np.uint8)
        d = BpOsdDecoder(h, error_rate=0.1, osd_method='osd_cs', osd_order=2)
        s = np.zeros(200000, dtype=np.uint8)
        s[199999] = 1
        print('decoded', d.decode(s).tolist())
        print('alive')
    """)
    _clean(r)
    assert "decoded [0, 1]" in r.stdout, r.stdout


def test_an_event_no_error_explains_is_an_error_for_the_sinter_decoders():
    # Case 12: with `error(0) D0 L0` a shot firing D0 was answered "nothing flipped"; no error
    # explains it (PyMatching: "No perfect matching could be found").
    import stim
    from backline import sinter as bs

    dem = stim.DetectorErrorModel("error(0) D0 L0")
    fired = np.array([[1]], dtype=np.uint8)
    quiet = np.array([[0]], dtype=np.uint8)
    for name, dec in bs.decoders().items():
        c = dec.compile_decoder_for_dem(dem=dem)
        assert c.decode_shots_bit_packed(bit_packed_detection_event_data=quiet).tolist() == [[0]], name
        with pytest.raises(Exception, match="D0 fired, and no error of the model"):
            c.decode_shots_bit_packed(bit_packed_detection_event_data=fired)
