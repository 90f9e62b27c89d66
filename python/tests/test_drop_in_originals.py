"""The behaviours the originals' own test suites expect of the drop-ins (issue 44), pinned here
so that a regression shows without their files (scripts/dev/run_original_tests.sh runs theirs).
Written for backline: no original needs to be installed."""

import numpy as np
import pytest
import scipy.sparse as sp

from backline import decoders as bd


def rep(n):
    """The repetition code's checks: n - 1 rows, n columns."""
    h = np.zeros((n - 1, n), dtype=np.uint8)
    for i in range(n - 1):
        h[i, i] = h[i, i + 1] = 1
    return h


# -- ldpc ---------------------------------------------------------------------------------


def test_ldpc_settings_are_settable_and_rebuild():
    d = bd.BpDecoder(rep(3), error_rate=0.1)
    assert d.bp_method == "product_sum" and d.schedule == "parallel"
    np.testing.assert_array_equal(d.error_channel, [0.1] * 3)
    np.testing.assert_array_equal(d.error_rate, [0.1] * 3)  # ldpc's getter gives the channel
    np.testing.assert_array_equal(d.decode(np.array([1, 1])), [0, 1, 0])
    # A probability of 0: that bit never flips, so the other two explain the syndrome.
    d.error_channel = np.array([0.1, 0.0, 0.1])
    np.testing.assert_array_equal(d.error_channel, [0.1, 0.0, 0.1])
    np.testing.assert_array_equal(d.decode(np.array([1, 1])), [1, 0, 1])
    d.channel_probs = [0.1, 0.1, 0.1]
    np.testing.assert_array_equal(d.decode(np.array([1, 1])), [0, 1, 0])
    d.update_channel_probs([0.1, 0.0, 0.1])
    np.testing.assert_array_equal(d.decode(np.array([1, 1])), [1, 0, 1])
    d.error_rate = 0.2
    np.testing.assert_array_equal(d.channel_probs, [0.2] * 3)
    d.max_iter, d.bp_method, d.ms_scaling_factor, d.schedule = 7, "ms", 0.5, "serial"
    assert (d.max_iter, d.bp_method, d.ms_scaling_factor, d.schedule) == (7, "minimum_sum", 0.5, "serial")
    with pytest.raises(ValueError, match="length 3"):
        d.error_channel = [0.1, 0.1]
    with pytest.raises(ValueError):
        d.max_iter = -1
    with pytest.raises(ValueError):
        d.bp_method = "bogus"
    e = bd.BpDecoder(rep(3), channel_probs=[0.1, 0.2, 0.3])  # ldpc v1's keyword
    np.testing.assert_array_equal(e.error_channel, [0.1, 0.2, 0.3])


def test_ldpc_constructor_type_errors():
    h = rep(3)
    with pytest.raises(TypeError):
        bd.BpDecoder("invalid", error_rate=0.1)
    with pytest.raises(TypeError):
        bd.BpDecoder(h, error_rate=0.1, max_iter="invalid")
    with pytest.raises(TypeError):
        bd.BpDecoder(h, error_rate=0.1, random_schedule_seed="invalid")
    with pytest.raises(TypeError):
        bd.BpDecoder(h, error_rate=0.1, omp_thread_count="invalid")
    with pytest.raises(ValueError):
        bd.BpDecoder(h, error_rate=0.1, serial_schedule_order=[1, 2])


def test_ldpc_serial_schedule_order():
    h = rep(5)
    d = bd.BpDecoder(h, error_rate=0.1, max_iter=5, bp_method="minimum_sum", schedule="serial")
    np.testing.assert_array_equal(d.serial_schedule_order, np.arange(5))  # the default
    assert d.random_serial_schedule is False
    d = bd.BpDecoder(h, error_rate=0.1, max_iter=5, bp_method="minimum_sum", schedule="serial",
                     serial_schedule_order=[4, 3, 2, 1, 0])
    s = np.array([1, 0, 0, 0])
    d.decode(s)
    np.testing.assert_array_equal(d.serial_schedule_order, [4, 3, 2, 1, 0])
    d.decode(s)
    np.testing.assert_array_equal(d.serial_schedule_order, [4, 3, 2, 1, 0])
    # Outputs are in the matrix's column order whatever the visiting order.
    rng = np.random.default_rng(3)
    h = sp.random(12, 30, density=0.15, random_state=4, data_rvs=lambda k: np.ones(k)).toarray().astype(np.uint8)
    plain = bd.BpOsdDecoder(h, error_rate=0.05, max_iter=10, schedule="serial", osd_method="OSD_CS", osd_order=2)
    order = rng.permutation(30)
    ordered = bd.BpOsdDecoder(h, error_rate=0.05, max_iter=10, schedule="serial", osd_method="OSD_CS",
                              osd_order=2, serial_schedule_order=order)
    for _ in range(20):
        e = (rng.random(30) < 0.05).astype(np.uint8)
        syn = (h @ e) % 2
        for dec in (plain, ordered):
            out = dec.decode(syn)
            np.testing.assert_array_equal((h @ out) % 2, syn)  # OSD always meets the syndrome
            assert dec.log_prob_ratios.shape == (30,)
    # Setting the order back to the identity is the plain decoder, bit for bit.
    ordered.serial_schedule_order = np.arange(30)
    syn = (h @ (rng.random(30) < 0.1)) % 2
    np.testing.assert_array_equal(ordered.decode(syn), plain.decode(syn))
    np.testing.assert_array_equal(ordered.log_prob_ratios, plain.log_prob_ratios)


