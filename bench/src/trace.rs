//! The CSV trace: a self-describing header of `# key: value` lines, then one row per round,
//! round 0 included and marked `cold`.
//!
//! ```text
//! # backline trace v1
//! # clock: host-ns
//! # source: bench
//! # transport: memcpy
//! # responder: steane
//! round,rtt_ns,rtt_cycles,quiet_ns,status,cold
//! 0,4640.0,,0,ok,1
//! 1,512.3,,0,ok,0
//! ```
//!
//! `rtt_cycles` is filled when the times come from an engine clock (`clock: cycles @ 200 MHz`),
//! and `rtt_ns` is then `rtt_cycles × 1000 / MHz`. `quiet_ns` is the pacer's quiet period
//! before the round, never part of the RTT. `status` is a [`RoundStatus`] name.
//!
//! A trace of the simulated board may split each RTT into its parts ([`CycleSplit`]): three
//! more columns, [`SPLIT_COLUMNS`], `engine_cycles` (simulated), `fabric_cycles` (the fabric
//! model) and `service_cycles` (the remote side's service: measured for a real coprocessor),
//! which add up to `rtt_cycles`; empty for a round without a reply.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use crate::Summary;

/// First line of every trace.
pub const TRACE_MAGIC: &str = "# backline trace v1";

/// Column names, in order.
pub const COLUMNS: [&str; 6] = [
    "round",
    "rtt_ns",
    "rtt_cycles",
    "quiet_ns",
    "status",
    "cold",
];

/// The extra columns of a trace with split RTTs, after [`COLUMNS`].
pub const SPLIT_COLUMNS: [&str; 3] = ["engine_cycles", "fabric_cycles", "service_cycles"];

/// One RTT split into its parts, cycles: they add up to the round's `rtt_cycles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CycleSplit {
    /// The engine's own cycles (simulated RTL and the ERNIC model's fixed costs).
    pub engine_cycles: u64,
    /// The modelled fabric, both legs.
    pub fabric_cycles: u64,
    /// The remote side's service time (measured for a real coprocessor).
    pub service_cycles: u64,
}

/// Medians of the parts of the split warm, completed rounds ([`Trace::split_medians`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SplitMedians {
    /// Rounds that had a split.
    pub rounds: u64,
    /// Median engine cycles.
    pub engine_cycles: f64,
    /// Median fabric cycles.
    pub fabric_cycles: f64,
    /// Median service cycles.
    pub service_cycles: f64,
}

impl SplitMedians {
    /// One line for a summary: `RTT split (median of 9999 rounds): engine 52 cycles
    /// (simulated) + fabric 404 cycles (model) + service 3010 cycles (measured: …)`.
    pub fn line(&self, service: &str) -> String {
        format!(
            "RTT split (median of {} rounds): engine {} cycles (simulated) + fabric {} cycles \
             (model) + service {} cycles ({service})",
            self.rounds, self.engine_cycles, self.fabric_cycles, self.service_cycles
        )
    }
}

fn median(mut v: Vec<u64>) -> f64 {
    v.sort_unstable();
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2] as f64,
        _ => (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0,
    }
}

/// Where a trace's times come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Clock {
    /// Host monotonic clock, nanoseconds.
    HostNs,
    /// An engine clock counted in cycles at this frequency.
    Cycles {
        /// Clock frequency.
        mhz: f64,
    },
}

impl Clock {
    fn header(&self) -> String {
        match self {
            Clock::HostNs => "host-ns".to_string(),
            Clock::Cycles { mhz } => format!("cycles @ {mhz} MHz"),
        }
    }

    fn parse(s: &str) -> Option<Clock> {
        if s == "host-ns" {
            return Some(Clock::HostNs);
        }
        let mhz = s.strip_prefix("cycles @ ")?.strip_suffix(" MHz")?;
        // A clock is a finite, positive frequency.
        let mhz: f64 = mhz.trim().parse().ok()?;
        (mhz.is_finite() && mhz > 0.0).then_some(Clock::Cycles { mhz })
    }

    /// Nanoseconds of `cycles` at this clock (`HostNs` treats them as ns).
    pub fn cycles_to_ns(&self, cycles: u64) -> f64 {
        match self {
            Clock::HostNs => cycles as f64,
            Clock::Cycles { mhz } => cycles as f64 * 1000.0 / mhz,
        }
    }
}

