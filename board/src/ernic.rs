//! The ERNIC register space and queue entries — the one module that holds ERNIC offsets,
//! fields and structures, checked against AMD's product guide, for both register layouts
//! the IP has had.
//!
//! **Authority.** *Embedded RDMA Enabled NIC LogiCORE IP Product Guide* (PG332): the chapter
//! "Register Space" (one table per block: the memory-region table, the global configuration
//! and status registers, the per-QP registers), Table 2-1 "WQE Structure", Table 2-2
//! "Completion Queue Entry Structure", Table 3-1 "Address Space Allocation Requirement for
//! Slave Interfaces" and the sections "Interrupts", "ERNIC Global Configuration" and "ERNIC
//! TX Path", in its v3.1 edition (the v3.x layout) and its v4.0 edition (the v4.x layout).
//! Every definition below names the table it comes from in its `pg332` field (and that text
//! is printed next to it in `docs/ernic-registers.md`, generated from this module). Where
//! the Xilinx ERNIC Linux driver (`drivers/staging/xlnx_ernic/xhw_def.h` of linux-xlnx, its
//! later `XRNIC_*` register list, and that list's `ERNIC_V4` branch) says something else,
//! or where a v4.x figure comes from it rather than from the guide's text, the `note` says
//! so; `docs/firmware.md` lists those disagreements and every v3 → v4 difference.
//!
//! **Two layouts, one description** ([`Layout`]). The *v3.x register space* (ERNIC
//! v3.0/v3.1, PG332 v3.1): the memory-region table at `0x0`, the global registers at
//! `0x2_0000`, QP `n`'s registers at `0x2_0200 + (n − 1) × 0x100`, a 256 KiB window. The
//! *v4.x register space* (ERNIC v4.0 and later, PG332 v4.0): a 2048-entry memory-region
//! table at `0x0`, the global registers at `0x10_0000`, QP `n` at `0x18_0000 + (n − 1) ×
//! 0x100`, a 2 MiB window. The offsets *inside* each block are the same in both, with these
//! exceptions, each carried by the one definition of its register: v4.x adds
//! [`global::XRNIC_VERSION`] at global + `0x1C` and [`global::XRNIC_CONF_QP_EN`] at
//! global + `0x44` (the QP count, which v3.x keeps in `XRNICCONF` 15:8); `XRNICCONF`'s UDP source
//! port moves from 31:16 to 23:8; `XRNICADCONF`'s override QP number widens from 31:24 to
//! 31:20; the per-QP interrupt-status banks grow from 8 to 64 words, so the CQ and CNP
//! banks move. So every register is declared once ([`Reg`]), with its offset in the block,
//! the words it has in each layout (0: absent) and, where they differ, its v4.x offset and
//! each layout's own fields; [`Layout`] turns a register into an absolute offset and an
//! absolute offset back into a register ([`Layout::locate`]).
//!
//! **Telling the two apart** ([`identify_version`], [`check_ident`]). Only v4.x has a version
//! register. The firmware first reads v4.x's `XRNIC_VERSION` (absolute `0x10_001C`), when
//! its window reaches that far: a v4.x ERNIC answers its version with major 4. The v3.x
//! space has no register there: on the simulated board the read is a bus error, on a board
//! whose aperture is v3.x-sized (256 KiB, PG332 v3.1 Table 3-1) it is not made at all, and a
//! v3.x IP in a larger aperture answers 0 (its address decoder sees `0x001C`, a
//! memory-region word that resets to 0). Any other value names neither layout and is
//! refused with the value read. Without a version, the reserved words of the v3.x global
//! block ([`V3_PROBES`]) must read 0 (the guide: unspecified bits are reserved and read
//! 0), or the window holds something else.
//!
//! **Reset values.** The guide: control registers power up at 0 unless a table says
//! otherwise, and none used here does; [`RESET_VALUE`].
//!
//! Access classes and bit fields reuse the types of `backline-regmap`.

use std::fmt;

use backline_regmap::{Access, Field};

/// One of the ERNIC's register layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// ERNIC v3.0/v3.1 (PG332 v3.1): globals at `0x2_0000`, QPs at `0x2_0200`, 256 KiB.
    V3,
    /// ERNIC v4.0 and later (PG332 v4.0): globals at `0x10_0000`, QPs at `0x18_0000`, 2 MiB.
    V4,
}

impl Layout {
    /// Both layouts, oldest first.
    pub const ALL: [Layout; 2] = [Layout::V3, Layout::V4];
    /// The layout of the ERNIC the block design instantiates by default (current Vivado
    /// releases ship ERNIC 4.x; `bitstreams/vivado/vpk120_hwhs.tcl` has a switch for 3.x).
    pub const DEFAULT: Layout = Layout::V4;

    /// `v3.x` / `v4.x`.
    pub const fn short(self) -> &'static str {
        match self {
            Layout::V3 => "v3.x",
            Layout::V4 => "v4.x",
        }
    }

    /// What `backline-apu info` names it.
    pub const fn describe(self) -> &'static str {
        match self {
            Layout::V3 => "ERNIC v3.x register space (PG332 v3.1)",
            Layout::V4 => "ERNIC v4.x register space (PG332 v4.0)",
        }
    }

    /// Parses `v3`, `v3.x`, `3`, `v4`, `v4.x` or `4`.
    pub fn parse(s: &str) -> Option<Layout> {
        match s.trim().trim_start_matches('v').trim_end_matches(".x") {
            "3" => Some(Layout::V3),
            "4" => Some(Layout::V4),
            _ => None,
        }
    }

    /// Bytes of register space the IP decodes (PG332 Table 3-1, "Address Space Allocation
    /// Requirement for Slave Interfaces": 256 KB in v3.1, 2 MB in v4.0).
    pub const fn window_bytes(self) -> u32 {
        match self {
            Layout::V3 => 0x4_0000,
            Layout::V4 => 0x20_0000,
        }
    }

    /// Base of the global registers.
    pub const fn global_base(self) -> u32 {
        match self {
            Layout::V3 => 0x2_0000,
            Layout::V4 => 0x10_0000,
        }
    }

    /// Base of QP 1's registers; QP `n` is at `qp_base + (n − 1) × QP_STRIDE`.
    pub const fn qp_base(self) -> u32 {
        match self {
            Layout::V3 => 0x2_0200,
            Layout::V4 => 0x18_0000,
        }
    }

    /// Entries of the memory-region table (v3.x: those this firmware decodes, PD 0 ..= 255;
    /// v4.x: PG332 v4.0 Register Space, "i = 0 to 2047").
    pub const fn mr_entries(self) -> u32 {
        match self {
            Layout::V3 => 256,
            Layout::V4 => 2048,
        }
    }

    /// Highest QP number the layout has register blocks for (v3.x: `XRNICCONF.num_qps` is 8
    /// bits; v4.x: the QP blocks from `0x18_0000` to the end of the 2 MiB window).
    pub const fn max_qpn(self) -> u32 {
        match self {
            Layout::V3 => 255,
            Layout::V4 => 2048,
        }
    }

    /// The Vivado IP versions (`xilinx.com:ip:ernic:VERSION`) whose register space is this
    /// layout: the editions of PG332 that describe them.
    pub const fn ip_versions(self) -> &'static [&'static str] {
        match self {
            Layout::V3 => &["3.0", "3.1"],
            Layout::V4 => &["4.0", "4.2", "4.3"],
        }
    }

    /// The IP version a block design of this layout instantiates (the first PG332 edition
    /// of the layout that this firmware was checked against).
    pub const fn default_ip_version(self) -> &'static str {
        match self {
            Layout::V3 => "3.1",
            Layout::V4 => "4.0",
        }
    }

    /// The layout of a Vivado ERNIC IP version (`4.0`), if this firmware knows it.
    pub fn of_ip_version(version: &str) -> Option<Layout> {
        Layout::ALL
            .into_iter()
            .find(|l| l.ip_versions().contains(&version))
    }

    /// Index of the layout in per-layout tables (`Reg::words`).
    const fn index(self) -> usize {
        match self {
            Layout::V3 => 0,
            Layout::V4 => 1,
        }
    }

    /// True when the layout has register `r`.
    pub const fn has(self, r: Reg) -> bool {
        r.words[self.index()] > 0
    }

    /// `r`'s offset in its block in this layout.
    pub const fn rel(self, r: Reg) -> u32 {
        match self {
            Layout::V3 => r.rel,
            Layout::V4 => r.rel_v4,
        }
    }

    /// Absolute offset of global register `r` (its first word, for a bank).
    ///
    /// # Panics
    /// When the layout has no such register (a firmware bug: callers ask [`Layout::has`]).
    pub const fn g(self, r: Reg) -> u32 {
        assert!(self.has(r), "the register is not in this layout");
        self.global_base() + self.rel(r)
    }

    /// Absolute offset of word `n` (from 0) of a bank of global registers.
    pub const fn g_word(self, r: Reg, n: u32) -> u32 {
        assert!(n < r.words[self.index()], "no such word");
        self.g(r) + 4 * n
    }

    /// Absolute offset of QP `qpn`'s register `r` (`qpn` in 1 ..= [`Layout::max_qpn`]).
    pub const fn qp_offset(self, qpn: u32, r: Reg) -> u32 {
        self.qp_base() + (qpn - 1) * QP_STRIDE + r.rel
    }

    /// Absolute offset of memory-region entry `index`'s register `r` (the same in both).
    pub const fn mr_offset(self, index: u32, r: Reg) -> u32 {
        index * MR_STRIDE + r.rel
    }

    /// `r`'s fields in this layout: the shared ones and the layout's own.
    pub fn fields(self, r: Reg) -> impl Iterator<Item = Field> {
        let own = match self {
            Layout::V3 => r.v3_fields,
            Layout::V4 => r.v4_fields,
        };
        r.fields.iter().chain(own).copied()
    }

    /// `XRNICCONF.udp_sport` of this layout.
    pub const fn udp_sport(self) -> Field {
        match self {
            Layout::V3 => global::XRNICCONF_UDP_SPORT_V3,
            Layout::V4 => global::XRNICCONF_UDP_SPORT_V4,
        }
    }

    /// The register and field that hold the number of QPs in use (QP 1 included):
    /// `XRNICCONF.num_qps` (v3.x) or `XRNIC_CONF_QP_EN.num_qps` (v4.x).
    pub const fn num_qps(self) -> (Reg, Field) {
        match self {
            Layout::V3 => (global::XRNICCONF, global::XRNICCONF_NUM_QPS),
            Layout::V4 => (global::XRNIC_CONF_QP_EN, global::XRNIC_CONF_QP_EN_NUM_QPS),
        }
    }

    /// Decodes an absolute offset into its register and instance.
    pub fn locate(self, offset: u32) -> Option<Loc> {
        if offset < self.mr_entries() * MR_STRIDE {
            let (index, rel) = (offset / MR_STRIDE, offset % MR_STRIDE);
            let reg = *mr::MR_REGS.iter().find(|r| r.rel == rel)?;
            return Some(Loc {
                reg,
                unit: Unit::Mr(index),
            });
        }
        if (self.global_base()..self.qp_base()).contains(&offset) {
            let rel = offset - self.global_base();
            let reg = *global::GLOBAL_REGS.iter().find(|r| {
                let (at, n) = (self.rel(**r), r.words[self.index()]);
                n > 0 && (at..at + 4 * n).contains(&rel)
            })?;
            let unit = if reg.words[self.index()] > 1 {
                Unit::Word((rel - self.rel(reg)) / 4 + 1)
            } else {
                Unit::Global
            };
            return Some(Loc { reg, unit });
        }
        if offset >= self.qp_base() {
            let qpn = (offset - self.qp_base()) / QP_STRIDE + 1;
            if qpn > self.max_qpn() {
                return None;
            }
            let rel = (offset - self.qp_base()) % QP_STRIDE;
            let reg = *qp::QP_REGS.iter().find(|r| r.rel == rel)?;
            return Some(Loc {
                reg,
                unit: Unit::Qp(qpn),
            });
        }
        None
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short())
    }
}

