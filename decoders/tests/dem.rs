//! Detector error models and shot files against stim: the fixture in `tests/data/dem/` (see its
//! README) parsed as stim reads it, its shot files in both formats, and both DEM decoders on
//! its shots. The [[144,12,12]] model in `../shared/data/` (beside the repository) is checked
//! when present.

use std::path::PathBuf;

use backline_decoders::dem::DetectorErrorModel;
use backline_decoders::dem_decoder::{DemDecoder, DemDecoderSettings, decode_batch};
use backline_decoders::relay::RelayConfig;
use backline_decoders::shots::{ShotFormat, ShotTable};
use backline_decoders::{BpMethod, BpOsdConfig, OsdMethod};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/dem")
        .join(name)
}

fn fixture() -> DetectorErrorModel {
    let text = std::fs::read_to_string(data("surface_d3_r8_p0.01.dem")).unwrap();
    DetectorErrorModel::parse(&text, "surface_d3_r8_p0.01.dem").unwrap()
}

#[test]
fn the_model_reads_as_stim_reads_it() {
    let dem = fixture();
    let text = std::fs::read_to_string(data("surface_d3_r8_p0.01.columns")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# 64 detectors, 1 observables"));
    assert_eq!((dem.num_detectors(), dem.num_observables()), (64, 1));
    let mut k = 0;
    for line in lines {
        let parts: Vec<&str> = line.split('|').map(str::trim).collect();
        let p: f64 = parts[0].parse().unwrap();
        let ints =
            |s: &str| -> Vec<u32> { s.split_whitespace().map(|t| t.parse().unwrap()).collect() };
        let m = dem.mechanism(k);
        assert!(
            (m.p - p).abs() <= 1e-12 * p,
            "mechanism {k}: {} vs stim {p}",
            m.p
        );
        assert_eq!(m.detectors, ints(parts[1]).as_slice(), "mechanism {k}");
        assert_eq!(m.observables, ints(parts[2]).as_slice(), "mechanism {k}");
        k += 1;
    }
    assert_eq!(k, dem.num_mechanisms());
    // Coordinates with the shifts applied: the last round's detectors sit at t = 8.
    assert_eq!(dem.detector_time(0), Some(0.0));
    assert_eq!(dem.detector_time(63), Some(8.0));
    assert_eq!(dem.detectors_up_to_time(0.0), 0..4);
}

#[test]
fn shot_files_in_both_formats_agree() {
    let a = ShotTable::read(
        &std::fs::read(data("surface_d3_r8_p0.01.dets.01")).unwrap(),
        ShotFormat::Ascii01,
        64,
        "dets.01",
    )
    .unwrap();
    let b = ShotTable::read(
        &std::fs::read(data("surface_d3_r8_p0.01.dets.b8")).unwrap(),
        ShotFormat::B8,
        64,
        "dets.b8",
    )
    .unwrap();
    assert_eq!(a.shots(), 2000);
    assert_eq!(a, b);
    assert_eq!(
        a.to_bytes(ShotFormat::B8),
        std::fs::read(data("surface_d3_r8_p0.01.dets.b8")).unwrap()
    );
    // The wrong width is an error naming the line.
    let e = ShotTable::read(
        &std::fs::read(data("surface_d3_r8_p0.01.dets.01")).unwrap(),
        ShotFormat::Ascii01,
        63,
        "dets.01",
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "dets.01:1: shot has 64 bits, expected 63");
}

/// Logical failures of `settings` on the fixture's shots.
fn failures(settings: &DemDecoderSettings) -> (usize, usize) {
    let dem = fixture();
    let mut dets = ShotTable::read(
        &std::fs::read(data("surface_d3_r8_p0.01.dets.b8")).unwrap(),
        ShotFormat::B8,
        64,
        "dets.b8",
    )
    .unwrap();
    // The first 500 shots keep the debug-build test short.
    dets.truncate(500);
    let obs = ShotTable::read(
        &std::fs::read(data("surface_d3_r8_p0.01.obs.01")).unwrap(),
        ShotFormat::Ascii01,
        1,
        "obs.01",
    )
    .unwrap();
    let dec = DemDecoder::new(&dem, settings).unwrap();
    let batch = decode_batch(&dec, &dets, 2, false).unwrap();
    let fails = (0..dets.shots())
        .filter(|&s| batch.predictions.row(s) != obs.row(s))
        .count();
    // Without a decoder (predict no flip) the failures are the shots whose observable flipped.
    let flips = (0..dets.shots()).filter(|&s| obs.get(s, 0)).count();
    (fails, flips)
}

#[test]
fn both_decoders_correct_most_shots() {
    let bposd = DemDecoderSettings::from(BpOsdConfig {
        bp_method: BpMethod::MinimumSum,
        ms_scaling_factor: 0.625,
        max_iter: 30,
        osd_method: OsdMethod::OsdCs,
        osd_order: 7,
        ..BpOsdConfig::default()
    });
    let relay = DemDecoderSettings::from(RelayConfig::default());
    for s in [bposd, relay] {
        let (fails, flips) = failures(&s);
        // d = 3 at p = 0.01 (about threshold) over 8 rounds: a quarter of the shots flip the
        // observable; both decoders leave about 7.5 % of the shots wrong (150 and 152 of all
        // 2,000).
        assert!(flips > 100, "{flips}");
        assert!(
            fails * 2 < flips,
            "{s:?}: {fails} failures, {flips} flips undecoded"
        );
    }
}

/// `../shared/data/gross_code_memory_z/` beside the repository, if it is there.
fn gross_dir() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/gross_code_memory_z");
    if d.join("dem_z_detectors.dem").exists() {
        Some(d)
    } else {
        eprintln!(
            "skipped: {} is absent (the [[144,12,12]] circuit data lives beside the repository)",
            d.display()
        );
        None
    }
}

#[test]
fn the_gross_code_model_parses() {
    let Some(dir) = gross_dir() else { return };
    let text = std::fs::read_to_string(dir.join("dem_z_detectors.dem")).unwrap();
    let dem = DetectorErrorModel::parse(&text, "dem_z_detectors.dem").unwrap();
    assert_eq!(
        (
            dem.num_detectors(),
            dem.num_observables(),
            dem.num_mechanisms()
        ),
        (936, 12, 8784)
    );
    assert_eq!(dem.check_matrix().nnz(), 30672);
}
