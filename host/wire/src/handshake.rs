//! The out-of-band handshake message: one fixed-size, versioned, checksummed record that the
//! controller and the coprocessor (or the FPGA board's Arm control plane and its host peer)
//! exchange before the first round. UDP sends it as one datagram; RDMA and the board send it
//! over TCP.
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 4  | magic `"BKLH"` |
//! | 4  | 1  | version ([`WIRE_VERSION`]) |
//! | 5  | 1  | kind: 1 hello, 2 accept, 3 reject, 4 bye |
//! | 6  | 2  | reject: the reason; hello: flags (bit 0 [`HELLO_KEY_PROOF`]: a [`KeyProof`] of
//! |    |    | [`KEY_PROOF_BYTES`] follows the record); 0 otherwise |
//! | 8  | 4  | ring depth |
//! | 12 | 4  | slot bytes |
//! | 16 | 4  | rounds in flight the controller will use |
//! | 20 | 4  | queue-pair number (RDMA; 24 bits used) |
//! | 24 | 4  | first packet sequence number (RDMA; 24 bits used) |
//! | 28 | 4  | rkey of the sender's receive ring (RDMA) |
//! | 32 | 8  | virtual address of the sender's receive ring (RDMA) |
//! | 40 | 16 | GID (RDMA; an IPv4-mapped IPv6 address for RoCE v2) |
//! | 56 | 6  | MAC address (FPGA peers; zero otherwise) |
//! | 62 | 2  | session port: in a udp accept, the port the session's own socket listens on (0: the one the hello went to) |
//! | 64 | 4  | CRC-32 (IEEE) of bytes 0..64 |
//!
//! All integers are little-endian.
//!
//! # Key proofs
//!
//! A coprocessor started with a pre-shared key (`backline serve --token-file`) answers only a
//! hello followed by a [`KeyProof`]: when it was made, a nonce, and an HMAC-SHA256 under the
//! key of [`KeyProof::signed_bytes`] (a domain label, the whole hello record, the time and the
//! nonce). This module fixes the layout; the transport computes and checks the MAC.
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 8  | when the proof was made, µs since the Unix epoch |
//! | 8  | 16 | nonce (random, never reused) |
//! | 24 | 32 | HMAC-SHA256 tag |

use crate::{Geometry, WIRE_VERSION};

/// Hello flag: a [`KeyProof`] follows the record.
pub const HELLO_KEY_PROOF: u16 = 1;

/// Every hello flag this version knows; a hello with another bit set is malformed.
const HELLO_FLAGS: u16 = HELLO_KEY_PROOF;

/// Size of one encoded [`KeyProof`].
pub const KEY_PROOF_BYTES: usize = 56;

/// What a [`KeyProof`]'s tag is computed over, before the hello: names the purpose and the
/// format, so that a tag made for anything else under the same key never passes.
pub const KEY_PROOF_LABEL: &[u8; 24] = b"backline key proof v1\0\0\0";

/// The controller's proof that it holds the coprocessor's key, sent after a hello flagged
/// [`HELLO_KEY_PROOF`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyProof {
    /// When it was made, µs since the Unix epoch (checked against a freshness window).
    pub unix_us: u64,
    /// Random; a coprocessor remembers the nonces it admitted and refuses them again.
    pub nonce: [u8; 16],
    /// HMAC-SHA256 of [`KeyProof::signed_bytes`].
    pub tag: [u8; 32],
}

/// Length of [`KeyProof::signed_bytes`].
pub const KEY_PROOF_SIGNED_BYTES: usize = KEY_PROOF_LABEL.len() + HANDSHAKE_BYTES + 24;

impl KeyProof {
    /// The bytes the tag covers: the label, the hello record as sent, the time and the nonce.
    pub fn signed_bytes(
        hello: &[u8; HANDSHAKE_BYTES],
        unix_us: u64,
        nonce: &[u8; 16],
    ) -> [u8; KEY_PROOF_SIGNED_BYTES] {
        let mut b = [0u8; KEY_PROOF_SIGNED_BYTES];
        let (label, rest) = b.split_at_mut(KEY_PROOF_LABEL.len());
        label.copy_from_slice(KEY_PROOF_LABEL);
        let (h, rest) = rest.split_at_mut(HANDSHAKE_BYTES);
        h.copy_from_slice(hello);
        rest[..8].copy_from_slice(&unix_us.to_le_bytes());
        rest[8..].copy_from_slice(nonce);
        b
    }

