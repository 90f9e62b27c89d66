//! A server of NVIDIA's realtime RPC frames (CUQR/CUQS, [`backline_wire::cuqr`]) over UDP:
//! `enqueue_syndromes`, `get_corrections` and `reset_decoder` answered by the streaming
//! decoders of a [`ResponderTable`] (`stream:` functions, one stream per decoder id), one
//! datagram per slot.
//!
//! The serving thread runs each call on its own thread (no hand-off), busy-polling its socket
//! for the spin budget and then blocking in naps of at most 20 ms, so that a stop is seen
//! promptly. Every datagram gets exactly one response, echoing its request id and timestamp:
//!
//! | what arrives | status |
//! |---|---|
//! | a datagram larger than the slot, shorter than a header, with a wrong magic, an unknown function id, arguments beyond the datagram or of the wrong length | `bad_request` (request id 0 when there is no header to echo) |
//! | a decoder id no stream serves | `invalid_decoder` |
//! | a syndrome mapping id other than 0, a negative counter, a bit count other than the round's, a return size other than the model's observables | `bad_request` |
//! | what the stream says ([`crate::stream`]): `not_ready`, `busy`, `syndromes_dropped`, … | that |
//!
//! Unlike NVIDIA's server, which answers `enqueue_syndromes` with nothing and reports a
//! failed enqueue at the next `get_corrections`, this one answers every enqueue (with its own
//! status), so that a client can time the call and see a refused round at once.

use std::net::{SocketAddr, UdpSocket};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use backline_probe::{Hop, Recorder};
use backline_ring::{SpinBudget, WaitPolicy};
use backline_wire::cuqr::{
    self, Call, CallStatus, ENQUEUE_FIXED_BYTES, HEADER_BYTES, ResponseHeader, align8,
};

use crate::{Responder, ResponderTable, StreamFunction};

