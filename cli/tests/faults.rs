//! The fault matrix: `backline bench` controllers against `backline serve` coprocessors (shm
//! and udp) and in-process ones (memcpy), with the coprocessor killed, stopped past the reply
//! timeout and resumed, the controller killed, garbage and strays on the udp port, a corrupted
//! shm segment, a handshake that goes silent, and a coprocessor function that hangs. Every case
//! asserts that the controller reports within a bound set by its timeouts, says how many rounds
//! completed, accounts for every posted round in its trace (answered, timed out, errored or
//! abandoned in flight — the counts add up), never accepts a wrong reply, and that the
//! coprocessor (or a restarted one, after a kill) goes on serving the next controller.
//!
//! The rdma row of the matrix runs in the Soft-RoCE VM (`tests/rdma-vm/guest.sh`).

mod common;

use std::collections::HashMap;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{BIN, Server, json, out_dir, serve, wait_bounded};

/// Reply timeout of every faulty run: the bound on its report is a few of these plus start-up.
const TIMEOUT_MS: &str = "300";
/// How long a failing bench may take to report (start-up, the last round's timeout, writing
/// its trace): generous for a loaded two-core machine, far below a hang.
const REPORT_BOUND: Duration = Duration::from_secs(20);

fn serve_on(transport: &str, tag: &str, extra: &[&str]) -> Server {
    let name = format!("faults-{tag}-{}", std::process::id());
    let mut args = vec![
        "--transport",
        transport,
        "--responder",
        "echo",
        "--spin-us",
        "0",
    ];
    match transport {
        "shm" => args.extend(["--name", &name]),
        _ => args.extend(["--bind", "127.0.0.1:0"]),
    }
    args.extend(extra);
    serve(&args)
}

/// A bench of `rounds` echo rounds, 4 in flight (unless `extra` says), blocking waits, its
/// trace at `csv`.
fn bench(transport: &str, peer: Option<&str>, rounds: u64, csv: &Path, extra: &[&str]) -> Child {
    bench_of("echo", transport, peer, rounds, csv, extra)
}

/// [`bench`] of `responder`.
fn bench_of(
    responder: &str,
    transport: &str,
    peer: Option<&str>,
    rounds: u64,
    csv: &Path,
    extra: &[&str],
) -> Child {
    let rounds = rounds.to_string();
    let dir = csv.parent().unwrap().display().to_string();
    let mut args = vec![
        "bench",
        "--transport",
        transport,
        "--responder",
        responder,
        "--rounds",
        &rounds,
        "--spin-us",
        "0",
        "--no-baseline",
        "--json",
        "--no-plots",
        "--quiet",
        "--out-dir",
        &dir,
        "--csv",
        csv.to_str().unwrap(),
    ];
    if let Some(p) = peer {
        args.extend(["--peer", p]);
    }
    // 4 in flight and the short timeout unless `extra` says otherwise.
    for (flag, default) in [("--in-flight", "4"), ("--timeout-ms", TIMEOUT_MS)] {
        if !extra.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    args.extend(extra);
    Command::new(BIN)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start backline bench")
}

/// The statuses of a trace's rounds, checked to be rounds 0, 1, 2, … with none missing.
fn statuses(csv: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(csv).unwrap_or_else(|e| panic!("{}: {e}", csv.display()));
    let rows: Vec<(u64, String)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("round,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[4].to_string())
        })
        .collect();
    for (i, (round, _)) in rows.iter().enumerate() {
        assert_eq!(*round, i as u64, "{}: rounds out of order", csv.display());
    }
    rows.into_iter().map(|(_, s)| s).collect()
}

