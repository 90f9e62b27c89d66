//! The stabilizer VM: stands in for the qubits of a QEC workload. It runs a compiled
//! [`Program`] shot by shot on a bit-packed stabilizer [`Tableau`] — Clifford gates,
//! mid-circuit measurement and reset, classically conditioned Paulis, seeded Pauli noise —
//! and every decode is a real round through the runtime to the placement's coprocessor,
//! through the [`Rounds`] trait ([`SessionRounds`] drives `backline-transport` sessions).
//!
//! Shots are reproducible: shot `k` draws its noise and its random measurement outcomes from
//! a generator seeded with `(seed, k)`, so the same program gives the same samples over every
//! transport as long as the coprocessor answers the same.
#![deny(missing_docs)]

pub mod codec;
mod limits;
mod program;
mod rounds;
pub mod runner;
mod tableau;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub use limits::{LimitError, ProgramLimits};
pub use program::{Channel, Gate1, Gate2, Instr, List, Program};
pub use rounds::{Endpoint, RoundError, Rounds, SessionRounds};
pub use tableau::{Pauli, Tableau};

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// The program refers to something it did not declare.
    #[error("invalid program: {0}")]
    Invalid(String),
    /// A count of the program or the run past its [`ProgramLimits`] (checked before
    /// anything is allocated).
    #[error("program too large to run: {0}")]
    Limits(#[from] LimitError),
    /// The observer of [`run_observed`] stopped the run.
    #[error("stopped after {0} shots")]
    Stopped(u64),
    /// A decode round failed.
    #[error("shot {shot}, instruction {index}: {source}")]
    Round {
        /// Shot number (`None` in set-up or tear-down code).
        shot: u64,
        /// Instruction index.
        index: usize,
        /// The cause.
        source: RoundError,
    },
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Shots {
    /// Output bits per shot: `bits[shot * width + i]`.
    pub bits: Vec<bool>,
    /// Bits per shot.
    pub width: usize,
    /// Number of shots.
    pub shots: u64,
}

impl Shots {
    /// The output bits of one shot.
    pub fn shot(&self, k: usize) -> &[bool] {
        &self.bits[k * self.width..(k + 1) * self.width]
    }
}

/// The seed of shot `k` of a run seeded with `seed` (SplitMix64 of the pair).
pub fn shot_seed(seed: u64, k: u64) -> u64 {
    let mut z = seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Machine<'p> {
    p: &'p Program,
    tab: Tableau,
    bits: Vec<bool>,
    words: Vec<u64>,
    payload: Vec<u8>,
    rng: Xoshiro256PlusPlus,
}

impl Machine<'_> {
    fn parity(&self, l: List) -> bool {
        self.p
            .get(l)
            .iter()
            .fold(false, |a, &b| a ^ self.bits[b as usize])
    }

    fn exec(&mut self, instr: &Instr, rounds: &mut dyn Rounds) -> Result<(), RoundError> {
        match *instr {
            Instr::G1(g, q) => {
                let q = q as usize;
                match g {
                    Gate1::H => self.tab.h(q),
                    Gate1::S => self.tab.s(q),
                    Gate1::Sdg => self.tab.sdg(q),
                    Gate1::X => self.tab.pauli(Pauli::X, q),
                    Gate1::Y => self.tab.pauli(Pauli::Y, q),
                    Gate1::Z => self.tab.pauli(Pauli::Z, q),
                }
            }
            Instr::G2(g, a, b) => {
                let (a, b) = (a as usize, b as usize);
                match g {
                    Gate2::Cx => self.tab.cx(a, b),
                    Gate2::Cz => self.tab.cz(a, b),
                    Gate2::Swap => self.tab.swap(a, b),
                }
            }
            Instr::Measure { q, bit } => {
                let rng = &mut self.rng;
                let (v, _) = self.tab.measure(q as usize, || rng.random::<bool>());
                self.bits[bit as usize] = v;
            }
            Instr::Reset(q) => {
                let rng = &mut self.rng;
                self.tab.reset(q as usize, || rng.random::<bool>());
            }
            Instr::Noise(c, q) => {
                let u: f64 = self.rng.random();
                let p = match c {
                    Channel::BitFlip(p) => (u < p).then_some(Pauli::X),
                    Channel::PhaseFlip(p) => (u < p).then_some(Pauli::Z),
                    Channel::Depolarize(p) => {
                        if u < p / 3.0 {
                            Some(Pauli::X)
                        } else if u < 2.0 * p / 3.0 {
                            Some(Pauli::Y)
                        } else if u < p {
                            Some(Pauli::Z)
                        } else {
                            None
                        }
                    }
                };
                if let Some(p) = p {
                    self.tab.pauli(p, q as usize);
                }
            }
            Instr::CondPauli {
                pauli,
                q,
                bits,
                negate,
            } => {
                if self.parity(bits) != negate {
                    self.tab.pauli(pauli, q as usize);
                }
            }
            Instr::Parity { bit, bits } => self.bits[bit as usize] = self.parity(bits),
            Instr::SessionOpen {
                session,
                coprocessor,
            } => rounds.open(session, coprocessor)?,
            Instr::Stage {
                session,
                decoder_id,
                bits,
            } => {
                let src = self.p.get(bits);
                self.payload.clear();
                self.payload.resize(src.len().div_ceil(8).max(1), 0);
                for (i, &b) in src.iter().enumerate() {
                    if self.bits[b as usize] {
                        self.payload[i / 8] |= 1 << (i % 8);
                    }
                }
                rounds.stage(session, decoder_id, &self.payload)?;
            }
            Instr::Post { session } => rounds.post(session)?,
            Instr::Collect { session, word } => {
                self.words[word as usize] = rounds.collect(session)?
            }
            Instr::SessionClose { session } => rounds.close(session)?,
            Instr::CorrectAt {
                pauli,
                word,
                qubits,
            } => {
                let k = self.words[word as usize];
                if let Some(&q) = self.p.get(qubits).get(k as usize) {
                    self.tab.pauli(pauli, q as usize);
                }
            }
            Instr::WordBit { bit, word, index } => {
                self.bits[bit as usize] = index < 64 && self.words[word as usize] >> index & 1 == 1;
            }
            Instr::Lut { bit, bits, table } => {
                let i = self
                    .p
                    .get(bits)
                    .iter()
                    .enumerate()
                    .fold(0u32, |a, (k, &b)| a | (self.bits[b as usize] as u32) << k);
                self.bits[bit as usize] = table >> i & 1 == 1;
            }
            Instr::FlipIfBelow { bit, word, limit } => {
                if self.words[word as usize] < limit as u64 {
                    self.bits[bit as usize] ^= true;
                }
            }
        }
        Ok(())
    }
}

