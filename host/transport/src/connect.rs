//! The transports, one entry each in [`TRANSPORTS`]: how a controller connects (connect →
//! hello → link) and how a coprocessor listens. The session life cycle calls these and knows
//! nothing else of a transport, so adding one adds an entry here and its module.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use crate::admit::Gate;
use crate::link::{Admission, ControllerLink, Listener, RingController};
use crate::rdma::{RdmaClient, RdmaListener};
use crate::shm::{ShmClient, ShmListener};
use crate::udp::{UdpClient, UdpListener};
use crate::{Result, SessionConfig, TransportKind, memcpy};

/// An established controller link. The ring transports (memcpy, shm) are called directly, so
/// their per-round calls inline; others go through the trait object.
pub(crate) enum Link {
    Ring(RingController),
    Other(Box<dyn ControllerLink>),
}

/// A controller's connection between `connect` and `establish_channel`.
pub(crate) trait Connecting: Send {
    /// `exchange_keys`: the hello and its answer (geometry, rounds in flight, transport keys).
    fn hello(&mut self, config: &SessionConfig) -> Result<()>;
    /// `establish_channel`: the rings or sockets rounds travel through.
    fn establish(self: Box<Self>, config: &SessionConfig) -> Result<Link>;
}

/// What a listener factory needs besides the address.
pub(crate) struct ListenArgs<'a> {
    /// The coprocessor session's key (memcpy ports are named by it).
    pub key: &'a str,
    /// Settings of the session.
    pub config: &'a SessionConfig,
    /// How many controllers may be served at once.
    pub admission: Arc<Admission>,
    /// udp: how long a quiet controller keeps its session.
    pub idle_timeout: Duration,
    /// Where a listener counts datagrams of no session (udp).
    pub strays: Arc<AtomicU64>,
    /// Where a keyed listener counts the hellos it refused.
    pub unadmitted: Arc<AtomicU64>,
}

impl ListenArgs<'_> {
    /// The check of keyed hellos for a listener at `address`, when the settings hold a key.
    fn gate(&self, address: &str) -> Option<Gate> {
        let key = self.config.key.clone()?;
        Some(Gate::new(key, self.unadmitted.clone(), address.to_string()))
    }
}

/// A controller's connector: (session key, peer as the user names it, out-of-band port,
/// settings) → (a description of the peer, the connection).
pub(crate) type Connector =
    fn(&str, &str, u16, &SessionConfig) -> Result<(String, Box<dyn Connecting>)>;

/// A coprocessor's listener factory: (address, out-of-band port, the rest) → the listener.
pub(crate) type ListenerFactory = fn(&str, u16, ListenArgs<'_>) -> Result<Box<dyn Listener>>;

/// One transport's entry points.
pub(crate) struct Transport {
    /// Which.
    pub kind: TransportKind,
    /// Controller: the peer as the user names it (memcpy: a key, empty for the session's own;
    /// shm: a segment name; udp, rdma: `host[:port]`).
    pub connect: Connector,
    /// Coprocessor: the address to serve on.
    pub listen: ListenerFactory,
}

/// Every transport.
pub(crate) const TRANSPORTS: [Transport; 4] = [
    Transport {
        kind: TransportKind::Memcpy,
        connect: |key, peer, _, _| {
            let key = if peer.is_empty() { key } else { peer };
            Ok((
                format!("memcpy:{key}"),
                Box::new(Memcpy(memcpy::find(key)?)),
            ))
        },
        listen: |address, _, a| {
            let key = if address.is_empty() { a.key } else { address };
            Ok(Box::new(memcpy::MemcpyListener::open(
                key,
                a.config.geometry,
                a.admission,
            )?))
        },
    },
    Transport {
        kind: TransportKind::Shm,
        connect: |_, peer, _, config| {
            Ok((
                format!("shm:{peer}"),
                Box::new(Shm(ShmClient::open(peer, config.geometry)?)),
            ))
        },
        listen: |address, _, a| {
            Ok(Box::new(ShmListener::create(
                address,
                a.config.geometry,
                a.admission,
            )?))
        },
    },
    Transport {
        kind: TransportKind::Udp,
        connect: |_, peer, oob_port, _| {
            let addr = with_port(peer, oob_port);
            Ok((
                format!("udp:{addr}"),
                Box::new(Udp(UdpClient::connect(&addr)?)),
            ))
        },
        listen: |address, oob_port, a| {
            let address = with_port(address, oob_port);
            let gate = a.gate(&format!("udp:{address}"));
            Ok(Box::new(UdpListener::bind(
                &address,
                a.config.geometry,
                a.admission,
                a.idle_timeout,
                a.strays,
                gate,
            )?))
        },
    },
    Transport {
        kind: TransportKind::Rdma,
        connect: |_, peer, oob_port, config| {
            let addr = with_port(peer, oob_port);
            Ok((
                format!("rdma:{addr}"),
                Box::new(Rdma(Box::new(RdmaClient::connect(&addr, config)?))),
            ))
        },
        listen: |address, oob_port, a| {
            let address = with_port(address, oob_port);
            let gate = a.gate(&format!("rdma:{address}"));
            Ok(Box::new(RdmaListener::bind(
                &address,
                a.config,
                a.admission,
                gate,
            )?))
        },
    },
];

/// The entry of `kind`.
pub(crate) fn transport(kind: TransportKind) -> &'static Transport {
    TRANSPORTS
        .iter()
        .find(|t| t.kind == kind)
        .expect("every TransportKind has an entry")
}

