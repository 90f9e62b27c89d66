//! `backline sim`: runs the HWHS engine's generated RTL under Verilator against the ERNIC
//! data-path model and either an in-simulation responder or, with `--coprocessor`, a real
//! backline coprocessor behind the bridge (udp, shm or rdma), then prints the same
//! statistics table and writes the same CSV trace as `backline bench`, from RTTs read back
//! out of the simulated trace RAM over AXI4-Lite.
//!
//! Timing (see `backline_sim::model`): each RTT is simulated engine cycles + the fabric
//! model (`--fabric-latency-ns` each way, default the reference's one-way RoCE figure) + the
//! remote side's service (measured for a real coprocessor, `--service-ns` for the model);
//! the CSV has the three parts as columns and the summary their medians.
//!
//! The flags ([`Args`]) first become a validated [`SimConfig`] (the engine run, the bridge's
//! settings, the `--csv` path checked writable), and [`simulate`] works from that alone.
//! SIGINT or SIGTERM ends the run at a round boundary (hw-loop: `CTRL.abort` after the round
//! in progress); the rounds that completed are read out, written and reported as a whole
//! run's are (the trace through the same [`Outputs`] as bench's, the table or JSON).
//!
//! Exit status: 0 when the run completed with no mismatch, timeout, lost round or model
//! error; 1 when it ran but a check failed (a mismatch, a timeout, a round the coprocessor
//! lost), or SIGTERM stopped it; 2 on bad input or a set-up failure (no coprocessor at the
//! address, an unserved decoder id, no Verilator in this build); 130 when SIGINT stopped it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, bail};
use backline_bench::progress::{Progress, Show};
use backline_bench::{Clock, Outputs, RunName, Table, Trace};
use backline_regmap as rm;
use backline_sim::fabric::{FabricModel, FabricSettings, Fec};
use backline_sim::run::RunReport;
use backline_sim::workload::{self, Workload};
use backline_sim::{
    Bridge, BridgeConfig, CoprocessorAddr, HwhsSim, LossPolicy, Mode, ModelConfig, Responder,
    RunConfig, SimError,
};

use super::common::{RdmaArgs, RingArgs};

/// The payload capacity the bridge's session asks for unless `--slot-bytes` says otherwise:
/// `backline serve`'s default (`--payload-bytes 48`), so that both make the same slots.
const BRIDGE_PAYLOAD_BYTES: usize = 48;

/// Who starts each round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// The host writes CTRL.start for each round and polls for completion.
    SwLoop,
    /// The engine's pacer starts each round; no software on the path.
    HwLoop,
}

/// When rounds start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Cadence {
    /// The next round goes out as soon as the last reply lands (freq = span = 0).
    B2b,
    /// A quiet interval of freq + (lfsr & span) cycles before each round.
    RandomDelayed,
}

/// What a lost coprocessor round does to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnLoss {
    /// End the run at the first lost round (exit 1, the round named).
    Stop,
    /// Go on; lost rounds are timeouts in the trace (exit 1 at the end).
    Continue,
}

/// The engine's reply timeout with the in-simulation responder, µs.
pub const DEFAULT_TIMEOUT_US: u64 = 1_000;
/// The engine's reply timeout with a real coprocessor behind the bridge, µs.
pub const DEFAULT_BRIDGED_TIMEOUT_US: u64 = 10_000;

