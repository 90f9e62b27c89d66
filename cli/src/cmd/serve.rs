//! `backline serve`: a coprocessor in its own process, for the shm, udp and rdma transports;
//! with `--protocol cuqr`, a server of NVIDIA's realtime RPC frames over udp instead
//! ([`super::serve_cuqr`]).
//!
//! The first line on stdout is `ready <address>` once the server accepts controllers, so that
//! scripts (and `backline bench`) can wait for it. Human-readable lines go to stderr.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use backline_transport::{
    CoprocessorSession, ServeOptions, Session as _, TransportKind, os::DmaLatencyGuard,
};

use super::common::{GpuArgs, RdmaArgs, RingArgs, parse_fn, table_of};

/// Flags of `backline serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The transport to serve: shm, udp or rdma (memcpy runs inside `backline bench`).
    #[arg(long, default_value = "shm")]
    pub transport: String,
    /// The protocol: backline (its slots) or cuqr (NVIDIA's realtime RPC frames, CUQR/CUQS,
    /// over udp: enqueue_syndromes, get_corrections and reset_decoder answered by stream:
    /// functions; --slot-bytes sets the slot, default 256).
    #[arg(long, default_value = "backline", value_parser = ["backline", "cuqr"])]
    pub protocol: String,
    /// Shared-memory segment name (shm): /dev/shm/backline-NAME.
    #[arg(long, default_value = "backline")]
    pub name: String,
    /// Address to bind (udp; rdma: its TCP set-up listener). Loopback unless told otherwise.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub bind: String,
    /// The coprocessor function for decoder id 0: echo, steane, LIB:SYMBOL,
    /// bposd:CODE[:SETTINGS] (X checks on id 0, Z checks on id 1),
    /// stream:FILE.dem[:DECODER[:SETTINGS]] (a streaming decoder), or a GPU function:
    /// gpu:echo, gpu:steane, gpu:bposd:CODE[:SETTINGS], gpu:FILE.cu:FUNCTION (served through a
    /// CPU proxy thread, whose hop is timed and reported at shutdown).
    #[arg(long, default_value = "steane", conflicts_with = "fns")]
    pub responder: String,
    /// A coprocessor function per decoder id, ID=SPEC (repeatable), e.g. --fn 0=steane --fn
    /// 1=./libdec.so:decode_z.
    #[arg(long = "fn", value_name = "ID=SPEC")]
    pub fns: Vec<String>,
    /// Largest payload this server must carry (sets the default slot size).
    #[arg(long, default_value_t = 48)]
    pub payload_bytes: usize,
    #[command(flatten)]
    pub ring: RingArgs,
    #[command(flatten)]
    pub rdma: RdmaArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Pin the serving thread to this CPU.
    #[arg(long)]
    pub pin: Option<usize>,
    /// Exit after serving this many controller sessions.
    #[arg(long)]
    pub sessions: Option<u64>,
    /// Controllers served at once, each on its own rings and thread; one more is answered
    /// "full".
    #[arg(long, default_value_t = backline_transport::DEFAULT_MAX_SESSIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub max_sessions: u64,
    /// Serving threads that each poll a share of the sessions (for fewer cores than
    /// sessions); default: one thread per session.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub serve_threads: Option<u64>,
    /// udp: end a session whose controller sends nothing for this many seconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub idle_timeout: u64,
    /// Hop probes: per-hop median/P99/P99.9 of every session at shutdown.
    #[arg(long)]
    pub hop_stats: bool,
    /// Hop probes: one row per round of every session (CLOCK_MONOTONIC ns per hop), written
    /// at shutdown.
    #[arg(long, value_name = "FILE")]
    pub hop_csv: Option<std::path::PathBuf>,
    /// Hop probes: rounds recorded per session (allocated when a session starts).
    #[arg(long, default_value_t = 1_000_000)]
    pub hop_rounds: u64,
    /// Exit when the parent process exits (used when `backline bench` starts the server).
    #[arg(long, hide = true)]
    pub exit_with_parent: bool,
}