/// A run that failed: exit 2, one error line naming the completed count; its trace holds every
/// posted round — `ok` ones equal to the count, then one `timeout` or `error`, then the
/// `abandoned` rounds that were in flight — and no `mismatch`.
fn assert_failed_and_accounted(out: &std::process::Output, csv: &Path, what: &str) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("backline: error: "))
        .unwrap_or_else(|| panic!("{what}: no error line: {err}"));
    let completed: u64 = line
        .split(" of ")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{what}: no count in {line}"));
    assert!(line.contains("rounds completed, then:"), "{what}: {line}");
    let st = statuses(csv);
    let mut counts: HashMap<&str, u64> = HashMap::new();
    for s in &st {
        *counts.entry(s.as_str()).or_default() += 1;
    }
    let ok = counts.get("ok").copied().unwrap_or(0);
    let ended =
        counts.get("timeout").copied().unwrap_or(0) + counts.get("error").copied().unwrap_or(0);
    let abandoned = counts.get("abandoned").copied().unwrap_or(0);
    assert_eq!(
        ok, completed,
        "{what}: trace and report disagree: {counts:?}"
    );
    assert_eq!(ended, 1, "{what}: one round ends the run: {counts:?}");
    assert!(
        abandoned <= 3,
        "{what}: at most in_flight - 1 abandoned: {counts:?}"
    );
    assert_eq!(
        ok + ended + abandoned,
        st.len() as u64,
        "{what}: {counts:?}"
    );
    // The order: answered rounds, then the one that ended the run, then the abandoned ones.
    let first_bad = st.iter().position(|s| s != "ok").unwrap();
    assert!(
        matches!(st[first_bad].as_str(), "timeout" | "error"),
        "{what}: {st:?}"
    );
    assert!(
        st[first_bad + 1..].iter().all(|s| s == "abandoned"),
        "{what}"
    );
    completed
}

/// A bench of `rounds` that must answer every one right.
fn assert_served(transport: &str, peer: Option<&str>, rounds: u64, csv: &Path, what: &str) {
    let (o, _) = wait_bounded(bench(transport, peer, rounds, csv, &[]), REPORT_BOUND, what);
    let j = json(&o);
    assert_eq!(j["completed"], rounds, "{what}: {j}");
    assert!(statuses(csv).iter().all(|s| s == "ok"), "{what}");
}

fn csv(dir: &str, name: &str) -> PathBuf {
    Path::new(dir).join(format!("{name}.csv"))
}

#[test]
fn the_coprocessor_killed_mid_run() {
    for transport in ["shm", "udp"] {
        let dir = out_dir(&format!("killed-{transport}"));
        let srv = serve_on(transport, "killed", &[]);
        let c = csv(&dir, "run");
        let b = bench(transport, Some(&srv.peer), 100_000_000, &c, &[]);
        std::thread::sleep(Duration::from_millis(800));
        srv.kill();
        let (o, _) = wait_bounded(b, REPORT_BOUND, transport);
        let done = assert_failed_and_accounted(&o, &c, transport);
        assert!(done > 0, "{transport}: rounds flowed before the kill");
        // A server started in its place (on the stale shm segment, too) serves the next one.
        let srv = serve_on(transport, "killed", &[]);
        assert_served(
            transport,
            Some(&srv.peer),
            2_000,
            &csv(&dir, "next"),
            transport,
        );
        srv.stop();
    }
}

