//! What a bench prints and records: its runs, the trace headers, the table and the JSON.

use backline_bench::report::JsonStats;
use backline_bench::trace::{Clock, RoundStatus, Trace, TraceRow};
use backline_bench::{JsonReport, Summary, Table};
use backline_pacer::PacerConfig;
use backline_transport::TransportKind;

use super::BenchConfig;

/// One measured run.
pub(super) struct Run {
    pub(super) label: String,
    pub(super) trace: Trace,
    pub(super) summary: Option<Summary>,
    pub(super) round0: Option<f64>,
    /// Logical failures among the replies (syndrome requests only).
    pub(super) logical_failures: Option<u64>,
    /// Fields a streaming run adds to the JSON report.
    pub(super) extra: serde_json::Map<String, serde_json::Value>,
    /// Per-slot medians of a sw-loop run over a ring of several slots ([`slot_medians`]).
    pub(super) slots: Option<Vec<Option<f64>>>,
}

impl Run {
    pub(super) fn new(label: String, trace: Trace) -> Run {
        let summary = trace.summary();
        let round0 = trace.cold_rows().next().map(|r| r.rtt_ns);
        Run {
            label,
            trace,
            summary,
            round0,
            logical_failures: None,
            extra: serde_json::Map::new(),
            slots: None,
        }
    }
}

/// The table (or JSON object) and the lines under it, on stdout.
pub(super) fn print(
    c: &BenchConfig,
    runs: &[Run],
    baseline: Option<&Run>,
    stream_lines: &[String],
) {
    if c.json {
        println!("{}", json(c, runs, baseline));
        return;
    }
    print!("{}", table(c, runs, baseline).render());
    for r in runs {
        if let Some(k) = r.logical_failures {
            println!(
                "{}: {k} logical failures in {} decoded rounds (sampled errors)",
                r.label,
                r.trace.rows.len()
            );
        }
        if let Some(line) = r.slots.as_ref().and_then(|m| slot_spread_line(&r.label, m)) {
            println!("{line}");
        }
        let f = r.trace.failures();
        if !f.is_empty() {
            let list: Vec<String> = f.iter().map(|(s, n)| format!("{n} {}", s.name())).collect();
            println!("{}: {}", r.label, list.join(", "));
        }
    }
    for line in stream_lines {
        println!("{line}");
    }
}

/// The floor's round trips as a run (only its very first round is cold).
pub(super) fn baseline_run(c: &BenchConfig, floor_rtts: &[f64]) -> Run {
    let mut t = Trace::with_capacity(Clock::HostNs, floor_rtts.len());
    for (i, &rtt) in floor_rtts.iter().enumerate() {
        t.rows.push(TraceRow {
            round: i as u64,
            rtt_ns: rtt,
            rtt_cycles: None,
            quiet_ns: 0.0,
            status: RoundStatus::Ok,
            cold: i == 0,
        });
    }
    set_meta(&mut t, c, c.floor_label, PacerConfig::B2B);
    Run::new(c.floor_label.to_string(), t)
}

/// The per-slot medians of a sw-loop run (ns, slot 0 first; `None` for a slot no warm
/// completed round used), also written into its trace header as `slot_median_ns`; `None` for
/// a one-slot ring.
pub(super) fn slot_medians(c: &BenchConfig, t: &mut Trace) -> Option<Vec<Option<f64>>> {
    let depth = c.session.geometry.depth;
    if depth < 2 {
        return None;
    }
    let m = t.slot_medians(depth as usize, |round| {
        backline_wire::Seq::of_round(round).slot(depth) as usize
    });
    let cells: Vec<String> = m
        .iter()
        .map(|v| v.map_or("-".into(), |ns| format!("{ns:.0}")))
        .collect();
    t.set_meta("slot_median_ns", cells.join(","));
    Some(m)
}