/// How one round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoundStatus {
    /// Reply arrived with status ok (and, where checked, the expected content).
    Ok,
    /// No reply within the timeout.
    Timeout,
    /// The coprocessor did not know the `decoder_id`.
    UnknownDecoder,
    /// The coprocessor rejected the payload length.
    BadLength,
    /// The coprocessor function failed.
    DecoderFailed,
    /// A reply arrived but differed from the expected one.
    Mismatch,
    /// The engine's 16-bit RTT counter saturated (RTT ≥ 0xFFFF cycles).
    Saturated,
    /// The session failed on this round other than by a timeout: the coprocessor went away,
    /// or its reply broke the protocol.
    Error,
    /// Posted, but never answered: an earlier round ended the session while this one was in
    /// flight.
    Abandoned,
}

impl RoundStatus {
    /// All statuses, for parsing.
    pub const ALL: [RoundStatus; 9] = [
        RoundStatus::Ok,
        RoundStatus::Timeout,
        RoundStatus::UnknownDecoder,
        RoundStatus::BadLength,
        RoundStatus::DecoderFailed,
        RoundStatus::Mismatch,
        RoundStatus::Saturated,
        RoundStatus::Error,
        RoundStatus::Abandoned,
    ];

    /// Name used in the CSV.
    pub const fn name(self) -> &'static str {
        match self {
            RoundStatus::Ok => "ok",
            RoundStatus::Timeout => "timeout",
            RoundStatus::UnknownDecoder => "unknown_decoder",
            RoundStatus::BadLength => "bad_length",
            RoundStatus::DecoderFailed => "decoder_failed",
            RoundStatus::Mismatch => "mismatch",
            RoundStatus::Saturated => "saturated",
            RoundStatus::Error => "error",
            RoundStatus::Abandoned => "abandoned",
        }
    }

    /// Parses a CSV name.
    pub fn parse(s: &str) -> Option<RoundStatus> {
        RoundStatus::ALL.into_iter().find(|r| r.name() == s)
    }
}

/// One round of a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRow {
    /// Round number, from 0.
    pub round: u64,
    /// Round-trip time in ns.
    pub rtt_ns: f64,
    /// Round-trip time in engine cycles, when the clock counts cycles.
    pub rtt_cycles: Option<u64>,
    /// Quiet period before the round, ns (0 for b2b).
    pub quiet_ns: f64,
    /// How the round ended.
    pub status: RoundStatus,
    /// True for the cold first round (connection warm-up), kept out of the statistics.
    pub cold: bool,
}

/// Why a trace could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// File system error, with the path.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a backline trace or a line is malformed.
    #[error("{path}:{line}: {msg}")]
    Format {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
}

/// A whole trace: header metadata and rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Time base.
    pub clock: Clock,
    /// `key: value` header lines other than the clock, in order (e.g. source, transport,
    /// responder, cadence).
    pub meta: Vec<(String, String)>,
    /// One row per round.
    pub rows: Vec<TraceRow>,
    /// The RTT split of each row (empty: the trace has no split; else one per row, `None`
    /// for a round without a reply).
    pub splits: Vec<Option<CycleSplit>>,
}

impl Trace {
    /// An empty trace with room for `rounds` rows.
    pub fn with_capacity(clock: Clock, rounds: usize) -> Trace {
        Trace {
            clock,
            meta: Vec::new(),
            rows: Vec::with_capacity(rounds),
            splits: Vec::new(),
        }
    }