#[test]
fn the_coprocessor_stopped_past_the_timeout_then_resumed() {
    for transport in ["shm", "udp"] {
        let dir = out_dir(&format!("stopped-{transport}"));
        let srv = serve_on(transport, "stopped", &[]);
        let c = csv(&dir, "run");
        let b = bench(transport, Some(&srv.peer), 100_000_000, &c, &[]);
        std::thread::sleep(Duration::from_millis(800));
        srv.signal("-STOP");
        let (o, _) = wait_bounded(b, REPORT_BOUND, transport);
        srv.signal("-CONT");
        assert_failed_and_accounted(&o, &c, transport);
        let err = String::from_utf8_lossy(&o.stderr);
        // The message gives the time waited: the 300 ms timeout, give or take a wake-up.
        let waited: u64 = err
            .split("timed out after ")
            .nth(1)
            .and_then(|t| t.split(" ms").next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{transport}: no wait in {err}"));
        assert!((300..1_300).contains(&waited), "{transport}: {err}");
        // Resumed, it answers the next controller — not with the stale rounds of the first.
        assert_served(
            transport,
            Some(&srv.peer),
            2_000,
            &csv(&dir, "next"),
            transport,
        );
        let report = srv.stop();
        assert!(
            report.contains("stopped after 2 sessions"),
            "{transport}: {report}"
        );
    }
}

#[test]
fn the_controller_killed_mid_run() {
    for transport in ["shm", "udp"] {
        let dir = out_dir(&format!("ctl-killed-{transport}"));
        let srv = serve_on(transport, "ctlkill", &[]);
        for (i, signal) in ["-KILL", "-INT"].into_iter().enumerate() {
            let c = csv(&dir, &format!("run{i}"));
            let mut b = bench(transport, Some(&srv.peer), 100_000_000, &c, &[]);
            std::thread::sleep(Duration::from_millis(800));
            let st = Command::new("kill")
                .args([signal, &b.id().to_string()])
                .status()
                .unwrap();
            assert!(st.success());
            let _ = b.wait();
            // The next controller is served at once: the killed one's session (its shm slot)
            // is reclaimed when its pid is gone, not after a long timeout.
            let what = format!("{transport} after {signal}");
            assert_served(
                transport,
                Some(&srv.peer),
                2_000,
                &csv(&dir, &format!("next{i}")),
                &what,
            );
        }
        srv.stop();
    }
}

#[test]
fn garbage_and_strays_on_the_udp_port_during_a_run() {
    let dir = out_dir("garbage");
    let srv = serve_on("udp", "garbage", &[]);
    let c = csv(&dir, "run");
    let b = bench("udp", Some(&srv.peer), 30_000, &c, &[]);
    let peer = srv.peer.clone();
    let noise = std::thread::spawn(move || {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut sent = 0;
        for i in 0..3000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 200) as usize;
            let mut d: Vec<u8> = (0..len).map(|k| (x >> (k % 56)) as u8).collect();
            if i % 3 == 0 && len >= 68 {
                // A record with the right magic and a valid checksum: a stray hello of a
                // peer that never follows up, with a geometry the server does not serve.
                let mut h = [0u8; 68];
                h.copy_from_slice(&d[..68]);
                h[..4].copy_from_slice(&backline_wire::HANDSHAKE_MAGIC);
                h[4] = backline_wire::WIRE_VERSION;
                h[5] = 1;
                backline_wire::seal_handshake(&mut h);
                d = h.to_vec();
            }
            if s.send_to(&d, &peer).is_ok() {
                sent += 1;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        sent
    });
    let (o, _) = wait_bounded(b, REPORT_BOUND * 3, "udp under garbage");
    let sent = noise.join().unwrap();
    let j = json(&o);
    assert_eq!(j["completed"], 30_000, "{j}");
    assert!(statuses(&c).iter().all(|s| s == "ok"));
    assert!(sent > 0);
    let report = srv.stop();
    assert!(
        report.contains("datagrams of no session dropped"),
        "{report}"
    );
}

/// The bytes of a segment's file, for corrupting it.
fn segment(name_tag: &str) -> PathBuf {
    PathBuf::from(format!(
        "/dev/shm/backline-faults-{name_tag}-{}",
        std::process::id()
    ))
}

#[test]
fn a_corrupted_shm_segment_is_survived_or_refused_plainly() {
    let dir = out_dir("corrupt");
    let srv = serve_on("shm", "corrupt", &[]);
    let path = segment("corrupt");
    let mut bytes = std::fs::read(&path).unwrap();
    let len = bytes.len();
    // Garbage over every slot's control block and rings (the server's control block, the
    // first 4 KiB, stays): stale pids, half-written hellos, ring contents.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for b in &mut bytes[4096..] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write(&path, &bytes[..len]).unwrap();
    assert_served(
        "shm",
        Some(&srv.peer),
        2_000,
        &csv(&dir, "after-garbage"),
        "garbage slots",
    );
    // A control block that is not a backline server's: a one-line refusal within the set-up
    // timeout, not a hang, and no crash of the server, which still serves nobody new
    // through a segment whose magic is gone but keeps running until stopped.
    bytes = std::fs::read(&path).unwrap();
    bytes[..8].copy_from_slice(b"garbage!");
    std::fs::write(&path, &bytes).unwrap();
    let c = csv(&dir, "refused");
    let (o, _) = wait_bounded(
        bench("shm", Some(&srv.peer), 100, &c, &[]),
        REPORT_BOUND,
        "magic",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("backline: error: "))
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    srv.stop();
}

#[test]
fn a_handshake_that_goes_silent() {
    let dir = out_dir("silent");
    // A "server" that reads hellos and never answers.
    let mute = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = mute.local_addr().unwrap().to_string();
    let c = csv(&dir, "mute");
    let (o, took) = wait_bounded(
        bench("udp", Some(&addr), 100, &c, &[]),
        REPORT_BOUND,
        "mute",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("backline: error: "), "{err}");
    assert!(
        took >= Duration::from_secs(1),
        "it waited for an answer: {took:?}"
    );
    drop(mute);
    // A controller that says hello and falls silent takes a session, not the server: the next
    // one is served. (shm: a stopped server does not answer, then does once resumed.)
    let srv = serve_on("udp", "silent", &[]);
    let half = UdpSocket::bind("127.0.0.1:0").unwrap();
    let hello = backline_wire::Handshake::new(
        backline_wire::HandshakeKind::Hello,
        backline_wire::Geometry {
            depth: 8,
            slot_bytes: 64,
        },
        4,
    );
    half.send_to(&hello.encode(), &srv.peer).unwrap();
    assert_served(
        "udp",
        Some(&srv.peer),
        2_000,
        &csv(&dir, "after-half"),
        "udp half hello",
    );
    srv.stop();
    let srv = serve_on("shm", "silent", &[]);
    srv.signal("-STOP");
    let c = csv(&dir, "stopped");
    let (o, _) = wait_bounded(
        bench("shm", Some(&srv.peer), 100, &c, &[]),
        REPORT_BOUND,
        "shm",
    );
    srv.signal("-CONT");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_served(
        "shm",
        Some(&srv.peer),
        2_000,
        &csv(&dir, "resumed"),
        "shm resumed",
    );
    srv.stop();
}

/// A C coprocessor function that echoes, but hangs for 2 s on its 1000th call.
fn hanging_lib() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let src = dir.join("hang_once.c");
    std::fs::write(
        &src,
        r#"#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
static unsigned calls;
size_t hang_once(const void *in, size_t n, void *out, size_t cap, void *ctx) {
    (void)ctx;
    if (__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) == 1000) sleep(2);
    if (n > cap) return SIZE_MAX;
    memcpy(out, in, n);
    return n;
}
"#,
    )
    .unwrap();
    let lib = dir.join(format!("libhang_once-{}.so", std::process::id()));
    let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("C compiler");
    assert!(st.success());
    lib
}

