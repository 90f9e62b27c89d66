//! `backline serve`: a coprocessor in its own process, for the shm, udp and rdma transports
//! ([`backline`]); with `--protocol cuqr`, a server of NVIDIA's realtime RPC frames over udp
//! instead ([`cuqr`]).
//!
//! The first line on stdout is `ready <address>` once the server accepts controllers, so that
//! scripts (and `backline bench`) can wait for it. Human-readable lines go to stderr.
//!
//! This file is the parsing and what both servers share: the flags ([`Args`]) become a
//! validated [`ServeConfig`] (every check that can be made before serving: the function
//! table loaded, the geometry, the hop file, the memory of the hop stamps), and each
//! protocol's `run` works from that alone. Both servers start behind the same signal flag,
//! announce themselves, wait and write their hop probes through [`Serving`] and
//! [`HopOutputs`].

mod backline;
mod cuqr;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use backline_responder::ResponderTable;
use backline_responder::cuqr::{CuqrOptions, RingSpec};
use backline_transport::{ServeOptions, SessionConfig, TransportKind};

use super::common::{
    AdmitArgs, GpuArgs, Protocol, RdmaArgs, RingArgs, check_pin, parse_fn, table_of,
};

/// `--transport` of a server: the transports' names (`memcpy` is taken, to be refused with a
/// pointer to `bench`, and not listed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServeTransport {
    // Controller and coprocessor in one process: `backline bench --transport memcpy`.
    #[value(hide = true)]
    Memcpy,
    // Shared memory.
    Shm,
    // UDP datagrams.
    Udp,
    // RDMA writes.
    Rdma,
}

impl From<ServeTransport> for TransportKind {
    fn from(t: ServeTransport) -> TransportKind {
        match t {
            ServeTransport::Memcpy => TransportKind::Memcpy,
            ServeTransport::Shm => TransportKind::Shm,
            ServeTransport::Udp => TransportKind::Udp,
            ServeTransport::Rdma => TransportKind::Rdma,
        }
    }
}

/// `--decode`: where a CUQR server's decoders decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DecodeArg {
    /// On the ring's thread.
    Inline,
    /// On a decode thread per decoder.
    Worker,
}

/// Flags of `backline serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The transport to serve: shm, udp or rdma (memcpy runs inside `backline bench`)
    /// [default: shm; udp with --protocol cuqr].
    #[arg(long, value_enum)]
    pub transport: Option<ServeTransport>,
    /// The protocol: backline (its slots) or cuqr (NVIDIA's realtime RPC frames, CUQR/CUQS,
    /// over udp: enqueue_syndromes, get_corrections and reset_decoder answered by stream:
    /// functions, as NVIDIA's decoding server answers them; see --ring, --num-slots,
    /// --slot-size, --strict-counter).
    #[arg(long, value_enum, default_value = "backline")]
    pub protocol: Protocol,
    /// cuqr: one ring per decoder, as NVIDIA's server has: decoder ID on its own UDP socket
    /// at --bind's host and PORT (0: any free port), with its own serving thread (repeatable;
    /// every --fn needs one). Without it, one socket at --bind serves every decoder.
    #[arg(long = "ring", value_name = "ID=PORT")]
    pub rings: Vec<String>,
    /// cuqr: calls each decoder queues for its decode thread before the receiving thread
    /// waits (NVIDIA's --num-slots).
    #[arg(long, default_value_t = backline_wire::cuqr::DEFAULT_SLOTS as u64,
          value_parser = clap::value_parser!(u64).range(1..=backline_responder::cuqr::MAX_NUM_SLOTS as u64))]
    pub num_slots: u64,
    /// cuqr: bytes of one slot, the largest datagram taken and the size of every answer (a
    /// power of two, 64 to 32768; NVIDIA's --slot-size; --slot-bytes says the same)
    /// [default: 256].
    #[arg(long, value_name = "BYTES")]
    pub slot_size: Option<u32>,
    /// cuqr: judge enqueue_syndromes' counter as the round's index in the shot (a
    /// diagnostic: busy, syndromes_dropped, bad_request as before NVIDIA's semantics; NVIDIA's
    /// server never reads the counter).
    #[arg(long)]
    pub strict_counter: bool,
    /// cuqr: where every decoder's windows decode: inline (on the ring's thread, inside the
    /// call that completes a window: no hand-off, as NVIDIA's server since its PR #769) or
    /// worker (on a decode thread of the decoder's own, fed through a queue of --num-slots).
    /// Default: each stream spec's `decode` setting (auto: inline for matching, a worker for
    /// bposd and relay-bp). The ready line says which each decoder uses (decode<ID>=…).
    #[arg(long, value_enum, value_name = "MODE")]
    pub decode: Option<DecodeArg>,
    /// cuqr: write every shot's "last syndrome → corrections ready" figure (ns, from the
    /// arrival of the datagram that completes the shot's syndromes to its corrections being
    /// ready) at shutdown: decoder_id,shot,last_syndrome_to_correction_ns (--hop-csv FILE also
    /// writes it beside, as FILE.shots.csv).
    #[arg(long, value_name = "FILE")]
    pub shot_csv: Option<PathBuf>,
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
    #[command(flatten)]
    pub admit: AdmitArgs,
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
    pub hop_csv: Option<PathBuf>,
    /// Hop probes: rounds recorded per session (allocated when a session starts).
    #[arg(long, default_value_t = 1_000_000)]
    pub hop_rounds: u64,
    /// Exit when the parent process exits (used when `backline bench` starts the server).
    #[arg(long, hide = true)]
    pub exit_with_parent: bool,
}

