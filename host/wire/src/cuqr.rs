//! NVIDIA's realtime RPC frames (the cudaq-realtime message protocol, SPEC §12): a 24-byte
//! request header `CUQR`, a 24-byte response header `CUQS`, the arguments of the three
//! decoding calls `enqueue_syndromes`, `get_corrections` and `reset_decoder`, and their status
//! codes. Little-endian and packed; every field is listed in `docs/cuqr.md`.
//!
//! Request, then its arguments, then (when the frame fills a whole slot) unused bytes:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 4 | magic `0x43555152` (`"RQUC"` on the wire, `'CUQR'` as a little-endian `u32`) |
//! | 4  | 4 | function id: FNV-1a (32-bit) of the call's name ([`Function::id`]) |
//! | 8  | 4 | argument length in bytes |
//! | 12 | 4 | request id, chosen by the caller, echoed in the response |
//! | 16 | 8 | timestamp (PTP ns, 0 if unused), echoed in the response |
//!
//! Response, then its result:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 4 | magic `0x43555153` (`'CUQS'`) |
//! | 4  | 4 | status, `i32` ([`CallStatus`]) |
//! | 8  | 4 | result length in bytes (0 on an error) |
//! | 12 | 4 | request id (echoed) |
//! | 16 | 8 | timestamp (echoed) |
//!
//! Arguments ([`Call`]), as NVIDIA's producer writes them (no padding anywhere:
//! cudaqx `decoder_rpc_wire_format.h`): `enqueue_syndromes` — `i64` decoder id, `i64` counter
//! (an opaque tag: 0, or `(shot << 16) | round` by the producer's convention,
//! [`shot_round_counter`]), `i64` syndrome mapping id, `i64` number of syndrome bits, then the
//! bits packed LSB-first (bit `i` is bit `i % 8` of byte `i / 8`), `⌈n/8⌉` bytes: 32 + `⌈n/8⌉`
//! bytes in all; `get_corrections` — `i64` decoder id, `i64` return size (bits), `u8` reset
//! (any non-zero byte resets): 17 bytes; `reset_decoder` — `i64` decoder id: 8 bytes. The
//! result of an `ok` `get_corrections` is the return size's bits packed LSB-first,
//! `⌈return size / 8⌉` bytes.
//!
//! [`parse_request`] reads a frame into typed values as NVIDIA's decoding server does
//! (cudaqx `RpcSlot.h`), checking every length against the frame before it reads: an
//! argument length at least the call's fixed part and within the frame; for an enqueue, 1 to
//! [`MAX_SYNDROME_BITS`] bits whose `⌈n/8⌉` bytes lie inside the arguments. Bytes after those a
//! call reads (padding, extra bytes, the unused rest of a slot) are ignored, and so are the
//! bits of the last syndrome byte past the count. [`FrameError::is_dropped`] says which errors
//! a server drops without an answer (no header, a wrong magic, an unknown function id) and
//! which it answers `bad_request`. [`encode_request`] writes NVIDIA's unpadded form. Nothing
//! here allocates.

/// The request magic, `'CUQR'` as a little-endian `u32`.
pub const REQUEST_MAGIC: u32 = 0x4355_5152;
/// The response magic, `'CUQS'`.
pub const RESPONSE_MAGIC: u32 = 0x4355_5153;
/// Bytes of either header.
pub const HEADER_BYTES: usize = 24;
/// Default slot size: one datagram carries one slot of this many bytes.
pub const DEFAULT_SLOT_BYTES: usize = 256;
/// Default slots of a ring (NVIDIA's `--num-slots`: requests in the server's ring before the
/// receiver waits).
pub const DEFAULT_SLOTS: usize = 8;
/// The most syndrome bits one `enqueue_syndromes` may carry (cudaqx `kMaxSyndromeBits`).
pub const MAX_SYNDROME_BITS: i64 = 1 << 20;
/// Bytes of the fixed `enqueue_syndromes` arguments before the bits.
pub const ENQUEUE_FIXED_BYTES: usize = 32;
/// Bytes of the `get_corrections` arguments (`i64`, `i64`, `u8`; no padding).
pub const GET_CORRECTIONS_BYTES: usize = 17;
/// Bytes of the `reset_decoder` arguments.
pub const RESET_BYTES: usize = 8;

