//! A GPU coprocessor: one persistent kernel, its rings in mapped host memory, its functions.
//!
//! It has two kinds of client, one at a time:
//! - a controller in this process attached to the rings directly ([`RingServer`]): the
//!   controller's stores land in the memory the kernel polls, with no thread in between;
//! - the *proxy*, [`GpuCoprocessor::call`]: a CPU thread (a transport's serving thread of
//!   `backline serve`, a C ABI caller…) hands one request to the kernel and waits for its
//!   reply — the reference system's hand-off — timed per call.
//!
//! Switching clients resets the kernel to round 0 through the control block (pause → rings
//! zeroed, geometry set → resume). Stopping sets `stop`, waits for the kernel to return within
//! a bound, and only then frees memory; a kernel that does not return (a user function that
//! never ends) keeps its memory, which the driver reclaims when the process exits.

use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backline_decoders::{BitMatrix, BpOsdConfig};
use backline_ring::{AttachError, AttachedRings, RingServer, RingView, WaitPolicy};
use backline_wire::{DecoderId, Geometry, Kind, MAX_SLOT_BYTES, Seq, Status};

use crate::abi::{self, BlControl, BlFunction, BlLaunch, bytes_of};
use crate::bposd::BposdImage;
use crate::device::{self, Backend, Device, DeviceBuf, Entry, Launched, Mapped, UserKernel};
use crate::stats::LatencyLog;
use crate::{Error, Result};

/// Where and how a coprocessor runs.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuOptions {
    /// Which runtime (default: `BACKLINE_GPU_BACKEND`, else auto).
    pub backend: Backend,
    /// Device ordinal (default: `BACKLINE_GPU_DEVICE`, else 0).
    pub device: u32,
    /// Threads of the kernel's block (default 32 on a GPU, 1 under emulation).
    pub threads: Option<u32>,
    /// Longest wait for one reply of a proxied call before the kernel is declared hung.
    pub reply_timeout: Duration,
    /// Longest wait for the kernel to return after `stop`.
    pub stop_timeout: Duration,
    /// Bytes of each ring's memory: the largest `depth × slot_bytes` a controller may use.
    pub ring_capacity: usize,
}

impl Default for GpuOptions {
    fn default() -> GpuOptions {
        GpuOptions {
            backend: Backend::Auto,
            device: 0,
            threads: None,
            reply_timeout: Duration::from_secs(1),
            stop_timeout: Duration::from_secs(2),
            ring_capacity: 1 << 20,
        }
    }
}

impl GpuOptions {
    /// The defaults with `BACKLINE_GPU_BACKEND`, `BACKLINE_GPU_DEVICE` and
    /// `BACKLINE_GPU_THREADS` applied.
    pub fn from_env() -> Result<GpuOptions> {
        let mut o = GpuOptions::default();
        if let Ok(b) = std::env::var("BACKLINE_GPU_BACKEND") {
            o.backend = b.parse()?;
        }
        let num = |name: &str| -> Result<Option<u32>> {
            match std::env::var(name) {
                Ok(v) => v.trim().parse().map(Some).map_err(|_| {
                    Error::Unsupported(format!("{name}={v}: not a non-negative integer"))
                }),
                Err(_) => Ok(None),
            }
        };
        if let Some(d) = num("BACKLINE_GPU_DEVICE")? {
            o.device = d;
        }
        o.threads = num("BACKLINE_GPU_THREADS")?;
        Ok(o)
    }
}

/// One function of a coprocessor.
#[derive(Debug, Clone)]
pub enum GpuFunction {
    /// Replies with the request.
    Echo,
    /// The Steane [[7,1,3]] lookup.
    Steane,
    /// BP+OSD on one check matrix (the payloads of `backline-decoders`'s `CssDecoder`).
    BpOsd {
        /// The checks.
        checks: BitMatrix,
        /// The settings, as for the CPU decoder.
        config: BpOsdConfig,
    },
    /// A device function from a source file, compiled into the persistent template.
    User {
        /// The `.cu` / HIP source.
        path: PathBuf,
        /// The function's name.
        function: String,
    },
    /// A decoder written in Triton, compiled ahead to PTX (`backline.triton_decoder`), linked
    /// into the persistent template (CUDA only).
    Triton {
        /// The decoder file.
        path: PathBuf,
    },
}

