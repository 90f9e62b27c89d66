//! [`WritePort`]: the write half of the adapter's AXI4 slave — what ERNIC writes: the
//! incoming RDMA WRITEs of the peer's replies into the reply memory (its RX packet handler),
//! and the CQEs and the CQ head into the CQ (its response handler).
//!
//! ERNIC initiates; the port answers. One burst at a time of full 64-byte beats (`AWSIZE` =
//! 6; PG332: ERNIC's RX packet handler "supports only 64B aligned transaction"), `INCR` or
//! `FIXED`, `WSTRB` marking the bytes written. Each beat's address (aperture bits 17:6)
//! selects:
//!
//! * the reply memory (4 KiB of region 1): every 32-bit word of the beat with a strobe set
//!   goes to the engine's reply memory (`rx_wr_*`), one per cycle, lowest first — so a
//!   reply's `seq` word, its last, lands last — bytes not strobed written as 0; `WREADY`
//!   accepts the beat when its last word is out;
//! * the CQ memory (region 3, first 32 KiB): every strobed word is a CQE (PG332 Table 2-2);
//!   its `WRID` goes to the engine as a completion (`cq_valid`, `cq_wrid`), and a CQE with
//!   a non-zero `ERRFLAG` is an `err` pulse — the WQE failed;
//! * the CQ doorbell (region 3, last 4 KiB): the CQ head, accepted and dropped;
//! * anything else (the SQ and the request buffer, which ERNIC only reads, the rest of the
//!   aperture), or a burst of narrower beats or a `WRAP` burst: the beats are taken and
//!   dropped, `BRESP` is `SLVERR`, and one `err` pulse marks the burst.
//!
//! The engine-side outputs are registered (a word reaches the reply memory a cycle after it
//! leaves the beat).

use backline_regmap::pl;
use rust_hdl::prelude::*;

use super::rd::{BURST_FIXED, BURST_WRAP, RESP_OKAY, RESP_SLVERR, SIZE_64B};

/// Words of a 512-bit beat.
const WORDS: usize = 16;

const _: () = {
    // The sub-windows below are decoded from aperture bits 17:12 (4 KiB) and 17:15 (32 KiB).
    assert!(pl::REPLY_MEMORY.bytes == 0x1000 && pl::CQ_DOORBELL.bytes == 0x1000);
    assert!(pl::CQ_MEMORY.bytes == 0x8000);
};

/// Aperture bits 17:12 of a 4 KiB window, bits 17:15 of a 32 KiB one.
const fn above(w: pl::Window, bit: u32) -> u64 {
    (w.base - pl::ADAPTER_MEM.base) >> bit
}

/// The write half of the adapter's AXI4 slave.
#[derive(LogicBlock)]
pub struct WritePort {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Active-low reset.
    pub aresetn: Signal<In, Bit>,
    /// `AWID`.
    pub awid: Signal<In, Bits<4>>,
    /// `AWADDR`.
    pub awaddr: Signal<In, Bits<32>>,
    /// `AWLEN`.
    pub awlen: Signal<In, Bits<8>>,
    /// `AWSIZE`.
    pub awsize: Signal<In, Bits<3>>,
    /// `AWBURST`.
    pub awburst: Signal<In, Bits<2>>,
    /// `AWVALID`.
    pub awvalid: Signal<In, Bit>,
    /// `AWREADY`.
    pub awready: Signal<Out, Bit>,
    /// `WDATA`.
    pub wdata: Signal<In, Bits<512>>,
    /// `WSTRB`.
    pub wstrb: Signal<In, Bits<64>>,
    /// `WLAST`.
    pub wlast: Signal<In, Bit>,
    /// `WVALID`.
    pub wvalid: Signal<In, Bit>,
    /// `WREADY`.
    pub wready: Signal<Out, Bit>,
    /// `BID`.
    pub bid: Signal<Out, Bits<4>>,
    /// `BRESP`.
    pub bresp: Signal<Out, Bits<2>>,
    /// `BVALID`.
    pub bvalid: Signal<Out, Bit>,
    /// `BREADY`.
    pub bready: Signal<In, Bit>,
    /// Reply memory write enable (the engine's `rx_wr_en`).
    pub rx_wr_en: Signal<Out, Bit>,
    /// Reply memory word address.
    pub rx_wr_addr: Signal<Out, Bits<10>>,
    /// Reply memory write data.
    pub rx_wr_data: Signal<Out, Bits<32>>,
    /// A completion (the engine's `cq_valid`).
    pub cq_valid: Signal<Out, Bit>,
    /// Its work-request id.
    pub cq_wrid: Signal<Out, Bits<16>>,
    /// Pulse: a burst got `SLVERR`, or a CQE carried an error flag.
    pub err: Signal<Out, Bit>,
    busy: DFF<Bit>,
    resp: DFF<Bit>,
    id: DFF<Bits<4>>,
    line: DFF<Bits<12>>,
    fixed: DFF<Bit>,
    bad: DFF<Bit>,
    slverr: DFF<Bit>,
    erred: DFF<Bit>,
    loaded: DFF<Bit>,
    pend: DFF<Bits<16>>,
    rx_en_r: DFF<Bit>,
    rx_addr_r: DFF<Bits<10>>,
    rx_data_r: DFF<Bits<32>>,
    cq_r: DFF<Bit>,
    wrid_r: DFF<Bits<16>>,
    err_r: DFF<Bit>,
    in_reply: Signal<Local, Bit>,
    in_cq: Signal<Local, Bit>,
    beat_ok: Signal<Local, Bit>,
    strobes: Signal<Local, Bits<16>>,
    idx: Signal<Local, Bits<4>>,
    word: Signal<Local, Bits<32>>,
    strb: Signal<Local, Bits<4>>,
    bmask: Signal<Local, Bits<32>>,
    k_bit: [Constant<Bits<16>>; WORDS],
    k_rev: [Constant<Bits<4>>; WORDS],
    k_reply: Constant<Bits<6>>,
    k_cq: Constant<Bits<3>>,
    k_cq_db: Constant<Bits<6>>,
    k_byte: [Constant<Bits<32>>; 4],
    k_okay: Constant<Bits<2>>,
    k_slverr: Constant<Bits<2>>,
    k_size: Constant<Bits<3>>,
    k_fixed: Constant<Bits<2>>,
    k_wrap: Constant<Bits<2>>,
}

