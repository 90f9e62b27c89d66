//! One ring of a CUQR server: a UDP socket, the decoders it serves and the thread that
//! receives each datagram, answers it and sends the answer. NVIDIA's shape is one ring per
//! decoder; backline's own, one ring for every decoder.
//!
//! A datagram is handled as NVIDIA's UDP transceiver and decoding server handle a slot
//! (cuda-quantum `udp_transceiver.cpp`, cudaqx `decoding_server_cqr.cpp`, `RpcSlot.h`):
//!
//! 1. an empty datagram, or one longer than the slot, is dropped;
//! 2. the datagram is copied into a zeroed slot, which is what is parsed;
//! 3. a datagram shorter than its 24-byte header, or than `24 + arg_len` (a truncated frame),
//!    a wrong magic or an unknown function id: dropped (a truncated frame counted `short`:
//!    a `reset_decoder` cut one byte short resets nothing);
//! 4. no decoder id (fewer than 8 bytes of arguments): `bad_request`;
//! 5. a decoder id this ring does not serve: `invalid_decoder`;
//! 6. arguments that do not parse: `bad_request` (for an enqueue, the decoder's shot fails
//!    too, as does one with a syndrome mapping id other than 0);
//! 7. the call, answered by its decoder ([`super::worker`]; a decoder that decodes inline
//!    decodes here, inside the call that completes a window).
//!
//! Every answer is one full slot: the response, then zeros; it goes to the sender of the
//! request (the ring's last sender, as NVIDIA's; with one call at a time per client, each
//! client gets the answers to its own calls).

use std::net::{SocketAddr, UdpSocket};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use backline_probe::{Hop, Recorder};
use backline_ring::SpinBudget;
use backline_wire::cuqr::{self, Call, CallStatus, FrameError, Function, ResponseHeader};

use super::worker::Decoder;
use super::{CuqrError, CuqrOptions, CuqrStats, DropReason, FrameTag};

/// What became of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handled {
    /// Not answered.
    Dropped(DropReason),
    /// Answered with this status (the response fills the slot).
    Answered(CallStatus),
}

/// The decoders of one socket and the frame logic (no socket: see [`serve`]).
pub(super) struct Ring {
    /// Sorted by id.
    pub decoders: Vec<Decoder>,
    slot_bytes: usize,
}

impl Ring {
    /// A ring of `decoders` (sorted by id here), for slots of `slot_bytes`.
    pub fn new(mut decoders: Vec<Decoder>, slot_bytes: usize) -> Ring {
        decoders.sort_by_key(|d| d.id);
        Ring {
            decoders,
            slot_bytes,
        }
    }

    /// Where decoder `id` decodes.
    pub fn mode_of(&self, id: u32) -> Option<crate::stream::DecodeMode> {
        let i = self.decoders.binary_search_by_key(&id, |d| d.id).ok()?;
        Some(self.decoders[i].mode())
    }

    fn decoder(&mut self, id: i64) -> Option<&mut Decoder> {
        let id = u32::try_from(id).ok()?;
        let i = self.decoders.binary_search_by_key(&id, |d| d.id).ok()?;
        Some(&mut self.decoders[i])
    }

