//! [`Hwhs`]: the engine's top level (Verilog module `top`): the AXI4-Lite register file
//! decoded from `backline-regmap`, and the wiring of the FSM, pacer, trace RAM and reference
//! memory to each other and to the ERNIC-side ports.
//!
//! Every register offset, reset value and field mask used here comes from `backline-regmap`;
//! this file has no address literal. Configuration registers power up at their reset values
//! and keep them across `CTRL.soft_reset`; counters and status are cleared by it.

use backline_regmap as rm;
use rust_hdl::prelude::*;

use crate::axi::AxiLiteSlave;
use crate::fault::ErnicFault;
use crate::fsm::HwhsFsm;
use crate::pacer::LfsrPacer;
use crate::refmem::RefMem;
use crate::reply::ReplyMem;
use crate::reqbuf::RequestBuffer;
use crate::trace::TraceRam;
use crate::wqe::WqePoster;

/// Address bits of the engine's trace RAM.
pub const TRACE_BITS: usize = rm::TRACE_ADDR_BITS as usize;

/// The HWHS engine.
#[derive(LogicBlock)]
pub struct Hwhs {
    /// The 200 MHz engine clock.
    pub clock: Signal<In, Clock>,
    /// AXI4-Lite write address (byte offset).
    pub axi_awaddr: Signal<In, Bits<16>>,
    /// AXI4-Lite write address valid.
    pub axi_awvalid: Signal<In, Bit>,
    /// AXI4-Lite write address ready.
    pub axi_awready: Signal<Out, Bit>,
    /// AXI4-Lite write data.
    pub axi_wdata: Signal<In, Bits<32>>,
    /// AXI4-Lite write strobes (ignored: whole-word writes).
    pub axi_wstrb: Signal<In, Bits<4>>,
    /// AXI4-Lite write data valid.
    pub axi_wvalid: Signal<In, Bit>,
    /// AXI4-Lite write data ready.
    pub axi_wready: Signal<Out, Bit>,
    /// AXI4-Lite write response.
    pub axi_bresp: Signal<Out, Bits<2>>,
    /// AXI4-Lite write response valid.
    pub axi_bvalid: Signal<Out, Bit>,
    /// AXI4-Lite write response ready.
    pub axi_bready: Signal<In, Bit>,
    /// AXI4-Lite read address (byte offset).
    pub axi_araddr: Signal<In, Bits<16>>,
    /// AXI4-Lite read address valid.
    pub axi_arvalid: Signal<In, Bit>,
    /// AXI4-Lite read address ready.
    pub axi_arready: Signal<Out, Bit>,
    /// AXI4-Lite read data.
    pub axi_rdata: Signal<Out, Bits<32>>,
    /// AXI4-Lite read response.
    pub axi_rresp: Signal<Out, Bits<2>>,
    /// AXI4-Lite read data valid.
    pub axi_rvalid: Signal<Out, Bit>,
    /// AXI4-Lite read data ready.
    pub axi_rready: Signal<In, Bit>,
    /// ERNIC side: SQ memory write enable.
    pub sq_wr_en: Signal<Out, Bit>,
    /// ERNIC side: SQ memory byte address.
    pub sq_wr_addr: Signal<Out, Bits<32>>,
    /// ERNIC side: SQ memory write data.
    pub sq_wr_data: Signal<Out, Bits<32>>,
    /// ERNIC side: SQ producer-index doorbell write (one cycle).
    pub db_valid: Signal<Out, Bit>,
    /// ERNIC side: the producer index written (WQEs posted so far).
    pub db_sq_pi: Signal<Out, Bits<32>>,
    /// ERNIC side: where the adapter writes the doorbell (DB_ADDR: QP_NUM's SQPI register as
    /// the adapter's AXI4-Lite master sees ERNIC's register space).
    pub db_addr: Signal<Out, Bits<32>>,
    /// ERNIC side: completion indication (one cycle).
    pub cq_valid: Signal<In, Bit>,
    /// ERNIC side: work-request id of the completion.
    pub cq_wrid: Signal<In, Bits<16>>,
    /// ERNIC side: inbound RDMA write into the reply memory.
    pub rx_wr_en: Signal<In, Bit>,
    /// ERNIC side: inbound write word address (reply memory, 4 KiB).
    pub rx_wr_addr: Signal<In, Bits<10>>,
    /// ERNIC side: inbound write data.
    pub rx_wr_data: Signal<In, Bits<32>>,
    /// ERNIC side: request buffer read address (word of the message image).
    pub req_rd_addr: Signal<In, Bits<3>>,
    /// ERNIC side: request buffer data, one cycle after the address.
    pub req_rd_data: Signal<Out, Bits<32>>,
    /// ERNIC side: pulse, an ERNIC-side AXI error (from the adapter; [`ErnicFault`]).
    pub ernic_err: Signal<In, Bit>,
    /// Stimulus side (hw-loop): a correction is ready.
    pub tx_valid: Signal<Out, Bit>,
    /// Stimulus side: the correction (reply payload word 0).
    pub tx_data: Signal<Out, Bits<32>>,
    /// The AXI4-Lite protocol engine.
    pub axi: AxiLiteSlave,
    /// The orchestrator.
    pub fsm: HwhsFsm,
    /// The WQE writer (ERNIC's SQ side).
    pub poster: WqePoster,
    /// The request message ERNIC reads.
    pub reqbuf: RequestBuffer,
    /// The reply memory ERNIC writes.
    pub reply: ReplyMem,
    /// The pacer.
    pub pacer: LfsrPacer,
    /// The trace RAM.
    pub trace: TraceRam<TRACE_BITS>,
    /// Reference syndromes and expected replies.
    pub refmem: RefMem,
    /// ERNIC-side AXI errors: counted, and failing their round.
    pub fault: ErnicFault,
    /// The configuration registers, in the order of [`CONFIG`].
    cfg: [DFFWithInit<Bits<32>>; CONFIG_REGS],
    /// Their offsets.
    a_cfg: [Constant<Bits<16>>; CONFIG_REGS],
    axi_err: DFF<Bit>,
    /// What the other registers read, in the order of [`OTHER`].
    other: [Signal<Local, Bits<32>>; OTHER_REGS],
    /// Their offsets.
    a_other: [Constant<Bits<16>>; OTHER_REGS],
    a_ctrl: Constant<Bits<16>>,
    a_ref_syn: Constant<Bits<16>>,
    a_ref_exp: Constant<Bits<16>>,
    a_trace_data: Constant<Bits<16>>,
    k_version: Constant<Bits<32>>,
    k_overhead: Constant<Bits<32>>,
    m_start: Constant<Bits<32>>,
    m_abort: Constant<Bits<32>>,
    m_soft_reset: Constant<Bits<32>>,
    m_trace_clear: Constant<Bits<32>>,
    m_pacer_skip: Constant<Bits<32>>,
    m_hw_loop: Constant<Bits<32>>,
    m_use_ref: Constant<Bits<32>>,
    m_check: Constant<Bits<32>>,
    m_prepost: Constant<Bits<32>>,
    m_trace_enable: Constant<Bits<32>>,
    m_busy: Constant<Bits<32>>,
    m_done: Constant<Bits<32>>,
    m_reply_seen: Constant<Bits<32>>,
    m_timeout: Constant<Bits<32>>,
    m_axi_err: Constant<Bits<32>>,
    m_mismatch: Constant<Bits<32>>,
    m_running: Constant<Bits<32>>,
    m_ernic_err: Constant<Bits<32>>,
    m_full: Constant<Bits<32>>,
    m_saturated: Constant<Bits<32>>,
    ctrl_write: Signal<Local, Bit>,
    wr_ok: Signal<Local, Bit>,
    rd_ok: Signal<Local, Bit>,
    rd_data: Signal<Local, Bits<32>>,
    status_word: Signal<Local, Bits<32>>,
    trace_status: Signal<Local, Bits<32>>,
}

