//! The Catalyst device's hooks for the Python side: the settings a run of a compiled
//! function starts from, and the end of a placement (`crate::catalyst`).

use pyo3::prelude::*;

use super::boundary::boundary;
use super::errors::{Class, err};
use crate::catalyst::{DEVICE_NAME, Placement};

/// catalyst_begin(settings, seed): the next call of a compiled function on the placement of
/// `settings` (the hex of its device kwargs) numbers its shots from 0, seeded from `seed`
/// (as one execution of the non-compiled path).
#[pyfunction]
pub(crate) fn catalyst_begin(py: Python<'_>, settings: &str, seed: u64) -> PyResult<()> {
    boundary(|| {
        let p =
            Placement::of(settings).map_err(|e| err(py, Class::PlacementError, e.to_string()))?;
        p.begin(seed);
        Ok(())
    })
}

/// catalyst_forget(settings) -> bool: closes the sessions the compiled functions of this
/// placement hold and forgets it (before its coprocessors stop); False if none were held.
#[pyfunction]
pub(crate) fn catalyst_forget(settings: &str) -> PyResult<bool> {
    boundary(|| Ok(Placement::forget(settings)))
}

/// catalyst_rounds(settings) -> int: the decode rounds the compiled functions of this
/// placement have done.
#[pyfunction]
pub(crate) fn catalyst_rounds(py: Python<'_>, settings: &str) -> PyResult<u64> {
    boundary(|| {
        let p =
            Placement::of(settings).map_err(|e| err(py, Class::PlacementError, e.to_string()))?;
        Ok(p.rounds_done())
    })
}

/// The device name Catalyst's factory symbol carries (`<name>Factory`).
pub(crate) const CATALYST_DEVICE: &str = DEVICE_NAME;