    /// Splits every completed row's RTT with `(fabric, service)` cycles per round (by row
    /// index): the engine's part is the rest. Rows without a reply, or beyond `parts`, get
    /// none.
    pub fn set_splits(&mut self, parts: &[(u64, u64)]) {
        self.splits = self
            .rows
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let (fabric, service) = *parts.get(k)?;
                let rtt = r.rtt_cycles.filter(|_| r.status == RoundStatus::Ok)?;
                Some(CycleSplit {
                    engine_cycles: rtt.saturating_sub(fabric + service),
                    fabric_cycles: fabric,
                    service_cycles: service,
                })
            })
            .collect();
    }

    /// Medians of the split parts over the warm, completed rounds that have one.
    pub fn split_medians(&self) -> Option<SplitMedians> {
        let parts: Vec<CycleSplit> = self
            .rows
            .iter()
            .zip(&self.splits)
            .filter(|(r, _)| !r.cold && r.status == RoundStatus::Ok)
            .filter_map(|(_, s)| *s)
            .collect();
        if parts.is_empty() {
            return None;
        }
        Some(SplitMedians {
            rounds: parts.len() as u64,
            engine_cycles: median(parts.iter().map(|p| p.engine_cycles).collect()),
            fabric_cycles: median(parts.iter().map(|p| p.fabric_cycles).collect()),
            service_cycles: median(parts.iter().map(|p| p.service_cycles).collect()),
        })
    }

    /// Adds a header line.
    pub fn set_meta(&mut self, key: &str, value: impl ToString) {
        let value = value.to_string();
        match self.meta.iter_mut().find(|(k, _)| k == key) {
            Some(kv) => kv.1 = value,
            None => self.meta.push((key.to_string(), value)),
        }
    }

    /// A header value.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The cold round(s), usually just round 0.
    pub fn cold_rows(&self) -> impl Iterator<Item = &TraceRow> {
        self.rows.iter().filter(|r| r.cold)
    }

    /// Round 0's RTT when it completed (status ok): the cold round that tables and JSON
    /// reports show apart from the statistics.
    pub fn round0_ns(&self) -> Option<f64> {
        self.cold_rows()
            .next()
            .filter(|r| r.status == RoundStatus::Ok)
            .map(|r| r.rtt_ns)
    }

    /// Rounds that completed with an ok reply, the cold one included.
    pub fn completed(&self) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.status == RoundStatus::Ok)
            .count() as u64
    }

    /// RTTs of the warm rounds that completed (status ok), in round order.
    pub fn warm_ok_rtts_ns(&self) -> Vec<f64> {
        self.rows
            .iter()
            .filter(|r| !r.cold && r.status == RoundStatus::Ok)
            .map(|r| r.rtt_ns)
            .collect()
    }

    /// Statistics of the warm, completed rounds.
    pub fn summary(&self) -> Option<Summary> {
        Summary::of(&self.warm_ok_rtts_ns())
    }

    /// The median RTT of the warm, completed rounds of each ring slot: `slot_of(round)` names
    /// a round's slot (of `slots`); `None` for a slot that no such round used. A cost that
    /// depends on the slot (a line's state, its place in a page) shows as a spread here.
    pub fn slot_medians(&self, slots: usize, slot_of: impl Fn(u64) -> usize) -> Vec<Option<f64>> {
        let mut by_slot: Vec<Vec<f64>> = vec![Vec::new(); slots];
        for r in self
            .rows
            .iter()
            .filter(|r| !r.cold && r.status == RoundStatus::Ok)
        {
            if let Some(v) = by_slot.get_mut(slot_of(r.round)) {
                v.push(r.rtt_ns);
            }
        }
        by_slot
            .into_iter()
            .map(|mut v| {
                (!v.is_empty()).then(|| {
                    v.sort_by(f64::total_cmp);
                    v[v.len() / 2]
                })
            })
            .collect()
    }

    /// Rounds per status other than ok, for reporting.
    pub fn failures(&self) -> Vec<(RoundStatus, u64)> {
        RoundStatus::ALL
            .into_iter()
            .filter(|s| *s != RoundStatus::Ok)
            .map(|s| (s, self.rows.iter().filter(|r| r.status == s).count() as u64))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Writes the trace as CSV.
    pub fn write_csv(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        writeln!(out, "{TRACE_MAGIC}")?;
        writeln!(out, "# clock: {}", self.clock.header())?;
        for (k, v) in &self.meta {
            writeln!(out, "# {k}: {}", v.replace('\n', " "))?;
        }
        let split = !self.splits.is_empty();
        if split {
            writeln!(out, "{},{}", COLUMNS.join(","), SPLIT_COLUMNS.join(","))?;
        } else {
            writeln!(out, "{}", COLUMNS.join(","))?;
        }
        for (k, r) in self.rows.iter().enumerate() {
            match r.rtt_cycles {
                Some(c) => write!(out, "{},{:.1},{c},", r.round, r.rtt_ns)?,
                None => write!(out, "{},{:.1},,", r.round, r.rtt_ns)?,
            }
            write!(
                out,
                "{:.0},{},{}",
                r.quiet_ns,
                r.status.name(),
                u8::from(r.cold)
            )?;
            if split {
                match self.splits.get(k).copied().flatten() {
                    Some(p) => write!(
                        out,
                        ",{},{},{}",
                        p.engine_cycles, p.fabric_cycles, p.service_cycles
                    )?,
                    None => write!(out, ",,,")?,
                }
            }
            writeln!(out)?;
        }
        out.flush()
    }

    /// Writes the trace to a file.
    pub fn save(&self, path: &Path) -> Result<(), TraceError> {
        let io = |source| TraceError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut f = std::fs::File::create(path).map_err(io)?;
        self.write_csv(&mut f).map_err(io)
    }

    /// Appends the rounds of an engine's trace RAM: one 16-bit RTT in cycles per round, with
    /// the engine's reserved values (`TRACE_TIMEOUT`: the round timed out;
    /// `TRACE_AXI_ERROR`: an ERNIC-side AXI error failed it; `TRACE_SATURATED`: the counter
    /// saturated) turned into statuses, and the quiet period
    /// before round `k` from `quiet_cycles(k)`. Round 0 is marked cold.
    pub fn push_engine_rounds(&mut self, entries: &[u16], quiet_cycles: impl Fn(usize) -> u64) {
        use backline_regmap as rm;
        let clock = self.clock;
        self.rows
            .extend(entries.iter().enumerate().map(|(k, &c)| TraceRow {
                round: k as u64,
                rtt_ns: clock.cycles_to_ns(u64::from(c)),
                rtt_cycles: Some(u64::from(c)),
                quiet_ns: clock.cycles_to_ns(quiet_cycles(k)),
                status: match c {
                    rm::TRACE_TIMEOUT => RoundStatus::Timeout,
                    rm::TRACE_AXI_ERROR => RoundStatus::Error,
                    rm::TRACE_SATURATED => RoundStatus::Saturated,
                    _ => RoundStatus::Ok,
                },
                cold: k == 0,
            }));
    }

    /// Reads a trace file.
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let f = std::fs::File::open(path).map_err(|source| TraceError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Trace::read_csv(f, &path.display().to_string())
    }

    /// Reads a trace; `name` labels errors.
    pub fn read_csv(input: impl Read, name: &str) -> Result<Trace, TraceError> {
        let err = |line: usize, msg: String| TraceError::Format {
            path: name.to_string(),
            line,
            msg,
        };
        let mut lines = BufReader::new(input).lines().enumerate();
        let next = |lines: &mut dyn Iterator<Item = (usize, std::io::Result<String>)>| {
            lines.next().map(|(i, l)| {
                l.map(|l| (i + 1, l)).map_err(|source| TraceError::Io {
                    path: name.to_string(),
                    source,
                })
            })
        };
        match next(&mut lines).transpose()? {
            Some((_, l)) if l.trim_end() == TRACE_MAGIC => {}
            _ => {
                return Err(err(
                    1,
                    format!("not a backline trace (expected `{TRACE_MAGIC}`)"),
                ));
            }
        }
        let mut clock = None;
        let mut meta = Vec::new();
        let mut rows = Vec::new();
        let mut splits = Vec::new();
        let mut header_seen = false;
        let mut split = false;
        let plain = COLUMNS.join(",");
        let with_split = format!("{plain},{}", SPLIT_COLUMNS.join(","));
        while let Some((n, line)) = next(&mut lines).transpose()? {
            let line = line.trim_end();
            if let Some(kv) = line.strip_prefix("# ") {
                let (k, v) = kv
                    .split_once(": ")
                    .ok_or_else(|| err(n, format!("header line without `key: value`: {line}")))?;
                if k == "clock" {
                    clock =
                        Some(Clock::parse(v).ok_or_else(|| err(n, format!("bad clock `{v}`")))?);
                } else {
                    meta.push((k.to_string(), v.to_string()));
                }
                continue;
            }
            if !header_seen {
                split = line == with_split;
                if line != plain && !split {
                    return Err(err(
                        n,
                        format!("expected column header `{plain}` or `{with_split}`"),
                    ));
                }
                header_seen = true;
                continue;
            }
            if line.is_empty() {
                continue;
            }
            let (row, s) = parse_row(line, split).map_err(|m| err(n, m))?;
            rows.push(row);
            if split {
                splits.push(s);
            }
        }
        Ok(Trace {
            clock: clock.ok_or_else(|| err(2, "missing `# clock:` line".into()))?,
            meta,
            rows,
            splits,
        })
    }
}