/// The counter of NVIDIA's producer convention: `(shot << 16) | round` (the round in the low
/// 16 bits). The counter is a tag: servers carry it and never judge it.
pub const fn shot_round_counter(shot: u64, round: u64) -> i64 {
    ((shot << 16) | (round & 0xFFFF)) as i64
}

/// FNV-1a, 32-bit (offset basis `0x811C9DC5`, prime `0x01000193`): how a call's name becomes
/// its function id.
pub const fn fnv1a(name: &[u8]) -> u32 {
    let mut h: u32 = 0x811C_9DC5;
    let mut i = 0;
    while i < name.len() {
        h ^= name[i] as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    h
}

/// The three decoding calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    /// `enqueue_syndromes`: one round's syndrome bits for a decoder.
    EnqueueSyndromes,
    /// `get_corrections`: the observable corrections decoded so far.
    GetCorrections,
    /// `reset_decoder`: forget the shot.
    ResetDecoder,
}

/// Function id of `enqueue_syndromes`.
pub const ENQUEUE_SYNDROMES_ID: u32 = fnv1a(b"enqueue_syndromes");
/// Function id of `get_corrections`.
pub const GET_CORRECTIONS_ID: u32 = fnv1a(b"get_corrections");
/// Function id of `reset_decoder`.
pub const RESET_DECODER_ID: u32 = fnv1a(b"reset_decoder");

const _: () = {
    // The values SPEC §12 publishes.
    assert!(ENQUEUE_SYNDROMES_ID == 0x7ED8_BE82);
    assert!(GET_CORRECTIONS_ID == 0x882D_5BA1);
    assert!(RESET_DECODER_ID == 0x977A_59CF);
};

impl Function {
    /// Every call.
    pub const ALL: [Function; 3] = [
        Function::EnqueueSyndromes,
        Function::GetCorrections,
        Function::ResetDecoder,
    ];

    /// The call's name, whose FNV-1a hash is its id.
    pub const fn name(self) -> &'static str {
        match self {
            Function::EnqueueSyndromes => "enqueue_syndromes",
            Function::GetCorrections => "get_corrections",
            Function::ResetDecoder => "reset_decoder",
        }
    }

    /// The function id on the wire.
    pub const fn id(self) -> u32 {
        match self {
            Function::EnqueueSyndromes => ENQUEUE_SYNDROMES_ID,
            Function::GetCorrections => GET_CORRECTIONS_ID,
            Function::ResetDecoder => RESET_DECODER_ID,
        }
    }

    /// The call of a function id.
    pub const fn from_id(id: u32) -> Option<Function> {
        match id {
            ENQUEUE_SYNDROMES_ID => Some(Function::EnqueueSyndromes),
            GET_CORRECTIONS_ID => Some(Function::GetCorrections),
            RESET_DECODER_ID => Some(Function::ResetDecoder),
            _ => None,
        }
    }
}

/// The status of a decoding call: in a CUQR response's status field, and in byte 0 of the
/// reply of a backline stream function ([`crate::stream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum CallStatus {
    /// Done; the result follows.
    Ok = 0,
    /// No decoder under this id.
    InvalidDecoder = 1,
    /// The request is malformed, or does not fit the decoder (lengths, sizes, ids, order).
    BadRequest = 2,
    /// The decoder failed (over CUQR: a failure of an earlier, already answered
    /// `enqueue_syndromes`, reported at the next `get_corrections` until a reset).
    InternalError = 3,
    /// Nothing to answer yet: the shot's last decode block is not done.
    NotReady = 4,
    /// The decoder is in the middle of another client's shot (declared by NVIDIA, never sent
    /// by its server; backline's CUQR server only with `--strict-counter`).
    Busy = 5,
    /// A round of the shot was lost (its counter was skipped); the shot stays failed until
    /// `reset_decoder` (as [`CallStatus::Busy`]: over CUQR only with `--strict-counter`).
    SyndromesDropped = 6,
}

impl CallStatus {
    /// Every status, by code.
    pub const ALL: [CallStatus; 7] = [
        CallStatus::Ok,
        CallStatus::InvalidDecoder,
        CallStatus::BadRequest,
        CallStatus::InternalError,
        CallStatus::NotReady,
        CallStatus::Busy,
        CallStatus::SyndromesDropped,
    ];

