//! Plots of round-trip times, drawn with `plotters`, each written twice: SVG (text as text,
//! editable, for papers) and PNG (its labels in DejaVu Sans, embedded from the `dejavu`
//! crate: no system font file is read). RTT against round number with round 0 marked, the
//! distribution with log counts, and the empirical CCDF with several runs overlaid. Axes are
//! in µs.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

/// Image size, pixels.
const SIZE: (u32, u32) = (960, 540);
/// Bins of the distribution.
const BINS: usize = 120;
/// Most rounds drawn one by one; longer runs are drawn as the min–max span per column (a
/// million rounds would otherwise make a 90 MB SVG).
const COLUMNS: usize = 900;

/// Line colours of overlaid runs, in order.
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 90, 180),
    RGBColor(220, 110, 20),
    RGBColor(40, 150, 60),
    RGBColor(180, 40, 40),
    RGBColor(120, 70, 170),
    RGBColor(90, 90, 90),
];

/// Why a plot was not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// Nothing to draw.
    #[error("no samples to plot for {0}")]
    Empty(String),
    /// Drawing or writing the file failed.
    #[error("writing {path}: {message}")]
    Write {
        /// The file.
        path: String,
        /// What the backend said.
        message: String,
    },
}

/// The files of one plot: `STEM.svg` and `STEM.png`.
pub fn files_of(stem: &Path) -> [PathBuf; 2] {
    let with = |ext: &str| {
        let mut s = stem.as_os_str().to_owned();
        s.push(ext);
        PathBuf::from(s)
    };
    [with(".svg"), with(".png")]
}

/// Registers the embedded font once (the PNG backend needs glyphs; SVG keeps text as text).
fn fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let faces = [
            (FontStyle::Normal, dejavu::sans::regular()),
            (FontStyle::Bold, dejavu::sans::bold()),
        ];
        for (style, bytes) in faces {
            if plotters::style::register_font("sans-serif", style, bytes).is_err() {
                log::warn!("the embedded DejaVu Sans font could not be read");
            }
        }
    });
}

/// A plot, drawn the same on any backend.
trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// Draws `fig` into `STEM.svg` and `STEM.png`.
fn save(fig: &impl Figure, stem: &Path) -> Result<(), PlotError> {
    fonts();
    let [svg, png] = files_of(stem);
    let err = |p: &Path| {
        let path = p.display().to_string();
        move |message: String| PlotError::Write { path, message }
    };
    {
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        fig.draw(&root).map_err(err(&svg))?;
        root.present().map_err(|e| err(&svg)(e.to_string()))?;
    }
    let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
    fig.draw(&root).map_err(err(&png))?;
    root.present().map_err(|e| err(&png)(e.to_string()))
}

/// An axis tick in µs: no decimals from 10 on, up to three below.
fn tick(v: f64) -> String {
    match v.abs() {
        a if a >= 10.0 => format!("{v:.0}"),
        a if a >= 1.0 => format!("{v:.1}"),
        a if a >= 0.1 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

/// A tick of a log axis of fractions (the CCDF's): `1e-4` for a decade, however the axis's own
/// arithmetic rounded it (its ticks are powers of ten multiplied up, `9.999999999999999e-5`
/// for 1e-4), so the exponent comes from `log10().round()`; anything else with up to two
/// decimals of mantissa (`2.5e-5`).
fn log_tick(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return format!("{v}");
    }
    let decade = v.log10().round();
    if (v / 10f64.powf(decade) - 1.0).abs() < 1e-6 {
        return format!("1e{}", decade as i32);
    }
    let exp = v.log10().floor();
    let mantissa = (v / 10f64.powf(exp) * 100.0).round() / 100.0;
    format!("{mantissa}e{}", exp as i32)
}

/// `x.min(y)` and `x.max(y)` over finite values, widened when they are equal.
fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        (0.0, 1.0)
    } else if hi - lo < 1e-9 {
        (lo * 0.9, hi * 1.1 + 1e-3)
    } else {
        (lo, hi)
    }
}

