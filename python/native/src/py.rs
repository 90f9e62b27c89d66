//! The Python bindings: `backline._native`. Exceptions are the classes of the pure-Python
//! module `backline.errors` (one definition, raised from here by name).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use backline_compiler::NoiseDefaults;
use backline_decoders::dem::DemLimits;
use backline_decoders::io::excerpt;
use backline_stabvm::Endpoint;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::placement::{self, PlacementError, RunError, Server as RustServer};
use crate::program::{self, FrontError, Header, OpSpec};
use crate::pyerr::err;

fn front_err(py: Python<'_>, e: FrontError) -> PyErr {
    match e {
        FrontError::UnknownQecCode(_) => err(py, "UnknownQecCodeError", e.to_string()),
        e => err(py, "CompileError", e.to_string()),
    }
}

fn placement_err(py: Python<'_>, e: PlacementError) -> PyErr {
    let class = match &e {
        PlacementError::UnknownTransport(_) => "UnknownTransportError",
        PlacementError::Function { .. } => "CoprocessorFunctionError",
        PlacementError::Serve { .. } => "CoprocessorUnreachableError",
        _ => "PlacementError",
    };
    err(py, class, e.to_string())
}

fn run_err(py: Python<'_>, e: RunError) -> PyErr {
    let class = match &e {
        RunError::Unreachable { source, .. } | RunError::Timeout { source, .. }
            if matches!(source, backline_transport::Error::NotAdmitted { .. }) =>
        {
            "NotAdmittedError"
        }
        RunError::Unreachable { .. } => "CoprocessorUnreachableError",
        RunError::Timeout { .. } => "CoprocessorTimeoutError",
        RunError::UnservedDecoder { .. } => "DecoderIdError",
        RunError::Interrupted(_) => {
            return pyo3::exceptions::PyKeyboardInterrupt::new_err(e.to_string());
        }
        RunError::Vm(_) => "RunError",
    };
    err(py, class, e.to_string())
}

/// A compiled program: the VM program, the IR dumps and what it asks of the placement.
#[pyclass(module = "backline._native", frozen)]
pub struct Compiled {
    inner: program::Compiled,
}

#[pymethods]
impl Compiled {
    /// `[(stage, text)]`: the IR before the first pass (`input`) and after every pass.
    #[getter]
    fn dumps(&self) -> Vec<(String, String)> {
        self.inner.dumps.clone()
    }

    /// `[(coprocessor, decoder_id)]` the program sends requests to.
    #[getter]
    fn requests(&self) -> Vec<(u32, u32)> {
        self.inner.requests.clone()
    }

    /// Decode rounds per shot.
    #[getter]
    fn rounds_per_shot(&self) -> usize {
        self.inner.rounds_per_shot
    }

    /// Physical qubits of the lowered program.
    #[getter]
    fn num_qubits(&self) -> u32 {
        self.inner.program.num_qubits
    }

    /// Instructions per shot.
    #[getter]
    fn body_len(&self) -> usize {
        self.inner.program.body.len()
    }

    /// The VM program as bytes (`backline_stabvm::codec`: magic, encoding version, checked
    /// when read back), for an executor in another process to run.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &backline_stabvm::codec::encode(&self.inner.program))
    }

    /// compiled_from_bytes(data) -> Compiled: a program from `to_bytes`, checked (a wrong
    /// magic, another encoding, truncated or invalid bytes raise `CompileError`).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Compiled> {
        let program = backline_stabvm::codec::decode(data)
            .map_err(|e| err(py, "CompileError", format!("a shipped program: {e}")))?;
        Ok(Compiled {
            inner: program::Compiled::of(program, Vec::new()),
        })
    }
}

