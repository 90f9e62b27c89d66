//! Circuit-level inputs that cannot take the process down (issue 27): every case runs the
//! `backline` binary under a 4 GB address-space limit (`ulimit -v 4194304`, as a small machine
//! or a container would impose) and asserts that it ends — no abort, no panic, no hang — with a
//! one-line error of at most 4 KB on stderr that names the input and the bound. The inputs are
//! built here, at test time: a 689 KB model that names two billion targets, 100 MB of `a`, a
//! thousand threads, `u64::MAX` iterations, stim's observable files of a model without
//! observables.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_backline");

/// The address-space limit of every case, KiB.
const LIMIT_KB: u64 = 4 * 1024 * 1024;

/// The most a case may write to stderr.
const MAX_STDERR: usize = 4096;

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// What a limited run did.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    stderr_bytes: usize,
    took: Duration,
}

/// `backline ARGS` under `ulimit -v kb`, with `env`, killed (and failed) past `bound`.
fn limited_with(args: &[&str], env: &[(&str, &str)], kb: u64, bound: Duration) -> Run {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {kb} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t0 = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running after {bound:?} (a hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t0.elapsed();
    let err = reader.join().unwrap();
    let out = out_reader.join().unwrap();
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err[..err.len().min(8192)]).into_owned(),
        stderr_bytes: err.len(),
        took,
    }
}

fn limited(args: &[&str]) -> Run {
    limited_with(args, &[], LIMIT_KB, Duration::from_secs(30))
}

/// A bad input: exit 2 after one short line naming `needle`; no abort (134), no panic (101).
fn refused(r: &Run, needle: &str) {
    assert_eq!(r.code, Some(2), "exit {:?}: {}", r.code, r.stderr);
    assert!(
        r.stderr_bytes <= MAX_STDERR,
        "{} bytes on stderr",
        r.stderr_bytes
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "expected `{needle}` in: {}",
        r.stderr
    );
}

/// `repeat 20000 { error(0.1) D0 … D99999  shift_detectors 1 }`: 689 KB.
fn huge_targets_model() -> String {
    let mut t = String::from("repeat 20000 {\n    error(0.1)");
    for d in 0..100_000 {
        t.push_str(&format!(" D{d}"));
    }
    t.push_str("\n    shift_detectors 1\n}\n");
    t
}

/// A tiny model (two detectors, one observable) and three shots of it in `01`.
fn tiny(dir: &Dir) -> (PathBuf, PathBuf) {
    let dem = dir.write(
        "tiny.dem",
        "error(0.1) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1\n",
    );
    let dets = dir.write("tiny.01", "10\n11\n00\n");
    (dem, dets)
}

