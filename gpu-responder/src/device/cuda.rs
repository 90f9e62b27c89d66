//! NVIDIA GPUs through cudarc's driver API, loaded at run time (`libcuda.so.1`), and NVRTC
//! (`libnvrtc.so.12`, e.g. from the pip wheel `nvidia-cuda-nvrtc-cu12`; `BACKLINE_NVRTC`
//! may name the library file).
//!
//! The built-in kernels come as PTX compiled ahead (`ptx/persistent.ptx`, generated from the
//! kernel sources by NVRTC and checked by a test), so running them needs only the driver; a
//! user kernel is compiled at start-up with NVRTC. Rings live in `cuMemHostAlloc` memory
//! with `DEVICEMAP | PORTABLE` (never `WRITECOMBINED`: the CPU polls it), reached by the kernel
//! through `cuMemHostGetDevicePointer`. A persistent kernel runs on its own non-blocking
//! stream; nothing here synchronises the context while it runs.

use std::ffi::{CStr, CString, c_void};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use cudarc::driver::result as cu;
use cudarc::driver::sys;
use cudarc::nvrtc::result as nvrtc;

use super::{Backend, Device, DeviceBuf, Entry, Launched, Mapped, Module, UserKernel};
use crate::abi::SHARED_BYTES;
use crate::{Error, Result};

/// The built-in kernels, compiled ahead by NVRTC for `compute_80` (runs on sm_80 and later).
pub(crate) const BUILTIN_PTX: &str = include_str!("../../ptx/persistent.ptx");
/// The persistent template with the Triton adapter, compiled ahead with relocatable device
/// code: it declares `bl_triton_decode`, which [`crate::triton::link`] supplies.
pub(crate) const TRITON_TEMPLATE_PTX: &str = include_str!("../../ptx/persistent_triton.ptx");
/// The architecture of [`BUILTIN_PTX`].
pub(crate) const BUILTIN_ARCH: &str = "compute_80";

/// Options every kernel is compiled with: no FMA contraction (the decoders must round like
/// the CPU's), no flush-to-zero, IEEE division and square root.
pub(crate) const NVRTC_OPTIONS: &[&str] = &[
    "--fmad=false",
    "--ftz=false",
    "--prec-div=true",
    "--prec-sqrt=true",
    "-default-device",
    "--std=c++17",
];

fn driver_error(call: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
    move |e| Error::Driver {
        backend: "cuda",
        call,
        message: format!("{e:?}"),
    }
}

/// One device's primary context.
pub(crate) struct CudaDevice {
    ctx: sys::CUcontext,
    name: String,
    ordinal: u32,
}

// SAFETY: a CUDA context may be made current on any thread; every method does so first.
unsafe impl Send for CudaDevice {}
// SAFETY: as above; the driver API is thread-safe.
unsafe impl Sync for CudaDevice {}

impl CudaDevice {
    pub(crate) fn open(ordinal: u32) -> Result<CudaDevice> {
        // SAFETY: only probes whether the library loads (cudarc panics on a missing library,
        // so this check comes first).
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDriver(
                "no NVIDIA driver (libcuda.so.1 not found)".into(),
            ));
        }
        cu::init().map_err(|e| Error::NoDevice(format!("the CUDA driver did not start: {e:?}")))?;
        let count = cu::device::get_count().map_err(driver_error("cuDeviceGetCount"))?;
        if count <= 0 {
            return Err(Error::NoDevice("the CUDA driver sees no device".into()));
        }
        if ordinal as i32 >= count {
            return Err(Error::NoDevice(format!(
                "CUDA device {ordinal} does not exist ({count} found)"
            )));
        }
        let dev = cu::device::get(ordinal as i32).map_err(driver_error("cuDeviceGet"))?;
        let name = cu::device::get_name(dev).unwrap_or_else(|_| "NVIDIA GPU".into());
        // SAFETY: `dev` came from cuDeviceGet.
        let ctx = unsafe { cu::primary_ctx::retain(dev) }
            .map_err(driver_error("cuDevicePrimaryCtxRetain"))?;
        // SAFETY: `dev` came from cuDeviceGet.
        let watchdog = unsafe {
            cu::device::get_attribute(
                dev,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT,
            )
        }
        .unwrap_or(0);
        if watchdog != 0 {
            log::warn!(
                "{name} has a kernel watchdog (a display GPU): a persistent kernel may be killed"
            );
        }
        Ok(CudaDevice { ctx, name, ordinal })
    }

    fn bind(&self) -> Result<()> {
        // SAFETY: `ctx` is the retained primary context, alive as long as `self`.
        unsafe { cu::ctx::set_current(self.ctx) }.map_err(driver_error("cuCtxSetCurrent"))
    }

    fn load_ptx(&self, ptx: &str) -> Result<Arc<dyn Module>> {
        self.bind()?;
        let image = CString::new(ptx).map_err(|_| Error::Unsupported("PTX with a NUL".into()))?;
        // SAFETY: a NUL-terminated PTX image, read during the call only.
        let module = unsafe { cu::module::load_data(image.as_ptr().cast()) }
            .map_err(driver_error("cuModuleLoadData (PTX JIT)"))?;
        let get = |entry: Entry| {
            // SAFETY: `module` was just loaded and is never unloaded.
            unsafe { cu::module::get_function(module, CString::new(entry.symbol()).unwrap()) }
                .map_err(driver_error("cuModuleGetFunction"))
        };
        Ok(Arc::new(CudaModule {
            ctx: self.ctx,
            persistent: get(Entry::Persistent)?,
            floor: get(Entry::Floor)?,
        }))
    }
}

