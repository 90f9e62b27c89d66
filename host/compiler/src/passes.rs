//! The passes and the pass manager.
//!
//! | pass | does |
//! |---|---|
//! | `logical-to-blocks` | each logical qubit becomes a code block; a correction cycle follows every logical gate |
//! | `inject-noise{p=…,channel=…}` | a Pauli channel after every gate (logical blocks or physical qubits) |
//! | `steane-encode{decode=true}` | blocks become Steane circuits: encoder, transversal gates, one syndrome round per cycle, decodes and corrections |
//! | `lower-to-gates` | physical-QEC ops become plain gates, measurements and conditioned Paulis |
//! | `insert-sessions` | session open/close in set-up/tear-down code for every coprocessor used |
//! | `lower-decode` | each decode becomes one transport round: get_session, stage_payload, post, collect |

use backline_decoders::steane;
use backline_stabvm::{Channel, Pauli};

use crate::CompileError;
use crate::ir::{Block, Code, Gate, Module, Op, Word};

/// One transformation of a module.
pub trait Pass {
    /// Its name in pipeline strings.
    fn name(&self) -> &'static str;
    /// Transforms the module.
    fn run(&self, m: &mut Module) -> Result<(), CompileError>;
}

/// The pipeline of implicit QEC: everything from logical circuit to transport rounds.
pub const IMPLICIT_QEC: &str =
    "logical-to-blocks,inject-noise,steane-encode,lower-to-gates,insert-sessions,lower-decode";

/// The pipeline without a code: noise, then explicit decodes to transport rounds.
pub const PLAIN: &str = "inject-noise,insert-sessions,lower-decode";

/// Runs passes in order.
pub struct PassManager {
    passes: Vec<Box<dyn Pass>>,
}

impl std::fmt::Debug for PassManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.passes.iter().map(|p| p.name()))
            .finish()
    }
}

/// Options of one pass in a pipeline string.
type Options = Vec<(String, String)>;

fn options(spec: &str) -> Result<(&str, Options), CompileError> {
    let spec = spec.trim();
    let Some(open) = spec.find('{') else {
        return Ok((spec, vec![]));
    };
    let name = spec[..open].trim();
    let body = spec[open + 1..]
        .strip_suffix('}')
        .ok_or_else(|| CompileError::Pipeline(format!("`{spec}`: missing `}}`")))?;
    let mut opts = Vec::new();
    for kv in body.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            CompileError::Pipeline(format!("`{kv}` in `{spec}`: expected key=value"))
        })?;
        opts.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok((name, opts))
}

