//! `rdma`: one-sided RDMA WRITEs over RC queue pairs (RoCE v2 or InfiniBand), through
//! libibverbs loaded at run time.
//!
//! # Data path
//!
//! Each side registers one region: its *receive ring* (remote-writable), followed by a
//! 64-byte *floor line*, and on separate pages its *send ring* (local only) with its own floor
//! line. A request is staged in the controller's send ring exactly as it will land — payload,
//! header, `seq` last ([`RingView::write`] then [`RingView::stamp`]) — and `post` sends that
//! byte range ([`Geometry::message_range`]) with **one RDMA WRITE** (inline when it fits the
//! queue pair's inline size) to the same offset of the coprocessor's receive ring. The
//! coprocessor detects it by polling the slot's `seq` ([`RingView::poll`]), runs the
//! function on the polling thread, and answers with one WRITE into the controller's receive
//! ring, where `collect` polls for it. No receive queue, no immediate data, no completion
//! event on the receiving side: arrival is the `seq` word, as for every other transport.
//! Like perftest's `ib_write_lat`, this relies on the NIC placing a WRITE's bytes in
//! increasing address order, so the `seq` at the end arrives last.
//!
//! Up to `in_flight` rounds may be outstanding (each its own slot and its own WRITE). Only
//! every 64th WRITE is signalled; a send queue of 128 entries can therefore never overflow
//! (see [`verbs::Endpoint`]). Failed WRITEs always complete, so a broken connection shows up
//! as an error completion.
//!
//! # Set-up
//!
//! Out of band over TCP with the shared [`Handshake`] record of `backline-wire`
//! ([`backline_wire::oob`]): the coprocessor listens (`backline serve --transport rdma
//! --bind ADDR`), the controller connects and sends a hello with its QPN, PSN, GID, receive
//! ring address and rkey, ring geometry and rounds in flight; the coprocessor checks it,
//! creates and connects its queue pair and answers accept (with its own QPN, PSN, GID, ring
//! address and rkey) or reject with a reason. Every read has the session's set-up timeout.
//! The TCP connection stays open for the session: the controller's `stop` sends bye on it,
//! and either side sees the other exit as the connection closing.
//!
//! # Floor
//!
//! [`rdma_floor`] measures the bare RDMA WRITE ping-pong on the same queue-pair set-up: a
//! counter bounced between the two floor lines (the peer's is at its ring address plus the
//! ring's size), with no header, no slot and no dispatch — `ib_write_lat`'s pattern. A
//! coprocessor answers floor WRITEs whenever it waits for a request.
//!
//! # Waiting
//!
//! A NIC writes the rings, so there is no doorbell to block on: after the spin budget, waits
//! nap 50 µs at a time and re-poll. On dedicated cores `--spin-us -1` (never block, as
//! perftest does) gives the steadiest latency. Where a nap costs more than the spin budget
//! (a 50 µs nap takes ~200 µs in the emulated VM of the tests), the two sides can fall into
//! napping in turn and stay there; `docs/rdma.md` has the measurements.

mod sys;
pub(crate) mod verbs;

use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use backline_ring::{Message, RingView, WaitPolicy};
use backline_wire::oob::{self, OobError};
use backline_wire::{
    DecoderId, Geometry, HANDSHAKE_BYTES, HELLO_KEY_PROOF, Handshake, HandshakeError,
    HandshakeKind, KEY_PROOF_BYTES, Kind, RejectReason, Seq, Status,
};

use crate::admit::{AdmissionKey, Gate, Refusal, Verdict};
use crate::link::{
    Accepted, Admission, AdmitGuard, ControllerLink, CoprocessorLink, Listener, StopFlag,
    wait_error,
};
use crate::rounds::{Polled, RoundIo};
use crate::{Error, RdmaOptions, Result, SessionConfig};
use verbs::{Device, Endpoint, PeerEnd, RemoteRing, WriteError};

