//! [`AxiLiteSlave`]: the AXI4-Lite protocol engine of the register file. It turns bus
//! transactions into one-cycle register strobes and answers `OKAY` or `SLVERR` as the decoder
//! (the engine's top level, built from `backline-regmap`) says. It never waits on the
//! decoder, so no address — mapped or not — can hang the bus.
//!
//! Write: `AW` and `W` are accepted independently (each in any order, one outstanding);
//! once both are in, `wr_strobe` pulses for one cycle and `B` follows with `wr_ok ? OKAY :
//! SLVERR`. Read: `AR` is accepted, then `rd_strobe` pulses for one cycle while the decoder
//! drives `rd_data`/`rd_ok`, and `R` follows. `WSTRB` is ignored (whole-word writes).

use rust_hdl::prelude::*;

/// `OKAY`.
pub const RESP_OKAY: u64 = 0;
/// `SLVERR`.
pub const RESP_SLVERR: u64 = 2;

/// The AXI4-Lite slave protocol engine.
#[derive(LogicBlock, Default)]
pub struct AxiLiteSlave {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Write address.
    pub awaddr: Signal<In, Bits<16>>,
    /// Write address valid.
    pub awvalid: Signal<In, Bit>,
    /// Write address ready.
    pub awready: Signal<Out, Bit>,
    /// Write data.
    pub wdata: Signal<In, Bits<32>>,
    /// Write data valid.
    pub wvalid: Signal<In, Bit>,
    /// Write data ready.
    pub wready: Signal<Out, Bit>,
    /// Write response.
    pub bresp: Signal<Out, Bits<2>>,
    /// Write response valid.
    pub bvalid: Signal<Out, Bit>,
    /// Write response ready.
    pub bready: Signal<In, Bit>,
    /// Read address.
    pub araddr: Signal<In, Bits<16>>,
    /// Read address valid.
    pub arvalid: Signal<In, Bit>,
    /// Read address ready.
    pub arready: Signal<Out, Bit>,
    /// Read data.
    pub rdata: Signal<Out, Bits<32>>,
    /// Read response.
    pub rresp: Signal<Out, Bits<2>>,
    /// Read data valid.
    pub rvalid: Signal<Out, Bit>,
    /// Read data ready.
    pub rready: Signal<In, Bit>,
    /// One-cycle pulse: write `wr_data` to `wr_addr`.
    pub wr_strobe: Signal<Out, Bit>,
    /// Write byte address.
    pub wr_addr: Signal<Out, Bits<16>>,
    /// Write data.
    pub wr_data: Signal<Out, Bits<32>>,
    /// The decoder accepts the write at `wr_addr`.
    pub wr_ok: Signal<In, Bit>,
    /// One-cycle pulse: a read of `rd_addr` completes (side effects happen now).
    pub rd_strobe: Signal<Out, Bit>,
    /// Read byte address.
    pub rd_addr: Signal<Out, Bits<16>>,
    /// Data the decoder returns for `rd_addr`.
    pub rd_data: Signal<In, Bits<32>>,
    /// The decoder maps `rd_addr`.
    pub rd_ok: Signal<In, Bit>,
    aw_full: DFF<Bit>,
    aw_addr: DFF<Bits<16>>,
    w_full: DFF<Bit>,
    w_data: DFF<Bits<32>>,
    b_valid: DFF<Bit>,
    b_resp: DFF<Bits<2>>,
    ar_full: DFF<Bit>,
    ar_addr: DFF<Bits<16>>,
    r_valid: DFF<Bit>,
    r_data: DFF<Bits<32>>,
    r_resp: DFF<Bits<2>>,
}

