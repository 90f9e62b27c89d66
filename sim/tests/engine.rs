//! The verilated engine against the ERNIC and responder models. Every test skips with a
//! message when the crate was built without Verilator.

use backline_pacer::PacerConfig;
use backline_regmap as rm;
use backline_sim::{
    AxiError, HwhsSim, LossPolicy, Mode, ModelConfig, Responder, RunConfig, RunReport,
    run::{run, run_until},
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
        fabric_latency_cycles: 30,
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
        workload: None,
        on_loss: LossPolicy::Stop,
    }
}

/// Every trace entry equals the model's round trip plus the documented overhead; the
/// pre-post of round k+1's WQE follows round k's completion at once, and so precedes round
/// k's reply whenever the completion does; nothing is lost. Returns how many rounds showed
/// the pre-post before the reply.
fn check_rtts(rep: &RunReport, sim: &HwhsSim, rounds: u64) -> usize {
    assert_eq!(rep.model_errors, (0, None));
    assert_eq!(rep.rounds_committed, rounds);
    assert_eq!(rep.trace.len() as u64, rounds);
    assert_eq!(rep.timeouts, 0);
    assert_eq!(rep.mismatches, 0);
    assert_eq!(rep.fsm_overhead_cycles, rm::FSM_OVERHEAD_CYCLES);
    let recs = sim.model().records();
    let mut prepost_before_reply = 0;
    for (k, &rtt) in rep.trace.iter().enumerate() {
        let model = recs[k].model_rtt_cycles().expect("reply recorded");
        assert_eq!(
            u64::from(rtt),
            model + u64::from(rm::FSM_OVERHEAD_CYCLES),
            "round {k}: engine {rtt} cycles, model {model}"
        );
        if k + 1 < rep.trace.len() {
            // Round k+1's WQE goes out the cycle after round k's completion...
            let next_wqe = recs[k + 1].wqe_write.unwrap();
            assert_eq!(
                next_wqe,
                recs[k].completion.unwrap() + 1,
                "round {k}: pre-post"
            );
            // ...which, when the completion comes early enough, is before round k's reply.
            if recs[k].completion.unwrap() + 1 < recs[k].reply_seq.unwrap() {
                assert!(
                    next_wqe < recs[k].reply_seq.unwrap(),
                    "round {k}: no pre-post"
                );
                prepost_before_reply += 1;
            }
        }
    }
    prepost_before_reply
}

#[test]
fn registers_follow_the_map() {
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    for r in rm::REGISTERS {
        let got = s.axi_read(r.offset);
        if r.access.readable() {
            assert_eq!(got, Ok(r.reset), "{} power-up value", r.name);
        } else {
            assert_eq!(got, Ok(0), "{} (write-only) reads 0", r.name);
        }
        if !r.access.writable() {
            assert!(
                matches!(
                    s.axi_write(r.offset, 0x5A5A_5A5A),
                    Err(AxiError::SlvErr { .. })
                ),
                "{} is read-only",
                r.name
            );
        }
    }
    for addr in [0x20, 0x5C, 0x98, 0xFC, 0x100, 0xFFFC] {
        assert!(
            matches!(s.axi_read(addr), Err(AxiError::SlvErr { .. })),
            "{addr:#x}"
        );
        assert!(
            matches!(s.axi_write(addr, 1), Err(AxiError::SlvErr { .. })),
            "{addr:#x}"
        );
    }
    let st = s.axi_read(rm::STATUS).unwrap();
    assert_eq!(rm::STATUS_AXI_ERR.get(st), 1);
    s.axi_write(rm::CTRL, rm::CTRL_SOFT_RESET.bits(1)).unwrap();
    assert_eq!(rm::STATUS_AXI_ERR.get(s.axi_read(rm::STATUS).unwrap()), 0);
    for r in rm::REGISTERS
        .iter()
        .filter(|r| r.access == rm::Access::ReadPureWrite)
    {
        s.axi_write(r.offset, 0x0000_0040 + r.offset).unwrap();
        assert_eq!(s.axi_read(r.offset).unwrap(), 0x40 + r.offset, "{}", r.name);
    }
}

