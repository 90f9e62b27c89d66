//! The payloads of a streaming decoder served as a backline coprocessor function
//! (`stream:FILE.dem…`): each request carries one operation — enqueue one round's detection
//! events, get the observable corrections so far, or reset — and each reply its status and the
//! stream's state. The slot's `decoder_id` selects the stream (one per decoder id). Every byte
//! is described in `docs/wire-format.md`; all integers are little-endian.
//!
//! Request (8 bytes, then the bits of an enqueue):
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 1 | op: 1 enqueue, 2 get corrections, 3 reset ([`Op`]) |
//! | 1 | 1 | enqueue: 0; get corrections: reset after answering (0 or 1); reset: 0 |
//! | 2 | 2 | reserved, 0 |
//! | 4 | 4 | enqueue: the round's index in the shot (from 0); get corrections: the number of observables asked for; reset: 0 |
//! | 8 | ⌈n/8⌉ | enqueue only: the round's `n` detection events, LSB-first, padding bits 0 |
//!
//! Reply (8 bytes, then the corrections of an `ok` get corrections):
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 1 | status ([`CallStatus`], the codes of the CUQR frames) |
//! | 1 | 1 | flags: bit 0 the corrections are final (every round decoded), bit 1 this call decoded a window |
//! | 2 | 2 | reserved, 0 |
//! | 4 | 4 | rounds of the current shot received so far |
//! | 8 | ⌈k/8⌉ | get corrections, status `ok`: the `k` observable flips decoded so far, LSB-first |

use crate::cuqr::CallStatus;

/// Bytes of a request before the enqueued bits, and of a reply before the corrections.
pub const STREAM_HEADER_BYTES: usize = 8;

/// Reply flag: the corrections are final (the shot's last window is decoded).
pub const FLAG_FINAL: u8 = 1;
/// Reply flag: this call decoded a window.
pub const FLAG_DECODED: u8 = 2;

/// The operation of a stream request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// Enqueue one round's detection events.
    Enqueue = 1,
    /// Get the observable corrections so far.
    GetCorrections = 2,
    /// Forget the shot.
    Reset = 3,
}

/// A stream request, as typed values (the bits borrowed from the payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRequest<'a> {
    /// Round `round`'s detection events, bit-packed.
    Enqueue {
        /// The round's index in the shot.
        round: u32,
        /// `⌈n/8⌉` bytes for the round's `n` detectors.
        bits: &'a [u8],
    },
    /// The corrections so far.
    GetCorrections {
        /// Observables asked for (must be the model's).
        observables: u32,
        /// Start a new shot after answering.
        reset: bool,
    },
    /// Forget the shot.
    Reset,
}

/// A stream reply's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamReply {
    /// The call's status.
    pub status: CallStatus,
    /// [`FLAG_FINAL`], [`FLAG_DECODED`].
    pub flags: u8,
    /// Rounds of the current shot received.
    pub rounds: u32,
}

/// Why stream bytes are not a request or a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(thiserror::Error))]
pub enum StreamPayloadError {
    /// Shorter than the 8-byte header.
    #[cfg_attr(
        feature = "std",
        error("stream payload of {0} bytes is shorter than 8")
    )]
    Short(usize),
    /// An op byte that is none of the three.
    #[cfg_attr(feature = "std", error("unknown stream op {0}"))]
    Op(u8),
    /// A reserved byte, a flag or a length that is not what the op takes.
    #[cfg_attr(feature = "std", error("malformed stream {0}"))]
    Malformed(&'static str),
    /// A status code that is not a [`CallStatus`].
    #[cfg_attr(feature = "std", error("unknown stream status {0}"))]
    Status(u8),
    /// The output buffer is too small.
    #[cfg_attr(feature = "std", error("{need} bytes do not fit {have}"))]
    NoRoom {
        /// Needed.
        need: usize,
        /// Available.
        have: usize,
    },
}

