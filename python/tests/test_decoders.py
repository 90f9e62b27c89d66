"""backline.decoders against the libraries it stands in for: PyMatching 2.4 (installed in CI),
ldpc 2.4 and relay-bp 0.2.2 (compared where installed, skipped with the reason otherwise; then
the objects are checked against known properties: a single error's syndrome decodes to that
error, shapes and dtypes, bad inputs raising the original's exception types)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp
import stim

from backline import decoders as bd

HAS_PYMATCHING = importlib.util.find_spec("pymatching") is not None
HAS_LDPC = importlib.util.find_spec("ldpc") is not None
HAS_RELAY = importlib.util.find_spec("relay_bp") is not None


def repetition(n: int) -> np.ndarray:
    """The (n − 1) × n check matrix of the repetition code."""
    h = np.zeros((n - 1, n), dtype=np.uint8)
    for i in range(n - 1):
        h[i, i] = h[i, i + 1] = 1
    return h


def toric_like(d: int) -> np.ndarray:
    """A hypergraph-product check matrix (columns in up to 4 checks): BP+OSD's test code."""
    r = repetition(d)
    a = np.kron(r, np.eye(r.shape[1], dtype=np.uint8))
    b = np.kron(np.eye(r.shape[0], dtype=np.uint8), r.T)
    return np.hstack([a, b]) % 2


def surface_circuit(d: int = 3, p: float = 0.01, basis: str = "x") -> stim.Circuit:
    return stim.Circuit.generated(f"surface_code:rotated_memory_{basis}", distance=d, rounds=d,
                                  after_clifford_depolarization=p, before_round_data_depolarization=p,
                                  before_measure_flip_probability=p, after_reset_flip_probability=p)


def shots(circuit: stim.Circuit, n: int, seed: int = 3):
    return circuit.compile_detector_sampler(seed=seed).sample(n, separate_observables=True)


# --------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_PYMATCHING, reason="pymatching is not installed")
@pytest.mark.parametrize("basis", ["x", "z"])
def test_matching_gives_pymatchings_predictions_and_weights_on_a_surface_code(basis):
    import pymatching

    c = surface_circuit(5, 0.008, basis)
    ours, theirs = bd.Matching.from_stim_circuit(c), pymatching.Matching.from_stim_circuit(c)
    for attr in ("num_detectors", "num_nodes", "num_edges", "num_fault_ids", "boundary"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    dets, _obs = shots(c, 2000)
    a, wa = ours.decode_batch(dets, return_weights=True)
    b, wb = theirs.decode_batch(dets, return_weights=True)
    assert a.dtype == b.dtype == np.uint8 and a.shape == b.shape
    assert wa.dtype == wb.dtype == np.float64
    np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-3)
    # Ties may be broken either way; the lightest weights agree on every shot.
    assert (a != b).any(axis=1).mean() < 0.01
    np.testing.assert_array_equal(ours.decode_batch(dets.astype(np.int64)), a)
    np.testing.assert_array_equal(ours.decode_batch(dets.astype(np.uint8)), a)
    packed = np.packbits(dets, axis=1, bitorder="little")
    np.testing.assert_array_equal(
        ours.decode_batch(packed, bit_packed_shots=True, bit_packed_predictions=True),
        np.packbits(a, axis=1, bitorder="little"),
    )
    for k in range(20):
        pa, w1 = ours.decode(dets[k], return_weight=True)
        pb, w2 = theirs.decode(dets[k], return_weight=True)
        assert pa.dtype == np.uint8 and pa.shape == pb.shape
        assert w1 == pytest.approx(w2, rel=1e-5, abs=1e-3)
        e = ours.decode_to_edges_array(dets[k])
        assert e.dtype == np.int64 and e.ndim == 2 and e.shape[1] == 2
        assert (e[:, 0] >= 0).all()
        # The edges' ends (the boundary left out) are exactly the detection events.
        ends = np.zeros(ours.num_detectors, dtype=np.int64)
        for x, y in e:
            ends[x] ^= 1
            if y >= 0:
                ends[y] ^= 1
        np.testing.assert_array_equal(ends, dets[k].astype(np.int64))


@pytest.mark.skipif(not HAS_PYMATCHING, reason="pymatching is not installed")
@pytest.mark.parametrize("kw", [{}, {"weights": [1, 2, 1, 3, 1, 1]}, {"error_probabilities": 0.1},
                                {"weights": [1, -1, 1, 2, 1, 1]}, {"use_virtual_boundary_node": True},
                                {"faults_matrix": np.array([[1, 0, 0, 0, 0, 0]])}])