#[test]
fn sw_loop_rtt_is_the_model_round_trip_plus_the_overhead() {
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    let mut model = quick_model();
    model.responder = Responder::Steane;
    // With jitter the round trips differ from round to round (a completion may even come
    // after the reply); the engine must still record each one exactly.
    model.jitter_cycles = 40;
    let cfg = run_cfg(Mode::SwLoop, 2_000, model);
    let rep = run(&mut s, &cfg, &mut |_, _| {}).unwrap();
    check_rtts(&rep, &s, 2_000);
    let distinct: std::collections::BTreeSet<u16> = rep.trace.iter().copied().collect();
    assert!(distinct.len() > 20, "jitter shows in the RTTs");
}

#[test]
fn hw_loop_b2b_100k_rounds_rtt_exact() {
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    let cfg = run_cfg(Mode::HwLoop, 100_000, quick_model());
    let rep = run(&mut s, &cfg, &mut |_, _| {}).unwrap();
    // Fixed latency: the completion always precedes the reply, so every round shows the
    // next WQE written before its own reply lands.
    assert_eq!(check_rtts(&rep, &s, 100_000), 99_999);
    assert!(!rep.trace_full && !rep.trace_saturated);
    // hw-loop: every correction went back to the stimulus side (DAT_TX).
    assert_eq!(s.model().stats().corrections, 100_000);
    eprintln!(
        "100k b2b rounds: {} cycles in {:?} ({:.1} M cycles/s)",
        rep.sim_cycles,
        rep.wall,
        rep.sim_cycles as f64 / rep.wall.as_secs_f64() / 1e6
    );
}

/// A run asked to stop ends at a round boundary and is read out like a complete one: every
/// round that ran is in the counters and the trace, each exact, and the report says it was
/// interrupted.
#[test]
fn an_interrupted_run_reports_the_rounds_it_ran() {
    for (mode, polls) in [(Mode::SwLoop, 300), (Mode::HwLoop, 40)] {
        let Some(mut s) = sim(ModelConfig::default()) else {
            return;
        };
        let cfg = run_cfg(mode, 10_000_000, quick_model());
        let calls = std::cell::Cell::new(0u64);
        let stop = || {
            calls.set(calls.get() + 1);
            calls.get() > polls
        };
        let rep = run_until(&mut s, &cfg, &mut |_, _| {}, &stop).unwrap();
        assert!(rep.interrupted, "{mode:?}");
        let done = rep.rounds_committed;
        assert!(done > 0 && done < 10_000_000, "{mode:?}: {done} rounds");
        if mode == Mode::SwLoop {
            // Asked before each round: exactly the rounds before the stop.
            assert_eq!(done, polls);
        }
        check_rtts(&rep, &s, done);
        assert_eq!(rep.quiet_cycles.len() as u64, done);
    }
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    let rep = run(
        &mut s,
        &run_cfg(Mode::HwLoop, 100, quick_model()),
        &mut |_, _| {},
    )
    .unwrap();
    assert!(!rep.interrupted);
}

/// The shared pacer vectors, parsed: (name, settings, [(state, interval)]).
/// A named vector set: settings and (state, interval) rows.
type VectorSet = (String, PacerConfig, Vec<(u32, u32)>);

fn vectors() -> Vec<VectorSet> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../hdl/pacer/vectors/pacer.txt"
    ))
    .unwrap();
    let num = |s: &str| match s.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap(),
    };
    let mut sets: Vec<VectorSet> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w[0] == "set" {
            let cfg = PacerConfig {
                freq: num(w[3]),
                span: num(w[5]),
                seed: num(w[7]),
            };
            sets.push((w[1].to_string(), cfg, Vec::new()));
        } else {
            sets.last_mut().unwrap().2.push((num(w[1]), num(w[2])));
        }
    }
    sets
}