/// Bytes between two QPs' register blocks (both layouts).
pub const QP_STRIDE: u32 = 0x100;
/// Bytes between two memory-region entries (PG332 Register Space, memory-region table:
/// `0x00 + i × 0x100`; both layouts).
pub const MR_STRIDE: u32 = 0x100;
/// Entries of the memory-region table this firmware uses, in both layouts (PD 0 ..= 255).
pub const MR_ENTRIES: u32 = 256;
/// Highest QP number this firmware uses, in both layouts (v3.x's limit).
pub const MAX_QPN: u32 = 255;
/// The largest window of any layout: what a backend maps when the aperture allows.
pub const MAX_WINDOW_BYTES: u32 = Layout::V4.window_bytes();
/// The management QP (QP1, the GSI, which carries the RoCE connection-management MADs;
/// PG332 "QP1 Creation").
pub const MANAGEMENT_QPN: u32 = 1;
/// The first QP number usable for data.
pub const FIRST_DATA_QPN: u32 = 2;
/// Power-on value of every register used here (PG332 Register Space: control registers
/// reset to 0 unless specified).
pub const RESET_VALUE: u32 = 0;

/// Alignment of `SQBAi` (bits 4:0 reserved: PG332 Register Space, "SQBAi").
pub const SQ_BASE_ALIGN: u64 = 32;
/// Alignment of `RQBAi` (bits 7:0 reserved: PG332 Register Space, "RQBAi").
pub const RQ_BASE_ALIGN: u64 = 256;
/// Alignment of `CQBAi` (bits 4:0 reserved: PG332 Register Space, "CQBAi").
pub const CQ_BASE_ALIGN: u64 = 32;
/// Alignment of the CQ and RQ doorbell write-back addresses (32-bit words the IP writes;
/// a firmware rule, the guide gives no other).
pub const DOORBELL_ALIGN: u64 = 4;
/// Alignment of the error, incoming-packet-error, data and response-error buffer bases (a
/// firmware rule: one 64-byte AXI beat; the guide gives none).
pub const BUFFER_BASE_ALIGN: u64 = 64;
/// Alignment of a memory region's physical base (a firmware rule: one page).
pub const MR_PHYS_ALIGN: u64 = 4096;
/// Alignment of a memory region's virtual address (a firmware rule: one ring slot).
pub const MR_VA_ALIGN: u64 = 64;
/// Path MTU codes of `QPCONF.pmtu` (PG332 Register Space, "QPCONFi" bits 10:8): code `i` is
/// `256 << i` bytes.
pub const PMTU_BYTES: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// Unit of `QPCONF.rq_buf_size`: the RQ buffer size is given in multiples of 256 bytes
/// (PG332 Register Space, "QPCONFi" bits 31:16).
pub const RQ_BUF_UNIT: u32 = 256;
/// The ack timeout unit of `TIMEOUTCONF.timeout`: 4.096 µs × 2^timeout (InfiniBand's local
/// ACK timeout, which `XRNICADCONF.base_count_width` scales to the clock).
pub const ACK_TIMEOUT_UNIT_NS: u64 = 4096;

/// `XRNICADCONF.base_count_width` for a clock: ⌈log2(4.096 × f_MHz)⌉, the width of the
/// counter that ticks the 4.096 µs timeout unit (PG332 Register Space, "XRNICADCONF" bits
/// 19:16: 10 at 200 MHz).
pub fn base_count_width(clock_mhz: f64) -> u32 {
    let cycles = ACK_TIMEOUT_UNIT_NS as f64 * clock_mhz / 1e3;
    cycles.log2().ceil() as u32
}

/// One register, declared once for both layouts. Offsets are relative to the register's
/// block (the global block, a QP's block, a memory-region entry); [`Layout`] makes them
/// absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg {
    /// Upper-case name as PG332 spells it (`QPCONF`; the guide adds an `i` for per-QP ones).
    pub name: &'static str,
    /// Byte offset in the block in the v3.x layout (and in v4.x unless `rel_v4` differs).
    pub rel: u32,
    /// Byte offset in the block in the v4.x layout.
    pub rel_v4: u32,
    /// 32-bit words in each layout, `[v3.x, v4.x]`: 1 for a register, more for a bank of
    /// per-QP bits, 0 where the layout has no such register.
    pub words: [u32; 2],
    /// Access class.
    pub access: Access,
    /// What it does.
    pub doc: &'static str,
    /// Bit fields of both layouts; empty when the register is one value.
    pub fields: &'static [Field],
    /// Bit fields only the v3.x layout has.
    pub v3_fields: &'static [Field],
    /// Bit fields only the v4.x layout has.
    pub v4_fields: &'static [Field],
    /// Where PG332 defines it.
    pub pg332: &'static str,
    /// Where the Xilinx driver disagrees, or a firmware convention on top of the guide.
    pub note: &'static str,
}

const fn f(name: &'static str, lsb: u32, width: u32, doc: &'static str) -> Field {
    Field {
        name,
        lsb,
        width,
        doc,
    }
}

const GLOBAL_TABLE: &str = "Register Space, global configuration and status registers";
const QP_TABLE: &str = "Register Space, per-QP registers";
const MR_TABLE: &str = "Register Space, memory-region (protection domain) table";

const fn reg(
    name: &'static str,
    rel: u32,
    access: Access,
    doc: &'static str,
    fields: &'static [Field],
    pg332: &'static str,
) -> Reg {
    Reg {
        name,
        rel,
        rel_v4: rel,
        words: [1, 1],
        access,
        doc,
        fields,
        v3_fields: &[],
        v4_fields: &[],
        pg332,
        note: "",
    }
}

const fn noted(r: Reg, note: &'static str) -> Reg {
    Reg { note, ..r }
}

/// A register only the v4.x layout has.
const fn v4_only(r: Reg) -> Reg {
    Reg { words: [0, 1], ..r }
}

/// Fields that differ between the layouts.
const fn per_layout(r: Reg, v3: &'static [Field], v4: &'static [Field]) -> Reg {
    Reg {
        v3_fields: v3,
        v4_fields: v4,
        ..r
    }
}

/// A bank of words (one bit per QP), `v3` words at `rel` in v3.x and `v4` words at `rel_v4`
/// in v4.x.
const fn bank(r: Reg, v3: u32, rel_v4: u32, v4: u32) -> Reg {
    Reg {
        words: [v3, v4],
        rel_v4,
        ..r
    }
}

