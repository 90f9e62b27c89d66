//! The CUQR server over loopback UDP and its frame logic, with clients that pack their
//! frames by hand from NVIDIA's layout (not with this crate's encoder), so that the server is
//! checked against the layout and not against itself.

use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use backline_probe::Hop;
use backline_wire::cuqr::{
    CallStatus, ENQUEUE_SYNDROMES_ID, GET_CORRECTIONS_ID, RESET_DECODER_ID, parse_response,
};

use super::*;

/// A table of the 3-round repetition code (2 detectors a round, 1 observable) at `ids`.
fn table(tag: &str, ids: &[u32]) -> ResponderTable {
    table_with(tag, ids, |_| "")
}

/// [`table`], with more settings for the stream at each id (`;key=value…`).
fn table_with(tag: &str, ids: &[u32], more: impl Fn(u32) -> &'static str) -> ResponderTable {
    let p = crate::stream::tests::model_file(&format!("cuqr-{tag}"));
    let mut t = ResponderTable::new();
    for &id in ids {
        let spec = format!("stream:{}:window=2;commit=1{}", p.display(), more(id));
        for (_, r) in crate::stream_functions(&spec, id).unwrap() {
            t.insert(id, r);
        }
    }
    t
}

/// A request header, packed by hand.
fn header(function_id: u32, arg_len: u32, request_id: u32) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0x4355_5152u32.to_le_bytes());
    f.extend_from_slice(&function_id.to_le_bytes());
    f.extend_from_slice(&arg_len.to_le_bytes());
    f.extend_from_slice(&request_id.to_le_bytes());
    f.extend_from_slice(&0x55u64.to_le_bytes());
    f
}

fn enqueue(request_id: u32, decoder: i64, counter: i64, num_bits: i64, bits: &[u8]) -> Vec<u8> {
    let mut f = header(ENQUEUE_SYNDROMES_ID, 32 + bits.len() as u32, request_id);
    for v in [decoder, counter, 0, num_bits] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(bits);
    f
}

fn get_corrections(request_id: u32, decoder: i64, reset: u8) -> Vec<u8> {
    let mut f = header(GET_CORRECTIONS_ID, 17, request_id);
    f.extend_from_slice(&decoder.to_le_bytes());
    f.extend_from_slice(&1i64.to_le_bytes());
    f.push(reset);
    f
}

fn reset(request_id: u32, decoder: i64) -> Vec<u8> {
    let mut f = header(RESET_DECODER_ID, 8, request_id);
    f.extend_from_slice(&decoder.to_le_bytes());
    f
}

/// A client socket of one ring.
struct Client {
    sock: UdpSocket,
}

impl Client {
    fn to(addr: std::net::SocketAddr) -> Client {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Client { sock }
    }

    fn send(&self, f: &[u8]) {
        self.sock.send(f).unwrap();
    }

    /// The next answer: (status, request id, timestamp, result); every answer is one whole
    /// slot.
    fn recv_any(&self) -> (i32, u32, u64, Vec<u8>) {
        let mut r = [0u8; 512];
        let m = self.sock.recv(&mut r).expect("an answer");
        assert_eq!(m, 256, "an answer fills the slot");
        let (h, res) = parse_response(&r[..m]).unwrap();
        (h.status, h.request_id, h.timestamp, res.to_vec())
    }

    /// The next answer to a whole request: (status, request id, result), its timestamp
    /// echoed.
    fn recv(&self) -> (i32, u32, Vec<u8>) {
        let (s, id, ts, r) = self.recv_any();
        assert_eq!(ts, 0x55, "the timestamp is echoed");
        (s, id, r)
    }

    fn call(&self, f: &[u8]) -> (i32, Vec<u8>) {
        self.send(f);
        let (s, _, r) = self.recv();
        (s, r)
    }
}

const OK: i32 = CallStatus::Ok as i32;

