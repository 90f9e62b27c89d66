//! The HWHS engine's AXI4-Lite register map, defined once.
//!
//! Every register is declared in one table below — name, byte offset, access class, reset
//! value, bit fields and doc. From that one declaration come:
//!
//! * the Rust constants of this crate (`CTRL`, `STATUS_TIMEOUT`, …), which the firmware and
//!   the simulator use;
//! * the AXI4-Lite decoder of the RTL (`backline-hdl` builds its address constants and reset
//!   values from [`REGISTERS`]; it holds no address literal of its own);
//! * the Verilog header `bitstreams/rtl/backline_regmap.vh` ([`write_verilog_header`]);
//! * the document `docs/register-map.md` ([`write_markdown`]).
//!
//! The generated files are checked in, and a test fails when regenerating them would change a
//! byte (`BACKLINE_BLESS=1 cargo test -p backline-regmap` rewrites them).
//!
//! Access classes follow safe-mmio: a read of an [`Access::ReadOnly`] register has a side
//! effect (it needs a unique pointer); [`Access::ReadPure`] and [`Access::ReadPureWrite`] reads
//! have none. The bus: all registers are 32 bits wide and word aligned; writes are whole-word
//! (`WSTRB` is ignored); an access to an unmapped offset, or a write to a read-only register,
//! ends with `SLVERR` and sets `STATUS.axi_err`; a read of a write-only register returns 0.
//!
//! ```
//! use backline_regmap as rm;
//! let status = 1 << rm::STATUS_TIMEOUT.lsb;
//! assert!(rm::STATUS_TIMEOUT.get(status) == 1);
//! assert_eq!(rm::lookup(rm::TRACE_COUNT).unwrap().name, "TRACE_COUNT");
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(test)]
extern crate std;

use core::fmt::{self, Write};

/// What a bus master may do with a register (the safe-mmio classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read-only, and a read has a side effect (e.g. pops a FIFO or advances an address).
    ReadOnly,
    /// Read-only, reads have no side effect.
    ReadPure,
    /// Write-only; reads return 0.
    WriteOnly,
    /// Read/write, reads have no side effect.
    ReadPureWrite,
}

impl Access {
    /// Short name used in the generated documents.
    pub const fn short(self) -> &'static str {
        match self {
            Access::ReadOnly => "RO",
            Access::ReadPure => "RO-pure",
            Access::WriteOnly => "WO",
            Access::ReadPureWrite => "RW-pure",
        }
    }

    /// True when a bus write is accepted.
    pub const fn writable(self) -> bool {
        matches!(self, Access::WriteOnly | Access::ReadPureWrite)
    }

    /// True when a bus read returns the register's contents.
    pub const fn readable(self) -> bool {
        !matches!(self, Access::WriteOnly)
    }
}

/// A bit field of a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Lower-snake name (`timeout`).
    pub name: &'static str,
    /// Lowest bit.
    pub lsb: u32,
    /// Width in bits (1 ..= 32).
    pub width: u32,
    /// What the field means.
    pub doc: &'static str,
}

impl Field {
    /// The field's bits in place.
    pub const fn mask(&self) -> u32 {
        if self.width >= 32 {
            u32::MAX
        } else {
            ((1u32 << self.width) - 1) << self.lsb
        }
    }

    /// The field's value in a register word.
    pub const fn get(&self, word: u32) -> u32 {
        (word & self.mask()) >> self.lsb
    }

    /// `word` with the field replaced by `value` (truncated to the field's width).
    pub const fn put(&self, word: u32, value: u32) -> u32 {
        (word & !self.mask()) | ((value << self.lsb) & self.mask())
    }

    /// The word with only this field set to `value`.
    pub const fn bits(&self, value: u32) -> u32 {
        self.put(0, value)
    }
}

/// One 32-bit register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Register {
    /// Upper-case name, as in the documents (`TRACE_COUNT`).
    pub name: &'static str,
    /// Byte offset from the engine's AXI4-Lite base.
    pub offset: u32,
    /// Access class.
    pub access: Access,
    /// Value after power-up and after `CTRL.soft_reset`.
    pub reset: u32,
    /// What the register does.
    pub doc: &'static str,
    /// Its bit fields; empty when the register is one 32-bit value.
    pub fields: &'static [Field],
}

macro_rules! regmap {
    ($(
        $name:ident = $off:literal, $acc:ident, reset $reset:literal, $doc:literal
        { $( $fname:ident : $lsb:literal , $width:literal , $fdoc:literal ; )* }
    )*) => {
        paste::paste! {
            $(
                #[doc = concat!("Byte offset of `", stringify!($name), "`: ", $doc)]
                pub const $name: u32 = $off;
                $(
                    #[doc = concat!("`", stringify!($name), ".", stringify!($fname), "`: ", $fdoc)]
                    pub const [<$name _ $fname:upper>]: Field = Field {
                        name: stringify!($fname), lsb: $lsb, width: $width, doc: $fdoc,
                    };
                )*
            )*
            /// Every register, in offset order.
            pub const REGISTERS: &[Register] = &[$(
                Register {
                    name: stringify!($name),
                    offset: $off,
                    access: Access::$acc,
                    reset: $reset,
                    doc: $doc,
                    fields: &[$( [<$name _ $fname:upper>] ),*],
                }
            ),*];
        }
    };
}