use Access::{ReadPure as RO, ReadPureWrite as RW};

macro_rules! regs {
    ($table:ident: $($id:ident = $e:expr;)*) => {
        $(
            #[doc = concat!("`", stringify!($id), "`.")]
            pub const $id: Reg = $e;
        )*
        /// Every register of this block, in offset order.
        pub const $table: &[Reg] = &[$($id),*];
    };
}

/// The global registers (offsets in the global block: [`Layout::g`] makes them absolute;
/// PG332 Register Space, global table).
pub mod global {
    use super::*;

    /// `XRNICCONF.enable`: the engine runs.
    pub const XRNICCONF_ENABLE: Field = f("enable", 0, 1, "ERNIC enabled.");
    /// `XRNICCONF.tx_ack_gen`: when ACKs go out (0: on an explicit ACK request or timeout).
    pub const XRNICCONF_TX_ACK_GEN: Field = f("tx_ack_gen", 3, 2, "TX ACK generation mode.");
    /// `XRNICCONF.err_buf_en`: headers of packets that fail validation go to the error
    /// buffers.
    pub const XRNICCONF_ERR_BUF_EN: Field = f("err_buf_en", 5, 1, "Error buffer enable.");
    /// `XRNICCONF.num_qps` (v3.x only; v4.x: [`XRNIC_CONF_QP_EN`]): QPs in use, QP 1
    /// included.
    pub const XRNICCONF_NUM_QPS: Field = f("num_qps", 8, 8, "QPs in use, QP 1 included.");
    /// `XRNICCONF.udp_sport` of the v3.x layout: UDP source port of outgoing RoCE v2 packets.
    pub const XRNICCONF_UDP_SPORT_V3: Field = f("udp_sport", 16, 16, "UDP source port (RoCE v2).");
    /// `XRNICCONF.udp_sport` of the v4.x layout (bits 23:8).
    pub const XRNICCONF_UDP_SPORT_V4: Field = f("udp_sport", 8, 16, "UDP source port (RoCE v2).");
    /// `XRNIC_VERSION.major` (v4.x): 4 on every v4.x IP.
    pub const XRNIC_VERSION_MAJOR: Field = f("major", 16, 16, "Major version of the IP.");
    /// `XRNIC_VERSION.minor` (v4.x).
    pub const XRNIC_VERSION_MINOR: Field = f("minor", 8, 8, "Minor version of the IP.");
    /// `XRNIC_VERSION.revision` (v4.x).
    pub const XRNIC_VERSION_REVISION: Field = f("revision", 0, 8, "Revision of the IP.");
    /// `XRNIC_CONF_QP_EN.num_qps` (v4.x): QPs in use, QP 1 included.
    pub const XRNIC_CONF_QP_EN_NUM_QPS: Field = f("num_qps", 0, 12, "QPs in use, QP 1 included.");
    /// `XRNICADCONF.sw_override`: software may write `CQHEADi`, `STATCURSQPTRi`,
    /// `STATRQPIDBi`.
    pub const XRNICADCONF_SW_OVERRIDE: Field = f(
        "sw_override",
        0,
        1,
        "Software override of the read-only doorbell registers; 0 in normal operation.",
    );
    /// `XRNICADCONF.retry_cnt_fatal_dis`: exhausted retries do not make a QP fatal.
    pub const XRNICADCONF_RETRY_CNT_FATAL_DIS: Field = f(
        "retry_cnt_fatal_dis",
        2,
        1,
        "Exhausted retries do not put the QP in the fatal state.",
    );
    /// `XRNICADCONF.base_count_width`: ⌈log2(4.096 × f_MHz)⌉ ([`base_count_width`]).
    pub const XRNICADCONF_BASE_COUNT_WIDTH: Field = f(
        "base_count_width",
        16,
        4,
        "Counter width that makes the 4.096 us timeout unit at the IP clock (10 at 200 MHz).",
    );
    /// `XRNICADCONF.sw_override_qpn` of the v3.x layout (31:24): the QP the override
    /// applies to.
    pub const XRNICADCONF_SW_OVERRIDE_QPN_V3: Field = f(
        "sw_override_qpn",
        24,
        8,
        "QP the software override applies to.",
    );
    /// `XRNICADCONF.sw_override_qpn` of the v4.x layout (31:20, wider for its QP count).
    pub const XRNICADCONF_SW_OVERRIDE_QPN_V4: Field = f(
        "sw_override_qpn",
        20,
        12,
        "QP the software override applies to.",
    );
    /// Entry count of `ERRBUFSZ`, `DATBUFSZ`, `RESPERRSZ` and `IPKTERRQSZ`.
    pub const BUFSZ_COUNT: Field = f("count", 0, 16, "Number of buffers (queue entries).");
    /// Bytes per buffer of `ERRBUFSZ`, `DATBUFSZ`, `RESPERRSZ`.
    pub const BUFSZ_BYTES: Field = f("bytes", 16, 16, "Bytes per buffer.");
    /// `INTEN`/`INTSTS.pkt_valid_err`.
    pub const INT_PKT_VALID_ERR: Field = f(
        "pkt_valid_err",
        0,
        1,
        "An incoming packet failed validation.",
    );
    /// `INTEN`/`INTSTS.mad_rx`.
    pub const INT_MAD_RX: Field = f("mad_rx", 1, 1, "A MAD packet arrived on QP 1.");
    /// `INTEN`/`INTSTS.rnr_nack`.
    pub const INT_RNR_NACK: Field = f("rnr_nack", 3, 1, "An RNR NACK was generated.");
    /// `INTEN`/`INTSTS.wqe_completed`.
    pub const INT_WQE_COMPLETED: Field = f(
        "wqe_completed",
        4,
        1,
        "A WQE completed (QPs with QPCONF.cq_int_en).",
    );
    /// `INTEN`/`INTSTS.illegal_opcode`.
    pub const INT_ILLEGAL_OPCODE: Field = f(
        "illegal_opcode",
        5,
        1,
        "An illegal opcode was posted in a send queue.",
    );
    /// `INTEN`/`INTSTS.rq_pkt`.
    pub const INT_RQ_PKT: Field = f(
        "rq_pkt",
        6,
        1,
        "An RDMA SEND arrived (QPs with QPCONF.rq_int_en).",
    );
    /// `INTEN`/`INTSTS.fatal_err`.
    pub const INT_FATAL_ERR: Field = f("fatal_err", 7, 1, "A QP entered the fatal state.");
    /// `INTEN`/`INTSTS.cnp_sched`.
    pub const INT_CNP_SCHED: Field = f("cnp_sched", 8, 1, "A CNP is to be scheduled.");

    const BUFSZ: &[Field] = &[BUFSZ_COUNT, BUFSZ_BYTES];
    const QSZ: &[Field] = &[BUFSZ_COUNT];
    const INT: &[Field] = &[
        INT_PKT_VALID_ERR,
        INT_MAD_RX,
        INT_RNR_NACK,
        INT_WQE_COMPLETED,
        INT_ILLEGAL_OPCODE,
        INT_RQ_PKT,
        INT_FATAL_ERR,
        INT_CNP_SCHED,
    ];
    const G: &str = GLOBAL_TABLE;

