//! A [`Program`] as bytes, so that a program compiled in one process runs in another (a remote
//! controller's executor): versioned, little-endian, checked on the way in.
//!
//! ```text
//! "BKLP" · format u16 · num_qubits u32 · num_bits u32 · num_words u32 · num_sessions u32
//! · pool: count u32, then u32 each · outputs: count u32, then u32 each
//! · setup, body, teardown: count u32, then instructions
//! ```
//!
//! An instruction is its opcode byte and its fields in declaration order (`u32`; a channel's
//! probability `f64`; a truth table `u64`; a gate, Pauli or flag one byte). [`decode`] refuses
//! a wrong magic, another format, a truncated or over-long input, an unknown opcode or tag,
//! and any program [`Program::validate`] refuses — never panics, never allocates more than
//! the input can hold.

use crate::{Channel, Gate1, Gate2, Instr, List, Pauli, Program};

/// First bytes of an encoded program.
pub const MAGIC: [u8; 4] = *b"BKLP";

/// Version of the encoding; a program of another cannot be decoded.
pub const FORMAT: u16 = 1;

/// Why bytes are not a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not an encoded program.
    #[error("not an encoded backline program (magic {0:02x?})")]
    Magic([u8; 4]),
    /// Encoded by another version of the encoding.
    #[error("program encoding {found}, this build reads encoding {FORMAT}")]
    Format {
        /// The version found.
        found: u16,
    },
    /// The bytes end inside the program.
    #[error("the program ends early, at byte {0}")]
    Truncated(usize),
    /// A header count past its [`crate::ProgramLimits`] (checked before the rest is read).
    #[error("program too large to run: {0}")]
    Limits(#[from] crate::LimitError),
    /// Bytes left after the program.
    #[error("{0} bytes after the program")]
    Trailing(usize),
    /// An opcode or a tag of no instruction.
    #[error("unknown {what} {value} at byte {at}")]
    Unknown {
        /// opcode, gate, Pauli, channel.
        what: &'static str,
        /// The byte read.
        value: u8,
        /// Where.
        at: usize,
    },
    /// Decoded, but not a program the VM can run.
    #[error("invalid program: {0}")]
    Invalid(String),
}

/// The bytes of `p`.
pub fn encode(p: &Program) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 4 * p.pool.len() + 16 * p.body.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    for n in [p.num_qubits, p.num_bits, p.num_words, p.num_sessions] {
        put32(&mut out, n);
    }
    for list in [&p.pool, &p.outputs] {
        put32(&mut out, list.len() as u32);
        list.iter().for_each(|&x| put32(&mut out, x));
    }
    for code in [&p.setup, &p.body, &p.teardown] {
        put32(&mut out, code.len() as u32);
        code.iter().for_each(|i| put_instr(&mut out, i));
    }
    out
}

