//! Printed outputs: the statistics table of SPEC §9 (µs, round 0 apart, optional ratio rows)
//! and the one-object JSON report.

use std::fmt::Write as _;

use serde::Serialize;

use crate::Summary;

/// One line of the table: a label, the cold round-0 time, and the warm statistics.
#[derive(Debug, Clone)]
pub struct TableRow {
    /// What ran (responder, baseline, ratio).
    pub label: String,
    /// Round 0 in ns, if reported on this line.
    pub round0_ns: Option<f64>,
    /// Statistics in ns, or ratios when `ratio` is set.
    pub stats: Summary,
    /// Print the statistics as ratios (`1.07x`) rather than µs.
    pub ratio: bool,
}

/// The statistics table.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// A line printed above the table.
    pub title: String,
    /// Rows in print order.
    pub rows: Vec<TableRow>,
}

impl Table {
    /// A table with a title line.
    pub fn new(title: impl Into<String>) -> Table {
        Table {
            title: title.into(),
            rows: Vec::new(),
        }
    }

    /// Adds a row of times.
    pub fn push(&mut self, label: impl Into<String>, round0_ns: Option<f64>, stats: Summary) {
        self.rows.push(TableRow {
            label: label.into(),
            round0_ns,
            stats,
            ratio: false,
        });
    }

    /// Adds a row of ratios `a / b` of the statistics for which a ratio means something
    /// ([`Summary::ratio_to`]); round 0, std, min and max show `-` (one cold round over
    /// another is noise, not a comparison).
    pub fn push_ratio(&mut self, label: impl Into<String>, a: &Summary, b: &Summary) {
        self.rows.push(TableRow {
            label: label.into(),
            round0_ns: None,
            stats: a.ratio_to(b),
            ratio: true,
        });
    }

    /// Renders the table as text.
    pub fn render(&self) -> String {
        let label_w = self
            .rows
            .iter()
            .map(|r| r.label.chars().count())
            .max()
            .unwrap_or(0)
            .max(8);
        let mut s = String::new();
        if !self.title.is_empty() {
            let _ = writeln!(s, "{}", self.title);
        }
        let names = [
            "round0", "mean", "median", "std", "min", "max", "P99", "P99.9", "P99.99", "P99.999",
        ];
        let _ = write!(s, "{:label_w$}", "µs");
        for n in names {
            let _ = write!(s, " {n:>8}");
        }
        s.push('\n');
        for r in &self.rows {
            let _ = write!(s, "{:label_w$}", r.label);
            let cell = |v: f64| {
                if !v.is_finite() {
                    format!(" {:>8}", "-")
                } else if r.ratio {
                    format!(" {:>8}", format!("{v:.2}x"))
                } else {
                    format!(" {:>8.3}", v / 1000.0)
                }
            };
            s.push_str(&r.round0_ns.map_or_else(|| format!(" {:>8}", "-"), cell));
            for (_, v) in r.stats.fields() {
                s.push_str(&cell(v));
            }
            s.push('\n');
        }
        s
    }
}

/// Statistics as they appear in the JSON report (ns): `round0_ns`, then the [`Summary`]'s
/// fields (`mean_ns`, `median_ns`, `std_ns`, `min_ns`, `max_ns`, `p99_ns`, `p999_ns`,
/// `p9999_ns`, `p99999_ns`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JsonStats {
    /// Round 0 (cold), ns.
    pub round0_ns: Option<f64>,
    /// The warm rounds' statistics.
    #[serde(flatten)]
    pub summary: Summary,
}

impl JsonStats {
    /// From a summary and round 0.
    pub fn new(s: &Summary, round0_ns: Option<f64>) -> JsonStats {
        JsonStats {
            round0_ns,
            summary: *s,
        }
    }
}

/// The one JSON object that `--json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct JsonReport {
    /// Transport name.
    pub transport: String,
    /// Responder name.
    pub responder: String,
    /// Rounds run, round 0 included.
    pub rounds: u64,
    /// Rounds that completed with an ok reply.
    pub completed: u64,
    /// The statistics.
    #[serde(flatten)]
    pub stats: JsonStats,
    /// The same-run baseline, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<JsonStats>,
    /// median / baseline median, when the baseline ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_median: Option<f64>,
    /// Fields particular to a source (e.g. the simulator's `fsm_overhead_cycles`).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl JsonReport {
    /// Serialises on one line.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("report serialises")
    }
}

