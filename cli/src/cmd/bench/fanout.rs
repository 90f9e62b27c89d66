//! `backline bench --peers A,B,…`: fan-out rounds to several running coprocessors, each round
//! posted to all of them and then collected from all, against the same coprocessors measured
//! one at a time in the same run.
//!
//! The run has three phases, so that drift affects both alike: each coprocessor alone (half of
//! `--rounds` each), the fan-out rounds (`--rounds`), each alone again (the other half). A
//! fan-out round is timed from before its first post to after its last collect (the whole
//! round); each coprocessor's part from the same start to its reply's arrival. The report
//! sets the whole round's median against the slowest coprocessor's median alone
//! (`ratio_to_slowest_median`): 1 is the ideal, the number of coprocessors what rounds one
//! after another would cost.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use backline_bench::Summary;
use backline_bench::exit::INTERRUPTED;
use backline_bench::swloop::request_payload;
use backline_transport::{Controller, ControllerSession, FanOut, SessionConfig, TransportKind};

use super::BenchConfig;

/// The samples of a fan-out run, ns.
#[derive(Default)]
struct Samples {
    alone: Vec<Vec<f64>>,
    part: Vec<Vec<f64>>,
    whole: Vec<f64>,
}

/// One coprocessor of `--peers`: its transport and address.
pub fn parse_peer(spec: &str, default: TransportKind) -> anyhow::Result<(TransportKind, String)> {
    for t in [
        TransportKind::Shm,
        TransportKind::Udp,
        TransportKind::Rdma,
        TransportKind::Memcpy,
    ] {
        if let Some(addr) = spec.strip_prefix(&format!("{t}:")) {
            if t == TransportKind::Memcpy {
                bail!(
                    "--peers {spec}: memcpy keeps its coprocessor in this process; name running servers (shm:, udp:, rdma:)"
                );
            }
            return Ok((t, addr.to_string()));
        }
    }
    if default == TransportKind::Memcpy {
        bail!(
            "--peers {spec}: give its transport (shm:NAME, udp:HOST:PORT, rdma:HOST:PORT) or --transport"
        );
    }
    Ok((default, spec.to_string()))
}

