//! The one error type of sessions and transports.

use std::time::Duration;

use backline_wire::{Geometry, GeometryError, HandshakeError, RejectReason};

use crate::State;

/// Everything that can go wrong in a session, each variant with the facts needed to act on it.
///
/// Not `#[non_exhaustive]`: the C ABI (`backline-ffi`, in this workspace) maps every variant to
/// a status without a catch-all arm, so a new variant fails its build until it has a status.
#[derive(Debug, thiserror::Error)]
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
    /// The reply of `round` is not one the request allows (found by `collect` and
    /// `reply_slot`; built without allocating).
    #[error("protocol violation: round {round}: {problem}")]
    BadReply {
        /// The round (0-based).
        round: u64,
        /// What is wrong with it.
        problem: ReplyProblem,
    },
    /// The peer broke the set-up protocol (an answer to a hello that is none, a set-up
    /// connection closed half-way, an unusable queue pair).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// The peer answered a hello with something other than a backline handshake or message:
    /// it is another kind of server (a CUQR server answers with `bad_request`). The
    /// handshake ends at once instead of waiting out its timeout.
    #[error("{peer} answered our {what} with {answer}")]
    NotBackline {
        /// The peer, `transport:address`.
        peer: String,
        /// What it answered: `hello`, `floor ping`.
        what: &'static str,
        /// What it answered.
        answer: String,
    },
    /// The coprocessor gave no answer to a hello: it admits only controllers that prove they
    /// hold its key (`backline serve --token-file`), and ours was missing or another, or
    /// nothing answers there. A keyed coprocessor answers a refused hello with nothing, so
    /// the controller learns no more than this.
    #[error(
        "not admitted by {peer}: {} our {} ({})",
        if *closed {
            format!("it closed the set-up connection after {} ms without answering", waited.as_millis())
        } else {
            format!("no answer within {} ms to", waited.as_millis())
        },
        if *keyed { "keyed hello" } else { "hello" },
        if *keyed {
            "the coprocessor's token file differs from ours, the two clocks differ by more \
             than 30 s, or it failed, or nothing serves there"
        } else {
            "a coprocessor started with --token-file answers only controllers that hold its \
             key: pass the same --token-file; or it failed, or nothing serves there"
        }
    )]
    NotAdmitted {
        /// The peer, `transport:address`.
        peer: String,
        /// Whether our hello carried a key proof.
        keyed: bool,
        /// How long we waited.
        waited: Duration,
        /// The peer closed the set-up connection (rdma's TCP) instead of staying silent (udp).
        closed: bool,
    },
    /// A token file cannot be used as a key.
    #[error("token file {}: {problem}", path.display())]
    TokenFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        problem: crate::admit::TokenFileError,
    },
    /// A previous failure (e.g. a timeout) left the session unusable.
    #[error("session failed earlier ({0}); stop and destroy it")]
    Failed(String),
    /// A wait for the message with sequence number `seq` ended because its stop flag was
    /// raised.
    #[error("session failed earlier (wait for seq {seq} was stopped); stop and destroy it")]
    Stopped {
        /// The sequence number waited for.
        seq: u32,
    },
    /// A thread of the session (`server`) or of a floor measurement (`floor`) panicked.
    #[error("session failed earlier (the {thread} thread panicked); stop and destroy it")]
    Panicked {
        /// Which thread.
        thread: &'static str,
    },
    /// Hop probes could not be set up (their memory cannot be allocated).
    #[error(transparent)]
    Probes(#[from] backline_probe::ProbeError),
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

/// What is wrong with a reply ([`Error::BadReply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyProblem {
    /// The slot holds a message of this kind instead of a reply.
    NotAReply {
        /// The kind byte found.
        kind: u8,
    },
    /// The reply echoes another decoder id than its request's.
    DecoderId {
        /// The id the reply echoes.
        echoed: backline_wire::DecoderId,
        /// The request's.
        requested: backline_wire::DecoderId,
    },
    /// The status code is none of the wire's.
    UnknownStatus(u16),
    /// The reply is longer than the reply size set with `set_message_sizes`.
    TooLong {
        /// Its length, bytes.
        len: usize,
        /// The reply size, bytes.
        max: usize,
    },
}

impl std::fmt::Display for ReplyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ReplyProblem::NotAReply { kind } => {
                write!(f, "slot holds kind {kind} instead of a reply")
            }
            ReplyProblem::DecoderId { echoed, requested } => write!(
                f,
                "reply echoes decoder_id {echoed} but the request had {requested}"
            ),
            ReplyProblem::UnknownStatus(status) => write!(f, "unknown status {status}"),
            ReplyProblem::TooLong { len, max } => write!(
                f,
                "a reply of {len} bytes exceeds the reply size of {max} bytes set with \
                 set_message_sizes"
            ),
        }
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
