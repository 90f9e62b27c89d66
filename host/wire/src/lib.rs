//! The one definition of backline's wire format (v1): the slot layout that every transport
//! moves, the reply status codes, the ring geometry both sides agree on, and the out-of-band
//! handshake message shared by the host runtime and the Arm control plane; also the payloads
//! of streaming decoders ([`stream`]) and NVIDIA's realtime RPC frames ([`cuqr`]), which
//! backline speaks beside its own.
//!
//! The byte-by-byte description lives in `docs/wire-format.md`; this crate is its executable
//! form, and the layout is pinned by compile-time assertions below.
//!
//! # Slot layout
//!
//! A ring is `depth` slots of `slot_bytes` bytes each, 64-byte aligned. A slot carries one
//! message. The 16-byte [`SlotHeader`] sits at the *end* of the slot and the payload sits
//! directly in front of it ("tail-anchored"), so a message of any length is one contiguous
//! byte range that ends with the sequence number:
//!
//! ```text
//! slot base                                             slot base + slot_bytes
//! | unused ...            | payload (payload_len bytes) | header (16 bytes, seq last) |
//! ```
//!
//! One RDMA WRITE of that range delivers the message with the arrival flag in its last bytes;
//! a CPU writer stores the payload and header fields first and `seq` last with release
//! ordering, and the reader polls `seq` with acquire ordering.
#![no_std]
#![deny(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

pub mod cuqr;
mod handshake;
#[cfg(feature = "std")]
pub mod oob;
pub mod stream;

pub use handshake::{
    HANDSHAKE_BYTES, HANDSHAKE_MAGIC, HELLO_KEY_PROOF, Handshake, HandshakeError, HandshakeKind,
    KEY_PROOF_BYTES, KEY_PROOF_LABEL, KEY_PROOF_SIGNED_BYTES, KeyProof, RejectReason,
    seal as seal_handshake,
};

/// Version of the slot format and of the handshake message.
pub const WIRE_VERSION: u8 = 1;

/// Every slot starts on a 64-byte boundary (one cache line on x86-64).
pub const SLOT_ALIGN: usize = 64;

/// Size of the [`SlotHeader`] at the end of every slot.
pub const HEADER_BYTES: usize = 16;

/// Magic of a udp floor ping: 8 bytes, `"BKFP"` and a little-endian u32 counter, echoed as
/// they are by a backline server (the bare round trip a udp session is measured against).
pub const FLOOR_PING_MAGIC: [u8; 4] = *b"BKFP";

/// Smallest slot: one cache line, of which 48 bytes are payload.
pub const MIN_SLOT_BYTES: u32 = 64;

/// Largest slot the format allows (64 KiB).
pub const MAX_SLOT_BYTES: u32 = 64 * 1024;

/// Deepest ring the format allows.
pub const MAX_RING_DEPTH: u32 = 1 << 16;

/// Default ring depth: 8 slots, enough for 8 rounds in flight.
///
/// With two rings, deeper rings cost latency on CPU transports: a slot is rewritten only every
/// `depth` rounds, and once the ring no longer stays in both cores' private caches each write
/// has to fetch its line instead of upgrading it (`bench/examples/probe.rs` on the development
/// VM: a 256-slot ring ping-pong took 1.3–1.5× the one-cache-line floor, an 8-slot ring
/// 0.9–1.1×, same run). With the replies in place ([`IN_PLACE_REPLY_FLAG`]) the depth hardly
/// matters: 1.03× at 256 slots, 0.99× at 8 (same run, ~210 ns placement). The reference
/// system used 256; `--ring-depth` sets any power of two up to [`MAX_RING_DEPTH`], and both
/// sides must agree.
pub const DEFAULT_RING_DEPTH: u32 = 8;

/// Default slot size: one cache line, 48 bytes of payload.
pub const DEFAULT_SLOT_BYTES: u32 = 64;

/// What a reply written *in place* carries in its `seq` field: the request's `seq` with this
/// bit flipped.
///
/// On the memory transports (memcpy, shm) the coprocessor writes the reply to round `r` over
/// the request of round `r`, in the same slot, so that a round moves one cache line back and
/// forth, as the floor does, instead of two lines each written by one side (which costs every
/// write an extra ownership upgrade: 1.37–1.42× the floor in the development VM's ~210 ns vCPU
/// placement, against 0.99–1.06× in place; `bench/examples/probe.rs`, layers `split`, `ring`).
/// The flipped bit keeps the two messages of a slot apart: a reader of the reply can never
/// take the request for it, nor the reader of the next request the previous reply (their
/// values would be equal only for a ring of 2³¹ slots).
pub const IN_PLACE_REPLY_FLAG: u32 = 1 << 31;

