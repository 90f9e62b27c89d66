//! `backline bench`: sw-loop rounds over a placement, with the transport's bare floor measured
//! in the same run, reported as a table (or one JSON object), CSV traces and PNG plots. A
//! `stream:` responder is driven shot by shot instead ([`super::bench_stream`]): two runs, the
//! enqueue round trips and the final `get_corrections` of each shot, over a backline transport
//! or, with `--protocol cuqr`, as CUQR frames over UDP.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use backline_bench::exit::ChecksFailed;
use backline_bench::report::JsonStats;
use backline_bench::swloop::{self, Requests, SwLoop};
use backline_bench::trace::{Clock, RoundStatus, Trace, TraceRow};
use backline_bench::{JsonReport, Outputs, RunName, Summary, Table};
use backline_pacer::{PacerConfig, REFERENCE_SEED};
use backline_transport::{
    ControllerSession, CoprocessorSession, ServeOptions, SessionConfig, TransportKind, os,
};
use signal_hook::consts::SIGINT;

use super::bench_stream::{self as bs, StreamPlan, is_stream};
use super::common::{
    GpuArgs, RdmaArgs, RingArgs, base_ids, builtin_name, check_pin, is_gpu, load_responder,
    table_of, timeout_flag, warn_ignored,
};

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
    #[arg(long, default_value = "backline", value_parser = ["backline", "cuqr"])]
    pub protocol: String,
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
    /// shm: the segment name of a running `backline serve`; udp: its host:port; rdma: the
    /// host:port of its set-up listener. Without it, bench starts its own server process.
    #[arg(long)]
    pub peer: Option<String>,
    /// Decoder id of the requests when --peer serves a single function [default: 0].
    #[arg(long)]
    pub decoder_id: Option<u32>,
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
    /// Do not draw PNG plots.
    #[arg(long)]
    pub no_plots: bool,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Hop probes: per-hop median/P99/P99.9 of every run (the coprocessor's hops too when it
    /// runs in this process or in a `backline serve` this bench starts).
    #[arg(long)]
    pub hop_stats: bool,
    /// Hop probes: one row per round and run (timestamps per hop) into FILE.
    #[arg(long, value_name = "FILE")]
    pub hop_csv: Option<PathBuf>,
}

/// One measured run.
struct Run {
    label: String,
    trace: Trace,
    summary: Option<Summary>,
    round0: Option<f64>,
    /// Logical failures among the replies (syndrome requests only).
    logical_failures: Option<u64>,
    /// Fields a streaming run adds to the JSON report.
    extra: serde_json::Map<String, serde_json::Value>,
}

