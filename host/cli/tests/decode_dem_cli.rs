//! `backline decode --dem` as a user runs it, on the stim fixture of backline-decode
//! (`host/decode/tests/data/dem/`): predictions in both shot formats, logical errors counted
//! against the true flips, the same answers on any thread count, and one-line errors for every
//! bad input of the issue.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../decode/tests/data/dem")
        .join(name)
}

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("backline-dem-cli-{tag}-{}", std::process::id()));
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

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(stdout.lines().count(), 1, "exactly one line: {stdout}");
    serde_json::from_str(&stdout).unwrap()
}

const DEM: &str = "surface_d3_r8_p0.01.dem";

#[test]
fn decodes_shots_and_counts_logical_errors() {
    let dir = Dir::new("ok");
    let dem = fixture(DEM);
    let dets = fixture("surface_d3_r8_p0.01.dets.b8");
    let obs = fixture("surface_d3_r8_p0.01.obs.01");
    for (decoder, extra) in [
        (
            "relay-bp",
            vec!["--stop-nconv", "1", "--gamma-dist-interval", "-0.24,0.66"],
        ),
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
        assert!(v["median_ns"].as_f64().unwrap() <= v["p99_ns"].as_f64().unwrap());
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
        let b8 = std::fs::read(&outb8).unwrap();
        assert_eq!(b8.len(), 200);
        let as01: String = b8.iter().map(|b| format!("{}\n", b & 1)).collect();
        assert_eq!(as01, pred);
    }
}

fn fails(args: &[&str]) -> String {
    let o = backline(args);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let e = String::from_utf8(o.stderr).unwrap();
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    e
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = Dir::new("bad");
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
        (b"# nothing\n", ": the model has no error mechanisms"),
        (
            b"error(0.1) D0\nrepeat 3 {\nerror(0.1) D1\n",
            ":2: `repeat` block without its closing `}`",
        ),
    ] {
        let m = write("m.dem", text);
        let e = run(&m, &dets, &[]);
        assert!(e.contains(&format!("{}{want}", s(&m))), "{e}");
    }
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
