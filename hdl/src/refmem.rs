//! [`RefMem`]: reference syndromes and expected replies for hardware-paced decoding runs, and
//! the mismatch counter.

use rust_hdl::prelude::*;

/// Two 256 × 32-bit memories (syndrome, expected reply), written from the register file and
/// read by the FSM at the round's entry with one cycle of latency. A `compare` pulse checks
/// `reply` against the expected word and counts a mismatch.
#[derive(LogicBlock)]
pub struct RefMem {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse: zero the mismatch counter.
    pub clear: Signal<In, Bit>,
    /// Pulse: write `wr_data` as the syndrome of entry `wr_addr`.
    pub wr_syn: Signal<In, Bit>,
    /// Pulse: write `wr_data` as the expected reply of entry `wr_addr`.
    pub wr_exp: Signal<In, Bit>,
    /// Entry written.
    pub wr_addr: Signal<In, Bits<8>>,
    /// Word written.
    pub wr_data: Signal<In, Bits<32>>,
    /// Entry read.
    pub rd_addr: Signal<In, Bits<8>>,
    /// Syndrome of the entry read in the previous cycle.
    pub syndrome: Signal<Out, Bits<32>>,
    /// Expected reply of the entry read in the previous cycle.
    pub expected: Signal<Out, Bits<32>>,
    /// Pulse: compare `reply` with `expected`.
    pub compare: Signal<In, Bit>,
    /// The reply word to check.
    pub reply: Signal<In, Bits<32>>,
    /// The reply had another length than expected: a mismatch whatever `reply` is.
    pub wrong_len: Signal<In, Bit>,
    /// `reply` differs from `expected` (combinational).
    pub mismatch: Signal<Out, Bit>,
    /// Mismatches counted.
    pub mismatches: Signal<Out, Bits<32>>,
    syn: RAM<Bits<32>, 8>,
    exp: RAM<Bits<32>, 8>,
    count: DFF<Bits<32>>,
}

impl Default for RefMem {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            clear: Default::default(),
            wr_syn: Default::default(),
            wr_exp: Default::default(),
            wr_addr: Default::default(),
            wr_data: Default::default(),
            rd_addr: Default::default(),
            syndrome: Default::default(),
            expected: Default::default(),
            compare: Default::default(),
            reply: Default::default(),
            wrong_len: Default::default(),
            mismatch: Default::default(),
            mismatches: Default::default(),
            syn: RAM::new(Default::default()),
            exp: RAM::new(Default::default()),
            count: Default::default(),
        }
    }
}

impl Logic for RefMem {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, count);
        self.syn.read_clock.next = self.clock.val();
        self.syn.write_clock.next = self.clock.val();
        self.exp.read_clock.next = self.clock.val();
        self.exp.write_clock.next = self.clock.val();
        self.syn.read_address.next = self.rd_addr.val();
        self.exp.read_address.next = self.rd_addr.val();
        self.syn.write_address.next = self.wr_addr.val();
        self.exp.write_address.next = self.wr_addr.val();
        self.syn.write_data.next = self.wr_data.val();
        self.exp.write_data.next = self.wr_data.val();
        self.syn.write_enable.next = self.wr_syn.val();
        self.exp.write_enable.next = self.wr_exp.val();
        self.syndrome.next = self.syn.read_data.val();
        self.expected.next = self.exp.read_data.val();
        self.mismatch.next = (self.reply.val() != self.exp.read_data.val()) | self.wrong_len.val();
        if self.compare.val()
            & ((self.reply.val() != self.exp.read_data.val()) | self.wrong_len.val())
        {
            self.count.d.next = self.count.q.val() + 1;
        }
        if self.clear.val() {
            self.count.d.next = 0.into();
        }
        self.mismatches.next = self.count.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::connect_inputs;

    #[test]
    fn stores_entries_and_counts_mismatches() {
        let mut uut = RefMem::default();
        connect_inputs!(
            uut, clear, wr_syn, wr_exp, wr_addr, wr_data, rd_addr, compare, reply, wrong_len
        );
        uut.connect_all();
        assert!(generate_verilog(&uut).contains("module top"));
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut Box<RefMem>| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<RefMem>| {
            let mut x = sim.init()?;
            for i in 0..4u64 {
                x.wr_addr.next = i.into();
                x.wr_data.next = (0x100 + i).into();
                x.wr_syn.next = true;
                wait_clock_cycle!(sim, clock, x);
                x.wr_syn.next = false;
                x.wr_exp.next = true;
                x.wr_data.next = (0x200 + i).into();
                wait_clock_cycle!(sim, clock, x);
                x.wr_exp.next = false;
            }
            for i in 0..4u64 {
                x.rd_addr.next = i.into();
                wait_clock_cycle!(sim, clock, x);
                sim_assert_eq!(sim, x.syndrome.val().to_u64(), 0x100 + i, x);
                sim_assert_eq!(sim, x.expected.val().to_u64(), 0x200 + i, x);
                // Entry 2 gets a wrong reply.
                x.reply.next = (0x200 + i + u64::from(i == 2)).into();
                x.compare.next = true;
                wait_clock_cycle!(sim, clock, x);
                x.compare.next = false;
            }
            sim_assert_eq!(sim, x.mismatches.val().to_u32(), 1, x);
            x.clear.next = true;
            wait_clock_cycle!(sim, clock, x);
            x.clear.next = false;
            sim_assert_eq!(sim, x.mismatches.val().to_u32(), 0, x);
            sim.done(x)
        });
        sim.run_to_file(Box::new(uut), 1_000, &crate::testutil::vcd("refmem.vcd"))
            .unwrap();
    }
}