/// Byte offset of `seq` inside the header.
pub const SEQ_OFFSET_IN_HEADER: usize = 12;

/// A round's sequence number: wrapping `u32`, starting at 1 for round 0.
///
/// Slot `i` of a ring carries the rounds `r` with `r % depth == i`; the message of round `r`
/// carries `seq = r + 1 (mod 2^32)`. A freshly zeroed ring therefore never looks like it holds
/// a message, and a reader waiting for round `r` waits for exactly `Seq::of_round(r)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Seq(pub u32);

impl Seq {
    /// The sequence number of round `round` (0-based).
    #[inline]
    pub const fn of_round(round: u64) -> Seq {
        Seq((round as u32).wrapping_add(1))
    }

    /// The slot index this sequence number lands in, for a ring of `depth` slots
    /// (a power of two).
    #[inline]
    pub const fn slot(self, depth: u32) -> u32 {
        self.0.wrapping_sub(1) & (depth - 1)
    }
}

/// Selects the coprocessor function that serves a message (e.g. 0 = X checks, 1 = Z checks).
/// Echoed unchanged in every reply.
pub type DecoderId = u32;

/// What kind of message a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Controller → coprocessor.
    Request = 1,
    /// Coprocessor → controller.
    Reply = 2,
}

impl Kind {
    /// Decodes the kind byte.
    pub const fn from_u8(v: u8) -> Option<Kind> {
        match v {
            1 => Some(Kind::Request),
            2 => Some(Kind::Reply),
            _ => None,
        }
    }
}

/// Status carried by every reply (0 in requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Status {
    /// The coprocessor function ran and its output is the payload.
    Ok = 0,
    /// No coprocessor function is registered under the request's `decoder_id`.
    UnknownDecoder = 1,
    /// The request's payload length was rejected (too long for the slot or for the function).
    BadLength = 2,
    /// The coprocessor function failed or panicked; the payload is empty.
    DecoderFailed = 3,
}

impl Status {
    /// Decodes a status word; unknown values are `None`.
    pub const fn from_u16(v: u16) -> Option<Status> {
        match v {
            0 => Some(Status::Ok),
            1 => Some(Status::UnknownDecoder),
            2 => Some(Status::BadLength),
            3 => Some(Status::DecoderFailed),
            _ => None,
        }
    }

    /// A short lower-case name, as printed in traces.
    pub const fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::UnknownDecoder => "unknown_decoder",
            Status::BadLength => "bad_length",
            Status::DecoderFailed => "decoder_failed",
        }
    }
}

/// The 16-byte header at the end of every slot, little-endian.
///
/// | offset | size | field         |
/// |-------:|-----:|---------------|
/// | 0      | 4    | `payload_len` |
/// | 4      | 4    | `decoder_id`  |
/// | 8      | 2    | `status`      |
/// | 10     | 1    | `kind`        |
/// | 11     | 1    | `version`     |
/// | 12     | 4    | `seq` — written last, the arrival flag |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct SlotHeader {
    /// Bytes of payload directly in front of the header.
    pub payload_len: u32,
    /// The coprocessor function selected by the request, echoed by the reply.
    pub decoder_id: DecoderId,
    /// A [`Status`] in replies, 0 in requests.
    pub status: u16,
    /// A [`Kind`].
    pub kind: u8,
    /// [`WIRE_VERSION`].
    pub version: u8,
    /// The arrival flag: `Seq::of_round(round)`.
    pub seq: u32,
}

const _: () = {
    assert!(core::mem::size_of::<SlotHeader>() == HEADER_BYTES);
    assert!(core::mem::align_of::<SlotHeader>() == 4);
    assert!(core::mem::offset_of!(SlotHeader, payload_len) == 0);
    assert!(core::mem::offset_of!(SlotHeader, decoder_id) == 4);
    assert!(core::mem::offset_of!(SlotHeader, status) == 8);
    assert!(core::mem::offset_of!(SlotHeader, kind) == 10);
    assert!(core::mem::offset_of!(SlotHeader, version) == 11);
    assert!(core::mem::offset_of!(SlotHeader, seq) == SEQ_OFFSET_IN_HEADER);
    assert!(SEQ_OFFSET_IN_HEADER + 4 == HEADER_BYTES);
    assert!(MIN_SLOT_BYTES as usize == SLOT_ALIGN);
    assert!(MIN_SLOT_BYTES.is_power_of_two() && MAX_SLOT_BYTES.is_power_of_two());
    assert!(DEFAULT_RING_DEPTH.is_power_of_two() && MAX_RING_DEPTH.is_power_of_two());
};

