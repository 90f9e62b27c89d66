//! The three places a persistent kernel can run, behind one trait: CUDA (cudarc, driver
//! loaded at run time), HIP (amdhip64 loaded at run time) and the host emulation (the same
//! kernel source compiled as host C++, run by CPU threads over ordinary memory).
//!
//! A [`Device`] hands out memory the host and the kernel share ([`Mapped`]: pinned, device-mapped,
//! not write-combined host memory, for anything the CPU polls) and memory only the kernel uses
//! ([`DeviceBuf`]), loads the kernels and launches them. Memory is freed only after the kernel
//! that uses it stopped (freeing can synchronise the context); see [`crate::coprocessor`].

use std::fmt;
use std::ptr::NonNull;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};

use crate::{Error, Result};

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "emu")]
pub(crate) mod emu;
#[cfg(feature = "hip")]
mod hip;

/// Which GPU runtime to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// CUDA if an NVIDIA driver loads, else HIP if ROCm loads; never the emulation.
    #[default]
    Auto,
    /// NVIDIA, through the CUDA driver API (`libcuda.so.1`).
    Cuda,
    /// AMD, through HIP (`libamdhip64.so`).
    Hip,
    /// The host emulation: the kernels run on CPU threads (for tests and machines without a GPU).
    Emu,
}

impl Backend {
    /// The name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Cuda => "cuda",
            Backend::Hip => "hip",
            Backend::Emu => "emu",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Backend> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "cuda" | "nvidia" => Ok(Backend::Cuda),
            "hip" | "rocm" | "amd" => Ok(Backend::Hip),
            "emu" | "host" | "emulation" => Ok(Backend::Emu),
            _ => Err(Error::Unsupported(format!(
                "unknown GPU backend `{s}` (expected auto, cuda, hip or emu)"
            ))),
        }
    }
}

/// Host memory the kernel reaches too: zeroed, page-aligned, not write-combined.
#[derive(Debug)]
pub(crate) struct Mapped {
    /// The host's address.
    pub host: NonNull<u8>,
    /// The device's address of the same bytes.
    pub dev: u64,
    /// Size (the emulation frees by it; CUDA and HIP keep their own).
    #[cfg_attr(not(feature = "emu"), allow(dead_code))]
    pub bytes: usize,
}

// SAFETY: a Mapped is an address range; who may touch it when is the coprocessor's protocol.
unsafe impl Send for Mapped {}
// SAFETY: as above.
unsafe impl Sync for Mapped {}

/// Memory only the kernel uses (zeroed at allocation).
#[derive(Debug)]
pub(crate) struct DeviceBuf {
    /// The device's address.
    pub dev: u64,
    /// Size (the emulation frees by it; CUDA and HIP keep their own).
    #[cfg_attr(not(feature = "emu"), allow(dead_code))]
    pub bytes: usize,
}

/// Which kernel of a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// `bl_persistent(const BlLaunch *)`.
    Persistent,
    /// `bl_floor(const BlFloor *)`.
    Floor,
}

impl Entry {
    pub(crate) const fn symbol(self) -> &'static str {
        match self {
            Entry::Persistent => "bl_persistent",
            Entry::Floor => "bl_floor",
        }
    }
}

/// A user kernel to compile into the persistent template.
#[derive(Debug, Clone)]
pub(crate) struct UserKernel {
    /// The source file (for diagnostics).
    pub path: std::path::PathBuf,
    /// Its text.
    pub source: String,
    /// The device function's name.
    pub function: String,
}

/// A GPU (or the emulation) the coprocessors of this process share.
pub(crate) trait Device: Send + Sync {
    /// `cuda`, `hip` or `emu`.
    fn backend(&self) -> Backend;
    /// A description, e.g. `NVIDIA H200 (cuda device 0)`.
    fn describe(&self) -> String;
    /// Zeroed mapped host memory (see [`Mapped`]).
    fn alloc_mapped(&self, bytes: usize) -> Result<Mapped>;
    /// Zeroed device memory.
    fn alloc_device(&self, bytes: usize) -> Result<DeviceBuf>;
    /// Copies `bytes` to device address `dst` (synchronously; never while a kernel that might
    /// read them runs).
    fn upload(&self, dst: u64, bytes: &[u8]) -> Result<()>;
    /// Frees what [`Device::alloc_mapped`] gave, once no kernel uses it.
    fn free_mapped(&self, m: &Mapped);
    /// Frees what [`Device::alloc_device`] gave, once no kernel uses it.
    fn free_device(&self, d: &DeviceBuf);
    /// The built-in kernels (echo, Steane, BP+OSD; the floor).
    fn load_builtin(&self) -> Result<Arc<dyn Module>>;
    /// The persistent template with a user device function.
    fn load_user(&self, kernel: &UserKernel) -> Result<Arc<dyn Module>>;
    /// The persistent template with a decoder written in Triton, linked from its PTX.
    fn load_triton(&self, decoder: &crate::triton::TritonDecoder) -> Result<Arc<dyn Module>> {
        decoder.check_platform(self.backend())?;
        // A HIP decoder on the HIP backend: Triton's AMD backend compiled it to a code object
        // of its own, which cannot be linked into the persistent kernel.
        Err(Error::Unsupported(format!(
            "Triton decoder `{}` ({}): the {} backend links user functions into its \
             persistent kernel from source (CoprocessorFunction.gpu_kernel); linking the code \
             object of Triton's AMD backend needs LLVM bitcode linking, which this build does \
             not do — run it on an NVIDIA GPU (a cuda: platform) or write the decoder as a \
             HIP device function",
            decoder.kernel,
            decoder.platform,
            self.backend()
        )))
    }
}

