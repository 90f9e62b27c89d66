//! Streams over models whose rounds repeat, built from a short copy of the model.
//!
//! A memory experiment of `T` rounds is a few rounds, a block of middle rounds repeated, and
//! a few more. Sliding matching windows over it differ only near its two ends: a window whose
//! rounds, and every round an edge of theirs reaches, lie inside the block's iterations
//! (bar the first and the last) sees the same graph as the next one, shifted. So the stream
//! is built from a short copy of the model ([`RolledModel::short`]) that holds the windows
//! near the start, two of those *interior* windows and the windows near the end — the
//! short copy's rounds congruent to `T` modulo the commit, so that its last windows fall on
//! the rounds the long model's do — and every window of the long model is decoded as its
//! counterpart in the short one, its detectors offset:
//!
//! - a window near the start as the same window of the short copy;
//! - an interior window as the short copy's first interior window, offset by the rounds
//!   between them;
//! - a window near the end as the short copy's window as far from its end.
//!
//! The two interior windows of the short copy are compared edge by edge (weights and
//! observables) before they are trusted to stand for every interior window; a model whose
//! block does not repeat so (or a decoder other than plain matching, or windows that do not
//! commit whole iterations) is expanded instead, within the limits. What the stream holds
//! is then the short copy's graph, one detection-event byte per detector of the shot and a
//! window list: memory independent of the experiment's length but for those bytes.

use std::ops::Range;
use std::sync::Arc;

use super::{StreamBuildError, StreamDecoder, StreamSettings, Window, rounds_of, window_rounds};
use crate::dem::{DemError, DemLimits, DetectorErrorModel, RolledModel};
use crate::noise::{DemNoise, RolledNoise};
use crate::registry::WindowKind;

/// A block repeated fewer times than this is expanded: the stream of its model is small.
pub const ROLL_AT: u64 = 32;

/// A rolled model's rounds stay below this (2^22; more is read whole, within the limits).
pub const MAX_ROLLED_ROUNDS: usize = 1 << 22;

/// A rolled model's stream takes at most this many windows (2^20).
pub const MAX_ROLLED_WINDOWS: usize = 1 << 20;

/// The model a stream's shots come from and its decoder is built on: read whole, or with
/// its long block kept rolled ([`RolledModel`]).
#[derive(Debug, Clone)]
pub enum StreamModel {
    /// The model, expanded.
    Whole(Arc<DetectorErrorModel>),
    /// The model with its long block rolled, and its rounds.
    Rolled(Arc<Rolled>),
}

/// A rolled model and what a stream needs of it.
#[derive(Debug, Clone)]
pub struct Rolled {
    model: RolledModel,
    /// The model with the block run three times.
    small: DetectorErrorModel,
    layout: Layout,
}

/// Where the block's iterations fall among the rounds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    /// Round `r` of the whole experiment starts at detector `round_start[r]`.
    round_start: Vec<usize>,
    /// The round the block starts at.
    first: usize,
    /// Rounds an iteration holds.
    per: usize,
}

impl StreamModel {
    /// Reads a model for streaming within `limits`: rolled when its longest top-level block
    /// repeats [`ROLL_AT`] times or more and its iterations are whole rounds, whole
    /// otherwise.
    pub fn read(text: &str, file: &str, limits: &DemLimits) -> Result<StreamModel, DemError> {
        if let Some(model) = RolledModel::parse_with(text, file, limits)?
            && model.count() >= ROLL_AT
        {
            let small = model.short(3, limits)?;
            if let Some(layout) = Layout::of(&model, &small) {
                return Ok(StreamModel::Rolled(Arc::new(Rolled {
                    model,
                    small,
                    layout,
                })));
            }
        }
        DetectorErrorModel::parse_with(text, file, limits).map(|m| StreamModel::Whole(Arc::new(m)))
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        match self {
            StreamModel::Whole(m) => m.name(),
            StreamModel::Rolled(r) => r.model.name(),
        }
    }

    /// Detectors of a shot.
    pub fn num_detectors(&self) -> usize {
        match self {
            StreamModel::Whole(m) => m.num_detectors(),
            StreamModel::Rolled(r) => r.model.num_detectors() as usize,
        }
    }

    /// Observables of a shot.
    pub fn num_observables(&self) -> usize {
        match self {
            StreamModel::Whole(m) => m.num_observables(),
            StreamModel::Rolled(r) => r.small.num_observables(),
        }
    }