def test_matching_from_a_check_matrix_as_pymatching(kw):
    import pymatching

    h = repetition(6)
    for form in (h, sp.csr_matrix(h), h.tolist()):
        ours = bd.Matching.from_check_matrix(form, **kw)
        theirs = pymatching.Matching.from_check_matrix(form, **kw)
        for attr in ("num_detectors", "num_nodes", "num_edges", "num_fault_ids", "boundary"):
            assert getattr(ours, attr) == getattr(theirs, attr), (attr, kw)
        for s in range(1 << h.shape[0]):
            z = np.array([(s >> i) & 1 for i in range(h.shape[0])], dtype=np.uint8)
            a, wa = ours.decode(z, return_weight=True)
            b, wb = theirs.decode(z, return_weight=True)
            assert wa == pytest.approx(wb, abs=1e-6), (kw, z)
            # Same weight: a lightest correction (ties broken either way); it reproduces the
            # syndrome.
            assert a.dtype == np.uint8 and a.shape == b.shape
            if "faults_matrix" not in kw:
                np.testing.assert_array_equal((h @ a) % 2, z)


def test_matching_single_errors_decode_to_themselves():
    h = repetition(9)
    m = bd.Matching.from_check_matrix(h)
    for j in range(h.shape[1]):
        e = np.zeros(h.shape[1], dtype=np.uint8)
        e[j] = 1
        z = (h @ e) % 2
        np.testing.assert_array_equal(m.decode(z), e)
    # More fault ids than a mask holds: the edges path.
    h = repetition(100)
    m = bd.Matching.from_check_matrix(h)
    assert m.num_fault_ids == 100
    for j in (0, 50, 99):
        e = np.zeros(100, dtype=np.uint8)
        e[j] = 1
        np.testing.assert_array_equal(m.decode((h @ e) % 2), e)
        np.testing.assert_array_equal(m.decode_batch(((h @ e) % 2)[None, :])[0], e)
        packed = np.packbits(((h @ e) % 2)[None, :].astype(np.uint8), axis=1, bitorder="little")
        np.testing.assert_array_equal(m.decode_batch(packed, bit_packed_shots=True)[0], e)
        # The boundary node's column, when given, is ignored (PyMatching's rule).
        z = np.append((h @ e) % 2, 1)
        np.testing.assert_array_equal(m.decode(z), e)
        np.testing.assert_array_equal(m.decode_batch(z[None, :])[0], e)


def test_matching_edge_by_edge():
    m = bd.Matching()
    assert (m.num_nodes, m.num_edges, m.num_fault_ids) == (0, 0, 0)
    with pytest.raises(ValueError, match="no edges"):
        m.decode([])
    m.add_boundary_edge(0, fault_ids=0)
    for i in range(6):
        m.add_edge(i, i + 1, fault_ids=i + 1)
    e = m.decode_to_edges_array([0, 1, 0, 0, 1, 0, 1])
    assert e.tolist() == [[0, 1], [0, -1], [5, 4], [5, 6]]  # PyMatching's list, in its order
    with pytest.raises(ValueError):
        m.add_edge(0, 1)  # merge_strategy="disallow"
    m.add_edge(0, 1, weight=0.5, merge_strategy="smallest-weight")
    assert m.num_edges == 7