/// compile(header, ops, pipeline=None, noise_p=0.0, noise_channel="depolarize", dumps=False)
///
/// `header` is `(name, num_qubits, num_bits, num_words, qec_code, coprocessors)`; `ops` a
/// list of `(tag, ints, p)` (see the crate docs).
#[pyfunction]
#[pyo3(signature = (header, ops, pipeline=None, noise_p=0.0, noise_channel="depolarize", dumps=false))]
#[allow(clippy::type_complexity)]
fn compile(
    py: Python<'_>,
    header: (String, u32, u32, u32, Option<String>, Vec<String>),
    ops: Vec<(String, Vec<u64>, f64)>,
    pipeline: Option<&str>,
    noise_p: f64,
    noise_channel: &str,
    dumps: bool,
) -> PyResult<Compiled> {
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
        .map_err(|e| err(py, "CompileError", e.to_string()))?;
    Ok(Compiled { inner })
}

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
    }

    /// What a controller passes as its peer (memcpy key, shm name, udp `host:port`).
    #[getter]
    fn peer(&self) -> String {
        self.peer.clone()
    }

    /// The transport served.
    #[getter]
    fn transport(&self) -> String {
        self.transport.clone()
    }

    /// `[(decoder_id, function name)]`.
    #[getter]
    fn functions(&self) -> Vec<(u32, String)> {
        self.lock().functions().to_vec()
    }

    /// Decoder ids served.
    #[getter]
    fn decoder_ids(&self) -> Vec<u32> {
        self.lock().ids().to_vec()
    }

    /// `(sessions, rounds, rounds answered with an error status)`.
    fn stats(&self) -> (u64, u64, u64) {
        self.lock().stats()
    }

    /// True once the server thread has ended.
    fn finished(&self) -> bool {
        self.lock().finished()
    }

    /// Stops serving (idempotent).
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let r = py.detach(|| self.lock().stop());
        r.map_err(|e| err(py, "PlacementError", format!("stopping the server: {e}")))
    }
}

impl Server {
    fn lock(&self) -> std::sync::MutexGuard<'_, RustServer> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The session settings of a transport by name, with the timeouts in seconds.
fn config_of(
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

fn secs(py: Python<'_>, s: f64) -> PyResult<Duration> {
    if s.is_finite() && s > 0.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(err(
            py,
            "PlacementError",
            format!("timeout {s} s: must be a positive number of seconds"),
        ))
    }
}

/// The simulated FPGA board a `Controller(hardware="fpga")` runs its rounds through.
#[cfg(feature = "fpga")]
#[pyclass(module = "backline._native", frozen)]
pub struct FpgaBoard {
    inner: Mutex<crate::fpga::FpgaBoard>,
}

#[cfg(feature = "fpga")]
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
        let t = placement::transport_of(transport).map_err(|e| placement_err(py, e))?;
        let config = placement::session_config(
            t,
            payload_bytes,
            secs(py, reply_timeout)?,
            secs(py, setup_timeout)?,
        )
        .map_err(|e| placement_err(py, e))?;
        let peer = peer.to_string();
        let b = py
            .detach(move || crate::fpga::FpgaBoard::simulated(t, &peer, &config, reply_timeout_us))
            .map_err(|e| {
                let class = match &e {
                    crate::fpga::FpgaError::Unreachable(_) => "CoprocessorUnreachableError",
                    _ => "PlacementError",
                };
                err(py, class, e.to_string())
            })?;
        Ok(FpgaBoard {
            inner: Mutex::new(b),
        })
    }

    /// The coprocessor the board's requests go to (`shm:NAME`, `udp:HOST:PORT`).
    #[getter]
    fn coprocessor(&self) -> String {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .coprocessor()
            .to_string()
    }
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

