//! The streaming runs of `backline bench --responder stream:…`: what a `stream:` spec needs
//! (its model, payload sizes and inner decoder), the run itself through a backline session or
//! a CUQR client ([`backline_bench::stream`]), the CUQR floor, and the lines that report the
//! logical error rates.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use backline_bench::stats::{Summary, wilson_interval};
use backline_bench::stream::{self as sb, StreamLink, StreamOutcome, StreamRun, WholeHistory};
use backline_decoders::dem::DemLimits;
use backline_decoders::dem_decoder::DemDecoderSettings;
use backline_decoders::stream::StreamModel;
use backline_wire::stream::STREAM_HEADER_BYTES;

/// Whether a spec is a streaming decoder.
pub fn is_stream(spec: &str) -> bool {
    spec.starts_with("stream:")
}

/// What the bench needs of a `stream:` spec.
pub struct StreamPlan {
    /// The spec.
    pub spec: String,
    /// A short name for tables and file names: `stream-<model file stem>`.
    pub label: String,
    /// The model the shots are sampled from (rolled when its rounds repeat).
    pub dem: StreamModel,
    /// The limits the spec's model was read within (the whole history's too).
    pub limits: DemLimits,
    /// Its inner decoder (for the whole-history comparison).
    pub decoder: DemDecoderSettings,
    /// Rounds per shot.
    pub rounds: usize,
    /// Largest request payload (an enqueue of the widest round).
    pub request_bytes: usize,
    /// Largest reply payload (the corrections).
    pub reply_bytes: usize,
    /// Widest round, in detectors.
    pub widest_round: usize,
    /// The spec's per-window deadline.
    pub deadline: Option<Duration>,
}

impl StreamPlan {
    /// Reads the spec's model and builds its decoder once (a bad spec is the bench's error).
    pub fn new(spec: &str) -> anyhow::Result<StreamPlan> {
        let (s, dec) = backline_responder::stream::stream_decoder_of(spec)?;
        let widest = (0..dec.rounds())
            .map(|r| dec.round_detectors(r).len())
            .max()
            .unwrap_or(0);
        let stem = Path::new(&s.path)
            .file_stem()
            .map_or("model".into(), |f| f.to_string_lossy().to_string());
        Ok(StreamPlan {
            spec: spec.to_string(),
            label: format!("stream-{stem}"),
            rounds: dec.rounds(),
            request_bytes: STREAM_HEADER_BYTES + widest.div_ceil(8),
            reply_bytes: STREAM_HEADER_BYTES + dec.num_observables().div_ceil(8),
            widest_round: widest,
            deadline: s.settings.deadline,
            decoder: s.settings.decoder,
            limits: s.settings.limits,
            dem: dec.source().clone(),
        })
    }

    /// Calls of a run of `shots` shots (each round, then `get_corrections`).
    pub fn calls(&self, shots: u64) -> u64 {
        shots * (self.rounds as u64 + 1)
    }
}

/// The cycle time the keep-up replay feeds rounds at: 1 µs, a superconducting machine's
/// round.
pub const CYCLE_NS: f64 = 1000.0;

/// What a streaming run of the bench produced.
pub struct StreamResult {
    /// The run.
    pub outcome: StreamOutcome,
    /// The whole-history decoder on the same shots, when asked for.
    pub whole: Option<WholeHistory>,
    /// The calls replayed as a queue fed every [`CYCLE_NS`] (every shot completed).
    pub keep_up: Option<sb::KeepUp>,
    /// The inner decode time of each window, read from the stream function itself (a
    /// coprocessor in this process: memcpy).
    pub windows: Option<backline_responder::stream::WindowTimes>,
    /// Windows that reached the spec's `deadline_us` (same source).
    pub deadline: Option<backline_decoders::stream::DeadlineMisses>,
}

