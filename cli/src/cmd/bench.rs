//! `backline bench`: sw-loop rounds over a placement, with the transport's bare floor measured
//! in the same run, reported as a table (or one JSON object), CSV traces and SVG and PNG plots. A
//! `stream:` responder is driven shot by shot instead ([`super::bench_stream`]): two runs, the
//! enqueue round trips and the final `get_corrections` of each shot, over a backline transport
//! or, with `--protocol cuqr`, as CUQR frames over UDP.
//!
//! This file is the parsing and the wiring: the flags ([`Args`]) become a validated
//! [`BenchConfig`] (every contradiction an error, every flag that does not apply a warning),
//! and the run ([`session`]) and its report ([`report`]) work from that alone.

mod fanout;
mod report;
mod server;
mod session;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use backline_bench::progress::Show;
use backline_bench::swloop::Requests;
use backline_bench::{Outputs, RunName};
use backline_pacer::{PacerConfig, REFERENCE_SEED};
use backline_responder::SpecContext;
use backline_transport::{SessionConfig, TransportKind};

use super::bench_stream::{StreamPlan, is_stream};
use super::common::{
    AdmitArgs, GpuArgs, Protocol, RdmaArgs, RingArgs, builtin_name, check_pin, is_gpu,
    load_responder, timeout_flag, warn_ignored,
};
use super::hops::HopArgs;

