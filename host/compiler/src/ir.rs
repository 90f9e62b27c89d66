//! The IR: a module of flat op lists (set-up, body, tear-down) over numbered qubits (`q`),
//! classical bits (`m`), reply words (`r`), code blocks (`b`) and sessions (`s`). Ops are
//! grouped in the dialects of the reference compiler:
//!
//! | dialect | ops |
//! |---|---|
//! | `quantum` | gates, measure, reset, conditioned Paulis, parity, noise, corrections, output |
//! | `lqec` (logical QEC) | logical blocks, logical gates, correction cycles, logical measure |
//! | `pqec` (physical QEC) | encoders, transversal gates, syndrome rounds, decode, corrections |
//! | `transport` | session open/close, get_session, stage_payload, post, collect |

use std::fmt::{self, Write};

use backline_stabvm::{Channel, Pauli};

/// A qubit index.
pub type Qubit = u32;
/// A classical bit index.
pub type Bit = u32;
/// A reply-word index.
pub type Word = u32;
/// A code-block index.
pub type BlockId = u32;
/// A session slot.
pub type SessionId = u32;

/// Most inputs of a [`Op::Lut`].
pub const LUT_INPUTS: usize = 6;

/// Clifford gates (physical or logical).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Identity (kept so programs can name it; lowers to nothing).
    I,
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
    /// CNOT (control, target).
    Cnot,
    /// CZ.
    Cz,
    /// SWAP.
    Swap,
}

impl Gate {
    /// Name in the IR text.
    pub fn name(self) -> &'static str {
        match self {
            Gate::I => "i",
            Gate::H => "h",
            Gate::S => "s",
            Gate::Sdg => "sdg",
            Gate::X => "x",
            Gate::Y => "y",
            Gate::Z => "z",
            Gate::Cnot => "cnot",
            Gate::Cz => "cz",
            Gate::Swap => "swap",
        }
    }

    /// Number of qubits it acts on.
    pub fn arity(self) -> usize {
        match self {
            Gate::Cnot | Gate::Cz | Gate::Swap => 2,
            _ => 1,
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Gate> {
        [
            Gate::I,
            Gate::H,
            Gate::S,
            Gate::Sdg,
            Gate::X,
            Gate::Y,
            Gate::Z,
            Gate::Cnot,
            Gate::Cz,
            Gate::Swap,
        ]
        .into_iter()
        .find(|g| g.name() == s)
    }
}

/// Error-correcting codes the compiler can lower to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The Steane [[7,1,3]] code.
    Steane,
}

impl Code {
    /// Name in the IR text and in `qec_code=`.
    pub fn name(self) -> &'static str {
        match self {
            Code::Steane => "steane",
        }
    }
}

