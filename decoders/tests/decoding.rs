//! Decoding behaviour on the code library with seeded code-capacity X errors: every correction
//! reproduces its syndrome, logical failure rates sit within physical bounds and fall with
//! distance, and BP+OSD corrects what a distance-3 code must.

use backline_decoders::codes::CssCode;
use backline_decoders::noise::CodeCapacity;
use backline_decoders::{
    BpMethod, BpOsdConfig, BpOsdDecoder, DecoderError, LookupDecoder, OsdMethod, Schedule, gf2,
};

/// Decodes `shots` seeded shots; panics if a correction does not reproduce its syndrome.
/// Returns (logical failures, shots where BP converged).
fn run(code: &CssCode, config: &BpOsdConfig, shots: usize, seed: u64) -> (usize, usize) {
    let h = &code.hz;
    let mut dec = BpOsdDecoder::new(h, config).unwrap();
    let mut noise = CodeCapacity::new(config.error_rate, seed);
    let n = code.n();
    let (mut e, mut c, mut r) = (vec![0u8; n], vec![0u8; n], vec![0u8; n]);
    let (mut s, mut check) = (vec![0u8; h.rows()], vec![0u8; h.rows()]);
    let (mut fails, mut converged) = (0, 0);
    for shot in 0..shots {
        noise.sample(&mut e);
        h.mul_bytes(&e, &mut s);
        let info = dec.decode(&s, &mut c).unwrap();
        converged += info.converged as usize;
        h.mul_bytes(&c, &mut check);
        assert_eq!(
            check, s,
            "{} {config:?} shot {shot}: correction does not reproduce the syndrome",
            code.name
        );
        for i in 0..n {
            r[i] = e[i] ^ c[i];
        }
        fails += code.is_logical_x_error(&r) as usize;
    }
    (fails, converged)
}

fn config(p: f64, bp_method: BpMethod, osd_method: OsdMethod, osd_order: usize) -> BpOsdConfig {
    BpOsdConfig {
        error_rate: p,
        bp_method,
        max_iter: 10,
        ms_scaling_factor: 0.625,
        osd_method,
        osd_order,
        ..BpOsdConfig::default()
    }
}

#[test]
fn every_correction_reproduces_its_syndrome() {
    let codes = [
        "steane", "hgp13", "surface3", "surface5", "surface9", "bb72", "bb144",
    ];
    for name in codes {
        let code = CssCode::by_name(name).unwrap();
        let free = code.n() - gf2::rank(&code.hz);
        let shots = if code.n() > 100 { 25 } else { 60 };
        for bp in [BpMethod::MinimumSum, BpMethod::ProductSum] {
            for (osd, order) in [(OsdMethod::Osd0, 0), (OsdMethod::OsdCs, free.min(7))] {
                for p in [0.03, 0.1] {
                    run(&code, &config(p, bp, osd, order), shots, 11);
                }
            }
        }
        // Serial schedule, adaptive min-sum factor, per-bit priors.
        let mut c = config(0.05, BpMethod::MinimumSum, OsdMethod::OsdCs, free.min(3));
        c.schedule = Schedule::Serial;
        c.ms_scaling_factor = 0.0;
        c.error_channel = Some(
            (0..code.n())
                .map(|i| 0.03 + 0.001 * (i % 7) as f64)
                .collect(),
        );
        run(&code, &c, shots / 2, 12);
    }
}

