//! The streaming bench: shots sampled from a detector error model's mechanisms
//! ([`backline_decoders::stream::ShotNoise`], seeded; no stim at run time) streamed round by round to a streaming decoder,
//! with `get_corrections` at each shot's end, every reply checked.
//!
//! The decoder is reached through a [`StreamLink`]: [`SessionLink`] — a `stream:` coprocessor
//! function over any backline transport, one operation per message
//! ([`backline_wire::stream`]) — or [`CuqrLink`] — a server of NVIDIA's realtime RPC frames over
//! UDP ([`backline_wire::cuqr`]), backline's (`backline serve --protocol cuqr`) or anyone's,
//! called as NVIDIA's producer calls it (cudaqx `rpc_producer.cpp`): one call at a time, each
//! waiting for its answer; the counter 0 or `(shot << 16) | round` ([`Counter`]); unpadded
//! arguments; a `get_corrections` answered `not_ready` asked again until it is ready. The
//! order of the calls of a shot is the link's ([`StreamLink::order`]): NVIDIA's
//! (`reset_decoder`, the rounds, `get_corrections` without reset) over CUQR, the rounds then
//! `get_corrections` with reset over backline's protocol.
//! [`run`] times each call from just before its request leaves to just after its reply is in:
//! the *enqueue* trace has one row per round (`enqueue_syndromes` round trips, a window's inner
//! decode included when the round completes one), the *corrections* trace one per shot (the
//! final `get_corrections`, which decodes the last window), and per shot the client's *last
//! enqueue → corrections* figure ([`StreamOutcome::last_to_corrections`]: from just before the
//! shot's last `enqueue_syndromes` is sent to the final `get_corrections`' right answer, its
//! `not_ready` polls included — the client's side of NVIDIA's "final syndrome → corrections
//! ready"). A reply is right when its status is
//! `ok` (and, for the final `get_corrections`, the corrections are final and ⌈k/8⌉ bytes); a
//! right answer that differs from the shot's sampled observables is a logical failure.
//! [`whole_history`] decodes the same shots (the same seed) with the whole-history decoder in
//! the same process, for the logical error rate to compare with.
//!
//! A refused call is counted by status, the stream is reset, and the run goes on with the next
//! shot; a transport failure (a timeout) ends the run with what it has.
//!
//! Rounds go back to back (each as soon as the reply before it lands) or, with a cadence
//! ([`StreamRun::round_interval_ns`] = N), open loop: a shot starts when the client is ready to
//! send its round 0 (the shot before it answered), and round `k` is due `k · N` after; it is
//! sent at its due time (the client spins on the monotonic clock, [`Ticks::spin_until`]) or, when
//! the reply before it landed later, at once and counted late ([`judge`], [`Pacing`]): a decoder
//! that falls behind shows its backlog, the final enqueue's lag behind its due time. The first
//! [`StreamRun::warmup_shots`] shots are streamed but left out of the streaming tail
//! ([`StreamOutcome::tail`]) and of the pacing counts. [`run_clocked`] takes the clock, so that
//! a test drives the pacing with a fake one.

use std::net::UdpSocket;
use std::ops::Range;
use std::time::{Duration, Instant};

use backline_decoders::dem::{DemError, DemLimits};
use backline_decoders::dem_decoder::{DemDecoder, DemDecoderSettings, decode_batch};
use backline_decoders::shots::ShotTable;
use backline_decoders::stream::{StreamBuildError, StreamModel};
use backline_transport::{Controller as _, ControllerSession, Session as _};
use backline_wire::cuqr::{self, Call, CallStatus};
use backline_wire::stream::{FLAG_FINAL, StreamRequest};
use backline_wire::{DecoderId, Status};

use crate::progress::{Progress, Show};
use crate::trace::{Clock, RoundStatus, Trace, TraceRow};

/// What one call answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkReply {
    /// The call's status; `None` for a status code outside the protocol's.
    pub status: Option<CallStatus>,
    /// Whether the corrections are final (always `true` where the protocol does not say:
    /// CUQR).
    pub is_final: bool,
    /// Result bytes written.
    pub len: usize,
}

/// Why a call got no answer.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The backline session failed (a timeout, a lost peer).
    #[error(transparent)]
    Session(#[from] backline_transport::Error),
    /// The slot's status was not ok (the coprocessor has no stream at that id, or it failed).
    #[error("the coprocessor answered {}", .0.name())]
    Slot(Status),
    /// A reply that is not one of the protocol's.
    #[error("malformed reply: {0}")]
    Malformed(String),
    /// No reply within the timeout.
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    /// The socket.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The order of a shot's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOrder {
    /// The rounds, then `get_corrections` with reset.
    ResetAfter,
    /// NVIDIA's producer: `reset_decoder`, the rounds, then `get_corrections` without reset.
    ResetFirst,
}

/// The counter of the enqueues of a CUQR client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// 0 on every round (NVIDIA's default).
    Zero,
    /// `(shot << 16) | round` (NVIDIA's producer's convention).
    ShotRound,
}

/// A way to a streaming decoder.
pub trait StreamLink {
    /// A new shot begins (its index from 0), before its first call.
    fn begin_shot(&mut self, _shot: u64) {}
    /// The order of a shot's calls over this link.
    fn order(&self) -> CallOrder {
        CallOrder::ResetAfter
    }
    /// `enqueue_syndromes`: round `round` of the shot, `bits` detection events packed
    /// LSB-first in `packed`.
    fn enqueue(&mut self, round: u32, bits: usize, packed: &[u8]) -> Result<LinkReply, LinkError>;
    /// `get_corrections` of `observables` bits into `out`, resetting the stream afterwards when
    /// `reset`.
    fn get_corrections(
        &mut self,
        observables: usize,
        reset: bool,
        out: &mut [u8],
    ) -> Result<LinkReply, LinkError>;
    /// `reset_decoder`.
    fn reset(&mut self) -> Result<LinkReply, LinkError>;
}

