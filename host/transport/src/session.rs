//! The session life cycle of SPEC §4, one state machine per role.
//!
//! ```text
//! create → connect(peer, oob_port) → exchange_keys → establish_channel
//!        → set_message_sizes (controller) | set_coprocessor_fn (coprocessor)
//!        → start → rounds … → stop → (drop = destroy)
//! ```
//!
//! Every call checks the state and returns [`Error::OutOfOrder`] when it comes at the wrong
//! time. A round is `stage_payload` → `post` → `collect` (or `reply_slot` to peek without
//! waiting). Up to `in_flight` rounds may be posted before the oldest is collected; one more is
//! refused with [`Error::Backpressure`].

use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use backline_probe::{Hop, Recorder};
use backline_responder_api::{Responder, ResponderTable};
use backline_wire::{DecoderId, Kind, Seq, Status};

use crate::connect::{Connecting, Link, ListenArgs, transport};
use crate::link::{Admission, ControllerLink, Listener, StopFlag};
use crate::server::{ServeOptions, ServerStats, serve};
use crate::{Error, ReplyProblem, Result, SessionConfig};

/// Where a session is in its life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// After `create`.
    Created,
    /// After `connect`.
    Connected,
    /// After `exchange_keys`.
    KeysExchanged,
    /// After `establish_channel`.
    Established,
    /// After the role's setup call.
    Configured,
    /// After `start`: rounds may flow.
    Started,
    /// After `stop`.
    Stopped,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Created => "created",
            State::Connected => "connected",
            State::KeysExchanged => "keys-exchanged",
            State::Established => "established",
            State::Configured => "configured",
            State::Started => "started",
            State::Stopped => "stopped",
        })
    }
}

/// The two roles of a placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Initiates every round.
    Controller,
    /// Serves each message with a coprocessor function.
    Coprocessor,
}

impl Role {
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Role::Controller => "controller",
            Role::Coprocessor => "coprocessor",
        }
    }
}

/// The error of a life-cycle call made in `state` that needs the state named `expected`.
fn out_of_order(call: &'static str, state: State, expected: &'static str) -> Error {
    Error::OutOfOrder {
        call,
        state,
        expected,
    }
}

/// [`out_of_order`] kept off the round path.
#[cold]
#[inline(never)]
fn out_of_order_cold(call: &'static str, state: State, expected: &'static str) -> Error {
    out_of_order(call, state, expected)
}

/// Life-cycle calls shared by both roles.
pub trait Session: Send {
    /// The role.
    fn role(&self) -> Role;
    /// The session key (unique per role in a registry).
    fn key(&self) -> &str;
    /// The current state.
    fn state(&self) -> State;
    /// The settings given at creation.
    fn config(&self) -> &SessionConfig;
    /// Names the peer: the coprocessor to reach (controller) or the address to serve on
    /// (coprocessor). memcpy: a session key; shm: a segment name; udp: `host[:port]`, with
    /// `oob_port` used when no port is given.
    fn connect(&mut self, peer: &str, oob_port: u16) -> Result<()>;
    /// Agrees ring geometry (and, for RDMA, keys) with the peer.
    fn exchange_keys(&mut self) -> Result<()>;
    /// Sets up the rings or sockets that rounds travel through.
    fn establish_channel(&mut self) -> Result<()>;
    /// Lets rounds flow.
    fn start(&mut self) -> Result<()>;
    /// Ends the session with the peer, promptly. Allowed in any state; idempotent.
    fn stop(&mut self) -> Result<()>;
}

/// A reply, borrowed from the ring until the next call on the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply<'a> {
    /// The round (0-based) this answers.
    pub round: u64,
    /// Its sequence number.
    pub seq: Seq,
    /// The request's decoder id, echoed.
    pub decoder_id: DecoderId,
    /// How the coprocessor fared.
    pub status: Status,
    /// The reply payload (empty unless `status` is ok).
    pub payload: &'a [u8],
}