/// Parses a request payload. The bits of an enqueue are every byte after the header; their
/// count is checked against the round by the stream, which knows it.
pub fn parse_request(p: &[u8]) -> Result<StreamRequest<'_>, StreamPayloadError> {
    if p.len() < STREAM_HEADER_BYTES {
        return Err(StreamPayloadError::Short(p.len()));
    }
    if p[2] != 0 || p[3] != 0 {
        return Err(StreamPayloadError::Malformed(
            "request: reserved bytes 2..4 not 0",
        ));
    }
    let value = u32::from_le_bytes([p[4], p[5], p[6], p[7]]);
    let fixed = |what| {
        if p.len() == STREAM_HEADER_BYTES {
            Ok(())
        } else {
            Err(StreamPayloadError::Malformed(what))
        }
    };
    match p[0] {
        1 => {
            if p[1] != 0 {
                return Err(StreamPayloadError::Malformed("enqueue: byte 1 not 0"));
            }
            Ok(StreamRequest::Enqueue {
                round: value,
                bits: &p[STREAM_HEADER_BYTES..],
            })
        }
        2 => {
            fixed("get corrections: longer than 8 bytes")?;
            let reset = match p[1] {
                0 => false,
                1 => true,
                _ => {
                    return Err(StreamPayloadError::Malformed(
                        "get corrections: reset not 0 or 1",
                    ));
                }
            };
            Ok(StreamRequest::GetCorrections {
                observables: value,
                reset,
            })
        }
        3 => {
            fixed("reset: longer than 8 bytes")?;
            if p[1] != 0 || value != 0 {
                return Err(StreamPayloadError::Malformed("reset: bytes 1..8 not 0"));
            }
            Ok(StreamRequest::Reset)
        }
        op => Err(StreamPayloadError::Op(op)),
    }
}

/// Writes a request payload into `out`; returns its length.
pub fn encode_request(out: &mut [u8], r: &StreamRequest<'_>) -> Result<usize, StreamPayloadError> {
    let bits = match r {
        StreamRequest::Enqueue { bits, .. } => bits.len(),
        _ => 0,
    };
    let need = STREAM_HEADER_BYTES + bits;
    if out.len() < need {
        return Err(StreamPayloadError::NoRoom {
            need,
            have: out.len(),
        });
    }
    let (op, arg, value) = match *r {
        StreamRequest::Enqueue { round, bits } => {
            out[STREAM_HEADER_BYTES..need].copy_from_slice(bits);
            (Op::Enqueue, 0, round)
        }
        StreamRequest::GetCorrections { observables, reset } => {
            (Op::GetCorrections, reset as u8, observables)
        }
        StreamRequest::Reset => (Op::Reset, 0, 0),
    };
    out[0] = op as u8;
    out[1] = arg;
    out[2] = 0;
    out[3] = 0;
    out[4..8].copy_from_slice(&value.to_le_bytes());
    Ok(need)
}

/// Writes a reply header into `out[..8]` (the corrections, if any, go after it).
pub fn encode_reply(out: &mut [u8], r: &StreamReply) -> Result<usize, StreamPayloadError> {
    if out.len() < STREAM_HEADER_BYTES {
        return Err(StreamPayloadError::NoRoom {
            need: STREAM_HEADER_BYTES,
            have: out.len(),
        });
    }
    out[0] = r.status as i32 as u8;
    out[1] = r.flags;
    out[2] = 0;
    out[3] = 0;
    out[4..8].copy_from_slice(&r.rounds.to_le_bytes());
    Ok(STREAM_HEADER_BYTES)
}

