//! `backline serve --transport udp --protocol cuqr`: the `stream:` functions of `--fn` served
//! to clients of NVIDIA's realtime RPC frames ([`backline_responder::cuqr`]), one datagram per
//! slot of `--slot-bytes` (default 256). Like the backline server, the first stdout line is
//! `ready <address>`; at shutdown, one line per status seen, each stream's counters and, with
//! `--hop-stats` / `--hop-csv`, the hops of every frame.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use backline_responder::ResponderTable;
use backline_responder::cuqr::{CuqrOptions, CuqrServer};

use super::serve::Args;

/// Serves `table` over CUQR frames until SIGINT/SIGTERM.
pub fn run(args: &Args, table: &ResponderTable) -> anyhow::Result<ExitCode> {
    let probes = args.hop_stats || args.hop_csv.is_some();
    if let Some(p) = &args.hop_csv {
        std::fs::File::create(p).with_context(|| format!("--hop-csv {}", p.display()))?;
    }
    if args.sessions.is_some() || args.serve_threads.is_some() {
        eprintln!(
            "backline serve: --sessions and --serve-threads apply to the backline protocol; \
             the cuqr server is one thread serving every client"
        );
    }
    // The serving thread inherits this thread's CPU set.
    if let Some(c) = args.pin {
        backline_transport::os::pin_current_thread(c)?;
    }
    let options = CuqrOptions {
        slot_bytes: args
            .ring
            .slot_bytes
            .map_or(backline_wire::cuqr::DEFAULT_SLOT_BYTES, |s| s as usize),
        wait: args.ring.wait()?,
        probe_frames: if probes { args.hop_rounds } else { 0 },
    };
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, term.clone()).context("installing signal handlers")?;
    }
    let server = CuqrServer::start(&args.bind, table, options)
        .with_context(|| format!("serving cuqr frames at udp:{}", args.bind))?;
    let addr = server.local_addr();
    println!("ready {addr}");
    let list: Vec<String> = table
        .entries()
        .map(|(id, r)| format!("{id}={}", r.name()))
        .collect();
    eprintln!(
        "backline serve: cuqr frames at udp:{addr}, slots of {} bytes, decoders {}; Ctrl-C to stop",
        options.slot_bytes,
        list.join(" ")
    );
    if !addr.ip().is_loopback() {
        eprintln!("backline serve: {addr} is not loopback: clients on other hosts can reach it");
    }
    // Relaxed: a flag set by the signal handler, carrying no data.
    while !term.load(Ordering::Relaxed) && !server.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
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
    if args.hop_stats {
        eprint!(
            "{}",
            report
                .hops
                .render("backline serve: hops of the cuqr frames")
        );
    }
    if let Some(p) = &args.hop_csv {
        backline_probe::save_csv(&[(1, &report.hops)], p)
            .with_context(|| format!("--hop-csv {}", p.display()))?;
        eprintln!(
            "backline serve: wrote the hops of {frames} frames to {}",
            p.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
