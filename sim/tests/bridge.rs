//! The verilated engine against real coprocessors through the bridge: a `CoprocessorSession`
//! of `backline-transport` (what `backline serve` runs) in this process, over real udp
//! sockets and real shared memory. Every test skips with a message when the crate was built
//! without Verilator.

use std::sync::Arc;
use std::time::Duration;

use backline_pacer::PacerConfig;
use backline_regmap as rm;
use backline_responder::{Responder as Function, ResponderError, ResponderTable};
use backline_sim::workload::Workload;
use backline_sim::{
    Bridge, BridgeConfig, CoprocessorAddr, HwhsSim, LossPolicy, Mode, ModelConfig, RunConfig,
    SimError, run::run,
};
use backline_transport::{
    CoprocessorSession, ServeOptions, Session as _, SessionConfig, TransportKind,
};
use backline_wire::Geometry;

fn available() -> bool {
    if !backline_sim::AVAILABLE {
        eprintln!("skipped: backline-sim was built without Verilator");
    }
    backline_sim::AVAILABLE
}

/// A coprocessor serving `fns` (decoder id, spec) on `transport`, and the address a bridge
/// connects to.
fn serve(
    transport: TransportKind,
    fns: &[(u32, &str)],
    geometry: Geometry,
    extra: Option<(u32, Arc<dyn Function>)>,
) -> (CoprocessorSession, CoprocessorAddr) {
    let mut table = ResponderTable::new();
    for (base, spec) in fns {
        for (id, f) in backline_responder::functions_of(spec, *base).unwrap() {
            table.insert(id, f);
        }
    }
    if let Some((id, f)) = extra {
        table.insert(id, f);
    }
    let mut cfg = SessionConfig::new(transport);
    cfg.geometry = geometry;
    let name = format!("simbr-{}-{}", std::process::id(), fastrand_name());
    let address = match transport {
        TransportKind::Shm => name.clone(),
        _ => "127.0.0.1:0".to_string(),
    };
    let s = CoprocessorSession::open(
        "sim-test",
        cfg,
        &address,
        7878,
        &table,
        ServeOptions::default(),
    )
    .unwrap();
    let peer = s.peer_address().unwrap().to_string();
    let kind = match transport {
        TransportKind::Shm => "shm",
        TransportKind::Udp => "udp",
        _ => "rdma",
    };
    let addr = CoprocessorAddr::parse(&format!("{kind}:{peer}")).unwrap();
    (s, addr)
}

/// A unique suffix per call.
fn fastrand_name() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // Relaxed: a counter for unique names.
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

const GEOMETRY: Geometry = Geometry {
    depth: backline_wire::DEFAULT_RING_DEPTH,
    slot_bytes: backline_wire::DEFAULT_SLOT_BYTES,
};

fn run_cfg(mode: Mode, rounds: u64, workload: Workload, on_loss: LossPolicy) -> RunConfig {
    RunConfig {
        mode,
        pacer: PacerConfig::B2B,
        rounds,
        model: ModelConfig {
            fabric_latency_cycles: rm::ns_to_cycles(backline_sim::model::REFERENCE_ONE_WAY_NS),
            reply_len: workload.reply_len,
            ..ModelConfig::default()
        },
        // 10 ms, `backline sim`'s default with a coprocessor: far above the measured
        // service, even on a loaded machine.
        timeout_cycles: 2_000_000,
        fast_forward_above: Some(4096),
        workload: Some(workload),
        on_loss,
    }
}

fn bridged(addr: &CoprocessorAddr, cfg: &RunConfig, reply_timeout: Duration) -> HwhsSim {
    let mut sim = HwhsSim::new(cfg.model.clone()).unwrap();
    let mut b = BridgeConfig::new(addr.clone());
    b.reply_timeout = reply_timeout;
    b.geometry = GEOMETRY;
    sim.model_mut().attach_bridge(Bridge::connect(&b).unwrap());
    sim
}

