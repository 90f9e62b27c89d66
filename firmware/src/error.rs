//! The library's error type. Every variant names the register (or config field, or peer
//! record field) and the value that was wrong; the CLI renders it once, with its chain.

use crate::mmio::{Block, MmioError, Op};

/// Why a control-plane operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The board configuration is unusable (file, syntax, missing field, range).
    #[error(transparent)]
    Config(#[from] crate::config::LoadError),
    /// A config value is out of range (a programmatic [`crate::Config`]).
    #[error(transparent)]
    ConfigValue(#[from] crate::config::ConfigError),
    /// A run setting is out of range (`--span` not 2^N-1, zero rounds, …), found before any
    /// register is written; names the register it was meant for.
    #[error("{register} = {value}: {reason}")]
    BadValue {
        /// The register the value was meant for (`PACER_SPAN`).
        register: String,
        /// The value as given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A register access failed.
    #[error(
        "{op} {block} {register}{}: {}",
        value.map(|v| format!(" = {v:#010x}")).unwrap_or_default(),
        source.detail()
    )]
    Mmio {
        /// Read or write.
        op: Op,
        /// Which block.
        block: Block,
        /// The register's name.
        register: String,
        /// The value being written.
        value: Option<u32>,
        /// The cause.
        #[source]
        source: MmioError,
    },
    /// An identification read says the offsets of this firmware cannot be trusted.
    #[error("{block} {register} reads {value:#010x}: {reason}")]
    Identity {
        /// Which block.
        block: Block,
        /// The register (or reserved offset) read.
        register: String,
        /// What it read.
        value: u32,
        /// Why that is not usable.
        reason: String,
    },
    /// The out-of-band handshake failed.
    #[error(transparent)]
    Peer(#[from] crate::peer::PeerError),
    /// The device did not reach a state in time.
    #[error("{what}: {register} = {value:#010x}{detail}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// The register last polled.
        register: &'static str,
        /// Its last value.
        value: u32,
        /// Its fields, decoded.
        detail: String,
    },
    /// A round timed out and the run was asked to stop there.
    #[error(
        "round {round} got no reply within the engine's reply timeout; the run was stopped \
         there ({rounds} rounds committed; `--on-timeout continue` counts timeouts and goes on)"
    )]
    RoundTimedOut {
        /// The first round that timed out (from the trace; past the trace's depth, the
        /// rounds committed when the timeout was seen).
        round: u64,
        /// Rounds committed.
        rounds: u64,
    },
    /// The data QP is in the error state.
    #[error(
        "QP {qpn} is in the fatal state (STATQP[QP {qpn}] = {statqp:#010x}): the ERNIC stopped \
         sending on it; run `backline-apu setup --config FILE` again to tear it down and bring \
         it back up"
    )]
    QpFatal {
        /// The QP.
        qpn: u32,
        /// `STATQP`.
        statqp: u32,
    },
    /// The board is not in a state for this operation (not set up, busy).
    #[error("{register} = {value:#010x}: {reason}")]
    State {
        /// The register that says so.
        register: String,
        /// Its value.
        value: u32,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A `--backend` spec that does not parse.
    #[error("{0}")]
    BackendSpec(String),
    /// Opening the backend failed.
    #[error("opening the backend {spec}: {source}")]
    Backend {
        /// The backend spec.
        spec: String,
        /// The cause.
        #[source]
        source: MmioError,
    },
}
