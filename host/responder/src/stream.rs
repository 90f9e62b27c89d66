//! Streaming decoders as coprocessor functions: `stream:FILE.dem[:DECODER[:SETTINGS]]`, one
//! [`StreamFunction`] per decoder id, each holding the shot of one logical qubit in a
//! [`backline_decoders::stream::StreamDecoder`].
//!
//! DECODER is the name of a registered decoder ([`backline_decoders::registry`]: `bposd`, the
//! default, `relay-bp`, `matching`) at its real-time defaults; SETTINGS are `key=value` pairs
//! separated by `;`: `window` and `commit` (rounds, 1..=1048576; default one window over the
//! whole shot), `deadline_us` (a per-window deadline: BP+OSD and Relay-BP stop there with their
//! best answer so far, and the windows that reach it are counted), `streams` (decoder ids the
//! spec takes from its base, one stream each, 1..=4096; default 1), `idle_ms` (a shot left this
//! long mid-way is dropped when the stream is next used; default 5000), `decode` (where the CUQR
//! server decodes: `inline`, on the thread that received the round, or `worker`, on a decode
//! thread of the decoder's own; default `auto`, [`DecodeMode::realtime_default`]: inline for
//! matching and for one window over the shot, else a worker), and the inner
//! decoder's settings with `ldpc`'s or `relay-bp`'s names (`max_iter` 0..=1048576, `osd_method`, …,
//! `gamma0`, …). Example: `stream:surface.dem:bposd:window=5;commit=3;max_iter=30`. The model is
//! read within the bounds of `BACKLINE_DEM_LIMITS`
//! ([`backline_decoders::dem::DemLimits::from_env`]); errors quote at most an excerpt of the spec
//! and of the model.
//!
//! Each request is one operation of [`backline_wire::stream`] (enqueue a round, get the
//! corrections, reset), and each reply starts with a [`CallStatus`]. (The CUQR server,
//! [`crate::cuqr`], follows NVIDIA's rules instead: it takes a decoder of the same model and
//! settings, [`StreamFunction::fresh_decoder`], and decodes where its `decode` says.) The rules
//! of a stream served over backline's protocol:
//!
//! - round `r` of a shot is accepted only after rounds `0..r`; a later round than the next one
//!   means rounds were lost: [`CallStatus::SyndromesDropped`], latched until a reset; an
//!   earlier one (a repeat) is [`CallStatus::BadRequest`];
//! - round 0 is accepted only by a fresh stream (after a reset, a `get_corrections` with reset,
//!   or the idle timeout): a round 0 in the middle of a shot is [`CallStatus::Busy`], the
//!   stream's shot belonging to another client;
//! - a round of the wrong length, padding bits set, or a return size other than the model's
//!   number of observables: [`CallStatus::BadRequest`];
//! - `get_corrections` before any round of the shot: [`CallStatus::NotReady`]; before the last
//!   round, the corrections committed so far; after it, the last window is decoded and the
//!   answer is final ([`backline_wire::stream::FLAG_FINAL`]);
//! - a shot untouched for the idle time is dropped when the stream is next used (a client that
//!   disappeared mid-shot leaves nothing stuck).
//!
//! A refused call changes nothing but the latch. Hop probes (on when the serving loop has
//! them on) mark [`backline_probe::Hop::WindowReady`] after the round's bookkeeping and
//! [`backline_probe::Hop::DecodeDone`] after a window's inner decode.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use backline_decoders::dem::DemLimits;
use backline_decoders::io::excerpt;
use backline_decoders::registry::{self, Profile};
use backline_decoders::stream::{StreamDecoder, StreamFault, StreamModel, StreamSettings};
use backline_probe::{Hop, mark};
use backline_wire::cuqr::CallStatus;
use backline_wire::stream::{
    FLAG_DECODED, FLAG_FINAL, STREAM_HEADER_BYTES, StreamReply, StreamRequest,
};

use crate::{Responder, ResponderError};

/// Default idle time after which a shot left mid-way is dropped.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(5);

/// Where a CUQR server decodes a stream's windows (the spec's `decode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeMode {
    /// On the ring's thread, inside the call that completes the window (NVIDIA's shape since
    /// cudaqx PR #769): no hand-off, but the ring reads no datagram while a window decodes.
    Inline,
    /// On a decode thread of the decoder's own, fed through a bounded queue: an enqueue is
    /// answered at once and the next datagram is read while a window decodes, at the cost of
    /// a hand-off (a wake-up) per call that has to wait for the decode.
    Worker,
}

impl DecodeMode {
    /// `inline` or `worker`.
    pub const fn name(self) -> &'static str {
        match self {
            DecodeMode::Inline => "inline",
            DecodeMode::Worker => "worker",
        }
    }

    /// The real-time default (`decode=auto`) of registry decoder `decoder` on a stream of
    /// `windows` windows: inline for a decoder whose window decode is a few microseconds
    /// (`matching`), and for any decoder on a stream of one window (the real-time default: one
    /// window over the shot) — its one decode starts with the shot's last round, so a worker
    /// would overlap nothing with it and only add the hand-off; a worker for the iterative
    /// decoders (`bposd`, `relay-bp`) over several windows, whose window decodes run to their
    /// iteration budget or `deadline_us` (tens to hundreds of microseconds at d = 5..7), so
    /// that the next window's rounds are read while one decodes.
    pub fn realtime_default(decoder: &str, windows: usize) -> DecodeMode {
        match decoder {
            "matching" => DecodeMode::Inline,
            _ if windows <= 1 => DecodeMode::Inline,
            _ => DecodeMode::Worker,
        }
    }
}