#[test]
fn tables_and_settings_that_cannot_be_served_are_refused() {
    let t = table("refuse", &[0]);
    let o = |slot_bytes, num_slots| CuqrOptions {
        slot_bytes,
        num_slots,
        ..CuqrOptions::default()
    };
    for slot in [0, 40, 63, 100, 255, 65_536] {
        let e = CuqrServer::start("127.0.0.1:0", &t, o(slot, 8))
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("must be a power of two"),
            "{slot}: {e}"
        );
    }
    assert!(CuqrServer::start("127.0.0.1:0", &t, o(64, 8)).is_ok());
    assert!(matches!(
        CuqrServer::start("127.0.0.1:0", &t, o(256, 0)),
        Err(CuqrError::NumSlots(0))
    ));
    let mut bad = table("refuse2", &[1]);
    bad.insert(0, Arc::new(crate::Echo));
    let e = CuqrServer::start("127.0.0.1:0", &bad, o(256, 8))
        .err()
        .unwrap();
    assert!(e.to_string().contains("decoder id 0 serves `echo`"), "{e}");
    assert!(matches!(
        CuqrServer::start("127.0.0.1:0", &ResponderTable::new(), o(256, 8)),
        Err(CuqrError::Empty)
    ));
    let two = table("refuse3", &[0, 1]);
    let ring = |ids: &[u32]| RingSpec {
        address: "127.0.0.1:0".into(),
        decoders: ids.to_vec(),
    };
    for (rings, want) in [
        (vec![ring(&[0])], "decoder id 1 has no ring"),
        (
            vec![ring(&[0, 1]), ring(&[1])],
            "decoder id 1 has two rings",
        ),
        (vec![ring(&[0, 1, 2])], "ring for decoder id 2"),
        (vec![ring(&[0, 1]), ring(&[])], "serves no decoder"),
        (vec![], "no ring"),
    ] {
        let e = CuqrServer::start_rings(&two, &rings, o(256, 8))
            .err()
            .unwrap();
        assert!(e.to_string().contains(want), "{e}");
    }
}

#[test]
fn two_rings_serve_two_decoders_and_announce_themselves_as_nvidias_does() {
    // Decoder 1 decodes inline, decoder 0 on a worker (the default of bposd).
    let t = table_with("rings", &[0, 1], |id| {
        if id == 1 { ";decode=inline" } else { "" }
    });
    let rings = [0u32, 1].map(|id| RingSpec {
        address: "127.0.0.1:0".into(),
        decoders: vec![id],
    });
    let s = CuqrServer::start_rings(&t, &rings, CuqrOptions::default()).unwrap();
    let (p0, p1) = (s.rings()[0].addr.port(), s.rings()[1].addr.port());
    assert_ne!(p0, p1);
    assert_eq!(
        s.ready_line(),
        format!("QEC_DECODING_SERVER_READY port={p0} transport=udp ring0={p0} ring1={p1}")
    );
    assert_eq!(
        s.ready_line_with_decode(),
        format!("{} decode0=worker decode1=inline", s.ready_line())
    );
    // A shot on each at once; each decoder only on its own ring.
    let clients = [s.rings()[0].addr, s.rings()[1].addr].map(Client::to);
    std::thread::scope(|sc| {
        for (id, c) in clients.iter().enumerate() {
            sc.spawn(move || {
                let id = id as i64;
                for round in 0..3 {
                    let bits = [(id == 1 && round == 0) as u8];
                    assert_eq!(c.call(&enqueue(1, id, 0, 2, &bits)).0, OK);
                }
                let want = vec![(id == 1) as u8];
                assert_eq!(c.call(&get_corrections(2, id, 1)), (OK, want));
                let other = 1 - id;
                assert_eq!(
                    c.call(&get_corrections(3, other, 1)).0,
                    CallStatus::InvalidDecoder as i32
                );
            });
        }
    });
    let r = s.stop().unwrap();
    assert_eq!(
        r.nvidia_lines(),
        [
            "QEC_DECODING_SERVER_RING decoder=0 dispatched=5",
            "QEC_DECODING_SERVER_RING decoder=1 dispatched=5"
        ]
    );
    assert_eq!(r.totals().render(), "ok=8 invalid_decoder=2");
    assert_eq!(r.rings[1].decoders[0].1.shots, 1);
}