/// RTT by round.
struct RttByRound<'a> {
    rows: &'a [(u64, f64)],
    round0_us: Option<f64>,
    title: &'a str,
}

impl Figure for RttByRound<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let last = self.rows.last().map_or(1, |r| r.0).max(1);
        let us = self.rows.iter().map(|r| r.1 / 1000.0);
        let (lo, hi) = range(us.chain(self.round0_us));
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0u64..last, (lo * 0.9..hi * 1.1).log_scale())
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("Round")
            .y_desc("RTT (µs)")
            .y_label_formatter(&|v| tick(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        let blue = PALETTE[0];
        if self.rows.len() <= 2 * COLUMNS {
            chart
                .draw_series(
                    self.rows
                        .iter()
                        .map(|&(r, ns)| Circle::new((r, ns / 1000.0), 1, blue.filled())),
                )
                .map_err(e)?
                .label("warm rounds")
                .legend(move |(x, y)| Circle::new((x + 10, y), 3, blue.filled()));
        } else {
            chart
                .draw_series(
                    spans(self.rows, last)
                        .into_iter()
                        .map(|(r, a, b)| PathElement::new([(r, a), (r, b)], blue.stroke_width(1))),
                )
                .map_err(e)?
                .label("warm rounds (min to max per column)")
                .legend(move |(x, y)| PathElement::new([(x + 10, y - 5), (x + 10, y + 5)], blue));
        }
        if let Some(r0) = self.round0_us {
            chart
                .draw_series([TriangleMarker::new((0, r0), 6, RED.filled())])
                .map_err(e)?
                .label(format!("round 0 (cold): {r0:.2} µs"))
                .legend(|(x, y)| TriangleMarker::new((x + 10, y), 5, RED.filled()));
        }
        legend(&mut chart).map_err(e)
    }
}

/// The rounds in [`COLUMNS`] columns: (first round, min µs, max µs) of each that has any.
fn spans(rows: &[(u64, f64)], last: u64) -> Vec<(u64, f64, f64)> {
    let width = last.div_ceil(COLUMNS as u64).max(1);
    let mut out: Vec<(u64, f64, f64)> = Vec::new();
    for &(r, ns) in rows {
        let (col, us) = (r / width * width, ns / 1000.0);
        match out.last_mut() {
            Some(s) if s.0 == col => {
                s.1 = s.1.min(us);
                s.2 = s.2.max(us);
            }
            _ => out.push((col, us, us)),
        }
    }
    out
}

/// The CCDF points of sorted `us` worth drawing: about a thousand spread evenly, and a
/// geometric ladder into the tail (every point of the last few), so that a million rounds
/// make a few thousand points.
fn ccdf_points(us: &[f64]) -> Vec<(f64, f64)> {
    let n = us.len();
    let mut keep = vec![false; n];
    for k in (0..n).step_by((n / 1000).max(1)) {
        keep[k] = true;
    }
    // m = rounds above: n-1, 0.99 (n-1), … down to 1.
    let mut m = n.saturating_sub(1) as f64;
    while m >= 1.0 {
        keep[n - 1 - m as usize] = true;
        m = (m * 0.99).min(m - 1.0);
    }
    let nf = n as f64;
    us.iter()
        .enumerate()
        .filter(|(k, _)| keep[*k])
        .map(|(k, &v)| (v, (nf - k as f64 - 1.0) / nf))
        .filter(|p| p.1 > 0.0)
        .collect()
}

/// The legend box, top right.
fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
}

/// The distribution, log counts.
struct Histogram<'a> {
    us: Vec<f64>,
    title: &'a str,
}

