//! The host emulation: the kernel source compiled as host C++, one block run by CPU threads.
//!
//! "Device" and "mapped" memory are both ordinary zeroed heap memory, and a device address is
//! the host address, so the kernels, the rings and the protocol are exactly those of a GPU
//! run; what differs is `port.h`'s mapping of the memory operations to C++ atomics. The
//! built-in kernels are compiled by `build.rs` and linked in; a user kernel is compiled at
//! start-up by the host C++ compiler (`CXX`, default `c++`) into a shared library.

use std::alloc::Layout;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use super::{Backend, Device, DeviceBuf, Entry, Launched, Mapped, Module, UserKernel};
use crate::abi::{BlFloor, BlLaunch, SHARED_BYTES};
use crate::{Error, Result};

type RunPersistent = unsafe extern "C" fn(*const BlLaunch, u32) -> i32;
type RunFloor = unsafe extern "C" fn(*const BlFloor) -> i32;
type SharedBytes = unsafe extern "C" fn() -> u32;

// SAFETY: the symbols of the static library build.rs compiles from kernels/emu.cpp, with
// these C signatures.
unsafe extern "C" {
    fn bl_emu_run_persistent(a: *const BlLaunch, nthreads: u32) -> i32;
    fn bl_emu_run_floor(f: *const BlFloor) -> i32;
    fn bl_emu_shared_bytes() -> u32;
}

/// The host emulation "device".
pub(crate) struct EmuDevice;

fn layout(bytes: usize) -> Result<Layout> {
    Layout::from_size_align(bytes.max(1), 4096).map_err(|_| Error::OutOfMemory {
        backend: "emu",
        what: "memory",
        bytes,
        message: "size overflows".into(),
    })
}

fn alloc(bytes: usize, what: &'static str) -> Result<NonNull<u8>> {
    let l = layout(bytes)?;
    // SAFETY: the layout has a non-zero size.
    NonNull::new(unsafe { std::alloc::alloc_zeroed(l) }).ok_or(Error::OutOfMemory {
        backend: "emu",
        what,
        bytes,
        message: "the allocator refused".into(),
    })
}

impl Device for EmuDevice {
    fn backend(&self) -> Backend {
        Backend::Emu
    }

    fn describe(&self) -> String {
        "host emulation (kernels on CPU threads)".into()
    }

    fn alloc_mapped(&self, bytes: usize) -> Result<Mapped> {
        let host = alloc(bytes, "mapped host memory")?;
        Ok(Mapped {
            host,
            dev: host.as_ptr() as u64,
            bytes,
        })
    }

    fn alloc_device(&self, bytes: usize) -> Result<DeviceBuf> {
        let p = alloc(bytes, "device memory")?;
        Ok(DeviceBuf {
            dev: p.as_ptr() as u64,
            bytes,
        })
    }

    fn upload(&self, dst: u64, bytes: &[u8]) -> Result<()> {
        // SAFETY: `dst` is an allocation of this device at least `bytes.len()` long (the
        // callers upload into their own buffers), and no kernel reads it meanwhile.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, bytes.len()) };
        Ok(())
    }

    fn free_mapped(&self, m: &Mapped) {
        // SAFETY: allocated by `alloc` with this size; freed once.
        unsafe { std::alloc::dealloc(m.host.as_ptr(), layout(m.bytes).expect("allocated")) };
    }

    fn free_device(&self, d: &DeviceBuf) {
        // SAFETY: as for `free_mapped`.
        unsafe { std::alloc::dealloc(d.dev as *mut u8, layout(d.bytes).expect("allocated")) };
    }

    fn load_builtin(&self) -> Result<Arc<dyn Module>> {
        // SAFETY: a pure function of the linked library.
        let shared = unsafe { bl_emu_shared_bytes() };
        assert!(shared <= SHARED_BYTES, "BlShared outgrew SHARED_BYTES");
        Ok(Arc::new(EmuModule {
            persistent: bl_emu_run_persistent,
            floor: bl_emu_run_floor,
            _lib: None,
        }))
    }

