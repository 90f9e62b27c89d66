//! Every fuzz target over its checked-in corpus (seeds and every input that ever crashed
//! it — a crash found by `scripts/fuzz.sh` is copied there and stays a regression test), then
//! over seeded random inputs and mutations of the corpus.

use std::time::Instant;

use backline_fuzz::{TARGETS, corpus_dir};

/// A small xorshift generator: reproducible random inputs without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn corpus(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(name);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read(&p).expect("corpus file"),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_target_has_a_seed_corpus() {
    for t in TARGETS {
        assert!(
            !corpus(t.name).is_empty(),
            "{}: no seeds in {}",
            t.name,
            corpus_dir(t.name).display()
        );
    }
}

#[test]
fn the_corpora_and_their_mutations_run_clean() {
    for t in TARGETS {
        let start = Instant::now();
        let seeds = corpus(t.name);
        for (path, input) in &seeds {
            eprintln!("{}: {path}", t.name);
            (t.run)(input);
        }
        // Mutations: bit flips, byte overwrites, truncations and random tails of each seed.
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ t.name.len() as u64);
        let rounds = if t.name == "c-abi" { 200 } else { 3000 };
        for i in 0..rounds {
            let (_, seed) = &seeds[i % seeds.len()];
            let mut m = seed.clone();
            match rng.next() % 4 {
                0 if !m.is_empty() => {
                    let at = rng.next() as usize % m.len();
                    m[at] ^= 1 << (rng.next() % 8);
                }
                1 if !m.is_empty() => {
                    let at = rng.next() as usize % m.len();
                    m[at] = rng.next() as u8;
                }
                2 => m.truncate(rng.next() as usize % (m.len() + 1)),
                _ => m.extend((0..rng.next() % 64).map(|_| rng.next() as u8)),
            }
            (t.run)(&m);
        }
        eprintln!(
            "{}: {} seeds, {rounds} mutations in {:?}",
            t.name,
            seeds.len(),
            start.elapsed()
        );
    }
}

/// The seed inputs, generated from the real encoders so they stay valid as the formats move:
/// `BACKLINE_BLESS=1 cargo test -p backline-fuzz --test corpus` rewrites them (files of
/// other names in a corpus — crashes kept as regressions, AFL finds — are left alone).
fn seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let mut seeds = wire_seeds();
    seeds.extend(text_seeds());
    seeds.push(("c-abi", "memcpy-echo", c_abi_seed()));
    seeds.extend(frame_seeds());
    seeds.push((
        "board-config",
        "sim-board",
        include_bytes!("../../../firmware/examples/sim-board.toml").to_vec(),
    ));
    seeds
}

/// A wire message of `kind` with decoder id 1.
fn wire_message(kind: backline_wire::Kind, payload: &[u8], seq: u32) -> Vec<u8> {
    use backline_wire::{HEADER_BYTES, SlotHeader, WIRE_VERSION, encode_message};
    let h = SlotHeader {
        payload_len: payload.len() as u32,
        decoder_id: 1,
        status: 0,
        kind: kind as u8,
        version: WIRE_VERSION,
        seq,
    };
    let mut out = vec![0u8; payload.len() + HEADER_BYTES];
    encode_message(&mut out, &h, payload);
    out
}

