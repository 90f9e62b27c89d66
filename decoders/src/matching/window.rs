//! Matching one window of a stream and committing its first rounds.
//!
//! A window is a range of detectors (whole rounds, numbered in time order) matched on its
//! own: an edge to a detector before the window is ignored when that part of the shot is
//! already committed (a sliding window) or leads to the boundary when it is not (the first
//! windows of a parallel decode), and an edge to a detector after the window leads to the
//! boundary (those rounds may still explain the window's last detection events) unless they
//! are committed. Only the matches in the window's *commit* range are kept:
//!
//! - a match with both ends in the commit range is committed whole: its observables join
//!   the prediction, its two detection events are resolved;
//! - a match with one end in the commit range is cut where its path leaves that range: a
//!   shortest path is searched ([`super::path`]), the edges up to the first node outside the
//!   range are committed (their observables join the prediction) and that node's detection
//!   event is toggled for the next window; a path that reaches the boundary inside the range
//!   is committed whole (an edge to a detector outside the window toggles that detector);
//! - a match with no end in the commit range is left to a later window.
//!
//! [`WindowCommit::toggles`] lists the detectors whose detection events the commit flips
//! (the resolved ones and the cut ends), for the caller to XOR into the shot.

use std::ops::Range;

use super::blossom::{CEdge, NONE};
use super::graph::BOUNDARY;
use super::path::Span;
use super::{MatchFault, MatchingDecoder};

/// What a window is: its detectors, the part of them it commits, and what its edges to the
/// rest of the shot mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowSpec {
    /// The detectors matched.
    pub detectors: Range<u32>,
    /// The detectors whose matches are committed (within `detectors`).
    pub commit: Range<u32>,
    /// Edges to detectors below the window lead to the boundary (else they are ignored).
    pub past_is_boundary: bool,
    /// Edges to detectors above the window lead to the boundary (else they are ignored).
    pub future_is_boundary: bool,
}

/// What a window commits.
#[derive(Debug)]
pub struct WindowCommit {
    /// Observables flipped by the committed paths.
    pub observables: u64,
    /// Detectors whose detection events the commit flips (each listed once per flip).
    pub toggles: Vec<u32>,
    /// Matches cut at the commit line (each took a path search).
    pub cut: u32,
    /// Whether to list the committed paths' edges in `edges` (each committed match then takes
    /// a path search): for a caller that follows them (the Möbius decoder's windows).
    pub keep_edges: bool,
    /// The committed paths' edges (indices into the graph's edges), when `keep_edges`.
    pub edges: Vec<u32>,
}

impl WindowCommit {
    /// Room for the commits of a decoder of `detectors` detectors (no allocation later).
    pub fn with_room(detectors: usize) -> WindowCommit {
        WindowCommit {
            observables: 0,
            toggles: Vec::with_capacity(2 * detectors + 2),
            cut: 0,
            keep_edges: false,
            edges: Vec::new(),
        }
    }

    /// Forgets the last commit (`keep_edges` stays as it is).
    pub fn clear(&mut self) {
        self.observables = 0;
        self.toggles.clear();
        self.cut = 0;
        self.edges.clear();
    }
}

impl Clone for WindowCommit {
    fn clone(&self) -> WindowCommit {
        let mut c = WindowCommit::with_room(self.toggles.capacity() / 2);
        c.observables = self.observables;
        c.toggles.extend_from_slice(&self.toggles);
        c.cut = self.cut;
        c.keep_edges = self.keep_edges;
        c.edges = Vec::with_capacity(self.edges.capacity());
        c.edges.extend_from_slice(&self.edges);
        c
    }
}

