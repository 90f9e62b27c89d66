//! [`WqePoster`]: writes one round's 64-byte WQE into its SQ slot, a word per cycle, in the
//! background of the FSM.
//!
//! A `post` pulse starts the WQE of `round` (the FSM pulses it in WQE_POST when the round's
//! WQE is not yet posted, and in WAIT_RPL, with pre-posting on, for the next round); 16
//! cycles later `posted_valid` says that the WQE of `posted_round` is in the SQ. The words
//! come in the order of `backline_board::ernic::wqe` (PG332 Table 2-1), each word index a
//! [`Constant`] from that one definition:
//!
//! | word | value |
//! |---|---|
//! | WRID | `round` mod 2^16 (the completion names it) |
//! | LADDR | the request buffer, `pay_pad` bytes in (the message is right-aligned) |
//! | LENGTH | `msg_len` (payload + 16-byte header) |
//! | OPCODE | WQE_OPCODE |
//! | ROFFSET | the round's slot of the remote ring, the message right-aligned in it |
//! | RTAG | WQE_RKEY |
//! | IMMDT | `round + 1` (the sequence number) |

use backline_board::ernic::wqe;
use backline_regmap as rm;
use rust_hdl::prelude::*;

/// The WQE writer of the FSM.
#[derive(LogicBlock)]
pub struct WqePoster {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse: post the WQE of `round` (ignored while `busy`).
    pub post: Signal<In, Bit>,
    /// The round whose WQE a `post` starts.
    pub round: Signal<In, Bits<32>>,
    /// Pulse: soft reset (abandons a post, forgets the posted round).
    pub reset: Signal<In, Bit>,
    /// SQ_BASE.
    pub sq_base: Signal<In, Bits<32>>,
    /// SQ_DEPTH.
    pub sq_depth: Signal<In, Bits<32>>,
    /// RING_DEPTH.
    pub ring_depth: Signal<In, Bits<32>>,
    /// WQE_OPCODE.
    pub wqe_opcode: Signal<In, Bits<32>>,
    /// WQE_RKEY.
    pub wqe_rkey: Signal<In, Bits<32>>,
    /// WQE_RVA_LO.
    pub wqe_rva_lo: Signal<In, Bits<32>>,
    /// WQE_RVA_HI.
    pub wqe_rva_hi: Signal<In, Bits<32>>,
    /// WQE_LADDR_LO.
    pub wqe_laddr_lo: Signal<In, Bits<32>>,
    /// WQE_LADDR_HI.
    pub wqe_laddr_hi: Signal<In, Bits<32>>,
    /// Bytes of the message: PAY_LEN + the 16-byte header.
    pub msg_len: Signal<In, Bits<32>>,
    /// Bytes of padding in front of the payload in the request buffer.
    pub pay_pad: Signal<In, Bits<2>>,
    /// SQ memory write enable.
    pub sq_wr_en: Signal<Out, Bit>,
    /// SQ memory byte address.
    pub sq_wr_addr: Signal<Out, Bits<32>>,
    /// SQ memory write data.
    pub sq_wr_data: Signal<Out, Bits<32>>,
    /// A WQE is being written.
    pub busy: Signal<Out, Bit>,
    /// The WQE of `posted_round` is in the SQ.
    pub posted_valid: Signal<Out, Bit>,
    /// The round of the last WQE written whole.
    pub posted_round: Signal<Out, Bits<32>>,
    post_busy: DFF<Bit>,
    post_word: DFF<Bits<4>>,
    post_round: DFF<Bits<32>>,
    posted_valid_r: DFF<Bit>,
    posted_round_r: DFF<Bits<32>>,
    wqe_word: Signal<Local, Bits<32>>,
    k_w_wrid: Constant<Bits<4>>,
    k_w_laddr_lo: Constant<Bits<4>>,
    k_w_laddr_hi: Constant<Bits<4>>,
    k_w_length: Constant<Bits<4>>,
    k_w_opcode: Constant<Bits<4>>,
    k_w_roffset_lo: Constant<Bits<4>>,
    k_w_roffset_hi: Constant<Bits<4>>,
    k_w_rtag: Constant<Bits<4>>,
    k_w_immdt: Constant<Bits<4>>,
    k_w_last: Constant<Bits<4>>,
    k_slot_bytes: Constant<Bits<32>>,
}

fn k4(v: u32) -> Constant<Bits<4>> {
    assert!(v < 16, "{v} does not fit 4 bits");
    Constant::new((v as u64).into())
}