/// The RTL pacer, run in hw-loop with fast-forward, draws exactly the checked-in vectors of
/// the reference cadence; and over 10,000 intervals its mean is within 0.5 % of the uniform
/// expectation and 20 equal bins pass a χ² test (19 degrees of freedom, 99.9 %: 43.82).
#[test]
fn rtl_pacer_draws_the_vectors_and_is_uniform() {
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    let (_, cfg, rows) = vectors()
        .into_iter()
        .find(|(n, _, _)| n == "reference_random_delayed")
        .unwrap();
    assert_eq!(cfg, PacerConfig::REFERENCE_RANDOM_DELAYED);
    let n = 10_000u64;
    let mut rc = run_cfg(Mode::HwLoop, n, quick_model());
    rc.pacer = cfg;
    let rep = run(&mut s, &rc, &mut |_, _| {}).unwrap();
    assert_eq!(rep.rounds_committed, n);
    assert_eq!(rep.model_errors, (0, None));
    let intervals = &rep.quiet_cycles;
    for (k, &(_, want)) in rows.iter().enumerate() {
        assert_eq!(intervals[k], u64::from(want), "interval {k}");
    }
    // Every interval was observed on the RTL (none filled in from the software rule): the
    // skipped cycles add up to the intervals minus the few simulated cycles of each period.
    let total: u64 = intervals.iter().sum();
    assert!(rep.skipped_cycles > total - n * 400 && rep.skipped_cycles <= total);
    let expect = cfg.expected_mean_cycles();
    let mean = total as f64 / n as f64;
    let rel = (mean - expect).abs() / expect;
    let mut bins = [0u32; 20];
    for &i in intervals {
        bins[((i - u64::from(cfg.freq)) * 20 / (u64::from(cfg.span) + 1)) as usize] += 1;
    }
    let e = n as f64 / 20.0;
    let chi2: f64 = bins.iter().map(|&o| (f64::from(o) - e).powi(2) / e).sum();
    eprintln!(
        "RTL pacer, 10,000 intervals: mean {mean:.0} cycles (expected {expect:.0}, off {:.3} %), chi2 {chi2:.2}",
        rel * 100.0
    );
    assert!(rel < 0.005, "mean off by {rel}");
    assert!(chi2 < 43.82, "chi2 {chi2} bins {bins:?}");
    // The RTT never includes the quiet period.
    check_rtts(&rep, &s, n);
}

/// The small-span vectors are short enough to simulate every idle cycle.
#[test]
fn rtl_pacer_small_span_without_fast_forward() {
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    let (_, cfg, rows) = vectors()
        .into_iter()
        .find(|(n, _, _)| n == "small_span")
        .unwrap();
    let mut rc = run_cfg(Mode::HwLoop, 200, quick_model());
    rc.pacer = cfg;
    rc.fast_forward_above = None;
    let rep = run(&mut s, &rc, &mut |_, _| {}).unwrap();
    check_rtts(&rep, &s, 200);
    // The gap between consecutive doorbells is the engine's RTT of the earlier round, plus
    // the interval the pacer drew for the later one, plus a fixed number of FSM cycles: the
    // same for every round, so the quiet period is exactly the shared rule's interval.
    let recs = s.model().records();
    let gap = |k: usize| recs[k].doorbell.unwrap() - recs[k - 1].doorbell.unwrap();
    let fixed = gap(1) - u64::from(rep.trace[0]) - u64::from(rows[1].1);
    for (k, &(_, interval)) in rows.iter().enumerate().take(200).skip(1) {
        assert_eq!(
            gap(k),
            u64::from(rep.trace[k - 1]) + u64::from(interval) + fixed,
            "round {k}"
        );
        assert_eq!(rep.quiet_cycles[k], u64::from(interval));
    }
    assert!(fixed < 40, "{fixed} FSM cycles between rounds");
}

