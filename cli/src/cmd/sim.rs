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
//! Exit status: 0 when the run completed with no mismatch, timeout, lost round or model
//! error; 1 when it ran but a check failed (a mismatch, a timeout, a round the coprocessor
//! lost); 2 on bad input or a set-up failure (no coprocessor at the address, an unserved
//! decoder id, no Verilator in this build).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, bail};
use backline_bench::progress::{Progress, Show};
use backline_bench::{Clock, Table, Trace};
use backline_regmap as rm;
use backline_sim::workload::{self, Workload};

use super::common::{RdmaArgs, RingArgs};

/// The payload capacity the bridge's session asks for unless `--slot-bytes` says otherwise:
/// `backline serve`'s default (`--payload-bytes 48`), so that both make the same slots.
const BRIDGE_PAYLOAD_BYTES: usize = 48;
use backline_sim::{
    Bridge, BridgeConfig, CoprocessorAddr, HwhsSim, LossPolicy, Mode, ModelConfig, Responder,
    RunConfig, SimError,
};

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
    /// One-way fabric latency modelled on top of the engine, ns (rounded to cycles of the
    /// 200 MHz clock; default: the reference board's measured one-way RoCE figure).
    #[arg(long, alias = "wire-latency-ns", default_value_t = backline_sim::model::REFERENCE_ONE_WAY_NS)]
    fabric_latency_ns: u64,
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

/// The in-simulation responder of `--responder` (without a coprocessor).
fn model_responder(spec: &str) -> anyhow::Result<Responder> {
    Ok(match spec {
        "echo" => Responder::Echo,
        "steane" => Responder::Steane,
        other => bail!(
            "--responder {other}: the in-simulation responder is `echo` or `steane`; a decoder \
             function needs a real coprocessor: start `backline serve --responder {other}` and \
             add --coprocessor udp:HOST:PORT (or shm:NAME, rdma:HOST:PORT)"
        ),
    })
}

/// Turns the flags into a validated run configuration (the bridge is connected later).
fn config(a: &Args) -> anyhow::Result<(RunConfig, Option<BridgeConfig>)> {
    let cadence = match a.cadence {
        Cadence::B2b => backline_pacer::Cadence::B2b,
        Cadence::RandomDelayed => backline_pacer::Cadence::RandomDelayed,
    };
    // The board's reference cadence by default (freq 1,000,000, span 0x0FFFFFFF at 200 MHz).
    let pacer = cadence
        .config(
            a.freq,
            a.span,
            a.seed,
            (
                backline_pacer::REFERENCE_FREQ,
                backline_pacer::REFERENCE_SPAN,
            ),
        )
        .map_err(|e| super::common::pacer_error(e, a.seed))?;
    let timeout_us = a.timeout_us.unwrap_or(if a.coprocessor.is_some() {
        DEFAULT_BRIDGED_TIMEOUT_US
    } else {
        DEFAULT_TIMEOUT_US
    });
    let timeout = timeout_us
        .checked_mul(rm::CYCLES_PER_US)
        .filter(|&c| c <= u64::from(u32::MAX));
    let Some(timeout_cycles) = timeout else {
        bail!("--timeout-us {timeout_us} does not fit the engine's 32-bit cycle counter");
    };
    let rounds = a.rounds.unwrap_or(match a.cadence {
        Cadence::B2b => 1_000_000,
        Cadence::RandomDelayed => 10_000,
    });
    let (responder, workload, bridge) = match &a.coprocessor {
        None => (model_responder(&a.responder)?, None, None),
        Some(addr) => {
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
            (Responder::Echo, Some(w), Some(b))
        }
    };
    let model = ModelConfig {
        fabric_latency_cycles: rm::ns_to_cycles(a.fabric_latency_ns),
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
        timeout_cycles: timeout_cycles as u32,
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

/// Ctrl-C and SIGTERM end a run between two progress calls (the bridge's session and its
/// shm segment are then dropped cleanly).
fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag.clone()).context("installing a signal handler")?;
    }
    Ok(flag)
}

