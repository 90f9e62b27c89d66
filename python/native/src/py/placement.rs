//! `Server`: a coprocessor served by a thread of this process, and the session settings of a
//! transport as the bindings take them (timeouts in seconds).

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use pyo3::prelude::*;

use super::boundary::boundary;
use super::errors::{Class, err, placement_err};
use crate::placement::{self, Server as RustServer};

/// A coprocessor served by a thread of this process.
#[pyclass(module = "backline._native", frozen)]
pub struct Server {
    inner: Mutex<RustServer>,
    peer: String,
    transport: String,
}

#[pymethods]
impl Server {
    /// Server(transport, address, key, fns, payload_bytes=48, max_sessions=None,
    /// reply_timeout=1.0, setup_timeout=5.0)
    ///
    /// `fns` is `[(decoder_id, spec)]` with specs `steane`, `echo`, `LIB:SYMBOL` or
    /// `bposd:CODE[:SETTINGS]` (which takes its id and the next).
    #[new]
    #[pyo3(signature = (transport, address, key, fns, payload_bytes=48, max_sessions=None, reply_timeout=1.0, setup_timeout=5.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        transport: &str,
        address: &str,
        key: &str,
        fns: Vec<(u32, String)>,
        payload_bytes: usize,
        max_sessions: Option<u64>,
        reply_timeout: f64,
        setup_timeout: f64,
    ) -> PyResult<Server> {
        boundary(|| {
            let config = config_of(py, transport, payload_bytes, reply_timeout, setup_timeout)?;
            let (address, key) = (address.to_string(), key.to_string());
            let s = py
                .detach(move || RustServer::start(config, &address, &key, &fns, max_sessions))
                .map_err(|e| placement_err(py, e))?;
            Ok(Server {
                peer: s.peer().to_string(),
                inner: Mutex::new(s),
                transport: transport.to_string(),
            })
        })
    }

    /// What a controller passes as its peer (memcpy key, shm name, udp `host:port`).
    #[getter]
    fn peer(&self) -> PyResult<String> {
        boundary(|| Ok(self.peer.clone()))
    }

    /// The transport served.
    #[getter]
    fn transport(&self) -> PyResult<String> {
        boundary(|| Ok(self.transport.clone()))
    }

    /// `[(decoder_id, function name)]`.
    #[getter]
    fn functions(&self) -> PyResult<Vec<(u32, String)>> {
        boundary(|| Ok(self.lock().functions().to_vec()))
    }

    /// Decoder ids served.
    #[getter]
    fn decoder_ids(&self) -> PyResult<Vec<u32>> {
        boundary(|| Ok(self.lock().ids().to_vec()))
    }

    /// `(sessions, rounds, rounds answered with an error status)`.
    fn stats(&self) -> PyResult<(u64, u64, u64)> {
        boundary(|| Ok(self.lock().stats()))
    }

    /// True once the server thread has ended.
    fn finished(&self) -> PyResult<bool> {
        boundary(|| Ok(self.lock().finished()))
    }

    /// Stops serving (idempotent).
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        boundary(|| {
            let r = py.detach(|| self.lock().stop());
            r.map_err(|e| {
                err(
                    py,
                    Class::PlacementError,
                    format!("stopping the server: {e}"),
                )
            })
        })
    }
}

impl Server {
    fn lock(&self) -> MutexGuard<'_, RustServer> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The session settings of a transport by name, with the timeouts in seconds.
pub(crate) fn config_of(
    py: Python<'_>,
    transport: &str,
    payload_bytes: usize,
    reply_timeout: f64,
    setup_timeout: f64,
) -> PyResult<backline_transport::SessionConfig> {
    let t = placement::transport_of(transport).map_err(|e| placement_err(py, e))?;
    placement::session_config(
        t,
        payload_bytes,
        secs(py, reply_timeout)?,
        secs(py, setup_timeout)?,
    )
    .map_err(|e| placement_err(py, e))
}

/// A timeout in seconds: positive, finite and at most a day, else `PlacementError`.
pub(crate) fn secs(py: Python<'_>, s: f64) -> PyResult<Duration> {
    placement::timeout_secs("timeout", s).map_err(|e| err(py, Class::PlacementError, e.to_string()))
}
