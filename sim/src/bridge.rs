//! The bridge from the simulated fabric to a real coprocessor.
//!
//! On a board, the ERNIC RDMA-writes each request the HWHS posts into the coprocessor's
//! request ring, and the coprocessor RDMA-writes its reply into the engine's reply memory.
//! In the simulator the remote side of that fabric can be a real `backline serve` (or any
//! backline coprocessor): the [`Bridge`] holds a controller session to it over a real
//! transport — `udp:HOST:PORT`, `shm:NAME` or `rdma:HOST:PORT` — and relays each request
//! the ERNIC model sends (payload and `decoder_id`) as one round of that session; the reply
//! the coprocessor wrote (payload, status, `decoder_id` echoed) is what the ERNIC model then
//! writes into the engine's reply slot, under the engine's own sequence number, exactly as
//! an incoming RDMA WRITE of that image would land.
//!
//! Timing: the round is timed from posting to collecting ([`BridgeReply::service_ns`]): the
//! coprocessor's service as this side sees it, which includes the real transport's own
//! round trip (microseconds over shm, tens of them over udp or Soft-RoCE). The simulated
//! board's fabric is modelled on top (`crate::model`).
//!
//! Failures: an address where nothing answers fails [`Bridge::connect`], before the first
//! round; a reply that does not come within the reply timeout, a coprocessor that has gone
//! away, and a reply too large for the engine's 64-byte reply slot are [`Loss`]es — the
//! round's reply is not delivered, so the engine's reply timeout fires and the trace marks
//! the round — and the simulation goes on or stops as the run decides. Once a loss has broken
//! the session ([`Bridge::is_gone`]) every later round is lost at once, without touching the
//! transport, and a run that goes on shortens the engine's wait for those rounds
//! (`crate::run`): a dead peer costs no timeouts' worth of simulated cycles.

use std::time::{Duration, Instant};

use backline_regmap as rm;
use backline_transport::{
    Controller as _, ControllerSession, RdmaOptions, Session as _, SessionConfig, TransportKind,
    WaitPolicy,
};
use backline_wire::{DecoderId, Geometry, HEADER_BYTES, Status};

/// Where the coprocessor is: `udp:HOST:PORT`, `shm:NAME` or `rdma:HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoprocessorAddr {
    /// The transport.
    pub transport: TransportKind,
    /// Its address (`HOST:PORT` or the segment name).
    pub peer: String,
}

impl CoprocessorAddr {
    /// Parses `udp:HOST:PORT`, `shm:NAME` or `rdma:HOST:PORT`.
    pub fn parse(spec: &str) -> Result<CoprocessorAddr, String> {
        // Errors quote an excerpt of the address.
        let s = &backline_decoders::io::excerpt(spec);
        let (kind, rest) = spec.split_once(':').ok_or_else(|| {
            format!("coprocessor `{s}`: expected udp:HOST:PORT, shm:NAME or rdma:HOST:PORT")
        })?;
        let transport = match kind {
            "udp" => TransportKind::Udp,
            "shm" => TransportKind::Shm,
            "rdma" => TransportKind::Rdma,
            "memcpy" => {
                return Err(format!(
                    "coprocessor `{s}`: memcpy has no fabric; give udp:, shm: or rdma:"
                ));
            }
            _ => {
                return Err(format!(
                    "coprocessor `{s}`: unknown transport `{}` (udp, shm or rdma)",
                    backline_decoders::io::excerpt(kind)
                ));
            }
        };
        if rest.is_empty() {
            return Err(format!("coprocessor `{s}`: no address after `{kind}:`"));
        }
        if transport != TransportKind::Shm {
            let port = rest.rsplit_once(':').map(|(_, p)| p);
            if port.is_none_or(|p| p.parse::<u16>().is_err()) {
                return Err(format!(
                    "coprocessor `{s}`: expected {kind}:HOST:PORT with a port number"
                ));
            }
        }
        Ok(CoprocessorAddr {
            transport,
            peer: rest.to_string(),
        })
    }
}

impl std::fmt::Display for CoprocessorAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.transport, self.peer)
    }
}

