//! `backline serve --protocol cuqr`: the `stream:` functions of `--fn` served to clients of
//! NVIDIA's realtime RPC frames ([`backline_responder::cuqr`]), one datagram per slot of
//! `--slot-size` (default 256), in NVIDIA's shape with `--ring ID=PORT …` (one socket and
//! serving thread per decoder) or in backline's (one socket at `--bind` for every decoder).
//!
//! Stdout, when the server accepts: `ready <address>` first (the first ring's address; what
//! `backline bench` and the backline protocol's scripts wait for), then NVIDIA's line
//! `QEC_DECODING_SERVER_READY port=<P0> transport=udp ring<id>=<port> …` (what NVIDIA's
//! scripts wait for), with backline's `decode<id>=inline|worker` tokens at its end. At shutdown, on stderr: the frames answered by status and those dropped
//! by reason, per ring and in all, and each decoder's counters; on stdout, NVIDIA's
//! `QEC_DECODING_SERVER_RING decoder=<id> dispatched=<n>` lines. With `--hop-stats` /
//! `--hop-csv`, the hops of every frame answered, one table per ring (session = the ring's
//! number from 1); `--hop-csv FILE` also writes `FILE.frames.csv`, what each of those frames
//! was (function, decoder id, counter, request id, status), the counter carried as sent, and
//! `FILE.shots.csv`, as `--shot-csv` does: every shot's *last syndrome → corrections ready*
//! figure (`decoder_id,shot,last_syndrome_to_correction_ns`, in shot order; the shutdown line
//! of each decoder gives their median, mean, P99 and P99.9). The ready line ends with
//! `decode<id>=inline|worker`, where each decoder's windows decode.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use backline_responder::cuqr::{CuqrReport, CuqrServer, CuqrStats};
use backline_wire::cuqr::Function;

use super::{CuqrSettings, Reach, ServeConfig, Serving, function_list};

/// Serves `c.table` over CUQR frames until SIGINT/SIGTERM.
pub fn run(c: &ServeConfig, settings: &CuqrSettings) -> anyhow::Result<ExitCode> {
    // The serving threads inherit this thread's CPU set.
    if let Some(cpu) = c.pin {
        backline_transport::os::pin_current_thread(cpu)?;
    }
    let options = settings.options;
    let serving = Serving::start()?;
    let server = match &settings.rings {
        Some(rings) => CuqrServer::start_rings(&c.table, rings, options).with_context(|| {
            let at: Vec<&str> = rings.iter().map(|r| r.address.as_str()).collect();
            format!("serving cuqr frames on rings at udp:{}", at.join(", udp:"))
        }),
        None => CuqrServer::start(&c.address, &c.table, options)
            .with_context(|| format!("serving cuqr frames at udp:{}", c.address)),
    }?;
    let addr = server.local_addr();
    let rings: Vec<String> = server
        .rings()
        .iter()
        .map(|r| format!("{:?} at udp:{}", r.decoders, r.addr))
        .collect();
    serving.announce(
        &addr.to_string(),
        &format!(
            "cuqr frames, slots of {} bytes, {} calls queued per decoder{}, decoders {}; \
             rings: {}",
            options.slot_bytes,
            options.num_slots,
            if options.strict_counter {
                ", the counter judged (--strict-counter)"
            } else {
                ""
            },
            function_list(&c.table),
            rings.join(", ")
        ),
        &addr.to_string(),
        if addr.ip().is_loopback() {
            Reach::Loopback
        } else {
            Reach::Open { keyable: false }
        },
        "clients",
    );
    // A reader may have taken only the first line and closed the pipe (`backline bench`
    // does): NVIDIA's lines are written on, and a closed stdout is not an error.
    stdout_line(&server.ready_line_with_decode());
    serving.wait(|| server.is_finished());
    let report = server.stop().context("the cuqr server failed")?;
    print_report(&report);
    let tables: Vec<(u64, &backline_probe::Table)> = report
        .rings
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u64 + 1, &r.hops))
        .collect();
    for (i, r) in report.rings.iter().enumerate() {
        c.hops.print(
            &r.hops,
            &format!(
                "backline serve: hops of the cuqr frames of ring {} (udp:{})",
                i + 1,
                r.ring.addr
            ),
        );
    }
    let frames: usize = report.rings.iter().map(|r| r.frames.len()).sum();
    c.hops.save(&tables, &format!("{frames} frames"))?;
    if let Some(p) = &c.hops.csv {
        let path = p.with_extension("frames.csv");
        write_frames(&report, &path).with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "backline serve: wrote what each of those frames was to {}",
            path.display()
        );
    }
    let beside = c.hops.csv.as_ref().map(|p| p.with_extension("shots.csv"));
    for path in settings.shot_csv.iter().chain(&beside) {
        write_shots(&report, path).with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "backline serve: wrote every shot's last syndrome → corrections ready figure to {}",
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `decoder_id,shot,last_syndrome_to_correction_ns`, one row per shot whose figure was kept
/// (in shot order, per decoder).
fn write_shots(report: &CuqrReport, path: &std::path::Path) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        w,
        "# backline serve --protocol cuqr: per shot, the arrival of the datagram that completes \
         its syndromes to its corrections ready (monotonic clock, ns)"
    )?;
    writeln!(w, "decoder_id,shot,last_syndrome_to_correction_ns")?;
    for r in &report.rings {
        for (id, l) in &r.latencies {
            for (k, ns) in l.samples().iter().enumerate() {
                writeln!(w, "{id},{k},{ns}")?;
            }
        }
    }
    w.flush()
}

