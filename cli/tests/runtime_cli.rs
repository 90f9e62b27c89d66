//! The runtime's depth from the command line: one `backline serve` serving several `backline
//! bench` controllers at once, the "full" answer beyond `--max-sessions`, hop probes on every
//! transport, and thread names.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{BIN, backline, json, out_dir, serve};

#[test]
fn two_benches_run_at_once_against_one_server_with_every_reply_checked() {
    for (transport, args) in [
        ("udp", vec!["--bind", "127.0.0.1:0"]),
        ("shm", vec!["--name", "runtime-cli-two"]),
    ] {
        // Blocking waits: four spinning threads on a two-core machine would take turns by
        // time slices.
        let mut a = vec![
            "--transport",
            transport,
            "--responder",
            "steane",
            "--spin-us",
            "0",
        ];
        a.extend(&args);
        let srv = serve(&a);
        let dir = out_dir(transport);
        let bench = || {
            Command::new(BIN)
                .args([
                    "bench",
                    "--transport",
                    transport,
                    "--peer",
                    &srv.peer,
                    "--responder",
                    "steane",
                    "--rounds",
                    "200000",
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
        let (b1, b2) = (bench(), bench());
        for b in [b1, b2] {
            let o = b.wait_with_output().unwrap();
            let j = json(&o);
            assert_eq!(j["completed"], 200_000, "{transport}: {j}");
        }
        let err = srv.stop();
        assert!(err.contains("session 1 ("), "{err}");
        assert!(err.contains("session 2 ("), "{err}");
        assert_eq!(
            err.matches(": 200000 rounds, 0 with an error status")
                .count(),
            2,
            "{err}"
        );
        assert!(
            err.contains("stopped after 2 sessions, 400000 rounds"),
            "{err}"
        );
    }
}

#[test]
fn a_controller_beyond_max_sessions_is_told_the_server_is_full() {
    let srv = serve(&[
        "--transport",
        "udp",
        "--bind",
        "127.0.0.1:0",
        "--max-sessions",
        "1",
    ]);
    let dir = out_dir("full");
    // One long run holds the only place...
    let long = Command::new(BIN)
        .args([
            "bench",
            "--transport",
            "udp",
            "--peer",
            &srv.peer,
            "--rounds",
            "100000000",
            "--no-plots",
            "--no-baseline",
            "--quiet",
            "--out-dir",
            &dir,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // ...until it is surely in.
    std::thread::sleep(Duration::from_millis(500));
    let o = Command::new(BIN)
        .args([
            "bench",
            "--transport",
            "udp",
            "--peer",
            &srv.peer,
            "--rounds",
            "10",
            "--no-plots",
            "--no-baseline",
            "--out-dir",
            &dir,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("maximum number of controllers"), "{err}");
    let _ = Command::new("kill")
        .args(["-INT", &long.id().to_string()])
        .status();
    let _ = long.wait_with_output();
    srv.stop();
}

#[test]
fn hop_probes_write_one_row_per_round_on_every_transport() {
    for transport in ["memcpy", "shm", "udp"] {
        let dir = out_dir(&format!("hops-{transport}"));
        let csv = format!("{dir}/hops.csv");
        let o = Command::new(BIN)
            .args([
                "bench",
                "--transport",
                transport,
                "--rounds",
                "3000",
                "--no-plots",
                "--no-baseline",
                "--quiet",
                "--hop-stats",
                "--hop-csv",
                &csv,
                "--out-dir",
                &dir,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{transport}: {err}");
        // The coprocessor's hops are there too (its own thread or process).
        for hop in [
            "stage → post",
            "request_seen → fn_start",
            "fn_start → fn_end",
        ] {
            assert!(err.contains(hop), "{transport}: {hop}: {err}");
        }
        if transport == "udp" {
            assert!(err.contains("post → received"), "{err}");
        }
        let text = std::fs::read_to_string(&csv).unwrap();
        let rows = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("session"))
            .count();
        assert_eq!(rows, 3000, "{transport}: one row per round");
    }
}

#[test]
fn every_thread_has_a_name_that_says_whose_it_is() {
    let srv = serve(&["--transport", "udp", "--bind", "127.0.0.1:0", "--name", "x"]);
    let dir = out_dir("names");
    let bench = Command::new(BIN)
        .args([
            "bench",
            "--transport",
            "udp",
            "--peer",
            &srv.peer,
            "--rounds",
            "100000000",
            "--no-plots",
            "--no-baseline",
            "--quiet",
            "--out-dir",
            &dir,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let names = |pid: u32| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten()
                    .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                    .map(|s| s.trim().to_string())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let t0 = Instant::now();
    let mut server_names = names(srv.child.id());
    while !server_names.iter().any(|n| n.starts_with("s1:"))
        && t0.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(50));
        server_names = names(srv.child.id());
    }
    assert!(
        server_names.contains(&"srv:serve".to_string()),
        "{server_names:?}"
    );
    assert!(
        server_names.contains(&"s1:serve".to_string()),
        "{server_names:?}"
    );
    assert!(server_names.iter().all(|n| n.len() <= 15));
    let _ = Command::new("kill")
        .args(["-INT", &bench.id().to_string()])
        .status();
    let _ = bench.wait_with_output();
    srv.stop();
}

#[test]
fn more_serving_threads_than_sessions_and_a_missing_hop_are_said_once_and_serve_on() {
    // Bad input of the runtime issue: `--serve-threads` beyond `--max-sessions` and the
    // CPUs, and hop probes on a transport without a transport hop (shm): each is one line on
    // stderr, not an error, and both controllers are served.
    let name = format!("runtime-cli-threads-{}", std::process::id());
    let srv = serve(&[
        "--transport",
        "shm",
        "--name",
        &name,
        "--serve-threads",
        "1024",
        "--max-sessions",
        "2",
        "--hop-stats",
    ]);
    let dir = out_dir("threads");
    for _ in 0..2 {
        let o = Command::new(BIN)
            .args([
                "bench",
                "--transport",
                "shm",
                "--peer",
                &srv.peer,
                "--rounds",
                "500",
                "--no-plots",
                "--no-baseline",
                "--quiet",
                "--out-dir",
                &dir,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let err = srv.stop();
    let said = |what: &str| err.matches(what).count();
    assert_eq!(said("--serve-threads 1024 is more than"), 1, "{err}");
    assert_eq!(said("has no transport hop of its own"), 1, "{err}");
    assert_eq!(said("500 rounds, 0 with an error status"), 2, "{err}");
}

#[test]
fn fan_out_rounds_to_two_servers_and_peers_that_cannot_fan_out() {
    let tag = std::process::id();
    let (a, b, wide) = (
        format!("fan-a-{tag}"),
        format!("fan-b-{tag}"),
        format!("fan-w-{tag}"),
    );
    let srv_a = serve(&["--transport", "shm", "--name", &a, "--fn", "0=echo"]);
    let srv_b = serve(&["--transport", "shm", "--name", &b, "--fn", "0=echo"]);
    let srv_w = serve(&[
        "--transport",
        "shm",
        "--name",
        &wide,
        "--fn",
        "0=echo",
        "--slot-bytes",
        "128",
    ]);
    let dir = out_dir("fan-out");
    let peers = format!("{a},shm:{b}");
    let fan = |peers: &str| {
        backline(&[
            "bench",
            "--transport",
            "shm",
            "--peers",
            peers,
            "--responder",
            "echo",
            "--rounds",
            "2000",
            "--json",
            "--no-plots",
            "--quiet",
            "--out-dir",
            &dir,
        ])
    };
    let j = json(&fan(&peers));
    assert_eq!(j["mode"], "fan-out", "{j}");
    assert_eq!(j["peers"].as_array().unwrap().len(), 2, "{j}");
    let slowest = j["slowest_alone_median_ns"].as_f64().unwrap();
    let ratio = j["ratio_to_slowest_median"].as_f64().unwrap();
    assert!(slowest > 0.0 && ratio > 0.0, "{j}");
    // Bad peers: one error line each, naming what is wrong.
    for (peers, says) in [
        (
            format!("{a},shm:{a}"),
            format!("--peers names shm:{a} twice"),
        ),
        (a.clone(), "--peers names one coprocessor".to_string()),
        (
            format!("{a},{wide}"),
            format!("coprocessor 1 of --peers (shm:{wide}): ring geometry mismatch"),
        ),
        (
            format!("{a},memcpy:x"),
            "memcpy keeps its coprocessor in this process".to_string(),
        ),
    ] {
        let o = fan(&peers);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{peers}: {err}");
        assert!(err.contains(&says), "{peers}: {err}");
    }
    for s in [srv_a, srv_b, srv_w] {
        s.stop();
    }
}
