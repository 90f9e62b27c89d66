//! The Möbius decoder in sliding windows, for streams: each window of rounds is matched on
//! the Möbius graph as matching's windows are ([`MatchingDecoder::decode_window`]: matches in the
//! window's first rounds committed, those that leave them cut, a cut end carried as an event
//! into the next window), the committed paths' edges are kept, and after the last window they
//! are lifted to observables with every detection event's edge between its copies — the
//! committed paths join up into the paths a whole-shot matching would have, so the lift is the
//! whole shot's.

use std::ops::Range;
use std::sync::Arc;

use super::lift::{Lift, Tours};
use super::{MobiusDecoder, MobiusError, lift_tours};
use crate::error::DecoderError;
use crate::matching::{MatchFault, MatchingDecoder, WindowCommit, WindowSpec};

/// A stream's windows of one Möbius decoder, and the shot so far. Built once; a shot
/// allocates only to grow its lists.
#[derive(Debug, Clone)]
pub struct MobiusWindows {
    matcher: MatchingDecoder,
    lift: Arc<Lift>,
    ignored: Arc<Vec<bool>>,
    /// Per Möbius node: its event flipped by the commits so far this shot.
    toggled: Vec<bool>,
    events: Vec<u32>,
    commit: WindowCommit,
    /// The committed paths' edges, this shot.
    edges: Vec<u32>,
    fired: Vec<u32>,
    tours: Tours,
    used: Vec<u32>,
}

impl MobiusWindows {
    /// The windows of `decoder`'s model. Refused: a model with an error of `p > ½` (a
    /// window would take its edge as flipped in every window), or none the decoder can use.
    pub fn new(decoder: &MobiusDecoder) -> Result<MobiusWindows, MobiusError> {
        let Some(matcher) = decoder.matcher.clone() else {
            return Err(MobiusError::Windows(
                "no error of the model flips a detector: there is nothing to match".into(),
            ));
        };
        if !matcher.graph().negative_edges().is_empty() {
            return Err(MobiusError::Windows(
                "an error of p > ½: sliding windows need every edge's p ≤ ½ (decode the whole \
                 shot: leave window and commit out)"
                    .into(),
            ));
        }
        let nodes = matcher.graph().num_nodes();
        let mut commit = WindowCommit::with_room(nodes);
        commit.keep_edges = true;
        Ok(MobiusWindows {
            lift: decoder.lift.clone(),
            ignored: decoder.ignored.clone(),
            toggled: vec![false; nodes],
            events: Vec::with_capacity(nodes),
            commit,
            edges: Vec::new(),
            fired: Vec::with_capacity(nodes / 2),
            tours: Tours::new(nodes),
            used: Vec::new(),
            matcher,
        })
    }

    /// Forgets the shot.
    pub fn reset(&mut self) {
        self.toggled.fill(false);
        self.edges.clear();
    }

    /// Matches the window of `detectors` (whole rounds) and commits the matches of
    /// `commit` (its first rounds; all of it in the last window, `last`). `dets` holds the
    /// shot's detection events (one 0/1 byte per detector; those of later rounds unread).
    pub fn decode_window(
        &mut self,
        detectors: Range<u32>,
        commit: Range<u32>,
        last: bool,
        dets: &[u8],
    ) -> Result<(), DecoderError> {
        self.events.clear();
        for d in detectors.clone() {
            let event = dets[d as usize] != 0 && !self.ignored[d as usize];
            for node in [2 * d, 2 * d + 1] {
                if event != self.toggled[node as usize] {
                    self.events.push(node);
                }
            }
        }
        if self.events.is_empty() {
            return Ok(());
        }
        let spec = WindowSpec {
            detectors: 2 * detectors.start..2 * detectors.end,
            commit: 2 * commit.start..2 * commit.end,
            past_is_boundary: false,
            future_is_boundary: !last,
        };
        self.commit.clear();
        self.matcher
            .decode_window(&spec, &self.events, &mut self.commit)
            .map_err(|f| match f {
                MatchFault::NoPerfectMatching(node) => {
                    MobiusError::NoMatching { detector: node / 2 }.into()
                }
                MatchFault::IsolatedDetector(node) => DecoderError::Unexplained(node / 2),
                other => DecoderError::Match(other),
            })?;
        for &t in &self.commit.toggles {
            let x = &mut self.toggled[t as usize];
            *x = !*x;
        }
        self.edges.extend_from_slice(&self.commit.edges);
        Ok(())
    }

    /// After the last window: the observables of the shot whose detection events are `dets`
    /// (one 0/1 byte per detector), lifted from every committed path.
    pub fn finish(&mut self, dets: &[u8]) -> Result<u64, DecoderError> {
        self.fired.clear();
        self.fired.extend(
            (0..dets.len() as u32).filter(|&d| dets[d as usize] != 0 && !self.ignored[d as usize]),
        );
        self.tours.clear();
        let edges = self.matcher.graph().edges();
        for &k in &self.edges {
            let e = edges[k as usize];
            self.tours.add(e.a, e.b);
        }
        for &d in &self.fired {
            self.tours.add(2 * d, 2 * d + 1);
        }
        let ignored = &self.ignored;
        let fired = |d: u32| dets[d as usize] != 0 && !ignored[d as usize];
        lift_tours(
            &self.lift,
            &mut self.tours,
            &mut self.used,
            fired,
            &self.fired,
        )
    }
}
