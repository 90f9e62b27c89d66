//! What the two command-line binaries, `backline` and `backline-apu`, do alike at their edges,
//! defined once: parse the flags, a bad one being one line on stderr ([`parse`]); take a
//! closed stdout for a normal end ([`broken_pipe`]); summarise an engine's trace (the
//! simulator's, or the board's trace RAM) as the one `--json` object ([`trace_json_line`]).
//! Their exit statuses are [`crate::exit`]'s.

use std::process::ExitCode;

use crate::Trace;
use crate::exit::BAD_INPUT;
use crate::report::{JsonReport, JsonStats, json_line_without_stats};

/// Parses the command line with `command`. Help and version are printed and end the process
/// (status 0), as clap does; any other clap error is printed as one line,
/// [`usage_line`], and comes back as the exit status [`BAD_INPUT`].
pub fn parse<T: clap::FromArgMatches>(prog: &str, command: clap::Command) -> Result<T, ExitCode> {
    let parsed = command
        .try_get_matches()
        .and_then(|m| T::from_arg_matches(&m));
    parsed.map_err(|e| {
        use clap::error::ErrorKind::*;
        if matches!(
            e.kind(),
            DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
        ) {
            e.exit();
        }
        eprintln!("{}", usage_line(prog, &e.to_string()));
        ExitCode::from(BAD_INPUT)
    })
}

/// A clap error as one line, like every other error of `prog`: clap's first line without its
/// `error: ` prefix, `PROG: error: … (see --help)`. A value clap quotes (`invalid value
/// '…' for '--flag'`) is cut to an excerpt ([`backline_decoders::io::excerpt`]), so that a
/// 100,000-character argument is not echoed whole.
pub fn usage_line(prog: &str, clap_message: &str) -> String {
    let first = clap_message.lines().next().unwrap_or("bad arguments");
    format!(
        "{prog}: error: {} (see --help)",
        quoted_excerpts(first.trim_start_matches("error: "))
    )
}

/// `line` with every `'…'`-quoted part cut to an excerpt; a quote left open is cut too.
fn quoted_excerpts(line: &str) -> String {
    use backline_decoders::io::excerpt;
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('\'') {
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        // The value ends at the quote before ` for '`, clap's next words, when there is one.
        let close = after
            .find("' for '")
            .or_else(|| after.find('\''))
            .unwrap_or(after.len());
        out.push_str(&excerpt(&after[..close]));
        rest = &after[close..];
        if let Some(r) = rest.strip_prefix('\'') {
            out.push('\'');
            rest = r;
        }
    }
    out.push_str(rest);
    out
}

/// Whether `e`, or any error under it, is a broken pipe: stdout closed by its reader
/// (`backline man | head`), which ends the output and is no failure.
pub fn broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(x) = cur {
        if x.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        cur = x.source();
    }
    false
}

