//! `backline sim`: runs the HWHS engine's generated RTL under Verilator against the ERNIC and
//! responder models, then prints the same statistics table and writes the same CSV trace as
//! `backline bench`, from RTTs read back out of the simulated trace RAM over AXI4-Lite.
//!
//! Exit status: 0 when the run completed with no mismatch and no model error, 1 when it ran
//! but a check failed (mismatches, model protocol errors, timeouts), 2 on error.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use backline_bench::{Clock, JsonReport, Table, Trace, report::JsonStats, trace::RoundStatus};
use backline_regmap as rm;
use backline_sim::{HwhsSim, Mode, ModelConfig, Responder, RunConfig};

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

/// The remote responder model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ResponderArg {
    /// Returns the payload.
    Echo,
    /// Steane [[7,1,3]] lookup decoder.
    Steane,
}

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
    /// LFSR seed, non-zero, decimal or 0x-hex.
    #[arg(long, value_parser = backline_pacer::parse_setting, default_value = "1")]
    seed: u32,
    /// Rounds, round 0 included (default: 1,000,000 b2b, 10,000 random-delayed).
    #[arg(long)]
    rounds: Option<u64>,
    /// The remote responder.
    #[arg(long, value_enum, default_value = "echo")]
    responder: ResponderArg,
    /// One-way wire latency of the ERNIC model, ns (rounded to 5 ns cycles).
    #[arg(long, default_value = "1000")]
    wire_latency_ns: u64,
    /// Responder service time, ns (rounded to 5 ns cycles).
    #[arg(long, default_value = "200")]
    service_ns: u64,
    /// Extra delay per wire leg, uniform in 0..=N ns, drawn from --seed (0: fixed latency).
    #[arg(long, default_value = "0")]
    jitter_ns: u64,
    /// Reply timeout, µs.
    #[arg(long, default_value = "1000")]
    timeout_us: u64,
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

const NS_PER_CYCLE: u64 = 5;

fn ns_to_cycles(ns: u64) -> u64 {
    (ns + NS_PER_CYCLE / 2) / NS_PER_CYCLE
}

/// Turns the flags into a validated run configuration.
fn config(a: &Args) -> anyhow::Result<RunConfig> {
    let cadence = match a.cadence {
        Cadence::B2b => backline_pacer::Cadence::B2b,
        Cadence::RandomDelayed => backline_pacer::Cadence::RandomDelayed,
    };
    // The board's reference cadence by default (freq 1,000,000, span 0x0FFFFFFF at 200 MHz).
    let pacer = cadence.config(
        a.freq,
        a.span,
        a.seed,
        (
            backline_pacer::REFERENCE_FREQ,
            backline_pacer::REFERENCE_SPAN,
        ),
    )?;
    let timeout = a
        .timeout_us
        .checked_mul(200)
        .filter(|&c| c <= u64::from(u32::MAX));
    let Some(timeout_cycles) = timeout else {
        bail!(
            "--timeout-us {} does not fit the engine's 32-bit cycle counter",
            a.timeout_us
        );
    };
    let rounds = a.rounds.unwrap_or(match a.cadence {
        Cadence::B2b => 1_000_000,
        Cadence::RandomDelayed => 10_000,
    });
    let model = ModelConfig {
        wire_latency_cycles: ns_to_cycles(a.wire_latency_ns),
        service_cycles: ns_to_cycles(a.service_ns),
        jitter_cycles: ns_to_cycles(a.jitter_ns),
        jitter_seed: u64::from(a.seed),
        responder: match a.responder {
            ResponderArg::Echo => Responder::Echo,
            ResponderArg::Steane => Responder::Steane,
        },
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
    };
    cfg.validate()?;
    Ok(cfg)
}

/// Progress on stderr, a few times a second, only on a terminal.
struct Progress {
    enabled: bool,
    last: Instant,
    start: Instant,
}

impl Progress {
    fn tick(&mut self, done: u64, total: u64) {
        if !self.enabled || self.last.elapsed() < Duration::from_millis(250) {
            return;
        }
        self.last = Instant::now();
        let pct = 100.0 * done as f64 / total.max(1) as f64;
        eprint!(
            "\rbackline sim: {done}/{total} rounds ({pct:.0} %), {:.0} s",
            self.start.elapsed().as_secs_f64()
        );
        let _ = std::io::stderr().flush();
    }

    fn finish(&self) {
        if self.enabled {
            eprint!("\r{:70}\r", "");
        }
    }
}