/// Calls of the controller role.
pub trait Controller: Session {
    /// Role setup: the largest request and reply payloads this session will use; each must
    /// fit a slot.
    fn set_message_sizes(&mut self, request_bytes: usize, reply_bytes: usize) -> Result<()>;
    /// Copies the next round's request into its slot (not yet visible to the peer).
    fn stage_payload(&mut self, payload: &[u8], decoder_id: DecoderId) -> Result<()>;
    /// Publishes the staged request; returns its round number.
    fn post(&mut self) -> Result<u64>;
    /// The oldest outstanding reply if it has arrived, without consuming it.
    fn reply_slot(&mut self) -> Result<Option<Reply<'_>>>;
    /// Waits for the oldest outstanding reply (up to the reply timeout) and consumes it.
    fn collect(&mut self) -> Result<Reply<'_>>;
    /// Rounds posted and not yet collected.
    fn outstanding(&self) -> u32;
}

/// Calls of the coprocessor role.
pub trait Coprocessor: Session {
    /// Role setup: registers `responder` under `decoder_id` (may be called several times).
    fn set_coprocessor_fn(
        &mut self,
        decoder_id: DecoderId,
        responder: Arc<dyn Responder>,
    ) -> Result<()>;
}

/// Runs `$body` with `$l` bound to the concrete link.
macro_rules! on_link {
    ($link:expr, $l:ident => $body:expr) => {
        match $link {
            Link::Ring($l) => $body,
            Link::Other($l) => $body,
        }
    };
}

/// Where a controller is in its life cycle, with what that phase holds: the connection being
/// set up until `establish_channel`, then the link rounds travel over. [`State`] is derived
/// from it, so a phase cannot lack its data.
enum ControllerPhase {
    Created,
    Connected(Box<dyn Connecting>),
    KeysExchanged(Box<dyn Connecting>),
    Established(Link),
    Configured(Link),
    Started(Running),
    Stopped,
}

/// A started controller's link, and what poisoned the session if something did.
struct Running {
    link: Link,
    /// Set by the first lost or malformed round: every later call fails with it.
    failed: Option<String>,
}

impl ControllerPhase {
    fn state(&self) -> State {
        match self {
            ControllerPhase::Created => State::Created,
            ControllerPhase::Connected(_) => State::Connected,
            ControllerPhase::KeysExchanged(_) => State::KeysExchanged,
            ControllerPhase::Established(_) => State::Established,
            ControllerPhase::Configured(_) => State::Configured,
            ControllerPhase::Started(_) => State::Started,
            ControllerPhase::Stopped => State::Stopped,
        }
    }

    /// The link, once there is one.
    fn link_mut(&mut self) -> Option<&mut Link> {
        match self {
            ControllerPhase::Established(link)
            | ControllerPhase::Configured(link)
            | ControllerPhase::Started(Running { link, .. }) => Some(link),
            _ => None,
        }
    }
}

/// The controller role.
pub struct ControllerSession {
    key: String,
    config: SessionConfig,
    phase: ControllerPhase,
    peer: String,
    max_request: usize,
    max_reply: usize,
    posted: u64,
    collected: u64,
    staged: bool,
    /// decoder_id of each outstanding round, by slot, to check the echo.
    ids: Vec<DecoderId>,
    /// Hop probes of the controller's side (off unless enabled).
    probes: Recorder,
    /// Where the link stores when it received the latest reply (a transport-level hop).
    received: Option<Arc<std::sync::atomic::AtomicU64>>,
}

impl fmt::Debug for ControllerSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerSession")
            .field("key", &self.key)
            .field("state", &self.phase.state())
            .field("peer", &self.peer)
            .field("posted", &self.posted)
            .field("collected", &self.collected)
            .finish()
    }
}