impl GpuFunction {
    fn kind(&self) -> u32 {
        match self {
            GpuFunction::Echo => abi::FN_ECHO,
            GpuFunction::Steane => abi::FN_STEANE,
            GpuFunction::BpOsd { .. } => abi::FN_BPOSD,
            GpuFunction::User { .. } | GpuFunction::Triton { .. } => abi::FN_USER,
        }
    }
}

/// Everything allocated for one kernel; freed only once it stopped.
struct Memory {
    device: Arc<dyn Device>,
    mapped: Vec<Mapped>,
    buffers: Vec<DeviceBuf>,
}

impl Memory {
    fn mapped(&mut self, bytes: usize) -> Result<usize> {
        self.mapped.push(self.device.alloc_mapped(bytes)?);
        Ok(self.mapped.len() - 1)
    }
    fn buffer(&mut self, bytes: usize) -> Result<u64> {
        let b = self.device.alloc_device(bytes)?;
        let dev = b.dev;
        self.buffers.push(b);
        Ok(dev)
    }
    fn release(&mut self) {
        for m in self.mapped.drain(..) {
            self.device.free_mapped(&m);
        }
        for b in self.buffers.drain(..) {
            self.device.free_device(&b);
        }
    }
}

/// The words of the control block the host touches.
#[derive(Debug, Clone, Copy)]
enum Ctl {
    Depth,
    SlotBytes,
    Stop,
    Pause,
    Paused,
    Resume,
    Running,
    Served,
    Failed,
}

/// Who uses the rings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// The proxy; the next round it sends, and the geometry in force.
    Proxy { round: u64, geometry: Geometry },
    /// A controller attached directly.
    Attached,
}

/// A running persistent kernel and its functions.
pub struct GpuCoprocessor {
    name: String,
    device: Arc<dyn Device>,
    options: GpuOptions,
    functions: Vec<(DecoderId, String)>,
    mem: Mutex<Memory>,
    req_host: NonNull<u8>,
    rep_host: NonNull<u8>,
    ctl: NonNull<BlControl>,
    launched: Mutex<Option<Box<dyn Launched>>>,
    /// The loaded kernels, kept while the kernel runs (a user kernel's library under
    /// emulation must stay mapped).
    module: Mutex<Option<Arc<dyn device::Module>>>,
    client: Mutex<Client>,
    epoch: AtomicU32,
    hung: AtomicBool,
    /// Set by `stop` (under the client lock): the rings may be gone.
    stopped: AtomicBool,
    proxy: Mutex<LatencyLog>,
}

// SAFETY: the raw pointers address mapped memory owned by `mem` for the coprocessor's whole
// life; every access to it goes through atomics (control block) or the ring protocol, and the
// mutable state is behind mutexes.
unsafe impl Send for GpuCoprocessor {}
// SAFETY: as above.
unsafe impl Sync for GpuCoprocessor {}

impl std::fmt::Debug for GpuCoprocessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCoprocessor")
            .field("name", &self.name)
            .field("device", &self.device.describe())
            .field("functions", &self.functions)
            .finish()
    }
}

/// The geometry the proxy starts with: one slot that fits `payload` bytes.
fn proxy_geometry(payload: usize) -> Geometry {
    Geometry {
        depth: 1,
        slot_bytes: Geometry::slot_bytes_for(payload),
    }
}

/// Refuses, before anything is opened, a coprocessor without functions, a decoder id given
/// twice and a ring capacity out of range.
fn check_request(options: &GpuOptions, functions: &[(DecoderId, GpuFunction)]) -> Result<()> {
    if functions.is_empty() {
        return Err(Error::Unsupported(
            "a GPU coprocessor needs a function".into(),
        ));
    }
    let mut ids: Vec<DecoderId> = functions.iter().map(|f| f.0).collect();
    ids.sort_unstable();
    if ids.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::Unsupported("a decoder id is given twice".into()));
    }
    if options.ring_capacity < 64 || options.ring_capacity > u32::MAX as usize {
        return Err(Error::Unsupported(format!(
            "ring capacity {} bytes is out of range",
            options.ring_capacity
        )));
    }
    Ok(())
}

