//! The transport trait: what a session needs from a fabric, per side, once connected.
//!
//! Every transport implements [`ControllerLink`] (controller side of an established channel),
//! and [`Listener`] + [`CoprocessorLink`] (coprocessor side: a listener accepts controllers,
//! each accepted link serves one of them on its own thread, several at once). The memory
//! transports (memcpy, shm) share one implementation, [`RingPair`]; the others reuse
//! [`backline_ring::RingView`] for their local reply and request rings, so no ring logic is
//! written twice. A listener admits a controller only while [`Admission`] has room; a hello
//! beyond that is answered "full".

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use backline_ring::{CachePadded, Message, RingView, WaitError, WaitPolicy};
use backline_wire::{DecoderId, Geometry, Kind, Seq, Status};

use crate::rounds::{IDLE_STRETCH, Polled, RoundCtx, RoundIo};
use crate::{Error, Result};

/// Set once to stop a server: its listener and every session it serves look at it now and
/// then. Cloning shares the flag.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<CachePadded<AtomicBool>>);

impl StopFlag {
    /// A flag not set.
    pub fn new() -> StopFlag {
        StopFlag::default()
    }
    /// Sets it.
    pub fn set(&self) {
        // Relaxed: the readers only need to see the store eventually (every few ms).
        self.0.0.store(true, Ordering::Relaxed);
    }
    /// Whether it is set.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.0.0.load(Ordering::Relaxed)
    }
}

/// How many controller sessions a server holds at once.
#[derive(Debug)]
pub struct Admission {
    max: usize,
    active: AtomicUsize,
}

impl Admission {
    /// Room for `max` sessions at once.
    pub fn new(max: usize) -> Arc<Admission> {
        Arc::new(Admission {
            max: max.max(1),
            active: AtomicUsize::new(0),
        })
    }

    /// A place for one more session, or `None` when all are taken.
    pub fn try_admit(self: &Arc<Self>) -> Option<AdmitGuard> {
        // AcqRel: the count is the only shared state; a failed CAS retries with the latest.
        let mut cur = self.active.load(Ordering::Acquire);
        loop {
            if cur >= self.max {
                return None;
            }
            match self.active.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(AdmitGuard(self.clone())),
                Err(now) => cur = now,
            }
        }
    }

    /// Sessions being served.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// The most sessions at once.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// One admitted session; its place is freed when dropped (the session ended).
#[derive(Debug)]
pub struct AdmitGuard(Arc<Admission>);

impl Drop for AdmitGuard {
    fn drop(&mut self) {
        // Release: pairs with the Acquire of `try_admit`.
        self.0.active.fetch_sub(1, Ordering::Release);
    }
}

/// A controller a listener accepted: its link and its place in the admission.
pub struct Accepted {
    /// The coprocessor side of the session.
    pub link: Box<dyn CoprocessorLink>,
    /// Frees the session's place when dropped.
    pub guard: AdmitGuard,
}

/// The controller side of an established channel.
pub trait ControllerLink: Send {
    /// The agreed ring shape.
    fn geometry(&self) -> Geometry;
    /// Writes the request of `seq` where the peer will read it, without publishing it.
    fn stage(&mut self, seq: Seq, decoder_id: DecoderId, payload: &[u8]) -> Result<()>;
    /// Publishes the staged request of `seq`.
    fn post(&mut self, seq: Seq) -> Result<()>;
    /// The reply of `seq` if it has arrived.
    fn poll_reply(&mut self, seq: Seq) -> Result<Option<Message<'_>>>;
    /// Waits for the reply of `seq` for at most `timeout` (the clock is read only if the reply
    /// is not there at the first look). A timeout is [`Error::PeerGone`] when the link can
    /// tell that the peer has exited, [`Error::Timeout`] otherwise.
    fn wait_reply(&mut self, seq: Seq, wait: &WaitPolicy, timeout: Duration)
    -> Result<Message<'_>>;
    /// Ends the session with the peer (sends "bye"); idempotent.
    fn close(&mut self);
    /// A description of the peer for errors, e.g. `shm:backline`.
    fn peer(&self) -> String;
    /// After a timeout: is the peer still there?
    fn peer_alive(&self) -> bool {
        true
    }
    /// Hop probes are on: a transport with a hop of its own (the udp datagram's arrival)
    /// returns the cell where it stores when it received the latest reply.
    fn enable_probes(&mut self) -> Option<Arc<std::sync::atomic::AtomicU64>> {
        None
    }
}

