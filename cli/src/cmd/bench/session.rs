//! The run of a bench, from its validated [`BenchConfig`]: the coprocessor (a thread here, a
//! server process it starts, or `--peer`), the floor halves around the runs, one run per
//! responder (sw-loop rounds or streamed shots), the hop probes, then the outputs and the
//! report. SIGINT ends it at the next round boundary with what completed.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use backline_bench::exit::{ChecksFailed, INTERRUPTED};
use backline_bench::stream::{CuqrLink, SessionLink, StreamLink, StreamRun};
use backline_bench::swloop::{self, Requests, SwLoop};
use backline_bench::trace::Trace;
use backline_transport::{
    ControllerSession, CoprocessorSession, ServeOptions, SessionConfig, TransportKind, os,
};

use super::BenchConfig;
use super::report::{self, Run, o_logical, set_meta};
use super::server::ServerProcess;
use crate::cmd::bench_stream::{self as bs, StreamPlan};
use crate::cmd::common::{base_ids, interrupt_flag, is_gpu, table_of};

/// Where the coprocessor runs: a thread here (memcpy), a process this bench started, or the
/// user's `--peer`; `peer` is what a controller session connects to.
struct Coprocessor {
    local: Option<CoprocessorSession>,
    /// The `stream:` functions of a coprocessor in this process, by decoder id (their window
    /// decode times are read after each run).
    streams: Vec<(u32, Arc<dyn backline_responder::Responder>)>,
    /// Kept for its `Drop`, which stops the server.
    _child: Option<ServerProcess>,
    peer: String,
}

/// What the runs produced so far.
#[derive(Default)]
struct Collected {
    runs: Vec<Run>,
    controller_hops: Vec<(String, backline_probe::Table)>,
    failure: Option<anyhow::Error>,
    /// What streaming runs print under the table.
    stream_lines: Vec<String>,
    interrupted: bool,
    /// The CUQR runs of a server this bench started, for its per-shot figures.
    cuqr_streams: Vec<CuqrStream>,
}

/// A CUQR stream's runs (enqueue, get_corrections), its decoder id and the client's figure.
struct CuqrStream {
    runs: std::ops::Range<usize>,
    decoder_id: u32,
    label: String,
    client: Vec<f64>,
}

