//! [`ReqImage`]: the round's request message as one 256-bit image, for ERNIC's 512-bit read
//! of the RDMA WRITE's data.
//!
//! The engine's request buffer is read a word at a time with one cycle of latency
//! (`req_rd_*` of `top`, [`crate::reqbuf::RequestBuffer`]). Its content is fixed from the
//! round's DAT_RX until the next round's, so the image is captured right at the doorbell
//! (`start`): eight reads, one per cycle, done nine cycles later, while ERNIC is still
//! fetching the WQE. A data read that comes earlier waits for `valid` (the read port holds
//! its beat back).

use rust_hdl::prelude::*;

/// Words of the request image (payload region and header: at most 16 + 16 bytes).
pub const WORDS: usize = 8;

/// The request image captured at the doorbell.
#[derive(LogicBlock)]
pub struct ReqImage {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse: capture (the doorbell).
    pub start: Signal<In, Bit>,
    /// The word the engine's request buffer is asked for (`req_rd_addr`).
    pub rd_addr: Signal<Out, Bits<3>>,
    /// The word it answers, a cycle later (`req_rd_data`).
    pub rd_data: Signal<In, Bits<32>>,
    /// The image: word `w` in bits `32w + 31 .. 32w`.
    pub image: Signal<Out, Bits<256>>,
    /// The image is complete.
    pub valid: Signal<Out, Bit>,
    words: [DFF<Bits<32>>; WORDS],
    busy: DFF<Bit>,
    ptr: DFF<Bits<3>>,
    cap: DFF<Bit>,
    cap_idx: DFF<Bits<3>>,
    valid_r: DFF<Bit>,
    acc: Signal<Local, Bits<256>>,
    k_word: [Constant<Bits<3>>; WORDS],
    k_shift: [Constant<Bits<9>>; WORDS],
}

impl Default for ReqImage {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            start: Default::default(),
            rd_addr: Default::default(),
            rd_data: Default::default(),
            image: Default::default(),
            valid: Default::default(),
            words: Default::default(),
            busy: Default::default(),
            ptr: Default::default(),
            cap: Default::default(),
            cap_idx: Default::default(),
            valid_r: Default::default(),
            acc: Default::default(),
            k_word: std::array::from_fn(|i| Constant::new((i as u64).into())),
            k_shift: std::array::from_fn(|i| Constant::new((32 * i as u64).into())),
        }
    }
}

impl Logic for ReqImage {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, busy, ptr, cap, cap_idx, valid_r);
        for i in 0..WORDS {
            self.words[i].clock.next = self.clock.val();
            self.words[i].d.next = self.words[i].q.val();
        }
        // Ask for word `ptr` while busy; take the answer a cycle later.
        self.rd_addr.next = self.ptr.q.val();
        self.cap.d.next = self.busy.q.val();
        self.cap_idx.d.next = self.ptr.q.val();
        if self.busy.q.val() {
            self.ptr.d.next = self.ptr.q.val() + 1;
            if self.ptr.q.val() == 7 {
                self.busy.d.next = false;
            }
        }
        if self.cap.q.val() {
            for i in 0..WORDS {
                if self.cap_idx.q.val() == self.k_word[i].val() {
                    self.words[i].d.next = self.rd_data.val();
                }
            }
            if self.cap_idx.q.val() == 7 {
                self.valid_r.d.next = true;
            }
        }
        if self.start.val() {
            self.busy.d.next = true;
            self.ptr.d.next = 0.into();
            self.cap.d.next = false;
            self.valid_r.d.next = false;
        }
        // The words side by side (rust-hdl cannot widen an array element inside a loop).
        self.acc.next = bit_cast::<256, 32>(self.words[0].q.val());
        self.acc.next =
            self.acc.val() | (bit_cast::<256, 32>(self.words[1].q.val()) << self.k_shift[1].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<256, 32>(self.words[2].q.val()) << self.k_shift[2].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<256, 32>(self.words[3].q.val()) << self.k_shift[3].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<256, 32>(self.words[4].q.val()) << self.k_shift[4].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<256, 32>(self.words[5].q.val()) << self.k_shift[5].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<256, 32>(self.words[6].q.val()) << self.k_shift[6].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<256, 32>(self.words[7].q.val()) << self.k_shift[7].val());
        self.image.next = self.acc.val();
        self.valid.next = self.valid_r.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::connect_inputs;

    type X = Box<ReqImage>;

    /// A stand-in request buffer answers word `a` with `0x100 + a` a cycle later; nine
    /// cycles after the start the image holds all eight words in order.
    #[test]
    fn captures_the_eight_words_after_the_doorbell() {
        let mut uut = ReqImage::default();
        connect_inputs!(uut, start, rd_data);
        uut.connect_all();
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut X| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<ReqImage>| {
            let mut x = sim.init()?;
            x.start.next = true;
            let mut answer = 0u64;
            for n in 0..12 {
                wait_clock_cycle!(sim, clock, x);
                x.start.next = false;
                x.rd_data.next = answer.into();
                answer = 0x100 + x.rd_addr.val().to_u64();
                if n < 8 {
                    sim_assert!(sim, !x.valid.val(), x);
                }
            }
            sim_assert!(sim, x.valid.val(), x);
            let image = x.image.val();
            for w in 0..8usize {
                sim_assert_eq!(sim, image.get_bits::<32>(32 * w), 0x100 + w as u64, x);
            }
            sim.done(x)
        });
        sim.run_to_file(
            Box::new(uut),
            1000,
            &crate::testutil::vcd("adapter_req.vcd"),
        )
        .unwrap();
    }
}