#[test]
fn frames_of_every_length_from_0_to_a_slot_and_one() {
    let s = CuqrServer::start(
        "127.0.0.1:0",
        &table("lengths", &[0]),
        CuqrOptions::default(),
    )
    .unwrap();
    let c = Client::to(s.local_addr());
    // A 256-byte slot holding an enqueue of round 0 (2 bits, bit 0 set), as NVIDIA's channel
    // sends one; then its first `len` bytes, each followed by a sentinel call to tell a drop
    // from an answer.
    let mut slot = enqueue(7, 0, 0, 2, &[1]);
    slot.resize(257, 0);
    let mut answered = Vec::new();
    for len in 0..=257usize {
        c.send(&slot[..len]);
        c.send(&reset(0xFFFF_0000 + len as u32, 99));
        let mut got = None;
        loop {
            let (st, id, _, _) = c.recv_any();
            if id == 0xFFFF_0000 + len as u32 {
                assert_eq!(st, CallStatus::InvalidDecoder as i32);
                break;
            }
            assert!(got.is_none(), "one answer per frame");
            got = Some(st);
        }
        answered.push(got);
    }
    let expect = |len: usize| match len {
        // Nothing; less than a header; less than the header and its 33 bytes of arguments;
        // more than the slot: dropped.
        0..=56 | 257 => None,
        // The whole frame, then zeros after it: answered.
        _ => Some(OK),
    };
    for (len, got) in answered.iter().enumerate() {
        assert_eq!(*got, expect(len), "a frame of {len} bytes");
    }
    // Nothing truncated reached the decoder: 200 whole enqueues of round 0 (2 bits each),
    // then a reset.
    assert_eq!(c.call(&reset(2, 0)).0, OK);
    for _ in 0..3 {
        assert_eq!(c.call(&enqueue(3, 0, 0, 2, &[0])).0, OK);
    }
    assert_eq!(c.call(&get_corrections(4, 0, 2)), (OK, vec![0]));
    let r = s.stop().unwrap();
    let t = r.totals();
    assert_eq!(t.render_dropped(), "empty=1 oversize=1 short=56");
    assert_eq!(t.dropped_total(), 58);
    assert_eq!(t.frames.load(Ordering::Relaxed), 200 + 258 + 5);
}

/// NVIDIA's server drops what it cannot parse, and so does ours — but for a backline
/// controller's hello or floor ping, answered once with `bad_request` so that `backline
/// bench` or `backline sim` pointed at a CUQR server says so at once.
#[test]
fn a_backline_hello_or_floor_ping_is_told_bad_request_other_foreign_frames_are_dropped() {
    let s = CuqrServer::start(
        "127.0.0.1:0",
        &table("foreign", &[0]),
        CuqrOptions::default(),
    )
    .unwrap();
    let c = Client::to(s.local_addr());
    let hello = backline_wire::Handshake::new(
        backline_wire::HandshakeKind::Hello,
        backline_wire::Geometry::default(),
        1,
    )
    .encode();
    let mut ping = [0u8; 8];
    ping[..4].copy_from_slice(&backline_wire::FLOOR_PING_MAGIC);
    for (i, frame) in [
        &hello[..],
        &ping[..],
        b"BKLX and more bytes than a header",
        b"not a frame at all, though long enough",
    ]
    .into_iter()
    .enumerate()
    {
        c.send(frame);
        c.send(&reset(0xFFFF_0000 + i as u32, 99));
        let (st, id, ts, _) = c.recv_any();
        if i < 2 {
            assert_eq!(
                (st, id, ts),
                (CallStatus::BadRequest as i32, 0, 0),
                "frame {i}"
            );
            let (st, id, _, _) = c.recv_any();
            assert_eq!(
                (st, id),
                (CallStatus::InvalidDecoder as i32, 0xFFFF_0000 + i as u32)
            );
        } else {
            // Dropped: the next answer is the sentinel's.
            assert_eq!(
                (st, id),
                (CallStatus::InvalidDecoder as i32, 0xFFFF_0000 + i as u32)
            );
        }
    }
    let r = s.stop().unwrap();
    assert_eq!(r.totals().render_dropped(), "magic=2");
}

