//! The real-time figure of a CUQR decoder, per shot: *last syndrome → corrections ready*,
//! from the arrival of the datagram that completes the shot's syndrome volume (the ring's
//! receive returned it) to the moment the shot's corrections are published (the inline
//! decode returned, or the decode thread published them), on the monotonic clock. It is the
//! interval NVIDIA's decoding server reports (cudaqx PR #799, "final syndrome arrival →
//! corrections ready"). Only shots whose last window was decoded count: a shot whose last
//! round never comes, a failed shot and a shot dropped by a reset count nothing.
//!
//! The samples (nanoseconds, saturating at `u32::MAX`, 4.3 s) are kept in a buffer reserved
//! when the decoder starts: the first [`ShotLatencies::capacity`] shots exactly; the count,
//! the mean and the maximum cover every shot. Recording never allocates; the buffer's pages
//! are mapped by the system as it fills (one minor fault per 1,024 shots), so that a server of
//! thousands of streams holds memory only for the shots it decodes.

/// Default number of shots whose figure is kept exactly, per decoder.
pub const DEFAULT_LATENCY_SHOTS: usize = 1 << 18;

/// The fewest shots a decoder keeps exactly when [`latency_shots_per`] shares the budget out.
pub const MIN_LATENCY_SHOTS: usize = 1 << 10;

/// Shots kept exactly by each of `decoders` decoders of one process given `shots` for one:
/// `shots` shared out among them, at least [`MIN_LATENCY_SHOTS`] each (and never more than
/// `shots`). The buffers are reserved address space, so a server of thousands of streams
/// (`streams=4096`) reserves about what one decoder does, plus 4 KiB a stream, instead of
/// 1 MiB a stream — 4 GiB, past a 4 GB address-space limit before any shot arrived.
pub fn latency_shots_per(shots: usize, decoders: usize) -> usize {
    (shots / decoders.max(1)).max(MIN_LATENCY_SHOTS).min(shots)
}

/// The figures of one decoder's shots.
#[derive(Debug, Clone, Default)]
pub struct ShotLatencies {
    /// Nanoseconds, in shot order; `len() ≤ cap`.
    samples: Vec<u32>,
    cap: usize,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

/// The statistics of a decoder's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySummary {
    /// Shots counted.
    pub shots: u64,
    /// Shots whose figure is kept (the percentiles are over these, the first ones).
    pub kept: usize,
    /// Mean over every shot, ns.
    pub mean_ns: f64,
    /// Median (nearest rank), ns.
    pub median_ns: u64,
    /// P99, ns.
    pub p99_ns: u64,
    /// P99.9, ns.
    pub p999_ns: u64,
    /// Largest, ns (every shot).
    pub max_ns: u64,
}

impl LatencySummary {
    /// `median 4.12 µs, mean 4.30 µs, P99 …, P99.9 …, max … (N shots)`.
    pub fn render(&self) -> String {
        let us = |ns: u64| format!("{:.2}", ns as f64 / 1e3);
        let kept = if (self.kept as u64) < self.shots {
            format!("; percentiles over the first {}", self.kept)
        } else {
            String::new()
        };
        format!(
            "median {} µs, mean {:.2} µs, P99 {} µs, P99.9 {} µs, max {} µs ({} shots{kept})",
            us(self.median_ns),
            self.mean_ns / 1e3,
            us(self.p99_ns),
            us(self.p999_ns),
            us(self.max_ns),
            self.shots
        )
    }
}

/// The nearest-rank `q`-quantile of `sorted` (non-empty).
fn nearest_rank(sorted: &[u32], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    u64::from(sorted[rank - 1])
}

impl ShotLatencies {
    /// Room for `cap` shots, reserved now.
    pub fn with_capacity(cap: usize) -> ShotLatencies {
        ShotLatencies {
            samples: Vec::with_capacity(cap),
            cap,
            ..ShotLatencies::default()
        }
    }

    /// Shots kept exactly at most.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Records one shot's figure.
    pub fn record(&mut self, ns: u64) {
        if self.samples.len() < self.cap {
            self.samples.push(u32::try_from(ns).unwrap_or(u32::MAX));
        }
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Shots counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The figures kept, in shot order (ns, saturating at `u32::MAX`).
    pub fn samples(&self) -> &[u32] {
        &self.samples
    }

    /// The statistics; `None` before any shot.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.count == 0 || self.samples.is_empty() {
            return None;
        }
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        Some(LatencySummary {
            shots: self.count,
            kept: sorted.len(),
            mean_ns: self.sum_ns as f64 / self.count as f64,
            median_ns: nearest_rank(&sorted, 0.5),
            p99_ns: nearest_rank(&sorted, 0.99),
            p999_ns: nearest_rank(&sorted, 0.999),
            max_ns: self.max_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_among_decoders() {
        assert_eq!(
            latency_shots_per(DEFAULT_LATENCY_SHOTS, 1),
            DEFAULT_LATENCY_SHOTS
        );
        assert_eq!(
            latency_shots_per(DEFAULT_LATENCY_SHOTS, 0),
            DEFAULT_LATENCY_SHOTS
        );
        assert_eq!(
            latency_shots_per(DEFAULT_LATENCY_SHOTS, 4),
            DEFAULT_LATENCY_SHOTS / 4
        );
        assert_eq!(
            latency_shots_per(DEFAULT_LATENCY_SHOTS, 4096),
            MIN_LATENCY_SHOTS
        );
        // A budget below the floor is kept as asked.
        assert_eq!(latency_shots_per(16, 8), 16);
        let total: usize = (0..4096)
            .map(|_| latency_shots_per(DEFAULT_LATENCY_SHOTS, 4096))
            .sum();
        assert!(total * 4 <= 16 << 20, "{total} shots reserved");
    }

    #[test]
    fn figures_are_kept_up_to_the_capacity_and_summarised() {
        let mut l = ShotLatencies::with_capacity(1000);
        assert!(l.summary().is_none());
        // 1..=1200 ns: the first 1000 kept, every one counted.
        for ns in 1..=1200u64 {
            l.record(ns);
        }
        assert_eq!(l.count(), 1200);
        assert_eq!(l.samples().len(), 1000);
        let s = l.summary().unwrap();
        assert_eq!((s.shots, s.kept, s.max_ns), (1200, 1000, 1200));
        assert_eq!((s.median_ns, s.p99_ns, s.p999_ns), (500, 990, 999));
        assert!((s.mean_ns - 600.5).abs() < 1e-9);
        assert!(s.render().contains("percentiles over the first 1000"));
    }
}
