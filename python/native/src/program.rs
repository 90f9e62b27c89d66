//! From the Python front end's op list to an IR module, and through the pass pipeline to a
//! VM program with the textual IR after every pass.

use backline_compiler::ir::{Code, Gate, Module, Op};
use backline_compiler::passes::{IMPLICIT_QEC, PLAIN};
use backline_compiler::{CompileError, NoiseDefaults, PassManager};
use backline_stabvm::{Channel, Instr, Pauli, Program};

/// One op as the front end sends it: a tag, integer operands and a probability (noise ops).
///
/// | tag | ints |
/// |---|---|
/// | `i` `h` `s` `sdg` `x` `y` `z` `cnot` `cz` `swap` | qubits |
/// | `measure` | qubit, bit |
/// | `reset` | qubit |
/// | `cond_x` `cond_y` `cond_z` | qubit, negate (0/1), condition bits… (XOR) |
/// | `parity` | bit, bits… |
/// | `lut` | bit, truth table, bits… |
/// | `word_bit` | bit, word, index |
/// | `bit_flip` `phase_flip` `depolarize` | qubit (probability in `p`) |
/// | `decode` | word, decoder id, coprocessor, syndrome bits… |
/// | `get_session` `post` | coprocessor |
/// | `stage` | coprocessor, decoder id, payload bits… |
/// | `collect` | coprocessor, word |
/// | `correct_x` `correct_y` `correct_z` | word, qubits… (the Pauli on `qubits[word]`) |
/// | `output` | bits |
#[derive(Debug, Clone, PartialEq)]
pub struct OpSpec {
    /// What the op is.
    pub tag: String,
    /// Its integer operands.
    pub ints: Vec<u64>,
    /// Its probability (noise channels only).
    pub p: f64,
}

/// Why the front end's ops could not become a module.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// `qec_code` names no code we can lower to.
    #[error("unknown qec_code `{0}` (known: steane, or None for no code)")]
    UnknownQecCode(String),
    /// An op is malformed (a bug of the front end, reported with the op).
    #[error("op {index} (`{tag}`): {msg}")]
    BadOp {
        /// Position in the list.
        index: usize,
        /// Its tag.
        tag: String,
        /// What is wrong.
        msg: String,
    },
}

/// The sizes and placement facts of a module.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// Module name, for dumps.
    pub name: String,
    /// Qubits (logical ones when `qec_code` is set).
    pub num_qubits: u32,
    /// Classical bits.
    pub num_bits: u32,
    /// Reply words.
    pub num_words: u32,
    /// `steane` or None.
    pub qec_code: Option<String>,
    /// Coprocessor names, index = coprocessor number.
    pub coprocessors: Vec<String>,
}

fn u32_of(v: u64, index: usize, tag: &str) -> Result<u32, FrontError> {
    u32::try_from(v).map_err(|_| FrontError::BadOp {
        index,
        tag: tag.to_string(),
        msg: format!("operand {v} does not fit 32 bits"),
    })
}

/// Builds the module the front end describes.
pub fn build(h: &Header, ops: &[OpSpec]) -> Result<Module, FrontError> {
    let mut m = Module::new(&h.name, h.num_qubits);
    m.num_bits = h.num_bits;
    m.num_words = h.num_words;
    m.coprocessors = h.coprocessors.clone();
    m.qec_code = match h.qec_code.as_deref() {
        None => None,
        Some("steane") => Some(Code::Steane),
        Some(other) => return Err(FrontError::UnknownQecCode(other.to_string())),
    };
    for (index, o) in ops.iter().enumerate() {
        m.body.push(Operands::of(index, o)?.op()?);
    }
    Ok(m)
}

/// One op of the front end with its operands as 32-bit numbers (a `lut`'s 64-bit truth
/// table, operand 1, read from the spec).
struct Operands<'a> {
    index: usize,
    spec: &'a OpSpec,
    ints: Vec<u32>,
}