    regs! { GLOBAL_REGS:
        XRNICCONF = noted(per_layout(reg("XRNICCONF", 0x00, RW, "Global configuration; written last of the global block.",
            &[XRNICCONF_ENABLE, XRNICCONF_TX_ACK_GEN, XRNICCONF_ERR_BUF_EN], G),
            &[XRNICCONF_NUM_QPS, XRNICCONF_UDP_SPORT_V3], &[XRNICCONF_UDP_SPORT_V4]),
            "driver: bit 1 ip_version, bit 2 depkt_bypass_en (struct xrnic_conf); v4.x: UDP port 23:8 (driver ERNIC_V4: XRNIC_UDP_SPORT_SHIFT 8), QP count in XRNIC_CONF_QP_EN");
        XRNICADCONF = noted(per_layout(reg("XRNICADCONF", 0x04, RW, "Advanced configuration.",
            &[XRNICADCONF_SW_OVERRIDE, XRNICADCONF_RETRY_CNT_FATAL_DIS, XRNICADCONF_BASE_COUNT_WIDTH], G),
            &[XRNICADCONF_SW_OVERRIDE_QPN_V3], &[XRNICADCONF_SW_OVERRIDE_QPN_V4]),
            "v4.x widens the override QP number to 31:20 (12 bits, PG332 v4.2's table as a published audit quotes it)");
        XRNIC_BUF_THRESHOLD_ROCE = noted(reg("XRNIC_BUF_THRESHOLD_ROCE", 0x08, RW, "PFC XON/XOFF buffer thresholds for RoCE traffic (not used: no PFC).", &[], G),
            "driver: XRNIC_ROCE_PAUSE_OFFSET; the old model read a version register here");
        XRNIC_PAUSE_CONF = reg("XRNIC_PAUSE_CONF", 0x0C, RW, "PFC pause enable and priorities (not used).", &[], G);
        MACXADDLSB = reg("MACXADDLSB", 0x10, RW, "Own MAC address, octets 2..5 (octet 2 in bits 31:24).", &[], G);
        MACXADDMSB = reg("MACXADDMSB", 0x14, RW, "Own MAC address, octets 0..1 in bits 15:0.", &[], G);
        XRNIC_BUF_THRESHOLD_NON_ROCE = noted(reg("XRNIC_BUF_THRESHOLD_NON_ROCE", 0x18, RW, "PFC buffer thresholds for non-RoCE traffic (not used).", &[], G),
            "driver: XRNIC_NON_ROCE_PAUSE_OFFSET");
        XRNIC_VERSION = noted(v4_only(reg("XRNIC_VERSION", 0x1C, RO, "XRNIC version of the IP (v4.x; reserved, reads 0, in v3.x).",
            &[XRNIC_VERSION_MAJOR, XRNIC_VERSION_MINOR, XRNIC_VERSION_REVISION], "Register Space, global table (v4.0: XRNIC Version)")),
            "field positions as this firmware's earlier model had them (major 31:16, minor 15:8, revision 7:0); info prints the raw word; what tells the layouts apart is major = 4");
        IPV6XADD1 = reg("IPv6XADD1", 0x20, RW, "Own IPv6 address, word 1 (unused: IPv4).", &[], G);
        IPV6XADD2 = reg("IPv6XADD2", 0x24, RW, "Own IPv6 address, word 2.", &[], G);
        IPV6XADD3 = reg("IPv6XADD3", 0x28, RW, "Own IPv6 address, word 3.", &[], G);
        IPV6XADD4 = reg("IPv6XADD4", 0x2C, RW, "Own IPv6 address, word 4.", &[], G);
        XRNIC_CONF_QP_EN = noted(v4_only(reg("XRNIC_CONF_QP_EN", 0x44, RW, "QPs in use, QP 1 included (v4.x; v3.x keeps the count in XRNICCONF.num_qps).",
            &[XRNIC_CONF_QP_EN_NUM_QPS], "Register Space, global table (v4.0: XRNIC_CONF_QP_EN)")),
            "driver ERNIC_V4: XRNIC_CONF_QP_EN = global + 0x44, XRNIC_NUM_QP_MASK 0xfff; a count, written before XRNICCONF");
        ERRBUFBA = reg("ERRBUFBA", 0x60, RW, "Error buffer base, low 32 bits.", &[], G);
        ERRBUFBAMSB = reg("ERRBUFBAMSB", 0x64, RW, "Error buffer base, high 32 bits.", &[], G);
        ERRBUFSZ = reg("ERRBUFSZ", 0x68, RW, "Error buffers: count and bytes each.", BUFSZ, G);
        ERRBUFWPTR = reg("ERRBUFWPTR", 0x6C, RO, "Error buffer write pointer (the IP advances it).", &[], G);
        IPV4XADD = reg("IPv4XADD", 0x70, RW, "Own IPv4 address (a.b.c.d as 0xaabbccdd).", &[], G);
        IPKTERRQBA = reg("IPKTERRQBA", 0x88, RW, "Incoming-packet error status queue base, low 32 bits.", &[], G);
        IPKTERRQBAMSB = reg("IPKTERRQBAMSB", 0x8C, RW, "Incoming-packet error status queue base, high 32 bits.", &[], G);
        IPKTERRQSZ = reg("IPKTERRQSZ", 0x90, RW, "Incoming-packet error status queue entries.", QSZ, G);
        IPKTERRQWPTR = reg("IPKTERRQWPTR", 0x94, RO, "Incoming-packet error status queue write pointer.", &[], G);
        DATBUFBA = reg("DATBUFBA", 0xA0, RW, "Data buffer base (outgoing data kept until acknowledged), low 32 bits.", &[], G);
        DATBUFBAMSB = reg("DATBUFBAMSB", 0xA4, RW, "Data buffer base, high 32 bits.", &[], G);
        DATBUFSZ = reg("DATBUFSZ", 0xA8, RW, "Data buffers: count and bytes each.", BUFSZ, G);
        CNCTIOCONF = noted(reg("CNCTIOCONF", 0xAC, RW, "Connect-I/O configuration (not used).", &[], G),
            "driver: XRNIC_CNCT_IO_CONF, \"only valid for nvmf\"");
        RESPERRPKTBA = reg("RESPERRPKTBA", 0xB0, RW, "Response-error packet buffer base, low 32 bits.", &[], G);
        RESPERRPKTBAMSB = reg("RESPERRPKTBAMSB", 0xB4, RW, "Response-error packet buffer base, high 32 bits.", &[], G);
        RESPERRSZ = reg("RESPERRSZ", 0xB8, RW, "Response-error buffers: count and bytes each.", BUFSZ, G);
        RESPERRBUFWPTR = noted(reg("RESPERRBUFWPTR", 0xBC, RW, "Address the IP writes its response-error write pointer to.", &[], G),
            "the v3 programming notes call it RESP_ERR_BUF_WRPTR; AMD's RecoNIC names the offset RESPERRSZMSB");
        INTEN = reg("INTEN", 0x180, RW, "Interrupt enables.", INT, "Interrupts; Register Space, global table");
        INTSTS = noted(reg("INTSTS", 0x184, RW, "Interrupt status; write 1 to clear a bit.", INT, "Interrupts; Register Space, global table"),
            "driver: bit 2 bypass packet received; the guide marks it reserved");
        RQINTSTS = noted(bank(reg("RQINTSTS", 0x190, RW, "Per-QP RQ interrupt status, one bit a QP, 32 QPs a word; write 1 to clear.", &[], "Interrupts (RQINTSTSn); Register Space, global table"), 8, 0x190, 64),
            "v3.x: 8 words (256 QPs); v4.x: 64 words (2048 QPs), so the CQ and CNP banks move");
        CQINTSTS = noted(bank(reg("CQINTSTS", 0x1B0, RW, "Per-QP CQ interrupt status, one bit a QP; write 1 to clear.", &[], "Interrupts (CQINTSTSn); Register Space, global table"), 8, 0x290, 64),
            "driver: XRNIC_COMPQ_INT_STAT_0_31 = global + 0x1B0 (v3.x), + 0x290 (ERNIC_V4)");
        CNPSCHDSTS = noted(bank(reg("CNPSCHDSTS", 0x1D0, RO, "Per-QP CNP-scheduled status, one bit a QP.", &[], "Register Space, global table (CNPSCHDSTSnREG)"), 8, 0x390, 64),
            "driver: XRNIC_CNP_INT_STAT_0_31 = global + 0x1D0 (v3.x), + 0x390 (ERNIC_V4)");
    }
}

/// The per-QP registers (offsets relative to the QP's block; see [`Layout::qp_offset`]; PG332
/// Register Space, per-QP table).
pub mod qp {
    use super::*;