#[test]
fn distance_three_codes_correct_every_single_error() {
    // Not the Steane code: there BP converges, on a flip of qubit 6 (the weight-3 column),
    // to the weight-4 solution {2, 4, 5, 6} — a valid correction of the syndrome that leaves
    // a logical error — and OSD never runs. `ldpc` does the same (its reference vectors
    // pin it); the Steane code has its exact lookup decoder instead.
    for name in ["hgp13", "surface3", "surface5"] {
        let code = CssCode::by_name(name).unwrap();
        let h = &code.hz;
        for bp in [BpMethod::MinimumSum, BpMethod::ProductSum] {
            let mut dec = BpOsdDecoder::new(h, &config(0.05, bp, OsdMethod::Osd0, 0)).unwrap();
            let (mut s, mut c) = (vec![0u8; h.rows()], vec![0u8; code.n()]);
            for q in 0..code.n() {
                let mut e = vec![0u8; code.n()];
                e[q] = 1;
                h.mul_bytes(&e, &mut s);
                dec.decode(&s, &mut c).unwrap();
                let r: Vec<u8> = e.iter().zip(&c).map(|(a, b)| a ^ b).collect();
                assert!(!code.is_logical_x_error(&r), "{name} {bp}: qubit {q}");
            }
        }
    }
}

#[test]
fn logical_error_rates_are_physical_and_fall_with_distance() {
    // At p = 0.03 the rotated surface code is well below threshold: failures must fall with
    // distance, and a distance-d code can only fail with at least (d+1)/2 flips, so its rate
    // stays under the probability of that many flips.
    let p = 0.03;
    let shots = 1500;
    let mut rates = Vec::new();
    for d in [3usize, 5, 7] {
        let code = CssCode::rotated_surface(d).unwrap();
        let free = code.n() - gf2::rank(&code.hz);
        let mut c = config(p, BpMethod::MinimumSum, OsdMethod::OsdCs, free.min(7));
        c.max_iter = d * d;
        let (fails, _) = run(&code, &c, shots, 21);
        let rate = fails as f64 / shots as f64;
        // P(at least t+1 of n qubits flip), t = (d-1)/2.
        let n = d * d;
        let t = (d - 1) / 2;
        let mut tail = 0.0;
        for k in t + 1..=n {
            let mut binom = 1.0;
            for i in 0..k {
                binom *= (n - i) as f64 / (i + 1) as f64;
            }
            tail += binom * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32);
        }
        assert!(
            rate <= tail,
            "surface{d}: rate {rate} above P(>{t} flips) = {tail}"
        );
        rates.push(rate);
    }
    assert!(
        rates[0] > rates[1] && rates[1] >= rates[2],
        "no distance suppression: {rates:?}"
    );
    assert!(
        rates[0] > 0.0,
        "d=3 never failed in {shots} shots at p={p}: {rates:?}"
    );
}

#[test]
fn bp_osd_is_close_to_minimum_weight_on_small_codes() {
    // On [[13,1,3]] the lookup table is the minimum-weight decoder; BP+OSD-CS should not be
    // much worse than it (and cannot be much better on i.i.d. noise).
    let code = CssCode::hgp13();
    let p = 0.05;
    let shots = 3000;
    let lookup = LookupDecoder::new(&code.hz).unwrap();
    let mut noise = CodeCapacity::new(p, 5);
    let mut e = vec![0u8; 13];
    let (mut s, mut c) = (vec![0u8; 6], vec![0u8; 13]);
    let mut mw_fails = 0;
    for _ in 0..shots {
        noise.sample(&mut e);
        code.hz.mul_bytes(&e, &mut s);
        assert!(lookup.decode(&s, &mut c).unwrap());
        let r: Vec<u8> = e.iter().zip(&c).map(|(a, b)| a ^ b).collect();
        mw_fails += code.is_logical_x_error(&r) as usize;
    }
    let (bposd_fails, converged) = run(
        &code,
        &config(p, BpMethod::MinimumSum, OsdMethod::OsdCs, 7),
        shots,
        5,
    );
    assert!(converged > shots / 2);
    let (a, b) = (bposd_fails as f64, mw_fails as f64);
    // Same shots (same seed): the two counts differ only where the decoders disagree.
    assert!(
        (a - b).abs() <= 0.25 * b + 10.0,
        "BP+OSD {bposd_fails} vs minimum weight {mw_fails} failures in {shots}"
    );
}

