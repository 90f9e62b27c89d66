//! The native half of `backline.decoders` (objects in the shape of PyMatching's `Matching`,
//! ldpc's `BpOsdDecoder`/`BpDecoder`, relay-bp's `RelayDecoderF32` and Chromobius's
//! `CompiledDecoder`): decoders built on a
//! check matrix or a matching graph, one syndrome or a batch at a time, the interpreter
//! released while they decode. The Python module checks and converts the arguments (dtypes,
//! shapes, scipy matrices); what reaches here is bytes and plain lists, and every length is
//! checked again.
//!
//! Settings are the decoder registry's: each object's settings start at the registry's
//! offline defaults of its decoder and are set by key from text, by the decoder's own parser.

use std::sync::{Arc, Mutex, MutexGuard};

use backline_decoders::bposd::{BpOsdConfig, BpOsdDecoder};
use backline_decoders::decoder::{ConstantDecoder, ObservableDecoder, has_evidence};
use backline_decoders::dem::DetectorErrorModel;
use backline_decoders::matching::{BOUNDARY, MatchingBuildError, MatchingDecoder, MatchingGraph};
use backline_decoders::osd::OsdMethod;
use backline_decoders::registry::{self, Profile};
use backline_decoders::relay::{RelayBpDecoder, RelayConfig};
use backline_decoders::sparse::SparseMatrix;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::boundary::boundary;
use super::errors::{Class, err};

/// The most threads a batch is decoded on.
const MAX_THREADS: usize = 1024;

/// Bytes as a Python `bytes`, or `MemoryError` when they do not fit (never a panic).
fn py_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, data.len(), |b| {
        b.copy_from_slice(data);
        Ok(())
    })
    .map_err(|e| named_memory_error(py, e, "the answer's bytes", data.len()))
}

/// `e`, or for a `MemoryError` without words (a `bytes` object that could not be made) one
/// that names `what`.
fn named_memory_error(py: Python<'_>, e: PyErr, what: &str, bytes: usize) -> PyErr {
    if e.is_instance_of::<PyMemoryError>(py) && e.value(py).to_string().is_empty() {
        PyMemoryError::new_err(format!("{what} ({bytes} bytes) do not fit in memory"))
    } else {
        e
    }
}

/// `MemoryError` unless a matching decoder of `nodes` nodes and `edges` edges fits in
/// memory ([`backline_decoders::matching::check_fits`]): a graph too large for the address
/// space is an exception, not an abort in the middle of building it.
fn check_matching_fits(nodes: usize, edges: usize) -> PyResult<()> {
    backline_decoders::matching::check_fits(nodes, edges)
        .map_err(|e| PyMemoryError::new_err(e.to_string()))
}

/// The most fault ids a matching graph has: fault ids are `u32`.
const MAX_FAULT_IDS: usize = 1 << 32;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The check matrix of `rows` × `cols` from compressed columns (`indptr`, `indices`: scipy's
/// CSC layout), each column's rows ascending and distinct (the Python side sorts and sums
/// duplicates away).
fn check_matrix(
    py: Python<'_>,
    rows: usize,
    cols: usize,
    indptr: &[u64],
    indices: &[u32],
) -> PyResult<SparseMatrix> {
    let bad = |m: String| PyValueError::new_err(m);
    if indptr.len() != cols + 1 || indptr.last().copied() != Some(indices.len() as u64) {
        return Err(bad(format!(
            "check matrix: {} column pointers and {} row indices for {cols} columns",
            indptr.len(),
            indices.len()
        )));
    }
    let mut h = SparseMatrix::with_rows(rows);
    let mut col = Vec::new();
    for c in 0..cols {
        let (lo, hi) = (indptr[c] as usize, indptr[c + 1] as usize);
        if lo > hi || hi > indices.len() {
            return Err(bad(format!(
                "check matrix: column {c}'s pointers are out of order"
            )));
        }
        col.clear();
        col.extend_from_slice(&indices[lo..hi]);
        h.push_column(&mut col).map_err(|e| {
            err(
                py,
                Class::DecoderSettingsError,
                format!("check matrix: {e}"),
            )
        })?;
    }
    Ok(h)
}

/// The registry's settings of `decoder` with `settings` (`(key, text)`) applied.
fn registry_settings(
    py: Python<'_>,
    decoder: &str,
    settings: &[(String, String)],
) -> PyResult<registry::DecoderSettings> {
    let bad =
        |e: backline_decoders::SettingError| err(py, Class::DecoderSettingsError, e.to_string());
    let mut s = registry::settings(decoder, Profile::Offline).map_err(bad)?;
    for (k, v) in settings {
        s.set(k, v).map_err(bad)?;
    }
    Ok(s)
}

/// Decodes `shots` records of `per_in` bytes into records of `per_out` bytes, on `threads`
/// threads (0: every core), each with its own copy of `dec`; the first error wins.
fn batch<D, E>(
    dec: &D,
    data: &[u8],
    shots: usize,
    per_in: usize,
    per_out: usize,
    threads: usize,
    f: impl Fn(&mut D, &[u8], &mut [u8]) -> Result<(), E> + Sync,
) -> Result<Vec<u8>, BatchError<E>>
where
    D: Clone + Send + Sync,
    E: Send,
{
    let total = shots.checked_mul(per_out).ok_or(BatchError::Memory)?;
    let mut out = Vec::new();
    out.try_reserve_exact(total)
        .map_err(|_| BatchError::Memory)?;
    out.resize(total, 0);
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        t => t,
    }
    .min(shots.max(1));
    let per_thread = shots.div_ceil(threads.max(1)).max(1);
    let run = |d: &mut D, input: &[u8], output: &mut [u8]| -> Result<(), E> {
        for (i, o) in input
            .chunks(per_in.max(1))
            .zip(output.chunks_mut(per_out.max(1)))
        {
            f(d, if per_in == 0 { &[] } else { i }, o)?;
        }
        Ok(())
    };
    if per_in == 0 || per_out == 0 || threads <= 1 {
        let mut d = dec.clone();
        for s in 0..shots {
            f(
                &mut d,
                &data[s * per_in..(s + 1) * per_in],
                &mut out[s * per_out..(s + 1) * per_out],
            )
            .map_err(BatchError::Decode)?;
        }
        return Ok(out);
    }
    let results: Vec<Result<(), BatchError<E>>> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (input, output) in data
            .chunks(per_thread * per_in)
            .zip(out.chunks_mut(per_thread * per_out))
        {
            let run = &run;
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                let mut d = dec.clone();
                run(&mut d, input, output).map_err(BatchError::Decode)
            });
            handles.push(spawned.map_err(|e| BatchError::Threads(e.to_string())));
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    Err(BatchError::Threads("a decoding thread panicked".into()))
                }),
                Err(e) => Err(e),
            })
            .collect()
    });
    for r in results {
        r?;
    }
    Ok(out)
}

