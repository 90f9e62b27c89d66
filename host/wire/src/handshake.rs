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
//! | 6  | 2  | reject reason (0 otherwise) |
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

use crate::{Geometry, WIRE_VERSION};

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
}

/// One handshake message, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// Hello, accept or reject.
    pub kind: HandshakeKind,
    /// Set when `kind` is [`HandshakeKind::Reject`].
    pub reason: Option<RejectReason>,
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
        b[6..8].copy_from_slice(&self.reason.map_or(0, |r| r as u16).to_le_bytes());
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
        let reason_raw = u16::from_le_bytes([b[6], b[7]]);
        let reason = match (kind, reason_raw) {
            (HandshakeKind::Reject, r) => {
                Some(RejectReason::from_u16(r).ok_or(HandshakeError::Reason(r))?)
            }
            (_, 0) => None,
            (_, r) => return Err(HandshakeError::Reason(r)),
        };
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[40..56]);
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&b[56..62]);
        Ok(Handshake {
            kind,
            reason,
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
        let mut k = good;
        k[5] = 9;
        let crc = crc32(&k[0..64]);
        k[64..68].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Handshake::decode(&k), Err(HandshakeError::Kind(9)));
    }
}