impl Device for CudaDevice {
    fn backend(&self) -> Backend {
        Backend::Cuda
    }

    fn describe(&self) -> String {
        format!("{} (cuda device {})", self.name, self.ordinal)
    }

    fn alloc_mapped(&self, bytes: usize) -> Result<Mapped> {
        self.bind()?;
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        let oom = |e: cudarc::driver::DriverError| Error::OutOfMemory {
            backend: "cuda",
            what: "mapped host memory",
            bytes,
            message: format!("{e:?}"),
        };
        // SAFETY: plain allocation; the memory is zeroed below before anyone reads it.
        let host = unsafe { cu::malloc_host(bytes.max(1), flags) }.map_err(oom)?;
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: `host` came from cuMemHostAlloc with DEVICEMAP.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: allocated above, not shared yet.
            let _ = unsafe { cu::free_host(host) };
            return Err(Error::Driver {
                backend: "cuda",
                call: "cuMemHostGetDevicePointer",
                message: format!("{r:?}"),
            });
        }
        // SAFETY: `bytes` bytes at `host` belong to this allocation.
        unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, bytes) };
        Ok(Mapped {
            host: NonNull::new(host.cast()).expect("cuMemHostAlloc returned NULL"),
            dev,
            bytes,
        })
    }

    fn alloc_device(&self, bytes: usize) -> Result<DeviceBuf> {
        self.bind()?;
        // SAFETY: plain allocation, zeroed right after.
        let dev = unsafe { cu::malloc_sync(bytes.max(1)) }.map_err(|e| Error::OutOfMemory {
            backend: "cuda",
            what: "device memory",
            bytes,
            message: format!("{e:?}"),
        })?;
        // SAFETY: the allocation is `bytes` long.
        unsafe { cu::memset_d8_sync(dev, 0, bytes) }.map_err(driver_error("cuMemsetD8"))?;
        Ok(DeviceBuf { dev, bytes })
    }

    fn upload(&self, dst: u64, bytes: &[u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: `dst` is one of our allocations, at least `bytes.len()` long.
        unsafe { cu::memcpy_htod_sync(dst, bytes) }.map_err(driver_error("cuMemcpyHtoD"))
    }

    fn free_mapped(&self, m: &Mapped) {
        if self.bind().is_ok() {
            // SAFETY: allocated by cuMemHostAlloc; no kernel uses it any more (the caller's
            // contract), freed once.
            let _ = unsafe { cu::free_host(m.host.as_ptr().cast()) };
        }
    }

    fn free_device(&self, d: &DeviceBuf) {
        if self.bind().is_ok() {
            // SAFETY: as for free_mapped.
            let _ = unsafe { cu::free_sync(d.dev) };
        }
    }

    fn load_builtin(&self) -> Result<Arc<dyn Module>> {
        self.load_ptx(BUILTIN_PTX)
    }

    fn load_user(&self, kernel: &UserKernel) -> Result<Arc<dyn Module>> {
        let source =
            crate::source::with_user(&kernel.function, &kernel.path, &kernel.source, false);
        let ptx = compile_ptx(&source, &kernel.path.display().to_string(), BUILTIN_ARCH)?;
        self.load_ptx(&ptx)
    }

    fn load_triton(&self, decoder: &crate::triton::TritonDecoder) -> Result<Arc<dyn Module>> {
        decoder.check_platform(crate::Backend::Cuda)?;
        let linked = crate::triton::link(TRITON_TEMPLATE_PTX, &decoder.ptx, &decoder.kernel)?;
        self.load_ptx(&linked)
    }
}

struct CudaModule {
    ctx: sys::CUcontext,
    persistent: sys::CUfunction,
    floor: sys::CUfunction,
}

// SAFETY: function handles of a loaded module may be used from any thread with the context
// current.
unsafe impl Send for CudaModule {}
// SAFETY: as above.
unsafe impl Sync for CudaModule {}

struct CudaLaunched {
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    done: bool,
}

// SAFETY: a stream handle may be queried from any thread with its context current.
unsafe impl Send for CudaLaunched {}

