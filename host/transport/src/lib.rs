//! Sessions and the transports that carry their rounds.
//!
//! A *placement* puts a controller and a coprocessor somewhere and names the fabric between
//! them; this crate turns that into a session with the life cycle of SPEC §4 (see
//! [`session`]) over one of these transports, all behind one trait pair ([`link`]):
//!
//! | transport | coprocessor | rings | floor it is measured against |
//! |---|---|---|---|
//! | `memcpy` | a thread in this process | heap | one cache line bounced between two threads |
//! | `shm` | `backline serve` in another process | `/dev/shm/backline-<name>` | the same, through the shared mapping |
//! | `udp` | `backline serve` anywhere | local, filled from datagrams | raw 8-byte UDP request/reply |
//! | `rdma` | `backline serve` on an RDMA host | registered memory | bare RDMA WRITE ping-pong |
//!
//! ```
//! use backline_transport::{ControllerSession, CoprocessorSession, Controller, SessionConfig,
//!     TransportKind, ServeOptions};
//! use backline_responder::{ResponderTable, Steane};
//! use std::sync::Arc;
//!
//! let config = SessionConfig::new(TransportKind::Memcpy);
//! let table = ResponderTable::single(Arc::new(Steane));
//! let _server = CoprocessorSession::open("doc-demo", config.clone(), "", 0, &table,
//!     ServeOptions::default())?;
//! let mut c = ControllerSession::open("doc-demo", config, "doc-demo", 0)?;
//! c.stage_payload(&[0b011], 0)?;
//! c.post()?;
//! let reply = c.collect()?;
//! assert_eq!(reply.payload, &[2]); // syndrome 3 → flip qubit 2
//! # Ok::<(), backline_transport::Error>(())
//! ```
#![deny(missing_docs)]

pub mod admit;
mod config;
mod connect;
mod error;
pub mod fanout;
pub mod floor;
pub mod link;
mod memcpy;
pub mod os;
pub mod rdma;
mod registry;
pub mod rounds;
pub mod server;
pub mod session;
pub mod shm;
pub mod udp;

pub use admit::{AdmissionKey, TokenFileError};
pub use backline_ring::{SpinBudget, WaitPolicy};
pub use config::{RdmaOptions, SessionConfig, TransportKind};
pub use error::{Error, ReplyProblem, Result};
pub use fanout::{ControllerMut, FanOut, FanOutError, collect_posted};
pub use link::StopFlag;
pub use registry::{Entry, Handle, Hardware, Registry, SessionRef};
pub use server::{DEFAULT_MAX_SESSIONS, ServeOptions, ServerStats, SessionReport};
pub use session::{
    Controller, ControllerSession, Coprocessor, CoprocessorSession, Reply, Role, Session, State,
};