/// Settings of a bridge.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeConfig {
    /// Where the coprocessor is.
    pub addr: CoprocessorAddr,
    /// Longest wait for one reply before the round counts as lost.
    pub reply_timeout: Duration,
    /// Longest wait for the handshake.
    pub setup_timeout: Duration,
    /// Ring geometry of the session with the coprocessor (both sides must agree). The
    /// slot's payload capacity bounds the requests; replies must fit the engine's 64-byte
    /// reply slot whatever this says.
    pub geometry: Geometry,
    /// The rdma transport's device, port and GID.
    pub rdma: RdmaOptions,
    /// How the bridge waits for replies.
    pub wait: WaitPolicy,
}

impl BridgeConfig {
    /// The settings of a controller session `sc` (geometry, timeouts, wait policy, rdma
    /// device) for `addr`: a bridge that joins a placement's coprocessor as its own
    /// controllers would.
    pub fn with_session(addr: CoprocessorAddr, sc: &SessionConfig) -> BridgeConfig {
        BridgeConfig {
            addr,
            reply_timeout: sc.reply_timeout,
            setup_timeout: sc.setup_timeout,
            geometry: sc.geometry,
            rdma: sc.rdma.clone(),
            wait: sc.wait,
        }
    }

    /// Defaults for `addr`: 1 s reply timeout, 5 s set-up, `backline serve`'s default ring
    /// (8 slots of 64 bytes), never blocking while a reply is due.
    pub fn new(addr: CoprocessorAddr) -> BridgeConfig {
        BridgeConfig {
            addr,
            reply_timeout: Duration::from_secs(1),
            setup_timeout: Duration::from_secs(5),
            geometry: Geometry {
                depth: backline_wire::DEFAULT_RING_DEPTH,
                slot_bytes: backline_wire::DEFAULT_SLOT_BYTES,
            },
            rdma: RdmaOptions::default(),
            wait: WaitPolicy::default(),
        }
    }
}

/// Why the bridge could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The coprocessor address does not parse.
    #[error("{0}")]
    Address(String),
    /// Nothing answered at the address, or the handshake failed.
    #[error("the coprocessor at {addr} does not answer: {source}")]
    Connect {
        /// The address.
        addr: String,
        /// The transport's error.
        source: backline_transport::Error,
    },
}

/// Why one relayed round produced no reply for the engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Loss {
    /// No reply within the reply timeout.
    #[error("no reply from the coprocessor within {0:?}")]
    Timeout(Duration),
    /// The session with the coprocessor failed (it went away, or an earlier loss broke it).
    #[error("the coprocessor is gone: {0}")]
    Gone(String),
    /// The reply does not fit the engine's reply slot.
    #[error(
        "a reply of {0} bytes does not fit the engine's {slot}-byte reply slot ({cap} bytes of payload)",
        slot = rm::SLOT_BYTES,
        cap = rm::SLOT_BYTES as usize - HEADER_BYTES
    )]
    Oversize(usize),
    /// The request does not fit the session's slots.
    #[error("the request of {0} bytes does not fit the coprocessor session's slots")]
    Request(usize),
}

impl Loss {
    /// True when later rounds cannot be relayed either.
    pub fn is_fatal(&self) -> bool {
        matches!(self, Loss::Gone(_))
    }
}

/// A relayed round's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeReply {
    /// The reply payload.
    pub payload: Vec<u8>,
    /// The reply's status (a `backline_wire::Status` code).
    pub status: u16,
    /// The decoder id the reply echoes.
    pub decoder_id: DecoderId,
    /// Post to collect, ns.
    pub service_ns: u64,
}

/// A live session with a real coprocessor.
pub struct Bridge {
    session: ControllerSession,
    addr: CoprocessorAddr,
    relayed: u64,
    lost: u64,
    service_ns: u128,
    first_loss: Option<String>,
    broken: Option<String>,
    unserved: Option<DecoderId>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("addr", &self.addr)
            .field("relayed", &self.relayed)
            .field("lost", &self.lost)
            .finish()
    }
}