regmap! {
    CTRL = 0x00, WriteOnly, reset 0x0, "Control pulses; each written 1 acts once and reads back as 0." {
        start: 0, 1, "sw-loop: run one round. hw-loop: start a run of ROUNDS rounds paced by the pacer.";
        abort: 1, 1, "hw-loop: stop after the round in progress.";
        soft_reset: 2, 1, "Return the FSM to IDLE, clear counters, trace, pacer and status, and sweep the reply memory to zero (1,024 cycles; a start meanwhile waits). Configuration registers keep their values.";
        trace_clear: 3, 1, "Empty the trace RAM: TRACE_COUNT, full and saturated back to 0.";
        pacer_skip: 4, 1, "End the current quiet period now (fast-forward for simulation and bring-up; the RTT is not affected).";
    }
    STATUS = 0x04, ReadPure, reset 0x0, "Engine state and the outcome of the last round." {
        state: 0, 4, "FSM state: 0 IDLE, 1 DAT_RX, 2 WQE_POST, 3 RING_SQ, 4 WAIT_RPL, 5 POLL_RPL, 6 JOIN, 7 DAT_TX, 8 NEXT.";
        busy: 4, 1, "A round is in progress (state is not IDLE), or the reply memory is being cleared after a soft reset (1,024 cycles).";
        done: 5, 1, "The last start has finished: its round (sw-loop) or its run (hw-loop) is committed. Cleared by the next start.";
        reply_seen: 6, 1, "The last round's reply arrived with the expected sequence number.";
        timeout: 7, 1, "The last round ended in the reply timeout.";
        axi_err: 8, 1, "Sticky: an AXI access ended in SLVERR (unmapped offset or write to a read-only register). Cleared by soft_reset.";
        mismatch: 9, 1, "The last round's reply differed from the expected reply (FLAGS.check).";
        running: 10, 1, "A hw-loop run is active.";
        ernic_err: 11, 1, "The last round failed on an ERNIC-side AXI error (see ERNIC_ERR_COUNT); such a round ends through the timeout path, so it also shows timeout.";
    }
    QP_NUM = 0x08, ReadPureWrite, reset 0x2, "ERNIC queue pair the engine posts to (2 or more; QP 1 is management)." {}
    PAY_LEN = 0x0C, ReadPureWrite, reset 0x4, "Request payload bytes, 1 ..= 16: bytes 0 .. PAY_LEN of PAYLOAD0..3 (word 0 from the reference memory with FLAGS.use_ref), sent directly in front of the 16-byte header." {}
    RPL_LEN = 0x10, ReadPureWrite, reset 0x4, "Expected reply payload bytes, 1 ..= 48. The engine finds the reply's payload by the reply header's payload_len; FLAGS.check counts a reply of another length, or whose payload word 0 differs from the expected one, as a mismatch." {}
    DECODER_ID = 0x14, ReadPureWrite, reset 0x0, "decoder_id carried in every request header." {}
    ROUNDS = 0x18, ReadPureWrite, reset 0x0, "hw-loop: rounds per run (0: until CTRL.abort)." {}
    SQ_BASE = 0x1C, ReadPureWrite, reset 0x0, "SQ base byte address on the engine's SQ write port (the PL-side 32-bit address of ERNIC's SQ memory, 64-byte aligned)." {}
    SQ_DEPTH = 0x24, ReadPureWrite, reset 0x10, "SQ depth in WQEs, a power of two (1 ..= 65536); round r uses SQ slot r mod depth." {}
    FLAGS = 0x28, ReadPureWrite, reset 0x8, "Mode flags." {
        hw_loop: 0, 1, "0: sw-loop (each CTRL.start runs one round). 1: hw-loop (the pacer starts each round).";
        use_ref: 1, 1, "Payload word 0 of round r is reference syndrome r mod REF_LEN instead of PAYLOAD0.";
        check: 2, 1, "Compare reply payload word 0 with expected reply r mod REF_LEN and count mismatches.";
        prepost: 3, 1, "Pre-post the next round's WQE as soon as the ERNIC completion of this round arrives.";
    }
    RING_DEPTH = 0x2C, ReadPureWrite, reset 0x40, "Slots of the remote request ring and of the local reply ring (64-byte slots, wire format v1), a power of two 1 ..= 64." {}
    TIMEOUT = 0x30, ReadPureWrite, reset 0x30D40, "Reply timeout in cycles from the doorbell (default 200,000 = 1 ms at 200 MHz)." {}
    ROUND_COUNT = 0x34, ReadPure, reset 0x0, "Rounds committed since soft reset." {}
    LAST_RTT = 0x38, ReadPure, reset 0x0, "RTT of the last round in cycles (doorbell to reply detection), not saturated." {}
    TIMEOUT_COUNT = 0x3C, ReadPure, reset 0x0, "Rounds that ended in the reply timeout since soft reset (rounds failed by an ERNIC-side AXI error not included)." {}
    WQE_OPCODE = 0x40, ReadPureWrite, reset 0x0, "WQE opcode: 0 WRITE, 1 WRITE_IMM, 2 SEND, 4 READ (ERNIC numbering)." {}
    WQE_RKEY = 0x44, ReadPureWrite, reset 0x0, "WQE remote key of the coprocessor's request ring." {}
    WQE_RVA_LO = 0x48, ReadPureWrite, reset 0x0, "Remote virtual address of the request ring, low 32 bits; round r writes slot r mod RING_DEPTH." {}
    WQE_RVA_HI = 0x4C, ReadPureWrite, reset 0x0, "Remote virtual address of the request ring, high 32 bits." {}
    WQE_LADDR_LO = 0x50, ReadPureWrite, reset 0x0, "Local address of the engine's request buffer as ERNIC sees it, low 32 bits." {}
    WQE_LADDR_HI = 0x54, ReadPureWrite, reset 0x0, "Local address of the request buffer, high 32 bits." {}
    PAYLOAD0 = 0x60, ReadPureWrite, reset 0x0, "Request payload word 0 (bytes 0..3, little-endian)." {}
    PAYLOAD1 = 0x64, ReadPureWrite, reset 0x0, "Request payload word 1." {}
    PAYLOAD2 = 0x68, ReadPureWrite, reset 0x0, "Request payload word 2." {}
    PAYLOAD3 = 0x6C, ReadPureWrite, reset 0x0, "Request payload word 3." {}
    MISMATCH_COUNT = 0x70, ReadPure, reset 0x0, "Replies that differed from the expected reply since soft reset." {}
    LAST_REPLY = 0x74, ReadPure, reset 0x0, "Payload bytes 0..3 of the last reply, little-endian; bytes beyond its payload_len read 0." {}
    LAST_RPL_STATUS = 0x78, ReadPure, reset 0x0, "Header word 2 of the last reply: status (bits 15:0), kind (23:16), version (31:24)." {}
    LAST_RPL_LEN = 0x7C, ReadPure, reset 0x0, "payload_len of the last reply (header word 0, clamped to 48)." {}
    REF_ADDR = 0x80, ReadPureWrite, reset 0x0, "Index (0 ..= 255) of the reference entry that REF_SYN and REF_EXP write." {}
    REF_SYN = 0x84, WriteOnly, reset 0x0, "Writes the reference syndrome (payload word 0) at REF_ADDR." {}
    REF_EXP = 0x88, WriteOnly, reset 0x0, "Writes the expected reply word at REF_ADDR, then advances REF_ADDR by one." {}
    REF_LEN = 0x8C, ReadPureWrite, reset 0x1, "Reference entries in use (1 ..= 256); round r uses entry r mod REF_LEN." {}
    VERSION = 0x90, ReadPure, reset 0x424C0003, "Engine identity and version: 'BL' (bits 31:16) and the register-map version (15:0)." {}
    FSM_OVERHEAD = 0x94, ReadPure, reset 0x2, "The fixed FSM overhead in cycles that every recorded RTT includes beyond the fabric's round trip." {}
    PACER_FREQ = 0xAC, ReadPureWrite, reset 0x0, "Pacer: fixed part of the quiet interval before each hw-loop round, in cycles." {}
    PACER_LAST = 0xB0, ReadPure, reset 0x0, "Pacer: the last interval drawn, freq + (lfsr & span), in cycles." {}
    PACER_REMAIN = 0xB4, ReadPure, reset 0x0, "Pacer: cycles left in the current quiet period (0 when none)." {}
    PACER_STATE = 0xB8, ReadPure, reset 0x0, "Pacer: the LFSR state the next interval will be drawn from (valid when no refill runs); 0 after power-up, PACER_SEED after soft reset or a hw-loop start." {}
    PACER_SPAN = 0xC4, ReadPureWrite, reset 0x0, "Pacer: mask of the random part, 2^N - 1. Tools reject other values; the RTL uses the bits as given." {}
    PACER_SEED = 0xC8, ReadPureWrite, reset 0x1, "Pacer: LFSR seed, non-zero; loaded at CTRL.start of a hw-loop run and at soft reset." {}
    TRACE_CTRL = 0xCC, ReadPureWrite, reset 0x1, "Trace RAM control." {
        enable: 0, 1, "Record one RTT per round.";
    }
    TRACE_COUNT = 0xD0, ReadPure, reset 0x0, "Entries recorded (0 ..= 2^20)." {}
    TRACE_STATUS = 0xD4, ReadPure, reset 0x0, "Trace RAM status." {
        full: 0, 1, "All 2^20 entries are used; recording has stopped.";
        saturated: 1, 1, "Sticky: an RTT above 0xFFFF cycles was recorded as 0xFFFF.";
    }
    TRACE_RD_ADDR = 0xD8, ReadPureWrite, reset 0x0, "Index of the trace entry TRACE_DATA returns next." {}
    TRACE_DATA = 0xDC, ReadOnly, reset 0x0, "The trace entry at TRACE_RD_ADDR (RTT cycles, 0xFFFF saturated, 0 timeout, 1 ERNIC-side AXI error); the read advances TRACE_RD_ADDR." {}
    DB_ADDR = 0xE0, ReadPureWrite, reset 0x0, "The SQ doorbell the ERNIC adapter writes with its AXI4-Lite master: the byte address of QP_NUM's SQPI register as that master sees ERNIC's register space (pl::ERNIC_REGS base + the layout's SQPI offset)." {}
    ERNIC_ERR_COUNT = 0xE4, ReadPure, reset 0x0, "ERNIC-side AXI errors since soft reset: accesses of ERNIC's that the adapter answered SLVERR (a WQE fetch of a slot not posted, an address outside its regions, a burst not of 64-byte beats), CQEs with the error flag, and doorbell writes that ERNIC answered with an error or not within DB_TIMEOUT_CYCLES. A round in which one happens and no reply comes ends at once and is traced as 1." {}
}