/// Why a `stream:` spec was refused.
#[derive(Debug, thiserror::Error)]
#[error("stream spec `{spec}`: {msg}")]
pub struct StreamSpecError {
    /// The spec (an excerpt of it: [`backline_decoders::io::excerpt`]).
    pub spec: String,
    /// What is wrong (the model's or the decoder's error, rendered).
    pub msg: String,
}

/// A parsed `stream:` spec.
#[derive(Debug, Clone)]
pub struct StreamSpec {
    /// The model's file.
    pub path: String,
    /// The decoder's registry name (`bposd`, `relay-bp`, `matching`, …).
    pub decoder: &'static str,
    /// Window, commit and inner decoder settings.
    pub settings: StreamSettings,
    /// Decoder ids (streams) the spec takes.
    pub streams: u32,
    /// Idle time after which a shot left mid-way is dropped.
    pub idle: Duration,
    /// Where a CUQR server decodes (`decode`); `None` for `auto`, resolved by
    /// [`stream_decoder_of`] once the windows are known ([`DecodeMode::realtime_default`]).
    pub decode: Option<DecodeMode>,
}

/// Parses a `stream:FILE.dem[:DECODER[:SETTINGS]]` spec (without reading the model).
pub fn parse_stream_spec(spec: &str) -> Result<StreamSpec, StreamSpecError> {
    let bad = |msg: String| StreamSpecError {
        spec: excerpt(spec),
        msg,
    };
    let rest = spec
        .strip_prefix("stream:")
        .ok_or_else(|| bad("expected stream:FILE.dem[:DECODER[:SETTINGS]]".into()))?;
    // Settings always contain '='; the decoder is a known name; the file is what is left (it
    // may itself contain ':').
    let (rest, set) = match rest.rsplit_once(':') {
        Some((r, s)) if s.contains('=') => (r, s),
        _ => (rest, ""),
    };
    let (path, entry) = match rest.rsplit_once(':') {
        Some((p, name)) if registry::find(name).is_some() => (p, registry::find(name)),
        _ => (rest, None),
    };
    let decoder = entry.map_or(registry::DEFAULT_DECODER, |e| e.name);
    if path.is_empty() {
        return Err(bad("no model file".into()));
    }
    let limits = DemLimits::from_env().map_err(|e| bad(format!("{}: {e}", DemLimits::ENV)))?;
    let mut settings = StreamSettings {
        decoder: registry::settings(decoder, Profile::Realtime).map_err(|e| bad(e.to_string()))?,
        limits,
        ..StreamSettings::default()
    };
    let (mut streams, mut idle) = (1u32, DEFAULT_IDLE);
    let mut decode = None;
    for kv in set.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad(format!("`{}` is not key=value", excerpt(kv))))?;
        match k.trim() {
            "streams" => {
                streams = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&n: &u32| (1..=4096).contains(&n))
                    .ok_or_else(|| {
                        bad(format!(
                            "streams: `{}` is not an integer in 1..=4096",
                            excerpt(v)
                        ))
                    })?
            }
            "idle_ms" => {
                idle = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&n: &u64| n > 0)
                    .map(Duration::from_millis)
                    .ok_or_else(|| {
                        bad(format!(
                            "idle_ms: `{}` is not a positive integer",
                            excerpt(v)
                        ))
                    })?
            }
            "decode" => {
                decode = match v.trim() {
                    "inline" => Some(DecodeMode::Inline),
                    "worker" => Some(DecodeMode::Worker),
                    "auto" => None,
                    _ => {
                        return Err(bad(format!(
                            "decode: `{}` is not inline, worker or auto",
                            excerpt(v)
                        )));
                    }
                }
            }
            _ => settings.set(k, v).map_err(|e| {
                bad(format!(
                    "{e} (stream settings: {}, streams, idle_ms, decode, and the {decoder} \
                     decoder's)",
                    StreamSettings::KEYS
                ))
            })?,
        }
    }
    Ok(StreamSpec {
        path: path.to_string(),
        decoder,
        settings,
        streams,
        idle,
        decode,
    })
}

/// How many decoder ids a `stream:` spec takes (its `streams`; 1 when unreadable, the error
/// coming when it is built).
pub fn stream_width(spec: &str) -> u32 {
    parse_stream_spec(spec).map_or(1, |s| s.streams)
}

/// The model and the decoder of a `stream:` spec, the spec's `decode` resolved (`Some`).
pub fn stream_decoder_of(spec: &str) -> Result<(StreamSpec, StreamDecoder), StreamSpecError> {
    let s = parse_stream_spec(spec)?;
    let bad = |msg: String| StreamSpecError {
        spec: excerpt(spec),
        msg,
    };
    let text = backline_decoders::io::read_text(Path::new(&s.path))
        .map_err(|e| bad(format!("reading {}: {e}", excerpt(&s.path))))?;
    // A model whose rounds repeat is kept rolled: the stream is built from a short copy.
    let model = StreamModel::read(&text, &excerpt(&s.path), &s.settings.limits)
        .map_err(|e| bad(e.to_string()))?;
    drop(text);
    let mut s = s;
    // The real-time default of a matching stream: windows of 2·d rounds committing d, not the
    // whole shot (whose last decode grows with the shot), when the spec names no window.
    if s.decoder == "matching"
        && s.settings.window.is_none()
        && s.settings.commit.is_none()
        && let Some((w, c)) = backline_decoders::stream::realtime_matching_windows(&model)
    {
        s.settings.window = Some(w);
        s.settings.commit = Some(c);
    }
    let dec = StreamDecoder::of_model(&model, &s.settings).map_err(|e| bad(e.to_string()))?;
    s.decode = Some(
        s.decode
            .unwrap_or_else(|| DecodeMode::realtime_default(s.decoder, dec.windows().count())),
    );
    Ok((s, dec))
}