    /// `QPCONF.enable`: the QP runs. Written last.
    pub const QPCONF_ENABLE: Field = f("enable", 0, 1, "QP enabled; written last.");
    /// `QPCONF.rq_int_en`: an interrupt per received SEND.
    pub const QPCONF_RQ_INT_EN: Field = f("rq_int_en", 2, 1, "RQ interrupt enable.");
    /// `QPCONF.cq_int_en`: an interrupt per completed WQE.
    pub const QPCONF_CQ_INT_EN: Field = f("cq_int_en", 3, 1, "CQ interrupt enable.");
    /// `QPCONF.hw_handshake_dis`: 0 = doorbells travel over the hardware-handshake ports
    /// (the HWHS rings `SQPI` there); 1 = over AXI writes.
    pub const QPCONF_HW_HANDSHAKE_DIS: Field = f(
        "hw_handshake_dis",
        4,
        1,
        "Hardware handshake disable: 0 = doorbells over the handshake ports (the HWHS), 1 = over AXI.",
    );
    /// `QPCONF.cqe_write_en`: CQEs are written to the CQ in memory.
    pub const QPCONF_CQE_WRITE_EN: Field =
        f("cqe_write_en", 5, 1, "Write CQEs to the CQ in memory.");
    /// `QPCONF.under_recovery`: set while clearing a fatal state.
    pub const QPCONF_UNDER_RECOVERY: Field = f(
        "under_recovery",
        6,
        1,
        "QP under recovery (fatal-state clearing).",
    );
    /// `QPCONF.ipv6`: IPv6 addressing (this firmware uses IPv4).
    pub const QPCONF_IPV6: Field = f("ipv6", 7, 1, "IPv6 (1) or IPv4 (0).");
    /// `QPCONF.pmtu`: path MTU code, `256 << code` bytes.
    pub const QPCONF_PMTU: Field = f("pmtu", 8, 3, "Path MTU: 256 << code bytes (0 ..= 4).");
    /// `QPCONF.rq_buf_size`: bytes per RQ buffer, in units of [`RQ_BUF_UNIT`].
    pub const QPCONF_RQ_BUF_SIZE: Field = f(
        "rq_buf_size",
        16,
        16,
        "Bytes per RQ buffer in units of 256.",
    );
    /// `QPADVCONF.traffic_class`.
    pub const QPADVCONF_TRAFFIC_CLASS: Field = f("traffic_class", 0, 6, "IP traffic class.");
    /// `QPADVCONF.ttl`.
    pub const QPADVCONF_TTL: Field = f("ttl", 8, 8, "IP time to live.");
    /// `QPADVCONF.pkey`.
    pub const QPADVCONF_PKEY: Field = f("pkey", 16, 16, "Partition key.");
    /// A 16-bit queue index (`CQHEAD`, `RQCI`, `SQPI`, `STATCURSQPTR`, `STATRQPIDB`).
    pub const INDEX: Field = f("index", 0, 16, "Queue index.");
    /// `QDEPTH.sq`: SQ depth in WQEs.
    pub const QDEPTH_SQ: Field = f("sq", 0, 16, "SQ depth in WQEs.");
    /// `QDEPTH.rq`: RQ depth in buffers.
    pub const QDEPTH_RQ: Field = f("rq", 16, 16, "RQ depth in buffers.");
    /// A 24-bit PSN, SSN, MSN, QPN or PD.
    pub const PSN: Field = f("psn", 0, 24, "24-bit sequence number.");
    /// `LSTRQREQ.opcode`: the opcode of the last request received.
    pub const LSTRQREQ_OPCODE: Field = f("opcode", 24, 8, "Opcode of the last request received.");
    /// `DESTQPCONF.qpn`.
    pub const DESTQPCONF_QPN: Field = f("qpn", 0, 24, "Remote QP number.");
    /// `TIMEOUTCONF.timeout`: ack timeout 4.096 µs × 2^n.
    pub const TIMEOUTCONF_TIMEOUT: Field = f("timeout", 0, 6, "Ack timeout: 4.096 us x 2^n.");
    /// `TIMEOUTCONF.retry`: retransmissions before the QP goes fatal.
    pub const TIMEOUTCONF_RETRY: Field = f("retry", 8, 3, "Retry count.");
    /// `TIMEOUTCONF.rnr_retry`.
    pub const TIMEOUTCONF_RNR_RETRY: Field = f("rnr_retry", 11, 3, "RNR retry count.");
    /// `TIMEOUTCONF.rnr_nak_timer`: the RNR NAK timer value sent.
    pub const TIMEOUTCONF_RNR_NAK_TIMER: Field = f("rnr_nak_timer", 16, 5, "RNR NAK timer.");
    /// `STATQP.fatal`: the QP is in the fatal state.
    pub const STATQP_FATAL: Field = f("fatal", 0, 1, "QP in the fatal state.");
    /// `STATQP.rq_overflow`: the RQ overflowed (an RNR NAK went out).
    pub const STATQP_RQ_OVERFLOW: Field = f("rq_overflow", 1, 1, "RQ overflow (RNR NAK sent).");
    /// `STATQP.sq_full`.
    pub const STATQP_SQ_FULL: Field = f("sq_full", 2, 1, "SQ full.");
    /// `STATQP.osq_full`.
    pub const STATQP_OSQ_FULL: Field = f("osq_full", 3, 1, "Outstanding queue full.");
    /// `STATQP.cq_full`.
    pub const STATQP_CQ_FULL: Field = f("cq_full", 4, 1, "CQ FIFO full.");
    /// `STATQP.sq_empty`: no WQE left to process (not all of them acknowledged).
    pub const STATQP_SQ_EMPTY: Field = f("sq_empty", 9, 1, "SQ empty.");
    /// `STATQP.osq_empty`: every sent WQE acknowledged.
    pub const STATQP_OSQ_EMPTY: Field = f("osq_empty", 10, 1, "Outstanding queue empty.");
    /// `STATQP.retried`.
    pub const STATQP_RETRIED: Field = f("retried", 11, 1, "A packet of the QP was retried.");
    /// `STATQP.nak_syndrome`.
    pub const STATQP_NAK_SYNDROME: Field = f("nak_syndrome", 16, 7, "NAK syndrome received.");
    /// `STATQP.cur_retry`.
    pub const STATQP_CUR_RETRY: Field = f("cur_retry", 24, 3, "Current retry count.");
    /// `STATQP.cur_rnr`.
    pub const STATQP_CUR_RNR: Field = f("cur_rnr", 28, 3, "Current RNR NAK count.");
    /// `PD.pd`: protection domain.
    pub const PD_PD: Field = f("pd", 0, 24, "Protection domain.");

    const Q: &str = QP_TABLE;
    const IDX: &[Field] = &[INDEX];

    regs! { QP_REGS:
        QPCONF = noted(reg("QPCONF", 0x00, RW, "QP configuration; enable is written last.",
            &[QPCONF_ENABLE, QPCONF_RQ_INT_EN, QPCONF_CQ_INT_EN, QPCONF_HW_HANDSHAKE_DIS, QPCONF_CQE_WRITE_EN,
              QPCONF_UNDER_RECOVERY, QPCONF_IPV6, QPCONF_PMTU, QPCONF_RQ_BUF_SIZE], "Register Space, per-QP registers; Interrupts (bits 2, 3, 4)"),
            "driver: bit 1 ack_coalsc_en (reserved in the guide); the old model named bit 4 db_over_axi");
        QPADVCONF = noted(reg("QPADVCONF", 0x04, RW, "Advanced QP configuration (not present for QP 1).",
            &[QPADVCONF_TRAFFIC_CLASS, QPADVCONF_TTL, QPADVCONF_PKEY], Q),
            "the later driver masks the traffic class with 0x1F (5 bits)");
        RQBA = reg("RQBA", 0x08, RW, "RQ base, low 32 bits (256-byte aligned).", &[], Q);
        SQBA = reg("SQBA", 0x10, RW, "SQ base, low 32 bits (32-byte aligned; the HWHS writes WQEs there).", &[], Q);
        CQBA = reg("CQBA", 0x18, RW, "CQ base, low 32 bits (32-byte aligned).", &[], Q);
        RQWPTRDBADD = reg("RQWPTRDBADD", 0x20, RW, "Where the IP writes the RQ write pointer, low 32 bits.", &[], Q);
        RQWPTRDBADDMSB = reg("RQWPTRDBADDMSB", 0x24, RW, "Where the IP writes the RQ write pointer, high 32 bits.", &[], Q);
        CQDBADD = reg("CQDBADD", 0x28, RW, "Where the IP writes the CQ head (SQ completion doorbell), low 32 bits.", &[], Q);
        CQDBADDMSB = reg("CQDBADDMSB", 0x2C, RW, "Where the IP writes the CQ head, high 32 bits.", &[], Q);
        CQHEAD = reg("CQHEAD", 0x30, RO, "CQ head (the IP advances it; writable only with XRNICADCONF.sw_override).", IDX, Q);
        RQCI = reg("RQCI", 0x34, RW, "RQ consumer index (software).", IDX, Q);
        SQPI = reg("SQPI", 0x38, RW, "SQ producer index doorbell (over AXI when QPCONF.hw_handshake_dis = 1).", IDX, "Register Space, per-QP registers; ERNIC TX Path");
        QDEPTH = noted(reg("QDEPTH", 0x3C, RW, "Queue depths.", &[QDEPTH_SQ, QDEPTH_RQ], Q),
            "xhw_def.h's struct q_depth names bits 31:16 cq_depth; the later driver writes the RQ depth there");
        SQPSN = reg("SQPSN", 0x40, RW, "First PSN this QP sends.", &[PSN], Q);
        LSTRQREQ = reg("LSTRQREQ", 0x44, RW, "PSN (23:0) and opcode (31:24) of the last request received.", &[PSN, LSTRQREQ_OPCODE], Q);
        DESTQPCONF = reg("DESTQPCONF", 0x48, RW, "Remote QP number.", &[DESTQPCONF_QPN], Q);
        TIMEOUTCONF = noted(reg("TIMEOUTCONF", 0x4C, RW, "Ack timeout, retry counts and RNR NAK timer (not present for QP 1).",
            &[TIMEOUTCONF_TIMEOUT, TIMEOUTCONF_RETRY, TIMEOUTCONF_RNR_RETRY, TIMEOUTCONF_RNR_NAK_TIMER], Q),
            "xhw_def.h's struct timeout_conf gives the timeout 5 bits (4:0); the guide 6 (5:0)");
        MACDESADDLSB = reg("MACDESADDLSB", 0x50, RW, "Remote MAC, octets 2..5.", &[], Q);
        MACDESADDMSB = reg("MACDESADDMSB", 0x54, RW, "Remote MAC, octets 0..1 in bits 15:0.", &[], Q);
        IPDESADDR1 = reg("IPDESADDR1", 0x60, RW, "Remote IP, word 1 (the IPv4 address).", &[], Q);
        IPDESADDR2 = reg("IPDESADDR2", 0x64, RW, "Remote IP, word 2 (IPv6 only).", &[], Q);
        IPDESADDR3 = reg("IPDESADDR3", 0x68, RW, "Remote IP, word 3 (IPv6 only).", &[], Q);
        IPDESADDR4 = reg("IPDESADDR4", 0x6C, RW, "Remote IP, word 4 (IPv6 only).", &[], Q);
        STATSSN = reg("STATSSN", 0x80, RO, "Expected send sequence number.", &[PSN], Q);
        STATMSN = reg("STATMSN", 0x84, RO, "Current message sequence number.", &[PSN], Q);
        STATQP = reg("STATQP", 0x88, RO, "QP status.", &[STATQP_FATAL, STATQP_RQ_OVERFLOW, STATQP_SQ_FULL, STATQP_OSQ_FULL,
            STATQP_CQ_FULL, STATQP_SQ_EMPTY, STATQP_OSQ_EMPTY, STATQP_RETRIED, STATQP_NAK_SYNDROME, STATQP_CUR_RETRY, STATQP_CUR_RNR], Q);
        STATCURSQPTR = reg("STATCURSQPTR", 0x8C, RO, "SQ pointer under processing (WQEs consumed).", IDX, Q);
        STATRESPSN = reg("STATRESPSN", 0x90, RO, "Expected PSN of the next response.", &[PSN], Q);
        STATRQBUFCA = reg("STATRQBUFCA", 0x94, RO, "RQ buffer current address, low 32 bits.", &[], Q);
        STATWQE = reg("STATWQE", 0x98, RO, "WQE processing status.", &[], Q);
        STATRQPIDB = reg("STATRQPIDB", 0x9C, RO, "RQ producer index doorbell (the IP advances it).", IDX, Q);
        PD = reg("PD", 0xB0, RW, "Protection domain of the QP.", &[PD_PD], Q);
        RQBAMSB = reg("RQBAMSB", 0xC0, RW, "RQ base, high 32 bits.", &[], Q);
        SQBAMSB = reg("SQBAMSB", 0xC8, RW, "SQ base, high 32 bits.", &[], Q);
        CQBAMSB = reg("CQBAMSB", 0xD0, RW, "CQ base, high 32 bits.", &[], Q);
        STATRQBUFCAMSB = reg("STATRQBUFCAMSB", 0xD8, RO, "RQ buffer current address, high 32 bits.", &[], Q);
    }
}

