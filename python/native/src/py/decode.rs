//! `DemDecoder`: a decoder compiled from a stim detector error model's text, for
//! `backline.sinter`, with the settings and limits it is built with.

use std::sync::{Mutex, MutexGuard};

use backline_decoders::dem::{DemLimits, DetectorErrorModel};
use backline_decoders::dem_decoder::{DemDecoder as Dec, check_threads};
use backline_decoders::io::excerpt;
use backline_decoders::registry::{self, Profile};
use backline_decoders::shots::ShotTable;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::boundary::boundary;
use super::errors::{Class, err};

/// A decoder compiled from a stim detector error model's text (for `backline.sinter`): BP+OSD,
/// Relay-BP, matching or Möbius, decoding bit-packed detection events into bit-packed
/// observable flips.
///
/// Nothing it is given takes the interpreter down: the model is read within its
/// [`DemLimits`] (`BACKLINE_DEM_LIMITS`, then `limits`), threads are bounded and started
/// fallibly, allocations sized by the input are fallible (`MemoryError`), and a panic would be
/// `RunError` (the bindings' one panic boundary): every exception derives from `Exception`,
/// none is pyo3's `PanicException`.
#[pyclass(module = "backline._native", frozen)]
pub struct DemDecoder {
    inner: Mutex<backline_decoders::dem_decoder::DemDecoder>,
    threads: usize,
}

/// The decoder's settings from `(name, value)` texts: the registry's entry of `decoder` at its
/// offline defaults, each setting parsed by the decoder's own parser (the message any entry
/// point gives for the same value).
fn dem_settings(
    py: Python<'_>,
    decoder: &str,
    settings: &[(String, String)],
) -> PyResult<backline_decoders::dem_decoder::DemDecoderSettings> {
    let bad = |e: backline_decoders::SettingError| {
        err(
            py,
            Class::DecoderSettingsError,
            format!("{}: {e}", excerpt(decoder)),
        )
    };
    let mut s = registry::settings(decoder, Profile::Offline).map_err(bad)?;
    for (k, v) in settings {
        s.set(k, v).map_err(bad)?;
    }
    Ok(s)
}

/// One registered setting as Python sees it: `(key, type, offline default, real-time default,
/// range, help)`.
type SettingRow = (
    &'static str,
    String,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// decoder_registry() -> list[(name, title, list[(key, type, offline, realtime, range,
/// help)])]: the decoder registry, the one table of decoders and their settings that the
/// sinter decoders and `stream_decoder` read.
#[pyfunction]
pub fn decoder_registry() -> PyResult<Vec<(&'static str, &'static str, Vec<SettingRow>)>> {
    boundary(|| {
        Ok(registry::DECODERS
            .iter()
            .map(|e| {
                let rows = e
                    .settings
                    .iter()
                    .map(|s| {
                        (
                            s.key,
                            s.value.name(),
                            s.offline,
                            s.realtime,
                            s.range,
                            s.help,
                        )
                    })
                    .collect();
                (e.name, e.title, rows)
            })
            .collect())
    })
}

/// `BACKLINE_DEM_LIMITS` with `limits` (`[(name, value)]`) applied.
pub(crate) fn dem_limits(py: Python<'_>, limits: &[(String, String)]) -> PyResult<DemLimits> {
    let bad = |e: backline_decoders::SettingError| {
        err(py, Class::DecoderSettingsError, format!("dem_limits: {e}"))
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
    /// is the name of a registered decoder (`decoder_registry()`), `settings` `[(name, value as text)]` with
    /// ldpc's or relay-bp's names (none for matching), `limits` `[(name, value)]` of the model's bounds (`targets`,
    /// `coords`, `mechanisms`, over `BACKLINE_DEM_LIMITS`). Raises `DetectorErrorModelError`
    /// for a model that does not parse or expands past its bounds (naming the line) and
    /// `DecoderSettingsError` for settings that do not apply (threads past 1024 among them);
    /// a model the Möbius decoder refuses (an annotation, an error that does not split) is
    /// `DetectorErrorModelError` too.
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
        boundary(|| {
            let s = dem_settings(py, decoder, &settings)?;
            let limits = dem_limits(py, &limits)?;
            check_threads(threads)
                .map_err(|e| err(py, Class::DecoderSettingsError, e.to_string()))?;
            let name = excerpt(name);
            let built = py.detach(|| {
                let dem = DetectorErrorModel::parse_with(dem_text, &name, &limits)
                    .map_err(|e| (true, e.to_string()))?;
                // A colour-code model the Möbius decoder refuses is the model's fault (a
                // bad annotation, an error that does not split), not the settings'.
                Dec::new(&dem, &s).map_err(|e| {
                    let model = matches!(e, backline_decoders::DecoderError::Mobius(_));
                    (model, e.to_string())
                })
            });
            match built {
                Ok(d) => Ok(DemDecoder {
                    inner: Mutex::new(d),
                    threads,
                }),
                Err((true, msg)) => Err(err(py, Class::DetectorErrorModelError, msg)),
                Err((false, msg)) => Err(err(py, Class::DecoderSettingsError, msg)),
            }
        })
    }

    /// Detectors of the model.
    #[getter]
    fn num_detectors(&self) -> PyResult<usize> {
        boundary(|| Ok(self.lock().num_detectors()))
    }

    /// Observables of the model.
    #[getter]
    fn num_observables(&self) -> PyResult<usize> {
        boundary(|| Ok(self.lock().num_observables()))
    }

    /// Decodes `shots` records of `ceil(num_detectors/8)` bytes (stim's b8 layout, back to
    /// back) into `shots` records of `ceil(num_observables/8)` bytes, in Rust with the GIL
    /// released. `ValueError` for data of another length, `MemoryError` when the shots do
    /// not fit in memory, `RunError` when the system refuses the decoding threads;
    /// `DetectorErrorModelError` for a shot the Möbius decoder cannot lift (the colours of the
    /// model's detectors).
    fn decode_bit_packed<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        shots: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        boundary(|| {
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
            // Records of no bytes (a model without detectors) say nothing of their number.
            let table = if per == 0 {
                ShotTable::zeros(shots, 0)
            } else {
                ShotTable::from_packed(owned, dec.num_detectors()).ok_or_else(|| {
                    err(py, Class::RunError, "detection events of the wrong length")
                })?
            };
            let threads = self.threads;
            let r = py.detach(|| {
                backline_decoders::dem_decoder::decode_batch(&dec, &table, threads, false)
            });
            let batch = r.map_err(|e| match e {
                backline_decoders::DecoderError::Memory(_) => {
                    pyo3::exceptions::PyMemoryError::new_err(e.to_string())
                }
                // A matching the colours cannot lift: the model's annotations, as at build.
                backline_decoders::DecoderError::Mobius(
                    backline_decoders::mobius::MobiusError::Lift { .. },
                ) => err(py, Class::DetectorErrorModelError, e.to_string()),
                e => err(py, Class::RunError, e.to_string()),
            })?;
            Ok(PyBytes::new(py, batch.predictions.as_bytes()))
        })
    }
}

impl DemDecoder {
    fn lock(&self) -> MutexGuard<'_, backline_decoders::dem_decoder::DemDecoder> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}
