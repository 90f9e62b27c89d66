//! The placement at run time: coprocessors served from this process and the links a run
//! opens to every coprocessor. The run itself, with its failures sorted into what a user can
//! act on, is `backline_stabvm::runner`'s (re-exported here).

use std::time::Duration;

use backline_responder::ResponderTable;
pub use backline_stabvm::runner::{Fabric, RunError, RunOutput, run};
use backline_stabvm::{Endpoint, SessionRounds};
use backline_transport::{CoprocessorSession, ServeOptions, SessionConfig, TransportKind};
use backline_wire::Geometry;

/// Why a placement could not be set up or a run failed.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// The transport name is unknown.
    #[error("unknown transport `{0}` (known: memcpy, shm, udp, rdma)")]
    UnknownTransport(String),
    /// A coprocessor function could not be loaded or built.
    #[error("coprocessor function `{spec}`: {why}")]
    Function {
        /// The spec.
        spec: String,
        /// Why (the responder crate's error, rendered).
        why: String,
    },
    /// Two functions claim one decoder id.
    #[error("decoder id {0} is served by two coprocessor functions")]
    DuplicateId(u32),
    /// A bad setting.
    #[error("{0}")]
    Invalid(String),
    /// The server could not start.
    #[error("serving {transport} at `{address}`: {source}")]
    Serve {
        /// Transport.
        transport: TransportKind,
        /// Address asked for.
        address: String,
        /// Why.
        source: backline_transport::Error,
    },
}

/// Parses a transport name.
pub fn transport_of(name: &str) -> Result<TransportKind, PlacementError> {
    name.parse()
        .map_err(|_| PlacementError::UnknownTransport(name.to_string()))
}

/// The longest timeout a placement takes, in seconds: a day (the executor's bound on
/// `reply_timeout`, `backline/executor.py`; `backline/limits.py` `TIMEOUT_SECONDS`).
pub const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;

/// A timeout of `what` in seconds as a `Duration`: positive, finite and at most
/// [`MAX_TIMEOUT_SECONDS`], else an error naming it (never the panic of
/// `Duration::from_secs_f64` on a value it cannot hold).
pub fn timeout_secs(what: &str, s: f64) -> Result<Duration, PlacementError> {
    if s > 0.0
        && s <= MAX_TIMEOUT_SECONDS
        && let Ok(d) = Duration::try_from_secs_f64(s)
    {
        return Ok(d);
    }
    Err(PlacementError::Invalid(format!(
        "{what} {s} s: must be a positive number of seconds up to {MAX_TIMEOUT_SECONDS}"
    )))
}

/// `Err` (a sentence) unless the VM's tableau for `qubits` qubits fits in memory: its two
/// bit matrices of `(2n + 1) × ⌈n/64⌉` words (`backline_stabvm`'s `Tableau::new`) are
/// reserved together and given back, so that a qubit count the limits let through (a user
/// may raise them) is an error, not an abort on the allocation.
pub fn tableau_fits(qubits: u32) -> Result<(), String> {
    let n = qubits as usize;
    let words = n.div_ceil(64).max(1);
    let per = (2 * n + 1).checked_mul(words);
    let fits = per.is_some_and(|per| {
        let (mut x, mut z) = (Vec::<u64>::new(), Vec::<u64>::new());
        x.try_reserve_exact(per).is_ok() && z.try_reserve_exact(per).is_ok()
    });
    if fits {
        return Ok(());
    }
    let mb = per.map_or(u64::MAX, |p| (p as u64).saturating_mul(16) / 1_000_000);
    Err(format!(
        "{qubits} qubits need a stabilizer tableau of {mb} MB, which does not fit in memory"
    ))
}

/// The session settings both sides of a placement use: the default ring (8 slots of 64
/// bytes, 48 bytes of payload, as `backline serve` uses by default), with the timeouts given
/// and the settings of the environment ([`SessionConfig::apply_env`]: `BACKLINE_SPIN_US`,
/// the rdma device, the admission key).
pub fn session_config(
    transport: TransportKind,
    payload_bytes: usize,
    reply_timeout: Duration,
    setup_timeout: Duration,
) -> Result<SessionConfig, PlacementError> {
    let mut c = SessionConfig::new(transport);
    if payload_bytes > c.geometry.payload_capacity() {
        c.geometry = Geometry {
            slot_bytes: Geometry::slot_bytes_for(payload_bytes),
            ..c.geometry
        };
    }
    c.reply_timeout = reply_timeout;
    c.setup_timeout = setup_timeout;
    // The settings of the environment (spin budget, rdma device, admission key).
    c.apply_env()
        .map_err(|e| PlacementError::Invalid(e.to_string()))?;
    c.validate()
        .map_err(|e| PlacementError::Invalid(e.to_string()))?;
    Ok(c)
}