/// Runs `backline sim`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let (cfg, bridge) = config(&a)?;
    let mut sim = HwhsSim::new(cfg.model.clone()).context("starting the engine simulation")?;
    let service_note = match &bridge {
        Some(b) => {
            let br = Bridge::connect(b).context("connecting the simulated fabric's bridge")?;
            sim.model_mut().attach_bridge(br);
            format!("measured: the coprocessor at {}", b.addr)
        }
        None => format!(
            "modelled: {}, {} ns",
            cfg.model.responder.name(),
            a.service_ns
        ),
    };
    if cfg.rounds > u64::from(rm::TRACE_DEPTH) && !a.json {
        eprintln!(
            "backline sim: note: the trace RAM holds {} rounds; later rounds run but are not recorded",
            rm::TRACE_DEPTH
        );
    }
    let stop = stop_flag()?;
    let progress = Progress::start(
        "backline sim",
        "rounds",
        cfg.rounds,
        Show::unless(a.json || a.quiet),
    );
    let result = backline_sim::run::run_until(&mut sim, &cfg, &mut |d, _| progress.set(d), &|| {
        // Acquire pairs with signal-hook's store in the handler.
        stop.load(Ordering::Acquire)
    });
    progress.finish();
    let rep = match result {
        Ok(r) => r,
        Err(e @ SimError::CoprocessorLost(_)) => {
            eprintln!("backline sim: {e}");
            return Ok(ExitCode::from(backline_bench::exit::FAILED));
        }
        Err(SimError::Interrupted(done)) => {
            eprintln!("backline sim: interrupted after {done} rounds");
            return Ok(ExitCode::from(backline_bench::exit::FAILED));
        }
        Err(e) => return Err(anyhow::Error::new(e).context("simulating")),
    };
    let w = cfg.workload();

    let clock = Clock::Cycles { mhz: rm::CLOCK_MHZ };
    let mut trace = Trace::with_capacity(clock, rep.trace.len());
    trace.set_meta("source", "sim");
    trace.set_meta(
        "transport",
        match &bridge {
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
    trace.set_meta("service", &service_note);
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
    if let Some(path) = &a.csv {
        trace
            .save(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let summary = trace.summary();
    let split = trace.split_medians();
    let mcps = rep.sim_cycles as f64 / rep.wall.as_secs_f64().max(1e-9) / 1e6;

    if a.json {
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
            (mcps * 10.0).round().div_euclid(10.0).into(),
        );
        extra.insert("model_errors".into(), rep.model_errors.0.into());
        extra.insert(
            "fabric_latency_cycles".into(),
            cfg.model.fabric_latency_cycles.into(),
        );
        extra.insert("service".into(), service_note.clone().into());
        if let Some(c) = &bridge {
            extra.insert("coprocessor".into(), c.addr.to_string().into());
        }
        if let Some((relayed, mean_ns)) = rep.bridged {
            extra.insert("relayed".into(), relayed.into());
            extra.insert("mean_service_ns".into(), mean_ns.round().into());
        }
        let transport = trace.meta("transport").unwrap_or("ernic-model").to_string();
        let line = backline_bench::cli::trace_json_line(
            &trace,
            &transport,
            &w.name,
            rep.rounds_committed,
            extra,
        );
        println!("{line}");
    } else {
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
            match &bridge {
                Some(b) => format!("the coprocessor at {} ({})", b.addr, w.name),
                None => format!("the in-simulation {}", w.name),
            },
            rep.rounds_committed,
        ));
        match summary {
            Some(s) => t.push(&w.name, trace.round0_ns(), s),
            None => eprintln!("backline sim: no warm round completed"),
        }
        print!("{}", t.render());
        if let Some(m) = split {
            println!("{}", m.line(&service_note));
        }
        if let Some((relayed, mean_ns)) = rep.bridged {
            println!(
                "bridge: {relayed} requests relayed, mean measured service {:.3} µs",
                mean_ns / 1e3
            );
        }
        println!(
            "mismatches {}  timeouts {}  lost {}  trace_full {}  trace_saturated {}  \
             ({} cycles simulated in {:.2} s, {mcps:.1} M cycles/s{})",
            rep.mismatches,
            rep.timeouts,
            rep.lost.0,
            rep.trace_full,
            rep.trace_saturated,
            rep.sim_cycles,
            rep.wall.as_secs_f64(),
            if rep.skipped_cycles > 0 {
                format!(", {} quiet cycles fast-forwarded", rep.skipped_cycles)
            } else {
                String::new()
            }
        );
    }
    if let (n, Some(first)) = &rep.model_errors {
        eprintln!("backline sim: the ERNIC model saw {n} protocol error(s); first: {first}");
    }
    if let (n, Some(first)) = &rep.lost {
        eprintln!("backline sim: the coprocessor lost {n} round(s); first: {first}");
    }
    if rep.mismatches > 0 && bridge.is_some() {
        eprintln!(
            "backline sim: {} replies differed from what `{}` answers here for decoder_id {}: \
             does the coprocessor serve --responder {} ?",
            rep.mismatches, w.name, w.decoder_id, w.name
        );
    }
    let failed = rep.mismatches > 0 || rep.model_errors.0 > 0 || rep.timeouts > 0 || rep.lost.0 > 0;
    Ok(if failed {
        ExitCode::from(backline_bench::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    })
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
        config(&Cli::try_parse_from(v)?.args)
    }

    #[test]
    fn defaults_follow_the_reference() {
        let (c, b) = cfg(&[]).unwrap();
        assert!(b.is_none());
        assert_eq!(
            (c.mode, c.rounds, c.pacer.is_b2b()),
            (Mode::SwLoop, 1_000_000, true)
        );
        // 1,152 ns one way: 230 cycles of the 200 MHz clock.
        assert_eq!(c.model.fabric_latency_cycles, 230);
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
