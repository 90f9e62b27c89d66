//! Flags and helpers shared by `bench`, `serve` and `sim`.

use backline_decoders::io::excerpt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, bail};
use backline_responder::{Responder, ResponderTable, SpecContext};
use backline_transport::{AdmissionKey, RdmaOptions, SessionConfig, TransportKind, WaitPolicy};
use backline_wire::{DecoderId, Geometry};

/// `--protocol`: what a bench and a server speak over the transport. (Plain comments on the
/// variants: clap then lists the values in one line, `[possible values: backline, cuqr]`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    // backline's slots, over any transport.
    Backline,
    // NVIDIA's realtime RPC frames (CUQR/CUQS), over udp.
    Cuqr,
}

/// Ring, waiting and pinning flags.
#[derive(Debug, Clone, clap::Args)]
pub struct RingArgs {
    /// Slots per ring (a power of two); both sides must agree.
    #[arg(long, default_value_t = backline_wire::DEFAULT_RING_DEPTH)]
    pub ring_depth: u32,
    /// Bytes per slot (a power of two ≥ 64; payload capacity is 16 less). Default: the
    /// smallest slot that fits the payload.
    #[arg(long)]
    pub slot_bytes: Option<u32>,
    /// Spin budget of every wait in µs before blocking: 0 = always block, -1 = never block.
    #[arg(
        long,
        env = "BACKLINE_SPIN_US",
        default_value_t = 200,
        allow_negative_numbers = true
    )]
    pub spin_us: i64,
    /// Hold /dev/cpu_dma_latency at 0 while running (needs root).
    #[arg(long)]
    pub hold_dma_latency: bool,
}

/// The longest reply timeout a flag may ask for: an hour.
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// A timeout flag's value, in 1 ..= [`MAX_TIMEOUT_MS`] ms (0 would never wait; a larger one
/// is a hang, not a timeout).
pub fn timeout_flag(flag: &str, ms: u64) -> anyhow::Result<std::time::Duration> {
    if !(1..=MAX_TIMEOUT_MS).contains(&ms) {
        bail!("{flag} {ms}: must be between 1 and {MAX_TIMEOUT_MS} (ms)");
    }
    Ok(std::time::Duration::from_millis(ms))
}

/// Checks a `--pin` CPU now, before anything starts on it: an error naming `flag` and `role`.
pub fn check_pin(flag: &str, role: &str, cpu: usize) -> anyhow::Result<()> {
    backline_transport::os::check_cpu(cpu).map_err(|e| anyhow::anyhow!("{flag}: {role}: {e}"))
}

/// A pacer error as an error of the flag that caused it (`--seed`, `--span`, `--freq`).
pub fn pacer_error(e: backline_pacer::CadenceError, seed: u32) -> anyhow::Error {
    use backline_pacer::{CadenceError as C, PacerError as P};
    match e {
        C::Pacer(P::ZeroSeed) => anyhow::anyhow!("--seed {seed}: {}", P::ZeroSeed),
        C::Pacer(p @ P::SpanNotMask(_)) => anyhow::anyhow!("--span: {p}"),
        C::Pacer(p @ P::IntervalOverflow { .. }) => anyhow::anyhow!("--freq / --span: {p}"),
        other => anyhow::anyhow!("--cadence: {other}"),
    }
}

/// SIGINT sets the flag (a run stops at the next round boundary and reports what completed);
/// a second SIGINT while it is set exits at once with 130.
pub fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    use signal_hook::consts::SIGINT;
    let stop = Arc::new(AtomicBool::new(false));
    let code = i32::from(backline_bench::exit::INTERRUPTED);
    signal_hook::flag::register_conditional_shutdown(SIGINT, code, stop.clone())
        .and_then(|_| signal_hook::flag::register(SIGINT, stop.clone()))
        .context("installing the SIGINT handler")?;
    Ok(stop)
}

/// A one-line warning about a flag that does not apply: `backline: warning: FLAG …; ignored`.
pub fn warn_ignored(flag: &str, why: &str) {
    eprintln!("backline: warning: {flag} {why}; ignored");
}

impl RingArgs {
    /// `--ring-depth`, checked on its own (before any flag that is bounded by it).
    pub fn check_depth(&self) -> anyhow::Result<()> {
        let d = self.ring_depth;
        if !(d.is_power_of_two() && d <= backline_wire::MAX_RING_DEPTH) {
            bail!(
                "--ring-depth {d}: must be a power of two between 1 and {}",
                backline_wire::MAX_RING_DEPTH
            );
        }
        Ok(())
    }

