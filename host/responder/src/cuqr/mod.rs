//! A server of NVIDIA's realtime RPC frames (CUQR/CUQS, [`backline_wire::cuqr`]) over UDP:
//! `enqueue_syndromes`, `get_corrections` and `reset_decoder` answered by the streaming
//! decoders of a [`ResponderTable`] (`stream:` functions, one per decoder id), one datagram
//! per slot, with the semantics of NVIDIA's decoding server (cudaqx `DecodingSession.cpp`;
//! `docs/cuqr.md` compares the two call by call).
//!
//! # Shape
//!
//! The server is a set of *rings* ([`RingSpec`]): each a UDP socket, the decoders it serves
//! and one thread that receives each datagram, answers it and sends the answer to its sender
//! ([`ring`]'s doc: which datagrams are dropped unanswered, which are `bad_request`).
//! NVIDIA's shape is one ring per decoder ([`CuqrServer::start_rings`], `backline serve
//! --protocol cuqr --ring ID=PORT …`); backline's own, one ring for every decoder
//! ([`CuqrServer::start`], `--bind`). Each decoder decodes where its stream spec's `decode`
//! says ([`crate::stream::DecodeMode`], [`worker`]'s doc), or where
//! [`CuqrOptions::decode`] says for all: *inline*, on the ring's thread inside the call that
//! completes a window (NVIDIA's shape since cudaqx PR #769: no hand-off), or on a *worker*,
//! a decode thread fed through a bounded queue (an enqueue is answered `ok` as soon as its
//! bits are queued, and the next datagram is read while a window decodes; a
//! `get_corrections` waits for the decoder to catch up with the calls before it). The ready
//! line `backline serve` prints says which each decoder uses
//! ([`CuqrServer::ready_line_with_decode`]).
//!
//! | call | answer |
//! |---|---|
//! | `enqueue_syndromes` | `ok` once the bits are queued (worker) or taken in and the windows they complete decoded (inline); the counter is carried, never judged, unless [`CuqrOptions::strict_counter`]; a failure is reported at the next `get_corrections` |
//! | `get_corrections` | `internal_error` after a failure, `not_ready` until the shot's last window is decoded, else the corrections; with reset, the corrections are cleared after |
//! | `reset_decoder` | `ok`; the shot and the corrections are dropped |
//!
//! When it stops, every ring reports its frames by status and the frames it dropped, by
//! reason ([`CuqrStats`]), and every decoder its counters and its per-shot *last syndrome →
//! corrections ready* figures ([`latency`]).

pub mod latency;
mod ring;
mod worker;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use backline_probe::Recorder;
use backline_ring::WaitPolicy;
use backline_wire::cuqr::{self, CallStatus, ENQUEUE_FIXED_BYTES, HEADER_BYTES};

use crate::stream::DecodeMode;
use crate::{ResponderTable, StreamFunction};
pub use latency::{LatencySummary, ShotLatencies};
pub use worker::DecoderCounters;

/// The smallest slot: a power of two that holds a header and any call's fixed arguments.
pub const MIN_SLOT_BYTES: usize = 64;
/// The largest slot: the largest power of two one UDP datagram can carry.
pub const MAX_SLOT_BYTES: usize = 32 * 1024;
/// The deepest decode queue (`--num-slots`).
pub const MAX_NUM_SLOTS: usize = 1024;

