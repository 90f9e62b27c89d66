//! Hop probes: a timestamp per round at every hop it passes — the controller's
//! `stage_payload` and `post`, the transport's send and receive, the coprocessor seeing the
//! request, the function's start and end (and inside it a GPU proxy's hand-off, or a streaming
//! decoder's window bookkeeping and inner decode), the reply
//! leaving, the controller seeing it — keyed by the round. Off by default: every probe is one
//! predictable branch on a flag of its [`Recorder`] (or, for [`mark`] from inside a function,
//! of the calling thread).
//!
//! Timestamps are ticks of one clock every process of a machine shares ([`now`]): the TSC on
//! x86-64 (an invariant TSC, read in ~10 ns where `clock_gettime` takes ~40 ns on the VMs
//! measured), `CLOCK_MONOTONIC` nanoseconds elsewhere. So the hops between a controller and a
//! coprocessor process on one machine are differences of their stamps; durations are turned
//! into nanoseconds with [`ticks_per_ns`]; across machines only each side's own durations
//! mean anything.
//!
//! A [`Recorder`] is preallocated for the rounds it will see (an allocation that does not fit
//! is an error at set-up, never on the round path); [`Table`] merges recorders by round and
//! gives per-hop statistics ([`Table::stats`]); [`write_csv`] and [`load_csv`] carry the
//! hops of several sessions as one CSV file.
#![deny(missing_docs)]

use std::cell::Cell;
use std::fmt;
use std::io::Write;
use std::sync::OnceLock;

/// A hop stamp: TSC ticks on x86-64, `CLOCK_MONOTONIC` ns elsewhere.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions; every x86-64 CPU has it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        now_ns()
    }
}

/// Ticks of [`now`] per nanosecond, measured once per process against `CLOCK_MONOTONIC` over
/// 20 ms (exactly 1 where [`now`] is `CLOCK_MONOTONIC`).
pub fn ticks_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        if cfg!(not(target_arch = "x86_64")) {
            return 1.0;
        }
        let (t0, n0) = (now(), now_ns());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, n1) = (now(), now_ns());
        let rate = (t1.wrapping_sub(t0)) as f64 / (n1 - n0).max(1) as f64;
        if rate.is_finite() && rate > 0.0 {
            rate
        } else {
            1.0
        }
    })
}

/// `CLOCK_MONOTONIC` in nanoseconds.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC always exists on Linux (vDSO, no syscall).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The hops of a round, in the order a round passes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Hop {
    /// Controller: `stage_payload` called.
    Stage = 0,
    /// Controller: `post` returned (the request is in the ring, or handed to the transport).
    Post,
    /// Controller's transport: the request's datagram sent (udp) or RDMA WRITE posted.
    Sent,
    /// Coprocessor's transport: the request's datagram received (udp) or seen in the
    /// registered ring (rdma).
    Received,
    /// Coprocessor: the serving loop has the request.
    RequestSeen,
    /// Coprocessor: the function starts.
    FnStart,
    /// GPU proxy: the request is written into the kernel's ring.
    ProxyPosted,
    /// GPU proxy: the kernel's reply is seen.
    ProxySeen,
    /// Streaming decoder: the round is booked into its window (the inner decode, if the
    /// round completes a window, starts).
    WindowReady,
    /// Streaming decoder: the inner decode of a window returned.
    DecodeDone,
    /// Coprocessor: the function returned.
    FnEnd,
    /// Coprocessor: the reply is published (ring) or sent (udp, rdma).
    ReplySent,
    /// Controller's transport: the reply datagram received (udp) or seen (rdma).
    ReplyReceived,
    /// Controller: `collect` has the reply.
    ReplySeen,
}

/// Number of hops.
pub const HOPS: usize = 14;

impl Hop {
    /// Every hop, in order.
    pub const ALL: [Hop; HOPS] = [
        Hop::Stage,
        Hop::Post,
        Hop::Sent,
        Hop::Received,
        Hop::RequestSeen,
        Hop::FnStart,
        Hop::ProxyPosted,
        Hop::ProxySeen,
        Hop::WindowReady,
        Hop::DecodeDone,
        Hop::FnEnd,
        Hop::ReplySent,
        Hop::ReplyReceived,
        Hop::ReplySeen,
    ];

    /// The column name in CSV files and tables.
    pub const fn name(self) -> &'static str {
        match self {
            Hop::Stage => "stage",
            Hop::Post => "post",
            Hop::Sent => "sent",
            Hop::Received => "received",
            Hop::RequestSeen => "request_seen",
            Hop::FnStart => "fn_start",
            Hop::ProxyPosted => "proxy_posted",
            Hop::ProxySeen => "proxy_seen",
            Hop::WindowReady => "window_ready",
            Hop::DecodeDone => "decode_done",
            Hop::FnEnd => "fn_end",
            Hop::ReplySent => "reply_sent",
            Hop::ReplyReceived => "reply_received",
            Hop::ReplySeen => "reply_seen",
        }
    }

    /// The hop of a column name.
    pub fn from_name(s: &str) -> Option<Hop> {
        Hop::ALL.into_iter().find(|h| h.name() == s)
    }
}

