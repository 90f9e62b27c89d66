//! The real board: each register block is a window of a UIO device or of `/dev/mem`,
//! mapped with memmap2 and reached only through explicit volatile 32-bit accesses.
//!
//! No reference to device memory is ever made: a reference would let the compiler add,
//! merge or drop reads, and a read of `TRACE_DATA` advances the trace read address. Each
//! access builds a safe-mmio [`UniqueMmioPointer`] to one register and performs exactly one
//! read or write through it; on aarch64 safe-mmio issues that access with inline assembly
//! (a plain volatile access may compile to a load/store form a hypervisor cannot emulate).
//!
//! Ordering: the windows are mapped uncached (UIO maps device memory non-cached; `/dev/mem`
//! is opened with `O_SYNC`), so on aarch64 they are Device-nGnRE memory. Accesses to one
//! device arrive in program order; accesses to *two* devices (the ERNIC and the HWHS) are
//! not ordered against each other. [`Mmio::barrier`] is therefore a `dsb sy` on aarch64, and
//! the drivers call it where the order between the blocks matters: after the ERNIC bring-up
//! (`QPCONF` enable) and before the first HWHS write, and before every run start.
//!
//! The `file:` backend maps ordinary files through the same code, for rehearsing the board
//! path (and for the aarch64 smoke test under qemu-user); there is no device behind it.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use memmap2::{MmapOptions, MmapRaw};
use safe_mmio::UniqueMmioPointer;
use safe_mmio::fields::ReadWrite;

use super::{Block, Mmio, MmioError, check_offset};

/// One mapped register window.
#[derive(Debug)]
pub struct Window {
    map: MmapRaw,
    /// Byte offset of register 0 inside the mapping (a `/dev/mem` base need not be
    /// page aligned; the mapping starts at the page below it).
    delta: usize,
    len: u32,
    block: Block,
    what: String,
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> MmioError {
    move |source| MmioError::Io { what, source }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

impl Window {
    /// Maps `len` bytes of `file` starting at byte `offset`.
    pub fn map(
        file: &File,
        offset: u64,
        len: u32,
        block: Block,
        what: String,
    ) -> Result<Window, MmioError> {
        let page = page_size();
        let start = offset & !(page - 1);
        let delta = (offset - start) as usize;
        let map = MmapOptions::new()
            .offset(start)
            .len(delta + len as usize)
            .map_raw(file)
            .map_err(io_err(format!("mapping {what}")))?;
        Ok(Window {
            map,
            delta,
            len,
            block,
            what,
        })
    }

    /// What is mapped (`/dev/uio0`, `/dev/mem @ 0xa0000000`).
    pub fn what(&self) -> &str {
        &self.what
    }

    /// A unique MMIO pointer to the 32-bit register at `offset`.
    fn reg(&mut self, offset: u32) -> Result<UniqueMmioPointer<'_, ReadWrite<u32>>, MmioError> {
        check_offset(self.block, offset, self.len)?;
        let base = self.map.as_mut_ptr();
        // SAFETY: `delta + offset + 4 <= delta + len`, the mapping's length (checked just
        // above), so the pointer stays inside the mapping.
        let p = unsafe { base.add(self.delta + offset as usize) };
        let p = NonNull::new(p.cast::<ReadWrite<u32>>())
            .ok_or_else(|| MmioError::Protocol("the mapping has a null base".into()))?;
        // SAFETY: `p` points at 4 bytes inside the live mapping `self.map` and is 4-byte
        // aligned (the mapping is page aligned, `delta` is the base's offset in its page and
        // the register offsets are multiples of 4 — `/dev/mem` bases are register-aligned);
        // it is mapped device memory (or, for `file:`, ordinary memory), valid for volatile
        // 32-bit reads and writes from any thread; the pointer borrows `self` mutably, so no
        // other access to the window exists while it lives; a register of this block may be
        // read and written (a write to a read-only one is the device's business, not UB).
        Ok(unsafe { UniqueMmioPointer::new(p) })
    }

    /// One volatile 32-bit read.
    pub fn read(&mut self, offset: u32) -> Result<u32, MmioError> {
        Ok(self.reg(offset)?.read())
    }

    /// One volatile 32-bit write.
    pub fn write(&mut self, offset: u32, value: u32) -> Result<(), MmioError> {
        self.reg(offset)?.write(value);
        Ok(())
    }
}

/// The board backend: the ERNIC and HWHS windows.
#[derive(Debug)]
pub struct BoardMmio {
    ernic: Window,
    hwhs: Window,
    desc: String,
}

fn open_rw(path: &Path, sync: bool) -> Result<File, MmioError> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    if sync {
        o.custom_flags(libc::O_SYNC);
    }
    o.open(path)
        .map_err(io_err(format!("opening {}", path.display())))
}

