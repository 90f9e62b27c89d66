//! Regression tests of the defects a hostile test of the tree found: a BP panic on checks whose
//! columns all have weight ≤ 1, a capacity-overflow panic for `bb:100000,100000,1,1`, an abort
//! on the 62 GB allocation of `surface1000`, and an alist header whose dimensions would not fit
//! in memory. Each is now a typed error or a correct decode.

use backline_decoders::bitmat::{BitMatrix, MAX_DENSE_BITS};
use backline_decoders::codes::{CodeError, CssCode, Polynomial};
use backline_decoders::io::{ParseErrorKind, read_alist};
use backline_decoders::{BpMethod, BpOsdConfig, BpOsdDecoder, OsdMethod, Schedule};

/// Every BP method, schedule and OSD method on `h`, over every syndrome of its rows (up to
/// 2^8): decoding returns, and a correction that claims convergence reproduces the syndrome.
fn decode_everything(h: &BitMatrix) {
    for bp_method in [BpMethod::MinimumSum, BpMethod::ProductSum] {
        for schedule in [Schedule::Parallel, Schedule::Serial] {
            for (osd_method, osd_order) in [
                (OsdMethod::Off, 0),
                (OsdMethod::Osd0, 0),
                (OsdMethod::OsdCs, 4),
            ] {
                let config = BpOsdConfig {
                    error_rate: 0.1,
                    bp_method,
                    schedule,
                    osd_method,
                    osd_order,
                    max_iter: 5,
                    ..BpOsdConfig::default()
                };
                let mut dec = BpOsdDecoder::new(h, &config)
                    .unwrap_or_else(|e| panic!("{config:?} on\n{}: {e}", h.to_picture()));
                let m = h.rows().min(8);
                let mut c = vec![0u8; h.cols()];
                let mut check = vec![0u8; h.rows()];
                for bits in 0..1u32 << m {
                    let s: Vec<u8> = (0..h.rows()).map(|i| ((bits >> i) & 1) as u8).collect();
                    let info = dec.decode(&s, &mut c).unwrap();
                    h.mul_bytes(&c, &mut check);
                    if info.converged {
                        assert_eq!(check, s, "{config:?}: converged but wrong");
                    }
                }
            }
        }
    }
}

#[test]
fn checks_whose_columns_have_weight_at_most_one_decode() {
    for picture in [
        // The identity: every column of weight 1.
        "1..\n.1.\n..1",
        // Weight-1 and weight-0 columns only.
        "1..1\n.1..\n....",
        // A single check on a single bit; and one on no bit at all.
        "1",
        "..",
        // One column of weight 2 among weight-0 columns (BP's degree-1 checks).
        "1..\n1..",
    ] {
        decode_everything(&BitMatrix::from_picture(picture).unwrap());
    }
}