    /// Handles one datagram of `len` bytes already copied into `slot` (a whole slot, zeroed
    /// past the datagram), received at `arrived`: the answer goes into `out` (a whole slot),
    /// what it was about into `tag`. Never panics on any input, never allocates.
    pub fn answer(
        &mut self,
        slot: &[u8],
        len: usize,
        arrived: Instant,
        out: &mut [u8],
        tag: &mut FrameTag,
        stop: &dyn Fn() -> bool,
    ) -> Handled {
        let frame = &slot[..len.min(slot.len())];
        let (header, function) = match cuqr::parse_header(frame) {
            Ok(h) => h,
            Err(_) if from_a_backline_controller(slot) => return told_backline_controller(out),
            Err(e) => return Handled::Dropped(DropReason::of(e)),
        };
        if header.arg_len as usize > frame.len() - cuqr::HEADER_BYTES {
            return Handled::Dropped(DropReason::Short);
        }
        *tag = FrameTag {
            request_id: header.request_id,
            function_id: header.function_id,
            ..FrameTag::default()
        };
        let out = &mut out[..self.slot_bytes];
        out.fill(0);
        let reply = |out: &mut [u8], status: CallStatus, len: usize| {
            let h = ResponseHeader {
                status: status as i32,
                result_len: len as u32,
                request_id: header.request_id,
                timestamp: header.timestamp,
            };
            // The slot holds a header (checked when the server starts).
            let _ = cuqr::write_response_header(out, &h);
            Handled::Answered(status)
        };
        let Some(id) = cuqr::peek_decoder_id(slot) else {
            return reply(out, CallStatus::BadRequest, 0);
        };
        tag.decoder_id = id;
        let now = arrived;
        let Some(d) = self.decoder(id) else {
            return reply(out, CallStatus::InvalidDecoder, 0);
        };
        let req = match cuqr::parse_request(slot) {
            Ok(r) => r,
            Err(_) => {
                if function == Function::EnqueueSyndromes {
                    d.fail(now, stop);
                } else {
                    d.note_refused();
                }
                return reply(out, CallStatus::BadRequest, 0);
            }
        };
        match req.call {
            Call::EnqueueSyndromes {
                counter,
                mapping_id,
                num_bits,
                bits,
                ..
            } => {
                tag.counter = counter;
                if mapping_id != 0 {
                    d.fail(now, stop);
                    return reply(out, CallStatus::BadRequest, 0);
                }
                let status = d.enqueue(counter, num_bits, bits, now, stop);
                reply(out, status, 0)
            }
            Call::GetCorrections {
                return_size, reset, ..
            } => {
                let body = &mut out[cuqr::HEADER_BYTES..];
                let (status, n) = d.get_corrections(return_size, reset, body, now, stop);
                reply(out, status, n)
            }
            Call::ResetDecoder { .. } => {
                let status = d.reset(now, stop);
                reply(out, status, 0)
            }
        }
    }

    /// The `internal_error` answer to `slot` (what a panic while answering it becomes).
    fn internal_error(&self, slot: &[u8], out: &mut [u8]) -> Handled {
        let (request_id, timestamp) = cuqr::echo_fields(slot).unwrap_or((0, 0));
        let out = &mut out[..self.slot_bytes];
        out.fill(0);
        let h = ResponseHeader {
            status: CallStatus::InternalError as i32,
            result_len: 0,
            request_id,
            timestamp,
        };
        let _ = cuqr::write_response_header(out, &h);
        Handled::Answered(CallStatus::InternalError)
    }
}

/// Whether a frame that is no CUQR request starts as a backline controller's hello or udp
/// floor ping does (`backline bench` or `backline sim` pointed at this server by mistake).
fn from_a_backline_controller(slot: &[u8]) -> bool {
    slot.get(..4).is_some_and(|m| {
        m == backline_wire::HANDSHAKE_MAGIC.as_slice()
            || m == backline_wire::FLOOR_PING_MAGIC.as_slice()
    })
}

/// The one deliberate answer to a frame NVIDIA's server would drop: a backline controller's
/// hello or floor ping gets `bad_request` (request id and timestamp 0), so that it says at
/// once that it reached a CUQR server instead of waiting out its set-up timeout.
fn told_backline_controller(out: &mut [u8]) -> Handled {
    out.fill(0);
    let h = ResponseHeader {
        status: CallStatus::BadRequest as i32,
        result_len: 0,
        request_id: 0,
        timestamp: 0,
    };
    let _ = cuqr::write_response_header(out, &h);
    Handled::Answered(CallStatus::BadRequest)
}

impl DropReason {
    /// Why a frame that does not parse is dropped.
    fn of(e: FrameError) -> DropReason {
        match e {
            FrameError::UnknownFunction(_) => DropReason::Function,
            FrameError::Short(0) => DropReason::Empty,
            FrameError::Short(_) => DropReason::Short,
            _ => DropReason::Magic,
        }
    }
}

/// What the serving thread of a ring keeps per frame when hop probes are on.
pub(super) struct Probes {
    pub recorder: Recorder,
    /// One per recorded frame, allocated with the recorder.
    pub tags: Vec<FrameTag>,
}

/// Receives one datagram into `buf` (one byte more than a slot), spinning for the spin
/// budget since the last one, then blocking in naps so that a stop is seen.
struct Receiver {
    sock: UdpSocket,
    spin: Duration,
    blocking: bool,
    last: Instant,
}

impl Receiver {
    fn io(what: &'static str) -> impl Fn(std::io::Error) -> CuqrError {
        move |source| CuqrError::Io {
            what: what.to_string(),
            source,
        }
    }

