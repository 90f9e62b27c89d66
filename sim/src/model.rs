//! Behavioural models around the engine: the ERNIC RDMA engine's data path (a model: the IP
//! itself cannot run here) and what answers its requests — an in-simulation responder, or a
//! real coprocessor through the [`crate::bridge`].
//!
//! What the ERNIC model does, per WQE, as PG332's "ERNIC TX Path" describes it:
//!
//! 1. The engine writes the 64-byte WQE (PG332 Table 2-1, `backline_board::ernic::wqe`) into
//!    the SQ memory and rings the SQ producer-index doorbell over the hardware-handshake
//!    port.
//! 2. After `fetch_cycles` the model reads the WQE, checks it (opcode WRITE or WRITE_IMM,
//!    length, `RTAG` = the peer's key, remote address the tail of a ring slot, local address
//!    inside the request buffer), and reads the message — `LENGTH` bytes from `LADDR`, which
//!    need not be word aligned — from the engine's request buffer, one word per cycle
//!    through the request read port.
//! 3. The RDMA WRITE travels the fabric (`fabric_latency_cycles`, plus an optional uniform
//!    jitter drawn per leg from a seeded generator) to the remote side; its acknowledgement
//!    travels back, and then the completion (the WQE's `WRID`) is raised.
//! 4. The remote side answers: the in-simulation responder decodes the message with
//!    `backline-wire` and takes `service_cycles`; or the bridge relays it to a real
//!    coprocessor and the service time is what that took, measured, converted to cycles.
//!    The reply (wire format v1, `seq` last) comes back over the fabric and the model
//!    writes it into the round's reply slot as the ERNIC writes an incoming RDMA WRITE: the
//!    bytes of the message image and nothing else (the engine's reply memory has no byte
//!    enables, so the words the image only partly covers are merged with what the model
//!    last wrote there — it is the memory's only writer between soft resets).
//!
//! **Timing model.** The simulated clock does not run while a real coprocessor computes:
//! the simulation blocks on the bridge and then places the reply `fabric + service +
//! fabric` cycles after the request left, with `service` the measured time. Every round's
//! RTT is therefore simulated engine cycles + modelled fabric + (measured or modelled)
//! service; [`RoundSplit`] records the last two per round, so the engine's share is the
//! rest. The default fabric latency is the reference's measured one-way figure
//! ([`REFERENCE_ONE_WAY_NS`]).
//!
//! The model's own round trip of a round is the cycle of the reply's `seq` word write minus
//! the doorbell cycle; the engine must record exactly that plus its documented FSM overhead.

use std::collections::VecDeque;

use backline_board::ernic::wqe;
use backline_regmap as rm;
use backline_wire::{HEADER_BYTES, Kind, SlotHeader, Status, WIRE_VERSION};

use crate::backend::{Inputs, Outputs};
use crate::bridge::{Bridge, Loss};

/// One-way fabric latency of the reference board's link, ns: half the round trip of the
/// default fabric model ([`crate::fabric`], its parts calibrated to the reference's measured
/// FPGA → CPU-echo round trip of 2.305 µs with the engine's cycles and the echo's service
/// counted apart). A test checks it against the model.
pub const REFERENCE_ONE_WAY_NS: u64 = 1012;

/// Bytes of the engine's request buffer the ERNIC may read (16 payload + 16 header bytes).
pub const REQUEST_BUFFER_BYTES: u32 = 32;

/// Rounds whose [`RoundSplit`] is kept (the trace RAM's depth: later rounds are not traced).
pub const SPLIT_DEPTH: usize = rm::TRACE_DEPTH as usize;

/// What the in-simulation remote side does with each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responder {
    /// Returns the request payload (truncated or zero-padded to the reply length).
    Echo,
    /// Steane [[7,1,3]] lookup: payload byte 0 is the syndrome, reply word 0 the correction
    /// as a bit mask (bit q: flip qubit q).
    Steane,
    /// Never answers (the ERNIC completion still arrives): exercises the reply timeout.
    Silent,
}

