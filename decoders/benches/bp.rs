//! BP's own speed: nanoseconds per edge-iteration of min-sum flooding (α = 0.625) for each
//! kernel — the `f64` path (`ldpc`'s arithmetic), the `f32` SIMD kernel (the level in force:
//! `BACKLINE_SIMD=portable` for the other), and Relay-BP's first leg on its two kernels — on
//! circuit-level models, with the ratios in the same run.
//!
//! Each case decodes syndromes that BP does not converge on (random syndromes, half their bits
//! set, each checked to run all `ITERATIONS` iterations), so every decode runs the same number
//! of iterations; the figure is the median over the decodes of (time / (iterations × edges)),
//! one thread. The models: stim's `surface_code:rotated_memory_z`, d = 5, 7, 9, rounds = d,
//! p = 0.001 on the four noise arguments, written by `scripts/dev/make_bench_models.py` into
//! `BACKLINE_BENCH_MODELS` (default `target/bench-models`), and the gross code's memory in
//! `../shared/data/` beside the repository; a missing model skips its case with a line saying
//! how to make it.
//!
//! ```text
//! scripts/dev/make_bench_models.py
//! cargo bench -p backline-decoders --bench bp            # every case
//! cargo bench -p backline-decoders --bench bp -- d7      # names containing "d7"
//! ```
//!
//! Beside the one-shot figures, the `f32` kernel's lanes across shots
//! ([`backline_decoders::bp32_lanes`] through `BpDecoder::decode_many`: eight shots a
//! register, as `decode_batch` and sinter run BP): ns per edge-iteration *per shot*, the
//! median over 16-shot batches of the same syndromes; and Relay-BP's first leg on them
//! (`RelayBpDecoder::decode_many`, its memory legs on the lanes).
//!
//! Before timing, each case checks that the `f32` kernel's converged answers reproduce their
//! syndromes on sampled shots, and that the lanes kernel answers sampled shots as the one-shot
//! kernel does (BP, and Relay-BP with relay legs) (every SIMD level giving the portable level's results bit for bit is a unit
//! test of `simd` and `bp32_lanes`). Speed is never asserted in tests; the goal (issue 40: ≤ 0.5 ns per
//! edge-iteration at `f32`) is printed beside each figure.

use std::time::Instant;

mod common;

use backline_decoders::bp::{BpDecoder, BpSettings, Precision};
use backline_decoders::decoder::{bp_prior, usable_mechanisms};
use backline_decoders::noise::DemNoise;
use backline_decoders::relay::{RelayBpDecoder, RelayConfig, RelayKernel};
use backline_decoders::sparse::SparseMatrix;
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

const ITERATIONS: usize = 50;
const GOAL_NS: f64 = 0.5;

struct Model {
    name: &'static str,
    path: &'static str,
}

const MODELS: &[Model] = &[
    Model {
        name: "bp_minsum_surface_z_d5_r5_p0001",
        path: "surface_z_d5_r5_p0.001.dem",
    },
    Model {
        name: "bp_minsum_surface_z_d7_r7_p0001",
        path: "surface_z_d7_r7_p0.001.dem",
    },
    Model {
        name: "bp_minsum_surface_z_d9_r9_p0001",
        path: "surface_z_d9_r9_p0.001.dem",
    },
    Model {
        name: "bp_minsum_gross_z_r12_p0003",
        path: "../shared/data/gross_code_memory_z/dem_z_detectors.dem",
    },
];

fn settings(precision: Precision) -> BpSettings {
    BpSettings {
        max_iter: ITERATIONS,
        ms_scaling_factor: 0.625,
        precision,
        ..BpSettings::default()
    }
}

/// The decoder of `dem`'s usable mechanisms at `precision`.
fn decoder(h: &SparseMatrix, priors: &[f64], precision: Precision) -> BpDecoder {
    BpDecoder::from_sparse(h, 0.01, Some(priors), settings(precision)).unwrap()
}

/// Shots per timed batch of the lanes kernel.
const BATCH: usize = 16;

