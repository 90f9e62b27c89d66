//! [`PeerInfo`]: the RoCE identity one side of the out-of-band handshake announces — its
//! queue pair and first PSN, its IPv4 address (carried as an IPv4-mapped GID) and MAC, the
//! ring the other side writes into with its key, and the ring geometry — validated, in one
//! type for both sides: the board's hello, the host peer's answer, and the simulated board's
//! modelled peer.

use std::net::{Ipv4Addr, Ipv6Addr};

use backline_wire::{Geometry, Handshake, HandshakeKind};
use serde::{Deserialize, Serialize};

/// One side of a handshake, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Its queue pair (24 bits; data QPs start at 2).
    pub qpn: u32,
    /// Its first packet sequence number (24 bits).
    pub psn: u32,
    /// Its IPv4 address (the GID, IPv4-mapped).
    pub ip: Ipv4Addr,
    /// Its MAC (unicast).
    pub mac: [u8; 6],
    /// The key of the ring it receives into.
    pub rkey: u32,
    /// The virtual address of that ring (64-byte aligned).
    pub ring_addr: u64,
    /// Slots of the ring.
    pub depth: u32,
    /// Bytes per slot.
    pub slot_bytes: u32,
}

/// A field of a handshake record that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerError {
    /// The record's field.
    pub field: &'static str,
    /// Its value, printed.
    pub value: String,
    /// Why it cannot be used.
    pub reason: String,
}

impl std::error::Error for PeerError {}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {}: {}", self.field, self.value, self.reason)
    }
}

/// The GID of an IPv4 address: `::ffff:a.b.c.d` (RoCE v2).
pub fn gid_of(ip: Ipv4Addr) -> [u8; 16] {
    ip.to_ipv6_mapped().octets()
}

/// The IPv4 address inside an IPv4-mapped GID.
pub fn ip_of_gid(gid: [u8; 16]) -> Option<Ipv4Addr> {
    Ipv6Addr::from(gid).to_ipv4_mapped()
}

/// True for a MAC address a QP can send to: not zero, not multicast.
pub fn mac_is_unicast(mac: [u8; 6]) -> bool {
    mac != [0; 6] && mac[0] & 1 == 0
}

/// `02:0a:35:00:00:01`.
pub fn fmt_mac(mac: [u8; 6]) -> String {
    let parts: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    parts.join(":")
}

impl PeerInfo {
    /// The ring geometry it announced.
    pub fn geometry(&self) -> Geometry {
        Geometry {
            depth: self.depth,
            slot_bytes: self.slot_bytes,
        }
    }

    /// Bytes of its ring.
    pub fn ring_bytes(&self) -> u64 {
        u64::from(self.depth) * u64::from(self.slot_bytes)
    }

    /// Validates the fields of a record (`kind` is the caller's business); the MAC comes from
    /// the record, else from `fallback_mac` (a host NIC's transport sends zeros there).
    pub fn from_record(
        h: &Handshake,
        fallback_mac: Option<[u8; 6]>,
    ) -> Result<PeerInfo, PeerError> {
        let bad = |field: &'static str, value: String, reason: &str| PeerError {
            field,
            value,
            reason: reason.to_string(),
        };
        if h.qpn < 2 || h.qpn > 0xFF_FFFF {
            return Err(bad(
                "qpn",
                h.qpn.to_string(),
                "a data QP number is 2 ..= 2^24-1",
            ));
        }
        if h.psn > 0xFF_FFFF {
            return Err(bad("psn", format!("{:#x}", h.psn), "PSNs are 24 bits"));
        }
        let ip = ip_of_gid(h.gid).ok_or_else(|| {
            bad(
                "gid",
                Ipv6Addr::from(h.gid).to_string(),
                "not an IPv4-mapped GID; the board's ERNIC is set up for RoCE v2 over IPv4",
            )
        })?;
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return Err(bad("gid", ip.to_string(), "not a unicast IPv4 address"));
        }
        let mac = if h.mac != [0; 6] {
            h.mac
        } else {
            fallback_mac.ok_or_else(|| {
                bad(
                    "mac",
                    "00:00:00:00:00:00".into(),
                    "the peer sent no MAC and the config has no peer.mac; the ERNIC needs the \
                     next hop's MAC",
                )
            })?
        };
        if !mac_is_unicast(mac) {
            return Err(bad("mac", fmt_mac(mac), "not a unicast MAC"));
        }
        if !h.ring_addr.is_multiple_of(backline_wire::SLOT_ALIGN as u64) {
            return Err(bad(
                "ring_addr",
                format!("{:#x}", h.ring_addr),
                "ring slots are 64-byte aligned",
            ));
        }
        Ok(PeerInfo {
            qpn: h.qpn,
            psn: h.psn,
            ip,
            mac,
            rkey: h.rkey,
            ring_addr: h.ring_addr,
            depth: h.geometry.depth,
            slot_bytes: h.geometry.slot_bytes,
        })
    }

    /// The record that announces this side (one round in flight).
    pub fn record(&self, kind: HandshakeKind) -> Handshake {
        let mut h = Handshake::new(kind, self.geometry(), 1);
        h.qpn = self.qpn;
        h.psn = self.psn;
        h.gid = gid_of(self.ip);
        h.mac = self.mac;
        h.rkey = self.rkey;
        h.ring_addr = self.ring_addr;
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> PeerInfo {
        PeerInfo {
            qpn: 0x11,
            psn: 0x2000,
            ip: Ipv4Addr::new(10, 0, 0, 1),
            mac: [2, 0, 0, 0, 0, 1],
            rkey: 0x1234,
            ring_addr: 0x7F00_0000_0000,
            depth: 64,
            slot_bytes: 64,
        }
    }

    /// A record edit and the field its error must name.
    type Case<'a> = (&'a dyn Fn(&mut Handshake), &'a str);

    #[test]
    fn a_record_round_trips_and_bad_fields_are_named() {
        let p = peer();
        let h = p.record(HandshakeKind::Accept);
        assert_eq!(PeerInfo::from_record(&h, None).unwrap(), p);
        let cases: [Case<'_>; 5] = [
            (&|h| h.qpn = 1, "qpn = 1"),
            (&|h| h.psn = 1 << 24, "psn = 0x1000000"),
            (
                &|h| h.gid = [0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                "not an IPv4-mapped GID",
            ),
            (&|h| h.mac = [0; 6], "sent no MAC"),
            (
                &|h| h.ring_addr = 0x7F00_0000_0010,
                "ring_addr = 0x7f0000000010",
            ),
        ];
        for (edit, want) in cases {
            let mut h = p.record(HandshakeKind::Accept);
            edit(&mut h);
            let e = PeerInfo::from_record(&h, None).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        let mut h = p.record(HandshakeKind::Accept);
        h.mac = [0; 6];
        assert_eq!(
            PeerInfo::from_record(&h, Some([2, 0, 0, 0, 0, 9]))
                .unwrap()
                .mac,
            [2, 0, 0, 0, 0, 9]
        );
        assert_eq!(fmt_mac(p.mac), "02:00:00:00:00:01");
        assert!(!mac_is_unicast([1, 0, 0, 0, 0, 0]));
    }
}
