//! The streaming decoder on stim's models (`tests/data/dem/`): its rounds and windows, its
//! answers against the whole-history decoder on stim's own shots, and shots sampled from the
//! model's mechanisms.

use std::path::PathBuf;

use backline_decoders::dem::DetectorErrorModel;
use backline_decoders::dem_decoder::{DemDecoder, DemDecoderSettings};
use backline_decoders::noise::DemNoise;
use backline_decoders::relay::RelayConfig;
use backline_decoders::shots::{ShotFormat, ShotTable};
use backline_decoders::stream::{StreamDecoder, StreamSettings};
use backline_decoders::{BpOsdConfig, OsdMethod};

fn model(name: &str) -> DetectorErrorModel {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/dem")
        .join(name);
    DetectorErrorModel::parse(&std::fs::read_to_string(&path).unwrap(), name).unwrap()
}

fn bposd() -> DemDecoderSettings {
    DemDecoderSettings::from(BpOsdConfig {
        max_iter: 30,
        ms_scaling_factor: 0.625,
        osd_method: OsdMethod::OsdCs,
        osd_order: 7,
        ..BpOsdConfig::default()
    })
}

fn settings(window: usize, commit: usize, decoder: DemDecoderSettings) -> StreamSettings {
    StreamSettings {
        window: Some(window),
        commit: Some(commit),
        decoder,
        ..StreamSettings::default()
    }
}

#[test]
fn stims_surface_models_have_rounds_of_their_checks() {
    let d5 = model("surface_d5_r5_p0.001.dem");
    let s = StreamDecoder::new(&d5, &settings(5, 3, bposd())).unwrap();
    // A Z memory: the first and last rounds compare with the known initial and final data.
    let sizes: Vec<usize> = (0..s.rounds())
        .map(|r| s.round_detectors(r).len())
        .collect();
    assert_eq!(sizes, vec![12, 24, 24, 24, 24, 12]);
    assert_eq!(s.windows().collect::<Vec<_>>(), vec![0..5, 3..6]);
    let d3 = model("surface_d3_r8_p0.01.dem");
    let s = StreamDecoder::new(&d3, &settings(4, 2, bposd())).unwrap();
    assert_eq!(s.rounds(), 9);
    assert_eq!(
        s.windows().collect::<Vec<_>>(),
        vec![0..4, 2..6, 4..8, 6..9]
    );
}

/// stim's 2,000 shots of the distance-3 model: windows of 4 rounds committing 2 (the overlap
/// of 2 rounds covers the distance) against the whole history. The two may differ on a shot
/// or two; their logical errors must agree within statistics.
#[test]
fn windows_match_the_whole_history_on_stims_shots() {
    let dem = model("surface_d3_r8_p0.01.dem");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/dem");
    let read = |name: &str, format, bits| {
        ShotTable::read(&std::fs::read(dir.join(name)).unwrap(), format, bits, name).unwrap()
    };
    let dets = read(
        "surface_d3_r8_p0.01.dets.b8",
        ShotFormat::B8,
        dem.num_detectors(),
    );
    let obs = read("surface_d3_r8_p0.01.obs.01", ShotFormat::Ascii01, 1);
    for decoder in [
        bposd(),
        DemDecoderSettings::from(RelayConfig::default()),
        DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
        DemDecoderSettings::from(backline_decoders::matching::MatchingConfig {
            correlations: true,
        }),
    ] {
        let mut whole = DemDecoder::new(&dem, &decoder).unwrap();
        let mut s = StreamDecoder::new(&dem, &settings(4, 2, decoder.clone())).unwrap();
        let mut events = vec![0u8; dem.num_detectors()];
        let (mut a, mut b) = ([0u8; 1], [0u8; 1]);
        let (mut fails_whole, mut fails_stream, mut differ) = (0u32, 0u32, 0u32);
        for shot in 0..dets.shots() {
            backline_decoders::shots::unpack_into(dets.row(shot), &mut events);
            let truth = obs.get(shot, 0) as u8;
            whole.decode(&events, &mut a).unwrap();
            s.decode_shot(&events, &mut b).unwrap();
            fails_whole += (a[0] != truth) as u32;
            fails_stream += (b[0] != truth) as u32;
            differ += (a != b) as u32;
        }
        // Paired: each shot where they differ moves one failure count by one. Within 3σ of
        // no difference, and the whole-history rate where it is known to be (a few %).
        let sigma = (differ.max(1) as f64).sqrt();
        assert!(
            (fails_stream as f64 - fails_whole as f64).abs() <= 3.0 * sigma + 1.0,
            "{decoder:?}: stream {fails_stream}, whole {fails_whole}, differ {differ}"
        );
        assert!((20..200).contains(&fails_whole), "{fails_whole}");
        assert!(differ < 120, "{differ}");
    }
}