/// The `--json` line of an engine's trace: a [`JsonReport`] of its warm completed rounds,
/// round 0 when it completed ([`Trace::round0_ns`]), `completed` ([`Trace::completed`]) and,
/// when the trace splits its RTTs, their medians as `split` with the `service` they name
/// (`extra`'s own `service`, else the trace's). With no warm completed round (every one timed
/// out or saturated its trace entry), [`json_line_without_stats`]: the counts say so.
/// `extra` holds the source's own fields.
pub fn trace_json_line(
    trace: &Trace,
    transport: &str,
    responder: &str,
    rounds: u64,
    mut extra: serde_json::Map<String, serde_json::Value>,
) -> String {
    if let Some(m) = trace.split_medians() {
        let split = serde_json::to_value(m).expect("split medians serialise");
        extra.insert("split".into(), split);
        extra
            .entry("service")
            .or_insert_with(|| trace.meta("service").unwrap_or("").into());
    }
    let completed = trace.completed();
    match trace.summary() {
        Some(s) => JsonReport {
            transport: transport.into(),
            responder: responder.into(),
            rounds,
            completed,
            stats: JsonStats::new(&s, trace.round0_ns()),
            baseline: None,
            ratio_median: None,
            extra,
        }
        .to_line(),
        None => json_line_without_stats(transport, responder, rounds, completed, extra),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Clock, RoundStatus, TraceRow};

    #[test]
    fn a_clap_error_is_its_first_line() {
        let msg = "error: unexpected argument '--bogus' found\n\n  tip: …\n\nUsage: x\n";
        assert_eq!(
            usage_line("backline-apu", msg),
            "backline-apu: error: unexpected argument '--bogus' found (see --help)"
        );
        assert_eq!(
            usage_line("backline", ""),
            "backline: error: bad arguments (see --help)"
        );
        // A long value is cut; its quotes and the flag's name stay.
        let long = "9".repeat(100_000);
        let msg = format!(
            "error: invalid value '{long}' for '--max-iter <MAX_ITER>': expected an integer \
             in 0..=1048576\n"
        );
        let line = usage_line("backline", &msg);
        assert!(line.len() < 300, "{line}");
        assert!(
            line.starts_with(&format!(
                "backline: error: invalid value '{}…' for '--max-iter",
                "9".repeat(80)
            )),
            "{line}"
        );
        assert!(
            line.ends_with("expected an integer in 0..=1048576 (see --help)"),
            "{line}"
        );
        let odd = usage_line("b", &format!("error: x 'it''s {long}"));
        assert!(odd.len() < 300, "{odd}");
    }

    #[test]
    fn a_broken_pipe_is_found_under_other_errors() {
        #[derive(Debug, thiserror::Error)]
        #[error("printing")]
        struct Outer(#[source] std::io::Error);
        let pipe = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(broken_pipe(&pipe()));
        assert!(broken_pipe(&Outer(pipe())));
        assert!(!broken_pipe(&Outer(std::io::Error::other("disk full"))));
    }

    fn trace(statuses: &[RoundStatus]) -> Trace {
        let clock = Clock::Cycles { mhz: 200.0 };
        let mut t = Trace::with_capacity(clock, statuses.len());
        for (i, &status) in statuses.iter().enumerate() {
            t.rows.push(TraceRow {
                round: i as u64,
                rtt_ns: clock.cycles_to_ns(400 + i as u64),
                rtt_cycles: Some(400 + i as u64),
                quiet_ns: 0.0,
                status,
                cold: i == 0,
            });
        }
        t
    }

    #[test]
    fn a_trace_summary_has_round0_completed_and_the_split() {
        use RoundStatus::{Ok, Timeout};
        let mut t = trace(&[Ok, Ok, Timeout, Ok]);
        t.set_meta("service", "modelled: echo, 200 ns");
        t.set_splits(&[(100, 40); 4]);
        let mut extra = serde_json::Map::new();
        extra.insert("mode".into(), "hw-loop".into());
        let v: serde_json::Value =
            serde_json::from_str(&trace_json_line(&t, "ernic", "peer", 4, extra)).unwrap();
        assert_eq!(
            (v["rounds"].as_u64(), v["completed"].as_u64()),
            (Some(4), Some(3))
        );
        assert_eq!(v["round0_ns"], 2000.0);
        assert_eq!(v["split"]["rounds"], 2);
        assert_eq!(v["service"], "modelled: echo, 200 ns");
        assert_eq!(v["mode"], "hw-loop");
        // No warm round completed: the counts, no statistics; a cold round 0 that failed is
        // no round 0.
        let v: serde_json::Value = serde_json::from_str(&trace_json_line(
            &trace(&[Timeout, Timeout]),
            "ernic",
            "peer",
            2,
            serde_json::Map::new(),
        ))
        .unwrap();
        assert_eq!(v["completed"], 0);
        assert!(v.get("median_ns").is_none() && v.get("round0_ns").is_none());
    }
}