impl fmt::Display for Hop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a recorder could not be made or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// Not enough memory for the rounds asked for.
    #[error("hop probes for {rounds} rounds need {bytes} bytes, which cannot be allocated")]
    OutOfMemory {
        /// Rounds asked for.
        rounds: u64,
        /// Bytes needed.
        bytes: u64,
    },
    /// A hop CSV file that is not one.
    #[error("{0}")]
    Csv(String),
    /// Writing or reading a file.
    #[error("{what}: {source}")]
    Io {
        /// What was done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Per-round timestamps of one side of one session. Round `r` lands in row `r` (rounds past
/// the capacity are not recorded). Disabled recorders record nothing and allocate nothing.
#[derive(Debug, Default)]
pub struct Recorder {
    enabled: bool,
    rows: Vec<[u64; HOPS]>,
}

impl Recorder {
    /// A recorder that records nothing (one branch per probe).
    pub const fn off() -> Recorder {
        Recorder {
            enabled: false,
            rows: Vec::new(),
        }
    }

    /// A recorder for rounds `0..rounds`, allocated now.
    pub fn with_rounds(rounds: u64) -> Result<Recorder, ProbeError> {
        let bytes = rounds.saturating_mul((HOPS * 8) as u64);
        let oom = || ProbeError::OutOfMemory { rounds, bytes };
        let n = usize::try_from(rounds).map_err(|_| oom())?;
        let mut rows: Vec<[u64; HOPS]> = Vec::new();
        rows.try_reserve_exact(n).map_err(|_| oom())?;
        rows.resize(n, [0; HOPS]);
        Ok(Recorder {
            enabled: true,
            rows,
        })
    }

    /// Whether it records.
    #[inline(always)]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Stamps `hop` of `round` now.
    #[inline(always)]
    pub fn stamp(&mut self, hop: Hop, round: u64) {
        if self.enabled {
            self.stamp_at(hop, round, now());
        }
    }

    /// Stamps `hop` of `round` with a time ([`now`]) taken earlier.
    #[inline]
    pub fn stamp_at(&mut self, hop: Hop, round: u64, t: u64) {
        if let Some(row) = self.rows.get_mut(round as usize) {
            row[hop as usize] = t;
        }
    }

    /// The recorded rows (0 = not recorded).
    pub fn rows(&self) -> &[[u64; HOPS]] {
        &self.rows
    }

    /// Stamps the sub-hops [`mark`] collected on this thread since the last call into `round`.
    #[inline(always)]
    pub fn take_marks(&mut self, round: u64) {
        if self.enabled {
            MARKS.with(|m| {
                for (i, cell) in m.iter().enumerate() {
                    let t = cell.replace(0);
                    if t != 0
                        && let Some(row) = self.rows.get_mut(round as usize)
                    {
                        row[i] = t;
                    }
                }
            });
        }
    }
}

thread_local! {
    static MARKING: Cell<bool> = const { Cell::new(false) };
    static MARKS: [Cell<u64>; HOPS] = const { [const { Cell::new(0) }; HOPS] };
}

/// Lets code deeper in the call chain of this thread ([`mark`], e.g. a GPU proxy inside a
/// coprocessor function) record sub-hops; a serving loop with probes on calls this once.
pub fn enable_marks(on: bool) {
    MARKING.with(|m| m.set(on));
}

/// Records `hop` now for the round the calling thread is serving, if its serving loop has
/// probes on ([`enable_marks`]); one thread-local branch otherwise.
#[inline]
pub fn mark(hop: Hop) {
    if MARKING.with(|m| m.get()) {
        MARKS.with(|m| m[hop as usize].set(now()));
    }
}

/// Median, P99 and P99.9 of one hop's duration (from the previous recorded hop of the same
/// round), in ns, over the rounds that have both stamps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HopStats {
    /// The hop.
    pub hop: Hop,
    /// The hop before it (the duration's start).
    pub from: Hop,
    /// Rounds with both stamps.
    pub rounds: u64,
    /// Median duration, ns.
    pub median_ns: f64,
    /// P99, ns.
    pub p99_ns: f64,
    /// P99.9, ns.
    pub p999_ns: f64,
}

/// The hops of one session's rounds, merged from the recorders of both sides (and, across
/// processes on one machine, from a CSV file the other side wrote).
#[derive(Debug, Default, Clone)]
pub struct Table {
    rows: Vec<[u64; HOPS]>,
}