/// Runs `shots` shots of `program` with noise and measurement randomness from `seed`,
/// sending every decode through `rounds`. Set-up code runs once before the first shot and
/// tear-down code once after the last (also after a failure).
pub fn run(
    program: &Program,
    shots: u64,
    seed: u64,
    rounds: &mut dyn Rounds,
) -> Result<Shots, VmError> {
    run_observed(program, shots, seed, rounds, &mut |_| true)
}

/// [`run`], calling `observer` with the number of shots done after every shot; when it
/// returns false the run stops (tear-down code still runs) with [`VmError::Stopped`]. Front
/// ends use it for progress and to let a user interrupt a long run.
pub fn run_observed(
    program: &Program,
    shots: u64,
    seed: u64,
    rounds: &mut dyn Rounds,
    observer: &mut dyn FnMut(u64) -> bool,
) -> Result<Shots, VmError> {
    let limits = ProgramLimits::from_env()?;
    limits.check_program(program)?;
    limits.check_shots(shots, program.outputs.len())?;
    program.validate().map_err(VmError::Invalid)?;
    let mut m = Machine {
        p: program,
        tab: Tableau::new(program.num_qubits as usize),
        bits: vec![false; program.num_bits as usize],
        words: vec![u64::MAX; program.num_words as usize],
        payload: Vec::with_capacity(64),
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
    };
    let fail = |shot, index, source| VmError::Round {
        shot,
        index,
        source,
    };
    for (i, instr) in program.setup.iter().enumerate() {
        m.exec(instr, rounds).map_err(|e| fail(0, i, e))?;
    }
    let width = program.outputs.len();
    // Grown as shots finish: a run stopped early holds only what it made.
    let mut out = Vec::with_capacity(width.saturating_mul(shots as usize).min(1 << 20));
    let mut result = Ok(());
    'shots: for k in 0..shots {
        m.tab.reset_all();
        m.bits.fill(false);
        m.words.fill(u64::MAX);
        m.rng = Xoshiro256PlusPlus::seed_from_u64(shot_seed(seed, k));
        for (i, instr) in program.body.iter().enumerate() {
            if let Err(e) = m.exec(instr, rounds) {
                result = Err(fail(k, i, e));
                break 'shots;
            }
        }
        out.extend(program.outputs.iter().map(|&b| m.bits[b as usize]));
        if !observer(k + 1) {
            result = Err(VmError::Stopped(k + 1));
            break;
        }
    }
    for (i, instr) in program.teardown.iter().enumerate() {
        let r = m.exec(instr, rounds).map_err(|e| fail(shots, i, e));
        if result.is_ok() {
            result = r;
        }
    }
    result?;
    Ok(Shots {
        bits: out,
        width,
        shots,
    })
}