/// Runs a bench.
pub fn run(c: &BenchConfig) -> anyhow::Result<ExitCode> {
    if !c.peers.is_empty() {
        return super::fanout::run(c, &*interrupt_flag()?);
    }
    if c.transport == TransportKind::Rdma {
        // Say plainly, before anything starts, when this machine cannot do RDMA.
        let dev = backline_transport::rdma::probe(&c.session.rdma)?;
        if !c.quiet && !c.json {
            eprintln!("rdma: {dev}");
        }
    }
    let _dma = if c.ring.hold_dma_latency {
        Some(os::DmaLatencyGuard::hold()?)
    } else {
        None
    };
    let cop = Coprocessor::start(c)?;
    // Pinned only now: threads started above (the memcpy coprocessor's) inherit this thread's
    // CPU set, and must be free to take their own CPU.
    if let Some((ctrl, _)) = c.pin {
        os::pin_current_thread(ctrl)?;
    }
    let stop = interrupt_flag()?;
    // Floor: half before the runs, half after, so drift affects both alike.
    let mut floor = Vec::new();
    if c.baseline {
        floor = floor_half(c, &cop.peer, c.floor_rounds / 2)?;
    }
    let mut col = Collected::default();
    for i in 0..c.responders.len() {
        // Relaxed: the flag carries no data.
        if stop.load(Ordering::Relaxed) {
            col.interrupted = true;
            break;
        }
        match &c.plans[i] {
            Some(plan) => run_stream(c, i, plan, &cop, &stop, &mut col)?,
            None => run_sw(c, i, &cop, &stop, &mut col)?,
        }
        if col.failure.is_some() || col.interrupted {
            break;
        }
    }
    col.interrupted |= stop.load(Ordering::Relaxed);
    if c.baseline && col.failure.is_none() && !col.interrupted {
        // The runs are done: a floor that can no longer be measured (a `--peer` server that
        // exited after its last session) costs the second half, not the runs.
        let mut second = match floor_half(c, &cop.peer, c.floor_rounds - c.floor_rounds / 2) {
            Ok(second) => second,
            Err(e) => {
                col.stream_lines.push(format!(
                    "note: the floor after the runs could not be measured ({}); the ratios use the floor before them",
                    crate::one_line(&e)
                ));
                Vec::new()
            }
        };
        let halves = report::floor_halves(&floor, &second);
        if let Some(line) = halves.and_then(report::floor_moved_line) {
            col.stream_lines.push(line);
        }
        if let Some((before, after)) = halves {
            for r in &mut col.runs {
                r.extra.insert(
                    "floor_medians_ns".into(),
                    serde_json::json!([before, after]),
                );
            }
        }
        // Round 0 of the second half is warm; only the very first floor round is cold.
        floor.append(&mut second);
    }
    let shots_csv = cop._child.as_ref().and_then(|s| s.shots.clone());
    stop_and_report_hops(c, cop, &mut col)?;
    if let Some(p) = shots_csv {
        server_figures(&p, &mut col);
        let _ = std::fs::remove_file(&p);
    }
    let baseline = (c.baseline && col.failure.is_none() && !floor.is_empty())
        .then(|| report::baseline_run(c, &floor));
    write_outputs(c, &col.runs, baseline.as_ref())?;
    report::print(c, &col.runs, baseline.as_ref(), &col.stream_lines);
    outcome(col)
}

impl Coprocessor {
    fn start(c: &BenchConfig) -> anyhow::Result<Coprocessor> {
        match (c.transport, &c.peer) {
            (TransportKind::Memcpy, _) => {
                let fns: Vec<(u32, String)> = base_ids(&c.responders)
                    .into_iter()
                    .zip(c.responders.iter().cloned())
                    .collect();
                let table = table_of(&fns, &c.ctx)?;
                let streams = table
                    .entries()
                    .filter(|(_, r)| backline_responder::as_stream(&***r).is_some())
                    .map(|(id, r)| (id, r.clone()))
                    .collect();
                let key = format!("bench-{}", std::process::id());
                let options = ServeOptions {
                    probe_rounds: if c.hops.on() { c.floor_rounds } else { 0 },
                    ..ServeOptions::default()
                };
                let local =
                    CoprocessorSession::open(&key, c.session.clone(), "", 0, &table, options)?;
                Ok(Coprocessor {
                    local: Some(local),
                    streams,
                    _child: None,
                    peer: key,
                })
            }
            (_, Some(p)) => Ok(Coprocessor {
                local: None,
                streams: Vec::new(),
                _child: None,
                peer: p.clone(),
            }),
            (_, None) => {
                let s = ServerProcess::spawn(c)?;
                Ok(Coprocessor {
                    local: None,
                    streams: Vec::new(),
                    peer: s.peer.clone(),
                    _child: Some(s),
                })
            }
        }
    }
}

/// The spin budget of a session's waits, as a duration (0: block at once).
fn spin_of(config: &SessionConfig) -> Duration {
    match config.wait.spin {
        backline_transport::SpinBudget::AlwaysBlock => Duration::ZERO,
        backline_transport::SpinBudget::NeverBlock => Duration::MAX,
        backline_transport::SpinBudget::For(t) => t,
    }
}

