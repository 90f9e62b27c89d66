//! Thin operating-system helpers: thread pinning, holding `/dev/cpu_dma_latency`, process
//! liveness and pre-faulting of mappings.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{Error, Result};

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(Error::Invalid(format!("CPU {cpu} is out of range")));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set; CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; the set is a valid cpu_set_t of the given size.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::Invalid(format!(
            "cannot pin to CPU {cpu} ({e}; this machine has {ncpu} CPUs available)"
        )));
    }
    Ok(())
}

/// While alive, asks the kernel to keep CPUs out of deep idle states (writes 0 to
/// `/dev/cpu_dma_latency`, which holds only while the file stays open). Cuts a blocking
/// wake-up from ~20 µs to ~2 µs on machines where it is allowed.
#[derive(Debug)]
pub struct DmaLatencyGuard {
    _file: File,
}

impl DmaLatencyGuard {
    /// Opens the device and requests 0 µs exit latency.
    pub fn hold() -> Result<DmaLatencyGuard> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .map_err(Error::io("opening /dev/cpu_dma_latency (needs root)"))?;
        f.write_all(&0i32.to_ne_bytes())
            .map_err(Error::io("writing /dev/cpu_dma_latency"))?;
        Ok(DmaLatencyGuard { _file: f })
    }
}

/// True when a process with this id exists (or exists but belongs to someone else).
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 performs the permission and existence checks only.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This process's id.
pub fn my_pid() -> u32 {
    std::process::id()
}

/// Faults in every page of `[ptr, ptr + len)` for writing without changing its contents, so
/// the first round does not take a page fault. Tries `MADV_POPULATE_WRITE`, then falls back to
/// an atomic add of zero per page (safe against a concurrent writer on the other side).
///
/// # Safety
/// `ptr` must be page-aligned and `[ptr, ptr + len)` a live writable mapping.
pub unsafe fn populate_write(ptr: *mut u8, len: usize) {
    // SAFETY: the caller guarantees the range is a live mapping; madvise does not change data.
    let rc = unsafe { libc::madvise(ptr.cast(), len, libc::MADV_POPULATE_WRITE) };
    if rc == 0 {
        return;
    }
    for off in (0..len).step_by(4096) {
        // SAFETY: each page start is 4-aligned and inside the mapping; the word is only
        // touched atomically here, and adding zero leaves any concurrent value intact.
        unsafe { AtomicU32::from_ptr(ptr.add(off).cast()) }.fetch_add(0, Ordering::Relaxed);
    }
}

/// Asks the kernel to send SIGTERM to this process when its parent exits (Linux), so a
/// server started by a benchmark never outlives it.
pub fn exit_with_parent() -> Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number and no pointers.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGTERM as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(Error::io("prctl(PR_SET_PDEATHSIG)")(
            std::io::Error::last_os_error(),
        ));
    }
    // The parent may already be gone (we were re-parented before the call).
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } == 1 {
        return Err(Error::Failed(
            "the parent process has already exited".into(),
        ));
    }
    Ok(())
}

/// Sends SIGTERM to `pid` (used to stop a server this process started).
pub fn terminate(pid: u32) -> Result<()> {
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(Error::Invalid(format!("pid {pid}")));
    }
    // SAFETY: kill takes plain integers.
    let rc = unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    if rc != 0 {
        return Err(Error::io(format!("signalling process {pid}"))(
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}