    pub fn geometry(&self, payload_bytes: usize) -> anyhow::Result<Geometry> {
        self.check_depth()?;
        let slot_bytes = match self.slot_bytes {
            Some(s) => s,
            None => {
                if payload_bytes > backline_wire::MAX_SLOT_BYTES as usize - 16 {
                    bail!(
                        "--payload-bytes {payload_bytes} exceeds the largest slot's capacity of {} bytes",
                        backline_wire::MAX_SLOT_BYTES - 16
                    );
                }
                Geometry::slot_bytes_for(payload_bytes)
            }
        };
        let g = Geometry {
            depth: self.ring_depth,
            slot_bytes,
        }
        .validate()
        .with_context(|| format!("--slot-bytes {slot_bytes}"))?;
        if payload_bytes > g.payload_capacity() {
            bail!(
                "--payload-bytes {payload_bytes} does not fit --slot-bytes {slot_bytes} (capacity {} bytes)",
                g.payload_capacity()
            );
        }
        Ok(g)
    }

    pub fn wait(&self) -> anyhow::Result<WaitPolicy> {
        WaitPolicy::from_micros(self.spin_us).map_err(|e| anyhow::anyhow!("--spin-us: {e}"))
    }

    pub fn config(
        &self,
        transport: TransportKind,
        payload_bytes: usize,
    ) -> anyhow::Result<SessionConfig> {
        let mut c = SessionConfig::new(transport);
        c.geometry = self.geometry(payload_bytes)?;
        c.wait = self.wait()?;
        Ok(c)
    }
}

/// `--token-file`: the pre-shared key that admits controllers (udp and rdma).
#[derive(Debug, Clone, clap::Args)]
pub struct AdmitArgs {
    /// udp, rdma: the pre-shared key of admission, a file readable by its owner only (make
    /// one with `backline token FILE`). A server answers only controllers that prove they
    /// hold it in their hello; a controller proves it. Syndromes still travel in the clear.
    #[arg(long, env = "BACKLINE_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
}

impl AdmitArgs {
    /// The key, read and checked now, for a session over `transport`: `None` without the flag
    /// and for the memory transports (a flag given for them is an error; a file named by
    /// `BACKLINE_TOKEN_FILE` alone is not theirs and is passed over).
    pub fn key(&self, transport: TransportKind) -> anyhow::Result<Option<AdmissionKey>> {
        let Some(path) = &self.token_file else {
            return Ok(None);
        };
        if matches!(transport, TransportKind::Memcpy | TransportKind::Shm) {
            if !super::origin::given("token_file") {
                return Ok(None);
            }
            bail!(
                "--token-file admits controllers of udp and rdma; {transport} is reached only by \
                 this user's own processes (its segment is mode 0600)"
            );
        }
        Ok(Some(
            AdmissionKey::from_file(path).map_err(|e| anyhow::anyhow!("--token-file: {e}"))?,
        ))
    }

    /// The flag again, for a `backline serve` this process starts.
    pub fn to_args(&self) -> Vec<String> {
        match &self.token_file {
            Some(p) => vec!["--token-file".into(), p.display().to_string()],
            None => Vec::new(),
        }
    }
}

/// The device flags of the rdma transport.
#[derive(Debug, Clone, clap::Args)]
pub struct RdmaArgs {
    /// rdma: the RDMA device, e.g. rxe0 or mlx5_0 (default: the first one found).
    #[arg(long, env = "BACKLINE_RDMA_DEVICE")]
    pub device: Option<String>,
    /// rdma: the device's port.
    #[arg(long, default_value_t = 1)]
    pub ib_port: u8,
    /// rdma: index into the port's GID table (RoCE v2 is 1 on Soft-RoCE). Default: the first
    /// RoCE v2 GID holding an IPv4 address.
    #[arg(long, env = "BACKLINE_RDMA_GID_INDEX")]
    pub gid_index: Option<u8>,
}

impl RdmaArgs {
    /// Warns about each rdma flag given for another transport (a value from the environment
    /// is not a flag given, and says nothing).
    pub fn warn_unless_rdma(&self, transport: TransportKind) {
        if transport == TransportKind::Rdma {
            return;
        }
        let why = format!("applies to --transport rdma, not {transport}");
        if self.device.is_some() && super::origin::given("device") {
            warn_ignored("--device", &why);
        }
        if self.gid_index.is_some() && super::origin::given("gid_index") {
            warn_ignored("--gid-index", &why);
        }
        if self.ib_port != 1 {
            warn_ignored("--ib-port", &why);
        }
    }