/// run(compiled, shots, seed, endpoints=[], board=None) -> (bits, width, rtts_ns)
///
/// `endpoints` is `[(transport, key, peer, payload_bytes, reply_timeout, setup_timeout)]`,
/// index = coprocessor number; with `board` the rounds go through the FPGA board instead.
/// `bits` holds one byte (0/1) per output bit, shot-major. The interpreter is released while
/// the shots run; Ctrl-C stops the run within about 50 ms.
#[pyfunction]
#[pyo3(signature = (compiled, shots, seed, endpoints=Vec::new(), board=None))]
#[allow(clippy::type_complexity)]
fn run<'py>(
    py: Python<'py>,
    compiled: &Compiled,
    shots: u64,
    seed: u64,
    endpoints: Vec<(String, String, String, usize, f64, f64)>,
    board: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyBytes>, usize, Vec<f64>)> {
    let mut eps = Vec::with_capacity(endpoints.len());
    for (transport, key, peer, payload_bytes, reply, setup) in endpoints {
        let t = placement::transport_of(&transport).map_err(|e| placement_err(py, e))?;
        let config =
            placement::session_config(t, payload_bytes, secs(py, reply)?, secs(py, setup)?)
                .map_err(|e| placement_err(py, e))?;
        eps.push(Endpoint { key, peer, config });
    }
    let program = &compiled.inner.program;
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
            let b = b.cast::<FpgaBoard>().map_err(PyErr::from)?;
            let b = b.get();
            py.detach(|| {
                let mut g = b.inner.lock().unwrap_or_else(|p| p.into_inner());
                g.clear();
                placement::run(program, shots, seed, &mut *g, &mut |n| watch.check(n))
            })
        }
        #[cfg(not(feature = "fpga"))]
        Some(_) => {
            return Err(err(
                py,
                "PlacementError",
                "this build of backline has no FPGA controller (feature `fpga`)",
            ));
        }
    };
    if watch.interrupted {
        py.check_signals()?;
    }
    let out = out.map_err(|e| run_err(py, e))?;
    Ok((PyBytes::new(py, &out.bits), out.width, out.rtts_ns))
}

/// latency_summary(rtts_ns) -> dict | None: mean, median, std, min, max, P99 … P99.999 (ns),
/// as `backline bench` reports them.
#[pyfunction]
fn latency_summary(rtts_ns: Vec<f64>) -> Option<Vec<(&'static str, f64)>> {
    let s = backline_bench::Summary::of(&rtts_ns)?;
    Some(vec![
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
    ])
}

/// A decoder compiled from a stim detector error model's text (for `backline.sinter`): BP+OSD,
/// Relay-BP or matching, decoding bit-packed detection events into bit-packed observable
/// flips.
///
/// Nothing it is given takes the interpreter down: the model is read within its
/// [`DemLimits`] (`BACKLINE_DEM_LIMITS`, then `limits`), threads are bounded and started
/// fallibly, allocations sized by the input are fallible (`MemoryError`), and a panic would be
/// `RunError`: every exception derives from `Exception`, none is pyo3's `PanicException`.
#[pyclass(module = "backline._native", frozen)]
pub struct DemDecoder {
    inner: Mutex<backline_decoders::dem_decoder::DemDecoder>,
    threads: usize,
}

/// `f()`, a panic in it turned into `RunError` (pyo3 would raise `PanicException`, which
/// `except Exception` does not catch).
fn no_panic<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Err(err(py, "RunError", format!("internal error: {what}")))
    })
}

/// The decoder's settings from `(name, value)` texts.
fn dem_settings(
    py: Python<'_>,
    decoder: &str,
    settings: &[(String, String)],
) -> PyResult<backline_decoders::dem_decoder::DemDecoderSettings> {
    use backline_decoders::registry::{self, Profile};
    let bad = |e: backline_decoders::SettingError| {
        err(
            py,
            "DecoderSettingsError",
            format!("{}: {e}", excerpt(decoder)),
        )
    };
    let mut s = registry::settings(decoder, Profile::Offline).map_err(bad)?;
    for (k, v) in settings {
        s.set(k, v).map_err(bad)?;
    }
    Ok(s)
}

/// `BACKLINE_DEM_LIMITS` with `limits` (`[(name, value)]`) applied.
fn dem_limits(py: Python<'_>, limits: &[(String, String)]) -> PyResult<DemLimits> {
    let bad = |e: backline_decoders::SettingError| {
        err(py, "DecoderSettingsError", format!("dem_limits: {e}"))
    };
    let mut l = DemLimits::from_env().map_err(bad)?;
    for (k, v) in limits {
        l.set(k, v).map_err(bad)?;
    }
    Ok(l)
}

