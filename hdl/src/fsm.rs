//! [`HwhsFsm`]: the orchestrator of SPEC §6, one round in flight.
//!
//! ```text
//! IDLE ─start / pacer fire─▶ DAT_RX ─▶ WQE_POST ─▶ RING_SQ ─▶ WAIT_RPL ─completion─▶ POLL_RPL
//!   ▲                                 (skipped when                         │ timeout     │ reply / timeout
//!   │                                  pre-posted)                          ▼             ▼
//!   └──────────────── NEXT ◀── DAT_TX (hw-loop) ◀─────────────────────── JOIN ◀──────────┘
//! ```
//!
//! * DAT_RX latches the request (payload word 0 from PAYLOAD0 or the reference memory, the
//!   sequence number `round + 1`) into the request buffer that ERNIC reads, and points the
//!   reply poller at the round's reply slot.
//! * WQE_POST writes the 64-byte WQE into SQ slot `round mod SQ_DEPTH` (16 words, one per
//!   cycle) unless the background poster already did.
//! * RING_SQ writes the SQ producer index (`round + 1`) to the doorbell; the RTT counter
//!   starts.
//! * WAIT_RPL waits for the ERNIC completion of this round's WQE; the completion starts the
//!   background pre-post of the next round's WQE. The reply poller runs from RING_SQ on, so a
//!   reply is timestamped when it lands, whichever comes first.
//! * POLL_RPL waits until the reply slot's `seq` equals this round's sequence number.
//! * Either wait ends in the reply timeout (`TIMEOUT` cycles from the doorbell); the round is
//!   then committed with the timeout status and the engine goes on: it never stalls.
//! * JOIN waits for the pre-post and reads the reply's payload word 0 and status word.
//! * DAT_TX (hw-loop) hands the correction to the stimulus side.
//! * NEXT commits the round: counters, the trace entry, the mismatch check.
//! * A soft reset sweeps the reply memory to zero (1,024 cycles, STATUS.busy); a start in
//!   that time is kept and acted on after it.
//! * A start while a round is in progress is kept (one deep) and starts the next round.
//!
//! RTT: the counter is 1 in the cycle after the doorbell, and the reply's `seq` written into
//! the reply memory in cycle `w` is compared in `w + 2` (registered memory read), so the
//! recorded RTT is the fabric's round trip plus [`backline_regmap::FSM_OVERHEAD_CYCLES`].
//!
//! Messages are byte-exact (wire format v1): a request of `PAY_LEN` bytes (1 ..= 16) lies in
//! the request buffer right-aligned in front of its 16-byte header, so the WQE's `LADDR`
//! points `(−PAY_LEN) mod 4` bytes into the buffer and its `LENGTH` is `PAY_LEN + 16`; the
//! reply's payload is found by its header's `payload_len` (any length up to the slot's 48
//! bytes) and its first four bytes are taken with a byte shift across two words.
//!
//! The FSM orchestrates; the datapath that faces ERNIC is in its sibling blocks of `top`:
//! the WQE writer ([`crate::wqe::WqePoster`]), the request buffer
//! ([`crate::reqbuf::RequestBuffer`]) and the reply memory ([`crate::reply::ReplyMem`]),
//! which the FSM drives through its ports. Nothing here is a literal of someone else's
//! layout: the header's word indices come from `backline_wire::words`, the state codes from
//! `backline_regmap::state`; each enters the logic as a [`Constant`].

use backline_regmap as rm;
use backline_wire::words as hdr;
use rust_hdl::prelude::*;

/// FSM states, in `STATUS.state` order.
#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum State {
    /// Waiting for a start or the pacer.
    Idle,
    /// Request into the request buffer.
    DatRx,
    /// WQE into the SQ (unless pre-posted).
    WqePost,
    /// Doorbell.
    RingSq,
    /// Waiting for the ERNIC completion.
    WaitRpl,
    /// Waiting for the reply's sequence number.
    PollRpl,
    /// Waiting for the pre-post; reading the reply.
    Join,
    /// Correction to the stimulus side (hw-loop).
    DatTx,
    /// Commit.
    Next,
}