    /// The rounds of a shot: the detectors of each, in order.
    pub fn round_layout(&self) -> Result<Vec<Range<usize>>, StreamBuildError> {
        let starts = match self {
            StreamModel::Whole(m) => rounds_of(m)?,
            StreamModel::Rolled(r) => r.layout.round_start.clone(),
        };
        Ok(starts.windows(2).map(|w| w[0]..w[1]).collect())
    }

    /// A seeded sampler of the model's shots.
    pub fn noise(&self, seed: u64) -> ShotNoise {
        match self {
            StreamModel::Whole(m) => ShotNoise::Whole(DemNoise::new(m, seed)),
            StreamModel::Rolled(r) => {
                ShotNoise::Rolled(RolledNoise::new(&r.model, r.small.num_observables(), seed))
            }
        }
    }

    /// Whether the model expanded is within `limits`, without expanding it (a caller that will
    /// need [`StreamModel::expanded`] later asks first).
    pub fn check_expanded(&self, limits: &DemLimits) -> Result<(), DemError> {
        match self {
            StreamModel::Whole(_) => Ok(()),
            StreamModel::Rolled(r) => r.model.check(r.model.count(), limits),
        }
    }

    /// The model expanded within `limits` (a whole-history decoder needs it).
    pub fn expanded(&self, limits: &DemLimits) -> Result<Arc<DetectorErrorModel>, DemError> {
        match self {
            StreamModel::Whole(m) => Ok(m.clone()),
            StreamModel::Rolled(r) => r.model.short(r.model.count(), limits).map(Arc::new),
        }
    }
}

/// Seeded shots of a [`StreamModel`].
#[derive(Debug, Clone)]
pub enum ShotNoise {
    /// Of a whole model.
    Whole(DemNoise),
    /// Of a rolled one.
    Rolled(RolledNoise),
}

impl ShotNoise {
    /// Draws one shot: one 0/1 byte per detector and per observable.
    ///
    /// # Panics
    /// If the buffers are not the model's detectors and observables long.
    pub fn sample(&mut self, detectors: &mut [u8], observables: &mut [u8]) -> usize {
        match self {
            ShotNoise::Whole(n) => n.sample(detectors, observables),
            ShotNoise::Rolled(n) => n.sample(detectors, observables),
        }
    }
}

impl Layout {
    /// The rounds of the whole experiment, from the copy with three iterations, when every
    /// iteration holds whole rounds and the middle one is laid out as the last.
    fn of(model: &RolledModel, small: &DetectorErrorModel) -> Option<Layout> {
        let rs = rounds_of(small).ok()?;
        let (before, shift) = (model.first_declared()? as usize, model.shift() as usize);
        let at = |i: usize| rs.binary_search(&(before + i * shift)).ok();
        let r: Vec<usize> = (0..=3).map(at).collect::<Option<_>>()?;
        let per = r[1] - r[0];
        if per == 0 || r[2] - r[1] != per || r[3] - r[2] != per {
            return None;
        }
        let sizes = |k: usize| (r[k]..r[k] + per).map(|x| rs[x + 1] - rs[x]);
        if !sizes(1).eq(sizes(2)) {
            return None;
        }
        let count = model.count() as usize;
        let rounds = (rs.len() - 1).checked_add((count - 3).checked_mul(per)?)?;
        if rounds > MAX_ROLLED_ROUNDS {
            return None;
        }
        let mut round_start = Vec::new();
        round_start.try_reserve_exact(rounds + 1).ok()?;
        round_start.extend_from_slice(&rs[..=r[1]]);
        for q in 1..count - 1 {
            for m in 0..per {
                let x = rs[r[1] + m] + (q - 1) * shift;
                if q > 1 || m > 0 {
                    round_start.push(x);
                }
            }
        }
        let extra = (count - 3) * shift;
        round_start.extend(rs[r[2]..].iter().map(|&x| x + extra));
        // Every detector in a round: the last round ends at the whole model's last detector
        // (a model whose largest index is not in its rounds' pattern is read whole).
        (round_start.len() == rounds + 1
            && round_start.last().map(|&x| x as u64) == Some(model.num_detectors()))
        .then_some(Layout {
            round_start,
            first: r[0],
            per,
        })
    }
}