/// Flags of `backline bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The fabric: memcpy (threads in this process), shm (a server process over shared
    /// memory), udp (a server over UDP) or rdma (a server over RDMA WRITEs; see --device,
    /// --gid-index) [default: memcpy; udp with --protocol cuqr].
    #[arg(long)]
    pub transport: Option<String>,
    /// The protocol: backline (its slots, over --transport) or cuqr (NVIDIA's realtime RPC
    /// frames over udp, to a server of stream: decoders: the `backline serve --protocol cuqr`
    /// this bench starts, or another at --peer; --slot-bytes sets the slot, default 256).
    #[arg(long, value_enum, default_value = "backline")]
    pub protocol: Protocol,
    /// The coprocessor function: echo, steane, bposd:CODE[:SETTINGS] (BP+OSD from a CSS
    /// code's Tanner graph, e.g. bposd:hgp13:max_iter=10), stream:FILE.dem[:DECODER[:SETTINGS]]
    /// (a streaming decoder, driven with shots sampled from the model: see --shots),
    /// LIB:SYMBOL (a C function in a shared library), or on a GPU: gpu:echo, gpu:steane,
    /// gpu:bposd:CODE[:SETTINGS], gpu:FILE.cu:FUNCTION (a device function compiled into the
    /// persistent kernel).
    #[arg(long, default_value = "steane")]
    pub responder: String,
    /// Run several responders side by side, e.g. echo,steane (one session each; decoder ids
    /// 0, 1, … in this order, two for a bposd: function).
    #[arg(long, value_delimiter = ',', conflicts_with = "responder")]
    pub compare: Vec<String>,
    /// Rounds per responder, round 0 included (stream: responders run --shots instead).
    #[arg(long, default_value_t = 1_000_000)]
    pub rounds: u64,
    /// stream: responders: shots sampled from the model's mechanisms (from --seed), each
    /// streamed round by round, then its corrections asked for.
    #[arg(long, default_value_t = 10_000)]
    pub shots: u64,
    /// stream: responders: decode the same shots with the whole-history decoder too (after the
    /// run, on every core) and print both logical error rates.
    #[arg(long)]
    pub whole_history: bool,
    /// stream: responders: the cadence of the rounds, open loop: round k of a shot is due k·N
    /// ns after the shot's start, sent at its due time (the client spins) or at once when the
    /// reply before it landed later (a late round: the backlog is reported). 0: back to back,
    /// each round as soon as the reply before it lands. At most 1000000000 (1 s).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub round_interval_ns: u64,
    /// stream: responders: the first W shots are streamed but left out of the streaming tail
    /// and the pacing counts; less than --shots [default: 20, or half of --shots below 40].
    #[arg(long, value_name = "W")]
    pub warmup_shots: Option<u64>,
    /// b2b (next round as soon as the last reply lands) or random-delayed (the pacer).
    #[arg(long, default_value = "b2b")]
    pub cadence: String,
    /// Pacer: fixed part of each quiet interval, in clock cycles (random-delayed).
    #[arg(long, value_parser = backline_pacer::parse_setting)]
    pub freq: Option<u32>,
    /// Pacer: mask of the random part, 2^N-1, decimal or 0x… (random-delayed).
    #[arg(long, value_parser = backline_pacer::parse_setting)]
    pub span: Option<u32>,
    /// Pacer: LFSR seed (non-zero).
    #[arg(long, value_parser = backline_pacer::parse_setting, default_value_t = REFERENCE_SEED)]
    pub seed: u32,
    /// Pacer clock in MHz (the FPGA engine's is 200).
    #[arg(long, default_value_t = 200.0)]
    pub clock_mhz: f64,
    /// Request payload bytes [default: 8]. A bposd: responder's requests are its syndromes,
    /// sized by its code (⌈checks/8⌉ bytes); give this only to check that size.
    #[arg(long)]
    pub payload_bytes: Option<usize>,
    /// bposd: responders: the rate of the sampled errors whose syndromes are sent (default:
    /// the decoder's error_rate). The errors are drawn from --seed.
    #[arg(long, value_name = "P")]
    pub error_rate: Option<f64>,
    /// Rounds in flight (≤ ring depth).
    #[arg(long, default_value_t = 1)]
    pub in_flight: u32,
    #[command(flatten)]
    pub ring: RingArgs,
    #[command(flatten)]
    pub rdma: RdmaArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
    #[command(flatten)]
    pub admit: AdmitArgs,
    /// shm: the segment name of a running `backline serve`; udp: its host:port; rdma: the
    /// host:port of its set-up listener. Without it, bench starts its own server process.
    #[arg(long)]
    pub peer: Option<String>,
    /// Fan-out rounds to several running coprocessors: each round posted to all, then
    /// collected from all, against each alone in the same run. A peer is TRANSPORT:ADDRESS
    /// (shm:NAME, udp:HOST:PORT, rdma:HOST:PORT) or an address of --transport.
    #[arg(long, value_delimiter = ',', value_name = "A,B,…", conflicts_with_all = ["peer", "compare"])]
    pub peers: Vec<String>,
    /// Decoder id of the requests when --peer serves a single function [default: 0].
    #[arg(long)]
    pub decoder_id: Option<u32>,
    /// --protocol cuqr: the counter of each enqueue_syndromes: zero (NVIDIA's default) or
    /// shot-round ((shot << 16) | round, NVIDIA's producer's convention) [default: zero].
    #[arg(long, value_enum)]
    pub counter: Option<CounterArg>,
    /// Longest wait for one reply, in ms (1 ..= 3600000), before the run stops with a timeout.
    #[arg(long, default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Pin the controller and responder threads: CTRL,RESP (CPU numbers).
    #[arg(long, value_delimiter = ',', value_name = "CTRL,RESP")]
    pub pin: Vec<usize>,
    /// Skip the same-run floor measurement.
    #[arg(long)]
    pub no_baseline: bool,
    /// Print exactly one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Directory for CSV traces and plots [default: backline-out]. Not created when nothing
    /// goes into it (--csv PATH with --no-plots: the floor's trace is then not written).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// CSV trace path (single responder only); default OUT_DIR/bench-TRANSPORT-RESPONDER.csv.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Do not draw plots (SVG and PNG).
    #[arg(long)]
    pub no_plots: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Progress on stderr even when it is not a terminal (a line every 10 s); by default
    /// only a terminal shows it.
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
    /// Hop probes: per-hop median/P99/P99.9 of every run (the coprocessor's hops too when it
    /// runs in this process or in a `backline serve` this bench starts).
    #[arg(long)]
    pub hop_stats: bool,
    /// Hop probes: one row per round and run (timestamps per hop) into FILE.
    #[arg(long, value_name = "FILE")]
    pub hop_csv: Option<PathBuf>,
}

/// `--counter`: the counter convention of a CUQR client. (Plain comments on the variants:
/// clap lists the values in one line.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CounterArg {
    // 0 on every round.
    Zero,
    // (shot << 16) | round.
    ShotRound,
}

