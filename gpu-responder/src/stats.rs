//! A small record of round-trip times (the proxy hop), reported at shutdown.

use std::time::Duration;

/// Keeps up to [`LatencyLog::CAP`] samples in nanoseconds (the first ones: a long run's
/// report covers its first million calls).
#[derive(Debug, Default)]
pub(crate) struct LatencyLog {
    ns: Vec<u32>,
    calls: u64,
}

impl LatencyLog {
    const CAP: usize = 1 << 20;

    pub(crate) fn record(&mut self, d: Duration) {
        self.calls += 1;
        if self.ns.len() < Self::CAP {
            self.ns.push(d.as_nanos().min(u32::MAX as u128) as u32);
        }
    }

    /// `(calls, median, p99)` of the kept samples.
    pub(crate) fn summary(&self) -> Option<(u64, Duration, Duration)> {
        if self.ns.is_empty() {
            return None;
        }
        let mut v = self.ns.clone();
        v.sort_unstable();
        let at =
            |q: f64| Duration::from_nanos(v[((v.len() - 1) as f64 * q).round() as usize] as u64);
        Some((self.calls, at(0.5), at(0.99)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_p99_of_the_samples() {
        let mut l = LatencyLog::default();
        assert!(l.summary().is_none());
        for ns in 1..=100u64 {
            l.record(Duration::from_nanos(ns));
        }
        let (calls, med, p99) = l.summary().unwrap();
        assert_eq!(calls, 100);
        assert_eq!(med, Duration::from_nanos(51));
        assert_eq!(p99, Duration::from_nanos(99));
    }
}
