//! backline's QEC compiler: a small IR in the reference's dialects (quantum, logical QEC,
//! physical QEC, transport), the passes that turn a logical circuit into a Steane-encoded
//! physical circuit whose every decode is one transport round to a coprocessor, a textual
//! dump after any pass, and the lowering to the stabilizer VM's [`Program`].
//!
//! ```
//! use backline_compiler::{ir::{Gate, Module, Code, Op}, compile, passes::IMPLICIT_QEC};
//!
//! let mut m = Module::new("ghz", 3);
//! m.qec_code = Some(Code::Steane);
//! m.coprocessors = vec!["steane".into()];
//! m.gate(Gate::H, &[0]);
//! m.gate(Gate::Cnot, &[0, 1]);
//! m.gate(Gate::Cnot, &[1, 2]);
//! let bits: Vec<u32> = (0..3).map(|q| m.measure(q)).collect();
//! m.body.push(Op::Output { bits });
//! let program = compile(m, IMPLICIT_QEC, &Default::default(), |_, _| {})?;
//! assert_eq!(program.num_qubits, 24); // 3 blocks × (7 data + 1 ancilla)
//! # Ok::<(), backline_compiler::CompileError>(())
//! ```
#![deny(missing_docs)]

pub mod ir;
pub mod passes;

use backline_stabvm::{Gate1, Gate2, Instr, Program};

use ir::{Gate, Module, Op};
pub use passes::{NoiseDefaults, PassManager};

/// Why a module could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// A bad pipeline string.
    #[error("pipeline: {0}")]
    Pipeline(String),
    /// A pass refused the module.
    #[error("pass {pass}: {msg}")]
    Pass {
        /// The pass.
        pass: &'static str,
        /// Why.
        msg: String,
    },
    /// The module is not valid at this point.
    #[error("{0}")]
    Invalid(String),
}

/// Runs `pipeline` on `m` and lowers the result to a VM program. `after` sees the module after
/// every pass (the `--print-after-all` hook).
pub fn compile(
    mut m: Module,
    pipeline: &str,
    noise: &NoiseDefaults,
    after: impl FnMut(&str, &Module),
) -> Result<Program, CompileError> {
    PassManager::parse(pipeline, noise)?.run(&mut m, after)?;
    lower(&m)
}

/// Lowers a module of `quantum` and `transport` ops to a VM program.
pub fn lower(m: &Module) -> Result<Program, CompileError> {
    let mut p = Program {
        num_qubits: m.num_qubits,
        num_bits: m.num_bits,
        num_words: m.num_words,
        num_sessions: m.num_sessions,
        ..Program::default()
    };
    let mut outputs = Vec::new();
    let mut setup = Vec::new();
    let mut body = Vec::new();
    let mut teardown = Vec::new();
    for (ops, out) in [
        (&m.setup, &mut setup),
        (&m.body, &mut body),
        (&m.teardown, &mut teardown),
    ] {
        for op in ops {
            if let Some(i) = lower_op(&mut p, op, &mut outputs)? {
                out.push(i);
            }
        }
    }
    p.setup = setup;
    p.body = body;
    p.teardown = teardown;
    p.outputs = outputs;
    p.validate().map_err(CompileError::Invalid)?;
    Ok(p)
}

/// The VM instruction of one op (its lists added to `p`'s pool), or `None` for an op that
/// becomes none: the identity, an `Output` (its bits go to `outputs`), `GetSession`.
fn lower_op(
    p: &mut Program,
    op: &Op,
    outputs: &mut Vec<u32>,
) -> Result<Option<Instr>, CompileError> {
    Ok(Some(match op {
        Op::Gate { gate, qubits } => return lower_gate(*gate, qubits),
        Op::Measure { qubit, bit } => Instr::Measure {
            q: *qubit,
            bit: *bit,
        },
        Op::Reset { qubit } => Instr::Reset(*qubit),
        Op::Cond {
            pauli,
            qubit,
            bits,
            negate,
        } => Instr::CondPauli {
            pauli: *pauli,
            q: *qubit,
            bits: p.list(bits),
            negate: *negate,
        },
        Op::Parity { bit, bits } => Instr::Parity {
            bit: *bit,
            bits: p.list(bits),
        },
        Op::Noise { channel, qubit } => Instr::Noise(*channel, *qubit),
        Op::CorrectAt {
            pauli,
            word,
            qubits,
        } => Instr::CorrectAt {
            pauli: *pauli,
            word: *word,
            qubits: p.list(qubits),
        },
        Op::FlipIfBelow { bit, word, limit } => Instr::FlipIfBelow {
            bit: *bit,
            word: *word,
            limit: *limit,
        },
        Op::WordBit { bit, word, index } => Instr::WordBit {
            bit: *bit,
            word: *word,
            index: *index,
        },
        Op::Lut { bit, bits, table } => {
            if bits.len() > ir::LUT_INPUTS {
                return Err(CompileError::Invalid(format!(
                    "`{op}` has {} inputs; a lookup table takes at most {}",
                    bits.len(),
                    ir::LUT_INPUTS
                )));
            }
            Instr::Lut {
                bit: *bit,
                bits: p.list(bits),
                table: *table,
            }
        }
        Op::Output { bits } => {
            outputs.extend_from_slice(bits);
            return Ok(None);
        }
        Op::SessionOpen {
            session,
            coprocessor,
        } => Instr::SessionOpen {
            session: *session,
            coprocessor: *coprocessor,
        },
        Op::SessionClose { session } => Instr::SessionClose { session: *session },
        Op::GetSession { .. } => return Ok(None),
        Op::Stage {
            session,
            decoder_id,
            bits,
        } => Instr::Stage {
            session: *session,
            decoder_id: *decoder_id,
            bits: p.list(bits),
        },
        Op::Post { session } => Instr::Post { session: *session },
        Op::Collect { session, word } => Instr::Collect {
            session: *session,
            word: *word,
        },
        op => {
            return Err(CompileError::Invalid(format!(
                "`{op}` ({} dialect) cannot run on the VM: the pipeline must lower it first",
                ir::dialect(op)
            )));
        }
    }))
}

/// The VM instruction of a gate on `qubits` (`None` for the identity).
fn lower_gate(gate: Gate, qubits: &[u32]) -> Result<Option<Instr>, CompileError> {
    let unsupported = |n: &str| CompileError::Invalid(format!("{} on {n}", gate.name()));
    Ok(Some(match (gate, qubits) {
        (Gate::I, _) => return Ok(None),
        (g, &[q]) => Instr::G1(
            match g {
                Gate::H => Gate1::H,
                Gate::S => Gate1::S,
                Gate::Sdg => Gate1::Sdg,
                Gate::X => Gate1::X,
                Gate::Y => Gate1::Y,
                Gate::Z => Gate1::Z,
                _ => return Err(unsupported("one qubit")),
            },
            q,
        ),
        (g, &[a, b]) => Instr::G2(
            match g {
                Gate::Cnot => Gate2::Cx,
                Gate::Cz => Gate2::Cz,
                Gate::Swap => Gate2::Swap,
                _ => return Err(unsupported("two qubits")),
            },
            a,
            b,
        ),
        (_, qs) => return Err(unsupported(&format!("{} qubits", qs.len()))),
    }))
}
