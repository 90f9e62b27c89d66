//! BP+OSD decoding from a CSS code's Tanner graph as coprocessor functions (the third route
//! of SPEC §3): one [`backline_decoders::CssDecoder`] serves decoder id `base` with the X checks
//! (Hx) and `base + 1` with the Z checks (Hz).
//!
//! Spec strings: `bposd:CODE[:SETTINGS]` with CODE a library code (`steane`, `hgp13`,
//! `surface5`, `bb72`, `bb144`, `bb:l,m,A,B`) or `HX_FILE+HZ_FILE` (alist or dense 0/1 text),
//! and SETTINGS `key=value` pairs separated by `;` with ldpc's names: `error_rate`,
//! `bp_method` (`minimum_sum`/`product_sum`), `max_iter`, `ms_scaling_factor`, `schedule`
//! (`parallel`/`serial`), `osd_method` (`osd0`/`osd_cs`/`off`), `osd_order`.
//!
//! Payloads: the syndrome bit-packed LSB-first, exactly ⌈m/8⌉ bytes; the reply is the
//! correction bit-packed LSB-first, ⌈n/8⌉ bytes.

use std::path::Path;
use std::sync::{Arc, Mutex};

use backline_decoders::codes::CssCode;
use backline_decoders::{BpOsdConfig, CssDecoder, RespondError};

use crate::{Responder, ResponderError};

/// Why a `bposd:` spec was refused.
#[derive(Debug, thiserror::Error)]
pub enum BpOsdSpecError {
    /// Malformed spec or setting.
    #[error("bposd spec `{spec}`: {msg}")]
    Spec {
        /// The spec.
        spec: String,
        /// What is wrong.
        msg: String,
    },
    /// The code or the decoders could not be built.
    #[error("bposd spec `{spec}`: {msg}")]
    Build {
        /// The spec.
        spec: String,
        /// The cause.
        msg: String,
    },
}

/// One check type of a shared CSS decoder.
pub struct CssHalf {
    name: String,
    decoder_id: u32,
    dec: Arc<Mutex<CssDecoder>>,
}

impl Responder for CssHalf {
    fn name(&self) -> &str {
        &self.name
    }

    fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
        let mut d = self.dec.lock().unwrap_or_else(|p| p.into_inner());
        d.respond(self.decoder_id, input, out).map_err(|e| match e {
            RespondError::SyndromeLength { .. } | RespondError::SyndromePadding { .. } => {
                ResponderError::BadLength {
                    got: input.len(),
                    expected: "the syndrome bit-packed, ceil(checks/8) bytes, padding bits zero",
                }
            }
            RespondError::OutputTooSmall { .. } => {
                ResponderError::Failed("the correction does not fit the reply slot")
            }
            _ => ResponderError::Failed("the CSS decoder refused the request"),
        })
    }
}

fn settings(spec: &str, text: &str) -> Result<BpOsdConfig, BpOsdSpecError> {
    let bad = |msg: String| BpOsdSpecError::Spec {
        spec: backline_decoders::io::excerpt(spec),
        msg,
    };
    let mut c = BpOsdConfig::default();
    for kv in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad(format!("`{kv}` is not key=value")))?;
        c.set(k, v).map_err(|e| bad(e.to_string()))?;
    }
    Ok(c)
}

/// The code and the settings of a `bposd:CODE[:SETTINGS]` spec (also of `gpu:bposd:`): what
/// [`bposd_functions`] decodes with, for a caller that must know the code too (the bench's
/// syndrome sampler, the GPU coprocessor).
pub fn bposd_code(spec: &str) -> Result<(CssCode, BpOsdConfig), BpOsdSpecError> {
    let rest = spec
        .strip_prefix("gpu:")
        .unwrap_or(spec)
        .strip_prefix("bposd:")
        .ok_or_else(|| BpOsdSpecError::Spec {
            spec: backline_decoders::io::excerpt(spec),
            msg: "expected bposd:CODE[:SETTINGS]".into(),
        })?;
    // The code may itself contain ':' only in file paths; settings always contain '='.
    let (code, set) = match rest.rsplit_once(':') {
        Some((c, s)) if s.contains('=') => (c, s),
        _ => (rest, ""),
    };
    let config = settings(spec, set)?;
    let build = |msg: String| BpOsdSpecError::Build {
        spec: backline_decoders::io::excerpt(spec),
        msg,
    };
    let code = load_code(code).map_err(build)?;
    Ok((code, config))
}

