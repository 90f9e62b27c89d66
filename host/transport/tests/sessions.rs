//! Sessions over every transport: replies, life-cycle order, back-pressure and bad input.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use backline_responder::{Echo, Responder, ResponderError, ResponderTable, Steane};
use backline_transport::{
    Controller, ControllerSession, Coprocessor, CoprocessorSession, Error, Registry, Role,
    ServeOptions, Session, SessionConfig, State, TransportKind, WaitPolicy,
};
use backline_wire::{Geometry, RejectReason, Status};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A unique name per test (tests run in parallel threads, and shm names are machine-wide).
fn unique(tag: &str) -> String {
    format!(
        "t{}-{tag}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn table() -> ResponderTable {
    let mut t = ResponderTable::new();
    t.insert(0, Arc::new(Echo));
    t.insert(1, Arc::new(Steane));
    t.insert(9, Arc::new(Panics));
    t
}

struct Panics;
impl Responder for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn respond(&self, input: &[u8], _: &mut [u8]) -> Result<usize, ResponderError> {
        if input.first() == Some(&0xEE) {
            panic!("responder bug on purpose");
        }
        Err(ResponderError::Failed("refuses everything else"))
    }
}

/// A server on `transport` and the peer string a controller uses to reach it.
fn server(transport: TransportKind, config: &SessionConfig) -> (CoprocessorSession, String) {
    let name = unique(transport.name());
    let addr = match transport {
        TransportKind::Udp => "127.0.0.1:0".to_string(),
        _ => name.clone(),
    };
    let s = CoprocessorSession::open(
        &name,
        config.clone(),
        &addr,
        0,
        &table(),
        ServeOptions::default(),
    )
    .unwrap();
    let peer = match transport {
        TransportKind::Udp => s.address().unwrap().trim_start_matches("udp:").to_string(),
        _ => name,
    };
    (s, peer)
}

const TRANSPORTS: [TransportKind; 3] = [
    TransportKind::Memcpy,
    TransportKind::Shm,
    TransportKind::Udp,
];

#[test]
fn every_responder_over_every_transport() {
    for t in TRANSPORTS {
        for spin in [200, 0, -1] {
            let mut cfg = SessionConfig::new(t);
            cfg.wait = WaitPolicy::from_micros(spin).unwrap();
            let (_srv, peer) = server(t, &cfg);
            let mut c = ControllerSession::open(&unique("c"), cfg, &peer, 0).unwrap();
            for round in 0..300u64 {
                let payload = round.to_le_bytes();
                // echo
                c.stage_payload(&payload, 0).unwrap();
                c.post().unwrap();
                let r = c.collect().unwrap();
                assert_eq!(
                    (r.status, r.decoder_id, r.payload),
                    (Status::Ok, 0, &payload[..])
                );
                // steane: syndrome in byte 0
                let s = (round % 8) as u8;
                c.stage_payload(&[s, 0, 0, 0, 0, 0, 0, 0], 1).unwrap();
                c.post().unwrap();
                let r = c.collect().unwrap();
                assert_eq!(r.status, Status::Ok, "{t} steane");
                assert_eq!(r.decoder_id, 1);
                assert_eq!(r.payload, &[backline_decode::steane::decode(s)]);
            }
            assert_eq!(c.collected(), 600);
        }
    }
}

#[test]
fn failures_become_statuses_and_the_server_lives_on() {
    for t in TRANSPORTS {
        let cfg = SessionConfig::new(t);
        let (srv, peer) = server(t, &cfg);
        let mut c = ControllerSession::open(&unique("c"), cfg, &peer, 0).unwrap();
        let mut round = |id: u32, p: &[u8]| {
            c.stage_payload(p, id).unwrap();
            c.post().unwrap();
            let r = c.collect().unwrap();
            assert_eq!(r.decoder_id, id, "decoder_id is echoed");
            (r.status, r.payload.to_vec())
        };
        assert_eq!(round(5, b"x"), (Status::UnknownDecoder, vec![]));
        assert_eq!(round(1, b""), (Status::BadLength, vec![]));
        assert_eq!(round(9, &[0xEE]), (Status::DecoderFailed, vec![]));
        assert_eq!(round(9, &[1]), (Status::DecoderFailed, vec![]));
        assert_eq!(round(0, b"alive"), (Status::Ok, b"alive".to_vec()));
        let (_, rounds, failed) = srv.stats().snapshot();
        assert_eq!((rounds, failed), (5, 4), "{t}");
    }
}