impl Responder {
    /// Name as used on the command line and in traces.
    pub const fn name(self) -> &'static str {
        match self {
            Responder::Echo => "echo",
            Responder::Steane => "steane",
            Responder::Silent => "silent",
        }
    }

    /// The reply payload word 0 for a request payload word 0.
    pub fn reply_word0(self, request_word0: u32) -> u32 {
        match self {
            Responder::Echo | Responder::Silent => request_word0,
            Responder::Steane => {
                u32::from(backline_decoders::steane::correction(request_word0 as u8))
            }
        }
    }
}

/// Settings of the ERNIC and responder models.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// One-way fabric latency, cycles.
    pub fabric_latency_cycles: u64,
    /// In-simulation responder service time, cycles (a bridged coprocessor's is measured).
    pub service_cycles: u64,
    /// Extra delay on each fabric leg, uniform in `0 ..= jitter_cycles` (0: a fixed latency).
    pub jitter_cycles: u64,
    /// Seed of the jitter draws.
    pub jitter_seed: u64,
    /// ERNIC's doorbell-to-WQE-fetch latency, cycles (at least 1).
    pub fetch_cycles: u64,
    /// The in-simulation responder (`Silent` also silences a bridge: nothing is delivered).
    pub responder: Responder,
    /// Reply payload bytes the in-simulation responder returns (1 ..= 48).
    pub reply_len: u32,
    /// Base byte address of the SQ memory (ERNIC QP's SQBA as the engine addresses it).
    pub sq_base: u32,
    /// SQ depth in WQEs (a power of two).
    pub sq_depth: u32,
    /// Bus address of the engine's request buffer (what `WQE_LADDR` points at).
    pub request_buffer: u64,
    /// The responder's request ring: remote virtual address.
    pub remote_va: u64,
    /// The responder's memory key.
    pub rkey: u32,
    /// Slots of the request and reply rings.
    pub ring_depth: u32,
    /// Keep one [`RoundRecord`] per round.
    pub record_rounds: bool,
}

impl Default for ModelConfig {
    /// Settings that match the engine's register reset values.
    fn default() -> Self {
        ModelConfig {
            fabric_latency_cycles: 100,
            service_cycles: 20,
            jitter_cycles: 0,
            jitter_seed: 1,
            fetch_cycles: 4,
            responder: Responder::Echo,
            reply_len: 4,
            sq_base: 0,
            sq_depth: 16,
            request_buffer: 0,
            remote_va: 0,
            rkey: 0,
            ring_depth: rm::MAX_RING_DEPTH,
            record_rounds: true,
        }
    }
}

/// What the model saw of one round (indexed by round number).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundRecord {
    /// Cycle of the first word of this round's WQE written into the SQ.
    pub wqe_write: Option<u64>,
    /// Cycle the doorbell for this round was seen.
    pub doorbell: Option<u64>,
    /// Cycle the completion was raised.
    pub completion: Option<u64>,
    /// Cycle the reply's `seq` word was written into the reply memory.
    pub reply_seq: Option<u64>,
}

impl RoundRecord {
    /// The model's round trip: reply `seq` write minus doorbell.
    pub fn model_rtt_cycles(&self) -> Option<u64> {
        Some(self.reply_seq? - self.doorbell?)
    }
}

/// The parts of one round's RTT that are not the simulated board's own cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundSplit {
    /// Modelled fabric: the request's leg plus the reply's, cycles.
    pub fabric_cycles: u32,
    /// The remote side's service time, cycles: measured for a bridged coprocessor,
    /// `service_cycles` for the in-simulation responder.
    pub service_cycles: u32,
}

/// Counters of the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelStats {
    /// Doorbells seen.
    pub doorbells: u64,
    /// WQEs executed.
    pub wqes: u64,
    /// Completions raised.
    pub completions: u64,
    /// Replies delivered.
    pub replies: u64,
    /// Corrections the engine handed to the stimulus side (hw-loop).
    pub corrections: u64,
    /// Protocol violations seen (bad WQE, bad address, doorbell out of order...).
    pub errors: u64,
    /// The first violation, described.
    pub first_error: Option<String>,
    /// Rounds whose reply a bridged coprocessor did not deliver.
    pub lost: u64,
    /// The first loss, with its round.
    pub first_loss: Option<(u64, Loss)>,
}