/// Seeds of the wire-message, handshake and ring-slots targets.
fn wire_seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    use backline_wire::{Geometry, Handshake, HandshakeKind, Kind, RejectReason};
    let g = Geometry {
        depth: 8,
        slot_bytes: 64,
    };
    let mut hello = Handshake::new(HandshakeKind::Hello, g, 1);
    hello.session_port = 40_001;
    let mut ring = vec![1u8, 0];
    // A ring of two 64-byte slots whose first slot holds round 0's message.
    let mut slot = vec![0u8; 64];
    let m = wire_message(Kind::Request, b"syndrome", 1);
    slot[64 - m.len()..].copy_from_slice(&m);
    ring.extend_from_slice(&slot);
    ring.extend_from_slice(&[0u8; 64]);
    vec![
        (
            "wire-message",
            "request",
            wire_message(Kind::Request, b"syndrome", 1),
        ),
        (
            "wire-message",
            "reply-empty",
            wire_message(Kind::Reply, b"", 2),
        ),
        ("wire-message", "truncated", vec![0u8; 9]),
        ("handshake", "hello", hello.encode().to_vec()),
        (
            "handshake",
            "reject",
            Handshake::reject(RejectReason::Full, g).encode().to_vec(),
        ),
        (
            "handshake",
            "bye",
            Handshake::new(HandshakeKind::Bye, g, 0).encode().to_vec(),
        ),
        ("handshake", "sealed-accept", {
            let mut v = vec![1u8];
            v.extend_from_slice(&Handshake::new(HandshakeKind::Accept, g, 1).encode());
            v
        }),
        ("ring-slots", "one-message", ring),
        ("ring-slots", "ones", vec![0xFF; 300]),
    ]
}

