//! `udp`: each request and each reply is one datagram holding the message image of the wire
//! format (payload then header). The server binds loopback unless told otherwise. Arriving
//! messages are filed into a local ring by their `seq`, so several rounds may be in flight and
//! the waiting logic is the ring's. Waits busy-poll the non-blocking socket for the spin
//! budget, then block in `poll(2)`.
//!
//! Besides messages, a server socket understands the [`Handshake`] record (hello, bye) and the
//! floor ping: 8 bytes, `"BKFP"` and a counter, echoed as they are. Each accepted controller
//! gets a socket of its own on the server, connected to it (its port travels in the accept's
//! `session_port`), so sessions proceed side by side, datagrams from anyone else never reach a
//! session, and a session's thread reads only its own socket. A session whose controller sends
//! nothing for the idle timeout (`backline serve --idle-timeout`, 60 s by default) is ended.

use std::io::ErrorKind;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use backline_ring::{HeapRing, Message, RingView, SpinPhase, WaitPolicy};
use backline_wire::{
    DecoderId, Geometry, HANDSHAKE_BYTES, HEADER_BYTES, HELLO_KEY_PROOF, Handshake, HandshakeKind,
    KEY_PROOF_BYTES, Kind, RejectReason, Seq, SlotHeader, Status, WIRE_VERSION, decode_message,
    encode_message,
};

use crate::admit::{AdmissionKey, Gate, Refusal, Verdict};

use crate::link::{
    Accepted, Admission, ControllerLink, CoprocessorLink, Listener, StopFlag, wait_error,
};
use crate::rounds::{IDLE_STRETCH, Polled, RoundIo};
use crate::{Error, Result};

use backline_wire::FLOOR_PING_MAGIC as FLOOR_MAGIC;

/// Resolves `addr` (host:port) of a `what` (e.g. "udp address").
pub(crate) fn resolve_as(what: &str, addr: &str) -> Result<SocketAddr> {
    addr.to_socket_addrs()
        .map_err(|e| Error::Invalid(format!("{what} `{addr}`: {e}")))?
        .next()
        .ok_or_else(|| Error::Invalid(format!("{what} `{addr}` resolves to nothing")))
}

/// Resolves a udp `addr` (host:port).
pub(crate) fn resolve(addr: &str) -> Result<SocketAddr> {
    resolve_as("udp address", addr)
}

/// Waits until `sock` is readable or `timeout` passes.
fn poll_readable(sock: &UdpSocket, timeout: Duration) {
    let mut fds = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut fds, 1, ms) };
}