#[pymethods]
impl DemDecoder {
    /// `DemDecoder(dem_text, decoder, settings, threads=1, name="<dem>", limits=[])`: `decoder`
    /// is `"bposd"`, `"relay-bp"` or `"matching"`, `settings` `[(name, value as text)]` with
    /// ldpc's or relay-bp's names (none for matching), `limits` `[(name, value)]` of the model's bounds (`targets`,
    /// `coords`, `mechanisms`, over `BACKLINE_DEM_LIMITS`). Raises `DetectorErrorModelError`
    /// for a model that does not parse or expands past its bounds (naming the line) and
    /// `DecoderSettingsError` for settings that do not apply (threads past 1024 among them).
    #[new]
    #[pyo3(signature = (dem_text, decoder, settings, threads=1, name="<dem>", limits=Vec::new()))]
    fn new(
        py: Python<'_>,
        dem_text: &str,
        decoder: &str,
        settings: Vec<(String, String)>,
        threads: usize,
        name: &str,
        limits: Vec<(String, String)>,
    ) -> PyResult<DemDecoder> {
        use backline_decoders::dem::DetectorErrorModel;
        use backline_decoders::dem_decoder::{DemDecoder as Dec, check_threads};
        no_panic(py, || {
            let s = dem_settings(py, decoder, &settings)?;
            let limits = dem_limits(py, &limits)?;
            check_threads(threads).map_err(|e| err(py, "DecoderSettingsError", e.to_string()))?;
            let name = excerpt(name);
            let built = py.detach(|| {
                let dem = DetectorErrorModel::parse_with(dem_text, &name, &limits)
                    .map_err(|e| (true, e.to_string()))?;
                Dec::new(&dem, &s).map_err(|e| (false, e.to_string()))
            });
            match built {
                Ok(d) => Ok(DemDecoder {
                    inner: Mutex::new(d),
                    threads,
                }),
                Err((true, msg)) => Err(err(py, "DetectorErrorModelError", msg)),
                Err((false, msg)) => Err(err(py, "DecoderSettingsError", msg)),
            }
        })
    }

    /// Detectors of the model.
    #[getter]
    fn num_detectors(&self) -> usize {
        self.lock().num_detectors()
    }

    /// Observables of the model.
    #[getter]
    fn num_observables(&self) -> usize {
        self.lock().num_observables()
    }

    /// Decodes `shots` records of `ceil(num_detectors/8)` bytes (stim's b8 layout, back to
    /// back) into `shots` records of `ceil(num_observables/8)` bytes, in Rust with the GIL
    /// released. `ValueError` for data of another length, `MemoryError` when the shots do
    /// not fit in memory, `RunError` when the system refuses the decoding threads.
    fn decode_bit_packed<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        shots: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        use backline_decoders::shots::ShotTable;
        no_panic(py, || {
            let dec = self.lock();
            let per = dec.num_detectors().div_ceil(8);
            if shots.checked_mul(per) != Some(data.len()) {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "{} bytes of detection events for {shots} shots of {} detectors: expected \
                     uint8 [shots, ceil(num_detectors/8)] = [{shots}, {per}]",
                    data.len(),
                    dec.num_detectors(),
                )));
            }
            let mut owned = Vec::new();
            owned.try_reserve_exact(data.len()).map_err(|_| {
                pyo3::exceptions::PyMemoryError::new_err(format!(
                    "{} bytes of detection events do not fit in memory",
                    data.len()
                ))
            })?;
            owned.extend_from_slice(data);
            let table = ShotTable::from_packed(owned, dec.num_detectors())
                .ok_or_else(|| err(py, "RunError", "detection events of the wrong length"))?;
            let threads = self.threads;
            let r = py.detach(|| {
                backline_decoders::dem_decoder::decode_batch(&dec, &table, threads, false)
            });
            let batch = r.map_err(|e| match e {
                backline_decoders::DecoderError::Memory(_) => {
                    pyo3::exceptions::PyMemoryError::new_err(e.to_string())
                }
                e => err(py, "RunError", e.to_string()),
            })?;
            Ok(PyBytes::new(py, batch.predictions.as_bytes()))
        })
    }
}