/// A reply slower than 0xFFFF cycles is recorded as 0xFFFF and sets `saturated`; a reply that
/// never comes ends in the timeout, is recorded as 0, and the engine takes the next round.
#[test]
fn saturation_and_timeout() {
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    let mut m = quick_model();
    m.service_cycles = 70_000;
    let rep = run(&mut s, &run_cfg(Mode::SwLoop, 2, m), &mut |_, _| {}).unwrap();
    assert!(rep.trace_saturated && !rep.trace_full);
    assert_eq!(rep.trace, vec![0xFFFF, 0xFFFF]);
    assert!(rep.model_rtt_cycles[0].unwrap() > 0xFFFF);
    assert_eq!(
        s.axi_read(rm::LAST_RTT).unwrap() as u64,
        rep.model_rtt_cycles[1].unwrap() + u64::from(rm::FSM_OVERHEAD_CYCLES)
    );

    let mut m = quick_model();
    m.responder = Responder::Silent;
    let mut rc = run_cfg(Mode::SwLoop, 3, m);
    rc.timeout_cycles = 500;
    let rep = run(&mut s, &rc, &mut |_, _| {}).unwrap();
    assert_eq!((rep.timeouts, rep.rounds_committed), (3, 3));
    assert_eq!(rep.trace, vec![0, 0, 0]);
    let st = s.axi_read(rm::STATUS).unwrap();
    assert_eq!(rm::STATUS_TIMEOUT.get(st), 1);
    assert_eq!(rm::STATUS_REPLY_SEEN.get(st), 0);
    // The responder comes back: the next round completes.
    s.model_mut().config.responder = Responder::Echo;
    s.axi_write(rm::CTRL, rm::CTRL_START.bits(1)).unwrap();
    s.run_cycles(400);
    let st = s.axi_read(rm::STATUS).unwrap();
    assert_eq!(
        (rm::STATUS_DONE.get(st), rm::STATUS_REPLY_SEEN.get(st)),
        (1, 1)
    );
    assert_eq!(s.axi_read(rm::ROUND_COUNT).unwrap(), 4);
}

/// A wrong reply is counted as a mismatch by the engine.
#[test]
fn mismatches_are_counted() {
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    // Expected replies are Steane corrections, but the responder echoes.
    let mut m = quick_model();
    m.responder = Responder::Steane;
    let rc = run_cfg(Mode::SwLoop, 16, m);
    backline_sim::run::configure(&mut s, &rc).unwrap();
    s.model_mut().config.responder = Responder::Echo;
    for _ in 0..16 {
        s.axi_write(rm::CTRL, rm::CTRL_START.bits(1)).unwrap();
        while rm::STATUS_DONE.get(s.axi_read(rm::STATUS).unwrap()) == 0 {
            s.run_cycles(16);
        }
    }
    assert_eq!(s.axi_read(rm::ROUND_COUNT).unwrap(), 16);
    // Syndromes 0..7 twice: echo equals the Steane correction only where s == correction(s).
    let wrong = (0..16u32)
        .filter(|&k| Responder::Echo.reply_word0(k % 8) != Responder::Steane.reply_word0(k % 8))
        .count() as u32;
    assert!(wrong > 0);
    assert_eq!(s.axi_read(rm::MISMATCH_COUNT).unwrap(), wrong);
}

/// 2^20 rounds fill the trace RAM: `full` is set, recording stops, and the rounds after it are
/// still run (and counted) without being recorded.
#[test]
fn trace_ram_fills_and_stops() {
    let Some(mut s) = sim(ModelConfig::default()) else {
        return;
    };
    let mut m = quick_model();
    m.fabric_latency_cycles = 0;
    m.service_cycles = 0;
    m.record_rounds = false;
    let extra = 10;
    let rounds = u64::from(rm::TRACE_DEPTH) + extra;
    let rep = run(&mut s, &run_cfg(Mode::HwLoop, rounds, m), &mut |_, _| {}).unwrap();
    assert_eq!(rep.rounds_committed, rounds);
    assert!(rep.trace_full);
    assert!(!rep.trace_saturated);
    assert_eq!(rep.trace.len() as u64, u64::from(rm::TRACE_DEPTH));
    assert!(
        rep.trace.iter().all(|&r| r > 0 && r == rep.trace[1]),
        "{:?}",
        &rep.trace[..4]
    );
    eprintln!(
        "trace fill: {rounds} rounds, {} cycles in {:?}",
        rep.sim_cycles, rep.wall
    );
}
