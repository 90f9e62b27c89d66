//! `backline decode` as a user runs it: files in, corrections and one JSON object out, and
//! one-line errors naming the file and line for bad input. Code capacity (`--checks`) on
//! seeded surface-5 shots; circuit level (`--dem`) on the stim fixture of backline-decoders
//! (`decoders/tests/data/dem/`): predictions in both shot formats, logical errors counted
//! against the true flips, the same answers on any thread count, and every bad input of
//! issue 10.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use backline_decoders::codes::CssCode;
use backline_decoders::io::{MatrixFormat, save_matrix, write_dense};
use backline_decoders::noise::CodeCapacity;

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!(
            "backline-decoders-cli-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn backline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_backline"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Writes surface-5 checks (alist) and `shots` seeded syndromes; returns the errors.
fn setup(dir: &Dir, shots: usize) -> (CssCode, Vec<Vec<u8>>) {
    let code = CssCode::rotated_surface(5).unwrap();
    save_matrix(&dir.path("hz.alist"), &code.hz, MatrixFormat::Alist).unwrap();
    let mut noise = CodeCapacity::new(0.05, 3);
    let mut errors = Vec::new();
    let mut text = String::from("# surface-5 Z syndromes\n");
    for _ in 0..shots {
        let mut e = vec![0u8; code.n()];
        noise.sample(&mut e);
        let mut syn = vec![0u8; code.hz.rows()];
        code.hz.mul_bytes(&e, &mut syn);
        text.extend(syn.iter().map(|&b| (b'0' + b) as char));
        text.push('\n');
        errors.push(e);
    }
    std::fs::write(dir.path("syn.txt"), text).unwrap();
    (code, errors)
}

#[test]
fn decodes_a_file_and_prints_one_json_object() {
    let dir = Dir::new("ok");
    let (code, errors) = setup(&dir, 200);
    let out = dir.path("corr.txt");
    let o = backline(&[
        "decode",
        "--checks",
        s(&dir.path("hz.alist")),
        "--syndromes",
        s(&dir.path("syn.txt")),
        "--error-rate",
        "0.05",
        "--bp-method",
        "minimum_sum",
        "--ms-scaling-factor",
        "0.625",
        "--max-iter",
        "25",
        "--schedule",
        "parallel",
        "--osd-method",
        "osd_cs",
        "--osd-order",
        "7",
        "--output",
        s(&out),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "exactly one line: {stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "bp_converged_rate",
            "mean_ns",
            "median_ns",
            "p999_ns",
            "p99_ns",
            "shots",
            "throughput_per_s"
        ]
    );
    assert_eq!(v["shots"], 200);
    let rate = v["bp_converged_rate"].as_f64().unwrap();
    assert!(rate > 0.5 && rate <= 1.0, "{rate}");
    let (med, p99) = (
        v["median_ns"].as_f64().unwrap(),
        v["p99_ns"].as_f64().unwrap(),
    );
    assert!(med > 0.0 && med <= p99 && v["throughput_per_s"].as_f64().unwrap() > 0.0);

    // One correction per syndrome, in order; each reproduces its syndrome, and most leave no
    // logical error (p = 0.05 on a distance-5 code).
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), errors.len());
    let mut fails = 0;
    for (line, e) in lines.iter().zip(&errors) {
        let c: Vec<u8> = line.bytes().map(|b| b - b'0').collect();
        let (mut a, mut b) = (vec![0u8; code.hz.rows()], vec![0u8; code.hz.rows()]);
        code.hz.mul_bytes(&c, &mut a);
        code.hz.mul_bytes(e, &mut b);
        assert_eq!(a, b);
        let r: Vec<u8> = c.iter().zip(e).map(|(x, y)| x ^ y).collect();
        fails += code.is_logical_x_error(&r) as usize;
    }
    assert!(fails < 20, "{fails} logical failures in 200 shots");

    // Dense checks give the same corrections.
    std::fs::write(dir.path("hz.txt"), write_dense(&code.hz)).unwrap();
    let out2 = dir.path("corr2.txt");
    let o = backline(&[
        "decode",
        "--checks",
        s(&dir.path("hz.txt")),
        "--syndromes",
        s(&dir.path("syn.txt")),
        "--error-rate",
        "0.05",
        "--ms-scaling-factor",
        "0.625",
        "--max-iter",
        "25",
        "--osd-method",
        "osd_cs",
        "--osd-order",
        "7",
        "--output",
        s(&out2),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("200 shots"));
    assert_eq!(std::fs::read_to_string(&out2).unwrap(), text);
}

