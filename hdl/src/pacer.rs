//! [`LfsrPacer`]: the hw-loop round pacer, the rule of `backline-pacer` in logic.
//!
//! Interval of draw `k`: `freq + (state_k & span)` cycles, `state_0 = seed`, and the LFSR
//! (32-bit Fibonacci, taps 32, 22, 2, 1) steps [`backline_pacer::DRAW_STRIDE`] times between
//! draws. The steps run in the background, one per cycle, right after each draw; a draw that
//! arrives while the refill still runs waits for it, so the sequence depends only on the seed.
//!
//! Timing: `arm` in cycle `t` draws in `t + 1` (or when the refill ends) and `fire` pulses in
//! cycle `t + 2 + interval`; `skip` in cycle `s` of a quiet period makes `fire` pulse in `s + 1`.

use rust_hdl::prelude::*;

/// The LFSR pacer.
#[derive(LogicBlock)]
pub struct LfsrPacer {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Load `seed` and drop any pending draw or quiet period (an `arm` in the same cycle is kept).
    pub load: Signal<In, Bit>,
    /// Fixed part of each interval, cycles.
    pub freq: Signal<In, Bits<32>>,
    /// Mask of the random part (2^N − 1).
    pub span: Signal<In, Bits<32>>,
    /// LFSR seed, non-zero.
    pub seed: Signal<In, Bits<32>>,
    /// Pulse: start the next quiet period.
    pub arm: Signal<In, Bit>,
    /// Pulse: end the current quiet period now.
    pub skip: Signal<In, Bit>,
    /// One-cycle pulse when a quiet period ends.
    pub fire: Signal<Out, Bit>,
    /// The last interval drawn.
    pub interval: Signal<Out, Bits<32>>,
    /// Cycles left in the current quiet period.
    pub remain: Signal<Out, Bits<32>>,
    /// The LFSR state.
    pub state: Signal<Out, Bits<32>>,
    /// A background refill is running.
    pub refilling: Signal<Out, Bit>,
    lfsr: DFF<Bits<32>>,
    steps: DFF<Bits<8>>,
    pending: DFF<Bit>,
    waiting: DFF<Bit>,
    last: DFF<Bits<32>>,
    count: DFF<Bits<32>>,
    feedback: Signal<Local, Bit>,
    drawn: Signal<Local, Bits<32>>,
    stride: Constant<Bits<8>>,
}

impl Default for LfsrPacer {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            load: Default::default(),
            freq: Default::default(),
            span: Default::default(),
            seed: Default::default(),
            arm: Default::default(),
            skip: Default::default(),
            fire: Default::default(),
            interval: Default::default(),
            remain: Default::default(),
            state: Default::default(),
            refilling: Default::default(),
            lfsr: Default::default(),
            steps: Default::default(),
            pending: Default::default(),
            waiting: Default::default(),
            last: Default::default(),
            count: Default::default(),
            feedback: Default::default(),
            drawn: Default::default(),
            stride: Constant::new((backline_pacer::DRAW_STRIDE as u64).into()),
        }
    }
}