/// Receives one datagram: busy-polls while `spin` goes on (yielding the CPU as ring waits do),
/// blocks (in naps of ≤ 20 ms) after. `Ok(None)` when nothing arrived this time round.
fn recv_one(
    sock: &UdpSocket,
    buf: &mut [u8],
    spin: &mut SpinPhase,
    deadline: Instant,
) -> std::io::Result<Option<(usize, SocketAddr)>> {
    match sock.recv_from(buf) {
        Ok(r) => return Ok(Some(r)),
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    let now = Instant::now();
    if !spin.spinning(now) {
        let nap = deadline
            .saturating_duration_since(now)
            .min(backline_ring::MAX_NAP);
        poll_readable(sock, nap);
        return match sock.recv_from(buf) {
            Ok(r) => Ok(Some(r)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        };
    }
    core::hint::spin_loop();
    Ok(None)
}

fn send_all(sock: &UdpSocket, bytes: &[u8], to: Option<SocketAddr>) -> std::io::Result<()> {
    loop {
        let r = match to {
            Some(a) => sock.send_to(bytes, a),
            None => sock.send(bytes),
        };
        match r {
            Ok(_) => return Ok(()),
            // Socket buffer full: wait for room.
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => return Err(e),
        }
    }
}

/// True if `seq` is one of the `depth` rounds starting at `from`.
fn in_window(seq: u32, from: Seq, depth: u32) -> bool {
    seq.wrapping_sub(from.0) < depth
}

/// How long a hello's answer is remembered, so that a retransmitted hello (its accept was
/// lost) gets the same session instead of a second one.
const HELLO_MEMORY: Duration = Duration::from_secs(5);

/// A recent accept: the controller's address, the session's port, when, and whether the
/// session is still waiting for its first datagram.
///
/// A controller repeats its hello only until its accept arrives, before it sends anything to
/// the session. So a hello from the address of a session that has heard from its controller,
/// or has ended, is a new controller whose socket got the same port (the old one closed it),
/// not a retransmission, and gets a session of its own.
struct RecentAccept {
    from: SocketAddr,
    port: u16,
    at: Instant,
    /// Cleared by the session at its first datagram and when it ends.
    unheard: Arc<AtomicBool>,
}

/// The coprocessor side: a bound socket that answers hellos (each accepted controller gets a
/// socket of its own, connected to it, whose port the accept names), floor pings, and nothing
/// else; datagrams from strangers are counted and dropped.
pub(crate) struct UdpListener {
    sock: UdpSocket,
    addr: SocketAddr,
    geometry: Geometry,
    admission: Arc<Admission>,
    idle_timeout: Duration,
    buf: Vec<u8>,
    /// Recent accepts.
    recent: Vec<RecentAccept>,
    /// Datagrams dropped because no session of theirs exists (strays, garbage).
    strays: Arc<AtomicU64>,
    /// With a key: the check of keyed hellos.
    gate: Option<Gate>,
    /// With a key: the controllers' addresses of admitted sessions, while they live (their
    /// floor pings are answered).
    admitted: Vec<(SocketAddr, Weak<()>)>,
}

impl UdpListener {
    /// Binds `addr` (e.g. `127.0.0.1:7878`).
    pub(crate) fn bind(
        addr: &str,
        geometry: Geometry,
        admission: Arc<Admission>,
        idle_timeout: Duration,
        strays: Arc<AtomicU64>,
        gate: Option<Gate>,
    ) -> Result<UdpListener> {
        let a = resolve(addr)?;
        let sock = UdpSocket::bind(a).map_err(|e| Error::bind("udp", a, e))?;
        sock.set_nonblocking(true)
            .map_err(Error::io("setting the socket non-blocking"))?;
        let addr = sock
            .local_addr()
            .map_err(Error::io("reading the bound address"))?;
        Ok(UdpListener {
            sock,
            addr,
            geometry,
            admission,
            idle_timeout,
            buf: vec![0u8; geometry.slot_bytes as usize + HANDSHAKE_BYTES + KEY_PROOF_BYTES],
            recent: Vec::new(),
            strays,
            gate,
            admitted: Vec::new(),
        })
    }

    /// A socket for a new session: the listener's address with a port of its own, connected
    /// to the controller (so that the kernel drops whatever else arrives on it).
    fn session_socket(&self, peer: SocketAddr) -> Result<UdpSocket> {
        let local = SocketAddr::new(self.addr.ip(), 0);
        let sock = UdpSocket::bind(local).map_err(|e| Error::bind("udp", local, e))?;
        sock.connect(peer)
            .map_err(Error::io(format!("connecting a session socket to {peer}")))?;
        sock.set_nonblocking(true)
            .map_err(Error::io("setting the socket non-blocking"))?;
        Ok(sock)
    }
}

/// What a datagram that is not a message says.
enum Control {
    Floor,
    Handshake(Handshake),
    Garbage,
}

fn classify(d: &[u8]) -> Option<Control> {
    if d.len() == 8 && d[..4] == FLOOR_MAGIC {
        return Some(Control::Floor);
    }
    if d.len() == HANDSHAKE_BYTES && d[..4] == backline_wire::HANDSHAKE_MAGIC {
        return Some(match Handshake::decode(d) {
            Ok(h) => Control::Handshake(h),
            Err(backline_wire::HandshakeError::Version(_)) => Control::Handshake(
                Handshake::reject(RejectReason::Version, Geometry::default()),
            ),
            Err(_) => Control::Garbage,
        });
    }
    None
}

/// What the listener makes of one datagram.
enum Screened {
    /// Nothing to do (counted where it was dropped).
    Drop,
    /// Send the datagram back as it is (a floor ping).
    Echo,
    /// Send this record back (a reject, a retransmitted answer).
    Send([u8; HANDSHAKE_BYTES]),
    /// A hello to answer, with its key proof when it carried one.
    Hello(Handshake, Option<[u8; KEY_PROOF_BYTES]>),
}

impl UdpListener {
    /// Sorts a datagram of an open listener (no key): floor pings are echoed, hellos
    /// answered, a hello of another version is told so, garbage is told it is malformed.
    fn screen_open(&mut self, n: usize) -> Screened {
        let d = &self.buf[..n];
        if d.len() == HANDSHAKE_BYTES + KEY_PROOF_BYTES
            && let Ok(h) = Handshake::decode(&d[..HANDSHAKE_BYTES])
            && h.kind == HandshakeKind::Hello
            && h.flags & HELLO_KEY_PROOF != 0
        {
            // A keyed controller: this server admits anyone, the proof is not needed.
            return Screened::Hello(h, None);
        }
        match classify(d) {
            Some(Control::Floor) => Screened::Echo,
            Some(Control::Handshake(h)) if h.kind == HandshakeKind::Reject => {
                // A hello of another version: say so.
                Screened::Send(Handshake::reject(RejectReason::Version, self.geometry).encode())
            }
            Some(Control::Handshake(h)) if h.kind == HandshakeKind::Hello => {
                Screened::Hello(h, None)
            }
            Some(Control::Garbage) => {
                self.strays.fetch_add(1, Ordering::Relaxed);
                Screened::Send(Handshake::reject(RejectReason::Malformed, self.geometry).encode())
            }
            // Byes of ended sessions, messages of no session: strays.
            _ => {
                self.strays.fetch_add(1, Ordering::Relaxed);
                Screened::Drop
            }
        }
    }

    /// Sorts a datagram of a keyed listener: only a hello with a valid key proof is
    /// answered, and floor pings from the address of a live admitted session; everything
    /// else is dropped without a word, counted and logged once per source ([`Gate`]).
    fn screen_keyed(&mut self, n: usize, from: SocketAddr) -> Screened {
        let Some(gate) = self.gate.as_mut() else {
            return Screened::Drop;
        };
        let d = &self.buf[..n];
        if d.len() == 8 && d[..4] == FLOOR_MAGIC {
            self.admitted.retain(|(_, live)| live.strong_count() > 0);
            if self.admitted.iter().any(|(a, _)| *a == from) {
                return Screened::Echo;
            }
            gate.refuse(from.ip(), Refusal::NotHello);
            return Screened::Drop;
        }
        if d.len() != HANDSHAKE_BYTES + KEY_PROOF_BYTES {
            gate.refuse(from.ip(), Refusal::NoProof);
            return Screened::Drop;
        }
        let mut record = [0u8; HANDSHAKE_BYTES];
        record.copy_from_slice(&d[..HANDSHAKE_BYTES]);
        let mut proof = [0u8; KEY_PROOF_BYTES];
        proof.copy_from_slice(&d[HANDSHAKE_BYTES..]);
        match gate.check(&record, Some(&proof), from) {
            Verdict::Admit => match Handshake::decode(&record) {
                Ok(h) if h.kind == HandshakeKind::Hello => Screened::Hello(h, Some(proof)),
                // A valid tag over a record of another kind: the key holder's bug; refused.
                _ => {
                    gate.refuse(from.ip(), Refusal::NotHello);
                    Screened::Drop
                }
            },
            // A retransmission: the accept again while its session waits for the controller
            // (the caller finds it in `recent`), the reject again; a hello whose session has
            // begun is used up.
            Verdict::Again(Some(answer)) => match Handshake::decode(&answer) {
                Ok(a) if a.kind == HandshakeKind::Accept => match Handshake::decode(&record) {
                    Ok(h) => Screened::Hello(h, None),
                    Err(_) => Screened::Drop,
                },
                _ => Screened::Send(answer),
            },
            Verdict::Again(None) | Verdict::Refuse(_) => Screened::Drop,
        }
    }

    /// Answers `hello` from `from`: a session (its socket and ring made only now), the same
    /// session again for a retransmission, or a reject.
    fn answer(
        &mut self,
        hello: Handshake,
        proof: Option<[u8; KEY_PROOF_BYTES]>,
        from: SocketAddr,
        stop: &StopFlag,
    ) -> Result<Option<Accepted>> {
        // Relaxed: the flag carries no data; a hello that races a session's first
        // datagram is a retransmission either way.
        self.recent
            .retain(|r| r.at.elapsed() < HELLO_MEMORY && r.unheard.load(Ordering::Relaxed));
        let mut answer = crate::link::answer_hello(&hello, self.geometry);
        let remember = |gate: &mut Option<Gate>, answer: &Handshake| {
            if let (Some(g), Some(p)) = (gate.as_mut(), proof.as_ref()) {
                g.answered(p, answer.encode());
            }
        };
        if answer.kind == HandshakeKind::Accept {
            if let Some(r) = self.recent.iter().find(|r| r.from == from) {
                // A retransmitted hello: the same session again.
                answer.session_port = r.port;
                let _ = send_all(&self.sock, &answer.encode(), Some(from));
                return Ok(None);
            }
            if self.gate.is_some() && proof.is_none() {
                // A keyed retransmission whose session has begun or ended: used up.
                return Ok(None);
            }
        }
        if answer.kind != HandshakeKind::Accept {
            remember(&mut self.gate, &answer);
            let _ = send_all(&self.sock, &answer.encode(), Some(from));
            return Ok(None);
        }
        let Some(guard) = self.admission.try_admit() else {
            let r = Handshake::reject(RejectReason::Full, self.geometry);
            remember(&mut self.gate, &r);
            let _ = send_all(&self.sock, &r.encode(), Some(from));
            return Ok(None);
        };
        let sock = self.session_socket(from)?;
        let port = sock
            .local_addr()
            .map_err(Error::io("reading a session socket's address"))?
            .port();
        answer.session_port = port;
        remember(&mut self.gate, &answer);
        send_all(&self.sock, &answer.encode(), Some(from))
            .map_err(Error::io(format!("answering {from}")))?;
        let unheard = Arc::new(AtomicBool::new(true));
        self.recent.push(RecentAccept {
            from,
            port,
            at: Instant::now(),
            unheard: unheard.clone(),
        });
        let live = Arc::new(());
        if self.gate.is_some() {
            self.admitted.push((from, Arc::downgrade(&live)));
        }
        let ring = HeapRing::new(self.geometry)?;
        let view = ring.view();
        let link = UdpServerLink {
            sock,
            peer: from,
            geometry: self.geometry,
            buf: vec![0u8; self.geometry.slot_bytes as usize + HANDSHAKE_BYTES],
            _ring: ring,
            view,
            out: Vec::with_capacity(self.geometry.slot_bytes as usize),
            last_seen: Instant::now(),
            idle_timeout: self.idle_timeout,
            stop: stop.clone(),
            probes: false,
            received_ns: 0,
            polls: 0,
            unheard: Some(unheard),
            _live: live,
        };
        Ok(Some(Accepted {
            link: Box::new(link),
            guard,
        }))
    }
}

impl Listener for UdpListener {
    fn accept(&mut self, wait: &WaitPolicy, stop: &StopFlag) -> Result<Option<Accepted>> {
        // The listener answers floor pings between and during sessions; it waits for the next
        // datagram with the same spin-then-block policy as a session, counted from the last
        // one, so the floor it serves is the best case, not a wake-up per ping.
        let spin_from = |last: Instant| SpinPhase::new(wait, last, last + IDLE_STRETCH, true);
        let mut spin = spin_from(Instant::now());
        let mut polls = 0u32;
        loop {
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) && stop.is_set() {
                return Ok(None);
            }
            let now = Instant::now();
            let got = recv_one(
                &self.sock,
                &mut self.buf,
                &mut spin,
                now + backline_ring::MAX_NAP,
            )
            .map_err(Error::io(format!("receiving on udp {}", self.addr)))?;
            let Some((n, from)) = got else {
                if now >= spin.until() && stop.is_set() {
                    return Ok(None);
                }
                continue;
            };
            spin = spin_from(Instant::now());
            let screened = if self.gate.is_some() {
                self.screen_keyed(n, from)
            } else {
                self.screen_open(n)
            };
            match screened {
                Screened::Drop => {}
                Screened::Echo => {
                    let _ = send_all(&self.sock, &self.buf[..n], Some(from));
                }
                Screened::Send(record) => {
                    let _ = send_all(&self.sock, &record, Some(from));
                }
                Screened::Hello(h, proof) => {
                    if let Some(a) = self.answer(h, proof, from, stop)? {
                        return Ok(Some(a));
                    }
                }
            }
        }
    }

    fn address(&self) -> String {
        format!("udp:{}", self.addr)
    }

    fn peer_address(&self) -> String {
        self.addr.to_string()
    }
}

/// The coprocessor side of one udp session: a socket connected to its controller.
struct UdpServerLink {
    sock: UdpSocket,
    peer: SocketAddr,
    geometry: Geometry,
    buf: Vec<u8>,
    _ring: HeapRing,
    view: RingView,
    out: Vec<u8>,
    last_seen: Instant,
    idle_timeout: Duration,
    stop: StopFlag,
    probes: bool,
    received_ns: u64,
    polls: u32,
    /// The listener's note that this session has not heard from its controller yet
    /// ([`RecentAccept`]); cleared (and dropped) at the first datagram.
    unheard: Option<Arc<AtomicBool>>,
    /// Alive while the session is: a keyed listener answers floor pings from its address.
    _live: Arc<()>,
}

impl Drop for UdpServerLink {
    fn drop(&mut self) {
        if let Some(u) = self.unheard.take() {
            u.store(false, Ordering::Relaxed);
        }
    }
}

impl UdpServerLink {
    /// Files one datagram. Returns false when the session is over.
    fn file(&mut self, n: usize, expect: Seq) -> bool {
        self.last_seen = Instant::now();
        if let Some(u) = self.unheard.take() {
            // Relaxed: see `RecentAccept`.
            u.store(false, Ordering::Relaxed);
        }
        let d = &self.buf[..n];
        match classify(d) {
            Some(Control::Handshake(h)) => h.kind != HandshakeKind::Bye,
            Some(_) => true,
            None => {
                if let Ok((h, payload)) = decode_message(d)
                    && h.kind == Kind::Request as u8
                    && in_window(h.seq, expect, self.view.geometry().depth)
                {
                    if self.probes {
                        self.received_ns = backline_probe::now();
                    }
                    let _ = self
                        .view
                        .publish(Seq(h.seq), Kind::Request, h.decoder_id, 0, payload);
                }
                true
            }
        }
    }

    /// Receives what is there (or spins on, or waits until a nap ends): `Ok(false)` when the
    /// session is over.
    fn pump(&mut self, spin: &mut SpinPhase, nap_until: Instant, expect: Seq) -> Result<bool> {
        let got = recv_one(&self.sock, &mut self.buf, spin, nap_until);
        match got {
            Ok(Some((n, _))) => Ok(self.file(n, expect)),
            Ok(None) => Ok(!self.stop.is_set() && self.last_seen.elapsed() < self.idle_timeout),
            // The controller's socket is gone (ICMP port unreachable).
            Err(e) if refused(&e) => Ok(false),
            Err(e) => Err(Error::io(format!("receiving from {}", self.peer))(e)),
        }
    }
}

impl CoprocessorLink for UdpServerLink {
    fn peer(&self) -> String {
        format!("udp:{}", self.peer)
    }
}

impl RoundIo for UdpServerLink {
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn wait_request(&mut self, seq: Seq, wait: &WaitPolicy) -> Result<Option<Message<'_>>> {
        let mut start = Instant::now();
        let mut spin = SpinPhase::new(wait, start, start + IDLE_STRETCH, true);
        let mut polls = 0u32;
        while self.view.poll(seq).is_none() {
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) && self.stop.is_set() {
                return Ok(None);
            }
            let now = Instant::now();
            if now > start + IDLE_STRETCH {
                start = now;
                spin = SpinPhase::new(wait, start, start + IDLE_STRETCH, true);
            }
            if !self.pump(&mut spin, now + backline_ring::MAX_NAP, seq)? {
                return Ok(None);
            }
        }
        Ok(self.view.poll(seq))
    }

    fn poll_request(&mut self, seq: Seq) -> Result<Polled<'_>> {
        if self.view.poll(seq).is_none() {
            self.polls = self.polls.wrapping_add(1);
            // One non-blocking look.
            let now = Instant::now();
            if !self.pump(&mut SpinPhase::no_wait(now), now, seq)? {
                return Ok(Polled::Ended);
            }
        }
        Ok(match self.view.poll(seq) {
            Some(m) => Polled::Ready(m),
            None => Polled::Pending,
        })
    }

    fn reply(
        &mut self,
        seq: Seq,
        decoder_id: DecoderId,
        status: Status,
        payload: &[u8],
    ) -> Result<()> {
        let h = SlotHeader {
            payload_len: payload.len() as u32,
            decoder_id,
            status: status as u16,
            kind: Kind::Reply as u8,
            version: WIRE_VERSION,
            seq: seq.0,
        };
        self.out.resize(payload.len() + HEADER_BYTES, 0);
        encode_message(&mut self.out, &h, payload);
        match send_all(&self.sock, &self.out, None) {
            Ok(()) => Ok(()),
            // The controller went away between its request and our reply.
            Err(e) if refused(&e) => Err(Error::PeerGone(format!("udp:{}", self.peer))),
            Err(e) => Err(Error::io(format!("replying to {}", self.peer))(e)),
        }
    }

    fn enable_probes(&mut self, on: bool) {
        self.probes = on;
    }

    fn received_ns(&self) -> u64 {
        self.received_ns
    }
}

