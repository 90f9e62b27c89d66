//! Every bad input of the issue, refused with a clear error before any register is written:
//! a span not of the form 2^N−1, QP 1, a misaligned base address, an unknown ERNIC version,
//! a config with a missing or out-of-range field, and a peer handshake with a wrong version,
//! garbage bytes, or silence.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use backline_apu::mmio::fake::FakeMmio;
use backline_apu::{Board, Config, Error, Mode, RunSpec, ernic};
use backline_pacer::PacerConfig;
use backline_wire::{Geometry, HANDSHAKE_BYTES, Handshake, HandshakeKind};

use super::util::{example, example_path};

/// A config edit and the error it must give.
type Case<'a> = (&'a dyn Fn(&mut Config), &'a str);

fn board() -> Board<FakeMmio> {
    Board::open(FakeMmio::default()).unwrap()
}

fn no_writes(b: &mut Board<FakeMmio>) {
    let w = b.mmio().writes();
    assert!(
        w.is_empty(),
        "registers were written: {:?}",
        &w[..w.len().min(5)]
    );
}

#[test]
fn a_span_not_of_the_form_2n_minus_1_is_refused_naming_pacer_span() {
    let mut b = board();
    let mut spec = RunSpec::b2b(Mode::HwLoop, 1000);
    spec.pacer = PacerConfig {
        freq: 1_000_000,
        span: 0x0FFF_FFFE,
        seed: 1,
    };
    let e = b.run(&spec, &mut |_, _| {}).unwrap_err();
    assert!(matches!(e, Error::BadValue { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "PACER_SPAN = 0x0ffffffe: span 0xffffffe is not of the form 2^N-1 (e.g. 0x0, 0xff, 0x0fffffff)"
    );
    no_writes(&mut b);
}

fn config_with(edit: impl FnOnce(&mut Config)) -> Config {
    let mut c = example();
    edit(&mut c);
    c
}

#[test]
fn qp_1_is_refused_in_the_file_and_in_a_program() {
    let text = std::fs::read_to_string(example_path())
        .unwrap()
        .replace("number = 2", "number = 1");
    let e = Config::from_toml(&text, "board.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("board.toml: config qp.number = 1: QP 1 is the management QP (GSI)"),
        "{e}"
    );
    let mut b = board();
    let e = b
        .setup(&config_with(|c| c.qp.number = 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("config qp.number = 1: QP 1 is the management QP"),
        "{e}"
    );
    no_writes(&mut b);
}

#[test]
fn misaligned_base_addresses_are_refused_naming_the_field() {
    let cases: [Case<'_>; 5] = [
        (
            &|c| c.qp.sq_base += 8,
            "config qp.sq_base = 0xa4020008: must be 32-byte aligned",
        ),
        (
            &|c| c.qp.rq_base += 4,
            "config qp.rq_base = 0x70030004: must be 256-byte aligned",
        ),
        (
            &|c| c.qp.cq_doorbell += 1,
            "config qp.cq_doorbell = 0xa403f001: must be 4-byte aligned",
        ),
        (
            &|c| c.memory_region.phys += 0x40,
            "config memory_region.phys = 0xa4010040: must be 4096-byte aligned",
        ),
        (
            &|c| c.ernic.error_buffer_base += 0x20,
            "config ernic.error_buffer_base = 0x70000020: must be 64-byte aligned",
        ),
    ];
    for (edit, want) in cases {
        let mut b = board();
        let e = b.setup(&config_with(edit)).unwrap_err().to_string();
        assert_eq!(e, want);
        no_writes(&mut b);
    }
}

#[test]
fn a_foreign_register_space_is_refused_before_anything_is_written() {
    use backline_apu::ernic::{Layout, V3_PROBES, VERSION_OFFSET};
    use backline_board::PlainErnic;
    use backline_regmap as rm;
    // No version register answers, and a reserved word of the v3.x space is not zero
    // (another IP, a wrong base, a v4.x in too small a window): refused, nothing written.
    for (k, off) in V3_PROBES.iter().enumerate() {
        let mut regs = PlainErnic::new(Layout::V3);
        regs.set(*off, 0x0004_0000);
        let mut fake = FakeMmio::new(regs);
        let e = Board::open(&mut fake).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "ERNIC {off:#x} (reserved) reads 0x00040000: reserved offset {off:#x} of the \
                 ERNIC v3.x register space reads 0x00040000"
            )),
            "{e}"
        );
        assert!(e.contains("no offset of it can be trusted"), "{e}");
        assert!(fake.writes().is_empty());
        // The probes were all that was read (the version read found no register).
        assert_eq!(fake.log().len(), V3_PROBES.len(), "probe {k}");
    }
    // A version register that names neither layout: refused with the value read.
    for word in [0x0003_0100, 0x0005_0000, 0xFFFF_FFFF] {
        let mut regs = PlainErnic::new(Layout::V4);
        regs.set(VERSION_OFFSET, word);
        let mut fake = FakeMmio::new(regs);
        let e = Board::open(&mut fake).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "ERNIC XRNIC_VERSION (0x10001c) reads {word:#010x}: the XRNIC version register"
            )),
            "{e}"
        );
        assert!(e.contains("names neither layout"), "{e}");
        assert!(fake.writes().is_empty());
        assert_eq!(fake.log().len(), 1, "only the version was read");
    }
    // An HWHS of another register map.
    let mut fake = FakeMmio::default();
    fake.set_hwhs(rm::VERSION, 0x424C_0001);
    let e = Board::open(&mut fake).unwrap_err().to_string();
    assert!(
        e.starts_with("HWHS VERSION reads 0x424c0001: expected 0x424c0003"),
        "{e}"
    );
    assert!(fake.writes().is_empty());
}