/// One op.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    // ---- quantum ----
    /// `quantum.gate g q…`
    Gate {
        /// The gate.
        gate: Gate,
        /// Its qubits.
        qubits: Vec<Qubit>,
    },
    /// `m = quantum.measure q`
    Measure {
        /// Measured qubit.
        qubit: Qubit,
        /// Result bit.
        bit: Bit,
    },
    /// `quantum.reset q`
    Reset {
        /// The qubit.
        qubit: Qubit,
    },
    /// `quantum.cond p q if m… ` (XOR of bits; `!` negates)
    Cond {
        /// The Pauli.
        pauli: Pauli,
        /// Target.
        qubit: Qubit,
        /// Condition bits (XOR).
        bits: Vec<Bit>,
        /// Condition on parity 0.
        negate: bool,
    },
    /// `m = quantum.parity m…`
    Parity {
        /// Result bit.
        bit: Bit,
        /// Bits XORed.
        bits: Vec<Bit>,
    },
    /// `quantum.noise channel q`
    Noise {
        /// The channel.
        channel: Channel,
        /// The qubit.
        qubit: Qubit,
    },
    /// `quantum.correct p r [q…]`: apply `p` to `qubits[r]` if `r` indexes one.
    CorrectAt {
        /// The Pauli.
        pauli: Pauli,
        /// Word with the index.
        word: Word,
        /// Candidates.
        qubits: Vec<Qubit>,
    },
    /// `quantum.flip_if m r < n`
    FlipIfBelow {
        /// Bit flipped.
        bit: Bit,
        /// Word compared.
        word: Word,
        /// Bound.
        limit: u32,
    },
    /// `m = quantum.word_bit r, k`: bit `k` of a reply word (a decoder's correction bit).
    WordBit {
        /// Result bit.
        bit: Bit,
        /// The word.
        word: Word,
        /// Bit index, 0 = least significant.
        index: u32,
    },
    /// `m = quantum.lut 0xT [m…]`: a boolean function of up to six bits, as a truth table
    /// (bit `i` of the table is the result for inputs whose packed value, LSB first, is `i`).
    Lut {
        /// Result bit.
        bit: Bit,
        /// Inputs (at most [`LUT_INPUTS`]).
        bits: Vec<Bit>,
        /// Truth table.
        table: u64,
    },
    /// `quantum.output m…`: the bits a shot reports.
    Output {
        /// Bits, in order.
        bits: Vec<Bit>,
    },
    // ---- lqec ----
    /// `lqec.block b code (logical q)`: logical qubit `q` becomes block `b`.
    LBlock {
        /// The block.
        block: BlockId,
        /// Its code.
        code: Code,
    },
    /// `lqec.gate g b…`
    LGate {
        /// The logical gate.
        gate: Gate,
        /// Its blocks.
        blocks: Vec<BlockId>,
    },
    /// `lqec.cycle b`: one correction cycle.
    LCycle {
        /// The block.
        block: BlockId,
    },
    /// `m = lqec.measure b`
    LMeasure {
        /// The block.
        block: BlockId,
        /// Result bit.
        bit: Bit,
    },
    /// `lqec.reset b`
    LReset {
        /// The block.
        block: BlockId,
    },
    /// `lqec.cond p b if m…`
    LCond {
        /// Logical Pauli.
        pauli: Pauli,
        /// The block.
        block: BlockId,
        /// Condition bits (XOR).
        bits: Vec<Bit>,
        /// Condition on parity 0.
        negate: bool,
    },
    /// `lqec.noise channel b`: the channel on every physical qubit of the block.
    LNoise {
        /// The channel.
        channel: Channel,
        /// The block.
        block: BlockId,
    },
    // ---- pqec ----
    /// `pqec.encode b`: prepare |0_L⟩ on the block's data qubits.
    PEncode {
        /// The block.
        block: BlockId,
    },
    /// `pqec.transversal g b…`
    PTransversal {
        /// Physical gate applied on every qubit (pair).
        gate: Gate,
        /// Blocks.
        blocks: Vec<BlockId>,
    },
    /// `mx…, mz… = pqec.syndrome b`: one extraction round (3 X checks, 3 Z checks).
    PSyndrome {
        /// The block.
        block: BlockId,
        /// X-check outcomes.
        x_bits: Vec<Bit>,
        /// Z-check outcomes.
        z_bits: Vec<Bit>,
    },
    /// `pqec.correct p b r`
    PCorrect {
        /// The Pauli.
        pauli: Pauli,
        /// The block.
        block: BlockId,
        /// Decoder answer.
        word: Word,
    },
    /// `m… = pqec.measure_data b`: measure every data qubit in Z.
    PMeasureData {
        /// The block.
        block: BlockId,
        /// One bit per data qubit.
        bits: Vec<Bit>,
    },
    /// `m… = pqec.data_syndrome m…`: Z-check parities of measured data bits.
    PDataSyndrome {
        /// Data bits.
        data: Vec<Bit>,
        /// Syndrome bits.
        bits: Vec<Bit>,
    },
    /// `pqec.cond p b if m…`: transversal conditioned Pauli.
    PCond {
        /// The Pauli.
        pauli: Pauli,
        /// The block.
        block: BlockId,
        /// Condition bits (XOR).
        bits: Vec<Bit>,
        /// Condition on parity 0.
        negate: bool,
    },
    /// `pqec.noise channel b`
    PNoise {
        /// The channel.
        channel: Channel,
        /// The block.
        block: BlockId,
    },
    /// `r = qec.decode [m…] {decoder_id, coprocessor}`: one decode by the coprocessor.
    Decode {
        /// Syndrome bits (packed LSB-first into the payload).
        bits: Vec<Bit>,
        /// Decoder id of the request.
        decoder_id: u32,
        /// Which coprocessor of the placement.
        coprocessor: u32,
        /// The answer.
        word: Word,
    },
    // ---- transport ----
    /// `transport.session_open s {coprocessor}`
    SessionOpen {
        /// Session slot.
        session: SessionId,
        /// Coprocessor index.
        coprocessor: u32,
    },
    /// `transport.session_close s`
    SessionClose {
        /// Session slot.
        session: SessionId,
    },
    /// `transport.get_session s`
    GetSession {
        /// Session slot.
        session: SessionId,
    },
    /// `transport.stage_payload s [m…] {decoder_id}`
    Stage {
        /// Session slot.
        session: SessionId,
        /// Decoder id.
        decoder_id: u32,
        /// Payload bits.
        bits: Vec<Bit>,
    },
    /// `transport.post s`
    Post {
        /// Session slot.
        session: SessionId,
    },
    /// `r = transport.collect s`
    Collect {
        /// Session slot.
        session: SessionId,
        /// Destination word.
        word: Word,
    },
}