impl Bridge {
    /// Connects and hand-shakes with the coprocessor.
    pub fn connect(cfg: &BridgeConfig) -> Result<Bridge, BridgeError> {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let key = format!(
            "sim-bridge-{}-{}",
            std::process::id(),
            // Relaxed: a counter for unique names, ordering nothing else.
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let mut sc = SessionConfig::new(cfg.addr.transport);
        sc.geometry = cfg.geometry;
        sc.reply_timeout = cfg.reply_timeout;
        sc.setup_timeout = cfg.setup_timeout;
        sc.rdma = cfg.rdma.clone();
        sc.wait = cfg.wait;
        let connect = |source| BridgeError::Connect {
            addr: cfg.addr.to_string(),
            source,
        };
        sc.validate().map_err(connect)?;
        let session = ControllerSession::open(&key, sc, &cfg.addr.peer, 7878).map_err(connect)?;
        log::info!("bridge to {} up", cfg.addr);
        Ok(Bridge {
            session,
            addr: cfg.addr.clone(),
            relayed: 0,
            lost: 0,
            service_ns: 0,
            first_loss: None,
            broken: None,
            unserved: None,
        })
    }

    /// Where it leads.
    pub fn addr(&self) -> &CoprocessorAddr {
        &self.addr
    }

    fn loss(&mut self, l: Loss) -> Loss {
        self.lost += 1;
        if self.first_loss.is_none() {
            self.first_loss = Some(l.to_string());
        }
        if l.is_fatal() && self.broken.is_none() {
            self.broken = Some(l.to_string());
        }
        l
    }

    /// Relays one request and waits for its reply.
    pub fn relay(&mut self, decoder_id: DecoderId, payload: &[u8]) -> Result<BridgeReply, Loss> {
        if let Some(why) = &self.broken {
            let l = Loss::Gone(why.clone());
            return Err(self.loss(l));
        }
        let t0 = Instant::now();
        let staged = self
            .session
            .stage_payload(payload, decoder_id)
            .and_then(|()| self.session.post());
        if let Err(e) = staged {
            let l = match e {
                backline_transport::Error::MessageTooLarge { size, .. } => Loss::Request(size),
                backline_transport::Error::Geometry(_) => Loss::Request(payload.len()),
                other => Loss::Gone(other.to_string()),
            };
            return Err(self.loss(l));
        }
        let r = match self.session.collect() {
            Ok(r) => BridgeReply {
                payload: r.payload.to_vec(),
                status: r.status as u16,
                decoder_id: r.decoder_id,
                service_ns: t0.elapsed().as_nanos() as u64,
            },
            Err(e) => {
                let l = if e.is_timeout() {
                    // A lost reply leaves the session unusable for the rounds after it.
                    self.broken = Some(e.to_string());
                    Loss::Timeout(t0.elapsed())
                } else {
                    Loss::Gone(e.to_string())
                };
                return Err(self.loss(l));
            }
        };
        if r.payload.len() + HEADER_BYTES > rm::SLOT_BYTES as usize {
            return Err(self.loss(Loss::Oversize(r.payload.len())));
        }
        if r.status == Status::UnknownDecoder as u16 && self.unserved.is_none() {
            self.unserved = Some(decoder_id);
        }
        self.relayed += 1;
        self.service_ns += u128::from(r.service_ns);
        Ok(r)
    }

    /// Whether the coprocessor is known to be gone (a lost reply or a failed session): every
    /// later round is lost at once, without reaching the transport.
    pub fn is_gone(&self) -> bool {
        self.broken.is_some()
    }

    /// Requests relayed and answered.
    pub fn relayed(&self) -> u64 {
        self.relayed
    }

    /// Requests without a reply for the engine.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// The first loss, described.
    pub fn first_loss(&self) -> Option<&str> {
        self.first_loss.as_deref()
    }

    /// A decoder id the coprocessor answered `unknown_decoder` for.
    pub fn unserved(&self) -> Option<DecoderId> {
        self.unserved
    }

    /// Mean post-to-collect time of the relayed rounds, ns.
    pub fn mean_service_ns(&self) -> f64 {
        if self.relayed == 0 {
            0.0
        } else {
            self.service_ns as f64 / self.relayed as f64
        }
    }

    /// Ends the session.
    pub fn stop(&mut self) {
        let _ = self.session.stop();
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_bad_ones_say_why() {
        let a = CoprocessorAddr::parse("udp:127.0.0.1:7878").unwrap();
        assert_eq!(
            (a.transport, a.peer.as_str()),
            (TransportKind::Udp, "127.0.0.1:7878")
        );
        assert_eq!(a.to_string(), "udp:127.0.0.1:7878");
        let a = CoprocessorAddr::parse("shm:board").unwrap();
        assert_eq!(a.transport, TransportKind::Shm);
        for (bad, why) in [
            ("udp:127.0.0.1", "with a port number"),
            ("memcpy:x", "memcpy has no fabric"),
            ("tcp:1:2", "unknown transport `tcp`"),
            ("shm:", "no address"),
            ("board", "expected udp:HOST:PORT"),
        ] {
            let e = CoprocessorAddr::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