/// Runs `backline sim`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let mut sim = HwhsSim::new(cfg.model.clone()).context("starting the engine simulation")?;
    if cfg.rounds > u64::from(rm::TRACE_DEPTH) && !a.json {
        eprintln!(
            "backline sim: note: the trace RAM holds {} rounds; later rounds run but are not recorded",
            rm::TRACE_DEPTH
        );
    }
    let mut progress = Progress {
        enabled: !a.json && !a.quiet && std::io::stderr().is_terminal(),
        last: Instant::now(),
        start: Instant::now(),
    };
    let rep = backline_sim::run::run(&mut sim, &cfg, &mut |d, t| progress.tick(d, t))
        .context("simulating")?;
    progress.finish();

    let clock = Clock::Cycles { mhz: rm::CLOCK_MHZ };
    let mut trace = Trace::with_capacity(clock, rep.trace.len());
    trace.set_meta("source", "sim");
    trace.set_meta("transport", "ernic-model");
    trace.set_meta("responder", cfg.model.responder.name());
    trace.set_meta("mode", cfg.mode.name());
    trace.set_meta(
        "cadence",
        if cfg.pacer.is_b2b() {
            "b2b".to_string()
        } else {
            format!(
                "random-delayed freq {} span {:#x} seed {}",
                cfg.pacer.freq, cfg.pacer.span, cfg.pacer.seed
            )
        },
    );
    trace.set_meta(
        "wire_latency_ns",
        cfg.model.wire_latency_cycles * NS_PER_CYCLE,
    );
    trace.set_meta("service_ns", cfg.model.service_cycles * NS_PER_CYCLE);
    trace.set_meta("jitter_ns", cfg.model.jitter_cycles * NS_PER_CYCLE);
    trace.set_meta("fsm_overhead_cycles", rep.fsm_overhead_cycles);
    trace.set_meta("version", env!("CARGO_PKG_VERSION"));
    trace.push_engine_rounds(&rep.trace, |k| {
        rep.quiet_cycles.get(k).copied().unwrap_or(0)
    });
    if let Some(path) = &a.csv {
        trace
            .save(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let summary = trace.summary();
    let round0_ns = trace
        .cold_rows()
        .next()
        .filter(|r| r.status == RoundStatus::Ok)
        .map(|r| r.rtt_ns);
    let completed = trace
        .rows
        .iter()
        .filter(|r| r.status == RoundStatus::Ok)
        .count() as u64;
    let mcps = rep.sim_cycles as f64 / rep.wall.as_secs_f64().max(1e-9) / 1e6;

    if a.json {
        let Some(s) = summary else {
            bail!("no warm round completed: nothing to summarise");
        };
        let mut extra = serde_json::Map::new();
        extra.insert("mode".into(), cfg.mode.name().into());
        extra.insert("fsm_overhead_cycles".into(), rep.fsm_overhead_cycles.into());
        extra.insert("mismatches".into(), rep.mismatches.into());
        extra.insert("timeouts".into(), rep.timeouts.into());
        extra.insert("trace_full".into(), rep.trace_full.into());
        extra.insert("trace_saturated".into(), rep.trace_saturated.into());
        extra.insert("sim_cycles".into(), rep.sim_cycles.into());
        extra.insert(
            "sim_mcycles_per_s".into(),
            (mcps * 10.0).round().div_euclid(10.0).into(),
        );
        extra.insert("model_errors".into(), rep.model_errors.0.into());
        let r = JsonReport {
            transport: "ernic-model".into(),
            responder: cfg.model.responder.name().into(),
            rounds: rep.rounds_committed,
            completed,
            stats: JsonStats::new(&s, round0_ns),
            baseline: None,
            ratio_median: None,
            extra,
        };
        println!("{}", r.to_line());
    } else {
        let mut t = Table::new(format!(
            "backline sim: {} {} over the ERNIC model (wire {} ns one way, service {} ns), \
             {} rounds, RTT = fabric + {} cycles FSM overhead",
            cfg.mode.name(),
            if cfg.pacer.is_b2b() {
                "b2b"
            } else {
                "random-delayed"
            },
            cfg.model.wire_latency_cycles * NS_PER_CYCLE,
            cfg.model.service_cycles * NS_PER_CYCLE,
            rep.rounds_committed,
            rep.fsm_overhead_cycles
        ));
        match summary {
            Some(s) => t.push(cfg.model.responder.name(), round0_ns, s),
            None => eprintln!("backline sim: no warm round completed"),
        }
        print!("{}", t.render());
        println!(
            "mismatches {}  timeouts {}  trace_full {}  trace_saturated {}  \
             ({} cycles simulated in {:.2} s, {mcps:.1} M cycles/s{})",
            rep.mismatches,
            rep.timeouts,
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
    let failed = rep.mismatches > 0 || rep.model_errors.0 > 0 || rep.timeouts > 0;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn cfg(argv: &[&str]) -> anyhow::Result<RunConfig> {
        let mut v = vec!["sim"];
        v.extend_from_slice(argv);
        config(&Cli::try_parse_from(v)?.args)
    }

    #[test]
    fn defaults_follow_the_reference() {
        let c = cfg(&[]).unwrap();
        assert_eq!(
            (c.mode, c.rounds, c.pacer.is_b2b()),
            (Mode::SwLoop, 1_000_000, true)
        );
        assert_eq!(c.model.wire_latency_cycles, 200);
        let c = cfg(&["--cadence", "random-delayed", "--mode", "hw-loop"]).unwrap();
        assert_eq!(
            c.pacer,
            backline_pacer::PacerConfig::REFERENCE_RANDOM_DELAYED
        );
        assert_eq!(c.rounds, 10_000);
        let c = cfg(&[
            "--cadence",
            "random-delayed",
            "--span",
            "0xff",
            "--freq",
            "10",
        ])
        .unwrap();
        assert_eq!((c.pacer.freq, c.pacer.span), (10, 0xFF));
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
    }
}
