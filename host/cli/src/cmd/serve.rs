//! `backline serve`: a coprocessor in its own process, for the shm, udp and rdma transports.
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
    /// Shared-memory segment name (shm): /dev/shm/backline-NAME.
    #[arg(long, default_value = "backline")]
    pub name: String,
    /// Address to bind (udp; rdma: its TCP set-up listener). Loopback unless told otherwise.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub bind: String,
    /// The coprocessor function for decoder id 0: echo, steane, LIB:SYMBOL,
    /// bposd:CODE[:SETTINGS] (X checks on id 0, Z checks on id 1), or a GPU function:
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
    /// Exit when the parent process exits (used when `backline bench` starts the server).
    #[arg(long, hide = true)]
    pub exit_with_parent: bool,
}

/// Runs `backline serve`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let transport: TransportKind = args.transport.parse()?;
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
    let options = ServeOptions {
        max_sessions: args.sessions,
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
    eprintln!(
        "backline serve: {bound}, {} slots of {} bytes, functions {}; Ctrl-C to stop",
        config.geometry.depth,
        config.geometry.slot_bytes,
        list.join(" ")
    );
    while !term.load(Ordering::Relaxed) && !session.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (sessions, rounds, failed) = session.stats().snapshot();
    let outcome = session.stop();
    for line in table.reports() {
        eprintln!("backline serve: {line}");
    }
    eprintln!(
        "backline serve: stopped after {sessions} sessions, {rounds} rounds ({failed} answered with an error status)"
    );
    outcome.context("the server failed")?;
    Ok(ExitCode::SUCCESS)
}