/// Why a CUQR server could not start or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CuqrError {
    /// A function of the table is not a streaming decoder.
    #[error(
        "decoder id {id} serves `{name}`, not a streaming decoder: the CUQR protocol serves \
         stream: functions only"
    )]
    NotAStream {
        /// Its id.
        id: u32,
        /// Its name.
        name: String,
    },
    /// No function at all.
    #[error("no streaming decoder to serve (give --fn ID=stream:FILE.dem…)")]
    Empty,
    /// A slot size that is not one, or that cannot carry a decoder's frames.
    #[error("{0}")]
    Slot(String),
    /// A queue depth out of range.
    #[error("--num-slots {0}: must be between 1 and {MAX_NUM_SLOTS}")]
    NumSlots(usize),
    /// Rings that do not match the table (a decoder without a ring, a ring without one).
    #[error("{0}")]
    Rings(String),
    /// A socket or a thread.
    #[error("{what}: {source}")]
    Io {
        /// What was done.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// Hop probes could not be allocated.
    #[error(transparent)]
    Probe(#[from] backline_probe::ProbeError),
}

/// Settings of a CUQR server.
#[derive(Debug, Clone, Copy)]
pub struct CuqrOptions {
    /// Bytes of one slot (NVIDIA's `--slot-size`): the largest datagram taken, and the size
    /// of every answer. A power of two in [`MIN_SLOT_BYTES`] ..= [`MAX_SLOT_BYTES`].
    pub slot_bytes: usize,
    /// Entries of each decoder's queue (NVIDIA's `--num-slots`): calls waiting for the decode
    /// thread before the receive thread waits too.
    pub num_slots: usize,
    /// Spin budget of the waits (socket, queue).
    pub wait: WaitPolicy,
    /// Hop probes for this many frames per ring (0: off).
    pub probe_frames: u64,
    /// Judge the counter as a round index (a diagnostic; NVIDIA's server never reads it).
    pub strict_counter: bool,
    /// Longest wait of a `get_corrections` for its decoder to catch up (then `not_ready`).
    pub drain_wait: Duration,
    /// Shots per decoder whose last syndrome → corrections ready figure is kept exactly
    /// ([`latency`]).
    pub latency_shots: usize,
    /// Where every decoder decodes (`None`: each stream spec's `decode`).
    pub decode: Option<DecodeMode>,
}

impl Default for CuqrOptions {
    fn default() -> CuqrOptions {
        CuqrOptions {
            slot_bytes: cuqr::DEFAULT_SLOT_BYTES,
            num_slots: cuqr::DEFAULT_SLOTS,
            wait: WaitPolicy::default(),
            probe_frames: 0,
            strict_counter: false,
            drain_wait: Duration::from_secs(1),
            latency_shots: latency::DEFAULT_LATENCY_SHOTS,
            decode: None,
        }
    }
}

/// Checks a slot size: a power of two in [`MIN_SLOT_BYTES`] ..= [`MAX_SLOT_BYTES`].
pub fn check_slot_bytes(n: usize) -> Result<(), CuqrError> {
    if n.is_power_of_two() && (MIN_SLOT_BYTES..=MAX_SLOT_BYTES).contains(&n) {
        return Ok(());
    }
    Err(CuqrError::Slot(format!(
        "a slot of {n} bytes: the slot size must be a power of two from {MIN_SLOT_BYTES} (a \
         header and a call's fixed arguments) to {MAX_SLOT_BYTES} (one UDP datagram)"
    )))
}

/// Why a datagram was dropped unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum DropReason {
    /// No bytes at all.
    Empty = 0,
    /// Longer than a slot.
    Oversize,
    /// Not the request magic.
    Magic,
    /// An unknown function id.
    Function,
    /// Shorter than its 24-byte header, or than the header and the `arg_len` bytes of
    /// arguments it announces (a truncated frame: never obeyed).
    Short,
}

impl DropReason {
    /// Every reason.
    pub const ALL: [DropReason; 5] = [
        DropReason::Empty,
        DropReason::Oversize,
        DropReason::Magic,
        DropReason::Function,
        DropReason::Short,
    ];

    /// A short lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::Empty => "empty",
            DropReason::Oversize => "oversize",
            DropReason::Magic => "magic",
            DropReason::Function => "function",
            DropReason::Short => "short",
        }
    }
}

/// Counters of a ring: frames answered, by status, and frames dropped, by reason.
#[derive(Debug, Default)]
pub struct CuqrStats {
    /// Frames answered.
    pub frames: AtomicU64,
    /// Frames answered with each status code (0..=6).
    pub by_status: [AtomicU64; 7],
    /// Frames dropped, by [`DropReason`].
    pub dropped: [AtomicU64; 5],
    /// Datagrams that were already waiting when the ring came back from an inline decode
    /// (they arrived while it decoded: the decoder behind the calls).
    pub waited: AtomicU64,
}

