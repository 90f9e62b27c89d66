//! PNG plots of round-trip times, drawn with a small raster of our own (no font files, no
//! system libraries): RTT against round number, the distribution with log counts, and the
//! empirical CCDF with several runs overlaid.

use std::path::Path;

use image::{Rgb, RgbImage};

/// Image size.
const W: u32 = 960;
const H: u32 = 540;
/// Plot area margins: left, right, top, bottom.
const ML: i32 = 90;
const MR: i32 = 24;
const MT: i32 = 44;
const MB: i32 = 64;

const WHITE: Rgb<u8> = Rgb([255, 255, 255]);
const BLACK: Rgb<u8> = Rgb([0, 0, 0]);
const GRID: Rgb<u8> = Rgb([225, 225, 225]);
const RED: Rgb<u8> = Rgb([200, 30, 30]);

/// Line colours of overlaid runs, in order.
pub const PALETTE: [Rgb<u8>; 6] = [
    Rgb([31, 90, 180]),
    Rgb([220, 110, 20]),
    Rgb([40, 150, 60]),
    Rgb([180, 40, 40]),
    Rgb([120, 70, 170]),
    Rgb([90, 90, 90]),
];

/// Why a plot was not written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Nothing to draw.
    #[error("no samples to plot for {0}")]
    Empty(String),
    /// Encoding or writing the PNG failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: image::ImageError,
    },
}

/// 5×7 glyphs, one string of 35 cells per character ('#' = ink), rows top to bottom. Text is
/// drawn in upper case.
fn glyph(c: char) -> Option<&'static str> {
    Some(match c.to_ascii_uppercase() {
        '0' => ".###.#...##..###.#.###..##...#.###.",
        '1' => "..#...##....#....#....#....#...###.",
        '2' => ".###.#...#....#...#...#...#...#####",
        '3' => "####.....#...#...##.....##...#.###.",
        '4' => "...#...##..#.#.#..#.#####...#....#.",
        '5' => "######....####.....#....##...#.###.",
        '6' => "..##..#...#....####.#...##...#.###.",
        '7' => "#####....#...#...#...#....#....#...",
        '8' => ".###.#...##...#.###.#...##...#.###.",
        '9' => ".###.#...##...#.####....#...#..##..",
        'A' => ".###.#...##...#######...##...##...#",
        'B' => "####.#...##...#####.#...##...#####.",
        'C' => ".###.#...##....#....#....#...#.###.",
        'D' => "###..#..#.#...##...##...##..#.###..",
        'E' => "######....#....####.#....#....#####",
        'F' => "######....#....####.#....#....#....",
        'G' => ".###.#...##....#.####...##...#.####",
        'H' => "#...##...##...#######...##...##...#",
        'I' => ".###...#....#....#....#....#...###.",
        'J' => "..###...#....#....#....#.#..#..##..",
        'K' => "#...##..#.#.#..##...#.#..#..#.#...#",
        'L' => "#....#....#....#....#....#....#####",
        'M' => "#...###.###.#.##.#.##...##...##...#",
        'N' => "#...##...###..##.#.##..###...##...#",
        'O' => ".###.#...##...##...##...##...#.###.",
        'P' => "####.#...##...#####.#....#....#....",
        'Q' => ".###.#...##...##...##.#.##..#..##.#",
        'R' => "####.#...##...#####.#.#..#..#.#...#",
        'S' => ".#####....#.....###.....#....#####.",
        'T' => "#####..#....#....#....#....#....#..",
        'U' => "#...##...##...##...##...##...#.###.",
        'V' => "#...##...##...##...##...#.#.#...#..",
        'W' => "#...##...##...##.#.##.#.##.#.#.#.#.",
        'X' => "#...##...#.#.#...#...#.#.#...##...#",
        'Y' => "#...##...#.#.#...#....#....#....#..",
        'Z' => "#####....#...#...#...#...#....#####",
        '.' => "..........................##...##..",
        ',' => ".....................##....#...#...",
        '-' => "................###................",
        '+' => ".......#....#..#####..#....#.......",
        ':' => "......##...##........##...##.......",
        '(' => "...#...#...#....#....#.....#.....#.",
        ')' => ".#.....#.....#....#....#...#...#...",
        '/' => "....#....#...#...#...#...#....#....",
        '%' => "##...##..#...#...#...#...#..##...##",
        '_' => "..............................#####",
        '=' => "..........#####.....#####..........",
        '<' => "...#...#...#...#.....#.....#.....#.",
        '>' => ".#.....#.....#.....#...#...#...#...",
        'µ' => ".....#...##...##...##..#####.##....",
        '[' => ".###..#....#....#....#....#....###.",
        ']' => ".###....#....#....#....#....#..###.",
        '^' => "..#...#.#.#...#....................",
        ' ' => "...................................",
        _ => return None,
    })
}

