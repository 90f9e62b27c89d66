//! The simulated board's socket protocol (Unix stream socket, little-endian): the one
//! definition the server ([`super::SimBoard`]) and the control plane's `sim:` backend
//! (`backline-apu`) both use.
//!
//! Request, 16 bytes: `op: u8, block: u8, 0: u16, offset: u32, arg: u64`.
//! Response: `status: u8, 0: [u8; 3], len: u32`, then `len` payload bytes.
//!
//! | op | name | arg | ok payload |
//! |---:|------|-----|------------|
//! | 1 | hello | client protocol version | server version `u32`, then [`SimState`] as JSON |
//! | 2 | read | — | the value, `u32` |
//! | 3 | write | value (low 32 bits) | — |
//! | 4 | read-repeat | count (≤ 2^20) | `count` values |
//! | 5 | wait | cycles | the cycle after the wait, `u64` |
//! | 6 | log | first index | up to 65,536 entries of 12 bytes: `op, block, 0, 0, offset, value` |
//! | 7 | violations | — | refused accesses, one per line (UTF-8) |
//! | 8 | inject | fault (1 = QP fatal; `offset` = QPN) | — |
//! | 9 | shutdown | — | — |
//! | 10 | state | — | [`SimState`] as JSON |
//! | 11 | clear-log | — | — |
//! | 12 | splits | first round | up to 65,536 entries of 8 bytes: `fabric_cycles: u32, service_cycles: u32` per round since the last soft reset ([`crate::RoundSplit`]) |
//!
//! Status: 0 ok, 1 bus error, 2 refused by the ERNIC model's rules, 3 bad request; the
//! payload of an error is its message (UTF-8).

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use backline_board::{Access, Block, Op, PeerInfo};

/// Version of this protocol; a client and a server of different versions refuse each other.
pub const PROTOCOL_VERSION: u32 = 2;
/// Bytes of a request.
pub const REQUEST_BYTES: usize = 16;
/// Largest `read-repeat` count (the trace RAM's depth).
pub const MAX_REPEAT: u64 = backline_regmap::TRACE_DEPTH as u64;
/// Log entries per `log` answer.
pub const LOG_CHUNK: usize = 65_536;
/// Bytes of one log entry.
pub const LOG_ENTRY_BYTES: usize = 12;
/// Largest payload either side accepts.
pub const MAX_PAYLOAD: u32 = 16 << 20;

/// Request opcodes.
#[allow(missing_docs)]
pub mod op {
    pub const HELLO: u8 = 1;
    pub const READ: u8 = 2;
    pub const WRITE: u8 = 3;
    pub const READ_REPEAT: u8 = 4;
    pub const WAIT: u8 = 5;
    pub const LOG: u8 = 6;
    pub const VIOLATIONS: u8 = 7;
    pub const INJECT: u8 = 8;
    pub const SHUTDOWN: u8 = 9;
    pub const STATE: u8 = 10;
    pub const CLEAR_LOG: u8 = 11;
    pub const SPLITS: u8 = 12;
}

/// Round splits per `splits` answer.
pub const SPLIT_CHUNK: usize = 65_536;
/// Bytes of one split entry.
pub const SPLIT_ENTRY_BYTES: usize = 8;

/// Faults `inject` can cause.
pub mod fault {
    /// The QP at `offset` enters the fatal state.
    pub const QP_FATAL: u64 = 1;
}

/// Response status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// Done.
    Ok = 0,
    /// The bus answered an error.
    Bus = 1,
    /// The ERNIC model refused the access.
    Refused = 2,
    /// Malformed or unknown request.
    BadRequest = 3,
}

impl Status {
    /// Decodes a status byte.
    pub fn from_u8(v: u8) -> Option<Status> {
        Some(match v {
            0 => Status::Ok,
            1 => Status::Bus,
            2 => Status::Refused,
            3 => Status::BadRequest,
            _ => return None,
        })
    }
}

/// One request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Opcode ([`op`]).
    pub op: u8,
    /// 0 ERNIC, 1 HWHS.
    pub block: u8,
    /// Byte offset (or QPN for `inject`).
    pub offset: u32,
    /// Value, count, cycles, index or fault.
    pub arg: u64,
}

impl Request {
    /// A request with no block or offset.
    pub const fn bare(op: u8, arg: u64) -> Request {
        Request {
            op,
            block: 0,
            offset: 0,
            arg,
        }
    }

    /// A register request.
    pub const fn reg(op: u8, block: Block, offset: u32, arg: u64) -> Request {
        Request {
            op,
            block: block_code(block),
            offset,
            arg,
        }
    }

    /// The 16 bytes on the wire.
    pub fn encode(&self) -> [u8; REQUEST_BYTES] {
        let mut b = [0u8; REQUEST_BYTES];
        b[0] = self.op;
        b[1] = self.block;
        b[4..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.arg.to_le_bytes());
        b
    }

    /// Decodes 16 bytes.
    pub fn decode(b: &[u8; REQUEST_BYTES]) -> Request {
        Request {
            op: b[0],
            block: b[1],
            offset: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            arg: u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        }
    }
}

