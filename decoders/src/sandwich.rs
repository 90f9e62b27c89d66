//! A stream's windows matched on several threads: sandwich (parallel) windows, the throughput
//! mode of streaming matching.
//!
//! Sliding windows ([`crate::stream`]) are sequential: each waits for the commit of the one
//! before. Sandwich windows (Skoric et al., arXiv 2209.08552; Tan et al., arXiv 2209.09219)
//! are not. A shot of `T` rounds is cut into *cores* of `core` rounds separated by *gaps* of
//! `2·buffer` rounds:
//!
//! - an **A window** is a core with `buffer` rounds on each side; it is matched on its own,
//!   edges out of it on either side leading to an artificial boundary, and commits its core
//!   (matches with both ends in the core whole; a match with one end there cut where its path
//!   leaves the core, the detector where it leaves toggled — always inside an adjacent gap);
//! - a **B window** is a gap, matched once both A windows beside it have committed (their
//!   toggles in the gap XORed into its detection events), with the committed cores on both
//!   sides taken as settled (edges into them ignored); it commits everything.
//!
//! A windows are independent of each other, and so are B windows: with `threads` workers the
//! windows of one shot are matched in parallel, as soon as their rounds are in (an A window's
//! last round, then its neighbours' commits for a B window). [`SandwichStream::push_round`]
//! only books a round and hands ready windows to the workers; [`SandwichStream::finish`]
//! waits for the last ones. The answer is the XOR of every window's committed observables.
//!
//! Every edge of the model must span at most `buffer` rounds (stim's circuits: 1), so that a
//! cut never toggles a detector outside the gap beside its core; models with an edge of
//! `p > ½` are refused, as for sliding windows.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::dem::DetectorErrorModel;
use crate::matching::{MatchingDecoder, WindowCommit, WindowSpec};
use crate::stream::{StreamBuildError, StreamFault, round_layout};

/// The shape of the windows and the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandwichSettings {
    /// Rounds each A window commits, ≥ 1.
    pub core: usize,
    /// Rounds of buffer on each side of a core (a gap is two buffers), ≥ 1.
    pub buffer: usize,
    /// Worker threads, ≥ 1.
    pub threads: usize,
}

/// One window of a shot.
#[derive(Debug, Clone)]
struct Win {
    spec: WindowSpec,
    /// The round whose arrival completes its rounds (A windows).
    last_round: usize,
    /// A windows it waits for (B windows; `usize::MAX`: none).
    after: [usize; 2],
    /// A window (independent) or B window (after its neighbours).
    is_a: bool,
}

/// What a window has done in this shot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Waiting,
    Queued,
    Running,
    Done,
}

/// The state the workers and the caller share, behind one lock.
#[derive(Debug)]
struct State {
    /// Detection events of the shot as they arrive (0/1 per detector).
    dets: Vec<u8>,
    received: usize,
    phase: Vec<Phase>,
    /// Each window's commit (observables, toggles), valid once `Done`.
    commits: Vec<WindowCommit>,
    queue: VecDeque<usize>,
    done: usize,
    /// A window's decode failed: the shot's answer is wrong.
    failed: Option<usize>,
    shutdown: bool,
}