/// Why a batch failed.
enum BatchError<E> {
    Memory,
    Threads(String),
    Decode(E),
}

fn batch_err<E: std::fmt::Display>(py: Python<'_>, e: BatchError<E>) -> PyErr {
    match e {
        BatchError::Memory => PyMemoryError::new_err("the batch's output does not fit in memory"),
        BatchError::Threads(m) => err(py, Class::RunError, m),
        BatchError::Decode(e) => PyValueError::new_err(e.to_string()),
    }
}

/// A shot record of `width` bytes holds the events of `nodes` detectors (one byte each, or
/// bit-packed): `ValueError` when it is too short.
fn check_shot_width(width: usize, nodes: usize, packed: bool) -> PyResult<()> {
    let least = if packed { nodes.div_ceil(8) } else { nodes };
    if width < least {
        return Err(PyValueError::new_err(format!(
            "{width} bytes per shot: expected at least {least}"
        )));
    }
    Ok(())
}

fn check_threads(threads: usize) -> PyResult<()> {
    if threads > MAX_THREADS {
        return Err(PyValueError::new_err(format!(
            "{threads} threads: at most {MAX_THREADS} (0: every core)"
        )));
    }
    Ok(())
}

fn check_batch(data: &[u8], shots: usize, per: usize, what: &str) -> PyResult<()> {
    if shots.checked_mul(per) != Some(data.len()) {
        return Err(PyValueError::new_err(format!(
            "{} bytes of {what} for {shots} shots: expected uint8 [{shots}, {per}]",
            data.len()
        )));
    }
    Ok(())
}

/// BP (+OSD) on a check matrix, ldpc's `BpOsdDecoder`/`BpDecoder` underneath
/// `backline.decoders`.
#[pyclass(module = "backline._native", frozen)]
pub struct CheckBpOsd {
    inner: Mutex<BpOsdDecoder>,
    /// Did the last decode run OSD, and was it BP's hard decision that answered.
    last_osd: Mutex<bool>,
}

#[pymethods]
impl CheckBpOsd {
    /// `CheckBpOsd(rows, cols, indptr, indices, error_rate, error_channel, settings, osd)`: the
    /// registry's `bposd` settings with `settings` (`[(key, text)]`) applied; without `osd`
    /// the OSD stage is off (ldpc's `BpDecoder`). Raises `DecoderSettingsError` (a
    /// `ValueError`) for a setting, rate or channel out of range.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (rows, cols, indptr, indices, error_rate, error_channel, settings, osd))]
    fn new(
        py: Python<'_>,
        rows: usize,
        cols: usize,
        indptr: Vec<u64>,
        indices: Vec<u32>,
        error_rate: f64,
        error_channel: Option<Vec<f64>>,
        settings: Vec<(String, String)>,
        osd: bool,
    ) -> PyResult<CheckBpOsd> {
        boundary(|| {
            let h = check_matrix(py, rows, cols, &indptr, &indices)?;
            let s = registry_settings(py, "bposd", &settings)?;
            let mut config: BpOsdConfig = s
                .config::<BpOsdConfig>()
                .cloned()
                .ok_or_else(|| err(py, Class::RunError, "the registry's bposd is not BP+OSD"))?;
            config.error_rate = error_rate;
            config.error_channel = error_channel;
            if !osd {
                config.osd_method = OsdMethod::Off;
            }
            let built = py.detach(|| BpOsdDecoder::from_sparse(&h, &config));
            let d = built.map_err(|e| err(py, Class::DecoderSettingsError, e.to_string()))?;
            Ok(CheckBpOsd {
                inner: Mutex::new(d),
                last_osd: Mutex::new(false),
            })
        })
    }

    /// Checks (syndrome bits).
    #[getter]
    fn checks(&self) -> PyResult<usize> {
        boundary(|| Ok(lock(&self.inner).checks()))
    }

    /// Bits (correction bits).
    #[getter]
    fn bits(&self) -> PyResult<usize> {
        boundary(|| Ok(lock(&self.inner).bits()))
    }

    /// The iteration limit in force (`max_iter`, or the number of bits when it was 0).
    #[getter]
    fn max_iter(&self) -> PyResult<usize> {
        boundary(|| Ok(lock(&self.inner).bp().max_iter()))
    }

