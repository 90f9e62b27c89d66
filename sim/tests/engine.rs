//! The verilated engine against the ERNIC and responder models. Every test skips with a
//! message when the crate was built without Verilator.

use backline_pacer::PacerConfig;
use backline_regmap as rm;
use backline_sim::{
    AxiError, HwhsSim, Mode, ModelConfig, Responder, RunConfig, RunReport, run::run,
};

fn sim(cfg: ModelConfig) -> Option<HwhsSim> {
    if !backline_sim::AVAILABLE {
        eprintln!("skipped: backline-sim was built without Verilator");
        return None;
    }
    Some(HwhsSim::new(cfg).unwrap())
}

fn quick_model() -> ModelConfig {
    ModelConfig {
        wire_latency_cycles: 30,
        service_cycles: 7,
        ..ModelConfig::default()
    }
}

fn run_cfg(mode: Mode, rounds: u64, model: ModelConfig) -> RunConfig {
    RunConfig {
        mode,
        pacer: PacerConfig::B2B,
        rounds,
        model,
        timeout_cycles: 200_000,
        fast_forward_above: Some(256),
    }
}

/// Every trace entry equals the model's round trip plus the documented overhead; the
/// pre-post of round k+1's WQE precedes round k's reply; nothing is lost.
fn check_rtts(rep: &RunReport, sim: &HwhsSim, rounds: u64) {
    assert_eq!(rep.model_errors, (0, None));
    assert_eq!(rep.rounds_committed, rounds);
    assert_eq!(rep.trace.len() as u64, rounds);
    assert_eq!(rep.timeouts, 0);
    assert_eq!(rep.mismatches, 0);
    assert_eq!(rep.fsm_overhead_cycles, rm::FSM_OVERHEAD_CYCLES);
    let recs = sim.model().records();
    for (k, &rtt) in rep.trace.iter().enumerate() {
        let model = recs[k].model_rtt_cycles().expect("reply recorded");
        assert_eq!(
            u64::from(rtt),
            model + u64::from(rm::FSM_OVERHEAD_CYCLES),
            "round {k}: engine {rtt} cycles, model {model}"
        );
        if k + 1 < rep.trace.len() {
            let next_wqe = recs[k + 1].wqe_write.unwrap();
            assert!(next_wqe < recs[k].reply_seq.unwrap(), "round {k}: no pre-post");
        }
    }
}

#[test]
fn registers_follow_the_map() {
    let Some(mut s) = sim(ModelConfig::default()) else { return };
    for r in rm::REGISTERS {
        let got = s.axi_read(r.offset);
        if r.access.readable() {
            assert_eq!(got, Ok(r.reset), "{} power-up value", r.name);
        } else {
            assert_eq!(got, Ok(0), "{} (write-only) reads 0", r.name);
        }
        if !r.access.writable() {
            assert!(
                matches!(s.axi_write(r.offset, 0x5A5A_5A5A), Err(AxiError::SlvErr { .. })),
                "{} is read-only",
                r.name
            );
        }
    }
    for addr in [0x20, 0x5C, 0x98, 0xFC, 0x100, 0xFFFC] {
        assert!(matches!(s.axi_read(addr), Err(AxiError::SlvErr { .. })), "{addr:#x}");
        assert!(matches!(s.axi_write(addr, 1), Err(AxiError::SlvErr { .. })), "{addr:#x}");
    }
    let st = s.axi_read(rm::STATUS).unwrap();
    assert_eq!(rm::STATUS_AXI_ERR.get(st), 1);
    s.axi_write(rm::CTRL, rm::CTRL_SOFT_RESET.bits(1)).unwrap();
    assert_eq!(rm::STATUS_AXI_ERR.get(s.axi_read(rm::STATUS).unwrap()), 0);
    for r in rm::REGISTERS.iter().filter(|r| r.access == rm::Access::ReadPureWrite) {
        s.axi_write(r.offset, 0x0000_0040 + r.offset).unwrap();
        assert_eq!(s.axi_read(r.offset).unwrap(), 0x40 + r.offset, "{}", r.name);
    }
}

#[test]
fn sw_loop_rtt_is_the_model_round_trip_plus_the_overhead() {
    let Some(mut s) = sim(ModelConfig::default()) else { return };
    let mut model = quick_model();
    model.responder = Responder::Steane;
    let cfg = run_cfg(Mode::SwLoop, 2_000, model);
    let rep = run(&mut s, &cfg, &mut |_, _| {}).unwrap();
    check_rtts(&rep, &s, 2_000);
}

#[test]
fn hw_loop_b2b_100k_rounds_rtt_exact() {
    let Some(mut s) = sim(ModelConfig::default()) else { return };
    let cfg = run_cfg(Mode::HwLoop, 100_000, quick_model());
    let rep = run(&mut s, &cfg, &mut |_, _| {}).unwrap();
    check_rtts(&rep, &s, 100_000);
    assert!(!rep.trace_full && !rep.trace_saturated);
    eprintln!(
        "100k b2b rounds: {} cycles in {:?} ({:.1} M cycles/s)",
        rep.sim_cycles,
        rep.wall,
        rep.sim_cycles as f64 / rep.wall.as_secs_f64() / 1e6
    );
}