impl Default for WqePoster {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            post: Default::default(),
            round: Default::default(),
            reset: Default::default(),
            sq_base: Default::default(),
            sq_depth: Default::default(),
            ring_depth: Default::default(),
            wqe_opcode: Default::default(),
            wqe_rkey: Default::default(),
            wqe_rva_lo: Default::default(),
            wqe_rva_hi: Default::default(),
            wqe_laddr_lo: Default::default(),
            wqe_laddr_hi: Default::default(),
            msg_len: Default::default(),
            pay_pad: Default::default(),
            sq_wr_en: Default::default(),
            sq_wr_addr: Default::default(),
            sq_wr_data: Default::default(),
            busy: Default::default(),
            posted_valid: Default::default(),
            posted_round: Default::default(),
            post_busy: Default::default(),
            post_word: Default::default(),
            post_round: Default::default(),
            posted_valid_r: Default::default(),
            posted_round_r: Default::default(),
            wqe_word: Default::default(),
            k_w_wrid: k4(wqe::WRID / 4),
            k_w_laddr_lo: k4(wqe::LADDR_LO / 4),
            k_w_laddr_hi: k4(wqe::LADDR_HI / 4),
            k_w_length: k4(wqe::LENGTH / 4),
            k_w_opcode: k4(wqe::OPCODE / 4),
            k_w_roffset_lo: k4(wqe::ROFFSET_LO / 4),
            k_w_roffset_hi: k4(wqe::ROFFSET_HI / 4),
            k_w_rtag: k4(wqe::RTAG / 4),
            k_w_immdt: k4(wqe::IMMDT / 4),
            k_w_last: k4(wqe::WORDS - 1),
            k_slot_bytes: Constant::new((rm::SLOT_BYTES as u64).into()),
        }
    }
}

impl Logic for WqePoster {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            post_busy,
            post_word,
            post_round,
            posted_valid_r,
            posted_round_r
        );
        self.wqe_word.next = 0.into();
        if self.post_word.q.val() == self.k_w_wrid.val() {
            self.wqe_word.next = bit_cast::<32, 16>(self.post_round.q.val().get_bits::<16>(0));
        }
        if self.post_word.q.val() == self.k_w_laddr_lo.val() {
            self.wqe_word.next = self.wqe_laddr_lo.val() + bit_cast::<32, 2>(self.pay_pad.val());
        }
        if self.post_word.q.val() == self.k_w_laddr_hi.val() {
            self.wqe_word.next = self.wqe_laddr_hi.val();
        }
        if self.post_word.q.val() == self.k_w_length.val() {
            self.wqe_word.next = self.msg_len.val();
        }
        if self.post_word.q.val() == self.k_w_opcode.val() {
            self.wqe_word.next = self.wqe_opcode.val();
        }
        if self.post_word.q.val() == self.k_w_roffset_lo.val() {
            self.wqe_word.next = self.wqe_rva_lo.val()
                + ((self.post_round.q.val() & (self.ring_depth.val() - 1)) << 6)
                + self.k_slot_bytes.val()
                - self.msg_len.val();
        }
        if self.post_word.q.val() == self.k_w_roffset_hi.val() {
            self.wqe_word.next = self.wqe_rva_hi.val();
        }
        if self.post_word.q.val() == self.k_w_rtag.val() {
            self.wqe_word.next = self.wqe_rkey.val();
        }
        if self.post_word.q.val() == self.k_w_immdt.val() {
            self.wqe_word.next = self.post_round.q.val() + 1;
        }
        self.sq_wr_addr.next = self.sq_base.val()
            + ((self.post_round.q.val() & (self.sq_depth.val() - 1)) << 6)
            + (bit_cast::<32, 4>(self.post_word.q.val()) << 2);
        self.sq_wr_data.next = self.wqe_word.val();
        self.sq_wr_en.next = self.post_busy.q.val();
        if self.post_busy.q.val() {
            self.post_word.d.next = self.post_word.q.val() + 1;
            if self.post_word.q.val() == self.k_w_last.val() {
                self.post_busy.d.next = false;
                self.posted_valid_r.d.next = true;
                self.posted_round_r.d.next = self.post_round.q.val();
            }
        }
        if self.post.val() & !self.post_busy.q.val() {
            self.post_busy.d.next = true;
            self.post_word.d.next = 0.into();
            self.post_round.d.next = self.round.val();
            self.posted_valid_r.d.next = false;
        }
        if self.reset.val() {
            self.post_busy.d.next = false;
            self.posted_valid_r.d.next = false;
        }
        self.busy.next = self.post_busy.q.val();
        self.posted_valid.next = self.posted_valid_r.q.val();
        self.posted_round.next = self.posted_round_r.q.val();
    }
}

// The shifts above by 6 are the 64-byte slot and WQE in bytes.
const _: () = assert!(rm::SLOT_BYTES == 1 << 6 && wqe::BYTES == 1 << 6 && wqe::WORDS == 16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_verilog() {
        let mut uut = WqePoster::default();
        uut.connect_all();
        let v = generate_verilog_unchecked(&uut);
        assert!(v.contains("module top("), "{v}");
    }
}