#[test]
fn missing_and_out_of_range_fields_are_refused_naming_the_field() {
    let text = std::fs::read_to_string(example_path()).unwrap();
    let missing = text.replace("ring_depth = 64", "");
    let e = Config::from_toml(&missing, "b.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing field `ring_depth`"), "{e}");
    let typo = text.replace("timeout_us = 1000", "timeout_usec = 1000");
    let e = Config::from_toml(&typo, "b.toml").unwrap_err().to_string();
    assert!(e.contains("unknown field `timeout_usec`"), "{e}");
    let cases: [Case<'_>; 4] = [
        (
            &|c| c.qp.retry_count = 8,
            "config qp.retry_count = 8: must be 0 ..= 7",
        ),
        (
            &|c| c.hwhs.payload_bytes = 20,
            "config hwhs.payload_bytes = 20: the HWHS takes 1 ..= 16 bytes",
        ),
        (
            &|c| c.ernic.qps = 1,
            "config ernic.qps = 1: must be 2 ..= 255",
        ),
        (
            &|c| c.qp.sq_depth = 0,
            "config qp.sq_depth = 0: must be a power of two 1 ..= 32768",
        ),
    ];
    for (edit, want) in cases {
        let mut b = board();
        assert_eq!(b.setup(&config_with(edit)).unwrap_err().to_string(), want);
        no_writes(&mut b);
    }
}

/// The standard CRC-32 (IEEE), to forge well-formed records of another version.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// A peer that answers every connection with `answer` (after reading the hello), or stays
/// silent when `answer` is `None`.
fn fake_peer(answer: Option<Vec<u8>>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut hello = [0u8; HANDSHAKE_BYTES];
            let _ = s.read_exact(&mut hello);
            match answer {
                Some(a) => {
                    let _ = s.write_all(&a);
                }
                None => std::thread::sleep(Duration::from_secs(2)),
            }
        }
    });
    addr
}

fn accept_record(cfg: &Config) -> Handshake {
    let mut h = Handshake::new(
        HandshakeKind::Accept,
        Geometry {
            depth: cfg.hwhs.ring_depth,
            slot_bytes: 64,
        },
        1,
    );
    h.qpn = 0x11;
    h.psn = 0x2000;
    h.gid = std::net::Ipv4Addr::new(10, 0, 0, 1)
        .to_ipv6_mapped()
        .octets();
    h.mac = [2, 0, 0, 0, 0, 1];
    h.rkey = 0x1234;
    h.ring_addr = 0x7F00_0000_0000;
    h
}