impl Figure for Histogram<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let lo = self.us[0];
        let hi = crate::stats::nearest_rank(&self.us, 0.9999).max(lo * 1.001 + 1e-9);
        let width = (hi - lo) / BINS as f64;
        let mut counts = [0u64; BINS];
        for &v in &self.us {
            counts[(((v - lo) / width) as usize).min(BINS - 1)] += 1;
        }
        let over = self.us.iter().filter(|&&v| v > hi).count();
        let top = counts.iter().copied().max().unwrap_or(1) as f64 * 2.0;
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(lo..hi, (0.8..top).log_scale())
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("RTT (µs)")
            .y_desc("Rounds (log)")
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        let label = if over > 0 {
            format!("warm rounds ({over} above P99.99 in the last bin)")
        } else {
            "warm rounds".to_string()
        };
        chart
            .draw_series(
                counts
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(i, &n)| {
                        let x0 = lo + width * i as f64;
                        Rectangle::new([(x0, 0.8), (x0 + width, n as f64)], PALETTE[0].filled())
                    }),
            )
            .map_err(e)?
            .label(label)
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], PALETTE[0].filled()));
        legend(&mut chart).map_err(e)
    }
}

/// The CCDF of several runs.
struct Ccdf<'a> {
    runs: Vec<(&'a str, Vec<f64>)>,
    title: &'a str,
}

impl Figure for Ccdf<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let (lo, hi) = range(self.runs.iter().flat_map(|(_, v)| v.iter().copied()));
        let n_max = self.runs.iter().map(|(_, v)| v.len()).max().unwrap_or(1);
        let floor = 1.0 / n_max as f64;
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(
                (lo * 0.9..hi * 1.1).log_scale(),
                (floor * 0.5..1.0).log_scale(),
            )
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("RTT (µs)")
            .y_desc("P(RTT > x)")
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| log_tick(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        for (i, (name, us)) in self.runs.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            // Sorted: the fraction above the k-th smallest is (n - k - 1) / n; the last point
            // (0) has no place on a log axis and is left out.
            let points = ccdf_points(us);
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(e)?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2))
                });
        }
        legend(&mut chart).map_err(e)
    }
}

/// RTT against round number (`rtts_ns`: warm rounds, `(round, ns)`), round 0 (`cold`, ns)
/// marked apart, into `STEM.svg` and `STEM.png`.
pub fn rtt_vs_round(
    rtts_ns: &[(u64, f64)],
    cold: Option<f64>,
    stem: &Path,
    title: &str,
) -> Result<(), PlotError> {
    if rtts_ns.is_empty() {
        return Err(PlotError::Empty(title.into()));
    }
    let fig = RttByRound {
        rows: rtts_ns,
        round0_us: cold.map(|ns| ns / 1000.0),
        title,
    };
    save(&fig, stem)
}

/// The distribution of `rtts_ns` (to P99.99; the rest counted in the last bin), log counts.
pub fn histogram(rtts_ns: &[f64], stem: &Path, title: &str) -> Result<(), PlotError> {
    if rtts_ns.is_empty() {
        return Err(PlotError::Empty(title.into()));
    }
    let mut us: Vec<f64> = rtts_ns.iter().map(|v| v / 1000.0).collect();
    us.sort_by(f64::total_cmp);
    save(&Histogram { us, title }, stem)
}