/// One half of the floor: `rounds` bare round trips of the transport.
fn floor_half(c: &BenchConfig, peer: &str, rounds: u64) -> anyhow::Result<Vec<f64>> {
    let config = &c.session;
    let t = config.reply_timeout.max(Duration::from_secs(1));
    let what = || format!("measuring the {}", c.floor_label);
    if c.cuqr {
        let slot = config.geometry.slot_bytes as usize;
        return bs::cuqr_floor(peer, slot, rounds, t, spin_of(config)).with_context(what);
    }
    let r = match c.transport {
        // A bare persistent kernel bouncing seq through one mapped line.
        TransportKind::Memcpy if c.gpu_floor => {
            return backline_gpu::GpuFloor::measure(&c.ctx.gpu, rounds, t).with_context(what);
        }
        TransportKind::Memcpy => {
            backline_transport::floor::memcpy_floor(rounds, c.pin.map(|p| p.1), t)
        }
        TransportKind::Shm => backline_transport::shm::shm_floor(peer, config.geometry, rounds, t),
        TransportKind::Udp => backline_transport::udp::udp_floor(peer, rounds, config, t),
        TransportKind::Rdma => backline_transport::rdma::rdma_floor(peer, config, rounds, t),
    };
    r.with_context(what)
}

/// The decoder id of responder `i`'s requests.
fn decoder_id_of(c: &BenchConfig, i: usize) -> u32 {
    if c.responders.len() == 1 && c.peer.is_some() {
        c.decoder_id
    } else {
        base_ids(&c.responders)[i]
    }
}

/// A controller session to the coprocessor, with hop probes for `rounds` when asked for.
fn connect(c: &BenchConfig, peer: &str, rounds: u64) -> anyhow::Result<ControllerSession> {
    let transport = c.transport;
    let mut session = ControllerSession::open("bench", c.session.clone(), peer, 7878)
        .with_context(|| format!("connecting to the coprocessor at {transport}:{peer}"))?;
    if c.hops.on() {
        session
            .enable_probes(rounds)
            .context("--hop-stats / --hop-csv")?;
    }
    Ok(session)
}