/// Flags of `backline sim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// sw-loop (host starts each round) or hw-loop (the engine's pacer does).
    #[arg(long, value_enum, default_value = "sw-loop")]
    mode: ModeArg,
    /// b2b or random-delayed.
    #[arg(long, value_enum, default_value = "b2b")]
    cadence: Cadence,
    /// Fixed part of the quiet interval, cycles (random-delayed; default 1,000,000 = 5 ms).
    #[arg(long)]
    freq: Option<u32>,
    /// Mask of the random part, 2^N-1, decimal or 0x-hex (random-delayed; default 0x0FFFFFFF).
    #[arg(long, value_parser = backline_pacer::parse_setting)]
    span: Option<u32>,
    /// LFSR seed, non-zero, decimal or 0x-hex; also seeds the sampled errors of a
    /// coprocessor workload and the fabric jitter.
    #[arg(long, value_parser = backline_pacer::parse_setting, default_value = "1")]
    seed: u32,
    /// Rounds, round 0 included (default: 1,000,000 b2b, 10,000 random-delayed).
    #[arg(long)]
    rounds: Option<u64>,
    /// Deliver every request to a real backline coprocessor (a `backline serve`) over a real
    /// transport: udp:HOST:PORT, shm:NAME or rdma:HOST:PORT. Without it the remote side is
    /// the in-simulation responder.
    #[arg(long, value_name = "ADDR")]
    coprocessor: Option<String>,
    /// What answers: without --coprocessor the in-simulation model, `echo` or `steane`; with
    /// it the function the coprocessor serves (`echo`, `steane`, `bposd:CODE`,
    /// `LIB:SYMBOL`), whose answers to sampled syndromes the replies are checked against.
    #[arg(long, default_value = "echo", value_name = "SPEC")]
    responder: String,
    /// decoder_id of every request (with --coprocessor).
    #[arg(long, default_value = "0")]
    decoder_id: u32,
    /// Flip probability of the sampled errors whose syndromes are the payloads (with
    /// --coprocessor and a decoder function).
    #[arg(long, default_value = "0.05")]
    error_rate: f64,
    /// One fixed fabric latency each way, ns, instead of the fabric model of parts (rounded
    /// to cycles of the 200 MHz clock).
    #[arg(long, alias = "wire-latency-ns", conflicts_with_all = ["link_gbps", "cable_m", "switch_ns", "fec", "host_nic_ns"])]
    fabric_latency_ns: Option<u64>,
    /// Fabric model: the link's rate, Gb/s (10, 25, 50 or 100) [default: 100].
    #[arg(long, value_name = "GBPS")]
    link_gbps: Option<u32>,
    /// Fabric model: cable length each way, m (0 to 1000) [default: 1].
    #[arg(long, value_name = "M")]
    cable_m: Option<f64>,
    /// Fabric model: a switch's latency each way, ns (0 to 100000) [default: 0, a direct cable].
    #[arg(long, value_name = "NS")]
    switch_ns: Option<u64>,
    /// Fabric model: forward error correction on the link [default: rs528].
    #[arg(long, value_enum)]
    fec: Option<FecArg>,
    /// Fabric model: the host NIC's receive and send paths each, ns, instead of the values
    /// calibrated to the reference's 2.305 µs round trip (0 to 100000).
    #[arg(long, value_name = "NS")]
    host_nic_ns: Option<u64>,
    /// In-simulation responder service time, ns (with --coprocessor the service is measured).
    #[arg(long, default_value = "200")]
    service_ns: u64,
    /// Extra delay per fabric leg, uniform in 0..=N ns, drawn from --seed (0: fixed latency).
    #[arg(long, default_value = "0")]
    jitter_ns: u64,
    /// The engine's reply timeout, µs (default 1,000; with --coprocessor 10,000, far above
    /// a measured service time, which a loaded host stretches now and then).
    #[arg(long)]
    timeout_us: Option<u64>,
    /// How long the bridge waits for one reply of the coprocessor, ms; past it the round is
    /// lost and the engine's reply timeout marks it.
    #[arg(long, default_value = "1000")]
    coprocessor_timeout_ms: u64,
    /// What a round the coprocessor loses does to the run.
    #[arg(long, value_enum, default_value = "stop")]
    on_loss: OnLoss,
    /// The bridge's RDMA device, port and GID (with --coprocessor rdma:…).
    #[command(flatten)]
    rdma: RdmaArgs,
    /// The bridge's ring geometry (as the coprocessor's `backline serve` has it) and wait
    /// policy (with --coprocessor).
    #[command(flatten)]
    ring: RingArgs,
    /// Simulate every quiet cycle instead of fast-forwarding long quiet periods.
    #[arg(long)]
    no_fast_forward: bool,
    /// Write the per-round CSV trace here.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// A simulation, validated: what [`simulate`] works from.