/// How many configuration registers (RW-pure) the register map has.
pub const CONFIG_REGS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < rm::REGISTERS.len() {
        if matches!(rm::REGISTERS[i].access, rm::Access::ReadPureWrite) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The offsets of the configuration registers, in the register map's order: register
/// `CONFIG[i]` is `cfg[i]` of [`Hwhs`], and the bus reads and writes it by the one loop of
/// [`Hwhs::update`].
pub const CONFIG: [u32; CONFIG_REGS] = {
    let mut c = [0; CONFIG_REGS];
    let (mut n, mut i) = (0, 0);
    while i < rm::REGISTERS.len() {
        if matches!(rm::REGISTERS[i].access, rm::Access::ReadPureWrite) {
            c[n] = rm::REGISTERS[i].offset;
            n += 1;
        }
        i += 1;
    }
    c
};

/// The index of the configuration register at `offset` in [`CONFIG`].
pub const fn cfg_index(offset: u32) -> usize {
    let mut i = 0;
    while i < CONFIG_REGS {
        if CONFIG[i] == offset {
            return i;
        }
        i += 1;
    }
    panic!("not a configuration register")
}

/// How many other registers (read-only and write-only) the register map has.
pub const OTHER_REGS: usize = rm::REGISTERS.len() - CONFIG_REGS;

/// The offsets of the other registers, in the register map's order: `other[i]` of [`Hwhs`]
/// is what register `OTHER[i]` reads (0 for a write-only one), and the bus reads them by the
/// one loop of [`Hwhs::update`], as it does the configuration registers.
pub const OTHER: [u32; OTHER_REGS] = {
    let mut c = [0; OTHER_REGS];
    let (mut n, mut i) = (0, 0);
    while i < rm::REGISTERS.len() {
        if !matches!(rm::REGISTERS[i].access, rm::Access::ReadPureWrite) {
            c[n] = rm::REGISTERS[i].offset;
            n += 1;
        }
        i += 1;
    }
    c
};

/// The index of the other register at `offset` in [`OTHER`].
pub const fn other_index(offset: u32) -> usize {
    let mut i = 0;
    while i < OTHER_REGS {
        if OTHER[i] == offset {
            return i;
        }
        i += 1;
    }
    panic!("not a read-only or write-only register")
}

// rust-hdl names an element of `other` by a literal index in `update`, too.
const _: () = {
    assert!(other_index(rm::CTRL) == 0);
    assert!(other_index(rm::STATUS) == 1);
    assert!(other_index(rm::ROUND_COUNT) == 2);
    assert!(other_index(rm::LAST_RTT) == 3);
    assert!(other_index(rm::TIMEOUT_COUNT) == 4);
    assert!(other_index(rm::MISMATCH_COUNT) == 5);
    assert!(other_index(rm::LAST_REPLY) == 6);
    assert!(other_index(rm::LAST_RPL_STATUS) == 7);
    assert!(other_index(rm::LAST_RPL_LEN) == 8);
    assert!(other_index(rm::REF_SYN) == 9);
    assert!(other_index(rm::REF_EXP) == 10);
    assert!(other_index(rm::VERSION) == 11);
    assert!(other_index(rm::FSM_OVERHEAD) == 12);
    assert!(other_index(rm::PACER_LAST) == 13);
    assert!(other_index(rm::PACER_REMAIN) == 14);
    assert!(other_index(rm::PACER_STATE) == 15);
    assert!(other_index(rm::TRACE_COUNT) == 16);
    assert!(other_index(rm::TRACE_STATUS) == 17);
    assert!(other_index(rm::TRACE_DATA) == 18);
    assert!(other_index(rm::ERNIC_ERR_COUNT) == 19);
    assert!(OTHER_REGS == 20);
};

// rust-hdl names an element of `cfg` by a literal index in `update`: each index used there is
// checked here against the register map when this compiles.
const _: () = {
    assert!(cfg_index(rm::PAY_LEN) == 1);
    assert!(cfg_index(rm::RPL_LEN) == 2);
    assert!(cfg_index(rm::DECODER_ID) == 3);
    assert!(cfg_index(rm::ROUNDS) == 4);
    assert!(cfg_index(rm::SQ_BASE) == 5);
    assert!(cfg_index(rm::SQ_DEPTH) == 6);
    assert!(cfg_index(rm::FLAGS) == 7);
    assert!(cfg_index(rm::RING_DEPTH) == 8);
    assert!(cfg_index(rm::TIMEOUT) == 9);
    assert!(cfg_index(rm::WQE_OPCODE) == 10);
    assert!(cfg_index(rm::WQE_RKEY) == 11);
    assert!(cfg_index(rm::WQE_RVA_LO) == 12);
    assert!(cfg_index(rm::WQE_RVA_HI) == 13);
    assert!(cfg_index(rm::WQE_LADDR_LO) == 14);
    assert!(cfg_index(rm::WQE_LADDR_HI) == 15);
    assert!(cfg_index(rm::PAYLOAD0) == 16);
    assert!(cfg_index(rm::PAYLOAD1) == 17);
    assert!(cfg_index(rm::PAYLOAD2) == 18);
    assert!(cfg_index(rm::PAYLOAD3) == 19);
    assert!(cfg_index(rm::REF_ADDR) == 20);
    assert!(cfg_index(rm::REF_LEN) == 21);
    assert!(cfg_index(rm::PACER_FREQ) == 22);
    assert!(cfg_index(rm::PACER_SPAN) == 23);
    assert!(cfg_index(rm::PACER_SEED) == 24);
    assert!(cfg_index(rm::TRACE_CTRL) == 25);
    assert!(cfg_index(rm::TRACE_RD_ADDR) == 26);
    assert!(cfg_index(rm::DB_ADDR) == 27);
};

fn reg(offset: u32) -> DFFWithInit<Bits<32>> {
    let r = rm::lookup(offset).expect("offset from the register map");
    assert!(
        r.access.writable() && r.access.readable(),
        "{} is not RW",
        r.name
    );
    DFFWithInit::new((r.reset as u64).into())
}

fn addr(offset: u32) -> Constant<Bits<16>> {
    assert!(rm::lookup(offset).is_some());
    Constant::new((offset as u64).into())
}

fn mask(f: rm::Field) -> Constant<Bits<32>> {
    Constant::new((f.mask() as u64).into())
}

impl Default for Hwhs {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            axi_awaddr: Default::default(),
            axi_awvalid: Default::default(),
            axi_awready: Default::default(),
            axi_wdata: Default::default(),
            axi_wstrb: Default::default(),
            axi_wvalid: Default::default(),
            axi_wready: Default::default(),
            axi_bresp: Default::default(),
            axi_bvalid: Default::default(),
            axi_bready: Default::default(),
            axi_araddr: Default::default(),
            axi_arvalid: Default::default(),
            axi_arready: Default::default(),
            axi_rdata: Default::default(),
            axi_rresp: Default::default(),
            axi_rvalid: Default::default(),
            axi_rready: Default::default(),
            sq_wr_en: Default::default(),
            sq_wr_addr: Default::default(),
            sq_wr_data: Default::default(),
            db_valid: Default::default(),
            db_sq_pi: Default::default(),
            db_addr: Default::default(),
            cq_valid: Default::default(),
            cq_wrid: Default::default(),
            rx_wr_en: Default::default(),
            rx_wr_addr: Default::default(),
            rx_wr_data: Default::default(),
            req_rd_addr: Default::default(),
            req_rd_data: Default::default(),
            ernic_err: Default::default(),
            tx_valid: Default::default(),
            tx_data: Default::default(),
            axi: Default::default(),
            fsm: Default::default(),
            poster: Default::default(),
            reqbuf: Default::default(),
            reply: Default::default(),
            pacer: Default::default(),
            trace: Default::default(),
            refmem: Default::default(),
            fault: Default::default(),
            cfg: std::array::from_fn(|i| reg(CONFIG[i])),
            a_cfg: std::array::from_fn(|i| addr(CONFIG[i])),
            axi_err: Default::default(),
            other: Default::default(),
            a_other: std::array::from_fn(|i| addr(OTHER[i])),
            a_ctrl: addr(rm::CTRL),
            a_ref_syn: addr(rm::REF_SYN),
            a_ref_exp: addr(rm::REF_EXP),
            a_trace_data: addr(rm::TRACE_DATA),
            k_version: Constant::new((rm::VERSION_VALUE as u64).into()),
            k_overhead: Constant::new((rm::FSM_OVERHEAD_CYCLES as u64).into()),
            m_start: mask(rm::CTRL_START),
            m_abort: mask(rm::CTRL_ABORT),
            m_soft_reset: mask(rm::CTRL_SOFT_RESET),
            m_trace_clear: mask(rm::CTRL_TRACE_CLEAR),
            m_pacer_skip: mask(rm::CTRL_PACER_SKIP),
            m_hw_loop: mask(rm::FLAGS_HW_LOOP),
            m_use_ref: mask(rm::FLAGS_USE_REF),
            m_check: mask(rm::FLAGS_CHECK),
            m_prepost: mask(rm::FLAGS_PREPOST),
            m_trace_enable: mask(rm::TRACE_CTRL_ENABLE),
            m_busy: mask(rm::STATUS_BUSY),
            m_done: mask(rm::STATUS_DONE),
            m_reply_seen: mask(rm::STATUS_REPLY_SEEN),
            m_timeout: mask(rm::STATUS_TIMEOUT),
            m_axi_err: mask(rm::STATUS_AXI_ERR),
            m_mismatch: mask(rm::STATUS_MISMATCH),
            m_running: mask(rm::STATUS_RUNNING),
            m_ernic_err: mask(rm::STATUS_ERNIC_ERR),
            m_full: mask(rm::TRACE_STATUS_FULL),
            m_saturated: mask(rm::TRACE_STATUS_SATURATED),
            ctrl_write: Default::default(),
            wr_ok: Default::default(),
            rd_ok: Default::default(),
            rd_data: Default::default(),
            status_word: Default::default(),
            trace_status: Default::default(),
        }
    }
}

