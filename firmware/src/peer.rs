//! The out-of-band handshake with the host peer, over TCP, with the one record definition of
//! `backline-wire` (`Handshake`, 68 bytes, versioned and checksummed) and its
//! `oob::{connect, send, recv}` — the same bytes the host runtime's RDMA transport speaks.
//!
//! The board is the controller of the session: it connects to the peer, sends a *hello*
//! with its data QP, first PSN, GID (its IPv4 address, mapped), MAC, the key and address of
//! the reply ring it registered, and the ring geometry; the peer answers *accept* with its
//! own QP, PSN, GID, MAC and request ring, or *reject* with a reason. Every step has the
//! configured timeout; a silent peer is an error, never a hang. Nothing is written to a
//! register until the answer has been validated.

use std::net::Ipv4Addr;
use std::time::Duration;

use backline_wire::oob::{self, OobError};
use backline_wire::{Geometry, Handshake, HandshakeKind};

use crate::config::Config;
use crate::model::{BoardFacts, PeerFacts, fmt_mac, mac_is_unicast};

/// What the peer told the board, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerInfo {
    /// The peer's QP number.
    pub qpn: u32,
    /// The peer's first PSN.
    pub psn: u32,
    /// The peer's IPv4 address (from its GID).
    pub ip: Ipv4Addr,
    /// The peer's MAC (from the record, else from `peer.mac` of the config).
    pub mac: [u8; 6],
    /// rkey of the peer's request ring.
    pub rkey: u32,
    /// Virtual address of the peer's request ring.
    pub ring_addr: u64,
    /// The agreed ring geometry.
    pub geometry: Geometry,
}

impl PeerInfo {
    /// The facts the ERNIC model checks a QP against.
    pub fn facts(&self) -> PeerFacts {
        PeerFacts {
            qpn: self.qpn,
            psn: self.psn,
            ip: self.ip.octets(),
            mac: self.mac,
        }
    }
}

/// Why the handshake failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// Connecting, sending or receiving failed: nothing listens, the peer went silent past
    /// the timeout, closed early, or sent bytes that are not a valid record (garbage, bad
    /// checksum, another wire version).
    #[error("handshake with {addr}: {source}")]
    Oob {
        /// The peer's address.
        addr: String,
        /// The cause.
        source: OobError,
    },
    /// The peer refused the hello.
    #[error("the peer at {addr} refused the hello: {reason}{detail}")]
    Rejected {
        /// The peer's address.
        addr: String,
        /// Its reason.
        reason: String,
        /// What the peer expected, when it says.
        detail: String,
    },
    /// The peer's answer is well-formed but unusable.
    #[error("the peer at {addr} answered {field} = {value}: {reason}")]
    BadAnswer {
        /// The peer's address.
        addr: String,
        /// Which field of the record.
        field: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
}

/// The GID of an IPv4 address: `::ffff:a.b.c.d` (RoCE v2).
pub fn gid_of(ip: Ipv4Addr) -> [u8; 16] {
    ip.to_ipv6_mapped().octets()
}

/// The IPv4 address inside an IPv4-mapped GID.
pub fn ip_of_gid(gid: [u8; 16]) -> Option<Ipv4Addr> {
    std::net::Ipv6Addr::from(gid).to_ipv4_mapped()
}

/// The geometry of the HWHS rings for this config.
pub fn geometry(cfg: &Config) -> Geometry {
    Geometry {
        depth: cfg.hwhs.ring_depth,
        slot_bytes: backline_regmap::SLOT_BYTES,
    }
}

/// The board's hello.
pub fn hello(cfg: &Config) -> Handshake {
    let mut h = Handshake::new(HandshakeKind::Hello, geometry(cfg), 1);
    h.qpn = cfg.qp.number;
    h.psn = cfg.qp.psn;
    h.gid = gid_of(cfg.ernic.ip);
    h.mac = cfg.ernic.mac.0;
    h.rkey = cfg.memory_region.key;
    h.ring_addr = cfg.memory_region.va;
    h
}

/// What the board announces, as the ERNIC model checks it.
pub fn board_facts(cfg: &Config) -> BoardFacts {
    let g = geometry(cfg);
    BoardFacts {
        qpn: cfg.qp.number,
        psn: cfg.qp.psn,
        rkey: cfg.memory_region.key,
        ring_addr: cfg.memory_region.va,
        ring_bytes: u64::from(g.depth) * u64::from(g.slot_bytes),
    }
}