    /// Encodes to the [`KEY_PROOF_BYTES`] layout.
    pub fn encode(&self) -> [u8; KEY_PROOF_BYTES] {
        let mut b = [0u8; KEY_PROOF_BYTES];
        b[0..8].copy_from_slice(&self.unix_us.to_le_bytes());
        b[8..24].copy_from_slice(&self.nonce);
        b[24..56].copy_from_slice(&self.tag);
        b
    }

    /// Decodes; only the length can be wrong (the tag decides the rest).
    pub fn decode(b: &[u8]) -> Option<KeyProof> {
        if b.len() != KEY_PROOF_BYTES {
            return None;
        }
        let mut unix_us = [0u8; 8];
        unix_us.copy_from_slice(&b[0..8]);
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(&b[8..24]);
        let mut tag = [0u8; 32];
        tag.copy_from_slice(&b[24..56]);
        Some(KeyProof {
            unix_us: u64::from_le_bytes(unix_us),
            nonce,
            tag,
        })
    }
}

/// Size of one encoded handshake message.
pub const HANDSHAKE_BYTES: usize = 68;

/// The four bytes every handshake message starts with.
pub const HANDSHAKE_MAGIC: [u8; 4] = *b"BKLH";

/// What a handshake message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum HandshakeKind {
    /// Controller → coprocessor: "here is my side and the geometry I want".
    Hello = 1,
    /// Coprocessor → controller: "agreed; here is my side".
    Accept = 2,
    /// Coprocessor → controller: "refused", with a [`RejectReason`].
    Reject = 3,
    /// Controller → coprocessor: "this session is over" (sent by `stop`).
    Bye = 4,
}

/// Why a coprocessor refused a hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(thiserror::Error))]
#[repr(u16)]
pub enum RejectReason {
    /// The hello's version is not ours.
    #[cfg_attr(feature = "std", error("wire version mismatch"))]
    Version = 1,
    /// Ring depth or slot size differ from the coprocessor's.
    #[cfg_attr(feature = "std", error("ring geometry mismatch"))]
    Geometry = 2,
    /// The coprocessor already serves a controller.
    #[cfg_attr(feature = "std", error("coprocessor busy with another controller"))]
    Busy = 3,
    /// The hello was malformed.
    #[cfg_attr(feature = "std", error("malformed hello"))]
    Malformed = 4,
    /// The hello asks for something this coprocessor cannot do (e.g. another transport).
    #[cfg_attr(feature = "std", error("unsupported request"))]
    Unsupported = 5,
    /// The coprocessor serves as many controllers as it takes (`--max-sessions`).
    #[cfg_attr(
        feature = "std",
        error("the coprocessor serves its maximum number of controllers")
    )]
    Full = 6,
}

impl RejectReason {
    fn from_u16(v: u16) -> Option<RejectReason> {
        Some(match v {
            1 => RejectReason::Version,
            2 => RejectReason::Geometry,
            3 => RejectReason::Busy,
            4 => RejectReason::Malformed,
            5 => RejectReason::Unsupported,
            6 => RejectReason::Full,
            _ => return None,
        })
    }
}

/// Why received bytes are not a valid handshake message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "std", derive(thiserror::Error))]
pub enum HandshakeError {
    /// Not [`HANDSHAKE_BYTES`] long.
    #[cfg_attr(
        feature = "std",
        error("handshake of {0} bytes, expected {HANDSHAKE_BYTES}")
    )]
    Length(usize),
    /// Does not start with [`HANDSHAKE_MAGIC`]: not a backline peer.
    #[cfg_attr(feature = "std", error("not a backline handshake (bad magic)"))]
    Magic,
    /// The checksum does not match: corrupted or garbage bytes.
    #[cfg_attr(feature = "std", error("handshake checksum mismatch"))]
    Checksum,
    /// A version other than ours.
    #[cfg_attr(
        feature = "std",
        error("handshake version {0}, this build speaks version {WIRE_VERSION}")
    )]
    Version(u8),
    /// Unknown kind byte.
    #[cfg_attr(feature = "std", error("unknown handshake kind {0}"))]
    Kind(u8),
    /// Unknown reject reason.
    #[cfg_attr(feature = "std", error("unknown reject reason {0}"))]
    Reason(u16),
    /// A hello with flags this version does not know.
    #[cfg_attr(feature = "std", error("unknown hello flags {0:#06x}"))]
    Flags(u16),
}