impl Logic for Hwhs {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, axi_err);
        clock!(
            self, clock, axi, fsm, poster, reqbuf, reply, pacer, trace, refmem, fault
        );

        // ---- bus ----
        self.axi.awaddr.next = self.axi_awaddr.val();
        self.axi.awvalid.next = self.axi_awvalid.val();
        self.axi_awready.next = self.axi.awready.val();
        self.axi.wdata.next = self.axi_wdata.val();
        self.axi.wvalid.next = self.axi_wvalid.val();
        self.axi_wready.next = self.axi.wready.val();
        self.axi_bresp.next = self.axi.bresp.val();
        self.axi_bvalid.next = self.axi.bvalid.val();
        self.axi.bready.next = self.axi_bready.val();
        self.axi.araddr.next = self.axi_araddr.val();
        self.axi.arvalid.next = self.axi_arvalid.val();
        self.axi_arready.next = self.axi.arready.val();
        self.axi_rdata.next = self.axi.rdata.val();
        self.axi_rresp.next = self.axi.rresp.val();
        self.axi_rvalid.next = self.axi.rvalid.val();
        self.axi.rready.next = self.axi_rready.val();

        // ---- register writes and reads: the configuration registers by one loop ----
        self.ctrl_write.next =
            self.axi.wr_strobe.val() & (self.axi.wr_addr.val() == self.a_ctrl.val());
        self.refmem.wr_syn.next =
            self.axi.wr_strobe.val() & (self.axi.wr_addr.val() == self.a_ref_syn.val());
        self.refmem.wr_exp.next =
            self.axi.wr_strobe.val() & (self.axi.wr_addr.val() == self.a_ref_exp.val());
        self.refmem.wr_addr.next = self.cfg[20].q.val().get_bits::<8>(0); // REF_ADDR
        self.refmem.wr_data.next = self.axi.wr_data.val();
        for i in 0..CONFIG_REGS {
            self.cfg[i].clock.next = self.clock.val();
            self.cfg[i].d.next = self.cfg[i].q.val();
        }
        // Side effects that registers have of their own: REF_EXP advances REF_ADDR, a
        // TRACE_DATA read advances TRACE_RD_ADDR. A bus write in the same cycle wins.
        if self.refmem.wr_exp.val() {
            self.cfg[20].d.next = self.cfg[20].q.val() + 1; // REF_ADDR
        }
        if self.axi.rd_strobe.val() & (self.axi.rd_addr.val() == self.a_trace_data.val()) {
            self.cfg[26].d.next = self.cfg[26].q.val() + 1; // TRACE_RD_ADDR
        }
        self.wr_ok.next = (self.axi.wr_addr.val() == self.a_ctrl.val())
            | (self.axi.wr_addr.val() == self.a_ref_syn.val())
            | (self.axi.wr_addr.val() == self.a_ref_exp.val());
        self.rd_ok.next = false;
        self.rd_data.next = 0.into();
        for i in 0..CONFIG_REGS {
            if self.axi.wr_addr.val() == self.a_cfg[i].val() {
                self.wr_ok.next = true;
                if self.axi.wr_strobe.val() {
                    self.cfg[i].d.next = self.axi.wr_data.val();
                }
            }
            if self.axi.rd_addr.val() == self.a_cfg[i].val() {
                self.rd_ok.next = true;
                self.rd_data.next = self.cfg[i].q.val();
            }
        }

        // ---- control pulses and flags ----
        self.fsm.start.next =
            self.ctrl_write.val() & (self.axi.wr_data.val() & self.m_start.val()).any();
        self.fsm.abort.next =
            self.ctrl_write.val() & (self.axi.wr_data.val() & self.m_abort.val()).any();
        self.fsm.soft_reset.next =
            self.ctrl_write.val() & (self.axi.wr_data.val() & self.m_soft_reset.val()).any();
        self.fsm.hw_loop.next = (self.cfg[7].q.val() & self.m_hw_loop.val()).any();
        self.fsm.use_ref.next = (self.cfg[7].q.val() & self.m_use_ref.val()).any();
        self.fsm.check.next = (self.cfg[7].q.val() & self.m_check.val()).any();
        self.fsm.prepost.next = (self.cfg[7].q.val() & self.m_prepost.val()).any();
        self.fsm.b2b.next = (self.cfg[22].q.val() == 0) & (self.cfg[23].q.val() == 0);
        self.fsm.rounds.next = self.cfg[4].q.val(); // ROUNDS
        self.fsm.ring_depth.next = self.cfg[8].q.val(); // RING_DEPTH
        // ---- ERNIC-side AXI errors: counted; TIMEOUT reaches the FSM through the gate ----
        self.fault.reset.next = self.fsm.soft_reset.val();
        self.fault.err.next = self.ernic_err.val();
        self.fault.in_round.next = self.fsm.busy.val();
        self.fault.timeout.next = self.cfg[9].q.val(); // TIMEOUT
        self.fault.record.next = self.fsm.trace_record.val();
        self.fault.rtt.next = self.fsm.trace_rtt.val();
        self.fault.fsm_timeouts.next = self.fsm.timeout_count.val();
        self.fsm.timeout.next = self.fault.fsm_timeout.val();
        self.fsm.payload0.next = self.cfg[16].q.val(); // PAYLOAD0
        self.fsm.ref_len.next = self.cfg[21].q.val(); // REF_LEN

        // ---- pacer ----
        self.pacer.load.next =
            self.fsm.soft_reset.val() | (self.fsm.start.val() & self.fsm.hw_loop.val());
        self.pacer.freq.next = self.cfg[22].q.val();
        self.pacer.span.next = self.cfg[23].q.val();
        self.pacer.seed.next = self.cfg[24].q.val();
        self.pacer.arm.next = self.fsm.pacer_arm.val();
        self.pacer.skip.next =
            self.ctrl_write.val() & (self.axi.wr_data.val() & self.m_pacer_skip.val()).any();
        self.fsm.pacer_fire.next = self.pacer.fire.val();

        // ---- reference memory ----
        self.refmem.clear.next = self.fsm.soft_reset.val();
        self.refmem.rd_addr.next = self.fsm.ref_addr.val();
        self.fsm.ref_syndrome.next = self.refmem.syndrome.val();
        self.refmem.compare.next = self.fsm.ref_compare.val();
        self.refmem.reply.next = self.fsm.ref_reply.val();
        self.refmem.wrong_len.next = self.reply.wrong_len.val();
        self.fsm.ref_mismatch.next = self.refmem.mismatch.val();

        // ---- trace RAM ----
        self.trace.clear.next = self.fsm.soft_reset.val()
            | (self.ctrl_write.val() & (self.axi.wr_data.val() & self.m_trace_clear.val()).any());
        self.trace.enable.next = (self.cfg[25].q.val() & self.m_trace_enable.val()).any();
        self.trace.record.next = self.fsm.trace_record.val();
        self.trace.rtt.next = self.fault.trace_rtt.val();
        self.trace.rd_addr.next = self.cfg[26].q.val().get_bits::<TRACE_BITS>(0);

        // ---- ERNIC side: the WQE poster, the request buffer, the reply memory ----
        self.poster.post.next = self.fsm.post.val();
        self.poster.round.next = self.fsm.post_round.val();
        self.poster.reset.next = self.fsm.soft_reset.val();
        self.poster.sq_base.next = self.cfg[5].q.val(); // SQ_BASE
        self.poster.sq_depth.next = self.cfg[6].q.val(); // SQ_DEPTH
        self.poster.ring_depth.next = self.cfg[8].q.val(); // RING_DEPTH
        self.poster.wqe_opcode.next = self.cfg[10].q.val(); // WQE_OPCODE
        self.poster.wqe_rkey.next = self.cfg[11].q.val(); // WQE_RKEY
        self.poster.wqe_rva_lo.next = self.cfg[12].q.val(); // WQE_RVA_LO
        self.poster.wqe_rva_hi.next = self.cfg[13].q.val(); // WQE_RVA_HI
        self.poster.wqe_laddr_lo.next = self.cfg[14].q.val(); // WQE_LADDR_LO
        self.poster.wqe_laddr_hi.next = self.cfg[15].q.val(); // WQE_LADDR_HI
        self.poster.msg_len.next = self.reqbuf.msg_len.val();
        self.poster.pay_pad.next = self.reqbuf.pay_pad.val();
        self.fsm.posting.next = self.poster.busy.val();
        self.fsm.posted_valid.next = self.poster.posted_valid.val();
        self.fsm.posted_round.next = self.poster.posted_round.val();
        self.sq_wr_en.next = self.poster.sq_wr_en.val();
        self.sq_wr_addr.next = self.poster.sq_wr_addr.val();
        self.sq_wr_data.next = self.poster.sq_wr_data.val();
        self.db_valid.next = self.fsm.db_valid.val();
        self.db_sq_pi.next = self.fsm.db_sq_pi.val();
        self.db_addr.next = self.cfg[27].q.val(); // DB_ADDR
        self.fsm.cq_valid.next = self.cq_valid.val();
        self.fsm.cq_wrid.next = self.cq_wrid.val();
        self.reqbuf.rd_addr.next = self.req_rd_addr.val();
        self.req_rd_data.next = self.reqbuf.rd_data.val();
        self.reqbuf.pay_len.next = self.cfg[1].q.val(); // PAY_LEN
        self.reqbuf.w0.next = self.fsm.request_w0.val();
        self.reqbuf.payload1.next = self.cfg[17].q.val(); // PAYLOAD1
        self.reqbuf.payload2.next = self.cfg[18].q.val(); // PAYLOAD2
        self.reqbuf.payload3.next = self.cfg[19].q.val(); // PAYLOAD3
        self.reqbuf.decoder_id.next = self.cfg[3].q.val(); // DECODER_ID
        self.reqbuf.seq.next = self.fsm.request_seq.val();
        self.reply.wr_en.next = self.rx_wr_en.val();
        self.reply.wr_addr.next = self.rx_wr_addr.val();
        self.reply.wr_data.next = self.rx_wr_data.val();
        self.reply.sweep.next = self.fsm.soft_reset.val();
        self.reply.rd_addr.next = self.fsm.rpl_rd_addr.val();
        self.reply.rlen.next = self.fsm.rpl_rlen.val();
        self.reply.word_a.next = self.fsm.rpl_word_a.val();
        self.reply.rpl_len.next = self.cfg[2].q.val(); // RPL_LEN
        self.fsm.rpl_rd_data.next = self.reply.rd_data.val();
        self.fsm.rpl_len_clamped.next = self.reply.len_clamped.val();
        self.fsm.rpl_len_words.next = self.reply.len_words.val();
        self.fsm.rpl_word0.next = self.reply.word0.val();
        self.fsm.rpl_sweeping.next = self.reply.sweeping.val();
        self.tx_valid.next = self.fsm.tx_valid.val();
        self.tx_data.next = self.fsm.tx_data.val();

        // ---- status words ----
        self.status_word.next = bit_cast::<32, 4>(self.fsm.state_code.val());
        if self.fsm.busy.val() {
            self.status_word.next = self.status_word.val() | self.m_busy.val();
        }
        if self.fsm.done.val() {
            self.status_word.next = self.status_word.val() | self.m_done.val();
        }
        if self.fsm.reply_seen.val() {
            self.status_word.next = self.status_word.val() | self.m_reply_seen.val();
        }
        if self.fsm.timed_out.val() {
            self.status_word.next = self.status_word.val() | self.m_timeout.val();
        }
        if self.axi_err.q.val() {
            self.status_word.next = self.status_word.val() | self.m_axi_err.val();
        }
        if self.fsm.mismatch.val() {
            self.status_word.next = self.status_word.val() | self.m_mismatch.val();
        }
        if self.fsm.running.val() {
            self.status_word.next = self.status_word.val() | self.m_running.val();
        }
        if self.fault.last.val() {
            self.status_word.next = self.status_word.val() | self.m_ernic_err.val();
        }
        self.trace_status.next = 0.into();
        if self.trace.full.val() {
            self.trace_status.next = self.trace_status.val() | self.m_full.val();
        }
        if self.trace.saturated.val() {
            self.trace_status.next = self.trace_status.val() | self.m_saturated.val();
        }

        // ---- register reads: the others, by one loop (write-only ones read 0) ----
        self.other[0].next = 0.into(); // CTRL
        self.other[1].next = self.status_word.val(); // STATUS
        self.other[2].next = self.fsm.round_count.val(); // ROUND_COUNT
        self.other[3].next = self.fsm.last_rtt.val(); // LAST_RTT
        self.other[4].next = self.fault.timeouts.val(); // TIMEOUT_COUNT
        self.other[5].next = self.refmem.mismatches.val(); // MISMATCH_COUNT
        self.other[6].next = self.fsm.last_reply.val(); // LAST_REPLY
        self.other[7].next = self.fsm.last_status.val(); // LAST_RPL_STATUS
        self.other[8].next = self.fsm.last_len.val(); // LAST_RPL_LEN
        self.other[9].next = 0.into(); // REF_SYN
        self.other[10].next = 0.into(); // REF_EXP
        self.other[11].next = self.k_version.val(); // VERSION
        self.other[12].next = self.k_overhead.val(); // FSM_OVERHEAD
        self.other[13].next = self.pacer.interval.val(); // PACER_LAST
        self.other[14].next = self.pacer.remain.val(); // PACER_REMAIN
        self.other[15].next = self.pacer.state.val(); // PACER_STATE
        self.other[16].next = self.trace.count.val(); // TRACE_COUNT
        self.other[17].next = self.trace_status.val(); // TRACE_STATUS
        self.other[18].next = bit_cast::<32, 16>(self.trace.rd_data.val()); // TRACE_DATA
        self.other[19].next = self.fault.errors.val(); // ERNIC_ERR_COUNT
        for i in 0..OTHER_REGS {
            if self.axi.rd_addr.val() == self.a_other[i].val() {
                self.rd_ok.next = true;
                self.rd_data.next = self.other[i].val();
            }
        }
        // A bus error is sticky until soft reset.
        if (self.axi.wr_strobe.val() & !self.wr_ok.val())
            | (self.axi.rd_strobe.val() & !self.rd_ok.val())
        {
            self.axi_err.d.next = true;
        }
        if self.fsm.soft_reset.val() {
            self.axi_err.d.next = false;
        }
        // Settled above, driven into the bus engine once.
        self.axi.wr_ok.next = self.wr_ok.val();
        self.axi.rd_ok.next = self.rd_ok.val();
        self.axi.rd_data.next = self.rd_data.val();
    }
}

