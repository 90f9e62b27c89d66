"""The tape → IR front end and the results: Clifford mappings against PennyLane's matrices,
random Clifford circuits with mid-circuit measurements against default.qubit, result
shapes and types, shot vectors, postselection, noise channels, explicit decoding."""

from __future__ import annotations

import itertools

import numpy as np
import pennylane as qml
import pytest

import backline
from backline import Backline, Controller, Coprocessor, CoprocessorFunction, codes, decode
from backline._clifford import sequence, unitary

H = np.pi / 2


def _equal_up_to_phase(a, b):
    i = np.unravel_index(np.argmax(np.abs(b)), b.shape)
    phase = a[i] / b[i]
    return abs(abs(phase) - 1) < 1e-9 and np.allclose(a, phase * b, atol=1e-9)


@pytest.mark.parametrize(
    "op",
    [
        qml.SX(0), qml.adjoint(qml.SX(0)), qml.CY([0, 1]), qml.ISWAP([0, 1]), qml.ECR([0, 1]),
        qml.adjoint(qml.S(0)), qml.adjoint(qml.CY([1, 0])), qml.Rot(H, -H, 2 * H, wires=0),
        *[g(k * H, wires=0) for g in (qml.RX, qml.RY, qml.RZ, qml.PhaseShift) for k in range(-3, 5)],
        qml.IsingZZ(H, wires=[0, 1]), qml.CRZ(np.pi, wires=[0, 1]), qml.BasisState(np.array([1, 0]), wires=[0, 1]),
    ],
    ids=str,
)
def test_clifford_mappings_equal_the_gates_up_to_phase(op):
    wires = [0, 1]
    got = unitary(sequence(op), wires)
    want = qml.matrix(op, wire_order=wires)
    assert _equal_up_to_phase(got, want), op


def _random_clifford_circuit(rng, n, depth, mcm):
    ops = []
    for _ in range(depth):
        k = rng.integers(0, 9)
        q = int(rng.integers(0, n))
        r = int((q + 1 + rng.integers(0, n - 1)) % n)
        if k == 0:
            ops.append(("H", q))
        elif k == 1:
            ops.append(("S", q))
        elif k == 2:
            ops.append(("CNOT", q, r))
        elif k == 3:
            ops.append(("CZ", q, r))
        elif k == 4:
            ops.append(("SX", q))
        elif k == 5:
            ops.append(("RY", q, int(rng.integers(-3, 4))))
        elif k == 6:
            ops.append(("CY", q, r))
        elif mcm and k == 7:
            ops.append(("M", q, bool(rng.integers(0, 2))))
        elif mcm and k == 8:
            ops.append(("C", q, r, "XYZ"[int(rng.integers(0, 3))]))
    return ops


def _apply(ops):
    ms = []
    for o in ops:
        if o[0] == "H":
            qml.Hadamard(o[1])
        elif o[0] == "S":
            qml.S(o[1])
        elif o[0] == "CNOT":
            qml.CNOT([o[1], o[2]])
        elif o[0] == "CZ":
            qml.CZ([o[1], o[2]])
        elif o[0] == "SX":
            qml.SX(o[1])
        elif o[0] == "RY":
            qml.RY(o[2] * H, o[1])
        elif o[0] == "CY":
            qml.CY([o[1], o[2]])
        elif o[0] == "M":
            ms.append(qml.measure(o[1], reset=o[2]))
        elif o[0] == "C" and ms:
            gate = {"X": qml.PauliX, "Y": qml.PauliY, "Z": qml.PauliZ}[o[3]]
            cond = ms[-1] if len(ms) < 2 else (ms[-1] ^ ms[-2] if o[1] % 2 else ms[-1] & ms[-2])
            qml.cond(cond, gate)(o[2])
    return ms


@pytest.mark.parametrize("seed", range(6))
def test_random_clifford_circuits_match_default_qubit(seed):
    """Without mid-circuit measurements: the distribution of every wire's outcome against
    default.qubit's exact probabilities."""
    rng = np.random.default_rng(seed)
    n = 4
    ops = _random_clifford_circuit(rng, n, 30, mcm=False)

    def circ():
        _apply(ops)
        return qml.probs(wires=range(n))

    exact = qml.QNode(circ, qml.device("default.qubit", wires=n))()
    shots = 4000
    got = qml.set_shots(qml.QNode(circ, Backline(wires=n, seed=seed)), shots)()
    assert np.abs(got - exact).max() < 0.04, (got, exact)
    # Zero-probability outcomes never occur.
    assert (got[exact < 1e-12] == 0).all()


