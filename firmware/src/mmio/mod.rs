//! The register layer: 32-bit reads and writes by byte offset into one of the board's two
//! AXI4-Lite register blocks, behind the [`Mmio`] trait, with three backends:
//!
//! * [`board`] — the real board: a UIO device or a `/dev/mem` window mapped with memmap2,
//!   reached only through explicit volatile accesses (safe-mmio), never through references;
//! * [`sim`] (feature `sim`) — a client of `backline-apu sim-board` over a Unix socket;
//! * [`fake`] — plain memory (or any [`backline_board::ErnicRegs`], such as the simulated
//!   board's rule-checking ERNIC model) and a write log, for unit tests.
//!
//! Everything above this module (bring-up, the HWHS driver, the CLI) is generic over
//! [`Mmio`], so the same sequence runs in tests, against the simulator and on the board.
//!
//! Besides reads and writes a backend offers two things the drivers need:
//! [`Mmio::barrier`] (every earlier access reaches its device before any later one; needed
//! when the driver moves from one block to the other, because the two blocks are different
//! devices and device-memory ordering only holds within one) and [`Mmio::wait`] (let device
//! time pass: a spin on the board, simulated cycles in the simulator).

pub mod board;
pub mod fake;
#[cfg(feature = "sim")]
pub mod sim;

use std::fmt;
use std::time::Duration;

pub use backline_board::{Access, Block, Op};

/// Why a register access failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MmioError {
    /// The offset lies outside the block's mapped window.
    #[error("{block} offset {offset:#x} is outside the {len:#x}-byte window")]
    OutOfWindow {
        /// Which block.
        block: Block,
        /// Byte offset.
        offset: u32,
        /// Bytes mapped.
        len: u32,
    },
    /// The offset is not a multiple of 4.
    #[error("{block} offset {offset:#x} is not 32-bit aligned")]
    Misaligned {
        /// Which block.
        block: Block,
        /// Byte offset.
        offset: u32,
    },
    /// The bus answered with an error (SLVERR, DECERR, no register there, read-only).
    #[error("{block} {op} of {} failed on the bus: {detail}", block.register_name(*offset))]
    Bus {
        /// Which block.
        block: Block,
        /// Byte offset.
        offset: u32,
        /// Read or write.
        op: Op,
        /// What the bus (or the model of it) said.
        detail: String,
    },
    /// The simulated board refused the access because it breaks the bring-up rules of its
    /// ERNIC model (`backline_sim::board::ernic`); a real board would misbehave silently
    /// instead.
    #[error("the ERNIC model refused the {block} {op} of {}: {reason}", block.register_name(*offset))]
    Refused {
        /// Which block.
        block: Block,
        /// Byte offset.
        offset: u32,
        /// Read or write.
        op: Op,
        /// The rule that was broken.
        reason: String,
    },
    /// A system call of the backend failed (mapping, socket).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The simulated board's socket answered something this build does not understand.
    #[error("sim-board protocol: {0}")]
    Protocol(String),
}

impl MmioError {
    /// The error without the register it concerns (for messages that name it already).
    pub fn detail(&self) -> String {
        match self {
            MmioError::Bus { detail, .. } => format!("bus error: {detail}"),
            MmioError::Refused { reason, .. } => {
                format!("refused by the ERNIC model: {reason}")
            }
            other => other.to_string(),
        }
    }
}

/// What a simulated board knows about its rounds' time ([`Mmio::fabric_splits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricSplits {
    /// `(fabric, service)` cycles per round, by round number since the last soft reset.
    pub parts: Vec<(u64, u64)>,
    /// The fabric model's one-way latency, cycles.
    pub fabric_latency_cycles: u64,
    /// Where the service time comes from: `measured: the coprocessor at udp:…` or
    /// `modelled: echo, 40 cycles`.
    pub service: String,
}

