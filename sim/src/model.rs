//! Behavioural models around the engine: the ERNIC RDMA engine (a model: the IP itself cannot
//! run here) and the remote responder it talks to.
//!
//! What the ERNIC model does, per WQE, as its product guide describes the data path:
//!
//! 1. The engine writes the 64-byte WQE into the SQ memory (the model's SQ memory region)
//!    and rings the SQ producer-index doorbell.
//! 2. After `fetch_cycles` the model reads the WQE, checks it (opcode WRITE or WRITE_IMM,
//!    length, rkey, remote address inside the responder's ring and tail-anchored in a slot),
//!    and reads the message (`length` bytes) from the engine's request buffer, one word per
//!    cycle through the request read port.
//! 3. The RDMA WRITE travels `wire_latency_cycles` (plus an optional uniform jitter, drawn
//!    per leg from a seeded generator) to the remote side; its acknowledgement travels back,
//!    and then the completion (CQE with the WQE's wrid) is raised.
//! 4. The responder decodes the message with `backline-wire`, takes `service_cycles`, and
//!    writes its reply (wire format v1, `seq` last) back with an RDMA WRITE; after the wire
//!    latency the model delivers it word by word into the engine's reply memory, in the
//!    reply ring slot of the round.
//!
//! The model's own round trip of a round is the cycle of the reply's `seq` word write minus
//! the doorbell cycle; the engine must record exactly that plus its documented FSM overhead.

use std::collections::VecDeque;

use backline_regmap as rm;
use backline_wire::{HEADER_BYTES, Kind, SlotHeader, Status, WIRE_VERSION};

use crate::backend::{Inputs, Outputs};

/// What the remote coprocessor does with each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responder {
    /// Returns the request payload (truncated or zero-padded to the reply length).
    Echo,
    /// Steane [[7,1,3]] lookup: payload byte 0 is the syndrome, reply byte 0 the correction.
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
                u32::from(backline_decode::steane::correction(request_word0 as u8))
            }
        }
    }
}

/// Settings of the ERNIC and responder models.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// One-way wire latency, cycles.
    pub wire_latency_cycles: u64,
    /// Responder service time, cycles.
    pub service_cycles: u64,
    /// Extra delay on each wire leg, uniform in `0 ..= jitter_cycles` (0: a fixed latency).
    pub jitter_cycles: u64,
    /// Seed of the jitter draws.
    pub jitter_seed: u64,
    /// ERNIC's doorbell-to-WQE-fetch latency, cycles (at least 1).
    pub fetch_cycles: u64,
    /// The responder.
    pub responder: Responder,
    /// Reply payload bytes the responder returns (multiple of 4, 4 ..= 16).
    pub reply_len: u32,
    /// Base byte address of the SQ memory (ERNIC QP's SQBA as the engine addresses it).
    pub sq_base: u32,
    /// SQ depth in WQEs (a power of two).
    pub sq_depth: u32,
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
            wire_latency_cycles: 100,
            service_cycles: 20,
            jitter_cycles: 0,
            jitter_seed: 1,
            fetch_cycles: 4,
            responder: Responder::Echo,
            reply_len: 4,
            sq_base: 0,
            sq_depth: 16,
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
}

#[derive(Debug, Clone)]
struct Wqe {
    round: u64,
    wrid: u16,
    len: u32,
}

#[derive(Debug)]
struct ReqRead {
    wqe: Wqe,
    next: u32,
    issued: bool,
    words: Vec<u32>,
}

/// The ERNIC model with the remote responder behind it.
#[derive(Debug)]
pub struct ErnicModel {
    /// Settings; may be changed between rounds.
    pub config: ModelConfig,
    sq_mem: Vec<u32>,
    posted: u64,
    fetch: VecDeque<(u64, u64)>,
    read: Option<ReqRead>,
    cq: VecDeque<(u64, u16, u64)>,
    rx: VecDeque<(u64, u32, u32, Option<u64>)>,
    wqe_writes: u64,
    records: Vec<RoundRecord>,
    stats: ModelStats,
    rng: u64,
}

/// Bytes of SQ memory the model holds (1024 WQEs).
pub const SQ_MEM_BYTES: u32 = 64 * 1024;

impl ErnicModel {
    /// A model with `config`.
    pub fn new(config: ModelConfig) -> ErnicModel {
        ErnicModel {
            sq_mem: vec![0; SQ_MEM_BYTES as usize / 4],
            posted: 0,
            fetch: VecDeque::new(),
            read: None,
            cq: VecDeque::new(),
            rx: VecDeque::new(),
            wqe_writes: 0,
            records: Vec::new(),
            stats: ModelStats::default(),
            rng: config.jitter_seed.max(1),
            config,
        }
    }

    /// One wire leg: the latency plus a uniform jitter draw (xorshift64*).
    fn leg(&mut self) -> u64 {
        let j = self.config.jitter_cycles;
        if j == 0 {
            return self.config.wire_latency_cycles;
        }
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        self.config.wire_latency_cycles + r % (j + 1)
    }