impl MatchingDecoder {
    /// Matches the detection events `events` (detectors inside `spec.detectors`, each once)
    /// of one window and adds what it commits to `out` (which is not cleared).
    ///
    /// Errors: a detection event outside the window ([`MatchFault::Detector`]), one on a
    /// detector without edges, or no perfect matching in the window; `out` is unchanged then.
    pub fn decode_window(
        &mut self,
        spec: &WindowSpec,
        events: &[u32],
        out: &mut WindowCommit,
    ) -> Result<(), MatchFault> {
        let d = &spec.detectors;
        if let Some(&bad) = events.iter().find(|&&e| !d.contains(&e)) {
            return Err(MatchFault::Detector {
                index: bad,
                detectors: d.end,
            });
        }
        self.events.clear();
        self.events.extend_from_slice(events);
        self.engine.set_window(
            d.start,
            d.end,
            spec.past_is_boundary,
            spec.future_is_boundary,
            true,
        );
        let r = self.run_engine();
        self.engine
            .set_window(0, self.graph.num_nodes() as u32, false, false, false);
        r?;
        let whole =
            spec.commit == spec.detectors && !spec.past_is_boundary && !spec.future_is_boundary;
        let mut matches = std::mem::take(&mut self.engine.matches);
        for m in matches.iter() {
            self.commit_match(spec, whole, *m, out);
        }
        matches.clear();
        self.engine.matches = matches;
        Ok(())
    }

    fn commit_match(&mut self, spec: &WindowSpec, whole: bool, m: CEdge, out: &mut WindowCommit) {
        let in_commit = |x: u32| x != NONE && spec.commit.contains(&x);
        let (u_in, v_in) = (in_commit(m.from), in_commit(m.to));
        if whole || (u_in && v_in) {
            out.observables ^= m.obs;
            out.toggles.push(m.from);
            if m.to != NONE {
                out.toggles.push(m.to);
            }
            if out.keep_edges {
                self.committed_path_edges(spec, m, out);
            }
            return;
        }
        let (s, t) = match (u_in, v_in) {
            (true, _) => (m.from, m.to),
            (false, true) => (m.to, m.from),
            (false, false) => return,
        };
        self.cut_at_commit_line(spec, s, t, out);
    }

    /// Commits the part of a shortest path from `s` (in the commit range) to `t` (a node, or
    /// the boundary) up to where it leaves the commit range.
    fn cut_at_commit_line(&mut self, spec: &WindowSpec, s: u32, t: u32, out: &mut WindowCommit) {
        let span = Span {
            lo: spec.detectors.start,
            hi: spec.detectors.end,
            past_is_boundary: spec.past_is_boundary,
            future_is_boundary: spec.future_is_boundary,
        };
        let target = if t == NONE { BOUNDARY } else { t };
        out.cut += 1;
        // The weights the window was matched on (a correlated decode's second pass).
        let g = match self.corr.as_deref() {
            Some(c) if c.on => &c.graph,
            _ => &*self.graph,
        };
        if !self.paths.search(g, span, s, target) {
            // Cannot happen (the match proves a path); commit nothing rather than guess.
            debug_assert!(false, "no path for a match");
            return;
        }
        let mut obs = 0u64;
        for &slot in &self.paths.slots {
            let a = g.adj[slot as usize];
            obs ^= g.adj_obs[slot as usize];
            if out.keep_edges {
                out.edges.push(g.adj_edge[slot as usize]);
            }
            if span.inside(a.to) {
                if !spec.commit.contains(&a.to) {
                    out.observables ^= obs;
                    out.toggles.push(s);
                    out.toggles.push(a.to);
                    return;
                }
            } else {
                // The boundary, inside the commit range: all of it is committed; an edge to
                // a detector outside the window flips that detector.
                out.observables ^= obs;
                out.toggles.push(s);
                if a.to != BOUNDARY {
                    out.toggles.push(a.to);
                }
                return;
            }
        }
        // The path ended at `t` inside the commit range (a match the caller would commit
        // whole); commit it all the same.
        out.observables ^= obs;
        out.toggles.push(s);
        out.toggles.push(t);
    }

    /// Lists the edges of a shortest path inside the window for a match committed whole.
    fn committed_path_edges(&mut self, spec: &WindowSpec, m: CEdge, out: &mut WindowCommit) {
        let span = Span {
            lo: spec.detectors.start,
            hi: spec.detectors.end,
            past_is_boundary: spec.past_is_boundary,
            future_is_boundary: spec.future_is_boundary,
        };
        let g = match self.corr.as_deref() {
            Some(c) if c.on => &c.graph,
            _ => &*self.graph,
        };
        let target = if m.to == NONE { BOUNDARY } else { m.to };
        if self.paths.search(g, span, m.from, target) {
            out.edges
                .extend(self.paths.slots.iter().map(|&s| g.adj_edge[s as usize]));
        } else {
            debug_assert!(false, "no path for a match");
        }
    }
}