/// The streamed shots of `stream:` responder `i`: two runs (enqueue, get_corrections).
fn run_stream(
    c: &BenchConfig,
    i: usize,
    plan: &StreamPlan,
    cop: &Coprocessor,
    stop: &Arc<AtomicBool>,
    col: &mut Collected,
) -> anyhow::Result<()> {
    let peer = cop.peer.as_str();
    let transport = c.transport;
    let decoder_id = decoder_id_of(c, i);
    let settings = StreamRun {
        shots: c.shots,
        seed: u64::from(c.seed),
        progress: c.progress,
        label: format!("bench {transport} {}", plan.label),
        stop: Some(stop.clone()),
        round_interval_ns: c.round_interval_ns,
        warmup_shots: c.warmup_shots,
    };
    // A CUQR client's get_corrections asked again after not_ready.
    let mut polls = None;
    let (r, hops) = if c.cuqr {
        let slot = c.session.geometry.slot_bytes as usize;
        let timeout = c.session.reply_timeout;
        let mut link = CuqrLink::connect(
            peer,
            i64::from(decoder_id),
            slot,
            timeout,
            spin_of(&c.session),
        )
        .with_context(|| format!("connecting to the cuqr server at {peer}"))?
        .with_counter(c.counter);
        let r = bs::run(&mut link, plan, &settings, c.whole_history)?;
        polls = Some(link.not_ready_polls);
        (r, backline_probe::Table::new())
    } else {
        let mut session = connect(c, peer, plan.calls(c.shots))?;
        let mut link = SessionLink::new(&mut session, decoder_id);
        let r = bs::run(
            &mut link as &mut dyn StreamLink,
            plan,
            &settings,
            c.whole_history,
        )?;
        let mut t = backline_probe::Table::new();
        t.merge(session.probes().rows());
        (r, t)
    };
    let mut r = r;
    let f = cop
        .streams
        .iter()
        .find(|(id, _)| *id == decoder_id)
        .and_then(|(_, f)| backline_responder::as_stream(&**f));
    r.windows = f.map(|f| f.window_times());
    r.deadline = f.map(|f| f.deadline_misses());
    // A stream function of this process (memcpy): its own per-shot figure.
    let local_figure: Vec<f64> = f.map_or(Vec::new(), |f| {
        f.shot_figures()
            .samples()
            .iter()
            .map(|&n| n as f64)
            .collect()
    });
    if c.hops.on() {
        col.controller_hops.push((plan.label.clone(), hops));
    }
    let o = &r.outcome;
    col.interrupted |= o.interrupted;
    if let Some(e) = &o.error {
        col.failure = Some(anyhow::anyhow!(
            "{} over {transport}: {} of {} shots completed, then: {e}",
            plan.spec,
            o.shots,
            c.shots
        ));
    } else if o.mismatches() > 0 {
        col.failure = Some(anyhow::Error::new(ChecksFailed(format!(
            "{} over {transport}: {} calls were refused or wrong ({})",
            plan.spec,
            o.mismatches(),
            o.refusals()
        ))));
    }
    col.stream_lines.extend(bs::summary_lines(plan, &r));
    if c.cuqr {
        col.cuqr_streams.push(CuqrStream {
            runs: col.runs.len()..col.runs.len() + 2,
            decoder_id,
            label: plan.label.clone(),
            client: r.outcome.last_to_corrections.clone(),
        });
    }
    let mut fields = bs::json_fields(plan, &r);
    if let Some(j) = bs::figure_json(&local_figure) {
        fields.insert(bs::SERVER_FIGURE.into(), j);
        col.stream_lines.extend(bs::figure_line(
            &plan.label,
            "coprocessor last round → corrections ready",
            &local_figure,
        ));
    }
    if let Some(n) = polls {
        fields.insert("not_ready_polls".into(), n.into());
    }
    for (what, mut trace) in [
        ("enqueue", r.outcome.enqueue),
        ("get_corrections", r.outcome.corrections),
    ] {
        set_meta(&mut trace, c, &c.responders[i], c.pacer);
        trace.set_meta("calls", what);
        trace.set_meta("protocol", c.protocol());
        trace.set_meta("shots", c.shots);
        trace.set_meta("seed", c.seed);
        trace.set_meta("round_interval_ns", c.round_interval_ns);
        trace.set_meta("warmup_shots", c.warmup_shots);
        trace.set_meta("logical_failures", o_logical(&fields));
        let label = c.outputs.runs()[col.runs.len()].label.clone();
        let mut run = Run::new(label, trace);
        run.extra = fields.clone();
        run.extra.insert("calls".into(), what.into());
        col.runs.push(run);
    }
    Ok(())
}

/// The sw-loop rounds of responder `i`.
fn run_sw(
    c: &BenchConfig,
    i: usize,
    cop: &Coprocessor,
    stop: &Arc<AtomicBool>,
    col: &mut Collected,
) -> anyhow::Result<()> {
    let (transport, spec) = (c.transport, &c.responders[i]);
    let mut session = connect(c, &cop.peer, c.rounds)?;
    let (reqs, payload_bytes) = c.requests[i].clone();
    let syndromes = matches!(reqs, Requests::Syndromes(_));
    let cfg = SwLoop {
        rounds: c.rounds,
        payload_bytes,
        decoder_id: decoder_id_of(c, i),
        requests: reqs,
        pacer: c.pacer,
        clock_mhz: c.clock_mhz,
        progress: c.progress,
        label: format!("bench {transport} {spec}"),
        stop: Some(stop.clone()),
    };
    let r = swloop::run(&mut session, &cfg);
    if c.hops.on() {
        let mut t = backline_probe::Table::new();
        t.merge(session.probes().rows());
        t.truncate(r.completed as usize);
        col.controller_hops.push((spec.clone(), t));
    }
    drop(session);
    let mut trace = r.trace;
    sw_meta(c, spec, cop, payload_bytes, &mut trace);
    if syndromes {
        trace.set_meta("requests", "syndromes of sampled errors");
        trace.set_meta("logical_failures", r.logical_failures);
    }
    if let Some(e) = r.error {
        col.failure = Some(anyhow::anyhow!(
            "{spec} over {transport}: {} of {} rounds completed, then: {e}",
            r.completed,
            c.rounds
        ));
    } else if r.mismatches > 0 {
        let what: Vec<String> = trace
            .failures()
            .iter()
            .map(|(s, n)| format!("{n} {}", s.name()))
            .collect();
        col.failure = Some(anyhow::Error::new(ChecksFailed(format!(
            "{spec} over {transport}: {} of {} replies were not the expected ones ({})",
            r.mismatches,
            c.rounds,
            what.join(", ")
        ))));
    }
    let label = c.outputs.runs()[col.runs.len()].label.clone();
    let slots = report::slot_medians(c, &mut trace);
    let mut run = Run::new(label, trace);
    run.logical_failures = syndromes.then_some(r.logical_failures);
    run.slots = slots;
    col.runs.push(run);
    col.interrupted |= r.interrupted;
    Ok(())
}