/// A code block: the physical qubits of one logical qubit.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Its code.
    pub code: Code,
    /// The logical qubit it replaces.
    pub logical: Qubit,
    /// Data qubits (after encoding).
    pub data: Vec<Qubit>,
    /// Syndrome ancilla (after encoding).
    pub ancilla: Option<Qubit>,
}

/// A whole program.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Module {
    /// Name, for dumps.
    pub name: String,
    /// `qec_code` of the placement (None: run the circuit as is).
    pub qec_code: Option<Code>,
    /// Qubits allocated.
    pub num_qubits: u32,
    /// Bits allocated.
    pub num_bits: u32,
    /// Words allocated.
    pub num_words: u32,
    /// Sessions allocated.
    pub num_sessions: u32,
    /// Names of the placement's coprocessors (index = coprocessor number).
    pub coprocessors: Vec<String>,
    /// Code blocks.
    pub blocks: Vec<Block>,
    /// Run once before the shots.
    pub setup: Vec<Op>,
    /// Run every shot.
    pub body: Vec<Op>,
    /// Run once after the shots.
    pub teardown: Vec<Op>,
}

/// Builds a program op by op (what the Python front end calls).
impl Module {
    /// An empty module over `qubits` qubits.
    pub fn new(name: &str, qubits: u32) -> Module {
        Module {
            name: name.to_string(),
            num_qubits: qubits,
            ..Module::default()
        }
    }

    /// A fresh bit.
    pub fn new_bit(&mut self) -> Bit {
        self.num_bits += 1;
        self.num_bits - 1
    }

    /// A fresh word.
    pub fn new_word(&mut self) -> Word {
        self.num_words += 1;
        self.num_words - 1
    }

    /// A fresh qubit.
    pub fn new_qubit(&mut self) -> Qubit {
        self.num_qubits += 1;
        self.num_qubits - 1
    }

    /// Appends a gate.
    pub fn gate(&mut self, gate: Gate, qubits: &[Qubit]) {
        self.body.push(Op::Gate {
            gate,
            qubits: qubits.to_vec(),
        });
    }

    /// Appends a measurement; returns its bit.
    pub fn measure(&mut self, qubit: Qubit) -> Bit {
        let bit = self.new_bit();
        self.body.push(Op::Measure { qubit, bit });
        bit
    }

    /// Appends a decode by coprocessor `coprocessor`; returns the answer's word.
    pub fn decode(&mut self, bits: &[Bit], decoder_id: u32, coprocessor: u32) -> Word {
        let word = self.new_word();
        self.body.push(Op::Decode {
            bits: bits.to_vec(),
            decoder_id,
            coprocessor,
            word,
        });
        word
    }
}