fn parse_row(line: &str, split: bool) -> Result<(TraceRow, Option<CycleSplit>), String> {
    let f: Vec<&str> = line.split(',').collect();
    let want = COLUMNS.len() + if split { SPLIT_COLUMNS.len() } else { 0 };
    if f.len() != want {
        return Err(format!("{} fields, expected {want}", f.len()));
    }
    let parts = if split && f[COLUMNS.len()..].iter().all(|v| !v.is_empty()) {
        let int = |i: usize| -> Result<u64, String> {
            f[COLUMNS.len() + i].parse().map_err(|_| {
                format!(
                    "{} `{}` is not an integer",
                    SPLIT_COLUMNS[i],
                    f[COLUMNS.len() + i]
                )
            })
        };
        Some(CycleSplit {
            engine_cycles: int(0)?,
            fabric_cycles: int(1)?,
            service_cycles: int(2)?,
        })
    } else {
        None
    };
    // A time is a finite, non-negative number: `inf` or `NaN` would poison every statistic
    // and every plot axis after it.
    let num = |i: usize| -> Result<f64, String> {
        match f[i].parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            Ok(_) => Err(format!(
                "{} `{}` is not a finite non-negative number",
                COLUMNS[i], f[i]
            )),
            Err(_) => Err(format!("{} `{}` is not a number", COLUMNS[i], f[i])),
        }
    };
    let row = TraceRow {
        round: f[0]
            .parse()
            .map_err(|_| format!("round `{}` is not an integer", f[0]))?,
        rtt_ns: num(1)?,
        rtt_cycles: if f[2].is_empty() {
            None
        } else {
            Some(
                f[2].parse()
                    .map_err(|_| format!("rtt_cycles `{}` is not an integer", f[2]))?,
            )
        },
        quiet_ns: num(3)?,
        status: RoundStatus::parse(f[4]).ok_or_else(|| format!("unknown status `{}`", f[4]))?,
        cold: match f[5] {
            "1" => true,
            "0" => false,
            o => return Err(format!("cold `{o}` is not 0 or 1")),
        },
    };
    Ok((row, parts))
}

