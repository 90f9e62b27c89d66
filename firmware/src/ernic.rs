//! The ERNIC register map — the one module that holds ERNIC offsets and fields.
//!
//! **This is a model of the register layout, not a copy of the IP's documentation.** It
//! follows the v3 layout as public AMD drivers use it (SPEC §6): a memory-region table at the
//! bottom of the space, global registers at `0x2_0000`, per-QP registers at
//! `0x2_0200 + (qpn − 1) × 0x100`. Where this firmware had no source for a detail it made an
//! assumption, marked *model* in the docs below; check the product guide of the IP version on
//! your board against this table before the first bring-up, and change only this module.
//!
//! Assumptions of the model, in one place:
//! * an IP version register `XRNICVER` at `0x2_0008` (major in bits 31:16, minor 15:8,
//!   revision 7:0); only major version 3 is accepted, because v4 moved the blocks;
//! * the memory-region table is indexed by protection domain: entry `pd` at `pd × 0x100`,
//!   one region per PD, 256 entries;
//! * alignment rules: queue bases (SQ, RQ, CQ) and the error, data and response-error buffers
//!   on 64 bytes, doorbell write-back addresses on 4 bytes, a region's physical base on
//!   4 KiB and its virtual address on 64 bytes (one ring slot);
//! * `QPCONF.db_over_axi` = 0 means the SQ producer-index doorbell comes from the HWHS over
//!   the hardware-handshake port; 1 means the Arm writes `SQPI` over AXI4-Lite;
//! * `STATQP.fatal`: the QP is in the error state (retries exhausted, or a NAK); it stays
//!   there until `QPCONF.enable` is cleared.
//!
//! Access classes and bit fields reuse the types of `backline-regmap`.

use std::fmt;

use backline_regmap::{Access, Field};

/// Bytes of register space the ERNIC decodes (the window to map).
pub const WINDOW_BYTES: u32 = 0x4_0000;
/// Base of the global registers.
pub const GLOBAL_BASE: u32 = 0x2_0000;
/// Base of QP 1's registers; QP `n` is at `QP_BASE + (n − 1) × QP_STRIDE`.
pub const QP_BASE: u32 = 0x2_0200;
/// Bytes between two QPs' register blocks.
pub const QP_STRIDE: u32 = 0x100;
/// Bytes between two memory-region entries.
pub const MR_STRIDE: u32 = 0x100;
/// Entries of the memory-region table.
pub const MR_ENTRIES: u32 = 256;
/// Highest QP number the layout has room for (`XRNICCONF.num_qps` is 8 bits).
pub const MAX_QPN: u32 = 255;
/// The management QP (GSI): configured by the IP itself, never a data QP.
pub const MANAGEMENT_QPN: u32 = 1;
/// The first QP number usable for data.
pub const FIRST_DATA_QPN: u32 = 2;

/// Alignment of the SQ, RQ and CQ base addresses (model).
pub const QUEUE_BASE_ALIGN: u64 = 64;
/// Alignment of the CQ and RQ doorbell write-back addresses (model).
pub const DOORBELL_ALIGN: u64 = 4;
/// Alignment of the error, data and response-error buffer bases (model).
pub const BUFFER_BASE_ALIGN: u64 = 64;
/// Alignment of a memory region's physical base (model).
pub const MR_PHYS_ALIGN: u64 = 4096;
/// Alignment of a memory region's virtual address (model; one ring slot).
pub const MR_VA_ALIGN: u64 = 64;
/// Path MTU codes of `QPCONF.pmtu`: code `i` is `256 << i` bytes.
pub const PMTU_BYTES: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// The ack timeout unit of `TIMEOUTCONF.timeout`: 4.096 µs × 2^timeout.
pub const ACK_TIMEOUT_UNIT_NS: u64 = 4096;

/// One register (global offsets are absolute; QP and memory-region offsets are relative to
/// their block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg {
    /// Upper-case name as in AMD's documents (`QPCONF`).
    pub name: &'static str,
    /// Byte offset.
    pub offset: u32,
    /// Access class.
    pub access: Access,
    /// What it does.
    pub doc: &'static str,
    /// Bit fields; empty when the register is one value.
    pub fields: &'static [Field],
}