/// Loaded kernels.
pub(crate) trait Module: Send + Sync {
    /// Launches `entry` as one block of `threads` threads with the argument block at device
    /// address `args`; returns at once.
    fn launch(&self, entry: Entry, args: u64, threads: u32) -> Result<Box<dyn Launched>>;
}

/// A launched kernel.
pub(crate) trait Launched: Send {
    /// `Ok(true)` once the kernel has returned, `Ok(false)` while it runs.
    fn finished(&mut self) -> Result<bool>;
}

/// Opens (or finds, once opened) the device `ordinal` of `backend`.
pub(crate) fn open(backend: Backend, ordinal: u32) -> Result<Arc<dyn Device>> {
    type Opened = Vec<((Backend, u32), Arc<dyn Device>)>;
    static OPENED: OnceLock<Mutex<Opened>> = OnceLock::new();
    let mut opened = OPENED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let find = |opened: &Opened, b: Backend| {
        opened
            .iter()
            .find(|(k, _)| *k == (b, ordinal))
            .map(|(_, d)| d.clone())
    };
    let mut tried = Vec::new();
    let order: &[Backend] = match backend {
        Backend::Auto => &[Backend::Cuda, Backend::Hip],
        Backend::Cuda => &[Backend::Cuda],
        Backend::Hip => &[Backend::Hip],
        Backend::Emu => &[Backend::Emu],
    };
    for &b in order {
        if let Some(d) = find(&opened, b) {
            return Ok(d);
        }
        match open_one(b, ordinal) {
            Ok(d) => {
                opened.push(((b, ordinal), d.clone()));
                return Ok(d);
            }
            Err(e) if backend == Backend::Auto => tried.push(e.to_string()),
            Err(e) => return Err(e),
        }
    }
    Err(Error::NoDriver(
        tried
            .iter()
            .map(|t| t.trim_start_matches("no GPU: "))
            .collect::<Vec<_>>()
            .join("; "),
    ))
}

fn open_one(backend: Backend, ordinal: u32) -> Result<Arc<dyn Device>> {
    match backend {
        #[cfg(feature = "cuda")]
        Backend::Cuda => Ok(Arc::new(cuda::CudaDevice::open(ordinal)?)),
        #[cfg(not(feature = "cuda"))]
        Backend::Cuda => Err(Error::NoDriver(
            "backline-gpu was built without the `cuda` feature".into(),
        )),
        #[cfg(feature = "hip")]
        Backend::Hip => Ok(Arc::new(hip::HipDevice::open(ordinal)?)),
        #[cfg(not(feature = "hip"))]
        Backend::Hip => Err(Error::NoDriver(
            "backline-gpu was built without the `hip` feature".into(),
        )),
        #[cfg(feature = "emu")]
        Backend::Emu => Ok(Arc::new(emu::EmuDevice)),
        #[cfg(not(feature = "emu"))]
        Backend::Emu => Err(Error::NoDriver(
            "backline-gpu was built without the `emu` feature (the host emulation)".into(),
        )),
        Backend::Auto => unreachable!("resolved by `open`"),
    }
}

/// Compiles kernel source for CUDA with NVRTC (run time), to PTX for `arch` (e.g.
/// `compute_80`). Available without a GPU: only `libnvrtc` is needed.
#[cfg(feature = "cuda")]
pub fn nvrtc_compile(source: &str, name: &str, arch: &str) -> Result<String> {
    cuda::compile_ptx(source, name, arch)
}

/// [`nvrtc_compile`] with further options (e.g. `-rdc=true` for the Triton template).
#[cfg(feature = "cuda")]
pub fn nvrtc_compile_with(source: &str, name: &str, arch: &str, extra: &[&str]) -> Result<String> {
    cuda::compile_ptx_with(source, name, arch, extra)
}

/// The NVRTC version that would compile kernels, if NVRTC loads.
#[cfg(feature = "cuda")]
pub fn nvrtc_version() -> Option<(i32, i32)> {
    cuda::nvrtc_version()
}

/// Compiles kernel source for HIP with hiprtc (run time) into a code object for `arch` (e.g.
/// `gfx90a`). Available without a GPU: only ROCm's libraries are needed.
#[cfg(feature = "hip")]
pub fn hiprtc_compile(source: &str, name: &str, arch: &str) -> Result<Vec<u8>> {
    hip::compile(source, name, arch)
}

#[cfg(feature = "cuda")]
pub(crate) fn cuda_builtin_ptx() -> &'static str {
    cuda::BUILTIN_PTX
}

#[cfg(feature = "cuda")]
pub(crate) fn cuda_builtin_arch() -> &'static str {
    cuda::BUILTIN_ARCH
}

#[cfg(feature = "cuda")]
pub(crate) fn cuda_triton_template_ptx() -> &'static str {
    cuda::TRITON_TEMPLATE_PTX
}