struct Canvas {
    img: RgbImage,
}

impl Canvas {
    fn new() -> Canvas {
        Canvas {
            img: RgbImage::from_pixel(W, H, WHITE),
        }
    }

    fn put(&mut self, x: i32, y: i32, c: Rgb<u8>) {
        if x >= 0 && y >= 0 && (x as u32) < W && (y as u32) < H {
            self.img.put_pixel(x as u32, y as u32, c);
        }
    }

    fn line(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, c: Rgb<u8>) {
        // Integer line stepping.
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.put(x, y, c);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    fn thick_line(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, c: Rgb<u8>) {
        self.line(x0, y0, x1, y1, c);
        self.line(x0, y0 + 1, x1, y1 + 1, c);
    }

    fn rect(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, c: Rgb<u8>) {
        for y in y0.min(y1)..=y0.max(y1) {
            for x in x0.min(x1)..=x0.max(x1) {
                self.put(x, y, c);
            }
        }
    }

    /// Text at (x, y) top-left, `scale` pixels per glyph cell.
    fn text(&mut self, x: i32, y: i32, s: &str, scale: i32, c: Rgb<u8>) {
        let mut cx = x;
        for ch in s.chars() {
            if let Some(g) = glyph(ch) {
                for (i, cell) in g.bytes().enumerate() {
                    if cell == b'#' {
                        let (gx, gy) = ((i % 5) as i32, (i / 5) as i32);
                        self.rect(
                            cx + gx * scale,
                            y + gy * scale,
                            cx + gx * scale + scale - 1,
                            y + gy * scale + scale - 1,
                            c,
                        );
                    }
                }
            }
            cx += 6 * scale;
        }
    }

    fn text_width(s: &str, scale: i32) -> i32 {
        s.chars().count() as i32 * 6 * scale
    }

    /// Vertical text (for the y-axis label), bottom to top.
    fn text_up(&mut self, x: i32, y: i32, s: &str, c: Rgb<u8>) {
        let mut cy = y;
        for ch in s.chars() {
            if let Some(g) = glyph(ch) {
                for (i, cell) in g.bytes().enumerate() {
                    if cell == b'#' {
                        let (gx, gy) = ((i % 5) as i32, (i / 5) as i32);
                        self.put(x + gy, cy - gx, c);
                    }
                }
            }
            cy -= 6;
        }
    }

    fn save(&self, path: &Path) -> Result<(), PlotError> {
        self.img.save(path).map_err(|source| PlotError::Write {
            path: path.display().to_string(),
            source,
        })
    }
}

/// A linear or log10 axis mapping data to pixels.
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    p0: i32,
    p1: i32,
}

impl Axis {
    fn new(lo: f64, hi: f64, log: bool, p0: i32, p1: i32) -> Axis {
        // Traces are checked for finite times when read; an axis is still never built on a
        // non-finite end, which would make the tick loop below endless.
        let finite = |v: f64, or: f64| {
            if v.is_finite() {
                v.clamp(-1e300, 1e300)
            } else {
                or
            }
        };
        let (mut lo, mut hi) = (finite(lo, 0.0), finite(hi, 1.0));
        if log {
            lo = lo.max(1e-300);
            hi = hi.max(lo * 1.0001);
            // Whole decades.
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
        } else if hi <= lo {
            hi = lo + 1.0;
        }
        Axis {
            lo,
            hi,
            log,
            p0,
            p1,
        }
    }