/// Opens the device, port and GID that `opts` select and describes them, e.g.
/// `rxe0 port 1, GID index 1 (RoCE v2 ::ffff:10.0.0.1), MTU 1024`. Fails with
/// [`Error::Unsupported`] ("no RDMA device …") on machines without RDMA, and with
/// [`Error::Invalid`] for a device, port or GID index that does not exist.
pub fn probe(opts: &RdmaOptions) -> Result<String> {
    Ok(Device::open(opts)?.describe())
}

/// How long a peer may take to drain a full send queue before a post gives up.
fn drain_timeout(config: &SessionConfig) -> Duration {
    config.reply_timeout.max(Duration::from_secs(1))
}

/// Reads the peer's side out of a hello or an accept; `None` if a field is out of range.
fn peer_end(h: &Handshake) -> Option<PeerEnd> {
    let ok = h.qpn != 0
        && h.qpn < 1 << 24
        && h.psn < 1 << 24
        && h.gid != [0; 16]
        && h.ring_addr != 0
        && h.ring_addr.is_multiple_of(backline_wire::SLOT_ALIGN as u64);
    ok.then_some(PeerEnd {
        qpn: h.qpn,
        psn: h.psn,
        gid: h.gid,
        ring: RemoteRing {
            addr: h.ring_addr,
            rkey: h.rkey,
        },
    })
}

/// The coprocessor's check of a hello against its own geometry.
pub(crate) fn check_hello(hello: &Handshake, geometry: Geometry) -> Result<PeerEnd, RejectReason> {
    crate::link::check_hello(hello, geometry)?;
    peer_end(hello).ok_or(RejectReason::Malformed)
}

/// The controller's reading of the coprocessor's answer to its hello.
pub(crate) fn check_answer(answer: &Handshake, geometry: Geometry, peer: &str) -> Result<PeerEnd> {
    crate::link::read_answer(answer, geometry, peer)?;
    peer_end(answer).ok_or_else(|| {
        Error::Protocol(format!(
            "{peer} accepted with an unusable queue pair (QPN {:#x}, PSN {:#x}, ring address {:#x}, GID {})",
            answer.qpn,
            answer.psn,
            answer.ring_addr,
            verbs::gid_text(&answer.gid)
        ))
    })
}

fn oob_error(e: OobError, peer: &str, what: &str) -> Error {
    match e {
        OobError::Connect { source, .. } => Error::NoPeer(format!(
            "{peer} ({source}; start `backline serve --transport rdma --bind ADDR` there)"
        )),
        OobError::Timeout(waited) => Error::Timeout {
            what: format!("{what} from {peer}"),
            waited,
        },
        OobError::Closed(n) => Error::Protocol(format!(
            "{peer} closed the set-up connection after {n} of {HANDSHAKE_BYTES} bytes of {what} \
             (not a backline coprocessor, or it refused us)"
        )),
        OobError::Handshake(h) => Error::Handshake(h),
        OobError::Io(source) => Error::Io {
            what: format!("{what} with {peer}"),
            source,
        },
    }
}

/// Our side of the set-up, as a handshake record of `kind`.
fn record(kind: HandshakeKind, ep: &Endpoint, geometry: Geometry, in_flight: u32) -> Handshake {
    let l = ep.local();
    let mut h = Handshake::new(kind, geometry, in_flight);
    h.qpn = l.qpn;
    h.psn = l.psn;
    h.rkey = l.rkey;
    h.ring_addr = l.ring_addr;
    h.gid = l.gid;
    h
}

/// True while the peer holds its end of the set-up connection open (a non-blocking peek).
fn connection_open(stream: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    match stream.peek(&mut b) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted),
    }
}

/// The controller between `connect` and `establish_channel`.
pub(crate) struct RdmaClient {
    ep: Endpoint,
    stream: TcpStream,
    peer: String,
    accepted: Option<PeerEnd>,
}