def test_matching_bad_inputs_raise_pymatchings_exception_types():
    h = repetition(4)
    m = bd.Matching.from_check_matrix(h)
    with pytest.raises(ValueError, match="shape"):
        m.decode(np.array([1, 0]))
    with pytest.raises(ValueError):
        m.decode("abc")
    with pytest.raises(ValueError, match="columns"):
        m.decode_batch(np.zeros((2, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="2D"):
        m.decode_batch(np.zeros(3, dtype=np.uint8))
    with pytest.raises(ValueError, match="bytes per shot"):
        m.decode_batch(np.zeros((2, 2), dtype=np.uint8), bit_packed_shots=True)
    with pytest.raises(ValueError, match="at most two ones"):
        bd.Matching.from_check_matrix(np.array([[1, 1], [1, 0], [1, 0]]))
    with pytest.raises(ValueError, match="0 or 1"):
        bd.Matching.from_check_matrix(np.array([[2, 1]]))
    with pytest.raises(TypeError):
        bd.Matching.from_check_matrix(np.array([["a", "b"]]))
    for w in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="finite"):
            bd.Matching.from_check_matrix(h, weights=[1.0, w, 1.0, 1.0])
    with pytest.raises(ValueError, match="weights has shape"):
        bd.Matching.from_check_matrix(h, weights=[1.0, 1.0])
    # An empty column is no edge (PyMatching's rule); an empty row is a detector without edges.
    hz = np.array([[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    mz = bd.Matching.from_check_matrix(hz)
    assert mz.num_edges == 2 and mz.num_detectors == 3
    with pytest.raises(ValueError, match="D2"):
        mz.decode([0, 0, 1])
    with pytest.raises(TypeError):
        bd.Matching.from_detector_error_model("error(0.1) D0")
    with pytest.raises(TypeError):
        bd.Matching.from_stim_circuit("H 0")


def test_matching_refuses_what_it_does_not_do_naming_it():
    h = repetition(4)
    c = surface_circuit(3)
    # Correlations asked of a decode on a graph built without them: ValueError, as PyMatching's.
    plain = bd.Matching.from_stim_circuit(c)
    for call in (
        lambda: plain.decode(np.zeros(plain.num_detectors, np.uint8), enable_correlations=True),
        lambda: plain.decode_batch(np.zeros((1, plain.num_detectors), np.uint8), enable_correlations=True),
        lambda: bd.Matching.from_check_matrix(h).decode([1, 0, 0], enable_correlations=True),
        lambda: bd.Matching.from_check_matrix(h).decode_batch(np.zeros((1, 3), np.uint8), enable_correlations=True),
    ):
        with pytest.raises(ValueError, match="correlations were asked of a decoder built without them"):
            call()
    with pytest.raises(NotImplementedError, match="enable_correlations"):
        bd.Matching(h, enable_correlations=True)
    with pytest.raises(NotImplementedError, match="repetitions"):
        bd.Matching.from_check_matrix(h, repetitions=3)
    with pytest.raises(NotImplementedError, match="timelike_weights"):
        bd.Matching.from_check_matrix(h, timelike_weights=1.0)
    with pytest.raises(NotImplementedError, match="measurement_error_probabilities"):
        bd.Matching.from_check_matrix(h, measurement_error_probabilities=0.1)
    with pytest.raises(NotImplementedError, match="draw"):
        bd.Matching.from_check_matrix(h).draw()


def test_matching_degenerate_models():
    # Nothing to match (no error with p > 0 flips a detector; no detectors; nothing at all):
    # PyMatching's empty graph, every prediction 0; a detection event raises ValueError.
    for text, nd, nf in (("error(0.1) L0", 0, 1), ("error(0.1) L0\ndetector D0", 1, 1), ("", 0, 0),
                         ("error(0) D0 L0\nerror(0.2) L1", 1, 2)):
        m = bd.Matching.from_detector_error_model(stim.DetectorErrorModel(text))
        assert (m.num_detectors, m.num_fault_ids, m.num_edges) == (nd, nf, 0), text
        assert m.decode(np.zeros(nd, dtype=np.uint8)).tolist() == [0] * nf
        out = m.decode_batch(np.zeros((3, nd), dtype=np.uint8))
        assert out.shape == (3, nf) and out.dtype == np.uint8 and not out.any()
        if nd:
            with pytest.raises(ValueError, match="D0"):
                m.decode(np.ones(nd, dtype=np.uint8))
        if HAS_PYMATCHING:
            import pymatching

            p = pymatching.Matching.from_detector_error_model(stim.DetectorErrorModel(text))
            assert (p.num_detectors, p.num_fault_ids, p.num_edges) == (nd, nf, 0)
    # A model that does not decompose is refused naming its line.
    from backline.errors import DetectorErrorModelError

    with pytest.raises(DetectorErrorModelError, match="decompose"):
        bd.Matching.from_detector_error_model(stim.DetectorErrorModel("error(0.1) D0 D1 D2"))
    # p > 0.5: a negative edge, as PyMatching weighs it.
    dem = stim.DetectorErrorModel("error(0.7) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1")
    m = bd.Matching.from_detector_error_model(dem)
    assert m.decode([1, 0]).tolist() == [1]
    assert m.decode([0, 0]).tolist() == [0]
    if HAS_PYMATCHING:
        import pymatching

        p = pymatching.Matching.from_detector_error_model(dem)
        for z in ([0, 0], [1, 0], [0, 1], [1, 1]):
            a, wa = m.decode(z, return_weight=True)
            b, wb = p.decode(z, return_weight=True)
            assert a.tolist() == b.tolist() and wa == pytest.approx(wb, rel=1e-5), z


# --------------------------------------------------------------------------------------------
# BpOsdDecoder, BpDecoder
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_LDPC, reason="ldpc is not installed (CI's venv has none)")
@pytest.mark.parametrize("kw", [
    {"error_rate": 0.05, "max_iter": 10, "bp_method": "ms", "osd_method": "osd_cs", "osd_order": 3},
    {"error_rate": 0.05, "max_iter": 10, "bp_method": "ps", "osd_method": "osd0"},
    {"error_rate": 0.03, "max_iter": 5, "bp_method": "minimum_sum", "schedule": "serial", "ms_scaling_factor": 0.625},
    {"error_rate": 0.03, "max_iter": 5, "bp_method": "ms", "ms_scaling_factor": 0, "osd_method": "osd_cs", "osd_order": 4},
    {"error_rate": 0.03, "max_iter": 5},  # ldpc's defaults: product-sum, whatever its signature says
    {"error_rate": 0.03, "max_iter": 5, "ms_scaling_factor": 0.625, "schedule": "serial", "osd_method": "osd_cs",
     "osd_order": 2},
])
def test_bposd_gives_ldpcs_corrections(kw):
    import ldpc

    h = toric_like(4)
    ours, theirs = bd.BpOsdDecoder(h, **kw), ldpc.BpOsdDecoder(h, **kw)
    rng = np.random.default_rng(5)
    for _ in range(300):
        e = (rng.random(h.shape[1]) < 0.06).astype(np.uint8)
        s = (h @ e) % 2
        a, b = ours.decode(s), theirs.decode(s)
        np.testing.assert_array_equal(a, b)
        if not s.any():
            continue  # ldpc keeps the previous decode's iter and soft output; ours: 0, priors
        assert ours.converge == theirs.converge and ours.iter == theirs.iter
        np.testing.assert_allclose(ours.log_prob_ratios, theirs.log_prob_ratios, rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(ours.bp_decoding, theirs.bp_decoding)


@pytest.mark.skipif(not HAS_LDPC, reason="ldpc is not installed (CI's venv has none)")
def test_bp_gives_ldpcs_decodings():
    import ldpc

    h = toric_like(3)
    ours = bd.BpDecoder(sp.csr_matrix(h), error_rate=0.05, max_iter=8)
    theirs = ldpc.BpDecoder(sp.csr_matrix(h), error_rate=0.05, max_iter=8)
    rng = np.random.default_rng(6)
    for _ in range(200):
        s = (h @ (rng.random(h.shape[1]) < 0.05)) % 2
        np.testing.assert_array_equal(ours.decode(s), theirs.decode(s))
        if s.any():
            assert ours.converge == theirs.converge and ours.iter == theirs.iter


def test_bposd_single_errors_and_shapes():
    h = toric_like(4)
    for pcm in (h, sp.csr_matrix(h), sp.csc_matrix(h)):
        d = bd.BpOsdDecoder(pcm, error_rate=0.05, osd_method="OSD_CS", osd_order=2)
        assert (d.check_count, d.bit_count) == h.shape
        for j in range(0, h.shape[1], 5):
            e = np.zeros(h.shape[1], dtype=np.uint8)
            e[j] = 1
            out = d.decode((h @ e) % 2)
            assert out.dtype == np.uint8 and out.shape == (h.shape[1],)
            np.testing.assert_array_equal(out, e)
            assert d.converge
        assert d.log_prob_ratios.dtype == np.float64 and d.log_prob_ratios.shape == (h.shape[1],)
    d = bd.BpOsdDecoder(h, error_rate=0.05, omp_thread_count=2)
    rng = np.random.default_rng(1)
    s = ((h @ (rng.random((50, h.shape[1])) < 0.04).T) % 2).T.astype(np.uint8)
    batch = d.decode_batch(s)
    np.testing.assert_array_equal(batch, np.array([d.decode(row) for row in s]))
    assert d.osd_method == "OSD_0" and np.all(d.error_rate == 0.05)  # ldpc's getter: the channel
    assert np.all(bd.BpDecoder(h, error_channel=[0.01] * h.shape[1]).error_rate == 0.01)


def test_bposd_osd_init_and_osd_on_converged_are_backline_keywords():
    """Issue 40: ``osd_init`` and ``osd_on_converged`` reach the drop-in (not ldpc's keywords):
    every answer still reproduces its syndrome, ``min_llr`` orders OSD differently from
    ``soft`` on some shots, and with ``osd_on_converged`` OSD answers converged shots too."""
    h = toric_like(4)
    rng = np.random.default_rng(3)
    shots = ((h @ (rng.random((300, h.shape[1])) < 0.08).T) % 2).T.astype(np.uint8)
    kw = dict(error_rate=0.08, max_iter=4, bp_method="minimum_sum", ms_scaling_factor=0.625,
              osd_method="OSD_CS", osd_order=4)
    soft = bd.BpOsdDecoder(h, **kw)
    minllr = bd.BpOsdDecoder(h, osd_init="min_llr", **kw)
    always = bd.BpOsdDecoder(h, osd_on_converged=True, **kw)
    differs = 0
    for s in shots:
        a, b, c = soft.decode(s), minllr.decode(s), always.decode(s)
        for out in (a, b, c):
            np.testing.assert_array_equal((h @ out) % 2, s)
        differs += int(not np.array_equal(a, b))
        if soft.converge and s.any():
            # OSD-CS's answer is never heavier than BP's converged one.
            assert c.sum() <= a.sum()
    assert differs > 0
    with pytest.raises(ValueError, match="osd_init"):
        bd.BpOsdDecoder(h, osd_init="sideways", **kw)
    with pytest.raises(ValueError, match="runs no OSD"):
        bd.BpDecoder(h, error_rate=0.05, osd_init="min_llr")


def test_bposd_bad_inputs_raise_ldpcs_exception_types():
    h = toric_like(3)
    d = bd.BpOsdDecoder(h, error_rate=0.05)
    with pytest.raises(ValueError, match="length"):
        d.decode(np.zeros(3, dtype=np.uint8))
    with pytest.raises(ValueError, match="error channel"):
        bd.BpOsdDecoder(h)
    with pytest.raises(ValueError, match="length"):
        bd.BpOsdDecoder(h, error_channel=[0.1, 0.1])
    with pytest.raises(ValueError):
        bd.BpOsdDecoder(h, error_rate=0.05, bp_method="bogus")
    with pytest.raises(ValueError):
        bd.BpOsdDecoder(h, error_rate=0.05, schedule="bogus")
    with pytest.raises(ValueError, match="OSD method"):
        bd.BpOsdDecoder(h, error_rate=0.05, osd_method="bogus")
    with pytest.raises(ValueError, match="osd order"):
        bd.BpOsdDecoder(h, error_rate=0.05, osd_method="OSD_0", osd_order=3)
    with pytest.raises(TypeError):
        bd.BpOsdDecoder(h, error_rate=0.05, ms_scaling_factor="x")
    with pytest.raises(ValueError, match="max_iter"):
        bd.BpOsdDecoder(h, error_rate=0.05, max_iter=-1)
    with pytest.raises(ValueError, match="Unknown parameter"):
        bd.BpDecoder(h, error_rate=0.05, bogus=1)
    for p in (np.nan, np.inf, -0.1):  # 0 is ldpc's "never flips" (test_drop_in_originals.py)
        with pytest.raises(ValueError):
            bd.BpOsdDecoder(h, error_rate=p)
    with pytest.raises(ValueError, match="0 or 1"):
        bd.BpOsdDecoder(h * 3, error_rate=0.05)
    with pytest.raises(TypeError):
        bd.BpOsdDecoder(object(), error_rate=0.05)
    with pytest.raises(NotImplementedError, match="OSD_E"):
        bd.BpOsdDecoder(h, error_rate=0.05, osd_method="OSD_E")
    with pytest.raises(ValueError, match="serial_schedule_order"):  # of the wrong length
        bd.BpOsdDecoder(h, error_rate=0.05, serial_schedule_order=[0])
    with pytest.raises(NotImplementedError, match="received_vector"):
        bd.BpDecoder(h, error_rate=0.05, input_vector_type="received_vector")
    # An empty column: a bit no check sees (decoded as 0); an empty row: a check never fired.
    he = np.array([[1, 1, 0], [0, 0, 0]])
    d = bd.BpOsdDecoder(he, error_rate=0.1)
    assert d.decode(np.array([0, 0])).tolist() == [0, 0, 0]
    assert d.decode(np.array([1, 0])).sum() == 1


# --------------------------------------------------------------------------------------------
# Relay-BP
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_RELAY, reason="relay-bp is not installed (CI's venv has none)")
def test_relay_readme_example_as_relay_bp():
    import relay_bp

    h = sp.csr_matrix(np.asarray([[1, 1, 0], [0, 1, 1]]))
    kw = dict(error_priors=np.array([0.003] * 3, dtype=np.float64), gamma0=0.65, pre_iter=80, num_sets=100,
              set_max_iter=60, gamma_dist_interval=(-0.24, 0.66), stop_nconv=5)
    ours, theirs = bd.RelayDecoderF32(h, **kw), relay_bp.RelayDecoderF32(h, **kw)
    batch = np.array([[0, 1], [1, 0], [1, 1]], dtype=np.uint8)
    np.testing.assert_array_equal(ours.decode_batch(batch), theirs.decode_batch(batch))
    np.testing.assert_array_equal(ours.decode(batch[2]), theirs.decode(batch[2]))


@pytest.mark.skipif(not HAS_RELAY, reason="relay-bp is not installed (CI's venv has none)")
def test_relay_observables_as_relay_bp_on_a_surface_code():
    import relay_bp

    c = surface_circuit(3, 0.004)
    dem = c.detector_error_model()
    from backline.sinter import _native  # noqa: F401  (the package's native module is loaded)

    h, o, p = _dem_matrices(dem)
    dets, obs = shots(c, 500)
    ours = bd.ObservableDecoderRunner(bd.RelayDecoderF32(h, p, stop_nconv=5, num_sets=60, pre_iter=60), o)
    theirs = relay_bp.ObservableDecoderRunner(relay_bp.RelayDecoderF32(h, p, stop_nconv=5, num_sets=60,
                                                                       pre_iter=60), o)
    a = ours.decode_observables_batch(dets.astype(np.uint8))
    b = theirs.decode_observables_batch(dets.astype(np.uint8), progress_bar=False)
    assert a.shape == b.shape and a.dtype == b.dtype == np.uint8
    # Memory strengths are drawn differently: logical error counts within statistics.
    ea, eb = int((a != obs).any(axis=1).sum()), int((b != obs).any(axis=1).sum())
    assert abs(ea - eb) <= 4 * max(1.0, np.sqrt(ea + eb)), (ea, eb)


def _dem_matrices(dem: stim.DetectorErrorModel):
    """Check matrix, observable matrix and priors of a model, one column per error."""
    cols, obs_cols, priors = [], [], []
    for inst in dem.flattened():
        if inst.type != "error":
            continue
        d = [t.val for t in inst.targets_copy() if t.is_relative_detector_id()]
        o = [t.val for t in inst.targets_copy() if t.is_logical_observable_id()]
        cols.append(d)
        obs_cols.append(o)
        priors.append(inst.args_copy()[0])
    h = np.zeros((dem.num_detectors, len(cols)), dtype=np.uint8)
    ob = np.zeros((dem.num_observables, len(cols)), dtype=np.uint8)
    for j, (d, o) in enumerate(zip(cols, obs_cols)):
        h[d, j] ^= 1
        ob[o, j] ^= 1
    return sp.csr_matrix(h), sp.csr_matrix(ob), np.array(priors, dtype=np.float64)


def test_relay_single_errors_shapes_and_threads():
    h = toric_like(4)
    r = bd.RelayDecoderF32(sp.csr_matrix(h), error_priors=np.full(h.shape[1], 0.01))
    for j in range(0, h.shape[1], 7):
        e = np.zeros(h.shape[1], dtype=np.uint8)
        e[j] = 1
        s = ((h @ e) % 2).astype(np.uint8)
        out = r.decode(s)
        assert out.dtype == np.uint8 and out.shape == (h.shape[1],)
        np.testing.assert_array_equal(out, e)
        res = r.decode_detailed(s)
        assert res.success and res.iterations >= 1
        np.testing.assert_array_equal(res.decoded_detectors, s)
    rng = np.random.default_rng(2)
    batch = ((h @ (rng.random((40, h.shape[1])) < 0.02).T) % 2).T.astype(np.uint8)
    one = r.decode_batch(batch)
    assert one.shape == (40, h.shape[1]) and one.dtype == np.uint8
    np.testing.assert_array_equal(r.par_decode_batch(batch), one)
    run = bd.ObservableDecoderRunner(r, np.eye(1, h.shape[1], dtype=np.uint8))
    np.testing.assert_array_equal(run.decode_observables_batch(batch, parallel=True),
                                  run.decode_observables_batch(batch))


def test_relay_bad_inputs():
    h = repetition(4)
    p = np.full(4, 0.01)
    r = bd.RelayDecoderF32(h, p)
    with pytest.raises(TypeError):
        r.decode(np.array([1, 0, 0], dtype=np.int64))
    with pytest.raises(TypeError):
        r.decode([1, 0, 0])
    with pytest.raises(ValueError):
        r.decode(np.array([1, 0], dtype=np.uint8))
    with pytest.raises(ValueError):
        r.decode_batch(np.zeros((2, 2), dtype=np.uint8))
    with pytest.raises(TypeError):
        bd.RelayDecoderF32(h, p.astype(np.float32))
    with pytest.raises(ValueError):
        bd.RelayDecoderF32(h, np.full(3, 0.01))
    for bad in (np.nan, 0.6, 0.0, -0.1):
        with pytest.raises(ValueError):
            bd.RelayDecoderF32(h, np.array([0.01, bad, 0.01, 0.01]))
    with pytest.raises(ValueError):
        bd.RelayDecoderF32(h, p, stop_nconv=0)
    with pytest.raises(ValueError):
        bd.RelayDecoderF32(h, p, gamma_dist_interval=(1.0, 0.0))
    for kw, name in (({"explicit_gammas": np.zeros((1, 4))}, "explicit_gammas"),
                     ({"data_scale_value": 1.0}, "data_scale_value"),
                     ({"stopping_criterion": "all"}, "stopping_criterion"),
                     ({"logging": True}, "logging")):
        with pytest.raises(NotImplementedError, match=name):
            bd.RelayDecoderF32(h, p, **kw)
    with pytest.raises(NotImplementedError, match="posterior_ratios"):
        r.decode_detailed(np.array([1, 0, 0], dtype=np.uint8)).posterior_ratios


def test_every_setting_passed_is_a_registry_key():
    from backline import _native

    reg = {name: {row[0] for row in rows} for name, _t, rows in _native.decoder_registry()}
    assert {"bp_method", "max_iter", "ms_scaling_factor", "schedule", "osd_method", "osd_order"} <= reg["bposd"]
    assert {"gamma0", "pre_iter", "num_sets", "set_max_iter", "gamma_dist_interval", "stop_nconv", "alpha",
            "alpha_iteration_scaling_factor", "seed"} <= reg["relay-bp"]


def test_correlated_matching_as_pymatching_builds_and_calls_it():
    # PyMatching >= 2.3: built with enable_correlations=True, then asked per call.
    c = stim.Circuit.generated(
        "surface_code:rotated_memory_z", distance=5, rounds=5, after_clifford_depolarization=0.004,
        before_round_data_depolarization=0.004, before_measure_flip_probability=0.004,
        after_reset_flip_probability=0.004,
    )
    dets, obs = c.compile_detector_sampler(seed=5).sample(5000, separate_observables=True)
    for m in (bd.Matching.from_stim_circuit(c, enable_correlations=True),
              bd.Matching.from_detector_error_model(c.detector_error_model(decompose_errors=True),
                                                    enable_correlations=True)):
        corr = m.decode_batch(dets, enable_correlations=True)
        plain = m.decode_batch(dets)
        assert corr.shape == obs.shape and corr.dtype == np.uint8
        e_corr, e_plain = int((corr != obs).any(axis=1).sum()), int((plain != obs).any(axis=1).sum())
        assert 0 < e_corr < e_plain, (e_corr, e_plain)
        # One shot at a time gives the batch's answers, weights included.
        for k in range(40):
            p, w = m.decode(dets[k], return_weight=True, enable_correlations=True)
            assert np.array_equal(p, corr[k]) and np.isfinite(w)
        edges = m.decode_to_edges_array(dets[0], enable_correlations=True)
        assert edges.dtype == np.int64 and edges.ndim == 2 and edges.shape[1] == 2
    if HAS_PYMATCHING:
        import pymatching

        want = pymatching.Matching.from_stim_circuit(c, enable_correlations=True).decode_batch(
            dets, enable_correlations=True)
        assert int((want != corr).any(axis=1).sum()) <= 5
