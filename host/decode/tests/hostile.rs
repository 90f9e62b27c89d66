//! Regression tests of the defects a hostile test of the tree found: a BP panic on checks whose
//! columns all have weight ≤ 1, a capacity-overflow panic for `bb:100000,100000,1,1`, an abort
//! on the 62 GB allocation of `surface1000`, and an alist header whose dimensions would not fit
//! in memory. Each is now a typed error or a correct decode.

use backline_decode::bitmat::{BitMatrix, MAX_DENSE_BITS};
use backline_decode::codes::{CodeError, CssCode, Polynomial};
use backline_decode::io::{ParseErrorKind, read_alist};
use backline_decode::{BpMethod, BpOsdConfig, BpOsdDecoder, OsdMethod, Schedule};

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
    use backline_decode::dem::DetectorErrorModel;
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
    use backline_decode::io::{MAX_FILE_BYTES, load_matrix};
    // /dev/zero never ends: the reader stops at its cap.
    let e = load_matrix(std::path::Path::new("/dev/zero"), None).unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("larger than {} MiB", MAX_FILE_BYTES >> 20)),
        "{e}"
    );
}
