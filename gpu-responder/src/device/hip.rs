//! AMD GPUs through HIP, loaded at run time: `libamdhip64.so` for the runtime and hiprtc
//! (`libhiprtc.so`, or inside `libamdhip64` before ROCm 6) to compile the kernels for the
//! device at start-up (`BACKLINE_HIP_ARCH`, e.g. `gfx90a`, overrides the target).
//!
//! Rings live in `hipHostMalloc(Mapped | Coherent | Portable)` memory: coarse-grained host
//! memory is cached in the GPU's L2 and a mailbox in it can stay stale forever. The kernel's
//! address of it always comes from `hipHostGetDevicePointer` (it may differ from the host's).

use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use super::{Backend, Device, DeviceBuf, Entry, Launched, Mapped, Module, UserKernel};
use crate::abi::SHARED_BYTES;
use crate::{Error, Result};

type Err = i32;
type Ptr = *mut c_void;

const HIP_SUCCESS: Err = 0;
const HIP_ERROR_NOT_READY: Err = 600;
const HOST_MALLOC_PORTABLE: u32 = 0x1;
const HOST_MALLOC_MAPPED: u32 = 0x2;
const HOST_MALLOC_COHERENT: u32 = 0x4000_0000;
const STREAM_NON_BLOCKING: u32 = 0x1;