impl StreamDecoder {
    /// A streaming decoder for `model` with `settings`: for a rolled model, matching windows
    /// built from a short copy (see the module docs) when its block allows, the model expanded
    /// within `settings.limits` otherwise.
    pub fn of_model(
        model: &StreamModel,
        settings: &StreamSettings,
    ) -> Result<StreamDecoder, StreamBuildError> {
        match model {
            StreamModel::Whole(m) => StreamDecoder::new(m, settings),
            StreamModel::Rolled(r) => {
                if let Some(d) = rolled(r, settings)? {
                    return Ok(d);
                }
                let whole = model
                    .expanded(&settings.limits)
                    .map_err(|e| StreamBuildError::Settings(e.to_string()))?;
                let mut d = StreamDecoder::new(&whole, settings)?;
                d.source = model.clone();
                Ok(d)
            }
        }
    }
}

/// Whether a window starting at round `s` is interior to a block of `count` iterations: its
/// rounds and `margin` more on each side inside iterations `1 .. count − 1`.
fn interior(lay: &Layout, count: usize, margin: usize, s: usize, w: usize) -> bool {
    s >= lay.first + lay.per + margin && s + w + margin <= lay.first + (count - 1) * lay.per
}

/// The stream of a rolled model from its short copy, or `None` where that does not apply.
fn rolled(
    r: &Arc<Rolled>,
    settings: &StreamSettings,
) -> Result<Option<StreamDecoder>, StreamBuildError> {
    let lay = &r.layout;
    let t = lay.round_start.len() - 1;
    let count = r.model.count() as usize;
    let w = settings.window.unwrap_or(t);
    let c = settings.commit.unwrap_or(w.saturating_sub(1).max(1));
    if settings.decoder.windows() != WindowKind::Masked || w >= t || c == 0 || c > w {
        return Ok(None);
    }
    let windows = (t - w).div_ceil(c) + 1;
    if windows > MAX_ROLLED_WINDOWS {
        return Err(StreamBuildError::Settings(format!(
            "window = {w}, commit = {c}: {windows} windows over the model's {t} rounds, more than \
             {MAX_ROLLED_WINDOWS}: commit more rounds per window"
        )));
    }
    // How many rounds an edge spans, at most.
    let small_rs = rounds_of(&r.small)?;
    let round_of = |d: u32| small_rs.partition_point(|&x| x <= d as usize) - 1;
    let margin = (0..r.small.num_mechanisms())
        .map(|k| {
            let m = r.small.mechanism(k);
            match (m.detectors.first(), m.detectors.last()) {
                (Some(&a), Some(&b)) => round_of(b) - round_of(a),
                _ => 0,
            }
        })
        .max()
        .unwrap_or(0);
    // Interior windows fall on the block's iterations in `phases` ways (an iteration of
    // `per` rounds, windows `c` rounds apart); each phase has its representative. The fewest
    // iterations whose windows hold two interior windows of each phase, then as many more as
    // make the short copy's rounds congruent to the whole's modulo the commit.
    let g = gcd(c, lay.per);
    let phases = lay.per / g;
    let step = c / g;
    // The first interior window starts at the first multiple of `c` past the first
    // iteration and the margin; the last one needed ends, with the margin, by the block's
    // last iteration.
    let first_start = (lay.first + lay.per + margin).div_ceil(c) * c;
    let last_end = first_start + (2 * phases - 1) * c + w + margin;
    let mut kept = (1 + (last_end - lay.first).div_ceil(lay.per)).max(3);
    kept += (count - kept) % step;
    if kept >= count {
        return Ok(None);
    }
    let short = r
        .model
        .short(kept as u64, &settings.limits)
        .map_err(|e| StreamBuildError::Settings(e.to_string()))?;
    let mut s = StreamDecoder::new(&short, settings)?;
    let Some(m) = s.matching.as_deref() else {
        return Ok(None);
    };
    if m.decoder.graph().has_correlations() {
        return Ok(None);
    }
    let short_windows: Vec<Range<usize>> = s.windows.iter().map(|x| x.rounds.clone()).collect();
    let long_windows = window_rounds(t, w, c);
    let Some(head) = short_windows
        .iter()
        .position(|x| interior(lay, kept, margin, x.start, w))
    else {
        return Ok(None);
    };
    let inner = short_windows
        .iter()
        .filter(|x| interior(lay, kept, margin, x.start, w))
        .count();
    let tail = short_windows.len() - head - inner;
    let long_inner = long_windows
        .iter()
        .filter(|x| interior(lay, count, margin, x.start, w))
        .count();
    // Detectors between interior windows `phases` apart.
    let apart = phases * c / lay.per * r.model.shift() as usize;
    if long_windows.len() != head + long_inner + tail
        || !(head..head + phases).all(|j| same_interior(&s, j, j + phases, apart))
    {
        return Ok(None);
    }
    let lift = (count - kept) * r.model.shift() as usize;
    let mut windows = Vec::with_capacity(long_windows.len());
    for (k, rounds) in long_windows.into_iter().enumerate() {
        let (j, offset) = if k < head {
            (k, 0)
        } else if k < head + long_inner {
            let (i, phase) = (k - head, (k - head) % phases);
            (head + phase, (i - phase) / phases * apart)
        } else {
            (k - long_inner + inner, lift)
        };
        let detectors = lay.round_start[rounds.start]..lay.round_start[rounds.end];
        let src = &s.windows[j];
        if src.detectors.start + offset != detectors.start
            || src.detectors.end + offset != detectors.end
        {
            return Ok(None);
        }
        windows.push(Window {
            rounds,
            detectors,
            inner: src.inner.clone(),
            offset,
        });
    }
    let n = lay.round_start[t];
    let mut dets = Vec::new();
    dets.try_reserve_exact(n).map_err(|_| {
        StreamBuildError::Settings(format!(
            "{}: {n} detectors a shot do not fit in memory",
            r.model.name()
        ))
    })?;
    dets.resize(n, 0);
    s.dets = dets;
    s.round_start = lay.round_start.clone();
    s.windows = windows;
    s.source = StreamModel::Rolled(r.clone());
    Ok(Some(s))
}