pub struct SimConfig {
    /// The engine run, checked ([`RunConfig::validate`]).
    pub run: RunConfig,
    /// The bridge to a real coprocessor (`--coprocessor`), connected when the run starts.
    pub bridge: Option<BridgeConfig>,
    /// `--service-ns` of the in-simulation responder.
    pub service_ns: u64,
    /// The fabric model of parts (`None`: a fixed `--fabric-latency-ns`).
    pub fabric: Option<FabricModel>,
    /// The CSV trace (`--csv`), its path checked writable.
    pub outputs: Outputs,
    /// One JSON object instead of the table.
    pub json: bool,
    /// No progress on stderr.
    pub quiet: bool,
}

/// The in-simulation responder of `--responder` (without a coprocessor).
fn model_responder(spec: &str) -> anyhow::Result<Responder> {
    Ok(match spec {
        "echo" => Responder::Echo,
        "steane" => Responder::Steane,
        other => {
            let other = backline_decoders::io::excerpt(other);
            bail!(
                "--responder {other}: the in-simulation responder is `echo` or `steane`; a \
                 decoder function needs a real coprocessor: start `backline serve --responder \
                 {other}` and add --coprocessor udp:HOST:PORT (or shm:NAME, rdma:HOST:PORT)"
            )
        }
    })
}

impl SimConfig {
    /// Validates the flags into the engine run and the bridge (connected later); the `--csv`
    /// path is checked writable before the run.
    pub fn from_args(a: &Args) -> anyhow::Result<SimConfig> {
        let (run, bridge) = run_config(a)?;
        let outputs = Outputs::plan(
            None,
            "sim",
            false,
            &[RunName {
                label: run.workload().name,
                csv: a.csv.clone(),
                stem: None,
            }],
        );
        outputs.check()?;
        Ok(SimConfig {
            run,
            bridge,
            service_ns: a.service_ns,
            fabric: fabric_model(a)?,
            outputs,
            json: a.json,
            quiet: a.quiet,
        })
    }
}

/// The pacer of `--cadence`, `--freq`, `--span` and `--seed`: the board's reference cadence
/// by default (freq 1,000,000, span 0x0FFFFFFF at 200 MHz).
fn pacer_config(a: &Args) -> anyhow::Result<backline_pacer::PacerConfig> {
    let cadence = match a.cadence {
        Cadence::B2b => backline_pacer::Cadence::B2b,
        Cadence::RandomDelayed => backline_pacer::Cadence::RandomDelayed,
    };
    cadence
        .config(
            a.freq,
            a.span,
            a.seed,
            (
                backline_pacer::REFERENCE_FREQ,
                backline_pacer::REFERENCE_SPAN,
            ),
        )
        .map_err(|e| super::common::pacer_error(e, a.seed))
}

/// `--timeout-us` (by default 1 ms, 10 ms with a coprocessor) in engine cycles.
fn timeout_cycles(a: &Args) -> anyhow::Result<u32> {
    let timeout_us = a.timeout_us.unwrap_or(if a.coprocessor.is_some() {
        DEFAULT_BRIDGED_TIMEOUT_US
    } else {
        DEFAULT_TIMEOUT_US
    });
    timeout_us
        .checked_mul(rm::CYCLES_PER_US)
        .and_then(|c| u32::try_from(c).ok())
        .with_context(|| {
            format!("--timeout-us {timeout_us} does not fit the engine's 32-bit cycle counter")
        })
}