fn render(names: impl Iterator<Item = &'static str>, counts: &[AtomicU64]) -> String {
    names
        .zip(counts)
        .filter_map(|(s, n)| {
            let n = n.load(Ordering::Relaxed);
            (n > 0).then(|| format!("{s}={n}"))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl CuqrStats {
    /// `status=count` of the statuses seen, e.g. `ok=120 bad_request=1`.
    pub fn render(&self) -> String {
        render(CallStatus::ALL.iter().map(|s| s.name()), &self.by_status)
    }

    /// `reason=count` of the frames dropped, e.g. `magic=2 oversize=1`.
    pub fn render_dropped(&self) -> String {
        render(DropReason::ALL.iter().map(|r| r.name()), &self.dropped)
    }

    /// Frames dropped in all.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().map(|n| n.load(Ordering::Relaxed)).sum()
    }

    /// Adds `other`'s counts to these.
    pub fn add(&self, other: &CuqrStats) {
        let add = |a: &AtomicU64, b: &AtomicU64| {
            a.fetch_add(b.load(Ordering::Relaxed), Ordering::Relaxed);
        };
        add(&self.frames, &other.frames);
        for (a, b) in self.by_status.iter().zip(&other.by_status) {
            add(a, b);
        }
        for (a, b) in self.dropped.iter().zip(&other.dropped) {
            add(a, b);
        }
        add(&self.waited, &other.waited);
    }
}

/// What a frame answered with hop probes on was: one per row of the ring's hop table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameTag {
    /// Its request id.
    pub request_id: u32,
    /// Its function id.
    pub function_id: u32,
    /// Its decoder id (0 when it had none).
    pub decoder_id: i64,
    /// An enqueue's counter (0 for the other calls).
    pub counter: i64,
    /// The status it was answered with.
    pub status: i32,
}

/// One ring to serve: an address to bind and the decoder ids it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingSpec {
    /// `host:port` (port 0: any free port).
    pub address: String,
    /// Decoder ids, each a `stream:` function of the table.
    pub decoders: Vec<u32>,
}

/// A ring as it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingInfo {
    /// The bound address.
    pub addr: SocketAddr,
    /// Its decoder ids, in the order given.
    pub decoders: Vec<u32>,
    /// Where each of them decodes (same order).
    pub decode: Vec<DecodeMode>,
}

/// What a ring reports when it stops.
#[derive(Debug)]
pub struct RingReport {
    /// The ring.
    pub ring: RingInfo,
    /// Its counters.
    pub stats: Arc<CuqrStats>,
    /// Hop stamps per frame answered (empty when off).
    pub hops: backline_probe::Table,
    /// What each frame of `hops` was.
    pub frames: Vec<FrameTag>,
    /// Its decoders' counters, in decoder id order.
    pub decoders: Vec<(u32, DecoderCounters)>,
    /// Its decoders' per-shot figures, in decoder id order.
    pub latencies: Vec<(u32, ShotLatencies)>,
}

/// What a stopped server reports.
#[derive(Debug)]
pub struct CuqrReport {
    /// Per ring.
    pub rings: Vec<RingReport>,
    /// The decoders' shutdown lines.
    pub streams: Vec<String>,
}

impl CuqrReport {
    /// The counters of every ring added up.
    pub fn totals(&self) -> CuqrStats {
        let t = CuqrStats::default();
        for r in &self.rings {
            t.add(&r.stats);
        }
        t
    }

    /// NVIDIA's shutdown lines, `QEC_DECODING_SERVER_RING decoder=<id> dispatched=<n>` (the
    /// frames its ring answered), one per decoder.
    pub fn nvidia_lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        for r in &self.rings {
            for id in &r.ring.decoders {
                v.push(format!(
                    "QEC_DECODING_SERVER_RING decoder={id} dispatched={}",
                    r.stats.frames.load(Ordering::Relaxed)
                ));
            }
        }
        v
    }
}

/// The streams of `table` by id, checked: every entry a stream whose frames fit the slot.
fn streams_of(
    table: &ResponderTable,
    slot_bytes: usize,
) -> Result<Vec<(u32, &StreamFunction)>, CuqrError> {
    check_slot_bytes(slot_bytes)?;
    let mut streams = Vec::new();
    for (id, r) in table.entries() {
        let Some(s) = crate::as_stream(&**r) else {
            return Err(CuqrError::NotAStream {
                id,
                name: r.name().to_string(),
            });
        };
        let widest = (0..s.rounds())
            .filter_map(|k| s.round_bits(k))
            .max()
            .unwrap_or(0);
        let request = HEADER_BYTES + ENQUEUE_FIXED_BYTES + widest.div_ceil(8);
        let response = HEADER_BYTES + s.num_observables().div_ceil(8);
        if request.max(response) > slot_bytes {
            return Err(CuqrError::Slot(format!(
                "decoder id {id}: a round of {widest} syndrome bits takes a {request}-byte \
                 frame, more than the {slot_bytes}-byte slot; raise the slot size"
            )));
        }
        streams.push((id, s));
    }
    if streams.is_empty() {
        return Err(CuqrError::Empty);
    }
    Ok(streams)
}