impl RdmaClient {
    /// Opens the device, registers the rings, creates the queue pair and connects the set-up
    /// connection to `addr` (host:port).
    pub(crate) fn connect(addr: &str, config: &SessionConfig) -> Result<RdmaClient> {
        let dev = Arc::new(Device::open(&config.rdma)?);
        let ep = Endpoint::new(dev, config.geometry, drain_timeout(config))?;
        let peer = format!("rdma:{addr}");
        let stream = oob::connect(addr, config.setup_timeout)
            .map_err(|e| oob_error(e, &peer, "the connection"))?;
        Ok(RdmaClient {
            ep,
            stream,
            peer,
            accepted: None,
        })
    }

    /// Hello → accept: exchanges queue pairs, keys and ring addresses. With a `key`, the
    /// hello carries a key proof, and a connection closed without an answer is "not
    /// admitted" (a keyed coprocessor refuses that way).
    pub(crate) fn hello(
        &mut self,
        geometry: Geometry,
        in_flight: u32,
        timeout: Duration,
        key: Option<&AdmissionKey>,
    ) -> Result<()> {
        let hello = record(HandshakeKind::Hello, &self.ep, geometry, in_flight);
        let sent = match key {
            Some(k) => {
                let (r, p) = k.prove(hello)?;
                let mut b = r.to_vec();
                b.extend_from_slice(&p);
                oob::send_bytes(&mut self.stream, &b)
            }
            None => oob::send(&mut self.stream, &hello),
        };
        sent.map_err(|e| oob_error(e, &self.peer, "our hello"))?;
        let t0 = Instant::now();
        let answer = oob::recv(&mut self.stream, timeout).map_err(|e| match e {
            OobError::Closed(0) => Error::NotAdmitted {
                peer: self.peer.clone(),
                keyed: key.is_some(),
                waited: t0.elapsed(),
                closed: true,
            },
            e => oob_error(e, &self.peer, "the answer to our hello"),
        })?;
        self.accepted = Some(check_answer(&answer, geometry, &self.peer)?);
        Ok(())
    }

    /// Connects the queue pair to the accepted peer.
    pub(crate) fn into_link(mut self) -> Result<RdmaController> {
        let peer = self
            .accepted
            .ok_or_else(|| Error::Failed("the coprocessor has not accepted the session".into()))?;
        self.ep.connect(&peer)?;
        self.stream
            .set_nonblocking(true)
            .map_err(Error::io("setting the set-up connection non-blocking"))?;
        let (recv, send) = (*self.ep.recv(), *self.ep.send());
        Ok(RdmaController {
            ep: self.ep,
            recv,
            send,
            stream: self.stream,
            peer: self.peer,
            staged: None,
            closed: false,
        })
    }
}

fn write_error(e: WriteError, peer: &str) -> Error {
    match e {
        WriteError::Failed(f) if f.peer_gone => Error::PeerGone(format!("{peer} ({})", f.status)),
        WriteError::Failed(f) => {
            Error::Failed(format!("an RDMA WRITE to {peer} failed: {}", f.status))
        }
        WriteError::Post(e) => e,
        WriteError::Stuck(waited) => Error::Timeout {
            what: format!("room in the send queue towards {peer}"),
            waited,
        },
        WriteError::NotConnected => Error::Failed("the queue pair is not connected".into()),
    }
}

/// The controller side of an established rdma session.
pub(crate) struct RdmaController {
    ep: Endpoint,
    /// Copies of the endpoint's ring views (the endpoint owns their memory and lives as long).
    recv: RingView,
    send: RingView,
    stream: TcpStream,
    peer: String,
    staged: Option<(Seq, usize)>,
    closed: bool,
}

