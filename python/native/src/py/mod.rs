//! The Python bindings: `backline._native`, one file per area —
//!
//! | module | binds |
//! |---|---|
//! | [`compile`] | `compile`, `Compiled`, `run`, `latency_summary` |
//! | [`placement`] | `Server` (a coprocessor served by a thread of this process) |
//! | [`decode`] | `DemDecoder` (circuit-level decoders for `backline.sinter`), `decoder_registry` |
//! | [`decoders`] | `CheckBpOsd`, `CheckRelay`, `GraphMatching`, `MobiusDecoder` (under `backline.decoders`) |
//! | [`stream`] | `StreamClient`, `stream_layout` |
//! | [`board`] | `FpgaBoard` (feature `fpga`) |
//! | [`cuqr`] | `CuqrServer` |
//! | [`catalyst`] | `catalyst_begin`, `catalyst_forget`, `catalyst_rounds` (the Catalyst device) |
//!
//! Every call from Python runs behind the one panic boundary of [`boundary`], and raises the
//! classes of the pure-Python module `backline.errors` named by [`errors::Class`].

#[cfg(feature = "fpga")]
mod board;
mod boundary;
mod catalyst;
mod compile;
mod cuqr;
mod decode;
mod decoders;
mod errors;
mod placement;
mod stream;

use pyo3::prelude::*;

use boundary::boundary;

/// error_classes() -> list[str]: the names of the classes of `backline.errors` this module
/// raises (besides the built-ins `ValueError`, `MemoryError`, `KeyboardInterrupt` and, should
/// the package be out of step with this module, `SystemError`).
#[pyfunction]
fn error_classes() -> PyResult<Vec<&'static str>> {
    boundary(|| Ok(errors::Class::ALL.iter().map(|c| c.name()).collect()))
}

/// The native half of the `backline` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<compile::Compiled>()?;
    m.add_class::<placement::Server>()?;
    m.add_class::<decode::DemDecoder>()?;
    m.add_class::<decoders::CheckBpOsd>()?;
    m.add_class::<decoders::CheckRelay>()?;
    m.add_class::<decoders::GraphMatching>()?;
    m.add_class::<decoders::MobiusDecoder>()?;
    m.add_class::<stream::StreamClient>()?;
    m.add_class::<cuqr::CuqrServer>()?;
    #[cfg(feature = "fpga")]
    m.add_class::<board::FpgaBoard>()?;
    m.add_class::<boundary::PanicProbe>()?;
    m.add_function(wrap_pyfunction!(compile::compile, m)?)?;
    m.add_function(wrap_pyfunction!(compile::run, m)?)?;
    m.add_function(wrap_pyfunction!(compile::latency_summary, m)?)?;
    m.add_function(wrap_pyfunction!(compile::program_limits, m)?)?;
    m.add_function(wrap_pyfunction!(stream::stream_layout, m)?)?;
    m.add_function(wrap_pyfunction!(decode::decoder_registry, m)?)?;
    m.add_function(wrap_pyfunction!(catalyst::catalyst_begin, m)?)?;
    m.add_function(wrap_pyfunction!(catalyst::catalyst_forget, m)?)?;
    m.add_function(wrap_pyfunction!(catalyst::catalyst_rounds, m)?)?;
    m.add("CATALYST_DEVICE", catalyst::CATALYST_DEVICE)?;
    m.add_function(wrap_pyfunction!(error_classes, m)?)?;
    m.add_function(wrap_pyfunction!(boundary::panic_for_test, m)?)?;
    m.add("HAS_FPGA", cfg!(feature = "fpga"))?;
    m.add(
        "DEFAULT_DECODER",
        backline_decoders::registry::DEFAULT_DECODER,
    )?;
    m.add("IMPLICIT_QEC", backline_compiler::passes::IMPLICIT_QEC)?;
    m.add("PLAIN", backline_compiler::passes::PLAIN)?;
    Ok(())
}