impl Logic for AxiLiteSlave {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, aw_full, aw_addr, w_full, w_data, b_valid, b_resp, ar_full, ar_addr,
            r_valid, r_data, r_resp
        );
        // Write channel.
        self.awready.next = !self.aw_full.q.val() & !self.b_valid.q.val();
        self.wready.next = !self.w_full.q.val() & !self.b_valid.q.val();
        if self.awvalid.val() & !self.aw_full.q.val() & !self.b_valid.q.val() {
            self.aw_full.d.next = true;
            self.aw_addr.d.next = self.awaddr.val();
        }
        if self.wvalid.val() & !self.w_full.q.val() & !self.b_valid.q.val() {
            self.w_full.d.next = true;
            self.w_data.d.next = self.wdata.val();
        }
        self.wr_strobe.next = self.aw_full.q.val() & self.w_full.q.val() & !self.b_valid.q.val();
        self.wr_addr.next = self.aw_addr.q.val();
        self.wr_data.next = self.w_data.q.val();
        if self.aw_full.q.val() & self.w_full.q.val() & !self.b_valid.q.val() {
            self.b_valid.d.next = true;
            self.b_resp.d.next = 2.into();
            if self.wr_ok.val() {
                self.b_resp.d.next = 0.into();
            }
            self.aw_full.d.next = false;
            self.w_full.d.next = false;
        }
        if self.b_valid.q.val() & self.bready.val() {
            self.b_valid.d.next = false;
        }
        self.bvalid.next = self.b_valid.q.val();
        self.bresp.next = self.b_resp.q.val();
        // Read channel.
        self.arready.next = !self.ar_full.q.val() & !self.r_valid.q.val();
        if self.arvalid.val() & !self.ar_full.q.val() & !self.r_valid.q.val() {
            self.ar_full.d.next = true;
            self.ar_addr.d.next = self.araddr.val();
        }
        self.rd_strobe.next = self.ar_full.q.val() & !self.r_valid.q.val();
        self.rd_addr.next = self.ar_addr.q.val();
        if self.ar_full.q.val() & !self.r_valid.q.val() {
            self.r_valid.d.next = true;
            self.r_data.d.next = self.rd_data.val();
            self.r_resp.d.next = 2.into();
            if self.rd_ok.val() {
                self.r_resp.d.next = 0.into();
            }
            self.ar_full.d.next = false;
        }
        if self.r_valid.q.val() & self.rready.val() {
            self.r_valid.d.next = false;
        }
        self.rvalid.next = self.r_valid.q.val();
        self.rdata.next = self.r_data.q.val();
        self.rresp.next = self.r_resp.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::connect_inputs;

    /// A decoder stand-in: 0x10 is a read/write register, everything else is unmapped. Writes
    /// with address before data, data before address, and a read of an unmapped address all
    /// complete, with OKAY or SLVERR.
    #[test]
    fn handshakes_and_slverr() {
        let mut uut = AxiLiteSlave::default();
        connect_inputs!(
            uut, awaddr, awvalid, wdata, wvalid, bready, araddr, arvalid, rready, wr_ok, rd_data,
            rd_ok
        );
        uut.connect_all();
        assert!(generate_verilog(&uut).contains("module top"));
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut Box<AxiLiteSlave>| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<AxiLiteSlave>| {
            let mut x = sim.init()?;
            let mut reg = 0u64;
            x.bready.next = true;
            x.rready.next = true;
            for (addr, data, aw_first) in [(0x10u64, 0xABCDu64, true), (0x44, 1, false)] {
                if aw_first {
                    x.awaddr.next = addr.into();
                    x.awvalid.next = true;
                    wait_clock_cycle!(sim, clock, x);
                    x.awvalid.next = false;
                    x.wdata.next = data.into();
                    x.wvalid.next = true;
                    wait_clock_cycle!(sim, clock, x);
                    x.wvalid.next = false;
                } else {
                    x.wdata.next = data.into();
                    x.wvalid.next = true;
                    wait_clock_cycle!(sim, clock, x);
                    x.wvalid.next = false;
                    x.awaddr.next = addr.into();
                    x.awvalid.next = true;
                    wait_clock_cycle!(sim, clock, x);
                    x.awvalid.next = false;
                }
                let mut n = 0;
                while !x.bvalid.val() {
                    x.wr_ok.next = x.wr_addr.val() == 0x10;
                    if x.wr_strobe.val() && x.wr_addr.val() == 0x10 {
                        reg = x.wr_data.val().to_u64();
                    }
                    wait_clock_cycle!(sim, clock, x);
                    n += 1;
                    sim_assert!(sim, n < 5, x);
                }
                let want = if addr == 0x10 { RESP_OKAY } else { RESP_SLVERR };
                sim_assert_eq!(sim, x.bresp.val().to_u64(), want, x);
                wait_clock_cycle!(sim, clock, x);
                sim_assert!(sim, !x.bvalid.val(), x);
            }
            sim_assert_eq!(sim, reg, 0xABCD, x);
            for addr in [0x10u64, 0x20] {
                x.araddr.next = addr.into();
                x.arvalid.next = true;
                wait_clock_cycle!(sim, clock, x);
                x.arvalid.next = false;
                let mut n = 0;
                while !x.rvalid.val() {
                    x.rd_ok.next = x.rd_addr.val() == 0x10;
                    x.rd_data.next = reg.into();
                    wait_clock_cycle!(sim, clock, x);
                    n += 1;
                    sim_assert!(sim, n < 5, x);
                }
                let (resp, data) = if addr == 0x10 {
                    (RESP_OKAY, 0xABCD)
                } else {
                    (RESP_SLVERR, 0xABCD)
                };
                sim_assert_eq!(sim, x.rresp.val().to_u64(), resp, x);
                sim_assert_eq!(sim, x.rdata.val().to_u64(), data, x);
                wait_clock_cycle!(sim, clock, x);
            }
            sim.done(x)
        });
        sim.run_to_file(Box::new(uut), 2_000, &crate::testutil::vcd("axi.vcd"))
            .unwrap();
    }
}