/// The CSS code a spec names: a library code (`steane`, `hgp13`, `surface5`, `bb72`, …) or
/// `HX_FILE+HZ_FILE` (alist or dense 0/1 text).
pub(crate) fn load_code(code: &str) -> Result<CssCode, String> {
    match code.split_once('+') {
        Some((hx, hz)) => {
            let hx = backline_decoders::io::load_matrix(Path::new(hx), None)
                .map_err(|e| e.to_string())?;
            let hz = backline_decoders::io::load_matrix(Path::new(hz), None)
                .map_err(|e| e.to_string())?;
            CssCode::new(code, hx, hz).map_err(|e| e.to_string())
        }
        None => CssCode::by_name(code).map_err(|e| e.to_string()),
    }
}

/// Builds the two halves of a `bposd:` spec, for decoder ids `base` and `base + 1`.
pub fn bposd_functions(spec: &str, base: u32) -> Result<crate::Functions, BpOsdSpecError> {
    let (code, config) = bposd_code(spec)?;
    let dec = CssDecoder::from_code(&code, &config).map_err(|e| BpOsdSpecError::Build {
        spec: backline_decoders::io::excerpt(spec),
        msg: e.to_string(),
    })?;
    let dec = Arc::new(Mutex::new(dec));
    Ok((0..2)
        .map(|k| {
            let r: Arc<dyn Responder> = Arc::new(CssHalf {
                name: format!("{spec} ({} checks)", if k == 0 { "X" } else { "Z" }),
                decoder_id: k,
                dec: dec.clone(),
            });
            (base + k, r)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hgp13_decodes_a_single_flip_on_each_check_type() {
        let f =
            bposd_functions("bposd:hgp13:max_iter=10;osd_method=osd_cs;osd_order=2", 0).unwrap();
        assert_eq!(f.len(), 2);
        let code = backline_decoders::codes::CssCode::hgp13();
        for (id, r) in &f {
            let h = if *id == 0 { &code.hx } else { &code.hz };
            // Syndrome of an error on qubit 4.
            let mut syn = vec![0u8; h.rows().div_ceil(8)];
            for row in 0..h.rows() {
                if h.get(row, 4) {
                    syn[row / 8] |= 1 << (row % 8);
                }
            }
            let mut out = [0u8; 48];
            let n = r.respond(&syn, &mut out).unwrap();
            assert_eq!(n, 13usize.div_ceil(8));
            // The correction reproduces the syndrome.
            for row in 0..h.rows() {
                let parity = (0..13)
                    .filter(|&j| out[j / 8] >> (j % 8) & 1 == 1 && h.get(row, j))
                    .count()
                    % 2;
                assert_eq!(parity == 1, syn[row / 8] >> (row % 8) & 1 == 1);
            }
        }
        // A syndrome followed by zero bytes is a fixed-size message and decodes; a short one,
        // or a set byte past the syndrome, is refused by length.
        let mut out = [0u8; 48];
        let rows = code.hx.rows().div_ceil(8);
        let mut padded = vec![0u8; rows + 3];
        assert!(f[0].1.respond(&padded, &mut out).is_ok());
        padded[rows + 1] = 1;
        for bad in [&padded[..], &padded[..rows - 1]] {
            assert!(matches!(
                f[0].1.respond(bad, &mut out),
                Err(ResponderError::BadLength { .. })
            ));
        }
    }

    #[test]
    fn bad_specs_say_why() {
        for (spec, needle) in [
            ("bposd:nosuchcode", "bposd:nosuchcode"),
            (
                "bposd:hgp13:max_iter=x",
                "max_iter: `x` is not a non-negative integer",
            ),
            ("bposd:hgp13:flavour=mint", "unknown setting `flavour`"),
            ("bposd:hgp13:error_rate=0.7", "bposd:hgp13"),
            ("bposd:/nope/hx.alist+/nope/hz.alist", "/nope/hx.alist"),
        ] {
            let e = bposd_functions(spec, 0).err().unwrap().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }
}