struct Memcpy(Arc<memcpy::Port>);

impl Connecting for Memcpy {
    fn hello(&mut self, config: &SessionConfig) -> Result<()> {
        memcpy::exchange(&self.0, config.geometry)
    }
    fn establish(self: Box<Self>, config: &SessionConfig) -> Result<Link> {
        Ok(Link::Ring(memcpy::attach(
            self.0,
            config.geometry,
            config.setup_timeout,
        )?))
    }
}

struct Shm(ShmClient);

impl Connecting for Shm {
    fn hello(&mut self, config: &SessionConfig) -> Result<()> {
        self.0.hello(config.in_flight, config.setup_timeout)
    }
    fn establish(self: Box<Self>, _: &SessionConfig) -> Result<Link> {
        Ok(Link::Ring(self.0.into_link()))
    }
}

struct Udp(UdpClient);

impl Connecting for Udp {
    fn hello(&mut self, config: &SessionConfig) -> Result<()> {
        self.0.hello(
            config.geometry,
            config.in_flight,
            config.setup_timeout,
            config.key.as_ref(),
        )
    }
    fn establish(self: Box<Self>, config: &SessionConfig) -> Result<Link> {
        Ok(Link::Other(Box::new(self.0.into_link(config.geometry)?)))
    }
}

struct Rdma(Box<RdmaClient>);

impl Connecting for Rdma {
    fn hello(&mut self, config: &SessionConfig) -> Result<()> {
        self.0.hello(
            config.geometry,
            config.in_flight,
            config.setup_timeout,
            config.key.as_ref(),
        )
    }
    fn establish(self: Box<Self>, _: &SessionConfig) -> Result<Link> {
        Ok(Link::Other(Box::new(self.0.into_link()?)))
    }
}

/// `host:port` from `peer`, adding `port` when `peer` has none (empty: loopback).
pub(crate) fn with_port(peer: &str, port: u16) -> String {
    if peer.parse::<std::net::SocketAddr>().is_ok()
        || peer
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && !h.ends_with(':') && p.parse::<u16>().is_ok())
    {
        peer.to_string()
    } else if peer.is_empty() {
        format!("127.0.0.1:{port}")
    } else {
        format!("{peer}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_added_only_when_missing() {
        assert_eq!(with_port("127.0.0.1:9", 7), "127.0.0.1:9");
        assert_eq!(with_port("localhost", 7), "localhost:7");
        assert_eq!(with_port("", 7), "127.0.0.1:7");
        assert_eq!(with_port("[::1]:5", 7), "[::1]:5");
        assert_eq!(with_port("10.0.0.2", 7878), "10.0.0.2:7878");
    }

    #[test]
    fn every_transport_has_one_entry() {
        for k in TransportKind::ALL {
            assert_eq!(TRANSPORTS.iter().filter(|t| t.kind == k).count(), 1, "{k}");
        }
    }
}