/// A bench, validated: what [`session::run`] and [`report`] work from.
pub struct BenchConfig {
    /// The fabric.
    pub transport: TransportKind,
    /// `--protocol cuqr`: CUQR frames over UDP.
    pub cuqr: bool,
    /// The counter of a CUQR client's enqueues.
    pub counter: backline_bench::stream::Counter,
    /// The responders, in run order.
    pub responders: Vec<String>,
    /// The streaming plan of each `stream:` responder.
    pub plans: Vec<Option<StreamPlan>>,
    /// Each responder's requests and their payload length.
    pub requests: Vec<(Requests, usize)>,
    /// The cadence.
    pub pacer: PacerConfig,
    /// The pacer clock, MHz.
    pub clock_mhz: f64,
    /// Rounds per responder.
    pub rounds: u64,
    /// Shots per `stream:` responder.
    pub shots: u64,
    /// Whole-history decoding after streaming runs.
    pub whole_history: bool,
    /// `--round-interval-ns`: the cadence of a stream's rounds (0: back to back).
    pub round_interval_ns: u64,
    /// `--warmup-shots`, resolved: the shots left out of the streaming tail.
    pub warmup_shots: u64,
    /// The seed of the pacer and of sampled errors.
    pub seed: u32,
    /// Round trips of each floor half.
    pub floor_rounds: u64,
    /// `--payload-bytes`, when given.
    pub payload_bytes: Option<usize>,
    /// The session settings of every run.
    pub session: SessionConfig,
    /// `--pin CTRL,RESP`.
    pub pin: Option<(usize, usize)>,
    /// A running server to use instead of one this bench starts.
    pub peer: Option<String>,
    /// `--peers`: the coprocessors of fan-out rounds (empty: the usual run).
    pub peers: Vec<(TransportKind, String)>,
    /// Decoder id of the requests to a single-function `--peer`.
    pub decoder_id: u32,
    /// Whether the floor is measured.
    pub baseline: bool,
    /// The floor is a GPU kernel's (memcpy with gpu: responders).
    pub gpu_floor: bool,
    /// The floor's label.
    pub floor_label: &'static str,
    /// Where gpu: functions run.
    pub ctx: SpecContext,
    /// Hop probes.
    pub hops: HopArgs,
    /// Where a server this bench starts leaves its hop stamps.
    pub server_hops: Option<PathBuf>,
    /// Every output file, checked.
    pub outputs: Outputs,
    /// One JSON object instead of the table.
    pub json: bool,
    /// No progress or notes on stderr.
    pub quiet: bool,
    /// When progress is shown.
    pub progress: Show,
    /// The ring flags again (for a server this bench starts).
    pub ring: RingArgs,
    /// The rdma flags again.
    pub rdma: RdmaArgs,
    /// The gpu flags again.
    pub gpu: GpuArgs,
    /// The token file again (for a server this bench starts).
    pub admit: AdmitArgs,
}

/// Runs `backline bench`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let config = BenchConfig::from_args(a)?;
    session::run(&config)
}

impl BenchConfig {
    /// Validates the flags: every contradiction is an error naming its flags, every flag that
    /// does not apply a one-line warning; every output path is checked writable.
    pub fn from_args(a: Args) -> anyhow::Result<BenchConfig> {
        let (transport, cuqr) = transport_of(&a)?;
        let peers = peers_of(&a, transport, cuqr)?;
        let pacer = pacer_config(&a)?;
        check_counts(&a)?;
        let responders = if a.compare.is_empty() {
            vec![a.responder.clone()]
        } else {
            a.compare.clone()
        };
        // Streaming decoders: their models, read now (a bad spec is ours, not the server's).
        let plans: Vec<Option<StreamPlan>> = responders
            .iter()
            .map(|r| is_stream(r).then(|| StreamPlan::new(r)).transpose())
            .collect::<anyhow::Result<_>>()?;
        check_streams(&a, cuqr, &pacer, &responders, &plans)?;
        check_placement(&a, transport)?;
        let pin = pins(&a)?;
        let requests = requests_of(&a, &responders, &plans)?;
        let session = session_config(&a, transport, cuqr, &requests)?;
        warn_inapplicable(&a, transport);
        let gpu_floor = check_gpu_floor(&a, transport, &responders)?;
        let floor_label = floor_label(transport, cuqr, gpu_floor);
        // Every output is named and proved writable before the first round.
        let outputs = plan_outputs(&a, transport, &responders, &plans, floor_label);
        outputs.check()?;
        let ctx = a.gpu.context()?;
        let hops = hop_args(&a)?;
        load_responders(&a, transport, &responders, &ctx)?;
        Ok(BenchConfig {
            floor_rounds: floor_rounds(&a, &plans),
            server_hops: (hops.on() && transport != TransportKind::Memcpy && a.peer.is_none())
                .then(|| {
                    std::env::temp_dir().join(format!("backline-hops-{}.csv", std::process::id()))
                }),
            transport,
            cuqr,
            counter: match a.counter {
                Some(CounterArg::ShotRound) => backline_bench::stream::Counter::ShotRound,
                _ => backline_bench::stream::Counter::Zero,
            },
            responders,
            plans,
            requests,
            pacer,
            clock_mhz: a.clock_mhz,
            rounds: a.rounds,
            shots: a.shots,
            whole_history: a.whole_history,
            round_interval_ns: a.round_interval_ns,
            warmup_shots: warmup_of(&a),
            seed: a.seed,
            payload_bytes: a.payload_bytes,
            session,
            pin,
            decoder_id: a.decoder_id.unwrap_or(0),
            peer: a.peer,
            peers,
            baseline: !a.no_baseline,
            gpu_floor,
            floor_label,
            ctx,
            hops,
            outputs,
            json: a.json,
            quiet: a.quiet,
            progress: match (a.quiet || a.json, a.progress) {
                (true, _) => Show::Never,
                (false, true) => Show::Always,
                (false, false) => Show::Terminal,
            },
            ring: a.ring,
            rdma: a.rdma,
            gpu: a.gpu,
            admit: a.admit,
        })
    }

