//! [`TraceRam`]: one 16-bit RTT per round at line rate, `2^A` entries (the engine uses
//! `A = 20`: 2 MiB), saturating at 0xFFFF with a sticky flag and stopping when full.

use rust_hdl::prelude::*;

/// The trace memory and its bookkeeping. Entries are written in round order from index 0;
/// a read port serves the AXI4-Lite read-out with one cycle of latency.
#[derive(LogicBlock)]
pub struct TraceRam<const A: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse: forget all entries and the saturated flag.
    pub clear: Signal<In, Bit>,
    /// Recording enabled.
    pub enable: Signal<In, Bit>,
    /// Pulse: record `rtt` as the next entry.
    pub record: Signal<In, Bit>,
    /// RTT in cycles (0 means the round timed out).
    pub rtt: Signal<In, Bits<32>>,
    /// Read address.
    pub rd_addr: Signal<In, Bits<A>>,
    /// Entry at the read address of the previous cycle.
    pub rd_data: Signal<Out, Bits<16>>,
    /// Entries recorded (0 ..= 2^A).
    pub count: Signal<Out, Bits<32>>,
    /// All entries used; recording has stopped.
    pub full: Signal<Out, Bit>,
    /// Sticky: an RTT above 0xFFFF was recorded as 0xFFFF.
    pub saturated: Signal<Out, Bit>,
    mem: RAM<Bits<16>, A>,
    cnt: DFF<Bits<32>>,
    sat: DFF<Bit>,
    depth: Constant<Bits<32>>,
}

impl<const A: usize> Default for TraceRam<A> {
    fn default() -> Self {
        assert!(A <= 24, "trace RAM address width");
        Self {
            clock: Default::default(),
            clear: Default::default(),
            enable: Default::default(),
            record: Default::default(),
            rtt: Default::default(),
            rd_addr: Default::default(),
            rd_data: Default::default(),
            count: Default::default(),
            full: Default::default(),
            saturated: Default::default(),
            mem: RAM::new(Default::default()),
            cnt: Default::default(),
            sat: Default::default(),
            depth: Constant::new((1u64 << A).into()),
        }
    }
}

impl<const A: usize> Logic for TraceRam<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, cnt, sat);
        self.mem.read_clock.next = self.clock.val();
        self.mem.write_clock.next = self.clock.val();
        self.mem.read_address.next = self.rd_addr.val();
        self.rd_data.next = self.mem.read_data.val();
        self.mem.write_address.next = self.cnt.q.val().get_bits::<A>(0);
        self.mem.write_data.next = self.rtt.val().get_bits::<16>(0);
        if self.rtt.val() > 0xFFFF {
            self.mem.write_data.next = 0xFFFF.into();
        }
        self.mem.write_enable.next = false;
        self.full.next = self.cnt.q.val() == self.depth.val();
        if self.record.val() & self.enable.val() & (self.cnt.q.val() != self.depth.val()) {
            self.mem.write_enable.next = true;
            self.cnt.d.next = self.cnt.q.val() + 1;
            if self.rtt.val() > 0xFFFF {
                self.sat.d.next = true;
            }
        }
        if self.clear.val() {
            self.cnt.d.next = 0.into();
            self.sat.d.next = false;
        }
        self.count.next = self.cnt.q.val();
        self.saturated.next = self.sat.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::connect_inputs;

    /// A 3-bit trace: 8 entries fill it, the 9th is dropped; 0x12345 saturates; reads return
    /// what was written; clear empties it.
    #[test]
    fn fills_saturates_stops_and_reads_back() {
        let mut uut = TraceRam::<3>::default();
        connect_inputs!(uut, clear, enable, record, rtt, rd_addr);
        uut.connect_all();
        assert!(generate_verilog(&uut).contains("mem[7:0]"));
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut Box<TraceRam<3>>| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<TraceRam<3>>| {
            let mut x = sim.init()?;
            x.enable.next = true;
            let rtts = [7u64, 0xFFFF, 3, 0x12345, 9, 10, 11, 12, 13];
            for (i, &r) in rtts.iter().enumerate() {
                sim_assert_eq!(sim, x.count.val().to_u32(), i.min(8) as u32, x);
                x.record.next = true;
                x.rtt.next = r.into();
                wait_clock_cycle!(sim, clock, x);
                x.record.next = false;
                if i == 0 {
                    sim_assert!(sim, !x.saturated.val(), x);
                }
                if i == 2 {
                    sim_assert!(sim, !x.saturated.val(), x); // exactly 0xFFFF does not saturate
                }
                if i == 3 {
                    sim_assert!(sim, x.saturated.val(), x);
                }
            }
            sim_assert!(sim, x.full.val(), x);
            sim_assert_eq!(sim, x.count.val().to_u32(), 8, x);
            for (i, want) in [7u32, 0xFFFF, 3, 0xFFFF, 9, 10, 11, 12]
                .into_iter()
                .enumerate()
            {
                x.rd_addr.next = (i as u64).into();
                wait_clock_cycle!(sim, clock, x);
                sim_assert_eq!(sim, x.rd_data.val().to_u32(), want, x);
            }
            x.clear.next = true;
            wait_clock_cycle!(sim, clock, x);
            x.clear.next = false;
            sim_assert!(sim, !x.full.val() & !x.saturated.val(), x);
            sim_assert_eq!(sim, x.count.val().to_u32(), 0, x);
            sim.done(x)
        });
        sim.run_to_file(Box::new(uut), 1_000, &crate::testutil::vcd("trace.vcd"))
            .unwrap();
    }
}