/// 32-bit register access to the board's two register blocks.
///
/// Implementations perform each access exactly once, in program order within a block, and
/// never merge, split or repeat accesses (a read may have side effects: `TRACE_DATA`).
pub trait Mmio {
    /// Reads the 32-bit register at byte `offset` of `block`.
    fn read32(&mut self, block: Block, offset: u32) -> Result<u32, MmioError>;

    /// Writes the 32-bit register at byte `offset` of `block`.
    fn write32(&mut self, block: Block, offset: u32, value: u32) -> Result<(), MmioError>;

    /// Reads the same register `out.len()` times (a FIFO-style port such as `TRACE_DATA`).
    fn read_repeat(&mut self, block: Block, offset: u32, out: &mut [u32]) -> Result<(), MmioError> {
        for v in out {
            *v = self.read32(block, offset)?;
        }
        Ok(())
    }

    /// Orders every earlier access before every later one, across both blocks.
    fn barrier(&mut self);

    /// Lets at least `d` of device time pass (a spin on the board, simulated cycles in the
    /// simulator). Drivers call it between status polls, so a poll loop bounded by a count
    /// of waits is bounded in device time on every backend.
    fn wait(&mut self, d: Duration) -> Result<(), MmioError>;

    /// What this backend is connected to (`sim:/tmp/board.sock`, `uio:/dev/uio0,/dev/uio1`).
    fn describe(&self) -> String;

    /// True for the simulator backend (long quiet periods are then fast-forwarded by default).
    fn is_simulated(&self) -> bool {
        false
    }

    /// Bytes of `block` this backend reaches: offsets at or past it are never accessed. On
    /// the board this is the aperture the block design gave the block (a UIO map's size), so
    /// that identification does not read past a v3.x ERNIC's 256 KiB into addresses no
    /// slave decodes (a bus error there is a SIGBUS, not an error value).
    fn window_bytes(&self, block: Block) -> u32 {
        block.window_bytes()
    }

    /// The modelled fabric's and the remote side's cycles of each round since the last soft
    /// reset — known only to a simulated board (`None` elsewhere: on a board the RTT is one
    /// number).
    fn fabric_splits(&mut self) -> Result<Option<FabricSplits>, MmioError> {
        Ok(None)
    }
}

/// `Mmio` for a pointer to one: every method forwards.
macro_rules! forward_mmio {
    ($($ty:ty),*) => {$(
        impl<M: Mmio + ?Sized> Mmio for $ty {
            fn read32(&mut self, block: Block, offset: u32) -> Result<u32, MmioError> {
                (**self).read32(block, offset)
            }
            fn write32(&mut self, block: Block, offset: u32, value: u32) -> Result<(), MmioError> {
                (**self).write32(block, offset, value)
            }
            fn read_repeat(
                &mut self,
                block: Block,
                offset: u32,
                out: &mut [u32],
            ) -> Result<(), MmioError> {
                (**self).read_repeat(block, offset, out)
            }
            fn barrier(&mut self) {
                (**self).barrier()
            }
            fn wait(&mut self, d: Duration) -> Result<(), MmioError> {
                (**self).wait(d)
            }
            fn describe(&self) -> String {
                (**self).describe()
            }
            fn is_simulated(&self) -> bool {
                (**self).is_simulated()
            }
            fn window_bytes(&self, block: Block) -> u32 {
                (**self).window_bytes(block)
            }
            fn fabric_splits(&mut self) -> Result<Option<FabricSplits>, MmioError> {
                (**self).fabric_splits()
            }
        }
    )*};
}

forward_mmio!(Box<M>, &mut M);

/// Checks that `offset` is aligned and inside a window of `len` bytes.
pub(crate) fn check_offset(block: Block, offset: u32, len: u32) -> Result<(), MmioError> {
    if !offset.is_multiple_of(4) {
        return Err(MmioError::Misaligned { block, offset });
    }
    if offset.checked_add(4).is_none_or(|end| end > len) {
        return Err(MmioError::OutOfWindow { block, offset, len });
    }
    Ok(())
}

/// The ERNIC apertures a `devmem:` backend accepts: each layout's window.
fn window_choices() -> String {
    backline_board::ernic::Layout::ALL
        .map(|l| format!("{}K", l.window_bytes() / 1024))
        .join(", ")
}

