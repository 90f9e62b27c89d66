//! The GHZ program of the reference demos through every pass: golden IR dumps, the Steane
//! encoding checked on the VM, and whole runs against a real coprocessor over memcpy.

use std::sync::Arc;

use backline_compiler::ir::{Block, Code, Gate, Module, Op};
use backline_compiler::passes::{IMPLICIT_QEC, steane_transversal};
use backline_compiler::{NoiseDefaults, PassManager, compile, lower};
use backline_responder::{ResponderTable, Steane};
use backline_stabvm::{Endpoint, Pauli, RoundError, Rounds, SessionRounds, run};
use backline_transport::{CoprocessorSession, ServeOptions, SessionConfig, TransportKind};

fn ghz(n: u32) -> Module {
    let mut m = Module::new("ghz", n);
    m.qec_code = Some(Code::Steane);
    m.coprocessors = vec!["steane".into()];
    m.gate(Gate::H, &[0]);
    for q in 1..n {
        m.gate(Gate::Cnot, &[q - 1, q]);
    }
    let bits: Vec<u32> = (0..n).map(|q| m.measure(q)).collect();
    m.body.push(Op::Output { bits });
    m
}

#[test]
fn golden_dumps_after_every_pass() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/ghz");
    let bless = std::env::var_os("BACKLINE_BLESS").is_some();
    let mut dumps = vec![("00-input".to_string(), ghz(3).to_string())];
    let noise = NoiseDefaults {
        p: 0.001,
        ..Default::default()
    };
    let mut m = ghz(3);
    let pm = PassManager::parse(IMPLICIT_QEC, &noise).unwrap();
    pm.run(&mut m, |name, m| {
        dumps.push((format!("{:02}-{name}", dumps.len()), m.to_string()));
    })
    .unwrap();
    assert_eq!(dumps.len(), 7);
    for (name, text) in dumps {
        let path = format!("{dir}/{name}.ir");
        if bless {
            std::fs::write(&path, &text).unwrap();
        }
        let golden = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{path} missing: run with BACKLINE_BLESS=1"));
        assert!(
            golden == text,
            "{name} differs from {path} (BACKLINE_BLESS=1 regenerates):\n{text}"
        );
    }
}

/// Rounds answered in process by the Steane lookup.
#[derive(Default)]
struct Lookup(Vec<Vec<u8>>);
impl Rounds for Lookup {
    fn open(&mut self, _: u32, _: u32) -> Result<(), RoundError> {
        Ok(())
    }
    fn stage(&mut self, _: u32, _: u32, p: &[u8]) -> Result<(), RoundError> {
        self.0.push(p.to_vec());
        Ok(())
    }
    fn post(&mut self, _: u32) -> Result<(), RoundError> {
        Ok(())
    }
    fn collect(&mut self, _: u32) -> Result<u64, RoundError> {
        let p = self.0.pop().unwrap();
        Ok(backline_decoders::steane::decode(p[0]) as u64)
    }
    fn close(&mut self, _: u32) -> Result<(), RoundError> {
        Ok(())
    }
}

/// A module holding one encoded Steane block (qubits 0..7 data, 7 ancilla), ready for
/// physical-QEC ops.
fn one_block() -> Module {
    let mut m = Module::new("block", 8);
    m.blocks = vec![Block {
        code: Code::Steane,
        logical: 0,
        data: (0..7).collect(),
        ancilla: Some(7),
    }];
    m.body.push(Op::PEncode { block: 0 });
    m
}

#[test]
fn the_encoder_prepares_a_codeword_with_zero_syndrome() {
    let mut m = one_block();
    let x: Vec<u32> = (0..3).map(|_| m.new_bit()).collect();
    let z: Vec<u32> = (0..3).map(|_| m.new_bit()).collect();
    m.body.push(Op::PSyndrome {
        block: 0,
        x_bits: x.clone(),
        z_bits: z.clone(),
    });
    let data: Vec<u32> = (0..7).map(|_| m.new_bit()).collect();
    m.body.push(Op::PMeasureData {
        block: 0,
        bits: data.clone(),
    });
    let parity = m.new_bit();
    m.body.push(Op::Parity {
        bit: parity,
        bits: data.clone(),
    });
    m.body.push(Op::Output {
        bits: [x, z, vec![parity]].concat(),
    });
    let p = compile(m, "lower-to-gates", &Default::default(), |_, _| {}).unwrap();
    let s = run(&p, 200, 5, &mut Lookup::default()).unwrap();
    assert!(
        s.bits.iter().all(|b| !b),
        "zero syndrome and even parity in every shot"
    );
}

#[test]
fn transversal_s_mapping_implements_logical_s() {
    // |0_L⟩ → H_L → S_L (as mapped) gives |+i_L⟩, whose Y_L eigenvalue is +1. Measured
    // qubit by qubit in the Y basis, Y^⊗7 = −Y_L, so the outcome parity is odd.
    let mut m = one_block();
    m.body.push(Op::PTransversal {
        gate: Gate::H,
        blocks: vec![0],
    });
    m.body.push(Op::PTransversal {
        gate: steane_transversal(Gate::S),
        blocks: vec![0],
    });
    let mut bits = vec![];
    for q in 0..7 {
        m.gate(Gate::Sdg, &[q]);
        m.gate(Gate::H, &[q]);
        bits.push(m.measure(q));
    }
    let parity = m.new_bit();
    m.body.push(Op::Parity { bit: parity, bits });
    m.body.push(Op::Output { bits: vec![parity] });
    let p = compile(m, "lower-to-gates", &Default::default(), |_, _| {}).unwrap();
    let s = run(&p, 100, 9, &mut Lookup::default()).unwrap();
    assert!(
        s.bits.iter().all(|&b| b),
        "odd parity: Y_L = +1, so S_L was applied"
    );
}