/// Dialect of an op, for checks between passes.
pub fn dialect(op: &Op) -> &'static str {
    match op {
        Op::Gate { .. }
        | Op::Measure { .. }
        | Op::Reset { .. }
        | Op::Cond { .. }
        | Op::Parity { .. }
        | Op::Noise { .. }
        | Op::CorrectAt { .. }
        | Op::FlipIfBelow { .. }
        | Op::WordBit { .. }
        | Op::Lut { .. }
        | Op::Output { .. } => "quantum",
        Op::LBlock { .. }
        | Op::LGate { .. }
        | Op::LCycle { .. }
        | Op::LMeasure { .. }
        | Op::LReset { .. }
        | Op::LCond { .. }
        | Op::LNoise { .. } => "lqec",
        Op::PEncode { .. }
        | Op::PTransversal { .. }
        | Op::PSyndrome { .. }
        | Op::PCorrect { .. }
        | Op::PMeasureData { .. }
        | Op::PDataSyndrome { .. }
        | Op::PCond { .. }
        | Op::PNoise { .. }
        | Op::Decode { .. } => "pqec",
        Op::SessionOpen { .. }
        | Op::SessionClose { .. }
        | Op::GetSession { .. }
        | Op::Stage { .. }
        | Op::Post { .. }
        | Op::Collect { .. } => "transport",
    }
}

fn list(prefix: char, v: &[u32]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{prefix}{x}")).collect();
    items.join(", ")
}

fn pauli(p: Pauli) -> &'static str {
    match p {
        Pauli::X => "x",
        Pauli::Y => "y",
        Pauli::Z => "z",
    }
}

fn channel(c: Channel) -> String {
    match c {
        Channel::BitFlip(p) => format!("bit_flip({p})"),
        Channel::PhaseFlip(p) => format!("phase_flip({p})"),
        Channel::Depolarize(p) => format!("depolarize({p})"),
    }
}

