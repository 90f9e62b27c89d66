//! `compile` and `run`: the front end's op list through the pass pipeline to a VM program
//! (`Compiled`), and its shots run with every decode a round to the placement; the latency
//! summary of a run's rounds.

use std::time::{Duration, Instant};

use backline_compiler::NoiseDefaults;
use backline_stabvm::Endpoint;
use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::boundary::boundary;
use super::errors::{Class, err, front_err, placement_err, run_err};
use super::placement::secs;
use crate::placement;
use crate::program::{self, Header, OpSpec};

/// A compiled program: the VM program, the IR dumps and what it asks of the placement.
#[pyclass(module = "backline._native", frozen)]
pub struct Compiled {
    inner: program::Compiled,
}

#[pymethods]
impl Compiled {
    /// `[(stage, text)]`: the IR before the first pass (`input`) and after every pass.
    #[getter]
    fn dumps(&self) -> PyResult<Vec<(String, String)>> {
        boundary(|| Ok(self.inner.dumps.clone()))
    }

    /// `[(coprocessor, decoder_id)]` the program sends requests to.
    #[getter]
    fn requests(&self) -> PyResult<Vec<(u32, u32)>> {
        boundary(|| Ok(self.inner.requests.clone()))
    }

    /// Decode rounds per shot.
    #[getter]
    fn rounds_per_shot(&self) -> PyResult<usize> {
        boundary(|| Ok(self.inner.rounds_per_shot))
    }

    /// Physical qubits of the lowered program.
    #[getter]
    fn num_qubits(&self) -> PyResult<u32> {
        boundary(|| Ok(self.inner.program.num_qubits))
    }

    /// Instructions per shot.
    #[getter]
    fn body_len(&self) -> PyResult<usize> {
        boundary(|| Ok(self.inner.program.body.len()))
    }

    /// The VM program as bytes (`backline_stabvm::codec`: magic, encoding version, checked
    /// when read back), for an executor in another process to run.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        boundary(|| {
            Ok(PyBytes::new(
                py,
                &backline_stabvm::codec::encode(&self.inner.program),
            ))
        })
    }

    /// compiled_from_bytes(data) -> Compiled: a program from `to_bytes`, checked (a wrong
    /// magic, another encoding, truncated or invalid bytes raise `CompileError`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Compiled> {
        boundary(|| {
            let program = backline_stabvm::codec::decode(data)
                .map_err(|e| err(py, Class::CompileError, format!("a shipped program: {e}")))?;
            Ok(Compiled {
                inner: program::Compiled::of(program, Vec::new()),
            })
        })
    }
}

/// The `header` tuple of `compile`.
type HeaderTuple = (String, u32, u32, u32, Option<String>, Vec<String>);

/// compile(header, ops, pipeline=None, noise_p=0.0, noise_channel="depolarize", dumps=False)
///
/// `header` is `(name, num_qubits, num_bits, num_words, qec_code, coprocessors)`; `ops` a
/// list of `(tag, ints, p)` (see the crate docs).
#[pyfunction]
#[pyo3(signature = (header, ops, pipeline=None, noise_p=0.0, noise_channel="depolarize", dumps=false))]
pub(crate) fn compile(
    py: Python<'_>,
    header: HeaderTuple,
    ops: Vec<(String, Vec<u64>, f64)>,
    pipeline: Option<&str>,
    noise_p: f64,
    noise_channel: &str,
    dumps: bool,
) -> PyResult<Compiled> {
    boundary(|| {
        let (name, num_qubits, num_bits, num_words, qec_code, coprocessors) = header;
        let h = Header {
            name,
            num_qubits,
            num_bits,
            num_words,
            qec_code,
            coprocessors,
        };
        let ops: Vec<OpSpec> = ops
            .into_iter()
            .map(|(tag, ints, p)| OpSpec { tag, ints, p })
            .collect();
        let m = program::build(&h, &ops).map_err(|e| front_err(py, e))?;
        let noise = NoiseDefaults {
            p: noise_p,
            channel: noise_channel.to_string(),
        };
        let inner = program::compile(m, pipeline, &noise, dumps)
            .map_err(|e| err(py, Class::CompileError, e.to_string()))?;
        Ok(Compiled { inner })
    })
}

/// Interrupt checks: at most every 50 ms, the run re-attaches to the interpreter to see if a
/// signal (Ctrl-C) is pending.
struct Watch {
    last: Instant,
    interrupted: bool,
}

impl Watch {
    fn check(&mut self, _done: u64) -> bool {
        if self.last.elapsed() < Duration::from_millis(50) {
            return true;
        }
        self.last = Instant::now();
        let pending = Python::attach(|py| py.check_signals().is_err());
        if pending {
            self.interrupted = true;
        }
        !pending
    }
}