/// The controller side of the handshake.
pub(crate) struct UdpClient {
    sock: UdpSocket,
    peer: SocketAddr,
}

fn client_socket(peer: SocketAddr) -> Result<UdpSocket> {
    let local: SocketAddr = if peer.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let sock = UdpSocket::bind(local).map_err(Error::io("binding a udp socket"))?;
    sock.connect(peer)
        .map_err(Error::io(format!("connecting udp to {peer}")))?;
    sock.set_nonblocking(true)
        .map_err(Error::io("setting the socket non-blocking"))?;
    Ok(sock)
}

/// The error for a datagram that answers a hello (or a floor ping) but is neither a handshake
/// (an echo) nor a backline message (a stale reply, which is waited past): the peer is
/// something else — a CUQR server (NVIDIA's realtime RPC, which answers every frame it cannot
/// parse with `bad_request`) or any other service. `None` for a backline message.
fn not_backline(d: &[u8], peer: &str, what: &'static str) -> Option<Error> {
    if decode_message(d).is_ok() {
        return None;
    }
    let answer = match backline_wire::cuqr::parse_response(d) {
        Ok((h, _)) => {
            let status = backline_wire::cuqr::CallStatus::from_code(h.status).map_or_else(
                || format!("status {}", h.status),
                |s| format!("status {}", s.name()),
            );
            format!(
                "a CUQR response ({status}): it is a CUQR server (NVIDIA's realtime RPC), not a \
                 backline coprocessor"
            )
        }
        Err(_) => format!(
            "{} bytes that are neither a backline handshake nor a backline message",
            d.len()
        ),
    };
    Some(Error::NotBackline {
        peer: peer.to_string(),
        what,
        answer,
    })
}