/// Checks that `rings` serve every stream exactly once.
fn check_rings(streams: &[(u32, &StreamFunction)], rings: &[RingSpec]) -> Result<(), CuqrError> {
    let bad = |m: String| Err(CuqrError::Rings(m));
    if rings.is_empty() {
        return bad("no ring to serve".into());
    }
    let mut seen: Vec<u32> = Vec::new();
    for r in rings {
        if r.decoders.is_empty() {
            return bad(format!("the ring at {} serves no decoder", r.address));
        }
        for &id in &r.decoders {
            if !streams.iter().any(|s| s.0 == id) {
                return bad(format!(
                    "ring for decoder id {id}: no stream: function at that id (give --fn \
                     {id}=stream:FILE.dem…)"
                ));
            }
            if seen.contains(&id) {
                return bad(format!("decoder id {id} has two rings"));
            }
            seen.push(id);
        }
    }
    if let Some((id, _)) = streams.iter().find(|s| !seen.contains(&s.0)) {
        return bad(format!(
            "decoder id {id} has no ring (give --ring {id}=PORT)"
        ));
    }
    Ok(())
}

/// What a ring's thread returns.
struct RingOutcome {
    hops: backline_probe::Table,
    frames: Vec<FrameTag>,
    streams: Vec<String>,
    decoders: Vec<(u32, DecoderCounters)>,
    latencies: Vec<(u32, ShotLatencies)>,
}

/// A CUQR server: its rings, each on its own thread.
pub struct CuqrServer {
    rings: Vec<RingInfo>,
    stop: Arc<AtomicBool>,
    stats: Vec<Arc<CuqrStats>>,
    threads: Vec<Option<JoinHandle<Result<RingOutcome, CuqrError>>>>,
}

impl CuqrServer {
    /// Backline's shape: one socket at `address` serving every stream of `table`.
    pub fn start(
        address: &str,
        table: &ResponderTable,
        options: CuqrOptions,
    ) -> Result<CuqrServer, CuqrError> {
        let ring = RingSpec {
            address: address.to_string(),
            decoders: table.entries().map(|(id, _)| id).collect(),
        };
        CuqrServer::start_rings(table, &[ring], options)
    }

    /// Serves the streams of `table` on `rings` (NVIDIA's shape: one ring per decoder).
    /// Every check and every bind happens before the first thread starts.
    pub fn start_rings(
        table: &ResponderTable,
        rings: &[RingSpec],
        options: CuqrOptions,
    ) -> Result<CuqrServer, CuqrError> {
        let streams = streams_of(table, options.slot_bytes)?;
        if !(1..=MAX_NUM_SLOTS).contains(&options.num_slots) {
            return Err(CuqrError::NumSlots(options.num_slots));
        }
        check_rings(&streams, rings)?;
        let io = |what: String| move |source| CuqrError::Io { what, source };
        let mut bound = Vec::new();
        for r in rings {
            let sock = UdpSocket::bind(&r.address).map_err(io(format!("binding {}", r.address)))?;
            let addr = sock
                .local_addr()
                .map_err(io("reading the bound address".into()))?;
            sock.set_nonblocking(true)
                .map_err(io("setting the socket non-blocking".into()))?;
            bound.push((sock, addr));
        }
        let worker = worker::WorkerOptions {
            depth: options.num_slots,
            entry_bytes: options.slot_bytes - HEADER_BYTES - ENQUEUE_FIXED_BYTES,
            wait: options.wait,
            drain_wait: options.drain_wait,
            strict_counter: options.strict_counter,
            // Every decoder of the server shares one budget of exact figures.
            latency_shots: latency::latency_shots_per(options.latency_shots, streams.len()),
            decode: options.decode,
        };
        let mut server = CuqrServer {
            rings: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            stats: Vec::new(),
            threads: Vec::new(),
        };
        for (r, (sock, addr)) in rings.iter().zip(bound) {
            let mut decoders = Vec::new();
            for &id in &r.decoders {
                let (_, s) = streams.iter().find(|s| s.0 == id).expect("checked");
                let d = worker::Decoder::start(id, s, worker)
                    .map_err(io(format!("starting the decode thread of decoder {id}")))?;
                decoders.push(d);
            }
            let recorder = if options.probe_frames > 0 {
                Recorder::with_rounds(options.probe_frames)?
            } else {
                Recorder::off()
            };
            let tags = vec![FrameTag::default(); recorder.rows().len()];
            let probes = ring::Probes { recorder, tags };
            let stats = Arc::new(CuqrStats::default());
            let ring = ring::Ring::new(decoders, options.slot_bytes);
            let (st, s) = (server.stop.clone(), stats.clone());
            let decode = r
                .decoders
                .iter()
                .map(|id| ring.mode_of(*id).unwrap_or(DecodeMode::Worker))
                .collect();
            let thread = std::thread::Builder::new()
                .name(format!("cuqr:{}", addr.port()))
                .spawn(move || run_ring(sock, ring, options, &st, &s, probes))
                .map_err(io("starting a ring's thread".into()))?;
            server.rings.push(RingInfo {
                addr,
                decoders: r.decoders.clone(),
                decode,
            });
            server.stats.push(stats);
            server.threads.push(Some(thread));
        }
        Ok(server)
    }

