//! One decoder of a CUQR server: the receive thread's side of it ([`Decoder`]: the calls,
//! answered at once) and where its windows decode ([`DecodeMode`], the stream spec's
//! `decode`):
//!
//! - **inline**: on the ring's thread, inside the call that completes a window (NVIDIA's shape
//!   since cudaqx PR #769): the decoder's state is the ring thread's own, so there is no
//!   hand-off, no lock and no allocation; the ring reads no datagram while a window decodes
//!   (the next calls wait in the socket's buffer, counted when the ring comes back to them:
//!   [`super::CuqrStats::waited`]). A panic inside the decode fails the shot
//!   (`internal_error` at the next `get_corrections`) and the ring thread lives on.
//! - **worker**: on a decode thread of the decoder's own, fed through a bounded queue, so
//!   that the next datagram is read while a window decodes; each call that has to wait for a
//!   decode pays a hand-off (a wake-up of the other thread).
//!
//! # The worker's queue
//!
//! `depth` entries (the server's `--num-slots`), each an [`Op`], its datagram's arrival time
//! and up to a slot of syndrome bytes, allocated when the decoder starts; the receive thread
//! pushes, the decode thread pops, both under one mutex that also holds what
//! `get_corrections` reads (the shot's state and its corrections). Two counters tell each side
//! how far the other is without the lock: `pushed` (ops pushed, written by the receive thread)
//! and `done` (ops the decode thread has finished, written by it after it has published their
//! effect under the lock). A side that has nothing to do spins on the other's counter for the
//! spin budget ([`backline_ring::SpinPhase`], which also yields a shared CPU), then sleeps on a
//! condition variable; the other side notifies only a sleeper (a flag under the mutex says so,
//! so that no wake-up is lost and none is paid for when nobody sleeps).
//!
//! When the queue is full (the client enqueues faster than the decoder decodes), the receive
//! thread waits for the decode thread to take an entry before it reads the next datagram: the
//! client's next call waits in the socket's buffer. Nothing is dropped, the answers slow down
//! to the decoder's pace (back-pressure, as NVIDIA's ring does when its slots are busy), and
//! each such wait is counted ([`DecoderCounters::backlog`]).
//!
//! # The shot (NVIDIA's semantics, cudaqx `DecodingSession.cpp`)
//!
//! The syndrome bits of a shot are a stream: the decoder cuts them into the model's rounds
//! whatever the sizes of the enqueues that carry them, and decodes each window as its last
//! round arrives and the last window as soon as the shot's last bit is in. The answer of
//! `get_corrections` waits for the ops before it to be done (worker: at most the drain wait),
//! then: `internal_error` if the shot failed (a decode failure, more bits than the shot has
//! room for, or a malformed enqueue, until `reset_decoder`), `not_ready` until the shot's last
//! window is decoded, else the corrections, which the decoder keeps XORing shot after shot
//! until a `get_corrections` with reset or a `reset_decoder` clears them. A shot's first bit
//! after a complete shot starts the next one (a client that never asks for corrections keeps
//! being decoded; its corrections accumulate until the next reset). `reset_decoder` drops the
//! shot and the corrections.
//!
//! Each shot decoded to its end records its *last syndrome → corrections ready* figure
//! ([`super::latency`]).
//!
//! With `strict_counter` the receive thread also judges the counter as backline's server did
//! before it followed NVIDIA's (a diagnostic): the counter must be the round's index in the
//! shot, 0 after a reset, and each enqueue a whole round: `bad_request` for a repeated round
//! or a bit count other than the round's, `busy` for round 0 in the middle of a shot,
//! `syndromes_dropped` (latched until a reset) for a skipped round.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use backline_decoders::stream::StreamDecoder;
use backline_probe::{Hop, mark};
use backline_ring::{MAX_NAP, SpinPhase, WaitPolicy};
use backline_wire::cuqr::CallStatus;

use super::latency::ShotLatencies;
use crate::stream::DecodeMode;
use crate::{Responder, StreamFunction};

/// What the receive thread hands the decoder, in arrival order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Syndrome bits (this many; the entry holds their bytes).
    Bits(u32),
    /// A malformed enqueue was answered `bad_request`: the shot fails until a reset.
    Fail,
    /// `reset_decoder` (or a `get_corrections` with reset after a skipped round, with
    /// `strict_counter`): drop the shot and the corrections.
    Reset,
    /// The decoder was idle past its idle time: drop a shot left mid-way (or failed).
    Stale,
}

/// The shot, as `get_corrections` answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShotState {
    /// Bits are coming in (or none yet): `not_ready`.
    Collecting,
    /// The shot's last window is decoded: the corrections.
    ResultReady,
    /// `internal_error` until a reset.
    Failed,
}

/// A decoder's counters, for the shutdown report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecoderCounters {
    /// Rounds decoded into the stream.
    pub rounds: u64,
    /// Windows whose inner decode ran.
    pub decodes: u64,
    /// Shots whose last window was decoded.
    pub shots: u64,
    /// Shots that failed (a decode failure, too many bits, a malformed enqueue).
    pub failed: u64,
    /// Enqueues ignored because the shot had failed.
    pub ignored: u64,
    /// Shots dropped by the idle time.
    pub stale: u64,
    /// Calls answered with a status other than ok.
    pub refused: u64,
    /// Calls that found the worker's queue full (the decoder behind the rounds: the ring
    /// waited for it before reading on).
    pub backlog: u64,
}

