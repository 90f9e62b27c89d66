"""NVIDIA's realtime RPC frames against backline's CUQR server: a client packed by hand here
with ``struct`` from NVIDIA's published layout (not backline's encoder, not
``backline.cuqr.Client``) streams 1,000 stim-sampled shots of the surface code d = 5, r = 5
round by round, with both counter conventions, and its logical error rate is the
whole-history decoder's (``backline decode --dem``'s) on the same shots; then
``backline.cuqr.Client`` in NVIDIA's producer's order, and the statuses of bad calls."""

import socket
import struct
from pathlib import Path

import numpy as np
import pytest
import stim

import backline
from backline import _native, cuqr
from backline.errors import StreamError

DEM = Path(__file__).resolve().parents[2] / "decoders/tests/data/dem/surface_d5_r5_p0.001.dem"
SLOT = 256
SHOTS = 1000


def slot(function_id: int, request_id: int, args: bytes) -> bytes:
    """A request in a zeroed 256-byte slot: magic 'CUQR', FNV-1a id, arg_len, request id,
    timestamp 0, then the arguments without padding."""
    head = struct.pack("<IIIIQ", 0x43555152, function_id, len(args), request_id, 0)
    return (head + args).ljust(SLOT, b"\0")


class HandPacked:
    def __init__(self, port: int, decoder_id: int):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(("127.0.0.1", port))
        self.sock.settimeout(30)
        self.decoder_id = decoder_id

    def call(self, frame: bytes) -> tuple[int, bytes]:
        self.sock.send(frame)
        data = self.sock.recv(4096)
        assert len(data) == SLOT, "one whole slot"
        magic, status, result_len, request_id, _ = struct.unpack_from("<IiIIQ", data)
        assert magic == 0x43555153
        assert request_id == struct.unpack_from("<I", frame, 12)[0]
        return status, data[24:24 + result_len]

    def enqueue(self, counter: int, events: np.ndarray) -> int:
        bits = np.packbits(events.astype(np.uint8), bitorder="little").tobytes()
        args = struct.pack("<qqqq", self.decoder_id, counter, 0, events.size) + bits
        assert len(args) == 32 + (events.size + 7) // 8
        return self.call(slot(0x7ED8BE82, counter & 0xFFFFFFFF, args))[0]

    def get_corrections(self, request_id: int, k: int, reset: int) -> tuple[int, bytes]:
        args = struct.pack("<qqB", self.decoder_id, k, reset)
        assert len(args) == 17
        return self.call(slot(0x882D5BA1, request_id, args))


@pytest.fixture(scope="module")
def model():
    f = backline.stream_decoder(str(DEM))
    dem = stim.DetectorErrorModel.from_file(str(DEM))
    dets, obs, _ = dem.compile_sampler(seed=11).sample(SHOTS)
    return f, dets.astype(np.uint8), obs[:, 0].astype(np.uint8)


def test_nvidias_client_streams_1000_shots_on_two_rings_like_the_whole_history(model):
    f, dets, obs = model
    with cuqr.Server({0: f, 1: f}) as server:
        p0, rings = cuqr.parse_ready_line(server.ready_line)
        assert server.ready_line == (f"QEC_DECODING_SERVER_READY port={p0} transport=udp "
                                     f"ring0={rings[0]} ring1={rings[1]}")
        assert p0 == rings[0] != rings[1]
        assert rings == server.ports
        predictions = {}
        for decoder_id, tagged in ((0, False), (1, True)):
            c = HandPacked(rings[decoder_id], decoder_id)
            got = np.zeros(SHOTS, np.uint8)
            for shot in range(SHOTS):
                for r, events in enumerate(f.split_rounds(dets[shot])):
                    counter = (shot << 16) | r if tagged else 0
                    assert c.enqueue(counter, events) == 0, (shot, r)
                status, result = c.get_corrections(shot + 1, f.num_observables, 2)
                assert status == 0, shot
                got[shot] = result[0] & 1
            predictions[tagged] = got
        stats = server.stop()
    calls = 2 * SHOTS * (f.rounds + 1)
    assert stats["frames"] == calls and stats["statuses"]["ok"] == calls
    assert sum(stats["dropped"].values()) == 0
    assert all(f"{SHOTS} shots finished" in line for line in stats["streams"])
    assert (predictions[False] == predictions[True]).all(), "the counter changes nothing"
    # The whole-history decoder (what `backline decode --dem` runs) on the same shots.
    whole = _native.DemDecoder(DEM.read_text(), "bposd", [])
    packed = np.packbits(dets, axis=1, bitorder="little")
    want = np.frombuffer(whole.decode_bit_packed(packed.tobytes(), SHOTS), dtype=np.uint8) & 1
    assert (predictions[False] == want).all(), "shot by shot"
    assert int((predictions[False] != obs).sum()) == int((want != obs).sum())
    assert predictions[False].sum() > 0, "some shots needed a correction"


def test_the_client_calls_in_nvidias_order_and_raises_refusals(model):
    f, dets, obs = model
    with cuqr.Server({3: f}, rings=False) as server:
        port = server.ports[3]
        whole = _native.DemDecoder(DEM.read_text(), "bposd", [])
        packed = np.packbits(dets[:20], axis=1, bitorder="little")
        want = np.frombuffer(whole.decode_bit_packed(packed.tobytes(), 20), dtype=np.uint8) & 1
        with cuqr.Client("127.0.0.1", port, decoder_id=3, counter="shot-round") as c:
            for shot in range(20):
                got = c.decode_shot(f.split_rounds(dets[shot]), shot=shot, num_observables=f.num_observables)
                assert got.dtype == np.uint8 and got.tolist() == [want[shot]]
            # Not ready mid-shot (without polling); any non-zero status raises, by name.
            c.reset_decoder()
            c.enqueue_syndromes(f.split_rounds(dets[0])[0])
            with pytest.raises(StreamError) as e:
                c.get_corrections(1, poll=False)
            assert e.value.status == "not_ready"
            with pytest.raises(StreamError) as e:
                c.get_corrections(2)
            assert e.value.status == "bad_request"
            # More bits than the shot: accepted, then internal_error until reset_decoder.
            c.enqueue_syndromes(np.zeros(f.num_detectors, np.uint8))
            with pytest.raises(StreamError) as e:
                c.get_corrections(1)
            assert e.value.status == "internal_error"
            c.reset_decoder()
            for events in f.split_rounds(dets[0]):
                c.enqueue_syndromes(events)
            assert c.get_corrections(1, reset=True).tolist() == [want[0]]
        with cuqr.Client("127.0.0.1", port, decoder_id=9) as other:
            with pytest.raises(StreamError) as e:
                other.reset_decoder()
            assert e.value.status == "invalid_decoder"
        stats = server.stop()
    assert stats["statuses"]["not_ready"] == 1 and stats["statuses"]["invalid_decoder"] == 1
    assert server.stop() == stats


def test_ready_lines_and_bad_servers():
    assert cuqr.parse_ready_line("QEC_DECODING_SERVER_READY port=5 transport=udp ring0=5 ring7=9") == (
        5, {0: 5, 7: 9})
    with pytest.raises(ValueError):
        cuqr.parse_ready_line("ready 127.0.0.1:5")
    assert cuqr.shot_round_counter(3, 2) == 0x30002
    with pytest.raises(backline.errors.CoprocessorFunctionError, match="not a stream"):
        cuqr.Server({0: "steane"})
    f = backline.stream_decoder(str(DEM))
    with pytest.raises(backline.errors.CoprocessorFunctionError, match="power of two"):
        cuqr.Server({0: f}, slot_size=200)