/// The memory-region table entry registers (offsets relative to the entry; see
/// [`Layout::mr_offset`]; PG332 Register Space, memory-region table).
pub mod mr {
    use super::*;

    /// `ACCESSDESC.access`: what the peer may do with the region ([`access`]).
    pub const ACCESSDESC_ACCESS: Field = f(
        "access",
        0,
        4,
        "Access type: 0 read only, 1 write only, 2 read and write.",
    );
    /// `ACCESSDESC.len_msb`: bits 47:32 of the region's length (`WRRDBUFLEN` holds 31:0).
    pub const ACCESSDESC_LEN_MSB: Field = f("len_msb", 16, 16, "Length of the region, bits 47:32.");
    /// `BUFRKEY.rkey`: the 8-bit key.
    pub const BUFRKEY_RKEY: Field = f("rkey", 0, 8, "The region's 8-bit key.");
    /// `PDPDNUM.pd`.
    pub const PDPDNUM_PD: Field = f("pd", 0, 24, "Protection domain of the region.");

    /// Values of [`ACCESSDESC_ACCESS`].
    pub mod access {
        /// The peer may read.
        pub const READ: u32 = 0;
        /// The peer may write.
        pub const WRITE: u32 = 1;
        /// The peer may read and write (the driver's `XRNIC_MR_ACC_DESC_RD_WR`).
        pub const READ_WRITE: u32 = 2;
    }

    const M: &str = MR_TABLE;

    regs! { MR_REGS:
        PDPDNUM = noted(reg("PDPDNUM", 0x00, RW, "Protection domain of the region.", &[PDPDNUM_PD], M),
            "the old model called it PDNUM");
        VIRTADDRLSB = reg("VIRTADDRLSB", 0x04, RW, "Virtual address the peer uses, low 32 bits.", &[], M);
        VIRTADDRMSB = reg("VIRTADDRMSB", 0x08, RW, "Virtual address, high 32 bits.", &[], M);
        BUFBASEADDRLSB = noted(reg("BUFBASEADDRLSB", 0x0C, RW, "Physical (bus) base, low 32 bits.", &[], M),
            "PG332 v4.0's details column swaps LSB and MSB for this pair; the names and the driver agree on low at 0x0C");
        BUFBASEADDRMSB = reg("BUFBASEADDRMSB", 0x10, RW, "Physical base, high 32 bits.", &[], M);
        BUFRKEY = reg("BUFRKEY", 0x14, RW, "The region's key (the rkey the peer uses).", &[BUFRKEY_RKEY], M);
        WRRDBUFLEN = reg("WRRDBUFLEN", 0x18, RW, "Length in bytes, bits 31:0.", &[], M);
        ACCESSDESC = reg("ACCESSDESC", 0x1C, RW, "Access type and the length's bits 47:32.",
            &[ACCESSDESC_ACCESS, ACCESSDESC_LEN_MSB], M);
    }
}

/// The send work-queue entry, 64 bytes, as the HWHS writes it into the SQ (PG332 Table 2-1,
/// "WQE Structure"). Offsets are bytes from the WQE's start; every field the engine writes
/// is a 32-bit word (narrower fields occupy the low bits, the rest of the word is reserved
/// and written 0).
pub mod wqe {
    /// Bytes per WQE.
    pub const BYTES: u32 = 64;
    /// 32-bit words per WQE.
    pub const WORDS: u32 = BYTES / 4;
    /// `WRID` (bits 15:0; 31:16 reserved): the engine's round number.
    pub const WRID: u32 = 0x00;
    /// `LADDR`, low word: local address of the data.
    pub const LADDR_LO: u32 = 0x04;
    /// `LADDR`, high word.
    pub const LADDR_HI: u32 = 0x08;
    /// `LENGTH`: bytes to transfer.
    pub const LENGTH: u32 = 0x0C;
    /// `OPCODE` (bits 7:0; 31:8 reserved): see [`opcode`].
    pub const OPCODE: u32 = 0x10;
    /// `ROFFSET`, low word: remote virtual address.
    pub const ROFFSET_LO: u32 = 0x14;
    /// `ROFFSET`, high word.
    pub const ROFFSET_HI: u32 = 0x18;
    /// `RTAG`: the remote key.
    pub const RTAG: u32 = 0x1C;
    /// `SDATA`: 16 bytes of small payload (SEND only; zero from the engine).
    pub const SDATA: u32 = 0x20;
    /// `IMMDT`: immediate data (WRITE_IMM and SEND_IMM; the engine puts the round's sequence
    /// number there).
    pub const IMMDT: u32 = 0x30;

    /// The opcodes of [`OPCODE`].
    pub mod opcode {
        /// RDMA WRITE.
        pub const WRITE: u32 = 0x00;
        /// RDMA WRITE with immediate.
        pub const WRITE_IMM: u32 = 0x01;
        /// RDMA SEND.
        pub const SEND: u32 = 0x02;
        /// RDMA SEND with immediate.
        pub const SEND_IMM: u32 = 0x03;
        /// RDMA READ.
        pub const READ: u32 = 0x04;
        /// RDMA SEND with invalidate.
        pub const SEND_INV: u32 = 0x0C;
    }

    const _: () = {
        assert!(IMMDT + 4 <= BYTES && SDATA + 16 == IMMDT && RTAG + 4 == SDATA);
        let words = [WRID, LADDR_LO, LENGTH, OPCODE, ROFFSET_LO, RTAG];
        let mut i = 0;
        while i < words.len() {
            assert!(words[i].is_multiple_of(4));
            i += 1;
        }
    };
}

/// The completion-queue entry, 4 bytes, one per completed WQE (PG332 Table 2-2,
/// "Completion Queue Entry Structure").
pub mod cqe {
    use backline_regmap::Field;

    /// Bytes per CQE.
    pub const BYTES: u32 = 4;
    /// `WRID` of the completed WQE.
    pub const WRID: Field = super::f("wrid", 0, 16, "Work request id.");
    /// `OPCODE` of the completed WQE.
    pub const OPCODE: Field = super::f("opcode", 16, 8, "Opcode of the WQE.");
    /// `ERRFLAG`: 1 when the QP entered the fatal state.
    pub const ERRFLAG: Field = super::f("errflag", 24, 8, "Error flag: 1 when the QP went fatal.");
}

/// Absolute offset of v4.x's `XRNIC_VERSION` (global + `0x1C`): the word the layouts are
/// told apart by.
pub const VERSION_OFFSET: u32 = Layout::V4.g(global::XRNIC_VERSION);

/// Offsets of the v3.x space that are reserved (between registers of the global block: the
/// word where v4.x has its version, and two of the gap after the incoming-packet error
/// queue) and so read 0 on a v3.x ERNIC; read when no version register answers.
pub const V3_PROBES: [u32; 3] = [
    Layout::V3.global_base() + 0x1C,
    Layout::V3.global_base() + 0x98,
    Layout::V3.global_base() + 0x9C,
];

/// What the version register says about the layout: `Ok(Some(V4))` for a major version of
/// 4, `Ok(None)` for 0 (no version register answers: a v3.x IP, or nothing; the v3.x probes
/// decide), and the reason, naming the value read, for anything else.
pub fn identify_version(word: u32) -> Result<Option<Layout>, String> {
    use global::XRNIC_VERSION_REVISION as REV;
    use global::{XRNIC_VERSION_MAJOR as MAJ, XRNIC_VERSION_MINOR as MIN};
    match MAJ.get(word) {
        _ if word == 0 => Ok(None),
        4 => Ok(Some(Layout::V4)),
        major => Err(format!(
            "the XRNIC version register (global + 0x1C of the v4.x space, {VERSION_OFFSET:#x}) \
             reads {word:#010x} (version {major}.{}.{}): it names neither layout this firmware \
             knows (v4.x reads major 4; v3.x has no version register there)",
            MIN.get(word),
            REV.get(word)
        )),
    }
}

