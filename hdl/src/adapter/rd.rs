//! [`ReadPort`]: the read half of the adapter's AXI4 slave — what ERNIC's WQE processor
//! reads: the WQE from the SQ (after a doorbell) and the RDMA WRITE's data from the request
//! buffer.
//!
//! ERNIC initiates; the port answers. Data is 512 bits wide (PG332: ERNIC's AXI4 interfaces
//! are 512 bits), one burst at a time, `INCR` (or `FIXED`) bursts of full 64-byte beats
//! (`ARSIZE` = 6; an unaligned start address reads the aligned beat that holds it, as AXI
//! places the bytes). Each beat's address selects (bits 17:6 of the aperture):
//!
//! * the SQ slot of the WQE the engine wrote last ([`super::sq::WqeStore`]): that WQE, `OKAY`;
//! * the first beat of the request buffer: the request image ([`super::req::ReqImage`]) in
//!   bytes 0..31, zeros above, `OKAY` — held back until the image is complete;
//! * anything else (another SQ slot, beyond the request buffer, the reply memory or the CQ,
//!   which are write-only, a burst of narrower beats or a `WRAP` burst): zeros, `SLVERR`,
//!   and one `err` pulse for the burst — ERNIC fetched something the engine did not post.
//!
//! Each beat is loaded into the `RDATA` register in the cycle after its address is known
//! (the AR handshake, or the previous beat's), and offered the cycle after: a WQE fetch
//! answers two cycles after `ARVALID`. (Registering the data costs flip-flops, of which the
//! budget has plenty, instead of a 512-bit multiplexer's LUTs, of which it has not.)
//!
//! `aresetn` low drops a burst in progress (and accepts none).

use backline_regmap::pl;
use rust_hdl::prelude::*;

/// `OKAY`.
pub const RESP_OKAY: u64 = 0;
/// `SLVERR`.
pub const RESP_SLVERR: u64 = 2;
/// `ARSIZE` of a 64-byte beat.
pub const SIZE_64B: u64 = 6;
/// `ARBURST` of `FIXED`, `WRAP`.
pub const BURST_FIXED: u64 = 0;
/// `WRAP`.
pub const BURST_WRAP: u64 = 2;

/// The region number (aperture bits 17:16) of a window of the adapter.
pub const fn region(w: pl::Window) -> u64 {
    (w.base - pl::ADAPTER_MEM.base) >> 16
}

/// The read half of the adapter's AXI4 slave.
#[derive(LogicBlock)]
pub struct ReadPort {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Active-low reset.
    pub aresetn: Signal<In, Bit>,
    /// `ARID`.
    pub arid: Signal<In, Bits<4>>,
    /// `ARADDR`.
    pub araddr: Signal<In, Bits<32>>,
    /// `ARLEN`.
    pub arlen: Signal<In, Bits<8>>,
    /// `ARSIZE`.
    pub arsize: Signal<In, Bits<3>>,
    /// `ARBURST`.
    pub arburst: Signal<In, Bits<2>>,
    /// `ARVALID`.
    pub arvalid: Signal<In, Bit>,
    /// `ARREADY`.
    pub arready: Signal<Out, Bit>,
    /// `RID`.
    pub rid: Signal<Out, Bits<4>>,
    /// `RDATA`.
    pub rdata: Signal<Out, Bits<512>>,
    /// `RRESP`.
    pub rresp: Signal<Out, Bits<2>>,
    /// `RLAST`.
    pub rlast: Signal<Out, Bit>,
    /// `RVALID`.
    pub rvalid: Signal<Out, Bit>,
    /// `RREADY`.
    pub rready: Signal<In, Bit>,
    /// The WQE line.
    pub wqe: Signal<In, Bits<512>>,
    /// Its address bits 17:6.
    pub wqe_tag: Signal<In, Bits<12>>,
    /// It is complete.
    pub wqe_valid: Signal<In, Bit>,
    /// The request image.
    pub req: Signal<In, Bits<256>>,
    /// It is complete.
    pub req_valid: Signal<In, Bit>,
    /// Pulse: a burst got `SLVERR`.
    pub err: Signal<Out, Bit>,
    busy: DFF<Bit>,
    loaded: DFF<Bit>,
    data: DFF<Bits<512>>,
    resp: DFF<Bits<2>>,
    id: DFF<Bits<4>>,
    line: DFF<Bits<12>>,
    left: DFF<Bits<8>>,
    fixed: DFF<Bit>,
    bad: DFF<Bit>,
    erred: DFF<Bit>,
    err_r: DFF<Bit>,
    hit_sq: Signal<Local, Bit>,
    hit_req: Signal<Local, Bit>,
    beat: Signal<Local, Bit>,
    k_sq: Constant<Bits<2>>,
    k_req_line: Constant<Bits<12>>,
    k_okay: Constant<Bits<2>>,
    k_slverr: Constant<Bits<2>>,
    k_size: Constant<Bits<3>>,
    k_fixed: Constant<Bits<2>>,
    k_wrap: Constant<Bits<2>>,
}