/// The streaming decoder behind a registered function, if it is one.
pub fn as_stream(r: &dyn Responder) -> Option<&StreamFunction> {
    r.as_any()?.downcast_ref()
}

/// The streams of a `stream:` spec from decoder id `base`: `streams` of them, each its own
/// shot.
pub fn stream_functions(spec: &str, base: u32) -> Result<crate::Functions, StreamSpecError> {
    let (s, dec) = stream_decoder_of(spec)?;
    // Each stream holds its own copy of the decoder: together within the model's bound.
    let limit = s.settings.limits.targets;
    if dec.entries().saturating_mul(u64::from(s.streams)) > limit {
        return Err(StreamSpecError {
            spec: excerpt(spec),
            msg: format!(
                "streams = {}: the streams' decoders hold more than {limit} targets together \
                 ({} each; limit `targets`; BACKLINE_DEM_LIMITS=targets=N raises it)",
                s.streams,
                dec.entries()
            ),
        });
    }
    // The streams share one budget of exact figures (each reserves its buffer up front).
    let latency_shots = crate::cuqr::latency::latency_shots_per(
        crate::cuqr::latency::DEFAULT_LATENCY_SHOTS,
        s.streams as usize,
    );
    Ok((0..s.streams)
        .map(|k| {
            let spec = excerpt(spec);
            let name = if s.streams == 1 {
                spec
            } else {
                format!("{spec} (stream {k})")
            };
            let f: std::sync::Arc<dyn Responder> = std::sync::Arc::new(
                StreamFunction::with_latency_shots(name, dec.clone(), s.idle, latency_shots)
                    .with_decode(s.decode.unwrap_or(DecodeMode::Worker)),
            );
            (base + k, f)
        })
        .collect())
}

/// What a stream call did: its status, the reply flags and the shot's rounds so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The call's status.
    pub status: CallStatus,
    /// [`FLAG_FINAL`], [`FLAG_DECODED`].
    pub flags: u8,
    /// Rounds of the current shot received.
    pub rounds: u32,
}

impl Outcome {
    fn reply(&self) -> StreamReply {
        StreamReply {
            status: self.status,
            flags: self.flags,
            rounds: self.rounds,
        }
    }
}

/// Counters of a stream, for the shutdown report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCounters {
    /// Rounds accepted.
    pub rounds: u64,
    /// Windows whose inner decode ran.
    pub decodes: u64,
    /// Shots answered with final corrections.
    pub shots: u64,
    /// Calls refused (any status but ok).
    pub refused: u64,
    /// Shots dropped by the idle timeout.
    pub stale: u64,
}

/// Sub-buckets per power of two of [`WindowTimes`] (relative resolution 1/32, about 3 %).
const SUB: u64 = 32;
/// Buckets: values below 32 ns one each, then 32 per power of two up to 2^64.
const TIME_BUCKETS: usize = (64 - 4) * SUB as usize;

/// The inner decode times of a stream's windows: a log-linear histogram (no allocation per
/// sample), from which percentiles are read to within 3 %.
#[derive(Debug, Clone)]
pub struct WindowTimes {
    counts: Box<[u64]>,
    total: u64,
    max_ns: u64,
}

impl Default for WindowTimes {
    fn default() -> WindowTimes {
        WindowTimes {
            counts: vec![0; TIME_BUCKETS].into_boxed_slice(),
            total: 0,
            max_ns: 0,
        }
    }
}

impl WindowTimes {
    fn bucket(ns: u64) -> usize {
        if ns < SUB {
            return ns as usize;
        }
        let e = 63 - ns.leading_zeros() as u64;
        ((e - 4) * SUB + ((ns >> (e - 5)) & (SUB - 1))) as usize
    }

    /// The smallest value of bucket `b`.
    fn floor(b: usize) -> u64 {
        let b = b as u64;
        if b < SUB {
            return b;
        }
        let (e, m) = (b / SUB + 4, b % SUB);
        (SUB + m) << (e - 5)
    }