impl<'a> Operands<'a> {
    fn of(index: usize, spec: &'a OpSpec) -> Result<Operands<'a>, FrontError> {
        let wide = |i: usize| spec.tag == "lut" && i == 1;
        let ints = spec
            .ints
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if wide(i) {
                    Ok(0)
                } else {
                    u32_of(v, index, &spec.tag)
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Operands { index, spec, ints })
    }

    fn bad(&self, msg: String) -> FrontError {
        FrontError::BadOp {
            index: self.index,
            tag: self.spec.tag.clone(),
            msg,
        }
    }

    /// At least `n` operands.
    fn need(&self, n: usize) -> Result<(), FrontError> {
        if self.ints.len() < n {
            Err(self.bad(format!(
                "needs at least {n} operands, got {}",
                self.ints.len()
            )))
        } else {
            Ok(())
        }
    }

    /// The IR op.
    fn op(&self) -> Result<Op, FrontError> {
        if let Some(gate) = Gate::parse(&self.spec.tag) {
            return self.gate(gate);
        }
        self.quantum()
            .or_else(|| self.classical())
            .or_else(|| self.runtime())
            .unwrap_or_else(|| Err(self.bad(format!("unknown op `{}`", self.spec.tag))))
    }

    fn gate(&self, gate: Gate) -> Result<Op, FrontError> {
        if self.ints.len() != gate.arity() {
            return Err(self.bad(format!(
                "{} acts on {} qubits, got {}",
                gate.name(),
                gate.arity(),
                self.ints.len()
            )));
        }
        Ok(Op::Gate {
            gate,
            qubits: self.ints.clone(),
        })
    }

    /// Measurement, reset, conditional Paulis and noise; `None` for other tags.
    fn quantum(&self) -> Option<Result<Op, FrontError>> {
        let ints = &self.ints;
        Some(match self.spec.tag.as_str() {
            "measure" => self.need(2).map(|()| Op::Measure {
                qubit: ints[0],
                bit: ints[1],
            }),
            "reset" => self.need(1).map(|()| Op::Reset { qubit: ints[0] }),
            tag @ ("cond_x" | "cond_y" | "cond_z") => self.need(2).map(|()| Op::Cond {
                pauli: match tag {
                    "cond_x" => Pauli::X,
                    "cond_y" => Pauli::Y,
                    _ => Pauli::Z,
                },
                qubit: ints[0],
                negate: ints[1] != 0,
                bits: ints[2..].to_vec(),
            }),
            tag @ ("bit_flip" | "phase_flip" | "depolarize") => self.noise(tag),
            _ => return None,
        })
    }

    /// A noise channel on one qubit, with the spec's probability.
    fn noise(&self, tag: &str) -> Result<Op, FrontError> {
        self.need(1)?;
        let p = self.spec.p;
        if !(0.0..=1.0).contains(&p) {
            return Err(self.bad(format!("probability {p} outside [0, 1]")));
        }
        Ok(Op::Noise {
            channel: Channel::named(tag, p)
                .ok_or_else(|| self.bad(format!("no channel `{tag}`")))?,
            qubit: self.ints[0],
        })
    }

    /// Parity, lookup tables, word bits and outputs; `None` for other tags.
    fn classical(&self) -> Option<Result<Op, FrontError>> {
        let ints = &self.ints;
        Some(match self.spec.tag.as_str() {
            "parity" => self.need(1).map(|()| Op::Parity {
                bit: ints[0],
                bits: ints[1..].to_vec(),
            }),
            "lut" => self.need(2).map(|()| Op::Lut {
                bit: ints[0],
                table: self.spec.ints[1],
                bits: ints[2..].to_vec(),
            }),
            "word_bit" => self.need(3).map(|()| Op::WordBit {
                bit: ints[0],
                word: ints[1],
                index: ints[2],
            }),
            "output" => Ok(Op::Output { bits: ints.clone() }),
            _ => return None,
        })
    }

    /// Decodes, the runtime's session calls and corrections from reply words; `None` for
    /// other tags.
    fn runtime(&self) -> Option<Result<Op, FrontError>> {
        let ints = &self.ints;
        Some(match self.spec.tag.as_str() {
            "decode" => self.need(3).map(|()| Op::Decode {
                word: ints[0],
                decoder_id: ints[1],
                coprocessor: ints[2],
                bits: ints[3..].to_vec(),
            }),
            "get_session" => self.need(1).map(|()| Op::GetSession { session: ints[0] }),
            "stage" => self.need(2).map(|()| Op::Stage {
                session: ints[0],
                decoder_id: ints[1],
                bits: ints[2..].to_vec(),
            }),
            "post" => self.need(1).map(|()| Op::Post { session: ints[0] }),
            "collect" => self.need(2).map(|()| Op::Collect {
                session: ints[0],
                word: ints[1],
            }),
            tag @ ("correct_x" | "correct_y" | "correct_z") => {
                self.need(1).map(|()| Op::CorrectAt {
                    pauli: match tag {
                        "correct_x" => Pauli::X,
                        "correct_y" => Pauli::Y,
                        _ => Pauli::Z,
                    },
                    word: ints[0],
                    qubits: ints[1..].to_vec(),
                })
            }
            _ => return None,
        })
    }
}

/// The pipeline a placement runs when it names none: implicit QEC with a code, else noise
/// and the lowering of explicit decodes and runtime calls.
pub fn default_pipeline(m: &Module) -> &'static str {
    if m.qec_code.is_some() {
        IMPLICIT_QEC
    } else {
        PLAIN
    }
}