/// A server, validated: what [`backline::run`] and [`cuqr::run`] work from.
pub struct ServeConfig {
    /// The transport served.
    pub transport: TransportKind,
    /// Where: the shm segment's name, or the address to bind (udp, rdma).
    pub address: String,
    /// The functions served, by decoder id.
    pub table: ResponderTable,
    /// `--pin`: the serving threads' CPU, checked.
    pub pin: Option<usize>,
    /// Exit when the parent process exits.
    pub exit_with_parent: bool,
    /// Hop probes and where they go.
    pub hops: HopOutputs,
    /// The protocol, with its own settings.
    pub server: Server,
}

/// The protocol of a [`ServeConfig`] and what it alone needs.
pub enum Server {
    /// backline's slots over `transport`.
    Backline(BacklineSettings),
    /// CUQR frames over udp.
    Cuqr(CuqrSettings),
}

/// The CUQR server's settings.
pub struct CuqrSettings {
    /// Slots, queues, waits, probes, the counter check.
    pub options: CuqrOptions,
    /// `--ring ID=PORT`: NVIDIA's shape, one ring per decoder; `None`: one socket at the
    /// address for every decoder.
    pub rings: Option<Vec<RingSpec>>,
    /// `--shot-csv`: where the per-shot figures go at shutdown (checked writable first).
    pub shot_csv: Option<PathBuf>,
}

/// The backline protocol's settings.
pub struct BacklineSettings {
    /// The session settings (geometry, waits, pinning, rdma device).
    pub session: SessionConfig,
    /// How sessions are served.
    pub options: ServeOptions,
    /// Hold /dev/cpu_dma_latency at 0 while serving.
    pub hold_dma_latency: bool,
}

/// `--hop-stats` and `--hop-csv`: what happens to the hop probes at shutdown.
pub struct HopOutputs {
    /// Print each table on stderr.
    pub stats: bool,
    /// Write every row into this file (checked writable before serving).
    pub csv: Option<PathBuf>,
    /// `--hop-rounds`: rounds (frames) recorded per session when probes are on.
    pub rounds: u64,
}

/// Runs `backline serve`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = ServeConfig::from_args(&args)?;
    if config.exit_with_parent {
        backline_transport::os::exit_with_parent()?;
    }
    match &config.server {
        Server::Backline(settings) => backline::run(&config, settings),
        Server::Cuqr(settings) => cuqr::run(&config, settings),
    }
}