/// The remote side: the in-simulation responder, or (with `--coprocessor`) the workload of
/// the coprocessor's function and the bridge to it.
fn remote_side(a: &Args) -> anyhow::Result<(Responder, Option<Workload>, Option<BridgeConfig>)> {
    let Some(addr) = &a.coprocessor else {
        return Ok((model_responder(&a.responder)?, None, None));
    };
    let addr = CoprocessorAddr::parse(addr).map_err(anyhow::Error::msg)?;
    if !(a.error_rate > 0.0 && a.error_rate < 0.5) {
        bail!(
            "--error-rate {}: expected a probability in (0, 0.5)",
            a.error_rate
        );
    }
    let w = Workload::for_function(
        &a.responder,
        a.decoder_id,
        workload::MAX_ENTRIES,
        a.error_rate,
        u64::from(a.seed),
    )
    .with_context(|| format!("--responder {}", a.responder))?;
    let mut b = BridgeConfig::new(addr);
    b.reply_timeout =
        super::common::timeout_flag("--coprocessor-timeout-ms", a.coprocessor_timeout_ms)?;
    b.rdma = a.rdma.options();
    // The slots `backline serve` makes by default: its 48-byte payloads.
    b.geometry = a.ring.geometry(BRIDGE_PAYLOAD_BYTES)?;
    b.wait = a.ring.wait()?;
    // The model's responder is unused behind a bridge; echo keeps the check on.
    Ok((Responder::Echo, Some(w), Some(b)))
}

/// `--fec`. (Plain comments: clap lists the values in one line.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FecArg {
    // No FEC.
    None,
    // RS(528,514), IEEE 802.3 clause 91.
    Rs528,
}

/// The fabric model of the flags, or `None` for a fixed `--fabric-latency-ns`.
fn fabric_model(a: &Args) -> anyhow::Result<Option<FabricModel>> {
    if a.fabric_latency_ns.is_some() {
        return Ok(None);
    }
    let r = FabricSettings::REFERENCE;
    let s = FabricSettings {
        link_gbps: a.link_gbps.unwrap_or(r.link_gbps),
        cable_m: a.cable_m.unwrap_or(r.cable_m),
        switch_ns: a.switch_ns.unwrap_or(r.switch_ns),
        fec: match a.fec {
            None => r.fec,
            Some(FecArg::None) => Fec::None,
            Some(FecArg::Rs528) => Fec::Rs528,
        },
        host_nic_ns: a.host_nic_ns,
    };
    Ok(Some(FabricModel::new(&s)?))
}

/// Turns the flags into a validated run configuration (the bridge is connected later).
fn run_config(a: &Args) -> anyhow::Result<(RunConfig, Option<BridgeConfig>)> {
    let pacer = pacer_config(a)?;
    let timeout_cycles = timeout_cycles(a)?;
    let rounds = a.rounds.unwrap_or(match a.cadence {
        Cadence::B2b => 1_000_000,
        Cadence::RandomDelayed => 10_000,
    });
    let (responder, workload, bridge) = remote_side(a)?;
    let fabric = fabric_model(a)?;
    let model = ModelConfig {
        fabric_latency_cycles: match &fabric {
            Some(m) => m.one_way_cycles(),
            None => rm::ns_to_cycles(a.fabric_latency_ns.unwrap_or(0)),
        },
        service_cycles: rm::ns_to_cycles(a.service_ns),
        jitter_cycles: rm::ns_to_cycles(a.jitter_ns),
        jitter_seed: u64::from(a.seed),
        responder,
        reply_len: workload.as_ref().map_or(4, |w: &Workload| w.reply_len),
        // Per-round model records are only needed by the tests.
        record_rounds: false,
        ..ModelConfig::default()
    };
    let cfg = RunConfig {
        mode: match a.mode {
            ModeArg::SwLoop => Mode::SwLoop,
            ModeArg::HwLoop => Mode::HwLoop,
        },
        pacer,
        rounds,
        model,
        timeout_cycles,
        fast_forward_above: (!a.no_fast_forward).then_some(4096),
        workload,
        on_loss: match a.on_loss {
            OnLoss::Stop => LossPolicy::Stop,
            OnLoss::Continue => LossPolicy::Continue,
        },
    };
    cfg.validate()?;
    Ok((cfg, bridge))
}