fn cond(bits: &[Bit], negate: bool) -> String {
    let items: Vec<String> = bits.iter().map(|b| format!("m{b}")).collect();
    let x = items.join(" ^ ");
    if negate { format!("!({x})") } else { x }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Gate { gate, qubits } => {
                write!(f, "quantum.gate {} {}", gate.name(), list('q', qubits))
            }
            Op::Measure { qubit, bit } => write!(f, "m{bit} = quantum.measure q{qubit}"),
            Op::Reset { qubit } => write!(f, "quantum.reset q{qubit}"),
            Op::Cond {
                pauli: p,
                qubit,
                bits,
                negate,
            } => write!(
                f,
                "quantum.cond {} q{qubit} if {}",
                pauli(*p),
                cond(bits, *negate)
            ),
            Op::Parity { bit, bits } => write!(f, "m{bit} = quantum.parity {}", list('m', bits)),
            Op::Noise { channel: c, qubit } => write!(f, "quantum.noise {} q{qubit}", channel(*c)),
            Op::CorrectAt {
                pauli: p,
                word,
                qubits,
            } => write!(
                f,
                "quantum.correct {} r{word} [{}]",
                pauli(*p),
                list('q', qubits)
            ),
            Op::FlipIfBelow { bit, word, limit } => {
                write!(f, "quantum.flip_if m{bit} r{word} < {limit}")
            }
            Op::WordBit { bit, word, index } => {
                write!(f, "m{bit} = quantum.word_bit r{word}, {index}")
            }
            Op::Lut { bit, bits, table } => {
                write!(f, "m{bit} = quantum.lut {table:#x} [{}]", list('m', bits))
            }
            Op::Output { bits } => write!(f, "quantum.output {}", list('m', bits)),
            Op::LBlock { block, code } => write!(f, "lqec.block b{block} {}", code.name()),
            Op::LGate { gate, blocks } => {
                write!(f, "lqec.gate {} {}", gate.name(), list('b', blocks))
            }
            Op::LCycle { block } => write!(f, "lqec.cycle b{block}"),
            Op::LMeasure { block, bit } => write!(f, "m{bit} = lqec.measure b{block}"),
            Op::LReset { block } => write!(f, "lqec.reset b{block}"),
            Op::LCond {
                pauli: p,
                block,
                bits,
                negate,
            } => write!(
                f,
                "lqec.cond {} b{block} if {}",
                pauli(*p),
                cond(bits, *negate)
            ),
            Op::LNoise { channel: c, block } => write!(f, "lqec.noise {} b{block}", channel(*c)),
            Op::PEncode { block } => write!(f, "pqec.encode b{block}"),
            Op::PTransversal { gate, blocks } => {
                write!(f, "pqec.transversal {} {}", gate.name(), list('b', blocks))
            }
            Op::PSyndrome {
                block,
                x_bits,
                z_bits,
            } => write!(
                f,
                "{}, {} = pqec.syndrome b{block}",
                list('m', x_bits),
                list('m', z_bits)
            ),
            Op::PCorrect {
                pauli: p,
                block,
                word,
            } => write!(f, "pqec.correct {} b{block} r{word}", pauli(*p)),
            Op::PMeasureData { block, bits } => {
                write!(f, "{} = pqec.measure_data b{block}", list('m', bits))
            }
            Op::PDataSyndrome { data, bits } => write!(
                f,
                "{} = pqec.data_syndrome {}",
                list('m', bits),
                list('m', data)
            ),
            Op::PCond {
                pauli: p,
                block,
                bits,
                negate,
            } => write!(
                f,
                "pqec.cond {} b{block} if {}",
                pauli(*p),
                cond(bits, *negate)
            ),
            Op::PNoise { channel: c, block } => write!(f, "pqec.noise {} b{block}", channel(*c)),
            Op::Decode {
                bits,
                decoder_id,
                coprocessor,
                word,
            } => write!(
                f,
                "r{word} = qec.decode [{}] {{decoder_id = {decoder_id}, coprocessor = {coprocessor}}}",
                list('m', bits)
            ),
            Op::SessionOpen {
                session,
                coprocessor,
            } => write!(
                f,
                "transport.session_open s{session} {{coprocessor = {coprocessor}}}"
            ),
            Op::SessionClose { session } => write!(f, "transport.session_close s{session}"),
            Op::GetSession { session } => write!(f, "transport.get_session s{session}"),
            Op::Stage {
                session,
                decoder_id,
                bits,
            } => write!(
                f,
                "transport.stage_payload s{session} [{}] {{decoder_id = {decoder_id}}}",
                list('m', bits)
            ),
            Op::Post { session } => write!(f, "transport.post s{session}"),
            Op::Collect { session, word } => write!(f, "r{word} = transport.collect s{session}"),
        }
    }
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "module @{} {{qec_code = {}, qubits = {}, bits = {}, words = {}, sessions = {}}}",
            self.name,
            self.qec_code.map_or("none", Code::name),
            self.num_qubits,
            self.num_bits,
            self.num_words,
            self.num_sessions
        )?;
        if !self.coprocessors.is_empty() {
            let names: Vec<String> = self
                .coprocessors
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{i}: \"{n}\""))
                .collect();
            writeln!(f, "placement {{coprocessors = [{}]}}", names.join(", "))?;
        }
        for (i, b) in self.blocks.iter().enumerate() {
            write!(f, "block b{i} {} logical q{}", b.code.name(), b.logical)?;
            if !b.data.is_empty() {
                write!(f, " data [{}]", list('q', &b.data))?;
            }
            if let Some(a) = b.ancilla {
                write!(f, " ancilla q{a}")?;
            }
            f.write_char('\n')?;
        }
        for (name, ops) in [
            ("setup", &self.setup),
            ("body", &self.body),
            ("teardown", &self.teardown),
        ] {
            writeln!(f, "{name} {{")?;
            for op in ops {
                writeln!(f, "  {op}")?;
            }
            writeln!(f, "}}")?;
        }
        Ok(())
    }
}