#[test]
fn a_coprocessor_function_that_hangs() {
    let lib = hanging_lib();
    let spec = format!("{}:hang_once", lib.display());
    let dir = out_dir("hang");
    // memcpy: the function runs on a thread of the bench itself.
    let c = csv(&dir, "memcpy");
    let b = bench_of(&spec, "memcpy", None, 100_000, &c, &[]);
    let (o, _) = wait_bounded(b, REPORT_BOUND, "memcpy hang");
    let done = assert_failed_and_accounted(&o, &c, "memcpy hang");
    assert!(
        (996..1000).contains(&done),
        "rounds before the hang: {done}"
    );
    for transport in ["shm", "udp"] {
        let name = format!("faults-hang-{}", std::process::id());
        let function = format!("0={spec}");
        let mut args = vec![
            "--transport",
            transport,
            "--fn",
            &function,
            "--spin-us",
            "0",
        ];
        match transport {
            "shm" => args.extend(["--name", &name]),
            _ => args.extend(["--bind", "127.0.0.1:0"]),
        }
        let srv = serve(&args);
        let c = csv(&dir, transport);
        let b = bench_of(&spec, transport, Some(&srv.peer), 100_000, &c, &[]);
        let (o, _) = wait_bounded(b, REPORT_BOUND, transport);
        assert_failed_and_accounted(&o, &c, transport);
        // Once the call returns, the server serves the next controller.
        std::thread::sleep(Duration::from_millis(2200));
        let c = csv(&dir, &format!("{transport}-next"));
        let b = bench_of(&spec, transport, Some(&srv.peer), 2_000, &c, &[]);
        let (o, _) = wait_bounded(b, REPORT_BOUND, transport);
        assert_eq!(json(&o)["completed"], 2_000);
        srv.stop();
    }
}

/// `VmRSS` in KiB and the number of open file descriptors of a process.
fn resources(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    (rss, fds)
}