#[test]
fn bposd_replies_equal_the_cpu_decoders_over_udp_and_shm() {
    if !available() {
        return;
    }
    for transport in [TransportKind::Udp, TransportKind::Shm] {
        let (mut srv, addr) = serve(transport, &[(0, "bposd:hgp13")], GEOMETRY, None);
        for (decoder_id, mode) in [(0, Mode::HwLoop), (1, Mode::SwLoop)] {
            let w = Workload::for_function("bposd:hgp13", decoder_id, 256, 0.05, 3).unwrap();
            // The payloads are syndromes of sampled errors, not counters.
            let distinct: std::collections::BTreeSet<u32> = w.entries.iter().map(|e| e.0).collect();
            assert!(distinct.len() > 8, "{distinct:?}");
            let cfg = run_cfg(mode, 500, w, LossPolicy::Stop);
            let mut sim = bridged(&addr, &cfg, Duration::from_secs(1));
            let rep = run(&mut sim, &cfg, &mut |_, _| {}).unwrap();
            let what = format!("{transport} decoder {decoder_id} {}", mode.name());
            assert_eq!((rep.rounds_committed, rep.mismatches), (500, 0), "{what}");
            // A reply a loaded machine delays past the engine's 10 ms timeout is a timeout,
            // never a mismatch; it is the exception.
            assert!(rep.timeouts < 250, "{what}: {} timeouts", rep.timeouts);
            assert_eq!(rep.lost, (0, None), "{what}");
            assert_eq!(rep.model_errors, (0, None), "{what}");
            let (relayed, mean_ns) = rep.bridged.unwrap();
            assert_eq!(relayed, 500, "{what}");
            assert!(mean_ns > 0.0, "{what}");
            // Every traced round splits into engine + fabric + measured service. (A service
            // past the 16-bit trace entry's 327 µs — a loaded host — saturates the entry.)
            assert_eq!(rep.splits.len(), 500);
            for (k, (s, &rtt)) in rep.splits.iter().zip(&rep.trace).enumerate() {
                if rtt == rm::TRACE_TIMEOUT {
                    continue;
                }
                if rtt == rm::TRACE_SATURATED {
                    // Its own service took that long, or the reply queued behind the late
                    // reply of a round that had timed out: one RC queue pair delivers in
                    // order, so a reply the engine gave up on still lands first.
                    let behind_a_timeout = k > 0 && rep.trace[k - 1] == rm::TRACE_TIMEOUT;
                    assert!(
                        s.service_cycles + s.fabric_cycles >= u32::from(rtt) - 100
                            || behind_a_timeout,
                        "{what} round {k}: saturated, {s:?}"
                    );
                    continue;
                }
                assert_eq!(
                    u64::from(s.fabric_cycles),
                    2 * cfg.model.fabric_latency_cycles,
                    "{what} round {k}"
                );
                assert!(s.service_cycles > 0, "{what} round {k}");
                assert!(
                    u32::from(rtt) > s.fabric_cycles + s.service_cycles,
                    "{what} round {k}: rtt {rtt}, {s:?}"
                );
            }
        }
        srv.stop().unwrap();
    }
}

#[test]
fn an_address_that_does_not_answer_fails_before_the_first_round() {
    // A udp port with nothing behind it (bound, then released), and a shm name nobody serves.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for spec in [
        format!("udp:127.0.0.1:{port}"),
        format!("shm:nobody-{}", std::process::id()),
    ] {
        let mut b = BridgeConfig::new(CoprocessorAddr::parse(&spec).unwrap());
        b.setup_timeout = Duration::from_millis(300);
        let t0 = std::time::Instant::now();
        let e = Bridge::connect(&b).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("the coprocessor at {spec} does not answer: ")),
            "{e}"
        );
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }
}