impl Module for CudaModule {
    fn launch(&self, entry: Entry, args: u64, threads: u32) -> Result<Box<dyn Launched>> {
        // SAFETY: our retained context.
        unsafe { cu::ctx::set_current(self.ctx) }.map_err(driver_error("cuCtxSetCurrent"))?;
        // A stream of its own, never the legacy default stream (which would serialise with
        // every other piece of work in the context).
        let stream = cu::stream::create(cu::stream::StreamKind::NonBlocking)
            .map_err(driver_error("cuStreamCreate"))?;
        let f = match entry {
            Entry::Persistent => self.persistent,
            Entry::Floor => self.floor,
        };
        let mut arg = args;
        let mut params = [(&mut arg as *mut u64).cast::<c_void>()];
        // SAFETY: `f` takes one pointer argument (the argument block at `args`, which the
        // coprocessor keeps alive until the kernel has stopped); the parameter array is read
        // during the call only.
        unsafe {
            cu::launch_kernel(
                f,
                (1, 1, 1),
                (threads, 1, 1),
                SHARED_BYTES,
                stream,
                &mut params,
            )
        }
        .map_err(driver_error("cuLaunchKernel"))?;
        Ok(Box::new(CudaLaunched {
            ctx: self.ctx,
            stream,
            done: false,
        }))
    }
}

impl Launched for CudaLaunched {
    fn finished(&mut self) -> Result<bool> {
        if self.done {
            return Ok(true);
        }
        // SAFETY: our context and stream.
        unsafe { cu::ctx::set_current(self.ctx) }.map_err(driver_error("cuCtxSetCurrent"))?;
        // SAFETY: a live stream handle.
        match unsafe { sys::cuStreamQuery(self.stream) } {
            sys::CUresult::CUDA_SUCCESS => {
                self.done = true;
                Ok(true)
            }
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            r => Err(Error::Driver {
                backend: "cuda",
                call: "the persistent kernel",
                message: format!("{r:?}"),
            }),
        }
    }
}

impl Drop for CudaLaunched {
    fn drop(&mut self) {
        if self.done {
            // SAFETY: the stream is idle (its kernel returned).
            let _ = unsafe { cu::stream::destroy(self.stream) };
        }
    }
}

/// Loads NVRTC once: `BACKLINE_NVRTC` (a file) first, so that the soname lookup below finds it.
fn nvrtc_loaded() -> bool {
    static LOADED: OnceLock<bool> = OnceLock::new();
    *LOADED.get_or_init(|| {
        if let Some(path) = std::env::var_os("BACKLINE_NVRTC") {
            // SAFETY: loading NVRTC runs no code of ours; kept loaded for the process.
            match unsafe {
                libloading::os::unix::Library::open(
                    Some(&path),
                    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
                )
            } {
                Ok(lib) => std::mem::forget(lib),
                Err(e) => log::warn!("BACKLINE_NVRTC={}: {e}", path.to_string_lossy()),
            }
        }
        // SAFETY: probes whether the library loads.
        unsafe { cudarc::nvrtc::sys::is_culib_present() }
    })
}

pub(crate) fn nvrtc_version() -> Option<(i32, i32)> {
    if !nvrtc_loaded() {
        return None;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-parameters.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// Compiles `source` (one translation unit, named `name` in diagnostics) to PTX for `arch`.
pub(crate) fn compile_ptx(source: &str, name: &str, arch: &str) -> Result<String> {
    compile_ptx_with(source, name, arch, &[])
}

/// [`compile_ptx`] with further NVRTC options (e.g. `-rdc=true`).
pub(crate) fn compile_ptx_with(
    source: &str,
    name: &str,
    arch: &str,
    extra: &[&str],
) -> Result<String> {
    if !nvrtc_loaded() {
        return Err(Error::NoDriver(
            "NVRTC not found (libnvrtc.so.12; `pip install nvidia-cuda-nvrtc-cu12` and add its \
             lib directory to LD_LIBRARY_PATH, or set BACKLINE_NVRTC to the library file)"
                .into(),
        ));
    }
    let fail = |log: String| Error::Compile {
        compiler: "NVRTC".into(),
        what: name.to_string(),
        log,
    };
    let src = CString::new(source).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let cname = CString::new(name).unwrap_or_else(|_| CString::new("kernel.cu").unwrap());
    let prog = nvrtc::create_program(&src, Some(&cname)).map_err(|e| fail(format!("{e:?}")))?;
    let mut options: Vec<String> = NVRTC_OPTIONS.iter().map(|s| s.to_string()).collect();
    options.push(format!("--gpu-architecture={arch}"));
    options.extend(extra.iter().map(|o| o.to_string()));
    // SAFETY: `prog` is live until destroyed below.
    let compiled = unsafe { nvrtc::compile_program(prog, &options) };
    // SAFETY: as above.
    let log = unsafe { nvrtc::get_program_log(prog) }
        .map(|l| {
            // SAFETY: NVRTC's log is NUL-terminated.
            unsafe { CStr::from_ptr(l.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    let result = match compiled {
        Ok(()) => {
            // SAFETY: as above, after a successful compilation.
            unsafe { nvrtc::get_ptx(prog) }
                .map(|p| {
                    // SAFETY: PTX from NVRTC is NUL-terminated.
                    unsafe { CStr::from_ptr(p.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                })
                .map_err(|e| fail(format!("{e:?}")))
        }
        Err(_) => Err(fail(log)),
    };
    // SAFETY: created above, destroyed once.
    let _ = unsafe { nvrtc::destroy_program(prog) };
    result
}