fn refused(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::ConnectionRefused
}

impl UdpClient {
    /// A socket connected to `peer`.
    pub(crate) fn connect(peer: &str) -> Result<UdpClient> {
        let peer = resolve(peer)?;
        Ok(UdpClient {
            sock: client_socket(peer)?,
            peer,
        })
    }

    /// Hello → accept, retransmitting every 100 ms until `timeout`; then the socket talks to
    /// the session's own port. With a `key`, the hello carries a key proof (the same one in
    /// every retransmission) and silence is "not admitted".
    pub(crate) fn hello(
        &mut self,
        geometry: Geometry,
        in_flight: u32,
        timeout: Duration,
        key: Option<&AdmissionKey>,
    ) -> Result<()> {
        let record = Handshake::new(HandshakeKind::Hello, geometry, in_flight);
        let mut hello = Vec::with_capacity(HANDSHAKE_BYTES + KEY_PROOF_BYTES);
        match key {
            Some(k) => {
                let (r, p) = k.prove(record)?;
                hello.extend_from_slice(&r);
                hello.extend_from_slice(&p);
            }
            None => hello.extend_from_slice(&record.encode()),
        }
        let t0 = Instant::now();
        let mut buf = [0u8; 256];
        let no_server = || {
            Error::NoPeer(format!(
                "udp:{} (nothing listens there; start `backline serve --transport udp`)",
                self.peer
            ))
        };
        while t0.elapsed() < timeout {
            match send_all(&self.sock, &hello, None) {
                Ok(()) => {}
                Err(e) if refused(&e) => return Err(no_server()),
                Err(e) => return Err(Error::io(format!("sending hello to {}", self.peer))(e)),
            }
            let resend = Instant::now() + Duration::from_millis(100);
            while Instant::now() < resend {
                poll_readable(&self.sock, Duration::from_millis(10));
                match self.sock.recv(&mut buf) {
                    Ok(n) => {
                        if n != HANDSHAKE_BYTES {
                            // A stale reply of an earlier session is a backline message:
                            // wait on. Anything else means no backline server listens.
                            match not_backline(&buf[..n], &format!("udp:{}", self.peer), "hello") {
                                Some(e) => return Err(e),
                                None => continue,
                            }
                        }
                        let h = Handshake::decode(&buf[..n])?;
                        crate::link::read_answer(&h, geometry, &format!("udp:{}", self.peer))?;
                        if h.session_port != 0 {
                            let session = SocketAddr::new(self.peer.ip(), h.session_port);
                            self.sock.connect(session).map_err(Error::io(format!(
                                "connecting udp to the session port {session}"
                            )))?;
                            self.peer = session;
                        }
                        return Ok(());
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if refused(&e) => return Err(no_server()),
                    Err(e) => return Err(Error::io(format!("receiving from {}", self.peer))(e)),
                }
            }
        }
        Err(Error::NotAdmitted {
            peer: format!("udp:{}", self.peer),
            keyed: key.is_some(),
            waited: t0.elapsed(),
            closed: false,
        })
    }

    /// The accepted session as a controller link.
    pub(crate) fn into_link(self, geometry: Geometry) -> Result<UdpController> {
        let ring = HeapRing::new(geometry)?;
        let view = ring.view();
        Ok(UdpController {
            sock: self.sock,
            peer: self.peer,
            view,
            _ring: ring,
            staged: Vec::with_capacity(geometry.slot_bytes as usize),
            staged_seq: None,
            buf: vec![0u8; geometry.slot_bytes as usize + HANDSHAKE_BYTES],
            closed: false,
            received: None,
        })
    }
}

/// The controller side of an accepted udp session.
pub(crate) struct UdpController {
    sock: UdpSocket,
    peer: SocketAddr,
    view: RingView,
    _ring: HeapRing,
    staged: Vec<u8>,
    staged_seq: Option<Seq>,
    buf: Vec<u8>,
    closed: bool,
    /// When the latest reply datagram was received (hop probes on).
    received: Option<Arc<AtomicU64>>,
}

impl UdpController {
    fn pump(&mut self, spin: &mut SpinPhase, deadline: Instant, expect: Seq) -> Result<()> {
        let got = match recv_one(&self.sock, &mut self.buf, spin, deadline) {
            Ok(g) => g,
            Err(e) if refused(&e) => {
                return Err(Error::PeerGone(format!(
                    "udp:{} (port unreachable)",
                    self.peer
                )));
            }
            Err(e) => return Err(Error::io(format!("receiving from {}", self.peer))(e)),
        };
        if let Some((n, _)) = got
            && let Ok((h, payload)) = decode_message(&self.buf[..n])
            && h.kind == Kind::Reply as u8
            && in_window(h.seq, expect, self.view.geometry().depth)
        {
            if let Some(r) = &self.received {
                r.store(backline_probe::now(), Ordering::Relaxed);
            }
            let _ = self
                .view
                .publish(Seq(h.seq), Kind::Reply, h.decoder_id, h.status, payload);
        }
        Ok(())
    }
}

impl ControllerLink for UdpController {
    fn geometry(&self) -> Geometry {
        self.view.geometry()
    }