/// The trace header of a sw-loop run (a GPU function in this process says so).
fn sw_meta(c: &BenchConfig, spec: &str, cop: &Coprocessor, payload_bytes: usize, t: &mut Trace) {
    set_meta(t, c, spec, c.pacer);
    if let Some(l) = &cop.local
        && is_gpu(spec)
    {
        let transport = c.transport;
        t.set_meta(
            "placement",
            format!("controller=cpu coprocessor=gpu transport={transport}"),
        );
        if let Some(line) = l.reports().first() {
            t.set_meta("gpu", line.clone());
        }
    }
    t.set_meta("payload_bytes", payload_bytes);
}

/// The per-shot figures of a cuqr server this bench started (its `--shot-csv`, written when
/// it stopped), by decoder id.
fn read_shots(p: &std::path::Path) -> anyhow::Result<Vec<(u32, Vec<f64>)>> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    let mut by_id: Vec<(u32, Vec<f64>)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let parsed = match f.as_slice() {
            [id, _, ns] => id.parse::<u32>().ok().zip(ns.parse::<f64>().ok()),
            _ => None,
        };
        let Some((id, ns)) = parsed else {
            anyhow::bail!("{}: a row that is not id,shot,ns: {line}", p.display());
        };
        match by_id.iter_mut().find(|(i, _)| *i == id) {
            Some((_, v)) => v.push(ns),
            None => by_id.push((id, vec![ns])),
        }
    }
    Ok(by_id)
}

/// Adds the server's per-shot figure of each CUQR stream to its runs' JSON and the lines
/// under the table, with the smallest per-shot difference client − server when both counted
/// the same shots (the client's interval holds the server's: never negative).
fn server_figures(p: &std::path::Path, col: &mut Collected) {
    let by_id = match read_shots(p) {
        Ok(v) => v,
        Err(e) => {
            col.stream_lines.push(format!(
                "note: the server's per-shot figures could not be read ({})",
                crate::one_line(&e)
            ));
            return;
        }
    };
    for s in &col.cuqr_streams {
        let server = by_id
            .iter()
            .find(|(id, _)| *id == s.decoder_id)
            .map_or(&[][..], |(_, v)| v.as_slice());
        let Some(json) = bs::figure_json(server) else {
            continue;
        };
        col.stream_lines
            .extend(bs::figure_line(&s.label, bs::SERVER_WHAT, server));
        let gap = (server.len() == s.client.len()).then(|| {
            s.client
                .iter()
                .zip(server)
                .map(|(c, v)| c - v)
                .fold(f64::INFINITY, f64::min)
        });
        for r in &mut col.runs[s.runs.clone()] {
            r.extra.insert(bs::SERVER_FIGURE.into(), json.clone());
            if let Some(g) = gap {
                r.extra
                    .insert("client_minus_server_min_ns".into(), g.into());
            }
        }
    }
}