/// The orchestrator with its RTT counter, driving the WQE poster, the request buffer and the
/// reply memory of `top`.
#[derive(LogicBlock)]
pub struct HwhsFsm {
    /// Clock.
    pub clock: Signal<In, Clock>,
    // ---- control pulses and configuration (from the register file) ----
    /// Pulse: CTRL.start.
    pub start: Signal<In, Bit>,
    /// Pulse: CTRL.abort.
    pub abort: Signal<In, Bit>,
    /// Pulse: CTRL.soft_reset.
    pub soft_reset: Signal<In, Bit>,
    /// FLAGS.hw_loop.
    pub hw_loop: Signal<In, Bit>,
    /// FLAGS.use_ref.
    pub use_ref: Signal<In, Bit>,
    /// FLAGS.check.
    pub check: Signal<In, Bit>,
    /// FLAGS.prepost.
    pub prepost: Signal<In, Bit>,
    /// Pacer settings are b2b (freq = span = 0): hw-loop rounds follow each other at once.
    pub b2b: Signal<In, Bit>,
    /// ROUNDS.
    pub rounds: Signal<In, Bits<32>>,
    /// RING_DEPTH.
    pub ring_depth: Signal<In, Bits<32>>,
    /// TIMEOUT.
    pub timeout: Signal<In, Bits<32>>,
    /// PAYLOAD0.
    pub payload0: Signal<In, Bits<32>>,
    /// REF_LEN.
    pub ref_len: Signal<In, Bits<32>>,
    // ---- pacer, reference memory, trace ----
    /// Pulse: start the next quiet period.
    pub pacer_arm: Signal<Out, Bit>,
    /// Pulse: the quiet period ended.
    pub pacer_fire: Signal<In, Bit>,
    /// Reference entry of this round.
    pub ref_addr: Signal<Out, Bits<8>>,
    /// Reference syndrome of this round.
    pub ref_syndrome: Signal<In, Bits<32>>,
    /// Pulse: check `ref_reply`.
    pub ref_compare: Signal<Out, Bit>,
    /// Reply word to check.
    pub ref_reply: Signal<Out, Bits<32>>,
    /// The reference memory's verdict on `ref_reply`.
    pub ref_mismatch: Signal<In, Bit>,
    /// Pulse: record `trace_rtt`.
    pub trace_record: Signal<Out, Bit>,
    /// RTT to record (0: timeout).
    pub trace_rtt: Signal<Out, Bits<32>>,
    // ---- ERNIC side ----
    /// Doorbell write (one cycle).
    pub db_valid: Signal<Out, Bit>,
    /// SQ producer index written by the doorbell: WQEs posted so far.
    pub db_sq_pi: Signal<Out, Bits<32>>,
    /// Completion indication.
    pub cq_valid: Signal<In, Bit>,
    /// Work-request id of the completion.
    pub cq_wrid: Signal<In, Bits<16>>,
    /// Correction to the stimulus side (hw-loop).
    pub tx_valid: Signal<Out, Bit>,
    /// Reply payload word 0.
    pub tx_data: Signal<Out, Bits<32>>,
    // ---- the engine's datapath blocks (siblings in `top`) ----
    /// Pulse: post the WQE of `post_round` ([`crate::wqe::WqePoster`]).
    pub post: Signal<Out, Bit>,
    /// The round whose WQE a `post` starts.
    pub post_round: Signal<Out, Bits<32>>,
    /// The poster is writing a WQE.
    pub posting: Signal<In, Bit>,
    /// The WQE of `posted_round` is in the SQ.
    pub posted_valid: Signal<In, Bit>,
    /// The round of the last WQE written whole.
    pub posted_round: Signal<In, Bits<32>>,
    /// Payload word 0 of this round, for the request buffer ([`crate::reqbuf::RequestBuffer`]).
    pub request_w0: Signal<Out, Bits<32>>,
    /// This round's sequence number, for the request buffer.
    pub request_seq: Signal<Out, Bits<32>>,
    /// Reply memory word read ([`crate::reply::ReplyMem`]).
    pub rpl_rd_addr: Signal<Out, Bits<10>>,
    /// The reply memory word at the address of the previous cycle.
    pub rpl_rd_data: Signal<In, Bits<32>>,
    /// That word as a payload length, clamped to the largest reply.
    pub rpl_len_clamped: Signal<In, Bits<6>>,
    /// The reply's payload length, as taken in JOIN.
    pub rpl_rlen: Signal<Out, Bits<6>>,
    /// Its payload-region words.
    pub rpl_len_words: Signal<In, Bits<10>>,
    /// The first payload-region word, as latched in JOIN.
    pub rpl_word_a: Signal<Out, Bits<32>>,
    /// Payload bytes 0 ..= 3, masked to the length.
    pub rpl_word0: Signal<In, Bits<32>>,
    /// The reply memory is being swept after a soft reset.
    pub rpl_sweeping: Signal<In, Bit>,
    // ---- status ----
    /// STATUS.state.
    pub state_code: Signal<Out, Bits<4>>,
    /// STATUS.busy.
    pub busy: Signal<Out, Bit>,
    /// STATUS.done.
    pub done: Signal<Out, Bit>,
    /// STATUS.reply_seen.
    pub reply_seen: Signal<Out, Bit>,
    /// STATUS.timeout.
    pub timed_out: Signal<Out, Bit>,
    /// STATUS.mismatch.
    pub mismatch: Signal<Out, Bit>,
    /// STATUS.running.
    pub running: Signal<Out, Bit>,
    /// ROUND_COUNT.
    pub round_count: Signal<Out, Bits<32>>,
    /// LAST_RTT.
    pub last_rtt: Signal<Out, Bits<32>>,
    /// TIMEOUT_COUNT.
    pub timeout_count: Signal<Out, Bits<32>>,
    /// LAST_REPLY.
    pub last_reply: Signal<Out, Bits<32>>,
    /// LAST_RPL_STATUS.
    pub last_status: Signal<Out, Bits<32>>,
    /// LAST_RPL_LEN.
    pub last_len: Signal<Out, Bits<32>>,
    state: DFF<State>,
    round: DFF<Bits<32>>,
    ref_idx: DFF<Bits<8>>,
    run: DFF<Bit>,
    abort_req: DFF<Bit>,
    done_l: DFF<Bit>,
    seen_l: DFF<Bit>,
    timed_out_l: DFF<Bit>,
    mismatch_l: DFF<Bit>,
    rtt: DFF<Bits<32>>,
    rtt_cap: DFF<Bits<32>>,
    seen: DFF<Bit>,
    to: DFF<Bit>,
    req_w0: DFF<Bits<32>>,
    req_seq: DFF<Bits<32>>,
    slot_base: DFF<Bits<10>>,
    join_step: DFF<Bits<3>>,
    rlen: DFF<Bits<6>>,
    rword_a: DFF<Bits<32>>,
    last_len_r: DFF<Bits<32>>,
    last_rtt_r: DFF<Bits<32>>,
    timeouts: DFF<Bits<32>>,
    last_reply_r: DFF<Bits<32>>,
    last_status_r: DFF<Bits<32>>,
    start_pending: DFF<Bit>,
    // What the FSM tells the datapath blocks is settled in these locals first and driven
    // once, at the end: an output that changed more than once in one evaluation would wake
    // the block it feeds, whose outputs wake the FSM again (an event loop in event-driven
    // simulators such as Icarus; Verilator would not notice).
    post_now: Signal<Local, Bit>,
    post_which: Signal<Local, Bits<32>>,
    reply_rd: Signal<Local, Bits<10>>,
    slot_next: Signal<Local, Bits<10>>,
    // Reply slot: word offsets of the header's payload_len, status and seq words.
    k_r_len: Constant<Bits<10>>,
    k_r_status: Constant<Bits<10>>,
    k_r_seq: Constant<Bits<10>>,
    // STATUS.state codes.
    k_s_idle: Constant<Bits<4>>,
    k_s_dat_rx: Constant<Bits<4>>,
    k_s_wqe_post: Constant<Bits<4>>,
    k_s_ring_sq: Constant<Bits<4>>,
    k_s_wait_rpl: Constant<Bits<4>>,
    k_s_poll_rpl: Constant<Bits<4>>,
    k_s_join: Constant<Bits<4>>,
    k_s_dat_tx: Constant<Bits<4>>,
    k_s_next: Constant<Bits<4>>,
    k_s_invalid: Constant<Bits<4>>,
}