/// Splits a pipeline at top-level commas (commas inside `{…}` belong to options).
fn split(pipeline: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in pipeline.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&pipeline[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&pipeline[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

impl PassManager {
    /// Parses a pipeline string, e.g. `logical-to-blocks,inject-noise{p=0.001},steane-encode`.
    /// Options not given take the values of `defaults` (e.g. the placement's noise).
    pub fn parse(pipeline: &str, defaults: &NoiseDefaults) -> Result<PassManager, CompileError> {
        let mut passes: Vec<Box<dyn Pass>> = Vec::new();
        for spec in split(pipeline) {
            let (name, opts) = options(spec)?;
            let bad =
                |k: &str, v: &str| CompileError::Pipeline(format!("{name}: bad option {k}={v}"));
            let pass: Box<dyn Pass> = match name {
                "logical-to-blocks" => Box::new(LogicalToBlocks),
                "inject-noise" => {
                    let mut p = defaults.p;
                    let mut channel = defaults.channel.clone();
                    for (k, v) in &opts {
                        match k.as_str() {
                            "p" => p = v.parse().map_err(|_| bad(k, v))?,
                            "channel" => channel = v.clone(),
                            _ => return Err(bad(k, v)),
                        }
                    }
                    if !(0.0..=1.0).contains(&p) {
                        return Err(bad("p", &p.to_string()));
                    }
                    let channel =
                        Channel::named(&channel, p).ok_or_else(|| bad("channel", &channel))?;
                    Box::new(InjectNoise { channel })
                }
                "steane-encode" => {
                    let mut decode = true;
                    for (k, v) in &opts {
                        match (k.as_str(), v.as_str()) {
                            ("decode", "true") => decode = true,
                            ("decode", "false") => decode = false,
                            _ => return Err(bad(k, v)),
                        }
                    }
                    Box::new(SteaneEncode { decode })
                }
                "lower-to-gates" => Box::new(LowerToGates),
                "insert-sessions" => Box::new(InsertSessions),
                "lower-decode" => Box::new(LowerDecode),
                other => {
                    return Err(CompileError::Pipeline(format!(
                        "unknown pass `{other}` (known: logical-to-blocks, inject-noise, steane-encode, lower-to-gates, insert-sessions, lower-decode)"
                    )));
                }
            };
            if !opts.is_empty() && !matches!(name, "inject-noise" | "steane-encode") {
                return Err(CompileError::Pipeline(format!("{name} takes no options")));
            }
            passes.push(pass);
        }
        Ok(PassManager { passes })
    }

    /// Pass names in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    /// Runs every pass; `after` sees the module after each (for `--print-after-all`).
    pub fn run(
        &self,
        m: &mut Module,
        mut after: impl FnMut(&str, &Module),
    ) -> Result<(), CompileError> {
        for p in &self.passes {
            p.run(m).map_err(|e| match e {
                CompileError::Pass { .. } => e,
                e => CompileError::Pass {
                    pass: p.name(),
                    msg: e.to_string(),
                },
            })?;
            after(p.name(), m);
        }
        Ok(())
    }
}

/// Noise settings a pipeline inherits from the placement.
#[derive(Debug, Clone)]
pub struct NoiseDefaults {
    /// Probability per gate and qubit.
    pub p: f64,
    /// `depolarize`, `bit_flip` or `phase_flip`.
    pub channel: String,
}

impl Default for NoiseDefaults {
    fn default() -> Self {
        NoiseDefaults {
            p: 0.0,
            channel: "depolarize".into(),
        }
    }
}

fn fail(msg: impl Into<String>) -> CompileError {
    CompileError::Invalid(msg.into())
}

/// `logical-to-blocks`.
pub struct LogicalToBlocks;

impl Pass for LogicalToBlocks {
    fn name(&self) -> &'static str {
        "logical-to-blocks"
    }

    fn run(&self, m: &mut Module) -> Result<(), CompileError> {
        let code = m
            .qec_code
            .ok_or_else(|| fail("the module has no qec_code; this pass needs one"))?;
        if !m.blocks.is_empty() {
            return Err(fail("the module already has code blocks"));
        }
        let n = m.num_qubits;
        m.blocks = (0..n)
            .map(|q| Block {
                code,
                logical: q,
                data: vec![],
                ancilla: None,
            })
            .collect();
        let mut body: Vec<Op> = (0..n).map(|b| Op::LBlock { block: b, code }).collect();
        for op in std::mem::take(&mut m.body) {
            match op {
                Op::Gate { gate: Gate::I, .. } => {}
                Op::Gate { gate, qubits } => {
                    body.push(Op::LGate {
                        gate,
                        blocks: qubits.clone(),
                    });
                    body.extend(qubits.into_iter().map(|b| Op::LCycle { block: b }));
                }
                Op::Measure { qubit, bit } => body.push(Op::LMeasure { block: qubit, bit }),
                Op::Reset { qubit } => body.push(Op::LReset { block: qubit }),
                Op::Cond {
                    pauli,
                    qubit,
                    bits,
                    negate,
                } => body.push(Op::LCond {
                    pauli,
                    block: qubit,
                    bits,
                    negate,
                }),
                Op::Noise { channel, qubit } => body.push(Op::LNoise {
                    channel,
                    block: qubit,
                }),
                op @ (Op::CorrectAt { .. } | Op::FlipIfBelow { .. }) => {
                    return Err(fail(format!(
                        "`{op}` acts on physical qubits; it cannot be used with qec_code"
                    )));
                }
                op => body.push(op),
            }
        }
        m.body = body;
        Ok(())
    }
}

/// `inject-noise`.
pub struct InjectNoise {
    channel: Channel,
}

impl Pass for InjectNoise {
    fn name(&self) -> &'static str {
        "inject-noise"
    }

    fn run(&self, m: &mut Module) -> Result<(), CompileError> {
        let p = match self.channel {
            Channel::BitFlip(p) | Channel::PhaseFlip(p) | Channel::Depolarize(p) => p,
        };
        if p == 0.0 {
            return Ok(());
        }
        let mut body = Vec::with_capacity(m.body.len() * 2);
        for op in std::mem::take(&mut m.body) {
            let noise: Vec<Op> = match &op {
                Op::LGate { blocks, .. } => blocks
                    .iter()
                    .map(|&b| Op::LNoise {
                        channel: self.channel,
                        block: b,
                    })
                    .collect(),
                Op::Gate { gate, qubits } if *gate != Gate::I => qubits
                    .iter()
                    .map(|&q| Op::Noise {
                        channel: self.channel,
                        qubit: q,
                    })
                    .collect(),
                _ => vec![],
            };
            body.push(op);
            body.extend(noise);
        }
        m.body = body;
        Ok(())
    }
}

/// The physical gate that implements a logical one transversally on the Steane code.
/// Transversal S is logical S† on this code (and vice versa); the others map to themselves.
pub fn steane_transversal(g: Gate) -> Gate {
    match g {
        Gate::S => Gate::Sdg,
        Gate::Sdg => Gate::S,
        g => g,
    }
}

/// `steane-encode`.
pub struct SteaneEncode {
    decode: bool,
}

/// Decoder ids of the two check types (SPEC §3: 0 = X checks, 1 = Z checks).
pub const X_CHECKS: u32 = 0;
/// Decoder id of the Z checks (which detect X errors).
pub const Z_CHECKS: u32 = 1;

impl Pass for SteaneEncode {
    fn name(&self) -> &'static str {
        "steane-encode"
    }

    fn run(&self, m: &mut Module) -> Result<(), CompileError> {
        if m.blocks.is_empty() {
            return Err(fail("no code blocks: run logical-to-blocks first"));
        }
        if m.blocks.iter().any(|b| b.code != Code::Steane) {
            return Err(fail("only Steane blocks can be encoded by this pass"));
        }
        if self.decode && m.coprocessors.is_empty() {
            return Err(fail(
                "implicit QEC decodes on a coprocessor, but the placement has none",
            ));
        }
        // Physical qubits: 7 data + 1 ancilla per block.
        m.num_qubits = 0;
        for b in 0..m.blocks.len() {
            let data: Vec<u32> = (0..steane::N).map(|_| m.new_qubit()).collect();
            let anc = m.new_qubit();
            m.blocks[b].data = data;
            m.blocks[b].ancilla = Some(anc);
        }
        let ops = std::mem::take(&mut m.body);
        let mut body = Vec::with_capacity(ops.len() * 4);
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::LBlock { block, .. } | Op::LReset { block } => {
                    body.push(Op::PEncode { block: *block })
                }
                Op::LGate { gate, blocks } => body.push(Op::PTransversal {
                    gate: steane_transversal(*gate),
                    blocks: blocks.clone(),
                }),
                Op::LCycle { block } => {
                    if !self.decode {
                        continue;
                    }
                    let x_bits: Vec<u32> = (0..3).map(|_| m.new_bit()).collect();
                    let z_bits: Vec<u32> = (0..3).map(|_| m.new_bit()).collect();
                    body.push(Op::PSyndrome {
                        block: *block,
                        x_bits: x_bits.clone(),
                        z_bits: z_bits.clone(),
                    });
                    for (bits, id, pauli) in
                        [(x_bits, X_CHECKS, Pauli::Z), (z_bits, Z_CHECKS, Pauli::X)]
                    {
                        let word = m.new_word();
                        body.push(Op::Decode {
                            bits,
                            decoder_id: id,
                            coprocessor: 0,
                            word,
                        });
                        body.push(Op::PCorrect {
                            pauli,
                            block: *block,
                            word,
                        });
                    }
                }
                Op::LMeasure { block, bit } => {
                    let data: Vec<u32> = (0..steane::N).map(|_| m.new_bit()).collect();
                    body.push(Op::PMeasureData {
                        block: *block,
                        bits: data.clone(),
                    });
                    body.push(Op::Parity {
                        bit: *bit,
                        bits: data.clone(),
                    });
                    if self.decode {
                        let syn: Vec<u32> = (0..3).map(|_| m.new_bit()).collect();
                        body.push(Op::PDataSyndrome {
                            data,
                            bits: syn.clone(),
                        });
                        let word = m.new_word();
                        body.push(Op::Decode {
                            bits: syn,
                            decoder_id: Z_CHECKS,
                            coprocessor: 0,
                            word,
                        });
                        body.push(Op::FlipIfBelow {
                            bit: *bit,
                            word,
                            limit: steane::N as u32,
                        });
                    }
                    // A mid-circuit measurement leaves the block in the measured state.
                    if ops[i + 1..].iter().any(|o| uses_block(o, *block)) {
                        body.push(Op::PEncode { block: *block });
                        body.push(Op::PCond {
                            pauli: Pauli::X,
                            block: *block,
                            bits: vec![*bit],
                            negate: false,
                        });
                    }
                }
                Op::LCond {
                    pauli,
                    block,
                    bits,
                    negate,
                } => body.push(Op::PCond {
                    pauli: *pauli,
                    block: *block,
                    bits: bits.clone(),
                    negate: *negate,
                }),
                Op::LNoise { channel, block } => body.push(Op::PNoise {
                    channel: *channel,
                    block: *block,
                }),
                op @ (Op::Gate { .. } | Op::Measure { .. } | Op::Reset { .. }) => {
                    return Err(fail(format!(
                        "`{op}` is a physical op on a module with code blocks; run logical-to-blocks first"
                    )));
                }
                op => body.push(op.clone()),
            }
        }
        m.body = body;
        Ok(())
    }
}

