//! Streaming (sliding-window) decoding of a detector error model: rounds of detection events
//! come in one at a time; every `commit` rounds a window of `window` rounds is decoded and the
//! corrections of its first `commit` rounds are committed; at the end of the shot what is left
//! is decoded once more and everything is committed.
//!
//! # Rounds
//!
//! A *round* is the set of detectors that share a time coordinate (the last coordinate of each
//! `detector(…)` declaration, as stim writes them; the 3rd in a model annotated for colour-code
//! decoders, whose 4th is each detector's colour and basis, `(x, y, t, c)` as Chromobius reads
//! them). The detectors must be numbered in time order, and every detector needs a time
//! coordinate; [`StreamDecoder::new`] refuses other models and says which detector is out of
//! line.
//!
//! # Windows
//!
//! Window `k` covers the rounds `k·C .. min(k·C + W, T)` of a model of `T` rounds (`W` =
//! `window`, `C` = `commit`); the last window is the first one that reaches round `T − 1`. Each
//! window decodes the mechanisms whose *first* detector lies in it
//! ([`crate::dem::DetectorErrorModel::window_from`]), restricted to its detectors, with the inner
//! decoder (a mechanism decoder — BP+OSD, Relay-BP — whose registry settings say
//! [`WindowKind::CutModel`]) built once for that window:
//!
//! 1. its syndrome is the window's detection events with the effect of every mechanism committed
//!    so far XORed in;
//! 2. the inner decoder chooses mechanisms that explain it;
//! 3. those whose first detector lies in the window's first `C` rounds (every one, in the last
//!    window) are *committed*: their observable flips join the prediction and their detector
//!    flips are XORed into the detection events of the rounds ahead (which may not have arrived
//!    yet: arriving rounds are XORed in, so the order does not matter).
//!
//! A window is decoded as soon as its last round arrives ([`StreamDecoder::push_round`] says so,
//! [`StreamDecoder::decode_ready`] does it); the last window once every round is in and the
//! answer is asked for ([`StreamDecoder::finish`]). A window whose syndrome is all zero is not
//! run through the inner decoder: both inner decoders answer the zero syndrome with no flip
//! (every prior is below ½), so skipping them changes no answer.
//!
//! With `W = T` there is one window, the whole shot, and the answers are bit for bit those of
//! the whole-history [`DemDecoder`] (`W > T` is refused). When `W − C` covers the code's
//! distance in rounds the logical error rate matches it within statistics (`tests/stream.rs`).
//!
//! # Matching windows
//!
//! With a decoder whose settings say [`WindowKind::Masked`] (matching) every window is matched
//! by one decoder on the whole
//! model's graph, flooding only the window's detectors ([`crate::matching::WindowSpec`]): edges
//! to committed rounds are ignored, edges to rounds after the window lead to the boundary (an
//! artificial time boundary; the last window has none). A match with both ends in the first
//! `C` rounds is committed whole; one with a single end there is cut where a shortest path
//! leaves those rounds, and the detector where it leaves gets a detection event for the next
//! window (the uncommitted part is carried); the last window commits everything
//! ([`crate::matching::window`]). Models with an edge of `p > ½` are refused.
//!
//! # Lifted windows
//!
//! The Möbius decoder ([`WindowKind::Lifted`]) streams its windows the same way on its own
//! graph, two nodes per detector ([`crate::mobius::MobiusWindows`]): carried events live on
//! the graph's nodes, not in the shot's detection events, and the last window lifts every
//! committed path to the shot's observables. Without `window` it decodes the whole shot.
//!
//! # Bad input
//!
//! Hot-path errors are a small `Copy` [`StreamFault`]: a round out of order, of the wrong
//! length or with padding bits set, rounds past the shot's last, or [`StreamDecoder::finish`]
//! before the last round. None changes the stream's state, so a caller can answer the fault
//! and go on.
//!
//! ```
//! use backline_decoders::dem::DetectorErrorModel;
//! use backline_decoders::stream::{StreamDecoder, StreamSettings};
//! // A repetition code, 3 rounds of 2 detectors, with measurement errors.
//! let dem = DetectorErrorModel::parse(
//!     "repeat 2 {\n error(0.05) D0 L0\n error(0.05) D0 D1\n error(0.05) D1\n\
//!      error(0.02) D0 D2\n error(0.02) D1 D3\n\
//!      detector(0, 0) D0\n detector(1, 0) D1\n shift_detectors(0, 1) 2\n}\n\
//!      error(0.05) D0 L0\nerror(0.05) D0 D1\nerror(0.05) D1\n\
//!      detector(0, 0) D0\ndetector(1, 0) D1\n",
//!     "rep.dem",
//! )
//! .unwrap();
//! let settings = StreamSettings { window: Some(2), commit: Some(1), ..StreamSettings::default() };
//! let mut s = StreamDecoder::new(&dem, &settings).unwrap();
//! assert_eq!(s.rounds(), 3);
//! // Round 0: detector 0 alone fired (the boundary mechanism, which flips L0).
//! s.push_round(0, &[0b01]).unwrap();
//! assert!(s.push_round(1, &[0b00]).unwrap(), "window 0 (rounds 0..2) is ready");
//! s.decode_ready().unwrap();
//! s.push_round(2, &[0b00]).unwrap();
//! s.finish().unwrap();
//! assert_eq!(s.observables(), &[1]);
//! ```

use std::ops::Range;
use std::sync::Arc;

use crate::dem::DemLimits;
use crate::dem::DetectorErrorModel;
use crate::dem_decoder::{DemDecoder, DemDecoderSettings};
use crate::error::{DecoderError, SettingError, parse_bounded, parse_value};
use crate::matching::{MatchingDecoder, WindowCommit, WindowSpec};
use crate::registry::WindowKind;

mod rolled;