impl RdmaController {
    /// The bare WRITE ping-pong: `rounds` counter values bounced off the coprocessor's floor
    /// line. Returns each round trip in ns.
    pub(crate) fn floor(&mut self, rounds: u64, timeout: Duration) -> Result<Vec<f64>> {
        let mut rtts = Vec::with_capacity(rounds as usize);
        for i in 0..rounds {
            let ask = (2 * i + 1) as u32;
            let want = ask.wrapping_add(1);
            let t0 = Instant::now();
            self.ep
                .write_floor(ask)
                .map_err(|e| write_error(e, &self.peer))?;
            let word = self.ep.floor_recv();
            let mut polls = 0u32;
            while word.load(Ordering::Acquire) != want {
                core::hint::spin_loop();
                polls = polls.wrapping_add(1);
                if polls.is_multiple_of(1024) && t0.elapsed() > timeout {
                    return Err(if connection_open(&self.stream) {
                        Error::Timeout {
                            what: format!("the floor echo {i} from {}", self.peer),
                            waited: t0.elapsed(),
                        }
                    } else {
                        Error::PeerGone(self.peer.clone())
                    });
                }
            }
            rtts.push(t0.elapsed().as_nanos() as f64);
        }
        Ok(rtts)
    }
}

impl ControllerLink for RdmaController {
    fn geometry(&self) -> Geometry {
        self.recv.geometry()
    }

    #[inline]
    fn stage(&mut self, seq: Seq, decoder_id: DecoderId, payload: &[u8]) -> Result<()> {
        // The send ring is ours alone: the message is written in place, seq included, and
        // the WRITE of `post` carries it as it is.
        self.send
            .write(seq, Kind::Request, decoder_id, 0, payload)?;
        self.send.stamp(seq);
        self.staged = Some((seq, payload.len()));
        Ok(())
    }

    #[inline]
    fn post(&mut self, seq: Seq) -> Result<()> {
        match self.staged.take() {
            Some((s, len)) if s == seq => self
                .ep
                .write_slot(seq, len)
                .map_err(|e| write_error(e, &self.peer)),
            _ => Err(Error::NothingStaged),
        }
    }

    #[inline]
    fn poll_reply(&mut self, seq: Seq) -> Result<Option<Message<'_>>> {
        Ok(self.recv.poll(seq))
    }

    #[inline]
    fn wait_reply(
        &mut self,
        seq: Seq,
        wait: &WaitPolicy,
        timeout: Duration,
    ) -> Result<Message<'_>> {
        let (recv, stream, peer) = (&self.recv, &self.stream, &self.peer);
        recv.wait(seq, wait, timeout, None).map_err(|e| {
            if connection_open(stream) {
                wait_error(e, peer)
            } else {
                Error::PeerGone(peer.clone())
            }
        })
    }

    fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            let _ = self.stream.set_nonblocking(false);
            let _ = self
                .stream
                .set_write_timeout(Some(Duration::from_millis(200)));
            let bye = Handshake::new(HandshakeKind::Bye, self.recv.geometry(), 0);
            let _ = oob::send(&mut self.stream, &bye);
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
        }
    }

    fn peer(&self) -> String {
        self.peer.clone()
    }

    fn peer_alive(&self) -> bool {
        self.ep.failure().is_none_or(|f| !f.peer_gone) && connection_open(&self.stream)
    }
}

impl Drop for RdmaController {
    fn drop(&mut self) {
        self.close();
    }
}

/// Measures the rdma floor against the coprocessor at `peer` (host:port): a session of its
/// own (same device options, geometry and queue-pair set-up as `config`) whose `rounds`
/// round trips are bare WRITEs of a counter, echoed by the coprocessor. Round-trip times in
/// ns.
pub fn rdma_floor(
    peer: &str,
    config: &SessionConfig,
    rounds: u64,
    timeout: Duration,
) -> Result<Vec<f64>> {
    let mut c = RdmaClient::connect(peer, config)?;
    c.hello(
        config.geometry,
        1,
        config.setup_timeout,
        config.key.as_ref(),
    )?;
    let mut link = c.into_link()?;
    link.floor(rounds, timeout)
}