fn uses_block(op: &Op, b: u32) -> bool {
    match op {
        Op::LGate { blocks, .. } => blocks.contains(&b),
        Op::LCycle { block }
        | Op::LMeasure { block, .. }
        | Op::LReset { block }
        | Op::LCond { block, .. }
        | Op::LNoise { block, .. } => *block == b,
        _ => false,
    }
}

/// Qubits of the Steane checks: row `k` of the Hamming matrix.
fn support(k: usize) -> impl Iterator<Item = usize> {
    (0..steane::N).filter(move |&j| steane::H[k] >> j & 1 == 1)
}

/// The |0_L⟩ encoder: H on the three pivots (the qubits only one X check contains), then
/// CNOTs from each pivot to the rest of its check. Returns (pivots, cnots) in data indices.
pub fn steane_encoder() -> (Vec<usize>, Vec<(usize, usize)>) {
    let mut pivots = Vec::new();
    let mut cnots = Vec::new();
    for k in 0..3 {
        let pivot = support(k)
            .find(|&j| (0..3).filter(|&r| steane::H[r] >> j & 1 == 1).count() == 1)
            .expect("each Hamming row has a weight-one column");
        pivots.push(pivot);
        cnots.extend(support(k).filter(|&j| j != pivot).map(|j| (pivot, j)));
    }
    (pivots, cnots)
}