/// The line under the table when the slots of a run's ring differ (the slowest slot's median
/// at least 1.2× the fastest's): a cost that depends on where in the ring a round lands.
pub(super) fn slot_spread_line(label: &str, medians: &[Option<f64>]) -> Option<String> {
    let known: Vec<f64> = medians.iter().flatten().copied().collect();
    let lo = known.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = known.iter().copied().fold(0.0, f64::max);
    if known.len() < 2 || hi < 1.2 * lo {
        return None;
    }
    let cells: Vec<String> = medians
        .iter()
        .map(|v| v.map_or("-".into(), |ns| format!("{:.3}", ns / 1000.0)))
        .collect();
    Some(format!(
        "{label}: the ring's slots differ, slowest median {:.2}x the fastest; per-slot medians (µs, slot 0 first): {}",
        hi / lo,
        cells.join(" ")
    ))
}

/// The medians of the floor measured before the runs (its cold first round left out) and
/// after them.
pub(super) fn floor_halves(before: &[f64], after: &[f64]) -> Option<(f64, f64)> {
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    Some((median(before.get(1..)?)?, median(after)?))
}

/// The line under the table when the floor before the runs and the one after differ by more
/// than 15 %: the floor changed during the run (on a VM, the host moved the vCPUs between
/// placements), and the ratios to the floor mix the two (`bench/examples/probe.rs` separates
/// placements).
pub(super) fn floor_moved_line((before, after): (f64, f64)) -> Option<String> {
    let (lo, hi) = (before.min(after), before.max(after));
    (hi > 1.15 * lo).then(|| {
        format!(
            "note: the floor's median moved from {:.3} µs before the runs to {:.3} µs after \
             them: the ratios to the floor mix two floors (on a VM: the host moved the vCPUs)",
            before / 1000.0,
            after / 1000.0
        )
    })
}

/// The header of a run's trace: what ran, how, with which settings.
pub(super) fn set_meta(t: &mut Trace, c: &BenchConfig, responder: &str, pacer: PacerConfig) {
    let (transport, config) = (c.transport, &c.session);
    t.set_meta("source", "backline bench (sw-loop)");
    t.set_meta("version", env!("CARGO_PKG_VERSION"));
    t.set_meta(
        "placement",
        format!("controller=cpu coprocessor=cpu transport={transport}"),
    );
    t.set_meta("transport", transport);
    t.set_meta("responder", responder);
    t.set_meta("rounds", c.rounds);
    t.set_meta("payload_bytes", c.payload_bytes.unwrap_or(8));
    t.set_meta("in_flight", config.in_flight);
    t.set_meta(
        "ring",
        format!(
            "{} slots x {} bytes",
            config.geometry.depth, config.geometry.slot_bytes
        ),
    );
    t.set_meta("spin_us", config.wait.as_micros());
    t.set_meta(
        "cadence",
        backline_bench::trace::cadence_meta(&pacer, c.clock_mhz),
    );
    if let Some((ctrl, resp)) = c.pin {
        t.set_meta("pin", format!("controller={ctrl} responder={resp}"));
    }
    if transport == TransportKind::Rdma {
        let o = &config.rdma;
        t.set_meta(
            "rdma",
            format!(
                "device={} port={} gid_index={}",
                o.device.as_deref().unwrap_or("first"),
                o.port,
                o.gid_index.map_or("auto".to_string(), |g| g.to_string())
            ),
        );
    }
}