/// The coprocessor's endpoint: a TCP listener for set-up connections and an open device.
pub(crate) struct RdmaListener {
    tcp: TcpListener,
    addr: SocketAddr,
    dev: Arc<Device>,
    admission: Arc<Admission>,
    geometry: Geometry,
    setup_timeout: Duration,
    drain_timeout: Duration,
    /// With a key: the check of keyed hellos.
    gate: Option<Gate>,
}

impl RdmaListener {
    /// Opens the device of `config.rdma` and binds `addr` (host:port) for set-up connections.
    pub(crate) fn bind(
        addr: &str,
        config: &SessionConfig,
        admission: Arc<Admission>,
        gate: Option<Gate>,
    ) -> Result<RdmaListener> {
        let geometry = config.geometry.validate()?;
        let dev = Arc::new(Device::open(&config.rdma)?);
        let a = crate::udp::resolve_as("rdma set-up address", addr)?;
        let tcp = TcpListener::bind(a).map_err(|e| Error::bind("tcp", a, e))?;
        tcp.set_nonblocking(true)
            .map_err(Error::io("setting the listener non-blocking"))?;
        let addr = tcp
            .local_addr()
            .map_err(Error::io("reading the bound address"))?;
        Ok(RdmaListener {
            tcp,
            addr,
            dev,
            admission,
            geometry,
            setup_timeout: config.setup_timeout,
            drain_timeout: drain_timeout(config),
            gate,
        })
    }

    /// Runs the coprocessor's half of the handshake on a fresh connection. `Ok(None)` when the
    /// hello was refused or the controller went quiet; errors only for local failures. A keyed
    /// listener checks the key proof before anything else and closes the connection on a
    /// hello without a valid one, answering nothing.
    fn handshake(
        &mut self,
        mut stream: TcpStream,
    ) -> Result<Option<(Endpoint, TcpStream, AdmitGuard)>> {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(self.setup_timeout));
        let keyed = self.gate.is_some();
        let reject = |s: &mut TcpStream, reason| {
            if !keyed {
                let _ = oob::send(s, &Handshake::reject(reason, self.geometry));
            }
        };
        let from = stream
            .peer_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let mut raw = [0u8; HANDSHAKE_BYTES];
        // Silent, closed or broken: nobody to answer.
        if oob::recv_exact(&mut stream, &mut raw, self.setup_timeout).is_err() {
            if let Some(g) = self.gate.as_mut() {
                g.refuse(from.ip(), Refusal::NotHello);
            }
            return Ok(None);
        }
        let hello = match Handshake::decode(&raw) {
            Ok(h) => h,
            Err(e) => {
                if let Some(g) = self.gate.as_mut() {
                    g.refuse(from.ip(), Refusal::NotHello);
                }
                let reason = match e {
                    HandshakeError::Version(_) => RejectReason::Version,
                    _ => RejectReason::Malformed,
                };
                reject(&mut stream, reason);
                return Ok(None);
            }
        };
        if hello.kind == HandshakeKind::Hello && hello.flags & HELLO_KEY_PROOF != 0 {
            let mut proof = [0u8; KEY_PROOF_BYTES];
            if oob::recv_exact(&mut stream, &mut proof, self.setup_timeout).is_err() {
                if let Some(g) = self.gate.as_mut() {
                    g.refuse(from.ip(), Refusal::NoProof);
                }
                return Ok(None);
            }
            if let Some(g) = self.gate.as_mut()
                && g.check(&raw, Some(&proof), from) != Verdict::Admit
            {
                // Over TCP nothing is retransmitted: a proof seen before is a replay.
                return Ok(None);
            }
        } else if let Some(g) = self.gate.as_mut() {
            g.refuse(from.ip(), Refusal::NoProof);
            return Ok(None);
        }
        let peer = match check_hello(&hello, self.geometry) {
            Ok(p) => p,
            Err(reason) => {
                reject(&mut stream, reason);
                return Ok(None);
            }
        };
        let Some(guard) = self.admission.try_admit() else {
            reject(&mut stream, RejectReason::Full);
            return Ok(None);
        };
        let ep = Endpoint::new(self.dev.clone(), self.geometry, self.drain_timeout)
            .and_then(|mut ep| ep.connect(&peer).map(|()| ep));
        let ep = match ep {
            Ok(ep) => ep,
            Err(e) => {
                reject(&mut stream, RejectReason::Unsupported);
                return Err(e);
            }
        };
        let accept = record(HandshakeKind::Accept, &ep, self.geometry, hello.in_flight);
        if oob::send(&mut stream, &accept).is_err() {
            return Ok(None);
        }
        stream
            .set_nonblocking(true)
            .map_err(Error::io("setting the set-up connection non-blocking"))?;
        Ok(Some((ep, stream, guard)))
    }
}