impl Logic for LfsrPacer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, lfsr, steps, pending, waiting, last, count);
        self.fire.next = false;
        self.feedback.next = self.lfsr.q.val().get_bit(31)
            ^ self.lfsr.q.val().get_bit(21)
            ^ self.lfsr.q.val().get_bit(1)
            ^ self.lfsr.q.val().get_bit(0);
        self.drawn.next = self.freq.val() + (self.lfsr.q.val() & self.span.val());
        if self.steps.q.val() != 0 {
            self.lfsr.d.next =
                (self.lfsr.q.val() << 1) | bit_cast::<32, 1>(self.feedback.val().into());
            self.steps.d.next = self.steps.q.val() - 1;
        }
        if self.arm.val() {
            self.pending.d.next = true;
        }
        if self.pending.q.val() & (self.steps.q.val() == 0) & !self.waiting.q.val() {
            self.last.d.next = self.drawn.val();
            self.count.d.next = self.drawn.val();
            self.steps.d.next = self.stride.val();
            self.pending.d.next = false;
            self.waiting.d.next = true;
        }
        if self.waiting.q.val() {
            if self.count.q.val() == 0 {
                self.fire.next = true;
                self.waiting.d.next = false;
            } else {
                self.count.d.next = self.count.q.val() - 1;
                if self.skip.val() {
                    self.count.d.next = 0.into();
                }
            }
        }
        if self.load.val() {
            self.lfsr.d.next = self.seed.val();
            self.steps.d.next = 0.into();
            self.pending.d.next = self.arm.val();
            self.waiting.d.next = false;
            self.count.d.next = 0.into();
            self.last.d.next = 0.into();
        }
        self.interval.next = self.last.q.val();
        self.remain.next = self.count.q.val();
        self.state.next = self.lfsr.q.val();
        self.refilling.next = self.steps.q.val() != 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Vectors, connect_inputs};

    #[test]
    fn generates_verilog() {
        let mut uut = LfsrPacer::default();
        connect_inputs!(uut, load, freq, span, seed, arm, skip);
        uut.connect_all();
        let v = generate_verilog(&uut);
        assert!(v.contains("module top"));
    }

    /// Draws the first intervals of the checked-in `small_span` vector set with `arm` pulses
    /// and checks each against the file; also checks the quiet period lasts `interval + 2`
    /// cycles from the arm.
    #[test]
    fn draws_the_shared_vectors() {
        let set = Vectors::load().set("small_span");
        let (freq, span, seed) = (set.freq, set.span, set.seed);
        let expected: Vec<(u32, u32)> = set.rows.iter().take(6).copied().collect();
        let mut uut = LfsrPacer::default();
        connect_inputs!(uut, load, freq, span, seed, arm, skip);
        uut.connect_all();
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut Box<LfsrPacer>| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<LfsrPacer>| {
            let mut x = sim.init()?;
            x.freq.next = (freq as u64).into();
            x.span.next = (span as u64).into();
            x.seed.next = (seed as u64).into();
            x.load.next = true;
            wait_clock_cycle!(sim, clock, x);
            x.load.next = false;
            for &(state, interval) in &expected {
                sim_assert_eq!(sim, x.state.val().to_u32(), state, x);
                x.arm.next = true;
                wait_clock_cycle!(sim, clock, x);
                x.arm.next = false;
                let mut cycles = 1u32;
                while !x.fire.val() {
                    wait_clock_cycle!(sim, clock, x);
                    cycles += 1;
                    sim_assert!(sim, cycles < interval + 100, x);
                }
                sim_assert_eq!(sim, x.interval.val().to_u32(), interval, x);
                sim_assert_eq!(sim, cycles, interval + 2, x);
                // Let the background refill finish before the next draw.
                while x.refilling.val() {
                    wait_clock_cycle!(sim, clock, x);
                }
            }
            sim.done(x)
        });
        sim.run_to_file(Box::new(uut), 40_000, &crate::testutil::vcd("pacer.vcd"))
            .unwrap();
    }

    #[test]
    fn skip_ends_the_quiet_period() {
        let mut uut = LfsrPacer::default();
        connect_inputs!(uut, load, freq, span, seed, arm, skip);
        uut.connect_all();
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut Box<LfsrPacer>| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<LfsrPacer>| {
            let mut x = sim.init()?;
            x.freq.next = 1_000_000.into();
            x.seed.next = 1.into();
            x.load.next = true;
            x.arm.next = true;
            wait_clock_cycle!(sim, clock, x);
            x.load.next = false;
            x.arm.next = false;
            wait_clock_cycles!(sim, clock, x, 5);
            sim_assert!(sim, !x.fire.val(), x);
            sim_assert!(sim, x.remain.val().to_u32() > 999_000, x);
            x.skip.next = true;
            wait_clock_cycle!(sim, clock, x);
            x.skip.next = false;
            sim_assert!(sim, x.fire.val(), x);
            sim_assert_eq!(sim, x.remain.val().to_u32(), 0, x);
            wait_clock_cycle!(sim, clock, x);
            sim_assert!(sim, !x.fire.val(), x);
            sim.done(x)
        });
        sim.run_to_file(
            Box::new(uut),
            2_000,
            &crate::testutil::vcd("pacer_skip.vcd"),
        )
        .unwrap();
    }
}
