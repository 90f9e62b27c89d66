//! The compact program the compiler lowers to and the VM runs: a flat list of instructions
//! over numbered qubits, classical bits, words (reply values) and sessions, with operand lists
//! kept in one pool.

use crate::Pauli;

/// A slice of the program's operand pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct List {
    /// First index into [`Program::pool`].
    pub start: u32,
    /// Number of entries.
    pub len: u32,
}

/// A Pauli noise channel on one qubit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Channel {
    /// X with probability p.
    BitFlip(f64),
    /// Z with probability p.
    PhaseFlip(f64),
    /// X, Y or Z, each with probability p/3.
    Depolarize(f64),
}

impl Channel {
    /// The channel named `name` (`depolarize`, `bit_flip`, `phase_flip`: the names of
    /// `noise=`, the IR and the front end's ops) with probability `p`; `None` for another name.
    pub fn named(name: &str, p: f64) -> Option<Channel> {
        Some(match name {
            "depolarize" => Channel::Depolarize(p),
            "bit_flip" => Channel::BitFlip(p),
            "phase_flip" => Channel::PhaseFlip(p),
            _ => return None,
        })
    }
}

/// One-qubit Clifford gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate1 {
    /// Hadamard.
    H,
    /// Phase.
    S,
    /// Phase†.
    Sdg,
    /// Pauli X.
    X,
    /// Pauli Y.
    Y,
    /// Pauli Z.
    Z,
}

/// Two-qubit Clifford gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate2 {
    /// CNOT (control, target).
    Cx,
    /// CZ.
    Cz,
    /// SWAP.
    Swap,
}

/// One VM instruction.
#[derive(Debug, Clone, PartialEq)]
pub enum Instr {
    /// A one-qubit gate.
    G1(Gate1, u32),
    /// A two-qubit gate.
    G2(Gate2, u32, u32),
    /// Measure a qubit in Z into a bit.
    Measure {
        /// Qubit.
        q: u32,
        /// Destination bit.
        bit: u32,
    },
    /// Reset a qubit to |0⟩.
    Reset(u32),
    /// Sample a noise channel on a qubit.
    Noise(Channel, u32),
    /// Apply a Pauli when the XOR of `bits` (a pool list) is 1, or 0 when `negate`.
    CondPauli {
        /// The Pauli.
        pauli: Pauli,
        /// Target qubit.
        q: u32,
        /// Bits whose parity is the condition.
        bits: List,
        /// Condition on parity 0 instead.
        negate: bool,
    },
    /// `bit ← XOR of bits`.
    Parity {
        /// Destination.
        bit: u32,
        /// Sources.
        bits: List,
    },
    /// Open the session to coprocessor `coprocessor` (set-up code).
    SessionOpen {
        /// Session slot.
        session: u32,
        /// Index of the placement's coprocessor.
        coprocessor: u32,
    },
    /// Copy `bits` (packed LSB-first) into the next request of `session`.
    Stage {
        /// Session slot.
        session: u32,
        /// Decoder id of the request.
        decoder_id: u32,
        /// Payload bits.
        bits: List,
    },
    /// Publish the staged request.
    Post {
        /// Session slot.
        session: u32,
    },
    /// Wait for the reply: its first byte (little-endian word of up to 8 bytes) into `word`.
    Collect {
        /// Session slot.
        session: u32,
        /// Destination word.
        word: u32,
    },
    /// Close a session (tear-down code).
    SessionClose {
        /// Session slot.
        session: u32,
    },
    /// Apply `pauli` to `qubits[word]` when `word < qubits.len()` (a decoder's answer "flip
    /// qubit k"; anything else means no flip).
    CorrectAt {
        /// The Pauli.
        pauli: Pauli,
        /// Word holding the index.
        word: u32,
        /// Candidate qubits.
        qubits: List,
    },
    /// `bit ← bit index of word` (0 = least significant; indices ≥ 64 read 0).
    WordBit {
        /// Destination.
        bit: u32,
        /// Word read.
        word: u32,
        /// Bit index.
        index: u32,
    },
    /// `bit ← table[packed bits]`: a boolean function of up to six bits as a truth table.
    Lut {
        /// Destination.
        bit: u32,
        /// Inputs, least significant first (at most 6).
        bits: List,
        /// Truth table: bit `i` is the result for packed inputs `i`.
        table: u64,
    },
    /// `bit ^= (word < limit)`: a single flip inside a block flips its logical parity.
    FlipIfBelow {
        /// Bit to flip.
        bit: u32,
        /// Word holding the index.
        word: u32,
        /// Bound.
        limit: u32,
    },
}

