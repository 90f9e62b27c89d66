//! Windows: a model cut down to a range of detectors, for decoders that slide over time.

use std::ops::Range;

use super::DetectorErrorModel;
use super::matrices::GraphlikeEdge;
use crate::sparse::SparseMatrix;

/// A model cut down to a range of detectors ([`DetectorErrorModel::window`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DemWindow {
    /// The cut-down model: its detector `i` is detector `detectors.start + i` of the whole.
    pub model: DetectorErrorModel,
    /// The detectors of the whole model it covers.
    pub detectors: Range<usize>,
    /// Column `j` of the window is mechanism `mechanisms[j]` of the whole model.
    pub mechanisms: Vec<u32>,
}

impl DetectorErrorModel {
    /// The first detectors up to time `t`: `0..k` with `k` the first detector whose time is
    /// above `t` (detectors without coordinates count as time 0). For models whose detectors
    /// are numbered in time order, as stim's circuits number them.
    pub fn detectors_up_to_time(&self, t: f64) -> Range<usize> {
        let k = (0..self.num_detectors())
            .find(|&d| self.detector_time(d).unwrap_or(0.0) > t)
            .unwrap_or(self.num_detectors());
        0..k
    }

    /// The model cut down to `detectors`: every mechanism that flips at least one of them
    /// (ascending by id), with only those detectors (renumbered from `detectors.start`), the
    /// same observables and priors. Mechanisms that look the same inside the window stay
    /// apart, so each window column maps to one global mechanism ([`DemWindow::mechanisms`]).
    ///
    /// # Panics
    /// If `detectors` is not within `0..num_detectors()`.
    pub fn window(&self, detectors: Range<usize>) -> DemWindow {
        self.cut(detectors, |_| true)
    }

    /// [`DetectorErrorModel::window`] with only the mechanisms whose first (lowest) detector
    /// is in `detectors`: what a sliding window decides, once the windows before it have
    /// committed the mechanisms that start earlier. Models numbered in time order (stim's)
    /// have no mechanism that starts inside a window and reaches back before it.
    ///
    /// # Panics
    /// If `detectors` is not within `0..num_detectors()`.
    pub fn window_from(&self, detectors: Range<usize>) -> DemWindow {
        let start = detectors.start as u32;
        self.cut(detectors, |k| {
            self.checks
                .col(k as usize)
                .first()
                .is_some_and(|&d| d >= start)
        })
    }

    /// The cut of [`DetectorErrorModel::window`], keeping the mechanisms `keep` accepts.
    fn cut(&self, detectors: Range<usize>, keep: impl Fn(u32) -> bool) -> DemWindow {
        assert!(detectors.start <= detectors.end && detectors.end <= self.num_detectors());
        let mut ids: Vec<u32> = detectors
            .clone()
            .flat_map(|d| self.mechanisms_of(d).iter().copied())
            .filter(|&k| keep(k))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let rows = detectors.len();
        let mut checks = SparseMatrix::with_rows(rows);
        let mut col = Vec::new();
        for &k in &ids {
            col.clear();
            col.extend(
                self.checks
                    .col(k as usize)
                    .iter()
                    .filter(|&&d| detectors.contains(&(d as usize)))
                    .map(|&d| d - detectors.start as u32),
            );
            checks.push_column(&mut col).expect("rows in range");
        }
        let observables = self.observables.select_columns(&ids);
        let priors: Vec<f64> = ids.iter().map(|&k| self.priors[k as usize]).collect();
        let lines: Vec<u32> = ids.iter().map(|&k| self.lines[k as usize]).collect();
        let mut coord_start = vec![0u32];
        let mut coords = Vec::new();
        let mut declared = Vec::with_capacity(rows);
        for d in detectors.clone() {
            declared.push(self.declared[d]);
            if let Some(c) = self.detector_coords(d) {
                coords.extend_from_slice(c);
            }
            coord_start.push(coords.len() as u32);
        }
        let (det_start, det_mechs) = checks.rows_of();
        let inside = |d: u32| d == u32::MAX || detectors.contains(&(d as usize));
        let shift = |d: u32| {
            if d == u32::MAX {
                d
            } else {
                d - detectors.start as u32
            }
        };
        let mut renumber = vec![u32::MAX; self.graphlike.len()];
        let mut graphlike = Vec::new();
        for (k, e) in self.graphlike.iter().enumerate() {
            if inside(e.detectors.0) && inside(e.detectors.1) {
                renumber[k] = graphlike.len() as u32;
                graphlike.push(GraphlikeEdge {
                    detectors: (shift(e.detectors.0), shift(e.detectors.1)),
                    ..e.clone()
                });
            }
        }
        let decomposed = self.decomposed.renumbered(&renumber);
        DemWindow {
            model: DetectorErrorModel {
                name: format!(
                    "{} (detectors {}..{})",
                    self.name, detectors.start, detectors.end
                ),
                // Cut, not read: it prints flat (see the `Display` impl).
                instructions: Vec::new(),
                checks,
                observables,
                priors,
                lines,
                coord_start,
                coords,
                declared,
                det_start,
                det_mechs,
                graphlike,
                hyperedge: None,
                decomposed,
            },
            detectors,
            mechanisms: ids,
        }
    }

    /// XORs the effect of `mechanisms` into detection events (one 0/1 byte per detector) and
    /// observable flips (one 0/1 byte per observable): what removing committed mechanisms
    /// from a window's syndrome, and adding them to the prediction, takes.
    pub fn apply_mechanisms(
        &self,
        mechanisms: impl IntoIterator<Item = u32>,
        detectors: &mut [u8],
        observables: &mut [u8],
    ) {
        for k in mechanisms {
            for &d in self.checks.col(k as usize) {
                detectors[d as usize] ^= 1;
            }
            for &l in self.observables.col(k as usize) {
                observables[l as usize] ^= 1;
            }
        }
    }
}