/// The header as four little-endian 32-bit words, for hardware that moves whole words (the
/// HWHS engine's request buffer and reply memory): the word index of each field, and the
/// value of word [`words::STATUS`] for a message of a kind.
pub mod words {
    use super::{Kind, WIRE_VERSION};

    /// Words in a header.
    pub const COUNT: u32 = 4;
    /// `payload_len`.
    pub const PAYLOAD_LEN: u32 = 0;
    /// `decoder_id`.
    pub const DECODER_ID: u32 = 1;
    /// `status` (15:0), `kind` (23:16), `version` (31:24).
    pub const STATUS: u32 = 2;
    /// `seq`, the arrival flag.
    pub const SEQ: u32 = 3;

    /// Word [`STATUS`] of a message of `kind` with `status`.
    pub const fn status_word(status: u16, kind: Kind) -> u32 {
        status as u32 | (kind as u32) << 16 | (WIRE_VERSION as u32) << 24
    }

    const _: () = {
        assert!(COUNT as usize * 4 == super::HEADER_BYTES);
        assert!(SEQ as usize * 4 == super::SEQ_OFFSET_IN_HEADER);
        assert!(core::mem::offset_of!(super::SlotHeader, decoder_id) == DECODER_ID as usize * 4);
        assert!(core::mem::offset_of!(super::SlotHeader, status) == STATUS as usize * 4);
        assert!(core::mem::offset_of!(super::SlotHeader, kind) == STATUS as usize * 4 + 2);
        assert!(core::mem::offset_of!(super::SlotHeader, version) == STATUS as usize * 4 + 3);
    };
}

impl SlotHeader {
    /// Encodes the header into its 16 little-endian bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..4].copy_from_slice(&self.payload_len.to_le_bytes());
        b[4..8].copy_from_slice(&self.decoder_id.to_le_bytes());
        b[8..10].copy_from_slice(&self.status.to_le_bytes());
        b[10] = self.kind;
        b[11] = self.version;
        b[12..16].copy_from_slice(&self.seq.to_le_bytes());
        b
    }

    /// Decodes a header from its 16 little-endian bytes (no validation).
    pub fn from_bytes(b: &[u8; HEADER_BYTES]) -> SlotHeader {
        SlotHeader {
            payload_len: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            decoder_id: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            status: u16::from_le_bytes([b[8], b[9]]),
            kind: b[10],
            version: b[11],
            seq: u32::from_le_bytes([b[12], b[13], b[14], b[15]]),
        }
    }
}

/// Why a [`Geometry`] or a slot image is not acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(thiserror::Error))]
pub enum GeometryError {
    /// Depth is zero, not a power of two, or above [`MAX_RING_DEPTH`].
    #[cfg_attr(
        feature = "std",
        error("ring depth {0} is not a power of two between 1 and {MAX_RING_DEPTH}")
    )]
    BadDepth(u32),
    /// Slot size is not a power of two between [`MIN_SLOT_BYTES`] and [`MAX_SLOT_BYTES`].
    #[cfg_attr(
        feature = "std",
        error(
            "slot size {0} bytes is not a power of two between {MIN_SLOT_BYTES} and {MAX_SLOT_BYTES}"
        )
    )]
    BadSlotBytes(u32),
    /// More rounds in flight than slots, or none.
    #[cfg_attr(
        feature = "std",
        error("{in_flight} rounds in flight do not fit a ring of {depth} slots (1 ..= depth)")
    )]
    BadInFlight {
        /// Requested rounds in flight.
        in_flight: u32,
        /// Ring depth.
        depth: u32,
    },
    /// A payload longer than the slot's capacity.
    #[cfg_attr(
        feature = "std",
        error("payload of {len} bytes exceeds the slot capacity of {capacity} bytes")
    )]
    PayloadTooLarge {
        /// Offered length.
        len: usize,
        /// The slot's payload capacity.
        capacity: usize,
    },
}

/// The shape of a ring, agreed by both sides when a session is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Number of slots, a power of two.
    pub depth: u32,
    /// Bytes per slot, a power of two ≥ 64; the payload capacity is `slot_bytes - 16`.
    pub slot_bytes: u32,
}

impl Default for Geometry {
    fn default() -> Self {
        Geometry {
            depth: DEFAULT_RING_DEPTH,
            slot_bytes: DEFAULT_SLOT_BYTES,
        }
    }
}