def test_ldpc_random_serial_schedule_changes_per_decode():
    d = bd.BpDecoder(rep(10), error_rate=0.1, max_iter=5, bp_method="minimum_sum", schedule="serial",
                     random_serial_schedule=True)
    assert d.random_serial_schedule is True and d.random_schedule_seed == 0
    s = np.zeros(9, dtype=np.uint8)
    s[0] = 1
    d.decode(s)
    first = d.serial_schedule_order
    d.decode(s)
    assert sorted(first) == list(range(10)) and not np.array_equal(first, d.serial_schedule_order)
    # A fixed order turns the random schedule off, as ldpc's setter does.
    d.serial_schedule_order = list(range(10))
    assert d.random_serial_schedule is False


# -- relay-bp -----------------------------------------------------------------------------


PRIORS = np.array([0.003, 0.003, 0.003])


@pytest.mark.parametrize("cls, extra", [
    (bd.MinSumBPDecoderF32, {}),
    (bd.MinSumBPDecoderF64, {}),
    (bd.MinSumBPDecoderI64, {"data_scale_value": 4, "max_data_value": (1 << 16) - 1}),
    (bd.MinSumBPDecoderFixed, {"int_bits": 5, "frac_bits": 2}),
])
def test_relay_min_sum_decoders(cls, extra):
    d = cls(check_matrix=sp.csr_matrix(rep(3)), error_priors=PRIORS, max_iter=100, alpha=1.0, **extra)
    r = d.decode_detailed(np.array([1, 1], dtype=np.uint8))
    assert r.success and r.decoding.tolist() == [0, 1, 0] and 1 <= r.iterations <= 100 and r.max_iter == 100
    shots = np.array([[1, 0], [1, 1], [0, 1]], dtype=np.uint8)
    assert d.decode_batch(shots).tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert [r.decoding.tolist() for r in d.decode_detailed_batch(shots)] == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert d.decode(np.array([1, 1], dtype=np.uint8)).tolist() == [0, 1, 0]


def test_relay_min_sum_quantisation_arguments_are_named():
    with pytest.raises(NotImplementedError, match="data_scale_value"):
        bd.MinSumBPDecoderF32(rep(3), PRIORS, data_scale_value=4)
    with pytest.raises(NotImplementedError, match="int_bits"):
        bd.MinSumBPDecoderI64(rep(3), PRIORS, int_bits=5)


def test_relay_max_iter_is_the_answering_legs_limit():
    d = bd.RelayDecoderF32(sp.csr_matrix(rep(3)), PRIORS, alpha=1.0, pre_iter=120, num_sets=40, set_max_iter=60,
                           explicit_gammas=None, stop_nconv=3)
    r = d.decode_detailed(np.array([1, 1], dtype=np.uint8))
    # The first leg's answer is the lightest; relay-bp reports its limit, and the iterations of
    # every leg run (three converged legs here).
    assert r.success and r.decoding.tolist() == [0, 1, 0]
    assert r.max_iter == 120 and 3 <= r.iterations <= 120
    assert r.decoding_quality == pytest.approx(np.log((1 - 0.003) / 0.003))


def test_relay_observables_from_errors():
    runner = bd.ObservableDecoderRunner(bd.MinSumBPDecoderF32(sp.csr_matrix(rep(3)), PRIORS, max_iter=100,
                                                              alpha=1.0), np.array([[1, 1, 1]]))
    errors = np.array([[0, 1, 0], [1, 1, 1]], dtype=np.uint8)
    rs = runner.from_errors_decode_observables_detailed_batch(errors)
    assert not rs[0].error_detected and not rs[0].error_mismatch_detected and rs[0].converged
    assert rs[0].observables.tolist() == [1]
    # [1, 1, 1] has no syndrome: decoded as no error, a logical error detected.
    assert rs[1].error_detected and rs[1].error_mismatch_detected and rs[1].converged
    assert rs[1].worse_decoding_quality_error is False and rs[1].better_decoding_quality_error is True
    batch = runner.from_errors_decode_observables_batch(errors, parallel=True)
    assert batch.tolist() == [r.observables.tolist() for r in [rs[0]]] + [[0]]
    assert runner.from_errors_decode_observables(errors[0]).tolist() == [1]
    d = runner.decode_observables_detailed_batch(np.array([[1, 1]], dtype=np.uint8))
    assert d[0].observables.tolist() == [1] and d[0].error_detected is None