impl Default for WritePort {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            aresetn: Default::default(),
            awid: Default::default(),
            awaddr: Default::default(),
            awlen: Default::default(),
            awsize: Default::default(),
            awburst: Default::default(),
            awvalid: Default::default(),
            awready: Default::default(),
            wdata: Default::default(),
            wstrb: Default::default(),
            wlast: Default::default(),
            wvalid: Default::default(),
            wready: Default::default(),
            bid: Default::default(),
            bresp: Default::default(),
            bvalid: Default::default(),
            bready: Default::default(),
            rx_wr_en: Default::default(),
            rx_wr_addr: Default::default(),
            rx_wr_data: Default::default(),
            cq_valid: Default::default(),
            cq_wrid: Default::default(),
            err: Default::default(),
            busy: Default::default(),
            resp: Default::default(),
            id: Default::default(),
            line: Default::default(),
            fixed: Default::default(),
            bad: Default::default(),
            slverr: Default::default(),
            erred: Default::default(),
            loaded: Default::default(),
            pend: Default::default(),
            rx_en_r: Default::default(),
            rx_addr_r: Default::default(),
            rx_data_r: Default::default(),
            cq_r: Default::default(),
            wrid_r: Default::default(),
            err_r: Default::default(),
            in_reply: Default::default(),
            in_cq: Default::default(),
            beat_ok: Default::default(),
            strobes: Default::default(),
            idx: Default::default(),
            word: Default::default(),
            strb: Default::default(),
            bmask: Default::default(),
            k_bit: std::array::from_fn(|i| Constant::new((1u64 << i).into())),
            k_rev: std::array::from_fn(|i| Constant::new(((WORDS - 1 - i) as u64).into())),
            k_reply: Constant::new(above(pl::REPLY_MEMORY, 12).into()),
            k_cq: Constant::new(above(pl::CQ_MEMORY, 15).into()),
            k_cq_db: Constant::new(above(pl::CQ_DOORBELL, 12).into()),
            k_byte: std::array::from_fn(|i| Constant::new((0xFFu64 << (8 * i)).into())),
            k_okay: Constant::new(RESP_OKAY.into()),
            k_slverr: Constant::new(RESP_SLVERR.into()),
            k_size: Constant::new(SIZE_64B.into()),
            k_fixed: Constant::new(BURST_FIXED.into()),
            k_wrap: Constant::new(BURST_WRAP.into()),
        }
    }
}