/// Checks the peer's answer against the board's configuration.
pub fn check_answer(cfg: &Config, h: &Handshake) -> Result<PeerInfo, PeerError> {
    let addr = cfg.peer.address.clone();
    let ours = geometry(cfg);
    let bad = |field: &'static str, value: String, reason: String| PeerError::BadAnswer {
        addr: addr.clone(),
        field,
        value,
        reason,
    };
    match h.kind {
        HandshakeKind::Accept => {}
        HandshakeKind::Reject => {
            let reason = h.reason.map_or("no reason given".into(), |r| r.to_string());
            let detail = if h.reason == Some(backline_wire::RejectReason::Geometry) {
                format!(
                    " (the peer's rings: {} slots of {} bytes; the board's: {} slots of {} bytes)",
                    h.geometry.depth, h.geometry.slot_bytes, ours.depth, ours.slot_bytes
                )
            } else {
                String::new()
            };
            return Err(PeerError::Rejected {
                addr,
                reason,
                detail,
            });
        }
        k => {
            return Err(bad(
                "kind",
                format!("{k:?}"),
                "expected accept or reject".into(),
            ));
        }
    }
    if h.geometry != ours {
        return Err(bad(
            "geometry",
            format!(
                "{} slots of {} bytes",
                h.geometry.depth, h.geometry.slot_bytes
            ),
            format!(
                "the board's rings are {} slots of {} bytes; both sides must agree",
                ours.depth, ours.slot_bytes
            ),
        ));
    }
    if h.qpn < 2 || h.qpn > 0xFF_FFFF {
        return Err(bad(
            "qpn",
            h.qpn.to_string(),
            "a data QP number is 2 ..= 2^24-1".into(),
        ));
    }
    if h.psn > 0xFF_FFFF {
        return Err(bad(
            "psn",
            format!("{:#x}", h.psn),
            "PSNs are 24 bits".into(),
        ));
    }
    let ip = ip_of_gid(h.gid).ok_or_else(|| {
        bad(
            "gid",
            format!("{}", std::net::Ipv6Addr::from(h.gid)),
            "not an IPv4-mapped GID; the board's ERNIC is set up for RoCE v2 over IPv4".into(),
        )
    })?;
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
        return Err(bad(
            "gid",
            ip.to_string(),
            "not a unicast IPv4 address".into(),
        ));
    }
    let mac = if h.mac != [0; 6] {
        h.mac
    } else {
        cfg.peer.mac.map(|m| m.0).ok_or_else(|| {
            bad(
                "mac",
                "00:00:00:00:00:00".into(),
                "the peer sent no MAC and the config has no peer.mac; the ERNIC needs the \
                 next hop's MAC"
                    .into(),
            )
        })?
    };
    if !mac_is_unicast(mac) {
        return Err(bad("mac", fmt_mac(mac), "not a unicast MAC".into()));
    }
    if !h
        .ring_addr
        .is_multiple_of(u64::from(backline_wire::SLOT_ALIGN as u32))
    {
        return Err(bad(
            "ring_addr",
            format!("{:#x}", h.ring_addr),
            "ring slots are 64-byte aligned".into(),
        ));
    }
    Ok(PeerInfo {
        qpn: h.qpn,
        psn: h.psn,
        ip,
        mac,
        rkey: h.rkey,
        ring_addr: h.ring_addr,
        geometry: h.geometry,
    })
}

/// Connects to the peer, sends the hello, waits for the answer and validates it.
pub fn exchange(cfg: &Config) -> Result<PeerInfo, PeerError> {
    let addr = cfg.peer.address.clone();
    let t = Duration::from_millis(cfg.peer.timeout_ms);
    let oob_err = |source| PeerError::Oob {
        addr: addr.clone(),
        source,
    };
    let mut s = oob::connect(&addr, t).map_err(oob_err)?;
    s.set_write_timeout(Some(t))
        .map_err(|e| oob_err(OobError::Io(e)))?;
    oob::send(&mut s, &hello(cfg)).map_err(oob_err)?;
    let answer = oob::recv(&mut s, t).map_err(oob_err)?;
    check_answer(cfg, &answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::example;

    type Case<'a> = (&'a dyn Fn(&mut Handshake), &'a str);

    fn accept(cfg: &Config) -> Handshake {
        let mut h = Handshake::new(HandshakeKind::Accept, geometry(cfg), 1);
        h.qpn = 0x11;
        h.psn = 0x2000;
        h.gid = gid_of(Ipv4Addr::new(10, 0, 0, 1));
        h.mac = [2, 0, 0, 0, 0, 1];
        h.rkey = 0x1234;
        h.ring_addr = 0x7F00_0000_0000;
        h
    }

    #[test]
    fn the_hello_carries_the_board_side() {
        let cfg = example();
        let h = hello(&cfg);
        assert_eq!((h.qpn, h.psn, h.rkey), (2, 0x100, 0x21));
        assert_eq!(ip_of_gid(h.gid), Some(cfg.ernic.ip));
        assert_eq!(Handshake::decode(&h.encode()), Ok(h));
    }

    #[test]
    fn answers_are_validated_field_by_field() {
        let cfg = example();
        let p = check_answer(&cfg, &accept(&cfg)).unwrap();
        assert_eq!(
            (p.qpn, p.ip, p.ring_addr),
            (0x11, Ipv4Addr::new(10, 0, 0, 1), 0x7F00_0000_0000)
        );
        let cases: [Case<'_>; 6] = [
            (
                &|h| h.geometry.depth = 256,
                "answered geometry = 256 slots of 64 bytes",
            ),
            (&|h| h.qpn = 1, "answered qpn = 1"),
            (
                &|h| h.gid = [0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                "not an IPv4-mapped GID",
            ),
            (&|h| h.mac = [0; 6], "sent no MAC"),
            (
                &|h| h.ring_addr = 0x7F00_0000_0010,
                "answered ring_addr = 0x7f0000000010",
            ),
            (
                &|h| h.kind = HandshakeKind::Hello,
                "expected accept or reject",
            ),
        ];
        for (edit, want) in cases {
            let mut h = accept(&cfg);
            edit(&mut h);
            let e = check_answer(&cfg, &h).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        let r = Handshake::reject(
            backline_wire::RejectReason::Geometry,
            Geometry {
                depth: 256,
                slot_bytes: 64,
            },
        );
        let e = check_answer(&cfg, &r).unwrap_err().to_string();
        assert!(
            e.contains("refused the hello: ring geometry mismatch (the peer's rings: 256 slots"),
            "{e}"
        );
        let mut cfg2 = cfg.clone();
        cfg2.peer.mac = Some(crate::config::Mac([2, 0, 0, 0, 0, 9]));
        let mut h = accept(&cfg2);
        h.mac = [0; 6];
        assert_eq!(check_answer(&cfg2, &h).unwrap().mac, [2, 0, 0, 0, 0, 9]);
    }
}