impl Geometry {
    /// Checks the bounds of [`Geometry`]'s fields.
    pub const fn validate(self) -> Result<Geometry, GeometryError> {
        if self.depth == 0 || !self.depth.is_power_of_two() || self.depth > MAX_RING_DEPTH {
            return Err(GeometryError::BadDepth(self.depth));
        }
        if self.slot_bytes < MIN_SLOT_BYTES
            || !self.slot_bytes.is_power_of_two()
            || self.slot_bytes > MAX_SLOT_BYTES
        {
            return Err(GeometryError::BadSlotBytes(self.slot_bytes));
        }
        Ok(self)
    }

    /// The smallest valid slot that carries `payload_bytes` of payload.
    pub const fn slot_bytes_for(payload_bytes: usize) -> u32 {
        let need = payload_bytes + HEADER_BYTES;
        let mut s = MIN_SLOT_BYTES as usize;
        while s < need && s < MAX_SLOT_BYTES as usize {
            s *= 2;
        }
        s as u32
    }

    /// Payload bytes one slot can carry.
    #[inline]
    pub const fn payload_capacity(self) -> usize {
        self.slot_bytes as usize - HEADER_BYTES
    }

    /// Bytes of one ring.
    #[inline]
    pub const fn ring_bytes(self) -> usize {
        self.depth as usize * self.slot_bytes as usize
    }

    /// Byte offset of the slot that carries `seq`, from the ring's base.
    #[inline]
    pub const fn slot_offset(self, seq: Seq) -> usize {
        seq.slot(self.depth) as usize * self.slot_bytes as usize
    }

    /// Byte range (offset from the ring base, length) that a message of `payload_len` bytes
    /// occupies in the slot of `seq`: payload then header, ending at the slot's end.
    #[inline]
    pub const fn message_range(self, seq: Seq, payload_len: usize) -> (usize, usize) {
        let end = self.slot_offset(seq) + self.slot_bytes as usize;
        let len = payload_len + HEADER_BYTES;
        (end - len, len)
    }

    /// Checks that `len` bytes of payload fit one slot.
    pub const fn check_payload(self, len: usize) -> Result<(), GeometryError> {
        if len > self.payload_capacity() {
            Err(GeometryError::PayloadTooLarge {
                len,
                capacity: self.payload_capacity(),
            })
        } else {
            Ok(())
        }
    }
}

/// Writes a whole message image (payload + header) into `out`, which must be exactly
/// `payload.len() + HEADER_BYTES` long. Used where a message travels as a byte string
/// (datagrams, RDMA staging) rather than through shared memory.
pub fn encode_message(out: &mut [u8], header: &SlotHeader, payload: &[u8]) {
    assert_eq!(
        out.len(),
        payload.len() + HEADER_BYTES,
        "message image length"
    );
    let (p, h) = out.split_at_mut(payload.len());
    p.copy_from_slice(payload);
    h.copy_from_slice(&header.to_bytes());
}

/// Why a message image was rejected by [`decode_message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(thiserror::Error))]
pub enum MessageError {
    /// Shorter than a header.
    #[cfg_attr(
        feature = "std",
        error("message of {0} bytes is shorter than its 16-byte header")
    )]
    Truncated(usize),
    /// `payload_len` disagrees with the image length.
    #[cfg_attr(
        feature = "std",
        error("header says {header} payload bytes but the message carries {actual}")
    )]
    LengthMismatch {
        /// From the header.
        header: u32,
        /// From the image.
        actual: usize,
    },
    /// Unknown version byte.
    #[cfg_attr(feature = "std", error("wire version {0}, expected {WIRE_VERSION}"))]
    Version(u8),
    /// Unknown kind byte.
    #[cfg_attr(feature = "std", error("unknown message kind {0}"))]
    Kind(u8),
}