/// Seeds of the targets that read text: pacer settings, check matrices, detector error
/// models, responder specs.
fn text_seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    vec![
        ("pacer", "b2b", b"b2b\n0\n0\n1".to_vec()),
        (
            "pacer",
            "reference",
            b"random-delayed\n1_000_000\n0x0FFF_FFFF\n1".to_vec(),
        ),
        ("pacer", "defaults", b"random-delayed".to_vec()),
        ("matrix", "alist", {
            let mut v = vec![0u8];
            v.extend_from_slice(b"7 3\n3 4\n1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n4 4 4\n1 2 3\n1 2 3\n1 3 4\n2 3 4\n1 2 4\n1 4 4\n2 3 4\n1 2 3 5\n2 3 5 6\n1 3 6 7\n");
            v
        }),
        ("matrix", "dense", {
            let mut v = vec![1u8];
            v.extend_from_slice(b"# Steane\n1010101\n0110011\n0001111\n");
            v
        }),
        ("matrix", "syndromes", {
            let mut v = vec![2u8 | (4 << 2)];
            v.extend_from_slice(b"010\n111\n000\n");
            v
        }),
        (
            "dem",
            "surface-fragment",
            b"# a fragment of a repetition-code memory\n\
error(0.01) D0 D1\nerror(0.02) D1 L0\nerror(0.001) D0 D1 ^ D2\n\
detector(0, 0) D0\ndetector(1, 0) D1\ndetector(2, 0) D2\n\
repeat 3 {\n    error(0.01) D2 D3\n    shift_detectors(0, 1) 1\n    detector(0, 0) D3\n}\n\
logical_observable L0\n"
                .to_vec(),
        ),
        (
            "dem",
            "tags-and-comments",
            b"error[tag](0.125) D0 # note\ndetector_separator\nerror(0.5) D0 L1\n".to_vec(),
        ),
        ("mobius", "steane-colour-code", {
            let mut v = vec![1u8];
            v.extend_from_slice(
                b"detector(0, 0, 0, 3) D0\ndetector(1, 0, 0, 4) D1\ndetector(2, 0, 0, 5) D2\n\
error(0.05) D0 L0\nerror(0.05) D0 D1 L0\nerror(0.05) D0 D1 D2\nerror(0.05) D0 D2\n\
error(0.05) D1 L0\nerror(0.05) D1 D2\nerror(0.9) D2\ndetector(3, 0, 0, -1) D3\n\
error(0.1) D3 D0 ^ D1 D2\n",
            );
            v
        }),
        ("mobius", "one-colour-and-rainbows", {
            let mut v = vec![0u8];
            v.extend_from_slice(
                b"error(0.1) D0 D1 ^ D2\nerror(0.2) D1 D2 D3 D4\nerror(0.3) D4 L1\n\
detector(0, 0, 0, 0) D0\ndetector(0, 0, 1, 1) D1\ndetector(0, 0, 2, 2) D2\n\
detector(0, 0, 3, 0) D3\ndetector(0, 0, 4, 7) D4\n",
            );
            v
        }),
        (
            "dem-print",
            "blocks-tags-coordinates",
            b"# tags, coordinates, nested blocks, separators\n\
error[leak](0.125) D0 D1 ^ D2 L0\ndetector(1, 0.5, 0) D0\nREPEAT 2 {\n  error(1e-07) D1 l1\n  \
repeat[r] 3 {\n    shift_detectors(0, 0, 1) 2\n    detector(0, 0, 0) D0 D1\n  }\n}\n\
logical_observable L3\nshift_detectors 1\nerror(0.5) ^ D0 ^\n"
                .to_vec(),
        ),
        (
            "dem-print",
            "number-spellings",
            b"error(5e-324) D0\nerror(1) D1\nerror(0) D2\nerror(.25) D3\n\
detector(+1.50, -0, 1E3, 1.7976931348623157e308, 0.000001) D0\n\
shift_detectors() 18446744073709551615\nrepeat 3333333333333333 {\n}\n"
                .to_vec(),
        ),
        ("dem-limits", "repeat-past-the-bounds", {
            // targets 1000, coordinates 200, mechanisms 100, detectors 65,536 (little-endian
            // u16s, minus one).
            let mut v = vec![0xE7, 0x03, 0xC7, 0x00, 0x63, 0x00, 0xFF, 0xFF];
            v.extend_from_slice(
                b"error(0.1) D0 D1\nrepeat 20000 {\n    error(0.1) D0 D1 D2 D3 L0\n    \
detector(1, 2, 3) D0\n    shift_detectors(0, 0, 1) 1\n}\n",
            );
            v
        }),
        ("dem-limits", "within-the-bounds", {
            let mut v = vec![0xFF; 8];
            v.extend_from_slice(
                b"repeat 3 {\n error(0.01) D0 D1 ^ D2 L0\n detector(0, 1) D0\n \
shift_detectors(0, 1) 1\n}\nlogical_observable L1\n",
            );
            v
        }),
        (
            "stream-settings",
            "bposd-window",
            b"bposd\nwindow=2;commit=1;max_iter=30;osd_method=osd_cs;osd_order=4".to_vec(),
        ),
        (
            "stream-settings",
            "relay-streams",
            b"relay-bp\nstreams=4;idle_ms=100;pre_iter=20;num_sets=10;set_max_iter=20;\
gamma_dist_interval=-0.2,0.6;stop_nconv=1"
                .to_vec(),
        ),
        (
            "stream-settings",
            "out-of-range",
            b"bposd\nmax_iter=18446744073709551615;window=0".to_vec(),
        ),
        (
            "responder-spec",
            "bposd-settings",
            b"bposd:hgp13:error_rate=0.05;max_iter=10;osd_method=osd_cs;osd_order=4".to_vec(),
        ),
        (
            "responder-spec",
            "bb",
            b"bposd:bb:3,3,x+y,1+x^2:bp_method=ps".to_vec(),
        ),
        ("responder-spec", "steane", b"steane".to_vec()),
    ]
}

/// The C ABI: a memcpy coprocessor serving echo and a controller doing three rounds.
fn c_abi_seed() -> Vec<u8> {
    let create = |role: u8, key: u8| {
        vec![
            0, 0, role, key, 0, // create("cpu", role, key, "memcpy" …
            2, 3, 2, 0, 1, 3, 50, 29, 29, 1, 0xFF,
            0xFF, // … depth 8, 64 B, 1 in flight, 50 µs, 29 ms
            1, 1, // with the config, into a valid out pointer
        ]
    };
    let mut abi = create(1, 0);
    abi.extend([3, 0, 1, 0, 0]); // connect(cop, "", 0)
    abi.extend([4, 0, 5, 0, 0]); // exchange_keys, establish_channel("memcpy")
    abi.extend([7, 0, 1, 0, 0]); // set_coprocessor_builtin(0, "echo")
    abi.extend([8, 0]); // start
    abi.extend(create(0, 0));
    abi.extend([3, 1, 2, 0, 0, 0]); // connect(ctl, key 0, 0)
    abi.extend([4, 1, 5, 1, 0]);
    abi.extend([6, 1, 1, 8, 0, 8, 0]); // set_message_sizes(8, 8)
    abi.extend([8, 1]);
    for r in 0..3u8 {
        abi.extend([17, 1, 4, b'r', b'o', b'u', b'0' + r]);
    }
    abi.extend([15, 7, 0, 0, 0, 15, 99, 0, 0, 0, 16, 40, 0, 1]); // status names, last error
    abi.extend([14, 1, 14, 0]); // destroy both

    abi
}