/// The responder table of `(decoder id, spec)` pairs (a `bposd:` spec also takes the next id).
pub fn table_of(fns: &[(u32, String)]) -> Result<ResponderTable, PlacementError> {
    let mut t = ResponderTable::new();
    for (base, spec) in fns {
        let list = backline_responder::functions_of(spec, *base).map_err(|e| {
            PlacementError::Function {
                spec: spec.clone(),
                why: e.to_string(),
            }
        })?;
        for (id, r) in list {
            if t.insert(id, r).is_some() {
                return Err(PlacementError::DuplicateId(id));
            }
        }
    }
    Ok(t)
}

/// A coprocessor served by a thread of this process (any transport; memcpy needs it).
pub struct Server {
    session: CoprocessorSession,
    peer: String,
    ids: Vec<u32>,
    functions: Vec<(u32, String)>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("peer", &self.peer)
            .field("functions", &self.functions)
            .finish()
    }
}

impl Server {
    /// Starts serving `fns` at `address` (memcpy: a session key; shm: a segment name; udp:
    /// `host:port`, port 0 for any).
    pub fn start(
        config: SessionConfig,
        address: &str,
        key: &str,
        fns: &[(u32, String)],
        max_sessions: Option<u64>,
    ) -> Result<Server, PlacementError> {
        let table = table_of(fns)?;
        let transport = config.transport;
        let options = ServeOptions {
            total_sessions: max_sessions,
            ..ServeOptions::default()
        };
        let address = if transport == TransportKind::Memcpy && address.is_empty() {
            key.to_string()
        } else {
            address.to_string()
        };
        let session = CoprocessorSession::open(key, config, &address, 0, &table, options).map_err(
            |source| PlacementError::Serve {
                transport,
                address: address.clone(),
                source,
            },
        )?;
        let peer = match transport {
            TransportKind::Memcpy | TransportKind::Shm => address,
            _ => session.peer_address().unwrap_or_default().to_string(),
        };
        Ok(Server {
            session,
            peer,
            ids: table.entries().map(|(id, _)| id).collect(),
            functions: table
                .entries()
                .map(|(id, r)| (id, r.name().to_string()))
                .collect(),
        })
    }

    /// What a controller passes as its peer.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// Decoder ids served, ascending.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// `(decoder id, function name)`.
    pub fn functions(&self) -> &[(u32, String)] {
        &self.functions
    }

    /// (sessions, rounds, rounds answered with an error status).
    pub fn stats(&self) -> (u64, u64, u64) {
        self.session.stats().snapshot()
    }

    /// True once the server thread has ended.
    pub fn finished(&self) -> bool {
        self.session.is_finished()
    }

    /// Stops serving.
    pub fn stop(&mut self) -> Result<(), backline_transport::Error> {
        use backline_transport::Session as _;
        self.session.stop()
    }
}