impl ControllerSession {
    /// `create` for the controller role.
    pub fn create(key: &str, config: SessionConfig) -> Result<ControllerSession> {
        config.validate()?;
        Ok(ControllerSession {
            key: key.to_string(),
            ids: vec![0; config.geometry.depth as usize],
            config,
            phase: ControllerPhase::Created,
            peer: String::new(),
            max_request: 0,
            max_reply: 0,
            posted: 0,
            collected: 0,
            staged: false,
            probes: Recorder::off(),
            received: None,
        })
    }

    /// Records hop probes (stage, post, the transport's reply arrival, collect) for the first
    /// `rounds` rounds. Allocates now; call before the first round.
    pub fn enable_probes(&mut self, rounds: u64) -> Result<()> {
        self.probes = Recorder::with_rounds(rounds)?;
        if let Some(l) = self.phase.link_mut() {
            self.received = on_link!(l, l => l.enable_probes());
        }
        Ok(())
    }

    /// The hop probes recorded so far (rows by round; empty when off).
    pub fn probes(&self) -> &Recorder {
        &self.probes
    }

    /// All set-up calls in order: create, connect, exchange keys, establish, message sizes
    /// (the slot's capacity both ways), start.
    pub fn open(key: &str, config: SessionConfig, peer: &str, oob_port: u16) -> Result<Self> {
        let cap = config.geometry.payload_capacity();
        let mut s = ControllerSession::create(key, config)?;
        s.connect(peer, oob_port)?;
        s.exchange_keys()?;
        s.establish_channel()?;
        s.set_message_sizes(cap, cap)?;
        s.start()?;
        Ok(s)
    }

    /// Rounds posted so far.
    pub fn posted(&self) -> u64 {
        self.posted
    }

    /// Rounds collected so far.
    pub fn collected(&self) -> u64 {
        self.collected
    }

    /// The peer's description.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// What every call of a session poisoned by `why` returns.
    #[cold]
    #[inline(never)]
    fn poisoned(why: &str) -> Error {
        Error::Failed(why.to_string())
    }

    /// Takes the phase out, leaving `Stopped` until the caller puts the next one in.
    fn take_phase(&mut self) -> ControllerPhase {
        std::mem::replace(&mut self.phase, ControllerPhase::Stopped)
    }

    /// Puts back a phase that `call` cannot start from, and says so.
    fn refuse(
        &mut self,
        phase: ControllerPhase,
        call: &'static str,
        expected: &'static str,
    ) -> Error {
        let state = phase.state();
        self.phase = phase;
        out_of_order(call, state, expected)
    }

    /// The running session's link and failure note. On the round path: one compare and one
    /// test when all is well; the error is built out of line. (A function of the phase alone,
    /// so that the caller keeps the other fields.)
    #[inline(always)]
    fn running<'a>(phase: &'a mut ControllerPhase, call: &'static str) -> Result<&'a mut Running> {
        match phase {
            ControllerPhase::Started(run) => match run.failed {
                None => Ok(run),
                Some(ref why) => Err(Self::poisoned(why)),
            },
            other => Err(out_of_order_cold(call, other.state(), "started")),
        }
    }

    /// The reply of a message, checked: on the round path, three compares when it is well
    /// formed; the error is built out of line.
    #[inline(always)]
    fn make_reply<'a>(
        round: u64,
        seq: Seq,
        want_id: DecoderId,
        m: backline_ring::Message<'a>,
    ) -> Result<Reply<'a>> {
        match Status::from_u16(m.header.status) {
            Some(status)
                if m.header.kind == Kind::Reply as u8 && m.header.decoder_id == want_id =>
            {
                Ok(Reply {
                    round,
                    seq,
                    decoder_id: m.header.decoder_id,
                    status,
                    payload: m.payload,
                })
            }
            _ => Err(Self::bad_reply(round, want_id, &m)),
        }
    }

    /// What is wrong with a reply that `make_reply` refused.
    #[cold]
    #[inline(never)]
    fn bad_reply(round: u64, want_id: DecoderId, m: &backline_ring::Message<'_>) -> Error {
        let problem = if m.header.kind != Kind::Reply as u8 {
            ReplyProblem::NotAReply {
                kind: m.header.kind,
            }
        } else if m.header.decoder_id != want_id {
            ReplyProblem::DecoderId {
                echoed: m.header.decoder_id,
                requested: want_id,
            }
        } else {
            ReplyProblem::UnknownStatus(m.header.status)
        };
        Error::BadReply { round, problem }
    }

    /// A reply longer than the reply size set with `set_message_sizes`.
    #[cold]
    #[inline(never)]
    fn too_long(round: u64, len: usize, max: usize) -> Error {
        Error::BadReply {
            round,
            problem: ReplyProblem::TooLong { len, max },
        }
    }
}

