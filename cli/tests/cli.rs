//! The `backline` command as users run it: bench over every transport with every kind of
//! responder, its outputs, and every bad input of the runtime issue.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

mod common;

use common::{BIN, serve};

static N: AtomicU32 = AtomicU32::new(0);

fn scratch(tag: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "cli-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn backline(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run backline")
}

/// The C coprocessor library of the examples, built once per test run.
fn c_lib() -> PathBuf {
    static ONCE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let src =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/ffi/examples/c/steane_decoder.c");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libsteane_decoder.so");
        let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("C compiler");
        assert!(st.success());
        out
    })
    .clone()
}

fn json_of(o: &Output) -> serde_json::Value {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "backline failed: {}\n{out}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "--json prints exactly one line: {out}");
    serde_json::from_str(lines[0]).expect("one JSON object")
}

/// Rows of a CSV trace: (round, cold, status).
fn csv_rows(path: &Path) -> Vec<(u64, bool, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.starts_with("# backline trace v1\n"),
        "{}",
        path.display()
    );
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("round,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[5] == "1", f[4].to_string())
        })
        .collect()
}

/// A failing run: non-zero exit, no panic, and the error as one line, the last one on stderr
/// (a run that fails part-way first says which partial outputs it wrote).
fn assert_clean_error(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "expected failure, got success: {err}");
    assert!(!err.contains("panicked"), "panic trace: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    let errors: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("backline: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "one error line expected: {err}");
    assert!(
        lines.last().unwrap().starts_with("backline: error: "),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("backline: error: ") || l.starts_with("wrote ")),
        "{err}"
    );
    assert!(errors[0].contains(needle), "expected `{needle}` in: {err}");
}