    /// Adds one decode of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        self.counts[Self::bucket(ns)] += 1;
        self.total += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Decodes recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q`-quantile (0 ≤ q ≤ 1, nearest rank), as the lower edge of its bucket (the
    /// maximum for `q = 1`); `None` before any decode.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        if q >= 1.0 {
            return Some(self.max_ns);
        }
        let rank = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Self::floor(b).min(self.max_ns));
            }
        }
        Some(self.max_ns)
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.total = 0;
        self.max_ns = 0;
    }
}

#[derive(Debug)]
struct Shot {
    dec: StreamDecoder,
    /// A round was lost; refuse everything but a reset.
    dropped: bool,
    last: Instant,
    counters: StreamCounters,
    /// How long each inner decode took.
    times: WindowTimes,
    /// When the shot's last round arrived (its enqueue began), until its final decode.
    last_round: Option<Instant>,
    /// Per shot: the last round's arrival → the final corrections ready.
    figures: crate::cuqr::ShotLatencies,
}

/// One stream: a streaming decoder holding one shot at a time, behind a lock (calls from
/// several sessions are served one at a time).
#[derive(Debug)]
pub struct StreamFunction {
    name: String,
    idle: Duration,
    rounds: usize,
    observables: usize,
    /// Detectors of each round.
    round_bits: Vec<u32>,
    decode: DecodeMode,
    shot: Mutex<Shot>,
}

impl StreamFunction {
    /// A stream of `dec`'s model, dropping a shot left mid-way for `idle`, keeping the figures
    /// of its first [`DEFAULT_LATENCY_SHOTS`](crate::cuqr::latency::DEFAULT_LATENCY_SHOTS)
    /// shots exactly.
    pub fn new(name: String, dec: StreamDecoder, idle: Duration) -> StreamFunction {
        StreamFunction::with_latency_shots(
            name,
            dec,
            idle,
            crate::cuqr::latency::DEFAULT_LATENCY_SHOTS,
        )
    }

    /// [`StreamFunction::new`] keeping the figures of the first `latency_shots` shots exactly
    /// (one of several streams shares the budget: [`crate::cuqr::latency::latency_shots_per`]).
    pub fn with_latency_shots(
        name: String,
        dec: StreamDecoder,
        idle: Duration,
        latency_shots: usize,
    ) -> StreamFunction {
        StreamFunction {
            name,
            idle,
            rounds: dec.rounds(),
            observables: dec.num_observables(),
            round_bits: (0..dec.rounds())
                .map(|r| dec.round_detectors(r).len() as u32)
                .collect(),
            decode: DecodeMode::Worker,
            shot: Mutex::new(Shot {
                dec,
                dropped: false,
                last: Instant::now(),
                counters: StreamCounters::default(),
                times: WindowTimes::default(),
                last_round: None,
                figures: crate::cuqr::ShotLatencies::with_capacity(latency_shots),
            }),
        }
    }

    /// This stream with decode mode `mode` (default [`DecodeMode::Worker`]).
    pub fn with_decode(mut self, mode: DecodeMode) -> StreamFunction {
        self.decode = mode;
        self
    }

    /// Where a CUQR server decodes this stream's windows.
    pub fn decode_mode(&self) -> DecodeMode {
        self.decode
    }

    /// Rounds per shot.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// Observables (the return size `get_corrections` must ask for).
    pub fn num_observables(&self) -> usize {
        self.observables
    }

    /// Detectors of round `r`, `None` past the last round.
    pub fn round_bits(&self, r: usize) -> Option<usize> {
        self.round_bits.get(r).map(|&n| n as usize)
    }

    /// A streaming decoder of this stream's model and settings with no shot in it (for a
    /// server that decodes on a thread of its own: the CUQR server).
    pub fn fresh_decoder(&self) -> StreamDecoder {
        let mut dec = self.lock().dec.clone();
        dec.reset();
        dec
    }

    /// How long a shot may be left mid-way before it is dropped.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// The counters so far.
    pub fn counters(&self) -> StreamCounters {
        self.lock().counters
    }

    /// The inner decode time of every window decoded so far (those whose syndrome was not
    /// all zero, final windows included; the clock around the decoder's call).
    pub fn window_times(&self) -> WindowTimes {
        self.lock().times.clone()
    }

    /// Per shot answered with final corrections: from the call that brought its last round
    /// to the final corrections being ready (over backline's protocol the last window decodes
    /// in the `get_corrections` after that round, so the interval holds the client's turn
    /// between the two calls).
    pub fn shot_figures(&self) -> crate::cuqr::ShotLatencies {
        self.lock().figures.clone()
    }

    /// The windows (and their rounds) whose inner decode reached the spec's `deadline_us`.
    pub fn deadline_misses(&self) -> backline_decoders::stream::DeadlineMisses {
        self.lock().dec.deadline_misses()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shot> {
        // A panic inside a decode leaves a shot half-booked: drop it.
        self.shot.lock().unwrap_or_else(|p| {
            let mut g = p.into_inner();
            g.dec.reset();
            g.dropped = false;
            g
        })
    }

    /// The shot, with a stale one dropped first.
    fn fresh(&self) -> std::sync::MutexGuard<'_, Shot> {
        let mut g = self.lock();
        let now = Instant::now();
        if g.dec.received() > 0 && now.duration_since(g.last) > self.idle {
            g.dec.reset();
            g.dropped = false;
            g.counters.stale += 1;
        }
        g.last = now;
        g
    }

    fn outcome(g: &mut Shot, status: CallStatus, flags: u8) -> Outcome {
        if status != CallStatus::Ok {
            g.counters.refused += 1;
        }
        Outcome {
            status,
            flags,
            rounds: g.dec.received() as u32,
        }
    }

    /// `enqueue_syndromes`: round `round`'s detection events, bit-packed LSB-first. A round
    /// that completes a window is decoded before this returns ([`FLAG_DECODED`] when the inner
    /// decoder ran).
    pub fn enqueue(&self, round: u64, bits: &[u8]) -> Outcome {
        let arrived = Instant::now();
        let mut g = self.fresh();
        if g.dropped {
            return Self::outcome(&mut g, CallStatus::SyndromesDropped, 0);
        }
        let Ok(round) = u32::try_from(round) else {
            g.dropped = true;
            return Self::outcome(&mut g, CallStatus::SyndromesDropped, 0);
        };
        match g.dec.push_round(round, bits) {
            Ok(ready) => {
                mark(Hop::WindowReady);
                g.counters.rounds += 1;
                if g.dec.received() == self.rounds {
                    g.last_round = Some(arrived);
                }
                let mut flags = 0;
                if ready {
                    let t0 = Instant::now();
                    match g.dec.decode_ready() {
                        Ok(ran) => {
                            mark(Hop::DecodeDone);
                            if ran {
                                g.times.record(t0.elapsed().as_nanos() as u64);
                                g.counters.decodes += 1;
                                flags = FLAG_DECODED;
                            }
                        }
                        Err(_) => return Self::outcome(&mut g, CallStatus::InternalError, 0),
                    }
                }
                Self::outcome(&mut g, CallStatus::Ok, flags)
            }
            Err(StreamFault::RoundOrder { expected, found }) => {
                let status = if found > expected {
                    g.dropped = true;
                    CallStatus::SyndromesDropped
                } else if found == 0 {
                    CallStatus::Busy
                } else {
                    CallStatus::BadRequest
                };
                Self::outcome(&mut g, status, 0)
            }
            // Round 0 after the shot's last round: the shot waits for its get_corrections.
            Err(StreamFault::ShotComplete { .. }) if round == 0 => {
                Self::outcome(&mut g, CallStatus::Busy, 0)
            }
            Err(StreamFault::Decoder { .. }) => Self::outcome(&mut g, CallStatus::InternalError, 0),
            Err(_) => Self::outcome(&mut g, CallStatus::BadRequest, 0),
        }
    }

    /// `get_corrections`: the observable flips so far, bit-packed into `out` (`⌈k/8⌉` bytes
    /// written on [`CallStatus::Ok`], whose count is returned with the outcome). After the
    /// shot's last round the last window is decoded first and the answer is final
    /// ([`FLAG_FINAL`]). With `reset`, the stream is fresh afterwards (whatever the status).
    pub fn get_corrections(
        &self,
        return_size: u64,
        reset: bool,
        out: &mut [u8],
    ) -> (Outcome, usize) {
        let mut g = self.fresh();
        let r = self.corrections(&mut g, return_size, out);
        if reset {
            g.dec.reset();
            g.dropped = false;
        }
        r
    }

    fn corrections(&self, g: &mut Shot, return_size: u64, out: &mut [u8]) -> (Outcome, usize) {
        let bytes = self.observables.div_ceil(8);
        if return_size != self.observables as u64 {
            return (Self::outcome(g, CallStatus::BadRequest, 0), 0);
        }
        if g.dropped {
            return (Self::outcome(g, CallStatus::SyndromesDropped, 0), 0);
        }
        if g.dec.received() == 0 {
            return (Self::outcome(g, CallStatus::NotReady, 0), 0);
        }
        let Some(out) = out.get_mut(..bytes) else {
            return (Self::outcome(g, CallStatus::InternalError, 0), 0);
        };
        let mut flags = 0;
        if g.dec.received() == self.rounds {
            let was_final = g.dec.is_final();
            mark(Hop::WindowReady);
            let t0 = Instant::now();
            match g.dec.finish() {
                Ok(ran) => {
                    mark(Hop::DecodeDone);
                    if ran {
                        g.times.record(t0.elapsed().as_nanos() as u64);
                        g.counters.decodes += 1;
                        flags |= FLAG_DECODED;
                    }
                }
                Err(_) => return (Self::outcome(g, CallStatus::InternalError, 0), 0),
            }
            if !was_final {
                g.counters.shots += 1;
                if let Some(t) = g.last_round.take() {
                    let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    g.figures.record(ns);
                }
            }
            flags |= FLAG_FINAL;
        }
        g.dec.observables_packed(out);
        (Self::outcome(g, CallStatus::Ok, flags), bytes)
    }

    /// `reset_decoder`: the stream is fresh.
    pub fn reset(&self) -> Outcome {
        let mut g = self.lock();
        g.dec.reset();
        g.dropped = false;
        g.last = Instant::now();
        Self::outcome(&mut g, CallStatus::Ok, 0)
    }
}

impl Responder for StreamFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
        if out.len() < STREAM_HEADER_BYTES {
            return Err(ResponderError::Failed(
                "the reply slot is smaller than 8 bytes",
            ));
        }
        let (head, body) = out.split_at_mut(STREAM_HEADER_BYTES);
        let (outcome, n) = match backline_wire::stream::parse_request(input) {
            Ok(StreamRequest::Enqueue { round, bits }) => (self.enqueue(round as u64, bits), 0),
            Ok(StreamRequest::GetCorrections { observables, reset }) => {
                self.get_corrections(observables as u64, reset, body)
            }
            Ok(StreamRequest::Reset) => (self.reset(), 0),
            Err(_) => {
                let mut g = self.lock();
                (Self::outcome(&mut g, CallStatus::BadRequest, 0), 0)
            }
        };
        backline_wire::stream::encode_reply(head, &outcome.reply())
            .map_err(|_| ResponderError::Failed("the reply slot is smaller than 8 bytes"))?;
        Ok(STREAM_HEADER_BYTES + n)
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn report(&self) -> Option<String> {
        let c = self.counters();
        let m = self.deadline_misses();
        let late = if m.windows > 0 {
            format!(
                ", {} windows ({} rounds) at their deadline",
                m.windows, m.rounds
            )
        } else {
            String::new()
        };
        let figure = match self.lock().figures.summary() {
            Some(s) => format!("; last round → corrections ready: {}", s.render()),
            None => String::new(),
        };
        Some(format!(
            "{}: {} rounds, {} shots finished, {} windows decoded, {} calls refused, {} idle shots dropped{late}{figure}",
            self.name, c.rounds, c.shots, c.decodes, c.refused, c.stale
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A repetition code of 3 rounds (2 detectors each), written to a file for the spec (also
    /// the CUQR server's tests).
    pub(crate) fn model_file(tag: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("backline-stream-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("rep.dem");
        std::fs::write(
            &p,
            "repeat 2 {\n error(0.05) D0 L0\n error(0.05) D0 D1\n error(0.05) D1\n \
             error(0.02) D0 D2\n error(0.02) D1 D3\n detector(0, 0) D0\n detector(1, 0) D1\n \
             shift_detectors(0, 1) 2\n}\nerror(0.05) D0 L0\nerror(0.05) D0 D1\nerror(0.05) D1\n\
             detector(0, 0) D0\ndetector(1, 0) D1\n",
        )
        .unwrap();
        p
    }

    fn call(f: &dyn Responder, r: &StreamRequest<'_>) -> (StreamReply, Vec<u8>) {
        let mut req = [0u8; 64];
        let n = backline_wire::stream::encode_request(&mut req, r).unwrap();
        let mut out = [0u8; 48];
        let m = f.respond(&req[..n], &mut out).unwrap();
        let (h, rest) = backline_wire::stream::parse_reply(&out[..m]).unwrap();
        (h, rest.to_vec())
    }

    #[test]
    fn every_registered_setting_is_a_key_of_stream_specs() {
        for e in registry::DECODERS {
            for st in e.settings {
                // Its real-time default, and its offline one, both read back as given.
                for v in [st.realtime, st.offline] {
                    let spec = format!("stream:x.dem:{}:{}={v}", e.name, st.key);
                    let s = parse_stream_spec(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
                    assert_eq!(s.decoder, e.name);
                    assert_eq!(s.settings.decoder.get(st.key).as_deref(), Some(v), "{spec}");
                }
            }
            // A spec naming the decoder alone gets its real-time defaults.
            let s = parse_stream_spec(&format!("stream:x.dem:{}", e.name)).unwrap();
            assert_eq!(
                s.settings.decoder,
                registry::settings(e.name, Profile::Realtime).unwrap()
            );
        }
        // A bad value: the registry's message, inside the spec's.
        let mut want = registry::settings("relay-bp", Profile::Realtime).unwrap();
        let want = want
            .set("gamma_dist_interval", "1")
            .unwrap_err()
            .to_string();
        let e = parse_stream_spec("stream:x.dem:relay-bp:gamma_dist_interval=1")
            .unwrap_err()
            .to_string();
        assert!(e.contains(&want), "{e}");
    }

    #[test]
    fn specs_parse_and_say_what_is_wrong() {
        let s = parse_stream_spec("stream:a:b.dem:relay-bp:window=4;commit=2;streams=3;gamma0=0.2")
            .unwrap();
        assert_eq!(
            (s.path.as_str(), s.decoder, s.streams),
            ("a:b.dem", "relay-bp", 3)
        );
        assert_eq!((s.settings.window, s.settings.commit), (Some(4), Some(2)));
        let s = parse_stream_spec("stream:x.dem:window=2").unwrap();
        assert_eq!((s.path.as_str(), s.decoder), ("x.dem", "bposd"));
        assert_eq!(stream_width("stream:x.dem:bposd:streams=4"), 4);
        for (spec, want) in [
            ("stream:", "no model file"),
            ("stream:x.dem:bposd:streams=0", "streams: `0`"),
            ("stream:x.dem:bposd:idle_ms=-1", "idle_ms"),
            (
                "stream:x.dem:bposd:flavour=mint",
                "unknown setting `flavour`",
            ),
            ("stream:x.dem:bposd:gamma0=0.1", "gamma0"),
            (
                "stream:x.dem:bposd:window=5;commit",
                "`commit` is not key=value",
            ),
            ("stream:/nonexistent/x.dem", "reading /nonexistent/x.dem"),
        ] {
            let e = stream_functions(spec, 0).err().unwrap().to_string();
            assert!(e.contains(want), "{spec}: {e}");
        }
        let p = model_file("bad");
        std::fs::write(&p, "error(0.1) D0\n").unwrap();
        let e = stream_functions(&format!("stream:{}", p.display()), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no time coordinate"), "{e}");
    }

    #[test]
    fn hostile_specs_and_models_are_short_errors() {
        // Iterations and windows past their bounds, with the range in the error.
        let p = model_file("hostile");
        let spec = |set: &str| format!("stream:{}:bposd:{set}", p.display());
        for (set, want) in [
            (
                "max_iter=18446744073709551615",
                "max_iter: `18446744073709551615` is not a non-negative integer in 0..=1048576",
            ),
            ("window=0", "window: `0` is not an integer in 1..=1048576"),
            (
                "commit=99999999999",
                "commit: `99999999999` is not an integer in 1..=1048576",
            ),
            (
                "osd_order=5000",
                "osd_order: `5000` is not a non-negative integer in 0..=1024",
            ),
        ] {
            let e = stream_functions(&spec(set), 0).err().unwrap().to_string();
            assert!(e.contains(want), "{set}: {e}");
        }
        // A spec, a setting and a model of a hundred thousand characters: a short error each.
        let long = "q".repeat(100_000);
        for s in [
            format!("stream:{long}.dem"),
            spec(&format!("{long}=1")),
            spec(&format!("window={long}")),
            spec(&long),
        ] {
            let e = stream_functions(&s, 0).err().unwrap().to_string();
            assert!(e.len() < 600, "{} bytes: {}", e.len(), &e[..200]);
        }
        let dir = p.parent().unwrap();
        let line = dir.join("line.dem");
        std::fs::write(&line, "a".repeat(10_000_000)).unwrap();
        let e = stream_functions(&format!("stream:{}", line.display()), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.len() < 600 && e.contains("unknown instruction `aaaa"),
            "{e}"
        );
        // 2,000 rounds of 50 detectors, each round's mechanism reaching into the next: the
        // model is small, but windows of 1,000 rounds committing 1 repeat it 1,000 times.
        let big = dir.join("big.dem");
        let decl: String = (0..50)
            .map(|k| format!(" detector({k}, 0) D{k}\n"))
            .collect();
        let targets: String = (0..100).map(|k| format!(" D{k}")).collect();
        std::fs::write(
            &big,
            format!(
                "repeat 1999 {{\n{decl} error(0.01){targets}\n error(0.01) D0 L0\n \
                 shift_detectors(0, 1) 50\n}}\n{decl}error(0.01) D0 L0\n"
            ),
        )
        .unwrap();
        // Streams multiply the decoders too.
        let e = stream_functions(
            &format!("stream:{}:relay-bp:streams=4096", big.display()),
            0,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("streams = 4096: the streams' decoders hold more than"),
            "{e}"
        );
        // Under the defaults the windows hold too many targets together with commit = 1.
        let e = stream_functions(&format!("stream:{}:window=1000;commit=1", big.display()), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("the windows' decoders hold more than 16777216 targets"),
            "{e}"
        );
        // Its 10 MB of scratch models go with it.
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The status of one call.
    fn st(f: &dyn Responder, r: &StreamRequest<'_>) -> CallStatus {
        call(f, r).0.status
    }

    fn enq(round: u32, bits: &[u8]) -> StreamRequest<'_> {
        StreamRequest::Enqueue { round, bits }
    }

    #[test]
    fn each_shot_answered_final_counts_one_last_round_figure() {
        let p = model_file("figure");
        let spec = format!("stream:{}:matching", p.display());
        let f = stream_functions(&spec, 0).unwrap().remove(0).1;
        let s = as_stream(&*f).unwrap();
        let gc = |reset| StreamRequest::GetCorrections {
            observables: 1,
            reset,
        };
        for _ in 0..3 {
            for r in 0..3 {
                assert_eq!(st(&*f, &enq(r, &[0])), CallStatus::Ok);
            }
            // Asked twice: the second answer decodes nothing and counts nothing.
            assert_eq!(st(&*f, &gc(false)), CallStatus::Ok);
            assert_eq!(st(&*f, &gc(true)), CallStatus::Ok);
        }
        // A shot reset before its last round counts nothing.
        assert_eq!(st(&*f, &enq(0, &[0])), CallStatus::Ok);
        assert_eq!(st(&*f, &StreamRequest::Reset), CallStatus::Ok);
        let l = s.shot_figures();
        assert_eq!(l.count(), 3);
        assert!(l.samples().iter().all(|&ns| ns > 0));
        let line = f.report().unwrap();
        assert!(
            line.contains("last round → corrections ready: median"),
            "{line}"
        );
    }

    #[test]
    fn a_shot_streams_and_every_fault_is_a_status() {
        let p = model_file("shot");
        let spec = format!("stream:{}:bposd:window=2;commit=1;streams=2", p.display());
        let f = stream_functions(&spec, 5).unwrap();
        assert_eq!(f.iter().map(|e| e.0).collect::<Vec<_>>(), vec![5, 6]);
        let (a, b) = (&*f[0].1, &*f[1].1);
        use CallStatus::*;
        let gc = |observables, reset| StreamRequest::GetCorrections { observables, reset };
        // Nothing yet.
        assert_eq!(st(a, &gc(1, false)), NotReady);
        // Round 0: detector 0 (the boundary mechanism, L0).
        assert_eq!(st(a, &enq(0, &[1])), Ok);
        // A repeat, a wrong length, padding, a wrong return size: refused, nothing changes.
        assert_eq!(st(a, &enq(0, &[0])), Busy);
        assert_eq!(st(a, &enq(1, &[0, 0])), BadRequest);
        assert_eq!(st(a, &enq(1, &[4])), BadRequest);
        assert_eq!(st(a, &gc(2, false)), BadRequest);
        assert_eq!(st(a, &StreamRequest::Reset), Ok);
        // The reset made it fresh: the shot again, now to its end.
        assert_eq!(st(a, &enq(0, &[1])), Ok);
        // The other stream is independent.
        assert_eq!(st(b, &enq(0, &[0])), Ok);
        let (h, _) = call(a, &enq(1, &[0]));
        assert_eq!((h.status, h.flags, h.rounds), (Ok, FLAG_DECODED, 2));
        // So far: window 0 committed round 0's boundary flip.
        let (h, obs) = call(a, &gc(1, false));
        assert_eq!((h.status, h.flags, obs.as_slice()), (Ok, 0, &[1u8][..]));
        assert_eq!(st(a, &enq(2, &[0])), Ok);
        let (h, obs) = call(a, &gc(1, true));
        assert_eq!(
            (h.status, h.flags & FLAG_FINAL, h.rounds),
            (Ok, FLAG_FINAL, 3)
        );
        assert_eq!(obs, [1]);
        // Reset by the get_corrections: fresh.
        assert_eq!(st(a, &gc(1, false)), NotReady);
        // A skipped round latches "dropped" until a reset.
        assert_eq!(st(a, &enq(0, &[0])), Ok);
        assert_eq!(st(a, &enq(2, &[0])), SyndromesDropped);
        assert_eq!(st(a, &enq(1, &[0])), SyndromesDropped);
        assert_eq!(st(a, &gc(1, false)), SyndromesDropped);
        assert_eq!(st(a, &StreamRequest::Reset), Ok);
        assert_eq!(st(a, &enq(0, &[0])), Ok);
        // Garbage is a bad request, never a panic.
        let mut out = [0u8; 48];
        let n = a.respond(&[9, 9], &mut out).unwrap();
        assert_eq!(
            backline_wire::stream::parse_reply(&out[..n])
                .unwrap()
                .0
                .status,
            BadRequest
        );
        assert!(a.respond(&[3, 0, 0, 0, 0, 0, 0, 0], &mut out[..4]).is_err());
        let c = as_stream(a).unwrap().counters();
        assert_eq!((c.shots, c.decodes), (1, 1));
        assert!(a.report().unwrap().contains("1 shots finished"));
    }

    #[test]
    fn window_times_give_percentiles_within_three_percent() {
        let mut t = WindowTimes::default();
        assert_eq!(t.quantile_ns(0.5), None);
        for ns in 1..=10_000u64 {
            t.record(ns * 100);
        }
        assert_eq!(t.count(), 10_000);
        for (q, want) in [(0.5, 500_000.0), (0.99, 990_000.0), (0.999, 999_000.0)] {
            let got = t.quantile_ns(q).unwrap() as f64;
            assert!(got <= want && got >= want * 0.97, "{q}: {got}");
        }
        assert_eq!(t.quantile_ns(1.0), Some(1_000_000));
        t.record(3);
        assert_eq!(WindowTimes::floor(WindowTimes::bucket(3)), 3);
        for ns in [31u64, 32, 33, 1000, 1 << 40, u64::MAX] {
            let b = WindowTimes::bucket(ns);
            assert!(b < TIME_BUCKETS && WindowTimes::floor(b) <= ns, "{ns}");
            assert!(ns - WindowTimes::floor(b) <= ns / 32, "{ns}");
        }
    }

    #[test]
    fn matching_streams_serve_shots() {
        let p = model_file("matching");
        let spec = format!("stream:{}:matching:window=2;commit=1", p.display());
        let s = parse_stream_spec(&spec).unwrap();
        assert_eq!(s.decoder, "matching");
        let f = stream_functions(&spec, 0).unwrap();
        let a = &*f[0].1;
        let gc = StreamRequest::GetCorrections {
            observables: 1,
            reset: true,
        };
        // Detector 0 of round 0 (the boundary edge with L0), then two quiet rounds.
        for (r, bits) in [(0u32, [1u8]), (1, [0]), (2, [0])] {
            assert_eq!(st(a, &enq(r, &bits)), CallStatus::Ok);
        }
        let (h, obs) = call(a, &gc);
        assert_eq!(
            (h.status, h.flags & FLAG_FINAL, obs),
            (CallStatus::Ok, FLAG_FINAL, vec![1])
        );
        let e = stream_functions(&format!("stream:{}:matching:max_iter=3", p.display()), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown setting `max_iter`"), "{e}");
        let e = stream_functions(&format!("stream:{}:matching:window=9", p.display()), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("window = 9 is longer than the model's 3 rounds"),
            "{e}"
        );
        // The real-time defaults of BP+OSD.
        let s = parse_stream_spec("stream:x.dem").unwrap();
        assert_eq!(
            s.settings.decoder,
            registry::settings("bposd", Profile::Realtime).unwrap()
        );
        assert_eq!(s.settings.decoder.get("max_iter").as_deref(), Some("5"));
    }

    #[test]
    fn auto_decodes_inline_on_one_window_or_with_matching_and_on_a_worker_otherwise() {
        let p = model_file("auto");
        let mode = |more: &str| {
            let (s, dec) = stream_decoder_of(&format!("stream:{}{more}", p.display())).unwrap();
            (s.decode.unwrap(), dec.windows().count())
        };
        // Unresolved until the windows are known.
        let spec = format!("stream:{}", p.display());
        assert_eq!(parse_stream_spec(&spec).unwrap().decode, None);
        // One window over the shot: its one decode starts with the last round.
        assert_eq!(mode(""), (DecodeMode::Inline, 1));
        assert_eq!(mode(":relay-bp"), (DecodeMode::Inline, 1));
        // Several windows: the next window's rounds are read while one decodes.
        assert_eq!(mode(":window=2;commit=1"), (DecodeMode::Worker, 2));
        assert_eq!(mode(":relay-bp:window=2;commit=1"), (DecodeMode::Worker, 2));
        assert_eq!(mode(":matching:window=2;commit=1"), (DecodeMode::Inline, 2));
        // Asked for, it is kept.
        assert_eq!(mode(":decode=worker"), (DecodeMode::Worker, 1));
        assert_eq!(
            mode(":window=2;commit=1;decode=inline"),
            (DecodeMode::Inline, 2)
        );
        assert_eq!(
            mode(":window=2;commit=1;decode=auto"),
            (DecodeMode::Worker, 2)
        );
    }

    #[test]
    fn a_shot_left_mid_way_is_dropped_after_the_idle_time() {
        let p = model_file("idle");
        let f = stream_functions(&format!("stream:{}:idle_ms=30", p.display()), 0).unwrap();
        let s = as_stream(&*f[0].1).unwrap();
        assert_eq!(s.enqueue(0, &[0]).status, CallStatus::Ok);
        assert_eq!(s.enqueue(0, &[0]).status, CallStatus::Busy);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(s.enqueue(0, &[0]).status, CallStatus::Ok);
        assert_eq!(s.counters().stale, 1);
    }
}