impl DemDecoder {
    fn lock(&self) -> std::sync::MutexGuard<'_, backline_decoders::dem_decoder::DemDecoder> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The rounds of a `stream:` spec's model and its observables: `(detectors of each round,
/// observables)`. Builds the spec's decoders once, so that a bad model or setting raises
/// `CoprocessorFunctionError` here, where the function is defined.
#[pyfunction]
fn stream_layout(py: Python<'_>, spec: &str) -> PyResult<(Vec<usize>, usize)> {
    let spec = spec.to_string();
    let r = py.detach(move || backline_responder::stream::stream_decoder_of(&spec));
    let (_, dec) = r.map_err(|e| err(py, "CoprocessorFunctionError", e.to_string()))?;
    let rounds = (0..dec.rounds())
        .map(|r| dec.round_detectors(r).len())
        .collect();
    Ok((rounds, dec.num_observables()))
}

/// A controller's session to one stream of a `stream:` coprocessor function: the three calls
/// of a streaming decoder, one message each.
#[pyclass(module = "backline._native", frozen)]
pub struct StreamClient {
    inner: Mutex<backline_transport::ControllerSession>,
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
        let config = config_of(py, transport, payload_bytes, reply_timeout, setup_timeout)?;
        let p = peer.to_string();
        let s = py
            .detach(move || backline_transport::ControllerSession::open("py-stream", config, &p, 0))
            .map_err(|e| {
                err(
                    py,
                    "CoprocessorUnreachableError",
                    format!("the stream coprocessor at {transport}:{peer}: {e}"),
                )
            })?;
        Ok(StreamClient {
            inner: Mutex::new(s),
            decoder_id,
            peer: peer.to_string(),
        })
    }

    /// `enqueue(round, packed)`: round `round`'s detection events, bit-packed LSB-first.
    fn enqueue<'py>(
        &self,
        py: Python<'py>,
        round: u32,
        packed: &[u8],
    ) -> PyResult<StreamAnswer<'py>> {
        let r = backline_wire::stream::StreamRequest::Enqueue {
            round,
            bits: packed,
        };
        self.call(py, &r)
    }

    /// `get_corrections(observables, reset)`: the observable flips so far, bit-packed.
    fn get_corrections<'py>(
        &self,
        py: Python<'py>,
        observables: u32,
        reset: bool,
    ) -> PyResult<StreamAnswer<'py>> {
        let r = backline_wire::stream::StreamRequest::GetCorrections { observables, reset };
        self.call(py, &r)
    }

    /// `reset()`: forget the shot.
    fn reset<'py>(&self, py: Python<'py>) -> PyResult<StreamAnswer<'py>> {
        self.call(py, &backline_wire::stream::StreamRequest::Reset)
    }

    /// Ends the session (idempotent).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        use backline_transport::Session as _;
        let r = py.detach(|| self.lock().stop());
        r.map_err(|e| {
            err(
                py,
                "PlacementError",
                format!("closing the stream session: {e}"),
            )
        })
    }
}

impl StreamClient {
    fn lock(&self) -> std::sync::MutexGuard<'_, backline_transport::ControllerSession> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn call<'py>(
        &self,
        py: Python<'py>,
        r: &backline_wire::stream::StreamRequest<'_>,
    ) -> PyResult<StreamAnswer<'py>> {
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
                "CoprocessorTimeoutError",
                format!("the stream coprocessor at {}: {e}", self.peer),
            )
        })?;
        if status != backline_wire::Status::Ok as u16 {
            let name = backline_wire::Status::from_u16(status).map_or("unknown", |s| s.name());
            return Err(err(
                py,
                "DecoderIdError",
                format!(
                    "the coprocessor at {} answered {name} for decoder_id {id}: no stream: \
                     function there",
                    self.peer
                ),
            ));
        }
        let (h, rest) = backline_wire::stream::parse_reply(&payload)
            .map_err(|e| err(py, "RunError", format!("malformed stream reply: {e}")))?;
        Ok((
            h.status.name(),
            h.flags & backline_wire::stream::FLAG_FINAL != 0,
            h.rounds,
            PyBytes::new(py, rest),
        ))
    }
}

/// The native half of the `backline` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Compiled>()?;
    m.add_class::<Server>()?;
    m.add_class::<DemDecoder>()?;
    m.add_class::<StreamClient>()?;
    m.add_class::<crate::py_cuqr::CuqrServer>()?;
    m.add_function(wrap_pyfunction!(stream_layout, m)?)?;
    #[cfg(feature = "fpga")]
    m.add_class::<FpgaBoard>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(latency_summary, m)?)?;
    m.add("HAS_FPGA", cfg!(feature = "fpga"))?;
    m.add("IMPLICIT_QEC", backline_compiler::passes::IMPLICIT_QEC)?;
    m.add("PLAIN", backline_compiler::passes::PLAIN)?;
    Ok(())
}