/// How a run was asked to stop: SIGINT (exit 130, as bench's; a second SIGINT exits at
/// once) or SIGTERM (exit 1, as before). Either ends it between two progress calls, with the
/// bridge's session and its shm segment dropped cleanly and what completed reported.
struct Signals {
    int: Arc<AtomicBool>,
    term: Arc<AtomicBool>,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        let int = super::common::interrupt_flag()?;
        let term = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGTERM, term.clone())
            .context("installing a signal handler")?;
        Ok(Signals { int, term })
    }

    /// Whether either signal arrived. Acquire pairs with signal-hook's store in the handler.
    fn any(&self) -> bool {
        self.int.load(Ordering::Acquire) || self.term.load(Ordering::Acquire)
    }
}

/// Runs `backline sim`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let config = SimConfig::from_args(&a)?;
    simulate(&config)
}

/// Runs a simulation: the engine (and the bridge) started, the rounds run, the trace written
/// and reported; interrupted, the same for the rounds that completed.
pub fn simulate(c: &SimConfig) -> anyhow::Result<ExitCode> {
    let cfg = &c.run;
    let (mut sim, service_note) = start_engine(c)?;
    if cfg.rounds > u64::from(rm::TRACE_DEPTH) && !c.json {
        eprintln!(
            "backline sim: note: the trace RAM holds {} rounds; later rounds run but are not recorded",
            rm::TRACE_DEPTH
        );
    }
    let signals = Signals::install()?;
    let progress = Progress::start(
        "backline sim",
        "rounds",
        cfg.rounds,
        Show::unless(c.json || c.quiet),
    );
    let result = backline_sim::run::run_until(&mut sim, cfg, &mut |d, _| progress.set(d), &|| {
        signals.any()
    });
    progress.finish();
    let rep = match result {
        Ok(r) => r,
        Err(e @ SimError::CoprocessorLost(_)) => {
            eprintln!("backline sim: {e}");
            return Ok(ExitCode::from(backline_bench::exit::FAILED));
        }
        Err(e) => return Err(anyhow::Error::new(e).context("simulating")),
    };
    let trace = trace_of(c, &rep, &service_note);
    c.outputs
        .write(&[Some(&trace)], "the ERNIC model")
        .context("writing the trace")?;
    if c.json {
        println!("{}", json_line(c, &rep, &trace, &service_note));
    } else {
        print_table(c, &rep, &trace, &service_note);
    }
    warn_about(c, &rep);
    Ok(exit_status(&rep, &signals))
}

/// The engine simulation, with the bridge connected when there is one, and what the service
/// part of each RTT is (`measured: …`, `modelled: …`).
fn start_engine(c: &SimConfig) -> anyhow::Result<(HwhsSim, String)> {
    let mut sim = HwhsSim::new(c.run.model.clone()).context("starting the engine simulation")?;
    let service_note = match &c.bridge {
        Some(b) => {
            let br = Bridge::connect(b).context("connecting the simulated fabric's bridge")?;
            sim.model_mut().attach_bridge(br);
            format!("measured: the coprocessor at {}", b.addr)
        }
        None => format!(
            "modelled: {}, {} ns",
            c.run.model.responder.name(),
            c.service_ns
        ),
    };
    Ok((sim, service_note))
}