fn k4(v: u32) -> Constant<Bits<4>> {
    assert!(v < 16, "{v} does not fit 4 bits");
    Constant::new((v as u64).into())
}

fn k10(v: u32) -> Constant<Bits<10>> {
    assert!(v < 1 << 10, "{v} does not fit 10 bits");
    Constant::new((v as u64).into())
}

/// Header words of a slot come after `SLOT_BYTES / 4 − hdr::COUNT` payload-region words.
const HDR_AT: u32 = rm::SLOT_BYTES / 4 - hdr::COUNT;

impl Default for HwhsFsm {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            start: Default::default(),
            abort: Default::default(),
            soft_reset: Default::default(),
            hw_loop: Default::default(),
            use_ref: Default::default(),
            check: Default::default(),
            prepost: Default::default(),
            b2b: Default::default(),
            rounds: Default::default(),
            ring_depth: Default::default(),
            timeout: Default::default(),
            payload0: Default::default(),
            ref_len: Default::default(),
            pacer_arm: Default::default(),
            pacer_fire: Default::default(),
            ref_addr: Default::default(),
            ref_syndrome: Default::default(),
            ref_compare: Default::default(),
            ref_reply: Default::default(),
            ref_mismatch: Default::default(),
            trace_record: Default::default(),
            trace_rtt: Default::default(),
            db_valid: Default::default(),
            db_sq_pi: Default::default(),
            cq_valid: Default::default(),
            cq_wrid: Default::default(),
            tx_valid: Default::default(),
            tx_data: Default::default(),
            post: Default::default(),
            post_round: Default::default(),
            posting: Default::default(),
            posted_valid: Default::default(),
            posted_round: Default::default(),
            request_w0: Default::default(),
            request_seq: Default::default(),
            rpl_rd_addr: Default::default(),
            rpl_rd_data: Default::default(),
            rpl_len_clamped: Default::default(),
            rpl_rlen: Default::default(),
            rpl_len_words: Default::default(),
            rpl_word_a: Default::default(),
            rpl_word0: Default::default(),
            rpl_sweeping: Default::default(),
            state_code: Default::default(),
            busy: Default::default(),
            done: Default::default(),
            reply_seen: Default::default(),
            timed_out: Default::default(),
            mismatch: Default::default(),
            running: Default::default(),
            round_count: Default::default(),
            last_rtt: Default::default(),
            timeout_count: Default::default(),
            last_reply: Default::default(),
            last_status: Default::default(),
            last_len: Default::default(),
            state: Default::default(),
            round: Default::default(),
            ref_idx: Default::default(),
            run: Default::default(),
            abort_req: Default::default(),
            done_l: Default::default(),
            seen_l: Default::default(),
            timed_out_l: Default::default(),
            mismatch_l: Default::default(),
            rtt: Default::default(),
            rtt_cap: Default::default(),
            seen: Default::default(),
            to: Default::default(),
            req_w0: Default::default(),
            req_seq: Default::default(),
            slot_base: Default::default(),
            join_step: Default::default(),
            rlen: Default::default(),
            rword_a: Default::default(),
            last_len_r: Default::default(),
            last_rtt_r: Default::default(),
            timeouts: Default::default(),
            last_reply_r: Default::default(),
            last_status_r: Default::default(),
            start_pending: Default::default(),
            post_now: Default::default(),
            post_which: Default::default(),
            reply_rd: Default::default(),
            slot_next: Default::default(),
            k_r_len: k10(HDR_AT + hdr::PAYLOAD_LEN),
            k_r_status: k10(HDR_AT + hdr::STATUS),
            k_r_seq: k10(HDR_AT + hdr::SEQ),
            k_s_idle: k4(rm::state::IDLE),
            k_s_dat_rx: k4(rm::state::DAT_RX),
            k_s_wqe_post: k4(rm::state::WQE_POST),
            k_s_ring_sq: k4(rm::state::RING_SQ),
            k_s_wait_rpl: k4(rm::state::WAIT_RPL),
            k_s_poll_rpl: k4(rm::state::POLL_RPL),
            k_s_join: k4(rm::state::JOIN),
            k_s_dat_tx: k4(rm::state::DAT_TX),
            k_s_next: k4(rm::state::NEXT),
            k_s_invalid: k4(rm::state::INVALID),
        }
    }
}