/// The version an `XRNIC_VERSION` word names, `4.0.0`.
pub fn version_text(word: u32) -> String {
    use global::{XRNIC_VERSION_MAJOR, XRNIC_VERSION_MINOR, XRNIC_VERSION_REVISION};
    format!(
        "{}.{}.{}",
        XRNIC_VERSION_MAJOR.get(word),
        XRNIC_VERSION_MINOR.get(word),
        XRNIC_VERSION_REVISION.get(word)
    )
}

/// The identification of a v3.x space: the reserved words of [`V3_PROBES`] as read; the
/// reason when one of them is not zero (then this is not the v3.x ERNIC space this firmware
/// knows).
pub fn check_ident(read: &[(u32, u32)]) -> Result<(), String> {
    match read.iter().find(|(_, v)| *v != 0) {
        None => Ok(()),
        Some((off, v)) => Err(format!(
            "reserved offset {off:#x} of the ERNIC v3.x register space reads {v:#010x} (PG332: \
             reserved bits read 0), and no v4.x version register answered: this window does \
             not hold an ERNIC register space this firmware knows (a wrong base address, \
             another IP, or an ERNIC v4.x mapped in a window too small for its 2 MiB); no \
             offset of it can be trusted"
        )),
    }
}

/// Which instance of a register an offset belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A global register.
    Global,
    /// Word `n` (from 1, as the guide numbers `RQINTSTSn`) of a bank of global registers.
    Word(u32),
    /// A per-QP register of this QP.
    Qp(u32),
    /// A register of this memory-region entry.
    Mr(u32),
}

/// A decoded ERNIC offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// The register.
    pub reg: Reg,
    /// Its instance.
    pub unit: Unit,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.unit {
            Unit::Global => f.write_str(self.reg.name),
            Unit::Word(n) => write!(f, "{}{n}", self.reg.name),
            Unit::Qp(n) => write!(f, "{}[QP {n}]", self.reg.name),
            Unit::Mr(n) => write!(f, "{}[MR {n}]", self.reg.name),
        }
    }
}

/// The register at an absolute offset in whichever layout has one there, for messages and
/// logs that do not know the layout: below the v3.x window the v3.x name, above it the v4.x
/// one. The two disagree only in `0x2_0000 .. 0x4_0000`, where v4.x has memory-region
/// entries 512 ..= 1023, which this firmware never uses (it uses entries 0 ..= 255, the same
/// offsets in both). Models and bring-up decode with [`Layout::locate`].
pub fn locate_any(offset: u32) -> Option<Loc> {
    if offset < Layout::V3.window_bytes() {
        Layout::V3.locate(offset)
    } else {
        Layout::V4.locate(offset)
    }
}

/// A MAC address as the two MAC registers hold it: (`…LSB` = octets 2..5, `…MSB` = octets
/// 0..1), octet 0 the most significant.
pub const fn mac_regs(mac: [u8; 6]) -> (u32, u32) {
    let lsb = u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]);
    let msb = u32::from_be_bytes([0, 0, mac[0], mac[1]]);
    (lsb, msb)
}

/// The MAC address two MAC registers hold.
pub const fn mac_from_regs(lsb: u32, msb: u32) -> [u8; 6] {
    let l = lsb.to_be_bytes();
    let m = msb.to_be_bytes();
    [m[2], m[3], l[0], l[1], l[2], l[3]]
}

/// The fields column of one register in the generated table.
fn fields_text(fields: impl Iterator<Item = Field>) -> String {
    let v: Vec<String> = fields
        .map(|f| {
            if f.width == 1 {
                format!("{} `{}`", f.lsb, f.name)
            } else {
                format!("{}:{} `{}`", f.lsb + f.width - 1, f.lsb, f.name)
            }
        })
        .collect();
    if v.is_empty() {
        "—".to_string()
    } else {
        v.join(", ")
    }
}

/// The offsets column: the block offset in each layout that has the register (`0x1c`, or
/// `0x190 (×8) · 0x190 (×64)`, or `— · 0x1c`).
fn offsets_text(r: &Reg) -> String {
    let one = |l: Layout| {
        let n = r.words[l.index()];
        match n {
            0 => "—".to_string(),
            1 => format!("{:#x}", l.rel(*r)),
            n => format!("{:#x} (×{n})", l.rel(*r)),
        }
    };
    let (a, b) = (one(Layout::V3), one(Layout::V4));
    if a == b { a } else { format!("{a} · {b}") }
}

