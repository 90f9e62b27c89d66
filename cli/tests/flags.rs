//! Flags that were misreported or silently ignored: each error names the flag the user gave
//! (and its allowed range), each flag that does not apply is a one-line warning naming it, and
//! every numeric flag at its extremes is a one-line error or a run, never a panic.

mod common;

use std::process::Output;

use common::{backline, out_dir};

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `backline bench` of a short echo run with `extra` flags.
fn bench(tag: &str, extra: &[&str]) -> Output {
    let d = out_dir(tag);
    let mut args = vec![
        "bench",
        "--responder",
        "echo",
        "--rounds",
        "200",
        "--quiet",
        "--no-plots",
        "--no-baseline",
        "--out-dir",
        &d,
    ];
    args.extend_from_slice(extra);
    backline(&args)
}

/// A one-line error (status 2) that starts with `prefix` after `backline: error: `.
fn assert_error(o: &Output, prefix: &str) {
    let e = err(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with(&format!("backline: error: {prefix}")),
        "expected `{prefix}…`, got: {e}"
    );
}

/// A successful run that warned once, naming `flag`.
fn assert_warned(o: &Output, flag: &str) {
    let e = err(o);
    assert!(o.status.success(), "{e}");
    let warnings: Vec<&str> = e.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{e}");
    assert!(
        warnings[0].starts_with(&format!("backline: warning: {flag} ")),
        "{e}"
    );
}

#[test]
fn ring_depth_zero_is_named_as_itself() {
    assert_error(
        &bench("depth0", &["--ring-depth", "0"]),
        "--ring-depth 0: must be a power of two between 1 and 65536",
    );
    let o = backline(&["serve", "--transport", "udp", "--ring-depth", "0"]);
    assert_error(&o, "--ring-depth 0");
}

#[test]
fn timeout_zero_is_an_error_with_its_range() {
    for v in ["0", "3600001", "18446744073709551615"] {
        assert_error(
            &bench("timeout0", &["--timeout-ms", v]),
            &format!("--timeout-ms {v}: must be between 1 and 3600000"),
        );
    }
}

#[test]
fn device_on_memcpy_is_a_warning_naming_it() {
    assert_warned(&bench("device", &["--device", "rxe0"]), "--device");
}

#[test]
fn decoder_id_without_peer_is_a_warning_naming_it() {
    assert_warned(&bench("decoder-id", &["--decoder-id", "3"]), "--decoder-id");
}

#[test]
fn osd_order_with_osd0_is_a_warning_naming_it() {
    let d = out_dir("osd-order");
    let (h, s) = (format!("{d}/h.txt"), format!("{d}/s.txt"));
    std::fs::write(&h, "1 1 0\n0 1 1\n").unwrap();
    std::fs::write(&s, "10\n01\n").unwrap();
    let o = backline(&[
        "decode",
        "--checks",
        &h,
        "--syndromes",
        &s,
        "--error-rate",
        "0.1",
        "--osd-order",
        "3",
    ]);
    assert_warned(&o, "--osd-order");
    // With osd_cs it applies: no such warning (the order may still be clamped to the code).
    let o = backline(&[
        "decode",
        "--checks",
        &h,
        "--syndromes",
        &s,
        "--error-rate",
        "0.1",
        "--osd-method",
        "osd_cs",
        "--osd-order",
        "3",
    ]);
    assert!(
        o.status.success() && !err(&o).contains("applies to"),
        "{}",
        err(&o)
    );
}

#[test]
fn a_responder_pin_that_cannot_be_had_is_a_pin_error() {
    // A CPU far beyond any machine's affinity mask, below CPU_SETSIZE.
    for transport in ["memcpy", "shm"] {
        assert_error(
            &bench("pin", &["--transport", transport, "--pin", "0,1000"]),
            "--pin CTRL,RESP: the responder's CPU: ",
        );
    }
}

#[test]
fn serve_with_a_bad_pin_fails_before_ready() {
    let o = backline(&["serve", "--transport", "udp", "--pin", "1000"]);
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_error(&o, "--pin: the serving threads' CPU: ");
}

#[test]
fn seed_zero_names_the_seed() {
    assert_error(&bench("seed0", &["--seed", "0"]), "--seed 0: ");
}

#[test]
fn every_numeric_flag_at_its_extremes_is_an_error_naming_it_or_a_run() {
    let flags = [
        "--rounds",
        "--freq",
        "--span",
        "--seed",
        "--clock-mhz",
        "--payload-bytes",
        "--error-rate",
        "--in-flight",
        "--ring-depth",
        "--slot-bytes",
        "--spin-us",
        "--gpu-threads",
        "--timeout-ms",
    ];
    let values = ["0", "-1", "18446744073709551615", "1e300", "nan"];
    for flag in flags {
        for v in values {
            let arg = format!("{flag}={v}");
            let o = bench("extremes", &[&arg]);
            let e = err(&o);
            match o.status.code() {
                Some(0) => {}
                Some(2) => {
                    assert_eq!(e.lines().count(), 1, "{arg}: {e}");
                    assert!(
                        e.contains(flag),
                        "{arg}: the error does not name {flag}: {e}"
                    );
                }
                other => panic!("{arg}: exit {other:?}: {e}"),
            }
        }
    }
}

/// A 5,000-character shm name in `bench --peers` (or `--peer`): one line under 4 KB that
/// names the length limit and quotes the name once, cut to an excerpt.
#[test]
fn a_long_shm_name_is_quoted_once_as_an_excerpt_naming_the_limit() {
    let long = "a".repeat(5000);
    let peers = format!("shm:{long},shm:b");
    for args in [
        vec!["bench", "--peers", &peers, "--rounds", "10"],
        vec![
            "bench",
            "--transport",
            "shm",
            "--peer",
            &long,
            "--rounds",
            "10",
        ],
    ] {
        let o = backline(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.len() <= 4096, "{} bytes", err.len());
        assert!(err.contains("5000 characters: at most 200"), "{err}");
        assert!(!err.contains("use letters"), "{err}");
        // Quoted at most once, and then cut: no run of 200 `a`s.
        assert!(!err.contains(&"a".repeat(200)), "{err}");
    }
}
