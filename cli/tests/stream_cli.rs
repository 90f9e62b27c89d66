//! Streaming decoders from the command line: `backline bench --responder stream:…` over
//! memcpy (with the whole-history comparison), `backline serve --protocol cuqr` answering
//! `backline bench --protocol cuqr --peer` over loopback UDP with every reply checked, and the
//! errors of bad set-ups.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_backline");

fn model() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../decoders/tests/data/dem/surface_d3_r8_p0.01.dem"
    )
    .to_string()
}

fn spec() -> String {
    format!("stream:{}:bposd:window=4;commit=2;max_iter=10", model())
}

fn out_dir(tag: &str) -> String {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("stream-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.display().to_string()
}

fn bench(args: &[&str], tag: &str) -> Output {
    Command::new(BIN)
        .arg("bench")
        .args(args)
        .args(["--json", "--no-plots", "-q", "--out-dir", &out_dir(tag)])
        .output()
        .unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "backline failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).expect("one JSON object")
}

#[test]
fn bench_streams_shots_over_memcpy_and_compares_with_the_whole_history() {
    let o = bench(
        &["--responder", &spec(), "--shots", "300", "--whole-history"],
        "memcpy",
    );
    let v = json(&o);
    let runs = v["runs"]
        .as_array()
        .expect("two runs: enqueue, get_corrections");
    assert_eq!(runs.len(), 2);
    let (enq, gc) = (&runs[0], &runs[1]);
    assert_eq!(enq["calls"], "enqueue");
    assert_eq!(gc["calls"], "get_corrections");
    // 9 rounds a shot, every reply right.
    assert_eq!(enq["completed"], 300 * 9);
    assert_eq!(gc["completed"], 300);
    assert_eq!(enq["shots"], 300);
    assert_eq!(enq["refused"], 0);
    assert!(enq["median_ns"].as_f64().unwrap() > 0.0);
    assert!(enq["ratio_median"].as_f64().unwrap() > 0.0, "the floor ran");
    // p = 0.01 at distance 3: a few % logical errors, and the whole history near them.
    let k = enq["logical_failures"].as_u64().unwrap();
    let w = &enq["whole_history"];
    assert_eq!(w["shots"], 300);
    let kw = w["logical_failures"].as_u64().unwrap();
    assert!(k.abs_diff(kw) <= w["differ"].as_u64().unwrap(), "{enq}");
    assert!((1..60).contains(&k), "{k}");
    assert!(enq["ler_low"].as_f64().unwrap() <= enq["ler"].as_f64().unwrap());
    // Both figures over the backline protocol too, one per shot (the coprocessor's from the
    // stream function of this process); the client's interval holds the coprocessor's.
    let server = figure(enq, "last_syndrome_to_correction", 300);
    let client = figure(enq, "client_last_enqueue_to_corrections", 300);
    assert!(client[0] >= server[0], "{enq}");
}

/// The statistics of a per-shot figure, checked for order: (median, mean, P99, P99.9, max).
fn figure(run: &serde_json::Value, key: &str, shots: u64) -> [f64; 5] {
    let f = &run[key];
    assert_eq!(f["shots"].as_u64(), Some(shots), "{key}: {run}");
    let v = ["median_ns", "mean_ns", "p99_ns", "p999_ns", "max_ns"]
        .map(|k| f[k].as_f64().unwrap_or_else(|| panic!("{key}.{k}: {run}")));
    let [median, mean, p99, p999, max] = v;
    assert!(
        median > 0.0 && median <= p99 && p99 <= p999 && p999 <= max,
        "{key}: {f}"
    );
    assert!(mean > 0.0 && mean <= max, "{key}: {f}");
    v
}

#[test]
fn a_cuqr_bench_reports_last_syndrome_to_corrections_on_both_sides_inline_and_on_a_worker() {
    for mode in ["inline", "worker"] {
        let spec = format!("stream:{}:matching:decode={mode}", model());
        let o = bench(
            &[
                "--protocol",
                "cuqr",
                "--responder",
                &spec,
                "--shots",
                "200",
                "--timeout-ms",
                "5000",
            ],
            &format!("figure-{mode}"),
        );
        let v = json(&o);
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs[1]["completed"], 200);
        for run in &runs[..2] {
            // Every shot counted on both sides, the server's interval inside the client's,
            // shot by shot.
            let server = figure(run, "last_syndrome_to_correction", 200);
            let client = figure(run, "client_last_enqueue_to_corrections", 200);
            assert!(client[0] >= server[0], "{mode}: {run}");
            let gap = run["client_minus_server_min_ns"].as_f64().unwrap();
            assert!(gap >= 0.0, "{mode}: {run}");
        }
    }
}

/// `backline serve` with `args`; returns the child and its address.
fn serve(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let peer = line
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("serve did not start: {line:?}"))
        .trim()
        .to_string();
    (child, peer)
}