    fn stage(&mut self, seq: Seq, decoder_id: DecoderId, payload: &[u8]) -> Result<()> {
        self.view.geometry().check_payload(payload.len())?;
        let h = SlotHeader {
            payload_len: payload.len() as u32,
            decoder_id,
            status: 0,
            kind: Kind::Request as u8,
            version: WIRE_VERSION,
            seq: seq.0,
        };
        self.staged.resize(payload.len() + HEADER_BYTES, 0);
        encode_message(&mut self.staged, &h, payload);
        self.staged_seq = Some(seq);
        Ok(())
    }

    fn post(&mut self, seq: Seq) -> Result<()> {
        if self.staged_seq.take() != Some(seq) {
            return Err(Error::NothingStaged);
        }
        match send_all(&self.sock, &self.staged, None) {
            Ok(()) => Ok(()),
            Err(e) if refused(&e) => Err(Error::PeerGone(format!(
                "udp:{} (port unreachable)",
                self.peer
            ))),
            Err(e) => Err(Error::io(format!("sending to {}", self.peer))(e)),
        }
    }

    fn poll_reply(&mut self, seq: Seq) -> Result<Option<Message<'_>>> {
        if self.view.poll(seq).is_none() {
            let now = Instant::now();
            self.pump(&mut SpinPhase::no_wait(now), now, seq)?;
        }
        Ok(self.view.poll(seq))
    }