/// Median over batches of ns per edge-iteration per shot of [`BpDecoder::decode_many`] (the
/// lanes kernel: several shots at once) on `BATCH` shots cycling through `syndromes` (each
/// runs all iterations).
fn time_batch(dec: &mut BpDecoder, syndromes: &[Vec<u8>], edges: usize) -> f64 {
    let mut per = Vec::new();
    for _ in 0..60 {
        let t0 = Instant::now();
        dec.decode_many(
            BATCH,
            |shot, s| -> Result<bool, backline_decoders::DecoderError> {
                s.copy_from_slice(&syndromes[shot % syndromes.len()]);
                Ok(true)
            },
            |_, r| {
                let (bp, _) = r.expect("every shot decoded");
                assert_eq!(bp.iterations(), ITERATIONS);
                Ok(())
            },
        )
        .unwrap();
        let ns = t0.elapsed().as_nanos() as f64;
        per.push(ns / (BATCH * ITERATIONS * edges) as f64);
    }
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

/// [`time_batch`] for Relay-BP ([`RelayBpDecoder::decode_many`], its legs on the lanes): the
/// median over batches of ns per edge-iteration per shot, the iterations counted over every
/// shot's legs.
fn time_relay_batch(dec: &mut RelayBpDecoder, syndromes: &[Vec<u8>], edges: usize) -> f64 {
    let mut per = Vec::new();
    for _ in 0..60 {
        let mut iterations = 0usize;
        let t0 = Instant::now();
        dec.decode_many(
            BATCH,
            |shot, s| -> Result<(), backline_decoders::DecoderError> {
                s.copy_from_slice(&syndromes[shot % syndromes.len()]);
                Ok(())
            },
            |_, _, info| {
                iterations += info.iterations as usize;
                Ok(())
            },
        )
        .unwrap();
        let ns = t0.elapsed().as_nanos() as f64;
        per.push(ns / (iterations * edges).max(1) as f64);
    }
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

/// Median ns per edge-iteration over `syndromes` (each runs all iterations).
fn time(dec: &mut BpDecoder, syndromes: &[Vec<u8>], edges: usize) -> f64 {
    let mut per = Vec::with_capacity(syndromes.len() * 3);
    for _ in 0..3 {
        for s in syndromes {
            let t0 = Instant::now();
            dec.decode(s).unwrap();
            let ns = t0.elapsed().as_nanos() as f64;
            assert_eq!(dec.iterations(), ITERATIONS);
            per.push(ns / (ITERATIONS * edges) as f64);
        }
    }
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

/// Shots, each with the one-shot f32 kernel's answer (converged, iterations, decoding).
type Answered = Vec<(Vec<u8>, (bool, usize, Vec<u8>))>;

/// Checks on shots sampled from `dem` that the f32 kernel's converged answers reproduce their
/// syndromes and that the lanes kernel answers as the one-shot kernel; returns those shots.
fn check_f32(
    name: &str,
    dem: &backline_decoders::dem::DetectorErrorModel,
    h: &SparseMatrix,
    dec: &mut BpDecoder,
) -> Answered {
    // Check: sampled shots' converged f32 answers reproduce their syndromes.
    let mut noise = DemNoise::new(dem, 1);
    let (mut dets, mut obs) = (
        vec![0u8; dem.num_detectors()],
        vec![0u8; dem.num_observables()],
    );
    let mut back = vec![0u8; h.rows()];
    for _ in 0..200 {
        noise.sample(&mut dets, &mut obs);
        dec.decode(&dets).unwrap();
        if dec.converged() {
            back.fill(0);
            for (c, &d) in dec.decoding().iter().enumerate() {
                if d != 0 {
                    for &r in h.col(c) {
                        back[r as usize] ^= 1;
                    }
                }
            }
            assert_eq!(back, dets, "{name}: a converged f32 answer is wrong");
        }
    }
    // Check: the lanes kernel answers those shots as the one-shot kernel did.
    let mut shots = Vec::new();
    let mut noise = DemNoise::new(dem, 2);
    for _ in 0..61 {
        noise.sample(&mut dets, &mut obs);
        dec.decode(&dets).unwrap();
        let one = (dec.converged(), dec.iterations(), dec.decoding().to_vec());
        shots.push((dets.clone(), one));
    }
    dec.decode_many(
        shots.len(),
        |s, out| -> Result<bool, backline_decoders::DecoderError> {
            out.copy_from_slice(&shots[s].0);
            Ok(true)
        },
        |s, r| {
            let (bp, _) = r.expect("every shot decoded");
            let got = (bp.converged(), bp.iterations(), bp.decoding().to_vec());
            assert_eq!(got, shots[s].1, "{name}: the lanes kernel differs");
            Ok(())
        },
    )
    .unwrap();
    shots
}

/// Checks that Relay-BP with relay legs answers `shots` on the lanes as one at a time.
fn check_relay_lanes(name: &str, h: &SparseMatrix, priors: &[f64], shots: &Answered) {
    let legs = RelayConfig {
        pre_iter: 20,
        num_sets: 6,
        set_max_iter: 15,
        stop_nconv: 2,
        ..RelayConfig::default()
    };
    let mut relay = RelayBpDecoder::new(h, priors, &legs).unwrap();
    let mut out = vec![0u8; h.cols()];
    let want: Vec<_> = shots
        .iter()
        .map(|(s, _)| {
            let info = relay.decode(s, &mut out).unwrap();
            (out.clone(), info)
        })
        .collect();
    relay
        .decode_many(
            shots.len(),
            |s, out| -> Result<(), backline_decoders::DecoderError> {
                out.copy_from_slice(&shots[s].0);
                Ok(())
            },
            |s, c, info| {
                let same = (c, info) == (&want[s].0[..], want[s].1);
                assert!(same, "{name}: Relay-BP on the lanes differs");
                Ok(())
            },
        )
        .unwrap();
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    println!(
        "min-sum flooding, α = 0.625, {ITERATIONS} iterations, one thread; SIMD level in force: {}",
        backline_decoders::simd::level()
    );
    for model in MODELS {
        if !filters.is_empty() && !filters.iter().any(|f| model.name.contains(f.as_str())) {
            continue;
        }
        let Some(dem) = common::read_model(model.name, model.path) else {
            continue;
        };
        let kept = usable_mechanisms(&dem).unwrap();
        let h = dem.check_matrix().select_columns(&kept);
        let priors: Vec<f64> = kept
            .iter()
            .map(|&k| bp_prior(dem.priors()[k as usize]))
            .collect();
        let edges = h.nnz();
        let mut f32_dec = decoder(&h, &priors, Precision::F32);
        let shots = check_f32(model.name, &dem, &h, &mut f32_dec);
        // Syndromes BP runs all its iterations on.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut f64_dec = decoder(&h, &priors, Precision::F64);
        let mut syndromes = Vec::new();
        while syndromes.len() < 20 {
            let s: Vec<u8> = (0..h.rows()).map(|_| (rng.next_u32() & 1) as u8).collect();
            f64_dec.decode(&s).unwrap();
            f32_dec.decode(&s).unwrap();
            if f64_dec.iterations() == ITERATIONS && f32_dec.iterations() == ITERATIONS {
                syndromes.push(s);
            }
        }
        let t64 = time(&mut f64_dec, &syndromes, edges);
        let t32 = time(&mut f32_dec, &syndromes, edges);
        let t32_lanes = time_batch(&mut f32_dec, &syndromes, edges);
        // Relay-BP's first leg alone (memory 0.1, α = 0.625) on each of its kernels.
        let relay_config = |kernel| RelayConfig {
            pre_iter: ITERATIONS,
            num_sets: 0,
            stop_nconv: 1,
            alpha: Some(0.625),
            kernel,
            ..RelayConfig::default()
        };
        let relay_time = |kernel| {
            let mut relay = RelayBpDecoder::new(&h, &priors, &relay_config(kernel)).unwrap();
            let mut out = vec![0u8; h.cols()];
            let mut per = Vec::new();
            for _ in 0..3 {
                for s in &syndromes {
                    let t0 = Instant::now();
                    let info = relay.decode(s, &mut out).unwrap();
                    let ns = t0.elapsed().as_nanos() as f64;
                    per.push(ns / (info.iterations as usize * edges).max(1) as f64);
                }
            }
            per.sort_by(f64::total_cmp);
            per[per.len() / 2]
        };
        let relay_scalar = relay_time(RelayKernel::Scalar);
        let relay_simd = relay_time(RelayKernel::Simd);
        check_relay_lanes(model.name, &h, &priors, &shots);
        let relay_lanes = time_relay_batch(
            &mut RelayBpDecoder::new(&h, &priors, &relay_config(RelayKernel::Simd)).unwrap(),
            &syndromes,
            edges,
        );
        println!(
            "{}: {} checks × {} mechanisms, {edges} edges: f64 {t64:.3} ns, f32 ({}) {t32:.3} ns \
             per edge-iteration = {:.2}x f64 (goal {GOAL_NS} ns: {:.2}x the goal); f32 lanes \
             across shots ({} shots a register, {BATCH}-shot batches) {t32_lanes:.3} ns per \
             edge-iteration per shot = {:.2}x f32 one shot ({:.2}x the goal); Relay-BP's first \
             leg: scalar {relay_scalar:.3} ns, simd {relay_simd:.3} ns = {:.2}x, simd lanes \
             across shots {relay_lanes:.3} ns per shot = {:.2}x simd one shot",
            model.name,
            h.rows(),
            h.cols(),
            backline_decoders::simd::level(),
            t32 / t64,
            t32 / GOAL_NS,
            backline_decoders::bp32_lanes::SHOT_LANES,
            t32_lanes / t32,
            t32_lanes / GOAL_NS,
            relay_simd / relay_scalar,
            relay_lanes / relay_simd
        );
    }
}
