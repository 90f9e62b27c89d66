//! `--token-file` end to end: `backline token`, the token file's refusals, and a keyed udp
//! server that runs an admitted controller's checked rounds while a flood of hellos without
//! the key gets no answer and costs it no memory and no descriptors.

mod common;

use std::net::UdpSocket;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use backline_wire::{Geometry, Handshake, HandshakeKind};
use common::{BIN, backline, json, out_dir, serve, wait_bounded};

/// `backline token FILE` into a fresh directory: the key file, mode 0600.
fn new_key(dir: &str, name: &str) -> String {
    let path = format!("{dir}/{name}");
    let o = backline(&["token", &path]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    path
}

/// The server's resident memory in KiB and its open descriptors.
fn footprint(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    (rss, fds)
}

#[test]
fn token_files_that_cannot_be_keys_are_refused_before_serving() {
    let dir = out_dir("admit-files");
    let key = new_key(&dir, "key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(std::fs::read_to_string(&key).unwrap().trim().len(), 64);
    // `token` never overwrites.
    let o = backline(&["token", &key]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exists"));

    let shared = format!("{dir}/shared");
    std::fs::write(&shared, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
    let empty = format!("{dir}/empty");
    std::fs::write(&empty, "\n").unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o600)).unwrap();
    let missing = format!("{dir}/missing");
    for (file, says) in [
        (&shared, "chmod 600"),
        (&empty, "empty"),
        (&missing, "does not exist"),
    ] {
        let o = backline(&[
            "serve",
            "--transport",
            "udp",
            "--bind",
            "127.0.0.1:0",
            "--token-file",
            file,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        assert!(o.stdout.is_empty(), "{file}: no ready line");
        assert!(
            err.contains("--token-file") && err.contains(says),
            "{file}: {err}"
        );
    }
    // shm and the cuqr protocol have no keyed hello.
    for args in [
        &["serve", "--transport", "shm", "--token-file", &key][..],
        &["serve", "--protocol", "cuqr", "--token-file", &key],
        &[
            "bench",
            "--transport",
            "shm",
            "--token-file",
            &key,
            "--rounds",
            "10",
        ],
    ] {
        let o = backline(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--token-file"), "{args:?}: {err}");
    }
}

#[test]
fn an_admitted_controller_runs_while_unkeyed_hellos_flood_the_server() {
    const ROUNDS: u64 = 100_000;
    const FLOOD: u64 = 100_000;
    let dir = out_dir("admit-flood");
    let key = new_key(&dir, "key");
    let other = new_key(&dir, "other");
    // Blocking waits: the bench, the server and the flood share two cores.
    let srv = serve(&[
        "--transport",
        "udp",
        "--bind",
        "127.0.0.1:0",
        "--responder",
        "steane",
        "--spin-us",
        "0",
        "--token-file",
        &key,
    ]);
    let bench = |key: &str, rounds: u64| {
        Command::new(BIN)
            .args([
                "bench",
                "--transport",
                "udp",
                "--peer",
                &srv.peer,
                "--responder",
                "steane",
                "--spin-us",
                "0",
                "--rounds",
                &rounds.to_string(),
                "--token-file",
                key,
                "--json",
                "--no-plots",
                "--no-baseline",
                "--quiet",
                "--out-dir",
                &dir,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let limit = Duration::from_secs(300);

    // Another key: refused within the set-up time, as "not admitted".
    let (o, took) = wait_bounded(bench(&other, 10), limit, "bench with another key");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not admitted"), "{err}");
    assert!(took < Duration::from_secs(30), "{took:?}");

    // A quiet run, then the footprint the flood must leave as it is.
    let (o, _) = wait_bounded(bench(&key, ROUNDS), limit, "quiet bench");
    let quiet = json(&o);
    assert_eq!(quiet["completed"], ROUNDS, "{quiet}");
    let pid = srv.child.id();
    let before = footprint(pid);

    let answered = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let target: std::net::SocketAddr = srv.peer.parse().unwrap();
    let flood = {
        let (answered, sent) = (answered.clone(), sent.clone());
        std::thread::spawn(move || flood(target, FLOOD, &sent, &answered))
    };
    let (o, _) = wait_bounded(bench(&key, ROUNDS), limit, "bench under the flood");
    flood.join().unwrap();
    let flooded = json(&o);
    assert_eq!(flooded["completed"], ROUNDS, "{flooded}");
    assert_eq!(answered.load(Ordering::Relaxed), 0, "the flood got answers");
    let after = footprint(pid);
    assert_eq!(after.1, before.1, "descriptors before and after the flood");
    assert!(
        after.0 <= before.0 + 1024,
        "resident memory grew by {} KiB under the flood",
        after.0.saturating_sub(before.0)
    );
    let (q, f) = (
        quiet["median_ns"].as_f64().unwrap(),
        flooded["median_ns"].as_f64().unwrap(),
    );
    eprintln!(
        "admission flood: {} datagrams, none answered; median {q:.0} ns quiet, {f:.0} ns under the flood ({:.3}x); RSS {} -> {} KiB, fds {} -> {}",
        sent.load(Ordering::Relaxed),
        f / q,
        before.0,
        after.0,
        before.1,
        after.1
    );
    let err = srv.stop();
    assert!(
        err.contains("admitting only controllers that prove the key"),
        "{err}"
    );
    let refused: u64 = err
        .split_once(" hellos without a valid key proof")
        .and_then(|(head, _)| head.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no count of refused hellos: {err}"));
    // Every refusal is counted; how many of the flood's datagrams reach the server at all
    // depends on the load (the kernel drops what overflows the socket's buffer: a CI run on
    // two busy cores counted 37% of them).
    let sent = sent.load(Ordering::Relaxed);
    assert!(
        refused >= 1 && refused <= sent + 100,
        "{refused} of {sent}: {err}"
    );
    eprintln!("admission flood: {refused} of {sent} datagrams reached the server and were refused");
    assert!(err.contains("stopped after 2 sessions"), "{err}");
}

/// Sends `count` datagrams that are not keyed hellos to `target`, about 40,000 a second, and
/// counts every answer: unflagged hellos (as an old or unkeyed controller sends), flagged hellos
/// with a forged proof, floor pings and garbage, from several sockets.
fn flood(target: std::net::SocketAddr, count: u64, sent: &AtomicU64, answered: &AtomicU64) {
    let sockets: Vec<UdpSocket> = (0..8)
        .map(|_| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect();
    let hello = Handshake::new(HandshakeKind::Hello, Geometry::default(), 1).encode();
    let mut flagged = Handshake::new(HandshakeKind::Hello, Geometry::default(), 1);
    flagged.flags = backline_wire::HELLO_KEY_PROOF;
    let mut forged = flagged.encode().to_vec();
    forged.extend_from_slice(&[0x5a; backline_wire::KEY_PROOF_BYTES]);
    let mut floor = backline_wire::FLOOR_PING_MAGIC.to_vec();
    floor.extend_from_slice(&[0; 4]);
    let frames: [&[u8]; 4] = [&hello, &forged, &floor, b"GET / HTTP/1.0\r\n\r\n"];
    let mut buf = [0u8; 2048];
    let drain = |buf: &mut [u8]| {
        for s in &sockets {
            while s.recv_from(buf).is_ok() {
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    let t0 = Instant::now();
    for i in 0..count {
        let s = &sockets[i as usize % sockets.len()];
        if s.send_to(frames[i as usize % frames.len()], target).is_ok() {
            sent.fetch_add(1, Ordering::Relaxed);
        }
        drain(&mut buf);
        if i % 400 == 399 {
            let due = Duration::from_micros(25 * (i + 1));
            if let Some(wait) = due.checked_sub(t0.elapsed()) {
                std::thread::sleep(wait);
            }
        }
    }
    // Late answers, if any, still arrive within this.
    std::thread::sleep(Duration::from_millis(200));
    drain(&mut buf);
}