/// `lower-to-gates`.
pub struct LowerToGates;

impl Pass for LowerToGates {
    fn name(&self) -> &'static str {
        "lower-to-gates"
    }

    fn run(&self, m: &mut Module) -> Result<(), CompileError> {
        let blocks = m.blocks.clone();
        let data = |b: u32| -> Result<&Vec<u32>, CompileError> {
            blocks
                .get(b as usize)
                .map(|x| &x.data)
                .filter(|d| !d.is_empty())
                .ok_or_else(|| {
                    fail(format!(
                        "block b{b} has no physical qubits: run steane-encode first"
                    ))
                })
        };
        let (pivots, cnots) = steane_encoder();
        let mut body = Vec::with_capacity(m.body.len() * 8);
        for op in std::mem::take(&mut m.body) {
            match op {
                Op::PEncode { block } => {
                    let d = data(block)?;
                    body.extend(d.iter().map(|&q| Op::Reset { qubit: q }));
                    body.extend(pivots.iter().map(|&p| Op::Gate {
                        gate: Gate::H,
                        qubits: vec![d[p]],
                    }));
                    body.extend(cnots.iter().map(|&(c, t)| Op::Gate {
                        gate: Gate::Cnot,
                        qubits: vec![d[c], d[t]],
                    }));
                }
                Op::PTransversal { gate, blocks: bs } => {
                    if gate == Gate::I {
                        continue;
                    }
                    let ds: Vec<&Vec<u32>> =
                        bs.iter().map(|&b| data(b)).collect::<Result<_, _>>()?;
                    if ds.len() != gate.arity() {
                        return Err(fail(format!(
                            "transversal {} on {} blocks",
                            gate.name(),
                            ds.len()
                        )));
                    }
                    for j in 0..steane::N {
                        body.push(Op::Gate {
                            gate,
                            qubits: ds.iter().map(|d| d[j]).collect(),
                        });
                    }
                }
                Op::PSyndrome {
                    block,
                    x_bits,
                    z_bits,
                } => {
                    let d = data(block)?;
                    let a = blocks[block as usize]
                        .ancilla
                        .expect("encoded blocks have an ancilla");
                    for (k, &bit) in z_bits.iter().enumerate() {
                        body.push(Op::Reset { qubit: a });
                        body.extend(support(k).map(|j| Op::Gate {
                            gate: Gate::Cnot,
                            qubits: vec![d[j], a],
                        }));
                        body.push(Op::Measure { qubit: a, bit });
                    }
                    for (k, &bit) in x_bits.iter().enumerate() {
                        body.push(Op::Reset { qubit: a });
                        body.push(Op::Gate {
                            gate: Gate::H,
                            qubits: vec![a],
                        });
                        body.extend(support(k).map(|j| Op::Gate {
                            gate: Gate::Cnot,
                            qubits: vec![a, d[j]],
                        }));
                        body.push(Op::Gate {
                            gate: Gate::H,
                            qubits: vec![a],
                        });
                        body.push(Op::Measure { qubit: a, bit });
                    }
                }
                Op::PCorrect { pauli, block, word } => body.push(Op::CorrectAt {
                    pauli,
                    word,
                    qubits: data(block)?.clone(),
                }),
                Op::PMeasureData { block, bits } => {
                    let d = data(block)?;
                    body.extend(
                        d.iter()
                            .zip(&bits)
                            .map(|(&q, &b)| Op::Measure { qubit: q, bit: b }),
                    );
                }
                Op::PDataSyndrome { data: dbits, bits } => {
                    for (k, &bit) in bits.iter().enumerate() {
                        body.push(Op::Parity {
                            bit,
                            bits: support(k).map(|j| dbits[j]).collect(),
                        });
                    }
                }
                Op::PCond {
                    pauli,
                    block,
                    bits,
                    negate,
                } => {
                    for &q in data(block)? {
                        body.push(Op::Cond {
                            pauli,
                            qubit: q,
                            bits: bits.clone(),
                            negate,
                        });
                    }
                }
                Op::PNoise { channel, block } => {
                    body.extend(
                        data(block)?
                            .iter()
                            .map(|&q| Op::Noise { channel, qubit: q }),
                    );
                }
                op if matches!(crate::ir::dialect(&op), "lqec") => {
                    return Err(fail(format!(
                        "`{op}` is still logical: run steane-encode first"
                    )));
                }
                op => body.push(op),
            }
        }
        m.body = body;
        Ok(())
    }
}