impl Table {
    /// An empty table.
    pub fn new() -> Table {
        Table::default()
    }

    /// Adds the stamps of `rows` (round = index); stamps already present stay.
    pub fn merge(&mut self, rows: &[[u64; HOPS]]) {
        if self.rows.len() < rows.len() {
            self.rows.resize(rows.len(), [0; HOPS]);
        }
        for (d, s) in self.rows.iter_mut().zip(rows) {
            for (a, &b) in d.iter_mut().zip(s) {
                if *a == 0 {
                    *a = b;
                }
            }
        }
    }

    /// Keeps the first `rounds` rows (the rounds that ran).
    pub fn truncate(&mut self, rounds: usize) {
        self.rows.truncate(rounds);
    }

    /// Rows (round = index).
    pub fn rows(&self) -> &[[u64; HOPS]] {
        &self.rows
    }

    /// The hops recorded in at least one round, in order.
    pub fn hops(&self) -> Vec<Hop> {
        Hop::ALL
            .into_iter()
            .filter(|h| self.rows.iter().any(|r| r[*h as usize] != 0))
            .collect()
    }

    /// Per-hop statistics, skipping round 0 (the cold round), each hop timed from the previous
    /// recorded hop of its round.
    pub fn stats(&self) -> Vec<HopStats> {
        let rate = ticks_per_ns();
        let hops = self.hops();
        let mut out = Vec::new();
        for w in hops.windows(2) {
            let (from, hop) = (w[0], w[1]);
            let mut d: Vec<f64> = self
                .rows
                .iter()
                .skip(1)
                .filter(|r| r[from as usize] != 0 && r[hop as usize] != 0)
                .map(|r| (r[hop as usize] as f64 - r[from as usize] as f64) / rate)
                .collect();
            if d.is_empty() {
                continue;
            }
            d.sort_by(f64::total_cmp);
            let q = |p: f64| d[((d.len() - 1) as f64 * p).round() as usize];
            out.push(HopStats {
                hop,
                from,
                rounds: d.len() as u64,
                median_ns: q(0.5),
                p99_ns: q(0.99),
                p999_ns: q(0.999),
            });
        }
        out
    }

    /// A table of [`Table::stats`] for people, one hop a line.
    pub fn render(&self, title: &str) -> String {
        let mut s = format!(
            "{title}\n{:<28} {:>9} {:>10} {:>10} {:>10}\n",
            "hop (µs)", "rounds", "median", "P99", "P99.9"
        );
        for h in self.stats() {
            s.push_str(&format!(
                "{:<28} {:>9} {:>10.3} {:>10.3} {:>10.3}\n",
                format!("{} → {}", h.from, h.hop),
                h.rounds,
                h.median_ns / 1e3,
                h.p99_ns / 1e3,
                h.p999_ns / 1e3
            ));
        }
        s
    }
}

/// The hops recorded in any of `tables`, in order.
fn hops_of(tables: &[(u64, &Table)]) -> Vec<Hop> {
    Hop::ALL
        .into_iter()
        .filter(|h| {
            tables
                .iter()
                .any(|(_, t)| t.rows.iter().any(|r| r[*h as usize] != 0))
        })
        .collect()
}