/// `256K`, `2M` or a byte count, if it is one of the layouts' windows.
fn parse_window(s: &str) -> Option<u32> {
    let t = s.trim();
    let v = if let Some(k) = t.strip_suffix(['K', 'k']) {
        crate::config::parse_u64(k)?.checked_mul(1024)?
    } else if let Some(m) = t.strip_suffix(['M', 'm']) {
        crate::config::parse_u64(m)?.checked_mul(1 << 20)?
    } else {
        crate::config::parse_u64(t)?
    };
    backline_board::ernic::Layout::ALL
        .into_iter()
        .map(|l| l.window_bytes())
        .find(|&w| u64::from(w) == v)
}

/// Where a backend reaches the board: parsed from `--backend`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendSpec {
    /// `uio:ERNIC,HWHS` — two UIO devices, each a `/dev/uioN` path or a UIO name looked up
    /// in `/sys/class/uio/*/name`.
    Uio {
        /// The ERNIC's device.
        ernic: String,
        /// The HWHS's device.
        hwhs: String,
    },
    /// `devmem:0xERNIC[/SIZE],0xHWHS` — windows of `/dev/mem` at these physical addresses;
    /// `SIZE` (`256K`, `2M`, bytes) is the ERNIC's aperture in the block design, by default
    /// the default layout's window (2 MiB, ERNIC v4.x).
    DevMem {
        /// Physical base of the ERNIC's register space.
        ernic: u64,
        /// Bytes of the ERNIC's aperture.
        ernic_window: u32,
        /// Physical base of the HWHS's register file.
        hwhs: u64,
    },
    /// `file:ERNIC_PATH,HWHS_PATH` — plain files mapped like device windows (bring-up
    /// rehearsal and smoke tests of the board code path; no device behind them).
    File {
        /// File standing for the ERNIC window.
        ernic: String,
        /// File standing for the HWHS window.
        hwhs: String,
    },
    /// `sim:SOCKET` — a `backline-apu sim-board` listening on this Unix socket.
    Sim {
        /// Socket path.
        socket: String,
    },
}

impl BackendSpec {
    /// The backend used when none is given: the board's UIO devices named `ernic` and `hwhs`.
    pub const DEFAULT: &'static str = "uio:ernic,hwhs";

    /// Parses `uio:A,B`, `devmem:0xA[/SIZE],0xB`, `file:A,B` or `sim:PATH`.
    pub fn parse(s: &str) -> Result<BackendSpec, String> {
        let (kind, rest) = s.split_once(':').ok_or_else(|| {
            format!("backend `{s}`: expected uio:…, devmem:…, file:… or sim:PATH")
        })?;
        let pair = |rest: &str| -> Result<(String, String), String> {
            match rest.split_once(',') {
                Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok((a.into(), b.into())),
                _ => Err(format!(
                    "backend `{s}`: expected two comma-separated parts (ERNIC first, then HWHS)"
                )),
            }
        };
        match kind {
            "uio" => pair(rest).map(|(ernic, hwhs)| BackendSpec::Uio { ernic, hwhs }),
            "file" => pair(rest).map(|(ernic, hwhs)| BackendSpec::File { ernic, hwhs }),
            "devmem" => {
                let (a, b) = pair(rest)?;
                let num = |t: &str| {
                    crate::config::parse_u64(t)
                        .ok_or_else(|| format!("backend `{s}`: `{t}` is not an address"))
                };
                let (base, size) = match a.split_once('/') {
                    Some((base, size)) => (base, Some(size)),
                    None => (a.as_str(), None),
                };
                let ernic_window = match size {
                    None => backline_board::ernic::Layout::DEFAULT.window_bytes(),
                    Some(z) => parse_window(z).ok_or_else(|| {
                        format!(
                            "backend `{s}`: ERNIC aperture `{z}` is not one of {} (256K for \
                             ERNIC v3.x, 2M for v4.x)",
                            window_choices()
                        )
                    })?,
                };
                Ok(BackendSpec::DevMem {
                    ernic: num(base)?,
                    ernic_window,
                    hwhs: num(&b)?,
                })
            }
            "sim" if !rest.is_empty() => Ok(BackendSpec::Sim {
                socket: rest.into(),
            }),
            "sim" => Err(format!("backend `{s}`: sim needs a socket path (sim:PATH)")),
            _ => Err(format!(
                "backend `{s}`: unknown kind `{kind}` (uio, devmem, file or sim)"
            )),
        }
    }