    /// The status of a code; unknown codes are `None`.
    pub const fn from_code(code: i32) -> Option<CallStatus> {
        match code {
            0 => Some(CallStatus::Ok),
            1 => Some(CallStatus::InvalidDecoder),
            2 => Some(CallStatus::BadRequest),
            3 => Some(CallStatus::InternalError),
            4 => Some(CallStatus::NotReady),
            5 => Some(CallStatus::Busy),
            6 => Some(CallStatus::SyndromesDropped),
            _ => None,
        }
    }

    /// A short lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::InvalidDecoder => "invalid_decoder",
            CallStatus::BadRequest => "bad_request",
            CallStatus::InternalError => "internal_error",
            CallStatus::NotReady => "not_ready",
            CallStatus::Busy => "busy",
            CallStatus::SyndromesDropped => "syndromes_dropped",
        }
    }
}

/// The fields of a request header after its magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// FNV-1a of the call's name.
    pub function_id: u32,
    /// Bytes of arguments after the header.
    pub arg_len: u32,
    /// Chosen by the caller, echoed.
    pub request_id: u32,
    /// Echoed.
    pub timestamp: u64,
}

/// The fields of a response header after its magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// A [`CallStatus`] code (other values are possible from other servers).
    pub status: i32,
    /// Bytes of result after the header.
    pub result_len: u32,
    /// The request's id.
    pub request_id: u32,
    /// The request's timestamp.
    pub timestamp: u64,
}

/// A call with its arguments, as typed values; the syndrome bits are borrowed from the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call<'a> {
    /// `enqueue_syndromes(decoder_id, counter, syndrome_mapping_id, num_bits, bits)`.
    EnqueueSyndromes {
        /// The decoder (one stream per decoder).
        decoder_id: i64,
        /// An opaque tag (0 by NVIDIA's default, `(shot << 16) | round` by its producer's
        /// convention): carried, never judged, unless a server is asked to.
        counter: i64,
        /// Which syndrome mapping (backline serves mapping 0 only).
        mapping_id: i64,
        /// Syndrome bits.
        num_bits: i64,
        /// `⌈num_bits / 8⌉` bytes, LSB-first; bits past `num_bits` in the last byte are not
        /// part of the call (a reader ignores them).
        bits: &'a [u8],
    },
    /// `get_corrections(decoder_id, return_size, reset)`.
    GetCorrections {
        /// The decoder.
        decoder_id: i64,
        /// Bits asked for (the decoder's number of observables).
        return_size: i64,
        /// Clear the corrections after answering (the reset byte was non-zero).
        reset: bool,
    },
    /// `reset_decoder(decoder_id)`.
    ResetDecoder {
        /// The decoder.
        decoder_id: i64,
    },
}

impl Call<'_> {
    /// Which call.
    pub const fn function(&self) -> Function {
        match self {
            Call::EnqueueSyndromes { .. } => Function::EnqueueSyndromes,
            Call::GetCorrections { .. } => Function::GetCorrections,
            Call::ResetDecoder { .. } => Function::ResetDecoder,
        }
    }

    /// The decoder it is for.
    pub const fn decoder_id(&self) -> i64 {
        match *self {
            Call::EnqueueSyndromes { decoder_id, .. }
            | Call::GetCorrections { decoder_id, .. }
            | Call::ResetDecoder { decoder_id } => decoder_id,
        }
    }

    /// Bytes of its arguments as [`encode_request`] writes them (NVIDIA's unpadded form).
    pub const fn arg_bytes(&self) -> usize {
        match self {
            Call::EnqueueSyndromes { bits, .. } => ENQUEUE_FIXED_BYTES + bits.len(),
            Call::GetCorrections { .. } => GET_CORRECTIONS_BYTES,
            Call::ResetDecoder { .. } => RESET_BYTES,
        }
    }
}

/// A parsed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// Its header.
    pub header: RequestHeader,
    /// Its call.
    pub call: Call<'a>,
}