/// Finds `/dev/uioN` for a UIO device named `name` (or returns `name` if it is a path).
pub fn resolve_uio(name: &str) -> Result<PathBuf, MmioError> {
    if name.starts_with('/') {
        return Ok(PathBuf::from(name));
    }
    let dir = Path::new("/sys/class/uio");
    let entries = std::fs::read_dir(dir).map_err(io_err(format!(
        "looking up UIO device `{name}` in {} (is the UIO driver loaded?)",
        dir.display()
    )))?;
    let mut seen = Vec::new();
    for e in entries.flatten() {
        let n = std::fs::read_to_string(e.path().join("name")).unwrap_or_default();
        let dev = e.file_name().to_string_lossy().into_owned();
        if n.trim() == name {
            return Ok(PathBuf::from("/dev").join(dev));
        }
        seen.push(format!("{dev} ({})", n.trim()));
    }
    Err(MmioError::Io {
        what: format!(
            "no UIO device named `{name}` (found: {})",
            if seen.is_empty() {
                "none".into()
            } else {
                seen.join(", ")
            }
        ),
        source: std::io::ErrorKind::NotFound.into(),
    })
}

/// Size of map 0 of a UIO device, from sysfs.
fn uio_map0_size(dev: &Path) -> Option<u64> {
    let name = dev.file_name()?.to_str()?;
    let s = std::fs::read_to_string(format!("/sys/class/uio/{name}/maps/map0/size")).ok()?;
    crate::config::parse_u64(s.trim())
}

/// The least a block's window must hold: the HWHS's whole register file; for the ERNIC the
/// smallest layout's (v3.x, 256 KiB).
fn min_window(block: Block) -> u32 {
    match block {
        Block::Ernic => backline_board::ernic::Layout::V3.window_bytes(),
        Block::Hwhs => block.window_bytes(),
    }
}

/// The bytes to map of an aperture of `size` bytes (`None`: unknown): all of it up to the
/// block's largest window, and not less than the smallest.
fn window_of(block: Block, size: Option<u64>, what: &str) -> Result<u32, MmioError> {
    let (min, max) = (min_window(block), block.window_bytes());
    match size {
        None => Ok(min),
        Some(s) if s < u64::from(min) => Err(MmioError::Io {
            what: format!(
                "{what} is {s:#x} bytes, smaller than the {block}'s {min:#x}-byte register space"
            ),
            source: std::io::ErrorKind::InvalidInput.into(),
        }),
        Some(s) => Ok(s.min(u64::from(max)) as u32),
    }
}

impl BoardMmio {
    fn map_uio(name: &str, block: Block) -> Result<Window, MmioError> {
        let path = resolve_uio(name)?;
        // The aperture the block design gave the block: a v3.x ERNIC's 256 KiB or a v4.x's
        // 2 MiB (unknown without sysfs: then the smallest, which identification copes with).
        let len = window_of(
            block,
            uio_map0_size(&path),
            &format!("{}: UIO map 0", path.display()),
        )?;
        let f = open_rw(&path, false)?;
        // UIO: map N is selected by the offset N × page size; the registers are map 0.
        Window::map(&f, 0, len, block, path.display().to_string())
    }

    /// The two blocks as UIO devices (paths or names).
    pub fn uio(ernic: &str, hwhs: &str) -> Result<BoardMmio, MmioError> {
        let e = Self::map_uio(ernic, Block::Ernic)?;
        let h = Self::map_uio(hwhs, Block::Hwhs)?;
        let desc = format!("uio:{},{}", e.what(), h.what());
        Ok(BoardMmio {
            ernic: e,
            hwhs: h,
            desc,
        })
    }

    /// The two blocks as windows of `/dev/mem` at these physical addresses, the ERNIC's
    /// aperture `ernic_window` bytes.
    pub fn devmem(ernic: u64, ernic_window: u32, hwhs: u64) -> Result<BoardMmio, MmioError> {
        for (b, a) in [(Block::Ernic, ernic), (Block::Hwhs, hwhs)] {
            if !a.is_multiple_of(4) {
                return Err(MmioError::Misaligned {
                    block: b,
                    offset: (a & 3) as u32,
                });
            }
        }
        let f = open_rw(Path::new("/dev/mem"), true)?;
        let what = format!("/dev/mem @ {ernic:#x}");
        let len = window_of(Block::Ernic, Some(u64::from(ernic_window)), &what)?;
        let e = Window::map(&f, ernic, len, Block::Ernic, what)?;
        let h = Window::map(
            &f,
            hwhs,
            Block::Hwhs.window_bytes(),
            Block::Hwhs,
            format!("/dev/mem @ {hwhs:#x}"),
        )?;
        Ok(BoardMmio {
            ernic: e,
            hwhs: h,
            desc: format!("devmem:{ernic:#x},{hwhs:#x}"),
        })
    }