/// The program of `bytes`, checked.
pub fn decode(bytes: &[u8]) -> Result<Program, DecodeError> {
    let mut r = Reader { b: bytes, at: 0 };
    let magic: [u8; 4] = r.take(4)?.try_into().expect("four bytes");
    if magic != MAGIC {
        return Err(DecodeError::Magic(magic));
    }
    let format = u16::from_le_bytes(r.take(2)?.try_into().expect("two bytes"));
    if format != FORMAT {
        return Err(DecodeError::Format { found: format });
    }
    let mut p = Program {
        num_qubits: r.u32()?,
        num_bits: r.u32()?,
        num_words: r.u32()?,
        num_sessions: r.u32()?,
        ..Program::default()
    };
    crate::ProgramLimits::from_env()?.check_program(&p)?;
    p.pool = r.u32s()?;
    p.outputs = r.u32s()?;
    p.setup = r.code()?;
    p.body = r.code()?;
    p.teardown = r.code()?;
    if r.at != bytes.len() {
        return Err(DecodeError::Trailing(bytes.len() - r.at));
    }
    p.validate().map_err(DecodeError::Invalid)?;
    Ok(p)
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_list(out: &mut Vec<u8>, l: List) {
    put32(out, l.start);
    put32(out, l.len);
}

fn pauli_code(p: Pauli) -> u8 {
    match p {
        Pauli::X => 0,
        Pauli::Y => 1,
        Pauli::Z => 2,
    }
}

fn put_instr(out: &mut Vec<u8>, i: &Instr) {
    match *i {
        Instr::G1(g, q) => {
            out.extend_from_slice(&[0, g as u8]);
            put32(out, q);
        }
        Instr::G2(g, a, b) => {
            out.extend_from_slice(&[1, g as u8]);
            put32(out, a);
            put32(out, b);
        }
        Instr::Measure { q, bit } => {
            out.push(2);
            put32(out, q);
            put32(out, bit);
        }
        Instr::Reset(q) => {
            out.push(3);
            put32(out, q);
        }
        Instr::Noise(c, q) => {
            let (tag, p) = match c {
                Channel::BitFlip(p) => (0, p),
                Channel::PhaseFlip(p) => (1, p),
                Channel::Depolarize(p) => (2, p),
            };
            out.extend_from_slice(&[4, tag]);
            out.extend_from_slice(&p.to_le_bytes());
            put32(out, q);
        }
        Instr::CondPauli {
            pauli,
            q,
            bits,
            negate,
        } => {
            out.extend_from_slice(&[5, pauli_code(pauli), u8::from(negate)]);
            put32(out, q);
            put_list(out, bits);
        }
        Instr::Parity { bit, bits } => {
            out.push(6);
            put32(out, bit);
            put_list(out, bits);
        }
        Instr::SessionOpen {
            session,
            coprocessor,
        } => {
            out.push(7);
            put32(out, session);
            put32(out, coprocessor);
        }
        Instr::Stage {
            session,
            decoder_id,
            bits,
        } => {
            out.push(8);
            put32(out, session);
            put32(out, decoder_id);
            put_list(out, bits);
        }
        Instr::Post { session } => {
            out.push(9);
            put32(out, session);
        }
        Instr::Collect { session, word } => {
            out.push(10);
            put32(out, session);
            put32(out, word);
        }
        Instr::SessionClose { session } => {
            out.push(11);
            put32(out, session);
        }
        Instr::CorrectAt {
            pauli,
            word,
            qubits,
        } => {
            out.extend_from_slice(&[12, pauli_code(pauli)]);
            put32(out, word);
            put_list(out, qubits);
        }
        Instr::WordBit { bit, word, index } => {
            out.push(13);
            put32(out, bit);
            put32(out, word);
            put32(out, index);
        }
        Instr::Lut { bit, bits, table } => {
            out.push(14);
            put32(out, bit);
            put_list(out, bits);
            out.extend_from_slice(&table.to_le_bytes());
        }
        Instr::FlipIfBelow { bit, word, limit } => {
            out.push(15);
            put32(out, bit);
            put32(out, word);
            put32(out, limit);
        }
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let s = self
            .b
            .get(self.at..self.at.saturating_add(n))
            .ok_or(DecodeError::Truncated(self.at))?;
        self.at += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("four bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("eight bytes"),
        ))
    }

    /// A count of items of at least `each` bytes, checked against what is left (so that a
    /// forged count cannot make the reader allocate more than the input).
    fn count(&mut self, each: usize) -> Result<usize, DecodeError> {
        let at = self.at;
        let n = self.u32()? as usize;
        if n.saturating_mul(each) > self.b.len() - self.at {
            return Err(DecodeError::Truncated(at));
        }
        Ok(n)
    }

    fn u32s(&mut self) -> Result<Vec<u32>, DecodeError> {
        let n = self.count(4)?;
        (0..n).map(|_| self.u32()).collect()
    }

    fn list(&mut self) -> Result<List, DecodeError> {
        Ok(List {
            start: self.u32()?,
            len: self.u32()?,
        })
    }

    fn unknown(&self, what: &'static str, value: u8) -> DecodeError {
        DecodeError::Unknown {
            what,
            value,
            at: self.at - 1,
        }
    }

    fn pauli(&mut self) -> Result<Pauli, DecodeError> {
        match self.u8()? {
            0 => Ok(Pauli::X),
            1 => Ok(Pauli::Y),
            2 => Ok(Pauli::Z),
            v => Err(self.unknown("Pauli", v)),
        }
    }

    fn code(&mut self) -> Result<Vec<Instr>, DecodeError> {
        let n = self.count(2)?;
        (0..n).map(|_| self.instr()).collect()
    }

    fn instr(&mut self) -> Result<Instr, DecodeError> {
        Ok(match self.u8()? {
            0 => {
                let g = match self.u8()? {
                    0 => Gate1::H,
                    1 => Gate1::S,
                    2 => Gate1::Sdg,
                    3 => Gate1::X,
                    4 => Gate1::Y,
                    5 => Gate1::Z,
                    v => return Err(self.unknown("one-qubit gate", v)),
                };
                Instr::G1(g, self.u32()?)
            }
            1 => {
                let g = match self.u8()? {
                    0 => Gate2::Cx,
                    1 => Gate2::Cz,
                    2 => Gate2::Swap,
                    v => return Err(self.unknown("two-qubit gate", v)),
                };
                Instr::G2(g, self.u32()?, self.u32()?)
            }
            2 => Instr::Measure {
                q: self.u32()?,
                bit: self.u32()?,
            },
            3 => Instr::Reset(self.u32()?),
            4 => {
                let tag = self.u8()?;
                let p = f64::from_le_bytes(self.take(8)?.try_into().expect("eight bytes"));
                if !(0.0..=1.0).contains(&p) {
                    return Err(DecodeError::Invalid(format!("noise probability {p}")));
                }
                let c = match tag {
                    0 => Channel::BitFlip(p),
                    1 => Channel::PhaseFlip(p),
                    2 => Channel::Depolarize(p),
                    v => return Err(self.unknown("noise channel", v)),
                };
                Instr::Noise(c, self.u32()?)
            }
            5 => {
                let pauli = self.pauli()?;
                let negate = match self.u8()? {
                    0 => false,
                    1 => true,
                    v => return Err(self.unknown("flag", v)),
                };
                Instr::CondPauli {
                    pauli,
                    q: self.u32()?,
                    bits: self.list()?,
                    negate,
                }
            }
            6 => Instr::Parity {
                bit: self.u32()?,
                bits: self.list()?,
            },
            7 => Instr::SessionOpen {
                session: self.u32()?,
                coprocessor: self.u32()?,
            },
            8 => Instr::Stage {
                session: self.u32()?,
                decoder_id: self.u32()?,
                bits: self.list()?,
            },
            9 => Instr::Post {
                session: self.u32()?,
            },
            10 => Instr::Collect {
                session: self.u32()?,
                word: self.u32()?,
            },
            11 => Instr::SessionClose {
                session: self.u32()?,
            },
            12 => Instr::CorrectAt {
                pauli: self.pauli()?,
                word: self.u32()?,
                qubits: self.list()?,
            },
            13 => Instr::WordBit {
                bit: self.u32()?,
                word: self.u32()?,
                index: self.u32()?,
            },
            14 => Instr::Lut {
                bit: self.u32()?,
                bits: self.list()?,
                table: self.u64()?,
            },
            15 => Instr::FlipIfBelow {
                bit: self.u32()?,
                word: self.u32()?,
                limit: self.u32()?,
            },
            v => return Err(self.unknown("opcode", v)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program with every instruction.
    fn every_instruction() -> Program {
        let mut p = Program {
            num_qubits: 3,
            num_bits: 4,
            num_words: 2,
            num_sessions: 1,
            ..Program::default()
        };
        let bits = p.list(&[0, 1]);
        let qubits = p.list(&[0, 1, 2]);
        p.setup = vec![Instr::SessionOpen {
            session: 0,
            coprocessor: 1,
        }];
        p.body = vec![
            Instr::G1(Gate1::Sdg, 2),
            Instr::G2(Gate2::Swap, 0, 2),
            Instr::Measure { q: 1, bit: 3 },
            Instr::Reset(1),
            Instr::Noise(Channel::Depolarize(0.125), 0),
            Instr::Noise(Channel::BitFlip(1e-3), 1),
            Instr::CondPauli {
                pauli: Pauli::Y,
                q: 2,
                bits,
                negate: true,
            },
            Instr::Parity { bit: 2, bits },
            Instr::Stage {
                session: 0,
                decoder_id: 7,
                bits,
            },
            Instr::Post { session: 0 },
            Instr::Collect {
                session: 0,
                word: 1,
            },
            Instr::CorrectAt {
                pauli: Pauli::Z,
                word: 1,
                qubits,
            },
            Instr::WordBit {
                bit: 0,
                word: 1,
                index: 63,
            },
            Instr::Lut {
                bit: 1,
                bits,
                table: 0xDEAD_BEEF_0123_4567,
            },
            Instr::FlipIfBelow {
                bit: 3,
                word: 0,
                limit: 7,
            },
        ];
        p.teardown = vec![Instr::SessionClose { session: 0 }];
        p.outputs = vec![3, 2];
        p
    }

    #[test]
    fn every_instruction_round_trips() {
        let p = every_instruction();
        p.validate().unwrap();
        let bytes = encode(&p);
        assert_eq!(&bytes[..4], b"BKLP");
        assert_eq!(decode(&bytes).unwrap(), p);
    }

    #[test]
    fn every_truncation_and_every_extra_byte_is_refused() {
        let bytes = encode(&every_instruction());
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).is_err(), "{n} of {} bytes", bytes.len());
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(decode(&long), Err(DecodeError::Trailing(1)));
    }

    #[test]
    fn foreign_and_forged_bytes_are_refused_by_name() {
        let bytes = encode(&every_instruction());
        let mut b = bytes.clone();
        b[0] = b'X';
        assert!(matches!(decode(&b), Err(DecodeError::Magic(_))));
        let mut b = bytes.clone();
        b[4] = 9;
        assert_eq!(decode(&b), Err(DecodeError::Format { found: 9 }));
        // A forged pool count larger than the input: refused before allocating.
        let mut b = bytes.clone();
        b[22..26].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(decode(&b), Err(DecodeError::Truncated(22))));
        // An index past the declared qubits: decoded, then refused by validation.
        let mut p = every_instruction();
        p.body.push(Instr::G1(Gate1::H, 99));
        let e = decode(&encode(&p)).unwrap_err();
        assert!(e.to_string().contains("qubit 99"), "{e}");
        // Every single-byte corruption decodes to a valid program or an error, never a panic.
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xA5;
            let _ = decode(&b);
        }
    }
}