/// Shots sampled from the distance-5 model's mechanisms: W = 5, C = 3, as the bench's figure
/// runs it.
#[test]
fn sampled_shots_of_the_d5_model() {
    let dem = model("surface_d5_r5_p0.001.dem");
    let mut noise = DemNoise::new(&dem, 11);
    let dec = bposd();
    let mut whole = DemDecoder::new(&dem, &dec).unwrap();
    let mut s = StreamDecoder::new(&dem, &settings(5, 3, dec)).unwrap();
    let mut events = vec![0u8; dem.num_detectors()];
    let (mut truth, mut a, mut b) = ([0u8; 1], [0u8; 1], [0u8; 1]);
    let (mut nontrivial, mut differ, mut fails) = (0u32, 0u32, 0u32);
    for _ in 0..2000 {
        nontrivial += (noise.sample(&mut events, &mut truth) > 0) as u32;
        whole.decode(&events, &mut a).unwrap();
        s.decode_shot(&events, &mut b).unwrap();
        differ += (a != b) as u32;
        fails += (b != truth) as u32;
    }
    // At p = 0.001 about 2 mechanisms happen a shot; most shots have some.
    assert!(nontrivial > 800, "{nontrivial}");
    assert!(differ <= 5, "{differ}");
    assert!(fails <= 5, "{fails}");
}

/// Matching: one window over the shot is the whole-history matching decoder, bit for bit; the
/// sliding windows of the d = 5 model agree with it on sampled shots, and every single
/// mechanism is decoded to its own observables whatever the window.
#[test]
fn matching_windows() {
    let dem = model("surface_d5_r5_p0.001.dem");
    let mut whole = DemDecoder::new(
        &dem,
        &DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
    )
    .unwrap();
    let mut one = StreamDecoder::new(
        &dem,
        &settings(
            6,
            6,
            DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
        ),
    )
    .unwrap();
    let mut slid = StreamDecoder::new(
        &dem,
        &settings(
            3,
            1,
            DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
        ),
    )
    .unwrap();
    assert_eq!(slid.windows().count(), 4);
    let mut noise = DemNoise::new(&dem, 5);
    let mut events = vec![0u8; dem.num_detectors()];
    let (mut truth, mut a, mut b, mut c) = ([0u8; 1], [0u8; 1], [0u8; 1], [0u8; 1]);
    let (mut differ, mut fails) = (0u32, 0u32);
    for _ in 0..3000 {
        // Three times the model's noise: more matches cross the commit lines.
        noise.sample(&mut events, &mut truth);
        let mut more = vec![0u8; dem.num_detectors()];
        let mut t2 = [0u8; 1];
        noise.sample(&mut more, &mut t2);
        for (e, m) in events.iter_mut().zip(&more) {
            *e ^= m;
        }
        truth[0] ^= t2[0];
        whole.decode(&events, &mut a).unwrap();
        one.decode_shot(&events, &mut b).unwrap();
        slid.decode_shot(&events, &mut c).unwrap();
        assert_eq!(a, b);
        differ += (a != c) as u32;
        fails += (c != truth) as u32;
    }
    assert!(differ <= 10, "{differ}");
    assert!(fails <= 10, "{fails}");
    for k in 0..dem.num_mechanisms() as u32 {
        let mut dets = vec![0u8; dem.num_detectors()];
        let mut want = [0u8; 1];
        dem.apply_mechanisms([k], &mut dets, &mut want);
        slid.decode_shot(&dets, &mut c).unwrap();
        whole.decode(&dets, &mut a).unwrap();
        assert_eq!(c, a, "mechanism {k}: {:?}", dem.mechanism(k as usize));
    }
}