impl Session for ControllerSession {
    fn role(&self) -> Role {
        Role::Controller
    }
    fn key(&self) -> &str {
        &self.key
    }
    fn state(&self) -> State {
        self.phase.state()
    }
    fn config(&self) -> &SessionConfig {
        &self.config
    }

    fn connect(&mut self, peer: &str, oob_port: u16) -> Result<()> {
        let ControllerPhase::Created = self.phase else {
            return Err(out_of_order("connect", self.phase.state(), "created"));
        };
        let (desc, pending) =
            (transport(self.config.transport).connect)(&self.key, peer, oob_port, &self.config)?;
        self.peer = desc;
        self.phase = ControllerPhase::Connected(pending);
        Ok(())
    }

    fn exchange_keys(&mut self) -> Result<()> {
        let mut pending = match self.take_phase() {
            ControllerPhase::Connected(pending) => pending,
            other => return Err(self.refuse(other, "exchange_keys", "connected")),
        };
        let hello = pending.hello(&self.config);
        self.phase = match hello {
            Ok(()) => ControllerPhase::KeysExchanged(pending),
            Err(_) => ControllerPhase::Connected(pending),
        };
        hello
    }

    /// A failure here spends the connection: the session is then stopped.
    fn establish_channel(&mut self) -> Result<()> {
        let pending = match self.take_phase() {
            ControllerPhase::KeysExchanged(pending) => pending,
            other => return Err(self.refuse(other, "establish_channel", "keys-exchanged")),
        };
        let mut link = pending.establish(&self.config)?;
        if self.probes.enabled() {
            self.received = on_link!(&mut link, l => l.enable_probes());
        }
        self.phase = ControllerPhase::Established(link);
        Ok(())
    }

    fn start(&mut self) -> Result<()> {
        self.phase = match self.take_phase() {
            ControllerPhase::Configured(link) => {
                ControllerPhase::Started(Running { link, failed: None })
            }
            other => return Err(self.refuse(other, "start", "configured")),
        };
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        // Dropping the phase drops a pending connection; a link says bye first.
        if let Some(link) = self.take_phase().link_mut() {
            on_link!(link, l => l.close());
        }
        Ok(())
    }
}

impl Controller for ControllerSession {
    fn set_message_sizes(&mut self, request_bytes: usize, reply_bytes: usize) -> Result<()> {
        let ControllerPhase::Established(_) = self.phase else {
            return Err(out_of_order(
                "set_message_sizes",
                self.phase.state(),
                "established",
            ));
        };
        let capacity = self.config.geometry.payload_capacity();
        for size in [request_bytes, reply_bytes] {
            if size > capacity {
                return Err(Error::MessageTooLarge { size, capacity });
            }
        }
        self.max_request = request_bytes;
        self.max_reply = reply_bytes;
        if let ControllerPhase::Established(link) = self.take_phase() {
            self.phase = ControllerPhase::Configured(link);
        }
        Ok(())
    }