#[derive(Debug, Clone)]
struct Wqe {
    round: u64,
    wrid: u16,
    /// Byte offset of the message in the request buffer.
    offset: u32,
    len: u32,
}

#[derive(Debug)]
struct ReqRead {
    wqe: Wqe,
    next: u32,
    last: u32,
    issued: bool,
    words: Vec<u32>,
}

/// The ERNIC model with the remote side behind it.
#[derive(Debug)]
pub struct ErnicModel {
    /// Settings; may be changed between rounds.
    pub config: ModelConfig,
    sq_mem: Vec<u32>,
    rpl_shadow: Vec<u32>,
    posted: u64,
    fetch: VecDeque<(u64, u64)>,
    read: Option<ReqRead>,
    cq: VecDeque<(u64, u16, u64)>,
    rx: VecDeque<(u64, u32, u32, Option<u64>)>,
    wqe_writes: u64,
    records: Vec<RoundRecord>,
    splits: Vec<RoundSplit>,
    stats: ModelStats,
    rng: u64,
    bridge: Option<Bridge>,
}

/// Bytes of SQ memory the model holds (1024 WQEs).
pub const SQ_MEM_BYTES: u32 = 64 * 1024;

impl ErnicModel {
    /// A model with `config`.
    pub fn new(config: ModelConfig) -> ErnicModel {
        ErnicModel {
            sq_mem: vec![0; SQ_MEM_BYTES as usize / 4],
            rpl_shadow: vec![0; 1 << rm::REPLY_ADDR_BITS],
            posted: 0,
            fetch: VecDeque::new(),
            read: None,
            cq: VecDeque::new(),
            rx: VecDeque::new(),
            wqe_writes: 0,
            records: Vec::new(),
            splits: Vec::new(),
            stats: ModelStats::default(),
            rng: config.jitter_seed.max(1),
            config,
            bridge: None,
        }
    }

    /// Replaces the in-simulation responder with a real coprocessor behind `bridge`.
    pub fn attach_bridge(&mut self, bridge: Bridge) {
        self.bridge = Some(bridge);
    }

    /// Takes the bridge back (to move it into a fresh model after a soft reset).
    pub fn take_bridge(&mut self) -> Option<Bridge> {
        self.bridge.take()
    }

    /// The bridge, when one is attached.
    pub fn bridge(&self) -> Option<&Bridge> {
        self.bridge.as_ref()
    }

    /// A fresh model for the same settings, keeping the bridge (after an engine soft reset,
    /// whose reply-memory sweep also zeroes what the model remembers of it).
    pub fn renewed(&mut self, config: ModelConfig) -> ErnicModel {
        let mut m = ErnicModel::new(config);
        m.bridge = self.bridge.take();
        m
    }

    /// One fabric leg: the latency plus a uniform jitter draw (xorshift64*).
    fn leg(&mut self) -> u64 {
        let j = self.config.jitter_cycles;
        if j == 0 {
            return self.config.fabric_latency_cycles;
        }
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        self.config.fabric_latency_cycles + r % (j + 1)
    }

    /// Forgets all rounds (after an engine soft reset).
    pub fn reset(&mut self) {
        let cfg = self.config.clone();
        *self = self.renewed(cfg);
    }

    /// Counters.
    pub fn stats(&self) -> &ModelStats {
        &self.stats
    }

    /// Per-round records (empty unless `record_rounds`).
    pub fn records(&self) -> &[RoundRecord] {
        &self.records
    }

    /// Fabric and service cycles of each round (by round number; rounds whose reply never
    /// came have their fabric legs and no service).
    pub fn splits(&self) -> &[RoundSplit] {
        &self.splits
    }