#[derive(Debug)]
struct Shared {
    wins: Vec<Win>,
    state: Mutex<State>,
    /// Work for the workers, or shutdown.
    work: Condvar,
    /// A window finished (for `finish`).
    progress: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Streaming matching with sandwich windows on worker threads (see the module docs). Built
/// once, threads included; rounds, decodes and resets do not allocate.
#[derive(Debug)]
pub struct SandwichStream {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    round_start: Vec<usize>,
    num_observables: usize,
    obs: Vec<u8>,
}

impl SandwichStream {
    /// The windows of `dem` for `settings`, and their workers.
    pub fn new(
        dem: &DetectorErrorModel,
        settings: &SandwichSettings,
    ) -> Result<SandwichStream, StreamBuildError> {
        let layout = round_layout(dem)?;
        let t = layout.len();
        let SandwichSettings {
            core,
            buffer,
            threads,
        } = *settings;
        if core == 0 || buffer == 0 || threads == 0 {
            return Err(StreamBuildError::Settings(format!(
                "core = {core}, buffer = {buffer}, threads = {threads}: each must be at least 1"
            )));
        }
        let decoder = MatchingDecoder::new(dem)
            .map_err(|e| StreamBuildError::Matching(crate::DecoderError::from(e)))?;
        let g = decoder.graph();
        if g.negative_weight() != 0 {
            return Err(StreamBuildError::Layout {
                file: dem.name().to_string(),
                msg: "streaming matching needs every error's p ≤ ½".into(),
            });
        }
        let mut round_start: Vec<usize> = layout.iter().map(|r| r.start).collect();
        round_start.push(dem.num_detectors());
        let round_of = |d: u32| round_start.partition_point(|&s| s <= d as usize) - 1;
        let span = g
            .edges()
            .iter()
            .filter(|e| e.b != crate::matching::BOUNDARY)
            .map(|e| round_of(e.a).abs_diff(round_of(e.b)))
            .max()
            .unwrap_or(0);
        if span > buffer {
            return Err(StreamBuildError::Settings(format!(
                "buffer = {buffer}: the model has an edge across {span} rounds; the buffer \
                 must be at least that"
            )));
        }
        let wins = windows(t, core, buffer, &round_start);
        let n = dem.num_detectors();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                dets: vec![0; n],
                received: 0,
                phase: vec![Phase::Waiting; wins.len()],
                commits: wins.iter().map(|_| WindowCommit::with_room(n)).collect(),
                queue: VecDeque::with_capacity(wins.len()),
                done: 0,
                failed: None,
                shutdown: false,
            }),
            wins,
            work: Condvar::new(),
            progress: Condvar::new(),
        });
        let mut workers = Vec::with_capacity(threads);
        for k in 0..threads {
            let (s, d) = (shared.clone(), decoder.clone());
            let h = std::thread::Builder::new()
                .name(format!("sandwich-{k}"))
                .spawn(move || worker(&s, d))
                .map_err(|e| StreamBuildError::Settings(format!("starting worker {k}: {e}")))?;
            workers.push(h);
        }
        Ok(SandwichStream {
            shared,
            workers,
            num_observables: dem.num_observables(),
            obs: vec![0; dem.num_observables()],
            round_start,
        })
    }

    /// Rounds per shot.
    pub fn rounds(&self) -> usize {
        self.round_start.len() - 1
    }

    /// The detectors of round `r`.
    pub fn round_detectors(&self, r: usize) -> Range<usize> {
        self.round_start[r]..self.round_start[r + 1]
    }

    /// The windows: `(detectors, committed detectors, is an A window)`, in shot order.
    pub fn windows(&self) -> impl Iterator<Item = (Range<u32>, Range<u32>, bool)> + '_ {
        self.shared
            .wins
            .iter()
            .map(|w| (w.spec.detectors.clone(), w.spec.commit.clone(), w.is_a))
    }

    /// Takes round `round` (the next one), bit-packed LSB-first, and hands the windows it
    /// completes to the workers.
    pub fn push_round(&mut self, round: u32, bits: &[u8]) -> Result<(), StreamFault> {
        let mut st = self.shared.lock();
        let t = self.round_start.len() - 1;
        if st.received == t {
            return Err(StreamFault::ShotComplete { rounds: t as u32 });
        }
        if round as usize != st.received {
            return Err(StreamFault::RoundOrder {
                expected: st.received as u32,
                found: round,
            });
        }
        let dets = self.round_start[round as usize]..self.round_start[round as usize + 1];
        crate::stream::check_round_bits(round, dets.len(), bits)?;
        for (i, d) in st.dets[dets].iter_mut().enumerate() {
            *d = bits[i / 8] >> (i % 8) & 1;
        }
        st.received += 1;
        let mut woke = false;
        for (k, w) in self.shared.wins.iter().enumerate() {
            if w.is_a && w.last_round == round as usize && st.phase[k] == Phase::Waiting {
                st.phase[k] = Phase::Queued;
                st.queue.push_back(k);
                woke = true;
            }
        }
        woke |= queue_ready_gaps(&self.shared, &mut st);
        drop(st);
        if woke {
            self.shared.work.notify_all();
        }
        Ok(())
    }

    /// Rounds whose windows are still to be matched: those received and not yet covered by a
    /// finished window's commit (the backlog, in rounds).
    pub fn backlog_rounds(&self) -> usize {
        let st = self.shared.lock();
        let settled: usize = self
            .shared
            .wins
            .iter()
            .zip(&st.phase)
            .filter(|(_, p)| **p == Phase::Done)
            .map(|(w, _)| {
                let c = &w.spec.commit;
                self.rounds_in(c.start as usize..c.end as usize)
            })
            .sum();
        st.received.saturating_sub(settled)
    }

    fn rounds_in(&self, dets: Range<usize>) -> usize {
        self.round_start[..self.round_start.len() - 1]
            .iter()
            .filter(|&&s| dets.contains(&s))
            .count()
    }

    /// Once every round is in: waits for every window, then the observable flips of the shot
    /// (0/1 per observable).
    pub fn finish(&mut self) -> Result<&[u8], StreamFault> {
        let mut st = self.shared.lock();
        let t = self.round_start.len() - 1;
        if st.received < t {
            return Err(StreamFault::Incomplete {
                received: st.received as u32,
                rounds: t as u32,
            });
        }
        while st.done < self.shared.wins.len() {
            st = self
                .shared
                .progress
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
        }
        if let Some(k) = st.failed {
            return Err(StreamFault::Decoder { window: k as u32 });
        }
        self.obs.fill(0);
        for c in &st.commits {
            for (l, o) in self.obs.iter_mut().enumerate() {
                *o ^= (c.observables >> l & 1) as u8;
            }
        }
        Ok(&self.obs)
    }

    /// Observables per shot.
    pub fn num_observables(&self) -> usize {
        self.num_observables
    }

    /// Forgets the shot (waiting first for the windows still being matched).
    pub fn reset(&mut self) {
        let mut st = self.shared.lock();
        st.queue.clear();
        for p in st.phase.iter_mut() {
            if *p == Phase::Queued {
                *p = Phase::Done;
            }
        }
        while st.phase.contains(&Phase::Running) {
            st = self
                .shared
                .progress
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
        }
        st.dets.fill(0);
        st.received = 0;
        st.phase.fill(Phase::Waiting);
        st.done = 0;
        st.failed = None;
        for c in st.commits.iter_mut() {
            c.clear();
        }
    }

    /// Decodes a whole shot (0/1 per detector) into `observables`: reset, every round, finish.
    pub fn decode_shot(
        &mut self,
        events: &[u8],
        observables: &mut [u8],
    ) -> Result<(), StreamFault> {
        self.reset();
        let mut packed = [0u8; 512];
        for r in 0..self.rounds() {
            let d = self.round_detectors(r);
            let bytes = d.len().div_ceil(8);
            let p = packed.get_mut(..bytes).ok_or(StreamFault::RoundLength {
                round: r as u32,
                expected: d.len() as u32,
                bytes: bytes as u32,
                found: 0,
            })?;
            p.fill(0);
            for (i, &e) in events[d].iter().enumerate() {
                p[i / 8] |= ((e != 0) as u8) << (i % 8);
            }
            self.push_round(r as u32, p)?;
        }
        observables.copy_from_slice(self.finish()?);
        Ok(())
    }
}

