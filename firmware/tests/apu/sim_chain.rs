//! The whole chain on the simulated board through the library: the same `Board` code the
//! board runs, over the `sim:` backend, against the Verilator HWHS and the ERNIC model.

use std::time::Duration;

use backline_apu::bringup::{documented_order, plain_name};
use backline_apu::ernic::Layout;
use backline_apu::mmio::sim::SimMmio;
use backline_apu::{Access, Block, Board, Error, Expect, Mmio, MmioError, Mode, RunSpec};
use backline_bench::Trace;
use backline_bench::trace::RoundStatus;
use backline_pacer::{Pacer, PacerConfig};
use backline_regmap as rm;
use backline_sim::Responder;

use super::util::{connect, scratch, sim_board};

/// The model's round trip with the default sim-board settings: two fabric legs of the
/// reference's one-way latency and 200 ns of service, plus the model's fetch, read and
/// delivery cycles and the engine's FSM overhead — bounded from below by the legs and the
/// service.
const MIN_RTT_CYCLES: u64 =
    2 * rm::ns_to_cycles(backline_sim::model::REFERENCE_ONE_WAY_NS) + rm::ns_to_cycles(200);

fn writes(log: &[Access]) -> Vec<(Block, String)> {
    log.iter()
        .filter(|a| a.op == backline_apu::mmio::Op::Write)
        .map(|a| (a.block, plain_name(a)))
        .collect()
}

#[test]
fn bring_up_follows_the_documented_order_as_the_board_recorded_it() {
    for l in Layout::ALL {
        bring_up_follows_the_documented_order_in(l);
    }
}

fn bring_up_follows_the_documented_order_in(l: Layout) {
    let Some((sim, cfg)) = sim_board(&format!("order-{l}"), |o| o.layout = l) else {
        return;
    };
    let mut b = Board::open(connect(&sim)).unwrap();
    assert_eq!(b.layout(), l);
    b.setup(&cfg).unwrap();
    let log = b.mmio().log().unwrap();
    // The identification was read first, before any write: v4.x's version register, or
    // (no register there: a bus error, not logged) v3.x's reserved words.
    let probes: Vec<u32> = match l {
        Layout::V4 => vec![backline_apu::ernic::VERSION_OFFSET],
        Layout::V3 => backline_apu::ernic::V3_PROBES.to_vec(),
    };
    for (k, off) in probes.iter().enumerate() {
        assert_eq!((log[k].block, log[k].offset), (Block::Ernic, *off));
        assert_eq!(log[k].op, backline_apu::mmio::Op::Read);
    }
    let want: Vec<(Block, String)> = documented_order(l)
        .iter()
        .map(|(b, n)| (*b, n.to_string()))
        .collect();
    assert_eq!(writes(&log), want);
    // Every ERNIC write hit a register of this layout.
    for a in log
        .iter()
        .filter(|a| a.block == Block::Ernic && a.op == backline_apu::mmio::Op::Write)
    {
        assert!(l.locate(a.offset).is_some(), "{l}: {a}");
    }
    // QPCONF of the data QP is the last ERNIC write, QP 1 was never touched.
    let ernic_writes: Vec<&Access> = log
        .iter()
        .filter(|a| a.block == Block::Ernic && a.op == backline_apu::mmio::Op::Write)
        .collect();
    assert_eq!(
        ernic_writes.last().unwrap().register(),
        "ERNIC QPCONF[QP 2]"
    );
    assert!(!log.iter().any(|a| a.register().contains("[QP 1]")));
    assert!(b.mmio().violations().unwrap().is_empty());
    let st = b.mmio().state().unwrap();
    assert_eq!((st.enabled_qps.as_slice(), st.handshakes), (&[2u32][..], 1));
    // The documented order is also the one docs/firmware.md lists.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/firmware.md"))
        .unwrap();
    let mut at = doc
        .find("## The register-write order")
        .expect("docs/firmware.md has a section `## The register-write order`");
    for (block, name) in documented_order(l) {
        let needle = format!("`{name}`");
        let found = doc[at..].find(&needle).unwrap_or_else(|| {
            panic!("docs/firmware.md does not list {block} {name} after position {at}")
        });
        at += found + needle.len();
    }
}