# -- PyMatching: the arrays read in place ----------------------------------------------------


def test_matching_reads_uint8_and_bool_in_place_and_answers_writable_arrays():
    stim = pytest.importorskip("stim")
    c = stim.Circuit.generated("surface_code:rotated_memory_x", distance=3, rounds=3,
                               after_clifford_depolarization=0.01, before_measure_flip_probability=0.01)
    m = bd.Matching.from_stim_circuit(c)
    dets = c.compile_detector_sampler(seed=1).sample(300)
    ref = np.array([m.decode(row.astype(np.int64)) for row in dets])  # the general path
    for shots in (dets, dets.astype(np.uint8), np.asfortranarray(dets.astype(np.uint8)), dets.astype(np.int32)):
        pred, w = m.decode_batch(shots, return_weights=True)
        assert pred.flags.writeable and pred.dtype == np.uint8 and w.dtype == np.float64
        np.testing.assert_array_equal(pred, ref)
        for i in range(0, 300, 37):
            p1, w1 = m.decode(shots[i], return_weight=True)
            assert p1.flags.writeable and w1 == pytest.approx(w[i])
            np.testing.assert_array_equal(p1, ref[i])
    np.testing.assert_array_equal(m.decode_batch(dets[:, ::-1][:, ::-1]), ref)  # a strided view
    assert m.decode_batch(np.zeros((0, m.num_detectors), dtype=np.uint8)).shape == (0, m.num_fault_ids)
    with pytest.raises(ValueError):
        m.decode(np.zeros(m.num_detectors + 5, dtype=np.uint8))


# -- PyMatching: self-loops, heavy edges, check-matrix boundaries --------------------------


def test_matching_decode_to_edges_lists_pymatchings_paths_in_its_order():
    # A 3 x 4 grid of unit edges, node 0 also to the boundary; every pair has several shortest
    # paths. The lists are PyMatching 2.4's for the same graph and syndromes: its path among
    # the ties, each edge oriented as its search traced it, in its order.
    m = bd.Matching()
    for x in range(12):
        if x % 4 < 3:
            m.add_edge(x, x + 1)
        if x < 8:
            m.add_edge(x, x + 4)
    m.add_boundary_edge(0, weight=10)
    cases = {
        (1, 11): [[9, 10], [10, 11], [5, 1], [9, 5]],
        (2, 8): [[10, 9], [9, 8], [6, 2], [10, 6]],
        (3, 8): [[1, 2], [2, 3], [0, 4], [4, 8], [1, 0]],
    }
    for fired, want in cases.items():
        z = np.zeros(12, dtype=np.uint8)
        z[list(fired)] = 1
        assert m.decode_to_edges_array(z).tolist() == want, fired


def test_matching_self_loops_are_kept_never_matched_and_negative_ones_always_taken():
    m = bd.Matching()
    m.add_edge(0, 1, fault_ids=0, weight=2)
    m.add_edge(1, 1, fault_ids=1, weight=-7)  # negative: in every correction
    m.add_edge(0, 0, fault_ids=2, weight=5)  # positive: in none
    m.add_boundary_edge(1, fault_ids=3, weight=1)
    m.add_edge(3, 3, weight=1)  # a node whose only edge is a self-loop
    assert (m.num_nodes, m.num_edges) == (4, 5)
    assert [(a, b) for a, b, _ in m.edges()] == [(0, 1), (1, 1), (0, 0), (1, None), (3, 3)]
    pred, w = m.decode([0, 0, 0, 0], return_weight=True)
    assert pred.tolist() == [0, 1, 0, 0] and w == -7
    pred, w = m.decode([1, 0, 0, 0], return_weight=True)  # 0-1 then 1's boundary
    assert pred.tolist() == [1, 1, 0, 1] and w == 2 + 1 - 7
    preds, ws = m.decode_batch(np.array([[0, 0, 0, 0], [1, 0, 0, 0]], dtype=np.uint8), return_weights=True)
    assert preds.tolist() == [[0, 1, 0, 0], [1, 1, 0, 1]] and ws.tolist() == [-7, -4]
    # The correction's edges list no self-loop, in PyMatching's order and orientation (the path
    # traced back from where the search ended).
    assert m.decode_to_edges_array([1, 0, 0, 0]).tolist() == [[1, 0], [1, -1]]
    with pytest.raises(ValueError):
        m.decode([0, 0, 0, 1])  # node 3 has nothing to match with
    with pytest.raises(ValueError, match="already exists"):
        m.add_edge(1, 1, weight=3)
    m.add_edge(1, 1, fault_ids=1, weight=-9, merge_strategy="smallest-weight")
    assert m.decode([0, 0, 0, 0], return_weight=True)[1] == -9
    # Only self-loops: the negative one still counts.
    s = bd.Matching()
    s.add_edge(0, 0, fault_ids=1, weight=-2)
    pred, w = s.decode([0], return_weight=True)
    assert pred.tolist() == [0, 1] and w == -2