/// The run's CSV trace: its header, a row per traced round, the RTT splits.
fn trace_of(c: &SimConfig, rep: &RunReport, service_note: &str) -> Trace {
    let (cfg, w) = (&c.run, c.run.workload());
    let clock = Clock::Cycles { mhz: rm::CLOCK_MHZ };
    let mut trace = Trace::with_capacity(clock, rep.trace.len());
    trace.set_meta("source", "sim");
    trace.set_meta(
        "transport",
        match &c.bridge {
            Some(b) => format!("ernic-model bridged to {}", b.addr),
            None => "ernic-model".into(),
        },
    );
    trace.set_meta("responder", &w.name);
    trace.set_meta("decoder_id", w.decoder_id);
    trace.set_meta("mode", cfg.mode.name());
    trace.set_meta(
        "cadence",
        backline_bench::trace::cadence_meta(&cfg.pacer, rm::CLOCK_MHZ),
    );
    trace.set_meta("fabric_latency_cycles", cfg.model.fabric_latency_cycles);
    trace.set_meta("service", service_note);
    trace.set_meta("jitter_ns", rm::cycles_to_ns(cfg.model.jitter_cycles));
    trace.set_meta("fsm_overhead_cycles", rep.fsm_overhead_cycles);
    trace.set_meta("version", env!("CARGO_PKG_VERSION"));
    trace.push_engine_rounds(&rep.trace, |k| {
        rep.quiet_cycles.get(k).copied().unwrap_or(0)
    });
    let parts: Vec<(u64, u64)> = rep
        .splits
        .iter()
        .map(|s| (u64::from(s.fabric_cycles), u64::from(s.service_cycles)))
        .collect();
    trace.set_splits(&parts);
    trace
}

/// Simulated cycles per wall-clock second, millions.
fn mcycles_per_s(rep: &RunReport) -> f64 {
    rep.sim_cycles as f64 / rep.wall.as_secs_f64().max(1e-9) / 1e6
}

/// The `--json` line: the trace's summary and the run's counts.
fn json_line(c: &SimConfig, rep: &RunReport, trace: &Trace, service_note: &str) -> String {
    let (cfg, w) = (&c.run, c.run.workload());
    let mut extra = serde_json::Map::new();
    extra.insert("mode".into(), cfg.mode.name().into());
    extra.insert("decoder_id".into(), w.decoder_id.into());
    extra.insert("fsm_overhead_cycles".into(), rep.fsm_overhead_cycles.into());
    extra.insert("mismatches".into(), rep.mismatches.into());
    extra.insert("timeouts".into(), rep.timeouts.into());
    extra.insert("lost".into(), rep.lost.0.into());
    extra.insert("trace_full".into(), rep.trace_full.into());
    extra.insert("trace_saturated".into(), rep.trace_saturated.into());
    extra.insert("sim_cycles".into(), rep.sim_cycles.into());
    extra.insert(
        "sim_mcycles_per_s".into(),
        (mcycles_per_s(rep) * 10.0).round().div_euclid(10.0).into(),
    );
    extra.insert("model_errors".into(), rep.model_errors.0.into());
    extra.insert(
        "fabric_latency_cycles".into(),
        cfg.model.fabric_latency_cycles.into(),
    );
    extra.insert("service".into(), service_note.into());
    if let Some(f) = &c.fabric {
        let parts: Vec<serde_json::Value> = f
            .parts()
            .iter()
            .map(|p| {
                serde_json::json!({
                    "leg": p.leg.name(),
                    "part": p.name,
                    "ns": p.ns,
                    "source": p.source.name(),
                })
            })
            .collect();
        extra.insert("fabric_parts".into(), parts.into());
        extra.insert("fabric_round_trip_ns".into(), f.round_trip_ns().into());
    }
    if let Some(b) = &c.bridge {
        extra.insert("coprocessor".into(), b.addr.to_string().into());
    }
    if let Some((relayed, mean_ns)) = rep.bridged {
        extra.insert("relayed".into(), relayed.into());
        extra.insert("mean_service_ns".into(), mean_ns.round().into());
    }
    let transport = trace.meta("transport").unwrap_or("ernic-model");
    backline_bench::cli::trace_json_line(trace, transport, &w.name, rep.rounds_committed, extra)
}

