//! Admission by a pre-shared key over udp: admitted controllers run, every other hello gets
//! no answer and no session, and a flood of them leaves an admitted controller's rounds and
//! the server's memory as they were.

use std::net::UdpSocket;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backline_responder::{Echo, ResponderTable};
use backline_transport::{
    AdmissionKey, Controller, ControllerSession, CoprocessorSession, Error, ServeOptions,
    SessionConfig, TransportKind,
};
use backline_wire::{Geometry, Handshake, HandshakeKind};

static NEXT: AtomicU32 = AtomicU32::new(0);

fn unique(tag: &str) -> String {
    format!(
        "adm{}-{tag}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fresh token file (removed with its directory by the caller's `Drop` of [`Dir`]).
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        let d = std::env::temp_dir().join(unique("keys"));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn key(&self, name: &str) -> AdmissionKey {
        let p = self.0.join(name);
        AdmissionKey::create_file(&p).unwrap();
        AdmissionKey::from_file(&p).unwrap()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config(key: Option<AdmissionKey>) -> SessionConfig {
    let mut c = SessionConfig::new(TransportKind::Udp);
    c.setup_timeout = Duration::from_millis(400);
    c.key = key;
    c
}

fn server(key: Option<AdmissionKey>) -> (CoprocessorSession, String) {
    let table = ResponderTable::single(Arc::new(Echo));
    let s = CoprocessorSession::open(
        &unique("srv"),
        config(key),
        "127.0.0.1:0",
        0,
        &table,
        ServeOptions::default(),
    )
    .unwrap();
    let peer = s.address().unwrap().trim_start_matches("udp:").to_string();
    (s, peer)
}

fn round_trips(c: &mut ControllerSession, n: u32) {
    for i in 0..n {
        let p = i.to_le_bytes();
        c.stage_payload(&p, 0).unwrap();
        c.post().unwrap();
        assert_eq!(c.collect().unwrap().payload, p);
    }
}

#[test]
fn a_controller_with_the_key_is_served_and_others_are_not_admitted() {
    let dir = Dir::new();
    let key = dir.key("lab");
    let (srv, peer) = server(Some(key.clone()));
    let mut ok = ControllerSession::open(&unique("ok"), config(Some(key)), &peer, 0).unwrap();
    round_trips(&mut ok, 100);

    // No key, and another key: "not admitted" within the set-up timeout, saying which.
    for (k, keyed) in [(None, false), (Some(dir.key("other")), true)] {
        let t0 = std::time::Instant::now();
        match ControllerSession::open(&unique("no"), config(k), &peer, 0) {
            Err(Error::NotAdmitted { keyed: k, .. }) => assert_eq!(k, keyed),
            other => panic!("{:?}", other.err()),
        }
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    }
    let stats = srv.stats();
    assert_eq!(
        stats.sessions.load(Ordering::Relaxed),
        1,
        "only the admitted one"
    );
    assert!(stats.unadmitted.load(Ordering::Relaxed) >= 2);
    // The admitted session went on meanwhile.
    round_trips(&mut ok, 10);
}

#[test]
fn a_keyed_controller_is_served_by_an_open_server_and_measures_a_keyed_floor() {
    let dir = Dir::new();
    let key = dir.key("lab");
    let (_open, peer) = server(None);
    let mut c = ControllerSession::open(&unique("c"), config(Some(key.clone())), &peer, 0).unwrap();
    round_trips(&mut c, 10);
    // A keyed server echoes floor pings only while the pinging address holds a session; the
    // floor opens one itself.
    let (_keyed, peer) = server(Some(key.clone()));
    let cfg = config(Some(key));
    let r = backline_transport::udp::udp_floor(&peer, 200, &cfg, Duration::from_secs(2)).unwrap();
    assert_eq!(r.len(), 200);
    let e = backline_transport::udp::udp_floor(&peer, 1, &config(None), Duration::from_millis(300))
        .unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
}

#[test]
fn a_flood_of_unkeyed_datagrams_gets_no_answer_and_no_session() {
    let dir = Dir::new();
    let key = dir.key("lab");
    let (srv, peer) = server(Some(key.clone()));
    let mut ok =
        ControllerSession::open(&unique("ok"), config(Some(key.clone())), &peer, 0).unwrap();
    let flood = UdpSocket::bind("127.0.0.1:0").unwrap();
    flood.connect(&peer).unwrap();
    flood.set_nonblocking(true).unwrap();
    let hello = Handshake::new(HandshakeKind::Hello, Geometry::default(), 1).encode();
    // A proof under another key, and a valid proof replayed from another address.
    let (h, p) = dir
        .key("other")
        .prove(Handshake::new(HandshakeKind::Hello, Geometry::default(), 1))
        .unwrap();
    let forged = [h.as_slice(), p.as_slice()].concat();
    let (h, p) = key
        .prove(Handshake::new(HandshakeKind::Hello, Geometry::default(), 1))
        .unwrap();
    let stolen = [h.as_slice(), p.as_slice()].concat();
    let legit = UdpSocket::bind("127.0.0.1:0").unwrap();
    legit.send_to(&stolen, &peer).unwrap();
    let mut sent = 0u64;
    let mut buf = [0u8; 256];
    for i in 0..5000u32 {
        let d: &[u8] = match i % 5 {
            0 => &hello,
            1 => &forged,
            2 => &stolen,
            3 => b"BKFP\0\0\0\0",
            _ => b"garbage",
        };
        while flood.send(d).is_err() {
            std::thread::yield_now();
        }
        sent += 1;
        if i % 500 == 0 {
            round_trips(&mut ok, 5);
        }
    }
    round_trips(&mut ok, 100);
    std::thread::sleep(Duration::from_millis(200));
    assert!(flood.recv(&mut buf).is_err(), "the flood got an answer");
    let stats = srv.stats();
    // The stolen proof's first use (from `legit`) was admitted: two sessions in all.
    assert_eq!(stats.sessions.load(Ordering::Relaxed), 2);
    // Every datagram that reached the listener is counted (the kernel drops what overflows
    // the socket's buffer while the listener is busy).
    let counted = stats.unadmitted.load(Ordering::Relaxed);
    assert!(counted > 0 && counted <= sent, "{counted} of {sent}");
}

#[test]
fn a_key_on_a_memory_transport_server_is_refused() {
    let dir = Dir::new();
    let mut c = SessionConfig::new(TransportKind::Shm);
    c.key = Some(dir.key("lab"));
    let table = ResponderTable::single(Arc::new(Echo));
    let name = unique("shm");
    let e = CoprocessorSession::open(&name, c, &name, 0, &table, ServeOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("udp and rdma"), "{e}");
}