pub use rolled::{MAX_ROLLED_ROUNDS, MAX_ROLLED_WINDOWS, ROLL_AT, Rolled, ShotNoise, StreamModel};

/// The most rounds a window takes, and a window commits (2^20).
pub const MAX_WINDOW: usize = 1 << 20;

/// What `window` and `commit` take, as their setting errors say.
const WINDOW_RANGE: &str = "an integer in 1..=1048576";

/// Window settings and the inner decoder.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSettings {
    /// Rounds per window, `1..=`[`MAX_WINDOW`]; `None`: every round (one window, the whole
    /// shot).
    pub window: Option<usize>,
    /// Rounds committed per window, `1 ..= window`; `None`: `window − 1` (at least 1).
    pub commit: Option<usize>,
    /// The inner decoder of every window.
    pub decoder: DemDecoderSettings,
    /// Bounds the windows' decoders together: their mechanisms' entries (detector and
    /// observable targets, one more per mechanism) at most `limits.targets`, the bound of the
    /// model they are cut from (a window of W rounds committing C repeats each round about
    /// W / C times).
    pub limits: DemLimits,
    /// A deadline per window's inner decode: BP+OSD and Relay-BP stop at it with their best
    /// answer so far; matching finishes (it has no partial answer). Either way a window that
    /// reaches it is counted ([`StreamDecoder::deadline_misses`]). `None`: none.
    pub deadline: Option<std::time::Duration>,
}

impl Default for StreamSettings {
    /// One window over the whole shot, decoded by BP+OSD with `ldpc`'s defaults, within
    /// [`DemLimits::DEFAULT`].
    fn default() -> StreamSettings {
        StreamSettings {
            window: None,
            commit: None,
            decoder: crate::registry::settings(
                crate::registry::DEFAULT_DECODER,
                crate::registry::Profile::Offline,
            )
            .expect("the default decoder is registered"),
            limits: DemLimits::DEFAULT,
            deadline: None,
        }
    }
}

impl StreamSettings {
    /// The names [`StreamSettings::set`] takes besides the inner decoder's.
    pub const KEYS: &'static str = "window, commit, deadline_us";

    /// Sets `window`, `commit` or a setting of the inner decoder by name, from text.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let rounds = |v: &str| match parse_bounded(key, v, MAX_WINDOW, WINDOW_RANGE)? {
            0 => Err(SettingError::value(key, v, WINDOW_RANGE)),
            n => Ok(n),
        };
        match key.trim() {
            "window" => self.window = Some(rounds(value)?),
            "commit" => self.commit = Some(rounds(value)?),
            "deadline_us" => {
                let us: f64 = parse_value(key, value, "a positive number of microseconds")?;
                if !(us > 0.0 && us < 1e9) {
                    return Err(SettingError::value(
                        key,
                        value,
                        "a positive number of microseconds",
                    ));
                }
                self.deadline = Some(std::time::Duration::from_secs_f64(us * 1e-6));
            }
            _ => self.decoder.set(key, value).map_err(|e| match e {
                SettingError::Unknown { key, known } => SettingError::Unknown {
                    key,
                    known: format!("{}, {known}", Self::KEYS),
                },
                e => e,
            })?,
        }
        Ok(())
    }
}

/// Why a streaming decoder could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamBuildError {
    /// `window` or `commit` out of range.
    #[error("{0}")]
    Settings(String),
    /// The model's detectors do not form rounds.
    #[error("{file}: {msg}")]
    Layout {
        /// The model's name.
        file: String,
        /// What is wrong.
        msg: String,
    },
    /// The model cannot be matched (a hyperedge, `p = 1`, …).
    #[error("{0}")]
    Matching(DecoderError),
    /// A window's inner decoder could not be built.
    #[error("window of rounds {rounds:?}: {source}")]
    Window {
        /// The window's rounds.
        rounds: Range<usize>,
        /// Why.
        source: DecoderError,
    },
}

/// Why a streaming call was refused; the stream's state is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamFault {
    /// A round other than the next one.
    #[error("round {found} arrived, the stream expects round {expected}")]
    RoundOrder {
        /// The next round of the shot.
        expected: u32,
        /// The round given.
        found: u32,
    },
    /// Every round of the shot is in: reset (or finish) first.
    #[error("all {rounds} rounds of the shot are in")]
    ShotComplete {
        /// Rounds of the model.
        rounds: u32,
    },
    /// A round's detection events of the wrong length.
    #[error("round {round} has {expected} detectors ({bytes} bytes bit-packed), not {found} bytes")]
    RoundLength {
        /// The round.
        round: u32,
        /// Its detectors.
        expected: u32,
        /// The bytes that carries.
        bytes: u32,
        /// Bytes given.
        found: u32,
    },
    /// Padding bits past the round's detectors are set.
    #[error("round {round}: padding bits past its {detectors} detectors are set")]
    Padding {
        /// The round.
        round: u32,
        /// Its detectors.
        detectors: u32,
    },
    /// [`StreamDecoder::finish`] before the last round.
    #[error("{received} of {rounds} rounds are in; the shot is not complete")]
    Incomplete {
        /// Rounds received.
        received: u32,
        /// Rounds of the model.
        rounds: u32,
    },
    /// The inner decoder refused the window (a bug: its lengths are fixed at build).
    #[error("the inner decoder failed on window {window}")]
    Decoder {
        /// The window.
        window: u32,
    },
}

/// One window: its rounds and detectors, and how it is decoded.
#[derive(Debug, Clone)]
struct Window {
    rounds: Range<usize>,
    detectors: Range<usize>,
    inner: WindowInner,
    /// What the inner decoder's detectors are offset by in the shot (a rolled model's
    /// windows are decoded as their counterparts in its short copy: `rolled`).
    offset: usize,
}

