use super::*;
use crate::noise::DemNoise;

/// The d = 3 colour code (Steane's), X errors only: three Z plaquettes, red {0,1,2,3},
/// green {1,2,4,5}, blue {2,3,5,6}; L0 is the logical over qubits {0, 1, 4}. Each line is one
/// qubit's error.
const STEANE: &str = "\
detector(0, 0, 0, 3) D0
detector(1, 0, 0, 4) D1
detector(2, 0, 0, 5) D2
error(0.05) D0 L0
error(0.05) D0 D1 L0
error(0.05) D0 D1 D2
error(0.05) D0 D2
error(0.05) D1 L0
error(0.05) D1 D2
error(0.05) D2
";

/// One sampled shot: detection events (0/1 bytes), packed, and the true observables' mask.
fn shot(noise: &mut DemNoise, model: &DetectorErrorModel) -> (Vec<u8>, Vec<u8>, u64) {
    let mut events = vec![0u8; model.num_detectors()];
    let mut obs = vec![0u8; model.num_observables()];
    noise.sample(&mut events, &mut obs);
    let fired: Vec<u32> = (0..events.len() as u32)
        .filter(|&d| events[d as usize] != 0)
        .collect();
    let truth = obs
        .iter()
        .enumerate()
        .fold(0u64, |m, (l, &o)| m | u64::from(o) << l);
    let packed = pack(&fired, model.num_detectors());
    (events, packed, truth)
}

fn dem(text: &str) -> DetectorErrorModel {
    DetectorErrorModel::parse(text, "t.dem").unwrap()
}

fn pack(dets: &[u32], n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n.div_ceil(8)];
    for &d in dets {
        b[d as usize / 8] ^= 1 << (d % 8);
    }
    b
}

#[test]
fn every_single_qubit_error_of_the_steane_code_is_corrected() {
    let model = dem(STEANE);
    let mut dec = MobiusDecoder::new(&model).unwrap();
    for k in 0..model.num_mechanisms() {
        let m = model.mechanism(k);
        let want = m.observables.iter().fold(0u64, |o, &l| o ^ 1 << l);
        let got = dec.decode_mask(&pack(m.detectors, 3)).unwrap();
        assert_eq!(got, want, "qubit error {k}: {:?}", m.detectors);
    }
    assert_eq!(dec.decode_weighted(&[0]).unwrap(), (0, 0.0));
    // The centre qubit's error is one edge in each restricted lattice; each of those edges
    // is also one of a pair error's two (red-green's of qubit 1, …), merged with it: q =
    // 2p(1 − p).
    let (_, w) = dec.decode_weighted(&pack(&[0, 1, 2], 3)).unwrap();
    let q: f64 = 2.0 * 0.05 * 0.95;
    let one = ((1.0 - q) / q).ln();
    assert!((w - 3.0 * one).abs() < 1e-3 * one, "{w}");
}

/// A repetition code of `n` detectors over `rounds`, the detectors unannotated.
fn repetition(n: usize, rounds: usize) -> String {
    let mut s = String::new();
    for r in 0..rounds {
        let base = r * n;
        s += &format!("error(0.03) D{base} L0\n");
        for i in 0..n - 1 {
            s += &format!("error(0.03) D{} D{}\n", base + i, base + i + 1);
        }
        s += &format!("error(0.02) D{}\n", base + n - 1);
        if r + 1 < rounds {
            for i in 0..n {
                s += &format!("error(0.01) D{} D{}\n", base + i, base + n + i);
            }
        }
    }
    s
}

#[test]
fn an_unannotated_model_is_one_colour_and_decodes_as_matching_does() {
    let model = dem(&repetition(6, 4));
    let mut mobius = MobiusDecoder::new(&model).unwrap();
    let mut matching = MatchingDecoder::new(&model).unwrap();
    let mut noise = DemNoise::new(&model, 11);
    let (mut agree, mut fails_m, mut fails_b) = (0, 0, 0);
    let shots = 2000;
    for _ in 0..shots {
        let (_, packed, truth) = shot(&mut noise, &model);
        let a = mobius.decode_mask(&packed).unwrap();
        let b = matching.decode_mask(&packed).unwrap().observables;
        agree += usize::from(a == b);
        fails_b += usize::from(a != truth);
        fails_m += usize::from(b != truth);
    }
    // Ties between equally heavy matchings may break either way; anything more is a bug.
    assert!(agree >= shots * 99 / 100, "{agree} of {shots} agree");
    assert!(
        fails_b.abs_diff(fails_m) <= shots / 100,
        "{fails_b} vs {fails_m}"
    );
}