/// The table on stdout, with the RTT split, the bridge's count and the run's counts under it.
fn print_table(c: &SimConfig, rep: &RunReport, trace: &Trace, service_note: &str) {
    let (cfg, w) = (&c.run, c.run.workload());
    let mut t = Table::new(format!(
        "backline sim: {} {} over the ERNIC model (fabric {} cycles = {} ns one way) to {}, \
         {} rounds, RTT = engine + fabric + service",
        cfg.mode.name(),
        if cfg.pacer.is_b2b() {
            "b2b"
        } else {
            "random-delayed"
        },
        cfg.model.fabric_latency_cycles,
        rm::cycles_to_ns(cfg.model.fabric_latency_cycles),
        match &c.bridge {
            Some(b) => format!("the coprocessor at {} ({})", b.addr, w.name),
            None => format!("the in-simulation {}", w.name),
        },
        rep.rounds_committed,
    ));
    match trace.summary() {
        Some(s) => t.push(&w.name, trace.round0_ns(), s),
        None => eprintln!("backline sim: no warm round completed"),
    }
    print!("{}", t.render());
    if let Some(m) = trace.split_medians() {
        println!("{}", m.line(service_note));
    }
    if let Some(f) = &c.fabric {
        println!(
            "fabric model (each leg half the round trip; docs/firmware.md gives the sources):"
        );
        for line in f.lines() {
            println!("{line}");
        }
    }
    if let Some((relayed, mean_ns)) = rep.bridged {
        println!(
            "bridge: {relayed} requests relayed, mean measured service {:.3} µs",
            mean_ns / 1e3
        );
    }
    println!(
        "mismatches {}  timeouts {}  lost {}  trace_full {}  trace_saturated {}  \
         ({} cycles simulated in {:.2} s, {:.1} M cycles/s{})",
        rep.mismatches,
        rep.timeouts,
        rep.lost.0,
        rep.trace_full,
        rep.trace_saturated,
        rep.sim_cycles,
        rep.wall.as_secs_f64(),
        mcycles_per_s(rep),
        if rep.skipped_cycles > 0 {
            format!(", {} quiet cycles fast-forwarded", rep.skipped_cycles)
        } else {
            String::new()
        }
    );
}

/// The model's protocol errors, lost rounds and (behind a bridge) mismatches, on stderr.
fn warn_about(c: &SimConfig, rep: &RunReport) {
    let w = c.run.workload();
    if let (n, Some(first)) = &rep.model_errors {
        eprintln!("backline sim: the ERNIC model saw {n} protocol error(s); first: {first}");
    }
    if let (n, Some(first)) = &rep.lost {
        eprintln!("backline sim: the coprocessor lost {n} round(s); first: {first}");
    }
    if rep.mismatches > 0 && c.bridge.is_some() {
        eprintln!(
            "backline sim: {} replies differed from what `{}` answers here for decoder_id {}: \
             does the coprocessor serve --responder {} ?",
            rep.mismatches, w.name, w.decoder_id, w.name
        );
    }
}