    fn load_user(&self, kernel: &UserKernel) -> Result<Arc<dyn Module>> {
        let lib = compile_user(kernel)?;
        // SAFETY: the library was just compiled from the template, which defines these
        // symbols with these signatures; it runs no initialisers besides the C++ runtime's.
        unsafe {
            let lib = libloading::Library::new(&lib.path).map_err(|e| Error::Compile {
                compiler: "the host C++ compiler".into(),
                what: kernel.path.display().to_string(),
                log: format!("cannot load the compiled kernel: {e}"),
            })?;
            let persistent = *lib
                .get::<RunPersistent>(b"bl_emu_run_persistent\0")
                .map_err(|e| Error::Unsupported(e.to_string()))?;
            let floor = *lib
                .get::<RunFloor>(b"bl_emu_run_floor\0")
                .map_err(|e| Error::Unsupported(e.to_string()))?;
            let shared = *lib
                .get::<SharedBytes>(b"bl_emu_shared_bytes\0")
                .map_err(|e| Error::Unsupported(e.to_string()))?;
            if shared() > SHARED_BYTES {
                return Err(Error::Unsupported("BlShared outgrew SHARED_BYTES".into()));
            }
            Ok(Arc::new(EmuModule {
                persistent,
                floor,
                _lib: Some(lib),
            }))
        }
    }
}

/// A compiled user kernel on disk; the directory is removed when dropped.
struct Compiled {
    dir: PathBuf,
    path: PathBuf,
}

impl Drop for Compiled {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn compile_user(kernel: &UserKernel) -> Result<Compiled> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "backline-gpu-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let fail = |log: String| Error::Compile {
        compiler: compiler.clone(),
        what: kernel.path.display().to_string(),
        log,
    };
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    let compiled = Compiled {
        path: dir.join("kernel.so"),
        dir,
    };
    let source = crate::source::with_user(&kernel.function, &kernel.path, &kernel.source, true);
    let mut child = Command::new(&compiler)
        .args(["-std=c++17", "-O2", "-ffp-contract=off", "-fPIC", "-shared"])
        .args(["-pthread", "-Wl,-Bsymbolic", "-x", "c++", "-", "-o"])
        .arg(&compiled.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("cannot run `{compiler}`: {e}")))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(source.as_bytes())
            .map_err(|e| fail(format!("writing the source to `{compiler}`: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| fail(format!("waiting for `{compiler}`: {e}")))?;
    if !out.status.success() {
        return Err(fail(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    Ok(compiled)
}

struct EmuModule {
    persistent: RunPersistent,
    floor: RunFloor,
    /// Keeps a user kernel's library loaded (its directory is removed once loaded).
    _lib: Option<libloading::Library>,
}

struct EmuLaunched {
    thread: Option<JoinHandle<i32>>,
}

impl Module for EmuModule {
    fn launch(&self, entry: Entry, args: u64, threads: u32) -> Result<Box<dyn Launched>> {
        let (persistent, floor) = (self.persistent, self.floor);
        let name = match entry {
            Entry::Persistent => "backline-gpuemu",
            Entry::Floor => "backline-gpuflr",
        };
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || match entry {
                // SAFETY: `args` is the device (= host) address of a BlLaunch / BlFloor that
                // the coprocessor keeps alive until the kernel returned.
                Entry::Persistent => unsafe { persistent(args as *const BlLaunch, threads) },
                // SAFETY: as above.
                Entry::Floor => unsafe { floor(args as *const BlFloor) },
            })
            .map_err(|e| Error::Driver {
                backend: "emu",
                call: "spawning the kernel thread",
                message: e.to_string(),
            })?;
        Ok(Box::new(EmuLaunched {
            thread: Some(thread),
        }))
    }
}

impl Launched for EmuLaunched {
    fn finished(&mut self) -> Result<bool> {
        match &self.thread {
            Some(t) if !t.is_finished() => Ok(false),
            Some(_) => {
                let code = self.thread.take().expect("some").join().unwrap_or(-3);
                if code != 0 {
                    return Err(Error::Driver {
                        backend: "emu",
                        call: "the kernel's block",
                        message: format!("could not start its threads (code {code})"),
                    });
                }
                Ok(true)
            }
            None => Ok(true),
        }
    }
}

impl Drop for EmuLaunched {
    fn drop(&mut self) {
        // A kernel still running is left to the process (it may be hung in user code); one
        // that finished is joined.
        if let Some(t) = self.thread.take()
            && t.is_finished()
        {
            let _ = t.join();
        }
    }
}