impl Drop for SandwichStream {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.work.notify_all();
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

/// The A and B windows of a shot of `t` rounds.
fn windows(t: usize, core: usize, buffer: usize, round_start: &[usize]) -> Vec<Win> {
    let det = |r: usize| round_start[r.min(t)] as u32;
    let mut wins = Vec::new();
    let mut a = 0;
    loop {
        let core_end = (a + core).min(t);
        let lo = a.saturating_sub(buffer);
        let hi = (core_end + buffer).min(t);
        let k = wins.len();
        wins.push(Win {
            spec: WindowSpec {
                detectors: det(lo)..det(hi),
                commit: det(a)..det(core_end),
                past_is_boundary: a > 0,
                future_is_boundary: hi < t,
            },
            last_round: hi - 1,
            after: [usize::MAX; 2],
            is_a: true,
        });
        if core_end == t {
            break;
        }
        let next = core_end + 2 * buffer;
        let gap_end = next.min(t);
        let after = if next < t {
            [k, k + 2]
        } else {
            [k, usize::MAX]
        };
        wins.push(Win {
            spec: WindowSpec {
                detectors: det(core_end)..det(gap_end),
                commit: det(core_end)..det(gap_end),
                past_is_boundary: false,
                future_is_boundary: false,
            },
            last_round: gap_end - 1,
            after,
            is_a: false,
        });
        if next >= t {
            break;
        }
        a = next;
    }
    wins
}

/// A worker: takes a ready window, matches it outside the lock, commits, and queues the B
/// windows this completes.
fn worker(s: &Shared, mut decoder: MatchingDecoder) {
    let n = decoder.num_detectors();
    let mut events: Vec<u32> = Vec::with_capacity(n);
    let mut commit = WindowCommit::with_room(n);
    let mut st = s.lock();
    loop {
        if st.shutdown {
            return;
        }
        let Some(k) = st.queue.pop_front() else {
            st = s.work.wait(st).unwrap_or_else(|p| p.into_inner());
            continue;
        };
        let w = &s.wins[k];
        st.phase[k] = Phase::Running;
        // The window's events: those that arrived, with the neighbours' cuts (B windows).
        let d = w.spec.detectors.clone();
        events.clear();
        for a in w.after.iter().filter(|&&a| a != usize::MAX) {
            for &x in &st.commits[*a].toggles {
                if d.contains(&x) {
                    events.push(x);
                }
            }
        }
        let base = d.start;
        events.extend(
            st.dets[d.start as usize..d.end as usize]
                .iter()
                .enumerate()
                .filter(|e| *e.1 != 0)
                .map(|(i, _)| base + i as u32),
        );
        drop(st);
        if !w.is_a {
            // Toggles and events may name a detector twice: keep the odd ones.
            events.sort_unstable();
            crate::matching::dedup_pairs(&mut events);
        }
        commit.clear();
        // A panic (a bug) fails the window instead of leaving `finish` waiting for it.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            decoder.decode_window(&w.spec, &events, &mut commit)
        }));
        st = s.lock();
        if !matches!(r, Ok(Ok(()))) {
            st.failed.get_or_insert(k);
        }
        std::mem::swap(&mut st.commits[k], &mut commit);
        st.phase[k] = Phase::Done;
        st.done += 1;
        if queue_ready_gaps(s, &mut st) {
            s.work.notify_all();
        }
        s.progress.notify_all();
    }
}

