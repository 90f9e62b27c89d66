//! [`ErnicFault`]: what the engine does with an ERNIC-side AXI error that the ERNIC adapter
//! reports (`ernic_err` of `top`): it counts it, and a round in which one happens and no
//! reply comes ends at once, through the FSM's own timeout path, and is traced as
//! [`rm::TRACE_AXI_ERROR`] instead of as a timeout.
//!
//! The block sits between the register file and the FSM, so the FSM needs no state of its
//! own for it: while an error of the round in progress is pending, the FSM is handed a reply
//! timeout of 0 (it ends the round in the next WAIT_RPL or POLL_RPL cycle, as a timeout); when
//! the round is committed (`record`), its trace entry becomes `TRACE_AXI_ERROR` if it timed
//! out, and that round is taken off the FSM's timeout count, so that `TIMEOUT_COUNT` counts
//! only real reply timeouts and `ERNIC_ERR_COUNT` the errors. A round that got its reply
//! despite an error (a late doorbell answer, say) is committed with its RTT; the error is
//! still counted. An error outside any round is counted and marks nothing.

use backline_regmap as rm;
use rust_hdl::prelude::*;

/// The error counter and the round-failing gate between the register file and the FSM.
#[derive(LogicBlock)]
pub struct ErnicFault {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse: soft reset (clears the counters and the pending error).
    pub reset: Signal<In, Bit>,
    /// Pulse: an ERNIC-side AXI error (from the adapter).
    pub err: Signal<In, Bit>,
    /// A round is in progress (the FSM is not idle).
    pub in_round: Signal<In, Bit>,
    /// TIMEOUT (the register).
    pub timeout: Signal<In, Bits<32>>,
    /// The reply timeout the FSM works with: TIMEOUT, or 0 while an error is pending.
    pub fsm_timeout: Signal<Out, Bits<32>>,
    /// Pulse from the FSM: the round is committed, record `rtt`.
    pub record: Signal<In, Bit>,
    /// The FSM's trace entry (0: timeout).
    pub rtt: Signal<In, Bits<32>>,
    /// The trace entry to record: `rtt`, or `TRACE_AXI_ERROR` for a round failed by an
    /// error.
    pub trace_rtt: Signal<Out, Bits<32>>,
    /// The FSM's count of rounds that ended in its timeout path.
    pub fsm_timeouts: Signal<In, Bits<32>>,
    /// TIMEOUT_COUNT: those, less the rounds failed by an error.
    pub timeouts: Signal<Out, Bits<32>>,
    /// ERNIC_ERR_COUNT.
    pub errors: Signal<Out, Bits<32>>,
    /// STATUS.ernic_err: the last committed round was failed by an error.
    pub last: Signal<Out, Bit>,
    pending: DFF<Bit>,
    count: DFF<Bits<32>>,
    failed: DFF<Bits<32>>,
    last_r: DFF<Bit>,
    lost: Signal<Local, Bit>,
    /// `TRACE_AXI_ERROR` as the trace's 32-bit input.
    k_mark: Constant<Bits<32>>,
}

impl Default for ErnicFault {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            reset: Default::default(),
            err: Default::default(),
            in_round: Default::default(),
            timeout: Default::default(),
            fsm_timeout: Default::default(),
            record: Default::default(),
            rtt: Default::default(),
            trace_rtt: Default::default(),
            fsm_timeouts: Default::default(),
            timeouts: Default::default(),
            errors: Default::default(),
            last: Default::default(),
            pending: Default::default(),
            count: Default::default(),
            failed: Default::default(),
            last_r: Default::default(),
            lost: Default::default(),
            k_mark: Constant::new((rm::TRACE_AXI_ERROR as u64).into()),
        }
    }
}