impl ServeConfig {
    /// Validates the flags: every error before the server starts (so before `ready`), every
    /// flag that does not apply a one-line note.
    pub fn from_args(a: &Args) -> anyhow::Result<ServeConfig> {
        let transport = match (a.transport, a.protocol) {
            (Some(t), _) => TransportKind::from(t),
            (None, Protocol::Cuqr) => TransportKind::Udp,
            (None, Protocol::Backline) => TransportKind::Shm,
        };
        if let Some(cpu) = a.pin {
            // Before `ready`: a CPU that does not exist is this server's error, said now.
            check_pin("--pin", "the serving threads' CPU", cpu)?;
        }
        let address = match transport {
            TransportKind::Shm => a.name.clone(),
            TransportKind::Udp | TransportKind::Rdma => a.bind.clone(),
            TransportKind::Memcpy => bail!(
                "memcpy keeps controller and coprocessor in one process: use `backline bench --transport memcpy`"
            ),
        };
        let fns = if a.fns.is_empty() {
            vec![(0, a.responder.clone())]
        } else {
            a.fns
                .iter()
                .map(|f| parse_fn(f))
                .collect::<anyhow::Result<Vec<_>>>()?
        };
        let table = table_of(&fns, &a.gpu.context()?)?;
        if a.protocol == Protocol::Cuqr && transport != TransportKind::Udp {
            bail!("--protocol cuqr runs over udp, not --transport {transport}");
        }
        if a.protocol == Protocol::Backline
            && (!a.rings.is_empty()
                || a.slot_size.is_some()
                || a.strict_counter
                || a.decode.is_some()
                || a.shot_csv.is_some())
        {
            bail!(
                "--ring, --slot-size, --strict-counter, --decode and --shot-csv are the cuqr \
                 server's: add --protocol cuqr"
            );
        }
        let hops = HopOutputs::from_args(a)?;
        let server = match a.protocol {
            Protocol::Backline => {
                Server::Backline(BacklineSettings::from_args(a, transport, &hops)?)
            }
            Protocol::Cuqr => Server::Cuqr(cuqr_settings(a, &hops, &table)?),
        };
        Ok(ServeConfig {
            transport,
            address,
            table,
            pin: a.pin,
            exit_with_parent: a.exit_with_parent,
            hops,
            server,
        })
    }
}

impl HopOutputs {
    /// The hop flags; `--hop-csv` is checked writable now, not after serving.
    fn from_args(a: &Args) -> anyhow::Result<HopOutputs> {
        if let Some(p) = &a.hop_csv {
            std::fs::File::create(p).with_context(|| format!("--hop-csv {}", p.display()))?;
        }
        Ok(HopOutputs {
            stats: a.hop_stats,
            csv: a.hop_csv.clone(),
            rounds: a.hop_rounds,
        })
    }

    /// Whether hops are recorded (`--hop-stats` or `--hop-csv`).
    pub fn on(&self) -> bool {
        self.stats || self.csv.is_some()
    }

    /// Rounds (frames) to record per session: 0 with probes off.
    pub fn probe_rounds(&self) -> u64 {
        if self.on() { self.rounds } else { 0 }
    }

    /// Prints `table` on stderr under `title`, with `--hop-stats`.
    pub fn print(&self, table: &backline_probe::Table, title: &str) {
        if self.stats {
            eprint!("{}", table.render(title));
        }
    }

    /// Writes `tables` (numbered) to `--hop-csv`, when given, and says so: the hops of
    /// `what` (`3 sessions`, `1000 frames`).
    pub fn save(&self, tables: &[(u64, &backline_probe::Table)], what: &str) -> anyhow::Result<()> {
        if let Some(p) = &self.csv {
            backline_probe::save_csv(tables, p)
                .with_context(|| format!("--hop-csv {}", p.display()))?;
            eprintln!(
                "backline serve: wrote the hops of {what} to {}",
                p.display()
            );
        }
        Ok(())
    }
}