/// Queues every B window whose rounds are in and whose neighbours have committed; returns
/// whether it queued one.
fn queue_ready_gaps(s: &Shared, st: &mut State) -> bool {
    let mut woke = false;
    for (j, b) in s.wins.iter().enumerate() {
        if !b.is_a
            && st.phase[j] == Phase::Waiting
            && st.received > b.last_round
            && b.after
                .iter()
                .all(|&a| a == usize::MAX || st.phase[a] == Phase::Done)
        {
            st.phase[j] = Phase::Queued;
            st.queue.push_back(j);
            woke = true;
        }
    }
    woke
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dem_decoder::{DemDecoder, DemDecoderSettings};
    use crate::noise::DemNoise;

    fn fixture(name: &str) -> DetectorErrorModel {
        let path = format!("{}/tests/data/dem/{name}", env!("CARGO_MANIFEST_DIR"));
        DetectorErrorModel::parse(&std::fs::read_to_string(&path).unwrap(), name).unwrap()
    }

    fn settings(core: usize, buffer: usize, threads: usize) -> SandwichSettings {
        SandwichSettings {
            core,
            buffer,
            threads,
        }
    }

    #[test]
    fn windows_tile_the_shot() {
        let dem = fixture("surface_d3_r8_p0.01.dem");
        let s = SandwichStream::new(&dem, &settings(2, 1, 2)).unwrap();
        assert_eq!(s.rounds(), 9);
        let r = |d: u32| {
            (0..9)
                .find(|&r| s.round_detectors(r).contains(&(d as usize)))
                .unwrap()
        };
        let rounds: Vec<(Range<usize>, Range<usize>, bool)> = s
            .windows()
            .map(|(d, c, a)| {
                (
                    r(d.start)..r(d.end - 1) + 1,
                    r(c.start)..r(c.end - 1) + 1,
                    a,
                )
            })
            .collect();
        assert_eq!(
            rounds,
            vec![
                (0..3, 0..2, true),
                (2..4, 2..4, false),
                (3..7, 4..6, true),
                (6..8, 6..8, false),
                (7..9, 8..9, true),
            ]
        );
        // Every round is committed by exactly one window.
        let mut covered = vec![0; dem.num_detectors()];
        for (_, c, _) in s.windows() {
            for d in c {
                covered[d as usize] += 1;
            }
        }
        assert!(covered.iter().all(|&c| c == 1));
    }

    #[test]
    fn sandwich_windows_decode_like_the_whole_history() {
        let dem = fixture("surface_d5_r5_p0.001.dem");
        let mut whole = DemDecoder::new(
            &dem,
            &DemDecoderSettings::from(crate::matching::MatchingConfig::default()),
        )
        .unwrap();
        for (core, buffer, threads) in [(1, 1, 1), (2, 1, 2), (1, 2, 3)] {
            let mut s = SandwichStream::new(&dem, &settings(core, buffer, threads)).unwrap();
            let mut noise = DemNoise::new(&dem, 9);
            let mut events = vec![0u8; dem.num_detectors()];
            let (mut truth, mut a, mut b) = ([0u8; 1], [0u8; 1], [0u8; 1]);
            let (mut differ, mut fails) = (0, 0);
            for _ in 0..1500 {
                noise.sample(&mut events, &mut truth);
                whole.decode(&events, &mut a).unwrap();
                s.decode_shot(&events, &mut b).unwrap();
                assert_eq!(s.backlog_rounds(), 0);
                differ += (a != b) as u32;
                fails += (b != truth) as u32;
            }
            assert!(differ <= 8, "{core} {buffer}: {differ}");
            assert!(fails <= 8, "{core} {buffer}: {fails}");
            // Every single mechanism is decoded to what the whole history says.
            for k in 0..dem.num_mechanisms() as u32 {
                let mut dets = vec![0u8; dem.num_detectors()];
                let mut want = [0u8; 1];
                dem.apply_mechanisms([k], &mut dets, &mut want);
                s.decode_shot(&dets, &mut b).unwrap();
                whole.decode(&dets, &mut a).unwrap();
                assert_eq!(a, b, "{core} {buffer}: mechanism {k}");
            }
        }
    }

    #[test]
    fn probabilities_too_small_to_weigh_are_refused_by_the_streaming_builders() {
        let model = |p: &str| {
            DetectorErrorModel::parse(
                &format!(
                    "error({p}) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1\n\
                     detector(0, 0) D0\ndetector(1, 0) D1\n"
                ),
                "tiny.dem",
            )
            .unwrap()
        };
        let stream_settings = crate::stream::StreamSettings {
            decoder: DemDecoderSettings::from(crate::matching::MatchingConfig::default()),
            ..crate::stream::StreamSettings::default()
        };
        for p in ["1e-310", "5e-324"] {
            let e = SandwichStream::new(&model(p), &settings(1, 1, 1))
                .unwrap_err()
                .to_string();
            assert!(e.contains("tiny.dem:1: an error of probability"), "{e}");
            assert!(e.contains("too small to weigh"), "{e}");
            let e = crate::stream::StreamDecoder::new(&model(p), &stream_settings)
                .unwrap_err()
                .to_string();
            assert!(e.contains("too small to weigh"), "{e}");
        }
        let p = format!("{:e}", f64::MIN_POSITIVE);
        assert!(SandwichStream::new(&model(&p), &settings(1, 1, 1)).is_ok());
        assert!(crate::stream::StreamDecoder::new(&model(&p), &stream_settings).is_ok());
    }

    #[test]
    fn bad_settings_and_calls_are_errors() {
        let dem = fixture("surface_d3_r8_p0.01.dem");
        for (c, b, t) in [(0, 1, 1), (1, 0, 1), (1, 1, 0)] {
            let e = SandwichStream::new(&dem, &settings(c, b, t)).unwrap_err();
            assert!(e.to_string().contains("each must be at least 1"), "{e}");
        }
        let long = DetectorErrorModel::parse(
            "error(0.1) D0\nerror(0.1) D0 D2\nerror(0.1) D1\nerror(0.1) D2\n\
             detector(0, 0) D0\ndetector(0, 1) D1\ndetector(0, 2) D2\n",
            "long.dem",
        )
        .unwrap();
        let e = SandwichStream::new(&long, &settings(1, 1, 1)).unwrap_err();
        assert!(e.to_string().contains("an edge across 2 rounds"), "{e}");
        let mut s = SandwichStream::new(&dem, &settings(2, 1, 1)).unwrap();
        assert!(matches!(s.finish(), Err(StreamFault::Incomplete { .. })));
        assert!(matches!(
            s.push_round(1, &[0]),
            Err(StreamFault::RoundOrder { .. })
        ));
        assert!(matches!(
            s.push_round(0, &[0, 0]),
            Err(StreamFault::RoundLength { .. })
        ));
        assert!(matches!(
            s.push_round(0, &[0x10]),
            Err(StreamFault::Padding { .. })
        ));
        // A shot left half-way is forgotten by a reset.
        s.push_round(0, &[1]).unwrap();
        s.reset();
        let mut out = [0u8; 1];
        s.decode_shot(&vec![0u8; dem.num_detectors()], &mut out)
            .unwrap();
        assert_eq!(out, [0]);
    }
}