/// One handshake message, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// Hello, accept or reject.
    pub kind: HandshakeKind,
    /// Set when `kind` is [`HandshakeKind::Reject`].
    pub reason: Option<RejectReason>,
    /// A hello's flags ([`HELLO_KEY_PROOF`]); 0 in every other kind.
    pub flags: u16,
    /// The ring geometry the sender uses.
    pub geometry: Geometry,
    /// Rounds in flight the controller will use (≤ depth).
    pub in_flight: u32,
    /// RDMA queue-pair number.
    pub qpn: u32,
    /// RDMA initial packet sequence number.
    pub psn: u32,
    /// rkey of the sender's receive ring.
    pub rkey: u32,
    /// Virtual address of the sender's receive ring.
    pub ring_addr: u64,
    /// RDMA GID.
    pub gid: [u8; 16],
    /// MAC address (FPGA peers).
    pub mac: [u8; 6],
    /// udp accept: the port of the socket that serves this session (0: the hello's).
    pub session_port: u16,
}

impl Handshake {
    /// A hello or accept carrying only a geometry (the non-RDMA transports).
    pub const fn new(kind: HandshakeKind, geometry: Geometry, in_flight: u32) -> Handshake {
        Handshake {
            kind,
            reason: None,
            flags: 0,
            geometry,
            in_flight,
            qpn: 0,
            psn: 0,
            rkey: 0,
            ring_addr: 0,
            gid: [0; 16],
            mac: [0; 6],
            session_port: 0,
        }
    }

    /// A reject with its reason, echoing the coprocessor's geometry so the controller can say
    /// what was expected.
    pub const fn reject(reason: RejectReason, geometry: Geometry) -> Handshake {
        let mut h = Handshake::new(HandshakeKind::Reject, geometry, 0);
        h.reason = Some(reason);
        h
    }

    /// Encodes to the fixed [`HANDSHAKE_BYTES`] layout.
    pub fn encode(&self) -> [u8; HANDSHAKE_BYTES] {
        let mut b = [0u8; HANDSHAKE_BYTES];
        b[0..4].copy_from_slice(&HANDSHAKE_MAGIC);
        b[4] = WIRE_VERSION;
        b[5] = self.kind as u8;
        let word = match self.kind {
            HandshakeKind::Hello => self.flags,
            _ => self.reason.map_or(0, |r| r as u16),
        };
        b[6..8].copy_from_slice(&word.to_le_bytes());
        b[8..12].copy_from_slice(&self.geometry.depth.to_le_bytes());
        b[12..16].copy_from_slice(&self.geometry.slot_bytes.to_le_bytes());
        b[16..20].copy_from_slice(&self.in_flight.to_le_bytes());
        b[20..24].copy_from_slice(&self.qpn.to_le_bytes());
        b[24..28].copy_from_slice(&self.psn.to_le_bytes());
        b[28..32].copy_from_slice(&self.rkey.to_le_bytes());
        b[32..40].copy_from_slice(&self.ring_addr.to_le_bytes());
        b[40..56].copy_from_slice(&self.gid);
        b[56..62].copy_from_slice(&self.mac);
        b[62..64].copy_from_slice(&self.session_port.to_le_bytes());
        seal(&mut b);
        b
    }

    /// Decodes and validates magic, checksum, version and kind. Geometry bounds are checked
    /// by the receiver against its own configuration.
    pub fn decode(b: &[u8]) -> Result<Handshake, HandshakeError> {
        if b.len() != HANDSHAKE_BYTES {
            return Err(HandshakeError::Length(b.len()));
        }
        if b[0..4] != HANDSHAKE_MAGIC {
            return Err(HandshakeError::Magic);
        }
        if crc32(&b[0..64]) != le32(b, 64) {
            return Err(HandshakeError::Checksum);
        }
        if b[4] != WIRE_VERSION {
            return Err(HandshakeError::Version(b[4]));
        }
        let kind = match b[5] {
            1 => HandshakeKind::Hello,
            2 => HandshakeKind::Accept,
            3 => HandshakeKind::Reject,
            4 => HandshakeKind::Bye,
            k => return Err(HandshakeError::Kind(k)),
        };
        let word = u16::from_le_bytes([b[6], b[7]]);
        let (reason, flags) = match (kind, word) {
            (HandshakeKind::Reject, r) => (
                Some(RejectReason::from_u16(r).ok_or(HandshakeError::Reason(r))?),
                0,
            ),
            (HandshakeKind::Hello, f) if f & !HELLO_FLAGS != 0 => {
                return Err(HandshakeError::Flags(f));
            }
            (HandshakeKind::Hello, f) => (None, f),
            (_, 0) => (None, 0),
            (_, r) => return Err(HandshakeError::Reason(r)),
        };
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[40..56]);
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&b[56..62]);
        Ok(Handshake {
            kind,
            reason,
            flags,
            geometry: Geometry {
                depth: le32(b, 8),
                slot_bytes: le32(b, 12),
            },
            in_flight: le32(b, 16),
            qpn: le32(b, 20),
            psn: le32(b, 24),
            rkey: le32(b, 28),
            ring_addr: u64::from_le_bytes([b[32], b[33], b[34], b[35], b[36], b[37], b[38], b[39]]),
            gid,
            mac,
            session_port: u16::from_le_bytes([b[62], b[63]]),
        })
    }
}