/// Why a frame is not a well-formed request or response. A server drops the first three
/// without an answer ([`FrameError::is_dropped`]) and answers the others with their status
/// ([`FrameError::status`]); none allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(thiserror::Error))]
pub enum FrameError {
    /// Shorter than a header.
    #[cfg_attr(
        feature = "std",
        error("frame of {0} bytes is shorter than the 24-byte header")
    )]
    Short(usize),
    /// Not the expected magic.
    #[cfg_attr(
        feature = "std",
        error("magic {found:#010x}, expected {expected:#010x}")
    )]
    Magic {
        /// What the frame has.
        found: u32,
        /// What was expected.
        expected: u32,
    },
    /// A function id that is none of the three calls.
    #[cfg_attr(feature = "std", error("unknown function id {0:#010x}"))]
    UnknownFunction(u32),
    /// The argument (or result) length runs past the end of the frame.
    #[cfg_attr(
        feature = "std",
        error(
            "{len} bytes of arguments announced, but the frame has {available} after its header"
        )
    )]
    BeyondFrame {
        /// Announced.
        len: u32,
        /// Present.
        available: usize,
    },
    /// The argument length is shorter than the call's fixed arguments.
    #[cfg_attr(
        feature = "std",
        error("{function:?} takes at least {min} bytes of arguments, not {found}")
    )]
    ArgLength {
        /// The call.
        function: Function,
        /// Fewest bytes.
        min: usize,
        /// Announced.
        found: u32,
    },
    /// A number of syndrome bits outside 1 ..= [`MAX_SYNDROME_BITS`], or one whose packed
    /// bytes do not fit the arguments.
    #[cfg_attr(
        feature = "std",
        error("{num_bits} syndrome bits do not fit the {bytes} bytes that follow them")
    )]
    BitCount {
        /// The count announced.
        num_bits: i64,
        /// Bytes after the fixed arguments.
        bytes: usize,
    },
    /// The output buffer is too small for the frame.
    #[cfg_attr(
        feature = "std",
        error("a frame of {need} bytes does not fit {have} bytes")
    )]
    NoRoom {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
}

impl FrameError {
    /// The status a server answers this error with: [`CallStatus::BadRequest`] for every
    /// malformed request (a buffer too small for a reply is [`CallStatus::InternalError`]).
    pub const fn status(self) -> CallStatus {
        match self {
            FrameError::NoRoom { .. } => CallStatus::InternalError,
            _ => CallStatus::BadRequest,
        }
    }

    /// Whether a server drops a request with this error unanswered, as NVIDIA's UDP
    /// transceiver and dispatcher do (cuda-quantum `udp_transceiver.cpp`, `host_dispatcher.cu`):
    /// no header, a wrong magic or an unknown function id. The others are answered
    /// [`FrameError::status`], their request id and timestamp echoed.
    pub const fn is_dropped(self) -> bool {
        matches!(
            self,
            FrameError::Short(_) | FrameError::Magic { .. } | FrameError::UnknownFunction(_)
        )
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    u64_at(b, at) as i64
}

/// The header fields of a frame of at least 24 bytes, whatever its magic: what a server
/// echoes when it answers a frame it cannot parse. `None` for shorter frames.
pub fn echo_fields(frame: &[u8]) -> Option<(u32, u64)> {
    (frame.len() >= HEADER_BYTES).then(|| (u32_at(frame, 12), u64_at(frame, 16)))
}

/// The header of a request frame and its call, before the arguments are read: what a server
/// needs to drop a frame ([`FrameError::is_dropped`]) or route it.
pub fn parse_header(frame: &[u8]) -> Result<(RequestHeader, Function), FrameError> {
    if frame.len() < HEADER_BYTES {
        return Err(FrameError::Short(frame.len()));
    }
    let magic = u32_at(frame, 0);
    if magic != REQUEST_MAGIC {
        return Err(FrameError::Magic {
            found: magic,
            expected: REQUEST_MAGIC,
        });
    }
    let header = RequestHeader {
        function_id: u32_at(frame, 4),
        arg_len: u32_at(frame, 8),
        request_id: u32_at(frame, 12),
        timestamp: u64_at(frame, 16),
    };
    let function = Function::from_id(header.function_id)
        .ok_or(FrameError::UnknownFunction(header.function_id))?;
    Ok((header, function))
}

/// The decoder id of a request (its first argument), when its header parses, it announces
/// at least 8 bytes of arguments and the frame holds them: how NVIDIA's server routes a frame
/// before it reads the rest (cudaqx `RpcSlot.h`, `peek_decoder_id`; an argument length past
/// the frame is found out by [`parse_request`] next).
pub fn peek_decoder_id(frame: &[u8]) -> Option<i64> {
    let (h, _) = parse_header(frame).ok()?;
    (h.arg_len >= 8 && frame.len() >= HEADER_BYTES + 8).then(|| i64_at(frame, HEADER_BYTES))
}

/// Parses a request frame (a datagram, or a whole slot with unused bytes after the
/// arguments), as NVIDIA's server does: see the module's doc.
pub fn parse_request(frame: &[u8]) -> Result<Request<'_>, FrameError> {
    let (header, function) = parse_header(frame)?;
    let available = frame.len() - HEADER_BYTES;
    if header.arg_len as usize > available {
        return Err(FrameError::BeyondFrame {
            len: header.arg_len,
            available,
        });
    }
    let args = &frame[HEADER_BYTES..HEADER_BYTES + header.arg_len as usize];
    let at_least = |min: usize| {
        if args.len() >= min {
            Ok(())
        } else {
            Err(FrameError::ArgLength {
                function,
                min,
                found: header.arg_len,
            })
        }
    };
    let call = match function {
        Function::EnqueueSyndromes => {
            at_least(ENQUEUE_FIXED_BYTES)?;
            let num_bits = i64_at(args, 24);
            let rest = &args[ENQUEUE_FIXED_BYTES..];
            if !(1..=MAX_SYNDROME_BITS).contains(&num_bits)
                || rest.len() < (num_bits as usize).div_ceil(8)
            {
                return Err(FrameError::BitCount {
                    num_bits,
                    bytes: rest.len(),
                });
            }
            Call::EnqueueSyndromes {
                decoder_id: i64_at(args, 0),
                counter: i64_at(args, 8),
                mapping_id: i64_at(args, 16),
                num_bits,
                bits: &rest[..(num_bits as usize).div_ceil(8)],
            }
        }
        Function::GetCorrections => {
            at_least(GET_CORRECTIONS_BYTES)?;
            Call::GetCorrections {
                decoder_id: i64_at(args, 0),
                return_size: i64_at(args, 8),
                reset: args[16] != 0,
            }
        }
        Function::ResetDecoder => {
            at_least(RESET_BYTES)?;
            Call::ResetDecoder {
                decoder_id: i64_at(args, 0),
            }
        }
    };
    Ok(Request { header, call })
}