/// How long an idle server sleeps between two looks at its listener (set-up only).
const ACCEPT_NAP: Duration = Duration::from_millis(5);

impl Listener for RdmaListener {
    fn accept(&mut self, _wait: &WaitPolicy, stop: &StopFlag) -> Result<Option<Accepted>> {
        loop {
            if stop.is_set() {
                return Ok(None);
            }
            let stream = match self.tcp.accept() {
                Ok((s, _)) => s,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    std::thread::sleep(ACCEPT_NAP);
                    continue;
                }
                Err(e) => {
                    return Err(Error::Io {
                        what: format!("accepting on tcp {}", self.addr),
                        source: e,
                    });
                }
            };
            let peer = stream
                .peer_addr()
                .map_or_else(|_| "an unknown address".to_string(), |a| a.to_string());
            let Some((ep, stream, guard)) = self.handshake(stream)? else {
                continue;
            };
            let (recv, send) = (*ep.recv(), *ep.send());
            return Ok(Some(Accepted {
                link: Box::new(RdmaServerLink {
                    recv,
                    send,
                    peer,
                    st: ServerState {
                        ep,
                        stream,
                        bye: [0; HANDSHAKE_BYTES],
                        bye_got: 0,
                        floor_seen: 0,
                        next_check: Instant::now(),
                        over: false,
                        stop: stop.clone(),
                    },
                }),
                guard,
            }));
        }
    }

    fn address(&self) -> String {
        format!("rdma:{} on {}", self.addr, self.dev.describe())
    }

    fn peer_address(&self) -> String {
        self.addr.to_string()
    }
}

/// How often a waiting server looks at its set-up connection, its listener and its
/// completion queue.
const HOUSEKEEPING: Duration = Duration::from_millis(5);

/// The coprocessor side of one controller's session.
struct RdmaServerLink {
    /// Copies of the endpoint's ring views (the endpoint, in `st`, owns their memory and
    /// lives as long). Kept apart from `st` so that a message borrowed from `recv` can be
    /// returned while `st` is used mutably in the same loop.
    recv: RingView,
    send: RingView,
    peer: String,
    st: ServerState,
}

/// Everything of a server session but its ring views.
struct ServerState {
    ep: Endpoint,
    stream: TcpStream,
    bye: [u8; HANDSHAKE_BYTES],
    bye_got: usize,
    floor_seen: u32,
    next_check: Instant,
    over: bool,
    stop: StopFlag,
}