/// The runtime and hiprtc entry points used here.
struct Api {
    init: unsafe extern "C" fn(u32) -> Err,
    device_count: unsafe extern "C" fn(*mut i32) -> Err,
    set_device: unsafe extern "C" fn(i32) -> Err,
    device_name: unsafe extern "C" fn(*mut c_char, i32, i32) -> Err,
    host_malloc: unsafe extern "C" fn(*mut Ptr, usize, u32) -> Err,
    host_device_ptr: unsafe extern "C" fn(*mut Ptr, Ptr, u32) -> Err,
    host_free: unsafe extern "C" fn(Ptr) -> Err,
    malloc: unsafe extern "C" fn(*mut Ptr, usize) -> Err,
    free: unsafe extern "C" fn(Ptr) -> Err,
    memset: unsafe extern "C" fn(Ptr, i32, usize) -> Err,
    memcpy_htod: unsafe extern "C" fn(Ptr, Ptr, usize) -> Err,
    module_load_data: unsafe extern "C" fn(*mut Ptr, *const c_void) -> Err,
    module_get_function: unsafe extern "C" fn(*mut Ptr, Ptr, *const c_char) -> Err,
    #[allow(clippy::type_complexity)]
    launch: unsafe extern "C" fn(
        Ptr,
        u32,
        u32,
        u32,
        u32,
        u32,
        u32,
        u32,
        Ptr,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> Err,
    stream_create: unsafe extern "C" fn(*mut Ptr, u32) -> Err,
    stream_query: unsafe extern "C" fn(Ptr) -> Err,
    stream_destroy: unsafe extern "C" fn(Ptr) -> Err,
    error_string: unsafe extern "C" fn(Err) -> *const c_char,
    rtc: Option<Rtc>,
    _libs: Vec<libloading::Library>,
}

struct Rtc {
    create: unsafe extern "C" fn(
        *mut Ptr,
        *const c_char,
        *const c_char,
        i32,
        *const *const c_char,
        *const *const c_char,
    ) -> Err,
    compile: unsafe extern "C" fn(Ptr, i32, *const *const c_char) -> Err,
    log_size: unsafe extern "C" fn(Ptr, *mut usize) -> Err,
    log: unsafe extern "C" fn(Ptr, *mut c_char) -> Err,
    code_size: unsafe extern "C" fn(Ptr, *mut usize) -> Err,
    code: unsafe extern "C" fn(Ptr, *mut c_char) -> Err,
    destroy: unsafe extern "C" fn(*mut Ptr) -> Err,
}

fn load_first(names: &[&str]) -> Option<libloading::Library> {
    names.iter().find_map(|n| {
        // SAFETY: loading ROCm's libraries runs their initialisers only.
        unsafe { libloading::Library::new(n) }.ok()
    })
}

macro_rules! sym {
    ($lib:expr, $name:literal) => {
        // SAFETY: the symbol has the C signature of HIP's headers, which the field's type
        // spells out.
        *unsafe { $lib.get(concat!($name, "\0").as_bytes()) }
            .map_err(|e| Error::NoDriver(format!("ROCm's libraries lack {}: {e}", $name)))?
    };
}

fn load_rtc(lib: &libloading::Library) -> Result<Rtc> {
    Ok(Rtc {
        create: sym!(lib, "hiprtcCreateProgram"),
        compile: sym!(lib, "hiprtcCompileProgram"),
        log_size: sym!(lib, "hiprtcGetProgramLogSize"),
        log: sym!(lib, "hiprtcGetProgramLog"),
        code_size: sym!(lib, "hiprtcGetCodeSize"),
        code: sym!(lib, "hiprtcGetCode"),
        destroy: sym!(lib, "hiprtcDestroyProgram"),
    })
}

fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, Error>> = OnceLock::new();
    API.get_or_init(|| {
        let hip = load_first(&["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"])
            .ok_or_else(|| Error::NoDriver("no ROCm runtime (libamdhip64.so not found)".into()))?;
        let rtc_lib = load_first(&["libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5"]);
        let rtc = match &rtc_lib {
            Some(l) => load_rtc(l).ok(),
            None => load_rtc(&hip).ok(),
        };
        let api = Api {
            init: sym!(hip, "hipInit"),
            device_count: sym!(hip, "hipGetDeviceCount"),
            set_device: sym!(hip, "hipSetDevice"),
            device_name: sym!(hip, "hipDeviceGetName"),
            host_malloc: sym!(hip, "hipHostMalloc"),
            host_device_ptr: sym!(hip, "hipHostGetDevicePointer"),
            host_free: sym!(hip, "hipHostFree"),
            malloc: sym!(hip, "hipMalloc"),
            free: sym!(hip, "hipFree"),
            memset: sym!(hip, "hipMemset"),
            memcpy_htod: sym!(hip, "hipMemcpyHtoD"),
            module_load_data: sym!(hip, "hipModuleLoadData"),
            module_get_function: sym!(hip, "hipModuleGetFunction"),
            launch: sym!(hip, "hipModuleLaunchKernel"),
            stream_create: sym!(hip, "hipStreamCreateWithFlags"),
            stream_query: sym!(hip, "hipStreamQuery"),
            stream_destroy: sym!(hip, "hipStreamDestroy"),
            error_string: sym!(hip, "hipGetErrorString"),
            rtc,
            _libs: [Some(hip), rtc_lib].into_iter().flatten().collect(),
        };
        Ok(api)
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn check(api: &Api, r: Err, call: &'static str) -> Result<()> {
    if r == HIP_SUCCESS {
        return Ok(());
    }
    // SAFETY: hipGetErrorString returns a static string for any code.
    let msg = unsafe { CStr::from_ptr((api.error_string)(r)) }
        .to_string_lossy()
        .into_owned();
    Err(Error::Driver {
        backend: "hip",
        call,
        message: format!("{msg} ({r})"),
    })
}

/// One AMD device.
pub(crate) struct HipDevice {
    ordinal: u32,
    name: String,
}

impl HipDevice {
    pub(crate) fn open(ordinal: u32) -> Result<HipDevice> {
        let api = api()?;
        // SAFETY: hipInit takes a flags word (0).
        let r = unsafe { (api.init)(0) };
        if r != HIP_SUCCESS {
            // SAFETY: as in `check`.
            let msg = unsafe { CStr::from_ptr((api.error_string)(r)) }.to_string_lossy();
            return Err(Error::NoDevice(format!("ROCm sees no AMD GPU ({msg})")));
        }
        let mut count = 0;
        // SAFETY: one out-parameter.
        let r = unsafe { (api.device_count)(&mut count) };
        check(api, r, "hipGetDeviceCount")?;
        if count <= 0 || ordinal as i32 >= count {
            return Err(Error::NoDevice(format!(
                "HIP device {ordinal} does not exist ({count} found)"
            )));
        }
        let mut name = [0 as c_char; 256];
        // SAFETY: a buffer of the given length.
        let _ = unsafe { (api.device_name)(name.as_mut_ptr(), 256, ordinal as i32) };
        // SAFETY: NUL-terminated by the call (or zero-filled).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Ok(HipDevice { ordinal, name })
    }

    fn bind(&self) -> Result<&'static Api> {
        let api = api()?;
        // SAFETY: a device index that exists.
        let r = unsafe { (api.set_device)(self.ordinal as i32) };
        check(api, r, "hipSetDevice")?;
        Ok(api)
    }

    fn load_code(&self, code: &[u8]) -> Result<Arc<dyn Module>> {
        let api = self.bind()?;
        let mut module: Ptr = std::ptr::null_mut();
        // SAFETY: a code object image, read during the call.
        let r = unsafe { (api.module_load_data)(&mut module, code.as_ptr().cast()) };
        check(api, r, "hipModuleLoadData")?;
        let get = |e: Entry| -> Result<Ptr> {
            let mut f: Ptr = std::ptr::null_mut();
            let name = CString::new(e.symbol()).expect("no NUL");
            // SAFETY: a loaded module, never unloaded.
            let r = unsafe { (api.module_get_function)(&mut f, module, name.as_ptr()) };
            check(api, r, "hipModuleGetFunction")?;
            Ok(f)
        };
        Ok(Arc::new(HipModule {
            ordinal: self.ordinal,
            persistent: get(Entry::Persistent)?,
            floor: get(Entry::Floor)?,
        }))
    }
}

impl Device for HipDevice {
    fn backend(&self) -> Backend {
        Backend::Hip
    }

    fn describe(&self) -> String {
        format!("{} (hip device {})", self.name, self.ordinal)
    }

    fn alloc_mapped(&self, bytes: usize) -> Result<Mapped> {
        let api = self.bind()?;
        let mut host: Ptr = std::ptr::null_mut();
        let flags = HOST_MALLOC_MAPPED | HOST_MALLOC_COHERENT | HOST_MALLOC_PORTABLE;
        // SAFETY: plain allocation, zeroed below.
        let r = unsafe { (api.host_malloc)(&mut host, bytes.max(1), flags) };
        if r != HIP_SUCCESS || host.is_null() {
            return Err(Error::OutOfMemory {
                backend: "hip",
                what: "mapped host memory",
                bytes,
                message: format!("hipHostMalloc returned {r}"),
            });
        }
        let mut dev: Ptr = std::ptr::null_mut();
        // SAFETY: `host` came from hipHostMalloc with Mapped.
        let r = unsafe { (api.host_device_ptr)(&mut dev, host, 0) };
        if let Err(e) = check(api, r, "hipHostGetDevicePointer") {
            // SAFETY: allocated above, not shared.
            let _ = unsafe { (api.host_free)(host) };
            return Err(e);
        }
        // SAFETY: `bytes` bytes of our allocation.
        unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, bytes) };
        Ok(Mapped {
            host: NonNull::new(host.cast()).expect("checked"),
            dev: dev as u64,
            bytes,
        })
    }