/// A compiled program and what the front end needs to know about it.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// What the VM runs.
    pub program: Program,
    /// `(stage, IR text)`: `input`, then one entry per pass (when asked for).
    pub dumps: Vec<(String, String)>,
    /// Every (coprocessor, decoder id) the program sends requests to, sorted, unique.
    pub requests: Vec<(u32, u32)>,
    /// Decode rounds per shot.
    pub rounds_per_shot: usize,
}

/// Runs `pipeline` (or the default) on `m` and lowers it for the VM; with `dumps`, keeps the
/// IR text before the first pass and after each.
pub fn compile(
    m: Module,
    pipeline: Option<&str>,
    noise: &NoiseDefaults,
    dumps: bool,
) -> Result<Compiled, CompileError> {
    let pipeline = pipeline.unwrap_or_else(|| default_pipeline(&m));
    let pm = PassManager::parse(pipeline, noise)?;
    let mut texts = Vec::new();
    if dumps {
        texts.push(("input".to_string(), m.to_string()));
    }
    let mut m = m;
    pm.run(&mut m, |pass, module| {
        if dumps {
            texts.push((pass.to_string(), module.to_string()));
        }
    })?;
    let program = backline_compiler::lower(&m)?;
    Ok(Compiled::of(program, texts))
}

impl Compiled {
    /// A program with what the front end reads of it: the requests it makes, its rounds.
    pub fn of(program: Program, dumps: Vec<(String, String)>) -> Compiled {
        let mut requests: Vec<(u32, u32)> = program
            .setup
            .iter()
            .chain(&program.body)
            .filter_map(|i| match *i {
                Instr::Stage {
                    session,
                    decoder_id,
                    ..
                } => Some((session, decoder_id)),
                _ => None,
            })
            .collect();
        let rounds_per_shot = program
            .body
            .iter()
            .filter(|i| matches!(i, Instr::Collect { .. }))
            .count();
        requests.sort_unstable();
        requests.dedup();
        Compiled {
            program,
            dumps,
            requests,
            rounds_per_shot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(tag: &str, ints: &[u64]) -> OpSpec {
        OpSpec {
            tag: tag.into(),
            ints: ints.to_vec(),
            p: 0.0,
        }
    }

    fn ghz_ops() -> Vec<OpSpec> {
        vec![
            op("h", &[0]),
            op("cnot", &[0, 1]),
            op("cnot", &[1, 2]),
            op("measure", &[0, 0]),
            op("measure", &[1, 1]),
            op("measure", &[2, 2]),
            op("output", &[0, 1, 2]),
        ]
    }

    fn ghz_header() -> Header {
        Header {
            name: "ghz".into(),
            num_qubits: 3,
            num_bits: 3,
            num_words: 0,
            qec_code: Some("steane".into()),
            coprocessors: vec!["steane".into()],
        }
    }

    #[test]
    fn the_ops_of_the_front_end_build_the_golden_ghz_module() {
        let m = build(&ghz_header(), &ghz_ops()).unwrap();
        let golden = include_str!("../../../host/compiler/tests/golden/ghz/00-input.ir");
        assert_eq!(m.to_string(), golden);
        let c = compile(
            m,
            None,
            &NoiseDefaults {
                p: 0.001,
                ..Default::default()
            },
            true,
        )
        .unwrap();
        assert_eq!(c.dumps.len(), 7);
        assert_eq!(c.dumps[1].0, "logical-to-blocks");
        assert_eq!(
            c.dumps[6].1,
            include_str!("../../../host/compiler/tests/golden/ghz/06-lower-decode.ir")
        );
        assert_eq!(c.requests, [(0, 0), (0, 1)]);
        assert_eq!(c.rounds_per_shot, 13);
    }

    #[test]
    fn every_tag_builds_its_op_and_needs_its_operands() {
        let noisy = |tag: &str| OpSpec {
            p: 0.25,
            ..op(tag, &[4])
        };
        let cases = [
            (op("measure", &[1, 2]), Op::Measure { qubit: 1, bit: 2 }),
            (op("reset", &[3]), Op::Reset { qubit: 3 }),
            (
                op("cond_y", &[1, 1, 5, 6]),
                Op::Cond {
                    pauli: Pauli::Y,
                    qubit: 1,
                    negate: true,
                    bits: vec![5, 6],
                },
            ),
            (
                op("parity", &[0, 1, 2]),
                Op::Parity {
                    bit: 0,
                    bits: vec![1, 2],
                },
            ),
            (
                op("lut", &[7, 1 << 40, 1]),
                Op::Lut {
                    bit: 7,
                    table: 1 << 40,
                    bits: vec![1],
                },
            ),
            (
                op("word_bit", &[1, 2, 3]),
                Op::WordBit {
                    bit: 1,
                    word: 2,
                    index: 3,
                },
            ),
            (
                noisy("phase_flip"),
                Op::Noise {
                    channel: Channel::PhaseFlip(0.25),
                    qubit: 4,
                },
            ),
            (
                op("decode", &[0, 1, 2, 9]),
                Op::Decode {
                    word: 0,
                    decoder_id: 1,
                    coprocessor: 2,
                    bits: vec![9],
                },
            ),
            (op("get_session", &[1]), Op::GetSession { session: 1 }),
            (
                op("stage", &[1, 2, 3]),
                Op::Stage {
                    session: 1,
                    decoder_id: 2,
                    bits: vec![3],
                },
            ),
            (op("post", &[1]), Op::Post { session: 1 }),
            (
                op("collect", &[1, 2]),
                Op::Collect {
                    session: 1,
                    word: 2,
                },
            ),
            (
                op("correct_x", &[0, 5, 6]),
                Op::CorrectAt {
                    pauli: Pauli::X,
                    word: 0,
                    qubits: vec![5, 6],
                },
            ),
            (op("output", &[]), Op::Output { bits: vec![] }),
        ];
        for (spec, want) in cases {
            let m = build(&ghz_header(), std::slice::from_ref(&spec)).unwrap();
            assert_eq!(m.body, [want], "{}", spec.tag);
        }
        for (tag, need) in [
            ("measure", 2),
            ("reset", 1),
            ("cond_z", 2),
            ("parity", 1),
            ("lut", 2),
            ("word_bit", 3),
            ("depolarize", 1),
            ("decode", 3),
            ("get_session", 1),
            ("stage", 2),
            ("post", 1),
            ("collect", 2),
            ("correct_z", 1),
        ] {
            let few = vec![0; need - 1];
            let e = build(&ghz_header(), &[op(tag, &few)]).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "op 0 (`{tag}`): needs at least {need} operands, got {}",
                    need - 1
                )
            );
        }
        let e = build(
            &ghz_header(),
            &[OpSpec {
                p: 2.0,
                ..noisy("bit_flip")
            }],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "op 0 (`bit_flip`): probability 2 outside [0, 1]"
        );
    }