/// Why a CUQR server could not start or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CuqrError {
    /// A function of the table is not a streaming decoder.
    #[error(
        "decoder id {id} serves `{name}`, not a streaming decoder: the CUQR protocol serves \
         stream: functions only"
    )]
    NotAStream {
        /// Its id.
        id: u32,
        /// Its name.
        name: String,
    },
    /// No function at all.
    #[error("no streaming decoder to serve (give --fn ID=stream:FILE.dem…)")]
    Empty,
    /// A slot that cannot carry a stream's frames.
    #[error("{0}")]
    Slot(String),
    /// The socket.
    #[error("{what}: {source}")]
    Io {
        /// What was done.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// Hop probes could not be allocated.
    #[error(transparent)]
    Probe(#[from] backline_probe::ProbeError),
}

/// Settings of a CUQR server.
#[derive(Debug, Clone, Copy)]
pub struct CuqrOptions {
    /// Bytes of one slot: the largest datagram taken, and the largest response sent.
    pub slot_bytes: usize,
    /// Spin budget of the receive wait.
    pub wait: WaitPolicy,
    /// Hop probes for this many frames (0: off).
    pub probe_frames: u64,
}

impl Default for CuqrOptions {
    fn default() -> CuqrOptions {
        CuqrOptions {
            slot_bytes: cuqr::DEFAULT_SLOT_BYTES,
            wait: WaitPolicy::default(),
            probe_frames: 0,
        }
    }
}

/// Counters of a server, by status.
#[derive(Debug, Default)]
pub struct CuqrStats {
    /// Frames answered.
    pub frames: AtomicU64,
    /// Frames answered with each status code (0..=6).
    pub by_status: [AtomicU64; 7],
}

impl CuqrStats {
    /// `status=count` of the statuses seen, e.g. `ok=120 bad_request=1`.
    pub fn render(&self) -> String {
        CallStatus::ALL
            .iter()
            .zip(&self.by_status)
            .filter_map(|(s, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then(|| format!("{}={n}", s.name()))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The streams of a table by decoder id, and the frame logic (no socket).
pub struct CuqrDispatch {
    streams: Vec<(u32, Arc<dyn Responder>)>,
    slot_bytes: usize,
}

impl CuqrDispatch {
    /// The streams of `table`; every entry must be one, and its frames must fit `slot_bytes`.
    pub fn new(table: &ResponderTable, slot_bytes: usize) -> Result<CuqrDispatch, CuqrError> {
        let mut streams = Vec::new();
        for (id, r) in table.entries() {
            let Some(s) = crate::as_stream(&**r) else {
                return Err(CuqrError::NotAStream {
                    id,
                    name: r.name().to_string(),
                });
            };
            let widest = (0..s.rounds())
                .filter_map(|k| s.round_bits(k))
                .max()
                .unwrap_or(0);
            let request = HEADER_BYTES + ENQUEUE_FIXED_BYTES + align8(widest.div_ceil(8));
            let response = HEADER_BYTES + s.num_observables().div_ceil(8);
            if request.max(response) > slot_bytes {
                return Err(CuqrError::Slot(format!(
                    "decoder id {id}: a round of {widest} syndrome bits takes a {request}-byte \
                     frame, more than the {slot_bytes}-byte slot; raise the slot size"
                )));
            }
            streams.push((id, r.clone()));
        }
        if streams.is_empty() {
            return Err(CuqrError::Empty);
        }
        Ok(CuqrDispatch {
            streams,
            slot_bytes,
        })
    }

    /// The stream of a decoder id.
    fn stream(&self, id: i64) -> Option<&StreamFunction> {
        let id = u32::try_from(id).ok()?;
        let i = self.streams.binary_search_by_key(&id, |e| e.0).ok()?;
        crate::as_stream(&*self.streams[i].1)
    }

    /// The `internal_error` response to `frame` (what a panic in a decoder is answered with).
    fn internal_error(&self, frame: &[u8], out: &mut [u8]) -> (usize, CallStatus) {
        let (request_id, timestamp) = cuqr::echo_fields(frame).unwrap_or((0, 0));
        let h = ResponseHeader {
            status: CallStatus::InternalError as i32,
            result_len: 0,
            request_id,
            timestamp,
        };
        let n = cuqr::encode_response(out, &h, &[]).unwrap_or(0);
        (n, CallStatus::InternalError)
    }

    /// Answers one frame into `out` (at least a slot long); returns the response's length and
    /// its status. Never panics on any input, never allocates.
    pub fn answer(&self, frame: &[u8], out: &mut [u8]) -> (usize, CallStatus) {
        let (request_id, timestamp) = cuqr::echo_fields(frame).unwrap_or((0, 0));
        // The header, after a result of `len` bytes has been written behind it (`out` holds a
        // slot, checked at start to fit the largest response).
        let reply = |status: CallStatus, len: usize, out: &mut [u8]| {
            let h = ResponseHeader {
                status: status as i32,
                result_len: len as u32,
                request_id,
                timestamp,
            };
            match cuqr::write_response_header(out, &h) {
                Ok(()) => (HEADER_BYTES + len, status),
                Err(_) => (0, status),
            }
        };
        if frame.len() > self.slot_bytes {
            return reply(CallStatus::BadRequest, 0, out);
        }
        let req = match cuqr::parse_request(frame) {
            Ok(r) => r,
            Err(e) => return reply(e.status(), 0, out),
        };
        let Some(s) = self.stream(req.call.decoder_id()) else {
            return reply(CallStatus::InvalidDecoder, 0, out);
        };
        match req.call {
            Call::EnqueueSyndromes {
                counter,
                mapping_id,
                num_bits,
                bits,
                ..
            } => {
                if mapping_id != 0 || counter < 0 {
                    return reply(CallStatus::BadRequest, 0, out);
                }
                if let Some(n) = usize::try_from(counter).ok().and_then(|c| s.round_bits(c))
                    && n as i64 != num_bits
                {
                    return reply(CallStatus::BadRequest, 0, out);
                }
                let o = s.enqueue(counter as u64, bits);
                reply(o.status, 0, out)
            }
            Call::GetCorrections {
                return_size, reset, ..
            } => {
                let Ok(size) = u64::try_from(return_size) else {
                    return reply(CallStatus::BadRequest, 0, out);
                };
                let body = out.get_mut(HEADER_BYTES..).unwrap_or(&mut []);
                let (o, n) = s.get_corrections(size, reset, body);
                reply(o.status, n, out)
            }
            Call::ResetDecoder { .. } => reply(s.reset().status, 0, out),
        }
    }
}

/// What a stopped server reports.
#[derive(Debug)]
pub struct CuqrReport {
    /// Frames answered, by status.
    pub stats: Arc<CuqrStats>,
    /// Hop stamps per frame (empty when off).
    pub hops: backline_probe::Table,
    /// The streams' shutdown lines.
    pub streams: Vec<String>,
}

/// A CUQR server on its own thread.
pub struct CuqrServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<CuqrStats>,
    thread: Option<JoinHandle<Result<backline_probe::Table, CuqrError>>>,
    dispatch: Arc<CuqrDispatch>,
}

impl CuqrServer {
    /// Binds `address` and starts serving the streams of `table`.
    pub fn start(
        address: &str,
        table: &ResponderTable,
        options: CuqrOptions,
    ) -> Result<CuqrServer, CuqrError> {
        let dispatch = Arc::new(CuqrDispatch::new(table, options.slot_bytes)?);
        let io = |what: String| move |source| CuqrError::Io { what, source };
        let sock = UdpSocket::bind(address).map_err(io(format!("binding {address}")))?;
        let addr = sock
            .local_addr()
            .map_err(io("reading the bound address".into()))?;
        sock.set_nonblocking(true)
            .map_err(io("setting the socket non-blocking".into()))?;
        let probes = if options.probe_frames > 0 {
            Recorder::with_rounds(options.probe_frames)?
        } else {
            Recorder::off()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(CuqrStats::default());
        let (d, st, s) = (dispatch.clone(), stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name(format!("cuqr:{}", addr.port()))
            .spawn(move || serve(sock, &d, options, &st, &s, probes))
            .map_err(io("starting the serving thread".into()))?;
        Ok(CuqrServer {
            addr,
            stop,
            stats,
            thread: Some(thread),
            dispatch,
        })
    }

    /// The bound address (what a client passes as its peer).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Counters so far.
    pub fn stats(&self) -> &CuqrStats {
        &self.stats
    }

    /// Whether the serving thread has ended (only on a socket error).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops serving and reports.
    pub fn stop(mut self) -> Result<CuqrReport, CuqrError> {
        self.stop.store(true, Ordering::Relaxed);
        let hops = match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r?,
            Some(Err(_)) => {
                return Err(CuqrError::Io {
                    what: "the serving thread".into(),
                    source: std::io::Error::other("it panicked"),
                });
            }
            None => backline_probe::Table::new(),
        };
        Ok(CuqrReport {
            stats: self.stats.clone(),
            hops,
            streams: self
                .dispatch
                .streams
                .iter()
                .filter_map(|(_, r)| r.report())
                .collect(),
        })
    }
}

impl Drop for CuqrServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The serving loop: receive, answer, send, until `stop`.
fn serve(
    sock: UdpSocket,
    d: &CuqrDispatch,
    options: CuqrOptions,
    stop: &AtomicBool,
    stats: &CuqrStats,
    mut probes: Recorder,
) -> Result<backline_probe::Table, CuqrError> {
    let io = |what: &'static str| {
        move |source| CuqrError::Io {
            what: what.to_string(),
            source,
        }
    };
    // One byte more than a slot, to see a datagram that is larger than one.
    let mut buf = vec![0u8; options.slot_bytes + 1];
    let mut out = vec![0u8; options.slot_bytes.max(HEADER_BYTES)];
    let spin = match options.wait.spin {
        SpinBudget::AlwaysBlock => Duration::ZERO,
        SpinBudget::NeverBlock => Duration::MAX,
        SpinBudget::For(t) => t,
    };
    backline_probe::enable_marks(probes.enabled());
    let mut frame = 0u64;
    let mut blocking = false;
    let mut last = Instant::now();
    // Relaxed: the flag carries no data; the thread only has to see it eventually.
    while !stop.load(Ordering::Relaxed) {
        let (n, peer) = match sock.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if !blocking && last.elapsed() >= spin {
                    // Idle past the budget: block in naps, so that a stop is seen.
                    sock.set_nonblocking(false)
                        .map_err(io("blocking the socket"))?;
                    sock.set_read_timeout(Some(backline_ring::MAX_NAP))
                        .map_err(io("setting the socket's timeout"))?;
                    blocking = true;
                } else if !blocking {
                    core::hint::spin_loop();
                }
                continue;
            }
            // An ICMP error of an earlier send (a client that went away): not ours to stop on.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => continue,
            Err(e) => return Err(io("receiving")(e)),
        };
        if blocking {
            sock.set_nonblocking(true)
                .map_err(io("unblocking the socket"))?;
            blocking = false;
        }
        probes.stamp(Hop::Received, frame);
        probes.stamp(Hop::RequestSeen, frame);
        probes.stamp(Hop::FnStart, frame);
        // A panic in a decoder becomes an internal error; the server lives on (the stream's
        // lock, poisoned, drops the half-booked shot when next taken).
        let answered = catch_unwind(AssertUnwindSafe(|| d.answer(&buf[..n], &mut out)));
        let (m, status) = answered.unwrap_or_else(|_| d.internal_error(&buf[..n], &mut out));
        probes.take_marks(frame);
        probes.stamp(Hop::FnEnd, frame);
        stats.frames.fetch_add(1, Ordering::Relaxed);
        stats.by_status[status as usize].fetch_add(1, Ordering::Relaxed);
        loop {
            match sock.send_to(&out[..m], peer) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
                // The peer is gone; its stream times out.
                Err(_) => break,
            }
        }
        probes.stamp(Hop::ReplySent, frame);
        frame += 1;
        last = Instant::now();
    }
    let mut t = backline_probe::Table::new();
    t.merge(probes.rows());
    t.truncate(frame as usize);
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use backline_wire::cuqr::{Request, parse_response};

    fn table(tag: &str) -> ResponderTable {
        let p = crate::stream::tests::model_file(&format!("cuqr-{tag}"));
        let mut t = ResponderTable::new();
        let spec = format!("stream:{}:window=2;commit=1;streams=2", p.display());
        for (id, r) in crate::stream_functions(&spec, 3).unwrap() {
            t.insert(id, r);
        }
        t
    }

    fn ask(d: &CuqrDispatch, id: u32, call: Call<'_>) -> (i32, Vec<u8>) {
        let mut f = [0u8; 256];
        let n = cuqr::encode_request(&mut f, id, 77, &call).unwrap();
        let mut out = [0u8; 256];
        let (m, s) = d.answer(&f[..n], &mut out);
        let (h, r) = parse_response(&out[..m]).unwrap();
        assert_eq!((h.request_id, h.timestamp, h.status), (id, 77, s as i32));
        (h.status, r.to_vec())
    }

    fn enq(decoder_id: i64, counter: i64, bits: &[u8]) -> Call<'_> {
        Call::EnqueueSyndromes {
            decoder_id,
            counter,
            mapping_id: 0,
            num_bits: 2,
            bits,
        }
    }

    #[test]
    fn frames_drive_the_streams_and_every_bad_frame_has_a_status() {
        let d = CuqrDispatch::new(&table("frames"), 256).unwrap();
        let gc = |decoder_id, return_size, reset| Call::GetCorrections {
            decoder_id,
            return_size,
            reset,
        };
        assert_eq!(ask(&d, 1, gc(3, 1, false)).0, CallStatus::NotReady as i32);
        assert_eq!(ask(&d, 2, enq(3, 0, &[1])).0, 0);
        assert_eq!(ask(&d, 3, enq(3, 1, &[0])).0, 0);
        assert_eq!(ask(&d, 4, enq(3, 2, &[0])).0, 0);
        assert_eq!(ask(&d, 5, gc(3, 1, true)), (0, vec![1]));
        // Bad requests of every kind.
        for (call, want) in [
            (enq(9, 0, &[0]), CallStatus::InvalidDecoder),
            (enq(-1, 0, &[0]), CallStatus::InvalidDecoder),
            (
                Call::EnqueueSyndromes {
                    decoder_id: 3,
                    counter: 0,
                    mapping_id: 1,
                    num_bits: 2,
                    bits: &[0],
                },
                CallStatus::BadRequest,
            ),
            (
                Call::EnqueueSyndromes {
                    decoder_id: 3,
                    counter: 0,
                    mapping_id: 0,
                    num_bits: 3,
                    bits: &[0],
                },
                CallStatus::BadRequest,
            ),
            (enq(3, -2, &[0]), CallStatus::BadRequest),
            (enq(3, 0, &[4]), CallStatus::BadRequest),
            (gc(3, 2, false), CallStatus::BadRequest),
            (gc(3, -1, false), CallStatus::BadRequest),
            (gc(4, 1, false), CallStatus::NotReady),
            (enq(4, 1, &[0]), CallStatus::SyndromesDropped),
            (gc(4, 1, false), CallStatus::SyndromesDropped),
            (Call::ResetDecoder { decoder_id: 4 }, CallStatus::Ok),
            (
                Call::ResetDecoder { decoder_id: 5 },
                CallStatus::InvalidDecoder,
            ),
        ] {
            assert_eq!(ask(&d, 9, call).0, want as i32, "{call:?}");
        }
        // Frames that do not parse: a wrong magic, an unknown function, arguments beyond the
        // datagram, a datagram beyond the slot, no header at all.
        let mut f = [0u8; 300];
        let n = cuqr::encode_request(&mut f, 6, 1, &enq(3, 0, &[0])).unwrap();
        let mut out = [0u8; 256];
        let bad = |frame: &[u8], out: &mut [u8]| {
            let (m, s) = d.answer(frame, out);
            let (h, r) = parse_response(&out[..m]).unwrap();
            assert!(r.is_empty());
            (h.status, h.request_id, s)
        };
        let mut g = f;
        g[0] = 0;
        assert_eq!(bad(&g[..n], &mut out), (2, 6, CallStatus::BadRequest));
        let mut g = f;
        g[4] = 0;
        assert_eq!(bad(&g[..n], &mut out).0, 2);
        assert_eq!(bad(&f[..n - 9], &mut out).0, 2);
        assert_eq!(bad(&f[..257], &mut out).0, 2);
        assert_eq!(bad(&f[..5], &mut out), (2, 0, CallStatus::BadRequest));
        // The stream was not touched by any of them.
        assert_eq!(ask(&d, 7, enq(3, 0, &[0])).0, 0);
        let r: Request<'_> = cuqr::parse_request(&f[..n]).unwrap();
        assert_eq!(r.header.request_id, 6);
    }

    #[test]
    fn garbage_and_mutated_frames_always_get_one_parseable_answer() {
        let d = CuqrDispatch::new(&table("garbage"), 256).unwrap();
        let mut valid = Vec::new();
        for c in [
            enq(3, 0, &[1]),
            Call::GetCorrections {
                decoder_id: 4,
                return_size: 1,
                reset: true,
            },
            Call::ResetDecoder { decoder_id: 3 },
        ] {
            let mut f = [0u8; 64];
            let n = cuqr::encode_request(&mut f, 1, 2, &c).unwrap();
            valid.push(f[..n].to_vec());
        }
        // xorshift64: byte flips, truncations and extensions of valid frames, and noise.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut out = [0u8; 256];
        for i in 0..20_000 {
            let mut f = valid[i % valid.len()].clone();
            match next() % 4 {
                0 => {
                    let k = next() as usize % f.len();
                    f[k] ^= 1 << (next() % 8);
                }
                1 => f.truncate(next() as usize % f.len()),
                2 => f.extend((0..next() % 300).map(|_| next() as u8)),
                _ => f = (0..next() % 80).map(|_| next() as u8).collect(),
            }
            let (m, status) = d.answer(&f, &mut out);
            let (h, r) = parse_response(&out[..m]).expect("a response frame");
            assert_eq!(h.status, status as i32);
            assert!(r.len() <= 1);
        }
    }

    #[test]
    fn tables_that_cannot_be_served_are_refused() {
        let mut t = table("refuse");
        assert!(matches!(CuqrDispatch::new(&t, 40), Err(CuqrError::Slot(_))));
        t.insert(0, Arc::new(crate::Echo));
        let e = CuqrDispatch::new(&t, 256).err().unwrap().to_string();
        assert!(e.contains("decoder id 0 serves `echo`"), "{e}");
        assert!(matches!(
            CuqrDispatch::new(&ResponderTable::new(), 256),
            Err(CuqrError::Empty)
        ));
    }

    #[test]
    fn a_client_over_loopback_udp() {
        let server = CuqrServer::start(
            "127.0.0.1:0",
            &table("udp"),
            CuqrOptions {
                probe_frames: 16,
                ..CuqrOptions::default()
            },
        )
        .unwrap();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(server.local_addr()).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut f = [0u8; 256];
        let mut r = [0u8; 256];
        let calls = [
            enq(3, 0, &[1]),
            enq(3, 1, &[0]),
            enq(3, 2, &[0]),
            Call::GetCorrections {
                decoder_id: 3,
                return_size: 1,
                reset: true,
            },
        ];
        for (i, c) in calls.iter().enumerate() {
            let n = cuqr::encode_request(&mut f, i as u32, 0, c).unwrap();
            sock.send(&f[..n]).unwrap();
            let m = sock.recv(&mut r).unwrap();
            let (h, res) = parse_response(&r[..m]).unwrap();
            assert_eq!((h.status, h.request_id), (0, i as u32));
            if i == 3 {
                assert_eq!(res, [1]);
            }
        }
        // Garbage gets an answer too.
        sock.send(b"hello").unwrap();
        let m = sock.recv(&mut r).unwrap();
        assert_eq!(parse_response(&r[..m]).unwrap().0.status, 2);
        let report = server.stop().unwrap();
        assert_eq!(report.stats.render(), "ok=4 bad_request=1");
        assert_eq!(report.hops.rows().len(), 5);
        assert!(report.hops.hops().contains(&Hop::WindowReady));
        assert!(
            report.streams[0].contains("1 shots finished"),
            "{:?}",
            report.streams
        );
    }
}