/// The coprocessor side of one controller's session, served on a thread of its own (or polled
/// by a serving thread with others).
pub trait CoprocessorLink: RoundIo + Send {
    /// Who the controller is, for reports (`udp:10.0.0.2:4100`, `shm:NAME#3`…).
    fn peer(&self) -> String;
    /// Serves rounds until the session ends. The default runs [`crate::rounds::run`]
    /// instantiated for the implementing type, so one virtual call per session replaces
    /// several per round.
    fn serve_rounds(&mut self, ctx: &mut RoundCtx<'_>) -> Result<()> {
        crate::rounds::run(self, ctx)
    }
    /// Serves the next round if its request is there ([`crate::rounds::step`]).
    fn serve_step(&mut self, ctx: &mut RoundCtx<'_>) -> Result<Option<bool>> {
        crate::rounds::step(self, ctx)
    }
}

/// The coprocessor's endpoint: accepts controllers, each into a session of its own, while the
/// [`Admission`] it was made with has room.
pub trait Listener: Send {
    /// Waits for the next controller, answering what is not one (floor pings, hellos beyond
    /// the admission, strays) meanwhile. `Ok(None)` once `stop` is set.
    fn accept(&mut self, wait: &WaitPolicy, stop: &StopFlag) -> Result<Option<Accepted>>;
    /// Where it listens, for messages (e.g. `shm:NAME (/dev/shm/backline-NAME)`).
    fn address(&self) -> String;
    /// What a controller passes as its peer to reach it: a session key (memcpy), a segment
    /// name (shm), `IP:PORT` (udp, rdma).
    fn peer_address(&self) -> String;
    /// Hands the endpoint to a coprocessor that serves rings of its own (a GPU kernel), so
    /// controllers attach to it without a serving thread. `false` when the transport cannot
    /// (only in-process memcpy can).
    fn serve_externally(&mut self, _server: std::sync::Arc<dyn backline_ring::RingServer>) -> bool {
        false
    }
}

/// The views of a session's rings in memory both sides can reach: requests (controller
/// writes) and replies (coprocessor writes). memcpy and shm write the replies over the
/// requests ([`RingView::replies_in_place`]); a ring server of its own (a GPU kernel) may
/// hand out two rings. `keep` holds whatever owns the memory.
pub(crate) struct RingPair {
    pub req: RingView,
    pub rep: RingView,
    pub _keep: Box<dyn Any + Send>,
}

/// The controller side of a [`RingPair`].
///
/// `stage` writes payload and header into the slot; `post` stores its `seq` (and wakes a
/// sleeping coprocessor). The coprocessor polls that slot's line, and the line must come back
/// to us for our stores. Staged and posted back to back, the stores wait in the store buffer
/// for one transfer and leave together; staged early, the payload's transfer happens at stage
/// and the poller may take the line back, so `post` pays one transfer for `seq`, as a post
/// that wrote the whole slot would. (Measured with `bench/examples/probe.rs`, the controller
/// half alone, fast vCPU placement: 1.36–1.46× the floor with a copy set aside at stage and
/// written at post, 1.21–1.31× written at stage.)
pub(crate) struct RingController {
    rings: RingPair,
    peer: String,
    /// Called once by `close` to say bye.
    on_close: Option<Box<dyn FnOnce() + Send>>,
    /// Asked after a timeout.
    alive: Box<dyn Fn() -> bool + Send>,
}

impl RingController {
    pub(crate) fn new(
        rings: RingPair,
        peer: String,
        on_close: Box<dyn FnOnce() + Send>,
        alive: Box<dyn Fn() -> bool + Send>,
    ) -> RingController {
        RingController {
            rings,
            peer,
            on_close: Some(on_close),
            alive,
        }
    }
}

impl ControllerLink for RingController {
    fn geometry(&self) -> Geometry {
        self.rings.req.geometry()
    }

    #[inline]
    fn stage(&mut self, seq: Seq, decoder_id: DecoderId, payload: &[u8]) -> Result<()> {
        // The slot is ours: the session stages only when fewer than `in_flight` ≤ depth rounds
        // are out, so the request that last used it has been answered and collected.
        self.rings
            .req
            .write(seq, Kind::Request, decoder_id, 0, payload)?;
        Ok(())
    }

    #[inline]
    fn post(&mut self, seq: Seq) -> Result<()> {
        self.rings.req.publish_written(seq);
        Ok(())
    }

    #[inline]
    fn poll_reply(&mut self, seq: Seq) -> Result<Option<Message<'_>>> {
        Ok(self.rings.rep.poll(seq))
    }

    #[inline]
    fn wait_reply(
        &mut self,
        seq: Seq,
        wait: &WaitPolicy,
        timeout: Duration,
    ) -> Result<Message<'_>> {
        let (rep, peer, alive) = (&self.rings.rep, &self.peer, &self.alive);
        rep.wait(seq, wait, timeout, None).map_err(|e| {
            if alive() {
                wait_error(e, peer)
            } else {
                Error::PeerGone(peer.clone())
            }
        })
    }

    fn close(&mut self) {
        if let Some(f) = self.on_close.take() {
            f();
        }
    }

    fn peer(&self) -> String {
        self.peer.clone()
    }

    fn peer_alive(&self) -> bool {
        (self.alive)()
    }
}