    /// A datagram, `None` when there is none yet (the caller checks its stop flag).
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<(usize, SocketAddr)>, CuqrError> {
        match self.sock.recv_from(buf) {
            Ok(r) => {
                if self.blocking {
                    self.sock
                        .set_nonblocking(true)
                        .map_err(Self::io("unblocking the socket"))?;
                    self.blocking = false;
                }
                Ok(Some(r))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if !self.blocking && self.last.elapsed() >= self.spin {
                    // Idle past the budget: block in naps, so that a stop is seen.
                    self.sock
                        .set_nonblocking(false)
                        .map_err(Self::io("blocking the socket"))?;
                    self.sock
                        .set_read_timeout(Some(backline_ring::MAX_NAP))
                        .map_err(Self::io("setting the socket's timeout"))?;
                    self.blocking = true;
                } else if !self.blocking {
                    core::hint::spin_loop();
                }
                Ok(None)
            }
            // An ICMP error of an earlier send (a client that went away): not ours to stop on.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(None),
            Err(e) => Err(Self::io("receiving")(e)),
        }
    }

    /// Sends `out` to `peer`; a peer that is gone is not an error (its shot idles out).
    fn send(&self, out: &[u8], peer: SocketAddr) {
        loop {
            match self.sock.send_to(out, peer) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(_) => break,
            }
        }
    }
}

/// The serving loop of a ring: receive, answer, send, until `stop`; returns the frames
/// answered (the rows of `probes`).
pub(super) fn serve(
    sock: UdpSocket,
    ring: &mut Ring,
    options: &CuqrOptions,
    stop: &AtomicBool,
    stats: &CuqrStats,
    probes: &mut Probes,
) -> Result<u64, CuqrError> {
    let slot = ring.slot_bytes;
    // One byte more than a slot, to see a datagram that is larger than one.
    let mut buf = vec![0u8; slot + 1];
    let mut out = vec![0u8; slot];
    let mut rx = Receiver {
        sock,
        spin: match options.wait.spin {
            SpinBudget::AlwaysBlock => Duration::ZERO,
            SpinBudget::NeverBlock => Duration::MAX,
            SpinBudget::For(t) => t,
        },
        blocking: false,
        last: Instant::now(),
    };
    backline_probe::enable_marks(probes.recorder.enabled());
    // Relaxed: the flag carries no data; the thread only has to see it eventually.
    let stopped = || stop.load(Ordering::Relaxed);
    let mut frame = 0u64;
    // The last call ran an inline decode, and no receive has come back empty since: a
    // datagram received now waited behind it.
    let mut after_decode = false;
    while !stopped() {
        let Some((n, peer)) = rx.recv(&mut buf)? else {
            after_decode = false;
            continue;
        };
        rx.last = Instant::now();
        let arrived = rx.last;
        if std::mem::take(&mut after_decode) {
            stats.waited.fetch_add(1, Ordering::Relaxed);
        }
        probes.recorder.stamp(Hop::Received, frame);
        let reason = match n {
            0 => Some(DropReason::Empty),
            n if n > slot => Some(DropReason::Oversize),
            _ => None,
        };
        if let Some(r) = reason {
            stats.dropped[r as usize].fetch_add(1, Ordering::Relaxed);
            continue;
        }
        // The slot is zeroed past the datagram, as NVIDIA's transceiver does.
        buf[n..slot].fill(0);
        probes.recorder.stamp(Hop::RequestSeen, frame);
        probes.recorder.stamp(Hop::FnStart, frame);
        let mut tag = FrameTag::default();
        // A panic while answering becomes an internal error; the ring lives on.
        let handled = catch_unwind(AssertUnwindSafe(|| {
            ring.answer(&buf[..slot], n, arrived, &mut out, &mut tag, &stopped)
        }))
        .unwrap_or_else(|_| ring.internal_error(&buf[..slot], &mut out));
        let status = match handled {
            Handled::Dropped(r) => {
                // Its stamps are overwritten by the next frame's.
                stats.dropped[r as usize].fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Handled::Answered(s) => s,
        };
        probes.recorder.take_marks(frame);
        probes.recorder.stamp(Hop::FnEnd, frame);
        stats.frames.fetch_add(1, Ordering::Relaxed);
        stats.by_status[status as usize].fetch_add(1, Ordering::Relaxed);
        rx.send(&out, peer);
        probes.recorder.stamp(Hop::ReplySent, frame);
        for d in &mut ring.decoders {
            d.wake();
            after_decode |= d.take_decoded();
        }
        if let Some(t) = probes.tags.get_mut(frame as usize) {
            *t = FrameTag {
                status: status as i32,
                ..tag
            };
        }
        frame += 1;
    }
    Ok(frame)
}