/// A link that carries the stream payloads of [`backline_wire::stream`] as whole messages: a
/// [`StreamLink`] by sending each call as one request.
pub trait PayloadLink {
    /// Sends one request (encoded with [`backline_wire::stream::encode_request`]); returns the
    /// reply's payload (`Err` for a transport failure or a slot status other than ok).
    fn exchange(&mut self, request: &StreamRequest<'_>) -> Result<&[u8], LinkError>;
}

/// `r` encoded into `buf`.
fn encode<'b>(buf: &'b mut [u8], r: &StreamRequest<'_>) -> Result<&'b [u8], LinkError> {
    let n = backline_wire::stream::encode_request(buf, r)
        .map_err(|e| LinkError::Malformed(format!("request: {e}")))?;
    Ok(&buf[..n])
}

/// One stream call over a [`PayloadLink`]: exchange, parse; the result bytes go to `out`.
fn payload_call(
    link: &mut dyn PayloadLink,
    r: &StreamRequest<'_>,
    out: &mut [u8],
) -> Result<LinkReply, LinkError> {
    let reply = link.exchange(r)?;
    let (h, rest) = backline_wire::stream::parse_reply(reply)
        .map_err(|e| LinkError::Malformed(e.to_string()))?;
    let len = rest.len().min(out.len());
    out[..len].copy_from_slice(&rest[..len]);
    Ok(LinkReply {
        status: Some(h.status),
        is_final: h.flags & FLAG_FINAL != 0,
        len: rest.len(),
    })
}

impl<T: PayloadLink> StreamLink for T {
    fn enqueue(&mut self, round: u32, _bits: usize, packed: &[u8]) -> Result<LinkReply, LinkError> {
        let r = StreamRequest::Enqueue {
            round,
            bits: packed,
        };
        payload_call(self, &r, &mut [])
    }

    fn get_corrections(
        &mut self,
        observables: usize,
        reset: bool,
        out: &mut [u8],
    ) -> Result<LinkReply, LinkError> {
        let r = StreamRequest::GetCorrections {
            observables: observables as u32,
            reset,
        };
        payload_call(self, &r, out)
    }

    fn reset(&mut self) -> Result<LinkReply, LinkError> {
        payload_call(self, &StreamRequest::Reset, &mut [])
    }
}

/// A `stream:` function over a backline session, at one decoder id.
pub struct SessionLink<'a> {
    session: &'a mut ControllerSession,
    decoder_id: DecoderId,
    /// The request being sent (a slot's payload capacity).
    req: Vec<u8>,
}

impl<'a> SessionLink<'a> {
    /// The stream at `decoder_id` of the session's coprocessor.
    pub fn new(session: &'a mut ControllerSession, decoder_id: DecoderId) -> SessionLink<'a> {
        let cap = session.config().geometry.payload_capacity();
        SessionLink {
            session,
            decoder_id,
            req: vec![0; cap],
        }
    }
}

impl PayloadLink for SessionLink<'_> {
    fn exchange(&mut self, request: &StreamRequest<'_>) -> Result<&[u8], LinkError> {
        let request = encode(&mut self.req, request)?;
        self.session.stage_payload(request, self.decoder_id)?;
        self.session.post()?;
        let reply = self.session.collect()?;
        if reply.status != Status::Ok {
            return Err(LinkError::Slot(reply.status));
        }
        Ok(reply.payload)
    }
}

/// A client of a CUQR server over UDP that calls it as NVIDIA's producer does: one datagram
/// per call, its unpadded frame; request ids as NVIDIA's (an enqueue's is the low 32 bits of
/// its counter, the others count up from 1); the reply matched by request id (replies to
/// earlier, timed-out calls are skipped, unless their id is the same: with the counter 0 every
/// enqueue's is); a `get_corrections` answered `not_ready` asked again until it is ready or
/// the timeout.
pub struct CuqrLink {
    sock: UdpSocket,
    decoder_id: i64,
    timeout: Duration,
    spin: Duration,
    next_id: u32,
    counter: Counter,
    shot: u64,
    frame: Vec<u8>,
    reply: Vec<u8>,
    /// Replies that answered no call of this wait (late, or not ours).
    pub strays: u64,
    /// `get_corrections` asked again after `not_ready`.
    pub not_ready_polls: u64,
}

