//! `backline._native.CuqrServer`: the CUQR server of `backline-responder` (NVIDIA's realtime
//! RPC frames over UDP) on threads of this process, for `backline.cuqr.Server`.

use std::sync::Mutex;

use backline_responder::ResponderTable;
use backline_responder::cuqr::{CuqrOptions, CuqrServer as RustServer, RingSpec};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::boundary::boundary;
use super::errors::{Class, err};

/// A CUQR server: `stream:` functions answered over UDP, one ring per decoder or one for all.
#[pyclass(module = "backline._native", frozen)]
pub struct CuqrServer {
    inner: Mutex<Option<RustServer>>,
    rings: Vec<(u16, Vec<u32>)>,
    ready_line: String,
}

/// `CuqrServer`'s table and rings from its arguments.
fn plan(
    fns: &[(u32, String)],
    rings: bool,
    host: &str,
) -> Result<(ResponderTable, Vec<RingSpec>), String> {
    let mut table = ResponderTable::new();
    for (id, spec) in fns {
        if !spec.starts_with("stream:") {
            return Err(format!(
                "decoder {id}: `{spec}` is not a stream: function (the CUQR protocol serves \
                 streaming decoders)"
            ));
        }
        for (k, f) in backline_responder::stream_functions(spec, *id).map_err(|e| e.to_string())? {
            table.insert(k, f);
        }
    }
    let ids: Vec<u32> = table.entries().map(|(id, _)| id).collect();
    let specs = if rings {
        ids.iter()
            .map(|&id| RingSpec {
                address: format!("{host}:0"),
                decoders: vec![id],
            })
            .collect()
    } else {
        vec![RingSpec {
            address: format!("{host}:0"),
            decoders: ids,
        }]
    };
    Ok((table, specs))
}

#[pymethods]
impl CuqrServer {
    /// CuqrServer(fns, rings=True, host="127.0.0.1", slot_size=256, num_slots=8,
    /// strict_counter=False, spin_us=200): `fns` is `[(decoder_id, "stream:…")]`; `rings`:
    /// one socket per decoder (NVIDIA's shape) or one for all. Ports are chosen free.
    #[new]
    #[pyo3(signature = (fns, rings=true, host="127.0.0.1", slot_size=256, num_slots=8, strict_counter=false, spin_us=200))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        fns: Vec<(u32, String)>,
        rings: bool,
        host: &str,
        slot_size: usize,
        num_slots: usize,
        strict_counter: bool,
        spin_us: i64,
    ) -> PyResult<CuqrServer> {
        boundary(|| {
            let wait = backline_transport::WaitPolicy::from_micros(spin_us)
                .map_err(|e| err(py, Class::PlacementError, e))?;
            let options = CuqrOptions {
                slot_bytes: slot_size,
                num_slots,
                wait,
                strict_counter,
                ..CuqrOptions::default()
            };
            let host = host.to_string();
            let started = py.detach(move || {
                let (table, specs) = plan(&fns, rings, &host)?;
                RustServer::start_rings(&table, &specs, options).map_err(|e| e.to_string())
            });
            let s = started.map_err(|e| err(py, Class::CoprocessorFunctionError, e))?;
            Ok(CuqrServer {
                rings: s
                    .rings()
                    .iter()
                    .map(|r| (r.addr.port(), r.decoders.clone()))
                    .collect(),
                ready_line: s.ready_line(),
                inner: Mutex::new(Some(s)),
            })
        })
    }

    /// `[(port, [decoder ids])]`, one per ring.
    #[getter]
    fn rings(&self) -> PyResult<Vec<(u16, Vec<u32>)>> {
        boundary(|| Ok(self.rings.clone()))
    }

    /// NVIDIA's `QEC_DECODING_SERVER_READY port=<P0> transport=udp ring<id>=<port> …`.
    #[getter]
    fn ready_line(&self) -> PyResult<String> {
        boundary(|| Ok(self.ready_line.clone()))
    }

    /// Stops serving (idempotent); its counters: `{"frames", "statuses", "dropped",
    /// "streams"}` (statuses and drop reasons by name; `None` when already stopped).
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        boundary(|| {
            let server = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
            let Some(server) = server else {
                return Ok(None);
            };
            let report = py
                .detach(move || server.stop())
                .map_err(|e| err(py, Class::PlacementError, format!("the cuqr server: {e}")))?;
            let t = report.totals();
            let load =
                |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            let d = PyDict::new(py);
            d.set_item("frames", load(&t.frames))?;
            let statuses = PyDict::new(py);
            for (s, n) in backline_wire::cuqr::CallStatus::ALL
                .iter()
                .zip(&t.by_status)
            {
                statuses.set_item(s.name(), load(n))?;
            }
            d.set_item("statuses", statuses)?;
            let dropped = PyDict::new(py);
            for (r, n) in backline_responder::cuqr::DropReason::ALL
                .iter()
                .zip(&t.dropped)
            {
                dropped.set_item(r.name(), load(n))?;
            }
            d.set_item("dropped", dropped)?;
            d.set_item("streams", report.streams)?;
            Ok(Some(d))
        })
    }
}