/// Runs `backline serve`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let transport: TransportKind = args.transport.parse()?;
    if let Some(cpu) = args.pin {
        // Before `ready`: a CPU that does not exist is this server's error, said now.
        super::common::check_pin("--pin", "the serving threads' CPU", cpu)?;
    }
    if args.exit_with_parent {
        backline_transport::os::exit_with_parent()?;
    }
    let address = match transport {
        TransportKind::Shm => args.name.clone(),
        TransportKind::Udp => args.bind.clone(),
        TransportKind::Memcpy => bail!(
            "memcpy keeps controller and coprocessor in one process: use `backline bench --transport memcpy`"
        ),
        TransportKind::Rdma => args.bind.clone(),
    };
    let fns = if args.fns.is_empty() {
        vec![(0, args.responder.clone())]
    } else {
        args.fns
            .iter()
            .map(|f| parse_fn(f))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let table = table_of(&fns, &args.gpu.context()?)?;
    if args.protocol == "cuqr" {
        if transport != TransportKind::Udp {
            bail!("--protocol cuqr runs over udp: add --transport udp");
        }
        return super::serve_cuqr::run(&args, &table);
    }
    let mut config = args.ring.config(transport, args.payload_bytes)?;
    config.pin_cpu = args.pin;
    config.rdma = args.rdma.options();
    let _dma = if args.ring.hold_dma_latency {
        Some(DmaLatencyGuard::hold()?)
    } else {
        None
    };

    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, term.clone()).context("installing signal handlers")?;
    }
    let probes = args.hop_stats || args.hop_csv.is_some();
    if let Some(p) = &args.hop_csv {
        // Checked now, not after the run: a path that cannot be written.
        std::fs::File::create(p).with_context(|| format!("--hop-csv {}", p.display()))?;
    }
    if probes {
        // Each session allocates its hop stamps when it starts: all of them must fit.
        let per_round = (backline_probe::HOPS * std::mem::size_of::<u64>()) as u64;
        backline_bench::memory::check_fits(
            "--hop-rounds",
            args.hop_rounds,
            per_round.saturating_mul(args.max_sessions),
        )
        .map_err(|e| anyhow::anyhow!("{e} (for --max-sessions {} sessions)", args.max_sessions))?;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    if let Some(k) = args.serve_threads {
        if k > args.max_sessions {
            eprintln!(
                "backline serve: --serve-threads {k} is more than --max-sessions {0}: {0} threads serve (no more sessions can run at once)",
                args.max_sessions
            );
        } else if k > cpus {
            eprintln!(
                "backline serve: --serve-threads {k} is more than the {cpus} CPUs: the threads with sessions share them"
            );
        }
    }
    let options = ServeOptions {
        total_sessions: args.sessions,
        max_sessions: args.max_sessions as usize,
        serve_threads: args.serve_threads.map(|k| k as usize),
        probe_rounds: if probes { args.hop_rounds } else { 0 },
        idle_timeout: Duration::from_secs(args.idle_timeout),
        ..ServeOptions::default()
    };
    let mut session =
        CoprocessorSession::open("serve", config.clone(), &address, 7878, &table, options)
            .with_context(|| format!("serving {transport} at {address}"))?;
    let bound = session.address().unwrap_or_default().to_string();
    let list: Vec<String> = table
        .entries()
        .map(|(id, r)| format!("{id}={}", r.name()))
        .collect();
    // What a controller passes as --peer.
    let peer = session.peer_address().unwrap_or_default().to_string();
    println!("ready {peer}");
    let threads = match args.serve_threads {
        Some(k) => format!("{k} serving threads"),
        None => "a thread per session".into(),
    };
    eprintln!(
        "backline serve: {bound}, up to {} controllers at once ({threads}), {} slots of {} bytes, functions {}; Ctrl-C to stop",
        args.max_sessions,
        config.geometry.depth,
        config.geometry.slot_bytes,
        list.join(" ")
    );
    if !bound.contains("127.0.0.1") && !bound.contains("[::1]") && !bound.starts_with("shm:") {
        eprintln!(
            "backline serve: {bound} is not loopback: controllers on other hosts can reach it"
        );
    }
    while !term.load(Ordering::Relaxed) && !session.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let outcome = session.stop();
    let (sessions, rounds, failed) = session.stats().snapshot();
    let reports = session.stats().sessions_report();
    for r in &reports {
        let how = match &r.ended {
            None => "still running".to_string(),
            Some(Ok(())) => "ended".to_string(),
            Some(Err(e)) => format!("ended: {e}"),
        };
        eprintln!(
            "backline serve: session {} ({}): {} rounds, {} with an error status, {how}",
            r.number, r.peer, r.rounds, r.failed
        );
        if args.hop_stats
            && let Some(h) = &r.hops
        {
            eprint!(
                "{}",
                h.render(&format!("backline serve: hops of session {}", r.number))
            );
        }
    }
    if probes && transport != TransportKind::Udp {
        eprintln!(
            "backline serve: hop probes: {transport} has no transport hop of its own (received = request_seen)"
        );
    }
    if let Some(p) = &args.hop_csv {
        let tables: Vec<(u64, &backline_probe::Table)> = reports
            .iter()
            .filter_map(|r| r.hops.as_ref().map(|h| (r.number, h)))
            .collect();
        backline_probe::save_csv(&tables, p)
            .with_context(|| format!("--hop-csv {}", p.display()))?;
        eprintln!(
            "backline serve: wrote the hops of {} sessions to {}",
            tables.len(),
            p.display()
        );
    }
    for line in table.reports() {
        eprintln!("backline serve: {line}");
    }
    let strays = session
        .stats()
        .strays
        .load(std::sync::atomic::Ordering::Relaxed);
    let strays = if strays > 0 {
        format!(", {strays} datagrams of no session dropped")
    } else {
        String::new()
    };
    eprintln!(
        "backline serve: stopped after {sessions} sessions, {rounds} rounds ({failed} answered with an error status){strays}"
    );
    outcome.context("the server failed")?;
    Ok(ExitCode::SUCCESS)
}
