//! Median per-shot decode time of BP+OSD on the code library (code-capacity X errors, fixed
//! seeds), printed with a ratio to each benchmark's goal where it has one.
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

use backline_decoders::codes::CssCode;
use backline_decoders::noise::CodeCapacity;
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
        let p99 = times[((times.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)];
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
}