#[test]
fn codes_too_large_to_hold_are_errors_not_aborts() {
    for name in [
        "surface1000",
        "surface4294967296",
        "bb:100000,100000,1,1",
        "bb:4294967296,4294967296,x,y",
    ] {
        match CssCode::by_name(name) {
            Err(CodeError::TooLarge { source, .. }) => {
                assert!(!source.out_of_memory, "{name}: refused before allocating");
                let msg = CodeError::TooLarge {
                    code: name.into(),
                    source,
                }
                .to_string();
                assert!(msg.contains("too large") && msg.contains(name), "{msg}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // The largest sizes still allowed are built (and a bb code with huge exponents reduces
    // them instead of overflowing).
    assert_eq!(CssCode::by_name("surface31").unwrap().n(), 961);
    let p: Polynomial = "x^18446744073709551615+y".parse().unwrap();
    assert_eq!(p.try_matrix(3, 3).unwrap().count_ones(), 18);
}

#[test]
fn an_alist_whose_header_would_not_fit_is_refused() {
    // 70000 columns and rows: 4.9e9 bits, more than MAX_DENSE_BITS, each of weight 1.
    let n = 70_000usize;
    assert!((n as u64) * (n as u64) > MAX_DENSE_BITS);
    let mut text = format!("{n} {n}\n1 1\n");
    let ones = vec!["1"; n].join(" ");
    text.push_str(&ones);
    text.push('\n');
    text.push_str(&ones);
    text.push('\n');
    let e = read_alist(&text, "huge.alist").unwrap_err();
    assert!(matches!(e.kind, ParseErrorKind::TooLarge(_)), "{e}");
    assert!(e.to_string().starts_with("huge.alist:1: "), "{e}");
}

#[test]
fn try_zeros_checks_before_allocating() {
    assert!(BitMatrix::try_zeros(1 << 20, 1 << 20).is_err());
    assert!(BitMatrix::try_zeros(usize::MAX, usize::MAX).is_err());
    assert_eq!(BitMatrix::try_zeros(3, 70).unwrap().rows(), 3);
    assert!(BitMatrix::try_zeros(0, usize::MAX).is_ok());
}

#[test]
fn a_model_with_an_infinite_number_is_refused_with_its_line() {
    use backline_decoders::dem::DetectorErrorModel;
    for text in [
        "error(1e999) D0\n",
        "error(0.1) D0\ndetector(0, 1e999) D0\n",
        "error(0.1) D0 L0\nshift_detectors(-1e400) 0\n",
    ] {
        let e = DetectorErrorModel::parse(text, "inf.dem")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("inf.dem:") && e.contains("not a finite number"),
            "{text}: {e}"
        );
    }
}

#[test]
fn an_endless_file_is_an_error_not_a_hang() {
    use backline_decoders::io::{MAX_FILE_BYTES, load_matrix};
    // /dev/zero never ends: the reader stops at its cap.
    let e = load_matrix(std::path::Path::new("/dev/zero"), None).unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("larger than {} MiB", MAX_FILE_BYTES >> 20)),
        "{e}"
    );
}

// Issue 27: circuit-level inputs that cannot take the process down.

use backline_decoders::dem::{DemErrorKind, DemLimits, DetectorErrorModel};

/// `repeat 20000 { error(0.1) D0 … D99999  shift_detectors 1 }`: 689 KB of text, two billion
/// targets once unrolled (it aborted `decode --dem` after 14 s and 13 GB).
pub fn huge_targets_model() -> String {
    let mut t = String::from("repeat 20000 {\n    error(0.1)");
    for d in 0..100_000 {
        t.push_str(&format!(" D{d}"));
    }
    t.push_str("\n    shift_detectors 1\n}\n");
    t
}

#[test]
fn a_small_model_that_expands_past_the_bounds_is_refused_at_its_line() {
    let text = huge_targets_model();
    assert!(text.len() < 700_000, "{}", text.len());
    let t0 = std::time::Instant::now();
    let e = DetectorErrorModel::parse(&text, "big.dem").unwrap_err();
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(e.line, 2, "{e}");
    assert_eq!(
        e.kind,
        DemErrorKind::Limit {
            what: "targets",
            key: "targets",
            limit: 1 << 24
        }
    );
    assert_eq!(
        e.to_string(),
        "big.dem:2: the model expands to more than 16777216 targets (limit `targets`; \
         BACKLINE_DEM_LIMITS=targets=N raises it)"
    );
    // 100,000 coordinates on one detector, 20,000 times: 2e9 coordinates.
    let coords = vec!["0.5"; 100_000].join(", ");
    let text = format!("repeat 20000 {{\n detector({coords}) D0\n shift_detectors 1\n}}\n");
    let e = DetectorErrorModel::parse(&text, "c.dem").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(
        matches!(e.kind, DemErrorKind::Limit { key: "coords", .. }),
        "{e}"
    );
    // Mechanisms: 5,000,000 executed `error` instructions.
    let text = "repeat 5000000 {\n error(0.1) D0\n}\n";
    let e = DetectorErrorModel::parse(text, "m.dem").unwrap_err();
    assert!(
        matches!(e.kind, DemErrorKind::Limit { key: "mechanisms", limit, .. } if limit == 1 << 22),
        "{e}"
    );
    assert_eq!(e.line, 2);
}

#[test]
fn the_bounds_count_the_text_before_storing_it_and_are_overridable() {
    // One line of 17 million targets: refused while the line is read.
    let line = format!("error(0.1){}\n", " D0".repeat(17_000_000));
    let e = DetectorErrorModel::parse(&line, "line.dem").unwrap_err();
    assert!(
        matches!(e.kind, DemErrorKind::Limit { key: "targets", .. }),
        "{e}"
    );
    assert_eq!(e.line, 1);
    // Bare instructions count one each: 2,000 of them past a bound of 1,000.
    let small = DemLimits {
        targets: 1_000,
        ..DemLimits::DEFAULT
    };
    let text = format!("error(0.1) D0\n{}", "logical_observable\n".repeat(2_000));
    let e = DetectorErrorModel::parse_with(&text, "bare.dem", &small).unwrap_err();
    assert_eq!(
        (e.line, e.to_string().contains("more than 1000 targets")),
        (1000, true),
        "{e}"
    );
    // A model inside the defaults but past tighter bounds, and the other way round.
    let text = "repeat 100 {\n error(0.1) D0 D1\n shift_detectors 1\n}\n";
    assert!(DetectorErrorModel::parse(text, "ok.dem").is_ok());
    let tight = DemLimits::parse("targets=200; mechanisms=1000").unwrap();
    assert_eq!(tight.targets, 200);
    let e = DetectorErrorModel::parse_with(text, "ok.dem", &tight).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("ok.dem:3: the model expands to more than 200"),
        "{e}"
    );
    let tight = DemLimits::parse("mechanisms=50").unwrap();
    let e = DetectorErrorModel::parse_with(text, "ok.dem", &tight).unwrap_err();
    assert!(e.to_string().contains("more than 50 mechanisms"), "{e}");
    // Bad bounds say what is wrong.
    for (spec, want) in [
        ("targets=0", "targets: `0` is not a positive integer"),
        ("flavour=3", "unknown setting `flavour`"),
        ("targets", "`targets` is not key=N"),
        ("coords=-1", "coords: `-1`"),
    ] {
        let e = DemLimits::parse(spec).unwrap_err().to_string();
        assert!(e.contains(want), "{spec}: {e}");
    }
}