/// What `get_corrections` reads: the shot's state, its corrections, the counters and the
/// figures. The ring thread's own (inline) or under the worker's lock.
struct Book {
    state: ShotState,
    /// The corrections, bit-packed LSB-first, `⌈k/8⌉` bytes.
    corrections: Vec<u8>,
    counters: DecoderCounters,
    latency: ShotLatencies,
}

impl Book {
    fn new(observables: usize, latency_shots: usize) -> Book {
        Book {
            state: ShotState::Collecting,
            corrections: vec![0; observables.div_ceil(8)],
            counters: DecoderCounters::default(),
            latency: ShotLatencies::with_capacity(latency_shots),
        }
    }
}

/// What the two threads of a worker share, under the mutex.
struct Inner {
    ops: Vec<Op>,
    /// When each entry's datagram arrived.
    arrivals: Vec<Instant>,
    /// `ops.len()` entries of `entry_bytes` each.
    data: Vec<u8>,
    /// The oldest entry (valid when `len > 0`); `head < ops.len()`.
    head: usize,
    /// Entries queued, `≤ ops.len()`.
    len: usize,
    book: Book,
    /// The decode thread is (about to be) asleep on `work`.
    worker_asleep: bool,
    /// The receive thread is (about to be) asleep on `progress`.
    receiver_asleep: bool,
    /// The decode thread is to end.
    stop: bool,
}