/// Version of this register map (the low half of `VERSION`).
pub const REGMAP_VERSION: u32 = 3;
/// The value `VERSION` reads.
pub const VERSION_VALUE: u32 = 0x424C_0000 | REGMAP_VERSION;
/// The engine clock, Hz: every cycle count of the engine, the simulator, the firmware and the
/// tools is in cycles of this clock (the reference board's 200 MHz).
pub const CLOCK_HZ: u64 = 200_000_000;
/// The engine clock, MHz.
pub const CLOCK_MHZ: f64 = CLOCK_HZ as f64 / 1e6;
/// Nanoseconds per engine cycle.
pub const NS_PER_CYCLE: u64 = 1_000_000_000 / CLOCK_HZ;
/// Engine cycles per microsecond.
pub const CYCLES_PER_US: u64 = CLOCK_HZ / 1_000_000;

const _: () =
    assert!(1_000_000_000u64.is_multiple_of(CLOCK_HZ) && CLOCK_HZ.is_multiple_of(1_000_000));
const _: () = assert!((TRACE_AXI_ERROR as u32) < FSM_OVERHEAD_CYCLES + 1);

/// The programmable logic's address map, defined once: the Vivado block design assigns
/// these addresses (`bitstreams/vivado/vpk120_hwhs.tcl`, checked against this module by a
/// test), the simulated board uses them as its memory map, and the firmware's doorbell
/// address (`DB_ADDR`) and example configs follow them.
///
/// Three address spaces meet here: the APU's (its `M_AXI_FPD` master) reaches the two
/// register blocks; ERNIC's AXI4 masters reach the ERNIC adapter's memory (and DDR through
/// the NoC); the adapter's AXI4-Lite master reaches ERNIC's register block at the same
/// address as the APU.
pub mod pl {
    /// One address window.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Window {
        /// What is there.
        pub name: &'static str,
        /// First byte.
        pub base: u64,
        /// Bytes; a power of two, and `base` a multiple of it.
        pub bytes: u64,
    }

    impl Window {
        /// True when `addr` lies in the window.
        pub const fn contains(&self, addr: u64) -> bool {
            addr >= self.base && addr - self.base < self.bytes
        }

        /// The byte after the window.
        pub const fn end(&self) -> u64 {
            self.base + self.bytes
        }
    }

    /// The HWHS register file (APU view), 4 KiB (the smallest aperture the block design
    /// assigns; the engine decodes 2^`AXI_ADDR_BITS` bytes of it).
    pub const HWHS_REGS: Window = Window {
        name: "HWHS registers",
        base: 0xA000_0000,
        bytes: 0x1000,
    };
    /// ERNIC's register space (APU view, and the adapter's AXI4-Lite master's), 2 MiB: a
    /// v4.x ERNIC's whole space (PG332 v4.0 Table 3-1); a v3.x ERNIC takes the first 256 KiB.
    pub const ERNIC_REGS: Window = Window {
        name: "ERNIC registers",
        base: 0xA020_0000,
        bytes: 0x20_0000,
    };
    /// The ERNIC adapter's memory (ERNIC masters' view), 256 KiB, four regions of 64 KiB
    /// decoded by address bits 17:16.
    pub const ADAPTER_MEM: Window = Window {
        name: "ERNIC adapter memory",
        base: 0xA400_0000,
        bytes: 0x4_0000,
    };
    /// Address bits the adapter decodes (the rest select the aperture).
    pub const ADAPTER_ADDR_BITS: u32 = 18;
    /// Region 0: the request buffer ERNIC reads a round's RDMA WRITE data from (`WQE_LADDR`;
    /// the engine's 32-byte request image in the first 64-byte beat).
    pub const REQUEST_BUFFER: Window = Window {
        name: "request buffer",
        base: ADAPTER_MEM.base,
        bytes: 0x40,
    };
    /// Region 1: the reply memory incoming RDMA WRITEs land in (the memory region's
    /// physical base; 64 slots of 64 bytes).
    pub const REPLY_MEMORY: Window = Window {
        name: "reply memory",
        base: ADAPTER_MEM.base + 0x1_0000,
        bytes: 0x1000,
    };
    /// Region 2: the SQ ERNIC fetches WQEs from (`SQBA`, `SQ_BASE`; 1024 WQEs of 64 bytes).
    pub const SQ_MEMORY: Window = Window {
        name: "SQ memory",
        base: ADAPTER_MEM.base + 0x2_0000,
        bytes: 0x1_0000,
    };
    /// Region 3, first 60 KiB: the CQ ERNIC writes its CQEs into (`CQBA`).
    pub const CQ_MEMORY: Window = Window {
        name: "CQ memory",
        base: ADAPTER_MEM.base + 0x3_0000,
        bytes: 0x8000,
    };
    /// Region 3, last 4 KiB: where ERNIC writes the CQ head (`CQDBADD`); accepted and
    /// ignored (the CQEs say it all).
    pub const CQ_DOORBELL: Window = Window {
        name: "CQ doorbell",
        base: ADAPTER_MEM.base + 0x3_F000,
        bytes: 0x1000,
    };
    /// DDR as ERNIC's masters reach it (through the PS): the error, data and response-error
    /// buffers and the RQs the firmware's config places there.
    pub const DDR: Window = Window {
        name: "DDR (ERNIC's buffers)",
        base: 0x0,
        bytes: 0x8000_0000,
    };
    /// The adapter's regions, with their region number (address bits 17:16).
    pub const ADAPTER_REGIONS: [(u32, Window); 5] = [
        (0, REQUEST_BUFFER),
        (1, REPLY_MEMORY),
        (2, SQ_MEMORY),
        (3, CQ_MEMORY),
        (3, CQ_DOORBELL),
    ];
    /// Every window of the APU's address space.
    pub const APU_WINDOWS: [Window; 2] = [HWHS_REGS, ERNIC_REGS];

    const _: () = {
        let all = [HWHS_REGS, ERNIC_REGS, ADAPTER_MEM, DDR];
        let mut i = 0;
        while i < all.len() {
            assert!(all[i].bytes.is_power_of_two() && all[i].base.is_multiple_of(all[i].bytes));
            i += 1;
        }
        assert!(ADAPTER_MEM.bytes == 1 << ADAPTER_ADDR_BITS);
        assert!(REPLY_MEMORY.bytes == (4 << super::REPLY_ADDR_BITS));
        assert!(HWHS_REGS.bytes >= 1 << super::AXI_ADDR_BITS);
        assert!(HWHS_REGS.end() <= ERNIC_REGS.base);
        assert!(DDR.end() <= HWHS_REGS.base);
    };
}

