//! Errors of the GPU runtime.

use std::time::Duration;

/// What went wrong with a GPU coprocessor.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No GPU runtime library could be loaded.
    #[error("no GPU: {0}")]
    NoDriver(String),
    /// The runtime loaded but offers no usable device.
    #[error("no GPU: {0}")]
    NoDevice(String),
    /// A call of the driver failed.
    #[error("{backend}: {call} failed: {message}")]
    Driver {
        /// `cuda`, `hip` or `emu`.
        backend: &'static str,
        /// The call.
        call: &'static str,
        /// The driver's description.
        message: String,
    },
    /// Device or mapped host memory could not be allocated.
    #[error("{backend}: cannot allocate {bytes} bytes of {what}: {message}")]
    OutOfMemory {
        /// `cuda`, `hip` or `emu`.
        backend: &'static str,
        /// `device memory` or `mapped host memory`.
        what: &'static str,
        /// Size asked for.
        bytes: usize,
        /// The driver's description.
        message: String,
    },
    /// A kernel source did not compile; `log` is the compiler's output (with file:line).
    #[error("{compiler} could not compile {what}:\n{log}")]
    Compile {
        /// NVRTC, hiprtc or the host C++ compiler.
        compiler: String,
        /// What was compiled (a file name).
        what: String,
        /// The compiler's log.
        log: String,
    },
    /// A setting or a decoder is not supported on the GPU, or is out of range.
    #[error("{0}")]
    Unsupported(String),
    /// A ring geometry that is no ring's, or a message that does not fit its slot.
    #[error(transparent)]
    Geometry(#[from] backline_wire::GeometryError),
    /// A controller's rings need more memory than the coprocessor's rings have
    /// ([`crate::GpuOptions::ring_capacity`]).
    #[error(
        "a ring of {depth} slots × {slot_bytes} bytes exceeds the GPU ring capacity of {capacity} bytes"
    )]
    RingTooLarge {
        /// Slots asked for.
        depth: u32,
        /// Bytes per slot asked for.
        slot_bytes: u32,
        /// Bytes of each ring's memory.
        capacity: usize,
    },
    /// A request to the proxy longer than the largest slot's payload.
    #[error("a request of {len} bytes exceeds the largest slot's {max}")]
    RequestTooLarge {
        /// Its length, bytes.
        len: usize,
        /// The largest slot's payload, bytes.
        max: usize,
    },
    /// The BP+OSD settings or checks, refused as the CPU decoder refuses them.
    #[error(transparent)]
    Decoder(#[from] backline_decoders::DecoderError),
    /// The kernel did not answer in time; it is considered hung.
    #[error("the GPU kernel did not answer within {0:?} (it is considered hung)")]
    Timeout(Duration),
    /// The kernel stopped or never started.
    #[error("the GPU kernel is not running: {0}")]
    NotRunning(String),
    /// The coprocessor is in use by a directly attached controller.
    #[error("the GPU coprocessor already serves a controller")]
    Busy,
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
