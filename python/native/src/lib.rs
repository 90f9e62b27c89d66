//! backline-py: the native half of the Python package `backline` (`backline._native`). The
//! front end, in Python, turns a PennyLane tape into a flat op list; this crate builds the IR
//! module of backline-compiler from it, runs the pass pipeline (with the IR text after every
//! pass), lowers it to the stabilizer VM and runs the shots — all in Rust, with the
//! interpreter released — sending every decode as a round through backline-transport to the
//! placement's coprocessors, or through the (simulated) FPGA board of backline-apu.
//!
//! The same module is Catalyst's device library for `backline.qubit` (`catalyst`: a C++ class of
//! Catalyst's runtime device interface over a Rust device that steps the VM gate by gate).
//!
//! The Python bindings live in `py` (one module per area, every call behind one panic
//! boundary) behind the `python` feature (on for the extension
//! module, which maturin builds); everything else is plain Rust with its own tests.
#![deny(missing_docs)]

pub mod catalyst;
#[cfg(feature = "fpga")]
pub mod fpga;
pub mod placement;
pub mod program;
#[cfg(feature = "python")]
mod py;
