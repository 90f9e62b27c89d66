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
        let bad = |msg: String| FrontError::BadOp {
            index,
            tag: o.tag.clone(),
            msg,
        };
        let ints: Vec<u32> = match o.tag.as_str() {
            // The truth table is 64 bits wide.
            "lut" => o
                .ints
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    if i == 1 {
                        Ok(0)
                    } else {
                        u32_of(v, index, &o.tag)
                    }
                })
                .collect::<Result<_, _>>()?,
            _ => o
                .ints
                .iter()
                .map(|&v| u32_of(v, index, &o.tag))
                .collect::<Result<_, _>>()?,
        };
        let need = |n: usize| -> Result<(), FrontError> {
            if ints.len() < n {
                Err(bad(format!(
                    "needs at least {n} operands, got {}",
                    ints.len()
                )))
            } else {
                Ok(())
            }
        };
        let op = match o.tag.as_str() {
            tag if Gate::parse(tag).is_some() => {
                let gate = Gate::parse(tag).expect("checked");
                if ints.len() != gate.arity() {
                    return Err(bad(format!(
                        "{} acts on {} qubits, got {}",
                        gate.name(),
                        gate.arity(),
                        ints.len()
                    )));
                }
                Op::Gate {
                    gate,
                    qubits: ints.clone(),
                }
            }
            "measure" => {
                need(2)?;
                Op::Measure {
                    qubit: ints[0],
                    bit: ints[1],
                }
            }
            "reset" => {
                need(1)?;
                Op::Reset { qubit: ints[0] }
            }
            "cond_x" | "cond_y" | "cond_z" => {
                need(2)?;
                Op::Cond {
                    pauli: match o.tag.as_str() {
                        "cond_x" => Pauli::X,
                        "cond_y" => Pauli::Y,
                        _ => Pauli::Z,
                    },
                    qubit: ints[0],
                    negate: ints[1] != 0,
                    bits: ints[2..].to_vec(),
                }
            }
            "parity" => {
                need(1)?;
                Op::Parity {
                    bit: ints[0],
                    bits: ints[1..].to_vec(),
                }
            }
            "lut" => {
                need(2)?;
                Op::Lut {
                    bit: ints[0],
                    table: o.ints[1],
                    bits: ints[2..].to_vec(),
                }
            }
            "word_bit" => {
                need(3)?;
                Op::WordBit {
                    bit: ints[0],
                    word: ints[1],
                    index: ints[2],
                }
            }
            "bit_flip" | "phase_flip" | "depolarize" => {
                need(1)?;
                if !(0.0..=1.0).contains(&o.p) {
                    return Err(bad(format!("probability {} outside [0, 1]", o.p)));
                }
                Op::Noise {
                    channel: match o.tag.as_str() {
                        "bit_flip" => Channel::BitFlip(o.p),
                        "phase_flip" => Channel::PhaseFlip(o.p),
                        _ => Channel::Depolarize(o.p),
                    },
                    qubit: ints[0],
                }
            }
            "decode" => {
                need(3)?;
                Op::Decode {
                    word: ints[0],
                    decoder_id: ints[1],
                    coprocessor: ints[2],
                    bits: ints[3..].to_vec(),
                }
            }
            "get_session" => {
                need(1)?;
                Op::GetSession { session: ints[0] }
            }
            "stage" => {
                need(2)?;
                Op::Stage {
                    session: ints[0],
                    decoder_id: ints[1],
                    bits: ints[2..].to_vec(),
                }
            }
            "post" => {
                need(1)?;
                Op::Post { session: ints[0] }
            }
            "collect" => {
                need(2)?;
                Op::Collect {
                    session: ints[0],
                    word: ints[1],
                }
            }
            "correct_x" | "correct_y" | "correct_z" => {
                need(1)?;
                Op::CorrectAt {
                    pauli: match o.tag.as_str() {
                        "correct_x" => Pauli::X,
                        "correct_y" => Pauli::Y,
                        _ => Pauli::Z,
                    },
                    word: ints[0],
                    qubits: ints[1..].to_vec(),
                }
            }
            "output" => Op::Output { bits: ints.clone() },
            other => return Err(bad(format!("unknown op `{other}`"))),
        };
        m.body.push(op);
    }
    Ok(m)
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
    Ok(Compiled {
        program,
        dumps: texts,
        requests,
        rounds_per_shot,
    })
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
