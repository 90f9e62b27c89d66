//! `udp`: each request and each reply is one datagram holding the message image of the wire
//! format (payload then header). The server binds loopback unless told otherwise. Arriving
//! messages are filed into a local ring by their `seq`, so several rounds may be in flight and
//! the waiting logic is the ring's. Waits busy-poll the non-blocking socket for the spin
//! budget, then block in `poll(2)`.
//!
//! Besides messages, a server socket understands the [`Handshake`] record (hello, bye) and the
//! floor ping: 8 bytes, `"BKFP"` and a counter, echoed as they are.

use std::io::ErrorKind;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use backline_ring::{HeapRing, Message, RingView, WaitPolicy};
use backline_wire::{
    DecoderId, Geometry, HANDSHAKE_BYTES, HEADER_BYTES, Handshake, HandshakeKind, Kind,
    RejectReason, Seq, SlotHeader, Status, WIRE_VERSION, decode_message, encode_message,
};

use crate::link::{ControllerLink, CoprocessorLink, Listener, wait_error};
use crate::{Error, Result};

/// Magic of a floor ping.
const FLOOR_MAGIC: [u8; 4] = *b"BKFP";
/// How long a quiet controller keeps its claim on a server against another's hello.
const IDLE_TAKEOVER: Duration = Duration::from_secs(1);

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

/// Receives one datagram: busy-polls before `spin_until`, blocks (in naps of ≤ 20 ms) after.
/// `Ok(None)` when nothing arrived this time round.
fn recv_one(
    sock: &UdpSocket,
    buf: &mut [u8],
    spin_until: Instant,
    deadline: Instant,
) -> std::io::Result<Option<(usize, SocketAddr)>> {
    match sock.recv_from(buf) {
        Ok(r) => return Ok(Some(r)),
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    let now = Instant::now();
    if now >= spin_until {
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

/// The coprocessor side: a bound socket serving one controller at a time.
pub(crate) struct UdpListener {
    sock: UdpSocket,
    addr: SocketAddr,
    geometry: Geometry,
    buf: Vec<u8>,
    pending: Option<(SocketAddr, Handshake)>,
}

impl UdpListener {
    /// Binds `addr` (e.g. `127.0.0.1:7878`).
    pub(crate) fn bind(addr: &str, geometry: Geometry) -> Result<UdpListener> {
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
            buf: vec![0u8; geometry.slot_bytes as usize + HANDSHAKE_BYTES],
            pending: None,
        })
    }

    /// The bound address (useful with port 0).
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    fn answer(&self, hello: &Handshake) -> Handshake {
        crate::link::answer_hello(hello, self.geometry)
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

impl Listener for UdpListener {
    fn accept<'a>(
        &'a mut self,
        wait: &WaitPolicy,
        stop: &'a (dyn Fn() -> bool + Sync),
    ) -> Result<Option<Box<dyn CoprocessorLink + 'a>>> {
        // Between sessions the server answers floor pings; it waits for the next datagram
        // with the same spin-then-block policy as in a session, counted from the last one,
        // so the floor it serves is the best case, not a wake-up per ping.
        let mut last = Instant::now();
        let mut polls = 0u32;
        loop {
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) && stop() {
                return Ok(None);
            }
            let (from, hello) = match self.pending.take() {
                Some(p) => p,
                None => {
                    let now = Instant::now();
                    let spin_until = wait.spin_until(last, last + Duration::from_secs(3600));
                    let got = recv_one(
                        &self.sock,
                        &mut self.buf,
                        spin_until,
                        now + backline_ring::MAX_NAP,
                    )
                    .map_err(Error::io(format!("receiving on udp {}", self.addr)))?;
                    let Some((n, from)) = got else {
                        if now >= spin_until && stop() {
                            return Ok(None);
                        }
                        continue;
                    };
                    last = Instant::now();
                    match classify(&self.buf[..n]) {
                        Some(Control::Floor) => {
                            let _ = send_all(&self.sock, &self.buf[..n], Some(from));
                            continue;
                        }
                        Some(Control::Handshake(h)) if h.kind == HandshakeKind::Reject => {
                            // A hello of another version: say so.
                            let r = Handshake::reject(RejectReason::Version, self.geometry);
                            let _ = send_all(&self.sock, &r.encode(), Some(from));
                            continue;
                        }
                        Some(Control::Handshake(h)) if h.kind == HandshakeKind::Hello => (from, h),
                        Some(Control::Garbage) => {
                            let r = Handshake::reject(RejectReason::Malformed, self.geometry);
                            let _ = send_all(&self.sock, &r.encode(), Some(from));
                            continue;
                        }
                        // Byes and stray messages of ended sessions.
                        _ => continue,
                    }
                }
            };
            let answer = self.answer(&hello);
            send_all(&self.sock, &answer.encode(), Some(from))
                .map_err(Error::io(format!("answering {from}")))?;
            if answer.kind != HandshakeKind::Accept {
                continue;
            }
            let ring = HeapRing::new(self.geometry)?;
            let view = ring.view();
            return Ok(Some(Box::new(UdpServerLink {
                l: self,
                peer: from,
                _ring: ring,
                view,
                out: vec![0u8; 0],
                last_seen: Instant::now(),
                stop,
            })));
        }
    }

    fn address(&self) -> String {
        format!("udp:{}", self.addr)
    }

    fn peer_address(&self) -> String {
        self.addr.to_string()
    }
}

struct UdpServerLink<'a> {
    l: &'a mut UdpListener,
    peer: SocketAddr,
    _ring: HeapRing,
    view: RingView,
    out: Vec<u8>,
    last_seen: Instant,
    stop: &'a (dyn Fn() -> bool + Sync),
}

