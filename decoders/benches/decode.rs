//! Median per-shot decode time of BP+OSD on the code library (code-capacity X errors, fixed
//! seeds), and of the model decoders on circuit-level models (matching on rotated surface codes
//! d = 5, 9, 13 at p = 0.001; Relay-BP on the [[144,12,12]] gross code's memory), printed with a
//! ratio to each benchmark's goal where it has one.
//!
//! The model cases read `decoders/tests/data/dem/surface_d5_r5_p0.001.dem`, the d = 9 and 13
//! models that `scripts/dev/make_bench_models.py` writes into `BACKLINE_BENCH_MODELS` (default
//! `target/bench-models`), and the gross code's model in `../shared/data/` beside the
//! repository; a missing model skips its case with a line saying how to make it. Their shots are
//! sampled from the model (seeded); the check pass decodes each shot through both the packed and
//! the unpacked call, which must agree, and prints the logical error rate (a decoder that got
//! faster by answering wrong shows there). Under each model case a second line gives the
//! decode's own tail: each shot's fastest of three passes (what an interrupt or a preemption
//! adds lands in one pass, not in all three), P99.9 against the median, and the median time of
//! the shots with the median number of detection events against that of the shots with the
//! most (the top 0.1%): an exact matching's time follows the shot's detection events.
//!
//! ```text
//! cargo bench -p backline-decoders --bench decode            # every case
//! cargo bench -p backline-decoders --bench decode -- hgp13   # names containing "hgp13"
//! ```
//!
//! Each case first checks its decoder: every correction must reproduce its syndrome (else the
//! bench panics) and the logical error rate is printed beside the time, so a faster but wrong
//! decoder shows. Names carry the parameters: `bposd_<code>_<bp>_<iters>_<osd>_p<rate>`.
//! Timings are per call of `BpOsdDecoder::decode`, read with the monotonic clock around each
//! call (about 20 ns of the figure is the clock read). The comparison with `ldpc` lives in
//! `scripts/dev/compare_ldpc.py`; speed is never asserted in tests.

use std::time::Instant;

mod common;

use backline_decoders::codes::CssCode;
use backline_decoders::dem_decoder::DemDecoder;
use backline_decoders::noise::CodeCapacity;
use backline_decoders::noise::DemNoise;
use backline_decoders::registry::{self, Profile};
use backline_decoders::{BpMethod, BpOsdConfig, BpOsdDecoder, OsdMethod, gf2};

struct Case {
    code: &'static str,
    p: f64,
    bp: &'static str,
    iters: &'static str,
    osd: &'static str,
    goal_ns: Option<f64>,
}

fn config(code: &CssCode, c: &Case) -> BpOsdConfig {
    let (bp_method, ms) = match c.bp {
        "ms1.0" => (BpMethod::MinimumSum, 1.0),
        "ms0.625" => (BpMethod::MinimumSum, 0.625),
        _ => (BpMethod::ProductSum, 1.0),
    };
    let free = code.n() - gf2::rank(&code.hz);
    BpOsdConfig {
        error_rate: c.p,
        bp_method,
        ms_scaling_factor: ms,
        max_iter: if c.iters == "it10" { 10 } else { code.n() },
        osd_method: if c.osd == "osd0" {
            OsdMethod::Osd0
        } else {
            OsdMethod::OsdCs
        },
        osd_order: if c.osd == "osd0" { 0 } else { free.min(7) },
        ..BpOsdConfig::default()
    }
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for p in [0.01, 0.05, 0.1] {
        v.push(Case {
            code: "hgp13",
            p,
            bp: "ms0.625",
            iters: "it10",
            osd: "cs7",
            goal_ns: Some(1000.0),
        });
        v.push(Case {
            code: "hgp13",
            p,
            bp: "ms1.0",
            iters: "it10",
            osd: "osd0",
            goal_ns: Some(1000.0),
        });
    }
    for code in [
        "steane", "surface3", "surface5", "surface7", "surface9", "bb72", "bb144",
    ] {
        for p in [0.01, 0.05, 0.1] {
            for (bp, iters, osd) in [
                ("ms0.625", "it10", "cs7"),
                ("ms1.0", "itn", "osd0"),
                ("ps", "itn", "cs7"),
            ] {
                v.push(Case {
                    code,
                    p,
                    bp,
                    iters,
                    osd,
                    goal_ns: None,
                });
            }
        }
    }
    v
}

fn median(sorted: &[f64]) -> f64 {
    sorted[(sorted.len() - 1) / 2]
}

/// The `q` quantile of a non-empty sorted sample (the smallest value with at least `q` of the
/// sample at or below it).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 * q).ceil() as usize).max(1) - 1]
}

/// A circuit-level case: a registered decoder on a model file.
struct ModelCase {
    name: &'static str,
    decoder: &'static str,
    /// The model: a path under the repository, or a file name under BACKLINE_BENCH_MODELS.
    model: &'static str,
    shots: usize,
    goal_ns: Option<f64>,
}

