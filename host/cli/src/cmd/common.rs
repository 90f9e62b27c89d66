//! Flags and helpers shared by `bench` and `serve`.

use std::sync::Arc;

use anyhow::{Context, bail};
use backline_responder::{Responder, ResponderTable, SpecContext};
use backline_transport::{RdmaOptions, SessionConfig, TransportKind, WaitPolicy};
use backline_wire::{DecoderId, Geometry};

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

impl RingArgs {
    pub fn geometry(&self, payload_bytes: usize) -> anyhow::Result<Geometry> {
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
        .context("ring geometry")?;
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
        .with_context(|| format!("responder `{spec}`"))?;
    Ok(f.remove(0).1)
}

/// Parses `ID=SPEC`.
pub fn parse_fn(s: &str) -> anyhow::Result<(DecoderId, String)> {
    let (id, spec) = s
        .split_once('=')
        .with_context(|| format!("--fn `{s}`: expected ID=SPEC, e.g. 0=steane"))?;
    let id: DecoderId = id
        .trim()
        .parse()
        .with_context(|| format!("--fn `{s}`: `{id}` is not a decoder id"))?;
    Ok((id, spec.to_string()))
}

/// A table from `(id, spec)` pairs (a `bposd:` spec takes its id and the next).
pub fn table_of(fns: &[(DecoderId, String)], ctx: &SpecContext) -> anyhow::Result<ResponderTable> {
    let mut t = ResponderTable::new();
    for (base, spec) in fns {
        let list = backline_responder::functions_of_with(spec, *base, ctx)
            .with_context(|| format!("responder `{spec}`"))?;
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