/// Builds the engine with every top-level input marked as driven from outside.
pub fn build() -> Hwhs {
    let mut uut = Hwhs::default();
    uut.axi_awaddr.connect();
    uut.axi_awvalid.connect();
    uut.axi_wdata.connect();
    uut.axi_wstrb.connect();
    uut.axi_wvalid.connect();
    uut.axi_bready.connect();
    uut.axi_araddr.connect();
    uut.axi_arvalid.connect();
    uut.axi_rready.connect();
    uut.cq_valid.connect();
    uut.cq_wrid.connect();
    uut.rx_wr_en.connect();
    uut.rx_wr_addr.connect();
    uut.rx_wr_data.connect();
    uut.req_rd_addr.connect();
    uut.ernic_err.connect();
    uut.connect_all();
    uut
}

#[cfg(test)]
mod tests {
    use super::*;

    type X = Box<Hwhs>;

    fn cycle(sim: &mut Sim<Hwhs>, mut x: X) -> Result<X, SimError> {
        wait_clock_cycle!(sim, clock, x);
        Ok(x)
    }

    /// One AXI4-Lite write; returns BRESP.
    fn write(sim: &mut Sim<Hwhs>, mut x: X, addr: u32, data: u32) -> Result<(X, u64), SimError> {
        x.axi_awaddr.next = (addr as u64).into();
        x.axi_wdata.next = (data as u64).into();
        x.axi_awvalid.next = true;
        x.axi_wvalid.next = true;
        x.axi_bready.next = true;
        x = cycle(sim, x)?;
        x.axi_awvalid.next = false;
        x.axi_wvalid.next = false;
        for _ in 0..8 {
            if x.axi_bvalid.val() {
                let r = x.axi_bresp.val().to_u64();
                x = cycle(sim, x)?;
                return Ok((x, r));
            }
            x = cycle(sim, x)?;
        }
        Err(SimError::SimHalted)
    }