fn all_equal(s: &[bool]) -> bool {
    s.iter().all(|&b| b == s[0])
}

#[test]
fn noiseless_ghz_gives_only_000_and_111() {
    let p = compile(ghz(3), IMPLICIT_QEC, &Default::default(), |_, _| {}).unwrap();
    let s = run(&p, 100, 1, &mut Lookup::default()).unwrap();
    let ones = (0..100).filter(|&k| s.shot(k)[0]).count();
    assert!((0..100).all(|k| all_equal(s.shot(k))));
    assert!((20..80).contains(&ones), "{ones} of 100 shots were 111");
}

#[test]
fn a_single_injected_error_is_corrected_by_the_cycle() {
    // An X on one data qubit right after the encoder, then a cycle: the logical result stays.
    for q in 0..7 {
        for pauli in [Pauli::X, Pauli::Z, Pauli::Y] {
            let mut m = Module::new("one", 1);
            m.qec_code = Some(Code::Steane);
            m.coprocessors = vec!["steane".into()];
            m.gate(Gate::X, &[0]);
            let b = m.measure(0);
            m.body.push(Op::Output { bits: vec![b] });
            let pm =
                PassManager::parse("logical-to-blocks,steane-encode", &Default::default()).unwrap();
            pm.run(&mut m, |_, _| {}).unwrap();
            // Insert the error after the transversal X (before the cycle's syndrome round).
            let at = m
                .body
                .iter()
                .position(|o| matches!(o, Op::PTransversal { .. }))
                .unwrap();
            let data = m.blocks[0].data.clone();
            let pm = PassManager::parse(
                "lower-to-gates,insert-sessions,lower-decode",
                &Default::default(),
            )
            .unwrap();
            m.body.insert(
                at + 1,
                Op::PNoise {
                    channel: backline_stabvm::Channel::BitFlip(0.0),
                    block: 0,
                },
            );
            pm.run(&mut m, |_, _| {}).unwrap();
            let pos = m
                .body
                .iter()
                .position(|o| matches!(o, Op::Noise { .. }))
                .unwrap();
            m.body.insert(
                pos,
                Op::Cond {
                    pauli,
                    qubit: data[q],
                    bits: vec![],
                    negate: true,
                },
            );
            let p = lower(&m).unwrap();
            let s = run(&p, 3, 2, &mut Lookup::default()).unwrap();
            assert!(
                s.bits.iter().all(|&b| b),
                "{pauli:?} on data qubit {q} was corrected"
            );
        }
    }
}

/// A memcpy coprocessor serving the Steane lookup for both check types.
fn steane_server(key: &str) -> (CoprocessorSession, Endpoint) {
    let cfg = SessionConfig::new(TransportKind::Memcpy);
    let mut t = ResponderTable::new();
    t.insert(0, Arc::new(Steane));
    t.insert(1, Arc::new(Steane));
    let s = CoprocessorSession::open(key, cfg.clone(), "", 0, &t, ServeOptions::default()).unwrap();
    (
        s,
        Endpoint {
            key: format!("{key}-controller"),
            peer: key.into(),
            config: cfg,
        },
    )
}

#[test]
fn every_decode_is_a_round_to_a_real_coprocessor_and_decoding_helps() {
    let (_srv, ep) = steane_server("compiler-ghz");
    let shots = 600;
    let noise = NoiseDefaults {
        p: 0.01,
        ..Default::default()
    };
    let rate = |pipeline: &str| {
        let p = compile(ghz(3), pipeline, &noise, |_, _| {}).unwrap();
        let mut r = SessionRounds::new(vec![ep.clone()]);
        let s = run(&p, shots, 11, &mut r).unwrap();
        let bad = (0..shots as usize)
            .filter(|&k| !all_equal(s.shot(k)))
            .count();
        (bad as f64 / shots as f64, r.rtts_ns.len())
    };
    let (with, rounds) = rate(IMPLICIT_QEC);
    // 5 cycles × 2 decodes + 3 final measurements per shot.
    assert_eq!(rounds, 13 * shots as usize);
    let (without, none) = rate(
        "logical-to-blocks,inject-noise,steane-encode{decode=false},lower-to-gates,insert-sessions,lower-decode",
    );
    assert_eq!(none, 0);
    assert!(
        with < without,
        "decoding helps: {with} with vs {without} without"
    );
}

#[test]
fn pipeline_and_order_errors_are_clear() {
    let e = PassManager::parse("logical-to-blocks,frobnicate", &Default::default()).unwrap_err();
    assert!(e.to_string().contains("unknown pass `frobnicate`"), "{e}");
    let e = PassManager::parse("inject-noise{p=2}", &Default::default()).unwrap_err();
    assert!(e.to_string().contains("bad option p=2"), "{e}");
    let e = compile(ghz(2), "steane-encode", &Default::default(), |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("run logical-to-blocks first"), "{e}");
    let e = compile(ghz(2), "logical-to-blocks", &Default::default(), |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("cannot run on the VM"), "{e}");
    let mut no_cop = ghz(2);
    no_cop.coprocessors.clear();
    let e = compile(no_cop, IMPLICIT_QEC, &Default::default(), |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("the placement has none"), "{e}");
}