/// Splits a message image into its header and payload, validating the header.
pub fn decode_message(image: &[u8]) -> Result<(SlotHeader, &[u8]), MessageError> {
    if image.len() < HEADER_BYTES {
        return Err(MessageError::Truncated(image.len()));
    }
    let (payload, h) = image.split_at(image.len() - HEADER_BYTES);
    let mut hb = [0u8; HEADER_BYTES];
    hb.copy_from_slice(h);
    let header = SlotHeader::from_bytes(&hb);
    if header.version != WIRE_VERSION {
        return Err(MessageError::Version(header.version));
    }
    if Kind::from_u8(header.kind).is_none() {
        return Err(MessageError::Kind(header.kind));
    }
    if header.payload_len as usize != payload.len() {
        return Err(MessageError::LengthMismatch {
            header: header.payload_len,
            actual: payload.len(),
        });
    }
    Ok((header, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_bytes() {
        let h = SlotHeader {
            payload_len: 0x0102_0304,
            decoder_id: 0xA0B0_C0D0,
            status: Status::DecoderFailed as u16,
            kind: Kind::Reply as u8,
            version: WIRE_VERSION,
            seq: 0xDEAD_BEEF,
        };
        let b = h.to_bytes();
        assert_eq!(&b[0..4], &[4, 3, 2, 1], "little-endian payload_len");
        assert_eq!(
            &b[12..16],
            &[0xEF, 0xBE, 0xAD, 0xDE],
            "seq is the last four bytes"
        );
        assert_eq!(SlotHeader::from_bytes(&b), h);
    }

    #[test]
    fn seq_maps_rounds_to_slots_and_wraps() {
        assert_eq!(Seq::of_round(0), Seq(1));
        assert_eq!(Seq::of_round(0).slot(256), 0);
        assert_eq!(Seq::of_round(255).slot(256), 255);
        assert_eq!(Seq::of_round(256).slot(256), 0);
        // Round 2^32 - 1 has seq 0, and still lands in the right slot.
        assert_eq!(Seq::of_round(u32::MAX as u64), Seq(0));
        assert_eq!(Seq::of_round(u32::MAX as u64).slot(256), 255);
        assert_eq!(Seq::of_round(1 << 32), Seq(1));
        assert_eq!(Seq::of_round(0).slot(1), 0);
        assert_eq!(Seq::of_round(7).slot(1), 0);
    }

    #[test]
    fn geometry_bounds() {
        assert!(Geometry::default().validate().is_ok());
        assert_eq!(
            Geometry {
                depth: 3,
                slot_bytes: 64
            }
            .validate(),
            Err(GeometryError::BadDepth(3))
        );
        assert_eq!(
            Geometry {
                depth: 0,
                slot_bytes: 64
            }
            .validate(),
            Err(GeometryError::BadDepth(0))
        );
        assert_eq!(
            Geometry {
                depth: 4,
                slot_bytes: 96
            }
            .validate(),
            Err(GeometryError::BadSlotBytes(96))
        );
        assert_eq!(
            Geometry {
                depth: 4,
                slot_bytes: 32
            }
            .validate(),
            Err(GeometryError::BadSlotBytes(32))
        );
        let g = Geometry {
            depth: 1,
            slot_bytes: 64,
        };
        assert_eq!(g.payload_capacity(), 48);
        assert!(g.check_payload(48).is_ok());
        assert_eq!(
            g.check_payload(49),
            Err(GeometryError::PayloadTooLarge {
                len: 49,
                capacity: 48
            })
        );
        assert_eq!(Geometry::slot_bytes_for(0), 64);
        assert_eq!(Geometry::slot_bytes_for(48), 64);
        assert_eq!(Geometry::slot_bytes_for(49), 128);
        assert_eq!(Geometry::slot_bytes_for(1000), 1024);
    }

    #[test]
    fn message_range_ends_at_slot_end() {
        let g = Geometry {
            depth: 4,
            slot_bytes: 128,
        };
        let (off, len) = g.message_range(Seq::of_round(5), 8);
        assert_eq!(off + len, 2 * 128);
        assert_eq!(len, 24);
    }

    #[test]
    fn message_image_round_trips() {
        let h = SlotHeader {
            payload_len: 3,
            decoder_id: 7,
            status: 0,
            kind: Kind::Request as u8,
            version: WIRE_VERSION,
            seq: 42,
        };
        let mut img = [0u8; 19];
        encode_message(&mut img, &h, &[9, 8, 7]);
        let (h2, p) = decode_message(&img).unwrap();
        assert_eq!(h2, h);
        assert_eq!(p, &[9, 8, 7]);
        assert_eq!(decode_message(&img[..10]), Err(MessageError::Truncated(10)));
        assert_eq!(
            decode_message(&img[1..]),
            Err(MessageError::LengthMismatch {
                header: 3,
                actual: 2
            })
        );
        let mut bad = img;
        bad[3 + 11] = 9;
        assert_eq!(decode_message(&bad), Err(MessageError::Version(9)));
        let mut bad = img;
        bad[3 + 10] = 0;
        assert_eq!(decode_message(&bad), Err(MessageError::Kind(0)));
    }

    #[test]
    fn status_codes_are_stable() {
        for (v, s) in [
            (0, Status::Ok),
            (1, Status::UnknownDecoder),
            (2, Status::BadLength),
            (3, Status::DecoderFailed),
        ] {
            assert_eq!(s as u16, v);
            assert_eq!(Status::from_u16(v), Some(s));
        }
        assert_eq!(Status::from_u16(4), None);
    }
}