    /// The two blocks as plain files (at least the window size each).
    pub fn files(ernic: &str, hwhs: &str) -> Result<BoardMmio, MmioError> {
        let map = |path: &str, block: Block| {
            let f = open_rw(Path::new(path), false)?;
            let size = f
                .metadata()
                .map_err(io_err(format!("reading {path}")))?
                .len();
            let len = window_of(block, Some(size), path)?;
            Window::map(&f, 0, len, block, path.to_string())
        };
        Ok(BoardMmio {
            ernic: map(ernic, Block::Ernic)?,
            hwhs: map(hwhs, Block::Hwhs)?,
            desc: format!("file:{ernic},{hwhs}"),
        })
    }

    fn window(&mut self, block: Block) -> &mut Window {
        match block {
            Block::Ernic => &mut self.ernic,
            Block::Hwhs => &mut self.hwhs,
        }
    }
}

impl Mmio for BoardMmio {
    fn read32(&mut self, block: Block, offset: u32) -> Result<u32, MmioError> {
        self.window(block).read(offset)
    }

    fn write32(&mut self, block: Block, offset: u32, value: u32) -> Result<(), MmioError> {
        self.window(block).write(offset, value)
    }

    fn barrier(&mut self) {
        #[cfg(target_arch = "aarch64")]
        // SAFETY: `dsb sy` takes no operands and touches no memory of its own; it waits
        // until every earlier memory access (to both device windows) has completed.
        unsafe {
            std::arch::asm!("dsb sy", options(nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "aarch64"))]
        // A full fence orders the earlier volatile accesses before the later ones on the
        // CPU (mfence on x86-64) and in the compiler.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }

    fn wait(&mut self, d: Duration) -> Result<(), MmioError> {
        // Short waits spin (a sleep costs ~50 µs of wake-up); long ones sleep.
        if d >= Duration::from_millis(2) {
            std::thread::sleep(d);
            return Ok(());
        }
        let t0 = Instant::now();
        while t0.elapsed() < d {
            std::hint::spin_loop();
        }
        Ok(())
    }

    fn describe(&self) -> String {
        self.desc.clone()
    }

    fn window_bytes(&self, block: Block) -> u32 {
        match block {
            Block::Ernic => self.ernic.len,
            Block::Hwhs => self.hwhs.len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, len: u64) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("backline-apu-board-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        let f = File::create(&p).unwrap();
        f.set_len(len).unwrap();
        p
    }

    #[test]
    fn file_windows_take_volatile_accesses_in_bounds_only() {
        let e = scratch("ernic", u64::from(Block::Ernic.window_bytes()));
        let e3 = scratch("ernic-v3", 0x4_0000);
        let h = scratch("hwhs", u64::from(Block::Hwhs.window_bytes()));
        let mut b = BoardMmio::files(e.to_str().unwrap(), h.to_str().unwrap()).unwrap();
        b.write32(Block::Hwhs, 0x90, 0x424C_0001).unwrap();
        b.write32(Block::Ernic, 0x2_0300, 0xDEAD_BEEF).unwrap();
        b.barrier();
        assert_eq!(b.read32(Block::Hwhs, 0x90).unwrap(), 0x424C_0001);
        assert_eq!(b.read32(Block::Ernic, 0x2_0300).unwrap(), 0xDEAD_BEEF);
        assert!(matches!(
            b.read32(Block::Hwhs, 0x100),
            Err(MmioError::OutOfWindow { .. })
        ));
        assert!(matches!(
            b.write32(Block::Ernic, 0x2_0302, 1),
            Err(MmioError::Misaligned { .. })
        ));
        drop(b);
        // The writes went to the file, little-endian, at their offsets.
        let bytes = std::fs::read(&h).unwrap();
        assert_eq!(&bytes[0x90..0x94], &0x424C_0001u32.to_le_bytes());
        b = BoardMmio::files(e.to_str().unwrap(), h.to_str().unwrap()).unwrap();
        assert_eq!(b.read32(Block::Ernic, 0x2_0300).unwrap(), 0xDEAD_BEEF);
        assert_eq!(b.window_bytes(Block::Ernic), 0x20_0000);
        // A v3.x-sized aperture maps 256 KiB, and nothing past it is reached.
        let mut b3 = BoardMmio::files(e3.to_str().unwrap(), h.to_str().unwrap()).unwrap();
        assert_eq!(b3.window_bytes(Block::Ernic), 0x4_0000);
        assert!(matches!(
            b3.read32(Block::Ernic, 0x10_001C),
            Err(MmioError::OutOfWindow { .. })
        ));
        let small = scratch("small", 16);
        let err = BoardMmio::files(small.to_str().unwrap(), h.to_str().unwrap()).unwrap_err();
        assert!(
            err.to_string().contains("smaller than the ERNIC's"),
            "{err}"
        );
        let err = BoardMmio::uio("no-such-uio-device-name", "x").unwrap_err();
        assert!(err.to_string().contains("no-such-uio-device-name"), "{err}");
        std::fs::remove_dir_all(e.parent().unwrap()).unwrap();
    }
}