#[test]
fn bad_settings_are_errors_not_crashes() {
    let code = CssCode::steane();
    // n − rank = 7 − 3 = 4 free columns: order 5 is clamped to 4 (ldpc 2.4.1 writes out of
    // bounds there), and decodes as order 4 does.
    let c = config(0.05, BpMethod::MinimumSum, OsdMethod::OsdCs, 5);
    let mut clamped = BpOsdDecoder::new(&code.hz, &c).unwrap();
    assert_eq!(clamped.osd_order(), 4);
    assert_eq!(clamped.osd().map(|o| o.requested_order()), Some(5));
    let mut four = BpOsdDecoder::new(
        &code.hz,
        &config(0.05, BpMethod::MinimumSum, OsdMethod::OsdCs, 4),
    )
    .unwrap();
    let (mut a, mut b) = ([0u8; 7], [0u8; 7]);
    for s in 0u8..8 {
        let syn = [s & 1, s >> 1 & 1, s >> 2 & 1];
        clamped.decode(&syn, &mut a).unwrap();
        four.decode(&syn, &mut b).unwrap();
        assert_eq!(a, b, "syndrome {s}");
    }
    // The order is ignored unless the method is OSD-CS.
    let c = config(0.05, BpMethod::MinimumSum, OsdMethod::Osd0, 50);
    assert!(BpOsdDecoder::new(&code.hz, &c).is_ok());
    // Unknown precisions, OSD orderings and flags are errors naming the choices.
    let mut c = BpOsdConfig::default();
    for (key, value, want) in [
        ("precision", "f16", "precision: `f16` is not f64 or f32"),
        (
            "osd_init",
            "max_llr",
            "osd_init: `max_llr` is not soft or min_llr",
        ),
        ("osd_on_converged", "maybe", "osd_on_converged: `maybe`"),
    ] {
        let e = c.set(key, value).unwrap_err().to_string();
        assert!(e.starts_with(want), "{e}");
    }
    // f32 with product-sum or the serial schedule runs at f64: the same corrections.
    for (bp_method, schedule) in [
        (BpMethod::ProductSum, Schedule::Parallel),
        (BpMethod::MinimumSum, Schedule::Serial),
    ] {
        let base = BpOsdConfig {
            error_rate: 0.05,
            bp_method,
            schedule,
            max_iter: 10,
            ..BpOsdConfig::default()
        };
        let f32_config = BpOsdConfig {
            precision: backline_decoders::Precision::F32,
            ..base.clone()
        };
        assert!(!f32_config.bp_settings().runs_f32());
        let mut x = BpOsdDecoder::new(&code.hz, &base).unwrap();
        let mut y = BpOsdDecoder::new(&code.hz, &f32_config).unwrap();
        for s in 0u8..8 {
            let syn = [s & 1, s >> 1 & 1, s >> 2 & 1];
            x.decode(&syn, &mut a).unwrap();
            y.decode(&syn, &mut b).unwrap();
            assert_eq!(a, b);
        }
    }
    for p in [0.0, 0.5, 1.0, -0.2, f64::NAN, f64::INFINITY] {
        let c = config(p, BpMethod::MinimumSum, OsdMethod::Osd0, 0);
        assert!(matches!(
            BpOsdDecoder::new(&code.hz, &c),
            Err(DecoderError::ErrorRate(_))
        ));
    }
    let mut dec = BpOsdDecoder::new(
        &code.hz,
        &config(0.1, BpMethod::MinimumSum, OsdMethod::Osd0, 0),
    )
    .unwrap();
    let mut out = [0u8; 7];
    assert!(matches!(
        dec.decode(&[1, 0], &mut out),
        Err(DecoderError::SyndromeLength {
            expected: 3,
            found: 2
        })
    ));
    assert!(matches!(
        dec.decode(&[1, 0, 0], &mut out[..6]),
        Err(DecoderError::OutputLength {
            expected: 7,
            found: 6
        })
    ));
}