/// Threads of the kernel's block: the option, else 1 under emulation and the default on a GPU.
fn block_threads(options: &GpuOptions, backend: Backend) -> Result<u32> {
    let threads = options.threads.unwrap_or(if backend == Backend::Emu {
        1
    } else {
        abi::DEFAULT_THREADS
    });
    if threads == 0 || threads > 1024 {
        return Err(Error::Unsupported(format!(
            "{threads} threads per block: expected 1 to 1024"
        )));
    }
    Ok(threads)
}

/// The user kernel and the Triton decoder among `functions` (at most one distinct one of
/// each), read from their files.
fn kernel_sources(
    functions: &[(DecoderId, GpuFunction)],
) -> Result<(Option<UserKernel>, Option<crate::triton::TritonDecoder>)> {
    let mut user: Option<UserKernel> = None;
    let mut triton: Option<(&PathBuf, crate::triton::TritonDecoder)> = None;
    for (_, f) in functions {
        match f {
            GpuFunction::Triton { path } => match &triton {
                Some((p, _)) if *p != path => {
                    return Err(Error::Unsupported(
                        "one GPU coprocessor takes one Triton decoder".into(),
                    ));
                }
                Some(_) => {}
                None => triton = Some((path, crate::triton::TritonDecoder::read(path)?)),
            },
            GpuFunction::User { path, function } => {
                if !crate::source::is_identifier(function) {
                    return Err(Error::Unsupported(format!(
                        "`{function}` is not a C identifier (the device function's name)"
                    )));
                }
                match &user {
                    Some(u) if u.path != *path || u.function != *function => {
                        return Err(Error::Unsupported(
                            "one GPU coprocessor takes one user kernel".into(),
                        ));
                    }
                    Some(_) => {}
                    None => user = Some(read_user_kernel(path, function)?),
                }
            }
            _ => {}
        }
    }
    Ok((user, triton.map(|(_, t)| t)))
}

/// The device function `function` of the source file `path`.
fn read_user_kernel(path: &std::path::Path, function: &str) -> Result<UserKernel> {
    let source = std::fs::read_to_string(path)
        .map_err(|e| Error::Unsupported(format!("{}: {e}", path.display())))?;
    Ok(UserKernel {
        path: path.to_path_buf(),
        source,
        function: function.to_string(),
    })
}

/// The table images of the BP+OSD functions, in order, and the largest payload any function
/// takes or gives (at least 48 bytes).
fn bposd_images(functions: &[(DecoderId, GpuFunction)]) -> Result<(Vec<BposdImage>, usize)> {
    let mut images = Vec::new();
    let mut largest = 48usize;
    for (_, f) in functions {
        if let GpuFunction::BpOsd { checks, config } = f {
            let img = BposdImage::new(checks, config)?;
            let (i, o) = img.payload_bytes();
            largest = largest.max(i).max(o);
            images.push(img);
        }
    }
    Ok((images, largest))
}

/// Where [`allocate`] put the rings, the control block and the launch arguments.
struct Layout {
    /// Index of the request ring in [`Memory::mapped`].
    req: usize,
    /// Index of the reply ring.
    rep: usize,
    /// Index of the control block.
    ctl: usize,
    /// Device address of the launch arguments.
    args: u64,
}

/// Allocates the rings, the control block and the staging buffers in `mem`, uploads the
/// function table (with each BP+OSD function's `images` entry) and the launch arguments.
fn allocate(
    mem: &mut Memory,
    options: &GpuOptions,
    functions: &[(DecoderId, GpuFunction)],
    images: &[BposdImage],
) -> Result<Layout> {
    let req = mem.mapped(options.ring_capacity)?;
    let rep = mem.mapped(options.ring_capacity)?;
    let ctl = mem.mapped(4096)?;
    let stage = MAX_SLOT_BYTES as usize;
    let stage_in = mem.buffer(stage)?;
    let stage_out = mem.buffer(stage)?;
    let fns = upload_functions(mem, functions, images)?;
    let args = BlLaunch {
        req: mem.mapped[req].dev,
        rep: mem.mapped[rep].dev,
        ctl: mem.mapped[ctl].dev,
        fns,
        stage_in,
        stage_out,
        n_fns: functions.len() as u32,
        poll_batch: 64,
        ring_capacity: options.ring_capacity as u32,
        stage_bytes: stage as u32,
    };
    let args_dev = mem.buffer(std::mem::size_of::<BlLaunch>())?;
    mem.device.upload(args_dev, bytes_of(&args))?;
    Ok(Layout {
        req,
        rep,
        ctl,
        args: args_dev,
    })
}