#[test]
fn several_rounds_in_flight_with_backpressure() {
    for t in TRANSPORTS {
        let mut cfg = SessionConfig::new(t);
        cfg.geometry = Geometry {
            depth: 8,
            slot_bytes: 128,
        };
        cfg.in_flight = 4;
        let (_srv, peer) = server(t, &cfg);
        let mut c = ControllerSession::open(&unique("c"), cfg, &peer, 0).unwrap();
        let mut sent = 0u64;
        let mut got = 0u64;
        while got < 1000 {
            while c.outstanding() < 4 && sent < 1000 {
                c.stage_payload(&sent.to_le_bytes(), 0).unwrap();
                assert_eq!(c.post().unwrap(), sent);
                sent += 1;
            }
            if sent < 1000 {
                match c.stage_payload(b"one too many", 0) {
                    Err(Error::Backpressure(4)) => {}
                    other => panic!("{t}: expected back-pressure, got {other:?}"),
                }
            }
            let r = c.collect().unwrap();
            assert_eq!(r.round, got);
            assert_eq!(r.payload, got.to_le_bytes(), "{t}: replies in order");
            got += 1;
        }
        assert!(matches!(c.collect(), Err(Error::NothingInFlight)));
    }
}

#[test]
fn out_of_order_calls_are_errors() {
    let cfg = SessionConfig::new(TransportKind::Memcpy);
    let mut c = ControllerSession::create("ooo", cfg.clone()).unwrap();
    assert_eq!(c.state(), State::Created);
    let e = c.post().unwrap_err();
    assert!(matches!(e, Error::OutOfOrder { call: "post", .. }), "{e}");
    assert!(matches!(
        c.exchange_keys(),
        Err(Error::OutOfOrder {
            call: "exchange_keys",
            state: State::Created,
            ..
        })
    ));
    assert!(matches!(
        c.set_message_sizes(8, 8),
        Err(Error::OutOfOrder { .. })
    ));
    assert!(matches!(c.start(), Err(Error::OutOfOrder { .. })));
    // The message names the call and both states.
    assert_eq!(
        c.start().unwrap_err().to_string(),
        "`start` called in state created; it needs state configured"
    );
    let mut s = CoprocessorSession::create("ooo-s", cfg).unwrap();
    assert!(matches!(
        s.set_coprocessor_fn(0, Arc::new(Echo)),
        Err(Error::OutOfOrder {
            call: "set_coprocessor_fn",
            ..
        })
    ));
    s.connect("", 0).unwrap();
    assert!(matches!(
        s.connect("", 0),
        Err(Error::OutOfOrder {
            call: "connect",
            ..
        })
    ));
    // stop is always allowed and idempotent.
    s.stop().unwrap();
    s.stop().unwrap();
    c.stop().unwrap();
    assert!(matches!(
        c.stage_payload(b"x", 0),
        Err(Error::OutOfOrder { .. })
    ));
}

#[test]
fn message_sizes_must_fit_the_slot() {
    let cfg = SessionConfig::new(TransportKind::Memcpy);
    let (_srv, peer) = server(TransportKind::Memcpy, &cfg);
    let mut c = ControllerSession::create(&unique("c"), cfg).unwrap();
    c.connect(&peer, 0).unwrap();
    c.exchange_keys().unwrap();
    c.establish_channel().unwrap();
    assert!(matches!(
        c.set_message_sizes(49, 8),
        Err(Error::MessageTooLarge {
            size: 49,
            capacity: 48
        })
    ));
    c.set_message_sizes(8, 8).unwrap();
    c.start().unwrap();
    assert!(matches!(
        c.stage_payload(&[0; 9], 0),
        Err(Error::MessageTooLarge {
            size: 9,
            capacity: 8
        })
    ));
    // Nothing was lost: the session still works.
    c.stage_payload(&[1; 8], 0).unwrap();
    c.post().unwrap();
    assert_eq!(c.collect().unwrap().payload, &[1; 8]);
}

#[test]
fn geometry_mismatch_is_an_error_at_setup() {
    for t in TRANSPORTS {
        let cfg = SessionConfig::new(t);
        let (_srv, peer) = server(t, &cfg);
        let mut other = cfg.clone();
        other.geometry.depth = 64;
        let t0 = Instant::now();
        let e = ControllerSession::open(&unique("c"), other, &peer, 0).unwrap_err();
        assert!(matches!(e, Error::GeometryMismatch { .. }), "{t}: {e}");
        assert!(e.to_string().contains("this side wants 64 slots"), "{e}");
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "{t}: mismatch must not stall"
        );
    }
}