#[test]
fn errors_quote_a_bounded_excerpt_of_their_input() {
    // 100 MB of `a`: one line, one unknown instruction.
    let text = "a".repeat(100_000_000);
    let e = DetectorErrorModel::parse(&text, "a.dem")
        .unwrap_err()
        .to_string();
    assert!(e.len() < 300, "{} bytes", e.len());
    assert!(
        e.starts_with(&format!(
            "a.dem:1: unknown instruction `{}…`",
            "a".repeat(80)
        )),
        "{e}"
    );
    drop(text);
    let long = "x".repeat(10_000);
    for text in [
        format!("error(0.1) D0 {long}\n"),
        format!("error({long}) D0\n"),
        format!("error(0.1){long}\n"),
        format!("detector D0 L{long}\n"),
        format!("9{long} D0\n"),
    ] {
        let e = DetectorErrorModel::parse(&text, "x.dem")
            .unwrap_err()
            .to_string();
        assert!(e.len() < 300 && e.contains('…'), "{e}");
    }
    // Settings and matrix files too.
    let mut c = backline_decoders::BpOsdConfig::default();
    let e = c.set(&long, "1").unwrap_err().to_string();
    assert!(e.len() < 300, "{e}");
    let e = c.set("osd_method", &long).unwrap_err().to_string();
    assert!(e.len() < 300, "{e}");
    let e = read_alist(&format!("{long} 3\n"), "h.alist")
        .unwrap_err()
        .to_string();
    assert!(e.len() < 300, "{e}");
}