/// Seeds of the CUQR frame and stream payload targets.
fn frame_seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    use backline_wire::cuqr::{Call, ResponseHeader};
    use backline_wire::stream::{StreamReply, StreamRequest};
    let enqueue = Call::EnqueueSyndromes {
        decoder_id: 1,
        counter: 0,
        mapping_id: 0,
        num_bits: 12,
        bits: &[0b1000_0001, 0b0000_0100],
    };
    vec![
        ("cuqr-frame", "enqueue", cuqr_request(&enqueue)),
        (
            "cuqr-frame",
            "get-corrections",
            cuqr_request(&Call::GetCorrections {
                decoder_id: 0,
                return_size: 1,
                reset: true,
            }),
        ),
        (
            "cuqr-frame",
            "reset",
            cuqr_request(&Call::ResetDecoder { decoder_id: 2 }),
        ),
        ("cuqr-frame", "response", {
            let h = ResponseHeader {
                status: 0,
                result_len: 0,
                request_id: 7,
                timestamp: 99,
            };
            let mut v = vec![0u8; 32];
            let n = backline_wire::cuqr::encode_response(&mut v, &h, &[1]).unwrap();
            v.truncate(n);
            v
        }),
        (
            "stream-op",
            "enqueue",
            stream_request(&StreamRequest::Enqueue {
                round: 3,
                bits: &[0b101, 0],
            }),
        ),
        (
            "stream-op",
            "get-corrections",
            stream_request(&StreamRequest::GetCorrections {
                observables: 1,
                reset: true,
            }),
        ),
        ("stream-op", "reset", stream_request(&StreamRequest::Reset)),
        ("stream-op", "reply", {
            let r = StreamReply {
                status: backline_wire::cuqr::CallStatus::Ok,
                flags: backline_wire::stream::FLAG_FINAL,
                rounds: 6,
            };
            let mut v = vec![0u8; 16];
            let n = backline_wire::stream::encode_reply(&mut v, &r).unwrap();
            v.truncate(n);
            v
        }),
    ]
}

/// A CUQR request frame of `call`.
fn cuqr_request(call: &backline_wire::cuqr::Call<'_>) -> Vec<u8> {
    let mut v = vec![0u8; 24 + call.arg_bytes()];
    let n = backline_wire::cuqr::encode_request(&mut v, 5, 1_234, call).unwrap();
    v.truncate(n);
    v
}

/// A stream request payload.
fn stream_request(r: &backline_wire::stream::StreamRequest<'_>) -> Vec<u8> {
    let mut v = vec![0u8; 64];
    let n = backline_wire::stream::encode_request(&mut v, r).unwrap();
    v.truncate(n);
    v
}

#[test]
fn the_seeds_are_checked_in() {
    let bless = std::env::var_os("BACKLINE_BLESS").is_some();
    for (target, name, bytes) in seeds() {
        let path = corpus_dir(target).join(name);
        if bless {
            std::fs::create_dir_all(path.parent().expect("a directory")).expect("corpus dir");
            std::fs::write(&path, &bytes).expect("write seed");
        }
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (BACKLINE_BLESS=1 writes it)", path.display()));
        assert_eq!(
            on_disk,
            bytes,
            "{} is stale: BACKLINE_BLESS=1 rewrites it",
            path.display()
        );
    }
}