#[test]
fn single_rounds_carry_the_callers_payload_through_the_peer() {
    let Some((sim, cfg)) = sim_board("rounds", |o| o.responder = Responder::Steane) else {
        return;
    };
    let mut b = Board::open(connect(&sim)).unwrap();
    b.setup(&cfg).unwrap();
    b.begin_rounds().unwrap();
    for s in 0..8u32 {
        let r = b.round(&s.to_le_bytes(), 0).unwrap();
        assert!(!r.timed_out);
        assert_eq!(r.reply, Expect::Steane.reply_for(s), "syndrome {s}");
        assert!(
            u64::from(r.rtt_cycles) >= MIN_RTT_CYCLES,
            "{}",
            r.rtt_cycles
        );
        // Reply header word 2: status ok (0), kind reply (2), wire version 1.
        assert_eq!(r.reply_status >> 16, 0x0102, "{:#x}", r.reply_status);
    }
    let t = b.read_trace().unwrap();
    assert_eq!(t.rows.len(), 8);
}

fn check_trace(t: &Trace, rounds: usize, mode: &str) -> u64 {
    assert_eq!(t.rows.len(), rounds);
    assert_eq!(t.meta("mode"), Some(mode));
    assert_eq!(t.meta("source"), Some("sim-board"));
    let first = t.rows[0].rtt_cycles.unwrap();
    assert!(first >= MIN_RTT_CYCLES, "{first}");
    for (k, r) in t.rows.iter().enumerate() {
        assert_eq!(r.round, k as u64);
        assert_eq!(r.status, RoundStatus::Ok, "round {k}");
        assert_eq!(r.cold, k == 0);
        // No jitter configured: every round trip is the same number of cycles.
        assert_eq!(r.rtt_cycles, Some(first), "round {k}");
        assert_eq!(r.rtt_ns, rm::cycles_to_ns(first) as f64);
    }
    first
}

#[test]
fn sw_loop_and_hw_loop_runs_and_the_trace_round_trip_through_csv() {
    for l in Layout::ALL {
        runs_in(l);
    }
}

/// 3,000 sw-loop rounds, then 10,000 hw-loop rounds, on a board with an ERNIC of `l`.
fn runs_in(l: Layout) {
    let Some((sim, cfg)) = sim_board(&format!("runs-{l}"), |o| o.layout = l) else {
        return;
    };
    let mut b = Board::open(connect(&sim)).unwrap();
    b.setup(&cfg).unwrap();
    let mut spec = RunSpec::b2b(Mode::SwLoop, 3000);
    spec.expect = Expect::Echo;
    let mut calls = Vec::new();
    let rep = b.run(&spec, &mut |d, t| calls.push((d, t))).unwrap();
    assert_eq!(
        (rep.rounds_committed, rep.timeouts, rep.mismatches),
        (3000, 0, 0)
    );
    assert_eq!(calls.last(), Some(&(3000, 3000)));
    assert!(
        calls.len() >= 3,
        "progress was reported {} times",
        calls.len()
    );
    let sw = check_trace(&b.read_trace().unwrap(), 3000, "sw-loop");
    spec.mode = Mode::HwLoop;
    spec.rounds = 10_000;
    let rep = b.run(&spec, &mut |_, _| {}).unwrap();
    assert_eq!(
        (rep.rounds_committed, rep.timeouts, rep.mismatches),
        (10_000, 0, 0),
        "{l}"
    );
    let t = b.read_trace().unwrap();
    let hw = check_trace(&t, 10_000, "hw-loop");
    // The same fabric in both modes: the engine measures the same round trip.
    assert_eq!(sw, hw);
    let path = scratch("runs-csv").join("t.csv");
    t.save(&path).unwrap();
    let back = Trace::load(&path).unwrap();
    assert_eq!(back, t);
    let st = b.mmio().state().unwrap();
    assert_eq!(st.ernic_layout, l.describe());
    let port = st.port;
    assert_eq!(port.errors, 0, "{:?}", port.first_error);
    // Counters of the port model restart with the engine's soft reset at each run.
    assert_eq!(port.replies, 10_000);
}