#[test]
fn bench_speaks_cuqr_to_serve_over_loopback_udp() {
    let fn0 = format!("0={}", spec());
    let fn1 = format!("1={}", spec());
    let (child, peer) = serve(&[
        "--transport",
        "udp",
        "--protocol",
        "cuqr",
        "--bind",
        "127.0.0.1:0",
        "--fn",
        &fn0,
        "--fn",
        &fn1,
    ]);
    // Two logical qubits on one server: decoder ids 0 and 1, one stream each.
    for id in ["0", "1"] {
        let o = bench(
            &[
                "--protocol",
                "cuqr",
                "--peer",
                &peer,
                "--responder",
                &spec(),
                "--decoder-id",
                id,
                "--shots",
                "200",
                "--timeout-ms",
                "5000",
            ],
            &format!("cuqr{id}"),
        );
        let v = json(&o);
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(v["transport"], "udp");
        assert_eq!(runs[0]["completed"], 200 * 9);
        assert_eq!(runs[1]["completed"], 200);
        assert_eq!(runs[0]["refused"], 0);
        assert!(runs[1]["baseline"]["median_ns"].as_f64().unwrap() > 0.0);
    }
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Each bench: 200 shots of NVIDIA's producer's calls (reset_decoder, 9 rounds,
    // get_corrections: 2200 calls) and 2000 floor frames, answered invalid_decoder.
    assert!(
        err.contains(
            "stopped after 8400 frames (ok=4400 invalid_decoder=4000); 0 frames dropped \
             unanswered (none)"
        ),
        "{err}"
    );
    assert!(err.contains("200 shots finished"), "{err}");
}

#[test]
fn bad_streaming_set_ups_are_errors() {
    for (args, want) in [
        (
            vec!["--protocol", "cuqr", "--responder", "steane"],
            "every responder must be a stream:",
        ),
        (
            vec![
                "--protocol",
                "cuqr",
                "--transport",
                "shm",
                "--responder",
                "x",
            ],
            "--protocol cuqr runs over udp",
        ),
        (
            vec!["--responder", "stream:/nonexistent/m.dem"],
            "reading /nonexistent/m.dem",
        ),
    ] {
        let o = Command::new(BIN).arg("bench").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let s = spec();
    let o = Command::new(BIN)
        .args(["bench", "--responder", &s, "--in-flight", "2"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("one call at a time"));
    let o = Command::new(BIN)
        .args([
            "serve",
            "--protocol",
            "cuqr",
            "--transport",
            "shm",
            "--fn",
            &format!("0={s}"),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("runs over udp, not --transport shm"), "{err}");
    let o = Command::new(BIN)
        .args([
            "serve",
            "--transport",
            "udp",
            "--protocol",
            "cuqr",
            "--bind",
            "127.0.0.1:0",
            "--fn",
            "0=echo",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a streaming decoder"), "{err}");
}

/// The streaming tail of a run: `{median_ns, p99_ns, p999_ns, max_ns, shots}`, checked for
/// order; returns its median.
fn tail(run: &serde_json::Value, shots: u64) -> f64 {
    let t = &run["streaming_tail"];
    assert_eq!(t["shots"].as_u64(), Some(shots), "{run}");
    let [median, p99, p999, max] = ["median_ns", "p99_ns", "p999_ns", "max_ns"].map(|k| {
        t[k].as_f64()
            .unwrap_or_else(|| panic!("streaming_tail.{k}: {run}"))
    });
    assert!(
        median > 0.0 && median <= p99 && p99 <= p999 && p999 <= max,
        "{t}"
    );
    median
}

#[test]
fn a_paced_stream_reports_its_tail_after_the_warm_up_and_its_backlog() {
    let spec = format!("stream:{}:matching", model());
    for (transport, tag) in [
        (&["--transport", "memcpy"][..], "paced-memcpy"),
        (&["--transport", "udp"][..], "paced-udp"),
        (&["--protocol", "cuqr"][..], "paced-cuqr"),
    ] {
        let mut args = transport.to_vec();
        args.extend([
            "--responder",
            &spec,
            "--round-interval-ns",
            "1000",
            "--shots",
            "30",
            "--warmup-shots",
            "5",
            "--timeout-ms",
            "5000",
            "--no-baseline",
        ]);
        let v = json(&bench(&args, tag));
        for run in v["runs"].as_array().unwrap() {
            // Every shot streamed; the tail leaves the 5 warm-up shots out, the client's
            // figure of every shot beside it, and the server's (last syndrome → corrections)
            // where the bench reads it.
            assert_eq!(run["shots"], 30, "{tag}: {run}");
            assert_eq!(run["warmup_shots"], 5, "{tag}: {run}");
            assert_eq!(run["round_interval_ns"], 1000, "{tag}: {run}");
            tail(run, 25);
            figure(run, "client_last_enqueue_to_corrections", 30);
            // (A backline-protocol server process prints its own in its shutdown line.)
            if tag != "paced-udp" {
                figure(run, "last_syndrome_to_correction", 30);
            }
            // A round a µs is faster than a loopback UDP round trip: late rounds, counted and
            // reported as backlog, never silent.
            let p = &run["pacing"];
            assert_eq!(p["round_interval_ns"], 1000, "{tag}: {p}");
            assert_eq!(p["rounds"], 25 * 9, "{tag}: {p}");
            let late = p["late_rounds"].as_u64().unwrap();
            assert!(late <= 25 * 9, "{tag}: {p}");
            if tag != "paced-memcpy" {
                assert!(late > 0, "{tag}: {p}");
                assert!(p["late_max_ns"].as_f64().unwrap() > 0.0, "{tag}: {p}");
            }
            let [m, p99, max] = ["median", "p99", "max"].map(|q| {
                let ns = p[format!("final_backlog_{q}_ns")].as_f64().unwrap();
                let rounds = p[format!("final_backlog_{q}_rounds")].as_f64().unwrap();
                assert!(
                    (rounds * 1000.0 - ns).abs() < 1e-6 * ns.max(1.0),
                    "{tag}: {p}"
                );
                ns
            });
            assert!(0.0 <= m && m <= p99 && p99 <= max, "{tag}: {p}");
        }
    }
    // Without the flags: back to back, as before (no pacing), the default warm-up (20, or
    // half the shots below 40) out of the tail only.
    let v = json(&bench(
        &["--responder", &spec, "--shots", "30", "--no-baseline"],
        "b2b",
    ));
    let run = &v["runs"][0];
    assert_eq!(run["round_interval_ns"], 0, "{run}");
    assert!(run.get("pacing").is_none(), "{run}");
    assert_eq!(run["warmup_shots"], 15, "{run}");
    assert_eq!(run["completed"], 30 * 9);
    tail(run, 15);
    figure(run, "client_last_enqueue_to_corrections", 30);
    let v = json(&bench(
        &[
            "--responder",
            &spec,
            "--shots",
            "50",
            "--round-interval-ns",
            "0",
            "--no-baseline",
        ],
        "b2b-0",
    ));
    assert!(v["runs"][0].get("pacing").is_none());
    tail(&v["runs"][0], 30);
}

#[test]
fn bad_cadences_and_warm_ups_are_one_line_errors() {
    let spec = format!("stream:{}:matching", model());
    for (args, want) in [
        (
            vec!["--round-interval-ns", "1000000001"],
            "--round-interval-ns 1000000001: at most 1000000000",
        ),
        (
            vec!["--round-interval-ns", "-1"],
            "unexpected argument '-1'",
        ),
        (vec!["--round-interval-ns", "1e3"], "invalid value '1e3'"),
        (
            vec!["--warmup-shots", "30", "--shots", "30"],
            "--warmup-shots 30 leaves no shot to measure: it must be less than --shots 30",
        ),
        (
            vec!["--round-interval-ns", "1000000000", "--shots", "100000"],
            "over at least 250 h: more than 24 h",
        ),
        (
            vec!["--round-interval-ns", "1000", "--cadence", "random-delayed"],
            "pace their rounds with --round-interval-ns",
        ),
    ] {
        let o = Command::new(BIN)
            .args(["bench", "--responder", &spec, "--no-plots"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // A cadence for rounds that are not a stream's is a warning, not a change.
    let o = Command::new(BIN)
        .args([
            "bench",
            "--responder",
            "echo",
            "--rounds",
            "100",
            "--round-interval-ns",
            "1000",
            "--json",
            "--no-plots",
            "-q",
            "--out-dir",
            &out_dir("echo-paced"),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("--round-interval-ns paces the rounds of stream: responders; ignored"));
}

/// stim's d = 3 memory with its block (two rounds an iteration) run `count` times.
fn long_model(count: u64, tag: &str) -> String {
    let text = std::fs::read_to_string(model()).unwrap();
    let p = std::path::Path::new(&out_dir(tag)).join("long.dem");
    std::fs::write(
        &p,
        text.replacen("repeat 2 {", &format!("repeat {count} {{"), 1),
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn a_hundred_thousand_round_model_streams_under_the_default_limits() {
    // 100,005 rounds: 15.7 M mechanisms expanded, past the default `mechanisms` bound; the
    // stream is built from a short copy of the model.
    let m = long_model(50_000, "long");
    let spec = format!("stream:{m}:matching");
    let o = bench(
        &["--responder", &spec, "--shots", "3", "--warmup-shots", "1"],
        "long",
    );
    let v = json(&o);
    let enq = &v["runs"][0];
    assert_eq!(enq["rounds_per_shot"], 100_005, "{enq}");
    assert_eq!(enq["completed"], 3 * 100_005, "{enq}");
    assert_eq!(enq["refused"], 0);
    assert_eq!(v["runs"][1]["completed"], 3);
    // The whole history would need the model expanded: refused before the run, naming the
    // bound.
    let o = bench(
        &["--responder", &spec, "--shots", "3", "--whole-history"],
        "long-whole",
    );
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--whole-history") && e.contains("(limit `"),
        "{e}"
    );
}