    /// The protocol's name.
    pub fn protocol(&self) -> &'static str {
        if self.cuqr { "cuqr" } else { "backline" }
    }
}

/// The transport, and whether the protocol is cuqr.
fn transport_of(a: &Args) -> anyhow::Result<(TransportKind, bool)> {
    let cuqr = a.protocol == Protocol::Cuqr;
    let t = match (cuqr, a.transport.as_deref()) {
        (true, None | Some("udp")) => TransportKind::Udp,
        (true, Some(t)) => bail!("--protocol cuqr runs over udp, not --transport {t}"),
        (false, t) => t.unwrap_or("memcpy").parse()?,
    };
    Ok((t, cuqr))
}

/// `--peers`: two or more distinct coprocessors, of the backline protocol.
fn peers_of(
    a: &Args,
    transport: TransportKind,
    cuqr: bool,
) -> anyhow::Result<Vec<(TransportKind, String)>> {
    if a.peers.is_empty() {
        return Ok(Vec::new());
    }
    if cuqr {
        bail!("--peers runs backline rounds; --protocol cuqr has its own client");
    }
    if a.peers.len() < 2 {
        bail!("--peers names one coprocessor: fan-out rounds need two or more (--peer for one)");
    }
    let mut peers: Vec<(TransportKind, String)> = Vec::new();
    for p in &a.peers {
        let peer = fanout::parse_peer(p, transport)?;
        if peers.contains(&peer) {
            bail!("--peers names {}:{} twice", peer.0, peer.1);
        }
        peers.push(peer);
    }
    Ok(peers)
}

/// `--rounds`: at least 2, and every round's records fit in memory.
fn check_counts(a: &Args) -> anyhow::Result<()> {
    if a.rounds < 2 {
        bail!("--rounds must be at least 2 (round 0 is reported apart)");
    }
    // Every round's time is kept (trace row, floor sample), and its hop stamps with probes.
    let per_round = std::mem::size_of::<backline_bench::TraceRow>()
        + std::mem::size_of::<f64>()
        + if a.hop_stats || a.hop_csv.is_some() {
            backline_probe::HOPS * std::mem::size_of::<u64>()
        } else {
            0
        };
    backline_bench::memory::check_fits("--rounds", a.rounds, per_round as u64)
        .map_err(anyhow::Error::msg)
}