impl Logic for ErnicFault {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, pending, count, failed, last_r);
        // The round being committed ended without a reply (the FSM records 0) while an error
        // of it was pending: the error failed it.
        self.lost.next = self.pending.q.val() & (self.rtt.val() == 0);
        self.fsm_timeout.next = self.timeout.val();
        if self.pending.q.val() {
            self.fsm_timeout.next = 0.into();
        }
        self.trace_rtt.next = self.rtt.val();
        if self.lost.val() {
            self.trace_rtt.next = self.k_mark.val();
        }
        if self.record.val() {
            self.pending.d.next = false;
            self.last_r.d.next = self.lost.val();
            if self.lost.val() {
                self.failed.d.next = self.failed.q.val() + 1;
            }
        }
        if self.err.val() {
            self.count.d.next = self.count.q.val() + 1;
            if self.in_round.val() {
                self.pending.d.next = true;
            }
        }
        if self.reset.val() {
            self.pending.d.next = false;
            self.count.d.next = 0.into();
            self.failed.d.next = 0.into();
            self.last_r.d.next = false;
        }
        self.timeouts.next = self.fsm_timeouts.val() - self.failed.q.val();
        self.errors.next = self.count.q.val();
        self.last.next = self.last_r.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::connect_inputs;

    type X = Box<ErnicFault>;

    fn tick(sim: &mut Sim<ErnicFault>, mut x: X) -> Result<X, SimError> {
        wait_clock_cycle!(sim, clock, x);
        Ok(x)
    }

    /// An error in a round: the FSM's timeout drops to 0 until the commit, the timed-out
    /// round is traced as TRACE_AXI_ERROR and not counted as a timeout; an error outside a
    /// round only counts; a round with an error but a reply keeps its RTT.
    #[test]
    fn an_error_fails_its_round_and_is_counted() {
        let mut uut = ErnicFault::default();
        connect_inputs!(
            uut,
            reset,
            err,
            in_round,
            timeout,
            record,
            rtt,
            fsm_timeouts
        );
        uut.connect_all();
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut X| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<ErnicFault>| {
            let mut x = sim.init()?;
            x.timeout.next = 1000.into();
            x.in_round.next = true;
            x = tick(&mut sim, x)?;
            sim_assert_eq!(sim, x.fsm_timeout.val(), 1000, x);
            x.err.next = true;
            x = tick(&mut sim, x)?;
            x.err.next = false;
            x = tick(&mut sim, x)?;
            sim_assert_eq!(sim, x.fsm_timeout.val(), 0, x);
            sim_assert_eq!(sim, x.errors.val(), 1, x);
            // The FSM ends the round as a timeout (its entry 0, counted), then commits it.
            x.rtt.next = 0.into();
            x.fsm_timeouts.next = 1.into();
            x = tick(&mut sim, x)?;
            sim_assert_eq!(sim, x.trace_rtt.val(), rm::TRACE_AXI_ERROR as u64, x);
            x.record.next = true;
            x = tick(&mut sim, x)?;
            x.record.next = false;
            x = tick(&mut sim, x)?;
            sim_assert_eq!(sim, x.timeouts.val(), 0, x);
            sim_assert!(sim, x.last.val(), x);
            sim_assert_eq!(sim, x.fsm_timeout.val(), 1000, x);
            // Outside a round: counted, nothing marked.
            x.in_round.next = false;
            x.err.next = true;
            x = tick(&mut sim, x)?;
            x.err.next = false;
            x = tick(&mut sim, x)?;
            sim_assert_eq!(sim, x.errors.val(), 2, x);
            sim_assert_eq!(sim, x.fsm_timeout.val(), 1000, x);
            // An error, but the reply came: the RTT is kept.
            x.in_round.next = true;
            x.err.next = true;
            x = tick(&mut sim, x)?;
            x.err.next = false;
            x.rtt.next = 230.into();
            x = tick(&mut sim, x)?;
            sim_assert_eq!(sim, x.trace_rtt.val(), 230, x);
            x.record.next = true;
            x = tick(&mut sim, x)?;
            x.record.next = false;
            x.reset.next = true;
            x = tick(&mut sim, x)?;
            x.reset.next = false;
            x = tick(&mut sim, x)?;
            sim_assert_eq!(sim, x.errors.val(), 0, x);
            sim_assert!(sim, !x.last.val(), x);
            sim.done(x)
        });
        sim.run_to_file(Box::new(uut), 1000, &crate::testutil::vcd("fault.vcd"))
            .unwrap();
    }
}