/// A window's decoding.
#[derive(Debug, Clone)]
enum WindowInner {
    /// Its own BP+OSD or Relay-BP decoder over the mechanisms that start in it.
    Bp {
        decoder: Box<DemDecoder>,
        /// Decoder column `j` is mechanism `global[j]` of the whole model.
        global: Vec<u32>,
        /// Whether decoder column `j` is committed.
        commit: Vec<bool>,
        /// Observable scratch for the inner decoder (its own prediction is not used).
        obs: Vec<u8>,
    },
    /// The stream's one matching decoder, on this window's detectors
    /// ([`crate::matching::WindowSpec`]).
    Matching(WindowSpec),
    /// The Möbius decoder's windows ([`crate::mobius::MobiusWindows`]): this window's
    /// detectors, the part it commits, whether it is the last (which lifts the shot).
    Lifted { commit: Range<u32>, last: bool },
    /// The decoder of the whole model, on the whole shot (a [`WindowKind::Lifted`] decoder
    /// with one window).
    Whole {
        decoder: Box<DemDecoder>,
        /// Its prediction, one byte per observable.
        obs: Vec<u8>,
    },
}

/// The matching decoder of a stream's windows and its scratch.
#[derive(Debug)]
struct MatchingWindows {
    decoder: MatchingDecoder,
    /// A window's detection events.
    events: Vec<u32>,
    commit: WindowCommit,
}

impl Clone for MatchingWindows {
    /// Keeps the scratch's room (a cloned stream does not allocate either).
    fn clone(&self) -> MatchingWindows {
        MatchingWindows {
            decoder: self.decoder.clone(),
            events: Vec::with_capacity(self.events.capacity()),
            commit: self.commit.clone(),
        }
    }
}

/// A streaming decoder of one shot at a time. Built once (its windows' decoders included);
/// rounds, decodes and resets do not allocate.
#[derive(Debug, Clone)]
pub struct StreamDecoder {
    /// The model the windows' decoders were built on (a rolled model's short copy).
    dem: Arc<DetectorErrorModel>,
    /// The model the shots come from.
    source: StreamModel,
    /// Round `r` is detectors `round_start[r]..round_start[r + 1]`.
    round_start: Vec<usize>,
    windows: Vec<Window>,
    /// The matching decoder of every window, when the decoder is matching.
    matching: Option<Box<MatchingWindows>>,
    /// The Möbius decoder's windows, when it streams in several.
    mobius: Option<Box<crate::mobius::MobiusWindows>>,
    /// Detection events so far, with every committed mechanism's effect XORed in.
    dets: Vec<u8>,
    /// Observable flips of the committed mechanisms.
    obs: Vec<u8>,
    received: usize,
    /// The next window to decode.
    next: usize,
    /// A window whose rounds are all in, not yet decoded.
    ready: Option<usize>,
    /// The windows' decoders' entries together (what [`StreamSettings::limits`] bounds).
    entries: u64,
    /// The per-window deadline, and the windows (and their rounds) that reached it.
    deadline: Option<std::time::Duration>,
    misses: DeadlineMisses,
}

/// Windows whose inner decode reached the stream's deadline, since the stream was built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeadlineMisses {
    /// Windows.
    pub windows: u64,
    /// Their rounds (a window's rounds counted once each time).
    pub rounds: u64,
}

impl StreamDecoder {
    /// A streaming decoder for `dem` with `settings`.
    pub fn new(
        dem: &DetectorErrorModel,
        settings: &StreamSettings,
    ) -> Result<StreamDecoder, StreamBuildError> {
        let round_start = rounds_of(dem)?;
        let t = round_start.len() - 1;
        let w = settings.window.unwrap_or(t);
        if w == 0 || w > MAX_WINDOW {
            return Err(StreamBuildError::Settings(format!(
                "window = {w}: a window takes 1..={MAX_WINDOW} rounds"
            )));
        }
        let c = settings.commit.unwrap_or(w.saturating_sub(1).max(1));
        if c == 0 || c > w {
            return Err(StreamBuildError::Settings(format!(
                "commit = {c}: a window of {w} rounds commits 1..={w} of them"
            )));
        }
        if w > t {
            return Err(StreamBuildError::Settings(format!(
                "window = {w} is longer than the model's {t} rounds (leave it out, or give \
                 window = {t}, for one window over the whole shot)"
            )));
        }
        let ranges = window_rounds(t, w, c);
        let entries = check_windows_size(dem, &round_start, &ranges, settings, (w, c))?;
        let dem = Arc::new(dem.clone());
        // A lifted decoder (Möbius) with one window decodes the whole shot; with several,
        // its windows share one matching of its graph.
        let lifted = settings.decoder.windows() == WindowKind::Lifted;
        let whole = lifted && w == t;
        let mobius = if lifted && !whole {
            Some(Box::new(mobius_windows(&dem, &settings.decoder)?))
        } else {
            None
        };
        let matching = match settings.decoder.windows() {
            WindowKind::Masked => Some(Box::new(matching_windows(&dem)?)),
            WindowKind::CutModel | WindowKind::Lifted => None,
        };
        let mut windows = Vec::with_capacity(ranges.len());
        for rounds in ranges {
            let last = rounds.end == t;
            let detectors = round_start[rounds.start]..round_start[rounds.end];
            let commit_end = if last {
                round_start[t]
            } else {
                round_start[rounds.start + c]
            };
            let inner = if matching.is_some() {
                WindowInner::Matching(WindowSpec {
                    detectors: detectors.start as u32..detectors.end as u32,
                    commit: detectors.start as u32..commit_end as u32,
                    past_is_boundary: false,
                    future_is_boundary: !last,
                })
            } else if mobius.is_some() {
                WindowInner::Lifted {
                    commit: detectors.start as u32..commit_end as u32,
                    last,
                }
            } else if whole {
                let decoder = DemDecoder::new(&dem, &settings.decoder).map_err(|source| {
                    StreamBuildError::Window {
                        rounds: rounds.clone(),
                        source,
                    }
                })?;
                WindowInner::Whole {
                    obs: vec![0; decoder.num_observables()],
                    decoder: Box::new(decoder),
                }
            } else {
                bp_window(&dem, &settings.decoder, &rounds, &detectors, commit_end)?
            };
            windows.push(Window {
                rounds,
                detectors,
                inner,
                offset: 0,
            });
        }
        Ok(StreamDecoder {
            dets: vec![0; dem.num_detectors()],
            obs: vec![0; dem.num_observables()],
            source: StreamModel::Whole(dem.clone()),
            dem,
            round_start,
            windows,
            matching,
            mobius,
            received: 0,
            next: 0,
            ready: None,
            entries,
            deadline: settings.deadline,
            misses: DeadlineMisses::default(),
        })
    }