impl Run {
    fn new(label: String, trace: Trace) -> Run {
        let summary = trace.summary();
        let round0 = trace.cold_rows().next().map(|r| r.rtt_ns);
        Run {
            label,
            trace,
            summary,
            round0,
            logical_failures: None,
            extra: serde_json::Map::new(),
        }
    }
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
                    "--payload-bytes {given}: {spec} needs {need} bytes (an enqueue of its widest \
                     round of {} detectors); leave --payload-bytes out",
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
        .with_context(|| format!("responder `{spec}`"))?;
        let bytes = match (r.request_bytes(), a.payload_bytes) {
            (Some(need), Some(given)) if need != given => bail!(
                "--payload-bytes {given}: {spec} takes {need}-byte syndromes (its checks, \
                 bit-packed); leave --payload-bytes out"
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

/// A `backline serve` child process, stopped when dropped.
struct ServerProcess {
    child: Child,
    peer: String,
    name: Option<String>,
    /// How long it may take to stop (writing hop probes takes a while).
    grace: Duration,
}

impl ServerProcess {
    fn spawn(
        transport: TransportKind,
        responders: &[String],
        a: &Args,
        geometry: backline_wire::Geometry,
        hop_csv: Option<&Path>,
        rounds: u64,
    ) -> anyhow::Result<ServerProcess> {
        let exe = std::env::current_exe().context("locating the backline executable")?;
        let name = format!("bench-{}", std::process::id());
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .arg("--transport")
            .arg(transport.name())
            .arg("--protocol")
            .arg(&a.protocol)
            .arg("--ring-depth")
            .arg(geometry.depth.to_string())
            .arg("--slot-bytes")
            .arg(geometry.slot_bytes.to_string())
            .arg("--payload-bytes")
            .arg(geometry.payload_capacity().to_string())
            .arg("--spin-us")
            .arg(a.ring.spin_us.to_string())
            .arg("--exit-with-parent");
        match transport {
            TransportKind::Shm => cmd.arg("--name").arg(&name),
            _ => cmd.arg("--bind").arg("127.0.0.1:0"),
        };
        if transport == TransportKind::Rdma {
            cmd.args(a.rdma.to_args());
        }
        if responders.iter().any(|r| is_gpu(r)) {
            cmd.args(a.gpu.to_args());
        }
        if let Some(p) = hop_csv {
            cmd.arg("--hop-csv")
                .arg(p)
                .arg("--hop-rounds")
                .arg(rounds.to_string());
        }
        for (id, r) in base_ids(responders).into_iter().zip(responders) {
            cmd.arg("--fn").arg(format!("{id}={r}"));
        }
        if let [_, resp] = a.pin[..] {
            cmd.arg("--pin").arg(resp.to_string());
        }
        if a.ring.hold_dma_latency {
            cmd.arg("--hold-dma-latency");
        }
        // Its own process group: a Ctrl-C at the terminal is the bench's to handle (it stops
        // at a round boundary and then stops this server), not the server's.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().context("starting `backline serve`")?;
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let peer = match (read, line.strip_prefix("ready ")) {
            (Ok(_), Some(p)) => p.trim().to_string(),
            _ => {
                let _ = child.wait();
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                let last = err
                    .lines()
                    .last()
                    .unwrap_or("it exited without a word")
                    .to_string();
                bail!("`backline serve` did not start: {last}");
            }
        };
        // Keep draining its stderr so it never blocks on a full pipe.
        if let Some(mut e) = child.stderr.take() {
            let _ = std::thread::Builder::new()
                .name("bench-srv-err".into())
                .spawn(move || std::io::copy(&mut e, &mut std::io::sink()));
        }
        Ok(ServerProcess {
            child,
            peer,
            name: (transport == TransportKind::Shm).then_some(name),
            grace: if hop_csv.is_some() {
                Duration::from_secs(60)
            } else {
                Duration::from_secs(1)
            },
        })
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = os::terminate(self.child.id());
            let t0 = Instant::now();
            while t0.elapsed() < self.grace {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(n) = &self.name {
            let _ = backline_transport::shm::remove_stale(n);
        }
    }
}

/// Runs `backline bench`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let cuqr = a.protocol == "cuqr";
    let transport: TransportKind = match (cuqr, a.transport.as_deref()) {
        (true, None | Some("udp")) => TransportKind::Udp,
        (true, Some(t)) => bail!("--protocol cuqr runs over udp, not --transport {t}"),
        (false, t) => t.unwrap_or("memcpy").parse()?,
    };
    let pacer = pacer_config(&a)?;
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
        .map_err(anyhow::Error::msg)?;
    let responders: Vec<String> = if a.compare.is_empty() {
        vec![a.responder.clone()]
    } else {
        a.compare.clone()
    };
    // Streaming decoders: their models, read now (a bad spec is our error, not the server's).
    let plans: Vec<Option<StreamPlan>> = responders
        .iter()
        .map(|r| is_stream(r).then(|| StreamPlan::new(r)).transpose())
        .collect::<anyhow::Result<_>>()?;
    let streams = plans.iter().filter(|p| p.is_some()).count();
    if cuqr && streams < responders.len() {
        bail!(
            "--protocol cuqr carries the calls of streaming decoders: every responder must be a \
             stream:FILE.dem… spec"
        );
    }
    if streams > 0 {
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
            bail!("stream: responders run b2b (every call as soon as the last reply lands)");
        }
    }
    // What a floor half measures: as many round trips as the runs make.
    let floor_rounds = if streams > 0 {
        plans
            .iter()
            .map(|p| p.as_ref().map_or(a.rounds, |p| p.calls(a.shots)))
            .max()
            .unwrap_or(a.rounds)
    } else {
        a.rounds
    };
    if responders.len() > 1 && a.csv.is_some() {
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
    let (pin_ctrl, pin_resp) = match a.pin[..] {
        [c, r] => (Some(c), Some(r)),
        [] => (None, None),
        _ => bail!("--pin takes two CPU numbers, CTRL,RESP (e.g. --pin 0,1)"),
    };
    // Both CPUs checked here: a responder's CPU that does not exist is a --pin error, not a
    // timeout or a server that did not start.
    if let (Some(c), Some(r)) = (pin_ctrl, pin_resp) {
        check_pin("--pin CTRL,RESP", "the controller's CPU", c)?;
        if a.peer.is_none() {
            check_pin("--pin CTRL,RESP", "the responder's CPU", r)?;
        }
    }
    timeout_flag("--timeout-ms", a.timeout_ms)?;
    warn_inapplicable(&a, transport);
    let gpu_runs = responders.iter().filter(|r| is_gpu(r)).count();
    let gpu_floor = transport == TransportKind::Memcpy && gpu_runs > 0;
    if gpu_floor && gpu_runs < responders.len() && !a.no_baseline {
        bail!(
            "--compare mixes CPU and GPU responders over memcpy, whose floors differ (a cache \
             line between two threads, a kernel polling mapped memory): run them separately, or \
             add --no-baseline"
        );
    }
    let floor_label = match transport {
        _ if cuqr => "floor (cuqr invalid-decoder reply)",
        TransportKind::Memcpy if gpu_floor => "floor (gpu kernel)",
        TransportKind::Udp => "floor (raw udp)",
        TransportKind::Rdma => "floor (rdma write)",
        _ => "floor (cache line)",
    };
    // Every output is named and proved writable before the first round.
    let outputs = plan_outputs(&a, transport, &responders, &plans, floor_label);
    outputs.check()?;
    let ctx = a.gpu.context()?;
    let hop_args = super::hops::HopArgs {
        stats: a.hop_stats,
        csv: a.hop_csv.clone(),
    };
    if let Some(p) = &hop_args.csv {
        // Checked now, not after the run.
        std::fs::File::create(p).with_context(|| format!("--hop-csv {}", p.display()))?;
    }
    // Where a server this bench starts leaves its hop stamps.
    let server_hops = (hop_args.on() && transport != TransportKind::Memcpy && a.peer.is_none())
        .then(|| std::env::temp_dir().join(format!("backline-hops-{}.csv", std::process::id())));
    // Load responders here first: a bad spec is our error, not the server's. (With --peer a
    // GPU function runs on the peer's machine, not here; memcpy builds its table below.)
    if transport != TransportKind::Memcpy {
        for r in responders.iter().filter(|r| a.peer.is_none() || !is_gpu(r)) {
            load_responder(r, &ctx)?;
        }
    }
    let requests = requests_of(&a, &responders, &plans)?;
    // The slots carry every request and every syndrome-sized reply.
    let slot_payload = requests
        .iter()
        .map(|(r, bytes)| (*bytes).max(r.reply_bytes().unwrap_or(0)))
        .max()
        .unwrap_or(8);
    let mut config: SessionConfig = if cuqr {
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
    config.pin_cpu = pin_resp;
    config.rdma = a.rdma.options();
    if transport == TransportKind::Rdma {
        // Say plainly, before anything starts, when this machine cannot do RDMA.
        let dev = backline_transport::rdma::probe(&config.rdma)?;
        if !a.quiet && !a.json {
            eprintln!("rdma: {dev}");
        }
    }
    let _dma = if a.ring.hold_dma_latency {
        Some(os::DmaLatencyGuard::hold()?)
    } else {
        None
    };
    // The coprocessor: a thread here (memcpy), a process we start, or the user's --peer.
    let mut local: Option<CoprocessorSession> = None;
    let mut child: Option<ServerProcess> = None;
    let peer = match (transport, &a.peer) {
        (TransportKind::Memcpy, _) => {
            let fns: Vec<(u32, String)> = base_ids(&responders)
                .into_iter()
                .zip(responders.iter().cloned())
                .collect();
            let table = table_of(&fns, &ctx)?;
            let key = format!("bench-{}", std::process::id());
            let options = ServeOptions {
                probe_rounds: if hop_args.on() { floor_rounds } else { 0 },
                ..ServeOptions::default()
            };
            local = Some(CoprocessorSession::open(
                &key,
                config.clone(),
                "",
                0,
                &table,
                options,
            )?);
            key
        }
        (_, Some(p)) => p.clone(),
        (_, None) => {
            let s = ServerProcess::spawn(
                transport,
                &responders,
                &a,
                config.geometry,
                server_hops.as_deref(),
                floor_rounds,
            )?;
            let p = s.peer.clone();
            child = Some(s);
            p
        }
    };

    // Pinned only now: threads started above (the memcpy coprocessor's) inherit this thread's
    // CPU set, and must be free to take their own CPU.
    if let Some(c) = pin_ctrl {
        os::pin_current_thread(c)?;
    }

    let floor_half = |rounds: u64| -> anyhow::Result<Vec<f64>> {
        let t = config.reply_timeout.max(Duration::from_secs(1));
        if cuqr {
            return bs::cuqr_floor(
                &peer,
                config.geometry.slot_bytes as usize,
                rounds,
                t,
                spin_of(&config),
            )
            .with_context(|| format!("measuring the {floor_label}"));
        }
        let r = match transport {
            // A bare persistent kernel bouncing seq through one mapped line.
            TransportKind::Memcpy if gpu_floor => {
                return backline_gpu::GpuFloor::measure(&ctx.gpu, rounds, t)
                    .with_context(|| format!("measuring the {floor_label}"));
            }
            TransportKind::Memcpy => backline_transport::floor::memcpy_floor(rounds, pin_resp, t),
            TransportKind::Shm => {
                backline_transport::shm::shm_floor(&peer, config.geometry, rounds, t)
            }
            TransportKind::Udp => {
                backline_transport::udp::udp_floor(&peer, rounds, &config.wait, t)
            }
            TransportKind::Rdma => backline_transport::rdma::rdma_floor(&peer, &config, rounds, t),
        };
        r.with_context(|| format!("measuring the {floor_label}"))
    };

    // Ctrl-C ends the run at the next round boundary (a second one at once, with 130).
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, stop.clone())
        .and_then(|_| signal_hook::flag::register(SIGINT, stop.clone()))
        .context("installing the SIGINT handler")?;
    let mut interrupted = false;
    // Floor: half before the runs, half after, so drift affects both alike.
    let mut floor_rtts = Vec::new();
    if !a.no_baseline {
        floor_rtts = floor_half(floor_rounds / 2)?;
    }

    let mut runs: Vec<Run> = Vec::new();
    let mut controller_hops: Vec<(String, backline_probe::Table)> = Vec::new();
    let mut failure: Option<anyhow::Error> = None;
    // What streaming runs print under the table.
    let mut stream_lines: Vec<String> = Vec::new();
    // The position in `outputs` of the next run.
    let mut slot = 0;
    for (i, spec) in responders.iter().enumerate() {
        // Relaxed: the flag carries no data.
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let decoder_id = if responders.len() == 1 && a.peer.is_some() {
            a.decoder_id.unwrap_or(0)
        } else {
            base_ids(&responders)[i]
        };
        if let Some(plan) = &plans[i] {
            let label = format!("bench {transport} {}", plan.label);
            let settings = backline_bench::stream::StreamRun {
                shots: a.shots,
                seed: u64::from(a.seed),
                progress: !a.quiet,
                label,
                stop: Some(stop.clone()),
            };
            let stream_run = |link: &mut dyn backline_bench::stream::StreamLink| {
                bs::run(link, plan, &settings, a.whole_history)
            };
            let (r, hops) = if cuqr {
                let mut link = backline_bench::stream::CuqrLink::connect(
                    &peer,
                    i64::from(decoder_id),
                    config.geometry.slot_bytes as usize,
                    config.reply_timeout,
                    spin_of(&config),
                )
                .with_context(|| format!("connecting to the cuqr server at {peer}"))?;
                (stream_run(&mut link)?, backline_probe::Table::new())
            } else {
                let mut session = ControllerSession::open("bench", config.clone(), &peer, 7878)
                    .with_context(|| {
                        format!("connecting to the coprocessor at {transport}:{peer}")
                    })?;
                if hop_args.on() {
                    session
                        .enable_probes(plan.calls(a.shots))
                        .context("--hop-stats / --hop-csv")?;
                }
                let r = stream_run(&mut backline_bench::stream::SessionLink::new(
                    &mut session,
                    decoder_id,
                ))?;
                let mut t = backline_probe::Table::new();
                t.merge(session.probes().rows());
                (r, t)
            };
            if hop_args.on() {
                controller_hops.push((plan.label.clone(), hops));
            }
            let o = &r.outcome;
            interrupted |= o.interrupted;
            if let Some(e) = &o.error {
                failure = Some(anyhow::anyhow!(
                    "{} over {transport}: {} of {} shots completed, then: {e}",
                    plan.spec,
                    o.shots,
                    a.shots
                ));
            } else if o.mismatches() > 0 {
                failure = Some(anyhow::Error::new(ChecksFailed(format!(
                    "{} over {transport}: {} calls were refused or wrong ({})",
                    plan.spec,
                    o.mismatches(),
                    o.refusals()
                ))));
            }
            for line in bs::summary_lines(plan, &r) {
                stream_lines.push(line);
            }
            let fields = bs::json_fields(plan, &r);
            for (what, trace) in [
                ("enqueue", r.outcome.enqueue),
                ("get_corrections", r.outcome.corrections),
            ] {
                let mut trace = trace;
                set_meta(&mut trace, &a, transport, spec, &config, pacer);
                trace.set_meta("calls", what);
                trace.set_meta("protocol", &a.protocol);
                trace.set_meta("shots", a.shots);
                trace.set_meta("seed", a.seed);
                trace.set_meta("logical_failures", o_logical(&fields));
                let mut run = Run::new(outputs.runs()[slot].label.clone(), trace);
                slot += 1;
                run.extra = fields.clone();
                run.extra.insert("calls".into(), what.into());
                runs.push(run);
            }
            if failure.is_some() || interrupted {
                break;
            }
            continue;
        }
        let mut session = ControllerSession::open("bench", config.clone(), &peer, 7878)
            .with_context(|| format!("connecting to the coprocessor at {transport}:{peer}"))?;
        if hop_args.on() {
            session
                .enable_probes(a.rounds)
                .context("--hop-stats / --hop-csv")?;
        }
        let (reqs, payload_bytes) = requests[i].clone();
        let cfg = SwLoop {
            rounds: a.rounds,
            payload_bytes,
            decoder_id,
            requests: reqs,
            pacer,
            clock_mhz: a.clock_mhz,
            progress: !a.quiet,
            label: format!("bench {transport} {spec}"),
            stop: Some(stop.clone()),
        };
        let r = swloop::run(&mut session, &cfg);
        if hop_args.on() {
            let mut t = backline_probe::Table::new();
            t.merge(session.probes().rows());
            t.truncate(r.completed as usize);
            controller_hops.push((spec.clone(), t));
        }
        drop(session);
        let mut trace = r.trace;
        set_meta(&mut trace, &a, transport, spec, &config, pacer);
        if let Some(t) = &local
            && is_gpu(spec)
        {
            trace.set_meta(
                "placement",
                format!("controller=cpu coprocessor=gpu transport={transport}"),
            );
            if let Some(line) = t.reports().first() {
                trace.set_meta("gpu", line.clone());
            }
        }
        trace.set_meta("payload_bytes", payload_bytes);
        let syndromes = matches!(requests[i].0, Requests::Syndromes(_));
        if syndromes {
            trace.set_meta("requests", "syndromes of sampled errors");
            trace.set_meta("logical_failures", r.logical_failures);
        }
        if let Some(e) = r.error {
            failure = Some(anyhow::anyhow!(
                "{spec} over {transport}: {} of {} rounds completed, then: {e}",
                r.completed,
                a.rounds
            ));
        } else if r.mismatches > 0 {
            let what: Vec<String> = trace
                .failures()
                .iter()
                .map(|(s, n)| format!("{n} {}", s.name()))
                .collect();
            failure = Some(anyhow::Error::new(ChecksFailed(format!(
                "{spec} over {transport}: {} of {} replies were not the expected ones ({})",
                r.mismatches,
                a.rounds,
                what.join(", ")
            ))));
        }
        let mut run = Run::new(outputs.runs()[slot].label.clone(), trace);
        slot += 1;
        run.logical_failures = syndromes.then_some(r.logical_failures);
        runs.push(run);
        interrupted |= r.interrupted;
        if failure.is_some() || interrupted {
            break;
        }
    }
    interrupted |= stop.load(Ordering::Relaxed);
    if !a.no_baseline && failure.is_none() && !interrupted {
        let mut second = floor_half(floor_rounds - floor_rounds / 2)?;
        // Round 0 of the second half is warm; only the very first floor round is cold.
        floor_rtts.append(&mut second);
    }
    // Stop the coprocessor (thread or process) before writing outputs.
    if let Some(l) = &local
        && !a.quiet
        && !a.json
    {
        for line in l.reports() {
            eprintln!("{line}");
        }
    }
    // The serving threads of this process hand over their stamps when their sessions end:
    // stop them first.
    let server_tables = match local.as_mut() {
        Some(l) if hop_args.on() => {
            use backline_transport::Session as _;
            let _ = l.stop();
            super::hops::server_tables(
                l.stats()
                    .sessions_report()
                    .into_iter()
                    .filter_map(|r| r.hops.map(|h| (r.number, h)))
                    .collect(),
            )
        }
        _ => Vec::new(),
    };
    drop(local);
    drop(child);
    if hop_args.on() {
        // A server process writes its stamps when it stops (now).
        let server_tables = match &server_hops {
            Some(p) => {
                let t = super::hops::load_server(p);
                let _ = std::fs::remove_file(p);
                t?
            }
            None => server_tables,
        };
        let mut merged = controller_hops;
        for ((_, t), s) in merged.iter_mut().zip(&server_tables) {
            t.merge(s.rows());
        }
        let note = if cuqr {
            Some(
                "cuqr: the client times each call whole; the hops are the server's, per frame (received = request_seen)",
            )
        } else if a.peer.is_some() {
            Some(
                "the coprocessor's own hops: its `backline serve --hop-stats` (another process, maybe another clock)",
            )
        } else if server_tables.is_empty() {
            Some(
                "the coprocessor recorded no hops of its own (a GPU kernel attached to the controller's rings has none)",
            )
        } else {
            None
        };
        super::hops::report(&hop_args, transport.name(), &merged, note)?;
    }

    let baseline = (!a.no_baseline && failure.is_none() && !floor_rtts.is_empty()).then(|| {
        let mut t = Trace::with_capacity(Clock::HostNs, floor_rtts.len());
        for (i, &rtt) in floor_rtts.iter().enumerate() {
            t.rows.push(TraceRow {
                round: i as u64,
                rtt_ns: rtt,
                rtt_cycles: None,
                quiet_ns: 0.0,
                status: RoundStatus::Ok,
                cold: i == 0,
            });
        }
        set_meta(
            &mut t,
            &a,
            transport,
            floor_label,
            &config,
            PacerConfig::B2B,
        );
        Run::new(floor_label.to_string(), t)
    });

    // The traces in the order of `outputs`: the runs that ran, then the floor (last).
    let mut traces: Vec<Option<&Trace>> = vec![None; outputs.runs().len()];
    for (t, r) in traces.iter_mut().zip(&runs) {
        *t = Some(&r.trace);
    }
    if let (Some(b), Some(last)) = (&baseline, traces.last_mut()) {
        *last = Some(&b.trace);
    }
    let written = outputs.write(&traces, transport.name())?;
    if !a.json && !written.is_empty() {
        let list: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("wrote {}", list.join(", "));
    }
    if a.json {
        println!("{}", json(&a, transport, &runs, baseline.as_ref()));
    } else {
        print!(
            "{}",
            table(&a, transport, &config, &runs, baseline.as_ref()).render()
        );
        for r in &runs {
            if let Some(k) = r.logical_failures {
                println!(
                    "{}: {k} logical failures in {} decoded rounds (sampled errors)",
                    r.label,
                    r.trace.rows.len()
                );
            }
            let f = r.trace.failures();
            if !f.is_empty() {
                let list: Vec<String> =
                    f.iter().map(|(s, n)| format!("{n} {}", s.name())).collect();
                println!("{}: {}", r.label, list.join(", "));
            }
        }
        for line in &stream_lines {
            println!("{line}");
        }
    }
    match failure {
        Some(e) => Err(e),
        None if interrupted => {
            let done: Vec<String> = runs
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
            Ok(ExitCode::from(backline_bench::exit::INTERRUPTED))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

fn set_meta(
    t: &mut Trace,
    a: &Args,
    transport: TransportKind,
    responder: &str,
    config: &SessionConfig,
    pacer: PacerConfig,
) {
    t.set_meta("source", "backline bench (sw-loop)");
    t.set_meta("version", env!("CARGO_PKG_VERSION"));
    t.set_meta(
        "placement",
        format!("controller=cpu coprocessor=cpu transport={transport}"),
    );
    t.set_meta("transport", transport);
    t.set_meta("responder", responder);
    t.set_meta("rounds", a.rounds);
    t.set_meta("payload_bytes", a.payload_bytes.unwrap_or(8));
    t.set_meta("in_flight", config.in_flight);
    t.set_meta(
        "ring",
        format!(
            "{} slots x {} bytes",
            config.geometry.depth, config.geometry.slot_bytes
        ),
    );
    t.set_meta("spin_us", config.wait.as_micros());
    t.set_meta(
        "cadence",
        if pacer.is_b2b() {
            "b2b".to_string()
        } else {
            format!(
                "random-delayed freq={} span={:#x} seed={:#x} clock={} MHz",
                pacer.freq, pacer.span, pacer.seed, a.clock_mhz
            )
        },
    );
    if let [c, r] = a.pin[..] {
        t.set_meta("pin", format!("controller={c} responder={r}"));
    }
    if transport == TransportKind::Rdma {
        let o = &config.rdma;
        t.set_meta(
            "rdma",
            format!(
                "device={} port={} gid_index={}",
                o.device.as_deref().unwrap_or("first"),
                o.port,
                o.gid_index.map_or("auto".to_string(), |g| g.to_string())
            ),
        );
    }
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
                    names.push(RunName { label, csv: None });
                }
            }
            None => names.push(RunName {
                label: spec.clone(),
                csv: a.csv.clone(),
            }),
        }
    }
    if !a.no_baseline {
        names.push(RunName {
            label: floor_label.to_string(),
            csv: None,
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

fn table(
    a: &Args,
    transport: TransportKind,
    config: &SessionConfig,
    runs: &[Run],
    baseline: Option<&Run>,
) -> Table {
    let cadence = if a.cadence == "b2b" {
        "b2b"
    } else {
        "random-delayed"
    };
    let streaming = runs.iter().any(|r| r.extra.contains_key("shots"));
    let mut t = Table::new(format!(
        "backline bench: {transport}{}, {} ({cadence}), {} payload, {} in flight, {} x {} B slots",
        if a.protocol == "cuqr" {
            " (cuqr frames)"
        } else {
            ""
        },
        if streaming {
            format!(
                "{} shots each, every round enqueued, then get_corrections",
                a.shots
            )
        } else {
            format!("{} rounds each", a.rounds)
        },
        match a.payload_bytes {
            Some(b) => format!("{b} B"),
            None if streaming || runs.iter().any(|r| r.logical_failures.is_some()) => {
                "syndrome-sized".into()
            }
            None => "8 B".into(),
        },
        config.in_flight,
        config.geometry.depth,
        config.geometry.slot_bytes
    ));
    for r in runs {
        if let Some(s) = r.summary {
            t.push(r.label.clone(), r.round0, s);
        }
    }
    if let Some(b) = baseline
        && let Some(bs) = b.summary
    {
        t.push(b.label.clone(), b.round0, bs);
        for r in runs {
            if let Some(s) = r.summary {
                t.push_ratio(format!("{} / floor", r.label), &s, &bs);
            }
        }
    }
    t
}

fn stats_of(r: &Run) -> Option<JsonStats> {
    r.summary.map(|s| JsonStats::new(&s, r.round0))
}

fn json(a: &Args, transport: TransportKind, runs: &[Run], baseline: Option<&Run>) -> String {
    let base = baseline.and_then(stats_of);
    let reports: Vec<JsonReport> = runs
        .iter()
        .filter_map(|r| {
            let stats = stats_of(r)?;
            Some(JsonReport {
                transport: transport.name().into(),
                responder: r.label.clone(),
                rounds: a.rounds,
                completed: r
                    .trace
                    .rows
                    .iter()
                    .filter(|x| x.status == RoundStatus::Ok)
                    .count() as u64,
                ratio_median: base.as_ref().map(|b| stats.median_ns / b.median_ns),
                stats,
                baseline: base.clone(),
                extra: match r.logical_failures {
                    Some(k) => [("logical_failures".to_string(), serde_json::json!(k))]
                        .into_iter()
                        .collect(),
                    None => r.extra.clone(),
                },
            })
        })
        .collect();
    match reports.len() {
        1 => reports[0].to_line(),
        _ => serde_json::json!({
            "transport": transport.name(),
            "rounds": a.rounds,
            "runs": reports,
        })
        .to_string(),
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

/// The logical failures of a streaming run's JSON fields.
fn o_logical(fields: &serde_json::Map<String, serde_json::Value>) -> u64 {
    fields
        .get("logical_failures")
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}