/// Parses a reply payload into its header and the bytes after it.
pub fn parse_reply(p: &[u8]) -> Result<(StreamReply, &[u8]), StreamPayloadError> {
    if p.len() < STREAM_HEADER_BYTES {
        return Err(StreamPayloadError::Short(p.len()));
    }
    let status = CallStatus::from_code(p[0] as i32).ok_or(StreamPayloadError::Status(p[0]))?;
    if p[2] != 0 || p[3] != 0 || p[1] & !(FLAG_FINAL | FLAG_DECODED) != 0 {
        return Err(StreamPayloadError::Malformed("reply: reserved bits not 0"));
    }
    Ok((
        StreamReply {
            status,
            flags: p[1],
            rounds: u32::from_le_bytes([p[4], p[5], p[6], p[7]]),
        },
        &p[STREAM_HEADER_BYTES..],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_match_the_documented_bytes_and_round_trip() {
        let mut out = [0xAAu8; 16];
        let r = StreamRequest::Enqueue {
            round: 0x0102,
            bits: &[0x81, 0x07],
        };
        assert_eq!(encode_request(&mut out, &r), Ok(10));
        assert_eq!(out[..10], [1, 0, 0, 0, 0x02, 0x01, 0, 0, 0x81, 0x07]);
        assert_eq!(parse_request(&out[..10]), Ok(r));
        let g = StreamRequest::GetCorrections {
            observables: 1,
            reset: true,
        };
        assert_eq!(encode_request(&mut out, &g), Ok(8));
        assert_eq!(out[..8], [2, 1, 0, 0, 1, 0, 0, 0]);
        assert_eq!(parse_request(&out[..8]), Ok(g));
        assert_eq!(encode_request(&mut out, &StreamRequest::Reset), Ok(8));
        assert_eq!(out[..8], [3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse_request(&out[..8]), Ok(StreamRequest::Reset));
        // An enqueue of no bits is a request (the stream refuses the length).
        assert_eq!(
            parse_request(&[1, 0, 0, 0, 5, 0, 0, 0]),
            Ok(StreamRequest::Enqueue {
                round: 5,
                bits: &[]
            })
        );
        assert!(matches!(
            encode_request(&mut out[..9], &r),
            Err(StreamPayloadError::NoRoom { need: 10, .. })
        ));
    }

    #[test]
    fn malformed_requests_are_errors() {
        for (bytes, want) in [
            (&[1u8, 0, 0][..], "Short"),
            (&[9, 0, 0, 0, 0, 0, 0, 0], "Op"),
            (&[1, 1, 0, 0, 0, 0, 0, 0], "Malformed"),
            (&[1, 0, 1, 0, 0, 0, 0, 0], "Malformed"),
            (&[2, 2, 0, 0, 1, 0, 0, 0], "Malformed"),
            (&[2, 0, 0, 0, 1, 0, 0, 0, 0], "Malformed"),
            (&[3, 0, 0, 0, 1, 0, 0, 0], "Malformed"),
            (&[3, 0, 0, 0, 0, 0, 0, 0, 0], "Malformed"),
        ] {
            let e = parse_request(bytes).unwrap_err();
            let name = match e {
                StreamPayloadError::Short(_) => "Short",
                StreamPayloadError::Op(_) => "Op",
                StreamPayloadError::Malformed(_) => "Malformed",
                _ => "other",
            };
            assert_eq!(name, want, "{bytes:?}");
        }
    }

    #[test]
    fn replies_round_trip() {
        let mut out = [0u8; 9];
        let r = StreamReply {
            status: CallStatus::NotReady,
            flags: FLAG_FINAL | FLAG_DECODED,
            rounds: 6,
        };
        assert_eq!(encode_reply(&mut out, &r), Ok(8));
        assert_eq!(out[..8], [4, 3, 0, 0, 6, 0, 0, 0]);
        out[8] = 1;
        assert_eq!(parse_reply(&out), Ok((r, &[1u8][..])));
        out[0] = 7;
        assert_eq!(parse_reply(&out), Err(StreamPayloadError::Status(7)));
        out[0] = 0;
        out[1] = 4;
        assert!(matches!(
            parse_reply(&out),
            Err(StreamPayloadError::Malformed(_))
        ));
        assert_eq!(parse_reply(&out[..7]), Err(StreamPayloadError::Short(7)));
    }
}