    /// The entries of the windows' decoders together: each mechanism's detectors inside its
    /// window, its observables and one for itself, over every window (at most
    /// `settings.limits.targets`). A copy of the decoder holds about that many again.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Windows (and their rounds) whose inner decode reached the deadline so far.
    pub fn deadline_misses(&self) -> DeadlineMisses {
        self.misses
    }

    /// The model the shots come from (whole, or rolled: [`StreamModel`]).
    pub fn source(&self) -> &StreamModel {
        &self.source
    }

    /// Rounds per shot.
    pub fn rounds(&self) -> usize {
        self.round_start.len() - 1
    }

    /// The detectors of round `r`.
    pub fn round_detectors(&self, r: usize) -> Range<usize> {
        self.round_start[r]..self.round_start[r + 1]
    }

    /// Detectors per shot.
    pub fn num_detectors(&self) -> usize {
        self.dets.len()
    }

    /// Observables per shot.
    pub fn num_observables(&self) -> usize {
        self.obs.len()
    }

    /// The windows' rounds, in decoding order.
    pub fn windows(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.windows.iter().map(|w| w.rounds.clone())
    }

    /// Rounds of the current shot received so far.
    pub fn received(&self) -> usize {
        self.received
    }

    /// Whether every window, the last one included, has been decoded.
    pub fn is_final(&self) -> bool {
        self.next == self.windows.len()
    }

    /// Takes round `round`'s detection events, bit-packed LSB-first (`⌈n/8⌉` bytes for its `n`
    /// detectors, padding bits 0). Returns whether a window is now ready
    /// ([`StreamDecoder::decode_ready`]); the last window waits for [`StreamDecoder::finish`].
    pub fn push_round(&mut self, round: u32, bits: &[u8]) -> Result<bool, StreamFault> {
        let dets = self.next_round(round)?;
        check_round_bits(round, dets.len(), bits)?;
        // Detection events are sparse: bytes without one are skipped whole.
        let dets = &mut self.dets[dets];
        for (k, &b) in bits.iter().enumerate().filter(|b| *b.1 != 0) {
            for (j, d) in dets[8 * k..].iter_mut().take(8).enumerate() {
                *d ^= b >> j & 1;
            }
        }
        Ok(self.booked())
    }

    /// [`StreamDecoder::push_round`] with one 0/1 byte per detector of the round (any non-zero
    /// byte is 1), then the decode of a window it made ready. Returns whether one was decoded.
    pub fn push_round_bytes(&mut self, round: u32, events: &[u8]) -> Result<bool, StreamFault> {
        let dets = self.next_round(round)?;
        if events.len() != dets.len() {
            return Err(StreamFault::RoundLength {
                round,
                expected: dets.len() as u32,
                bytes: dets.len() as u32,
                found: events.len() as u32,
            });
        }
        for (d, &e) in self.dets[dets].iter_mut().zip(events) {
            *d ^= (e != 0) as u8;
        }
        if self.booked() {
            return self.decode_ready();
        }
        Ok(false)
    }

    /// The detectors of `round` if it is the shot's next one.
    fn next_round(&self, round: u32) -> Result<Range<usize>, StreamFault> {
        let t = self.rounds();
        if self.received == t {
            return Err(StreamFault::ShotComplete { rounds: t as u32 });
        }
        if round as usize != self.received {
            return Err(StreamFault::RoundOrder {
                expected: self.received as u32,
                found: round,
            });
        }
        Ok(self.round_detectors(round as usize))
    }

    /// Counts the round just XORed in; whether it completes a window (not the last, which
    /// waits for [`StreamDecoder::finish`]), which is then ready.
    fn booked(&mut self) -> bool {
        self.received += 1;
        let w = &self.windows[self.next];
        if self.received == w.rounds.end && self.next + 1 < self.windows.len() {
            self.ready = Some(self.next);
            return true;
        }
        false
    }

    /// Decodes the window [`StreamDecoder::push_round`] made ready, if any, and commits its
    /// first rounds. Returns whether the inner decoder ran (not for a window without a
    /// detection event).
    pub fn decode_ready(&mut self) -> Result<bool, StreamFault> {
        match self.ready.take() {
            Some(k) => self.decode_window(k),
            None => Ok(false),
        }
    }

    /// Once every round is in: decodes what is left (the last window) and commits it. Calling
    /// it again does nothing. Returns whether the inner decoder ran.
    pub fn finish(&mut self) -> Result<bool, StreamFault> {
        let t = self.rounds();
        if self.received < t {
            return Err(StreamFault::Incomplete {
                received: self.received as u32,
                rounds: t as u32,
            });
        }
        let mut ran = self.decode_ready()?;
        if !self.is_final() {
            ran |= self.decode_window(self.windows.len() - 1)?;
        }
        Ok(ran)
    }