#[test]
fn jitter_spreads_the_round_trips_within_its_bounds() {
    let Some((sim, cfg)) = sim_board("jitter", |o| o.jitter_cycles = 20) else {
        return;
    };
    let mut b = Board::open(connect(&sim)).unwrap();
    b.setup(&cfg).unwrap();
    b.run(&RunSpec::b2b(Mode::HwLoop, 2000), &mut |_, _| {})
        .unwrap();
    let t = b.read_trace().unwrap();
    let rtts: Vec<u64> = t.rows.iter().map(|r| r.rtt_cycles.unwrap()).collect();
    let (lo, hi) = (*rtts.iter().min().unwrap(), *rtts.iter().max().unwrap());
    assert!(hi > lo, "no spread: {lo}");
    // Two legs of at most 20 extra cycles each.
    assert!(hi - lo <= 40, "{lo} .. {hi}");
}

#[test]
fn random_delayed_runs_fast_forward_and_record_the_rtl_pacers_intervals() {
    let Some((sim, cfg)) = sim_board("paced", |_| {}) else {
        return;
    };
    let mut b = Board::open(connect(&sim)).unwrap();
    b.setup(&cfg).unwrap();
    let pacer = PacerConfig {
        freq: 1_000_000,
        span: 0x000F_FFFF,
        seed: 7,
    };
    let mut spec = RunSpec::b2b(Mode::HwLoop, 300);
    spec.pacer = pacer;
    spec.fast_forward = true;
    let rep = b.run(&spec, &mut |_, _| {}).unwrap();
    assert_eq!((rep.rounds_committed, rep.timeouts), (300, 0));
    assert!(rep.skipped_cycles > 300 * 900_000, "{}", rep.skipped_cycles);
    let t = b.read_trace().unwrap();
    assert_eq!(
        t.meta("cadence"),
        Some("random-delayed freq=1000000 span=0xfffff seed=0x7 clock=200 MHz")
    );
    // The quiet column follows the pacer rule, and the RTL pacer drew the same last interval.
    let mut sw = Pacer::new(pacer).unwrap();
    for r in &t.rows {
        let q = u64::from(sw.next_interval_cycles());
        assert_eq!(r.quiet_ns, rm::cycles_to_ns(q) as f64);
    }
    let last = b.mmio().read32(Block::Hwhs, rm::PACER_LAST).unwrap();
    assert_eq!(
        t.rows.last().unwrap().quiet_ns,
        rm::cycles_to_ns(u64::from(last)) as f64
    );
    // The quiet periods are not part of the RTT.
    assert!(
        t.rows
            .iter()
            .all(|r| r.rtt_cycles.unwrap() < 2 * MIN_RTT_CYCLES)
    );
    // sw-loop with the same cadence: the host's waits are skipped, the rounds still run.
    spec.mode = Mode::SwLoop;
    spec.rounds = 100;
    let rep = b.run(&spec, &mut |_, _| {}).unwrap();
    assert_eq!((rep.rounds_committed, rep.timeouts), (100, 0));
}

