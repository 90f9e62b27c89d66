//! Session settings.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use backline_ring::WaitPolicy;
use backline_wire::Geometry;

use crate::Error;

/// The fabric between controller and coprocessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// Controller and coprocessor threads in one process, rings on the heap.
    Memcpy,
    /// The coprocessor in another process on this machine, rings in shared memory.
    Shm,
    /// Request/reply datagrams over a UDP socket.
    Udp,
    /// One-sided RDMA writes (RoCE v2) over libibverbs.
    Rdma,
}

impl TransportKind {
    /// All transports.
    pub const ALL: [TransportKind; 4] = [
        TransportKind::Memcpy,
        TransportKind::Shm,
        TransportKind::Udp,
        TransportKind::Rdma,
    ];

    /// The name used on the command line and in traces.
    pub const fn name(self) -> &'static str {
        match self {
            TransportKind::Memcpy => "memcpy",
            TransportKind::Shm => "shm",
            TransportKind::Udp => "udp",
            TransportKind::Rdma => "rdma",
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TransportKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        TransportKind::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| Error::UnknownTransport(s.to_string()))
    }
}

/// Settings of one session, fixed at `create`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    /// The fabric.
    pub transport: TransportKind,
    /// Ring depth and slot size; both sides must agree.
    pub geometry: Geometry,
    /// Rounds a controller may have outstanding (1 ..= depth).
    pub in_flight: u32,
    /// How waits spin and block.
    pub wait: WaitPolicy,
    /// Longest wait for one reply (controller) before the round is declared lost.
    pub reply_timeout: Duration,
    /// Longest wait for connection set-up (handshake).
    pub setup_timeout: Duration,
    /// Pin the coprocessor's serving thread to this CPU.
    pub pin_cpu: Option<usize>,
    /// Device, port and GID of the rdma transport (ignored by the others).
    pub rdma: RdmaOptions,
    /// The pre-shared key of admission (udp and rdma; [`crate::admit`]): a controller proves
    /// it holds it in its hello, a coprocessor answers only hellos that do. `None`: anyone
    /// who reaches the port is served. The memory transports refuse a key on the coprocessor
    /// side (their segments are the user's own, mode 0600) and ignore it on the controller's.
    pub key: Option<crate::AdmissionKey>,
}

/// Which RDMA device, port and GID the `rdma` transport uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaOptions {
    /// Device name (e.g. `rxe0`, `mlx5_0`); `None` = the first device found.
    pub device: Option<String>,
    /// Port number on the device (1-based).
    pub port: u8,
    /// Index into the port's GID table; `None` = the first RoCE v2 GID that holds an IPv4
    /// address (else the first RoCE v2 GID, else the first non-zero GID). RoCE v2 is index 1
    /// on a Soft-RoCE device over an interface with one IPv4 address.
    pub gid_index: Option<u8>,
}

impl Default for RdmaOptions {
    fn default() -> Self {
        RdmaOptions {
            device: None,
            port: 1,
            gid_index: None,
        }
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            transport: TransportKind::Memcpy,
            geometry: Geometry::default(),
            in_flight: 1,
            wait: WaitPolicy::default(),
            reply_timeout: Duration::from_secs(1),
            setup_timeout: Duration::from_secs(5),
            pin_cpu: None,
            rdma: RdmaOptions::default(),
            key: None,
        }
    }
}

impl SessionConfig {
    /// A default configuration for `transport`.
    pub fn new(transport: TransportKind) -> SessionConfig {
        SessionConfig {
            transport,
            ..SessionConfig::default()
        }
    }

    /// Applies the session settings of the environment, as the front ends name them: the
    /// spin budget of every wait (`BACKLINE_SPIN_US`: µs, 0 = always block, -1 = never
    /// block), for rdma the device and GID index (`BACKLINE_RDMA_DEVICE`,
    /// `BACKLINE_RDMA_GID_INDEX`), and for udp and rdma the pre-shared key of admission read
    /// from `BACKLINE_TOKEN_FILE`. Unset (or empty) variables leave the settings as they are;
    /// a value that does not parse, or a key file that does not read, is [`Error::Invalid`]
    /// naming the variable.
    pub fn apply_env(&mut self) -> Result<(), Error> {
        if let Ok(v) = std::env::var("BACKLINE_SPIN_US") {
            let us: i64 = v.trim().parse().map_err(|_| {
                Error::Invalid(format!(
                    "BACKLINE_SPIN_US={v}: microseconds (0 = always block, -1 = never block)"
                ))
            })?;
            self.wait = WaitPolicy::from_micros(us)
                .map_err(|e| Error::Invalid(format!("BACKLINE_SPIN_US={v}: {e}")))?;
        }
        if self.transport == TransportKind::Rdma {
            if let Ok(d) = std::env::var("BACKLINE_RDMA_DEVICE")
                && !d.trim().is_empty()
            {
                self.rdma.device = Some(d.trim().to_string());
            }
            if let Ok(v) = std::env::var("BACKLINE_RDMA_GID_INDEX") {
                let i: u8 = v.trim().parse().map_err(|_| {
                    Error::Invalid(format!("BACKLINE_RDMA_GID_INDEX={v}: a GID index 0-255"))
                })?;
                self.rdma.gid_index = Some(i);
            }
        }
        if matches!(self.transport, TransportKind::Udp | TransportKind::Rdma)
            && let Some(path) = std::env::var_os("BACKLINE_TOKEN_FILE")
            && !path.is_empty()
        {
            self.key = Some(
                crate::AdmissionKey::from_file(std::path::Path::new(&path))
                    .map_err(|e| Error::Invalid(e.to_string()))?,
            );
        }
        Ok(())
    }

    /// Checks geometry and rounds in flight.
    pub fn validate(&self) -> Result<(), Error> {
        self.geometry.validate()?;
        if self.in_flight == 0 || self.in_flight > self.geometry.depth {
            return Err(backline_wire::GeometryError::BadInFlight {
                in_flight: self.in_flight,
                depth: self.geometry.depth,
            }
            .into());
        }
        if self.reply_timeout.is_zero() || self.setup_timeout.is_zero() {
            return Err(Error::Invalid("timeouts must be greater than zero".into()));
        }
        if self.transport == TransportKind::Rdma && self.rdma.port == 0 {
            return Err(Error::Invalid(
                "rdma port 0: ports are numbered from 1".into(),
            ));
        }
        Ok(())
    }
}