    #[inline]
    fn stage_payload(&mut self, payload: &[u8], decoder_id: DecoderId) -> Result<()> {
        let run = Self::running(&mut self.phase, "stage_payload")?;
        let outstanding = (self.posted - self.collected) as u32;
        if outstanding >= self.config.in_flight {
            return Err(Error::Backpressure(outstanding));
        }
        if payload.len() > self.max_request {
            return Err(Error::MessageTooLarge {
                size: payload.len(),
                capacity: self.max_request,
            });
        }
        self.probes.stamp(Hop::Stage, self.posted);
        let seq = Seq::of_round(self.posted);
        on_link!(&mut run.link, l => l.stage(seq, decoder_id, payload))?;
        let slot = seq.slot(self.config.geometry.depth) as usize;
        self.ids[slot] = decoder_id;
        self.staged = true;
        Ok(())
    }

    #[inline]
    fn post(&mut self) -> Result<u64> {
        let run = Self::running(&mut self.phase, "post")?;
        if !self.staged {
            return Err(Error::NothingStaged);
        }
        let round = self.posted;
        on_link!(&mut run.link, l => l.post(Seq::of_round(round)))?;
        self.probes.stamp(Hop::Post, round);
        self.staged = false;
        self.posted += 1;
        Ok(round)
    }

    fn reply_slot(&mut self) -> Result<Option<Reply<'_>>> {
        let run = Self::running(&mut self.phase, "reply_slot")?;
        if self.collected == self.posted {
            return Err(Error::NothingInFlight);
        }
        let round = self.collected;
        let seq = Seq::of_round(round);
        let want = self.ids[seq.slot(self.config.geometry.depth) as usize];
        let max_reply = self.max_reply;
        match on_link!(&mut run.link, l => l.poll_reply(seq))? {
            Some(m) => {
                let r = Self::make_reply(round, seq, want, m)?;
                if r.payload.len() > max_reply {
                    return Err(Self::too_long(round, r.payload.len(), max_reply));
                }
                Ok(Some(r))
            }
            None => Ok(None),
        }
    }

    #[inline]
    fn collect(&mut self) -> Result<Reply<'_>> {
        let Running { link, failed } = Self::running(&mut self.phase, "collect")?;
        if self.collected == self.posted {
            return Err(Error::NothingInFlight);
        }
        let round = self.collected;
        let seq = Seq::of_round(round);
        let want = self.ids[seq.slot(self.config.geometry.depth) as usize];
        let (wait, timeout) = (self.config.wait, self.config.reply_timeout);
        let m = match on_link!(link, l => l.wait_reply(seq, &wait, timeout)) {
            Ok(m) => m,
            Err(e) => {
                // A lost round poisons the session: its slot may still receive a late reply.
                *failed = Some(match &e {
                    Error::PeerGone(p) => {
                        format!("the coprocessor {p} exited before round {round}")
                    }
                    e => format!("round {round}: {e}"),
                });
                return Err(e);
            }
        };
        let max_reply = self.max_reply;
        match Self::make_reply(round, seq, want, m) {
            Ok(reply) if reply.payload.len() > max_reply => {
                // Answered, but not as agreed: the round is over, its reply is not delivered.
                self.collected += 1;
                Err(Self::too_long(round, reply.payload.len(), max_reply))
            }
            Ok(reply) => {
                if self.probes.enabled() {
                    self.probes.stamp(Hop::ReplySeen, round);
                    if let Some(r) = &self.received {
                        let t = r.load(std::sync::atomic::Ordering::Relaxed);
                        self.probes.stamp_at(Hop::ReplyReceived, round, t);
                    }
                }
                self.collected += 1;
                Ok(reply)
            }
            Err(e) => {
                *failed = Some(e.to_string());
                Err(e)
            }
        }
    }

    fn outstanding(&self) -> u32 {
        (self.posted - self.collected) as u32
    }
}