#[test]
fn every_responder_over_every_transport() {
    let lib = c_lib();
    let c_spec = format!("{}:steane_decode", lib.display());
    for transport in ["memcpy", "shm", "udp"] {
        let dir = scratch(transport);
        let rounds = 3000u64;
        let o = backline(&[
            "bench",
            "--transport",
            transport,
            "--compare",
            &format!("echo,steane,{c_spec}"),
            "--rounds",
            &rounds.to_string(),
            "--json",
            "--no-plots",
            "--quiet",
            "--out-dir",
            dir.to_str().unwrap(),
        ]);
        let v = json_of(&o);
        let runs = v["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 3, "{v}");
        for r in runs {
            assert_eq!(r["transport"], transport);
            assert_eq!(r["rounds"], rounds);
            assert_eq!(r["completed"], rounds, "{r}");
            assert!(r["round0_ns"].as_f64().unwrap() > 0.0);
            assert!(r["median_ns"].as_f64().unwrap() > 0.0);
            assert!(r["ratio_median"].as_f64().unwrap() > 0.0);
            assert!(r["baseline"]["median_ns"].as_f64().unwrap() > 0.0);
        }
        // One CSV per responder plus the floor, each with one row per round, round 0 marked.
        let csvs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .collect();
        assert_eq!(csvs.len(), 4, "{csvs:?}");
        for p in csvs {
            let rows = csv_rows(&p);
            assert_eq!(rows.len() as u64, rounds, "{}", p.display());
            assert!(rows[0].1 && rows[0].0 == 0, "round 0 is marked cold");
            assert!(rows[1..].iter().all(|r| !r.1), "only round 0 is cold");
            assert!(rows.iter().all(|r| r.2 == "ok"));
        }
    }
}

#[test]
fn single_run_json_table_plots_and_in_flight() {
    let dir = scratch("single");
    let o = backline(&[
        "bench",
        "--rounds",
        "2000",
        "--json",
        "--quiet",
        "--in-flight",
        "4",
        "--payload-bytes",
        "100",
        "--responder",
        "echo",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    let v = json_of(&o);
    for k in [
        "transport",
        "responder",
        "rounds",
        "round0_ns",
        "mean_ns",
        "median_ns",
        "std_ns",
        "min_ns",
        "max_ns",
        "p99_ns",
        "p999_ns",
        "p9999_ns",
        "p99999_ns",
        "baseline",
        "ratio_median",
    ] {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    assert_eq!(v["responder"], "echo");
    for png in [
        "bench-memcpy-echo-rtt.png",
        "bench-memcpy-echo-hist.png",
        "bench-memcpy-ccdf.png",
    ] {
        let bytes = std::fs::read(dir.join(png)).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{png}");
        // And the same plot as SVG, its labels as text.
        let svg = std::fs::read_to_string(dir.join(png.replace(".png", ".svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("RTT (µs)"), "{png}");
    }
    // The table form.
    let o = backline(&[
        "bench",
        "--rounds",
        "2000",
        "--quiet",
        "--no-plots",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    for needle in [
        "round0",
        "P99.999",
        "steane",
        "floor (cache line)",
        "steane / floor",
    ] {
        assert!(out.contains(needle), "{needle} missing from:\n{out}");
    }
}

#[test]
fn random_delayed_quiet_period_is_not_in_the_rtt() {
    let dir = scratch("paced");
    let csv = dir.join("paced.csv");
    // 5 ms … 5.0013 ms quiet periods at 200 MHz.
    let o = backline(&[
        "bench",
        "--rounds",
        "100",
        "--cadence",
        "random-delayed",
        "--freq",
        "1000000",
        "--span",
        "0xff",
        "--quiet",
        "--no-plots",
        "--no-baseline",
        "--csv",
        csv.to_str().unwrap(),
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        text.contains("# cadence: random-delayed freq=1000000 span=0xff"),
        "{text}"
    );
    let mut rtts = Vec::new();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("round,"))
    {
        let f: Vec<&str> = l.split(',').collect();
        let quiet: f64 = f[3].parse().unwrap();
        assert!(
            (5_000_000.0..=5_001_300.0).contains(&quiet),
            "quiet {quiet} ns"
        );
        rtts.push(f[1].parse::<f64>().unwrap());
    }
    rtts.sort_by(f64::total_cmp);
    assert!(
        rtts[rtts.len() / 2] < 5_000_000.0,
        "RTT excludes the quiet period"
    );
}

#[test]
fn bad_inputs_get_one_line_errors() {
    let lib = c_lib();
    let lib = lib.to_str().unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--transport".into(), "carrier-pigeon".into()],
            "unknown transport `carrier-pigeon`",
        ),
        (
            vec!["--responder".into(), "bogus".into()],
            "unknown responder `bogus`",
        ),
        (
            vec!["--responder".into(), "/nonexistent/libx.so:f".into()],
            "cannot load library",
        ),
        (
            vec!["--responder".into(), format!("{lib}:no_such_symbol")],
            "symbol `no_such_symbol` not found",
        ),
        (
            vec![
                "--payload-bytes".into(),
                "100".into(),
                "--slot-bytes".into(),
                "64".into(),
            ],
            "does not fit",
        ),
        (
            vec!["--freq".into(), "5".into()],
            "cadence b2b means freq = span = 0",
        ),
        (
            vec![
                "--cadence".into(),
                "random-delayed".into(),
                "--span".into(),
                "0x1001".into(),
            ],
            "not of the form 2^N-1",
        ),
        (
            vec![
                "--compare".into(),
                "echo".into(),
                "--responder".into(),
                "steane".into(),
            ],
            "cannot be used with",
        ),
        (
            vec!["--peer".into(), "x".into()],
            "memcpy runs the coprocessor in this process",
        ),
        (vec!["--in-flight".into(), "300".into()], "--in-flight 300"),
        (
            vec!["--ring-depth".into(), "100".into()],
            "--ring-depth 100: must be a power of two",
        ),
        (vec!["--spin-us".into(), "-5".into()], "spin budget"),
        (
            vec![
                "--transport".into(),
                "shm".into(),
                "--peer".into(),
                "nobody-serves-this".into(),
            ],
            "no coprocessor at shm:nobody-serves-this",
        ),
        // Codes too large to hold: were a capacity-overflow panic and a 62 GB abort.
        (
            vec!["--responder".into(), "bposd:bb:100000,100000,1,1".into()],
            "matrix is too large",
        ),
        (
            vec!["--responder".into(), "bposd:surface1000".into()],
            "surface1000: a dense 500000 × 1000000 matrix is too large",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec![
            "bench".to_string(),
            "--rounds".into(),
            "100".into(),
            "--quiet".into(),
            "--no-plots".into(),
        ];
        args.extend(extra);
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert_clean_error(&o, needle);
    }
    let o = backline(&["serve", "--transport", "memcpy"]);
    assert_clean_error(&o, "use `backline bench --transport memcpy`");
    // A trace with a non-finite time: `plot` used to spin (or panic) on it.
    let dir = scratch("inf");
    let trace = dir.join("inf.csv");
    std::fs::write(
        &trace,
        "# backline trace v1\n# clock: host-ns\nround,rtt_ns,rtt_cycles,quiet_ns,status,cold\n\
         0,300.0,,0,ok,1\n1,inf,,0,ok,0\n",
    )
    .unwrap();
    let o = backline(&[
        "plot",
        trace.to_str().unwrap(),
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert_clean_error(
        &o,
        "inf.csv:5: rtt_ns `inf` is not a finite non-negative number",
    );
}

#[test]
fn a_second_server_on_the_same_name_or_port_is_refused() {
    let name = format!("cli-dup-{}", std::process::id());
    let first = serve(&["--transport", "shm", "--name", &name]);
    let o = backline(&["serve", "--transport", "shm", "--name", &name]);
    assert_clean_error(&o, "already in use");
    first.kill();

    let first = serve(&["--transport", "udp", "--bind", "127.0.0.1:0"]);
    let o = backline(&["serve", "--transport", "udp", "--bind", &first.peer]);
    assert_clean_error(&o, "already in use");
    first.kill();
    // The killed shm server left a stale segment: the next server reclaims it.
    let mut again = serve(&["--transport", "shm", "--name", &name, "--sessions", "1"]);
    let o = backline(&[
        "bench",
        "--transport",
        "shm",
        "--peer",
        &name,
        "--rounds",
        "100",
        "--quiet",
        "--no-plots",
        "--no-baseline",
        "--out-dir",
        scratch("dup").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let st = again.child.wait().unwrap();
    assert!(
        st.success(),
        "serve --sessions 1 exits cleanly after one session"
    );
    assert!(
        !Path::new(&format!("/dev/shm/backline-{name}")).exists(),
        "segment removed"
    );
}

#[test]
fn a_peer_that_exits_after_the_runs_costs_the_floor_after_them_not_the_runs() {
    // `serve --sessions 1` exits after the bench's session, before the bench measures the
    // second half of its floor: the runs and the first half are still reported.
    let mut srv = serve(&[
        "--transport",
        "udp",
        "--bind",
        "127.0.0.1:0",
        "--sessions",
        "1",
    ]);
    let o = backline(&[
        "bench",
        "--transport",
        "udp",
        "--peer",
        &srv.peer,
        "--rounds",
        "300",
        "--no-plots",
        "--out-dir",
        scratch("peer-exits").to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("steane / floor"), "{out}");
    assert!(
        out.contains("the floor after the runs could not be measured"),
        "{out}"
    );
    assert!(srv.child.wait().unwrap().success());
}

#[test]
fn an_unknown_decoder_id_is_reported() {
    for transport in ["shm", "udp"] {
        let name = format!("cli-dec-{}", std::process::id());
        let srv = match transport {
            "shm" => serve(&["--transport", "shm", "--name", &name]),
            _ => serve(&["--transport", "udp", "--bind", "127.0.0.1:0"]),
        };
        let peer = srv.peer.clone();
        let o = backline(&[
            "bench",
            "--transport",
            transport,
            "--peer",
            &peer,
            "--decoder-id",
            "5",
            "--rounds",
            "100",
            "--quiet",
            "--no-plots",
            "--no-baseline",
            "--out-dir",
            scratch("dec").to_str().unwrap(),
        ]);
        assert_clean_error(&o, "100 unknown_decoder");
        srv.kill();
    }
}

#[test]
fn plot_reads_traces_back() {
    let dir = scratch("plot");
    let o = backline(&[
        "bench",
        "--rounds",
        "1000",
        "--quiet",
        "--no-plots",
        "--compare",
        "echo,steane",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let a = dir.join("bench-memcpy-echo.csv");
    let b = dir.join("bench-memcpy-steane.csv");
    let c = dir.join("bench-memcpy-floor.csv");
    let out = dir.join("plots");
    let o = backline(&[
        "plot",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        c.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("ccdf.png").exists());
    // Three traces overlaid, each named in the legend.
    let svg = std::fs::read_to_string(out.join("ccdf.svg")).unwrap();
    for name in ["echo b2b", "steane b2b", "floor (cache line) b2b"] {
        assert!(svg.contains(name), "{name} missing from the CCDF legend");
    }
    let o = backline(&["plot", "/nonexistent.csv"]);
    assert_clean_error(&o, "/nonexistent.csv");
}

#[test]
fn bposd_from_a_tanner_graph_serves_both_check_types() {
    for transport in ["memcpy", "shm"] {
        let dir = scratch("bposd");
        // [[13,1,3]]: 6 X checks and 6 Z checks, one syndrome byte; ids 0 (X) and 1 (Z). The
        // requests are syndromes of sampled errors, sized by the code.
        let o = backline(&[
            "bench",
            "--transport",
            transport,
            "--responder",
            "bposd:hgp13:max_iter=10",
            "--error-rate",
            "0.05",
            "--rounds",
            "2000",
            "--json",
            "--quiet",
            "--no-plots",
            "--out-dir",
            dir.to_str().unwrap(),
        ]);
        let v = json_of(&o);
        assert_eq!(v["completed"], 2000, "{v}");
        // At p = 0.05 on 13 qubits a few percent of the corrections are logical failures.
        let lf = v["logical_failures"].as_u64().unwrap();
        assert!(lf > 0 && lf < 200, "{v}");
    }
    // Codes whose check count is not a multiple of 8, or above 8 bytes: every round right.
    for code in ["surface21", "bb144"] {
        let o = backline(&[
            "bench",
            "--responder",
            &format!("bposd:{code}:max_iter=20"),
            "--error-rate",
            "0.005",
            "--rounds",
            "300",
            "--json",
            "--quiet",
            "--no-plots",
            "--no-baseline",
            "--out-dir",
            scratch("bposd-size").to_str().unwrap(),
        ]);
        let v = json_of(&o);
        assert_eq!(v["completed"], 300, "{code}: {v}");
    }
    // A payload size that is not the syndrome's is refused before anything starts.
    let o = backline(&[
        "bench",
        "--responder",
        "bposd:hgp13",
        "--payload-bytes",
        "2",
        "--rounds",
        "100",
        "--quiet",
        "--no-plots",
        "--no-baseline",
        "--out-dir",
        scratch("bposd-bad").to_str().unwrap(),
    ]);
    assert_clean_error(&o, "--payload-bytes 2: bposd:hgp13 takes 1-byte syndromes");
    let o = backline(&[
        "bench",
        "--responder",
        "bposd:hgp13",
        "--error-rate",
        "1.5",
        "--rounds",
        "100",
        "--quiet",
        "--no-plots",
        "--out-dir",
        scratch("bposd-bad").to_str().unwrap(),
    ]);
    assert_clean_error(&o, "--error-rate 1.5 is outside [0, 1]");
}

#[test]
fn rdma_says_plainly_whether_it_can_run_here() {
    let dir = scratch("rdma");
    let o = backline(&[
        "bench",
        "--transport",
        "rdma",
        "--rounds",
        "100",
        "--json",
        "--no-plots",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    if o.status.success() {
        // A machine with an RDMA device: bench started its own rdma server.
        let j = json_of(&o);
        assert_eq!(j["transport"], "rdma");
        assert_eq!(j["completed"], 100);
    } else {
        // No RDMA here: one plain line, before anything was started.
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("no RDMA device") || err.contains("no RDMA support"),
            "{err}"
        );
        assert_clean_error(&o, "RDMA");
        let o = backline(&["serve", "--transport", "rdma", "--bind", "127.0.0.1:0"]);
        assert_clean_error(&o, "RDMA");
    }
    let o = backline(&["bench", "--transport", "rdma", "--gid-index", "300"]);
    assert_clean_error(&o, "invalid value '300' for '--gid-index");
}