/// A whole program.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Program {
    /// Qubits used.
    pub num_qubits: u32,
    /// Classical bits used.
    pub num_bits: u32,
    /// Words used.
    pub num_words: u32,
    /// Session slots used.
    pub num_sessions: u32,
    /// Run once before the first shot (session set-up).
    pub setup: Vec<Instr>,
    /// Run every shot.
    pub body: Vec<Instr>,
    /// Run once after the last shot (session tear-down).
    pub teardown: Vec<Instr>,
    /// Operand lists.
    pub pool: Vec<u32>,
    /// The bits reported per shot, in order.
    pub outputs: Vec<u32>,
}

impl Program {
    /// Adds a list to the pool.
    pub fn list(&mut self, items: &[u32]) -> List {
        let start = self.pool.len() as u32;
        self.pool.extend_from_slice(items);
        List {
            start,
            len: items.len() as u32,
        }
    }

    /// The entries of a list.
    pub fn get(&self, l: List) -> &[u32] {
        &self.pool[l.start as usize..(l.start + l.len) as usize]
    }

    /// Checks every index against the declared counts.
    pub fn validate(&self) -> Result<(), String> {
        let q = |i: u32| {
            (i < self.num_qubits)
                .then_some(())
                .ok_or_else(|| format!("qubit {i} ≥ {}", self.num_qubits))
        };
        let b = |i: u32| {
            (i < self.num_bits)
                .then_some(())
                .ok_or_else(|| format!("bit {i} ≥ {}", self.num_bits))
        };
        let w = |i: u32| {
            (i < self.num_words)
                .then_some(())
                .ok_or_else(|| format!("word {i} ≥ {}", self.num_words))
        };
        let s = |i: u32| {
            (i < self.num_sessions)
                .then_some(())
                .ok_or_else(|| format!("session {i} ≥ {}", self.num_sessions))
        };
        let list = |l: List| -> Result<&[u32], String> {
            self.pool
                .get(l.start as usize..(l.start + l.len) as usize)
                .ok_or_else(|| "operand list outside the pool".to_string())
        };
        for i in self.setup.iter().chain(&self.body).chain(&self.teardown) {
            match *i {
                Instr::G1(_, a) | Instr::Reset(a) | Instr::Noise(_, a) => q(a)?,
                Instr::G2(_, a, c) => {
                    q(a)?;
                    q(c)?;
                    if a == c {
                        return Err(format!("two-qubit gate on qubit {a} twice"));
                    }
                }
                Instr::Measure { q: a, bit } => {
                    q(a)?;
                    b(bit)?;
                }
                Instr::CondPauli { q: a, bits, .. } => {
                    q(a)?;
                    list(bits)?.iter().try_for_each(|&x| b(x))?;
                }
                Instr::Parity { bit, bits } => {
                    b(bit)?;
                    list(bits)?.iter().try_for_each(|&x| b(x))?;
                }
                Instr::SessionOpen { session, .. }
                | Instr::Post { session }
                | Instr::SessionClose { session } => s(session)?,
                Instr::Stage { session, bits, .. } => {
                    s(session)?;
                    list(bits)?.iter().try_for_each(|&x| b(x))?;
                }
                Instr::Collect { session, word } => {
                    s(session)?;
                    w(word)?;
                }
                Instr::CorrectAt { word, qubits, .. } => {
                    w(word)?;
                    list(qubits)?.iter().try_for_each(|&x| q(x))?;
                }
                Instr::FlipIfBelow { bit, word, .. } | Instr::WordBit { bit, word, .. } => {
                    b(bit)?;
                    w(word)?;
                }
                Instr::Lut { bit, bits, .. } => {
                    b(bit)?;
                    let l = list(bits)?;
                    if l.len() > 6 {
                        return Err(format!("lookup table with {} inputs (at most 6)", l.len()));
                    }
                    l.iter().try_for_each(|&x| b(x))?;
                }
            }
        }
        self.outputs.iter().try_for_each(|&x| b(x))
    }
}