/// Streams `shots` shots of `plan` through `link`; with `whole`, decodes them again with the
/// whole-history decoder afterwards.
pub fn run(
    link: &mut dyn StreamLink,
    plan: &StreamPlan,
    run: &StreamRun,
    whole: bool,
) -> anyhow::Result<StreamResult> {
    let progress = run.progress != backline_bench::progress::Show::Never;
    if whole {
        // Before the run, not after it: the whole history needs the model expanded.
        plan.dem
            .check_expanded(&plan.limits)
            .context("--whole-history decodes the model expanded")?;
    }
    let outcome = sb::run(link, &plan.dem, run).context("the model's rounds")?;
    let whole = if whole && outcome.error.is_none() && !outcome.interrupted {
        if progress {
            eprintln!(
                "{}: decoding the {} shots again with the whole-history decoder",
                plan.label, outcome.shots
            );
        }
        Some(sb::whole_history(
            &plan.dem,
            &plan.decoder,
            &plan.limits,
            run,
            &outcome,
        )?)
    } else {
        None
    };
    let keep_up = sb::keep_up(&outcome, plan.rounds, CYCLE_NS);
    Ok(StreamResult {
        outcome,
        whole,
        keep_up,
        windows: None,
        deadline: None,
    })
}

/// Microseconds, for the summary lines.
fn us(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e3)
}

/// `k/n` with its 95 % Wilson interval, as text.
fn rate(k: u64, n: u64) -> String {
    let (lo, hi) = wilson_interval(k, n, 1.96);
    let p = if n == 0 { 0.0 } else { k as f64 / n as f64 };
    format!("{k}/{n} = {p:.2e} [{lo:.2e}, {hi:.2e}]")
}

/// The JSON key of the client's per-shot figure.
pub const CLIENT_FIGURE: &str = "client_last_enqueue_to_corrections";
/// The JSON key of the server's per-shot figure.
pub const SERVER_FIGURE: &str = "last_syndrome_to_correction";

/// A per-shot figure as JSON: `{shots, median_ns, mean_ns, p99_ns, p999_ns, max_ns}`.
pub fn figure_json(samples_ns: &[f64]) -> Option<serde_json::Value> {
    let s = Summary::of(samples_ns)?;
    Some(serde_json::json!({
        "shots": s.count,
        "median_ns": s.median_ns,
        "mean_ns": s.mean_ns,
        "p99_ns": s.p99_ns,
        "p999_ns": s.p999_ns,
        "max_ns": s.max_ns,
    }))
}

/// A per-shot figure as a line under the table.
pub fn figure_line(label: &str, what: &str, samples_ns: &[f64]) -> Option<String> {
    let s = Summary::of(samples_ns)?;
    let us = |ns: f64| format!("{:.2}", ns / 1e3);
    Some(format!(
        "{label}: {what}: median {} µs, mean {} µs, P99 {} µs, P99.9 {} µs, max {} µs ({} shots)",
        us(s.median_ns),
        us(s.mean_ns),
        us(s.p99_ns),
        us(s.p999_ns),
        us(s.max_ns),
        s.count
    ))
}

/// The JSON key of NVIDIA's streaming tail: the client's figure over the shots after the
/// warm-up.
pub const TAIL_FIGURE: &str = "streaming_tail";

/// The streaming tail as JSON: `{median_ns, p99_ns, p999_ns, max_ns, shots}`.
pub fn tail_json(samples_ns: &[f64]) -> Option<serde_json::Value> {
    let s = Summary::of(samples_ns)?;
    Some(serde_json::json!({
        "median_ns": s.median_ns,
        "p99_ns": s.p99_ns,
        "p999_ns": s.p999_ns,
        "max_ns": s.max_ns,
        "shots": s.count,
    }))
}

/// The pacing of a run with a cadence as JSON: the late rounds and the final enqueue's lag
/// behind its due time (the backlog), in ns and in rounds, over the shots after the warm-up.
pub fn pacing_json(p: &sb::Pacing, warmup: usize) -> serde_json::Value {
    let behind = Summary::of(p.final_behind(warmup));
    let q = |f: fn(&Summary) -> f64| behind.as_ref().map_or(0.0, f);
    let (median, p99, max) = (q(|s| s.median_ns), q(|s| s.p99_ns), q(|s| s.max_ns));
    serde_json::json!({
        "round_interval_ns": p.round_interval_ns,
        "rounds": p.rounds,
        "late_rounds": p.late_rounds,
        "late_max_ns": p.late_max_ns,
        "final_backlog_median_ns": median,
        "final_backlog_p99_ns": p99,
        "final_backlog_max_ns": max,
        "final_backlog_median_rounds": p.in_rounds(median),
        "final_backlog_p99_rounds": p.in_rounds(p99),
        "final_backlog_max_rounds": p.in_rounds(max),
    })
}

