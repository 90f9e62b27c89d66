//! The ERNIC register space and queue entries — the one module that holds ERNIC offsets,
//! fields and structures, checked against AMD's product guide.
//!
//! **Authority.** *Xilinx Embedded RDMA Enabled NIC LogiCORE IP Product Guide* (PG332):
//! the chapter "Register Space" (one table per block: the memory-region table, the global
//! configuration and status registers, the per-QP registers), Table 2-1 "WQE Structure",
//! Table 2-2 "Completion Queue Entry Structure" and the sections "Interrupts", "ERNIC Global
//! Configuration" and "ERNIC TX Path". Every definition below names the table it comes
//! from in its `pg332` field (and that text is printed next to it in
//! `docs/ernic-registers.md`, generated from this module). Where the Xilinx ERNIC Linux
//! driver (`drivers/staging/xlnx_ernic/xhw_def.h` of linux-xlnx, and its later
//! `XRNIC_*` register list) says something else, the `note` says so; `docs/firmware.md`
//! lists those disagreements and every change this module made against the model the
//! firmware used before.
//!
//! **Layout.** This firmware programs the *v3.x register space* (ERNIC v3.0/v3.1, PG332 v3.1;
//! the layout of SPEC §6): the memory-region table at `0x0`, the global registers at
//! `0x2_0000`, QP `n`'s registers at `0x2_0200 + (n − 1) × 0x100`, a 256 KiB window. The
//! offsets *inside* each block are the same in PG332 v4.x, which moved the blocks (a
//! 2048-entry memory-region table, globals at `0x10_0000`, QPs at `0x18_0000`), moved the QP
//! count out of `XRNICCONF` into `XRNIC_CONF_QP_EN` and the UDP source port to bits 23:8, and
//! added an *XRNIC Version* register at global + `0x1C`. **The v3.x space has no version or
//! identification register**: the register the old model read at `0x2_0008` as a version
//! is the guide's `XRNIC_BUF_THRESHOLD_ROCE` (the driver's `XRNIC_ROCE_PAUSE_OFFSET`).
//! What can be checked without writing is that the v3.x space's reserved words read as
//! zero (the guide: unspecified bits are reserved and read 0) — [`IDENT_PROBES`]. A v4.x IP
//! at the same base would answer those too (its memory-region table lies there), so the IP
//! version of the block design must be confirmed once by hand; `backline-apu info` says so.
//!
//! **Reset values.** The guide: control registers power up at 0 unless a table says
//! otherwise, and none used here does; [`RESET_VALUE`].
//!
//! Access classes and bit fields reuse the types of `backline-regmap`.

use std::fmt;

use backline_regmap::{Access, Field};

/// The register space this module describes, as `backline-apu info` names it.
pub const LAYOUT: &str = "ERNIC v3.x register space (PG332 v3.1)";

/// Bytes of register space the v3.x ERNIC decodes (the window to map).
pub const WINDOW_BYTES: u32 = 0x4_0000;
/// Base of the global registers (PG332 v3.1 Register Space, global table).
pub const GLOBAL_BASE: u32 = 0x2_0000;
/// Base of QP 1's registers; QP `n` is at `QP_BASE + (n − 1) × QP_STRIDE` (PG332 Register
/// Space, per-QP table, "QPCONFi").
pub const QP_BASE: u32 = 0x2_0200;
/// Bytes between two QPs' register blocks.
pub const QP_STRIDE: u32 = 0x100;
/// Bytes between two memory-region entries (PG332 Register Space, memory-region table:
/// `0x00 + i × 0x100`).
pub const MR_STRIDE: u32 = 0x100;
/// Entries of the memory-region table this firmware uses (PD 0 ..= 255; the v3.x space has
/// room for 512 below the global block, PG332 v4.x lists 2048 in its own layout).
pub const MR_ENTRIES: u32 = 256;
/// Highest QP number of the layout (`XRNICCONF.num_qps` is 8 bits).
pub const MAX_QPN: u32 = 255;
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

