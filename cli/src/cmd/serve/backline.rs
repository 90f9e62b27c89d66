//! `backline serve` with the backline protocol: controllers' sessions over shm, udp or rdma,
//! each on its own rings, until SIGINT/SIGTERM or `--sessions`; at shutdown a line per
//! session (with its hops under `--hop-stats`), the functions' own reports and the totals.

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use backline_transport::{CoprocessorSession, Session as _, TransportKind, os::DmaLatencyGuard};

use super::{BacklineSettings, Reach, ServeConfig, Serving, function_list};

/// Serves `c.table` over `c.transport` until a signal or the last of `--sessions`.
pub fn run(c: &ServeConfig, s: &BacklineSettings) -> anyhow::Result<ExitCode> {
    let _dma = if s.hold_dma_latency {
        Some(DmaLatencyGuard::hold()?)
    } else {
        None
    };
    let serving = Serving::start()?;
    let mut session = CoprocessorSession::open(
        "serve",
        s.session.clone(),
        &c.address,
        7878,
        &c.table,
        s.options.clone(),
    )
    .with_context(|| format!("serving {} at {}", c.transport, c.address))?;
    let bound = session.address().unwrap_or_default().to_string();
    let threads = match s.options.serve_threads {
        Some(k) => format!("{k} serving threads"),
        None => "a thread per session".into(),
    };
    let keyed = s.session.key.is_some();
    let admission = if keyed {
        ", admitting only controllers that prove the key of --token-file"
    } else {
        ""
    };
    serving.announce(
        session.peer_address().unwrap_or_default(),
        &format!(
            "{bound}, up to {} controllers at once ({threads}), {} slots of {} bytes, functions {}{admission}",
            s.options.max_sessions,
            s.session.geometry.depth,
            s.session.geometry.slot_bytes,
            function_list(&c.table)
        ),
        &bound,
        Reach::of(&bound, keyed, c.transport != TransportKind::Shm),
        "controllers",
    );
    serving.wait(|| session.is_finished());
    let outcome = session.stop();
    report(c, &session)?;
    outcome.context("the server failed")?;
    Ok(ExitCode::SUCCESS)
}

/// What the server did, on stderr: each session (and its hops), the hop file, the functions'
/// own reports, the totals.
fn report(c: &ServeConfig, session: &CoprocessorSession) -> anyhow::Result<()> {
    let (sessions, rounds, failed) = session.stats().snapshot();
    let reports = session.stats().sessions_report();
    for r in &reports {
        let how = match &r.ended {
            None => "still running".to_string(),
            Some(Ok(())) => "ended".to_string(),
            Some(Err(e)) => format!("ended: {e}"),
        };
        eprintln!(
            "backline serve: session {} ({}): {} rounds, {} with an error status, {how}",
            r.number, r.peer, r.rounds, r.failed
        );
        if let Some(h) = &r.hops {
            c.hops
                .print(h, &format!("backline serve: hops of session {}", r.number));
        }
    }
    if c.hops.on() && c.transport != TransportKind::Udp {
        eprintln!(
            "backline serve: hop probes: {} has no transport hop of its own (received = request_seen)",
            c.transport
        );
    }
    let tables: Vec<(u64, &backline_probe::Table)> = reports
        .iter()
        .filter_map(|r| r.hops.as_ref().map(|h| (r.number, h)))
        .collect();
    c.hops
        .save(&tables, &format!("{} sessions", tables.len()))?;
    for line in c.table.reports() {
        eprintln!("backline serve: {line}");
    }
    let strays = session.stats().strays.load(Ordering::Relaxed);
    let strays = if strays > 0 {
        format!(", {strays} datagrams of no session dropped")
    } else {
        String::new()
    };
    let unadmitted = session.stats().unadmitted.load(Ordering::Relaxed);
    let unadmitted = if unadmitted > 0 {
        format!(", {unadmitted} hellos without a valid key proof refused unanswered")
    } else {
        String::new()
    };
    eprintln!(
        "backline serve: stopped after {sessions} sessions, {rounds} rounds ({failed} answered with an error status){strays}{unadmitted}"
    );
    Ok(())
}
