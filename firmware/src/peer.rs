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

use std::time::Duration;

use backline_board::PeerInfo;
use backline_wire::oob::{self, OobError};
use backline_wire::{Geometry, Handshake, HandshakeKind};

use crate::config::Config;

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

/// The geometry of the HWHS rings for this config.
pub fn geometry(cfg: &Config) -> Geometry {
    Geometry {
        depth: cfg.hwhs.ring_depth,
        slot_bytes: backline_regmap::SLOT_BYTES,
    }
}

/// What the board announces: its data QP, first PSN, address and MAC, and the reply ring it
/// registered with its key.
pub fn board_info(cfg: &Config) -> PeerInfo {
    let g = geometry(cfg);
    PeerInfo {
        qpn: cfg.qp.number,
        psn: cfg.qp.psn,
        ip: cfg.ernic.ip,
        mac: cfg.ernic.mac.0,
        rkey: cfg.memory_region.key,
        ring_addr: cfg.memory_region.va,
        depth: g.depth,
        slot_bytes: g.slot_bytes,
    }
}

/// The board's hello.
pub fn hello(cfg: &Config) -> Handshake {
    board_info(cfg).record(HandshakeKind::Hello)
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
    PeerInfo::from_record(h, cfg.peer.mac.map(|m| m.0)).map_err(|e| PeerError::BadAnswer {
        addr: addr.clone(),
        field: e.field,
        value: e.value,
        reason: e.reason,
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
        h.gid = backline_board::gid_of(std::net::Ipv4Addr::new(10, 0, 0, 1));
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
        assert_eq!(backline_board::ip_of_gid(h.gid), Some(cfg.ernic.ip));
        assert_eq!(Handshake::decode(&h.encode()), Ok(h));
        assert_eq!(PeerInfo::from_record(&h, None).unwrap(), board_info(&cfg));
    }

    #[test]
    fn answers_are_validated_field_by_field() {
        let cfg = example();
        let p = check_answer(&cfg, &accept(&cfg)).unwrap();
        assert_eq!(
            (p.qpn, p.ip, p.ring_addr),
            (0x11, std::net::Ipv4Addr::new(10, 0, 0, 1), 0x7F00_0000_0000)
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
