//! Rings served by something other than a CPU thread of this process: a GPU's persistent
//! kernel polls rings it allocated in mapped host memory. An in-process controller attaches to
//! such a server directly (no thread in between), through this trait.

use backline_wire::Geometry;

use crate::RingView;

/// A pair of rings handed to one controller: requests (the controller writes) and replies
/// (the server writes). Valid until [`RingServer::detach`].
#[derive(Debug, Clone, Copy)]
pub struct AttachedRings {
    /// The request ring.
    pub req: RingView,
    /// The reply ring.
    pub rep: RingView,
}

/// Why [`RingServer::attach`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachError {
    /// Another controller is attached.
    Busy,
    /// The server cannot take this controller (a geometry that does not fit, a stopped or
    /// hung server…).
    Refused(String),
}

impl std::fmt::Display for AttachError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttachError::Busy => f.write_str("it already serves a controller"),
            AttachError::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for AttachError {}

/// A coprocessor that owns its rings and serves them by itself.
pub trait RingServer: Send + Sync {
    /// A description for messages, e.g. `gpu:echo on NVIDIA H200`.
    fn describe(&self) -> String;
    /// Zeroed rings of `geometry` for a new controller, the server waiting for round 0.
    /// Fails when another controller is attached or the geometry does not fit.
    fn attach(&self, geometry: Geometry) -> Result<AttachedRings, AttachError>;
    /// The controller is done with the rings.
    fn detach(&self);
    /// Whether the server still runs (asked after a timeout).
    fn alive(&self) -> bool;
}