/// Uploads each BP+OSD function's tables and then the function table; returns the table's
/// device address.
fn upload_functions(
    mem: &mut Memory,
    functions: &[(DecoderId, GpuFunction)],
    images: &[BposdImage],
) -> Result<u64> {
    let device = mem.device.clone();
    let mut table = Vec::new();
    let mut images = images.iter();
    for (id, f) in functions {
        let data = match f {
            GpuFunction::BpOsd { .. } => {
                let img = images.next().expect("one image per BP+OSD function");
                let hdr = std::mem::size_of::<abi::BlBposd>().next_multiple_of(64);
                let base = mem.buffer(hdr + img.bytes.len())?;
                device.upload(base + hdr as u64, &img.bytes)?;
                device.upload(base, bytes_of(&img.header_at(base + hdr as u64)))?;
                base
            }
            _ => 0,
        };
        table.push(BlFunction {
            decoder_id: *id,
            kind: f.kind(),
            data,
        });
    }
    let fns = mem.buffer(table.len() * std::mem::size_of::<BlFunction>())?;
    let table_bytes: Vec<u8> = table.iter().flat_map(|f| bytes_of(f).to_vec()).collect();
    device.upload(fns, &table_bytes)?;
    Ok(fns)
}

impl GpuCoprocessor {
    /// Loads the kernels, allocates rings and tables and launches the persistent kernel
    /// serving `functions` (at most one distinct user function).
    pub fn launch(
        name: &str,
        options: GpuOptions,
        functions: Vec<(DecoderId, GpuFunction)>,
    ) -> Result<GpuCoprocessor> {
        check_request(&options, &functions)?;
        let device = device::open(options.backend, options.device)?;
        let threads = block_threads(&options, device.backend())?;
        let (user, triton) = kernel_sources(&functions)?;
        // Tables first: a refused setting fails before anything is allocated.
        let (images, largest) = bposd_images(&functions)?;
        let (module, threads) = match (&user, &triton) {
            (Some(_), Some(_)) => {
                return Err(Error::Unsupported(
                    "one GPU coprocessor takes a user kernel or a Triton decoder, not both".into(),
                ));
            }
            (Some(u), None) => (device.load_user(u)?, threads),
            // Triton's code assumes the block it was compiled for.
            (None, Some(t)) => (device.load_triton(t)?, 32 * t.num_warps),
            (None, None) => (device.load_builtin()?, threads),
        };
        let mut mem = Memory {
            device: device.clone(),
            mapped: Vec::new(),
            buffers: Vec::new(),
        };
        let layout = match allocate(&mut mem, &options, &functions, &images) {
            Ok(layout) => layout,
            Err(e) => {
                mem.release();
                return Err(e);
            }
        };
        let geometry = proxy_geometry(largest);
        let gpu = GpuCoprocessor {
            name: name.to_string(),
            functions: functions.iter().map(|(id, f)| (*id, describe(f))).collect(),
            req_host: mem.mapped[layout.req].host,
            rep_host: mem.mapped[layout.rep].host,
            ctl: mem.mapped[layout.ctl].host.cast(),
            mem: Mutex::new(mem),
            device,
            options,
            launched: Mutex::new(None),
            module: Mutex::new(Some(module.clone())),
            client: Mutex::new(Client::Proxy { round: 0, geometry }),
            epoch: AtomicU32::new(0),
            hung: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            proxy: Mutex::new(LatencyLog::default()),
        };
        gpu.start(&*module, layout.args, threads, geometry)?;
        Ok(gpu)
    }

