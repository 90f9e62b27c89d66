//! Outputs never lose a run: every path is checked before the first round, trace names never
//! collide, Ctrl-C keeps what ran, and the ratio row shows only ratios that mean something.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, backline, out_dir, wait_bounded};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_csv_path_that_cannot_be_written_fails_before_the_run() {
    let d = out_dir("csv-missing");
    let csv = format!("{d}/no/such/dir/run.csv");
    let o = backline(&[
        "bench",
        "--responder",
        "echo",
        "--rounds",
        "2000",
        "--quiet",
        "--csv",
        &csv,
        "--out-dir",
        &d,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("--csv {csv}")), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Nothing ran: no table, no floor trace.
    assert!(o.stdout.is_empty());
    assert!(!Path::new(&d).join("bench-memcpy-floor.csv").exists());
}

#[test]
fn an_out_dir_that_cannot_be_created_fails_before_the_run() {
    let d = out_dir("dir-blocked");
    // A file where the directory should be.
    let blocker = format!("{d}/file");
    std::fs::write(&blocker, b"x").unwrap();
    let o = backline(&[
        "bench",
        "--responder",
        "echo",
        "--rounds",
        "2000",
        "--quiet",
        "--out-dir",
        &format!("{blocker}/sub"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("creating the output directory"), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn json_with_a_csv_path_and_no_plots_needs_no_out_dir() {
    let d = out_dir("no-out-dir");
    let o = Command::new(BIN)
        .args([
            "bench",
            "--responder",
            "echo",
            "--rounds",
            "2000",
            "--quiet",
            "--json",
            "--no-plots",
            "--csv",
            "/dev/null",
        ])
        .current_dir(&d)
        .output()
        .unwrap();
    let v = common::json(&o);
    assert_eq!(v["responder"], "echo");
    assert!(
        std::fs::read_dir(&d).unwrap().next().is_none(),
        "created {:?}",
        std::fs::read_dir(&d).unwrap().collect::<Vec<_>>()
    );
}

#[test]
fn compare_of_the_same_responder_twice_writes_two_traces() {
    let d = out_dir("compare-twice");
    let o = backline(&[
        "bench",
        "--compare",
        "echo,echo",
        "--rounds",
        "2000",
        "--quiet",
        "--no-plots",
        "--out-dir",
        &d,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("echo #2 / floor"), "{out}");
    for f in ["bench-memcpy-echo.csv", "bench-memcpy-echo-2.csv"] {
        let t = backline_bench::Trace::load(&Path::new(&d).join(f)).unwrap();
        assert_eq!(t.rows.len(), 2000, "{f}");
        assert_eq!(t.meta("responder"), Some("echo"), "{f}");
    }
}

#[test]
fn sigint_stops_at_a_round_boundary_and_keeps_the_partial_trace() {
    let d = out_dir("sigint");
    let csv = format!("{d}/partial.csv");
    // Paced rounds (tens of µs each): a million take far longer than the test waits.
    let child = Command::new(BIN)
        .args([
            "bench",
            "--responder",
            "echo",
            "--rounds",
            "1000000",
            "--cadence",
            "random-delayed",
            "--no-baseline",
            "--no-plots",
            "--quiet",
            "--csv",
            &csv,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let (o, _) = wait_bounded(child, Duration::from_secs(60), "bench after SIGINT");
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("interrupted"), "{err}");
    // The table of what completed.
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("echo"), "{out}");
    let t = backline_bench::Trace::load(Path::new(&csv)).unwrap();
    assert!(
        !t.rows.is_empty() && t.rows.len() < 1_000_000,
        "{}",
        t.rows.len()
    );
    // Every round of the trace completed, in order: none dropped, none half-done.
    for (i, r) in t.rows.iter().enumerate() {
        assert_eq!(r.round, i as u64);
        assert_eq!(
            r.status,
            backline_bench::trace::RoundStatus::Ok,
            "round {i}"
        );
    }
}

#[test]
fn the_ratio_row_has_no_round0_std_min_or_max() {
    let d = out_dir("ratio");
    let o = backline(&[
        "bench",
        "--responder",
        "echo",
        "--rounds",
        "2000",
        "--quiet",
        "--no-plots",
        "--out-dir",
        &d,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let row = out
        .lines()
        .find(|l| l.starts_with("echo / floor"))
        .unwrap_or_else(|| panic!("no ratio row in:\n{out}"));
    let cells: Vec<&str> = row["echo / floor".len()..].split_whitespace().collect();
    // round0 mean median std min max P99 P99.9 P99.99 P99.999
    assert_eq!(cells.len(), 10, "{row}");
    for (k, c) in cells.iter().enumerate() {
        match k {
            0 | 3 | 4 | 5 => assert_eq!(*c, "-", "column {k} of {row}"),
            _ => assert!(c.ends_with('x'), "column {k} of {row}"),
        }
    }
}

#[test]
fn a_run_that_fails_its_checks_exits_1_and_keeps_its_trace() {
    let d = out_dir("checks-failed");
    let lib = format!("{d}/libfail.so");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../host/ffi/examples/c/steane_decoder.c"
    );
    let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O2", "-o", &lib, src])
        .status()
        .expect("C compiler");
    assert!(st.success());
    let o = backline(&[
        "bench",
        "--responder",
        &format!("{lib}:always_fail"),
        "--rounds",
        "100",
        "--quiet",
        "--no-plots",
        "--no-baseline",
        "--out-dir",
        &d,
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("were not the expected ones"), "{err}");
    let t =
        backline_bench::Trace::load(&Path::new(&d).join("bench-memcpy-always_fail.csv")).unwrap();
    assert_eq!(t.rows.len(), 100);
}

#[test]
fn progress_off_a_terminal_only_when_asked_with_rate_and_time_left() {
    let d = out_dir("progress");
    let start = |extra: &[&str]| {
        Command::new(BIN)
            .args([
                "bench",
                "--responder",
                "echo",
                "--rounds",
                "1000000",
                "--cadence",
                "random-delayed",
                "--no-baseline",
                "--no-plots",
                "--out-dir",
                &d,
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let asked = start(&["--progress", "--csv", &format!("{d}/a.csv")]);
    let plain = start(&["--csv", &format!("{d}/b.csv")]);
    // The first line comes after a second of the run.
    std::thread::sleep(Duration::from_secs(3));
    for c in [&asked, &plain] {
        let st = Command::new("kill")
            .args(["-INT", &c.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }
    let (a, _) = wait_bounded(asked, Duration::from_secs(60), "bench --progress");
    let (b, _) = wait_bounded(plain, Duration::from_secs(60), "bench");
    let (ea, eb) = (stderr(&a), stderr(&b));
    let line = ea
        .lines()
        .find(|l| l.starts_with("bench memcpy echo: "))
        .unwrap_or_else(|| panic!("no progress line: {ea}"));
    assert!(line.contains("/1000000 rounds ("), "{line}");
    assert!(
        line.contains("rounds/s") && line.ends_with(" left"),
        "{line}"
    );
    assert!(!eb.contains("rounds/s"), "{eb}");
}