/// Whether the short copy's interior windows `i` and `j` see the same graph: every detector
/// of the first has the edges (weights, observables, the boundary) of the detector `shift`
/// on, shifted.
fn same_interior(s: &StreamDecoder, i: usize, j: usize, shift: usize) -> bool {
    let Some(m) = s.matching.as_deref() else {
        return false;
    };
    let g = m.decoder.graph();
    let boundary = crate::matching::BOUNDARY;
    let (a, b) = (&s.windows[i].detectors, &s.windows[j].detectors);
    if b.start != a.start + shift || b.len() != a.len() {
        return false;
    }
    let edges = |x: usize, by: u32| {
        let mut v: Vec<(u32, u32, u64)> = g
            .neighbours(x)
            .map(|(to, wt, o)| (if to == boundary { to } else { to + by }, wt, o))
            .collect();
        v.sort_unstable();
        v
    };
    a.clone().all(|x| {
        g.has_boundary(x) == g.has_boundary(x + shift)
            && edges(x, shift as u32) == edges(x + shift, 0)
    })
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::MatchingConfig;

    /// stim's d = 3 rotated memory, its block (two rounds an iteration) run `count` times.
    fn surface(count: u64) -> String {
        let text = include_str!("../../tests/data/dem/surface_d3_r8_p0.01.dem");
        text.replacen("repeat 2 {", &format!("repeat {count} {{"), 1)
    }

    fn settings(w: usize, c: usize) -> StreamSettings {
        StreamSettings {
            window: Some(w),
            commit: Some(c),
            decoder: MatchingConfig::default().into(),
            ..StreamSettings::default()
        }
    }

    #[test]
    fn a_rolled_model_has_the_rounds_and_shots_of_the_whole() {
        let text = surface(40);
        let rolled = StreamModel::read(&text, "s.dem", &DemLimits::DEFAULT).unwrap();
        assert!(matches!(rolled, StreamModel::Rolled(_)));
        let whole = DetectorErrorModel::parse(&text, "s.dem").unwrap();
        let want: Vec<Range<usize>> = rounds_of(&whole)
            .unwrap()
            .windows(2)
            .map(|w| w[0]..w[1])
            .collect();
        assert_eq!(rolled.round_layout().unwrap(), want);
        assert_eq!(rolled.num_detectors(), whole.num_detectors());
        assert_eq!(rolled.num_observables(), whole.num_observables());
        assert_eq!(
            rolled
                .expanded(&DemLimits::DEFAULT)
                .unwrap()
                .without_lines(),
            whole.without_lines()
        );
        // Below ROLL_AT iterations the model is read whole.
        let short = surface(ROLL_AT - 1);
        let m = StreamModel::read(&short, "s.dem", &DemLimits::DEFAULT).unwrap();
        assert!(matches!(m, StreamModel::Whole(_)));
    }

    #[test]
    fn rolled_streams_decode_every_shot_as_the_expanded_stream() {
        // Counts of each residue modulo the commits, windows of one round's phase and two.
        for (count, w, c) in [
            (40, 6, 3),
            (41, 6, 3),
            (43, 6, 3),
            (40, 8, 4),
            (45, 5, 2),
            (47, 7, 5),
        ] {
            let text = surface(count);
            let model = StreamModel::read(&text, "s.dem", &DemLimits::DEFAULT).unwrap();
            let whole = DetectorErrorModel::parse(&text, "s.dem").unwrap();
            let st = settings(w, c);
            let mut rolled = StreamDecoder::of_model(&model, &st).unwrap();
            let mut expanded = StreamDecoder::new(&whole, &st).unwrap();
            // The rolled stream holds a short copy's graph, not the whole model's.
            assert!(
                rolled.entries() * 2 < expanded.entries(),
                "count {count}, W {w}, C {c}: {} against {}",
                rolled.entries(),
                expanded.entries()
            );
            assert!(rolled.windows().eq(expanded.windows()));
            let mut noise = DemNoise::new(&whole, count);
            let mut events = vec![0u8; whole.num_detectors()];
            let mut truth = vec![0u8; whole.num_observables()];
            let (mut a, mut b) = (truth.clone(), truth.clone());
            let mut fired = 0;
            for _ in 0..300 {
                fired += noise.sample(&mut events, &mut truth);
                rolled.decode_shot(&events, &mut a).unwrap();
                expanded.decode_shot(&events, &mut b).unwrap();
                assert_eq!(a, b, "count {count}, W {w}, C {c}");
            }
            assert!(fired > 300, "the shots have errors to decode");
        }
    }

    #[test]
    fn what_cannot_roll_is_expanded_within_the_limits() {
        let text = surface(40);
        let model = StreamModel::read(&text, "s.dem", &DemLimits::DEFAULT).unwrap();
        let whole = DetectorErrorModel::parse(&text, "s.dem").unwrap();
        // One window over the shot, and a BP decoder: the expanded model's stream.
        let one = StreamSettings {
            decoder: MatchingConfig::default().into(),
            ..StreamSettings::default()
        };
        let d = StreamDecoder::of_model(&model, &one).unwrap();
        assert_eq!(
            d.entries(),
            StreamDecoder::new(&whole, &one).unwrap().entries()
        );
        assert!(matches!(d.source(), StreamModel::Rolled(_)));
        // Past the limits expanded, and not rollable: the limit is named.
        let tight = DemLimits {
            mechanisms: 6_000,
            ..DemLimits::DEFAULT
        };
        let model = StreamModel::read(&text, "s.dem", &tight).unwrap();
        let e = StreamDecoder::of_model(
            &model,
            &StreamSettings {
                limits: tight,
                ..one
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("mechanisms"), "{e}");
        let windowed = StreamSettings {
            limits: tight,
            ..settings(6, 3)
        };
        if let Err(e) = StreamDecoder::of_model(&model, &windowed) {
            panic!("{e}");
        }
    }

    #[test]
    fn tiny_texts_of_huge_experiments_are_short_errors() {
        let rep = |count: u64| {
            format!(
                "detector(0, 0) D0\nrepeat {count} {{\n    error(0.01) D0 D1\n    \
                 detector(0, 1) D1\n    shift_detectors(0, 1) 1\n}}\nerror(0.01) D0\n"
            )
        };
        // Past the rolled rounds: read whole, and refused by the limits.
        let e = StreamModel::read(&rep(30_000_000), "r.dem", &DemLimits::DEFAULT).unwrap_err();
        assert!(e.to_string().contains("(limit `"), "{e}");
        // Past the rolled detectors: refused naming them.
        let e = StreamModel::read(&rep(40_000_000), "r.dem", &DemLimits::DEFAULT).unwrap_err();
        assert!(e.to_string().contains("supported in a stream"), "{e}");
        // Rolled, but a window a round: more windows than a stream takes.
        let model = StreamModel::read(&rep(4_000_000), "r.dem", &DemLimits::DEFAULT).unwrap();
        assert!(matches!(model, StreamModel::Rolled(_)));
        let e = StreamDecoder::of_model(&model, &settings(2, 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("commit more rounds per window"), "{e}");
        // A window that commits enough: built, and decodes a shot of its own noise.
        let mut d = StreamDecoder::of_model(&model, &settings(8, 4)).unwrap();
        let mut noise = model.noise(3);
        let (mut ev, mut obs) = (vec![0u8; model.num_detectors()], vec![0u8; 0]);
        noise.sample(&mut ev, &mut obs);
        d.decode_shot(&ev, &mut obs).unwrap();
    }
}