#[test]
fn bad_annotations_are_refused_naming_the_detector() {
    let bad = STEANE.replace("detector(1, 0, 0, 4) D1", "detector(1, 0, 0, 7) D1");
    let e = MobiusDecoder::new(&dem(&bad)).unwrap_err().to_string();
    assert!(e.contains("D1") && e.contains("(1, 0, 0, 7)"), "{e}");
    let half = STEANE.replace("detector(1, 0, 0, 4) D1", "detector(1, 0) D1");
    let e = MobiusDecoder::new(&dem(&half)).unwrap_err().to_string();
    assert!(e.contains("D1") && e.contains("4th coordinate"), "{e}");
    let fractional = STEANE.replace("detector(1, 0, 0, 4) D1", "detector(1, 0, 0, 4.5) D1");
    assert!(MobiusDecoder::new(&dem(&fractional)).is_err());
    // Annotations of one colour only (sinter's post-selection flag in the 4th coordinate):
    // a matchable code, read as one colour; an undeclared detector is fine there.
    let flagged = "detector(2, 0, 0, 1) D0\ndetector(1, 0, 0) D1\nerror(0.6) D0 L0\n\
                   error(0.5) D1 L0\nerror(0.1) L0\n";
    let mut dec = MobiusDecoder::new(&dem(flagged)).unwrap();
    assert_eq!(dec.decode_mask(&[1]).unwrap(), 1, "D0's error explains D0");
    assert_eq!(dec.decode_mask(&[0]).unwrap(), 0);
    // −1: ignored, its events dropped.
    let ignored = format!("{STEANE}detector(9, 9, 9, -1) D3\nerror(0.1) D3 D2\n");
    let mut dec = MobiusDecoder::new(&dem(&ignored)).unwrap();
    assert_eq!(dec.decode_mask(&pack(&[3], 4)).unwrap(), 0);
}