/// The empirical CCDF of each run (name, RTTs in ns), overlaid, log-log.
pub fn ccdf(runs: &[(&str, &[f64])], stem: &Path, title: &str) -> Result<(), PlotError> {
    let runs: Vec<(&str, Vec<f64>)> = runs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(n, v)| {
            let mut us: Vec<f64> = v.iter().map(|x| x / 1000.0).collect();
            us.sort_by(f64::total_cmp);
            (*n, us)
        })
        .collect();
    if runs.is_empty() {
        return Err(PlotError::Empty(title.into()));
    }
    save(&Ccdf { runs, title }, stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("backline-plot-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn each_plot_is_an_svg_with_its_labels_and_a_png() {
        let d = scratch("all");
        let rows: Vec<(u64, f64)> = (1..500)
            .map(|r| (r, 1000.0 + (r % 37) as f64 * 20.0))
            .collect();
        let v: Vec<f64> = rows.iter().map(|r| r.1).collect();
        rtt_vs_round(&rows, Some(9000.0), &d.join("rtt"), "echo over memcpy").unwrap();
        histogram(&v, &d.join("hist"), "echo over memcpy: distribution").unwrap();
        let other: Vec<f64> = v.iter().map(|x| x * 2.0).collect();
        ccdf(
            &[("b2b", &v), ("random-delayed", &other)],
            &d.join("ccdf"),
            "RTT CCDF",
        )
        .unwrap();
        for (stem, words) in [
            ("rtt", &["Round", "RTT (µs)", "round 0 (cold): 9.00 µs"][..]),
            ("hist", &["Rounds (log)", "RTT (µs)"][..]),
            ("ccdf", &["b2b", "random-delayed", "P(RTT &gt; x)"][..]),
        ] {
            let [svg, png] = files_of(&d.join(stem));
            let text = std::fs::read_to_string(&svg).unwrap();
            for w in words {
                assert!(text.contains(w), "{stem}.svg lacks {w}");
            }
            let bytes = std::fs::read(&png).unwrap();
            assert_eq!(&bytes[1..4], b"PNG", "{stem}.png");
            // Labels in the PNG: ink beyond the white background and the blue points.
            assert!(bytes.len() > 10_000, "{stem}.png is {} bytes", bytes.len());
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn long_runs_are_drawn_in_bounded_size() {
        let rows: Vec<(u64, f64)> = (1..200_000)
            .map(|r| (r, 1000.0 + (r % 101) as f64))
            .collect();
        let s = spans(&rows, 199_999);
        assert!(s.len() <= COLUMNS + 1, "{}", s.len());
        assert_eq!((s[0].1, s[0].2), (1.0, 1.1));
        let us: Vec<f64> = (0..1_000_000).map(|k| k as f64).collect();
        let p = ccdf_points(&us);
        assert!(p.len() < 3_000, "{}", p.len());
        // The tail is there to the last round but one (1 in a million above it).
        assert_eq!(p.last().unwrap().1, 1e-6);
        let d = scratch("long");
        rtt_vs_round(&rows, None, &d.join("rtt"), "long").unwrap();
        let [svg, _] = files_of(&d.join("rtt"));
        assert!(std::fs::metadata(svg).unwrap().len() < 400_000);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_ccdf_decade_ticks_read_as_powers_of_ten() {
        use plotters::coord::ranged1d::{BoldPoints, Ranged};
        // The y axis of a CCDF of a million rounds, as `Ccdf::draw` builds it.
        let floor = 1.0 / 1_000_000.0;
        let axis: LogCoord<f64> = (floor * 0.5..1.0).log_scale().into();
        let labels: Vec<String> = axis
            .key_points(BoldPoints(10))
            .into_iter()
            .map(log_tick)
            .collect();
        for want in ["1e-1", "1e-2", "1e-3", "1e-4", "1e-5", "1e-6"] {
            assert!(labels.iter().any(|l| l == want), "no {want} in {labels:?}");
        }
        assert!(
            labels.iter().all(|l| l.starts_with("1e")),
            "a decade tick that is not 1eN: {labels:?}"
        );
        // The values the axis arithmetic makes of 1e-4 and 1e-5, and their neighbours.
        assert_eq!(log_tick(9.999999999999999e-5), "1e-4");
        assert_eq!(log_tick(1.0000000000000002e-5), "1e-5");
        assert_eq!(log_tick(0.09999999999999999), "1e-1");
        assert_eq!(log_tick(1.0), "1e0");
        assert_eq!(log_tick(2.5e-5), "2.5e-5");
        assert_eq!(log_tick(2.0000000000000003e-3), "2e-3");
    }

    #[test]
    fn nothing_to_draw_is_an_error_naming_the_plot() {
        let d = scratch("empty");
        let e = histogram(&[], &d.join("h"), "echo").unwrap_err();
        assert_eq!(e.to_string(), "no samples to plot for echo");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