/// Writes the hops of one or more sessions, one row per round: `session`, `round`, then one
/// column per hop recorded anywhere ([`now`]'s clock; empty when not recorded).
pub fn write_csv(tables: &[(u64, &Table)], out: &mut dyn Write) -> std::io::Result<()> {
    let hops = hops_of(tables);
    let clock = if cfg!(target_arch = "x86_64") {
        format!("TSC ticks ({:.4} per ns)", ticks_per_ns())
    } else {
        "CLOCK_MONOTONIC ns".to_string()
    };
    writeln!(out, "# backline hop probes: {clock} per hop")?;
    let names: Vec<&str> = hops.iter().map(|h| h.name()).collect();
    writeln!(out, "session,round,{}", names.join(","))?;
    for (session, t) in tables {
        for (i, r) in t.rows.iter().enumerate() {
            write!(out, "{session},{i}")?;
            for h in &hops {
                match r[*h as usize] {
                    0 => write!(out, ",")?,
                    v => write!(out, ",{v}")?,
                }
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// [`write_csv`] into `path`.
pub fn save_csv(tables: &[(u64, &Table)], path: &std::path::Path) -> Result<(), ProbeError> {
    let io = |source| ProbeError::Io {
        what: format!("writing {}", path.display()),
        source,
    };
    let f = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(f);
    write_csv(tables, &mut w).map_err(io)?;
    w.flush().map_err(io)
}

/// Reads what [`save_csv`] wrote: the sessions in file order.
pub fn load_csv(path: &std::path::Path) -> Result<Vec<(u64, Table)>, ProbeError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProbeError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    let bad = |line: usize, msg: &str| ProbeError::Csv(format!("{}:{line}: {msg}", path.display()));
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#'));
    let (n, head) = lines.next().ok_or_else(|| bad(1, "no header"))?;
    let mut cols = head.split(',');
    if cols.next() != Some("session") || cols.next() != Some("round") {
        return Err(bad(n + 1, "the first columns are not `session,round`"));
    }
    let hops: Vec<Hop> = cols
        .map(|c| Hop::from_name(c).ok_or_else(|| bad(n + 1, &format!("unknown hop `{c}`"))))
        .collect::<Result<_, _>>()?;
    let mut out: Vec<(u64, Table)> = Vec::new();
    for (n, line) in lines {
        let mut f = line.split(',');
        let num = |f: Option<&str>, what: &str| -> Result<u64, ProbeError> {
            f.and_then(|v| v.parse().ok())
                .ok_or_else(|| bad(n + 1, &format!("not a {what}")))
        };
        let session = num(f.next(), "session number")?;
        let round = num(f.next(), "round number")? as usize;
        if out.last().is_none_or(|(s, _)| *s != session) {
            out.push((session, Table::new()));
        }
        let t = &mut out.last_mut().expect("pushed").1;
        if round >= t.rows.len() {
            t.rows.resize(round + 1, [0; HOPS]);
        }
        for (h, v) in hops.iter().zip(f) {
            if !v.is_empty() {
                t.rows[round][*h as usize] = v
                    .parse()
                    .map_err(|_| bad(n + 1, &format!("`{v}` is not a time")))?;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_recorders_record_nothing() {
        let mut r = Recorder::off();
        r.stamp(Hop::Post, 0);
        r.take_marks(0);
        assert!(r.rows().is_empty());
        assert!(!r.enabled());
    }

    #[test]
    fn stamps_marks_merge_stats_and_csv_round_trip() {
        let mut c = Recorder::with_rounds(3).unwrap();
        let mut s = Recorder::with_rounds(3).unwrap();
        for round in 0..3u64 {
            let base = 1_000_000 * (round + 1);
            c.stamp_at(Hop::Stage, round, base);
            c.stamp_at(Hop::Post, round, base + 100);
            s.stamp_at(Hop::RequestSeen, round, base + 400);
            enable_marks(true);
            mark(Hop::ProxyPosted);
            s.take_marks(round);
            enable_marks(false);
            s.stamp_at(Hop::FnEnd, round, base + 900 + round);
            c.stamp_at(Hop::ReplySeen, round, base + 1000 + round);
        }
        // A round past the capacity is ignored, not a panic.
        c.stamp(Hop::Stage, 99);
        let mut t = Table::new();
        t.merge(c.rows());
        t.merge(s.rows());
        assert_eq!(
            t.hops(),
            [
                Hop::Stage,
                Hop::Post,
                Hop::RequestSeen,
                Hop::ProxyPosted,
                Hop::FnEnd,
                Hop::ReplySeen
            ]
        );
        let st = t.stats();
        let post = st.iter().find(|h| h.hop == Hop::Post).unwrap();
        assert_eq!((post.from, post.rounds), (Hop::Stage, 2));
        // Stamps are clock ticks; durations come out in ns.
        let rate = ticks_per_ns();
        assert!((post.median_ns - 100.0 / rate).abs() < 1e-9, "{post:?}");
        let rq = st.iter().find(|h| h.hop == Hop::RequestSeen).unwrap();
        assert!((rq.median_ns - 300.0 / rate).abs() < 1e-9, "{rq:?}");
        assert!(t.render("hops").contains("stage → post"));
        let dir = std::env::temp_dir().join(format!("backline-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("hops.csv");
        let mut t2 = Table::new();
        t2.merge(&c.rows()[..1]);
        save_csv(&[(1, &t), (4, &t2)], &p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            text.lines().filter(|l| !l.starts_with('#')).count(),
            1 + 3 + 1
        );
        let back = load_csv(&p).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].0, back[1].0), (1, 4));
        assert_eq!(back[0].1.rows(), t.rows());
        std::fs::write(&p, "session,round,warp\n1,0,1\n").unwrap();
        assert!(
            load_csv(&p)
                .unwrap_err()
                .to_string()
                .contains("unknown hop `warp`")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_impossible_allocation_is_an_error() {
        assert!(matches!(
            Recorder::with_rounds(u64::MAX / 2),
            Err(ProbeError::OutOfMemory { .. })
        ));
    }

    #[test]
    fn the_clocks_move_forward_and_the_rate_is_sane() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a && a > 0);
        let (x, y) = (now(), now());
        assert!(y >= x);
        let r = ticks_per_ns();
        // Between 0.1 and 10 GHz, or exactly 1 (CLOCK_MONOTONIC).
        assert!((0.1..10.0).contains(&r), "{r}");
    }
}
