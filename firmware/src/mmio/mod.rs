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
    /// `devmem:0xERNIC,0xHWHS` — windows of `/dev/mem` at these physical addresses.
    DevMem {
        /// Physical base of the ERNIC's register space.
        ernic: u64,
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

    /// Parses `uio:A,B`, `devmem:0xA,0xB`, `file:A,B` or `sim:PATH`.
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
                Ok(BackendSpec::DevMem {
                    ernic: num(&a)?,
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
            BackendSpec::DevMem { ernic, hwhs } => {
                Box::new(board::BoardMmio::devmem(*ernic, *hwhs)?)
            }
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
            BackendSpec::DevMem { ernic, hwhs } => write!(f, "devmem:{ernic:#x},{hwhs:#x}"),
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
                hwhs: 0xA010_0000
            }
        );
        let u = BackendSpec::parse(BackendSpec::DEFAULT).unwrap();
        assert_eq!(u.to_string(), BackendSpec::DEFAULT);
        for (bad, why) in [
            ("sim:", "socket path"),
            ("uio:/dev/uio0", "two comma-separated"),
            ("devmem:0xzz,1", "not an address"),
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