    pub fn options(&self) -> RdmaOptions {
        RdmaOptions {
            device: self.device.clone(),
            port: self.ib_port,
            gid_index: self.gid_index,
        }
    }

    /// The flags again, for a `backline serve` this process starts.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec!["--ib-port".to_string(), self.ib_port.to_string()];
        if let Some(d) = &self.device {
            v.extend(["--device".to_string(), d.clone()]);
        }
        if let Some(g) = self.gid_index {
            v.extend(["--gid-index".to_string(), g.to_string()]);
        }
        v
    }
}

/// Where `gpu:` functions run.
#[derive(Debug, Clone, clap::Args)]
pub struct GpuArgs {
    /// gpu: functions: the GPU runtime: auto (CUDA, then HIP), cuda, hip, or emu (the same
    /// kernels on CPU threads, for machines without a GPU).
    #[arg(long, env = "BACKLINE_GPU_BACKEND", default_value = "auto")]
    pub gpu_backend: String,
    /// gpu: functions: the device number.
    #[arg(long, env = "BACKLINE_GPU_DEVICE", default_value_t = 0)]
    pub gpu_device: u32,
    /// gpu: functions: threads of the persistent kernel's block (default 32 on a GPU, 1
    /// emulated).
    #[arg(long, env = "BACKLINE_GPU_THREADS")]
    pub gpu_threads: Option<u32>,
}

impl GpuArgs {
    /// The GPU settings of responder specs.
    pub fn context(&self) -> anyhow::Result<SpecContext> {
        let mut ctx = SpecContext::default();
        ctx.gpu.backend = self
            .gpu_backend
            .parse()
            .map_err(|e| anyhow::anyhow!("--gpu-backend: {e}"))?;
        ctx.gpu.device = self.gpu_device;
        ctx.gpu.threads = self.gpu_threads;
        Ok(ctx)
    }

    /// The flags again, for a `backline serve` this process starts.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            "--gpu-backend".to_string(),
            self.gpu_backend.clone(),
            "--gpu-device".to_string(),
            self.gpu_device.to_string(),
        ];
        if let Some(t) = self.gpu_threads {
            v.extend(["--gpu-threads".to_string(), t.to_string()]);
        }
        v
    }
}

/// Whether a spec is a GPU function.
pub fn is_gpu(spec: &str) -> bool {
    spec.starts_with("gpu:")
}

/// A built-in responder name (`echo`, `steane`, or their GPU versions), or `None` for others
/// (C symbols): the replies a bench can check.
pub fn builtin_name(spec: &str) -> Option<&str> {
    matches!(spec, "echo" | "steane" | "gpu:echo" | "gpu:steane").then_some(spec)
}

/// Loads a responder spec with a message that says what was asked for.
pub fn load_responder(spec: &str, ctx: &SpecContext) -> anyhow::Result<Arc<dyn Responder>> {
    let mut f = backline_responder::functions_of_with(spec, 0, ctx)
        .with_context(|| format!("responder `{}`", excerpt(spec)))?;
    Ok(f.remove(0).1)
}

/// Parses `ID=SPEC`.
pub fn parse_fn(s: &str) -> anyhow::Result<(DecoderId, String)> {
    let (id, spec) = s
        .split_once('=')
        .with_context(|| format!("--fn `{}`: expected ID=SPEC, e.g. 0=steane", excerpt(s)))?;
    let id: DecoderId = id.trim().parse().with_context(|| {
        format!(
            "--fn `{}`: `{}` is not a decoder id",
            excerpt(s),
            excerpt(id)
        )
    })?;
    Ok((id, spec.to_string()))
}

/// A table from `(id, spec)` pairs (a `bposd:` spec takes its id and the next).
pub fn table_of(fns: &[(DecoderId, String)], ctx: &SpecContext) -> anyhow::Result<ResponderTable> {
    let mut t = ResponderTable::new();
    for (base, spec) in fns {
        let list = backline_responder::functions_of_with(spec, *base, ctx)
            .with_context(|| format!("responder `{}`", excerpt(spec)))?;
        for (id, r) in list {
            if t.insert(id, r).is_some() {
                bail!("decoder id {id} is given twice (a bposd: spec uses two ids)");
            }
        }
    }
    Ok(t)
}

/// Decoder ids for a list of responders run side by side: each starts after the ids of the
/// previous one (`bposd:` and `gpu:bposd:` specs take two).
pub fn base_ids(specs: &[String]) -> Vec<DecoderId> {
    let mut next = 0;
    specs
        .iter()
        .map(|s| {
            let id = next;
            next += backline_responder::spec_width(s);
            id
        })
        .collect()
}