    fn t(&self, v: f64) -> f64 {
        if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn px(&self, v: f64) -> i32 {
        let t = self.t(v).clamp(0.0, 1.0);
        (self.p0 as f64 + t * (self.p1 - self.p0) as f64).round() as i32
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (
                self.lo.log10().round() as i32,
                self.hi.log10().round() as i32,
            );
            let step = ((b - a) / 8).max(1);
            (a..=b)
                .step_by(step as usize)
                .map(|e| 10f64.powi(e))
                .collect()
        } else {
            let span = self.hi - self.lo;
            let raw = span / 6.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .into_iter()
                .map(|m| m * mag)
                .find(|s| span / s <= 8.0)
                .unwrap_or(10.0 * mag);
            let first = (self.lo / step).ceil() * step;
            (0..)
                .map(|i| first + i as f64 * step)
                .take_while(|v| *v <= self.hi + step * 1e-9)
                .collect()
        }
    }
}

fn label(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.0e}")
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Frame, grid, ticks, labels and title; returns the axes.
fn frame(
    c: &mut Canvas,
    x: Axis,
    y: Axis,
    title: &str,
    xlabel: &str,
    ylabel: &str,
) -> (Axis, Axis) {
    let (x0, x1, y0, y1) = (ML, W as i32 - MR, H as i32 - MB, MT);
    for t in x.ticks() {
        let p = x.px(t);
        c.line(p, y0, p, y1, GRID);
        c.line(p, y0, p, y0 + 5, BLACK);
        let l = label(t);
        c.text(p - Canvas::text_width(&l, 1) / 2, y0 + 9, &l, 1, BLACK);
    }
    for t in y.ticks() {
        let p = y.px(t);
        c.line(x0, p, x1, p, GRID);
        c.line(x0 - 5, p, x0, p, BLACK);
        let l = label(t);
        c.text(x0 - 9 - Canvas::text_width(&l, 1), p - 3, &l, 1, BLACK);
    }
    c.line(x0, y0, x1, y0, BLACK);
    c.line(x0, y0, x0, y1, BLACK);
    c.line(x1, y0, x1, y1, BLACK);
    c.line(x0, y1, x1, y1, BLACK);
    c.text(
        (W as i32 - Canvas::text_width(title, 2)) / 2,
        12,
        title,
        2,
        BLACK,
    );
    c.text(
        (x0 + x1 - Canvas::text_width(xlabel, 1)) / 2,
        H as i32 - 24,
        xlabel,
        1,
        BLACK,
    );
    c.text_up(
        14,
        (y0 + y1 + Canvas::text_width(ylabel, 1)) / 2,
        ylabel,
        BLACK,
    );
    (x, y)
}

fn legend(c: &mut Canvas, names: &[&str]) {
    let x = W as i32
        - MR
        - 10
        - names
            .iter()
            .map(|n| Canvas::text_width(n, 1))
            .max()
            .unwrap_or(0)
        - 30;
    for (i, n) in names.iter().enumerate() {
        let y = MT + 12 + 14 * i as i32;
        c.rect(x, y, x + 20, y + 2, PALETTE[i % PALETTE.len()]);
        c.text(x + 26, y - 2, n, 1, BLACK);
    }
}