/// The pacing of a run with a cadence as a line under the table; it says so when rounds were
/// late (the decoder or the transport fell behind the cadence).
pub fn pacing_line(label: &str, p: &sb::Pacing, warmup: usize) -> String {
    let behind = Summary::of(p.final_behind(warmup));
    let q = |f: fn(&Summary) -> f64| behind.as_ref().map_or(0.0, f);
    let (median, p99, max) = (q(|s| s.median_ns), q(|s| s.p99_ns), q(|s| s.max_ns));
    let mut line = format!(
        "{label}: paced at one round per {} ns: {} of {} rounds late (at most {} µs behind); \
         final enqueue behind its due time: median {} µs ({:.2} rounds), P99 {} µs ({:.2}), \
         max {} µs ({:.2})",
        p.round_interval_ns,
        p.late_rounds,
        p.rounds,
        us(p.late_max_ns),
        us(median as u64),
        p.in_rounds(median),
        us(p99 as u64),
        p.in_rounds(p99),
        us(max as u64),
        p.in_rounds(max),
    );
    if p.late_rounds > 0 {
        line.push_str(" — BACKLOG: the decoder or the transport did not keep this cadence");
    }
    line
}

/// What the client's figure is, in the lines under the table.
pub const CLIENT_WHAT: &str = "client last enqueue sent → corrections received";
/// What the server's figure is, in the lines under the table.
pub const SERVER_WHAT: &str = "server last syndrome → corrections ready";

/// The lines a streaming run adds under the table.
pub fn summary_lines(plan: &StreamPlan, r: &StreamResult) -> Vec<String> {
    let o = &r.outcome;
    let mut v = vec![format!(
        "{}: {} shots of {} rounds streamed, logical errors {} (95 % Wilson)",
        plan.label,
        o.shots,
        plan.rounds,
        rate(o.logical_failures, o.shots)
    )];
    if let Some(w) = &r.whole {
        v.push(format!(
            "{}: whole-history decoder on the same shots: logical errors {}; {} shots decoded differently",
            plan.label,
            rate(w.logical_failures, w.shots),
            w.differ
        ));
    }
    if let Some(t) = r.windows.as_ref().filter(|t| t.count() > 0) {
        let q = |x| t.quantile_ns(x).unwrap_or(0);
        v.push(format!(
            "{}: per-window decode ({} windows with detection events): P50 {} µs, P99 {} µs, \
             P99.9 {} µs, max {} µs",
            plan.label,
            t.count(),
            us(q(0.5)),
            us(q(0.99)),
            us(q(0.999)),
            us(q(1.0))
        ));
    }
    if let (Some(m), Some(d)) = (&r.deadline, plan.deadline) {
        v.push(format!(
            "{}: deadline {:.1} µs per window: {} windows ({} rounds) reached it",
            plan.label,
            d.as_secs_f64() * 1e6,
            m.windows,
            m.rounds
        ));
    }
    v.extend(figure_line(
        &plan.label,
        CLIENT_WHAT,
        &o.last_to_corrections,
    ));
    if let Some(s) = Summary::of(o.tail()) {
        v.push(format!(
            "{}: streaming tail (client last enqueue → corrections, {} warm-up shots excluded): \
             median {} µs, P99 {} µs, P99.9 {} µs, max {} µs ({} shots)",
            plan.label,
            o.warmup,
            us(s.median_ns as u64),
            us(s.p99_ns as u64),
            us(s.p999_ns as u64),
            us(s.max_ns as u64),
            s.count
        ));
    }
    if let Some(p) = &o.pacing {
        v.push(pacing_line(&plan.label, p, o.warmup));
    }
    if let Some(k) = &r.keep_up {
        v.push(format!(
            "{}: keeps up: {} rounds in {:.1} ms of calls = {:.0} rounds/s; fed one round per \
             {:.0} ns, the last answer lands {:.1} rounds behind the last round (at most {:.1})",
            plan.label,
            k.rounds,
            k.busy_ns / 1e6,
            k.rounds_per_s,
            k.cycle_ns,
            k.backlog_end_rounds,
            k.backlog_max_rounds
        ));
    }
    if o.mismatches() > 0 {
        v.push(format!("{}: refused: {}", plan.label, o.refusals()));
    }
    v
}

