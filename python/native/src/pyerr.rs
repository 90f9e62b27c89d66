//! The exceptions the bindings raise: the classes of the pure-Python module `backline.errors`
//! (one definition), looked up by name.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// An exception of `backline.errors` by class name.
pub(crate) fn err(py: Python<'_>, class: &str, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    match py
        .import("backline.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from))
    {
        Ok(ty) => PyErr::from_type(ty, msg),
        Err(_) => PyRuntimeError::new_err(msg),
    }
}