#[test]
fn errors_that_are_not_colour_code_pieces_are_refused_naming_the_line() {
    // Three detectors of one basis and two colours: not a rainbow, and nothing to split into.
    let text = "detector(0, 0, 0, 0) D0\ndetector(1, 0, 0, 0) D1\ndetector(2, 0, 0, 1) D2\n\
                error(0.1) D0 D1 D2\n";
    let e = MobiusDecoder::new(&dem(text)).unwrap_err();
    assert!(
        matches!(
            e,
            DecoderError::Mobius(MobiusError::Decomposition { line: 4, .. })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("D0 D1 D2"), "{e}");
    // Four of one basis with nothing in the model to split them into: refused, the four named.
    let lone = "detector(0, 0, 0, 0) D0\ndetector(1, 0, 0, 1) D1\ndetector(2, 0, 0, 2) D2\n\
                detector(3, 0, 0, 0) D3\nerror(0.1) D0 D1 D2 D3\n";
    let e = MobiusDecoder::new(&dem(lone)).unwrap_err();
    assert!(
        matches!(
            e,
            DecoderError::Mobius(MobiusError::Decomposition { line: 5, .. })
        ),
        "{e}"
    );
    // Four of one basis: split when the model's atoms allow it.
    let four = "detector(0, 0, 0, 0) D0\ndetector(1, 0, 0, 1) D1\ndetector(2, 0, 0, 2) D2\n\
                detector(3, 0, 0, 0) D3\nerror(0.1) D0 D1 D2\nerror(0.1) D3\nerror(0.1) D0\n\
                error(0.1) D1\nerror(0.1) D2\nerror(0.01) D0 D1 D2 D3\n";
    let mut dec = MobiusDecoder::new(&dem(four)).unwrap();
    assert_eq!(dec.decode_mask(&pack(&[0, 1, 2, 3], 4)).unwrap(), 0);
    // p = 1 is refused, naming its line.
    let e = MobiusDecoder::new(&dem(&STEANE.replace("error(0.05) D2\n", "error(1) D2\n")));
    assert!(
        matches!(
            e,
            Err(DecoderError::Mobius(MobiusError::Certain { line: 10 }))
        ),
        "{e:?}"
    );
}

#[test]
fn an_error_above_one_half_is_taken_as_flipped_in_advance() {
    // Blue's corner error at p = 0.9 has most likely happened: red and blue firing are
    // qubit 0's error (L0) with it (0.05 · 0.9), not qubit 3's without it (0.05 · 0.1).
    let model = dem(&STEANE.replace("error(0.05) D2\n", "error(0.9) D2\n"));
    let mut dec = MobiusDecoder::new(&model).unwrap();
    assert_eq!(dec.decode_mask(&pack(&[0, 2], 3)).unwrap(), 1);
    assert_eq!(dec.decode_mask(&pack(&[2], 3)).unwrap(), 0);
    assert_eq!(
        dec.decode_mask(&pack(&[0], 3)).unwrap(),
        0,
        "qubit 3 and the corner"
    );
    assert_eq!(dec.decode_mask(&[0]).unwrap(), 0);
    let mut noise = DemNoise::new(&model, 9);
    let mut fails = 0;
    for _ in 0..2000 {
        let (_, packed, truth) = shot(&mut noise, &model);
        fails += usize::from(dec.decode_mask(&packed).unwrap() != truth);
    }
    assert!(fails < 200, "{fails}");
}

#[test]
fn a_detection_event_no_error_explains_is_an_error_and_lengths_are_checked() {
    let text = format!("{STEANE}detector(5, 5, 5, 3) D3\n");
    let mut dec = MobiusDecoder::new(&dem(&text)).unwrap();
    assert!(matches!(
        dec.decode_mask(&pack(&[3], 4)),
        Err(DecoderError::Unexplained(3))
    ));
    // Two detectors joined only to each other: one event alone has no perfect matching.
    let pair =
        format!("{STEANE}detector(5, 5, 5, 3) D3\ndetector(6, 5, 5, 4) D4\nerror(0.1) D3 D4\n");
    let mut d2 = MobiusDecoder::new(&dem(&pair)).unwrap();
    let e = d2.decode_mask(&pack(&[3], 5)).unwrap_err();
    assert!(
        matches!(e, DecoderError::Mobius(MobiusError::NoMatching { .. })),
        "{e}"
    );
    // A model of detectors that no usable error flips decodes nothing but the empty shot.
    let idle = "detector(0, 0, 0, 0) D0\ndetector(0, 1, 0, 4) D1\nerror(0.1) D0 D1\n";
    let mut d3 = MobiusDecoder::new(&dem(idle)).unwrap();
    assert_eq!(d3.decode_mask(&[0]).unwrap(), 0);
    assert!(matches!(
        d3.decode_mask(&[1]),
        Err(DecoderError::Unexplained(0))
    ));
    // The decoder is still usable.
    assert_eq!(dec.decode_mask(&pack(&[0], 4)).unwrap(), 1);
    assert!(matches!(
        dec.decode_mask(&[0, 0]),
        Err(DecoderError::PackedLength { .. })
    ));
    let mut out = [0u8; 2];
    assert!(ObservableDecoder::decode_packed(&mut dec, &[0], &mut out).is_err());
}

#[test]
fn the_registry_builds_it_and_streams_decode_it_as_one_window() {
    let settings = crate::registry::settings("mobius", Profile::Offline).unwrap();
    assert!(settings.clone().set("alpha", "1").is_err());
    let model = dem(&repetition(4, 3));
    let mut dec = settings.build(&model).unwrap();
    let mut obs = [0u8];
    dec.decode_packed(&pack(&[0], model.num_detectors()), &mut obs)
        .unwrap();
    assert_eq!(obs, [1]);
    // A stream reads rounds from the time coordinate: in a colour-annotated model, the 3rd
    // of (x, y, t, colour), here with colours that are not in time order.
    let mut timed = String::new();
    for d in 0..model.num_detectors() {
        timed += &format!("detector({}, 0, {}, {}) D{d}\n", d % 4, d / 4, 3 + d % 3);
    }
    timed += &repetition(4, 3);
    let model = dem(&timed);
    let mut s = crate::stream::StreamSettings {
        decoder: settings.clone(),
        ..crate::stream::StreamSettings::default()
    };
    let mut stream = crate::stream::StreamDecoder::new(&model, &s).unwrap();
    assert_eq!(stream.rounds(), 3);
    let mut direct = MobiusDecoder::new(&model).unwrap();
    let mut noise = DemNoise::new(&model, 5);
    for _ in 0..200 {
        let (events, packed, _) = shot(&mut noise, &model);
        let mut got = [0u8];
        stream.decode_shot(&events, &mut got).unwrap();
        let want = direct.decode_mask(&packed).unwrap();
        assert_eq!(u64::from(got[0]), want);
    }
    // Sliding windows over the same rounds answer as the whole shot on this small model.
    s.window = Some(2);
    s.commit = Some(1);
    let mut windowed = crate::stream::StreamDecoder::new(&model, &s).unwrap();
    let mut noise = DemNoise::new(&model, 6);
    let mut differ = 0;
    for _ in 0..200 {
        let (events, packed, _) = shot(&mut noise, &model);
        let mut got = [0u8];
        windowed.decode_shot(&events, &mut got).unwrap();
        differ += usize::from(u64::from(got[0]) != direct.decode_mask(&packed).unwrap());
    }
    assert!(differ <= 4, "{differ} of 200 differ");
}

/// The d = 3 colour code under depolarising code-capacity noise: X, Y and Z errors on each
/// of the seven qubits (`p/3` each), Z plaquettes D0–D2 (they see X errors) and X plaquettes
/// D3–D5 (Z errors); L0 is flipped by X errors on {0, 1, 4}, L1 by Z errors there.
fn steane_depolarising(p: f64) -> DetectorErrorModel {
    let plaquettes: [&[usize]; 3] = [&[0, 1, 2, 3], &[1, 2, 4, 5], &[2, 3, 5, 6]];
    let mut s = String::new();
    for (c, _) in plaquettes.iter().enumerate() {
        s += &format!("detector({c}, 0, 0, {}) D{c}\n", c + 3);
        s += &format!("detector({c}, 1, 0, {c}) D{}\n", c + 3);
    }
    for q in 0..7 {
        let on: Vec<usize> = (0..3).filter(|&c| plaquettes[c].contains(&q)).collect();
        let logical = [0, 1, 4].contains(&q);
        let x: String = on.iter().map(|c| format!(" D{c}")).collect();
        let z: String = on.iter().map(|c| format!(" D{}", c + 3)).collect();
        let (lx, lz) = if logical { (" L0", " L1") } else { ("", "") };
        s += &format!("error({}){x}{lx}\n", p / 3.0);
        s += &format!("error({}){z}{lz}\n", p / 3.0);
        s += &format!("error({}){x}{z}{lx}{lz}\n", p / 3.0);
    }
    dem(&s)
}

#[test]
fn the_correlated_pass_keeps_every_single_error_corrected_and_decides_ties_as_plain() {
    // (That it lowers the logical error rate on circuit-level colour codes is measured on
    // generated circuits: python/tests/test_mobius.py and scripts/bench/mobius-vs-chromobius.py.)
    let model = steane_depolarising(0.03);
    let mut plain = MobiusDecoder::new(&model).unwrap();
    let mut corr = MobiusDecoder::new_correlated(&model).unwrap();
    // Every single-qubit error (X, Y or Z) is corrected by both.
    for k in 0..model.num_mechanisms() {
        let m = model.mechanism(k);
        let want = m.observables.iter().fold(0u64, |o, &l| o ^ 1 << l);
        let packed = pack(m.detectors, 6);
        assert_eq!(plain.decode_mask(&packed).unwrap(), want, "{k}");
        assert_eq!(corr.decode_mask(&packed).unwrap(), want, "{k}");
    }
    // On sampled shots the two differ only where the first matching used edges of errors
    // that flip both bases; d = 3 corrects one error either way, so they fail alike.
    let mut noise = DemNoise::new(&model, 3);
    let (mut fails_plain, mut fails_corr) = (0, 0);
    for _ in 0..5_000 {
        let (_, packed, truth) = shot(&mut noise, &model);
        fails_plain += usize::from(plain.decode_mask(&packed).unwrap() != truth);
        fails_corr += usize::from(corr.decode_mask(&packed).unwrap() != truth);
    }
    assert!(fails_plain > 0);
    assert!(
        fails_corr.abs_diff(fails_plain) * 5 < fails_plain,
        "{fails_corr} vs {fails_plain}"
    );
}

/// A colour code over 11 rounds (`decoders/tests/data/dem/README.md`).
const COLOUR_PHENOM: &str = include_str!("../../tests/data/dem/colour_phenom_d5_r10_p0.02.dem");

#[test]
fn sliding_windows_of_a_colour_code_answer_as_the_whole_shot() {
    let model = dem(COLOUR_PHENOM);
    for correlations in ["0", "1"] {
        let mut settings = crate::registry::settings("mobius", Profile::Offline).unwrap();
        settings.set("correlations", correlations).unwrap();
        let mut whole = settings.build(&model).unwrap();
        let s = crate::stream::StreamSettings {
            decoder: settings.clone(),
            window: Some(4),
            commit: Some(2),
            ..crate::stream::StreamSettings::default()
        };
        let mut stream = crate::stream::StreamDecoder::new(&model, &s).unwrap();
        assert_eq!(stream.rounds(), 11);
        let mut noise = DemNoise::new(&model, 41);
        let (mut differ, mut fails_whole, mut fails_stream) = (0, 0, 0);
        let shots = 1000;
        for _ in 0..shots {
            let (events, packed, truth) = shot(&mut noise, &model);
            let mut a = [0u8];
            stream.decode_shot(&events, &mut a).unwrap();
            let mut b = [0u8];
            whole.decode_packed(&packed, &mut b).unwrap();
            differ += usize::from(a != b);
            fails_stream += usize::from(u64::from(a[0]) != truth);
            fails_whole += usize::from(u64::from(b[0]) != truth);
        }
        // Windows of 4 rounds committing 2 see every error of the model whole (an error
        // spans at most two rounds): answers differ only where ties or the window's
        // artificial boundary chose otherwise.
        assert!(fails_whole > 10, "{fails_whole}");
        assert!(
            differ * 20 <= shots,
            "correlations {correlations}: {differ} differ"
        );
        assert!(
            fails_stream.abs_diff(fails_whole) * 4 <= fails_whole,
            "correlations {correlations}: stream {fails_stream}, whole {fails_whole}"
        );
    }
}