/// `ns` in engine cycles, rounded to the nearest cycle.
pub const fn ns_to_cycles(ns: u64) -> u64 {
    (ns + NS_PER_CYCLE / 2) / NS_PER_CYCLE
}

/// `ns` in engine cycles, rounded up (a wait of at least `ns`).
pub const fn ns_to_cycles_ceil(ns: u64) -> u64 {
    ns.div_ceil(NS_PER_CYCLE)
}

/// Engine cycles in ns.
pub const fn cycles_to_ns(cycles: u64) -> u64 {
    cycles * NS_PER_CYCLE
}
/// The fixed FSM overhead in cycles included in every RTT the engine records: the reply
/// lands in the reply memory in cycle `w`, the registered memory read returns it in `w + 1`,
/// and the comparison stops the RTT counter in `w + 2`. `FSM_OVERHEAD` reads this value.
pub const FSM_OVERHEAD_CYCLES: u32 = 2;
/// Width of the byte address the AXI4-Lite port decodes (offsets ≥ 2^8 are unmapped).
pub const AXI_ADDR_BITS: u32 = 8;
/// Address bits of the trace RAM: 2^20 entries of 16 bits.
pub const TRACE_ADDR_BITS: u32 = 20;
/// Entries of the trace RAM.
pub const TRACE_DEPTH: u32 = 1 << TRACE_ADDR_BITS;
/// Trace entry of a round whose reply timed out (no real RTT is 0 cycles).
pub const TRACE_TIMEOUT: u16 = 0;
/// Trace entry of an RTT of 0xFFFF cycles or more.
pub const TRACE_SATURATED: u16 = 0xFFFF;
/// Trace entry of a round that failed on an ERNIC-side AXI error (`ERNIC_ERR_COUNT`); no
/// real RTT is 1 cycle (every one includes the FSM overhead beyond a fabric round trip).
pub const TRACE_AXI_ERROR: u16 = 1;
/// Cycles the ERNIC adapter waits for ERNIC's answer to a doorbell write before it counts
/// the write as an error (an AXI4-Lite write to ERNIC's register space takes tens of
/// cycles); keep `TIMEOUT` above it.
pub const DB_TIMEOUT_CYCLES: u32 = 128;
/// Address bits of the reference syndrome / expected reply memories (256 entries each).
pub const REF_ADDR_BITS: u32 = 8;
/// Address bits of the reply memory in 32-bit words (1024 words, 4 KiB: 64 slots of 64 B).
pub const REPLY_ADDR_BITS: u32 = 10;
/// Bytes per ring slot on both rings the engine uses (wire format v1, one cache line).
pub const SLOT_BYTES: u32 = 64;
/// Deepest request/reply ring the engine handles.
pub const MAX_RING_DEPTH: u32 = 64;
/// Largest request payload the engine sends, bytes (`PAY_LEN`, `PAYLOAD0..3`).
pub const MAX_PAYLOAD_BYTES: u32 = 16;
/// Largest reply payload the engine takes, bytes: a 64-byte slot less its header
/// (`RPL_LEN`; word 0 of it is checked and returned).
pub const MAX_REPLY_BYTES: u32 = SLOT_BYTES - 16;
/// FSM state names in `STATUS.state` order.
pub const STATES: [&str; 9] = [
    "IDLE", "DAT_RX", "WQE_POST", "RING_SQ", "WAIT_RPL", "POLL_RPL", "JOIN", "DAT_TX", "NEXT",
];