impl Logic for WritePort {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, busy, resp, id, line, fixed, bad, slverr, erred, loaded, pend, rx_en_r,
            rx_addr_r, rx_data_r, cq_r, wrid_r, err_r
        );
        // Where the beat goes: aperture bits 17:12 of the reply memory, 17:15 of the CQ.
        self.in_reply.next = self.line.q.val().get_bits::<6>(6) == self.k_reply.val();
        self.in_cq.next = self.line.q.val().get_bits::<3>(9) == self.k_cq.val();
        self.beat_ok.next = !self.bad.q.val()
            & (self.in_reply.val()
                | self.in_cq.val()
                | (self.line.q.val().get_bits::<6>(6) == self.k_cq_db.val()));
        // The beat's words with a strobe set, and the lowest of those still to go out.
        self.strobes.next = 0.into();
        for i in 0..WORDS {
            if self.wstrb.val().get_bits::<4>(4 * i).any() {
                self.strobes.next = self.strobes.val() | self.k_bit[i].val();
            }
        }
        self.idx.next = 0.into();
        for i in 0..WORDS {
            if self.pend.q.val().get_bit(15 - i) {
                self.idx.next = self.k_rev[i].val();
            }
        }
        self.word.next = self.wdata.val().get_bits::<32>(self.idx.val().index() * 32);
        self.strb.next = self.wstrb.val().get_bits::<4>(self.idx.val().index() * 4);
        self.bmask.next = 0.into();
        for i in 0..4 {
            if self.strb.val().get_bit(i) {
                self.bmask.next = self.bmask.val() | self.k_byte[i].val();
            }
        }
        self.awready.next = !self.busy.q.val() & self.aresetn.val();
        self.wready.next =
            self.busy.q.val() & !self.resp.q.val() & self.loaded.q.val() & !self.pend.q.val().any();
        self.bvalid.next = self.resp.q.val();
        self.bid.next = self.id.q.val();
        self.bresp.next = self.k_okay.val();
        if self.slverr.q.val() {
            self.bresp.next = self.k_slverr.val();
        }
        self.rx_en_r.d.next = false;
        self.cq_r.d.next = false;
        self.err_r.d.next = false;
        // A beat: take its strobes, put its words out one per cycle, then accept it.
        if self.busy.q.val() & !self.resp.q.val() & self.wvalid.val() {
            if !self.loaded.q.val() {
                self.loaded.d.next = true;
                self.pend.d.next = 0.into();
                if self.beat_ok.val() & (self.in_reply.val() | self.in_cq.val()) {
                    self.pend.d.next = self.strobes.val();
                }
            } else if self.pend.q.val().any() {
                self.pend.d.next = self.pend.q.val() & !(self.k_bit[0].val() << self.idx.val());
                if self.in_reply.val() {
                    self.rx_en_r.d.next = true;
                    self.rx_addr_r.d.next = (bit_cast::<10, 6>(self.line.q.val().get_bits::<6>(0))
                        << 4)
                        | bit_cast::<10, 4>(self.idx.val());
                    self.rx_data_r.d.next = self.word.val() & self.bmask.val();
                }
                if self.in_cq.val() {
                    self.cq_r.d.next = true;
                    self.wrid_r.d.next = self.word.val().get_bits::<16>(0);
                    if self.word.val().get_bits::<8>(24).any() {
                        self.err_r.d.next = true;
                    }
                }
            }
        }
        if self.wvalid.val() & self.wready.val() {
            self.loaded.d.next = false;
            if !self.beat_ok.val() {
                self.slverr.d.next = true;
                if !self.erred.q.val() {
                    self.err_r.d.next = true;
                    self.erred.d.next = true;
                }
            }
            if self.wlast.val() {
                self.resp.d.next = true;
            } else if !self.fixed.q.val() {
                self.line.d.next = self.line.q.val() + 1;
            }
        }
        if self.bvalid.val() & self.bready.val() {
            self.busy.d.next = false;
            self.resp.d.next = false;
        }
        if self.awvalid.val() & self.awready.val() {
            self.busy.d.next = true;
            self.resp.d.next = false;
            self.id.d.next = self.awid.val();
            self.line.d.next = self.awaddr.val().get_bits::<12>(6);
            self.fixed.d.next = self.awburst.val() == self.k_fixed.val();
            self.bad.d.next = (self.awsize.val() != self.k_size.val())
                | (self.awburst.val() == self.k_wrap.val());
            self.slverr.d.next = false;
            self.erred.d.next = false;
            self.loaded.d.next = false;
        }
        if !self.aresetn.val() {
            self.busy.d.next = false;
            self.resp.d.next = false;
            self.loaded.d.next = false;
        }
        self.rx_wr_en.next = self.rx_en_r.q.val();
        self.rx_wr_addr.next = self.rx_addr_r.q.val();
        self.rx_wr_data.next = self.rx_data_r.q.val();
        self.cq_valid.next = self.cq_r.q.val();
        self.cq_wrid.next = self.wrid_r.q.val();
        self.err.next = self.err_r.q.val();
    }
}