const fn f(name: &'static str, lsb: u32, width: u32, doc: &'static str) -> Field {
    Field {
        name,
        lsb,
        width,
        doc,
    }
}

const fn reg(name: &'static str, offset: u32, access: Access, doc: &'static str) -> Reg {
    Reg {
        name,
        offset,
        access,
        doc,
        fields: &[],
    }
}

const fn regf(
    name: &'static str,
    offset: u32,
    access: Access,
    doc: &'static str,
    fields: &'static [Field],
) -> Reg {
    Reg {
        name,
        offset,
        access,
        doc,
        fields,
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

/// The global registers (absolute offsets).
pub mod global {
    use super::*;

    /// `XRNICCONF.enable`: the engine runs.
    pub const XRNICCONF_ENABLE: Field = f("enable", 0, 1, "ERNIC enabled.");
    /// `XRNICCONF.num_qps`: QPs in use, QP 1 included.
    pub const XRNICCONF_NUM_QPS: Field = f("num_qps", 8, 8, "QPs in use, QP 1 included.");
    /// `XRNICCONF.udp_sport`: UDP source port of outgoing RoCE v2 packets.
    pub const XRNICCONF_UDP_SPORT: Field = f("udp_sport", 16, 16, "UDP source port (RoCE v2).");
    /// `XRNICADCONF.sw_override`: the Arm drives the data path registers itself.
    pub const XRNICADCONF_SW_OVERRIDE: Field = f(
        "sw_override",
        0,
        1,
        "Software override; 0 when the HWHS drives the QPs.",
    );
    /// `XRNICVER.major` (model).
    pub const XRNICVER_MAJOR: Field = f("major", 16, 16, "Major version.");
    /// `XRNICVER.minor` (model).
    pub const XRNICVER_MINOR: Field = f("minor", 8, 8, "Minor version.");
    /// `XRNICVER.revision` (model).
    pub const XRNICVER_REVISION: Field = f("revision", 0, 8, "Revision.");
    /// Buffer count field of `ERRBUFSZ`, `DATBUFSZ`, `RESPERRSZ`.
    pub const BUFSZ_COUNT: Field = f("count", 0, 16, "Number of buffers.");
    /// Buffer size field of `ERRBUFSZ`, `DATBUFSZ`, `RESPERRSZ`.
    pub const BUFSZ_BYTES: Field = f("bytes", 16, 16, "Bytes per buffer.");
    /// `INTEN`/`INTSTS.rx_pkt`.
    pub const INT_RX_PKT: Field = f("rx_pkt", 0, 1, "Incoming packet for the Arm.");
    /// `INTEN`/`INTSTS.rx_err`.
    pub const INT_RX_ERR: Field = f("rx_err", 1, 1, "Incoming packet error.");
    /// `INTEN`/`INTSTS.rx_mad`.
    pub const INT_RX_MAD: Field = f("rx_mad", 2, 1, "Management datagram on QP 1.");
    /// `INTEN`/`INTSTS.cqe`.
    pub const INT_CQE: Field = f("cqe", 3, 1, "A CQE was written.");
    /// `INTEN`/`INTSTS.qp_fatal`.
    pub const INT_QP_FATAL: Field = f("qp_fatal", 4, 1, "A QP entered the fatal state.");

    const BUFSZ: &[Field] = &[BUFSZ_COUNT, BUFSZ_BYTES];
    const INT: &[Field] = &[INT_RX_PKT, INT_RX_ERR, INT_RX_MAD, INT_CQE, INT_QP_FATAL];

    regs! { GLOBAL_REGS:
        XRNICCONF = regf("XRNICCONF", 0x2_0000, RW, "Global configuration; written last of the global block.",
            &[XRNICCONF_ENABLE, XRNICCONF_NUM_QPS, XRNICCONF_UDP_SPORT]);
        XRNICADCONF = regf("XRNICADCONF", 0x2_0004, RW, "Advanced configuration.", &[XRNICADCONF_SW_OVERRIDE]);
        XRNICVER = regf("XRNICVER", 0x2_0008, RO, "IP version (model offset).",
            &[XRNICVER_MAJOR, XRNICVER_MINOR, XRNICVER_REVISION]);
        MACXADDLSB = reg("MACXADDLSB", 0x2_0010, RW, "Own MAC address, octets 2..5 (big-endian order).");
        MACXADDMSB = reg("MACXADDMSB", 0x2_0014, RW, "Own MAC address, octets 0..1 in bits 15:0.");
        IPV6XADD1 = reg("IPv6XADD1", 0x2_0020, RW, "Own IPv6 address, word 1 (unused: IPv4).");
        IPV6XADD2 = reg("IPv6XADD2", 0x2_0024, RW, "Own IPv6 address, word 2.");
        IPV6XADD3 = reg("IPv6XADD3", 0x2_0028, RW, "Own IPv6 address, word 3.");
        IPV6XADD4 = reg("IPv6XADD4", 0x2_002C, RW, "Own IPv6 address, word 4.");
        ERRBUFBA = reg("ERRBUFBA", 0x2_0060, RW, "Error buffer base, low 32 bits.");
        ERRBUFBAMSB = reg("ERRBUFBAMSB", 0x2_0064, RW, "Error buffer base, high 32 bits.");
        ERRBUFSZ = regf("ERRBUFSZ", 0x2_0068, RW, "Error buffers: count and bytes each.", BUFSZ);
        ERRBUFWPTR = reg("ERRBUFWPTR", 0x2_006C, RO, "Error buffer write pointer.");
        IPV4XADD = reg("IPv4XADD", 0x2_0070, RW, "Own IPv4 address (a.b.c.d as 0xaabbccdd).");
        DATBUFBA = reg("DATBUFBA", 0x2_00A0, RW, "Incoming data buffer base (QP 1 traffic), low 32 bits.");
        DATBUFBAMSB = reg("DATBUFBAMSB", 0x2_00A4, RW, "Incoming data buffer base, high 32 bits.");
        DATBUFSZ = regf("DATBUFSZ", 0x2_00A8, RW, "Data buffers: count and bytes each.", BUFSZ);
        RESPERRPKTBA = reg("RESPERRPKTBA", 0x2_00B0, RW, "Response-error packet buffer base, low 32 bits.");
        RESPERRPKTBAMSB = reg("RESPERRPKTBAMSB", 0x2_00B4, RW, "Response-error packet buffer base, high 32 bits.");
        RESPERRSZ = regf("RESPERRSZ", 0x2_00B8, RW, "Response-error buffers: count and bytes each.", BUFSZ);
        INTEN = regf("INTEN", 0x2_0180, RW, "Interrupt enables.", INT);
        INTSTS = regf("INTSTS", 0x2_0184, RW, "Interrupt status; write 1 to clear a bit.", INT);
    }
}

/// The per-QP registers (offsets relative to the QP's block; see [`qp_offset`]).
pub mod qp {
    use super::*;

    /// `QPCONF.enable`: the QP runs. Written last.
    pub const QPCONF_ENABLE: Field = f("enable", 0, 1, "QP enabled; written last.");
    /// `QPCONF.db_over_axi` (model): 1 = the Arm writes SQPI; 0 = the HWHS rings it.
    pub const QPCONF_DB_OVER_AXI: Field = f(
        "db_over_axi",
        4,
        1,
        "SQ doorbell over AXI4-Lite (1) or the hardware-handshake port (0).",
    );
    /// `QPCONF.cqe_write`: CQEs are written to the CQ in memory.
    pub const QPCONF_CQE_WRITE: Field = f("cqe_write", 5, 1, "Write CQEs to memory.");
    /// `QPCONF.ipv6`: IPv6 addressing (this firmware uses IPv4).
    pub const QPCONF_IPV6: Field = f("ipv6", 7, 1, "IPv6 (1) or IPv4 (0).");
    /// `QPCONF.pmtu`: path MTU code, `256 << code` bytes.
    pub const QPCONF_PMTU: Field = f("pmtu", 8, 3, "Path MTU: 256 << code bytes (0..=4).");
    /// `QPCONF.rq_buf_bytes`: bytes per RQ buffer.
    pub const QPCONF_RQ_BUF_BYTES: Field = f("rq_buf_bytes", 16, 16, "Bytes per RQ buffer.");
    /// `QPADVCONF.traffic_class`.
    pub const QPADVCONF_TRAFFIC_CLASS: Field = f("traffic_class", 0, 8, "IP traffic class.");
    /// `QPADVCONF.ttl`.
    pub const QPADVCONF_TTL: Field = f("ttl", 8, 8, "IP time to live.");
    /// `QPADVCONF.pkey`.
    pub const QPADVCONF_PKEY: Field = f("pkey", 16, 16, "Partition key.");
    /// `QDEPTH.sq`: SQ depth in WQEs.
    pub const QDEPTH_SQ: Field = f("sq", 0, 16, "SQ depth in WQEs.");
    /// `QDEPTH.rq`: RQ depth in buffers.
    pub const QDEPTH_RQ: Field = f("rq", 16, 16, "RQ depth in buffers.");
    /// A 24-bit PSN or QPN.
    pub const PSN: Field = f("psn", 0, 24, "Packet sequence number.");
    /// `DESTQPCONF.qpn`.
    pub const DESTQPCONF_QPN: Field = f("qpn", 0, 24, "Remote QP number.");
    /// `TIMEOUTCONF.timeout`: ack timeout 4.096 µs × 2^n.
    pub const TIMEOUTCONF_TIMEOUT: Field = f("timeout", 0, 6, "Ack timeout: 4.096 µs × 2^n.");
    /// `TIMEOUTCONF.retry`: retransmissions before the QP goes fatal.
    pub const TIMEOUTCONF_RETRY: Field = f("retry", 8, 3, "Retry count.");
    /// `TIMEOUTCONF.rnr_retry`.
    pub const TIMEOUTCONF_RNR_RETRY: Field = f("rnr_retry", 11, 3, "RNR retry count.");
    /// `STATQP.active`: enabled and not fatal.
    pub const STATQP_ACTIVE: Field = f("active", 0, 1, "Enabled and not in the error state.");
    /// `STATQP.fatal`: the QP is in the error state (model).
    pub const STATQP_FATAL: Field = f("fatal", 1, 1, "Error state: retries exhausted or NAK.");
    /// `STATQP.sq_empty`: every posted WQE completed.
    pub const STATQP_SQ_EMPTY: Field = f("sq_empty", 4, 1, "Every posted WQE has completed.");
    /// `PD.pd`: protection domain.
    pub const PD_PD: Field = f("pd", 0, 24, "Protection domain.");

    regs! { QP_REGS:
        QPCONF = regf("QPCONF", 0x00, RW, "QP configuration; enable is written last.",
            &[QPCONF_ENABLE, QPCONF_DB_OVER_AXI, QPCONF_CQE_WRITE, QPCONF_IPV6, QPCONF_PMTU, QPCONF_RQ_BUF_BYTES]);
        QPADVCONF = regf("QPADVCONF", 0x04, RW, "Advanced QP configuration.",
            &[QPADVCONF_TRAFFIC_CLASS, QPADVCONF_TTL, QPADVCONF_PKEY]);
        RQBA = reg("RQBA", 0x08, RW, "RQ base, low 32 bits.");
        SQBA = reg("SQBA", 0x10, RW, "SQ base, low 32 bits (the HWHS writes WQEs there).");
        CQBA = reg("CQBA", 0x18, RW, "CQ base, low 32 bits.");
        RQWPTRDBADD = reg("RQWPTRDBADD", 0x20, RW, "RQ write-pointer doorbell write-back address, low.");
        RQWPTRDBADDMSB = reg("RQWPTRDBADDMSB", 0x24, RW, "RQ write-pointer doorbell address, high.");
        CQDBADD = reg("CQDBADD", 0x28, RW, "CQ doorbell write-back address, low.");
        CQDBADDMSB = reg("CQDBADDMSB", 0x2C, RW, "CQ doorbell write-back address, high.");
        CQHEAD = reg("CQHEAD", 0x30, RO, "CQ head (the IP advances it).");
        RQCI = reg("RQCI", 0x34, RW, "RQ consumer index (software).");
        SQPI = reg("SQPI", 0x38, RW, "SQ producer index doorbell.");
        QDEPTH = regf("QDEPTH", 0x3C, RW, "Queue depths.", &[QDEPTH_SQ, QDEPTH_RQ]);
        SQPSN = regf("SQPSN", 0x40, RW, "First PSN this QP sends.", &[PSN]);
        LSTRQREQ = regf("LSTRQREQ", 0x44, RW, "PSN of the last request received (the peer's first PSN − 1).", &[PSN]);
        DESTQPCONF = regf("DESTQPCONF", 0x48, RW, "Remote QP number.", &[DESTQPCONF_QPN]);
        TIMEOUTCONF = regf("TIMEOUTCONF", 0x4C, RW, "Ack timeout and retry counts.",
            &[TIMEOUTCONF_TIMEOUT, TIMEOUTCONF_RETRY, TIMEOUTCONF_RNR_RETRY]);
        MACDESADDLSB = reg("MACDESADDLSB", 0x50, RW, "Remote MAC, octets 2..5.");
        MACDESADDMSB = reg("MACDESADDMSB", 0x54, RW, "Remote MAC, octets 0..1 in bits 15:0.");
        IPDESADDR1 = reg("IPDESADDR1", 0x60, RW, "Remote IP, word 1 (IPv4 address).");
        IPDESADDR2 = reg("IPDESADDR2", 0x64, RW, "Remote IP, word 2 (IPv6 only).");
        IPDESADDR3 = reg("IPDESADDR3", 0x68, RW, "Remote IP, word 3 (IPv6 only).");
        IPDESADDR4 = reg("IPDESADDR4", 0x6C, RW, "Remote IP, word 4 (IPv6 only).");
        STATSSN = reg("STATSSN", 0x80, RO, "Send sequence number.");
        STATMSN = reg("STATMSN", 0x84, RO, "Message sequence number.");
        STATQP = regf("STATQP", 0x88, RO, "QP status.", &[STATQP_ACTIVE, STATQP_FATAL, STATQP_SQ_EMPTY]);
        STATCURSQPTR = reg("STATCURSQPTR", 0x8C, RO, "SQ consumer index.");
        STATRESPSN = reg("STATRESPSN", 0x90, RO, "PSN of the last response.");
        PD = regf("PD", 0xB0, RW, "Protection domain of the QP.", &[PD_PD]);
        RQBAMSB = reg("RQBAMSB", 0xC0, RW, "RQ base, high 32 bits.");
        SQBAMSB = reg("SQBAMSB", 0xC8, RW, "SQ base, high 32 bits.");
        CQBAMSB = reg("CQBAMSB", 0xD0, RW, "CQ base, high 32 bits.");
    }
}

/// The memory-region table entry registers (offsets relative to the entry; see
/// [`mr_offset`]).
pub mod mr {
    use super::*;

    /// `ACCESSDESC.remote_read`.
    pub const ACCESSDESC_REMOTE_READ: Field = f("remote_read", 0, 1, "The peer may read.");
    /// `ACCESSDESC.remote_write`.
    pub const ACCESSDESC_REMOTE_WRITE: Field = f("remote_write", 1, 1, "The peer may write.");
    /// `ACCESSDESC.local_write`.
    pub const ACCESSDESC_LOCAL_WRITE: Field = f("local_write", 2, 1, "Local writes allowed.");

    regs! { MR_REGS:
        PDNUM = reg("PDNUM", 0x00, RW, "Protection domain of the region.");
        VIRTADDRLSB = reg("VIRTADDRLSB", 0x04, RW, "Virtual address the peer uses, low 32 bits.");
        VIRTADDRMSB = reg("VIRTADDRMSB", 0x08, RW, "Virtual address, high 32 bits.");
        BUFBASEADDRLSB = reg("BUFBASEADDRLSB", 0x0C, RW, "Physical (bus) base, low 32 bits.");
        BUFBASEADDRMSB = reg("BUFBASEADDRMSB", 0x10, RW, "Physical base, high 32 bits.");
        BUFRKEY = reg("BUFRKEY", 0x14, RW, "The region's 8-bit key.");
        WRRDBUFLEN = reg("WRRDBUFLEN", 0x18, RW, "Length in bytes.");
        ACCESSDESC = regf("ACCESSDESC", 0x1C, RW, "Access rights; non-zero makes the entry valid (written last).",
            &[ACCESSDESC_REMOTE_READ, ACCESSDESC_REMOTE_WRITE, ACCESSDESC_LOCAL_WRITE]);
    }
}

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

/// An ERNIC version as `XRNICVER` encodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Revision.
    pub revision: u32,
}

impl Version {
    /// The version the simulated board reports by default (a v3 layout).
    pub const MODEL: Version = Version {
        major: 3,
        minor: 1,
        revision: 0,
    };

    /// Decodes a register value.
    pub const fn from_reg(v: u32) -> Version {
        Version {
            major: global::XRNICVER_MAJOR.get(v),
            minor: global::XRNICVER_MINOR.get(v),
            revision: global::XRNICVER_REVISION.get(v),
        }
    }

    /// The register value.
    pub const fn to_reg(self) -> u32 {
        global::XRNICVER_MAJOR.bits(self.major)
            | global::XRNICVER_MINOR.bits(self.minor)
            | global::XRNICVER_REVISION.bits(self.revision)
    }

    /// Whether this firmware's offsets hold for the version; the reason when they do not.
    pub fn check(self) -> Result<(), String> {
        match self.major {
            3 => Ok(()),
            4 => Err(format!(
                "ERNIC v{self} moved its register blocks; this firmware knows the v3 layout only"
            )),
            _ => Err(format!(
                "ERNIC v{self} is not a version this firmware knows (it knows the v3 layout); \
                 no offset of it can be trusted"
            )),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.revision)
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
                for fl in r.fields {
                    assert!(fl.lsb + fl.width <= 32, "{}.{}", r.name, fl.name);
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
        // The blocks of SPEC §6 where SPEC puts them.
        assert_eq!(global::XRNICCONF.offset, 0x2_0000);
        assert_eq!(global::MACXADDLSB.offset, GLOBAL_BASE + 0x10);
        assert_eq!(global::MACXADDMSB.offset, GLOBAL_BASE + 0x14);
        assert_eq!(global::IPV4XADD.offset, GLOBAL_BASE + 0x70);
        assert_eq!(global::INTEN.offset, GLOBAL_BASE + 0x180);
        assert_eq!(qp_offset(2, qp::QPCONF), 0x2_0300);
        assert!(qp_offset(MAX_QPN, qp::CQBAMSB) < WINDOW_BYTES);
        assert_eq!(locate(0x2_0300).unwrap().to_string(), "QPCONF[QP 2]");
        assert_eq!(locate(0x11C).unwrap().to_string(), "ACCESSDESC[MR 1]");
        assert_eq!(locate(0x2_000C), None);
        assert_eq!(locate(0x1_8000), None);
        assert_eq!(locate(QP_BASE + MAX_QPN * QP_STRIDE), None);
    }

    #[test]
    fn versions_decide_the_layout() {
        assert_eq!(Version::from_reg(Version::MODEL.to_reg()), Version::MODEL);
        assert_eq!(Version::MODEL.to_reg(), 0x0003_0100);
        assert!(Version::MODEL.check().is_ok());
        let e = Version::from_reg(0x0004_0000).check().unwrap_err();
        assert!(e.contains("v4.0.0 moved"), "{e}");
        let e = Version::from_reg(0xFFFF_FFFF).check().unwrap_err();
        assert!(e.contains("not a version this firmware knows"), "{e}");
        assert!(Version::from_reg(0).check().is_err());
    }

    #[test]
    fn mac_registers_round_trip() {
        let mac = [0x02, 0x0a, 0x35, 0x01, 0x02, 0x03];
        let (l, m) = mac_regs(mac);
        assert_eq!((l, m), (0x3501_0203, 0x0000_020a));
        assert_eq!(mac_from_regs(l, m), mac);
    }
}
