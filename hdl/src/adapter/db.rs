//! [`Doorbell`]: the adapter's AXI4-Lite master, which rings the SQ doorbell — a write of
//! the SQ producer index to the QP's `SQPI` register in ERNIC's register space (PG332
//! Register Space, per-QP `SQPIi`; "ERNIC TX Path"), as the QP's `QPCONF.hw_handshake_dis`
//! = 1 has doorbells arrive: over AXI.
//!
//! The engine's doorbell (`db_valid`, `db_sq_pi`) starts a write of the index's low 16 bits
//! (the register's `index` field; the reserved bits written 0, as the guide asks) to
//! `db_addr` (`DB_ADDR`). `AW` and `W` are offered together and each held until taken;
//! `BREADY` is always high. An answer other than `OKAY` is an `err` pulse, and so is no
//! answer within [`rm::DB_TIMEOUT_CYCLES`] — the write is then still carried through (AXI
//! allows no abandoning), and its late answer ends it without a second pulse. A doorbell
//! while a write is outstanding cannot be rung: an `err` pulse. The read channels are
//! never used (`ARVALID` = 0, `RREADY` = 1).

use backline_regmap as rm;
use rust_hdl::prelude::*;

/// The SQ doorbell as an AXI4-Lite write.
#[derive(LogicBlock)]
pub struct Doorbell {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Active-low reset.
    pub aresetn: Signal<In, Bit>,
    /// Pulse: ring (the engine's `db_valid`).
    pub ring: Signal<In, Bit>,
    /// The producer index (`db_sq_pi`).
    pub pi: Signal<In, Bits<32>>,
    /// Where to write it (`db_addr`).
    pub addr: Signal<In, Bits<32>>,
    /// `AWADDR`.
    pub awaddr: Signal<Out, Bits<32>>,
    /// `AWPROT`.
    pub awprot: Signal<Out, Bits<3>>,
    /// `AWVALID`.
    pub awvalid: Signal<Out, Bit>,
    /// `AWREADY`.
    pub awready: Signal<In, Bit>,
    /// `WDATA`.
    pub wdata: Signal<Out, Bits<32>>,
    /// `WSTRB`.
    pub wstrb: Signal<Out, Bits<4>>,
    /// `WVALID`.
    pub wvalid: Signal<Out, Bit>,
    /// `WREADY`.
    pub wready: Signal<In, Bit>,
    /// `BRESP`.
    pub bresp: Signal<In, Bits<2>>,
    /// `BVALID`.
    pub bvalid: Signal<In, Bit>,
    /// `BREADY`.
    pub bready: Signal<Out, Bit>,
    /// `ARADDR` (unused).
    pub araddr: Signal<Out, Bits<32>>,
    /// `ARPROT` (unused).
    pub arprot: Signal<Out, Bits<3>>,
    /// `ARVALID` (never).
    pub arvalid: Signal<Out, Bit>,
    /// `ARREADY`.
    pub arready: Signal<In, Bit>,
    /// `RDATA`.
    pub rdata: Signal<In, Bits<32>>,
    /// `RRESP`.
    pub rresp: Signal<In, Bits<2>>,
    /// `RVALID`.
    pub rvalid: Signal<In, Bit>,
    /// `RREADY` (always).
    pub rready: Signal<Out, Bit>,
    /// Pulse: a doorbell failed (error answer, no answer in time, or rung while busy).
    pub err: Signal<Out, Bit>,
    busy: DFF<Bit>,
    aw_pend: DFF<Bit>,
    w_pend: DFF<Bit>,
    late: DFF<Bit>,
    timer: DFF<Bits<16>>,
    addr_r: DFF<Bits<32>>,
    data_r: DFF<Bits<32>>,
    err_r: DFF<Bit>,
    k_timeout: Constant<Bits<16>>,
}

impl Default for Doorbell {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            aresetn: Default::default(),
            ring: Default::default(),
            pi: Default::default(),
            addr: Default::default(),
            awaddr: Default::default(),
            awprot: Default::default(),
            awvalid: Default::default(),
            awready: Default::default(),
            wdata: Default::default(),
            wstrb: Default::default(),
            wvalid: Default::default(),
            wready: Default::default(),
            bresp: Default::default(),
            bvalid: Default::default(),
            bready: Default::default(),
            araddr: Default::default(),
            arprot: Default::default(),
            arvalid: Default::default(),
            arready: Default::default(),
            rdata: Default::default(),
            rresp: Default::default(),
            rvalid: Default::default(),
            rready: Default::default(),
            err: Default::default(),
            busy: Default::default(),
            aw_pend: Default::default(),
            w_pend: Default::default(),
            late: Default::default(),
            timer: Default::default(),
            addr_r: Default::default(),
            data_r: Default::default(),
            err_r: Default::default(),
            k_timeout: Constant::new((rm::DB_TIMEOUT_CYCLES as u64).into()),
        }
    }
}

const _: () = assert!(rm::DB_TIMEOUT_CYCLES < 1 << 16);

impl Logic for Doorbell {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, busy, aw_pend, w_pend, late, timer, addr_r, data_r, err_r
        );
        self.awaddr.next = self.addr_r.q.val();
        self.awprot.next = 0.into();
        self.awvalid.next = self.aw_pend.q.val();
        self.wdata.next = self.data_r.q.val();
        self.wstrb.next = 15.into();
        self.wvalid.next = self.w_pend.q.val();
        self.bready.next = true;
        self.araddr.next = 0.into();
        self.arprot.next = 0.into();
        self.arvalid.next = false;
        self.rready.next = true;
        self.err_r.d.next = false;
        if self.busy.q.val() {
            if self.awready.val() {
                self.aw_pend.d.next = false;
            }
            if self.wready.val() {
                self.w_pend.d.next = false;
            }
            if !self.late.q.val() {
                self.timer.d.next = self.timer.q.val() + 1;
                if self.timer.q.val() == self.k_timeout.val() {
                    self.late.d.next = true;
                    self.err_r.d.next = true;
                }
            }
            if self.bvalid.val() {
                self.busy.d.next = false;
                if (self.bresp.val() != 0) & !self.late.q.val() {
                    self.err_r.d.next = true;
                }
            }
        }
        if self.ring.val() {
            if self.busy.q.val() {
                self.err_r.d.next = true;
            } else {
                self.busy.d.next = true;
                self.aw_pend.d.next = true;
                self.w_pend.d.next = true;
                self.late.d.next = false;
                self.timer.d.next = 0.into();
                self.addr_r.d.next = self.addr.val();
                self.data_r.d.next = bit_cast::<32, 16>(self.pi.val().get_bits::<16>(0));
            }
        }
        if !self.aresetn.val() {
            self.busy.d.next = false;
            self.aw_pend.d.next = false;
            self.w_pend.d.next = false;
        }
        self.err.next = self.err_r.q.val();
    }
}