impl Drop for ControllerSession {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Where a coprocessor is in its life cycle, with what that phase holds: the address to
/// listen on, then the listener, then whatever serves it. [`State`] is derived from it.
enum CoprocessorPhase {
    Created,
    Connected { address: String, oob_port: u16 },
    KeysExchanged(Box<dyn Listener>),
    Established(Box<dyn Listener>),
    Configured(Box<dyn Listener>),
    Started(Serving),
    Stopped,
}

/// What serves a started coprocessor's listener.
enum Serving {
    /// A server thread of this session.
    Thread(Server),
    /// A coprocessor that serves its own rings (a GPU kernel); the endpoint handed to it,
    /// kept until `stop`.
    External { _endpoint: Box<dyn Listener> },
}

impl CoprocessorPhase {
    fn state(&self) -> State {
        match self {
            CoprocessorPhase::Created => State::Created,
            CoprocessorPhase::Connected { .. } => State::Connected,
            CoprocessorPhase::KeysExchanged(_) => State::KeysExchanged,
            CoprocessorPhase::Established(_) => State::Established,
            CoprocessorPhase::Configured(_) => State::Configured,
            CoprocessorPhase::Started(_) => State::Started,
            CoprocessorPhase::Stopped => State::Stopped,
        }
    }
}

struct Server {
    stop: StopFlag,
    thread: JoinHandle<Result<()>>,
}

/// The coprocessor role: a listener that accepts controllers, each served on a thread of its
/// own (or by one of `serve_threads` polling threads) by direct dispatch.
pub struct CoprocessorSession {
    key: String,
    config: SessionConfig,
    phase: CoprocessorPhase,
    bound: Option<String>,
    peer_address: Option<String>,
    table: ResponderTable,
    options: ServeOptions,
    stats: Arc<ServerStats>,
}

impl fmt::Debug for CoprocessorSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoprocessorSession")
            .field("key", &self.key)
            .field("state", &self.phase.state())
            .field("address", &self.bound)
            .field("functions", &self.table)
            .finish()
    }
}

impl CoprocessorSession {
    /// `create` for the coprocessor role.
    pub fn create(key: &str, config: SessionConfig) -> Result<CoprocessorSession> {
        config.validate()?;
        Ok(CoprocessorSession {
            key: key.to_string(),
            config,
            phase: CoprocessorPhase::Created,
            bound: None,
            peer_address: None,
            table: ResponderTable::new(),
            options: ServeOptions::default(),
            stats: Arc::default(),
        })
    }

    /// All set-up calls in order, registering `table`, then start.
    pub fn open(
        key: &str,
        config: SessionConfig,
        address: &str,
        oob_port: u16,
        table: &ResponderTable,
        options: ServeOptions,
    ) -> Result<Self> {
        let mut s = CoprocessorSession::create(key, config)?;
        s.options = options;
        s.connect(address, oob_port)?;
        s.exchange_keys()?;
        s.establish_channel()?;
        for (id, r) in table.entries() {
            s.set_coprocessor_fn(id, r.clone())?;
        }
        s.start()?;
        Ok(s)
    }

    /// Sets serving options (before `start`).
    pub fn set_options(&mut self, options: ServeOptions) {
        self.options = options;
    }

    /// Where the server listens (after `exchange_keys`), e.g. `udp:127.0.0.1:7878`.
    pub fn address(&self) -> Option<&str> {
        self.bound.as_deref()
    }

    /// What a controller passes as its peer to reach this server (after `exchange_keys`): a
    /// session key (memcpy), a segment name (shm) or `IP:PORT` (udp, rdma).
    pub fn peer_address(&self) -> Option<&str> {
        self.peer_address.as_deref()
    }

    /// Live counters of the server.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// The shutdown report lines of its functions (e.g. a GPU kernel's counters and proxy hop).
    pub fn reports(&self) -> Vec<String> {
        self.table.reports()
    }

    /// True once the server thread has ended (its session budget is spent, or it failed).
    pub fn is_finished(&self) -> bool {
        match &self.phase {
            CoprocessorPhase::Started(Serving::External { .. }) => {
                self.table.common_ring_server().is_none_or(|s| !s.alive())
            }
            CoprocessorPhase::Started(Serving::Thread(s)) => s.thread.is_finished(),
            _ => true,
        }
    }