impl Logic for HwhsFsm {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            round,
            ref_idx,
            run,
            abort_req,
            done_l,
            seen_l,
            timed_out_l,
            mismatch_l,
            rtt,
            rtt_cap,
            seen,
            to,
            req_w0,
            req_seq,
            slot_base,
            join_step,
            rlen,
            rword_a,
            last_len_r,
            last_rtt_r,
            timeouts,
            last_reply_r,
            last_status_r,
            start_pending
        );
        // By default the reply memory is read at this round's seq word.
        self.reply_rd.next = self.slot_base.q.val() + self.k_r_seq.val();

        // Defaults of every output pulse.
        self.pacer_arm.next = false;
        self.ref_compare.next = false;
        self.trace_record.next = false;
        self.db_valid.next = false;
        self.tx_valid.next = false;

        // Round r's reply slot: 16 words per slot (SLOT_BYTES / 4).
        self.slot_next.next =
            bit_cast::<10, 32>((self.round.q.val() & (self.ring_depth.val() - 1)) << 4);

        // ---- what the datapath blocks are told ----
        self.request_w0.next = self.req_w0.q.val();
        self.request_seq.next = self.req_seq.q.val();
        self.rpl_rlen.next = self.rlen.q.val();
        self.rpl_word_a.next = self.rword_a.q.val();
        // The poster is started below, in WQE_POST and (pre-post) WAIT_RPL.
        self.post_now.next = false;
        self.post_which.next = self.round.q.val();

        // ---- reply detection: from the doorbell on, the poller compares every cycle ----
        if ((self.state.q.val() == State::WaitRpl) | (self.state.q.val() == State::PollRpl))
            & !self.seen.q.val()
            & !self.to.q.val()
            & (self.rpl_rd_data.val() == self.req_seq.q.val())
        {
            self.seen.d.next = true;
            self.rtt_cap.d.next = self.rtt.q.val();
        }
        if (self.state.q.val() == State::WaitRpl) | (self.state.q.val() == State::PollRpl) {
            self.rtt.d.next = self.rtt.q.val() + 1;
        }
        if self.abort.val() {
            self.abort_req.d.next = true;
        }
        // A start that cannot be taken now (a round in progress, or the sweep) is kept, one
        // deep, and taken in IDLE.
        if self.start.val() & ((self.state.q.val() != State::Idle) | self.rpl_sweeping.val()) {
            self.start_pending.d.next = true;
        }

        self.ref_addr.next = self.ref_idx.q.val();
        self.ref_reply.next = self.last_reply_r.q.val();
        self.trace_rtt.next = 0.into();
        if self.seen.q.val() & !self.to.q.val() {
            self.trace_rtt.next = self.rtt_cap.q.val();
        }
        self.tx_data.next = self.last_reply_r.q.val();
        self.db_sq_pi.next = self.round.q.val() + 1;

        match self.state.q.val() {
            State::Idle => {
                self.state_code.next = self.k_s_idle.val();
                if (self.start.val() | self.start_pending.q.val()) & !self.rpl_sweeping.val() {
                    self.start_pending.d.next = false;
                    self.done_l.d.next = false;
                    if self.hw_loop.val() {
                        self.run.d.next = true;
                        self.abort_req.d.next = false;
                        if !self.b2b.val() {
                            self.pacer_arm.next = true;
                        }
                    } else {
                        self.state.d.next = State::DatRx;
                    }
                }
                if self.run.q.val() {
                    if self.abort_req.q.val() {
                        self.run.d.next = false;
                        self.done_l.d.next = true;
                    } else if self.b2b.val() | self.pacer_fire.val() {
                        self.state.d.next = State::DatRx;
                    }
                }
            }
            State::DatRx => {
                self.state_code.next = self.k_s_dat_rx.val();
                self.req_w0.d.next = self.payload0.val();
                if self.use_ref.val() {
                    self.req_w0.d.next = self.ref_syndrome.val();
                }
                self.req_seq.d.next = self.round.q.val() + 1;
                self.slot_base.d.next = self.slot_next.val();
                self.seen.d.next = false;
                self.to.d.next = false;
                self.state.d.next = State::WqePost;
            }
            State::WqePost => {
                self.state_code.next = self.k_s_wqe_post.val();
                if self.posted_valid.val() & (self.posted_round.val() == self.round.q.val()) {
                    self.state.d.next = State::RingSq;
                } else {
                    self.post_now.next = true;
                }
            }
            State::RingSq => {
                self.state_code.next = self.k_s_ring_sq.val();
                self.db_valid.next = true;
                self.rtt.d.next = 1.into();
                self.state.d.next = State::WaitRpl;
            }
            State::WaitRpl => {
                self.state_code.next = self.k_s_wait_rpl.val();
                if self.cq_valid.val()
                    & (self.cq_wrid.val() == self.round.q.val().get_bits::<16>(0))
                {
                    if self.prepost.val() {
                        self.post_now.next = true;
                        self.post_which.next = self.round.q.val() + 1;
                    }
                    self.state.d.next = State::PollRpl;
                } else if self.rtt.q.val() >= self.timeout.val() {
                    self.to.d.next = true;
                    self.state.d.next = State::Join;
                }
            }
            State::PollRpl => {
                self.state_code.next = self.k_s_poll_rpl.val();
                if self.seen.q.val() {
                    self.state.d.next = State::Join;
                } else if self.rtt.q.val() >= self.timeout.val() {
                    self.to.d.next = true;
                    self.state.d.next = State::Join;
                }
            }
            State::Join => {
                self.state_code.next = self.k_s_join.val();
                // Step 0: read the header's payload_len; 1: take it, read the first payload
                // word; 2: take it, read the next; 3: take payload bytes 0..3, read the
                // status word; 4: take it; 5: wait for the pre-post.
                if self.join_step.q.val() == 0 {
                    self.reply_rd.next = self.slot_base.q.val() + self.k_r_len.val();
                    self.join_step.d.next = 1.into();
                }
                if self.join_step.q.val() == 1 {
                    self.rlen.d.next = self.rpl_len_clamped.val();
                    self.reply_rd.next = self.slot_base.q.val() + self.k_r_len.val()
                        - bit_cast::<10, 6>((self.rpl_len_clamped.val() + 3) >> 2);
                    self.join_step.d.next = 2.into();
                }
                if self.join_step.q.val() == 2 {
                    self.rword_a.d.next = self.rpl_rd_data.val();
                    self.reply_rd.next =
                        self.slot_base.q.val() + self.k_r_len.val() - self.rpl_len_words.val() + 1;
                    self.join_step.d.next = 3.into();
                }
                if self.join_step.q.val() == 3 {
                    if !self.to.q.val() {
                        self.last_reply_r.d.next = self.rpl_word0.val();
                    }
                    self.reply_rd.next = self.slot_base.q.val() + self.k_r_status.val();
                    self.join_step.d.next = 4.into();
                }
                if self.join_step.q.val() == 4 {
                    if !self.to.q.val() {
                        self.last_status_r.d.next = self.rpl_rd_data.val();
                        self.last_len_r.d.next = bit_cast::<32, 6>(self.rlen.q.val());
                    }
                    self.join_step.d.next = 5.into();
                }
                if (self.join_step.q.val() == 5) & !self.posting.val() {
                    self.join_step.d.next = 0.into();
                    if self.hw_loop.val() {
                        self.state.d.next = State::DatTx;
                    } else {
                        self.state.d.next = State::Next;
                    }
                }
            }
            State::DatTx => {
                self.state_code.next = self.k_s_dat_tx.val();
                self.tx_valid.next = !self.to.q.val();
                self.state.d.next = State::Next;
            }
            State::Next => {
                self.state_code.next = self.k_s_next.val();
                self.round.d.next = self.round.q.val() + 1;
                self.ref_idx.d.next = self.ref_idx.q.val() + 1;
                if bit_cast::<32, 8>(self.ref_idx.q.val()) + 1 >= self.ref_len.val() {
                    self.ref_idx.d.next = 0.into();
                }
                self.trace_record.next = true;
                self.seen_l.d.next = self.seen.q.val() & !self.to.q.val();
                self.timed_out_l.d.next = self.to.q.val();
                self.mismatch_l.d.next = false;
                if self.to.q.val() {
                    self.timeouts.d.next = self.timeouts.q.val() + 1;
                    self.last_rtt_r.d.next = self.rtt.q.val();
                } else {
                    self.last_rtt_r.d.next = self.rtt_cap.q.val();
                    if self.check.val() {
                        self.ref_compare.next = true;
                        self.mismatch_l.d.next = self.ref_mismatch.val();
                    }
                }
                self.state.d.next = State::Idle;
                if self.hw_loop.val() & self.run.q.val() {
                    if self.abort_req.q.val()
                        | (self.rounds.val() != 0) & (self.round.q.val() + 1 == self.rounds.val())
                    {
                        self.run.d.next = false;
                        self.done_l.d.next = true;
                    } else if !self.b2b.val() {
                        self.pacer_arm.next = true;
                    }
                } else {
                    self.done_l.d.next = true;
                }
            }
            _ => {
                self.state_code.next = self.k_s_invalid.val();
                self.state.d.next = State::Idle;
            }
        }

        if self.soft_reset.val() {
            self.state.d.next = State::Idle;
            self.round.d.next = 0.into();
            self.ref_idx.d.next = 0.into();
            self.run.d.next = false;
            self.abort_req.d.next = false;
            self.done_l.d.next = false;
            self.seen_l.d.next = false;
            self.timed_out_l.d.next = false;
            self.mismatch_l.d.next = false;
            self.seen.d.next = false;
            self.to.d.next = false;
            self.join_step.d.next = 0.into();
            self.last_rtt_r.d.next = 0.into();
            self.timeouts.d.next = 0.into();
            self.last_reply_r.d.next = 0.into();
            self.last_status_r.d.next = 0.into();
            self.last_len_r.d.next = 0.into();
            self.rlen.d.next = 0.into();
            self.start_pending.d.next = false;
        }

        self.post.next = self.post_now.val();
        self.post_round.next = self.post_which.val();
        self.rpl_rd_addr.next = self.reply_rd.val();
        self.busy.next = (self.state.q.val() != State::Idle) | self.rpl_sweeping.val();
        self.done.next = self.done_l.q.val();
        self.reply_seen.next = self.seen_l.q.val();
        self.timed_out.next = self.timed_out_l.q.val();
        self.mismatch.next = self.mismatch_l.q.val();
        self.running.next = self.run.q.val();
        self.round_count.next = self.round.q.val();
        self.last_rtt.next = self.last_rtt_r.q.val();
        self.timeout_count.next = self.timeouts.q.val();
        self.last_reply.next = self.last_reply_r.q.val();
        self.last_status.next = self.last_status_r.q.val();
        self.last_len.next = self.last_len_r.q.val();
    }
}

// The shift above by 4 is the 64-byte slot in words.
const _: () = assert!(rm::SLOT_BYTES == 1 << 6);

#[cfg(test)]
mod tests {
    use super::*;

    /// The FSM on its own generates Verilog with every state; its behaviour is simulated
    /// through the register file in `top.rs` (a round, pre-post, timeout) and under Verilator
    /// in `backline-sim`.
    #[test]
    fn generates_verilog_with_every_state() {
        let mut uut = HwhsFsm::default();
        uut.connect_all();
        let v = generate_verilog_unchecked(&uut);
        for s in [
            "Idle", "DatRx", "WqePost", "RingSq", "WaitRpl", "PollRpl", "Join", "DatTx", "Next",
        ] {
            assert!(v.contains(&format!("localparam State${s} = ")), "{s}");
        }
    }
}