impl Drop for RingController {
    fn drop(&mut self) {
        self.close();
    }
}

/// The coprocessor side of a [`RingPair`]. `ended` says the controller left or the server
/// stops.
pub(crate) struct RingCoprocessor {
    pub rings: RingPair,
    pub ended: Box<dyn Fn() -> bool + Send>,
    pub peer: String,
    /// Polls since `ended` was last asked (by `poll_request`).
    pub polls: u32,
}

impl CoprocessorLink for RingCoprocessor {
    fn peer(&self) -> String {
        self.peer.clone()
    }
}

impl RoundIo for RingCoprocessor {
    fn geometry(&self) -> Geometry {
        self.rings.req.geometry()
    }

    #[inline]
    fn wait_request(&mut self, seq: Seq, wait: &WaitPolicy) -> Result<Option<Message<'_>>> {
        let ended = &self.ended;
        loop {
            // Idle servers wait in long stretches; `ended` is asked every few ms meanwhile.
            match self
                .rings
                .req
                .wait(seq, wait, IDLE_STRETCH, Some(&|| ended()))
            {
                Ok(m) => return Ok(Some(m)),
                Err(WaitError::Stopped { .. }) => return Ok(None),
                Err(WaitError::Timeout { .. }) => continue,
            }
        }
    }

    #[inline]
    fn poll_request(&mut self, seq: Seq) -> Result<Polled<'_>> {
        self.polls = self.polls.wrapping_add(1);
        if self.polls.is_multiple_of(256) && (self.ended)() {
            return Ok(Polled::Ended);
        }
        Ok(match self.rings.req.poll(seq) {
            Some(m) => Polled::Ready(m),
            None => Polled::Pending,
        })
    }

    #[inline]
    fn reply(
        &mut self,
        seq: Seq,
        decoder_id: DecoderId,
        status: Status,
        payload: &[u8],
    ) -> Result<()> {
        self.rings
            .rep
            .publish(seq, Kind::Reply, decoder_id, status as u16, payload)?;
        Ok(())
    }
}

pub(crate) fn wait_error(e: WaitError, peer: &str) -> Error {
    match e {
        WaitError::Timeout { seq, waited } => Error::Timeout {
            what: format!("the reply with seq {seq} from {peer}"),
            waited,
        },
        WaitError::Stopped { seq } => Error::Stopped { seq },
    }
}

/// The coprocessor's check of a hello against its own ring (every transport): a hello, our
/// geometry, and a number of rounds in flight the ring can hold.
pub(crate) fn check_hello(
    hello: &backline_wire::Handshake,
    geometry: Geometry,
) -> std::result::Result<(), backline_wire::RejectReason> {
    use backline_wire::{HandshakeKind, RejectReason};
    if hello.kind != HandshakeKind::Hello {
        return Err(RejectReason::Malformed);
    }
    if hello.geometry != geometry {
        return Err(RejectReason::Geometry);
    }
    if hello.in_flight == 0 || hello.in_flight > geometry.depth {
        return Err(RejectReason::Malformed);
    }
    Ok(())
}

/// The coprocessor's answer to a hello without transport keys: accept with our geometry, or
/// reject with the reason (and our geometry, so the controller can say what was expected).
pub(crate) fn answer_hello(
    hello: &backline_wire::Handshake,
    geometry: Geometry,
) -> backline_wire::Handshake {
    use backline_wire::{Handshake, HandshakeKind};
    match check_hello(hello, geometry) {
        Ok(()) => Handshake::new(HandshakeKind::Accept, geometry, hello.in_flight),
        Err(reason) => Handshake::reject(reason, geometry),
    }
}

/// The controller's reading of the answer to its hello (every transport): accept with our
/// geometry, or the error the answer stands for.
pub(crate) fn read_answer(
    answer: &backline_wire::Handshake,
    geometry: Geometry,
    peer: &str,
) -> Result<()> {
    use backline_wire::{HandshakeKind, RejectReason};
    match answer.kind {
        HandshakeKind::Accept if answer.geometry == geometry => Ok(()),
        HandshakeKind::Accept => Err(Error::GeometryMismatch {
            local: geometry,
            peer: answer.geometry,
        }),
        HandshakeKind::Reject if answer.reason == Some(RejectReason::Geometry) => {
            Err(Error::GeometryMismatch {
                local: geometry,
                peer: answer.geometry,
            })
        }
        HandshakeKind::Reject => Err(Error::Rejected(
            answer.reason.unwrap_or(RejectReason::Malformed),
        )),
        k => Err(Error::Protocol(format!(
            "{peer} answered our hello with {k:?}"
        ))),
    }
}
