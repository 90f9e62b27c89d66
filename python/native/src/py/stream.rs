//! Streaming decoders: `stream_layout` (the rounds of a `stream:` spec's model) and
//! `StreamClient`, a controller's session to one stream of a `stream:` coprocessor function.

use std::sync::{Mutex, MutexGuard};

use backline_transport::{ControllerSession, Session as _};
use backline_wire::stream::StreamRequest;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::boundary::boundary;
use super::errors::{Class, err};
use super::placement::config_of;

/// The rounds of a `stream:` spec's model and its observables: `(detectors of each round,
/// observables)`. Builds the spec's decoders once, so that a bad model or setting raises
/// `CoprocessorFunctionError` here, where the function is defined.
#[pyfunction]
pub(crate) fn stream_layout(py: Python<'_>, spec: &str) -> PyResult<(Vec<usize>, usize)> {
    boundary(|| {
        let spec = spec.to_string();
        let r = py.detach(move || backline_responder::stream::stream_decoder_of(&spec));
        let (_, dec) = r.map_err(|e| err(py, Class::CoprocessorFunctionError, e.to_string()))?;
        let rounds = (0..dec.rounds())
            .map(|r| dec.round_detectors(r).len())
            .collect();
        Ok((rounds, dec.num_observables()))
    })
}

/// A controller's session to one stream of a `stream:` coprocessor function: the three calls
/// of a streaming decoder, one message each.
#[pyclass(module = "backline._native", frozen)]
pub struct StreamClient {
    inner: Mutex<ControllerSession>,
    decoder_id: u32,
    peer: String,
}

/// A call's answer as Python sees it: `(status name, final, rounds so far, result bytes)`.
type StreamAnswer<'py> = (&'static str, bool, u32, Bound<'py, PyBytes>);

#[pymethods]
impl StreamClient {
    /// StreamClient(transport, peer, decoder_id=0, payload_bytes=48, reply_timeout=1.0,
    /// setup_timeout=5.0): connects to the coprocessor at `peer` (memcpy: its key).
    #[new]
    #[pyo3(signature = (transport, peer, decoder_id=0, payload_bytes=48, reply_timeout=1.0, setup_timeout=5.0))]
    fn new(
        py: Python<'_>,
        transport: &str,
        peer: &str,
        decoder_id: u32,
        payload_bytes: usize,
        reply_timeout: f64,
        setup_timeout: f64,
    ) -> PyResult<StreamClient> {
        boundary(|| {
            let config = config_of(py, transport, payload_bytes, reply_timeout, setup_timeout)?;
            let p = peer.to_string();
            let s = py
                .detach(move || ControllerSession::open("py-stream", config, &p, 0))
                .map_err(|e| {
                    err(
                        py,
                        Class::CoprocessorUnreachableError,
                        format!("the stream coprocessor at {transport}:{peer}: {e}"),
                    )
                })?;
            Ok(StreamClient {
                inner: Mutex::new(s),
                decoder_id,
                peer: peer.to_string(),
            })
        })
    }

    /// `enqueue(round, packed)`: round `round`'s detection events, bit-packed LSB-first.
    fn enqueue<'py>(
        &self,
        py: Python<'py>,
        round: u32,
        packed: &[u8],
    ) -> PyResult<StreamAnswer<'py>> {
        boundary(|| {
            let r = StreamRequest::Enqueue {
                round,
                bits: packed,
            };
            self.call(py, &r)
        })
    }

    /// `get_corrections(observables, reset)`: the observable flips so far, bit-packed.
    fn get_corrections<'py>(
        &self,
        py: Python<'py>,
        observables: u32,
        reset: bool,
    ) -> PyResult<StreamAnswer<'py>> {
        boundary(|| self.call(py, &StreamRequest::GetCorrections { observables, reset }))
    }

    /// `reset()`: forget the shot.
    fn reset<'py>(&self, py: Python<'py>) -> PyResult<StreamAnswer<'py>> {
        boundary(|| self.call(py, &StreamRequest::Reset))
    }

    /// Ends the session (idempotent).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        boundary(|| {
            let r = py.detach(|| self.lock().stop());
            r.map_err(|e| {
                err(
                    py,
                    Class::PlacementError,
                    format!("closing the stream session: {e}"),
                )
            })
        })
    }
}

impl StreamClient {
    fn lock(&self) -> MutexGuard<'_, ControllerSession> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One call: the request sent, its reply read back (called inside the boundary).
    fn call<'py>(&self, py: Python<'py>, r: &StreamRequest<'_>) -> PyResult<StreamAnswer<'py>> {
        use backline_transport::Controller as _;
        let mut req = [0u8; 512];
        let n = backline_wire::stream::encode_request(&mut req, r)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("stream request: {e}")))?;
        let id = self.decoder_id;
        let res = py.detach(|| -> Result<(u16, Vec<u8>), backline_transport::Error> {
            let mut s = self.lock();
            s.stage_payload(&req[..n], id)?;
            s.post()?;
            let reply = s.collect()?;
            Ok((reply.status as u16, reply.payload.to_vec()))
        });
        let (status, payload) = res.map_err(|e| {
            err(
                py,
                Class::CoprocessorTimeoutError,
                format!("the stream coprocessor at {}: {e}", self.peer),
            )
        })?;
        if status != backline_wire::Status::Ok as u16 {
            let name = backline_wire::Status::from_u16(status).map_or("unknown", |s| s.name());
            return Err(err(
                py,
                Class::DecoderIdError,
                format!(
                    "the coprocessor at {} answered {name} for decoder_id {id}: no stream: \
                     function there",
                    self.peer
                ),
            ));
        }
        let (h, rest) = backline_wire::stream::parse_reply(&payload)
            .map_err(|e| err(py, Class::RunError, format!("malformed stream reply: {e}")))?;
        Ok((
            h.status.name(),
            h.flags & backline_wire::stream::FLAG_FINAL != 0,
            h.rounds,
            PyBytes::new(py, rest),
        ))
    }
}