struct Shared {
    inner: Mutex<Inner>,
    /// The decode thread sleeps on it.
    work: Condvar,
    /// The receive thread sleeps on it.
    progress: Condvar,
    /// Ops pushed. Written by the receive thread after the push (under the lock); the decode
    /// thread's spin reads it (Acquire, pairing with the Release store) and then takes the
    /// lock, which orders the entry's bytes.
    pushed: AtomicU64,
    /// Ops done. Written by the decode thread after it published the op's effect under the
    /// lock; the receive thread's drain reads it (Acquire, pairing with that Release store)
    /// and then takes the lock to read the effect.
    done: AtomicU64,
    entry_bytes: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `Inner` half-written (every update is
        // a few plain stores); take it back.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How a decoder waits and how long a shot may idle.
#[derive(Debug, Clone, Copy)]
pub(super) struct WorkerOptions {
    /// Queue entries.
    pub depth: usize,
    /// Bytes of one entry (the syndrome bytes a slot can carry).
    pub entry_bytes: usize,
    /// Spin budget of both threads' waits.
    pub wait: WaitPolicy,
    /// Longest wait of `get_corrections` for the decode thread (then `not_ready`).
    pub drain_wait: Duration,
    /// Judge the counter (module doc).
    pub strict_counter: bool,
    /// Shots whose figure is kept exactly.
    pub latency_shots: usize,
    /// Where to decode, over the stream's own choice.
    pub decode: Option<DecodeMode>,
}

/// The counter check of `strict_counter`.
#[derive(Debug, Clone, Copy, Default)]
struct Strict {
    /// The round the next enqueue must carry.
    expected: u64,
    /// A round was skipped: refuse everything but a reset.
    dropped: bool,
}

/// Where the windows decode.
enum Engine {
    /// On the ring's thread: the decoder and the book are its own.
    Inline(Box<(Local, Book)>),
    /// On a decode thread.
    Worker {
        shared: Arc<Shared>,
        thread: Option<JoinHandle<()>>,
        /// The decode thread sleeps and has an op to wake up for ([`Decoder::wake`]).
        wake_pending: bool,
    },
}

/// The receive thread's side of one decoder.
pub(super) struct Decoder {
    /// Its decoder id.
    pub id: u32,
    name: String,
    observables: usize,
    round_bits: Vec<u32>,
    engine: Engine,
    /// Ops pushed (the receive thread's own count).
    pushed: u64,
    options: WorkerOptions,
    idle: Duration,
    /// When the last call arrived.
    last: Instant,
    strict: Option<Strict>,
    /// The counter of the last enqueue (carried, never judged without `strict_counter`).
    pub last_counter: Option<i64>,
    /// Whether the last call ran an inline decode.
    decoded: bool,
    #[cfg(test)]
    panic_next: bool,
}

impl Decoder {
    /// The decoder of stream `f` at decoder id `id`, with its decode thread when it decodes
    /// on one.
    pub fn start(id: u32, f: &StreamFunction, options: WorkerOptions) -> std::io::Result<Decoder> {
        let dec = f.fresh_decoder();
        let observables = f.num_observables();
        let mode = options.decode.unwrap_or(f.decode_mode());
        let engine = match mode {
            DecodeMode::Inline => Engine::Inline(Box::new((
                Local::new(dec),
                Book::new(observables, options.latency_shots),
            ))),
            DecodeMode::Worker => {
                let depth = options.depth.max(1);
                let shared = Arc::new(Shared {
                    inner: Mutex::new(Inner {
                        ops: vec![Op::Reset; depth],
                        arrivals: vec![Instant::now(); depth],
                        data: vec![0; depth * options.entry_bytes],
                        head: 0,
                        len: 0,
                        book: Book::new(observables, options.latency_shots),
                        worker_asleep: false,
                        receiver_asleep: false,
                        stop: false,
                    }),
                    work: Condvar::new(),
                    progress: Condvar::new(),
                    pushed: AtomicU64::new(0),
                    done: AtomicU64::new(0),
                    entry_bytes: options.entry_bytes,
                });
                let s = shared.clone();
                let wait = options.wait;
                let thread = std::thread::Builder::new()
                    .name(format!("cuqr-decode:{id}"))
                    .spawn(move || decode_thread(&s, dec, wait))?;
                Engine::Worker {
                    shared,
                    thread: Some(thread),
                    wake_pending: false,
                }
            }
        };
        Ok(Decoder {
            id,
            name: f.name().to_string(),
            observables,
            round_bits: (0..f.rounds())
                .map(|r| f.round_bits(r).unwrap_or(0) as u32)
                .collect(),
            engine,
            pushed: 0,
            options,
            idle: f.idle(),
            last: Instant::now(),
            strict: options.strict_counter.then(Strict::default),
            last_counter: None,
            decoded: false,
            #[cfg(test)]
            panic_next: false,
        })
    }

    /// Where this decoder's windows decode.
    pub fn mode(&self) -> DecodeMode {
        match self.engine {
            Engine::Inline(_) => DecodeMode::Inline,
            Engine::Worker { .. } => DecodeMode::Worker,
        }
    }

    /// Whether a call since the last [`Decoder::take_decoded`] ran an inline decode (the ring
    /// counts the calls that waited behind it); clears the flag.
    pub fn take_decoded(&mut self) -> bool {
        std::mem::take(&mut self.decoded)
    }

    /// The next bits op panics inside the decode (a test of the inline path's recovery).
    #[cfg(test)]
    pub fn panic_next(&mut self) {
        self.panic_next = true;
    }

    /// Wakes the decode thread if it sleeps through an op pushed since: the receive thread
    /// calls it once the answer is sent, so that the wake-up (a system call, and maybe the
    /// woken thread taking this CPU) never delays an answer.
    pub fn wake(&mut self) {
        if let Engine::Worker {
            shared,
            wake_pending,
            ..
        } = &mut self.engine
            && std::mem::take(wake_pending)
        {
            shared.work.notify_one();
        }
    }

    /// The book, wherever it is, for `f`.
    fn with_book<R>(&mut self, f: impl FnOnce(&mut Book) -> R) -> R {
        match &mut self.engine {
            Engine::Inline(b) => f(&mut b.1),
            Engine::Worker { shared, .. } => f(&mut shared.lock().book),
        }
    }

    /// Hands `op` (with `bits` for [`Op::Bits`], its datagram arrived at `arrived`) to the
    /// decoder: carried out now (inline), or pushed, waiting for room when the queue is full
    /// (worker; `false` when the server stopped meanwhile; a sleeping decode thread is woken
    /// later, [`Decoder::wake`]).
    fn push(&mut self, op: Op, bits: &[u8], arrived: Instant, stop: &dyn Fn() -> bool) -> bool {
        self.pushed += 1;
        #[cfg(test)]
        let poison = std::mem::take(&mut self.panic_next) && matches!(op, Op::Bits(_));
        #[cfg(not(test))]
        let poison = false;
        let (shared, wake_pending) = match &mut self.engine {
            Engine::Inline(b) => {
                let (local, book) = &mut **b;
                let e = run_op(local, op, bits, poison);
                self.decoded |= e.decodes > 0 || e.finished;
                publish(book, &e, local.dec.observables(), arrived);
                return true;
            }
            Engine::Worker {
                shared,
                wake_pending,
                ..
            } => (&**shared, wake_pending),
        };
        let sh = shared;
        let mut g = sh.lock();
        if g.len == g.ops.len() {
            g.book.counters.backlog += 1;
            // The decode thread has work: it must not sleep through it while we wait.
            drop(g);
            if std::mem::take(wake_pending) {
                sh.work.notify_one();
            }
            g = sh.lock();
        }
        while g.len == g.ops.len() {
            if stop() {
                self.pushed -= 1;
                return false;
            }
            g.receiver_asleep = true;
            g = sh
                .progress
                .wait_timeout(g, MAX_NAP)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        g.receiver_asleep = false;
        let at = (g.head + g.len) % g.ops.len();
        g.ops[at] = op;
        g.arrivals[at] = arrived;
        let n = bits.len().min(sh.entry_bytes);
        g.data[at * sh.entry_bytes..][..n].copy_from_slice(&bits[..n]);
        g.len += 1;
        // Release: pairs with the decode thread's Acquire spin (module doc).
        sh.pushed.store(self.pushed, Ordering::Release);
        *wake_pending |= g.worker_asleep;
        true
    }

    /// Waits until the decoder has done every op pushed so far, at most the drain wait;
    /// whether it has (inline: at once).
    fn drain(&mut self, stop: &dyn Fn() -> bool) -> bool {
        self.wake();
        let Engine::Worker { shared, .. } = &self.engine else {
            return true;
        };
        let sh = &**shared;
        // Acquire: pairs with the decode thread's Release store of `done`.
        let caught_up = || sh.done.load(Ordering::Acquire) >= self.pushed;
        if caught_up() {
            return true;
        }
        let start = Instant::now();
        let deadline = start + self.options.drain_wait;
        let mut spin = SpinPhase::new(&self.options.wait, start, deadline, true);
        let mut polls = 0u32;
        loop {
            if caught_up() {
                return true;
            }
            core::hint::spin_loop();
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) && !spin.spinning(Instant::now()) {
                break;
            }
        }
        let mut g = sh.lock();
        loop {
            if caught_up() {
                g.receiver_asleep = false;
                return true;
            }
            let now = Instant::now();
            if now >= deadline || stop() {
                g.receiver_asleep = false;
                return false;
            }
            g.receiver_asleep = true;
            g = sh
                .progress
                .wait_timeout(g, (deadline - now).min(MAX_NAP))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Drops a shot left mid-way when the decoder has idled past its idle time.
    fn idle_check(&mut self, now: Instant, stop: &dyn Fn() -> bool) {
        if now.duration_since(self.last) > self.idle && self.pushed > 0 {
            self.push(Op::Stale, &[], now, stop);
            if let Some(s) = &mut self.strict {
                *s = Strict::default();
            }
        }
        self.last = now;
    }

    fn refused(&mut self, status: CallStatus) -> CallStatus {
        if status != CallStatus::Ok {
            self.note_refused();
        }
        status
    }

    /// Counts a call for this decoder answered with a status other than ok.
    pub fn note_refused(&mut self) {
        self.with_book(|b| b.counters.refused += 1);
    }

    /// `enqueue_syndromes`, its arguments parsed, its datagram arrived at `now`: answered
    /// `ok` (or a status of the strict counter check) once the bits are queued (worker) or
    /// taken in, the windows they complete decoded (inline).
    pub fn enqueue(
        &mut self,
        counter: i64,
        num_bits: i64,
        bits: &[u8],
        now: Instant,
        stop: &dyn Fn() -> bool,
    ) -> CallStatus {
        self.last_counter = Some(counter);
        self.idle_check(now, stop);
        if let Some(status) = self.strict_enqueue(counter, num_bits) {
            return self.refused(status);
        }
        if !self.push(Op::Bits(num_bits as u32), bits, now, stop) {
            return self.refused(CallStatus::InternalError);
        }
        mark(Hop::WindowReady);
        CallStatus::Ok
    }
    /// The strict counter check of an enqueue: `None` to accept it.
    fn strict_enqueue(&mut self, counter: i64, num_bits: i64) -> Option<CallStatus> {
        let rounds = self.round_bits.len() as u64;
        let s = self.strict.as_mut()?;
        if s.dropped {
            return Some(CallStatus::SyndromesDropped);
        }
        let Ok(round) = u64::try_from(counter) else {
            return Some(CallStatus::BadRequest);
        };
        if s.expected == rounds {
            // The shot is complete and waits for its corrections.
            return Some(if round == 0 {
                CallStatus::Busy
            } else {
                CallStatus::BadRequest
            });
        }
        if round == s.expected {
            if self.round_bits[round as usize] as i64 != num_bits {
                return Some(CallStatus::BadRequest);
            }
            s.expected += 1;
            return None;
        }
        Some(if round > s.expected {
            s.dropped = true;
            CallStatus::SyndromesDropped
        } else if round == 0 {
            CallStatus::Busy
        } else {
            CallStatus::BadRequest
        })
    }

    /// A malformed enqueue for this decoder was answered `bad_request`: as NVIDIA's server
    /// does, the shot fails (until a reset).
    pub fn fail(&mut self, now: Instant, stop: &dyn Fn() -> bool) {
        self.idle_check(now, stop);
        self.push(Op::Fail, &[], now, stop);
        self.refused(CallStatus::BadRequest);
    }

    /// `get_corrections`: the status and the bytes written to `out` (`⌈k/8⌉` on `ok`).
    pub fn get_corrections(
        &mut self,
        return_size: i64,
        reset: bool,
        out: &mut [u8],
        now: Instant,
        stop: &dyn Fn() -> bool,
    ) -> (CallStatus, usize) {
        self.idle_check(now, stop);
        if return_size <= 0 {
            return (self.refused(CallStatus::BadRequest), 0);
        }
        if let Some(s) = self.strict
            && s.dropped
        {
            if reset {
                self.push(Op::Reset, &[], now, stop);
                self.strict = Some(Strict::default());
            }
            return (self.refused(CallStatus::SyndromesDropped), 0);
        }
        mark(Hop::WindowReady);
        if !self.drain(stop) {
            return (self.refused(CallStatus::NotReady), 0);
        }
        mark(Hop::DecodeDone);
        let bytes = self.observables.div_ceil(8);
        let observables = self.observables as u64;
        let status = self.with_book(|g| match g.state {
            ShotState::Failed => CallStatus::InternalError,
            _ if return_size as u64 != observables => CallStatus::BadRequest,
            ShotState::Collecting => CallStatus::NotReady,
            ShotState::ResultReady if out.len() < bytes => CallStatus::InternalError,
            ShotState::ResultReady => {
                out[..bytes].copy_from_slice(&g.corrections);
                if reset {
                    g.corrections.fill(0);
                    g.state = ShotState::Collecting;
                }
                CallStatus::Ok
            }
        });
        if status == CallStatus::Ok {
            if reset && let Some(s) = &mut self.strict {
                *s = Strict::default();
            }
            return (status, bytes);
        }
        (self.refused(status), 0)
    }

    /// `reset_decoder`: answered `ok` at once; the decoder drops the shot (worker: next).
    pub fn reset(&mut self, now: Instant, stop: &dyn Fn() -> bool) -> CallStatus {
        self.last = now;
        if let Some(s) = &mut self.strict {
            *s = Strict::default();
        }
        if self.push(Op::Reset, &[], now, stop) {
            CallStatus::Ok
        } else {
            self.refused(CallStatus::InternalError)
        }
    }

    /// The counters so far.
    pub fn counters(&mut self) -> DecoderCounters {
        self.with_book(|b| b.counters)
    }

    /// The per-shot figures so far.
    pub fn latencies(&mut self) -> ShotLatencies {
        self.with_book(|b| b.latency.clone())
    }

    /// The shutdown line: `decoder ID (NAME): N rounds, M shots finished, …`.
    pub fn report(&mut self) -> String {
        let c = self.counters();
        let mode = self.mode().name();
        let backlog = match c.backlog {
            0 => String::new(),
            n => format!(", {n} calls waited for the decoder (a full queue: behind the rounds)"),
        };
        let figure = match self.with_book(|b| b.latency.summary()) {
            Some(s) => format!("; last syndrome → corrections ready: {}", s.render()),
            None => String::new(),
        };
        let counter = match self.last_counter {
            Some(c) => format!(", last counter {c:#x}"),
            None => String::new(),
        };
        format!(
            "decoder {} ({}, decode {mode}): {} rounds, {} shots finished, {} windows \
             decoded, {} calls refused, {} shots failed, {} idle shots dropped{backlog}\
             {counter}{figure}",
            self.id, self.name, c.rounds, c.shots, c.decodes, c.refused, c.failed, c.stale
        )
    }

    /// Ends the decode thread (after the ops queued).
    pub fn shutdown(&mut self) {
        if let Engine::Worker { shared, thread, .. } = &mut self.engine {
            shared.lock().stop = true;
            shared.work.notify_all();
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Decoder {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The decoding side's own state: the decoder and the round being assembled.
struct Local {
    dec: StreamDecoder,
    /// The round being assembled, one 0/1 byte per detector (the widest round's length).
    round: Vec<u8>,
    /// Detectors of the round filled so far.
    filled: usize,
    /// Detectors of the shot before the current round.
    before: usize,
    /// Detectors of the shot.
    total: usize,
    failed: bool,
}

/// What an op did, published under the lock.
#[derive(Debug, Default, Clone, Copy)]
struct Effect {
    /// A new shot began (the state goes back to collecting).
    began: bool,
    /// The shot's last window was decoded: XOR its observables into the corrections.
    finished: bool,
    /// The shot failed.
    failed: bool,
    /// The shot and the corrections were dropped.
    cleared: bool,
    rounds: u64,
    decodes: u64,
    ignored: u64,
    stale: u64,
}

impl Local {
    fn new(dec: StreamDecoder) -> Local {
        let widest = (0..dec.rounds())
            .map(|r| dec.round_detectors(r).len())
            .max()
            .unwrap_or(0);
        Local {
            total: dec.num_detectors(),
            dec,
            round: vec![0; widest],
            filled: 0,
            before: 0,
            failed: false,
        }
    }

    fn clear(&mut self) {
        self.dec.reset();
        self.filled = 0;
        self.before = 0;
        self.failed = false;
    }

    /// Takes `n` bits (LSB-first in `bits`) into the shot, round by round.
    fn bits(&mut self, bits: &[u8], n: usize, e: &mut Effect) {
        if self.failed {
            e.ignored += 1;
            return;
        }
        if self.dec.received() == self.dec.rounds() {
            // The first bit after a complete shot starts the next one.
            self.clear();
            e.began = true;
        }
        if n > self.total - self.before - self.filled || n > bits.len() * 8 {
            // More bits than the shot has room for (cudaqx: "Syndrome volume exceeds
            // decoder measurement capacity").
            self.failed = true;
            e.failed = true;
            return;
        }
        let mut i = 0;
        while i < n {
            let r = self.dec.received();
            let want = self.dec.round_detectors(r).len();
            let take = (want - self.filled).min(n - i);
            for (k, d) in self.round[self.filled..self.filled + take]
                .iter_mut()
                .enumerate()
            {
                *d = bits[(i + k) / 8] >> ((i + k) % 8) & 1;
            }
            self.filled += take;
            i += take;
            if self.filled < want {
                break;
            }
            if !self.push_round(r, want, e) {
                return;
            }
        }
    }

    /// Round `r` is complete in `self.round[..n]`: into the decoder, and the shot's last
    /// window decoded after its last round; `false` when the decoder failed.
    fn push_round(&mut self, r: usize, n: usize, e: &mut Effect) -> bool {
        self.filled = 0;
        self.before += n;
        e.rounds += 1;
        let ok = match self.dec.push_round_bytes(r as u32, &self.round[..n]) {
            Ok(ran) => {
                e.decodes += ran as u64;
                if self.dec.received() == self.dec.rounds() {
                    match self.dec.finish() {
                        Ok(ran) => {
                            e.decodes += ran as u64;
                            e.finished = true;
                            true
                        }
                        Err(_) => false,
                    }
                } else {
                    true
                }
            }
            Err(_) => false,
        };
        if !ok {
            self.failed = true;
            e.failed = true;
        }
        ok
    }

    /// Carries out one op.
    fn apply(&mut self, op: Op, bytes: &[u8], e: &mut Effect) {
        match op {
            Op::Bits(n) => self.bits(bytes, n as usize, e),
            Op::Fail => {
                self.failed = true;
                e.failed = true;
            }
            Op::Reset => {
                self.clear();
                e.cleared = true;
            }
            Op::Stale => {
                let partial = self.filled > 0
                    || (self.dec.received() > 0 && self.dec.received() < self.dec.rounds());
                if partial || self.failed {
                    self.clear();
                    e.cleared = true;
                    e.stale += 1;
                }
            }
        }
    }
}

/// Carries out `op` on `local`, a panic inside the decoder failing the shot (the decoder
/// starts clean); with `poison`, a panic is raised where the decoder would run (tests).
fn run_op(local: &mut Local, op: Op, bits: &[u8], poison: bool) -> Effect {
    let mut e = Effect::default();
    let ran = catch_unwind(AssertUnwindSafe(|| {
        if poison {
            panic!("a decoder's panic (injected)");
        }
        local.apply(op, bits, &mut e)
    }));
    if ran.is_err() {
        local.clear();
        local.failed = true;
        e = Effect {
            failed: true,
            ..Effect::default()
        };
    }
    e
}

/// Publishes what an op did, its datagram arrived at `arrived`: a shot finished now records
/// its last syndrome → corrections ready figure.
fn publish(g: &mut Book, e: &Effect, observables: &[u8], arrived: Instant) {
    let c = &mut g.counters;
    c.rounds += e.rounds;
    c.decodes += e.decodes;
    c.ignored += e.ignored;
    c.stale += e.stale;
    if e.cleared {
        g.corrections.fill(0);
        g.state = ShotState::Collecting;
    }
    if e.began && g.state == ShotState::ResultReady {
        g.state = ShotState::Collecting;
    }
    if e.finished {
        g.counters.shots += 1;
        for (i, &o) in observables.iter().enumerate() {
            g.corrections[i / 8] ^= (o & 1) << (i % 8);
        }
        g.state = ShotState::ResultReady;
        let ns = Instant::now().saturating_duration_since(arrived).as_nanos();
        g.latency.record(u64::try_from(ns).unwrap_or(u64::MAX));
    }
    if e.failed {
        g.counters.failed += (g.state != ShotState::Failed) as u64;
        g.state = ShotState::Failed;
    }
}

/// Waits for an op: spins on `pushed` for the spin budget, then sleeps on `work`. `None`
/// when the decoder is to stop.
fn next_op<'a>(
    sh: &'a Shared,
    done: u64,
    wait: &WaitPolicy,
    buf: &mut [u8],
) -> Option<(Op, Instant, MutexGuard<'a, Inner>)> {
    let start = Instant::now();
    let mut spin = SpinPhase::new(wait, start, start + Duration::from_secs(3600), true);
    let mut polls = 0u32;
    // Acquire: pairs with the receive thread's Release store of `pushed`.
    while sh.pushed.load(Ordering::Acquire) == done {
        core::hint::spin_loop();
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(64) && !spin.spinning(Instant::now()) {
            break;
        }
    }
    let mut g = sh.lock();
    while g.len == 0 {
        if g.stop {
            return None;
        }
        g.worker_asleep = true;
        g = sh
            .work
            .wait_timeout(g, MAX_NAP)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    g.worker_asleep = false;
    let at = g.head;
    let op = g.ops[at];
    let arrived = g.arrivals[at];
    buf.copy_from_slice(&g.data[at * sh.entry_bytes..][..sh.entry_bytes]);
    g.head = (at + 1) % g.ops.len();
    g.len -= 1;
    Some((op, arrived, g))
}

/// The decode thread: pops each op, carries it out without the lock, publishes its effect.
fn decode_thread(sh: &Shared, dec: StreamDecoder, wait: WaitPolicy) {
    let mut local = Local::new(dec);
    let mut buf = vec![0u8; sh.entry_bytes];
    let mut done = 0u64;
    while let Some((op, arrived, g)) = next_op(sh, done, &wait, &mut buf) {
        // An entry is free: a receive thread waiting for room may go on.
        let wake = g.receiver_asleep;
        drop(g);
        if wake {
            sh.progress.notify_one();
        }
        let e = run_op(&mut local, op, &buf, false);
        let mut g = sh.lock();
        publish(&mut g.book, &e, local.dec.observables(), arrived);
        done += 1;
        // Release: pairs with the receive thread's Acquire load in `drain` (module doc).
        sh.done.store(done, Ordering::Release);
        let wake = g.receiver_asleep;
        drop(g);
        if wake {
            sh.progress.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tag: &str) -> Arc<dyn crate::Responder> {
        let p = crate::stream::tests::model_file(&format!("worker-{tag}"));
        let spec = format!("stream:{}:window=2;commit=1", p.display());
        crate::stream_functions(&spec, 0).unwrap().remove(0).1
    }

    fn options(depth: usize, strict: bool) -> WorkerOptions {
        WorkerOptions {
            depth,
            entry_bytes: 8,
            wait: WaitPolicy::default(),
            drain_wait: Duration::from_secs(5),
            strict_counter: strict,
            latency_shots: 64,
            decode: Some(DecodeMode::Worker),
        }
    }

    fn never() -> bool {
        false
    }

    #[test]
    fn bits_in_any_chunks_make_the_same_shot() {
        let f = stream("chunks");
        let s = crate::as_stream(&*f).unwrap();
        let mut d = Decoder::start(0, s, options(2, false)).unwrap();
        let now = Instant::now();
        let mut out = [0u8; 1];
        // Round 0 fires detector 0 (the boundary mechanism, L0): one shot of 6 bits as
        // 2 + 2 + 2, then as 1 + 5, then as 6 at once (a queue of 2: the third push waits).
        for chunks in [&[2usize, 2, 2][..], &[1, 5], &[6]] {
            let mut at = 0;
            for &n in chunks {
                let bits = (1u8 >> at) & ((1 << n) - 1);
                assert_eq!(d.enqueue(0, n as i64, &[bits], now, &never), CallStatus::Ok);
                at += n;
            }
            assert_eq!(
                d.get_corrections(1, true, &mut out, now, &never),
                (CallStatus::Ok, 1)
            );
            assert_eq!(out, [1]);
        }
        let c = d.counters();
        assert_eq!((c.shots, c.rounds, c.failed), (3, 9, 0));
        assert!(d.report().contains("3 shots finished"), "{}", d.report());
    }

    #[test]
    fn failures_surface_at_get_corrections_and_a_reset_clears_them() {
        let f = stream("fail");
        let s = crate::as_stream(&*f).unwrap();
        let mut d = Decoder::start(0, s, options(4, false)).unwrap();
        let now = Instant::now();
        let mut out = [0u8; 1];
        // Not ready before the shot's last bit; 7 bits into a shot of 6: ok, then
        // internal_error at get_corrections, which its reset flag does not clear.
        assert_eq!(d.enqueue(0, 2, &[0], now, &never), CallStatus::Ok);
        assert_eq!(
            d.get_corrections(1, false, &mut out, now, &never).0,
            CallStatus::NotReady
        );
        assert_eq!(d.enqueue(0, 7, &[0], now, &never), CallStatus::Ok);
        for reset in [true, false] {
            assert_eq!(
                d.get_corrections(1, reset, &mut out, now, &never).0,
                CallStatus::InternalError
            );
        }
        // A return size of 0 is a bad request before anything else.
        assert_eq!(
            d.get_corrections(0, false, &mut out, now, &never).0,
            CallStatus::BadRequest
        );
        assert_eq!(d.reset(now, &never), CallStatus::Ok);
        assert_eq!(
            d.get_corrections(1, false, &mut out, now, &never).0,
            CallStatus::NotReady
        );
        for _ in 0..3 {
            assert_eq!(d.enqueue(0, 2, &[0], now, &never), CallStatus::Ok);
        }
        assert_eq!(
            d.get_corrections(2, false, &mut out, now, &never).0,
            CallStatus::BadRequest
        );
        assert_eq!(
            d.get_corrections(1, false, &mut out, now, &never),
            (CallStatus::Ok, 1)
        );
        assert_eq!(out, [0]);
        // A malformed enqueue latches too.
        d.fail(now, &never);
        assert_eq!(
            d.get_corrections(1, false, &mut out, now, &never).0,
            CallStatus::InternalError
        );
        assert_eq!(d.counters().failed, 2);
    }

    #[test]
    fn corrections_accumulate_until_a_reset_like_nvidias() {
        let f = stream("accumulate");
        let s = crate::as_stream(&*f).unwrap();
        let mut d = Decoder::start(0, s, options(8, false)).unwrap();
        let now = Instant::now();
        let mut out = [0u8; 1];
        // Two shots that each flip L0, no get_corrections between them: L0 ^ L0 = 0.
        for _ in 0..2 {
            d.enqueue(0, 6, &[1], now, &never);
        }
        assert_eq!(
            d.get_corrections(1, false, &mut out, now, &never),
            (CallStatus::Ok, 1)
        );
        assert_eq!(out, [0]);
        // A third: 1; asked again without reset: the same answer.
        d.enqueue(0, 6, &[1], now, &never);
        for _ in 0..2 {
            assert_eq!(
                d.get_corrections(1, false, &mut out, now, &never),
                (CallStatus::Ok, 1)
            );
            assert_eq!(out, [1]);
        }
        // The next shot's first bits make it not ready again; reset_decoder recovers.
        d.enqueue(0, 2, &[1], now, &never);
        assert_eq!(
            d.get_corrections(1, false, &mut out, now, &never).0,
            CallStatus::NotReady
        );
        d.reset(now, &never);
        d.enqueue(0, 6, &[1], now, &never);
        assert_eq!(
            d.get_corrections(1, true, &mut out, now, &never),
            (CallStatus::Ok, 1)
        );
        assert_eq!(out, [1]);
        assert_eq!(d.counters().shots, 4);
    }

    #[test]
    fn the_strict_counter_keeps_the_old_checks() {
        let f = stream("strict");
        let s = crate::as_stream(&*f).unwrap();
        let mut d = Decoder::start(0, s, options(8, true)).unwrap();
        let now = Instant::now();
        let mut out = [0u8; 1];
        use CallStatus::*;
        assert_eq!(d.enqueue(0, 2, &[1], now, &never), Ok);
        assert_eq!(d.enqueue(0, 2, &[1], now, &never), Busy);
        assert_eq!(d.enqueue(1, 3, &[0], now, &never), BadRequest);
        assert_eq!(d.enqueue(-1, 2, &[0], now, &never), BadRequest);
        assert_eq!(d.enqueue(1, 2, &[0], now, &never), Ok);
        assert_eq!(d.enqueue(1, 2, &[0], now, &never), BadRequest);
        assert_eq!(d.enqueue(2, 2, &[0], now, &never), Ok);
        assert_eq!(d.enqueue(0, 2, &[0], now, &never), Busy);
        assert_eq!(d.get_corrections(1, true, &mut out, now, &never), (Ok, 1));
        assert_eq!(out, [1]);
        // A skipped round latches until a reset.
        assert_eq!(d.enqueue(0, 2, &[0], now, &never), Ok);
        assert_eq!(d.enqueue(2, 2, &[0], now, &never), SyndromesDropped);
        assert_eq!(d.enqueue(1, 2, &[0], now, &never), SyndromesDropped);
        assert_eq!(
            d.get_corrections(1, false, &mut out, now, &never).0,
            SyndromesDropped
        );
        assert_eq!(d.reset(now, &never), Ok);
        for r in 0..3 {
            assert_eq!(d.enqueue(r, 2, &[0], now, &never), Ok);
        }
        assert_eq!(d.get_corrections(1, true, &mut out, now, &never), (Ok, 1));
        assert_eq!(out, [0]);
        assert_eq!(d.counters().refused, 8);
    }

    #[test]
    fn a_shot_left_mid_way_is_dropped_after_the_idle_time() {
        let p = crate::stream::tests::model_file("worker-idle");
        let f = crate::stream_functions(&format!("stream:{}:idle_ms=30", p.display()), 0)
            .unwrap()
            .remove(0)
            .1;
        let s = crate::as_stream(&*f).unwrap();
        let mut d = Decoder::start(0, s, options(8, false)).unwrap();
        let mut out = [0u8; 1];
        let t0 = Instant::now();
        d.enqueue(0, 4, &[0], t0, &never);
        // Later than the idle time: the 4 bits are dropped, and this shot is whole.
        let t1 = t0 + Duration::from_millis(60);
        d.enqueue(0, 6, &[1], t1, &never);
        assert_eq!(
            d.get_corrections(1, true, &mut out, t1, &never),
            (CallStatus::Ok, 1)
        );
        assert_eq!(out, [1]);
        assert_eq!(d.counters().stale, 1);
    }

    #[test]
    fn an_inline_decode_that_panics_fails_the_shot_and_the_next_one_decodes() {
        let f = stream("panic");
        let s = crate::as_stream(&*f).unwrap();
        let mut o = options(2, false);
        o.decode = Some(DecodeMode::Inline);
        let mut d = Decoder::start(0, s, o).unwrap();
        assert_eq!(d.mode(), DecodeMode::Inline);
        let now = Instant::now();
        let mut out = [0u8; 1];
        d.panic_next();
        assert_eq!(d.enqueue(0, 6, &[1], now, &never), CallStatus::Ok);
        // Reported at the next get_corrections, with or without reset, until a reset.
        for reset in [true, false] {
            assert_eq!(
                d.get_corrections(1, reset, &mut out, now, &never).0,
                CallStatus::InternalError
            );
        }
        assert_eq!(d.reset(now, &never), CallStatus::Ok);
        // Before the last round: not ready; then the corrections, decoded inline.
        assert_eq!(d.enqueue(0, 4, &[1], now, &never), CallStatus::Ok);
        assert_eq!(
            d.get_corrections(1, false, &mut out, now, &never).0,
            CallStatus::NotReady
        );
        assert_eq!(d.enqueue(0, 2, &[0], now, &never), CallStatus::Ok);
        assert!(d.take_decoded());
        assert_eq!(
            d.get_corrections(1, true, &mut out, now, &never),
            (CallStatus::Ok, 1)
        );
        assert_eq!(out, [1]);
        let c = d.counters();
        assert_eq!((c.failed, c.shots), (1, 1));
        // The failed shot counts no figure; the decoded one does.
        assert_eq!(d.latencies().count(), 1);
        assert!(d.report().contains("decode inline"), "{}", d.report());
    }
}