impl Default for ReadPort {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            aresetn: Default::default(),
            arid: Default::default(),
            araddr: Default::default(),
            arlen: Default::default(),
            arsize: Default::default(),
            arburst: Default::default(),
            arvalid: Default::default(),
            arready: Default::default(),
            rid: Default::default(),
            rdata: Default::default(),
            rresp: Default::default(),
            rlast: Default::default(),
            rvalid: Default::default(),
            rready: Default::default(),
            wqe: Default::default(),
            wqe_tag: Default::default(),
            wqe_valid: Default::default(),
            req: Default::default(),
            req_valid: Default::default(),
            err: Default::default(),
            busy: Default::default(),
            loaded: Default::default(),
            data: Default::default(),
            resp: Default::default(),
            id: Default::default(),
            line: Default::default(),
            left: Default::default(),
            fixed: Default::default(),
            bad: Default::default(),
            erred: Default::default(),
            err_r: Default::default(),
            hit_sq: Default::default(),
            hit_req: Default::default(),
            beat: Default::default(),
            k_sq: Constant::new(region(pl::SQ_MEMORY).into()),
            k_req_line: Constant::new(
                ((pl::REQUEST_BUFFER.base - pl::ADAPTER_MEM.base) >> 6).into(),
            ),
            k_okay: Constant::new(RESP_OKAY.into()),
            k_slverr: Constant::new(RESP_SLVERR.into()),
            k_size: Constant::new(SIZE_64B.into()),
            k_fixed: Constant::new(BURST_FIXED.into()),
            k_wrap: Constant::new(BURST_WRAP.into()),
        }
    }
}

impl Logic for ReadPort {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, busy, loaded, data, resp, id, line, left, fixed, bad, erred, err_r
        );
        // The beat in progress: the SQ slot of the last WQE, or the request buffer's beat.
        self.hit_sq.next = (self.line.q.val().get_bits::<2>(10) == self.k_sq.val())
            & (self.line.q.val() == self.wqe_tag.val())
            & self.wqe_valid.val()
            & !self.bad.q.val();
        self.hit_req.next = (self.line.q.val() == self.k_req_line.val()) & !self.bad.q.val();
        // Load it (the request image once complete), then offer it.
        if self.busy.q.val() & !self.loaded.q.val() & !(self.hit_req.val() & !self.req_valid.val())
        {
            self.loaded.d.next = true;
            self.data.d.next = 0.into();
            if self.hit_sq.val() {
                self.data.d.next = self.wqe.val();
            }
            if self.hit_req.val() {
                self.data.d.next = bit_cast::<512, 256>(self.req.val());
            }
            self.resp.d.next = self.k_slverr.val();
            if self.hit_sq.val() | self.hit_req.val() {
                self.resp.d.next = self.k_okay.val();
            }
        }
        self.rvalid.next = self.busy.q.val() & self.loaded.q.val();
        self.rdata.next = self.data.q.val();
        self.rresp.next = self.resp.q.val();
        self.rlast.next = self.left.q.val() == 0;
        self.rid.next = self.id.q.val();
        self.arready.next = !self.busy.q.val() & self.aresetn.val();
        // One error pulse per burst, at its first SLVERR beat.
        self.beat.next = self.rvalid.val() & self.rready.val();
        self.err_r.d.next = false;
        if self.beat.val() & (self.resp.q.val() != self.k_okay.val()) & !self.erred.q.val() {
            self.err_r.d.next = true;
            self.erred.d.next = true;
        }
        if self.beat.val() {
            self.loaded.d.next = false;
            if self.left.q.val() == 0 {
                self.busy.d.next = false;
            } else {
                self.left.d.next = self.left.q.val() - 1;
                if !self.fixed.q.val() {
                    self.line.d.next = self.line.q.val() + 1;
                }
            }
        }
        if self.arvalid.val() & self.arready.val() {
            self.busy.d.next = true;
            self.id.d.next = self.arid.val();
            self.line.d.next = self.araddr.val().get_bits::<12>(6);
            self.left.d.next = self.arlen.val();
            self.fixed.d.next = self.arburst.val() == self.k_fixed.val();
            self.bad.d.next = (self.arsize.val() != self.k_size.val())
                | (self.arburst.val() == self.k_wrap.val());
            self.erred.d.next = false;
            self.loaded.d.next = false;
        }
        if !self.aresetn.val() {
            self.busy.d.next = false;
            self.loaded.d.next = false;
        }
        self.err.next = self.err_r.q.val();
    }
}