/// Writes the checksum of a record's first 64 bytes into its last four, as [`Handshake::encode`]
/// does: for tests and fuzzers that build records field by field, valid or not.
pub fn seal(b: &mut [u8; HANDSHAKE_BYTES]) {
    let crc = crc32(&b[0..64]);
    b[64..68].copy_from_slice(&crc.to_le_bytes());
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bitwise: the handshake is sent once
/// per session, so a table is not worth its space.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= byte as u32;
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        // The CRC-32 check value: crc32("123456789") = 0xCBF43926.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn round_trips_every_field() {
        let mut h = Handshake::new(
            HandshakeKind::Hello,
            Geometry {
                depth: 512,
                slot_bytes: 128,
            },
            4,
        );
        h.qpn = 0x00AB_CDEF;
        h.psn = 0x0012_3456;
        h.rkey = 0xFEED_F00D;
        h.ring_addr = 0x7FFF_0000_1000;
        h.gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1];
        h.mac = [2, 0, 0, 0, 0, 1];
        h.session_port = 40_123;
        let b = h.encode();
        assert_eq!(&b[62..64], &40_123u16.to_le_bytes());
        assert_eq!(Handshake::decode(&b), Ok(h));
        for reason in [RejectReason::Geometry, RejectReason::Full] {
            let r = Handshake::reject(reason, Geometry::default());
            assert_eq!(Handshake::decode(&r.encode()), Ok(r));
        }
    }

    #[test]
    fn rejects_garbage_wrong_version_and_corruption() {
        let good = Handshake::new(HandshakeKind::Accept, Geometry::default(), 1).encode();
        assert_eq!(
            Handshake::decode(&good[..67]),
            Err(HandshakeError::Length(67))
        );
        assert_eq!(
            Handshake::decode(&[0x55; HANDSHAKE_BYTES]),
            Err(HandshakeError::Magic)
        );
        let mut flipped = good;
        flipped[9] ^= 1;
        assert_eq!(Handshake::decode(&flipped), Err(HandshakeError::Checksum));
        // A well-formed message from a future version is recognised as such.
        let mut v2 = good;
        v2[4] = 2;
        let crc = crc32(&v2[0..64]);
        v2[64..68].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Handshake::decode(&v2), Err(HandshakeError::Version(2)));
        let mut hello = Handshake::new(HandshakeKind::Hello, Geometry::default(), 1);
        hello.flags = HELLO_KEY_PROOF;
        assert_eq!(Handshake::decode(&hello.encode()), Ok(hello));
        hello.flags = 0x8001;
        assert_eq!(
            Handshake::decode(&hello.encode()),
            Err(HandshakeError::Flags(0x8001))
        );
        let mut accept_flags = good;
        accept_flags[6] = 1;
        seal(&mut accept_flags);
        assert_eq!(
            Handshake::decode(&accept_flags),
            Err(HandshakeError::Reason(1))
        );
        let mut k = good;
        k[5] = 9;
        let crc = crc32(&k[0..64]);
        k[64..68].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Handshake::decode(&k), Err(HandshakeError::Kind(9)));
    }
}

#[cfg(test)]
mod key_proof_tests {
    use super::*;

    #[test]
    fn a_proof_round_trips_and_its_signed_bytes_hold_every_field() {
        let p = KeyProof {
            unix_us: 0x0102_0304_0506_0708,
            nonce: [7; 16],
            tag: [9; 32],
        };
        assert_eq!(KeyProof::decode(&p.encode()), Some(p));
        assert_eq!(KeyProof::decode(&p.encode()[..55]), None);
        let hello = Handshake::new(HandshakeKind::Hello, Geometry::default(), 1).encode();
        let s = KeyProof::signed_bytes(&hello, p.unix_us, &p.nonce);
        assert_eq!(&s[..24], KEY_PROOF_LABEL);
        assert_eq!(&s[24..24 + HANDSHAKE_BYTES], &hello);
        assert_eq!(&s[92..100], &p.unix_us.to_le_bytes());
        assert_eq!(&s[100..], &p.nonce);
    }
}
