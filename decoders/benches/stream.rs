//! The streaming decoder's compute, without a transport: per-round and per-shot time of
//! `stream_surface5_r5_p0001_w5c3_bposd` (the bench's figure model, `tests/data/dem/`) on shots
//! sampled from its mechanisms, against the whole-history decoder on the same shots in the
//! same run.
//!
//! ```text
//! cargo bench -p backline-decoders --bench stream [-- SHOTS]
//! ```
//!
//! Per round: `push_round` and the decode of a window it made ready; per shot: `finish` (the
//! last window) — what `get_corrections` costs a server beyond its transport. Every shot's
//! prediction is checked against the shot's true observables (failures printed) and against
//! the whole-history decoder's (shots that differ printed), so a faster but wrong decoder
//! shows. Speed is never asserted in tests.

use std::time::Instant;

use backline_decoders::dem::DetectorErrorModel;
use backline_decoders::dem_decoder::{DemDecoder, DemDecoderSettings};
use backline_decoders::noise::DemNoise;
use backline_decoders::stream::{StreamDecoder, StreamSettings};
use backline_decoders::{BpOsdConfig, OsdMethod};

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn pack(bits: &[u8], out: &mut [u8]) {
    out.fill(0);
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= b << (i % 8);
    }
}

fn main() {
    let shots: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/dem/surface_d5_r5_p0.001.dem"
    );
    let dem = DetectorErrorModel::parse(&std::fs::read_to_string(path).unwrap(), path).unwrap();
    let decoder = DemDecoderSettings::from(BpOsdConfig {
        max_iter: 30,
        ms_scaling_factor: 0.625,
        osd_method: OsdMethod::OsdCs,
        osd_order: 7,
        ..BpOsdConfig::default()
    });
    let settings = StreamSettings {
        window: Some(5),
        commit: Some(3),
        decoder: decoder.clone(),
        ..StreamSettings::default()
    };
    let mut s = StreamDecoder::new(&dem, &settings).unwrap();
    let mut whole = DemDecoder::new(&dem, &decoder).unwrap();
    let mut noise = DemNoise::new(&dem, 1);
    let mut events = vec![0u8; dem.num_detectors()];
    let mut truth = [0u8; 1];
    let mut packed: Vec<Vec<u8>> = (0..s.rounds())
        .map(|r| vec![0u8; s.round_detectors(r).len().div_ceil(8)])
        .collect();
    let (mut round_ns, mut shot_ns, mut whole_ns) = (Vec::new(), Vec::new(), Vec::new());
    let (mut fails, mut fails_whole, mut differ) = (0u64, 0u64, 0u64);
    let mut out = [0u8; 1];
    for _ in 0..shots {
        noise.sample(&mut events, &mut truth);
        for (r, p) in packed.iter_mut().enumerate() {
            pack(&events[s.round_detectors(r)], p);
        }
        s.reset();
        for (r, p) in packed.iter().enumerate() {
            let t0 = Instant::now();
            if s.push_round(r as u32, p).unwrap() {
                s.decode_ready().unwrap();
            }
            round_ns.push(t0.elapsed().as_nanos() as f64);
        }
        let t0 = Instant::now();
        s.finish().unwrap();
        shot_ns.push(t0.elapsed().as_nanos() as f64);
        let t0 = Instant::now();
        whole.decode(&events, &mut out).unwrap();
        whole_ns.push(t0.elapsed().as_nanos() as f64);
        fails += (s.observables() != truth) as u64;
        fails_whole += (out != truth) as u64;
        differ += (s.observables() != out) as u64;
    }
    let (r, f, w) = (
        median(&mut round_ns),
        median(&mut shot_ns),
        median(&mut whole_ns),
    );
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "stream_surface5_r5_p0001_w5c3_bposd: {shots} shots, round median {r:.0} ns (mean {:.0}), \
         finish median {f:.0} ns (mean {:.0}); whole-history decode median {w:.0} ns (mean {:.0}); \
         finish/whole median {:.3}; logical failures {fails} (whole history {fails_whole}), \
         {differ} shots differ",
        mean(&round_ns),
        mean(&shot_ns),
        mean(&whole_ns),
        f / w
    );
}