    /// Takes the phase out, leaving `Stopped` until the caller puts the next one in.
    fn take_phase(&mut self) -> CoprocessorPhase {
        std::mem::replace(&mut self.phase, CoprocessorPhase::Stopped)
    }

    /// Puts back a phase that `call` cannot start from, and says so.
    fn refuse(
        &mut self,
        phase: CoprocessorPhase,
        call: &'static str,
        expected: &'static str,
    ) -> Error {
        let state = phase.state();
        self.phase = phase;
        out_of_order(call, state, expected)
    }

    /// The serving options of the server thread, completed from the session's settings.
    fn server_options(&self) -> ServeOptions {
        let mut options = self.options.clone();
        options.scratch_bytes = options
            .scratch_bytes
            .max(self.config.geometry.payload_capacity());
        options.pin_cpu = options.pin_cpu.or(self.config.pin_cpu);
        options.name = self.key.clone();
        options
    }

    /// Starts the server thread on `listener`; gives the listener back when the thread's CPU
    /// does not exist.
    fn spawn_server(
        &self,
        listener: Box<dyn Listener>,
    ) -> std::result::Result<Result<Server>, (Box<dyn Listener>, Error)> {
        let options = self.server_options();
        if let Some(cpu) = options.pin_cpu {
            // Said here, not later as a timeout: a CPU that does not exist.
            if let Err(e) = crate::os::check_cpu(cpu) {
                return Err((listener, e));
            }
        }
        let stop = StopFlag::new();
        let (stop2, stats) = (stop.clone(), self.stats.clone());
        let table = self.table.clone();
        let wait = self.config.wait;
        let thread = std::thread::Builder::new()
            .name(crate::os::thread_name("srv:", &self.key))
            .spawn(move || -> Result<()> {
                serve(listener, &table, &wait, &options, &stats, &stop2)
            })
            .map_err(Error::io("spawning the server thread"));
        Ok(thread.map(|thread| Server { stop, thread }))
    }