    /// One AXI4-Lite read; returns (RDATA, RRESP).
    fn read(sim: &mut Sim<Hwhs>, mut x: X, addr: u32) -> Result<(X, u32, u64), SimError> {
        x.axi_araddr.next = (addr as u64).into();
        x.axi_arvalid.next = true;
        x.axi_rready.next = true;
        x = cycle(sim, x)?;
        x.axi_arvalid.next = false;
        for _ in 0..8 {
            if x.axi_rvalid.val() {
                let (d, r) = (x.axi_rdata.val().to_u32(), x.axi_rresp.val().to_u64());
                x = cycle(sim, x)?;
                return Ok((x, d, r));
            }
            x = cycle(sim, x)?;
        }
        Err(SimError::SimHalted)
    }

    fn run<F>(name: &str, cycles: u64, tb: F)
    where
        F: Fn(&mut Sim<Hwhs>) -> Result<X, SimError> + Send + 'static + std::panic::RefUnwindSafe,
    {
        let uut = build();
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut Box<Hwhs>| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut s: Sim<Hwhs>| {
            let x = tb(&mut s)?;
            s.done(x)
        });
        sim.run_to_file(Box::new(uut), cycles * 10, &crate::testutil::vcd(name))
            .unwrap();
    }

    /// VERSION reads back; an unmapped offset and a write to a read-only register answer
    /// SLVERR (without hanging) and set STATUS.axi_err; soft reset clears it; a RW register
    /// powers up at its reset value and holds what is written.
    #[test]
    fn register_file_answers_and_rejects() {
        run("top_regs.vcd", 200, |sim| {
            let mut x = sim.init()?;
            let (d, r);
            (x, d, r) = read(sim, x, rm::VERSION)?;
            assert_eq!((d, r), (rm::VERSION_VALUE, 0));
            let (d, r);
            (x, d, r) = read(sim, x, 0xFC)?;
            assert_eq!((d, r), (0, 2));
            let r;
            (x, r) = write(sim, x, rm::STATUS, 1)?;
            assert_eq!(r, 2);
            let d;
            (x, d, _) = read(sim, x, rm::STATUS)?;
            assert!(rm::STATUS_AXI_ERR.get(d) == 1);
            (x, _) = write(sim, x, rm::CTRL, rm::CTRL_SOFT_RESET.bits(1))?;
            let d;
            (x, d, _) = read(sim, x, rm::STATUS)?;
            assert_eq!(rm::STATUS_AXI_ERR.get(d), 0);
            assert_eq!(rm::STATUS_BUSY.get(d), 1); // sweeping the reply memory
            let d;
            (x, d, _) = read(sim, x, rm::TIMEOUT)?;
            assert_eq!(d, rm::by_name("TIMEOUT").unwrap().reset);
            (x, _) = write(sim, x, rm::TIMEOUT, 1234)?;
            let d;
            (x, d, _) = read(sim, x, rm::TIMEOUT)?;
            assert_eq!(d, 1234);
            Ok(x)
        });
    }

    /// One sw-loop round against a minimal ERNIC stand-in in the testbench: the WQE goes out,
    /// the doorbell rings, the completion comes, the next round's WQE is pre-posted before the
    /// reply lands, the reply is detected and the RTT is the stand-in's round trip plus the
    /// documented overhead. A second round without any completion or reply ends in the
    /// timeout, and a third round still runs.
    #[test]
    fn sw_loop_round_prepost_and_timeout() {
        const CQ_AFTER: u64 = 6;
        const REPLY_AFTER: u64 = 14;
        run("top_round.vcd", 600, |sim| {
            let mut x = sim.init()?;
            (x, _) = write(sim, x, rm::TIMEOUT, 40)?;
            (x, _) = write(sim, x, rm::CTRL, rm::CTRL_START.bits(1))?;
            let mut n = 0u64;
            let mut db_at = None;
            let mut sq_words = Vec::new();
            let mut prepost_at = None;
            let mut reply_at = None;
            loop {
                x.cq_valid.next = false;
                x.rx_wr_en.next = false;
                if x.sq_wr_en.val() {
                    sq_words.push((n, x.sq_wr_addr.val().to_u32(), x.sq_wr_data.val().to_u32()));
                    if db_at.is_some() && prepost_at.is_none() {
                        prepost_at = Some(n);
                    }
                }
                if x.db_valid.val() {
                    assert_eq!(x.db_sq_pi.val().to_u32(), 1);
                    db_at = Some(n);
                }
                if let Some(d) = db_at {
                    if n == d + CQ_AFTER {
                        x.cq_valid.next = true;
                        x.cq_wrid.next = 0.into();
                    }
                    if n == d + REPLY_AFTER - 2 {
                        x.rx_wr_en.next = true;
                        x.rx_wr_addr.next = 11.into();
                        x.rx_wr_data.next = 0x55.into();
                    }
                    if n == d + REPLY_AFTER - 1 {
                        // payload_len: 4
                        x.rx_wr_en.next = true;
                        x.rx_wr_addr.next = 12.into();
                        x.rx_wr_data.next = 4.into();
                    }
                    if n == d + REPLY_AFTER {
                        x.rx_wr_en.next = true;
                        x.rx_wr_addr.next = 15.into();
                        x.rx_wr_data.next = 1.into();
                        reply_at = Some(n);
                    }
                }
                x = cycle(sim, x)?;
                n += 1;
                if x.fsm.done.val() || n > 200 {
                    break;
                }
            }
            // 16 words for round 0 before the doorbell, 16 pre-posted for round 1 after.
            assert_eq!(sq_words.len(), 32);
            assert_eq!(sq_words[16].2, 1); // wrid of round 1
            assert_eq!(sq_words[16].1, 64); // SQ slot 1
            assert!(prepost_at.unwrap() < reply_at.unwrap());
            let d;
            (x, d, _) = read(sim, x, rm::LAST_RTT)?;
            assert_eq!(d as u64, REPLY_AFTER + rm::FSM_OVERHEAD_CYCLES as u64);
            let d;
            (x, d, _) = read(sim, x, rm::LAST_REPLY)?;
            assert_eq!(d, 0x55);
            let d;
            (x, d, _) = read(sim, x, rm::TRACE_COUNT)?;
            assert_eq!(d, 1);
            // Round 1: nothing answers.
            (x, _) = write(sim, x, rm::CTRL, rm::CTRL_START.bits(1))?;
            x = cycle(sim, x)?;
            for _ in 0..80 {
                if x.fsm.done.val() {
                    break;
                }
                x = cycle(sim, x)?;
            }
            let d;
            (x, d, _) = read(sim, x, rm::STATUS)?;
            assert!(rm::STATUS_TIMEOUT.get(d) == 1 && rm::STATUS_DONE.get(d) == 1);
            let d;
            (x, d, _) = read(sim, x, rm::TIMEOUT_COUNT)?;
            assert_eq!(d, 1);
            // Round 2 starts: the engine did not stall.
            (x, _) = write(sim, x, rm::CTRL, rm::CTRL_START.bits(1))?;
            let mut rang = false;
            for _ in 0..30 {
                rang |= x.db_valid.val();
                x = cycle(sim, x)?;
            }
            assert!(rang);
            let d;
            (x, d, _) = read(sim, x, rm::ROUND_COUNT)?;
            assert_eq!(d, 2);
            Ok(x)
        });
    }

    #[test]
    fn generates_a_top_module_with_the_documented_ports() {
        let v = generate_verilog(&build());
        for port in [
            "axi_awaddr",
            "axi_rresp",
            "sq_wr_addr",
            "db_sq_pi",
            "cq_wrid",
            "rx_wr_data",
        ] {
            assert!(v.contains(port), "{port}");
        }
    }
}
