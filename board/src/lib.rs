//! `backline-board`: what the board's hardware interface is, defined once for everything that
//! touches it — the HWHS RTL generator (`backline-hdl` writes WQEs in the layout of
//! [`ernic::wqe`]), the Arm control plane (`backline-apu` brings the ERNIC up with the offsets
//! of [`ernic`]) and the simulated board (`backline-sim` models both register blocks).
//!
//! * [`ernic`] — the ERNIC RDMA engine's register space in both of its layouts (v3.x and
//!   v4.x, [`ernic::Layout`]), work-queue and completion-queue entries, each definition next
//!   to the table of AMD's product guide PG332 it comes from; where the guide and the Xilinx
//!   ERNIC Linux driver disagree, the definition says so.
//! * [`Block`], [`Op`], [`Access`] — the board's two AXI4-Lite register blocks (ERNIC and
//!   HWHS) and one 32-bit access to them, as backends, logs and the simulated board's
//!   protocol name them.
//! * [`ErnicRegs`] with [`Refusal`] — a register file of the ERNIC block behind a trait, so
//!   that the control plane's in-memory test backend can hold either plain registers
//!   ([`PlainErnic`]) or the simulated board's rule-checking model.
//! * `workload` (feature `workload`) — what a run sends and expects: sampled syndromes of
//!   a decoder function and that function's answers, as the engine's reference memory
//!   holds them.
//! * [`PeerInfo`] — the RoCE identity one side of the out-of-band handshake announces (QP,
//!   PSN, address, MAC, ring and key), validated; the board's hello and the peer's answer are
//!   both one.
//!
//! ```
//! use backline_board::ernic::{Layout, qp};
//! assert_eq!(Layout::V3.qp_offset(2, qp::QPCONF), 0x2_0300);
//! assert_eq!(Layout::V4.qp_offset(2, qp::QPCONF), 0x18_0100);
//! assert_eq!(Layout::V4.locate(0x18_0100).unwrap().to_string(), "QPCONF[QP 2]");
//! assert_eq!(backline_board::ernic::wqe::RTAG, 0x1C);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod ernic;
mod peer;
mod regs;
#[cfg(feature = "workload")]
pub mod workload;

pub use peer::{PeerError, PeerInfo, fmt_mac, gid_of, ip_of_gid, mac_is_unicast};
pub use regs::{ErnicRegs, PlainErnic, Refusal};

use std::fmt;

/// One of the board's register blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Block {
    /// The ERNIC RDMA engine's AXI4-Lite register space (offsets of [`ernic`]).
    Ernic,
    /// The HWHS engine's AXI4-Lite register file (offsets of `backline-regmap`).
    Hwhs,
}

impl Block {
    /// Name used in messages and logs.
    pub const fn name(self) -> &'static str {
        match self {
            Block::Ernic => "ERNIC",
            Block::Hwhs => "HWHS",
        }
    }

    /// Bytes of register space the block can decode (the most a backend maps: for the ERNIC
    /// the largest layout's window, [`ernic::MAX_WINDOW_BYTES`]).
    pub const fn window_bytes(self) -> u32 {
        match self {
            Block::Ernic => ernic::MAX_WINDOW_BYTES,
            Block::Hwhs => 1 << backline_regmap::AXI_ADDR_BITS,
        }
    }

    /// The register's name at `offset` in this block (`QPCONF[QP 2]`, `TRACE_COUNT`), or
    /// its offset in hex when nothing is mapped there. ERNIC offsets are named by
    /// [`ernic::locate_any`] (whichever layout has a register there).
    pub fn register_name(self, offset: u32) -> String {
        let name = match self {
            Block::Ernic => ernic::locate_any(offset).map(|l| l.to_string()),
            Block::Hwhs => backline_regmap::lookup(offset).map(|r| r.name.to_string()),
        };
        name.unwrap_or_else(|| format!("{offset:#x}"))
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A read or a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// A 32-bit read.
    Read,
    /// A 32-bit write.
    Write,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Read => "read",
            Op::Write => "write",
        })
    }
}

/// One register access, as backends and the simulated board record them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Access {
    /// Read or write.
    pub op: Op,
    /// Which block.
    pub block: Block,
    /// Byte offset in the block.
    pub offset: u32,
    /// The value written, or the value the read returned.
    pub value: u32,
}

impl Access {
    /// A write of `value`.
    pub const fn write(block: Block, offset: u32, value: u32) -> Access {
        Access {
            op: Op::Write,
            block,
            offset,
            value,
        }
    }

    /// The register's name (`ERNIC QPCONF[QP 2]`).
    pub fn register(&self) -> String {
        format!("{} {}", self.block, self.block.register_name(self.offset))
    }

    /// The register's name without its instance (`QPCONF[QP 2]` → `QPCONF`).
    pub fn plain_name(&self) -> String {
        let n = self.block.register_name(self.offset);
        n.split('[').next().unwrap_or(&n).to_string()
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let arrow = match self.op {
            Op::Read => "->",
            Op::Write => "<-",
        };
        write!(f, "{} {arrow} {:#010x}", self.register(), self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_print_register_names() {
        let a = Access::write(Block::Hwhs, backline_regmap::TRACE_CTRL, 1);
        assert_eq!(a.to_string(), "HWHS TRACE_CTRL <- 0x00000001");
        assert_eq!(Block::Hwhs.register_name(0xFC), "0xfc");
        let q = Access::write(Block::Ernic, 0x2_0300, 0);
        assert_eq!(
            (q.register(), q.plain_name()),
            ("ERNIC QPCONF[QP 2]".into(), "QPCONF".into())
        );
    }
}