    /// The first ring's address (what a client of a one-ring server passes as its peer).
    pub fn local_addr(&self) -> SocketAddr {
        self.rings[0].addr
    }

    /// The rings, in the order given.
    pub fn rings(&self) -> &[RingInfo] {
        &self.rings
    }

    /// NVIDIA's ready line: `QEC_DECODING_SERVER_READY port=<P0> transport=udp ring<id>=<port>
    /// …` (cudaqx `decoding_server.cpp`: the first ring's port, the UDP provider's endpoint
    /// description, one `ring<id>=<port>` per decoder).
    pub fn ready_line(&self) -> String {
        let mut s = format!(
            "QEC_DECODING_SERVER_READY port={} transport=udp",
            self.local_addr().port()
        );
        for r in &self.rings {
            for id in &r.decoders {
                s.push_str(&format!(" ring{id}={}", r.addr.port()));
            }
        }
        s
    }

    /// [`CuqrServer::ready_line`], then one `decode<id>=inline|worker` per decoder: where its
    /// windows decode (what `backline serve --protocol cuqr` prints; a reader of NVIDIA's
    /// line takes the keys it knows).
    pub fn ready_line_with_decode(&self) -> String {
        let mut s = self.ready_line();
        for r in &self.rings {
            for (id, m) in r.decoders.iter().zip(&r.decode) {
                s.push_str(&format!(" decode{id}={}", m.name()));
            }
        }
        s
    }

    /// Each ring's counters so far.
    pub fn stats(&self) -> &[Arc<CuqrStats>] {
        &self.stats
    }

    /// Whether a ring's thread has ended (only on a socket error).
    pub fn is_finished(&self) -> bool {
        self.threads
            .iter()
            .any(|t| t.as_ref().is_none_or(|t| t.is_finished()))
    }

    /// Stops serving and reports.
    pub fn stop(mut self) -> Result<CuqrReport, CuqrError> {
        self.stop.store(true, Ordering::Relaxed);
        let mut report = CuqrReport {
            rings: Vec::new(),
            streams: Vec::new(),
        };
        let mut failure = None;
        for (i, t) in self.threads.iter_mut().enumerate() {
            let outcome = match t.take().map(|t| t.join()) {
                Some(Ok(Ok(o))) => o,
                Some(Ok(Err(e))) => {
                    failure.get_or_insert(e);
                    continue;
                }
                Some(Err(_)) | None => {
                    failure.get_or_insert(CuqrError::Io {
                        what: "a ring's thread".into(),
                        source: std::io::Error::other("it panicked"),
                    });
                    continue;
                }
            };
            report.streams.extend(outcome.streams);
            report.rings.push(RingReport {
                ring: self.rings[i].clone(),
                stats: self.stats[i].clone(),
                hops: outcome.hops,
                frames: outcome.frames,
                decoders: outcome.decoders,
                latencies: outcome.latencies,
            });
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }
}

impl Drop for CuqrServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.iter_mut().filter_map(Option::take) {
            let _ = t.join();
        }
    }
}

/// A ring's thread: serves until `stop`, then stops its decoders and reports.
fn run_ring(
    sock: UdpSocket,
    mut ring: ring::Ring,
    options: CuqrOptions,
    stop: &AtomicBool,
    stats: &CuqrStats,
    mut probes: ring::Probes,
) -> Result<RingOutcome, CuqrError> {
    let served = ring::serve(sock, &mut ring, &options, stop, stats, &mut probes);
    let mut streams = Vec::new();
    let mut decoders = Vec::new();
    let mut latencies = Vec::new();
    for d in &mut ring.decoders {
        d.shutdown();
        streams.push(d.report());
        decoders.push((d.id, d.counters()));
        latencies.push((d.id, d.latencies()));
    }
    let frames = served? as usize;
    let mut hops = backline_probe::Table::new();
    hops.merge(probes.recorder.rows());
    hops.truncate(frames);
    probes.tags.truncate(frames);
    Ok(RingOutcome {
        hops,
        frames: probes.tags,
        streams,
        decoders,
        latencies,
    })
}

#[cfg(test)]
mod tests;