impl ServerState {
    /// Bye or a closed set-up connection, a stop request, or a broken queue pair end the
    /// session (returns true).
    fn housekeeping(&mut self) -> bool {
        if self.stop.is_set() {
            return true;
        }
        loop {
            match self.stream.read(&mut self.bye[self.bye_got..]) {
                Ok(0) => return true,
                Ok(n) => {
                    self.bye_got += n;
                    if self.bye_got == HANDSHAKE_BYTES {
                        self.bye_got = 0;
                        if Handshake::decode(&self.bye).is_ok_and(|h| h.kind == HandshakeKind::Bye)
                        {
                            return true;
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
        self.ep.reap().is_err()
    }

    /// Echoes a floor ping if one came in; false when there was none.
    fn floor_ping(&mut self) -> bool {
        let f = self.ep.floor_recv().load(Ordering::Acquire);
        if f == self.floor_seen {
            return false;
        }
        self.floor_seen = f;
        if f % 2 == 1 && self.ep.write_floor(f.wrapping_add(1)).is_err() {
            self.over = true;
        }
        true
    }
}

impl CoprocessorLink for RdmaServerLink {
    fn peer(&self) -> String {
        format!("rdma:{}", self.peer)
    }
}

impl RoundIo for RdmaServerLink {
    fn geometry(&self) -> Geometry {
        self.recv.geometry()
    }

    fn poll_request(&mut self, seq: Seq) -> Result<Polled<'_>> {
        if self.st.over {
            return Ok(Polled::Ended);
        }
        if let Some(m) = self.recv.poll(seq) {
            return Ok(Polled::Ready(m));
        }
        self.st.floor_ping();
        let now = Instant::now();
        if now >= self.st.next_check {
            self.st.next_check = now + HOUSEKEEPING;
            if self.st.housekeeping() {
                self.st.over = true;
                return Ok(Polled::Ended);
            }
        }
        Ok(Polled::Pending)
    }

    fn wait_request(&mut self, seq: Seq, wait: &WaitPolicy) -> Result<Option<Message<'_>>> {
        let mut polls = 0u32;
        let mut spin_until: Option<Instant> = None;
        loop {
            if self.st.over {
                return Ok(None);
            }
            if let Some(m) = self.recv.poll(seq) {
                return Ok(Some(m));
            }
            // A floor ping: echo it at once.
            if self.st.floor_ping() {
                // Activity: spin afresh, as a wait for the next request would.
                spin_until = None;
                continue;
            }
            core::hint::spin_loop();
            polls = polls.wrapping_add(1);
            if !polls.is_multiple_of(64) {
                continue;
            }
            let now = Instant::now();
            let until = *spin_until
                .get_or_insert_with(|| wait.spin_until(now, now + Duration::from_secs(3600)));
            if now >= self.st.next_check {
                self.st.next_check = now + HOUSEKEEPING;
                if self.st.housekeeping() {
                    self.st.over = true;
                    continue;
                }
            }
            if now >= until {
                // No doorbell: a NIC writes this ring. Nap briefly and look again.
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    fn reply(
        &mut self,
        seq: Seq,
        decoder_id: DecoderId,
        status: Status,
        payload: &[u8],
    ) -> Result<()> {
        self.send
            .write(seq, Kind::Reply, decoder_id, status as u16, payload)?;
        self.send.stamp(seq);
        if self.st.ep.write_slot(seq, payload.len()).is_err() {
            // The controller is gone (its queue pair no longer answers): the session is
            // over, and the server lives on for the next one.
            self.st.over = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(g: Geometry) -> Handshake {
        let mut h = Handshake::new(HandshakeKind::Hello, g, 1);
        h.qpn = 0x11;
        h.psn = 0x12_3456;
        h.rkey = 0x1234;
        h.ring_addr = 0x7f00_0000_1000;
        h.gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1];
        h
    }

    #[test]
    fn hellos_are_checked_field_by_field() {
        let g = Geometry::default();
        let p = check_hello(&hello(g), g).unwrap();
        assert_eq!(
            (p.qpn, p.psn, p.ring.rkey, p.ring.addr),
            (0x11, 0x12_3456, 0x1234, 0x7f00_0000_1000)
        );
        let other = Geometry { depth: 64, ..g };
        assert_eq!(
            check_hello(&hello(other), g).unwrap_err(),
            RejectReason::Geometry
        );
        let bad: [fn(&mut Handshake); 7] = [
            |h| h.kind = HandshakeKind::Accept,
            |h| h.in_flight = 0,
            |h| h.in_flight = 9,
            |h| h.qpn = 0,
            |h| h.qpn = 1 << 24,
            |h| h.ring_addr = 0x7f00_0000_1004,
            |h| h.gid = [0; 16],
        ];
        for (i, f) in bad.iter().enumerate() {
            let mut h = hello(g);
            f(&mut h);
            assert_eq!(
                check_hello(&h, g).unwrap_err(),
                RejectReason::Malformed,
                "case {i}"
            );
        }
    }

    #[test]
    fn answers_become_clear_errors() {
        let g = Geometry::default();
        let mut accept = hello(g);
        accept.kind = HandshakeKind::Accept;
        assert!(check_answer(&accept, g, "rdma:x").is_ok());
        let mut wrong = accept;
        wrong.geometry.slot_bytes = 128;
        let e = check_answer(&wrong, g, "rdma:x").unwrap_err();
        assert!(
            e.to_string().contains("the peer has 8 slots of 128 bytes"),
            "{e}"
        );
        let e = check_answer(
            &Handshake::reject(
                RejectReason::Geometry,
                Geometry {
                    depth: 4,
                    slot_bytes: 64,
                },
            ),
            g,
            "rdma:x",
        )
        .unwrap_err();
        assert!(matches!(e, Error::GeometryMismatch { .. }), "{e}");
        let e = check_answer(&Handshake::reject(RejectReason::Busy, g), g, "rdma:x").unwrap_err();
        assert!(matches!(e, Error::Rejected(RejectReason::Busy)), "{e}");
        let mut no_qp = accept;
        no_qp.qpn = 0;
        let e = check_answer(&no_qp, g, "rdma:x").unwrap_err();
        assert!(e.to_string().contains("unusable queue pair"), "{e}");
        let e = check_answer(&Handshake::new(HandshakeKind::Hello, g, 1), g, "rdma:x").unwrap_err();
        assert!(matches!(e, Error::Protocol(_)), "{e}");
    }

    /// Runs where a device exists (the VM test): a default slot's message goes inline, and
    /// the handshake fields of a fresh endpoint are in range.
    #[test]
    fn a_fresh_endpoint_is_usable_and_sends_default_slots_inline() {
        let opts = RdmaOptions {
            device: std::env::var("BACKLINE_RDMA_DEVICE").ok(),
            ..RdmaOptions::default()
        };
        let Ok(dev) = Device::open(&opts) else {
            eprintln!("rdma case skipped: no RDMA device");
            return;
        };
        let g = Geometry::default();
        let ep = Endpoint::new(Arc::new(dev), g, Duration::from_secs(1)).unwrap();
        eprintln!("granted inline data: {} bytes", ep.max_inline());
        assert!(ep.max_inline() >= g.slot_bytes, "{}", ep.max_inline());
        let l = ep.local();
        assert!(l.qpn != 0 && l.qpn < 1 << 24 && l.psn < 1 << 24);
        assert!(l.ring_addr.is_multiple_of(4096) && l.gid != [0; 16]);
        let h = record(HandshakeKind::Hello, &ep, g, 1);
        assert!(
            check_hello(&h, g).is_ok(),
            "our own hello passes our own check"
        );
    }

    #[test]
    fn without_a_device_the_error_says_so() {
        // On a machine with RDMA this checks nothing; the VM test covers that side.
        if let Err(e) = probe(&RdmaOptions::default()) {
            let text = e.to_string();
            assert!(matches!(e, Error::Unsupported(_)), "{text}");
            assert!(
                text.contains("no RDMA device") || text.contains("no RDMA support"),
                "{text}"
            );
        }
    }
}