/// `insert-sessions`.
pub struct InsertSessions;

impl Pass for InsertSessions {
    fn name(&self) -> &'static str {
        "insert-sessions"
    }

    fn run(&self, m: &mut Module) -> Result<(), CompileError> {
        let mut used: Vec<u32> = Vec::new();
        for op in &m.body {
            let c = match op {
                Op::Decode { coprocessor, .. } => Some(*coprocessor),
                Op::GetSession { session }
                | Op::Stage { session, .. }
                | Op::Post { session }
                | Op::Collect { session, .. } => Some(*session),
                _ => None,
            };
            if let Some(c) = c
                && !used.contains(&c)
            {
                used.push(c);
            }
        }
        used.sort_unstable();
        for &c in &used {
            if c as usize >= m.coprocessors.len() {
                return Err(fail(format!(
                    "the program uses coprocessor {c} but the placement has {}",
                    m.coprocessors.len()
                )));
            }
        }
        // Session slot s talks to coprocessor s.
        m.setup.extend(used.iter().map(|&c| Op::SessionOpen {
            session: c,
            coprocessor: c,
        }));
        m.teardown
            .extend(used.iter().rev().map(|&c| Op::SessionClose { session: c }));
        m.num_sessions = m.num_sessions.max(used.last().map_or(0, |c| c + 1));
        Ok(())
    }
}

