//! [`RequestBuffer`]: the request message image that ERNIC reads for the WQE's local
//! address: the payload-region words, the payload right-aligned in them, then the 16-byte
//! header (wire format v1).
//!
//! Word `i` of the image, read with one cycle of latency:
//!
//! * `i < ceil(PAY_LEN / 4)`: payload bytes, shifted right by `pad` bytes across two of the
//!   payload registers (word 0 of the payload is the round's latched `w0`, words 1 ..= 3
//!   PAYLOAD1..3);
//! * header words (index `i − pay_words`, from `backline_wire::words`): `payload_len` =
//!   PAY_LEN, `decoder_id` = DECODER_ID, the request's status word, `seq` = the round's
//!   sequence number.

use backline_wire::words as hdr;
use rust_hdl::prelude::*;

/// The request buffer of the FSM.
#[derive(LogicBlock)]
pub struct RequestBuffer {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Word of the message image ERNIC reads.
    pub rd_addr: Signal<In, Bits<3>>,
    /// That word, one cycle after the address.
    pub rd_data: Signal<Out, Bits<32>>,
    /// PAY_LEN.
    pub pay_len: Signal<In, Bits<32>>,
    /// Bytes of the message: PAY_LEN + the 16-byte header (the WQE's LENGTH).
    pub msg_len: Signal<Out, Bits<32>>,
    /// Bytes of padding in front of the payload (the WQE's LADDR points past them).
    pub pay_pad: Signal<Out, Bits<2>>,
    /// Payload word 0 of this round (PAYLOAD0 or the reference syndrome, latched in DAT_RX).
    pub w0: Signal<In, Bits<32>>,
    /// PAYLOAD1.
    pub payload1: Signal<In, Bits<32>>,
    /// PAYLOAD2.
    pub payload2: Signal<In, Bits<32>>,
    /// PAYLOAD3.
    pub payload3: Signal<In, Bits<32>>,
    /// DECODER_ID.
    pub decoder_id: Signal<In, Bits<32>>,
    /// The round's sequence number.
    pub seq: Signal<In, Bits<32>>,
    out: DFF<Bits<32>>,
    pay_words: Signal<Local, Bits<4>>,
    pad: Signal<Local, Bits<2>>,
    hdr_idx: Signal<Local, Bits<4>>,
    region: Signal<Local, Bits<32>>,
    region_prev: Signal<Local, Bits<32>>,
    word: Signal<Local, Bits<32>>,
    k_h_id: Constant<Bits<4>>,
    k_h_status: Constant<Bits<4>>,
    k_h_seq: Constant<Bits<4>>,
    k_req_status: Constant<Bits<32>>,
    k_hdr_bytes: Constant<Bits<32>>,
}

impl Default for RequestBuffer {
    fn default() -> Self {
        let k4 = |v: u32| -> Constant<Bits<4>> {
            assert!(v < 16, "{v} does not fit 4 bits");
            Constant::new((v as u64).into())
        };
        Self {
            clock: Default::default(),
            rd_addr: Default::default(),
            rd_data: Default::default(),
            pay_len: Default::default(),
            msg_len: Default::default(),
            pay_pad: Default::default(),
            w0: Default::default(),
            payload1: Default::default(),
            payload2: Default::default(),
            payload3: Default::default(),
            decoder_id: Default::default(),
            seq: Default::default(),
            out: Default::default(),
            pay_words: Default::default(),
            pad: Default::default(),
            hdr_idx: Default::default(),
            region: Default::default(),
            region_prev: Default::default(),
            word: Default::default(),
            k_h_id: k4(hdr::DECODER_ID),
            k_h_status: k4(hdr::STATUS),
            k_h_seq: k4(hdr::SEQ),
            k_req_status: Constant::new(
                (hdr::status_word(0, backline_wire::Kind::Request) as u64).into(),
            ),
            k_hdr_bytes: Constant::new((backline_wire::HEADER_BYTES as u64).into()),
        }
    }
}

impl Logic for RequestBuffer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, out);
        // A request of PAY_LEN bytes: ceil(PAY_LEN / 4) payload-region words, the payload
        // right-aligned in them (`pad` bytes in front), then the header.
        self.pay_words.next = bit_cast::<4, 32>((self.pay_len.val() + 3) >> 2);
        self.pad.next = !self.pay_len.val().get_bits::<2>(0) + 1;
        self.msg_len.next = self.pay_len.val() + self.k_hdr_bytes.val();
        self.pay_pad.next = self.pad.val();
        self.hdr_idx.next = bit_cast::<4, 3>(self.rd_addr.val()) - self.pay_words.val();
        self.region.next = self.payload3.val();
        self.region_prev.next = self.payload2.val();
        if self.rd_addr.val() == 0 {
            self.region.next = self.w0.val();
            self.region_prev.next = 0.into();
        }
        if self.rd_addr.val() == 1 {
            self.region.next = self.payload1.val();
            self.region_prev.next = self.w0.val();
        }
        if self.rd_addr.val() == 2 {
            self.region.next = self.payload2.val();
            self.region_prev.next = self.payload1.val();
        }
        self.word.next = self.pay_len.val();
        if bit_cast::<4, 3>(self.rd_addr.val()) < self.pay_words.val() {
            self.word.next = self.region.val();
            if self.pad.val() == 1 {
                self.word.next = (self.region.val() << 8) | (self.region_prev.val() >> 24);
            }
            if self.pad.val() == 2 {
                self.word.next = (self.region.val() << 16) | (self.region_prev.val() >> 16);
            }
            if self.pad.val() == 3 {
                self.word.next = (self.region.val() << 24) | (self.region_prev.val() >> 8);
            }
        } else {
            if self.hdr_idx.val() == self.k_h_id.val() {
                self.word.next = self.decoder_id.val();
            }
            if self.hdr_idx.val() == self.k_h_status.val() {
                self.word.next = self.k_req_status.val();
            }
            if self.hdr_idx.val() == self.k_h_seq.val() {
                self.word.next = self.seq.val();
            }
        }
        self.out.d.next = self.word.val();
        self.rd_data.next = self.out.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_verilog() {
        let mut uut = RequestBuffer::default();
        uut.connect_all();
        let v = generate_verilog_unchecked(&uut);
        assert!(v.contains("module top("), "{v}");
    }
}