    fn error(&mut self, msg: String) {
        self.stats.errors += 1;
        if self.stats.first_error.is_none() {
            self.stats.first_error = Some(msg);
        }
    }

    fn record(&mut self, round: u64) -> Option<&mut RoundRecord> {
        if !self.config.record_rounds {
            return None;
        }
        let i = round as usize;
        if self.records.len() <= i {
            self.records.resize(i + 1, RoundRecord::default());
        }
        Some(&mut self.records[i])
    }

    fn split(&mut self, round: u64, s: RoundSplit) {
        let i = round as usize;
        if i >= SPLIT_DEPTH {
            return;
        }
        if self.splits.len() <= i {
            self.splits.resize(i + 1, RoundSplit::default());
        }
        self.splits[i] = s;
    }

    /// True while the model must see every cycle (a request read is in progress or a port
    /// action is due at `now`).
    pub fn busy_at(&self, now: u64) -> bool {
        self.read.is_some() || self.next_event().is_some_and(|t| t <= now)
    }

    /// The next cycle at which the model acts on its own.
    pub fn next_event(&self) -> Option<u64> {
        [
            self.fetch.front().map(|f| f.0),
            self.cq.front().map(|c| c.0),
            self.rx.front().map(|r| r.0),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Observes the engine's outputs of cycle `now` and drives its ERNIC-side inputs.
    pub fn cycle(&mut self, now: u64, out: &Outputs, inp: &mut Inputs) {
        if out.sq_wr_en != 0 {
            self.sq_write(now, out.sq_wr_addr, out.sq_wr_data);
        }
        if out.db_valid != 0 {
            self.stats.doorbells += 1;
            let pi = u64::from(out.db_sq_pi);
            if pi != (self.posted + 1) & 0xFFFF_FFFF {
                self.error(format!(
                    "doorbell SQ PI {pi} after {} WQEs (expected one more)",
                    self.posted
                ));
            }
            let round = self.posted;
            self.posted += 1;
            if let Some(r) = self.record(round) {
                r.doorbell = Some(now);
            }
            self.fetch
                .push_back((now + self.config.fetch_cycles.max(1), round));
        }
        if out.tx_valid != 0 {
            self.stats.corrections += 1;
        }
        // WQE fetch, then the read of the request message.
        if self.read.is_none() && self.fetch.front().is_some_and(|f| f.0 <= now) {
            let (_, round) = self.fetch.pop_front().unwrap();
            if let Some(wqe) = self.fetch_wqe(round) {
                let first = wqe.offset / 4;
                let last = (wqe.offset + wqe.len).div_ceil(4);
                self.read = Some(ReqRead {
                    wqe,
                    next: first,
                    last,
                    issued: false,
                    words: Vec::with_capacity(8),
                });
            }
        }
        if let Some(mut rd) = self.read.take() {
            if rd.issued {
                rd.words.push(out.req_rd_data);
            }
            if rd.next < rd.last {
                inp.req_rd_addr = rd.next;
                rd.next += 1;
                rd.issued = true;
                self.read = Some(rd);
            } else {
                let bytes: Vec<u8> = rd.words.iter().flat_map(|w| w.to_le_bytes()).collect();
                let skip = (rd.wqe.offset % 4) as usize;
                let msg = bytes[skip..skip + rd.wqe.len as usize].to_vec();
                self.depart(now, rd.wqe, &msg);
            }
        }
        if let Some(&(t, wrid, round)) = self.cq.front()
            && t <= now
        {
            self.cq.pop_front();
            inp.cq_valid = 1;
            inp.cq_wrid = u32::from(wrid);
            self.stats.completions += 1;
            if let Some(r) = self.record(round) {
                r.completion = Some(now);
            }
        }
        if let Some(&(t, addr, data, seq_of)) = self.rx.front()
            && t <= now
        {
            self.rx.pop_front();
            inp.rx_wr_en = 1;
            inp.rx_wr_addr = addr;
            inp.rx_wr_data = data;
            if let Some(round) = seq_of {
                self.stats.replies += 1;
                if let Some(r) = self.record(round) {
                    r.reply_seq = Some(now);
                }
            }
        }
    }

    fn sq_write(&mut self, now: u64, addr: u32, data: u32) {
        let off = addr.wrapping_sub(self.config.sq_base);
        if off >= SQ_MEM_BYTES || !addr.is_multiple_of(4) {
            self.error(format!("SQ write at {addr:#x} outside the SQ memory"));
            return;
        }
        self.sq_mem[off as usize / 4] = data;
        if off % wqe::BYTES == wqe::WRID {
            let round = self.wqe_writes;
            self.wqe_writes += 1;
            if data != (round & 0xFFFF) as u32 {
                self.error(format!("WQE #{round} carries wrid {data}"));
            }
            if let Some(r) = self.record(round) {
                r.wqe_write = Some(now);
            }
        }
    }

    fn fetch_wqe(&mut self, round: u64) -> Option<Wqe> {
        let c = &self.config;
        let slot = (round % u64::from(c.sq_depth.max(1))) as u32;
        let base = (slot * wqe::BYTES) as usize / 4;
        if base + wqe::WORDS as usize > self.sq_mem.len() {
            self.error(format!("SQ slot {slot} outside the SQ memory"));
            return None;
        }
        let w = |off: u32| self.sq_mem[base + off as usize / 4];
        let wrid = w(wqe::WRID) & 0xFFFF;
        let len = w(wqe::LENGTH);
        let opcode = w(wqe::OPCODE) & 0xFF;
        let laddr = u64::from(w(wqe::LADDR_LO)) | u64::from(w(wqe::LADDR_HI)) << 32;
        let rva = u64::from(w(wqe::ROFFSET_LO)) | u64::from(w(wqe::ROFFSET_HI)) << 32;
        let rkey = w(wqe::RTAG);
        let ring_bytes = u64::from(c.ring_depth) * u64::from(rm::SLOT_BYTES);
        let offset = laddr.wrapping_sub(c.request_buffer);
        let problem = if opcode != wqe::opcode::WRITE && opcode != wqe::opcode::WRITE_IMM {
            Some(format!(
                "WQE #{round}: opcode {opcode} (the model does WRITE and WRITE_IMM)"
            ))
        } else if len <= HEADER_BYTES as u32 || len > rm::SLOT_BYTES {
            Some(format!("WQE #{round}: length {len}"))
        } else if offset + u64::from(len) > u64::from(REQUEST_BUFFER_BYTES) {
            Some(format!(
                "WQE #{round}: local address {laddr:#x} + {len} is outside the request buffer \
                 at {:#x}",
                c.request_buffer
            ))
        } else if rkey != c.rkey {
            Some(format!(
                "WQE #{round}: rkey {rkey:#x}, region key {:#x}",
                c.rkey
            ))
        } else if rva < c.remote_va
            || rva + u64::from(len) > c.remote_va + ring_bytes
            || !(rva + u64::from(len) - c.remote_va).is_multiple_of(u64::from(rm::SLOT_BYTES))
        {
            Some(format!(
                "WQE #{round}: remote VA {rva:#x} + {len} is not the tail of a ring slot"
            ))
        } else if wrid != (round & 0xFFFF) as u32 {
            Some(format!("WQE #{round}: wrid {wrid}"))
        } else {
            None
        };
        if let Some(p) = problem {
            self.error(p);
            return None;
        }
        self.stats.wqes += 1;
        Some(Wqe {
            round,
            wrid: wrid as u16,
            offset: offset as u32,
            len,
        })
    }

    /// The request has been read: it leaves now; schedule the completion and the reply.
    fn depart(&mut self, now: u64, wqe: Wqe, bytes: &[u8]) {
        let (to_remote, ack, back) = (self.leg(), self.leg(), self.leg());
        self.cq
            .push_back((now + (to_remote + ack).max(1), wqe.wrid, wqe.round));
        let (header, payload) = match backline_wire::decode_message(bytes) {
            Ok(m) => m,
            Err(e) => {
                self.error(format!("request of round {}: {e}", wqe.round));
                return;
            }
        };
        let expect_seq = backline_wire::Seq::of_round(wqe.round).0;
        if header.seq != expect_seq || header.kind != Kind::Request as u8 {
            self.error(format!(
                "request of round {}: seq {} kind {} (expected seq {expect_seq}, a request)",
                wqe.round, header.seq, header.kind
            ));
        }
        let fabric = (to_remote + back) as u32;
        // A round without a reply still has its fabric legs, and no service.
        let unanswered = RoundSplit {
            fabric_cycles: fabric,
            service_cycles: 0,
        };
        if self.config.responder == Responder::Silent {
            self.split(wqe.round, unanswered);
            return;
        }
        let (reply, status, decoder_id, service) = match self.bridge.as_mut() {
            Some(b) => match b.relay(header.decoder_id, payload) {
                Ok(r) => (
                    r.payload,
                    r.status,
                    r.decoder_id,
                    crate::ns_to_cycles(r.service_ns),
                ),
                Err(loss) => {
                    self.stats.lost += 1;
                    if self.stats.first_loss.is_none() {
                        self.stats.first_loss = Some((wqe.round, loss));
                    }
                    self.split(wqe.round, unanswered);
                    return;
                }
            },
            None => (
                self.model_reply(payload),
                Status::Ok as u16,
                header.decoder_id,
                self.config.service_cycles,
            ),
        };
        self.split(
            wqe.round,
            RoundSplit {
                fabric_cycles: fabric,
                service_cycles: service.min(u64::from(u32::MAX)) as u32,
            },
        );
        let h = SlotHeader {
            payload_len: reply.len() as u32,
            decoder_id,
            status,
            kind: Kind::Reply as u8,
            version: WIRE_VERSION,
            seq: header.seq,
        };
        let mut image = vec![0u8; reply.len() + HEADER_BYTES];
        backline_wire::encode_message(&mut image, &h, &reply);
        let t0 = now + to_remote + service + back + 1;
        self.deliver(wqe.round, header.seq, &image, t0);
    }

    /// The in-simulation responder's reply payload.
    fn model_reply(&self, payload: &[u8]) -> Vec<u8> {
        let c = &self.config;
        let mut reply = vec![0u8; c.reply_len as usize];
        if c.responder == Responder::Echo {
            let n = payload.len().min(reply.len());
            reply[..n].copy_from_slice(&payload[..n]);
        } else {
            let mut w = [0u8; 4];
            let n = payload.len().min(4);
            w[..n].copy_from_slice(&payload[..n]);
            let word = c.responder.reply_word0(u32::from_le_bytes(w)).to_le_bytes();
            let n = reply.len().min(4);
            reply[..n].copy_from_slice(&word[..n]);
        }
        reply
    }

    /// Schedules the words of a reply image into the reply slot of `seq`, one per cycle from
    /// `t0`, the `seq` word last. The image is tail-anchored: it ends at the slot's end.
    fn deliver(&mut self, round: u64, seq: u32, image: &[u8], t0: u64) {
        let slot_words = rm::SLOT_BYTES / 4;
        let slot = (seq.wrapping_sub(1) % self.config.ring_depth.max(1)) * slot_words;
        let start = rm::SLOT_BYTES as usize - image.len();
        let first = (start / 4) as u32;
        let mut bytes = [0u8; rm::SLOT_BYTES as usize];
        for w in first..slot_words {
            let old = self.rpl_shadow[(slot + w) as usize];
            bytes[w as usize * 4..w as usize * 4 + 4].copy_from_slice(&old.to_le_bytes());
        }
        bytes[start..].copy_from_slice(image);
        for (k, w) in (first..slot_words).enumerate() {
            let b = &bytes[w as usize * 4..w as usize * 4 + 4];
            let word = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            self.rpl_shadow[(slot + w) as usize] = word;
            let last = (w + 1 == slot_words).then_some(round);
            self.rx.push_back((t0 + k as u64, slot + w, word, last));
        }
    }
}