    /// Waits up to `timeout` for the server thread to end by itself.
    pub fn wait_finished(&self, timeout: Duration) -> bool {
        let t0 = Instant::now();
        while !self.is_finished() {
            if t0.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

impl Session for CoprocessorSession {
    fn role(&self) -> Role {
        Role::Coprocessor
    }
    fn key(&self) -> &str {
        &self.key
    }
    fn state(&self) -> State {
        self.phase.state()
    }
    fn config(&self) -> &SessionConfig {
        &self.config
    }

    fn connect(&mut self, peer: &str, oob_port: u16) -> Result<()> {
        let CoprocessorPhase::Created = self.phase else {
            return Err(out_of_order("connect", self.phase.state(), "created"));
        };
        self.phase = CoprocessorPhase::Connected {
            address: peer.to_string(),
            oob_port,
        };
        Ok(())
    }

    fn exchange_keys(&mut self) -> Result<()> {
        let CoprocessorPhase::Connected { address, oob_port } = &self.phase else {
            return Err(out_of_order(
                "exchange_keys",
                self.phase.state(),
                "connected",
            ));
        };
        if self.config.key.is_some()
            && matches!(
                self.config.transport,
                crate::TransportKind::Memcpy | crate::TransportKind::Shm
            )
        {
            return Err(Error::Invalid(format!(
                "a key (--token-file) admits controllers of udp and rdma; {} serves only this \
                 machine's user (its segments are mode 0600): serve without one",
                self.config.transport
            )));
        }
        let args = ListenArgs {
            key: &self.key,
            config: &self.config,
            admission: Admission::new(self.options.max_sessions),
            idle_timeout: self.options.idle_timeout,
            strays: self.stats.strays.clone(),
            unadmitted: self.stats.unadmitted.clone(),
        };
        let listener = (transport(self.config.transport).listen)(address, *oob_port, args)?;
        self.bound = Some(listener.address());
        self.peer_address = Some(listener.peer_address());
        self.phase = CoprocessorPhase::KeysExchanged(listener);
        Ok(())
    }

    fn establish_channel(&mut self) -> Result<()> {
        self.phase = match self.take_phase() {
            CoprocessorPhase::KeysExchanged(listener) => CoprocessorPhase::Established(listener),
            other => return Err(self.refuse(other, "establish_channel", "keys-exchanged")),
        };
        Ok(())
    }

    fn start(&mut self) -> Result<()> {
        let mut listener = match self.take_phase() {
            CoprocessorPhase::Configured(listener) => listener,
            other => return Err(self.refuse(other, "start", "configured")),
        };
        // Every function is one GPU kernel's, and the controllers are in this process: they
        // attach to the kernel's rings directly; no serving thread.
        if let Some(server) = self.table.common_ring_server()
            && listener.serve_externally(server)
        {
            self.phase = CoprocessorPhase::Started(Serving::External {
                _endpoint: listener,
            });
            return Ok(());
        }
        match self.spawn_server(listener) {
            Ok(server) => {
                // A thread that could not be spawned took the listener with it.
                self.phase = CoprocessorPhase::Started(Serving::Thread(server?));
                Ok(())
            }
            Err((listener, e)) => {
                self.phase = CoprocessorPhase::Configured(listener);
                Err(e)
            }
        }
    }

    fn stop(&mut self) -> Result<()> {
        // Dropping the phase drops a listener, or the endpoint of an external server.
        match self.take_phase() {
            CoprocessorPhase::Started(Serving::Thread(s)) => {
                s.stop.set();
                s.thread
                    .join()
                    .unwrap_or(Err(Error::Panicked { thread: "server" }))
            }
            _ => Ok(()),
        }
    }
}

impl Coprocessor for CoprocessorSession {
    fn set_coprocessor_fn(
        &mut self,
        decoder_id: DecoderId,
        responder: Arc<dyn Responder>,
    ) -> Result<()> {
        let listener = match self.take_phase() {
            CoprocessorPhase::Established(listener) | CoprocessorPhase::Configured(listener) => {
                listener
            }
            other => return Err(self.refuse(other, "set_coprocessor_fn", "established")),
        };
        self.table.insert(decoder_id, responder);
        self.phase = CoprocessorPhase::Configured(listener);
        Ok(())
    }
}

impl Drop for CoprocessorSession {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backline_wire::{SlotHeader, WIRE_VERSION};

    fn message(kind: Kind, decoder_id: DecoderId, status: u16) -> backline_ring::Message<'static> {
        backline_ring::Message {
            header: SlotHeader {
                payload_len: 1,
                decoder_id,
                status,
                kind: kind as u8,
                version: WIRE_VERSION,
                seq: 1,
            },
            payload: &[5],
        }
    }

    #[test]
    fn replies_are_checked_on_the_fast_path_and_explained_on_the_slow_one() {
        let seq = Seq::of_round(0);
        let ok = ControllerSession::make_reply(0, seq, 3, message(Kind::Reply, 3, 0)).unwrap();
        assert_eq!(
            (ok.decoder_id, ok.status, ok.payload),
            (3, Status::Ok, &[5u8][..])
        );
        let failed = ControllerSession::make_reply(0, seq, 3, message(Kind::Reply, 3, 3)).unwrap();
        assert_eq!(failed.status, Status::from_u16(3).unwrap());
        let cases = [
            (message(Kind::Request, 3, 0), "instead of a reply"),
            (
                message(Kind::Reply, 4, 0),
                "echoes decoder_id 4 but the request had 3",
            ),
            (message(Kind::Reply, 3, 999), "unknown status 999"),
        ];
        for (m, want) in cases {
            let e = ControllerSession::make_reply(7, seq, 3, m)
                .unwrap_err()
                .to_string();
            assert!(e.contains("round 7") && e.contains(want), "{e}");
        }
    }
}