/// The soak run of `scripts/soak.sh` (ignored by plain `cargo test`): for
/// `BACKLINE_SOAK_SECONDS` (default 60), controllers over memcpy, shm and udp with echo and
/// Steane functions, 1 to 4 rounds in flight, against one long-lived server per network
/// transport, with faults drawn at random — a controller killed mid-run, a server stopped for
/// a moment, garbage on the udp port. Every run that was not killed must answer every round
/// right (0 lost rounds); the servers' memory and file descriptors must be flat at the end.
#[test]
#[ignore = "long: scripts/soak.sh runs it"]
fn soak() {
    let secs: u64 = std::env::var("BACKLINE_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = out_dir("soak");
    let name = format!("soak-{}", std::process::id());
    let fns = ["--fn", "0=echo", "--fn", "1=steane", "--spin-us", "0"];
    let mut shm_args = vec!["--transport", "shm", "--name", &name];
    shm_args.extend(fns);
    let mut udp_args = vec![
        "--transport",
        "udp",
        "--bind",
        "127.0.0.1:0",
        "--idle-timeout",
        "2",
    ];
    udp_args.extend(fns);
    let servers = [("shm", serve(&shm_args)), ("udp", serve(&udp_args))];
    let mut x = 0x853C_49E6_748F_EA9Bu64 ^ std::process::id() as u64;
    let mut rand = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let start = std::time::Instant::now();
    let (mut runs, mut killed, mut rounds_answered, mut lost) = (0u64, 0u64, 0u64, 0u64);
    let mut baseline: Option<Vec<(u64, usize)>> = None;
    let mut faults: HashMap<&str, u64> = HashMap::new();
    while start.elapsed() < Duration::from_secs(secs) {
        // The servers' footprint once warmed up by a few sessions.
        if runs >= 5 && baseline.is_none() {
            baseline = Some(
                servers
                    .iter()
                    .map(|(_, s)| resources(s.child.id()))
                    .collect(),
            );
        }
        let transport = ["memcpy", "shm", "udp"][rand(3) as usize];
        let (responder, id) = [("echo", "0"), ("steane", "1")][rand(2) as usize];
        let in_flight = ["1", "2", "4"][rand(3) as usize];
        let rounds = 2_000 + rand(18_000);
        let peer = servers
            .iter()
            .find(|(t, _)| *t == transport)
            .map(|(_, s)| s.peer.clone());
        let fault = match (transport, rand(10)) {
            ("memcpy", _) | (_, 0..=5) => "none",
            (_, 6 | 7) => "kill-controller",
            ("udp", 8) => "garbage",
            _ => "stop-server",
        };
        *faults.entry(fault).or_default() += 1;
        let c = csv(&dir, &format!("run{runs}"));
        let extra = [
            "--decoder-id",
            id,
            "--in-flight",
            in_flight,
            "--timeout-ms",
            "2000",
        ];
        let extra: &[&str] = if transport == "memcpy" {
            &extra[2..]
        } else {
            &extra
        };
        let mut b = bench_of(responder, transport, peer.as_deref(), rounds, &c, extra);
        match fault {
            "kill-controller" => {
                std::thread::sleep(Duration::from_millis(100 + rand(300)));
                let _ = b.kill();
                let _ = b.wait();
                killed += 1;
                runs += 1;
                continue;
            }
            "stop-server" => {
                std::thread::sleep(Duration::from_millis(50 + rand(100)));
                let s = &servers.iter().find(|(t, _)| *t == transport).unwrap().1;
                s.signal("-STOP");
                std::thread::sleep(Duration::from_millis(100));
                s.signal("-CONT");
            }
            "garbage" => {
                let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                for i in 0..200u32 {
                    let _ = s.send_to(
                        &i.to_le_bytes().repeat(1 + (i % 20) as usize),
                        peer.as_deref().unwrap(),
                    );
                }
            }
            _ => {}
        }
        let (o, _) = wait_bounded(b, REPORT_BOUND * 3, "soak run");
        let ok = if o.status.success() {
            statuses(&c).iter().filter(|s| *s == "ok").count() as u64
        } else {
            0
        };
        if ok != rounds {
            eprintln!(
                "soak: run {runs} ({transport}, {responder}, {in_flight} in flight, {fault}): {ok} of {rounds}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        lost += rounds - ok;
        rounds_answered += ok;
        runs += 1;
        let _ = std::fs::remove_file(&c);
    }
    // Sessions of killed udp controllers end after the idle timeout (2 s here).
    std::thread::sleep(Duration::from_secs(3));
    let end: Vec<(u64, usize)> = servers
        .iter()
        .map(|(_, s)| resources(s.child.id()))
        .collect();
    eprintln!(
        "soak: {secs} s, {runs} runs ({killed} controllers killed), {rounds_answered} rounds \
         answered, {lost} lost; faults {faults:?}"
    );
    let baseline = baseline.expect("at least 5 runs");
    for ((t, _), (b, e)) in servers.iter().zip(baseline.iter().zip(&end)) {
        eprintln!(
            "soak: {t} server: RSS {} KiB -> {} KiB, {} -> {} file descriptors",
            b.0, e.0, b.1, e.1
        );
        assert!(
            e.1 <= b.1,
            "{t}: file descriptors grew from {} to {}",
            b.1,
            e.1
        );
        assert!(
            e.0 < b.0 + 16 * 1024,
            "{t}: RSS grew from {} to {} KiB",
            b.0,
            e.0
        );
    }
    assert_eq!(lost, 0, "rounds lost in runs that were not killed");
    for (t, s) in servers {
        let report = s.stop();
        eprintln!("soak: {t}: {}", report.lines().last().unwrap_or(""));
    }
}
