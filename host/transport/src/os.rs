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

/// Whether this process may run on `cpu` (in its affinity mask): an error that names the
/// allowed CPUs otherwise, before any thread is started on it.
pub fn check_cpu(cpu: usize) -> Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(Error::Invalid(format!("CPU {cpu} is out of range")));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; the set is a valid cpu_set_t of the given size.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Ok(()); // cannot tell: pinning itself will say
    }
    // SAFETY: `cpu` < CPU_SETSIZE (checked above).
    if unsafe { libc::CPU_ISSET(cpu, &set) } {
        return Ok(());
    }
    let allowed: Vec<String> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: each index < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c.to_string())
        .collect();
    Err(Error::Invalid(format!(
        "cannot pin to CPU {cpu}: this process may run on CPUs {}",
        allowed.join(",")
    )))
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

/// A thread name of at most 15 bytes (Linux's limit): `prefix` and as much of `key` as fits,
/// keeping its end (where keys carry what tells them apart: a pid, a number).
pub fn thread_name(prefix: &str, key: &str) -> String {
    const MAX: usize = 15;
    let room = MAX.saturating_sub(prefix.len());
    let mut start = key.len().saturating_sub(room);
    while !key.is_char_boundary(start) {
        start += 1;
    }
    let mut name = format!("{prefix}{}", &key[start..]);
    while name.len() > MAX {
        name.pop();
    }
    name
}

#[cfg(test)]
mod name_tests {
    use super::thread_name;

    #[test]
    fn names_fit_linux_and_keep_the_keys_end() {
        assert_eq!(thread_name("s1:", "serve"), "s1:serve");
        assert_eq!(thread_name("s12:", "bench-1234567890"), "s12:-1234567890");
        assert!(thread_name("s1:", "ключ-ключ-ключ").len() <= 15);
        assert_eq!(thread_name("a-very-long-prefix", "k").len(), 15);
    }
}
