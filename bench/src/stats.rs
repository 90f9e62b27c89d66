//! Round-trip statistics: mean, median, standard deviation, extremes and the tail percentiles
//! of SPEC §9, over the warm rounds (round 0 is reported apart by the caller).

use serde::Serialize;
use statrs::statistics::Statistics;

/// Statistics of a set of round-trip times, in nanoseconds.
///
/// Percentiles use the nearest-rank definition: P(q) is the smallest sample such that at least
/// a fraction q of the samples are ≤ it. With fewer than 1/(1−q) samples, P(q) is the maximum.
///
/// Serialised, it is the statistics of the `--json` reports ([`crate::report::JsonStats`]):
/// the `…_ns` fields in this order, without `count` (the reports say `rounds` and
/// `completed`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of samples.
    #[serde(skip_serializing)]
    pub count: u64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// P50.
    pub median_ns: f64,
    /// Sample standard deviation (n − 1); 0 for one sample.
    pub std_ns: f64,
    /// Smallest sample.
    pub min_ns: f64,
    /// Largest sample.
    pub max_ns: f64,
    /// P99.
    pub p99_ns: f64,
    /// P99.9.
    pub p999_ns: f64,
    /// P99.99.
    pub p9999_ns: f64,
    /// P99.999.
    pub p99999_ns: f64,
}

impl Summary {
    /// Summarises `samples_ns`; `None` when empty. Sorts a copy, so `O(n log n)`.
    pub fn of(samples_ns: &[f64]) -> Option<Summary> {
        if samples_ns.is_empty() {
            return None;
        }
        let mut sorted = samples_ns.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Self::of_sorted(&sorted))
    }

    /// Summarises samples that are already sorted ascending (and non-empty).
    pub fn of_sorted(sorted: &[f64]) -> Summary {
        assert!(!sorted.is_empty(), "Summary of no samples");
        let n = sorted.len();
        let mean = sorted.iter().copied().mean();
        let std = if n > 1 {
            sorted.iter().copied().std_dev()
        } else {
            0.0
        };
        Summary {
            count: n as u64,
            mean_ns: mean,
            median_ns: nearest_rank(sorted, 0.5),
            std_ns: std,
            min_ns: sorted[0],
            max_ns: sorted[n - 1],
            p99_ns: nearest_rank(sorted, 0.99),
            p999_ns: nearest_rank(sorted, 0.999),
            p9999_ns: nearest_rank(sorted, 0.9999),
            p99999_ns: nearest_rank(sorted, 0.99999),
        }
    }

    /// The statistics of `self` divided by those of `base` where a ratio means something:
    /// the mean, the median and the tail percentiles (count is kept). The standard deviation,
    /// minimum and maximum are NaN: the spread of one run over another's, or one extreme
    /// round over another's, says nothing about the run.
    pub fn ratio_to(&self, base: &Summary) -> Summary {
        let r = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
        Summary {
            count: self.count,
            mean_ns: r(self.mean_ns, base.mean_ns),
            median_ns: r(self.median_ns, base.median_ns),
            std_ns: f64::NAN,
            min_ns: f64::NAN,
            max_ns: f64::NAN,
            p99_ns: r(self.p99_ns, base.p99_ns),
            p999_ns: r(self.p999_ns, base.p999_ns),
            p9999_ns: r(self.p9999_ns, base.p9999_ns),
            p99999_ns: r(self.p99999_ns, base.p99999_ns),
        }
    }

    /// The statistics in table order, with their labels.
    pub fn fields(&self) -> [(&'static str, f64); 9] {
        [
            ("mean", self.mean_ns),
            ("median", self.median_ns),
            ("std", self.std_ns),
            ("min", self.min_ns),
            ("max", self.max_ns),
            ("P99", self.p99_ns),
            ("P99.9", self.p999_ns),
            ("P99.99", self.p9999_ns),
            ("P99.999", self.p99999_ns),
        ]
    }
}

/// The Wilson score interval of a proportion: `k` successes in `n` trials at `z` standard
/// deviations (1.96 for 95 %), as `(low, high)`. `(0, 1)` when `n` is 0.
pub fn wilson_interval(k: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // The ends are exact at k = 0 and k = n (the formula leaves a rounding error there).
    let lo = if k == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if k == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lo, hi)
}

/// Nearest-rank percentile of sorted, non-empty data.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let rank = (q * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Summary::of(&v).unwrap();
        assert_eq!(s.median_ns, 50.0);
        assert_eq!(s.p99_ns, 99.0);
        assert_eq!(s.p999_ns, 100.0);
        assert_eq!(s.min_ns, 1.0);
        assert_eq!(s.max_ns, 100.0);
        assert!((s.mean_ns - 50.5).abs() < 1e-12);
        assert!((s.std_ns - 29.011_491_975_882_016).abs() < 1e-9);
    }

    #[test]
    fn order_of_input_does_not_matter() {
        let a = [5.0, 1.0, 4.0, 2.0, 3.0];
        let s = Summary::of(&a).unwrap();
        assert_eq!(s.median_ns, 3.0);
        assert_eq!(Summary::of(&[]), None);
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!((one.std_ns, one.p99999_ns), (0.0, 7.0));
    }

    #[test]
    fn tail_percentiles_need_enough_samples() {
        let mut v = vec![1.0; 100_000];
        v[99_999] = 1000.0;
        let s = Summary::of(&v).unwrap();
        assert_eq!(s.p9999_ns, 1.0);
        assert_eq!(s.p99999_ns, 1.0);
        assert_eq!(s.max_ns, 1000.0);
        v[99_998] = 500.0;
        let s = Summary::of(&v).unwrap();
        assert_eq!(s.p99999_ns, 500.0);
    }

    #[test]
    fn wilson_intervals() {
        // 13 of 10,000 at 95 %: the textbook values.
        let (lo, hi) = wilson_interval(13, 10_000, 1.96);
        assert!(
            (lo - 7.6e-4).abs() < 0.1e-4 && (hi - 2.22e-3).abs() < 0.01e-3,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson_interval(0, 100, 1.96);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.037).abs() < 0.001);
        assert_eq!(wilson_interval(5, 5, 1.96).1, 1.0);
        assert_eq!(wilson_interval(0, 0, 1.96), (0.0, 1.0));
    }

    #[test]
    fn ratio_divides_fieldwise() {
        let a = Summary::of(&[2.0, 4.0]).unwrap();
        let b = Summary::of(&[1.0, 2.0]).unwrap();
        let r = a.ratio_to(&b);
        assert_eq!(r.median_ns, 2.0);
        assert_eq!(r.p99_ns, 2.0);
        assert!(r.max_ns.is_nan() && r.min_ns.is_nan() && r.std_ns.is_nan());
    }
}
