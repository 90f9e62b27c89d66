use super::*;

fn parse(text: &str) -> DetectorErrorModel {
    DetectorErrorModel::parse(text, "t.dem").unwrap()
}

fn err(text: &str) -> String {
    DetectorErrorModel::parse(text, "t.dem")
        .unwrap_err()
        .to_string()
}

#[test]
fn targets_separators_and_merging() {
    let dem = parse(
        "# a comment\n\
         ERROR(0.1) D2 D0 L1 # trailing\n\
         error(0.02) D0 L0 ^ D1 L0\n\
         error(0.2) D0 D2 L1\n\
         error[some tag # with a hash](0.3) D1 D1 D3\n\
         error(0.5)\n\
         error(0.4) L0 ^ L0\n",
    );
    assert_eq!(dem.num_detectors(), 4);
    assert_eq!(dem.num_observables(), 2);
    assert_eq!(dem.num_mechanisms(), 3);
    // Merged: 0.1·0.8 + 0.2·0.9.
    assert!((dem.priors()[0] - 0.26).abs() < 1e-15);
    assert_eq!(dem.mechanism(0).detectors, &[0, 2]);
    assert_eq!(dem.mechanism(0).observables, &[1]);
    assert_eq!(dem.mechanism(0).line, 2);
    // D0 L0 ^ D1 L0: the L0s cancel.
    assert_eq!(dem.mechanism(1).detectors, &[0, 1]);
    assert!(dem.mechanism(1).observables.is_empty());
    // D1 D1 cancel.
    assert_eq!(dem.mechanism(2).detectors, &[3]);
    assert_eq!(dem.mechanisms_of(0), &[0, 1]);
    assert_eq!(
        dem.check_matrix().to_dense().to_picture(),
        "11.\n.1.\n1..\n..1\n"
    );
    assert_eq!(
        dem.observable_matrix().to_dense().to_picture(),
        "...\n1..\n"
    );
}

#[test]
fn an_empty_block_repeated_almost_forever_is_read_at_once() {
    let t0 = std::time::Instant::now();
    let text = "repeat 3333333333333333 { # detector(0, 1) D0\n}\n\
                error(0.1) D0 L0\ndetector(0, 0) D0\n";
    let dem = DetectorErrorModel::parse(text, "empty.dem").unwrap();
    assert_eq!(dem.num_detectors(), 1);
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn repeats_shifts_and_coordinates() {
    let dem = parse(
        "detector(0, 0) D0\n\
         repeat 3 {\n\
         \x20   detector(0.5, 0.5) D1\n\
         \x20   error(0.01) D0 D1\n\
         \x20   repeat 2 {\n\
         \x20       error(0.001) D1 L0\n\
         \x20       shift_detectors 0\n\
         \x20   }\n\
         \x20   shift_detectors(0.5, 0.5, 7) 1\n\
         }\n\
         detector(1) D0\n\
         logical_observable L4\n",
    );
    assert_eq!(dem.num_detectors(), 4);
    assert_eq!(dem.num_observables(), 5);
    // Per iteration: D(i) D(i+1), and D(i+1) L0 twice (merged).
    assert_eq!(dem.num_mechanisms(), 6);
    let merged = 2.0 * 0.001 * 0.999;
    assert!((dem.priors()[1] - merged).abs() < 1e-18);
    assert_eq!(dem.mechanism(4).detectors, &[2, 3]);
    assert_eq!(dem.detector_coords(0), Some(&[0.0, 0.0][..]));
    assert_eq!(dem.detector_coords(2), Some(&[1.0, 1.0][..]));
    // The offset after three shifts is (1.5, 1.5, 21); a 1-coordinate detector takes one.
    assert_eq!(dem.detector_coords(3), Some(&[2.5][..]));
    assert_eq!(dem.detector_time(1), Some(0.5));
    let none = parse("error(0.1) D0\n");
    assert_eq!(none.detector_coords(0), None);
}

#[test]
fn bad_models_are_errors_with_lines() {
    for (text, want) in [
        (
            "error(0.1) D0\nflip(0.1) D1\n",
            "t.dem:2: unknown instruction `flip`",
        ),
        (
            "error(1.5) D0\n",
            "t.dem:1: probability 1.5 is outside [0, 1]",
        ),
        ("error(-0.1) D0\n", "outside [0, 1]"),
        ("error(nan) D0\n", "t.dem:1: argument `nan` is not a number"),
        (
            "error(0.1, 0.2) D0\n",
            "takes exactly 1 argument(s), found 2",
        ),
        ("error(0.1) D0 7\n", "does not take the target `7`"),
        ("error(0.1) X3\n", "bad target `X3`"),
        ("detector L0\n", "`detector` does not take the target `L0`"),
        (
            "repeat 2 {\nerror(0.1) D0\n",
            "t.dem:1: `repeat` block without its closing",
        ),
        ("error(0.1) D0\n}\n", "t.dem:2: `}` without a matching `{`"),
        ("repeat 0 {\n}\n", "at least 1"),
        ("repeat 2\nerror(0.1) D0\n", "must be followed by `{`"),
        (
            "error(0.1) D16777216\n",
            "t.dem:1: the model expands to more than 4194304 detectors",
        ),
        ("error(0.1 D0\n", "without its closing `)`"),
        ("error[tag(0.1) D0\n", "tag `[` without"),
        ("error(0.1)D0\n", "unexpected `D0`"),
        (
            "repeat 100000 {\nrepeat 100000 {\nerror(0.1) D0\n}\n}\n",
            "t.dem:1: the repeat blocks expand",
        ),
    ] {
        let e = err(text);
        assert!(e.contains(want), "{text:?}: {e}");
    }
    // Shifts that push an index past the limit inside a repeat: the `detectors` bound, and
    // past it (raised) the largest index supported.
    let text = "repeat 20 {\nerror(0.1) D0\nshift_detectors 1000000\n}\n";
    let e = err(text);
    assert!(
        e.starts_with("t.dem:2: the model expands to more than 4194304 detectors"),
        "{e}"
    );
    let raised = DemLimits::parse("detectors=1000000000").unwrap();
    let e = DetectorErrorModel::parse_with(text, "t.dem", &raised)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.dem:2: detector 19000000 is beyond the 16777216"),
        "{e}"
    );
}