/// Sends `f`, then a sentinel `reset_decoder` of decoder 99 (which no ring serves): whether
/// `f` was answered, and with what status.
fn answer_or_drop(c: &Client, f: &[u8], sentinel: u32) -> Option<i32> {
    c.send(f);
    c.send(&reset(sentinel, 99));
    let mut got = None;
    loop {
        let (st, id, _, _) = c.recv_any();
        if id == sentinel {
            assert_eq!(st, CallStatus::InvalidDecoder as i32);
            return got;
        }
        assert!(got.is_none(), "one answer per frame");
        got = Some(st);
    }
}

/// NVIDIA's server drops a frame shorter than its header or than `24 + arg_len`; so does
/// ours, counted `short`: a `reset_decoder` cut one byte short resets nothing.
#[test]
fn truncated_frames_are_dropped_and_counted_never_obeyed() {
    let s = CuqrServer::start(
        "127.0.0.1:0",
        &table("truncated", &[0]),
        CuqrOptions::default(),
    )
    .unwrap();
    let c = Client::to(s.local_addr());
    // A shot (round 0 with bit 0 set, two quiet rounds) whose corrections are not yet
    // asked for.
    assert_eq!(c.call(&enqueue(1, 0, 0, 2, &[1])).0, OK);
    for _ in 0..2 {
        assert_eq!(c.call(&enqueue(1, 0, 0, 2, &[0])).0, OK);
    }
    // A reset_decoder of 23 bytes: its header is cut one byte short.
    let whole = reset(2, 0);
    assert_eq!(whole.len(), 32);
    assert_eq!(answer_or_drop(&c, &whole[..23], 0xFFFF_0001), None);
    // A whole header whose arg_len (8) exceeds the bytes present (0, then 7).
    assert_eq!(answer_or_drop(&c, &whole[..24], 0xFFFF_0002), None);
    assert_eq!(answer_or_drop(&c, &whole[..31], 0xFFFF_0003), None);
    // arg_len 232 on a 57-byte enqueue: dropped, not read as zeros up to the slot.
    let mut f = enqueue(3, 0, 0, 2, &[1]);
    f[8..12].copy_from_slice(&232u32.to_le_bytes());
    assert_eq!(answer_or_drop(&c, &f, 0xFFFF_0004), None);
    // Nothing was reset or enqueued: the shot's corrections are still there.
    assert_eq!(c.call(&get_corrections(4, 0, 1)), (OK, vec![1]));
    // The well-formed frame right after is answered.
    assert_eq!(c.call(&whole).0, OK);
    let r = s.stop().unwrap();
    let t = r.totals();
    assert_eq!(t.render_dropped(), "short=4");
    assert_eq!(t.render(), "ok=5 invalid_decoder=4");
}

#[test]
fn arguments_that_do_not_parse_are_bad_requests() {
    let s = CuqrServer::start(
        "127.0.0.1:0",
        &table("arglen", &[0]),
        CuqrOptions::default(),
    )
    .unwrap();
    let c = Client::to(s.local_addr());
    // A bit count of 0, more bits than the shot, a syndrome mapping other than 0: the shot
    // fails until a reset.
    let mut mapping = enqueue(5, 0, 0, 2, &[0]);
    mapping[40] = 1;
    for (f, answer) in [
        (enqueue(5, 0, 0, 0, &[]), CallStatus::BadRequest),
        (enqueue(5, 0, 0, 7, &[0]), CallStatus::Ok),
        (mapping, CallStatus::BadRequest),
    ] {
        assert_eq!(c.call(&reset(6, 0)).0, OK);
        assert_eq!(c.call(&f).0, answer as i32);
        assert_eq!(
            c.call(&get_corrections(7, 0, 0)).0,
            CallStatus::InternalError as i32
        );
    }
    // A get_corrections of 16 bytes: bad_request, and nothing fails.
    assert_eq!(c.call(&reset(8, 0)).0, OK);
    let mut short = get_corrections(9, 0, 0);
    short[8] = 16;
    short.pop();
    assert_eq!(c.call(&short).0, CallStatus::BadRequest as i32);
    assert_eq!(
        c.call(&get_corrections(9, 0, 0)).0,
        CallStatus::NotReady as i32
    );
    drop(s);
}