/// Writes a request frame (header and unpadded arguments, NVIDIA's form) into `out`; returns
/// its length.
pub fn encode_request(
    out: &mut [u8],
    request_id: u32,
    timestamp: u64,
    call: &Call<'_>,
) -> Result<usize, FrameError> {
    let args = call.arg_bytes();
    let need = HEADER_BYTES + args;
    if out.len() < need || args > u32::MAX as usize {
        return Err(FrameError::NoRoom {
            need,
            have: out.len(),
        });
    }
    let out = &mut out[..need];
    out.fill(0);
    out[0..4].copy_from_slice(&REQUEST_MAGIC.to_le_bytes());
    out[4..8].copy_from_slice(&call.function().id().to_le_bytes());
    out[8..12].copy_from_slice(&(args as u32).to_le_bytes());
    out[12..16].copy_from_slice(&request_id.to_le_bytes());
    out[16..24].copy_from_slice(&timestamp.to_le_bytes());
    let a = &mut out[HEADER_BYTES..];
    match *call {
        Call::EnqueueSyndromes {
            decoder_id,
            counter,
            mapping_id,
            num_bits,
            bits,
        } => {
            a[0..8].copy_from_slice(&decoder_id.to_le_bytes());
            a[8..16].copy_from_slice(&counter.to_le_bytes());
            a[16..24].copy_from_slice(&mapping_id.to_le_bytes());
            a[24..32].copy_from_slice(&num_bits.to_le_bytes());
            a[32..32 + bits.len()].copy_from_slice(bits);
        }
        Call::GetCorrections {
            decoder_id,
            return_size,
            reset,
        } => {
            a[0..8].copy_from_slice(&decoder_id.to_le_bytes());
            a[8..16].copy_from_slice(&return_size.to_le_bytes());
            a[16] = reset as u8;
        }
        Call::ResetDecoder { decoder_id } => a[0..8].copy_from_slice(&decoder_id.to_le_bytes()),
    }
    Ok(need)
}

/// Writes a response header, `header.result_len` as it is, into `out[..24]`: for a server
/// that wrote the result in place behind it.
pub fn write_response_header(out: &mut [u8], header: &ResponseHeader) -> Result<(), FrameError> {
    if out.len() < HEADER_BYTES {
        return Err(FrameError::NoRoom {
            need: HEADER_BYTES,
            have: out.len(),
        });
    }
    out[0..4].copy_from_slice(&RESPONSE_MAGIC.to_le_bytes());
    out[4..8].copy_from_slice(&header.status.to_le_bytes());
    out[8..12].copy_from_slice(&header.result_len.to_le_bytes());
    out[12..16].copy_from_slice(&header.request_id.to_le_bytes());
    out[16..24].copy_from_slice(&header.timestamp.to_le_bytes());
    Ok(())
}