@pytest.mark.parametrize("seed", range(4))
def test_random_circuits_with_mid_circuit_measurements_match_default_qubit(seed):
    rng = np.random.default_rng(100 + seed)
    n = 3
    ops = _random_clifford_circuit(rng, n, 25, mcm=True)
    ops.insert(0, ("M", 0, False))

    def circ():
        ms = _apply(ops)
        return qml.probs(wires=range(n)), qml.expval(ms[0]), qml.probs(op=ms[-1])

    shots = 1500
    ref = qml.set_shots(qml.QNode(circ, qml.device("default.qubit", wires=n, seed=seed), mcm_method="one-shot"), shots)()
    got = qml.set_shots(qml.QNode(circ, Backline(wires=n, seed=seed), mcm_method="one-shot"), shots)()
    for r, g in zip(ref, got):
        assert np.abs(np.asarray(r) - np.asarray(g)).max() < 0.08, (r, g)


def test_result_shapes_and_types_follow_default_qubit():
    def circ():
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        qml.X(2)
        m = qml.measure(2)
        return (qml.sample(wires=[0, 1]), qml.sample(wires=0), qml.counts(wires=[0, 1]), qml.expval(qml.Z(2)),
                qml.var(qml.Z(0) @ qml.Z(1)), qml.probs(wires=[2]), qml.sample(m), qml.counts(m),
                qml.sample(qml.Z(0)), qml.counts(qml.X(2)), qml.expval(0.5 * qml.Z(0) @ qml.Z(1) + 2 * qml.Z(2)))

    shots = 50
    ref = qml.set_shots(qml.QNode(circ, qml.device("default.qubit", wires=3, seed=1)), shots)()
    got = qml.set_shots(qml.QNode(circ, Backline(wires=3, seed=1)), shots)()
    assert len(ref) == len(got)
    for k, (r, g) in enumerate(zip(ref, got)):
        assert type(np.asarray(r)) is type(np.asarray(g)), k
        assert np.shape(r) == np.shape(g), (k, r, g)
        if isinstance(r, dict):
            assert set(map(str, r)) >= set(map(str, g)), (k, r, g)
    assert got[3] == -1 and got[4] == 0 and list(got[5]) == [0, 1]
    assert got[10] == pytest.approx(0.5 - 2)


def test_shot_vectors_give_one_result_per_partition():
    dev = Backline(wires=2, seed=3)

    @qml.set_shots([100, (20, 3)])
    @qml.qnode(dev)
    def c():
        qml.Hadamard(0)
        return qml.sample(wires=[0]), qml.expval(qml.Z(1))

    r = c()
    assert len(r) == 4
    assert r[0][0].shape == (100, 1) and [x[0].shape for x in r[1:]] == [(20, 1)] * 3
    assert all(x[1] == 1 for x in r)


def test_postselection_discards_shots_like_default_qubit():
    def circ():
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        qml.measure(0, postselect=1)
        return qml.sample(wires=[1])

    got = qml.set_shots(qml.QNode(circ, Backline(wires=2, seed=5), mcm_method="one-shot"), 400)()
    assert 120 < len(got) < 280
    assert (np.asarray(got) == 1).all()


def test_noise_channels_and_identities():
    dev = Backline(wires=2, seed=1)

    @qml.set_shots(200)
    @qml.qnode(dev)
    def c():
        qml.BitFlip(1.0, wires=0)
        qml.PhaseFlip(1.0, wires=1)
        qml.Identity(1)
        qml.GlobalPhase(0.3)
        return qml.sample(wires=[0, 1])

    s = c()
    assert (s[:, 0] == 1).all() and (s[:, 1] == 0).all()

    @qml.set_shots(4000)
    @qml.qnode(dev)
    def d():
        qml.DepolarizingChannel(0.3, wires=0)
        return qml.expval(qml.Z(0))

    # X or Y (each p/3) flip Z: <Z> = 1 - 4p/3.
    assert d() == pytest.approx(1 - 4 * 0.3 / 3, abs=0.05)


def test_conditions_of_any_boolean_function():
    dev = Backline(wires=4, seed=2)

    @qml.set_shots(400)
    @qml.qnode(dev)
    def c():
        for w in range(3):
            qml.Hadamard(w)
        a, b, d = (qml.measure(w) for w in range(3))
        qml.cond((a & b) | ~d, qml.PauliX)(3)
        return qml.sample(a), qml.sample(b), qml.sample(d), qml.sample(wires=[3])

    a, b, d, t = c()
    want = ((a & b) | (1 - d)).astype(int)
    np.testing.assert_array_equal(np.asarray(t).reshape(-1), want)