#[test]
fn expected_detector_count() {
    let dem = parse("error(0.1) D0 D1\nerror(0.1) D4\ndetector D2\n");
    assert!(dem.expect_detectors(5).is_ok());
    assert_eq!(
        dem.expect_detectors(4).unwrap_err().to_string(),
        "t.dem:2: detector 4 is beyond the 4 detectors declared"
    );
}

#[test]
fn windows_and_committed_mechanisms() {
    // A repetition chain over three rounds of two detectors each.
    let dem = parse(
        "repeat 3 {\n\
         \x20 error(0.1) D0 D1\n\
         \x20 error(0.1) D0 D2\n\
         \x20 error(0.05) D1 L0\n\
         \x20 detector(0, 0) D0\n\
         \x20 detector(1, 0) D1\n\
         \x20 shift_detectors(0, 1) 2\n\
         }\n",
    );
    assert_eq!(dem.num_detectors(), 7);
    assert_eq!(dem.detectors_up_to_time(1.0), 0..4);
    let w = dem.window(2..4);
    assert_eq!(w.mechanisms, vec![1, 3, 4, 5]);
    assert_eq!(w.model.num_detectors(), 2);
    assert_eq!(w.model.check_matrix().col(0), &[0]);
    assert_eq!(w.model.check_matrix().col(1), &[0, 1]);
    assert_eq!(w.model.observable_matrix().col(3), &[0]);
    assert_eq!(w.model.priors(), &[0.1, 0.1, 0.1, 0.05]);
    assert_eq!(w.model.detector_coords(1), Some(&[1.0, 1.0][..]));
    let mut dets = vec![0u8; 7];
    let mut obs = vec![0u8; 1];
    dem.apply_mechanisms([0, 2], &mut dets, &mut obs);
    assert_eq!(dets, vec![1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(obs, vec![1]);
    // Mechanism 1 (D0 D2) and 2 (D1 L0) start before detector 2: not in the window that
    // starts there.
    let w = dem.window_from(2..4);
    assert_eq!(w.mechanisms, vec![3, 4, 5]);
    assert_eq!(w.model.check_matrix().col(0), &[0, 1]);
    assert_eq!(dem.window_from(0..7).mechanisms.len(), dem.num_mechanisms());
}

#[test]
fn the_detectors_bound_counts_shifts_inside_repeats_without_unrolling() {
    let bound = |n: u64| DemLimits {
        detectors: n,
        ..DemLimits::DEFAULT
    };
    let text = "repeat 10 {\n error(0.1) D0 D9\n shift_detectors 10\n}\n";
    // Largest index 99: 100 detectors.
    let dem = DetectorErrorModel::parse_with(text, "t.dem", &bound(100)).unwrap();
    assert_eq!(dem.num_detectors(), 100);
    let e = DetectorErrorModel::parse_with(text, "t.dem", &bound(99)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.dem:2: the model expands to more than 99 detectors (limit `detectors`; \
         BACKLINE_DEM_LIMITS=detectors=N raises it)"
    );
    // A declaration counts; shifts after the last index do not.
    let e = DetectorErrorModel::parse_with("detector D7\n", "t.dem", &bound(7)).unwrap_err();
    assert_eq!(e.line, 1);
    let text = "error(0.1) D0\nshift_detectors 1000\nrepeat 3 {\n shift_detectors 5\n}\n";
    let r = DetectorErrorModel::parse_with(text, "t.dem", &bound(1));
    assert!(r.is_ok(), "{r:?}");
    // Nested repeats of shifts: 4 × 1000 × 1000 = 4,000,000 before the error; one more
    // iteration of the outer block is past the default.
    let nested = |outer: u64| {
        format!(
            "repeat {outer} {{\n repeat 1000 {{\n  shift_detectors 1000\n }}\n error(0.1) D0\n}}\n"
        )
    };
    let e = DetectorErrorModel::parse_with(&nested(5), "t.dem", &bound(4_000_000)).unwrap_err();
    assert_eq!(e.line, 5);
    assert!(DetectorErrorModel::parse_with(&nested(4), "t.dem", &bound(4_000_001)).is_ok());
    // A huge count saturates instead of wrapping, and is refused.
    let e = DetectorErrorModel::parse(
        "repeat 18446744073709551615 {\n shift_detectors 18446744073709551615\n}\nerror(0.1) D0\n",
        "t.dem",
    )
    .unwrap_err();
    assert!(
        matches!(
            e.kind,
            DemErrorKind::Limit {
                key: "detectors",
                ..
            } | DemErrorKind::TooLarge
        ),
        "{e}"
    );
    // The key parses like the others.
    assert_eq!(DemLimits::parse("detectors=5").unwrap().detectors, 5);
    assert!(DemLimits::parse("detectors=0").is_err());
}
