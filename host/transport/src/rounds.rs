//! The coprocessor's round loop: direct dispatch on the thread that sees a request (SPEC §10).
//! No queue, no hand-off: that thread runs the function and writes the reply. The loop knows
//! a link only as [`RoundIo`], so this module sits below every transport and below the server
//! that runs it.

use std::sync::atomic::{AtomicU64, Ordering};

use backline_probe::{Hop, Recorder};
use backline_responder_api::ResponderTable;
use backline_ring::{Message, WaitPolicy};
use backline_wire::{DecoderId, Geometry, Seq, Status};

use crate::Result;

/// How long a serving side's wait for a request lasts before it starts over (its spin budget
/// counted from the start of the stretch): an idle session or listener otherwise waits
/// without end, asking its stop flag meanwhile.
pub(crate) const IDLE_STRETCH: std::time::Duration = std::time::Duration::from_secs(3600);

/// What one look at a link for the next request found.
#[derive(Debug)]
pub enum Polled<'a> {
    /// The request.
    Ready(Message<'a>),
    /// Nothing yet.
    Pending,
    /// The controller ended the session (or the server stops).
    Ended,
}

/// What the round loop needs from a link (the coprocessor side of one controller's session).
pub trait RoundIo {
    /// The agreed ring shape.
    fn geometry(&self) -> Geometry;
    /// Waits for the request of `seq` (spin, then block, as `wait` says). `Ok(None)` means the
    /// controller ended the session (or the server is stopping).
    fn wait_request(&mut self, seq: Seq, wait: &WaitPolicy) -> Result<Option<Message<'_>>>;
    /// Looks once for the request of `seq`, without waiting (a serving thread that polls
    /// several links).
    fn poll_request(&mut self, seq: Seq) -> Result<Polled<'_>>;
    /// Sends the reply of `seq`.
    fn reply(
        &mut self,
        seq: Seq,
        decoder_id: DecoderId,
        status: Status,
        payload: &[u8],
    ) -> Result<()>;
    /// Hop probes are on for this session: transport-level hops may be stamped.
    fn enable_probes(&mut self, _on: bool) {}
    /// When the transport received the request just returned (udp datagram), for hop probes;
    /// 0 when it has no such hop or probes are off.
    fn received_ns(&self) -> u64 {
        0
    }
}

/// Counters of one controller's session (relaxed atomics: for reporting only). Each is
/// written by the one thread serving the session.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct SessionStats {
    /// Requests answered.
    pub rounds: AtomicU64,
    /// Replies with a status other than ok.
    pub failed: AtomicU64,
}

/// What a session's rounds need besides the link.
pub struct RoundCtx<'a> {
    /// The functions.
    pub table: &'a ResponderTable,
    /// How waits spin and block.
    pub wait: &'a WaitPolicy,
    /// The session's counters.
    pub stats: &'a SessionStats,
    /// Reply scratch, at least the slot's payload capacity.
    pub scratch: &'a mut Vec<u8>,
    /// Hop probes of this side (off: one branch per probe).
    pub probes: &'a mut Recorder,
    /// The next round to serve.
    pub round: u64,
    /// Local copies of the counters, published with plain stores.
    pub counted: (u64, u64),
}

impl<'a> RoundCtx<'a> {
    /// A context for a fresh session.
    pub fn new(
        table: &'a ResponderTable,
        wait: &'a WaitPolicy,
        stats: &'a SessionStats,
        scratch: &'a mut Vec<u8>,
        probes: &'a mut Recorder,
    ) -> RoundCtx<'a> {
        RoundCtx {
            table,
            wait,
            stats,
            scratch,
            probes,
            round: 0,
            counted: (0, 0),
        }
    }
}

/// Runs the function of request `m` (the context's round) into the scratch: `(decoder id,
/// status, reply length)`.
#[inline(always)]
fn dispatch(ctx: &mut RoundCtx<'_>, m: &Message<'_>) -> (DecoderId, Status, usize) {
    let round = ctx.round;
    if ctx.probes.enabled() {
        ctx.probes.stamp(Hop::RequestSeen, round);
        ctx.probes.stamp(Hop::FnStart, round);
    }
    let id = m.header.decoder_id;
    let (status, n) = ctx.table.dispatch(id, m.payload, ctx.scratch);
    if ctx.probes.enabled() {
        ctx.probes.take_marks(round);
        ctx.probes.stamp(Hop::FnEnd, round);
    }
    (id, status, n)
}

/// Counts the round, sends its reply, advances the context.
#[inline(always)]
fn finish<L: RoundIo + ?Sized>(
    link: &mut L,
    ctx: &mut RoundCtx<'_>,
    (id, status, n): (DecoderId, Status, usize),
) -> Result<()> {
    let round = ctx.round;
    if ctx.probes.enabled() {
        let t = link.received_ns();
        if t != 0 {
            ctx.probes.stamp_at(Hop::Received, round, t);
        }
    }
    // Counted before the reply leaves, so a controller that saw the reply sees it.
    ctx.counted.0 += 1;
    ctx.stats.rounds.store(ctx.counted.0, Ordering::Relaxed);
    if status != Status::Ok {
        ctx.counted.1 += 1;
        ctx.stats.failed.store(ctx.counted.1, Ordering::Relaxed);
    }
    link.reply(Seq::of_round(round), id, status, &ctx.scratch[..n])?;
    ctx.probes.stamp(Hop::ReplySent, round);
    ctx.round = round + 1;
    Ok(())
}

/// Serves one controller's rounds until it says bye (or the server stops). Generic, so each
/// link type gets its own copy with its calls inlined: the loop makes no virtual call but the
/// coprocessor function's.
pub fn run<L: RoundIo + ?Sized>(link: &mut L, ctx: &mut RoundCtx<'_>) -> Result<()> {
    link.enable_probes(ctx.probes.enabled());
    loop {
        let seq = Seq::of_round(ctx.round);
        let Some(m) = link.wait_request(seq, ctx.wait)? else {
            return Ok(()); // the controller said bye, or we stop
        };
        let done = dispatch(ctx, &m);
        finish(link, ctx, done)?;
    }
}

/// Serves the next round of `link` if its request is there: `Some(true)` when one was served,
/// `Some(false)` when none is pending yet, `None` when the session ended.
pub fn step<L: RoundIo + ?Sized>(link: &mut L, ctx: &mut RoundCtx<'_>) -> Result<Option<bool>> {
    if ctx.round == 0 && ctx.counted == (0, 0) {
        link.enable_probes(ctx.probes.enabled());
    }
    let seq = Seq::of_round(ctx.round);
    let done = match link.poll_request(seq)? {
        Polled::Ready(m) => dispatch(ctx, &m),
        Polled::Pending => return Ok(Some(false)),
        Polled::Ended => return Ok(None),
    };
    finish(link, ctx, done)?;
    Ok(Some(true))
}