/// A machine whose qubits live on between programs: each [`Stepper::step`] runs the body of
/// one program (its setup and tear-down are the caller's: sessions stay open across steps)
/// on the same tableau and random stream, with that program's own bits and words.
///
/// It serves front ends that receive a circuit gate by gate and must answer a measurement
/// before they see the next gate (a device of a just-in-time compiler): they compile each
/// gate to a small program over the same qubits and step through them. A sequence of steps
/// seeded with [`shot_seed`]`(seed, k)` whose bodies, concatenated, are the body of a
/// program draws the same randomness as shot `k` of [`run`] of that program, so both give
/// the same outcomes.
pub struct Stepper {
    tab: Tableau,
    rng: Xoshiro256PlusPlus,
    payload: Vec<u8>,
}

impl Stepper {
    /// `num_qubits` qubits in |0>, randomness from `seed` (one shot's seed).
    pub fn new(num_qubits: u32, seed: u64) -> Result<Stepper, VmError> {
        let limits = ProgramLimits::from_env()?;
        limits.check_program(&Program {
            num_qubits,
            ..Program::default()
        })?;
        Ok(Stepper {
            tab: Tableau::new(num_qubits as usize),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            payload: Vec::with_capacity(64),
        })
    }

    /// Qubits of the machine.
    pub fn qubits(&self) -> u32 {
        self.tab.qubits() as u32
    }