/// One register (global offsets are absolute; QP and memory-region offsets are relative to
/// their block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg {
    /// Upper-case name as PG332 spells it (`QPCONF`; the guide adds an `i` for per-QP ones).
    pub name: &'static str,
    /// Byte offset.
    pub offset: u32,
    /// Access class.
    pub access: Access,
    /// What it does.
    pub doc: &'static str,
    /// Bit fields; empty when the register is one value.
    pub fields: &'static [Field],
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
    offset: u32,
    access: Access,
    doc: &'static str,
    fields: &'static [Field],
    pg332: &'static str,
) -> Reg {
    Reg {
        name,
        offset,
        access,
        doc,
        fields,
        pg332,
        note: "",
    }
}

const fn noted(r: Reg, note: &'static str) -> Reg {
    Reg { note, ..r }
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

/// The global registers (absolute offsets; PG332 Register Space, global table).
pub mod global {
    use super::*;

    /// `XRNICCONF.enable`: the engine runs.
    pub const XRNICCONF_ENABLE: Field = f("enable", 0, 1, "ERNIC enabled.");
    /// `XRNICCONF.tx_ack_gen`: when ACKs go out (0: on an explicit ACK request or timeout).
    pub const XRNICCONF_TX_ACK_GEN: Field = f("tx_ack_gen", 3, 2, "TX ACK generation mode.");
    /// `XRNICCONF.err_buf_en`: headers of packets that fail validation go to the error
    /// buffers.
    pub const XRNICCONF_ERR_BUF_EN: Field = f("err_buf_en", 5, 1, "Error buffer enable.");
    /// `XRNICCONF.num_qps`: QPs in use, QP 1 included.
    pub const XRNICCONF_NUM_QPS: Field = f("num_qps", 8, 8, "QPs in use, QP 1 included.");
    /// `XRNICCONF.udp_sport`: UDP source port of outgoing RoCE v2 packets.
    pub const XRNICCONF_UDP_SPORT: Field = f("udp_sport", 16, 16, "UDP source port (RoCE v2).");
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
    /// `XRNICADCONF.sw_override_qpn`: the QP the override applies to.
    pub const XRNICADCONF_SW_OVERRIDE_QPN: Field = f(
        "sw_override_qpn",
        24,
        8,
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
        XRNICCONF = noted(reg("XRNICCONF", 0x2_0000, RW, "Global configuration; written last of the global block.",
            &[XRNICCONF_ENABLE, XRNICCONF_TX_ACK_GEN, XRNICCONF_ERR_BUF_EN, XRNICCONF_NUM_QPS, XRNICCONF_UDP_SPORT], G),
            "driver: bit 1 ip_version, bit 2 depkt_bypass_en (struct xrnic_conf), bit 5 error buffers; PG332 v4.x: UDP port in 23:8, QP count in XRNIC_CONF_QP_EN");
        XRNICADCONF = reg("XRNICADCONF", 0x2_0004, RW, "Advanced configuration.",
            &[XRNICADCONF_SW_OVERRIDE, XRNICADCONF_RETRY_CNT_FATAL_DIS, XRNICADCONF_BASE_COUNT_WIDTH, XRNICADCONF_SW_OVERRIDE_QPN], G);
        XRNIC_BUF_THRESHOLD_ROCE = noted(reg("XRNIC_BUF_THRESHOLD_ROCE", 0x2_0008, RW, "PFC XON/XOFF buffer thresholds for RoCE traffic (not used: no PFC).", &[], G),
            "driver: XRNIC_ROCE_PAUSE_OFFSET; the old model read a version register here");
        XRNIC_PAUSE_CONF = reg("XRNIC_PAUSE_CONF", 0x2_000C, RW, "PFC pause enable and priorities (not used).", &[], G);
        MACXADDLSB = reg("MACXADDLSB", 0x2_0010, RW, "Own MAC address, octets 2..5 (octet 2 in bits 31:24).", &[], G);
        MACXADDMSB = reg("MACXADDMSB", 0x2_0014, RW, "Own MAC address, octets 0..1 in bits 15:0.", &[], G);
        XRNIC_BUF_THRESHOLD_NON_ROCE = noted(reg("XRNIC_BUF_THRESHOLD_NON_ROCE", 0x2_0018, RW, "PFC buffer thresholds for non-RoCE traffic (not used).", &[], G),
            "driver: XRNIC_NON_ROCE_PAUSE_OFFSET");
        IPV6XADD1 = reg("IPv6XADD1", 0x2_0020, RW, "Own IPv6 address, word 1 (unused: IPv4).", &[], G);
        IPV6XADD2 = reg("IPv6XADD2", 0x2_0024, RW, "Own IPv6 address, word 2.", &[], G);
        IPV6XADD3 = reg("IPv6XADD3", 0x2_0028, RW, "Own IPv6 address, word 3.", &[], G);
        IPV6XADD4 = reg("IPv6XADD4", 0x2_002C, RW, "Own IPv6 address, word 4.", &[], G);
        ERRBUFBA = reg("ERRBUFBA", 0x2_0060, RW, "Error buffer base, low 32 bits.", &[], G);
        ERRBUFBAMSB = reg("ERRBUFBAMSB", 0x2_0064, RW, "Error buffer base, high 32 bits.", &[], G);
        ERRBUFSZ = reg("ERRBUFSZ", 0x2_0068, RW, "Error buffers: count and bytes each.", BUFSZ, G);
        ERRBUFWPTR = reg("ERRBUFWPTR", 0x2_006C, RO, "Error buffer write pointer (the IP advances it).", &[], G);
        IPV4XADD = reg("IPv4XADD", 0x2_0070, RW, "Own IPv4 address (a.b.c.d as 0xaabbccdd).", &[], G);
        IPKTERRQBA = reg("IPKTERRQBA", 0x2_0088, RW, "Incoming-packet error status queue base, low 32 bits.", &[], G);
        IPKTERRQBAMSB = reg("IPKTERRQBAMSB", 0x2_008C, RW, "Incoming-packet error status queue base, high 32 bits.", &[], G);
        IPKTERRQSZ = reg("IPKTERRQSZ", 0x2_0090, RW, "Incoming-packet error status queue entries.", QSZ, G);
        IPKTERRQWPTR = reg("IPKTERRQWPTR", 0x2_0094, RO, "Incoming-packet error status queue write pointer.", &[], G);
        DATBUFBA = reg("DATBUFBA", 0x2_00A0, RW, "Data buffer base (outgoing data kept until acknowledged), low 32 bits.", &[], G);
        DATBUFBAMSB = reg("DATBUFBAMSB", 0x2_00A4, RW, "Data buffer base, high 32 bits.", &[], G);
        DATBUFSZ = reg("DATBUFSZ", 0x2_00A8, RW, "Data buffers: count and bytes each.", BUFSZ, G);
        CNCTIOCONF = noted(reg("CNCTIOCONF", 0x2_00AC, RW, "Connect-I/O configuration (not used).", &[], G),
            "driver: XRNIC_CNCT_IO_CONF, \"only valid for nvmf\"");
        RESPERRPKTBA = reg("RESPERRPKTBA", 0x2_00B0, RW, "Response-error packet buffer base, low 32 bits.", &[], G);
        RESPERRPKTBAMSB = reg("RESPERRPKTBAMSB", 0x2_00B4, RW, "Response-error packet buffer base, high 32 bits.", &[], G);
        RESPERRSZ = reg("RESPERRSZ", 0x2_00B8, RW, "Response-error buffers: count and bytes each.", BUFSZ, G);
        RESPERRBUFWPTR = noted(reg("RESPERRBUFWPTR", 0x2_00BC, RW, "Address the IP writes its response-error write pointer to.", &[], G),
            "the v3 programming notes call it RESP_ERR_BUF_WRPTR; AMD's RecoNIC names the offset RESPERRSZMSB");
        INTEN = reg("INTEN", 0x2_0180, RW, "Interrupt enables.", INT, "Interrupts; Register Space, global table");
        INTSTS = noted(reg("INTSTS", 0x2_0184, RW, "Interrupt status; write 1 to clear a bit.", INT, "Interrupts; Register Space, global table"),
            "driver: bit 2 bypass packet received; the guide marks it reserved");
    }
}

/// The per-QP registers (offsets relative to the QP's block; see [`qp_offset`]; PG332
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
/// [`mr_offset`]; PG332 Register Space, memory-region table).
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

/// Offsets of the v3.x space that are reserved (between registers of the global block) and
/// so read 0 on a v3.x ERNIC; `backline-apu` reads them before trusting any other offset.
pub const IDENT_PROBES: [u32; 3] = [GLOBAL_BASE + 0x1C, GLOBAL_BASE + 0x98, GLOBAL_BASE + 0x9C];

/// Absolute offset of QP `qpn`'s register `r` (`qpn` in 1 ..= [`MAX_QPN`]).
pub const fn qp_offset(qpn: u32, r: Reg) -> u32 {
    QP_BASE + (qpn - 1) * QP_STRIDE + r.offset
}

/// Absolute offset of memory-region entry `index`'s register `r`.
pub const fn mr_offset(index: u32, r: Reg) -> u32 {
    index * MR_STRIDE + r.offset
}

/// Which instance of a register an offset belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A global register.
    Global,
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
            Unit::Qp(n) => write!(f, "{}[QP {n}]", self.reg.name),
            Unit::Mr(n) => write!(f, "{}[MR {n}]", self.reg.name),
        }
    }
}