/// Session rounds to these endpoints (index = coprocessor number).
pub fn session_rounds(endpoints: Vec<Endpoint>) -> SessionRounds {
    SessionRounds::new(endpoints)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Header, OpSpec, build, compile};

    fn op(tag: &str, ints: &[u64]) -> OpSpec {
        OpSpec {
            tag: tag.into(),
            ints: ints.to_vec(),
            p: 0.0,
        }
    }

    fn ghz() -> crate::program::Compiled {
        let h = Header {
            name: "ghz".into(),
            num_qubits: 3,
            num_bits: 3,
            qec_code: Some("steane".into()),
            coprocessors: vec!["steane".into()],
            ..Default::default()
        };
        let ops = vec![
            op("h", &[0]),
            op("cnot", &[0, 1]),
            op("cnot", &[1, 2]),
            op("measure", &[0, 0]),
            op("measure", &[1, 1]),
            op("measure", &[2, 2]),
            op("output", &[0, 1, 2]),
        ];
        compile(build(&h, &ops).unwrap(), None, &Default::default(), false).unwrap()
    }

    fn config(t: TransportKind) -> SessionConfig {
        session_config(t, 48, Duration::from_millis(500), Duration::from_secs(2)).unwrap()
    }

    fn endpoint(key: &str, s: &Server, t: TransportKind) -> Endpoint {
        Endpoint {
            key: key.into(),
            peer: s.peer().into(),
            config: config(t),
        }
    }

    #[test]
    fn the_same_samples_over_memcpy_shm_and_udp() {
        let c = ghz();
        let fns = [(0, "steane".to_string()), (1, "steane".to_string())];
        let name = format!("pytest-{}", std::process::id());
        let mut runs = Vec::new();
        for (t, addr) in [
            (TransportKind::Memcpy, ""),
            (TransportKind::Shm, name.as_str()),
            (TransportKind::Udp, "127.0.0.1:0"),
        ] {
            let s = Server::start(config(t), addr, &format!("{name}-{t}"), &fns, None).unwrap();
            assert_eq!(s.ids(), [0, 1]);
            let mut f = session_rounds(vec![endpoint("ctl", &s, t)]);
            let out = run(&c.program, 50, 7, &mut f, &mut |_| true).unwrap();
            assert_eq!(out.rtts_ns.len(), 50 * 13, "{t}");
            runs.push(out.bits);
        }
        assert_eq!(runs[0], runs[1]);
        assert_eq!(runs[0], runs[2]);
        for shot in runs[0].chunks(3) {
            assert!(shot == [0, 0, 0] || shot == [1, 1, 1], "{shot:?}");
        }
    }

    #[test]
    fn failures_are_sorted_for_the_user() {
        let c = ghz();
        // Nobody serves this name.
        let mut f = session_rounds(vec![Endpoint {
            key: "ctl".into(),
            peer: "nobody-serves-this".into(),
            config: config(TransportKind::Shm),
        }]);
        let e = run(&c.program, 1, 1, &mut f, &mut |_| true).unwrap_err();
        assert!(
            matches!(e, RunError::Unreachable { coprocessor: 0, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("nobody-serves-this"), "{e}");

        // A server with only decoder id 0.
        let s = Server::start(
            config(TransportKind::Memcpy),
            "",
            "only-zero",
            &[(0, "steane".into())],
            None,
        )
        .unwrap();
        let mut f = session_rounds(vec![endpoint("ctl", &s, TransportKind::Memcpy)]);
        let e = run(&c.program, 1, 1, &mut f, &mut |_| true).unwrap_err();
        assert!(
            matches!(e, RunError::UnservedDecoder { decoder_id: 1, .. }),
            "{e}"
        );

        // Stopped by the observer.
        let s = Server::start(
            config(TransportKind::Memcpy),
            "",
            "stops",
            &[(0, "steane".into()), (1, "steane".into())],
            None,
        )
        .unwrap();
        let mut f = session_rounds(vec![endpoint("ctl", &s, TransportKind::Memcpy)]);
        let e = run(&c.program, 100, 1, &mut f, &mut |n| n < 3).unwrap_err();
        assert!(matches!(e, RunError::Interrupted(3)), "{e}");

        // A coprocessor that goes away mid-run, however the transport notices (udp: its
        // closed port refuses the next request), is one that stopped answering.
        let mut s = Server::start(
            config(TransportKind::Udp),
            "127.0.0.1:0",
            "goes-away",
            &[(0, "steane".into()), (1, "steane".into())],
            None,
        )
        .unwrap();
        let mut f = session_rounds(vec![endpoint("ctl", &s, TransportKind::Udp)]);
        let e = run(&c.program, 1000, 1, &mut f, &mut |n| {
            if n == 2 {
                s.stop().unwrap();
            }
            true
        })
        .unwrap_err();
        assert!(matches!(e, RunError::Timeout { .. }), "{e}");
        assert!(e.to_string().contains("did not answer"), "{e}");
    }

    #[test]
    fn bad_functions_and_transports_are_named() {
        let e = table_of(&[(0, "./no-such-lib.so:decode".into())]).unwrap_err();
        assert!(e.to_string().contains("no-such-lib.so"), "{e}");
        let e = table_of(&[(0, "bposd:hgp13".into()), (1, "steane".into())]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "decoder id 1 is served by two coprocessor functions"
        );
        let e = transport_of("carrier-pigeon").unwrap_err();
        assert!(e.to_string().contains("carrier-pigeon"), "{e}");
    }
}