/// The statistics table: a row per run, the floor, and a ratio row per run.
pub(super) fn table(c: &BenchConfig, runs: &[Run], baseline: Option<&Run>) -> Table {
    let (transport, config) = (c.transport, &c.session);
    let cadence = if c.pacer.is_b2b() {
        "b2b"
    } else {
        "random-delayed"
    };
    let streaming = runs.iter().any(|r| r.extra.contains_key("shots"));
    let mut t = Table::new(format!(
        "backline bench: {transport}{}, {} ({cadence}), {} payload, {} in flight, {} x {} B slots",
        if c.cuqr { " (cuqr frames)" } else { "" },
        if streaming {
            format!(
                "{} shots each, every round enqueued, then get_corrections",
                c.shots
            )
        } else {
            format!("{} rounds each", c.rounds)
        },
        match c.payload_bytes {
            Some(b) => format!("{b} B"),
            None if streaming || runs.iter().any(|r| r.logical_failures.is_some()) => {
                "syndrome-sized".into()
            }
            None => "8 B".into(),
        },
        config.in_flight,
        config.geometry.depth,
        config.geometry.slot_bytes
    ));
    for r in runs {
        if let Some(s) = r.summary {
            t.push(r.label.clone(), r.round0, s);
        }
    }
    if let Some(b) = baseline
        && let Some(bs) = b.summary
    {
        t.push(b.label.clone(), b.round0, bs);
        for r in runs {
            if let Some(s) = r.summary {
                t.push_ratio(format!("{} / floor", r.label), &s, &bs);
            }
        }
    }
    t
}

fn stats_of(r: &Run) -> Option<JsonStats> {
    r.summary.map(|s| JsonStats::new(&s, r.round0))
}

/// The one JSON object of `--json`.
pub(super) fn json(c: &BenchConfig, runs: &[Run], baseline: Option<&Run>) -> String {
    let transport = c.transport;
    let base = baseline.and_then(stats_of);
    let reports: Vec<JsonReport> = runs
        .iter()
        .filter_map(|r| {
            let stats = stats_of(r)?;
            Some(JsonReport {
                transport: transport.name().into(),
                responder: r.label.clone(),
                rounds: c.rounds,
                completed: r.trace.completed(),
                ratio_median: base
                    .as_ref()
                    .map(|b| stats.summary.median_ns / b.summary.median_ns),
                stats,
                baseline: base.clone(),
                extra: {
                    let mut e = r.extra.clone();
                    if let Some(k) = r.logical_failures {
                        e.insert("logical_failures".into(), serde_json::json!(k));
                    }
                    if let Some(m) = &r.slots {
                        e.insert("slot_median_ns".into(), serde_json::json!(m));
                    }
                    e
                },
            })
        })
        .collect();
    match reports.len() {
        1 => reports[0].to_line(),
        _ => serde_json::json!({
            "transport": transport.name(),
            "rounds": c.rounds,
            "runs": reports,
        })
        .to_string(),
    }
}

/// The logical failures of a streaming run's JSON fields.
pub(super) fn o_logical(fields: &serde_json::Map<String, serde_json::Value>) -> u64 {
    fields
        .get("logical_failures")
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::slot_spread_line;

    #[test]
    fn a_floor_that_moved_during_the_run_is_said() {
        use super::{floor_halves, floor_moved_line};
        // The first round before is cold and left out.
        let h = floor_halves(&[9000.0, 130.0, 131.0, 129.0], &[450.0, 452.0, 449.0]).unwrap();
        assert_eq!(h, (130.0, 450.0));
        let line = floor_moved_line(h).unwrap();
        assert!(
            line.contains("from 0.130 µs before the runs to 0.450 µs after"),
            "{line}"
        );
        assert_eq!(floor_moved_line((130.0, 140.0)), None);
        assert_eq!(floor_halves(&[9000.0], &[1.0]), None);
    }

    #[test]
    fn a_slot_spread_is_said_only_when_slots_differ() {
        let even = [Some(200.0), Some(210.0), None, Some(230.0)];
        assert_eq!(slot_spread_line("steane", &even), None);
        let uneven = [Some(290.0), Some(424.0), None, Some(488.0)];
        let line = slot_spread_line("steane", &uneven).unwrap();
        assert!(
            line.starts_with("steane: the ring's slots differ, slowest median 1.68x"),
            "{line}"
        );
        assert!(line.ends_with("0.290 0.424 - 0.488"), "{line}");
        assert_eq!(slot_spread_line("x", &[Some(1.0)]), None);
    }
}
