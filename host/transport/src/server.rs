//! The coprocessor's serving loop: direct dispatch on the transport's own thread (SPEC §10).
//! No queue, no hand-off: the thread that sees a request runs the function and writes the
//! reply. The responder table is read-only while serving.

use std::sync::atomic::{AtomicU64, Ordering};

use backline_responder::ResponderTable;
use backline_ring::WaitPolicy;
use backline_wire::Seq;

use crate::Result;
use crate::link::{CoprocessorLink, Listener};

/// How long a server serves.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// End after this many controller sessions (None = until stopped).
    pub max_sessions: Option<u64>,
    /// Reply scratch to allocate (and touch) before the first controller arrives, so that
    /// round 0 does not pay for the serving thread's first allocation. 0 = decide later.
    pub scratch_bytes: usize,
}

/// Counters a server keeps while it runs (relaxed atomics: for reporting only).
///
/// Aligned to 128 bytes so that no allocation of the controller's (a memcpy controller runs
/// in the same process) shares its lines: the serving thread writes it every round.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct ServerStats {
    /// Controller sessions accepted.
    pub sessions: AtomicU64,
    /// Requests answered.
    pub rounds: AtomicU64,
    /// Replies with a status other than ok.
    pub failed_rounds: AtomicU64,
}

impl ServerStats {
    /// (sessions, rounds, failed rounds).
    pub fn snapshot(&self) -> (u64, u64, u64) {
        (
            self.sessions.load(Ordering::Relaxed),
            self.rounds.load(Ordering::Relaxed),
            self.failed_rounds.load(Ordering::Relaxed),
        )
    }
}

/// What the rounds of one session need besides the link.
pub struct RoundCtx<'a> {
    /// The functions.
    pub table: &'a ResponderTable,
    /// How waits spin and block.
    pub wait: &'a WaitPolicy,
    /// Counters to publish.
    pub stats: &'a ServerStats,
    /// Reply scratch, at least the slot's payload capacity.
    pub scratch: &'a mut Vec<u8>,
}

/// Serves one controller's rounds until it says bye (or the server stops). Generic, so that
/// each link type gets its own copy with its calls inlined: the hot loop makes no virtual
/// call but the coprocessor function's.
pub fn rounds<L: CoprocessorLink + ?Sized>(link: &mut L, ctx: &mut RoundCtx<'_>) -> Result<()> {
    let mut round = 0u64;
    // Counted locally and published with plain stores: no atomic read-modify-write on the
    // path of a reply.
    let (mut rounds, mut failed) = (
        ctx.stats.rounds.load(Ordering::Relaxed),
        ctx.stats.failed_rounds.load(Ordering::Relaxed),
    );
    loop {
        let seq = Seq::of_round(round);
        let Some(m) = link.wait_request(seq, ctx.wait)? else {
            return Ok(()); // the controller said bye, or we stop
        };
        let id = m.header.decoder_id;
        let (status, n) = ctx.table.dispatch(id, m.payload, ctx.scratch);
        // Counted before the reply leaves, so a controller that saw the reply sees it.
        rounds += 1;
        ctx.stats.rounds.store(rounds, Ordering::Relaxed);
        if status != backline_wire::Status::Ok {
            failed += 1;
            ctx.stats.failed_rounds.store(failed, Ordering::Relaxed);
        }
        link.reply(seq, id, status, &ctx.scratch[..n])?;
        round += 1;
    }
}

/// Serves controllers from `listener` until `stop()` or the session budget is spent.
pub fn serve(
    listener: &mut dyn Listener,
    table: &ResponderTable,
    wait: &WaitPolicy,
    options: &ServeOptions,
    stats: &ServerStats,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<()> {
    // The thread's first allocation (and its allocator arena) happens here, not in round 0.
    let mut scratch = vec![0u8; options.scratch_bytes];
    let mut sessions = 0u64;
    while !stop() && options.max_sessions.is_none_or(|m| sessions < m) {
        let Some(mut link) = listener.accept(wait, stop)? else {
            break;
        };
        sessions += 1;
        stats.sessions.fetch_add(1, Ordering::Relaxed);
        scratch.resize(link.geometry().payload_capacity(), 0u8);
        let mut ctx = RoundCtx {
            table,
            wait,
            stats,
            scratch: &mut scratch,
        };
        link.serve_rounds(&mut ctx)?;
    }
    Ok(())
}