#[test]
fn a_decoder_id_no_ring_serves_is_invalid() {
    let s = CuqrServer::start(
        "127.0.0.1:0",
        &table("invalid", &[3]),
        CuqrOptions::default(),
    )
    .unwrap();
    let c = Client::to(s.local_addr());
    for id in [0, 4, -1, i64::MIN, 1 << 32 | 3] {
        for f in [
            enqueue(1, id, 0, 2, &[0]),
            get_corrections(1, id, 0),
            reset(1, id),
        ] {
            assert_eq!(c.call(&f).0, CallStatus::InvalidDecoder as i32, "{id}");
        }
    }
    // Decoder 3 was not touched.
    assert_eq!(
        c.call(&get_corrections(2, 3, 0)).0,
        CallStatus::NotReady as i32
    );
    let r = s.stop().unwrap();
    assert_eq!(r.totals().render(), "invalid_decoder=15 not_ready=1");
}

#[test]
fn two_clients_on_one_ring_share_its_shot_and_each_gets_its_own_answers() {
    let s = CuqrServer::start("127.0.0.1:0", &table("two", &[0]), CuqrOptions::default()).unwrap();
    let (a, b) = (Client::to(s.local_addr()), Client::to(s.local_addr()));
    // A's round 0 (detector 0), B's "round 0", A's "round 1": one shot of three rounds in
    // arrival order, answered to whoever asked.
    assert_eq!(a.call(&enqueue(10, 0, 0, 2, &[1])), (OK, vec![]));
    b.send(&enqueue(20, 0, 0, 2, &[0]));
    a.send(&enqueue(11, 0, 1, 2, &[0]));
    assert_eq!(b.recv().1, 20);
    assert_eq!(a.recv().1, 11);
    b.send(&get_corrections(21, 0, 0));
    a.send(&get_corrections(12, 0, 0));
    assert_eq!(b.recv(), (OK, 21, vec![1]));
    assert_eq!(a.recv(), (OK, 12, vec![1]));
    drop(s);
    // With --strict-counter the second client's round 0 in the middle of the shot is busy.
    let s = CuqrServer::start(
        "127.0.0.1:0",
        &table("two-strict", &[0]),
        CuqrOptions {
            strict_counter: true,
            ..CuqrOptions::default()
        },
    )
    .unwrap();
    let (a, b) = (Client::to(s.local_addr()), Client::to(s.local_addr()));
    assert_eq!(a.call(&enqueue(10, 0, 0, 2, &[1])).0, OK);
    assert_eq!(
        b.call(&enqueue(20, 0, 0, 2, &[0])).0,
        CallStatus::Busy as i32
    );
    assert_eq!(a.call(&enqueue(11, 0, 1, 2, &[0])).0, OK);
    assert_eq!(a.call(&enqueue(12, 0, 2, 2, &[0])).0, OK);
    assert_eq!(a.call(&get_corrections(13, 0, 1)), (OK, vec![1]));
}

