//! The one error type of sessions and transports.

use std::time::Duration;

use backline_wire::{Geometry, GeometryError, HandshakeError, RejectReason};

use crate::State;

/// Everything that can go wrong in a session, each variant with the facts needed to act on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A life-cycle call arrived in the wrong state.
    #[error("`{call}` called in state {state}; it needs state {expected}")]
    OutOfOrder {
        /// The call.
        call: &'static str,
        /// The session's state.
        state: State,
        /// The state the call needs.
        expected: &'static str,
    },
    /// The transport name is not one of ours.
    #[error("unknown transport `{0}` (expected memcpy, shm, udp or rdma)")]
    UnknownTransport(String),
    /// The transport exists but this build or machine cannot run it.
    #[error("{0}")]
    Unsupported(String),
    /// A session with this role and key exists already.
    #[error("a {role} session with key `{key}` already exists")]
    DuplicateKey {
        /// Role.
        role: &'static str,
        /// Key.
        key: String,
    },
    /// No coprocessor answers at the given address.
    #[error("no coprocessor at {0}")]
    NoPeer(String),
    /// Memory for rings, segments or probes could not be allocated.
    #[error("cannot allocate {bytes} bytes for {what}")]
    OutOfMemory {
        /// What it was for.
        what: String,
        /// How much.
        bytes: usize,
    },
    /// A session handle that is not (or no longer) registered.
    #[error("session handle is stale (destroyed) or was never issued")]
    StaleHandle,
    /// Something else already serves this name or port.
    #[error("{0} is already in use")]
    InUse(String),
    /// A bad address, name or option.
    #[error("{0}")]
    Invalid(String),
    /// The two sides want different rings.
    #[error(
        "ring geometry mismatch: this side wants {} slots of {} bytes, the peer has {} slots of {} bytes",
        local.depth, local.slot_bytes, peer.depth, peer.slot_bytes
    )]
    GeometryMismatch {
        /// Ours.
        local: Geometry,
        /// Theirs.
        peer: Geometry,
    },
    /// A geometry or payload out of bounds.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// A message size set by `set_message_sizes` does not fit the slot.
    #[error("message size of {size} bytes exceeds the slot's payload capacity of {capacity} bytes")]
    MessageTooLarge {
        /// Requested size.
        size: usize,
        /// Capacity.
        capacity: usize,
    },
    /// The peer refused the session.
    #[error("the coprocessor refused the session: {0}")]
    Rejected(RejectReason),
    /// The peer's handshake bytes were invalid.
    #[error("bad handshake from the peer: {0}")]
    Handshake(#[from] HandshakeError),
    /// A wait ran past its deadline.
    #[error("timed out after {} ms waiting for {what}", waited.as_millis())]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        waited: Duration,
    },
    /// All `in_flight` rounds are outstanding: collect one before posting another.
    #[error("{0} rounds already in flight: collect a reply before posting another")]
    Backpressure(u32),
    /// `post` without a staged payload.
    #[error("nothing staged: call stage_payload before post")]
    NothingStaged,
    /// `collect` with no round outstanding.
    #[error("no round in flight to collect")]
    NothingInFlight,
    /// The reply carried another round's sequence number or a foreign decoder id.
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A previous failure (e.g. a timeout) left the session unusable.
    #[error("session failed earlier ({0}); stop and destroy it")]
    Failed(String),
    /// The coprocessor went away.
    #[error("the coprocessor at {0} has gone away")]
    PeerGone(String),
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }

    /// The error of binding `what` at `addr`: a port already taken is [`Error::InUse`].
    pub(crate) fn bind(what: &str, addr: std::net::SocketAddr, e: std::io::Error) -> Error {
        match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                Error::InUse(format!("{what} {addr} (another backline serve?)"))
            }
            _ => Error::Io {
                what: format!("binding {what} {addr}"),
                source: e,
            },
        }
    }

    /// True for timeouts (the C ABI maps these to their own status).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. })
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<backline_ring::RingError> for Error {
    fn from(e: backline_ring::RingError) -> Error {
        match e {
            backline_ring::RingError::Geometry(g) => Error::Geometry(g),
            backline_ring::RingError::OutOfMemory(bytes) => Error::OutOfMemory {
                what: "a ring".into(),
                bytes,
            },
        }
    }
}
