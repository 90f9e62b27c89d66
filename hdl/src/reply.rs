//! [`ReplyMem`]: the 4 KiB reply memory that ERNIC's inbound RDMA writes land in, its sweep
//! after a soft reset, and the words the FSM takes of a reply.
//!
//! * Inbound writes (`wr_*`) go straight into the memory; reads (`rd_addr`) have one cycle of
//!   latency.
//! * A `sweep` pulse (the soft reset) zeroes the memory, a word per cycle (1,024 cycles,
//!   `sweeping` meanwhile), so that replies of the previous run cannot match the restarted
//!   sequence numbers; the sweep's writes win over inbound ones.
//! * A reply's payload is found by its header's `payload_len` (clamped to the slot's 48
//!   bytes: `len_clamped`, from the word read); with the length taken (`rlen`) and the first
//!   payload-region word latched (`word_a`), `word0` is payload bytes 0 ..= 3 — byte 0 is byte
//!   `pad` of the region, funnelled with the word read next — masked to the payload's length;
//!   `wrong_len` says the length differs from RPL_LEN.

use backline_regmap as rm;
use rust_hdl::prelude::*;

/// The reply memory of the FSM.
#[derive(LogicBlock)]
pub struct ReplyMem {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Inbound write enable.
    pub wr_en: Signal<In, Bit>,
    /// Inbound write word address.
    pub wr_addr: Signal<In, Bits<10>>,
    /// Inbound write data.
    pub wr_data: Signal<In, Bits<32>>,
    /// Pulse: zero the memory.
    pub sweep: Signal<In, Bit>,
    /// The sweep is running.
    pub sweeping: Signal<Out, Bit>,
    /// Word address read.
    pub rd_addr: Signal<In, Bits<10>>,
    /// The word at the address of the previous cycle.
    pub rd_data: Signal<Out, Bits<32>>,
    /// `rd_data` as a header's payload length, clamped to the largest reply payload.
    pub len_clamped: Signal<Out, Bits<6>>,
    /// The reply's payload length, as taken by the FSM.
    pub rlen: Signal<In, Bits<6>>,
    /// Payload-region words of that length.
    pub len_words: Signal<Out, Bits<10>>,
    /// The first payload-region word, as latched by the FSM.
    pub word_a: Signal<In, Bits<32>>,
    /// Payload bytes 0 ..= 3 (from `word_a` and `rd_data`), masked to the length.
    pub word0: Signal<Out, Bits<32>>,
    /// RPL_LEN.
    pub rpl_len: Signal<In, Bits<32>>,
    /// `rlen` differs from RPL_LEN.
    pub wrong_len: Signal<Out, Bit>,
    mem: RAM<Bits<32>, 10>,
    clr: DFF<Bit>,
    clr_idx: DFF<Bits<10>>,
    clamped: Signal<Local, Bits<6>>,
    pad: Signal<Local, Bits<2>>,
    funnel: Signal<Local, Bits<32>>,
    mask: Signal<Local, Bits<32>>,
    k_max: Constant<Bits<6>>,
}

impl Default for ReplyMem {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            wr_en: Default::default(),
            wr_addr: Default::default(),
            wr_data: Default::default(),
            sweep: Default::default(),
            sweeping: Default::default(),
            rd_addr: Default::default(),
            rd_data: Default::default(),
            len_clamped: Default::default(),
            rlen: Default::default(),
            len_words: Default::default(),
            word_a: Default::default(),
            word0: Default::default(),
            rpl_len: Default::default(),
            wrong_len: Default::default(),
            mem: RAM::new(Default::default()),
            clr: Default::default(),
            clr_idx: Default::default(),
            clamped: Default::default(),
            pad: Default::default(),
            funnel: Default::default(),
            mask: Default::default(),
            k_max: Constant::new((rm::MAX_REPLY_BYTES as u64).into()),
        }
    }
}

impl Logic for ReplyMem {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, clr, clr_idx);
        self.mem.read_clock.next = self.clock.val();
        self.mem.write_clock.next = self.clock.val();
        self.mem.write_enable.next = self.wr_en.val();
        self.mem.write_address.next = self.wr_addr.val();
        self.mem.write_data.next = self.wr_data.val();
        if self.clr.q.val() {
            self.mem.write_enable.next = true;
            self.mem.write_address.next = self.clr_idx.q.val();
            self.mem.write_data.next = 0.into();
            self.clr_idx.d.next = self.clr_idx.q.val() + 1;
            if self.clr_idx.q.val().all() {
                self.clr.d.next = false;
            }
        }
        if self.sweep.val() {
            self.clr.d.next = true;
            self.clr_idx.d.next = 0.into();
        }
        self.sweeping.next = self.clr.q.val();
        self.mem.read_address.next = self.rd_addr.val();
        self.rd_data.next = self.mem.read_data.val();

        // Each output is assigned once (the defaults and overrides are on locals), so that
        // it changes at most once per evaluation: the FSM reads these and drives this block's
        // inputs, and an output that flickered would wake it again and again in an
        // event-driven simulator.
        self.clamped.next = bit_cast::<6, 32>(self.mem.read_data.val());
        if self.mem.read_data.val() > bit_cast::<32, 6>(self.k_max.val()) {
            self.clamped.next = self.k_max.val();
        }
        self.len_clamped.next = self.clamped.val();
        self.len_words.next = bit_cast::<10, 6>((self.rlen.val() + 3) >> 2);
        self.pad.next = !self.rlen.val().get_bits::<2>(0) + 1;
        self.funnel.next = self.word_a.val();
        if self.pad.val() == 1 {
            self.funnel.next = (self.word_a.val() >> 8) | (self.mem.read_data.val() << 24);
        }
        if self.pad.val() == 2 {
            self.funnel.next = (self.word_a.val() >> 16) | (self.mem.read_data.val() << 16);
        }
        if self.pad.val() == 3 {
            self.funnel.next = (self.word_a.val() >> 24) | (self.mem.read_data.val() << 8);
        }
        self.mask.next = 0xFFFF_FFFF_u64.into();
        if self.rlen.val() == 3 {
            self.mask.next = 0x00FF_FFFF_u64.into();
        }
        if self.rlen.val() == 2 {
            self.mask.next = 0x0000_FFFF_u64.into();
        }
        if self.rlen.val() == 1 {
            self.mask.next = 0x0000_00FF_u64.into();
        }
        if self.rlen.val() == 0 {
            self.mask.next = 0.into();
        }
        self.word0.next = self.funnel.val() & self.mask.val();
        self.wrong_len.next = bit_cast::<32, 6>(self.rlen.val()) != self.rpl_len.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_verilog() {
        let mut uut = ReplyMem::default();
        uut.connect_all();
        let v = generate_verilog_unchecked(&uut);
        assert!(v.contains("module top("), "{v}");
    }
}