/// The `cadence` header of a trace, written the same by every source: `b2b`, or
/// `random-delayed freq=F span=0xS seed=0xD clock=C MHz`.
pub fn cadence_meta(pacer: &backline_pacer::PacerConfig, clock_mhz: f64) -> String {
    if pacer.is_b2b() {
        "b2b".to_string()
    } else {
        format!(
            "random-delayed freq={} span={:#x} seed={:#x} clock={clock_mhz} MHz",
            pacer.freq, pacer.span, pacer.seed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        let mut t = Trace::with_capacity(Clock::Cycles { mhz: 200.0 }, 3);
        t.set_meta("source", "sim");
        t.set_meta("transport", "ernic-model");
        for (i, c) in [900u64, 400, 401].into_iter().enumerate() {
            t.rows.push(TraceRow {
                round: i as u64,
                rtt_ns: Clock::Cycles { mhz: 200.0 }.cycles_to_ns(c),
                rtt_cycles: Some(c),
                quiet_ns: 0.0,
                status: RoundStatus::Ok,
                cold: i == 0,
            });
        }
        t.rows[2].status = RoundStatus::Timeout;
        t
    }

    #[test]
    fn csv_round_trips() {
        let t = sample();
        let mut buf = Vec::new();
        t.write_csv(&mut buf).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.starts_with("# backline trace v1\n# clock: cycles @ 200 MHz\n"));
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 1 + 3);
        let back = Trace::read_csv(&buf[..], "mem").unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn split_columns_round_trip_and_summarise() {
        let mut t = sample();
        t.splits = vec![
            Some(CycleSplit {
                engine_cycles: 100,
                fabric_cycles: 460,
                service_cycles: 340,
            }),
            Some(CycleSplit {
                engine_cycles: 20,
                fabric_cycles: 300,
                service_cycles: 80,
            }),
            None,
        ];
        let mut buf = Vec::new();
        t.write_csv(&mut buf).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains(
            "round,rtt_ns,rtt_cycles,quiet_ns,status,cold,engine_cycles,fabric_cycles,service_cycles\n"
        ));
        assert!(text.contains("\n1,2000.0,400,0,ok,0,20,300,80\n"), "{text}");
        assert!(text.ends_with(",timeout,0,,,\n"), "{text}");
        let back = Trace::read_csv(&buf[..], "mem").unwrap();
        assert_eq!(back, t);
        // Only the warm, completed round counts.
        let m = back.split_medians().unwrap();
        assert_eq!(
            (m.rounds, m.engine_cycles, m.fabric_cycles, m.service_cycles),
            (1, 20.0, 300.0, 80.0)
        );
        assert_eq!(sample().split_medians(), None);
        let bad = text.replace(",20,300,80", ",x,300,80");
        let e = Trace::read_csv(bad.as_bytes(), "s.csv").unwrap_err();
        assert!(
            e.to_string()
                .contains("engine_cycles `x` is not an integer"),
            "{e}"
        );
    }

    #[test]
    fn engine_rounds_decode_the_reserved_values() {
        let mut t = Trace::with_capacity(Clock::Cycles { mhz: 200.0 }, 4);
        t.push_engine_rounds(&[456, 0, 0xFFFF, 460], |k| 10 * k as u64);
        let st: Vec<RoundStatus> = t.rows.iter().map(|r| r.status).collect();
        assert_eq!(
            st,
            [
                RoundStatus::Ok,
                RoundStatus::Timeout,
                RoundStatus::Saturated,
                RoundStatus::Ok
            ]
        );
        assert_eq!(t.rows[0].rtt_ns, 2280.0);
        assert!(t.rows[0].cold && !t.rows[3].cold);
        assert_eq!(t.rows[3].quiet_ns, 150.0);
    }

    #[test]
    fn slot_medians_group_warm_ok_rounds_by_slot() {
        let mut t = Trace::with_capacity(Clock::HostNs, 0);
        for round in 0..12u64 {
            t.rows.push(TraceRow {
                round,
                // Slot 1 (odd rounds) is slow; round 0 (cold) and round 2 (failed) do not count.
                rtt_ns: match round {
                    0 => 1e6,
                    2 => 1e6,
                    r if r % 2 == 1 => 300.0 + r as f64,
                    r => 100.0 + r as f64,
                },
                rtt_cycles: None,
                quiet_ns: 0.0,
                status: if round == 2 {
                    RoundStatus::Timeout
                } else {
                    RoundStatus::Ok
                },
                cold: round == 0,
            });
        }
        let m = t.slot_medians(3, |r| (r % 2) as usize);
        // Slot 0: rounds 4, 6, 8, 10; slot 1: rounds 1, 3, …, 11; slot 2 unused.
        assert_eq!(m, vec![Some(108.0), Some(307.0), None]);
    }

    #[test]
    fn summary_excludes_cold_and_failed_rounds() {
        let t = sample();
        let s = t.summary().unwrap();
        assert_eq!(s.count, 1);
        assert_eq!(s.median_ns, 2000.0);
        assert_eq!(t.cold_rows().count(), 1);
        assert_eq!(t.failures(), vec![(RoundStatus::Timeout, 1)]);
        assert_eq!((t.round0_ns(), t.completed()), (Some(4500.0), 2));
        let mut cold_failed = t.clone();
        cold_failed.rows[0].status = RoundStatus::Timeout;
        assert_eq!(
            (cold_failed.round0_ns(), cold_failed.completed()),
            (None, 1)
        );
    }

    #[test]
    fn malformed_files_name_the_line() {
        let e = Trace::read_csv(&b"hello\n"[..], "x.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.csv:1: not a backline trace (expected `# backline trace v1`)"
        );
        let bad = "# backline trace v1\n# clock: host-ns\nround,rtt_ns,rtt_cycles,quiet_ns,status,cold\n0,1.0,,0,ok,1\n1,abc,,0,ok,0\n";
        let e = Trace::read_csv(bad.as_bytes(), "y.csv").unwrap_err();
        assert_eq!(e.to_string(), "y.csv:5: rtt_ns `abc` is not a number");
        // Non-finite times are refused (they made `backline plot` spin or panic).
        for v in ["inf", "NaN", "-1"] {
            let bad = format!(
                "# backline trace v1\n# clock: host-ns\nround,rtt_ns,rtt_cycles,quiet_ns,status,cold\n0,{v},,0,ok,1\n"
            );
            let e = Trace::read_csv(bad.as_bytes(), "z.csv").unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("z.csv:4: rtt_ns `{v}` is not a finite non-negative number")
            );
        }
    }
}