/// RTT (µs, log scale) against round number: each pixel column spans its rounds' min–max;
/// round 0 is the red mark.
pub fn rtt_vs_round(
    rtts_ns: &[(u64, f64)],
    cold: Option<f64>,
    path: &Path,
    title: &str,
) -> Result<(), PlotError> {
    if rtts_ns.is_empty() {
        return Err(PlotError::Empty(title.into()));
    }
    let last = rtts_ns.last().map_or(1, |r| r.0).max(1);
    let lo = rtts_ns.iter().map(|r| r.1).fold(f64::MAX, f64::min) / 1000.0;
    let hi = rtts_ns
        .iter()
        .map(|r| r.1)
        .fold(0.0, f64::max)
        .max(cold.unwrap_or(0.0))
        / 1000.0;
    let mut c = Canvas::new();
    let x = Axis::new(0.0, last as f64, false, ML, W as i32 - MR);
    let y = Axis::new(lo, hi, true, H as i32 - MB, MT);
    frame(&mut c, x, y, title, "ROUND", "RTT (µS)");
    let cols = (W as i32 - MR - ML + 1) as usize;
    let mut span = vec![(f64::MAX, 0f64); cols];
    for &(r, v) in rtts_ns {
        let i = (x.px(r as f64) - ML).clamp(0, cols as i32 - 1) as usize;
        span[i].0 = span[i].0.min(v / 1000.0);
        span[i].1 = span[i].1.max(v / 1000.0);
    }
    for (i, (a, b)) in span.into_iter().enumerate() {
        if b > 0.0 {
            let px = ML + i as i32;
            c.line(px, y.px(a), px, y.px(b), PALETTE[0]);
        }
    }
    if let Some(c0) = cold {
        let (px, py) = (x.px(0.0), y.px(c0 / 1000.0));
        c.rect(px - 2, py - 2, px + 2, py + 2, RED);
        c.text(px + 6, py - 3, "ROUND 0", 1, RED);
    }
    c.save(path)
}

/// Histogram of RTT (µs, linear bins from the minimum to the P99.99) with log counts; rounds
/// above the last bin are counted in it and said so.
pub fn histogram(rtts_ns: &[f64], path: &Path, title: &str) -> Result<(), PlotError> {
    if rtts_ns.is_empty() {
        return Err(PlotError::Empty(title.into()));
    }
    let mut sorted: Vec<f64> = rtts_ns.iter().map(|v| v / 1000.0).collect();
    sorted.sort_by(f64::total_cmp);
    let lo = sorted[0];
    let hi = crate::stats::nearest_rank(&sorted, 0.9999).max(lo * 1.001 + 1e-9);
    const BINS: usize = 120;
    let mut counts = [0u64; BINS];
    let mut over = 0u64;
    for &v in &sorted {
        let b = ((v - lo) / (hi - lo) * BINS as f64) as usize;
        if b >= BINS {
            over += 1;
        }
        counts[b.min(BINS - 1)] += 1;
    }
    let maxc = *counts.iter().max().unwrap_or(&1) as f64;
    let mut c = Canvas::new();
    let x = Axis::new(lo, hi, false, ML, W as i32 - MR);
    let y = Axis::new(0.8, maxc, true, H as i32 - MB, MT);
    frame(&mut c, x, y, title, "RTT (µS)", "ROUNDS (LOG)");
    for (i, &n) in counts.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let a = x.px(lo + (hi - lo) * i as f64 / BINS as f64);
        let b = x.px(lo + (hi - lo) * (i + 1) as f64 / BINS as f64) - 1;
        c.rect(a, y.px(n as f64), b.max(a), H as i32 - MB - 1, PALETTE[0]);
    }
    if over > 0 {
        let note = format!("{over} ROUNDS ABOVE P99.99 IN LAST BIN");
        c.text(
            W as i32 - MR - Canvas::text_width(&note, 1) - 8,
            MT + 8,
            &note,
            1,
            RED,
        );
    }
    c.save(path)
}