/// Stops the coprocessor (thread or process) and, with probes, merges its hops with the
/// controller's and reports them.
fn stop_and_report_hops(
    c: &BenchConfig,
    mut cop: Coprocessor,
    col: &mut Collected,
) -> anyhow::Result<()> {
    if let Some(l) = &cop.local
        && !c.quiet
        && !c.json
    {
        for line in l.reports() {
            eprintln!("{line}");
        }
    }
    // The serving threads of this process hand over their stamps when their sessions end:
    // stop them first.
    let local_tables = match cop.local.as_mut() {
        Some(l) if c.hops.on() => {
            use backline_transport::Session as _;
            let _ = l.stop();
            let sessions = l.stats().sessions_report();
            crate::cmd::hops::server_tables(
                sessions
                    .into_iter()
                    .filter_map(|r| r.hops.map(|h| (r.number, h)))
                    .collect(),
            )
        }
        _ => Vec::new(),
    };
    // A server process writes its stamps when it stops (now).
    drop(cop);
    if !c.hops.on() {
        return Ok(());
    }
    let server_tables = match &c.server_hops {
        Some(p) => {
            let t = crate::cmd::hops::load_server(p);
            let _ = std::fs::remove_file(p);
            // A cuqr server's frames file beside it (`serve --hop-csv`).
            let _ = std::fs::remove_file(p.with_extension("frames.csv"));
            t?
        }
        None => local_tables,
    };
    let mut merged = std::mem::take(&mut col.controller_hops);
    for ((_, t), s) in merged.iter_mut().zip(&server_tables) {
        t.merge(s.rows());
    }
    let note = hop_note(c, server_tables.is_empty());
    crate::cmd::hops::report(&c.hops, c.transport.name(), &merged, note)
}

/// What the hop table must say about where the coprocessor's hops come from.
fn hop_note(c: &BenchConfig, no_server_hops: bool) -> Option<&'static str> {
    if c.cuqr {
        Some(
            "cuqr: the client times each call whole; the hops are the server's, per frame (received = request_seen)",
        )
    } else if c.peer.is_some() {
        Some(
            "the coprocessor's own hops: its `backline serve --hop-stats` (another process, maybe another clock)",
        )
    } else if no_server_hops {
        Some(
            "the coprocessor recorded no hops of its own (a GPU kernel attached to the controller's rings has none)",
        )
    } else {
        None
    }
}

/// The traces, in the order of the plan (the runs that ran, then the floor, last), and their
/// plots, in one call.
fn write_outputs(c: &BenchConfig, runs: &[Run], baseline: Option<&Run>) -> anyhow::Result<()> {
    let mut traces: Vec<Option<&Trace>> = vec![None; c.outputs.runs().len()];
    for (t, r) in traces.iter_mut().zip(runs) {
        *t = Some(&r.trace);
    }
    if let (Some(b), Some(last)) = (baseline, traces.last_mut()) {
        *last = Some(&b.trace);
    }
    let written = c.outputs.write(&traces, c.transport.name())?;
    if !c.json && !written.is_empty() {
        let list: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("wrote {}", list.join(", "));
    }
    Ok(())
}

/// The exit: the failure, 130 after an interrupt (saying what completed), or success.
fn outcome(col: Collected) -> anyhow::Result<ExitCode> {
    if let Some(e) = col.failure {
        return Err(e);
    }
    if col.interrupted {
        let done: Vec<String> = col
            .runs
            .iter()
            .map(|r| format!("{} {}", r.label, r.trace.rows.len()))
            .collect();
        eprintln!(
            "backline: interrupted: rounds completed: {}",
            if done.is_empty() {
                "none".to_string()
            } else {
                done.join(", ")
            }
        );
        return Ok(ExitCode::from(INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}