    /// Opens the backend.
    pub fn open(&self) -> Result<Box<dyn Mmio + Send>, MmioError> {
        Ok(match self {
            BackendSpec::Uio { ernic, hwhs } => Box::new(board::BoardMmio::uio(ernic, hwhs)?),
            BackendSpec::DevMem {
                ernic,
                ernic_window,
                hwhs,
            } => Box::new(board::BoardMmio::devmem(*ernic, *ernic_window, *hwhs)?),
            BackendSpec::File { ernic, hwhs } => Box::new(board::BoardMmio::files(ernic, hwhs)?),
            #[cfg(feature = "sim")]
            BackendSpec::Sim { socket } => Box::new(sim::SimMmio::connect(socket)?),
            #[cfg(not(feature = "sim"))]
            BackendSpec::Sim { .. } => {
                return Err(MmioError::Protocol(
                    "this build has no simulator backend (built without the `sim` feature, as \
                     the board build is)"
                        .into(),
                ));
            }
        })
    }
}

impl fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendSpec::Uio { ernic, hwhs } => write!(f, "uio:{ernic},{hwhs}"),
            BackendSpec::DevMem {
                ernic,
                ernic_window,
                hwhs,
            } => write!(f, "devmem:{ernic:#x}/{}K,{hwhs:#x}", ernic_window / 1024),
            BackendSpec::File { ernic, hwhs } => write!(f, "file:{ernic},{hwhs}"),
            BackendSpec::Sim { socket } => write!(f, "sim:{socket}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_specs_parse_and_bad_ones_say_why() {
        assert_eq!(
            BackendSpec::parse("sim:/tmp/b.sock").unwrap(),
            BackendSpec::Sim {
                socket: "/tmp/b.sock".into()
            }
        );
        assert_eq!(
            BackendSpec::parse("devmem:0xa0000000,0xA0100000").unwrap(),
            BackendSpec::DevMem {
                ernic: 0xA000_0000,
                ernic_window: 0x20_0000,
                hwhs: 0xA010_0000
            }
        );
        let v3 = BackendSpec::parse("devmem:0xa0000000/256K,0xA0100000").unwrap();
        assert_eq!(v3.to_string(), "devmem:0xa0000000/256K,0xa0100000");
        assert_eq!(BackendSpec::parse(&v3.to_string()).unwrap(), v3);
        let u = BackendSpec::parse(BackendSpec::DEFAULT).unwrap();
        assert_eq!(u.to_string(), BackendSpec::DEFAULT);
        for (bad, why) in [
            ("sim:", "socket path"),
            ("uio:/dev/uio0", "two comma-separated"),
            ("devmem:0xzz,1", "not an address"),
            ("devmem:0x1000/64K,1", "not one of 256K, 2048K"),
            ("pcie:1,2", "unknown kind"),
            ("nothing", "expected uio"),
        ] {
            let e = BackendSpec::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn offsets_are_checked() {
        assert!(check_offset(Block::Hwhs, 0xFC, 0x100).is_ok());
        assert!(matches!(
            check_offset(Block::Hwhs, 0x100, 0x100),
            Err(MmioError::OutOfWindow { .. })
        ));
        assert!(matches!(
            check_offset(Block::Hwhs, u32::MAX - 3, 0x100),
            Err(MmioError::OutOfWindow { .. })
        ));
        assert!(matches!(
            check_offset(Block::Ernic, 2, 0x100),
            Err(MmioError::Misaligned { .. })
        ));
    }
}