/// The `STATUS.state` code of each FSM state (the index of its name in [`STATES`]); the RTL
/// reports these, the firmware decodes them.
pub mod state {
    /// Waiting for a start or the pacer.
    pub const IDLE: u32 = 0;
    /// Request into the request buffer.
    pub const DAT_RX: u32 = 1;
    /// WQE into the SQ.
    pub const WQE_POST: u32 = 2;
    /// Doorbell.
    pub const RING_SQ: u32 = 3;
    /// Waiting for the ERNIC completion.
    pub const WAIT_RPL: u32 = 4;
    /// Waiting for the reply's sequence number.
    pub const POLL_RPL: u32 = 5;
    /// Reading the reply; waiting for the pre-post.
    pub const JOIN: u32 = 6;
    /// Correction to the stimulus side.
    pub const DAT_TX: u32 = 7;
    /// Commit.
    pub const NEXT: u32 = 8;
    /// An undefined state (never reported by a working engine).
    pub const INVALID: u32 = 15;

    const _: () = {
        assert!(super::STATES.len() as u32 == NEXT + 1);
        assert!(INVALID as usize >= super::STATES.len());
    };
}

/// The register at `offset`, if any.
pub fn lookup(offset: u32) -> Option<&'static Register> {
    REGISTERS.iter().find(|r| r.offset == offset)
}

