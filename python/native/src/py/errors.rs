//! The exceptions the bindings raise: the classes of the pure-Python module `backline.errors`
//! (one definition), named here by [`Class`] — one variant per class, so that a class the
//! bindings raise is a class `_native.error_classes()` lists and the Python tests check.

use backline_transport::Error as TransportError;
use pyo3::exceptions::{PyKeyboardInterrupt, PySystemError};
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::placement::{PlacementError, RunError};
use crate::program::FrontError;

macro_rules! classes {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// A class of `backline.errors` the bindings raise (the variants are the classes'
        /// names, `…Error` all).
        #[allow(clippy::enum_variant_names)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Class {
            $($(#[$doc])* $name,)*
        }

        impl Class {
            /// Every class the bindings raise.
            pub(crate) const ALL: &'static [Class] = &[$(Class::$name),*];

            /// The class's name in `backline.errors`.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(Class::$name => stringify!($name),)*
                }
            }
        }
    };
}

classes! {
    /// A circuit the compiler cannot lower (or a shipped program that does not read back).
    CompileError,
    /// A `qec_code` the compiler does not know.
    UnknownQecCodeError,
    /// A placement that cannot work as given.
    PlacementError,
    /// A transport name that is none of memcpy, shm, udp, rdma.
    UnknownTransportError,
    /// A coprocessor function that cannot be found, loaded or built.
    CoprocessorFunctionError,
    /// A coprocessor that does not answer at its address.
    CoprocessorUnreachableError,
    /// A coprocessor that did not admit this controller (its key).
    NotAdmittedError,
    /// A coprocessor that stopped answering in the middle of a run.
    CoprocessorTimeoutError,
    /// A decoder id the coprocessor does not serve.
    DecoderIdError,
    /// A run that failed for another reason; a panic in Rust ("internal error: …").
    RunError,
    /// A stim detector error model the decoders cannot read.
    DetectorErrorModelError,
    /// A circuit-level decoder setting that is unknown or out of range.
    DecoderSettingsError,
}

/// An exception of class `class` of `backline.errors` with message `msg`. Should the class
/// be missing there (a package out of step with its native module), the error is a
/// `SystemError` that names the class, with the lookup's failure as its cause — never a
/// stand-in class.
pub(crate) fn err(py: Python<'_>, class: Class, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    match py
        .import("backline.errors")
        .and_then(|m| m.getattr(class.name()))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from))
    {
        Ok(ty) => PyErr::from_type(ty, msg),
        Err(lookup) => {
            let e = PySystemError::new_err(format!(
                "backline.errors.{} is missing (backline._native raises it; the package and \
                 its native module are out of step): {msg}",
                class.name()
            ));
            e.set_cause(py, Some(lookup));
            e
        }
    }
}

/// The exception of a front-end (op list) failure.
pub(crate) fn front_err(py: Python<'_>, e: FrontError) -> PyErr {
    match e {
        FrontError::UnknownQecCode(_) => err(py, Class::UnknownQecCodeError, e.to_string()),
        e => err(py, Class::CompileError, e.to_string()),
    }
}

/// The exception of a placement that could not be set up.
pub(crate) fn placement_err(py: Python<'_>, e: PlacementError) -> PyErr {
    let class = match &e {
        PlacementError::UnknownTransport(_) => Class::UnknownTransportError,
        PlacementError::Function { .. } => Class::CoprocessorFunctionError,
        PlacementError::Serve { .. } => Class::CoprocessorUnreachableError,
        _ => Class::PlacementError,
    };
    err(py, class, e.to_string())
}

/// The exception of a failed run (Ctrl-C: `KeyboardInterrupt`).
pub(crate) fn run_err(py: Python<'_>, e: RunError) -> PyErr {
    let class = match &e {
        RunError::Unreachable { source, .. } | RunError::Timeout { source, .. }
            if matches!(source, TransportError::NotAdmitted { .. }) =>
        {
            Class::NotAdmittedError
        }
        RunError::Unreachable { .. } => Class::CoprocessorUnreachableError,
        RunError::Timeout { .. } => Class::CoprocessorTimeoutError,
        RunError::UnservedDecoder { .. } => Class::DecoderIdError,
        RunError::Interrupted(_) => return PyKeyboardInterrupt::new_err(e.to_string()),
        RunError::Vm(_) => Class::RunError,
    };
    err(py, class, e.to_string())
}