    fn wait_reply(
        &mut self,
        seq: Seq,
        wait: &WaitPolicy,
        timeout: Duration,
    ) -> Result<Message<'_>> {
        let start = Instant::now();
        let deadline = start + timeout;
        let mut spin = SpinPhase::new(wait, start, deadline, true);
        while self.view.poll(seq).is_none() {
            if Instant::now() >= deadline {
                return Err(wait_error(
                    backline_ring::WaitError::Timeout {
                        seq: seq.0,
                        waited: start.elapsed(),
                    },
                    &self.peer(),
                ));
            }
            self.pump(&mut spin, deadline, seq)?;
        }
        Ok(self.view.poll(seq).expect("checked above"))
    }

    fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            let bye = Handshake::new(HandshakeKind::Bye, self.view.geometry(), 0).encode();
            let _ = self.sock.send(&bye);
        }
    }

    fn peer(&self) -> String {
        format!("udp:{}", self.peer)
    }

    fn enable_probes(&mut self) -> Option<Arc<AtomicU64>> {
        Some(self.received.get_or_insert_with(Arc::default).clone())
    }
}

impl Drop for UdpController {
    fn drop(&mut self) {
        self.close();
    }
}

/// The udp floor: `rounds` raw 8-byte datagrams echoed by the server at `peer`, no header, no
/// session. The server must be idle or serving (it echoes pings in both states). A keyed
/// server (`config.key`) echoes only the pings of an address it admitted a session of, so
/// then a session is opened first (with `config`'s geometry) from the socket that pings, and
/// ended after the pings.
pub fn udp_floor(
    peer: &str,
    rounds: u64,
    config: &crate::SessionConfig,
    timeout: Duration,
) -> Result<Vec<f64>> {
    let wait = &config.wait;
    let mut client = UdpClient::connect(peer)?;
    let listener = client.peer;
    let session = match &config.key {
        Some(key) => {
            client.hello(config.geometry, 1, config.setup_timeout, Some(key))?;
            let session = client.peer;
            client
                .sock
                .connect(listener)
                .map_err(Error::io(format!("connecting udp to {listener}")))?;
            Some(session)
        }
        None => None,
    };
    let r = ping_floor(&client, peer, rounds, wait, timeout);
    if let Some(s) = session {
        let bye = Handshake::new(HandshakeKind::Bye, config.geometry, 0).encode();
        let _ = send_all(&client.sock, &bye, Some(s));
    }
    r
}