/// The wire code of a block.
pub const fn block_code(b: Block) -> u8 {
    match b {
        Block::Ernic => 0,
        Block::Hwhs => 1,
    }
}

/// The block of a wire code.
pub fn block_of(code: u8) -> Option<Block> {
    match code {
        0 => Some(Block::Ernic),
        1 => Some(Block::Hwhs),
        _ => None,
    }
}

/// Writes a response.
pub fn write_response(w: &mut dyn Write, status: Status, payload: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 8];
    head[0] = status as u8;
    head[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    w.write_all(&head)?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads a response: its status byte and payload.
pub fn read_response(r: &mut dyn Read) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 8];
    r.read_exact(&mut head)?;
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if len > MAX_PAYLOAD {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("response of {len} bytes exceeds {MAX_PAYLOAD}"),
        ));
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload)?;
    Ok((head[0], payload))
}

/// Encodes a log entry.
pub fn encode_access(a: &Access, out: &mut Vec<u8>) {
    out.push(match a.op {
        Op::Read => 0,
        Op::Write => 1,
    });
    out.push(block_code(a.block));
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&a.offset.to_le_bytes());
    out.extend_from_slice(&a.value.to_le_bytes());
}

/// Decodes a log entry.
pub fn decode_access(b: &[u8]) -> Option<Access> {
    if b.len() != LOG_ENTRY_BYTES {
        return None;
    }
    Some(Access {
        op: match b[0] {
            0 => Op::Read,
            1 => Op::Write,
            _ => return None,
        },
        block: block_of(b[1])?,
        offset: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        value: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
    })
}

/// Counters of the HWHS model's port-level ERNIC/responder model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortStats {
    /// Doorbells the engine rang.
    pub doorbells: u64,
    /// WQEs executed.
    pub wqes: u64,
    /// Completions raised.
    pub completions: u64,
    /// Replies delivered.
    pub replies: u64,
    /// Protocol violations on the data path (bad WQE, wrong rkey, …).
    pub errors: u64,
    /// The first of them.
    pub first_error: Option<String>,
}

/// Counters of the bridge to a real coprocessor (see `backline_sim::bridge`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BridgeStats {
    /// The coprocessor (`udp:127.0.0.1:7878`).
    pub coprocessor: String,
    /// Requests relayed and answered.
    pub relayed: u64,
    /// Requests whose reply was lost (no answer in time, the coprocessor gone, or a reply
    /// that does not fit the engine's reply slot).
    pub lost: u64,
    /// The first loss, described.
    pub first_loss: Option<String>,
    /// Mean measured service time, ns.
    pub mean_service_ns: f64,
}

/// What the simulated board reports about itself (`state`, and after `hello`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimState {
    /// Protocol version.
    pub protocol: u32,
    /// Engine cycles simulated since power-up.
    pub cycle: u64,
    /// The ERNIC register space the board models (`v3.x`).
    pub ernic_layout: String,
    /// Where the modelled peer listens for the handshake.
    pub peer_listen: Option<String>,
    /// Handshakes the modelled peer accepted.
    pub handshakes: u64,
    /// The QP of the board's last accepted hello.
    pub board_qpn: Option<u32>,
    /// The remote side the ERNIC talks to (the modelled peer's QP, ring and key), after a
    /// handshake.
    pub peer: Option<PeerInfo>,
    /// What answers the requests: the in-simulation responder (`echo`, `steane`, `silent`)
    /// or `bridge` to a real coprocessor.
    pub responder: String,
    /// The bridge, when the board relays to a real coprocessor.
    pub bridge: Option<BridgeStats>,
    /// One-way fabric latency, cycles.
    pub fabric_latency_cycles: u64,
    /// In-simulation responder service time, cycles (a real coprocessor's is measured).
    pub service_cycles: u64,
    /// Data QPs enabled.
    pub enabled_qps: Vec<u32>,
    /// Data QPs in the fatal state.
    pub fatal_qps: Vec<u32>,
    /// The port-level model's counters.
    pub port: PortStats,
    /// Accesses in the log.
    pub log_len: u64,
    /// Accesses refused so far.
    pub violations: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let r = Request::reg(op::WRITE, Block::Hwhs, 0xCC, 0x1_0000_0001);
        assert_eq!(Request::decode(&r.encode()), r);
        let a = Access::write(Block::Ernic, 0x2_0300, 0xDEAD_BEEF);
        let mut v = Vec::new();
        encode_access(&a, &mut v);
        assert_eq!(v.len(), LOG_ENTRY_BYTES);
        assert_eq!(decode_access(&v), Some(a));
        let mut buf = Vec::new();
        write_response(&mut buf, Status::Refused, b"no").unwrap();
        assert_eq!(
            read_response(&mut buf.as_slice()).unwrap(),
            (2, b"no".to_vec())
        );
        let mut huge = vec![0u8; 8];
        huge[4..8].copy_from_slice(&(MAX_PAYLOAD + 1).to_le_bytes());
        assert!(read_response(&mut huge.as_slice()).is_err());
    }
}
