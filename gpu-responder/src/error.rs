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