#[test]
fn a_client_over_loopback_udp_with_hop_probes() {
    let server = CuqrServer::start(
        "127.0.0.1:0",
        &table("udp", &[3]),
        CuqrOptions {
            probe_frames: 16,
            ..CuqrOptions::default()
        },
    )
    .unwrap();
    let c = Client::to(server.local_addr());
    // NVIDIA's producer: reset, the rounds tagged (shot << 16) | round, get_corrections.
    assert_eq!(c.call(&reset(1, 3)).0, OK);
    for round in 0..3i64 {
        let bits = [(round == 0) as u8];
        assert_eq!(c.call(&enqueue(2, 3, 5 << 16 | round, 2, &bits)).0, OK);
    }
    assert_eq!(c.call(&get_corrections(3, 3, 0)), (OK, vec![1]));
    // Garbage is dropped, not answered: the next answer is the reset's.
    c.send(b"hello");
    assert_eq!(c.call(&reset(4, 3)).0, OK);
    let report = server.stop().unwrap();
    let t = report.totals();
    assert_eq!(t.render(), "ok=6");
    // Shorter than a header: counted short before its magic is read.
    assert_eq!(t.render_dropped(), "short=1");
    let ring = &report.rings[0];
    assert_eq!(ring.hops.rows().len(), 6);
    assert!(ring.hops.hops().contains(&Hop::WindowReady));
    assert!(ring.hops.hops().contains(&Hop::DecodeDone));
    // The counters are carried into the frames' tags.
    let counters: Vec<i64> = ring.frames.iter().map(|f| f.counter).collect();
    assert_eq!(counters, [0, 5 << 16, 5 << 16 | 1, 5 << 16 | 2, 0, 0]);
    assert!(
        ring.frames
            .iter()
            .all(|f| f.decoder_id == 3 && f.status == 0)
    );
    assert!(
        report.streams[0].contains("1 shots finished")
            && report.streams[0].contains("last counter 0x50002"),
        "{:?}",
        report.streams
    );
}

#[test]
fn garbage_and_mutated_frames_never_panic_and_answer_at_most_once() {
    let t = table("garbage", &[0, 1]);
    let streams = streams_of(&t, 256).unwrap();
    let options = worker::WorkerOptions {
        depth: 8,
        entry_bytes: 256 - 56,
        wait: WaitPolicy::default(),
        drain_wait: Duration::from_millis(200),
        strict_counter: false,
        latency_shots: 16,
        decode: None,
    };
    let decoders = streams
        .iter()
        .map(|(id, s)| worker::Decoder::start(*id, s, options).unwrap())
        .collect();
    let mut ring = ring::Ring::new(decoders, 256);
    let valid = [
        enqueue(1, 0, 0, 2, &[1]),
        get_corrections(1, 1, 1),
        reset(1, 0),
    ];
    // xorshift64: byte flips, truncations and extensions of valid frames, and noise.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = [0u8; 256];
    let never = || false;
    let start = Instant::now();
    for i in 0..20_000 {
        let mut f = valid[i % valid.len()].clone();
        match next() % 4 {
            0 => {
                let k = next() as usize % f.len();
                f[k] ^= 1 << (next() % 8);
            }
            1 => f.truncate(next() as usize % f.len()),
            2 => f.extend((0..next() % 300).map(|_| next() as u8)),
            _ => f = (0..next() % 80).map(|_| next() as u8).collect(),
        }
        if f.len() > 256 {
            continue;
        }
        let mut slot = [0u8; 256];
        slot[..f.len()].copy_from_slice(&f);
        let mut tag = FrameTag::default();
        match ring.answer(
            &slot,
            f.len(),
            std::time::Instant::now(),
            &mut out,
            &mut tag,
            &never,
        ) {
            ring::Handled::Dropped(_) => {}
            ring::Handled::Answered(status) => {
                let (h, r) = parse_response(&out).expect("a response frame");
                assert_eq!(h.status, status as i32);
                assert!(r.len() <= 1);
            }
        }
    }
    assert!(start.elapsed() < Duration::from_secs(60));
}

