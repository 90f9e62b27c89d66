//! GPU coprocessors: a persistent kernel, launched once, polls its request ring in mapped host
//! memory for the next `seq`, runs the function the message's `decoder_id` selects — echo, the
//! Steane lookup, BP+OSD (bit-identical to `backline-decoders`), or a user's device function
//! compiled into the same template — and writes the reply with its `seq` last, released at
//! system scope.
//!
//! - NVIDIA through `cudarc` (driver and NVRTC loaded at run time), AMD through HIP loaded at
//!   run time, and a *host emulation* that compiles the same kernel source as host C++ and
//!   runs it on CPU threads against the same rings — so protocol, layout, stop path and
//!   decoders are tested on machines without a GPU. The crate builds with no GPU stack
//!   installed. [`Backend`] picks one.
//! - [`GpuCoprocessor`] owns a kernel and its memory. A controller in the same process attaches
//!   to its rings directly ([`backline_ring::RingServer`]); anything else reaches it through
//!   [`GpuCoprocessor::call`], a CPU hand-off that is timed.
//! - [`GpuFloor`] is the bare floor a GPU round trip is compared with.
//! - The structures shared with the kernels are defined once, in [`abi`], which also writes
//!   `kernels/backline_gpu.h` (slot layout from `backline-wire`, shared structs).
//!
//! ```
//! use backline_gpu::{Backend, GpuCoprocessor, GpuFunction, GpuOptions};
//! use backline_ring::WaitPolicy;
//! let options = GpuOptions { backend: Backend::Emu, ..GpuOptions::default() };
//! let gpu = GpuCoprocessor::launch("doc", options, vec![(0, GpuFunction::Steane)])?;
//! let mut out = [0u8; 48];
//! let (status, len) = gpu.call(0, &[0b011], &mut out, &WaitPolicy::default())?;
//! assert_eq!((status, &out[..len]), (backline_wire::Status::Ok, &[2u8][..]));
//! # Ok::<(), backline_gpu::Error>(())
//! ```
#![deny(missing_docs)]

pub mod abi;
mod bposd;
mod coprocessor;
mod device;
mod error;
mod floor;
pub mod source;
mod stats;
pub mod triton;

pub use coprocessor::{GpuCoprocessor, GpuFunction, GpuOptions};
pub use device::Backend;
#[cfg(feature = "hip")]
pub use device::hiprtc_compile;
#[cfg(feature = "cuda")]
pub use device::{nvrtc_compile, nvrtc_compile_with, nvrtc_version};
pub use error::{Error, Result};
pub use floor::GpuFloor;

/// The architecture the built-in PTX is compiled for, and the PTX itself.
#[cfg(feature = "cuda")]
pub fn builtin_ptx() -> (&'static str, &'static str) {
    (device::cuda_builtin_arch(), device::cuda_builtin_ptx())
}

/// The Triton template's PTX (relocatable, declaring `bl_triton_decode`) as shipped.
#[cfg(feature = "cuda")]
pub fn triton_template_ptx() -> &'static str {
    device::cuda_triton_template_ptx()
}