def test_explicit_bposd_decoding_with_the_13_qubit_code_helps():
    """Demo 2 in small: bit flips on the [[13,1,3]] code's data, its Z checks measured with
    one ancilla, decoded by BP-OSD in a coprocessor, the correction applied shot by shot."""
    hx, hz = codes.hgp13()
    dec = backline.css_bp_decoder(hx, hz, postprocess="osd", num_iters=10)
    n = hx.shape[1]
    dev = Backline(controller=Controller(wires=n + 1), coprocessors=[Coprocessor(coprocessor_fn=dec)], seed=3)

    @qml.set_shots(1500)
    @qml.qnode(dev)
    def memory(correct):
        for q in range(n):
            qml.BitFlip(0.03, wires=q)
        syn = []
        for row in hz:
            for q in np.flatnonzero(row):
                qml.CNOT([int(q), n])
            syn.append(qml.measure(n, reset=True))
        if correct:
            backline.apply_correction(decode(syn, decoder_id=backline.Z_CHECKS), range(n), encoding="bits")
        return qml.sample(wires=range(n))

    fail = {c: sum(not codes.in_rowspace(hx, r) for r in memory(c)) for c in (False, True)}
    assert dev.last_run.rounds == 1500
    assert fail[True] < fail[False] / 5, fail
    # Every corrected shot has a zero Z syndrome.
    s = memory(True)
    assert not ((s.astype(int) @ hz.T) % 2).any()


def test_steane_index_corrections_and_runtime_calls_agree():
    """A Steane block's Z checks decoded by the lookup (an index answer), once with decode
    and once with the four runtime calls: the same samples for the same seed."""
    hx, hz = codes.steane()
    placement = dict(controller=Controller(wires=8),
                     coprocessors=[Coprocessor(coprocessor_fn=CoprocessorFunction.builtin("steane"))])

    def body():
        for q in range(7):
            qml.BitFlip(0.05, wires=q)
        syn = []
        for row in hz:
            for q in np.flatnonzero(row):
                qml.CNOT([int(q), 7])
            syn.append(qml.measure(7, reset=True))
        return syn

    @qml.set_shots(600)
    @qml.qnode(Backline(**placement, seed=9))
    def explicit():
        r = decode(body(), decoder_id=1)
        backline.apply_correction(r, range(7))
        return qml.sample(wires=range(7))

    @qml.set_shots(600)
    @qml.qnode(Backline(**placement, seed=9))
    def calls():
        syn = body()
        s = backline.runtime_call(backline.GET_SESSION, "controller", 0)
        backline.runtime_call(backline.STAGE_PAYLOAD, s, syn, decoder_id=1)
        backline.runtime_call(backline.POST, s)
        r = backline.runtime_call(backline.COLLECT, s)
        backline.apply_correction(r, range(7))
        return qml.sample(wires=range(7))

    a, b = explicit(), calls()
    np.testing.assert_array_equal(a, b)
    assert not ((a.astype(int) @ hz.T) % 2).any(), "every shot corrected to a codeword"
    dumps = backline.ir_dumps(calls)
    assert "transport.get_session s0" in dumps[0][1]
    assert "r0 = transport.collect s0" in dumps[-1][1]


def test_the_device_is_the_pennylane_plugin():
    dev = qml.device("backline.qubit", wires=2)
    assert isinstance(dev, Backline)
    assert "one-shot" in dev.capabilities.supported_mcm_methods
    assert list(itertools.islice(dev.wires, 2)) == [0, 1]


def test_pauli_product_measurements():
    """qml.pauli_measure: deterministic on a Bell pair (XX = ZZ = +1, YY = -1), and it
    projects: after measuring XX on |00⟩, XX stays fixed while ZZ stays +1."""
    dev = Backline(wires=3, seed=4)

    @qml.set_shots(300)
    @qml.qnode(dev)
    def bell():
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        xx = qml.pauli_measure("XX", wires=[0, 1])
        yy = qml.pauli_measure("YY", wires=[0, 1])
        zz = qml.pauli_measure("ZZ", wires=[0, 1])
        return qml.sample(xx), qml.sample(yy), qml.sample(zz), qml.sample(wires=[0, 1])

    xx, yy, zz, s = bell()
    assert (xx == 0).all() and (yy == 1).all() and (zz == 0).all()
    assert (s[:, 0] == s[:, 1]).all() and 0.3 < s[:, 0].mean() < 0.7

    @qml.set_shots(300)
    @qml.qnode(dev)
    def project():
        a = qml.pauli_measure("XXZ", wires=[0, 1, 2])
        b = qml.pauli_measure("XXZ", wires=[0, 1, 2])
        c = qml.pauli_measure("ZZ", wires=[0, 1])
        return qml.sample(a), qml.sample(b), qml.sample(c)

    a, b, c = project()
    np.testing.assert_array_equal(a, b)
    assert 0.3 < a.mean() < 0.7 and (c == 0).all()