/// One shot of NVIDIA's producer on `c` for decoder 0 (reset, three rounds of two bits, the
/// first firing detector 0 when `flip`, get_corrections): the corrections and the time from
/// sending the last enqueue to the corrections' arrival. A get_corrections before the last
/// round is `not_ready`.
fn timed_shot(c: &Client, flip: bool) -> (Vec<u8>, Duration) {
    assert_eq!(c.call(&reset(9, 0)).0, OK);
    assert_eq!(c.call(&enqueue(0, 0, 0, 2, &[flip as u8])).0, OK);
    assert_eq!(c.call(&enqueue(0, 0, 0, 2, &[0])).0, OK);
    assert_eq!(
        c.call(&get_corrections(10, 0, 0)).0,
        CallStatus::NotReady as i32
    );
    let t0 = Instant::now();
    assert_eq!(c.call(&enqueue(0, 0, 0, 2, &[0])).0, OK);
    let (s, r) = c.call(&get_corrections(11, 0, 0));
    let t = t0.elapsed();
    assert_eq!(s, OK);
    (r, t)
}

#[test]
fn inline_and_worker_decoders_answer_alike_and_time_every_shot_they_finish() {
    for mode in ["inline", "worker"] {
        let more = if mode == "inline" {
            ";decode=inline"
        } else {
            ";decode=worker"
        };
        let t = table_with(&format!("figure-{mode}"), &[0], |_| more);
        let s = CuqrServer::start("127.0.0.1:0", &t, CuqrOptions::default()).unwrap();
        let line = s.ready_line_with_decode();
        assert!(line.ends_with(&format!(" decode0={mode}")), "{line}");
        let c = Client::to(s.local_addr());
        let mut client = Vec::new();
        for k in 0..40 {
            let flip = k % 3 == 0;
            let (r, t) = timed_shot(&c, flip);
            assert_eq!(r, vec![flip as u8], "{mode}, shot {k}");
            client.push(t);
            if k % 10 == 5 {
                // A shot whose last round never comes: the next reset recovers, and it
                // counts no figure.
                assert_eq!(c.call(&reset(9, 0)).0, OK);
                assert_eq!(c.call(&enqueue(0, 0, 0, 4, &[0])).0, OK);
            }
        }
        let r = s.stop().unwrap();
        let (id, l) = &r.rings[0].latencies[0];
        assert_eq!(*id, 0);
        // One figure per shot finished, each within the client's own interval of that shot.
        assert_eq!(l.count(), 40, "{mode}");
        assert_eq!(r.rings[0].decoders[0].1.shots, 40, "{mode}");
        for (k, (&server, client)) in l.samples().iter().zip(&client).enumerate() {
            assert!(server > 0, "{mode}, shot {k}");
            assert!(
                u128::from(server) <= client.as_nanos(),
                "{mode}, shot {k}: server {server} ns > client {client:?}"
            );
        }
        let sum = l.summary().unwrap();
        assert_eq!(sum.shots, 40);
        assert!(sum.median_ns <= sum.p99_ns && sum.p99_ns <= sum.p999_ns);
        assert!(sum.p999_ns <= sum.max_ns && sum.mean_ns <= sum.max_ns as f64);
        let line = &r.streams[0];
        assert!(
            line.contains(&format!("decode {mode}"))
                && line.contains("last syndrome → corrections ready: median")
                && line.contains("(40 shots)"),
            "{line}"
        );
    }
}

#[test]
fn calls_that_arrive_while_an_inline_decode_runs_are_counted_as_a_backlog() {
    let t = table_with("backlog", &[0], |_| ";decode=inline");
    let s = CuqrServer::start("127.0.0.1:0", &t, CuqrOptions::default()).unwrap();
    let c = Client::to(s.local_addr());
    // A client that does not wait for its answers: 100 whole shots sent back to back, each
    // decoded inline by the ring while the next ones queue in its socket.
    let shots = 100;
    for _ in 0..shots {
        c.send(&enqueue(0, 0, 0, 6, &[1]));
    }
    for _ in 0..shots {
        assert_eq!(c.recv().0, OK);
    }
    let r = s.stop().unwrap();
    let waited = r.totals().waited.load(Ordering::Relaxed);
    assert!((1..shots).contains(&waited), "{waited}");
    assert_eq!(r.rings[0].latencies[0].1.count(), shots);
}