    /// Sets the proxy's `geometry` in the control block, launches the persistent kernel with
    /// its argument block at `args` and waits until it runs.
    fn start(
        &self,
        module: &dyn device::Module,
        args: u64,
        threads: u32,
        geometry: Geometry,
    ) -> Result<()> {
        self.ctl(Ctl::Depth)
            .store(geometry.depth, Ordering::Relaxed);
        self.ctl(Ctl::SlotBytes)
            .store(geometry.slot_bytes, Ordering::Relaxed);
        // Release: the geometry is visible to the kernel's first acquire of `pause`.
        self.ctl(Ctl::Pause).store(0, Ordering::Release);
        let launched = module.launch(Entry::Persistent, args, threads)?;
        *self.launched.lock().unwrap_or_else(|p| p.into_inner()) = Some(launched);
        self.wait_for(
            || self.ctl(Ctl::Running).load(Ordering::Acquire) == 1,
            "start",
        )?;
        log::info!(
            "{} on {}: {} threads",
            self.name,
            self.device.describe(),
            threads
        );
        Ok(())
    }

    /// The description of where it runs.
    pub fn device(&self) -> String {
        self.device.describe()
    }

    /// Which runtime it runs on.
    pub fn backend(&self) -> Backend {
        self.device.backend()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `(decoder id, function)` pairs it serves.
    pub fn functions(&self) -> &[(DecoderId, String)] {
        &self.functions
    }

    /// A word of the control block.
    fn ctl(&self, word: Ctl) -> &AtomicU32 {
        let p = self.ctl.as_ptr();
        // SAFETY: the control block lives in mapped memory owned by `self.mem` for as long as
        // `self`; the field's address is taken without creating a reference to the block (the
        // kernel writes it concurrently), it is 4-aligned, and both sides only ever access it
        // atomically.
        unsafe {
            AtomicU32::from_ptr(match word {
                Ctl::Depth => &raw mut (*p).depth,
                Ctl::SlotBytes => &raw mut (*p).slot_bytes,
                Ctl::Stop => &raw mut (*p).stop,
                Ctl::Pause => &raw mut (*p).pause,
                Ctl::Paused => &raw mut (*p).paused,
                Ctl::Resume => &raw mut (*p).resume,
                Ctl::Running => &raw mut (*p).running,
                Ctl::Served => &raw mut (*p).served,
                Ctl::Failed => &raw mut (*p).failed,
            })
        }
    }

    /// Requests answered by the kernel, and of those with an error status.
    pub fn served(&self) -> (u32, u32) {
        (
            self.ctl(Ctl::Served).load(Ordering::Relaxed),
            self.ctl(Ctl::Failed).load(Ordering::Relaxed),
        )
    }

    /// Polls `cond` until it holds, the kernel ended, or the stop timeout passed.
    fn wait_for(&self, cond: impl Fn() -> bool, what: &str) -> Result<()> {
        let t0 = Instant::now();
        loop {
            if cond() {
                return Ok(());
            }
            if let Some(l) = self
                .launched
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
                && l.finished()?
            {
                return Err(Error::NotRunning(format!(
                    "the kernel returned before {what}"
                )));
            }
            if t0.elapsed() > self.options.stop_timeout {
                self.hung.store(true, Ordering::Relaxed);
                return Err(Error::NotRunning(format!(
                    "no {what} within {:?}",
                    self.options.stop_timeout
                )));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn ring(&self, host: NonNull<u8>, geometry: Geometry) -> Result<RingView> {
        // SAFETY: `host` is a page-aligned mapped allocation of `ring_capacity` bytes (checked
        // against the geometry by the callers) owned by `self.mem`; the ring protocol is
        // followed by the one client and the kernel; no doorbell (the kernel cannot wake a
        // sleeper, so waits on these rings nap and re-poll).
        unsafe { RingView::new(host, geometry, None) }
            .map_err(|e| Error::Unsupported(format!("ring geometry: {e}")))
    }

    /// Brings the kernel to round 0 with `geometry`: pause, zero both rings, resume.
    fn reset(&self, geometry: Geometry) -> Result<()> {
        if self.stopped.load(Ordering::Relaxed) {
            return Err(Error::NotRunning("it was stopped".into()));
        }
        if self.hung.load(Ordering::Relaxed) {
            return Err(Error::NotRunning("it is hung".into()));
        }
        let geometry = geometry.validate()?;
        if geometry.ring_bytes() > self.options.ring_capacity {
            return Err(Error::RingTooLarge {
                depth: geometry.depth,
                slot_bytes: geometry.slot_bytes,
                capacity: self.options.ring_capacity,
            });
        }
        let k = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        // Release: pairs with the kernel's acquire of `pause`.
        self.ctl(Ctl::Pause).store(k, Ordering::Release);
        self.wait_for(
            || self.ctl(Ctl::Paused).load(Ordering::Acquire) == k,
            "pause acknowledgement",
        )?;
        // The kernel now polls only the control block: the rings are ours to clear.
        for host in [self.req_host, self.rep_host] {
            // SAFETY: `ring_capacity` bytes of our mapped allocation, which nobody reads or
            // writes while the kernel is paused and no client is attached.
            unsafe { std::ptr::write_bytes(host.as_ptr(), 0, self.options.ring_capacity) };
        }
        self.ctl(Ctl::Depth)
            .store(geometry.depth, Ordering::Relaxed);
        self.ctl(Ctl::SlotBytes)
            .store(geometry.slot_bytes, Ordering::Relaxed);
        // Release: the zeroed rings and the geometry are visible to the kernel's acquire of
        // `resume`.
        self.ctl(Ctl::Resume).store(k, Ordering::Release);
        Ok(())
    }

    /// Serves one request through the kernel (the proxy hop): writes it into the request
    /// ring, waits for the reply, copies its payload into `out`. Returns the reply's status and
    /// length. One call at a time (calls from several threads queue on a lock).
    pub fn call(
        &self,
        decoder_id: DecoderId,
        input: &[u8],
        out: &mut [u8],
        wait: &WaitPolicy,
    ) -> Result<(Status, usize)> {
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        let Client::Proxy { geometry, .. } = *client else {
            return Err(Error::Busy);
        };
        if self.stopped.load(Ordering::Relaxed) {
            return Err(Error::NotRunning("it was stopped".into()));
        }
        if self.hung.load(Ordering::Relaxed) {
            return Err(Error::NotRunning(
                "it did not answer an earlier request".into(),
            ));
        }
        // A slot that carries the request and the largest reply the caller takes: grown (with a
        // reset of the kernel) the first time a call needs more.
        let max_payload = MAX_SLOT_BYTES as usize - backline_wire::HEADER_BYTES;
        if input.len() > max_payload {
            return Err(Error::RequestTooLarge {
                len: input.len(),
                max: max_payload,
            });
        }
        let need = input.len().max(out.len().min(max_payload));
        if need > geometry.payload_capacity() {
            let geometry = proxy_geometry(need);
            self.reset(geometry)?;
            *client = Client::Proxy { round: 0, geometry };
        }
        self.call_locked(&mut client, decoder_id, input, out, wait)
    }

    fn call_locked(
        &self,
        client: &mut Client,
        decoder_id: DecoderId,
        input: &[u8],
        out: &mut [u8],
        wait: &WaitPolicy,
    ) -> Result<(Status, usize)> {
        let Client::Proxy { round, geometry } = *client else {
            return Err(Error::Busy);
        };
        let req = self.ring(self.req_host, geometry)?;
        let rep = self.ring(self.rep_host, geometry)?;
        let seq = Seq::of_round(round);
        let t0 = Instant::now();
        req.publish(seq, Kind::Request, decoder_id, 0, input)?;
        backline_probe::mark(backline_probe::Hop::ProxyPosted);
        let m = match rep.wait(seq, wait, self.options.reply_timeout, None) {
            Ok(m) => {
                backline_probe::mark(backline_probe::Hop::ProxySeen);
                m
            }
            Err(_) => {
                self.hung.store(true, Ordering::Relaxed);
                log::error!(
                    "{}: no reply within {:?}; the kernel is considered hung",
                    self.name,
                    self.options.reply_timeout
                );
                return Err(Error::Timeout(self.options.reply_timeout));
            }
        };
        let elapsed = t0.elapsed();
        *client = Client::Proxy {
            round: round + 1,
            geometry,
        };
        let status = Status::from_u16(m.header.status).unwrap_or(Status::DecoderFailed);
        let n = m.payload.len();
        let result = match out.get_mut(..n) {
            Some(o) => {
                backline_ring::copy_small(o, m.payload);
                (status, n)
            }
            None => (Status::DecoderFailed, 0),
        };
        self.proxy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(elapsed);
        Ok(result)
    }

    /// The proxy hop's round trips so far (request written → reply seen), as
    /// `(calls, median, p99)`.
    pub fn proxy_latency(&self) -> Option<(u64, Duration, Duration)> {
        self.proxy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .summary()
    }

    /// Stops the kernel: `stop`, then up to the stop timeout for it to return. Calls fail from
    /// then on; the memory is freed when the coprocessor is dropped, and only if the kernel
    /// returned. Idempotent.
    pub fn stop(&self) -> Result<()> {
        // No client may touch the rings from here on.
        let _client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        self.stopped.store(true, Ordering::Relaxed);
        let mut launched = self.launched.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut l) = launched.take() {
            // Release: pairs with the kernel's look at `stop` (relaxed there; it only needs to
            // see the store eventually).
            self.ctl(Ctl::Stop).store(1, Ordering::Release);
            let t0 = Instant::now();
            loop {
                match l.finished() {
                    Ok(true) => break,
                    Ok(false) if t0.elapsed() < self.options.stop_timeout => {
                        std::thread::sleep(Duration::from_micros(200))
                    }
                    Ok(false) => {
                        log::warn!(
                            "{}: the kernel did not return within {:?} of stop (a function \
                             that never returns?); its memory is left to the driver",
                            self.name,
                            self.options.stop_timeout
                        );
                        // Neither the launch, its code nor the memory may be released while
                        // it runs.
                        std::mem::forget(l);
                        std::mem::forget(
                            self.module.lock().unwrap_or_else(|p| p.into_inner()).take(),
                        );
                        let mut mem = self.mem.lock().unwrap_or_else(|p| p.into_inner());
                        std::mem::take(&mut mem.mapped)
                            .into_iter()
                            .for_each(std::mem::forget);
                        std::mem::take(&mut mem.buffers)
                            .into_iter()
                            .for_each(std::mem::forget);
                        return Err(Error::NotRunning(format!(
                            "it did not stop within {:?}",
                            self.options.stop_timeout
                        )));
                    }
                    Err(e) => {
                        log::warn!("{}: {e}", self.name);
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether the kernel runs and answers.
    pub fn is_alive(&self) -> bool {
        !self.hung.load(Ordering::Relaxed)
            && !self.stopped.load(Ordering::Relaxed)
            && self
                .launched
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
                .is_some_and(|l| matches!(l.finished(), Ok(false)))
    }
}

impl Drop for GpuCoprocessor {
    fn drop(&mut self) {
        // Nothing else refers to the rings now (an attached controller holds an `Arc`). A
        // kernel that did not return keeps its memory (`stop` forgot it).
        if self.stop().is_ok() {
            self.mem.lock().unwrap_or_else(|p| p.into_inner()).release();
        }
        self.module.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

fn describe(f: &GpuFunction) -> String {
    match f {
        GpuFunction::Echo => "echo".into(),
        GpuFunction::Steane => "steane".into(),
        GpuFunction::BpOsd { checks, .. } => {
            format!("bposd ({} × {} checks)", checks.rows(), checks.cols())
        }
        GpuFunction::User { path, function } => format!("{}:{function}", path.display()),
        GpuFunction::Triton { path } => format!("triton:{}", path.display()),
    }
}

impl RingServer for GpuCoprocessor {
    fn describe(&self) -> String {
        format!("{} on {}", self.name, self.device.describe())
    }

    fn attach(&self, geometry: Geometry) -> std::result::Result<AttachedRings, AttachError> {
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        if *client == Client::Attached {
            return Err(AttachError::Busy);
        }
        let refused = |e: Error| AttachError::Refused(e.to_string());
        self.reset(geometry).map_err(refused)?;
        let rings = AttachedRings {
            req: self.ring(self.req_host, geometry).map_err(refused)?,
            rep: self.ring(self.rep_host, geometry).map_err(refused)?,
        };
        *client = Client::Attached;
        Ok(rings)
    }

    fn detach(&self) {
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        if *client != Client::Attached {
            return;
        }
        let geometry = proxy_geometry(48);
        // Back to round 0 for the proxy; a hung kernel stays hung (calls then fail fast).
        let _ = self.reset(geometry);
        *client = Client::Proxy { round: 0, geometry };
    }

    fn alive(&self) -> bool {
        self.is_alive()
    }
}
