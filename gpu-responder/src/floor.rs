//! The same-run floor of a GPU coprocessor: a bare persistent kernel that answers each odd
//! value the host stores into one word of mapped memory with the next even value. What is
//! left is the cost of the GPU seeing a host store and the host seeing a GPU store; a
//! coprocessor's round trip is reported as a ratio to it.

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::abi::{BlControl, BlFloor, bytes_of};
use crate::device::{self, Device, DeviceBuf, Entry, Launched, Mapped};
use crate::{Error, GpuOptions, Result};

/// A running floor kernel.
pub struct GpuFloor {
    device: Arc<dyn Device>,
    launched: Option<Box<dyn Launched>>,
    mapped: Option<Mapped>,
    args: Option<DeviceBuf>,
    word: NonNull<u32>,
    ctl: NonNull<BlControl>,
    next: u32,
    stop_timeout: Duration,
}

// SAFETY: the pointers address mapped memory owned by `self`; accessed only atomically.
unsafe impl Send for GpuFloor {}

impl GpuFloor {
    /// Launches the floor kernel on the device `options` select.
    pub fn launch(options: &GpuOptions) -> Result<GpuFloor> {
        let device = device::open(options.backend, options.device)?;
        let module = device.load_builtin()?;
        // One page: the bounced word on its own line, the control block on the next.
        let mapped = device.alloc_mapped(4096)?;
        let args = match device.alloc_device(std::mem::size_of::<BlFloor>()) {
            Ok(a) => a,
            Err(e) => {
                device.free_mapped(&mapped);
                return Err(e);
            }
        };
        let f = BlFloor {
            word: mapped.dev,
            ctl: mapped.dev + 128,
        };
        let mut floor = GpuFloor {
            word: mapped.host.cast(),
            // SAFETY: 128 bytes into a 4096-byte allocation.
            ctl: unsafe { NonNull::new_unchecked(mapped.host.as_ptr().add(128)) }.cast(),
            device,
            launched: None,
            mapped: Some(mapped),
            args: Some(args),
            next: 1,
            stop_timeout: options.stop_timeout,
        };
        let args = floor.args.as_ref().expect("set").dev;
        floor.device.upload(args, bytes_of(&f))?;
        floor.launched = Some(module.launch(Entry::Floor, args, 1)?);
        let t0 = Instant::now();
        while floor.running().load(Ordering::Acquire) != 1 {
            if t0.elapsed() > floor.stop_timeout {
                return Err(Error::NotRunning("the floor kernel did not start".into()));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        Ok(floor)
    }

    fn word(&self) -> &AtomicU32 {
        // SAFETY: the bounced word, 4-aligned in our mapped page, accessed only atomically.
        unsafe { AtomicU32::from_ptr(self.word.as_ptr()) }
    }

    fn running(&self) -> &AtomicU32 {
        // SAFETY: a field of the control block in our mapped page; no reference to the block
        // is created; accessed only atomically.
        unsafe { AtomicU32::from_ptr(&raw mut (*self.ctl.as_ptr()).running) }
    }

    fn stop_word(&self) -> &AtomicU32 {
        // SAFETY: as for `running`.
        unsafe { AtomicU32::from_ptr(&raw mut (*self.ctl.as_ptr()).stop) }
    }

    /// One bounce: store the next odd value, spin until the kernel's answer. Returns the round
    /// trip, or a timeout.
    pub fn bounce(&mut self, timeout: Duration) -> Result<Duration> {
        let want = self.next.wrapping_add(1);
        let t0 = Instant::now();
        // Release/Acquire: the kernel's acquire sees our store; our acquire sees its answer.
        self.word().store(self.next, Ordering::Release);
        let mut spins = 0u32;
        while self.word().load(Ordering::Acquire) != want {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) && t0.elapsed() > timeout {
                return Err(Error::Timeout(timeout));
            }
            std::hint::spin_loop();
        }
        let rtt = t0.elapsed();
        self.next = self.next.wrapping_add(2);
        Ok(rtt)
    }
}

impl GpuFloor {
    /// Launches a floor kernel, bounces `rounds` times and stops it: the round trips in ns.
    pub fn measure(options: &GpuOptions, rounds: u64, timeout: Duration) -> Result<Vec<f64>> {
        let mut floor = GpuFloor::launch(options)?;
        (0..rounds)
            .map(|_| floor.bounce(timeout).map(|d| d.as_secs_f64() * 1e9))
            .collect()
    }
}

impl Drop for GpuFloor {
    fn drop(&mut self) {
        self.stop_word().store(1, Ordering::Release);
        if let Some(mut l) = self.launched.take() {
            let t0 = Instant::now();
            while !matches!(l.finished(), Ok(true) | Err(_)) {
                if t0.elapsed() > self.stop_timeout {
                    // Still running: leave the launch and the memory to the driver (dropping
                    // the records frees nothing; only `free_*` does).
                    std::mem::forget(l);
                    return;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        if let Some(m) = self.mapped.take() {
            self.device.free_mapped(&m);
        }
        if let Some(a) = self.args.take() {
            self.device.free_device(&a);
        }
    }
}