/// Empirical CCDF, P(RTT > x), of several runs on log-log axes.
pub fn ccdf(runs: &[(&str, &[f64])], path: &Path, title: &str) -> Result<(), PlotError> {
    let runs: Vec<(&str, Vec<f64>)> = runs
        .iter()
        .filter(|r| !r.1.is_empty())
        .map(|(n, v)| {
            let mut s: Vec<f64> = v.iter().map(|x| x / 1000.0).collect();
            s.sort_by(f64::total_cmp);
            (*n, s)
        })
        .collect();
    if runs.is_empty() {
        return Err(PlotError::Empty(title.into()));
    }
    let lo = runs.iter().map(|r| r.1[0]).fold(f64::MAX, f64::min);
    let hi = runs
        .iter()
        .map(|r| *r.1.last().unwrap())
        .fold(0.0, f64::max);
    let nmax = runs.iter().map(|r| r.1.len()).max().unwrap_or(1) as f64;
    let mut c = Canvas::new();
    let x = Axis::new(lo, hi, true, ML, W as i32 - MR);
    let y = Axis::new(1.0 / nmax, 1.0, true, H as i32 - MB, MT);
    frame(&mut c, x, y, title, "RTT (µS)", "P(RTT > X)");
    for (k, (_, s)) in runs.iter().enumerate() {
        let col = PALETTE[k % PALETTE.len()];
        let n = s.len() as f64;
        let mut prev: Option<(i32, i32)> = None;
        // One point per distinct pixel column keeps 10^6 samples cheap.
        let mut last_px = i32::MIN;
        for (i, &v) in s.iter().enumerate() {
            let p = (n - i as f64 - 1.0) / n;
            if p <= 0.0 {
                break;
            }
            let px = x.px(v);
            if px == last_px && i + 2 < s.len() {
                continue;
            }
            last_px = px;
            let pt = (px, y.px(p));
            if let Some(q) = prev {
                c.thick_line(q.0, q.1, pt.0, pt.1, col);
            }
            prev = Some(pt);
        }
    }
    legend(&mut c, &runs.iter().map(|r| r.0).collect::<Vec<_>>());
    c.save(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_glyph_has_35_cells() {
        for ch in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ.,-+:()/%_=<>µ[]^ ".chars() {
            let g = glyph(ch).unwrap_or_else(|| panic!("no glyph for {ch:?}"));
            assert_eq!(g.len(), 35, "{ch:?}");
            assert!(g.bytes().all(|b| b == b'#' || b == b'.'), "{ch:?}");
        }
    }

    #[test]
    fn axes_map_ends_to_pixels() {
        let a = Axis::new(0.0, 10.0, false, 100, 200);
        assert_eq!((a.px(0.0), a.px(10.0), a.px(5.0)), (100, 200, 150));
        let l = Axis::new(1.0, 1000.0, true, 0, 300);
        assert_eq!((l.px(1.0), l.px(10.0), l.px(1000.0)), (0, 100, 300));
        assert_eq!(l.ticks(), vec![1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(a.ticks(), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    }

    #[test]
    fn axes_on_non_finite_ends_have_few_finite_ticks() {
        // Was an endless tick loop (linear) and an overflow panic (log) on `inf` in a trace.
        for (lo, hi) in [
            (0.0, f64::INFINITY),
            (f64::NAN, 5.0),
            (f64::NEG_INFINITY, f64::NAN),
        ] {
            for log in [false, true] {
                let t = Axis::new(lo, hi, log, 0, 300).ticks();
                assert!(!t.is_empty() && t.len() < 100, "{lo} {hi} {log}: {t:?}");
                assert!(t.iter().all(|v| v.is_finite()));
            }
        }
    }

    #[test]
    fn plots_are_written_as_png() {
        let dir = std::env::temp_dir().join(format!("backline-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let v: Vec<f64> = (0..5000).map(|i| 300.0 + (i % 97) as f64 * 3.0).collect();
        let rows: Vec<(u64, f64)> = v
            .iter()
            .enumerate()
            .map(|(i, x)| (i as u64 + 1, *x))
            .collect();
        rtt_vs_round(&rows, Some(4000.0), &dir.join("rtt.png"), "RTT").unwrap();
        histogram(&v, &dir.join("hist.png"), "HIST").unwrap();
        ccdf(
            &[("a", &v), ("b", &v[..100])],
            &dir.join("ccdf.png"),
            "CCDF",
        )
        .unwrap();
        for f in ["rtt.png", "hist.png", "ccdf.png"] {
            let img = image::open(dir.join(f)).unwrap().to_rgb8();
            assert_eq!(img.dimensions(), (W, H));
            // Something other than white was drawn inside the plot area.
            let inked = img
                .enumerate_pixels()
                .filter(|(x, y, p)| {
                    *x > ML as u32 + 2
                        && *y > MT as u32 + 2
                        && *y < H - MB as u32 - 2
                        && p.0 != [255; 3]
                        && p.0 != GRID.0
                })
                .count();
            assert!(inked > 100, "{f} is nearly empty");
        }
        assert!(matches!(
            ccdf(&[], &dir.join("x.png"), "E"),
            Err(PlotError::Empty(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
