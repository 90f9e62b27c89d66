//! `backline-apu`: the board's control-plane command. Thin: clap parses, each subcommand's
//! flags become a validated [`Task`] before the board is touched (`setup`'s file read and
//! checked, `run`'s spec, `sim-board`'s options), then [`execute`] calls
//! [`backline_apu::Board`] and prints. Errors are rendered once, here, with their whole
//! chain.
//!
//! Exit status: 0 success; 1 the run worked but a check failed (timeouts, mismatches);
//! 2 error. A closed stdout (broken pipe) counts as success.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use backline_bench::progress::{Progress, Show};
use clap::{Parser, Subcommand, ValueEnum};

use backline_apu::{BackendSpec, Board, Config, Expect, Mmio, Mode, RunSpec};
use backline_bench::{Table, Trace};
use backline_board::workload::{self, Workload};

/// The board's Arm control plane: ERNIC queue-pair bring-up and the HWHS engine.
#[derive(Debug, Parser)]
#[command(name = "backline-apu", version, about, propagate_version = true)]
struct Cli {
    /// Where the board is: uio:ERNIC,HWHS (UIO names or /dev/uioN), devmem:0xERNIC,0xHWHS,
    /// file:ERNIC_FILE,HWHS_FILE, or sim:SOCKET (a `backline-apu sim-board`).
    #[arg(long, global = true, env = "BACKLINE_APU_BACKEND", default_value = BackendSpec::DEFAULT)]
    backend: String,
    /// More log output on stderr (-v info, -vv debug, -vvv every register write).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Versions, ERNIC and QP state, HWHS status and counters.
    Info {
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Hand-shake with the peer and bring up ERNIC (global, memory region, data QP) and HWHS.
    Setup {
        /// The board configuration (TOML; see firmware/examples/sim-board.toml).
        #[arg(long)]
        config: PathBuf,
    },
    /// Run rounds (sw-loop: the Arm starts each; hw-loop: the engine's pacer does).
    Run(RunArgs),
    /// Read the trace RAM out as a CSV trace (backline bench's format) and summarise it.
    Trace {
        /// Write the trace here.
        #[arg(long)]
        csv: PathBuf,
        /// One JSON summary on stdout instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Stop the engine, tear down every data QP, disable the ERNIC, clear counters and trace.
    Reset,
    /// Serve a simulated board (Verilator HWHS + ERNIC model) on a Unix socket.
    #[cfg(feature = "sim")]
    SimBoard(SimBoardArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    /// The Arm writes CTRL.start for each round and polls for its end.
    SwLoop,
    /// The engine's pacer starts each round; no software on the path.
    HwLoop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Cadence {
    /// The next round goes out as soon as the last reply lands.
    B2b,
    /// A quiet interval of freq + (lfsr & span) cycles before each round.
    RandomDelayed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OnTimeout {
    /// Go on; the round counts as a timeout.
    Continue,
    /// Abort the run at the first timed-out round.
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FastForward {
    /// On for the simulator, off on the board.
    Auto,
    /// Skip quiet periods longer than 4096 cycles (RTTs are unaffected).
    On,
    /// Let every quiet period pass.
    Off,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// sw-loop or hw-loop.
    #[arg(long, value_enum)]
    mode: ModeArg,
    /// b2b or random-delayed.
    #[arg(long, value_enum, default_value = "b2b")]
    cadence: Cadence,
    /// Fixed part of the quiet interval, cycles (random-delayed; default 1,000,000 = 5 ms).
    #[arg(long, value_parser = backline_pacer::parse_setting)]
    freq: Option<u32>,
    /// Mask of the random part, 2^N-1, decimal or 0x-hex (random-delayed; default 0x0FFFFFFF).
    #[arg(long, value_parser = backline_pacer::parse_setting)]
    span: Option<u32>,
    /// LFSR seed, non-zero.
    #[arg(long, value_parser = backline_pacer::parse_setting, default_value = "1")]
    seed: u32,
    /// Rounds, round 0 included.
    #[arg(long)]
    rounds: u64,
    /// Check every reply against what the peer must answer; mismatches are counted in the
    /// engine. `none`, `echo` or `steane` check the eight 3-bit syndromes; any other
    /// coprocessor function (`bposd:CODE`, `LIB:SYMBOL`) sends syndromes of errors sampled
    /// with --error-rate from --seed, and expects what that function answers them here.
    #[arg(long, default_value = "none", value_name = "none|echo|steane|FUNCTION")]
    expect: String,
    /// decoder_id of the requests (with a FUNCTION for --expect).
    #[arg(long, default_value = "0")]
    decoder_id: u32,
    /// Flip probability of the sampled errors (with a FUNCTION for --expect).
    #[arg(long, default_value = "0.05")]
    error_rate: f64,
    /// Skip long quiet periods.
    #[arg(long, value_enum, default_value = "auto")]
    fast_forward: FastForward,
    /// What a round that times out does: `continue` (counted, marked in the trace, exit 1
    /// at the end) or `stop` (the run is aborted there, with an error naming the round).
    #[arg(long, value_enum, default_value = "continue")]
    on_timeout: OnTimeout,
    /// The engine's reply timeout for this run, µs (default: the configured
    /// hwhs.timeout_us). A simulated board bridged to a real coprocessor wants 10,000: the
    /// host's measured service time is stretched now and then by a loaded machine.
    #[arg(long)]
    timeout_us: Option<u64>,
    /// Status poll interval in ns (default: 200 ns sw-loop; hw-loop 200 µs b2b, 2 µs paced).
    #[arg(long)]
    poll_ns: Option<u64>,
    /// Also write the trace here after the run.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// One JSON summary on stdout.
    #[arg(long)]
    json: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[cfg(feature = "sim")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ResponderArg {
    /// Returns the payload.
    Echo,
    /// Steane [[7,1,3]] lookup decoder.
    Steane,
    /// Never answers: every round times out.
    Silent,
}

#[cfg(feature = "sim")]
#[derive(Debug, clap::Args)]
struct SimBoardArgs {
    /// The Unix socket to serve (the `sim:` backend connects to it).
    #[arg(long)]
    socket: PathBuf,
    /// Where the modelled remote side listens for the handshake (`none`: nowhere).
    #[arg(long, default_value = "127.0.0.1:7471")]
    peer_listen: String,
    /// What the in-simulation remote side computes (without --coprocessor).
    #[arg(long, value_enum, default_value = "echo")]
    responder: ResponderArg,
    /// Deliver every request to a real backline coprocessor instead: udp:HOST:PORT,
    /// shm:NAME or rdma:HOST:PORT (a `backline serve`); decoder_id travels with it.
    #[arg(long, value_name = "ADDR")]
    coprocessor: Option<String>,
    /// How long the bridge waits for one reply of the coprocessor, ms: past it the round is
    /// lost (not delivered), and the engine's reply timeout marks it, as on a board.
    #[arg(long, default_value = "1000")]
    coprocessor_timeout_ms: u64,
    /// One-way fabric latency modelled on top of the engine, ns (default: the reference
    /// board's measured one-way RoCE figure).
    #[arg(long, alias = "wire-latency-ns", default_value_t = backline_sim::model::REFERENCE_ONE_WAY_NS)]
    fabric_latency_ns: u64,
    /// In-simulation responder service time, ns (with --coprocessor the measured one).
    #[arg(long, default_value = "200")]
    service_ns: u64,
    /// Extra delay per fabric leg, uniform in 0..=N ns.
    #[arg(long, default_value = "0")]
    jitter_ns: u64,
    /// Seed of the jitter.
    #[arg(long, default_value = "1")]
    seed: u64,
    /// The simulated ERNIC's register layout: v4 (ERNIC v4.x, what the block design builds
    /// by default) or v3 (ERNIC v3.x).
    #[arg(long, default_value = "v4", value_parser = parse_layout)]
    ernic: backline_board::ernic::Layout,
    /// What the word the ERNIC is identified by reads, decimal or 0x-hex: v4.x's
    /// XRNIC_VERSION (default 0x00040000, version 4.0.0) or v3.x's first reserved word
    /// (default 0). Anything else rehearses the firmware's refusal of a foreign register
    /// space.
    #[arg(long, value_parser = backline_pacer::parse_setting)]
    ident_word: Option<u32>,
}

/// `v3`/`v4` (also `v3.x`, `4`) as an ERNIC layout.
#[cfg(feature = "sim")]
fn parse_layout(s: &str) -> Result<backline_board::ernic::Layout, String> {
    backline_board::ernic::Layout::parse(s)
        .ok_or_else(|| format!("`{s}` is not an ERNIC layout: v3 (ERNIC v3.x) or v4 (ERNIC v4.x)"))
}

/// A small stderr logger for the `log` facade.
struct StderrLog(log::LevelFilter);

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= self.0
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!(
                "backline-apu: {}: {}",
                r.level().as_str().to_lowercase(),
                r.args()
            );
        }
    }
    fn flush(&self) {}
}

fn init_log(verbose: u8) {
    let level = match verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    let logger = Box::leak(Box::new(StderrLog(level)));
    if log::set_logger(logger).is_ok() {
        log::set_max_level(level);
    }
}

fn connect(spec: &str) -> anyhow::Result<Board<Box<dyn Mmio + Send>>> {
    Board::connect(spec).with_context(|| format!("connecting to the board ({spec})"))
}

fn out(text: &str) -> std::io::Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())?;
    o.flush()
}

fn info(backend: &str, json: bool) -> anyhow::Result<ExitCode> {
    let mut b = connect(backend)?;
    let i = b.info()?;
    if json {
        out(&format!("{}\n", serde_json::to_string(&i)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut s = String::new();
    s += &format!("backend        {}\n", i.backend);
    s += &format!(
        "ERNIC layout   {} ({})\n",
        i.ernic_layout, i.ernic_identified_by
    );
    s += &format!(
        "ERNIC          {}, {}, {} QPs, UDP source port {}, MAC {}, IP {}, INTSTS {:#x}\n",
        i.ernic_layout_short,
        if i.ernic_enabled {
            "enabled"
        } else {
            "disabled"
        },
        i.num_qps,
        i.udp_source_port,
        i.mac,
        i.ip,
        i.intsts
    );
    for q in &i.qps {
        s += &format!(
            "QP {:<11} {}{}, QPCONF {:#010x}, STATQP {:#x}, peer QP {:#x}, SQ {:#x} x {}, PSN {:#x}\n",
            q.qpn,
            if q.enabled { "enabled" } else { "disabled" },
            if q.fatal { " FATAL" } else { "" },
            q.qpconf,
            q.statqp,
            q.dest_qpn,
            q.sq_base,
            q.sq_depth,
            q.sq_psn
        );
    }
    let h = &i.hwhs;
    s += &format!(
        "HWHS           VERSION {:#010x}, STATUS {:#x} ({}), FLAGS {:#x}, QP {}\n",
        i.hwhs_version, h.status, h.status_text, h.flags, h.qp_num
    );
    s += &format!(
        "counters       rounds {}, timeouts {}, ERNIC errors {}, mismatches {}, last RTT {} cycles, trace {} entries (status {:#x})\n",
        h.round_count,
        h.timeout_count,
        h.ernic_errors,
        h.mismatch_count,
        h.last_rtt_cycles,
        h.trace_count,
        h.trace_status
    );
    out(&s)?;
    Ok(ExitCode::SUCCESS)
}

/// `setup`: the board brought up from `cfg` (read and validated before the board is touched).
fn setup(backend: &str, cfg: &Config) -> anyhow::Result<ExitCode> {
    let mut b = connect(backend)?;
    let t0 = Instant::now();
    let rep = b.setup(cfg)?;
    out(&format!(
        "QP {} up: peer QP {:#x} at {} ({}), PSN {:#x}, request ring {:#x} (rkey {:#x}, {} slots); \
         {} register writes in {:.1} ms{}\n",
        cfg.qp.number,
        rep.peer.qpn,
        rep.peer.ip,
        backline_board::fmt_mac(rep.peer.mac),
        rep.peer.psn,
        rep.peer.ring_addr,
        rep.peer.rkey,
        rep.peer.depth,
        rep.writes,
        t0.elapsed().as_secs_f64() * 1e3,
        if rep.torn_down.is_empty() {
            String::new()
        } else {
            format!(" (torn down first: QP {:?})", rep.torn_down)
        }
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `--expect`: a fixed table, or the workload of a coprocessor function.
fn expectation(a: &RunArgs) -> anyhow::Result<Expect> {
    Ok(match a.expect.as_str() {
        "none" => Expect::Nothing,
        "echo" => Expect::Echo,
        "steane" => Expect::Steane,
        spec => {
            if !(a.error_rate > 0.0 && a.error_rate < 0.5) {
                bail!(
                    "--error-rate {}: expected a probability in (0, 0.5)",
                    a.error_rate
                );
            }
            let w = Workload::for_function(
                spec,
                a.decoder_id,
                workload::MAX_ENTRIES,
                a.error_rate,
                u64::from(a.seed),
            )
            .with_context(|| format!("--expect {spec}"))?;
            Expect::Workload(w)
        }
    })
}

/// `run`, validated before the board is touched: the run's spec but for an `auto`
/// fast-forward, which depends on the board (on for the simulator, off on the board).
struct RunPlan {
    /// The run, `fast_forward` as `--fast-forward on` would set it.
    spec: RunSpec,
    /// `--fast-forward`.
    fast_forward: FastForward,
    /// Also write the trace here.
    csv: Option<PathBuf>,
    /// One JSON summary on stdout.
    json: bool,
    /// No progress on stderr.
    quiet: bool,
}

impl RunPlan {
    fn from_args(a: &RunArgs) -> anyhow::Result<RunPlan> {
        let spec = RunSpec {
            mode: match a.mode {
                ModeArg::SwLoop => Mode::SwLoop,
                ModeArg::HwLoop => Mode::HwLoop,
            },
            pacer: pacer_settings(a)?,
            rounds: a.rounds,
            expect: expectation(a)?,
            fast_forward: a.fast_forward != FastForward::Off,
            poll: a.poll_ns.map(Duration::from_nanos),
            stop_on_timeout: a.on_timeout == OnTimeout::Stop,
            timeout_cycles: a.timeout_us.map(timeout_cycles).transpose()?,
        };
        spec.validate()?;
        Ok(RunPlan {
            spec,
            fast_forward: a.fast_forward,
            csv: a.csv.clone(),
            json: a.json,
            quiet: a.quiet,
        })
    }

    /// The spec for a board that is (or is not) the simulator.
    fn spec_for(&self, simulated: bool) -> RunSpec {
        let mut spec = self.spec.clone();
        spec.fast_forward = match self.fast_forward {
            FastForward::Auto => simulated,
            FastForward::On => true,
            FastForward::Off => false,
        };
        spec
    }
}

/// The pacer of `--cadence`, `--freq`, `--span` and `--seed`: the board's reference cadence
/// by default (freq 1,000,000, span 0x0FFFFFFF at 200 MHz).
fn pacer_settings(a: &RunArgs) -> anyhow::Result<backline_pacer::PacerConfig> {
    let cadence = match a.cadence {
        Cadence::B2b => backline_pacer::Cadence::B2b,
        Cadence::RandomDelayed => backline_pacer::Cadence::RandomDelayed,
    };
    Ok(cadence.settings(
        a.freq,
        a.span,
        a.seed,
        (
            backline_pacer::REFERENCE_FREQ,
            backline_pacer::REFERENCE_SPAN,
        ),
    )?)
}

/// `--timeout-us` in engine cycles: 1 ..= the 32-bit cycle counter.
fn timeout_cycles(us: u64) -> anyhow::Result<u32> {
    us.checked_mul(backline_regmap::CYCLES_PER_US)
        .and_then(|c| u32::try_from(c).ok())
        .filter(|&c| c > 0)
        .with_context(|| {
            format!(
                "--timeout-us {us}: 1 ..= {} µs (the engine's 32-bit cycle counter)",
                u64::from(u32::MAX) / backline_regmap::CYCLES_PER_US
            )
        })
}

/// The `--json` line of the board's trace (`ernic`, `peer`, a round per trace row).
fn summary_json(trace: &Trace, extra: serde_json::Map<String, serde_json::Value>) -> String {
    let rounds = trace.rows.len() as u64;
    backline_bench::cli::trace_json_line(trace, "ernic", "peer", rounds, extra)
}

fn summary_table(title: String, trace: &Trace) -> String {
    let mut t = Table::new(title);
    match trace.summary() {
        Some(s) => {
            t.push(trace.meta("mode").unwrap_or("rounds"), trace.round0_ns(), s);
            let mut out = t.render();
            if let Some(m) = trace.split_medians() {
                out += &m.line(trace.meta("service").unwrap_or("?"));
                out.push('\n');
            }
            out
        }
        None => "no warm round completed\n".into(),
    }
}

/// `run`: the rounds on the board, then its trace read out and summarised.
fn run(backend: &str, a: &RunPlan) -> anyhow::Result<ExitCode> {
    let mut b = connect(backend)?;
    let spec = a.spec_for(b.mmio().is_simulated());
    let progress = Progress::start(
        "backline-apu",
        "rounds",
        spec.rounds,
        Show::unless(a.json || a.quiet),
    );
    let rep = b.run(&spec, &mut |d, _| progress.set(d))?;
    progress.finish();
    let trace = b.read_trace().context("reading the trace RAM")?;
    if let Some(path) = &a.csv {
        trace
            .save(path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let failed = rep.timeouts > 0 || rep.mismatches > 0 || rep.ernic_errors > 0;
    if a.json {
        let mut extra = serde_json::Map::new();
        extra.insert("mode".into(), spec.mode.name().into());
        extra.insert("rounds_committed".into(), rep.rounds_committed.into());
        extra.insert("timeouts".into(), rep.timeouts.into());
        extra.insert("ernic_errors".into(), rep.ernic_errors.into());
        extra.insert("mismatches".into(), rep.mismatches.into());
        extra.insert("trace_full".into(), rep.trace_full.into());
        extra.insert("trace_saturated".into(), rep.trace_saturated.into());
        extra.insert("skipped_cycles".into(), rep.skipped_cycles.into());
        extra.insert("wall_s".into(), rep.wall.as_secs_f64().into());
        out(&format!("{}\n", summary_json(&trace, extra)))?;
    } else {
        let title = format!(
            "backline-apu run: {} {}, {} rounds on {}",
            spec.mode.name(),
            if spec.pacer.is_b2b() {
                "b2b"
            } else {
                "random-delayed"
            },
            rep.rounds_committed,
            b.mmio().describe()
        );
        let mut s = summary_table(title, &trace);
        s += &format!(
            "timeouts {}  mismatches {}{}  trace {} entries{}{}  ({:.2} s{})\n",
            rep.timeouts,
            rep.mismatches,
            if rep.ernic_errors > 0 {
                format!("  ERNIC-side AXI errors {}", rep.ernic_errors)
            } else {
                String::new()
            },
            rep.trace_count,
            if rep.trace_full { ", full" } else { "" },
            if rep.trace_saturated {
                ", saturated"
            } else {
                ""
            },
            rep.wall.as_secs_f64(),
            if rep.skipped_cycles > 0 {
                format!(", {} quiet cycles fast-forwarded", rep.skipped_cycles)
            } else {
                String::new()
            }
        );
        out(&s)?;
    }
    Ok(if failed {
        ExitCode::from(backline_bench::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

fn trace(backend: &str, csv: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let mut b = connect(backend)?;
    let t = b.read_trace()?;
    t.save(csv)
        .with_context(|| format!("writing {}", csv.display()))?;
    if json {
        let mut extra = serde_json::Map::new();
        extra.insert("mode".into(), t.meta("mode").unwrap_or("").into());
        extra.insert("csv".into(), csv.display().to_string().into());
        out(&format!("{}\n", summary_json(&t, extra)))?;
    } else {
        let mut s = summary_table(
            format!(
                "backline-apu trace: {} rounds ({} {}) -> {}",
                t.rows.len(),
                t.meta("mode").unwrap_or("?"),
                t.meta("cadence").unwrap_or("?"),
                csv.display()
            ),
            &t,
        );
        for (status, n) in t.failures() {
            s += &format!("{}: {n} rounds\n", status.name());
        }
        out(&s)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn reset(backend: &str) -> anyhow::Result<ExitCode> {
    let mut b = connect(backend)?;
    let qps = b.reset()?;
    out(&format!(
        "board reset: {} torn down, ERNIC disabled, HWHS soft-reset\n",
        if qps.is_empty() {
            "no QP".to_string()
        } else {
            format!("QP {qps:?}")
        }
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `sim-board`, validated: the simulated board's options, and the `--coprocessor` as given.
#[cfg(feature = "sim")]
struct SimBoardPlan {
    options: backline_sim::board::SimBoardOptions,
    coprocessor: Option<String>,
}

#[cfg(feature = "sim")]
impl SimBoardPlan {
    fn from_args(a: &SimBoardArgs) -> anyhow::Result<SimBoardPlan> {
        use backline_regmap as rm;
        use backline_sim::board::SimBoardOptions;
        use backline_sim::{BridgeConfig, CoprocessorAddr};
        if !backline_sim::AVAILABLE {
            bail!(
                "this backline-apu was built without the simulator ({}): `{}`, then build again",
                backline_sim::BUILD,
                backline_sim::FIX
            );
        }
        let mut o = SimBoardOptions::new(&a.socket);
        o.peer_listen = (a.peer_listen != "none").then(|| a.peer_listen.clone());
        o.responder = match a.responder {
            ResponderArg::Echo => backline_sim::Responder::Echo,
            ResponderArg::Steane => backline_sim::Responder::Steane,
            ResponderArg::Silent => backline_sim::Responder::Silent,
        };
        if let Some(c) = &a.coprocessor {
            let addr = CoprocessorAddr::parse(c).map_err(anyhow::Error::msg)?;
            let mut b = BridgeConfig::new(addr);
            b.reply_timeout = Duration::from_millis(a.coprocessor_timeout_ms.max(1));
            o.coprocessor = Some(b);
        }
        o.fabric_latency_cycles = rm::ns_to_cycles(a.fabric_latency_ns);
        o.service_cycles = rm::ns_to_cycles(a.service_ns);
        o.jitter_cycles = rm::ns_to_cycles(a.jitter_ns);
        o.seed = a.seed;
        o.layout = a.ernic;
        o.ident_word = a.ident_word;
        Ok(SimBoardPlan {
            options: o,
            coprocessor: a.coprocessor.clone(),
        })
    }
}

/// `sim-board`: the simulated board served until SIGINT or SIGTERM.
#[cfg(feature = "sim")]
fn sim_board(p: &SimBoardPlan) -> anyhow::Result<ExitCode> {
    let board = backline_sim::board::SimBoard::spawn(p.options.clone())
        .context("starting the simulated board")?;
    // Ctrl-C and SIGTERM stop the board cleanly (the socket file is removed).
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, board.stop_flag())
            .context("installing a signal handler")?;
    }
    eprintln!(
        "backline-apu sim-board: serving {} ({}, Verilator HWHS); remote side {}; {}; stop \
         with Ctrl-C or SIGTERM",
        p.options.socket.display(),
        p.options.layout.describe(),
        board
            .peer_address()
            .map_or("off".to_string(), |p| format!("on {p}")),
        match &p.coprocessor {
            Some(c) => format!("requests bridged to the coprocessor at {c}"),
            None => "in-simulation responder".to_string(),
        }
    );
    board.wait();
    Ok(ExitCode::SUCCESS)
}

/// A command, validated before the board is touched: what [`execute`] runs.
enum Task {
    /// `info`.
    Info { json: bool },
    /// `setup`, its configuration read and validated.
    Setup(Config),
    /// `run`.
    Run(RunPlan),
    /// `trace`.
    Trace { csv: PathBuf, json: bool },
    /// `reset`.
    Reset,
    /// `sim-board`.
    #[cfg(feature = "sim")]
    SimBoard(SimBoardPlan),
}

impl Task {
    /// Validates a command's flags (and reads `setup`'s file).
    fn from_command(c: &Command) -> anyhow::Result<Task> {
        Ok(match c {
            Command::Info { json } => Task::Info { json: *json },
            Command::Setup { config } => Task::Setup(Config::load(config)?),
            Command::Run(a) => Task::Run(RunPlan::from_args(a)?),
            Command::Trace { csv, json } => Task::Trace {
                csv: csv.clone(),
                json: *json,
            },
            Command::Reset => Task::Reset,
            #[cfg(feature = "sim")]
            Command::SimBoard(a) => Task::SimBoard(SimBoardPlan::from_args(a)?),
        })
    }
}

/// Runs a validated command on the board at `backend`.
fn execute(backend: &str, task: &Task) -> anyhow::Result<ExitCode> {
    match task {
        Task::Info { json } => info(backend, *json),
        Task::Setup(config) => setup(backend, config),
        Task::Run(plan) => run(backend, plan),
        Task::Trace { csv, json } => trace(backend, csv, *json),
        Task::Reset => reset(backend),
        #[cfg(feature = "sim")]
        Task::SimBoard(plan) => sim_board(plan),
    }
}

/// What `--version` says: the version, and whether this build has the simulated board.
fn version() -> String {
    #[cfg(feature = "sim")]
    let sim = format!("simulated board: {}", backline_sim::BUILD);
    #[cfg(not(feature = "sim"))]
    let sim = "board build, no simulated board".to_string();
    format!("{} ({sim})", env!("CARGO_PKG_VERSION"))
}

/// The command line, with the version and (on `sim-board --help`) the simulator's build.
fn command() -> clap::Command {
    use clap::CommandFactory;
    let v: &'static str = Box::leak(version().into_boxed_str());
    let cmd = Cli::command().version(v);
    #[cfg(feature = "sim")]
    let cmd = cmd.mut_subcommand("sim-board", |c| c.after_help(backline_sim::build_note()));
    cmd
}

fn main() -> ExitCode {
    let cli: Cli = match backline_bench::cli::parse("backline-apu", command()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    init_log(cli.verbose);
    let result = Task::from_command(&cli.command).and_then(|task| execute(&cli.backend, &task));
    match result {
        Ok(code) => code,
        Err(e) if backline_bench::cli::broken_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut msg = format!("backline-apu: error: {e}");
            for cause in e.chain().skip(1) {
                msg.push_str(&format!(": {cause}"));
            }
            eprintln!("{msg}");
            ExitCode::from(backline_bench::exit::BAD_INPUT)
        }
    }
}