/// The register named `name`, if any.
pub fn by_name(name: &str) -> Option<&'static Register> {
    REGISTERS.iter().find(|r| r.name == name)
}

/// Writes the Verilog header `backline_regmap.vh`: one `` `define `` per register offset,
/// field position, field width and reset value.
pub fn write_verilog_header(out: &mut dyn Write) -> fmt::Result {
    writeln!(
        out,
        "// HWHS engine register map v{REGMAP_VERSION}, generated by backline-regmap; do not edit."
    )?;
    writeln!(out, "`ifndef BACKLINE_REGMAP_VH")?;
    writeln!(out, "`define BACKLINE_REGMAP_VH")?;
    writeln!(out, "`define BL_AXI_ADDR_BITS {AXI_ADDR_BITS}")?;
    writeln!(out, "`define BL_FSM_OVERHEAD_CYCLES {FSM_OVERHEAD_CYCLES}")?;
    writeln!(out, "`define BL_TRACE_ADDR_BITS {TRACE_ADDR_BITS}")?;
    writeln!(out, "`define BL_TRACE_AXI_ERROR {TRACE_AXI_ERROR}")?;
    writeln!(out, "`define BL_DB_TIMEOUT_CYCLES {DB_TIMEOUT_CYCLES}")?;
    writeln!(out, "// PL address map (backline_regmap::pl)")?;
    for (name, w) in [
        ("HWHS_REGS", pl::HWHS_REGS),
        ("ERNIC_REGS", pl::ERNIC_REGS),
        ("ADAPTER_MEM", pl::ADAPTER_MEM),
        ("REQUEST_BUFFER", pl::REQUEST_BUFFER),
        ("REPLY_MEMORY", pl::REPLY_MEMORY),
        ("SQ_MEMORY", pl::SQ_MEMORY),
        ("CQ_MEMORY", pl::CQ_MEMORY),
        ("CQ_DOORBELL", pl::CQ_DOORBELL),
    ] {
        writeln!(out, "`define BL_PL_{name}_BASE 32'h{:08X}", w.base)?;
        writeln!(out, "`define BL_PL_{name}_BYTES 32'h{:08X}", w.bytes)?;
    }
    for r in REGISTERS {
        writeln!(out, "// {} ({}): {}", r.name, r.access.short(), r.doc)?;
        writeln!(out, "`define BL_REG_{} 8'h{:02X}", r.name, r.offset)?;
        writeln!(out, "`define BL_RST_{} 32'h{:08X}", r.name, r.reset)?;
        for f in r.fields {
            let n = Upper(f.name);
            writeln!(out, "`define BL_{}_{}_LSB {}", r.name, n, f.lsb)?;
            writeln!(out, "`define BL_{}_{}_WIDTH {}", r.name, n, f.width)?;
        }
    }
    writeln!(out, "`endif")
}

