//! How the VM's decode rounds reach a coprocessor.

use std::time::Instant;

use backline_transport::{Controller as _, ControllerSession, Session as _, SessionConfig};
use backline_wire::Status;

/// The four runtime calls a decode expands to, plus session set-up and tear-down.
pub trait Rounds {
    /// Opens session slot `session` to the placement's coprocessor number `coprocessor`.
    fn open(&mut self, session: u32, coprocessor: u32) -> Result<(), RoundError>;
    /// Stages a request.
    fn stage(&mut self, session: u32, decoder_id: u32, payload: &[u8]) -> Result<(), RoundError>;
    /// Posts it.
    fn post(&mut self, session: u32) -> Result<(), RoundError>;
    /// Waits for the reply; returns its first bytes as a little-endian word.
    fn collect(&mut self, session: u32) -> Result<u64, RoundError>;
    /// Closes the session.
    fn close(&mut self, session: u32) -> Result<(), RoundError>;
}

/// Why a round failed.
#[derive(Debug, thiserror::Error)]
pub enum RoundError {
    /// The program names a coprocessor the placement does not have.
    #[error("the placement has no coprocessor number {0}")]
    NoCoprocessor(u32),
    /// A round on a session that was not opened.
    #[error("session {0} is not open")]
    NotOpen(u32),
    /// `collect` without a staged request.
    #[error("session {0}: collect without a staged request")]
    NotStaged(u32),
    /// The coprocessor answered with an error status.
    #[error("the coprocessor answered decoder_id {decoder_id} with status {status}")]
    Status {
        /// The request's decoder id.
        decoder_id: u32,
        /// The status name (e.g. `unknown_decoder`).
        status: &'static str,
    },
    /// The transport failed (timeout, peer gone, …).
    #[error(transparent)]
    Transport(#[from] backline_transport::Error),
}

/// Where one coprocessor of the placement is reached.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Session key of the controller side.
    pub key: String,
    /// The peer: memcpy session key, shm name or `host:port`.
    pub peer: String,
    /// Settings (transport, geometry, timeouts).
    pub config: SessionConfig,
}

struct Open {
    session: ControllerSession,
    staged_at: Option<Instant>,
    decoder_id: u32,
}

/// [`Rounds`] over `backline-transport` controller sessions, one per coprocessor, timing
/// every round from `stage` to the end of `collect`.
pub struct SessionRounds {
    endpoints: Vec<Endpoint>,
    sessions: Vec<Option<Open>>,
    /// Round-trip time of every completed round, ns, in order.
    pub rtts_ns: Vec<f64>,
}

impl SessionRounds {
    /// Rounds to these coprocessors (index = coprocessor number).
    pub fn new(endpoints: Vec<Endpoint>) -> SessionRounds {
        SessionRounds {
            endpoints,
            sessions: Vec::new(),
            rtts_ns: Vec::new(),
        }
    }

    /// The endpoint of coprocessor `coprocessor`.
    pub fn endpoint(&self, coprocessor: u32) -> Option<&Endpoint> {
        self.endpoints.get(coprocessor as usize)
    }

    fn get(&mut self, s: u32) -> Result<&mut Open, RoundError> {
        self.sessions
            .get_mut(s as usize)
            .and_then(Option::as_mut)
            .ok_or(RoundError::NotOpen(s))
    }
}

impl Rounds for SessionRounds {
    fn open(&mut self, session: u32, coprocessor: u32) -> Result<(), RoundError> {
        let e = self
            .endpoints
            .get(coprocessor as usize)
            .ok_or(RoundError::NoCoprocessor(coprocessor))?;
        let s = ControllerSession::open(&e.key, e.config.clone(), &e.peer, 0)?;
        if self.sessions.len() <= session as usize {
            self.sessions.resize_with(session as usize + 1, || None);
        }
        self.sessions[session as usize] = Some(Open {
            session: s,
            staged_at: None,
            decoder_id: 0,
        });
        Ok(())
    }

    fn stage(&mut self, session: u32, decoder_id: u32, payload: &[u8]) -> Result<(), RoundError> {
        let o = self.get(session)?;
        o.staged_at = Some(Instant::now());
        o.decoder_id = decoder_id;
        o.session.stage_payload(payload, decoder_id)?;
        Ok(())
    }

    fn post(&mut self, session: u32) -> Result<(), RoundError> {
        self.get(session)?.session.post()?;
        Ok(())
    }

    fn collect(&mut self, session: u32) -> Result<u64, RoundError> {
        let o = self.get(session)?;
        let t0 = o.staged_at.take().ok_or(RoundError::NotStaged(session))?;
        let decoder_id = o.decoder_id;
        let r = o.session.collect()?;
        let rtt = t0.elapsed().as_nanos() as f64;
        if r.status != Status::Ok {
            return Err(RoundError::Status {
                decoder_id,
                status: r.status.name(),
            });
        }
        let mut w = [0u8; 8];
        let n = r.payload.len().min(8);
        w[..n].copy_from_slice(&r.payload[..n]);
        self.rtts_ns.push(rtt);
        Ok(u64::from_le_bytes(w))
    }

    fn close(&mut self, session: u32) -> Result<(), RoundError> {
        if let Some(mut o) = self
            .sessions
            .get_mut(session as usize)
            .and_then(Option::take)
        {
            o.session.stop()?;
        }
        Ok(())
    }
}