/// What `stream:` responders and `--protocol cuqr` allow.
fn check_streams(
    a: &Args,
    cuqr: bool,
    pacer: &PacerConfig,
    responders: &[String],
    plans: &[Option<StreamPlan>],
) -> anyhow::Result<()> {
    let streams = plans.iter().filter(|p| p.is_some()).count();
    if a.round_interval_ns > MAX_ROUND_INTERVAL_NS {
        bail!(
            "--round-interval-ns {}: at most {MAX_ROUND_INTERVAL_NS} (one round a second); 0 sends \
             rounds back to back",
            a.round_interval_ns
        );
    }
    if a.counter.is_some() && !cuqr {
        bail!("--counter is the counter of CUQR frames: add --protocol cuqr");
    }
    if cuqr && streams < responders.len() {
        bail!(
            "--protocol cuqr carries the calls of streaming decoders: every responder must be a \
             stream:FILE.dem… spec"
        );
    }
    if streams == 0 {
        if a.round_interval_ns > 0 {
            warn_ignored(
                "--round-interval-ns",
                "paces the rounds of stream: responders",
            );
        }
        if a.warmup_shots.is_some() {
            warn_ignored("--warmup-shots", "applies to stream: responders");
        }
        return Ok(());
    }
    if a.csv.is_some() {
        bail!(
            "--csv names one file, but a stream: run writes two traces (enqueue, get_corrections): use --out-dir"
        );
    }
    if a.shots < 2 {
        bail!("--shots must be at least 2 (the first call is reported apart)");
    }
    if a.in_flight != 1 {
        bail!("a stream: responder takes one call at a time: leave --in-flight at 1");
    }
    if !pacer.is_b2b() {
        bail!(
            "stream: responders run b2b (every call as soon as the last reply lands); pace their \
             rounds with --round-interval-ns"
        );
    }
    if let Some(w) = a.warmup_shots
        && w >= a.shots
    {
        bail!(
            "--warmup-shots {w} leaves no shot to measure: it must be less than --shots {}",
            a.shots
        );
    }
    // The cadence alone takes shots × rounds × N: a day at most.
    let rounds = plans.iter().flatten().map(|p| p.rounds as u64).max();
    let paced_ns = u128::from(a.shots)
        * u128::from(rounds.unwrap_or(0))
        * u128::from(a.round_interval_ns)
        * streams as u128;
    if paced_ns > MAX_PACED_NS {
        bail!(
            "--round-interval-ns {} paces {} shots of {} rounds over at least {:.0} h: more than \
             {} h; lower --shots or the interval",
            a.round_interval_ns,
            a.shots,
            rounds.unwrap_or(0),
            paced_ns as f64 / 3.6e12,
            MAX_PACED_NS / 3_600_000_000_000
        );
    }
    Ok(())
}

/// The slowest cadence `--round-interval-ns` takes: one round a second.
const MAX_ROUND_INTERVAL_NS: u64 = 1_000_000_000;
/// The longest a cadence may stretch a bench (its rounds' due times alone): 24 h.
const MAX_PACED_NS: u128 = 24 * 3_600_000_000_000;
/// `--warmup-shots` when not given (or half of `--shots`, when smaller).
const DEFAULT_WARMUP_SHOTS: u64 = 20;

/// `--warmup-shots`, resolved (checked against `--shots` in [`check_streams`]).
fn warmup_of(a: &Args) -> u64 {
    a.warmup_shots
        .unwrap_or(DEFAULT_WARMUP_SHOTS.min(a.shots / 2))
}

/// What a floor half measures: as many round trips as the runs make.
fn floor_rounds(a: &Args, plans: &[Option<StreamPlan>]) -> u64 {
    plans
        .iter()
        .map(|p| p.as_ref().map_or(a.rounds, |p| p.calls(a.shots)))
        .max()
        .unwrap_or(a.rounds)
}

/// `--csv` with `--compare`, `--peer` with memcpy, `--ring-depth` and `--in-flight`.
fn check_placement(a: &Args, transport: TransportKind) -> anyhow::Result<()> {
    let several = a.compare.len() > 1;
    if several && a.csv.is_some() {
        bail!("--csv names one file, but --compare runs several responders: use --out-dir");
    }
    if a.peer.is_some() && transport == TransportKind::Memcpy {
        bail!("--peer names a server process, but memcpy runs the coprocessor in this process");
    }
    a.ring.check_depth()?;
    if a.in_flight == 0 || a.in_flight > a.ring.ring_depth {
        bail!(
            "--in-flight {} must be between 1 and --ring-depth {}",
            a.in_flight,
            a.ring.ring_depth
        );
    }
    timeout_flag("--timeout-ms", a.timeout_ms)?;
    Ok(())
}

/// `--pin CTRL,RESP`, both CPUs checked now: a responder's CPU that does not exist is a --pin
/// error, not a timeout or a server that did not start.
fn pins(a: &Args) -> anyhow::Result<Option<(usize, usize)>> {
    let (c, r) = match a.pin[..] {
        [c, r] => (c, r),
        [] => return Ok(None),
        _ => bail!("--pin takes two CPU numbers, CTRL,RESP (e.g. --pin 0,1)"),
    };
    check_pin("--pin CTRL,RESP", "the controller's CPU", c)?;
    if a.peer.is_none() {
        check_pin("--pin CTRL,RESP", "the responder's CPU", r)?;
    }
    Ok(Some((c, r)))
}

