//! The one panic boundary of the bindings. Every `#[pyfunction]` and every method, getter and
//! constructor of a `#[pymethods]` block is one call of [`boundary`] (the crate's test
//! `tests/py_boundary.rs` reads the crate's sources and fails on one that is not, and on
//! `#[pyo3(get)]`-style fields, which would reach Rust without a body), so a panic in Rust
//! reaches Python as `backline.errors.RunError` ("internal error: …"), an `Exception`, and
//! never as pyo3's `PanicException`, which `except Exception` does not catch. (A `Drop` of a
//! class's Rust value runs at deallocation, where no exception can be raised: pyo3 reports a
//! panic there as unraisable.)
//!
//! The test hooks `_panic_for_test` ([`panic_for_test`]) and `_PanicProbe` ([`PanicProbe`])
//! panic inside it on purpose, for the Python tests to see what a panic becomes.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::prelude::*;

use super::errors::{Class, err};

/// `f()`, a panic in it (or in anything it calls, the interpreter released or not) turned
/// into `RunError("internal error: <the panic's message>")`.
pub(crate) fn boundary<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let what = panic_message(payload.as_ref());
        Python::attach(|py| Err(err(py, Class::RunError, format!("internal error: {what}"))))
    })
}

/// The message a panic was raised with.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// `_panic_for_test(message)`: a test hook, not an API — panics with `message` inside the
/// boundary, so a test sees the `RunError` a panic in Rust becomes.
#[pyfunction(name = "_panic_for_test")]
pub(crate) fn panic_for_test(message: &str) -> PyResult<()> {
    boundary(|| panic!("{message}"))
}

/// A test hook, not an API: a class whose constructor (`_PanicProbe(panic=True)`), method
/// (`method(message)`) and getter (`getter`) panic inside the boundary.
#[pyclass(module = "backline._native", name = "_PanicProbe", frozen)]
pub struct PanicProbe;

#[pymethods]
impl PanicProbe {
    /// `_PanicProbe(panic=False)`: panics when `panic` is true.
    #[new]
    #[pyo3(signature = (panic=false))]
    fn new(panic: bool) -> PyResult<PanicProbe> {
        boundary(|| {
            assert!(!panic, "_PanicProbe() asked to panic");
            Ok(PanicProbe)
        })
    }

    /// Panics with `message`.
    fn method(&self, message: &str) -> PyResult<()> {
        boundary(|| panic!("{message}"))
    }

    /// Panics (a getter).
    #[getter]
    fn getter(&self) -> PyResult<u32> {
        boundary(|| panic!("_PanicProbe.getter"))
    }

    /// Panics with a payload that is not a string.
    #[staticmethod]
    fn opaque() -> PyResult<()> {
        boundary(|| std::panic::panic_any(7_u32))
    }
}