    /// Forgets all rounds (after an engine soft reset).
    pub fn reset(&mut self) {
        *self = ErnicModel::new(self.config.clone());
    }

    /// Counters.
    pub fn stats(&self) -> &ModelStats {
        &self.stats
    }

    /// Per-round records (empty unless `record_rounds`).
    pub fn records(&self) -> &[RoundRecord] {
        &self.records
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
                self.read = Some(ReqRead {
                    wqe,
                    next: 0,
                    issued: false,
                    words: Vec::with_capacity(8),
                });
            }
        }
        if let Some(mut rd) = self.read.take() {
            if rd.issued {
                rd.words.push(out.req_rd_data);
            }
            let nwords = rd.wqe.len / 4;
            if rd.next < nwords {
                inp.req_rd_addr = rd.next;
                rd.next += 1;
                rd.issued = true;
                self.read = Some(rd);
            } else {
                self.depart(now, rd.wqe, &rd.words);
            }
        }
        if let Some(&(t, wrid, round)) = self.cq.front()
            && t <= now
        {
            {
                self.cq.pop_front();
                inp.cq_valid = 1;
                inp.cq_wrid = u32::from(wrid);
                self.stats.completions += 1;
                if let Some(r) = self.record(round) {
                    r.completion = Some(now);
                }
            }
        }
        if let Some(&(t, addr, data, seq_of)) = self.rx.front()
            && t <= now
        {
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
    }

    fn sq_write(&mut self, now: u64, addr: u32, data: u32) {
        let off = addr.wrapping_sub(self.config.sq_base);
        if off >= SQ_MEM_BYTES || !addr.is_multiple_of(4) {
            self.error(format!("SQ write at {addr:#x} outside the SQ memory"));
            return;
        }
        self.sq_mem[off as usize / 4] = data;
        if off % rm::wqe::BYTES == rm::wqe::WRID {
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
        let base = (slot * rm::wqe::BYTES) as usize / 4;
        if base + 16 > self.sq_mem.len() {
            self.error(format!("SQ slot {slot} outside the SQ memory"));
            return None;
        }
        let w = |off: u32| self.sq_mem[base + off as usize / 4];
        let (wrid, len, opcode) = (w(rm::wqe::WRID), w(rm::wqe::LENGTH), w(rm::wqe::OPCODE));
        let rva = u64::from(w(rm::wqe::RVA_LO)) | u64::from(w(rm::wqe::RVA_HI)) << 32;
        let rkey = w(rm::wqe::RKEY);
        let ring_bytes = u64::from(c.ring_depth) * u64::from(rm::SLOT_BYTES);
        let problem = if opcode > 1 {
            Some(format!(
                "WQE #{round}: opcode {opcode} (the model does WRITE and WRITE_IMM)"
            ))
        } else if len < HEADER_BYTES as u32 + 4 || len > rm::SLOT_BYTES || !len.is_multiple_of(4) {
            Some(format!("WQE #{round}: length {len}"))
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
            len,
        })
    }

    /// The request has been read: it leaves now; schedule the completion and the reply.
    fn depart(&mut self, now: u64, wqe: Wqe, words: &[u32]) {
        let c = self.config.clone();
        let (to_remote, ack, back) = (self.leg(), self.leg(), self.leg());
        self.cq
            .push_back((now + (to_remote + ack).max(1), wqe.wrid, wqe.round));
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let (header, payload) = match backline_wire::decode_message(&bytes) {
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
        if c.responder == Responder::Silent {
            return;
        }
        let w0 = u32::from_le_bytes([
            *payload.first().unwrap_or(&0),
            *payload.get(1).unwrap_or(&0),
            *payload.get(2).unwrap_or(&0),
            *payload.get(3).unwrap_or(&0),
        ]);
        let mut reply = vec![0u8; c.reply_len as usize];
        if c.responder == Responder::Echo {
            let n = payload.len().min(reply.len());
            reply[..n].copy_from_slice(&payload[..n]);
        } else {
            reply[..4].copy_from_slice(&c.responder.reply_word0(w0).to_le_bytes());
        }
        let h = SlotHeader {
            payload_len: c.reply_len,
            decoder_id: header.decoder_id,
            status: Status::Ok as u16,
            kind: Kind::Reply as u8,
            version: WIRE_VERSION,
            seq: header.seq,
        };
        let mut image = vec![0u8; reply.len() + HEADER_BYTES];
        backline_wire::encode_message(&mut image, &h, &reply);
        let nwords = image.len() as u32 / 4;
        let slot = (header.seq.wrapping_sub(1) % c.ring_depth.max(1)) * (rm::SLOT_BYTES / 4);
        let first = slot + rm::SLOT_BYTES / 4 - nwords;
        let t0 = now + to_remote + c.service_cycles + back + 1;
        for i in 0..nwords {
            let b = &image[i as usize * 4..i as usize * 4 + 4];
            let word = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let last = (i + 1 == nwords).then_some(wqe.round);
            self.rx
                .push_back((t0 + u64::from(i), first + i, word, last));
        }
    }
}