fn or_none(s: String) -> String {
    if s.is_empty() { "none".to_string() } else { s }
}

/// The shutdown lines: per ring (when there are several) and in all, the decoders' lines,
/// and NVIDIA's ring lines on stdout.
fn print_report(report: &CuqrReport) {
    let line = |what: &str, s: &CuqrStats| {
        eprintln!(
            "backline serve: {what}: {} frames ({}); {} dropped ({})",
            s.frames.load(Ordering::Relaxed),
            or_none(s.render()),
            s.dropped_total(),
            or_none(s.render_dropped())
        );
    };
    if report.rings.len() > 1 {
        for r in &report.rings {
            line(
                &format!("ring {:?} at udp:{}", r.ring.decoders, r.ring.addr),
                &r.stats,
            );
        }
    }
    let t = report.totals();
    eprintln!(
        "backline serve: stopped after {} frames ({}); {} frames dropped unanswered ({})",
        t.frames.load(Ordering::Relaxed),
        or_none(t.render()),
        t.dropped_total(),
        or_none(t.render_dropped())
    );
    let waited = t.waited.load(Ordering::Relaxed);
    if waited > 0 {
        eprintln!(
            "backline serve: backlog: {waited} calls arrived while an inline decode ran and \
             waited in the socket for it (the decoder behind the calls)"
        );
    }
    for l in &report.streams {
        eprintln!("backline serve: {l}");
    }
    for l in report.nvidia_lines() {
        stdout_line(&l);
    }
}

/// One line on stdout, flushed; a closed stdout is not an error.
fn stdout_line(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}

/// `session,round,function,decoder_id,counter,request_id,status`, one row per frame of the
/// hop tables (the same session and round numbers).
fn write_frames(report: &CuqrReport, path: &std::path::Path) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        w,
        "# backline serve --protocol cuqr: the frames of the hop tables (counters as sent)"
    )?;
    writeln!(
        w,
        "session,round,function,decoder_id,counter,request_id,status"
    )?;
    for (i, r) in report.rings.iter().enumerate() {
        for (k, f) in r.frames.iter().enumerate() {
            let function = Function::from_id(f.function_id).map_or("unknown", |f| f.name());
            writeln!(
                w,
                "{},{k},{function},{},{},{},{}",
                i + 1,
                f.decoder_id,
                f.counter,
                f.request_id,
                f.status
            )?;
        }
    }
    w.flush()
}