/// Runs a fan-out bench.
pub fn run(c: &BenchConfig, stop: &AtomicBool) -> anyhow::Result<ExitCode> {
    let check_as = c.responders[0].clone();
    let mut sessions = Vec::new();
    for (i, (t, addr)) in c.peers.iter().enumerate() {
        let config = SessionConfig {
            transport: *t,
            ..c.session.clone()
        };
        let s = ControllerSession::open(&format!("bench-fanout-{i}"), config, addr, 7878)
            .with_context(|| {
                let addr = backline_decoders::io::excerpt(addr);
                format!("coprocessor {i} of --peers ({t}:{addr})")
            })?;
        sessions.push(s);
    }
    let mut fan = FanOut::new(sessions)?;
    let n = fan.len();
    let mut s = Samples {
        alone: vec![Vec::with_capacity(c.rounds as usize); n],
        part: vec![Vec::with_capacity(c.rounds as usize); n],
        whole: Vec::with_capacity(c.rounds as usize),
    };
    let len = c.payload_bytes.unwrap_or(1).max(1);
    let mut interrupted = false;
    let halves = [c.rounds / 2, c.rounds - c.rounds / 2];
    'phases: for phase in 0..3 {
        if phase == 1 {
            interrupted |= fan_rounds(&mut fan, c.rounds, len, &check_as, &mut s, stop)?;
        } else {
            for i in 0..n {
                let session = fan.session_mut(i).expect("index in range");
                interrupted |= alone_rounds(
                    session,
                    i,
                    halves[phase / 2],
                    len,
                    &check_as,
                    &mut s.alone[i],
                    stop,
                )?;
                if interrupted {
                    break 'phases;
                }
            }
        }
        if interrupted {
            break;
        }
    }
    report(c, &s, interrupted)?;
    Ok(if interrupted {
        ExitCode::from(INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Checks a reply against what the named responder answers.
fn check(
    check_as: &str,
    request: &[u8],
    reply: &[u8],
    who: usize,
    want: &mut Vec<u8>,
) -> anyhow::Result<()> {
    if backline_responder::expected_reply(check_as, request, want).is_some()
        && want.as_slice() != reply
    {
        bail!("coprocessor {who} answered {reply:?} to {request:?}; {check_as} answers {want:?}");
    }
    Ok(())
}

/// `rounds` rounds to one coprocessor alone; true when interrupted.
fn alone_rounds(
    s: &mut ControllerSession,
    i: usize,
    rounds: u64,
    len: usize,
    check_as: &str,
    out: &mut Vec<f64>,
    stop: &AtomicBool,
) -> anyhow::Result<bool> {
    let mut req = vec![0u8; len];
    let mut want = Vec::new();
    for r in 0..rounds {
        // Relaxed: the flag carries no data.
        if stop.load(Ordering::Relaxed) {
            return Ok(true);
        }
        request_payload(r, &mut req);
        let t0 = Instant::now();
        s.stage_payload(&req, 0)
            .and_then(|()| s.post())
            .with_context(|| format!("coprocessor {i} alone, round {r}"))?;
        let reply = s
            .collect()
            .with_context(|| format!("coprocessor {i} alone, round {r}"))?;
        let ns = t0.elapsed().as_nanos() as f64;
        check(check_as, &req, reply.payload, i, &mut want)?;
        if r > 0 {
            out.push(ns);
        }
    }
    Ok(false)
}

/// `rounds` fan-out rounds; true when interrupted.
fn fan_rounds(
    fan: &mut FanOut,
    rounds: u64,
    len: usize,
    check_as: &str,
    s: &mut Samples,
    stop: &AtomicBool,
) -> anyhow::Result<bool> {
    let n = fan.len();
    let mut reqs = vec![vec![0u8; len]; n];
    let mut want = Vec::new();
    let mut arrivals = vec![0f64; n];
    let mut bad: Option<anyhow::Error> = None;
    for r in 0..rounds {
        if stop.load(Ordering::Relaxed) {
            return Ok(true);
        }
        for (i, q) in reqs.iter_mut().enumerate() {
            request_payload(r.wrapping_mul(n as u64) + i as u64, q);
        }
        let requests: Vec<(&[u8], u32)> = reqs.iter().map(|q| (q.as_slice(), 0)).collect();
        let t0 = Instant::now();
        fan.post_all(&requests)
            .map_err(|e| anyhow::anyhow!("fan-out round {r}: {e}"))?;
        fan.collect_all(|i, reply, at| {
            arrivals[i] = at.duration_since(t0).as_nanos() as f64;
            if bad.is_none()
                && let Err(e) = check(check_as, &reqs[i], reply.payload, i, &mut want)
            {
                bad = Some(e);
            }
        })
        .map_err(|e| anyhow::anyhow!("fan-out round {r}: {e}"))?;
        let whole = t0.elapsed().as_nanos() as f64;
        if let Some(e) = bad.take() {
            return Err(e.context(format!("fan-out round {r}")));
        }
        if r > 0 {
            s.whole.push(whole);
            for (i, a) in arrivals.iter().enumerate() {
                s.part[i].push(*a);
            }
        }
    }
    Ok(false)
}

fn report(c: &BenchConfig, s: &Samples, interrupted: bool) -> anyhow::Result<()> {
    let alone: Vec<Option<Summary>> = s.alone.iter().map(|v| Summary::of(v)).collect();
    let part: Vec<Option<Summary>> = s.part.iter().map(|v| Summary::of(v)).collect();
    let whole = Summary::of(&s.whole);
    let slowest = alone
        .iter()
        .flatten()
        .map(|a| a.median_ns)
        .fold(f64::NAN, f64::max);
    let ratio = whole
        .as_ref()
        .map(|w| w.median_ns / slowest)
        .filter(|r| r.is_finite());
    let peers: Vec<String> = c.peers.iter().map(|(t, a)| format!("{t}:{a}")).collect();
    if c.json {
        let v = serde_json::json!({
            "mode": "fan-out",
            "peers": peers,
            "rounds": c.rounds,
            "interrupted": interrupted,
            "whole_round": whole,
            "per_coprocessor": part,
            "alone": alone,
            "slowest_alone_median_ns": if slowest.is_finite() { Some(slowest) } else { None },
            "ratio_to_slowest_median": ratio,
        });
        println!("{v}");
        return Ok(());
    }
    let us = |x: f64| x / 1e3;
    println!(
        "fan-out rounds to {} coprocessors ({} rounds; round 0 of each phase apart), µs",
        peers.len(),
        c.rounds
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>9}",
        "", "median", "P99", "P99.9", "max"
    );
    let row = |label: String, m: &Option<Summary>| match m {
        Some(m) => println!(
            "{label:<44} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            us(m.median_ns),
            us(m.p99_ns),
            us(m.p999_ns),
            us(m.max_ns)
        ),
        None => println!("{label:<44} {:>9}", "-"),
    };
    row("whole round".into(), &whole);
    for (i, p) in peers.iter().enumerate() {
        row(format!("  coprocessor {i} ({p}) in the round"), &part[i]);
    }
    for (i, p) in peers.iter().enumerate() {
        row(format!("coprocessor {i} ({p}) alone"), &alone[i]);
    }
    match ratio {
        Some(r) => println!(
            "whole-round median / slowest coprocessor's median alone: {r:.2}× ({} one after another would cost ~{}×)",
            peers.len(),
            peers.len()
        ),
        None => println!("whole-round median / slowest coprocessor's median alone: -"),
    }
    if interrupted {
        eprintln!("backline bench: interrupted: the table holds the rounds that completed");
    }
    Ok(())
}