/// The JSON fields of a streaming run.
pub fn json_fields(
    plan: &StreamPlan,
    r: &StreamResult,
) -> serde_json::Map<String, serde_json::Value> {
    let o = &r.outcome;
    let (lo, hi) = wilson_interval(o.logical_failures, o.shots, 1.96);
    let mut m = serde_json::Map::new();
    m.insert("spec".into(), plan.spec.clone().into());
    m.insert("shots".into(), o.shots.into());
    m.insert("rounds_per_shot".into(), plan.rounds.into());
    m.insert("logical_failures".into(), o.logical_failures.into());
    m.insert(
        "ler".into(),
        (o.logical_failures as f64 / o.shots.max(1) as f64).into(),
    );
    m.insert("ler_low".into(), lo.into());
    m.insert("ler_high".into(), hi.into());
    m.insert("refused".into(), o.mismatches().into());
    if let Some(f) = figure_json(&o.last_to_corrections) {
        m.insert(CLIENT_FIGURE.into(), f);
    }
    m.insert("warmup_shots".into(), o.warmup.into());
    if let Some(f) = tail_json(o.tail()) {
        m.insert(TAIL_FIGURE.into(), f);
    }
    m.insert(
        "round_interval_ns".into(),
        o.pacing.as_ref().map_or(0, |p| p.round_interval_ns).into(),
    );
    if let Some(p) = &o.pacing {
        m.insert("pacing".into(), pacing_json(p, o.warmup));
    }
    if let Some(t) = r.windows.as_ref().filter(|t| t.count() > 0) {
        let q = |x| t.quantile_ns(x).unwrap_or(0);
        m.insert(
            "window_decode".into(),
            serde_json::json!({
                "windows": t.count(),
                "p50_ns": q(0.5),
                "p99_ns": q(0.99),
                "p999_ns": q(0.999),
                "max_ns": q(1.0),
            }),
        );
    }
    if let (Some(d), Some(dl)) = (&r.deadline, plan.deadline) {
        m.insert(
            "deadline".into(),
            serde_json::json!({
                "deadline_ns": dl.as_nanos() as u64,
                "windows": d.windows,
                "rounds": d.rounds,
            }),
        );
    }
    if let Some(k) = &r.keep_up {
        m.insert(
            "keep_up".into(),
            serde_json::json!({
                "rounds": k.rounds,
                "busy_ns": k.busy_ns,
                "rounds_per_s": k.rounds_per_s,
                "cycle_ns": k.cycle_ns,
                "backlog_end_rounds": k.backlog_end_rounds,
                "backlog_max_rounds": k.backlog_max_rounds,
            }),
        );
    }
    if let Some(w) = &r.whole {
        let (lo, hi) = wilson_interval(w.logical_failures, w.shots, 1.96);
        m.insert(
            "whole_history".into(),
            serde_json::json!({
                "shots": w.shots,
                "logical_failures": w.logical_failures,
                "ler": w.logical_failures as f64 / w.shots.max(1) as f64,
                "ler_low": lo,
                "ler_high": hi,
                "differ": w.differ,
            }),
        );
    }
    m
}

/// The CUQR floor: `rounds` `get_corrections` calls for a decoder id no server has
/// (`i64::MIN`), each answered `invalid_decoder` once the frame's header and decoder id are
/// read — the server's frame path with nothing to decode.
pub fn cuqr_floor(
    peer: &str,
    slot_bytes: usize,
    rounds: u64,
    timeout: Duration,
    spin: Duration,
) -> anyhow::Result<Vec<f64>> {
    let mut link = sb::CuqrLink::connect(peer, i64::MIN, slot_bytes, timeout, spin)
        .with_context(|| format!("connecting to the cuqr server at {peer}"))?;
    let mut out = Vec::with_capacity(rounds as usize);
    let mut result = [0u8; 1];
    for _ in 0..rounds {
        let t0 = Instant::now();
        let r = link.get_corrections(1, false, &mut result)?;
        out.push(t0.elapsed().as_nanos() as f64);
        if r.status != Some(backline_wire::cuqr::CallStatus::InvalidDecoder) {
            anyhow::bail!(
                "the cuqr server at {peer} answered get_corrections({}) with {:?}, not invalid_decoder",
                i64::MIN,
                r.status
            );
        }
    }
    Ok(out)
}