/// Whether the floor is a GPU kernel's; CPU and GPU responders do not share one.
fn check_gpu_floor(
    a: &Args,
    transport: TransportKind,
    responders: &[String],
) -> anyhow::Result<bool> {
    let gpu_runs = responders.iter().filter(|r| is_gpu(r)).count();
    let gpu_floor = transport == TransportKind::Memcpy && gpu_runs > 0;
    if gpu_floor && gpu_runs < responders.len() && !a.no_baseline {
        bail!(
            "--compare mixes CPU and GPU responders over memcpy, whose floors differ (a cache \
             line between two threads, a kernel polling mapped memory): run them separately, or \
             add --no-baseline"
        );
    }
    Ok(gpu_floor)
}

/// What the floor of a transport measures.
fn floor_label(transport: TransportKind, cuqr: bool, gpu_floor: bool) -> &'static str {
    match transport {
        _ if cuqr => "floor (cuqr invalid-decoder reply)",
        TransportKind::Memcpy if gpu_floor => "floor (gpu kernel)",
        TransportKind::Udp => "floor (raw udp)",
        TransportKind::Rdma => "floor (rdma write)",
        _ => "floor (cache line)",
    }
}

/// The hop flags; `--hop-csv` is checked writable now, not after the run.
fn hop_args(a: &Args) -> anyhow::Result<HopArgs> {
    if let Some(p) = &a.hop_csv {
        std::fs::File::create(p).with_context(|| format!("--hop-csv {}", p.display()))?;
    }
    Ok(HopArgs {
        stats: a.hop_stats,
        csv: a.hop_csv.clone(),
    })
}

/// Loads the responders here first: a bad spec is our error, not the server's. (With --peer
/// a GPU function runs on the peer's machine, not here; memcpy builds its table later.)
fn load_responders(
    a: &Args,
    transport: TransportKind,
    responders: &[String],
    ctx: &SpecContext,
) -> anyhow::Result<()> {
    if transport != TransportKind::Memcpy {
        for r in responders.iter().filter(|r| a.peer.is_none() || !is_gpu(r)) {
            load_responder(r, ctx)?;
        }
    }
    Ok(())
}

/// The session settings: slots that carry every request and every syndrome-sized reply.
fn session_config(
    a: &Args,
    transport: TransportKind,
    cuqr: bool,
    requests: &[(Requests, usize)],
) -> anyhow::Result<SessionConfig> {
    let slot_payload = requests
        .iter()
        .map(|(r, bytes)| (*bytes).max(r.reply_bytes().unwrap_or(0)))
        .max()
        .unwrap_or(8);
    let mut config = if cuqr {
        // One datagram per CUQR slot (default 256 bytes).
        let mut ring = a.ring.clone();
        ring.slot_bytes = Some(
            ring.slot_bytes
                .unwrap_or(backline_wire::cuqr::DEFAULT_SLOT_BYTES as u32),
        );
        ring.config(transport, 0)?
    } else {
        a.ring.config(transport, slot_payload)?
    };
    config.in_flight = a.in_flight;
    config.reply_timeout = timeout_flag("--timeout-ms", a.timeout_ms)?;
    config.pin_cpu = a.pin.get(1).copied();
    config.rdma = a.rdma.options();
    if cuqr {
        if a.admit.token_file.is_some() && super::origin::given("token_file") {
            bail!("--token-file admits backline controllers; the cuqr protocol carries no key");
        }
    } else if a.peers.is_empty() {
        config.key = a.admit.key(transport)?;
    } else {
        // Fan-out: the key goes to every udp and rdma coprocessor (shm ones ignore it).
        config.key = a.admit.key(TransportKind::Udp)?;
    }
    Ok(config)
}