impl UdpServerLink<'_> {
    /// Files one datagram. Returns false when the session is over.
    fn file(&mut self, n: usize, from: SocketAddr, expect: Seq) -> bool {
        let d = &self.l.buf[..n];
        match classify(d) {
            Some(Control::Floor) => {
                let _ = send_all(&self.l.sock, d, Some(from));
                true
            }
            Some(Control::Handshake(h)) => match (from == self.peer, h.kind) {
                (true, HandshakeKind::Bye) => false,
                (true, HandshakeKind::Hello) => {
                    // The same controller starts over.
                    self.l.pending = Some((from, h));
                    false
                }
                (false, HandshakeKind::Hello) if self.last_seen.elapsed() > IDLE_TAKEOVER => {
                    self.l.pending = Some((from, h));
                    false
                }
                (false, HandshakeKind::Hello) => {
                    let r = Handshake::reject(RejectReason::Busy, self.l.geometry);
                    let _ = send_all(&self.l.sock, &r.encode(), Some(from));
                    true
                }
                _ => true,
            },
            Some(Control::Garbage) => true,
            None if from == self.peer => {
                self.last_seen = Instant::now();
                if let Ok((h, payload)) = decode_message(d)
                    && h.kind == Kind::Request as u8
                    && in_window(h.seq, expect, self.view.geometry().depth)
                {
                    let _ = self
                        .view
                        .publish(Seq(h.seq), Kind::Request, h.decoder_id, 0, payload);
                }
                true
            }
            None => true,
        }
    }
}

impl CoprocessorLink for UdpServerLink<'_> {
    fn geometry(&self) -> Geometry {
        self.l.geometry
    }

    fn wait_request(&mut self, seq: Seq, wait: &WaitPolicy) -> Result<Option<Message<'_>>> {
        let mut start = Instant::now();
        let mut spin_until = wait.spin_until(start, start + Duration::from_secs(3600));
        let mut polls = 0u32;
        while self.view.poll(seq).is_none() {
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(64) && (self.stop)() {
                return Ok(None);
            }
            let now = Instant::now();
            if now > start + Duration::from_secs(3600) {
                start = now;
                spin_until = wait.spin_until(start, start + Duration::from_secs(3600));
            }
            let got = recv_one(
                &self.l.sock,
                &mut self.l.buf,
                spin_until,
                now + backline_ring::MAX_NAP,
            )
            .map_err(Error::io(format!("receiving on udp {}", self.l.addr)))?;
            if let Some((n, from)) = got {
                if !self.file(n, from, seq) {
                    return Ok(None);
                }
            } else if (self.stop)() {
                return Ok(None);
            }
        }
        Ok(self.view.poll(seq))
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
        send_all(&self.l.sock, &self.out, Some(self.peer))
            .map_err(Error::io(format!("replying to {}", self.peer)))
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

    /// Hello → accept, retransmitting every 100 ms until `timeout`.
    pub(crate) fn hello(
        &self,
        geometry: Geometry,
        in_flight: u32,
        timeout: Duration,
    ) -> Result<()> {
        let hello = Handshake::new(HandshakeKind::Hello, geometry, in_flight).encode();
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
                            continue; // a stale reply of an earlier session
                        }
                        let h = Handshake::decode(&buf[..n])?;
                        return crate::link::read_answer(
                            &h,
                            geometry,
                            &format!("udp:{}", self.peer),
                        );
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if refused(&e) => return Err(no_server()),
                    Err(e) => return Err(Error::io(format!("receiving from {}", self.peer))(e)),
                }
            }
        }
        Err(Error::Timeout {
            what: format!("an answer to our hello from udp:{}", self.peer),
            waited: t0.elapsed(),
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
}

impl UdpController {
    fn pump(&mut self, spin_until: Instant, deadline: Instant, expect: Seq) -> Result<()> {
        let got = match recv_one(&self.sock, &mut self.buf, spin_until, deadline) {
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
            self.pump(now + Duration::from_secs(1), now, seq)?;
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
        let spin_until = wait.spin_until(start, deadline);
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
            self.pump(spin_until, deadline, seq)?;
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
}

impl Drop for UdpController {
    fn drop(&mut self) {
        self.close();
    }
}

/// The udp floor: `rounds` raw 8-byte datagrams echoed by the server at `peer`, no header, no
/// session. The server must be idle or serving (it echoes pings in both states).
pub fn udp_floor(
    peer: &str,
    rounds: u64,
    wait: &WaitPolicy,
    timeout: Duration,
) -> Result<Vec<f64>> {
    let client = UdpClient::connect(peer)?;
    let sock = &client.sock;
    let mut rtts = Vec::with_capacity(rounds as usize);
    let mut buf = [0u8; 64];
    for i in 0..rounds {
        let mut ping = [0u8; 8];
        ping[..4].copy_from_slice(&FLOOR_MAGIC);
        ping[4..].copy_from_slice(&(i as u32).to_le_bytes());
        let t0 = Instant::now();
        let deadline = t0 + timeout;
        let spin_until = wait.spin_until(t0, deadline);
        send_all(sock, &ping, None).map_err(|e| {
            if refused(&e) {
                Error::NoPeer(format!("udp:{peer}"))
            } else {
                Error::io("sending a floor ping")(e)
            }
        })?;
        loop {
            match recv_one(sock, &mut buf, spin_until, deadline) {
                Ok(Some((8, _))) if buf[..8] == ping => break,
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