/// `lower-decode`: each decode becomes a session's stage, post and collect. Consecutive decodes
/// on different coprocessors (the logical qubits of one syndrome-extraction round, decoded by
/// different coprocessors) are fanned out: every request is posted before the first reply is
/// collected, so the round costs the slowest coprocessor's round trip, not the sum. (A decode's
/// syndrome bits are measurement results, never another decode's answer, so posting it before
/// an earlier decode's collect changes no value.)
pub struct LowerDecode;

impl Pass for LowerDecode {
    fn name(&self) -> &'static str {
        "lower-decode"
    }

    fn run(&self, m: &mut Module) -> Result<(), CompileError> {
        let mut body = Vec::with_capacity(m.body.len());
        // The decodes of the fan-out being built: (session, word), in program order.
        let mut fan: Vec<(u32, Word)> = Vec::new();
        let flush = |body: &mut Vec<Op>, fan: &mut Vec<(u32, Word)>| {
            body.extend(
                fan.drain(..)
                    .map(|(session, word)| Op::Collect { session, word }),
            );
        };
        for op in std::mem::take(&mut m.body) {
            match op {
                Op::Decode {
                    bits,
                    decoder_id,
                    coprocessor,
                    word,
                } => {
                    if coprocessor >= m.num_sessions {
                        return Err(fail(format!(
                            "decode on coprocessor {coprocessor} has no session: run insert-sessions first"
                        )));
                    }
                    let s = coprocessor;
                    // One request per session in a fan-out.
                    if fan.iter().any(|&(f, _)| f == s) {
                        flush(&mut body, &mut fan);
                    }
                    body.extend([
                        Op::GetSession { session: s },
                        Op::Stage {
                            session: s,
                            decoder_id,
                            bits,
                        },
                        Op::Post { session: s },
                    ]);
                    fan.push((s, word));
                }
                op => {
                    flush(&mut body, &mut fan);
                    body.push(op);
                }
            }
        }
        flush(&mut body, &mut fan);
        m.body = body;
        Ok(())
    }
}

#[cfg(test)]
mod lower_decode_tests {
    use super::*;

    /// The transport ops of the body, as `post 0`, `collect 1`, … (stages and session look-ups
    /// left out), with a `|` for any other op.
    fn transport(m: &Module) -> Vec<String> {
        m.body
            .iter()
            .filter_map(|op| match op {
                Op::Post { session } => Some(format!("post {session}")),
                Op::Collect { session, .. } => Some(format!("collect {session}")),
                Op::GetSession { .. } | Op::Stage { .. } => None,
                _ => Some("|".into()),
            })
            .collect()
    }

    #[test]
    fn decodes_on_different_coprocessors_fan_out_and_one_coprocessor_gets_one_request_at_a_time() {
        let mut m = Module::new("fan", 2);
        m.num_sessions = 3;
        let (a, b) = (m.measure(0), m.measure(1));
        let w0 = m.decode(&[a], 0, 0);
        let w1 = m.decode(&[b], 0, 1);
        let w2 = m.decode(&[a, b], 1, 0); // coprocessor 0 again: a new fan-out
        let w3 = m.decode(&[b], 0, 2);
        m.measure(0); // ends the fan-out
        let w4 = m.decode(&[a], 0, 1);
        LowerDecode.run(&mut m).unwrap();
        assert_eq!(
            transport(&m),
            [
                "|",
                "|",
                "post 0",
                "post 1",
                "collect 0",
                "collect 1",
                "post 0",
                "post 2",
                "collect 0",
                "collect 2",
                "|",
                "post 1",
                "collect 1"
            ]
        );
        // Every answer is collected into its own word, each once.
        let words: Vec<Word> = m
            .body
            .iter()
            .filter_map(|op| match op {
                Op::Collect { word, .. } => Some(*word),
                _ => None,
            })
            .collect();
        assert_eq!(words, [w0, w1, w2, w3, w4]);
    }
}
