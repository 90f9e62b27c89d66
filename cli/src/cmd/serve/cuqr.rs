//! `backline serve --transport udp --protocol cuqr`: the `stream:` functions of `--fn` served
//! to clients of NVIDIA's realtime RPC frames ([`backline_responder::cuqr`]), one datagram per
//! slot of `--slot-bytes` (default 256). Like the backline server, the first stdout line is
//! `ready <address>`; at shutdown, one line per status seen, each stream's counters and, with
//! `--hop-stats` / `--hop-csv`, the hops of every frame.

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use backline_responder::cuqr::{CuqrOptions, CuqrServer};

use super::{ServeConfig, Serving, function_list};

/// Serves `c.table` over CUQR frames until SIGINT/SIGTERM.
pub fn run(c: &ServeConfig, options: &CuqrOptions) -> anyhow::Result<ExitCode> {
    // The serving thread inherits this thread's CPU set.
    if let Some(cpu) = c.pin {
        backline_transport::os::pin_current_thread(cpu)?;
    }
    let serving = Serving::start()?;
    let server = CuqrServer::start(&c.address, &c.table, *options)
        .with_context(|| format!("serving cuqr frames at udp:{}", c.address))?;
    let addr = server.local_addr();
    serving.announce(
        &addr.to_string(),
        &format!(
            "cuqr frames at udp:{addr}, slots of {} bytes, decoders {}",
            options.slot_bytes,
            function_list(&c.table)
        ),
        &addr.to_string(),
        addr.ip().is_loopback(),
        "clients",
    );
    serving.wait(|| server.is_finished());
    let report = server.stop().context("the cuqr server failed")?;
    let frames = report.stats.frames.load(Ordering::Relaxed);
    eprintln!(
        "backline serve: stopped after {frames} frames ({})",
        match report.stats.render() {
            s if s.is_empty() => "none".to_string(),
            s => s,
        }
    );
    for line in &report.streams {
        eprintln!("backline serve: {line}");
    }
    c.hops
        .print(&report.hops, "backline serve: hops of the cuqr frames");
    c.hops
        .save(&[(1, &report.hops)], &format!("{frames} frames"))?;
    Ok(ExitCode::SUCCESS)
}