#[test]
fn a_coprocessor_that_dies_mid_run_times_rounds_out_and_the_run_stops_or_goes_on() {
    if !available() {
        return;
    }
    for on_loss in [LossPolicy::Stop, LossPolicy::Continue] {
        let (srv, addr) = serve(TransportKind::Udp, &[(0, "steane")], GEOMETRY, None);
        let w = Workload::for_function("steane", 0, 64, 0.1, 1).unwrap();
        let rounds = 3000;
        let mut cfg = run_cfg(Mode::SwLoop, rounds, w, on_loss);
        // Every round after the coprocessor is gone waits the engine's timeout: keep it
        // short (200 µs), which a loaded machine's udp round trip may exceed now and then.
        cfg.timeout_cycles = 40_000;
        let mut sim = bridged(&addr, &cfg, Duration::from_millis(100));
        // The coprocessor goes away while the run is going on.
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let mut srv = srv;
            srv.stop().unwrap();
        });
        let r = run(&mut sim, &cfg, &mut |_, _| {});
        killer.join().unwrap();
        match on_loss {
            LossPolicy::Stop => {
                let e = r.unwrap_err();
                assert!(matches!(e, SimError::CoprocessorLost(_)), "{e:?}");
                let e = e.to_string();
                assert!(e.starts_with("round "), "{e}");
                // udp either times out or hears the port is closed.
                assert!(
                    e.contains("no reply from the coprocessor within")
                        || e.contains("the coprocessor is gone"),
                    "{e}"
                );
                assert!(e.contains("--on-loss continue goes on"), "{e}");
            }
            LossPolicy::Continue => {
                let rep = r.unwrap();
                assert_eq!(rep.rounds_committed, rounds);
                assert!(rep.lost.0 > 0 && rep.lost.0 < rounds, "{:?}", rep.lost);
                // Every lost round timed out in the engine (and a slow answer may have too).
                assert!(
                    rep.timeouts >= rep.lost.0,
                    "{} {:?}",
                    rep.timeouts,
                    rep.lost
                );
                // Once gone, gone: every round from the first lost one on is marked.
                let first_lost = rounds - rep.lost.0;
                assert!(
                    rep.trace[first_lost as usize..]
                        .iter()
                        .all(|&e| e == rm::TRACE_TIMEOUT)
                );
                assert!(
                    rep.lost
                        .1
                        .unwrap()
                        .starts_with(&format!("round {first_lost}: "))
                );
                assert_eq!(rep.mismatches, 0);
            }
        }
    }
}

/// A function whose replies are larger than the engine's reply slot holds.
struct Big;

impl Function for Big {
    fn name(&self) -> &str {
        "big"
    }
    fn respond(&self, _input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
        let n = 60.min(out.len());
        out[..n].fill(0xAB);
        Ok(n)
    }
}

#[test]
fn a_reply_larger_than_the_reply_buffer_is_a_named_loss() {
    if !available() {
        return;
    }
    let geo = Geometry {
        depth: 8,
        slot_bytes: 128,
    };
    let (mut srv, addr) = serve(TransportKind::Shm, &[], geo, Some((0, Arc::new(Big))));
    let w = Workload::table("big", 4, (0..8).map(|s| (s, 0)).collect());
    let cfg = run_cfg(Mode::SwLoop, 10, w, LossPolicy::Stop);
    let mut sim = HwhsSim::new(cfg.model.clone()).unwrap();
    let mut b = BridgeConfig::new(addr);
    b.geometry = geo;
    sim.model_mut().attach_bridge(Bridge::connect(&b).unwrap());
    let e = run(&mut sim, &cfg, &mut |_, _| {}).unwrap_err().to_string();
    assert!(
        e.contains(
            "round 0: a reply of 60 bytes does not fit the engine's 64-byte reply slot (48 \
             bytes of payload)"
        ),
        "{e}"
    );
    srv.stop().unwrap();
}

#[test]
fn a_decoder_id_the_coprocessor_does_not_serve_is_named() {
    if !available() {
        return;
    }
    let (mut srv, addr) = serve(TransportKind::Udp, &[(0, "steane")], GEOMETRY, None);
    let w = Workload::for_function("steane", 3, 8, 0.1, 1).unwrap();
    let cfg = run_cfg(Mode::HwLoop, 100, w, LossPolicy::Continue);
    let mut sim = bridged(&addr, &cfg, Duration::from_secs(1));
    let e = run(&mut sim, &cfg, &mut |_, _| {}).unwrap_err();
    assert!(matches!(e, SimError::Unserved(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("serves no function for decoder_id 3 (it answered unknown_decoder)"),
        "{e}"
    );
    srv.stop().unwrap();
}