#[test]
fn iteration_and_size_settings_have_upper_bounds() {
    use backline_decoders::relay::RelayConfig;
    use backline_decoders::sparse::SparseMatrix;
    let mut c = BpOsdConfig::default();
    let e = c
        .set("max_iter", "18446744073709551615")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "max_iter: `18446744073709551615` is not a non-negative integer in 0..=1048576 (0: the \
         number of bits)"
    );
    c.set("max_iter", "1048576").unwrap();
    let e = c.set("osd_order", "1025").unwrap_err().to_string();
    assert!(e.contains("0..=1024"), "{e}");
    // Configs built in code are checked when the decoder is built.
    let h = SparseMatrix::from_columns(2, &[vec![0], vec![0, 1], vec![1]]).unwrap();
    let big = BpOsdConfig {
        max_iter: usize::MAX,
        ..BpOsdConfig::default()
    };
    let e = BpOsdDecoder::from_sparse(&h, &big).unwrap_err().to_string();
    assert!(e.contains("max_iter") && e.contains("1..=1048576"), "{e}");
    let big = BpOsdConfig {
        osd_method: OsdMethod::OsdCs,
        osd_order: 1 << 40,
        ..BpOsdConfig::default()
    };
    assert!(BpOsdDecoder::from_sparse(&h, &big).is_err());
    // Relay-BP: each limit, and the legs together.
    for (cfg, want) in [
        (
            RelayConfig {
                pre_iter: usize::MAX,
                ..RelayConfig::default()
            },
            "pre_iter",
        ),
        (
            RelayConfig {
                num_sets: 1 << 20,
                set_max_iter: 1 << 20,
                ..RelayConfig::default()
            },
            "legs' iterations together",
        ),
    ] {
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    // gamma_dist_interval quotes the whole value when it is not two numbers.
    let mut r = RelayConfig::default();
    let e = r
        .set("gamma_dist_interval", "1.0,2.0,3.0")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "gamma_dist_interval: `1.0,2.0,3.0` is not LO,HI (two numbers)"
    );
    r.set("gamma_dist_interval", "(-0.5, 0.5)").unwrap();
    assert_eq!(r.gamma_dist_interval, (-0.5, 0.5));
}

#[test]
fn thread_counts_have_an_upper_bound() {
    use backline_decoders::dem_decoder::{
        DemDecoder, DemDecoderSettings, MAX_THREADS, decode_batch,
    };
    use backline_decoders::shots::ShotTable;
    let dem = DetectorErrorModel::parse("error(0.1) D0 L0\nerror(0.1) D0 D1\n", "t.dem").unwrap();
    let dec = DemDecoder::new(
        &dem,
        &DemDecoderSettings::from(backline_decoders::relay::RelayConfig::default()),
    )
    .unwrap();
    let shots = ShotTable::zeros(4, 2);
    let e = decode_batch(&dec, &shots, 100_000, false)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "threads = 100000: expected 0 (every core) or 1..=1024");
    assert!(decode_batch(&dec, &shots, MAX_THREADS, false).is_ok());
}

#[test]
fn one_target_that_names_a_far_detector_parses_quickly() {
    // AFL found `error(0.02) D11111111 …` taking 2 s: a hash lookup per detector up to the
    // one named. The declared detectors are now walked in order beside them.
    // The default `detectors` bound refuses it now (issue 39); raised, it still parses quickly.
    let text = "error(0.02) D16777215 D0\ndetector(0, 0) D0\ndetector(1, 1) D16777214\n";
    let e = DetectorErrorModel::parse(text, "far.dem").unwrap_err();
    assert!(
        matches!(
            e.kind,
            DemErrorKind::Limit {
                key: "detectors",
                ..
            }
        ),
        "{e}"
    );
    let raised = DemLimits::parse("detectors=16777216").unwrap();
    let t0 = std::time::Instant::now();
    let dem = DetectorErrorModel::parse_with(text, "far.dem", &raised).unwrap();
    let took = t0.elapsed();
    assert_eq!(dem.num_detectors(), 1 << 24);
    assert_eq!(dem.detector_coords(16_777_214), Some(&[1.0, 1.0][..]));
    assert_eq!(dem.detector_coords(5), None);
    assert!(took < std::time::Duration::from_millis(1500), "{took:?}");
}