/// An `endpoints` entry of `run`: `(transport, key, peer, payload_bytes, reply_timeout,
/// setup_timeout)`.
type EndpointTuple = (String, String, String, usize, f64, f64);

/// The endpoints of a run, index = coprocessor number.
fn endpoints_of(py: Python<'_>, endpoints: Vec<EndpointTuple>) -> PyResult<Vec<Endpoint>> {
    let mut eps = Vec::with_capacity(endpoints.len());
    for (transport, key, peer, payload_bytes, reply, setup) in endpoints {
        let t = placement::transport_of(&transport).map_err(|e| placement_err(py, e))?;
        let config =
            placement::session_config(t, payload_bytes, secs(py, reply)?, secs(py, setup)?)
                .map_err(|e| placement_err(py, e))?;
        eps.push(Endpoint { key, peer, config });
    }
    Ok(eps)
}

/// run(compiled, shots, seed, endpoints=[], board=None) -> (bits, width, rtts_ns)
///
/// `endpoints` is `[(transport, key, peer, payload_bytes, reply_timeout, setup_timeout)]`,
/// index = coprocessor number; with `board` the rounds go through the FPGA board instead.
/// `bits` holds one byte (0/1) per output bit, shot-major. The interpreter is released while
/// the shots run; Ctrl-C stops the run within about 50 ms.
#[pyfunction]
#[pyo3(signature = (compiled, shots, seed, endpoints=Vec::new(), board=None))]
pub(crate) fn run<'py>(
    py: Python<'py>,
    compiled: &Compiled,
    shots: u64,
    seed: u64,
    endpoints: Vec<EndpointTuple>,
    board: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyBytes>, usize, Vec<f64>)> {
    boundary(|| {
        let eps = endpoints_of(py, endpoints)?;
        let program = &compiled.inner.program;
        placement::tableau_fits(program.num_qubits).map_err(PyMemoryError::new_err)?;
        let mut watch = Watch {
            last: Instant::now(),
            interrupted: false,
        };
        let out = match board {
            None => py.detach(|| {
                let mut f = placement::session_rounds(eps);
                placement::run(program, shots, seed, &mut f, &mut |n| watch.check(n))
            }),
            #[cfg(feature = "fpga")]
            Some(b) => {
                let b = b.cast::<super::board::FpgaBoard>().map_err(PyErr::from)?;
                let b = b.get();
                py.detach(|| {
                    b.with_board(|g| {
                        g.clear();
                        placement::run(program, shots, seed, g, &mut |n| watch.check(n))
                    })
                })
            }
            #[cfg(not(feature = "fpga"))]
            Some(_) => {
                return Err(err(
                    py,
                    Class::PlacementError,
                    "this build of backline has no FPGA controller (feature `fpga`)",
                ));
            }
        };
        if watch.interrupted {
            py.check_signals()?;
        }
        let out = out.map_err(|e| run_err(py, e))?;
        let bits = PyBytes::new_with(py, out.bits.len(), |b| {
            b.copy_from_slice(&out.bits);
            Ok(())
        })?;
        Ok((bits, out.width, out.rtts_ns))
    })
}

/// latency_summary(rtts_ns) -> dict | None: mean, median, std, min, max, P99 … P99.999 (ns),
/// as `backline bench` reports them.
#[pyfunction]
pub(crate) fn latency_summary(rtts_ns: Vec<f64>) -> PyResult<Option<Vec<(&'static str, f64)>>> {
    boundary(|| {
        let Some(s) = backline_bench::Summary::of(&rtts_ns) else {
            return Ok(None);
        };
        Ok(Some(vec![
            ("count", s.count as f64),
            ("mean_ns", s.mean_ns),
            ("median_ns", s.median_ns),
            ("std_ns", s.std_ns),
            ("min_ns", s.min_ns),
            ("max_ns", s.max_ns),
            ("p99_ns", s.p99_ns),
            ("p999_ns", s.p999_ns),
            ("p9999_ns", s.p9999_ns),
            ("p99999_ns", s.p99999_ns),
        ]))
    })
}

/// program_limits(spec) -> list[(key, limit)]: the program limits of one run
/// (`backline_stabvm::ProgramLimits`, the one statement of them): the defaults with `spec`
/// (`key=N,…`, the form of `BACKLINE_PROGRAM_LIMITS`) applied, in the order qubits, bits,
/// words, sessions, shots, output_bits. `ValueError` for a spec that does not parse.
#[pyfunction]
pub fn program_limits(spec: &str) -> PyResult<Vec<(&'static str, u64)>> {
    boundary(|| {
        let l = backline_stabvm::ProgramLimits::parse(spec)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        Ok(vec![
            ("qubits", u64::from(l.qubits)),
            ("bits", u64::from(l.bits)),
            ("words", u64::from(l.words)),
            ("sessions", u64::from(l.sessions)),
            ("shots", l.shots),
            ("output_bits", l.output_bits),
        ])
    })
}