    #[test]
    fn bad_ops_and_codes_are_named() {
        let mut h = ghz_header();
        h.qec_code = Some("surface".into());
        let e = build(&h, &ghz_ops()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown qec_code `surface` (known: steane, or None for no code)"
        );
        let e = build(&ghz_header(), &[op("cnot", &[0])]).unwrap_err();
        assert_eq!(e.to_string(), "op 0 (`cnot`): cnot acts on 2 qubits, got 1");
        let e = build(&ghz_header(), &[op("t", &[0])]).unwrap_err();
        assert!(e.to_string().contains("unknown op `t`"), "{e}");
        let e = build(&ghz_header(), &[op("measure", &[1 << 40, 0])]).unwrap_err();
        assert!(e.to_string().contains("does not fit 32 bits"), "{e}");
    }

    #[test]
    fn word_bits_and_lookup_tables_run_on_the_vm() {
        // Two measured bits, their AND through a table, and an X conditioned on it.
        let h = Header {
            name: "lut".into(),
            num_qubits: 3,
            num_bits: 4,
            ..Default::default()
        };
        let ops = vec![
            op("x", &[0]),
            op("x", &[1]),
            op("measure", &[0, 0]),
            op("measure", &[1, 1]),
            op("lut", &[2, 0b1000, 0, 1]),
            op("cond_x", &[2, 0, 2]),
            op("measure", &[2, 3]),
            op("output", &[2, 3]),
        ];
        let c = compile(build(&h, &ops).unwrap(), None, &Default::default(), false).unwrap();
        let s = backline_stabvm::run(&c.program, 4, 1, &mut NoRounds).unwrap();
        assert!(
            s.bits.iter().all(|&b| b),
            "1 AND 1 = 1, and the X was applied"
        );
        let mut ops2 = ops.clone();
        ops2.remove(0);
        let c = compile(build(&h, &ops2).unwrap(), None, &Default::default(), false).unwrap();
        let s = backline_stabvm::run(&c.program, 4, 1, &mut NoRounds).unwrap();
        assert!(s.bits.iter().all(|&b| !b), "0 AND 1 = 0, no X");
    }