    fn alloc_device(&self, bytes: usize) -> Result<DeviceBuf> {
        let api = self.bind()?;
        let mut dev: Ptr = std::ptr::null_mut();
        // SAFETY: plain allocation, zeroed below.
        let r = unsafe { (api.malloc)(&mut dev, bytes.max(1)) };
        if r != HIP_SUCCESS {
            return Err(Error::OutOfMemory {
                backend: "hip",
                what: "device memory",
                bytes,
                message: format!("hipMalloc returned {r}"),
            });
        }
        // SAFETY: our allocation of `bytes` bytes.
        let r = unsafe { (api.memset)(dev, 0, bytes) };
        check(api, r, "hipMemset")?;
        Ok(DeviceBuf {
            dev: dev as u64,
            bytes,
        })
    }

    fn upload(&self, dst: u64, bytes: &[u8]) -> Result<()> {
        let api = self.bind()?;
        // SAFETY: `dst` is one of our allocations, at least `bytes.len()` long.
        let r = unsafe { (api.memcpy_htod)(dst as Ptr, bytes.as_ptr() as Ptr, bytes.len()) };
        check(api, r, "hipMemcpyHtoD")
    }

    fn free_mapped(&self, m: &Mapped) {
        if let Ok(api) = self.bind() {
            // SAFETY: from hipHostMalloc; no kernel uses it any more; freed once.
            let _ = unsafe { (api.host_free)(m.host.as_ptr().cast()) };
        }
    }

    fn free_device(&self, d: &DeviceBuf) {
        if let Ok(api) = self.bind() {
            // SAFETY: from hipMalloc; as above.
            let _ = unsafe { (api.free)(d.dev as Ptr) };
        }
    }

    fn load_builtin(&self) -> Result<Arc<dyn Module>> {
        let arch = std::env::var("BACKLINE_HIP_ARCH").ok();
        let code = compile(
            &crate::source::builtin(),
            "persistent.cu",
            arch.as_deref().unwrap_or(""),
        )?;
        self.load_code(&code)
    }

    fn load_user(&self, kernel: &UserKernel) -> Result<Arc<dyn Module>> {
        let source =
            crate::source::with_user(&kernel.function, &kernel.path, &kernel.source, false);
        let arch = std::env::var("BACKLINE_HIP_ARCH").ok();
        let code = compile(
            &source,
            &kernel.path.display().to_string(),
            arch.as_deref().unwrap_or(""),
        )?;
        self.load_code(&code)
    }
}