def test_matching_an_edge_too_heavy_is_not_added_with_a_warning():
    m = bd.Matching()
    m.add_edge(0, 1)
    for add in (lambda: m.add_edge(1, 2, weight=2**24), lambda: m.add_boundary_edge(3, weight=-(2**24)),
                lambda: m.add_edge(4, 5, weight=float("inf")), lambda: m.add_edge(0, 1, weight=1e10,
                                                                                  merge_strategy="replace")):
        with pytest.warns(UserWarning, match="maximum edge weight 16777215"):
            add()
    m.add_edge(6, 7, weight=2**24 - 1)  # the largest weight is taken
    assert [(a, b, d["weight"]) for a, b, d in m.edges()] == [(0, 1, 1.0), (6, 7, 2**24 - 1)]
    with pytest.raises(ValueError, match="not a number"):
        m.add_edge(1, 2, weight=float("nan"))
    # A check matrix's column of such a weight is kept, and the decode raises (PyMatching's rule).
    c = bd.Matching.from_check_matrix(rep(3), weights=[1, 2**24, 1])
    assert c.num_edges == 3
    with pytest.raises(ValueError, match="16777215"):
        c.decode([1, 0])


def test_matching_spacelike_weights_is_weights_old_name_not_a_second_one():
    m = bd.Matching.from_check_matrix(rep(3), spacelike_weights=[1, 5, 1])
    assert [d["weight"] for _, _, d in m.edges()][:3] == [1.0, 5.0, 1.0]
    with pytest.raises(ValueError, match="spacelike_weights"):
        bd.Matching.from_check_matrix(rep(3), weights=[1, 1, 1], spacelike_weights=[2, 2, 2])


def test_matching_check_matrix_boundary_is_a_node_listed_in_edges():
    h = rep(4)  # 3 checks: the boundary is node 3
    m = bd.Matching(H=sp.csr_matrix(h))  # PyMatching's old keyword
    assert m.boundary == {3} and (m.num_nodes, m.num_detectors) == (4, 3)
    assert [(a, b) for a, b, _ in m.edges()] == [(0, 3), (0, 1), (1, 2), (2, 3)]
    assert m.decode([1, 0, 0]).tolist() == [1, 0, 0, 0]
    assert m.decode([0, 0, 1]).tolist() == [0, 0, 0, 1]
    f = np.array([[0, 1, 1, 1], [1, 1, 0, 0]])
    m = bd.Matching.from_check_matrix(h, faults_matrix=f)
    assert m.num_fault_ids == 2
    assert [(a, b, d["fault_ids"]) for a, b, d in m.edges()] == [
        (0, 3, {1}), (0, 1, {0, 1}), (1, 2, {0}), (2, 3, {0})]
    assert m.decode([1, 0, 0]).tolist() == [0, 1]  # column 0: node 0 to the boundary node
    assert m.decode([0, 0, 1]).tolist() == [1, 0]  # column 3
    v = bd.Matching.from_check_matrix(h, faults_matrix=f, use_virtual_boundary_node=True)
    assert v.boundary == set() and [(a, b) for a, b, _ in v.edges()] == [(0, None), (0, 1), (1, 2), (2, None)]
    # A boundary edge added to the boundary node's neighbour beside its edge to the node: the
    # lighter decides.
    m.add_boundary_edge(0, fault_ids=0, weight=0.5)
    assert m.decode([1, 0, 0]).tolist() == [1, 0]


def test_matching_edges_keep_the_order_and_orientation_they_were_added_in():
    m = bd.Matching()
    m.add_edge(5, 6)
    m.add_edge(1, 0, fault_ids=1)
    m.add_boundary_edge(3)
    m.add_edge(6, 2)
    m.add_edge(0, 1, weight=3, merge_strategy="replace")
    assert [(a, b, d["weight"]) for a, b, d in m.edges()] == [
        (5, 6, 1.0), (1, 0, 3.0), (3, None, 1.0), (6, 2, 1.0)]