    /// Observable flips committed so far (all of them once [`StreamDecoder::is_final`]), one
    /// 0/1 byte per observable.
    pub fn observables(&self) -> &[u8] {
        &self.obs
    }

    /// [`StreamDecoder::observables`] bit-packed LSB-first into `out` (`⌈k/8⌉` bytes,
    /// padding bits 0).
    ///
    /// # Panics
    /// If `out` is not `⌈k/8⌉` bytes long.
    pub fn observables_packed(&self, out: &mut [u8]) {
        assert_eq!(out.len(), self.obs.len().div_ceil(8), "observable bytes");
        out.fill(0);
        for (i, &o) in self.obs.iter().enumerate() {
            out[i / 8] |= o << (i % 8);
        }
    }

    /// Forgets the shot.
    pub fn reset(&mut self) {
        self.dets.fill(0);
        self.obs.fill(0);
        if let Some(m) = self.mobius.as_mut() {
            m.reset();
        }
        self.received = 0;
        self.next = 0;
        self.ready = None;
    }

    /// Decodes a whole shot round by round (detection events of every detector, one 0/1 byte
    /// each) into its observable flips (0/1 bytes): reset, every round, finish.
    pub fn decode_shot(
        &mut self,
        events: &[u8],
        observables: &mut [u8],
    ) -> Result<(), StreamFault> {
        self.reset();
        for r in 0..self.rounds() {
            let d = self.round_detectors(r);
            self.push_round_bytes(r as u32, &events[d])?;
        }
        self.finish()?;
        observables.copy_from_slice(&self.obs);
        Ok(())
    }

    fn decode_window(&mut self, k: usize) -> Result<bool, StreamFault> {
        debug_assert_eq!(k, self.next);
        self.next = k + 1;
        let w = &mut self.windows[k];
        let fault = StreamFault::Decoder { window: k as u32 };
        if let WindowInner::Lifted { commit, last } = &w.inner {
            // Carried events may wait in a window without detection events of its own, and
            // the last window lifts the shot: every window runs.
            let m = self.mobius.as_mut().ok_or(fault)?;
            let start = std::time::Instant::now();
            let detectors = w.detectors.start as u32..w.detectors.end as u32;
            m.decode_window(detectors, commit.clone(), *last, &self.dets)
                .map_err(|_| fault)?;
            if *last {
                let obs = m.finish(&self.dets).map_err(|_| fault)?;
                for (l, o) in self.obs.iter_mut().enumerate() {
                    *o = (obs >> l & 1) as u8;
                }
            }
            if self.deadline.is_some_and(|d| start.elapsed() > d) {
                self.misses.windows += 1;
                self.misses.rounds += w.rounds.len() as u64;
            }
            return Ok(true);
        }
        let syndrome = &self.dets[w.detectors.clone()];
        if !any_event(syndrome) {
            return Ok(false);
        }
        let start = std::time::Instant::now();
        let deadline = self.deadline.map(|d| start + d);
        let mut hit = false;
        match &mut w.inner {
            WindowInner::Bp {
                decoder,
                global,
                commit,
                obs,
            } => {
                hit = decoder
                    .decode_until(syndrome, obs, deadline)
                    .map_err(|_| fault)?
                    .deadline_hit;
                for (j, &c) in decoder.correction().iter().enumerate() {
                    if c != 0 && commit[j] {
                        let m = self.dem.mechanism(global[j] as usize);
                        for &d in m.detectors {
                            self.dets[d as usize] ^= 1;
                        }
                        for &l in m.observables {
                            self.obs[l as usize] ^= 1;
                        }
                    }
                }
            }
            WindowInner::Lifted { .. } => return Err(fault),
            WindowInner::Whole { decoder, obs } => {
                hit = decoder
                    .decode_until(syndrome, obs, deadline)
                    .map_err(|_| fault)?
                    .deadline_hit;
                for (o, &p) in self.obs.iter_mut().zip(obs.iter()) {
                    *o ^= p;
                }
            }
            WindowInner::Matching(spec) => {
                let m = self.matching.as_mut().ok_or(fault)?;
                m.events.clear();
                let base = (w.detectors.start - w.offset) as u32;
                events_of(syndrome, base, &mut m.events);
                m.commit.clear();
                m.decoder
                    .decode_window(spec, &m.events, &mut m.commit)
                    .map_err(|_| fault)?;
                for &d in &m.commit.toggles {
                    self.dets[d as usize + w.offset] ^= 1;
                }
                for (l, o) in self.obs.iter_mut().enumerate() {
                    *o ^= (m.commit.observables >> l & 1) as u8;
                }
            }
        }
        if hit || deadline.is_some_and(|d| std::time::Instant::now() > d) {
            self.misses.windows += 1;
            self.misses.rounds += w.rounds.len() as u64;
        }
        Ok(true)
    }
}