    /// The per-bit error probabilities.
    #[getter]
    fn channel(&self) -> PyResult<Vec<f64>> {
        boundary(|| Ok(lock(&self.inner).bp().channel().to_vec()))
    }

    /// The effective OSD order.
    #[getter]
    fn osd_order(&self) -> PyResult<usize> {
        boundary(|| Ok(lock(&self.inner).osd_order()))
    }

    /// Decodes one syndrome (one byte per check, 0/1) with the interpreter released: `(the
    /// correction, one byte per bit; converged; iterations; osd_used)`.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        syndrome: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, bool, u32, bool)> {
        boundary(|| {
            let mut guard = lock(&self.inner);
            let d = &mut *guard;
            let mut out = vec![0u8; d.bits()];
            let r = py.detach(|| d.decode(syndrome, &mut out));
            let info = r.map_err(|e| PyValueError::new_err(e.to_string()))?;
            *lock(&self.last_osd) = info.osd_used;
            Ok((
                py_bytes(py, &out)?,
                info.converged,
                info.iterations,
                info.osd_used,
            ))
        })
    }

    /// BP's soft output of the last decode: `ln(P(0)/P(1))` per bit (the channel's priors
    /// before any decode, and after a zero syndrome, which runs no BP).
    fn log_prob_ratios(&self) -> PyResult<Vec<f64>> {
        boundary(|| Ok(lock(&self.inner).bp().log_prob_ratios().to_vec()))
    }

    /// BP's hard decision of the last decode, one byte per bit.
    fn bp_decoding<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        boundary(|| py_bytes(py, lock(&self.inner).bp().decoding()))
    }

    /// Decodes `shots` syndromes (uint8 `[shots, checks]`, back to back) into corrections
    /// (`[shots, bits]`) on `threads` threads (0: every core), the interpreter released.
    fn decode_batch<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        shots: usize,
        threads: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        boundary(|| {
            check_threads(threads)?;
            let d = lock(&self.inner).clone();
            let (m, n) = (d.checks(), d.bits());
            check_batch(data, shots, m, "syndromes")?;
            let r = py.detach(|| {
                batch(&d, data, shots, m, n, threads, |d, s, o| {
                    d.decode(s, o).map(|_| ())
                })
            });
            let out = r.map_err(|e| batch_err(py, e))?;
            py_bytes(py, &out)
        })
    }
}

/// Relay-BP on a check matrix and its priors, relay-bp's `RelayDecoderF32` underneath
/// `backline.decoders`.
#[pyclass(module = "backline._native", frozen)]
pub struct CheckRelay {
    inner: Mutex<RelayBpDecoder>,
}

#[pymethods]
impl CheckRelay {
    /// `CheckRelay(rows, cols, indptr, indices, priors, settings)`: the registry's `relay-bp`
    /// settings with `settings` applied. `DecoderSettingsError` for a setting or prior out of
    /// range.
    #[new]
    #[pyo3(signature = (rows, cols, indptr, indices, priors, settings))]
    fn new(
        py: Python<'_>,
        rows: usize,
        cols: usize,
        indptr: Vec<u64>,
        indices: Vec<u32>,
        priors: Vec<f64>,
        settings: Vec<(String, String)>,
    ) -> PyResult<CheckRelay> {
        boundary(|| {
            let h = check_matrix(py, rows, cols, &indptr, &indices)?;
            let s = registry_settings(py, "relay-bp", &settings)?;
            let config: RelayConfig = s.config::<RelayConfig>().cloned().ok_or_else(|| {
                err(
                    py,
                    Class::RunError,
                    "the registry's relay-bp is not Relay-BP",
                )
            })?;
            let built = py.detach(|| RelayBpDecoder::new(&h, &priors, &config));
            let d = built.map_err(|e| err(py, Class::DecoderSettingsError, e.to_string()))?;
            Ok(CheckRelay {
                inner: Mutex::new(d),
            })
        })
    }

    /// Checks (detectors).
    #[getter]
    fn checks(&self) -> PyResult<usize> {
        boundary(|| Ok(lock(&self.inner).checks()))
    }

    /// Bits (error mechanisms).
    #[getter]
    fn bits(&self) -> PyResult<usize> {
        boundary(|| Ok(lock(&self.inner).bits()))
    }

    /// The most iterations a decode runs: `pre_iter + num_sets · set_max_iter`.
    #[getter]
    fn max_iter(&self) -> PyResult<usize> {
        boundary(|| {
            let d = lock(&self.inner);
            let c = d.config();
            Ok(c.pre_iter + c.num_sets * c.set_max_iter)
        })
    }

    /// Decodes one syndrome with the interpreter released: `(the decoding, one byte per
    /// bit; converged; iterations; the leg that answered, 0 for the first)`.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        syndrome: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, bool, u32, u32)> {
        boundary(|| {
            let mut guard = lock(&self.inner);
            let d = &mut *guard;
            let mut out = vec![0u8; d.bits()];
            let r = py.detach(|| d.decode(syndrome, &mut out));
            let info = r.map_err(|e| PyValueError::new_err(e.to_string()))?;
            Ok((
                py_bytes(py, &out)?,
                info.converged,
                info.iterations,
                info.best_leg,
            ))
        })
    }

    /// Decodes `shots` syndromes into decodings on `threads` threads (0: every core); with
    /// `flags`, each record is followed by one byte: 1 when the shot converged.
    fn decode_batch<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        shots: usize,
        threads: usize,
        flags: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        boundary(|| {
            check_threads(threads)?;
            let d = lock(&self.inner).clone();
            let (m, n) = (d.checks(), d.bits());
            check_batch(data, shots, m, "syndromes")?;
            let per_out = n + flags as usize;
            let r = py.detach(|| {
                batch(&d, data, shots, m, per_out, threads, |d, s, o| {
                    let info = d.decode(s, &mut o[..n])?;
                    if flags {
                        o[n] = info.converged as u8;
                    }
                    Ok::<(), backline_decoders::DecoderError>(())
                })
            });
            let out = r.map_err(|e| batch_err(py, e))?;
            py_bytes(py, &out)
        })
    }
}