/// Decodes an absolute offset into its register and instance.
pub fn locate(offset: u32) -> Option<Loc> {
    if offset < MR_ENTRIES * MR_STRIDE {
        let (index, rel) = (offset / MR_STRIDE, offset % MR_STRIDE);
        let reg = *mr::MR_REGS.iter().find(|r| r.offset == rel)?;
        return Some(Loc {
            reg,
            unit: Unit::Mr(index),
        });
    }
    if (GLOBAL_BASE..QP_BASE).contains(&offset) {
        let reg = *global::GLOBAL_REGS.iter().find(|r| r.offset == offset)?;
        return Some(Loc {
            reg,
            unit: Unit::Global,
        });
    }
    if offset >= QP_BASE {
        let qpn = (offset - QP_BASE) / QP_STRIDE + 1;
        if qpn > MAX_QPN {
            return None;
        }
        let rel = (offset - QP_BASE) % QP_STRIDE;
        let reg = *qp::QP_REGS.iter().find(|r| r.offset == rel)?;
        return Some(Loc {
            reg,
            unit: Unit::Qp(qpn),
        });
    }
    None
}

/// The identification check: the reserved words of [`IDENT_PROBES`] as read; the reason
/// when one of them is not zero (then this is not the v3.x ERNIC space this firmware knows).
pub fn check_ident(read: &[(u32, u32)]) -> Result<(), String> {
    match read.iter().find(|(_, v)| *v != 0) {
        None => Ok(()),
        Some((off, v)) => Err(format!(
            "reserved offset {off:#x} of the ERNIC v3.x register space reads {v:#010x} (PG332: \
             reserved bits read 0): this window does not hold an ERNIC v3.x register space \
             (a wrong base address, another IP, or an ERNIC v4.x, which moved its blocks); no \
             offset of it can be trusted"
        )),
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

/// Writes `docs/ernic-registers.md`: every register, field and structure of this module with
/// the PG332 table it comes from and any disagreement.
pub fn write_markdown(out: &mut dyn fmt::Write) -> fmt::Result {
    writeln!(
        out,
        "# ERNIC register space (v3.x layout), as the firmware uses it"
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "Generated by `backline-board` from `board/src/ernic.rs`; do not edit. Each \
         row names the table of AMD's PG332 it was checked against; *note* gives where the \
         Xilinx ERNIC Linux driver disagrees, or a firmware convention. Blocks: memory-region \
         table at `0x0` (entry `i` at `i × {MR_STRIDE:#x}`), global registers at \
         `{GLOBAL_BASE:#x}`, QP `n` at `{QP_BASE:#x} + (n − 1) × {QP_STRIDE:#x}`; window \
         {} KiB. Every register resets to 0.",
        WINDOW_BYTES / 1024
    )?;
    let tables: [(&str, &[Reg]); 3] = [
        ("Global registers (absolute offsets)", global::GLOBAL_REGS),
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
            let fields: Vec<String> = r
                .fields
                .iter()
                .map(|f| {
                    if f.width == 1 {
                        format!("{} `{}`", f.lsb, f.name)
                    } else {
                        format!("{}:{} `{}`", f.lsb + f.width - 1, f.lsb, f.name)
                    }
                })
                .collect();
            writeln!(
                out,
                "| {:#x} | `{}` | {} | {} | {} | {} |",
                r.offset,
                r.name,
                r.access.short(),
                if fields.is_empty() {
                    "—".to_string()
                } else {
                    fields.join(", ")
                },
                r.pg332,
                r.note
            )?;
        }
    }
    writeln!(out)?;
    writeln!(out, "## WQE (PG332 Table 2-1), 64 bytes")?;
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
    fn offsets_are_aligned_unique_and_located() {
        for table in [global::GLOBAL_REGS, qp::QP_REGS, mr::MR_REGS] {
            for w in table.windows(2) {
                assert!(w[0].offset < w[1].offset, "{} / {}", w[0].name, w[1].name);
            }
            for r in table {
                assert_eq!(r.offset % 4, 0, "{}", r.name);
                assert!(!r.pg332.is_empty(), "{} cites no PG332 table", r.name);
                let mut used = 0u32;
                for fl in r.fields {
                    assert!(fl.lsb + fl.width <= 32, "{}.{}", r.name, fl.name);
                    assert_eq!(used & fl.mask(), 0, "{}.{} overlaps", r.name, fl.name);
                    used |= fl.mask();
                }
            }
        }
        for r in global::GLOBAL_REGS {
            assert!((GLOBAL_BASE..QP_BASE).contains(&r.offset), "{}", r.name);
            let l = locate(r.offset).unwrap();
            assert_eq!((l.reg, l.unit), (*r, Unit::Global));
        }
        for r in qp::QP_REGS {
            assert!(r.offset < QP_STRIDE);
            for qpn in [1, 2, 17, MAX_QPN] {
                let l = locate(qp_offset(qpn, *r)).unwrap();
                assert_eq!((l.reg, l.unit), (*r, Unit::Qp(qpn)));
            }
        }
        for r in mr::MR_REGS {
            for i in [0, 1, MR_ENTRIES - 1] {
                let l = locate(mr_offset(i, *r)).unwrap();
                assert_eq!((l.reg, l.unit), (*r, Unit::Mr(i)));
            }
        }
        // The identification probes are reserved offsets, and the old model's "version"
        // register is the guide's RoCE buffer threshold.
        for p in IDENT_PROBES {
            assert_eq!(locate(p), None, "{p:#x}");
        }
        assert_eq!(
            locate(0x2_0008).unwrap().reg.name,
            "XRNIC_BUF_THRESHOLD_ROCE"
        );
        assert_eq!(qp_offset(2, qp::QPCONF), 0x2_0300);
        assert_eq!(qp_offset(2, qp::TIMEOUTCONF), 0x2_034C);
        assert!(qp_offset(MAX_QPN, qp::STATRQBUFCAMSB) < WINDOW_BYTES);
        assert_eq!(locate(0x11C).unwrap().to_string(), "ACCESSDESC[MR 1]");
        assert_eq!(locate(0x1_8000), None);
        assert_eq!(locate(QP_BASE + MAX_QPN * QP_STRIDE), None);
    }

    #[test]
    fn fields_sit_where_the_guide_puts_them() {
        // PG332 Register Space, per-QP table, QPCONFi; Interrupts (QPCONFi[4] = 0 for QPs
        // the hardware handshake drives).
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
    fn identification_probes_must_read_zero() {
        assert!(check_ident(&[(IDENT_PROBES[0], 0), (IDENT_PROBES[1], 0)]).is_ok());
        let e = check_ident(&[(IDENT_PROBES[0], 0x0004_0200)]).unwrap_err();
        assert!(e.contains("reserved offset 0x2001c"), "{e}");
        assert!(e.contains("ERNIC v4.x"), "{e}");
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
