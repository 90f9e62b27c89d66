//! `FpgaBoard`: the simulated FPGA board a `Controller(hardware="fpga")` runs its rounds
//! through (feature `fpga`).

use std::sync::Mutex;

use pyo3::prelude::*;

use super::boundary::boundary;
use super::errors::{Class, err, placement_err};
use super::placement::config_of;
use crate::fpga::{FpgaBoard as RustBoard, FpgaError};
use crate::placement;

/// The simulated FPGA board a `Controller(hardware="fpga")` runs its rounds through.
#[pyclass(module = "backline._native", frozen)]
pub struct FpgaBoard {
    inner: Mutex<RustBoard>,
}

#[pymethods]
impl FpgaBoard {
    /// FpgaBoard(transport, peer, payload_bytes=48, reply_timeout=1.0, setup_timeout=5.0,
    /// reply_timeout_us=None): starts a simulated board whose ERNIC delivers every request to
    /// the coprocessor at `peer` over `transport` (shm, udp or rdma).
    #[new]
    #[pyo3(signature = (transport, peer, payload_bytes=48, reply_timeout=1.0, setup_timeout=5.0, reply_timeout_us=None))]
    fn new(
        py: Python<'_>,
        transport: &str,
        peer: &str,
        payload_bytes: usize,
        reply_timeout: f64,
        setup_timeout: f64,
        reply_timeout_us: Option<u32>,
    ) -> PyResult<FpgaBoard> {
        boundary(|| {
            let t = placement::transport_of(transport).map_err(|e| placement_err(py, e))?;
            let config = config_of(py, transport, payload_bytes, reply_timeout, setup_timeout)?;
            let peer = peer.to_string();
            let b = py
                .detach(move || RustBoard::simulated(t, &peer, &config, reply_timeout_us))
                .map_err(|e| {
                    let class = match &e {
                        FpgaError::Unreachable(_) => Class::CoprocessorUnreachableError,
                        _ => Class::PlacementError,
                    };
                    err(py, class, e.to_string())
                })?;
            Ok(FpgaBoard {
                inner: Mutex::new(b),
            })
        })
    }

    /// The coprocessor the board's requests go to (`shm:NAME`, `udp:HOST:PORT`).
    #[getter]
    fn coprocessor(&self) -> PyResult<String> {
        boundary(|| Ok(self.with_board(|b| b.coprocessor().to_string())))
    }
}

impl FpgaBoard {
    /// `f` with the board, locked (a poisoned lock is taken over).
    pub(crate) fn with_board<R>(&self, f: impl FnOnce(&mut RustBoard) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