#[test]
fn a_fatal_qp_stops_runs_with_a_named_error_and_setup_recovers_it() {
    let Some((sim, mut cfg)) = sim_board("fatal", |_| {}) else {
        return;
    };
    cfg.hwhs.timeout_us = 20;
    let mut b = Board::open(connect(&sim)).unwrap();
    b.setup(&cfg).unwrap();
    assert_eq!(
        b.run(&RunSpec::b2b(Mode::SwLoop, 100), &mut |_, _| {})
            .unwrap()
            .timeouts,
        0
    );
    // The QP fails while a run is going on (a second client plays the fault).
    backline_apu::hwhs::prepare(b.mmio(), &RunSpec::b2b(Mode::SwLoop, 20)).unwrap();
    let mut other = connect(&sim);
    other.inject_qp_fatal(2).unwrap();
    let rep =
        backline_apu::hwhs::run(b.mmio(), &RunSpec::b2b(Mode::SwLoop, 20), &mut |_, _| {}).unwrap();
    assert_eq!((rep.rounds_committed, rep.timeouts), (20, 20));
    let t = b.read_trace().unwrap();
    assert!(t.rows.iter().all(|r| r.status == RoundStatus::Timeout));
    // The next run refuses to start, and says what to do.
    let e = b
        .run(&RunSpec::b2b(Mode::SwLoop, 10), &mut |_, _| {})
        .unwrap_err();
    assert!(matches!(e, Error::QpFatal { qpn: 2, .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("run `backline-apu setup --config FILE` again"),
        "{e}"
    );
    let info = b.info().unwrap();
    assert!(
        info.qps[0].fatal && backline_apu::ernic::global::INT_FATAL_ERR.get(info.intsts) == 1,
        "{:#x}",
        info.intsts
    );
    // Recovery: tear down (QPCONF = 0 clears the error state), hand-shake, bring up again.
    b.mmio().clear_log().unwrap();
    let rep = b.recover(&cfg).unwrap();
    assert_eq!(rep.torn_down, vec![2]);
    let log = b.mmio().log().unwrap();
    let w = writes(&log);
    assert_eq!(w[0], (Block::Ernic, "QPCONF".to_string()));
    let rep = b
        .run(&RunSpec::b2b(Mode::HwLoop, 500), &mut |_, _| {})
        .unwrap();
    assert_eq!((rep.rounds_committed, rep.timeouts), (500, 0));
}

#[test]
fn the_simulated_board_refuses_what_a_real_one_would_silently_get_wrong() {
    let Some((sim, cfg)) = sim_board("refusals", |_| {}) else {
        return;
    };
    let mut m: SimMmio = connect(&sim);
    // Start before any bring-up.
    let e = m
        .write32(Block::Hwhs, rm::CTRL, rm::CTRL_START.bits(1))
        .unwrap_err();
    assert!(matches!(e, MmioError::Refused { .. }), "{e:?}");
    assert!(e.to_string().contains("QPCONF[QP 2].enable = 0"), "{e}");
    // QP 1 and a read-only register.
    let l = Layout::DEFAULT;
    let e = m
        .write32(
            Block::Ernic,
            l.qp_offset(1, backline_apu::ernic::qp::SQBA),
            0x1000,
        )
        .unwrap_err();
    assert!(e.to_string().contains("QP 1 is the management QP"), "{e}");
    let e = m
        .write32(
            Block::Ernic,
            l.g(backline_apu::ernic::global::ERRBUFWPTR),
            0,
        )
        .unwrap_err();
    assert!(
        matches!(e, MmioError::Bus { .. }) && e.to_string().contains("read-only"),
        "{e}"
    );
    let v = m.violations().unwrap();
    assert_eq!(v.len(), 2, "{v:?}");
    // A run on a board that is not set up names the register and what to do.
    let mut b = Board::open(m).unwrap();
    let e = b
        .run(&RunSpec::b2b(Mode::SwLoop, 10), &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("QPCONF[QP 2] = 0x00000000: QP 2, which the HWHS posts to, is not enabled"),
        "{e}"
    );
    // After setup, an HWHS pointed at another SQ than the QP's is refused at start.
    b.setup(&cfg).unwrap();
    b.mmio()
        .write32(Block::Hwhs, rm::SQ_BASE, 0xA402_1000)
        .unwrap();
    let e = b
        .run(&RunSpec::b2b(Mode::SwLoop, 10), &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("SQ_BASE = 0xa4021000, but SQBA[QP 2] = 0xa4020000"),
        "{e}"
    );
    // The adapter's doorbell pointed at the v3.x layout's SQPI on this v4.x ERNIC.
    b.setup(&cfg).unwrap();
    let v3_sqpi = backline_apu::bringup::doorbell_address(Layout::V3, 2);
    b.mmio().write32(Block::Hwhs, rm::DB_ADDR, v3_sqpi).unwrap();
    let e = b
        .run(&RunSpec::b2b(Mode::SwLoop, 10), &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("DB_ADDR = 0xa0220338, but SQPI[QP 2] of this v4.x ERNIC is at 0xa0380138"),
        "{e}"
    );
    // A wrong rkey gets through the bring-up but not onto the wire: the data path fails.
    let mut peer = b.setup(&cfg).unwrap().peer;
    peer.rkey ^= 1;
    b.setup_with_peer(&cfg, &peer).unwrap();
    let mut cfg2 = cfg.clone();
    cfg2.hwhs.timeout_us = 20;
    b.setup_with_peer(&cfg2, &peer).unwrap();
    let rep = b
        .run(&RunSpec::b2b(Mode::SwLoop, 5), &mut |_, _| {})
        .unwrap();
    assert_eq!(rep.timeouts, 5);
    let st = b.mmio().state().unwrap();
    assert!(
        st.port
            .first_error
            .unwrap()
            .contains("rkey 0x1235, region key 0x1234")
    );
    // Reset tears everything down; state persists across connections.
    drop(b);
    let mut b = Board::open(connect(&sim)).unwrap();
    assert_eq!(b.reset().unwrap(), vec![2]);
    let i = b.info().unwrap();
    assert!(!i.ernic_enabled && i.qps.is_empty());
    assert_eq!(i.hwhs.round_count, 0);
    let qpconf = l.qp_offset(2, backline_apu::ernic::qp::QPCONF);
    assert_eq!(b.mmio().read32(Block::Ernic, qpconf).unwrap(), 0);
}

#[test]
fn setup_on_a_running_board_aborts_the_run_before_tearing_down() {
    let Some((sim, cfg)) = sim_board("abort", |_| {}) else {
        return;
    };
    let mut b = Board::open(connect(&sim)).unwrap();
    b.setup(&cfg).unwrap();
    let spec = RunSpec::b2b(Mode::HwLoop, 1_000_000);
    backline_apu::hwhs::prepare(b.mmio(), &spec).unwrap();
    b.mmio()
        .write32(Block::Hwhs, rm::CTRL, rm::CTRL_START.bits(1))
        .unwrap();
    b.mmio().wait(Duration::from_micros(50)).unwrap();
    let s = b.mmio().read32(Block::Hwhs, rm::STATUS).unwrap();
    assert_eq!(rm::STATUS_RUNNING.get(s), 1, "{s:#x}");
    b.mmio().clear_log().unwrap();
    let rep = b.setup(&cfg).unwrap();
    assert_eq!(rep.torn_down, vec![2]);
    let w: Vec<String> = b
        .mmio()
        .log()
        .unwrap()
        .iter()
        .filter(|a| a.op == backline_apu::mmio::Op::Write)
        .map(|a| format!("{a}"))
        .collect();
    assert_eq!(w[0], "HWHS CTRL <- 0x00000002", "{w:?}");
    assert_eq!(w[1], "ERNIC QPCONF[QP 2] <- 0x00000000", "{w:?}");
    assert_eq!(w[2], "ERNIC XRNICCONF <- 0x00000000", "{w:?}");
    let rep = b
        .run(&RunSpec::b2b(Mode::HwLoop, 100), &mut |_, _| {})
        .unwrap();
    assert_eq!((rep.rounds_committed, rep.timeouts), (100, 0));
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[test]
fn connections_come_and_go_without_leaking_descriptors() {
    let Some((sim, _)) = sim_board("fds", |_| {}) else {
        return;
    };
    drop(connect(&sim));
    std::thread::sleep(Duration::from_millis(100));
    let before = open_fds();
    for _ in 0..200 {
        let mut m = connect(&sim);
        m.read32(Block::Hwhs, rm::VERSION).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let after = open_fds();
    // Other tests of this binary open files meanwhile: allow for them, not for 200 more.
    assert!(after < before + 50, "{before} -> {after} descriptors");
}

#[test]
fn waits_advance_the_simulated_clock() {
    let Some((sim, _)) = sim_board("clock", |_| {}) else {
        return;
    };
    let mut m = connect(&sim);
    let c0 = m.state().unwrap().cycle;
    m.wait(Duration::from_micros(10)).unwrap();
    let c1 = m.state().unwrap().cycle;
    assert_eq!(c1 - c0, 2000);
}

/// A coprocessor serving `spec` over udp in this process (what `backline serve` runs), and
/// its address as `--coprocessor` takes it.
fn coprocessor(spec: &str) -> (backline_transport::CoprocessorSession, String) {
    use backline_transport::{CoprocessorSession, ServeOptions, SessionConfig, TransportKind};
    let mut table = backline_responder::ResponderTable::new();
    for (id, f) in backline_responder::functions_of(spec, 0).unwrap() {
        table.insert(id, f);
    }
    let s = CoprocessorSession::open(
        "apu-test",
        SessionConfig::new(TransportKind::Udp),
        "127.0.0.1:0",
        7878,
        &table,
        ServeOptions::default(),
    )
    .unwrap();
    let addr = format!("udp:{}", s.peer_address().unwrap());
    (s, addr)
}

#[test]
fn a_bridged_board_checks_every_reply_against_the_cpu_decoder() {
    use backline_sim::{BridgeConfig, CoprocessorAddr};
    use backline_transport::Session as _;
    if super::util::no_verilator() {
        return;
    }
    let (mut srv, addr) = coprocessor("bposd:hgp13");
    let Some((sim, cfg)) = sim_board("bridged", |o| {
        o.coprocessor = Some(BridgeConfig::new(CoprocessorAddr::parse(&addr).unwrap()));
    }) else {
        return;
    };
    let mut b = Board::open(connect(&sim)).unwrap();
    b.setup(&cfg).unwrap();
    for (decoder_id, mode) in [(0, Mode::HwLoop), (1, Mode::SwLoop)] {
        let w = backline_board::workload::Workload::for_function(
            "bposd:hgp13",
            decoder_id,
            256,
            0.05,
            9,
        )
        .unwrap();
        let mut spec = RunSpec::b2b(mode, 400);
        spec.expect = Expect::Workload(w);
        // 10 ms: far above the measured service time.
        spec.timeout_cycles = Some(2_000_000);
        let rep = b.run(&spec, &mut |_, _| {}).unwrap();
        assert_eq!(rep.rounds_committed, 400);
        // Every reply the coprocessor gave equals what the CPU decoder answers here.
        assert_eq!(rep.mismatches, 0, "decoder {decoder_id}");
        let t = b.read_trace().unwrap();
        assert_eq!(
            t.meta("service"),
            Some(format!("measured: the coprocessor at {addr}").as_str())
        );
        assert_eq!(t.splits.len(), 400);
        let m = t.split_medians().unwrap();
        let fabric = 2 * rm::ns_to_cycles(backline_sim::model::REFERENCE_ONE_WAY_NS);
        assert_eq!(m.fabric_cycles, fabric as f64);
        assert!(m.service_cycles > 0.0 && m.engine_cycles > 0.0, "{m:?}");
        for (r, s) in t.rows.iter().zip(&t.splits) {
            if let Some(s) = s {
                assert_eq!(
                    r.rtt_cycles.unwrap(),
                    s.engine_cycles + s.fabric_cycles + s.service_cycles
                );
            }
        }
    }
    let st = b.mmio().state().unwrap();
    let br = st.bridge.unwrap();
    assert_eq!((br.coprocessor.as_str(), br.lost), (addr.as_str(), 0));
    assert_eq!(br.relayed, 800);
    assert_eq!(st.responder, "bridge");
    srv.stop().unwrap();
}