/// Compiles one translation unit with hiprtc into a code object for `arch` (the current
/// device's when empty).
pub(crate) fn compile(source: &str, name: &str, arch: &str) -> Result<Vec<u8>> {
    let api = api()?;
    let rtc = api.rtc.as_ref().ok_or_else(|| {
        Error::NoDriver("hiprtc not found (libhiprtc.so, or libamdhip64 of ROCm 5)".into())
    })?;
    let fail = |log: String| Error::Compile {
        compiler: "hiprtc".into(),
        what: name.to_string(),
        log,
    };
    let src = CString::new(source).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let cname = CString::new(name).unwrap_or_else(|_| CString::new("kernel.hip").unwrap());
    let mut prog: Ptr = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings, no headers.
    let r = unsafe {
        (rtc.create)(
            &mut prog,
            src.as_ptr(),
            cname.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(fail(format!("hiprtcCreateProgram returned {r}")));
    }
    let mut opts = vec![
        CString::new("-ffp-contract=off").unwrap(),
        CString::new("-std=c++17").unwrap(),
        CString::new("-O3").unwrap(),
    ];
    if !arch.is_empty() {
        opts.push(
            CString::new(format!("--offload-arch={arch}")).map_err(|_| fail("bad arch".into()))?,
        );
    }
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: a live program and an option array of `ptrs.len()` strings.
    let compiled = unsafe { (rtc.compile)(prog, ptrs.len() as i32, ptrs.as_ptr()) };
    let mut size = 0usize;
    // SAFETY: a live program; the buffer has the size the call reported.
    let log = unsafe {
        if (rtc.log_size)(prog, &mut size) == 0 && size > 1 {
            let mut buf = vec![0 as c_char; size];
            (rtc.log)(prog, buf.as_mut_ptr());
            CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
        } else {
            String::new()
        }
    };
    let result = if compiled != 0 {
        Err(fail(log))
    } else {
        let mut size = 0usize;
        // SAFETY: as above.
        unsafe {
            if (rtc.code_size)(prog, &mut size) != 0 {
                Err(fail("hiprtcGetCodeSize failed".into()))
            } else {
                let mut code = vec![0u8; size];
                (rtc.code)(prog, code.as_mut_ptr().cast());
                Ok(code)
            }
        }
    };
    // SAFETY: created above, destroyed once.
    unsafe { (rtc.destroy)(&mut prog) };
    result
}

struct HipModule {
    ordinal: u32,
    persistent: Ptr,
    floor: Ptr,
}

// SAFETY: function handles of a loaded module may be used from any thread.
unsafe impl Send for HipModule {}
// SAFETY: as above.
unsafe impl Sync for HipModule {}

struct HipLaunched {
    ordinal: u32,
    stream: Ptr,
    done: bool,
}

// SAFETY: a stream may be queried from any thread.
unsafe impl Send for HipLaunched {}

impl Module for HipModule {
    fn launch(&self, entry: Entry, args: u64, threads: u32) -> Result<Box<dyn Launched>> {
        let api = api()?;
        // SAFETY: a device index that exists.
        let r = unsafe { (api.set_device)(self.ordinal as i32) };
        check(api, r, "hipSetDevice")?;
        let mut stream: Ptr = std::ptr::null_mut();
        // SAFETY: one out-parameter.
        let r = unsafe { (api.stream_create)(&mut stream, STREAM_NON_BLOCKING) };
        check(api, r, "hipStreamCreateWithFlags")?;
        let f = match entry {
            Entry::Persistent => self.persistent,
            Entry::Floor => self.floor,
        };
        let mut arg = args;
        let mut params = [(&mut arg as *mut u64).cast::<c_void>()];
        // SAFETY: `f` takes one pointer argument, kept alive by the coprocessor until the
        // kernel stopped; the parameter array is read during the call.
        let r = unsafe {
            (api.launch)(
                f,
                1,
                1,
                1,
                threads,
                1,
                1,
                SHARED_BYTES,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(api, r, "hipModuleLaunchKernel")?;
        Ok(Box::new(HipLaunched {
            ordinal: self.ordinal,
            stream,
            done: false,
        }))
    }
}

impl Launched for HipLaunched {
    fn finished(&mut self) -> Result<bool> {
        if self.done {
            return Ok(true);
        }
        let api = api()?;
        // SAFETY: a device that exists, a live stream.
        unsafe { (api.set_device)(self.ordinal as i32) };
        // SAFETY: as above.
        match unsafe { (api.stream_query)(self.stream) } {
            HIP_SUCCESS => {
                self.done = true;
                Ok(true)
            }
            HIP_ERROR_NOT_READY => Ok(false),
            r => check(api, r, "the persistent kernel").map(|_| false),
        }
    }
}

impl Drop for HipLaunched {
    fn drop(&mut self) {
        if self.done
            && let Ok(api) = api()
        {
            // SAFETY: the stream is idle.
            let _ = unsafe { (api.stream_destroy)(self.stream) };
        }
    }
}
