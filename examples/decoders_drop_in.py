"""backline's decoders where a notebook already calls PyMatching, ldpc or relay-bp: each cell
below is written the way the original library's README uses it, and only the import lines
differ (each original's import is in the comment beside ours).

    python examples/decoders_drop_in.py [--shots 1000]

Each cell prints its result; docs/decoders.md ("From PyMatching / ldpc / relay-bp") lists
every difference.
"""

import argparse

import numpy as np
import stim
from scipy.sparse import csc_matrix, csr_matrix

from backline.decoders import BpOsdDecoder  # from ldpc import BpOsdDecoder
from backline.decoders import Matching  # from pymatching import Matching
from backline.decoders import RelayDecoderF32  # from relay_bp import RelayDecoderF32

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--shots", type=int, default=1000)
args = parser.parse_args()

# %% Matching a check matrix: a five-bit repetition code with weights.
H = csc_matrix([[1, 1, 0, 0, 0],
                [0, 1, 1, 0, 0],
                [0, 0, 1, 1, 0],
                [0, 0, 0, 1, 1]])
weights = np.array([4, 3, 2, 3, 4])
matching = Matching(H, weights=weights)
prediction, solution_weight = matching.decode(np.array([0, 1, 0, 1]), return_weight=True)
print(f"matching (check matrix): prediction {prediction}, weight {solution_weight}")

# %% Matching a surface-code memory experiment from stim, shot by shot and as a batch.
circuit = stim.Circuit.generated("surface_code:rotated_memory_x", distance=5, rounds=5,
                                 after_clifford_depolarization=0.005)
model = circuit.detector_error_model(decompose_errors=True)
matching = Matching.from_detector_error_model(model)
sampler = circuit.compile_detector_sampler(seed=11)
syndrome, actual_observables = sampler.sample(shots=args.shots, separate_observables=True)
num_errors = 0
for i in range(syndrome.shape[0]):
    predicted_observables = matching.decode(syndrome[i, :])
    num_errors += not np.array_equal(actual_observables[i, :], predicted_observables)
predicted = matching.decode_batch(syndrome)
batch_errors = int(np.sum(np.any(predicted != actual_observables, axis=1)))
print(f"matching (stim, d=5): {num_errors} logical errors in {args.shots} shots one by one, "
      f"{batch_errors} as a batch")

# %% BP+OSD on the length-3 repetition code.
H = np.array([[1, 1, 0], [0, 1, 1]])
n = H.shape[1]
bposd = BpOsdDecoder(
    H,
    error_rate=0.1,
    bp_method="product_sum",
    max_iter=7,
    schedule="serial",
    osd_method="osd_cs",
    osd_order=2,
)
rng = np.random.default_rng(2)
received_vector = rng.integers(2, size=n)
syndrome = H @ received_vector % 2
decoding = bposd.decode(syndrome)
print(f"bposd: syndrome {syndrome}, decoding {decoding}, converged {bposd.converge}, "
      f"syndrome met {np.array_equal(H @ decoding % 2, syndrome)}")

# %% Relay-BP on a repetition code, one shot and a batch.
check_matrix = csr_matrix(np.asarray([
    [1, 1, 0],
    [0, 1, 1],
]))
decoder = RelayDecoderF32(
    check_matrix,
    error_priors=np.array([0.003, 0.003, 0.003], dtype=np.float64),
    gamma0=0.65,
    pre_iter=80,
    num_sets=100,
    set_max_iter=60,
    gamma_dist_interval=(-0.24, 0.66),
    stop_nconv=5,
)
detectors = np.array([1, 1], dtype=np.uint8)
decoding = decoder.decode(detectors)
print(f"relay-bp: for the detectors {detectors} the decoded errors were {decoding}")
detector_batch = np.array([[0, 1], [1, 0], [1, 1]], dtype=np.uint8)
print("relay-bp batch:", decoder.decode_batch(detector_batch).tolist())