/// The `--json` line of a run in which no warm round completed with a usable RTT (every one
/// timed out or saturated the trace entry): the same fields as [`JsonReport`]'s but the
/// statistics, which are absent.
pub fn json_line_without_stats(
    transport: &str,
    responder: &str,
    rounds: u64,
    completed: u64,
    extra: serde_json::Map<String, serde_json::Value>,
) -> String {
    let mut m = serde_json::Map::new();
    m.insert("transport".into(), transport.into());
    m.insert("responder".into(), responder.into());
    m.insert("rounds".into(), rounds.into());
    m.insert("completed".into(), completed.into());
    m.extend(extra);
    serde_json::Value::Object(m).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_statistics_still_has_its_counts() {
        let mut extra = serde_json::Map::new();
        extra.insert("mismatches".into(), 0.into());
        let line = json_line_without_stats("ernic", "echo", 10, 0, extra);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            (v["rounds"].as_u64(), v["completed"].as_u64()),
            (Some(10), Some(0))
        );
        assert_eq!(v["mismatches"], 0);
        assert!(v.get("median_ns").is_none());
    }

    #[test]
    fn table_prints_microseconds_and_ratios() {
        let a = Summary::of(&[1500.0, 2500.0]).unwrap();
        let b = Summary::of(&[1000.0, 2000.0]).unwrap();
        let mut t = Table::new("demo");
        t.push("steane", Some(4640.0), a);
        t.push("floor", None, b);
        t.push_ratio("steane/floor", &a, &b);
        let s = t.render();
        assert!(s.contains("4.640"), "{s}");
        assert!(s.contains("1.500"), "{s}");
        assert_eq!(s.lines().count(), 5);
        // The ratio row: round 0, mean, median, std, min, max, then the percentiles.
        let ratio: Vec<&str> = s.lines().last().unwrap().split_whitespace().collect();
        assert_eq!(
            ratio[1..],
            [
                "-", "1.33x", "1.50x", "-", "-", "-", "1.25x", "1.25x", "1.25x", "1.25x"
            ],
            "{s}"
        );
    }

    /// The `--json` line, byte for byte: field names, their order, the number format.
    #[test]
    fn the_json_line_is_pinned() {
        let a = Summary::of(&[1500.0, 2500.0, 1234.5, 1e6]).unwrap();
        let b = Summary::of(&[100.0, 200.0]).unwrap();
        let mut extra = serde_json::Map::new();
        extra.insert("mismatches".into(), 0.into());
        extra.insert("mode".into(), "hw-loop".into());
        let r = JsonReport {
            transport: "memcpy".into(),
            responder: "echo".into(),
            rounds: 5,
            completed: 4,
            stats: JsonStats::new(&a, Some(9.5)),
            baseline: Some(JsonStats::new(&b, None)),
            ratio_median: Some(1.25),
            extra,
        };
        assert_eq!(
            r.to_line(),
            concat!(
                r#"{"transport":"memcpy","responder":"echo","rounds":5,"completed":4,"#,
                r#""round0_ns":9.5,"mean_ns":251308.625,"median_ns":1500.0,"std_ns":499127.88073889026,"#,
                r#""min_ns":1234.5,"max_ns":1000000.0,"p99_ns":1000000.0,"p999_ns":1000000.0,"#,
                r#""p9999_ns":1000000.0,"p99999_ns":1000000.0,"#,
                r#""baseline":{"round0_ns":null,"mean_ns":150.0,"median_ns":100.0,"std_ns":70.71067811865476,"#,
                r#""min_ns":100.0,"max_ns":200.0,"p99_ns":200.0,"p999_ns":200.0,"p9999_ns":200.0,"#,
                r#""p99999_ns":200.0},"ratio_median":1.25,"mismatches":0,"mode":"hw-loop"}"#,
            )
        );
    }

    #[test]
    fn json_has_the_documented_fields() {
        let a = Summary::of(&[1500.0, 2500.0]).unwrap();
        let mut extra = serde_json::Map::new();
        extra.insert("mismatches".into(), 0.into());
        let r = JsonReport {
            transport: "memcpy".into(),
            responder: "echo".into(),
            rounds: 3,
            completed: 3,
            stats: JsonStats::new(&a, Some(9.0)),
            baseline: Some(JsonStats::new(&a, None)),
            ratio_median: Some(1.0),
            extra,
        };
        let v: serde_json::Value = serde_json::from_str(&r.to_line()).unwrap();
        for k in [
            "transport",
            "responder",
            "rounds",
            "round0_ns",
            "mean_ns",
            "median_ns",
            "std_ns",
            "min_ns",
            "max_ns",
            "p99_ns",
            "p999_ns",
            "p9999_ns",
            "p99999_ns",
            "baseline",
            "ratio_median",
            "mismatches",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert!(v["baseline"].get("median_ns").is_some());
    }
}