fn ping_floor(
    client: &UdpClient,
    peer: &str,
    rounds: u64,
    wait: &WaitPolicy,
    timeout: Duration,
) -> Result<Vec<f64>> {
    let sock = &client.sock;
    let mut rtts = Vec::with_capacity(rounds as usize);
    let mut buf = [0u8; 64];
    for i in 0..rounds {
        let mut ping = [0u8; 8];
        ping[..4].copy_from_slice(&FLOOR_MAGIC);
        ping[4..].copy_from_slice(&(i as u32).to_le_bytes());
        let t0 = Instant::now();
        let deadline = t0 + timeout;
        let mut spin = SpinPhase::new(wait, t0, deadline, true);
        send_all(sock, &ping, None).map_err(|e| {
            if refused(&e) {
                Error::NoPeer(format!("udp:{peer}"))
            } else {
                Error::io("sending a floor ping")(e)
            }
        })?;
        loop {
            match recv_one(sock, &mut buf, &mut spin, deadline) {
                Ok(Some((8, _))) if buf[..8] == ping => break,
                // A late echo of an earlier ping, or a stale backline message: wait on. An
                // answer of another kind of server ends the measurement at once.
                Ok(Some((n, _))) if !(n == 8 && buf[..4] == FLOOR_MAGIC) => {
                    if let Some(e) = not_backline(&buf[..n], &format!("udp:{peer}"), "floor ping") {
                        return Err(e);
                    }
                }
                Ok(_) => {}
                Err(e) if refused(&e) => return Err(Error::NoPeer(format!("udp:{peer}"))),
                Err(e) => return Err(Error::io("receiving a floor ping")(e)),
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: format!("the floor ping {i} from udp:{peer}"),
                    waited: t0.elapsed(),
                });
            }
        }
        rtts.push(t0.elapsed().as_nanos() as f64);
    }
    Ok(rtts)
}