/// Displays a name in upper case without allocating.
struct Upper(&'static str);

impl fmt::Display for Upper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            f.write_char(c.to_ascii_uppercase())?;
        }
        Ok(())
    }
}

/// Writes `docs/register-map.md`.
pub fn write_markdown(out: &mut dyn Write) -> fmt::Result {
    writeln!(out, "# HWHS engine register map (v{REGMAP_VERSION})")?;
    writeln!(out)?;
    writeln!(
        out,
        "Generated by `backline-regmap` from its one register table; do not edit. The RTL \
         decoder, the simulator, the firmware and `bitstreams/rtl/backline_regmap.vh` all \
         derive from the same table."
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "AXI4-Lite, 32-bit registers, word aligned, whole-word writes (`WSTRB` ignored). An \
         access to an unmapped offset, or a write to a read-only register, answers `SLVERR` \
         and sets `STATUS.axi_err`; a read of a write-only register returns 0. Access classes \
         follow safe-mmio: `RO` reads have a side effect, `RO-pure` and `RW-pure` reads have \
         none, `WO` is write-only."
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "Engine constants: clock {CLOCK_MHZ} MHz; FSM overhead {FSM_OVERHEAD_CYCLES} cycles per \
         RTT; trace RAM 2^{TRACE_ADDR_BITS} x 16 bit (0 = timeout, 1 = ERNIC-side AXI \
         error, 0xFFFF = saturated); \
         reference memories 2^{REF_ADDR_BITS} x 32 bit each; reply memory 2^{REPLY_ADDR_BITS} \
         words; ring slots {SLOT_BYTES} bytes, up to {MAX_RING_DEPTH} slots; payloads up to \
         {MAX_PAYLOAD_BYTES} bytes."
    )?;
    writeln!(out)?;
    writeln!(out, "| offset | name | access | reset | description |")?;
    writeln!(out, "|-------:|------|--------|------:|-------------|")?;
    for r in REGISTERS {
        writeln!(
            out,
            "| 0x{:02X} | `{}` | {} | 0x{:X} | {} |",
            r.offset,
            r.name,
            r.access.short(),
            r.reset,
            r.doc
        )?;
    }
    for r in REGISTERS.iter().filter(|r| !r.fields.is_empty()) {
        writeln!(out)?;
        writeln!(out, "## {} (0x{:02X}) fields", r.name, r.offset)?;
        writeln!(out)?;
        writeln!(out, "| bits | field | description |")?;
        writeln!(out, "|-----:|-------|-------------|")?;
        for f in r.fields {
            if f.width == 1 {
                writeln!(out, "| {} | `{}` | {} |", f.lsb, f.name, f.doc)?;
            } else {
                let msb = f.lsb + f.width - 1;
                writeln!(out, "| {msb}:{} | `{}` | {} |", f.lsb, f.name, f.doc)?;
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "The WQEs the engine writes follow PG332 Table 2-1; their layout is defined once in \
         `backline-board` and listed in [ernic-registers.md](ernic-registers.md)."
    )?;
    writeln!(out)?;
    writeln!(out, "## PL address map (`pl`)")?;
    writeln!(out)?;
    writeln!(
        out,
        "What the Vivado block design assigns and the simulated board models. The APU (and \
         the ERNIC adapter's AXI4-Lite master, for ERNIC's registers) sees:"
    )?;
    writeln!(out)?;
    writeln!(out, "| window | base | bytes |")?;
    writeln!(out, "|--------|-----:|------:|")?;
    for w in pl::APU_WINDOWS {
        writeln!(out, "| {} | 0x{:08X} | 0x{:X} |", w.name, w.base, w.bytes)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "ERNIC's AXI4 masters see the adapter's memory at 0x{:08X} (0x{:X} bytes, {} address \
         bits decoded):",
        pl::ADAPTER_MEM.base,
        pl::ADAPTER_MEM.bytes,
        pl::ADAPTER_ADDR_BITS
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "and DDR through the PS at 0x{:08X} (0x{:X} bytes).",
        pl::DDR.base,
        pl::DDR.bytes
    )?;
    writeln!(out)?;
    writeln!(out, "| region | window | base | bytes |")?;
    writeln!(out, "|-------:|--------|-----:|------:|")?;
    for (r, w) in pl::ADAPTER_REGIONS {
        writeln!(
            out,
            "| {r} | {} | 0x{:08X} | 0x{:X} |",
            w.name, w.base, w.bytes
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    #[test]
    fn offsets_are_unique_aligned_sorted_and_decoded() {
        for w in REGISTERS.windows(2) {
            assert!(w[0].offset < w[1].offset, "{} / {}", w[0].name, w[1].name);
        }
        for r in REGISTERS {
            assert_eq!(r.offset % 4, 0, "{} misaligned", r.name);
            assert!(
                r.offset < 1 << AXI_ADDR_BITS,
                "{} beyond the decoder",
                r.name
            );
            assert_eq!(lookup(r.offset), Some(r));
            assert_eq!(by_name(r.name), Some(r));
        }
        assert_eq!(lookup(0x5C), None);
        assert_eq!(lookup(0xFC), None);
    }

    #[test]
    fn fields_fit_and_do_not_overlap() {
        for r in REGISTERS {
            let mut used = 0u32;
            for f in r.fields {
                assert!(
                    f.width >= 1 && f.lsb + f.width <= 32,
                    "{}.{}",
                    r.name,
                    f.name
                );
                assert_eq!(used & f.mask(), 0, "{}.{} overlaps", r.name, f.name);
                used |= f.mask();
            }
            if !r.fields.is_empty() {
                assert_eq!(
                    r.reset & !used,
                    0,
                    "{} reset sets bits outside fields",
                    r.name
                );
            }
        }
        assert_eq!(STATUS_STATE.mask(), 0xF);
        assert_eq!(STATUS_RUNNING.bits(1), 1 << 10);
        assert_eq!(FLAGS_PREPOST.get(by_name("FLAGS").unwrap().reset), 1);
        assert_eq!(STATUS_STATE.put(0xFFFF_FFFF, 3), 0xFFFF_FFF3);
    }

    #[test]
    fn constants_agree_with_the_table() {
        assert_eq!(by_name("VERSION").unwrap().reset, VERSION_VALUE);
        assert_eq!(by_name("FSM_OVERHEAD").unwrap().reset, FSM_OVERHEAD_CYCLES);
        const { assert!(FSM_OVERHEAD_CYCLES <= 4, "issue budget: at most 4 cycles") };
        assert_eq!(by_name("PACER_SEED").unwrap().reset, 1);
        assert_eq!(MAX_RING_DEPTH * SLOT_BYTES, 4 << REPLY_ADDR_BITS);
        assert!(!lookup(TRACE_DATA).unwrap().access.writable());
        assert!(lookup(CTRL).unwrap().access.writable());
        assert!(!lookup(CTRL).unwrap().access.readable());
    }

    fn check_generated(rel: &str, text: &str) {
        let path = std::format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"));
        if std::env::var_os("BACKLINE_BLESS").is_some() {
            std::fs::write(&path, text).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == text,
            "{rel} is stale: run `BACKLINE_BLESS=1 cargo test -p backline-regmap`"
        );
    }

    #[test]
    fn checked_in_verilog_header_is_current() {
        let mut s = String::new();
        write_verilog_header(&mut s).unwrap();
        assert!(s.contains("`define BL_REG_TRACE_DATA 8'hDC"));
        check_generated("bitstreams/rtl/backline_regmap.vh", &s);
    }

    #[test]
    fn checked_in_markdown_is_current() {
        let mut s = String::new();
        write_markdown(&mut s).unwrap();
        assert!(s.contains("| 0xD0 | `TRACE_COUNT` | RO-pure |"));
        assert!(s.contains("| 7 | `timeout` |"));
        check_generated("docs/register-map.md", &s);
    }
}

/// Who starts each round of the engine (the meaning of `FLAGS.hw_loop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Software writes `CTRL.start` for every round and polls `STATUS.done`.
    SwLoop,
    /// The engine's pacer starts every round; software only starts the run and watches.
    HwLoop,
}

impl Mode {
    /// Name on the command line and in traces.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::SwLoop => "sw-loop",
            Mode::HwLoop => "hw-loop",
        }
    }
}