/// Runs a failing command; returns its single stderr line.
fn fails(args: &[&str]) -> String {
    let o = backline(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn bad_input_gives_one_line_errors_naming_file_and_line() {
    let dir = Dir::new("bad");
    setup(&dir, 5);
    let checks = dir.path("hz.alist");
    let syn = dir.path("syn.txt");
    let base = |extra: &[&'static str], checks: &Path, syn: &Path| -> Vec<String> {
        let mut v: Vec<String> = ["decode", "--checks", s(checks), "--syndromes", s(syn)]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let run = |v: Vec<String>| fails(&v.iter().map(String::as_str).collect::<Vec<_>>());

    // A syndrome of the wrong length (line 4 of the file: header comment + 2 good lines).
    let mut text = std::fs::read_to_string(&syn).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    text = format!("{}\n{}\n{}\n0101\n", lines[0], lines[1], lines[2]);
    let short = dir.path("short.txt");
    std::fs::write(&short, &text).unwrap();
    let e = run(base(&["--error-rate", "0.05"], &checks, &short));
    assert!(
        e.contains(&format!("{}:4: row has 4 bits, expected 12", s(&short))),
        "{e}"
    );

    // A character other than 0/1 in a syndrome.
    std::fs::write(&short, "000000000000\n0000002000000\n").unwrap();
    let e = run(base(&["--error-rate", "0.05"], &checks, &short));
    assert!(
        e.contains(&format!(
            "{}:2: column 7: unexpected character '2'",
            s(&short)
        )),
        "{e}"
    );

    // Ragged dense checks.
    let dense = dir.path("h.txt");
    std::fs::write(&dense, "1100\n0110\n011\n").unwrap();
    let e = run(base(&["--error-rate", "0.05"], &dense, &syn));
    assert!(
        e.contains(&format!("{}:3: row has 3 bits, expected 4", s(&dense))),
        "{e}"
    );

    // An alist whose counts disagree.
    let bad_alist = dir.path("bad.alist");
    let mut alist: Vec<String> = std::fs::read_to_string(&checks)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    alist[2] = "2 2 2".into();
    std::fs::write(&bad_alist, alist.join("\n")).unwrap();
    let e = run(base(&["--error-rate", "0.05"], &bad_alist, &syn));
    assert!(
        e.contains(&format!(
            "{}:3: the column weights: expected 25 values, found 3",
            s(&bad_alist)
        )),
        "{e}"
    );

    // Error rate outside (0, 0.5).
    let e = run(base(&["--error-rate", "0.7"], &checks, &syn));
    assert!(
        e.contains("--error-rate 0.7: error rate 0.7 is outside (0, 0.5)"),
        "{e}"
    );

    // OSD order above the free columns (25 − 12 = 13): clamped, with one warning.
    let o = backline(&[
        "decode",
        "--checks",
        s(&checks),
        "--syndromes",
        s(&syn),
        "--error-rate",
        "0.05",
        "--osd-method",
        "osd_cs",
        "--osd-order",
        "14",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("warning: --osd-order 14 is above the 13 free columns")
            && e.contains("using order 13"),
        "{e}"
    );

    // A missing file.
    let e = run(base(
        &["--error-rate", "0.05"],
        &dir.path("none.alist"),
        &syn,
    ));
    assert!(e.contains("none.alist"), "{e}");
}

// Circuit level (`--dem`).

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../decoders/tests/data/dem")
        .join(name)
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(stdout.lines().count(), 1, "exactly one line: {stdout}");
    serde_json::from_str(&stdout).unwrap()
}

const DEM: &str = "surface_d3_r8_p0.01.dem";

#[test]
fn decodes_shots_and_counts_logical_errors() {
    let dir = Dir::new("dem-ok");
    let dem = fixture(DEM);
    let dets = fixture("surface_d3_r8_p0.01.dets.b8");
    let obs = fixture("surface_d3_r8_p0.01.obs.01");
    for (decoder, extra) in [
        (
            "relay-bp",
            vec!["--stop-nconv", "1", "--gamma-dist-interval", "-0.24,0.66"],
        ),
        ("matching", vec![]),
        // An unannotated model: the Möbius decoder reads it as one colour (a matchable code).
        ("mobius", vec!["--correlations", "1"]),
        (
            "bposd",
            vec![
                "--max-iter",
                "30",
                "--ms-scaling-factor",
                "0.625",
                "--osd-method",
                "osd_cs",
                "--osd-order",
                "7",
            ],
        ),
    ] {
        let out01 = dir.path(&format!("{decoder}.01"));
        let outb8 = dir.path(&format!("{decoder}.b8"));
        let mut args = vec![
            "decode",
            "--dem",
            s(&dem),
            "--dets",
            s(&dets),
            "--obs",
            s(&obs),
            "--decoder",
            decoder,
            "--shots",
            "200",
            "--threads",
            "2",
            "--json",
            "--obs-out",
            s(&out01),
        ];
        args.extend(&extra);
        let v = json(&backline(&args));
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "batch_mean_ns",
                "converged_rate",
                "decoder",
                "detectors",
                "ler_high",
                "ler_low",
                "logical_error_rate",
                "logical_errors",
                "mean_ns",
                "mechanisms",
                "median_ns",
                "observables",
                "osd_order",
                "p999_ns",
                "p99_ns",
                "shots",
                "threads",
                "throughput_per_s"
            ]
        );
        assert_eq!(
            (v["shots"].as_u64(), v["detectors"].as_u64()),
            (Some(200), Some(64))
        );
        assert_eq!(v["decoder"], decoder);
        // The logical errors are the predictions that differ from the true flips.
        let pred = std::fs::read_to_string(&out01).unwrap();
        let truth = std::fs::read_to_string(&obs).unwrap();
        let wrong = pred
            .lines()
            .zip(truth.lines())
            .filter(|(a, b)| a != b)
            .count() as u64;
        assert_eq!(pred.lines().count(), 200);
        assert_eq!(v["logical_errors"].as_u64(), Some(wrong));
        let (lo, r, hi) = (
            v["ler_low"].as_f64().unwrap(),
            v["logical_error_rate"].as_f64().unwrap(),
            v["ler_high"].as_f64().unwrap(),
        );
        assert!(lo < r && r < hi && r < 0.15, "{lo} {r} {hi}");
        let tail = ["median_ns", "p99_ns", "p999_ns"].map(|k| v[k].as_f64().unwrap());
        assert!(tail[0] <= tail[1] && tail[1] <= tail[2], "{tail:?}");
        match decoder {
            "bposd" => assert_eq!(v["osd_order"], 7),
            _ => assert!(v["osd_order"].is_null()),
        }
        // One thread, b8 out: the same predictions.
        let mut args = vec![
            "decode",
            "--dem",
            s(&dem),
            "--dets",
            s(&dets),
            "--decoder",
            decoder,
            "--shots",
            "200",
            "--threads",
            "1",
            "--json",
            "--obs-out",
            s(&outb8),
        ];
        args.extend(&extra);
        let v = json(&backline(&args));
        assert!(v["logical_errors"].is_null());
        // One thread: the untimed pass's mean is there.
        assert!(v["batch_mean_ns"].as_f64().unwrap() > 0.0);
        let b8 = std::fs::read(&outb8).unwrap();
        assert_eq!(b8.len(), 200);
        let as01: String = b8.iter().map(|b| format!("{}\n", b & 1)).collect();
        assert_eq!(as01, pred);
    }
}

/// The d = 3 colour code (Steane's), X errors: red, green and blue Z plaquettes; L0 over
/// qubits 0, 1, 4.
const STEANE_COLOUR: &str = "detector(0, 0, 0, 3) D0\ndetector(1, 0, 0, 4) D1\n\
    detector(2, 0, 0, 5) D2\nerror(0.05) D0 L0\nerror(0.05) D0 D1 L0\nerror(0.05) D0 D1 D2\n\
    error(0.05) D0 D2\nerror(0.05) D1 L0\nerror(0.05) D1 D2\nerror(0.05) D2\n";

#[test]
fn decodes_a_colour_code_with_the_mobius_decoder_and_names_a_bad_annotation() {
    let dir = Dir::new("mobius");
    let dem = dir.path("steane.dem");
    std::fs::write(&dem, STEANE_COLOUR).unwrap();
    // Every single-qubit error, one shot each (qubit 0 … 6), and the flips they cause.
    let dets = dir.path("dets.01");
    std::fs::write(&dets, "100\n110\n111\n101\n010\n011\n001\n").unwrap();
    let obs = dir.path("obs.01");
    std::fs::write(&obs, "1\n1\n0\n0\n1\n0\n0\n").unwrap();
    let out = dir.path("pred.01");
    let v = json(&backline(&[
        "decode",
        "--dem",
        s(&dem),
        "--dets",
        s(&dets),
        "--obs",
        s(&obs),
        "--decoder",
        "mobius",
        "--json",
        "--obs-out",
        s(&out),
    ]));
    assert_eq!(v["logical_errors"].as_u64(), Some(0), "{v}");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&obs).unwrap()
    );
    // A 4th coordinate out of range: one line naming the detector.
    std::fs::write(&dem, STEANE_COLOUR.replace("(1, 0, 0, 4)", "(1, 0, 0, 9)")).unwrap();
    let e = fails(&[
        "decode",
        "--dem",
        s(&dem),
        "--dets",
        s(&dets),
        "--decoder",
        "mobius",
    ]);
    assert!(e.contains("D1") && e.contains("4th coordinate"), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = Dir::new("dem-bad");
    let dem = fixture(DEM);
    let dets = fixture("surface_d3_r8_p0.01.dets.b8");
    let write = |name: &str, text: &[u8]| {
        let p = dir.path(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let run = |dem: &Path, dets: &Path, extra: &[&str]| {
        let mut a = vec!["decode", "--dem", s(dem), "--dets", s(dets)];
        a.extend(extra);
        fails(&a)
    };
    for (text, want) in [
        (
            &b"error(0.1) D0\nerror(0.1) D0 D1\nflip(0.2) D1\n"[..],
            ":3: unknown instruction `flip`",
        ),
        (
            b"error(0.1) D0\nerror(1.2) D1\n",
            ":2: probability 1.2 is outside [0, 1]",
        ),
        (
            b"error(0.1) D0\nrepeat 3 {\nerror(0.1) D1\n",
            ":2: `repeat` block without its closing `}`",
        ),
    ] {
        let m = write("m.dem", text);
        let e = run(&m, &dets, &[]);
        assert!(e.contains(&format!("{}{want}", s(&m))), "{e}");
    }
    // Matching needs a graphlike model: the first part of three detectors is named.
    let m = write("hyper.dem", b"error(0.1) D0 D1\nerror(0.1) D0 D1 D2\n");
    let e = run(&m, &dets, &["--decoder", "matching"]);
    assert!(
        e.contains("hyper.dem:2: this error has a part that flips 3 detectors (D0 D1 D2)"),
        "{e}"
    );
    // A model whose detectors reach past the shots' width: the width does not match.
    let m = write("wide.dem", b"error(0.1) D0 D70\n");
    let e = run(&m, &fixture("surface_d3_r8_p0.01.dets.01"), &[]);
    assert!(
        e.contains("dets.01:1: shot has 64 bits, expected 71"),
        "{e}"
    );
    // b8 whose length is not a whole number of shots.
    let cut = write("cut.b8", &std::fs::read(&dets).unwrap()[..801]);
    let e = run(&dem, &cut, &[]);
    assert!(
        e.contains("801 bytes is not a whole number of 8-byte shots (64 bits each)"),
        "{e}"
    );
    // b8 data read as 01 by mistake: the flag is named.
    let e = run(&dem, &dets, &["--dets-format", "01"]);
    assert!(e.contains("--dets-format 01"), "{e}");
    // Relay-BP settings out of range, and settings of the other decoder.
    for (extra, want) in [
        (
            &["--decoder", "relay-bp", "--stop-nconv", "0"][..],
            "--stop-nconv: stop_nconv = 0: expected at least 1",
        ),
        (
            &["--decoder", "relay-bp", "--gamma-dist-interval", "0.5,0.1"],
            "low ≤ high",
        ),
        (
            &["--decoder", "relay-bp", "--gamma-dist-interval", "0.5"],
            "is not LO,HI",
        ),
        (
            &["--decoder", "relay-bp", "--pre-iter", "0"],
            "pre_iter = 0: expected at least 1",
        ),
        (
            &["--decoder", "relay-bp", "--gamma0", "nan"],
            "gamma0 = NaN",
        ),
        (
            &["--decoder", "relay-bp", "--osd-order", "3"],
            "--osd-order is a BP+OSD setting",
        ),
        (&["--gamma0", "0.2"], "--gamma0 is a Relay-BP setting"),
        (
            &["--decoder", "matching", "--max-iter", "3"],
            "--max-iter is a BP+OSD setting; --decoder matching takes --correlations",
        ),
        (&["--shots", "5000"], "--shots 5000"),
        (&["--error-rate", "0.1"], "--error-rate is for --checks"),
    ] {
        let e = run(&dem, &dets, extra);
        assert!(e.contains(want), "{extra:?}: {e}");
    }
    let e = fails(&["decode", "--dem", s(&dem)]);
    assert!(e.contains("--dem needs --dets"), "{e}");
    let e = fails(&[
        "decode",
        "--dem",
        s(&dem),
        "--checks",
        s(&dem),
        "--dets",
        s(&dets),
    ]);
    assert!(e.contains("cannot be used with"), "{e}");
    // Observable truth of the wrong width.
    let e = run(
        &dem,
        &dets,
        &["--obs", s(&fixture("surface_d3_r8_p0.01.dets.01"))],
    );
    assert!(e.contains("shot has 64 bits, expected 1"), "{e}");
}

#[test]
fn matching_refuses_probabilities_too_small_to_weigh() {
    let dir = Dir::new("dem-tiny");
    let dets = dir.path("shot.01");
    std::fs::write(&dets, "10\n").unwrap();
    let model = |p: &str| {
        let m = dir.path(&format!("tiny-{p}.dem"));
        let text = format!("error({p}) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1\n");
        std::fs::write(&m, text).unwrap();
        m
    };
    for p in ["1e-310", "5e-324"] {
        let m = model(p);
        let e = fails(&[
            "decode",
            "--dem",
            s(&m),
            "--dets",
            s(&dets),
            "--decoder",
            "matching",
        ]);
        assert!(
            e.contains(&format!(
                "{}:1: an error of probability {p} is too small to weigh",
                s(&m)
            )),
            "{e}"
        );
        assert!(e.len() < 4096, "{e}");
    }
    // The smallest normal probability weighs ≈ 708: matched, and right (D0 D1 + D1, no L0).
    let m = model("2.2250738585072014e-308");
    let out = dir.path("pred.01");
    let o = backline(&[
        "decode",
        "--dem",
        s(&m),
        "--dets",
        s(&dets),
        "--decoder",
        "matching",
        "--obs-out",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "0\n");
}

#[test]
fn correlations_are_a_flag_of_matching() {
    // D0 and D2 fired: only the split error D0 D1 ^ D2 explains D2, so with correlations
    // D0 D1 is likely and D0 D1 + D1 (no L0) beats D0 L0.
    let dir = Dir::new("dem-corr");
    let m = dir.path("corr.dem");
    std::fs::write(
        &m,
        "error(0.05) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1\nerror(0.09) D0 D1 ^ D2\n",
    )
    .unwrap();
    let dets = dir.path("shot.01");
    std::fs::write(&dets, "101\n").unwrap();
    let out = dir.path("pred.01");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "decode",
            "--dem",
            s(&m),
            "--dets",
            s(&dets),
            "--decoder",
            "matching",
            "--obs-out",
            s(&out),
        ];
        args.extend(extra);
        let o = backline(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(&out).unwrap()
    };
    assert_eq!(run(&[]), "1\n");
    assert_eq!(run(&["--correlations"]), "0\n");
    assert_eq!(run(&["--correlations", "1"]), "0\n");
    assert_eq!(run(&["--correlations", "0"]), "1\n");
    let e = fails(&[
        "decode",
        "--dem",
        s(&m),
        "--dets",
        s(&dets),
        "--decoder",
        "matching",
        "--correlations",
        "2",
    ]);
    assert!(
        e.contains("--correlations: correlations") && e.contains("0 or 1"),
        "{e}"
    );
    let e = fails(&[
        "decode",
        "--dem",
        s(&m),
        "--dets",
        s(&dets),
        "--decoder",
        "bposd",
        "--correlations",
    ]);
    assert!(
        e.contains("--correlations is a matching and Möbius (colour codes) setting"),
        "{e}"
    );
    // A model correlations cannot take: the line and why.
    std::fs::write(&m, "error(0.1) D0 D1\nerror(0.1) D1 ^ L0\n").unwrap();
    let e = fails(&[
        "decode",
        "--dem",
        s(&m),
        "--dets",
        s(&dets),
        "--decoder",
        "matching",
        "--correlations",
    ]);
    assert!(
        e.contains(":2: this error has a `^`-separated part that flips no detector"),
        "{e}"
    );
}