fn setup_against(answer: Option<Vec<u8>>) -> (String, Board<FakeMmio>, Duration) {
    let mut cfg = example();
    cfg.peer.address = fake_peer(answer);
    cfg.peer.timeout_ms = 300;
    let mut b = board();
    let t0 = Instant::now();
    let e = b.setup(&cfg).unwrap_err();
    assert!(matches!(e, Error::Peer(_)), "{e:?}");
    (e.to_string(), b, t0.elapsed())
}

#[test]
fn a_peer_answer_of_another_wire_version_is_refused() {
    let cfg = example();
    let mut rec = accept_record(&cfg).encode();
    rec[4] = 2;
    let crc = crc32(&rec[..64]);
    rec[64..].copy_from_slice(&crc.to_le_bytes());
    let (e, mut b, _) = setup_against(Some(rec.to_vec()));
    assert!(
        e.contains("handshake version 2, this build speaks version 1"),
        "{e}"
    );
    no_writes(&mut b);
}

#[test]
fn a_peer_answering_garbage_is_refused() {
    let (e, mut b, _) = setup_against(Some(vec![0x42; HANDSHAKE_BYTES]));
    assert!(e.contains("not a backline handshake (bad magic)"), "{e}");
    no_writes(&mut b);
    // A corrupted record: right magic, one bit flipped.
    let mut rec = accept_record(&example()).encode();
    rec[21] ^= 0x10;
    let (e, mut b, _) = setup_against(Some(rec.to_vec()));
    assert!(e.contains("checksum mismatch"), "{e}");
    no_writes(&mut b);
    // Half a record, then the connection closes.
    let (e, mut b, _) = setup_against(Some(vec![b'B', b'K', b'L', b'H', 1]));
    assert!(e.contains("closed the connection after 5 of 68"), "{e}");
    no_writes(&mut b);
}

#[test]
fn a_silent_peer_times_out_and_nothing_is_written() {
    let (e, mut b, took) = setup_against(None);
    assert!(e.contains("the peer sent no handshake within 300ms"), "{e}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    no_writes(&mut b);
}

#[test]
fn a_peer_that_refuses_or_answers_nonsense_is_named() {
    let cfg = example();
    let r = Handshake::reject(
        backline_wire::RejectReason::Geometry,
        Geometry {
            depth: 256,
            slot_bytes: 64,
        },
    );
    let (e, mut b, _) = setup_against(Some(r.encode().to_vec()));
    assert!(e.contains("refused the hello: ring geometry mismatch (the peer's rings: 256 slots of 64 bytes; the board's: 64 slots of 64 bytes)"), "{e}");
    no_writes(&mut b);
    let mut a = accept_record(&cfg);
    a.qpn = 1;
    let (e, mut b, _) = setup_against(Some(a.encode().to_vec()));
    assert!(
        e.contains("answered qpn = 1: a data QP number is 2 ..= 2^24-1"),
        "{e}"
    );
    no_writes(&mut b);
    // Nothing listening at all.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = example();
    cfg.peer.address = format!("127.0.0.1:{port}");
    let mut b = board();
    let e = b.setup(&cfg).unwrap_err().to_string();
    assert!(
        e.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{e}"
    );
    no_writes(&mut b);
}

#[test]
fn a_good_answer_brings_the_fake_board_up_in_order() {
    // The counterpart of the refusals above: the same path with a valid answer writes.
    let cfg = example();
    let (mut cfg2, rec) = (cfg.clone(), accept_record(&cfg).encode());
    cfg2.peer.address = fake_peer(Some(rec.to_vec()));
    let mut b = board();
    let rep = b.setup(&cfg2).unwrap();
    assert_eq!(rep.peer.qpn, 0x11);
    let w = b.mmio().writes();
    assert_eq!(
        w.len(),
        backline_apu::bringup::documented_order(b.layout()).len()
    );
    let qpconf = b.layout().qp_offset(2, ernic::qp::QPCONF);
    assert_eq!(
        ernic::qp::QPCONF_ENABLE
            .get(backline_apu::Mmio::read32(b.mmio(), backline_apu::Block::Ernic, qpconf).unwrap()),
        1
    );
}