/// `osd_init = min_llr` orders OSD by each bit's least LLR over its prior and every iteration:
/// the tracked minimum equals the minimum of the soft outputs of decoders stopped after
/// 1, 2, …, `it` iterations (BP is deterministic), bit for bit.
#[test]
fn min_llr_is_the_least_soft_output_over_the_prior_and_every_iteration() {
    use backline_decoders::{BpDecoder, BpSettings};
    let code = CssCode::by_name("bb72").unwrap();
    let h = &code.hz;
    let n = code.n();
    let mut noise = CodeCapacity::new(0.06, 7);
    let (mut e, mut s) = (vec![0u8; n], vec![0u8; h.rows()]);
    let settings = |max_iter| BpSettings {
        max_iter,
        ms_scaling_factor: 0.625,
        ..BpSettings::default()
    };
    let prior = ((1.0 - 0.06f64) / 0.06).ln();
    let mut checked = 0;
    for _ in 0..40 {
        noise.sample(&mut e);
        h.mul_bytes(&e, &mut s);
        let mut full = BpDecoder::new(h, 0.06, None, settings(8)).unwrap();
        full.track_min_llr(true);
        full.decode(&s).unwrap();
        let ran = full.iterations();
        let mut want = vec![prior; n];
        for it in 1..=ran {
            let mut d = BpDecoder::new(h, 0.06, None, settings(it)).unwrap();
            d.decode(&s).unwrap();
            for (w, &l) in want.iter_mut().zip(d.log_prob_ratios()) {
                *w = w.min(l);
            }
        }
        if full.fixed_point() {
            continue; // stopped early at a repeat: the remaining iterations add nothing
        }
        assert_eq!(full.min_log_prob_ratios(), &want[..]);
        checked += 1;
    }
    assert!(checked >= 30, "{checked}");
    // Off by default, and off costs nothing.
    let d = BpDecoder::new(h, 0.06, None, settings(8)).unwrap();
    assert!(d.min_log_prob_ratios().is_empty());
}

/// `osd_on_converged` runs OSD on converged shots too: every answer still reproduces its
/// syndrome, OSD is reported used on every shot with events, and OSD-CS's answer is never
/// heavier than BP's converged one on the same shot.
#[test]
fn osd_on_converged_answers_every_shot_with_osd() {
    let code = CssCode::by_name("bb72").unwrap();
    let h = &code.hz;
    let n = code.n();
    let base = BpOsdConfig {
        error_rate: 0.03,
        max_iter: 10,
        ms_scaling_factor: 0.625,
        osd_method: OsdMethod::OsdCs,
        osd_order: 6,
        ..BpOsdConfig::default()
    };
    let mut plain = BpOsdDecoder::new(h, &base).unwrap();
    let mut always = BpOsdDecoder::new(
        h,
        &BpOsdConfig {
            osd_on_converged: true,
            ..base.clone()
        },
    )
    .unwrap();
    let mut noise = CodeCapacity::new(0.03, 11);
    let (mut e, mut s, mut check) = (vec![0u8; n], vec![0u8; h.rows()], vec![0u8; h.rows()]);
    let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
    let mut converged = 0;
    for _ in 0..200 {
        noise.sample(&mut e);
        h.mul_bytes(&e, &mut s);
        let pi = plain.decode(&s, &mut a).unwrap();
        let ai = always.decode(&s, &mut b).unwrap();
        h.mul_bytes(&b, &mut check);
        assert_eq!(check, s);
        if s.iter().any(|&x| x != 0) {
            assert!(ai.osd_used);
            if pi.converged {
                converged += 1;
                let weight = |v: &[u8]| v.iter().filter(|&&x| x != 0).count();
                assert!(weight(&b) <= weight(&a), "OSD-CS heavier than BP");
            }
        }
    }
    assert!(converged > 50, "{converged}");
}