/// Writes a response frame (header, then `result`; the header's `result_len` is the result's
/// length) into `out`; returns its length.
pub fn encode_response(
    out: &mut [u8],
    header: &ResponseHeader,
    result: &[u8],
) -> Result<usize, FrameError> {
    let need = HEADER_BYTES + result.len();
    if out.len() < need || result.len() > u32::MAX as usize {
        return Err(FrameError::NoRoom {
            need,
            have: out.len(),
        });
    }
    let h = ResponseHeader {
        result_len: result.len() as u32,
        ..*header
    };
    write_response_header(out, &h)?;
    out[HEADER_BYTES..need].copy_from_slice(result);
    Ok(need)
}

/// Parses a response frame into its header and result (unused slot bytes after the result
/// are ignored; `result_len` in the header is the result's length).
pub fn parse_response(frame: &[u8]) -> Result<(ResponseHeader, &[u8]), FrameError> {
    if frame.len() < HEADER_BYTES {
        return Err(FrameError::Short(frame.len()));
    }
    let magic = u32_at(frame, 0);
    if magic != RESPONSE_MAGIC {
        return Err(FrameError::Magic {
            found: magic,
            expected: RESPONSE_MAGIC,
        });
    }
    let header = ResponseHeader {
        status: u32_at(frame, 4) as i32,
        result_len: u32_at(frame, 8),
        request_id: u32_at(frame, 12),
        timestamp: u64_at(frame, 16),
    };
    let available = frame.len() - HEADER_BYTES;
    if header.result_len as usize > available {
        return Err(FrameError::BeyondFrame {
            len: header.result_len,
            available,
        });
    }
    Ok((
        header,
        &frame[HEADER_BYTES..HEADER_BYTES + header.result_len as usize],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame written out byte by byte from the published layout, as hex digits (the rest
    /// of the 64 bytes zero).
    fn hex(s: &str) -> [u8; 64] {
        let mut bytes = [0u8; 64];
        let digits: [u8; 128] = {
            let mut d = [0u8; 128];
            let mut n = 0;
            for c in s.chars().filter(|c| c.is_ascii_hexdigit()) {
                d[n] = c.to_digit(16).unwrap() as u8;
                n += 1;
            }
            assert!(n % 2 == 0, "odd number of hex digits");
            d
        };
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = digits[2 * i] << 4 | digits[2 * i + 1];
        }
        bytes
    }

    #[test]
    fn function_ids_are_fnv1a_of_the_names() {
        for f in Function::ALL {
            assert_eq!(f.id(), fnv1a(f.name().as_bytes()));
            assert_eq!(Function::from_id(f.id()), Some(f));
        }
        assert_eq!(fnv1a(b""), 0x811C_9DC5);
        assert_eq!(fnv1a(b"a"), 0xE40C_292C);
        assert_eq!(Function::from_id(0), None);
    }

    #[test]
    fn enqueue_matches_nvidias_unpadded_layout() {
        // Header: magic, function id, 34 bytes of arguments (32 + ⌈10/8⌉, no padding),
        // request id 7, timestamp 0x0102030405060708. Arguments: decoder 3, counter
        // (shot 2 << 16) | round 1, mapping 0, 10 bits (0b10_0000_0101: bits 0, 2 and 9).
        let want = hex(
            "52 51 55 43  82 be d8 7e  22 00 00 00  07 00 00 00  08 07 06 05 04 03 02 01
             03 00 00 00 00 00 00 00  01 00 02 00 00 00 00 00  00 00 00 00 00 00 00 00
             0a 00 00 00 00 00 00 00  05 02",
        );
        let call = Call::EnqueueSyndromes {
            decoder_id: 3,
            counter: shot_round_counter(2, 1),
            mapping_id: 0,
            num_bits: 10,
            bits: &[0x05, 0x02],
        };
        let mut out = [0xAAu8; 64];
        let n = encode_request(&mut out, 7, 0x0102_0304_0506_0708, &call).unwrap();
        assert_eq!(n, 58);
        assert_eq!(out[..58], want[..58]);
        let r = parse_request(&want[..58]).unwrap();
        assert_eq!(r.call, call);
        assert_eq!(
            r.header,
            RequestHeader {
                function_id: ENQUEUE_SYNDROMES_ID,
                arg_len: 34,
                request_id: 7,
                timestamp: 0x0102_0304_0506_0708,
            }
        );
        // Padded to 8 bytes (arg_len 40), with extra bytes after the bits, with the bits of
        // the last byte past the count set, inside a whole slot: the same call.
        let mut padded = want;
        padded[8] = 40;
        assert_eq!(parse_request(&padded).unwrap().call, call);
        let mut extra = [0u8; 256];
        extra[..58].copy_from_slice(&want[..58]);
        extra[8] = 200;
        extra[58..].fill(0xEE);
        assert_eq!(parse_request(&extra).unwrap().call, call);
        let mut slot = [0u8; 256];
        slot[..58].copy_from_slice(&want[..58]);
        slot[58..].fill(0xEE);
        assert_eq!(parse_request(&slot).unwrap().call, call);
        let mut high = want;
        high[57] = 0xFE; // bits 9..16: only bit 9 counts
        let Call::EnqueueSyndromes { bits, .. } = parse_request(&high[..58]).unwrap().call else {
            panic!("an enqueue");
        };
        assert_eq!(bits, [0x05, 0xFE]);
        assert_eq!(shot_round_counter(1, 0x1_0002), 0x1_0002);
    }

    #[test]
    fn get_corrections_reset_and_responses_match_the_layout() {
        // 17 bytes of arguments, the reset byte last: NVIDIA's producer writes 1.
        let want = hex(
            "52 51 55 43  a1 5b 2d 88  11 00 00 00  ff ff ff ff  00 00 00 00 00 00 00 00
             ff ff ff ff ff ff ff ff  01 00 00 00 00 00 00 00  01",
        );
        let call = Call::GetCorrections {
            decoder_id: -1,
            return_size: 1,
            reset: true,
        };
        let mut out = [0u8; 64];
        assert_eq!(encode_request(&mut out, u32::MAX, 0, &call), Ok(41));
        assert_eq!(out[..41], want[..41]);
        assert_eq!(parse_request(&want[..41]).unwrap().call, call);
        // Any non-zero reset byte resets; 0 does not; the 24-byte padded form is the same.
        for (byte, reset) in [(2u8, true), (0xFF, true), (0, false)] {
            let mut f = want;
            f[40] = byte;
            f[8] = 24;
            let c = parse_request(&f[..48]).unwrap().call;
            assert_eq!(
                c,
                Call::GetCorrections {
                    decoder_id: -1,
                    return_size: 1,
                    reset
                }
            );
        }

        let want = hex(
            "52 51 55 43  cf 59 7a 97  08 00 00 00  2a 00 00 00  00 00 00 00 00 00 00 00
             05 00 00 00 00 00 00 00",
        );
        let call = Call::ResetDecoder { decoder_id: 5 };
        assert_eq!(encode_request(&mut out, 42, 0, &call), Ok(32));
        assert_eq!(out[..32], want[..32]);
        assert_eq!(parse_request(&want[..32]).unwrap().call, call);
        // reset_decoder takes 8 bytes or more.
        let mut longer = want;
        longer[8] = 16;
        assert_eq!(parse_request(&longer[..40]).unwrap().call, call);
        assert_eq!(peek_decoder_id(&want[..32]), Some(5));

        // A response: status 0, one byte of result (observable 0 flipped), echoed id and
        // timestamp.
        let want =
            hex("53 51 55 43  00 00 00 00  01 00 00 00  2a 00 00 00  09 00 00 00 00 00 00 00 01");
        let h = ResponseHeader {
            status: CallStatus::Ok as i32,
            result_len: 1,
            request_id: 42,
            timestamp: 9,
        };
        assert_eq!(encode_response(&mut out, &h, &[1]), Ok(25));
        assert_eq!(out[..25], want[..25]);
        assert_eq!(parse_response(&want[..25]), Ok((h, &[1u8][..])));
        let err = hex("53 51 55 43  03 00 00 00  00 00 00 00  2a 00 00 00  09");
        let (h, r) = parse_response(&err[..24]).unwrap();
        assert_eq!(
            CallStatus::from_code(h.status),
            Some(CallStatus::InternalError)
        );
        assert!(r.is_empty());
    }

    #[test]
    fn malformed_frames_are_typed_errors_dropped_or_answered() {
        let mut out = [0u8; 64];
        let call = Call::EnqueueSyndromes {
            decoder_id: 0,
            counter: 0,
            mapping_id: 0,
            num_bits: 12,
            bits: &[0xFF, 0x0F],
        };
        let n = encode_request(&mut out, 1, 2, &call).unwrap();
        assert_eq!(n, 58);
        let frame = out;
        let short = parse_request(&frame[..23]);
        assert_eq!(short, Err(FrameError::Short(23)));
        assert!(short.unwrap_err().is_dropped());
        let mut bad = frame;
        bad[0] = b'X';
        let e = parse_request(&bad).unwrap_err();
        assert!(matches!(e, FrameError::Magic { .. }) && e.is_dropped());
        assert_eq!(echo_fields(&bad), Some((1, 2)));
        assert_eq!(echo_fields(&bad[..20]), None);
        assert_eq!(peek_decoder_id(&bad), None);
        let mut bad = frame;
        bad[4] ^= 1;
        let e = parse_request(&bad).unwrap_err();
        assert!(matches!(e, FrameError::UnknownFunction(_)) && e.is_dropped());
        // Arguments past the frame: answered, not dropped.
        let e = parse_request(&frame[..n - 1]).unwrap_err();
        assert_eq!(
            e,
            FrameError::BeyondFrame {
                len: 34,
                available: 33
            }
        );
        assert!(!e.is_dropped());
        assert_eq!(e.status(), CallStatus::BadRequest);
        let mut bad = frame;
        bad[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            parse_request(&bad),
            Err(FrameError::BeyondFrame { .. })
        ));
        assert_eq!(peek_decoder_id(&bad), Some(0));
        assert_eq!(peek_decoder_id(&bad[..31]), None);
        // No bits, too few bytes for the bits, a negative count, more than the cap.
        for bits in [0i64, 17, 65, -1, i64::MIN, i64::MAX, MAX_SYNDROME_BITS + 1] {
            let mut bad = frame;
            bad[48..56].copy_from_slice(&bits.to_le_bytes());
            let e = parse_request(&bad[..n]).unwrap_err();
            assert!(matches!(e, FrameError::BitCount { .. }), "{bits}");
            assert!(!e.is_dropped());
        }
        // 16 bits in the same 2 bytes parse.
        let mut ok = frame;
        ok[48] = 16;
        assert!(parse_request(&ok[..n]).is_ok());
        let mut bad = frame;
        bad[8] = 31;
        assert!(matches!(
            parse_request(&bad),
            Err(FrameError::ArgLength { min: 32, .. })
        ));
        let gc = Call::GetCorrections {
            decoder_id: 0,
            return_size: 1,
            reset: false,
        };
        encode_request(&mut out, 1, 2, &gc).unwrap();
        let mut bad = out;
        bad[8] = 16;
        assert!(matches!(
            parse_request(&bad),
            Err(FrameError::ArgLength { min: 17, .. })
        ));
        assert_eq!(peek_decoder_id(&bad), Some(0));
        let mut bad = out;
        bad[8] = 7;
        assert_eq!(peek_decoder_id(&bad), None);
        let r = Call::ResetDecoder { decoder_id: 4 };
        encode_request(&mut out, 1, 2, &r).unwrap();
        let mut bad = out;
        bad[8] = 7;
        assert!(matches!(
            parse_request(&bad),
            Err(FrameError::ArgLength { min: 8, .. })
        ));
        // Buffers too small to write into.
        assert!(matches!(
            encode_request(&mut out[..40], 0, 0, &call),
            Err(FrameError::NoRoom { need: 58, .. })
        ));
        let h = ResponseHeader {
            status: 0,
            result_len: 0,
            request_id: 0,
            timestamp: 0,
        };
        assert!(matches!(
            encode_response(&mut out[..24], &h, &[1]),
            Err(FrameError::NoRoom { .. })
        ));
        assert!(matches!(
            parse_response(&frame),
            Err(FrameError::Magic { .. })
        ));
        assert_eq!(FrameError::Short(0).status(), CallStatus::BadRequest);
    }

    #[test]
    fn status_codes_are_stable() {
        for (i, s) in CallStatus::ALL.iter().enumerate() {
            assert_eq!(*s as i32, i as i32);
            assert_eq!(CallStatus::from_code(i as i32), Some(*s));
        }
        assert_eq!(CallStatus::from_code(7), None);
        assert_eq!(CallStatus::from_code(-1), None);
    }
}