/// The model cases; goals from SPEC §5 (PyMatching 2.4 `decode_batch` at p = 0.001: 0.33 µs
/// at d = 5, 3.6 µs at d = 9, 10.6 µs at d = 13).
fn model_cases() -> Vec<ModelCase> {
    vec![
        ModelCase {
            name: "matching_surface_z_d5_r5_p0001",
            decoder: "matching",
            model: "decoders/tests/data/dem/surface_d5_r5_p0.001.dem",
            shots: 20000,
            goal_ns: Some(330.0),
        },
        ModelCase {
            name: "matching_surface_x_d9_r9_p0001",
            decoder: "matching",
            model: "surface_x_d9_r9_p0.001.dem",
            shots: 10000,
            goal_ns: Some(3600.0),
        },
        ModelCase {
            name: "matching_surface_x_d13_r13_p0001",
            decoder: "matching",
            model: "surface_x_d13_r13_p0.001.dem",
            shots: 5000,
            goal_ns: Some(10600.0),
        },
        ModelCase {
            name: "relaybp_gross_memz_d12_r12_p0003",
            decoder: "relay-bp",
            model: "../shared/data/gross_code_memory_z/dem_z_detectors.dem",
            shots: 200,
            goal_ns: None,
        },
    ]
}

/// Runs the model cases whose names pass `filters`.
fn run_models(filters: &[String], shots_override: Option<usize>) {
    for case in model_cases() {
        if !filters.is_empty() && !filters.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        let Some(dem) = common::read_model(case.name, case.model) else {
            continue;
        };
        let settings = registry::settings(case.decoder, Profile::Offline).unwrap();
        let mut dec = DemDecoder::new(&dem, &settings).unwrap();
        let shots = shots_override.unwrap_or(case.shots);
        let (nd, no) = (dem.num_detectors(), dem.num_observables());
        let mut noise = DemNoise::new(&dem, 11);
        let (mut events, mut truth) = (vec![0u8; nd], vec![0u8; no]);
        let mut packed = vec![0u8; shots * nd.div_ceil(8)];
        let mut truths = vec![0u8; shots * no];
        for (row, t) in packed
            .chunks_exact_mut(nd.div_ceil(8))
            .zip(truths.chunks_exact_mut(no))
        {
            noise.sample(&mut events, &mut truth);
            for (i, &e) in events.iter().enumerate() {
                row[i / 8] |= e << (i % 8);
            }
            t.copy_from_slice(&truth);
        }
        // Check pass (also the warm-up): the packed and unpacked calls agree.
        let mut out = vec![0u8; no.div_ceil(8)];
        let mut unpacked = vec![0u8; no];
        let mut fails = 0usize;
        for (row, t) in packed
            .chunks_exact(nd.div_ceil(8))
            .zip(truths.chunks_exact(no))
        {
            dec.decode_packed(row, &mut out).unwrap();
            for (i, e) in events.iter_mut().enumerate() {
                *e = row[i / 8] >> (i % 8) & 1;
            }
            dec.decode(&events, &mut unpacked).unwrap();
            for (l, &u) in unpacked.iter().enumerate() {
                assert_eq!(
                    u,
                    out[l / 8] >> (l % 8) & 1,
                    "{}: packed vs unpacked",
                    case.name
                );
            }
            fails += (unpacked != t) as usize;
        }
        // FNV-1a over every prediction: two builds that answer alike print the same `preds`.
        let mut preds = 0xcbf2_9ce4_8422_2325u64;
        let mut times = Vec::with_capacity(shots);
        for row in packed.chunks_exact(nd.div_ceil(8)) {
            let t0 = Instant::now();
            let info = dec
                .decode_packed(std::hint::black_box(row), &mut out)
                .unwrap();
            times.push(t0.elapsed().as_nanos() as f64);
            std::hint::black_box(info);
            for &b in &out {
                preds = (preds ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
        }
        times.sort_by(f64::total_cmp);
        let med = median(&times);
        let p99 = quantile(&times, 0.99);
        let goal = case
            .goal_ns
            .map_or("-".to_string(), |g| format!("{:.2}x", med / g));
        println!(
            "{:44} {shots:>7} {med:>10.0} {p99:>10.0} {:>8.4} {:>7} {goal:>8}  preds {:08x}",
            case.name,
            fails as f64 / shots as f64,
            "-",
            preds as u32
        );
        println!("{}", tail_line(&mut dec, &packed, nd.div_ceil(8)));
    }
}

/// The decode's own tail: each shot's fastest of three timed passes (an interrupt or a
/// preemption lands in one pass, not in all three), its P99.9 against its median, and how the
/// time follows the shot's detection events: the median time of the shots with the median
/// number of events against that of the shots with the most (the top 0.1%).
fn tail_line(dec: &mut DemDecoder, packed: &[u8], row_bytes: usize) -> String {
    let shots = packed.len() / row_bytes;
    let mut best = vec![f64::INFINITY; shots];
    let mut out = vec![0u8; dec.num_observables().div_ceil(8)];
    for _ in 0..3 {
        for (b, row) in best.iter_mut().zip(packed.chunks_exact(row_bytes)) {
            let t0 = Instant::now();
            let info = dec.decode_packed(std::hint::black_box(row), &mut out);
            *b = b.min(t0.elapsed().as_nanos() as f64);
            std::hint::black_box(info).unwrap();
        }
    }
    let events: Vec<u32> = packed
        .chunks_exact(row_bytes)
        .map(|r| r.iter().map(|b| b.count_ones()).sum())
        .collect();
    let mut sorted = best.clone();
    sorted.sort_by(f64::total_cmp);
    let (p50, p999) = (median(&sorted), quantile(&sorted, 0.999));
    let mut ev: Vec<f64> = events.iter().map(|&e| f64::from(e)).collect();
    ev.sort_by(f64::total_cmp);
    let (e50, e999) = (median(&ev), quantile(&ev, 0.999));
    let median_where = |keep: &dyn Fn(f64) -> bool| {
        let mut t: Vec<f64> = best
            .iter()
            .zip(&events)
            .filter(|(_, e)| keep(f64::from(**e)))
            .map(|(t, _)| *t)
            .collect();
        t.sort_by(f64::total_cmp);
        if t.is_empty() { f64::NAN } else { median(&t) }
    };
    let (t_typical, t_many) = (median_where(&|e| e == e50), median_where(&|e| e >= e999));
    format!(
        "  fastest of 3 passes per shot: P50 {p50:.0} ns, P99.9 {p999:.0} ns = {:.1}x P50; \
         detection events P50 {e50}, P99.9 {e999}; median time of the shots with {e50}: \
         {t_typical:.0} ns, with {e999} or more: {t_many:.0} ns ({:.1}x)",
        p999 / p50,
        t_many / t_typical
    )
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    println!(
        "{:44} {:>7} {:>10} {:>10} {:>8} {:>7} {:>8}",
        "name", "shots", "median_ns", "p99_ns", "LER", "conv", "goal"
    );
    // BACKLINE_BENCH_SHOTS overrides the shot count (for profiling under valgrind).
    let shots_override: Option<usize> = std::env::var("BACKLINE_BENCH_SHOTS")
        .ok()
        .and_then(|v| v.parse().ok());
    let mut codes: Vec<(String, CssCode)> = Vec::new();
    for case in cases() {
        let name = format!(
            "bposd_{}_{}_{}_{}_p{}",
            case.code,
            case.bp,
            case.iters,
            case.osd,
            case.p.to_string().replace('.', "")
        );
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        if !codes.iter().any(|(n, _)| n == case.code) {
            codes.push((case.code.to_owned(), CssCode::by_name(case.code).unwrap()));
        }
        let code = &codes.iter().find(|(n, _)| n == case.code).unwrap().1;
        let h = &code.hz;
        let mut dec = BpOsdDecoder::new(h, &config(code, &case)).unwrap();
        // Fewer shots for the slow cases, enough for a stable median.
        let shots = match (code.n(), case.iters) {
            _ if shots_override.is_some() => shots_override.unwrap_or_default(),
            (n, "itn") if n >= 72 => 2000,
            (n, _) if n >= 72 => 5000,
            _ => 20000,
        };
        let mut noise = CodeCapacity::new(case.p, 7);
        let n = code.n();
        let mut errors = vec![0u8; shots * n];
        let mut syndromes = vec![0u8; shots * h.rows()];
        for (e, s) in errors
            .chunks_exact_mut(n)
            .zip(syndromes.chunks_exact_mut(h.rows()))
        {
            noise.sample(e);
            h.mul_bytes(e, s);
        }
        let mut corr = vec![0u8; n];
        let mut check = vec![0u8; h.rows()];
        let mut residual = vec![0u8; n];
        // Check pass (also the warm-up).
        let mut fails = 0usize;
        let mut converged = 0usize;
        for (e, s) in errors.chunks_exact(n).zip(syndromes.chunks_exact(h.rows())) {
            let info = dec.decode(s, &mut corr).unwrap();
            converged += info.converged as usize;
            h.mul_bytes(&corr, &mut check);
            assert_eq!(
                check, s,
                "{name}: a correction does not reproduce its syndrome"
            );
            for ((r, a), b) in residual.iter_mut().zip(e).zip(&corr) {
                *r = a ^ b;
            }
            fails += code.is_logical_x_error(&residual) as usize;
        }
        // Timed pass.
        let mut times = Vec::with_capacity(shots);
        for s in syndromes.chunks_exact(h.rows()) {
            let t0 = Instant::now();
            let info = dec.decode(std::hint::black_box(s), &mut corr).unwrap();
            let dt = t0.elapsed();
            std::hint::black_box(info);
            times.push(dt.as_nanos() as f64);
        }
        times.sort_by(f64::total_cmp);
        let med = median(&times);
        let p99 = quantile(&times, 0.99);
        let goal = match case.goal_ns {
            Some(g) => format!("{:.2}x", med / g),
            None => "-".into(),
        };
        println!(
            "{name:44} {shots:>7} {med:>10.0} {p99:>10.0} {:>8.4} {:>7.3} {goal:>8}",
            fails as f64 / shots as f64,
            converged as f64 / shots as f64
        );
    }
    run_models(&filters, shots_override);
}