#[test]
fn nobody_listening_is_a_clear_error() {
    let cfg = SessionConfig::new(TransportKind::Shm);
    let e = ControllerSession::open("c", cfg, &unique("nobody"), 0).unwrap_err();
    assert!(matches!(e, Error::NoPeer(_)), "{e}");
    assert!(
        e.to_string().contains("backline serve --transport shm"),
        "{e}"
    );

    let cfg = SessionConfig::new(TransportKind::Memcpy);
    let e = ControllerSession::open("c", cfg, &unique("nobody"), 0).unwrap_err();
    assert!(matches!(e, Error::NoPeer(_)), "{e}");

    // A udp port nobody binds: take one, then release it.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = SessionConfig::new(TransportKind::Udp);
    cfg.setup_timeout = Duration::from_millis(500);
    let t0 = Instant::now();
    let e = ControllerSession::open("c", cfg, &format!("127.0.0.1:{port}"), 0).unwrap_err();
    assert!(matches!(e, Error::NoPeer(_) | Error::Timeout { .. }), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_second_server_on_the_same_name_or_port_is_refused() {
    for t in TRANSPORTS {
        let cfg = SessionConfig::new(t);
        let (srv, _peer) = server(t, &cfg);
        let addr = match t {
            TransportKind::Udp => srv
                .address()
                .unwrap()
                .trim_start_matches("udp:")
                .to_string(),
            _ => srv.key().to_string(),
        };
        let e = CoprocessorSession::open(
            "second",
            cfg.clone(),
            &addr,
            0,
            &table(),
            ServeOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(e, Error::InUse(_)), "{t}: {e}");
    }
}

#[test]
fn a_second_controller_is_refused_while_one_is_attached() {
    for t in TRANSPORTS {
        let cfg = SessionConfig::new(t);
        let (_srv, peer) = server(t, &cfg);
        let mut first = ControllerSession::open(&unique("c"), cfg.clone(), &peer, 0).unwrap();
        first.stage_payload(b"1", 0).unwrap();
        first.post().unwrap();
        first.collect().unwrap();
        let e = ControllerSession::open(&unique("c"), cfg.clone(), &peer, 0).unwrap_err();
        assert!(matches!(e, Error::Rejected(RejectReason::Busy)), "{t}: {e}");
        // After the first one stops, the next is served from round 0.
        first.stop().unwrap();
        let mut next = ControllerSession::open(&unique("c"), cfg, &peer, 0).unwrap();
        for i in 0..10u8 {
            next.stage_payload(&[i], 0).unwrap();
            next.post().unwrap();
            assert_eq!(next.collect().unwrap().payload, &[i], "{t}");
        }
    }
}

#[test]
fn a_server_that_goes_away_times_out_within_the_bound() {
    for t in TRANSPORTS {
        let mut cfg = SessionConfig::new(t);
        cfg.reply_timeout = Duration::from_millis(200);
        let (mut srv, peer) = server(t, &cfg);
        let mut c = ControllerSession::open(&unique("c"), cfg, &peer, 0).unwrap();
        c.stage_payload(b"a", 0).unwrap();
        c.post().unwrap();
        c.collect().unwrap();
        srv.stop().unwrap();
        let t0 = Instant::now();
        let posted = c.stage_payload(b"b", 0).and_then(|_| c.post());
        if posted.is_ok() {
            let e = c.collect().unwrap_err();
            assert!(
                matches!(e, Error::Timeout { .. } | Error::PeerGone(_)),
                "{t}: {e}"
            );
        }
        assert!(t0.elapsed() < Duration::from_secs(2), "{t}: bounded");
        // The session is now poisoned, with a clear reason.
        let e = c.stage_payload(b"c", 0).unwrap_err();
        assert!(
            matches!(e, Error::Failed(_) | Error::PeerGone(_)),
            "{t}: {e}"
        );
        assert_eq!(c.collected(), 1, "one round completed");
    }
}

#[test]
fn registry_is_keyed_by_role_and_key() {
    let r = Registry::default();
    let cfg = SessionConfig::new(TransportKind::Memcpy);
    r.create(Role::Controller, "k", cfg.clone()).unwrap();
    r.create(Role::Coprocessor, "k", cfg.clone()).unwrap();
    let e = r.create(Role::Controller, "k", cfg).unwrap_err();
    assert!(matches!(e, Error::DuplicateKey { .. }));
    assert_eq!(
        r.get_session(Role::Controller, "k").unwrap().role(),
        Role::Controller
    );
    assert!(r.get_session(Role::Controller, "other").is_none());
    assert_eq!(r.keys(Role::Coprocessor), vec!["k".to_string()]);
    // Thread-safe: look up concurrently.
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..1000 {
                    assert!(r.get_session(Role::Coprocessor, "k").is_some());
                }
            });
        }
    });
    r.remove(Role::Controller, "k").unwrap();
    assert!(r.get_session(Role::Controller, "k").is_none());
}

#[test]
fn floors_run_against_the_same_servers() {
    let n = 2000;
    let r = backline_transport::floor::memcpy_floor(n, None, Duration::from_secs(5)).unwrap();
    assert_eq!(r.len() as u64, n);
    let cfg = SessionConfig::new(TransportKind::Shm);
    let (_srv, peer) = server(TransportKind::Shm, &cfg);
    let r =
        backline_transport::shm::shm_floor(&peer, cfg.geometry, n, Duration::from_secs(5)).unwrap();
    assert_eq!(r.len() as u64, n);
    // The server is still usable afterwards.
    let mut c = ControllerSession::open(&unique("c"), cfg, &peer, 0).unwrap();
    c.stage_payload(b"after", 0).unwrap();
    c.post().unwrap();
    assert_eq!(c.collect().unwrap().payload, b"after");
    let cfg = SessionConfig::new(TransportKind::Udp);
    let (_srv, peer) = server(TransportKind::Udp, &cfg);
    let r =
        backline_transport::udp::udp_floor(&peer, n, &cfg.wait, Duration::from_secs(5)).unwrap();
    assert_eq!(r.len() as u64, n);
}