impl BacklineSettings {
    /// The session, serving options and their checks: the slots, the memory of every
    /// session's hop stamps, and a note for a `--serve-threads` that cannot all be used.
    fn from_args(
        a: &Args,
        transport: TransportKind,
        hops: &HopOutputs,
    ) -> anyhow::Result<BacklineSettings> {
        let mut session = a.ring.config(transport, a.payload_bytes)?;
        session.pin_cpu = a.pin;
        session.rdma = a.rdma.options();
        session.key = a.admit.key(transport)?;
        if hops.on() {
            // Each session allocates its hop stamps when it starts: all of them must fit.
            let per_round = (backline_probe::HOPS * std::mem::size_of::<u64>()) as u64;
            backline_bench::memory::check_fits(
                "--hop-rounds",
                a.hop_rounds,
                per_round.saturating_mul(a.max_sessions),
            )
            .map_err(|e| anyhow::anyhow!("{e} (for --max-sessions {} sessions)", a.max_sessions))?;
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        if let Some(k) = a.serve_threads {
            if k > a.max_sessions {
                eprintln!(
                    "backline serve: --serve-threads {k} is more than --max-sessions {0}: {0} threads serve (no more sessions can run at once)",
                    a.max_sessions
                );
            } else if k > cpus {
                eprintln!(
                    "backline serve: --serve-threads {k}: {}",
                    backline_transport::server::oversubscription(
                        k as usize,
                        cpus as usize,
                        &session.wait
                    )
                );
            }
        } else if session.wait.spin == backline_transport::SpinBudget::NeverBlock
            && a.max_sessions > cpus
        {
            eprintln!(
                "backline serve: up to --max-sessions {} sessions, each on its own thread, never blocking \
                 (--spin-us -1) on {cpus} CPUs: more than {cpus} busy at once hold their CPUs until the \
                 scheduler takes them away; --serve-threads {cpus} polls them from one thread per CPU",
                a.max_sessions
            );
        }
        Ok(BacklineSettings {
            session,
            options: ServeOptions {
                total_sessions: a.sessions,
                max_sessions: a.max_sessions as usize,
                serve_threads: a.serve_threads.map(|k| k as usize),
                probe_rounds: hops.probe_rounds(),
                idle_timeout: Duration::from_secs(a.idle_timeout),
                ..ServeOptions::default()
            },
            hold_dma_latency: a.ring.hold_dma_latency,
        })
    }
}

/// The CUQR server's settings: one datagram per slot of `--slot-size` (default 256, a power
/// of two), `--num-slots` per decoder queue, the rings of `--ring`; a note for the flags of
/// the backline protocol's sessions, which do not apply.
fn cuqr_settings(
    a: &Args,
    hops: &HopOutputs,
    table: &ResponderTable,
) -> anyhow::Result<CuqrSettings> {
    // An explicit --token-file is refused; BACKLINE_TOKEN_FILE alone is for the backline
    // protocol's servers and is passed over.
    if a.admit.token_file.is_some() && super::origin::given("token_file") {
        bail!(
            "--token-file admits backline controllers; NVIDIA's realtime clients carry no key, \
             so the cuqr server serves whoever reaches it (keep it on loopback or a closed network)"
        );
    }
    if a.sessions.is_some() || a.serve_threads.is_some() {
        eprintln!(
            "backline serve: --sessions and --serve-threads apply to the backline protocol; \
             the cuqr server serves each ring on one thread"
        );
    }
    let slot_bytes = match (a.slot_size, a.ring.slot_bytes) {
        (Some(x), Some(y)) if x != y => {
            bail!("--slot-size {x} and --slot-bytes {y} name the same slot: give one")
        }
        (x, y) => x
            .or(y)
            .map_or(backline_wire::cuqr::DEFAULT_SLOT_BYTES, |s| s as usize),
    };
    backline_responder::cuqr::check_slot_bytes(slot_bytes)
        .map_err(|e| anyhow::anyhow!("--slot-size: {e}"))?;
    if let Some(p) = &a.shot_csv {
        std::fs::File::create(p).with_context(|| format!("--shot-csv {}", p.display()))?;
    }
    let shot_csv = a.shot_csv.clone();
    let rings = if a.rings.is_empty() {
        None
    } else {
        Some(ring_specs(&a.rings, &a.bind, table)?)
    };
    Ok(CuqrSettings {
        options: CuqrOptions {
            slot_bytes,
            num_slots: a.num_slots as usize,
            wait: a.ring.wait()?,
            probe_frames: hops.probe_rounds(),
            strict_counter: a.strict_counter,
            decode: a.decode.map(|d| match d {
                DecodeArg::Inline => backline_responder::stream::DecodeMode::Inline,
                DecodeArg::Worker => backline_responder::stream::DecodeMode::Worker,
            }),
            ..CuqrOptions::default()
        },
        rings,
        shot_csv,
    })
}

/// `--ring ID=PORT …` as rings at `--bind`'s host: one per decoder, every decoder of the
/// table with one, no port (but 0) twice.
fn ring_specs(
    rings: &[String],
    bind: &str,
    table: &ResponderTable,
) -> anyhow::Result<Vec<RingSpec>> {
    let host = bind.rsplit_once(':').map_or(bind, |(h, _)| h);
    let mut out: Vec<(u32, u16)> = Vec::new();
    for r in rings {
        let parsed = r
            .split_once('=')
            .and_then(|(id, port)| Some((id.trim().parse().ok()?, port.trim().parse().ok()?)));
        let Some((id, port)) = parsed else {
            bail!("--ring {r}: expected ID=PORT, a decoder id and a UDP port (0: any free one)");
        };
        if out.iter().any(|o| o.0 == id) {
            bail!("--ring {r}: decoder {id} has a ring already");
        }
        if port != 0 && out.iter().any(|o| o.1 == port) {
            bail!("--ring {r}: port {port} is another decoder's ring");
        }
        if !table.entries().any(|(i, _)| i == id) {
            bail!("--ring {r}: no decoder {id} to serve (give --fn {id}=stream:FILE.dem…)");
        }
        out.push((id, port));
    }
    if let Some((id, _)) = table
        .entries()
        .find(|(i, _)| !out.iter().any(|o| o.0 == *i))
    {
        bail!("decoder {id} has no --ring: with --ring, give every decoder one ({id}=PORT)");
    }
    Ok(out
        .into_iter()
        .map(|(id, port)| RingSpec {
            address: format!("{host}:{port}"),
            decoders: vec![id],
        })
        .collect())
}

/// A server's life from just before it starts: SIGINT and SIGTERM set a flag (installed
/// first, so that a signal during the start ends the wait, not the process), the `ready` line
/// and the description once it accepts, and the wait for a signal or its own end.
pub struct Serving {
    term: Arc<AtomicBool>,
}

impl Serving {
    /// Installs the signal handlers.
    pub fn start() -> anyhow::Result<Serving> {
        let term = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, term.clone()).context("installing signal handlers")?;
        }
        Ok(Serving { term })
    }

    /// Says the server accepts: `ready PEER` on stdout (what a controller passes as
    /// `--peer`), `line` on stderr, and a warning when its address `shown` is not loopback
    /// (`who` on other hosts can reach it).
    pub fn announce(&self, peer: &str, line: &str, shown: &str, reach: Reach, who: &str) {
        println!("ready {peer}");
        eprintln!("backline serve: {line}; Ctrl-C to stop");
        match reach {
            Reach::Loopback => {}
            Reach::Keyed => eprintln!(
                "backline serve: {shown} is not loopback: {who} on other hosts can reach it, \
                 and only those proving the key of --token-file are answered"
            ),
            Reach::Open { keyable: true } => eprintln!(
                "backline serve: {shown} is not loopback: {who} on other hosts can reach it \
                 (--token-file answers only those holding a pre-shared key)"
            ),
            Reach::Open { keyable: false } => {
                eprintln!(
                    "backline serve: {shown} is not loopback: {who} on other hosts can reach it"
                )
            }
        }
    }

    /// Waits until a signal arrives or `finished()` says the server ended by itself.
    pub fn wait(&self, finished: impl Fn() -> bool) {
        // Relaxed: a flag set by the signal handler, carrying no data.
        while !self.term.load(Ordering::Relaxed) && !finished() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Who can reach a server, for its announcement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Its own host only (loopback, shared memory).
    Loopback,
    /// Other hosts, answered only when they prove the key.
    Keyed,
    /// Other hosts, all answered; `keyable`: `--token-file` would apply.
    Open { keyable: bool },
}

impl Reach {
    /// The reach of a server bound at `bound`.
    pub fn of(bound: &str, keyed: bool, keyable: bool) -> Reach {
        let loopback =
            bound.contains("127.0.0.1") || bound.contains("[::1]") || bound.starts_with("shm:");
        match (loopback, keyed) {
            (true, _) => Reach::Loopback,
            (false, true) => Reach::Keyed,
            (false, false) => Reach::Open { keyable },
        }
    }
}

/// The functions of `table` as `ID=NAME ID=NAME …`.
fn function_list(table: &ResponderTable) -> String {
    let list: Vec<String> = table
        .entries()
        .map(|(id, r)| format!("{id}={}", r.name()))
        .collect();
    list.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum as _;

    #[test]
    fn serve_transports_are_spelled_as_the_transports_name_themselves() {
        for t in ServeTransport::value_variants() {
            let name = t.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(name, TransportKind::from(*t).name());
        }
        assert_eq!(
            ServeTransport::value_variants().len(),
            TransportKind::ALL.len()
        );
    }
}
