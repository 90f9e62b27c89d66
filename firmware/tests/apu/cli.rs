//! The `backline-apu` binary against a `sim-board` process, the way a user drives a board:
//! separate CLI calls that find the board's state where the last one left it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use backline_bench::Trace;
use backline_bench::trace::RoundStatus;

use super::util::{example_path, no_verilator, scratch};

const BIN: &str = env!("CARGO_BIN_EXE_backline-apu");

/// A sim-board process; SIGTERM on drop.
struct SimProcess {
    child: Child,
    socket: PathBuf,
    peer: String,
}

impl SimProcess {
    fn start(dir: &Path, extra: &[&str]) -> SimProcess {
        let socket = dir.join("board.sock");
        let mut child = Command::new(BIN)
            .args(["sim-board", "--socket"])
            .arg(&socket)
            .args(["--peer-listen", "127.0.0.1:0"])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let peer = first
            .split("remote side on ")
            .nth(1)
            .and_then(|s| s.split(';').next())
            .unwrap_or_else(|| panic!("no peer address in: {first}"))
            .to_string();
        std::thread::spawn(move || lines.for_each(drop));
        SimProcess {
            child,
            socket,
            peer,
        }
    }

    fn backend(&self) -> String {
        format!("sim:{}", self.socket.display())
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return; // already exited and reaped
        }
        // SAFETY: kill(2) with the pid of our own child, which has not been reaped; no
        // memory is involved.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

fn apu(backend: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--backend")
        .arg(backend)
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn config_for(dir: &Path, peer: &str) -> PathBuf {
    let t = std::fs::read_to_string(example_path())
        .unwrap()
        .replace("127.0.0.1:7471", peer);
    let p = dir.join("board.toml");
    std::fs::write(&p, t).unwrap();
    p
}

#[test]
fn the_whole_chain_through_the_cli_with_10000_round_runs() {
    if no_verilator() {
        return;
    }
    let dir = scratch("cli-chain");
    let sim = SimProcess::start(&dir, &["--responder", "steane"]);
    let be = sim.backend();
    let cfg = config_for(&dir, &sim.peer);

    let o = apu(&be, &["setup", "--config", cfg.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.starts_with("QP 2 up: peer QP 0x11 at 10.0.0.1"),
        "{out}"
    );

    for mode in ["sw-loop", "hw-loop"] {
        let t0 = Instant::now();
        let o = apu(
            &be,
            &[
                "run", "--mode", mode, "--rounds", "10000", "--expect", "steane", "--json",
            ],
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{mode}: {out}{err}");
        let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(j["rounds_committed"], 10_000, "{j}");
        assert_eq!(j["completed"], 10_000, "{j}");
        assert_eq!(
            (j["timeouts"].as_u64(), j["mismatches"].as_u64()),
            (Some(0), Some(0))
        );
        assert!(j["median_ns"].as_f64().unwrap() > 2000.0, "{j}");
        eprintln!(
            "cli: 10,000-round {mode} run in {:.2} s",
            t0.elapsed().as_secs_f64()
        );
    }

    let csv = dir.join("trace.csv");
    let o = apu(&be, &["trace", "--csv", csv.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("10000 rounds (hw-loop b2b)"), "{out}");
    let t = Trace::load(&csv).unwrap();
    assert_eq!(t.rows.len(), 10_000);
    assert_eq!(t.meta("source"), Some("sim-board"));
    assert!(t.rows.iter().all(|r| r.status == RoundStatus::Ok));
    assert!(
        std::fs::read_to_string(&csv)
            .unwrap()
            .starts_with("# backline trace v1\n# clock: cycles @ 200 MHz\n")
    );

    let o = apu(&be, &["info", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["qps"][0]["enabled"], true);
    assert_eq!(j["hwhs"]["round_count"], 10_000);
    // The simulated board's ERNIC is a v4.x by default (as the block design's), told by its
    // version register; the issue of ERNIC v4.x changed this from the v3.x space.
    assert_eq!(j["ernic_layout"], "ERNIC v4.x register space (PG332 v4.0)");
    assert_eq!(j["ernic_layout_short"], "v4.x");
    assert_eq!(j["ernic_version"], 0x0004_0000);
    let o = apu(&be, &["info"]);
    let (out, _) = text(&o);
    assert!(
        out.contains("ERNIC layout   ERNIC v4.x register space (PG332 v4.0) (XRNIC_VERSION (0x10001c) = 0x00040000, version 4.0.0)"),
        "{out}"
    );

    // Bad run settings: exit 2 with the register named, nothing run.
    let o = apu(
        &be,
        &[
            "run",
            "--mode",
            "hw-loop",
            "--rounds",
            "10",
            "--cadence",
            "random-delayed",
            "--span",
            "0x0ffffffe",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("PACER_SPAN = 0x0ffffffe: span 0xffffffe is not of the form 2^N-1"),
        "{err}"
    );

    // A random-delayed hw-loop run finishes thanks to fast-forward (on by default in sim).
    let o = apu(
        &be,
        &[
            "run",
            "--mode",
            "hw-loop",
            "--rounds",
            "200",
            "--cadence",
            "random-delayed",
            "--quiet",
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("quiet cycles fast-forwarded"), "{out}");

    let o = apu(&be, &["reset"]);
    assert!(o.status.success());
    assert_eq!(
        text(&o).0,
        "board reset: QP [2] torn down, ERNIC disabled, HWHS soft-reset\n"
    );
    let o = apu(&be, &["run", "--mode", "sw-loop", "--rounds", "10"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("is not enabled: run `backline-apu setup --config FILE` first"),
        "{err}"
    );
}

#[test]
fn timeouts_exit_1_and_a_bad_board_exits_2() {
    if no_verilator() {
        return;
    }
    let dir = scratch("cli-exit");
    let sim = SimProcess::start(&dir, &["--responder", "silent"]);
    let be = sim.backend();
    let cfg = config_for(&dir, &sim.peer);
    let t = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("timeout_us = 1000", "timeout_us = 10");
    std::fs::write(&cfg, t).unwrap();
    assert!(
        apu(&be, &["setup", "--config", cfg.to_str().unwrap()])
            .status
            .success()
    );
    let o = apu(&be, &["run", "--mode", "sw-loop", "--rounds", "5"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("timeouts 5"), "{out}");
    drop(sim);

    // The board's socket is gone: a clear error, exit 2.
    let o = apu(&be, &["info"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("is `backline-apu sim-board"), "{err}");
    // A register space that is not a v3.x ERNIC's (no version register, and a reserved word
    // reads non-zero): refused at connect.
    let sim = SimProcess::start(
        &scratch("cli-v3-foreign"),
        &["--ernic", "v3", "--ident-word", "0x00040000"],
    );
    let o = apu(
        &sim.backend(),
        &["setup", "--config", cfg.to_str().unwrap()],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("ERNIC 0x2001c (reserved) reads 0x00040000: reserved offset 0x2001c"),
        "{err}"
    );
    drop(sim);
    // An ERNIC whose version register names neither layout: refused with the value read.
    let sim = SimProcess::start(&scratch("cli-v5"), &["--ident-word", "0x00050100"]);
    let o = apu(&sim.backend(), &["info"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("ERNIC XRNIC_VERSION (0x10001c) reads 0x00050100: the XRNIC version register"),
        "{err}"
    );
    assert!(
        err.contains("(version 5.1.0): it names neither layout"),
        "{err}"
    );
}

#[test]
fn config_errors_come_before_the_board_is_touched() {
    let dir = scratch("cli-config");
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(example_path())
            .unwrap()
            .replace("number = 2", "number = 1"),
    )
    .unwrap();
    // No board at this backend at all: the config error is what the user sees.
    let o = apu(
        "sim:/nonexistent/board.sock",
        &["setup", "--config", bad.to_str().unwrap()],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("config qp.number = 1: QP 1 is the management QP"),
        "{err}"
    );
    let o = apu("bogus", &["info"]);
    assert!(
        text(&o).1.contains("unknown kind") || text(&o).1.contains("expected uio"),
        "{:?}",
        text(&o)
    );
}

/// Sends `sig` to the process and waits (at most 10 s) for it to exit; its exit status.
fn stop_with(mut sim: SimProcess, sig: libc::c_int) -> std::process::ExitStatus {
    // SAFETY: kill(2) with the pid of our own child; no memory is involved.
    unsafe {
        libc::kill(sim.child.id() as libc::pid_t, sig);
    }
    let t0 = Instant::now();
    loop {
        if let Some(st) = sim.child.try_wait().unwrap() {
            return st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "sim-board still running 10 s after signal {sig}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_sim_board_stops_on_sigterm_and_sigint_and_removes_its_socket() {
    if no_verilator() {
        return;
    }
    for (sig, name) in [(libc::SIGTERM, "term"), (libc::SIGINT, "int")] {
        let dir = scratch(&format!("cli-{name}"));
        let sim = SimProcess::start(&dir, &[]);
        let sock = sim.socket.clone();
        assert!(sock.exists());
        let st = stop_with(sim, sig);
        assert!(st.success(), "signal {sig}: {st:?}");
        assert!(!sock.exists(), "signal {sig}: the socket is still there");
    }
    // Its socket directory deleted under it: it still stops when asked.
    let dir = scratch("cli-gone");
    let sim = SimProcess::start(&dir, &[]);
    std::fs::remove_dir_all(&dir).unwrap();
    let st = stop_with(sim, libc::SIGTERM);
    assert!(st.success(), "{st:?}");
}

#[test]
fn sim_board_bad_coprocessors_and_what_the_build_has() {
    let v = Command::new(BIN).arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&v.stdout);
    assert!(v.contains("(simulated board: "), "{v}");
    let h = Command::new(BIN)
        .args(["sim-board", "--help"])
        .output()
        .unwrap();
    let h = String::from_utf8_lossy(&h.stdout);
    assert!(h.contains("Simulator: "), "{h}");
    assert!(h.contains("--coprocessor <ADDR>"), "{h}");
    if no_verilator() {
        assert!(h.contains("sudo apt-get install verilator"), "{h}");
        return;
    }
    let dir = scratch("cli-bad-cop");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (cop, needle) in [
        (
            format!("udp:127.0.0.1:{port}"),
            format!("the coprocessor at udp:127.0.0.1:{port} does not answer"),
        ),
        (
            "tcp:1.2.3.4:5".to_string(),
            "unknown transport `tcp`".to_string(),
        ),
    ] {
        let o = Command::new(BIN)
            .args(["sim-board", "--socket"])
            .arg(dir.join("b.sock"))
            .args(["--peer-listen", "none", "--coprocessor", &cop])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&needle), "{err}");
        assert!(!dir.join("b.sock").exists());
    }
}