#[test]
fn defect1_a_small_model_that_expands_to_billions_of_targets_is_refused_at_its_line() {
    let dir = Dir::new("d1");
    let (_, dets) = tiny(&dir);
    let text = huge_targets_model();
    assert!(text.len() < 700_000);
    let big = dir.write("big.dem", &text);
    let r = limited(&["decode", "--dem", s(&big), "--dets", s(&dets)]);
    refused(
        &r,
        &format!(
            "{}:2: the model expands to more than 16777216 targets (limit `targets`; \
             BACKLINE_DEM_LIMITS=targets=N raises it)",
            s(&big)
        ),
    );
    assert!(r.took < Duration::from_secs(5), "{:?}", r.took);
    // 100,000 coordinates on a detector, 20,000 times.
    let coords = vec!["0.5"; 100_000].join(", ");
    let c = dir.write(
        "coords.dem",
        format!("repeat 20000 {{\n detector({coords}) D0\n shift_detectors 1\n}}\n"),
    );
    let r = limited(&["decode", "--dem", s(&c), "--dets", s(&dets)]);
    refused(
        &r,
        &format!(
            "{}:2: the model expands to more than 16777216 coordinates",
            s(&c)
        ),
    );
    // The bound is the user's to move: --dem-limits, or the variable every front end reads.
    let r = limited(&[
        "decode",
        "--dem",
        s(&big),
        "--dets",
        s(&dets),
        "--dem-limits",
        "targets=1000",
    ]);
    refused(&r, "big.dem:2: the model expands to more than 1000 targets");
    let r = limited_with(
        &["decode", "--dem", s(&big), "--dets", s(&dets)],
        &[("BACKLINE_DEM_LIMITS", "targets=5000")],
        LIMIT_KB,
        Duration::from_secs(30),
    );
    refused(&r, "more than 5000 targets");
    let r = limited(&[
        "decode",
        "--dem",
        s(&big),
        "--dets",
        s(&dets),
        "--dem-limits",
        "tagrets=5",
    ]);
    refused(
        &r,
        "unknown setting `tagrets` (expected one of targets, coords, mechanisms, detectors)",
    );
    // A model inside the bounds still decodes.
    let (dem, dets) = tiny(&dir);
    let r = limited(&["decode", "--dem", s(&dem), "--dets", s(&dets), "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn defect2_an_error_quotes_an_excerpt_of_its_input() {
    let dir = Dir::new("d2");
    let (_, dets) = tiny(&dir);
    // 100 MB of `a`: one unknown instruction.
    let a = dir.write("a.dem", vec![b'a'; 100_000_000]);
    let r = limited(&["decode", "--dem", s(&a), "--dets", s(&dets)]);
    refused(
        &r,
        &format!("{}:1: unknown instruction `{}…`", s(&a), "a".repeat(80)),
    );
    // The same model behind a stream: responder of the bench.
    let r = limited(&[
        "bench",
        "--responder",
        &format!("stream:{}", s(&a)),
        "--shots",
        "1",
        "--no-plots",
    ]);
    refused(&r, "unknown instruction `aaaa");
    // Flags that echo their value: a 100,000-character one is cut.
    let long = "7".repeat(100_000);
    for flag in [
        "--max-iter",
        "--threads",
        "--gamma-dist-interval",
        "--dets-format",
    ] {
        let mut args = vec!["decode", "--dem", s(&a), "--dets", s(&dets), flag, &long];
        if flag == "--gamma-dist-interval" {
            args.extend(["--decoder", "relay-bp"]);
        }
        let r = limited(&args);
        // clap quotes its own flags' values in '…', the decoder registry's settings in `…`.
        let quote = if ["--max-iter", "--gamma-dist-interval"].contains(&flag) {
            '`'
        } else {
            '\''
        };
        refused(&r, &format!("{quote}{}…", "7".repeat(80)));
    }
    // Specs and addresses quoted in the other commands' errors.
    let cut = format!("{}…", "7".repeat(80));
    let stream_long = format!("stream:{long}");
    let fn_long = format!("0={long}");
    let udp_long = format!("udp:{long}");
    let lib_long = format!("0=/tmp/{long}:symbol");
    for args in [
        vec![
            "bench",
            "--responder",
            &long,
            "--rounds",
            "10",
            "--no-plots",
        ],
        vec![
            "bench",
            "--responder",
            &stream_long,
            "--shots",
            "1",
            "--no-plots",
        ],
        vec![
            "serve",
            "--transport",
            "udp",
            "--bind",
            "127.0.0.1:0",
            "--fn",
            &fn_long,
        ],
        vec![
            "serve",
            "--transport",
            "udp",
            "--bind",
            "127.0.0.1:0",
            "--fn",
            &lib_long,
        ],
        vec!["sim", "--rounds", "1", "--responder", &long],
        vec!["sim", "--rounds", "1", "--coprocessor", &udp_long],
    ] {
        let r = limited(&args);
        assert!(
            r.stderr_bytes <= MAX_STDERR,
            "{:?}: {} bytes",
            &args[..2],
            r.stderr_bytes
        );
        if !r.stderr.contains("built without Verilator") {
            refused(&r, &cut[cut.len() - 6..]);
        }
    }
}

#[test]
fn defect3_threads_past_the_bound_and_threads_the_system_refuses_are_errors() {
    let dir = Dir::new("d3");
    let (dem, _) = tiny(&dir);
    // 2,000 shots, so that a thousand threads each get some.
    let dets = dir.write("many.01", "10\n".repeat(2_000));
    let r = limited(&[
        "decode",
        "--dem",
        s(&dem),
        "--dets",
        s(&dets),
        "--threads",
        "100000",
    ]);
    refused(
        &r,
        "invalid value '100000' for '--threads <THREADS>': expected an integer in 0..=1024",
    );
    // 1,024 threads of 2 MiB stacks in a 1 GB address space: the system refuses some.
    let r = limited_with(
        &[
            "decode",
            "--dem",
            s(&dem),
            "--dets",
            s(&dets),
            "--threads",
            "1024",
        ],
        &[],
        1024 * 1024,
        Duration::from_secs(30),
    );
    refused(&r, "cannot start decoding thread ");
    assert!(r.stderr.contains(" of 1024: "), "{}", r.stderr);
}

#[test]
fn defect4_iteration_limits_have_upper_bounds() {
    let dir = Dir::new("d4");
    let (dem, dets) = tiny(&dir);
    let max = u64::MAX.to_string();
    for (flags, needle) in [
        (
            vec!["--max-iter", max.as_str()],
            "--max-iter: max_iter: `18446744073709551615` is not a non-negative integer in 0..=1048576",
        ),
        (
            vec!["--decoder", "relay-bp", "--set-max-iter", max.as_str()],
            "--set-max-iter: set_max_iter = 18446744073709552000: expected at most 1048576",
        ),
        (
            vec![
                "--decoder",
                "relay-bp",
                "--num-sets",
                "1048576",
                "--set-max-iter",
                "2",
            ],
            "legs' iterations together) at most 1048576",
        ),
        (
            vec!["--warmup", max.as_str()],
            "expected an integer in 0..=1000000",
        ),
        (
            vec!["--osd-order", "100000"],
            "--osd-order: osd_order: `100000` is not a non-negative integer in 0..=1024",
        ),
    ] {
        let mut a = vec!["decode", "--dem", s(&dem), "--dets", s(&dets)];
        a.extend(flags);
        refused(&limited(&a), needle);
    }
    // The stream: setting, through the bench.
    let stream = dir.write(
        "rep.dem",
        "repeat 2 {\n error(0.05) D0 L0\n error(0.05) D0 D1\n error(0.05) D1\n \
         error(0.02) D0 D2\n error(0.02) D1 D3\n detector(0, 0) D0\n detector(1, 0) D1\n \
         shift_detectors(0, 1) 2\n}\nerror(0.05) D0 L0\nerror(0.05) D0 D1\nerror(0.05) D1\n\
         detector(0, 0) D0\ndetector(1, 0) D1\n",
    );
    let r = limited(&[
        "bench",
        "--responder",
        &format!("stream:{}:bposd:max_iter={max}", s(&stream)),
        "--shots",
        "1",
        "--no-plots",
    ]);
    refused(
        &r,
        "max_iter: `18446744073709551615` is not a non-negative integer in 0..=1048576",
    );
    // The help gives the ranges.
    let o = Command::new(BIN)
        .args(["decode", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    for range in ["0..=1048576", "0..=1024", "0..=1000000", "targets=N"] {
        assert!(help.contains(range), "--help lacks {range}");
    }
}

#[test]
fn defect5_a_model_without_observables_reads_and_writes_stims_observable_files() {
    let dir = Dir::new("d5");
    let dem = dir.write(
        "noobs.dem",
        "error(0.1) D0\nerror(0.1) D0 D1\nerror(0.1) D1\n",
    );
    let dets = dir.write("d.01", "10\n11\n00\n");
    // What stim writes for three shots of zero observables: an empty line each in 01,
    // nothing in b8.
    let obs01 = dir.write("o.01", "\n\n\n");
    let obsb8 = dir.write("o.b8", "");
    for obs in [&obs01, &obsb8] {
        let out = dir
            .0
            .join(format!("pred{}", if obs == &obs01 { ".01" } else { ".b8" }));
        let r = limited(&[
            "decode",
            "--dem",
            s(&dem),
            "--dets",
            s(&dets),
            "--obs",
            s(obs),
            "--obs-out",
            s(&out),
            "--json",
        ]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let j: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
        assert_eq!(
            (j["shots"].as_u64(), j["logical_errors"].as_u64()),
            (Some(3), Some(0))
        );
        assert_eq!(j["observables"], 0);
        let written = std::fs::read(&out).unwrap();
        if obs == &obs01 {
            assert_eq!(
                written, b"\n\n\n",
                "one empty line per shot, as stim writes"
            );
        } else {
            assert!(written.is_empty());
        }
    }
    // Too few empty lines is a mismatch of the files, as for any width.
    let short = dir.write("short.01", "\n\n");
    let r = limited(&[
        "decode",
        "--dem",
        s(&dem),
        "--dets",
        s(&dets),
        "--obs",
        s(&short),
    ]);
    refused(&r, "holds 2 shots");
}

/// A `backline serve --protocol cuqr` (NVIDIA's realtime RPC over udp) on an ephemeral port:
/// the child and its address. Killed on drop.
struct CuqrServer(std::process::Child, String);

impl CuqrServer {
    fn start(model: &Path) -> CuqrServer {
        use std::io::BufRead as _;
        let mut child = Command::new(BIN)
            .args([
                "serve",
                "--transport",
                "udp",
                "--protocol",
                "cuqr",
                "--bind",
                "127.0.0.1:0",
            ])
            .arg("--responder")
            .arg(format!("stream:{}", s(model)))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let peer = line
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("no ready line: {line:?}"))
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        CuqrServer(child, peer)
    }
}

impl Drop for CuqrServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn defect8_sim_and_bench_pointed_at_a_cuqr_server_say_so_at_once() {
    let dir = Dir::new("d8");
    let model = dir.write(
        "rep.dem",
        "repeat 2 {\n error(0.05) D0 L0\n error(0.05) D0 D1\n error(0.05) D1\n \
         error(0.02) D0 D2\n error(0.02) D1 D3\n detector(0, 0) D0\n detector(1, 0) D1\n \
         shift_detectors(0, 1) 2\n}\nerror(0.05) D0 L0\nerror(0.05) D0 D1\nerror(0.05) D1\n\
         detector(0, 0) D0\ndetector(1, 0) D1\n",
    );
    let srv = CuqrServer::start(&model);
    let want = format!(
        "udp:{} answered our {{}} with a CUQR response (status bad_request): it is a CUQR \
         server (NVIDIA's realtime RPC), not a backline coprocessor",
        srv.1
    );
    // The bench measures the floor first: its ping is answered by the same bad_request.
    let r = limited(&[
        "bench",
        "--transport",
        "udp",
        "--peer",
        &srv.1,
        "--rounds",
        "10",
        "--no-plots",
    ]);
    refused(&r, &want.replace("{}", "floor ping"));
    assert!(r.took < Duration::from_secs(1), "{:?}", r.took);
    let v = Command::new(BIN).arg("--version").output().unwrap();
    if String::from_utf8_lossy(&v.stdout).contains("built without Verilator") {
        eprintln!("skipped the sim half: built without Verilator");
        return;
    }
    let r = limited(&[
        "sim",
        "--rounds",
        "10",
        "--coprocessor",
        &format!("udp:{}", srv.1),
    ]);
    refused(&r, &want.replace("{}", "hello"));
    assert!(r.took < Duration::from_secs(1), "{:?}", r.took);
}

/// Issue 39, case 1: a 23-byte model naming detector 11,100,000 is refused by the `detectors`
/// bound before anything is built for it (it aborted on 3.6 GB in matching); the bound is the
/// user's to move, and is carried through `shift_detectors` inside `repeat`.
#[test]
fn issue39_1_a_tiny_model_naming_a_huge_detector_is_refused_by_the_detectors_bound() {
    let dir = Dir::new("i39-1");
    let dets = dir.write("one.01", "1\n");
    let big = dir.write("big.dem", "error(0.125) D11100000\n");
    assert_eq!(std::fs::metadata(&big).unwrap().len(), 23);
    let want = |file: &Path, line: usize| {
        format!(
            "{}:{line}: the model expands to more than 4194304 detectors (limit `detectors`; \
             BACKLINE_DEM_LIMITS=detectors=N raises it)",
            s(file)
        )
    };
    for decoder in ["matching", "bposd", "relay-bp"] {
        let r = limited(&[
            "decode",
            "--dem",
            s(&big),
            "--dets",
            s(&dets),
            "--decoder",
            decoder,
        ]);
        refused(&r, &want(&big, 1));
        assert!(r.took < Duration::from_secs(2), "{decoder}: {:?}", r.took);
    }
    let decl = dir.write("decl.dem", "error(0.1) D0\ndetector D16000000\n");
    let r = limited(&["decode", "--dem", s(&decl), "--dets", s(&dets)]);
    refused(&r, &want(&decl, 2));
    // Through shifts inside repeats: the last iteration's offset is 5,000,000.
    let shifted = dir.write(
        "shifted.dem",
        "repeat 1000 {\n    repeat 5 {\n        shift_detectors 1000\n    }\n    error(0.1) D0\n}\n",
    );
    let r = limited(&["decode", "--dem", s(&shifted), "--dets", s(&dets)]);
    refused(&r, &want(&shifted, 5));
    // The user's bound, both ways.
    let r = limited(&[
        "decode",
        "--dem",
        s(&shifted),
        "--dets",
        s(&dets),
        "--dem-limits",
        "detectors=100",
    ]);
    refused(&r, "more than 100 detectors");
    // Raised past what the address space holds, matching says so before building (it
    // aborted on 3.6 GB).
    let mut shot = "0".repeat(11_100_000);
    shot.push_str("1\n");
    let big_dets = dir.write("big.01", &shot);
    let r = limited(&[
        "decode",
        "--dem",
        s(&big),
        "--dets",
        s(&big_dets),
        "--decoder",
        "matching",
        "--dem-limits",
        "detectors=16777216",
    ]);
    refused(
        &r,
        "a matching graph of 11100002 nodes and 1 edges needs about",
    );
}

/// Issue 39, case 2: BP+OSD on a model of 11.1 M detectors (the bound raised) answers within
/// the address-space limit; OSD's basis is sized by the rank it reaches, not `m × m` bits (it
/// asked for 15 TB and aborted).
#[test]
fn issue39_2_osd_on_a_tall_model_answers_within_the_limit() {
    let dir = Dir::new("i39-2");
    let big = dir.write("big.dem", "error(0.125) D11100000 L0\n");
    let mut shot = "0".repeat(11_100_000);
    shot.push_str("1\n");
    let dets = dir.write("big.01", &shot);
    let out = dir.0.join("obs.01");
    let r = limited_with(
        &[
            "decode",
            "--dem",
            s(&big),
            "--dets",
            s(&dets),
            "--decoder",
            "bposd",
            "--obs-out",
            s(&out),
        ],
        &[("BACKLINE_DEM_LIMITS", "detectors=16777216")],
        LIMIT_KB,
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The one mechanism explains the event, and flips the observable.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "1\n");
}

/// Issue 39, case 7: 4,096 streams of one model start under the address-space limit (each
/// reserved 1 MiB of exact latency figures: 4 GiB before any shot) and decode — in the
/// one-window form, which the targets bound did not count; the reporter's spec, windowed by
/// the real-time default, is refused by that bound with one line.
#[test]
fn issue39_7_four_thousand_streams_start_under_the_limit() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../decoders/tests/data/dem/surface_d3_r8_p0.01.dem");
    let dir = Dir::new("i39-7");
    let run = |spec: &str| {
        limited(&[
            "bench",
            "--shots",
            "10",
            "--responder",
            spec,
            "--no-plots",
            "--json",
            "-q",
            "--out-dir",
            s(&dir.0),
        ])
    };
    // The model's 9 rounds in one window.
    let r = run(&format!(
        "stream:{}:matching:window=9;streams=4096",
        model.display()
    ));
    assert_eq!(r.code, Some(0), "{}", &r.stderr[..r.stderr.len().min(2000)]);
    assert!(!r.stderr.contains("panicked"));
    assert!(r.stdout.trim_start().starts_with('{'), "{}", r.stdout);
    let r = run(&format!("stream:{}:matching:streams=4096", model.display()));
    refused(
        &r,
        "streams = 4096: the streams' decoders hold more than 16777216 targets",
    );
}

/// Issue 39, case 12: a detection event that no error of the model can explain (the only
/// mechanism has p = 0) is an error for every decoder, not "nothing flipped" (PyMatching:
/// "No perfect matching could be found").
#[test]
fn issue39_12_an_event_no_error_explains_is_an_error() {
    let dir = Dir::new("i39-12");
    let dem = dir.write("zero.dem", "error(0) D0 L0\n");
    let dets = dir.write("one.01", "1\n");
    for decoder in ["matching", "bposd", "relay-bp"] {
        let r = limited(&[
            "decode",
            "--dem",
            s(&dem),
            "--dets",
            s(&dets),
            "--decoder",
            decoder,
        ]);
        assert_eq!(
            r.code,
            Some(2),
            "{decoder}: exit {:?}: {}",
            r.code,
            r.stderr
        );
        assert!(
            r.stderr
                .contains("detector D0 fired, and no error of the model"),
            "{decoder}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    // A shot without events is still answered (sinter's contract for such a model).
    let quiet = dir.write("zero.01", "0\n");
    let out = dir.0.join("obs.01");
    let r = limited(&[
        "decode",
        "--dem",
        s(&dem),
        "--dets",
        s(&quiet),
        "--obs-out",
        s(&out),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "0\n");
}