/// 130 after SIGINT and 1 after SIGTERM (each saying how far the run got), 1 when a check
/// failed (a mismatch, a timeout, a lost round, a model error), else 0.
fn exit_status(rep: &RunReport, signals: &Signals) -> ExitCode {
    if rep.interrupted {
        eprintln!(
            "backline sim: interrupted after {} rounds",
            rep.rounds_committed
        );
        // Acquire pairs with signal-hook's store in the handler.
        return ExitCode::from(if signals.int.load(Ordering::Acquire) {
            backline_bench::exit::INTERRUPTED
        } else {
            backline_bench::exit::FAILED
        });
    }
    let failed = rep.mismatches > 0 || rep.model_errors.0 > 0 || rep.timeouts > 0 || rep.lost.0 > 0;
    if failed {
        ExitCode::from(backline_bench::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::time::Duration;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn cfg(argv: &[&str]) -> anyhow::Result<(RunConfig, Option<BridgeConfig>)> {
        let mut v = vec!["sim"];
        v.extend_from_slice(argv);
        let c = SimConfig::from_args(&Cli::try_parse_from(v)?.args)?;
        Ok((c.run, c.bridge))
    }

    #[test]
    fn defaults_follow_the_reference() {
        let (c, b) = cfg(&[]).unwrap();
        assert!(b.is_none());
        assert_eq!(
            (c.mode, c.rounds, c.pacer.is_b2b()),
            (Mode::SwLoop, 1_000_000, true)
        );
        // The default fabric model's leg: 1,012 ns one way, 202 cycles of the 200 MHz clock.
        assert_eq!(c.model.fabric_latency_cycles, 202);
        assert_eq!(c.timeout_cycles, 200_000);
        let (c, _) = cfg(&["--cadence", "random-delayed", "--mode", "hw-loop"]).unwrap();
        assert_eq!(
            c.pacer,
            backline_pacer::PacerConfig::REFERENCE_RANDOM_DELAYED
        );
        assert_eq!(c.rounds, 10_000);
        let (c, _) = cfg(&[
            "--cadence",
            "random-delayed",
            "--span",
            "0xff",
            "--freq",
            "10",
        ])
        .unwrap();
        assert_eq!((c.pacer.freq, c.pacer.span), (10, 0xFF));
        let (c, _) = cfg(&["--wire-latency-ns", "1000"]).unwrap();
        assert_eq!(c.model.fabric_latency_cycles, 200);
    }

    #[test]
    fn a_coprocessor_run_samples_the_functions_workload() {
        let (c, b) = cfg(&[
            "--coprocessor",
            "udp:127.0.0.1:7878",
            "--responder",
            "bposd:hgp13",
            "--decoder-id",
            "1",
            "--coprocessor-timeout-ms",
            "250",
        ])
        .unwrap();
        let b = b.unwrap();
        assert_eq!(b.addr.to_string(), "udp:127.0.0.1:7878");
        assert_eq!(b.reply_timeout, Duration::from_millis(250));
        assert_eq!(c.timeout_cycles, 2_000_000);
        let w = c.workload.unwrap();
        assert_eq!((w.decoder_id, w.entries.len()), (1, 256));
        assert_eq!(c.on_loss, LossPolicy::Stop);
    }

    #[test]
    fn bad_settings_are_rejected_with_a_reason() {
        let e = cfg(&["--cadence", "random-delayed", "--span", "0x0FFFFFFE"]).unwrap_err();
        assert!(e.to_string().contains("is not of the form 2^N-1"), "{e}");
        let e = cfg(&["--span", "0xff"]).unwrap_err();
        assert!(e.to_string().contains("b2b means freq = span = 0"), "{e}");
        let e = cfg(&["--cadence", "random-delayed", "--seed", "0"]).unwrap_err();
        assert!(e.to_string().contains("seed"), "{e}");
        assert!(cfg(&["--rounds", "0"]).is_err());
        assert!(cfg(&["--timeout-us", "100000000"]).is_err());
        assert!(cfg(&["--span", "zz"]).is_err());
        let e = cfg(&["--responder", "bposd:hgp13"]).unwrap_err();
        assert!(
            e.to_string().contains("add --coprocessor udp:HOST:PORT"),
            "{e}"
        );
        let e = cfg(&["--coprocessor", "tcp:1.2.3.4:5"]).unwrap_err();
        assert!(e.to_string().contains("unknown transport `tcp`"), "{e}");
        let e = cfg(&["--coprocessor", "udp:h:1", "--responder", "bposd:bb72"]).unwrap_err();
        assert!(format!("{e:#}").contains("36 checks"), "{e:#}");
        let e = cfg(&["--coprocessor", "udp:h:1", "--error-rate", "0.7"]).unwrap_err();
        assert!(e.to_string().contains("--error-rate 0.7"), "{e}");
    }
}