/// Writes `docs/ernic-registers.md`: every register, field and structure of this module, in
/// both layouts, with the PG332 table it comes from and any disagreement.
pub fn write_markdown(out: &mut dyn fmt::Write) -> fmt::Result {
    writeln!(
        out,
        "# ERNIC register space (v3.x and v4.x layouts), as the firmware uses it"
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "Generated by `backline-board` from `board/src/ernic.rs`; do not edit. Each \
         row names the table of AMD's PG332 it was checked against; *note* gives where the \
         Xilinx ERNIC Linux driver disagrees, where a figure comes from elsewhere, or a \
         firmware convention. Every register resets to 0."
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| layout | IP versions | memory-region table | global registers | QP `n` | window |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|")?;
    for l in Layout::ALL {
        writeln!(
            out,
            "| {} | {} | `0x0`, {} entries of {MR_STRIDE:#x} | `{:#x}` | `{:#x} + (n − 1) × \
             {QP_STRIDE:#x}`, n ≤ {} | {} KiB |",
            l.short(),
            l.ip_versions().join(", "),
            l.mr_entries(),
            l.global_base(),
            l.qp_base(),
            l.max_qpn(),
            l.window_bytes() / 1024
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Offsets below are in the register's block. Where the layouts differ the offset \
         column reads `v3.x · v4.x` (— where a layout has no such register, ×N for a bank of \
         N words) and the fields column lists each layout's own fields. The layouts are told \
         apart by v4.x's `XRNIC_VERSION` (absolute `{VERSION_OFFSET:#x}`, major 4) and, \
         without it, by v3.x's reserved words at {} reading 0.",
        V3_PROBES.map(|p| format!("`{p:#x}`")).join(", ")
    )?;
    let tables: [(&str, &[Reg]); 3] = [
        (
            "Global registers (offset in the global block)",
            global::GLOBAL_REGS,
        ),
        ("Per-QP registers (offset in the QP's block)", qp::QP_REGS),
        ("Memory-region table (offset in the entry)", mr::MR_REGS),
    ];
    for (title, regs) in tables {
        writeln!(out)?;
        writeln!(out, "## {title}")?;
        writeln!(out)?;
        writeln!(out, "| offset | name | access | fields | PG332 | note |")?;
        writeln!(out, "|-------:|------|--------|--------|-------|------|")?;
        for r in regs {
            let mut fields = fields_text(r.fields.iter().copied());
            for (l, own) in [(Layout::V3, r.v3_fields), (Layout::V4, r.v4_fields)] {
                if !own.is_empty() {
                    fields += &format!("; {}: {}", l.short(), fields_text(own.iter().copied()));
                }
            }
            writeln!(
                out,
                "| {} | `{}` | {} | {} | {} | {} |",
                offsets_text(r),
                r.name,
                r.access.short(),
                fields,
                r.pg332,
                r.note
            )?;
        }
    }
    writeln!(out)?;
    writeln!(out, "## WQE (PG332 Table 2-1), 64 bytes, both layouts")?;
    writeln!(out)?;
    writeln!(out, "| byte offset | field |")?;
    writeln!(out, "|------------:|-------|")?;
    for (off, name) in [
        (wqe::WRID, "WRID (15:0)"),
        (wqe::LADDR_LO, "LADDR, low"),
        (wqe::LADDR_HI, "LADDR, high"),
        (wqe::LENGTH, "LENGTH"),
        (wqe::OPCODE, "OPCODE (7:0)"),
        (wqe::ROFFSET_LO, "ROFFSET, low"),
        (wqe::ROFFSET_HI, "ROFFSET, high"),
        (wqe::RTAG, "RTAG"),
        (wqe::SDATA, "SDATA (16 bytes)"),
        (wqe::IMMDT, "IMMDT"),
    ] {
        writeln!(out, "| {off:#04x} | {name} |")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "## CQE (PG332 Table 2-2), 4 bytes: WRID 15:0, OPCODE 23:16, ERRFLAG 31:24"
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_aligned_unique_and_located_in_both_layouts() {
        for l in Layout::ALL {
            for table in [global::GLOBAL_REGS, qp::QP_REGS, mr::MR_REGS] {
                let mut present: Vec<&Reg> = table.iter().filter(|r| l.has(**r)).collect();
                present.sort_by_key(|r| l.rel(**r));
                for w in present.windows(2) {
                    let end = l.rel(*w[0]) + 4 * w[0].words[l.index()];
                    assert!(end <= l.rel(*w[1]), "{l}: {} / {}", w[0].name, w[1].name);
                }
                for r in table {
                    assert_eq!(r.rel % 4, 0, "{}", r.name);
                    assert_eq!(r.rel_v4 % 4, 0, "{}", r.name);
                    assert!(!r.pg332.is_empty(), "{} cites no PG332 table", r.name);
                    let mut used = 0u32;
                    for fl in l.fields(*r) {
                        assert!(fl.lsb + fl.width <= 32, "{}.{}", r.name, fl.name);
                        assert_eq!(used & fl.mask(), 0, "{l}: {}.{} overlaps", r.name, fl.name);
                        used |= fl.mask();
                    }
                }
            }
            for r in global::GLOBAL_REGS.iter().filter(|r| l.has(**r)) {
                assert!(l.g(*r) < l.qp_base(), "{}", r.name);
                let loc = l.locate(l.g(*r)).unwrap();
                assert_eq!(loc.reg, *r);
                let words = r.words[l.index()];
                if words > 1 {
                    assert_eq!(loc.unit, Unit::Word(1));
                    let last = l.locate(l.g_word(*r, words - 1)).unwrap();
                    assert_eq!((last.reg, last.unit), (*r, Unit::Word(words)));
                } else {
                    assert_eq!(loc.unit, Unit::Global);
                }
            }
            for r in qp::QP_REGS {
                assert!(r.rel < QP_STRIDE);
                for qpn in [1, 2, 17, MAX_QPN, l.max_qpn()] {
                    let loc = l.locate(l.qp_offset(qpn, *r)).unwrap();
                    assert_eq!((loc.reg, loc.unit), (*r, Unit::Qp(qpn)));
                }
            }
            for r in mr::MR_REGS {
                for i in [0, 1, MR_ENTRIES - 1, l.mr_entries() - 1] {
                    let loc = l.locate(l.mr_offset(i, *r)).unwrap();
                    assert_eq!((loc.reg, loc.unit), (*r, Unit::Mr(i)));
                }
            }
            assert!(l.qp_offset(l.max_qpn(), qp::STATRQBUFCAMSB) < l.window_bytes());
            assert_eq!(l.locate(l.qp_base() + l.max_qpn() * QP_STRIDE), None);
            assert_eq!(l.locate(0x11C).unwrap().to_string(), "ACCESSDESC[MR 1]");
        }
        // The v3.x identification probes are reserved offsets there; the old model's
        // "version" register is the guide's RoCE buffer threshold.
        for p in V3_PROBES {
            assert_eq!(Layout::V3.locate(p), None, "{p:#x}");
        }
        let v3 = Layout::V3;
        assert_eq!(
            v3.locate(0x2_0008).unwrap().reg.name,
            "XRNIC_BUF_THRESHOLD_ROCE"
        );
        assert_eq!(v3.qp_offset(2, qp::QPCONF), 0x2_0300);
        assert_eq!(v3.qp_offset(2, qp::TIMEOUTCONF), 0x2_034C);
        assert_eq!(v3.locate(0x1_8000), None);
        // v4.x: the blocks moved, the offsets inside them did not.
        let v4 = Layout::V4;
        assert_eq!(VERSION_OFFSET, 0x10_001C);
        assert_eq!(v4.g(global::XRNICCONF), 0x10_0000);
        assert_eq!(v4.g(global::XRNIC_CONF_QP_EN), 0x10_0044);
        assert_eq!(v4.g(global::CQINTSTS), 0x10_0290);
        assert_eq!(v3.g(global::CQINTSTS), 0x2_01B0);
        assert_eq!(v4.qp_offset(1, qp::QPCONF), 0x18_0000);
        assert_eq!(v4.qp_offset(2, qp::SQPI), 0x18_0138);
        assert_eq!(v4.locate(0x10_001C).unwrap().reg.name, "XRNIC_VERSION");
        assert_eq!(v4.locate(0x10_0290).unwrap().to_string(), "CQINTSTS1");
        assert_eq!(v3.locate(0x2_01B4).unwrap().to_string(), "CQINTSTS2");
        assert!(!v3.has(global::XRNIC_VERSION) && !v3.has(global::XRNIC_CONF_QP_EN));
        assert_eq!(v3.locate(0x2_0044), None);
        // Names for logs: v3.x below its window, v4.x above.
        assert_eq!(locate_any(0x2_0300).unwrap().to_string(), "QPCONF[QP 2]");
        assert_eq!(locate_any(0x18_0100).unwrap().to_string(), "QPCONF[QP 2]");
        assert_eq!(locate_any(0x10_0000).unwrap().to_string(), "XRNICCONF");
    }

    #[test]
    fn fields_sit_where_the_guide_puts_them() {
        // PG332 Register Space, per-QP table, QPCONFi; Interrupts (QPCONFi[4]).
        assert_eq!(qp::QPCONF_HW_HANDSHAKE_DIS.bits(1), 1 << 4);
        assert_eq!(qp::QPCONF_CQE_WRITE_EN.bits(1), 1 << 5);
        assert_eq!(qp::QPCONF_PMTU.bits(4), 4 << 8);
        assert_eq!(qp::QPCONF_RQ_BUF_SIZE.bits(1), 1 << 16);
        assert_eq!(qp::STATQP_FATAL.bits(1), 1);
        assert_eq!(qp::STATQP_SQ_EMPTY.bits(1), 1 << 9);
        assert_eq!(global::INT_FATAL_ERR.bits(1), 1 << 7);
        assert_eq!(global::INT_WQE_COMPLETED.bits(1), 1 << 4);
        assert_eq!(mr::access::READ_WRITE, 2);
        assert_eq!(base_count_width(200.0), 10);
        assert_eq!(base_count_width(400.0), 11);
        assert_eq!(base_count_width(125.0), 9);
        // The fields the layouts move.
        assert_eq!(Layout::V3.udp_sport().bits(4791), 4791 << 16);
        assert_eq!(Layout::V4.udp_sport().bits(4791), 4791 << 8);
        assert_eq!(Layout::V3.num_qps().0.name, "XRNICCONF");
        assert_eq!(Layout::V4.num_qps().1.bits(2), 2);
        let xc: Vec<&str> = Layout::V4
            .fields(global::XRNICCONF)
            .map(|f| f.name)
            .collect();
        assert!(!xc.contains(&"num_qps"), "{xc:?}");
        assert_eq!(
            Layout::V4
                .fields(global::XRNICADCONF)
                .find(|f| f.name == "sw_override_qpn")
                .unwrap()
                .mask(),
            0xFFF0_0000
        );
        // Table 2-1: LADDR at bit 32, LENGTH at 96, OPCODE at 128, ROFFSET at 160, RTAG at
        // 224, SDATA at 256.
        assert_eq!(
            [
                wqe::LADDR_LO,
                wqe::LENGTH,
                wqe::OPCODE,
                wqe::ROFFSET_LO,
                wqe::RTAG,
                wqe::SDATA
            ],
            [32 / 8, 96 / 8, 128 / 8, 160 / 8, 224 / 8, 256 / 8]
        );
        assert_eq!(cqe::ERRFLAG.bits(1), 1 << 24);
    }

    #[test]
    fn the_version_register_tells_the_layouts_apart() {
        assert_eq!(identify_version(0x0004_0000), Ok(Some(Layout::V4)));
        assert_eq!(identify_version(0x0004_0200), Ok(Some(Layout::V4)));
        assert_eq!(identify_version(0), Ok(None));
        let e = identify_version(0x0003_0100).unwrap_err();
        assert!(e.contains("reads 0x00030100 (version 3.1.0)"), "{e}");
        assert!(e.contains("names neither layout"), "{e}");
        let e = identify_version(0xDEAD_BEEF).unwrap_err();
        assert!(e.contains("0x10001c"), "{e}");
        assert_eq!(version_text(0x0004_0201), "4.2.1");
        assert!(check_ident(&[(V3_PROBES[0], 0), (V3_PROBES[1], 0)]).is_ok());
        let e = check_ident(&[(V3_PROBES[0], 0x0004_0200)]).unwrap_err();
        assert!(e.contains("reserved offset 0x2001c"), "{e}");
        assert!(e.contains("ERNIC v4.x"), "{e}");
        for (v, l) in [
            ("3.1", Layout::V3),
            ("4.0", Layout::V4),
            ("4.3", Layout::V4),
        ] {
            assert_eq!(Layout::of_ip_version(v), Some(l));
        }
        assert_eq!(Layout::of_ip_version("5.0"), None);
        assert_eq!(Layout::parse("v4.x"), Some(Layout::V4));
        assert_eq!(Layout::parse("3"), Some(Layout::V3));
        assert_eq!(Layout::parse("v5"), None);
    }

    #[test]
    fn mac_registers_round_trip() {
        let mac = [0x02, 0x0a, 0x35, 0x01, 0x02, 0x03];
        let (l, m) = mac_regs(mac);
        assert_eq!((l, m), (0x3501_0203, 0x0000_020a));
        assert_eq!(mac_from_regs(l, m), mac);
    }

    #[test]
    fn checked_in_markdown_is_current() {
        let mut s = String::new();
        write_markdown(&mut s).unwrap();
        assert!(s.contains("| 0x10 | `SQBA` |"), "{s}");
        assert!(s.contains("| — · 0x1c | `XRNIC_VERSION` |"), "{s}");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ernic-registers.md");
        if std::env::var_os("BACKLINE_BLESS").is_some() {
            std::fs::write(path, &s).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == s,
            "docs/ernic-registers.md is stale: run `BACKLINE_BLESS=1 cargo test -p backline-board`"
        );
    }
}