/// Each responder's requests and their payload length: syndromes sized by the code for
/// `bposd:` responders (an explicit --payload-bytes must agree), counters of --payload-bytes
/// (default 8) otherwise.
fn requests_of(
    a: &Args,
    responders: &[String],
    plans: &[Option<StreamPlan>],
) -> anyhow::Result<Vec<(Requests, usize)>> {
    if let Some(p) = a.error_rate
        && !(0.0..=1.0).contains(&p)
    {
        bail!("--error-rate {p} is outside [0, 1]");
    }
    let mut out = Vec::with_capacity(responders.len());
    for (spec, plan) in responders.iter().zip(plans) {
        if let Some(p) = plan {
            // The slot carries the widest round's enqueue and the corrections.
            let need = p.request_bytes.max(p.reply_bytes);
            if let Some(given) = a.payload_bytes
                && given < need
            {
                bail!(
                    "--payload-bytes {given}: {} needs {need} bytes (an enqueue of its widest \
                     round of {} detectors); leave --payload-bytes out",
                    backline_decoders::io::excerpt(spec),
                    p.widest_round
                );
            }
            out.push((Requests::Counters { check_as: None }, need));
            continue;
        }
        // Requests go to a bposd: function's first id (its X checks), or to --decoder-id on a
        // --peer (odd: the Z checks).
        let half = if a.peer.is_some() {
            a.decoder_id.unwrap_or(0)
        } else {
            0
        };
        let r = Requests::for_spec(
            spec,
            half,
            a.error_rate,
            u64::from(a.seed),
            a.in_flight as usize,
            builtin_name(spec).map(str::to_string),
        )
        .with_context(|| format!("responder `{}`", backline_decoders::io::excerpt(spec)))?;
        let bytes = match (r.request_bytes(), a.payload_bytes) {
            (Some(need), Some(given)) if need != given => bail!(
                "--payload-bytes {given}: {} takes {need}-byte syndromes (its checks, \
                 bit-packed); leave --payload-bytes out",
                backline_decoders::io::excerpt(spec)
            ),
            (Some(need), _) => need,
            (None, given) => given.unwrap_or(8),
        };
        out.push((r, bytes));
    }
    Ok(out)
}

fn pacer_config(a: &Args) -> anyhow::Result<PacerConfig> {
    let cadence: backline_pacer::Cadence = a.cadence.parse().map_err(|_| {
        anyhow::anyhow!(
            "unknown cadence `{}` (expected b2b or random-delayed)",
            a.cadence
        )
    })?;
    // Defaults for a host run: 10 µs + up to 82 µs at 200 MHz. The reference board used
    // --freq 1000000 --span 0x0FFFFFFF (5 ms … 1.35 s).
    let cfg = cadence
        .config(a.freq, a.span, a.seed, (2_000, 0x3FFF))
        .map_err(|e| super::common::pacer_error(e, a.seed))?;
    if !(a.clock_mhz > 0.0 && a.clock_mhz.is_finite()) {
        bail!("--clock-mhz must be a positive number");
    }
    Ok(cfg)
}

/// Warns (one line each) about flags that do not apply to this run.
fn warn_inapplicable(a: &Args, transport: TransportKind) {
    a.rdma.warn_unless_rdma(transport);
    if a.decoder_id.is_some() && a.peer.is_none() {
        warn_ignored(
            "--decoder-id",
            "applies with --peer (a bench's own server numbers its functions 0, 1, …)",
        );
    }
}

/// Names every file of the run (the runs in order, then the floor) in `--out-dir`, which is
/// used when a trace has no `--csv` path, when plots are drawn, or when it is given.
fn plan_outputs(
    a: &Args,
    transport: TransportKind,
    responders: &[String],
    plans: &[Option<StreamPlan>],
    floor_label: &str,
) -> Outputs {
    let mut names = Vec::new();
    for (spec, plan) in responders.iter().zip(plans) {
        match plan {
            Some(p) => {
                for what in ["enqueue", "get_corrections"] {
                    let label = format!("{} {what}", p.label);
                    names.push(RunName {
                        label,
                        csv: None,
                        stem: None,
                    });
                }
            }
            None => names.push(RunName {
                label: spec.clone(),
                csv: a.csv.clone(),
                stem: None,
            }),
        }
    }
    if !a.no_baseline {
        names.push(RunName {
            label: floor_label.to_string(),
            csv: None,
            stem: Some("floor".into()),
        });
    }
    let needs_dir = a.out_dir.is_some() || !a.no_plots || a.csv.is_none();
    let dir = needs_dir.then(|| {
        a.out_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("backline-out"))
    });
    Outputs::plan(dir, &format!("bench-{transport}"), !a.no_plots, &names)
}