    struct NoRounds;
    impl backline_stabvm::Rounds for NoRounds {
        fn open(&mut self, _: u32, _: u32) -> Result<(), backline_stabvm::RoundError> {
            Ok(())
        }
        fn stage(&mut self, _: u32, _: u32, _: &[u8]) -> Result<(), backline_stabvm::RoundError> {
            Ok(())
        }
        fn post(&mut self, _: u32) -> Result<(), backline_stabvm::RoundError> {
            Ok(())
        }
        fn collect(&mut self, _: u32) -> Result<u64, backline_stabvm::RoundError> {
            Ok(0b101)
        }
        fn close(&mut self, _: u32) -> Result<(), backline_stabvm::RoundError> {
            Ok(())
        }
    }

    #[test]
    fn word_bits_read_the_reply() {
        let h = Header {
            name: "wb".into(),
            num_qubits: 1,
            num_bits: 4,
            num_words: 1,
            coprocessors: vec!["c".into()],
            ..Default::default()
        };
        let ops = vec![
            op("decode", &[0, 0, 0, 3]),
            op("word_bit", &[0, 0, 0]),
            op("word_bit", &[1, 0, 1]),
            op("word_bit", &[2, 0, 2]),
            op("output", &[0, 1, 2]),
        ];
        let c = compile(build(&h, &ops).unwrap(), None, &Default::default(), false).unwrap();
        let s = backline_stabvm::run(&c.program, 1, 1, &mut NoRounds).unwrap();
        assert_eq!(s.bits, [true, false, true]);
        assert_eq!(c.requests, [(0, 0)]);
    }
}