/// Minimum-weight perfect matching on a graph, PyMatching's `Matching` underneath
/// `backline.decoders`. Each edge flips a set of fault ids; with at most 64 fault ids the
/// decoder follows them along the matching (as the sinter decoder does), with more it takes
/// the correction's edges and adds up their fault ids.
#[pyclass(module = "backline._native", frozen)]
pub struct GraphMatching {
    inner: Mutex<MatchingDecoder>,
    /// Fault ids of each edge: `faults[fault_ptr[k]..fault_ptr[k + 1]]` (the edges-path).
    fault_ptr: Vec<u32>,
    faults: Vec<u32>,
    num_fault_ids: usize,
}

/// Detector indices from their little-endian `u32` bytes.
fn events(bytes: &[u8]) -> PyResult<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(PyValueError::new_err(format!(
            "{} bytes of detector indices: expected a multiple of 4 (uint32)",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Makes the decodes that follow correlated or plain; `ValueError` when correlations are
/// asked of a graph built without them (PyMatching raises the same).
fn with_correlations(d: &mut MatchingDecoder, on: bool) -> PyResult<()> {
    d.set_correlations(on)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The interpreter-free part of one matching decode: fired detectors in, fault-id bytes out.
fn match_one(
    d: &mut MatchingDecoder,
    fault_ptr: &[u32],
    faults: &[u32],
    fired: &[u32],
    parity: &mut [u8],
    out: &mut [u8],
) -> Result<f64, backline_decoders::matching::MatchFault> {
    out.fill(0);
    let scale = d.graph().scale();
    if out.len() <= 64 {
        let m = d.decode_events(fired)?;
        for (i, o) in out.iter_mut().enumerate() {
            *o = (m.observables >> i & 1) as u8;
        }
        return Ok(m.weight as f64 / scale);
    }
    parity.fill(0);
    let m = d.decode_to_edges(fired, parity)?;
    for (k, &p) in parity.iter().enumerate() {
        if p != 0 {
            for &f in &faults[fault_ptr[k] as usize..fault_ptr[k + 1] as usize] {
                out[f as usize] ^= 1;
            }
        }
    }
    Ok(m.weight as f64 / scale)
}

#[pymethods]
impl GraphMatching {
    /// `GraphMatching.from_dem(dem_text, correlations=False)`: the graph of a stim model's
    /// graphlike decomposition (with correlated matching's rules when asked); its fault ids are
    /// the model's observables. None for a model with nothing to match (no error with p > 0
    /// flips a detector: PyMatching's empty graph). `DetectorErrorModelError` for a model that
    /// does not read (its limits included) or cannot be matched, `MemoryError` for a graph
    /// whose decoder does not fit in memory.
    #[staticmethod]
    #[pyo3(signature = (dem_text, correlations = false))]
    fn from_dem(
        py: Python<'_>,
        dem_text: &str,
        correlations: bool,
    ) -> PyResult<Option<GraphMatching>> {
        boundary(|| {
            let dem = py
                .detach(|| DetectorErrorModel::parse(dem_text, "<dem>"))
                .map_err(|e| err(py, Class::DetectorErrorModelError, e.to_string()))?;
            check_matching_fits(dem.num_detectors(), 0)?;
            let r = py.detach(|| {
                if correlations {
                    MatchingGraph::from_dem_correlated(&dem)
                } else {
                    MatchingGraph::from_dem(&dem)
                }
            });
            let g = match r {
                Ok(g) => g,
                Err(MatchingBuildError::NoEdges(_)) => return Ok(None),
                Err(e) => return Err(err(py, Class::DetectorErrorModelError, e.to_string())),
            };
            let (mut fault_ptr, mut faults) = (vec![0u32], Vec::new());
            for e in g.edges() {
                faults.extend((0..64u32).filter(|&l| e.obs >> l & 1 == 1));
                fault_ptr.push(faults.len() as u32);
            }
            let num_fault_ids = g.num_observables();
            Ok(Some(GraphMatching {
                inner: Mutex::new(MatchingDecoder::from_graph(Arc::new(g))),
                fault_ptr,
                faults,
                num_fault_ids,
            }))
        })
    }

    /// `GraphMatching.from_edges(nodes, num_fault_ids, edges)`: edges `(a, b or -1 for the
    /// boundary, weight, [fault ids])`; `a == b` is a self-loop (PyMatching's: never matched,
    /// a negative one always taken). `ValueError` for an edge that cannot be one (a node
    /// past `nodes`, a weight that is not finite or past 16,777,215 in magnitude, a fault id
    /// past `num_fault_ids`; more than 2^32 − 1 nodes or 2^32 fault ids); `MemoryError` for a
    /// graph whose decoder does not fit in memory.
    #[staticmethod]
    fn from_edges(
        nodes: usize,
        num_fault_ids: usize,
        edges: Vec<(u32, i64, f64, Vec<u32>)>,
    ) -> PyResult<GraphMatching> {
        boundary(|| {
            if nodes > BOUNDARY as usize {
                return Err(PyValueError::new_err(format!(
                    "{nodes} nodes: a matching graph has at most {BOUNDARY} (node indices are \
                     32-bit, {BOUNDARY} is the boundary)"
                )));
            }
            if num_fault_ids > MAX_FAULT_IDS {
                return Err(PyValueError::new_err(format!(
                    "{num_fault_ids} fault ids: a matching graph has at most {MAX_FAULT_IDS} \
                     (fault ids are 32-bit)"
                )));
            }
            check_matching_fits(nodes, edges.len())?;
            let (mut fault_ptr, mut faults) = (vec![0u32], Vec::new());
            let mut raw = Vec::with_capacity(edges.len());
            let small = num_fault_ids <= 64;
            for (k, (a, b, w, ids)) in edges.iter().enumerate() {
                let mut mask = 0u64;
                for &f in ids {
                    if f as usize >= num_fault_ids {
                        return Err(PyValueError::new_err(format!(
                            "edge {k}: fault id {f} is past the graph's {num_fault_ids}"
                        )));
                    }
                    if small {
                        mask ^= 1 << f;
                    }
                }
                faults.extend_from_slice(ids);
                fault_ptr.push(faults.len() as u32);
                let b = match u32::try_from(*b) {
                    _ if *b < 0 => BOUNDARY,
                    Ok(b) if b != BOUNDARY => b,
                    _ => {
                        return Err(PyValueError::new_err(format!(
                            "edge {k}: node {b} is out of range 0 ..= {}",
                            BOUNDARY - 1
                        )));
                    }
                };
                raw.push((*a, b, *w, mask));
            }
            let observables = if small { num_fault_ids } else { 0 };
            let g = MatchingGraph::from_edges("<graph>", nodes, observables, &raw)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            Ok(GraphMatching {
                inner: Mutex::new(MatchingDecoder::from_graph(Arc::new(g))),
                fault_ptr,
                faults,
                num_fault_ids,
            })
        })
    }

    /// Nodes (detectors).
    #[getter]
    fn num_nodes(&self) -> PyResult<usize> {
        boundary(|| Ok(lock(&self.inner).num_detectors()))
    }

    /// Edges (parallel edges merged).
    #[getter]
    fn num_edges(&self) -> PyResult<usize> {
        boundary(|| Ok(lock(&self.inner).graph().edges().len()))
    }

    /// Fault ids (observables of a model).
    #[getter]
    fn num_fault_ids(&self) -> PyResult<usize> {
        boundary(|| Ok(self.num_fault_ids))
    }

    /// Nodes with an edge to the boundary.
    #[getter]
    fn boundary_nodes(&self) -> PyResult<Vec<u32>> {
        boundary(|| {
            let d = lock(&self.inner);
            let g = d.graph();
            Ok((0..g.num_nodes() as u32)
                .filter(|&n| g.has_boundary(n as usize))
                .collect())
        })
    }

    /// The edges `(a, b or -1, fault ids)` in the graph's order.
    fn edges(&self) -> PyResult<Vec<(u32, i64, Vec<u32>)>> {
        boundary(|| {
            let d = lock(&self.inner);
            Ok(d.graph()
                .edges()
                .iter()
                .enumerate()
                .map(|(k, e)| {
                    let b = if e.b == BOUNDARY { -1 } else { e.b as i64 };
                    let ids = self.faults
                        [self.fault_ptr[k] as usize..self.fault_ptr[k + 1] as usize]
                        .to_vec();
                    (e.a, b, ids)
                })
                .collect())
        })
    }

    /// Decodes one shot given as the detectors that fired (little-endian `u32`s, numpy's
    /// `uint32` bytes), the interpreter released: `(the fault ids flipped, one byte each; the
    /// matching's weight)`.
    #[pyo3(signature = (fired, correlations = false))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        fired: &[u8],
        correlations: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, f64)> {
        boundary(|| {
            let fired = events(fired)?;
            let mut guard = lock(&self.inner);
            let d = &mut *guard;
            with_correlations(d, correlations)?;
            let mut parity = vec![0u8; d.graph().edges().len()];
            let mut w = 0.0;
            // The answer is written into the `bytes` object itself: one allocation of
            // `num_fault_ids` bytes, a `MemoryError` when it does not fit.
            let out = PyBytes::new_with(py, self.num_fault_ids, |out| {
                let r = py.detach(|| {
                    match_one(d, &self.fault_ptr, &self.faults, &fired, &mut parity, out)
                });
                w = r.map_err(|e| PyValueError::new_err(e.to_string()))?;
                Ok(())
            })
            .map_err(|e| {
                named_memory_error(py, e, "the fault ids of one shot", self.num_fault_ids)
            })?;
            Ok((out, w))
        })
    }

    /// Decodes one shot given as one byte per detector (a C-contiguous `uint8` buffer of
    /// exactly the graph's nodes; non-zero: fired), read in place, into `out` (a writable
    /// C-contiguous `uint8` buffer of `num_fault_ids` bytes), the interpreter released;
    /// returns the matching's weight. No copy of either array is made.
    #[pyo3(signature = (shot, out, correlations = false))]
    fn decode_into(
        &self,
        py: Python<'_>,
        shot: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        correlations: bool,
    ) -> PyResult<f64> {
        boundary(|| {
            let (shot, out) = (PyBuffer::<u8>::get(shot)?, PyBuffer::<u8>::get(out)?);
            let mut guard = lock(&self.inner);
            let d = &mut *guard;
            with_correlations(d, correlations)?;
            let nodes = d.num_detectors();
            let input = read_slice(&shot, nodes, "the syndrome")?;
            let output = write_slice(&out, self.num_fault_ids, "the prediction")?;
            let edges = if self.num_fault_ids > 64 {
                d.graph().edges().len()
            } else {
                0
            };
            let r = py.detach(|| {
                let mut fired = Vec::with_capacity(64);
                shot_events(input, false, nodes, &mut fired);
                let mut parity = vec![0u8; edges];
                match_one(
                    d,
                    &self.fault_ptr,
                    &self.faults,
                    &fired,
                    &mut parity,
                    output,
                )
            });
            r.map_err(|e| PyValueError::new_err(e.to_string()))
        })
    }

    /// `decode_batch` into caller-made arrays, reading the shots in place: `shots` a
    /// C-contiguous `uint8` buffer of `count` records of `width` bytes (bit-packed or one byte
    /// per detector, as `decode_batch`), `out` a writable `uint8` buffer of `count ·
    /// num_fault_ids` bytes, `weights` None or a writable `float64` buffer of `count`. The
    /// whole batch runs with the interpreter released; nothing is copied.
    #[pyo3(signature = (shots, count, width, packed, out, weights = None, correlations = false))]
    #[allow(clippy::too_many_arguments)]
    fn decode_batch_into(
        &self,
        py: Python<'_>,
        shots: &Bound<'_, PyAny>,
        count: usize,
        width: usize,
        packed: bool,
        out: &Bound<'_, PyAny>,
        weights: Option<&Bound<'_, PyAny>>,
        correlations: bool,
    ) -> PyResult<()> {
        boundary(|| {
            let shots = PyBuffer::<u8>::get(shots)?;
            let out = PyBuffer::<u8>::get(out)?;
            let weights = weights.map(PyBuffer::<f64>::get).transpose()?;
            let mut guard = lock(&self.inner);
            let d = &mut *guard;
            with_correlations(d, correlations)?;
            let nodes = d.num_detectors();
            check_shot_width(width, nodes, packed)?;
            let k = self.num_fault_ids;
            let bytes_in = count.checked_mul(width);
            let bytes_out = count.checked_mul(k);
            let (Some(bytes_in), Some(bytes_out)) = (bytes_in, bytes_out) else {
                return Err(PyValueError::new_err(format!("{count} shots: too many")));
            };
            let input = read_slice(&shots, bytes_in, "the shots")?;
            let output = write_slice(&out, bytes_out, "the predictions")?;
            let mut w = match &weights {
                Some(b) => Some(write_slice(b, count, "the weights")?),
                None => None,
            };
            let edges = if k > 64 { d.graph().edges().len() } else { 0 };
            let r = py.detach(|| {
                let mut fired = Vec::with_capacity(nodes.min(4096));
                let mut parity = vec![0u8; edges];
                for s in 0..count {
                    let record = &input[s * width..(s + 1) * width];
                    shot_events(record, packed, nodes, &mut fired);
                    let weight = match_one(
                        d,
                        &self.fault_ptr,
                        &self.faults,
                        &fired,
                        &mut parity,
                        &mut output[s * k..(s + 1) * k],
                    )
                    .map_err(|e| format!("shot {s}: {e}"))?;
                    if let Some(w) = w.as_deref_mut() {
                        w[s] = weight;
                    }
                }
                Ok::<(), String>(())
            });
            r.map_err(PyValueError::new_err)
        })
    }

    /// The correction's edges for one shot (detectors as for `decode`): `[(a, b or -1)]`, in
    /// PyMatching's order and orientation (`MatchingDecoder::decode_to_edge_list`).
    #[pyo3(signature = (fired, correlations = false))]
    fn decode_to_edges(
        &self,
        py: Python<'_>,
        fired: &[u8],
        correlations: bool,
    ) -> PyResult<Vec<(i64, i64)>> {
        boundary(|| {
            let fired = events(fired)?;
            let mut guard = lock(&self.inner);
            let d = &mut *guard;
            with_correlations(d, correlations)?;
            // PyMatching's edges in its order (a self-loop, even a negative one, is not listed).
            let mut edges = Vec::new();
            let r = py.detach(|| d.decode_to_edge_list(&fired, &mut edges));
            r.map_err(|e| PyValueError::new_err(e.to_string()))?;
            Ok(edges
                .into_iter()
                .map(|(a, b)| (a as i64, if b == BOUNDARY { -1 } else { b as i64 }))
                .collect())
        })
    }

    /// Decodes `shots` records of `width` bytes each — bit-packed detection events
    /// (little-endian bits, `packed`) or one byte per detector (non-zero: fired) — into
    /// `(fault-id bytes [shots, num_fault_ids], weights)`, the interpreter released. Bits or
    /// columns past the graph's nodes are ignored.
    #[pyo3(signature = (data, shots, width, packed, correlations = false))]
    fn decode_batch<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        shots: usize,
        width: usize,
        packed: bool,
        correlations: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, Vec<f64>)> {
        boundary(|| {
            let mut guard = lock(&self.inner);
            let d = &mut *guard;
            with_correlations(d, correlations)?;
            let nodes = d.num_detectors();
            check_shot_width(width, nodes, packed)?;
            check_batch(data, shots, width, "detection events")?;
            let k = self.num_fault_ids;
            let total = shots
                .checked_mul(k)
                .ok_or_else(|| PyMemoryError::new_err("the predictions do not fit in memory"))?;
            let mut weights = Vec::new();
            weights
                .try_reserve_exact(shots)
                .map_err(|_| PyMemoryError::new_err("the weights do not fit in memory"))?;
            weights.resize(shots, 0.0);
            let mut parity = vec![0u8; d.graph().edges().len()];
            // The predictions are written into the `bytes` object itself (one allocation, a
            // `MemoryError` when it does not fit).
            let out = PyBytes::new_with(py, total, |out| {
                let r = py.detach(|| {
                    let mut fired = Vec::with_capacity(nodes);
                    for s in 0..shots {
                        let record = &data[s * width..(s + 1) * width];
                        shot_events(record, packed, nodes, &mut fired);
                        weights[s] = match_one(
                            d,
                            &self.fault_ptr,
                            &self.faults,
                            &fired,
                            &mut parity,
                            &mut out[s * k..(s + 1) * k],
                        )
                        .map_err(|e| format!("shot {s}: {e}"))?;
                    }
                    Ok::<(), String>(())
                });
                r.map_err(PyValueError::new_err)
            })
            .map_err(|e| named_memory_error(py, e, "the predictions", total))?;
            Ok((out, weights))
        })
    }
}

/// A C-contiguous buffer of exactly `len` elements, read in place.
fn read_slice<'a, T: pyo3::buffer::Element>(
    b: &'a PyBuffer<T>,
    len: usize,
    what: &str,
) -> PyResult<&'a [T]> {
    if b.item_count() != len || !b.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{what}: expected a C-contiguous buffer of {len} items, got {} items",
            b.item_count()
        )));
    }
    let ptr = b
        .as_slice_ptr()
        .ok_or_else(|| PyValueError::new_err(format!("{what}: not a contiguous buffer")))?;
    // SAFETY: the buffer is C-contiguous with `len` items of `T` and stays alive (the
    // `PyBuffer` holds the exporter) for as long as the borrow of `b`. Like every numpy C
    // extension, the read runs without the interpreter: a caller writing the same array from
    // another thread meanwhile gets what it raced for, as with PyMatching.
    Ok(unsafe { ptr.as_ref() })
}