/// Whether any of the 0/1 bytes is 1, eight at a time (a window's events are sparse).
fn any_event(bytes: &[u8]) -> bool {
    let mut words = bytes.chunks_exact(8);
    words.any(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")) != 0)
        || words.remainder().iter().any(|&b| b != 0)
}

/// Appends `base + i` for each 0/1 byte `bytes[i]` that is 1, skipping zero words whole.
fn events_of(bytes: &[u8], base: u32, out: &mut Vec<u32>) {
    let mut at = base;
    let mut words = bytes.chunks_exact(8);
    for w in words.by_ref() {
        if u64::from_ne_bytes(w.try_into().expect("8 bytes")) != 0 {
            out.extend((0..8).filter(|&j| w[j] != 0).map(|j| at + j as u32));
        }
        at += 8;
    }
    let rest = words.remainder();
    out.extend(
        (0..rest.len())
            .filter(|&j| rest[j] != 0)
            .map(|j| at + j as u32),
    );
}

/// The BP+OSD or Relay-BP decoder of one window: over the mechanisms whose first detector
/// lies in it, committing those whose first detector lies before `commit_end`.
fn bp_window(
    dem: &DetectorErrorModel,
    settings: &DemDecoderSettings,
    rounds: &Range<usize>,
    detectors: &Range<usize>,
    commit_end: usize,
) -> Result<WindowInner, StreamBuildError> {
    let cut = dem.window_from(detectors.clone());
    let decoder = match DemDecoder::new(&cut.model, settings) {
        // A window's cut model may leave detectors that only mechanisms committed before it
        // flip: their leftover events are the earlier windows' approximation, not a shot no
        // error explains.
        Ok(mut d) if !d.mechanisms().is_empty() => {
            d.allow_unexplained();
            d
        }
        // A window whose model holds no usable mechanism is answered by a constant decoder:
        // for a stream that is the same lack as before.
        Ok(d) if d.mechanisms().is_empty() => {
            return Err(StreamBuildError::Layout {
                file: dem.name().to_string(),
                msg: format!(
                    "no mechanism that a decoder can use starts in rounds {rounds:?}; \
                     make the window longer"
                ),
            });
        }
        Ok(d) => d,
        // No mechanism starts in the window: it has nothing to decide.
        Err(DecoderError::NothingToDecode(_)) => {
            return Err(StreamBuildError::Layout {
                file: dem.name().to_string(),
                msg: format!(
                    "no mechanism that a decoder can use starts in rounds {rounds:?}; \
                     make the window longer"
                ),
            });
        }
        Err(source) => {
            return Err(StreamBuildError::Window {
                rounds: rounds.clone(),
                source,
            });
        }
    };
    let global: Vec<u32> = decoder
        .mechanisms()
        .iter()
        .map(|&j| cut.mechanisms[j as usize])
        .collect();
    let commit = global
        .iter()
        .map(|&k| (dem.mechanism(k as usize).detectors[0] as usize) < commit_end)
        .collect();
    Ok(WindowInner::Bp {
        obs: vec![0; decoder.num_observables()],
        decoder: Box::new(decoder),
        global,
        commit,
    })
}

/// The matching decoder of a stream: the whole model's graph, which every window floods in
/// part. Models with negative edges (`p > ½`) are refused: a window cannot flip an edge that
/// another window may commit.
fn matching_windows(dem: &DetectorErrorModel) -> Result<MatchingWindows, StreamBuildError> {
    let decoder = MatchingDecoder::new(dem).map_err(|e| StreamBuildError::Matching(e.into()))?;
    if !decoder.graph().negative_events().is_empty() || decoder.graph().negative_weight() != 0 {
        return Err(StreamBuildError::Layout {
            file: dem.name().to_string(),
            msg: "streaming matching needs every error's p ≤ ½ (an edge of negative weight \
                  would be flipped by every window)"
                .into(),
        });
    }
    let n = dem.num_detectors();
    Ok(MatchingWindows {
        decoder,
        events: Vec::with_capacity(n),
        commit: WindowCommit::with_room(n),
    })
}

/// The Möbius decoder's windows of a stream: its decoder built with the stream's settings
/// (correlations included), its graph shared by every window.
fn mobius_windows(
    dem: &DetectorErrorModel,
    settings: &DemDecoderSettings,
) -> Result<crate::mobius::MobiusWindows, StreamBuildError> {
    let layout = |msg: String| StreamBuildError::Layout {
        file: dem.name().to_string(),
        msg,
    };
    let decoder = DemDecoder::new(dem, settings).map_err(|e| layout(e.to_string()))?;
    let m = decoder
        .decoder::<crate::mobius::MobiusDecoder>()
        .ok_or_else(|| {
            layout(
                "no error of the model flips a detector: there is nothing to stream in windows \
                 (leave window and commit out)"
                    .into(),
            )
        })?;
    crate::mobius::MobiusWindows::new(m).map_err(|e| layout(e.to_string()))
}

/// Checks round `round`'s bit-packed detection events for its `n` detectors: `⌈n/8⌉` bytes,
/// padding bits 0.
pub(crate) fn check_round_bits(round: u32, n: usize, bits: &[u8]) -> Result<(), StreamFault> {
    if bits.len() != n.div_ceil(8) {
        return Err(StreamFault::RoundLength {
            round,
            expected: n as u32,
            bytes: n.div_ceil(8) as u32,
            found: bits.len() as u32,
        });
    }
    if !n.is_multiple_of(8) && bits[n / 8] >> (n % 8) != 0 {
        return Err(StreamFault::Padding {
            round,
            detectors: n as u32,
        });
    }
    Ok(())
}

/// The rounds of a model, as [`StreamDecoder`] takes them: the detectors of each, in order
/// (for a client that sends the rounds of sampled shots).
pub fn round_layout(dem: &DetectorErrorModel) -> Result<Vec<Range<usize>>, StreamBuildError> {
    let s = rounds_of(dem)?;
    Ok(s.windows(2).map(|w| w[0]..w[1]).collect())
}

/// The windows a matching stream takes when its spec names none (the real-time default of
/// `stream:MODEL.dem:matching`): `(window, commit)` = `(2·d, d)` rounds, `d` the distance the
/// model's rounds suggest — `⌈√(w + 1)⌉` for the median round of `w` detectors, which is the
/// distance of a rotated surface-code memory (`d² − 1` detectors a round) — as NV-Fusion cuts
/// its leaves of `2·d` rounds; `None` (one window, the whole shot) when the shot has no more
/// than `2·d` rounds, or its rounds cannot be read. With these windows the streams measured in
/// docs/decoders.md ("Deadlines and real-time defaults") decoded no shot differently from the
/// whole history.
pub fn realtime_matching_windows(model: &StreamModel) -> Option<(usize, usize)> {
    let rounds = model.round_layout().ok()?;
    let t = rounds.len();
    let mut sizes: Vec<usize> = rounds.iter().map(|r| r.len()).collect();
    sizes.sort_unstable();
    let median = *sizes.get(sizes.len() / 2)?;
    let d = ((median + 1) as f64).sqrt().ceil().max(1.0) as usize;
    let window = 2 * d;
    (window < t).then_some((window, d))
}

/// The rounds of each window of `w` rounds committing `c`, over `t` rounds: `k·c ..
/// min(k·c + w, t)` until one reaches the last round.
fn window_rounds(t: usize, w: usize, c: usize) -> Vec<Range<usize>> {
    let mut v = Vec::new();
    let mut start = 0usize;
    loop {
        let end = start.saturating_add(w).min(t);
        v.push(start..end);
        if end == t {
            return v;
        }
        start += c;
    }
}

/// Refuses windows whose decoders together would hold more than `settings.limits.targets`
/// entries (each mechanism's detectors inside its window, its observables, one for itself),
/// counted from the model before any window is cut or built; the entries otherwise.
fn check_windows_size(
    dem: &DetectorErrorModel,
    round_start: &[usize],
    ranges: &[Range<usize>],
    settings: &StreamSettings,
    (w, c): (usize, usize),
) -> Result<u64, StreamBuildError> {
    let limit = settings.limits.targets;
    let mut entries = 0u64;
    for rounds in ranges {
        let detectors = round_start[rounds.start]..round_start[rounds.end];
        for d in detectors.clone() {
            for &k in dem.mechanisms_of(d) {
                let m = dem.mechanism(k as usize);
                if m.detectors[0] as usize == d {
                    let inside = m
                        .detectors
                        .partition_point(|&x| (x as usize) < detectors.end);
                    entries += (inside + m.observables.len() + 1) as u64;
                }
            }
        }
        if entries > limit {
            return Err(StreamBuildError::Settings(format!(
                "window = {w}, commit = {c}: the windows' decoders hold more than {limit} \
                 targets together (limit `targets`; BACKLINE_DEM_LIMITS=targets=N raises it): \
                 commit more rounds per window, or make the window shorter"
            )));
        }
    }
    Ok(entries)
}

/// The rounds of a model: `round_start` with `T + 1` entries.
/// Whether `dem` is annotated for colour-code decoders, Chromobius's way: every detector
/// declared with at least four coordinates `(x, y, t, colour and basis)`, the 4th an integer
/// in −1..=5, and the 3rd in time order. Its rounds are then read from the 3rd coordinate,
/// not the last.
fn colour_annotated(dem: &DetectorErrorModel) -> bool {
    let mut last = f64::NEG_INFINITY;
    (0..dem.num_detectors()).all(|d| match dem.detector_coords(d) {
        Some(c) if c.len() >= 4 && (-1.0..=5.0).contains(&c[3]) && c[3].fract() == 0.0 => {
            let ok = c[2] >= last;
            last = c[2];
            ok
        }
        _ => false,
    }) && dem.num_detectors() > 0
}

fn rounds_of(dem: &DetectorErrorModel) -> Result<Vec<usize>, StreamBuildError> {
    let layout = |msg: String| StreamBuildError::Layout {
        file: dem.name().to_string(),
        msg,
    };
    let mut starts = vec![0];
    let mut last: Option<f64> = None;
    let colour = colour_annotated(dem);
    for d in 0..dem.num_detectors() {
        let t = if colour {
            dem.detector_coords(d).map(|c| c[2])
        } else {
            dem.detector_time(d)
        };
        let t = t.ok_or_else(|| {
            layout(format!(
                "detector D{d} has no time coordinate; streaming needs every detector declared \
                 with coordinates, time last (detector(x, y, t) D{d})"
            ))
        })?;
        match last {
            Some(prev) if t < prev => {
                return Err(layout(format!(
                    "detector D{d} has time {t}, before D{}'s {prev}: streaming needs the \
                     detectors numbered in time order",
                    d - 1
                )));
            }
            Some(prev) if t > prev => starts.push(d),
            _ => {}
        }
        last = Some(t);
    }
    starts.push(dem.num_detectors());
    if dem.num_detectors() == 0 {
        return Err(layout("the model has no detectors".into()));
    }
    Ok(starts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_found_word_by_word_at_every_length_and_place() {
        for n in [0usize, 1, 7, 8, 9, 16, 23, 64, 67] {
            for at in 0..n {
                let mut b = vec![0u8; n];
                b[at] = 1;
                b[n - 1] = 1;
                assert!(any_event(&b));
                let mut v = vec![99];
                events_of(&b, 10, &mut v);
                let mut want = vec![99, 10 + at as u32];
                if at != n - 1 {
                    want.push(10 + n as u32 - 1);
                }
                assert_eq!(v, want, "n {n}, at {at}");
            }
            assert!(!any_event(&vec![0u8; n]));
        }
    }
    use crate::noise::DemNoise;

    /// A distance-3 repetition code over `r` rounds with measurement errors (2 detectors a
    /// round, then the final data round), coordinates as stim writes them.
    fn rep(r: usize, p: f64) -> DetectorErrorModel {
        let q = p / 2.0;
        DetectorErrorModel::parse(
            &format!(
                "repeat {r} {{\n error({p}) D0 L0\n error({p}) D0 D1\n error({p}) D1\n \
                 error({q}) D0 D2\n error({q}) D1 D3\n \
                 detector(0, 0) D0\n detector(1, 0) D1\n shift_detectors(0, 1) 2\n}}\n\
                 error({p}) D0 L0\n error({p}) D0 D1\n error({p}) D1\n\
                 detector(0, 0) D0\n detector(1, 0) D1\n"
            ),
            "rep.dem",
        )
        .unwrap()
    }

    fn settings(window: usize, commit: usize) -> StreamSettings {
        StreamSettings {
            window: Some(window),
            commit: Some(commit),
            decoder: DemDecoderSettings::from(crate::BpOsdConfig {
                max_iter: 20,
                osd_method: crate::OsdMethod::OsdCs,
                osd_order: 4,
                ..crate::BpOsdConfig::default()
            }),
            ..StreamSettings::default()
        }
    }

    #[test]
    fn rounds_and_windows_follow_the_time_coordinates() {
        let dem = rep(5, 0.02);
        let s = StreamDecoder::new(&dem, &settings(3, 2)).unwrap();
        assert_eq!(s.rounds(), 6);
        assert_eq!(s.round_detectors(0), 0..2);
        assert_eq!(s.round_detectors(5), 10..12);
        assert_eq!(s.windows().collect::<Vec<_>>(), vec![0..3, 2..5, 4..6]);
        let whole = StreamDecoder::new(&dem, &StreamSettings::default()).unwrap();
        assert_eq!(whole.windows().collect::<Vec<_>>(), vec![0..6]);
        let s = StreamDecoder::new(&dem, &settings(6, 6)).unwrap();
        assert_eq!(s.windows().count(), 1);
        let s = StreamDecoder::new(&dem, &settings(2, 2)).unwrap();
        assert_eq!(s.windows().collect::<Vec<_>>(), vec![0..2, 2..4, 4..6]);
    }

    #[test]
    fn bad_settings_and_models_are_errors() {
        let dem = rep(3, 0.02);
        for (w, c, want) in [
            (0, 1, "window = 0"),
            (3, 0, "commit = 0"),
            (2, 3, "commit = 3"),
        ] {
            let e = StreamDecoder::new(&dem, &settings(w, c))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
        let no_coords = DetectorErrorModel::parse("error(0.1) D0 D1\n", "nc.dem").unwrap();
        let e = StreamDecoder::new(&no_coords, &StreamSettings::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("nc.dem: detector D0 has no time coordinate"),
            "{e}"
        );
        let backwards = DetectorErrorModel::parse(
            "error(0.1) D0 D1\ndetector(0, 1) D0\ndetector(0, 0) D1\n",
            "b.dem",
        )
        .unwrap();
        let e = StreamDecoder::new(&backwards, &StreamSettings::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("D1 has time 0, before D0's 1"), "{e}");
        let mut s = settings(2, 1);
        assert!(s.set("window", "x").is_err());
        s.set("max_iter", "7").unwrap();
        assert!(
            s.set("gamma0", "0.1").is_err(),
            "a Relay-BP setting on BP+OSD"
        );
    }

    #[test]
    fn faults_leave_the_stream_as_it_was() {
        let dem = rep(3, 0.02);
        let mut s = StreamDecoder::new(&dem, &settings(2, 1)).unwrap();
        assert_eq!(
            s.finish(),
            Err(StreamFault::Incomplete {
                received: 0,
                rounds: 4
            })
        );
        assert_eq!(
            s.push_round(1, &[0]),
            Err(StreamFault::RoundOrder {
                expected: 0,
                found: 1
            })
        );
        assert!(matches!(
            s.push_round(0, &[0, 0]),
            Err(StreamFault::RoundLength {
                expected: 2,
                found: 2,
                ..
            })
        ));
        assert_eq!(
            s.push_round(0, &[0b100]),
            Err(StreamFault::Padding {
                round: 0,
                detectors: 2
            })
        );
        assert_eq!(s.received(), 0);
        for r in 0..4 {
            s.push_round(r, &[0]).unwrap();
            s.decode_ready().unwrap();
        }
        assert_eq!(
            s.push_round(4, &[0]),
            Err(StreamFault::ShotComplete { rounds: 4 })
        );
        assert!(!s.is_final());
        assert_eq!(s.finish(), Ok(false));
        assert!(s.is_final());
        assert_eq!(s.finish(), Ok(false));
        assert_eq!(s.observables(), &[0]);
        s.reset();
        assert_eq!(s.received(), 0);
    }

    #[test]
    fn one_window_over_the_shot_is_the_whole_history_decoder() {
        let dem = rep(6, 0.05);
        let cfg = settings(7, 1);
        let mut s = StreamDecoder::new(&dem, &cfg).unwrap();
        let mut whole = DemDecoder::new(&dem, &cfg.decoder).unwrap();
        let mut noise = DemNoise::new(&dem, 5);
        let mut dets = vec![0u8; dem.num_detectors()];
        let (mut obs, mut a, mut b) = ([0u8; 1], [0u8; 1], [0u8; 1]);
        let mut nontrivial = 0;
        for _ in 0..500 {
            nontrivial += (noise.sample(&mut dets, &mut obs) > 0) as u32;
            s.decode_shot(&dets, &mut a).unwrap();
            whole.decode(&dets, &mut b).unwrap();
            assert_eq!(a, b);
        }
        assert!(nontrivial > 300, "{nontrivial}");
    }

    #[test]
    fn windows_commit_single_mechanisms_right() {
        // Every mechanism alone, in a shot of its own, is decoded to its own observables by
        // windows of 2 rounds committing 1.
        let dem = rep(5, 0.02);
        let mut s = StreamDecoder::new(&dem, &settings(2, 1)).unwrap();
        let mut out = [0u8; 1];
        for k in 0..dem.num_mechanisms() as u32 {
            let mut dets = vec![0u8; dem.num_detectors()];
            let mut want = [0u8; 1];
            dem.apply_mechanisms([k], &mut dets, &mut want);
            s.decode_shot(&dets, &mut out).unwrap();
            assert_eq!(out, want, "mechanism {k}: {:?}", dem.mechanism(k as usize));
        }
    }
}