    /// Runs `program`'s body on the machine's qubits and returns its output bits. The
    /// program may use no more qubits than the machine has.
    pub fn step(
        &mut self,
        program: &Program,
        rounds: &mut dyn Rounds,
    ) -> Result<Vec<bool>, VmError> {
        if program.num_qubits > self.qubits() {
            return Err(VmError::Invalid(format!(
                "the program uses {} qubits; the machine has {}",
                program.num_qubits,
                self.qubits()
            )));
        }
        program.validate().map_err(VmError::Invalid)?;
        let placeholder = Xoshiro256PlusPlus::seed_from_u64(0);
        let mut m = Machine {
            p: program,
            tab: std::mem::replace(&mut self.tab, Tableau::new(0)),
            bits: vec![false; program.num_bits as usize],
            words: vec![u64::MAX; program.num_words as usize],
            payload: std::mem::take(&mut self.payload),
            rng: std::mem::replace(&mut self.rng, placeholder),
        };
        let mut result = Ok(());
        for (index, instr) in program.body.iter().enumerate() {
            if let Err(source) = m.exec(instr, rounds) {
                result = Err(VmError::Round {
                    shot: 0,
                    index,
                    source,
                });
                break;
            }
        }
        let out = program
            .outputs
            .iter()
            .map(|&b| m.bits[b as usize])
            .collect();
        self.tab = m.tab;
        self.rng = m.rng;
        self.payload = m.payload;
        result.map(|()| out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounds answered in process by the Steane lookup, no transport.
    struct Lookup(Vec<Option<(u32, Vec<u8>)>>, u64);
    impl Rounds for Lookup {
        fn open(&mut self, s: u32, _: u32) -> Result<(), RoundError> {
            if self.0.len() <= s as usize {
                self.0.resize(s as usize + 1, None);
            }
            Ok(())
        }
        fn stage(&mut self, s: u32, id: u32, p: &[u8]) -> Result<(), RoundError> {
            self.0[s as usize] = Some((id, p.to_vec()));
            Ok(())
        }
        fn post(&mut self, _: u32) -> Result<(), RoundError> {
            self.1 += 1;
            Ok(())
        }
        fn collect(&mut self, s: u32) -> Result<u64, RoundError> {
            let (_, p) = self.0[s as usize].take().ok_or(RoundError::NotStaged(s))?;
            let k = p[0] & 7;
            Ok(if k == 0 { 0x0F } else { (k - 1) as u64 })
        }
        fn close(&mut self, _: u32) -> Result<(), RoundError> {
            Ok(())
        }
    }

    #[test]
    fn ghz_samples_are_correlated_and_reproducible() {
        let mut p = Program {
            num_qubits: 3,
            num_bits: 3,
            ..Default::default()
        };
        p.body = vec![
            Instr::G1(Gate1::H, 0),
            Instr::G2(Gate2::Cx, 0, 1),
            Instr::G2(Gate2::Cx, 1, 2),
            Instr::Measure { q: 0, bit: 0 },
            Instr::Measure { q: 1, bit: 1 },
            Instr::Measure { q: 2, bit: 2 },
        ];
        p.outputs = vec![0, 1, 2];
        let mut r = Lookup(vec![], 0);
        let a = run(&p, 200, 7, &mut r).unwrap();
        let ones = (0..200).filter(|&k| a.shot(k)[0]).count();
        assert!((60..140).contains(&ones), "{ones}");
        for k in 0..200 {
            let s = a.shot(k);
            assert!(s[0] == s[1] && s[1] == s[2]);
        }
        assert_eq!(
            run(&p, 200, 7, &mut r).unwrap(),
            a,
            "same seed, same samples"
        );
        assert_ne!(run(&p, 200, 8, &mut r).unwrap(), a);
    }

    #[test]
    fn steps_whose_bodies_make_a_program_give_its_shots() {
        // Noise and random outcomes in both halves, so the random stream must carry over.
        let whole = |body: Vec<Instr>, outputs: Vec<u32>| Program {
            num_qubits: 3,
            num_bits: 3,
            body,
            outputs,
            ..Default::default()
        };
        let first = vec![
            Instr::G1(Gate1::H, 0),
            Instr::Noise(Channel::Depolarize(0.3), 1),
            Instr::Measure { q: 0, bit: 0 },
        ];
        let second = vec![
            Instr::G2(Gate2::Cx, 0, 2),
            Instr::G1(Gate1::H, 1),
            Instr::Measure { q: 1, bit: 1 },
            Instr::Measure { q: 2, bit: 2 },
        ];
        let p = whole([first.clone(), second.clone()].concat(), vec![0, 1, 2]);
        let (a, b) = (whole(first, vec![0]), whole(second, vec![1, 2]));
        let mut r = Lookup(vec![], 0);
        let shots = run(&p, 100, 11, &mut r).unwrap();
        let mut differ = 0;
        for k in 0..100 {
            let mut s = Stepper::new(3, shot_seed(11, k)).unwrap();
            let got = [s.step(&a, &mut r).unwrap(), s.step(&b, &mut r).unwrap()].concat();
            assert_eq!(got, shots.shot(k as usize), "shot {k}");
            differ += (got != shots.shot(0)) as usize;
        }
        assert!(differ > 0, "the shots should not all be alike");
        let big = Program {
            num_qubits: 4,
            ..Default::default()
        };
        let mut s = Stepper::new(3, 1).unwrap();
        assert!(matches!(s.step(&big, &mut r), Err(VmError::Invalid(_))));
    }

    #[test]
    fn a_decode_round_corrects_a_bit_flip() {
        // One Steane block, an X error on qubit 4, Z-check syndrome measured with an ancilla,
        // decoded through the rounds, corrected.
        let checks = [[0u32, 2, 4, 6], [1, 2, 5, 6], [3, 4, 5, 6]];
        let mut p = Program {
            num_qubits: 8,
            num_bits: 4,
            num_words: 1,
            num_sessions: 1,
            ..Default::default()
        };
        p.setup = vec![Instr::SessionOpen {
            session: 0,
            coprocessor: 0,
        }];
        p.body.push(Instr::G1(Gate1::X, 4));
        for (i, c) in checks.iter().enumerate() {
            p.body.push(Instr::Reset(7));
            for &q in c {
                p.body.push(Instr::G2(Gate2::Cx, q, 7));
            }
            p.body.push(Instr::Measure {
                q: 7,
                bit: i as u32,
            });
        }
        let syn = p.list(&[0, 1, 2]);
        let block = p.list(&[0, 1, 2, 3, 4, 5, 6]);
        p.body.extend([
            Instr::Stage {
                session: 0,
                decoder_id: 1,
                bits: syn,
            },
            Instr::Post { session: 0 },
            Instr::Collect {
                session: 0,
                word: 0,
            },
            Instr::CorrectAt {
                pauli: Pauli::X,
                word: 0,
                qubits: block,
            },
            Instr::Measure { q: 4, bit: 3 },
        ]);
        p.outputs = vec![3];
        let mut r = Lookup(vec![], 0);
        let s = run(&p, 5, 1, &mut r).unwrap();
        assert!(s.bits.iter().all(|b| !b), "the flip was undone");
        assert_eq!(r.1, 5, "one round per shot");
    }

    #[test]
    fn noise_rates_follow_p() {
        let mut p = Program {
            num_qubits: 1,
            num_bits: 1,
            ..Default::default()
        };
        p.body = vec![
            Instr::Noise(Channel::BitFlip(0.25), 0),
            Instr::Measure { q: 0, bit: 0 },
        ];
        p.outputs = vec![0];
        let s = run(&p, 20_000, 3, &mut Lookup(vec![], 0)).unwrap();
        let rate = s.bits.iter().filter(|&&b| b).count() as f64 / 20_000.0;
        assert!((rate - 0.25).abs() < 0.015, "{rate}");
    }

    #[test]
    fn word_bits_lookup_tables_and_the_observer() {
        // One decode whose answer is 0b110; bits 1 and 2 of it, their XOR through a table
        // (0b0110 = XOR of two inputs), and the table of a constant 1.
        let mut p = Program {
            num_qubits: 1,
            num_bits: 5,
            num_words: 1,
            num_sessions: 1,
            ..Default::default()
        };
        p.setup = vec![Instr::SessionOpen {
            session: 0,
            coprocessor: 0,
        }];
        let syn = p.list(&[4]);
        let xor = p.list(&[0, 1]);
        let none = p.list(&[]);
        p.body = vec![
            Instr::G1(Gate1::X, 0),
            Instr::Measure { q: 0, bit: 4 },
            Instr::Stage {
                session: 0,
                decoder_id: 0,
                bits: syn,
            },
            Instr::Post { session: 0 },
            Instr::Collect {
                session: 0,
                word: 0,
            },
            Instr::WordBit {
                bit: 0,
                word: 0,
                index: 1,
            },
            Instr::WordBit {
                bit: 1,
                word: 0,
                index: 3,
            },
            Instr::Lut {
                bit: 2,
                bits: xor,
                table: 0b0110,
            },
            Instr::Lut {
                bit: 3,
                bits: none,
                table: 1,
            },
        ];
        p.outputs = vec![0, 1, 2, 3];
        // Syndrome 1 → Steane answer 0 (flip qubit 0): word 0b000; bit 1 = 0.
        let mut r = Lookup(vec![], 0);
        let s = run(&p, 2, 1, &mut r).unwrap();
        assert_eq!(s.shot(0), [false, false, false, true]);
        // The observer stops the run after the shot it returns false for.
        let mut seen = vec![];
        let e = run_observed(&p, 10, 1, &mut r, &mut |n| {
            seen.push(n);
            n < 4
        })
        .unwrap_err();
        assert!(matches!(e, VmError::Stopped(4)), "{e}");
        assert_eq!(seen, [1, 2, 3, 4]);
        // Word 6 = 0b110: bit 1 set, bit 3 clear, XOR 1.
        let mut words = WordRounds(6);
        let s = run(&p, 1, 1, &mut words).unwrap();
        assert_eq!(s.shot(0), [true, false, true, true]);
    }

    /// Rounds that always answer `self.0`.
    struct WordRounds(u64);
    impl Rounds for WordRounds {
        fn open(&mut self, _: u32, _: u32) -> Result<(), RoundError> {
            Ok(())
        }
        fn stage(&mut self, _: u32, _: u32, _: &[u8]) -> Result<(), RoundError> {
            Ok(())
        }
        fn post(&mut self, _: u32) -> Result<(), RoundError> {
            Ok(())
        }
        fn collect(&mut self, _: u32) -> Result<u64, RoundError> {
            Ok(self.0)
        }
        fn close(&mut self, _: u32) -> Result<(), RoundError> {
            Ok(())
        }
    }

    #[test]
    fn bad_programs_are_refused() {
        let p = Program {
            num_qubits: 1,
            body: vec![Instr::G1(Gate1::H, 3)],
            ..Default::default()
        };
        let e = run(&p, 1, 0, &mut Lookup(vec![], 0)).unwrap_err();
        assert_eq!(e.to_string(), "invalid program: qubit 3 ≥ 1");
    }
}