/// A writable C-contiguous buffer of exactly `len` elements, written in place.
#[allow(clippy::mut_from_ref)]
fn write_slice<'a, T: pyo3::buffer::Element>(
    b: &'a PyBuffer<T>,
    len: usize,
    what: &str,
) -> PyResult<&'a mut [T]> {
    if b.readonly() {
        return Err(PyValueError::new_err(format!(
            "{what}: the buffer is read-only"
        )));
    }
    let ptr = read_slice(b, len, what)?.as_ptr() as *mut T;
    // SAFETY: as in `read_slice`, and writable; the Python side passes arrays it has just
    // made for the answer, which nothing else references.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// Bit `i` set when byte `i` of the 64 is not zero.
#[inline]
fn nonzero_bytes_mask(block: &[u8]) -> u64 {
    let mut mask = 0;
    for (k, w) in block.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        // Each byte's bits folded into its lowest bit, then the eight lowest bits gathered
        // into the top byte (the products of the multiplication never overlap).
        let mut m = x | (x >> 4);
        m |= m >> 2;
        m |= m >> 1;
        m &= 0x0101_0101_0101_0101;
        mask |= (m.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    mask
}

/// Appends `base + i` for each set bit `i` of `mask`, in order.
#[inline]
fn push_set_bits(mut mask: u64, base: u32, fired: &mut Vec<u32>) {
    while mask != 0 {
        fired.push(base + mask.trailing_zeros());
        mask &= mask - 1;
    }
}

/// The detectors below `nodes` that fired in one record (bit-packed or a byte each).
fn shot_events(record: &[u8], packed: bool, nodes: usize, fired: &mut Vec<u32>) {
    fired.clear();
    if !packed {
        // Sixty-four bytes at a time into a mask of those not zero (no branch per byte: most
        // of a shot's detectors did not fire), then its set bits.
        let record = &record[..nodes];
        let mut blocks = record.chunks_exact(64);
        let mut base = 0u32;
        for block in blocks.by_ref() {
            push_set_bits(nonzero_bytes_mask(block), base, fired);
            base += 64;
        }
        let rest = blocks.remainder();
        let mut last = [0u8; 64];
        last[..rest.len()].copy_from_slice(rest);
        push_set_bits(nonzero_bytes_mask(&last), base, fired);
        return;
    }
    for (i, &byte) in record.iter().enumerate() {
        let mut b = byte;
        while b != 0 {
            let det = 8 * i as u32 + b.trailing_zeros();
            if (det as usize) < nodes {
                fired.push(det);
            }
            b &= b - 1;
        }
    }
}

/// The Möbius decoder of a colour-code model, Chromobius's `CompiledDecoder` underneath
/// `backline.decoders`: bit-packed detection events in, bit-packed observable flips and the
/// weight of each shot's matching out, the interpreter released.
#[pyclass(module = "backline._native", frozen)]
pub struct MobiusDecoder {
    inner: Mutex<Mobius>,
    num_detectors: usize,
    num_observables: usize,
}

/// The decoder inside a [`MobiusDecoder`]: the Möbius decoder, or for a model from which
/// nothing can be inferred (no error with `p > 0` flips a detector) the constant one every
/// registered decoder falls back to (no flips, weight 0; a detection event is unexplained).
enum Mobius {
    Graph(Box<backline_decoders::mobius::MobiusDecoder>),
    Constant(ConstantDecoder),
}

impl Mobius {
    fn decode_weighted(
        &mut self,
        dets: &[u8],
        obs: &mut [u8],
    ) -> Result<f64, backline_decoders::DecoderError> {
        match self {
            Mobius::Graph(d) => {
                let (mask, w) = d.decode_weighted(dets)?;
                for (i, o) in obs.iter_mut().enumerate() {
                    *o = (mask >> (8 * i)) as u8;
                }
                Ok(w)
            }
            Mobius::Constant(d) => d.decode_packed(dets, obs).map(|_| 0.0),
        }
    }
}

/// The exception of a model the Möbius decoder refuses: `MemoryError` for a graph that does
/// not fit, `DetectorErrorModelError` (a `ValueError`) for everything else, its message naming
/// the detector or the model's line.
fn mobius_build_err(py: Python<'_>, e: backline_decoders::DecoderError) -> PyErr {
    use backline_decoders::DecoderError;
    match e {
        DecoderError::Memory(_)
        | DecoderError::MatchingModel(MatchingBuildError::Memory { .. }) => {
            PyMemoryError::new_err(e.to_string())
        }
        e => err(py, Class::DetectorErrorModelError, e.to_string()),
    }
}

#[pymethods]
impl MobiusDecoder {
    /// `MobiusDecoder(dem_text)`: the decoder of an annotated colour-code model (each
    /// detector's 4th coordinate its colour and basis; a model whose 4th coordinates name
    /// fewer than two colours is read as a matchable code of one colour; one from which
    /// nothing can be inferred, no error with `p > 0` flipping a detector, predicts no flips).
    /// `DetectorErrorModelError` for a model that does not read (its limits included) or that
    /// the decoder refuses (a bad annotation, an error that does not split into the code's
    /// pieces, an error of `p = 1`, an observable past L63), naming the detector or the line;
    /// `MemoryError` for a graph that does not fit in memory.
    #[new]
    fn new(py: Python<'_>, dem_text: &str) -> PyResult<MobiusDecoder> {
        boundary(|| {
            // The model's bounds are BACKLINE_DEM_LIMITS's, as for every model door.
            let limits = super::decode::dem_limits(py, &[])?;
            let dem = py
                .detach(|| DetectorErrorModel::parse_with(dem_text, "<dem>", &limits))
                .map_err(|e| err(py, Class::DetectorErrorModelError, e.to_string()))?;
            check_matching_fits(dem.num_detectors().saturating_mul(2).saturating_add(1), 0)?;
            let d = if has_evidence(&dem) {
                let built = py.detach(|| backline_decoders::mobius::MobiusDecoder::new(&dem));
                Mobius::Graph(Box::new(built.map_err(|e| mobius_build_err(py, e))?))
            } else {
                Mobius::Constant(ConstantDecoder::new(&dem))
            };
            Ok(MobiusDecoder {
                inner: Mutex::new(d),
                num_detectors: dem.num_detectors(),
                num_observables: dem.num_observables(),
            })
        })
    }

    /// Detectors of the model.
    #[getter]
    fn num_detectors(&self) -> PyResult<usize> {
        boundary(|| Ok(self.num_detectors))
    }

    /// Observables of the model.
    #[getter]
    fn num_observables(&self) -> PyResult<usize> {
        boundary(|| Ok(self.num_observables))
    }

    /// Decodes `shots` records of `ceil(num_detectors/8)` bytes (stim's b8 layout, back to
    /// back) into `(flips, weights)`: `shots` records of `ceil(num_observables/8)` bytes, and
    /// each shot's matching weight as little-endian `float64` bytes (`Σ ln((1 − p)/p)` over
    /// the matched edges; 0 for a shot without detection events). Padding bits are ignored.
    /// `ValueError` for data of another length and for a shot the model cannot explain (a
    /// detection event no error flips, or a matching the colours cannot lift), naming the
    /// shot and its detectors; `MemoryError` when the answer does not fit in memory.
    fn decode_batch<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        shots: usize,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        boundary(|| {
            let (per_in, per_out) = (
                self.num_detectors.div_ceil(8),
                self.num_observables.div_ceil(8),
            );
            check_batch(data, shots, per_in, "detection events")?;
            let (Some(total), Some(weight_bytes)) =
                (shots.checked_mul(per_out), shots.checked_mul(8))
            else {
                return Err(PyMemoryError::new_err(
                    "the predictions do not fit in memory",
                ));
            };
            let mut weights = Vec::new();
            weights
                .try_reserve_exact(weight_bytes)
                .map_err(|_| PyMemoryError::new_err("the weights do not fit in memory"))?;
            weights.resize(weight_bytes, 0u8);
            let mut guard = lock(&self.inner);
            let d = &mut *guard;
            // The predictions are written into the `bytes` object itself (one allocation, a
            // `MemoryError` when it does not fit).
            let out = PyBytes::new_with(py, total, |out| {
                let r = py.detach(|| {
                    for s in 0..shots {
                        let record = &data[s * per_in..(s + 1) * per_in];
                        let w = d
                            .decode_weighted(record, &mut out[s * per_out..(s + 1) * per_out])
                            .map_err(|e| format!("shot {s}: {e}"))?;
                        weights[8 * s..8 * (s + 1)].copy_from_slice(&w.to_le_bytes());
                    }
                    Ok::<(), String>(())
                });
                r.map_err(PyValueError::new_err)
            })
            .map_err(|e| named_memory_error(py, e, "the predictions", total))?;
            Ok((out, py_bytes(py, &weights)?))
        })
    }
}
