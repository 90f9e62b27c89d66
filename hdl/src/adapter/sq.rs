//! [`WqeStore`]: the WQE the engine posted, as ERNIC fetches it from the SQ.
//!
//! The engine writes a round's 64-byte WQE into its SQ slot a word per cycle, word 0 first
//! (`sq_wr_*` of `top`, [`crate::wqe::WqePoster`]); the store keeps those 16 words as one
//! 512-bit line — byte `k` of the WQE on byte lane `k`, as ERNIC's 512-bit WQE fetch takes it
//! — tagged with the slot's address bits 17:6 (its region and its slot in the adapter's
//! aperture, the bits ERNIC's fetch address carries too). One line is enough: one round is in
//! flight, and the engine writes the next round's WQE only after ERNIC has completed this
//! one (the pre-post waits for the completion), so ERNIC never fetches a WQE older than the
//! last one written. A fetch of any other slot is answered SLVERR by the read port.

use rust_hdl::prelude::*;

/// Words of a WQE (PG332 Table 2-1: 64 bytes).
pub const WORDS: usize = backline_board::ernic::wqe::WORDS as usize;

/// The last WQE written, as one 512-bit line.
#[derive(LogicBlock)]
pub struct WqeStore {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// SQ write enable (the engine's `sq_wr_en`).
    pub wr_en: Signal<In, Bit>,
    /// SQ write byte address (`sq_wr_addr`).
    pub wr_addr: Signal<In, Bits<32>>,
    /// SQ write data (`sq_wr_data`).
    pub wr_data: Signal<In, Bits<32>>,
    /// The WQE: word `w` in bits `32w + 31 .. 32w`.
    pub line: Signal<Out, Bits<512>>,
    /// Its address bits 17:6 (region and slot).
    pub tag: Signal<Out, Bits<12>>,
    /// All 16 words of the line have been written since its word 0.
    pub valid: Signal<Out, Bit>,
    words: [DFF<Bits<32>>; WORDS],
    tag_r: DFF<Bits<12>>,
    written: DFF<Bits<16>>,
    word: Signal<Local, Bits<4>>,
    acc: Signal<Local, Bits<512>>,
    k_word: [Constant<Bits<4>>; WORDS],
    k_shift: [Constant<Bits<10>>; WORDS],
    k_one: Constant<Bits<16>>,
}

impl Default for WqeStore {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            wr_en: Default::default(),
            wr_addr: Default::default(),
            wr_data: Default::default(),
            line: Default::default(),
            tag: Default::default(),
            valid: Default::default(),
            words: Default::default(),
            tag_r: Default::default(),
            written: Default::default(),
            word: Default::default(),
            acc: Default::default(),
            k_word: std::array::from_fn(|i| Constant::new((i as u64).into())),
            k_shift: std::array::from_fn(|i| Constant::new((32 * i as u64).into())),
            k_one: Constant::new(1.into()),
        }
    }
}

impl Logic for WqeStore {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, tag_r, written);
        for i in 0..WORDS {
            self.words[i].clock.next = self.clock.val();
            self.words[i].d.next = self.words[i].q.val();
        }
        self.word.next = self.wr_addr.val().get_bits::<4>(2);
        if self.wr_en.val() {
            for i in 0..WORDS {
                if self.word.val() == self.k_word[i].val() {
                    self.words[i].d.next = self.wr_data.val();
                }
            }
            if self.word.val() == 0 {
                // Word 0 starts a WQE: a new line.
                self.tag_r.d.next = self.wr_addr.val().get_bits::<12>(6);
                self.written.d.next = self.k_one.val();
            } else {
                self.written.d.next = self.written.q.val() | (self.k_one.val() << self.word.val());
            }
        }
        // The words side by side (rust-hdl cannot widen an array element inside a loop).
        self.acc.next = bit_cast::<512, 32>(self.words[0].q.val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[1].q.val()) << self.k_shift[1].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[2].q.val()) << self.k_shift[2].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[3].q.val()) << self.k_shift[3].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[4].q.val()) << self.k_shift[4].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[5].q.val()) << self.k_shift[5].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[6].q.val()) << self.k_shift[6].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[7].q.val()) << self.k_shift[7].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[8].q.val()) << self.k_shift[8].val());
        self.acc.next =
            self.acc.val() | (bit_cast::<512, 32>(self.words[9].q.val()) << self.k_shift[9].val());
        self.acc.next = self.acc.val()
            | (bit_cast::<512, 32>(self.words[10].q.val()) << self.k_shift[10].val());
        self.acc.next = self.acc.val()
            | (bit_cast::<512, 32>(self.words[11].q.val()) << self.k_shift[11].val());
        self.acc.next = self.acc.val()
            | (bit_cast::<512, 32>(self.words[12].q.val()) << self.k_shift[12].val());
        self.acc.next = self.acc.val()
            | (bit_cast::<512, 32>(self.words[13].q.val()) << self.k_shift[13].val());
        self.acc.next = self.acc.val()
            | (bit_cast::<512, 32>(self.words[14].q.val()) << self.k_shift[14].val());
        self.acc.next = self.acc.val()
            | (bit_cast::<512, 32>(self.words[15].q.val()) << self.k_shift[15].val());
        self.line.next = self.acc.val();
        self.tag.next = self.tag_r.q.val();
        self.valid.next = self.written.q.val().all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::connect_inputs;

    type X = Box<WqeStore>;

    /// The 16 words of a WQE become one line with word `w` at bits `32w`, tagged with its
    /// slot; a new word 0 starts the next line.
    #[test]
    fn words_become_a_tagged_line() {
        let mut uut = WqeStore::default();
        connect_inputs!(uut, wr_en, wr_addr, wr_data);
        uut.connect_all();
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut X| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<WqeStore>| {
            let mut x = sim.init()?;
            let base = 0xA402_0000u64 + 3 * 64;
            for w in 0..16u64 {
                x.wr_en.next = true;
                x.wr_addr.next = (base + 4 * w).into();
                x.wr_data.next = (0x1000 + w).into();
                wait_clock_cycle!(sim, clock, x);
                if w < 15 {
                    sim_assert!(sim, !x.valid.val(), x);
                }
            }
            x.wr_en.next = false;
            wait_clock_cycle!(sim, clock, x);
            sim_assert!(sim, x.valid.val(), x);
            sim_assert_eq!(sim, x.tag.val(), ((base >> 6) & 0xFFF), x);
            let line = x.line.val();
            for w in 0..16usize {
                sim_assert_eq!(sim, line.get_bits::<32>(32 * w), 0x1000 + w as u64, x);
            }
            // The next WQE's word 0: a new line, not complete yet.
            x.wr_en.next = true;
            x.wr_addr.next = (base + 64).into();
            wait_clock_cycle!(sim, clock, x);
            x.wr_en.next = false;
            wait_clock_cycle!(sim, clock, x);
            sim_assert!(sim, !x.valid.val(), x);
            sim_assert_eq!(sim, x.tag.val(), (((base + 64) >> 6) & 0xFFF), x);
            sim.done(x)
        });
        sim.run_to_file(Box::new(uut), 1000, &crate::testutil::vcd("adapter_sq.vcd"))
            .unwrap();
    }
}