#[test]
fn matching_streams_refuse_what_they_cannot_do() {
    let dem = model("surface_d5_r5_p0.001.dem");
    let e = StreamDecoder::new(
        &dem,
        &settings(
            7,
            1,
            DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("window = 7 is longer than the model's 6 rounds"),
        "{e}"
    );
    let neg = DetectorErrorModel::parse(
        "error(0.9) D0 D1\nerror(0.1) D0\nerror(0.1) D1\ndetector(0, 0) D0\ndetector(0, 1) D1\n",
        "neg.dem",
    )
    .unwrap();
    let e = StreamDecoder::new(
        &neg,
        &settings(
            1,
            1,
            DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("needs every error's p ≤ ½"), "{e}");
    let hyper = DetectorErrorModel::parse(
        "error(0.1) D0 D1 D2\ndetector(0, 0) D0\ndetector(0, 0) D1\ndetector(0, 1) D2\n",
        "h.dem",
    )
    .unwrap();
    let e = StreamDecoder::new(
        &hyper,
        &settings(
            1,
            1,
            DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("h.dem:1: this error has a part that flips 3 detectors"),
        "{e}"
    );
}

/// A per-window deadline: a deadline nothing can meet (1 ns) stops BP+OSD and Relay-BP at
/// their first iteration with their best answer so far, and every window with detection
/// events is counted; matching finishes its windows (exact) and counts them too. A generous
/// deadline changes nothing.
#[test]
fn deadlines_count_the_windows_that_reach_them() {
    let dem = model("surface_d5_r5_p0.001.dem");
    let mut noise = DemNoise::new(&dem, 3);
    let mut events = vec![0u8; dem.num_detectors()];
    let mut truth = [0u8; 1];
    let shots: Vec<Vec<u8>> = (0..300)
        .map(|_| {
            noise.sample(&mut events, &mut truth);
            events.clone()
        })
        .collect();
    for decoder in [
        bposd(),
        DemDecoderSettings::from(RelayConfig::default()),
        DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
    ] {
        let mut free = StreamDecoder::new(&dem, &settings(5, 3, decoder.clone())).unwrap();
        let mut tight = settings(5, 3, decoder.clone());
        tight.set("deadline_us", "0.001").unwrap();
        let mut tight = StreamDecoder::new(&dem, &tight).unwrap();
        let mut loose = settings(5, 3, decoder.clone());
        loose.deadline = Some(std::time::Duration::from_secs(10));
        let mut loose = StreamDecoder::new(&dem, &loose).unwrap();
        let (mut a, mut b, mut c) = ([0u8; 1], [0u8; 1], [0u8; 1]);
        let mut windows_run = 0u64;
        for e in &shots {
            free.decode_shot(e, &mut a).unwrap();
            tight.decode_shot(e, &mut b).unwrap();
            loose.decode_shot(e, &mut c).unwrap();
            assert_eq!(a, c, "{decoder:?}");
            if decoder.name() == "matching" {
                assert_eq!(a, b);
            }
            windows_run += free.windows().count() as u64;
        }
        let m = tight.deadline_misses();
        assert!(
            m.windows > 50 && m.windows <= windows_run,
            "{decoder:?}: {m:?}"
        );
        assert!(m.rounds >= 3 * m.windows, "{m:?}");
        assert_eq!(loose.deadline_misses().windows, 0);
        assert_eq!(free.deadline_misses().windows, 0);
    }
    let mut s = settings(5, 3, bposd());
    assert!(s.set("deadline_us", "-1").is_err());
    assert!(s.set("deadline_us", "soon").is_err());
}