impl CuqrLink {
    /// A client of the server at `peer` (`host:port`) for decoder `decoder_id`, with slots of
    /// `slot_bytes`, waiting at most `timeout` for each reply (busy-polling for `spin` first).
    pub fn connect(
        peer: &str,
        decoder_id: i64,
        slot_bytes: usize,
        timeout: Duration,
        spin: Duration,
    ) -> std::io::Result<CuqrLink> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(peer)?
            .next()
            .ok_or_else(|| std::io::Error::other(format!("{peer}: no address")))?;
        let local = if addr.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let sock = UdpSocket::bind(local)?;
        sock.connect(addr)?;
        sock.set_nonblocking(true)?;
        Ok(CuqrLink {
            sock,
            decoder_id,
            timeout,
            spin,
            next_id: 1,
            counter: Counter::Zero,
            shot: 0,
            frame: vec![0; slot_bytes],
            reply: vec![0; slot_bytes + 1],
            strays: 0,
            not_ready_polls: 0,
        })
    }

    /// The counter convention of the enqueues (default [`Counter::Zero`]).
    pub fn with_counter(mut self, counter: Counter) -> CuqrLink {
        self.counter = counter;
        self
    }

    fn call(&mut self, call: &Call<'_>, out: &mut [u8]) -> Result<LinkReply, LinkError> {
        let id = match call {
            Call::EnqueueSyndromes { counter, .. } => *counter as u32,
            _ => {
                let id = self.next_id;
                self.next_id = self.next_id.wrapping_add(1).max(1);
                id
            }
        };
        let n = cuqr::encode_request(&mut self.frame, id, 0, call)
            .map_err(|e| LinkError::Malformed(format!("request: {e}")))?;
        loop {
            match self.sock.send(&self.frame[..n]) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => return Err(e.into()),
            }
        }
        let start = Instant::now();
        let mut blocking = false;
        loop {
            match self.sock.recv(&mut self.reply) {
                Ok(m) => {
                    let (h, result) = cuqr::parse_response(&self.reply[..m])
                        .map_err(|e| LinkError::Malformed(e.to_string()))?;
                    if h.request_id != id {
                        self.strays += 1;
                        continue;
                    }
                    if blocking {
                        self.sock.set_nonblocking(true)?;
                    }
                    let len = result.len().min(out.len());
                    out[..len].copy_from_slice(&result[..len]);
                    return Ok(LinkReply {
                        status: CallStatus::from_code(h.status),
                        is_final: true,
                        len: result.len(),
                    });
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    let waited = start.elapsed();
                    if waited >= self.timeout {
                        if blocking {
                            self.sock.set_nonblocking(true)?;
                        }
                        return Err(LinkError::Timeout(self.timeout));
                    }
                    if !blocking && waited >= self.spin {
                        self.sock.set_nonblocking(false)?;
                        blocking = true;
                    }
                    if blocking {
                        let left = (self.timeout - waited).max(Duration::from_micros(100));
                        self.sock
                            .set_read_timeout(Some(left.min(Duration::from_millis(20))))?;
                    } else {
                        core::hint::spin_loop();
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl StreamLink for CuqrLink {
    fn begin_shot(&mut self, shot: u64) {
        self.shot = shot;
    }

    fn order(&self) -> CallOrder {
        CallOrder::ResetFirst
    }

    fn enqueue(&mut self, round: u32, bits: usize, packed: &[u8]) -> Result<LinkReply, LinkError> {
        let counter = match self.counter {
            Counter::Zero => 0,
            Counter::ShotRound => cuqr::shot_round_counter(self.shot, u64::from(round)),
        };
        self.call(
            &Call::EnqueueSyndromes {
                decoder_id: self.decoder_id,
                counter,
                mapping_id: 0,
                num_bits: bits as i64,
                bits: packed,
            },
            &mut [],
        )
    }

    fn get_corrections(
        &mut self,
        observables: usize,
        reset: bool,
        out: &mut [u8],
    ) -> Result<LinkReply, LinkError> {
        let call = Call::GetCorrections {
            decoder_id: self.decoder_id,
            return_size: observables as i64,
            reset,
        };
        let start = Instant::now();
        loop {
            let r = self.call(&call, out)?;
            if r.status != Some(CallStatus::NotReady) || start.elapsed() >= self.timeout {
                return Ok(r);
            }
            self.not_ready_polls += 1;
        }
    }

    fn reset(&mut self) -> Result<LinkReply, LinkError> {
        self.call(
            &Call::ResetDecoder {
                decoder_id: self.decoder_id,
            },
            &mut [],
        )
    }
}

/// What one streaming run does.
#[derive(Debug, Clone)]
pub struct StreamRun {
    /// Shots, the cold first one included.
    pub shots: u64,
    /// Seed of the sampled shots.
    pub seed: u64,
    /// When to show progress on stderr (runs longer than a second).
    pub progress: Show,
    /// Label of the progress line.
    pub label: String,
    /// Set (by a SIGINT handler) to end the run at the next shot boundary.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The cadence of the rounds, open loop: round `k` of a shot is due `k · round_interval_ns`
    /// after the shot's start ([`judge`]); 0 sends every round as soon as the reply before it
    /// lands (back to back).
    pub round_interval_ns: u64,
    /// The first shots, streamed but left out of the tail ([`StreamOutcome::tail`]) and of the
    /// pacing counts ([`Pacing`]).
    pub warmup_shots: u64,
}

/// The monotonic clock a run reads, in ns from an origin of its own: a trait so that a test
/// can drive the pacing with a clock of its own.
pub trait Ticks {
    /// Now, in ns.
    fn now_ns(&self) -> u64;
    /// Spins (never sleeps) until [`Ticks::now_ns`] reaches `due_ns`; returns that now.
    fn spin_until(&self, due_ns: u64) -> u64 {
        loop {
            let now = self.now_ns();
            if now >= due_ns {
                return now;
            }
            core::hint::spin_loop();
        }
    }
}

/// The process's monotonic clock ([`Instant`]), from when it was made.
pub struct Monotonic(Instant);

impl Monotonic {
    /// A clock whose origin is now.
    pub fn new() -> Monotonic {
        Monotonic(Instant::now())
    }
}

impl Default for Monotonic {
    fn default() -> Monotonic {
        Monotonic::new()
    }
}

impl Ticks for Monotonic {
    fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// When round `round` of a shot that started at `shot_start_ns` is due, at one round per
/// `interval_ns`.
pub fn due_ns(shot_start_ns: u64, round: u64, interval_ns: u64) -> u64 {
    shot_start_ns.saturating_add(round.saturating_mul(interval_ns))
}

/// What to do with a round that is due at `due_ns`, judged when the reply before it landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Not due yet: spin until it is, then send.
    Wait,
    /// Due now: send.
    OnTime,
    /// The reply before it landed after its due time: send at once, `behind_ns` late (the
    /// decoder or the transport fell behind the cadence).
    Late {
        /// How far past its due time the round's turn came.
        behind_ns: u64,
    },
}

/// The pacing decision for a round due at `due_ns` when the reply before it landed at
/// `now_ns` (the shot's start for its round 0).
pub fn judge(due_ns: u64, now_ns: u64) -> Pace {
    match now_ns.cmp(&due_ns) {
        std::cmp::Ordering::Less => Pace::Wait,
        std::cmp::Ordering::Equal => Pace::OnTime,
        std::cmp::Ordering::Greater => Pace::Late {
            behind_ns: now_ns - due_ns,
        },
    }
}

/// How a paced run kept its cadence, over the shots after the warm-up.
#[derive(Debug, Clone, PartialEq)]
pub struct Pacing {
    /// The cadence: one round per this many ns.
    pub round_interval_ns: u64,
    /// Rounds sent.
    pub rounds: u64,
    /// Rounds whose turn came after their due time (the reply before them landed late), sent
    /// at once.
    pub late_rounds: u64,
    /// The most any round was behind its due time when its turn came, ns.
    pub late_max_ns: u64,
    /// Per shot completed (in shot order, as [`StreamOutcome::tail`]): how far behind its due
    /// time the shot's final enqueue was sent, ns (the spin's overshoot when on time).
    pub final_behind_ns: Vec<f64>,
}

impl Pacing {
    /// `ns` in rounds of the cadence.
    pub fn in_rounds(&self, ns: f64) -> f64 {
        ns / self.round_interval_ns.max(1) as f64
    }

    /// The final enqueue's lag behind its due time over the shots after the warm-up
    /// (`final_behind_ns` from `warmup` on).
    pub fn final_behind(&self, warmup: usize) -> &[f64] {
        &self.final_behind_ns[warmup.min(self.final_behind_ns.len())..]
    }
}

/// What a streaming run measured.
#[derive(Debug)]
pub struct StreamOutcome {
    /// One row per `enqueue_syndromes` call.
    pub enqueue: Trace,
    /// One row per shot's final `get_corrections`.
    pub corrections: Trace,
    /// Per shot completed (in shot order), ns from just before its last enqueue was sent to
    /// its final `get_corrections`' right answer.
    pub last_to_corrections: Vec<f64>,
    /// How many of the first [`StreamOutcome::last_to_corrections`] are warm-up shots'
    /// ([`StreamRun::warmup_shots`]).
    pub warmup: usize,
    /// With a cadence ([`StreamRun::round_interval_ns`] > 0), how the run kept it.
    pub pacing: Option<Pacing>,
    /// Shots whose every reply was right.
    pub shots: u64,
    /// Right answers that differ from the sampled observables.
    pub logical_failures: u64,
    /// Calls refused, by status code (`ok` counts replies that were ok but not final or of the
    /// wrong length).
    pub refused: [u64; 7],
    /// Each shot's prediction (⌈k/8⌉ bytes, zero for a shot that did not complete), in shot
    /// order, for [`whole_history`].
    pub predictions: Vec<u8>,
    /// Which shots completed.
    pub completed: Vec<bool>,
    /// What ended the run early.
    pub error: Option<LinkError>,
    /// Whether [`StreamRun::stop`] ended the run before its last shot.
    pub interrupted: bool,
}

impl StreamOutcome {
    /// Calls refused or wrong, in all.
    pub fn mismatches(&self) -> u64 {
        self.refused.iter().sum()
    }

    /// The client's *last enqueue → corrections* of the shots after the warm-up (NVIDIA's
    /// streaming tail), in shot order.
    pub fn tail(&self) -> &[f64] {
        &self.last_to_corrections[self.warmup.min(self.last_to_corrections.len())..]
    }

    /// `status=count` of the refusals.
    pub fn refusals(&self) -> String {
        CallStatus::ALL
            .iter()
            .zip(&self.refused)
            .filter(|(_, n)| **n > 0)
            .map(|(s, n)| {
                if *s == CallStatus::Ok {
                    format!("{n} wrong replies")
                } else {
                    format!("{n} {}", s.name())
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn pack(bits: &[u8], out: &mut [u8]) {
    out.fill(0);
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= b << (i % 8);
    }
}

fn row(round: u64, rtt_ns: f64, status: RoundStatus) -> TraceRow {
    TraceRow {
        round,
        rtt_ns,
        rtt_cycles: None,
        quiet_ns: 0.0,
        status,
        cold: round == 0,
    }
}

/// A shot's first step: `reset_decoder` when the link resets first (NVIDIA's order); the
/// status when it was refused.
fn begin_shot(link: &mut dyn StreamLink, shot: u64) -> Result<Option<CallStatus>, LinkError> {
    link.begin_shot(shot);
    if link.order() != CallOrder::ResetFirst {
        return Ok(None);
    }
    let r = link.reset()?;
    Ok(match r.status {
        Some(CallStatus::Ok) => None,
        s => Some(s.unwrap_or(CallStatus::InternalError)),
    })
}

impl StreamOutcome {
    /// The outcome of a run of `cfg` before its first shot: room for `calls` enqueues and the
    /// predictions of `kb` bytes a shot.
    fn empty(cfg: &StreamRun, calls: usize, kb: usize) -> StreamOutcome {
        let shots = cfg.shots as usize;
        StreamOutcome {
            enqueue: Trace::with_capacity(Clock::HostNs, calls),
            corrections: Trace::with_capacity(Clock::HostNs, shots),
            last_to_corrections: Vec::with_capacity(shots),
            warmup: 0,
            pacing: (cfg.round_interval_ns > 0).then(|| Pacing {
                round_interval_ns: cfg.round_interval_ns,
                rounds: 0,
                late_rounds: 0,
                late_max_ns: 0,
                final_behind_ns: Vec::with_capacity(shots),
            }),
            shots: 0,
            logical_failures: 0,
            refused: [0; 7],
            predictions: vec![0; shots * kb],
            completed: vec![false; shots],
            error: None,
            interrupted: false,
        }
    }
}

/// When a paced round due at `due` goes out, the reply before it having landed at `landed`:
/// at its due time (spinning until then), or at once when late — counted in `pacing` (a
/// measured shot's) with how late.
fn send_at(clock: &dyn Ticks, due: u64, landed: u64, pacing: Option<&mut Pacing>) -> u64 {
    let (t0, late) = match judge(due, landed) {
        Pace::Wait => (clock.spin_until(due), None),
        Pace::OnTime => (clock.now_ns(), None),
        Pace::Late { behind_ns } => (clock.now_ns(), Some(behind_ns)),
    };
    if let Some(p) = pacing {
        p.rounds += 1;
        if let Some(behind_ns) = late {
            p.late_rounds += 1;
            p.late_max_ns = p.late_max_ns.max(behind_ns);
        }
    }
    t0
}

/// Streams `cfg.shots` shots of `dem` through `link`, on the process's monotonic clock.
pub fn run(
    link: &mut dyn StreamLink,
    dem: &StreamModel,
    cfg: &StreamRun,
) -> Result<StreamOutcome, StreamBuildError> {
    run_clocked(link, dem, cfg, &Monotonic::new())
}

/// [`run`] on `clock`. With a cadence ([`StreamRun::round_interval_ns`] = N > 0) a shot starts
/// when the one before it ended (its corrections in, its `reset_decoder` answered in NVIDIA's
/// order), its round 0 is sent then, and round `k` is due `k · N` after: sent at its due
/// time (the client spins until then) or, when the reply before it landed later, at once — a
/// late round ([`judge`], [`Pacing`]).
pub fn run_clocked(
    link: &mut dyn StreamLink,
    dem: &StreamModel,
    cfg: &StreamRun,
    clock: &dyn Ticks,
) -> Result<StreamOutcome, StreamBuildError> {
    let layout: Vec<Range<usize>> = dem.round_layout()?;
    let k = dem.num_observables();
    let kb = k.div_ceil(8);
    let mut noise = dem.noise(cfg.seed);
    let mut events = vec![0u8; dem.num_detectors()];
    let mut truth = vec![0u8; k];
    let mut truth_packed = vec![0u8; kb];
    let mut packed: Vec<Vec<u8>> = layout
        .iter()
        .map(|r| vec![0u8; r.len().div_ceil(8)])
        .collect();
    let mut result = vec![0u8; kb];
    let interval = cfg.round_interval_ns;
    let mut out = StreamOutcome::empty(cfg, cfg.shots as usize * layout.len(), kb);
    let progress = Progress::start(&cfg.label, "shots", cfg.shots, cfg.progress);
    let mut call = 0u64;
    'shots: for shot in 0..cfg.shots {
        // Relaxed: the flag carries no data; the next shot boundary is soon enough.
        if cfg
            .stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        {
            out.interrupted = true;
            break;
        }
        let measured = shot >= cfg.warmup_shots;
        noise.sample(&mut events, &mut truth);
        for (r, p) in layout.iter().zip(packed.iter_mut()) {
            pack(&events[r.clone()], p);
        }
        match begin_shot(link, shot) {
            Ok(None) => {}
            Ok(Some(status)) => {
                out.refused[status as usize] += 1;
                continue;
            }
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
        let mut refused = None;
        let shot_start = clock.now_ns();
        // When the reply before the next round landed (the shot's start for round 0).
        let mut landed = shot_start;
        let mut last_sent = shot_start;
        let mut final_behind = 0u64;
        for (r, p) in packed.iter().enumerate() {
            let t0 = if interval == 0 {
                clock.now_ns()
            } else {
                let due = due_ns(shot_start, r as u64, interval);
                let pacing = out.pacing.as_mut().filter(|_| measured);
                let t0 = send_at(clock, due, landed, pacing);
                final_behind = t0.saturating_sub(due);
                t0
            };
            last_sent = t0;
            let reply = link.enqueue(r as u32, layout[r].len(), p);
            landed = clock.now_ns();
            let rtt = landed.saturating_sub(t0) as f64;
            match reply {
                Ok(LinkReply {
                    status: Some(CallStatus::Ok),
                    ..
                }) => out.enqueue.rows.push(row(call, rtt, RoundStatus::Ok)),
                Ok(rep) => {
                    out.enqueue.rows.push(row(call, rtt, RoundStatus::Mismatch));
                    refused = Some(rep.status.unwrap_or(CallStatus::InternalError));
                }
                Err(e) => {
                    out.enqueue.rows.push(row(call, rtt, RoundStatus::Timeout));
                    out.error = Some(e);
                    break 'shots;
                }
            }
            call += 1;
            if refused.is_some() {
                break;
            }
        }
        if let Some(status) = refused {
            out.refused[status as usize] += 1;
            if let Err(e) = link.reset() {
                out.error = Some(e);
                break;
            }
            continue;
        }
        let t0 = clock.now_ns();
        let reset = link.order() == CallOrder::ResetAfter;
        let reply = link.get_corrections(k, reset, &mut result);
        let t1 = clock.now_ns();
        let rtt = t1.saturating_sub(t0) as f64;
        match reply {
            Ok(rep) if rep.status == Some(CallStatus::Ok) && rep.is_final && rep.len == kb => {
                out.last_to_corrections
                    .push(t1.saturating_sub(last_sent) as f64);
                if !measured {
                    out.warmup += 1;
                }
                if let Some(p) = out.pacing.as_mut() {
                    p.final_behind_ns.push(final_behind as f64);
                }
                out.corrections.rows.push(row(shot, rtt, RoundStatus::Ok));
                out.shots += 1;
                pack(&truth, &mut truth_packed);
                out.logical_failures += (result != truth_packed) as u64;
                out.predictions[shot as usize * kb..(shot as usize + 1) * kb]
                    .copy_from_slice(&result);
                out.completed[shot as usize] = true;
            }
            Ok(rep) => {
                out.corrections
                    .rows
                    .push(row(shot, rtt, RoundStatus::Mismatch));
                let s = match rep.status {
                    Some(CallStatus::Ok) | None => CallStatus::Ok,
                    Some(s) => s,
                };
                out.refused[s as usize] += 1;
                if let Err(e) = link.reset() {
                    out.error = Some(e);
                    break;
                }
            }
            Err(e) => {
                out.corrections
                    .rows
                    .push(row(shot, rtt, RoundStatus::Timeout));
                out.error = Some(e);
                break;
            }
        }
        progress.set(shot + 1);
    }
    progress.finish();
    Ok(out)
}

/// Whether a decoder keeps up with rounds that arrive on a clock: the stream's calls replayed
/// as a queue ([`keep_up`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeepUp {
    /// Rounds streamed.
    pub rounds: u64,
    /// The time the stream spent answering: every enqueue's and final `get_corrections`'s
    /// round trip, summed.
    pub busy_ns: f64,
    /// `rounds / busy_ns`: the round rate it sustains when each round is sent as the last
    /// reply lands.
    pub rounds_per_s: f64,
    /// The cycle the rounds arrive on.
    pub cycle_ns: f64,
    /// How far behind the last round's arrival the last answer lands, in cycles (rounds).
    pub backlog_end_rounds: f64,
    /// The largest such lag over the run, in rounds.
    pub backlog_max_rounds: f64,
}

/// Replays a run's round trips as a queue fed at one round per `cycle_ns`: round `k` of the
/// run arrives at `k · cycle_ns`, each shot's final `get_corrections` with its last round; a
/// call starts when it has arrived and the call before it has been answered, and takes its
/// measured round trip (transport included, so the lag is an upper bound). `None` unless
/// every shot completed (refusals break the call order).
pub fn keep_up(out: &StreamOutcome, rounds_per_shot: usize, cycle_ns: f64) -> Option<KeepUp> {
    let shots = out.corrections.rows.len();
    if out.mismatches() > 0
        || rounds_per_shot == 0
        || out.enqueue.rows.len() != shots * rounds_per_shot
    {
        return None;
    }
    let (mut free, mut busy, mut max_lag) = (0.0f64, 0.0f64, 0.0f64);
    let mut lag = 0.0;
    for s in 0..shots {
        let calls = out.enqueue.rows[s * rounds_per_shot..(s + 1) * rounds_per_shot]
            .iter()
            .map(|r| r.rtt_ns);
        for (r, rtt) in calls
            .chain(std::iter::once(out.corrections.rows[s].rtt_ns))
            .enumerate()
        {
            // The get_corrections arrives with the shot's last round.
            let k = (s * rounds_per_shot + r.min(rounds_per_shot - 1)) as f64;
            let arrival = k * cycle_ns;
            free = free.max(arrival) + rtt;
            busy += rtt;
            lag = (free - arrival) / cycle_ns;
            max_lag = max_lag.max(lag);
        }
    }
    let rounds = (shots * rounds_per_shot) as u64;
    Some(KeepUp {
        rounds,
        busy_ns: busy,
        rounds_per_s: rounds as f64 / (busy * 1e-9),
        cycle_ns,
        backlog_end_rounds: lag,
        backlog_max_rounds: max_lag,
    })
}

/// The whole-history decoder on the same shots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WholeHistory {
    /// Shots decoded (those the stream completed).
    pub shots: u64,
    /// Its logical failures.
    pub logical_failures: u64,
    /// Shots where its prediction and the stream's differ.
    pub differ: u64,
}

/// Why the whole-history decoder did not run.
#[derive(Debug, thiserror::Error)]
pub enum WholeHistoryError {
    /// The model, expanded, is past the limits.
    #[error("the whole history: {0}")]
    Model(#[from] DemError),
    /// The decoder refused the model.
    #[error(transparent)]
    Decoder(#[from] backline_decoders::DecoderError),
}

/// Decodes the shots of `stream` again (the same seed, so the same shots) with the
/// whole-history decoder `decoder`, on every core, and compares.
pub fn whole_history(
    model: &StreamModel,
    decoder: &DemDecoderSettings,
    limits: &DemLimits,
    cfg: &StreamRun,
    stream: &StreamOutcome,
) -> Result<WholeHistory, WholeHistoryError> {
    // A rolled model is expanded for it, within `limits`.
    let dem = model.expanded(limits)?;
    let dec = DemDecoder::new(&dem, decoder)?;
    let mut noise = model.noise(cfg.seed);
    let n = stream.completed.len();
    let mut dets = ShotTable::zeros(n, dem.num_detectors());
    let mut truth = ShotTable::zeros(n, dem.num_observables());
    let mut events = vec![0u8; dem.num_detectors()];
    let mut obs = vec![0u8; dem.num_observables()];
    for s in 0..n {
        noise.sample(&mut events, &mut obs);
        pack(&events, dets.row_mut(s));
        pack(&obs, truth.row_mut(s));
    }
    let batch = decode_batch(&dec, &dets, 0, false)?;
    let kb = dem.num_observables().div_ceil(8);
    let mut w = WholeHistory {
        shots: 0,
        logical_failures: 0,
        differ: 0,
    };
    for s in (0..n).filter(|&s| stream.completed[s]) {
        let p = batch.predictions.row(s);
        w.shots += 1;
        w.logical_failures += (p != truth.row(s)) as u64;
        w.differ += (p != &stream.predictions[s * kb..(s + 1) * kb]) as u64;
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_up_replays_the_calls_as_a_queue() {
        let mut out = StreamOutcome {
            enqueue: Trace::with_capacity(Clock::HostNs, 4),
            corrections: Trace::with_capacity(Clock::HostNs, 2),
            last_to_corrections: Vec::new(),
            warmup: 0,
            pacing: None,
            shots: 2,
            logical_failures: 0,
            refused: [0; 7],
            predictions: vec![0; 2],
            completed: vec![true; 2],
            error: None,
            interrupted: false,
        };
        // Two shots of two rounds: enqueues of 500 ns, get_corrections of 2000 ns, rounds
        // every 1000 ns. Shot 0: rounds at 0 and 1000 end at 500 and 1500; its
        // get_corrections 1500..3500. Shot 1: rounds at 2000 and 3000 start at 3500 and 4000,
        // end 4000 and 4500; get_corrections ends at 6500, 3.5 cycles after 3000.
        for k in 0..4 {
            out.enqueue.rows.push(row(k, 500.0, RoundStatus::Ok));
        }
        for s in 0..2 {
            out.corrections.rows.push(row(s, 2000.0, RoundStatus::Ok));
        }
        let k = keep_up(&out, 2, 1000.0).unwrap();
        assert_eq!(k.rounds, 4);
        assert_eq!(k.busy_ns, 6000.0);
        assert!((k.rounds_per_s - 4.0 / 6e-6).abs() < 1.0);
        assert_eq!(k.backlog_end_rounds, 3.5);
        assert_eq!(k.backlog_max_rounds, 3.5);
        assert!(keep_up(&out, 3, 1000.0).is_none());
    }

    /// A link to an in-process stream, with a fault injected on one call.
    struct Local {
        f: std::sync::Arc<dyn backline_responder::Responder>,
        calls: u64,
        fail_at: u64,
        reply: [u8; 48],
    }

    impl PayloadLink for Local {
        fn exchange(&mut self, request: &StreamRequest<'_>) -> Result<&[u8], LinkError> {
            self.calls += 1;
            let mut buf = [0u8; 64];
            let mut req = encode(&mut buf, request)?.to_vec();
            if self.calls == self.fail_at {
                req[4] ^= 1;
            }
            let m = self.f.respond(&req, &mut self.reply).unwrap();
            Ok(&self.reply[..m])
        }
    }

    #[test]
    fn shots_stream_and_match_the_whole_history() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../decoders/tests/data/dem/surface_d3_r8_p0.01.dem"
        );
        let spec = format!(
            "stream:{path}:bposd:window=4;commit=2;max_iter=30;ms_scaling_factor=0.625;\
             osd_method=osd_cs;osd_order=7"
        );
        let dem = StreamModel::read(
            &std::fs::read_to_string(path).unwrap(),
            path,
            &DemLimits::DEFAULT,
        )
        .unwrap();
        let f = backline_responder::stream_functions(&spec, 0)
            .unwrap()
            .remove(0)
            .1;
        // A round skipped on call 13 (shot 1's round 2 sent as round 3): that shot is refused
        // and skipped.
        let mut link = Local {
            f,
            calls: 0,
            fail_at: 13,
            reply: [0; 48],
        };
        let cfg = StreamRun {
            shots: 200,
            seed: 4,
            progress: Show::Never,
            stop: None,
            label: String::new(),
            round_interval_ns: 0,
            warmup_shots: 0,
        };
        let out = run(&mut link, &dem, &cfg).unwrap();
        assert!(out.error.is_none());
        assert_eq!(out.shots, 199);
        assert_eq!(out.refused[CallStatus::SyndromesDropped as usize], 1);
        assert_eq!(out.refusals(), "1 syndromes_dropped");
        assert_eq!(out.corrections.rows.len(), 199);
        // The client's figure of each shot spans its last enqueue and its get_corrections.
        assert_eq!(out.last_to_corrections.len(), 199);
        let last_enqueues = (0..199).map(|s| {
            // Shot 1 has 3 enqueue rows (refused at its fourth), the others 9.
            let at = if s == 0 { 8 } else { 9 * s + 3 + 8 };
            out.enqueue.rows[at].rtt_ns
        });
        for ((f, c), e) in out
            .last_to_corrections
            .iter()
            .zip(&out.corrections.rows)
            .zip(last_enqueues)
        {
            assert!(*f >= c.rtt_ns + e, "{f} < {} + {e}", c.rtt_ns);
        }
        assert_eq!(out.enqueue.rows.len(), 9 * 199 + 3);
        assert!(!out.completed[1] && out.completed[2]);
        let decoder = backline_responder::stream::parse_stream_spec(&spec)
            .unwrap()
            .settings
            .decoder;
        let w = whole_history(&dem, &decoder, &DemLimits::DEFAULT, &cfg, &out).unwrap();
        assert_eq!(w.shots, 199);
        // A refused shot breaks the replay.
        assert!(keep_up(&out, 9, 1000.0).is_none());
        // p = 0.01 at d = 3: a few failures either way, and the two agree on most shots.
        assert!(w.differ < 15, "{w:?}");
        assert!(
            out.logical_failures.abs_diff(w.logical_failures) <= w.differ,
            "{w:?}"
        );
    }

    #[test]
    fn a_round_is_waited_for_sent_on_time_or_late() {
        assert_eq!(due_ns(100, 3, 1000), 3100);
        assert_eq!(due_ns(100, u64::MAX, 1000), u64::MAX);
        assert_eq!(judge(3100, 2000), Pace::Wait);
        assert_eq!(judge(3100, 3100), Pace::OnTime);
        assert_eq!(judge(3100, 3600), Pace::Late { behind_ns: 500 });
    }

    /// A clock that moves only when told: a fake link advances it by each call's round trip,
    /// and a spin jumps it to the due time.
    struct FakeClock(std::rc::Rc<std::cell::Cell<u64>>);

    impl Ticks for FakeClock {
        fn now_ns(&self) -> u64 {
            self.0.get()
        }
        fn spin_until(&self, due_ns: u64) -> u64 {
            self.0.set(self.0.get().max(due_ns));
            self.0.get()
        }
    }

    /// A link whose calls take scripted times on a [`FakeClock`]: each enqueue 400 ns but
    /// those of `slow` (shot, round, ns), each get_corrections 300 ns; every answer right.
    struct Scripted {
        now: std::rc::Rc<std::cell::Cell<u64>>,
        shot: u64,
        slow: Vec<(u64, u32, u64)>,
    }

    impl StreamLink for Scripted {
        fn begin_shot(&mut self, shot: u64) {
            self.shot = shot;
        }
        fn enqueue(&mut self, round: u32, _: usize, _: &[u8]) -> Result<LinkReply, LinkError> {
            let ns = self
                .slow
                .iter()
                .find(|(s, r, _)| *s == self.shot && *r == round)
                .map_or(400, |x| x.2);
            self.now.set(self.now.get() + ns);
            Ok(LinkReply {
                status: Some(CallStatus::Ok),
                is_final: false,
                len: 0,
            })
        }
        fn get_corrections(
            &mut self,
            observables: usize,
            _: bool,
            out: &mut [u8],
        ) -> Result<LinkReply, LinkError> {
            self.now.set(self.now.get() + 300);
            out.fill(0);
            Ok(LinkReply {
                status: Some(CallStatus::Ok),
                is_final: true,
                len: observables.div_ceil(8),
            })
        }
        fn reset(&mut self) -> Result<LinkReply, LinkError> {
            Ok(LinkReply {
                status: Some(CallStatus::Ok),
                is_final: true,
                len: 0,
            })
        }
    }

    fn scripted_run(interval: u64, slow: Vec<(u64, u32, u64)>) -> StreamOutcome {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../decoders/tests/data/dem/surface_d3_r8_p0.01.dem"
        );
        let dem = StreamModel::read(
            &std::fs::read_to_string(path).unwrap(),
            path,
            &DemLimits::DEFAULT,
        )
        .unwrap();
        let now = std::rc::Rc::new(std::cell::Cell::new(1_000_000));
        let mut link = Scripted {
            now: now.clone(),
            shot: 0,
            slow,
        };
        let cfg = StreamRun {
            shots: 4,
            seed: 4,
            progress: Show::Never,
            stop: None,
            label: String::new(),
            round_interval_ns: interval,
            warmup_shots: 1,
        };
        run_clocked(&mut link, &dem, &cfg, &FakeClock(now)).unwrap()
    }

    #[test]
    fn paced_rounds_wait_for_their_due_time_and_a_slow_reply_shows_as_backlog() {
        // 9 rounds a shot, one per 1000 ns. Shot 0 (the warm-up): round 1 takes 5000 ns, so
        // rounds 2..8 go late (round 2 by 4000 ns), the last by 400 ns: none of it counted.
        // Shot 2: round 3 takes 2500 ns: rounds 4, 5, 6 go late by 1500, 900, 300 ns; round 7
        // waits again. Shot 3: round 7 takes 2500 ns, so its final round is sent 1500 ns
        // (1.5 rounds) behind its due time.
        let out = scripted_run(1000, vec![(0, 1, 5000), (2, 3, 2500), (3, 7, 2500)]);
        assert_eq!(out.shots, 4);
        assert_eq!(out.warmup, 1);
        // The last enqueue (400 ns) and the get_corrections (300 ns), after the warm-up.
        assert_eq!(out.tail(), &[700.0, 700.0, 700.0]);
        let p = out.pacing.as_ref().unwrap();
        assert_eq!(p.round_interval_ns, 1000);
        assert_eq!(p.rounds, 27);
        assert_eq!(p.late_rounds, 4);
        assert_eq!(p.late_max_ns, 1500);
        assert_eq!(p.final_behind_ns, vec![400.0, 0.0, 0.0, 1500.0]);
        assert_eq!(p.final_behind(out.warmup), &[0.0, 0.0, 1500.0]);
        assert_eq!(p.in_rounds(1500.0), 1.5);
        // The enqueue trace holds the round trips alone, not the waits.
        assert!(out.enqueue.rows.iter().all(|r| r.rtt_ns >= 400.0));
        assert_eq!(out.enqueue.rows[1].rtt_ns, 5000.0);
    }

    #[test]
    fn no_cadence_sends_back_to_back() {
        let out = scripted_run(0, vec![(2, 3, 2500)]);
        assert!(out.pacing.is_none());
        assert_eq!(out.shots, 4);
        assert_eq!(out.last_to_corrections, vec![700.0; 4]);
        assert_eq!(out.tail().len(), 3);
    }
}
